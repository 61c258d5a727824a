r"""Anchors with Gaussian-noise positives and independent negatives (Esser et al. 2023, Sec. 2 and Example 1).

The augmentation model of Esser, Mukherjee and Ghoshdastidar (2023): an anchor :math:`x_i`, a positive view
:math:`x_i^+ = x_i + \varepsilon_i` with :math:`\varepsilon_i\sim\mathcal N(0, \sigma\,\mathbb I)` (``variance``
:math:`\sigma`, read literally as in the paper), and a negative :math:`x_i^-` drawn independently and uniformly
from the data set. :func:`gaussian_views` builds the triple for given anchors, :func:`moons_views` for the
scikit-learn half moons of Example 1, :func:`gaussian_anchors` draws anisotropic Gaussian anchors.

Every draw uses an explicit ``torch.Generator`` (:func:`clbook.generator`) on the CPU; the results are float64
tensors on the current device. Used in Chapters 11 and 12.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .._validate import check_int, check_nonnegative, check_tensor
from ..config import randint, randn, to_device

__all__ = ["Views", "gaussian_views", "moons_views", "gaussian_anchors"]


@dataclass(frozen=True)
class Views:
    """Anchors, positives and negatives, each ``[n, d]``."""

    anchors: torch.Tensor
    positives: torch.Tensor
    negatives: torch.Tensor

    def numpy(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The three views as float64 numpy arrays (on the CPU)."""
        return tuple(t.detach().cpu().numpy().astype(np.float64) for t in (self.anchors, self.positives, self.negatives))


def gaussian_views(x, *, variance: float = 0.1, generator: torch.Generator) -> Views:
    r"""Positives :math:`x^+ = x + \varepsilon`, :math:`\varepsilon\sim\mathcal N(0,\sigma\mathbb I)`; negatives uniform from ``x``.

    Parameters
    ----------
    x : torch.Tensor or array, shape=[n, d]
        The anchors.
    variance : float
        :math:`\sigma`, the variance of each coordinate of the noise (the paper's :math:`\mathcal N(0,\sigma\mathbb I)`).
    generator : torch.Generator
        CPU generator; the noise is drawn first, then the negative indices (with replacement).

    Returns
    -------
    Views
    """
    x = check_tensor("x", to_device(x), ndim=2)
    variance = check_nonnegative("variance", variance)
    n, d = x.shape
    check_int("n (rows of x)", n, 2)
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

    return gaussian_views(to_device(x), variance=variance, generator=generator(seed))


def gaussian_anchors(n: int, scales, *, mean=None, generator: torch.Generator) -> torch.Tensor:
    r"""Anchors :math:`x = \mu + \mathrm{diag}(s)\,g`, :math:`g\sim\mathcal N(0,\mathbb I_d)`, shape ``[n, d]``.

    ``scales`` are the standard deviations :math:`s` of the coordinates; ``mean`` (default 0) is :math:`\mu`.
    """
    n = check_int("n", n, 2)
    s = to_device(scales).reshape(-1)
    if s.numel() < 1 or bool((s < 0).any()):
        raise ValueError(f"scales must be a non-empty vector of values >= 0; got {scales!r}.")
    mu = torch.zeros_like(s) if mean is None else to_device(mean).reshape(-1)
    if mu.shape != s.shape:
        raise ValueError(f"mean must have {s.numel()} entries like scales; got {mu.numel()}.")
    return mu + randn(n, s.numel(), generator=generator) * s
