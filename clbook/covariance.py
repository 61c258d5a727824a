r"""Contrastive covariance :math:`\mathbb C_\alpha[a, b]` and the energy :math:`\mathcal E_\alpha`: the one implementation.

Two papers define the contrastive covariance with different constants.

**Tian (2022), α-CL, Eq. 5** (``convention="tian2022"``, the book's default):

.. math::

    \mathbb C_\alpha[a, b] = \sum_{i=1}^N\sum_{j\neq i}\alpha_{ij}(a[i]-a[j])(b[i]-b[j])^\top
    - \sum_{i=1}^N\Big(\sum_{j\neq i}\alpha_{ij}\Big)(a[i]-a[i'])(b[i]-b[i'])^\top .

The diagonal :math:`\alpha_{ii}` never enters.

**Tian (2023), Eq. 3** (``convention="tian2023"``):

.. math::

    \mathbb C^{(2023)}_\alpha[a, b] = \frac{1}{2N^2}\sum_{i,j=1}^N\alpha_{ij}
    \Big[(a[i]-a[j])(b[i]-b[j])^\top - (a[i]-a[i'])(b[i]-b[i'])^\top\Big] .

The sum runs over all :math:`i, j`, so :math:`\alpha_{ii}` weighs the positive pair of sample :math:`i` (the
negative-pair term of :math:`j = i` is zero). The two agree up to the factor when :math:`\alpha` has a zero
diagonal: :math:`\mathbb C^{(2023)}_\alpha = \mathbb C_\alpha/(2N^2)` then. Tian (2023)'s proof of its Lemma 2
(App. A, Eqs. 23–24) sums over :math:`j\neq i`; pass an :math:`\alpha` with a zero diagonal for that reading.

The energy is :math:`\mathcal E_\alpha(\theta) = \operatorname{tr}\mathbb C_\alpha[z, z]
= 2\sum_{i\neq j}\alpha_{ij}(d_{ij}^2 - d_i^2)` (Tian 2022, Eqs. 18–20), in the 2022 convention.

Both are evaluated in :math:`O(N^2(p + q) + Npq)` through the graph Laplacian of :math:`\alpha`:

.. math::

    \mathbb C_\alpha[a,b] = A_1^\top\big(\operatorname{diag}(\alpha\mathbf 1 + \alpha^\top\mathbf 1) - \alpha - \alpha^\top\big)B_1
    - (A_1 - A_2)^\top\operatorname{diag}(\beta)(B_1 - B_2),

with :math:`\beta_i = \sum_{j\neq i}\alpha_{ij}` (2022) or :math:`\sum_j\alpha_{ij}` (2023); the diagonal of
:math:`\alpha` cancels in the Laplacian.

Used in Chapters 1–3 (Tian 2022) and, through the 2023 convention, 5–9.
"""
from __future__ import annotations

import math

import torch

from ._validate import check_choice, check_same, check_tensor

__all__ = ["CONVENTIONS", "contrastive_covariance", "energy"]

CONVENTIONS = ("tian2022", "tian2023")
"""The scalings of :math:`\\mathbb C_\\alpha`: Tian (2022) Eq. 5 and Tian (2023) Eq. 3 (see the module docstring)."""


def _samples(name: str, value) -> torch.Tensor:
    """A per-sample quantity ``[n, p]`` (a vector ``[n]`` reads as ``[n, 1]``)."""
    value = check_tensor(name, value)
    if value.ndim == 1:
        value = value.unsqueeze(1)
    if value.ndim != 2:
        raise ValueError(f"{name} must be a per-sample quantity of shape [n, p] or [n]; got shape {tuple(value.shape)}.")
    return value


def _views(names: tuple[str, str], v1, v2) -> tuple[torch.Tensor, torch.Tensor]:
    v1, v2 = _samples(names[0], v1), _samples(names[1], v2)
    check_same(names, v1, v2, shape=True)
    if v1.shape[0] < 2:
        raise ValueError(f"{names[0]} must hold n >= 2 samples (pairs are needed); got n = {v1.shape[0]}.")
    return v1, v2


