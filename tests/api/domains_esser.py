"""API domains of the modules of Part III (Esser et al. 2023): dynamics.ssl, dynamics.stiefel, dynamics.wide, data.views,
experiments.wide (see spec.py)."""
import math

import torch
from hypothesis import strategies as st

import clbook
from clbook.experiments import wide as wide_experiment
from clbook.linalg import haar_orthonormal

from .spec import EXEMPT_CLI, EXEMPT_HEAVY, EXEMPT_PLOT, EXEMPT_RECORD, EXEMPT_WIDGET, Bad, Spec, fixed, generators, scalar, shape, tensors

_g = {"generator": torch.Generator().manual_seed(0)}
_W1, _W2 = haar_orthonormal(6, 3, generator=torch.Generator().manual_seed(1)), haar_orthonormal(6, 2, generator=torch.Generator().manual_seed(2))
_C = torch.diag(torch.tensor([-1.0, 0.5, 1.0], dtype=torch.float64))
_NAN = torch.full((4, 3), math.nan, dtype=torch.float64)


def _stiefel(n: int, p: int):
    """Haar points of St(n, p) from a drawn seed."""
    return st.integers(0, 2**31 - 1).map(lambda s: haar_orthonormal(n, p, generator=torch.Generator().manual_seed(s)))


def _symmetric(d: int):
    return tensors(d, d).map(lambda A: (A + A.T) / 2)


def _views(n: int, d: int):
    return st.fixed_dictionaries({"x": tensors(n, d), "x_pos": tensors(n, d), "x_neg": tensors(n, d)})


def _fields(*names):
    def check(out, kwargs):
        for name in names:
            assert hasattr(out, name), f"no {name}"

    return check


def _gdresult(out, kwargs):
    assert out.products.shape[0] == out.losses.shape[0] == out.steps + 1 and out.stopping_reason in ("steps", "diverged")


def _two(shape1, shape2):
    def check(out, kwargs):
        assert tuple(out[0].shape) == shape1 and tuple(out[1].shape) == shape2

    return check


_weights = {"W1": _W1, "W2": _W2, "C": _C}
_q = {"q0": 0.3 * torch.tensor([0.5, -0.4, 0.6], dtype=torch.float64), "lam": torch.tensor([-0.8, 0.4, 1.0], dtype=torch.float64)}

