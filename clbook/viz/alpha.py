r"""Figures of the pairwise importance :math:`\alpha` (Tian 2022, α-CL).

Chapter 1 (the members of the loss family, Eq. 4) and Chapter 4 (the min players of Sec. 6).

Compute lives in :mod:`clbook.alpha` and :mod:`clbook.losses`; this module draws. The panel functions
(:func:`member_weights`, :func:`rules`) take only the panel's control values; the others take their data.
"""
from __future__ import annotations

import numpy as np
import torch

from .. import alpha, losses, widgets
from .._validate import check_int, check_nonnegative, check_positive
from ..config import generator, randn
from . import figure, light_log_ticks

__all__ = ["anchor_profile", "member_weights", "row_sums", "rules", "MEMBER_PANEL", "RULES_PANEL", "PANELS"]


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=float)


def anchor_profile(name: str, temperature: float = 0.5, eps: float = 0.0, n: int = 64, normalize: bool = True,
                   seed: int = 4) -> tuple[np.ndarray, np.ndarray]:
    r"""The distances :math:`d_{0j}^2` and weights :math:`\alpha_{0j}` (Eq. 4) of anchor 0, for member ``name``.

    The batch: ``n`` Gaussian embeddings in :math:`\mathbb R^8` and second views with noise 0.5, drawn from
    ``seed``, :math:`\ell_2`-normalised when ``normalize`` (then :math:`d^2 = 1 - \cos`). ``temperature`` and ``eps``
    are InfoNCE's (``temperature`` also the soft triplet's). Returns two arrays of length ``n - 1``.
    """
    if name not in losses.FAMILY:
        raise ValueError(f"name must be one of {list(losses.FAMILY)}; got name = {name!r}.")
    params = {"InfoNCE": {"temperature": temperature, "eps": eps}, "Soft triplet": {"temperature": temperature}}.get(name, {})
    member = losses.member(name, **params)
    n = check_int("n", n, minimum=2)
    g = generator(check_int("seed", seed, minimum=0))
    z1 = randn(n, 8, generator=g)
    z2 = z1 + 0.5 * randn(n, 8, generator=g)
    if normalize:
        z1, z2 = torch.nn.functional.normalize(z1, dim=1), torch.nn.functional.normalize(z2, dim=1)
    d_neg = losses.pair_distances(z1, z2)[1]
    weights = alpha.pairwise_importance(member, z1, z2)
    return _np(d_neg[0, 1:]), _np(weights[0, 1:])


def member_weights(names=("InfoNCE", "Triplet", "Modified triplet", "Quadratic"), temperature: float = 0.5,
                   eps: float = 0.0, n: int = 64, normalize: bool = True):
    r"""Chapter 1's panel: :math:`\alpha_{0j}` against :math:`d_{0j}^2` for one or several members (:func:`anchor_profile`).

    ``names``: a member name or a sequence of them; ``temperature > 0`` (the panel: :math:`[10^{-3}, 5]`),
    ``eps >= 0``, ``2 <= n <= 1024``. Returns the figure.
    """
    names = [names] if isinstance(names, str) else list(names)
    check_positive("temperature", temperature)
    check_nonnegative("eps", eps)
    check_int("n", n, 2, 1024)
    fig, axes = figure(ncols=len(names), width=2.6 * len(names), height=2.6, sharex=True,
                       margins={"wspace": 0.5})
    axes = np.atleast_1d(axes)
    for ax, name in zip(axes, names, strict=True):
        d, a = anchor_profile(name, temperature, eps, n, normalize)
        ax.scatter(d, a, s=10)
        ax.set_xlabel(r"$d_{0j}^2$")
        ax.text(0.98, 0.95, name, transform=ax.transAxes, ha="right", va="top")
    axes[0].set_ylabel(r"$\alpha_{0j}$")
    return fig


