r"""One runner for every heavy experiment: jobs as data, results stored atomically, resume, provenance, progress.

An experiment describes its work as a list of :class:`Job` (a unique key, the keyword arguments of a top-level
function, a relative cost) and hands it to :func:`run_jobs`, which

* runs the jobs, the most expensive first, through :mod:`joblib`: local processes by default
  (``backend="local"``, loky), or the workers of a Dask cluster (``backend="dask"``, through
  :mod:`dask.distributed`; ``scheduler`` is the address of a running scheduler, e.g. one started by
  ``dask-jobqueue`` on Slurm/PBS/SGE, or ``None`` for a :class:`~dask.distributed.LocalCluster` on this machine);
* writes ``<out>/<name>.partial.json`` atomically after every finished job, so an interrupted run keeps its work;
* on the next call with the same settings, skips the jobs that the partial (or complete) result already holds
  (``resume=True``, the default; ``--fresh`` on the command line starts over);
* writes ``<out>/<name>.json`` only when every job has finished, and only then removes the partial file: a
  complete result is never replaced by a partial one;
* records one provenance (:func:`clbook.results.provenance`), and for every job the provenance of the process that
  ran it (code version, machine, library versions, computed in that worker; on Dask also the worker's address).

Faults (``backend="dask"``): each result is gathered as soon as its job finishes and its future is released at
once, so a worker that dies later holds nothing the run still needs (no finished job is recomputed); a run whose
cluster has had no worker for ``worker_timeout`` seconds (``--worker-timeout``, default :data:`WORKER_TIMEOUT`)
stops with a one-line :class:`WorkersLost` (a ``TimeoutError``) naming that timeout, its partial file kept for a
resume. Local worker processes (loky's, and those of a ``LocalCluster`` started here) end when the process that
started them dies, even by SIGKILL: a watchdog thread in each worker polls ``os.getppid()`` once a second and
calls ``os._exit`` when it changes (portable, no dependency; ``prctl(PR_SET_PDEATHSIG)`` is Linux-only and fires
when the *thread* that spawned the worker ends, which loky's and Dask's spawning threads may do while the run is
alive). Dask's worker processes also end through dask.distributed's own parent-alive pipe; the watchdog (preloaded
into a ``LocalCluster``'s workers, :func:`dask_setup`) is a second guard.

The provenance records the cluster's real worker count (``workers``, from ``client.scheduler_info()`` when the
run starts), the ``--workers`` asked of a ``LocalCluster`` (``workers_requested``), how many distinct workers ran
this run's jobs (``workers_used``), and ``job_codes`` wherever a job's code version differs from this process's.

The result file is ``{"experiment", "name", "complete", "settings", "jobs": {key: {"params", "result",
"seconds"}}, "provenance"}``.

Running on a cluster::

    # on the cluster: start a dask scheduler (or use a dask-jobqueue
    # SLURMCluster(...).scheduler_address), then its workers; then
    python -m clbook.experiments.landscape table2-independent \
        --backend dask --scheduler tcp://head-node:8786 --out results/

Each worker needs clbook installed (``pip install clbook``, the same version) and one thread per job
(:func:`run_jobs` sets ``torch.set_num_threads(threads)`` inside each job). Used by every module of
:mod:`clbook.experiments`.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import results
from .._validate import check_choice, check_int

__all__ = ["check_out", "Job", "run_jobs", "add_arguments", "int_list", "float_list", "choice_list", "positive_int", "BACKENDS",
           "ArgumentParser", "SCHEDULER_TIMEOUT", "WORKER_TIMEOUT", "WorkersLost"]

BACKENDS = ("local", "dask")


@dataclass(frozen=True)
class Job:
    """One unit of work: ``function(**params)``, stored under ``key``; ``cost`` orders the jobs (largest first)."""

    key: str
    params: dict = field(default_factory=dict)
    cost: float = 1.0

    def __post_init__(self):
        if not isinstance(self.key, str) or not self.key:
            raise ValueError(f"Job.key must be a non-empty string; got key = {self.key!r}.")
        if not isinstance(self.params, dict):
            raise TypeError(f"Job.params must be a dict of keyword arguments; got {type(self.params).__name__}.")
        try:
            json.dumps(self.params)
        except TypeError as exc:
            raise TypeError(f"Job {self.key!r}: params must be JSON-serialisable (numbers, strings, lists, dicts); {exc}.") from exc
        if not (isinstance(self.cost, (int, float)) and math.isfinite(self.cost) and self.cost >= 0):
            raise ValueError(f"Job {self.key!r}: cost must be a finite number >= 0; got cost = {self.cost!r}.")


def _call(function: Callable, key: str, params: dict, threads: int):
    """Run one job with ``threads`` torch/BLAS threads (restored afterwards); return (key, result, seconds, provenance).

    The provenance is that of the process that ran the job (:func:`clbook.results.job_provenance`): a worker of
    another machine or another checkout records its own code, machine and library versions.
    """
    import torch
    from threadpoolctl import threadpool_limits

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        start = time.perf_counter()
        with threadpool_limits(limits=threads):
            result = function(**params)
        seconds = time.perf_counter() - start
    finally:
        torch.set_num_threads(previous)
    return key, result, seconds, results.job_provenance()


def _call_dask(function: Callable, key: str, params: dict, threads: int):
    """:func:`_call` on a Dask worker; the job's provenance also names the worker (its address)."""
    from dask.distributed import get_worker

    key, result, seconds, prov = _call(function, key, params, threads)
    return key, result, seconds, dict(prov, worker=get_worker().address)


