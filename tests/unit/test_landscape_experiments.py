"""Tests of clbook.experiments.landscape (Chapter 17): stacked training = single runs, the step = the reference step,
the ablation factors, the named experiments through the runner, the command line, bench and the faithfulness shims."""
import json
import math

import pytest
import torch

import clbook
from clbook.data import sparse_coding as sc
from clbook.experiments import landscape as L
from clbook.experiments.landscape import authors as LF
from clbook.experiments.landscape import benchmark as LB
from clbook.experiments.landscape import models as LM
from clbook.experiments.landscape import training as LT
from clbook.losses import ntxent as NX

SMALL = dict(p=12, d=4, m=8, n=40, batch=16, epochs=4, keep_weights=True)


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0)


@pytest.mark.parametrize("name", ["NCL-basic", "CL-basic", "NCL-basic-2L", "NCL-linear", "CL-linear", "SimCLR", "SimSiam", "NCL-pred"])
def test_stacked_equals_single(name):
    both = L.train(name, sparsities=(0.1, 0.3), seeds=(1, 2), **SMALL)
    one = L.train(name, sparsities=(0.3,), seeds=(2,), **SMALL)
    assert torch.equal(both.W[3], one.W[0])
    assert both.minimum[-1][3] == one.minimum[-1][0]
    assert both.loss[3] == one.loss[0]


@pytest.mark.parametrize("factor", [dict(noise_draw="view"), dict(noise_draw="epoch"), dict(latent="exact"), dict(bias_init="uniform"),
                                    dict(drop_last=True), dict(paired=True), dict(scheme="dependent", noise=0.0)])
@pytest.mark.parametrize("name", ["CL-basic", "NCL-basic"])
def test_stacked_equals_single_for_every_factor(name, factor):
    kw = dict(SMALL, dtype=torch.float32) | factor
    both = L.train(name, sparsities=(0.2, 0.3), seeds=(1, 2), **kw)
    one = L.train(name, sparsities=(0.3,), seeds=(1,), **kw)
    assert torch.equal(both.W[2], one.W[0])


def test_warm_start_and_normalisation_stacked():
    kw = dict(SMALL, warm=0.02, normalize="row")
    both = L.train("NCL-basic", sparsities=(0.2,), seeds=(1, 2, 3), **kw)
    one = L.train("NCL-basic", sparsities=(0.2,), seeds=(3,), **kw)
    assert torch.equal(both.W[2], one.W[0])
    assert torch.allclose(both.W.norm(dim=-1), torch.ones(3, 8, dtype=torch.float64), atol=1e-12)
    assert max(both.maximum[0]) > 0.99  # a warm start with sigma = 0.02 puts neurons next to atoms


def _reference_step_grads(P, a, T):
    """The step the old code took: encode each view separately [R, B, p], concatenate, NT-Xent by logsumexp + autograd."""
    spec = L.MODELS["CL-basic"]
    h1, h2 = LM.encode(P, a[:, 0], spec), LM.encode(P, a[:, 1], spec)
    loss = NX.nt_xent_reference(h1, h2, temperature=T)
    return loss.detach(), torch.autograd.grad(loss.sum(), list(P.values()))


@pytest.mark.parametrize("dtype, rtol", [(torch.float64, 1e-10), (torch.float32, 2e-3)])
def test_optimised_step_equals_reference_step(dtype, rtol):
    g = clbook.generator(11)
    spec, P, H, a = LB._cl_step_state("CL-basic", 3, 64, 12, 4, 8, g, dtype=dtype)
    with torch.no_grad():  # non-zero thresholds, so SReLU's dead zone matters
        P["b0"].copy_(0.05 * clbook.randn(3, 8, generator=g, dtype=dtype))
    ref_loss, ref_grads = _reference_step_grads(P, a, 0.05)
    h = LM.encode(P, a, spec)
    loss = NX.nt_xent_views_unchecked(h, 0.05)
    grads = torch.autograd.grad(loss.sum(), list(P.values()))
    torch.testing.assert_close(loss.detach(), ref_loss, rtol=rtol, atol=0.0)
    for x, y in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(x, y, rtol=rtol, atol=rtol * y.abs().max().item())


