"""API domains of Chapter 17's modules: the package clbook.experiments.landscape, clbook.losses.ntxent, clbook.losses.noncontrastive.

Training calls are tiny (p = 6, d = 2, m = 4, n = 8, two epochs); the full experiments are exempt (their quick modes,
resumption and bad arguments are tested in tests/unit/test_landscape_experiments.py).
"""

import torch
from hypothesis import strategies as st

from clbook.experiments import landscape as L

from .spec import EXEMPT_CLI, EXEMPT_HEAVY, EXEMPT_PLOT, EXEMPT_RECORD, Bad, Spec, fixed, generators, scalar, shape, tensors

_g = torch.Generator().manual_seed(0)
_D = torch.float64
_nan = float("nan")
_h = torch.randn(2, 3, 4, generator=_g, dtype=_D)
_tiny = dict(p=6, d=2, m=4, n=8, batch=4, epochs=2)


def _is_int(out, kwargs):
    assert isinstance(out, int) and out > 0


def _train_result(out, kwargs):
    R = len(kwargs["sparsities"]) * len(kwargs["seeds"])
    assert isinstance(out, L.TrainResult) and len(out.minimum[-1]) == R
    assert all(0 <= lo <= hi <= 1 + 1e-6 for lo, hi in zip(out.minimum[-1], out.maximum[-1], strict=True))


def _rows(seeds=(1, 2, 3), sparsities=(0.1, 0.2), model="CL-basic"):
    out = []
    for s in sparsities:
        for seed in seeds:
            v = 0.5 + 0.01 * seed
            out.append(dict(model=model, sparsity=s, seed=seed, start=[0.3, 0.2, 0.1], end=[v + 0.2, v, v - 0.2],
                            epochs=[0, 10], maximum=[0.3, v + 0.2], median=[0.2, v], minimum=[0.1, v - 0.2], loss=1.0))
    return out


def _stored(scheme_models):
    jobs = {}
    for name in scheme_models:
        for s in (0.1, 0.2):
            jobs[f"{name}/{s}"] = {"params": {}, "result": {"rows": _rows(sparsities=(s,), model=name)}}
    return {"jobs": jobs}


def _net(name: str) -> dict:
    """A network of the tiny size (p = 6, d = 2, m = 4), stacked for R = 2 runs."""
    from clbook.experiments.landscape import models as LM

    P = [LM.init_network(torch.Generator().manual_seed(r), L.MODELS[name], p=6, d=2, m=4, bias_init="uniform")[0] for r in range(2)]
    return {k: torch.stack([q[k] for q in P]) for k in P[0]}


def _views(views: int) -> torch.Tensor:
    """Inputs ``[2, 5, 6]`` (one view) or ``[2, 2, 5, 6]`` (two views)."""
    return torch.randn(2, *((views,) if views else ()), 5, 6, generator=torch.Generator().manual_seed(1), dtype=_D)


def _step_args(name: str) -> dict:
    spec = L.MODELS[name]
    P = {k: v.requires_grad_() for k, v in _net(name).items()}
    H = {k: v.requires_grad_() for k, v in _HEAD.items()} if spec.head != "none" else {}
    H = {k: v.detach().clone().requires_grad_() for k, v in H.items()}
    return dict(P=P, H=H, a=_views(2), spec=spec, temperature=0.5, lr=0.01, normalize=None)


_HEAD = {"Wh": torch.randn(2, 4, 4, generator=_g, dtype=_D), "bh": torch.randn(2, 4, generator=_g, dtype=_D)}


_VALUES = L.end_values({"CL-basic": _rows(), "NCL-basic": _rows(model="NCL-basic")})