PARENT_POLL = 1.0
"""Seconds between two looks of a local worker's watchdog at its parent process."""

_WATCHDOG: threading.Thread | None = None


def _exit_with_parent(parent: int, interval: float = PARENT_POLL) -> None:
    """Make this worker process end (``os._exit``) once ``parent`` (the process that ran :func:`run_jobs`) is gone.

    A daemon thread, started once per process, polls ``os.getppid()`` every ``interval`` seconds: a worker whose
    parent dies is re-parented (to init or a subreaper), so its parent pid changes. A worker that is not a direct
    child of ``parent`` (another start method) watches its own parent and also whether ``parent`` still exists.
    Nothing happens in ``parent`` itself (``workers=1`` runs the jobs in-process).
    """
    global _WATCHDOG
    if _WATCHDOG is not None or os.getpid() == parent:
        return
    first = os.getppid()

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:  # exists, owned by someone else
            return True
        return True

    def orphaned() -> bool:
        return os.getppid() != first or (first != parent and not alive(parent))

    if orphaned() or (first != parent and not alive(parent)):
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(interval)
            if orphaned():
                os._exit(1)

    _WATCHDOG = threading.Thread(target=watch, name="clbook-parent-watchdog", daemon=True)
    _WATCHDOG.start()


def dask_setup(worker) -> None:  # noqa: ARG001 - the signature Dask's preload calls
    """Dask preload hook (``--preload clbook.experiments.runner``): the worker ends when its parent process dies.

    :func:`run_jobs` preloads it into the workers of the ``LocalCluster`` it starts (their parent is this process:
    the nannies live in it); a worker of a remote cluster does not need it (its life is its scheduler's business).
    """
    _exit_with_parent(os.getppid())

def _check_function(function, backend: str, workers: int):
    if not callable(function):
        raise TypeError(f"function must be callable; got {type(function).__name__}.")
    if (workers > 1 or backend == "dask") and "<locals>" in getattr(function, "__qualname__", ""):
        raise ValueError("function must be defined at the top level of a module so worker processes can import it; "
                         f"got {function.__qualname__}.")


def _check_jobs(jobs) -> list[Job]:
    jobs = list(jobs)
    if not jobs:
        raise ValueError("the job list is empty: nothing to run (check the models, seeds or sparsities you asked for).")
    for job in jobs:
        if not isinstance(job, Job):
            raise TypeError(f"jobs must be clbook.experiments.runner.Job instances; got {type(job).__name__}.")
    keys = [job.key for job in jobs]
    duplicated = sorted({k for k in keys if keys.count(k) > 1})
    if duplicated:
        raise ValueError(f"job keys must be unique; repeated: {', '.join(duplicated)}.")
    return jobs


