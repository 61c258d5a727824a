r"""NT-Xent, the contrastive loss of SimCLR, with a fused, hand-written backward pass.

For a batch of :math:`B` samples with two views each, let :math:`\hat h_1,\dots,\hat h_{2B}` be the
:math:`\ell_2`-normalised representations of the :math:`2B` views (the first views, then the second views) and
:math:`\pi(k)` the other view of the sample of view :math:`k`. With temperature :math:`T`,

.. math::

    \ell = \frac1{2B}\sum_{k=1}^{2B}\Big[-\frac{\hat h_k^\top\hat h_{\pi(k)}}{T}
           + \log\sum_{l\ne k}e^{\hat h_k^\top\hat h_l/T}\Big].

This is the loss of Chen et al. (2020, SimCLR, Eq. 1 averaged over the :math:`2B` anchors) and of the
experiments of Pokle, Tian, Li and Risteski (2022): their Eq. 8 with normalised representations and
:math:`\tau = 1/T` (the authors' ``models/nt_xent.py``, :math:`T = 0.05`). Used in Chapter 17 through
:mod:`clbook.experiments.landscape`.

Implementation. Only the :math:`2B\times2B` Gram matrix of the unit rows :math:`Z` is formed (the authors' code
materialises a :math:`2B\times2B\times m` tensor of cosines), one run at a time, in one reused buffer:

* :math:`E = 2^{ZZ^\top\log_2 e/T}` with a zero diagonal (``exp2`` is about three times faster than ``exp`` on
  the CPU; the factor :math:`\log_2 e/T` is folded into one factor of the product), :math:`t = E\mathbf 1`, and
  :math:`\frac1{2B}\sum_k\log t_k`. No shift is needed while :math:`e^{1/T}\cdot 2B` is far from the overflow of the
  dtype; otherwise the row maximum is subtracted.
* In the same pass, while :math:`E` is in the cache, the gradient of the log-sum-exp term: with
  :math:`P = \mathrm{diag}(t)^{-1}E` the row softmax,
  :math:`\nabla_Z = (P + P^\top)Z/(2BT) = \big((EZ)/t + E(Z/t)\big)/(2BT)`, one product of :math:`E` with
  :math:`[Z, Z/t]` (:math:`E` is symmetric). It is stored (:math:`2B\times m`), and the backward pass only scales
  it, so :math:`E` is never kept for the backward pass.

The cost is :math:`6(2B)^2m` floating-point operations per run (Gram matrix and the product with
:math:`[Z, Z/t]`) and :math:`(2B)^2` exponentials.
"""
from __future__ import annotations

import math

import torch

from .._validate import check_positive, check_tensor
from ._safe import unit_rows_any_scale

__all__ = ["nt_xent", "nt_xent_reference", "ntxent_flops"]

_LOG2E = 1.0 / math.log(2.0)


def _no_shift(n: int, T: float, dtype: torch.dtype) -> bool:
    r"""Whether :math:`\sum_{l\ne k}e^{s_{kl}/T}` of unit rows is safe without a shift (no overflow, no total underflow)."""
    limit = 80.0 if dtype in (torch.float32, torch.float16, torch.bfloat16) else 700.0
    return 1.0 / T + math.log(max(n, 2)) < limit


