"""Tests of clbook.nets."""
import pytest
import torch

import clbook
from clbook import nets


def test_mlp_shapes_normalisation_and_determinism():
    a = nets.MLP([4, 8, 3], generator=clbook.generator(1), normalize=True)
    b = nets.MLP([4, 8, 3], generator=clbook.generator(1), normalize=True)
    x = clbook.randn(5, 4, generator=clbook.generator(2))
    z = a(x)
    assert z.shape == (5, 3) and z.dtype == torch.float64
    torch.testing.assert_close(z.norm(dim=1), torch.ones(5))
    torch.testing.assert_close(z, b(x), rtol=0, atol=0)


def test_mlp_argument_errors():
    with pytest.raises(ValueError, match="at least an input and an output"):
        nets.MLP([4], generator=clbook.generator(0))
    with pytest.raises(ValueError, match="activation must be one of"):
        nets.MLP([4, 2], generator=clbook.generator(0), activation="gelu")
    with pytest.raises(ValueError, match=r"sizes\[1\] must be >= 1"):
        nets.MLP([4, 0, 2], generator=clbook.generator(0))
    with pytest.raises(ValueError, match=r"x must have shape \[n, 4\]"):
        nets.MLP([4, 2], generator=clbook.generator(0))(torch.zeros(3, 5))
