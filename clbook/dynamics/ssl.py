r"""The linear self-supervised model of Esser, Mukherjee and Ghoshdastidar (2023): losses, flows, closed forms.

Notation of the paper: anchors :math:`x_i\in\mathbb R^d`, positives :math:`x_i^+`, negatives :math:`x_i^-`, an
embedding :math:`u(x)\in\mathbb R^z`. The contrastive loss (Eq. 1) and the non-contrastive loss (Eq. 2) are

.. math::

    \mathcal L_{c} = \sum_i u(x_i)^\top\big(u(x_i^-) - u(x_i^+)\big), \qquad
    \mathcal L_{nc} = -\sum_i u(x_i)^\top u(x_i^+).

For the two-layer linear model :math:`u(x) = W_2^\top W_1 x` both reduce to the trace loss (Eq. 7--8)
:math:`\operatorname{Tr}(W_2^\top W_1 C W_1^\top W_2)` with :math:`C = \operatorname{sym}(\tilde C)` and
:math:`\tilde C = \sum_i x_i(x_i^- - x_i^+)^\top` (contrastive) or :math:`-\sum_i x_i x_i^{+\top}` (non-contrastive;
the main text prints the wrong sign). This module holds

* the losses and :func:`trace_matrix` (``normalize=True`` divides by :math:`n`, the scale used for step sizes);
* the one-layer linear flow :math:`\dot\Theta = -2\Theta C` and its closed form :math:`\Theta_0 e^{-2Ct}`
  (Prop 1), the fixed-projector flow of Remark 3, the tangent kernel of Lemma 1;
* gradient descent on the two-layer linear model: unconstrained, with Frobenius balls (Prop 2), with
  operator-norm balls and the scale-invariant loss (Prop 3), and on the orthogonality constraints with the paper's
  projected update :math:`-(\mathbb I - WW^\top)\nabla\mathcal L` followed by a QR retraction (Example 1).

All arrays are float64 numpy arrays (scipy's ``expm`` and ``solve_ivp`` do the closed forms and ODEs); torch
tensors are accepted and converted. Used in Chapters 11 and 12.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.integrate import solve_ivp

from .._validate import check_choice, check_int, check_positive

__all__ = [
    "as_array", "contrastive_loss", "noncontrastive_loss", "trace_matrix", "trace_loss", "linear_closed_form",
    "linear_flow", "linear_gd", "projector_closed_form", "tangent_kernel", "haar_semi_orthogonal", "retract_qr",
    "GDResult", "gd_two_layer", "scaled_loss", "ACTIVATIONS", "activation", "CONSTRAINTS", "optimal_value",
    "singular_value_ratio",
]

ACTIVATIONS = ("linear", "tanh", "relu", "sigmoid")
CONSTRAINTS = ("none", "frobenius", "operator", "scaled", "orthogonal")


def as_array(name: str, value, ndim: int | None = None) -> np.ndarray:
    """``value`` (array or tensor) as a finite float64 numpy array with ``ndim`` dimensions."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array or tensor of numbers; got {type(value).__name__}.") from exc
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values.")
    return arr


def _same_shape(**arrays):
    shapes = {k: v.shape for k, v in arrays.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"the views must share one shape [n, d]; got {shapes}.")


def contrastive_loss(u, u_pos, u_neg) -> float:
    r"""Eq. 1: :math:`\sum_i u(x_i)^\top(u(x_i^-) - u(x_i^+))` for embeddings ``[n, z]``."""
    u, u_pos, u_neg = (as_array(k, v, 2) for k, v in (("u", u), ("u_pos", u_pos), ("u_neg", u_neg)))
    _same_shape(u=u, u_pos=u_pos, u_neg=u_neg)
    return float(np.sum(u * (u_neg - u_pos)))


def noncontrastive_loss(u, u_pos) -> float:
    r"""Eq. 2: :math:`-\sum_i u(x_i)^\top u(x_i^+)` for embeddings ``[n, z]``."""
    u, u_pos = as_array("u", u, 2), as_array("u_pos", u_pos, 2)
    _same_shape(u=u, u_pos=u_pos)
    return float(-np.sum(u * u_pos))


