r"""Orthogonality-constrained dynamics of the linear two-layer SSL model (Esser et al. 2023, Sec. 5, App.).

The model is :math:`u(x) = W_2^\top W_1 x` with :math:`W_1\in\mathbb R^{h\times d}`, :math:`W_2\in\mathbb R^{h\times z}`
on the Stiefel manifolds :math:`W_1^\top W_1 = I_d`, :math:`W_2^\top W_2 = I_z`, and the trace loss of Def. 1
(Eq. 8), :math:`\mathcal L = \operatorname{Tr}(W_2^\top W_1 C W_1^\top W_2)` with symmetric :math:`C`
(:func:`clbook.dynamics.ssl.trace_loss`, gradients :func:`clbook.dynamics.ssl.euclidean_gradients`).
This module holds:

* the Stiefel geometry: the paper's projection :math:`(I - WW^\top)G` (:func:`horizontal_project`), the
  embedded-metric tangent projection :math:`G - W\operatorname{sym}(W^\top G)` (:func:`tangent_project`), the
  canonical-metric gradient :math:`G - WG^\top W` (:func:`canonical_gradient`), one retracted step of a layer
  (:func:`projected_step`; the retractions and Haar draws are :mod:`clbook.linalg`'s), and weights with a
  prescribed :math:`M_0 = W_1^\top W_2` (:func:`embed_weights`);
* the discrete training of Eq. 11 under three schemes (:func:`step`, :func:`train`), with a result dataclass;
* the right-hand side of the width-independent ODE of Thm 2 (Eq. 9) for :math:`q = V^\top W_1^\top W_2` and of
  the ODEs of the two other schemes (:func:`q_rhs`), its integration with scipy's ``solve_ivp`` (:func:`solve_q`)
  and its Euler discretisation, Eq. 12 (:func:`euler_q`);
* for :math:`z = 1` (Thm 3): the semi-closed form (:func:`semi_closed_form`), the Jacobian (:func:`jacobian_q`)
  and the escape time from the saddle :math:`q = 0` (:func:`escape_times`).

Everything computes in torch on the device and dtype of :func:`clbook.setup` (arguments are converted there on
entry); ``solve_ivp`` evaluates the right-hand sides in float64 on the CPU and the solutions are moved back.
Used in Chapter 13, and by :mod:`clbook.dynamics.ssl` and :mod:`clbook.dynamics.wide` for the projected step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import check_choice, check_int, check_positive, check_real
from ..linalg import RETRACTIONS, haar_orthonormal, retract, single_thread, stiefel_error
from .ssl import setup_tensor, trace_gradients, trace_weights

__all__ = [
    "SCHEMES", "horizontal_project", "tangent_project", "canonical_gradient", "projected_step", "embed_weights", "step",
    "train", "TrainResult", "q_rhs", "solve_q", "euler_q", "ODEResult", "semi_closed_form", "jacobian_q", "escape_times",
]

SCHEMES = ("paper", "euclidean", "canonical")
"""``paper``: :math:`-(I - WW^\\top)\\nabla\\mathcal L` (the flow of Thm 2); ``euclidean``: a plain gradient step
followed by a retraction (Eq. 11 as printed, with the sign fixed); ``canonical``: the canonical-metric Stiefel gradient."""

_ON_MANIFOLD = 1e-8
"""How far from :math:`W^\\top W = I` a starting point may be (rounding of a retraction is ~1e-15)."""


def _tall(name: str, W) -> torch.Tensor:
    W = setup_tensor(name, W, 2)
    if W.shape[0] < W.shape[1] or W.shape[1] < 1:
        raise ValueError(f"{name} must be tall, shape [n, p] with n >= p >= 1; got {tuple(W.shape)}.")
    return W


def _point_and_gradient(W, G) -> tuple[torch.Tensor, torch.Tensor]:
    W, G = _tall("W", W), setup_tensor("G", G, 2)
    if G.shape != W.shape:
        raise ValueError(f"G must have the shape of W {tuple(W.shape)}; got {tuple(G.shape)}.")
    return W, G


def _sym(A: torch.Tensor) -> torch.Tensor:
    return (A + A.T) / 2


def horizontal_project(W, G) -> torch.Tensor:
    r"""The paper's projection of a Euclidean gradient, :math:`(I - WW^\top)G` (App., proof of Thm 2).

    ``W [n, p]`` tall, ``G [n, p]``. Computed as ``G - W @ (W.T @ G)`` so that no :math:`n\times n` matrix is
    formed. For :math:`W_2` it equals the Riemannian Stiefel gradient (the loss is invariant under
    :math:`W_2\mapsto W_2R`); for :math:`W_1` it drops the component :math:`W\operatorname{skew}(W^\top G)` and is the
    Grassmann-horizontal projection.
    """
    W, G = _point_and_gradient(W, G)
    return _direction(W, G, "paper")


def tangent_project(W, G) -> torch.Tensor:
    r"""Orthogonal projection onto the tangent space of the Stiefel manifold at :math:`W` (embedded metric).

    .. math:: P_W(G) = G - W\operatorname{sym}(W^\top G),\qquad \operatorname{sym}(A) = (A + A^\top)/2 .

    Idempotent, and :math:`W^\top P_W(G)` is skew-symmetric, for ``W`` with orthonormal columns.
    """
    W, G = _point_and_gradient(W, G)
    return G - W @ _sym(W.T @ G)


def canonical_gradient(W, G) -> torch.Tensor:
    r"""The Riemannian gradient for the canonical metric of the Stiefel manifold, :math:`G - WG^\top W`."""
    W, G = _point_and_gradient(W, G)
    return _direction(W, G, "canonical")


def _direction(W, G, scheme):
    if scheme == "paper":
        return G - W @ (W.T @ G)
    if scheme == "canonical":
        return G - W @ (G.T @ W)
    return G


def projected_step(W, G, *, eta: float, scheme: str = "paper", retraction: str = "qr") -> torch.Tensor:
    r"""One step of one layer: :math:`W\leftarrow\operatorname{retr}(W - \eta\,D(W, G))`, the update of Eq. 11.

    ``scheme`` picks :math:`D` (:data:`SCHEMES`): ``paper`` :math:`(I - WW^\top)G`, ``euclidean`` :math:`G`,
    ``canonical`` :math:`G - WG^\top W`; ``retraction`` is ``"qr"`` or ``"polar"`` (:func:`clbook.linalg.retract`).
    ``W [n, p]`` tall, ``G`` of its shape, ``eta > 0``.
    """
    W, G = _point_and_gradient(W, G)
    eta = check_positive("eta", eta)
    check_choice("scheme", scheme, SCHEMES)
    check_choice("retraction", retraction, RETRACTIONS)
    return projected_step_unchecked(W, G, eta, scheme, retraction)


def projected_step_unchecked(W, G, eta, scheme="paper", retraction="qr"):
    """:func:`projected_step` without the argument checks, for the training loops (one step of one layer).

    ``W`` and ``G`` are torch tensors (retracted by :func:`clbook.linalg.retract`) or numpy matrices ``[n, k]``: the
    same retraction, the Q factor with a positive diagonal of R by Gram-Schmidt (one step from orthonormal columns,
    where it matches Householder QR to rounding, at a third of ``numpy.linalg.qr``'s overhead for a few columns), or
    the polar factor.
    """
    W = W - eta * _direction(W, G, scheme)
    if not isinstance(W, np.ndarray):
        return retract(W, method=retraction)
    if retraction == "qr":
        Q = np.empty_like(W)
        for j in range(W.shape[1]):
            v = W[:, j] - Q[:, :j] @ (Q[:, :j].T @ W[:, j])
            norm = math.sqrt(v @ v)
            if norm == 0:
                raise ValueError("W must have full column rank to be retracted.")
            Q[:, j] = v / norm
        return Q
    U, S, Vh = np.linalg.svd(W, full_matrices=False)
    if (S[..., -1] <= 0).any():
        raise ValueError("W must have full column rank to be retracted.")
    return U @ Vh


def embed_weights(M0, h: int, *, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Weights :math:`W_1\ [h, d]`, :math:`W_2\ [h, z]` on the Stiefel manifolds with :math:`W_1^\top W_2 = M_0`.

    With :math:`O` a Haar point ``[h, d + z]`` (:func:`clbook.linalg.haar_orthonormal`, drawn with ``generator``):
    :math:`W_1 = O_{:, :d}`, :math:`W_2 = O_{:, :d}M_0 + O_{:, d:}(I - M_0^\top M_0)^{1/2}`. Needs
    :math:`h\ge d + z` and :math:`\|M_0\|_2\le 1`. Two widths with the same ``M0`` give the same Gram matrix of
    :math:`[W_1, W_2]`.
    """
    M0 = setup_tensor("M0", M0, 2)
    d, z = M0.shape
    if min(d, z) < 1:
        raise ValueError(f"M0 must be a non-empty matrix [d, z]; got shape {tuple(M0.shape)}.")
    h = check_int("h", h, d + z)
    norm = float(torch.linalg.matrix_norm(M0, 2))
    if norm > 1 + 1e-12:
        raise ValueError(f"M0 must have operator norm <= 1; got {norm:.6g}.")
    O = haar_orthonormal(h, d + z, generator=generator, device=M0.device, dtype=M0.dtype)
    ev, U = torch.linalg.eigh(torch.eye(z, dtype=M0.dtype, device=M0.device) - M0.T @ M0)
    root = (U * ev.clamp(min=0).sqrt()) @ U.T
    return O[:, :d], O[:, :d] @ M0 + O[:, d:] @ root


def _start(W1, W2, C):
    W1, W2, C = trace_weights(W1, W2, C, symmetric=True)
    for name, W in (("W1", W1), ("W2", W2)):
        if W.shape[0] < W.shape[1]:
            raise ValueError(f"{name} must be tall (h >= its columns) to have orthonormal columns; got {tuple(W.shape)}.")
        if stiefel_error(W) > _ON_MANIFOLD:
            raise ValueError(f"{name} must have orthonormal columns ({name}ᵀ{name} = I within {_ON_MANIFOLD:g}); "
                             "retract it with clbook.linalg.retract or draw it with clbook.linalg.haar_orthonormal.")
    return W1, W2, C


def _check_scheme(eta, scheme, retraction):
    check_choice("scheme", scheme, SCHEMES)
    check_choice("retraction", retraction, RETRACTIONS)
    return check_positive("eta", eta)


def step(W1, W2, C, *, eta: float, scheme: str = "paper", retraction: str = "qr") -> tuple[torch.Tensor, torch.Tensor]:
    r"""One step of Eq. 11 (sign fixed) for both layers, from the same (old) point: :func:`projected_step` of each.

    ``W1 [h, d]``, ``W2 [h, z]`` with orthonormal columns, symmetric ``C [d, d]``, ``eta > 0``.
    """
    eta = _check_scheme(eta, scheme, retraction)
    W1, W2, C = _start(W1, W2, C)
    return _step(W1, W2, C, eta, scheme, retraction)


def _step(W1, W2, C, eta, scheme, retraction):
    G1, G2 = trace_gradients(W1, W2, C)
    return projected_step_unchecked(W1, G1, eta, scheme, retraction), projected_step_unchecked(W2, G2, eta, scheme, retraction)


@dataclass(frozen=True)
class TrainResult:
    r"""Discrete training.

    times ``t = k·eta``, ``M [T+1, d, z]`` (:math:`W_1^\top W_2`), losses, final weights, and the largest constraint
    error :math:`\|W^\top W - I\|_{\max}` seen along the run.
    """

    t: torch.Tensor
    M: torch.Tensor
    loss: torch.Tensor
    W1: torch.Tensor
    W2: torch.Tensor
    constraint_error: float
    stopping_reason: str


def train(W1, W2, C, *, eta: float, steps: int, scheme: str = "paper", retraction: str = "qr") -> TrainResult:
    r"""Run :func:`step` ``steps >= 1`` times from ``(W1, W2)`` and record :math:`M = W_1^\top W_2` and the loss.

    The loop runs with one thread (:func:`clbook.linalg.single_thread`): the matrices are thin, and a
    multi-threaded BLAS on a busy machine can be a hundred times slower for them.
    """
    eta = _check_scheme(eta, scheme, retraction)
    W1, W2, C = _start(W1, W2, C)
    steps = check_int("steps", steps, 1)
    with single_thread():
        return train_unchecked(W1, W2, C, eta=eta, steps=steps, scheme=scheme, retraction=retraction)


def train_unchecked(W1, W2, C, *, eta: float, steps: int, scheme: str = "paper", retraction: str = "qr") -> TrainResult:
    """The loop of :func:`train`, without its checks, on torch tensors or on numpy arrays.

    ``W1``, ``W2`` (orthonormal columns) and ``C`` are all torch tensors or all numpy arrays (float64); the same steps
    run on either (torch for the package and the chapters, numpy for a panel's thin matrices, where torch's
    per-operation overhead is most of the time). The result holds torch tensors.
    """
    numpy = isinstance(W1, np.ndarray)
    if numpy:
        I1, I2 = np.eye(W1.shape[1]), np.eye(W2.shape[1])
    else:
        I1 = torch.eye(W1.shape[1], dtype=W1.dtype, device=W1.device)
        I2 = torch.eye(W2.shape[1], dtype=W2.dtype, device=W2.device)
    xp = np if numpy else torch
    Ms, errs = [W1.T @ W2], []
    for _ in range(steps):
        W1, W2 = _step(W1, W2, C, eta, scheme, retraction)
        Ms.append(W1.T @ W2)
        errs.append(xp.maximum(abs(W1.T @ W1 - I1).max(), abs(W2.T @ W2 - I2).max()))
    M = xp.stack(Ms)
    loss = xp.einsum("tdz,de,tez->t", M, C, M)
    if numpy:
        t = eta * np.arange(steps + 1, dtype=np.float64)
        t, M, loss, W1, W2 = (torch.from_numpy(np.ascontiguousarray(a)) for a in (t, M, loss, W1, W2))
    else:
        t = eta * torch.arange(steps + 1, dtype=W1.dtype, device=W1.device)
    return TrainResult(t, M, loss, W1, W2, float(xp.stack(errs).max()), "steps")


_RHS_COEF = {"paper": (2.0, 2.0), "euclidean": (1.0, 3.0), "canonical": (0.0, 4.0)}


def _q_rhs(Q: torch.Tensor, lam: torch.Tensor, scheme: str) -> torch.Tensor:
    a, b = _RHS_COEF[scheme]
    LQ = lam[:, None] * Q
    return -4 * LQ + a * LQ @ (Q.T @ Q) + b * Q @ (Q.T @ LQ)


def _q_and_lam(q, lam, qname: str = "q") -> tuple[torch.Tensor, torch.Tensor, bool]:
    q, lam = setup_tensor(qname, q), setup_tensor("lam", lam, 1)
    flat = q.ndim == 1
    Q = q[:, None] if flat else q
    if Q.ndim != 2 or Q.shape[0] != lam.shape[0] or min(Q.shape) < 1:
        raise ValueError(f"{qname} must be [d] or [d, z] with d = len(lam) = {lam.shape[0]} >= 1; got {tuple(q.shape)}.")
    return Q, lam, flat


def q_rhs(q, lam, *, scheme: str = "paper") -> torch.Tensor:
    r"""Right-hand side of the ODE for :math:`q = V^\top W_1^\top W_2` (shape ``[d, z]``), :math:`\Lambda = \operatorname{diag}(\lambda)`.

    ``paper`` is Thm 2, Eq. 9:

    .. math:: \dot q = -2\,[2\Lambda q - \Lambda q q^\top q - q q^\top\Lambda q] .

    ``euclidean`` (plain GD + polar retraction): :math:`-4\Lambda q + \Lambda qq^\top q + 3qq^\top\Lambda q`;
    ``canonical``: :math:`-4(I - qq^\top)\Lambda q` (Oja's flow). A 1-D ``q`` is treated as ``z = 1``.
    """
    check_choice("scheme", scheme, SCHEMES)
    Q, lam, flat = _q_and_lam(q, lam)
    out = _q_rhs(Q, lam, scheme)
    return out[:, 0] if flat else out


@dataclass(frozen=True)
class ODEResult:
    r"""Solution of the q-ODE on a time grid: ``t [T]``, ``q [T, d, z]``, the loss :math:`\operatorname{Tr}(q^\top\Lambda q)`."""

    t: torch.Tensor
    q: torch.Tensor
    loss: torch.Tensor
    stopping_reason: str


def _loss_q(q, lam):
    return torch.einsum("tdz,d,tdz->t", q, lam, q)


def _grid(t) -> torch.Tensor:
    t = setup_tensor("t", t, 1)
    if t.numel() < 1 or float(t[0]) != 0 or bool((t[1:] <= t[:-1]).any()):
        raise ValueError("t must be a non-empty grid that starts at 0 and increases strictly.")
    return t


def _cpu(x: torch.Tensor) -> torch.Tensor:
    return x.detach().to("cpu", torch.float64)


def _integrate(rhs, t: torch.Tensor, y0: torch.Tensor, rtol: float, atol: float):
    """``solve_ivp`` (DOP853) of ``dy/dt = rhs(y)`` with ``rhs`` on float64 CPU tensors; the solution ``[T, *y0.shape]``."""
    shape = tuple(y0.shape)
    t_cpu = _cpu(t).numpy()
    from scipy.integrate import solve_ivp

    sol = solve_ivp(lambda _, y: rhs(torch.from_numpy(y).view(shape)).reshape(-1).numpy(), (0.0, float(t_cpu[-1])),
                    _cpu(y0).reshape(-1).numpy(), method="DOP853", t_eval=t_cpu, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return torch.from_numpy(sol.y.T.copy()).view(len(t_cpu), *shape)


def solve_q(q0, lam, t, *, scheme: str = "paper", rtol: float = 1e-11, atol: float = 1e-13) -> ODEResult:
    """Integrate :func:`q_rhs` with scipy's ``solve_ivp`` (DOP853) and return the solution at the times ``t``.

    ``q0 [d]`` or ``[d, z]``, ``lam [d]``, ``t`` a strictly increasing grid from 0, ``rtol, atol > 0``.
    """
    check_choice("scheme", scheme, SCHEMES)
    Q0, lam, _ = _q_and_lam(q0, lam, "q0")
    t = _grid(t)
    rtol, atol = check_positive("rtol", rtol), check_positive("atol", atol)
    lam_cpu = _cpu(lam)
    q = _integrate(lambda Q: _q_rhs(Q, lam_cpu, scheme), t, Q0, rtol, atol).to(Q0)
    return ODEResult(t, q, _loss_q(q, lam), "t_end")


def euler_q(q0, lam, *, eta: float, steps: int) -> ODEResult:
    r"""Eq. 12, the Euler discretisation of Eq. 9 (``eta > 0``, ``steps >= 1``).

    .. math:: q_{t+1} = q_t - 2\eta\,[2\Lambda q_t - \Lambda q_tq_t^\top q_t - q_tq_t^\top\Lambda q_t]

    Its cost per step does not depend on the width :math:`h`.
    """
    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, 1)
    Q0, lam, _ = _q_and_lam(q0, lam, "q0")
    q = [Q0]
    for _ in range(steps):
        q.append(q[-1] + eta * _q_rhs(q[-1], lam, "paper"))
    Q = torch.stack(q)
    if not bool(torch.isfinite(Q).all()):
        raise ValueError("eta: the Euler iteration left the floating-point range; take a smaller step.")
    return ODEResult(eta * torch.arange(steps + 1, dtype=Q.dtype, device=Q.device), Q, _loss_q(Q, lam), "steps")


def _direction_and_log_f(A, q0, lam):
    """Log F(A) and the normalised direction e^{-ΛA}q0/‖·‖, computed shifted by λ_min for stability."""
    shift = lam.min()
    v = torch.exp(-torch.outer(A, lam - shift)) * q0
    nv = torch.linalg.vector_norm(v, dim=1)
    return 2 * torch.log(nv) - 2 * shift * A, v / nv[:, None]


def semi_closed_form(q0, lam, t, *, rtol: float = 1e-12) -> torch.Tensor:
    r"""The solution of Eq. 10 (:math:`z = 1`) in semi-closed form; returns ``q [T, d]`` at the times ``t``.

    With :math:`s_0 = \|q_0\|^2 < 1` and :math:`F(A) = \|e^{-\Lambda A}q_0\|^2`,

    .. math::

        q(t) = \sqrt{s(A)}\,\frac{e^{-\Lambda A}q_0}{\|e^{-\Lambda A}q_0\|},\qquad
        s(A) = \frac{2}{1 + \sqrt{1 + 4(1 - s_0)/F(A)^2}},\qquad \dot A = 2(2 - s(A)),\ A(0) = 0 .

    Only the scalar :math:`A(t)` is integrated numerically (``solve_ivp``, DOP853); the direction is the Oja/power
    flow in the time :math:`A`, and :math:`\log F` is computed shifted by :math:`\lambda_{\min}`, so large ``t``
    neither overflows nor underflows. Needs ``q0 [d]``, ``lam [d]`` with :math:`0 < \|q_0\|^2 < 1`. Derived in
    Chapter 13 (not in the paper).
    """
    q0, lam = setup_tensor("q0", q0, 1), setup_tensor("lam", lam, 1)
    t = _grid(t)
    rtol = check_positive("rtol", rtol)
    if q0.shape != lam.shape or q0.numel() < 1:
        raise ValueError(f"q0 and lam must both be [d] with d >= 1; got {tuple(q0.shape)} and {tuple(lam.shape)}.")
    s0 = float(q0 @ q0)
    if not 0 < s0 < 1:
        raise ValueError(f"q0 must have 0 < ||q0||^2 < 1; got ||q0||^2 = {s0:.6g}.")
    q0_cpu, lam_cpu = _cpu(q0), _cpu(lam)

    def s_of(A: torch.Tensor) -> torch.Tensor:
        log_f, _ = _direction_and_log_f(A.reshape(-1), q0_cpu, lam_cpu)
        return 2 / (1 + torch.sqrt(1 + 4 * (1 - s0) * torch.exp(-2 * log_f)))

    A = _integrate(lambda a: 2 * (2 - s_of(a)), t, torch.zeros(1, dtype=torch.float64), rtol, 1e-14)[:, 0]
    _, direction = _direction_and_log_f(A, q0_cpu, lam_cpu)
    return (s_of(A).sqrt()[:, None] * direction).to(q0)


def jacobian_q(q, lam) -> torch.Tensor:
    r"""Jacobian of Eq. 10 (:math:`z = 1`) at ``q [d]`` (``lam [d]``).

    .. math:: J = -2\,[2\Lambda - \|q\|^2\Lambda - 2\Lambda qq^\top - (q^\top\Lambda q)I - 2qq^\top\Lambda] .

    At :math:`q = \pm e_1` (ascending :math:`\lambda`) its eigenvalues are :math:`8\lambda_1` and
    :math:`-2(\lambda_i - \lambda_1)`, :math:`i\ge 2`.
    """
    q, lam = setup_tensor("q", q, 1), setup_tensor("lam", lam, 1)
    if q.shape != lam.shape or q.numel() < 1:
        raise ValueError(f"q and lam must both be [d] with d >= 1; got {tuple(q.shape)} and {tuple(lam.shape)}.")
    L = torch.diag(lam)
    eye = torch.eye(len(q), dtype=q.dtype, device=q.device)
    return -2 * (2 * L - (q @ q) * L - 2 * torch.outer(lam * q, q) - (q @ (lam * q)) * eye - 2 * torch.outer(q, lam * q))


def escape_times(lam, widths, *, inits: int, generator: torch.Generator, level: float = 0.5,
                 t_max: float = 20.0) -> torch.Tensor:
    r"""Time for Eq. 10 to leave the saddle :math:`q = 0`: the first :math:`t` with :math:`q^\top\Lambda q\le\text{level}\cdot\lambda_1`.

    Starts are :math:`q_{0,i}\sim\mathcal N(0, 1/h)` (the scale of :math:`V^\top W_1^\top W_2` at a Haar
    initialisation of width :math:`h`), ``inits >= 1`` per width drawn with ``generator``, all integrated as one
    system. ``lam [d]`` needs a negative entry; every width is an integer :math:`> d`; ``0 < level < 1``;
    ``t_max > 0``. Returns ``[len(widths), inits]`` (``nan`` where the level is not reached by ``t_max``; the
    crossing is interpolated linearly on a grid of 4001 times). Predicted: :math:`t\approx\ln h/(8|\lambda_1|) +
    \text{const}`.
    """
    lam = torch.sort(setup_tensor("lam", lam, 1)).values
    if lam.numel() < 1 or float(lam[0]) >= 0:
        raise ValueError(f"lam must have a negative entry for an escape; got lambda_min = {float(lam.min()) if lam.numel() else None}.")
    inits = check_int("inits", inits, 1)
    d = len(lam)
    if isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__"):
        raise TypeError(f"widths must be a sequence of integers > {d}; got {widths!r}.")
    widths = [check_int("widths[k]", w, d + 1) for w in widths]
    if not widths:
        raise ValueError("widths must name at least one width.")
    level = check_real("level", level)
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got level = {level}.")
    t_max = check_positive("t_max", t_max)
    from ..config import randn

    lam_cpu = _cpu(lam)
    grid = torch.linspace(0, t_max, 4001, dtype=torch.float64)
    target = level * lam_cpu[0]
    out = torch.full((len(widths), inits), math.nan, dtype=torch.float64)
    for k, h in enumerate(widths):
        Q0 = randn(inits, d, generator=generator, device="cpu", dtype=torch.float64) / math.sqrt(h)

        def rhs(Q):
            LQ = Q * lam_cpu
            return -4 * LQ + 2 * LQ * (Q * Q).sum(1, keepdim=True) + 2 * Q * (Q * LQ).sum(1, keepdim=True)

        loss = (_integrate(rhs, grid, Q0, 1e-10, 1e-14) ** 2 * lam_cpu).sum(-1)  # [T, inits]
        below = loss <= target
        first = below.int().argmax(0)
        ok = below.any(0) & (first > 0)
        i = first.clamp(min=1)
        cols = torch.arange(inits)
        lo, hi = loss[i - 1, cols], loss[i, cols]
        frac = (target - lo) / (hi - lo)
        out[k] = torch.where(ok, grid[i - 1] + frac * (grid[i] - grid[i - 1]), out[k])
    device, dtype = lam.device, lam.dtype
    return out.to(device=device, dtype=dtype)
