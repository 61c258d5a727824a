r"""Orthogonality-constrained dynamics of the linear two-layer SSL model (Esser et al. 2023, Sec. 5, App.).

The model is :math:`u(x) = W_2^\top W_1 x` with :math:`W_1\in\mathbb R^{h\times d}`, :math:`W_2\in\mathbb R^{h\times z}`
on the Stiefel manifolds :math:`W_1^\top W_1 = I_d`, :math:`W_2^\top W_2 = I_z`, and the trace loss of Def. 1
(Eq. 8), :math:`\mathcal L = \operatorname{Tr}(W_2^\top W_1 C W_1^\top W_2)` with symmetric :math:`C`.
This module holds:

* the Stiefel geometry: the paper's projection :math:`(I - WW^\top)G` (:func:`horizontal_project`), the
  embedded-metric tangent projection :math:`G - W\operatorname{sym}(W^\top G)` (:func:`tangent_project`), the
  canonical-metric gradient :math:`G - WG^\top W` (:func:`canonical_gradient`), the QR and polar retractions,
  Haar-random points and weights with a prescribed :math:`M_0 = W_1^\top W_2` (:func:`embed_weights`);
* the discrete training of Eq. 11 under three schemes (:func:`train`), with a result dataclass;
* the right-hand side of the width-independent ODE of Thm 2 (Eq. 9) for :math:`q = V^\top W_1^\top W_2` and of
  the ODEs of the two other schemes (:func:`q_rhs`), its integration with scipy's ``solve_ivp`` (:func:`solve_q`)
  and its Euler discretisation, Eq. 12 (:func:`euler_q`);
* for :math:`z = 1` (Thm 3): the semi-closed form (:func:`semi_closed_form`), the Jacobian (:func:`jacobian_q`)
  and the escape time from the saddle :math:`q = 0` (:func:`escape_times`).

Arrays are NumPy float64 (torch tensors are accepted and converted). Used in Chapter 13.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from threadpoolctl import threadpool_limits

from .._validate import check_choice, check_int, check_positive

__all__ = [
    "SCHEMES", "RETRACTIONS", "horizontal_project", "tangent_project", "canonical_gradient", "retract",
    "random_stiefel", "stiefel_error", "embed_weights", "trace_loss", "euclidean_gradients", "step", "train",
    "TrainResult", "q_rhs", "solve_q", "euler_q", "ODEResult", "semi_closed_form", "jacobian_q", "escape_times",
]

SCHEMES = ("paper", "euclidean", "canonical")
"""``paper``: :math:`-(I - WW^\\top)\\nabla\\mathcal L` (the flow of Thm 2); ``euclidean``: a plain gradient step
followed by a retraction (Eq. 11 as printed, with the sign fixed); ``canonical``: the canonical-metric Stiefel gradient."""
RETRACTIONS = ("qr", "polar")


def _array(name: str, value, ndim: int | None = None) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers; got {type(value).__name__}.") from exc
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values.")
    return arr


def _tall(name: str, W: np.ndarray) -> np.ndarray:
    W = _array(name, W, 2)
    if W.shape[0] < W.shape[1] or W.shape[1] < 1:
        raise ValueError(f"{name} must be tall, shape [n, p] with n >= p >= 1; got {W.shape}.")
    return W


def _sym(A: np.ndarray) -> np.ndarray:
    return (A + A.T) / 2


def horizontal_project(W, G) -> np.ndarray:
    r"""The paper's projection of a Euclidean gradient, :math:`(I - WW^\top)G` (App., proof of Thm 2).

    Computed as ``G - W @ (W.T @ G)`` so that no :math:`h\times h` matrix is formed. For :math:`W_2` it equals the
    Riemannian Stiefel gradient (the loss is invariant under :math:`W_2\mapsto W_2R`); for :math:`W_1` it drops the
    component :math:`W\operatorname{skew}(W^\top G)` and is the Grassmann-horizontal projection.
    """
    W = _tall("W", W)
    G = _array("G", G, 2)
    if G.shape != W.shape:
        raise ValueError(f"G must have the shape of W {W.shape}; got {G.shape}.")
    return G - W @ (W.T @ G)


def tangent_project(W, G) -> np.ndarray:
    r"""Orthogonal projection onto the tangent space of the Stiefel manifold at :math:`W` (embedded metric).

    .. math:: P_W(G) = G - W\operatorname{sym}(W^\top G),\qquad \operatorname{sym}(A) = (A + A^\top)/2 .

    Idempotent, and :math:`W^\top P_W(G)` is skew-symmetric.
    """
    W = _tall("W", W)
    G = _array("G", G, 2)
    if G.shape != W.shape:
        raise ValueError(f"G must have the shape of W {W.shape}; got {G.shape}.")
    return G - W @ _sym(W.T @ G)


def canonical_gradient(W, G) -> np.ndarray:
    r"""The Riemannian gradient for the canonical metric of the Stiefel manifold, :math:`G - WG^\top W`."""
    W = _tall("W", W)
    G = _array("G", G, 2)
    if G.shape != W.shape:
        raise ValueError(f"G must have the shape of W {W.shape}; got {G.shape}.")
    return G - W @ (G.T @ W)


def retract(W, *, method: str = "qr") -> np.ndarray:
    r"""Map a full-rank tall matrix back to the Stiefel manifold.

    ``qr``: the Q factor with signs fixed so that :math:`\operatorname{diag}(R) > 0` (unique); ``polar``: the
    nearest point in Frobenius norm, :math:`W(W^\top W)^{-1/2} = UV^\top` from the thin SVD :math:`W = USV^\top`.
    """
    check_choice("method", method, RETRACTIONS)
    return _retract(_tall("W", W), method)


def _retract(W: np.ndarray, method: str) -> np.ndarray:
    if method == "qr":
        Q, R = np.linalg.qr(W)
        signs = np.sign(np.diag(R))
        if np.any(signs == 0):
            raise ValueError("W must have full column rank to be retracted.")
        return Q * signs
    U, S, Vt = np.linalg.svd(W, full_matrices=False)
    if S[-1] <= 0:
        raise ValueError("W must have full column rank to be retracted.")
    return U @ Vt


def random_stiefel(n: int, p: int, *, seed: int) -> np.ndarray:
    """A Haar-random point of the Stiefel manifold ``[n, p]`` (the first ``p`` columns of a Haar orthogonal matrix)."""
    n = check_int("n", n, 1)
    p = check_int("p", p, 1, n)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    return retract(rng.standard_normal((n, p)), method="qr")


def stiefel_error(W) -> float:
    r"""Distance from the constraint, :math:`\|W^\top W - I\|_{\max}`."""
    W = _tall("W", W)
    return float(np.abs(W.T @ W - np.eye(W.shape[1])).max())


def embed_weights(M0, h: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Weights :math:`W_1\ [h, d]`, :math:`W_2\ [h, z]` on the Stiefel manifolds with :math:`W_1^\top W_2 = M_0`.

    With :math:`O` a Haar point ``[h, d + z]``: :math:`W_1 = O_{:, :d}`,
    :math:`W_2 = O_{:, :d}M_0 + O_{:, d:}(I - M_0^\top M_0)^{1/2}`. Needs :math:`h\ge d + z` and
    :math:`\|M_0\|_2\le 1`. Two widths with the same ``M0`` give the same Gram matrix of :math:`[W_1, W_2]`.
    """
    M0 = _array("M0", M0, 2)
    d, z = M0.shape
    h = check_int("h", h, d + z)
    norm = np.linalg.norm(M0, 2)
    if norm > 1 + 1e-12:
        raise ValueError(f"M0 must have operator norm <= 1; got {norm:.6g}.")
    O = random_stiefel(h, d + z, seed=seed)
    ev, U = np.linalg.eigh(np.eye(z) - M0.T @ M0)
    root = (U * np.sqrt(np.clip(ev, 0, None))) @ U.T
    return O[:, :d], O[:, :d] @ M0 + O[:, d:] @ root


