"""API domains of the modules of Part I (see spec.py): Tian (2022), α-CL, Chapters 1-4."""
import numpy as np
import torch
from hypothesis import strategies as st

from clbook import losses, nets
from clbook.dynamics import deeplinear as dl
from clbook.dynamics import relu2layer as r2
from clbook.experiments import new_losses as nl

from .spec import (
    EXEMPT_CLI,
    EXEMPT_HEAVY,
    EXEMPT_PLOT,
    EXEMPT_RECORD,
    Bad,
    Spec,
    fixed,
    generators,
    scalar,
    shape,
    tensors,
    unit_rows_tensor,
)

_n, _p = 5, 3
_A = torch.rand(_n, _n, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
_X = torch.randn(_n, _p, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
_Z1 = torch.nn.functional.normalize(torch.randn(6, 4, generator=torch.Generator().manual_seed(2), dtype=torch.float64), dim=1)
_Z2 = torch.nn.functional.normalize(_Z1 + 0.3, dim=1)
_D = losses.pair_distances(_Z1, _Z2)[1]
_cov = {"alpha": _A, "a1": _X, "a2": _X + 0.1}
_g = {"generator": torch.Generator().manual_seed(0)}
_SMALL = nl.Settings(epochs=1, eval_epochs=(1,), batch=64, hidden=8, out=4, n_train=128)
_NAN = _X * float("nan")


def _pairs():
    return st.fixed_dictionaries({"z1": unit_rows_tensor(6, 4), "z2": unit_rows_tensor(6, 4)})


def _distances():
    return unit_rows_tensor(6, 4).map(lambda z: losses.pair_distances(z, z)[1])


def _rows_sum_to_one(out, kw):
    assert out.shape == (6, 6) and torch.allclose(out.sum(1), torch.ones(6, dtype=out.dtype), atol=1e-10)


def _member_ok(out, kw):
    assert isinstance(out, losses.ContrastiveLoss)
    assert torch.isfinite(out(_Z1, _Z2))


def _weights(widths=(4, 3, 2), starts=2):
    return dl.random_weights(list(widths), n_starts=starts, seed=0)


_W = _weights()
_Xd = torch.eye(4, dtype=torch.float64) + 0.1
_mlp = nets.MLP([3, 4, 2], generator=torch.Generator().manual_seed(0))
_prob = r2.make_problem(modes=3, gamma_range=(0.5, 1.5), n=12, seed=0)
_W1, _W2 = r2.random_start(1, 2, 3, 2, seed=1)

DOMAINS: dict = {
    # covariance
    "clbook.covariance.contrastive_covariance": Spec(
        valid=st.fixed_dictionaries({"alpha": tensors(_n, _n, low=0.0, high=1.0), "a1": tensors(_n, _p), "a2": tensors(_n, _p),
                                     "convention": st.sampled_from(["tian2022", "tian2023"])}),
        expect=shape(_p, _p),
        invalid=(Bad({**_cov, "alpha": _A[:3]}, "alpha"), Bad({**_cov, "a2": _X[:, :2]}, "a2"),
                 Bad({**_cov, "alpha": _A.float()}, "alpha"), Bad({**_cov, "a1": _X.long()}, "a1"),
                 Bad({**_cov, "a1": _NAN}, "a1"), Bad({**_cov, "b1": _X}, "b1"),
                 Bad({"alpha": _A[:1, :1], "a1": _X[:1], "a2": _X[:1]}, "n >= 2"),
                 Bad({**_cov, "convention": "tian2024"}, "convention"))),
    "clbook.covariance.energy": Spec(
        valid=st.fixed_dictionaries({"alpha": tensors(_n, _n, low=0.0, high=1.0), "z1": tensors(_n, _p), "z2": tensors(_n, _p)}),
        expect=scalar,
        invalid=(Bad({"alpha": _A, "z1": _X, "z2": _X[:4]}, "z2"), Bad({"alpha": _A * float("inf"), "z1": _X, "z2": _X}, "alpha"),
                 Bad({"alpha": _A, "z1": torch.zeros(_n, 2, 2), "z2": torch.zeros(_n, 2, 2)}, "z1"))),
    # alpha
    "clbook.alpha.pairwise_importance": Spec(
        valid=_pairs().map(lambda kw: {"loss": losses.infonce(0.5, 1.0), **kw}), expect=shape(6, 6),
        invalid=(Bad({"loss": "infonce", "z1": _Z1, "z2": _Z2}, "loss"), Bad({"loss": losses.mine(), "z1": _Z1, "z2": _Z2[:3]}, "z1"))),
    "clbook.alpha.energy_coefficients": Spec(valid=_pairs(), expect=shape(6, 6),
                                             invalid=(Bad({"z1": _Z1, "z2": _Z2.float()}, "z1"), Bad({"z1": _Z1[:1], "z2": _Z2[:1]}, "n >= 2"))),
    "clbook.alpha.entropy_weights": Spec(
        valid=st.fixed_dictionaries({"d_neg": _distances(), "temperature": st.floats(0.05, 5.0)}), expect=_rows_sum_to_one,
        invalid=(Bad({"d_neg": _D, "temperature": 0.0}, "temperature"), Bad({"d_neg": _D[:, :2], "temperature": 1.0}, "d_neg"),
                 Bad({"d_neg": _D, "temperature": 1.0, "row_sums": -torch.ones(6, dtype=torch.float64)}, "row_sums"),
                 Bad({"d_neg": _D, "temperature": 1.0, "row_sums": torch.ones(6)}, "row_sums"))),
    "clbook.alpha.inverse_power_weights": Spec(
        valid=st.fixed_dictionaries({"d_neg": _distances(), "temperature": st.floats(0.05, 5.0), "gamma": st.floats(1.1, 5.0)}),
        expect=_rows_sum_to_one,
        invalid=(Bad({"d_neg": _D, "temperature": 1.0, "gamma": 1.0}, "gamma"), Bad({"d_neg": _D, "temperature": 1.0, "iterations": 0}, "iterations"),
                 Bad({"d_neg": _D.long(), "temperature": 1.0}, "d_neg"))),
    "clbook.alpha.sparsemax_weights": Spec(
        valid=st.fixed_dictionaries({"d_neg": _distances(), "temperature": st.floats(0.05, 50.0)}), expect=_rows_sum_to_one,
        invalid=(Bad({"d_neg": _D, "temperature": -1.0}, "temperature"), Bad({"d_neg": _D * float("nan"), "temperature": 1.0}, "d_neg"))),
    "clbook.alpha.project_simplex": Spec(
        valid=st.fixed_dictionaries({"v": tensors(4, 5)}),
        expect=lambda out, kw: torch.allclose(out.sum(1), torch.ones(4, dtype=out.dtype)) and bool((out >= 0).all()) and None,
        invalid=(Bad({"v": torch.zeros(3)}, "v"), Bad({"v": torch.zeros(3, 0)}, "v"))),
    "clbook.alpha.direct_weights": Spec(
        valid=st.fixed_dictionaries({"d_neg": _distances(), "temperature": st.floats(0.05, 5.0), "power": st.floats(1.0, 10.0),
                                     "normalize": st.booleans()}),
        expect=shape(6, 6),
        invalid=(Bad({"d_neg": _D, "temperature": 1.0, "power": 0.0}, "power"), Bad({"d_neg": _D, "temperature": float("inf")}, "temperature"))),
    "clbook.alpha.inverse_distance_weights": Spec(
        valid=st.fixed_dictionaries({"d_neg": _distances(), "temperature": st.floats(0.05, 5.0), "exponent": st.floats(0.5, 3.0)}),
        expect=_rows_sum_to_one, invalid=(Bad({"d_neg": _D, "temperature": 1.0, "exponent": -1.0}, "exponent"),)),
    "clbook.alpha.uniform_weights": Spec(valid=st.fixed_dictionaries({"d_neg": _distances()}), expect=_rows_sum_to_one,
                                         invalid=(Bad({"d_neg": torch.zeros(1, 1, dtype=torch.float64)}, "d_neg"),)),
    "clbook.alpha.inverse_power_ratio_bound": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(2, 10**6), "temperature": st.floats(1e-3, 5.0), "gamma": st.floats(1.01, 50.0),
                                     "spread": st.floats(1e-3, 4.0)}),
        expect=lambda out, kw: None if out >= 1 else (_ for _ in ()).throw(AssertionError(out)),
        invalid=(Bad({"n": 1, "temperature": 1.0, "gamma": 2.0, "spread": 1.0}, "n"),
                 Bad({"n": 8, "temperature": 1.0, "gamma": 0.5, "spread": 1.0}, "gamma"),
                 Bad({"n": 8, "temperature": 1.0, "gamma": 2.0, "spread": 0.0}, "spread"))),
    "clbook.alpha.solve_row_numerically": Spec(
        valid=st.fixed_dictionaries({"costs": st.lists(st.floats(-3, 3), min_size=2, max_size=6).map(np.array),
                                     "regulariser": st.sampled_from(["entropy", "inverse_power", "square"]),
                                     "temperature": st.floats(0.1, 3.0), "row_sum": st.floats(0.2, 3.0)}),
        expect=lambda out, kw: None if abs(out.sum() - kw["row_sum"]) < 1e-6 * kw["row_sum"] and (out >= 0).all() else
        (_ for _ in ()).throw(AssertionError(out)),
        invalid=(Bad({"costs": [1.0], "temperature": 1.0}, "costs"), Bad({"costs": [1.0, 2.0], "temperature": 1.0, "row_sum": 0.0}, "row_sum"),
                 Bad({"costs": [1.0, 2.0], "temperature": 1.0, "regulariser": "huber"}, "regulariser"),
                 Bad({"costs": [1.0, 2.0], "temperature": 1.0, "regulariser": "inverse_power", "gamma": 1.0}, "gamma"),
                 Bad({"costs": [1.0, 2.0], "temperature": 1.0, "tol": 0.0}, "tol"))),
    "clbook.alpha.AlphaRule": Spec(exempt=EXEMPT_RECORD + " (clbook.alpha.rule builds it, with its arguments checked)"),
    "clbook.alpha.rule": Spec(
        valid=st.sampled_from([{"name": "entropy", "temperature": 0.5}, {"name": "uniform"}, {"name": "direct", "temperature": 0.5, "power": 4.0},
                               {"name": "sparsemax", "temperature": 5.0, "backprop": True}]),
        expect=lambda out, kw: _rows_sum_to_one(out.weights(torch.cdist(_Z1, _Z1) ** 2 / 2), kw),
        invalid=(Bad({"name": "softmax"}, "name"), Bad({"name": "entropy", "temperature": 1.0, "power": 3}, "unknown"),
                 Bad({"name": "entropy", "temperature": 0.0}, "temperature"), Bad({"name": "uniform", "backprop": 1}, "backprop"))),
    "clbook.alpha.alpha_cl_loss": Spec(
        valid=_pairs().map(lambda kw: {**kw, "alpha_rule": __import__("clbook").alpha.rule("entropy", temperature=0.5)}), expect=scalar,
        invalid=(Bad({"z1": _Z1, "z2": _Z2, "alpha_rule": "entropy"}, "alpha_rule"),)),
    "clbook.alpha.loss_and_energy_gradients": Spec(
        valid=st.fixed_dictionaries({"x1": tensors(6, 3), "x2": tensors(6, 3), "stop_gradient": st.booleans()}).map(
            lambda kw: {"loss": losses.infonce(0.5), "encoder": _mlp, **kw}),
        expect=lambda out, kw: None if out[0].shape == out[1].shape else (_ for _ in ()).throw(AssertionError),
        invalid=(Bad({"loss": losses.infonce(), "encoder": "net", "x1": _X, "x2": _X}, "encoder"),
                 Bad({"loss": None, "encoder": _mlp, "x1": _X, "x2": _X}, "loss"))),
    # losses.acl
    "clbook.losses.acl.pair_distances": Spec(valid=_pairs(), expect=lambda out, kw: None if out[1].shape == (6, 6) else 1 / 0,
                                             invalid=(Bad({"z1": _Z1, "z2": _Z2[:, :2]}, "z1"), Bad({"z1": _Z1 * float("nan"), "z2": _Z2}, "z1"))),
    "clbook.losses.acl.margins": Spec(valid=_pairs(), expect=shape(6, 6), invalid=(Bad({"z1": _Z1.long(), "z2": _Z2}, "z1"),)),
    "clbook.losses.acl.ContrastiveLoss": Spec(exempt="an abstract base class: its members are built by infonce(), mine(), ... "
                                                     "and called through them"),
    "clbook.losses.acl.ExponentialLoss": Spec(exempt="a member record that the member factories (infonce, mine, ...) construct; "
                                                     "users call the factories"),
    "clbook.losses.acl.GeneralLoss": Spec(exempt="a member record that the member factories (triplet, quadratic, ...) construct; "
                                                 "users call the factories"),
    "clbook.losses.acl.infonce": Spec(valid=st.fixed_dictionaries({"temperature": st.floats(1e-3, 5.0), "eps": st.floats(0.0, 3.0)}),
                                      expect=_member_ok,
                                      invalid=(Bad({"temperature": 0.0}, "temperature"), Bad({"eps": -1.0}, "eps"))),
    "clbook.losses.acl.infonce_reference": Spec(valid=_pairs(), expect=scalar, invalid=(Bad({"z1": _Z1, "z2": _Z2, "eps": -1.0}, "eps"),)),
    "clbook.losses.acl.mine": Spec(valid=fixed(), expect=_member_ok),
    "clbook.losses.acl.triplet": Spec(valid=st.fixed_dictionaries({"margin": st.floats(0.0, 2.0)}), expect=_member_ok,
                                      invalid=(Bad({"margin": -0.1}, "margin"),)),
    "clbook.losses.acl.soft_triplet": Spec(valid=st.fixed_dictionaries({"temperature": st.floats(0.01, 5.0)}), expect=_member_ok,
                                           invalid=(Bad({"temperature": 0.0}, "temperature"), Bad({"margin": -1.0}, "margin"))),
    "clbook.losses.acl.n_plus_one_tuplet": Spec(valid=fixed(), expect=_member_ok),
    "clbook.losses.acl.lifted_structured": Spec(valid=st.fixed_dictionaries({"margin": st.floats(0.0, 1.0)}), expect=_member_ok,
                                                invalid=(Bad({"margin": float("nan")}, "margin"),)),
    "clbook.losses.acl.modified_triplet": Spec(valid=st.fixed_dictionaries({"slope": st.floats(0.1, 10.0)}), expect=_member_ok,
                                               invalid=(Bad({"slope": 0.0}, "slope"),)),
    "clbook.losses.acl.quadratic": Spec(valid=fixed(), expect=_member_ok),
    "clbook.losses.acl.member": Spec(valid=st.sampled_from(list(losses.FAMILY)).map(lambda n: {"name": n}), expect=_member_ok,
                                     invalid=(Bad({"name": "SimCLR"}, "name"), Bad({"name": "MINE", "temperature": 1.0}, "unknown"))),
    # data.modes
    "clbook.data.modes.ModeBatch": Spec(exempt=EXEMPT_RECORD),
    "clbook.data.modes.orthogonal_modes": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(4, 12), "modes": st.integers(1, 4), "generator": generators(),
                                     "mix_fraction": st.floats(0.0, 0.5)}).map(
            lambda kw: kw if kw["modes"] >= 2 or kw["mix_fraction"] == 0 else {**kw, "mix_fraction": 0.0}),
        expect=lambda out, kw: None if out.x1.shape == (kw["n"], kw["modes"]) else 1 / 0,
        invalid=(Bad({"n": 2, "modes": 3, **_g}, "n"), Bad({"n": 8, "modes": 0, **_g}, "modes"), Bad({"n": 8, "modes": 2, "generator": 1}, "generator"),
                 Bad({"n": 8, "modes": 2, **_g, "gamma_range": (2.0, 1.0)}, "gamma_range"),
                 Bad({"n": 8, "modes": 1, **_g, "mix_fraction": 0.5}, "mix_fraction"))),
    "clbook.data.modes.assumption1_violations": Spec(
        valid=fixed(x1=_prob.batch.x1, x2=_prob.batch.x2), expect=lambda out, kw: None if set(out) == {"negative", "multi_mode", "not_rescaled"} else 1 / 0,
        invalid=(Bad({"x1": _prob.batch.x1, "x2": _prob.batch.x2[:3]}, "x1"),)),
    # data.digits
    "clbook.data.digits.ShiftedDigits": Spec(exempt=EXEMPT_RECORD),
    "clbook.data.digits.shifted_digits": Spec(valid=fixed(canvas=10, n_train=100), expect=lambda out, kw: None if out.x_train.shape == (100, 100) else 1 / 0,
                                              invalid=(Bad({"canvas": 6}, "canvas"), Bad({"n_train": 5}, "n_train"), Bad({"seed": -1}, "seed"))),
    "clbook.data.digits.augment": Spec(
        valid=st.fixed_dictionaries({"x": tensors(3, 144, low=0.0, high=1.0), "generator": generators(), "noise": st.floats(0.0, 0.5)}),
        expect=shape(3, 144),
        invalid=(Bad({"x": torch.zeros(3, 100), **_g}, "x"), Bad({"x": torch.zeros(3, 144), **_g, "noise": -1.0}, "noise"),
                 Bad({"x": torch.zeros(3, 144), **_g, "contrast": (2.0, 1.0)}, "contrast"))),
    # metrics.probes
    "clbook.metrics.probes.linear_probe": Spec(
        valid=fixed(train_x=np.r_[np.zeros((5, 2)), np.ones((5, 2))], train_y=[0] * 5 + [1] * 5, test_x=np.eye(2), test_y=[0, 1]),
        expect=lambda out, kw: None if 0 <= out <= 1 else 1 / 0,
        invalid=(Bad({"train_x": np.zeros((4, 2)), "train_y": [0, 1, 0, 1], "test_x": np.zeros((2, 3)), "test_y": [0, 1]}, "train_x"),
                 Bad({"train_x": np.zeros((4, 2)), "train_y": [0, 1, 0, 1], "test_x": np.zeros((2, 2)), "test_y": [0, 1], "C": 0}, "C"),
                 Bad({"train_x": np.zeros((4, 2)), "train_y": [0, 0, 0, 0], "test_x": np.zeros((2, 2)), "test_y": [0, 0]}, "train_y"),
                 Bad({"train_x": np.array([["a", "b"]] * 4), "train_y": [0, 1, 0, 1], "test_x": np.zeros((2, 2)), "test_y": [0, 1]},
                     "train_x"))),
    "clbook.metrics.probes.knn_probe": Spec(
        valid=fixed(train_x=np.r_[np.ones((5, 2)), -np.ones((5, 2))] + 0.1, train_y=[0] * 5 + [1] * 5, test_x=np.array([[1.0, 1.0], [-1.0, -1.0]]),
                    test_y=[0, 1]),
        expect=lambda out, kw: None if 0 <= out <= 1 else 1 / 0,
        invalid=(Bad({"train_x": np.zeros((4, 2)), "train_y": [0, 1], "test_x": np.zeros((2, 2)), "test_y": [0, 1]}, "train_y"),
                 Bad({"train_x": np.ones((6, 2)), "train_y": [0, 1] * 3, "test_x": np.ones((2, 2)), "test_y": [0, 1], "metric": "l7"}, "metric"))),
}

