r"""The sparse-coding data model of Pokle, Tian, Li and Risteski (2022), Sec. 4, with its masking views.

Data (Eq. 1): :math:`x = Mz + \epsilon`, a column-orthonormal dictionary :math:`M\in\mathbb R^{p\times d}`
(:math:`M^\top M = I_d`), a sparse latent :math:`z\in\mathbb R^d` and Gaussian noise
:math:`\epsilon\sim\mathcal N(0,\sigma_0^2 I_p)`. Views by random coordinate masking with *keep* probability
:math:`\alpha`: independent masks (Eq. 3) :math:`a_1 = D_1x,\ a_2 = D_2x`, or the dependent masks of
Wen and Li (Eq. 2) :math:`a_1 = 2Dx,\ a_2 = 2(I-D)x`.

One name for the latent sparsity in the whole book: ``sparsity`` is :math:`\beta = \Pr(z_i\neq0)`, the paper's
"Pr(sparse)" of Sec. 4.1. The paper's other two names translate as :math:`\kappa = \beta` (Assumption 1 of
Thm 3) and :math:`p_z = \beta/2` (the proof of Thm 2). ``keep`` is :math:`\alpha`; the paper's and the code's
"masking probability" is :math:`1-\alpha`.

Every function that draws takes an explicit CPU ``torch.Generator`` (:func:`clbook.generator`), draws on the CPU
and returns tensors on the device and in the dtype of :func:`clbook.setup`, so a seed gives the same sample on
every device. A leading ``batch`` dimension (one entry per seed) is available where a chapter trains or measures
many seeds at once. Used in Chapters 14-17.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from .. import linalg
from .._validate import as_tensor, check_choice, check_in_range, check_int, check_nonnegative
from ..config import defaults, rand, randint, randn

__all__ = [
    "LATENTS",
    "SCHEMES",
    "SparseCodingData",
    "dictionary",
    "sparse_latents",
    "sample",
    "latent_second_moment",
    "second_moment",
    "noise_std",
    "masks",
    "mask_moment",
    "views",
    "enumerate_latents",
    "enumerate_masks",
]

LATENTS = ("symmetric", "binary", "one_hot")
SCHEMES = ("independent", "dependent")


def _batch_shape(batch) -> tuple[int, ...]:
    if batch is None:
        return ()
    return (check_int("batch", batch, 1),)


def dictionary(p: int, d: int, *, generator: torch.Generator, batch: int | None = None) -> torch.Tensor:
    r"""A random column-orthonormal dictionary, the :math:`Q` factor of a Gaussian matrix (Sec. 4.2).

    .. math:: G_{ij}\sim\mathcal N(0,1),\quad G = QR,\quad M := Q\,\mathrm{diag}(\mathrm{sign}\,R_{jj}),\quad M^\top M = I_d .

    The sign fix makes :math:`M` Haar distributed on the Stiefel manifold; the draw is
    :func:`clbook.linalg.haar_orthonormal`.

    Parameters
    ----------
    p, d : int
        Input dimension and number of atoms, ``p >= d >= 1``.
    generator : torch.Generator
        A CPU generator.
    batch : int, optional
        Draw ``batch >= 1`` independent dictionaries, ``shape=[batch, p, d]``.

    Returns
    -------
    torch.Tensor, shape=[p, d] or [batch, p, d]
    """
    p, d = check_int("p", p, 1), check_int("d", d, 1)
    if d > p:
        raise ValueError(f"need p >= d for a column-orthonormal dictionary; got p = {p}, d = {d}.")
    return linalg.haar_orthonormal(p, d, generator=generator, batch=_batch_shape(batch))


def sparse_latents(n: int, d: int, *, sparsity: float, generator: torch.Generator, latent: str = "symmetric",
                   nonzero: bool = True, batch: int | None = None) -> torch.Tensor:
    r"""Sparse latents :math:`z\in\mathbb R^d`, one per row, with :math:`\beta = \Pr(z_i\neq0)` = ``sparsity``.

    * ``"symmetric"`` (Sec. 4.2, Assumption 1): :math:`z_i\in\{0,\pm1\}` i.i.d. with
      :math:`\Pr(z_i = 1) = \Pr(z_i=-1) = \beta/2` (the paper's :math:`\kappa/2` and :math:`p_z`);
    * ``"binary"`` (Sec. 4.1): :math:`z_i\in\{0,1\}` i.i.d. with :math:`\Pr(z_i = 1)=\beta`;
    * ``"one_hot"`` (Theorem 1): :math:`z = e_j` with :math:`j` uniform on :math:`[d]` (``sparsity`` is not used).

    With ``nonzero=True`` an all-zero row is redrawn until it has a non-zero entry (the footnote of Sec. 4.2),
    i.e. the law is conditioned on :math:`z\neq0`.

    Parameters
    ----------
    n, d : int
        Samples and atoms, both ``>= 1``.
    sparsity : float
        :math:`\beta\in[0, 1]` (``> 0`` with ``nonzero=True``).
    generator : torch.Generator
    latent : {"symmetric", "binary", "one_hot"}
    nonzero : bool
    batch : int, optional

    Returns
    -------
    torch.Tensor, shape=[n, d] or [batch, n, d]
    """
    n, d = check_int("n", n, 1), check_int("d", d, 1)
    check_choice("latent", latent, LATENTS)
    beta = check_in_range("sparsity", sparsity, 0.0, 1.0)
    shape = (*_batch_shape(batch), n, d)
    if latent == "one_hot":
        j = randint(0, d, shape[:-1], generator=generator)
        return torch.nn.functional.one_hot(j, d).to(defaults()[1])
    if nonzero and 1.0 - (1.0 - beta) ** d < 1e-6:
        raise ValueError(f"sparsity = {beta} makes z = 0 almost sure at d = {d} (Pr(z != 0) < 1e-6), which nonzero=True "
                         "excludes; use a larger sparsity.")

    def draw(size):
        u = rand(*size, generator=generator)
        if latent == "binary":
            return (u < beta).to(u.dtype)
        return (u < beta / 2).to(u.dtype) - ((u >= beta / 2) & (u < beta)).to(u.dtype)

    z = draw(shape)
    if nonzero:
        while True:
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
        Samples, input dimension, atoms (``p >= d >= 1``).
    sparsity : float
        :math:`\beta` of :func:`sparse_latents`.
    noise : float
        The noise standard deviation :math:`\sigma_0 \ge 0` (see :func:`noise_std` for the paper's three readings).
    generator : torch.Generator
        Draws, in this order: the dictionary (unless ``M`` is given), the latents, the noise.
    latent : str
        ``"symmetric"``, ``"binary"`` or ``"one_hot"``.
    M : torch.Tensor, optional
        A dictionary ``[p, d]`` (or ``[batch, p, d]``) to use instead of a fresh one; moved to the device and dtype
        of :func:`clbook.setup`.
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
        device, dtype = defaults()
        M = as_tensor("M", M, device=device, dtype=dtype)
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
    :math:`\mathbb E[zz^\top] = \beta I/(1-(1-\beta)^d)` when conditioned on :math:`z\neq0` (:math:`\beta I` without;
    the paper's :math:`2p_zI` in the proof of Thm 2 and :math:`\kappa I` in Assumption 1).
    For ``"binary"``: :math:`(\beta(1-\beta) I + \beta^2\mathbf 1\mathbf 1^\top)/q` with
    :math:`q = 1-(1-\beta)^d` (or 1). For ``"one_hot"``: :math:`I/d`.
    """
    d = check_int("d", d, 1)
    check_choice("latent", latent, LATENTS)
    beta = check_in_range("sparsity", sparsity, 0.0, 1.0)
    device, dtype = defaults()
    eye = torch.eye(d, device=device, dtype=dtype)
    if latent == "one_hot":
        return eye / d
    q = 1.0 - (1.0 - beta) ** d if nonzero else 1.0
    if nonzero and q == 0:
        raise ValueError("sparsity = 0 with nonzero=True has no valid latent; use sparsity > 0 or nonzero=False.")
    if latent == "symmetric":
        return beta * eye / q
    return (beta * (1 - beta) * eye + beta**2 * torch.ones_like(eye)) / q


def second_moment(M: torch.Tensor, *, sparsity: float, noise: float, latent: str = "symmetric",
                  nonzero: bool = True) -> torch.Tensor:
    r"""The input second moment of Eq. 1, :math:`\Sigma = \mathbb E[xx^\top] = M\,\mathbb E[zz^\top]M^\top + \sigma_0^2 I_p`.

    :math:`\mathbb E[zz^\top]` is :func:`latent_second_moment`. For the symmetric latent without the
    :math:`z\neq0` conditioning this is the paper's :math:`2p_zMM^\top + \sigma_0^2I_p` (App. C.1) with
    :math:`2p_z = \beta`. Computed on the device and in the dtype of ``M``.

    Parameters
    ----------
    M : torch.Tensor, shape=[..., p, d]
        A dictionary (a tensor, array or nested list; integers are converted on purpose).
    sparsity, noise : float
        :math:`\beta\in[0,1]` and :math:`\sigma_0\ge0`.

    Returns
    -------
    torch.Tensor, shape=[..., p, p]
    """
    M = as_tensor("M", M, min_ndim=2)
    sigma = check_nonnegative("noise", noise)
    moment = latent_second_moment(M.shape[-1], sparsity=sparsity, latent=latent, nonzero=nonzero).to(M)
    eye = torch.eye(M.shape[-2], device=M.device, dtype=M.dtype)
    return M @ moment @ M.transpose(-1, -2) + sigma**2 * eye


def noise_std(d: int, *, reading: str = "code") -> float:
    r"""The noise standard deviation :math:`\sigma_0` under the paper's three readings.

    * ``"sec4.1"``: :math:`\sigma_0 = \log d / d` (Sec. 4.1, ":math:`\sigma_0=\Theta(\log d/d)`");
    * ``"sec4.2"``: :math:`\sigma_0 = \sqrt{\log d/d}` (Sec. 4.2, ":math:`\mathcal N(0,\log d/d)`" read as a variance,
      the convention of Eq. 1);
    * ``"code"``: :math:`\sigma_0 = \sqrt{\log d}/d` (the authors' ``gen_epsilon``).

    ``d >= 2`` (at ``d = 1`` every reading is 0).
    """
    d = check_int("d", d, 2)
    check_choice("reading", reading, ("sec4.1", "sec4.2", "code"))
    return {"sec4.1": math.log(d) / d, "sec4.2": math.sqrt(math.log(d) / d), "code": math.sqrt(math.log(d)) / d}[reading]


def _shape(shape) -> tuple[int, ...]:
    try:
        shape = tuple(shape)
    except TypeError as exc:
        raise TypeError(f"shape must be a sequence of integers; got {shape!r}.") from exc
    return tuple(check_int(f"shape[{k}]", s, 1) for k, s in enumerate(shape))


def masks(shape, *, keep: float, generator: torch.Generator, scheme: str = "independent") -> tuple[torch.Tensor, torch.Tensor]:
    r"""The two diagonal masks, as the multipliers of the coordinates of :math:`x` (shape ``shape`` each).

    * ``"independent"`` (Eq. 3): :math:`D_1, D_2` independent, diagonal entries i.i.d. Bernoulli(:math:`\alpha`);
      returns :math:`(\mathrm{diag} D_1, \mathrm{diag} D_2)`.
    * ``"dependent"`` (Eq. 2): one :math:`D` with Bernoulli(:math:`\alpha`) entries; returns
      :math:`(2\,\mathrm{diag} D,\ 2(1-\mathrm{diag} D))`, so that :math:`a_1 + a_2 = 2x`.

    ``shape`` is a sequence of integers ``>= 1``; ``keep`` is :math:`\alpha\in[0, 1]`, the probability that a
    coordinate is *kept*.
    """
    shape = _shape(shape)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    check_choice("scheme", scheme, SCHEMES)
    if scheme == "independent":
        u = rand(2, *shape, generator=generator)
        return (u[0] < alpha).to(u.dtype), (u[1] < alpha).to(u.dtype)
    u = rand(*shape, generator=generator)
    D = (u < alpha).to(u.dtype)
    return 2 * D, 2 * (1 - D)


def mask_moment(p: int, *, keep: float, scheme: str = "independent") -> torch.Tensor:
    r""":math:`K_{kl} = \mathbb E[(D_1)_{kk}(D_2)_{ll}]` for the mask multipliers of :func:`masks` (``[p, p]``).

    Independent (Eq. 3): :math:`K = \alpha^2\mathbf 1\mathbf 1^\top`. Dependent (Eq. 2):
    :math:`K_{kl} = 4\alpha(1-\alpha)` for :math:`k\ne l` and :math:`0` on the diagonal (a coordinate is never in
    both views). Used by the population value of Eq. 12 (:func:`clbook.dynamics.dual.linear_population`).
    """
    p = check_int("p", p, 1)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    check_choice("scheme", scheme, SCHEMES)
    device, dtype = defaults()
    ones = torch.ones(p, p, device=device, dtype=dtype)
    if scheme == "independent":
        return alpha**2 * ones
    return 4 * alpha * (1 - alpha) * (ones - torch.eye(p, device=device, dtype=dtype))


def views(X: torch.Tensor, *, keep: float, generator: torch.Generator, scheme: str = "independent") -> tuple[torch.Tensor, torch.Tensor]:
    r"""Two masked views of each row of ``X`` (``[..., n, p]``, at least two axes).

    Eq. 3 or Eq. 2, fresh masks per sample. The masks are drawn in the dtype of :func:`clbook.setup` and moved to ``X``.
    """
    X = as_tensor("X", X, min_ndim=2)
    if X.numel() == 0:
        raise ValueError(f"X must hold at least one sample; got shape {list(X.shape)}.")
    d1, d2 = masks(X.shape, keep=keep, generator=generator, scheme=scheme)
    return d1.to(X) * X, d2.to(X) * X


def enumerate_latents(d: int, *, sparsity: float) -> tuple[torch.Tensor, torch.Tensor]:
    r"""All :math:`3^d` symmetric latents and their probabilities, for exact expectations (Chapter 16).

    Assumption 1 of Thm 3 without the :math:`z\neq0` conditioning: :math:`z_i = \pm1` with probability :math:`\beta/2`
    each, else 0 (the paper's :math:`\kappa = \beta`). ``1 <= d <= 8``. Returns ``(Z [3^d, d], prob [3^d])`` on the
    device and in the dtype of :func:`clbook.setup`.
    """
    d = check_int("d", d, 1, 8)
    beta = check_in_range("sparsity", sparsity, 0.0, 1.0)
    device, dtype = defaults()
    Z = torch.tensor(list(itertools.product((-1.0, 0.0, 1.0), repeat=d)), device=device, dtype=dtype)
    prob = torch.where(Z == 0, 1 - beta, beta / 2).prod(dim=1)
    return Z, prob


def enumerate_masks(d: int, *, keep: float) -> tuple[torch.Tensor, torch.Tensor]:
    r"""All :math:`2^d` diagonals of a mask with i.i.d.

    Bernoulli(:math:`\alpha`) entries (Eq. 3) and their probabilities, for exact expectations over masks (Chapters 15,
    16), ``1 <= d <= 12``.

    Returns ``(D [2^d, d], prob [2^d])`` on the device and in the dtype of :func:`clbook.setup`.
    """
    d = check_int("d", d, 1, 12)
    alpha = check_in_range("keep", keep, 0.0, 1.0)
    device, dtype = defaults()
    D = torch.tensor(list(itertools.product((0.0, 1.0), repeat=d)), device=device, dtype=dtype)
    prob = torch.where(D == 1, alpha, 1 - alpha).prod(dim=1)
    return D, prob
