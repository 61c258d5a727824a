"""Graded assignments: build them with otter-grader, and grade notebooks in the environment they declare.

The master notebooks live in ``book/assignments/`` (otter-grader's notebook format: per question the prompt,
the solution, the public tests and the hidden tests). ``otter assign`` turns a master into

- ``student/``: the notebook without solutions and ``tests/`` with the public tests only (the handout; also
  zipped as ``<name>-student.zip``, which is what a student uploads to Colab),
- ``autograder/``: the solution notebook and ``<name>-autograder_<date>.zip`` (all tests, plus the
  ``environment.yml`` that Gradescope builds), which Gradescope or ``otter run`` reads.

The autograder declares its environment in ``environment.yml``: otter-grader, and the pip lines of
``book/assignments/requirements.txt`` (the same file for every master). ``clean_environment`` turns that
declaration into a fresh virtual environment under ``_build/assignment-envs/<hash>/`` with nothing else in it,
so that a test can grade there exactly what Gradescope would see.

    python tools/assignments.py build [NAME ...]          # masters -> _build/assignments/<name>/
    python tools/assignments.py grade NAME NOTEBOOK       # grade with NAME's autograder, in this environment
    python tools/assignments.py grade --clean NAME NOTEBOOK   # ... in the environment the autograder declares
    python tools/assignments.py env                        # build that environment; print its path
    python tools/assignments.py install-line               # the %pip line students run on Colab
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MASTERS = ROOT / "book" / "assignments"
OUT = ROOT / "_build" / "assignments"
ENVS = ROOT / "_build" / "assignment-envs"

# Conda packages of otter's generated environment.yml and what provides them in a pip virtual environment.
# ``pip`` comes with ``python -m venv``; ``python`` is checked against the interpreter instead.
CONDA_TO_PIP = {"pip": None, "jupyter_server": "jupyter_server"}


def masters() -> list[Path]:
    """The master notebooks, in order."""
    return sorted(MASTERS.glob("a[0-9]*.ipynb"))


def master(name: str) -> Path:
    """The master notebook called ``name`` (e.g. ``a1_pairwise_importance``)."""
    path = MASTERS / f"{name}.ipynb"
    if not path.is_file():
        known = ", ".join(m.stem for m in masters())
        raise ValueError(f"unknown assignment {name!r}: expected one of {known}")
    return path


def _run(cmd: list, *, what: str, **kwargs) -> subprocess.CompletedProcess:
    run = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    if run.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {run.returncode}):\n$ {shlex.join(map(str, cmd))}\n"
                           f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return run


def _source_key(path: Path) -> str:
    """What a build depends on: the master, the requirements it names, this tool and otter's version."""
    digest = hashlib.sha256(importlib.metadata.version("otter-grader").encode())
    for source in (path, MASTERS / "requirements.txt", Path(__file__)):
        digest.update(source.read_bytes())
    return digest.hexdigest()


