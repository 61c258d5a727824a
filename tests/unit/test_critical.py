"""Tests for clbook.dynamics.critical (Chapters 7-8)."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from clbook.dynamics import critical, onelayer


def _mc_A(w, mix, n, seed):
    gen = torch.Generator().manual_seed(seed)
    comp = torch.multinomial(mix.weights, n, replacement=True, generator=gen)
    x = mix.means[comp] + mix.sigma * torch.randn(n, mix.means.shape[1], generator=gen, dtype=torch.float64)
    return torch.cov((x * (x @ w > 0).double().unsqueeze(1)).T, correction=0)


def test_mixture_covariance_matches_monte_carlo_3d():
    mix = critical.Mixture(torch.eye(3, dtype=torch.float64), torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64), 0.4)
    w = torch.tensor([0.5, 0.7, -0.2], dtype=torch.float64)
    A = critical.mixture_gated_covariance(w, mix)
    assert torch.allclose(A, _mc_A(w / w.norm(), mix, 300_000, 0), atol=4e-3)
    assert torch.allclose(A, A.T)


def test_linear_activation_is_covariance():
    mix = critical.three_clusters(0.3)
    A = critical.mixture_gated_covariance(torch.tensor([1.0, 0.0], dtype=torch.float64), mix, activation="linear")
    mean = mix.weights @ mix.means
    C = torch.einsum("k,ki,kj->ij", mix.weights, mix.means, mix.means) + 0.09 * torch.eye(2, dtype=torch.float64) - torch.outer(mean, mean)
    assert torch.allclose(A, C, atol=1e-14)


def test_sign_proposition_in_3d():
    """J = P(A - lam)P - E[h] B on the tangent space (Chapter 7 proposition), checked by autograd in 3-D."""
    mix = critical.Mixture(torch.eye(3, dtype=torch.float64), torch.tensor([0.4, 0.3, 0.3], dtype=torch.float64), 0.35)
    A_fn = lambda v: critical.mixture_gated_covariance(v, mix)  # noqa: E731
    w = critical.find_critical(mix.means[0], A_fn)
    rep = critical.stability_report(w, A_fn)
    assert rep.residual < 1e-12 and rep.is_lme
    Q = critical.tangent_basis(w)
    B = critical.mixture_plane_moment(w, mix)
    J = Q.T @ (A_fn(w) - rep.lam * torch.eye(3, dtype=torch.float64)) @ Q - critical.mixture_mean_output(w, mix) * Q.T @ B @ Q
    assert sorted(torch.linalg.eigvalsh(J).tolist()) == pytest.approx(rep.jac_eigs, abs=1e-10)
    assert rep.numerical_range_max <= rep.thm1_bound + 1e-12
    assert rep.numerical_range_max <= -rep.gap + 1e-12


def test_z0_and_gaussian_factor_by_quadrature():
    mix = critical.three_clusters(0.3)
    w = torch.tensor([math.cos(0.3), math.sin(0.3)], dtype=torch.float64)
    nodes, weights = critical.mixture_grid(mix, points=241)
    g = torch.clamp(nodes @ w, min=0)
    for tau in (0.2, 1.0):
        z0 = float(weights @ torch.exp(-g * g / (2 * tau)))
        assert float(critical.mixture_z0(w, mix, temperature=tau)) == pytest.approx(z0, abs=1e-3)
        assert float(critical.mixture_gaussian_factor(w, mix, temperature=tau)) == pytest.approx(
            float(weights @ (g * torch.exp(-g * g / (2 * tau)))), abs=1e-3)
    assert float(critical.mixture_mean_output(w, mix)) == pytest.approx(float(weights @ g), abs=1e-3)


def test_gaussian_alpha_covariance_pairwise_oracle():
    """Feature form = pairwise form (1/2) E K (x~ - y~)(x~ - y~)^T on a small weighted set."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(40, 2, generator=gen, dtype=torch.float64)
    p = torch.rand(40, generator=gen, dtype=torch.float64)
    p = p / p.sum()
    w, wa, tau = torch.tensor([0.6, 0.8], dtype=torch.float64), torch.tensor([1.0, 0.2], dtype=torch.float64), 0.5
    A = critical.gaussian_alpha_covariance(w, wa, x, p, temperature=tau, terms=80)
    g = torch.clamp(x @ (wa / wa.norm()), min=0)
    K = torch.exp(-(g[:, None] - g[None, :]) ** 2 / (2 * tau))
    xt = x * (x @ w > 0).double().unsqueeze(1)
    diff = xt[:, None, :] - xt[None, :, :]
    ref = 0.5 * torch.einsum("i,j,ij,ija,ijb->ab", p, p, K, diff, diff)
    assert torch.allclose(A, ref, atol=1e-12)


