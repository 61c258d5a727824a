r"""Figures of Chapter 5: the finite-batch contrastive covariance against its large-batch limit (Tian 2023, Lemma 2).

Compute lives in :mod:`clbook.kernels`; :func:`psd_panel` (the chapter's panel) takes only the control values (an analytic
panel: 100 eigen-decompositions of 5×5 matrices).
"""
from __future__ import annotations

from .. import widgets
from ..config import generator
from ..kernels import batch_min_eigenvalues
from . import figure

__all__ = ["plot_min_eigenvalues", "psd_panel", "SCALES", "PANELS"]

SCALES = (1.0, 1.0, 1.0, 0.3, 0.1)
"""The data of the chapter's example: :math:`x_0\\sim\\mathcal N(0, \\operatorname{diag}(1, 1, 1, 0.09, 0.01))`."""


def plot_min_eigenvalues(values, *, limit: float, ax=None):
    """Histogram of the smallest eigenvalues ``values`` of finite-batch covariances.

    With the limit's smallest eigenvalue
    (dashed) and zero (dotted); the title gives the fraction of indefinite batches. Returns the axes.
    """
    import torch

    values = torch.as_tensor(values).detach().cpu()
    if ax is None:
        _, ax = figure(width=5.6, height=3.0)
    ax.hist(values.numpy(), bins=30)
    ax.axvline(limit, color="k", ls="--", label=f"limit: λ_min = {limit:g}")
    ax.axvline(0.0, color="C3", ls=":")
    ax.set_xlabel(r"$\lambda_{\min}(\mathbb{C}^{(N)}_\alpha[x])$ over the batches")
    ax.set_title(f"not PSD: {100 * float((values < 0).double().mean()):.0f}% of batches", fontsize=9)
    ax.legend()
    return ax


def psd_panel(n: int = 64, noise: float = 1.0):
    r"""Chapter 5's panel.

    the distribution of :math:`\lambda_{\min}(\mathbb C^{(N)}_\alpha[x])` over 100 batches of size ``n`` in [4, 512]
    with augmentation noise ``noise`` in [0, 2] (uniform :math:`\alpha`, the data of :data:`SCALES`). Returns the
    figure.
    """
    fig, ax = figure(width=5.6, height=3.0, margins={"top": 0.35})
    values = batch_min_eigenvalues(int(n), 100, scales=SCALES, noise=noise, generator=generator(1))
    plot_min_eigenvalues(values, limit=min(SCALES) ** 2, ax=ax)
    return fig


def _controls() -> dict:
    return {"n": widgets.int_slider("N", 64, 4, 512), "noise": widgets.slider("σ_aug", 1.0, 0.0, 2.0, 0.05)}


PANELS = [widgets.PanelSpec("Chapter 5", psd_panel, _controls)]
