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


def test_views_are_reproducible_and_unpack():
    a = views.moons_views(50, seed=3)
    x, xp, xn = views.moons_views(50, seed=3)
    for p, q in zip(a, (x, xp, xn), strict=True):
        torch.testing.assert_close(p, q, atol=0, rtol=0)
    assert x.dtype == torch.float64 and x.shape == (50, 2)


def test_inputs_are_converted_to_the_setup_dtype():
    v = views.gaussian_views(np.arange(12).reshape(6, 2), variance=0.0, generator=clbook.generator(0))
    assert v.anchors.dtype == torch.float64
    torch.testing.assert_close(v.positives, v.anchors)


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
    with pytest.raises(ValueError, match="scales"):
        views.gaussian_anchors(5, [1.0, float("nan")], generator=clbook.generator(0))
    with pytest.raises(ValueError, match="finite"):
        views.gaussian_views([[0.0, float("inf")], [1.0, 2.0]], generator=clbook.generator(0))