def test_power_iteration_converges_and_detects_cycle():
    A = torch.diag(torch.tensor([3.0, 1.0, 0.5], dtype=torch.float64))
    res = critical.power_iteration(torch.tensor([0.3, 1.0, 1.0], dtype=torch.float64), lambda v: A, steps=60)
    assert abs(float(res.W[-1][0])) == pytest.approx(1.0, abs=1e-12) and res.cycle == 0
    R = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=torch.float64)  # a map with a period-4 orbit: A(w) w = R w
    flip = critical.power_iteration(torch.tensor([1.0, 0.0], dtype=torch.float64), lambda v: R, steps=20)
    assert flip.cycle == 4


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 6))
def test_lemma7_and_8_hold(seed, d):
    gen = torch.Generator().manual_seed(seed)
    G = torch.randn(20, d, d, generator=gen, dtype=torch.float64)
    A = G @ G.transpose(1, 2) + 1e-3 * torch.eye(d, dtype=torch.float64)
    w = torch.randn(20, d, generator=gen, dtype=torch.float64)
    w = w / w.norm(dim=1, keepdim=True)
    t = critical.lemma7_terms(A, w)
    ok = t["c"] > 1e-3
    assert bool(((1 - t["d"]) <= t["mu"] * (1 - t["c"]) + 1e-12)[ok].all())
    assert bool((t["step"] <= t["step_bound"] + 1e-12)[ok].all())


def test_jitter_landscape_zero_is_fig8_and_full_group_is_flat():
    angles = torch.tensor([-0.8, -0.5, -0.4, -1 / 6, 0.0, 0.2, 0.4, 0.6, 0.8], dtype=torch.float64) * math.pi
    theta = torch.linspace(-math.pi, math.pi, 361, dtype=torch.float64)[:-1]
    pts = torch.stack([torch.cos(angles), torch.sin(angles)], 1)
    assert torch.allclose(critical.jitter_landscape(theta, angles, jitter=0.0), onelayer.circle_landscape(theta, pts), atol=1e-14)
    flat = critical.jitter_landscape(theta, angles, jitter=math.pi)
    assert float(flat.max() - flat.min()) < 1e-14
    # closed form = fine quadrature over t
    t = torch.linspace(-0.5, 0.5, 20001, dtype=torch.float64)
    b = torch.clamp(torch.cos(theta[:5, None, None] - angles[None, :, None] - t), min=0)
    bq = torch.trapezoid(b, t, dim=-1) / 1.0
    assert torch.allclose(critical.jitter_landscape(theta[:5], angles, jitter=0.5), 0.5 * bq.var(dim=1, unbiased=False), atol=1e-9)
    c = critical.cyclic_landscape(theta, angles, order=4)
    assert torch.allclose(c, torch.roll(c, 90), atol=1e-15)


def test_bad_inputs():
    mix = critical.three_clusters(0.3)
    with pytest.raises(ValueError):
        critical.three_clusters(-1.0)
    with pytest.raises(ValueError):
        critical.mixture_gated_covariance(torch.zeros(2, dtype=torch.float64), mix)
    with pytest.raises(ValueError):
        critical.mixture_gated_covariance(torch.ones(2, dtype=torch.float64), mix, activation="tanh")
    with pytest.raises(TypeError):
        critical.mixture_plane_moment(torch.ones(2, dtype=torch.float64), "mix")
    with pytest.raises(ValueError):
        critical.jitter_landscape(torch.zeros(3, dtype=torch.float64), torch.zeros(2, dtype=torch.float64), jitter=4.0)
    with pytest.raises(ValueError):
        critical.power_iteration(torch.ones(2, dtype=torch.float64), lambda v: torch.eye(2, dtype=torch.float64), steps=0)


