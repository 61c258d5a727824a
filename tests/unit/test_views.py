"""clbook.data.views: Gaussian-noise views and half moons (Chapters 11, 12)."""
import numpy as np
import pytest
import torch

import clbook
from clbook.data import views


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0, device="cpu")


def test_gaussian_views_shapes_noise_and_negatives():
    x = clbook.randn(4000, 3, generator=clbook.generator(0))
    v = views.gaussian_views(x, variance=0.25, generator=clbook.generator(1))
    assert v.positives.shape == x.shape and v.negatives.shape == x.shape
    noise = (v.positives - x).numpy()
    assert np.var(noise) == pytest.approx(0.25, rel=0.05)
    rows = {tuple(r) for r in x.numpy().round(12)}
    assert all(tuple(r) in rows for r in v.negatives.numpy().round(12))


def test_views_are_reproducible():
    a = views.moons_views(50, seed=3).numpy()
    b = views.moons_views(50, seed=3).numpy()
    for p, q in zip(a, b, strict=True):
        np.testing.assert_array_equal(p, q)
    assert a[0].dtype == np.float64 and a[0].shape == (50, 2)


def test_gaussian_anchors_moments():
    x = views.gaussian_anchors(20_000, [2.0, 0.5], mean=[1.0, -1.0], generator=clbook.generator(2))
    np.testing.assert_allclose(x.mean(0).numpy(), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(x.std(0).numpy(), [2.0, 0.5], rtol=0.03)


def test_bad_inputs():
    with pytest.raises(ValueError, match="variance"):
        views.gaussian_views(torch.zeros(5, 2, dtype=torch.float64), variance=-1.0, generator=clbook.generator(0))
    with pytest.raises(ValueError, match="n"):
        views.moons_views(2)
    with pytest.raises(ValueError, match="mean"):
        views.gaussian_anchors(5, [1.0, 2.0], mean=[0.0], generator=clbook.generator(0))
    with pytest.raises(TypeError):
        views.gaussian_views(torch.zeros(5, 2), variance=0.1, generator=None)
