r"""One-layer contrastive learning with homogeneous activations: the gated covariance :math:`A(w)`.

Tian (2023), Sec. 3: a node :math:`f = h(w^\top x)` with :math:`\|w\|_2 = 1` and a homogeneous activation
(Assumption 1, :math:`h(x) = h'(x)x`; for :math:`h(x) = x^2`, :math:`h'(x)x = 2h(x)`) has the gated input
:math:`\tilde x^w = x\,h'(w^\top x)` (Eq. 6), the gated covariance :math:`A(w) = \mathbb C_\alpha[\tilde x^w]`
and the projected dynamics of Lemma 3 (Eq. 7)

.. math::

    \dot w = P^\perp_w A(w)\,w,\qquad P^\perp_w = I - ww^\top,

which is the gradient of :math:`\mathcal E(w) = \tfrac12\mathbb C_\alpha[h(w^\top x)]` on the sphere up to the
factor :math:`1/p` for a degree-:math:`p` activation. Its critical points include the *locally maximal
eigenvectors* (Def. 3): :math:`A(w_*)w_* = \lambda_*w_*` with :math:`\lambda_*` the distinct largest eigenvalue.

Two settings:

* **population** (uniform :math:`\alpha`, no augmentation, :math:`N\to\infty`, Cor. 1): :math:`A(w) = \mathbb V_p[\tilde x^w]`
  over a finite distribution (``atoms [n, d]``, ``probs [n]``), e.g. :mod:`clbook.data.latent`; vectorised over
  ``K`` nodes (``W [K, d]``);
* **batch** (:func:`gated_covariance_batch`, :func:`energy_batch`): any :math:`\alpha` and two augmented views,
  :math:`\mathbb C^{(N)}_\alpha` of the paper's Eq. 3 (:func:`clbook.covariance.contrastive_covariance` with
  ``convention="tian2023"``: :math:`1/2N^2`, all :math:`i, j`; pass an :math:`\alpha` with a zero diagonal to leave
  out :math:`j = i`).

The ReLU gate is *tolerance-aware*: a sample counts as active only if :math:`w^\top x > \mathrm{tol}` (default
``1e-12``), the paper's convention :math:`h'(0) = 0` made robust to round-off. In the latent categorical model the
other patterns lie exactly on the hyperplane :math:`u_m^\top x = 0`, and a plain ``> 0`` lets rounding noise
switch them on.

Used in Chapters 6–8.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import activations
from .._validate import check_choice, check_int, check_nonnegative, check_positive, check_real, check_same, check_tensor
from ..losses._safe import unit_rows_any_scale

__all__ = [
    "ACTIVATIONS", "activation", "activation_derivative", "homogeneity_degree", "gated_inputs", "gated_covariance",
    "gated_covariance_batch", "energy", "energy_batch", "projected_rhs", "ProjectedAscent", "projected_ascent",
    "LMEReport", "lme_report", "match_patterns", "circle_landscape", "periodic_local_maxima",
]

ACTIVATIONS = activations.supported("linear", "relu", "leaky_relu", "quadratic")
GATE_TOL = 1e-12


def _check_activation(name: str) -> str:
    return check_choice("activation", name, ACTIVATIONS)


def activation(t: torch.Tensor, name: str, *, slope: float = 0.05) -> torch.Tensor:
    r"""The activation :math:`h(t)`: ``linear``, ``relu``, ``leaky_relu`` (``slope`` for :math:`t\le0`), ``quadratic`` (:math:`t^2`).

    ``t`` is a floating-point tensor of any shape (NaN and infinities pass through); ``slope`` is finite.
    """
    _check_activation(name)
    t = check_tensor("t", t, finite=False)
    slope = check_real("slope", slope)
    return activations.apply_unchecked(t, name, slope=slope)


def activation_derivative(t: torch.Tensor, name: str, *, slope: float = 0.05, tol: float = GATE_TOL) -> torch.Tensor:
    r""":math:`h'(t)` with the gate convention :math:`h'(t) = 0` (ReLU) or ``slope`` (leaky) for :math:`t\le\mathrm{tol}`.

    ``t`` is a floating-point tensor of any shape; ``tol >= 0``.
    """
    _check_activation(name)
    t = check_tensor("t", t, finite=False)
    slope = check_real("slope", slope)
    tol = check_nonnegative("tol", tol)
    return activations.derivative_unchecked(t, name, slope=slope, tol=tol)


_h = activation


def homogeneity_degree(name: str) -> int:
    r"""The degree :math:`p` with :math:`h'(x)x = p\,h(x)`: 1 for linear, ReLU, leaky ReLU (Assumption 1), 2 for :math:`x^2`."""
    return activations.REGISTRY[_check_activation(name)].degree


def _as_nodes(W) -> tuple[torch.Tensor, bool]:
    W = check_tensor("W", W)
    if W.ndim == 1:
        W, single = W.unsqueeze(0), True
    elif W.ndim == 2:
        single = False
    else:
        raise ValueError(f"W must be [d] (one node) or [K, d]; got shape {tuple(W.shape)}.")
    if W.shape[0] < 1 or W.shape[1] < 1:
        raise ValueError(f"W must hold at least one node of dimension d >= 1; got shape {tuple(W.shape)}.")
    return W, single


def _check_data(atoms, probs, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    atoms = check_tensor("atoms", atoms, ndim=2)
    if atoms.shape[1] != d or atoms.shape[0] < 1:
        raise ValueError(f"atoms must be [n >= 1, {d}] to match W; got {tuple(atoms.shape)}.")
    n = atoms.shape[0]
    p = torch.full((n,), 1.0 / n, dtype=atoms.dtype, device=atoms.device) if probs is None else check_tensor("probs", probs, ndim=1)
    if p.shape[0] != n or bool((p < 0).any()) or abs(float(p.sum()) - 1) > 1e-9:
        raise ValueError(f"probs must be a probability vector over the {n} atoms (>= 0, summing to 1).")
    return atoms, p.to(atoms)


def gated_inputs(W, x, *, activation: str = "relu", slope: float = 0.05, tol: float = GATE_TOL) -> torch.Tensor:
    r"""Eq. 6: :math:`\tilde x^w = x\,h'(w^\top x)`, shape ``[K, n, d]`` (``[n, d]`` for a single ``w [d]``)."""
    W, single = _as_nodes(W)
    x = check_tensor("x", x, ndim=2)
    if x.shape[1] != W.shape[1]:
        raise ValueError(f"x must be [n, {W.shape[1]}]; got {tuple(x.shape)}.")
    gate = activation_derivative(W @ x.T, activation, slope=slope, tol=tol)        # [K, n]
    out = gate.unsqueeze(2) * x.unsqueeze(0)
    return out[0] if single else out


def gated_covariance(W, atoms, probs=None, *, activation: str = "relu", slope: float = 0.05,
                     tol: float = GATE_TOL) -> torch.Tensor:
    r"""Population gated covariance :math:`A(w) = \mathbb V_p[\tilde x^w]` (uniform :math:`\alpha`, Cor. 1), ``[K, d, d]``.

    .. math::

        A(w) = \sum_i p_i\,\tilde x_i\tilde x_i^\top - \Big(\sum_ip_i\tilde x_i\Big)\Big(\sum_ip_i\tilde x_i\Big)^\top,
        \qquad \tilde x_i = x_i\,h'(w^\top x_i).
    """
    W, single = _as_nodes(W)
    atoms, p = _check_data(atoms, probs, W.shape[1])
    xt = gated_inputs(W, atoms, activation=activation, slope=slope, tol=tol)     # [K, n, d]
    mean = torch.einsum("n,knd->kd", p, xt)
    A = torch.einsum("n,knd,kne->kde", p, xt, xt) - mean.unsqueeze(2) * mean.unsqueeze(1)
    return A[0] if single else A


def _check_views(x1, x2, alpha) -> tuple[torch.Tensor, torch.Tensor]:
    x1, x2 = check_tensor("x1", x1, ndim=2), check_tensor("x2", x2, ndim=2)
    check_same(("x1", "x2"), x1, x2, shape=True)
    if x1.shape[0] < 2:
        raise ValueError(f"x1 and x2 must be the two views [N >= 2, d] of one batch; got x1 {tuple(x1.shape)} and x2 {tuple(x2.shape)}.")
    alpha = check_tensor("alpha", alpha, ndim=2)
    if alpha.shape != (x1.shape[0],) * 2:
        raise ValueError(f"alpha must have shape [N, N] = [{x1.shape[0]}, {x1.shape[0]}]; got {tuple(alpha.shape)}.")
    return x1, x2


def gated_covariance_batch(w, x1, x2, alpha, *, activation: str = "relu", slope: float = 0.05,
                           tol: float = GATE_TOL) -> torch.Tensor:
    r"""Finite-batch :math:`A(w) = \mathbb C^{(N)}_\alpha[\tilde x^w]` of Eq. 3 with two views, ``[d, d]``.

    ``w [d]``; ``x1, x2 [N, d]`` the two views (``N >= 2``); ``alpha [N, N]`` (its diagonal weighs the positive
    pairs, as in Eq. 3). Uses :func:`clbook.covariance.contrastive_covariance` with ``convention="tian2023"``.
    """
    from ..covariance import contrastive_covariance

    w = check_tensor("w", w, ndim=1)
    _check_views(x1, x2, alpha)
    g1 = gated_inputs(w, x1, activation=activation, slope=slope, tol=tol)
    g2 = gated_inputs(w, x2, activation=activation, slope=slope, tol=tol)
    return contrastive_covariance(alpha, g1, g2, convention="tian2023")


def energy(W, atoms, probs=None, *, activation: str = "relu", slope: float = 0.05) -> torch.Tensor:
    r"""Population energy per node, :math:`\mathcal E(w) = \tfrac12\mathbb V_p[h(w^\top x)]` (Eq. 5 summand), ``[K]``."""
    W, single = _as_nodes(W)
    atoms, p = _check_data(atoms, probs, W.shape[1])
    f = _h(W @ atoms.T, activation, slope=slope)           # [K, n]
    mean = f @ p
    e = 0.5 * ((f * f) @ p - mean * mean)
    return e[0] if single else e


def energy_batch(w, x1, x2, alpha, *, activation: str = "relu", slope: float = 0.05) -> torch.Tensor:
    r"""Finite-batch energy :math:`\tfrac12\mathbb C^{(N)}_\alpha[h(w^\top x)]` of Eq. 3, a 0-d tensor.

    Differentiable in
    ``w``; detach ``alpha``). Shapes as in :func:`gated_covariance_batch`.
    """
    from ..covariance import contrastive_covariance

    w = check_tensor("w", w, ndim=1)
    x1, x2 = _check_views(x1, x2, alpha)
    if x1.shape[1] != w.shape[0]:
        raise ValueError(f"x1 must be [N, {w.shape[0]}] to match w; got {tuple(x1.shape)}.")
    f1, f2 = _h(x1 @ w, activation, slope=slope), _h(x2 @ w, activation, slope=slope)
    return 0.5 * contrastive_covariance(alpha, f1, f2, convention="tian2023").squeeze()


def projected_rhs(W, atoms, probs=None, *, activation: str = "relu", slope: float = 0.05,
                  tol: float = GATE_TOL) -> torch.Tensor:
    r"""Eq. 7 right-hand side :math:`P^\perp_wA(w)w` for every node, ``[K, d]``, without forming :math:`A`.

    Uses :math:`A(w)w = \mathbb E[\tilde x\,(w^\top\tilde x)] - \mathbb E[\tilde x]\,\mathbb E[w^\top\tilde x]`.
    """
    W, single = _as_nodes(W)
    atoms, p = _check_data(atoms, probs, W.shape[1])
    pre = W @ atoms.T                                               # [K, n]
    gate = activation_derivative(pre, activation, slope=slope, tol=tol)
    proj = gate * pre                                               # w^T x~, [K, n]
    weighted = gate * p                                             # p_i h'(w^T x_i)
    Aw = (weighted * proj) @ atoms - (weighted @ atoms) * (proj @ p).unsqueeze(1)
    rhs = Aw - (Aw * W).sum(dim=1, keepdim=True) * W / (W * W).sum(dim=1, keepdim=True)
    return rhs[0] if single else rhs


@dataclass
class ProjectedAscent:
    """Result of :func:`projected_ascent`.

    final unit weights ``W [K, d]``, the largest ``‖P⊥Aw‖`` at the end, the number of steps taken, and the stopping
    reason (``"converged"`` or ``"max_steps"``).
    """

    W: torch.Tensor
    residual: float
    steps: int
    stopping_reason: str


def projected_ascent(W0, atoms, probs=None, *, activation: str = "relu", step: float = 0.5, max_steps: int = 3000,
                     tol: float = 1e-10, slope: float = 0.05, gate_tol: float = GATE_TOL) -> ProjectedAscent:
    r"""Discretised Eq. 7 on the sphere, every node at once: :math:`w \leftarrow (w + \eta P^\perp_wA(w)w)/\|\cdot\|`.

    Stops when :math:`\max_k\|P^\perp_{w_k}A(w_k)w_k\| <` ``tol`` or after ``max_steps``.
    """
    W, _ = _as_nodes(W0)
    step = check_positive("step", step)
    max_steps = check_int("max_steps", max_steps, 1)
    tol = check_positive("tol", tol)
    if bool((W == 0).all(dim=1).any()):
        raise ValueError("W0 must have non-zero rows (each node a direction); got a zero row.")
    W = unit_rows_any_scale(W)  # exact at any finite scale (W0 * 1e200 is the same start)
    residual = float("inf")
    for k in range(max_steps):
        rhs = projected_rhs(W, atoms, probs, activation=activation, slope=slope, tol=gate_tol)
        residual = float(rhs.norm(dim=1).max())
        if residual < tol:
            return ProjectedAscent(W, residual, k, "converged")
        W = W + step * rhs
        W = W / W.norm(dim=1, keepdim=True)
    return ProjectedAscent(W, residual, max_steps, "max_steps")


@dataclass
class LMEReport:
    r"""Def. 3 at a unit vector ``w``.

    Rayleigh quotient ``value`` :math:`w^\top A w`, eigen-residual :math:`\|Aw - (w^\top Aw)w\|`, the top two
    eigenvalues, ``overlap`` :math:`|\langle w,\phi_1\rangle|` and ``is_lme``.
    """

    value: float
    residual: float
    lambda1: float
    lambda2: float
    overlap: float
    is_lme: bool


def lme_report(w, atoms, probs=None, *, activation: str = "relu", slope: float = 0.05, tol: float = 1e-8) -> LMEReport:
    r"""Is ``w`` a locally maximal eigenvector (Def. 3)? Needs :math:`A(w)w = \lambda_1 w` with :math:`\lambda_1 > \lambda_2`."""
    w = check_tensor("w", w, ndim=1)
    if bool((w == 0).all()):
        raise ValueError("w must be non-zero (a direction).")
    w = unit_rows_any_scale(w)  # exact at any finite scale
    A = gated_covariance(w, atoms, probs, activation=activation, slope=slope)
    evals, evecs = torch.linalg.eigh(A)
    value = float(w @ A @ w)
    residual = float((A @ w - value * w).norm())
    l1, l2 = float(evals[-1]), float(evals[-2]) if evals.numel() > 1 else float("-inf")
    overlap = float((evecs[:, -1] @ w).abs())
    ok = residual < tol and abs(value - l1) < tol and l1 - l2 > tol
    return LMEReport(value, residual, l1, l2, overlap, ok)


def match_patterns(W, U, *, threshold: float = 0.99, signed: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Assign each node to the pattern it has converged to: ``(assignment [K], counts [M])``.

    Node :math:`k` matches :math:`u_m` if :math:`\cos(w_k, u_m) >` ``threshold`` (:math:`|\cos|` if not ``signed``,
    as for linear nodes, where :math:`w` and :math:`-w` are equivalent); unmatched nodes get ``-1``.
    """
    W, _ = _as_nodes(W)
    U = check_tensor("U", U, ndim=2)
    if U.shape[0] != W.shape[1]:
        raise ValueError(f"U must be [d, M] with the d = {W.shape[1]} of W (one pattern per column); got shape {tuple(U.shape)}.")
    check_same(("W", "U"), W, U)
    cos = unit_rows_any_scale(W) @ unit_rows_any_scale(U.T).T  # cosines at any finite scale
    cos = cos if signed else cos.abs()
    best, idx = cos.max(dim=1)
    assignment = torch.where(best > threshold, idx, torch.full_like(idx, -1))
    counts = torch.bincount(assignment[assignment >= 0], minlength=U.shape[1])
    return assignment, counts