def _check_weights(W1, W2, C):
    W1, W2 = _tall("W1", W1), _tall("W2", W2)
    C = _array("C", C, 2)
    if W1.shape[0] != W2.shape[0]:
        raise ValueError(f"W1 and W2 must have the same number of rows h; got {W1.shape} and {W2.shape}.")
    if C.shape != (W1.shape[1], W1.shape[1]):
        raise ValueError(f"C must be [d, d] with d = {W1.shape[1]}; got {C.shape}.")
    if not np.allclose(C, C.T, atol=1e-12 * max(1.0, np.abs(C).max())):
        raise ValueError("C must be symmetric (use (C̃ + C̃ᵀ)/2, Eq. 7).")
    return W1, W2, C


def trace_loss(W1, W2, C) -> float:
    r"""The trace loss of Def. 1 (Eq. 8), :math:`\operatorname{Tr}(W_2^\top W_1CW_1^\top W_2)`."""
    W1, W2, C = _check_weights(W1, W2, C)
    M = W1.T @ W2
    return float(np.trace(M.T @ C @ M))


def euclidean_gradients(W1, W2, C) -> tuple[np.ndarray, np.ndarray]:
    r"""Euclidean gradients :math:`\nabla_{W_1}\mathcal L = 2W_2W_2^\top W_1C`, :math:`\nabla_{W_2}\mathcal L = 2W_1CW_1^\top W_2`."""
    W1, W2, C = _check_weights(W1, W2, C)
    return 2 * W2 @ ((W2.T @ W1) @ C), 2 * W1 @ (C @ (W1.T @ W2))


