"""The named experiments of Chapter 17 (:data:`EXPERIMENTS`): their jobs for the runner, running them, estimates, stored results.

Each experiment is a list of :class:`clbook.experiments.runner.Job` of :func:`~clbook.experiments.landscape.training.train_job`,
one per (model or setting, sparsity); :func:`run` hands them to :func:`clbook.experiments.runner.run_jobs`, which
resumes an interrupted run and never replaces a complete result by a partial one. The paper's values
(:data:`PAPER_TABLE1`, :data:`PAPER_TABLE2`, :data:`PAPER_TABLE4`) are copied from the paper.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ... import results
from ..._validate import check_choice, check_in_range, check_int, check_positive
from .. import runner
from .mechanism import mechanism_job
from .models import MODELS
from .training import train_job

__all__ = ["PAPER_TABLE1", "PAPER_TABLE2", "PAPER_TABLE4", "EXPERIMENTS", "TABLE2_MODELS", "ABLATIONS", "ABLATION_MODELS", "PILOT",
           "ABLATION_SPARSITIES", "ABLATION_REST", "MORE_SEEDS", "MORE_SEEDS_MODELS", "DATA", "jobs", "run", "estimate", "load", "SCRIPTS",
           "SCRIPTS_BY_LOSS", "SCRIPTS_MODELS", "SCRIPTS_SOURCES", "SCRIPTS_NOT_ADOPTED", "MECHANISM_MODELS", "MECHANISM_NOISE_DRAWS"]

DATA = results.user_dir("landscape")  # default --out of a rerun; the shipped results are read with results.load
TABLE2_MODELS = ("CL-basic", "CL-linear", "NCL-basic", "NCL-basic-2L", "NCL-linear", "NCL-basic-code")

# Values copied from the paper: {model: {sparsity: ((max, sd), (median, sd), (min, sd))}}.
PAPER_TABLE2 = {
    "NCL-linear": {0.1: ((0.12, 0.03), (0.10, 0.01), (0.08, 0.1)), 0.2: ((0.11, 0.02), (0.09, 0.03), (0.08, 0.3)),
                   0.3: ((0.31, 0.006), (0.29, 0.007), (0.28, 0.002))},
    "CL-linear": {0.1: ((0.77, 0.01), (0.69, 0.01), (0.58, 0.01)), 0.2: ((0.78, 0.06), (0.68, 0.02), (0.59, 0.01)),
                  0.3: ((0.78, 0.04), (0.67, 0.01), (0.6, 0.03))},
    "NCL-basic": {0.1: ((0.9, 0.01), (0.83, 0.06), (0.52, 0.06)), 0.2: ((0.92, 0.01), (0.82, 0.07), (0.51, 0.03)),
                  0.3: ((0.84, 0.11), (0.58, 0.04), (0.42, 0.06))},
    "NCL-basic-2L": {0.1: ((0.94, 0.01), (0.91, 0.01), (0.66, 0.21)), 0.2: ((0.94, 0.009), (0.92, 0.002), (0.51, 0.11)),
                     0.3: ((0.83, 0.16), (0.48, 0.04), (0.36, 0.01))},
    "CL-basic": {0.1: ((0.93, 0.007), (0.91, 0.005), (0.88, 0.002)), 0.2: ((0.93, 0.002), (0.91, 0.009), (0.79, 0.14)),
                 0.3: ((0.93, 0.01), (0.86, 0.07), (0.76, 0.18))},
}
PAPER_TABLE1 = {
    "SimCLR": {0.1: ((0.94, 0.005), (0.92, 0.004), (0.83, 0.16)), 0.2: ((0.94, 0.004), (0.93, 0.003), (0.90, 0.01)),
               0.3: ((0.94, 0.006), (0.92, 0.007), (0.57, 0.019))},
    "SimSiam": {0.1: ((0.94, 0.007), (0.87, 0.08), (0.47, 0.07)), 0.2: ((0.93, 0.008), (0.82, 0.01), (0.45, 0.005)),
                0.3: ((0.678, 0.2), (0.45, 0.01), (0.37, 0.03))},
}
PAPER_TABLE4 = {  # NCL-basic, warm start: {sparsity: {sigma: (...)}}
    0.1: {0.14: ((0.84, 0.02), (0.73, 0.04), (0.58, 0.04)), 0.02: ((0.97, 0.005), (0.77, 0.01), (0.69, 0.04)),
          0.002: ((0.98, 0.003), (0.78, 0.04), (0.69, 0.02))},
    0.2: {0.14: ((0.84, 0.04), (0.73, 0.05), (0.57, 0.05)), 0.02: ((0.97, 0.006), (0.79, 0.07), (0.69, 0.03)),
          0.002: ((0.97, 0.006), (0.81, 0.08), (0.67, 0.03))},
    0.3: {0.14: ((0.82, 0.02), (0.71, 0.03), (0.58, 0.03)), 0.02: ((0.95, 0.009), (0.77, 0.06), (0.66, 0.01)),
          0.002: ((0.96, 0.02), (0.75, 0.04), (0.66, 0.02))},
}

# The one-at-a-time ablations of issue 17 at full length, each relative to the Table 2 setting of the paper's text
# (independent masks, keep 0.5, sigma_0 = 0.152 drawn once per sample, n = 1000, i.i.d. latents, zero biases, lr 0.025,
# last batch kept), at Pr(sparse) 0.2 with 5 seeds: {factor: (settings, models)}. The baseline and "scheme=dependent"
# are not rerun: they are the jobs of the same models at 0.2 in table2-independent and table2-dependent. A factor run
# shares its seed's dictionary, latents (except n = 3000) and initial weights (paired streams) with the baseline run,
# not its masks and permutations: a factor that changes what the data generator draws shifts its later draws. The
# factors were chosen by the pilot (clbook/results/landscape/pilot.json): only the noise shared by the two views moved
# the contrastive models there; n = 3000 is required by the issue; latents, lr, bias init and drop_last moved CL-basic
# by < 0.04 and are not rerun.
ABLATIONS = {
    "noise=0": (dict(noise=0.0), ("CL-basic", "CL-linear", "NCL-basic", "NCL-linear")),
    "noise_draw=view": (dict(noise_draw="view"), ("CL-basic", "CL-linear", "NCL-basic", "NCL-linear")),
    "noise_draw=epoch": (dict(noise_draw="epoch"), ("CL-basic", "NCL-basic")),
    "noise=0.05": (dict(noise=0.05), ("CL-basic", "NCL-basic")),
    "n=3000": (dict(n=3000), ("CL-basic", "NCL-basic")),
}
ABLATION_MODELS = ("CL-basic", "CL-linear", "NCL-basic", "NCL-linear")
# The pilot's factors (1000 epochs, seeds 1-2, Pr(sparse) 0.1-0.3, CL-basic and NCL-basic; pilot.json also holds
# CL-linear and NCL-linear for the first four).
PILOT = {
    "base": {}, "scheme=dependent": dict(scheme="dependent"), "noise=0": dict(noise=0.0), "noise_draw=view": dict(noise_draw="view"),
    "noise_draw=epoch": dict(noise_draw="epoch"), "n=3000": dict(n=3000), "latent=exact": dict(latent="exact"),
    "lr=0.005": dict(lr=0.005), "bias_init=uniform": dict(bias_init="uniform"), "drop_last": dict(drop_last=True),
    "noise=0.05": dict(noise=0.05), "dependent+noise_draw=view": dict(scheme="dependent", noise_draw="view"),
    "noise=0.48": dict(noise=0.48), "dependent+keep=0.25": dict(scheme="dependent", keep=0.25),
}
# Issue 26 (Chapter 17 complete): the ablation's factors that matter at the other two sparsities, and more seeds under
# independent masks for the two models whose verdicts moved with the draw of seeds (seeds 6-15: new random streams,
# so with seeds 1-5 of table2-independent / ablation they make 15 paired seeds).
ABLATION_SPARSITIES = {"noise=0": ABLATION_MODELS, "noise_draw=view": ABLATION_MODELS, "n=3000": ("CL-basic", "NCL-basic")}
# The jobs of ABLATION_SPARSITIES at Pr(sparse) 0.2 that the stored "ablation" result lacks (it was run before the linear
# models and n = 3000 joined ABLATIONS, and a rerun of "ablation" would recompute its 8 jobs): experiment "ablation-rest".
ABLATION_REST = {factor: tuple(n for n in names if n not in ("CL-basic", "NCL-basic") or factor == "n=3000")
                 for factor, names in ABLATION_SPARSITIES.items()}
MORE_SEEDS = (6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
MORE_SEEDS_MODELS = ("CL-basic", "NCL-basic")
# Issue 26, item 4: the authors' own script settings as a configuration of its own (scripts/cl_vs_ncl_ksparse.sh with
# config/overpara_nopre_alter.yaml of ashwinipokle/contrastive_landscape; each setting with file:line in
# SCRIPTS_SOURCES). Settings not listed are train()'s defaults, which equal the scripts' (tested).
SCRIPTS = dict(n=3000, lr=0.005, latent="exact", bias_init="uniform")
SCRIPTS_BY_LOSS = {"ntxent": dict(scheme="dependent", drop_last=True), "ncl": dict(scheme="independent", drop_last=False)}
SCRIPTS_MODELS = ("CL-basic", "CL-linear", "NCL-basic-code", "NCL-linear")
SCRIPTS_SOURCES = {
    "n": "config/overpara_nopre_alter.yaml:1 (nn: 3000)",
    "lr": "scripts/cl_vs_ncl_ksparse.sh:2-3 (--lr 0.005; also config/overpara_nopre_alter.yaml:8)",
    "latent": "main_simclr.py:92, main.py:100 (gen_z, exactly-k-sparse: data_model/gen_sparse_coding_data.py:11-27)",
    "bias_init": "models/simclr.py:82, models/sparse_contrastive_model_reduced.py:26-27 (nn.Linear's default U(+-1/sqrt(fan-in)))",
    "scheme": "main_simclr.py:103-105 (DependentMaskContrastiveDataset without --use_masking); "
              "main.py:109 (MaskedSparseContrastiveDataset)",
    "drop_last": "main_simclr.py:105 (drop_last=True); main.py:110 (drop_last=False)",
    "model": "main.py:117-133 (SparseContrastiveModelReduced: no BatchNorm whatever --use_bn says): NCL-basic-code",
}
# What the scripts do that table2-scripts does not adopt, and why (the rest of the scripts' settings equal train()'s defaults).
SCRIPTS_NOT_ADOPTED = {
    "masking probabilities": "config/overpara_nopre_alter.yaml sets none, so config/default.py:33 runs masking probabilities 0.25, "
                             "0.5, 0.75 and 0.9 (keep 0.75-0.1) for main.py, and main_simclr.py's dependent masks (which ignore "
                             "it) four times over; Table 2 is the paper's masking probability 0.5: keep 0.5 here",
    "SReLU": "models/model_utils.py:13 applies relu(x) - relu(-x + 2b) to x = BN(Wx + b) (models/simclr.py:112-120): the bias "
             "shifts the pre-activation and sets the threshold; ours (Eq. 14) has two parameters. Same family of functions "
             "(authors.DEPARTURES['srelu']); not a setting of train()",
    "random numbers": "numpy/torch global seeds 1-5 (main_simclr.py:73-74, main.py:82-83): same laws, other draws",
}
# Issue 26, item 5: the mechanism, measured (clbook.experiments.landscape.mechanism): CL-basic and NCL-basic trained with
# the noise shared by the two views (the text's setting) and drawn per view, at Pr(sparse) 0.1 by default, 4000 epochs.
MECHANISM_MODELS = ("CL-basic", "NCL-basic")
MECHANISM_NOISE_DRAWS = ("sample", "view")
EXPERIMENTS = ("table2-independent", "table2-dependent", "table1", "ablation", "table4", "figures", "pilot",
               "table2-independent-seeds", "ablation-seeds", "ablation-sparsities", "ablation-rest", "table2-scripts", "mechanism")
# measured ms per epoch per run (bench, n = 1000), for ordering the jobs (largest first) and for estimates
_MS_PER_EPOCH = {"ntxent": 10.0, "simsiam": 2.7, "ncl": 1.8}
_MORE = ("table2-independent-seeds", "ablation-seeds")
# the sparsities of an experiment when none are given (default 0.1, 0.2, 0.3)
_SPARSITIES = {"ablation": [0.2], "ablation-sparsities": [0.1, 0.3], "ablation-rest": [0.2], "figures": [0.2], "mechanism": [0.1]}
# the epochs of an experiment when none are given and not quick (default 8000)
_EPOCHS = {"pilot": 1000, "mechanism": 4000}


def _cost(params: dict) -> float:
    spec = MODELS[params["model"]]
    ms = _MS_PER_EPOCH[spec.loss] * (1.5 if spec.layers == 2 or spec.head != "none" else 1.0)
    return ms * params["epochs"] * len(params["seeds"]) * len(params["sparsities"]) * params.get("n", 1000) / 1000 / 1000


# ----------------------------------------------------------------------------------------------- what each experiment trains
# Each returns [(key prefix, model, settings)] for the selected models (None: the experiment's own) and factors.


def _table2(experiment, models, factors):
    scheme = experiment.split("-")[1]
    return [(name, name, dict(scheme=scheme)) for name in (models or TABLE2_MODELS)]


def _table1(experiment, models, factors):  # "diagonal entries in random masks from Bernoulli(0.1)" (Table 1 caption): keep 0.1
    return [(name, name, dict(keep=0.1)) for name in (models or ("SimCLR", "SimSiam"))]


def _ablation(experiment, models, factors):
    return [(f"{factor}/{name}", name, kw) for factor, (kw, names) in ABLATIONS.items() for name in names
            if (models is None or name in models) and (factors is None or factor in factors)]


def _ablation_table(experiment, models, factors):  # the factors and models of a {factor: models} table
    table = {"ablation-sparsities": ABLATION_SPARSITIES, "ablation-rest": ABLATION_REST}[experiment]
    return [(f"{factor}/{name}", name, ABLATIONS[factor][0]) for factor, names in table.items()
            for name in names if models is None or name in models]


def _more_seeds(experiment, models, factors):
    kw = dict(scheme="independent") if experiment == "table2-independent-seeds" else dict(noise_draw="view")
    prefix = "" if experiment == "table2-independent-seeds" else "noise_draw=view/"
    return [(f"{prefix}{name}", name, kw) for name in (models or MORE_SEEDS_MODELS)]


def _pilot(experiment, models, factors):
    return [(f"{factor}/{name}", name, kw) for factor, kw in PILOT.items() for name in (models or ("CL-basic", "NCL-basic"))
            if factors is None or factor in factors]


def _table4(experiment, models, factors):
    return [(f"warm={s}", "NCL-basic", dict(warm=s)) for s in (0.14, 0.02, 0.002)]


def _figures(experiment, models, factors):  # Figs 4-7 at Pr(sparse) = 0.2 (3 runs in the paper), plus this book's alignment ablation
    c1, c2 = 50 ** -0.5, 50 ** -1.0
    return [("fig4 warm c=1", "NCL-basic", dict(warm=c1)),
            ("fig5 warm c=1 + predictor", "NCL-pred", dict(warm=c1)),
            ("fig6 random + predictor", "NCL-pred", {}),
            ("fig7 warm c=2 + row norm, keep 0.1", "NCL-basic", dict(warm=c2, normalize="row", keep=0.1)),
            ("fig16 warm c=2 + column norm, keep 0.25", "NCL-basic", dict(warm=c2, normalize="column", keep=0.25)),
            ("warm c=2", "NCL-basic", dict(warm=c2)),
            ("warm c=2 aligned", "NCL-basic", dict(warm=c2, aligned=True)),
            ("warm c=1 aligned", "NCL-basic", dict(warm=c1, aligned=True))]


def _scripts(experiment, models, factors):  # the authors' script settings, each model with its script's masks and loader
    return [(name, name, SCRIPTS | SCRIPTS_BY_LOSS[MODELS[name].loss]) for name in (models or SCRIPTS_MODELS)]


def _mechanism(experiment, models, factors):
    return [(f"noise_draw={draw}/{name}", name, dict(noise_draw=draw)) for draw in MECHANISM_NOISE_DRAWS
            for name in (models or MECHANISM_MODELS) if MODELS[name].head == "none"]  # the measurement has no head


def _checkpoints(epochs: int) -> list:
    """The epochs at which ``mechanism`` measures: 0, 1/16, 1/8, 1/4, 1/2, 3/4 and all of training."""
    return sorted({0, epochs // 16, epochs // 8, epochs // 4, epochs // 2, 3 * epochs // 4, epochs})


_TODO = {"table2-independent": _table2, "table2-dependent": _table2, "table1": _table1, "ablation": _ablation,
         "ablation-sparsities": _ablation_table, "ablation-rest": _ablation_table,
         "table2-independent-seeds": _more_seeds, "ablation-seeds": _more_seeds,
         "pilot": _pilot, "table4": _table4, "figures": _figures, "table2-scripts": _scripts, "mechanism": _mechanism}


def _default_seeds(experiment: str, quick: bool) -> list:
    if experiment in _MORE:
        return [16, 17] if quick else list(MORE_SEEDS)
    return [1, 2] if quick or experiment == "pilot" else [1, 2, 3, 4, 5]


def _check_selection(experiment: str, models, factors) -> None:
    if models is not None:
        for name in models:
            check_choice("model", name, tuple(MODELS))
    if factors is None:
        return
    known = ABLATIONS if experiment == "ablation" else PILOT if experiment == "pilot" else None
    if known is None:
        raise ValueError(f"factors applies to the ablation and the pilot, not to {experiment!r}.")
    if isinstance(factors, str) or not list(factors):
        raise ValueError(f"factors must be a non-empty list of names from {list(known)}; got {factors!r}.")
    for factor in factors:
        check_choice("factor", factor, tuple(known))


def jobs(experiment: str, *, epochs: int | None = None, seeds=None, sparsities=None, models=None, quick: bool = False,
         factors=None) -> list:
    """The jobs (:class:`clbook.experiments.runner.Job`) of a named experiment: one per (model or setting, sparsity).

    ``table2-independent`` / ``table2-dependent``: the Table 2 models under the masks of the paper's text (Eq. 3) /
    of the authors' contrastive script (Eq. 2); ``table1``: Simplified-SimCLR and -SimSiam with keep probability
    0.1 (the caption's Bernoulli(0.1)); ``ablation``: the factors and models of :data:`ABLATIONS` at Pr(sparse) 0.2;
    ``pilot``: :data:`PILOT` at 1000 epochs, 2 seeds; ``table4`` and ``figures``: the warm starts of Chapter 17;
    ``ablation-sparsities``: the factors of :data:`ABLATION_SPARSITIES` at Pr(sparse) 0.1 and 0.3; ``ablation-rest``:
    those of :data:`ABLATION_REST` at 0.2 (the jobs of :data:`ABLATION_SPARSITIES` that the stored ``ablation`` lacks);
    ``table2-independent-seeds`` / ``ablation-seeds``: CL-basic and NCL-basic under independent masks, without /
    with per-view noise, at :data:`MORE_SEEDS` (seeds 6-15), so that the verdicts rest on 15 paired seeds.
    ``table2-scripts``: :data:`SCRIPTS_MODELS` at the authors' script settings (:data:`SCRIPTS`, with the masks and
    loader of each model's script, :data:`SCRIPTS_BY_LOSS`); ``mechanism``: CL-basic and NCL-basic with the noise
    shared by the views and drawn per view, measured by :func:`~clbook.experiments.landscape.mechanism.mechanism_job`
    at 0, 1/16, 1/8, 1/4, 1/2, 3/4 and all of the epochs (default 4000, Pr(sparse) 0.1).
    ``factors`` (ablation and pilot only) keeps the named factors of :data:`ABLATIONS` / :data:`PILOT`.
    Every job uses ``paired=True`` (same data, permutations and masks for every model of one seed and sparsity),
    records the max-cosines every ``epochs // 80`` epochs (every 100 at 8000) and defaults to 8000 epochs, seeds
    1-5 and Pr(sparse) 0.1, 0.2, 0.3 (``quick``: 20 epochs, seeds 1-2).
    """
    check_choice("experiment", experiment, EXPERIMENTS)
    E = check_int("epochs", epochs, 1) if epochs is not None else (20 if quick else _EPOCHS.get(experiment, 8000))
    given_seeds = seeds is not None
    seeds = [check_int("seed", s, 0) for s in seeds] if seeds is not None else _default_seeds(experiment, quick)
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds (--seeds) must not repeat a seed; got seeds = {seeds}.")
    if sparsities is not None:
        betas = [check_in_range("sparsity", s, 1e-9, 1.0) for s in sparsities]
    else:
        betas = list(_SPARSITIES.get(experiment, [0.1, 0.2, 0.3]))
    _check_selection(experiment, models, factors)
    base = dict(epochs=E, seeds=seeds, record=max(E // 80, 1), paired=True)
    if experiment == "figures":
        if len(seeds) > 3 and given_seeds:
            raise ValueError(f"seeds (--seeds): figures runs at most 3 seeds (3 runs in the paper); got seeds = {seeds}.")
        base = base | dict(seeds=seeds[:3])
    out = []
    for prefix, name, kw in _TODO[experiment](experiment, models, factors):
        for s in betas:
            params = base | kw | dict(model=name, sparsities=[s])
            if experiment == "mechanism":
                params["at"] = _checkpoints(E)
            out.append(runner.Job(key=f"{prefix}/{s}", params=params, cost=_cost(params)))
    if not out:
        raise ValueError(f"experiment {experiment!r} has no jobs with models = {models!r}.")
    return out


def run(experiments, *, epochs: int | None = None, seeds=None, sparsities=None, models=None, factors=None, quick: bool = False, out=None,
        workers: int = 2, backend: str = "local", scheduler: str | None = None, fresh: bool = False, progress: bool = True,
        command: str | None = None, discard_complete: bool = False, worker_timeout: float = runner.WORKER_TIMEOUT) -> dict:
    """Run named experiments one after the other through :func:`clbook.experiments.runner.run_jobs`.

    Each is written to ``<out>/<name>.json`` (``quick-<name>`` with ``quick``), with ``<name>.partial.json`` while it
    runs; an interrupted run resumes where it stopped (``fresh=False``). The jobs of every experiment are built (and
    their arguments checked) before the first runs. ``discard_complete`` lets a run replace a complete result with
    other jobs or settings, ``worker_timeout`` is how long a Dask run waits without workers (see
    :func:`clbook.experiments.runner.run_jobs`). Returns ``{name: result}``.
    """
    if isinstance(experiments, str) or not list(experiments):
        raise ValueError(f"experiments must be a non-empty list of names from {EXPERIMENTS}; got {experiments!r}.")
    out = Path(out) if out is not None else DATA
    command = command or f"python -m clbook.experiments.landscape {' '.join(sys.argv[1:])}"
    todo = {experiment: jobs(experiment, epochs=epochs, seeds=seeds, sparsities=sparsities, models=models, quick=quick,
                             factors=factors if experiment in ("ablation", "pilot") else None) for experiment in experiments}
    done = {}
    for check_only in (True, False):  # every result is checked (out, scheduler, earlier results) before the first job
        for experiment, work in todo.items():
            name = f"quick-{experiment}" if quick else experiment
            settings = dict(experiment=experiment, quick=quick, dtype="float32", jobs={job.key: job.params for job in work})
            function = mechanism_job if experiment == "mechanism" else train_job
            result = runner.run_jobs(function, work, out=out, name=name, command=command, settings=settings, workers=workers,
                                     backend=backend, scheduler=scheduler, resume=not fresh, progress=progress,
                                     experiment=experiment, discard_complete=discard_complete,
                                     worker_timeout=worker_timeout, check_only=check_only)
            if not check_only:
                done[name] = result
    return done


def estimate(experiments, ms_per_epoch: dict, *, workers: int = 2, slowdown: float = 1.0, **kw) -> dict:
    """Estimated wall time of named experiments run one after the other on ``workers`` processes.

    ``ms_per_epoch`` maps a model to its measured ms per epoch per run at n = 1000 (the ``rows`` of
    :func:`clbook.experiments.landscape.benchmark.bench`); a job's time is that × epochs × runs × n / 1000 × ``slowdown``
    (two processes on two cores share memory bandwidth and caches). Jobs are scheduled as
    :func:`clbook.experiments.runner.run_jobs` does, largest first on the first free worker. ``kw`` are the options of
    :func:`jobs`. Returns per experiment its jobs' estimated seconds and wall seconds, and the total.
    """
    workers = check_int("workers", workers, 1)
    slowdown = check_positive("slowdown", slowdown)
    out, total = {}, 0.0
    for experiment in experiments:
        todo = jobs(experiment, **kw)
        seconds = {}
        for job in todo:
            q = job.params
            if q["model"] not in ms_per_epoch:
                raise ValueError(f"ms_per_epoch has no entry for {q['model']!r}.")
            seconds[job.key] = (ms_per_epoch[q["model"]] / 1000 * q["epochs"] * len(q["seeds"]) * len(q["sparsities"])
                                * q.get("n", 1000) / 1000 * slowdown)
        free = [0.0] * workers
        for job in sorted(todo, key=lambda j: -j.cost):
            k = free.index(min(free))
            free[k] += seconds[job.key]
        out[experiment] = dict(jobs={k: round(v) for k, v in seconds.items()}, cpu_seconds=round(sum(seconds.values())),
                               wall_seconds=round(max(free)))
        total += max(free)
    return dict(experiments=out, wall_seconds=round(total), workers=workers, slowdown=slowdown)


def load(name: str, *, directory=None) -> dict:
    """A stored result ``clbook/results/landscape/<name>.json``, or ``<directory>/<name>.json`` of a rerun."""
    if directory is None:
        check_choice("name", name, tuple(results.names("landscape")))
    return results.load("landscape", name, directory=directory)
