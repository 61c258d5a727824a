r"""Pairwise importance :math:`\alpha`: from a loss member, and as the min player's solution.

Tian (2022), *Understanding Deep Contrastive Learning via Coordinate-wise Optimization* (α-CL).

**From a loss member** (Eq. 4): :math:`\alpha_{ij}(\theta) = \phi'(\xi_i)\psi'(d_i^2 - d_{ij}^2)`
(:func:`pairwise_importance`), and the energy :math:`\mathcal E_\alpha = \sum_{i\neq j}c_{ij}\alpha_{ij}`,
linear in :math:`\alpha` with :math:`c_{ij} = 2(d_{ij}^2 - d_i^2)` (:func:`energy_coefficients`, Eqs. 18–20).

**The min player** (Eq. 8a). For a separable concave regulariser :math:`\mathcal R(\alpha) =
\sum_i\sum_{j\neq i} r(\alpha_{ij})` and rows that sum to :math:`s_i`, row :math:`i` solves

.. math::

    \min_{\alpha_{i\cdot}\ge 0,\ \sum_{j\neq i}\alpha_{ij} = s_i}\
    \sum_{j\neq i} c_{ij}\alpha_{ij} - \sum_{j\neq i} r(\alpha_{ij}),

and the :math:`-2d_i^2` part of :math:`c_{ij}` is a constant of the row, so only :math:`2d_{ij}^2` matters. The
closed forms (KKT conditions :math:`c_{ij} - r'(\alpha_{ij}) = \mu_i` on the support; Chapter 4):

* :math:`r_H(a) = -2\tau a\log a` (Theorem 2, Sec. 6): :math:`\alpha_{i\cdot} = s_i\operatorname{softmax}_{j\neq i}
  (-d_{ij}^2/\tau)`, InfoNCE's weights (Eq. 6) when :math:`s_i = 1`: :func:`entropy_weights`;
* :math:`r_\gamma(a) = \tfrac{2\tau}{1-\gamma}a^{1-\gamma}`, :math:`\gamma > 1`:
  :math:`\alpha_{ij} = \big(2\tau/(2d_{ij}^2 - \mu_i)\big)^{1/\gamma}` with :math:`\mu_i` the root of the row sum:
  :func:`inverse_power_weights`;
* :math:`r_s(a) = -\tfrac\tau2 a^2`: :math:`\alpha_{i\cdot} = \operatorname{sparsemax}(-2d_{i\cdot}^2/\tau)`, the
  Euclidean projection onto the simplex: :func:`sparsemax_weights`.

Rules that come from no optimisation: the **direct** weights of Eq. 12/45 (:func:`direct_weights`), the
row-normalised inverse distance of the authors' code (:func:`inverse_distance_weights`) and the constant weights
of the quadratic loss (:func:`uniform_weights`).

**One generic solver**, :func:`solve_row_numerically`, solves the row problem for any of the three regularisers
and any row sum with nothing but :math:`r'` and :math:`r''`: it validates every closed form above
(:func:`solve_rows_numerically` runs it on every row of a batch).

:func:`alpha_cl_loss` is the α-CL training objective of Def. 1 with any rule (:func:`rule`), and
:func:`loss_and_energy_gradients` the two sides of Theorem 1 for an encoder.

Used in Chapters 1 and 4.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from ._validate import check_choice, check_int, check_pair, check_positive, check_tensor
from .losses import ContrastiveLoss, pair_distances

__all__ = [
    "pairwise_importance", "energy_coefficients",
    "entropy_weights", "inverse_power_weights", "sparsemax_weights", "project_simplex", "direct_weights",
    "inverse_distance_weights", "uniform_weights", "inverse_power_ratio_bound",
    "REGULARISERS", "solve_row_numerically", "solve_rows_numerically",
    "AlphaRule", "RULES", "rule", "alpha_cl_loss", "loss_and_energy_gradients",
]


# ------------------------------------------------------------------------------------------ from a loss member

def pairwise_importance(loss: ContrastiveLoss, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    r"""Eq. 4: :math:`\alpha_{ij}(\theta) = \phi'(\xi_i)\psi'(d_i^2 - d_{ij}^2)`, shape ``[n, n]``, zero diagonal.

    Parameters
    ----------
    loss : ContrastiveLoss
        A member of :mod:`clbook.losses` (e.g. ``clbook.losses.infonce(0.5)``).
    z1, z2 : torch.Tensor, shape=[n, d]
        The two views, ``n >= 2``, floating point, finite, same dtype and device.
    """
    if not isinstance(loss, ContrastiveLoss):
        raise TypeError(f"loss must be a clbook.losses member (e.g. clbook.losses.infonce()); got {type(loss).__name__}.")
    z1, z2 = check_pair(z1, z2)
    return loss.importance(z1, z2)


def energy_coefficients(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    r"""The coefficients :math:`c_{ij} = 2(d_{ij}^2 - d_i^2)` with :math:`\mathcal E_\alpha = \sum_{i\neq j} c_{ij}\alpha_{ij}`.

    The energy is linear in :math:`\alpha` (Eqs. 18–20 of the paper). Shape ``[n, n]``, zero diagonal; ``z1, z2`` as
    in :func:`pairwise_importance`.
    """
    d_pos, d_neg = pair_distances(z1, z2)
    c = 2 * (d_neg - d_pos.unsqueeze(1))
    return c.masked_fill(torch.eye(c.shape[0], dtype=torch.bool, device=c.device), 0.0)


# ------------------------------------------------------------------------------------ the min player's closed forms

def _check_distances(d_neg) -> torch.Tensor:
    d_neg = check_tensor("d_neg", d_neg, ndim=2)
    if d_neg.shape[0] != d_neg.shape[1] or d_neg.shape[0] < 2:
        raise ValueError(f"d_neg must be a square [n, n] matrix of half squared distances with n >= 2; "
                         f"got shape {tuple(d_neg.shape)}.")
    return d_neg


def _diag(n: int, like: torch.Tensor) -> torch.Tensor:
    return torch.eye(n, dtype=torch.bool, device=like.device)


def entropy_weights(d_neg: torch.Tensor, *, temperature: float, row_sums: torch.Tensor | None = None) -> torch.Tensor:
    r"""The min player with :math:`r_H(a) = -2\tau a\log a` (Theorem 2; α-CL-:math:`r_H` of Sec. 6).

    .. math::

        \alpha_{ij} = s_i\,\frac{e^{-d_{ij}^2/\tau}}{\sum_{k\neq i}e^{-d_{ik}^2/\tau}}
        = \arg\min_{\alpha_{i\cdot}\ge 0,\ \sum_j\alpha_{ij} = s_i}\
          \sum_{j\neq i} c_{ij}\alpha_{ij} + 2\tau\sum_{j\neq i}\alpha_{ij}\log\alpha_{ij},

    Lemma 5 at temperature :math:`2\tau` (the :math:`d_i^2` of :math:`c_{ij} = 2(d_{ij}^2 - d_i^2)` cancels in the
    softmax). With :math:`s_i = \tau^{-1}\xi_i\phi'(\xi_i)`, Theorem 2's feasible set, this is Eq. 4 for every
    member with :math:`\psi(x) = e^{x/\tau}`; with :math:`s_i = 1` it is InfoNCE's Eq. 6 (:math:`\epsilon = 0`).

    Parameters
    ----------
    d_neg : torch.Tensor, shape=[n, n]
        Half squared distances :math:`d_{ij}^2` (:func:`clbook.losses.pair_distances`), finite; diagonal ignored.
    temperature : float
        :math:`\tau > 0`.
    row_sums : torch.Tensor, shape=[n], optional
        :math:`s_i \ge 0`, same dtype and device as ``d_neg``; default all ones.

    Returns
    -------
    torch.Tensor, shape=[n, n]
        Zero diagonal, row :math:`i` sums to :math:`s_i`.
    """
    d_neg = _check_distances(d_neg)
    tau = check_positive("temperature", temperature)
    logits = (-d_neg / tau).masked_fill(_diag(d_neg.shape[0], d_neg), -math.inf)
    weights = torch.softmax(logits, dim=1)
    if row_sums is None:
        return weights
    row_sums = check_tensor("row_sums", row_sums, ndim=1)
    if row_sums.shape[0] != d_neg.shape[0] or bool((row_sums < 0).any()):
        raise ValueError(f"row_sums must be a non-negative vector of length n = {d_neg.shape[0]}; got shape "
                         f"{tuple(row_sums.shape)} with minimum {float(row_sums.min()):.3g}.")
    if row_sums.dtype != d_neg.dtype or row_sums.device != d_neg.device:
        raise ValueError(f"row_sums must share the dtype and device of d_neg ({d_neg.dtype}/{d_neg.device}); got "
                         f"{row_sums.dtype}/{row_sums.device}.")
    return row_sums.unsqueeze(1) * weights


def _row_root(sum_of, low: torch.Tensor, high: torch.Tensor, iterations: int) -> torch.Tensor:
    """Bisection for the increasing row function ``sum_of(mu) = 1`` on ``[low, high]`` (vectorised over rows)."""
    for _ in range(iterations):
        mid = 0.5 * (low + high)
        too_big = sum_of(mid) > 1
        high = torch.where(too_big, mid, high)
        low = torch.where(too_big, low, mid)
    return 0.5 * (low + high)


def inverse_power_weights(d_neg: torch.Tensor, *, temperature: float, gamma: float = 2.0, iterations: int = 200) -> torch.Tensor:
    r"""The min player with :math:`r_\gamma(a) = \tfrac{2\tau}{1-\gamma}a^{1-\gamma}` (:math:`\gamma > 1`), exactly.

    .. math::

        \alpha_{ij} = \Big(\frac{2\tau}{2d_{ij}^2 - \mu_i}\Big)^{1/\gamma},\qquad
        \mu_i < \min_{j\neq i} 2d_{ij}^2 \ \text{ such that } \sum_{j\neq i}\alpha_{ij} = 1.

    The row sum increases in :math:`\mu_i`; its root lies in
    :math:`[m_i - 2\tau (n-1)^\gamma - \Delta_i,\ m_i - 2\tau]`, :math:`m_i = \min_j 2d_{ij}^2`, and is found by
    bisection (in float64 the bracket shrinks to rounding after about 100 halvings). The bracket follows from
    :math:`1/(n-1)\le\max_j\alpha_{ij}\le 1`.

    Parameters
    ----------
    d_neg : torch.Tensor, shape=[n, n]
        As in :func:`entropy_weights`.
    temperature : float
        :math:`\tau > 0`.
    gamma : float
        :math:`\gamma > 1`.
    iterations : int
        Bisection steps, ``>= 1``.
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
    gaps = c - m.unsqueeze(1)  # each row shifted by its minimum, so that the gaps c - mu stay well conditioned

    def sum_of(nu):  # nu = m - mu > 0
        return (2 * tau / (gaps + nu.unsqueeze(1))).pow(1 / gamma).sum(dim=1)

    low = torch.full_like(m, 2 * tau)
    high = torch.full_like(m, 2 * tau * (n - 1) ** gamma) + gaps.masked_fill(mask, 0).max(dim=1).values
    nu = -_row_root(lambda x: sum_of(-x), -high, -low, iterations)  # sum_of decreases in nu: bisect on -nu
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

    Parameters
    ----------
    n : int
        Batch size, ``>= 2``.
    temperature, gamma : float
        :math:`\tau > 0`, :math:`\gamma > 1`.
    spread : float
        :math:`\Delta > 0`.
    """
    n = check_int("n", n, minimum=2)
    tau = check_positive("temperature", temperature)
    gamma = check_positive("gamma", gamma)
    if gamma <= 1:
        raise ValueError(f"gamma must be > 1 (r_gamma is defined for gamma > 1); got gamma = {gamma}.")
    spread = check_positive("spread", spread)
    log_kappa = math.log(spread) - math.log(2 * tau) - gamma * math.log(n - 1)  # in logs: (n-1)**gamma can overflow
    return math.inf if log_kappa >= 0 else (-math.expm1(log_kappa)) ** (-1 / gamma)


def project_simplex(v: torch.Tensor) -> torch.Tensor:
    r"""Euclidean projection of each row of ``v [n, m]`` onto the probability simplex (sparsemax).

    .. math::

        \operatorname{sparsemax}(v) = \arg\min_{a\ge0,\ \sum a = 1}\|a - v\|^2 = [v - \mu]_+,

    with the threshold :math:`\mu` from the sorted row (Held et al. 1974; Martins & Astudillo 2016). ``v`` is
    floating point and finite, ``m >= 1``.
    """
    v = check_tensor("v", v, ndim=2)
    if v.shape[1] < 1:
        raise ValueError(f"v must have at least one column; got shape {tuple(v.shape)}.")
    s, _ = torch.sort(v, dim=1, descending=True)
    k = torch.arange(1, v.shape[1] + 1, dtype=v.dtype, device=v.device)
    cumulative = s.cumsum(dim=1) - 1
    support = s * k > cumulative
    size = support.sum(dim=1, keepdim=True)
    mu = cumulative.gather(1, size - 1) / size.to(v.dtype)
    return torch.clamp(v - mu, min=0)


def sparsemax_weights(d_neg: torch.Tensor, *, temperature: float) -> torch.Tensor:
    r"""The min player with :math:`r_s(a) = -\tfrac\tau2 a^2`: :math:`\alpha_{i\cdot} = \operatorname{sparsemax}(-2d_{i\cdot}^2/\tau)`.

    The KKT conditions give :math:`\alpha_{ij} = [\mu_i - 2d_{ij}^2]_+/\tau`: a pair gets weight zero once it is
    farther than the threshold. (The authors' code uses :math:`[\mu_i - d_{ij}^2]_+/\tau =
    [2\mu_i - 2d_{ij}^2]_+/(2\tau)`, the same rule at temperature :math:`2\tau`.) ``d_neg`` as in
    :func:`entropy_weights`, ``temperature`` :math:`\tau > 0`.
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
    :math:`r_H` min player for the costs :math:`2(d_{ij}^2)^{p/2}`. ``d_neg`` as in :func:`entropy_weights` (negative
    rounding residue is read as 0 before the power), ``temperature`` and ``power`` :math:`> 0`. The unnormalised
    weights lie in :math:`(0, 1]`: no overflow.
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
    :math:`\tau` and :math:`k = 1/\gamma`; the code fixes the offset instead of solving for it. ``d_neg`` as in
    :func:`entropy_weights`, ``temperature`` and ``exponent`` :math:`> 0`.
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


# ------------------------------------------------------------------------------------------ the generic solver

REGULARISERS = ("entropy", "inverse_power", "square")
r"""The regularisers :func:`solve_row_numerically` knows: :math:`r_H`, :math:`r_\gamma`, :math:`r_s`."""


def _regulariser(name: str, tau: float, gamma: float):
    """``(r, r', r'')`` of a regulariser, as numpy functions of a > 0."""
    if name == "entropy":
        return (lambda a: -2 * tau * a * np.log(a)), (lambda a: -2 * tau * (np.log(a) + 1)), (lambda a: -2 * tau / a)
    if name == "inverse_power":
        return ((lambda a: 2 * tau / (1 - gamma) * a ** (1 - gamma)), (lambda a: 2 * tau * a ** (-gamma)),
                (lambda a: -2 * tau * gamma * a ** (-gamma - 1)))
    return (lambda a: -0.5 * tau * a * a), (lambda a: -tau * a), (lambda a: -tau * np.ones_like(a))


def solve_row_numerically(costs, *, regulariser: str = "entropy", temperature: float, gamma: float = 2.0,
                          row_sum: float = 1.0, tol: float = 1e-13) -> np.ndarray:
    r"""One row of the min player by a generic optimiser, for validating the closed forms.

    .. math::

        \min_{a\ge 0,\ \sum_j a_j = s}\ \sum_j c_j a_j - \sum_j r(a_j)

    ``regulariser`` is ``"entropy"`` (:math:`r_H`, Theorem 2 and Lemma 5 at temperature :math:`2\tau`),
    ``"inverse_power"`` (:math:`r_\gamma`) or ``"square"`` (:math:`r_s`). The first two have their minimiser inside
    the scaled simplex (:math:`r'(0^+) = +\infty`); it is found by Newton's method for the equality-constrained
    problem (the step solves the KKT system of the local quadratic model on the hyperplane :math:`\sum_j a_j = s`,
    halved until it stays positive and does not increase the objective), from the uniform point, using only
    :math:`r'` and :math:`r''`. The square regulariser's minimiser can sit on the boundary, so it is found by scipy's
    SLSQP on the scaled simplex (accurate to about 1e-9). Nothing here knows the closed forms.

    Parameters
    ----------
    costs : array_like, shape=[m]
        The coefficients :math:`c_j` of one row (diagonal removed), finite, ``m >= 2``. A tensor is copied to the CPU.
    regulariser : {"entropy", "inverse_power", "square"}
    temperature : float
        :math:`\tau > 0`.
    gamma : float
        :math:`\gamma > 1` (``inverse_power`` only).
    row_sum : float
        :math:`s > 0`.
    tol : float
        Newton stops when a step moves no entry by more than ``tol`` times the largest entry; ``> 0``.

    Returns
    -------
    numpy.ndarray, shape=[m]
        The minimiser found (float64).
    """
    if isinstance(costs, torch.Tensor):
        costs = costs.detach().cpu().numpy()
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim != 1 or c.size < 2 or not np.all(np.isfinite(c)):
        raise ValueError(f"costs must be a finite 1-D array of length >= 2; got shape {c.shape}.")
    check_choice("regulariser", regulariser, REGULARISERS)
    tau = check_positive("temperature", temperature)
    gamma = check_positive("gamma", gamma)
    if regulariser == "inverse_power" and gamma <= 1:
        raise ValueError(f"gamma must be > 1 for the inverse_power regulariser; got gamma = {gamma}.")
    s = check_positive("row_sum", row_sum)
    tol = check_positive("tol", tol)
    r, dr, d2r = _regulariser(regulariser, tau, gamma)
    c = c - c.min()  # a constant shift of the costs changes the objective by a constant on the scaled simplex
    if regulariser == "square":
        from scipy.optimize import minimize

        result = minimize(lambda a: c @ a + 0.5 * tau * a @ a, np.full(c.size, s / c.size), jac=lambda a: c + tau * a,
                          method="SLSQP", bounds=[(0, None)] * c.size,
                          constraints=[{"type": "eq", "fun": lambda a: a.sum() - s, "jac": lambda a: np.ones_like(a)}],
                          options={"ftol": 1e-16, "maxiter": 1000})
        return np.clip(result.x, 0, None)

    def objective(a):
        return c @ a - r(a).sum()

    a = np.full(c.size, s / c.size)
    for _ in range(500):
        g, h = c - dr(a), -d2r(a)  # gradient and (diagonal, positive) Hessian of the objective
        lam = (g / h).sum() / (1 / h).sum()
        step = -(g - lam) / h  # Newton step within the hyperplane sum(a) = s
        t = 1.0
        while np.any(a + t * step <= 0) or objective(a + t * step) > objective(a) + 1e-15 * abs(objective(a)):
            t /= 2
            if t < 1e-20:
                break
        a = a + t * step
        if np.max(np.abs(t * step)) <= tol * np.max(a):
            break
    return a * (s / a.sum())


def solve_rows_numerically(costs, *, regulariser: str = "entropy", temperature: float, gamma: float = 2.0,
                           row_sums=None, tol: float = 1e-13) -> np.ndarray:
    r"""The min player of every row of a batch by the generic solver: :func:`solve_row_numerically` row by row.

    Row :math:`i` solves :math:`\min_{a\ge 0,\ \sum_{j\neq i} a_j = s_i}\ \sum_{j\neq i} c_{ij}a_j - \sum_{j\neq i}
    r(a_j)` over its off-diagonal entries; a row with :math:`s_i = 0` is zero (the only feasible point). This is the
    generic side of the checks of Theorem 2 (Chapter 1, against Eq. 4) and of the closed forms of Sec. 6 (Chapter 4).

    Parameters
    ----------
    costs : array_like, shape=[n, n]
        The coefficients :math:`c_{ij}` (e.g. :func:`energy_coefficients`, or :math:`2d_{ij}^2`); the diagonal is
        ignored, every other entry finite; ``n >= 3``. A tensor is copied to the CPU.
    regulariser : {"entropy", "inverse_power", "square"}
    temperature : float
        :math:`\tau > 0`.
    gamma : float
        :math:`\gamma > 1` (``inverse_power`` only).
    row_sums : array_like, shape=[n], optional
        :math:`s_i \ge 0`, finite; default all ones.
    tol : float
        Newton's tolerance of :func:`solve_row_numerically`; ``> 0``.

    Returns
    -------
    numpy.ndarray, shape=[n, n]
        The minimisers found (float64), zero on the diagonal and on the rows with :math:`s_i = 0`.
    """
    if isinstance(costs, torch.Tensor):
        costs = costs.detach().cpu().numpy()
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] < 3:
        raise ValueError(f"costs must be a square [n, n] array with n >= 3; got shape {c.shape}.")
    n = c.shape[0]
    off = ~np.eye(n, dtype=bool)
    if not np.all(np.isfinite(c[off])):
        raise ValueError("costs must be finite off the diagonal.")
    if row_sums is None:
        s = np.ones(n)
    else:
        if isinstance(row_sums, torch.Tensor):
            row_sums = row_sums.detach().cpu().numpy()
        s = np.asarray(row_sums, dtype=np.float64)
        if s.shape != (n,) or not np.all(np.isfinite(s)) or np.any(s < 0):
            raise ValueError(f"row_sums must be {n} finite numbers >= 0, one per row of costs; got shape {s.shape}.")
    check_choice("regulariser", regulariser, REGULARISERS)
    check_positive("temperature", temperature)
    check_positive("tol", tol)
    solved = np.zeros((n, n))
    for i in np.flatnonzero(s > 0):
        solved[i, off[i]] = solve_row_numerically(c[i, off[i]], regulariser=regulariser, temperature=temperature,
                                                  gamma=gamma, row_sum=float(s[i]), tol=tol)
    return solved


# ------------------------------------------------------------------------------------------------- α-CL

@dataclass(frozen=True)
class AlphaRule:
    """A rule ``d_neg -> alpha`` with its name and parameters; ``backprop=True`` lets gradients flow through α."""

    name: str
    weights: Callable[[torch.Tensor], torch.Tensor]
    params: dict = field(default_factory=dict)
    backprop: bool = False


_RULE_FUNCTIONS = {"entropy": entropy_weights, "inverse_power": inverse_power_weights, "sparsemax": sparsemax_weights,
                   "direct": direct_weights, "inverse_distance": inverse_distance_weights, "uniform": uniform_weights}
RULES = tuple(_RULE_FUNCTIONS)
"""Names accepted by :func:`rule`."""


def rule(name: str, *, backprop: bool = False, **params) -> AlphaRule:
    """An :class:`AlphaRule` by name (one of :data:`RULES`) with keyword parameters of its weight function.

    ``rule("entropy", temperature=0.5)`` is α-CL-:math:`r_H`; the parameters are checked now, on a small batch, so a
    bad value fails here rather than in the middle of training.
    """
    check_choice("name", name, RULES)
    fn = _RULE_FUNCTIONS[name]
    allowed = set(inspect.signature(fn).parameters) - {"d_neg", "row_sums"}
    unknown = set(params) - allowed
    if unknown:
        raise ValueError(f"rule {name!r} takes parameters {sorted(allowed)}; got unknown {sorted(unknown)}.")
    if not isinstance(backprop, bool):
        raise TypeError(f"backprop must be True or False; got {backprop!r}.")
    fn(torch.ones(2, 2, dtype=torch.float64) - torch.eye(2, dtype=torch.float64), **params)  # validates the parameters
    return AlphaRule(name=name, weights=lambda d: fn(d, **params), params=dict(params), backprop=backprop)


def alpha_cl_loss(z1: torch.Tensor, z2: torch.Tensor, alpha_rule: AlphaRule) -> torch.Tensor:
    r"""The α-CL objective of Def. 1 as a loss to minimise (anchors averaged).

    .. math::

        \mathcal L_{\alpha\text{-CL}} = \frac1N\sum_i\sum_{j\neq i}\operatorname{sg}(\alpha_{ij})\,(d_i^2 - d_{ij}^2)
        = -\frac{1}{2N}\,\mathcal E_{\operatorname{sg}(\alpha)} ,

    with :math:`\alpha` from ``alpha_rule`` applied to :math:`d_{ij}^2`. The stop-gradient is dropped when
    ``alpha_rule.backprop`` is true (the "backprop α(θ)" baseline of Sec. 6).

    Parameters
    ----------
    z1, z2 : torch.Tensor, shape=[n, d]
        ``n >= 2``, floating point, finite, same dtype and device.
    alpha_rule : AlphaRule
        From :func:`rule`.
    """
    if not isinstance(alpha_rule, AlphaRule):
        raise TypeError(f"alpha_rule must be a clbook.alpha.AlphaRule (see clbook.alpha.rule); got {type(alpha_rule).__name__}.")
    z1, z2 = check_pair(z1, z2)
    d_pos, d_neg = pair_distances(z1, z2)
    weights = alpha_rule.weights(d_neg if alpha_rule.backprop else d_neg.detach())
    return (weights * (d_pos.unsqueeze(1) - d_neg)).sum() / z1.shape[0]


def loss_and_energy_gradients(loss: ContrastiveLoss, encoder, x1: torch.Tensor, x2: torch.Tensor, *,
                              stop_gradient: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The two sides of Theorem 1 for an encoder: :math:`\nabla_\theta\mathcal L` and :math:`\nabla_\theta\mathcal E_\alpha`.

    Computes :math:`\nabla_\theta\mathcal L_{\phi,\psi}` and :math:`\nabla_\theta\mathcal E_{\mathrm{sg}(\alpha)}`
    with :math:`\alpha = \alpha(\theta)` from Eq. 4, both by autograd, as flat vectors over the encoder's trainable
    parameters. Theorem 1 says the first equals :math:`-\tfrac12` the second. With ``stop_gradient=False`` the
    energy's gradient also flows through :math:`\alpha(\theta)` (the "backprop α" variant of the paper's Sec. 6).

    Parameters
    ----------
    loss : ContrastiveLoss
    encoder : torch.nn.Module
        Maps ``[n, d_in]`` to ``[n, d]``; at least one trainable parameter.
    x1, x2 : torch.Tensor, shape=[n, d_in]
        The two views of the batch, ``n >= 2``.
    """
    from .covariance import energy

    if not isinstance(loss, ContrastiveLoss):
        raise TypeError(f"loss must be a clbook.losses member; got {type(loss).__name__}.")
    if not isinstance(encoder, torch.nn.Module):
        raise TypeError(f"encoder must be a torch.nn.Module; got {type(encoder).__name__}.")
    x1, x2 = check_pair(x1, x2, names=("x1", "x2"))
    params = [p for p in encoder.parameters() if p.requires_grad]
    if not params:
        raise ValueError("encoder must have at least one trainable parameter.")
    z1, z2 = encoder(x1), encoder(x2)
    grad_loss = torch.autograd.grad(loss(z1, z2), params, allow_unused=True)
    z1, z2 = encoder(x1), encoder(x2)
    weights = loss.importance(z1, z2)
    if stop_gradient:
        weights = weights.detach()
    grad_energy = torch.autograd.grad(energy(weights, z1, z2), params, allow_unused=True)

    def flat(grads):
        return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, params, strict=True)])

    return flat(grad_loss), flat(grad_energy)