@pytest.mark.parametrize("name", ["CL-basic", "CL-linear"])
def test_fused_encoder_equals_autograd(name):
    g = clbook.generator(3)
    spec, P, H, a = LB._cl_step_state(name, 3, 32, 12, 4, 8, g, dtype=torch.float64)
    with torch.no_grad():  # thresholds of both signs (a negative one makes SReLU 2y inside (b, -b)), a trained BatchNorm
        P["b0"].copy_(0.3 * clbook.randn(3, 8, generator=g))
        if "g0" in P:
            P["g0"].add_(0.2 * clbook.randn(3, 8, generator=g))
            P["c0"].add_(0.1 * clbook.randn(3, 8, generator=g))
    h = LM.encode(P, a, spec)
    ref = h / h.norm(dim=-1, keepdim=True)
    gZ = clbook.randn(*ref.shape, generator=g)
    ref_grads = torch.autograd.grad((ref * gZ).sum(), list(P.values()))
    Z = LM.SharedEncoder.apply(a, P["W0"], P["b0"], P.get("g0"), P.get("c0"), spec.srelu)
    torch.testing.assert_close(Z, ref, rtol=1e-12, atol=1e-14)
    for x, y in zip(torch.autograd.grad((Z * gZ).sum(), list(P.values())), ref_grads, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-13)
    args = [P[k].detach().clone().requires_grad_() for k in P]
    fn = lambda W, b, *gc: LM.SharedEncoder.apply(a[:, :, :5], W, b, *(gc or (None, None)), spec.srelu)  # noqa: E731
    assert torch.autograd.gradcheck(fn, args)


def test_step_update_is_sgd():
    g = clbook.generator(12)
    spec, P, H, a = LB._cl_step_state("CL-linear", 2, 32, 12, 4, 8, g, dtype=torch.float64)
    before = {k: v.detach().clone() for k, v in P.items()}
    grads = torch.autograd.grad(NX.nt_xent_views_unchecked(LM.encode(P, a, spec), 0.05).sum(), list(P.values()))
    LT.step_shared(P, H, a, spec, 0.05, 0.1, None)
    for (k, v), gr in zip(P.items(), grads, strict=True):
        torch.testing.assert_close(v.detach(), before[k] - 0.1 * gr, rtol=1e-12, atol=1e-14)


def _record_masks(monkeypatch):
    drawn = []
    real = sc.masks

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        drawn.append(out[0].clone())
        return out

    monkeypatch.setattr(sc, "masks", spy)
    return drawn


@pytest.mark.parametrize("paired", [True, False])
def test_paired_runs_see_the_same_masks(monkeypatch, paired):
    drawn = _record_masks(monkeypatch)
    kw = dict(SMALL, epochs=2, paired=paired)
    L.train("CL-basic", sparsities=(0.2,), seeds=(1,), **kw)
    cl = list(drawn)
    drawn.clear()
    L.train("NCL-basic", sparsities=(0.2,), seeds=(1,), **kw)
    same = all(torch.equal(x, y) for x, y in zip(cl, drawn, strict=True))
    assert same == paired


def test_exact_latents_match_the_codes_counts():
    g = clbook.generator(2)
    for beta, neg, pos in ((0.1, 1, 1), (0.2, 1, 1), (0.3, 2, 1)):  # gen_z's counts for d = 10
        Z = L.exact_latents(500, 10, sparsity=beta, generator=g)
        assert ((Z == -1).sum(1) == neg).all() and ((Z == 1).sum(1) == pos).all()
        assert (Z != 0).float().mean(0).min() > 0.1  # every position is used
    with pytest.raises(ValueError, match="non-zero"):
        L.exact_latents(3, 1, sparsity=1.0, generator=g)


def _capture_views(monkeypatch):
    seen = []
    real = LT.step_shared

    def spy(P, H, a, *args):
        seen.append(a.detach().clone())
        return real(P, H, a, *args)

    monkeypatch.setattr(LT, "step_shared", spy)
    return seen


@pytest.mark.parametrize("noise_draw, views_differ, epochs_differ",
                         [("sample", False, False), ("epoch", False, True), ("view", True, True)])
def test_noise_draws(monkeypatch, noise_draw, views_differ, epochs_differ):
    seen = _capture_views(monkeypatch)
    # keep = 1: both views are the whole x, so they differ only by their noise; batch = n: one step per epoch
    L.train("CL-linear", sparsities=(0.2,), seeds=(1,), p=12, d=4, m=8, n=16, batch=16, epochs=2, keep=1.0, noise=0.1,
            noise_draw=noise_draw)
    first, second = seen
    assert (not torch.equal(first[:, 0], first[:, 1])) == views_differ
    rows = lambda a: set(map(tuple, a[0, 0].tolist()))  # noqa: E731 - the samples, whatever their order
    assert (rows(first) != rows(second)) == epochs_differ


