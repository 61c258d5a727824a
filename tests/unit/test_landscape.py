"""clbook.landscape: networks and losses of Pokle et al. (2022) and the closed forms of Theorem 1."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook import landscape as L
from clbook.data import sparse_coding as sc


def test_srelu_piecewise_and_identity():
    u = torch.linspace(-2, 2, 41)
    b = 0.5
    expected = torch.tensor([x - b if x > b else (x + b if x < -b else 0.0) for x in u.tolist()])
    torch.testing.assert_close(L.srelu(u, b), expected, rtol=0, atol=1e-15)
    torch.testing.assert_close(L.srelu(u, 0.0), u, rtol=0, atol=0)
    with pytest.raises(ValueError, match="threshold"):
        L.srelu(u, -0.1)


def test_encoder_predictor_shapes_and_values():
    gen = clbook.generator(0)
    W, A = clbook.randn(3, 4, 6, generator=gen), clbook.randn(3, 5, 6, generator=gen)
    b = torch.rand(3, 4, generator=gen, dtype=torch.float64)
    H = L.encode(W, A, bias=b, activation="relu")
    assert H.shape == (3, 5, 4)
    torch.testing.assert_close(H[1, 2], torch.relu(W[1] @ A[1, 2] + b[1]))
    torch.testing.assert_close(L.encode(W, A, bias=b, activation="srelu")[0, 0], L.srelu(W[0] @ A[0, 0], b[0]))
    Wp = clbook.randn(3, 4, 4, generator=gen)
    torch.testing.assert_close(L.predict(Wp, H)[2, 1], Wp[2] @ H[2, 1])


def test_batch_losses_against_loops():
    gen = clbook.generator(1)
    u, v = clbook.randn(6, 4, generator=gen), clbook.randn(6, 4, generator=gen)
    cos = [float(u[k] @ v[k] / (u[k].norm() * v[k].norm())) for k in range(6)]
    assert float(L.ncl_l2(u, v)) == pytest.approx(sum(2 - 2 * c for c in cos) / 6, rel=1e-12)
    tau = 0.7
    loop = 0.0
    for k in range(6):
        logits = [tau * float(u[k] @ v[j]) for j in range(6)]
        loop += -logits[k] + math.log(sum(math.exp(x) for x in logits))
    assert float(L.cl_inner(u, v, tau=tau)) == pytest.approx(loop / 6, rel=1e-12)
    H = torch.cat([u, v]) / torch.cat([u, v]).norm(dim=1, keepdim=True)
    T, n, loop = 0.3, 6, 0.0
    for k in range(2 * n):
        others = [math.exp(float(H[k] @ H[j]) / T) for j in range(2 * n) if j != k]
        loop += -float(H[k] @ H[(k + n) % (2 * n)]) / T + math.log(sum(others))
    assert float(L.nt_xent(u, v, temperature=T)) == pytest.approx(loop / (2 * n), rel=1e-12)


def test_stop_gradient():
    gen = clbook.generator(2)
    u = clbook.randn(5, 3, generator=gen).requires_grad_()
    v = clbook.randn(5, 3, generator=gen).requires_grad_()
    L.ncl_inner(u, v).backward()
    assert v.grad is None and u.grad is not None


@pytest.mark.parametrize("scheme", ["independent", "dependent"])
def test_linear_ncl_population_matches_monte_carlo(scheme):
    gen = clbook.generator(3)
    data = sc.sample(200_000, p=5, d=3, sparsity=0.4, noise=0.3, generator=gen)
    Wo, Wt = 0.5 * clbook.randn(4, 5, generator=gen), 0.5 * clbook.randn(4, 5, generator=gen)
    a1, a2 = sc.views(data.X, keep=0.6, generator=gen, scheme=scheme)
    mc = L.ncl_inner(L.encode(Wo, a1, activation="linear"), L.encode(Wt, a2, activation="linear"))
    exact = L.linear_ncl_population(Wo, Wt, M=data.M, second_moment=sc.latent_second_moment(3, sparsity=0.4), noise=0.3,
                                    keep=0.6, scheme=scheme)
    assert abs(float(mc - exact)) < 0.02


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.05, 1.0))
def test_theorem_1a_bound_and_equality(seed, keep):
    gen = clbook.generator(seed)
    W = L.column_normalize(clbook.randn(4, 4, generator=gen))
    assert float(L.ncl_onehot(W, keep=keep)) >= 2 - 2 * keep**2 - 1e-12
    assert float(L.ncl_onehot(W.abs(), keep=keep)) == pytest.approx(2 - 2 * keep**2, abs=1e-12)


def test_theorem_1a_flow_closed_form():
    W0 = clbook.randn(2, 6, 6, generator=clbook.generator(4))
    flow = L.ncl_onehot_flow(W0, keep=0.5, lr=0.5, steps=300)
    torch.testing.assert_close(flow.W, flow.closed_form, rtol=0, atol=1e-12)
    long = L.ncl_onehot_flow(W0, keep=0.5, lr=0.5, steps=3000)
    torch.testing.assert_close(long.W, long.limit, rtol=0, atol=1e-10)
    assert bool((long.losses.diff(dim=-1) <= 1e-15).all()), "the loss never increases"


def test_surrogate_exact_vs_monte_carlo_and_minimum():
    gen = clbook.generator(5)
    W = L.column_normalize(clbook.randn(4, 4, generator=gen))
    exact = float(L.cl_surrogate(W, keep=0.5, tau=2.0))
    mc = float(L.cl_surrogate_mc(W, keep=0.5, tau=2.0, samples=100_000, generator=gen))
    assert abs(exact - mc) < 0.02
    P = torch.eye(5)[:, torch.tensor([2, 0, 4, 1, 3])]
    assert float(L.cl_surrogate(P, keep=0.5, tau=3.0)) == pytest.approx(L.cl_surrogate_min(5, keep=0.5, tau=3.0), abs=1e-12)
    Ws = L.column_normalize(clbook.randn(50, 5, 5, generator=gen))
    assert float((L.cl_surrogate(Ws, keep=0.5, tau=3.0) - L.cl_surrogate_min(5, keep=0.5, tau=3.0)).min()) > 0.1


def test_dead_column_gap():
    W = torch.eye(4)
    W[:, 2] = -torch.tensor([0.6, 0.0, 0.0, 0.8])
    gap = float(L.cl_surrogate(W, keep=0.7, tau=2.0)) - L.cl_surrogate_min(4, keep=0.7, tau=2.0)
    assert gap == pytest.approx(L.dead_column_gap(4, keep=0.7, tau=2.0), abs=1e-12)


def test_descent_reaches_a_permutation_from_some_start():
    W0 = clbook.rand(4, 4, 4, generator=clbook.generator(6))
    run = L.cl_surrogate_descent(W0, keep=0.5, tau=5.0, lr=0.2, steps=600)
    assert run.losses.shape == (4, 601)
    best = int(run.gap.argmin())
    assert float(run.gap[best]) < 1e-7 and float(L.nearest_permutation_error(run.W[best])) < 1e-3


def test_large_batch_closed_forms():
    d, keep = 6, 0.5
    assert L.large_batch_threshold(d, keep=keep) == pytest.approx(math.log(11))
    for tau in (1.0, 5.0):
        W = L.large_batch_minimiser(d, keep=keep, tau=tau, permutation=[1, 0, 2, 3, 5, 4])
        assert float(L.cl_large_batch(W, keep=keep, tau=tau)) == pytest.approx(L.large_batch_min(d, keep=keep, tau=tau), abs=1e-12)
        Ws = L.column_normalize(clbook.randn(200, d, d, generator=clbook.generator(7)))
        assert float(L.cl_large_batch(Ws, keep=keep, tau=tau).min()) > L.large_batch_min(d, keep=keep, tau=tau)
    assert L.large_batch_min(d, keep=keep, tau=5.0) < float(L.cl_large_batch(torch.eye(d), keep=keep, tau=5.0)) - 0.3


def test_bad_arguments():
    with pytest.raises(ValueError, match="activation must be one of"):
        L.encode(torch.zeros(2, 3), torch.zeros(4, 3), activation="tanh")
    with pytest.raises(ValueError, match="same p"):
        L.encode(torch.zeros(2, 3), torch.zeros(4, 5))
    with pytest.raises(ValueError, match="tau must be > 0"):
        L.cl_surrogate(torch.eye(3), keep=0.5, tau=0.0)
    with pytest.raises(ValueError, match="zero column"):
        L.column_normalize(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="permutation must be"):
        L.large_batch_minimiser(3, keep=0.5, tau=1.0, permutation=[0, 0, 1])
