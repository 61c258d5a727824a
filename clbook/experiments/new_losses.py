r"""The loss comparison of Sec. 6 (Table 1) of the α-CL paper, on shifted digits.

Each method trains the same encoder (backbone MLP 144→256→256 with BatchNorm and ReLU, projection head
256→256→64, ℓ2-normalised output, so :math:`d^2 = 1-\cos`) with Adam on two augmented views of
:func:`clbook.data.digits.shifted_digits`, the loss symmetrised over the views. The frozen backbone is then
evaluated by a linear probe and a 5-NN classifier (:mod:`clbook.metrics.probes`) at several epochs.

Methods (:data:`METHODS`): InfoNCE with ε = 0 and 1 (minimised directly), the quadratic loss (constant α),
α-CL with the exact min players of :math:`r_H`, :math:`r_\gamma` (γ = 2) and :math:`r_s` (τ = 5), the
row-normalised inverse distance α of the authors' code, α-CL-direct (p = 4, Eq. 12), and InfoNCE's α with the
gradient flowing through it ("backprop α(θ)"); the α rules are those of :mod:`clbook.alpha`.

The work is a list of jobs (one per method and seed, and one for the baselines: raw pixels and the random
backbone) run by :func:`clbook.experiments.runner.run_jobs`: results are written atomically after every job, an
interrupted run resumes, and a complete result is never replaced by a partial one. The command line::

    # the full comparison (about 20 CPU-minutes)
    python -m clbook.experiments.new_losses
    # 4 epochs, one seed (a minute)
    python -m clbook.experiments.new_losses --quick
    python -m clbook.experiments.new_losses --seeds 3,4 \
        --name more-seeds --workers 4

writes ``<out>/<name>.json`` (``--out``, default :func:`clbook.results.user_dir`). The result the book shows ships as
``clbook/results/new_losses/full.json`` (``quick.json`` for the tests) and is read with :func:`load`, which returns a
:class:`Comparison`. Used in Chapter 4.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .. import alpha, config, losses, results
from .._validate import check_choice, check_int
from ..data.digits import augment, shifted_digits
from ..metrics.probes import knn_probe, linear_probe
from . import runner

__all__ = ["METHODS", "Settings", "objective", "make_encoder", "backbone_features", "train", "baselines", "run_job",
           "jobs", "run", "stored_settings", "Comparison", "from_result", "load", "summary", "main"]

STREAMS = {"batches": 1000}  # a seed's views and batches (clbook.config.stream); the encoder draws from the seed
METHODS = ("InfoNCE ε=0", "InfoNCE ε=1", "quadratic", "α-CL-r_H", "α-CL-r_γ (exact)", "α-CL inverse (code)",
           "α-CL-r_s", "α-CL-direct p=4", "backprop α(θ)")
"""The methods compared, in the order of the paper's Table 1 where it has them."""

DEFAULT_SEEDS = (0, 1, 2)
QUICK_SEEDS = (0,)


@dataclass(frozen=True)
class Settings:
    """Hyperparameters of one comparison (defaults: the note's §4.1 with the paper's τ, γ, p)."""

    epochs: int = 20
    eval_epochs: tuple = (5, 10, 15, 20)
    batch: int = 128
    lr: float = 1e-3
    temperature: float = 0.5
    temperature_rs: float = 5.0
    gamma: float = 2.0
    power: float = 4.0
    hidden: int = 256
    out: int = 64
    canvas: int = 12
    n_train: int = 1200
    data_seed: int = 0
    extra: dict = field(default_factory=dict)

    @classmethod
    def quick(cls) -> Settings:
        """The small version: 4 epochs, probes at epochs 2 and 4."""
        return cls(epochs=4, eval_epochs=(2, 4))

    def as_json(self) -> dict:
        """The settings as they are stored (tuples as lists), so that a resumed run compares equal."""
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_json(cls, data: dict) -> Settings:
        """The inverse of :meth:`as_json`."""
        data = dict(data)
        data["eval_epochs"] = tuple(data["eval_epochs"])
        return cls(**data)


def objective(method: str, settings: Settings):
    """The loss ``(z1, z2) -> scalar`` of ``method`` (anchors averaged), for ℓ2-normalised embeddings."""
    check_choice("method", method, METHODS)
    tau = settings.temperature
    if method.startswith("InfoNCE"):
        member = losses.infonce(tau, 0.0 if method.endswith("0") else 1.0)
        return lambda z1, z2: member(z1, z2) / z1.shape[0]
    rule = {
        "quadratic": lambda: alpha.rule("uniform"),
        "α-CL-r_H": lambda: alpha.rule("entropy", temperature=tau),
        "α-CL-r_γ (exact)": lambda: alpha.rule("inverse_power", temperature=tau, gamma=settings.gamma),
        "α-CL inverse (code)": lambda: alpha.rule("inverse_distance", temperature=tau, exponent=1.0),
        "α-CL-r_s": lambda: alpha.rule("sparsemax", temperature=settings.temperature_rs),
        "α-CL-direct p=4": lambda: alpha.rule("direct", temperature=tau, power=settings.power),
        "backprop α(θ)": lambda: alpha.rule("entropy", temperature=tau, backprop=True),
    }[method]()
    return lambda z1, z2: alpha.alpha_cl_loss(z1, z2, rule)


