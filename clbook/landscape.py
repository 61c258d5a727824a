r"""Networks, losses and the landscape of Theorem 1 of Pokle, Tian, Li and Risteski (2022).

One-layer encoders on masked views of the sparse-coding data (:mod:`clbook.data.sparse_coding`):
:math:`h_{W,b}(a) = \mathrm{ReLU}(Wa + b)`, the symmetric ReLU of Eq. 14, a linear predictor
:math:`g = W^p h + b^p`; the non-contrastive losses (Eqs 4-7, 12, 13) and the contrastive loss (Eq. 8) on a
batch; and, for Theorem 1 (:math:`d = p = m`, :math:`M = I`, one-hot latents, no noise), exact population
losses, their minima and the projected gradient flows of Chapter 15.

Conventions: weights ``W`` are ``[..., m, p]`` (neurons are rows), batches ``A`` are ``[..., n, p]`` (samples are
rows), representations are ``[..., n, m]``; leading axes (seeds) broadcast. ``keep`` is the mask's keep
probability :math:`\alpha`. Used in Chapters 14-17.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from ._validate import check_choice, check_in_range, check_int, check_positive, check_tensor
from .config import rand, to_device

__all__ = [
    "ACTIVATIONS", "srelu", "encode", "predict", "unit",
    "ncl_l2", "ncl_pred_l2", "ncl_inner", "cl_inner", "nt_xent",
    "linear_ncl_population", "mask_moment",
    "column_normalize", "ncl_onehot", "ncl_onehot_grad", "ncl_onehot_flow", "NCLFlow",
    "cl_surrogate", "cl_surrogate_mc", "cl_surrogate_min", "dead_column_gap", "cl_surrogate_descent", "CLDescent",
    "cl_large_batch", "large_batch_threshold", "large_batch_s_star", "large_batch_min", "large_batch_minimiser",
    "nearest_permutation_error",
]

ACTIVATIONS = ("relu", "srelu", "linear")


# ----------------------------------------------------------------------------------------------- networks


def srelu(u: torch.Tensor, bias) -> torch.Tensor:
    r"""Symmetric ReLU with threshold :math:`b\ge0` (Eq. 14): :math:`\mathrm{ReLU}(u-b) - \mathrm{ReLU}(-u-b)`.

    Entrywise :math:`u-b` above :math:`b`, :math:`0` on :math:`[-b, b]`, :math:`u+b` below :math:`-b`. With
    :math:`b = 0` it is the identity (Remark 2). ``bias`` is a number or a tensor broadcasting against ``u``
    (one threshold per neuron, last axis). The authors' code thresholds at :math:`-b` instead (see Chapter 17).
    """
    u = check_tensor("u", u)
    b = to_device(bias, dtype=u.dtype) if not isinstance(bias, torch.Tensor) else bias
    if bool((b < 0).any()):
        raise ValueError("bias (the SReLU threshold) must be >= 0 entrywise.")
    return torch.relu(u - b) - torch.relu(-u - b)


def encode(W: torch.Tensor, A: torch.Tensor, *, bias=None, activation: str = "relu") -> torch.Tensor:
    r"""One-layer encoder applied to a batch of views.

    * ``"relu"``: :math:`h_{W,b}(a) = \mathrm{ReLU}(Wa + b)` (Sec. 4.1);
    * ``"srelu"``: :math:`\mathrm{SReLU}_b(Wa)` (Eqs 13-14; ``bias`` is the threshold, default 0);
    * ``"linear"``: :math:`Wa + b` (Eq. 12).

    Parameters
    ----------
    W : torch.Tensor, shape=[..., m, p]
    A : torch.Tensor, shape=[..., n, p]
    bias : float or torch.Tensor of shape [..., m], optional

    Returns
    -------
    torch.Tensor, shape=[..., n, m]
    """
    W, A = check_tensor("W", W), check_tensor("A", A)
    check_choice("activation", activation, ACTIVATIONS)
    if W.ndim < 2 or A.ndim < 2 or W.shape[-1] != A.shape[-1]:
        raise ValueError(f"W must be [..., m, p] and A [..., n, p] with the same p; got {list(W.shape)} and {list(A.shape)}.")
    pre = A @ W.transpose(-1, -2)
    b = 0.0 if bias is None else (bias.unsqueeze(-2) if isinstance(bias, torch.Tensor) and bias.ndim >= 1 else bias)
    if activation == "srelu":
        return srelu(pre, b)
    pre = pre + b
    return torch.relu(pre) if activation == "relu" else pre


def predict(Wp: torch.Tensor, H: torch.Tensor, *, bias=None) -> torch.Tensor:
    r"""Linear predictor :math:`g = W^p h + b^p` (Sec. 4.1) on representations ``H`` ``[..., n, m]``; ``Wp`` ``[..., m, m]``."""
    Wp, H = check_tensor("Wp", Wp), check_tensor("H", H)
    if Wp.shape[-1] != H.shape[-1]:
        raise ValueError(f"Wp must be [..., m, m] with m = H.shape[-1] = {H.shape[-1]}; got {list(Wp.shape)}.")
    out = H @ Wp.transpose(-1, -2)
    return out if bias is None else out + (bias.unsqueeze(-2) if isinstance(bias, torch.Tensor) else bias)


def unit(H: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit norm; a zero row stays zero (as ``torch.nn.functional.normalize``, eps 1e-12)."""
    return H / H.norm(dim=-1, keepdim=True).clamp_min(1e-12)


