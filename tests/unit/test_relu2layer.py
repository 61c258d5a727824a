"""clbook.dynamics.relu2layer: Lemmas 3, 12, 15 and Theorems 4, 5 of Tian (2022), α-CL, against oracles and invariants."""
import matplotlib
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook import covariance
from clbook.dynamics import relu2layer as r2

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def prob():
    return r2.make_problem(modes=5, gamma_range=(0.5, 1.5), n=32, seed=4)


@pytest.fixture(scope="module")
def weights():
    g = clbook.generator(8)
    return clbook.randn(3, 5, generator=g), clbook.randn(4, 3, generator=g)


def test_forward_against_loop(prob, weights):
    W1, W2 = weights
    x = prob.batch.x1
    z = r2.forward(W1, W2, x)
    for i in range(x.shape[0]):
        hidden = torch.tensor([max(float(W1[k] @ x[i]), 0.0) for k in range(W1.shape[0])], dtype=torch.float64)
        torch.testing.assert_close(z[i], W2 @ hidden, rtol=1e-13, atol=1e-13)


def test_lemma12_and_lemma3(prob, weights):
    W1, W2 = weights
    P1 = W1.clamp_min(0)
    x1, x2 = prob.batch.x1, prob.batch.x2
    assert torch.equal(r2.forward(P1, W2, x1), r2.forward(P1, W2, x1, activation="linear"))
    torch.testing.assert_close(r2.forward(W1, W2, x1), r2.forward(P1, W2, x1), rtol=0, atol=1e-15)
    E = r2.energy(P1, W2, prob.alpha, x1, x2)
    torch.testing.assert_close(r2.linear_energy(P1, W2, prob.X), E, rtol=1e-12, atol=0)
    z1, z2 = r2.forward(P1, W2, x1), r2.forward(P1, W2, x2)
    torch.testing.assert_close(torch.trace(covariance.contrastive_covariance(prob.alpha, z1, z2)), E, rtol=1e-12, atol=0)


def test_lemma3_fails_without_one_hotness(weights):
    W1, W2 = weights
    mixed = r2.make_problem(modes=5, gamma_range=(0.5, 1.5), n=64, seed=4, mix_fraction=0.3)
    gap = (r2.forward(W1, W2, mixed.batch.x1) - r2.forward(W1.clamp_min(0), W2, mixed.batch.x1)).abs().max()
    assert float(gap) > 1e-3


def test_off_diagonals_negative(prob):
    off = prob.X[~torch.eye(5, dtype=torch.bool)]
    assert float(off.max()) < 0


def test_theorem4_relu_autograd_equals_sticky_linear(prob, weights):
    W1, W2 = weights
    eta = 0.05 / float(prob.X.abs().max())
    relu = r2.relu_ascent(W1, W2, prob.alpha, prob.batch.x1, prob.batch.x2, eta=eta, steps=300, record_every=5)
    lin = r2.sticky_ascent(W1.clamp_min(0)[None], W2[None], prob.X, eta=eta, steps=300, record_every=5, keep_trajectory=True)
    assert float((relu.clipped_trajectory - lin.trajectory[:, 0]).abs().max()) < 1e-12


def test_sticky_batch_equals_single_starts_and_invariants(prob):
    W1, W2 = r2.random_start(4, 3, 5, 2, seed=3)
    X = prob.X / prob.X.abs().max()
    both = r2.sticky_ascent(W1, W2, X, eta=0.1, steps=200, record_every=50, keep_trajectory=True)
    for s in range(4):
        one = r2.sticky_ascent(W1[s:s + 1], W2[s:s + 1], X, eta=0.1, steps=200)
        torch.testing.assert_close(both.W1[s], one.W1[0], rtol=0, atol=1e-14)
    assert bool((both.W1 >= 0).all())
    torch.testing.assert_close(both.W1.pow(2).sum(dim=(1, 2)), torch.ones(4, dtype=torch.float64), rtol=0, atol=1e-14)
    torch.testing.assert_close(both.W2.pow(2).sum(dim=(1, 2)), torch.ones(4, dtype=torch.float64), rtol=0, atol=1e-14)
    dead = both.trajectory == 0
    assert bool((dead[:-1] <= dead[1:]).all()), "a weight at zero came back to life"
    assert both.history.shape == (4, 4)