class _MeanLSE(torch.autograd.Function):
    r""":math:`\frac1n\sum_k\log\sum_{l\ne k}e^{z_k^\top z_l/T}` for unit rows ``Z [R, n, m]`` (returns ``[R]``).

    The forward pass also computes the gradient (per unit upstream gradient) when ``Z`` requires it, run by run,
    while :math:`E` is in the cache; the backward pass scales it.
    """

    @staticmethod
    def forward(ctx, Z, T):
        R, n, m = Z.shape
        need = ctx.needs_input_grad[0]
        fixed = _no_shift(n, T, Z.dtype)
        E = torch.empty(n, n, dtype=Z.dtype, device=Z.device)
        Zs = Z * (_LOG2E / T)
        out = torch.empty(R, dtype=Z.dtype, device=Z.device)
        G = torch.empty_like(Z) if need else None
        if need:
            Y = torch.empty(n, 2 * m, dtype=Z.dtype, device=Z.device)
            both = torch.empty(n, 2 * m, dtype=Z.dtype, device=Z.device)
        for r in range(R):
            torch.mm(Zs[r], Z[r].transpose(0, 1), out=E)  # S log2(e) / T
            if fixed:
                E.exp2_()
                E.fill_diagonal_(0.0)
                t = E.sum(1, keepdim=True)
                out[r] = t.log().mean()
            else:
                E.fill_diagonal_(-math.inf)
                c = E.amax(1, keepdim=True)
                E.sub_(c).exp2_()
                t = E.sum(1, keepdim=True)
                out[r] = (c / _LOG2E + t.log()).mean()
            if need:
                if fixed:  # E symmetric: E [Z, Z/t] in one product
                    Y[:, :m] = Z[r]
                    torch.div(Z[r], t, out=Y[:, m:])
                    torch.mm(E, Y, out=both)
                    torch.add(both[:, :m].div_(t), both[:, m:], out=G[r])
                else:  # rows shifted by their maxima: E is not symmetric
                    torch.mm(E, Z[r], out=G[r]).div_(t)
                    G[r].addmm_(E.transpose(0, 1), Z[r] / t)
        if need:
            G.mul_(1.0 / (n * T))
            ctx.save_for_backward(G)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        (G,) = ctx.saved_tensors
        return G * grad[:, None, None], None


def _nt_xent(h1: torch.Tensor, h2: torch.Tensor, temperature: float) -> torch.Tensor:
    """:func:`nt_xent` without the argument checks (for training loops that have checked their inputs once)."""
    u1, u2 = unit_rows_any_scale(h1), unit_rows_any_scale(h2)
    lead, B, m = h1.shape[:-2], h1.shape[-2], h1.shape[-1]
    Z = torch.cat([u1, u2], dim=-2).reshape(-1, 2 * B, m)
    lse = _MeanLSE.apply(Z, float(temperature)).reshape(lead)
    return lse - (u1 * u2).sum(-1).mean(-1) / temperature


def nt_xent_views_unchecked(h: torch.Tensor, temperature: float) -> torch.Tensor:
    """:func:`nt_xent` of ``h[..., 0, :, :]`` and ``h[..., 1, :, :]`` (``h`` ``[..., 2, B, m]``), unchecked and without a copy.

    The two views stacked on axis ``-3`` are already the :math:`2B` rows of :math:`Z` in the order of
    :func:`nt_xent`, so no concatenation is needed. Used by the training loop of
    :mod:`clbook.experiments.landscape`.
    """
    u = unit_rows_any_scale(h)
    lead, B, m = h.shape[:-3], h.shape[-2], h.shape[-1]
    lse = _MeanLSE.apply(u.reshape(-1, 2 * B, m), float(temperature)).reshape(lead)
    return lse - (u[..., 0, :, :] * u[..., 1, :, :]).sum(-1).mean(-1) / temperature


def nt_xent_unit_views_unchecked(Z: torch.Tensor, temperature: float) -> torch.Tensor:
    """:func:`nt_xent_views_unchecked` of representations that are already unit rows (``Z`` ``[..., 2, B, m]``, unchecked)."""
    lead, B, m = Z.shape[:-3], Z.shape[-2], Z.shape[-1]
    lse = _MeanLSE.apply(Z.reshape(-1, 2 * B, m), float(temperature)).reshape(lead)
    return lse - (Z[..., 0, :, :] * Z[..., 1, :, :]).sum(-1).mean(-1) / temperature


def _check(h1, h2, temperature):
    h1, h2 = check_tensor("h1", h1), check_tensor("h2", h2)
    if h1.ndim < 2 or h1.shape != h2.shape:
        raise ValueError(f"h1 and h2 must be paired representations [..., B, m] of one shape; got {list(h1.shape)} and {list(h2.shape)}.")
    if h1.dtype != h2.dtype or h1.device != h2.device:
        raise ValueError(f"h1 and h2 must share dtype and device; got {h1.dtype}/{h1.device} and {h2.dtype}/{h2.device}.")
    if h1.shape[-2] < 2:
        raise ValueError(f"h1 and h2 must hold a batch of B >= 2 samples (with B = 1 there is no negative); got B = {h1.shape[-2]}.")
    if h1.shape[-1] < 1:
        raise ValueError(f"the representations must have m >= 1 features; got m = {h1.shape[-1]}.")
    T = check_positive("temperature", temperature)
    if not 4.0 / T < torch.finfo(h1.dtype).max:
        raise ValueError(f"temperature = {T:g} is too small for {str(h1.dtype).replace('torch.', '')}: the logits "
                         f"cosine/temperature overflow; use temperature >= {4.0 / torch.finfo(h1.dtype).max:.3g}.")
    return h1, h2, T


