"""Measure which printed numbers of the chapters move between machines.

Runs chapters under the machine configurations that ``make notebooks`` plays (torch's CPU kernels, MKL's and
OpenBLAS's instruction sets, thread counts) and compares every text output with the stored one, number by
number. What differs is printed with the stored and the fresh text and the relative size of the change, so a
chapter can print fewer digits, state a floor, or fix the cause (book/verification_method.md, "How numbers are
printed").

    python tools/stability.py                          # every chapter, every configuration
    python tools/stability.py book/part2/ch10_*.ipynb --configs default-2 avx2-1
    python tools/stability.py --json _build/stability.json

Exit status 1 when anything differs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbtools  # noqa: E402

CONFIGS = {
    # name: environment (the machine a reader might have); the thread count is the suffix
    "native-1": {"CLBOOK_THREADS": "1"},
    "native-2": {"CLBOOK_THREADS": "2"},
    "default-2": {"CLBOOK_THREADS": "2", "ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
                  "OPENBLAS_CORETYPE": "Prescott"},
    "avx2-1": {"CLBOOK_THREADS": "1", "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
               "OPENBLAS_CORETYPE": "Haswell"},
    "default-1": {"CLBOOK_THREADS": "1", "ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
                  "OPENBLAS_CORETYPE": "Prescott"},
}
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
SANITIZE = [(re.compile(r"/tmp/ipykernel_\d+/\d+\.py"), "IPYKERNEL_CELL"), (re.compile(r"at 0x[0-9a-f]+"), "at 0xADDR")]


def texts(cell) -> list[str]:
    """The compared text of a code cell's outputs, as nbval compares them: consecutive stream outputs coalesced,
    mime types in sorted order, images and widget views left out."""
    if "nbval-ignore-output" in cell.metadata.get("tags", []) or "nbval-skip" in cell.metadata.get("tags", []):
        return []
    out = []
    previous_stream = None
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            if previous_stream == o.name and out:
                out[-1] += o.text
            else:
                out.append(o.text)
            previous_stream = o.name
            continue
        previous_stream = None
        if o.output_type in ("display_data", "execute_result"):
            for mime in sorted(o.get("data", {})):
                value = o["data"][mime]
                if mime.startswith("text/") or mime.startswith("application/papermill.record/text"):
                    out.append(value if isinstance(value, str) else "".join(value))
        elif o.output_type == "error":
            out.append(f"ERROR {o.ename}: {o.evalue}")
    text = "\n".join(out)
    for pattern, replacement in SANITIZE:
        text = pattern.sub(replacement, text)
    return [text]


def compare(stored: str, fresh: str) -> list[dict]:
    """The differences between two output texts: numbers that changed (with their relative change) or other text."""
    a, b = NUMBER.findall(stored), NUMBER.findall(fresh)
    if NUMBER.sub("#", stored) != NUMBER.sub("#", fresh) or len(a) != len(b):
        return [{"stored": stored[:400], "fresh": fresh[:400], "relative": None}]
    diffs = []
    for x, y in zip(a, b, strict=True):
        if x != y:
            fx, fy = float(x), float(y)
            rel = abs(fx - fy) / max(abs(fx), abs(fy), 1e-300)
            diffs.append({"stored": x, "fresh": y, "relative": rel})
    return diffs


def run(path: Path, config: str) -> dict:
    env = {**CONFIGS[config], "CLBOOK_DEVICE": os.environ.get("CLBOOK_DEVICE", "cpu")}
    stored = nbformat.read(path, as_version=4)
    fresh = nbformat.read(path, as_version=4)
    try:
        nbtools.execute_notebook(fresh, path.parent, env=env)
    except Exception as exc:  # noqa: BLE001 - a chapter that fails under a configuration is a finding, not a crash
        return {"chapter": str(path.relative_to(nbtools.ROOT)), "config": config,
                "cells": [{"cell": -1, "differences": [{"stored": "runs", "fresh": f"fails: {exc}"[:400], "relative": None}]}]}
    cells = []
    for k, (s, f) in enumerate(zip(stored.cells, fresh.cells, strict=True)):
        if s.cell_type != "code":
            continue
        for ts, tf in zip(texts(s), texts(f), strict=True):
            if ts != tf:
                cells.append({"cell": k, "differences": compare(ts, tf)})
    return {"chapter": str(path.relative_to(nbtools.ROOT)), "config": config, "cells": cells}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="chapters (default: every chapter in _toc.yml)")
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=["native-1", "default-2", "avx2-1"])
    parser.add_argument("--json", type=Path, help="write the full report here")
    parser.add_argument("--parallel", type=int, default=2, help="chapters run at the same time (default 2)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or nbtools.chapters()
    jobs = [(p, c) for c in args.configs for p in paths]
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        reports = list(pool.map(lambda job: run(*job), jobs))
    moving = 0
    for r in reports:
        for cell in r["cells"]:
            moving += 1
            for d in cell["differences"]:
                rel = "text" if d["relative"] is None else f"relative change {d['relative']:.1e}"
                print(f"{r['chapter']} [{r['config']}] cell {cell['cell']}: {d['stored']!r} -> {d['fresh']!r} ({rel})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(reports, indent=1))
    print(f"{len(reports)} runs ({len(paths)} chapters x {len(args.configs)} configurations): "
          f"{moving} cell outputs differ from the stored ones.")
    return 1 if moving else 0


if __name__ == "__main__":
    sys.exit(main())
