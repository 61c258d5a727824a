r"""Figures of Chapter 12 (Esser et al. 2023, Sec. 4): nonlinear versus linear network, at initialisation and in training.

Compute lives in :mod:`clbook.dynamics.wide` and :mod:`clbook.experiments.wide`; this module draws.
:func:`gap_panel` (the chapter's panel, analytic: a few Haar draws) takes only the control values; :func:`fig2`
takes the record and the gaps of a sweep (:func:`clbook.experiments.wide.gaps`).
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt

from .. import widgets
from ..config import generator, randn
from ..dynamics import wide
from . import COLORS, figure, light_log_ticks

__all__ = ["gap_panel", "fig2", "PANEL", "PANELS"]

WIDTHS = (10, 30, 100, 300, 1000, 3000)


def gap_panel(activation: str = "tanh", x_norm: float = 3.0, d: int = 10, h: float = 300):
    r"""Chapter 12's panel.

    :math:`\|u^\phi - u^{\mathbb I}\|`, :math:`\|\epsilon\|` and Theorem 1's bound (with the constant of Lemma 2
    measured on each draw) against the width, 5 Haar draws per width, for one input of norm ``x_norm`` in dimension
    ``d``; the width ``h`` is marked.

    ``activation`` in :data:`clbook.dynamics.wide.ACTIVATIONS` (the bound is drawn where Theorem 1 applies),
    ``0.1 <= x_norm <= 30``, ``1 <= d <= 10``, ``10 <= h <= 3000``. Analytic (no training), well under a second.
    """
    g = generator(1)
    v = randn(d, generator=g)
    v = x_norm * v / v.norm()
    hs = [w for w in WIDTHS if w >= max(d, 2)]
    rs = [wide.init_gap(w, v, activation=activation, reps=5, generator=g) for w in hs]
    fig, ax = figure(width=5.6, height=3.2, margins={"left": 0.5})
    ax.loglog(hs, [float(r.gap.mean()) for r in rs], "o-", label="‖u^φ − u^I‖")
    ax.loglog(hs, [float(r.eps.mean()) for r in rs], "s--", label="‖ε‖")
    if math.isfinite(wide.CURVATURE[activation]) and activation not in ("sigmoid", "linear"):
        ax.loglog(hs, [float(r.bound.mean()) for r in rs], ":", color="k", label="Thm 1 bound")
    ax.axvline(h, color=COLORS[3], lw=1)
    ax.set_xlabel("width h")
    ax.legend()
    return light_log_ticks(fig)


def fig2(record, gaps: dict):
    r"""Our Fig. 2.

    ``gaps`` is ``{activation: {h: tensor [seeds, len(record)]}}`` of mean anchor gaps :math:`|u^\phi_t - u^{\mathbb
    I}_t|`. Row 1: the mean over seeds against the step, one line per width (colour); row 2: at initialisation and at
    the last step against the width. Returns the figure.
    """
    names = list(gaps)
    fig, axes = figure(ncols=len(names), nrows=2, width=10.0, height=5.6)
    cmap = plt.get_cmap("viridis")
    for col, a in enumerate(names):
        hs = sorted(gaps[a])
        for k, h in enumerate(hs):
            axes[0, col].semilogy(record, gaps[a][h].mean(0), color=cmap(k / max(len(hs) - 1, 1)), lw=1.2, label=f"h = {h}")
        axes[0, col].set_title(a)
        axes[0, col].set_xlabel("step")
        axes[1, col].loglog(hs, [float(gaps[a][h][:, 0].mean()) for h in hs], "o-", label="initialisation")
        axes[1, col].loglog(hs, [float(gaps[a][h][:, -1].mean()) for h in hs], "s-", label=f"step {record[-1]}")
        axes[1, col].set_xlabel("width h")
    axes[0, 0].set_ylabel("mean |u^φ_t − u^I_t|")
    axes[1, 0].set_ylabel("mean |u^φ − u^I|")
    axes[0, 0].legend(fontsize=7)
    axes[1, 0].legend(fontsize=8)
    return fig


def _controls() -> dict:
    return {
        "activation": widgets.dropdown("activation", list(wide.ACTIVATIONS[1:]), "tanh"),
        "x_norm": widgets.log_slider("‖x‖", 3.0, 0.1, 30.0),
        "d": widgets.int_slider("d", 10, 1, 10),
        "h": widgets.log_slider("marked width h", 300, 10, 3000),
    }


PANEL = widgets.PanelSpec("Chapter 12", gap_panel, _controls)
PANELS = [PANEL]
