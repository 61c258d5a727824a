r"""Contrastive covariance :math:`\mathbb C_\alpha[a, b]` and the energy :math:`\mathcal E_\alpha`.

Tian (2022), α-CL, Eq. 5:

.. math::

    \mathbb C_\alpha[a, b] = \sum_{i}\sum_{j\neq i}\alpha_{ij}(a[i]-a[j])(b[i]-b[j])^\top
    - \sum_i\Big(\sum_{j\neq i}\alpha_{ij}\Big)(a[i]-a[i'])(b[i]-b[i'])^\top,

and :math:`\mathcal E_\alpha(\theta) = \operatorname{tr}\mathbb C_\alpha[z, z]`. This is the book's one
convention (the Notation page translates it to each paper's constants: Tian 2023 divides by
:math:`2N^2`). The double sum is evaluated in :math:`O(N^2 + Nd^2)` form,

.. math::

    \mathbb C_\alpha[a,b] = A_1^\top\big(\operatorname{diag}(\alpha\mathbf 1 + \alpha^\top\mathbf 1) - \alpha - \alpha^\top\big)B_1
    - (A_1 - A_2)^\top\operatorname{diag}(\alpha\mathbf 1)(B_1 - B_2).

Used in Chapters 1–3 and 5–8.
"""
from __future__ import annotations

import torch

from ._validate import check_pair, check_tensor

__all__ = ["contrastive_covariance", "energy"]


def _check_alpha(alpha: torch.Tensor, n: int) -> torch.Tensor:
    alpha = check_tensor("alpha", alpha, ndim=2)
    if alpha.shape != (n, n):
        raise ValueError(f"alpha must have shape [n, n] = [{n}, {n}]; got {tuple(alpha.shape)}.")
    return alpha * (1 - torch.eye(n, dtype=alpha.dtype, device=alpha.device))


def contrastive_covariance(alpha, a1, a2, b1=None, b2=None) -> torch.Tensor:
    r"""Eq. 5: :math:`\mathbb C_\alpha[a, b]`, shape ``[p, q]``.

    Parameters
    ----------
    alpha : torch.Tensor, shape=[n, n]
        Pairwise importance; the diagonal is ignored.
    a1, a2 : torch.Tensor, shape=[n, p]
        The quantity :math:`a` on first views (:math:`a[i]`) and second views (:math:`a[i']`).
    b1, b2 : torch.Tensor, shape=[n, q], optional
        Defaults to ``a1, a2`` (:math:`\mathbb C_\alpha[a] = \mathbb C_\alpha[a, a]`).
    """
    a1, a2 = check_pair(a1, a2, names=("a1", "a2"))
    if b1 is None and b2 is None:
        b1, b2 = a1, a2
    elif b1 is None or b2 is None:
        raise ValueError("give both b1 and b2, or neither.")
    b1, b2 = check_pair(b1, b2, names=("b1", "b2"))
    n = a1.shape[0]
    if b1.shape[0] != n:
        raise ValueError(f"a and b must hold the same samples; got n = {n} and {b1.shape[0]}.")
    alpha = _check_alpha(alpha, n)
    rows = alpha.sum(dim=1)
    laplacian = torch.diag(rows + alpha.sum(dim=0)) - alpha - alpha.T
    negatives = a1.T @ laplacian @ b1
    positives = (a1 - a2).T @ (rows.unsqueeze(1) * (b1 - b2))
    return negatives - positives


def energy(alpha, z1, z2) -> torch.Tensor:
    r"""The energy :math:`\mathcal E_\alpha = \operatorname{tr}\mathbb C_\alpha[z, z] = 2\sum_{i\neq j}\alpha_{ij}(d_{ij}^2 - d_i^2)`.

    Linear in ``alpha``; differentiable in ``z1, z2``. Detach ``alpha`` for :math:`\mathcal E_{\mathrm{sg}(\alpha)}`.
    """
    z1, z2 = check_pair(z1, z2)
    n = z1.shape[0]
    alpha = _check_alpha(alpha, n)
    d_neg = (z1.unsqueeze(1) - z1.unsqueeze(0)).pow(2).sum(dim=2)
    d_pos = (z1 - z2).pow(2).sum(dim=1)
    return (alpha * d_neg).sum() - (alpha.sum(dim=1) * d_pos).sum()
