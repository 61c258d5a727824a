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

* the losses, :func:`trace_matrix` (``normalize=True`` divides by :math:`n`, the scale used for step sizes), the
  trace loss and its Euclidean gradients (:func:`euclidean_gradients`, used by :mod:`clbook.dynamics.stiefel`);
* the one-layer linear flow :math:`\dot\Theta = -2\Theta C` and its closed form :math:`\Theta_0 e^{-2Ct}`
  (Prop 1), and the fixed-projector flow of Remark 3;
* gradient descent on the two-layer linear model: unconstrained, with Frobenius balls (Prop 2), with
  operator-norm balls and the scale-invariant loss (Prop 3), and on the orthogonality constraints with the paper's
  projected update (:func:`clbook.dynamics.stiefel.projected_step`, Example 1).

Everything computes in torch on the device and dtype of :func:`clbook.setup` (float64 for the book): array, list
and tensor arguments are converted there on entry (integers deliberately, to floating point), so mixed inputs
cannot meet in one product. scipy's ``solve_ivp`` integrates the ODEs on the CPU (explicit transfers in and out).
Used in Chapter 11.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from scipy.integrate import solve_ivp

from .._validate import as_tensor, check_choice, check_int, check_positive
from ..config import defaults
from ..linalg import single_thread

__all__ = [
    "contrastive_loss", "noncontrastive_loss", "trace_matrix", "trace_loss", "euclidean_gradients", "scaled_loss",
    "linear_closed_form", "linear_flow", "linear_gd", "projector_closed_form", "singular_value_ratio", "optimal_value",
    "GDResult", "gd_two_layer", "CONSTRAINTS",
]

CONSTRAINTS = ("none", "frobenius", "operator", "scaled", "orthogonal")
"""The constraints of :func:`gd_two_layer` (Props 2 and 3 of the paper)."""


def setup_tensor(name: str, value, ndim: int | None = None) -> torch.Tensor:
    """``value`` as a finite tensor on the device and dtype of :func:`clbook.setup` (the one coercion, ``as_tensor``)."""
    device, dtype = defaults()
    return as_tensor(name, value, ndim=ndim, dtype=dtype, device=device)


def view_tensors(ndim: int, **named) -> list[torch.Tensor]:
    """Several same-shape arguments (the views of one batch) as tensors, with at least one row."""
    out = [setup_tensor(k, v, ndim) for k, v in named.items()]
    shapes = {k: tuple(t.shape) for k, t in zip(named, out, strict=True)}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"the views must share one shape [n, k]; got {shapes}.")
    if out[0].shape[0] < 1 or out[0].shape[-1] < 1:
        raise ValueError(f"the views must hold at least one row and one column; got shapes {shapes}.")
    return out


def _symmetric(name: str, C: torch.Tensor, d: int | None = None) -> torch.Tensor:
    if C.ndim != 2 or C.shape[0] != C.shape[1] or C.shape[0] < 1 or (d is not None and C.shape[0] != d):
        want = f"[{d}, {d}]" if d is not None else "[d, d]"
        raise ValueError(f"{name} must be a square matrix {want}; got shape {tuple(C.shape)}.")
    scale = max(1.0, float(C.abs().max()))
    if float((C - C.T).abs().max()) > 1e-12 * scale:
        raise ValueError(f"{name} must be symmetric; pass C = (C̃ + C̃ᵀ)/2 (Eq. 7), e.g. trace_matrix(..., symmetric=True).")
    return C


def _times(name: str, times) -> torch.Tensor:
    t = setup_tensor(name, times, 1)
    if t.numel() < 1 or float(t[0]) < 0 or bool((t[1:] <= t[:-1]).any()):
        raise ValueError(f"{name} must be a non-empty, strictly increasing 1-D grid of times >= 0.")
    return t


def contrastive_loss(u, u_pos, u_neg) -> float:
    r"""Eq. 1: :math:`\sum_i u(x_i)^\top(u(x_i^-) - u(x_i^+))` for embeddings ``[n, z]`` (``n, z >= 1``, finite)."""
    u, u_pos, u_neg = view_tensors(2, u=u, u_pos=u_pos, u_neg=u_neg)
    return float((u * (u_neg - u_pos)).sum())


