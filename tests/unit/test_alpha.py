"""Tests of clbook.alpha: pairwise importance (Eq. 4), the min player's closed forms against loops and the one
generic solver, the α-CL loss, Theorem 1's two gradients, invariants and bad input."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook import alpha, losses, nets


def batch(n=9, d=4, seed=0, noise=0.5):
    g = clbook.generator(seed)
    z1 = clbook.randn(n, d, generator=g)
    return z1, z1 + noise * clbook.randn(n, d, generator=g)


def unit_batch(n=10, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    z1 = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    z2 = torch.nn.functional.normalize(z1 + 0.3 * torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    return z1, z2, losses.pair_distances(z1, z2)[1]


# ------------------------------------------------------------------------------------- Theorem 2 (from a member)

@pytest.mark.parametrize("member", [losses.infonce(0.5, 0.0), losses.infonce(0.2, 1.0), losses.mine(),
                                    losses.soft_triplet(0.7), losses.n_plus_one_tuplet()])
def test_theorem2_generic_solver_matches_eq4(member):
    z1, z2 = batch()
    weights = alpha.pairwise_importance(member, z1, z2).numpy()
    costs = alpha.energy_coefficients(z1, z2).numpy()
    for i in range(len(weights)):
        others = np.arange(len(weights)) != i
        solved = alpha.solve_row_numerically(costs[i, others], temperature=member.psi_temperature, row_sum=weights[i].sum())
        np.testing.assert_allclose(solved, weights[i, others], rtol=1e-9, atol=1e-12)


def test_generic_solver_detects_the_wrong_temperature():
    """The paper's Lemma 5 read literally (temperature τ instead of 2τ) gives other weights: the check can fail."""
    z1, z2 = batch()
    weights = alpha.pairwise_importance(losses.infonce(0.5), z1, z2).numpy()
    costs = alpha.energy_coefficients(z1, z2).numpy()
    solved = alpha.solve_row_numerically(costs[0, 1:], temperature=0.25, row_sum=1.0)
    assert np.abs(solved - weights[0, 1:]).max() > 1e-3


def test_entropy_weights_with_row_sums_is_eq4_for_infonce_eps1():
    z1, z2 = batch()
    member = losses.infonce(0.5, 1.0)
    weights = alpha.pairwise_importance(member, z1, z2)
    xi = torch.exp(member.log_xi(losses.margins(z1, z2)))
    torch.testing.assert_close(weights.sum(dim=1), xi / (xi + 1.0), rtol=1e-13, atol=0)
    d_neg = losses.pair_distances(z1, z2)[1]
    closed = alpha.entropy_weights(d_neg, temperature=0.5, row_sums=weights.sum(dim=1))
    torch.testing.assert_close(closed, weights, rtol=1e-12, atol=1e-15)


def test_energy_coefficients_make_energy_linear():
    z1, z2 = batch()
    weights = losses.infonce().importance(z1, z2)
    energy = clbook.covariance.energy(weights, z1, z2)
    assert float((alpha.energy_coefficients(z1, z2) * weights).sum()) == pytest.approx(float(energy), rel=1e-13)


# ------------------------------------------------------------------------------------ closed forms of Sec. 6

CLOSED_FORMS = [
    (alpha.entropy_weights, dict(temperature=0.5), "entropy"),
    (alpha.inverse_power_weights, dict(temperature=0.5, gamma=2.0), "inverse_power"),
    (alpha.inverse_power_weights, dict(temperature=0.05, gamma=1.5), "inverse_power"),
    (alpha.sparsemax_weights, dict(temperature=0.5), "square"),
]


@pytest.mark.parametrize("fn, kw, reg", CLOSED_FORMS)
def test_closed_forms_match_the_generic_solver(fn, kw, reg):
    _, _, d = unit_batch()
    A = fn(d, **kw).numpy()
    for i in range(len(d)):
        others = np.arange(len(d)) != i
        num = alpha.solve_row_numerically(2 * d[i, others].numpy(), regulariser=reg, temperature=kw["temperature"],
                                          gamma=kw.get("gamma", 2.0))
        assert np.abs(num - A[i, others]).max() < (1e-7 if reg == "square" else 1e-12)
    assert np.allclose(A.sum(axis=1), 1, atol=1e-13) and np.all(np.diag(A) == 0) and np.all(A >= 0)


