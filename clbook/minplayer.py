r"""Pairwise importance from a regulariser: the min player of α-CL and the losses of Sec. 6.

Tian (2022), α-CL, Sec. 6 (and App. B, Eqs. 44–45). Every rule here maps the half squared
distances :math:`d_{ij}^2` of a batch to weights :math:`\alpha_{ij}\ge 0` with rows summing to one,
the feasible set of the paper's Sec. 6. For a concave regulariser
:math:`\mathcal R(\alpha) = \sum_i\sum_{j\neq i} r(\alpha_{ij})`, row :math:`i` of the min player
(Eq. 8a) solves

.. math::

    \min_{\alpha_{i\cdot}\ge 0,\ \sum_{j\neq i}\alpha_{ij} = 1}\
    \sum_{j\neq i} c_{ij}\alpha_{ij} - \sum_{j\neq i} r(\alpha_{ij}),
    \qquad c_{ij} = 2(d_{ij}^2 - d_i^2),

and the :math:`-2d_i^2` part of :math:`c_{ij}` is a constant of the row, so only
:math:`2d_{ij}^2` matters. The closed forms (KKT conditions :math:`c_{ij} - r'(\alpha_{ij}) = \mu_i`
on the support) are:

* :math:`r_H(a) = -2\tau a\log a`: :math:`\alpha_{i\cdot} = \operatorname{softmax}_{j\neq i}(-d_{ij}^2/\tau)`,
  InfoNCE's weights (Eq. 6), :func:`entropy_weights`;
* :math:`r_\gamma(a) = \tfrac{2\tau}{1-\gamma}a^{1-\gamma}`, :math:`\gamma>1`:
  :math:`\alpha_{ij} = \big(2\tau/(2d_{ij}^2 - \mu_i)\big)^{1/\gamma}` with :math:`\mu_i` the root of the row sum,
  :func:`inverse_power_weights`;
* :math:`r_s(a) = -\tfrac\tau2 a^2`: :math:`\alpha_{i\cdot} = \operatorname{sparsemax}(-2d_{i\cdot}^2/\tau)`,
  the Euclidean projection onto the simplex, :func:`sparsemax_weights`.

Rules that come from no optimisation: the "direct" weights of Eq. 12 (:func:`direct_weights`), the
row-normalised inverse distance of the authors' code (:func:`inverse_distance_weights`) and the
constant weights of the quadratic loss (:func:`uniform_weights`).

:func:`alpha_cl_loss` is the α-CL training objective of Def. 1 with any of these rules:
:math:`\tfrac1N\sum_i\sum_{j\neq i}\operatorname{sg}(\alpha_{ij})(d_i^2 - d_{ij}^2)`.
:func:`solve_row_numerically` solves one row with a generic optimiser, for validation.

Used in Chapter 4.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from scipy.optimize import minimize

from ._validate import check_choice, check_int, check_pair, check_positive, check_tensor
from .losses import pair_distances

__all__ = [
    "entropy_weights", "inverse_power_weights", "sparsemax_weights", "project_simplex", "direct_weights",
    "inverse_distance_weights", "uniform_weights", "inverse_power_ratio_bound", "solve_row_numerically",
    "AlphaRule", "RULES", "rule", "alpha_cl_loss",
]


def _check_distances(d_neg) -> torch.Tensor:
    d_neg = check_tensor("d_neg", d_neg, ndim=2)
    if d_neg.shape[0] != d_neg.shape[1] or d_neg.shape[0] < 2:
        raise ValueError(f"d_neg must be a square [n, n] matrix with n >= 2; got shape {tuple(d_neg.shape)}.")
    return d_neg


def _diag(n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.eye(n, dtype=torch.bool, device=like.device)


def entropy_weights(d_neg: torch.Tensor, *, temperature: float) -> torch.Tensor:
    r"""Min player with :math:`r_H(a) = -2\tau a\log a`: :math:`\alpha_{ij} = \operatorname{softmax}_{j\neq i}(-d_{ij}^2/\tau)`.

    Parameters
    ----------
    d_neg : torch.Tensor, shape=[n, n]
        Half squared distances :math:`d_{ij}^2` (diagonal ignored).
    temperature : float
        :math:`\tau > 0`.

    Returns
    -------
    torch.Tensor, shape=[n, n]
        Zero diagonal, rows sum to one. Equal to InfoNCE's weights (Eq. 6) for :math:`\epsilon = 0`.
    """
    d_neg = _check_distances(d_neg)
    tau = check_positive("temperature", temperature)
    logits = (-d_neg / tau).masked_fill(_diag(d_neg.shape[0], d_neg), -math.inf)
    return torch.softmax(logits, dim=1)


def _row_root(sum_of, low: torch.Tensor, high: torch.Tensor, iterations: int) -> torch.Tensor:
    """Bisection for the increasing row function ``sum_of(mu) = 1`` on ``[low, high]`` (vectorised over rows)."""
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        too_big = sum_of(mid) > 1
        high = torch.where(too_big, mid, high)
        low = torch.where(too_big, low, mid)
    return 0.5 * (low + high)


def inverse_power_weights(d_neg: torch.Tensor, *, temperature: float, gamma: float = 2.0, iterations: int = 200) -> torch.Tensor:
    r"""Min player with :math:`r_\gamma(a) = \tfrac{2\tau}{1-\gamma}a^{1-\gamma}` (:math:`\gamma > 1`), exactly.

    .. math::

        \alpha_{ij} = \Big(\frac{2\tau}{2d_{ij}^2 - \mu_i}\Big)^{1/\gamma},\qquad
        \mu_i < \min_{j\neq i} 2d_{ij}^2 \ \text{ such that } \sum_{j\neq i}\alpha_{ij} = 1.

    The row sum increases in :math:`\mu_i`; its root lies in
    :math:`[m_i - 2\tau (n-1)^\gamma,\ m_i - 2\tau]`, :math:`m_i = \min_j 2d_{ij}^2`, and is found by bisection
    (in float64 the bracket shrinks to rounding after about 100 halvings). The bracket follows from
    :math:`1/(n-1)\le\max_j\alpha_{ij}\le 1`.

    Parameters
    ----------
    d_neg : torch.Tensor, shape=[n, n]
    temperature : float
        :math:`\tau > 0`.
    gamma : float
        :math:`\gamma > 1`.
    iterations : int
        Bisection steps (≥ 1).
    """
    d_neg = _check_distances(d_neg)
    tau = check_positive("temperature", temperature)
    gamma = check_positive("gamma", gamma)
    if gamma <= 1:
        raise ValueError(f"gamma must be > 1 (r_gamma is defined for gamma > 1); got gamma = {gamma}.")
    iterations = check_int("iterations", iterations, minimum=1)
    n = d_neg.shape[0]
    mask = _diag(n, d_neg)
    c = (2 * d_neg).masked_fill(mask, math.inf)
    m = c.min(dim=1).values
    # Shift each row by its minimum so that the gaps c - mu stay well conditioned.
    gaps = c - m.unsqueeze(1)

    def sum_of(nu):  # nu = m - mu > 0
        return (2 * tau / (gaps + nu.unsqueeze(1))).pow(1 / gamma).sum(dim=1)

    low = torch.full_like(m, 2 * tau)
    high = torch.full_like(m, 2 * tau * (n - 1) ** gamma) + gaps.masked_fill(mask, 0).max(dim=1).values
    # sum_of decreases in nu, so bisect on -nu.
    nu = -_row_root(lambda x: sum_of(-x), -high, -low, iterations)
    weights = (2 * tau / (gaps + nu.unsqueeze(1))).pow(1 / gamma)
    return weights.masked_fill(mask, 0.0)


def inverse_power_ratio_bound(n: int, *, temperature: float, gamma: float, spread: float) -> float:
    r"""Upper bound on :math:`\max_j\alpha_{ij}/\min_j\alpha_{ij}` for the exact :math:`r_\gamma` weights.

    .. math::

        \frac{\max_j\alpha_{ij}}{\min_j\alpha_{ij}} \le (1 - \kappa)^{-1/\gamma},\qquad
        \kappa = \frac{\Delta}{2\tau(n-1)^\gamma},\quad \Delta = \max_j 2d_{ij}^2 - \min_j 2d_{ij}^2,

    valid when :math:`\kappa < 1` (returns ``inf`` otherwise). It follows from the KKT condition
    :math:`\min_j 2d_{ij}^2 - \mu_i = 2\tau\alpha_{\max}^{-\gamma}` and :math:`\alpha_{\min}\le 1/(n-1)`
    (Chapter 4). For :math:`\ell_2`-normalised embeddings :math:`\Delta\le 4`.
    """
    n = check_int("n", n, minimum=2)
    tau = check_positive("temperature", temperature)
    gamma = check_positive("gamma", gamma)
    spread = check_positive("spread", spread)
    kappa = spread / (2 * tau * (n - 1) ** gamma)
    return math.inf if kappa >= 1 else (1 - kappa) ** (-1 / gamma)


def project_simplex(v: torch.Tensor) -> torch.Tensor:
    r"""Euclidean projection of each row of ``v`` onto the probability simplex (sparsemax).

    .. math::

        \operatorname{sparsemax}(v) = \arg\min_{a\ge0,\ \sum a = 1}\|a - v\|^2 = [v - \mu]_+,

    with the threshold :math:`\mu` from the sorted row (Held et al. 1974; Martins & Astudillo 2016).
    """
    v = check_tensor("v", v, ndim=2)
    s, _ = torch.sort(v, dim=1, descending=True)
    k = torch.arange(1, v.shape[1] + 1, dtype=v.dtype, device=v.device)
    cumulative = s.cumsum(dim=1) - 1
    support = (s * k > cumulative)
    size = support.sum(dim=1, keepdim=True)
    mu = cumulative.gather(1, size - 1) / size.to(v.dtype)
    return torch.clamp(v - mu, min=0)


def sparsemax_weights(d_neg: torch.Tensor, *, temperature: float) -> torch.Tensor:
    r"""Min player with :math:`r_s(a) = -\tfrac\tau2 a^2`: :math:`\alpha_{i\cdot} = \operatorname{sparsemax}(-2d_{i\cdot}^2/\tau)`.

    The KKT conditions give :math:`\alpha_{ij} = [\mu_i - 2d_{ij}^2]_+/\tau`: a pair gets weight zero once it is
    farther than the threshold. (The authors' code uses :math:`[\mu_i - d_{ij}^2]_+/\tau`, the same rule
    at temperature :math:`\tau/2`.)
    """
    d_neg = _check_distances(d_neg)
    tau = check_positive("temperature", temperature)
    mask = _diag(d_neg.shape[0], d_neg)
    v = -2 * d_neg / tau
    # The threshold is >= max - 1, so a diagonal entry set to (row max - 2) gets weight zero.
    top = v.masked_fill(mask, -math.inf).max(dim=1, keepdim=True).values
    return project_simplex(torch.where(mask, top - 2, v)).masked_fill(mask, 0.0)


def direct_weights(d_neg: torch.Tensor, *, temperature: float, power: float = 4.0, normalize: bool = True) -> torch.Tensor:
    r"""α-CL-direct (Eq. 12 = Eq. 45; Eq. 44 when ``normalize=False``).

    .. math::

        \alpha_{ij} = \frac{\exp(-d_{ij}^p/\tau)}{\sum_{k\neq i}\exp(-d_{ik}^p/\tau)},\qquad d_{ij}^p := (d_{ij}^2)^{p/2}.

    :math:`p = 2` gives InfoNCE's weights (Eq. 6). No optimisation is involved; it is nevertheless the
    :math:`r_H` min player for the costs :math:`2(d_{ij}^2)^{p/2}`.
    """
    d_neg = _check_distances(d_neg)
    tau = check_positive("temperature", temperature)
    p = check_positive("power", power)
    mask = _diag(d_neg.shape[0], d_neg)
    logits = (-d_neg.clamp(min=0).pow(p / 2) / tau).masked_fill(mask, -math.inf)
    if normalize:
        return torch.softmax(logits, dim=1)
    return torch.exp(logits)


def inverse_distance_weights(d_neg: torch.Tensor, *, temperature: float, exponent: float = 1.0) -> torch.Tensor:
    r"""The ``inverse`` rule of the authors' code: :math:`\alpha_{ij}\propto(d_{ij}^2 + \tau)^{-k}`, rows normalised.

    The exact :math:`r_\gamma` solution has the same shape with the offset :math:`-\mu_i/2` in place of
    :math:`\tau` and :math:`k = 1/\gamma`; the code fixes the offset instead of solving for it.
    """
    d_neg = _check_distances(d_neg)
    tau = check_positive("temperature", temperature)
    k = check_positive("exponent", exponent)
    w = (d_neg.clamp(min=0) + tau).pow(-k).masked_fill(_diag(d_neg.shape[0], d_neg), 0.0)
    return w / w.sum(dim=1, keepdim=True)


def uniform_weights(d_neg: torch.Tensor) -> torch.Tensor:
    r"""Constant :math:`\alpha_{ij} = 1/(n-1)`: the quadratic loss (linear :math:`\phi, \psi`), rows summing to one."""
    d_neg = _check_distances(d_neg)
    n = d_neg.shape[0]
    return torch.full_like(d_neg, 1 / (n - 1)).masked_fill(_diag(n, d_neg), 0.0)


def _regulariser(name: str, temperature: float, gamma: float):
    """``(r', r'')`` of a regulariser, as numpy functions of a > 0."""
    tau = temperature
    if name == "entropy":
        return (lambda a: -2 * tau * (np.log(a) + 1)), (lambda a: -2 * tau / a)
    if name == "inverse_power":
        return (lambda a: 2 * tau * a ** (-gamma)), (lambda a: -2 * tau * gamma * a ** (-gamma - 1))
    return (lambda a: -tau * a), (lambda a: -tau * np.ones_like(a))


def solve_row_numerically(costs, *, regulariser: str, temperature: float, gamma: float = 2.0, tol: float = 1e-13) -> np.ndarray:
    r"""One row of the min player by a generic optimiser, for validation.

    .. math::

        \min_{a\ge 0,\ \sum_j a_j = 1}\ \sum_j c_j a_j - \sum_j r(a_j)

    ``regulariser`` is ``"entropy"``, ``"inverse_power"`` (:math:`r_\gamma`) or ``"square"`` (:math:`r_s`).
    The first two have their minimiser inside the simplex (:math:`r'(0^+) = +\infty`); it is found by
    Newton's method for the equality-constrained problem (the step solves the KKT system of the local
    quadratic model on the hyperplane :math:`\sum_j a_j = 1`, halved until it stays positive and
    decreases the objective), from the uniform point, using only :math:`r'` and :math:`r''`.
    The square regulariser's minimiser can sit on the
    boundary, so it is found by scipy's SLSQP on the simplex directly (accurate to about 1e-9).
    Nothing here knows the closed forms.
    """
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim != 1 or c.size < 2 or not np.all(np.isfinite(c)):
        raise ValueError(f"costs must be a finite 1-D array of length >= 2; got shape {c.shape}.")
    check_choice("regulariser", regulariser, ("entropy", "inverse_power", "square"))
    tau = check_positive("temperature", temperature)
    gamma = check_positive("gamma", gamma)
    dr, d2r = _regulariser(regulariser, tau, gamma)
    c = c - c.min()
    if regulariser == "square":
        result = minimize(lambda a: c @ a + 0.5 * tau * a @ a, np.full(c.size, 1 / c.size), jac=lambda a: c + tau * a,
                          method="SLSQP", bounds=[(0, None)] * c.size,
                          constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1, "jac": lambda a: np.ones_like(a)}],
                          options={"ftol": 1e-16, "maxiter": 1000})
        return np.clip(result.x, 0, None)
    r = {"entropy": lambda a: -2 * tau * a * np.log(a),
         "inverse_power": lambda a: 2 * tau / (1 - gamma) * a ** (1 - gamma)}[regulariser]

    def objective(a):
        return c @ a - r(a).sum()

    a = np.full(c.size, 1 / c.size)
    for _ in range(200):
        g, h = c - dr(a), -d2r(a)  # gradient and (diagonal, positive) Hessian of the objective
        lam = (g / h).sum() / (1 / h).sum()
        step = -(g - lam) / h  # Newton step within the hyperplane sum(a) = 1
        t = 1.0
        while np.any(a + t * step <= 0) or objective(a + t * step) > objective(a) + 1e-15 * abs(objective(a)):
            t /= 2
            if t < 1e-20:
                break
        a = a + t * step
        if np.max(np.abs(t * step)) <= tol * np.max(a):
            break
    return a / a.sum()