def test_noise_zero_views_are_masked_clean_data(monkeypatch):
    seen = _capture_views(monkeypatch)
    L.train("CL-linear", sparsities=(0.2,), seeds=(1,), p=12, d=4, m=8, n=16, batch=16, epochs=1, keep=1.0, noise=0.0)
    a = seen[0]
    assert torch.equal(a[:, 0], a[:, 1])  # no noise, no masking: both views are the clean x = Mz
    assert torch.linalg.matrix_rank(a[0, 0].double()).item() <= 4  # the 16 samples lie in the span of the d = 4 atoms


def test_drop_last_and_bias_init(monkeypatch):
    calls = []
    real = LT._step_two
    monkeypatch.setattr(LT, "_step_two", lambda *args: calls.append(1) or real(*args))
    L.train("NCL-linear", sparsities=(0.2,), seeds=(1,), p=12, d=4, m=8, n=40, batch=16, epochs=1, drop_last=True)
    assert len(calls) == 2  # 40 = 16 + 16 + 8: the last 8 are dropped
    calls.clear()
    L.train("NCL-linear", sparsities=(0.2,), seeds=(1,), p=12, d=4, m=8, n=40, batch=16, epochs=1)
    assert len(calls) == 3
    P, _ = LM.init_network(clbook.generator(0), L.MODELS["NCL-basic-2L"], p=12, d=4, m=8, M=None, warm=None, bias_init="uniform")
    assert 0 < P["b0"].abs().max() <= 12 ** -0.5 and 0 < P["b1"].abs().max() <= 8 ** -0.5


def test_rows_keep_trajectories():
    res = L.train("NCL-linear", sparsities=(0.1, 0.2), seeds=(1, 2), record=2, **SMALL)
    rows = res.rows()
    assert len(rows) == 4 and rows[1]["seed"] == 2 and rows[2]["sparsity"] == 0.2
    assert rows[0]["epochs"] == [0, 2, 4]
    assert all(len(r[k]) == 3 for r in rows for k in ("maximum", "median", "minimum"))
    assert rows[3]["end"][2] == rows[3]["minimum"][-1]
    s = L.seed_spread(rows)
    assert s[0.1][2][0] == pytest.approx((rows[0]["end"][2] + rows[1]["end"][2]) / 2)
    t = L.trajectory_summary(rows, metric="median")
    assert t[0.2]["epochs"] == [0, 2, 4] and t[0.2]["count"] == 2
    assert t[0.2]["mean"][-1] == pytest.approx((rows[2]["median"][-1] + rows[3]["median"][-1]) / 2)
    assert all(not math.isnan(v) for v in res.loss)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(model="nope"), ValueError, "model"),
    (dict(model="CL-basic", sparsities=(1.5,)), ValueError, "sparsity"),
    (dict(model="CL-basic", seeds=()), ValueError, "non-empty"),
    (dict(model="CL-basic", epochs=0), ValueError, "epochs"),
    (dict(model="CL-basic", lr=-1.0), ValueError, "lr"),
    (dict(model="CL-basic", keep=2.0), ValueError, "keep"),
    (dict(model="CL-basic", scheme="both"), ValueError, "scheme"),
    (dict(model="CL-basic", normalize="diag"), ValueError, "normalize"),
    (dict(model="CL-basic", warm=-0.1), ValueError, "warm"),
    (dict(model="CL-basic", temperature=0.0), ValueError, "temperature"),
    (dict(model="CL-basic", noise=-0.1), ValueError, "noise"),
    (dict(model="CL-basic", noise_draw="batch"), ValueError, "noise_draw"),
    (dict(model="CL-basic", latent="gaussian"), ValueError, "latent"),
    (dict(model="CL-basic", bias_init="normal"), ValueError, "bias_init"),
    (dict(model="CL-basic", drop_last=1), TypeError, "drop_last"),
    (dict(model="CL-basic", paired="yes"), TypeError, "paired"),
    (dict(model="CL-basic", n=100, batch=512, drop_last=True), ValueError, "drop_last"),
])
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        L.train(**kwargs)


