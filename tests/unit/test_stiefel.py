"""Tests of clbook.dynamics.stiefel (Esser et al. 2023, Def 1, Thm 2, Thm 3; Chapter 13)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as hs

import clbook
from clbook.dynamics import ssl
from clbook.dynamics import stiefel as st
from clbook.linalg import RETRACTIONS, haar_orthonormal, retract, stiefel_error

LAM = torch.tensor([-1.0, -0.5, 0.2, 0.6, 1.0], dtype=torch.float64)


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0, device="cpu")


def _rand(*shape, seed=0):
    return clbook.randn(*shape, generator=clbook.generator(seed))


def _M0(d=5, z=2, norm=0.3, seed=3):
    M = _rand(d, z, seed=seed)
    return M * norm / torch.linalg.matrix_norm(M, 2)


def _haar(n, p, seed):
    return haar_orthonormal(n, p, generator=clbook.generator(seed))


# --- geometry: invariants -------------------------------------------------------------------------------------------

def test_retractions_agree_to_first_order_on_tangent_steps():
    W = _haar(20, 3, 2)
    D = st.tangent_project(W, _rand(20, 3, seed=1))
    gaps = [float((retract(W + e * D, method="qr") - retract(W + e * D, method="polar")).abs().max()) for e in (1e-2, 1e-3)]
    assert gaps[1] < gaps[0] / 50  # O(e^2)


def test_projections_idempotent_and_tangent():
    W, G = _haar(15, 4, 4), _rand(15, 4, seed=5)
    P = st.tangent_project(W, G)
    torch.testing.assert_close(st.tangent_project(W, P), P, atol=1e-13, rtol=0)
    torch.testing.assert_close(W.T @ P, -(W.T @ P).T, atol=1e-13, rtol=0)
    H = st.horizontal_project(W, G)
    torch.testing.assert_close(st.horizontal_project(W, H), H, atol=1e-13, rtol=0)
    torch.testing.assert_close(W.T @ H, torch.zeros(4, 4), atol=1e-13, rtol=0)
    K = st.canonical_gradient(W, G)
    torch.testing.assert_close(W.T @ K, -(W.T @ K).T, atol=1e-13, rtol=0)
    # the paper's direction for W1 differs from the Riemannian gradient by W skew(WᵀG)
    skew = (W.T @ G - G.T @ W) / 2
    torch.testing.assert_close(P - H, W @ skew, atol=1e-13, rtol=0)


@settings(max_examples=20, deadline=None)
@given(n=hs.integers(2, 12), seed=hs.integers(0, 10_000), data=hs.data())
def test_tangent_projection_is_an_orthogonal_projection(n, seed, data):
    p = data.draw(hs.integers(1, n))
    W = _haar(n, p, seed)
    G, H = _rand(n, p, seed=seed + 1), _rand(n, p, seed=seed + 2)
    # self-adjoint in the Frobenius inner product, and G - P(G) is orthogonal to the tangent space
    assert abs(float((st.tangent_project(W, G) * H).sum() - (G * st.tangent_project(W, H)).sum())) < 1e-10
    assert abs(float(((G - st.tangent_project(W, G)) * st.tangent_project(W, H)).sum())) < 1e-10


def test_embed_weights_prescribes_M0():
    M0 = _M0()
    W1, W2 = st.embed_weights(M0, 40, generator=clbook.generator(0))
    assert max(stiefel_error(W1), stiefel_error(W2)) < 1e-14
    torch.testing.assert_close(W1.T @ W2, M0, atol=1e-14, rtol=0)


# --- training -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scheme", st.SCHEMES)
@pytest.mark.parametrize("retraction", RETRACTIONS)
def test_points_stay_on_the_manifold(scheme, retraction):
    W1, W2 = st.embed_weights(_M0(), 12, generator=clbook.generator(1))
    r = st.train(W1, W2, torch.diag(LAM), eta=0.01, steps=300, scheme=scheme, retraction=retraction)
    assert r.constraint_error < 1e-13
    assert max(stiefel_error(r.W1), stiefel_error(r.W2)) < 1e-13
    assert r.M.shape == (301, 5, 2) and r.loss.shape == (301,)


def test_train_matches_a_loop_over_step_and_projected_step():
    W1, W2 = st.embed_weights(_M0(), 9, generator=clbook.generator(5))
    C = torch.diag(LAM)
    r = st.train(W1, W2, C, eta=0.02, steps=25)
    V1, V2 = W1, W2
    for _ in range(25):
        W1, W2 = st.step(W1, W2, C, eta=0.02)
        G1, G2 = ssl.euclidean_gradients(V1, V2, C)
        V1, V2 = st.projected_step(V1, G1, eta=0.02), st.projected_step(V2, G2, eta=0.02)
    torch.testing.assert_close(r.W1, W1, atol=1e-15, rtol=0)
    torch.testing.assert_close(V1, W1, atol=1e-15, rtol=0)
    assert float(r.loss[-1]) == pytest.approx(ssl.trace_loss(W1, W2, C), abs=1e-14)


def test_width_independence_of_the_discrete_update():
    M0 = _M0()
    runs = [st.train(*st.embed_weights(M0, h, generator=clbook.generator(h)), torch.diag(LAM), eta=0.01, steps=200).M
            for h in (7, 60, 500)]
    assert max(float((r - runs[0]).abs().max()) for r in runs) < 1e-12


@pytest.mark.parametrize("scheme,retraction", [("paper", "qr"), ("paper", "polar"), ("euclidean", "polar"), ("canonical", "qr")])
def test_each_scheme_tracks_its_ode_to_first_order(scheme, retraction):
    M0 = _M0()
    errs = []
    for eta in (4e-3, 2e-3):
        r = st.train(*st.embed_weights(M0, 8, generator=clbook.generator(0)), torch.diag(LAM), eta=eta,
                     steps=int(round(1 / eta)), scheme=scheme, retraction=retraction)
        errs.append(float((r.M - st.solve_q(M0, LAM, r.t, scheme=scheme).q).abs().max()))
    assert 1.8 < errs[0] / errs[1] < 2.2


def test_a_scheme_misses_the_other_schemes_ode():
    """The can-fail twin of the first-order test: Euclidean steps + polar do not converge to Eq. 9 as eta shrinks."""
    M0 = _M0()
    own, eq9 = [], []
    for eta in (2e-3, 1e-3):
        r = st.train(*st.embed_weights(M0, 8, generator=clbook.generator(0)), torch.diag(LAM), eta=eta,
                     steps=int(round(1.5 / eta)), scheme="euclidean", retraction="polar")
        own.append(float((r.M - st.solve_q(M0, LAM, r.t, scheme="euclidean").q).abs().max()))
        eq9.append(float((r.M - st.solve_q(M0, LAM, r.t).q).abs().max()))
    assert 1.8 < own[0] / own[1] < 2.2 and eq9[0] / eq9[1] < 1.2 and eq9[1] > 5 * own[1]


def test_training_needs_a_start_on_the_manifold():
    W1, W2 = st.embed_weights(_M0(), 9, generator=clbook.generator(5))
    with pytest.raises(ValueError, match="W1 must have orthonormal columns"):
        st.train(1.01 * W1, W2, torch.diag(LAM), eta=0.01, steps=2)


# --- ODE, closed forms ----------------------------------------------------------------------------------------------

def test_q_rhs_against_a_loop_version_of_eq9():
    q = 0.4 * _rand(5, 3, seed=7)
    out = torch.zeros_like(q)
    for j in range(5):  # row j is u(v_j): the appendix's last display before stacking
        s = sum(LAM[i] * q[i] * (q[i] @ q[j]) for i in range(5)) + LAM[j] * sum(q[i] * (q[i] @ q[j]) for i in range(5))
        out[j] = -2 * (2 * LAM[j] * q[j] - s)
    torch.testing.assert_close(st.q_rhs(q, LAM), out, atol=1e-14, rtol=0)
    torch.testing.assert_close(st.q_rhs(q[:, 0], LAM), st.q_rhs(q[:, :1], LAM)[:, 0], atol=1e-15, rtol=0)


def test_q_rhs_is_the_flow_of_the_weights():
    """Thm 2 from the weights: dM/dt of the paper's flow, mapped by Vᵀ, equals Eq. 9 at any point (here V = I)."""
    W1, W2 = st.embed_weights(_M0(), 11, generator=clbook.generator(2))
    C = torch.diag(LAM)
    G1, G2 = ssl.euclidean_gradients(W1, W2, C)
    dM = -st.horizontal_project(W1, G1).T @ W2 - W1.T @ st.horizontal_project(W2, G2)
    torch.testing.assert_close(dM, st.q_rhs(W1.T @ W2, LAM), atol=1e-13, rtol=0)


