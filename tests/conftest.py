import pytest
import torch

import clbook


@pytest.fixture(autouse=True)
def _float64_setup():
    """Every unit test starts from the book's default state: float64, seed 0, the CPU, one thread."""
    clbook.setup(seed=0, device="cpu", threads=1)
    clbook.verify.clear()
    yield
    torch.set_default_dtype(torch.float64)
