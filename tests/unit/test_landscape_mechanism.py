"""Tests of clbook.experiments.landscape.mechanism (issue 26, item 5), train_snapshots, and the two experiments of issue 26
items 4 and 5 (``table2-scripts``: the authors' script settings; ``mechanism``)."""
import json
import math

import pytest
import torch

import clbook
from clbook.data import sparse_coding as sc
from clbook.experiments.landscape import experiments as LE
from clbook.experiments.landscape import mechanism as MM
from clbook.experiments.landscape import models as LM
from clbook.experiments.landscape import training as LT

TINY = dict(p=12, d=4, m=8, n=40, batch=16, epochs=4)


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0)


def _split_views(n=4000, d=5, q=200, keep=0.5, noise=0.3, seed=0):
    """Hand-made pairs: signal on coordinates 0..d-1 (no noise there), noise only on d..d+q-1 (shared, then redrawn)."""
    g = torch.Generator().manual_seed(seed)
    p = d + q
    x = torch.zeros(n, p, dtype=torch.float64)
    x[:, :d] = torch.randn(n, d, generator=g, dtype=torch.float64).sign()
    eps, eps2 = (noise * torch.randn(n, q, generator=g, dtype=torch.float64) for _ in range(2))
    x[:, d:] = eps
    d1, d2 = ((torch.rand(n, p, generator=g, dtype=torch.float64) < keep).double() for _ in range(2))
    d1[:, :d] = d2[:, :d] = 1.0  # both views keep the signal
    both = d1 * d2
    x2 = x.clone()
    x2[:, d:] = x[:, d:] + both[:, d:] * (eps2 - eps)
    shared = torch.stack([d1 * x, d2 * x])[None]
    fresh = torch.stack([d1 * x, d2 * x2])[None]
    return MM.PairViews(shared=shared, fresh=fresh, both=both.bool()[None]), p


def _linear_reader(cols, p):
    """CL-linear parameters [1, m, p] that copy the coordinates ``cols`` (zero bias)."""
    W = torch.zeros(1, len(cols), p, dtype=torch.float64)
    W[0, torch.arange(len(cols)), torch.tensor(cols)] = 1.0
    return {"W0": W, "b0": torch.zeros(1, len(cols), dtype=torch.float64)}


def test_an_encoder_that_reads_only_the_noise_coordinates_has_a_drop_of_keep():
    """Known answer: reading only noise, cos(a) = E[D1 D2 e^2] / E[D e^2] = keep, cos(b) = 0, so the drop is keep."""
    views, p = _split_views(keep=0.5)
    out = MM.noise_reliance("CL-linear", {"o": _linear_reader(list(range(5, p)), p)}, views)
    assert abs(float(out["shared"][0]) - 0.5) < 0.02
    assert abs(float(out["fresh"][0])) < 0.02
    assert abs(float(out["drop"][0]) - 0.5) < 0.03
    assert float(out["match_shared"][0]) > 0.9 and float(out["match_fresh"][0]) < 0.05


def test_an_encoder_that_reads_only_the_signal_has_no_drop():
    views, p = _split_views()
    out = MM.noise_reliance("CL-linear", {"o": _linear_reader(list(range(5)), p)}, views)
    assert float(out["drop"][0]) == 0.0 and float(out["shared"][0]) == pytest.approx(1.0)
    assert torch.equal(out["match_shared"], out["match_fresh"])


def test_a_non_contrastive_pair_of_equal_networks_measures_as_the_shared_encoder():
    views, p = _split_views(n=500, q=30)
    P = _linear_reader(list(range(3, p)), p)
    one = MM.noise_reliance("CL-linear", {"o": P}, views)
    two = MM.noise_reliance("NCL-linear", {"o": P, "t": {k: v.clone() for k, v in P.items()}}, views)
    for key in one:
        assert torch.allclose(one[key], two[key], atol=1e-12)


def test_pair_views_changes_only_the_noise_of_the_second_view_where_both_views_keep():
    M = sc.dictionary(20, 5, generator=torch.Generator().manual_seed(1)).double()
    v = MM.pair_views(M, n=3000, sparsity=0.2, noise=0.2, keep=0.5, generator=torch.Generator().manual_seed(2))
    assert v.shared.shape == v.fresh.shape == (2, 3000, 20) and v.both.shape == (3000, 20)
    assert torch.equal(v.shared[0], v.fresh[0])
    assert torch.equal(v.shared[1][~v.both], v.fresh[1][~v.both])
    diff = (v.fresh[1] - v.shared[1])[v.both]
    assert abs(float(diff.std()) - 0.2 * math.sqrt(2)) < 0.01  # sigma (e' - e): std sigma sqrt 2
    assert abs(float(v.both.double().mean()) - 0.25) < 0.01  # keep^2 of the coordinates
    quiet = MM.pair_views(M, n=50, sparsity=0.2, noise=0.0, keep=0.5, generator=torch.Generator().manual_seed(2))
    assert torch.equal(quiet.shared, quiet.fresh)
    again = MM.pair_views(M, n=3000, sparsity=0.2, noise=0.2, keep=0.5, generator=torch.Generator().manual_seed(2))
    assert torch.equal(again.fresh, v.fresh)


