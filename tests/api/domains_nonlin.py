"""API domains of the modules of Part II (see spec.py): Tian (2023), the role of nonlinearity, Chapters 5-10."""
import math

import torch
from hypothesis import strategies as st

from clbook.data import hierarchical as hg
from clbook.data import latent
from clbook.dynamics import critical
from clbook.dynamics import twolayer as tl
from clbook.experiments import hierarchical as hx

from .spec import (
    EXEMPT_CLI,
    EXEMPT_HEAVY,
    EXEMPT_PLOT,
    EXEMPT_RECORD,
    Bad,
    Spec,
    bad,
    fixed,
    generators,
    scalar,
    shape,
    tensors,
)

F64 = torch.float64
_g = {"generator": torch.Generator().manual_seed(0)}
_NAN = torch.tensor([0.0, float("nan")], dtype=F64)
_U = torch.linalg.qr(torch.randn(4, 4, generator=torch.Generator().manual_seed(1), dtype=F64))[0]
_CAT = latent.latent_categorical(_U, torch.full((4,), 0.25, dtype=F64))
_SUM = latent.latent_summation(_U, 0.2)
_X = torch.randn(12, 3, generator=torch.Generator().manual_seed(2), dtype=F64)
_P = torch.full((12,), 1 / 12, dtype=F64)
_ALPHA = torch.exp(-torch.cdist(_X, _X) ** 2)
_MIX = critical.three_clusters(0.3)
_A_MIX = lambda v: critical.mixture_gated_covariance(v, _MIX)  # noqa: E731
_W2 = torch.tensor([0.6, 0.8], dtype=F64)
_WORLD = hg.make_worlds([1], candidates_per_position=2, num_generators=6)
_TOK = hg.sample_tokens(_WORLD, 8, generator=torch.Generator().manual_seed(0))
_TOKENS = tl.make_latent_tokens(num_fields=2, num_tokens=3, seed=0)
_ROWS = [dict(activation=a, loss=loss, bn="mean", beta=beta, candidates=P, seed=seed, chi_plus=0.5 + 0.01 * seed, chi_minus=0.1,
              zeta=1.0, final_loss=1.0, stopped_at=None)
         for a in hx.ACTIVATIONS for loss in hx.LOSSES for beta in (1, 2, 5, 10) for P in (1, 3, 5, 10) for seed in (1, 2)]


def _unit(n):
    return tensors(n).map(lambda w: w / w.norm().clamp_min(1e-6))


def _is_model(out, kw):
    assert isinstance(out, latent.LatentModel) and abs(float(out.probs.sum()) - 1) < 1e-12


def _prob(out, kw):
    assert 0 <= out <= 1


