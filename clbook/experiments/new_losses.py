r"""The loss comparison of Sec. 6 (Table 1) of the α-CL paper, on shifted digits.

Each method trains the same encoder (backbone MLP 144→256→256 with BatchNorm and ReLU, projection head
256→256→64, ℓ2-normalised output, so :math:`d^2 = 1-\cos`) with Adam on two augmented views of
:func:`clbook.data.digits.shifted_digits`, the loss symmetrised over the views. The frozen backbone is then
evaluated by a linear probe and a 5-NN classifier (:mod:`clbook.metrics.probes`) at several epochs.

Methods (``METHODS``): InfoNCE with ε = 0 and 1 (minimised directly), the quadratic loss (constant α),
α-CL with the exact min players of :math:`r_H`, :math:`r_\gamma` (γ = 2) and :math:`r_s` (τ = 5), the
row-normalised inverse distance α of the authors' code, α-CL-direct (p = 4, Eq. 12), and InfoNCE's α with the
gradient flowing through it ("backprop α(θ)").

``python -m clbook.experiments.new_losses [--quick]`` writes ``clbook/results/new_losses/<name>.json`` with
provenance (command, commit, date, seconds, machine, parameters, seeds). Used in Chapter 4.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from .. import losses, minplayer, results
from .._validate import check_choice, check_int, check_positive
from ..data.digits import augment, shifted_digits
from ..metrics.probes import knn_probe, linear_probe

__all__ = ["METHODS", "Settings", "objective", "make_encoder", "backbone_features", "train", "run", "load", "summary", "main"]

DATA = results.user_dir("new_losses")  # default --out of a rerun; the shipped results are read with results.load

METHODS = ("InfoNCE ε=0", "InfoNCE ε=1", "quadratic", "α-CL-r_H", "α-CL-r_γ (exact)", "α-CL inverse (code)",
           "α-CL-r_s", "α-CL-direct p=4", "backprop α(θ)")
"""The methods compared, in the order of the paper's Table 1 where it has them."""


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


def objective(method: str, settings: Settings):
    """The loss ``(z1, z2) -> scalar`` of ``method`` (anchors averaged), for ℓ2-normalised embeddings."""
    check_choice("method", method, METHODS)
    tau = settings.temperature
    if method.startswith("InfoNCE"):
        member = losses.infonce(tau, 0.0 if method.endswith("0") else 1.0)
        return lambda z1, z2: member(z1, z2) / z1.shape[0]
    rule = {
        "quadratic": lambda: minplayer.rule("uniform"),
        "α-CL-r_H": lambda: minplayer.rule("entropy", temperature=tau),
        "α-CL-r_γ (exact)": lambda: minplayer.rule("inverse_power", temperature=tau, gamma=settings.gamma),
        "α-CL inverse (code)": lambda: minplayer.rule("inverse_distance", temperature=tau, exponent=1.0),
        "α-CL-r_s": lambda: minplayer.rule("sparsemax", temperature=settings.temperature_rs),
        "α-CL-direct p=4": lambda: minplayer.rule("direct", temperature=tau, power=settings.power),
        "backprop α(θ)": lambda: minplayer.rule("entropy", temperature=tau, backprop=True),
    }[method]()
    return lambda z1, z2: minplayer.alpha_cl_loss(z1, z2, rule)


class _Encoder(nn.Module):
    def __init__(self, d_in: int, hidden: int, out: int):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(d_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                      nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, out))

    def forward(self, x):
        return nn.functional.normalize(self.head(self.backbone(x)), dim=1)


def make_encoder(d_in: int, settings: Settings, *, seed: int, dtype=torch.float32) -> nn.Module:
    """The encoder, initialised from ``seed`` without touching torch's global generator."""
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
    """Train one method from one seed; returns the probe accuracies at ``settings.eval_epochs`` and the losses.

    The encoder is initialised from ``seed``; views and batches are drawn from a generator seeded with
    ``1000 + seed``, so every method sees the same batches and augmentations for a given seed.
    """
    check_int("seed", seed, minimum=0)
    data = data or shifted_digits(canvas=settings.canvas, n_train=settings.n_train, seed=settings.data_seed, dtype=dtype)
    x = data.x_train.to(dtype)
    net = make_encoder(x.shape[1], settings, seed=seed, dtype=dtype)
    opt = torch.optim.Adam(net.parameters(), lr=settings.lr)
    loss_fn = objective(method, settings)
    gen = torch.Generator().manual_seed(1000 + seed)
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
            ftr, fte = backbone_features(net, x), backbone_features(net, data.x_test.to(dtype))
            history["epoch"].append(epoch)
            history["linear"].append(linear_probe(ftr, data.y_train, fte, data.y_test))
            history["knn"].append(knn_probe(ftr, data.y_train, fte, data.y_test))
            history["loss"].append(total / steps)
    return dict(method=method, seed=seed, **history, net=net)


