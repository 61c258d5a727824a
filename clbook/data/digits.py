r"""Shifted digits: scikit-learn's 8×8 digits pasted at a random offset on a larger canvas, and their views.

A small, download-free stand-in for an image benchmark in which pixels alone do not reveal the class
(a linear probe on raw pixels gets about 30 %), so contrastive pre-training has something to learn.
The note ``notes/alpha-cl.md`` §4.1 describes the task; the augmentation is vectorised torch
(random translation with zero fill, contrast, Gaussian noise).

Used in Chapter 4.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .._validate import check_in_range, check_int, check_nonnegative, check_tensor
from ..config import check_generator

__all__ = ["ShiftedDigits", "shifted_digits", "augment"]


@dataclass(frozen=True)
class ShiftedDigits:
    """Flattened images ``[n, canvas²]`` in [0, 1] with labels, split into train and test."""

    x_train: torch.Tensor
    y_train: np.ndarray
    x_test: torch.Tensor
    y_test: np.ndarray
    canvas: int
    offsets: np.ndarray


def shifted_digits(*, canvas: int = 12, n_train: int = 1200, seed: int = 0, dtype=torch.float32) -> ShiftedDigits:
    r"""All 1797 digits of ``sklearn.datasets.load_digits``, pasted at random offsets on a larger canvas.

    The digits are scaled to [0, 1], each pasted at its own fixed random offset in a ``canvas × canvas`` zero image,
    then split ``n_train`` / rest at random.

    The offsets and the split are drawn once, by numpy's PCG64 generator seeded with ``seed`` (the one use of
    ``numpy.random.default_rng`` in the package, documented interop with scikit-learn's numpy data): they define the
    data set, like the digits themselves, and the stored results of Chapter 4 were computed on exactly this layout.
    Every random draw of training (views, batches, initialisation) uses a CPU :class:`torch.Generator`. The tensors
    are on the CPU, where the experiments of Chapter 4 run.

    Parameters
    ----------
    canvas : int
        Side of the canvas, 8 ≤ canvas ≤ 32 (8 gives the plain digits).
    n_train : int
        Size of the training split, 10 ≤ n_train ≤ 1787.
    seed : int
        Seed of the offsets and of the split.

    """
    from sklearn.datasets import load_digits

    canvas = check_int("canvas", canvas, minimum=8, maximum=32)
    n_train = check_int("n_train", n_train, minimum=10, maximum=1787)
    seed = check_int("seed", seed, minimum=0)
    digits = load_digits()
    images, labels = digits.images / 16.0, digits.target
    rng = np.random.default_rng(seed)
    offsets = rng.integers(0, canvas - 8 + 1, size=(len(images), 2))
    out = np.zeros((len(images), canvas, canvas))
    for k, (r, c) in enumerate(offsets):
        out[k, r:r + 8, c:c + 8] = images[k]
    order = rng.permutation(len(images))
    train, test = order[:n_train], order[n_train:]
    flat = torch.tensor(out.reshape(len(images), -1), dtype=dtype)
    return ShiftedDigits(flat[train], labels[train], flat[test], labels[test], canvas, offsets)


def augment(x: torch.Tensor, *, generator: torch.Generator, canvas: int = 12, max_shift: int = 3,
            contrast: tuple[float, float] = (0.6, 1.4), noise: float = 0.2) -> torch.Tensor:
    r"""One random view of each flattened image: translate, rescale contrast, add noise.

    .. math::

        v = \kappa\cdot T_{(a, b)}x + \sigma\varepsilon,\quad (a, b)\sim U\{-s..s\}^2,\
        \kappa\sim U(\kappa_{lo}, \kappa_{hi}),\ \varepsilon\sim N(0, I)

    where :math:`T_{(a,b)}` shifts the image with zero fill (pad by :math:`s`, crop at a random corner).
    Randomness is drawn on the CPU from ``generator``.

    Parameters
    ----------
    x : torch.Tensor, shape=[n, canvas²]
    generator : torch.Generator
    canvas, max_shift : int
        Image side and largest shift :math:`s` (0 ≤ s ≤ canvas).
    contrast : (float, float)
        Range of :math:`\kappa`, 0 ≤ lo ≤ hi ≤ 10.
    noise : float
        :math:`\sigma \ge 0`.
    """
    check_generator(generator)
    x = check_tensor("x", x, ndim=2)
    canvas = check_int("canvas", canvas, minimum=1)
    if x.shape[1] != canvas * canvas:
        raise ValueError(f"x must have canvas² = {canvas * canvas} columns; got shape {tuple(x.shape)}.")
    s = check_int("max_shift", max_shift, minimum=0, maximum=canvas)
    lo = check_in_range("contrast[0]", contrast[0], 0.0, 10.0)
    hi = check_in_range("contrast[1]", contrast[1], lo, 10.0)
    sigma = check_nonnegative("noise", noise)
    n = x.shape[0]
    padded = F.pad(x.reshape(n, canvas, canvas), (s, s, s, s))
    corner = torch.randint(0, 2 * s + 1, (n, 2), generator=generator).to(x.device)
    rows = (corner[:, 0:1] + torch.arange(canvas, device=x.device)).unsqueeze(2)  # [n, canvas, 1]
    cols = (corner[:, 1:2] + torch.arange(canvas, device=x.device)).unsqueeze(1)  # [n, 1, canvas]
    shifted = padded[torch.arange(n, device=x.device)[:, None, None], rows, cols].reshape(n, -1)
    kappa = (lo + (hi - lo) * torch.rand(n, 1, generator=generator, dtype=x.dtype)).to(x.device)
    eps = torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)
    return kappa * shifted + sigma * eps