def test_step_flops():
    assert L.step_flops("CL-basic") == 6 * 1024 ** 2 * 50 + 4 * 1024 * 50 * 50
    assert L.step_flops("SimCLR") == L.step_flops("CL-basic") + 6 * 1024 * 50 * 50
    with pytest.raises(ValueError, match="model"):
        L.step_flops("NCL-basic")


# ------------------------------------------------------------------------------------------------ experiments


def test_jobs_of_the_named_experiments():
    t2 = L.jobs("table2-dependent", epochs=8000)
    assert len(t2) == 6 * 3 and len({j.key for j in t2}) == 18
    assert all(j.params["scheme"] == "dependent" and j.params["paired"] and j.params["record"] == 100 for j in t2)
    assert t2[0].params["seeds"] == [1, 2, 3, 4, 5] and t2[0].params["sparsities"] == [0.1]
    assert max(t2, key=lambda j: j.cost).params["model"] in ("CL-basic", "CL-linear")
    ab = L.jobs("ablation")
    assert {j.key.split("/")[0] for j in ab} == set(L.ABLATIONS) and len(ab) == sum(len(m) for _, m in L.ABLATIONS.values())
    assert all(j.params["sparsities"] == [0.2] and j.params["paired"] for j in ab)
    assert all(j.params.get("n", 1000) == 3000 for j in ab if j.key.startswith("n=3000"))
    assert all(j.params["noise_draw"] == "view" for j in ab if j.key.startswith("noise_draw=view"))
    assert [j.key for j in L.jobs("ablation", models=["CL-linear"])] == ["noise=0/CL-linear/0.2", "noise_draw=view/CL-linear/0.2"]
    pilot = L.jobs("pilot")
    assert {j.key.split("/")[0] for j in pilot} == set(L.PILOT) and pilot[0].params["epochs"] == 1000
    t1 = L.jobs("table1", quick=True)
    assert all(j.params["keep"] == 0.1 and j.params["epochs"] == 20 and j.params["seeds"] == [1, 2] for j in t1)
    assert [j.key for j in L.jobs("table2-independent", models=["NCL-linear"], sparsities=[0.2])] == ["NCL-linear/0.2"]
    with pytest.raises(ValueError, match="experiment"):
        L.jobs("table9")
    with pytest.raises(ValueError, match="model"):
        L.jobs("table2-independent", models=["nope"])


def test_run_through_the_runner_and_resume(tmp_path):
    kw = dict(epochs=2, seeds=[1], sparsities=[0.2], quick=True, out=tmp_path, workers=1, progress=False)
    data = L.run(["table1"], **kw)["quick-table1"]
    assert data["complete"] and set(data["jobs"]) == {"SimCLR/0.2", "SimSiam/0.2"}
    rows = L.rows_by_model(data)
    assert set(rows) == {"SimCLR", "SimSiam"} and rows["SimCLR"][0]["epochs"] == [0, 1, 2]
    stored = json.loads((tmp_path / "quick-table1.json").read_text())
    assert stored["jobs"]["SimCLR/0.2"]["result"]["rows"][0]["minimum"] == rows["SimCLR"][0]["minimum"]
    again = L.run(["table1"], **kw)["quick-table1"]  # resumed: nothing to redo
    assert again["provenance"]["resumed_jobs"] == 2
    with pytest.raises(ValueError, match="experiments"):
        L.run([], **kw)


def test_mixed_and_collect():
    row = lambda model, v: dict(model=model, sparsity=0.2, seed=1, end=[v, v, v])  # noqa: E731
    fake = lambda scheme: {"jobs": {f"{m}/0.2": {"result": {"rows": [row(m, 1.0 if scheme == "dep" else 0.0)]}}  # noqa: E731
                                    for m in ("CL-basic", "NCL-basic")}}
    mix = L.mixed(fake("ind"), fake("dep"))
    assert mix["CL-basic"][0]["end"][0] == 1.0 and mix["NCL-basic"][0]["end"][0] == 0.0
    old = L.rows_by_model(L.load("table4"))  # the older list-of-jobs format
    assert set(old) == {"warm=0.14", "warm=0.02", "warm=0.002"} and len(old["warm=0.14"]) == 15
    with pytest.raises(ValueError, match="missing"):
        L.mixed(fake("ind"), {"jobs": {}})


