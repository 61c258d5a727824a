r"""Max-cosine metrics of dictionary recovery (Pokle et al. 2022, Eq. 11) and their chance level.

For encoder weights :math:`W\in\mathbb R^{m\times p}` (neurons are rows) and a dictionary
:math:`M\in\mathbb R^{p\times d}` (atoms are columns), atom :math:`j` is recovered as well as its best neuron:

.. math:: \mathrm{mc}_j := \max_{i\in[m]}\Big|\Big\langle\frac{W_{i*}}{\|W_{i*}\|},\frac{M_{*j}}{\|M_{*j}\|}\Big\rangle\Big|,\qquad j\in[d].

The paper reports the maximum, the median and the minimum of :math:`\mathrm{mc}_j` over atoms ("Maximum",
"Medium" [sic], "Minimum max-cosine"). A random encoder already scores well above zero, so every learned
value should be read next to :func:`chance_level`. The one max-cosine of the book: Chapter 16 reads the metric of a
matrix of coordinates :math:`A = WM` inside :math:`\mathrm{span}(M)` as ``max_cosines(A, I_d)``. Used in Chapters 14-17.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import check_int, check_same, check_tensor
from ..config import generator as make_generator
from ..config import randn
from ..losses._safe import unit_rows_any_scale

__all__ = ["max_cosines", "max_cosine_summary", "MaxCosine", "ChanceLevel", "chance_level", "atom_cdf", "expected_atom_max_cosine"]


def max_cosines(W: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    r"""Per-atom max-cosine :math:`\mathrm{mc}_j` of Eq. 11 (``j`` over atoms, max over neurons).

    Parameters
    ----------
    W : torch.Tensor, shape=[..., m, p]
        Encoder weights, one neuron per row (finite, floating point); leading axes (e.g. seeds) broadcast against
        ``M``. A zero row counts as cosine 0.
    M : torch.Tensor, shape=[..., p, d]
        Dictionary, one atom per column, in the dtype and on the device of ``W`` (mixed dtypes are rejected: convert
        one with ``.to(other)``).

    Returns
    -------
    torch.Tensor, shape=[..., d]
    """
    W = check_tensor("W", W)
    M = check_tensor("M", M)
    if W.ndim < 2 or M.ndim < 2 or W.shape[-1] != M.shape[-2]:
        raise ValueError(f"W must be [..., m, p] and M [..., p, d] with the same p; got {list(W.shape)} and {list(M.shape)}.")
    if W.shape[-2] == 0 or M.shape[-1] == 0 or W.shape[-1] == 0:
        raise ValueError(f"W needs m >= 1 neurons and M p >= 1 rows and d >= 1 atoms; got W {list(W.shape)}, M {list(M.shape)}.")
    check_same(("W", "M"), W, M)
    # cosines at any finite scale (a squared norm that over- or underflows is rescaled exactly); a zero row stays zero
    Wn = unit_rows_any_scale(W)
    Mn = unit_rows_any_scale(M.transpose(-1, -2)).transpose(-1, -2)
    return (Wn @ Mn).abs().amax(dim=-2)


@dataclass(frozen=True)
class MaxCosine:
    """Maximum, median and minimum of the per-atom max-cosines (tensors of the leading shape)."""

    maximum: torch.Tensor
    median: torch.Tensor
    minimum: torch.Tensor

    def as_tuple(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(maximum, median, minimum)``, in that order."""
        return self.maximum, self.median, self.minimum


def max_cosine_summary(W: torch.Tensor, M: torch.Tensor) -> MaxCosine:
    r"""The paper's three numbers: :math:`\max_j\mathrm{mc}_j`, :math:`\mathrm{median}_j\,\mathrm{mc}_j`, :math:`\min_j\mathrm{mc}_j`.

    The median of an even number of atoms is the mean of the two middle values (as ``numpy.median`` in the
    authors' code), not torch's lower median.
    """
    mc = max_cosines(W, M)
    return MaxCosine(mc.amax(dim=-1), torch.quantile(mc, 0.5, dim=-1), mc.amin(dim=-1))


@dataclass(frozen=True)
class ChanceLevel:
    """Monte-Carlo means (and standard errors) of the three metrics for a random Gaussian ``W``."""

    p: int
    d: int
    m: int
    draws: int
    maximum: float
    median: float
    minimum: float
    se_maximum: float
    se_median: float
    se_minimum: float

    def as_tuple(self) -> tuple[float, float, float]:
        """``(maximum, median, minimum)``, in that order."""
        return self.maximum, self.median, self.minimum


@functools.lru_cache(maxsize=64)
def _chance(p: int, d: int, m: int, draws: int, seed: int) -> ChanceLevel:
    gen = make_generator(seed)
    W = randn(draws, m, p, generator=gen, device="cpu", dtype=torch.float64)
    M = torch.eye(p, d, dtype=torch.float64)
    s = max_cosine_summary(W, M)
    vals = [t.numpy() for t in s.as_tuple()]
    means = [float(v.mean()) for v in vals]
    ses = [float(v.std(ddof=1) / math.sqrt(draws)) for v in vals]
    return ChanceLevel(p, d, m, draws, *means, *ses)


def chance_level(p: int, d: int, m: int, *, draws: int = 4000, seed: int = 0) -> ChanceLevel:
    r"""Expected (maximum, median, minimum) max-cosine of a random encoder :math:`W_{ij}\sim\mathcal N(0,1)`.

    The rows of a Gaussian :math:`W` are uniform on the sphere and the law is invariant under rotations, so
    the value does not depend on the dictionary: it is computed with :math:`M = [e_1,\dots,e_d]`.
    Results are cached per ``(p, d, m, draws, seed)``; always computed on the CPU in float64.

    Parameters
    ----------
    p, d, m : int
        Input dimension, atoms (``1 <= d <= p``), neurons.
    draws : int
        Independent random encoders (``>= 2``).
    seed : int

    Returns
    -------
    ChanceLevel
    """
    p, d, m = check_int("p", p, 1), check_int("d", d, 1), check_int("m", m, 1)
    if d > p:
        raise ValueError(f"need d <= p; got p = {p}, d = {d}.")
    return _chance(p, d, m, check_int("draws", draws, 2, 10**6), check_int("seed", seed, 0))


def atom_cdf(t, *, p: int, m: int):
    r"""Exact CDF of one atom's max-cosine :math:`\mathrm{mc}_j` for a random Gaussian encoder.

    For a uniform unit vector :math:`u\in S^{p-1}`, :math:`u_1^2\sim\mathrm{Beta}(\tfrac12,\tfrac{p-1}2)`; the
    :math:`m` neurons are independent, so

    .. math:: \Pr(\mathrm{mc}_j\le t) = I_{t^2}\big(\tfrac12,\tfrac{p-1}2\big)^m,\qquad 0\le t\le 1 .
    """
    p, m = check_int("p", p, 2), check_int("m", m, 1)
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    from scipy import special

    return special.betainc(0.5, (p - 1) / 2, t**2) ** m


def expected_atom_max_cosine(*, p: int, m: int) -> float:
    r""":math:`\mathbb E\,\mathrm{mc}_j = \int_0^1 \big(1 - I_{t^2}(\tfrac12,\tfrac{p-1}2)^m\big)\,dt` (quadrature, ~1e-12)."""
    from scipy import integrate

    value, _ = integrate.quad(lambda t: 1.0 - atom_cdf(t, p=p, m=m), 0.0, 1.0, epsabs=1e-13, epsrel=1e-12, limit=200)
    return float(value)