def noncontrastive_loss(u, u_pos) -> float:
    r"""Eq. 2: :math:`-\sum_i u(x_i)^\top u(x_i^+)` for embeddings ``[n, z]`` (``n, z >= 1``, finite)."""
    u, u_pos = view_tensors(2, u=u, u_pos=u_pos)
    return float(-(u * u_pos).sum())


def trace_matrix(x, x_pos, x_neg=None, *, normalize: bool = True, symmetric: bool = True) -> torch.Tensor:
    r"""The data matrix of Eq. 7: :math:`C = \operatorname{sym}(\tilde C)`, ``[d, d]``.

    .. math::

        \tilde C = \sum_{i=1}^n x_i(x_i^- - x_i^+)^\top \ (\text{contrastive}),\qquad
        \tilde C = -\sum_{i=1}^n x_i x_i^{+\top}\ (\text{non-contrastive, } x^- \text{ omitted}).

    Parameters
    ----------
    x, x_pos, x_neg : tensor or array, shape=[n, d]
        Anchors, positives and (for the contrastive loss) negatives; ``n >= 1``, finite.
    normalize : bool
        Divide by :math:`n` (the paper sums without normalising; step sizes like 0.01 need the :math:`1/n`).
    symmetric : bool
        Return :math:`(\tilde C + \tilde C^\top)/2` (default) or :math:`\tilde C` itself.
    """
    if x_neg is None:
        x, x_pos = view_tensors(2, x=x, x_pos=x_pos)
        ct = -x.T @ x_pos
    else:
        x, x_pos, x_neg = view_tensors(2, x=x, x_pos=x_pos, x_neg=x_neg)
        ct = x.T @ (x_neg - x_pos)
    if normalize:
        ct = ct / x.shape[0]
    return (ct + ct.T) / 2 if symmetric else ct


def trace_weights(W1, W2, C, *, symmetric: bool = False):
    """``W1 [h, d]``, ``W2 [h, z]``, ``C [d, d]`` as setup tensors with matching shapes (``C`` symmetric if asked)."""
    W1, W2, C = setup_tensor("W1", W1, 2), setup_tensor("W2", W2, 2), setup_tensor("C", C, 2)
    if W1.shape[0] != W2.shape[0] or min(*W1.shape, *W2.shape) < 1:
        raise ValueError(f"W1 [h, d] and W2 [h, z] must share their number of rows h >= 1; got {tuple(W1.shape)} and "
                         f"{tuple(W2.shape)}.")
    if C.shape != (W1.shape[1], W1.shape[1]):
        raise ValueError(f"C must be [d, d] with d = W1.shape[1] = {W1.shape[1]}; got {tuple(C.shape)}.")
    if symmetric:
        _symmetric("C", C)
    return W1, W2, C


def trace_loss(W1, W2, C) -> float:
    r"""Eq. 8: :math:`\operatorname{Tr}(W_2^\top W_1 C W_1^\top W_2)` for ``W1 [h, d]``, ``W2 [h, z]``, ``C [d, d]``.

    No :math:`h\times h` product is formed. ``C`` need not be symmetric (the trace only sees its symmetric part).
    """
    W1, W2, C = trace_weights(W1, W2, C)
    M = W1.T @ W2
    return float((M * (C @ M)).sum())


