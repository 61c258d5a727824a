"""clbook.experiments.wide: the Fig. 2 sweep through the runner, its command line and the stored result (Chapter 12)."""
import json

import pytest

import clbook
from clbook.experiments import wide as experiment


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0, device="cpu")


def test_stored_sweep_loads_in_the_runner_format():
    data = experiment.load()
    assert data["complete"] and len(data["jobs"]) == 15 and "converted" in data["provenance"]
    record, gaps = experiment.gaps(data)
    assert record[0] == 0 and record[-1] == 500 and len(record) == 51
    assert set(gaps) == {"tanh", "relu", "sigmoid"} and gaps["tanh"][1000].shape == (3, 51)


@pytest.mark.parametrize("h", [10, 30])
def test_the_code_reproduces_the_start_of_the_stored_sweep(h):
    """The first 50 steps of seed 0 at widths 10 and 30, recomputed, equal the stored numbers (10 digits)."""
    stored = experiment.load()["jobs"][f"seed=0,h={h}"]
    params = stored["params"] | {"steps": 50}
    fresh = experiment.fig2_job(**params)
    for a, values in fresh["gaps"].items():
        assert values == stored["result"]["gaps"][a][:6]
    assert fresh["losses"]["linear"] == stored["result"]["losses"]["linear"][:6]


def test_quick_command_line_writes_a_complete_result(tmp_path, capsys):
    assert experiment.main(["--quick", "--steps", "4", "--workers", "1", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "quick-fig2.json").read_text())
    assert data["complete"] and set(data["jobs"]) == {"seed=0,h=10", "seed=0,h=30"}
    record, gaps = experiment.gaps(data)
    assert record == [0, 4] and gaps["sigmoid"][30].shape == (1, 2)
    assert "final mean gap" in capsys.readouterr().out
    assert not (tmp_path / "quick-fig2.partial.json").exists()


@pytest.mark.parametrize("argv,says", [
    (["--activations", "NOPE"], "NOPE"),
    (["--seeds", "a,b"], "integers"),
    (["--seeds", "-1"], "non-negative"),
    (["--widths", "1"], "widths"),
    (["--widths", "10,10"], "unique"),
    (["--steps", "0"], "positive"),
    (["--activations", "tanh,tanh"], "repeat"),
])
def test_command_line_rejects_bad_input_and_writes_nothing(argv, says, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        experiment.main([*argv, "--quick", "--out", str(tmp_path)])
    assert exit_.value.code != 0
    err = capsys.readouterr().err
    assert "error" in err and says in err
    assert list(tmp_path.iterdir()) == []


def test_an_empty_job_list_is_refused():
    with pytest.raises(ValueError, match="empty"):
        experiment.run({"seeds": []}, quick=True, out="/nonexistent/never-written", progress=False)
