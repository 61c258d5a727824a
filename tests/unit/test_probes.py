"""Tests of clbook.metrics.probes."""
import numpy as np
import pytest

from clbook.metrics.probes import knn_probe, linear_probe


def _blobs(separation, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, 300)
    x = rng.normal(size=(300, 5)) + separation * np.eye(5)[y]
    return x[:200], y[:200], x[200:], y[200:]


def test_separable_and_chance():
    assert linear_probe(*_blobs(10.0)) == 1.0
    assert knn_probe(*_blobs(10.0)) == 1.0
    assert linear_probe(*_blobs(0.0)) < 0.6
    assert 0 <= knn_probe(*_blobs(0.0), metric="euclidean") < 0.6


def test_bad_input():
    xtr, ytr, xte, yte = _blobs(1.0)
    with pytest.raises(ValueError, match="same d"):
        linear_probe(xtr, ytr, xte[:, :3], yte)
    with pytest.raises(ValueError, match="one label"):
        knn_probe(xtr, ytr[:5], xte, yte)
    with pytest.raises(ValueError, match="C"):
        linear_probe(xtr, ytr, xte, yte, C=0)
    with pytest.raises(ValueError, match="metric"):
        knn_probe(xtr, ytr, xte, yte, metric="l7")
