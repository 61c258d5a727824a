"""clbook.dynamics.landscape: the networks of Pokle et al. (2022), the theory losses and the closed forms of Theorem 1."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook import linalg
from clbook.data import sparse_coding as sc
from clbook.dynamics import dual
from clbook.dynamics import landscape as L


def test_srelu_piecewise_and_identity():
    u = torch.linspace(-2, 2, 41, dtype=torch.float64)
    b = 0.5
    expected = torch.tensor([x - b if x > b else (x + b if x < -b else 0.0) for x in u.tolist()], dtype=torch.float64)
    torch.testing.assert_close(L.srelu(u, b), expected, rtol=0, atol=1e-15)
    torch.testing.assert_close(L.srelu(u, 0.0), u, rtol=0, atol=0)
    with pytest.raises(ValueError, match="threshold"):
        L.srelu(u, -0.1)


def test_encoder_predictor_shapes_and_values():
    gen = clbook.generator(0)
    W, A = clbook.randn(3, 4, 6, generator=gen), clbook.randn(3, 5, 6, generator=gen)
    b = clbook.rand(3, 4, generator=gen)
    H = L.encode(W, A, bias=b, activation="relu")
    assert H.shape == (3, 5, 4)
    torch.testing.assert_close(H[1, 2], torch.relu(W[1] @ A[1, 2] + b[1]))
    torch.testing.assert_close(L.encode(W, A, bias=b, activation="srelu")[0, 0], L.srelu(W[0] @ A[0, 0], b[0]))
    Wp = clbook.randn(3, 4, 4, generator=gen)
    torch.testing.assert_close(L.predict(Wp, H)[2, 1], Wp[2] @ H[2, 1])


def test_cl_inner_against_loop_and_temperature_convention():
    gen = clbook.generator(1)
    u, v = clbook.randn(6, 4, generator=gen), clbook.randn(6, 4, generator=gen)
    tau = 0.7                                        # the paper's multiplier; the book's temperature is 1 / tau
    loop = 0.0
    for k in range(6):
        logits = [tau * float(u[k] @ v[j]) for j in range(6)]
        loop += -logits[k] + math.log(sum(math.exp(x) for x in logits))
    assert float(L.cl_inner(u, v, temperature=1 / tau)) == pytest.approx(loop / 6, rel=1e-12)
    assert float(L.cl_inner(u, v, temperature=tau)) != pytest.approx(loop / 6, rel=1e-3)


def test_stop_gradient():
    gen = clbook.generator(2)
    u = clbook.randn(5, 3, generator=gen).requires_grad_()
    v = clbook.randn(5, 3, generator=gen).requires_grad_()
    L.ncl_inner(u, v).backward()
    assert v.grad is None and u.grad is not None


@pytest.mark.parametrize("scheme", ["independent", "dependent"])
def test_linear_population_matches_monte_carlo(scheme):
    gen = clbook.generator(3)
    data = sc.sample(200_000, p=5, d=3, sparsity=0.1, noise=0.3, generator=gen)
    Wo = clbook.randn(4, 3, generator=gen) @ data.M.T
    Wt = Wo + 0.3 * clbook.randn(4, 5, generator=gen)
    a1, a2 = sc.views(data.X, keep=0.6, generator=gen, scheme=scheme)
    per = (L.encode(Wo, a1, activation="linear") * L.encode(Wt, a2, activation="linear")).sum(-1)
    mc, se = float(2 - 2 * per.mean()), float(2 * per.std() / math.sqrt(len(per)))
    Sigma = sc.second_moment(data.M, sparsity=0.1, noise=0.3)
    exact = float(dual.linear_population(Wo, Wt, Sigma, keep=0.6, scheme=scheme))
    assert abs(mc - exact) < 4 * se
    wrong = float(dual.linear_population(Wo, Wt, sc.second_moment(data.M, sparsity=0.1, noise=0.3, nonzero=False),
                                         keep=0.6, scheme=scheme))
    assert abs(mc - wrong) > 4 * se, "the unconditioned moment must be detectably wrong"


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.05, 1.0))
def test_theorem_1a_bound_and_equality(seed, keep):
    gen = clbook.generator(seed)
    W = linalg.unit_columns(clbook.randn(4, 4, generator=gen))
    assert float(L.ncl_onehot(W, keep=keep)) >= 2 - 2 * keep**2 - 1e-12
    assert float(L.ncl_onehot(W.abs(), keep=keep)) == pytest.approx(2 - 2 * keep**2, abs=1e-12)


def test_ncl_onehot_against_monte_carlo():
    gen = clbook.generator(9)
    W = linalg.unit_columns(clbook.randn(4, 4, generator=gen))
    data = sc.sample(200_000, p=4, d=4, sparsity=0.0, noise=0.0, generator=gen, latent="one_hot", M=torch.eye(4))
    a1, a2 = sc.views(data.X, keep=0.6, generator=gen)
    per = (L.encode(W, a1) * L.encode(W, a2)).sum(-1)
    assert abs(float(2 - 2 * per.mean()) - float(L.ncl_onehot(W, keep=0.6))) < 4 * 2 * float(per.std()) / math.sqrt(len(per))


def test_theorem_1a_flow_closed_form():
    W0 = clbook.randn(2, 6, 6, generator=clbook.generator(4))
    flow = L.ncl_onehot_flow(W0, keep=0.5, lr=0.5, steps=300)
    torch.testing.assert_close(flow.W, flow.closed_form, rtol=0, atol=1e-12)
    long = L.ncl_onehot_flow(W0, keep=0.5, lr=0.5, steps=3000)
    torch.testing.assert_close(long.W, long.limit, rtol=0, atol=1e-10)
    assert bool((long.losses.diff(dim=-1) <= 1e-15).all()), "the loss never increases"


def test_surrogate_exact_vs_monte_carlo_and_minimum():
    gen = clbook.generator(5)
    W = linalg.unit_columns(clbook.randn(4, 4, generator=gen))
    exact = float(L.cl_surrogate(W, keep=0.5, temperature=0.5))
    mc, se = L.cl_surrogate_mc(W, keep=0.5, temperature=0.5, samples=100_000, generator=gen)
    assert abs(exact - mc) < 4 * se
    P = torch.eye(5)[:, torch.tensor([2, 0, 4, 1, 3])]
    T = 1 / 3
    assert float(L.cl_surrogate(P, keep=0.5, temperature=T)) == pytest.approx(L.cl_surrogate_min(5, keep=0.5, temperature=T), abs=1e-12)
    Ws = linalg.unit_columns(clbook.randn(50, 5, 5, generator=gen))
    assert float((L.cl_surrogate(Ws, keep=0.5, temperature=T) - L.cl_surrogate_min(5, keep=0.5, temperature=T)).min()) > 0.1


def test_dead_column_gap():
    W = torch.eye(4)
    W[:, 2] = -torch.tensor([0.6, 0.0, 0.0, 0.8])
    gap = float(L.cl_surrogate(W, keep=0.7, temperature=0.5)) - L.cl_surrogate_min(4, keep=0.7, temperature=0.5)
    assert gap == pytest.approx(L.dead_column_gap(4, keep=0.7, temperature=0.5), abs=1e-12)


def test_descent_reaches_a_permutation_from_some_start():
    W0 = clbook.rand(4, 4, 4, generator=clbook.generator(6))
    run = L.cl_surrogate_descent(W0, keep=0.5, temperature=0.2, lr=0.2, steps=600)
    assert run.losses.shape == (4, 601)
    best = int(run.gap.argmin())
    assert float(run.gap[best]) < 1e-7 and float(L.nearest_permutation_error(run.W[best])) < 1e-3


def test_large_batch_closed_forms():
    d, keep = 6, 0.5
    assert L.large_batch_threshold(d, keep=keep) == pytest.approx(1 / math.log(11))
    for T in (1.0, 0.2):
        W = L.large_batch_minimiser(d, keep=keep, temperature=T, permutation=[1, 0, 2, 3, 5, 4])
        expected = L.large_batch_min(d, keep=keep, temperature=T)
        assert float(L.cl_large_batch(W, keep=keep, temperature=T)) == pytest.approx(expected, abs=1e-12)
        Ws = linalg.unit_columns(clbook.randn(200, d, d, generator=clbook.generator(7)))
        assert float(L.cl_large_batch(Ws, keep=keep, temperature=T).min()) > L.large_batch_min(d, keep=keep, temperature=T)
    assert L.large_batch_min(d, keep=keep, temperature=0.2) < float(L.cl_large_batch(torch.eye(d), keep=keep, temperature=0.2)) - 0.3
    assert math.isfinite(L.large_batch_min(d, keep=keep, temperature=1e-4)), "no overflow at small temperatures"


def test_finite_batch_tends_to_the_limit():
    W = L.large_batch_minimiser(4, keep=0.5, temperature=0.3)
    per = L.cl_batch_mc(W, keep=0.5, temperature=0.3, negatives=4096, anchors=4000, generator=clbook.generator(8))
    limit = float(L.cl_large_batch(W, keep=0.5, temperature=0.3))
    assert abs(float(per.mean()) - limit) < 4 * float(per.std()) / math.sqrt(len(per)) + 0.01


def test_bad_arguments():
    with pytest.raises(ValueError, match="activation must be one of"):
        L.encode(torch.zeros(2, 3), torch.zeros(4, 3), activation="tanh")
    with pytest.raises(ValueError, match="same p"):
        L.encode(torch.zeros(2, 3), torch.zeros(4, 5))
    with pytest.raises(ValueError, match="temperature must be > 0"):
        L.cl_surrogate(torch.eye(3), keep=0.5, temperature=0.0)
    with pytest.raises(ValueError, match="zero column"):
        L.ncl_onehot_flow(torch.zeros(3, 3), keep=0.5, lr=0.1, steps=1)
    with pytest.raises(ValueError, match="permutation must be"):
        L.large_batch_minimiser(3, keep=0.5, temperature=1.0, permutation=[0, 0, 1])
    with pytest.raises(ValueError, match="n >= 2"):
        L.cl_inner(torch.zeros(1, 3), torch.zeros(1, 3), temperature=1.0)
    with pytest.raises(ValueError, match="W and A must share dtype"):
        L.encode(torch.zeros(2, 3), torch.zeros(4, 3, dtype=torch.float32))
