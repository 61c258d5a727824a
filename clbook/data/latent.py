r"""Latent categorical and latent summation models with exact enumeration.

Tian (2023), Sec. 3.1 and App. B.1 (Eqs. 8, 9, 43–45). :math:`U = [u_1,\dots,u_M]` has orthonormal
columns (or nearly orthonormal ones, for Chapter 8); draw one with :func:`clbook.linalg.haar_orthonormal`.

* **Latent categorical**: :math:`y\in\{1..M\}` with :math:`\mathbb P[y=m] = p_m` and :math:`x = u_y`.
* **Latent summation**: :math:`x = U\operatorname{diag}(s)\,y` with independent standardised Bernoulli
  :math:`y_m\in\{y_m^+, y_m^-\}`, :math:`y_m^+ = \sqrt{(1-q_m)/q_m}` with probability :math:`q_m`,
  :math:`y_m^- = -\sqrt{q_m/(1-q_m)}` otherwise (:math:`\mathbb E y_m = 0`, :math:`\mathbb E y_m^2 = 1`);
  the scales :math:`s_m` default to one (the paper's model).

Both are finite distributions, so every population quantity (the gated covariance :math:`A(w)` of
:mod:`clbook.dynamics.onelayer`, an energy) is an exact weighted sum over the ``atoms``:
:math:`M` atoms for the categorical model, :math:`2^M` for the summation model. Every tensor of a model lives on
the device and has the dtype of ``U``.

Used in Chapters 6–8.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from .._validate import as_tensor, check_int

__all__ = ["LatentModel", "latent_categorical", "latent_summation", "sample", "eq8_prediction", "eq9_prediction",
           "summation_threshold"]




@dataclass(frozen=True)
class LatentModel:
    """A finite data distribution: ``atoms [n, d]`` with probabilities ``probs [n]``.

    ``U [d, M]`` holds the patterns, ``kind`` is ``"categorical"`` or ``"summation"`` and ``params``
    the class probabilities :math:`p_m` or the Bernoulli parameters :math:`q_m` (``[M]``).
    """

    atoms: torch.Tensor
    probs: torch.Tensor
    U: torch.Tensor
    kind: str
    params: torch.Tensor

    @property
    def num_patterns(self) -> int:
        """The number of latent patterns (columns of ``U``)."""
        return self.U.shape[1]

    @property
    def dim(self) -> int:
        """The input dimension (rows of ``U``)."""
        return self.U.shape[0]


def _check_U(U) -> torch.Tensor:
    U = as_tensor("U", U, ndim=2)
    if U.shape[1] < 1 or U.shape[1] > U.shape[0]:
        raise ValueError(f"U must be [d, M] with 1 <= M <= d; got shape {tuple(U.shape)}.")
    return U


def _vector(name: str, value, M: int, like: torch.Tensor) -> torch.Tensor:
    """``value`` as ``[M]`` on the device and dtype of ``like`` (a number is repeated ``M`` times)."""
    v = as_tensor(name, value, dtype=like.dtype, device=like.device)
    if v.ndim == 0:
        v = v.expand(M).clone()
    if v.shape != (M,):
        raise ValueError(f"{name} must be a number or hold M = {M} values; got shape {tuple(v.shape)}.")
    return v


def latent_categorical(U, probs) -> LatentModel:
    r"""The latent categorical model: :math:`x = u_m` with probability :math:`p_m` (``M`` atoms).

    Parameters
    ----------
    U : torch.Tensor, shape=[d, M]
        Patterns, :math:`1\le M\le d`, finite (a list or an array is converted to a tensor).
    probs : torch.Tensor, shape=[M]
        Positive class probabilities summing to one (within 1e-9).
    """
    U = _check_U(U)
    p = _vector("probs", probs, U.shape[1], U)
    if bool((p <= 0).any()) or abs(float(p.sum()) - 1) > 1e-9:
        raise ValueError(f"probs must be {U.shape[1]} positive numbers summing to 1; got {p.tolist()}.")
    return LatentModel(U.T.clone(), p, U, "categorical", p)


def latent_summation(U, q, *, scales=None) -> LatentModel:
    r"""The latent summation model, enumerated exactly: :math:`2^M` atoms :math:`x = U\operatorname{diag}(s)y`.

    Parameters
    ----------
    U : torch.Tensor, shape=[d, M]
        Patterns, :math:`1\le M\le\min(d, 16)`, finite.
    q : float or torch.Tensor, shape=[M]
        :math:`q_m\in(0, 1)`, the probability of the positive value :math:`y_m^+`.
    scales : torch.Tensor, shape=[M], optional
        Positive :math:`s_m` (default one), to break the degeneracy :math:`\operatorname{Cov}[x] = UU^\top`.
    """
    U = _check_U(U)
    M = U.shape[1]
    if M > 16:
        raise ValueError(f"U may have at most M = 16 columns (2^M atoms are enumerated); got M = {M}.")
    q = _vector("q", q, M, U)
    if bool(((q <= 0) | (q >= 1)).any()):
        raise ValueError(f"q must hold {M} values in (0, 1); got q = {q.tolist()}.")
    s = torch.ones(M, dtype=U.dtype, device=U.device) if scales is None else _vector("scales", scales, M, U)
    if bool((s <= 0).any()):
        raise ValueError(f"scales must hold {M} positive values; got scales = {s.tolist()}.")
    signs = torch.tensor(list(itertools.product((1.0, 0.0), repeat=M)), dtype=U.dtype, device=U.device)  # 1 = y_m^+
    y = signs * torch.sqrt((1 - q) / q) - (1 - signs) * torch.sqrt(q / (1 - q))
    probs = torch.prod(signs * q + (1 - signs) * (1 - q), dim=1)
    return LatentModel((y * s) @ U.T, probs, U, "summation", q)


def _check_model(model) -> LatentModel:
    if not isinstance(model, LatentModel):
        raise TypeError(f"model must be a LatentModel (from latent_categorical or latent_summation); got {type(model).__name__}.")
    return model


def sample(model: LatentModel, n: int, *, generator: torch.Generator) -> torch.Tensor:
    """``n >= 1`` i.i.d. draws from the model, shape ``[n, d]`` (indices drawn on the CPU with ``generator``)."""
    from ..config import check_generator

    model = _check_model(model)
    n = check_int("n", n, 1)
    check_generator(generator)
    idx = torch.multinomial(model.probs.detach().cpu().double(), n, replacement=True, generator=generator)
    return model.atoms[idx.to(model.atoms.device)]


def eq8_prediction(model: LatentModel, m: int) -> torch.Tensor:
    r"""Eq. 8: :math:`A(u_m) = p_m(1-p_m)\,u_mu_m^\top` for the latent categorical model, ``[d, d]``; ``0 <= m < M``."""
    model = _check_model(model)
    if model.kind != "categorical":
        raise ValueError(f"Eq. 8 is for the latent categorical model; got a model of kind = {model.kind!r}.")
    m = check_int("m", m, 0, model.num_patterns - 1)
    u, p = model.U[:, m], model.params[m]
    return p * (1 - p) * torch.outer(u, u)


def eq9_prediction(model: LatentModel, m: int) -> torch.Tensor:
    r"""Eq. 9: :math:`A(u_m) = (1-q_m)^2u_mu_m^\top + q_m(UU^\top - u_mu_m^\top)` (unit scales), ``[d, d]``.

    The paper writes :math:`I` for :math:`UU^\top`, i.e. :math:`M = d`. ``0 <= m < M``.
    """
    model = _check_model(model)
    if model.kind != "summation":
        raise ValueError(f"Eq. 9 is for the latent summation model; got a model of kind = {model.kind!r}.")
    m = check_int("m", m, 0, model.num_patterns - 1)
    u, q = model.U[:, m], model.params[m]
    uu = torch.outer(u, u)
    return (1 - q) ** 2 * uu + q * (model.U @ model.U.T - uu)


def summation_threshold() -> float:
    r""":math:`q^* = (3-\sqrt5)/2`: :math:`u_m` is the distinct top eigenvector of Eq. 9 iff :math:`q_m < q^*`."""
    return (3 - math.sqrt(5)) / 2
