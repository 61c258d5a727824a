r"""Figures of Chapter 13 (Esser et al. 2023, Sec. 5): gradient descent against the ODE of Thm 2, and Thm 3's limits.

Compute lives in :mod:`clbook.dynamics.stiefel`; this module draws. :func:`fig3` takes the runs of the chapter's
Fig. 3; :func:`theorem3_panel` (the chapter's panel, a training panel well under a second) takes only the control
values.
"""
from __future__ import annotations

import functools

import torch

from .. import widgets
from ..config import generator
from ..dynamics import stiefel as st
from . import COLORS, figure

__all__ = ["fig3", "theorem3_panel", "PANEL", "PANELS"]


def fig3(runs: dict):
    r"""Our Fig. 3.

    ``runs`` maps a width to ``(paper, euclid, euler, V)``: two :class:`~clbook.dynamics.stiefel.TrainResult` (the
    paper's projected update, and a Euclidean step with the polar retraction), an
    :class:`~clbook.dynamics.stiefel.ODEResult` of Eq. 12 and the eigenvectors ``V`` of :math:`C`. Left: the losses;
    right: :math:`e_1^\top q_t` (``z = 1``). Returns the figure.
    """
    fig, (ax_l, ax_q) = figure(ncols=2, width=9.0, height=3.2)
    for k, (h, (paper, euclid, euler, V)) in enumerate(runs.items()):
        col = COLORS[k % len(COLORS)]
        ax_l.plot(paper.t.cpu(), paper.loss.cpu(), color=col, label=f"GD, h = {h}")
        ax_l.plot(euler.t.cpu(), euler.loss.cpu(), color=col, ls="--", lw=1.2)
        ax_l.plot(euclid.t.cpu(), euclid.loss.cpu(), color=col, ls=":", lw=1.2)
        ax_q.plot(paper.t.cpu(), (V.T @ paper.M[..., 0].T)[0].cpu(), color=col)
        ax_q.plot(euler.t.cpu(), euler.q[:, 0, 0].cpu(), color=col, ls="--", lw=1.2)
    for style, name in (("-", "GD, Eq. 11"), ("--", "Eq. 12"), (":", "Euclid + polar")):
        ax_q.plot([], [], color="0.4", ls=style, lw=1.2, label=name)
    ax_l.set(xlabel="t = step · η", ylabel="loss")
    ax_q.set(xlabel="t = step · η", ylabel="$u(v_1) = e_1^\\top q$")
    ax_l.legend()
    ax_q.legend(loc="center right")
    return fig


@functools.lru_cache(maxsize=64)
def _ode(lam1: float, q0_norm: float, device: str):
    """Eq. 9 from Chapter 13's panel's start, or None where it blows up.

    It depends on neither the width nor the step; ``device`` (torch's default when called) is part of the cache's key.
    """
    lam = torch.tensor([lam1, 0.3, 0.6, 1.0], dtype=torch.float64)
    q0 = torch.tensor([0.3, -0.5, 0.6, 0.55], dtype=torch.float64)
    q0 = q0 * min(q0_norm, 1.0) / q0.norm()
    try:  # started on the sphere with lam1 > 0, rounding pushes the ODE off it (the sphere repels) and it may blow up
        return st.solve_q(q0, lam, torch.linspace(0, 6, 241))
    except RuntimeError:
        return None


def theorem3_panel(lam1: float = -0.5, q0_norm: float = 0.3, width: int = 50, eta: float = 0.01):
    r"""Chapter 13's panel.

    the paper's gradient descent (solid) and the ODE of Eq. 9 (dashed) for ``z = 1`` with :math:`\Lambda =
    \operatorname{diag}(\lambda_1, 0.3, 0.6, 1)`, from a fixed direction scaled to ``q0_norm`` and embedded into a
    network of width ``width`` (:func:`clbook.dynamics.stiefel.embed_weights`), up to ``t = 6``.

    ``-1 <= lam1 <= 1``, ``0.01 <= q0_norm <= 1``, ``5 <= width <= 1000``, ``0.002 <= eta <= 0.05`` (a training panel,
    at most 3000 steps; the gradient descent is :func:`clbook.dynamics.stiefel.train`'s loop run on numpy arrays,
    :func:`~clbook.dynamics.stiefel.train_unchecked`).
    """
    lam = torch.tensor([lam1, 0.3, 0.6, 1.0], dtype=torch.float64)
    q0 = torch.tensor([0.3, -0.5, 0.6, 0.55], dtype=torch.float64)
    q0 = q0 * min(q0_norm, 1.0) / q0.norm()
    steps = int(round(6 / eta))
    W1, W2 = st.embed_weights(q0[:, None], int(width), generator=generator(0))
    M = st.train_unchecked(*(A.cpu().numpy() for A in (W1, W2, torch.diag(lam))), eta=eta, steps=steps).M
    run_t = eta * torch.arange(steps + 1, dtype=torch.float64)
    ode = _ode(float(lam1), float(q0_norm), str(torch.get_default_device()))
    fig, (ax_n, ax_c) = figure(ncols=2, width=9.0, height=3.0, margins=True)
    ax_n.plot(run_t, torch.linalg.matrix_norm(M), label="GD (Eq. 11)")
    if ode is not None:
        ax_n.plot(ode.t.cpu(), torch.linalg.matrix_norm(ode.q).cpu(), ls="--", label="ODE (Eq. 9)")
    ax_n.axhline(0.0 if lam1 > 0 and q0_norm < 1 else 1.0, color="0.5", lw=0.8)
    ax_n.set(xlabel="t", ylabel="‖q‖", ylim=(-0.05, 1.1))
    ax_c.plot(run_t, M[:, 0, 0], label="GD: $e_1^\\top q$")
    if ode is not None:
        ax_c.plot(ode.t.cpu(), ode.q[:, 0, 0].cpu(), ls="--", label="ODE: $e_1^\\top q$")
    ax_c.set(xlabel="t", ylabel="$e_1^\\top q$", ylim=(-1.1, 1.1))
    ax_n.legend()
    return fig


def _controls() -> dict:
    return {
        "lam1": widgets.slider("λ₁", -0.5, -1.0, 1.0, 0.05),
        "q0_norm": widgets.slider("‖q₀‖", 0.3, 0.01, 1.0, 0.01),
        "width": widgets.int_slider("width h", 50, 5, 1000),
        "eta": widgets.log_slider("step η", 0.01, 0.002, 0.05),
    }


PANEL = widgets.PanelSpec("Chapter 13", theorem3_panel, _controls)
PANELS = [PANEL]