def trace_matrix(x, x_pos, x_neg=None, *, normalize: bool = True, symmetric: bool = True) -> np.ndarray:
    r"""The data matrix of Eq. 7: :math:`C = \operatorname{sym}(\tilde C)`, ``[d, d]``.

    .. math::

        \tilde C = \sum_{i=1}^n x_i(x_i^- - x_i^+)^\top \ (\text{contrastive}),\qquad
        \tilde C = -\sum_{i=1}^n x_i x_i^{+\top}\ (\text{non-contrastive, } x^- \text{ omitted}).

    Parameters
    ----------
    x, x_pos, x_neg : array or tensor, shape=[n, d]
        Anchors, positives and (for the contrastive loss) negatives.
    normalize : bool
        Divide by :math:`n` (the paper sums without normalising; step sizes like 0.01 need the :math:`1/n`).
    symmetric : bool
        Return :math:`(\tilde C + \tilde C^\top)/2` (default) or :math:`\tilde C` itself.
    """
    x, x_pos = as_array("x", x, 2), as_array("x_pos", x_pos, 2)
    if x_neg is None:
        _same_shape(x=x, x_pos=x_pos)
        ct = -x.T @ x_pos
    else:
        x_neg = as_array("x_neg", x_neg, 2)
        _same_shape(x=x, x_pos=x_pos, x_neg=x_neg)
        ct = x.T @ (x_neg - x_pos)
    if normalize:
        ct = ct / len(x)
    return (ct + ct.T) / 2 if symmetric else ct


def _check_weights(W1, W2, C):
    W1, W2, C = as_array("W1", W1, 2), as_array("W2", W2, 2), as_array("C", C, 2)
    if W1.shape[0] != W2.shape[0] or C.shape != (W1.shape[1], W1.shape[1]):
        raise ValueError(f"need W1 [h, d], W2 [h, z], C [d, d]; got {W1.shape}, {W2.shape}, {C.shape}.")
    return W1, W2, C


def trace_loss(W1, W2, C) -> float:
    r"""Eq. 8: :math:`\operatorname{Tr}(W_2^\top W_1 C W_1^\top W_2)` (no :math:`h\times h` product is formed)."""
    W1, W2, C = _check_weights(W1, W2, C)
    M = W1.T @ W2
    return float(np.sum(M * (C @ M)))


def scaled_loss(W1, W2, C) -> float:
    r"""The scale-invariant loss of Prop 3 (1): :math:`\operatorname{Tr}(W_2^\top W_1CW_1^\top W_2)/(\|W_1\|_2^2\|W_2\|_2^2)`."""
    W1, W2, C = _check_weights(W1, W2, C)
    return trace_loss(W1, W2, C) / (np.linalg.norm(W1, 2) ** 2 * np.linalg.norm(W2, 2) ** 2)


def _check_theta_c(theta0, C):
    theta0, C = as_array("theta0", theta0, 2), as_array("C", C, 2)
    if C.shape != (theta0.shape[1], theta0.shape[1]) or not np.allclose(C, C.T, atol=1e-12):
        raise ValueError(f"C must be symmetric [d, d] with d = theta0.shape[1] = {theta0.shape[1]}; got {C.shape}.")
    return theta0, C


def linear_closed_form(theta0, C, times) -> np.ndarray:
    r"""Prop 1 in closed form: :math:`\Theta(t) = \Theta_0 e^{-2Ct}`, the solution of :math:`\dot\Theta = -2\Theta C`.

    The flow is gradient flow of :math:`\operatorname{Tr}(\Theta C\Theta^\top)` (the loss of Eq. 1/2 for
    :math:`u(x) = \Theta x`). Returns ``[len(times), z, d]``; computed in the eigenbasis of :math:`C`
    (``scipy.linalg.expm`` gives the same, see the tests).
    """
    theta0, C = _check_theta_c(theta0, C)
    t = as_array("times", times, 1)
    lam, V = np.linalg.eigh(C)
    return np.einsum("zd,de,te,fe->tzf", theta0, V, np.exp(-2 * np.outer(t, lam)), V)