def baselines(settings: Settings, *, seeds=(0,)) -> dict:
    """Probe accuracies of raw pixels and of the randomly initialised backbone (mean over ``seeds``)."""
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


def _provenance(command: str, seconds: float) -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=DATA.parents[2]).stdout.strip()
    except OSError:
        commit = "unknown"
    return dict(command=command, commit=commit, date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                seconds=round(seconds, 1), machine=f"{platform.machine()}, {multiprocessing.cpu_count()} cores, CPU, 1 torch thread",
                python=platform.python_version(), torch=torch.__version__)


def _job(args):
    method, settings, seed = args
    torch.set_num_threads(1)
    out = train(method, settings, seed=seed)
    return [dict(method=method, seed=seed, epoch=epoch, linear=round(out["linear"][k], 6), knn=round(out["knn"][k], 6),
                 loss=round(out["loss"][k], 6)) for k, epoch in enumerate(out["epoch"])]


def run(*, quick: bool = False, seeds=None, methods=METHODS, progress: bool = True, command: str = "", workers: int = 1) -> dict:
    """The full comparison (or a small one with ``quick=True``): every method × seed, probes at several epochs.

    Returns a JSON-ready dict with ``settings``, ``rows`` (one per method, seed and evaluation epoch),
    ``baselines`` and ``provenance``.
    """
    for m in methods:
        check_choice("methods", m, METHODS)
    settings = Settings(epochs=4, eval_epochs=(2, 4)) if quick else Settings()
    seeds = tuple(seeds if seeds is not None else ((0,) if quick else (0, 1, 2)))
    workers = check_int("workers", workers, minimum=1, maximum=64)
    start = time.perf_counter()
    jobs = [(method, settings, seed) for method in methods for seed in seeds]
    rows = []
    with tqdm(total=len(jobs), disable=not progress, desc="new losses (method × seed)") as bar:
        if workers == 1:
            results = map(_job, jobs)
        else:
            from concurrent.futures import ProcessPoolExecutor

            pool = ProcessPoolExecutor(max_workers=workers)
            results = pool.map(_job, jobs)
        for part in results:
            rows.extend(part)
            bar.update(1)
        if workers > 1:
            pool.shutdown()
    base = baselines(settings, seeds=seeds)
    prov = _provenance(command or f"python -m clbook.experiments.new_losses{' --quick' if quick else ''}",
                       time.perf_counter() - start)
    return dict(experiment="new_losses", settings={**asdict(settings), "seeds": list(seeds), "methods": list(methods),
                                                    "optimizer": "Adam", "augmentation": "shift ±3 px, contrast ×U(0.6, 1.4), noise σ=0.2",
                                                    "probes": "logistic regression C=0.1 on standardised backbone features; 5-NN cosine"},
                rows=rows, baselines=base, provenance=prov)


def load(name: str = "full") -> dict:
    """A committed result from ``clbook/results/new_losses/<name>.json`` (``full`` or ``quick``)."""
    check_choice("name", name, ("full", "quick"))
    return results.load("new_losses", name)


def summary(rows: list[dict], *, value: str = "linear") -> dict:
    """Mean and standard deviation (over seeds, ddof = 1 when there are ≥ 2 seeds) per ``(method, epoch)``."""
    check_choice("value", value, ("linear", "knn", "loss"))
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        groups.setdefault((row["method"], row["epoch"]), []).append(float(row[value]))
    return {key: (float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else 0.0, len(v)) for key, v in groups.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clbook.experiments.new_losses", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small version (seconds), written as quick.json")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 3, quick 1)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--workers", type=int, default=1, help="parallel processes, one (method, seed) each (default 1)")
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    check_positive("threads", args.threads)
    torch.set_num_threads(args.threads)
    command = "python -m clbook.experiments.new_losses " + " ".join(argv if argv is not None else sys.argv[1:])
    data = run(quick=args.quick, seeds=None if args.seeds is None else range(args.seeds), command=command.strip(),
               workers=args.workers)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{'quick' if args.quick else 'full'}.json"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False))
    print(f"wrote {path} ({data['provenance']['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
