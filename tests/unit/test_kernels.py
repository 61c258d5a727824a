"""Tests of clbook.kernels: Gaussian-α feature expansion, adjusted densities, the Lemma 2 limit."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import clbook
from clbook import kernels

F64 = torch.float64


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0)


def test_gaussian_alpha_loop_oracle():
    g = clbook.randn(7, 3, generator=clbook.generator(0))
    A = kernels.gaussian_alpha(g, temperature=0.3)
    for i in range(7):
        for j in range(7):
            want = math.exp(-float(((g[i] - g[j]) ** 2).sum()) / 0.6)
            assert abs(float(A[i, j]) - want) < 1e-14


def test_multi_indices_lexicographic():
    idx = kernels.multi_indices(2, 3)
    assert idx.shape == (9, 2)
    assert idx[0].tolist() == [0, 0] and idx[1].tolist() == [0, 1] and idx[-1].tolist() == [2, 2]


def test_log_features_closed_form_1d():
    y = torch.tensor([0.0, 0.5, 2.0], dtype=F64)
    logphi = kernels.gaussian_log_features(y, temperature=0.5, terms=4, shift=torch.zeros(1, dtype=F64))
    for i, yi in enumerate(y.tolist()):
        for lval in range(4):
            want = math.exp(-yi**2 / 1.0) * yi**lval / (0.5 ** (lval / 2) * math.sqrt(math.factorial(lval)))
            assert abs(math.exp(float(logphi[i, lval])) - want) < 1e-14
    assert torch.isneginf(logphi[0, 1:]).all()   # y = 0: log phi = -inf, never NaN


def test_truncation_error_is_poisson_tail():
    grid = torch.linspace(0, 2, 41, dtype=F64)
    exact = kernels.gaussian_alpha(grid, temperature=0.5)
    for L in (3, 10, 20):
        lp = kernels.gaussian_log_features(grid, temperature=0.5, terms=L, shift=torch.zeros(1, dtype=F64))
        err = float((kernels.log_kernel_from_features(lp, lp).exp() - exact).abs().max())
        assert err == pytest.approx(stats.poisson.sf(L - 1, 8.0), rel=1e-9)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), tau=st.floats(0.3, 3.0), dim=st.integers(1, 3))
def test_expansion_reproduces_kernel(seed, tau, dim):
    g = clbook.randn(6, dim, generator=clbook.generator(seed))
    lp = kernels.gaussian_log_features(g, temperature=tau, terms={1: 120, 2: 60, 3: 40}[dim])
    assert bool((lp.exp() >= 0).all())
    K = kernels.log_kernel_from_features(lp, lp).exp()
    y_max2 = (g - g.min(dim=0).values).pow(2).max(dim=0).values / tau
    bound = sum(stats.poisson.sf({1: 119, 2: 59, 3: 39}[dim], float(v)) for v in y_max2)
    assert float((K - kernels.gaussian_alpha(g, temperature=tau)).abs().max()) <= bound + 1e-12


def test_log_space_survives_large_arguments():
    g = torch.tensor([0.0, 30.0, 30.5], dtype=F64)           # y^2 / 2tau = 4500: exp underflows
    lp = kernels.gaussian_log_features(g, temperature=0.1, terms=12000, shift=torch.zeros(1, dtype=F64))
    logK = kernels.log_kernel_from_features(lp[1:], lp[1:])
    assert float(logK[0, 1]) == pytest.approx(-0.25 / 0.2, rel=1e-9)


def test_adjusted_densities_and_identities():
    gen = clbook.generator(3)
    g = torch.relu(clbook.randn(8, generator=gen))
    p = torch.softmax(clbook.randn(8, generator=gen), 0)
    phi = kernels.gaussian_features(g, temperature=0.7, terms=60, shift=torch.zeros(1, dtype=F64))
    z, pt = kernels.adjusted_densities(phi, p)
    K = kernels.gaussian_alpha(g, temperature=0.7)
    assert torch.allclose(pt[z > 0].sum(1), torch.ones(int((z > 0).sum()), dtype=F64), atol=1e-12)
    assert float(z.pow(2).sum()) == pytest.approx(float(p @ K @ p), rel=1e-12)
    gbar = clbook.randn(8, 2, generator=gen)
    assert torch.allclose(kernels.variance_limit(gbar, p, phi), kernels.pairwise_limit(gbar, p, K), atol=1e-13)


def test_uniform_limit_is_weighted_covariance():
    gen = clbook.generator(4)
    x = clbook.randn(6, 3, generator=gen)
    p = torch.softmax(clbook.randn(6, generator=gen), 0)
    lim = kernels.variance_limit(x, p, kernels.uniform_features(6))
    assert torch.allclose(lim, torch.cov(x.T, correction=0, aweights=p), atol=1e-13)
    assert bool((torch.linalg.eigvalsh(lim) > -1e-14).all())


def test_pairwise_limit_loop_oracle():
    gen = clbook.generator(5)
    g = clbook.randn(6, 2, generator=gen)
    p = torch.softmax(clbook.randn(6, generator=gen), 0)
    K = kernels.gaussian_alpha(clbook.randn(6, generator=gen), temperature=0.4)
    want = sum(0.5 * p[i] * p[j] * K[i, j] * torch.outer(g[i] - g[j], g[i] - g[j]) for i in range(6) for j in range(6))
    assert torch.allclose(kernels.pairwise_limit(g, p, K), want, atol=1e-14)


def test_uniform_alpha_follows_setup_and_converts_integers():
    assert kernels.uniform_alpha(3).dtype == F64 and kernels.uniform_features(3).shape == (3, 1)
    A = kernels.gaussian_alpha(torch.tensor([0, 1, 2]), temperature=1.0)   # integers are converted on purpose
    assert A.dtype == F64 and float(A[0, 1]) == pytest.approx(math.exp(-0.5))


def test_bad_inputs():
    g = torch.ones(3, 1, dtype=F64)
    with pytest.raises(ValueError, match="temperature"):
        kernels.gaussian_alpha(g, temperature=0.0)
    with pytest.raises(ValueError, match="shift"):
        kernels.gaussian_log_features(g, temperature=1.0, terms=3, shift=torch.tensor([2.0], dtype=F64))
    with pytest.raises(ValueError, match="terms"):
        kernels.gaussian_log_features(g, temperature=1.0, terms=0)
    with pytest.raises(ValueError, match="weights"):
        kernels.adjusted_densities(torch.ones(3, 2, dtype=F64), torch.tensor([0.5, 0.6, 0.1], dtype=F64))
    with pytest.raises(ValueError, match="non-negative"):
        kernels.adjusted_densities(-torch.ones(3, 2, dtype=F64), torch.full((3,), 1 / 3, dtype=F64))
    with pytest.raises(ValueError, match="kernel"):
        kernels.pairwise_limit(g, torch.full((3,), 1 / 3, dtype=F64), torch.ones(2, 2, dtype=F64))
    with pytest.raises(TypeError, match="g"):
        kernels.gaussian_alpha("g", temperature=1.0)
    with pytest.raises(ValueError, match="g"):
        kernels.gaussian_alpha(torch.tensor([0.0, float("nan")], dtype=F64), temperature=1.0)
    with pytest.raises(ValueError, match="shift"):
        kernels.gaussian_log_features(torch.ones(3, 2, dtype=F64), temperature=1.0, terms=3, shift=torch.zeros(3, dtype=F64))
    with pytest.raises(ValueError, match="gbar"):
        kernels.pairwise_limit(torch.ones(1, 2, dtype=F64), torch.ones(1, dtype=F64), torch.ones(1, 1, dtype=F64))
    with pytest.raises(ValueError, match="features"):
        kernels.variance_limit(torch.ones(3, 1, dtype=F64), torch.full((3,), 1 / 3, dtype=F64), torch.ones(4, 2, dtype=F64))
    with pytest.raises(ValueError, match="log_a"):
        kernels.log_kernel_from_features(torch.full((2, 2), float("nan"), dtype=F64), torch.zeros(2, 2, dtype=F64))


def _eq3_by_loop(alpha, a1, a2):
    """Tian (2023) Eq. 3 for scalar features, as a double loop over the pairs."""
    n = len(a1)
    total = sum(float(alpha[i, j]) * ((float(a1[i]) - float(a1[j])) * (float(a1[i]) - float(a1[j]))
                                      - (float(a1[i]) - float(a2[i])) ** 2)
                for i in range(n) for j in range(n))
    return total / (2 * n * n)


def test_relu_batch_covariances_loop_oracle():
    atoms = torch.tensor([[1.0, 0.2], [0.3, 1.1], [-0.8, 0.5]], dtype=F64)
    probs, w = torch.tensor([0.5, 0.3, 0.2], dtype=F64), torch.tensor([0.8, 0.6], dtype=F64)
    out = kernels.relu_batch_covariances(5, 2, atoms=atoms, weights=probs, w=w, noise=0.3, temperature=0.5,
                                         generator=clbook.generator(4))
    assert out.shape == (2, 2) and out.dtype == F64
    gen = clbook.generator(4)   # the documented order of the draws: atoms, view 1, view 2, per batch
    for row in out:
        x0 = atoms[torch.multinomial(probs, 5, replacement=True, generator=gen)]
        v1 = torch.relu((x0 + 0.3 * clbook.randn(5, 2, generator=gen)) @ w)
        v2 = torch.relu((x0 + 0.3 * clbook.randn(5, 2, generator=gen)) @ w)
        g0 = torch.relu(x0 @ w)
        A = torch.tensor([[math.exp(-(float(a) - float(b)) ** 2 / (2 * 0.5)) for b in g0] for a in g0], dtype=F64)
        off = A - torch.diag(torch.diagonal(A))
        assert float(row[0]) == pytest.approx(_eq3_by_loop(off, v1, v2), abs=1e-14)
        assert float(row[1]) == pytest.approx(_eq3_by_loop(A, v1, v2), abs=1e-14)


def test_relu_batch_covariances_without_noise_the_diagonal_does_not_enter():
    atoms = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=F64)
    out = kernels.relu_batch_covariances(8, 3, atoms=atoms, weights=[0.5, 0.5], w=[1.0, 0.5], noise=0.0,
                                         temperature=1.0, generator=clbook.generator(0))
    torch.testing.assert_close(out[:, 0], out[:, 1], atol=1e-15, rtol=0)
    assert bool((out >= 0).all())


def test_relu_batch_covariances_bad_inputs():
    ok = {"atoms": torch.eye(2, dtype=F64), "weights": [0.5, 0.5], "w": [1.0, 1.0], "noise": 0.1, "temperature": 1.0,
          "generator": clbook.generator(0)}
    for name, value, error in (("weights", [0.5, 0.6], ValueError), ("w", [1.0], ValueError),
                               ("noise", -0.1, ValueError), ("temperature", 0.0, ValueError),
                               ("generator", 0, TypeError), ("atoms", torch.ones(2, dtype=F64), ValueError)):
        with pytest.raises(error, match=name):
            kernels.relu_batch_covariances(4, 2, **{**ok, name: value})
    with pytest.raises(ValueError, match="n"):
        kernels.relu_batch_covariances(1, 2, **ok)
