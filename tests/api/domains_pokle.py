"""API domains of the modules of Part IV (see spec.py): Pokle et al. (2022), Chapters 14-16.

clbook.data.sparse_coding, clbook.metrics.maxcos, clbook.dynamics.landscape, clbook.dynamics.dual and their figures
(clbook.viz.sparse_coding, .landscape, .dual). Chapter 17's modules are in domains_ch17.py.
"""
import math

import torch
from hypothesis import strategies as st

from clbook import linalg

from .spec import EXEMPT_PLOT, EXEMPT_RECORD, EXEMPT_WIDGET, Bad, Spec, fixed, generators, scalar, shape, tensors

_g = torch.Generator().manual_seed(0)
_D = torch.float64
_nan = float("nan")


def _unit_cols(*shape_):
    return tensors(*shape_).map(lambda W: linalg.unit_columns(W + 1e-3))


def _warm(d, delta=0.01):
    def make(seed):
        g = torch.Generator().manual_seed(seed)
        off = 1 - torch.eye(d, dtype=_D)
        return linalg.unit_rows(torch.eye(d, dtype=_D) + delta * (2 * torch.rand(d, d, generator=g, dtype=_D) - 1) * off)

    return st.integers(0, 2**31 - 1).map(make)


def _tuple_of(n, check=None):
    def expect(out, kwargs):
        assert isinstance(out, tuple) and len(out) == n
        if check:
            check(out, kwargs)

    return expect


def _is_float(out, kwargs):
    assert isinstance(out, float) and math.isfinite(out)


def _is_bool(out, kwargs):
    assert isinstance(out, bool)


_M = torch.linalg.qr(torch.randn(5, 3, generator=_g, dtype=_D))[0]
_W = torch.randn(4, 5, generator=_g, dtype=_D)
_S = _M @ _M.T * 0.2 + 0.01 * torch.eye(5, dtype=_D)
_lin = {"Wo": _W, "Wt": _W.flip(0), "Sigma": _S, "keep": 0.5}
_lin0 = {"Wo0": _W, "Wt0": _W.flip(0), "Sigma": _S, "keep": 0.5}
_sq = torch.eye(3, dtype=_D) + 0.01
_srl = {"Wo": _sq, "Wt": _sq, "bo": 0.2, "bt": 0.2, "keep": 0.6, "sparsity": 0.5}
_mc = {"W": _sq, "keep": 0.5, "temperature": 0.5, "samples": 100, "generator": _g}

