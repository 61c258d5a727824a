"""Tests of clbook.minplayer: closed forms against loops and generic solvers, invariants, bad input."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from clbook import losses, minplayer


def _batch(n=10, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    z2 = torch.nn.functional.normalize(z1 + 0.3 * torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    return z1, z2, losses.pair_distances(z1, z2)[1]


RULES = [
    (minplayer.entropy_weights, dict(temperature=0.5), "entropy"),
    (minplayer.inverse_power_weights, dict(temperature=0.5, gamma=2.0), "inverse_power"),
    (minplayer.inverse_power_weights, dict(temperature=0.05, gamma=1.5), "inverse_power"),
    (minplayer.sparsemax_weights, dict(temperature=0.5), "square"),
]


@pytest.mark.parametrize("fn, kw, reg", RULES)
def test_closed_forms_match_generic_solver(fn, kw, reg):
    _, _, d = _batch()
    A = fn(d, **kw).numpy()
    for i in range(len(d)):
        others = np.arange(len(d)) != i
        num = minplayer.solve_row_numerically(2 * d[i, others].numpy(), regulariser=reg, temperature=kw["temperature"],
                                              gamma=kw.get("gamma", 2.0))
        assert np.abs(num - A[i, others]).max() < (1e-7 if reg == "square" else 1e-12)
    assert np.allclose(A.sum(axis=1), 1, atol=1e-13) and np.all(np.diag(A) == 0) and np.all(A >= 0)


def test_entropy_equals_infonce_weights():
    z1, z2, d = _batch()
    np.testing.assert_allclose(minplayer.entropy_weights(d, temperature=0.3), losses.infonce(0.3).importance(z1, z2), atol=1e-15)


def test_direct_p2_is_entropy_and_loop():
    _, _, d = _batch()
    np.testing.assert_allclose(minplayer.direct_weights(d, temperature=0.5, power=2), minplayer.entropy_weights(d, temperature=0.5),
                               atol=1e-15)
    A = minplayer.direct_weights(d, temperature=0.5, power=4)
    for i in range(len(d)):
        w = [math.exp(-float(d[i, j]) ** 2 / 0.5) if j != i else 0.0 for j in range(len(d))]
        np.testing.assert_allclose(A[i].numpy(), np.array(w) / sum(w), atol=1e-15)
    U = minplayer.direct_weights(d, temperature=0.5, power=4, normalize=False)
    np.testing.assert_allclose(U / U.sum(1, keepdim=True), A, atol=1e-15)


def test_sparsemax_kkt_and_sort_free_oracle():
    _, _, d = _batch(n=40, seed=3)
    A = minplayer.sparsemax_weights(d, temperature=1.0)
    for i in range(len(d)):
        c = np.delete(2 * d[i].numpy(), i)
        a = np.delete(A[i].numpy(), i)
        lo, hi = c.min(), c.min() + 1.0  # sum of [mu - c]_+ is 0 at lo and >= 1 at hi
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if np.clip(mid - c, 0, None).sum() < 1 else (lo, mid)
        mu = 0.5 * (lo + hi)
        np.testing.assert_allclose(a, np.clip(mu - c, 0, None), atol=1e-12)
    assert float((A == 0).sum()) > len(d)


def test_inverse_power_ratio_bound_holds_and_is_near_one():
    _, _, d = _batch(n=128, d=16, seed=1)
    A = minplayer.inverse_power_weights(d, temperature=0.5, gamma=2.0)
    off = ~torch.eye(128, dtype=torch.bool)
    ratio = (A.max(1).values / A.masked_fill(~off, 1.0).min(1).values).max()
    assert 1 < ratio <= minplayer.inverse_power_ratio_bound(128, temperature=0.5, gamma=2.0, spread=4.0) < 1.0002


def test_alpha_cl_loss_rH_has_infonce_gradient():
    z1, z2, _ = _batch()
    z1 = z1.clone().requires_grad_()
    (g1,) = torch.autograd.grad(minplayer.alpha_cl_loss(z1, z2, minplayer.rule("entropy", temperature=0.5)), z1)
    (g2,) = torch.autograd.grad(losses.infonce(0.5)(z1, z2) / len(z1), z1)
    assert float((g1 - g2).norm() / g2.norm()) < 1e-13
    (g3,) = torch.autograd.grad(minplayer.alpha_cl_loss(z1, z2, minplayer.rule("entropy", temperature=0.5, backprop=True)), z1)
    assert float((g3 - g2).norm() / g2.norm()) > 1e-3


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 20), st.floats(0.05, 5.0), st.integers(0, 10_000))
def test_every_rule_is_row_stochastic(n, tau, seed):
    _, _, d = _batch(n=n, seed=seed)
    for name, kw in [("entropy", {"temperature": tau}), ("inverse_power", {"temperature": tau}), ("sparsemax", {"temperature": tau}),
                     ("direct", {"temperature": tau}), ("inverse_distance", {"temperature": tau}), ("uniform", {})]:
        A = minplayer.rule(name, **kw).weights(d)
        assert torch.all(A >= 0) and torch.all(A.diagonal() == 0)
        np.testing.assert_allclose(A.sum(1).numpy(), 1, atol=1e-12)


def test_bad_input():
    _, _, d = _batch()
    with pytest.raises(ValueError, match="gamma"):
        minplayer.inverse_power_weights(d, temperature=0.5, gamma=1.0)
    with pytest.raises(ValueError, match="temperature"):
        minplayer.entropy_weights(d, temperature=0.0)
    with pytest.raises(ValueError, match="d_neg"):
        minplayer.sparsemax_weights(d[:, :3], temperature=1.0)
    with pytest.raises(ValueError, match="name"):
        minplayer.rule("softmax")
    with pytest.raises(ValueError, match="unknown"):
        minplayer.rule("entropy", temperature=1.0, power=3)
    with pytest.raises(TypeError, match="alpha_rule"):
        minplayer.alpha_cl_loss(d, d, "entropy")
    with pytest.raises(ValueError, match="regulariser"):
        minplayer.solve_row_numerically([0.0, 1.0], regulariser="huber", temperature=1.0)