def _previous(out: Path, name: str, settings: dict, jobs: list[Job], *, resume: bool, discard_complete: bool) -> tuple[dict, dict | None]:
    """Finished jobs of an earlier run with the same settings (from the partial file, else the complete one).

    Returns ``(jobs, source)``: the reusable jobs, each with its own provenance (a job written by older code without
    one gets the file-level provenance of the file it came from, marked ``inherited``), and the file they came from.
    Refuses, before anything is computed, to let this run replace a complete result that holds jobs this run
    does not have (``--fresh`` included), or one computed with other settings, unless ``discard_complete``.
    """
    wanted = {job.key: job.params for job in jobs}
    final = out / f"{name}.json"
    if final.is_file() and not discard_complete:
        old = results.read_json(final)
        if old.get("complete", False):
            lost = sorted(set(old.get("jobs", {})) - set(wanted))
            if lost:
                raise ValueError(f"{final} is a complete result of {len(old.get('jobs', {}))} jobs; this run has {len(wanted)} "
                                 f"and would replace it without {len(lost)} of them ({', '.join(lost[:3])}"
                                 f"{', ...' if len(lost) > 3 else ''}). Choose another --out (or name), or pass "
                                 "--discard-complete (discard_complete=True) to replace it.")
            if old.get("settings") != settings:
                raise ValueError(f"{final} is a complete result computed with other settings; choose another --out (or name) "
                                 "to keep it, or pass --discard-complete (discard_complete=True) to replace it.")
    if not resume:
        return {}, None
    for path in (out / f"{name}.partial.json", final):
        if not path.is_file():
            continue
        old = results.read_json(path)
        if old.get("settings") != settings:
            raise ValueError(f"{path} was computed with other settings; choose another --out (or name), or start over with "
                             "--fresh (resume=False).")
        inherited = {k: old.get("provenance", {}).get(k) for k in ("code", "machine")}
        done = {}
        for k, v in old.get("jobs", {}).items():
            if k in wanted and v.get("params") == wanted[k]:
                done[k] = v if "provenance" in v else v | {"provenance": inherited | {"inherited": f"from the file {path.name}"}}
        return done, old
    return {}, None


def _earlier_wall(source: dict | None) -> float:
    if source is not None and not source.get("complete", False):
        return float(source.get("provenance", {}).get("seconds", 0.0))
    return 0.0


def check_out(out) -> Path:
    """``out`` as a folder that exists (created) and can be written, or a ValueError naming --out."""
    import os
    import tempfile

    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is an existing file, not a folder; choose a folder.")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out {out} cannot be created ({exc.strerror or exc}); choose a folder you can write.") from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".clbook-write-test.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"--out {out} is not writable ({exc.strerror or exc}); choose a folder you can write.") from None
    return out


SCHEDULER_TIMEOUT = 5.0
"""Seconds :func:`run_jobs` waits for a Dask scheduler to answer before it refuses to start (nothing is computed)."""

WORKER_TIMEOUT = 60.0
"""Seconds a Dask run waits with no worker in its cluster before it stops (:class:`WorkersLost`)."""

_POLL = 1.0
"""Seconds a Dask run waits for a finished job before it looks at the cluster's workers again."""


class WorkersLost(TimeoutError):
    """A Dask run's cluster has had no worker for ``worker_timeout`` seconds; the partial result is kept."""


def _check_scheduler(scheduler: str, timeout: float = SCHEDULER_TIMEOUT) -> None:
    """A ValueError naming --scheduler unless a TCP connection to its address opens within ``timeout`` seconds."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(scheduler if "://" in scheduler else f"tcp://{scheduler}")
    try:
        host, port = parts.hostname, parts.port or 8786
    except ValueError:
        host = port = None
    if not host:
        raise ValueError(f"--scheduler must be an address such as tcp://host:8786; got {scheduler!r}.")
    # the name lookup too is bounded by ``timeout`` (getaddrinfo has no timeout of its own: an unknown host could
    # keep the command silent for half a minute); a daemon thread, so that a lookup left running never blocks the exit
    found: dict = {}

    def lookup() -> None:
        try:
            found["addresses"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            found["error"] = exc

    began = time.monotonic()
    thread = threading.Thread(target=lookup, name="clbook-scheduler-lookup", daemon=True)
    thread.start()
    thread.join(timeout)
    if "addresses" not in found:
        reason = found["error"].strerror or found["error"] if "error" in found else "the name lookup did not finish"
        raise ValueError(f"--scheduler {scheduler}: no Dask scheduler answered at {host}:{port} within {timeout:g} s "
                         f"({reason}); start it, or check the address.") from None
    try:
        family, kind, proto, _, address = found["addresses"][0]
        with socket.socket(family, kind, proto) as sock:
            sock.settimeout(max(timeout - (time.monotonic() - began), 0.1))
            sock.connect(address)
    except OSError as exc:
        raise ValueError(f"--scheduler {scheduler}: no Dask scheduler answered at {host}:{port} within {timeout:g} s "
                         f"({exc.strerror or exc}); start it, or check the address.") from None


def _cluster_workers(client) -> int:
    """How many workers the client's cluster has now (0 when the scheduler does not answer)."""
    try:
        try:
            info = client.scheduler_info(n_workers=-1)
        except TypeError:  # pragma: no cover - dask.distributed before n_workers
            info = client.scheduler_info()
        return len(info.get("workers", {}))
    except Exception:  # noqa: BLE001 - a scheduler that does not answer has no usable worker
        return 0


