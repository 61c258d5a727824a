r"""Fig. 2 of Esser et al. (2023): nonlinear versus linear output during training, over widths and activations.

For each seed and width :math:`h`, :func:`clbook.wide.train_nets` trains the linear network and one nonlinear
network per activation (tanh, ReLU, sigmoid) from the same Haar initialisation on the contrastive loss (1) of the
half moons (scaled by 2 so that the nonlinearity matters at small width), with the paper's projected gradient
descent under :math:`W_1^\top W_1 = \mathbb I`, :math:`W_2^\top W_2 = \mathbb I`, and records the mean over anchors of
:math:`|u^\phi_t(x_i) - u^{\mathbb I}_t(x_i)|`.

``python -m clbook.experiments.wide`` writes ``clbook/results/wide/fig2.json`` (gaps ``[activation][width][seed][step]``,
with provenance); ``--quick`` runs two small widths and one seed and writes nothing unless ``--out`` is given.
Used in Chapter 12.
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import time
from pathlib import Path

import numpy as np

from .. import config, results
from ..data.views import moons_views
from ..wide import gap, train_nets

__all__ = ["run", "load", "main", "DEFAULTS", "QUICK"]

DEFAULTS = {"widths": [10, 30, 100, 300, 1000], "seeds": [0, 1, 2], "activations": ["tanh", "relu", "sigmoid"],
            "steps": 500, "every": 10, "eta": 0.05, "z": 1, "n": 200, "moon_noise": 0.05, "variance": 0.1, "scale": 2.0}
QUICK = DEFAULTS | {"widths": [10, 30], "seeds": [0], "steps": 50}
OUT = results.user_dir("wide") / "fig2.json"  # default --out of a rerun; the shipped sweep is read with load()


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(params: dict | None = None, *, quick: bool = False) -> dict:
    """Run the sweep; returns ``{"params", "provenance", "record", "gaps", "losses"}`` (JSON-serialisable)."""
    p = dict(QUICK if quick else DEFAULTS) | (params or {})
    config.setup(seed=0, device="cpu")
    start = time.perf_counter()
    x, xp, xn = (p["scale"] * a for a in moons_views(p["n"], noise=p["moon_noise"], variance=p["variance"], seed=0).numpy())
    gaps = {a: {str(h): [] for h in p["widths"]} for a in p["activations"]}
    losses = {a: {str(h): [] for h in p["widths"]} for a in ["linear", *p["activations"]]}
    record = None
    for seed in p["seeds"]:
        for h in p["widths"]:
            r = train_nets(x, xp, xn, h=h, z=p["z"], activations=p["activations"], eta=p["eta"], steps=p["steps"],
                           every=p["every"], generator=config.generator(1000 * seed + h))
            record = r["record"].tolist()
            for a in p["activations"]:
                gaps[a][str(h)].append(np.round(gap(r[a][0], r["linear"][0]), 10).tolist())
            for a in ["linear", *p["activations"]]:
                losses[a][str(h)].append(np.round(r[a][1], 10).tolist())
    provenance = {"commit": _commit(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "seconds": round(time.perf_counter() - start, 1), "command": "python -m clbook.experiments.wide"}
    return {"params": p, "provenance": provenance, "record": record, "gaps": gaps, "losses": losses}


def load(path: str | Path | None = None) -> dict:
    """Read a sweep: the one shipped with clbook (``clbook/results/wide/fig2.json``), or the file ``path`` of a rerun."""
    if path is None:
        return results.load("wide", "fig2")
    return results.read_json(path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two widths, one seed, 50 steps")
    parser.add_argument("--out", type=Path, default=None, help=f"output JSON (default {OUT} for a full run)")
    args = parser.parse_args(argv)
    result = run(quick=args.quick)
    out = args.out if args.out is not None else (None if args.quick else OUT)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1), encoding="utf-8")
        print(f"wrote {out} ({result['provenance']['seconds']} s)")
    else:
        print(json.dumps({a: {h: v[0][-1] for h, v in g.items()} for a, g in result["gaps"].items()}))


if __name__ == "__main__":
    main()
