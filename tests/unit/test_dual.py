"""Tests of clbook.dynamics.dual (Chapter 16: Pokle et al. Thm 2, Cor 1, Thm 3, Lemma 1)."""
import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook import linalg
from clbook.data import sparse_coding as sc
from clbook.dynamics import dual
from clbook.dynamics.landscape import srelu
from clbook.metrics import maxcos


def _setup(seed=0, p=8, d=3, m=5):
    gen = clbook.generator(seed)
    M = sc.dictionary(p, d, generator=gen)
    Sigma = sc.second_moment(M, sparsity=0.4, noise=0.1, nonzero=False)
    Wo0, Wt0 = clbook.randn(m, p, generator=gen), clbook.randn(m, p, generator=gen)
    return M, Sigma, Wo0, Wt0


def test_covariance_maps_span_to_itself():
    M, Sigma, *_ = _setup()
    torch.testing.assert_close(Sigma @ M, (0.4 + 0.01) * M, atol=1e-14, rtol=0)


def test_coefficients_against_double_loop():
    gen = clbook.generator(1)
    T = 7
    c, lam = 0.01 + 0.19 * clbook.rand(T, generator=gen), 0.5 + 0.5 * clbook.rand(T, generator=gen)
    C1, C2 = dual.closed_form_coefficients(c, lam)
    paper = dual.paper_c2(c, lam)
    for t in range(T + 1):
        loop = sum(float(c[j] * torch.prod(lam[:j] + c[:j]) * torch.prod(lam[j + 1:t] - c[j + 1:t])) for j in range(t))
        loop_paper = sum(float(c[j] * torch.prod(lam[:j] + c[:j]) * torch.prod(lam[j:t] - c[j:t])) for j in range(t))
        assert float(C2[t]) == pytest.approx(loop, abs=1e-14)
        assert float(paper[t]) == pytest.approx(loop_paper, abs=1e-14)
        assert float(C1[t]) == pytest.approx(float(torch.prod(lam[:t] - c[:t])), abs=1e-15)


def test_gd_matches_closed_forms_with_schedule():
    M, Sigma, Wo0, Wt0 = _setup()
    T, keep = 30, 0.6
    gen = clbook.generator(2)
    eta, lam = 0.01 + 0.09 * clbook.rand(T, generator=gen), 0.8 + 0.2 * clbook.rand(T, generator=gen)
    run = dual.linear_gd(Wo0, Wt0, Sigma, keep=keep, eta=eta, lam=lam, steps=T)
    c = 2 * eta * keep**2 * (0.4 + 0.01)
    C1, C2 = dual.closed_form_coefficients(c, lam)
    for t in (0, 1, 13, T):
        torch.testing.assert_close(run.Wo[t] @ M, C1[t] * Wo0 @ M + C2[t] * (Wo0 + Wt0) @ M, atol=1e-12, rtol=0)
        torch.testing.assert_close(run.Wt[t] @ M, C1[t] * Wt0 @ M + C2[t] * (Wo0 + Wt0) @ M, atol=1e-12, rtol=0)
    Wo, Wt = dual.linear_closed_form(Wo0, Wt0, Sigma, keep=keep, eta=eta, lam=lam, steps=T)
    torch.testing.assert_close(Wo, run.Wo[-1], atol=1e-12, rtol=0)
    torch.testing.assert_close(Wt, run.Wt[-1], atol=1e-12, rtol=0)
    last = dual.linear_gd(Wo0, Wt0, Sigma, keep=keep, eta=eta, lam=lam, steps=T, trajectory=False)
    assert last.Wo.shape[0] == 2
    torch.testing.assert_close(last.Wo[-1], run.Wo[-1], rtol=0, atol=0)
    assert dual.span_residual(run.Wo[-1], M, Wo0, Wt0) < 1e-13


def test_dependent_masks_leave_the_span():
    M, Sigma, Wo0, Wt0 = _setup(p=10, d=3)
    run = dual.linear_gd(Wo0, Wt0, Sigma, keep=0.5, eta=0.05, lam=1.0, steps=200, scheme="dependent", trajectory=False)
    assert dual.span_residual(run.Wo[-1], M, Wo0, Wt0) > 1e-3


