"""clbook.metrics.maxcos: Eq. 11 of Pokle et al. (2022) and the chance level of a random encoder."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook.data import sparse_coding as sc
from clbook.metrics import maxcos


def loop_max_cosines(W, M):
    W, M = W.numpy(), M.numpy()
    out = []
    for j in range(M.shape[1]):
        best = 0.0
        for i in range(W.shape[0]):
            best = max(best, abs(W[i] @ M[:, j]) / (np.linalg.norm(W[i]) * np.linalg.norm(M[:, j])))
        out.append(best)
    return np.array(out)


def test_against_loop_and_batched():
    gen = clbook.generator(0)
    W = clbook.randn(3, 7, 9, generator=gen)
    M = sc.dictionary(9, 4, generator=gen)
    mc = maxcos.max_cosines(W, M)
    for s in range(3):
        np.testing.assert_allclose(mc[s].numpy(), loop_max_cosines(W[s], M), rtol=1e-13)
    summary = maxcos.max_cosine_summary(W, M)
    np.testing.assert_allclose(summary.median.numpy(), np.median(mc.numpy(), axis=-1), rtol=1e-13)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6))
def test_invariances(seed, d):
    gen = clbook.generator(seed)
    M = sc.dictionary(8, d, generator=gen)
    W = clbook.randn(5, 8, generator=gen)
    scale = torch.rand(5, 1, generator=gen, dtype=torch.float64) + 0.1
    perm = torch.randperm(5, generator=gen)
    base = maxcos.max_cosines(W, M)
    torch.testing.assert_close(maxcos.max_cosines(-scale * W[perm], M), base, rtol=1e-12, atol=1e-14)
    assert bool((base <= 1 + 1e-12).all()) and bool((base >= 0).all())


def test_perfect_recovery_is_one():
    gen = clbook.generator(1)
    M = sc.dictionary(12, 4, generator=gen)
    W = torch.cat([M.T * 3, clbook.randn(2, 12, generator=gen)])
    s = maxcos.max_cosine_summary(W, M)
    assert float(s.minimum) == pytest.approx(1.0, abs=1e-13)


def test_chance_level_matches_exact_atom_law():
    c = maxcos.chance_level(20, 4, 10, draws=3000, seed=1)
    gen = clbook.generator(2)
    mc = maxcos.max_cosines(clbook.randn(3000, 10, 20, generator=gen), torch.eye(20, 4))
    exact = maxcos.expected_atom_max_cosine(p=20, m=10)
    assert abs(float(mc.mean()) - exact) < 4 * float(mc.mean(-1).std()) / 3000**0.5
    assert c.minimum < exact < c.maximum
    assert maxcos.chance_level(20, 4, 10, draws=3000, seed=1) is c, "cached"


def test_bad_arguments():
    with pytest.raises(ValueError, match="same p"):
        maxcos.max_cosines(torch.zeros(3, 4), torch.zeros(5, 2))
    with pytest.raises(ValueError, match="need d <= p"):
        maxcos.chance_level(3, 5, 2)
    with pytest.raises(ValueError, match="draws must be >= 2"):
        maxcos.chance_level(3, 2, 2, draws=1)


def test_mixed_dtypes_and_empty_rejected():
    with pytest.raises(ValueError, match="W and M must share dtype"):
        maxcos.max_cosines(torch.zeros(3, 4, dtype=torch.float32), torch.zeros(4, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="m >= 1"):
        maxcos.max_cosines(torch.zeros(0, 4, dtype=torch.float64), torch.zeros(4, 2, dtype=torch.float64))