def linear_flow(theta0, C, times, *, rtol: float = 1e-11, atol: float = 1e-12) -> np.ndarray:
    r"""Integrate :math:`\dot\Theta = -2\Theta C` with ``solve_ivp`` (DOP853); ``[len(times), z, d]``."""
    theta0, C = _check_theta_c(theta0, C)
    t = as_array("times", times, 1)
    z, d = theta0.shape
    sol = solve_ivp(lambda _, y: (-2 * y.reshape(z, d) @ C).ravel(), (0.0, float(t[-1])), theta0.ravel(),
                    method="DOP853", t_eval=t, rtol=check_positive("rtol", rtol), atol=check_positive("atol", atol))
    return sol.y.T.reshape(len(t), z, d)


def linear_gd(theta0, C, *, eta: float, steps: int) -> np.ndarray:
    r"""Gradient descent :math:`\Theta_{k+1} = \Theta_k - 2\eta\Theta_k C`, all iterates ``[steps + 1, z, d]``.

    Exactly :math:`\Theta_k = \Theta_0(\mathbb I - 2\eta C)^k`.
    """
    theta0, C = _check_theta_c(theta0, C)
    eta, steps = check_positive("eta", eta), check_int("steps", steps, 0)
    out = np.empty((steps + 1, *theta0.shape))
    out[0] = theta0
    for k in range(steps):
        out[k + 1] = out[k] - 2 * eta * out[k] @ C
    return out


def projector_closed_form(A, theta0, C, times) -> np.ndarray:
    r"""Remark 3: :math:`u = A\Theta x` with a fixed :math:`A\in\mathbb R^{r\times z}`; returns :math:`\Phi_t = A\Theta_t`.

    Gradient flow of :math:`\operatorname{Tr}(A\Theta C\Theta^\top A^\top)` is :math:`\dot\Theta = -2A^\top A\Theta C`, so
    :math:`\Theta_t = \sum_{k,j} e^{-2\alpha_k\lambda_j t}\,a_ka_k^\top\Theta_0 v_jv_j^\top` with
    :math:`A^\top A = \sum_k\alpha_k a_ka_k^\top` and :math:`C = \sum_j\lambda_j v_jv_j^\top`. Shape ``[len(times), r, d]``.
    """
    A = as_array("A", A, 2)
    theta0, C = _check_theta_c(theta0, C)
    if A.shape[1] != theta0.shape[0]:
        raise ValueError(f"A must be [r, z] with z = {theta0.shape[0]}; got {A.shape}.")
    t = as_array("times", times, 1)
    alpha, Ua = np.linalg.eigh(A.T @ A)
    lam, V = np.linalg.eigh(C)
    core = Ua.T @ theta0 @ V
    decay = np.exp(-2 * t[:, None, None] * alpha[None, :, None] * lam[None, None, :])
    return np.einsum("rz,zk,tkj,fj->trf", A, Ua, decay * core, V)


def singular_value_ratio(M) -> np.ndarray:
    r""":math:`\sigma_2/\sigma_1` of a matrix or of each matrix of a stack ``[..., a, b]``."""
    s = np.linalg.svd(as_array("M", M), compute_uv=False)
    return s[..., 1] / s[..., 0]


def activation(name: str):
    r"""The activation :math:`\phi` and its derivative :math:`\phi'` for ``name`` in :data:`ACTIVATIONS`."""
    check_choice("activation", name, ACTIVATIONS)
    if name == "linear":
        return (lambda a: a), (lambda a: np.ones_like(a))
    if name == "tanh":
        return np.tanh, (lambda a: 1 - np.tanh(a) ** 2)
    if name == "relu":
        return (lambda a: np.maximum(a, 0.0)), (lambda a: (a > 0).astype(np.float64))
    sig = lambda a: 0.5 * (1 + np.tanh(a / 2))  # noqa: E731
    return sig, (lambda a: sig(a) * (1 - sig(a)))


