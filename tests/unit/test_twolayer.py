"""clbook.dynamics.twolayer: Lemma 4 / Lemma 6 against autograd, Lemma 5 and Theorem 5 by exact enumeration, Eq. 147, 155."""
import dataclasses
import math

import pytest
import torch
from scipy.integrate import solve_ivp

import clbook
from clbook import covariance, losses
from clbook.dynamics import twolayer as tl


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0)


@pytest.fixture(scope="module")
def batch():
    g = clbook.generator(0)
    W = clbook.randn(3, 4, 5, generator=g)
    V = clbook.randn(6, 12, generator=g)
    x1 = clbook.randn(32, 3, 5, generator=g)
    x2 = x1 + 0.3 * clbook.randn(32, 3, 5, generator=g)
    alpha = losses.infonce(0.5).importance(clbook.randn(32, 3, generator=g), clbook.randn(32, 3, generator=g))
    return W, V, x1, x2, alpha


@pytest.mark.parametrize("bn", [False, True])
@pytest.mark.parametrize("activation", ["relu", "linear", "leakyrelu"])
def test_lemma4_and_lemma6_against_autograd(batch, activation, bn):
    W, V, x1, x2, alpha = batch
    Wg, Vg = W.clone().requires_grad_(), V.clone().requires_grad_()
    act = {"relu": torch.relu, "linear": lambda t: t, "leakyrelu": lambda t: torch.nn.functional.leaky_relu(t, 0.05)}[activation]
    F1, F2 = (act(torch.einsum("kmd,nkd->nkm", Wg, x)).reshape(len(x), -1) for x in (x1, x2))
    if bn:  # Def. 5 with statistics over both views: gradient through the mean, not through sigma
        both = torch.cat([F1, F2])
        mu, sd = both.mean(0), both.detach().var(0, unbiased=False).add(1e-12).sqrt()
        F1, F2 = (F1 - mu) / sd, (F2 - mu) / sd
    gW, gV = torch.autograd.grad(covariance.energy(alpha, F1 @ Vg.T, F2 @ Vg.T), (Wg, Vg))
    dV, dW = tl.lemma4_rhs(W, V, x1, x2, alpha, activation=activation, bn=bn)
    torch.testing.assert_close(dV, 0.5 * gV, rtol=1e-11, atol=1e-10)
    torch.testing.assert_close(dW, 0.5 * gW, rtol=1e-11, atol=1e-10)


def test_gated_inputs_reproduce_the_hidden_units(batch):
    W, _, x1, _, _ = batch
    g = tl.gated_inputs(W, x1, "relu")
    torch.testing.assert_close(torch.einsum("nkmd,kmd->nkm", g, W), torch.relu(torch.einsum("kmd,nkd->nkm", W, x1)))


@pytest.mark.parametrize("classes", [2, 3])
def test_lemma5_closed_form_of_the_variance(classes):
    model = tl.make_latent_tokens(num_fields=3, num_tokens=4, num_classes=classes, seed=classes)
    assert abs(float(model.weights.sum()) - 1) < 1e-12 and len(model.weights) == classes * 4 ** 3
    T = tl.population_terms(model, clbook.randn(3, 4, generator=clbook.generator(1)))
    rhs = torch.block_diag(*T.L) + sum(p * (1 - p) ** 2 * torch.outer(T.delta[c], T.delta[c])
                                       for c, p in enumerate(model.class_probs))
    assert float((T.variance - rhs).abs().max()) < 1e-14


def test_theorem5_equals_lemma4_with_rank_one_top_layer():
    model = tl.make_latent_tokens(num_fields=4, num_tokens=3, class_probs=[0.6, 0.4], seed=3)
    W = clbook.randn(4, 3, generator=clbook.generator(2))
    T = tl.population_terms(model, W)
    p0, p1 = model.class_probs
    assert float((T.f_variance - (torch.diag(T.d) + p0 * p1 * torch.outer(T.b, T.b))).abs().max()) < 1e-14
    assert float((T.s - T.b / (T.lam - T.d) / T.Z).abs().max()) < 1e-12
    assert abs(1 - float(p0 * p1 * torch.sum(T.b ** 2 / (T.lam - T.d)))) < 1e-12, "secular equation"
    d = 3
    for k in range(4):
        lemma4 = sum(T.s[k] * T.s[j] * T.variance[k * d:(k + 1) * d, j * d:(j + 1) * d] @ W[j] for j in range(4))
        delta = T.delta[0][k * d:(k + 1) * d]
        thm5 = T.s[k] ** 2 * T.A[k] @ W[k] + T.delta_k[k] * torch.outer(delta, delta) @ W[k]
        assert float((lemma4 - thm5).abs().max()) < 1e-14
    assert bool((T.delta_k >= 0).all())
    corrected = (1 - p0 * p1 * T.b ** 2 / (T.lam - T.d)) / (T.Z ** 2 * (T.lam - T.d))
    assert float((corrected - T.delta_k).abs().max()) < 1e-12


