r"""The sparse-coding data model of Pokle, Tian, Li and Risteski (2022), Sec. 4, with its masking views.

Data (Eq. 1): :math:`x = Mz + \epsilon`, a column-orthonormal dictionary :math:`M\in\mathbb R^{p\times d}`
(:math:`M^\top M = I_d`), a sparse latent :math:`z\in\mathbb R^d` and Gaussian noise
:math:`\epsilon\sim\mathcal N(0,\sigma_0^2 I_p)`. Views by random coordinate masking with *keep* probability
:math:`\alpha`: independent masks (Eq. 3) :math:`a_1 = D_1x,\ a_2 = D_2x`, or the dependent masks of
Wen and Li (Eq. 2) :math:`a_1 = 2Dx,\ a_2 = 2(I-D)x`.

Every function draws with an explicit CPU ``torch.Generator`` (:func:`clbook.generator`) and returns float64
tensors on the current device. A leading ``batch`` dimension (one entry per seed) is available where a
chapter trains or measures many seeds at once. Used in Chapters 14-17.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._validate import check_choice, check_in_range, check_int, check_nonnegative, check_tensor
from ..config import rand, randint, randn, to_device

__all__ = [
    "LATENTS",
    "SCHEMES",
    "SparseCodingData",
    "dictionary",
    "sparse_latents",
    "sample",
    "latent_second_moment",
    "noise_std",
    "masks",
    "views",
]

LATENTS = ("symmetric", "binary", "one_hot")
SCHEMES = ("independent", "dependent")


def _batch_shape(batch):
    if batch is None:
        return ()
    return (check_int("batch", batch, 1),)


def dictionary(p: int, d: int, *, generator: torch.Generator, batch: int | None = None) -> torch.Tensor:
    r"""A random column-orthonormal dictionary, the :math:`Q` factor of a Gaussian matrix (Sec. 4.2).

    .. math:: G_{ij}\sim\mathcal N(0,1),\quad G = QR,\quad M := Q\,\mathrm{diag}(\mathrm{sign}\,R_{jj}),\quad M^\top M = I_d .

    The sign fix makes :math:`M` Haar distributed on the Stiefel manifold.

    Parameters
    ----------
    p, d : int
        Input dimension and number of atoms, ``p >= d >= 1``.
    generator : torch.Generator
    batch : int, optional
        Draw ``batch`` independent dictionaries, ``shape=[batch, p, d]``.

    Returns
    -------
    torch.Tensor, shape=[p, d] or [batch, p, d]
    """
    p, d = check_int("p", p, 1), check_int("d", d, 1)
    if d > p:
        raise ValueError(f"need p >= d for a column-orthonormal dictionary; got p = {p}, d = {d}.")
    G = randn(*_batch_shape(batch), p, d, generator=generator)
    Q, R = torch.linalg.qr(G)
    signs = torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))
    return Q * torch.where(signs == 0, torch.ones_like(signs), signs).unsqueeze(-2)


def sparse_latents(n: int, d: int, *, sparsity: float, generator: torch.Generator, latent: str = "symmetric",
                   nonzero: bool = True, batch: int | None = None) -> torch.Tensor:
    r"""Sparse latents :math:`z\in\mathbb R^d`, one per row.

    * ``"symmetric"`` (Sec. 4.2, Assumption 1): :math:`z_i\in\{0,\pm1\}` i.i.d. with
      :math:`\Pr(z_i = 1) = \Pr(z_i=-1) = \beta/2`, where ``sparsity`` is the paper's "Pr(sparse)" :math:`\beta`;
    * ``"binary"`` (Sec. 4.1): :math:`z_i\in\{0,1\}` i.i.d. with :math:`\Pr(z_i = 1)=\beta`;
    * ``"one_hot"`` (Theorem 1): :math:`z = e_j` with :math:`j` uniform on :math:`[d]` (``sparsity`` is ignored).

    With ``nonzero=True`` an all-zero row is redrawn until it has a non-zero entry (the footnote of Sec. 4.2),
    i.e. the law is conditioned on :math:`z\neq0`.

    Returns
    -------
    torch.Tensor, shape=[n, d] or [batch, n, d]
    """
    n, d = check_int("n", n, 1), check_int("d", d, 1)
    check_choice("latent", latent, LATENTS)
    shape = (*_batch_shape(batch), n, d)
    if latent == "one_hot":
        j = randint(0, d, shape[:-1], generator=generator)
        return torch.nn.functional.one_hot(j, d).to(to_device(0.0).dtype)
    beta = check_in_range("sparsity", sparsity, 0.0, 1.0)
    if nonzero and beta == 0:
        raise ValueError("sparsity = 0 gives only z = 0, which nonzero=True excludes; use sparsity > 0.")

    def draw(size):
        u = rand(*size, generator=generator)
        if latent == "binary":
            return (u < beta).to(u.dtype)
        return (u < beta / 2).to(u.dtype) - ((u >= beta / 2) & (u < beta)).to(u.dtype)

    z = draw(shape)
    if nonzero:
        for _ in range(10_000):
            empty = (z == 0).all(dim=-1)
            k = int(empty.sum())
            if k == 0:
                break
            z[empty] = draw((k, d))
    return z


@dataclass(frozen=True)
class SparseCodingData:
    r"""A sample of Eq. 1: ``M`` [..., p, d], ``Z`` [..., n, d], ``X = Z Mᵀ + noise`` [..., n, p]."""

    M: torch.Tensor
    Z: torch.Tensor
    X: torch.Tensor
    noise: float
    sparsity: float
    latent: str


def sample(n: int, *, p: int, d: int, sparsity: float, noise: float, generator: torch.Generator,
           latent: str = "symmetric", M: torch.Tensor | None = None, batch: int | None = None) -> SparseCodingData:
    r"""Draw ``n`` samples of Eq. 1, :math:`x = Mz + \epsilon` with :math:`\epsilon\sim\mathcal N(0,\sigma_0^2I_p)`.

    Parameters
    ----------
    n, p, d : int
        Samples, input dimension, atoms.
    sparsity : float
        :math:`\beta` of :func:`sparse_latents`.
    noise : float
        The noise standard deviation :math:`\sigma_0 \ge 0` (see :func:`noise_std` for the paper's three readings).
    generator : torch.Generator
        Draws, in this order: the dictionary (unless ``M`` is given), the latents, the noise.
    latent : str
        ``"symmetric"``, ``"binary"`` or ``"one_hot"``.
    M : torch.Tensor, optional
        A dictionary ``[p, d]`` (or ``[batch, p, d]``) to use instead of a fresh one.
    batch : int, optional
        Independent data sets, one per seed, stacked on a leading axis.

    Returns
    -------
    SparseCodingData
    """
    n, p, d = check_int("n", n, 1), check_int("p", p, 1), check_int("d", d, 1)
    sigma = check_nonnegative("noise", noise)
    if M is None:
        M = dictionary(p, d, generator=generator, batch=batch)
    else:
        M = check_tensor("M", to_device(M))
        if M.shape[-2:] != (p, d) or M.ndim != 2 + len(_batch_shape(batch)):
            raise ValueError(f"M must have shape {[*_batch_shape(batch), p, d]}; got {list(M.shape)}.")
    Z = sparse_latents(n, d, sparsity=sparsity, generator=generator, latent=latent, batch=batch)
    X = Z @ M.transpose(-1, -2)
    if sigma > 0:
        X = X + sigma * randn(*X.shape, generator=generator)
    return SparseCodingData(M=M, Z=Z, X=X, noise=sigma, sparsity=float(sparsity), latent=latent)


def latent_second_moment(d: int, *, sparsity: float, latent: str = "symmetric", nonzero: bool = True) -> torch.Tensor:
    r"""The exact :math:`\mathbb E[zz^\top]` of :func:`sparse_latents` (``[d, d]``).

    For ``"symmetric"`` the signs make the off-diagonal vanish and
    :math:`\mathbb E[zz^\top] = \beta I/(1-(1-\beta)^d)` when conditioned on :math:`z\neq0` (:math:`\beta I` without).
    For ``"binary"``: :math:`(\beta(1-\beta) I + \beta^2\mathbf 1\mathbf 1^\top)/q` with
    :math:`q = 1-(1-\beta)^d` (or 1). For ``"one_hot"``: :math:`I/d`.
    """
    d = check_int("d", d, 1)
    check_choice("latent", latent, LATENTS)
    eye = to_device(torch.eye(d))
    if latent == "one_hot":
        return eye / d
    beta = check_in_range("sparsity", sparsity, 0.0, 1.0)
    q = 1.0 - (1.0 - beta) ** d if nonzero else 1.0
    if nonzero and q == 0:
        raise ValueError("sparsity = 0 with nonzero=True has no valid latent.")
    if latent == "symmetric":
        return beta * eye / q
    return (beta * (1 - beta) * eye + beta**2 * torch.ones_like(eye)) / q


def noise_std(d: int, *, reading: str = "code") -> float:
    r"""The noise standard deviation :math:`\sigma_0` under the paper's three incompatible statements.

    * ``"sec4.1"``: :math:`\sigma_0 = \log d / d` (Sec. 4.1, ":math:`\sigma_0=\Theta(\log d/d)`");
    * ``"sec4.2"``: :math:`\sigma_0 = \sqrt{\log d/d}` (Sec. 4.2, ":math:`\mathcal N(0,\log d/d)`" read as a variance);
    * ``"code"``: :math:`\sigma_0 = \sqrt{\log d}/d` (the authors' ``gen_epsilon``).
    """
    d = check_int("d", d, 2)
    check_choice("reading", reading, ("sec4.1", "sec4.2", "code"))
    return {"sec4.1": math.log(d) / d, "sec4.2": math.sqrt(math.log(d) / d), "code": math.sqrt(math.log(d)) / d}[reading]


def masks(shape, *, keep: float, generator: torch.Generator, scheme: str = "independent") -> tuple[torch.Tensor, torch.Tensor]:
    r"""The two diagonal masks, as the multipliers of the coordinates of :math:`x` (shape ``shape`` each).

    * ``"independent"`` (Eq. 3): :math:`D_1, D_2` independent, diagonal entries i.i.d. Bernoulli(:math:`\alpha`);
      returns :math:`(\mathrm{diag} D_1, \mathrm{diag} D_2)`.
    * ``"dependent"`` (Eq. 2): one :math:`D` with Bernoulli(:math:`\alpha`) entries; returns
      :math:`(2\,\mathrm{diag} D,\ 2(1-\mathrm{diag} D))`, so that :math:`a_1 + a_2 = 2x`.

    ``keep`` is :math:`\alpha`, the probability that a coordinate is *kept*; the paper's and the code's
    "masking probability" is :math:`1-\alpha`.
    """
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    check_choice("scheme", scheme, SCHEMES)
    shape = tuple(shape)
    if scheme == "independent":
        u = rand(2, *shape, generator=generator)
        return (u[0] < alpha).to(u.dtype), (u[1] < alpha).to(u.dtype)
    D = (rand(*shape, generator=generator) < alpha).to(to_device(0.0).dtype)
    return 2 * D, 2 * (1 - D)


def views(X: torch.Tensor, *, keep: float, generator: torch.Generator, scheme: str = "independent") -> tuple[torch.Tensor, torch.Tensor]:
    r"""Two masked views of each row of ``X`` (``[..., n, p]``): Eq. 3 or Eq. 2, fresh masks per sample."""
    X = check_tensor("X", X)
    if X.ndim < 2:
        raise ValueError(f"X must have shape [..., n, p]; got {list(X.shape)}.")
    d1, d2 = masks(X.shape, keep=keep, generator=generator, scheme=scheme)
    return d1 * X, d2 * X
