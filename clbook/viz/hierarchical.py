r"""Figures of Chapter 10: the two-layer network of Tian (2023), Sec. 5, on the hierarchical token generator.

Compute lives in :mod:`clbook.experiments.hierarchical` and :mod:`clbook.data.hierarchical`; this module draws data it
is given. :func:`explore` (the chapter's panel) takes only the control values and trains one run (a training panel:
20 steps at a raised learning rate, about 0.1 s).
"""
from __future__ import annotations

import functools
import math

import torch

from .. import widgets
from ..config import defaults
from ..data import hierarchical as hg
from ..experiments import hierarchical as hx
from . import figure

__all__ = ["plot_filters", "plot_history", "plot_matching", "plot_digit_filters", "explore", "PANELS", "PANEL_LR"]


def _axes(ax, width=3.4, height=2.6):
    if ax is None:
        _, ax = figure(width=width, height=height)
    return ax


def plot_filters(filters, *, used=None, ax=None):
    """Heat map of the filters of one receptive field, ``filters [M, d]`` (rows.

    filters, each scaled to unit norm; columns: tokens), as in the paper's Fig. 5; ``used [d]`` (bool) marks the
    candidate tokens with dotted lines.
    """
    W = torch.as_tensor(filters).detach().double().cpu()
    if W.ndim != 2:
        raise ValueError(f"filters must be [M, d]; got shape {tuple(W.shape)}.")
    W = W / (W.norm(dim=-1, keepdim=True) + 1e-12)
    ax = _axes(ax)
    ax.imshow(W.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    if used is not None:
        for a in torch.nonzero(torch.as_tensor(used).cpu()).flatten().tolist():
            ax.axvline(a, color="k", lw=0.6, ls=":")
    ax.set_xlabel("token")
    ax.set_ylabel("filter")
    return ax


def plot_history(history, labels, *, chance=None, ax=None):
    r""":math:`\bar\chi_+` against the step for each variant of a run with ``history_every`` (first seed).

    ``history`` is :attr:`clbook.experiments.hierarchical.TrainResult.history`, ``chance`` a dashed level.
    """
    ax = _axes(ax, 4.8, 2.8)
    steps = [s for s, _ in history]
    for v, name in enumerate(labels):
        ax.plot(steps, [h[v][0] for _, h in history], marker="o", ms=3, label=name)
    if chance is not None:
        ax.axhline(chance, color="0.6", lw=0.8, ls="--", label="chance")
    ax.set(xlabel="step", ylabel=r"$\bar\chi_+$")
    ax.legend()
    return ax


def plot_matching(rows, *, loss: str = "infonce", value: str = "chi_plus", chance=None, ax=None):
    r"""Fig. 4 / Figs 9-10.

    the matching score against :math:`\beta`, one panel per :math:`P`, one line per activation (mean ± sd over seeds).
    ``rows`` from :func:`clbook.experiments.hierarchical.rows`; ``ax`` one axis per :math:`P`; ``chance`` a dict
    ``{(beta, P): level}`` drawn dashed. Returns the axes.
    """
    stats = hx.summary([r for r in rows if r["loss"] == loss], keys=("activation", "candidates", "beta"), value=value)
    cands = sorted({k[1] for k in stats})
    if ax is None:
        _, ax = figure(ncols=len(cands), width=2.6 * len(cands), height=2.6, sharey=True, squeeze=False)
        ax = ax[0]
    for a, P in zip(ax, cands, strict=True):
        for activation in hx.ACTIVATIONS:
            pts = sorted((k[2], v) for k, v in stats.items() if k[0] == activation and k[1] == P)
            if pts:
                a.errorbar([b for b, _ in pts], [v[0] for _, v in pts], yerr=[v[1] for _, v in pts], marker="o", ms=3,
                           capsize=2, label=activation)
        if chance is not None:
            betas = sorted(b for b, p in chance if p == P)
            a.plot(betas, [chance[b, P] for b in betas], color="0.6", lw=0.8, ls="--")
        a.set_xscale("log")
        a.set_xticks([1, 2, 5, 10], ["1", "2", "5", "10"])
        a.set_xlabel("β")
        a.set_title(f"P = {P}", fontsize=9)
    ax[0].set_ylabel({"chi_plus": "χ̄₊", "chi_minus": "χ̄₋"}[value] + f" ({loss})")
    ax[-1].legend(fontsize=7)
    return ax


def plot_digit_filters(filters, *, ax=None):
    """The filters of the digits substitute, ``filters [4, 16, 16]``, as one 32×32 image.

    4 fields × 16 filters × 4×4 pixels (each field a 4×4 block of filters, each filter scaled to its largest entry).
    """
    W = torch.as_tensor(filters).detach().double().cpu()
    if W.shape != (4, 16, 16):
        raise ValueError(f"filters must be [4, 16, 16]; got shape {tuple(W.shape)}.")
    W = W / W.abs().amax(dim=-1, keepdim=True).clamp_min(1e-12)
    grid = W.reshape(2, 2, 4, 4, 4, 4).permute(0, 2, 4, 1, 3, 5).reshape(32, 32)
    ax = _axes(ax)
    ax.imshow(grid.numpy(), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set(xticks=[], yticks=[])
    return ax


PANEL_LR = 0.15
"""The panel's learning rate: 20 steps at 0.15 take the product of step count and rate of 150 steps at the
experiments' 0.02 (momentum 0.9 as there) and end with the same picture (ReLU's filters sharper on the candidates than
the linear ones: χ̄₊ 0.78 against 0.68 at β = 5, P = 3, where 150 steps at 0.02 give 0.63 against 0.56), at a seventh
of the cost."""


@functools.lru_cache(maxsize=32)
def _explore_run(activation, beta, candidates, zeta, bn, steps, setup_key):
    """The training of :func:`explore` and the candidate tokens of :math:`R_0`, cached per control value.

    A reader
    who moves a control back sees the run again at once; ``setup_key``, the device and dtype of ``clbook.setup``, is
    part of the key. Read-only.
    """
    result = hx.train([hx.Variant(activation, "infonce", bn)], [1], beta=beta, candidates=candidates, zeta=zeta,
                      steps=steps, lr=PANEL_LR, dtype=torch.float32)
    return result, hg.make_worlds([1], candidates_per_position=candidates).used_tokens()[0, 0]


def explore(activation: str = "relu", beta: int = 5, candidates: int = 3, zeta: float = 1.0, bn: str = "mean",
            steps: int = 20):
    r"""Chapter 10's panel.

    one run (seed 1, float32) of the Sec. 5 network for ``steps`` steps at learning rate :data:`PANEL_LR`; the filters
    of receptive field :math:`R_0` with its candidate tokens marked. ``1 <= beta <= 5``, ``1 <= candidates <= 5`` (at
    most 25 filters), ``zeta`` in [1, 10], ``steps`` in [10, 60] (an update takes about 0.1 s at 20 steps). Returns
    the figure.
    """
    result, used = _explore_run(activation, int(beta), int(candidates), float(zeta), bn, int(steps), str(defaults()))
    fig, ax = figure(width=4.6, height=3.0, margins={"left": 0.6, "top": 0.35})
    plot_filters(result.filters[0, 0, 0], used=used, ax=ax)
    plus, minus = result.chi_plus[0][0], result.chi_minus[0][0]
    ax.set_title(f"{activation}, β = {beta}, P = {candidates}: χ̄₊ = {plus:.2f}, χ̄₋ = {minus:.2f}"
                 if math.isfinite(plus) else f"{activation}: diverged", fontsize=9)
    return fig


def _controls() -> dict:
    return {
        "activation": widgets.dropdown("activation", list(hx.ACTIVATIONS), "relu"),
        "beta": widgets.int_slider("β", 5, 1, 5),
        "candidates": widgets.int_slider("P", 3, 1, 5),
        "zeta": widgets.slider("ζ", 1.0, 1.0, 10.0, 0.5),
        "bn": widgets.dropdown("BatchNorm", list(hx.BN_RULES), "mean"),
        "steps": widgets.int_slider("steps", 20, 10, 60, 10),
    }


PANELS = [widgets.PanelSpec("Chapter 10", explore, _controls)]
