"""clbook.wide and clbook.experiments.wide (Chapter 12)."""
import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook import wide
from clbook.experiments import wide as experiment


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0, device="cpu")


def _rand(*shape, seed=0):
    return clbook.randn(*shape, generator=clbook.generator(seed)).cpu().numpy()


@pytest.mark.parametrize("activation", ["linear", "tanh", "softplus2", "relu", "sigmoid"])
def test_gradients_match_autograd(activation):
    x, xp, xn = _rand(12, 3, seed=1), _rand(12, 3, seed=2), _rand(12, 3, seed=3)
    W1, W2 = _rand(7, 3, seed=4), _rand(7, 2, seed=5)
    act = {"linear": lambda a: a, "tanh": torch.tanh, "softplus2": lambda a: 2 * (torch.nn.functional.softplus(a) - np.log(2)),
           "relu": torch.relu, "sigmoid": torch.sigmoid}[activation]
    T1, T2 = torch.tensor(W1, requires_grad=True), torch.tensor(W2, requires_grad=True)
    u = lambda v: act(torch.tensor(v) @ T1.T) @ T2  # noqa: E731
    loss = (u(x) * (u(xn) - u(xp))).sum() / len(x)
    loss.backward()
    value, G1, G2 = wide.contrastive_gradients(W1, W2, x, xp, xn, activation)
    assert value == pytest.approx(float(loss.detach()), rel=1e-12)
    np.testing.assert_allclose(G1, T1.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(G2, T2.grad.numpy(), atol=1e-12)


def test_phi_and_dphi():
    a = np.linspace(-3, 3, 13)
    for name in wide.ACTIVATIONS:
        if name != "relu":
            num = (wide.phi(name, a + 1e-6) - wide.phi(name, a - 1e-6)) / 2e-6
            np.testing.assert_allclose(wide.dphi(name, a), num, atol=1e-8)
    assert wide.phi("softplus2", np.zeros(1))[0] == 0 and wide.dphi("softplus2", np.zeros(1))[0] == 1


def test_init_gap_chain_of_inequalities():
    x = 3 * np.ones(5) / np.sqrt(5)
    for h in (10, 100, 1000):
        r = wide.init_gap(h, x, activation="tanh", reps=5, generator=clbook.generator(h))
        assert np.all(r.gap <= r.eps + 1e-12) and np.all(r.eps <= r.taylor + 1e-12) and np.all(r.taylor <= r.bound + 1e-12)


def test_init_gap_is_zero_for_linear_limit_and_lemma2_bounded():
    r = wide.lemma2_ratio(400, 5, reps=5, generator=clbook.generator(0))
    assert np.all(r < 1.5)
    small = wide.init_gap(1000, 1e-4 * np.ones(3), activation="tanh", reps=3, generator=clbook.generator(1))
    assert np.all(small.gap < 1e-11)


def test_train_nets_stays_on_manifold_and_shares_linear():
    x, xp, xn = _rand(20, 2, seed=1), _rand(20, 2, seed=2), _rand(20, 2, seed=3)
    a = wide.train_nets(x, xp, xn, h=12, activations=("tanh", "relu"), steps=20, every=5, generator=clbook.generator(4))
    b = wide.train_pair(x, xp, xn, h=12, activation="tanh", steps=20, every=5, generator=clbook.generator(4))
    np.testing.assert_array_equal(a["linear"][0], b.u_linear)
    np.testing.assert_array_equal(a["tanh"][0], b.u_nonlinear)
    assert list(a["record"]) == [0, 5, 10, 15, 20]
    np.testing.assert_allclose(b.gap, wide.gap(b.u_nonlinear, b.u_linear))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_gap_vanishes_for_small_inputs(seed):
    x = 1e-5 * _rand(4, seed=seed)
    r = wide.init_gap(50, x, activation="tanh", reps=2, generator=clbook.generator(seed))
    assert np.all(r.gap <= 1e-12)


def test_experiment_quick(tmp_path):
    out = tmp_path / "fig2.json"
    experiment.main(["--quick", "--out", str(out)])
    data = json.loads(out.read_text())
    assert set(data["gaps"]) == {"tanh", "relu", "sigmoid"}
    assert len(data["gaps"]["tanh"]["10"][0]) == len(data["record"])
    assert data["provenance"]["seconds"] >= 0


def test_bad_inputs():
    with pytest.raises(ValueError, match="activation"):
        wide.phi("gelu", np.zeros(2))
    with pytest.raises(ValueError, match="d <= h"):
        wide.lemma2_ratio(3, 5, generator=clbook.generator(0))
    with pytest.raises(ValueError, match="h"):
        wide.init_gap(2, np.ones(5), generator=clbook.generator(0))
    with pytest.raises(ValueError, match="shape"):
        wide.train_nets(np.ones((3, 2)), np.ones((3, 2)), np.ones((4, 2)), h=4, generator=clbook.generator(0))
