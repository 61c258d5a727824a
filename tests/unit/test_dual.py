"""Tests of clbook.dynamics.dual (Chapter 16: Pokle et al. Thm 2, Cor 1, Thm 3, Lemma 1)."""
import itertools

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clbook.dynamics import dual

matplotlib.use("Agg")


def _setup(seed=0, p=8, d=3, m=5):
    rng = np.random.default_rng(seed)
    M, _ = np.linalg.qr(rng.standard_normal((p, d)))
    Sigma = dual.data_covariance(M, p_z=0.2, sigma0=0.1)
    Wo0, Wt0 = rng.standard_normal((2, m, p))
    return M, Sigma, Wo0, Wt0


def test_covariance_maps_span_to_itself():
    M, Sigma, *_ = _setup()
    np.testing.assert_allclose(Sigma @ M, (2 * 0.2 + 0.01) * M, atol=1e-14)


def test_coefficients_against_double_loop():
    rng = np.random.default_rng(1)
    T = 7
    c, lam = rng.uniform(0.01, 0.2, T), rng.uniform(0.5, 1.0, T)
    C1, C2 = dual.closed_form_coefficients(c, lam)
    paper = dual.paper_c2(c, lam)
    for t in range(T + 1):
        loop = sum(c[j] * np.prod(lam[:j] + c[:j]) * np.prod(lam[j + 1:t] - c[j + 1:t]) for j in range(t))
        loop_paper = sum(c[j] * np.prod(lam[:j] + c[:j]) * np.prod(lam[j:t] - c[j:t]) for j in range(t))
        assert C2[t] == pytest.approx(loop, abs=1e-14)
        assert paper[t] == pytest.approx(loop_paper, abs=1e-14)
        assert C1[t] == pytest.approx(np.prod(lam[:t] - c[:t]), abs=1e-15)


def test_gd_matches_closed_forms_with_schedule():
    M, Sigma, Wo0, Wt0 = _setup()
    T, alpha = 30, 0.6
    rng = np.random.default_rng(2)
    eta, lam = rng.uniform(0.01, 0.1, T), rng.uniform(0.8, 1.0, T)
    run = dual.linear_gd(Wo0, Wt0, Sigma, alpha=alpha, eta=eta, lam=lam, steps=T)
    c = 2 * eta * alpha ** 2 * (2 * 0.2 + 0.01)
    C1, C2 = dual.closed_form_coefficients(c, lam)
    for t in (0, 1, 13, T):
        np.testing.assert_allclose(run.Wo[t] @ M, C1[t] * Wo0 @ M + C2[t] * (Wo0 + Wt0) @ M, atol=1e-12)
        np.testing.assert_allclose(run.Wt[t] @ M, C1[t] * Wt0 @ M + C2[t] * (Wo0 + Wt0) @ M, atol=1e-12)
    Wo, Wt = dual.linear_closed_form(Wo0, Wt0, Sigma, alpha=alpha, eta=eta, lam=lam, steps=T)
    np.testing.assert_allclose(Wo, run.Wo[-1], atol=1e-12)
    np.testing.assert_allclose(Wt, run.Wt[-1], atol=1e-12)
    last = dual.linear_gd(Wo0, Wt0, Sigma, alpha=alpha, eta=eta, lam=lam, steps=T, trajectory=False)
    assert last.Wo.shape[0] == 2
    np.testing.assert_array_equal(last.Wo[-1], run.Wo[-1])
    assert dual.span_residual(run.Wo[-1], M, Wo0, Wt0) < 1e-13


def test_gradient_is_the_population_gradient():
    """Eq. 12 by brute-force enumeration of masks for a fixed finite data set (small p)."""
    rng = np.random.default_rng(3)
    p, m, alpha = 3, 2, 0.7
    X = rng.standard_normal((4, p))
    Wo, Wt = rng.standard_normal((2, m, p))
    masks = list(itertools.product((0.0, 1.0), repeat=p))
    prob = lambda D: np.prod([alpha if x else 1 - alpha for x in D])  # noqa: E731
    grad = np.zeros((m, p))
    for x in X:
        for D1 in masks:
            for D2 in masks:
                grad += -2 * prob(D1) * prob(D2) * np.outer(Wt @ (np.array(D2) * x), np.array(D1) * x) / len(X)
    Sigma = X.T @ X / len(X)
    np.testing.assert_allclose(dual.linear_gradients(Wo, Wt, Sigma, alpha=alpha)[0], grad, atol=1e-12)