def _direction(W, G, scheme):
    if scheme == "paper":
        return G - W @ (W.T @ G)
    if scheme == "canonical":
        return G - W @ (G.T @ W)
    return G


def step(W1, W2, C, *, eta: float, scheme: str = "paper", retraction: str = "qr") -> tuple[np.ndarray, np.ndarray]:
    r"""One step of Eq. 11 (with the sign fixed): :math:`W\leftarrow\operatorname{retr}(W - \eta\,D(W, \nabla_W\mathcal L))`.

    ``scheme`` picks :math:`D`: ``paper`` :math:`(I - WW^\top)G`, ``euclidean`` :math:`G`, ``canonical``
    :math:`G - WG^\top W` (see :data:`SCHEMES`). Both layers are updated from the same (old) point.
    """
    eta = check_positive("eta", eta)
    check_choice("scheme", scheme, SCHEMES)
    check_choice("retraction", retraction, RETRACTIONS)
    W1, W2, C = _check_weights(W1, W2, C)
    return _step(W1, W2, C, eta, scheme, retraction)


def _step(W1, W2, C, eta, scheme, retraction):
    G1 = 2 * W2 @ ((W2.T @ W1) @ C)
    G2 = 2 * W1 @ (C @ (W1.T @ W2))
    return (_retract(W1 - eta * _direction(W1, G1, scheme), retraction),
            _retract(W2 - eta * _direction(W2, G2, scheme), retraction))


@dataclass(frozen=True)
class TrainResult:
    """Discrete training: times ``t = k·eta``, ``M [T+1, d, z]`` (:math:`W_1^\\top W_2`), losses, final weights,
    and the largest constraint error :math:`\\|W^\\top W - I\\|_{\\max}` seen along the run."""

    t: np.ndarray
    M: np.ndarray
    loss: np.ndarray
    W1: np.ndarray
    W2: np.ndarray
    constraint_error: float
    stopped: str


def train(W1, W2, C, *, eta: float, steps: int, scheme: str = "paper", retraction: str = "qr") -> TrainResult:
    """Run :func:`step` ``steps`` times from ``(W1, W2)`` and record :math:`M = W_1^\\top W_2` and the loss.

    The loop runs with one BLAS thread: the matrices are thin, and a multi-threaded BLAS on a busy machine
    can be a hundred times slower for them.
    """
    W1, W2, C = _check_weights(W1, W2, C)
    steps = check_int("steps", steps, 1)
    eta = check_positive("eta", eta)
    check_choice("scheme", scheme, SCHEMES)
    check_choice("retraction", retraction, RETRACTIONS)
    I1, I2 = np.eye(W1.shape[1]), np.eye(W2.shape[1])
    Ms, err = [W1.T @ W2], 0.0
    with threadpool_limits(1):
        for _ in range(steps):
            W1, W2 = _step(W1, W2, C, eta, scheme, retraction)
            Ms.append(W1.T @ W2)
            err = max(err, np.abs(W1.T @ W1 - I1).max(), np.abs(W2.T @ W2 - I2).max())
    M = np.stack(Ms)
    loss = np.einsum("tdz,de,tez->t", M, C, M)
    return TrainResult(eta * np.arange(steps + 1), M, loss, W1, W2, float(err), "steps")


_RHS_COEF = {"paper": (2.0, 2.0), "euclidean": (1.0, 3.0), "canonical": (0.0, 4.0)}


