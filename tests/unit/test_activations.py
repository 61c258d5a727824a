"""The activation registry: each derivative is autograd's, each degree and curvature is what the function has."""
import math

import pytest
import torch

from clbook import activations as A

T = torch.linspace(-3, 3, 601, dtype=torch.float64)[torch.linspace(-3, 3, 601, dtype=torch.float64) != 0]


@pytest.mark.parametrize("name", list(A.REGISTRY))
def test_derivative_is_autograds(name):
    t = T.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(A.apply(t, name).sum(), t)
    torch.testing.assert_close(A.derivative(T, name), grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(A.REGISTRY))
def test_degree_and_curvature(name):
    entry = A.REGISTRY[name]
    h, dh = A.apply(T, name), A.derivative(T, name)
    if entry.degree is not None:  # h'(t) t = p h(t) (Assumption 1 of Tian 2023)
        torch.testing.assert_close(dh * T, entry.degree * h, rtol=1e-12, atol=1e-12)
    else:  # and no degree fits a non-homogeneous one
        assert all(not torch.allclose(dh * T, p * h, atol=1e-6) for p in (1, 2))
    fine = torch.linspace(-6, 6, 120001, dtype=torch.float64)
    second = torch.diff(A.derivative(fine, name)) / (fine[1] - fine[0])
    if math.isfinite(entry.curvature):  # sup |h''| by a difference quotient on a fine grid
        assert abs(float(second.abs().max()) - entry.curvature) <= 1e-3 * max(1.0, entry.curvature)
    else:  # a kink: the difference quotient grows without bound at the grid's resolution
        assert float(second.abs().max()) > 1e3
    assert (float(A.apply(torch.zeros(1, dtype=torch.float64), name)) == 0) == entry.zero_at_zero


def test_the_gate_convention_and_aliases():
    zero = torch.zeros(1, dtype=torch.float64)
    assert float(A.derivative(zero, "relu")) == 0 and float(A.derivative(zero, "leaky_relu")) == A.LEAKY_SLOPE
    assert A.canonical("leakyrelu") == "leaky_relu"
    torch.testing.assert_close(A.apply(T, "leakyrelu"), torch.nn.functional.leaky_relu(T, A.LEAKY_SLOPE))
    with pytest.raises(ValueError, match="activation"):
        A.supported("relu", "gelu")


def test_every_models_activation_is_the_registrys():
    from clbook import nets
    from clbook.dynamics import onelayer, relu2layer, twolayer, wide
    from clbook.experiments import hierarchical

    for module in (onelayer, relu2layer, twolayer, wide, hierarchical):
        assert {A.canonical(n) for n in module.ACTIVATIONS} <= set(A.REGISTRY), module.__name__
    layer = nets._ACTIVATIONS["leaky_relu"]()
    assert layer.negative_slope == A.LEAKY_SLOPE  # one meaning of leaky ReLU, in torch's module too
