r"""Latent categorical and latent summation models with exact enumeration.

Tian (2023), Sec. 3.1 and App. B.1 (Eqs. 8, 9, 43–45). :math:`U = [u_1,\dots,u_M]` has orthonormal
columns (or nearly orthonormal ones, for Chapter 8).

* **Latent categorical**: :math:`y\in\{1..M\}` with :math:`\mathbb P[y=m] = p_m` and :math:`x = u_y`.
* **Latent summation**: :math:`x = U\operatorname{diag}(s)\,y` with independent standardised Bernoulli
  :math:`y_m\in\{y_m^+, y_m^-\}`, :math:`y_m^+ = \sqrt{(1-q_m)/q_m}` with probability :math:`q_m`,
  :math:`y_m^- = -\sqrt{q_m/(1-q_m)}` otherwise (:math:`\mathbb E y_m = 0`, :math:`\mathbb E y_m^2 = 1`);
  the scales :math:`s_m` default to one (the paper's model).

Both are finite distributions, so every population quantity (the gated covariance :math:`A(w)` of
:mod:`clbook.dynamics.onelayer`, an energy) is an exact weighted sum over the ``atoms``:
:math:`M` atoms for the categorical model, :math:`2^M` for the summation model.

Used in Chapters 6–8.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from .._validate import check_int, check_tensor

__all__ = ["LatentModel", "random_orthonormal", "latent_categorical", "latent_summation", "sample",
           "eq8_prediction", "eq9_prediction", "summation_threshold"]


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
        return self.U.shape[1]

    @property
    def dim(self) -> int:
        return self.U.shape[0]


def random_orthonormal(d: int, m: int | None = None, *, generator: torch.Generator) -> torch.Tensor:
    """A ``[d, m]`` matrix with orthonormal columns (QR of a Gaussian matrix, signs fixed), drawn on the CPU."""
    from ..config import randn

    d = check_int("d", d, 1)
    m = d if m is None else check_int("m", m, 1, d)
    Q, R = torch.linalg.qr(randn(d, m, generator=generator))
    return Q * torch.sign(torch.diagonal(R)).unsqueeze(0)


def _check_U(U) -> torch.Tensor:
    U = check_tensor("U", U, ndim=2)
    if U.shape[1] > U.shape[0]:
        raise ValueError(f"U must be [d, M] with M <= d; got {tuple(U.shape)}.")
    return U


def latent_categorical(U, probs) -> LatentModel:
    r"""The latent categorical model: :math:`x = u_m` with probability :math:`p_m` (``M`` atoms)."""
    U = _check_U(U)
    p = check_tensor("probs", probs, ndim=1).to(U)
    if p.shape[0] != U.shape[1] or bool((p <= 0).any()) or abs(float(p.sum()) - 1) > 1e-9:
        raise ValueError(f"probs must be {U.shape[1]} positive numbers summing to 1; got {p.tolist()}.")
    return LatentModel(U.T.clone(), p, U, "categorical", p)


def latent_summation(U, q, *, scales=None) -> LatentModel:
    r"""The latent summation model, enumerated exactly: :math:`2^M` atoms :math:`x = U\operatorname{diag}(s)y`.

    Parameters
    ----------
    U : torch.Tensor, shape=[d, M]
        Patterns, ``M <= 16``.
    q : float or torch.Tensor, shape=[M]
        :math:`q_m\in(0, 1)`, the probability of the positive value :math:`y_m^+`.
    scales : torch.Tensor, shape=[M], optional
        Positive :math:`s_m` (default one), to break the degeneracy :math:`\operatorname{Cov}[x] = UU^\top`.
    """
    U = _check_U(U)
    M = check_int("M (columns of U)", U.shape[1], 1, 16)
    q = torch.full((M,), float(q), dtype=U.dtype) if not isinstance(q, torch.Tensor) else check_tensor("q", q, ndim=1).to(U)
    if q.shape[0] != M or bool(((q <= 0) | (q >= 1)).any()):
        raise ValueError(f"q must hold {M} values in (0, 1); got {q.tolist()}.")
    s = torch.ones(M, dtype=U.dtype) if scales is None else check_tensor("scales", scales, ndim=1).to(U)
    if s.shape[0] != M or bool((s <= 0).any()):
        raise ValueError(f"scales must hold {M} positive values; got {s.tolist()}.")
    signs = torch.tensor(list(itertools.product((1.0, 0.0), repeat=M)), dtype=U.dtype)   # 1 = positive value
    y = signs * torch.sqrt((1 - q) / q) - (1 - signs) * torch.sqrt(q / (1 - q))
    probs = torch.prod(signs * q + (1 - signs) * (1 - q), dim=1)
    return LatentModel((y * s) @ U.T, probs, U, "summation", q)


def sample(model: LatentModel, n: int, *, generator: torch.Generator) -> torch.Tensor:
    """``n`` i.i.d. draws from the model, shape ``[n, d]`` (indices drawn on the CPU)."""
    if not isinstance(model, LatentModel):
        raise TypeError(f"model must be a LatentModel; got {type(model).__name__}.")
    n = check_int("n", n, 1)
    idx = torch.multinomial(model.probs.cpu(), n, replacement=True, generator=generator)
    return model.atoms[idx.to(model.atoms.device)]


def eq8_prediction(model: LatentModel, m: int) -> torch.Tensor:
    r"""Eq. 8: :math:`A(u_m) = p_m(1-p_m)\,u_mu_m^\top` for the latent categorical model, ``[d, d]``."""
    if model.kind != "categorical":
        raise ValueError(f"Eq. 8 is for the latent categorical model; got kind = {model.kind!r}.")
    m = check_int("m", m, 0, model.num_patterns - 1)
    u, p = model.U[:, m], model.params[m]
    return p * (1 - p) * torch.outer(u, u)


def eq9_prediction(model: LatentModel, m: int) -> torch.Tensor:
    r"""Eq. 9: :math:`A(u_m) = (1-q_m)^2u_mu_m^\top + q_m(UU^\top - u_mu_m^\top)` (unit scales), ``[d, d]``.

    The paper writes :math:`I` for :math:`UU^\top`, i.e. :math:`M = d`.
    """
    if model.kind != "summation":
        raise ValueError(f"Eq. 9 is for the latent summation model; got kind = {model.kind!r}.")
    m = check_int("m", m, 0, model.num_patterns - 1)
    u, q = model.U[:, m], model.params[m]
    uu = torch.outer(u, u)
    return (1 - q) ** 2 * uu + q * (model.U @ model.U.T - uu)


def summation_threshold() -> float:
    r""":math:`q^* = (3-\sqrt5)/2`: :math:`u_m` is the distinct top eigenvector of Eq. 9 iff :math:`q_m < q^*`."""
    return (3 - math.sqrt(5)) / 2
