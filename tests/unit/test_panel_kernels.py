"""One training loop, two array types: the package's loops run on torch tensors (the chapters) and on numpy arrays.

Four panels run a package loop on numpy arrays because torch's per-operation overhead dominates on their small
matrices (tools/panel_bench.py). The loop is written once (``..._unchecked``) and its checked public twin calls it
with torch tensors; here the two array types give the same results to rounding, and the negative control of each
(one step more, or a different step size) moves the result by far more than the tolerance.
"""
import numpy as np
import torch

from clbook.dynamics import deeplinear as dl
from clbook.dynamics import dual
from clbook.dynamics import relu2layer as r2
from clbook.dynamics import stiefel as st


def test_deeplinear_train_on_numpy_arrays():
    batch = dl.contrastive_batch(32, 10, gap=1.0, augmentation=0.5, seed=0)
    X = batch.X / float(batch.eigenvalues[0])
    weights = dl.random_weights([10, 8, 8, 6], n_starts=2, seed=1)
    for normalization in dl.NORMALIZATIONS:
        start = [W.numpy() for W in dl.project(weights, normalization)]
        for layer_scaled in (False, True):
            kw = dict(eta=0.3, record_every=5, layer_scaled=layer_scaled, normalization=normalization)
            ref = dl.train(X, weights, steps=60, **kw)
            got = dl.train_unchecked(X.numpy(), start, steps=60, **kw)
            assert np.array_equal(got.steps, ref.steps) and got.stopping_reason == ref.stopping_reason
            np.testing.assert_allclose(got.energy, ref.energy, rtol=0, atol=1e-12)
            np.testing.assert_allclose(got.singular_values, ref.singular_values, rtol=0, atol=1e-12)
            for a, b in zip(got.weights, ref.weights, strict=True):
                assert isinstance(a, torch.Tensor)
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-12)
            off = dl.train_unchecked(X.numpy(), start, steps=61, **kw)
            assert np.abs(off.energy[-1] - ref.energy[-1]).max() > 1e-6
    stop = dict(steps=5000, eta=0.3, tol=1e-6)
    ref, got = dl.train(X, weights, **stop), dl.train_unchecked(X.numpy(), [W.numpy() for W in dl.project(weights)], **stop)
    assert got.stopping_reason == ref.stopping_reason and got.steps[-1] == ref.steps[-1] < 5000


def test_sticky_ascent_on_numpy_arrays():
    problem = r2.make_problem(modes=6, gamma_range=(0.05, 4.0), seed=0)
    W1, W2 = r2.random_start(2, 8, 6, 20, seed=1)
    X = problem.X / problem.X.abs().max()
    for kw in (dict(), dict(sticky=False), dict(train_top=False), dict(record_every=7, keep_trajectory=True),
               dict(tol=1e-9)):
        ref = r2.sticky_ascent(W1, W2, X, eta=0.2, steps=1500, **kw)
        got = r2.sticky_ascent_unchecked(W1.numpy(), W2.numpy(), X.numpy(), eta=0.2, steps=1500, **kw)
        assert (got.steps, got.stopping_reason) == (ref.steps, ref.stopping_reason)
        for field in ("W1", "W2", "energy", "history", "last_change", "trajectory"):
            a, b = getattr(got, field), getattr(ref, field)
            assert (a is None) == (b is None)
            if a is not None:
                assert isinstance(a, torch.Tensor) and a.shape == b.shape
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-12)
        assert torch.equal(got.W1 == 0, ref.W1 == 0)  # the same sticky zeros
    other = r2.sticky_ascent_unchecked(W1.numpy(), W2.numpy(), X.numpy(), eta=0.1, steps=1500)
    assert (other.W1 - ref.W1).abs().max() > 1e-6


def test_stiefel_train_on_numpy_arrays():
    lam = torch.tensor([-0.5, 0.3, 0.6, 1.0], dtype=torch.float64)
    M0 = torch.tensor([[0.3], [-0.5], [0.6], [0.55]], dtype=torch.float64) * 0.5
    W1, W2 = st.embed_weights(M0, 12, generator=torch.Generator().manual_seed(0))
    C = torch.diag(lam)
    for scheme in st.SCHEMES:
        for retraction in ("qr", "polar"):
            kw = dict(eta=0.01, steps=200, scheme=scheme, retraction=retraction)
            ref = st.train(W1, W2, C, **kw)
            got = st.train_unchecked(W1.numpy(), W2.numpy(), C.numpy(), **kw)
            for field in ("t", "M", "loss", "W1", "W2"):
                a, b = getattr(got, field), getattr(ref, field)
                assert isinstance(a, torch.Tensor) and a.shape == b.shape
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-12)
            assert got.constraint_error < 1e-12 and got.stopping_reason == ref.stopping_reason
    other = st.train_unchecked(W1.numpy(), W2.numpy(), C.numpy(), eta=0.02, steps=200)
    assert (other.M[-1] - ref.M[-1]).abs().max() > 1e-6


def test_dual_alternating_on_numpy_arrays():
    for d, delta, b in ((3, 0.3, 0.1), (2, 0.5, 0.0)):
        eye = torch.eye(d, dtype=torch.float64)
        g = torch.Generator().manual_seed(2)
        W0, W1 = (eye + delta * (2 * torch.rand(d, d, generator=g, dtype=torch.float64) - 1) * (1 - eye) for _ in range(2))
        Wo, Wt = W0 / W0.norm(dim=1, keepdim=True), W1 / W1.norm(dim=1, keepdim=True)
        kw = dict(keep=0.8, sparsity=0.5, eta=1.0 / (0.8**2 * 0.5), inner_steps=25, rounds=3)
        ref = dual.alternating(Wo, Wt, b, **kw)
        got = dual.alternating_unchecked(Wo.numpy(), Wt.numpy(), b, **kw)
        for field in ("Wo", "Wt", "offdiag", "diag", "inner_change"):
            a, r = getattr(got, field), getattr(ref, field)
            assert isinstance(a, torch.Tensor) and a.shape == r.shape
            np.testing.assert_allclose(a.numpy(), r.numpy(), rtol=0, atol=1e-12)
        assert got.regime.tolist() == ref.regime.tolist()
        if d == 3:  # (d = 2 with b = 0 has converged: one round more changes nothing)
            other = dual.alternating_unchecked(Wo.numpy(), Wt.numpy(), b, **(kw | {"rounds": 4}))
            assert (other.Wo - got.Wo).abs().max() > 1e-6
