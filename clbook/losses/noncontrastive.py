r"""Non-contrastive losses of the experiments of Pokle, Tian, Li and Risteski (2022): BYOL-style and SimSiam-style.

* :func:`ncl_loss`, Eqs 4 / 5 on a batch (the authors' ``simplified`` and ``simplified-pred`` models): the
  normalised output of the branch being updated against the stop-gradient normalised output of the other branch,

  .. math:: \ell = \frac1B\sum_{k=1}^B\big\|\hat q_k - \mathrm{SG}(\hat t_k)\big\|^2
            = 2 - \frac2B\sum_{k=1}^B\langle\hat q_k, \mathrm{SG}(\hat t_k)\rangle

  (the second form for non-zero rows; it is the one the authors' code computes). Rows are normalised exactly at
  any finite scale (:func:`clbook.losses._safe.unit_rows_any_scale`); an all-zero row counts as the zero vector;
* :func:`simsiam_loss`, simplified SimSiam (Chen and He 2021, Eq. 2 with its stop-gradient; the authors'
  ``main_simsiam.py``): :math:`\tfrac12[-\cos(p_1,\mathrm{SG}z_2) - \cos(p_2,\mathrm{SG}z_1)]`, batch-averaged.

Leading axes (a stack of independent runs) are kept. Used in Chapter 17 through :mod:`clbook.experiments.landscape`;
the theory versions (unnormalised, Eqs 6, 7, 12, 13) are in :mod:`clbook.dynamics.landscape` (Chapters 14-16).
"""
from __future__ import annotations

import torch

from .._validate import check_tensor
from ._safe import unit_rows_any_scale

__all__ = ["ncl_loss", "simsiam_loss"]


def _check_like(names, tensors):
    tensors = [check_tensor(name, t) for name, t in zip(names, tensors, strict=True)]
    first = tensors[0]
    if first.ndim < 2:
        raise ValueError(f"{names[0]} must have shape [..., B, m]; got {list(first.shape)}.")
    for name, t in zip(names[1:], tensors[1:], strict=True):
        if t.shape != first.shape:
            raise ValueError(f"{names[0]} and {name} must have one shape [..., B, m]; got {list(first.shape)} and {list(t.shape)}.")
        if t.dtype != first.dtype or t.device != first.device:
            raise ValueError(f"{names[0]} and {name} must share dtype and device; "
                             f"got {first.dtype}/{first.device} and {t.dtype}/{t.device}.")
    if first.shape[-2] < 1:
        raise ValueError(f"{', '.join(names)} must hold a batch of B >= 1 samples; got B = {first.shape[-2]}.")
    return tensors


def ncl_loss_unchecked(q, target):
    """:func:`ncl_loss` without the argument checks, for training loops (batched over leading axes)."""
    return 2 - 2 * (unit_rows_any_scale(q) * unit_rows_any_scale(target).detach()).sum(-1).mean(-1)


def simsiam_loss_unchecked(p1, p2, z1, z2):
    """:func:`simsiam_loss` without the argument checks, for training loops (batched over leading axes)."""
    c1 = (unit_rows_any_scale(p1) * unit_rows_any_scale(z2).detach()).sum(-1).mean(-1)
    c2 = (unit_rows_any_scale(p2) * unit_rows_any_scale(z1).detach()).sum(-1).mean(-1)
    return -(c1 + c2) / 2


def ncl_loss(q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    r"""Eqs 4 / 5 of Pokle et al. (2022) on a batch: :math:`2 - \frac2B\sum_k\langle\hat q_k,\mathrm{SG}(\hat t_k)\rangle`.

    Parameters
    ----------
    q : torch.Tensor, shape=[..., B, m]
        The branch being updated (after the predictor, if any).
    target : torch.Tensor, shape=[..., B, m]
        The other branch; no gradient flows into it (stop-gradient).

    Returns
    -------
    torch.Tensor, shape=[...]
    """
    q, target = _check_like(("q", "target"), (q, target))
    return ncl_loss_unchecked(q, target)


def simsiam_loss(p1: torch.Tensor, p2: torch.Tensor, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    r"""Simplified SimSiam: :math:`\tfrac12[-\cos(p_1,\mathrm{SG}z_2) - \cos(p_2,\mathrm{SG}z_1)]`, averaged over the batch.

    Parameters
    ----------
    p1, p2 : torch.Tensor, shape=[..., B, m]
        Predictor outputs of the two views.
    z1, z2 : torch.Tensor, shape=[..., B, m]
        Encoder outputs of the two views (stop-gradient).

    Returns
    -------
    torch.Tensor, shape=[...]
    """
    p1, p2, z1, z2 = _check_like(("p1", "p2", "z1", "z2"), (p1, p2, z1, z2))
    return simsiam_loss_unchecked(p1, p2, z1, z2)