def tangent_kernel(W1, W2, x, x2, *, activation_name: str = "tanh", ntk_scale: bool = True) -> np.ndarray:
    r"""Lemma 1: the ``[z, z]`` matrix :math:`K_{lj} = \langle\nabla_\Theta u_l(x), \nabla_\Theta u_j(x')\rangle`.

    For :math:`u(x) = s\,W_2^\top\phi(W_1x)` with :math:`s = h^{-1/2}` (``ntk_scale``) or 1,

    .. math::

        K_{lj} = s^2\Big[\delta_{lj}\,\phi(W_1x)^\top\phi(W_1x')
               + x^\top x'\sum_{k=1}^h (W_2)_{kl}(W_2)_{kj}\,\phi'(w_k^\top x)\,\phi'(w_k^\top x')\Big].

    The first term comes from :math:`W_2`, the second from :math:`W_1`. With ``activation_name="linear"`` and
    :math:`W_1 = \mathbb I`, only the :math:`W_2` part is the one-layer linear model's kernel
    :math:`\delta_{lj}x^\top x'`.
    """
    W1, W2 = as_array("W1", W1, 2), as_array("W2", W2, 2)
    x, x2 = as_array("x", x, 1), as_array("x2", x2, 1)
    if W1.shape[0] != W2.shape[0] or x.shape != x2.shape or x.shape[0] != W1.shape[1]:
        raise ValueError(f"need W1 [h, d], W2 [h, z], x and x2 [d]; got {W1.shape}, {W2.shape}, {x.shape}, {x2.shape}.")
    phi, dphi = activation(activation_name)
    a, a2 = W1 @ x, W1 @ x2
    s2 = 1.0 / W1.shape[0] if ntk_scale else 1.0
    second = float(phi(a) @ phi(a2)) * np.eye(W2.shape[1])
    first = (x @ x2) * (W2 * (dphi(a) * dphi(a2))[:, None]).T @ W2
    return s2 * (second + first)


def retract_qr(W: np.ndarray) -> np.ndarray:
    """The Q factor of ``W`` with a non-negative diagonal of R: the QR retraction onto the Stiefel manifold."""
    Q, R = np.linalg.qr(W)
    signs = np.sign(np.diag(R))
    signs[signs == 0] = 1.0
    return Q * signs


def haar_semi_orthogonal(h: int, k: int, *, generator: torch.Generator) -> np.ndarray:
    r"""A uniformly (Haar) random ``[h, k]`` matrix with orthonormal columns, :math:`W^\top W = \mathbb I_k`.

    The Q factor (with sign-corrected R) of a standard Gaussian ``[h, k]`` matrix drawn with ``generator``.
    """
    from ..config import randn

    h, k = check_int("h", h, 1), check_int("k", k, 1)
    if k > h:
        raise ValueError(f"need k <= h for orthonormal columns; got h = {h}, k = {k}.")
    return retract_qr(randn(h, k, generator=generator).cpu().numpy())


def optimal_value(C, z: int) -> float:
    r"""Prop 3's optimum :math:`\sum_{i\le\min(z,l)}\lambda_i(C)`, the sum of the :math:`z` smallest eigenvalues that are negative."""
    C = as_array("C", C, 2)
    z = check_int("z", z, 1)
    lam = np.linalg.eigvalsh(C)[:z]
    return float(np.sum(np.minimum(lam, 0.0)))


@dataclass(frozen=True)
class GDResult:
    r"""A run of :func:`gd_two_layer`.

    Attributes
    ----------
    W1, W2 : np.ndarray
        Final weights ``[h, d]``, ``[h, z]``.
    losses : np.ndarray
        Trace loss (or the scaled loss for ``"scaled"``) after each step, index 0 = initial.
    products : np.ndarray
        :math:`W_1^\top W_2` at the recorded steps, ``[len(losses), d, z]``.
    steps : int
        Steps taken (fewer than asked when the run diverged).
    reason : str
        ``"steps"`` or ``"diverged"`` (loss below ``-blowup``).
    """

    W1: np.ndarray
    W2: np.ndarray
    losses: np.ndarray
    products: np.ndarray
    steps: int
    reason: str


def _clip_operator(W: np.ndarray, c: float = 1.0) -> np.ndarray:
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    return (U * np.minimum(s, c)) @ Vt