def _executor(backend: str, scheduler: str | None, workers: int, worker_timeout: float = WORKER_TIMEOUT):
    """A context manager yielding ``(execute, info)``.

    ``execute`` maps calls to an iterator of finished (key, result, seconds, provenance); ``info`` holds what the
    provenance records of the workers.
    """
    if backend == "dask":
        return _dask_executor(scheduler, workers, worker_timeout)
    return _local_executor(workers)


@contextlib.contextmanager
def _local_executor(workers: int):
    if workers == 1:
        yield (lambda calls: (_call(*c) for c in calls)), dict(workers=1)
        return
    import joblib
    from joblib.parallel import LokyBackend

    # each loky worker watches this process (PARENT_POLL) and ends with it; other initializer arguments make
    # joblib start fresh workers rather than reuse ones started without the watchdog
    loky = LokyBackend(initializer=_exit_with_parent, initargs=(os.getpid(),))
    parallel = joblib.Parallel(n_jobs=workers, backend=loky, return_as="generator_unordered")
    yield (lambda calls: parallel(joblib.delayed(_call)(*c) for c in calls)), dict(workers=workers)


@contextlib.contextmanager
def _dask_executor(scheduler: str | None, workers: int, worker_timeout: float):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("backend='dask' needs dask.distributed: pip install 'dask[distributed]'.") from exc
    with contextlib.ExitStack() as stack:
        if scheduler:
            try:
                client = stack.enter_context(Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT:g}s"))
            except Exception as exc:  # noqa: BLE001 - whatever answered at that address is not a Dask scheduler
                message = " ".join(str(exc).split())[:200]
                raise ValueError(f"--scheduler {scheduler}: something answered there, but no Dask scheduler "
                                 f"({type(exc).__name__}: {message}); check the address.") from None
            info = dict(workers=_cluster_workers(client))
        else:
            # 127.0.0.1 only; every worker runs the preload hook dask_setup (it ends with this process)
            cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                       host="127.0.0.1", dashboard_address=None, preload=[__name__]))
            client = stack.enter_context(Client(cluster))
            with contextlib.suppress(Exception):
                client.wait_for_workers(workers, timeout=worker_timeout)
            info = dict(workers=_cluster_workers(client), workers_requested=workers)
        yield (lambda calls: _dask_results(client, calls, worker_timeout)), info


def _gather(pending: dict, finished) -> list:
    """The results of ``finished`` futures, each released at once.

    a worker that dies later holds nothing this run needs (so the scheduler never computes a finished job again).
    """
    values = []
    for future in finished:
        del pending[future.key]
        try:
            values.append(future.result())
        finally:
            future.release()
    return values


def _dask_results(client, calls, worker_timeout: float):
    """Submit ``calls`` and yield their results as they finish.

    Raise :class:`WorkersLost` after ``worker_timeout``
    seconds with no worker in the cluster.
    """
    from dask.distributed import wait

    pending = {}
    for c in calls:
        future = client.submit(_call_dask, *c, pure=False)
        pending[future.key] = future
    future = None
    empty_since = None
    while pending:
        try:
            finished = wait(list(pending.values()), timeout=_POLL, return_when="FIRST_COMPLETED").done
        except TimeoutError:
            finished = ()
        values = _gather(pending, finished)
        finished = None
        if values:
            empty_since = None
            yield from values
        elif _cluster_workers(client):
            empty_since = None
        elif empty_since is None:
            empty_since = time.monotonic()
        elif time.monotonic() - empty_since >= worker_timeout:
            raise WorkersLost(f"the Dask cluster has had no worker for {worker_timeout:g} s "
                              "(worker_timeout, --worker-timeout)")