def _check_alpha(alpha, like: torch.Tensor) -> torch.Tensor:
    alpha = check_tensor("alpha", alpha, ndim=2)
    n = like.shape[0]
    if alpha.shape != (n, n):
        raise ValueError(f"alpha must have shape [n, n] = [{n}, {n}]; got {tuple(alpha.shape)}.")
    if alpha.dtype != like.dtype or alpha.device != like.device:
        raise ValueError(f"alpha must share the dtype and device of the samples ({like.dtype}/{like.device}); got "
                         f"{alpha.dtype}/{alpha.device}. Convert it with alpha.to(a1).")
    return alpha


def laplacian_and_rows(alpha: torch.Tensor, *, diagonal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The Laplacian of ``alpha`` (its diagonal cancels) and the positive-pair weights of each sample."""
    off = alpha - torch.diag_embed(torch.diagonal(alpha))
    rows = (alpha if diagonal else off).sum(dim=1)
    laplacian = torch.diag(off.sum(dim=1) + off.sum(dim=0)) - off - off.T
    return laplacian, rows


def contrastive_covariance(alpha, a1, a2, b1=None, b2=None, *, convention: str = "tian2022") -> torch.Tensor:
    r"""The contrastive covariance :math:`\mathbb C_\alpha[a, b]`, shape ``[p, q]``.

    .. math::

        \mathbb C_\alpha[a, b] = \sum_{i}\sum_{j\neq i}\alpha_{ij}(a[i]-a[j])(b[i]-b[j])^\top
        - \sum_i\Big(\sum_{j\neq i}\alpha_{ij}\Big)(a[i]-a[i'])(b[i]-b[i'])^\top
        \quad(\text{Tian 2022, Eq. 5}),

    or, with ``convention="tian2023"``, Tian (2023)'s Eq. 3:
    :math:`\frac{1}{2N^2}\sum_{i,j}\alpha_{ij}[(a[i]-a[j])(b[i]-b[j])^\top - (a[i]-a[i'])(b[i]-b[i'])^\top]`
    (all :math:`i, j`: the diagonal of :math:`\alpha` weighs the positive pairs). See the module docstring.

    Parameters
    ----------
    alpha : torch.Tensor, shape=[n, n]
        Pairwise importance (any real weights: :math:`\mathbb C_\alpha` is linear in them). Its diagonal is ignored
        in the 2022 convention. Same dtype and device as the samples.
    a1, a2 : torch.Tensor, shape=[n, p] or [n]
        The quantity :math:`a` on first views (:math:`a[i]`) and second views (:math:`a[i']`); ``n >= 2``,
        floating point, finite. A vector ``[n]`` is read as ``[n, 1]``.
    b1, b2 : torch.Tensor, shape=[n, q] or [n], optional
        Both or neither; default ``a1, a2`` (:math:`\mathbb C_\alpha[a] = \mathbb C_\alpha[a, a]`).
    convention : {"tian2022", "tian2023"}

    Returns
    -------
    torch.Tensor, shape=[p, q]
        Symmetric when ``b`` is ``a``.
    """
    check_choice("convention", convention, CONVENTIONS)
    a1, a2 = _views(("a1", "a2"), a1, a2)
    if (b1 is None) != (b2 is None):
        raise ValueError("give both b1 and b2, or neither.")
    if b1 is None:
        b1, b2 = a1, a2
    else:
        b1, b2 = _views(("b1", "b2"), b1, b2)
    n = a1.shape[0]
    if b1.shape[0] != n:
        raise ValueError(f"a and b must hold the same samples; got n = {n} for a1 and n = {b1.shape[0]} for b1.")
    check_same(("a1", "b1"), a1, b1)
    alpha = _check_alpha(alpha, a1)
    diagonal = convention == "tian2023"

    def cov_of(al, x1, x2, y1, y2):
        laplacian, rows = laplacian_and_rows(al, diagonal=diagonal)
        cov = x1.T @ laplacian @ y1 - (x1 - x2).T @ (rows.unsqueeze(1) * (y1 - y2))
        return cov / (2 * n * n) if diagonal else cov

    cov = cov_of(alpha, a1, a2, b1, b2)
    if bool(torch.isfinite(cov.detach()).all()):
        return cov
    # an intermediate overflowed (e.g. |a| ~ 1e154 in float64): C is linear in alpha, a and b, so compute it from
    # inputs scaled by powers of two (exact) and scale back; only a C that is itself not representable is an error
    (sal, al), (sa, x1, x2), (sb, y1, y2) = _pow2(alpha), _pow2(a1, a2), _pow2(b1, b2)
    cov = _scale_back(cov_of(al, x1, x2, y1, y2), sal + sa + sb)
    if not bool(torch.isfinite(cov.detach()).all()):
        raise ValueError(f"a1, a2, b1, b2, alpha: the contrastive covariance overflows {str(cov.dtype).replace('torch.', '')} "
                         "(the inputs are finite, C_alpha[a, b] is not representable); rescale a, b or alpha.")
    return cov


def _pow2(*tensors: torch.Tensor):
    """``(e, *scaled)``: the tensors divided by ``2**e``, the power of two near their largest |entry| (exact)."""
    m = max(float(t.detach().abs().max()) for t in tensors)
    e = math.frexp(m)[1] if m > 0 else 0
    return (e, *(torch.ldexp(torch.ldexp(t, torch.tensor(-(e // 2))), torch.tensor(-(e - e // 2))) for t in tensors))


def _scale_back(value: torch.Tensor, e: int) -> torch.Tensor:
    """``value * 2**e`` in two exact steps (inf where it overflows)."""
    return torch.ldexp(torch.ldexp(value, torch.tensor(e // 2)), torch.tensor(e - e // 2))


def energy(alpha, z1, z2) -> torch.Tensor:
    r"""The energy :math:`\mathcal E_\alpha = \operatorname{tr}\mathbb C_\alpha[z, z] = 2\sum_{i\neq j}\alpha_{ij}(d_{ij}^2 - d_i^2)`.

    Tian (2022), Thm. 1 and Eqs. 18–20, with :math:`d_{ij}^2 = \tfrac12\|z[i]-z[j]\|^2`,
    :math:`d_i^2 = \tfrac12\|z[i]-z[i']\|^2`. Computed as the trace of :func:`contrastive_covariance` without
    forming the matrix. Linear in ``alpha`` (diagonal ignored); differentiable in ``z1, z2`` (detach ``alpha`` for
    :math:`\mathcal E_{\mathrm{sg}(\alpha)}`).

    Parameters
    ----------
    alpha : torch.Tensor, shape=[n, n]
    z1, z2 : torch.Tensor, shape=[n, d]
        Outputs on the two views, ``n >= 2``, floating point, finite.

    Returns
    -------
    torch.Tensor
        A 0-d tensor.
    """
    z1, z2 = _views(("z1", "z2"), z1, z2)
    alpha = _check_alpha(alpha, z1)
    value = energy_unchecked(*laplacian_and_rows(alpha, diagonal=False), z1, z2)
    if bool(torch.isfinite(value.detach())):
        return value
    (sal, al), (sz, x1, x2) = _pow2(alpha), _pow2(z1, z2)  # exact rescaling, as in contrastive_covariance
    value = _scale_back(energy_unchecked(*laplacian_and_rows(al, diagonal=False), x1, x2), sal + 2 * sz)
    if not bool(torch.isfinite(value.detach())):
        raise ValueError(f"z1, z2, alpha: the energy overflows {str(value.dtype).replace('torch.', '')} (the inputs are "
                         "finite, E_alpha is not representable); rescale z or alpha.")
    return value


def energy_unchecked(laplacian: torch.Tensor, rows: torch.Tensor, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    r""":func:`energy` from the Laplacian and row sums of :math:`\alpha`, unchecked.

    for loops that reuse one :math:`\alpha` for thousands of steps (:func:`clbook.dynamics.relu2layer.relu_ascent`).
    """
    return (z1 * (laplacian @ z1)).sum() - (rows * (z1 - z2).pow(2).sum(dim=1)).sum()