def q_rhs(q, lam, *, scheme: str = "paper") -> np.ndarray:
    r"""Right-hand side of the ODE for :math:`q = V^\top W_1^\top W_2` (shape ``[d, z]``), :math:`\Lambda = \operatorname{diag}(\lambda)`.

    ``paper`` is Thm 2, Eq. 9:

    .. math:: \dot q = -2\,[2\Lambda q - \Lambda q q^\top q - q q^\top\Lambda q] .

    ``euclidean`` (plain GD + polar retraction): :math:`-4\Lambda q + \Lambda qq^\top q + 3qq^\top\Lambda q`;
    ``canonical``: :math:`-4(I - qq^\top)\Lambda q` (Oja's flow). A 1-D ``q`` is treated as ``z = 1``.
    """
    check_choice("scheme", scheme, SCHEMES)
    q = _array("q", q)
    lam = _array("lam", lam, 1)
    flat = q.ndim == 1
    Q = q[:, None] if flat else q
    if Q.ndim != 2 or Q.shape[0] != lam.shape[0]:
        raise ValueError(f"q must be [d] or [d, z] with d = len(lam) = {lam.shape[0]}; got {q.shape}.")
    a, b = _RHS_COEF[scheme]
    LQ = lam[:, None] * Q
    out = -4 * LQ + a * LQ @ (Q.T @ Q) + b * Q @ (Q.T @ LQ)
    return out[:, 0] if flat else out


@dataclass(frozen=True)
class ODEResult:
    """Solution of the q-ODE on a time grid: ``t [T]``, ``q [T, d, z]``, the loss :math:`\\operatorname{Tr}(q^\\top\\Lambda q)`."""

    t: np.ndarray
    q: np.ndarray
    loss: np.ndarray
    stopped: str


def _loss_q(q, lam):
    return np.einsum("tdz,d,tdz->t", q, lam, q)


def solve_q(q0, lam, t, *, scheme: str = "paper", rtol: float = 1e-11, atol: float = 1e-13) -> ODEResult:
    """Integrate :func:`q_rhs` with scipy's ``solve_ivp`` (DOP853) and return the solution at the times ``t``."""
    check_choice("scheme", scheme, SCHEMES)
    q0 = _array("q0", q0)
    Q0 = q0[:, None] if q0.ndim == 1 else q0
    lam = _array("lam", lam, 1)
    t = _array("t", t, 1)
    if t[0] != 0 or np.any(np.diff(t) <= 0):
        raise ValueError("t must start at 0 and increase strictly.")
    check_positive("rtol", rtol)
    check_positive("atol", atol)
    shape = Q0.shape
    sol = solve_ivp(lambda _, y: q_rhs(y.reshape(shape), lam, scheme=scheme).ravel(), (0.0, float(t[-1])), Q0.ravel(),
                    method="DOP853", t_eval=t, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    q = sol.y.T.reshape(len(t), *shape)
    return ODEResult(t, q, _loss_q(q, lam), "t_end")


def euler_q(q0, lam, *, eta: float, steps: int) -> ODEResult:
    r"""Eq. 12, the Euler discretisation of Eq. 9.

    .. math:: q_{t+1} = q_t - 2\eta\,[2\Lambda q_t - \Lambda q_tq_t^\top q_t - q_tq_t^\top\Lambda q_t]

    Its cost per step does not depend on the width :math:`h`.
    """
    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, 1)
    q0 = _array("q0", q0)
    q = [q0[:, None] if q0.ndim == 1 else q0]
    lam = _array("lam", lam, 1)
    for _ in range(steps):
        q.append(q[-1] + eta * q_rhs(q[-1], lam))
    Q = np.stack(q)
    return ODEResult(eta * np.arange(steps + 1), Q, _loss_q(Q, lam), "steps")


def _norm_sq(A, q0, lam):
    """log F(A) and the normalised direction e^{-ΛA}q0/‖·‖, computed shifted by λ_min for stability."""
    shift = lam.min()
    v = np.exp(-np.outer(A, lam - shift)) * q0
    nv = np.linalg.norm(v, axis=1)
    logF = 2 * np.log(nv) - 2 * shift * A
    return logF, v / nv[:, None]