# ----------------------------------------------------------------------------------------------- batch losses


def _pair(u, v):
    u, v = check_tensor("u", u), check_tensor("v", v)
    if u.shape != v.shape or u.ndim < 2:
        raise ValueError(f"u and v must be paired representations [..., n, m] of one shape; got {list(u.shape)} and {list(v.shape)}.")
    return u, v


def ncl_l2(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    r"""Eq. 4, normalised non-contrastive loss on a batch: :math:`\frac1n\sum_k\|\hat u_k - \mathrm{SG}(\hat v_k)\|^2`.

    ``u`` are the online representations :math:`h_{W^o}(D_1x)`, ``v`` the target ones :math:`h_{W^t}(D_2x)`
    (the paper's :math:`a(h(\cdot))` applies the activation twice; an idempotent ReLU makes that harmless, we
    apply it once). For non-zero rows this is :math:`2 - 2\cos(u_k, v_k)`. Returns ``[...]``.
    """
    u, v = _pair(u, v)
    return ((unit(u) - unit(v).detach()) ** 2).sum(-1).mean(-1)


def ncl_pred_l2(Wp: torch.Tensor, u: torch.Tensor, v: torch.Tensor, *, bias=None) -> torch.Tensor:
    r"""Eq. 5 with its online branch corrected: :math:`\frac1n\sum_k\|\widehat{g_{W^p,W^o}}(D_1x_k) - \mathrm{SG}(\hat v_k)\|^2`.

    The paper prints :math:`g_{W^t,W^p}` on the online side; the predictor acts on the online encoder ``u``.
    """
    u, v = _pair(u, v)
    return ncl_l2(predict(Wp, u, bias=bias), v)


def ncl_inner(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    r"""Unnormalised non-contrastive loss :math:`2 - \frac2n\sum_k\langle u_k, \mathrm{SG}(v_k)\rangle`.

    With ReLU encoders this is Eq. 6; with ``u = predict(Wp, ...)`` Eq. 7; with linear encoders Eq. 12; with
    SReLU encoders Eq. 13. Returns ``[...]``.
    """
    u, v = _pair(u, v)
    return 2 - 2 * (u * v.detach()).sum(-1).mean(-1)


def cl_inner(u1: torch.Tensor, u2: torch.Tensor, *, tau: float) -> torch.Tensor:
    r"""Eq. 8 on a batch: positives :math:`(u_{1k}, u_{2k})`, negatives the second views of the other samples.

    .. math:: L = \frac1n\sum_k\Big[-\tau S_{kk} + \log\sum_{l}e^{\tau S_{kl}}\Big],\qquad S_{kl} = \langle u_{1k}, u_{2l}\rangle,

    with :math:`\tau` an inverse temperature multiplying the unnormalised inner product, as printed; the
    denominator holds the positive and :math:`n-1` negatives. Computed with ``logsumexp``. Returns ``[...]``.
    """
    u1, u2 = _pair(u1, u2)
    tau = check_positive("tau", tau)
    S = tau * (u1 @ u2.transpose(-1, -2))
    return (torch.logsumexp(S, dim=-1) - torch.diagonal(S, dim1=-2, dim2=-1)).mean(-1)


def nt_xent(u1: torch.Tensor, u2: torch.Tensor, *, temperature: float = 0.05) -> torch.Tensor:
    r"""NT-Xent of the experiments (SimCLR): the :math:`2n` normalised views, each against the other :math:`2n-1`.

    .. math::

        \ell = \frac1{2n}\sum_{k=1}^{2n}\Big[-\frac{\hat h_k^\top\hat h_{\pi(k)}}{T}
               + \log\sum_{l\ne k}e^{\hat h_k^\top\hat h_l/T}\Big].

    Only the :math:`2n\times2n` Gram matrix is formed (the authors' code builds a :math:`2n\times2n\times m`
    tensor). Returns ``[...]``.
    """
    u1, u2 = _pair(u1, u2)
    T = check_positive("temperature", temperature)
    n = u1.shape[-2]
    H = unit(torch.cat([u1, u2], dim=-2))
    G = H @ H.transpose(-1, -2) / T
    eye = torch.eye(2 * n, dtype=torch.bool, device=G.device)
    lse = torch.logsumexp(G.masked_fill(eye, -math.inf), dim=-1)
    idx = torch.arange(2 * n, device=G.device)
    pos = G[..., idx, (idx + n) % (2 * n)]
    return (lse - pos).mean(-1)


# ----------------------------------------------------------------------------------------------- population forms


def mask_moment(p: int, *, keep: float, scheme: str = "independent") -> torch.Tensor:
    r""":math:`K_{kl} = \mathbb E[(D_1)_{kk}(D_2)_{ll}]` for the mask multipliers of :func:`clbook.data.sparse_coding.masks`.

    Independent (Eq. 3): :math:`K = \alpha^2\mathbf 1\mathbf 1^\top`. Dependent (Eq. 2):
    :math:`K_{kl} = 4\alpha(1-\alpha)` for :math:`k\ne l` and :math:`0` on the diagonal (a coordinate is never in both views).
    """
    p = check_int("p", p, 1)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    check_choice("scheme", scheme, ("independent", "dependent"))
    ones = to_device(torch.ones(p, p))
    if scheme == "independent":
        return alpha**2 * ones
    return 4 * alpha * (1 - alpha) * (ones - to_device(torch.eye(p)))


def linear_ncl_population(Wo: torch.Tensor, Wt: torch.Tensor, *, M: torch.Tensor, second_moment: torch.Tensor, noise: float,
                          keep: float, scheme: str = "independent") -> torch.Tensor:
    r"""Exact population value of the linear non-contrastive loss, Eq. 12.

    .. math::

        L = 2 - 2\,\mathrm{tr}\big(W^o\,(K\circ\Sigma)\,W^{t\top}\big),
        \qquad \Sigma = \mathbb E[xx^\top] = M\,\mathbb E[zz^\top]M^\top + \sigma_0^2 I,

    where :math:`K` is :func:`mask_moment` (the masks are independent of :math:`x`).
    """
    Wo, Wt, M = check_tensor("Wo", Wo), check_tensor("Wt", Wt), check_tensor("M", M)
    Sigma = M @ second_moment @ M.transpose(-1, -2) + noise**2 * to_device(torch.eye(M.shape[-2]))
    C = mask_moment(M.shape[-2], keep=keep, scheme=scheme) * Sigma
    return 2 - 2 * torch.einsum("...ij,jk,...ik->...", Wo, C, Wt)


# ----------------------------------------------------------------------------------------------- Theorem 1 (a)


def column_normalize(W: torch.Tensor) -> torch.Tensor:
    r"""Projection onto :math:`\mathcal U` (unit columns); a zero column raises."""
    W = check_tensor("W", W)
    norms = W.norm(dim=-2, keepdim=True)
    if bool((norms == 0).any()):
        raise ValueError("W has a zero column, which cannot be normalised.")
    return W / norms


def ncl_onehot(W: torch.Tensor, *, keep: float) -> torch.Tensor:
    r"""Exact :math:`L_{\text{non-CL}}(W, W)` (Eq. 6) in the setting of Theorem 1, independent masks.

    With :math:`x = e_j`, :math:`\mathrm{ReLU}(WD e_j) = D_{jj}\mathrm{ReLU}(W_{*j})`, so

    .. math:: L(W,W) = 2 - \frac{2\alpha^2}{d}\sum_{j=1}^d\|\mathrm{ReLU}(W_{*j})\|^2 \;\ge\; 2 - 2\alpha^2 \text{ on } \mathcal U .

    ``W`` is ``[..., d, d]``; returns ``[...]``.
    """
    W = check_tensor("W", W)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    return 2 - 2 * alpha**2 * (torch.relu(W) ** 2).sum(dim=(-2, -1)) / W.shape[-1]


def ncl_onehot_grad(W: torch.Tensor, *, keep: float) -> torch.Tensor:
    r"""Euclidean gradient of :func:`ncl_onehot`: :math:`-\frac{4\alpha^2}{d}\mathrm{ReLU}(W)`."""
    W = check_tensor("W", W)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    return -4 * alpha**2 * torch.relu(W) / W.shape[-1]


@dataclass(frozen=True)
class NCLFlow:
    """Projected gradient descent on Eq. 6 (Theorem 1 setting): final ``W``, loss per step, the closed form."""

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
    zero gradient and never moves.
    """
    W = column_normalize(check_tensor("W0", W0))
    lr, steps = check_positive("lr", lr), check_int("steps", steps, 0)
    W0n = W.clone()
    losses = [ncl_onehot(W, keep=keep)]
    for _ in range(steps):
        W = column_normalize(W - lr * ncl_onehot_grad(W, keep=keep))
        losses.append(ncl_onehot(W, keep=keep))
    c = 4 * lr * keep**2 / W.shape[-1]
    closed = column_normalize((1 + c) ** steps * torch.relu(W0n) - torch.relu(-W0n))
    has_pos = (W0n > 0).any(dim=-2, keepdim=True)
    limit = torch.where(has_pos, torch.relu(W0n) / torch.relu(W0n).norm(dim=-2, keepdim=True).clamp_min(1e-300), W0n)
    return NCLFlow(W=W, losses=torch.stack(losses, dim=-1), closed_form=closed, limit=limit)


# ----------------------------------------------------------------------------------------------- Theorem 1 (b)


def _bits(d: int, device) -> torch.Tensor:
    return torch.tensor(list(itertools.product((0.0, 1.0), repeat=d)), device=device)


def cl_surrogate(W: torch.Tensor, *, keep: float, tau: float) -> torch.Tensor:
    r"""Exact value of the contrastive surrogate :math:`\tilde L_{CL}(W)` of Eq. 16 (Theorem 1(b) setting).

    With :math:`r_i = \mathrm{ReLU}(W_{*i})`, :math:`g_{ij} = \langle r_i, r_j\rangle`, :math:`s_i = g_{ii}` and
    independent Bernoulli(:math:`\alpha`) bits :math:`a = (D_1^i)_{ii}`, :math:`b_j = (D_2^j)_{jj}`, the
    :math:`i`-th term is :math:`\log(1+\sum_{j\ne i}e^{\tau a(b_jg_{ij} - b_is_i)})`, so

    .. math::

        \tilde L_{CL} = \sum_{i=1}^d\Big[(1-\alpha)\log d
        + \alpha\,\mathbb E_{b}\log\Big(1 + \sum_{j\ne i}e^{\tau(b_jg_{ij}-b_is_i)}\Big)\Big],

    the expectation enumerated exactly over the :math:`2^d` patterns of :math:`b` (``d <= 12``). Differentiable.
    ``W`` is ``[..., d, d]``; returns ``[...]``.
    """
    W = check_tensor("W", W)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    tau = check_positive("tau", tau)
    d = check_int("d (columns of W)", W.shape[-1], 2, 12)
    R = torch.relu(W)
    G = R.transpose(-1, -2) @ R                                         # [..., d, d]
    s = torch.diagonal(G, dim1=-2, dim2=-1)                             # [..., d]
    B = _bits(d, W.device).to(W.dtype)                                   # [P, d]
    prob = alpha ** B.sum(-1) * (1 - alpha) ** (d - B.sum(-1))          # [P]
    # exponent[..., P, i, j] = tau (b_j g_ij - b_i s_i) for j != i, and 0 (the positive) for j = i
    E = tau * (B[:, None, :] * G.unsqueeze(-3) - (B * s.unsqueeze(-2)).unsqueeze(-1))
    eye = torch.eye(d, dtype=torch.bool, device=W.device)
    E = torch.where(eye, torch.zeros_like(E), E)
    terms = torch.logsumexp(E, dim=-1)                                   # [..., P, i]
    expected = (prob[:, None] * terms).sum(-2)                           # [..., i]
    return ((1 - alpha) * math.log(d) + alpha * expected).sum(-1)


def cl_surrogate_mc(W: torch.Tensor, *, keep: float, tau: float, samples: int, generator: torch.Generator) -> torch.Tensor:
    r"""Monte-Carlo estimate of Eq. 16 from its definition (masks drawn, ReLU applied to :math:`WD e_i`); an oracle.

    Returns the estimate for a single ``W`` ``[d, d]`` (a 0-d tensor).
    """
    W = check_tensor("W", W, ndim=2)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    tau, samples = check_positive("tau", tau), check_int("samples", samples, 1)
    d = W.shape[-1]
    eye = to_device(torch.eye(d), dtype=W.dtype)
    total = 0.0
    for i in range(d):
        d1 = (rand(samples, d, generator=generator) < alpha).to(W.dtype)     # D_1^i
        d2 = (rand(samples, d, d, generator=generator) < alpha).to(W.dtype)  # D_2^j for every j
        anchor = torch.relu((d1 * eye[i]) @ W.T)                              # ReLU(W D_1^i e_i), [S, d]
        others = torch.relu(torch.einsum("sjk,jk,ak->sja", d2, eye, W))      # ReLU(W D_2^j e_j), [S, j, d]
        logits = tau * torch.einsum("sa,sja->sj", anchor, others)
        total = total + (torch.logsumexp(logits, dim=-1) - logits[:, i]).mean()
    return total


def cl_surrogate_min(d: int, *, keep: float, tau: float) -> float:
    r"""The minimum of Eq. 16 over :math:`\mathcal U`, attained exactly at the permutations:

    .. math:: \tilde L^\star = d\big[(1-\alpha^2)\log d + \alpha^2\log(1+(d-1)e^{-\tau})\big].
    """
    d = check_int("d", d, 2)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    tau = check_positive("tau", tau)
    return d * ((1 - alpha**2) * math.log(d) + alpha**2 * math.log1p((d - 1) * math.exp(-tau)))


def dead_column_gap(d: int, *, keep: float, tau: float) -> float:
    r"""Excess of Eq. 16 caused by one dead column (:math:`\mathrm{ReLU}(W_{*i}) = 0`), other columns a partial permutation:
    :math:`\alpha^2[\log d - \log(1+(d-1)e^{-\tau})]`."""
    d = check_int("d", d, 2)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    tau = check_positive("tau", tau)
    return alpha**2 * (math.log(d) - math.log1p((d - 1) * math.exp(-tau)))


@dataclass(frozen=True)
class CLDescent:
    """Projected gradient descent on Eq. 16 for a stack of starts: final ``W`` ``[S, d, d]``, ``losses`` ``[S, steps+1]``."""

    W: torch.Tensor
    losses: torch.Tensor
    gap: torch.Tensor
    dead_columns: torch.Tensor


def cl_surrogate_descent(W0: torch.Tensor, *, keep: float, tau: float, lr: float, steps: int) -> CLDescent:
    r"""Projected gradient descent :math:`W\leftarrow\mathrm{colnorm}(W - \eta\nabla\tilde L_{CL})` from each start in ``W0`` ``[S, d, d]``.

    The starts are independent, so the loss of the stack is the sum of the losses and one backward pass gives
    every gradient. ``gap`` is the final loss minus :func:`cl_surrogate_min`; ``dead_columns`` counts columns
    with :math:`\mathrm{ReLU}(W_{*i}) = 0`.
    """
    W = column_normalize(check_tensor("W0", W0, ndim=3)).detach().clone()
    lr, steps = check_positive("lr", lr), check_int("steps", steps, 0)
    history = []
    for _ in range(steps):
        W.requires_grad_(True)
        loss = cl_surrogate(W, keep=keep, tau=tau)
        (grad,) = torch.autograd.grad(loss.sum(), W)
        history.append(loss.detach())
        W = column_normalize((W - lr * grad).detach())
    final = cl_surrogate(W, keep=keep, tau=tau).detach()
    history.append(final)
    dead = (torch.relu(W).norm(dim=-2) == 0).sum(-1)
    return CLDescent(W=W, losses=torch.stack(history, dim=-1), gap=final - cl_surrogate_min(W.shape[-1], keep=keep, tau=tau),
                     dead_columns=dead)


def nearest_permutation_error(W: torch.Tensor) -> torch.Tensor:
    r""":math:`\min_P\max_{ij}|W - P|_{ij}` over permutation matrices :math:`P` (exhaustive for ``d <= 8``); ``W`` ``[..., d, d]``."""
    W = check_tensor("W", W)
    d = check_int("d (columns of W)", W.shape[-1], 1, 8)
    perms = torch.tensor(list(itertools.permutations(range(d))), device=W.device)
    P = torch.nn.functional.one_hot(perms, d).to(W.dtype).transpose(-1, -2)   # [K, d, d], column i = e_{perm[i]}
    return (W.unsqueeze(-3) - P).abs().amax(dim=(-2, -1)).amin(dim=-1)


# ----------------------------------------------------------------------------------------------- the large-batch limit


def cl_large_batch(W: torch.Tensor, *, keep: float, tau: float) -> torch.Tensor:
    r"""The genuine :math:`|\mathbb B|\to\infty` limit of Eq. 8, minus :math:`\log|\mathbb B|` (Theorem 1 setting).

    The positive leaves the denominator and the expectation over negatives (:math:`x' = e_j`, :math:`j` uniform,
    fresh masks) moves inside the log:

    .. math:: F(W) = \frac1d\sum_{i}\Big[-\tau\alpha^2 s_i + \alpha\log\Big((1-\alpha) + \frac{\alpha}{d}\sum_{j}e^{\tau g_{ij}}\Big)\Big].
    """
    W = check_tensor("W", W)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    tau = check_positive("tau", tau)
    d = W.shape[-1]
    R = torch.relu(W)
    G = R.transpose(-1, -2) @ R
    s = torch.diagonal(G, dim1=-2, dim2=-1)
    inner = torch.logsumexp(torch.cat([torch.full_like(G[..., :1], math.log(1 - alpha) if alpha < 1 else -math.inf),
                                       math.log(alpha / d) + tau * G], dim=-1), dim=-1)
    return (-tau * alpha**2 * s + alpha * inner).mean(-1)


def large_batch_threshold(d: int, *, keep: float) -> float:
    r""":math:`\tau^\star = \ln\frac{d-\alpha}{1-\alpha}`: above it the large-batch minimisers are not permutations."""
    d = check_int("d", d, 2)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    if alpha == 1:
        return math.inf
    return math.log((d - alpha) / (1 - alpha))


def large_batch_s_star(d: int, *, keep: float, tau: float) -> float:
    r""":math:`s^\star = \min\{1, \tau^\star/\tau\}`, the squared norm of :math:`\mathrm{ReLU}(W_{*i})` at a large-batch minimiser."""
    tau = check_positive("tau", tau)
    return min(1.0, large_batch_threshold(d, keep=keep) / tau)


def large_batch_min(d: int, *, keep: float, tau: float) -> float:
    r"""Minimum of :func:`cl_large_batch` over :math:`\mathcal U`: :math:`f(s^\star)` with
    :math:`f(s) = -\tau\alpha^2 s + \alpha\log(1-\alpha/d + (\alpha/d)e^{\tau s})`."""
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    s = large_batch_s_star(d, keep=keep, tau=tau)
    return -tau * alpha**2 * s + alpha * math.log(1 - alpha / d + alpha / d * math.exp(tau * s))


def large_batch_minimiser(d: int, *, keep: float, tau: float, permutation=None) -> torch.Tensor:
    r"""A minimiser of :func:`cl_large_batch` on :math:`\mathcal U`: column :math:`i` is
    :math:`\sqrt{s^\star}e_{\pi(i)} - \sqrt{1-s^\star}e_{\pi(i+1)}` (the negative part is invisible to the ReLU)."""
    d = check_int("d", d, 2)
    s = large_batch_s_star(d, keep=keep, tau=tau)
    perm = list(range(d)) if permutation is None else [int(k) for k in permutation]
    if sorted(perm) != list(range(d)):
        raise ValueError(f"permutation must be a permutation of range({d}); got {perm}.")
    W = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d):
        W[perm[i], i] = math.sqrt(s)
        W[perm[(i + 1) % d], i] = -math.sqrt(1 - s)
    return to_device(W)
