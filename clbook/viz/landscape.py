"""Figures of Chapter 15 (the landscape of Theorem 1 of Pokle et al. 2022).

the flat valley of the non-contrastive loss, as a panel.

Compute lives in :mod:`clbook.dynamics.landscape`; this module draws.
"""
from __future__ import annotations

import torch

from .. import linalg, widgets
from .._validate import check_in_range, check_int
from ..config import defaults, generator, rand, randn
from ..dynamics import landscape
from ..metrics import maxcos
from . import figure

__all__ = ["valley", "PANELS"]


def valley(keep: float = 0.5, d: int = 10, seed: int = 0, n: int = 120):
    r"""Loss :math:`L_{\text{non-CL}}(W, W)` against the minimum max-cosine.

    For non-negative matrices of :math:`\mathcal U`
    with a varying fraction of zeros (dense to permutation-like), collapsed ones, and signed ones.

    Every non-negative matrix sits on :math:`L = 2 - 2\alpha^2` whatever its max-cosine; only signed matrices lie
    above. ``keep`` :math:`\alpha\in[0.05, 1]`, ``2 <= d <= 40``, ``seed >= 0``, ``n`` matrices per family
    (``4 <= n <= 500``). Returns the figure.
    """
    keep = check_in_range("keep", keep, 0.05, 1.0)
    d, n = check_int("d", d, 2, 40), check_int("n", n, 4, 500)
    gen = generator(check_int("seed", seed, 0))
    device, dtype = defaults()
    density = torch.linspace(0.05, 1.0, n, device=device, dtype=dtype).reshape(n, 1, 1)
    G = rand(n, d, d, generator=gen)
    nonneg = G * (rand(n, d, d, generator=gen) < density)
    empty = (nonneg.norm(dim=-2, keepdim=True) == 0).to(dtype)
    nonneg = nonneg + torch.eye(d, device=device, dtype=dtype) * empty
    families = {"non-negative": linalg.unit_columns(nonneg),
                "collapsed": torch.full((4, d, d), d**-0.5, device=device, dtype=dtype),
                "signed": linalg.unit_columns(randn(n, d, d, generator=gen))}
    eye = torch.eye(d, device=device, dtype=dtype)
    fig, ax = figure(width=5.6, height=3.3, margins=True)
    for name, W in families.items():
        x = maxcos.max_cosine_summary(W, eye).minimum.detach().cpu().numpy()
        ax.scatter(x, landscape.ncl_onehot(W, keep=keep).detach().cpu().numpy(), s=12, label=name)
    ax.axhline(2 - 2 * keep**2, color="k", lw=0.8, ls="--", label=r"$2-2\alpha^2$")
    ax.set_xlabel("minimum max-cosine")
    ax.set_ylabel(r"$L_{\mathrm{non\text{-}CL}}(W,W)$")
    ax.legend(fontsize=8)
    return fig


def _valley_controls() -> dict:
    return {
        "keep": widgets.slider("keep α", 0.5, 0.05, 1.0, 0.05),
        "d": widgets.int_slider("d", 10, 3, 30),
        "seed": widgets.int_slider("seed", 0, 0, 20),
    }


PANELS = [widgets.PanelSpec("Chapter 15", valley, _valley_controls)]
