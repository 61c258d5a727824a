"""Figures of Chapter 14 (the sparse-coding testbed of Pokle et al. 2022).

the testbed panel and the chance level of the max-cosine metric against the width.

Compute lives in :mod:`clbook.data.sparse_coding` and :mod:`clbook.metrics.maxcos`; these functions only draw.
"""
from __future__ import annotations

import torch

from .. import widgets
from .._validate import check_choice, check_in_range, check_int
from ..config import generator, randn
from ..data import sparse_coding as sc
from ..metrics import maxcos
from . import figure

__all__ = ["testbed", "chance_curve", "PANELS"]


def testbed(sparsity: float = 0.2, masking: float = 0.5, noise: float = 0.15, scheme: str = "independent", seed: int = 0):
    r"""A small instance of the testbed (:math:`p = 20`, :math:`d = 5`, :math:`m = 20`, twelve samples).

    latents, inputs, the two masked views, and the per-atom max-cosine of a random encoder with its chance band.

    ``sparsity`` :math:`\beta\in[0.05, 1]`, ``masking`` :math:`1-\alpha\in[0, 0.95]`, ``noise`` :math:`\sigma_0\in[0, 1]`,
    ``scheme`` ``"independent"`` or ``"dependent"``, ``seed >= 0``. Returns the figure.
    """
    sparsity = check_in_range("sparsity", sparsity, 0.05, 1.0)
    masking = check_in_range("masking", masking, 0.0, 0.95)
    noise = check_in_range("noise", noise, 0.0, 1.0)
    check_choice("scheme", scheme, sc.SCHEMES)
    gen = generator(check_int("seed", seed, 0))
    data = sc.sample(12, p=20, d=5, sparsity=sparsity, noise=noise, generator=gen)
    a1, a2 = sc.views(data.X, keep=1 - masking, generator=gen, scheme=scheme)
    mc = maxcos.max_cosines(randn(20, 20, generator=gen), data.M)
    c = maxcos.chance_level(20, 5, 20, draws=1000)
    blocks = [data.Z, data.X, a1, a2]
    gap = torch.full((12, 1), float("nan"), dtype=data.X.dtype, device=data.X.device)
    image = torch.cat([t for blk in blocks for t in (blk, gap)][:-1], dim=1).detach().cpu().numpy()
    widths = [blk.shape[1] for blk in blocks]
    starts = [sum(widths[:k]) + k for k in range(4)]
    fig, axes = figure(ncols=2, width=11.0, height=2.8, gridspec_kw={"width_ratios": [4.5, 1]},
                       margins={"left": 0.65, "bottom": 0.55})
    lim = max(float(data.X.abs().max()), 1.0) * (2 if scheme == "dependent" else 1)
    axes[0].imshow(image, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
    axes[0].set_xticks([s0 + (w - 1) / 2 for s0, w in zip(starts, widths, strict=True)],
                       ["latents z", "inputs x", "view a₁", "view a₂"], fontsize=9)
    axes[0].set_ylabel("sample")
    axes[0].grid(False)
    axes[1].bar(range(1, 6), mc.detach().cpu().numpy(), color="0.5")
    axes[1].axhspan(c.minimum, c.maximum, color="C1", alpha=0.25, label="chance (min–max)")
    axes[1].set_ylim(0, 1)
    axes[1].set_xlabel("atom $j$")
    axes[1].set_ylabel("random $W$: mc$_j$")
    return fig


def chance_curve(ms, levels: dict, exact, *, ax=None):
    r"""The chance level of the three max-cosine summaries against the width :math:`m` (log axis).

    ``ms``: the widths; ``levels``: ``{"maximum": [...], "median": [...], "minimum": [...]}`` (Monte-Carlo means, one
    per width); ``exact``: :math:`\mathbb E\,\mathrm{mc}_j` per width. Returns the axes.
    """
    if ax is None:
        _, ax = figure(width=5.6, height=3.2)
    ms = list(ms)
    for name, values in levels.items():
        values = list(values)
        if len(values) != len(ms):
            raise ValueError(f"levels[{name!r}] has {len(values)} values for {len(ms)} widths.")
        ax.plot(ms, values, marker="o", label=f"{name} max-cosine (Monte Carlo)")
    ax.plot(ms, list(exact), "k--", label=r"$\mathbb{E}\,\mathrm{mc}_j$ (exact)")
    ax.set_xscale("log")
    ax.set_xlabel("neurons $m$")
    ax.set_ylabel("chance level")
    ax.legend(fontsize=8)
    return ax


def _testbed_controls() -> dict:
    return {
        "sparsity": widgets.slider("β = Pr(sparse)", 0.2, 0.05, 0.9, 0.05),
        "masking": widgets.slider("masking prob. 1 − α", 0.5, 0.0, 0.95, 0.05),
        "noise": widgets.slider("σ₀", 0.15, 0.0, 0.6, 0.01),
        "scheme": widgets.dropdown("masks", list(sc.SCHEMES)),
        "seed": widgets.int_slider("seed", 0, 0, 20),
    }


PANELS = [widgets.PanelSpec("Chapter 14", testbed, _testbed_controls)]