@pytest.mark.parametrize("reg", ["entropy", "inverse_power", "square"])
def test_generic_solver_scales_with_the_row_sum(reg):
    """Row sum s: the solver's answer sums to s and satisfies the KKT conditions r'(a_j) - c_j = const on its support."""
    c = np.array([0.3, 1.1, 0.2, 2.0, 0.9])
    tau, gamma, s = 0.7, 2.0, 2.5
    a = alpha.solve_row_numerically(c, regulariser=reg, temperature=tau, gamma=gamma, row_sum=s)
    dr = {"entropy": lambda a: -2 * tau * (np.log(a) + 1), "inverse_power": lambda a: 2 * tau * a ** -gamma,
          "square": lambda a: -tau * a}[reg]
    on = a > 1e-9
    assert a.sum() == pytest.approx(s, rel=1e-12)
    assert np.ptp(c[on] - dr(a[on])) < 1e-7


def test_entropy_equals_infonce_weights():
    z1, z2, d = unit_batch()
    np.testing.assert_allclose(alpha.entropy_weights(d, temperature=0.3), losses.infonce(0.3).importance(z1, z2), atol=1e-15)


def test_direct_p2_is_entropy_and_loop():
    _, _, d = unit_batch()
    np.testing.assert_allclose(alpha.direct_weights(d, temperature=0.5, power=2), alpha.entropy_weights(d, temperature=0.5),
                               atol=1e-15)
    A = alpha.direct_weights(d, temperature=0.5, power=4)
    for i in range(len(d)):
        w = [math.exp(-float(d[i, j]) ** 2 / 0.5) if j != i else 0.0 for j in range(len(d))]
        np.testing.assert_allclose(A[i].numpy(), np.array(w) / sum(w), atol=1e-15)
    U = alpha.direct_weights(d, temperature=0.5, power=4, normalize=False)
    np.testing.assert_allclose(U / U.sum(1, keepdim=True), A, atol=1e-15)


def test_sparsemax_kkt_and_sort_free_oracle():
    _, _, d = unit_batch(n=40, seed=3)
    A = alpha.sparsemax_weights(d, temperature=1.0)
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
    _, _, d = unit_batch(n=128, d=16, seed=1)
    A = alpha.inverse_power_weights(d, temperature=0.5, gamma=2.0)
    off = ~torch.eye(128, dtype=torch.bool)
    ratio = (A.max(1).values / A.masked_fill(~off, 1.0).min(1).values).max()
    assert 1 < ratio <= alpha.inverse_power_ratio_bound(128, temperature=0.5, gamma=2.0, spread=4.0) < 1.0002
    # the formula (1 - κ)^(-1/γ); infinite when κ ≥ 1; finite where (n - 1)**γ alone would overflow
    kappa = 4.0 / (2 * 0.5 * 127**2)
    assert alpha.inverse_power_ratio_bound(8, temperature=0.5, gamma=2.0, spread=1e9) == math.inf
    assert (1 - kappa) ** (-1 / 2) == pytest.approx(alpha.inverse_power_ratio_bound(128, temperature=0.5, gamma=2.0, spread=4.0))
    assert math.isfinite(alpha.inverse_power_ratio_bound(10**6, temperature=1e-3, gamma=50.0, spread=4.0))


# -------------------------------------------------------------------------------------------- α-CL and Thm 1

