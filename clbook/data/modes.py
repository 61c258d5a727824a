r"""Orthogonal mixtures of modes: data satisfying Assumption 1 of Tian (2022), α-CL, Sec. 5.

Assumption 1 asks for an orthonormal basis :math:`\{\bar{\mathbf x}_m\}_{m=1}^M` (here, without loss of
generality, the standard basis :math:`\mathbf e_m`) such that every input :math:`\mathbf x[i] = \sum_m a_m[i]\mathbf e_m` is

* **nonnegative**: :math:`a_m[i]\ge 0`;
* **one-hot**: :math:`a_m[i] > 0` for at most one :math:`m`;
* augmented by **rescaling only**: :math:`\mathbf x[i'] = \gamma[i]\,\mathbf x[i]` with :math:`\gamma[i] > 0`.

:func:`orthogonal_modes` draws such a batch (optionally breaking one-hotness on a fraction of the samples, to
show where the theory stops), and :func:`assumption1_violations` measures how far a batch is from the
assumption. Every draw uses an explicit CPU ``torch.Generator`` (:func:`clbook.generator`); tensors are float64 on
the current device. Used in Chapter 3.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._validate import check_in_range, check_int, check_nonnegative, check_pair, check_positive, check_tensor
from ..config import check_generator, defaults, rand, randint, to_device

__all__ = ["ModeBatch", "orthogonal_modes", "assumption1_violations"]


@dataclass(frozen=True)
class ModeBatch:
    r"""A batch of two views of Assumption-1 data.

    Attributes
    ----------
    x1, x2 : torch.Tensor, shape=[n, d]
        First views :math:`\mathbf x[i]` and second views :math:`\mathbf x[i'] = \gamma[i]\mathbf x[i]`.
    labels : torch.Tensor, shape=[n]
        The active mode :math:`m` of each sample (``int64``).
    amplitudes : torch.Tensor, shape=[n]
        :math:`a_{m}[i]` of the active mode.
    gamma : torch.Tensor, shape=[n]
        The augmentation factors :math:`\gamma[i] > 0`.
    mixed : torch.Tensor, shape=[n]
        ``True`` for the samples whose one-hotness was deliberately broken.
    """

    x1: torch.Tensor
    x2: torch.Tensor
    labels: torch.Tensor
    amplitudes: torch.Tensor
    gamma: torch.Tensor
    mixed: torch.Tensor


def orthogonal_modes(n: int, *, modes: int, generator: torch.Generator, dim: int | None = None,
                     amplitude_range: tuple[float, float] = (2.0, 1.0), jitter: float = 0.2,
                     gamma_range: tuple[float, float] = (0.5, 1.5), cover_all: bool = True,
                     mix_fraction: float = 0.0) -> ModeBatch:
    r"""Draw ``n`` samples of the orthogonal mixture model (Assumption 1 of the α-CL paper).

    Sample :math:`i` has mode :math:`m_i` (uniform; the first ``modes`` samples are modes :math:`0,\dots,M-1`
    when ``cover_all``, so the batch contains every mode, as Lemmas 13 and 14 require) and

    .. math::

        \mathbf x[i] = A_{m_i}(1 + j\,U_i)\,\mathbf e_{m_i},\qquad \mathbf x[i'] = \gamma[i]\,\mathbf x[i],
        \qquad \gamma[i]\sim\mathcal U(\gamma_{lo}, \gamma_{hi}),

    with mode magnitudes :math:`A_m` evenly spaced from ``amplitude_range[0]`` to ``amplitude_range[1]``,
    :math:`U_i\sim\mathcal U(0,1)` and jitter :math:`j`. With ``mix_fraction = f > 0`` a fraction :math:`f` of the
    samples (drawn at random) also get a second, different mode at half the amplitude, in both views: one-hotness
    fails for them (nonnegativity and the augmentation rule still hold).

    Parameters
    ----------
    n : int
        Batch size, ``n >= modes`` when ``cover_all``.
    modes : int
        Number of modes :math:`M \ge 1`.
    generator : torch.Generator
        CPU generator (:func:`clbook.generator`).
    dim : int, optional
        Input dimension :math:`d\ge M` (extra coordinates stay zero); defaults to ``modes``.
    amplitude_range : (float, float)
        Magnitudes of the first and last mode, both > 0.
    jitter : float
        Relative per-sample spread of the magnitude, ``>= 0``.
    gamma_range : (float, float)
        Range of the augmentation factor, ``0 < low <= high``. A wide range is strong augmentation.
    cover_all : bool
        Put every mode in the batch.
    mix_fraction : float
        Fraction of samples, in ``[0, 1]``, whose one-hotness is broken (needs ``modes >= 2``).

    Returns
    -------
    ModeBatch
    """
    modes = check_int("modes", modes, minimum=1)
    n = check_int("n", n, minimum=max(2, modes if cover_all else 2))
    dim = modes if dim is None else check_int("dim", dim, minimum=modes)
    check_generator(generator)
    a_hi = check_positive("amplitude_range[0]", amplitude_range[0])
    a_lo = check_positive("amplitude_range[1]", amplitude_range[1])
    jitter = check_nonnegative("jitter", jitter)
    g_lo = check_positive("gamma_range[0]", gamma_range[0])
    g_hi = check_positive("gamma_range[1]", gamma_range[1])
    if g_hi < g_lo:
        raise ValueError(f"gamma_range must satisfy low <= high; got gamma_range = {tuple(gamma_range)}.")
    mix_fraction = check_in_range("mix_fraction", mix_fraction, 0.0, 1.0)
    if mix_fraction > 0 and modes < 2:
        raise ValueError(f"mix_fraction > 0 needs modes >= 2 to mix two modes; got modes = {modes}.")
    labels = randint(0, modes, (n,), generator=generator).cpu()
    if cover_all:
        labels[:modes] = torch.arange(modes)
    levels = torch.linspace(a_hi, a_lo, modes, dtype=torch.float64) if modes > 1 else torch.tensor([a_hi], dtype=torch.float64)
    amp = levels[labels] * (1 + jitter * rand(n, generator=generator).cpu().double())
    gamma = g_lo + (g_hi - g_lo) * rand(n, generator=generator).cpu().double()
    x1 = torch.zeros(n, dim, dtype=torch.float64)
    x1[torch.arange(n), labels] = amp
    mixed = rand(n, generator=generator).cpu() < mix_fraction
    if modes >= 2:
        other = (labels + 1 + randint(0, modes - 1, (n,), generator=generator).cpu()) % modes
        x1[mixed, other[mixed]] = 0.5 * amp[mixed]
    x2 = gamma.unsqueeze(1) * x1
    dev = defaults()[0]
    return ModeBatch(to_device(x1), to_device(x2), labels.to(dev), to_device(amp), to_device(gamma), mixed.to(dev))


def assumption1_violations(x1: torch.Tensor, x2: torch.Tensor) -> dict[str, float]:
    r"""How far a batch of views is from Assumption 1 (in the standard basis).

    Returns a dictionary with

    * ``"negative"``: :math:`\max(0, -\min_{i,m} x_m[i], -\min_{i,m} x_m[i'])`, zero for nonnegative data;
    * ``"multi_mode"``: the fraction of samples with more than one positive coordinate (zero when one-hot);
    * ``"not_rescaled"``: :math:`\max_i \|\mathbf x[i'] - \gamma[i]\mathbf x[i]\|` with the best
      :math:`\gamma[i] = \langle \mathbf x[i'], \mathbf x[i]\rangle/\|\mathbf x[i]\|^2`, relative to
      :math:`\|\mathbf x[i']\|` (zero when the second view rescales the first), plus 1 for each sample whose
      best :math:`\gamma[i]` is not positive.
    """
    x1, x2 = check_pair(x1, x2, names=("x1", "x2"))
    check_tensor("x1", x1, ndim=2)
    negative = float(torch.clamp(-torch.minimum(x1.min(), x2.min()), min=0))
    multi = float(((x1 > 0).sum(dim=1) > 1).double().mean())
    sq = (x1 * x1).sum(dim=1)
    g = torch.where(sq > 0, (x1 * x2).sum(dim=1) / torch.where(sq > 0, sq, torch.ones_like(sq)), torch.ones_like(sq))
    resid = (x2 - g.unsqueeze(1) * x1).norm(dim=1) / x2.norm(dim=1).clamp_min(1e-300)
    not_rescaled = float(resid.max()) + float(((g <= 0) & (sq > 0)).sum())
    return {"negative": negative, "multi_mode": multi, "not_rescaled": not_rescaled}
