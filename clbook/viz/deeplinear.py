r"""Figure 2 of Tian (2022), α-CL (Chapter 2): DeepLin trained with a fixed :math:`\alpha`.

Compute lives in :mod:`clbook.dynamics.deeplinear` (:func:`~clbook.dynamics.deeplinear.train`,
:func:`~clbook.dynamics.deeplinear.figure2_data`); this module draws. :func:`figure2` takes a training result;
:func:`figure2_panel` (the chapter's panel) takes only the control values and trains (a training panel, under 2 s).
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from .. import widgets
from .._validate import check_int, check_nonnegative, check_positive
from ..dynamics import deeplinear as dl
from . import figure

__all__ = ["figure2", "figure2_panel", "PANEL", "PANELS"]


def figure2(result, *, start: int = 0, margins=None):
    r"""A :class:`~clbook.dynamics.deeplinear.TrainResult` as the paper's Fig. 2.

    left, :math:`\mathcal E/\lambda_{\max}` against steps; right, :math:`\sigma_1` (solid) and :math:`\sigma_2` (dashed)
    of every layer. ``margins``: as for :func:`clbook.viz.figure` (a panel's fixed margins). Returns the figure.
    """
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
    r"""Chapter 2's panel.

    the run of :func:`clbook.dynamics.deeplinear.figure2_data` (800 steps, seed 1, recorded every 5 steps) drawn by
    :func:`figure2`; the training is :func:`clbook.dynamics.deeplinear.train`'s loop run on numpy arrays
    (:func:`~clbook.dynamics.deeplinear.train_unchecked`, the same products, a few times faster on these small
    matrices than on torch tensors).

    ``1 <= depth <= 8``, ``2 <= width <= 16``, ``gap`` in [0, 3], ``augmentation`` in [0, 1] (above about 1.2 the
    batch's :math:`\lambda_{\max}(X_\alpha)` turns negative and Theorem 3 no longer applies), ``eta`` in
    [0.01, 0.6]. Returns the figure.
    """
    depth, width = check_int("depth", depth, 1, 8), check_int("width", width, 2, 64)
    batch = dl.contrastive_batch(32, 10, gap=check_nonnegative("gap", gap),
                                 augmentation=check_nonnegative("augmentation", augmentation), seed=0)
    lam = float(batch.eigenvalues[0])
    if lam <= 0:
        raise ValueError(f"lambda_max(X_alpha) = {lam:.3g} <= 0: lower the augmentation (Theorem 3 needs lambda_max > 0).")
    weights = dl.random_weights([10] + [width] * (depth - 1) + [6], n_starts=1, seed=1)
    result = dl.train_unchecked((batch.X / lam).cpu().numpy(), [W.cpu().numpy() for W in dl.project(weights)], steps=800,
                                eta=check_positive("eta", eta), record_every=5, layer_scaled=bool(layer_scaled))
    return figure2(result, margins=True)


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
