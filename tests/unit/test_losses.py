"""Tests of clbook.losses: oracle loops, closed forms, stability, argument checks, Theorem 1."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook import alpha, losses, nets

SCALAR_TABLE = {  # (φ, ψ) as scalar functions at the default parameters of each member
    "InfoNCE": (lambda x: 0.5 * math.log(x), lambda x: math.exp(x / 0.5)),
    "MINE": (math.log, math.exp),
    "Triplet": (lambda x: x, lambda x: max(x + 0.1, 0.0)),
    "Soft triplet": (lambda x: 0.5 * math.log(1 + x), lambda x: math.exp(x / 0.5 + 0.1)),
    "N+1 tuplet": (lambda x: math.log(1 + x), math.exp),
    "Lifted structured": (lambda x: max(math.log(x), 0.0) ** 2, lambda x: math.exp(x + 0.1)),
    "Modified triplet": (lambda x: x, lambda x: 1 / (1 + math.exp(-5 * x))),
    "Quadratic": (lambda x: x, lambda x: x),
}


def batch(n=7, d=3, seed=0, noise=0.3):
    g = clbook.generator(seed)
    z1 = clbook.randn(n, d, generator=g)
    return z1, z1 + noise * clbook.randn(n, d, generator=g)


def loop_loss(phi, psi, z1, z2):
    total = 0.0
    for i in range(len(z1)):
        d_i = 0.5 * float((z1[i] - z2[i]).pow(2).sum())
        xi = sum(psi(d_i - 0.5 * float((z1[i] - z1[j]).pow(2).sum())) for j in range(len(z1)) if j != i)
        total += phi(xi)
    return total


@pytest.mark.parametrize("name", list(losses.FAMILY))
def test_family_matches_loop_oracle(name):
    z1, z2 = batch()
    assert float(losses.member(name)(z1, z2)) == pytest.approx(loop_loss(*SCALAR_TABLE[name], z1, z2), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", list(losses.FAMILY))
def test_importance_is_autograd_derivative(name):
    z1, z2 = batch(noise=1.0)
    m = losses.member(name)
    u = losses.margins(z1, z2).requires_grad_()
    (grad,) = torch.autograd.grad(m.row_losses(u).sum(), u)
    torch.testing.assert_close(m.importance(z1, z2), grad * (1 - torch.eye(len(u))), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0])
def test_infonce_matches_textbook_form(eps):
    z1, z2 = batch()
    assert float(losses.infonce(0.3, eps)(z1, z2)) == pytest.approx(float(losses.infonce_reference(z1, z2, 0.3, eps)), rel=1e-12)


def test_infonce_stable_at_small_temperature():
    z1, z2 = batch(noise=2.0)
    value = losses.infonce(1e-3, 1.0)(z1.requires_grad_(), z2)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(z1.grad).all()
    assert value.item() == pytest.approx(float(losses.infonce_reference(z1.detach(), z2, 1e-3, 1.0)), rel=1e-10)


def test_collapsed_embeddings_closed_form():
    # all embeddings equal: every margin is 0, so ξ_i = (N-1) ψ(0) and 𝓛 = N φ((N-1) ψ(0)).
    n, tau, eps = 5, 0.5, 1.0
    z = torch.ones(n, 3)
    assert float(losses.infonce(tau, eps)(z, z)) == pytest.approx(n * tau * math.log(eps + n - 1), rel=1e-14)
    weights = losses.infonce(tau, eps).importance(z, z)
    expected = torch.full((n, n), 1 / (eps + n - 1)) * (1 - torch.eye(n))
    torch.testing.assert_close(weights, expected, rtol=1e-14, atol=1e-15)


def test_pair_distances_half_factor():
    z1 = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    z2 = torch.tensor([[1.0, 0.0], [3.0, 4.0]])
    d_pos, d_neg = losses.pair_distances(z1, z2)
    torch.testing.assert_close(d_pos, torch.tensor([0.5, 0.0]))
    torch.testing.assert_close(d_neg, torch.tensor([[0.0, 12.5], [12.5, 0.0]]))


@pytest.mark.parametrize("factory, kwargs, message", [
    (losses.infonce, {"temperature": -1.0}, "temperature must be > 0"),
    (losses.infonce, {"temperature": 0.0}, "temperature must be > 0"),
    (losses.infonce, {"eps": -0.1}, "eps must be >= 0"),
    (losses.infonce, {"temperature": float("nan")}, "temperature must be finite"),
    (losses.triplet, {"margin": -1.0}, "margin must be >= 0"),
    (losses.modified_triplet, {"slope": 0.0}, "slope must be > 0"),
])
def test_bad_parameters_are_named(factory, kwargs, message):
    with pytest.raises(ValueError, match=message):
        factory(**kwargs)


def test_bad_batches_are_named():
    z1, z2 = batch()
    with pytest.raises(ValueError, match="same shape"):
        losses.infonce()(z1, z2[:, :2])
    with pytest.raises(ValueError, match="n >= 2"):
        losses.infonce()(z1[:1], z2[:1])
    with pytest.raises(ValueError, match="finite"):
        losses.infonce()(z1 * float("nan"), z2)
    with pytest.raises(TypeError, match="torch.Tensor"):
        losses.infonce()(z1.numpy(), z2)
    with pytest.raises(ValueError, match="name must be one of"):
        losses.member("NCE")
    with pytest.raises(ValueError, match="unknown"):
        losses.member("MINE", temperature=0.5)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 9), d_in=st.integers(1, 6), d_out=st.integers(1, 5), seed=st.integers(0, 10_000),
       name=st.sampled_from(sorted(losses.FAMILY)), normalize=st.booleans(), scale=st.floats(0.05, 3.0))
def test_theorem1_property(n, d_in, d_out, seed, name, normalize, scale):
    """Thm 1 (acl-thm-1): ∇𝓛 = −½ ∇E_sg(α) for random shapes, seeds, members and input scales."""
    if normalize and d_out == 1:
        d_out = 2
    g = clbook.generator(seed)
    x1 = scale * clbook.randn(n, d_in, generator=g)
    x2 = x1 + 0.3 * scale * clbook.randn(n, d_in, generator=g)
    net = nets.MLP([d_in, 7, d_out], generator=g, normalize=normalize)
    grad_loss, grad_energy = alpha.loss_and_energy_gradients(losses.member(name), net, x1, x2)
    scale_ref = max(float(grad_loss.norm()), 1e-300)
    assert float((grad_loss + 0.5 * grad_energy).norm()) <= 1e-11 * scale_ref + 1e-14


def test_theorem1_detects_wrong_constant():
    g = clbook.generator(3)
    x1 = clbook.randn(8, 4, generator=g)
    x2 = x1 + 0.3 * clbook.randn(8, 4, generator=g)
    net = nets.MLP([4, 8, 3], generator=g)
    grad_loss, grad_energy = alpha.loss_and_energy_gradients(losses.infonce(), net, x1, x2)
    assert float((grad_loss + 0.45 * grad_energy).norm() / grad_loss.norm()) > 0.05
