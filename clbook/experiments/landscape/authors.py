"""Faithfulness to the authors' code: their scripts (``ashwinipokle/contrastive_landscape``) against :func:`train` at the same settings.

:func:`faithfulness` runs the authors' scripts unchanged in a subprocess, with the shims :data:`AUTHORS_SHIMS`, and
compares their max-cosine trajectories with ours; :data:`DEPARTURES` lists what our defaults do differently on
purpose (each one an argument of :func:`~clbook.experiments.landscape.training.train`), :data:`FAITHFULNESS_PAIRS`
the pairs of runs compared. ``python -m clbook.experiments.landscape faithfulness --checkout DIR`` writes it.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from ... import results
from ..._validate import check_in_range, check_int, check_positive
from .training import METRICS, train

__all__ = ["AUTHORS_REPOSITORY", "AUTHORS_SHIMS", "AUTHORS_SECONDS_PER_EPOCH", "DEPARTURES", "FAITHFULNESS_PAIRS", "faithfulness"]

AUTHORS_SECONDS_PER_EPOCH = {"non-contrastive": 0.32, "contrastive": 11.5}  # measured on this machine (issue 9), 3000 samples
AUTHORS_REPOSITORY = "https://github.com/ashwinipokle/contrastive_landscape"
AUTHORS_SHIMS = (
    "numpy >= 1.24 removed the aliases np.float and np.int that their datasets use: restored as float and int",
    "wandb is replaced by a stub (init() returns a run whose finish() does nothing; log() does nothing): no network, no account",
    "seaborn is replaced by a stub (only used to draw weight heat maps for wandb)",
    "functions.train.log_all_metrics, which --log_metrics makes them call after every epoch, is replaced by a recorder of "
    "their own utils.log_metrics.check_sparse_coding_learning(model, M) every `record` epochs; functions.train.train and "
    "alternate_train are wrapped to record the same metric before the first epoch",
    "torch.set_num_threads(1) and OMP/MKL/OpenBLAS threads 1 (this machine's one-core-per-process policy)",
)
# What our defaults do on purpose differently from the authors' code (each one is an argument of train()).
DEPARTURES = {
    "samples": "n = 1000 (paper, Sec. 4.2) instead of the code's nn: 3000 (n=3000 is an ablation)",
    "latents": "i.i.d. {0, ±1} latents conditioned on z != 0 (paper) instead of the code's exactly-k-sparse gen_z (latent='exact')",
    "noise": "the code's std sqrt(log d)/d = 0.152, drawn once per sample (same as the code; the paper states two other values)",
    "masks": "independent masks (Eq. 3, the paper's text) for every model; the code's contrastive script falls back to the "
             "dependent masks of Eq. 2 (scheme='dependent')",
    "bias": "biases and SReLU thresholds start at 0 (paper) instead of PyTorch's U(±1/sqrt(fan-in)) (bias_init='uniform')",
    "srelu": "Eq. 14, relu(y - b) - relu(-y - b) with y = Wx (or BN(Wx) + beta). The code's SymReLU(x, b) = relu(x) - relu(-x + 2b) "
             "is applied to x = Wx + b without BatchNorm, which is Eq. 14 with threshold -b (the same law at a symmetric start); "
             "with BatchNorm it is applied to x = BN(Wx + b) = BN(Wx) (+ BN's own shift), which is Eq. 14 with threshold -b of "
             "BN(Wx) - b: the code's bias both shifts the pre-activation and sets the threshold, ours has two parameters (BN's "
             "shift and the threshold). Same family of functions, different parameterisation and start",
    "batchnorm": "BatchNorm in NCL-basic as Table 2 says; the code's `simplified` model ignores --use_bn (our NCL-basic-code)",
    "last batch": "the last, smaller batch of an epoch is kept; the code's contrastive loader drops it (drop_last=True): with "
                  "n = 1000 and batch 512 it trains on 512 samples per epoch",
    "learning rate": "0.025 (paper and the code's argparse default) instead of the 0.005 of the code's scripts (lr=0.005)",
    "random numbers": "torch generators seeded from (seed, Pr(sparse)) instead of numpy/torch global seeds 1-5; the "
                      "distributions are the same, the draws are not",
    "precision": "float32 training as the code; the data are drawn in float64 and cast once (the code casts every batch)",
    "NT-Xent": "the same loss from the 2B x 2B Gram matrix (the code forms a 2B x 2B x m tensor of cosines)",
}


def _authors_main() -> None:  # pragma: no cover - runs in a subprocess, with the authors' checkout on sys.path
    """Entry point of the subprocess that runs one of the authors' scripts unchanged, with :data:`AUTHORS_SHIMS` applied.

    ``argv``: ``checkout record out.json -- script args...``; writes ``{"runs": [{"name", "group", "epochs", "maximum",
    "median", "minimum", "seconds"}]}`` after every recorded epoch.
    """
    import runpy
    import types

    import numpy as np

    checkout, record, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if sys.argv[4] != "--":
        raise SystemExit("usage: checkout record out.json -- script args...")
    script, args = sys.argv[5], sys.argv[6:]
    sys.path.insert(0, checkout)
    torch.set_num_threads(1)
    np.float, np.int = float, int
    runs = []

    class _Run:
        def finish(self):
            pass

    def _init_run(**kw):
        runs.append(dict(name=kw.get("name"), group=kw.get("group"), epochs=[0], maximum=[], median=[], minimum=[], start=time.time()))
        return _Run()

    sys.modules["wandb"] = types.SimpleNamespace(init=_init_run, log=lambda *a, **k: None, Image=lambda *a, **k: None)
    sys.modules["seaborn"] = types.SimpleNamespace(heatmap=lambda *a, **k: None)
    import functions.train as ft  # the authors' module
    from utils.log_metrics import check_sparse_coding_learning  # the authors' metric

    def dump(**extra):
        Path(out).write_text(json.dumps(dict(script=script, args=args, runs=runs, **extra), indent=1))

    counter = {"epoch": 0}

    def _record(model, M, z, loss, logger, vals_to_log=None, log_weights=False):
        counter["epoch"] += 1
        if counter["epoch"] % record == 0:
            run = runs[-1]
            values = check_sparse_coding_learning(model, M)[:3]
            run["epochs"].append(counter["epoch"])
            for key, v in zip(("maximum", "median", "minimum"), values, strict=True):
                run[key].append(float(v))
            run["loss"], run["seconds"] = float(loss.detach()), time.time() - run["start"]
            dump()

    def _wrap(fn):
        def inner(model, *a, **kw):
            counter["epoch"] = 0
            for key, v in zip(("maximum", "median", "minimum"), check_sparse_coding_learning(model, kw["M"])[:3], strict=True):
                runs[-1][key].append(float(v))
            return fn(model, *a, **kw)
        return inner

    ft.log_all_metrics = _record
    ft.train, ft.alternate_train = _wrap(ft.train), _wrap(ft.alternate_train)
    sys.argv = [script, *args]
    runpy.run_path(str(Path(checkout) / script), run_name="__main__")
    dump(complete=True)


def _run_authors(checkout: Path, script: str, args: list, *, record: int, python: str, pythonpath: str | None, workdir: Path) -> dict:
    out = workdir / f"{Path(script).stem}.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    cmd = [python, "-c", "from clbook.experiments.landscape.authors import _authors_main; _authors_main()", str(checkout), str(record),
           str(out), "--", script, *args]
    done = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the authors' {script} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


def _by_epoch(runs: list[dict], metric: str) -> tuple[list, torch.Tensor]:
    epochs = runs[0]["epochs"]
    if any(r["epochs"] != epochs for r in runs):
        raise ValueError("runs recorded at different epochs cannot be compared epoch by epoch.")
    return epochs, torch.tensor([r[metric] for r in runs], dtype=torch.float64)


FAITHFULNESS_PAIRS = {
    "contrastive": dict(script="main_simclr.py", flags=["--model", "simclr", "--temperature", "0.05", "--use_bn", "True"],
                        ours=dict(model="CL-basic", scheme="dependent")),
    "non-contrastive": dict(script="main.py", flags=["--model", "simplified", "--use_bn", "True"],
                            ours=dict(model="NCL-basic-code", scheme="independent")),
    # issue 26: the contested path, the authors' contrastive script with independent masks (MaskedSparseContrastiveDataset,
    # masks drawn per view over one noisy sample: the noise is shared by the two views, as in train()'s default)
    "contrastive-independent": dict(script="main_simclr.py", flags=["--model", "simclr", "--temperature", "0.05", "--use_bn",
                                                                    "True", "--use_masking", "True"],
                                    ours=dict(model="CL-basic", scheme="independent")),
}


def _check_checkout(checkout) -> Path:
    checkout = Path(checkout).resolve()
    for f in ("main.py", "main_simclr.py", "functions/train.py", "utils/log_metrics.py"):
        if not (checkout / f).is_file():
            raise ValueError(f"checkout must be a checkout of {AUTHORS_REPOSITORY}; {checkout / f} is missing.")
    return checkout


def _check_settings(epochs, seeds, record, n, batch, lr, sparsity) -> dict:
    epochs, record = check_int("epochs", epochs, 1), check_int("record", record, 1)
    n, batch = check_int("n", n, 2), check_int("batch", batch, 2)
    lr, sparsity = check_positive("lr", lr), check_in_range("sparsity", sparsity, 1e-9, 1.0)
    seeds = [check_int("seed", s, 1) for s in seeds]
    if seeds != list(range(1, len(seeds) + 1)):
        raise ValueError(f"the authors' scripts run seeds 1..num_exp; seeds must be 1, 2, ..., k; got {seeds}.")
    if epochs % record:
        raise ValueError(f"record must divide epochs; got epochs = {epochs}, record = {record}.")
    return dict(n=n, batch=batch, lr=lr, epochs=epochs, record=record, sparsity=sparsity, seeds=seeds, keep=0.5, temperature=0.05,
                p=50, d=10, m=50)


def _check_kinds(kinds) -> dict:
    if isinstance(kinds, str) or not kinds or any(k not in FAITHFULNESS_PAIRS for k in kinds):
        raise ValueError(f"kinds must be a non-empty list of {list(FAITHFULNESS_PAIRS)}; got kinds = {kinds!r}.")
    return {k: FAITHFULNESS_PAIRS[k] for k in kinds}


def _git_commit(checkout: Path) -> str:
    got = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    return got.stdout.strip() if got.returncode == 0 else "unknown (not a git checkout)"


def _config(s: dict) -> str:
    """The authors' yaml configuration for the settings ``s``."""
    return (f"nn: {s['n']}\nnum_exp: {len(s['seeds'])}\nNUM_EPOCHES: {s['epochs']}\nbatch_size: {s['batch']}\np: 50\nd: 10\nm: 50\n"
            f"lr: {s['lr']}\nhas_online_ReLU: True\nhas_target_ReLU: True\nhas_target_predictor: False\nalternative_optimization: True\n"
            f"rm_predictor: True\nsigma0: 0\none_hot_latent: False\nsparsity_levels: ({s['sparsity']},)\nmasking_probs: (0.5,)\n")


