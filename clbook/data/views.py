r"""Anchors with Gaussian-noise positives and independent negatives (Esser et al. 2023, Sec. 2 and Example 1).

The augmentation model of Esser, Mukherjee and Ghoshdastidar (2023): an anchor :math:`x_i`, a positive view
:math:`x_i^+ = x_i + \varepsilon_i` with :math:`\varepsilon_i\sim\mathcal N(0, \sigma\,\mathbb I)` (``variance``
:math:`\sigma`, read literally as in the paper), and a negative :math:`x_i^-` drawn independently and uniformly
from the data set. :func:`gaussian_views` builds the triple for given anchors, :func:`moons_views` for the
scikit-learn half moons of Example 1, :func:`gaussian_anchors` draws anisotropic Gaussian anchors.

Every draw uses an explicit ``torch.Generator`` (:func:`clbook.generator`) on the CPU; the results are tensors on
the device and dtype of :func:`clbook.setup` (float64 for the book). The moons themselves come from scikit-learn's
``make_moons`` with ``random_state=seed`` (its own NumPy generator, the documented interop). Used in Chapters 11-13.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from .._validate import as_tensor, check_int, check_nonnegative
from ..config import defaults, randint, randn

__all__ = ["Views", "gaussian_views", "moons_views", "gaussian_anchors"]


@dataclass(frozen=True)
class Views:
    """Anchors, positives and negatives, each ``[n, d]``; unpacks as ``x, x_pos, x_neg = views``."""

    anchors: torch.Tensor
    positives: torch.Tensor
    negatives: torch.Tensor

    def __iter__(self) -> Iterator[torch.Tensor]:
        return iter((self.anchors, self.positives, self.negatives))


def _tensor(name: str, value, ndim: int) -> torch.Tensor:
    device, dtype = defaults()
    return as_tensor(name, value, ndim=ndim, dtype=dtype, device=device)


def gaussian_views(x, *, variance: float = 0.1, generator: torch.Generator) -> Views:
    r"""Positives :math:`x^+ = x + \varepsilon`, :math:`\varepsilon\sim\mathcal N(0,\sigma\mathbb I)`; negatives uniform from ``x``.

    Parameters
    ----------
    x : torch.Tensor or array, shape=[n, d]
        The anchors, finite, ``n >= 2`` (converted to the device and dtype of :func:`clbook.setup`).
    variance : float
        :math:`\sigma`, the variance of each coordinate of the noise (the paper's :math:`\mathcal N(0,\sigma\mathbb I)`).
    generator : torch.Generator
        CPU generator; the noise is drawn first, then the negative indices (with replacement).

    Returns
    -------
    Views
    """
    x = _tensor("x", x, 2)
    variance = check_nonnegative("variance", variance)
    n, d = x.shape
    check_int("n (rows of x)", n, 2)
    if d < 1:
        raise ValueError("x must have at least one column.")
    noise = randn(n, d, generator=generator)
    index = randint(0, n, n, generator=generator)
    return Views(x, x + variance**0.5 * noise, x[index])


def moons_views(n: int = 200, *, noise: float = 0.05, variance: float = 0.1, seed: int = 0) -> Views:
    r"""Half moons (``sklearn.datasets.make_moons``) with the views of Example 1.

    Parameters
    ----------
    n : int
        Number of anchors (``>= 4``).
    noise : float
        Standard deviation of the moons' own noise (``make_moons(noise=...)``).
    variance : float
        Variance of the augmentation noise (Example 1 uses :math:`\mathcal N(0, 0.1\,\mathbb I)`).
    seed : int
        Seeds both ``make_moons`` and the generator of the views.
    """
    from sklearn.datasets import make_moons

    n = check_int("n", n, 4)
    noise = check_nonnegative("noise", noise)
    seed = check_int("seed", seed, 0, 2**32 - 1)
    x, _ = make_moons(n_samples=n, noise=noise, random_state=seed)
    from ..config import generator

    return gaussian_views(x, variance=variance, generator=generator(seed))


def gaussian_anchors(n: int, scales, *, mean=None, generator: torch.Generator) -> torch.Tensor:
    r"""Anchors :math:`x = \mu + \mathrm{diag}(s)\,g`, :math:`g\sim\mathcal N(0,\mathbb I_d)`, shape ``[n, d]``.

    ``scales`` are the standard deviations :math:`s` of the coordinates (a non-empty vector of finite values
    :math:`\ge 0`); ``mean`` (default 0) is :math:`\mu`, finite, of the same length; ``n >= 2``.
    """
    n = check_int("n", n, 2)
    s = _tensor("scales", scales, 1)
    if s.numel() < 1 or bool((s < 0).any()):
        raise ValueError(f"scales must be a non-empty vector of values >= 0; got {scales!r}.")
    mu = torch.zeros_like(s) if mean is None else _tensor("mean", mean, 1)
    if mu.shape != s.shape:
        raise ValueError(f"mean must have {s.numel()} entries like scales; got {mu.numel()}.")
    return mu + randn(n, s.numel(), generator=generator) * s