def test_pair_views_and_noise_reliance_refuse_bad_arguments():
    M = torch.eye(6, 3, dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="noise"):
        MM.pair_views(M, n=5, sparsity=0.2, noise=-1.0, generator=g)
    with pytest.raises(ValueError, match="n "):
        MM.pair_views(M, n=1, sparsity=0.2, noise=0.1, generator=g)
    with pytest.raises(ValueError, match="latent"):
        MM.pair_views(M, n=5, sparsity=0.2, noise=0.1, generator=g, latent="binary")
    views, p = _split_views(n=20, q=4)
    P = _linear_reader([0, 1], p)
    with pytest.raises(ValueError, match="model"):
        MM.noise_reliance("SimCLR", {"o": P}, views)
    with pytest.raises(ValueError, match="params"):
        MM.noise_reliance("NCL-linear", {"o": P}, views)
    with pytest.raises(TypeError, match="views"):
        MM.noise_reliance("CL-linear", {"o": P}, views.shared)
    with pytest.raises(ValueError, match="W0"):
        MM.noise_reliance("CL-linear", {"o": _linear_reader([0], p + 1)}, views)


@pytest.mark.parametrize("model", ["CL-basic", "NCL-basic"])
def test_train_snapshots_is_train_bit_for_bit(model):
    kw = dict(TINY, sparsities=[0.2], seeds=[1, 2], paired=True, dtype=torch.float32, record=1, noise_draw="view")
    ref = LT.train(model, keep_weights=True, **kw)
    res, M, snaps = LT.train_snapshots(model, at=[0, 2, 4], **kw)
    assert res.minimum == ref.minimum and res.loss == ref.loss and res.epochs == ref.epochs
    assert [s["epoch"] for s in snaps] == [0, 2, 4] and M.shape == (2, 12, 4)
    assert torch.equal(snaps[-1]["params"]["o"]["W0"], ref.W)
    assert set(snaps[0]["params"]) == ({"o", "t"} if model == "NCL-basic" else {"o"})
    with pytest.raises(ValueError, match="at"):
        LT.train_snapshots(model, at=[2, 1], **kw)
    with pytest.raises(ValueError, match="at"):
        LT.train_snapshots(model, at=[5], **kw)
    with pytest.raises(ValueError, match="keep_weights"):
        LT.train_snapshots(model, at=[1], keep_weights=True, **kw)


def test_mechanism_job_rows():
    out = MM.mechanism_job(model="CL-basic", sparsities=[0.2], seeds=[1, 2], at=[0, 4], n_held_out=30, paired=True, record=2, **TINY)
    assert [r["seed"] for r in out["rows"]] == [1, 2] and out["settings"]["at"] == [0, 4]
    for r in out["rows"]:
        assert r["epochs"] == [0, 4] and len(r["minimum"]) == 2
        assert all(abs(a - b - c) < 2e-5 for a, b, c in zip(r["shared"], r["fresh"], r["drop"], strict=True))
    with pytest.raises(ValueError, match="sparsities"):
        MM.mechanism_job(model="CL-basic", sparsities=[0.1, 0.2], seeds=[1], at=[0], **TINY)
    with pytest.raises(ValueError, match="model"):
        MM.mechanism_job(model="SimSiam", sparsities=[0.2], seeds=[1], at=[0], **TINY)


def test_the_mechanism_experiment_runs_quick_and_resumes(tmp_path):
    jobs = LE.jobs("mechanism", quick=True)
    assert [j.key for j in jobs] == ["noise_draw=sample/CL-basic/0.1", "noise_draw=sample/NCL-basic/0.1",
                                     "noise_draw=view/CL-basic/0.1", "noise_draw=view/NCL-basic/0.1"]
    assert all(j.params["at"] == [0, 1, 2, 5, 10, 15, 20] and j.params["paired"] for j in jobs)
    assert LE.jobs("mechanism")[0].params["epochs"] == 4000
    done = LE.run(["mechanism"], quick=True, epochs=4, models=["NCL-basic"], out=tmp_path, workers=1, progress=False)
    data = json.loads((tmp_path / "quick-mechanism.json").read_text())
    assert data["complete"] and set(data["jobs"]) == {"noise_draw=sample/NCL-basic/0.1", "noise_draw=view/NCL-basic/0.1"}
    row = data["jobs"]["noise_draw=view/NCL-basic/0.1"]["result"]["rows"][0]
    assert row["epochs"] == [0, 1, 2, 3, 4] and "drop" in row
    assert "quick-mechanism" in done


# ----------------------------------------------------------------------------------------------- the authors' script settings

# The list of issue 26, item 4, read from ashwinipokle/contrastive_landscape (commit daec951): setting -> value.
AUTHORS = dict(n=3000, lr=0.005, latent="exact", bias_init="uniform", p=50, d=10, m=50, batch=512, epochs=8000, keep=0.5,
               temperature=0.05, noise_draw="sample")