def test_lemma_terms_along_smooth_model():
    mix = critical.three_clusters(0.3)
    A_fn = lambda v: critical.mixture_gated_covariance(v, mix)  # noqa: E731
    w0 = torch.tensor([math.cos(0.7), math.sin(0.7)], dtype=torch.float64)
    run = critical.power_iteration(w0, A_fn, steps=10)
    t = critical.lemma_terms_along(run.W, A_fn)
    live = (1 - t["c"]) > 1e-9
    assert bool(((1 - t["d"]) <= t["mu"] * (1 - t["c"]) + 1e-12)[live].all())
    assert bool(((t["d"] - t["c_next"]).abs() <= t["nu"] * (1 - t["c"]) + 1e-12)[live].all())
    assert float(run.c[-1]) == pytest.approx(1.0, abs=1e-12)


def test_thm3_cap_and_omega():
    # (1 - sqrt(g))^2 = (1 + g)(1 - c_g): the cap equals the ball of Lemma 11 (Eq. 103)
    c0, g = 0.97, 0.5
    radius2 = 2 * (1 + g) * (1 - c0) / (1 - math.sqrt(g)) ** 2
    assert critical.thm3_cap(c0, g) == pytest.approx(1 - radius2 / 2, abs=1e-14)
    mix = critical.three_clusters(0.3)
    A_fn = lambda v: critical.mixture_gated_covariance(v, mix)  # noqa: E731
    near = critical.omega_at(torch.tensor([math.cos(0.01), math.sin(0.01)], dtype=torch.float64), A_fn)
    assert 0 < near < 1
    with pytest.raises(ValueError):
        critical.thm3_cap(0.5, 1.5)


def test_perturbed_patterns_are_haar_plus_noise():
    import clbook
    from clbook.linalg import haar_orthonormal, stiefel_error

    U0 = critical.perturbed_patterns(6, 0.0, generator=clbook.generator(3))
    assert stiefel_error(U0) < 1e-13
    assert torch.allclose(U0, haar_orthonormal(6, generator=clbook.generator(3), dtype=torch.float64), atol=1e-15)
    U = critical.perturbed_patterns(6, 0.3, generator=clbook.generator(3))
    assert torch.allclose(U.norm(dim=0), torch.ones(6, dtype=U.dtype), atol=1e-14)
    assert stiefel_error(U) > 1e-3


def test_perturb_and_return_is_seeded_and_contracts():
    import clbook

    mix = critical.three_clusters(0.3)
    A_fn = lambda v: critical.mixture_gated_covariance(v, mix)  # noqa: E731
    w = critical.find_critical(mix.means[0], A_fn)
    a = critical.perturb_and_return(w, A_fn, eps=0.05, directions=3, generator=clbook.generator(1), step=2.0, steps=30)
    b = critical.perturb_and_return(w, A_fn, eps=0.05, directions=3, generator=clbook.generator(1), step=2.0, steps=30)
    assert torch.equal(a, b) and float(a.max()) < 1e-3


