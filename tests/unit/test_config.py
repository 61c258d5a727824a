"""Tests of clbook.config: seeds, device policy, CPU draws."""
import pytest
import torch

import clbook


def test_draws_do_not_depend_on_dtype_or_global_state():
    a = clbook.randn(3, 4, generator=clbook.generator(5))
    torch.manual_seed(123)
    torch.randn(10)
    b = clbook.randn(3, 4, generator=clbook.generator(5), dtype=torch.float32)
    torch.testing.assert_close(a.float(), b)
    assert a.dtype == torch.float64 and a.device.type == "cpu"


def test_setup_sets_state():
    state = clbook.setup(seed=7, device="cpu", dtype=torch.float32, threads=2)
    assert clbook.current() is state and torch.get_default_dtype() == torch.float32 and torch.get_num_threads() == 2
    clbook.setup(seed=0, device="cpu", threads=1)
    assert torch.get_default_dtype() == torch.float64


def test_device_from_environment(monkeypatch):
    monkeypatch.setenv("CLBOOK_DEVICE", "cpu")
    assert clbook.setup(0).device.type == "cpu"
    monkeypatch.setenv("CLBOOK_DEVICE", "not-a-device")
    with pytest.raises(ValueError, match="device must name a torch device"):
        clbook.setup(0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message when CUDA is missing")
def test_cuda_requested_without_cuda():
    with pytest.raises(ValueError, match="no CUDA device"):
        clbook.setup(0, device="cuda")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"seed": -1}, ValueError, "seed must be >= 0"),
    ({"seed": 1.5}, TypeError, "seed must be an integer"),
    ({"dtype": torch.int64}, ValueError, "dtype must be"),
    ({"threads": 0}, ValueError, "threads must be >= 1"),
])
def test_setup_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        clbook.setup(**kwargs)


def test_draw_argument_errors():
    with pytest.raises(TypeError, match="torch.Generator"):
        clbook.randn(2, generator=0)
    with pytest.raises(ValueError, match="low < high"):
        clbook.randint(3, 3, 5, generator=clbook.generator(0))
    with pytest.raises(ValueError, match=r"shape\[0\] must be >= 0"):
        clbook.rand(-1, generator=clbook.generator(0))
    values = clbook.randint(0, 4, (100,), generator=clbook.generator(0))
    assert values.min() >= 0 and values.max() < 4


def test_draws_before_setup_change_no_global_state():
    """Without setup(), a draw uses the device policy and float64 and leaves seeds, threads and dtype alone."""
    import subprocess
    import sys

    code = (
        "import torch; torch.set_num_threads(2); torch.manual_seed(11); state = torch.get_rng_state()\n"
        "import clbook\n"
        "x = clbook.randn(3, generator=clbook.generator(0))\n"
        "assert x.dtype == torch.float64, x.dtype\n"
        "assert torch.get_num_threads() == 2 and torch.get_default_dtype() == torch.float32\n"
        "assert torch.equal(torch.get_rng_state(), state)\n"
        "try:\n    clbook.current()\nexcept RuntimeError as e:\n    assert 'clbook.setup' in str(e)\n"
        "else:\n    raise SystemExit('current() set up silently')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"CLBOOK_DEVICE": "cpu", "PATH": ""})
    assert out.stdout.strip() == "ok", out.stderr


def test_setup_chooses_deterministic_full_precision_kernels():
    clbook.setup(0, device="cpu")
    assert torch.are_deterministic_algorithms_enabled()
    assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    assert torch.get_float32_matmul_precision() == "highest"


def test_same_seed_same_numbers_twice_in_one_process():
    clbook.setup(3, device="cpu")
    a = (torch.randn(4), clbook.randn(4, generator=clbook.generator(1)))
    clbook.setup(3, device="cpu")
    b = (torch.randn(4), clbook.randn(4, generator=clbook.generator(1)))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
