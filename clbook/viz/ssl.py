r"""Figures of Chapter 11 (Esser et al. 2023, Sec. 2-3): collapse of the linear flow, and Example 1 / Fig. 1.

Compute lives in :mod:`clbook.dynamics.ssl` and :mod:`clbook.data.views`; this module draws.
:func:`singular_values` takes a trajectory's singular values; :func:`fig1` takes the runs of
:func:`clbook.dynamics.ssl.gd_two_layer`; :func:`fig1_panel` (the chapter's panel, a training panel of about a second)
takes only the control values.
"""
from __future__ import annotations

import torch

from .. import widgets
from .._validate import check_int
from ..config import generator
from ..data.views import moons_views
from ..dynamics import ssl, stiefel
from ..linalg import haar_orthonormal
from . import COLORS, figure, light_log_ticks

__all__ = ["singular_values", "moons_run", "fig1", "fig1_panel", "PANEL", "PANELS"]


def singular_values(times, sv):
    r"""Left.

    the singular values ``sv [T, k]`` of :math:`\Theta_t` against ``times [T]`` (log scale); right,
    :math:`\sigma_2/\sigma_1`. Returns the figure.
    """
    times, sv = torch.as_tensor(times).cpu(), torch.as_tensor(sv).cpu()
    fig, (a1, a2) = figure(ncols=2, width=8.0, height=3.0)
    a1.semilogy(times, sv)
    a1.set_xlabel("t")
    a1.set_ylabel(r"singular values of $\Theta_t$")
    a2.semilogy(times, sv[:, 1] / sv[:, 0], color=COLORS[1])
    a2.set_xlabel("t")
    a2.set_ylabel(r"$\sigma_2/\sigma_1$")
    return fig


def moons_run(C, *, constraint: str, z: int, seed: int, steps: int, h: int = 10, eta: float = 0.01) -> ssl.GDResult:
    r"""Example 1's run.

    Haar weights ``[h, d]``, ``[h, z]`` drawn with ``clbook.generator(100 + seed)``, then
    :func:`clbook.dynamics.ssl.gd_two_layer` on :math:`C` (divergence declared at a loss below :math:`-10^{10}`). ``seed
    >= 0``, ``h >= max(d, z)``; the other arguments as for ``gd_two_layer``.
    """
    C = torch.as_tensor(C)
    seed, z = check_int("seed", seed, 0), check_int("z", z, 1)
    h = check_int("h", h, max(C.shape[0], z))
    g = generator(100 + seed)
    W1, W2 = haar_orthonormal(h, C.shape[0], generator=g), haar_orthonormal(h, z, generator=g)
    return ssl.gd_two_layer(W1, W2, C, eta=eta, steps=steps, constraint=constraint, blowup=1e10)


def fig1(runs: dict, anchors, *, margins=None):
    r"""Our Fig. 1: ``runs`` maps ``(constraint, seed)`` to a :class:`~clbook.dynamics.ssl.GDResult` (``z = 1``).

    Left, the loss of every run (symmetric log scale; a diverging run leaves the plot); right, the outputs
    :math:`u_t(x) = x^\top W_1^\top W_2` of the ``anchors [k, d]`` for the orthogonal and unconstrained runs.
    ``margins``: as for :func:`clbook.viz.figure` (a panel's fixed margins).
    """
    anchors = torch.as_tensor(anchors)
    fig, (a1, a2) = figure(ncols=2, width=9.0, height=3.2, margins=margins)
    names = list(dict.fromkeys(c for c, _ in runs))
    labelled = set()
    for (c, _), r in runs.items():
        color = COLORS[names.index(c) % len(COLORS)]
        steps = torch.arange(len(r.losses))
        a1.plot(steps, r.losses.cpu(), color=color, lw=1.2, label=None if c in labelled else c)
        labelled.add(c)
        if c in ("orthogonal", "none"):
            a2.plot(steps, (anchors.to(r.products) @ r.products[:, :, 0].T).T.cpu(), color=color, lw=0.8, alpha=0.8)
    a1.set_yscale("symlog", linthresh=1.0)
    a1.set_ylim(-1e3, 1)
    a1.set_xlabel("step")
    a1.set_ylabel("loss")
    a1.legend()
    a2.set_ylim(-2.5, 2.5)
    a2.set_xlabel("step")
    a2.set_ylabel(r"$u_t(x)$, 5 anchors")
    return fig


def _moons_orthogonal(C, *, seed: int, steps: int, h: int = 10, eta: float = 0.01) -> ssl.GDResult:
    r""":func:`moons_run` with ``constraint="orthogonal"``, ``z = 1``.

    the same Haar start, its gradient descent run by :func:`clbook.dynamics.stiefel.train_unchecked` on numpy arrays
    (the same updates; the loss is bounded on the Stiefel manifolds, so the divergence stop never fires).
    """
    g = generator(100 + seed)
    W1, W2 = haar_orthonormal(h, C.shape[0], generator=g), haar_orthonormal(h, 1, generator=g)
    run = stiefel.train_unchecked(*(A.cpu().numpy() for A in (W1, W2, C)), eta=eta, steps=steps)
    return ssl.GDResult(run.W1.to(C), run.W2.to(C), run.loss.to(C), run.M.to(C), int(steps), "steps")


def fig1_panel(variance: float = 0.1, n: int = 200, constraint: str = "orthogonal", steps: int = 600):
    r"""Chapter 11's panel.

    Example 1 on ``n`` half moons with augmentation variance ``variance``, three initialisations under ``constraint``
    beside the unconstrained runs, ``z = 1`` (a training panel, about a second).

    ``variance`` in [1e-3, 3], ``20 <= n <= 1000``, ``constraint`` in :data:`clbook.dynamics.ssl.CONSTRAINTS`,
    ``100 <= steps <= 1000``. The orthogonal runs use :func:`_moons_orthogonal` (the same runs, in numpy).
    """
    x, xp, xn = moons_views(n, variance=variance, seed=0)
    C = ssl.trace_matrix(x, xp, xn)
    runs = {(c, s): _moons_orthogonal(C, seed=s, steps=steps) if c == "orthogonal" else
            moons_run(C, constraint=c, z=1, seed=s, steps=steps) for c in dict.fromkeys(("none", constraint)) for s in range(3)}
    return light_log_ticks(fig1(runs, x[:5], margins={"left": 0.8}))


def _controls() -> dict:
    return {
        "variance": widgets.log_slider("σ (augmentation variance)", 0.1, 1e-3, 3.0),
        "n": widgets.int_slider("n", 200, 20, 1000, 20),
        "constraint": widgets.dropdown("constraint", list(ssl.CONSTRAINTS), "orthogonal"),
        "steps": widgets.int_slider("steps", 600, 100, 1000, 100),
    }


PANEL = widgets.PanelSpec("Chapter 11", fig1_panel, _controls)
PANELS = [PANEL]