def test_alpha_cl_loss_rH_has_infonce_gradient():
    z1, z2, _ = unit_batch()
    z1 = z1.clone().requires_grad_()
    (g1,) = torch.autograd.grad(alpha.alpha_cl_loss(z1, z2, alpha.rule("entropy", temperature=0.5)), z1)
    (g2,) = torch.autograd.grad(losses.infonce(0.5)(z1, z2) / len(z1), z1)
    assert float((g1 - g2).norm() / g2.norm()) < 1e-13
    (g3,) = torch.autograd.grad(alpha.alpha_cl_loss(z1, z2, alpha.rule("entropy", temperature=0.5, backprop=True)), z1)
    assert float((g3 - g2).norm() / g2.norm()) > 1e-3


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 20), st.floats(0.05, 5.0), st.integers(0, 10_000))
def test_every_rule_is_row_stochastic(n, tau, seed):
    _, _, d = unit_batch(n=n, seed=seed)
    for name, kw in [("entropy", {"temperature": tau}), ("inverse_power", {"temperature": tau}), ("sparsemax", {"temperature": tau}),
                     ("direct", {"temperature": tau}), ("inverse_distance", {"temperature": tau}), ("uniform", {})]:
        A = alpha.rule(name, **kw).weights(d)
        assert torch.all(A >= 0) and torch.all(A.diagonal() == 0)
        np.testing.assert_allclose(A.sum(1).numpy(), 1, atol=1e-12)


def test_stop_gradient_matters():
    g = clbook.generator(1)
    x1 = clbook.randn(10, 4, generator=g)
    x2 = x1 + 0.3 * clbook.randn(10, 4, generator=g)
    net = nets.MLP([4, 8, 3], generator=g, normalize=True)
    _, sg = alpha.loss_and_energy_gradients(losses.infonce(0.1), net, x1, x2)
    _, bp = alpha.loss_and_energy_gradients(losses.infonce(0.1), net, x1, x2, stop_gradient=False)
    assert float(sg @ bp / (sg.norm() * bp.norm())) < 0.999
    _, sg_q = alpha.loss_and_energy_gradients(losses.quadratic(), net, x1, x2)
    _, bp_q = alpha.loss_and_energy_gradients(losses.quadratic(), net, x1, x2, stop_gradient=False)
    torch.testing.assert_close(sg_q, bp_q)


def test_theorem1_gradients_and_a_wrong_constant():
    g = clbook.generator(2)
    x1 = clbook.randn(12, 4, generator=g)
    x2 = x1 + 0.3 * clbook.randn(12, 4, generator=g)
    net = nets.MLP([4, 8, 3], generator=g)
    gl, ge = alpha.loss_and_energy_gradients(losses.infonce(0.5, 1.0), net, x1, x2)
    assert float((gl + 0.5 * ge).norm() / gl.norm()) < 1e-12
    assert float((gl + 0.45 * ge).norm() / gl.norm()) > 1e-2


# ---------------------------------------------------------------------------------------------------- bad input

def test_bad_input():
    z1, z2 = batch()
    _, _, d = unit_batch()
    with pytest.raises(TypeError, match="clbook.losses member"):
        alpha.pairwise_importance(lambda a, b: 0, z1, z2)
    with pytest.raises(ValueError, match="row_sum must be > 0"):
        alpha.solve_row_numerically([1.0, 2.0], temperature=0.5, row_sum=0.0)
    with pytest.raises(ValueError, match="costs"):
        alpha.solve_row_numerically([[1.0]], temperature=1.0)
    with pytest.raises(ValueError, match="costs"):
        alpha.solve_row_numerically([1.0, float("nan")], temperature=1.0)
    with pytest.raises(ValueError, match="regulariser"):
        alpha.solve_row_numerically([0.0, 1.0], regulariser="huber", temperature=1.0)
    with pytest.raises(ValueError, match="gamma"):
        alpha.solve_row_numerically([0.0, 1.0], regulariser="inverse_power", temperature=1.0, gamma=0.5)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        alpha.entropy_weights(d, temperature=-1.0)
    with pytest.raises(ValueError, match="row_sums"):
        alpha.entropy_weights(d, temperature=1.0, row_sums=torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="row_sums must share"):
        alpha.entropy_weights(d, temperature=1.0, row_sums=torch.ones(len(d), dtype=torch.float32))
    with pytest.raises(ValueError, match="gamma"):
        alpha.inverse_power_weights(d, temperature=0.5, gamma=1.0)
    with pytest.raises(ValueError, match="d_neg"):
        alpha.sparsemax_weights(d[:, :3], temperature=1.0)
    with pytest.raises(TypeError, match="d_neg"):
        alpha.uniform_weights(d.long())
    with pytest.raises(ValueError, match="d_neg"):
        alpha.direct_weights(d * float("nan"), temperature=1.0)
    with pytest.raises(ValueError, match="name"):
        alpha.rule("softmax")
    with pytest.raises(ValueError, match="unknown"):
        alpha.rule("entropy", temperature=1.0, power=3)
    with pytest.raises(ValueError, match="temperature"):
        alpha.rule("entropy", temperature=0.0)
    with pytest.raises(TypeError, match="alpha_rule"):
        alpha.alpha_cl_loss(d, d, "entropy")
    with pytest.raises(TypeError, match="encoder"):
        alpha.loss_and_energy_gradients(losses.infonce(), "net", z1, z2)


