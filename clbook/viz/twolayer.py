r"""Figures of Chapter 9: Theorem 6's basin under global modulation and Eq. 155 (Tian 2023, Sec. 4, App. C.5).

Compute lives in :mod:`clbook.dynamics.twolayer`; :func:`basin_panel` (the chapter's panel) takes only the control values
(a simulation panel: 9 projected flows of ``samples`` starts, under a second).
"""
from __future__ import annotations

import functools

import torch

from .. import widgets
from ..config import defaults
from ..dynamics import twolayer as tl
from . import figure

__all__ = ["basin_panel", "PANELS"]


@functools.lru_cache(maxsize=64)
def _fractions(dim, b, samples, setup_key):
    """The 9 basin fractions of :func:`basin_panel`, cached per control value.

    Moving a control back shows them again
    at once; ``setup_key``, the device and dtype of ``clbook.setup``, is part of the key.
    """
    cs = torch.linspace(0, 2, 9, dtype=torch.float64).tolist()
    return [tl.sphere_basin_fraction(dim, c, b=b, samples=samples, steps=200, dt=0.075) for c in cs]


def basin_panel(dim: int = 5, b: float = 0.5, samples: int = 1000):
    r"""Left.

    the fraction of ``samples`` random starts reaching :math:`+\mathbf u_1` under the projected flow of
    :func:`~clbook.dynamics.twolayer.sphere_basin_fraction` (200 Euler steps of 0.075) for 9 modulations :math:`c\in[0,
    2]`; right: Eq. 155 against :math:`\epsilon` (:func:`~clbook.dynamics.twolayer.win_probability`). ``dim`` in [2,
    20], ``b`` in [0.1, 2], ``samples`` in [200, 2000]. Returns the figure.
    """
    cs = torch.linspace(0, 2, 9, dtype=torch.float64).tolist()
    fig, (ax1, ax2) = figure(ncols=2, width=8.0, height=3.0, margins=True)
    ax1.plot(cs, _fractions(dim, b, samples, str(defaults())), marker="o", ms=3)
    ax1.axhline(1 / dim, color="0.6", ls="--", lw=0.8, label="1/dim")
    ax1.set(xlabel="modulation c", ylabel="fraction reaching +u₁")
    ax1.legend()
    eps = torch.linspace(-0.99, 1.5, 200, dtype=torch.float64).tolist()
    ax2.plot(eps, [tl.win_probability(dim, e) for e in eps])
    ax2.set(xlabel="ε", ylabel="P[E_l] (Eq. 155)")
    return fig


def _controls() -> dict:
    return {
        "dim": widgets.int_slider("dimension", 5, 2, 20),
        "b": widgets.slider("b", 0.5, 0.1, 2.0, 0.1),
        "samples": widgets.int_slider("starts", 1000, 200, 2000, 200),
    }


PANELS = [widgets.PanelSpec("Chapter 9", basin_panel, _controls)]