def test_blowup_closed_form_against_ode():
    sol = solve_ivp(lambda t, y: (y + 0.7) * y, (0, 1.5), [0.3], rtol=1e-12, atol=1e-12)
    assert abs(sol.y[0, -1] - tl.blowup_closed_form(0.3, 0.7, 1.5)) < 1e-8
    assert abs(tl.blowup_time(0.3, 0.7) - math.log(1 + 0.7 / 0.3) / 0.7) < 1e-15
    with pytest.raises(ValueError, match="blow-up"):
        tl.blowup_closed_form(0.3, 0.7, 2.0)


@pytest.mark.parametrize("d, eps", [(5, -0.5), (5, 0.0), (5, 0.5), (20, 0.1), (5, 1.5)])
def test_win_probability_monte_carlo(d, eps):
    p = tl.win_probability(d, eps)
    n = 200_000
    assert abs(tl.win_probability_mc(d, eps, samples=n) - p) < 4 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_basin_grows_with_modulation():
    fractions = [tl.sphere_basin_fraction(5, c, samples=2000, steps=300) for c in (0, 0.5, 1.0)]
    assert fractions[0] < fractions[1] < fractions[2]


def test_dirichlet_draws_are_seeded_and_have_the_right_mean():
    a = tl.make_latent_tokens(num_fields=2, num_tokens=3, seed=4)
    b = tl.make_latent_tokens(num_fields=2, num_tokens=3, seed=4)
    assert torch.equal(a.token_probs, b.token_probs)
    assert torch.allclose(a.token_probs.sum(-1), torch.ones(2, 2, dtype=torch.float64), atol=1e-14)
    for conc in (0.3, 1.0, 4.0):  # Gamma by Marsaglia-Tsang (with the boost below 1): Dirichlet means 1/d
        g = tl._gamma(conc, 40_000, clbook.generator(9))
        assert abs(float(g.mean()) - conc) < 4 * (conc / 40_000) ** 0.5 and abs(float(g.var()) - conc) < 0.05 * conc + 0.01


def test_rescaled_model_by_replace():
    model = tl.make_latent_tokens(num_fields=2, num_tokens=3, seed=1)
    scaled = dataclasses.replace(model, magnitudes=torch.tensor([2.0, 3.0], dtype=torch.float64))
    assert torch.equal(scaled.inputs().abs().sum(-1), torch.tensor([2.0, 3.0], dtype=torch.float64).expand(len(model.weights), 2))


def test_draws_are_reproducible():
    assert tl.sphere_basin_fraction(4, 0.5, samples=300, steps=50, seed=3) == tl.sphere_basin_fraction(4, 0.5, samples=300, steps=50,
                                                                                                        seed=3)
    assert tl.win_probability_mc(5, 0.2, samples=1000, seed=1) == tl.win_probability_mc(5, 0.2, samples=1000, seed=1)


@pytest.mark.parametrize("call, match", [
    (lambda: tl.make_latent_tokens(num_tokens=8, num_fields=8), "too many"),
    (lambda: tl.make_latent_tokens(class_probs=[0.5, 0.6]), "class_probs"),
    (lambda: tl.make_latent_tokens(magnitudes=[1.0, -1.0, 1.0]), "magnitudes"),
    (lambda: tl.make_latent_tokens(concentration=0.0), "concentration"),
    (lambda: tl.population_terms(tl.make_latent_tokens(), torch.zeros(2, 2)), "W must have shape"),
    (lambda: tl.population_terms("model", torch.zeros(3, 4)), "model"),
    (lambda: tl.lemma4_rhs(torch.zeros(2, 3, 4), torch.zeros(5, 7), torch.zeros(8, 2, 4), torch.zeros(8, 2, 4),
                           torch.ones(8, 8)), "V"),
    (lambda: tl.blowup_closed_form(-0.5, 0.5, 1.0), "y0"),
    (lambda: tl.sphere_basin_fraction(3, 0.1, dt=0.0), "dt"),
    (lambda: tl.win_probability(5, -1.5), "eps"),
    (lambda: tl.sphere_basin_fraction(1, 0.1), "dim"),
    (lambda: tl.gated_inputs(torch.zeros(2, 3, 4), torch.zeros(5, 2, 3)), "need W"),
])
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