def test_canonical_flow_matches_the_oja_closed_form():
    q0 = 0.3 * _rand(5, 2, seed=8)
    t = torch.linspace(0, 2, 11)
    q = st.solve_q(q0, LAM, t, scheme="canonical").q
    for k, tk in enumerate(t):
        E = torch.exp(-4 * LAM * tk)[:, None] * q0
        P = E @ torch.linalg.solve(torch.eye(2) - q0.T @ q0 + E.T @ E, E.T)
        torch.testing.assert_close(q[k] @ q[k].T, P, atol=1e-9, rtol=0)


@pytest.mark.parametrize("lam", [[-0.8, -0.3, 0.4, 1.0, 1.5], [0.3, 0.5, 1.0, 1.5, 2.0]])
def test_semi_closed_form_matches_the_ode(lam):
    q0 = 0.5 * torch.tensor([0.3, -0.5, 0.4, 0.2, -0.6])
    t = torch.linspace(0, 6, 31)
    torch.testing.assert_close(st.semi_closed_form(q0, lam, t), st.solve_q(q0, lam, t, rtol=1e-12, atol=1e-14).q[:, :, 0],
                               atol=1e-9, rtol=0)


@pytest.mark.parametrize("lam", [[-0.8, -0.3, 0.4], [0.3, 0.5, 1.0]])
def test_semi_closed_form_is_finite_at_large_times(lam):
    q = st.semi_closed_form(torch.tensor([0.3, -0.5, 0.4]), lam, torch.linspace(0, 500, 6))
    assert torch.isfinite(q).all()
    limit = torch.tensor([1.0, 0.0, 0.0]) if lam[0] < 0 else torch.zeros(3)
    torch.testing.assert_close(q[-1], limit, atol=1e-12, rtol=0)