def _check_run(function, jobs, *, out, name, settings, workers, backend, scheduler, threads, worker_timeout):
    """:func:`run_jobs`' arguments checked, before any job: ``(backend, workers, threads, jobs, settings, out)``."""
    check_choice("backend", backend, BACKENDS)
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise ValueError(f"scheduler must be the address of a Dask scheduler, e.g. 'tcp://host:8786'; got {scheduler!r}.")
        backend = "dask"
    workers = check_int("workers", workers, 1, 512)
    if isinstance(worker_timeout, bool) or not isinstance(worker_timeout, (int, float)) or not (
            math.isfinite(worker_timeout) and worker_timeout > 0):
        raise ValueError(f"worker_timeout must be a number of seconds > 0; got worker_timeout = {worker_timeout!r}.")
    threads = check_int("threads", threads, 1, 256)
    _check_function(function, backend, workers)
    jobs = _check_jobs(jobs)
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"name must be a plain file name; got name = {name!r}.")
    settings = dict(settings or {})
    try:
        json.dumps(settings)
    except TypeError as exc:
        raise TypeError(f"settings must be JSON-serialisable; {exc}.") from exc
    out = check_out(out)
    if scheduler is not None:
        _check_scheduler(scheduler, SCHEDULER_TIMEOUT)
    return backend, workers, threads, jobs, settings, out


