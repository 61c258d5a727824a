"""The panels' numpy kernels against the package's torch functions they stand in for (issue: one concept, one meaning).

Four panels run a training loop in numpy because torch's per-operation overhead dominates on their small matrices
(tools/panel_bench.py). Each kernel is a second implementation of a package function, so each is held to it here:
same start, same steps, results equal to rounding. The negative control of each: one step more (or a different
step size) moves the result by far more than the tolerance.
"""
import numpy as np
import torch

from clbook.dynamics import deeplinear as dl
from clbook.dynamics import dual
from clbook.dynamics import relu2layer as r2
from clbook.dynamics import stiefel as st
from clbook.viz import deeplinear as viz_dl
from clbook.viz import dual as viz_dual
from clbook.viz import relu2layer as viz_r2
from clbook.viz import stiefel as viz_st


def test_deeplinear_train_in_numpy():
    batch = dl.contrastive_batch(32, 10, gap=1.0, augmentation=0.5, seed=0)
    X = batch.X / float(batch.eigenvalues[0])
    weights = dl.random_weights([10, 8, 8, 6], n_starts=1, seed=1)
    for layer_scaled in (False, True):
        ref = dl.train(X, weights, steps=60, eta=0.3, record_every=5, layer_scaled=layer_scaled)
        got = viz_dl._train_numpy(X, weights, steps=60, eta=0.3, record_every=5, layer_scaled=layer_scaled)
        assert np.array_equal(got.steps, ref.steps)
        np.testing.assert_allclose(got.energy, ref.energy, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got.singular_values, ref.singular_values, rtol=0, atol=1e-12)
        off = viz_dl._train_numpy(X, weights, steps=61, eta=0.3, record_every=5, layer_scaled=layer_scaled)
        assert np.abs(off.energy[-1] - ref.energy[-1]).max() > 1e-6


def test_sticky_ascent_in_numpy():
    problem = r2.make_problem(modes=6, gamma_range=(0.05, 4.0), seed=0)
    W1, W2 = r2.random_start(1, 8, 6, 20, seed=1)
    X = problem.X / problem.X.abs().max()
    ref = r2.sticky_ascent(W1, W2, X, eta=0.2, steps=300)
    g1, g2, _ = viz_r2._sticky_numpy(W1[0], W2[0], X, eta=0.2, steps=300)
    np.testing.assert_allclose(g1, ref.W1[0].numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(g2, ref.W2[0].numpy(), rtol=0, atol=1e-12)
    assert np.array_equal(g1 == 0, ref.W1[0].numpy() == 0)  # the same sticky zeros
    o1, _, _ = viz_r2._sticky_numpy(W1[0], W2[0], X, eta=0.1, steps=300)
    assert np.abs(o1 - g1).max() > 1e-6


def test_paper_gd_in_numpy():
    lam = torch.tensor([-0.5, 0.3, 0.6, 1.0], dtype=torch.float64)
    M0 = torch.tensor([[0.3], [-0.5], [0.6], [0.55]], dtype=torch.float64) * 0.5
    W1, W2 = st.embed_weights(M0, 12, generator=torch.Generator().manual_seed(0))
    ref = st.train(W1, W2, torch.diag(lam), eta=0.01, steps=200, scheme="paper", retraction="qr")
    Ms, _, _ = viz_st.paper_gd_numpy(W1, W2, torch.diag(lam), eta=0.01, steps=200)
    np.testing.assert_allclose(Ms, ref.M.numpy(), rtol=0, atol=1e-12)
    other, _, _ = viz_st.paper_gd_numpy(W1, W2, torch.diag(lam), eta=0.02, steps=200)
    assert np.abs(other[-1] - Ms[-1]).max() > 1e-6


def test_alternating_in_numpy():
    eye = torch.eye(3, dtype=torch.float64)
    g = torch.Generator().manual_seed(2)
    W0, W1 = (eye + 0.3 * (2 * torch.rand(3, 3, generator=g, dtype=torch.float64) - 1) * (1 - eye) for _ in range(2))
    Wo, Wt = W0 / W0.norm(dim=1, keepdim=True), W1 / W1.norm(dim=1, keepdim=True)
    kw = dict(keep=0.8, sparsity=0.5, eta=1.0 / (0.8**2 * 0.5), inner_steps=25, rounds=3)
    ref = dual.alternating(Wo, Wt, 0.1, **kw)
    got = viz_dual._alternating_numpy(Wo, Wt, 0.1, **kw)
    np.testing.assert_allclose(np.asarray(got.Wo), ref.Wo.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(got.Wt), ref.Wt.numpy(), rtol=0, atol=1e-10)
    assert list(got.regime) == list(ref.regime)
    other = viz_dual._alternating_numpy(Wo, Wt, 0.1, **(kw | {"rounds": 4}))
    assert np.abs(np.asarray(other.Wo) - np.asarray(got.Wo)).max() > 1e-6