def test_flow_and_its_closed_form():
    M, Sigma, Wo0, Wt0 = _setup(p=6, d=2, m=3)
    fo, ft = dual.linear_flow(Wo0, Wt0, Sigma, alpha=0.5, decay=0.2, t_eval=[0.0, 1.0, 3.0])
    co, ct = dual.linear_flow_closed_form(Wo0, Wt0, Sigma, alpha=0.5, decay=0.2, t=3.0)
    np.testing.assert_allclose(fo[-1], co, atol=1e-9)
    np.testing.assert_allclose(ft[-1], ct, atol=1e-9)
    np.testing.assert_allclose(fo[0], Wo0)


def test_max_cosine():
    M = np.linalg.qr(np.random.default_rng(4).standard_normal((6, 3)))[0]
    np.testing.assert_allclose(dual.max_cosine(M.T, M), 1.0, atol=1e-14)
    A = np.random.default_rng(5).standard_normal((4, 3))
    W = A @ M.T + np.random.default_rng(6).standard_normal((4, 6)) @ (np.eye(6) - M @ M.T)
    assert np.all(dual.max_cosine(W, M) <= dual.max_cosine(A, None, in_span=True) + 1e-14)
    sup = dual.span_metric_sup(A, A[::-1].copy())
    assert sup.shape == (3,) and np.all(sup <= 1 + 1e-14)


def test_srelu():
    np.testing.assert_allclose(dual.srelu([-2.0, -0.5, 0.0, 0.3, 1.5], 0.5), [-1.5, 0.0, 0.0, 0.0, 1.0])


def test_enumerations():
    Z, pz = dual.enumerate_latents(3, kappa=0.4)
    D, pd = dual.enumerate_masks(3, alpha=0.3)
    assert Z.shape == (27, 3) and D.shape == (8, 3)
    assert pz.sum() == pytest.approx(1.0) and pd.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(Z.T @ (pz[:, None] * Z), 0.4 * np.eye(3), atol=1e-15)
    np.testing.assert_allclose(pd @ D, 0.3, atol=1e-15)


def _loop_loss(Wo, Wt, b, alpha, kappa):
    d = Wo.shape[0]
    total = 0.0
    for z in itertools.product((-1, 0, 1), repeat=d):
        pz = np.prod([kappa / 2 if v else 1 - kappa for v in z])
        for D1 in itertools.product((0, 1), repeat=d):
            for D2 in itertools.product((0, 1), repeat=d):
                pr = pz * np.prod([alpha if v else 1 - alpha for v in D1 + D2])
                a1, a2 = np.array(D1) * np.array(z), np.array(D2) * np.array(z)
                total += pr * dual.srelu(Wo @ a1, b) @ dual.srelu(Wt @ a2, b)
    return 2 - 2 * total


def test_population_loss_against_triple_loop_and_gradient_against_differences():
    rng = np.random.default_rng(7)
    Wo, Wt = rng.standard_normal((2, 3, 3)) * 0.5 + np.eye(3)
    loss = dual.population_loss(Wo, Wt, 0.2, 0.2, alpha=0.6, kappa=0.5)
    assert loss == pytest.approx(_loop_loss(Wo, Wt, 0.2, 0.6, 0.5), abs=1e-13)
    g = dual.population_gradient(Wo, Wt, 0.2, 0.2, alpha=0.6, kappa=0.5)
    h, fd = 1e-6, np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            E = np.zeros((3, 3))
            E[i, j] = h
            fd[i, j] = (dual.population_loss(Wo + E, Wt, 0.2, 0.2, alpha=0.6, kappa=0.5)
                        - dual.population_loss(Wo - E, Wt, 0.2, 0.2, alpha=0.6, kappa=0.5)) / (2 * h)
    np.testing.assert_allclose(g, fd, atol=1e-7)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.1, 1.0), st.floats(0.1, 1.0), st.floats(0.1, 0.6), st.floats(0.0, 0.02))
