"""The experiment runner survives faults: a Dask worker killed mid-run (no finished job recomputed), every worker
lost (the run stops after worker_timeout with one line, partial kept and resumable), the main process SIGKILLed
(its local workers end within seconds). Only 127.0.0.1; the machine may be heavily loaded, so every wait is
generous but bounded."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from clbook.experiments.runner import Job, WorkersLost, run_jobs

SETTINGS = {"kind": "naps"}


def nap(i: int, seconds: float, marks: str) -> dict:
    """A job: sleep ``seconds``; marker files say when it started and each time it finished, in which process."""
    pid = os.getpid()
    Path(marks, f"start-{i}-{pid}-{uuid.uuid4().hex}").write_text(f"{time.time()!r}")
    time.sleep(seconds)
    Path(marks, f"end-{i}-{pid}-{uuid.uuid4().hex}").write_text("")
    return {"i": i, "pid": pid}


def mark_worker_code() -> None:
    """Run on a worker (client.run): this process's job provenance names another code version than the client's."""
    from clbook import results

    results._JOB_PROVENANCE = dict(results.job_provenance(), code="git worker-own-code")


def naps(n: int, marks: Path, seconds: float = 1.0) -> list[Job]:
    return [Job(f"i={i}", dict(i=i, seconds=seconds, marks=str(marks))) for i in range(n)]


def ends(marks: Path) -> dict[int, list[int]]:
    """Job number -> the pids of the processes in which it finished (one entry per execution)."""
    out: dict[int, list[int]] = {}
    for p in marks.glob("end-*"):
        _, i, pid, _ = p.name.split("-")
        out.setdefault(int(i), []).append(int(pid))
    return out


def starts(marks: Path) -> list[tuple[int, int, float]]:
    """(job, pid, start time) of every execution that began."""
    out = []
    for p in marks.glob("start-*"):
        _, i, pid, _ = p.name.split("-")
        try:
            out.append((int(i), int(pid), float(p.read_text() or "nan")))
        except ValueError:  # written at this moment
            continue
    return out


def stored(path: Path) -> set[str]:
    try:
        return set(json.loads(path.read_text())["jobs"])
    except (OSError, ValueError, KeyError):
        return set()


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie left for a non-reaping init counts as gone)."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except (OSError, IndexError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def until(condition, timeout: float, step: float = 0.05):
    """Poll ``condition`` until it is truthy (returned) or ``timeout`` seconds pass (None)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return None


def in_thread(target) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def go():
        try:
            box["value"] = target()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc
        box["ended"] = time.monotonic()

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, box


@pytest.mark.slow
def test_a_killed_worker_recomputes_no_finished_job(tmp_path):
    pytest.importorskip("dask.distributed")
    marks = tmp_path / "marks"
    marks.mkdir()
    jobs = naps(6, marks, seconds=1.5)
    partial = tmp_path / "naps.partial.json"
    thread, box = in_thread(lambda: run_jobs(nap, jobs, out=tmp_path, name="naps", command="test", settings=SETTINGS,
                                             workers=2, backend="dask", progress=False, worker_timeout=60))

    def victim():
        # a worker that has finished a job, whose finished jobs the client already holds (stored in the partial
        # file), and that is in the first half of its next job: killing it now must not recompute anything finished
        finished = ends(marks)
        if not finished or not {f"i={i}" for i in finished} <= stored(partial):
            return None
        now = time.time()
        for i, pid, began in starts(marks):
            if i not in finished and pid in {p for ps in finished.values() for p in ps} and now - began < 0.5:
                return pid
        return None

    pid = until(victim, timeout=90)
    assert pid is not None, f"no worker became a victim: {box}"
    os.kill(pid, signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive(), "the run did not end after a worker was killed"
    assert "error" not in box, box.get("error")
    data = box["value"]
    assert data["complete"] and sorted(data["jobs"]) == sorted(job.key for job in jobs)
    assert all(v["result"]["i"] == int(k[2:]) for k, v in data["jobs"].items())
    finished = ends(marks)
    assert sorted(finished) == list(range(6))
    twice = {i: pids for i, pids in finished.items() if len(pids) > 1}
    assert not twice, f"finished jobs computed again after the worker died: {twice}"
    assert any(pid in pids for pids in finished.values())  # the killed worker had finished jobs
    prov = data["provenance"]
    assert prov["workers"] == 2 and prov["workers_requested"] == 2 and prov["workers_used"] >= 2
    assert all(v["provenance"]["worker"].startswith("tcp://127.0.0.1:") for v in data["jobs"].values())


@pytest.fixture
def scheduler():
    """A Dask scheduler on 127.0.0.1 (in this process) and a function starting no-nanny workers as processes."""
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                                       scheduler_port=0, dashboard_address=None)
    procs: list[subprocess.Popen] = []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), CLBOOK_THREADS="1")

    def start(n: int) -> list[subprocess.Popen]:
        new = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address,
                                 "--no-nanny", "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(n)]
        procs.extend(new)
        return new

    yield cluster, start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)
    cluster.close()