# ------------------------------------------------------------------------------------- every row of a batch

def test_solve_rows_numerically_is_the_row_solver_on_every_row():
    """The batch version equals the row solver row by row (bit for bit), with a zero diagonal and zero rows where s = 0."""
    z1, z2 = batch()
    costs = alpha.energy_coefficients(z1, z2)
    sums = torch.linspace(0.0, 2.0, len(costs), dtype=torch.float64)
    solved = alpha.solve_rows_numerically(costs, temperature=0.3, row_sums=sums)
    assert solved.shape == costs.shape and np.all(np.diag(solved) == 0) and np.all(solved[0] == 0)
    c = costs.numpy()
    for i in range(1, len(c)):
        others = np.arange(len(c)) != i
        row = alpha.solve_row_numerically(c[i, others], temperature=0.3, row_sum=float(sums[i]))
        assert np.array_equal(solved[i, others], row)
    np.testing.assert_allclose(solved.sum(axis=1), sums.numpy(), rtol=1e-12, atol=1e-15)


def test_solve_rows_numerically_matches_a_closed_form_and_defaults_to_unit_rows():
    _, _, d = unit_batch()
    A = alpha.inverse_power_weights(d, temperature=0.5, gamma=2.0).numpy()
    solved = alpha.solve_rows_numerically(2 * d, regulariser="inverse_power", temperature=0.5)
    assert np.abs(solved - A).max() < 1e-12
    assert np.abs(alpha.solve_rows_numerically(2 * d, regulariser="inverse_power", temperature=0.25) - A).max() > 1e-3


def test_solve_rows_numerically_rejects_bad_input():
    c = np.ones((4, 4))
    with pytest.raises(ValueError, match="costs"):
        alpha.solve_rows_numerically(np.ones((2, 2)), temperature=1.0)
    with pytest.raises(ValueError, match="costs"):
        alpha.solve_rows_numerically(np.ones((3, 4)), temperature=1.0)
    with pytest.raises(ValueError, match="costs"):
        alpha.solve_rows_numerically(np.where(np.eye(4) == 1, 0.0, np.nan), temperature=1.0)
    assert np.all(alpha.solve_rows_numerically(np.where(np.eye(4) == 1, np.nan, 1.0), temperature=1.0) > -1)
    with pytest.raises(ValueError, match="row_sums"):
        alpha.solve_rows_numerically(c, temperature=1.0, row_sums=[1.0, -1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="row_sums"):
        alpha.solve_rows_numerically(c, temperature=1.0, row_sums=[1.0, 1.0])
    with pytest.raises(ValueError, match="temperature"):
        alpha.solve_rows_numerically(c, temperature=0.0)
    with pytest.raises(ValueError, match="regulariser"):
        alpha.solve_rows_numerically(c, temperature=1.0, regulariser="huber")