DOMAINS: dict = {
    # dynamics.ssl
    "clbook.dynamics.ssl.contrastive_loss": Spec(
        valid=st.fixed_dictionaries({"u": tensors(5, 2), "u_pos": tensors(5, 2), "u_neg": tensors(5, 2)}), expect=scalar,
        invalid=(Bad({"u": torch.ones(3, 2), "u_pos": torch.ones(3, 2), "u_neg": torch.ones(4, 2)}, "shape"),
                 Bad({"u": torch.ones(0, 2), "u_pos": torch.ones(0, 2), "u_neg": torch.ones(0, 2)}, "row"),
                 Bad({"u": _NAN, "u_pos": _NAN, "u_neg": _NAN}, "u"), Bad({"u": "a", "u_pos": 1, "u_neg": 1}, "u"))),
    "clbook.dynamics.ssl.noncontrastive_loss": Spec(
        valid=st.fixed_dictionaries({"u": tensors(5, 2), "u_pos": tensors(5, 2)}), expect=scalar,
        invalid=(Bad({"u": torch.ones(3), "u_pos": torch.ones(3)}, "u"), Bad({"u": torch.ones(3, 2), "u_pos": torch.ones(2, 2)}, "shape"))),
    "clbook.dynamics.ssl.trace_matrix": Spec(
        valid=_views(6, 3).map(lambda kw: kw | {"normalize": True}), expect=shape(3, 3),
        invalid=(Bad({"x": torch.ones(3, 2), "x_pos": torch.ones(3, 3)}, "shape"), Bad({"x": _NAN, "x_pos": _NAN}, "x"),
                 Bad({"x": torch.ones(3, 2, dtype=torch.complex128), "x_pos": torch.ones(3, 2)}, "x"))),
    "clbook.dynamics.ssl.trace_loss": Spec(
        valid=st.fixed_dictionaries({"W1": tensors(5, 3), "W2": tensors(5, 2), "C": tensors(3, 3)}), expect=scalar,
        invalid=(Bad({"W1": torch.ones(5, 3), "W2": torch.ones(4, 2), "C": torch.eye(3)}, "W1"),
                 Bad({"W1": torch.ones(5, 3), "W2": torch.ones(5, 2), "C": torch.eye(2)}, "C"))),
    "clbook.dynamics.ssl.euclidean_gradients": Spec(
        valid=st.fixed_dictionaries({"W1": tensors(5, 3), "W2": tensors(5, 2), "C": _symmetric(3)}), expect=_two((5, 3), (5, 2)),
        invalid=(Bad({"W1": torch.ones(5, 3), "W2": torch.ones(5, 2), "C": torch.arange(9.0).reshape(3, 3)}, "C"),)),
    "clbook.dynamics.ssl.scaled_loss": Spec(
        valid=st.fixed_dictionaries({"W1": tensors(5, 3, low=0.1), "W2": tensors(5, 2, low=0.1), "C": tensors(3, 3)}), expect=scalar,
        invalid=(Bad({"W1": torch.zeros(5, 3), "W2": torch.ones(5, 2), "C": torch.eye(3)}, "W1"),)),
    "clbook.dynamics.ssl.linear_closed_form": Spec(
        valid=st.fixed_dictionaries({"theta0": tensors(2, 3), "C": _symmetric(3), "times": st.just(torch.linspace(0, 1, 4))}),
        expect=shape(4, 2, 3),
        invalid=(Bad({"theta0": torch.ones(2, 3), "C": torch.arange(9.0).reshape(3, 3), "times": [0.0]}, "C"),
                 Bad({"theta0": torch.ones(2, 3), "C": torch.eye(3), "times": [1.0, 0.0]}, "times"),
                 Bad({"theta0": torch.ones(2, 3), "C": -torch.eye(3), "times": [0.0, 1e4]}, "times"),
                 Bad({"theta0": torch.ones(2, 3), "C": torch.eye(2), "times": [0.0]}, "C"))),
    "clbook.dynamics.ssl.linear_flow": Spec(
        valid=st.fixed_dictionaries({"theta0": tensors(2, 3), "C": _symmetric(3), "times": st.just(torch.linspace(0, 0.5, 3))}),
        expect=shape(3, 2, 3), max_examples=3,
        invalid=(Bad({"theta0": torch.ones(2, 3), "C": torch.eye(3), "times": [0.0, 1.0], "rtol": 0.0}, "rtol"),
                 Bad({"theta0": torch.ones(2, 3), "C": -torch.eye(3), "times": [0.0, 400.0]}, "times"))),
    "clbook.dynamics.ssl.linear_gd": Spec(
        valid=st.fixed_dictionaries({"theta0": tensors(2, 3), "C": _symmetric(3), "eta": st.floats(1e-3, 0.05), "steps": st.integers(0, 20)}),
        expect=lambda out, kw: tuple(out.shape) == (kw["steps"] + 1, 2, 3),
        invalid=(Bad({"theta0": torch.ones(2, 3), "C": torch.eye(3), "eta": 0.0, "steps": 1}, "eta"),
                 Bad({"theta0": torch.ones(2, 3), "C": torch.eye(3), "eta": 0.1, "steps": -1}, "steps"),
                 Bad({"theta0": torch.ones(2, 3), "C": -torch.eye(3), "eta": 10.0, "steps": 400}, "steps"))),
    "clbook.dynamics.ssl.projector_closed_form": Spec(
        valid=st.fixed_dictionaries({"A": tensors(2, 3), "theta0": tensors(3, 4), "C": _symmetric(4),
                                     "times": st.just(torch.linspace(0, 0.5, 3))}), expect=shape(3, 2, 4),
        invalid=(Bad({"A": torch.ones(2, 2), "theta0": torch.ones(3, 4), "C": torch.eye(4), "times": [0.0]}, "A"),)),
    "clbook.dynamics.ssl.singular_value_ratio": Spec(
        valid=st.fixed_dictionaries({"M": tensors(3, 4, 2, low=0.1)}), expect=shape(3),
        invalid=(Bad({"M": torch.ones(4, 1)}, "M"), Bad({"M": torch.zeros(2, 2)}, "M"))),
    "clbook.dynamics.ssl.optimal_value": Spec(
        valid=st.fixed_dictionaries({"C": _symmetric(4), "z": st.integers(1, 5)}), expect=lambda out, kw: out <= 0,
        invalid=(Bad({"C": torch.eye(3), "z": 0}, "z"), Bad({"C": torch.ones(2, 3), "z": 1}, "C"))),
    "clbook.dynamics.ssl.GDResult": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.ssl.gd_two_layer": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _weights.items()},
                                     "constraint": st.sampled_from(["none", "frobenius", "operator", "scaled", "orthogonal"]),
                                     "eta": st.floats(1e-3, 0.05), "steps": st.integers(0, 20)}), expect=_gdresult,
        invalid=(Bad({**_weights, "eta": 0.1, "steps": 1, "constraint": "spectral"}, "constraint"),
                 Bad({**_weights, "eta": 0.1, "steps": 1, "c1": 0.0}, "c1"),
                 Bad({"W1": 2 * _W1, "W2": _W2, "C": _C, "eta": 0.1, "steps": 1, "constraint": "orthogonal"}, "W1"),
                 Bad({"W1": torch.zeros(6, 3), "W2": _W2, "C": _C, "eta": 0.1, "steps": 1, "constraint": "scaled"}, "W1"))),
    # dynamics.stiefel
    "clbook.dynamics.stiefel.horizontal_project": Spec(
        valid=st.fixed_dictionaries({"W": _stiefel(6, 3), "G": tensors(6, 3)}), expect=shape(6, 3),
        invalid=(Bad({"W": torch.ones(2, 3), "G": torch.ones(2, 3)}, "W"), Bad({"W": _W1, "G": torch.ones(6, 2)}, "G"))),
    "clbook.dynamics.stiefel.tangent_project": Spec(
        valid=st.fixed_dictionaries({"W": _stiefel(6, 3), "G": tensors(6, 3)}), expect=shape(6, 3),
        invalid=(Bad({"W": _W1, "G": _NAN}, "G"),)),
    "clbook.dynamics.stiefel.canonical_gradient": Spec(
        valid=st.fixed_dictionaries({"W": _stiefel(6, 3), "G": tensors(6, 3)}), expect=shape(6, 3),
        invalid=(Bad({"W": "W", "G": torch.ones(6, 3)}, "W"),)),
    "clbook.dynamics.stiefel.projected_step": Spec(
        valid=st.fixed_dictionaries({"W": _stiefel(6, 3), "G": tensors(6, 3), "eta": st.floats(1e-3, 0.1),
                                     "scheme": st.sampled_from(["paper", "euclidean", "canonical"]),
                                     "retraction": st.sampled_from(["qr", "polar"])}),
        expect=lambda out, kw: clbook.linalg.stiefel_error(out) < 1e-12 and None,
        invalid=(Bad({"W": _W1, "G": _W1, "eta": -1.0}, "eta"), Bad({"W": _W1, "G": _W1, "eta": 0.1, "scheme": "x"}, "scheme"))),
    "clbook.dynamics.stiefel.embed_weights": Spec(
        valid=st.fixed_dictionaries({"M0": tensors(3, 2).map(lambda M: 0.9 * M / torch.linalg.matrix_norm(M, 2)),
                                     "h": st.integers(5, 12), "generator": generators()}),
        expect=lambda out, kw: torch.testing.assert_close(out[0].T @ out[1], kw["M0"], atol=1e-12, rtol=0),
        invalid=(Bad({"M0": 2 * torch.eye(3)[:, :1], "h": 10, **_g}, "M0"), Bad({"M0": 0.1 * torch.ones(3, 1), "h": 3, **_g}, "h"),
                 Bad({"M0": 0.1 * torch.ones(3, 1), "h": 8, "generator": None}, "generator"))),
    "clbook.dynamics.stiefel.step": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _weights.items()}, "eta": st.floats(1e-3, 0.1)}),
        expect=_two((6, 3), (6, 2)),
        invalid=(Bad({**_weights, "eta": 0.0}, "eta"), Bad({"W1": 2 * _W1, "W2": _W2, "C": _C, "eta": 0.1}, "W1"))),
    "clbook.dynamics.stiefel.train": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _weights.items()}, "eta": st.floats(1e-3, 0.1),
                                     "steps": st.integers(1, 20), "scheme": st.sampled_from(["paper", "euclidean", "canonical"])}),
        expect=lambda out, kw: tuple(out.M.shape) == (kw["steps"] + 1, 3, 2) and out.constraint_error < 1e-12 and None,
        invalid=(Bad({**_weights, "eta": 0.1, "steps": 0}, "steps"), Bad({**_weights, "eta": 0.1, "steps": 2, "retraction": "x"}, "retraction"))),
    "clbook.dynamics.stiefel.TrainResult": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.stiefel.q_rhs": Spec(
        valid=st.fixed_dictionaries({"q": tensors(3, 2, low=-1, high=1), "lam": tensors(3),
                                     "scheme": st.sampled_from(["paper", "euclidean", "canonical"])}), expect=shape(3, 2),
        invalid=(Bad({"q": torch.ones(2), "lam": torch.ones(3)}, "q"), Bad({"q": torch.ones(3), "lam": torch.ones(3, 1)}, "lam"))),
    "clbook.dynamics.stiefel.solve_q": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _q.items()}, "t": st.just(torch.linspace(0, 1, 5)),
                                     "scheme": st.sampled_from(["paper", "euclidean", "canonical"])}),
        expect=lambda out, kw: tuple(out.q.shape) == (5, 3, 1) and None, max_examples=3,
        invalid=(Bad({**_q, "t": [0.5, 1.0]}, "t"), Bad({**_q, "t": [0.0, 1.0], "atol": -1.0}, "atol"))),
    "clbook.dynamics.stiefel.euler_q": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _q.items()}, "eta": st.floats(1e-3, 0.05), "steps": st.integers(1, 20)}),
        expect=lambda out, kw: tuple(out.q.shape) == (kw["steps"] + 1, 3, 1) and None,
        invalid=(Bad({**_q, "eta": 0.0, "steps": 1}, "eta"), Bad({**_q, "eta": 1e3, "steps": 50}, "eta"))),
    "clbook.dynamics.stiefel.ODEResult": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.stiefel.semi_closed_form": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _q.items()}, "t": st.sampled_from([torch.linspace(0, 2, 5),
                                                                                                       torch.linspace(0, 300, 4)])}),
        expect=shape(None, 3), max_examples=3,
        invalid=(Bad({"q0": torch.tensor([1.0, 0.0, 0.0]), "lam": _q["lam"], "t": [0.0, 1.0]}, "q0"),
                 Bad({"q0": torch.zeros(2), "lam": _q["lam"], "t": [0.0, 1.0]}, "q0"))),
    "clbook.dynamics.stiefel.jacobian_q": Spec(
        valid=st.fixed_dictionaries({"q": tensors(4, low=-1, high=1), "lam": tensors(4)}), expect=shape(4, 4),
        invalid=(Bad({"q": torch.ones(3), "lam": torch.ones(4)}, "q"),)),
    "clbook.dynamics.stiefel.escape_times": Spec(
        valid=st.fixed_dictionaries({"lam": st.just([-0.8, 0.5, 1.0]), "widths": st.just([100, 1000]), "inits": st.integers(1, 4),
                                     "generator": generators()}),
        expect=lambda out, kw: tuple(out.shape) == (2, kw["inits"]) and None, max_examples=2,
        invalid=(Bad({"lam": [0.5, 1.0], "widths": [10], "inits": 2, **_g}, "lam"),
                 Bad({"lam": [-0.5, 1.0], "widths": [2], "inits": 2, **_g}, "widths"),
                 Bad({"lam": [-0.5, 1.0], "widths": 10, "inits": 2, **_g}, "widths"),
                 Bad({"lam": [-0.5, 1.0], "widths": [10], "inits": 2, "level": 1.5, **_g}, "level"))),
    # dynamics.wide
    "clbook.dynamics.wide.phi": Spec(
        valid=st.fixed_dictionaries({"name": st.sampled_from(["linear", "tanh", "softplus2", "relu", "sigmoid"]), "a": tensors(7)}),
        expect=shape(7), invalid=(Bad({"name": "gelu", "a": torch.ones(2)}, "activation"), Bad({"name": "tanh", "a": "x"}, "a"))),
    "clbook.dynamics.wide.dphi": Spec(
        valid=st.fixed_dictionaries({"name": st.sampled_from(["linear", "tanh", "softplus2", "relu", "sigmoid"]), "a": tensors(7)}),
        expect=shape(7), invalid=(Bad({"name": "tanh", "a": torch.tensor([math.inf])}, "a"),)),
    "clbook.dynamics.wide.tangent_kernel": Spec(
        valid=st.fixed_dictionaries({"W1": tensors(8, 3), "W2": tensors(8, 2), "x": tensors(3), "x2": tensors(3),
                                     "activation": st.sampled_from(["linear", "tanh", "relu"])}), expect=shape(2, 2),
        invalid=(Bad({"W1": torch.ones(8, 3), "W2": torch.ones(8, 2), "x": torch.ones(2), "x2": torch.ones(2)}, "x"),)),
    "clbook.dynamics.wide.lemma2_ratio": Spec(
        valid=st.fixed_dictionaries({"h": st.integers(5, 40), "d": st.integers(1, 5), "reps": st.integers(1, 4), "generator": generators()}),
        expect=lambda out, kw: tuple(out.shape) == (kw["reps"],) and None,
        invalid=(Bad({"h": 3, "d": 5, **_g}, "d <= h"), Bad({"h": 1, "d": 1, **_g}, "h"), Bad({"h": 5, "d": 1, "reps": 0, **_g}, "reps"))),
    "clbook.dynamics.wide.InitGap": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.wide.init_gaps": Spec(
        valid=st.fixed_dictionaries({"h": st.integers(5, 40), "x": tensors(4), "z": st.integers(1, 3), "reps": st.integers(1, 3),
                                     "generator": generators()}),
        expect=lambda out, kw: set(out) == {"tanh", "softplus2", "relu", "sigmoid"} and None,
        invalid=(Bad({"h": 2, "x": torch.ones(4), **_g}, "h"), Bad({"h": 8, "x": torch.ones(4), "z": 9, **_g}, "z"),
                 Bad({"h": 8, "x": torch.ones(4), "activations": [], **_g}, "activations"))),
    "clbook.dynamics.wide.init_gap": Spec(
        valid=st.fixed_dictionaries({"h": st.integers(5, 40), "x": tensors(4), "activation": st.sampled_from(["tanh", "relu"]),
                                     "reps": st.integers(1, 3), "generator": generators()}),
        expect=lambda out, kw: tuple(out.gap.shape) == (kw["reps"],) and None,
        invalid=(Bad({"h": 8, "x": torch.ones(4), "activation": "gelu", **_g}, "activation"),)),
    "clbook.dynamics.wide.contrastive_gradients": Spec(
        valid=_views(6, 2).map(lambda kw: kw | {"W1": 0.3 * torch.ones(5, 2), "W2": 0.3 * torch.ones(5, 1), "activation": "tanh"}),
        expect=lambda out, kw: tuple(out[1].shape) == (5, 2) and tuple(out[2].shape) == (5, 1) and None,
        invalid=(Bad({"W1": torch.ones(5, 3), "W2": torch.ones(5, 1), "x": torch.ones(4, 2), "x_pos": torch.ones(4, 2),
                      "x_neg": torch.ones(4, 2), "activation": "tanh"}, "W1"),)),
    "clbook.dynamics.wide.train_nets": Spec(
        valid=_views(8, 2).map(lambda kw: kw | {"h": 6, "steps": 3, "every": 2, "activations": ("tanh", "sigmoid"),
                                                "generator": torch.Generator().manual_seed(0)}),
        expect=lambda out, kw: tuple(out["tanh"][0].shape) == (3, 8, 1) and None, max_examples=3,
        invalid=(Bad({"x": torch.ones(3, 2), "x_pos": torch.ones(3, 2), "x_neg": torch.ones(3, 2), "h": 1, **_g}, "h"),
                 Bad({"x": torch.ones(3, 2), "x_pos": torch.ones(3, 2), "x_neg": torch.ones(3, 2), "h": 4, "every": 0, **_g}, "every"))),
    "clbook.dynamics.wide.TrainPair": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.wide.train_pair": Spec(
        valid=_views(8, 2).map(lambda kw: kw | {"h": 6, "steps": 2, "every": 1, "generator": torch.Generator().manual_seed(0)}),
        expect=lambda out, kw: tuple(out.gap.shape) == (3,) and None, max_examples=2,
        invalid=(Bad({"x": torch.ones(3, 2), "x_pos": torch.ones(3, 2), "x_neg": torch.ones(3, 2), "h": 4, "eta": -1.0, **_g}, "eta"),)),
    "clbook.dynamics.wide.gap": Spec(
        valid=st.fixed_dictionaries({"u_nonlinear": tensors(3, 5, 2), "u_linear": tensors(3, 5, 2)}), expect=shape(3),
        invalid=(Bad({"u_nonlinear": torch.ones(5, 2), "u_linear": torch.ones(5, 1)}, "u_nonlinear"),)),
    # data.views
    "clbook.data.views.Views": Spec(exempt=EXEMPT_RECORD),
    "clbook.data.views.gaussian_views": Spec(
        valid=st.fixed_dictionaries({"x": tensors(6, 3), "variance": st.floats(0, 2), "generator": generators()}),
        expect=lambda out, kw: tuple(out.negatives.shape) == (6, 3) and None,
        invalid=(Bad({"x": torch.ones(1, 3), **_g}, "n"), Bad({"x": torch.ones(4, 3), "variance": -1.0, **_g}, "variance"),
                 Bad({"x": _NAN, **_g}, "x"), Bad({"x": torch.ones(4, 3), "generator": None}, "generator"))),
    "clbook.data.views.moons_views": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(4, 30), "noise": st.floats(0, 0.2), "seed": st.integers(0, 99)}),
        expect=lambda out, kw: tuple(out.anchors.shape) == (kw["n"], 2) and None,
        invalid=(Bad({"n": 2}, "n"), Bad({"n": 10, "noise": -0.1}, "noise"), Bad({"n": 10, "seed": -1}, "seed"))),
    "clbook.data.views.gaussian_anchors": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(2, 9), "scales": tensors(3, low=0, high=2), "generator": generators()}),
        expect=lambda out, kw: tuple(out.shape) == (kw["n"], 3) and None,
        invalid=(Bad({"n": 5, "scales": [1.0, -1.0], **_g}, "scales"), Bad({"n": 5, "scales": [1.0, math.nan], **_g}, "scales"),
                 Bad({"n": 5, "scales": [1.0], "mean": [0.0, 1.0], **_g}, "mean"), Bad({"n": 1, "scales": [1.0], **_g}, "n"))),
    # viz.ssl, viz.wide, viz.stiefel
    "clbook.viz.ssl.singular_values": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.ssl.fig1": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.ssl.fig1_panel": Spec(exempt=EXEMPT_WIDGET),
    "clbook.viz.ssl.moons_run": Spec(
        valid=st.fixed_dictionaries({"C": st.just(torch.diag(torch.tensor([-0.8, 0.2], dtype=torch.float64))),
                                     "constraint": st.sampled_from(["none", "orthogonal", "scaled"]), "z": st.integers(1, 2),
                                     "seed": st.integers(0, 5), "steps": st.integers(0, 20)}),
        expect=lambda out, kw: out.products.shape[-1] == kw["z"] and None,
        invalid=(Bad({"C": torch.eye(2), "constraint": "x", "z": 1, "seed": 0, "steps": 2}, "constraint"),
                 Bad({"C": torch.eye(2), "constraint": "none", "z": 1, "seed": -1, "steps": 2}, "seed"))),
    "clbook.viz.wide.gap_panel": Spec(exempt=EXEMPT_WIDGET),
    "clbook.viz.wide.fig2": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.stiefel.fig3": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.stiefel.theorem3_panel": Spec(exempt=EXEMPT_WIDGET),
    # experiments.wide
    "clbook.experiments.wide.fig2_job": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.wide.run": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.wide.main": Spec(exempt=EXEMPT_CLI),
    "clbook.experiments.wide.jobs": Spec(
        valid=st.fixed_dictionaries({"params": st.just(dict(wide_experiment.QUICK))}),
        expect=lambda out, kw: len(out) == 2 and None,
        invalid=(Bad({"params": {**dict(wide_experiment.QUICK), "widths": [1]}}, "widths"),
                 Bad({"params": {**dict(wide_experiment.QUICK), "activations": ["gelu"]}}, "activation"))),
    "clbook.experiments.wide.load": Spec(valid=fixed(), expect=lambda out, kw: out["complete"] and None,
                                         invalid=(Bad({"name": "../x"}, "name"), Bad({"name": "nope"}, "nope", (FileNotFoundError,)))),
    "clbook.experiments.wide.gaps": Spec(valid=st.just({"data": None}).map(lambda kw: {"data": wide_experiment.load()}),
                                         expect=lambda out, kw: len(out[0]) == 51 and None, max_examples=1,
                                         invalid=(Bad({"data": {"complete": False}}, "data"),)),
}
