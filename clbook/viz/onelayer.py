r"""Figures of Chapter 6: one-layer networks find the patterns of the latent models (Tian 2023, Sec. 3.1, Fig. 8).

Compute lives in :mod:`clbook.dynamics.onelayer` and :mod:`clbook.data.latent`; this module draws. :func:`patterns_panel`
(the chapter's panel) takes only the control values and runs the flow of Eq. 7 (a simulation panel, well under a second).
"""
from __future__ import annotations

import math

import torch

from .. import widgets
from ..config import generator, randn
from ..data import latent
from ..dynamics import onelayer
from ..linalg import haar_orthonormal
from . import figure

__all__ = ["plot_pattern_counts", "plot_landscape", "patterns_panel", "PANELS"]


def plot_pattern_counts(counts: dict, *, ax=None):
    r"""Grouped bars.

    for each run (``{label: counts [M]}``), the number of nodes that converged to each pattern :math:`u_m`. Returns the
    axes.
    """
    if ax is None:
        _, ax = figure(width=6.4, height=3.0)
    width = 0.8 / max(len(counts), 1)
    for k, (label, c) in enumerate(counts.items()):
        c = torch.as_tensor(c).cpu()
        pos = torch.arange(len(c), dtype=torch.float64) + (k - (len(counts) - 1) / 2) * width
        ax.bar(pos.numpy(), c.numpy(), width=width, label=label)
    M = len(next(iter(counts.values())))
    ax.set_xticks(list(range(M)), [f"$u_{m + 1}$" for m in range(M)])
    ax.set_ylabel("nodes")
    ax.legend(fontsize=8)
    return ax


def plot_landscape(theta, landscapes: dict, maxima: dict, *, angles=None, ax=None):
    r"""Fig. 8.

    each landscape :math:`\mathcal E(\theta)` (``{name: values [T]}``) scaled to its maximum, with its local maxima
    (``{name: indices}``) marked, against :math:`\theta/\pi`; dotted lines at the data ``angles``. Returns the axes.
    """
    if ax is None:
        _, ax = figure(width=6.4, height=3.2)
    x = (torch.as_tensor(theta) / math.pi).cpu()
    for (name, E), style in zip(landscapes.items(), ("-", ":", "--", "-."), strict=False):
        E = torch.as_tensor(E).cpu()
        ax.plot(x.numpy(), (E / E.max()).numpy(), style, label=name)
        idx = torch.as_tensor(maxima[name]).cpu()
        ax.plot(x[idx].numpy(), (E[idx] / E.max()).numpy(), "k.", ms=5)
    for a in ([] if angles is None else torch.as_tensor(angles).tolist()):
        ax.axvline(a / math.pi, color="0.8", lw=0.8, ls=":")
    ax.set_xlabel(r"$\theta/\pi$")
    ax.set_ylabel(r"$\mathcal{E}(\theta)/\max\mathcal{E}$")
    ax.legend(loc="lower left")
    return ax


def patterns_panel(num_patterns: int = 6, q: float = 0.2, activation: str = "relu", nodes: int = 60, spread: float = 0.1):
    r"""Chapter 6's panel.

    ``nodes`` random starts follow Eq. 7 (200 steps of 1) on a latent summation model with ``num_patterns`` :math:`= M =
    d` in [2, 8] Haar patterns, all :math:`q_m =` ``q`` in [0.05, 0.6], scales spread by :math:`\pm` ``spread`` in [0,
    0.4]; bars count the nodes on each pattern. Returns the figure.
    """
    M = int(num_patterns)
    U = haar_orthonormal(M, generator=generator(11))
    model = latent.latent_summation(U, q, scales=torch.linspace(1 + spread, 1 - spread, M, dtype=U.dtype, device=U.device))
    W0 = randn(int(nodes), M, generator=generator(12))
    res = onelayer.projected_ascent(W0, model.atoms, model.probs, activation=activation, step=1.0, max_steps=200)
    assignment, counts = onelayer.match_patterns(res.W, U, signed=activation in ("relu", "leaky_relu"))
    fig, ax = figure(width=5.6, height=3.0, margins={"top": 0.35})
    plot_pattern_counts({activation: counts}, ax=ax)
    ax.set_title(f"{activation}: {int((counts > 0).sum())}/{M} patterns, {int((assignment < 0).sum())} nodes elsewhere", fontsize=9)
    return fig


def _controls() -> dict:
    return {
        "num_patterns": widgets.int_slider("M = d", 6, 2, 8),
        "q": widgets.slider("q", 0.2, 0.05, 0.6, 0.01),
        "activation": widgets.dropdown("activation", list(onelayer.ACTIVATIONS), "relu"),
        "nodes": widgets.int_slider("nodes K", 60, 5, 200),
        "spread": widgets.slider("scale spread", 0.1, 0.0, 0.4, 0.05),
    }


PANELS = [widgets.PanelSpec("Chapter 6", patterns_panel, _controls)]
