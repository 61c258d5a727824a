"""clbook.dynamics.ssl: the linear SSL model of Esser et al. (2023) (Chapter 11)."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm

import clbook
from clbook.dynamics import ssl


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0, device="cpu")


def _rand(*shape, seed=0):
    return clbook.randn(*shape, generator=clbook.generator(seed)).cpu().numpy()


def _views(n=40, d=4, seed=0):
    x = _rand(n, d, seed=seed)
    return x, x + 0.3 * _rand(n, d, seed=seed + 1), _rand(n, d, seed=seed + 2)


def test_losses_match_loops_and_trace_form():
    x, xp, xn = _views()
    W1, W2 = _rand(7, 4, seed=5), _rand(7, 3, seed=6)
    M = W1.T @ W2
    u = lambda a: a @ M  # noqa: E731
    loop = sum(u(x)[i] @ (u(xn)[i] - u(xp)[i]) for i in range(len(x)))
    assert ssl.contrastive_loss(u(x), u(xp), u(xn)) == pytest.approx(loop, rel=1e-12)
    assert ssl.trace_loss(W1, W2, ssl.trace_matrix(x, xp, xn, normalize=False)) == pytest.approx(loop, rel=1e-12)
    nc = sum(-u(x)[i] @ u(xp)[i] for i in range(len(x)))
    assert ssl.noncontrastive_loss(u(x), u(xp)) == pytest.approx(nc, rel=1e-12)
    assert ssl.trace_loss(W1, W2, ssl.trace_matrix(x, xp, normalize=False)) == pytest.approx(nc, rel=1e-12)


def test_trace_matrix_normalisation_and_symmetry():
    x, xp, xn = _views()
    raw = ssl.trace_matrix(x, xp, xn, normalize=False, symmetric=False)
    np.testing.assert_allclose(raw, x.T @ (xn - xp), atol=1e-12)
    C = ssl.trace_matrix(x, xp, xn)
    np.testing.assert_allclose(C, C.T)
    np.testing.assert_allclose(C, (raw + raw.T) / 2 / len(x), atol=1e-13)


def test_closed_form_expm_ode_and_gd():
    x, xp, xn = _views(d=5)
    C = ssl.trace_matrix(x, xp, xn)
    theta0 = _rand(3, 5, seed=9)
    ts = np.linspace(0, 1, 6)
    closed = ssl.linear_closed_form(theta0, C, ts)
    np.testing.assert_allclose(closed, [theta0 @ expm(-2 * C * t) for t in ts], atol=1e-10)
    np.testing.assert_allclose(ssl.linear_flow(theta0, C, ts), closed, atol=1e-8)
    gd = ssl.linear_gd(theta0, C, eta=1e-2, steps=50)
    np.testing.assert_allclose(gd[-1], theta0 @ np.linalg.matrix_power(np.eye(5) - 2e-2 * C, 50), atol=1e-10)


def test_projector_closed_form_reduces_to_prop1_for_identity():
    x, xp, xn = _views(d=4)
    C = ssl.trace_matrix(x, xp, xn)
    theta0 = _rand(3, 4, seed=3)
    ts = np.linspace(0, 1, 5)
    np.testing.assert_allclose(ssl.projector_closed_form(np.eye(3), theta0, C, ts), ssl.linear_closed_form(theta0, C, ts), atol=1e-12)


def test_tangent_kernel_against_autograd():
    h, d, z = 6, 3, 2
    W1, W2, x, x2 = _rand(h, d, seed=1), _rand(h, z, seed=2), _rand(d, seed=3), _rand(d, seed=4)
    params = [torch.tensor(W1), torch.tensor(W2)]

    def jac(v):
        f = lambda a, b: b.T @ torch.tanh(a @ torch.tensor(v)) / h**0.5  # noqa: E731
        ja, jb = torch.autograd.functional.jacobian(f, tuple(params))
        return torch.cat([ja.reshape(z, -1), jb.reshape(z, -1)], dim=1)

    expected = (jac(x) @ jac(x2).T).numpy()
    np.testing.assert_allclose(ssl.tangent_kernel(W1, W2, x, x2, activation_name="tanh"), expected, atol=1e-12)


def test_haar_and_qr_retraction_are_orthonormal():
    W = ssl.haar_semi_orthogonal(12, 4, generator=clbook.generator(0))
    np.testing.assert_allclose(W.T @ W, np.eye(4), atol=1e-12)
    Q = ssl.retract_qr(_rand(8, 3))
    np.testing.assert_allclose(Q.T @ Q, np.eye(3), atol=1e-12)


def test_orthogonal_gd_stays_on_manifold_and_reaches_optimum():
    lam = np.array([-1.0, -0.5, 0.3, 0.8])
    C = np.diag(lam)
    g = clbook.generator(1)
    W1, W2 = ssl.haar_semi_orthogonal(9, 4, generator=g), ssl.haar_semi_orthogonal(9, 2, generator=g)
    r = ssl.gd_two_layer(W1, W2, C, eta=0.05, steps=1500, constraint="orthogonal")
    np.testing.assert_allclose(r.W1.T @ r.W1, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(r.W2.T @ r.W2, np.eye(2), atol=1e-12)
    assert r.losses[-1] == pytest.approx(ssl.optimal_value(C, 2), abs=1e-8)


def test_frobenius_gd_collapses_and_free_gd_diverges():
    C = np.diag([-1.0, -0.5, 0.3])
    W1, W2 = 0.3 * _rand(5, 3, seed=1), 0.3 * _rand(5, 2, seed=2)
    r = ssl.gd_two_layer(W1, W2, C, eta=0.05, steps=2000, constraint="frobenius", c1=1.0, c2=2.0)
    assert r.losses[-1] == pytest.approx(-4.0, rel=1e-8)
    np.testing.assert_allclose(np.linalg.svd(r.products[-1], compute_uv=False), [2.0, 0.0], atol=1e-6)
    free = ssl.gd_two_layer(W1, W2, C, eta=0.05, steps=10_000)
    assert free.reason == "diverged" and free.steps < 10_000


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.1, 5.0), st.floats(0.1, 5.0))
def test_scaled_loss_is_scale_invariant(seed, a, b):
    W1, W2, C = _rand(6, 3, seed=seed), _rand(6, 2, seed=seed + 1), np.diag([-1.0, 0.2, 0.5])
    assert ssl.scaled_loss(a * W1, b * W2, C) == pytest.approx(ssl.scaled_loss(W1, W2, C), rel=1e-10)
    assert ssl.scaled_loss(W1, W2, C) >= ssl.optimal_value(C, 2) - 1e-12


def test_bad_inputs():
    with pytest.raises(ValueError, match="shape"):
        ssl.contrastive_loss(np.ones((3, 2)), np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="constraint"):
        ssl.gd_two_layer(np.eye(3), np.eye(3)[:, :1], np.eye(3), eta=0.1, steps=1, constraint="spectral")
    with pytest.raises(ValueError, match="eta"):
        ssl.gd_two_layer(np.eye(3), np.eye(3)[:, :1], np.eye(3), eta=-1.0, steps=1)
    with pytest.raises(ValueError, match="symmetric"):
        ssl.linear_closed_form(np.ones((2, 3)), np.arange(9.0).reshape(3, 3), [0.0, 1.0])
    with pytest.raises(ValueError, match="k <= h"):
        ssl.haar_semi_orthogonal(2, 3, generator=clbook.generator(0))
    with pytest.raises(ValueError, match="activation"):
        ssl.activation("gelu")
    with pytest.raises(TypeError):
        ssl.as_array("x", object())