def test_jacobian_against_autograd_and_its_eigenvalues_at_e1():
    lam = torch.tensor([-0.8, -0.3, 0.4, 1.0, 1.5])
    for q in (torch.eye(5)[0], 0.3 * _rand(5, seed=4)):
        auto = torch.autograd.functional.jacobian(lambda v: st.q_rhs(v, lam), q)
        torch.testing.assert_close(st.jacobian_q(q, lam), auto, atol=1e-12, rtol=0)
    eig = torch.sort(torch.linalg.eigvals(st.jacobian_q(torch.eye(5)[0], lam)).real).values
    torch.testing.assert_close(eig, torch.sort(torch.cat([8 * lam[:1], -2 * (lam[1:] - lam[0])])).values, atol=1e-12, rtol=0)


def test_euler_is_eq12():
    q0 = _M0()
    r = st.euler_q(q0, LAM, eta=0.01, steps=3)
    q, L = q0, torch.diag(LAM)
    for _ in range(3):
        q = q - 2 * 0.01 * (2 * L @ q - L @ q @ q.T @ q - q @ q.T @ L @ q)
    torch.testing.assert_close(r.q[-1], q, atol=1e-15, rtol=0)


def test_escape_times_grow_like_log_width():
    E = st.escape_times([-0.8, 0.5, 1.0], [10_000, 1_000_000], inits=400, generator=clbook.generator(0))
    assert E.shape == (2, 400) and torch.isfinite(E).all()
    slope = float(E[1].median() - E[0].median()) / np.log(100)
    assert slope == pytest.approx(1 / 6.4, rel=0.15)  # about 3.5 standard errors of a difference of medians


# --- bad input ------------------------------------------------------------------------------------------------------

def test_bad_inputs_raise_clear_errors():
    W = _haar(6, 2, 0)
    with pytest.raises(ValueError, match="tall"):
        st.horizontal_project(np.ones((2, 5)), np.ones((2, 5)))
    with pytest.raises(ValueError, match="retraction"):
        st.projected_step(W, W, eta=0.1, retraction="cayley")
    with pytest.raises(ValueError, match="shape"):
        st.tangent_project(W, np.ones((6, 3)))
    with pytest.raises(ValueError, match="operator norm"):
        st.embed_weights(2 * np.eye(3)[:, :1], 10, generator=clbook.generator(0))
    with pytest.raises(ValueError, match="h must be >= 4"):
        st.embed_weights(0.1 * np.ones((3, 1)), 3, generator=clbook.generator(0))
    with pytest.raises(ValueError, match="symmetric"):
        st.step(W, W, np.array([[0.0, 1.0], [0.0, 0.0]]), eta=0.1)
    with pytest.raises(ValueError, match="eta"):
        st.step(W, W, np.eye(2), eta=0.0)
    with pytest.raises(ValueError, match="scheme"):
        st.q_rhs(np.zeros(3), np.ones(3), scheme="grassmann")
    with pytest.raises(ValueError, match=r"\|\|q0\|\|\^2"):
        st.semi_closed_form(np.array([1.0, 0.0]), np.array([-1.0, 1.0]), np.linspace(0, 1, 3))
    with pytest.raises(ValueError, match="negative entry"):
        st.escape_times(np.array([0.5, 1.0]), [10], inits=2, generator=clbook.generator(0))
    with pytest.raises(ValueError, match="t must"):
        st.solve_q(np.zeros(3), np.ones(3), [0.5, 1.0])
    with pytest.raises(TypeError, match="generator"):
        st.embed_weights(0.1 * np.ones((3, 1)), 8, generator=0)