DOMAINS = {
    # kernels
    "clbook.kernels.gaussian_alpha": Spec(
        valid=st.fixed_dictionaries({"g": tensors(6, 2), "temperature": st.floats(0.1, 5.0)}), expect=shape(6, 6),
        invalid=(Bad({"g": torch.ones(3, 1), "temperature": 0.0}, "temperature"), Bad({"g": "g", "temperature": 1.0}, "g"),
                 Bad({"g": _NAN, "temperature": 1.0}, "g"), Bad({"g": torch.ones(2, 2, 2), "temperature": 1.0}, "g"))),
    "clbook.kernels.uniform_alpha": Spec(valid=st.fixed_dictionaries({"n": st.integers(1, 6)}), expect=lambda o, kw: o.shape == (kw["n"],) * 2,
                                         invalid=(Bad({"n": 0}, "n"), Bad({"n": 2.5}, "n"), Bad({"n": 2, "dtype": torch.int64}, "dtype"))),
    "clbook.kernels.multi_indices": Spec(valid=st.fixed_dictionaries({"dim": st.integers(1, 3), "terms": st.integers(1, 4)}),
                                         expect=lambda o, kw: o.shape == (kw["terms"] ** kw["dim"], kw["dim"]),
                                         invalid=(Bad({"dim": 0, "terms": 2}, "dim"), Bad({"dim": 2, "terms": 0}, "terms"),
                                                  Bad({"dim": 6, "terms": 20}, "terms"))),
    "clbook.kernels.gaussian_log_features": Spec(
        valid=st.fixed_dictionaries({"g": tensors(5, 2), "temperature": st.floats(0.3, 3.0), "terms": st.integers(1, 6),
                                     "shift": st.just([-10.0, -10.0]), "tolerance": st.just(None)}), expect=shape(5, None),
        invalid=(Bad({"g": torch.ones(3, 1), "temperature": 1.0, "terms": 3, "shift": [2.0]}, "shift"),
                 Bad({"g": torch.ones(3, 2), "temperature": 1.0, "terms": 3, "shift": [0.0]}, "shift"),
                 Bad({"g": torch.ones(3, 1), "temperature": -1.0, "terms": 3}, "temperature"),
                 Bad({"g": torch.ones(3, 1), "temperature": 1.0, "terms": 0}, "terms"),
                 Bad({"g": torch.ones(3, 1), "temperature": 1.0, "terms": 3, "tolerance": -1.0}, "tolerance"))),
    "clbook.kernels.gaussian_features": Spec(
        valid=st.fixed_dictionaries({"g": tensors(4, 1), "temperature": st.floats(0.3, 3.0), "terms": st.integers(1, 8),
                                     "tolerance": st.just(None)}),
        expect=lambda o, kw: bool((o >= 0).all()),
        invalid=(Bad({"g": _NAN, "temperature": 1.0, "terms": 3}, "g"),
                 Bad({"g": torch.ones(3, 1), "temperature": 1.0, "terms": 3, "tolerance": "x"}, "tolerance"))),
    "clbook.kernels.uniform_features": Spec(valid=st.fixed_dictionaries({"n": st.integers(1, 5)}), expect=shape(None, 1),
                                            invalid=(Bad({"n": -1}, "n"),)),
    "clbook.kernels.log_kernel_from_features": Spec(
        valid=st.fixed_dictionaries({"log_a": tensors(3, 4), "log_b": tensors(2, 4)}), expect=shape(3, 2),
        invalid=(Bad({"log_a": torch.zeros(3, 4), "log_b": torch.zeros(2, 5)}, "features"),
                 Bad({"log_a": torch.full((2, 2), float("nan")), "log_b": torch.zeros(2, 2)}, "log_a"),
                 Bad({"log_a": torch.zeros(2, 2, dtype=F64), "log_b": torch.zeros(2, 2, dtype=torch.float32)}, "log_b"))),
    "clbook.kernels.adjusted_densities": Spec(
        valid=st.fixed_dictionaries({"features": tensors(5, 3, low=0.0, high=2.0), "weights": st.just(torch.full((5,), 0.2, dtype=F64))}),
        expect=lambda o, kw: o[1].shape == (3, 5),
        invalid=(Bad({"features": -torch.ones(2, 2, dtype=F64), "weights": torch.full((2,), 0.5, dtype=F64)}, "features"),
                 Bad({"features": torch.ones(2, 2, dtype=F64), "weights": torch.full((2,), 0.7, dtype=F64)}, "weights"),
                 Bad({"features": torch.ones(2, 2, dtype=F64), "weights": torch.full((3,), 1 / 3, dtype=F64)}, "weights"))),
    "clbook.kernels.variance_limit": Spec(
        valid=st.fixed_dictionaries({"gbar": tensors(5, 2), "weights": st.just(torch.full((5,), 0.2, dtype=F64)),
                                     "features": tensors(5, 3, low=0.0, high=1.0)}), expect=shape(2, 2),
        invalid=(Bad({"gbar": torch.ones(3, 1, dtype=F64), "weights": torch.full((3,), 1 / 3, dtype=F64),
                      "features": torch.ones(4, 2, dtype=F64)}, "features"),)),
    "clbook.kernels.pairwise_limit": Spec(
        valid=st.fixed_dictionaries({"gbar": tensors(4, 2), "weights": st.just(torch.full((4,), 0.25, dtype=F64)),
                                     "kernel": tensors(4, 4, low=0.0, high=1.0)}), expect=shape(2, 2),
        invalid=(Bad({"gbar": torch.ones(1, 2, dtype=F64), "weights": torch.ones(1, dtype=F64), "kernel": torch.ones(1, 1, dtype=F64)}, "gbar"),
                 Bad({"gbar": torch.ones(3, 2, dtype=F64), "weights": torch.full((3,), 1 / 3, dtype=F64),
                      "kernel": torch.ones(2, 2, dtype=F64)}, "kernel"))),
    "clbook.kernels.batch_min_eigenvalues": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(2, 8), "reps": st.integers(1, 3), "scales": st.just([1.0, 0.5]),
                                     "noise": st.floats(0.0, 1.0), "generator": generators()}),
        expect=lambda o, kw: o.shape == (kw["reps"],),
        invalid=(Bad({"n": 1, "reps": 2, "scales": [1.0], "noise": 0.5, **_g}, "n"),
                 Bad({"n": 4, "reps": 2, "scales": [1.0, -1.0], "noise": 0.5, **_g}, "scales"),
                 Bad({"n": 4, "reps": 2, "scales": [1.0], "noise": -0.5, **_g}, "noise"),
                 Bad({"n": 4, "reps": 2, "scales": [1.0], "noise": 0.5, "generator": 0}, "generator"))),
    "clbook.kernels.relu_batch_covariances": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(2, 8), "reps": st.integers(1, 3), "atoms": st.just(_X[:4]),
                                     "weights": st.just([0.4, 0.3, 0.2, 0.1]), "w": st.just([0.6, 0.8, 0.0]),
                                     "noise": st.floats(0.0, 1.0), "temperature": st.floats(0.1, 2.0),
                                     "generator": generators()}),
        expect=lambda o, kw: o.shape == (kw["reps"], 2) and bool(torch.isfinite(o).all()),
        invalid=(Bad({"n": 1, "reps": 2, "atoms": _X[:4], "weights": [0.25] * 4, "w": [1.0] * 3, "noise": 0.1,
                      "temperature": 1.0, **_g}, "n"),
                 Bad({"n": 4, "reps": 2, "atoms": _X[:4], "weights": [0.5] * 4, "w": [1.0] * 3, "noise": 0.1,
                      "temperature": 1.0, **_g}, "weights"),
                 Bad({"n": 4, "reps": 2, "atoms": _X[:4], "weights": [0.25] * 4, "w": [1.0] * 2, "noise": 0.1,
                      "temperature": 1.0, **_g}, "w"),
                 Bad({"n": 4, "reps": 2, "atoms": _X[:4], "weights": [0.25] * 4, "w": [1.0] * 3, "noise": 0.1,
                      "temperature": 0.0, **_g}, "temperature"))),
    # data.latent
    "clbook.data.latent.LatentModel": Spec(exempt=EXEMPT_RECORD),
    "clbook.data.latent.latent_categorical": Spec(
        valid=st.fixed_dictionaries({"U": st.just(_U[:, :3]), "probs": st.just([0.2, 0.3, 0.5])}), expect=_is_model,
        invalid=(Bad({"U": _U, "probs": [0.5, 0.5, 0.5, 0.5]}, "probs"), Bad({"U": torch.ones(2, 3, dtype=F64), "probs": [1.0]}, "U"),
                 Bad({"U": "U", "probs": [1.0]}, "U"))),
    "clbook.data.latent.latent_summation": Spec(
        valid=st.fixed_dictionaries({"U": st.just(_U), "q": st.floats(0.05, 0.95)}), expect=_is_model,
        invalid=(Bad({"U": _U, "q": 1.0}, "q"), Bad({"U": _U, "q": [0.2, 0.3]}, "q"), Bad({"U": _U, "q": 0.3, "scales": [1, -1, 1, 1]}, "scales"),
                 Bad({"U": torch.eye(17, dtype=F64), "q": 0.2}, "M"), Bad({"U": _U * float("nan"), "q": 0.2}, "U"))),
    "clbook.data.latent.sample": Spec(valid=st.fixed_dictionaries({"model": st.sampled_from([_CAT, _SUM]), "n": st.integers(1, 9),
                                                                  "generator": generators()}),
                                      expect=lambda o, kw: o.shape == (kw["n"], 4),
                                      invalid=(Bad({"model": "m", "n": 2, **_g}, "model"), Bad({"model": _CAT, "n": 0, **_g}, "n"),
                                               Bad({"model": _CAT, "n": 2, "generator": None}, "generator"))),
    "clbook.data.latent.eq8_prediction": Spec(valid=st.fixed_dictionaries({"model": st.just(_CAT), "m": st.integers(0, 3)}), expect=shape(4, 4),
                                              invalid=(Bad({"model": _SUM, "m": 0}, "model"), Bad({"model": _CAT, "m": 4}, "m"))),
    "clbook.data.latent.eq9_prediction": Spec(valid=st.fixed_dictionaries({"model": st.just(_SUM), "m": st.integers(0, 3)}), expect=shape(4, 4),
                                              invalid=(Bad({"model": _CAT, "m": 0}, "model"), Bad({"model": _SUM, "m": -1}, "m"))),
    "clbook.data.latent.summation_threshold": Spec(valid=fixed(), expect=lambda o, kw: abs((1 - o) ** 2 - o) < 1e-15),
    # data.hierarchical
    "clbook.data.hierarchical.TokenWorlds": Spec(exempt=EXEMPT_RECORD),
    "clbook.data.hierarchical.make_worlds": Spec(
        valid=st.fixed_dictionaries({"seeds": st.lists(st.integers(0, 99), min_size=1, max_size=2), "num_generators": st.integers(1, 8),
                                     "zeta": st.floats(0.5, 5.0)}),
        expect=lambda o, kw: o.patterns.shape[:2] == (len(kw["seeds"]), kw["num_generators"]),
        invalid=(Bad({"seeds": []}, "seeds"), Bad({"seeds": [1], "candidates_per_position": 30}, "candidates_per_position"),
                 Bad({"seeds": [1], "zeta": 0.0}, "zeta"), Bad({"seeds": [-1]}, "seeds"))),
    "clbook.data.hierarchical.sample_tokens": Spec(
        valid=st.fixed_dictionaries({"worlds": st.just(_WORLD), "n": st.integers(1, 6), "generator": generators(),
                                     "aug_degree": st.integers(0, 6)}), expect=lambda o, kw: o[0].shape == (1, kw["n"], 10),
        invalid=(Bad({"worlds": "w", "n": 2, **_g}, "worlds"), Bad({"worlds": _WORLD, "n": 0, **_g}, "n"),
                 Bad({"worlds": _WORLD, "n": 2, "generator": 1}, "generator"), Bad({"worlds": _WORLD, "n": 2, "aug_degree": -1, **_g}, "aug_degree"))),
    "clbook.data.hierarchical.sample_views": Spec(
        valid=st.fixed_dictionaries({"worlds": st.just(_WORLD), "n": st.integers(1, 4), "generator": generators()}),
        expect=lambda o, kw: o[0].shape == (1, kw["n"], 10, 20), invalid=(Bad({"worlds": _WORLD, "n": -2, **_g}, "n"),)),
    "clbook.data.hierarchical.matching_scores": Spec(
        valid=st.fixed_dictionaries({"weights": tensors(10, 3, 20), "used": st.just(_WORLD.used_tokens()[0]),
                                     "absolute": st.booleans()}), expect=lambda o, kw: -1 <= float(o[0]) <= 1,
        invalid=(Bad({"weights": torch.ones(3, 20, dtype=F64), "used": _WORLD.used_tokens()[0]}, "weights"),
                 Bad({"weights": torch.ones(10, 3, 20, dtype=F64), "used": torch.ones(10, 20)}, "used"),
                 Bad({"weights": torch.ones(10, 3, 20, dtype=F64), "used": torch.ones(9, 20, dtype=torch.bool)}, "used"))),
}

