r"""Figure 2 of Tian (2022), α-CL (Chapter 2): DeepLin trained with a fixed :math:`\alpha`.

Compute lives in :mod:`clbook.dynamics.deeplinear` (:func:`~clbook.dynamics.deeplinear.train`,
:func:`~clbook.dynamics.deeplinear.figure2_data`); this module draws. :func:`figure2` takes a training result;
:func:`figure2_panel` (the chapter's panel) takes only the control values and trains (a training panel, under 2 s).
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from .. import widgets
from ..dynamics import deeplinear as dl
from . import figure

__all__ = ["figure2", "figure2_panel", "PANEL", "PANELS"]


def figure2(result, *, start: int = 0, margins=None):
    r"""A :class:`~clbook.dynamics.deeplinear.TrainResult` as the paper's Fig. 2: left, :math:`\mathcal E/\lambda_{\max}`
    against steps; right, :math:`\sigma_1` (solid) and :math:`\sigma_2` (dashed) of every layer. ``margins``: as for
    :func:`clbook.viz.figure` (a panel's fixed margins). Returns the figure."""
    if not isinstance(result, dl.TrainResult):
        raise TypeError(f"result must be a clbook.dynamics.deeplinear.TrainResult; got {type(result).__name__}.")
    if not 0 <= start < result.energy.shape[1]:
        raise ValueError(f"start must index one of the {result.energy.shape[1]} starts; got start = {start}.")
    fig, (ax1, ax2) = figure(ncols=2, width=9.0, height=3.4, margins=margins)
    ax1.plot(result.steps, result.energy[:, start])
    ax1.axhline(1.0, color="#555555", lw=1, ls=":")
    ax1.set_xlabel("step")
    ax1.set_ylabel(r"$\mathcal{E}/\lambda_{\max}(X_\alpha)$")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for layer in range(result.singular_values.shape[2]):
        c = colors[layer % len(colors)]
        ax2.plot(result.steps, result.singular_values[:, start, layer, 0], color=c, label=f"$W_{layer + 1}$")
        ax2.plot(result.steps, result.singular_values[:, start, layer, 1], color=c, ls="--")
    ax2.set_xlabel("step")
    ax2.set_ylabel(r"$\sigma_1$ (solid), $\sigma_2$ (dashed)")
    ax2.legend(ncol=2, fontsize=8)
    return fig


def figure2_panel(depth: int = 5, width: int = 8, gap: float = 1.0, augmentation: float = 0.5, eta: float = 0.3,
                  layer_scaled: bool = False):
    """Chapter 2's panel: :func:`clbook.dynamics.deeplinear.figure2_data` (800 steps, seed 1) drawn by :func:`figure2`.

    ``1 <= depth <= 8``, ``2 <= width <= 16``, ``gap`` in [0, 3], ``augmentation`` in [0, 1] (above about 1.2 the
    batch's :math:`\\lambda_{\\max}(X_\\alpha)` turns negative and Theorem 3 no longer applies), ``eta`` in
    [0.01, 0.6]. Returns the figure.
    """
    return figure2(dl.figure2_data(depth=depth, width=width, gap=gap, augmentation=augmentation, eta=eta,
                                   layer_scaled=layer_scaled)[0], margins=True)


def _controls() -> dict:
    return {
        "depth": widgets.int_slider("depth L", 5, 1, 8),
        "width": widgets.int_slider("hidden width", 8, 2, 16),
        "gap": widgets.slider("eigen-gap", 1.0, 0.0, 3.0, 0.1),
        "augmentation": widgets.slider("augmentation", 0.5, 0.0, 1.0, 0.05),
        "eta": widgets.log_slider("step η", 0.3, 0.01, 0.6),
        "layer_scaled": widgets.toggle("layer-scaled step", False),
    }


PANEL = widgets.PanelSpec("Chapter 2", figure2_panel, _controls)
PANELS = [PANEL]
