r"""Fig. 2 of Esser et al. (2023): nonlinear versus linear output during training, over widths and activations.

One job per (seed, width) (:func:`fig2_job`): :func:`clbook.dynamics.wide.train_nets` trains the linear network and
one nonlinear network per activation (tanh, ReLU, sigmoid) from the same Haar initialisation on the contrastive loss
(1) of the half moons (scaled by 2 so that the nonlinearity matters at small width), with the paper's projected
gradient descent under :math:`W_1^\top W_1 = \mathbb I`, :math:`W_2^\top W_2 = \mathbb I`, and records the mean over
anchors of :math:`|u^\phi_t(x_i) - u^{\mathbb I}_t(x_i)|` and the losses. The jobs run through
:func:`clbook.experiments.runner.run_jobs` (atomic results, resume, local processes or Dask).

``python -m clbook.experiments.wide`` writes ``<out>/fig2.json`` (default out: :func:`clbook.results.user_dir`);
``--quick`` runs two small widths and one seed for 50 steps and writes ``quick-fig2.json``. The stored sweep of the
book, ``clbook/results/wide/fig2.json`` (15 jobs, about 13 minutes on 2 cores), is read with :func:`load`; it was
converted once to the runner's format (its provenance says so). :func:`gaps` arranges a result by activation and
width. Used in Chapter 12.
"""
from __future__ import annotations

import sys

import torch

from .. import config, results
from .._validate import check_choice, check_int
from . import runner

__all__ = ["DEFAULTS", "QUICK", "ACTIVATIONS", "fig2_job", "jobs", "run", "load", "gaps", "main"]

ACTIVATIONS = ("tanh", "softplus2", "relu", "sigmoid")
DEFAULTS = {"widths": [10, 30, 100, 300, 1000], "seeds": [0, 1, 2], "activations": ["tanh", "relu", "sigmoid"],
            "steps": 500, "every": 10, "eta": 0.05, "z": 1, "n": 200, "moon_noise": 0.05, "variance": 0.1, "scale": 2.0}
QUICK = DEFAULTS | {"widths": [10, 30], "seeds": [0], "steps": 50}
_SHARED = ("activations", "steps", "every", "eta", "z", "n", "moon_noise", "variance", "scale")


def fig2_job(*, seed: int, h: int, activations: list, steps: int, every: int, eta: float, z: int, n: int, moon_noise: float,
             variance: float, scale: float) -> dict:
    """One (seed, width): ``{"record", "gaps": {activation: [...]}, "losses": {"linear" and each activation: [...]}}``.

    The data are the half moons of :func:`clbook.data.views.moons_views` (seed 0) times ``scale``; the weights are
    drawn with ``clbook.generator(1000 * seed + h)``. Runs in float64 on the CPU (numbers rounded to 10 digits),
    inside :class:`clbook.config.draws` and with float64 as torch's default dtype for the job only: no global state
    changes (seeds, default dtype, threads, deterministic flags are as before afterwards).
    """
    from ..data.views import moons_views
    from ..dynamics.wide import gap, train_nets

    def rounded(values):
        return [round(float(v), 10) for v in values]

    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # for the whole job, whatever the caller's setup; restored below
    try:
        with config.draws(device="cpu", dtype=torch.float64):
            x, xp, xn = (scale * v for v in moons_views(n, noise=moon_noise, variance=variance, seed=0))
            r = train_nets(x, xp, xn, h=h, z=z, activations=activations, eta=eta, steps=steps, every=every,
                           generator=config.generator(1000 * seed + h))
            return {"record": r["record"].tolist(), "gaps": {a: rounded(gap(r[a][0], r["linear"][0])) for a in activations},
                    "losses": {a: rounded(r[a][1]) for a in ["linear", *activations]}}
    finally:
        torch.set_default_dtype(previous)


def _key(seed: int, h: int) -> str:
    return f"seed={seed},h={h}"


def jobs(params: dict) -> list[runner.Job]:
    """The jobs of a sweep: one per (seed, width), cost proportional to the width (checked arguments)."""
    widths = [check_int("widths[k]", h, max(2, check_int("z", params["z"], 1))) for h in params["widths"]]
    seeds = [check_int("seeds[k]", s, 0) for s in params["seeds"]]
    for a in params["activations"]:
        check_choice("activation", a, ACTIVATIONS)
    for name in ("widths", "seeds"):
        if len(set(params[name])) != len(params[name]):
            raise ValueError(f"{name} (--{name}) must be unique, a value repeats; got {name} = {params[name]}.")
    if len(set(params["activations"])) != len(params["activations"]):
        raise ValueError(f"activations must not repeat; got {params['activations']}.")
    shared = {k: params[k] for k in _SHARED}
    return [runner.Job(_key(s, h), dict(seed=s, h=h, **shared), cost=h) for s in seeds for h in widths]


