"""API domains of the core modules: config, fmt, verify, linalg, results, nets, viz, widgets, experiments.runner."""
import torch
from hypothesis import strategies as st

import clbook
from clbook import widgets as _widgets
from clbook.experiments import runner

from .spec import EXEMPT_PLOT, EXEMPT_RECORD, EXEMPT_WIDGET, Bad, Spec, bad, fixed, generators, scalar, shape, tensors

_g = {"generator": torch.Generator().manual_seed(0)}


def _is_str(out, kwargs):
    assert isinstance(out, str) and out


def _nets_ok(out, kwargs):
    x = torch.zeros(3, kwargs["_args"][0][0], dtype=out.body[0].weight.dtype)
    assert out(x).shape == (3, kwargs["_args"][0][-1])
    other = torch.float32 if x.dtype == torch.float64 else torch.float64
    for bad_x in (x.numpy(), x.to(torch.int64), x.to(other), torch.full_like(x, float("nan")), x[:, :1]):
        try:  # the forward pass's domain: a finite tensor [n, d_in] of the model's dtype and device
            out(bad_x)
        except (TypeError, ValueError) as exc:
            assert "x " in str(exc) or str(exc).startswith("x"), f"the error does not name x: {exc}"
        else:
            raise AssertionError(f"MLP accepted x of type {type(bad_x).__name__}")


def _small_figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [0, 1])
    return fig


def _tables(out, kwargs):
    assert out.n_cells == len(kwargs["paper"])