def test_energy_never_decreases_much_and_batched_X(prob):
    W1, W2 = r2.random_start(3, 4, 5, 3, seed=5)
    X = prob.X / prob.X.abs().max()
    run = r2.sticky_ascent(W1, W2, torch.stack([X, X, X]), eta=0.05, steps=400, record_every=1)
    same = r2.sticky_ascent(W1, W2, X, eta=0.05, steps=400, record_every=1)
    torch.testing.assert_close(run.W1, same.W1, rtol=0, atol=1e-14)
    assert float((run.history[1:] - run.history[:-1]).min()) > -1e-9


def test_theorem5_one_node_ends_one_hot_and_linear_finds_top_eigenvector(prob):
    X = prob.X / prob.X.abs().max()
    w0, top = r2.random_start(50, 1, 5, 1, seed=2)
    run = r2.sticky_ascent(w0, top, X, eta=0.1, steps=1500, tol=1e-15)
    assert bool(((run.W1[:, 0] > 0).sum(dim=1) == 1).all())
    lin = r2.sticky_ascent(w0, top, X, eta=0.1, steps=1500, sticky=False)
    y = torch.linalg.eigh(X)[1][:, -1]
    assert float((lin.W1[:, 0] @ y).abs().min()) > 1 - 1e-8
    assert run.stopping_reason in ("converged", "max_steps")


def test_rank_and_active_modes():
    W = torch.tensor([[[1.0, 0, 0], [2.0, 0, 0]], [[1.0, 0, 0], [0, 1.0, 0]]], dtype=torch.float64)
    assert r2.numerical_rank(W).tolist() == [1, 2]
    assert r2.active_modes(W).tolist() == [1, 2]


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000), d=st.integers(2, 9))
def test_property_lemma15(seed, d):
    g = clbook.generator(seed)
    v = clbook.rand(d, generator=g) + 0.01
    u = clbook.randn(d, generator=g)
    u = u - (u @ v) / (v @ v) * v
    assert float(u.min()) <= float(r2.lemma15_bound(u, v)) + 1e-12


def test_lemma15_tight_case():
    v = torch.ones(3, dtype=torch.float64)
    u = torch.tensor([2.0, -1.0, -1.0], dtype=torch.float64)
    assert float(r2.lemma15_bound(u, v)) == -1.0 == float(u.min())


def test_fig3_run_is_cached_and_rank_two_under_strong_augmentation():
    prob, run = r2.fig3_run(0.05, 4.0, 3, 4, 0, steps=200)
    assert run.W1.shape == (1, 4, 3) and prob.X.shape == (3, 3)
    assert r2.fig3_run(0.05, 4.0, 3, 4, 0, steps=200)[1] is run
    with pytest.raises(ValueError, match="gamma_low"):
        r2.fig3_run(2.0, 1.0)


def test_bad_inputs(prob):
    W1, W2 = r2.random_start(1, 2, 5, 2, seed=0)
    with pytest.raises(ValueError, match="W1 must be >= 0"):
        r2.sticky_ascent(-W1, W2, prob.X, eta=0.1, steps=1)
    with pytest.raises(ValueError, match="symmetric"):
        r2.sticky_ascent(W1, W2, prob.X + torch.triu(torch.ones(5, 5, dtype=torch.float64), 1), eta=0.1, steps=1)
    with pytest.raises(ValueError, match="eta"):
        r2.sticky_ascent(W1, W2, prob.X, eta=0.0, steps=1)
    with pytest.raises(ValueError, match="W1"):
        r2.forward(W1[0], W2[0][:, :1], prob.batch.x1)
    with pytest.raises(ValueError, match="activation"):
        r2.forward(W1[0], W2[0], prob.batch.x1, activation="tanh")
    with pytest.raises(ValueError, match="v must be"):
        r2.lemma15_bound(torch.ones(3, dtype=torch.float64), -torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="gamma_low"):
        r2.fig3_run(2.0, 1.0)
    with pytest.raises(TypeError, match="steps"):
        r2.relu_ascent(W1[0], W2[0], prob.alpha, prob.batch.x1, prob.batch.x2, eta=0.1, steps=1.5)