_ACT = st.sampled_from(["linear", "relu", "leaky_relu", "quadratic"])
DOMAINS.update({
    # dynamics.onelayer
    "clbook.dynamics.onelayer.activation": Spec(valid=st.fixed_dictionaries({"t": tensors(7), "name": _ACT}), expect=shape(7),
                                                invalid=(Bad({"t": torch.ones(2), "name": "tanh"}, "activation"),
                                                         Bad({"t": [1.0], "name": "relu"}, "t"),
                                                         Bad({"t": torch.ones(2), "name": "leaky_relu", "slope": float("nan")}, "slope"))),
    "clbook.dynamics.onelayer.activation_derivative": Spec(
        valid=st.fixed_dictionaries({"t": tensors(7), "name": _ACT}), expect=shape(7),
        invalid=(Bad({"t": torch.ones(2), "name": "relu", "tol": -1.0}, "tol"), Bad({"t": torch.ones(2, dtype=torch.int64), "name": "relu"}, "t"))),
    "clbook.dynamics.onelayer.homogeneity_degree": Spec(valid=st.fixed_dictionaries({"name": _ACT}), expect=lambda o, kw: o in (1, 2),
                                                        invalid=(Bad({"name": "gelu"}, "activation"),)),
    "clbook.dynamics.onelayer.gated_inputs": Spec(
        valid=st.fixed_dictionaries({"W": tensors(2, 3), "x": tensors(5, 3), "activation": _ACT}), expect=shape(2, 5, 3),
        invalid=(Bad({"W": torch.ones(2, 3, dtype=F64), "x": torch.ones(5, 4, dtype=F64)}, "x"),
                 Bad({"W": torch.ones(2, 2, 3, dtype=F64), "x": torch.ones(5, 3, dtype=F64)}, "W"))),
    "clbook.dynamics.onelayer.gated_covariance": Spec(
        valid=st.fixed_dictionaries({"W": tensors(2, 3), "atoms": st.just(_X), "probs": st.just(_P), "activation": _ACT}), expect=shape(2, 3, 3),
        invalid=(Bad({"W": torch.ones(3, dtype=F64), "atoms": _X, "probs": _P * 2}, "probs"),
                 Bad({"W": torch.ones(4, dtype=F64), "atoms": _X}, "atoms"))),
    "clbook.dynamics.onelayer.gated_covariance_batch": Spec(
        valid=st.fixed_dictionaries({"w": _unit(3), "x1": st.just(_X), "x2": st.just(_X + 0.1), "alpha": st.just(_ALPHA), "activation": _ACT}),
        expect=shape(3, 3),
        invalid=(Bad({"w": torch.ones(3, dtype=F64), "x1": _X, "x2": _X[:5], "alpha": _ALPHA}, "x2"),
                 Bad({"w": torch.ones(3, dtype=F64), "x1": _X, "x2": _X, "alpha": _ALPHA[:5, :5]}, "alpha"))),
    "clbook.dynamics.onelayer.energy": Spec(
        valid=st.fixed_dictionaries({"W": tensors(2, 3), "atoms": st.just(_X), "activation": _ACT}), expect=shape(2),
        invalid=(Bad({"W": torch.ones(2, 3, dtype=F64), "atoms": _X, "activation": "x"}, "activation"),)),
    "clbook.dynamics.onelayer.energy_batch": Spec(
        valid=st.fixed_dictionaries({"w": _unit(3), "x1": st.just(_X), "x2": st.just(_X + 0.1), "alpha": st.just(_ALPHA)}), expect=scalar,
        invalid=(Bad({"w": torch.ones(4, dtype=F64), "x1": _X, "x2": _X, "alpha": _ALPHA}, "x1"),)),
    "clbook.dynamics.onelayer.projected_rhs": Spec(
        valid=st.fixed_dictionaries({"W": tensors(3, 3), "atoms": st.just(_X), "probs": st.just(_P), "activation": _ACT}), expect=shape(3, 3),
        invalid=(Bad({"W": torch.ones(3, dtype=F64), "atoms": _X[:, :2]}, "atoms"),)),
    "clbook.dynamics.onelayer.ProjectedAscent": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.onelayer.projected_ascent": Spec(
        valid=st.fixed_dictionaries({"W0": tensors(3, 3), "atoms": st.just(_X), "max_steps": st.integers(1, 20)}),
        expect=lambda o, kw: o.W.shape == (3, 3),
        invalid=(Bad({"W0": torch.ones(2, 3, dtype=F64), "atoms": _X, "step": 0.0}, "step"),
                 Bad({"W0": torch.ones(2, 3, dtype=F64), "atoms": _X, "max_steps": 0}, "max_steps"))),
    "clbook.dynamics.onelayer.LMEReport": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.onelayer.lme_report": Spec(valid=st.fixed_dictionaries({"w": st.sampled_from(list(_U.T)), "atoms": st.just(_SUM.atoms),
                                                                             "probs": st.just(_SUM.probs)}),
                                                expect=lambda o, kw: o.is_lme,
                                                invalid=(Bad({"w": torch.ones(2, 2, dtype=F64), "atoms": _X}, "w"),)),
    "clbook.dynamics.onelayer.match_patterns": Spec(
        valid=st.fixed_dictionaries({"W": tensors(5, 4), "U": st.just(_U)}), expect=lambda o, kw: o[0].shape == (5,) and o[1].shape == (4,),
        invalid=(Bad({"W": torch.ones(2, 4, dtype=F64), "U": "U"}, "U"),)),
    "clbook.dynamics.onelayer.circle_landscape": Spec(
        valid=st.fixed_dictionaries({"theta": tensors(9, low=-3.1, high=3.1), "points": st.just(_X[:, :2]), "activation": _ACT}),
        expect=shape(9), invalid=(Bad({"theta": torch.ones(2, 2, dtype=F64), "points": _X[:, :2]}, "theta"),)),
    "clbook.dynamics.onelayer.periodic_local_maxima": Spec(
        valid=st.fixed_dictionaries({"values": tensors(12)}), expect=lambda o, kw: o.ndim == 1,
        invalid=(Bad({"values": torch.ones(2, dtype=F64)}, "values"), Bad({"values": torch.ones(5, dtype=F64), "prominence": -1.0}, "prominence"))),
    # dynamics.critical
    "clbook.dynamics.critical.Mixture": Spec(exempt="a plain record of a mixture's parameters; every function that takes one validates it "
                                                    "(bad mixtures are in the specs of those functions)"),
    "clbook.dynamics.critical.three_clusters": Spec(
        valid=st.fixed_dictionaries({"sigma": st.floats(0.05, 1.0), "scale": st.floats(0.5, 2.0)}), expect=lambda o, kw: o.means.shape == (3, 2),
        invalid=(Bad({"sigma": -1.0}, "sigma"), Bad({"sigma": 0.3, "weights": (0.5, 0.5)}, "weights"),
                 Bad({"sigma": 0.3, "weights": (0.5, -0.5, 1.0)}, "weights"))),
    "clbook.dynamics.critical.mixture_gated_covariance": Spec(
        valid=st.fixed_dictionaries({"w": tensors(2), "mix": st.just(_MIX), "activation": st.sampled_from(["relu", "linear"])}), expect=shape(2, 2),
        invalid=(Bad({"w": torch.zeros(2, dtype=F64), "mix": _MIX}, "w"), Bad({"w": torch.ones(3, dtype=F64), "mix": _MIX}, "w"),
                 Bad({"w": _W2, "mix": "mix"}, "mix"), Bad({"w": _W2, "mix": _MIX, "activation": "tanh"}, "activation"))),
    "clbook.dynamics.critical.mixture_plane_moment": Spec(valid=st.fixed_dictionaries({"w": _unit(2), "mix": st.just(_MIX)}), expect=shape(2, 2),
                                                          invalid=(Bad({"w": _W2, "mix": critical.Mixture(_MIX.means, _MIX.weights * 2, 0.3)}, "weights"),)),
    "clbook.dynamics.critical.mixture_mean_output": Spec(valid=st.fixed_dictionaries({"w": _unit(2), "mix": st.just(_MIX)}), expect=scalar,
                                                         invalid=(Bad({"w": _W2, "mix": critical.Mixture(_MIX.means, _MIX.weights, 0.0)}, "sigma"),)),
    "clbook.dynamics.critical.mixture_z0": Spec(valid=st.fixed_dictionaries({"w": _unit(2), "mix": st.just(_MIX), "temperature": st.floats(0.05, 3)}),
                                                expect=lambda o, kw: 0 <= float(o) <= 1,
                                                invalid=(Bad({"w": _W2, "mix": _MIX, "temperature": 0.0}, "temperature"),)),
    "clbook.dynamics.critical.mixture_gaussian_factor": Spec(
        valid=st.fixed_dictionaries({"w": _unit(2), "mix": st.just(_MIX), "temperature": st.floats(0.05, 3)}), expect=scalar,
        invalid=(Bad({"w": _W2, "mix": _MIX, "temperature": -1.0}, "temperature"),)),
    "clbook.dynamics.critical.plane_density_max_2d": Spec(
        valid=st.fixed_dictionaries({"w": _unit(2), "mix": st.just(_MIX), "points": st.integers(3, 200)}), expect=lambda o, kw: o >= 0,
        invalid=(Bad({"w": _W2, "mix": _MIX, "points": 2}, "points"), Bad({"w": _W2, "mix": _MIX, "half_width": 0.0}, "half_width"))),
    "clbook.dynamics.critical.projected_field": Spec(
        valid=st.fixed_dictionaries({"w": _unit(2), "A_fn": st.just(_A_MIX)}), expect=lambda o, kw: abs(float(o @ kw["w"])) < 1e-10,
        invalid=(Bad({"w": _W2, "A_fn": "A"}, "A_fn"), Bad({"w": _W2, "A_fn": lambda v: torch.eye(3, dtype=F64)}, "A_fn"))),
    "clbook.dynamics.critical.tangent_basis": Spec(valid=st.fixed_dictionaries({"w": tensors(4)}), expect=shape(4, 3),
                                                   invalid=(Bad({"w": torch.ones(1, dtype=F64)}, "w"),)),
    "clbook.dynamics.critical.StabilityReport": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.critical.stability_report": Spec(
        valid=st.fixed_dictionaries({"w": _unit(2), "A_fn": st.just(_A_MIX)}), max_examples=2,
        invalid=(Bad({"w": _W2, "A_fn": 3}, "A_fn"),)),
    "clbook.dynamics.critical.find_critical": Spec(
        valid=st.fixed_dictionaries({"w0": _unit(2), "A_fn": st.just(_A_MIX), "max_steps": st.integers(1, 30)}), expect=shape(2),
        invalid=(Bad({"w0": _W2, "A_fn": _A_MIX, "tol": 0.0}, "tol"), Bad({"w0": torch.zeros(2, dtype=F64), "A_fn": _A_MIX}, "w0"))),
    "clbook.dynamics.critical.perturb_and_return": Spec(
        valid=st.fixed_dictionaries({"w_star": _unit(2), "A_fn": st.just(_A_MIX), "eps": st.floats(0.01, 0.5), "directions": st.integers(1, 3),
                                     "generator": generators(), "steps": st.integers(1, 10)}), max_examples=2,
        expect=lambda o, kw: o.shape == (kw["directions"],),
        invalid=(Bad({"w_star": _W2, "A_fn": _A_MIX, "eps": 1.5, "directions": 1, **_g}, "eps"),
                 Bad({"w_star": _W2, "A_fn": _A_MIX, "eps": 0.1, "directions": 0, **_g}, "directions"),
                 Bad({"w_star": _W2, "A_fn": _A_MIX, "eps": 0.1, "directions": 1, "generator": 3}, "generator"))),
    "clbook.dynamics.critical.PowerIteration": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.critical.power_iteration": Spec(
        valid=st.fixed_dictionaries({"w0": _unit(2), "A_fn": st.just(_A_MIX), "steps": st.integers(1, 10), "shift": st.floats(0, 2)}),
        expect=lambda o, kw: o.W.shape == (kw["steps"] + 1, 2),
        invalid=(Bad({"w0": _W2, "A_fn": _A_MIX, "steps": 0}, "steps"), Bad({"w0": _W2, "A_fn": _A_MIX, "shift": -1.0}, "shift"),
                 Bad({"w0": torch.ones(1, dtype=F64), "A_fn": _A_MIX}, "w0"))),
    "clbook.dynamics.critical.pattern_power_iterations": Spec(
        valid=st.fixed_dictionaries({"eta": st.floats(0.0, 0.3), "generator": generators(), "d": st.integers(2, 4),
                                     "steps": st.integers(1, 5), "activation": st.sampled_from(["relu", "linear"])}),
        expect=lambda o, kw: o[0].shape == (kw["d"], kw["d"]) and len(o[1]) == kw["d"], max_examples=5,
        invalid=(Bad({"eta": -1.0, **_g}, "eta"), Bad({"eta": 0.1, "q": 0.0, **_g}, "q"),
                 Bad({"eta": 0.1, "d": 3, "activation": "tanh", **_g}, "activation"), Bad({"eta": 0.1, "generator": 1}, "generator"))),
    "clbook.dynamics.critical.perturbed_patterns": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(1, 6), "eta": st.floats(0, 1), "generator": generators()}),
        expect=lambda o, kw: o.shape == (kw["d"], kw["d"]),
        invalid=(Bad({"d": 0, "eta": 0.1, **_g}, "d"), Bad({"d": 3, "eta": -0.1, **_g}, "eta"), Bad({"d": 3, "eta": 0.1, "generator": "g"}, "generator"))),
    "clbook.dynamics.critical.lemma7_terms": Spec(
        valid=st.fixed_dictionaries({"A": tensors(4, 3, 3).map(lambda g: g @ g.transpose(1, 2) + torch.eye(3, dtype=F64)),
                                     "w": tensors(4, 3).map(lambda w: w / w.norm(dim=1, keepdim=True).clamp_min(1e-6))}),
        expect=lambda o, kw: o["c"].shape == (4,),
        invalid=(Bad({"A": torch.eye(2, dtype=F64)[None], "w": torch.ones(1, 3, dtype=F64)}, "w"),)),
    "clbook.dynamics.critical.jitter_landscape": Spec(
        valid=st.fixed_dictionaries({"theta": tensors(8), "angles": tensors(3), "jitter": st.floats(0, math.pi)}), expect=shape(8),
        invalid=(Bad({"theta": torch.zeros(3, dtype=F64), "angles": torch.zeros(2, dtype=F64), "jitter": 4.0}, "jitter"),)),
    "clbook.dynamics.critical.cyclic_landscape": Spec(
        valid=st.fixed_dictionaries({"theta": tensors(8), "angles": tensors(3), "order": st.integers(1, 6)}), expect=shape(8),
        invalid=(Bad({"theta": torch.zeros(3, dtype=F64), "angles": torch.zeros(2, dtype=F64), "order": 0}, "order"),)),
    "clbook.dynamics.critical.mixture_grid": Spec(
        valid=st.fixed_dictionaries({"mix": st.just(_MIX), "points": st.integers(3, 30)}), expect=lambda o, kw: abs(float(o[1].sum()) - 1) < 1e-12,
        invalid=(Bad({"mix": _MIX, "points": 1}, "points"), Bad({"mix": _MIX, "reach": -1.0}, "reach"))),
    "clbook.dynamics.critical.mixture_polar_grid": Spec(
        valid=st.fixed_dictionaries({"mix": st.just(_MIX), "theta0": st.floats(-3.0, 3.0),
                                     "cuts": st.sampled_from([[0.0, 2 * math.pi], [-1.5, 0.5, 1.5, 4.7]]),
                                     "radius": st.floats(0.5, 5.0), "points": st.integers(1, 12)}),
        expect=lambda o, kw: o[0].shape == ((len(kw["cuts"]) - 1) * kw["points"] ** 2, 2) and bool((o[1] >= 0).all()),
        invalid=(Bad({"mix": _MIX, "theta0": 0.0, "cuts": [1.0, 0.0], "radius": 2.0}, "cuts"),
                 Bad({"mix": _MIX, "theta0": 0.0, "cuts": [0.0, 1.0], "radius": -2.0}, "radius"),
                 Bad({"mix": _MIX, "theta0": 0.0, "cuts": [0.0, 1.0], "radius": 2.0, "points": 0}, "points"),
                 Bad({"mix": "mix", "theta0": 0.0, "cuts": [0.0, 1.0], "radius": 2.0}, "mix"))),
    "clbook.dynamics.critical.gaussian_alpha_covariance": Spec(
        valid=st.fixed_dictionaries({"w": _unit(2), "w_alpha": _unit(2), "nodes": tensors(30, 2), "weights": st.just(torch.full((30,), 1 / 30, dtype=F64)),
                                     "temperature": st.floats(0.1, 2.0), "terms": st.integers(1, 30)}), expect=shape(2, 2),
        invalid=(Bad({"w": _W2, "w_alpha": _W2, "nodes": torch.ones(4, 2, dtype=F64), "weights": torch.ones(3, dtype=F64), "temperature": 1.0},
                     "weights"),
                 Bad({"w": torch.ones(3, dtype=F64), "w_alpha": _W2, "nodes": torch.ones(4, 2, dtype=F64), "weights": torch.ones(4, dtype=F64),
                      "temperature": 1.0}, "w"))),
    "clbook.dynamics.critical.lemma_terms_along": Spec(
        valid=st.fixed_dictionaries({"W": st.just(critical.power_iteration(_W2, _A_MIX, steps=4).W), "A_fn": st.just(_A_MIX)}), max_examples=1,
        expect=lambda o, kw: o["omega"].shape == (4,),
        invalid=(Bad({"W": torch.ones(1, 2, dtype=F64), "A_fn": _A_MIX}, "W"),)),
    "clbook.dynamics.critical.omega_at": Spec(valid=st.fixed_dictionaries({"w": st.just(_W2), "A_fn": st.just(_A_MIX)}), max_examples=1, expect=scalar,
                                              invalid=(Bad({"w": _W2, "A_fn": None}, "A_fn"),)),
    "clbook.dynamics.critical.thm3_cap": Spec(valid=st.fixed_dictionaries({"c0": st.floats(-1, 1), "gamma": st.floats(0, 0.99)}), expect=scalar,
                                              invalid=(Bad({"c0": 0.5, "gamma": 1.0}, "gamma"), Bad({"c0": 1.5, "gamma": 0.5}, "c0"))),
    "clbook.dynamics.critical.mixture_landscape": Spec(valid=st.fixed_dictionaries({"theta": tensors(9), "mix": st.just(_MIX)}), expect=shape(9),
                                                       invalid=(Bad({"theta": torch.ones(2, 2, dtype=F64), "mix": _MIX}, "theta"),)),
    # dynamics.twolayer
    "clbook.dynamics.twolayer.gated_inputs": Spec(
        valid=st.fixed_dictionaries({"W": tensors(2, 3, 4), "x": tensors(5, 2, 4), "activation": st.sampled_from(["relu", "linear", "leakyrelu"])}),
        expect=shape(5, 2, 3, 4),
        invalid=(Bad({"W": torch.zeros(2, 3, 4), "x": torch.zeros(5, 3, 4)}, "W"), Bad({"W": torch.zeros(2, 3, 4), "x": torch.zeros(5, 2, 4),
                                                                                     "activation": "tanh"}, "activation"))),
    "clbook.dynamics.twolayer.lemma4_rhs": Spec(
        valid=st.fixed_dictionaries({"W": tensors(2, 2, 3), "V": tensors(3, 4), "x1": tensors(6, 2, 3), "x2": tensors(6, 2, 3),
                                     "alpha": tensors(6, 6, low=0.0, high=1.0), "bn": st.booleans()}),
        expect=lambda o, kw: o[0].shape == (3, 4) and o[1].shape == (2, 2, 3),
        invalid=(Bad({"W": torch.zeros(2, 2, 3, dtype=F64), "V": torch.zeros(3, 5, dtype=F64), "x1": torch.zeros(6, 2, 3, dtype=F64),
                      "x2": torch.zeros(6, 2, 3, dtype=F64), "alpha": torch.ones(6, 6, dtype=F64)}, "V"),
                 Bad({"W": torch.zeros(2, 2, 3, dtype=F64), "V": torch.zeros(3, 4, dtype=F64), "x1": torch.zeros(6, 2, 3, dtype=F64),
                      "x2": torch.zeros(5, 2, 3, dtype=F64), "alpha": torch.ones(6, 6, dtype=F64)}, "x"))),
    "clbook.dynamics.twolayer.LatentTokens": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.twolayer.make_latent_tokens": Spec(
        valid=st.fixed_dictionaries({"num_fields": st.integers(1, 3), "num_tokens": st.integers(2, 3), "concentration": st.floats(0.2, 3.0),
                                     "seed": st.integers(0, 99)}), expect=lambda o, kw: abs(float(o.weights.sum()) - 1) < 1e-12,
        invalid=(Bad({"num_tokens": 8, "num_fields": 8}, "too many"), Bad({"class_probs": [0.5, 0.6]}, "class_probs"),
                 Bad({"concentration": 0.0}, "concentration"), Bad({"magnitudes": [1.0, -1.0, 1.0]}, "magnitudes"), Bad({"seed": -1}, "seed"))),
    "clbook.dynamics.twolayer.population_terms": Spec(
        valid=st.fixed_dictionaries({"model": st.just(_TOKENS), "W": tensors(2, 3)}), expect=lambda o, kw: o.variance.shape == (6, 6),
        invalid=(Bad({"model": _TOKENS, "W": torch.zeros(3, 3)}, "W"), Bad({"model": "m", "W": torch.zeros(2, 3)}, "model"))),
    "clbook.dynamics.twolayer.PopulationTerms": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.twolayer.blowup_closed_form": Spec(
        valid=st.fixed_dictionaries({"y0": st.floats(0.05, 2), "b": st.floats(0.1, 3), "t": st.floats(0, 0.1)}), expect=scalar,
        invalid=(Bad({"y0": 0.3, "b": 0.7, "t": 50.0}, "blow-up"), Bad({"y0": -0.7, "b": 0.7, "t": 1.0}, "y0"),
                 Bad({"y0": 0.3, "b": 0.0, "t": 1.0}, "b"))),
    "clbook.dynamics.twolayer.blowup_time": Spec(valid=st.fixed_dictionaries({"y0": st.floats(0.01, 5), "b": st.floats(0.01, 5)}), expect=scalar,
                                                 invalid=(Bad({"y0": 0.0, "b": 1.0}, "y0"),)),
    "clbook.dynamics.twolayer.sphere_basin_fraction": Spec(
        valid=st.fixed_dictionaries({"dim": st.integers(2, 6), "c": st.floats(0, 2), "samples": st.integers(1, 50), "steps": st.integers(1, 20)}),
        expect=_prob, invalid=(Bad({"dim": 1, "c": 0.1}, "dim"), Bad({"dim": 3, "c": -0.1}, "c"), Bad({"dim": 3, "c": 0.1, "dt": 0.0}, "dt"))),
    "clbook.dynamics.twolayer.win_probability": Spec(valid=st.fixed_dictionaries({"d": st.integers(1, 30), "eps": st.floats(-0.99, 3)}), expect=_prob,
                                                     invalid=(Bad({"d": 5, "eps": -1.5}, "eps"), Bad({"d": 0, "eps": 0.1}, "d"))),
    "clbook.dynamics.twolayer.win_probability_mc": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(2, 10), "eps": st.floats(-1, 2), "samples": st.integers(1, 500)}), expect=_prob,
        invalid=(Bad({"d": 1, "eps": 0.1}, "d"), Bad({"d": 3, "eps": float("nan")}, "eps"), Bad({"d": 3, "eps": 0.1, "samples": 0}, "samples"))),
})