# ------------------------------------------------------------------------------------------------ command line


@pytest.mark.parametrize("argv, says", [
    (["table1", "--models", "NOPE"], "NOPE"),
    (["table1", "--seeds", "a,b"], "integers"),
    (["table1", "--sparsities", "0.2,2"], "sparsities"),
    (["table9"], "invalid choice"),
    (["bench", "table1"], "stand alone"),
    (["table1", "table1"], "once"),
    (["faithfulness"], "--checkout"),
    (["table1", "--epochs", "0"], "positive"),
])
def test_command_line_rejects_bad_input(argv, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        L.main(argv)
    assert exit_.value.code != 0
    err = capsys.readouterr().err
    assert "error" in err and says in err


def test_command_line_runs_several_experiments(tmp_path):
    argv = ["table1", "table4", "--quick", "--epochs", "2", "--seeds", "1", "--sparsities", "0.2", "--workers", "1", "--out", str(tmp_path)]
    assert L.main(argv) == 0
    for name, tags in (("table1", {"SimCLR/0.2", "SimSiam/0.2"}), ("table4", {"warm=0.14/0.2", "warm=0.02/0.2", "warm=0.002/0.2"})):
        data = json.loads((tmp_path / f"quick-{name}.json").read_text())
        assert data["complete"] and set(data["jobs"]) == tags
        assert not (tmp_path / f"quick-{name}.partial.json").exists()


def test_bench_reports_matmul_step_and_ratio():
    data = L.bench(epochs=1, runs=1, repeats=1, steps=1, models=["CL-linear"])
    s = data["summary"]
    assert s["matmul_gflops_median"] > 0 and s["step_gflops_median"] > 0
    assert s["ratio_median"] == pytest.approx(data["step_gflops"][0] / max(data["matmul_square_2048_gflops"][0],
                                                                           data["matmul_step_shape_gflops"][0]), rel=0.01)
    assert data["rows"][0]["model"] == "CL-linear" and data["rows"][0]["ms_per_epoch_per_run"] > 0
    assert data["provenance"]["command"].startswith("python -m clbook.experiments.landscape bench")


# ------------------------------------------------------------------------------------------------ faithfulness


FAKE_TRAIN = '''
def train(model, optimizer=None, train_loader=None, max_epochs=1, M=None, log_metrics=False, logger=None):
    for epoch in range(max_epochs):
        model.step()
        if log_metrics:
            log_all_metrics(model, M, None, model.loss, logger)
    return {}
alternate_train = train
from utils.log_metrics import check_sparse_coding_learning, log_all_metrics
'''
FAKE_METRICS = '''
def check_sparse_coding_learning(model, M):
    return model.value, model.value / 2, model.value / 4, None
def log_all_metrics(*args, **kwargs):
    raise RuntimeError("the shim should have replaced me")
'''
FAKE_MAIN = '''
import numpy as np, torch, wandb
from functions.train import train
class Model:
    value, loss = 0.0, torch.tensor(1.0)
    def step(self):
        self.value += 1.0
for i in range(2):
    run = wandb.init(name=f"trial-{i}", group="g")
    assert np.float is float
    train(Model(), M=None, max_epochs=4, log_metrics=True)
    run.finish()
'''


def test_authors_shim_records_their_metric(tmp_path):
    for path, text in (("functions/__init__.py", ""), ("functions/train.py", FAKE_TRAIN), ("utils/__init__.py", ""),
                       ("utils/log_metrics.py", FAKE_METRICS), ("main.py", FAKE_MAIN)):
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(text)
    import sys as _sys

    out = LF._run_authors(tmp_path, "main.py", [], record=2, python=_sys.executable, pythonpath=None, workdir=tmp_path)
    assert out["complete"] and len(out["runs"]) == 2
    assert out["runs"][1]["epochs"] == [0, 2, 4] and out["runs"][1]["maximum"] == [0.0, 2.0, 4.0]
    assert out["runs"][0]["minimum"] == [0.0, 0.5, 1.0]


def test_faithfulness_checks_its_arguments(tmp_path):
    with pytest.raises(ValueError, match="checkout"):
        L.faithfulness(tmp_path)
    for f in ("main.py", "main_simclr.py", "functions/train.py", "utils/log_metrics.py"):
        (tmp_path / f).parent.mkdir(exist_ok=True)
        (tmp_path / f).write_text("")
    with pytest.raises(ValueError, match="seeds"):
        L.faithfulness(tmp_path, seeds=(2, 3))
    with pytest.raises(ValueError, match="record"):
        L.faithfulness(tmp_path, epochs=25, record=10)


def test_estimate_schedules_largest_first():
    ms = {name: (10.0 if L.MODELS[name].loss == "ntxent" else 1.0) for name in L.MODELS}
    est = L.estimate(["table2-dependent"], ms, workers=2, epochs=100, seeds=[1, 2], sparsities=[0.2])
    e = est["experiments"]["table2-dependent"]
    assert e["jobs"]["CL-basic/0.2"] == round(10 / 1000 * 100 * 2)  # 2 s
    assert e["cpu_seconds"] == round(2 * 2 + 4 * 0.2)
    assert e["wall_seconds"] == round(2 + 2 * 0.2)  # CL-basic and CL-linear in parallel (2 s each), then 4 x 0.2 s on two workers
    with pytest.raises(ValueError, match="ms_per_epoch"):
        L.estimate(["table1"], {"SimCLR": 1.0})


def test_module_command_line_runs_jobs_in_worker_processes(tmp_path):
    """``python -m clbook.experiments.landscape`` with 2 workers: the jobs' function must reach the worker processes.

    Run as ``__main__``, the module's own functions would be pickled by value (with its autograd classes) and the
    workers fail to load them; the entry point therefore runs the imported module's ``main``.
    """
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "clbook.experiments.landscape", "table1", "--quick", "--workers", "2",
                           "--models", "SimSiam", "--sparsities", "0.2", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "quick-table1.json").is_file()