@pytest.mark.parametrize("call, name", [
    (lambda: critical.three_clusters(0.3, weights=(0.5, 0.5)), "weights"),
    (lambda: critical.three_clusters(0.3, weights=(0.5, -0.5, 1.0)), "weights"),
    (lambda: critical.mixture_gated_covariance(torch.ones(3, dtype=torch.float64), critical.three_clusters(0.3)), "w"),
    (lambda: critical.stability_report(torch.ones(2, dtype=torch.float64), "A"), "A_fn"),
    (lambda: critical.stability_report(torch.ones(2, dtype=torch.float64), lambda v: torch.eye(3, dtype=torch.float64)), "A_fn"),
    (lambda: critical.tangent_basis(torch.ones(1, dtype=torch.float64)), "w"),
    (lambda: critical.perturb_and_return(torch.ones(2, dtype=torch.float64), lambda v: torch.eye(2, dtype=torch.float64), eps=1.5,
                                         directions=1, generator=torch.Generator()), "eps"),
    (lambda: critical.thm3_cap(0.5, 1.0), "gamma"),
    (lambda: critical.lemma7_terms(torch.eye(2, dtype=torch.float64)[None], torch.ones(1, 3, dtype=torch.float64)), "w"),
    (lambda: critical.gaussian_alpha_covariance(torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64),
                                                torch.ones(4, 2, dtype=torch.float64), torch.ones(3, dtype=torch.float64),
                                                temperature=1.0), "weights"),
    (lambda: critical.lemma_terms_along(torch.ones(1, 2, dtype=torch.float64), lambda v: torch.eye(2, dtype=torch.float64)), "W"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_mixture_polar_grid_mass_and_gated_covariance():
    """The polar rule, cut at the gate, reproduces the mass and the closed-form A(w) of the mixture."""
    mix = critical.three_clusters(0.3)
    nodes, weights = critical.mixture_polar_grid(mix, theta0=0.0, cuts=[-math.pi, math.pi], radius=4.0)
    assert nodes.shape == (48 * 48, 2) and weights.shape == (48 * 48,)
    assert float(weights.sum()) == pytest.approx(1.0, abs=1e-10)
    torch.testing.assert_close(weights @ nodes, mix.weights @ mix.means, atol=1e-10, rtol=0)
    theta_w = 0.4
    w = torch.tensor([math.cos(theta_w), math.sin(theta_w)], dtype=torch.float64)
    cuts = [-math.pi / 2, math.pi / 2, 3 * math.pi / 2]   # the gate w^T x = 0 falls on the cuts
    nodes, weights = critical.mixture_polar_grid(mix, theta0=theta_w, cuts=cuts, radius=4.0, points=64)
    xt = nodes * (nodes @ w > 0).to(nodes.dtype).unsqueeze(1)
    mean = weights @ xt
    A = (xt * weights.unsqueeze(1)).T @ xt - torch.outer(mean, mean)
    torch.testing.assert_close(A, critical.mixture_gated_covariance(w, mix), atol=1e-10, rtol=0)


def test_mixture_polar_grid_bad_inputs():
    mix = critical.three_clusters(0.3)
    for kwargs, name in (({"cuts": [0.0]}, "cuts"), ({"cuts": [1.0, 0.0]}, "cuts"), ({"cuts": [0.0, 7.0]}, "cuts"),
                         ({"radius": 0.0}, "radius"), ({"points": 0}, "points"), ({"theta0": float("nan")}, "theta0")):
        with pytest.raises(ValueError, match=name):
            critical.mixture_polar_grid(mix, **{"theta0": 0.0, "cuts": [0.0, 1.0], "radius": 2.0, **kwargs})
    with pytest.raises(TypeError, match="mix"):
        critical.mixture_polar_grid("mix", theta0=0.0, cuts=[0.0, 1.0], radius=2.0)
    flat = critical.Mixture(torch.zeros(1, 3, dtype=torch.float64), torch.ones(1, dtype=torch.float64), 0.5)
    with pytest.raises(ValueError, match="2-D"):
        critical.mixture_polar_grid(flat, theta0=0.0, cuts=[0.0, 1.0], radius=2.0)


def test_pattern_power_iterations_matches_its_parts():
    """The same runs as drawing U, building the latent summation model and iterating from each u_m by hand."""
    from clbook.data import latent

    U, runs = critical.pattern_power_iterations(0.05, generator=torch.Generator().manual_seed(5), d=4, steps=30)
    U0 = critical.perturbed_patterns(4, 0.05, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(U, U0, atol=0, rtol=0)
    model = latent.latent_summation(U0, 0.2)
    for m, run in enumerate(runs):
        ref = critical.power_iteration(U0[:, m], lambda v: onelayer.gated_covariance(v, model.atoms, model.probs),
                                       steps=30)
        torch.testing.assert_close(run.W, ref.W, atol=0, rtol=0)
        assert float(run.W[-1] @ U0[:, m]) > 0.99   # small eta: each run stays near its pattern
    linear = critical.pattern_power_iterations(0.05, generator=torch.Generator().manual_seed(5), d=4, steps=30,
                                               activation="linear")[1]
    C = torch.cov(model.atoms.T, correction=0, aweights=model.probs)   # linear: A(w) is the constant covariance
    for m, run in enumerate(linear):
        step = C @ U0[:, m]
        torch.testing.assert_close(run.W[1], step / step.norm(), atol=1e-12, rtol=0)


def test_pattern_power_iterations_bad_inputs():
    gen = torch.Generator().manual_seed(0)
    for kwargs, name in (({"eta": -0.1}, "eta"), ({"q": 1.5}, "q"), ({"d": 0}, "d"), ({"steps": 0}, "steps"),
                         ({"activation": "tanh"}, "activation")):
        with pytest.raises(ValueError, match=name):
            critical.pattern_power_iterations(**{"eta": 0.1, "d": 3, "steps": 2, **kwargs}, generator=gen)
    with pytest.raises(TypeError, match="generator"):
        critical.pattern_power_iterations(0.1, generator=5, d=3)
