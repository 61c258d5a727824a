"""clbook.dynamics.ssl: the linear SSL model of Esser et al. (2023) (Chapter 11)."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm

import clbook
from clbook.dynamics import ssl, stiefel
from clbook.linalg import haar_orthonormal, stiefel_error


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0, device="cpu")


def _rand(*shape, seed=0):
    return clbook.randn(*shape, generator=clbook.generator(seed))


def _views(n=40, d=4, seed=0):
    x = _rand(n, d, seed=seed)
    return x, x + 0.3 * _rand(n, d, seed=seed + 1), _rand(n, d, seed=seed + 2)


def _sym(d, seed):
    A = _rand(d, d, seed=seed)
    return (A + A.T) / 2


def test_losses_match_loops_and_trace_form():
    x, xp, xn = _views()
    W1, W2 = _rand(7, 4, seed=5), _rand(7, 3, seed=6)
    M = W1.T @ W2
    u = lambda a: a @ M  # noqa: E731
    loop = sum(float(u(x)[i] @ (u(xn)[i] - u(xp)[i])) for i in range(len(x)))
    assert ssl.contrastive_loss(u(x), u(xp), u(xn)) == pytest.approx(loop, rel=1e-12)
    assert ssl.trace_loss(W1, W2, ssl.trace_matrix(x, xp, xn, normalize=False)) == pytest.approx(loop, rel=1e-12)
    nc = sum(-float(u(x)[i] @ u(xp)[i]) for i in range(len(x)))
    assert ssl.noncontrastive_loss(u(x), u(xp)) == pytest.approx(nc, rel=1e-12)
    assert ssl.trace_loss(W1, W2, ssl.trace_matrix(x, xp, normalize=False)) == pytest.approx(nc, rel=1e-12)
    # the main text's sign of the non-contrastive C̃ gives the loss with the opposite sign
    assert ssl.trace_loss(W1, W2, -ssl.trace_matrix(x, xp, normalize=False)) == pytest.approx(-nc, rel=1e-12)


def test_trace_matrix_normalisation_symmetry_and_conversion():
    x, xp, xn = _views()
    raw = ssl.trace_matrix(x, xp, xn, normalize=False, symmetric=False)
    torch.testing.assert_close(raw, x.T @ (xn - xp), atol=1e-12, rtol=0)
    C = ssl.trace_matrix(x, xp, xn)
    torch.testing.assert_close(C, C.T)
    torch.testing.assert_close(C, (raw + raw.T) / 2 / len(x), atol=1e-13, rtol=0)
    # numpy and float32 input are converted to the dtype of clbook.setup, deliberately
    same = ssl.trace_matrix(x.numpy(), xp.float(), xn.tolist())
    assert same.dtype == torch.float64
    torch.testing.assert_close(same, C, atol=1e-6, rtol=0)


def test_euclidean_gradients_against_autograd():
    W1, W2, C = _rand(7, 4, seed=1), _rand(7, 2, seed=2), _sym(4, 3)
    T1, T2 = W1.clone().requires_grad_(), W2.clone().requires_grad_()
    torch.trace(T2.T @ T1 @ C @ T1.T @ T2).backward()
    G1, G2 = ssl.euclidean_gradients(W1, W2, C)
    torch.testing.assert_close(G1, T1.grad, atol=1e-12, rtol=0)
    torch.testing.assert_close(G2, T2.grad, atol=1e-12, rtol=0)


def test_closed_form_matrix_exp_expm_ode_and_gd():
    x, xp, xn = _views(d=5)
    C = ssl.trace_matrix(x, xp, xn)
    theta0 = _rand(3, 5, seed=9)
    ts = torch.linspace(0, 1, 6)
    closed = ssl.linear_closed_form(theta0, C, ts)
    torch.testing.assert_close(closed, torch.stack([theta0 @ torch.linalg.matrix_exp(-2 * C * t) for t in ts]), atol=1e-10, rtol=0)
    np.testing.assert_allclose(closed[-1].numpy(), theta0.numpy() @ expm(-2 * C.numpy()), atol=1e-10)
    torch.testing.assert_close(ssl.linear_flow(theta0, C, ts), closed, atol=1e-8, rtol=0)
    gd = ssl.linear_gd(theta0, C, eta=1e-2, steps=50)
    torch.testing.assert_close(gd[-1], theta0 @ torch.linalg.matrix_power(torch.eye(5) - 2e-2 * C, 50), atol=1e-10, rtol=0)


def test_closed_form_says_when_the_solution_leaves_the_float_range():
    C = torch.diag(torch.tensor([-1.0, 0.5]))
    with pytest.raises(ValueError, match="times"):
        ssl.linear_closed_form(torch.ones(1, 2), C, [0.0, 400.0])
    assert torch.isfinite(ssl.linear_closed_form(torch.ones(1, 2), C, [0.0, 300.0])).all()


def test_projector_closed_form_reduces_to_prop1_for_identity():
    x, xp, xn = _views(d=4)
    C = ssl.trace_matrix(x, xp, xn)
    theta0 = _rand(3, 4, seed=3)
    ts = torch.linspace(0, 1, 5)
    torch.testing.assert_close(ssl.projector_closed_form(torch.eye(3), theta0, C, ts), ssl.linear_closed_form(theta0, C, ts),
                               atol=1e-12, rtol=0)


def test_projector_closed_form_against_an_ode_solver():
    from scipy.integrate import solve_ivp

    x, xp, xn = _views(d=4)
    C = ssl.trace_matrix(x, xp, xn)
    theta0, A = _rand(3, 4, seed=3), _rand(2, 3, seed=4)
    ts = np.linspace(0, 1, 5)
    AtA, Cn = (A.T @ A).numpy(), C.numpy()
    sol = solve_ivp(lambda t, y: (-2 * AtA @ y.reshape(3, 4) @ Cn).ravel(), (0, 1), theta0.numpy().ravel(), t_eval=ts,
                    method="DOP853", rtol=1e-12, atol=1e-13)
    expected = np.einsum("rz,tzd->trd", A.numpy(), sol.y.T.reshape(-1, 3, 4))
    np.testing.assert_allclose(ssl.projector_closed_form(A, theta0, C, ts).numpy(), expected, atol=1e-9)


def test_orthogonal_gd_is_the_stiefel_update_and_reaches_the_optimum():
    C = torch.diag(torch.tensor([-1.0, -0.5, 0.3, 0.8]))
    g = clbook.generator(1)
    W1, W2 = haar_orthonormal(9, 4, generator=g), haar_orthonormal(9, 2, generator=g)
    r = ssl.gd_two_layer(W1, W2, C, eta=0.05, steps=1500, constraint="orthogonal")
    assert max(stiefel_error(r.W1), stiefel_error(r.W2)) < 1e-12
    assert float(r.losses[-1]) == pytest.approx(ssl.optimal_value(C, 2), abs=1e-8)
    same = stiefel.train(W1, W2, C, eta=0.05, steps=1500)
    torch.testing.assert_close(r.products, same.M, atol=1e-12, rtol=0)


def test_frobenius_gd_collapses_and_free_gd_diverges():
    C = torch.diag(torch.tensor([-1.0, -0.5, 0.3]))
    W1, W2 = 0.3 * _rand(5, 3, seed=1), 0.3 * _rand(5, 2, seed=2)
    r = ssl.gd_two_layer(W1, W2, C, eta=0.05, steps=2000, constraint="frobenius", c1=1.0, c2=2.0)
    assert float(r.losses[-1]) == pytest.approx(-4.0, rel=1e-8)
    torch.testing.assert_close(torch.linalg.svdvals(r.products[-1]), torch.tensor([2.0, 0.0]), atol=1e-6, rtol=0)
    free = ssl.gd_two_layer(W1, W2, C, eta=0.05, steps=10_000)
    assert free.stopping_reason == "diverged" and free.steps < 10_000 and torch.isfinite(free.losses).all()


def test_operator_and_scaled_constraints_reach_the_optimum():
    V = haar_orthonormal(5, generator=clbook.generator(3))
    C = V @ torch.diag(torch.tensor([-1.0, -0.6, 0.2, 0.5, 1.0])) @ V.T
    W1, W2 = 0.3 * _rand(8, 5, seed=1), 0.3 * _rand(8, 2, seed=2)
    best = ssl.optimal_value(C, 2)
    assert best == pytest.approx(-1.6, abs=1e-12)
    op = ssl.gd_two_layer(W1, W2, C, eta=0.05, steps=3000, constraint="operator")
    assert float(op.losses[-1]) == pytest.approx(best, abs=1e-6)
    # the scaled loss is not smooth where the top singular value of W_i repeats; for z = 1 GD reaches the optimum
    sc = ssl.gd_two_layer(W1, W2[:, :1], C, eta=0.05, steps=3000, constraint="scaled")
    assert float(sc.losses[-1]) == pytest.approx(ssl.optimal_value(C, 1), abs=1e-6)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.1, 5.0), st.floats(0.1, 5.0))
def test_scaled_loss_is_scale_invariant_and_bounded_by_the_optimum(seed, a, b):
    W1, W2, C = _rand(6, 3, seed=seed), _rand(6, 2, seed=seed + 1), torch.diag(torch.tensor([-1.0, 0.2, 0.5]))
    assert ssl.scaled_loss(a * W1, b * W2, C) == pytest.approx(ssl.scaled_loss(W1, W2, C), rel=1e-10)
    assert ssl.scaled_loss(W1, W2, C) >= ssl.optimal_value(C, 2) - 1e-12


def test_singular_value_ratio_against_numpy():
    M = _rand(4, 3, 5, seed=2)
    s = np.linalg.svd(M.numpy(), compute_uv=False)
    np.testing.assert_allclose(ssl.singular_value_ratio(M).numpy(), s[:, 1] / s[:, 0], rtol=1e-12)


def test_bad_inputs():
    with pytest.raises(ValueError, match="shape"):
        ssl.contrastive_loss(np.ones((3, 2)), np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="u"):
        ssl.contrastive_loss(np.ones((0, 2)), np.ones((0, 2)), np.ones((0, 2)))
    with pytest.raises(ValueError, match="finite"):
        ssl.noncontrastive_loss([[np.nan, 1.0]], [[0.0, 1.0]])
    with pytest.raises(ValueError, match="constraint"):
        ssl.gd_two_layer(np.eye(3), np.eye(3)[:, :1], np.eye(3), eta=0.1, steps=1, constraint="spectral")
    with pytest.raises(ValueError, match="eta"):
        ssl.gd_two_layer(np.eye(3), np.eye(3)[:, :1], np.eye(3), eta=-1.0, steps=1)
    with pytest.raises(ValueError, match="orthonormal"):
        ssl.gd_two_layer(2 * np.eye(3), np.eye(3)[:, :1], np.eye(3), eta=0.1, steps=1, constraint="orthogonal")
    with pytest.raises(ValueError, match="symmetric"):
        ssl.linear_closed_form(np.ones((2, 3)), np.arange(9.0).reshape(3, 3), [0.0, 1.0])
    with pytest.raises(ValueError, match="times"):
        ssl.linear_closed_form(np.ones((2, 3)), np.eye(3), [1.0, 0.5])
    with pytest.raises(ValueError, match="W1"):
        ssl.scaled_loss(np.zeros((3, 2)), np.ones((3, 1)), np.eye(2))
    with pytest.raises(ValueError, match="M"):
        ssl.singular_value_ratio(np.ones(3))
    with pytest.raises(TypeError, match="W1"):
        ssl.trace_loss(object(), np.ones((3, 1)), np.eye(2))
    with pytest.raises(TypeError, match="C"):
        ssl.trace_loss(np.ones((3, 2)), np.ones((3, 1)), np.eye(2) * 1j)
