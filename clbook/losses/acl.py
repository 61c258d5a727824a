r"""The α-CL loss family :math:`\mathcal L_{\phi,\psi}` and its named members.

Tian (2022), *Understanding Deep Contrastive Learning via Coordinate-wise Optimization*,
Eq. 1:

.. math::

    \mathcal L_{\phi,\psi}(\theta) = \sum_{i=1}^N \phi(\xi_i), \qquad
    \xi_i = \sum_{j\neq i} \psi(d_i^2 - d_{ij}^2),

with :math:`d_{ij}^2 = \tfrac12\|z[i]-z[j]\|^2` (first views of distinct samples) and
:math:`d_i^2 = \tfrac12\|z[i]-z[i']\|^2` (the two views of sample :math:`i`).

A member is a pair :math:`(\phi, \psi)` of increasing differentiable functions. Members whose
:math:`\psi` is an exponential, :math:`\psi(x) = e^{x/\tau + c}`, are evaluated in log space
(``logsumexp``), so they stay finite and free of NaN at :math:`\tau = 10^{-3}`.

Used in Chapters 1 and 4.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

from .._validate import check_nonnegative, check_pair, check_positive
from ._safe import check_finite_result

__all__ = [
    "pair_distances",
    "margins",
    "ContrastiveLoss",
    "ExponentialLoss",
    "GeneralLoss",
    "infonce",
    "infonce_reference",
    "mine",
    "triplet",
    "soft_triplet",
    "n_plus_one_tuplet",
    "lifted_structured",
    "modified_triplet",
    "quadratic",
    "FAMILY",
    "member",
]


def pair_distances(z1: torch.Tensor, z2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Half squared distances of a batch of paired views.

    Parameters
    ----------
    z1, z2 : torch.Tensor, shape=[n, d]
        First and second views; row ``i`` of both comes from sample ``i``.

    Returns
    -------
    d_pos : torch.Tensor, shape=[n]
        :math:`d_i^2 = \tfrac12\|z_1[i]-z_2[i]\|^2`.
    d_neg : torch.Tensor, shape=[n, n]
        :math:`d_{ij}^2 = \tfrac12\|z_1[i]-z_1[j]\|^2` (zero diagonal).

    Raises
    ------
    ValueError
        When a half squared distance overflows the dtype (entries of about :math:`10^{154}` in float64,
        :math:`1.8\times10^{19}` in float32): the loss of such views is not representable, so it is an error naming
        ``z1, z2``, never a NaN further on.
    """
    z1, z2 = check_pair(z1, z2)
    d_pos = 0.5 * (z1 - z2).pow(2).sum(dim=1)
    d_neg = 0.5 * (z1.unsqueeze(1) - z1.unsqueeze(0)).pow(2).sum(dim=2)
    check_finite_result(d_pos, "the half squared distance d_i^2", "z1, z2", "rescale the views")
    check_finite_result(d_neg, "the half squared distance d_ij^2", "z1, z2", "rescale the views")
    return d_pos, d_neg