def test_regime_loss_is_exact_in_the_regime(seed, alpha, kappa, b, delta):
    rng = np.random.default_rng(seed)
    off = 1 - np.eye(3)
    Wo = dual.rownorm(np.eye(3) + delta * rng.uniform(-1, 1, (3, 3)) * off)
    Wt = dual.rownorm(np.eye(3) + delta * rng.uniform(-1, 1, (3, 3)) * off)
    assert dual.regime_holds(Wo, b) and dual.regime_holds(Wt, b)
    exact = dual.population_loss(Wo, Wt, b, b, alpha=alpha, kappa=kappa)
    assert exact == pytest.approx(dual.regime_loss(Wo, Wt, b, b, alpha=alpha, kappa=kappa), abs=1e-13)
    W_star, _ = dual.half_round_ratio(Wt, b, alpha=alpha, kappa=kappa, eta=2 / (alpha**2 * kappa), inner_steps=40)
    np.testing.assert_allclose(W_star, dual.fixed_point(Wt, b, alpha=alpha, kappa=kappa), atol=1e-10)


def test_alternating_converges_below_and_grows_above_the_boundary():
    rng = np.random.default_rng(8)
    off = 1 - np.eye(3)
    W0 = np.eye(3) + 0.02 * rng.uniform(-1, 1, (3, 3)) * off
    W1 = np.eye(3) + 0.02 * rng.uniform(-1, 1, (3, 3)) * off
    down = dual.alternating(W0, W1, 0.3, alpha=0.8, kappa=0.5, rounds=3, inner_steps=40)
    assert down.offdiag[-1] < 0.03 * down.offdiag[0] and down.regime.all()
    up = dual.alternating(W0, W1, 0.3, alpha=1.0, kappa=0.95, rounds=2, inner_steps=40)
    ratios = up.offdiag[1:] / up.offdiag[:-1]
    assert np.all(ratios > 1.3)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.floats(-2.0, 2.0), st.floats(0.05, 1.0))
def test_lemma1_limit(seed, a, c):
    rng = np.random.default_rng(seed)
    v0 = rng.standard_normal(5)
    g = np.r_[1.0, np.full(4, a)]
    if abs(v0 @ g) < 1e-3:
        return
    v0 *= np.sign(v0 @ g)
    traj = dual.lemma1_iterate(v0, a, np.full(400, c))
    np.testing.assert_allclose(traj[-1], dual.lemma1_limit(a, 5), atol=1e-8)
    e = traj[:, 1:] - a * traj[:, :1]
    gamma = (1 + (g @ g) * c ** 2) ** -0.5
    assert np.all(np.abs(e[1:]) <= gamma * np.abs(e[:-1]) + 1e-15)


def test_phase_figure_returns_figure():
    fig = dual.phase_figure(d=2, rounds=1)
    assert hasattr(fig, "savefig")


@pytest.mark.parametrize("call", [
    lambda: dual.data_covariance(np.eye(3), p_z=0.7),
    lambda: dual.data_covariance(np.eye(3), p_z=0.1, sigma0=-1.0),
    lambda: dual.linear_gradients(np.eye(2), np.eye(3), np.eye(2), alpha=0.5),
    lambda: dual.linear_gd(np.eye(2), np.eye(2), np.eye(2), alpha=0.5, eta=[0.1, 0.2], lam=1.0, steps=3),
    lambda: dual.closed_form_coefficients([0.1, 0.2], [1.0]),
    lambda: dual.enumerate_latents(0, kappa=0.5),
    lambda: dual.enumerate_masks(3, alpha=1.5),
    lambda: dual.population_loss(np.ones((2, 3)), np.ones((2, 3)), 0.1, 0.1, alpha=0.5, kappa=0.5),
    lambda: dual.population_loss(np.eye(2), np.eye(2), -0.1, 0.1, alpha=0.5, kappa=0.5),
    lambda: dual.lemma1_iterate([1.0], 0.3, [0.1]),
    lambda: dual.lemma1_iterate([1.0, 0.0], 0.3, [0.0]),
    lambda: dual.lemma1_limit(0.3),
    lambda: dual.rownorm(np.zeros((2, 2))),
    lambda: dual.phase_figure(d=7),
    lambda: dual.alternating(np.eye(2), np.eye(2), 0.1, alpha=0.5, kappa=0.5, eta=0.0),
])
def test_bad_inputs(call):
    with pytest.raises((ValueError, TypeError)):
        call()


def test_non_finite_rejected():
    with pytest.raises(ValueError, match="finite"):
        dual.max_cosine(np.array([[np.nan, 1.0]]), np.eye(2))