def _compare(their_runs: list, ours_runs: list) -> list[dict]:
    """One cell per (metric, recorded epoch): the two means over seeds, their standard errors and the tolerance."""
    cells = []
    for metric in METRICS:
        e1, a = _by_epoch(their_runs, metric)
        e2, b = _by_epoch(ours_runs, metric)
        if e1 != e2:
            raise RuntimeError(f"recorded epochs differ: theirs {e1}, ours {e2}.")
        k1, k2 = a.shape[0], b.shape[0]
        for j, e in enumerate(e1):
            ma, mb = float(a[:, j].mean()), float(b[:, j].mean())
            sa, sb = float(a[:, j].std()) / math.sqrt(k1), float(b[:, j].std()) / math.sqrt(k2)
            tol = 2 * math.sqrt(sa ** 2 + sb ** 2)
            cells.append(dict(metric=metric, epoch=e, theirs=round(ma, 4), ours=round(mb, 4), delta=round(mb - ma, 4),
                              se_theirs=round(sa, 4), se_ours=round(sb, 4), tolerance=round(tol, 4), within=abs(mb - ma) <= tol))
    return cells


def _theirs(kind: str, theirs_given: dict | None, settings: dict, run) -> dict:
    """The authors' runs of one pair: reused from ``theirs_given`` (same settings) or run now by ``run()``."""
    if theirs_given is None:
        return run()
    if theirs_given.get("settings") != settings:
        raise ValueError("theirs was computed with other settings; run without theirs= to rerun the authors' code.")
    recorded = theirs_given["models"][kind]["theirs"]["runs"]
    return dict(runs=[dict(r, seconds=r.get("seconds", 0.0)) for r in recorded])


