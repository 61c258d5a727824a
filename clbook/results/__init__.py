"""Stored experiment results: where they are read from, where new ones are written, and their provenance.

The results of the heavy experiments (:mod:`clbook.experiments`) that the chapters show ship with the package,
as data files ``clbook/results/<experiment>/<name>.json``, and are read with :func:`load` through
:mod:`importlib.resources`, so a chapter works the same from a checkout, a wheel or a Colab install.

A rerun writes to a directory the user chooses (``--out`` of every command line). The default,
:func:`user_dir`, is the user's data directory (``CLBOOK_RESULTS`` when set, else ``platformdirs``'
``user_data_path("clbook") / "results"``), never the installed package. To refresh the stored results of the
book, a maintainer runs an experiment from a checkout with ``--out clbook/results/<experiment>``.

Every result records :func:`provenance`: the command, the code it ran (the git commit of a checkout, with
``-dirty`` when it had uncommitted changes, or the installed version), the date, the seconds and one description
of the machine. Files are written with :func:`write_json`, atomically.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

from .._validate import check_choice

__all__ = ["EXPERIMENTS", "load", "exists", "names", "user_dir", "write_json", "read_json", "provenance", "code_version", "machine",
           "job_provenance", "library_versions"]

EXPERIMENTS = ("hierarchical", "landscape", "new_losses", "wide")
_PACKAGE = Path(__file__).resolve().parent


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name or any(c in name for c in "/\\") or name.startswith("."):
        raise ValueError(f"name must be a plain file name without a folder, e.g. 'table2-independent'; got name = {name!r}.")
    return name


def names(experiment: str) -> list[str]:
    """The stored result names of one experiment (file names without ``.json``), sorted."""
    check_choice("experiment", experiment, EXPERIMENTS)
    folder = resources.files(__name__) / experiment
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def exists(experiment: str, name: str) -> bool:
    """Whether the package ships the result ``<experiment>/<name>.json``."""
    check_choice("experiment", experiment, EXPERIMENTS)
    return (resources.files(__name__) / experiment / f"{_check_name(name)}.json").is_file()


def load(experiment: str, name: str, *, directory: str | os.PathLike | None = None) -> dict:
    """A stored result: ``<experiment>/<name>.json`` from the package, or ``<directory>/<name>.json`` when given.

    Parameters
    ----------
    experiment : str
        One of :data:`EXPERIMENTS`.
    name : str
        The result's name, e.g. ``"table2-independent"``; :func:`names` lists them.
    directory : path, optional
        Read a result of your own run (the ``--out`` of a command line) instead of the shipped one.
    """
    check_choice("experiment", experiment, EXPERIMENTS)
    name = _check_name(name)
    if directory is not None:
        return read_json(Path(directory) / f"{name}.json")
    source = resources.files(__name__) / experiment / f"{name}.json"
    if not source.is_file():
        raise FileNotFoundError(
            f"clbook ships no result {experiment}/{name}.json; stored results: {', '.join(names(experiment)) or 'none'}. "
            f"Run `python -m clbook.experiments.{experiment}` to compute it."
        )
    return json.loads(source.read_text(encoding="utf-8"))


def read_json(path: str | os.PathLike) -> dict:
    """Read a result file, with a clear error when it is missing or not JSON."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no result file at {path}.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not a valid JSON result file ({exc}).") from exc


def user_dir(experiment: str | None = None) -> Path:
    """Where reruns write by default: ``$CLBOOK_RESULTS`` or the user data directory, never ``site-packages``."""
    root = os.environ.get("CLBOOK_RESULTS")
    if root:
        base = Path(root).expanduser()
    else:
        import platformdirs

        base = platformdirs.user_data_path("clbook") / "results"
    if experiment is not None:
        check_choice("experiment", experiment, EXPERIMENTS)
        base = base / experiment
    return base


def write_json(path: str | os.PathLike, data: dict) -> Path:
    """Write ``data`` as JSON atomically: a temporary file in the same folder, then :func:`os.replace`.

    A reader (or an interrupted run) never sees a half-written file. The mode is 0666 less the umask (0644 usually).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, ensure_ascii=False)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # a result file is readable like any other (mkstemp makes it 0600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def code_version() -> str:
    """The code that ran: ``git <commit>[-dirty]`` in a checkout, else ``clbook <version> (installed)``."""
    from .. import __version__

    checkout = _PACKAGE.parents[1]
    if (checkout / ".git").exists():
        try:
            commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                                    cwd=checkout, timeout=10).stdout.strip()
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "clbook"],
                                   capture_output=True, text=True, check=True, cwd=checkout, timeout=10).stdout.strip()
            return f"git {commit}{'-dirty' if dirty else ''}"
        except (OSError, subprocess.SubprocessError):
            pass
    return f"clbook {__version__} (installed)"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(device: str | None = None) -> str:
    """One description of the machine, the same in every result file."""
    import torch

    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # pragma: no cover - older torch
        capability = "unknown"
    dev = device or ("cuda: " + torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu")
    return (f"{_cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}, "
            f"python {platform.python_version()}, torch {torch.__version__} (CPU capability {capability}), device {dev}")


_JOB_PROVENANCE: dict | None = None


def library_versions() -> dict:
    """Versions of python and of the libraries a job's numbers depend on (those installed; others are left out)."""
    from importlib import metadata

    from .. import __version__

    found = {"python": platform.python_version(), "clbook": __version__}
    for name in ("torch", "numpy", "scipy", "scikit-learn", "joblib", "dask", "distributed"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def job_provenance() -> dict:
    """What one job records about the process that ran it: code version, machine and library versions.

    ``{"code": code_version(), "machine": machine(), "libraries": library_versions()}``, computed once per process
    (a worker of a Dask cluster records its own).
    """
    global _JOB_PROVENANCE
    if _JOB_PROVENANCE is None:
        _JOB_PROVENANCE = dict(code=code_version(), machine=machine(), libraries=library_versions())
    return dict(_JOB_PROVENANCE)


def provenance(command: str, seconds: float, **extra) -> dict:
    """The provenance every stored result carries: command, code, date, seconds, machine (and ``extra``)."""
    return dict(command=str(command), code=code_version(), date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                seconds=round(float(seconds), 1), machine=machine(), **extra)