def run_jobs(function: Callable, jobs, *, out, name: str, command: str, settings: dict | None = None, workers: int = 2,
             backend: str = "local", scheduler: str | None = None, resume: bool = True, progress: bool = True,
             threads: int = 1, experiment: str | None = None, discard_complete: bool = False,
             worker_timeout: float = WORKER_TIMEOUT, check_only: bool = False) -> dict | None:
    """Run ``function(**job.params)`` for every job and store the results; return the result dict.

    Parameters
    ----------
    function : callable
        A top-level function (importable by worker processes) returning a JSON-serialisable value.
    jobs : list of Job
        Non-empty, unique keys.
    out : path
        The folder of ``<name>.json`` (complete) and ``<name>.partial.json`` (while running).
    name : str
        The result's name.
    command : str
        The command line, for the provenance.
    settings : dict, optional
        Everything that the jobs share; a resumed run must have the same settings.
    workers : int
        Local processes (``backend="local"``), or workers of the ``LocalCluster`` (``backend="dask"`` without
        ``scheduler``).
    backend : {"local", "dask"}
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); implies ``backend="dask"``.
    resume : bool
        Skip the jobs an earlier run with the same settings finished.
    threads : int
        torch/BLAS threads inside each job.
    discard_complete : bool
        Allow this run to replace a complete ``<name>.json`` that holds jobs it does not have, or that was computed
        with other settings (``--discard-complete``); without it that is a ValueError, ``resume=False`` included.
    worker_timeout : float
        Seconds a Dask run goes on with no worker in its cluster (all of them died, or none came) before it stops
        with a one-line :class:`WorkersLost` naming this timeout (``--worker-timeout``); the partial file keeps
        the finished jobs, and the same call resumes from it.
    check_only : bool
        Make every check this call makes before its first job (the arguments, ``out``, the scheduler, an earlier
        result it would resume or refuse to replace) and return None, computing and writing nothing: a caller
        that runs several results one after the other checks them all first.

    Notes
    -----
    Before the first job, ``out`` must be a folder that exists or can be created and is writable, and a
    ``scheduler`` must answer within :data:`SCHEDULER_TIMEOUT` seconds; otherwise a ValueError says which. A run
    that has nothing to compute (every job is in the complete result) writes nothing: the file keeps its bytes.
    Each job records ``provenance`` (code version, machine, library versions of the process that ran it); jobs
    resumed from a file written without it inherit that file's provenance. Files are written with mode 0644
    (less the umask).
    """
    backend, workers, threads, jobs, settings, out = _check_run(function, jobs, out=out, name=name, settings=settings,
                                                                workers=workers, backend=backend, scheduler=scheduler,
                                                                threads=threads, worker_timeout=worker_timeout)
    done, source = _previous(out, name, settings, jobs, resume=resume, discard_complete=bool(discard_complete))
    if check_only:
        return None
    todo = sorted((job for job in jobs if job.key not in done), key=lambda job: -job.cost)
    partial, final = out / f"{name}.partial.json", out / f"{name}.json"
    if not todo and source is not None and source.get("complete", False) and set(source.get("jobs", {})) == {j.key for j in jobs}:
        # nothing to compute: the file stays as it is, byte for byte; the returned copy says what this call reused
        return dict(source, provenance=dict(source.get("provenance", {}), resumed_jobs=len(done)))
    start = time.perf_counter()
    earlier_wall = _earlier_wall(source) if done else 0.0
    prov = results.provenance(command, 0.0, backend=backend if scheduler is None else f"dask at {scheduler}", workers=workers,
                              threads_per_job=threads, resumed_jobs=len(done))
    data = dict(experiment=experiment or name, name=name, complete=False, settings=settings, jobs=dict(done), provenance=prov)
    used: set[str] = set()  # the Dask workers that ran this run's jobs

    def write(path: Path) -> None:
        ordered = {job.key: data["jobs"][job.key] for job in jobs if job.key in data["jobs"]}
        codes = sorted({str(v.get("provenance", {}).get("code")) for v in ordered.values() if v.get("provenance")})
        # the jobs' own code versions, wherever one differs from this process's (a worker with other code)
        extra = dict(job_codes=codes) if codes and codes != [str(prov["code"])] else {}
        if used:
            extra["workers_used"] = len(used)
        data.update(jobs=ordered, provenance=prov | dict(seconds=round(earlier_wall + time.perf_counter() - start, 1),
                                                          job_seconds=round(sum(v.get("seconds") or 0.0 for v in ordered.values()), 1))
                    | extra)
        results.write_json(path, data)

    if todo:
        from tqdm.auto import tqdm

        calls = [(function, job.key, job.params, threads) for job in todo]
        params = {job.key: job.params for job in todo}
        try:
            with _executor(backend, scheduler, workers, worker_timeout) as (execute, info), \
                    tqdm(total=len(jobs), initial=len(done), disable=not progress, desc=name, unit="job") as bar:
                prov.update(info)  # the cluster's real worker count, not --workers
                for key, result, seconds, job_prov in execute(calls):
                    data["jobs"][key] = dict(params=params[key], result=result, seconds=round(seconds, 2), provenance=job_prov)
                    if "worker" in job_prov:
                        used.add(job_prov["worker"])
                    write(partial)
                    bar.update(1)
        except WorkersLost as exc:
            kept = len(data["jobs"])
            where = f"kept in {partial}" if partial.is_file() else "none stored"
            raise WorkersLost(f"{name}: {exc}; {kept} of {len(jobs)} jobs finished ({where}); run the same command again "
                              "to resume.") from None
    data["complete"] = True
    write(final)
    partial.unlink(missing_ok=True)
    return data


# ------------------------------------------------------------------------------------------- command lines