DOMAINS: dict = {
    # ------------------------------------------------------------------ clbook.losses.ntxent
    "clbook.losses.ntxent.nt_xent": Spec(
        valid=st.fixed_dictionaries({"_args": st.tuples(tensors(2, 3, 4), tensors(2, 3, 4)),
                                     "temperature": st.floats(0.05, 5.0)}),
        expect=shape(2),
        invalid=(Bad({"_args": (_h, _h[..., :3])}, "h1 and h2"), Bad({"_args": (_h[:, :1], _h[:, :1])}, "B >= 2"),
                 Bad({"_args": (_h, _h), "temperature": 0.0}, "temperature"),
                 Bad({"_args": (_h, _h.float())}, "dtype"), Bad({"_args": (_h * _nan, _h)}, "h1"),
                 Bad({"_args": ("x", _h)}, "h1"))),
    "clbook.losses.ntxent.nt_xent_reference": Spec(
        valid=st.fixed_dictionaries({"_args": st.tuples(tensors(3, 4), tensors(3, 4)), "temperature": st.floats(0.05, 5.0)}),
        expect=scalar,
        invalid=(Bad({"_args": (_h, _h[..., :3])}, "h1 and h2"), Bad({"_args": (_h, _h), "temperature": -1.0}, "temperature"))),
    "clbook.losses.ntxent.ntxent_flops": Spec(
        valid=st.fixed_dictionaries({"batch": st.integers(1, 4096), "features": st.integers(1, 512)}),
        expect=lambda out, kw: out == 12 * kw["batch"] ** 2 * kw["features"] * 2,
        invalid=(Bad({"batch": 0, "features": 3}, "batch"), Bad({"batch": 4, "features": 2.5}, "features"))),
    # ------------------------------------------------------------------ clbook.losses.noncontrastive
    "clbook.losses.noncontrastive.ncl_loss": Spec(
        valid=st.fixed_dictionaries({"_args": st.tuples(tensors(2, 3, 4), tensors(2, 3, 4))}),
        expect=lambda out, kw: tuple(out.shape) == (2,) and bool(((out >= -1e-12) & (out <= 4 + 1e-12)).all()),
        invalid=(Bad({"_args": (_h, _h[..., :3])}, "q and target"), Bad({"_args": (_h * _nan, _h)}, "q"),
                 Bad({"_args": (_h, _h.float())}, "dtype"), Bad({"_args": (_h[:, :0], _h[:, :0])}, "B >= 1"))),
    "clbook.losses.noncontrastive.simsiam_loss": Spec(
        valid=st.fixed_dictionaries({"_args": st.tuples(tensors(3, 4), tensors(3, 4), tensors(3, 4), tensors(3, 4))}),
        expect=lambda out, kw: out.numel() == 1 and -1 - 1e-12 <= float(out) <= 1 + 1e-12,
        invalid=(Bad({"_args": (_h, _h, _h, _h[..., :2])}, "z2"), Bad({"_args": (_h, _h, _h * _nan, _h)}, "z1"))),
    # ------------------------------------------------------------------ clbook.experiments.landscape
    "clbook.experiments.landscape.models.Model": Spec(
        valid=st.fixed_dictionaries({"loss": st.sampled_from(["ncl", "ntxent", "simsiam"]), "bn": st.booleans(),
                                     "srelu": st.booleans(), "layers": st.sampled_from([1, 2]),
                                     "head": st.sampled_from(["none", "predictor", "projector"])}),
        expect=lambda out, kw: out.loss == kw["loss"],
        invalid=(Bad({"loss": "byol", "bn": True, "srelu": True}, "loss"), Bad({"loss": "ncl", "bn": True, "srelu": True, "layers": 3}, "layers"),
                 Bad({"loss": "ncl", "bn": True, "srelu": True, "head": "mlp"}, "head"))),
    "clbook.experiments.landscape.training.TrainResult": Spec(exempt=EXEMPT_RECORD),
    "clbook.experiments.landscape.models.encode": Spec(
        valid=st.fixed_dictionaries({"model": st.sampled_from(["NCL-linear", "CL-basic", "NCL-basic-2L"]), "views": st.booleans()})
        .map(lambda kw: dict(P=_net(kw["model"]), a=_views(2 if kw["views"] else 0), model=L.MODELS[kw["model"]])),
        expect=lambda out, kw: tuple(out.shape) == (*kw["a"].shape[:-1], 4),
        invalid=(Bad({"P": {}, "a": _views(0), "model": L.MODELS["CL-basic"]}, "P"),
                 Bad({"P": _net("CL-basic"), "a": _views(0)[..., :5], "model": L.MODELS["CL-basic"]}, "a"),
                 Bad({"P": _net("CL-basic"), "a": _views(0), "model": "CL-basic"}, "model"))),
    "clbook.experiments.landscape.models.apply_head": Spec(
        valid=fixed(H=_HEAD, h=torch.randn(2, 5, 4, generator=_g, dtype=_D)), expect=shape(2, 5, 4),
        invalid=(Bad({"H": {}, "h": _h}, "H"), Bad({"H": _HEAD, "h": torch.zeros(2, 5, 3, dtype=_D)}, "h"))),
    "clbook.experiments.landscape.models.init_network": Spec(
        valid=st.fixed_dictionaries({"generator": generators(), "model": st.sampled_from(list(L.MODELS.values())), "p": st.just(6),
                                     "d": st.just(2), "m": st.just(4), "bias_init": st.sampled_from(list(L.BIAS_INITS))}),
        expect=lambda out, kw: tuple(out[0]["W0"].shape) == (4, 6) and out[1] is None,
        invalid=(Bad({"generator": 3, "model": L.MODELS["CL-basic"], "p": 6, "d": 2, "m": 4}, "generator"),
                 Bad({"generator": _g, "model": "CL-basic", "p": 6, "d": 2, "m": 4}, "model"),
                 Bad({"generator": _g, "model": L.MODELS["CL-basic"], "p": 0, "d": 2, "m": 4}, "p"),
                 Bad({"generator": _g, "model": L.MODELS["CL-basic"], "p": 6, "d": 2, "m": 4, "bias_init": "normal"}, "bias_init"),
                 Bad({"generator": _g, "model": L.MODELS["CL-basic"], "p": 6, "d": 2, "m": 4, "warm": 0.1}, "M"))),
    "clbook.experiments.landscape.models.init_head": Spec(
        valid=st.fixed_dictionaries({"generator": generators(), "p": st.just(6), "d": st.just(2), "m": st.integers(1, 5),
                                     "bias_init": st.sampled_from(list(L.BIAS_INITS))}),
        expect=lambda out, kw: tuple(out["Wh"].shape) == (kw["m"], kw["m"]) and tuple(out["bh"].shape) == (kw["m"],),
        invalid=(Bad({"generator": 3, "p": 6, "d": 2, "m": 4}, "generator"), Bad({"generator": _g, "p": 6, "d": 2, "m": 0}, "m"))),
    "clbook.experiments.landscape.models.SharedEncoder": Spec(
        exempt="a torch.autograd.Function used through SharedEncoder.apply by the training step; its forward and backward "
               "passes are compared with autograd (and gradcheck) in tests/unit/test_landscape_experiments.py"),
    "clbook.experiments.landscape.training.step_shared": Spec(
        valid=st.sampled_from(["CL-basic", "CL-linear", "SimCLR", "SimSiam"]).map(_step_args), expect=shape(2),
        invalid=(Bad({**_step_args("SimSiam"), "P": {}}, "P"),)),
    "clbook.experiments.landscape.training.train": Spec(
        valid=st.fixed_dictionaries({"model": st.sampled_from(["NCL-linear", "CL-basic", "NCL-basic-2L", "SimCLR", "SimSiam"]),
                                     "sparsities": st.just([0.2]), "seeds": st.sampled_from([[1], [1, 2]]),
                                     "scheme": st.sampled_from(["independent", "dependent"]),
                                     "noise_draw": st.sampled_from(list(L.NOISE_DRAWS)), "latent": st.sampled_from(list(L.LATENTS)),
                                     "paired": st.booleans(), **{k: st.just(v) for k, v in _tiny.items()}}),
        expect=_train_result, max_examples=4,
        invalid=(Bad({"model": "CL-huge"}, "model"), Bad({"model": "CL-basic", **_tiny, "lr": 0.0}, "lr"),
                 Bad({"model": "CL-basic", **_tiny, "keep": 1.5}, "keep"), Bad({"model": "CL-basic", **_tiny, "sparsities": [0.0]}, "sparsity"),
                 Bad({"model": "CL-basic", **_tiny, "noise": -0.1}, "noise"), Bad({"model": "CL-basic", **_tiny, "noise_draw": "x"}, "noise_draw"),
                 Bad({"model": "CL-basic", **_tiny, "batch": 1}, "batch"), Bad({"model": "CL-basic", **_tiny, "paired": 1}, "paired"),
                 Bad({"model": "CL-basic", **_tiny, "drop_last": True, "batch": 9}, "drop_last"),
                 Bad({"model": "CL-basic", **_tiny, "dtype": torch.float16}, "dtype"),
                 Bad({"model": "CL-basic", **_tiny, "normalize": "both"}, "normalize"),
                 Bad({"model": "CL-basic", **_tiny, "seeds": []}, "seeds"))),
    "clbook.experiments.landscape.training.train_job": Spec(
        valid=fixed(model="NCL-basic", sparsities=[0.2], seeds=[1], record=1, **_tiny),
        expect=lambda out, kw: len(out["rows"]) == 1 and out["rows"][0]["epochs"] == [0, 1, 2],
        invalid=(Bad({"model": "x", **_tiny}, "model"), Bad({"model": "NCL-basic", **_tiny, "record": 0}, "record"))),
    "clbook.experiments.landscape.models.batchnorm": Spec(
        valid=st.fixed_dictionaries({"u": tensors(2, 5, 3), "gamma": tensors(2, 3), "beta": tensors(2, 3)}),
        expect=shape(2, 5, 3),
        invalid=(Bad({"u": torch.zeros(5, 3, dtype=_D), "gamma": torch.ones(4, dtype=_D), "beta": torch.zeros(3, dtype=_D)}, "gamma"),
                 Bad({"u": torch.zeros(1, 3, dtype=_D), "gamma": torch.ones(3, dtype=_D), "beta": torch.zeros(3, dtype=_D)}, "u"),
                 Bad({"u": torch.zeros(5, 3, dtype=_D), "gamma": torch.ones(3, dtype=_D), "beta": torch.zeros(3, dtype=_D), "eps": 0.0}, "eps"))),
    "clbook.experiments.landscape.models.exact_latents": Spec(
        valid=st.fixed_dictionaries({"n": st.integers(1, 20), "d": st.integers(4, 12), "sparsity": st.floats(0.05, 0.5),
                                     "generator": generators()}),
        expect=lambda out, kw: tuple(out.shape) == (kw["n"], kw["d"]) and bool((out != 0).any(-1).all()),
        invalid=(Bad({"n": 0, "d": 5, "sparsity": 0.2, "generator": _g}, "n"), Bad({"n": 2, "d": 5, "sparsity": 1.5, "generator": _g}, "sparsity"),
                 Bad({"n": 2, "d": 1, "sparsity": 1.0, "generator": _g}, "sparsity"),
                 Bad({"n": 2, "d": 5, "sparsity": 0.2, "generator": 3}, "generator"))),
    "clbook.experiments.landscape.experiments.jobs": Spec(
        valid=st.fixed_dictionaries({"experiment": st.sampled_from(list(L.EXPERIMENTS)), "quick": st.booleans()}),
        expect=lambda out, kw: len(out) > 0 and all(j.params["paired"] for j in out),
        invalid=(Bad({"experiment": "table3"}, "experiment"), Bad({"experiment": "table1", "epochs": 0}, "epochs"),
                 Bad({"experiment": "table1", "models": ["CL-huge"]}, "model"),
                 Bad({"experiment": "table1", "sparsities": [2.0]}, "sparsity"), Bad({"experiment": "table1", "seeds": [-1]}, "seed"))),
    "clbook.experiments.landscape.experiments.run": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.landscape.benchmark.bench": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.landscape.authors.faithfulness": Spec(exempt=EXEMPT_HEAVY),
    "clbook.experiments.landscape.cli.main": Spec(exempt=EXEMPT_CLI),
    "clbook.experiments.landscape.experiments.estimate": Spec(
        valid=st.fixed_dictionaries({"experiments": st.just(["table1"]), "workers": st.integers(1, 4),
                                     "ms_per_epoch": st.just({"SimCLR": 20.0, "SimSiam": 4.0}), "slowdown": st.floats(1.0, 2.0)}),
        expect=lambda out, kw: out["wall_seconds"] > 0,
        invalid=(Bad({"experiments": ["table1"], "ms_per_epoch": {"SimCLR": 20.0}}, "ms_per_epoch"),
                 Bad({"experiments": ["table1"], "ms_per_epoch": {"SimCLR": 20.0, "SimSiam": 4.0}, "workers": 0}, "workers"),
                 Bad({"experiments": ["table9"], "ms_per_epoch": {}}, "experiment"))),
    "clbook.experiments.landscape.benchmark.step_flops": Spec(
        valid=st.fixed_dictionaries({"model": st.sampled_from(["CL-basic", "CL-linear", "SimCLR"]), "batch": st.integers(1, 1024)}),
        expect=_is_int,
        invalid=(Bad({"model": "NCL-basic"}, "model"), Bad({"model": "CL-basic", "batch": 0}, "batch"))),
    "clbook.experiments.landscape.analysis.rows_by_model": Spec(
        valid=fixed(data=_stored(["CL-basic", "NCL-basic"])),
        expect=lambda out, kw: set(out) == {"CL-basic", "NCL-basic"} and len(out["CL-basic"]) == 6,
        invalid=(Bad({"data": 3}, "data"), Bad({"data": {"jobs": {"a/0.1": {}}}}, "data"))),
    "clbook.experiments.landscape.analysis.mixed": Spec(
        valid=fixed(independent=_stored(["CL-basic", "NCL-basic"]), dependent=_stored(["CL-basic"])),
        expect=lambda out, kw: set(out) == {"CL-basic", "NCL-basic"},
        invalid=(Bad({"independent": _stored(["CL-basic", "NCL-basic"]), "dependent": _stored(["NCL-basic"])}, "dependent"),)),
    "clbook.experiments.landscape.analysis.end_values": Spec(
        valid=fixed(groups={"CL-basic": _rows(), "NCL-basic": _rows(model="NCL-basic")}),
        expect=lambda out, kw: len(out) == 2 * 2 * 3 and all(len(v) == 3 for v in out.values()),
        invalid=(Bad({"groups": {}}, "groups"), Bad({"groups": {"CL-basic": [{"seed": 1}]}}, "rows"))),
    "clbook.experiments.landscape.analysis.paired_gap": Spec(
        valid=st.fixed_dictionaries({"values": st.just(_VALUES), "a": st.just("CL-basic"), "b": st.just("NCL-basic"),
                                     "sparsity": st.sampled_from([0.1, 0.2]), "metric": st.sampled_from(list(L.METRICS))}),
        expect=lambda out, kw: abs(out[0]) < 1e-12 and out[1] >= 0,
        invalid=(Bad({"values": _VALUES, "a": "CL-basic", "b": "X", "sparsity": 0.1}, "values"),
                 Bad({"values": _VALUES, "a": "CL-basic", "b": "NCL-basic", "sparsity": 0.1, "metric": "mean"}, "metric"),
                 Bad({"values": 3, "a": "CL-basic", "b": "NCL-basic", "sparsity": 0.1}, "values"))),
    "clbook.experiments.landscape.analysis.ablation_effects": Spec(
        valid=fixed(baseline=_VALUES, variants={"x": _VALUES}, models=("CL-basic", "NCL-basic"), sparsity=0.1),
        expect=lambda out, kw: [r["factor"] for r in out] == ["baseline", "x"] and out[1]["change"]["CL-basic"] == (0.0, 0.0),
        invalid=(Bad({"baseline": _VALUES, "variants": {"x": _VALUES}, "models": ("CL-basic",)}, "models"),
                 Bad({"baseline": _VALUES, "variants": {"x": {}}, "models": ("CL-basic", "NCL-basic"), "sparsity": 0.1}, "variants"),
                 Bad({"baseline": _VALUES, "variants": 3, "models": ("CL-basic", "NCL-basic")}, "variants"),
                 Bad({"baseline": _VALUES, "variants": {}, "models": ("CL-basic", "NCL-basic"), "metric": "x"}, "metric"))),
    "clbook.experiments.landscape.analysis.replay": Spec(
        valid=st.fixed_dictionaries({"data": st.just(L.load("table2-independent")), "model": st.sampled_from(["NCL-linear", "NCL-basic"]),
                                     "seed": st.sampled_from([1, 5]), "epochs": st.just(2)}),
        expect=lambda out, kw: out["epochs"] == [0] and out["max_abs_diff"] < 1e-3, max_examples=2,
        invalid=(Bad({"data": {}, "model": "NCL-basic"}, "data"), Bad({"data": L.load("table2-independent"), "model": "X"}, "data"),
                 Bad({"data": L.load("table2-independent"), "model": "NCL-basic", "epochs": 9000}, "epochs"),
                 Bad({"data": L.load("table2-independent"), "model": "NCL-basic", "seed": 9, "epochs": 2}, "seed"))),
    "clbook.experiments.landscape.analysis.escape_epochs": Spec(
        valid=st.fixed_dictionaries({"rows": st.just(_rows()), "threshold": st.floats(0.05, 0.95),
                                     "metric": st.sampled_from(["maximum", "median", "minimum"])}),
        expect=lambda out, kw: len(out) == 6 and all(e in (None, 0, 10) for e in out.values()),
        invalid=(Bad({"rows": _rows(), "threshold": 1.5}, "threshold"), Bad({"rows": _rows(), "metric": "mean"}, "metric"),
                 Bad({"rows": []}, "rows"))),
    "clbook.experiments.landscape.analysis.seed_spread": Spec(
        valid=st.fixed_dictionaries({"rows": st.just(_rows()), "where": st.sampled_from(["start", "end"])}),
        expect=lambda out, kw: set(out) == {0.1, 0.2} and all(len(v) == 3 for v in out.values()),
        invalid=(Bad({"rows": _rows(), "where": "middle"}, "where"), Bad({"rows": []}, "rows"), Bad({"rows": [{"seed": 1}]}, "rows"))),
    "clbook.experiments.landscape.analysis.trajectory_summary": Spec(
        valid=st.fixed_dictionaries({"rows": st.just(_rows()), "metric": st.sampled_from(list(L.METRICS))}),
        expect=lambda out, kw: all(v["count"] == 3 and len(v["mean"]) == 2 for v in out.values()),
        invalid=(Bad({"rows": _rows(), "metric": "mean"}, "metric"), Bad({"rows": []}, "rows"))),
    "clbook.experiments.landscape.experiments.load": Spec(
        valid=st.fixed_dictionaries({"name": st.sampled_from(["bench", "table4"])}),
        expect=lambda out, kw: isinstance(out, dict) and "provenance" in out,
        invalid=(Bad({"name": "table9"}, "name"), Bad({"name": 3}, "name"))),
    "clbook.viz.practice.explore": Spec(exempt=EXEMPT_PLOT),
}