def build(path: Path, *, run_tests: bool = True, reuse: bool = False) -> Path:
    """Run ``otter assign`` on one master and zip the student handout; return ``_build/assignments/<name>``.

    With ``run_tests`` (the default) otter also grades the solution in *this* environment and fails if it
    loses a point; tests/assignments skips that and grades in the declared environment instead. With ``reuse``,
    an earlier build from the same sources (master, requirements, this tool, otter's version) is kept.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no master notebook at {path}")
    target = OUT / path.stem
    stamp = target / "built-from.sha256"
    if reuse and stamp.exists() and stamp.read_text() == _source_key(path):
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "otter", "assign", path, target] + ([] if run_tests else ["--no-run-tests"])
    _run(cmd, what=f"otter assign on {path.name}", cwd=path.parent, env=isolated_env(Path(sys.prefix)))
    student = target / "student"
    with zipfile.ZipFile(target / f"{path.stem}-student.zip", "w", zipfile.ZIP_DEFLATED) as handout:
        for file in sorted(student.rglob("*")):
            if file.is_file():
                handout.write(file, file.relative_to(student))
    stamp.write_text(_source_key(path))
    return target


def autograder_zip(target: Path) -> Path:
    """The autograder zip that ``build`` wrote into ``target``."""
    zips = sorted((Path(target) / "autograder").glob("*-autograder_*.zip"))
    if len(zips) != 1:
        raise ValueError(f"expected one autograder zip in {Path(target) / 'autograder'}; found {len(zips)} (run build first)")
    return zips[0]


@dataclass(frozen=True)
class Environment:
    """What an autograder's ``environment.yml`` declares: the Python version, conda packages, pip lines."""

    python: str
    conda: tuple[str, ...]
    pip: tuple[str, ...]

    def key(self) -> str:
        """A short hash of the declaration: equal declarations share one virtual environment."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]

    def pip_args(self) -> list[str]:
        """The pip lines as command-line arguments (an option line such as ``--extra-index-url URL`` splits)."""
        return [arg for line in self.pip for arg in (shlex.split(line) if line.startswith("-") else [line])]

    def student_line(self) -> str:
        """The line a student runs in a notebook (Colab): the pip part of the declaration, verbatim."""
        quote = lambda a: a if re.fullmatch(r"[\w.=:/+<>-]+", a) else f'"{a}"'
        return "%pip install -q " + " ".join(quote(a) for a in self.pip_args())

    def conda_extras(self) -> list[str]:
        """The pip packages that stand in for the declared conda packages."""
        extras = []
        for package in self.conda:
            if package not in CONDA_TO_PIP:
                raise ValueError(f"environment.yml declares the conda package {package!r}, which tools/assignments.py "
                                 f"cannot reproduce with pip (known: {', '.join(CONDA_TO_PIP)})")
            if CONDA_TO_PIP[package]:
                extras.append(CONDA_TO_PIP[package])
        return extras


def declared_environment(zip_path: Path) -> Environment:
    """Read the ``environment.yml`` that otter generated into an autograder zip."""
    with zipfile.ZipFile(zip_path) as archive:
        if "environment.yml" not in archive.namelist():
            raise ValueError(f"{zip_path} has no environment.yml: is it an otter-grader autograder zip?")
        spec = yaml.safe_load(archive.read("environment.yml"))
    python, conda, pip = None, [], []
    for dep in spec.get("dependencies", []):
        if isinstance(dep, dict) and set(dep) == {"pip"}:
            pip.extend(dep["pip"])
        elif isinstance(dep, str) and dep.startswith("python="):
            python = dep.split("=", 1)[1]
        elif isinstance(dep, str):
            conda.append(dep)
        else:
            raise ValueError(f"{zip_path}: unexpected entry in environment.yml dependencies: {dep!r}")
    if python is None:
        raise ValueError(f"{zip_path}: environment.yml declares no python version")
    return Environment(python, tuple(conda), tuple(pip))


def clean_environment(env: Environment, *, root: Path = ENVS) -> Path:
    """A virtual environment with exactly what ``env`` declares; returns its ``python``. Cached by ``env.key()``.

    The student line is run as is (``pip install`` of the declared pip lines); then the stand-ins of the conda
    packages. ``PIP_RETRIES=1`` makes an unreachable index (download.pytorch.org on a machine that reaches
    only PyPI) cost a second instead of pip's default five retries with back-off (about 9 s per package).
    """
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if env.python != here:
        raise RuntimeError(f"the autograder declares Python {env.python}, but this interpreter is {here}: "
                           f"run with a Python {env.python} (e.g. the project's .venv)")
    venv = Path(root) / env.key()
    python = venv / "bin" / "python"
    stamp = venv / "clbook-environment.json"
    if stamp.exists() and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", venv], what="python -m venv")
    pip_env = {**isolated_env(venv), "PIP_RETRIES": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    line = env.student_line()
    _run([python, "-m", "pip", "install", *shlex.split(line.removeprefix("%pip install "))],
         what="installing the declared environment", env=pip_env)
    if env.conda_extras():
        _run([python, "-m", "pip", "install", "-q", *env.conda_extras()], what="installing the conda stand-ins", env=pip_env)
    freeze = _run([python, "-m", "pip", "freeze"], what="pip freeze", env=pip_env).stdout.split()
    stamp.write_text(json.dumps({"declared": asdict(env), "student_line": line, "installed": freeze}, indent=1))
    return python


def isolated_env(prefix: Path) -> dict:
    """Process environment for running in the virtual environment ``prefix`` and nothing else.

    Its ``bin`` goes first on PATH (ipykernel's kernelspec starts ``python`` from PATH), Jupyter's user data
    directory points inside it, and nothing from the development checkout leaks in through PYTHONPATH.
    """
    drop = {"PYTHONPATH", "PYTHONHOME", "JUPYTER_PATH", "JUPYTER_DATA_DIR", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = f"{prefix / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(prefix)
    env["JUPYTER_DATA_DIR"] = str(prefix / "share" / "jupyter")
    env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def grade(zip_path: Path, notebook: Path, *, python: Path | None = None, extra_env: dict | None = None) -> dict[str, tuple[float, float]]:
    """Grade ``notebook`` with the autograder ``zip_path``: ``{question: (score, max_score)}``.

    ``python`` is the interpreter whose otter-grader runs the autograder (and whose environment the
    notebook's kernel gets); by default this one.
    """
    zip_path, notebook = Path(zip_path), Path(notebook)
    for path, what in ((zip_path, "autograder zip"), (notebook, "notebook")):
        if not path.is_file():
            raise ValueError(f"no {what} at {path}")
    python = Path(python) if python else Path(sys.executable)
    prefix = python.parent.parent
    for attempt in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            run = subprocess.run([str(python), "-m", "otter", "run", "--no-logo", "-a", str(zip_path), "-o", tmp, str(notebook)],
                                 capture_output=True, text=True, env={**isolated_env(prefix), **(extra_env or {})}, cwd=tmp)
            results = Path(tmp) / "results.json"
            if results.exists():
                data = json.loads(results.read_text())
                break
        # otter gives the kernel nbclient's 60 s to start; on a heavily loaded machine it may need a second try.
        if attempt == 2 or "Kernel didn't respond" not in run.stderr:
            raise RuntimeError(f"otter run wrote no results for {notebook}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return {t["name"]: (float(t.get("score") or 0.0), float(t.get("max_score") or 0.0))
            for t in data["tests"] if t.get("name", "").startswith("q")}


def main(argv: list[str]) -> int:
    if argv[:1] == ["build"]:
        paths = [master(n) for n in argv[1:]] or masters()
        for path in paths:
            target = build(path)
            print(f"{path.stem}: handout {(target / f'{path.stem}-student.zip').relative_to(ROOT)}, "
                  f"autograder {autograder_zip(target).relative_to(ROOT)}")
        return 0
    if argv[:1] == ["grade"] and len(argv) in (3, 4) and (len(argv) == 3 or argv[1] == "--clean"):
        name, notebook = argv[-2], Path(argv[-1]).resolve()
        target = build(master(name), run_tests=False, reuse=True)
        zip_path = autograder_zip(target)
        python = clean_environment(declared_environment(zip_path)) if argv[1] == "--clean" else None
        for question, (score, out_of) in grade(zip_path, notebook, python=python).items():
            print(f"{question}: {score:g} / {out_of:g}")
        return 0
    if argv in (["env"], ["install-line"]):
        env = declared_environment(autograder_zip(build(masters()[0], run_tests=False, reuse=True)))
        print(clean_environment(env).parent.parent if argv == ["env"] else env.student_line())
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