def _pair(kind: str, spec: dict, s: dict, work: Path, *, checkout: Path, python: str, pythonpath: str | None,
          theirs_given: dict | None) -> dict:
    """Both sides of one pair of :data:`FAITHFULNESS_PAIRS` and their comparison."""
    args = ["--cfg", str(work / "faith.yaml"), "--logDir", str(work / "log" / kind), "--normalize_repr", "True",
            "--lr", str(s["lr"]), "--batch_size", str(s["batch"]), "--log_metrics", *spec["flags"]]
    (work / "log").mkdir(exist_ok=True)
    theirs = _theirs(kind, theirs_given, s, lambda: _run_authors(checkout, spec["script"], args, record=s["record"], python=python,
                                                                 pythonpath=pythonpath, workdir=work))
    ours = train(spec["ours"]["model"], scheme=spec["ours"]["scheme"], sparsities=[s["sparsity"]], seeds=s["seeds"], n=s["n"],
                 batch=s["batch"], lr=s["lr"], epochs=s["epochs"], record=s["record"], latent="exact", bias_init="uniform", paired=True,
                 dtype=torch.float32)
    ours_runs = [dict(seed=r["seed"], epochs=r["epochs"], maximum=r["maximum"], median=r["median"], minimum=r["minimum"])
                 for r in ours.rows()]
    their_runs = [dict(seed=i + 1, epochs=r["epochs"], maximum=[round(v, 4) for v in r["maximum"]],
                       median=[round(v, 4) for v in r["median"]], minimum=[round(v, 4) for v in r["minimum"]],
                       seconds=round(r.get("seconds", 0.0), 1)) for i, r in enumerate(theirs["runs"])]
    cells = _compare(their_runs, ours_runs)
    return dict(theirs=dict(script=spec["script"], args=args, runs=their_runs),
                ours=dict(model=spec["ours"]["model"], settings=ours.settings, runs=ours_runs, seconds=round(ours.seconds, 1)),
                comparison=cells, within=sum(c["within"] for c in cells), cells=len(cells))


