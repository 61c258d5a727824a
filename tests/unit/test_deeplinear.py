"""clbook.dynamics.deeplinear: Lemma 1 against autograd and a loop, the balance identity, constraint sets,
Theorem 3 / Corollary 3 end points, the blow-up closed form, Lemma 6 Jacobians, Lemmas 2/7/10, and bad input."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook import covariance
from clbook.dynamics import deeplinear as dl


@pytest.fixture(scope="module")
def X():
    clbook.setup(seed=0)
    b = dl.contrastive_batch(24, 6, gap=1.0, augmentation=0.5, seed=1)
    return b.X / b.eigenvalues[0]


def _loop_flow(weights, X):
    """Lemma 1 with explicit products, one start at a time (the oracle)."""
    out = []
    for k in range(len(weights)):
        Wk = weights[k][0]
        prod_above = torch.eye(weights[-1].shape[1], dtype=X.dtype)
        for W in reversed(weights[k + 1:]):
            prod_above = prod_above @ W[0]
        below = torch.eye(weights[0].shape[2], dtype=X.dtype)
        for W in weights[:k]:
            below = W[0] @ below
        out.append(prod_above.T @ prod_above @ Wk @ below @ X @ below.T)
    return out


def test_flow_matches_loop_and_autograd(X):
    ws = dl.random_weights([6, 5, 4, 3], n_starts=1, seed=2)
    G = dl.flow(ws, X)
    for g, ref in zip(G, _loop_flow(ws, X), strict=True):
        torch.testing.assert_close(g[0], ref, rtol=1e-12, atol=1e-13)
    wg = [W.clone().requires_grad_(True) for W in ws]
    grads = torch.autograd.grad(dl.energy(wg, X).sum(), wg)
    for g, a in zip(G, grads, strict=True):
        torch.testing.assert_close(g, 0.5 * a, rtol=1e-12, atol=1e-13)


def test_energy_is_pair_sum_for_linear_encoder():
    clbook.setup(seed=0)
    b = dl.contrastive_batch(16, 5, seed=3)
    ws = dl.random_weights([5, 4, 3], seed=4)
    W = dl.end_to_end(ws)[0]
    ref = covariance.energy(b.alpha, b.x1 @ W.T, b.x2 @ W.T)
    torch.testing.assert_close(dl.energy(ws, b.X)[0], ref, rtol=1e-12, atol=1e-12)


def test_batched_starts_equal_single_runs(X):
    ws = dl.random_weights([6, 5, 3], n_starts=3, seed=5)
    res = dl.train(X, ws, steps=20, eta=0.2, record_every=5)
    for s in range(3):
        single = dl.train(X, [W[s:s + 1] for W in ws], steps=20, eta=0.2, record_every=5)
        for a, b in zip(res.weights, single.weights, strict=True):
            torch.testing.assert_close(a[s:s + 1], b, rtol=1e-12, atol=1e-14)
    assert res.energy.shape == (5, 3) and res.singular_values.shape == (5, 3, 2, 2)


def test_balance_change_of_one_step_is_exactly_second_order(X):
    ws = dl.random_weights([6, 5, 4, 3], seed=6)
    G = dl.flow(ws, X)
    eta = 0.3
    new = dl.balance_matrices([W + eta * g for W, g in zip(ws, G, strict=True)])
    old = dl.balance_matrices(ws)
    for b0, b1, a, c in zip(old, new, G[:-1], G[1:], strict=True):
        torch.testing.assert_close(b1 - b0, eta**2 * (a @ a.transpose(1, 2) - c.transpose(1, 2) @ c), rtol=0, atol=1e-14)


@pytest.mark.parametrize("normalization", dl.NORMALIZATIONS)
def test_projection_and_tangent_invariants(normalization):
    ws = dl.random_weights([6, 5, 4, 3], n_starts=2, seed=7, normalization=normalization)
    for k, W in enumerate(ws):
        if normalization == "filter" and k < len(ws) - 1:
            torch.testing.assert_close(W.norm(dim=2), torch.full(W.shape[:2], 1 / math.sqrt(W.shape[1]), dtype=W.dtype))
        else:
            torch.testing.assert_close(W.norm(dim=(1, 2)), torch.ones(2, dtype=W.dtype))
    g = dl.tangent(ws, [torch.randn_like(W) for W in ws], normalization)
    for k, (W, G) in enumerate(zip(ws, g, strict=True)):
        inner = (W * G).sum(dim=2) if normalization == "filter" and k < len(ws) - 1 else (W * G).sum(dim=(1, 2))
        assert float(inner.abs().max()) < 1e-14


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_theorem3_end_points(X, depth):
    ws = dl.random_weights([6] + [5] * (depth - 1) + [3], n_starts=6, seed=depth)
    rep = dl.rank_one_report(dl.train(X, ws, steps=300, eta=0.5, layer_scaled=True).weights, X)
    np.testing.assert_allclose(rep["energy_ratio"], 1.0, rtol=1e-9)
    assert rep["sigma_ratio"].max() < 1e-5
    np.testing.assert_allclose(rep["top_direction"], 1.0, atol=1e-8)


def test_corollary3_uniform_entries(X):
    ws = dl.random_weights([6, 4, 4, 3], n_starts=4, seed=9, normalization="filter")
    res = dl.train(X, ws, steps=300, eta=0.5, normalization="filter", layer_scaled=True)
    for W in res.weights[:-1]:
        u = torch.linalg.svd(W)[0][:, :, 0]
        torch.testing.assert_close(u.abs() * math.sqrt(W.shape[1]), torch.ones_like(u), rtol=0, atol=1e-9)


def test_tied_top_eigenvalue_keeps_rank(X):
    X0 = dl.set_top_gap(X, 0.0)
    lam = torch.linalg.eigvalsh(X0)
    assert abs(float(lam[-1] - lam[-2])) < 1e-14
    ws = dl.random_weights([6, 4], n_starts=8, seed=11)
    rep = dl.rank_one_report(dl.train(X0, ws, steps=300, eta=0.5).weights, X0)
    assert np.median(rep["sigma_ratio"]) > 0.05


def test_blowup_closed_form(X):
    ws = dl.aligned_weights(X, [6, 4, 3], scale=0.8)
    res = dl.solve_unconstrained(X, ws, t_max=10.0, max_norm=100.0)
    lam = float(torch.linalg.eigvalsh(X)[-1])
    assert res.blowup_time == pytest.approx(dl.aligned_blowup_time(0.8, 2, lam, max_norm=100.0), rel=1e-7)
    assert res.balance_drift < 1e-8
    assert dl.aligned_blowup_time(0.8, 2, lam) == pytest.approx(1 / (2 * lam * 0.8**2))


@pytest.mark.parametrize("kind", ["l2", "layernorm"])
def test_normalization_jacobian(kind):
    x = torch.randn(6, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) + 0.3
    f = (lambda v: v / v.norm()) if kind == "l2" else (lambda v: (v - v.mean()) / (v - v.mean()).norm())
    J = dl.normalization_jacobian(x, kind)
    torch.testing.assert_close(J, torch.autograd.functional.jacobian(f, x), rtol=0, atol=1e-14)
    torch.testing.assert_close(J, J.T)
    assert float((J @ x).abs().max()) < 1e-14


@pytest.mark.parametrize("kind", ["l2", "layernorm", "batchnorm"])
def test_norm_conservation_below_not_above(kind):
    cos = dl.weight_gradient_cosines(kind, activation="relu", seed=3)
    assert np.abs(cos[:2]).max() < 1e-13
    assert np.abs(cos[2:]).min() > 0.01


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(0, 10_000), st.floats(1e-3, 1.0))
def test_balance_identity_for_all_nets(depth, seed, eta):
    X = dl.contrastive_batch(8, 4, seed=seed % 50).X
    ws = dl.random_weights([4] + [3] * (depth - 1) + [2], seed=seed, normalization=None)
    G = dl.flow(ws, X)
    new = dl.balance_matrices([W + eta * g for W, g in zip(ws, G, strict=True)])
    for b0, b1, a, c in zip(dl.balance_matrices(ws), new, G[:-1], G[1:], strict=True):
        expected = eta**2 * (a @ a.transpose(1, 2) - c.transpose(1, 2) @ c)
        assert float((b1 - b0 - expected).abs().max()) <= 1e-12 * (1 + float(expected.abs().max()))


def test_figure2_data_is_cached_and_reaches_the_optimum():
    res, X = dl.figure2_data(depth=2, steps=300)
    assert dl.figure2_data(depth=2, steps=300)[0] is res
    assert abs(res.energy[-1, 0] - 1) < 1e-6 and res.singular_values.shape[1:] == (1, 2, 2)
    with pytest.raises(ValueError, match="lambda_max"):
        dl.figure2_data(augmentation=5.0, steps=1)


def test_bad_input():
    with pytest.raises(ValueError, match="widths"):
        dl.random_weights([4])
    with pytest.raises(TypeError, match="n_starts"):
        dl.random_weights([4, 3], n_starts=1.5)
    with pytest.raises(ValueError, match="normalization"):
        dl.project(dl.random_weights([4, 3]), "spectral")
    ws = dl.random_weights([4, 3, 2])
    with pytest.raises(ValueError, match="does not follow"):
        dl.flow([ws[1], ws[0]], torch.eye(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="X must have shape"):
        dl.energy(ws, torch.eye(5, dtype=torch.float64))
    with pytest.raises(ValueError, match="eta"):
        dl.train(torch.eye(4, dtype=torch.float64), ws, steps=1, eta=0.0)
    with pytest.raises(ValueError, match="augmentation"):
        dl.contrastive_batch(augmentation=-1.0)
    with pytest.raises(ValueError, match="depth"):
        dl.aligned_blowup_time(1.0, 1, 1.0)
    with pytest.raises(ValueError, match="lambda_max"):
        dl.figure2_data(augmentation=3.0, steps=1)
    with pytest.raises(ValueError, match="one start"):
        dl.solve_unconstrained(torch.eye(4, dtype=torch.float64), dl.random_weights([4, 3], n_starts=2), t_max=1.0)


def test_euler_matches_manual_steps_and_restores_threads(X):
    threads = torch.get_num_threads()
    ws = dl.random_weights([6, 5, 3], seed=12)
    manual = ws
    for _ in range(3):
        manual = [W + 0.05 * g for W, g in zip(manual, dl.flow(manual, X), strict=True)]
    for a, b in zip(dl.euler(X, ws, eta=0.05, steps=3), manual, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-13, atol=1e-15)
    assert torch.get_num_threads() == threads


def test_rank_one_report_fails_away_from_the_maximum():
    """The chapter's Theorem 3 checks can fail: at an aligned rank-one point built on the second eigenvector the energy
    ratio is λ₂/λ_max < 1 and the top direction is orthogonal; at a random point the layers are not rank one."""
    batch = dl.contrastive_batch(16, 5, seed=1)
    X = batch.X / batch.eigenvalues[0]
    lam, U = torch.linalg.eigh(X)
    ws = [w.clone() for w in dl.aligned_weights(X, [5, 4, 3], scale=1.0)]
    ws[0] = torch.outer(ws[0][0] @ U[:, -1], U[:, -2]).unsqueeze(0)  # bottom layer on the second eigenvector
    rep = dl.rank_one_report(ws, X)
    assert abs(rep["energy_ratio"][0] - float(lam[-2] / lam[-1])) < 1e-12 and rep["top_direction"][0] < 1e-12
    rand = dl.rank_one_report(dl.random_weights([5, 4, 3], n_starts=4, seed=2), X)
    assert (rand["sigma_ratio"] > 1e-3).all() and (rand["energy_ratio"] < 1 - 1e-3).all()
