r"""Small linear algebra used across the book: Haar draws, retractions to the Stiefel manifold, normalisation.

One implementation of each, in torch, on the device and dtype of its input (draws: on the CPU with an explicit
generator, then moved to the device of :func:`clbook.setup`, so samples do not depend on the device).

* :func:`haar_orthonormal`: a Haar-random ``[n, k]`` matrix with orthonormal columns (uniform on the Stiefel
  manifold), batched;
* :func:`retract`: back to the Stiefel manifold, QR (signs fixed) or polar;
* :func:`stiefel_error`: :math:`\max|W^\top W - I|`;
* :func:`unit_rows`, :func:`unit_columns`, :func:`unit_frobenius`: the normalisation family (rows, columns, the
  whole matrix), with a floor on the norm; :func:`normalise_unchecked` the same without checks or floor;
* :func:`single_thread`: a context with one torch thread and one BLAS thread (small problems run faster on one).

Used in Chapters 6-8 (random patterns), 11-13 (Stiefel dynamics) and 14-17 (dictionaries).
"""
from __future__ import annotations

import contextlib

import torch

from ._validate import check_choice, check_int, check_positive, check_tensor

__all__ = ["haar_orthonormal", "retract", "stiefel_error", "unit_rows", "unit_columns", "unit_frobenius", "single_thread",
           "RETRACTIONS"]

RETRACTIONS = ("qr", "polar")


def haar_orthonormal(n: int, k: int | None = None, *, generator: torch.Generator, batch: tuple[int, ...] = (), device=None,
                     dtype=None) -> torch.Tensor:
    r"""A Haar-random matrix ``[*batch, n, k]`` with orthonormal columns, :math:`Q^\top Q = I_k`.

    The Q factor of a standard Gaussian ``[n, k]`` matrix, with the signs of the columns chosen so that
    :math:`\operatorname{diag}(R) > 0`; this makes the law exactly Haar (Mezzadri 2007). Drawn in float64 on the
    CPU with ``generator``, then moved to ``device``/``dtype`` (default: those of :func:`clbook.setup`).

    Parameters
    ----------
    n : int
        Rows (the ambient dimension), ``n >= 1``.
    k : int, optional
        Columns, ``1 <= k <= n`` (default ``n``: a Haar orthogonal matrix).
    generator : torch.Generator
        A CPU generator (:func:`clbook.generator`).
    batch : tuple of int
        Leading batch shape.
    """
    from .config import randn

    n = check_int("n", n, 1)
    k = n if k is None else check_int("k", k, 1)
    if k > n:
        raise ValueError(f"need k <= n for orthonormal columns; got n = {n}, k = {k}.")
    batch = tuple(check_int(f"batch[{i}]", b, 1) for i, b in enumerate(batch))
    G = randn(*batch, n, k, generator=generator, device="cpu", dtype=torch.float64)
    Q = _qr_signed(G)
    from .config import target_device_dtype

    dev, dt = target_device_dtype(device, dtype)
    return Q.to(device=dev, dtype=dt)


def _qr_signed(W: torch.Tensor) -> torch.Tensor:
    Q, R = torch.linalg.qr(W)
    d = torch.diagonal(R, dim1=-2, dim2=-1)
    if bool((d == 0).any()):
        raise ValueError("W must have full column rank to be retracted.")
    return Q * torch.sign(d).unsqueeze(-2)


def retract(W: torch.Tensor, *, method: str = "qr", check: bool = True) -> torch.Tensor:
    r"""Map a full-column-rank tall matrix ``[..., n, k]`` back to the Stiefel manifold.

    ``"qr"``: the Q factor with :math:`\operatorname{diag}(R) > 0` (unique); ``"polar"``: the nearest point in the
    Frobenius norm, :math:`W(W^\top W)^{-1/2} = UV^\top` from the thin SVD :math:`W = USV^\top`.
    ``check=False`` skips the finiteness scan of ``W`` (a training loop that already checks its iterates).
    """
    check_choice("method", method, RETRACTIONS)
    if not isinstance(check, bool):
        raise TypeError(f"check must be True or False; got check = {check!r}.")
    W = check_tensor("W", W, finite=check)
    if W.ndim < 2 or W.shape[-1] > W.shape[-2] or W.shape[-1] == 0:
        raise ValueError(f"W must be a tall matrix [..., n, k] with 1 <= k <= n; got shape {tuple(W.shape)}.")
    if method == "qr":
        return _qr_signed(W)
    U, S, Vh = torch.linalg.svd(W, full_matrices=False)
    if bool((S[..., -1] <= 0).any()):
        raise ValueError("W must have full column rank to be retracted.")
    return U @ Vh