def test_the_scripts_configuration_is_the_list():
    defaults = {k: v.default for k, v in __import__("inspect").signature(LT.train).parameters.items()}
    for name, value in AUTHORS.items():
        assert LE.SCRIPTS.get(name, defaults[name]) == value, name
    assert math.isclose(sc.noise_std(10, reading="code"), math.sqrt(math.log(10)) / 10)  # gen_epsilon(sigma0=None)
    assert LE.SCRIPTS_BY_LOSS == {"ntxent": dict(scheme="dependent", drop_last=True), "ncl": dict(scheme="independent", drop_last=False)}
    assert set(LE.SCRIPTS) | {"scheme", "drop_last", "model"} == set(LE.SCRIPTS_SOURCES)
    assert not LM.MODELS["NCL-basic-code"].bn and LE.SCRIPTS_MODELS == ("CL-basic", "CL-linear", "NCL-basic-code", "NCL-linear")
    jobs = {j.key: j.params for j in LE.jobs("table2-scripts")}
    assert len(jobs) == 12 and all(q["seeds"] == [1, 2, 3, 4, 5] and q["epochs"] == 8000 for q in jobs.values())
    assert jobs["CL-basic/0.2"]["scheme"] == "dependent" and jobs["CL-basic/0.2"]["drop_last"]
    assert jobs["NCL-basic-code/0.3"]["scheme"] == "independent" and not jobs["NCL-basic-code/0.3"]["drop_last"]
    assert all(q["n"] == 3000 and q["lr"] == 0.005 and q["latent"] == "exact" and q["bias_init"] == "uniform" for q in jobs.values())


def test_the_new_experiments_leave_the_others_unchanged():
    """Adding table2-scripts and mechanism changes no job of the experiments that runs in progress resume."""
    j = {x.key: x.params for x in LE.jobs("ablation-seeds")}
    assert j["noise_draw=view/CL-basic/0.1"] == dict(epochs=8000, seeds=list(LE.MORE_SEEDS), record=100, paired=True,
                                                      noise_draw="view", model="CL-basic", sparsities=[0.1])
    assert LE.jobs("pilot")[0].params["epochs"] == 1000 and LE.jobs("table1")[0].params["epochs"] == 8000


def _stored_mechanism(drops: dict) -> dict:
    """A stored mechanism result with the given per-seed drops {(draw, model): [[drop at each epoch] per seed]}."""
    jobs = {}
    for (draw, model), per_seed in drops.items():
        rows = [dict(model=model, sparsity=0.1, seed=s + 1, epochs=[0, 10], drop=d) for s, d in enumerate(per_seed)]
        jobs[f"noise_draw={draw}/{model}/0.1"] = {"params": {}, "result": {"rows": rows}}
    return {"jobs": jobs}


def test_reliance_tests_known_answers():
    data = _stored_mechanism({("sample", "CL-basic"): [[0.2, 0.30], [0.2, 0.32], [0.2, 0.31]],
                              ("view", "CL-basic"): [[0.2, 0.01], [0.2, -0.01], [0.2, 0.0]]})
    rows = {(r["what"], r["noise_draw"]): r for r in MM.reliance_tests(data)}
    assert set(rows) == {("drop", "sample"), ("drop", "view"), ("sample - view", "sample - view")}
    assert all(r["tests"] == 3 and r["epoch"] == 10 for r in rows.values())
    assert rows[("drop", "sample")]["verdict"] == "holds" and abs(rows[("drop", "sample")]["mean"] - 0.31) < 1e-12
    assert rows[("drop", "view")]["verdict"] == "within noise" and abs(rows[("drop", "view")]["mean"]) < 1e-12
    gap = rows[("sample - view", "sample - view")]
    assert abs(gap["mean"] - 0.31) < 1e-12 and gap["verdict"] == "holds" and abs(gap["sd"] - 0.02) < 1e-12
    at0 = MM.reliance_tests(data, epoch=0)
    assert [r["verdict"] for r in at0] == ["holds", "holds", "within noise"]  # se = 0: the sign decides; equal drops: 0
    with pytest.raises(ValueError, match="epoch"):
        MM.reliance_tests(data, epoch=5)
    with pytest.raises(ValueError, match="data"):
        MM.reliance_tests({"jobs": {"noise_draw=view/CL-basic/0.1": {"params": {}}}})


def test_reliance_tests_on_the_identification_share():
    data = _stored_mechanism({("sample", "CL-basic"): [[0.2, 0.3]] * 3, ("view", "CL-basic"): [[0.2, 0.0]] * 3})
    for rows in data["jobs"].values():
        for r in rows["result"]["rows"]:
            r["match_shared"], r["match_fresh"] = [0.5, 0.5 + r["seed"] / 100], [0.1, 0.1]
    out = MM.reliance_tests(data, quantity="match")
    assert [round(r["mean"], 12) for r in out] == [0.42, 0.42, 0.0]
    with pytest.raises(ValueError, match="quantity"):
        MM.reliance_tests(data, quantity="cosine")