DOMAINS = {
    # config
    "clbook.config.Setup": Spec(exempt=EXEMPT_RECORD),
    "clbook.config.setup": Spec(
        valid=st.fixed_dictionaries({"seed": st.integers(0, 2**32 - 1), "device": st.just("cpu"),
                                     "dtype": st.sampled_from([torch.float64, torch.float32]), "threads": st.integers(1, 2)}),
        expect=lambda out, kw: clbook.setup(0, device="cpu", threads=1) and None,
        invalid=(Bad({"seed": -1}, "seed"), Bad({"seed": 2**40}, "seed"), Bad({"seed": 0.5}, "seed"), Bad({"dtype": torch.int32}, "dtype"),
                 Bad({"threads": 0}, "threads"), Bad({"device": "gpu:x"}, "device"))),
    "clbook.config.current": Spec(valid=fixed(), expect=lambda out, kw: isinstance(out, clbook.config.Setup)),
    "clbook.config.defaults": Spec(valid=fixed(), expect=lambda out, kw: out[1] in (torch.float64, torch.float32)),
    "clbook.config.generator": Spec(valid=st.fixed_dictionaries({"seed": st.integers(0, 2**63 - 1)}),
                                    invalid=(Bad({"seed": -1}, "seed"), Bad({"seed": "1"}, "seed"))),
    "clbook.config.stream": Spec(valid=st.fixed_dictionaries({"seed": st.integers(0, 100), "name": st.just("a"),
                                                              "streams": st.just({"a": 1000, "b": 2000})}),
                                 expect=lambda out, kw: torch.equal(torch.rand(3, generator=out),
                                                                    torch.rand(3, generator=clbook.generator(1000 + kw["seed"]))),
                                 invalid=(Bad({"seed": 1, "name": "c", "streams": {"a": 1}}, "stream"),
                                          Bad({"seed": -1, "name": "a", "streams": {"a": 1}}, "seed"))),
    "clbook.config.randn": Spec(valid=st.fixed_dictionaries({"_args": st.tuples(st.integers(0, 4), st.integers(1, 4)),
                                                             "generator": generators()}),
                                expect=lambda out, kw: tuple(out.shape) == kw["_args"],
                                invalid=(Bad({"_args": (2,), "generator": 0}, "generator"), Bad({"_args": (-1,), **_g}, "shape"),
                                         Bad({"_args": (2,), **_g, "dtype": torch.int64}, "dtype"))),
    "clbook.config.rand": Spec(valid=st.fixed_dictionaries({"_args": st.tuples(st.integers(1, 5)), "generator": generators()}),
                               expect=lambda out, kw: bool(((out >= 0) & (out < 1)).all()),
                               invalid=(Bad({"_args": (2.5,), **_g}, "shape"), Bad({"_args": (2,), "generator": None}, "generator"))),
    "clbook.config.randint": Spec(valid=st.fixed_dictionaries({"low": st.integers(-5, 0), "high": st.integers(1, 9),
                                                               "shape": st.integers(0, 6), "generator": generators()}),
                                  expect=lambda out, kw: bool(((out >= kw["low"]) & (out < kw["high"])).all()),
                                  invalid=(Bad({"low": 3, "high": 3, "shape": 2, **_g}, "low"), Bad({"low": 0, "high": 2.0, "shape": 2, **_g}, "high"))),
    "clbook.config.draws": Spec(valid=st.fixed_dictionaries({"device": st.just("cpu"), "dtype": st.sampled_from([torch.float64, torch.float32])}),
                                expect=lambda out, kw: isinstance(out, clbook.config.draws),
                                invalid=(Bad({"dtype": torch.int32}, "dtype"), Bad({"device": "gpu:x"}, "device"))),
    "clbook.config.to_device": Spec(valid=st.fixed_dictionaries({"x": tensors(3)}), expect=shape(3),
                                    invalid=(Bad({"x": torch.zeros(2), "device": "nope"}, "device"), Bad({"x": "abc"}, "x"),
                                             Bad({"x": [[1.0], [1.0, 2.0]]}, "x"), Bad({"x": [1j]}, "x"),
                                             Bad({"x": torch.zeros(2), "dtype": torch.int64}, "dtype"))),
    # fmt
    "clbook.fmt.value": Spec(valid=st.fixed_dictionaries({"x": st.floats(-1e6, 1e6), "digits": st.integers(1, 6)}), expect=_is_str,
                             invalid=(Bad({"x": "1"}, "x"), Bad({"x": 1.0, "digits": 0}, "digits"), Bad({"x": torch.zeros(2)}, "x"))),
    "clbook.fmt.error": Spec(valid=st.fixed_dictionaries({"x": st.floats(-1, 1), "floor": st.sampled_from([1e-12, 1e-10, 1e-4])}),
                             expect=_is_str, invalid=(Bad({"x": 1e-3, "floor": 0.0}, "floor"), Bad({"x": None}, "x"),
                                                      Bad({"x": 1.0, "dtype": torch.int8}, "dtype"))),
    "clbook.fmt.floor_for": Spec(valid=st.fixed_dictionaries({"dtype": st.sampled_from([torch.float64, torch.float32])}), expect=scalar,
                                 invalid=(Bad({"dtype": torch.float16}, "dtype"),)),
    "clbook.fmt.percent": Spec(valid=st.fixed_dictionaries({"x": st.floats(0, 1)}), expect=_is_str, invalid=(Bad({"x": "a"}, "x"),)),
    "clbook.fmt.pm": Spec(valid=st.fixed_dictionaries({"mean": st.floats(-1, 1), "sd": st.floats(0, 1)}), expect=_is_str,
                          invalid=(Bad({"mean": 0.5, "sd": [0.1]}, "sd"), Bad({"mean": 0.5, "sd": 0.1, "digits": 9}, "digits"))),
    "clbook.fmt.glue": Spec(exempt="emits display data for the book's glue roles; tests/unit/test_fmt.py checks it against myst-nb's"),
    # verify
    "clbook.verify.CheckRecord": Spec(exempt=EXEMPT_RECORD),
    "clbook.verify.Agreement": Spec(exempt=EXEMPT_RECORD),
    "clbook.verify.TableComparison": Spec(exempt=EXEMPT_RECORD),
    "clbook.verify.check": Spec(
        valid=st.fixed_dictionaries({"label": st.just("acl-thm-1"), "quantity": st.just("q"), "measured": st.floats(0, 1e-3),
                                     "bound": st.just(1.0)}),
        invalid=(Bad({"label": "thm-1", "quantity": "q", "measured": 1.0, "bound": 2.0}, "label"),
                 Bad({"label": "acl-thm-1", "quantity": "", "measured": 1.0, "bound": 2.0}, "quantity"),
                 Bad({"label": "acl-thm-1", "quantity": "q", "measured": 1.0, "predicted": 1.0}, "tolerance"),
                 Bad({"label": "acl-thm-1", "quantity": "q", "measured": [], "bound": 1.0}, "measured"),
                 Bad({"label": "acl-thm-1", "quantity": "q", "measured": 1.0, "bound": 2.0, "kind": "x"}, "kind"),
                 Bad({"label": "acl-thm-1", "quantity": "q", "measured": 1.0, "bound": 2.0, "kind": "stored"}, "source"),
                 Bad({"label": "acl-thm-1", "quantity": "q", "measured": 1.0, "predicted": 1.0, "rtol": -1.0}, "rtol"),
                 Bad({"label": "acl-thm-1", "quantity": "q", "measured": 1.0, "bound": 2.0, "floor": 0.0}, "floor"))),
    "clbook.verify.records": Spec(valid=fixed(), expect=lambda out, kw: isinstance(out, list)),
    "clbook.verify.clear": Spec(valid=fixed()),
    "clbook.verify.report": Spec(exempt="needs checks recorded in the same kernel; tests/unit/test_verify.py covers it, and "
                                        "every chapter ends with it"),
    "clbook.verify.collect": Spec(valid=fixed(paths=[]), expect=lambda out, kw: out == [],
                                  invalid=(Bad({"paths": ["/nonexistent/chapter.ipynb"]}, "chapter.ipynb", (FileNotFoundError,)),)),
    "clbook.verify.summarise": Spec(valid=fixed(recs=[]), expect=lambda out, kw: sum(out["counts"].values()) == 0),
    "clbook.verify.agreement": Spec(
        valid=st.fixed_dictionaries({"paper": st.floats(0, 1), "paper_sd": st.floats(0, 1), "n_paper": st.integers(1, 10),
                                     "ours": st.floats(0, 1), "ours_sd": st.floats(0, 1), "n_ours": st.integers(1, 10)}),
        invalid=(Bad({"paper": 0.5, "paper_sd": -0.1, "n_paper": 5, "ours": 0.5, "ours_sd": 0.1, "n_ours": 5}, "paper_sd"),
                 Bad({"paper": 0.5, "paper_sd": 0.1, "n_paper": 0, "ours": 0.5, "ours_sd": 0.1, "n_ours": 5}, "n_paper"),
                 Bad({"paper": float("nan"), "paper_sd": 0.1, "n_paper": 5, "ours": 0.5, "ours_sd": 0.1, "n_ours": 5}, "paper"),
                 Bad({"paper": 0.5, "paper_sd": 0.1, "n_paper": 5, "ours": 0.5, "ours_sd": 0.1, "n_ours": 5, "k": 0}, "k"))),
    "clbook.verify.compare_table": Spec(
        valid=st.fixed_dictionaries({"paper": st.just({"a": (0.5, 0.1), "b": (0.7, 0.0)}),
                                     "ours": st.fixed_dictionaries({"a": st.lists(st.floats(0, 1), min_size=1, max_size=5),
                                                                    "b": st.lists(st.floats(0, 1), min_size=1, max_size=5)}),
                                     "n_paper": st.integers(1, 10)}),
        expect=_tables,
        invalid=(Bad({"paper": {}, "ours": {}, "n_paper": 5}, "paper"), Bad({"paper": {"a": (0.5, 0.1)}, "ours": {}, "n_paper": 5}, "ours"),
                 Bad({"paper": {"a": (0.5, 0.1)}, "ours": {"a": []}, "n_paper": 5}, "ours"))),
    "clbook.verify.detectable_difference": Spec(
        valid=st.fixed_dictionaries({"sd_a": st.floats(0, 1), "n_a": st.integers(1, 20), "sd_b": st.floats(0, 1), "n_b": st.integers(1, 20)}),
        expect=scalar, invalid=(Bad({"sd_a": 0.1, "n_a": 5, "sd_b": 0.1, "n_b": 5, "power": 1.0}, "power"),
                                Bad({"sd_a": -1, "n_a": 5, "sd_b": 0.1, "n_b": 5}, "sd_a"))),
    "clbook.verify.Alternative": Spec(
        valid=st.fixed_dictionaries({"claim": st.just("the sign flipped"), "predicted": st.floats(-1, 1)}),
        expect=lambda out, kw: isinstance(out, clbook.verify.Alternative) and None,
        invalid=(Bad({"claim": "", "predicted": 1.0}, "claim"), Bad({"claim": "x"}, "predicted"),
                 Bad({"claim": "x", "predicted": 1.0, "measured": 1.0}, "measured"))),
    "clbook.verify.PairedTest": Spec(exempt=EXEMPT_RECORD),
    "clbook.verify.conclude": Spec(
        valid=st.fixed_dictionaries({"label": st.just("pokle-tab-2"), "verdict": st.sampled_from(list(clbook.verify.VERDICTS))}),
        expect=lambda out, kw: out == kw["verdict"] and None,
        invalid=(Bad({"label": "tab-2", "verdict": "reproduced"}, "label"), Bad({"label": "pokle-tab-2", "verdict": "maybe"}, "verdict"))),
    "clbook.verify.conclusions": Spec(valid=fixed(), expect=lambda out, kw: isinstance(out, dict) and None),
    "clbook.verify.t_cutoff": Spec(
        valid=st.fixed_dictionaries({"df": st.integers(1, 100), "tests": st.integers(1, 50)}),
        expect=lambda out, kw: out > 1.9 and None,
        invalid=(Bad({"df": 0}, "df"), Bad({"df": 4, "tests": 0}, "tests"), Bad({"df": 4, "alpha": 1.5}, "alpha"))),
    "clbook.verify.paired_test": Spec(
        valid=st.fixed_dictionaries({"a": st.lists(st.floats(0, 1), min_size=3, max_size=3),
                                     "b": st.lists(st.floats(0, 1), min_size=3, max_size=3)}),
        expect=lambda out, kw: out.verdict in ("holds", "reversed", "within noise") and None,
        invalid=(Bad({"a": [1.0], "b": [1.0]}, "a and b"), Bad({"a": [1.0, 2.0], "b": [1.0, 2.0], "power": 2.0}, "power"),
                 Bad({"a": [1.0, float("nan")], "b": [1.0, 2.0]}, "a and b"))),
    # linalg
    "clbook.linalg.haar_orthonormal": Spec(
        valid=st.integers(1, 6).flatmap(lambda n: st.fixed_dictionaries({"n": st.just(n), "k": st.integers(1, n), "generator": generators()})),
        expect=lambda out, kw: clbook.linalg.stiefel_error(out) < 1e-12 and None,
        invalid=(Bad({"n": 2, "k": 3, **_g}, "k"), Bad({"n": 0, **_g}, "n"), Bad({"n": 2, "generator": 3}, "generator"),
                 Bad({"n": 2, **_g, "batch": (0,)}, "batch"))),
    "clbook.linalg.retract": Spec(valid=st.fixed_dictionaries({"W": tensors(5, 3), "method": st.sampled_from(["qr", "polar"])}),
                                  expect=shape(5, 3),
                                  invalid=(Bad({"W": torch.zeros(2, 3)}, "W"), Bad({"W": torch.ones(3, 2), "method": "x"}, "method"),
                                           Bad({"W": torch.ones(3, 2, dtype=torch.int64)}, "W"),
                                           Bad({"W": torch.full((3, 2), float("nan"))}, "W"))),
    "clbook.linalg.stiefel_error": Spec(valid=st.fixed_dictionaries({"W": tensors(4, 2)}), expect=scalar,
                                        invalid=(Bad({"W": torch.zeros(3)}, "W"), Bad({"W": [[1.0]]}, "W"))),
    "clbook.activations.Activation": Spec(exempt=EXEMPT_RECORD + " (the registry's entries; clbook.activations.REGISTRY holds them)"),
    "clbook.activations.canonical": Spec(valid=st.fixed_dictionaries({"name": st.sampled_from(["relu", "leakyrelu", "tanh"])}),
                                         expect=lambda out, kw: out in clbook.activations.REGISTRY,
                                         invalid=(Bad({"name": "swish"}, "activation"), Bad({"name": 3}, "activation"))),
    "clbook.activations.supported": Spec(valid=st.fixed_dictionaries({"_args": st.just(("relu", "leakyrelu"))}),
                                         expect=lambda out, kw: out == kw["_args"], invalid=(Bad({"_args": ("relu", "gelu")}, "activation"),)),
    "clbook.activations.apply": Spec(valid=st.fixed_dictionaries({"t": tensors(3, 2), "name": st.sampled_from(list(clbook.activations.REGISTRY))}),
                                     expect=shape(3, 2), invalid=(Bad({"t": "x", "name": "relu"}, "t"), Bad({"t": torch.ones(2), "name": "gelu"}, "activation"),
                                                                  Bad({"t": torch.ones(2), "name": "leaky_relu", "slope": float("nan")}, "slope"))),
    "clbook.activations.derivative": Spec(valid=st.fixed_dictionaries({"t": tensors(3, 2), "name": st.sampled_from(list(clbook.activations.REGISTRY))}),
                                          expect=shape(3, 2), invalid=(Bad({"t": torch.ones(2), "name": "relu", "tol": -1.0}, "tol"),
                                                                       Bad({"t": [1.0], "name": "relu"}, "t"))),
    "clbook.linalg.unit_rows": Spec(valid=st.fixed_dictionaries({"X": tensors(4, 3)}), expect=shape(4, 3),
                                    invalid=(Bad({"X": torch.ones(2, 2), "eps": -1.0}, "eps"), Bad({"X": "x"}, "X"))),
    "clbook.linalg.unit_columns": Spec(valid=st.fixed_dictionaries({"W": tensors(4, 3)}), expect=shape(4, 3),
                                       invalid=(Bad({"W": torch.ones(3)}, "W"),)),
    "clbook.linalg.unit_frobenius": Spec(valid=st.fixed_dictionaries({"W": tensors(2, 4, 3)}), expect=shape(2, 4, 3),
                                         invalid=(Bad({"W": torch.ones(3)}, "W"), Bad({"W": torch.ones(2, 2), "eps": 0.0}, "eps"))),
    "clbook.linalg.single_thread": Spec(exempt="a context manager without arguments; tests/unit/test_linalg.py checks it restores the "
                                               "thread count"),
    # results
    "clbook.results.load": Spec(valid=st.sampled_from([{"experiment": "wide", "name": "fig2"}, {"experiment": "landscape", "name": "table2-independent"}]),
                                expect=lambda out, kw: isinstance(out, dict),
                                invalid=(Bad({"experiment": "nope", "name": "x"}, "experiment"),
                                         Bad({"experiment": "wide", "name": "../x"}, "name"),
                                         Bad({"experiment": "wide", "name": "missing"}, "missing", (FileNotFoundError,)))),
    "clbook.results.exists": Spec(valid=fixed(experiment="wide", name="fig2"), expect=lambda out, kw: out is True,
                                  invalid=(Bad({"experiment": "x", "name": "y"}, "experiment"),)),
    "clbook.results.names": Spec(valid=st.fixed_dictionaries({"experiment": st.sampled_from(list(clbook.results.EXPERIMENTS))}),
                                 expect=lambda out, kw: len(out) >= 1, invalid=(Bad({"experiment": "x"}, "experiment"),)),
    "clbook.results.user_dir": Spec(valid=st.fixed_dictionaries({"experiment": st.sampled_from(list(clbook.results.EXPERIMENTS))}),
                                    expect=lambda out, kw: "site-packages" not in str(out), invalid=(Bad({"experiment": "x"}, "experiment"),)),
    "clbook.results.write_json": Spec(exempt="writes a file; tests/unit/test_results.py checks it is atomic and leaves no temporary file"),
    "clbook.results.read_json": Spec(exempt="reads a file; tests/unit/test_results.py checks its errors on a missing or invalid file"),
    "clbook.results.job_provenance": Spec(valid=fixed(), expect=lambda out, kw: set(out) == {"code", "machine", "libraries"}),
    "clbook.results.library_versions": Spec(valid=fixed(), expect=lambda out, kw: {"python", "clbook", "torch"} <= set(out)),
    "clbook.results.provenance": Spec(valid=fixed(command="c", seconds=1.0), expect=lambda out, kw: set(out) >= {"code", "machine"},
                                      invalid=(Bad({"command": "c", "seconds": "x"}, "x", (ValueError, TypeError)),)),
    "clbook.results.code_version": Spec(valid=fixed(), expect=_is_str),
    "clbook.results.machine": Spec(valid=fixed(), expect=_is_str),
    # nets
    "clbook.nets.MLP": Spec(valid=st.fixed_dictionaries({"_args": st.tuples(st.just([3, 4, 2])), "generator": generators(),
                                                         "activation": st.sampled_from(["relu", "linear", "tanh"])}),
                            expect=_nets_ok,
                            invalid=(Bad({"_args": ([3],), **_g}, "sizes"), Bad({"_args": ([3, 0],), **_g}, "sizes"),
                                     Bad({"_args": ([3, 2],), **_g, "activation": "gelu9"}, "activation"),
                                     Bad({"_args": ([3, 2],), **_g, "dtype": torch.int32}, "dtype"),
                                     Bad({"_args": ([3, 2],), **_g, "device": "nope"}, "device"),
                                     Bad({"_args": ([3, 2],), "generator": 0}, "generator"))),
    # viz, widgets
    "clbook.viz.use_style": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.figure": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.light_log_ticks": Spec(exempt=EXEMPT_PLOT),
    "clbook.viz.Table": Spec(exempt=EXEMPT_PLOT),
    "clbook.widgets.panel": Spec(exempt=EXEMPT_WIDGET),
    "clbook.widgets.static": Spec(exempt=EXEMPT_WIDGET),
    "clbook.widgets.slider": Spec(exempt=EXEMPT_WIDGET),
    "clbook.widgets.log_slider": Spec(exempt=EXEMPT_WIDGET),
    "clbook.widgets.int_slider": Spec(exempt=EXEMPT_WIDGET),
    "clbook.widgets.dropdown": Spec(exempt=EXEMPT_WIDGET),
    "clbook.widgets.toggle": Spec(exempt=EXEMPT_WIDGET),
    "clbook.widgets.PanelSpec": Spec(
        valid=fixed(chapter="ch00", figure=lambda **kw: None, controls=dict),
        expect=lambda out, kw: out.chapter == "ch00",
        invalid=(Bad({"chapter": "ch00", "figure": 3, "controls": dict}, "figure"),
                 Bad({"chapter": "ch00", "figure": print, "controls": None}, "controls"))),
    "clbook.widgets.extremes": Spec(
        valid=st.floats(0.0, 1.0).map(lambda v: {"controls": {"a": _widgets.slider("a", v, 0.0, 1.0, 0.1),
                                                               "b": _widgets.toggle("b", True)}}),
        expect=lambda out, kw: len(out) >= 3 and all(set(v) == {"a", "b"} for v in out),
        invalid=(Bad({"controls": 3}, "controls"), Bad({"controls": {"a": 1.0}}, "controls"))),
    "clbook.widgets.render_png": Spec(
        valid=st.integers(30, 120).map(lambda dpi: {"fig": _small_figure(), "dpi": dpi}),
        expect=lambda out, kw: out[:8] == b"\x89PNG\r\n\x1a\n" and None,
        invalid=(Bad({"fig": 3}, "fig"), Bad({"fig": _small_figure(), "dpi": 5}, "dpi"))),
    "clbook.widgets.frame_grid": Spec(
        valid=st.floats(0.0, 1.0).map(lambda v: {"controls": {"a": _widgets.slider("a", v, 0.0, 1.0, 0.1),
                                                               "b": _widgets.toggle("b", True),
                                                               "c": _widgets.dropdown("c", ["x", "y", "z"])}}),
        expect=lambda out, kw: (len(out["frames"]) == 1 + sum(len(c["labels"]) - 1 for c in out["controls"])
                                and out["frames"][""] == {n: c.value for n, c in kw["controls"].items()}) and None,
        invalid=(Bad({"controls": {}}, "controls"), Bad({"controls": {"a": 1.0}}, "controls"),
                 Bad({"controls": {"b": _widgets.toggle("b")}, "points": 1}, "points"))),
    # runner
    "clbook.experiments.runner.WorkersLost": Spec(
        exempt="an exception the runner raises when a Dask cluster loses every worker; tests/unit/test_runner_faults.py"),
    "clbook.experiments.runner.check_out": Spec(
        valid=st.just({"out": __import__("tempfile").mkdtemp(prefix="clbook-api-out-")}),
        expect=lambda out, kw: out.is_dir() and None,
        invalid=(Bad({"out": __file__}, "--out"),)),
    "clbook.experiments.runner.Job": Spec(valid=st.fixed_dictionaries({"key": st.text(min_size=1, max_size=5),
                                                                       "params": st.dictionaries(st.text(max_size=3), st.integers())}),
                                          invalid=(Bad({"key": ""}, "key"), Bad({"key": "a", "params": []}, "params"),
                                                   Bad({"key": "a", "cost": -1}, "cost"))),
    "clbook.experiments.runner.ArgumentParser": Spec(exempt="an argparse parser class; tests/unit/test_failure_is_loud.py runs the "
                                                            "command lines built on it with bad arguments"),
    "clbook.experiments.runner.run_jobs": Spec(exempt="runs processes and writes files; tests/unit/test_runner.py covers resume, "
                                                      "atomicity, bad arguments and the Dask backend"),
    "clbook.experiments.runner.add_arguments": Spec(exempt="builds an argparse parser; tests/unit/test_runner.py parses good and bad "
                                                           "command lines with it"),
    "clbook.experiments.runner.int_list": Spec(valid=st.lists(st.integers(0, 99), min_size=1).map(lambda v: {"text": ",".join(map(str, v))}),
                                               expect=lambda out, kw: all(isinstance(v, int) for v in out)),
    "clbook.experiments.runner.float_list": Spec(valid=st.lists(st.floats(-1, 1), min_size=1).map(lambda v: {"text": ",".join(map(repr, v))}),
                                                 expect=lambda out, kw: len(out) >= 1),
    "clbook.experiments.runner.choice_list": Spec(valid=fixed(choices=["a", "b"]), expect=lambda out, kw: out("a") == ["a"]),
    "clbook.experiments.runner.positive_int": Spec(valid=st.integers(1, 99).map(lambda v: {"text": str(v)}), expect=scalar),
}

assert runner  # imported for its names above
__all__ = ["DOMAINS", "bad"]