@pytest.mark.slow
def test_losing_every_worker_stops_within_the_timeout_and_the_partial_resumes(tmp_path, scheduler):
    distributed = pytest.importorskip("dask.distributed")
    cluster, start = scheduler
    workers = start(2)
    with distributed.Client(cluster.scheduler_address) as client:
        client.wait_for_workers(2, timeout=60)
        client.run(mark_worker_code)
    marks = tmp_path / "marks"
    marks.mkdir()
    jobs, timeout = naps(6, marks), 3.0
    partial = tmp_path / "naps.partial.json"
    thread, box = in_thread(lambda: run_jobs(nap, jobs, out=tmp_path, name="naps", command="test", settings=SETTINGS,
                                             scheduler=cluster.scheduler_address, workers=5, progress=False,
                                             worker_timeout=timeout))
    assert until(lambda: len(stored(partial)) >= 2, timeout=90), f"no two jobs finished: {box}"
    for w in workers:
        w.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    thread.join(timeout=timeout + 60)
    assert not thread.is_alive(), "the run hangs with no worker left"
    assert box["ended"] - killed >= timeout * 0.9
    error = box.get("error")
    assert isinstance(error, WorkersLost) and isinstance(error, TimeoutError), error
    message = str(error)
    assert "\n" not in message and "no worker for 3 s" in message and "--worker-timeout" in message
    assert str(partial) in message and "resume" in message
    # the partial file holds the finished jobs, each with the provenance its worker computed (its own code)
    data = json.loads(partial.read_text())
    # the cluster's real 2 workers, not the workers=5 passed in (which a cluster of its own does not use)
    assert not data["complete"] and len(data["jobs"]) >= 2 and data["provenance"]["workers"] == 2
    assert {v["provenance"]["code"] for v in data["jobs"].values()} == {"git worker-own-code"}
    assert data["provenance"]["job_codes"] == ["git worker-own-code"] != [data["provenance"]["code"]]
    # a resume (here in this process) computes only the jobs the partial file lacks
    kept = set(data["jobs"])
    done = run_jobs(nap, jobs, out=tmp_path, name="naps", command="test", settings=SETTINGS, workers=1, progress=False)
    assert done["complete"] and sorted(done["jobs"]) == sorted(job.key for job in jobs)
    assert done["provenance"]["resumed_jobs"] == len(kept)
    assert not partial.exists()
    twice = {i: pids for i, pids in ends(marks).items() if len(pids) > 1}
    assert not twice or not {f"i={i}" for i in twice} & kept, f"resumed jobs computed again: {twice}"


def test_a_cluster_without_workers_stops_after_the_timeout(tmp_path, scheduler):
    cluster, _ = scheduler
    began = time.monotonic()
    with pytest.raises(WorkersLost, match=r"no worker for 1 s .*--worker-timeout.*0 of 2 jobs finished \(none stored\)"):
        run_jobs(nap, naps(2, tmp_path), out=tmp_path, name="naps", command="test", settings=SETTINGS,
                 scheduler=cluster.scheduler_address, progress=False, worker_timeout=1)
    assert time.monotonic() - began < 30
    assert not (tmp_path / "naps.partial.json").exists() and not (tmp_path / "naps.json").exists()


def test_worker_timeout_arguments(tmp_path):
    import argparse

    from clbook.experiments import runner

    parser = runner.add_arguments(argparse.ArgumentParser(prog="demo"))
    assert parser.parse_args([]).worker_timeout == runner.WORKER_TIMEOUT
    assert parser.parse_args(["--worker-timeout", "2.5"]).worker_timeout == 2.5
    for bad in ("0", "-1", "nan", "soon"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--worker-timeout", bad])
    for bad in (0, -1.0, float("inf"), "60", True):
        with pytest.raises(ValueError, match="worker_timeout"):
            run_jobs(nap, naps(1, tmp_path), out=tmp_path, name="naps", command="t", progress=False, workers=1,
                     worker_timeout=bad)


CHILD = textwrap.dedent("""
    import sys
    from test_runner_faults import naps, nap
    from clbook.experiments.runner import run_jobs
    out, backend = sys.argv[1], sys.argv[2]
    run_jobs(nap, naps(40, out + "/marks", seconds=1.0), out=out, name="naps", command="child", settings={"kind": "naps"},
             workers=2, backend=backend, progress=False)
""")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "dask"])
def test_local_workers_end_when_the_main_process_is_killed(tmp_path, backend):
    if backend == "dask":
        pytest.importorskip("dask.distributed")
    marks = tmp_path / "marks"
    marks.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent)] + [p for p in sys.path if p]),
               CLBOOK_THREADS="1")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), backend], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pids = until(lambda: (lambda s: s if len(s) >= 2 else None)({pid for _, pid, _ in starts(marks)}), timeout=120)
        assert pids, f"the workers of {backend} never both started a job"
        assert child.pid not in pids and all(running(p) for p in pids)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        left = until(lambda: not any(running(p) for p in pids), timeout=15, step=0.2)
        assert left, f"workers {sorted(p for p in pids if running(p))} still run 15 s after their parent was SIGKILLed"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)