def nt_xent(h1: torch.Tensor, h2: torch.Tensor, *, temperature: float = 0.05) -> torch.Tensor:
    r"""NT-Xent over the :math:`2B` views of a batch (SimCLR; Pokle et al. 2022, Eq. 8 as run in their experiments).

    .. math::

        \ell = \frac1{2B}\sum_{k=1}^{2B}\Big[-\frac{\hat h_k^\top\hat h_{\pi(k)}}{T}
               + \log\sum_{l\ne k}e^{\hat h_k^\top\hat h_l/T}\Big],\qquad \hat h = h/\|h\| .

    Parameters
    ----------
    h1, h2 : torch.Tensor, shape=[..., B, m]
        Representations of the first and second views (not necessarily normalised: the loss is the same at any
        finite scale of each row, :math:`10^{-300}` to :math:`10^{300}` in float64; an all-zero row counts as the
        zero vector, cosine 0 with every row); row ``k`` of both comes from sample ``k``.
        Leading axes (e.g. a stack of independent runs) are kept: each run is its own batch.
    temperature : float
        :math:`T > 0`.

    Returns
    -------
    torch.Tensor, shape=[...]
        The loss of each run. Differentiable with respect to ``h1`` and ``h2`` (first order; the gradient of the
        log-sum-exp term is computed in the forward pass, see the module docstring).

    Raises
    ------
    ValueError
        Shapes that differ or have fewer than two axes, ``B < 2``, NaN or infinite entries, ``temperature <= 0``, or a
        temperature so small that :math:`1/T` overflows the dtype.
    TypeError
        Inputs that are not floating-point tensors, a temperature that is not a real number.
    """
    h1, h2, T = _check(h1, h2, temperature)
    return _nt_xent(h1, h2, T)


def nt_xent_reference(h1: torch.Tensor, h2: torch.Tensor, *, temperature: float = 0.05) -> torch.Tensor:
    r"""The same loss computed the plain way, for tests and for the chapter: the masked Gram matrix and ``logsumexp``.

    Forms the :math:`2B\times2B` logits with :math:`-\infty` on the diagonal and lets autograd differentiate
    ``torch.logsumexp``; slower and with :math:`O(B^2)` memory kept for the backward pass. ``[..., B, m]`` → ``[...]``.
    """
    h1, h2, T = _check(h1, h2, temperature)
    B = h1.shape[-2]
    Z = unit_rows_any_scale(torch.cat([h1, h2], dim=-2))
    S = Z @ Z.transpose(-1, -2) / T
    eye = torch.eye(2 * B, dtype=torch.bool, device=S.device)
    lse = torch.logsumexp(S.masked_fill(eye, -math.inf), dim=-1)
    k = torch.arange(2 * B, device=S.device)
    return (lse - S[..., k, (k + B) % (2 * B)]).mean(-1)


def ntxent_flops(batch: int, features: int) -> int:
    r"""Floating-point operations of the matrix products of one NT-Xent forward-and-backward pass of one run.

    :math:`2n^2m` for the Gram matrix :math:`ZZ^\top` and :math:`2n^2\cdot2m` for :math:`E[Z, Z/t]`, with
    :math:`n = 2B` views and :math:`m` features: :math:`6n^2m`. Elementwise work (the :math:`n^2` exponentials and
    row sums) is not counted.
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be an integer >= 1; got batch = {batch!r}.")
    if isinstance(features, bool) or not isinstance(features, int) or features < 1:
        raise ValueError(f"features must be an integer >= 1; got features = {features!r}.")
    n = 2 * batch
    return 6 * n * n * features