def test_end_values_and_paired_gap():
    rows = [dict(model="A", sparsity=0.2, seed=s, end=[0.9, 0.8, v]) for s, v in ((2, 0.5), (1, 0.4), (3, 0.6))]
    other = [dict(model="B", sparsity=0.2, seed=s, end=[0.9, 0.8, v]) for s, v in ((1, 0.1), (2, 0.3), (3, 0.2))]
    values = L.end_values({"A": rows, "B": other})
    assert values[("A", 0.2, "minimum")] == [0.4, 0.5, 0.6]  # ordered by seed
    mean, se = L.paired_gap(values, "A", "B", sparsity=0.2)
    diffs = [0.3, 0.2, 0.4]
    sd = (sum((d - 0.3) ** 2 for d in diffs) / 2) ** 0.5
    assert abs(mean - 0.3) < 1e-12 and abs(se - sd / 3 ** 0.5) < 1e-12
    with pytest.raises(ValueError, match="same seeds"):
        L.paired_gap(L.end_values({"A": rows, "B": other[:2]}), "A", "B", sparsity=0.2)


def test_ablation_factors_select_jobs_and_reject_unknown_ones(capsys):
    keys = [j.key for j in L.jobs("ablation", models=["CL-basic", "NCL-basic"], factors=["noise=0", "noise_draw=view"])]
    assert keys == ["noise=0/CL-basic/0.2", "noise=0/NCL-basic/0.2", "noise_draw=view/CL-basic/0.2", "noise_draw=view/NCL-basic/0.2"]
    with pytest.raises(ValueError, match="factor"):
        L.jobs("ablation", factors=["noise=7"])
    with pytest.raises(ValueError, match="factors"):
        L.jobs("table1", factors=["noise=0"])
    with pytest.raises(SystemExit):
        L.main(["ablation", "--factors", "nope"])
    assert "unknown 'nope'" in capsys.readouterr().err


def test_ablation_effects_are_paired_differences():
    def values(shift):
        return L.end_values({"A": [dict(model="A", sparsity=0.2, seed=s, end=[1, 1, v + shift]) for s, v in ((1, 0.1), (2, 0.3), (3, 0.2))],
                             "B": [dict(model="B", sparsity=0.2, seed=s, end=[1, 1, 0.1]) for s in (1, 2, 3)]})
    rows = L.ablation_effects(values(0.0), {"up": values(0.5)}, models=("A", "B"))
    assert rows[0]["factor"] == "baseline" and rows[0]["change"]["A"] == (0.0, 0.0)
    assert abs(rows[1]["change"]["A"][0] - 0.5) < 1e-12 and rows[1]["change"]["A"][1] < 1e-12  # a constant shift has SE 0
    assert abs(rows[1]["gap"][0] - 0.6) < 1e-12


