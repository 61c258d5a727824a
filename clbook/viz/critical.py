r"""Figures of Chapters 7 and 8: stability of critical points and power iteration (Tian 2023, Sec. 3.2-3.3, App. B).

Compute lives in :mod:`clbook.dynamics.critical`; this module draws. Both panels take only the control values:
:func:`stability_panel` (Chapter 7, analytic: a closed-form landscape and autograd at its maxima) and
:func:`power_iteration_panel` (Chapter 8, a simulation: eight power iterations on an exactly enumerated model).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .. import widgets
from ..config import generator, randn
from ..data import latent
from ..dynamics import critical, onelayer
from . import figure, light_log_ticks

__all__ = ["plot_discrepancies", "stability_panel", "power_iteration_panel", "PANELS"]


def plot_discrepancies(runs, *, ax=None):
    r"""The discrepancy :math:`\|w(t+1) - w(t)\|_2` of each power iteration against the iteration.

    One line per :class:`~clbook.dynamics.critical.PowerIteration` in ``runs``, on a log scale (values below 1e-17
    drawn at 1e-17). Returns the axes.
    """
    if ax is None:
        _, ax = figure(width=6.4, height=3.0)
    for r in runs:
        d = r.discrepancy.detach().cpu().clamp(min=1e-17)
        ax.semilogy(range(1, len(d) + 1), d.numpy(), lw=0.9)
    ax.set_xlabel("iteration t")
    ax.set_ylabel(r"$\|w(t+1)-w(t)\|_2$")
    return ax


def stability_panel(sigma: float = 0.5, weight3: float = 0.4):
    r"""Chapter 7's panel.

    the landscape :math:`\mathcal E(\theta)` of the three-cluster mixture (``sigma`` in [0.05, 1], weight of the third
    cluster ``weight3`` in [0.1, 0.8], the other two sharing the rest) on 720 angles, with :math:`\lambda_{\rm gap}` and
    :math:`\rho` (:func:`~clbook.dynamics.critical.stability_report`) at each grid maximum. Returns the figure.
    """
    mix = critical.three_clusters(sigma, weights=(0.5 * (1 - weight3), 0.5 * (1 - weight3), weight3))
    theta = torch.linspace(-math.pi, math.pi, 721, dtype=torch.float64)[:-1]
    E = critical.mixture_landscape(theta, mix)
    fig, ax = figure(width=6.4, height=3.0, margins=True)
    ax.plot((theta / math.pi).numpy(), E.cpu().numpy())
    A_fn = lambda v: critical.mixture_gated_covariance(v, mix)  # noqa: E731
    for i in onelayer.periodic_local_maxima(E).tolist():
        rep = critical.stability_report(torch.stack([torch.cos(theta[i]), torch.sin(theta[i])]), A_fn)
        x, y = float(theta[i]) / math.pi, float(E[i])
        ax.plot(x, y, "k.", ms=6)
        ax.annotate(f"gap {rep.gap:.3f}\nρ {rep.rho:.3f}", (x, y), xytext=(0, -8), textcoords="offset points", fontsize=7,
                    ha="center", va="top")
    ax.set_xlabel(r"$\theta/\pi$")
    ax.set_ylabel(r"$\mathcal{E}(\theta)$")
    return fig


class _Run(NamedTuple):
    W: torch.Tensor
    discrepancy: torch.Tensor
    cycle: int


def _power_iterations(W0, A_fn, *, steps: int, shift: float, cycle_tol: float = 1e-12) -> list[_Run]:
    r"""Eq. PI from every row of ``W0 [K, d]`` at once (``A_fn`` maps ``[K, d]`` to ``[K, d, d]``).

    the map, the discrepancies and the cycle rule of :func:`clbook.dynamics.critical.power_iteration`, one batched
    :math:`A(w)` per step, without the eigen-decomposition behind its diagnostics :math:`c_t` and gaps (the panel draws
    neither).
    """
    W = W0 / torch.linalg.vector_norm(W0, dim=1, keepdim=True)
    Ws = [W]
    with torch.no_grad():
        for _ in range(steps):
            V = (A_fn(W) @ W.unsqueeze(2)).squeeze(2) + shift * W
            W = V / torch.linalg.vector_norm(V, dim=1, keepdim=True)
            Ws.append(W)
    T = torch.stack(Ws, dim=1)                                          # [K, steps + 1, d]
    disc = torch.linalg.vector_norm(T[:, 1:] - T[:, :-1], dim=2)        # [K, steps]
    back = torch.linalg.vector_norm(T[:, -1:] - T, dim=2).flip(1)       # [K, steps + 1]: ||w(T) - w(T - p)||
    runs = []
    for k in range(T.shape[0]):
        periods = [p for p in range(2, min(50, steps) + 1) if float(back[k, p]) < cycle_tol]
        cycle = periods[0] if periods and float(disc[k, -1]) >= cycle_tol else 0
        runs.append(_Run(T[k], disc[k], cycle))
    return runs


def power_iteration_panel(eta: float = 0.1, shift: float = 0.0, init_noise: float = 0.0, steps: int = 100):
    r"""Chapter 8's panel.

    power iteration (Eq. PI, shift ``shift`` in [0, 3]) on the latent summation model with :math:`M = d = 8`, :math:`q =
    0.2` and patterns :func:`~clbook.dynamics.critical.perturbed_patterns` by ``eta`` in [0, 0.5], from :math:`w(0) =
    u_m + \epsilon g_m` (``init_noise`` :math:`\epsilon` in [0, 1]), ``steps`` in [10, 300]; counts the runs that
    converge, cycle or end near their :math:`u_m`. The eight runs iterate together (the map and the counts of
    :func:`~clbook.dynamics.critical.power_iteration`, batched). Returns the figure.
    """
    U = critical.perturbed_patterns(8, eta, generator=generator(5))
    model = latent.latent_summation(U, 0.2)
    A_fn = lambda W: onelayer.gated_covariance(W, model.atoms, model.probs)  # noqa: E731
    g = randn(8, 8, generator=generator(6), device=U.device, dtype=U.dtype)
    runs = _power_iterations(U.T + init_noise * g, A_fn, steps=int(steps), shift=shift)
    fig, ax = figure(width=6.4, height=3.0, margins={"top": 0.35})
    plot_discrepancies(runs, ax=ax)
    conv = sum(float(r.discrepancy[-1]) < 1e-12 for r in runs)
    cyc = sum(r.cycle > 0 for r in runs)
    near = sum(float(r.W[-1] @ U[:, m]) > 0.99 for m, r in enumerate(runs))
    nrm = float(torch.linalg.matrix_norm(U.T @ U - torch.eye(8, dtype=U.dtype, device=U.device), ord=2))
    ax.set_title(f"‖UᵀU − I‖ = {nrm:.2f}: {conv}/8 converge, {cyc} cycle, {near} end near u_m", fontsize=9)
    return light_log_ticks(fig)


def _stability_controls() -> dict:
    return {"sigma": widgets.slider("σ", 0.5, 0.05, 1.0, 0.05),
            "weight3": widgets.slider("weight of cluster 3", 0.4, 0.1, 0.8, 0.05)}


def _pi_controls() -> dict:
    return {"eta": widgets.slider("η", 0.1, 0.0, 0.5, 0.01), "shift": widgets.slider("shift s", 0.0, 0.0, 3.0, 0.1),
            "init_noise": widgets.slider("start noise ε", 0.0, 0.0, 1.0, 0.05),
            "steps": widgets.int_slider("iterations", 100, 10, 300)}


PANELS = [widgets.PanelSpec("Chapter 7", stability_panel, _stability_controls),
          widgets.PanelSpec("Chapter 8", power_iteration_panel, _pi_controls)]
