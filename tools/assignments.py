"""Graded assignments: build them with otter-grader and grade notebooks locally.

The master notebooks live in ``book/assignments/`` (otter-grader's notebook format: the solution,
the public tests and the hidden tests of each question, in one notebook). ``otter assign`` turns a
master into a student notebook (solutions removed, public tests only) and an autograder (all tests,
as a zip that Gradescope or ``otter run`` reads). Used by ``make assignments`` and tests/assignments.

    python tools/assignments.py build            # every master -> _build/assignments/<name>/
    python tools/assignments.py grade NAME NB    # grade notebook NB with assignment NAME's autograder
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MASTERS = ROOT / "book" / "assignments"
OUT = ROOT / "_build" / "assignments"
OTTER = [sys.executable, "-m", "otter"]


def masters() -> list[Path]:
    """The master notebooks, in order."""
    return sorted(MASTERS.glob("a*.ipynb"))


def _env() -> dict:
    return {**os.environ, "CLBOOK_DEVICE": "cpu", "CLBOOK_THREADS": "1", "PYTHONHASHSEED": "0"}


def build(master: Path) -> Path:
    """Run ``otter assign`` on one master (which also runs its tests on the solution); return the output folder."""
    target = OUT / master.stem
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    run = subprocess.run([*OTTER, "assign", str(master), str(target)],
                         capture_output=True, text=True, env=_env(), cwd=master.parent)
    if run.returncode != 0:
        raise RuntimeError(f"otter assign failed on {master.name}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return target


def autograder_zip(target: Path) -> Path:
    zips = sorted((target / "autograder").glob("*-autograder_*.zip"))
    if len(zips) != 1:
        raise RuntimeError(f"expected one autograder zip in {target / 'autograder'}; found {len(zips)}")
    return zips[0]


def grade(target: Path, notebook: Path) -> dict[str, tuple[float, float]]:
    """Grade ``notebook`` with the autograder built in ``target``: ``{question: (score, max_score)}``."""
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([*OTTER, "run", "--no-logo", "-a", str(autograder_zip(target)), "-o", tmp, str(notebook)],
                             capture_output=True, text=True, env=_env())
        results = Path(tmp) / "results.json"
        if not results.exists():
            raise RuntimeError(f"otter run wrote no results for {notebook}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
        data = json.loads(results.read_text())
    scores = {}
    for test in data["tests"]:
        name = test.get("name", "")
        if name.startswith("q"):
            scores[name] = (float(test.get("score") or 0.0), float(test.get("max_score") or 0.0))
    return scores


def main(argv: list[str]) -> int:
    if argv[:1] == ["build"]:
        for master in masters():
            target = build(master)
            student = next((target / "student").glob("*.ipynb"))
            grader = autograder_zip(target).relative_to(ROOT)
            print(f"{master.name}: student notebook {student.relative_to(ROOT)}, autograder {grader}")
        return 0
    if len(argv) == 3 and argv[0] == "grade":
        target = OUT / argv[1]
        if not target.exists():
            target = build(MASTERS / f"{argv[1]}.ipynb")
        for question, (score, out_of) in grade(target, Path(argv[2]).resolve()).items():
            print(f"{question}: {score:g} / {out_of:g}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
