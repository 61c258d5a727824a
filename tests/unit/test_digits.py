"""Tests of clbook.data.digits."""
import numpy as np
import pytest
import torch

from clbook.data.digits import augment, shifted_digits


def test_shifted_digits_shapes_and_content():
    data = shifted_digits(canvas=12, n_train=1200, seed=0)
    assert data.x_train.shape == (1200, 144) and data.x_test.shape == (597, 144)
    assert float(data.x_train.min()) >= 0 and float(data.x_train.max()) <= 1
    assert set(np.unique(data.y_train)) == set(range(10))
    img = data.x_train.reshape(-1, 12, 12)
    assert torch.all(img.sum(dim=(1, 2)) > 0)
    plain = shifted_digits(canvas=8, seed=0)
    assert plain.offsets.max() == 0


def test_augment_identity_and_shift():
    data = shifted_digits(seed=1)
    x = data.x_train[:50]
    g = torch.Generator().manual_seed(0)
    same = augment(x, generator=g, max_shift=0, contrast=(1.0, 1.0), noise=0.0)
    assert torch.equal(same, x)
    moved = augment(x, generator=g, max_shift=3, contrast=(1.0, 1.0), noise=0.0)
    # a translation with zero fill never adds mass
    assert torch.all(moved.sum(1) <= x.sum(1) + 1e-6)
    a = augment(x, generator=torch.Generator().manual_seed(5))
    b = augment(x, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b)


def test_bad_input():
    with pytest.raises(ValueError, match="canvas"):
        shifted_digits(canvas=6)
    x = shifted_digits().x_train[:4]
    with pytest.raises(TypeError, match="generator"):
        augment(x, generator=0)
    with pytest.raises(ValueError, match="columns"):
        augment(x, generator=torch.Generator(), canvas=10)
    with pytest.raises(ValueError, match="noise"):
        augment(x, generator=torch.Generator(), noise=-1.0)