@dataclass(frozen=True)
class AlphaRule:
    """A rule ``d_neg -> alpha`` with its name and parameters; ``backprop=True`` lets gradients flow through α."""

    name: str
    weights: Callable[[torch.Tensor], torch.Tensor]
    params: dict = field(default_factory=dict)
    backprop: bool = False


RULES = ("entropy", "inverse_power", "sparsemax", "direct", "inverse_distance", "uniform")
"""Names accepted by :func:`rule`."""


def rule(name: str, *, backprop: bool = False, **params) -> AlphaRule:
    """Build an :class:`AlphaRule` by name (one of :data:`RULES`) with keyword parameters of its weight function."""
    check_choice("name", name, RULES)
    fn = {"entropy": entropy_weights, "inverse_power": inverse_power_weights, "sparsemax": sparsemax_weights,
          "direct": direct_weights, "inverse_distance": inverse_distance_weights, "uniform": uniform_weights}[name]
    import inspect

    allowed = set(inspect.signature(fn).parameters) - {"d_neg"}
    unknown = set(params) - allowed
    if unknown:
        raise ValueError(f"rule {name!r} takes parameters {sorted(allowed)}; got unknown {sorted(unknown)}.")
    return AlphaRule(name=name, weights=lambda d: fn(d, **params), params=dict(params), backprop=bool(backprop))