# ------------------------------------------------------------------ command lines: found by tools/review_failure.py


def _cli(main, argv, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code, capsys.readouterr().err.strip()


TINY_WIDE = ["--quick", "--widths", "2", "--seeds", "0", "--steps", "1", "--activations", "tanh"]


@pytest.mark.parametrize("argv,words", [
    (["--worker-timeout", "5"], "--worker-timeout applies to Dask runs only"),
    (["--backend", "local", "--scheduler", "tcp://127.0.0.1:9"], "contradicts --backend local"),
    (["--scheduler", "tcp://127.0.0.1:9", "--workers", "3"], "--workers does not apply with --scheduler"),
    (["--seeds", "0,0"], "seeds (--seeds) must be unique"),
    (["--widths", "2,2"], "widths (--widths) must be unique"),
])
def test_wide_options_that_would_be_ignored_or_repeat_are_refused(tmp_path, capsys, argv, words):
    from clbook.experiments import wide

    base = TINY_WIDE if "--workers" in argv or "--scheduler" in argv else [*TINY_WIDE, "--workers", "1"]
    code, err = _cli(wide.main, [*base, *argv, "--out", str(tmp_path)], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and words in err, err
    assert not list(tmp_path.iterdir())


def test_an_empty_out_is_refused(tmp_path, capsys, monkeypatch):
    from clbook.experiments import wide

    monkeypatch.chdir(tmp_path)  # an empty --out used to mean the current folder, silently
    code, err = _cli(wide.main, [*TINY_WIDE, "--workers", "1", "--out", ""], capsys)
    assert code == 2 and "--out" in err and "empty" in err and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_the_defaults_of_the_shared_options_are_plain_values():
    from clbook.experiments import runner

    parser = runner.add_arguments(runner.ArgumentParser(prog="demo"), workers=3)
    args = parser.parse_args([])
    assert (type(args.workers), type(args.backend), type(args.worker_timeout)) == (int, str, float)
    assert (args.workers, args.backend, args.worker_timeout) == (3, "local", runner.WORKER_TIMEOUT)
    assert not parser.given("workers")
    args = parser.parse_args(["--workers", "3", "--backend", "dask", "--worker-timeout", "60"])
    assert parser.given("workers") and parser.given("worker_timeout") and args.worker_timeout == 60.0


def test_hierarchical_bench_refuses_seeds_and_workers_even_at_their_defaults(tmp_path, capsys):
    from clbook.experiments import hierarchical

    for argv, words in ((["--seeds", "1,2,3"], "seeds"), (["--workers", "2"], "--workers 2 does not apply to bench")):
        code, err = _cli(hierarchical.main, ["bench", "--quick", "--out", str(tmp_path), *argv], capsys)
        assert code == 2 and words in err and len(err.splitlines()) == 1, err
    assert not list(tmp_path.iterdir())


def test_a_scheduler_address_where_something_else_answers_is_one_line(tmp_path, capsys):
    """A server that is not Dask (here: one that answers every connection with junk) gives exit 2 naming --scheduler,
    not a traceback from deep inside dask's protocol (the review saw numpy allocate 3 EiB for a junk frame length)."""
    import socket

    pytest.importorskip("dask.distributed")
    from clbook.experiments import wide

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.sendall(b"\xff" * 64 + b"HTTP/1.1 400 Bad Request\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        began = time.monotonic()
        code, err = _cli(wide.main, [*TINY_WIDE, "--out", str(tmp_path), "--scheduler", f"tcp://127.0.0.1:{port}"], capsys)
        assert code == 2 and "--scheduler" in err and len(err.splitlines()) == 1, err
        assert time.monotonic() - began < 60
        assert not [p for p in tmp_path.iterdir() if p.suffix == ".json"]
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


def test_a_scheduler_name_that_does_not_resolve_fails_within_the_timeout(tmp_path, monkeypatch):
    """The name lookup is bounded too (getaddrinfo has no timeout; an unknown host kept the command silent)."""
    import socket

    from clbook.experiments import runner

    def slow_lookup(*args, **kwargs):
        time.sleep(30)
        raise socket.gaierror("too late")

    monkeypatch.setattr(socket, "getaddrinfo", slow_lookup)
    monkeypatch.setattr(runner, "SCHEDULER_TIMEOUT", 1.0)
    began = time.monotonic()
    with pytest.raises(ValueError, match=r"^--scheduler tcp://slow\.invalid:8786: .*within 1 s \(the name lookup did not finish\)"):
        run_jobs(nap, naps(1, tmp_path), out=tmp_path, name="naps", command="t", scheduler="tcp://slow.invalid:8786",
                 progress=False)
    assert time.monotonic() - began < 10
