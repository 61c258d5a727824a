"""Tests of clbook.dynamics.onelayer: gated covariance A(w), Lemma 3, projected dynamics, LMEs, Fig. 8 tools."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook import kernels
from clbook.data import latent
from clbook.dynamics import onelayer
from clbook.linalg import haar_orthonormal

F64 = torch.float64


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0)


def _data(seed=0, n=40, d=4):
    gen = clbook.generator(seed)
    X = clbook.randn(n, d, generator=gen)
    p = torch.softmax(clbook.randn(n, generator=gen), 0)
    return X, p


@pytest.mark.parametrize("name", onelayer.ACTIVATIONS)
def test_gated_covariance_loop_oracle(name):
    X, p = _data()
    w = torch.nn.functional.normalize(clbook.randn(4, generator=clbook.generator(9)), dim=0)
    xt = [X[i] * float(onelayer.activation_derivative(X[i] @ w, name)) for i in range(40)]
    mean = sum(float(p[i]) * xt[i] for i in range(40))
    want = sum(float(p[i]) * torch.outer(xt[i], xt[i]) for i in range(40)) - torch.outer(mean, mean)
    assert torch.allclose(onelayer.gated_covariance(w, X, p, activation=name), want, atol=1e-13)


@pytest.mark.parametrize("name", onelayer.ACTIVATIONS)
def test_rhs_and_energy_match_A(name):
    X, p = _data(1)
    W = torch.nn.functional.normalize(clbook.randn(5, 4, generator=clbook.generator(2)), dim=1)
    A = onelayer.gated_covariance(W, X, p, activation=name)
    Aw = torch.einsum("kde,ke->kd", A, W)
    want = Aw - (Aw * W).sum(1, keepdim=True) * W
    assert torch.allclose(onelayer.projected_rhs(W, X, p, activation=name), want, atol=1e-13)
    deg = onelayer.homogeneity_degree(name)
    assert torch.allclose(onelayer.energy(W, X, p, activation=name), 0.5 * (Aw * W).sum(1) / deg**2, atol=1e-13)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), name=st.sampled_from(onelayer.ACTIVATIONS))
def test_lemma3_gradient_factor(seed, name):
    gen = clbook.generator(seed)
    x0 = clbook.randn(30, 3, generator=gen)
    x1, x2 = x0 + 0.2 * clbook.randn(30, 3, generator=gen), x0 + 0.2 * clbook.randn(30, 3, generator=gen)
    w = torch.nn.functional.normalize(clbook.randn(3, generator=gen), dim=0)
    alpha = kernels.gaussian_alpha(onelayer.activation(x0 @ w, name), temperature=0.7)
    wg = w.clone().requires_grad_(True)
    grad = torch.autograd.grad(onelayer.energy_batch(wg, x1, x2, alpha, activation=name), wg)[0]
    Aw = onelayer.gated_covariance_batch(w, x1, x2, alpha, activation=name) @ w
    assert torch.allclose(grad, Aw / onelayer.homogeneity_degree(name), atol=1e-12)


def test_tolerance_gate_on_categorical_model():
    U = haar_orthonormal(6, generator=clbook.generator(0))
    model = latent.latent_categorical(U, torch.full((6,), 1 / 6, dtype=F64))
    for m in range(6):
        A = onelayer.gated_covariance(U[:, m], model.atoms, model.probs)
        assert torch.allclose(A, latent.eq8_prediction(model, m), atol=1e-15)
        assert onelayer.lme_report(U[:, m], model.atoms, model.probs).is_lme


def test_eq9_and_lme_threshold():
    U = haar_orthonormal(5, generator=clbook.generator(3))
    for qv, expected in ((0.3, True), (0.45, False)):
        model = latent.latent_summation(U, qv)
        A = onelayer.gated_covariance(U[:, 2], model.atoms, model.probs)
        assert torch.allclose(A, latent.eq9_prediction(model, 2), atol=1e-14)
        assert onelayer.lme_report(U[:, 2], model.atoms, model.probs).is_lme is expected


def test_projected_ascent_stays_on_sphere_and_linear_finds_pca():
    U = haar_orthonormal(4, generator=clbook.generator(4))
    model = latent.latent_summation(U, 0.2, scales=torch.tensor([1.3, 1.0, 0.9, 0.8], dtype=F64))
    W0 = clbook.randn(20, 4, generator=clbook.generator(5))
    res = onelayer.projected_ascent(W0, model.atoms, model.probs, activation="linear", step=0.5, max_steps=2000)
    assert res.stopping_reason == "converged"
    assert torch.allclose(res.W.norm(dim=1), torch.ones(20, dtype=F64), atol=1e-14)
    _, counts = onelayer.match_patterns(res.W, U, signed=False)
    assert counts.tolist() == [20, 0, 0, 0]
    relu = onelayer.projected_ascent(W0, model.atoms, model.probs, activation="relu", step=1.0, max_steps=300)
    assert int((onelayer.match_patterns(relu.W, U)[1] > 0).sum()) >= 3


def test_fig8_counts():
    ang = torch.tensor([-4 / 5, -1 / 2, -2 / 5, -1 / 6, 0, 1 / 5, 2 / 5, 3 / 5, 4 / 5], dtype=F64) * math.pi
    pts = torch.stack([torch.cos(ang), torch.sin(ang)], 1)
    th = torch.linspace(-math.pi, math.pi, 3601, dtype=F64)[:-1]
    counts = {n: len(onelayer.periodic_local_maxima(onelayer.circle_landscape(th, pts, activation=n))) for n in ("relu", "linear")}
    assert counts == {"relu": 9, "linear": 2}


def test_periodic_local_maxima_plateau_and_wrap():
    v = torch.tensor([3.0, 1.0, 2.0, 2.0, 1.0, 0.0], dtype=F64)
    assert onelayer.periodic_local_maxima(v).tolist() == [0, 2]


def test_bad_inputs():
    X, p = _data()
    with pytest.raises(ValueError, match="activation"):
        onelayer.gated_covariance(torch.ones(4, dtype=F64), X, p, activation="tanh")
    with pytest.raises(ValueError, match="atoms"):
        onelayer.gated_covariance(torch.ones(3, dtype=F64), X, p)
    with pytest.raises(ValueError, match="probs"):
        onelayer.energy(torch.ones(4, dtype=F64), X, torch.ones(40, dtype=F64))
    with pytest.raises(ValueError, match="step"):
        onelayer.projected_ascent(torch.ones(2, 4, dtype=F64), X, p, step=0.0)
    with pytest.raises(ValueError, match="W"):
        onelayer.projected_rhs(torch.ones(2, 2, 4, dtype=F64), X, p)