def faithfulness(checkout, *, epochs: int = 200, seeds=(1, 2, 3), record: int = 10, n: int = 1000, batch: int = 500,
                 lr: float = 0.025, sparsity: float = 0.2, python: str | None = None, pythonpath: str | None = None,
                 authors_commit: str | None = None, theirs: dict | None = None, command: str | None = None,
                 kinds=("contrastive", "non-contrastive")) -> dict:
    r"""Run the authors' scripts and :func:`train` at identical settings; compare the max-cosine trajectories.

    The authors' ``main_simclr.py --model simclr --use_bn True`` (their CL-basic, with the dependent masks its
    scripts use) and ``main.py --model simplified`` (their NCL model, independent masks, no BatchNorm) run unchanged
    from ``checkout`` (a checkout of :data:`AUTHORS_REPOSITORY`, never copied into this repository) in a subprocess
    with the shims :data:`AUTHORS_SHIMS`; ``yacs`` must be importable there (``pythonpath``). Ours: CL-basic with
    ``scheme="dependent"`` and NCL-basic-code with independent masks, both with the code's ``latent="exact"`` and
    ``bias_init="uniform"``, at the same ``n``, ``batch``, ``lr``, epochs, Pr(sparse), keep probability 0.5 and
    temperature 0.05. ``batch`` 500 divides ``n`` = 1000, so the code's ``drop_last`` makes no difference.

    Tolerance, fixed before looking: at every recorded epoch and for each of the three metrics, the means over the
    seeds agree when :math:`|\Delta| \le 2\sqrt{\mathrm{se}_\text{theirs}^2 + \mathrm{se}_\text{ours}^2}` with
    :math:`\mathrm{se} = s/\sqrt{k}` over the :math:`k` seeds. The seeds are not the same draws (different generators).

    ``theirs``: an earlier result of this function (same settings) whose recorded runs of the authors' code are reused
    instead of running it again (an hour of CPU for the contrastive script); only our side is recomputed.

    ``kinds``: the pairs of :data:`FAITHFULNESS_PAIRS` to run; ``"contrastive-independent"`` is the authors'
    ``main_simclr.py --use_masking True`` (independent masks) against CL-basic with independent masks.
    """
    checkout = _check_checkout(checkout)
    settings = _check_settings(epochs, seeds, record, n, batch, lr, sparsity)
    pairs = _check_kinds(kinds)
    python = python or sys.executable
    authors_commit = _git_commit(checkout) if authors_commit is None else authors_commit
    t0 = time.perf_counter()
    config = _config(settings)
    out = dict(experiment="faithfulness", settings=settings, authors=dict(repository=AUTHORS_REPOSITORY, commit=authors_commit,
                                                                          config=config, shims=list(AUTHORS_SHIMS)),
               departures=DEPARTURES, tolerance="|mean_theirs - mean_ours| <= 2 sqrt(se_theirs^2 + se_ours^2), se = sd / sqrt(seeds), "
                                                "at every recorded epoch, for each metric", models={})
    if theirs is not None:  # where the reused runs of the authors' code came from
        out["authors"]["runs_recorded_by"] = theirs.get("authors", {}).get("runs_recorded_by", theirs.get("provenance"))
    with tempfile.TemporaryDirectory(prefix="clbook-authors-") as tmp:
        work = Path(tmp)
        (work / "faith.yaml").write_text(config)
        for kind, spec in pairs.items():
            out["models"][kind] = _pair(kind, spec, settings, work, checkout=checkout, python=python, pythonpath=pythonpath,
                                        theirs_given=theirs)
    out["provenance"] = results.provenance(command or f"python -m clbook.experiments.landscape faithfulness --checkout {checkout}",
                                           time.perf_counter() - t0)
    return out