def stiefel_error(W: torch.Tensor) -> float:
    r"""Distance from the constraint, :math:`\max_{ij}|(W^\top W - I)_{ij}|` (over a batch too)."""
    W = check_tensor("W", W)
    if W.ndim < 2:
        raise ValueError(f"W must be a matrix [..., n, k]; got shape {tuple(W.shape)}.")
    eye = torch.eye(W.shape[-1], dtype=W.dtype, device=W.device)
    return float((W.transpose(-1, -2) @ W - eye).abs().max())


NORMALISATIONS = ("rows", "columns", "frobenius")


def _norms(W: torch.Tensor, over: str) -> torch.Tensor:
    """The norms that the ``over`` normalisation divides by, broadcastable against ``W`` (one formula each)."""
    if over == "rows":
        return W.norm(dim=-1, keepdim=True)
    if over == "columns":
        return W.norm(dim=-2, keepdim=True)
    return W.pow(2).sum(dim=(-2, -1), keepdim=True).sqrt()


def _unit_checked(name: str, W, over: str, eps: float) -> torch.Tensor:
    """The checked form shared by :func:`unit_rows`, :func:`unit_columns` and :func:`unit_frobenius`."""
    W = check_tensor(name, W)
    if over == "rows" and W.ndim < 1:
        raise ValueError(f"{name} must have at least one dimension.")
    if over != "rows" and W.ndim < 2:
        raise ValueError(f"{name} must be a matrix [..., n, k]; got shape {tuple(W.shape)}.")
    eps = check_positive("eps", eps)
    norms = _norms(W, over)
    if W.numel() and bool(torch.isinf(norms).any()):
        # a squared norm overflowed (finite entries): the scale-safe form, exact at any finite scale, where it did
        return torch.where(torch.isinf(norms), _unit_any_scale(W, over), W / norms.clamp_min(eps))
    return W / norms.clamp_min(eps)


def _unit_any_scale(W: torch.Tensor, over: str) -> torch.Tensor:
    """The ``over`` normalisation exact at any finite scale, through the one scale-safe row normalisation."""
    from .losses._safe import unit_rows_any_scale  # imported here: clbook.losses imports this module

    if over == "rows":
        return unit_rows_any_scale(W)
    if over == "columns":
        return unit_rows_any_scale(W.transpose(-1, -2)).transpose(-1, -2)
    return unit_rows_any_scale(W.reshape(*W.shape[:-2], -1)).reshape(W.shape)


def unit_rows(X: torch.Tensor, *, eps: float = 1e-12) -> torch.Tensor:
    r"""Each row divided by its :math:`\ell_2` norm (at least ``eps``): :math:`x_i/\max(\|x_i\|, \epsilon)`.

    Differentiable; a zero row stays zero. Works on ``[..., n, d]``.
    """
    return _unit_checked("X", X, "rows", eps)


def unit_columns(W: torch.Tensor, *, eps: float = 1e-12) -> torch.Tensor:
    r"""Each column divided by its :math:`\ell_2` norm (at least ``eps``), on ``[..., n, k]``."""
    return _unit_checked("W", W, "columns", eps)


def unit_frobenius(W: torch.Tensor, *, eps: float = 1e-12) -> torch.Tensor:
    r"""Each matrix divided by its Frobenius norm (at least ``eps``), on ``[..., n, k]``."""
    return _unit_checked("W", W, "frobenius", eps)


def normalise_unchecked(W: torch.Tensor, over: str) -> torch.Tensor:
    r"""The ``over`` normalisation (:data:`NORMALISATIONS`) without checks or floor, for the models' loops.

    ``rows``: :math:`w_i/\|w_i\|`; ``columns``: each column over its norm; ``frobenius``: the matrix over
    :math:`\|W\|_F` (last two axes). The checked forms are :func:`unit_rows`, :func:`unit_columns` and
    :func:`unit_frobenius`; all four divide by the same norms.
    """
    return W / _norms(W, over)


@contextlib.contextmanager
def single_thread():
    """Run the block with one torch thread and one BLAS/OpenMP thread (restored afterwards).

    Small matrices (up to a few hundred rows) are often 10-30 times faster this way on a 2-core machine.
    """
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(before)