_V = hx.Variant()
_W1 = torch.randn(10, 2, 20, generator=torch.Generator().manual_seed(3), dtype=F64)
_TOP = torch.randn(4, 20, generator=torch.Generator().manual_seed(4), dtype=F64)
DOMAINS.update({
    # experiments.hierarchical
    "clbook.experiments.hierarchical.Variant": Spec(
        valid=st.fixed_dictionaries({"activation": st.sampled_from(hx.ACTIVATIONS), "loss": st.sampled_from(["infonce", "quadratic"]),
                                     "bn": st.sampled_from(list(hx.BN_RULES))}),
        invalid=(Bad({"activation": "tanh"}, "activation"), Bad({"loss": "ntxent"}, "loss"), Bad({"bn": "half"}, "bn"))),
    "clbook.experiments.hierarchical.TrainResult": Spec(exempt=EXEMPT_RECORD),
    "clbook.experiments.hierarchical.train": Spec(
        valid=st.fixed_dictionaries({"variants": st.just([_V]), "seeds": st.just([1]), "beta": st.integers(1, 2), "candidates": st.integers(1, 2),
                                     "steps": st.integers(1, 3), "batch": st.just(8), "output_dim": st.just(4)}), max_examples=2,
        expect=lambda o, kw: len(o.chi_plus) == 1,
        invalid=(Bad({"variants": [_V], "seeds": [1], "beta": 0, "candidates": 1}, "beta"),
                 Bad({"variants": [], "seeds": [1], "beta": 1, "candidates": 1}, "variants"),
                 Bad({"variants": [_V], "seeds": [], "beta": 1, "candidates": 1}, "seeds"),
                 Bad({"variants": [_V], "seeds": [1], "beta": 1, "candidates": 30}, "candidates"),
                 Bad({"variants": [_V], "seeds": [1], "beta": 1, "candidates": 1, "batch": 1}, "batch"),
                 Bad({"variants": [_V], "seeds": [1], "beta": 1, "candidates": 1, "dtype": torch.int32}, "dtype"))),
    "clbook.experiments.hierarchical.infonce_loss": Spec(
        valid=st.fixed_dictionaries({"z1": tensors(5, 3), "z2": tensors(5, 3), "temperature": st.floats(0.05, 2)}), expect=scalar,
        invalid=(Bad({"z1": torch.zeros(1, 3), "z2": torch.zeros(1, 3)}, "n >= 2"), Bad({"z1": torch.zeros(4, 3), "z2": torch.zeros(4, 2)}, "z1"),
                 Bad({"z1": torch.zeros(4, 3), "z2": torch.zeros(4, 3), "temperature": 0.0}, "temperature"))),
    "clbook.experiments.hierarchical.filter_gradients": Spec(
        valid=st.fixed_dictionaries({"variant": st.just(_V), "W1": st.just(_W1), "W2": st.just(_TOP), "tokens1": st.just(_TOK[0][0]),
                                     "tokens2": st.just(_TOK[1][0]), "magnitudes": st.just(_WORLD.magnitudes), "normalize": st.booleans()}),
        expect=shape(10, 2, 20), max_examples=2,
        invalid=(Bad({"variant": "v", "W1": _W1, "W2": _TOP, "tokens1": _TOK[0][0], "tokens2": _TOK[1][0], "magnitudes": _WORLD.magnitudes}, "variant"),
                 Bad({"variant": _V, "W1": _W1, "W2": _TOP[:, :5], "tokens1": _TOK[0][0], "tokens2": _TOK[1][0], "magnitudes": _WORLD.magnitudes}, "W2"),
                 Bad({"variant": _V, "W1": _W1, "W2": _TOP, "tokens1": _TOK[0][0] + 30, "tokens2": _TOK[1][0], "magnitudes": _WORLD.magnitudes},
                     "tokens"),
                 Bad({"variant": _V, "W1": _W1, "W2": _TOP, "tokens1": _TOK[0][0], "tokens2": _TOK[1][0], "magnitudes": _WORLD.magnitudes[:3]},
                     "magnitudes"))),
    "clbook.experiments.hierarchical.batchnorm": Spec(
        valid=st.fixed_dictionaries({"y": tensors(6, 3), "rule": st.sampled_from(list(hx.BN_RULES))}), expect=shape(6, 3),
        invalid=(Bad({"y": torch.ones(1, 3), "rule": "mean"}, "y"), Bad({"y": torch.ones(4, 3), "rule": "half"}, "rule"))),
    "clbook.experiments.hierarchical.load": Spec(valid=st.sampled_from([{"name": n} for n in hx.EXPERIMENTS]), expect=lambda o, kw: o["complete"],
                                                 invalid=(Bad({"name": "nope"}, "name"), Bad({"name": "quick-table1"}, "quick-table1", (FileNotFoundError,)))),
    "clbook.experiments.hierarchical.rows": Spec(valid=fixed(data=hx.load("table1")), expect=lambda o, kw: len(o) == 192,
                                                 invalid=(Bad({"data": {}}, "data"), Bad({"data": hx.load("bench")}, "rows"))),
    "clbook.experiments.hierarchical.summary": Spec(valid=fixed(rows=_ROWS), expect=lambda o, kw: len(o) == 4 * 2 * 16),
    "clbook.experiments.hierarchical.fig4_claims": Spec(valid=fixed(rows=_ROWS), expect=lambda o, kw: all(len(v) == 2 for v in o.values())),
    "clbook.experiments.hierarchical.jobs": Spec(
        valid=st.fixed_dictionaries({"experiment": st.sampled_from(hx.EXPERIMENTS), "quick": st.booleans()}), expect=lambda o, kw: len(o) >= 1,
        invalid=(Bad({"experiment": "nope"}, "experiment"), Bad({"experiment": "table1", "seeds": [0]}, "seeds"),
                 Bad({"experiment": "table1", "seeds": [1, 1]}, "seeds"), Bad({"experiment": "fig4", "betas": [0]}, "betas"),
                 Bad({"experiment": "fig4", "candidates": [21]}, "candidates"))),
    "clbook.experiments.hierarchical.run": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.hierarchical.train_cell": Spec(
        valid=fixed(variants=[{"activation": "relu", "loss": "infonce", "bn": "mean"}], seeds=[1], beta=1, candidates=1, zeta=1.0, steps=2),
        max_examples=1, expect=lambda o, kw: len(o) == 1,
        invalid=(Bad({"variants": [{"activation": "tanh"}], "seeds": [1], "beta": 1, "candidates": 1, "zeta": 1.0, "steps": 2}, "activation"),)),
    "clbook.experiments.hierarchical.digits_cell": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.hierarchical.bench_cell": Spec(exempt="a timing run of seconds whose output is a measurement of this machine; "
                                                              "the quick bench of the command-line test runs it"),
    "clbook.experiments.hierarchical.digit_quadrants": Spec(valid=fixed(seed=0), expect=shape(1797, 8, 8), max_examples=1,
                                                            invalid=(Bad({"seed": -1}, "seed"),)),
    "clbook.experiments.hierarchical.train_digits": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.hierarchical.roughness": Spec(valid=st.fixed_dictionaries({"filters": tensors(3, 16)}), expect=shape(3)),
    "clbook.experiments.hierarchical.main": Spec(exempt=EXEMPT_CLI),
    # viz (figures; every registered panel is drawn at the ends of its ranges by tests/api/test_widgets.py)
    **{f"clbook.viz.{m}.{f}": Spec(exempt=EXEMPT_PLOT) for m, fs in {
        "hierarchical": ("plot_filters", "plot_history", "plot_matching", "plot_digit_filters", "explore"),
        "twolayer": ("basin_panel",), "kernels": ("plot_min_eigenvalues", "psd_panel"),
        "onelayer": ("plot_pattern_counts", "plot_landscape", "patterns_panel"),
        "critical": ("plot_discrepancies", "stability_panel", "power_iteration_panel")}.items() for f in fs},
})

assert bad and EXEMPT_HEAVY  # imported for the table above