DOMAINS: dict = {
    # ------------------------------------------------------------------ clbook.data.sparse_coding
    "clbook.data.sparse_coding.SparseCodingData": Spec(exempt=EXEMPT_RECORD),
    "clbook.data.sparse_coding.dictionary": Spec(
        valid=st.fixed_dictionaries({"p": st.integers(3, 8), "d": st.integers(1, 3), "generator": generators()}),
        expect=lambda out, kw: tuple(out.shape) == (kw["p"], kw["d"]),
        invalid=(Bad({"p": 2, "d": 3, "generator": _g}, "p >= d"), Bad({"p": 4, "d": 0, "generator": _g}, "d"),
                 Bad({"p": 4, "d": 2, "generator": 1}, "generator"), Bad({"p": 4, "d": 2, "generator": _g, "batch": 0}, "batch"))),
    "clbook.data.sparse_coding.sparse_latents": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(1, 20), "d": st.integers(1, 5), "sparsity": st.floats(0.2, 1.0),
                                     "generator": generators(), "latent": st.sampled_from(["symmetric", "binary", "one_hot"])}),
        expect=lambda out, kw: tuple(out.shape) == (kw["n"], kw["d"]) and bool((out != 0).any(-1).all()),
        invalid=(Bad({"n": 3, "d": 2, "sparsity": 1.5, "generator": _g}, "sparsity"),
                 Bad({"n": 3, "d": 2, "sparsity": 0.0, "generator": _g}, "sparsity"),
                 Bad({"n": 3, "d": 2, "sparsity": 0.5, "generator": _g, "latent": "gauss"}, "latent"),
                 Bad({"n": 0, "d": 2, "sparsity": 0.5, "generator": _g}, "n"),
                 Bad({"n": 3, "d": 2, "sparsity": _nan, "generator": _g}, "sparsity"))),
    "clbook.data.sparse_coding.sample": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(1, 10), "p": st.just(6), "d": st.integers(1, 3), "sparsity": st.floats(0.3, 1.0),
                                     "noise": st.floats(0.0, 1.0), "generator": generators()}),
        expect=lambda out, kw: tuple(out.X.shape) == (kw["n"], kw["p"]),
        invalid=(Bad({"n": 3, "p": 4, "d": 2, "sparsity": 0.5, "noise": -1.0, "generator": _g}, "noise"),
                 Bad({"n": 3, "p": 4, "d": 2, "sparsity": 0.5, "noise": 0.0, "generator": _g, "M": torch.eye(3)}, "M"),
                 Bad({"n": 3, "p": 4, "d": 2, "sparsity": 0.5, "noise": 0.0, "generator": _g, "M": torch.full((4, 2), _nan)}, "M"))),
    "clbook.data.sparse_coding.latent_second_moment": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(1, 5), "sparsity": st.floats(0.05, 1.0),
                                     "latent": st.sampled_from(["symmetric", "binary", "one_hot"]), "nonzero": st.booleans()}),
        expect=lambda out, kw: tuple(out.shape) == (kw["d"], kw["d"]),
        invalid=(Bad({"d": 0, "sparsity": 0.5}, "d"), Bad({"d": 2, "sparsity": 0.0}, "sparsity"),
                 Bad({"d": 2, "sparsity": 0.5, "latent": "x"}, "latent"))),
    "clbook.data.sparse_coding.second_moment": Spec(
        valid=st.fixed_dictionaries({"M": tensors(5, 3), "sparsity": st.floats(0.05, 1.0), "noise": st.floats(0.0, 1.0),
                                     "nonzero": st.booleans()}),
        expect=shape(5, 5),
        invalid=(Bad({"M": torch.zeros(3), "sparsity": 0.5, "noise": 0.1}, "M"),
                 Bad({"M": _M, "sparsity": 0.5, "noise": -0.1}, "noise"),
                 Bad({"M": _M * _nan, "sparsity": 0.5, "noise": 0.1}, "M"),
                 Bad({"M": "abc", "sparsity": 0.5, "noise": 0.1}, "M"))),
    "clbook.data.sparse_coding.noise_std": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(2, 100), "reading": st.sampled_from(["sec4.1", "sec4.2", "code"])}),
        expect=_is_float, invalid=(Bad({"d": 1}, "d"), Bad({"d": 10, "reading": "paper"}, "reading"))),
    "clbook.data.sparse_coding.masks": Spec(
        valid=st.fixed_dictionaries({"shape": st.tuples(st.integers(1, 5), st.integers(1, 4)), "keep": st.floats(0.0, 1.0),
                                     "generator": generators(), "scheme": st.sampled_from(["independent", "dependent"])}),
        expect=_tuple_of(2, lambda out, kw: tuple(out[0].shape) == kw["shape"]),
        invalid=(Bad({"shape": (2, 2), "keep": 1.2, "generator": _g}, "keep"), Bad({"shape": 3, "keep": 0.5, "generator": _g}, "shape"),
                 Bad({"shape": (2, 0), "keep": 0.5, "generator": _g}, "shape"),
                 Bad({"shape": (2, 2), "keep": 0.5, "generator": _g, "scheme": "both"}, "scheme"))),
    "clbook.data.sparse_coding.mask_moment": Spec(
        valid=st.fixed_dictionaries({"p": st.integers(1, 6), "keep": st.floats(0.0, 1.0), "scheme": st.sampled_from(["independent", "dependent"])}),
        expect=lambda out, kw: tuple(out.shape) == (kw["p"], kw["p"]),
        invalid=(Bad({"p": 0, "keep": 0.5}, "p"), Bad({"p": 2, "keep": -0.5}, "keep"), Bad({"p": 2, "keep": 0.5, "scheme": "x"}, "scheme"))),
    "clbook.data.sparse_coding.views": Spec(
        valid=st.fixed_dictionaries({"X": tensors(4, 3), "keep": st.floats(0.0, 1.0), "generator": generators(),
                                     "scheme": st.sampled_from(["independent", "dependent"])}),
        expect=_tuple_of(2, lambda out, kw: tuple(out[1].shape) == (4, 3)),
        invalid=(Bad({"X": torch.zeros(3), "keep": 0.5, "generator": _g}, "X"), Bad({"X": torch.zeros(0, 3), "keep": 0.5, "generator": _g}, "X"),
                 Bad({"X": torch.full((2, 3), _nan), "keep": 0.5, "generator": _g}, "X"),
                 Bad({"X": torch.zeros(2, 3), "keep": 2.0, "generator": _g}, "keep"))),
    # ------------------------------------------------------------------ clbook.metrics.maxcos
    "clbook.metrics.maxcos.MaxCosine": Spec(exempt=EXEMPT_RECORD),
    "clbook.metrics.maxcos.ChanceLevel": Spec(exempt=EXEMPT_RECORD),
    "clbook.metrics.maxcos.max_cosines": Spec(
        valid=st.fixed_dictionaries({"W": tensors(4, 5), "M": tensors(5, 3)}), expect=shape(3),
        invalid=(Bad({"W": _W, "M": torch.zeros(4, 2, dtype=_D)}, "same p"), Bad({"W": _W.float(), "M": _M}, "dtype"),
                 Bad({"W": _W * _nan, "M": _M}, "W"), Bad({"W": _W.long(), "M": _M}, "W"),
                 Bad({"W": torch.zeros(0, 5, dtype=_D), "M": _M}, "m >= 1"))),
    "clbook.metrics.maxcos.max_cosine_summary": Spec(
        valid=st.fixed_dictionaries({"W": tensors(2, 4, 5), "M": tensors(5, 3)}),
        expect=lambda out, kw: tuple(out.minimum.shape) == (2,) and bool((out.minimum <= out.median).all()),
        invalid=(Bad({"W": _W, "M": _M[:4]}, "same p"), Bad({"W": [[1.0]], "M": _M}, "W"))),
    "clbook.metrics.maxcos.chance_level": Spec(
        valid=st.fixed_dictionaries({"p": st.integers(3, 8), "d": st.integers(1, 3), "m": st.integers(1, 6), "draws": st.integers(2, 30)}),
        expect=lambda out, kw: 0 <= out.minimum <= out.median <= out.maximum <= 1,
        invalid=(Bad({"p": 3, "d": 5, "m": 2}, "d <= p"), Bad({"p": 3, "d": 2, "m": 2, "draws": 1}, "draws"),
                 Bad({"p": 3, "d": 2, "m": 0}, "m"), Bad({"p": 3, "d": 2, "m": 2, "seed": -1}, "seed"))),
    "clbook.metrics.maxcos.atom_cdf": Spec(
        valid=st.fixed_dictionaries({"t": st.floats(0.0, 1.0), "p": st.integers(2, 60), "m": st.integers(1, 60)}),
        expect=lambda out, kw: 0 <= float(out) <= 1, invalid=(Bad({"t": 0.5, "p": 1, "m": 2}, "p"), Bad({"t": 0.5, "p": 5, "m": 0}, "m"))),
    "clbook.metrics.maxcos.expected_atom_max_cosine": Spec(
        valid=st.fixed_dictionaries({"p": st.integers(2, 60), "m": st.integers(1, 60)}), expect=_is_float,
        invalid=(Bad({"p": 1, "m": 2}, "p"), Bad({"p": 5, "m": 1.5}, "m"))),
    # ------------------------------------------------------------------ clbook.dynamics.landscape
    "clbook.dynamics.landscape.NCLFlow": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.landscape.CLDescent": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.landscape.srelu": Spec(
        valid=st.fixed_dictionaries({"u": tensors(3, 4), "bias": st.floats(0.0, 2.0)}), expect=shape(3, 4),
        invalid=(Bad({"u": torch.zeros(3), "bias": -0.1}, "bias"), Bad({"u": [1.0], "bias": 0.1}, "u"),
                 Bad({"u": torch.zeros(3), "bias": _nan}, "bias"), Bad({"u": torch.full((2,), _nan), "bias": 0.1}, "u"))),
    "clbook.dynamics.landscape.encode": Spec(
        valid=st.fixed_dictionaries({"W": tensors(4, 5), "A": tensors(6, 5), "bias": st.one_of(st.none(), st.floats(0.0, 1.0)),
                                     "activation": st.sampled_from(["relu", "srelu", "linear"])}),
        expect=shape(6, 4),
        invalid=(Bad({"W": _W, "A": torch.zeros(6, 3, dtype=_D)}, "same p"), Bad({"W": _W, "A": _W, "activation": "tanh"}, "activation"),
                 Bad({"W": _W, "A": _W.float()}, "dtype"), Bad({"W": _W, "A": _W, "bias": torch.zeros(3)}, "bias"),
                 Bad({"W": _W, "A": _W, "activation": "srelu", "bias": -1.0}, "bias"))),
    "clbook.dynamics.landscape.predict": Spec(
        valid=st.fixed_dictionaries({"Wp": tensors(4, 4), "H": tensors(6, 4), "bias": st.one_of(st.none(), st.floats(-1.0, 1.0))}),
        expect=shape(6, 4),
        invalid=(Bad({"Wp": torch.zeros(4, 3, dtype=_D), "H": torch.zeros(2, 3, dtype=_D)}, "Wp"),
                 Bad({"Wp": torch.eye(3, dtype=_D), "H": torch.zeros(2, 3)}, "dtype"))),
    "clbook.dynamics.landscape.ncl_inner": Spec(
        valid=st.fixed_dictionaries({"u": tensors(5, 3), "v": tensors(5, 3)}), expect=shape(),
        invalid=(Bad({"u": torch.zeros(5, 3), "v": torch.zeros(4, 3)}, "u and v"), Bad({"u": torch.zeros(0, 3), "v": torch.zeros(0, 3)}, "n >= 1"),
                 Bad({"u": torch.full((2, 3), _nan), "v": torch.zeros(2, 3)}, "u"))),
    "clbook.dynamics.landscape.cl_inner": Spec(
        valid=st.fixed_dictionaries({"u1": tensors(5, 3), "u2": tensors(5, 3), "temperature": st.floats(0.05, 10.0)}), expect=shape(),
        invalid=(Bad({"u1": torch.zeros(1, 3), "u2": torch.zeros(1, 3), "temperature": 1.0}, "n >= 2"),
                 Bad({"u1": torch.zeros(3, 3), "u2": torch.zeros(3, 3), "temperature": 0.0}, "temperature"),
                 Bad({"u1": torch.zeros(3, 3), "u2": torch.zeros(3, 2), "temperature": 1.0}, "u1 and u2"))),
    "clbook.dynamics.landscape.ncl_onehot": Spec(
        valid=st.fixed_dictionaries({"W": _unit_cols(4, 4), "keep": st.floats(0.0, 1.0)}), expect=shape(),
        invalid=(Bad({"W": torch.zeros(3, 4), "keep": 0.5}, "square"), Bad({"W": torch.eye(3), "keep": 1.5}, "keep"))),
    "clbook.dynamics.landscape.ncl_onehot_grad": Spec(
        valid=st.fixed_dictionaries({"W": _unit_cols(4, 4), "keep": st.floats(0.0, 1.0)}), expect=shape(4, 4),
        invalid=(Bad({"W": torch.zeros(3, 4), "keep": 0.5}, "square"),)),
    "clbook.dynamics.landscape.ncl_onehot_flow": Spec(
        valid=st.fixed_dictionaries({"W0": _unit_cols(4, 4), "keep": st.floats(0.1, 1.0), "lr": st.floats(0.01, 1.0), "steps": st.integers(0, 20)}),
        expect=lambda out, kw: tuple(out.losses.shape) == (kw["steps"] + 1,),
        invalid=(Bad({"W0": torch.zeros(3, 3), "keep": 0.5, "lr": 0.1, "steps": 1}, "zero column"),
                 Bad({"W0": torch.eye(3), "keep": 0.5, "lr": 0.0, "steps": 1}, "lr"),
                 Bad({"W0": torch.eye(3), "keep": 0.5, "lr": 0.1, "steps": -1}, "steps"))),
    "clbook.dynamics.landscape.cl_surrogate": Spec(
        valid=st.fixed_dictionaries({"W": _unit_cols(4, 4), "keep": st.floats(0.0, 1.0), "temperature": st.floats(0.05, 5.0)}), expect=shape(),
        invalid=(Bad({"W": torch.eye(13), "keep": 0.5, "temperature": 1.0}, "<= 12"), Bad({"W": torch.eye(3), "keep": 0.5, "temperature": -1.0}, "temperature"),
                 Bad({"W": torch.eye(1), "keep": 0.5, "temperature": 1.0}, ">= 2"))),
    "clbook.dynamics.landscape.cl_surrogate_mc": Spec(
        valid=st.fixed_dictionaries({"W": _unit_cols(3, 3), "keep": st.floats(0.1, 1.0), "temperature": st.floats(0.1, 5.0),
                                     "samples": st.integers(2, 200), "generator": generators()}),
        expect=_tuple_of(2), invalid=(Bad({**_mc, "samples": 1}, "samples"), Bad({**_mc, "W": torch.eye(3).expand(2, 3, 3)}, "W"))),
    "clbook.dynamics.landscape.cl_surrogate_min": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(2, 20), "keep": st.floats(0.0, 1.0), "temperature": st.floats(0.01, 10.0)}), expect=_is_float,
        invalid=(Bad({"d": 1, "keep": 0.5, "temperature": 1.0}, "d"), Bad({"d": 3, "keep": 0.5, "temperature": 0.0}, "temperature"))),
    "clbook.dynamics.landscape.dead_column_gap": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(2, 20), "keep": st.floats(0.0, 1.0), "temperature": st.floats(0.01, 10.0)}), expect=_is_float,
        invalid=(Bad({"d": 3, "keep": 2.0, "temperature": 1.0}, "keep"),)),
    "clbook.dynamics.landscape.cl_surrogate_descent": Spec(
        valid=st.fixed_dictionaries({"W0": tensors(2, 3, 3, low=0.1, high=1.0), "keep": st.floats(0.1, 1.0), "temperature": st.floats(0.2, 2.0),
                                     "lr": st.floats(0.01, 0.5), "steps": st.integers(0, 5)}),
        expect=lambda out, kw: tuple(out.losses.shape) == (2, kw["steps"] + 1),
        invalid=(Bad({"W0": torch.eye(3), "keep": 0.5, "temperature": 1.0, "lr": 0.1, "steps": 1}, "W0"),
                 Bad({"W0": torch.zeros(2, 3, 3), "keep": 0.5, "temperature": 1.0, "lr": 0.1, "steps": 1}, "zero column"))),
    "clbook.dynamics.landscape.nearest_permutation_error": Spec(
        valid=st.fixed_dictionaries({"W": tensors(3, 3)}), expect=shape(),
        invalid=(Bad({"W": torch.eye(9)}, "<= 8"), Bad({"W": torch.zeros(2, 3)}, "square"))),
    "clbook.dynamics.landscape.cl_large_batch": Spec(
        valid=st.fixed_dictionaries({"W": _unit_cols(2, 4, 4), "keep": st.floats(0.0, 1.0), "temperature": st.floats(0.01, 10.0)}), expect=shape(2),
        invalid=(Bad({"W": torch.eye(3), "keep": 0.5, "temperature": _nan}, "temperature"),)),
    "clbook.dynamics.landscape.cl_batch_mc": Spec(
        valid=st.fixed_dictionaries({"W": _unit_cols(3, 3), "keep": st.floats(0.0, 1.0), "temperature": st.floats(0.1, 5.0),
                                     "negatives": st.integers(1, 50), "anchors": st.integers(1, 20), "generator": generators()}),
        expect=lambda out, kw: tuple(out.shape) == (kw["anchors"],),
        invalid=(Bad({"W": torch.eye(3), "keep": 0.5, "temperature": 1.0, "negatives": 0, "anchors": 2, "generator": _g}, "negatives"),
                 Bad({"W": torch.eye(3), "keep": 0.5, "temperature": 1.0, "negatives": 2, "anchors": 2, "generator": None}, "generator"))),
    "clbook.dynamics.landscape.large_batch_threshold": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(2, 50), "keep": st.floats(0.0, 1.0)}), expect=_is_float,
        invalid=(Bad({"d": 1, "keep": 0.5}, "d"),)),
    "clbook.dynamics.landscape.large_batch_s_star": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(2, 50), "keep": st.floats(0.0, 1.0), "temperature": st.floats(0.001, 10.0)}),
        expect=lambda out, kw: 0 < out <= 1, invalid=(Bad({"d": 3, "keep": 0.5, "temperature": 0.0}, "temperature"),)),
    "clbook.dynamics.landscape.large_batch_min": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(2, 50), "keep": st.floats(0.0, 1.0), "temperature": st.floats(1e-4, 10.0)}), expect=_is_float,
        invalid=(Bad({"d": 3, "keep": -0.5, "temperature": 1.0}, "keep"),)),
    "clbook.dynamics.landscape.large_batch_minimiser": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(2, 6), "keep": st.floats(0.0, 1.0), "temperature": st.floats(0.01, 10.0)}),
        expect=lambda out, kw: tuple(out.shape) == (kw["d"], kw["d"]),
        invalid=(Bad({"d": 3, "keep": 0.5, "temperature": 1.0, "permutation": [0, 0, 1]}, "permutation"),)),
    # ------------------------------------------------------------------ clbook.dynamics.dual
    "clbook.dynamics.dual.LinearRun": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.dual.AlternatingRun": Spec(exempt=EXEMPT_RECORD),
    "clbook.dynamics.dual.linear_population": Spec(
        valid=st.fixed_dictionaries({"Wo": tensors(4, 5), "Wt": tensors(4, 5), "Sigma": st.just(_S), "keep": st.floats(0.0, 1.0),
                                     "scheme": st.sampled_from(["independent", "dependent"])}), expect=scalar,
        invalid=(Bad({**_lin, "Sigma": torch.eye(4)}, "Sigma"), Bad({**_lin, "keep": 1.5}, "keep"), Bad({**_lin, "scheme": "x"}, "scheme"),
                 Bad({**_lin, "Wt": _W * _nan}, "Wt"))),
    "clbook.dynamics.dual.linear_gradients": Spec(
        valid=st.fixed_dictionaries({"Wo": tensors(4, 5), "Wt": tensors(4, 5), "Sigma": st.just(_S), "keep": st.floats(0.0, 1.0)}),
        expect=_tuple_of(2, lambda out, kw: tuple(out[0].shape) == (4, 5)),
        invalid=(Bad({**_lin, "Wt": _W[:3]}, "shapes"), Bad({**_lin, "Wo": "x"}, "Wo"))),
    "clbook.dynamics.dual.linear_gd": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _lin0.items()}, "eta": st.floats(0.0, 0.1), "lam": st.floats(0.5, 1.0),
                                     "steps": st.integers(0, 10), "trajectory": st.booleans()}),
        expect=lambda out, kw: out.Wo.shape[1:] == (4, 5),
        invalid=(Bad({**_lin0, "eta": [0.1], "lam": 1.0, "steps": 3}, "eta"), Bad({**_lin0, "eta": 0.1, "lam": -1.0, "steps": 3}, "lam"),
                 Bad({**_lin0, "eta": 0.1, "lam": 1.0, "steps": -1}, "steps"))),
    "clbook.dynamics.dual.closed_form_coefficients": Spec(
        valid=st.fixed_dictionaries({"c": tensors(5, low=0.0, high=0.2), "lam": tensors(5, low=0.5, high=1.0)}),
        expect=_tuple_of(2, lambda out, kw: tuple(out[1].shape) == (6,)),
        invalid=(Bad({"c": [0.1, 0.2], "lam": [1.0]}, "same length"), Bad({"c": [[0.1]], "lam": [[1.0]]}, "c"))),
    "clbook.dynamics.dual.paper_c2": Spec(
        valid=st.fixed_dictionaries({"c": tensors(5, low=0.0, high=0.2), "lam": tensors(5, low=0.5, high=1.0)}), expect=shape(6),
        invalid=(Bad({"c": [0.1, _nan], "lam": [1.0, 1.0]}, "c"),)),
    "clbook.dynamics.dual.linear_closed_form": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _lin0.items()}, "eta": st.floats(0.0, 0.1), "lam": st.floats(0.5, 1.0),
                                     "steps": st.integers(0, 50)}),
        expect=_tuple_of(2, lambda out, kw: tuple(out[0].shape) == (4, 5)),
        invalid=(Bad({**_lin0, "eta": 0.1, "lam": 1.0, "steps": 2.5}, "steps"),)),
    "clbook.dynamics.dual.linear_flow": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _lin0.items()}, "decay": st.floats(0.0, 1.0), "t_eval": st.just([0.0, 0.5, 1.0])}),
        expect=_tuple_of(2, lambda out, kw: tuple(out[0].shape) == (3, 4, 5)),
        invalid=(Bad({**_lin0, "t_eval": [1.0, 0.5]}, "t_eval"), Bad({**_lin0, "t_eval": []}, "t_eval"), Bad({**_lin0, "t_eval": [0.0, 1.0], "decay": _nan}, "decay"))),
    "clbook.dynamics.dual.linear_flow_closed_form": Spec(
        valid=st.fixed_dictionaries({**{k: st.just(v) for k, v in _lin0.items()}, "decay": st.floats(0.0, 1.0), "t": st.floats(0.0, 5.0)}),
        expect=_tuple_of(2), invalid=(Bad({**_lin0, "t": -1.0}, "t"),)),
    "clbook.dynamics.dual.span_residual": Spec(
        valid=st.fixed_dictionaries({"W": tensors(4, 5), "M": st.just(_M), "Wo0": tensors(4, 5), "Wt0": tensors(4, 5)}), expect=_is_float,
        invalid=(Bad({"W": _W, "M": _M[:4], "Wo0": _W, "Wt0": _W}, "M"), Bad({"W": torch.zeros(4, 5, dtype=_D), "M": _M, "Wo0": _W, "Wt0": _W}, "zero"))),
    "clbook.dynamics.dual.span_metric_sup": Spec(
        valid=st.fixed_dictionaries({"A": tensors(4, 3), "B": tensors(4, 3), "n_angles": st.integers(2, 50)}), expect=shape(3),
        invalid=(Bad({"A": _W, "B": _W[:, :3]}, "A and B"), Bad({"A": _W, "B": _W, "n_angles": 1}, "n_angles"))),
    "clbook.data.sparse_coding.enumerate_latents": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(1, 5), "sparsity": st.floats(0.0, 1.0)}),
        expect=_tuple_of(2, lambda out, kw: abs(float(out[1].sum()) - 1) < 1e-12),
        invalid=(Bad({"d": 9, "sparsity": 0.5}, "d"), Bad({"d": 2, "sparsity": 1.5}, "sparsity"))),
    "clbook.data.sparse_coding.enumerate_masks": Spec(
        valid=st.fixed_dictionaries({"d": st.integers(1, 6), "keep": st.floats(0.0, 1.0)}),
        expect=_tuple_of(2, lambda out, kw: abs(float(out[1].sum()) - 1) < 1e-12),
        invalid=(Bad({"d": 13, "keep": 0.5}, "d"), Bad({"d": 2, "keep": 1.5}, "keep"))),
    "clbook.dynamics.dual.population_loss": Spec(
        valid=st.fixed_dictionaries({"Wo": _warm(3), "Wt": _warm(3), "bo": st.floats(0.0, 0.5), "bt": st.floats(0.0, 0.5),
                                     "keep": st.floats(0.0, 1.0), "sparsity": st.floats(0.0, 1.0)}), expect=_is_float,
        invalid=(Bad({**_srl, "Wo": torch.ones(2, 3)}, "square"), Bad({**_srl, "bo": -0.1}, "bo"), Bad({**_srl, "bt": [0.1, 0.2]}, "bt"),
                 Bad({**_srl, "Wo": torch.eye(9), "Wt": torch.eye(9)}, "d"))),
    "clbook.dynamics.dual.population_gradient": Spec(
        valid=st.fixed_dictionaries({"Wo": _warm(3), "Wt": _warm(3), "bo": st.floats(0.0, 0.5), "bt": st.floats(0.0, 0.5),
                                     "keep": st.floats(0.0, 1.0), "sparsity": st.floats(0.0, 1.0)}), expect=shape(3, 3),
        invalid=(Bad({**_srl, "keep": _nan}, "keep"),)),
    "clbook.dynamics.dual.regime_loss": Spec(
        valid=st.fixed_dictionaries({"Wo": _warm(3), "Wt": _warm(3), "bo": st.floats(0.0, 0.5), "bt": st.floats(0.0, 0.5),
                                     "keep": st.floats(0.0, 1.0), "sparsity": st.floats(0.0, 1.0)}), expect=_is_float,
        invalid=(Bad({**_srl, "sparsity": 2.0}, "sparsity"),)),
    "clbook.dynamics.dual.regime_holds": Spec(
        valid=st.fixed_dictionaries({"W": _warm(3), "b": st.floats(0.0, 1.0)}), expect=_is_bool,
        invalid=(Bad({"W": torch.ones(2, 3), "b": 0.1}, "square"), Bad({"W": torch.eye(2), "b": -0.1}, "b"))),
    "clbook.dynamics.dual.fixed_point": Spec(
        valid=st.fixed_dictionaries({"Wt": _warm(3), "bt": st.floats(0.0, 0.5), "keep": st.floats(0.1, 1.0), "sparsity": st.floats(0.1, 1.0)}),
        expect=shape(3, 3), invalid=(Bad({"Wt": torch.ones(2, 3), "bt": 0.1, "keep": 0.5, "sparsity": 0.5}, "square"),)),
    "clbook.dynamics.dual.alternating": Spec(
        valid=st.fixed_dictionaries({"Wo": _warm(2), "Wt": _warm(2), "b": st.floats(0.05, 0.5), "keep": st.floats(0.3, 1.0),
                                     "sparsity": st.floats(0.3, 1.0), "inner_steps": st.integers(1, 5), "rounds": st.integers(1, 2)}),
        expect=lambda out, kw: out.offdiag.shape[0] == 2 * kw["rounds"] + 1,
        invalid=(Bad({"Wo": torch.zeros(2, 2), "Wt": torch.eye(2), "b": 0.1, "keep": 0.5, "sparsity": 0.5}, "zero row"),
                 Bad({"Wo": torch.eye(2), "Wt": torch.eye(2), "b": 0.1, "keep": 0.5, "sparsity": 0.5, "eta": 0.0}, "eta"),
                 Bad({"Wo": torch.eye(2), "Wt": torch.eye(2), "b": 0.1, "keep": 0.5, "sparsity": 0.5, "rounds": 0}, "rounds"))),
    "clbook.dynamics.dual.half_round_ratio": Spec(
        valid=st.fixed_dictionaries({"Wt": _warm(3), "b": st.floats(0.05, 0.5), "keep": st.floats(0.3, 1.0), "sparsity": st.floats(0.3, 1.0),
                                     "inner_steps": st.integers(1, 5)}),
        expect=_tuple_of(2), invalid=(Bad({"Wt": torch.eye(3), "b": 0.1, "keep": 0.5, "sparsity": 0.5, "inner_steps": 0}, "inner_steps"),)),
    "clbook.dynamics.dual.offdiag": Spec(
        valid=st.fixed_dictionaries({"W": tensors(4, 4)}), expect=shape(12), invalid=(Bad({"W": torch.zeros(2, 3)}, "square"),)),
    "clbook.dynamics.dual.lemma1_iterate": Spec(
        valid=st.fixed_dictionaries({"v0": tensors(4, low=0.1, high=1.0), "a": st.floats(-2.0, 2.0), "c_seq": st.just([0.1, 0.3, 0.2])}),
        expect=shape(4, 4),
        invalid=(Bad({"v0": [1.0], "a": 0.3, "c_seq": [0.1]}, "v0"), Bad({"v0": [1.0, 0.0], "a": 0.3, "c_seq": [0.0]}, "c^(t)"),
                 Bad({"v0": [0.0, 0.0], "a": 0.3, "c_seq": [0.1]}, "v0"), Bad({"v0": [1.0, 0.0, 0.0], "a": [0.1], "c_seq": [0.1]}, "a"))),
    "clbook.dynamics.dual.lemma1_limit": Spec(
        valid=st.fixed_dictionaries({"a": st.floats(-3.0, 3.0), "d": st.integers(2, 10)}), expect=lambda out, kw: abs(float(out.norm()) - 1) < 1e-12,
        invalid=(Bad({"a": 0.3}, "d"), Bad({"a": [[0.1]]}, "a"))),
    # ------------------------------------------------------------------ figures
    "clbook.viz.sparse_coding.testbed": Spec(exempt=EXEMPT_WIDGET),
    "clbook.viz.sparse_coding.chance_curve": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.landscape.valley": Spec(exempt=EXEMPT_WIDGET),
    "clbook.viz.dual.phase": Spec(exempt=EXEMPT_WIDGET),
    "clbook.viz.dual.sweep": Spec(exempt=EXEMPT_PLOT),
}

_unused = fixed  # the helpers imported for symmetry with the other tables