def margins(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    r"""The matrix :math:`u_{ij} = d_i^2 - d_{ij}^2` that every member takes as input, shape ``[n, n]``.

    The diagonal (``j = i``) is not part of the family and is set to zero; members mask it.
    """
    d_pos, d_neg = pair_distances(z1, z2)
    u = d_pos.unsqueeze(1) - d_neg
    return u * (1 - torch.eye(u.shape[0], dtype=u.dtype, device=u.device))


def _offdiag(n: int, like: torch.Tensor) -> torch.Tensor:
    return ~torch.eye(n, dtype=torch.bool, device=like.device)


class ContrastiveLoss:
    r"""A member :math:`(\phi, \psi)` of the family of Eq. 1.

    Call it on two views to get the loss; :meth:`importance` gives the pairwise importance
    :math:`\alpha_{ij} = \phi'(\xi_i)\psi'(d_i^2-d_{ij}^2)` of Eq. 4 from the hand-derived
    derivatives (tests compare it with autograd).
    """

    def row_losses(self, u: torch.Tensor) -> torch.Tensor:
        r""":math:`\phi(\xi_i)` for each anchor ``i``, from the margin matrix ``u``."""
        raise NotImplementedError

    def importance_from_margins(self, u: torch.Tensor) -> torch.Tensor:
        r""":math:`\alpha_{ij}` from the margin matrix ``u`` (zero diagonal)."""
        raise NotImplementedError

    def __call__(self, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        r""":math:`\mathcal L_{\phi,\psi} = \sum_i \phi(\xi_i)` (Eq. 1), a scalar.

        A loss that overflows the dtype (finite views, a value that is not representable) raises a ValueError that
        names the inputs and the parameters, never returns NaN or inf.
        """
        return check_finite_result(self.row_losses(margins(z1, z2)).sum(), f"the {self.name} loss",
                                   f"z1, z2 ({self._parameters()})", "rescale the views or change the parameters")

    def importance(self, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        r"""Pairwise importance :math:`\alpha_{ij}(\theta)` (Eq. 4), shape ``[n, n]``, zero diagonal."""
        return check_finite_result(self.importance_from_margins(margins(z1, z2)), f"the {self.name} importance",
                                   f"z1, z2 ({self._parameters()})", "rescale the views or change the parameters")

    def _parameters(self) -> str:
        params = getattr(self, "params", None) or {}
        return ", ".join(f"{k} = {v:g}" for k, v in params.items()) or "no parameters"

    def __repr__(self) -> str:
        return f"{self.name}: phi(x) = {self.phi_text}, psi(x) = {self.psi_text}"


@dataclass(repr=False)
class ExponentialLoss(ContrastiveLoss):
    r"""A member with :math:`\psi(x) = e^{x/\tau_\psi + c}`, evaluated in log space.

    With :math:`s_i = \log \xi_i` computed by ``logsumexp``, the member needs
    :math:`\phi` as a function of :math:`s` and :math:`g(s) = \xi\phi'(\xi)`, because

    .. math::

        \alpha_{ij} = \phi'(\xi_i)\,\psi'(u_{ij})
                    = \frac{\xi_i\phi'(\xi_i)}{\tau_\psi}\,
                      \operatorname{softmax}_{j\neq i}\big(u_{ij}/\tau_\psi\big).
    """

    name: str
    phi_of_log: Callable[[torch.Tensor], torch.Tensor]
    xi_dphi_of_log: Callable[[torch.Tensor], torch.Tensor]
    psi_temperature: float = 1.0
    psi_shift: float = 0.0
    phi_text: str = ""
    psi_text: str = ""
    params: dict = field(default_factory=dict)

    def log_xi(self, u: torch.Tensor) -> torch.Tensor:
        r"""Log of the partition term :math:`\xi_i` per anchor, from the margins ``u [n, n]`` (diagonal excluded)."""
        mask = _offdiag(u.shape[0], u)
        logits = u / self.psi_temperature + self.psi_shift
        if not bool(torch.isfinite(logits.detach()).all()):
            raise ValueError(f"temperature: the logits u/temperature of {self.name} overflow {str(u.dtype).replace('torch.', '')} "
                             f"(max |u| = {float(u.detach().abs().max()):.3g}, temperature = {self.psi_temperature:g}); "
                             "rescale z1, z2 or raise the temperature.")
        return torch.logsumexp(logits.masked_fill(~mask, -math.inf), dim=1)

    def row_losses(self, u):
        r"""The loss of each anchor, :math:`\phi(\xi_i)`, from the margins ``u [n, n]``."""
        return self.phi_of_log(self.log_xi(u))

    def importance_from_margins(self, u):
        r"""The pairwise importance :math:`\alpha_{ij}` that this member induces, from the margins ``u [n, n]``."""
        mask = _offdiag(u.shape[0], u)
        logits = (u / self.psi_temperature).masked_fill(~mask, -math.inf)
        weights = torch.softmax(logits, dim=1)
        scale = self.xi_dphi_of_log(self.log_xi(u)) / self.psi_temperature
        return scale.unsqueeze(1) * weights


@dataclass(repr=False)
class GeneralLoss(ContrastiveLoss):
    r"""A member given by :math:`\phi, \phi', \psi, \psi'` directly (non-exponential :math:`\psi`)."""

    name: str
    phi: Callable[[torch.Tensor], torch.Tensor]
    dphi: Callable[[torch.Tensor], torch.Tensor]
    psi: Callable[[torch.Tensor], torch.Tensor]
    dpsi: Callable[[torch.Tensor], torch.Tensor]
    phi_text: str = ""
    psi_text: str = ""
    params: dict = field(default_factory=dict)

    def xi(self, u):
        r"""The partition term :math:`\xi_i = \sum_{j\ne i}\psi(u_{ij})` per anchor, from the margins ``u [n, n]``."""
        mask = _offdiag(u.shape[0], u).to(u.dtype)
        return (self.psi(u) * mask).sum(dim=1)

    def row_losses(self, u):
        r"""The loss of each anchor, :math:`\phi(\xi_i)`, from the margins ``u [n, n]``."""
        return self.phi(self.xi(u))

    def importance_from_margins(self, u):
        r"""The pairwise importance :math:`\alpha_{ij}` that this member induces, from the margins ``u [n, n]``."""
        mask = _offdiag(u.shape[0], u).to(u.dtype)
        return self.dphi(self.xi(u)).unsqueeze(1) * self.dpsi(u) * mask


def infonce(temperature: float = 0.5, eps: float = 0.0) -> ExponentialLoss:
    r"""Generalised InfoNCE (Eq. 2): :math:`\phi(x) = \tau\log(\epsilon + x)`, :math:`\psi(x) = e^{x/\tau}`.

    ``eps = 0`` is SimCLR's convention (the positive is not in the denominator), ``eps = 1``
    MoCo's. Then :math:`\xi\phi'(\xi) = \tau\xi/(\epsilon+\xi)`.
    """
    tau = check_positive("temperature", temperature)
    eps = check_nonnegative("eps", eps)
    log_eps = math.log(eps) if eps > 0 else -math.inf

    def phi_of_log(s):
        return tau * torch.logaddexp(s, torch.full_like(s, log_eps))

    def xi_dphi_of_log(s):
        return tau * torch.sigmoid(s - log_eps)

    return ExponentialLoss(
        name="InfoNCE", phi_of_log=phi_of_log, xi_dphi_of_log=xi_dphi_of_log, psi_temperature=tau,
        phi_text=f"τ log(ε + x), τ = {tau:g}, ε = {eps:g}", psi_text="exp(x/τ)",
        params={"temperature": tau, "eps": eps},
    )


def infonce_reference(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5, eps: float = 0.0) -> torch.Tensor:
    r"""InfoNCE in its textbook form (left side of Eq. 2), as a cross-entropy over logits.

    .. math::

        -\tau\sum_i \log\frac{e^{-d_i^2/\tau}}{\epsilon e^{-d_i^2/\tau} + \sum_{j\neq i} e^{-d_{ij}^2/\tau}}

    An independent implementation used to test :func:`infonce`.
    """
    tau = check_positive("temperature", temperature)
    eps = check_nonnegative("eps", eps)
    d_pos, d_neg = pair_distances(z1, z2)
    n = d_pos.shape[0]
    neg = (-d_neg / tau).masked_fill(~_offdiag(n, d_neg), -math.inf)
    pos = -d_pos / tau
    parts = [neg]
    if eps > 0:
        parts.append((pos + math.log(eps)).unsqueeze(1))
    log_denominator = torch.logsumexp(torch.cat(parts, dim=1), dim=1)
    return -tau * (pos - log_denominator).sum()


def mine() -> ExponentialLoss:
    r"""MINE-style member: :math:`\phi(x) = \log x`, :math:`\psi(x) = e^x`; :math:`\alpha` rows sum to 1."""
    return ExponentialLoss(
        name="MINE", phi_of_log=lambda s: s, xi_dphi_of_log=torch.ones_like,
        phi_text="log x", psi_text="exp(x)",
    )


def soft_triplet(temperature: float = 0.5, margin: float = 0.1) -> ExponentialLoss:
    r"""Soft triplet: :math:`\phi(x) = \tau\log(1+x)`, :math:`\psi(x) = e^{x/\tau + \epsilon}`."""
    tau = check_positive("temperature", temperature)
    margin = check_nonnegative("margin", margin)
    return ExponentialLoss(
        name="Soft triplet", phi_of_log=lambda s: tau * F.softplus(s), xi_dphi_of_log=lambda s: tau * torch.sigmoid(s),
        psi_temperature=tau, psi_shift=margin,
        phi_text=f"τ log(1 + x), τ = {tau:g}", psi_text=f"exp(x/τ + ε), ε = {margin:g}",
        params={"temperature": tau, "margin": margin},
    )


def n_plus_one_tuplet() -> ExponentialLoss:
    r"""(N+1)-tuplet: :math:`\phi(x) = \log(1+x)`, :math:`\psi(x) = e^x`.

    The paper's table is garbled in this row; :math:`\psi = e^x` is read from Sohn (2016)'s
    N-pair loss :math:`\log(1 + \sum_j e^{s_j - s_+})`.
    """
    return ExponentialLoss(
        name="N+1 tuplet", phi_of_log=F.softplus, xi_dphi_of_log=torch.sigmoid,
        phi_text="log(1 + x)", psi_text="exp(x)",
    )


def lifted_structured(margin: float = 0.1) -> ExponentialLoss:
    r"""Lifted structured: :math:`\phi(x) = [\log x]_+^2`, :math:`\psi(x) = e^{x+\epsilon}`.

    :math:`\xi\phi'(\xi) = 2[\log\xi]_+`, so anchors with :math:`\xi_i < 1` get zero weight.
    """
    margin = check_nonnegative("margin", margin)
    return ExponentialLoss(
        name="Lifted structured", phi_of_log=lambda s: torch.relu(s).pow(2), xi_dphi_of_log=lambda s: 2 * torch.relu(s),
        psi_shift=margin, phi_text="[log x]₊²", psi_text=f"exp(x + ε), ε = {margin:g}",
        params={"margin": margin},
    )


def triplet(margin: float = 0.1) -> GeneralLoss:
    r"""Triplet: :math:`\phi(x) = x`, :math:`\psi(x) = [x + \epsilon]_+`; :math:`\alpha_{ij} = \mathbb 1[u_{ij} + \epsilon > 0]`."""
    margin = check_nonnegative("margin", margin)
    return GeneralLoss(
        name="Triplet", phi=lambda x: x, dphi=torch.ones_like,
        psi=lambda u: torch.relu(u + margin), dpsi=lambda u: (u + margin > 0).to(u.dtype),
        phi_text="x", psi_text=f"[x + ε]₊, ε = {margin:g}", params={"margin": margin},
    )


def modified_triplet(slope: float = 5.0) -> GeneralLoss:
    r"""Modified triplet (Coria et al. 2020, Eq. 10): :math:`\phi(x) = x`, :math:`\psi(x) = \mathrm{sigmoid}(cx)`."""
    c = check_positive("slope", slope)

    def dpsi(u):
        s = torch.sigmoid(c * u)
        return c * s * (1 - s)

    return GeneralLoss(
        name="Modified triplet", phi=lambda x: x, dphi=torch.ones_like,
        psi=lambda u: torch.sigmoid(c * u), dpsi=dpsi,
        phi_text="x", psi_text=f"sigmoid(c x), c = {c:g}", params={"slope": c},
    )


def quadratic() -> GeneralLoss:
    r"""Linear :math:`\phi` and :math:`\psi` (triplet contrastive, Ji et al. 2021): constant :math:`\alpha = 1`.

    :math:`\mathcal L = \sum_i\sum_{j\neq i}(d_i^2 - d_{ij}^2)`, the paper's :math:`\mathcal L_{quadratic}`
    (which the paper does not define; this is the reading its Sec. 3 suggests).
    """
    return GeneralLoss(
        name="Quadratic", phi=lambda x: x, dphi=torch.ones_like, psi=lambda u: u, dpsi=torch.ones_like,
        phi_text="x", psi_text="x",
    )


FAMILY: dict[str, Callable[..., ContrastiveLoss]] = {
    "InfoNCE": infonce,
    "MINE": mine,
    "Triplet": triplet,
    "Soft triplet": soft_triplet,
    "N+1 tuplet": n_plus_one_tuplet,
    "Lifted structured": lifted_structured,
    "Modified triplet": modified_triplet,
    "Quadratic": quadratic,
}
"""The members of the table in Fig. 1 (right) of the α-CL paper, by name, with default parameters."""


def member(name: str, **params) -> ContrastiveLoss:
    """Build the member called ``name`` (a key of :data:`FAMILY`) with ``params``."""
    if name not in FAMILY:
        raise ValueError(f"name must be one of {list(FAMILY)}; got name = {name!r}.")
    import inspect

    allowed = set(inspect.signature(FAMILY[name]).parameters)
    unknown = set(params) - allowed
    if unknown:
        raise ValueError(f"member {name!r} takes parameters {sorted(allowed)}; got unknown {sorted(unknown)}.")
    return FAMILY[name](**params)
