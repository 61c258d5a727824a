"""clbook.results: shipped results read through importlib.resources, atomic writes, a user folder, provenance."""
import json
import os

import pytest

from clbook import results


def test_every_experiment_ships_results_readable_as_package_data():
    for experiment in results.EXPERIMENTS:
        names = results.names(experiment)
        assert names, experiment
        assert isinstance(results.load(experiment, names[0]), dict)


def test_missing_and_bad_names():
    with pytest.raises(FileNotFoundError, match="python -m clbook.experiments.wide"):
        results.load("wide", "nothing")
    with pytest.raises(ValueError, match="experiment"):
        results.load("nope", "x")
    with pytest.raises(ValueError, match="name"):
        results.load("wide", "../fig2")


def test_user_dir_is_never_the_package(monkeypatch, tmp_path):
    monkeypatch.delenv("CLBOOK_RESULTS", raising=False)
    package = results.__file__.rsplit("/", 1)[0]
    assert not str(results.user_dir()).startswith(package) and "site-packages" not in str(results.user_dir())
    monkeypatch.setenv("CLBOOK_RESULTS", str(tmp_path))
    assert results.user_dir("wide") == tmp_path / "wide"


def test_write_json_is_atomic_and_read_back(tmp_path):
    path = results.write_json(tmp_path / "a" / "r.json", {"x": [1, 2]})
    assert results.read_json(path) == {"x": [1, 2]} and os.listdir(tmp_path / "a") == ["r.json"]
    assert results.load("wide", "r", directory=tmp_path / "a") == {"x": [1, 2]}

    class Unserialisable:
        pass

    with pytest.raises(TypeError):
        results.write_json(path, {"x": Unserialisable()})
    assert json.loads(path.read_text()) == {"x": [1, 2]}  # the old file survives a failed write
    assert os.listdir(tmp_path / "a") == ["r.json"]  # and no temporary file is left
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="not a valid JSON"):
        results.read_json(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError):
        results.read_json(tmp_path / "none.json")


def test_provenance_names_code_and_machine():
    prov = results.provenance("python -m x", 1.234, workers=2)
    assert prov["seconds"] == 1.2 and prov["workers"] == 2
    assert prov["code"].startswith(("git ", "clbook ")) and "torch" in prov["machine"] and "cores" in prov["machine"]


def test_no_shipped_result_is_a_quick_or_partial_run():
    """A `--quick` run (20 epochs, marked complete) or a partial one must never stand in for a stored result: the
    chapters would read its numbers as the experiment's."""
    bad = []
    for experiment in results.EXPERIMENTS:
        for name in results.names(experiment):
            data = results.load(experiment, name)
            settings = data.get("settings") if isinstance(data.get("settings"), dict) else {}
            if name.startswith("quick-") or settings.get("quick") or data.get("complete") is False:
                bad.append(f"{experiment}/{name}")
    assert not bad, f"quick or partial runs among the shipped results: {bad}"
