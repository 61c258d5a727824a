r"""The one-layer networks of Pokle, Tian, Li and Risteski (2022) and the landscape of their Theorem 1.

* Networks on masked views of the sparse-coding data (:mod:`clbook.data.sparse_coding`): the encoder
  :math:`h_{W,b}(a) = \mathrm{ReLU}(Wa + b)`, the symmetric ReLU of Eq. 14 and a linear predictor
  :math:`g = W^p h + b^p` (:func:`srelu`, :func:`encode`, :func:`predict`).
* The theory's *unnormalised* losses on a batch: :func:`ncl_inner` (Eqs 6, 7, 12, 13, depending on the encoder it
  is fed) and :func:`cl_inner` (Eq. 8). The normalised losses of the experiments are
  :func:`clbook.losses.noncontrastive.ncl_loss` (Eqs 4, 5) and :func:`clbook.losses.ntxent.nt_xent`.
* Theorem 1 (:math:`d = p = m`, :math:`M = I`, one-hot latents, no noise, independent masks): the exact population
  loss of Eq. 6 and its projected gradient flow (part (a)); the contrastive surrogate of Eq. 16, its minimum, its
  dead-column stationary points and its projected gradient descent (part (b)); the genuine large-batch limit of
  Eq. 8 and its minimisers.

Conventions: weights ``W`` are ``[..., m, p]`` (neurons are rows), batches ``A`` are ``[..., n, p]`` (samples are
rows), representations are ``[..., n, m]``; leading axes (seeds) broadcast. ``keep`` is the mask's keep
probability :math:`\alpha`. ``temperature`` is :math:`T > 0` and *divides* the similarities, as everywhere in the
book: the paper's Eq. 8 multiplies them by :math:`\tau`, so :math:`T = 1/\tau`. Everything computes on the device
and in the dtype of its tensor arguments (functions of sizes only use those of :func:`clbook.setup`).
Used in Chapters 14 and 15.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from .. import linalg
from .._validate import as_tensor, check_choice, check_in_range, check_int, check_positive, check_same, check_tensor
from ..config import defaults, rand, randint
from ..data import sparse_coding as sc

__all__ = [
    "ACTIVATIONS", "srelu", "encode", "predict", "ncl_inner", "cl_inner",
    "ncl_onehot", "ncl_onehot_grad", "ncl_onehot_flow", "NCLFlow",
    "cl_surrogate", "cl_surrogate_mc", "cl_surrogate_min", "dead_column_gap", "cl_surrogate_descent", "CLDescent",
    "cl_large_batch", "cl_batch_mc", "large_batch_threshold", "large_batch_s_star", "large_batch_min",
    "large_batch_minimiser", "nearest_permutation_error",
]

ACTIVATIONS = ("relu", "srelu", "linear")


# ----------------------------------------------------------------------------------------------- networks


def _bias(name: str, bias, like: torch.Tensor):
    if bias is None:
        return None
    b = as_tensor(name, bias, device=like.device, dtype=like.dtype)
    return b


def srelu(u: torch.Tensor, bias) -> torch.Tensor:
    r"""Symmetric ReLU with threshold :math:`b\ge0` (Eq. 14): :math:`\mathrm{ReLU}(u-b) - \mathrm{ReLU}(-u-b)`.

    Entrywise :math:`u-b` above :math:`b`, :math:`0` on :math:`[-b, b]`, :math:`u+b` below :math:`-b`. With
    :math:`b = 0` it is the identity (Remark 2). The authors' code thresholds at :math:`-b` instead (Chapter 17).

    Parameters
    ----------
    u : torch.Tensor
        Pre-activations, any shape, finite floating point.
    bias : float or torch.Tensor
        The threshold :math:`b\ge0`, a number or a tensor broadcasting against ``u`` (one threshold per neuron:
        the last axis); converted to ``u``'s dtype and device.
    """
    u = check_tensor("u", u)
    b = _bias("bias", bias, u)
    if bool((b < 0).any()):
        raise ValueError("bias (the SReLU threshold b) must be >= 0 entrywise.")
    return torch.relu(u - b) - torch.relu(-u - b)


def encode(W: torch.Tensor, A: torch.Tensor, *, bias=None, activation: str = "relu") -> torch.Tensor:
    r"""One-layer encoder applied to a batch of views.

    * ``"relu"``: :math:`h_{W,b}(a) = \mathrm{ReLU}(Wa + b)` (Sec. 4.1);
    * ``"srelu"``: :math:`\mathrm{SReLU}_b(Wa)` (Eqs 13-14; ``bias`` is the threshold :math:`b\ge0`, default 0);
    * ``"linear"``: :math:`Wa + b` (Eq. 12).

    Parameters
    ----------
    W : torch.Tensor, shape=[..., m, p]
    A : torch.Tensor, shape=[..., n, p]
        Same dtype and device as ``W``.
    bias : float or torch.Tensor of shape [..., m], optional

    Returns
    -------
    torch.Tensor, shape=[..., n, m]
    """
    W, A = check_tensor("W", W), check_tensor("A", A)
    check_choice("activation", activation, ACTIVATIONS)
    if W.ndim < 2 or A.ndim < 2 or W.shape[-1] != A.shape[-1]:
        raise ValueError(f"W must be [..., m, p] and A [..., n, p] with the same p; got {list(W.shape)} and {list(A.shape)}.")
    check_same(("W", "A"), W, A)
    pre = A @ W.transpose(-1, -2)
    b = _bias("bias", 0.0 if bias is None else bias, W)
    if b.ndim >= 1:
        if b.shape[-1] != W.shape[-2]:
            raise ValueError(f"bias must have one entry per neuron, shape [..., {W.shape[-2]}]; got {list(b.shape)}.")
        b = b.unsqueeze(-2)
    if activation == "srelu":
        return srelu(pre, b)
    pre = pre + b
    return torch.relu(pre) if activation == "relu" else pre


def predict(Wp: torch.Tensor, H: torch.Tensor, *, bias=None) -> torch.Tensor:
    r"""Linear predictor :math:`g = W^p h + b^p` (Sec. 4.1).

    On representations ``H`` ``[..., n, m]``; ``Wp`` ``[..., m, m]``
    (same dtype and device); ``bias`` a number or ``[..., m]``. Returns ``[..., n, m]``.
    """
    Wp, H = check_tensor("Wp", Wp), check_tensor("H", H)
    if Wp.ndim < 2 or H.ndim < 2 or Wp.shape[-1] != H.shape[-1] or Wp.shape[-2] != Wp.shape[-1]:
        raise ValueError(f"Wp must be [..., m, m] with m = H.shape[-1] and H [..., n, m]; got {list(Wp.shape)} and {list(H.shape)}.")
    check_same(("Wp", "H"), Wp, H)
    out = H @ Wp.transpose(-1, -2)
    b = _bias("bias", bias, H)
    return out if b is None else out + (b.unsqueeze(-2) if b.ndim >= 1 else b)


# ----------------------------------------------------------------------------------------------- batch losses


def _pair(u, v, names=("u", "v")):
    u, v = check_tensor(names[0], u), check_tensor(names[1], v)
    check_same(names, u, v, shape=True)
    if u.ndim < 2:
        raise ValueError(f"{names[0]} and {names[1]} must be paired representations [..., n, m]; got {list(u.shape)}.")
    if u.shape[-2] < 1 or u.shape[-1] < 1:
        raise ValueError(f"{names[0]} must hold n >= 1 samples of m >= 1 features; got {list(u.shape)}.")
    check_same(names, u, v)
    return u, v


def ncl_inner(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    r"""Unnormalised non-contrastive loss :math:`2 - \frac2n\sum_k\langle u_k, \mathrm{SG}(v_k)\rangle` on a batch.

    With ReLU encoders this is Eq. 6; with ``u = predict(Wp, ...)`` Eq. 7; with linear encoders Eq. 12; with
    SReLU encoders Eq. 13. ``u``, ``v``: ``[..., n, m]``, ``n >= 1``; returns ``[...]``. No gradient reaches ``v``.
    """
    u, v = _pair(u, v)
    return 2 - 2 * (u * v.detach()).sum(-1).mean(-1)


def cl_inner(u1: torch.Tensor, u2: torch.Tensor, *, temperature: float) -> torch.Tensor:
    r"""Eq. 8 on a batch: positives :math:`(u_{1k}, u_{2k})`, negatives the second views of the other samples.

    .. math:: L = \frac1n\sum_k\Big[-\frac{S_{kk}}{T} + \log\sum_{l}e^{S_{kl}/T}\Big],\qquad S_{kl} = \langle u_{1k}, u_{2l}\rangle,

    on the *unnormalised* inner products, with the temperature :math:`T` dividing (the paper's :math:`\tau = 1/T`
    multiplies); the denominator holds the positive and :math:`n-1` negatives. Computed with ``logsumexp``.
    This is not NT-Xent (:func:`clbook.losses.ntxent.nt_xent`): NT-Xent normalises the representations and uses
    both views of every other sample as negatives, in both directions.

    Parameters
    ----------
    u1, u2 : torch.Tensor, shape=[..., n, m]
        ``n >= 2`` (a single sample has no negative).
    temperature : float
        :math:`T > 0`.

    Returns
    -------
    torch.Tensor, shape=[...]
    """
    u1, u2 = _pair(u1, u2, ("u1", "u2"))
    if u1.shape[-2] < 2:
        raise ValueError(f"u1 must hold n >= 2 samples (with n = 1 there is no negative); got n = {u1.shape[-2]}.")
    T = check_positive("temperature", temperature)
    S = (u1 @ u2.transpose(-1, -2)) / T
    return (torch.logsumexp(S, dim=-1) - torch.diagonal(S, dim1=-2, dim2=-1)).mean(-1)


# ----------------------------------------------------------------------------------------------- Theorem 1 (a)


def _square(name: str, W, *, min_d: int = 1, max_d: int | None = None, ndim: int | None = None) -> torch.Tensor:
    W = check_tensor(name, W, ndim=ndim)
    if W.ndim < 2 or W.shape[-1] != W.shape[-2]:
        raise ValueError(f"{name} must be a stack of square matrices [..., d, d] (d = p = m in Theorem 1); got {list(W.shape)}.")
    check_int(f"d (columns of {name})", W.shape[-1], min_d, max_d)
    return W


def ncl_onehot(W: torch.Tensor, *, keep: float) -> torch.Tensor:
    r"""Exact :math:`L_{\text{non-CL}}(W, W)` (Eq. 6) in the setting of Theorem 1, independent masks.

    With :math:`x = e_j`, :math:`\mathrm{ReLU}(WD e_j) = D_{jj}\mathrm{ReLU}(W_{*j})`, so

    .. math:: L(W,W) = 2 - \frac{2\alpha^2}{d}\sum_{j=1}^d\|\mathrm{ReLU}(W_{*j})\|^2 \;\ge\; 2 - 2\alpha^2 \text{ on } \mathcal U .

    ``W`` is ``[..., d, d]`` (any columns; the bound needs unit columns); ``keep`` in :math:`[0, 1]`.
    Returns ``[...]``.
    """
    W = _square("W", W)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    return 2 - 2 * alpha**2 * (torch.relu(W) ** 2).sum(dim=(-2, -1)) / W.shape[-1]


def ncl_onehot_grad(W: torch.Tensor, *, keep: float) -> torch.Tensor:
    r"""Euclidean gradient of :func:`ncl_onehot`: :math:`-\frac{4\alpha^2}{d}\mathrm{ReLU}(W)` (``[..., d, d]``)."""
    W = _square("W", W)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    return -4 * alpha**2 * torch.relu(W) / W.shape[-1]


@dataclass(frozen=True)
class NCLFlow:
    """Projected gradient descent on Eq. 6 (Theorem 1 setting).

    final ``W``, loss per step ``[..., steps + 1]``, the closed form after ``steps`` steps and the limit.
    """

    W: torch.Tensor
    losses: torch.Tensor
    closed_form: torch.Tensor
    limit: torch.Tensor


def ncl_onehot_flow(W0: torch.Tensor, *, keep: float, lr: float, steps: int) -> NCLFlow:
    r"""Projected gradient descent :math:`W\leftarrow\mathrm{colnorm}(W - \eta\nabla L)` on :math:`\mathcal U` (Theorem 1(a)).

    Since :math:`\nabla L = -c\,\mathrm{ReLU}(W)/\eta` with :math:`c = 4\eta\alpha^2/d`, one step multiplies the
    positive entries by :math:`1+c`, leaves the others, and renormalises the column. After :math:`t` steps

    .. math::

        W_t = \mathrm{colnorm}\big((1+c)^t\,\mathrm{ReLU}(W_0) - \mathrm{ReLU}(-W_0)\big)
        \ \xrightarrow[t\to\infty]{}\ \mathrm{colnorm}(\mathrm{ReLU}(W_0)),

    for every column with a positive entry (``closed_form`` and ``limit``). A column with no positive entry has
    zero gradient and never moves. The closed form is evaluated as
    :math:`\mathrm{colnorm}(\mathrm{ReLU}(W_0) - (1+c)^{-t}\mathrm{ReLU}(-W_0))`, which does not overflow for large
    :math:`t`.

    Parameters
    ----------
    W0 : torch.Tensor, shape=[..., d, d]
        Start; its columns are normalised first (no zero column).
    keep : float
        :math:`\alpha\in[0,1]`.
    lr : float
        :math:`\eta > 0`.
    steps : int
        ``>= 0``.
    """
    W = _square("W0", W0)
    if bool((W.norm(dim=-2) == 0).any()):
        raise ValueError("W0 has a zero column, which cannot be normalised onto the unit sphere.")
    W = linalg.unit_columns(W)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    lr, steps = check_positive("lr", lr), check_int("steps", steps, 0)
    W0n = W.clone()
    losses = [ncl_onehot(W, keep=alpha)]
    for _ in range(steps):
        W = linalg.unit_columns(W - lr * ncl_onehot_grad(W, keep=alpha))
        losses.append(ncl_onehot(W, keep=alpha))
    c = 4 * lr * alpha**2 / W.shape[-1]
    closed = linalg.unit_columns(torch.relu(W0n) - (1 + c) ** (-steps) * torch.relu(-W0n))
    has_pos = (W0n > 0).any(dim=-2, keepdim=True)
    limit = torch.where(has_pos, linalg.unit_columns(torch.relu(W0n)), W0n)
    return NCLFlow(W=W, losses=torch.stack(losses, dim=-1), closed_form=closed, limit=limit)


# ----------------------------------------------------------------------------------------------- Theorem 1 (b)


def cl_surrogate(W: torch.Tensor, *, keep: float, temperature: float) -> torch.Tensor:
    r"""Exact value of the contrastive surrogate :math:`\tilde L_{CL}(W)` of Eq. 16 (Theorem 1(b) setting).

    With :math:`r_i = \mathrm{ReLU}(W_{*i})`, :math:`g_{ij} = \langle r_i, r_j\rangle`, :math:`s_i = g_{ii}` and
    independent Bernoulli(:math:`\alpha`) bits :math:`a = (D_1^i)_{ii}`, :math:`b_j = (D_2^j)_{jj}`, the
    :math:`i`-th term is :math:`\log(1+\sum_{j\ne i}e^{a(b_jg_{ij} - b_is_i)/T})`, so

    .. math::

        \tilde L_{CL} = \sum_{i=1}^d\Big[(1-\alpha)\log d
        + \alpha\,\mathbb E_{b}\log\Big(1 + \sum_{j\ne i}e^{(b_jg_{ij}-b_is_i)/T}\Big)\Big],

    the expectation enumerated exactly over the :math:`2^d` patterns of :math:`b`. Differentiable.

    Parameters
    ----------
    W : torch.Tensor, shape=[..., d, d]
        ``2 <= d <= 12``.
    keep : float
        :math:`\alpha\in[0, 1]`.
    temperature : float
        :math:`T > 0` (the paper's :math:`\tau = 1/T`).

    Returns
    -------
    torch.Tensor, shape=[...]
    """
    W = _square("W", W, min_d=2, max_d=12)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    T = check_positive("temperature", temperature)
    d = W.shape[-1]
    R = torch.relu(W)
    G = R.transpose(-1, -2) @ R                                         # [..., d, d]
    s = torch.diagonal(G, dim1=-2, dim2=-1)                             # [..., d]
    B, prob = (t.to(W) for t in sc.enumerate_masks(d, keep=alpha))      # [P, d], [P]
    # exponent[..., P, i, j] = (b_j g_ij - b_i s_i) / T for j != i, and 0 (the positive) for j = i
    E = (B[:, None, :] * G.unsqueeze(-3) - (B * s.unsqueeze(-2)).unsqueeze(-1)) / T
    eye = torch.eye(d, dtype=torch.bool, device=W.device)
    E = torch.where(eye, torch.zeros_like(E), E)
    terms = torch.logsumexp(E, dim=-1)                                   # [..., P, i]
    expected = (prob[:, None] * terms).sum(-2)                           # [..., i]
    return ((1 - alpha) * math.log(d) + alpha * expected).sum(-1)


def cl_surrogate_mc(W: torch.Tensor, *, keep: float, temperature: float, samples: int,
                    generator: torch.Generator) -> tuple[float, float]:
    r"""Monte-Carlo estimate of Eq. 16 from its definition (masks drawn, ReLU applied to :math:`WD e_i`); an oracle.

    For each class :math:`i` it draws ``samples`` masks :math:`D_1^i` and :math:`D_2^j` (every :math:`j`) and averages
    the log-ratio of Eq. 16. Returns ``(estimate, standard_error)`` for a single ``W`` ``[d, d]`` (floats; the
    classes are independent, so the variances add).
    """
    W = _square("W", W, min_d=2, ndim=2)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    T = check_positive("temperature", temperature)
    samples = check_int("samples", samples, 2)
    d = W.shape[-1]
    eye = torch.eye(d, device=W.device, dtype=W.dtype)
    total, var = 0.0, 0.0
    for i in range(d):
        d1 = (rand(samples, d, generator=generator, device=W.device, dtype=W.dtype) < alpha).to(W.dtype)     # D_1^i
        d2 = (rand(samples, d, d, generator=generator, device=W.device, dtype=W.dtype) < alpha).to(W.dtype)  # D_2^j
        anchor = torch.relu((d1 * eye[i]) @ W.T)                              # ReLU(W D_1^i e_i), [S, d]
        others = torch.relu(torch.einsum("sjk,jk,ak->sja", d2, eye, W))      # ReLU(W D_2^j e_j), [S, j, d]
        logits = torch.einsum("sa,sja->sj", anchor, others) / T
        per = torch.logsumexp(logits, dim=-1) - logits[:, i]
        total += float(per.mean())
        var += float(per.var()) / samples
    return total, math.sqrt(var)


def cl_surrogate_min(d: int, *, keep: float, temperature: float) -> float:
    r"""The minimum of Eq. 16 over :math:`\mathcal U`, attained exactly at the permutations.

    .. math:: \tilde L^\star = d\big[(1-\alpha^2)\log d + \alpha^2\log(1+(d-1)e^{-1/T})\big].

    ``d >= 2``, ``keep`` in :math:`[0,1]`, ``temperature`` :math:`T > 0`.
    """
    d = check_int("d", d, 2)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    T = check_positive("temperature", temperature)
    return d * ((1 - alpha**2) * math.log(d) + alpha**2 * math.log1p((d - 1) * math.exp(-1.0 / T)))


def dead_column_gap(d: int, *, keep: float, temperature: float) -> float:
    r"""Excess of Eq. 16 caused by one dead column (:math:`\mathrm{ReLU}(W_{*i}) = 0`), other columns a partial permutation.

    :math:`\alpha^2[\log d - \log(1+(d-1)e^{-1/T})]`.
    """
    d = check_int("d", d, 2)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    T = check_positive("temperature", temperature)
    return alpha**2 * (math.log(d) - math.log1p((d - 1) * math.exp(-1.0 / T)))


@dataclass(frozen=True)
class CLDescent:
    """Projected gradient descent on Eq. 16 for a stack of starts.

    final ``W`` ``[S, d, d]``, ``losses`` ``[S, steps+1]``, ``gap`` (final loss minus the minimum) and ``dead_columns``
    (columns with no positive entry) per start.
    """

    W: torch.Tensor
    losses: torch.Tensor
    gap: torch.Tensor
    dead_columns: torch.Tensor


def cl_surrogate_descent(W0: torch.Tensor, *, keep: float, temperature: float, lr: float, steps: int) -> CLDescent:
    r"""Projected gradient descent :math:`W\leftarrow\mathrm{colnorm}(W - \eta\nabla\tilde L_{CL})` from each start in ``W0`` ``[S, d, d]``.

    The starts are independent, so the loss of the stack is the sum of the losses and one backward pass gives
    every gradient. ``gap`` is the final loss minus :func:`cl_surrogate_min`; ``dead_columns`` counts columns
    with :math:`\mathrm{ReLU}(W_{*i}) = 0`. ``W0`` has no zero column; ``lr > 0``, ``steps >= 0``.
    """
    W = _square("W0", W0, min_d=2, max_d=12, ndim=3)
    if bool((W.norm(dim=-2) == 0).any()):
        raise ValueError("W0 has a zero column, which cannot be normalised onto the unit sphere.")
    W = linalg.unit_columns(W).detach().clone()
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    T = check_positive("temperature", temperature)
    lr, steps = check_positive("lr", lr), check_int("steps", steps, 0)
    history = []
    for _ in range(steps):
        W.requires_grad_(True)
        loss = cl_surrogate(W, keep=alpha, temperature=T)
        (grad,) = torch.autograd.grad(loss.sum(), W)
        history.append(loss.detach())
        W = linalg.unit_columns((W - lr * grad).detach())
    final = cl_surrogate(W, keep=alpha, temperature=T).detach()
    history.append(final)
    dead = (torch.relu(W).norm(dim=-2) == 0).sum(-1)
    return CLDescent(W=W, losses=torch.stack(history, dim=-1),
                     gap=final - cl_surrogate_min(W.shape[-1], keep=alpha, temperature=T), dead_columns=dead)


def nearest_permutation_error(W: torch.Tensor) -> torch.Tensor:
    r""":math:`\min_P\max_{ij}|W - P|_{ij}` over permutation matrices :math:`P` (exhaustive, ``1 <= d <= 8``); ``W`` ``[..., d, d]``.

    Returns ``[...]``.
    """
    W = _square("W", W, min_d=1, max_d=8)
    d = W.shape[-1]
    perms = torch.tensor(list(itertools.permutations(range(d))), device=W.device)
    P = torch.nn.functional.one_hot(perms, d).to(W.dtype).transpose(-1, -2)   # [K, d, d], column i = e_{perm[i]}
    return (W.unsqueeze(-3) - P).abs().amax(dim=(-2, -1)).amin(dim=-1)


# ----------------------------------------------------------------------------------------------- the large-batch limit


def cl_large_batch(W: torch.Tensor, *, keep: float, temperature: float) -> torch.Tensor:
    r"""The genuine :math:`|\mathbb B|\to\infty` limit of Eq. 8, minus :math:`\log|\mathbb B|` (Theorem 1 setting).

    The positive leaves the denominator and the expectation over negatives (:math:`x' = e_j`, :math:`j` uniform,
    fresh masks) moves inside the log:

    .. math::

        F(W) = \frac1d\sum_{i}\Big[-\frac{\alpha^2 s_i}{T}
               + \alpha\log\Big((1-\alpha) + \frac{\alpha}{d}\sum_{j}e^{g_{ij}/T}\Big)\Big].

    ``W`` is ``[..., d, d]``, ``keep`` :math:`\alpha\in[0,1]`, ``temperature`` :math:`T>0`. Returns ``[...]``.
    """
    W = _square("W", W)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    T = check_positive("temperature", temperature)
    d = W.shape[-1]
    R = torch.relu(W)
    G = R.transpose(-1, -2) @ R
    s = torch.diagonal(G, dim1=-2, dim2=-1)
    if alpha == 0:
        return torch.zeros(W.shape[:-2], device=W.device, dtype=W.dtype)
    inner = torch.logsumexp(torch.cat([torch.full_like(G[..., :1], math.log(1 - alpha) if alpha < 1 else -math.inf),
                                       math.log(alpha / d) + G / T], dim=-1), dim=-1)
    return (-alpha**2 * s / T + alpha * inner).mean(-1)


def cl_batch_mc(W: torch.Tensor, *, keep: float, temperature: float, negatives: int, anchors: int,
                generator: torch.Generator) -> torch.Tensor:
    r"""Eq. 8 itself with a finite batch of ``negatives`` :math:`B`, minus :math:`\log B`, per anchor (Theorem 1 setting).

    Each anchor draws its class :math:`i`, its two mask bits, and :math:`B` negatives :math:`e_j` (:math:`j` uniform)
    with their own mask bits; the value is :math:`-S^+/T + \log(e^{S^+/T} + \sum_{x'}e^{S^-/T}) - \log B`.
    The same generator seed gives the same draws for every ``W`` of a given size (common random numbers), so
    paired differences between two matrices have a small variance. Returns ``[anchors]``; its mean tends to
    :func:`cl_large_batch` as :math:`B\to\infty`.
    """
    W = _square("W", W, ndim=2)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    T = check_positive("temperature", temperature)
    B, n = check_int("negatives", negatives, 1), check_int("anchors", anchors, 1)
    d = W.shape[-1]
    G = torch.relu(W).T @ torch.relu(W)
    dev, dt = W.device, W.dtype
    i = randint(0, d, n, generator=generator, device=dev)
    a = (rand(n, generator=generator, device=dev, dtype=dt) < alpha).to(dt)
    b = (rand(n, generator=generator, device=dev, dtype=dt) < alpha).to(dt)
    j = randint(0, d, (n, B), generator=generator, device=dev)
    bj = (rand(n, B, generator=generator, device=dev, dtype=dt) < alpha).to(dt)
    pos = a * b * G[i, i] / T
    neg = a[:, None] * bj * G[i[:, None], j] / T
    return torch.logsumexp(torch.cat([pos[:, None], neg], dim=1), dim=1) - pos - math.log(B)


def large_batch_threshold(d: int, *, keep: float) -> float:
    r""":math:`T^\star = 1/\ln\frac{d-\alpha}{1-\alpha}`.

    below this temperature the large-batch minimisers are not permutations (``0`` when :math:`\alpha = 1`, where every
    temperature keeps the permutations).

    ``d >= 2``, ``keep`` :math:`\alpha\in[0,1]`.
    """
    d = check_int("d", d, 2)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    if alpha == 1:
        return 0.0
    return 1.0 / math.log((d - alpha) / (1 - alpha))


def large_batch_s_star(d: int, *, keep: float, temperature: float) -> float:
    r""":math:`s^\star = \min\{1, T/T^\star\}`, the squared norm of :math:`\mathrm{ReLU}(W_{*i})` at a large-batch minimiser."""
    T = check_positive("temperature", temperature)
    t_star = large_batch_threshold(d, keep=keep)
    return 1.0 if t_star == 0 else min(1.0, T / t_star)


def large_batch_min(d: int, *, keep: float, temperature: float) -> float:
    r"""Minimum of :func:`cl_large_batch` over :math:`\mathcal U`.

    :math:`f(s^\star)` with :math:`f(s) = -\alpha^2 s/T + \alpha\log(1-\alpha/d + (\alpha/d)e^{s/T})` (computed with
    ``logaddexp``, no overflow).
    """
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    s = large_batch_s_star(d, keep=keep, temperature=temperature)
    T = float(temperature)
    if alpha == 0:
        return 0.0
    a = torch.tensor(alpha / d, dtype=torch.float64)
    log_inner = float(torch.logaddexp(torch.log1p(-a), torch.log(a) + s / T))
    return -alpha**2 * s / T + alpha * log_inner


def large_batch_minimiser(d: int, *, keep: float, temperature: float, permutation=None) -> torch.Tensor:
    r"""A minimiser of :func:`cl_large_batch` on :math:`\mathcal U`.

    column :math:`i` is :math:`\sqrt{s^\star}e_{\pi(i)} - \sqrt{1-s^\star}e_{\pi(i+1)}` (the negative part is invisible
    to the ReLU).

    ``permutation`` is a permutation of ``range(d)`` (default the identity). Returns ``[d, d]`` on the device and in
    the dtype of :func:`clbook.setup`.
    """
    d = check_int("d", d, 2)
    s = large_batch_s_star(d, keep=keep, temperature=temperature)
    perm = list(range(d)) if permutation is None else list(permutation)
    if sorted(perm) != list(range(d)) or not all(isinstance(k, int) or (hasattr(k, "__index__")) for k in perm):
        raise ValueError(f"permutation must be a permutation of range({d}); got {perm}.")
    perm = [int(k) for k in perm]
    device, dtype = defaults()
    W = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d):
        W[perm[i], i] = math.sqrt(s)
        W[perm[(i + 1) % d], i] = -math.sqrt(1 - s)
    return W.to(device=device, dtype=dtype)