def run(params: dict | None = None, *, quick: bool = False, out=None, workers: int = 2, backend: str = "local",
        scheduler: str | None = None, fresh: bool = False, progress: bool = True, command: str | None = None,
        discard_complete: bool = False, worker_timeout: float = runner.WORKER_TIMEOUT) -> dict:
    """Run the sweep through :func:`clbook.experiments.runner.run_jobs`; returns the result (runner format).

    ``params`` override :data:`DEFAULTS` (or :data:`QUICK`); the result goes to ``<out>/fig2.json``
    (``quick-fig2.json`` with ``quick``), default ``out``: :func:`clbook.results.user_dir` ``("wide")``.
    """
    p = dict(QUICK if quick else DEFAULTS) | dict(params or {})
    todo = jobs(p)
    settings = {k: p[k] for k in _SHARED} | {"quick": quick}
    return runner.run_jobs(fig2_job, todo, out=out if out is not None else results.user_dir("wide"),
                           name="quick-fig2" if quick else "fig2", command=command or "python -m clbook.experiments.wide",
                           settings=settings, workers=workers, backend=backend, scheduler=scheduler, resume=not fresh,
                           progress=progress, experiment="wide", discard_complete=discard_complete,
                           worker_timeout=worker_timeout)


def load(name: str = "fig2", *, directory=None) -> dict:
    """A sweep: the one shipped with clbook (``clbook/results/wide/fig2.json``), or ``<directory>/<name>.json`` of a rerun."""
    return results.load("wide", name, directory=directory)


def gaps(data: dict) -> tuple[list[int], dict]:
    """The record and ``{activation: {h: tensor [seeds, len(record)]}}`` of a sweep's gaps (seeds in the jobs' order)."""
    if not data.get("complete", False):
        raise ValueError("data is not a complete sweep (complete: false); finish it or pass a complete result.")
    record, table = None, {}
    for job in data["jobs"].values():
        h, result = job["params"]["h"], job["result"]
        record = record or result["record"]
        for a, values in result["gaps"].items():
            table.setdefault(a, {}).setdefault(h, []).append(values)
    return record, {a: {h: torch.tensor(v, dtype=torch.float64) for h, v in sorted(by_h.items())} for a, by_h in table.items()}


def main(argv=None) -> int:
    """Run the command line (``python -m clbook.experiments.wide --help``); return the exit code."""
    parser = runner.ArgumentParser(
        prog="python -m clbook.experiments.wide", description=__doc__.split("\n")[0],
        epilog=f"activations: {', '.join(ACTIVATIONS)}\nexample:\n  python -m clbook.experiments.wide --quick --out results/ "
               "--workers 2\n  python -m clbook.experiments.wide --widths 10,100 --seeds 0,1 --activations tanh,relu --out results/")
    parser.add_argument("--quick", action="store_true", help="widths 10,30, seed 0, 50 steps; written as quick-fig2.json")
    parser.add_argument("--widths", type=runner.int_list, default=None, help="comma-separated hidden widths >= 2 "
                        "(default 10,30,100,300,1000)")
    parser.add_argument("--seeds", type=runner.int_list, default=None, help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--activations", type=runner.choice_list(ACTIVATIONS), default=None,
                        help=f"comma-separated activations among {', '.join(ACTIVATIONS)} (default tanh,relu,sigmoid)")
    parser.add_argument("--steps", type=runner.positive_int, default=None, help="training steps (default 500; 50 with --quick)")
    runner.add_arguments(parser, discard_complete=True)
    args = parser.parse_args(argv)
    params = {k: v for k, v in (("widths", args.widths), ("seeds", args.seeds), ("activations", args.activations),
                                ("steps", args.steps)) if v is not None}
    command = f"python -m clbook.experiments.wide {' '.join(argv if argv is not None else sys.argv[1:])}".strip()
    try:
        jobs(dict(QUICK if args.quick else DEFAULTS) | params)  # every argument is checked before anything is written
        data = run(params, quick=args.quick, out=args.out, workers=args.workers, backend=args.backend,
                   scheduler=args.scheduler, fresh=args.fresh, command=command, discard_complete=args.discard_complete,
                   worker_timeout=args.worker_timeout)
    except (ValueError, TypeError, OSError) as exc:
        parser.fail(exc)
    record, table = gaps(data)
    print(f"{len(data['jobs'])} jobs in {data['provenance']['seconds']} s; final mean gap by width:")
    for a, by_h in table.items():
        print(f"  {a}: " + ", ".join(f"h = {h}: {float(v[:, -1].mean()):.3g}" for h, v in by_h.items()))
    return 0


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: worker processes must find the jobs' function by its
    # module name (a function of __main__ is pickled by value, with the module's autograd classes, and fails there).
    from clbook.experiments.wide import main as _main

    sys.exit(_main())
