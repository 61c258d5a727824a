r"""Figures of Chapter 3 (Tian 2022, α-CL, Sec. 5).

ReLU2Layer's sticky dynamics, the modes one node picks, and the paper's Fig. 3.

Compute lives in :mod:`clbook.dynamics.relu2layer`; this module draws. :func:`fig3_panel` (the chapter's panel, a
training panel of about a second) takes only the control values; the other functions take their data.
"""
from __future__ import annotations

import numpy as np
import torch

from .. import widgets
from .._validate import check_in_range, check_int
from ..dynamics import relu2layer as r2
from . import figure

__all__ = ["trajectories", "mode_wins", "fig3", "fig3_panel", "PANEL", "PANELS"]


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=float)


def trajectories(pairs, *, record_every: int = 10, entries: int = 8):
    r"""Theorem 4.

    entries of :math:`[W_1]_+` along the ReLU network's autograd run (thick) and the sticky linear run (dashed), one
    panel per ``(title, relu_run, sticky_run)`` in ``pairs``.

    ``relu_run`` is a :class:`~clbook.dynamics.relu2layer.ReluRun`, ``sticky_run`` a
    :class:`~clbook.dynamics.relu2layer.StickyRun` with ``keep_trajectory`` (start 0 is drawn); both recorded every
    ``record_every`` steps; the first ``entries`` entries of :math:`W_1` are drawn. Returns the figure.
    """
    pairs = list(pairs)
    if not pairs:
        raise ValueError("pairs must hold at least one (title, relu_run, sticky_run).")
    fig, axes = figure(ncols=len(pairs), width=4.0 * len(pairs), height=3.0, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, (title, relu, sticky) in zip(axes, pairs, strict=True):
        if sticky.trajectory is None:
            raise ValueError(f"{title}: the sticky run must be made with keep_trajectory=True.")
        t = record_every * np.arange(1, len(relu.clipped_trajectory) + 1)
        a = _np(relu.clipped_trajectory.reshape(len(t), -1))
        b = _np(sticky.trajectory[:, 0].reshape(len(t), -1))
        ax.plot(t, a[:, :entries], lw=2.5, alpha=0.4)
        ax.set_prop_cycle(None)
        ax.plot(t, b[:, :entries], ls="--", lw=1)
        ax.set_xlabel("step")
        ax.text(0.97, 0.95, title, transform=ax.transAxes, ha="right", va="top")
    axes[0].set_ylabel("entries of $[W_1]_+$")
    return fig


def mode_wins(wins, diagonal):
    r"""Theorem 5.

    how many starts end at each :math:`e_m` (bars) beside :math:`X_{mm}` (line). ``wins`` and ``diagonal``: vectors of
    length :math:`M`. Returns the figure.
    """
    w, x = _np(wins), _np(diagonal)
    if w.shape != x.shape or w.ndim != 1:
        raise ValueError(f"wins and diagonal must be vectors of the same length; got shapes {w.shape} and {x.shape}.")
    fig, ax = figure(width=6.0, height=3.0)
    m = np.arange(len(w))
    ax.bar(m, w, color="C0", label="starts ending at $e_m$")
    ax2 = ax.twinx()
    ax2.plot(m, x, "o-", color="C3", label="$X_{mm}$ (scaled)")
    ax.set_xlabel("mode $m$")
    ax.set_ylabel("count")
    ax2.set_ylabel("$X_{mm}$")
    fig.legend(loc="upper right", bbox_to_anchor=(0.88, 0.88))
    return fig


def fig3(problem, run, *, start: int = 0, margins=None):
    r"""The paper's Fig. 3.

    heat maps of the converged :math:`W_1` and :math:`W_2^\top W_2` of ``run`` (a
    :class:`~clbook.dynamics.relu2layer.StickyRun` on ``problem``, a :class:`~clbook.dynamics.relu2layer.Problem`).

    The title reports :math:`\max_m X_{mm}` and :math:`\lambda_{\max}(X_\alpha)` (both divided by the largest entry
    of :math:`|X_\alpha|`), the energy and the numerical rank of :math:`W_1`. ``margins``: as for
    :func:`clbook.viz.figure` (a panel's fixed margins). Returns the figure.
    """
    fig, (a1, a2) = figure(ncols=2, width=7.2, height=3.2, margins=margins)
    w1 = _np(run.W1[start])
    gram = _np(run.W2[start].T @ run.W2[start])
    im1 = a1.imshow(w1, cmap="viridis", aspect="auto")
    a1.set_xlabel("mode $m$")
    a1.set_ylabel("hidden node $k$")
    fig.colorbar(im1, ax=a1)
    lim = abs(gram).max()
    im2 = a2.imshow(gram, cmap="RdBu_r", vmin=-lim, vmax=lim)
    a2.set_xlabel("hidden node")
    fig.colorbar(im2, ax=a2)
    scale = float(problem.X.abs().max())
    diag, lam = float(torch.diagonal(problem.X).max()) / scale, float(torch.linalg.eigvalsh(problem.X)[-1]) / scale
    rank = int(r2.numerical_rank(run.W1[start]))
    fig.suptitle(f"$W_1$ (left), $W_2^\\top W_2$ (right); max X_mm = {diag:.2f}, λ_max = {lam:.2f}, "
                 f"E = {float(run.energy[start]):.2f}, rank W1 = {rank}", fontsize=9)
    return fig


def fig3_panel(gamma_low: float = 0.05, gamma_high: float = 4.0, modes: int = 8, hidden: int = 10, seed: int = 0):
    r"""Chapter 3's panel.

    the run of :func:`clbook.dynamics.relu2layer.fig3_run` (3000 sticky steps, 20 outputs, step 0.2) drawn by
    :func:`fig3`; the sticky ascent is :func:`clbook.dynamics.relu2layer.sticky_ascent`'s loop run on numpy arrays
    (:func:`~clbook.dynamics.relu2layer.sticky_ascent_unchecked`, the same steps, several times faster on these
    small matrices than on torch tensors).

    ``gamma_low`` in [0.01, 1], ``gamma_high`` in [1, 5], ``2 <= modes <= 12``, ``1 <= hidden <= 16``,
    ``0 <= seed <= 20``. Returns the figure.
    """
    check_in_range("gamma_low", gamma_low, 0.01, 1.0)
    check_in_range("gamma_high", gamma_high, 1.0, 5.0)
    check_int("modes", modes, 2, 12)
    check_int("hidden", hidden, 1, 16)
    check_int("seed", seed, 0, 20)
    problem = r2.make_problem(modes=modes, gamma_range=(gamma_low, gamma_high), seed=seed)
    W1, W2 = r2.random_start(1, hidden, modes, 20, seed=seed + 1)
    X = problem.X / problem.X.abs().max()
    run = r2.sticky_ascent_unchecked(*(A.cpu().numpy() for A in (W1, W2, X)), eta=0.2, steps=3000, record_every=3000)
    return fig3(problem, run, margins={"left": 0.6, "right": 0.45, "top": 0.35, "wspace": 0.7})


def _controls() -> dict:
    return {
        "gamma_low": widgets.slider("γ low", 0.05, 0.01, 1.0, 0.01),
        "gamma_high": widgets.slider("γ high", 4.0, 1.0, 5.0, 0.1),
        "modes": widgets.int_slider("modes M", 8, 2, 12),
        "hidden": widgets.int_slider("hidden K", 10, 1, 16),
        "seed": widgets.int_slider("seed", 0, 0, 20),
    }


PANEL = widgets.PanelSpec("Chapter 3", fig3_panel, _controls)
PANELS = [PANEL]