def row_sums(d_pos, sums, *, ax=None):
    r"""Scatter of the row sums :math:`\sum_j\alpha_{ij}` against :math:`d_i^2` (Chapter 1, Theorem 2's feasible set).

    ``d_pos`` and ``sums``: tensors or arrays ``[n]``. Returns the axes.
    """
    d, s = _np(d_pos), _np(sums)
    if d.shape != s.shape or d.ndim != 1:
        raise ValueError(f"d_pos and sums must be vectors of the same length; got shapes {d.shape} and {s.shape}.")
    if ax is None:
        _, ax = figure(width=5.2, height=3.0)
    ax.scatter(d, s, s=18)
    ax.set_xlabel("$d_i^2$ (distance between the two views of anchor $i$)")
    ax.set_ylabel(r"$\sum_j \alpha_{ij}$")
    return ax


def rules(temperature: float = 0.5, power: float = 4.0, n: int = 128, gamma: float = 2.0, temperature_rs: float = 5.0,
          seed: int = 4):
    r"""Chapter 4's panel.

    the weight of each negative of anchor 0 under each rule of :mod:`clbook.alpha`, scaled by :math:`N - 1` (uniform
    weights sit at 1), against :math:`d_{0j}^2 = 1 - \cos` for ``n`` random unit vectors in :math:`\mathbb R^{16}`.

    ``temperature``, ``power``, ``temperature_rs`` > 0, ``gamma > 1``, ``2 <= n <= 1024`` (the panel's sliders stay
    inside). Returns the figure.
    """
    check_positive("temperature", temperature)
    check_positive("power", power)
    n = check_int("n", n, 2, 1024)
    if check_positive("gamma", gamma) <= 1:
        raise ValueError(f"gamma must be > 1; got gamma = {gamma}.")
    check_positive("temperature_rs", temperature_rs)
    z = torch.nn.functional.normalize(randn(n, 16, generator=generator(check_int("seed", seed, minimum=0))), dim=1)
    d = losses.pair_distances(z, z)[1]
    weights = {"r_H (= InfoNCE)": alpha.entropy_weights(d, temperature=temperature),
               f"direct p = {power:g}": alpha.direct_weights(d, temperature=temperature, power=power),
               f"r_γ exact, γ = {gamma:g}": alpha.inverse_power_weights(d, temperature=temperature, gamma=gamma, iterations=80),
               "inverse (code)": alpha.inverse_distance_weights(d, temperature=temperature),
               f"r_s, τ = {temperature_rs:g}": alpha.sparsemax_weights(d, temperature=temperature_rs)}
    order = torch.argsort(d[0, 1:])
    fig, ax = figure(width=6.4, height=3.4, margins=True)
    for name, A in weights.items():
        ax.plot(_np(d[0, 1:][order]), (n - 1) * _np(A[0, 1:][order]), label=name, lw=1.6)
    ax.set_yscale("symlog", linthresh=1e-2)
    ax.set_xlabel(r"$d_{0j}^2 = 1 - \cos$")
    ax.set_ylabel(r"$(N-1)\,\alpha_{0j}$")
    ax.legend(fontsize=8, loc="upper right")
    return light_log_ticks(fig)


def _member_controls() -> dict:
    return {
        "names": widgets.dropdown("member", list(losses.FAMILY)),
        "temperature": widgets.log_slider("τ", 0.5, 1e-3, 5.0),
        "eps": widgets.slider("ε (InfoNCE)", 0.0, 0.0, 3.0, 0.1),
        "n": widgets.int_slider("N", 64, 4, 256),
        "normalize": widgets.toggle("ℓ2-normalise", True),
    }


def _rules_controls() -> dict:
    return {
        "temperature": widgets.log_slider("τ", 0.5, 0.02, 5.0),
        "power": widgets.slider("p (direct)", 4.0, 1.0, 10.0, 0.5),
        "n": widgets.int_slider("N", 128, 4, 256),
        "gamma": widgets.slider("γ (r_γ)", 2.0, 1.1, 6.0, 0.1),
        "temperature_rs": widgets.log_slider("τ (r_s)", 5.0, 0.1, 50.0),
    }


MEMBER_PANEL = widgets.PanelSpec("Chapter 1", member_weights, _member_controls)
RULES_PANEL = widgets.PanelSpec("Chapter 4", rules, _rules_controls)
PANELS = [MEMBER_PANEL, RULES_PANEL]