def positive_int(text: str) -> int:
    """Argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    """Argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def _list(text: str, convert, what: str):
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}, e.g. '1,2,3'; got {text!r}")
    try:
        return [convert(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}; got {text!r}") from None


def int_list(text: str) -> list[int]:
    """Argparse type: ``"1,2,3"`` -> ``[1, 2, 3]`` (non-negative integers)."""
    values = _list(text, int, "integers")
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected non-negative integers; got {text!r}")
    return values


def float_list(text: str) -> list[float]:
    """Argparse type: ``"0.1,0.2"`` -> ``[0.1, 0.2]`` (finite numbers)."""
    values = _list(text, float, "numbers")
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected finite numbers; got {text!r}")
    return values


def choice_list(choices) -> Callable[[str], list[str]]:
    """Argparse type factory: a comma-separated list whose items are among ``choices``."""
    choices = tuple(choices)

    def parse(text: str) -> list[str]:
        values = _list(text, str, "names")
        bad = [v for v in values if v not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(map(repr, bad))}; choose from {', '.join(choices)}")
        return values

    parse.__name__ = "list"
    return parse


class _DefaultInt(int):
    """A default of :func:`add_arguments`, told apart from the same number given on the command line."""


class _DefaultFloat(float):
    """A default of :func:`add_arguments`, told apart from the same number given on the command line."""


class _DefaultStr(str):
    """A default of :func:`add_arguments`, told apart from the same name given on the command line."""


_DEFAULTS = (_DefaultInt, _DefaultFloat, _DefaultStr)
_SHARED = ("workers", "backend", "worker_timeout")


def _out_folder(text: str) -> Path:
    """Argparse type of --out: a non-empty path."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty path")
    return Path(text)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the experiments' conventions.

    an error is one line on stderr (``prog: error: ...``) and exit status 2; ``--help`` keeps the epilog's line breaks
    (the valid names and an example). The options of :func:`add_arguments` are checked together: ``--worker-timeout``
    applies to Dask runs only, ``--scheduler`` contradicts ``--backend local`` and makes ``--workers`` (the processes
    of a cluster started here) meaningless; :meth:`given` says whether an option was on the command line.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self._given: set[str] = set()

    def parse_args(self, args=None, namespace=None):
        """Parse, refuse options that do not apply (one line, exit 2), and return plain values."""
        ns = super().parse_args(args, namespace)
        self._given = {dest for dest in _SHARED if hasattr(ns, dest) and not isinstance(getattr(ns, dest), _DEFAULTS)}
        if getattr(ns, "scheduler", None) is not None:
            if "backend" in self._given and ns.backend == "local":
                self.error("--scheduler runs on a Dask cluster; it contradicts --backend local")
            if "workers" in self._given:
                self.error("--workers does not apply with --scheduler (the cluster's own workers run the jobs)")
        elif "worker_timeout" in self._given and getattr(ns, "backend", "local") != "dask":
            self.error("--worker-timeout applies to Dask runs only (--backend dask or --scheduler)")
        for dest, plain in (("workers", int), ("backend", str), ("worker_timeout", float)):
            if isinstance(getattr(ns, dest, None), _DEFAULTS):
                setattr(ns, dest, plain(getattr(ns, dest)))
        return ns

    def given(self, dest: str) -> bool:
        """Whether the shared option ``dest`` (``workers``, ``backend``, ``worker_timeout``) was on the command line."""
        return dest in self._given

    def error(self, message: str):
        """Exit with code 2 and the message on one line (argparse's hook for a usage error)."""
        self.exit(2, f"{self.prog}: error: {' '.join(str(message).split())}\n")

    def fail(self, exc: BaseException):
        """Exit 2 with the one line of a ValueError/TypeError/OSError raised before or while running."""
        self.error(str(exc))


def add_arguments(parser: argparse.ArgumentParser, *, workers: int = 2, discard_complete: bool = False) -> argparse.ArgumentParser:
    """The options every experiment's command line shares.

    ``--out --workers --backend --scheduler --fresh --worker-timeout`` (pass ``args.worker_timeout`` on to
    :func:`run_jobs`).

    With ``discard_complete=True`` also ``--discard-complete`` (pass ``args.discard_complete`` on to
    :func:`run_jobs`; a command line that does not must not offer it).
    """
    parser.add_argument("--out", type=_out_folder, default=None,
                        help="folder for the result files (default: clbook.results.user_dir(), your user data folder)")
    parser.add_argument("--workers", type=positive_int, default=_DefaultInt(workers), help=f"parallel processes (default {workers})")
    parser.add_argument("--backend", choices=BACKENDS, default=_DefaultStr("local"),
                        help="local processes (joblib/loky) or a Dask cluster (default local)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="address of a running Dask scheduler, e.g. tcp://host:8786 (implies --backend dask; it must "
                             f"answer within {SCHEDULER_TIMEOUT:g} s)")
    parser.add_argument("--fresh", action="store_true", help="ignore an earlier partial result and start over (refused "
                        "where a complete result holds jobs this run does not have)")
    parser.add_argument("--worker-timeout", type=_positive_seconds, default=_DefaultFloat(WORKER_TIMEOUT), metavar="SECONDS",
                        help="a Dask run stops when its cluster has had no worker this long; the partial result is kept "
                             f"for a resume (default {WORKER_TIMEOUT:g})")
    if discard_complete:
        parser.add_argument("--discard-complete", action="store_true",
                            help="allow this run to replace a complete result that has other jobs or other settings")
    return parser