def circle_landscape(theta, points, probs=None, *, activation: str = "relu", slope: float = 0.05) -> torch.Tensor:
    r"""Fig. 8: :math:`\mathcal E(\theta) = \tfrac12\mathbb V[h(w^\top x)]` with :math:`w = (\cos\theta, \sin\theta)`, ``[T]``."""
    theta = check_tensor("theta", theta, ndim=1)
    W = torch.stack([torch.cos(theta), torch.sin(theta)], dim=1)
    return energy(W, points, probs, activation=activation, slope=slope)


def periodic_local_maxima(values, *, prominence: float = 0.0) -> torch.Tensor:
    r"""Indices of the strict local maxima of a periodic sequence (a plateau counts once), ``[m]``.

    A maximum must exceed both neighbours on its plateau's sides by more than ``prominence``. Sample the
    period without repeating its endpoint (``endpoint=False``), or :math:`\theta = \pm\pi` shows up twice.
    """
    v = check_tensor("values", values, ndim=1)
    prominence = check_nonnegative("prominence", prominence)
    n = v.shape[0]
    if n < 3:
        raise ValueError(f"values needs at least 3 samples; got {n}.")
    out = []
    for i in range(n):
        if not v[i] > v[i - 1] + prominence:
            continue
        j = i
        while v[(j + 1) % n] == v[i] and (j + 1) % n != i:
            j += 1
        if v[i] > v[(j + 1) % n] + prominence:
            out.append(i)
    return torch.tensor(out, dtype=torch.long)
