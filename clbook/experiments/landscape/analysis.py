"""Reading stored results of Pokle et al.'s experiments: runs by model, end values, paired gaps, ablation effects, replays.

Every function takes the result dicts of :func:`clbook.experiments.landscape.experiments.load` (or of a run of
:func:`~clbook.experiments.landscape.experiments.run`) or the rows they hold (:meth:`TrainResult.rows`); only
:func:`replay` trains (a few epochs of one stored run, live).
"""
from __future__ import annotations

import math

import torch

from ..._validate import check_choice, check_in_range, check_int
from .models import MODELS
from .training import METRICS, train

__all__ = ["rows_by_model", "mixed", "end_values", "paired_gap", "ablation_effects", "replay", "seed_spread", "trajectory_summary",
           "escape_epochs"]


def rows_by_model(data: dict) -> dict:
    """``{model or tag: rows}`` of a stored result, whatever its format (the runner's ``jobs`` dict, or the older list)."""
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), (dict, list)):
        raise ValueError(f"data must be a stored result, a dict with 'jobs' (see load); got {type(data).__name__}.")
    out = {}
    try:
        if isinstance(data["jobs"], dict):
            for key, job in data["jobs"].items():
                out.setdefault(key.rsplit("/", 1)[0], []).extend(job["result"]["rows"])
        else:
            for job in data["jobs"]:
                out.setdefault(job["tag"], []).extend(job["rows"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"data is not a stored landscape result: a job lacks {exc}.") from None
    return out


def _check_rows(rows, keys) -> list[dict]:
    if not isinstance(rows, (list, tuple)) or not rows:
        raise ValueError("rows must be a non-empty list of result rows (TrainResult.rows() or rows_by_model(...)[model]).")
    for r in rows:
        if not isinstance(r, dict) or any(k not in r for k in keys):
            raise ValueError(f"rows must be result rows with the keys {list(keys)}; got {r!r:.80}.")
    return list(rows)


def mixed(independent: dict, dependent: dict) -> dict:
    """The authors' own configuration, assembled: contrastive models from ``dependent``, the others from ``independent``.

    ``main_simclr.py`` without ``--use_masking`` (as the repository's scripts run it) falls back to the dependent
    masks of Eq. 2, while ``main.py`` (non-contrastive) always uses independent masks. Returns ``{model: rows}``.
    """
    ind, dep = rows_by_model(independent), rows_by_model(dependent)
    out = {}
    for key in ind:
        source = dep if MODELS[key.split("/")[-1]].loss == "ntxent" else ind
        if key not in source:
            raise ValueError(f"{key!r} is missing from the {'dependent' if source is dep else 'independent'} result.")
        out[key] = source[key]
    return out


def end_values(groups: dict) -> dict:
    """Per-seed end points of stored runs: ``{(key, sparsity, metric): [value of each seed, seeds in increasing order]}``.

    ``groups`` maps a model (or ``factor/model``) to its rows, as :func:`rows_by_model` and :func:`mixed` return them;
    ``metric`` is one of :data:`METRICS`. The per-seed lists are what :func:`clbook.verify.compare_table` and
    :func:`paired_gap` take.
    """
    if not isinstance(groups, dict) or not groups:
        raise ValueError(f"groups must be a non-empty dict {{model: rows}} (see rows_by_model); got {groups!r:.80}.")
    out = {}
    for key, rows in groups.items():
        rows = _check_rows(rows, ("sparsity", "seed", "end"))
        for r in sorted(rows, key=lambda r: (r["sparsity"], r["seed"])):
            for k, metric in enumerate(METRICS):
                out.setdefault((key, r["sparsity"], metric), []).append(float(r["end"][k]))
    return out


def paired_gap(values: dict, a: str, b: str, *, sparsity: float, metric: str = "minimum") -> tuple[float, float]:
    r"""Mean and standard error over seeds of the seed-by-seed difference ``a − b`` of :func:`end_values`.

    The runs of one seed are paired (``paired=True``: same data, initial weights where the architectures agree,
    permutations and masks), so the standard error is that of the differences, :math:`s_{a-b}/\sqrt{n}`.
    """
    check_choice("metric", metric, METRICS)
    if not isinstance(values, dict):
        raise ValueError(f"values must be the dict of end_values; got {type(values).__name__}.")
    try:
        va, vb = values[(a, sparsity, metric)], values[(b, sparsity, metric)]
    except KeyError as exc:
        raise ValueError(f"values has no cell {exc.args[0]!r}; a and b must be keys of end_values at this sparsity.") from None
    if len(va) != len(vb) or len(va) < 2:
        raise ValueError(f"a and b need the same seeds, at least 2; got {len(va)} and {len(vb)} values.")
    diff = torch.tensor(va, dtype=torch.float64) - torch.tensor(vb, dtype=torch.float64)
    return float(diff.mean()), float(diff.std() / math.sqrt(len(diff)))


def ablation_effects(baseline: dict, variants: dict, *, models, sparsity: float = 0.2, metric: str = "minimum") -> list[dict]:
    """One-at-a-time ablations against a baseline, paired by seed, from :func:`end_values` dicts.

    ``baseline`` holds the baseline runs keyed by model; ``variants`` maps a factor name to its :func:`end_values`
    dict (keyed by model, or by ``factor/model`` as the ablation result stores them). Returns one dict per factor
    (baseline first): ``factor``, and per model ``values[model] = (mean, sd)`` and ``change[model] = (mean, se)`` of
    the seed-by-seed difference from the baseline, and ``gap = (mean, se)`` of ``models[0] − models[1]`` under that
    factor (Table 2's claim (i) when the models are CL-basic and NCL-basic).
    """
    check_choice("metric", metric, METRICS)
    models = list(models)
    if len(models) != 2:
        raise ValueError(f"models must name two models (the gap is the first minus the second); got {models!r}.")
    if not isinstance(variants, dict):
        raise ValueError(f"variants must be a dict {{factor: end_values}}; got {type(variants).__name__}.")

    def values(data, factor, name):
        for key in ((f"{factor}/{name}", sparsity, metric), (name, sparsity, metric)):
            if isinstance(data, dict) and key in data:
                return torch.tensor(data[key], dtype=torch.float64)
        raise ValueError(f"{'baseline' if factor is None else 'variants'} has no runs of {name!r} at sparsity {sparsity}"
                         + ("" if factor is None else f" for the factor {factor!r}") + ".")

    base = {name: values(baseline, None, name) for name in models}
    rows = []
    for factor, data in [("baseline", None), *variants.items()]:
        row = dict(factor=factor, values={}, change={})
        current = {}
        for name in models:
            v = base[name] if data is None else values(data, factor, name)
            if len(v) != len(base[name]) or len(v) < 2:
                raise ValueError(f"{factor}: {name} has {len(v)} seeds, the baseline {len(base[name])}; they must be paired.")
            d = v - base[name]
            current[name] = v
            row["values"][name] = (float(v.mean()), float(v.std()))
            row["change"][name] = (float(d.mean()), float(d.std() / math.sqrt(len(d))))
        g = current[models[0]] - current[models[1]]
        row["gap"] = (float(g.mean()), float(g.std() / math.sqrt(len(g))))
        rows.append(row)
    return rows


def replay(data: dict, model: str, *, sparsity: float = 0.2, seed: int = 1, epochs: int = 200) -> dict:
    """Rerun the first ``epochs`` epochs of one stored run live and compare it with its stored trajectory.

    ``data`` is a stored result of the runner (e.g. ``load("table2-independent")``); the run is trained with the
    stored job's own settings (scheme, noise, seeds' streams, float32), alone, which gives the same numbers as in its
    stack (a unit test checks this). Returns ``epochs`` (the recorded epochs up to ``epochs``), ``live`` and
    ``stored`` (``{metric: [value at each epoch]}``) and ``max_abs_diff`` over them.
    """
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        raise ValueError("data must be a stored result of the runner (a dict whose 'jobs' maps keys to jobs).")
    key = f"{model}/{sparsity}"
    if key not in data["jobs"]:
        raise ValueError(f"data has no job {key!r}; it has {sorted(data['jobs'])[:6]}.")
    params = dict(data["jobs"][key]["params"])
    epochs = check_int("epochs", epochs, 1, params["epochs"])
    run = next((r for r in data["jobs"][key]["result"]["rows"] if r["seed"] == seed), None)
    if run is None:
        raise ValueError(f"seed must be one of the stored seeds {params['seeds']}; got seed = {seed!r}.")
    params.update(seeds=[seed], epochs=epochs)
    res = train(dtype=torch.float32, **params)
    common = [(k, run["epochs"].index(e)) for k, e in enumerate(res.epochs) if e in run["epochs"]]  # recorded in both
    live = {m: [float(getattr(res, m)[k][0]) for k, _ in common] for m in METRICS}
    stored = {m: [run[m][i] for _, i in common] for m in METRICS}
    diff = max(abs(a - b) for m in METRICS for a, b in zip(live[m], stored[m], strict=True))
    return dict(epochs=[res.epochs[k] for k, _ in common], live=live, stored=stored, max_abs_diff=diff)


def seed_spread(rows: list[dict], *, where: str = "end") -> dict:
    """Mean and sample standard deviation over seeds of (max, median, min) for each sparsity: ``{sparsity: [(mean, sd)] * 3}``."""
    check_choice("where", where, ("start", "end"))
    rows = _check_rows(rows, ("sparsity", where))
    out = {}
    for s in sorted({r["sparsity"] for r in rows}):
        vals = torch.tensor([r[where] for r in rows if r["sparsity"] == s], dtype=torch.float64)
        sd = vals.std(0) if len(vals) > 1 else torch.zeros(3, dtype=torch.float64)
        out[s] = [(float(a), float(b)) for a, b in zip(vals.mean(0), sd, strict=True)]
    return out


def trajectory_summary(rows: list[dict], *, metric: str = "minimum") -> dict:
    """Per sparsity: the recorded epochs and the mean, sample sd and count over runs of one metric at each of them."""
    check_choice("metric", metric, METRICS)
    rows = _check_rows(rows, ("sparsity", "epochs", metric))
    out = {}
    for s in sorted({r["sparsity"] for r in rows}):
        runs = [r for r in rows if r["sparsity"] == s]
        epochs = runs[0]["epochs"]
        if any(r["epochs"] != epochs for r in runs):
            raise ValueError(f"the runs at sparsity {s} were recorded at different epochs.")
        vals = torch.tensor([r[metric] for r in runs], dtype=torch.float64)
        sd = vals.std(0) if len(runs) > 1 else torch.zeros(len(epochs), dtype=torch.float64)
        out[s] = dict(epochs=epochs, mean=vals.mean(0).tolist(), sd=sd.tolist(), count=len(runs))
    return out


def escape_epochs(rows: list[dict], *, threshold: float = 0.8, metric: str = "minimum") -> dict:
    """When each run escapes: ``{(sparsity, seed): first recorded epoch with metric > threshold, or None}``.

    A run whose ``metric`` (default the minimum max-cosine) never exceeds ``threshold`` at a recorded epoch maps to
    ``None``. ``threshold`` is a number in [0, 1]; Chapter 17 calls a run above 0.8 escaped (the paper's CL-basic ends
    at 0.76-0.88).
    """
    check_choice("metric", metric, METRICS)
    threshold = check_in_range("threshold", threshold, 0.0, 1.0)
    rows = _check_rows(rows, ("sparsity", "seed", "epochs", metric))
    out = {}
    for r in sorted(rows, key=lambda r: (r["sparsity"], r["seed"])):
        out[(r["sparsity"], r["seed"])] = next((e for e, v in zip(r["epochs"], r[metric], strict=True)
                                                if v > threshold), None)
    return out
