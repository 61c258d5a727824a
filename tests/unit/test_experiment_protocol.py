"""The four experiments share one interface (CONTRIBUTING.md, 'Where things go'): a fifth fills in the same four.

``jobs(...) -> list[runner.Job]``, ``run(..., out=, workers=, backend=, scheduler=, fresh=, progress=,
discard_complete=)`` on the one runner, ``load(name, *, directory=None)`` for a stored result or a rerun's, and
``main(argv=None) -> int``, the command line built with ``runner.ArgumentParser``.
"""
import importlib
import inspect

import pytest

from clbook.experiments import runner

EXPERIMENTS = {"new_losses": dict(args=(), kwargs=dict(seeds=[1])), "wide": dict(args=(), kwargs={}),
               "hierarchical": dict(args=("bench",), kwargs={}), "landscape": dict(args=("table4",), kwargs={})}
RUN_OPTIONS = {"out", "workers", "backend", "scheduler", "fresh", "progress", "discard_complete"}


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_one_interface(name):
    module = importlib.import_module(f"clbook.experiments.{name}")
    for function in ("jobs", "run", "load", "main"):
        assert callable(getattr(module, function, None)), f"{name} has no {function}()"
    assert RUN_OPTIONS <= set(inspect.signature(module.run).parameters), \
        f"{name}.run lacks {RUN_OPTIONS - set(inspect.signature(module.run).parameters)}"
    load = inspect.signature(module.load).parameters
    assert list(load)[0] == "name" and load["directory"].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(module.main).parameters) == ["argv"]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_jobs_are_a_list_of_runner_jobs(name):
    module = importlib.import_module(f"clbook.experiments.{name}")
    spec = EXPERIMENTS[name]
    args = spec["args"]
    if name == "new_losses":
        args = (module.Settings(),)
    elif name == "wide":
        args = (dict(module.QUICK),)
    todo = module.jobs(*args, **spec["kwargs"])
    assert isinstance(todo, list) and todo and all(isinstance(j, runner.Job) for j in todo)
    assert len({j.key for j in todo}) == len(todo)
