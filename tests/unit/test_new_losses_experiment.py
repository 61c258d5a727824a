"""clbook.experiments.new_losses: objectives, determinism, stored results and bad input."""
import math

import pytest
import torch

from clbook import losses
from clbook.experiments import new_losses as nl

SMALL = nl.Settings(epochs=1, eval_epochs=(1,), batch=64, hidden=16, out=8, n_train=192)


def _unit(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)


def test_every_method_gives_a_finite_differentiable_objective():
    z1, z2 = _unit(12, 5, 0).requires_grad_(), _unit(12, 5, 1)
    for method in nl.METHODS:
        value = nl.objective(method, SMALL)(z1, z2)
        (grad,) = torch.autograd.grad(value, z1)
        assert value.ndim == 0 and math.isfinite(float(value.detach())), method
        assert torch.isfinite(grad).all() and grad.abs().max() > 0, method


def test_infonce_methods_are_the_clbook_member_averaged_over_anchors():
    z1, z2 = _unit(10, 4, 2), _unit(10, 4, 3)
    for eps in (0.0, 1.0):
        method = "InfoNCE ε=0" if eps == 0 else "InfoNCE ε=1"
        expected = losses.infonce(SMALL.temperature, eps)(z1, z2) / 10
        assert torch.allclose(nl.objective(method, SMALL)(z1, z2), expected, rtol=1e-13, atol=0)


def test_alpha_cl_r_h_has_the_infonce_gradient():
    # Chapter 4's claim (r_H's min player is Eq. 4): the same gradient as InfoNCE with eps = 0, up to a constant factor.
    z1 = _unit(16, 6, 4).requires_grad_()
    z2 = _unit(16, 6, 5)
    (g_h,) = torch.autograd.grad(nl.objective("α-CL-r_H", SMALL)(z1, z2), z1)
    (g_nce,) = torch.autograd.grad(nl.objective("InfoNCE ε=0", SMALL)(z1, z2), z1)
    ratio = (g_h * g_nce).sum() / (g_nce * g_nce).sum()
    assert torch.allclose(g_h, ratio * g_nce, rtol=1e-10, atol=1e-12)
    assert float(ratio) > 0


def test_training_is_deterministic_and_does_not_touch_the_global_generator():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = nl.train("quadratic", SMALL, seed=0, dtype=torch.float64)
    b = nl.train("quadratic", SMALL, seed=0, dtype=torch.float64)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert a["loss"] == b["loss"] and a["linear"] == b["linear"]
    assert 0.0 <= a["linear"][0] <= 1.0 and 0.0 <= a["knn"][0] <= 1.0


def test_stored_full_run_has_every_method_and_seed_with_provenance():
    data = nl.load("full")
    means = nl.summary(data["rows"])
    methods = {m for m, _ in means}
    assert methods == set(nl.METHODS)
    assert all(n >= 3 and 0.0 < mean <= 1.0 for mean, _, n in means.values())
    assert {"commit", "date", "seconds"} <= set(data["provenance"])


def test_bad_input_is_rejected_with_a_clear_message():
    with pytest.raises(ValueError, match="method"):
        nl.objective("SimCLR", SMALL)
    with pytest.raises(ValueError, match="name"):
        nl.load("nope")
    with pytest.raises(ValueError, match="value"):
        nl.summary([], value="accuracy")
    with pytest.raises((ValueError, TypeError), match="seed"):
        nl.train("quadratic", SMALL, seed=-1)