# ------------------------------------------------------------------ issue 26: the mechanism (item 5), train_snapshots
_M6 = torch.linalg.qr(torch.randn(6, 2, generator=_g, dtype=_D))[0]


def _pairs(seed: int = 3):
    """Held-out pairs for R = 2 runs of the tiny size (p = 6), stacked as noise_reliance takes them."""
    from clbook.experiments.landscape import mechanism as MM

    v = [MM.pair_views(_M6, n=5, sparsity=0.5, noise=0.2, generator=torch.Generator().manual_seed(seed + r)) for r in range(2)]
    return MM.PairViews(shared=torch.stack([x.shared for x in v]), fresh=torch.stack([x.fresh for x in v]),
                        both=torch.stack([x.both for x in v]))


def _reliance_args(name: str) -> dict:
    branches = ("o", "t") if L.MODELS[name].loss == "ncl" else ("o",)
    return dict(model=name, params={b: _net(name) for b in branches}, views=_pairs())


def _reliance_ok(out, kw):
    assert set(out) == {"shared", "fresh", "drop", "match_shared", "match_fresh"}
    assert all(tuple(v.shape) == (2,) for v in out.values())
    assert torch.allclose(out["drop"], out["shared"] - out["fresh"]) and bool((out["shared"].abs() <= 1 + 1e-9).all())