_Wb = [W.clone() for W in _W]
_sym = torch.eye(4, dtype=torch.float64) + 0.1

DOMAINS.update({
    # dynamics.deeplinear
    "clbook.dynamics.Run": Spec(exempt="a typing.Protocol (the stopping_reason field every simulator result has); it is not instantiated"),
    "clbook.dynamics.deeplinear.ContrastiveBatch": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.deeplinear.TrainResult": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.deeplinear.BlowupResult": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.deeplinear.contrastive_batch": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(3, 10), "d": st.integers(2, 5), "gap": st.floats(0, 2), "augmentation": st.floats(0, 1),
                                     "seed": st.integers(0, 100)}),
        expect=lambda out, kw: None if out.X.shape == (kw["d"], kw["d"]) else 1 / 0,
        invalid=(Bad({"n": 2}, "n"), Bad({"d": 1}, "d"), Bad({"gap": -1.0}, "gap"), Bad({"temperature": 0.0}, "temperature"))),
    "clbook.dynamics.deeplinear.set_top_gap": Spec(valid=st.fixed_dictionaries({"X": st.just(_sym), "gap": st.floats(0, 2)}), expect=shape(4, 4),
                                                   invalid=(Bad({"X": _sym, "gap": -1.0}, "gap"), Bad({"X": torch.zeros(3, 2), "gap": 0.0}, "X"))),
    "clbook.dynamics.deeplinear.random_weights": Spec(
        valid=st.fixed_dictionaries({"widths": st.lists(st.integers(1, 4), min_size=2, max_size=4), "n_starts": st.integers(1, 3),
                                     "normalization": st.sampled_from(["frobenius", "filter", None])}),
        expect=lambda out, kw: None if len(out) == len(kw["widths"]) - 1 else 1 / 0,
        invalid=(Bad({"widths": [4]}, "widths"), Bad({"widths": [4, 3], "n_starts": 1.5}, "n_starts"),
                 Bad({"widths": [4, 3], "normalization": "spectral"}, "normalization"), Bad({"widths": [4, 0]}, "widths"))),
    "clbook.dynamics.deeplinear.project": Spec(valid=fixed(weights=_Wb, normalization="filter"), expect=lambda out, kw: None,
                                               invalid=(Bad({"weights": _W[0]}, "weights"), Bad({"weights": _W, "normalization": "x"}, "normalization"))),
    "clbook.dynamics.deeplinear.end_to_end": Spec(valid=fixed(weights=_W), expect=shape(2, 2, 4),
                                                  invalid=(Bad({"weights": [_W[1], _W[0]]}, "does not follow"), Bad({"weights": []}, "weights"))),
    "clbook.dynamics.deeplinear.energy": Spec(valid=fixed(weights=_W, X=_Xd), expect=shape(2),
                                              invalid=(Bad({"weights": _W, "X": torch.eye(5, dtype=torch.float64)}, "X"),)),
    "clbook.dynamics.deeplinear.flow": Spec(valid=fixed(weights=_W, X=_Xd), expect=lambda out, kw: None if len(out) == 2 else 1 / 0,
                                            invalid=(Bad({"weights": _W, "X": _Xd * float("nan")}, "X"),)),
    "clbook.dynamics.deeplinear.balance_matrices": Spec(valid=fixed(weights=_W), expect=lambda out, kw: None if out[0].shape == (2, 3, 3) else 1 / 0,
                                                        invalid=(Bad({"weights": "W"}, "weights"),)),
    "clbook.dynamics.deeplinear.tangent": Spec(valid=fixed(weights=_W, grads=_W), expect=lambda out, kw: None if float(out[0].abs().max()) < 1e-12 else 1 / 0,
                                               invalid=(Bad({"weights": _W, "grads": _W[:1] + [_W[0]]}, "does not follow"),)),
    "clbook.dynamics.deeplinear.train": Spec(valid=st.fixed_dictionaries({"steps": st.integers(0, 5), "eta": st.floats(0.01, 0.5),
                                                                          "layer_scaled": st.booleans()}).map(lambda kw: {"X": _Xd, "weights": _W, **kw}),
                                             expect=lambda out, kw: None if out.energy.shape[1] == 2 else 1 / 0,
                                             invalid=(Bad({"X": _Xd, "weights": _W, "steps": 1, "eta": 0.0}, "eta"),
                                                      Bad({"X": _Xd, "weights": _W, "steps": -1, "eta": 0.1}, "steps"))),
    "clbook.dynamics.deeplinear.rank_one_report": Spec(valid=fixed(weights=_W, X=_Xd), expect=lambda out, kw: None if out["energy_ratio"].shape == (2,) else 1 / 0,
                                                       invalid=(Bad({"weights": _W, "X": torch.eye(3, dtype=torch.float64)}, "X"),)),
    "clbook.dynamics.deeplinear.euler": Spec(valid=st.fixed_dictionaries({"eta": st.floats(1e-3, 0.1), "steps": st.integers(0, 5)}).map(
        lambda kw: {"X": _Xd, "weights": _W, **kw}), expect=lambda out, kw: None,
        invalid=(Bad({"X": _Xd, "weights": _W, "eta": -0.1, "steps": 1}, "eta"),)),
    "clbook.dynamics.deeplinear.solve_unconstrained": Spec(
        valid=fixed(X=_Xd, weights=[W[:1] * 3 for W in _W], t_max=5.0, max_norm=10.0), expect=lambda out, kw: None,
        invalid=(Bad({"X": _Xd, "weights": _W, "t_max": 1.0}, "one start"), Bad({"X": _Xd, "weights": [W[:1] for W in _W], "t_max": 0.0}, "t_max"))),
    "clbook.dynamics.deeplinear.aligned_blowup_time": Spec(
        valid=st.fixed_dictionaries({"scale": st.floats(0.1, 2.0), "depth": st.integers(2, 6), "lam": st.floats(0.1, 2.0)}), expect=scalar,
        invalid=(Bad({"scale": 1.0, "depth": 1, "lam": 1.0}, "depth"), Bad({"scale": 1.0, "depth": 3, "lam": -1.0}, "lam"))),
    "clbook.dynamics.deeplinear.aligned_weights": Spec(valid=st.fixed_dictionaries({"scale": st.floats(0.1, 2.0)}).map(
        lambda kw: {"X": _Xd, "widths": [4, 3, 2], **kw}), expect=lambda out, kw: None if out[0].shape == (1, 3, 4) else 1 / 0,
        invalid=(Bad({"X": _Xd, "widths": [4, 3], "scale": 0.0}, "scale"),)),
    "clbook.dynamics.deeplinear.normalization_jacobian": Spec(
        valid=st.fixed_dictionaries({"x": tensors(5, low=0.5, high=2.0), "kind": st.sampled_from(["l2", "layernorm"])}), expect=shape(5, 5),
        invalid=(Bad({"x": torch.ones(2, 2)}, "x"), Bad({"x": torch.ones(3, dtype=torch.float64), "kind": "batch"}, "kind"))),
    "clbook.dynamics.deeplinear.normalized_mlp_gradients": Spec(
        valid=st.fixed_dictionaries({"kind": st.sampled_from(["l2", "layernorm", "batchnorm"]), "activation": st.sampled_from(["relu", "linear"])}),
        expect=lambda out, kw: None if len(out[0]) == len(out[1]) == 4 else 1 / 0,
        invalid=(Bad({"kind": "group"}, "kind"), Bad({"activation": "tanh"}, "activation"), Bad({"norm_after": 9}, "norm_after"))),
    "clbook.dynamics.deeplinear.weight_gradient_cosines": Spec(valid=st.sampled_from([{"kind": "l2"}, {"kind": "batchnorm"}]), expect=shape(4),
                                                               invalid=(Bad({"kind": "group"}, "kind"),)),
    "clbook.dynamics.deeplinear.figure2_data": Spec(valid=fixed(depth=2, width=3, steps=5), expect=lambda out, kw: None,
                                                    invalid=(Bad({"depth": 9}, "depth"), Bad({"eta": 0.0}, "eta"),
                                                             Bad({"augmentation": 5.0, "steps": 1}, "lambda_max"))),
    # dynamics.relu2layer
    "clbook.dynamics.relu2layer.StickyRun": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.relu2layer.ReluRun": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.relu2layer.Problem": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.relu2layer.forward": Spec(valid=st.fixed_dictionaries({"activation": st.sampled_from(["relu", "linear"])}).map(
        lambda kw: {"W1": _W1[0], "W2": _W2[0], "x": _prob.batch.x1, **kw}), expect=shape(12, 2),
        invalid=(Bad({"W1": _W1[0], "W2": _W2[0], "x": _prob.batch.x1[:, :2]}, "same d"),
                 Bad({"W1": _W1[0], "W2": _W2[0], "x": _prob.batch.x1, "activation": "tanh"}, "activation"))),
    "clbook.dynamics.relu2layer.energy": Spec(valid=fixed(W1=_W1[0], W2=_W2[0], alpha=_prob.alpha, x1=_prob.batch.x1, x2=_prob.batch.x2), expect=scalar,
                                              invalid=(Bad({"W1": _W1[0], "W2": _W2[0], "alpha": _prob.alpha[:3], "x1": _prob.batch.x1,
                                                            "x2": _prob.batch.x2}, "alpha"),)),
    "clbook.dynamics.relu2layer.linear_energy": Spec(valid=fixed(W1=_W1, W2=_W2, X=_prob.X), expect=shape(1),
                                                     invalid=(Bad({"W1": _W1, "W2": _W2, "X": torch.eye(4, dtype=torch.float64)}, "X"),)),
    "clbook.dynamics.relu2layer.sticky_ascent": Spec(
        valid=st.fixed_dictionaries({"eta": st.floats(1e-3, 0.1), "steps": st.integers(1, 5), "sticky": st.booleans()}).map(
            lambda kw: {"W1": _W1, "W2": _W2, "X": _prob.X / _prob.X.abs().max(), **kw}),
        expect=lambda out, kw: None if out.W1.shape == (1, 2, 3) else 1 / 0,
        invalid=(Bad({"W1": -_W1, "W2": _W2, "X": _prob.X, "eta": 0.1, "steps": 1}, "W1 must be >= 0"),
                 Bad({"W1": _W1, "W2": _W2, "X": _prob.X, "eta": 0.1, "steps": 0}, "steps"))),
    "clbook.dynamics.relu2layer.relu_ascent": Spec(
        valid=fixed(W1=_W1[0], W2=_W2[0], alpha=_prob.alpha, x1=_prob.batch.x1, x2=_prob.batch.x2, eta=1e-3, steps=3),
        expect=lambda out, kw: None if out.clipped_trajectory.shape == (3, 2, 3) else 1 / 0,
        invalid=(Bad({"W1": _W1, "W2": _W2, "alpha": _prob.alpha, "x1": _prob.batch.x1, "x2": _prob.batch.x2, "eta": 0.1, "steps": 1}, "one start"),
                 Bad({"W1": _W1[0], "W2": _W2[0], "alpha": _prob.alpha, "x1": _prob.batch.x1, "x2": _prob.batch.x2, "eta": 0.0, "steps": 1}, "eta"))),
    "clbook.dynamics.relu2layer.numerical_rank": Spec(valid=st.fixed_dictionaries({"W": tensors(2, 3, 4)}), expect=shape(2),
                                                      invalid=(Bad({"W": torch.ones(3)}, "W"),)),
    "clbook.dynamics.relu2layer.active_modes": Spec(valid=st.fixed_dictionaries({"W1": tensors(2, 3, 4, low=0.0, high=1.0)}), expect=shape(2),
                                                    invalid=(Bad({"W1": torch.ones(3)}, "W1"),)),
    "clbook.dynamics.relu2layer.lemma15_bound": Spec(
        valid=st.fixed_dictionaries({"u": tensors(4, 5), "v": tensors(4, 5, low=0.1, high=1.0)}), expect=shape(4),
        invalid=(Bad({"u": torch.ones(3, dtype=torch.float64), "v": -torch.ones(3, dtype=torch.float64)}, "v"),
                 Bad({"u": torch.ones(3, dtype=torch.float64), "v": torch.ones(4, dtype=torch.float64)}, "same shape"))),
    "clbook.dynamics.relu2layer.make_problem": Spec(
        valid=st.fixed_dictionaries({"modes": st.integers(2, 4), "seed": st.integers(0, 50)}).map(lambda kw: {**kw, "gamma_range": (0.5, 1.5), "n": 12}),
        expect=lambda out, kw: None if out.X.shape == (kw["modes"], kw["modes"]) else 1 / 0,
        invalid=(Bad({"modes": 2, "gamma_range": (1.5, 0.5)}, "gamma_range"), Bad({"modes": 2, "gamma_range": (0.5, 1.5), "temperature": 0}, "temperature"))),
    "clbook.dynamics.relu2layer.random_start": Spec(valid=st.fixed_dictionaries({"starts": st.integers(1, 3), "hidden": st.integers(1, 3),
                                                                                 "dim": st.integers(1, 3), "out": st.integers(1, 3), "seed": st.integers(0, 9)}),
                                                    expect=lambda out, kw: None if bool((out[0] >= 0).all()) else 1 / 0,
                                                    invalid=(Bad({"starts": 0, "hidden": 1, "dim": 1, "out": 1, "seed": 0}, "starts"),)),
    "clbook.dynamics.relu2layer.fig3_run": Spec(valid=fixed(gamma_low=0.5, gamma_high=1.5, modes=2, hidden=2, seed=0, steps=10),
                                                expect=lambda out, kw: None,
                                                invalid=(Bad({"gamma_low": 2.0, "gamma_high": 1.0}, "gamma_low"), Bad({"modes": 0}, "modes"),
                                                         Bad({"steps": 0}, "steps"))),
    # experiments.new_losses
    "clbook.experiments.new_losses.Settings": Spec(valid=fixed(epochs=2, eval_epochs=(2,)), expect=lambda out, kw: None),
    "clbook.experiments.new_losses.Comparison": Spec(exempt=EXEMPT_RECORD + " (from_result and load build it)"),
    "clbook.experiments.new_losses.objective": Spec(
        valid=st.sampled_from(nl.METHODS).map(lambda m: {"method": m, "settings": _SMALL}),
        expect=lambda out, kw: None if torch.isfinite(out(_Z1, _Z2)) else 1 / 0,
        invalid=(Bad({"method": "SimCLR", "settings": _SMALL}, "method"),)),
    "clbook.experiments.new_losses.make_encoder": Spec(valid=fixed(d_in=4, settings=_SMALL, seed=0),
                                                       expect=lambda out, kw: None if out(torch.zeros(3, 4, dtype=torch.float32)).shape == (3, 4) else 1 / 0,
                                                       invalid=(Bad({"d_in": 0, "settings": _SMALL, "seed": 0}, "d_in"),
                                                                Bad({"d_in": 4, "settings": _SMALL, "seed": -1}, "seed"))),
    "clbook.experiments.new_losses.backbone_features": Spec(exempt="a two-line helper on a torch module (eval mode, no gradient); "
                                                                   "tests/unit/test_new_losses_experiment.py trains through it"),
    "clbook.experiments.new_losses.train": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.new_losses.baselines": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.new_losses.run_job": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.new_losses.run": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.new_losses.main": Spec(exempt=EXEMPT_CLI),
    "clbook.experiments.new_losses.jobs": Spec(
        valid=st.fixed_dictionaries({"seeds": st.lists(st.integers(0, 9), min_size=1, max_size=3, unique=True)}).map(
            lambda kw: {"settings": _SMALL, **kw}),
        expect=lambda out, kw: None if len(out) == len(nl.METHODS) * len(kw["seeds"]) + 1 else 1 / 0,
        invalid=(Bad({"settings": _SMALL, "seeds": []}, "seed"), Bad({"settings": _SMALL, "seeds": [0], "methods": ["x"]}, "methods"))),
    "clbook.experiments.new_losses.stored_settings": Spec(valid=fixed(settings=_SMALL), expect=lambda out, kw: None if out["epochs"] == 1 else 1 / 0),
    "clbook.experiments.new_losses.from_result": Spec(valid=fixed(data={"jobs": {}, "settings": {}}), expect=lambda out, kw: None,
                                                      invalid=(Bad({"data": {"rows": []}}, "jobs"),)),
    "clbook.experiments.new_losses.load": Spec(valid=st.sampled_from([{"name": "full"}, {"name": "quick"}]), expect=lambda out, kw: None,
                                               invalid=(Bad({"name": "table1"}, "name"),)),
    "clbook.experiments.new_losses.summary": Spec(valid=fixed(rows=[{"method": "m", "epoch": 1, "linear": 0.5}] * 2),
                                                  expect=lambda out, kw: None if out[("m", 1)][2] == 2 else 1 / 0,
                                                  invalid=(Bad({"rows": [], "value": "accuracy"}, "value"),)),
})