def test_replay_reproduces_the_stored_run_and_fails_on_another():
    data = L.load("table2-independent")
    r = L.replay(data, "NCL-basic", sparsity=0.2, seed=1, epochs=100)
    assert r["epochs"] == [0, 100] and r["max_abs_diff"] < 1e-3  # stored values are rounded to 1e-4
    other = L.replay(L.load("table2-dependent"), "NCL-basic", sparsity=0.2, seed=1, epochs=100)
    run = next(x for x in L.rows_by_model(data)["NCL-basic"] if x["sparsity"] == 0.2 and x["seed"] == 1)
    assert max(abs(other["live"][m][1] - run[m][1]) for m in L.METRICS) > 0.02  # the other scheme's run is not this one


# ------------------------------------------------------------------------------------------------ command line, continued


def _fails(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        L.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m clbook.experiments.landscape: error: ")  # one line
    return err


@pytest.mark.parametrize("argv, says", [
    (["table1", "--factors", "noise=0"], "--factors applies to ablation and pilot only"),
    (["table1", "--checkout", "/tmp"], "--checkout applies to faithfulness only"),
    (["bench", "--seeds", "1"], "--seeds does not apply to bench"),
    (["faithfulness", "--checkout", "/tmp", "--models", "CL-basic"], "--models does not apply to faithfulness"),
])
def test_command_line_refuses_options_that_do_not_apply(argv, says, capsys):
    assert says in _fails(argv, capsys)


def test_command_line_checks_out_and_every_experiment_before_any_job(tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(LT, "train", lambda *a, **k: ran.append(1))
    afile = tmp_path / "file"
    afile.write_text("")
    assert "is an existing file" in _fails(["table1", "--quick", "--workers", "1", "--out", str(afile)], capsys)
    assert "is an existing file" in _fails(["bench", "--out", str(afile)], capsys)
    # the second experiment has no job for SimCLR: refused before the first one runs
    assert "no jobs" in _fails(["table1", "ablation", "--quick", "--models", "SimCLR", "--workers", "1", "--out", str(tmp_path)], capsys)
    assert not ran and not list(tmp_path.glob("quick-*"))


def test_command_line_help_lists_names_and_an_example(capsys):
    with pytest.raises(SystemExit) as exit_:
        L.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in (*L.EXPERIMENTS, *L.MODELS, "bench", "faithfulness", "--discard-complete"))
    assert "example:\n  python -m clbook.experiments.landscape " in out


def test_command_line_forwards_discard_complete(monkeypatch, tmp_path):
    seen = {}

    def fake(function, jobs, **kw):
        seen.update(kw)
        return {}

    monkeypatch.setattr(L.experiments.runner, "run_jobs", fake)
    argv = ["table1", "--quick", "--workers", "1", "--backend", "dask", "--out", str(tmp_path), "--discard-complete"]
    assert L.main(argv + ["--worker-timeout", "7"]) == 0
    assert seen["discard_complete"] is True and seen["out"] == tmp_path and seen["worker_timeout"] == 7


# ------------------------------------------------------------------------------------------------ the two Pokle encoders


def _shared_network(srelu: bool, bn: bool, thresholds: torch.Tensor):
    """Weights ``[1, m, p]``, thresholds ``[1, m]``, BatchNorm affine (trained-looking, so it is not the identity) in float64."""
    g = clbook.generator(21)
    P = {"W0": clbook.randn(1, 6, 9, generator=g), "b0": thresholds.reshape(1, 6).clone()}
    if bn:
        P["g0"] = 1 + 0.3 * clbook.randn(1, 6, generator=g)
        P["c0"] = 0.2 * clbook.randn(1, 6, generator=g)
    return {k: v.to(torch.float64).requires_grad_() for k, v in P.items()}, LM.Model("ntxent", bn=bn, srelu=srelu)


@pytest.mark.parametrize("bn", [False, True])
@pytest.mark.parametrize("activation", ["srelu", "linear"])
def test_the_two_pokle_encoders_agree(bn, activation):
    """clbook.dynamics.landscape.encode (Chapters 14-16) and the experiments' encoder (Chapter 17) on the same weights and inputs.

    Shared configurations: SReLU with thresholds b >= 0 (Eq. 14) or a linear layer plus bias, with or without
    BatchNorm (the dynamics module has none: it is applied to the same pre-activations with the experiments'
    ``batchnorm``, since Eq. 14 thresholds BN(Wa)), and the row-normalised outputs (the experiments' fused
    ``SharedEncoder``; the dynamics module returns unnormalised representations, normalised here). Outputs and
    gradients agree to float64 rounding (rtol 1e-12 on values of order 1). Differences by design, stated:
    the dynamics' ``srelu`` refuses thresholds b < 0 (the theory's SReLU), while the experiments allow them (the
    code's parameterisation: 2u inside (b, -b), see DEPARTURES["srelu"]); the dynamics' encoder works on one view
    ``[..., n, p]``, the experiments' on stacked runs ``[R, B, p]`` or both views ``[R, 2, B, p]``.
    """
    from clbook.dynamics import landscape as D

    g = clbook.generator(22)
    a = clbook.randn(1, 2, 16, 9, generator=g).to(torch.float64)
    b = torch.tensor([0.0, 0.05, 0.2, 0.4, 0.8, 1.5], dtype=torch.float64)  # SReLU thresholds >= 0, the dead zone active
    P, spec = _shared_network(activation == "srelu", bn, b)
    params = list(P.values())

    def dynamics(view):  # the Chapters 14-16 encoder on one view [n, p], BatchNorm (if any) on its pre-activations
        W, bias = P["W0"][0], P["b0"][0]
        if not bn:
            return D.encode(W, view, bias=bias, activation=activation)
        u = LM.batchnorm(view @ W.T, P["g0"][0], P["c0"][0])
        return D.srelu(u, bias) if activation == "srelu" else u + bias

    ref = torch.stack([dynamics(a[0, v]) for v in range(2)])[None]  # [1, 2, n, m]
    ours = LM.encode(P, a, spec)
    torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-14)
    w = clbook.randn(*ref.shape, generator=g).to(torch.float64)
    ref_grads = torch.autograd.grad((ref * w).sum(), params, retain_graph=True)
    for x, y in zip(torch.autograd.grad((ours * w).sum(), params), ref_grads, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-13)
    unit = ref / ref.norm(dim=-1, keepdim=True)  # row-normalised outputs: the fused encoder of the contrastive models
    Z = LM.SharedEncoder.apply(a, P["W0"], P["b0"], P.get("g0"), P.get("c0"), spec.srelu)
    torch.testing.assert_close(Z, unit, rtol=1e-12, atol=1e-14)
    for x, y in zip(torch.autograd.grad((Z * w).sum(), params), torch.autograd.grad((unit * w).sum(), params), strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-13)
    if activation == "srelu":  # the stated difference: a negative threshold is the experiments' parameterisation only
        with pytest.raises(ValueError, match="bias"):
            D.srelu(a[0, 0] @ P["W0"][0].T, -b)