_snap_kw = dict(sparsities=[0.2], seeds=[1], **_tiny)

DOMAINS.update({
    "clbook.experiments.landscape.mechanism.PairViews": Spec(exempt=EXEMPT_RECORD),
    "clbook.experiments.landscape.mechanism.pair_views": Spec(
        valid=st.fixed_dictionaries({"M": st.just(_M6), "n": st.integers(2, 9), "sparsity": st.floats(0.1, 1.0),
                                     "noise": st.floats(0.0, 1.0), "keep": st.floats(0.0, 1.0), "generator": generators(),
                                     "latent": st.sampled_from(list(L.LATENTS))}),
        expect=lambda out, kw: tuple(out.shared.shape) == tuple(out.fresh.shape) == (2, kw["n"], 6) and torch.equal(out.shared[0],
                                                                                                                  out.fresh[0]),
        invalid=(Bad({"M": _M6, "n": 1, "sparsity": 0.2, "noise": 0.1, "generator": _g}, "n"),
                 Bad({"M": _M6, "n": 4, "sparsity": 0.0, "noise": 0.1, "generator": _g}, "sparsity"),
                 Bad({"M": _M6, "n": 4, "sparsity": 0.2, "noise": -0.1, "generator": _g}, "noise"),
                 Bad({"M": _M6, "n": 4, "sparsity": 0.2, "noise": 0.1, "keep": 2.0, "generator": _g}, "keep"),
                 Bad({"M": _M6[0], "n": 4, "sparsity": 0.2, "noise": 0.1, "generator": _g}, "M"),
                 Bad({"M": _M6, "n": 4, "sparsity": 0.2, "noise": 0.1, "generator": 3}, "generator"),
                 Bad({"M": _M6, "n": 4, "sparsity": 0.2, "noise": 0.1, "generator": _g, "latent": "x"}, "latent"))),
    "clbook.experiments.landscape.mechanism.noise_reliance": Spec(
        valid=st.sampled_from(["CL-basic", "CL-linear", "NCL-basic", "NCL-linear", "NCL-basic-2L"]).map(_reliance_args),
        expect=_reliance_ok,
        invalid=(Bad({**_reliance_args("CL-basic"), "model": "SimCLR"}, "model"),
                 Bad({**_reliance_args("NCL-basic"), "params": {"o": _net("NCL-basic")}}, "params"),
                 Bad({**_reliance_args("CL-basic"), "views": _views(2)}, "views"))),
    "clbook.experiments.landscape.mechanism.mechanism_job": Spec(
        valid=st.fixed_dictionaries({"model": st.sampled_from(["CL-basic", "NCL-basic"]), "at": st.just([0, 2]),
                                     "n_held_out": st.integers(2, 6), **{k: st.just(v) for k, v in _snap_kw.items()}}),
        expect=lambda out, kw: len(out["rows"]) == 1 and out["rows"][0]["epochs"] == [0, 2], max_examples=2,
        invalid=(Bad({"model": "SimSiam", "at": [0], **_snap_kw}, "model"),
                 Bad({"model": "CL-basic", "at": [0], **_snap_kw, "n_held_out": 1}, "n_held_out"),
                 Bad({"model": "CL-basic", "at": [3], **_snap_kw}, "at"))),
    "clbook.experiments.landscape.training.train_snapshots": Spec(
        valid=st.fixed_dictionaries({"model": st.sampled_from(["CL-basic", "NCL-basic", "SimSiam"]), "at": st.sampled_from([[0], [1, 2]]),
                                     **{k: st.just(v) for k, v in _snap_kw.items()}}),
        expect=lambda out, kw: [s["epoch"] for s in out[2]] == kw["at"] and tuple(out[1].shape) == (1, 6, 2), max_examples=3,
        invalid=(Bad({"model": "CL-basic", "at": [], **_snap_kw}, "at"), Bad({"model": "CL-basic", "at": [2, 1], **_snap_kw}, "at"),
                 Bad({"model": "X", "at": [0], **_snap_kw}, "model"),
                 Bad({"model": "CL-basic", "at": [0], **_snap_kw, "progress": True}, "progress"))),
})


def _mech_stored():
    jobs = {f"noise_draw={draw}/CL-basic/0.1": {"params": {}, "result": {"rows": [
        dict(model="CL-basic", sparsity=0.1, seed=s, epochs=[0, 4], drop=[0.1 * s, 0.1 * s * s + (draw == "sample")]) for s in (1, 2, 3)]}}
        for draw in ("sample", "view")}
    return {"jobs": jobs}


DOMAINS["clbook.experiments.landscape.mechanism.reliance_tests"] = Spec(
    valid=st.fixed_dictionaries({"data": st.just(_mech_stored()), "epoch": st.sampled_from([0, 4, None]), "quantity": st.just("drop")}),
    expect=lambda out, kw: len(out) == 3 and all(r["tests"] == 3 for r in out),
    invalid=(Bad({"data": {}}, "data"), Bad({"data": _mech_stored(), "epoch": 2}, "epoch"), Bad({"data": 3}, "data"),
             Bad({"data": _mech_stored(), "quantity": "x"}, "quantity")))