def alpha_cl_loss(z1: torch.Tensor, z2: torch.Tensor, alpha_rule: AlphaRule) -> torch.Tensor:
    r"""The α-CL objective of Def. 1 as a loss to minimise (anchors averaged):

    .. math::

        \mathcal L_{\alpha\text{-CL}} = \frac1N\sum_i\sum_{j\neq i}\operatorname{sg}(\alpha_{ij})\,(d_i^2 - d_{ij}^2)
        = -\frac{1}{2N}\,\mathcal E_{\operatorname{sg}(\alpha)} ,

    with :math:`\alpha` from ``alpha_rule`` applied to :math:`d_{ij}^2`. The stop-gradient is dropped when
    ``alpha_rule.backprop`` is true (the "backprop α(θ)" baseline of Sec. 6).

    Parameters
    ----------
    z1, z2 : torch.Tensor, shape=[n, d]
    alpha_rule : AlphaRule
    """
    if not isinstance(alpha_rule, AlphaRule):
        raise TypeError(f"alpha_rule must be a clbook.minplayer.AlphaRule (see minplayer.rule); got {type(alpha_rule).__name__}.")
    z1, z2 = check_pair(z1, z2)
    d_pos, d_neg = pair_distances(z1, z2)
    weights = alpha_rule.weights(d_neg if alpha_rule.backprop else d_neg.detach())
    return (weights * (d_pos.unsqueeze(1) - d_neg)).sum() / z1.shape[0]