def test_escape_epochs_finds_the_first_crossing():
    rows = [dict(model="CL-basic", sparsity=0.2, seed=s, epochs=[0, 100, 200, 300], minimum=m)
            for s, m in ((1, [0.3, 0.5, 0.85, 0.9]), (2, [0.3, 0.4, 0.5, 0.6]), (3, [0.81, 0.7, 0.9, 0.9]))]
    got = L.escape_epochs(rows)
    assert got == {(0.2, 1): 200, (0.2, 2): None, (0.2, 3): 0}
    assert L.escape_epochs(rows, threshold=0.55) == {(0.2, 1): 200, (0.2, 2): 300, (0.2, 3): 0}
    with pytest.raises(ValueError, match="threshold"):
        L.escape_epochs(rows, threshold=2)


def test_ablation_rest_completes_the_stored_ablation_at_0_2():
    """``ablation-rest`` holds exactly the jobs of ABLATION_SPARSITIES at Pr(sparse) 0.2 that the stored ``ablation``
    lacks: together they cover every factor and model that ``ablation-sparsities`` runs at 0.1 and 0.3."""
    stored = set(L.load("ablation")["jobs"])
    rest = {j.key for j in L.jobs("ablation-rest")}
    wanted = {f"{factor}/{name}/0.2" for factor, names in L.ABLATION_SPARSITIES.items() for name in names}
    assert not stored & rest
    assert wanted <= stored | rest and rest <= wanted
    assert {j.key.rsplit("/", 1)[0] for j in L.jobs("ablation-sparsities")} == {k.rsplit("/", 1)[0] for k in wanted}
