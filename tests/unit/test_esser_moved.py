"""Checks moved out of Chapter 11 (Esser et al. 2023): they test the package against itself, not the paper.

A loss against a loop over anchors, and the eigenbasis closed form against ``torch.linalg.matrix_exp``, are the same
formula computed twice; they can fail only through a bug in ``clbook.dynamics.ssl``, so they are unit tests, not
evidence for a result of the paper (see the chapter's checks for that).
"""
import pytest
import torch

import clbook
from clbook.data import views
from clbook.dynamics import ssl


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0, device="cpu")


def _moons_network():
    X, Xp, Xn = views.moons_views(200, noise=0.05, variance=0.1, seed=0)
    g = clbook.generator(1)
    W1, W2 = clbook.randn(10, 2, generator=g), clbook.randn(10, 3, generator=g)
    return X, Xp, Xn, (lambda A: A @ (W1.T @ W2))


def test_contrastive_loss_against_a_loop_over_anchors():
    X, Xp, Xn, u = _moons_network()
    loop = sum(float(u(X)[i] @ (u(Xn)[i] - u(Xp)[i])) for i in range(len(X)))
    assert ssl.contrastive_loss(u(X), u(Xp), u(Xn)) == pytest.approx(loop, rel=1e-12)


def test_noncontrastive_loss_against_a_loop_over_anchors():
    X, Xp, _, u = _moons_network()
    loop = sum(-float(u(X)[i] @ u(Xp)[i]) for i in range(len(X)))
    assert ssl.noncontrastive_loss(u(X), u(Xp)) == pytest.approx(loop, rel=1e-12)


def test_linear_closed_form_against_matrix_exp_on_chapter_11_data():
    g = clbook.generator(4)
    V = views.gaussian_views(views.gaussian_anchors(500, torch.linspace(2, 0.3, 6), generator=g), variance=0.1, generator=g)
    C = ssl.trace_matrix(*V)
    theta0 = clbook.randn(4, 6, generator=g)
    ts = torch.linspace(0.0, 2.0, 41)
    closed = ssl.linear_closed_form(theta0, C, ts)
    via_exp = torch.stack([theta0 @ torch.linalg.matrix_exp(-2 * C * t) for t in ts])
    scale = closed.abs().max()
    torch.testing.assert_close(closed / scale, via_exp / scale, atol=1e-12, rtol=0)
