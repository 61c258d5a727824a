"""clbook.dynamics.wide: tangent kernel, Lemma 2, Theorem 1 and the training of Conjecture 1 (Chapters 11, 12)."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook.dynamics import wide


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0, device="cpu")


def _rand(*shape, seed=0):
    return clbook.randn(*shape, generator=clbook.generator(seed))


TORCH = {"linear": lambda a: a, "tanh": torch.tanh, "softplus2": lambda a: 2 * (torch.nn.functional.softplus(a) - math.log(2)),
         "relu": torch.relu, "sigmoid": torch.sigmoid}


@pytest.mark.parametrize("activation", wide.ACTIVATIONS)
def test_gradients_match_autograd(activation):
    x, xp, xn = _rand(12, 3, seed=1), _rand(12, 3, seed=2), _rand(12, 3, seed=3)
    W1, W2 = _rand(7, 3, seed=4), _rand(7, 2, seed=5)
    T1, T2 = W1.clone().requires_grad_(), W2.clone().requires_grad_()
    u = lambda v: TORCH[activation](v @ T1.T) @ T2  # noqa: E731
    loss = (u(x) * (u(xn) - u(xp))).sum() / len(x)
    loss.backward()
    value, G1, G2 = wide.contrastive_gradients(W1, W2, x, xp, xn, activation)
    assert value == pytest.approx(float(loss.detach()), rel=1e-12)
    torch.testing.assert_close(G1, T1.grad, atol=1e-12, rtol=0)
    torch.testing.assert_close(G2, T2.grad, atol=1e-12, rtol=0)


def test_phi_and_dphi_against_autograd_and_theorem_1_conditions():
    a = torch.linspace(-3, 3, 13, dtype=torch.float64)  # relu's kink at 0 is on the grid: the convention is dphi(0) = 0
    for name in wide.ACTIVATIONS:
        t = a.clone().requires_grad_()
        TORCH[name](t).sum().backward()
        torch.testing.assert_close(wide.phi(name, a), TORCH[name](a))
        torch.testing.assert_close(wide.dphi(name, a), t.grad)
    zero = torch.zeros(1)
    for name in ("tanh", "softplus2"):
        assert float(wide.phi(name, zero)) == 0 and float(wide.dphi(name, zero)) == 1
    assert float(wide.phi("sigmoid", zero)) == 0.5


def test_curvature_bounds_the_second_derivative():
    a = torch.linspace(-6, 6, 2001, dtype=torch.float64)
    for name in ("tanh", "softplus2", "sigmoid"):
        t = a.clone().requires_grad_()
        (g,) = torch.autograd.grad(TORCH[name](t).sum(), t, create_graph=True)
        (second,) = torch.autograd.grad(g.sum(), t)
        assert float(second.abs().max()) == pytest.approx(wide.CURVATURE[name], rel=1e-4)


def test_tangent_kernel_against_autograd():
    h, d, z = 6, 3, 2
    W1, W2, x, x2 = _rand(h, d, seed=1), _rand(h, z, seed=2), _rand(d, seed=3), _rand(d, seed=4)

    def jac(v):
        f = lambda a, b: b.T @ torch.tanh(a @ v) / h**0.5  # noqa: E731
        ja, jb = torch.autograd.functional.jacobian(f, (W1, W2))
        return torch.cat([ja.reshape(z, -1), jb.reshape(z, -1)], dim=1)

    torch.testing.assert_close(wide.tangent_kernel(W1, W2, x, x2, activation="tanh"), jac(x) @ jac(x2).T, atol=1e-12, rtol=0)


def test_init_gap_chain_of_inequalities():
    x = 3 * torch.ones(5) / math.sqrt(5)
    for h in (10, 100, 1000):
        r = wide.init_gap(h, x, activation="tanh", reps=5, generator=clbook.generator(h))
        assert bool((r.gap <= r.eps + 1e-12).all() and (r.eps <= r.taylor + 1e-12).all() and (r.taylor <= r.bound + 1e-12).all())


def test_init_gaps_share_draws_and_lemma2_agrees():
    x = _rand(4, seed=1)
    both = wide.init_gaps(50, x, activations=("tanh", "relu"), reps=3, generator=clbook.generator(2))
    one = wide.init_gap(50, x, activation="relu", reps=3, generator=clbook.generator(2))
    torch.testing.assert_close(both["relu"].gap, one.gap)
    ratio = wide.lemma2_ratio(50, 4, reps=3, generator=clbook.generator(2))
    torch.testing.assert_close(both["tanh"].lemma2, ratio)  # the same W1 draws


def test_lemma2_ratio_is_bounded():
    r = wide.lemma2_ratio(400, 5, reps=5, generator=clbook.generator(0))
    assert r.shape == (5,) and bool((r < 1.5).all())


def test_train_nets_stays_on_manifold_and_shares_linear():
    x, xp, xn = _rand(20, 2, seed=1), _rand(20, 2, seed=2), _rand(20, 2, seed=3)
    a = wide.train_nets(x, xp, xn, h=12, activations=("tanh", "relu"), steps=20, every=5, generator=clbook.generator(4))
    b = wide.train_pair(x, xp, xn, h=12, activation="tanh", steps=20, every=5, generator=clbook.generator(4))
    torch.testing.assert_close(a["linear"][0], b.u_linear, atol=0, rtol=0)
    torch.testing.assert_close(a["tanh"][0], b.u_nonlinear, atol=0, rtol=0)
    assert a["record"].tolist() == [0, 5, 10, 15, 20]
    torch.testing.assert_close(b.gap, wide.gap(b.u_nonlinear, b.u_linear))
    assert b.losses_linear.shape == (5,)


def test_linear_network_trains_to_the_top_eigenvector():
    """With the linear network only, train_nets is the paper's projected GD: u(x) → ±v₁ᵀx (Thm 3, z = 1)."""
    from clbook.dynamics import ssl

    x = _rand(200, 2, seed=1) * torch.tensor([2.0, 0.5])
    xp, xn = x + 0.1 * _rand(200, 2, seed=2), x[torch.randperm(200, generator=clbook.generator(3))]
    r = wide.train_nets(x, xp, xn, h=8, activations=("tanh",), steps=800, every=800, eta=0.05, generator=clbook.generator(4))
    lam = torch.linalg.eigvalsh(ssl.trace_matrix(x, xp, xn))
    assert float(r["linear"][1][-1]) == pytest.approx(float(lam[0]), abs=1e-6)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_gap_vanishes_for_small_inputs(seed):
    x = 1e-5 * _rand(4, seed=seed)
    r = wide.init_gap(50, x, activation="tanh", reps=2, generator=clbook.generator(seed))
    assert bool((r.gap <= 1e-12).all())


def test_bad_inputs():
    with pytest.raises(ValueError, match="activation"):
        wide.phi("gelu", torch.zeros(2))
    with pytest.raises(ValueError, match="d <= h"):
        wide.lemma2_ratio(3, 5, generator=clbook.generator(0))
    with pytest.raises(ValueError, match="h"):
        wide.init_gap(2, torch.ones(5), generator=clbook.generator(0))
    with pytest.raises(ValueError, match="shape"):
        wide.train_nets(torch.ones(3, 2), torch.ones(3, 2), torch.ones(4, 2), h=4, generator=clbook.generator(0))
    with pytest.raises(ValueError, match="activation"):
        wide.train_nets(torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), h=4, activations=("linear",),
                        generator=clbook.generator(0))
    with pytest.raises(ValueError, match="finite"):
        wide.init_gap(10, [math.inf, 0.0], generator=clbook.generator(0))
    with pytest.raises(ValueError, match="u_nonlinear"):
        wide.gap(torch.ones(3, 2), torch.ones(3, 1))

