"""Tests of clbook.dynamics.stiefel (Esser et al. 2023, Def 1, Thm 2, Thm 3; Chapter 13)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from clbook.dynamics import stiefel as st

LAM = np.array([-1.0, -0.5, 0.2, 0.6, 1.0])


def _M0(d=5, z=2, norm=0.3, seed=3):
    M = np.random.default_rng(seed).standard_normal((d, z))
    return M * norm / np.linalg.norm(M, 2)


# --- geometry: invariants -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", st.RETRACTIONS)
def test_retraction_lands_on_the_manifold_and_fixes_its_points(method):
    A = np.random.default_rng(0).standard_normal((30, 4))
    W = st.retract(A, method=method)
    assert st.stiefel_error(W) < 1e-14
    np.testing.assert_allclose(st.retract(W, method=method), W, atol=1e-14)


def test_polar_is_the_nearest_point():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((12, 3))
    P = st.retract(A, method="polar")
    for _ in range(20):
        other = st.retract(rng.standard_normal((12, 3)), method="qr")
        assert np.linalg.norm(A - P) <= np.linalg.norm(A - other) + 1e-12


def test_retractions_agree_to_first_order_on_tangent_steps():
    rng = np.random.default_rng(2)
    W = st.random_stiefel(20, 3, seed=2)
    D = st.tangent_project(W, rng.standard_normal((20, 3)))
    gaps = [np.abs(st.retract(W + e * D, method="qr") - st.retract(W + e * D, method="polar")).max() for e in (1e-2, 1e-3)]
    assert gaps[1] < gaps[0] / 50  # O(e^2)


def test_projections_idempotent_and_tangent():
    rng = np.random.default_rng(4)
    W = st.random_stiefel(15, 4, seed=4)
    G = rng.standard_normal((15, 4))
    P = st.tangent_project(W, G)
    np.testing.assert_allclose(st.tangent_project(W, P), P, atol=1e-13)
    np.testing.assert_allclose(W.T @ P, -(W.T @ P).T, atol=1e-13)
    H = st.horizontal_project(W, G)
    np.testing.assert_allclose(st.horizontal_project(W, H), H, atol=1e-13)
    np.testing.assert_allclose(W.T @ H, 0, atol=1e-13)
    K = st.canonical_gradient(W, G)
    np.testing.assert_allclose(W.T @ K, -(W.T @ K).T, atol=1e-13)


@settings(max_examples=30, deadline=None)
@given(n=hs.integers(2, 12), seed=hs.integers(0, 10_000), data=hs.data())
def test_tangent_projection_is_an_orthogonal_projection(n, seed, data):
    p = data.draw(hs.integers(1, n))
    rng = np.random.default_rng(seed)
    W = st.random_stiefel(n, p, seed=seed)
    G, H = rng.standard_normal((n, p)), rng.standard_normal((n, p))
    # self-adjoint in the Frobenius inner product, and G - P(G) is orthogonal to the tangent space
    assert abs(np.sum(st.tangent_project(W, G) * H) - np.sum(G * st.tangent_project(W, H))) < 1e-10
    assert abs(np.sum((G - st.tangent_project(W, G)) * st.tangent_project(W, H))) < 1e-10


def test_embed_weights_prescribes_M0():
    M0 = _M0()
    W1, W2 = st.embed_weights(M0, 40, seed=0)
    assert max(st.stiefel_error(W1), st.stiefel_error(W2)) < 1e-14
    np.testing.assert_allclose(W1.T @ W2, M0, atol=1e-14)


# --- training -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scheme", st.SCHEMES)
@pytest.mark.parametrize("retraction", st.RETRACTIONS)
def test_points_stay_on_the_manifold(scheme, retraction):
    W1, W2 = st.embed_weights(_M0(), 12, seed=1)
    r = st.train(W1, W2, np.diag(LAM), eta=0.01, steps=300, scheme=scheme, retraction=retraction)
    assert r.constraint_error < 1e-13
    assert max(st.stiefel_error(r.W1), st.stiefel_error(r.W2)) < 1e-13
    assert r.M.shape == (301, 5, 2) and r.loss.shape == (301,)


def test_train_matches_a_loop_over_step():
    W1, W2 = st.embed_weights(_M0(), 9, seed=5)
    C = np.diag(LAM)
    r = st.train(W1, W2, C, eta=0.02, steps=25)
    for _ in range(25):
        W1, W2 = st.step(W1, W2, C, eta=0.02)
    np.testing.assert_allclose(r.W1, W1, atol=1e-15)
    np.testing.assert_allclose(r.loss[-1], st.trace_loss(W1, W2, C), atol=1e-14)


def test_gradients_against_finite_differences():
    rng = np.random.default_rng(6)
    W1, W2 = rng.standard_normal((7, 4)), rng.standard_normal((7, 2))
    A = rng.standard_normal((4, 4))
    C = A + A.T
    G1, G2 = st.euclidean_gradients(W1, W2, C)
    E = np.zeros_like(W1)
    E[3, 1] = 1e-6
    fd = (st.trace_loss(W1 + E, W2, C) - st.trace_loss(W1 - E, W2, C)) / 2e-6
    assert abs(fd - G1[3, 1]) < 1e-7
    E = np.zeros_like(W2)
    E[5, 0] = 1e-6
    fd = (st.trace_loss(W1, W2 + E, C) - st.trace_loss(W1, W2 - E, C)) / 2e-6
    assert abs(fd - G2[5, 0]) < 1e-7


def test_width_independence_of_the_discrete_update():
    M0 = _M0()
    runs = [st.train(*st.embed_weights(M0, h, seed=h), np.diag(LAM), eta=0.01, steps=200).M for h in (7, 60, 500)]
    assert max(np.abs(r - runs[0]).max() for r in runs) < 1e-12


@pytest.mark.parametrize("scheme,retraction", [("paper", "qr"), ("paper", "polar"), ("euclidean", "polar"), ("canonical", "qr")])
def test_each_scheme_tracks_its_ode_to_first_order(scheme, retraction):
    M0 = _M0()
    errs = []
    for eta in (4e-3, 2e-3):
        r = st.train(*st.embed_weights(M0, 8, seed=0), np.diag(LAM), eta=eta, steps=int(round(1 / eta)), scheme=scheme,
                     retraction=retraction)
        errs.append(np.abs(r.M - st.solve_q(M0, LAM, r.t, scheme=scheme).q).max())
    assert 1.8 < errs[0] / errs[1] < 2.2


# --- ODE, closed forms ----------------------------------------------------------------------------------------------

def test_q_rhs_against_a_loop_version_of_eq9():
    rng = np.random.default_rng(7)
    q = 0.4 * rng.standard_normal((5, 3))
    out = np.zeros_like(q)
    for j in range(5):  # row j is u(v_j): the appendix's last display before stacking
        s = sum(LAM[i] * q[i] * (q[i] @ q[j]) for i in range(5)) + LAM[j] * sum(q[i] * (q[i] @ q[j]) for i in range(5))
        out[j] = -2 * (2 * LAM[j] * q[j] - s)
    np.testing.assert_allclose(st.q_rhs(q, LAM), out, atol=1e-14)
    np.testing.assert_allclose(st.q_rhs(q[:, 0], LAM), st.q_rhs(q[:, :1], LAM)[:, 0], atol=1e-15)


def test_canonical_flow_matches_the_oja_closed_form():
    q0 = 0.3 * np.random.default_rng(8).standard_normal((5, 2))
    t = np.linspace(0, 2, 11)
    q = st.solve_q(q0, LAM, t, scheme="canonical").q
    for k, tk in enumerate(t):
        E = np.exp(-4 * LAM * tk)[:, None] * q0
        P = E @ np.linalg.solve(np.eye(2) - q0.T @ q0 + E.T @ E, E.T)
        np.testing.assert_allclose(q[k] @ q[k].T, P, atol=1e-9)


@pytest.mark.parametrize("lam", [np.array([-0.8, -0.3, 0.4, 1.0, 1.5]), np.array([0.3, 0.5, 1.0, 1.5, 2.0])])
def test_semi_closed_form_matches_the_ode(lam):
    q0 = 0.5 * np.array([0.3, -0.5, 0.4, 0.2, -0.6])
    t = np.linspace(0, 6, 31)
    np.testing.assert_allclose(st.semi_closed_form(q0, lam, t), st.solve_q(q0, lam, t, rtol=1e-12, atol=1e-14).q[:, :, 0],
                               atol=1e-9)


def test_jacobian_eigenvalues_at_e1():
    lam = np.array([-0.8, -0.3, 0.4, 1.0, 1.5])
    e1 = np.eye(5)[0]
    J = st.jacobian_q(e1, lam)
    fd = np.stack([(st.q_rhs(e1 + 1e-6 * v, lam) - st.q_rhs(e1 - 1e-6 * v, lam)) / 2e-6 for v in np.eye(5)], axis=1)
    np.testing.assert_allclose(J, fd, atol=1e-7)
    np.testing.assert_allclose(np.sort(np.linalg.eigvals(J).real), np.sort(np.r_[8 * lam[0], -2 * (lam[1:] - lam[0])]),
                               atol=1e-12)


def test_euler_is_eq12():
    q0 = _M0()
    r = st.euler_q(q0, LAM, eta=0.01, steps=3)
    q = q0
    for _ in range(3):
        L = np.diag(LAM)
        q = q - 2 * 0.01 * (2 * L @ q - L @ q @ q.T @ q - q @ q.T @ L @ q)
    np.testing.assert_allclose(r.q[-1], q, atol=1e-15)


def test_escape_times_grow_with_width():
    E = st.escape_times(np.array([-0.8, 0.5, 1.0]), [100, 10_000], inits=20, seed=0)
    assert E.shape == (2, 20) and np.all(np.isfinite(E))
    assert np.median(E[1]) > np.median(E[0])


# --- bad input ------------------------------------------------------------------------------------------------------

def test_bad_inputs_raise_clear_errors():
    W = st.random_stiefel(6, 2, seed=0)
    with pytest.raises(ValueError, match="tall"):
        st.retract(np.ones((2, 5)))
    with pytest.raises(ValueError, match="method"):
        st.retract(W, method="cayley")
    with pytest.raises(ValueError, match="shape"):
        st.tangent_project(W, np.ones((6, 3)))
    with pytest.raises(ValueError, match="operator norm"):
        st.embed_weights(2 * np.eye(3)[:, :1], 10, seed=0)
    with pytest.raises(ValueError, match="h must be >= 4"):
        st.embed_weights(0.1 * np.ones((3, 1)), 3, seed=0)
    with pytest.raises(ValueError, match="symmetric"):
        st.trace_loss(W, W, np.array([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="eta"):
        st.step(W, W, np.eye(2), eta=0.0)
    with pytest.raises(ValueError, match="scheme"):
        st.q_rhs(np.zeros(3), np.ones(3), scheme="grassmann")
    with pytest.raises(ValueError, match=r"\|\|q0\|\|\^2"):
        st.semi_closed_form(np.array([1.0, 0.0]), np.array([-1.0, 1.0]), np.linspace(0, 1, 3))
    with pytest.raises(ValueError, match="negative eigenvalue"):
        st.escape_times(np.array([0.5, 1.0]), [10], inits=2, seed=0)
    with pytest.raises(TypeError):
        st.random_stiefel(5.0, 2, seed=0)