@pytest.mark.parametrize("scheme", ["independent", "dependent"])
def test_gradient_is_the_population_gradient(scheme):
    """Eq. 12 by brute-force enumeration of masks for a fixed finite data set (small p)."""
    gen = clbook.generator(3)
    p, m, keep = 3, 2, 0.7
    X = clbook.randn(4, p, generator=gen)
    Wo, Wt = clbook.randn(m, p, generator=gen), clbook.randn(m, p, generator=gen)
    bits = list(itertools.product((0.0, 1.0), repeat=p))
    prob = lambda D: math.prod(keep if x else 1 - keep for x in D)  # noqa: E731
    grad = torch.zeros(m, p, dtype=torch.float64)
    for x in X:
        if scheme == "independent":
            pairs = [(torch.tensor(D1), torch.tensor(D2), prob(D1) * prob(D2)) for D1 in bits for D2 in bits]
        else:
            pairs = [(2 * torch.tensor(D), 2 * (1 - torch.tensor(D)), prob(D)) for D in bits]
        for D1, D2, pr in pairs:
            grad += -2 * pr * torch.outer(Wt @ (D2 * x), D1 * x) / len(X)
    Sigma = X.T @ X / len(X)
    torch.testing.assert_close(dual.linear_gradients(Wo, Wt, Sigma, keep=keep, scheme=scheme)[0], grad, atol=1e-12, rtol=0)


def test_flow_and_its_closed_form():
    M, Sigma, Wo0, Wt0 = _setup(p=6, d=2, m=3)
    fo, ft = dual.linear_flow(Wo0, Wt0, Sigma, keep=0.5, decay=0.2, t_eval=[0.0, 1.0, 3.0])
    co, ct = dual.linear_flow_closed_form(Wo0, Wt0, Sigma, keep=0.5, decay=0.2, t=3.0)
    torch.testing.assert_close(fo[-1], co, atol=1e-9, rtol=0)
    torch.testing.assert_close(ft[-1], ct, atol=1e-9, rtol=0)
    torch.testing.assert_close(fo[0], Wo0)
    assert fo.device == Wo0.device and fo.dtype == Wo0.dtype


def test_span_metric_sup_bounds_the_trained_metric():
    gen = clbook.generator(4)
    M = sc.dictionary(6, 3, generator=gen)
    A = clbook.randn(4, 3, generator=gen)
    W = A @ M.T + clbook.randn(4, 6, generator=gen) @ (torch.eye(6) - M @ M.T)
    mc_W = maxcos.max_cosine_summary(W, M)
    sup = dual.span_metric_sup(A, A.flip(0), extra_angles=[0.0])
    assert sup.shape == (3,) and bool((sup <= 1 + 1e-14).all())
    assert float(mc_W.minimum) <= float(sup[2]) + 1e-14 and float(mc_W.maximum) <= float(sup[0]) + 1e-14


def _loop_loss(Wo, Wt, b, keep, beta):
    d = Wo.shape[0]
    total = 0.0
    for z in itertools.product((-1.0, 0.0, 1.0), repeat=d):
        pz = math.prod(beta / 2 if v else 1 - beta for v in z)
        for D1 in itertools.product((0.0, 1.0), repeat=d):
            for D2 in itertools.product((0.0, 1.0), repeat=d):
                pr = pz * math.prod(keep if v else 1 - keep for v in D1 + D2)
                a1, a2 = torch.tensor(D1) * torch.tensor(z), torch.tensor(D2) * torch.tensor(z)
                total += pr * float(srelu(Wo @ a1, b) @ srelu(Wt @ a2, b))
    return 2 - 2 * total


def test_population_loss_against_triple_loop_and_gradient_against_autograd():
    gen = clbook.generator(7)
    Wo, Wt = 0.5 * clbook.randn(3, 3, generator=gen) + torch.eye(3), 0.5 * clbook.randn(3, 3, generator=gen) + torch.eye(3)
    loss = dual.population_loss(Wo, Wt, 0.2, 0.2, keep=0.6, sparsity=0.5)
    assert loss == pytest.approx(_loop_loss(Wo, Wt, 0.2, 0.6, 0.5), abs=1e-13)
    g = dual.population_gradient(Wo, Wt, 0.2, 0.2, keep=0.6, sparsity=0.5)
    h, fd = 1e-6, torch.zeros(3, 3, dtype=torch.float64)
    for i in range(3):
        for j in range(3):
            E = torch.zeros(3, 3, dtype=torch.float64)
            E[i, j] = h
            fd[i, j] = (dual.population_loss(Wo + E, Wt, 0.2, 0.2, keep=0.6, sparsity=0.5)
                        - dual.population_loss(Wo - E, Wt, 0.2, 0.2, keep=0.6, sparsity=0.5)) / (2 * h)
    torch.testing.assert_close(g, fd, atol=1e-7, rtol=0)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.1, 1.0), st.floats(0.1, 1.0), st.floats(0.1, 0.6), st.floats(0.0, 0.02))
def test_regime_loss_is_exact_in_the_regime(seed, keep, beta, b, delta):
    gen = clbook.generator(seed)
    off = 1 - torch.eye(3)
    Wo = linalg.unit_rows(torch.eye(3) + delta * (2 * clbook.rand(3, 3, generator=gen) - 1) * off)
    Wt = linalg.unit_rows(torch.eye(3) + delta * (2 * clbook.rand(3, 3, generator=gen) - 1) * off)
    assert dual.regime_holds(Wo, b) and dual.regime_holds(Wt, b)
    exact = dual.population_loss(Wo, Wt, b, b, keep=keep, sparsity=beta)
    assert exact == pytest.approx(dual.regime_loss(Wo, Wt, b, b, keep=keep, sparsity=beta), abs=1e-13)
    W_star, _ = dual.half_round_ratio(Wt, b, keep=keep, sparsity=beta, eta=2 / (keep**2 * beta), inner_steps=40)
    torch.testing.assert_close(W_star, dual.fixed_point(Wt, b, keep=keep, sparsity=beta), atol=1e-10, rtol=0)


