"""The experiment runner: atomic results, resume, never a partial over a complete result, local = Dask."""
import argparse
import json

import pytest

from clbook.experiments import runner
from clbook.experiments.runner import Job, run_jobs


def square(x: int, fail_on: int | None = None, log: str | None = None) -> dict:
    """A job: x², optionally failing on one input, optionally logging its call to a file."""
    if log is not None:
        with open(log, "a") as f:
            f.write(f"{x}\n")
    if fail_on is not None and x == fail_on:
        raise RuntimeError(f"job {x} failed on purpose")
    return {"x": x, "square": x * x}


def jobs(n, **extra):
    return [Job(f"x={x}", dict(x=x, **extra), cost=x) for x in range(n)]


def run(tmp_path, js, **kw):
    return run_jobs(square, js, out=tmp_path, name="demo", command="test", settings={"kind": "squares"}, progress=False, **kw)


def test_complete_result_and_no_partial_left(tmp_path):
    data = run(tmp_path, jobs(4), workers=1)
    assert data["complete"] and [v["result"]["square"] for v in data["jobs"].values()] == [0, 1, 4, 9]
    stored = json.loads((tmp_path / "demo.json").read_text())
    assert stored["complete"] and list(stored["jobs"]) == ["x=0", "x=1", "x=2", "x=3"]
    assert not (tmp_path / "demo.partial.json").exists()
    assert set(stored["provenance"]) >= {"command", "code", "date", "seconds", "machine"}


def test_interrupted_run_resumes_without_redoing_finished_jobs(tmp_path):
    log = tmp_path / "calls.txt"
    with pytest.raises(RuntimeError, match="failed on purpose"):
        run(tmp_path, jobs(4, fail_on=1, log=str(log)), workers=1)  # runs 3, 2 (largest cost first), then fails on 1
    partial = json.loads((tmp_path / "demo.partial.json").read_text())
    assert not partial["complete"] and sorted(partial["jobs"]) == ["x=2", "x=3"]
    assert not (tmp_path / "demo.json").exists()
    log.write_text("")
    data = run(tmp_path, jobs(4, log=str(log)), workers=1)  # other params for x=0,1 only: fail_on removed
    assert data["complete"] and len(data["jobs"]) == 4
    # the finished jobs had other params (fail_on=1) so they rerun; with identical params they are skipped:
    log.write_text("")
    run(tmp_path, jobs(4, log=str(log)), workers=1)
    assert log.read_text() == ""


def test_resume_skips_exactly_the_finished_jobs(tmp_path):
    log = tmp_path / "calls.txt"
    first = [Job("x=3", dict(x=3, log=str(log)), cost=3), Job("x=1", dict(x=1, fail_on=1, log=str(log)), cost=1)]
    with pytest.raises(RuntimeError):
        run(tmp_path, first, workers=1)
    log.write_text("")
    second = [Job("x=3", dict(x=3, log=str(log)), cost=3), Job("x=1", dict(x=1, log=str(log)), cost=1)]
    run(tmp_path, second, workers=1)
    assert log.read_text().split() == ["1"]


def test_a_complete_result_is_never_replaced_by_a_partial_one(tmp_path):
    run(tmp_path, jobs(3), workers=1)
    before = (tmp_path / "demo.json").read_text()
    with pytest.raises(RuntimeError):
        run(tmp_path, jobs(3, fail_on=0), workers=1, resume=False)
    assert (tmp_path / "demo.json").read_text() == before
    assert (tmp_path / "demo.partial.json").exists()


def test_other_settings_refuse_to_resume(tmp_path):
    run(tmp_path, jobs(2), workers=1)
    with pytest.raises(ValueError, match="other settings"):
        run_jobs(square, jobs(2), out=tmp_path, name="demo", command="t", settings={"kind": "cubes"}, progress=False, workers=1)


def test_parallel_local_equals_sequential(tmp_path):
    a = run(tmp_path / "a", jobs(5), workers=1)
    b = run(tmp_path / "b", jobs(5), workers=2)
    assert {k: v["result"] for k, v in a["jobs"].items()} == {k: v["result"] for k, v in b["jobs"].items()}
    assert list(b["jobs"]) == list(a["jobs"])


@pytest.mark.slow
def test_dask_local_cluster_equals_local(tmp_path):
    pytest.importorskip("dask.distributed")
    a = run(tmp_path / "a", jobs(4), workers=1)
    b = run(tmp_path / "b", jobs(4), workers=2, backend="dask")
    assert {k: v["result"] for k, v in a["jobs"].items()} == {k: v["result"] for k, v in b["jobs"].items()}
    assert b["provenance"]["backend"] == "dask"


@pytest.mark.parametrize("bad, error, match", [
    (dict(jobs=[]), ValueError, "job list is empty"),
    (dict(jobs=[Job("a", {"x": 1}), Job("a", {"x": 2})]), ValueError, "unique"),
    (dict(jobs=[("a", {"x": 1})]), TypeError, "Job instances"),
    (dict(backend="spark"), ValueError, "backend"),
    (dict(workers=0), ValueError, "workers"),
    (dict(scheduler=""), ValueError, "scheduler"),
    (dict(name="a/b"), ValueError, "name"),
])
def test_bad_arguments(tmp_path, bad, error, match):
    kw = dict(jobs=jobs(2), out=tmp_path, name="demo", command="t", progress=False, workers=1) | bad
    js = kw.pop("jobs")
    with pytest.raises(error, match=match):
        run_jobs(square, js, **kw)


def test_local_functions_are_refused_for_worker_processes(tmp_path):
    def local(x):
        return x
    with pytest.raises(ValueError, match="top level"):
        run_jobs(local, jobs(2), out=tmp_path, name="demo", command="t", workers=2, progress=False)


def test_job_checks():
    with pytest.raises(TypeError, match="JSON"):
        Job("a", {"x": object()})
    with pytest.raises(ValueError, match="cost"):
        Job("a", {}, cost=float("nan"))
    with pytest.raises(ValueError, match="key"):
        Job("", {})


def test_command_line_types():
    assert runner.int_list("1,2,3") == [1, 2, 3]
    assert runner.float_list("0.1, 0.2") == [0.1, 0.2]
    assert runner.choice_list(["a", "b"])("b,a") == ["b", "a"]
    for parse, text in [(runner.int_list, "a,b"), (runner.int_list, ""), (runner.int_list, "1,,2"), (runner.int_list, "-1"),
                        (runner.float_list, "nan"), (runner.choice_list(["a"]), "NOPE"), (runner.positive_int, "0")]:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    parser = runner.add_arguments(argparse.ArgumentParser(prog="demo"))
    args = parser.parse_args(["--workers", "3", "--backend", "dask"])
    assert args.workers == 3 and args.backend == "dask" and args.out is None and not args.fresh
    with pytest.raises(SystemExit):
        parser.parse_args(["--workers", "x"])
