"""Figures of Chapter 16 (training dynamics of dual networks, Pokle et al. 2022).

the phase sweep of Theorem 3 and the alternating-optimisation panel.

Compute lives in :mod:`clbook.dynamics.dual`; this module draws.
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from .. import linalg, widgets
from .._validate import check_in_range, check_int
from ..config import defaults, generator, rand
from ..dynamics import dual
from . import figure, light_log_ticks

__all__ = ["sweep", "phase", "PANELS"]


def _np(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=float)


def sweep(bias, product, ratios):
    r"""The measured half-round ratio on a grid.

    left, :math:`\log` ratio over the :math:`(b, \alpha^2\beta)` plane with the boundary :math:`\alpha^2\beta = 1 - b`;
    right, the ratio against :math:`\alpha^2\beta/(1-b)` (log-log).

    ``bias`` ``[nb]``, ``product`` ``[ns]`` (the values of :math:`\alpha^2\beta`), ``ratios`` ``[ns, nb]`` (> 0).
    Returns the figure.
    """
    b, s, r = _np(bias), _np(product), _np(ratios)
    if r.shape != (s.size, b.size) or not np.all(r > 0):
        raise ValueError(f"ratios must be positive with shape [len(product), len(bias)] = {[s.size, b.size]}; got {list(r.shape)}.")
    fig, (ax0, ax1) = figure(ncols=2, width=9.0, height=3.4)
    im = ax0.pcolormesh(b, s, np.log(r), cmap="RdBu_r", vmin=-3, vmax=3, shading="nearest")
    ax0.plot(b, 1 - b, "k-", lw=1.2, label=r"$\alpha^2\beta = 1 - b$")
    ax0.set_xlabel("bias $b$")
    ax0.set_ylabel(r"$\alpha^2\beta$")
    ax0.legend(loc="lower left", fontsize=8)
    fig.colorbar(im, ax=ax0, label="log(half-round ratio)")
    x = (s[:, None] / (1 - b[None, :])).ravel()
    ax1.loglog(x, r.ravel(), ".", ms=4, label="exact enumeration")
    ax1.loglog(np.sort(x), np.sort(x), "k-", lw=0.8, label=r"$\alpha^2\beta/(1-b)$")
    ax1.axhline(1, color="grey", lw=0.6)
    ax1.axvline(1, color="grey", lw=0.6)
    ax1.set_xlabel(r"$\alpha^2\beta/(1-b)$")
    ax1.set_ylabel("measured ratio")
    ax1.legend(fontsize=8)
    return fig


@functools.lru_cache(maxsize=32)
def _alternating(keep, sparsity, bias, delta, d, rounds, seed, setup_key):
    """The alternating optimisation of :func:`phase`, cached per control value.

    Moving a control back shows the run
    again at once; ``setup_key``, the device and dtype of ``clbook.setup``, is part of the key. Read-only.
    """
    gen = generator(seed)
    device, dtype = defaults()
    eye = torch.eye(d, device=device, dtype=dtype)
    W0, W1 = (eye + delta * (2 * rand(d, d, generator=gen) - 1) * (1 - eye) for _ in range(2))
    s = keep**2 * sparsity
    return dual.alternating_unchecked(linalg.unit_rows(W0).cpu().numpy(), linalg.unit_rows(W1).cpu().numpy(), bias,
                                      keep=keep, sparsity=sparsity, eta=1.0 / s, inner_steps=25, rounds=rounds)


def phase(keep: float = 0.8, sparsity: float = 0.5, bias: float = 0.3, delta: float = 0.02, d: int = 3,
          rounds: int = 4, seed: int = 0):
    r"""Alternating optimisation of Thm 3 on the exact population loss (a training panel).

    Left: the :math:`(b, \alpha^2\beta)` plane with the phase boundary :math:`\alpha^2\beta = 1 - b` and the chosen
    point. Right: the off-diagonal norm after each half-round, measured and as predicted by the factor
    :math:`\alpha^2\beta/(W_{ii} - b)`, with the half-rounds where Assumption 3 fails marked.
    ``keep``, ``sparsity`` in :math:`[0.05, 1]`, ``bias`` in :math:`[0, 0.95]`, warm start ``delta`` in
    :math:`[0, 0.3]`, ``2 <= d <= 4``, ``1 <= rounds <= 6``, ``seed >= 0``. Returns the figure.
    """
    keep, sparsity = check_in_range("keep", keep, 0.05, 1.0), check_in_range("sparsity", sparsity, 0.05, 1.0)
    bias, delta = check_in_range("bias", bias, 0.0, 0.95), check_in_range("delta", delta, 0.0, 0.3)
    d, rounds = check_int("d", d, 2, 4), check_int("rounds", rounds, 1, 6)
    s = keep**2 * sparsity
    run = _alternating(keep, sparsity, bias, delta, d, rounds, check_int("seed", seed, 0), str(defaults()))
    off, diag, regime = _np(run.offdiag), _np(run.diag), _np(run.regime).astype(bool)
    pred = off[0] * np.concatenate([[1.0], np.cumprod(s / np.maximum(diag[:-1] - bias, 1e-12))])
    fig, (ax0, ax1) = figure(ncols=2, width=8.4, height=3.2, margins=True)
    bb = np.linspace(0, 0.95, 50)
    ax0.fill_between(bb, 0, 1 - bb, color="C2", alpha=0.15, label="contracts")
    ax0.fill_between(bb, 1 - bb, 1, color="C3", alpha=0.15, label="grows")
    ax0.plot(bb, 1 - bb, "k-", lw=1)
    ax0.plot([bias], [s], "ko")
    ax0.set_xlabel("bias $b$")
    ax0.set_ylabel(r"$\alpha^2\beta$")
    ax0.set_xlim(0, 0.95)
    ax0.set_ylim(0, 1)
    ax0.legend(loc="upper right", fontsize=8)
    k = np.arange(len(off))
    ax1.semilogy(k, np.maximum(off, 1e-300), "o-", label="exact enumeration")
    ax1.semilogy(k, np.maximum(pred, 1e-300), "k--", lw=1, label=r"$\prod\alpha^2\beta/(W_{ii}-b)$")
    if (~regime).any():
        ax1.semilogy(k[~regime], np.maximum(off[~regime], 1e-300), "rx", ms=9, label="Assumption 3 fails")
    ax1.set_xlabel("half-round")
    ax1.set_ylabel("off-diagonal norm")
    ax1.legend(fontsize=8)
    return light_log_ticks(fig)


def _phase_controls() -> dict:
    return {
        "keep": widgets.slider("α (keep)", 0.8, 0.05, 1.0, 0.05),
        "sparsity": widgets.slider("β = Pr(zᵢ ≠ 0)", 0.5, 0.05, 1.0, 0.05),
        "bias": widgets.slider("bias b", 0.3, 0.0, 0.9, 0.02),
        "delta": widgets.slider("warm start δ", 0.02, 0.0, 0.1, 0.005),
        "d": widgets.int_slider("d", 3, 2, 4),
        "rounds": widgets.int_slider("rounds", 4, 1, 6),
    }


PANELS = [widgets.PanelSpec("Chapter 16", phase, _phase_controls)]