def test_alternating_converges_below_and_grows_above_the_boundary():
    gen = clbook.generator(8)
    off = 1 - torch.eye(3)
    W0 = torch.eye(3) + 0.02 * (2 * clbook.rand(3, 3, generator=gen) - 1) * off
    W1 = torch.eye(3) + 0.02 * (2 * clbook.rand(3, 3, generator=gen) - 1) * off
    down = dual.alternating(W0, W1, 0.3, keep=0.8, sparsity=0.5, rounds=3, inner_steps=40)
    assert float(down.offdiag[-1]) < 0.03 * float(down.offdiag[0]) and bool(down.regime.all())
    up = dual.alternating(W0, W1, 0.3, keep=1.0, sparsity=0.95, rounds=2, inner_steps=40)
    ratios = up.offdiag[1:] / up.offdiag[:-1]
    assert bool((ratios > 1.3).all())


def test_small_bias_gives_the_papers_factor():
    """Under the paper's assumption b = o(1), the half-round factor is (1 + o(1)) alpha^2 beta."""
    W = linalg.unit_rows(torch.eye(3) + 0.001 * torch.tensor([[0, 1, -1], [-1, 0, 1], [1, -1, 0.0]]))
    for b in (0.02, 0.01):
        _, ratio = dual.half_round_ratio(W, b, keep=0.8, sparsity=0.5, inner_steps=200)
        assert ratio / 0.32 - 1 == pytest.approx(b / (1 - b), rel=0.02)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.floats(-2.0, 2.0), st.floats(0.05, 1.0))
def test_lemma1_limit(seed, a, c):
    v0 = clbook.randn(5, generator=clbook.generator(seed))
    g = torch.cat([torch.ones(1, dtype=torch.float64), torch.full((4,), a, dtype=torch.float64)])
    if abs(float(v0 @ g)) < 1e-3:
        return
    v0 = v0 * torch.sign(v0 @ g)
    traj = dual.lemma1_iterate(v0, a, [c] * 400)
    torch.testing.assert_close(traj[-1], dual.lemma1_limit(a, 5), atol=1e-8, rtol=0)
    e = traj[:, 1:] - a * traj[:, :1]
    gamma = (1 + float(g @ g) * c**2) ** -0.5
    assert bool((e[1:].abs() <= gamma * e[:-1].abs() + 1e-15).all())


@pytest.mark.parametrize("call", [
    lambda: dual.linear_gradients(torch.eye(2), torch.eye(3), torch.eye(2), keep=0.5),
    lambda: dual.linear_gradients(torch.eye(2), torch.eye(2), torch.eye(2), keep=1.5),
    lambda: dual.linear_gd(torch.eye(2), torch.eye(2), torch.eye(2), keep=0.5, eta=[0.1, 0.2], lam=1.0, steps=3),
    lambda: dual.linear_gd(torch.eye(2), torch.eye(2), torch.eye(2), keep=0.5, eta=-0.1, lam=1.0, steps=3),
    lambda: dual.closed_form_coefficients([0.1, 0.2], [1.0]),
    lambda: dual.population_loss(torch.ones(2, 3), torch.ones(2, 3), 0.1, 0.1, keep=0.5, sparsity=0.5),
    lambda: dual.population_loss(torch.eye(2), torch.eye(2), -0.1, 0.1, keep=0.5, sparsity=0.5),
    lambda: dual.lemma1_iterate([1.0], 0.3, [0.1]),
    lambda: dual.lemma1_iterate([1.0, 0.0], 0.3, [0.0]),
    lambda: dual.lemma1_limit(0.3),
    lambda: dual.alternating(torch.zeros(2, 2), torch.eye(2), 0.1, keep=0.5, sparsity=0.5),
    lambda: dual.alternating(torch.eye(2), torch.eye(2), 0.1, keep=0.5, sparsity=0.5, eta=0.0),
    lambda: dual.linear_flow(torch.eye(2), torch.eye(2), torch.eye(2), keep=0.5, t_eval=[1.0, 0.5]),
])
def test_bad_inputs(call):
    with pytest.raises((ValueError, TypeError)):
        call()


def test_non_finite_rejected():
    with pytest.raises(ValueError, match="finite"):
        dual.span_residual(torch.tensor([[float("nan"), 1.0]]), torch.eye(2), torch.eye(1, 2), torch.eye(1, 2))