def semi_closed_form(q0, lam, t, *, rtol: float = 1e-12) -> np.ndarray:
    r"""The solution of Eq. 10 (:math:`z = 1`) in semi-closed form; returns ``q [T, d]`` at the times ``t``.

    With :math:`s_0 = \|q_0\|^2 < 1` and :math:`F(A) = \|e^{-\Lambda A}q_0\|^2`,

    .. math::

        q(t) = \sqrt{s(A)}\,\frac{e^{-\Lambda A}q_0}{\|e^{-\Lambda A}q_0\|},\qquad
        s(A) = \frac{2}{1 + \sqrt{1 + 4(1 - s_0)/F(A)^2}},\qquad \dot A = 2(2 - s(A)),\ A(0) = 0 .

    Only the scalar :math:`A(t)` is integrated numerically (``solve_ivp``, DOP853); the direction is the Oja/power
    flow in the time :math:`A`. Derived in Chapter 13 (not in the paper).
    """
    q0 = _array("q0", q0, 1)
    lam = _array("lam", lam, 1)
    t = _array("t", t, 1)
    if q0.shape != lam.shape:
        raise ValueError(f"q0 and lam must both be [d]; got {q0.shape} and {lam.shape}.")
    s0 = float(q0 @ q0)
    if not 0 < s0 < 1:
        raise ValueError(f"need 0 < ||q0||^2 < 1; got {s0:.6g}.")
    if t[0] != 0 or np.any(np.diff(t) <= 0):
        raise ValueError("t must start at 0 and increase strictly.")

    def s_of(A):
        logF, _ = _norm_sq(np.atleast_1d(A), q0, lam)
        return 2 / (1 + np.sqrt(1 + 4 * (1 - s0) * np.exp(-2 * logF)))

    sol = solve_ivp(lambda _, a: 2 * (2 - s_of(a[0])), (0.0, float(t[-1])), [0.0], method="DOP853", t_eval=t,
                    rtol=rtol, atol=1e-14)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    A = sol.y[0]
    _, direction = _norm_sq(A, q0, lam)
    return np.sqrt(s_of(A))[:, None] * direction


def jacobian_q(q, lam) -> np.ndarray:
    r"""Jacobian of Eq. 10 (:math:`z = 1`) at ``q``:

    .. math:: J = -2\,[2\Lambda - \|q\|^2\Lambda - 2\Lambda qq^\top - (q^\top\Lambda q)I - 2qq^\top\Lambda] .

    At :math:`q = \pm e_1` (ascending :math:`\lambda`) its eigenvalues are :math:`8\lambda_1` and
    :math:`-2(\lambda_i - \lambda_1)`, :math:`i\ge 2`.
    """
    q = _array("q", q, 1)
    lam = _array("lam", lam, 1)
    if q.shape != lam.shape:
        raise ValueError(f"q and lam must both be [d]; got {q.shape} and {lam.shape}.")
    L = np.diag(lam)
    return -2 * (2 * L - (q @ q) * L - 2 * np.outer(lam * q, q) - (q @ (lam * q)) * np.eye(len(q)) - 2 * np.outer(q, lam * q))


def escape_times(lam, widths, *, inits: int, seed: int, level: float = 0.5, t_max: float = 20.0) -> np.ndarray:
    r"""Time for Eq. 10 to leave the saddle :math:`q = 0`: the first :math:`t` with :math:`q^\top\Lambda q\le\text{level}\cdot\lambda_1`.

    Starts are :math:`q_{0,i}\sim\mathcal N(0, 1/h)` (the scale of :math:`V^\top W_1^\top W_2` at a Haar
    initialisation of width :math:`h`), ``inits`` per width, all integrated as one system. Returns ``[len(widths), inits]``
    (``nan`` where the level is not reached by ``t_max``). Needs :math:`\lambda_1 < 0`. Predicted:
    :math:`t\approx\ln h/(8|\lambda_1|) + \text{const}`.
    """
    lam = np.sort(_array("lam", lam, 1))
    if lam[0] >= 0:
        raise ValueError(f"escape needs a negative eigenvalue; got lambda_min = {lam[0]}.")
    inits = check_int("inits", inits, 1)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    widths = [check_int("width", w, len(lam) + 1) for w in widths]
    d = len(lam)
    out = np.full((len(widths), inits), np.nan)
    grid = np.linspace(0, t_max, 4001)
    for k, h in enumerate(widths):
        Q0 = rng.standard_normal((inits, d)) / np.sqrt(h)

        def rhs(_, y):
            Q = y.reshape(inits, d)
            LQ = Q * lam
            n2 = (Q * Q).sum(1, keepdims=True)
            e = (Q * LQ).sum(1, keepdims=True)
            return (-4 * LQ + 2 * LQ * n2 + 2 * Q * e).ravel()

        sol = solve_ivp(rhs, (0, t_max), Q0.ravel(), method="DOP853", t_eval=grid, rtol=1e-10, atol=1e-14)
        Q = sol.y.T.reshape(len(grid), inits, d)
        loss = (Q * Q * lam).sum(-1)
        target = level * lam[0]
        for j in range(inits):
            below = np.flatnonzero(loss[:, j] <= target)
            if below.size and below[0] > 0:
                i = below[0]
                f = (target - loss[i - 1, j]) / (loss[i, j] - loss[i - 1, j])
                out[k, j] = grid[i - 1] + f * (grid[i] - grid[i - 1])
    return out
