"""clbook.experiments.new_losses: objectives, determinism, the runner's jobs, the stored results, the command line."""
import json
import math

import pytest
import torch

from clbook import losses
from clbook.experiments import new_losses as nl

SMALL = nl.Settings(epochs=1, eval_epochs=(1,), batch=64, hidden=16, out=8, n_train=192)


def _unit(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)


def test_every_method_gives_a_finite_differentiable_objective():
    z1, z2 = _unit(12, 5, 0).requires_grad_(), _unit(12, 5, 1)
    for method in nl.METHODS:
        value = nl.objective(method, SMALL)(z1, z2)
        (grad,) = torch.autograd.grad(value, z1)
        assert value.ndim == 0 and math.isfinite(float(value.detach())), method
        assert torch.isfinite(grad).all() and grad.abs().max() > 0, method


def test_infonce_methods_are_the_clbook_member_averaged_over_anchors():
    z1, z2 = _unit(10, 4, 2), _unit(10, 4, 3)
    for eps in (0.0, 1.0):
        method = "InfoNCE ε=0" if eps == 0 else "InfoNCE ε=1"
        expected = losses.infonce(SMALL.temperature, eps)(z1, z2) / 10
        assert torch.allclose(nl.objective(method, SMALL)(z1, z2), expected, rtol=1e-13, atol=0)


def test_alpha_cl_r_h_has_the_infonce_gradient():
    z1 = _unit(16, 6, 4).requires_grad_()
    z2 = _unit(16, 6, 5)
    (g_h,) = torch.autograd.grad(nl.objective("α-CL-r_H", SMALL)(z1, z2), z1)
    (g_nce,) = torch.autograd.grad(nl.objective("InfoNCE ε=0", SMALL)(z1, z2), z1)
    torch.testing.assert_close(g_h, g_nce, rtol=1e-12, atol=1e-14)


def test_training_is_deterministic_and_does_not_touch_the_global_generator():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = nl.train("quadratic", SMALL, seed=0, dtype=torch.float64)
    b = nl.train("quadratic", SMALL, seed=0, dtype=torch.float64)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert a["loss"] == b["loss"] and a["linear"] == b["linear"]
    assert 0.0 <= a["linear"][0] <= 1.0 and 0.0 <= a["knn"][0] <= 1.0


def test_settings_round_trip_through_json():
    assert nl.Settings.from_json(json.loads(json.dumps(SMALL.as_json()))) == SMALL


def test_jobs_are_data_and_reject_bad_lists():
    todo = nl.jobs(SMALL, seeds=[0, 1], methods=["quadratic", "α-CL-r_H"])
    assert [j.key for j in todo] == ["quadratic/seed=0", "quadratic/seed=1", "α-CL-r_H/seed=0", "α-CL-r_H/seed=1", "baselines"]
    with pytest.raises(ValueError, match="at least one seed"):
        nl.jobs(SMALL, seeds=[])
    with pytest.raises(ValueError, match="repeat"):
        nl.jobs(SMALL, seeds=[0, 0])
    with pytest.raises(ValueError, match="methods"):
        nl.jobs(SMALL, seeds=[0], methods=["NOPE"])


def test_stored_full_run_has_every_method_and_seed_with_provenance():
    data = nl.load("full")
    means = nl.summary(data.rows)
    assert set(data.methods) == set(nl.METHODS) and data.seeds == [0, 1, 2] and data.complete
    assert all(n == 3 and 0.0 < mean <= 1.0 for mean, _, n in means.values())
    assert {"command", "code", "date", "seconds", "machine", "converted"} <= set(data.provenance)
    assert set(data.baselines) == {"raw_pixels", "random_backbone"}
    assert nl.load("quick").settings["epochs"] == 4


@pytest.fixture
def tiny(monkeypatch):
    """--quick runs SMALL settings, so a whole run takes a second."""
    monkeypatch.setattr(nl.Settings, "quick", classmethod(lambda cls: SMALL))
    return SMALL


def test_a_run_writes_a_complete_result_that_loads(tmp_path, tiny):
    data = nl.run(quick=True, methods=["quadratic"], seeds=[0], name="t", out=tmp_path, progress=False)
    assert data["complete"] and (tmp_path / "t.json").is_file() and not (tmp_path / "t.partial.json").exists()
    back = nl.load("t", directory=tmp_path)
    assert back.methods == ["quadratic"] and len(back.rows) == 1 and back.baselines


def test_an_interrupted_rerun_never_replaces_a_complete_result(tmp_path, tiny, monkeypatch):
    nl.run(quick=True, methods=["quadratic", "α-CL-r_H"], seeds=[0], name="t", out=tmp_path, progress=False)
    before = (tmp_path / "t.json").read_text()
    real = nl.train

    def failing(method, *args, **kwargs):
        if method == "α-CL-r_H":
            raise KeyboardInterrupt
        return real(method, *args, **kwargs)

    monkeypatch.setattr(nl, "train", failing)
    with pytest.raises(KeyboardInterrupt):
        nl.run(quick=True, methods=["quadratic", "α-CL-r_H"], seeds=[0], name="t", out=tmp_path, progress=False, fresh=True)
    assert (tmp_path / "t.json").read_text() == before


def test_a_subset_needs_a_name(tmp_path):
    with pytest.raises(ValueError, match="--name"):
        nl.run(seeds=[0], out=tmp_path, progress=False)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "a,b"], "comma-separated list of integers"),
    (["--seeds", "0"], "needs its own name"),
    (["--seeds", "-1"], "non-negative"),
    (["--seeds", ""], "comma-separated"),
    (["--seeds", "1,1", "--name", "x"], "repeat"),
    (["--methods", "NOPE"], "unknown"),
    (["--workers", "0"], "positive integer"),
    (["--name", "a/b", "--seeds", "0"], "plain file name"),
])
def test_bad_command_lines_exit_with_one_sentence_and_write_nothing(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        nl.main([*argv, "--out", str(tmp_path)])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_bad_input_is_rejected_with_a_clear_message():
    with pytest.raises(ValueError, match="method"):
        nl.objective("SimCLR", SMALL)
    with pytest.raises(ValueError, match="name"):
        nl.load("nope")
    with pytest.raises(ValueError, match="value"):
        nl.summary([], value="accuracy")
    with pytest.raises((ValueError, TypeError), match="seed"):
        nl.train("quadratic", SMALL, seed=-1)
    with pytest.raises(ValueError, match="dtype"):
        nl.train("quadratic", SMALL, seed=0, dtype=torch.float16)
    with pytest.raises(ValueError, match="jobs"):
        nl.from_result({"rows": []})