def _top_singular_outer(W: np.ndarray):
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    return s[0], np.outer(U[:, 0], Vt[0])


def gd_two_layer(W1, W2, C, *, eta: float, steps: int, constraint: str = "none", c1: float = 1.0, c2: float = 1.0,
                 blowup: float = 1e30) -> GDResult:
    r"""Gradient descent on :math:`\operatorname{Tr}(W_2^\top W_1CW_1^\top W_2)` for :math:`u(x) = W_2^\top W_1x`.

    The Euclidean gradients are :math:`G_1 = 2W_2W_2^\top W_1C` and :math:`G_2 = 2W_1CW_1^\top W_2`. ``constraint``:

    * ``"none"``: plain GD (the loss is quartic and unbounded below when :math:`\lambda_{\min}(C) < 0`);
    * ``"frobenius"``: GD, then :math:`W_i\leftarrow W_i\min(1, c_i/\|W_i\|_F)` (Prop 2);
    * ``"operator"``: GD, then singular values of each :math:`W_i` clipped at 1 (Prop 3 (2));
    * ``"scaled"``: GD on :math:`\mathcal L/(\|W_1\|_2^2\|W_2\|_2^2)` (Prop 3 (1); the paper's
      :math:`\mathcal L_{orth}`), each iterate rescaled to :math:`\|W_i\|_2 = 1`, which leaves the loss unchanged;
    * ``"orthogonal"``: the paper's projected step :math:`W\leftarrow\mathrm{qf}(W - \eta(\mathbb I - WW^\top)G)`
      on :math:`W_1^\top W_1 = \mathbb I_d`, :math:`W_2^\top W_2 = \mathbb I_z` (Prop 3 (4)).

    Both layers are updated simultaneously from the same iterate. No :math:`h\times h` matrix is formed.
    """
    W1, W2, C = _check_weights(W1, W2, C)
    eta, steps = check_positive("eta", eta), check_int("steps", steps, 0)
    check_choice("constraint", constraint, CONSTRAINTS)
    c1, c2, blowup = check_positive("c1", c1), check_positive("c2", c2), check_positive("blowup", blowup)
    losses, products = [scaled_loss(W1, W2, C) if constraint == "scaled" else trace_loss(W1, W2, C)], [W1.T @ W2]
    reason = "steps"
    for _ in range(steps):
        M = W1.T @ W2
        G1 = 2 * W2 @ (M.T @ C)
        G2 = 2 * W1 @ (C @ M)
        if constraint == "scaled":
            loss = float(np.sum(M * (C @ M)))
            s1, P1 = _top_singular_outer(W1)
            s2, P2 = _top_singular_outer(W2)
            scale = s1**2 * s2**2
            G1 = G1 / scale - 2 * loss * P1 / (scale * s1)
            G2 = G2 / scale - 2 * loss * P2 / (scale * s2)
        if constraint == "orthogonal":
            W1n = retract_qr(W1 - eta * (G1 - W1 @ (W1.T @ G1)))
            W2n = retract_qr(W2 - eta * (G2 - W2 @ (W2.T @ G2)))
        else:
            W1n, W2n = W1 - eta * G1, W2 - eta * G2
        if constraint == "frobenius":
            W1n = W1n * min(1.0, c1 / np.linalg.norm(W1n))
            W2n = W2n * min(1.0, c2 / np.linalg.norm(W2n))
        elif constraint == "operator":
            W1n, W2n = _clip_operator(W1n), _clip_operator(W2n)
        elif constraint == "scaled":
            W1n, W2n = W1n / np.linalg.svd(W1n, compute_uv=False)[0], W2n / np.linalg.svd(W2n, compute_uv=False)[0]
        W1, W2 = W1n, W2n
        M = W1.T @ W2
        losses.append(float(np.sum(M * (C @ M))))  # the scaled loss equals the trace loss once ||W_i||_2 = 1
        products.append(M)
        if not np.isfinite(losses[-1]) or losses[-1] < -blowup:
            reason = "diverged"
            break
    return GDResult(W1, W2, np.array(losses), np.array(products), len(losses) - 1, reason)