class _Encoder(nn.Module):
    def __init__(self, d_in: int, hidden: int, out: int):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(d_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                      nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, out))

    def forward(self, x):
        return nn.functional.normalize(self.head(self.backbone(x)), dim=1)


def make_encoder(d_in: int, settings: Settings, *, seed: int, dtype=torch.float32) -> nn.Module:
    """The encoder on the CPU, initialised by torch's default layer initialisation from ``seed``.

    The draw happens inside :func:`torch.random.fork_rng`, so torch's global generator is the same afterwards.
    """
    d_in = check_int("d_in", d_in, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _Encoder(d_in, settings.hidden, settings.out).to(dtype)


def backbone_features(net, x):
    """Frozen backbone features of ``x`` (eval mode, no gradient), shape ``[n, hidden]``."""
    net.eval()
    with torch.no_grad():
        f = net.backbone(x)
    net.train()
    return f


def train(method: str, settings: Settings, *, seed: int, data=None, dtype=torch.float32, evaluate: bool = True) -> dict:
    """Train one method from one seed on the CPU; returns the probe accuracies at ``settings.eval_epochs`` and the losses.

    The encoder is initialised from ``seed``; views and batches are drawn from a CPU generator seeded with
    ``1000 + seed``, so every method sees the same batches and augmentations for a given seed. Returns
    ``{"method", "seed", "epoch", "linear", "knn", "loss", "net"}`` (lists over the evaluated epochs).
    """
    check_choice("method", method, METHODS)
    seed = check_int("seed", seed, minimum=0)
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64; got dtype = {dtype!r}.")
    data = data or shifted_digits(canvas=settings.canvas, n_train=settings.n_train, seed=settings.data_seed, dtype=dtype)
    x = data.x_train.to(device="cpu", dtype=dtype)
    net = make_encoder(x.shape[1], settings, seed=seed, dtype=dtype)
    opt = torch.optim.Adam(net.parameters(), lr=settings.lr)
    loss_fn = objective(method, settings)
    gen = config.stream(seed, "batches", STREAMS)
    steps = x.shape[0] // settings.batch
    history = {"epoch": [], "linear": [], "knn": [], "loss": []}
    for epoch in range(1, settings.epochs + 1):
        order = torch.randperm(x.shape[0], generator=gen)
        total = 0.0
        for s in range(steps):
            xb = x[order[s * settings.batch:(s + 1) * settings.batch]]
            v1 = augment(xb, generator=gen, canvas=settings.canvas)
            v2 = augment(xb, generator=gen, canvas=settings.canvas)
            z1, z2 = net(v1), net(v2)
            loss = 0.5 * (loss_fn(z1, z2) + loss_fn(z2, z1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        if evaluate and epoch in settings.eval_epochs:
            ftr, fte = backbone_features(net, x), backbone_features(net, data.x_test.to(device="cpu", dtype=dtype))
            history["epoch"].append(epoch)
            history["linear"].append(linear_probe(ftr, data.y_train, fte, data.y_test))
            history["knn"].append(knn_probe(ftr, data.y_train, fte, data.y_test))
            history["loss"].append(total / steps)
    return dict(method=method, seed=seed, **history, net=net)


def baselines(settings: Settings, *, seeds=(0,)) -> dict:
    """Probe accuracies of raw pixels and of the randomly initialised backbone (mean over ``seeds``)."""
    seeds = [check_int("seeds", s, minimum=0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one seed for the random backbone.")
    data = shifted_digits(canvas=settings.canvas, n_train=settings.n_train, seed=settings.data_seed)
    raw = dict(linear=linear_probe(data.x_train, data.y_train, data.x_test, data.y_test),
               knn=knn_probe(data.x_train, data.y_train, data.x_test, data.y_test))
    rand = []
    for seed in seeds:
        net = make_encoder(data.x_train.shape[1], settings, seed=seed)
        ftr, fte = backbone_features(net, data.x_train), backbone_features(net, data.x_test)
        rand.append((linear_probe(ftr, data.y_train, fte, data.y_test), knn_probe(ftr, data.y_train, fte, data.y_test)))
    return dict(raw_pixels=raw, random_backbone=dict(linear=float(np.mean([r[0] for r in rand])),
                                                     knn=float(np.mean([r[1] for r in rand]))))


# ----------------------------------------------------------------------------------------- jobs and the runner

def run_job(kind: str, settings: dict, method: str = "", seed: int = 0, seeds=()):
    """One job of the comparison (a top-level function, so worker processes can import it).

    ``kind="train"``: the probe rows of ``method`` from ``seed`` (one per evaluated epoch); ``kind="baselines"``:
    :func:`baselines` over ``seeds``. ``settings`` is :meth:`Settings.as_json`.
    """
    check_choice("kind", kind, ("train", "baselines"))
    settings = Settings.from_json(settings)
    if kind == "baselines":
        return baselines(settings, seeds=seeds)
    out = train(method, settings, seed=seed)
    return [dict(epoch=epoch, linear=round(out["linear"][k], 6), knn=round(out["knn"][k], 6), loss=round(out["loss"][k], 6))
            for k, epoch in enumerate(out["epoch"])]


def _train_key(method: str, seed: int) -> str:
    return f"{method}/seed={seed}"


def jobs(settings: Settings, *, seeds, methods=METHODS) -> list[runner.Job]:
    """The jobs of one comparison: every ``method`` × ``seed``, then the baselines (random backbone over ``seeds``).

    ``seeds`` and ``methods`` must be non-empty, without repeats.
    """
    seeds = [check_int("seeds", s, minimum=0) for s in seeds]
    methods = list(methods)
    for m in methods:
        check_choice("methods", m, METHODS)
    if not seeds or not methods:
        raise ValueError(f"need at least one seed and one method; got seeds = {seeds}, methods = {methods}.")
    if len(set(seeds)) < len(seeds) or len(set(methods)) < len(methods):
        raise ValueError(f"seeds and methods may not repeat; got seeds = {seeds}, methods = {methods}.")
    s = settings.as_json()
    out = [runner.Job(_train_key(m, seed), dict(kind="train", settings=s, method=m, seed=seed), cost=1.0)
           for m in methods for seed in seeds]
    out.append(runner.Job("baselines", dict(kind="baselines", settings=s, seeds=seeds), cost=0.1))
    return out


def run(*, quick: bool = False, seeds=None, methods=METHODS, name: str | None = None, out=None, workers: int = 1,
        threads: int = 1, backend: str = "local", scheduler: str | None = None, fresh: bool = False, progress: bool = True,
        command: str = "", discard_complete: bool = False, worker_timeout: float = runner.WORKER_TIMEOUT) -> dict:
    """Run the comparison through :func:`clbook.experiments.runner.run_jobs`; returns the runner's result dict.

    Parameters
    ----------
    quick : bool
        :meth:`Settings.quick` and seed 0 (written as ``quick``), instead of 20 epochs and seeds 0, 1, 2 (``full``).
    seeds, methods : sequence, optional
        A subset; then ``name`` is required, so that a subset never replaces the complete ``full``/``quick`` result.
    name : str, optional
        The result's file name (default ``full`` or ``quick``).
    out : path, optional
        Folder of the result (default :func:`clbook.results.user_dir`).
    workers, threads, backend, scheduler, progress
        As in :func:`clbook.experiments.runner.run_jobs`.
    fresh : bool
        Ignore an earlier partial result and start over (``--fresh``; the runner's ``resume=False``).
    discard_complete : bool
        As in :func:`clbook.experiments.runner.run_jobs` (``--discard-complete``).
    """
    default_seeds = QUICK_SEEDS if quick else DEFAULT_SEEDS
    seeds = list(default_seeds if seeds is None else seeds)
    methods = list(methods)
    subset = seeds != list(default_seeds) or methods != list(METHODS)
    if name is None:
        if subset:
            raise ValueError("a subset of the seeds or methods needs its own name (--name), so that it cannot replace the "
                             "complete result 'full' or 'quick'.")
        name = "quick" if quick else "full"
    settings = Settings.quick() if quick else Settings()
    todo = jobs(settings, seeds=seeds, methods=methods)
    out = Path(out) if out is not None else results.user_dir("new_losses")
    command = command or "python -m clbook.experiments.new_losses" + (" --quick" if quick else "")
    stored = stored_settings(settings)
    return runner.run_jobs(run_job, todo, out=out, name=name, command=command, settings=stored, workers=workers,
                           threads=threads, backend=backend, scheduler=scheduler, resume=not fresh, progress=progress,
                           experiment="new_losses", discard_complete=discard_complete, worker_timeout=worker_timeout)


def stored_settings(settings: Settings) -> dict:
    """The settings a result stores: the hyperparameters and the protocol in words."""
    return dict(settings.as_json(), optimizer="Adam", augmentation="shift ±3 px, contrast ×U(0.6, 1.4), noise σ=0.2",
                probes="logistic regression C=0.1 on standardised backbone features; 5-NN cosine")


# ----------------------------------------------------------------------------------------------- reading results

@dataclass(frozen=True)
class Comparison:
    """A comparison as the chapter reads it: settings, one row per (method, seed, epoch), baselines, provenance."""

    settings: dict
    seeds: list
    methods: list
    rows: list
    baselines: dict
    provenance: dict
    complete: bool


def from_result(data: dict) -> Comparison:
    """A :class:`Comparison` from a result dict of :func:`run` (the runner's format)."""
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        raise ValueError("data must be a result of clbook.experiments.new_losses.run (a dict with a 'jobs' dict).")
    rows, seeds, methods, base = [], [], [], None
    for job in data["jobs"].values():
        params = job["params"]
        if params["kind"] == "baselines":
            base = job["result"]
            continue
        m, s = params["method"], params["seed"]
        seeds += [s] if s not in seeds else []
        methods += [m] if m not in methods else []
        rows += [dict(method=m, seed=s, **row) for row in job["result"]]
    settings = dict(data["settings"])
    return Comparison(settings, seeds, methods, rows, base or {}, data.get("provenance", {}), bool(data.get("complete")))


def load(name: str = "full", *, directory=None) -> Comparison:
    """A stored comparison.

    ``clbook/results/new_losses/<name>.json`` (``full`` or ``quick``), or ``<directory>/<name>.json`` of your own run.
    """
    if directory is None:
        check_choice("name", name, ("full", "quick"))
    return from_result(results.load("new_losses", name, directory=directory))


def summary(rows: list[dict], *, value: str = "linear") -> dict:
    """Mean, standard deviation (over seeds, ddof = 1 when there are ≥ 2 seeds) and count per ``(method, epoch)``."""
    check_choice("value", value, ("linear", "knn", "loss"))
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        groups.setdefault((row["method"], row["epoch"]), []).append(float(row[value]))
    return {key: (float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else 0.0, len(v)) for key, v in groups.items()}


# ------------------------------------------------------------------------------------------------ command line

def main(argv=None) -> int:
    """Run the command line (``python -m clbook.experiments.new_losses --help``); return the exit code."""
    parser = runner.ArgumentParser(
        prog="python -m clbook.experiments.new_losses", description=__doc__.split("\n")[0],
        epilog=f"methods: {', '.join(METHODS)}\nexample:\n  python -m clbook.experiments.new_losses --quick --out results/\n"
               "  python -m clbook.experiments.new_losses --seeds 0 --methods 'quadratic,InfoNCE ε=0' --name subset --out results/")
    parser.add_argument("--quick", action="store_true", help="a small version (4 epochs, seed 0), written as quick.json")
    parser.add_argument("--seeds", type=runner.int_list, default=None,
                        help="comma-separated seeds, e.g. 0,1,2 (default 0,1,2; quick: 0); a subset needs --name")
    parser.add_argument("--methods", type=runner.choice_list(METHODS), default=None,
                        help="comma-separated methods (default all, listed below); a subset needs --name")
    parser.add_argument("--name", default=None, help="file name of the result (default full, or quick)")
    parser.add_argument("--threads", type=runner.positive_int, default=1, help="torch threads per job (default 1)")
    runner.add_arguments(parser, workers=1, discard_complete=True)
    args = parser.parse_args(argv)
    if args.seeds is not None and len(set(args.seeds)) < len(args.seeds):
        parser.error(f"--seeds may not repeat a seed; got {args.seeds}")
    if args.methods is not None and len(set(args.methods)) < len(args.methods):
        parser.error("--methods may not repeat a method")
    if args.name is not None and (not args.name or any(c in args.name for c in "/\\") or args.name.startswith(".")):
        parser.error(f"--name must be a plain file name; got {args.name!r}")
    command = "python -m clbook.experiments.new_losses " + " ".join(argv if argv is not None else sys.argv[1:])
    try:
        data = run(quick=args.quick, seeds=args.seeds, methods=args.methods or METHODS, name=args.name, out=args.out,
                   workers=args.workers, threads=args.threads, backend=args.backend, scheduler=args.scheduler, fresh=args.fresh,
                   command=command.strip(), discard_complete=args.discard_complete,
                   worker_timeout=args.worker_timeout)
    except (ValueError, TypeError, OSError) as exc:
        parser.fail(exc)
    out = args.out if args.out is not None else results.user_dir("new_losses")
    print(f"wrote {Path(out) / data['name']}.json ({data['provenance']['seconds']} s)")
    return 0


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: worker processes must find the jobs' function by its
    # module name (a function of __main__ is pickled by value, with the module's autograd classes, and fails there).
    from clbook.experiments.new_losses import main as _main

    sys.exit(_main())