def euclidean_gradients(W1, W2, C) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Euclidean gradients of the trace loss for symmetric ``C``.

    :math:`\nabla_{W_1}\mathcal L = 2W_2W_2^\top W_1C`, :math:`\nabla_{W_2}\mathcal L = 2W_1CW_1^\top W_2` (``[h, d]``
    and ``[h, z]``; no :math:`h\times h` product).
    """
    W1, W2, C = trace_weights(W1, W2, C, symmetric=True)
    return trace_gradients(W1, W2, C)


def trace_gradients(W1, W2, C):
    r"""The gradients of Eq. 8 in ``W1`` and ``W2``, unchecked: :math:`2W_2W_2^\top W_1C` and :math:`2W_1CW_1^\top W_2`."""
    return 2 * W2 @ ((W2.T @ W1) @ C), 2 * W1 @ (C @ (W1.T @ W2))


def scaled_loss(W1, W2, C) -> float:
    r"""The scale-invariant loss of Prop 3 (1): :math:`\operatorname{Tr}(W_2^\top W_1CW_1^\top W_2)/(\|W_1\|_2^2\|W_2\|_2^2)`.

    ``W1`` and ``W2`` must be non-zero (the ratio is undefined at zero).
    """
    W1, W2, C = trace_weights(W1, W2, C)
    s1, s2 = torch.linalg.matrix_norm(W1, 2), torch.linalg.matrix_norm(W2, 2)
    if float(s1) == 0 or float(s2) == 0:
        raise ValueError("W1 and W2 must be non-zero: the scaled loss divides by ‖W1‖₂²‖W2‖₂².")
    M = W1.T @ W2
    return float((M * (C @ M)).sum() / (s1**2 * s2**2))


def _theta_c(theta0, C):
    theta0, C = setup_tensor("theta0", theta0, 2), setup_tensor("C", C, 2)
    if min(theta0.shape) < 1:
        raise ValueError(f"theta0 must be a non-empty matrix [z, d]; got shape {tuple(theta0.shape)}.")
    return theta0, _symmetric("C", C, theta0.shape[1])


def _finite_result(out: torch.Tensor, what: str) -> torch.Tensor:
    if not bool(torch.isfinite(out).all()):
        raise ValueError(f"{what} exceeds the floating-point range: the solution grows like e^(−2λ_min t); "
                         "use shorter times (or fewer steps) or rescale C.")
    return out


def linear_closed_form(theta0, C, times) -> torch.Tensor:
    r"""Prop 1 in closed form: :math:`\Theta(t) = \Theta_0 e^{-2Ct}`, the solution of :math:`\dot\Theta = -2\Theta C`.

    The flow is gradient flow of :math:`\operatorname{Tr}(\Theta C\Theta^\top)` (the loss of Eq. 1/2 for
    :math:`u(x) = \Theta x`). ``theta0 [z, d]``, symmetric ``C [d, d]``, ``times`` a strictly increasing grid
    :math:`\ge 0`. Returns ``[len(times), z, d]``, computed in the eigenbasis of :math:`C`
    (``torch.linalg.matrix_exp`` gives the same, see the tests). When :math:`\lambda_{\min}(C) < 0` the solution
    itself grows exponentially; a ``ValueError`` says so where it leaves the floating-point range.
    """
    theta0, C = _theta_c(theta0, C)
    t = _times("times", times)
    lam, V = torch.linalg.eigh(C)
    decay = torch.exp(-2 * t[:, None] * lam[None, :])
    out = torch.einsum("zd,de,te,fe->tzf", theta0, V, decay, V)
    return _finite_result(out, "times: Θ(t) = Θ₀e^(−2Ct)")


def linear_flow(theta0, C, times, *, rtol: float = 1e-11, atol: float = 1e-12) -> torch.Tensor:
    r"""Integrate :math:`\dot\Theta = -2\Theta C` with scipy's ``solve_ivp`` (DOP853, on the CPU); ``[len(times), z, d]``.

    The independent check of :func:`linear_closed_form`: the right-hand side is evaluated in float64 on the CPU
    and the solution is moved back to the device of :func:`clbook.setup`.
    """
    theta0, C = _theta_c(theta0, C)
    t = _times("times", times)
    rtol, atol = check_positive("rtol", rtol), check_positive("atol", atol)
    z, d = theta0.shape
    C_cpu = C.detach().to("cpu", torch.float64)
    # Θ(t) = Θ0 e^{-2Ct} grows like e^{-2 λ_min t}: refuse a grid whose end leaves float64 (and its dtype) before
    # the solver meets it (solve_ivp would stop with "required step size is less than spacing" and no parameter)
    growth = max(0.0, -2.0 * float(torch.linalg.eigvalsh(C_cpu).min())) * float(t[-1])
    scale = float(theta0.detach().abs().max())
    limit = math.log(torch.finfo(theta0.dtype).max)
    if scale > 0 and growth + math.log(scale) + math.log(max(z * d, 1)) > limit:
        t_max = (limit - math.log(scale) - math.log(max(z * d, 1))) / (growth / float(t[-1]))
        raise ValueError(f"times: Θ(t) = Θ0 e^(−2Ct) leaves the floating-point range before t = {float(t[-1]):g} "
                         f"(λ_min(C) = {-growth / 2 / float(t[-1]):.3g} < 0: it grows like e^(−2λ_min t)); use times up to "
                         f"about {t_max:.3g}, or rescale C.")

    def rhs(_, y):
        return (-2 * torch.from_numpy(y).view(z, d) @ C_cpu).reshape(-1).numpy()

    t_cpu = t.detach().cpu().double().numpy()
    sol = solve_ivp(rhs, (0.0, float(t_cpu[-1])), theta0.detach().cpu().double().reshape(-1).numpy(), method="DOP853",
                    t_eval=t_cpu, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"linear_flow: solve_ivp failed ({sol.message}) with rtol = {rtol:g}, atol = {atol:g} up to "
                           f"times[-1] = {float(t_cpu[-1]):g}; loosen rtol/atol or shorten times.")
    return _finite_result(torch.from_numpy(sol.y.T.copy()).view(len(t_cpu), z, d).to(theta0), "times: Θ(t)")


def linear_gd(theta0, C, *, eta: float, steps: int) -> torch.Tensor:
    r"""Gradient descent :math:`\Theta_{k+1} = \Theta_k - 2\eta\Theta_k C`, all iterates ``[steps + 1, z, d]``.

    Exactly :math:`\Theta_k = \Theta_0(\mathbb I - 2\eta C)^k`. ``eta > 0``, ``steps >= 0``.
    """
    theta0, C = _theta_c(theta0, C)
    eta, steps = check_positive("eta", eta), check_int("steps", steps, 0)
    out = [theta0]
    for _ in range(steps):
        out.append(out[-1] - 2 * eta * out[-1] @ C)
    return _finite_result(torch.stack(out), "steps: Θ_k")


def projector_closed_form(A, theta0, C, times) -> torch.Tensor:
    r"""Remark 3: :math:`u = A\Theta x` with a fixed :math:`A\in\mathbb R^{r\times z}`; returns :math:`\Phi_t = A\Theta_t`.

    Gradient flow of :math:`\operatorname{Tr}(A\Theta C\Theta^\top A^\top)` is :math:`\dot\Theta = -2A^\top A\Theta C`, so
    :math:`\Theta_t = \sum_{k,j} e^{-2\alpha_k\lambda_j t}\,a_ka_k^\top\Theta_0 v_jv_j^\top` with
    :math:`A^\top A = \sum_k\alpha_k a_ka_k^\top` and :math:`C = \sum_j\lambda_j v_jv_j^\top`. Shape ``[len(times), r, d]``.
    """
    A = setup_tensor("A", A, 2)
    theta0, C = _theta_c(theta0, C)
    if A.shape[1] != theta0.shape[0] or A.shape[0] < 1:
        raise ValueError(f"A must be [r, z] with r >= 1 and z = theta0.shape[0] = {theta0.shape[0]}; got {tuple(A.shape)}.")
    t = _times("times", times)
    alpha, Ua = torch.linalg.eigh(A.T @ A)
    lam, V = torch.linalg.eigh(C)
    core = Ua.T @ theta0 @ V
    decay = torch.exp(-2 * t[:, None, None] * alpha[None, :, None] * lam[None, None, :])
    return _finite_result(torch.einsum("rz,zk,tkj,fj->trf", A, Ua, decay * core, V), "times: AΘ(t)")


def singular_value_ratio(M) -> torch.Tensor:
    r""":math:`\sigma_2/\sigma_1` of a matrix or of each matrix of a stack ``[..., a, b]`` (``a, b >= 2``, non-zero)."""
    M = setup_tensor("M", M)
    if M.ndim < 2 or min(M.shape[-2:]) < 2:
        raise ValueError(f"M must be a matrix (or a stack) [..., a, b] with a, b >= 2; got shape {tuple(M.shape)}.")
    s = torch.linalg.svdvals(M)
    if bool((s[..., 0] == 0).any()):
        raise ValueError("M must be non-zero: σ₂/σ₁ is undefined for a zero matrix.")
    return s[..., 1] / s[..., 0]


def optimal_value(C, z: int) -> float:
    r"""Prop 3's optimum :math:`\sum_{i\le\min(z,l)}\lambda_i(C)`.

    The sum of the :math:`z` smallest eigenvalues that are
    negative (symmetric ``C``, ``z >= 1``).
    """
    C = _symmetric("C", setup_tensor("C", C, 2))
    z = check_int("z", z, 1)
    lam = torch.linalg.eigvalsh(C)[:z]
    return float(lam.clamp(max=0.0).sum())


@dataclass(frozen=True)
class GDResult:
    r"""A run of :func:`gd_two_layer`.

    Attributes
    ----------
    W1, W2 : torch.Tensor
        Final weights ``[h, d]``, ``[h, z]``.
    losses : torch.Tensor
        Trace loss (or the scaled loss for ``"scaled"``) after each step, index 0 = initial.
    products : torch.Tensor
        :math:`W_1^\top W_2` at the recorded steps, ``[len(losses), d, z]``.
    steps : int
        Steps taken (fewer than asked when the run diverged).
    stopping_reason : str
        ``"steps"`` or ``"diverged"`` (loss below ``-blowup``).
    """

    W1: torch.Tensor
    W2: torch.Tensor
    losses: torch.Tensor
    products: torch.Tensor
    steps: int
    stopping_reason: str


def _clip_operator(W: torch.Tensor, c: float = 1.0) -> torch.Tensor:
    U, s, Vh = torch.linalg.svd(W, full_matrices=False)
    return (U * s.clamp(max=c)) @ Vh


def _top_pair(W: torch.Tensor):
    """The top singular value of ``W`` and the outer product of its singular vectors (the gradient of ‖W‖₂)."""
    U, s, Vh = torch.linalg.svd(W, full_matrices=False)
    return s[0], torch.outer(U[:, 0], Vh[0])


def _scaled_gradients(W1, W2, C, G1, G2, top1, top2):
    """Gradients of the scaled loss 𝓛/(σ₁(W₁)²σ₁(W₂)²) from those of 𝓛 (``top_i`` = :func:`_top_pair` of ``W_i``)."""
    M = W1.T @ W2
    loss = (M * (C @ M)).sum()
    (s1, P1), (s2, P2) = top1, top2
    scale = s1**2 * s2**2
    return G1 / scale - 2 * loss * P1 / (scale * s1), G2 / scale - 2 * loss * P2 / (scale * s2)


def gd_two_layer(W1, W2, C, *, eta: float, steps: int, constraint: str = "none", c1: float = 1.0, c2: float = 1.0,
                 blowup: float = 1e30) -> GDResult:
    r"""Gradient descent on :math:`\operatorname{Tr}(W_2^\top W_1CW_1^\top W_2)` for :math:`u(x) = W_2^\top W_1x`.

    The Euclidean gradients are :func:`euclidean_gradients`. ``constraint``:

    * ``"none"``: plain GD (the loss is quartic and unbounded below when :math:`\lambda_{\min}(C) < 0`);
    * ``"frobenius"``: GD, then :math:`W_i\leftarrow W_i\min(1, c_i/\|W_i\|_F)` (Prop 2);
    * ``"operator"``: GD, then singular values of each :math:`W_i` clipped at 1 (Prop 3 (2));
    * ``"scaled"``: GD on :math:`\mathcal L/(\|W_1\|_2^2\|W_2\|_2^2)` (Prop 3 (1); the paper's
      :math:`\mathcal L_{orth}`), each iterate rescaled to :math:`\|W_i\|_2 = 1`, which leaves the loss unchanged;
    * ``"orthogonal"``: the paper's projected step :math:`W\leftarrow\mathrm{qf}(W - \eta(\mathbb I - WW^\top)G)`
      (:func:`clbook.dynamics.stiefel.projected_step`) on :math:`W_1^\top W_1 = \mathbb I_d`,
      :math:`W_2^\top W_2 = \mathbb I_z` (Prop 3 (4)); the start must have orthonormal columns and :math:`h\ge d, z`.

    Domain: ``W1 [h, d]``, ``W2 [h, z]`` finite, symmetric ``C [d, d]``, ``eta > 0``, ``steps >= 0``, ``c1, c2,
    blowup > 0``; non-zero weights for ``"scaled"``. Both layers are updated from the same iterate; no :math:`h\times h`
    matrix is formed. The run stops early (``stopping_reason="diverged"``) once the loss passes ``-blowup``.
    """
    W1, W2, C = trace_weights(W1, W2, C, symmetric=True)
    eta, steps = check_positive("eta", eta), check_int("steps", steps, 0)
    check_choice("constraint", constraint, CONSTRAINTS)
    c1, c2, blowup = check_positive("c1", c1), check_positive("c2", c2), check_positive("blowup", blowup)
    if constraint == "orthogonal":
        from ..linalg import stiefel_error
        from .stiefel import projected_step_unchecked

        for name, W in (("W1", W1), ("W2", W2)):
            if W.shape[0] < W.shape[1] or stiefel_error(W) > 1e-8:
                raise ValueError(f"{name} must have orthonormal columns ({name}ᵀ{name} = I, so h >= its columns) for "
                                 f"constraint='orthogonal'; retract it first with clbook.linalg.retract.")
    M = W1.T @ W2
    first = scaled_loss(W1, W2, C) if constraint == "scaled" else float((M * (C @ M)).sum())
    losses, products, reason = [torch.as_tensor(first, dtype=W1.dtype, device=W1.device)], [M], "steps"
    tops = (_top_pair(W1), _top_pair(W2)) if constraint == "scaled" else None
    with single_thread():  # thin matrices: one thread is faster, and immune to a busy machine
        for _ in range(steps):
            G1, G2 = trace_gradients(W1, W2, C)
            if constraint == "scaled":
                G1, G2 = _scaled_gradients(W1, W2, C, G1, G2, *tops)
            if constraint == "orthogonal":
                W1n, W2n = projected_step_unchecked(W1, G1, eta), projected_step_unchecked(W2, G2, eta)
            else:
                W1n, W2n = W1 - eta * G1, W2 - eta * G2
            if constraint == "frobenius":
                W1n = W1n * min(1.0, c1 / float(torch.linalg.matrix_norm(W1n)))
                W2n = W2n * min(1.0, c2 / float(torch.linalg.matrix_norm(W2n)))
            elif constraint == "operator":
                W1n, W2n = _clip_operator(W1n), _clip_operator(W2n)
            elif constraint == "scaled":  # rescale to ‖W_i‖₂ = 1; the top singular vectors carry over to the next step
                (s1, P1), (s2, P2) = _top_pair(W1n), _top_pair(W2n)
                W1n, W2n, tops = W1n / s1, W2n / s2, ((torch.ones_like(s1), P1), (torch.ones_like(s2), P2))
            W1, W2 = W1n, W2n
            M = W1.T @ W2
            losses.append((M * (C @ M)).sum())  # the scaled loss equals the trace loss once ||W_i||_2 = 1
            products.append(M)
            last = float(losses[-1])
            if not math.isfinite(last) or last < -blowup:
                reason = "diverged"
                break
    return GDResult(W1, W2, torch.stack(losses), torch.stack(products), len(losses) - 1, reason)