DOMAINS.update({
    # viz (Part I)
    "clbook.viz.alpha.anchor_profile": Spec(
        valid=st.fixed_dictionaries({"name": st.sampled_from(list(losses.FAMILY)), "temperature": st.floats(0.01, 5.0), "n": st.integers(2, 20),
                                     "normalize": st.booleans()}),
        expect=lambda out, kw: None if out[0].shape == out[1].shape == (kw["n"] - 1,) else 1 / 0,
        invalid=(Bad({"name": "SimCLR"}, "name"), Bad({"name": "MINE", "n": 1}, "n"), Bad({"name": "InfoNCE", "temperature": 0.0}, "temperature"))),
    "clbook.viz.alpha.member_weights": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.alpha.row_sums": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.alpha.rules": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.deeplinear.figure2": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.deeplinear.figure2_panel": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.relu2layer.trajectories": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.relu2layer.mode_wins": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.relu2layer.fig3": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.relu2layer.fig3_panel": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.new_losses.accuracy": Spec(exempt=EXEMPT_PLOT),
})


DOMAINS.update({
    # helper cells_A: functions moved out of the chapters of Part I
    "clbook.alpha.solve_rows_numerically": Spec(
        valid=st.fixed_dictionaries({"costs": st.integers(3, 6).map(lambda n: 2 * losses.pair_distances(_Z1[:n], _Z2[:n])[1]),
                                     "regulariser": st.sampled_from(["entropy", "inverse_power", "square"]),
                                     "temperature": st.floats(0.1, 3.0)}),
        expect=lambda out, kw: None if np.allclose(out.sum(axis=1), 1, atol=1e-6) and (out >= 0).all()
        and (np.diag(out) == 0).all() else (_ for _ in ()).throw(AssertionError(out)),
        invalid=(Bad({"costs": np.ones((2, 2)), "temperature": 1.0}, "costs"),
                 Bad({"costs": np.ones((3, 3)), "temperature": 1.0, "row_sums": [1.0, -1.0, 1.0]}, "row_sums"),
                 Bad({"costs": np.ones((3, 3)), "temperature": 0.0}, "temperature"),
                 Bad({"costs": np.ones((3, 3)), "temperature": 1.0, "regulariser": "huber"}, "regulariser"),
                 Bad({"costs": np.ones((3, 3)), "temperature": 1.0, "tol": 0.0}, "tol"))),
})
