r"""Pairwise importance :math:`\alpha`: from a loss member, and as the min player's solution.

Tian (2022), α-CL: Eq. 4 (:math:`\alpha_{ij} = \phi'(\xi_i)\psi'(d_i^2-d_{ij}^2)`) and
Theorem 2 (for :math:`\psi(x) = e^{x/\tau}`, :math:`\alpha` solves the entropy-regularised
problem :math:`\min_{\alpha\in\mathcal A}\mathcal E_\alpha(\theta) - \mathcal R_H(\alpha)`).

Used in Chapters 1 and 4.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import minimize

from ._validate import check_pair, check_positive, check_tensor
from .losses import ContrastiveLoss, pair_distances

__all__ = [
    "pairwise_importance", "energy_coefficients", "entropy_min_player", "solve_min_player_numerically",
    "loss_and_energy_gradients",
]


def pairwise_importance(loss: ContrastiveLoss, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    r"""Eq. 4: :math:`\alpha_{ij}(\theta) = \phi'(\xi_i)\psi'(d_i^2 - d_{ij}^2)`, shape ``[n, n]``, zero diagonal."""
    if not isinstance(loss, ContrastiveLoss):
        raise TypeError(f"loss must be a clbook.losses member (e.g. clbook.losses.infonce()); got {type(loss).__name__}.")
    return loss.importance(z1, z2)


def energy_coefficients(z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    r"""The coefficients :math:`c_{ij} = 2(d_{ij}^2 - d_i^2)` with :math:`\mathcal E_\alpha = \sum_{i\neq j} c_{ij}\alpha_{ij}`.

    The energy is linear in :math:`\alpha` (Eqs. 18–20 of the paper). Zero diagonal.
    """
    d_pos, d_neg = pair_distances(z1, z2)
    c = 2 * (d_neg - d_pos.unsqueeze(1))
    return c * (1 - torch.eye(c.shape[0], dtype=c.dtype, device=c.device))


def entropy_min_player(z1: torch.Tensor, z2: torch.Tensor, temperature: float, row_sums: torch.Tensor) -> torch.Tensor:
    r"""Closed-form solution of the min player (8a) with :math:`\mathcal R = \mathcal R_H` (Theorem 2).

    .. math::

        \alpha_{ij} = s_i\,\operatorname{softmax}_{j\neq i}\big((d_i^2 - d_{ij}^2)/\tau\big)
        = \arg\min_{\alpha_{i\cdot}\ge 0,\ \sum_j\alpha_{ij} = s_i}
          \sum_{j\neq i} c_{ij}\alpha_{ij} + 2\tau\sum_{j\neq i}\alpha_{ij}\log\alpha_{ij}.

    Parameters
    ----------
    z1, z2 : torch.Tensor, shape=[n, d]
    temperature : float
        :math:`\tau > 0` of the regulariser :math:`\mathcal R_H = 2\tau\sum_i H(\alpha_{i\cdot})`.
    row_sums : torch.Tensor, shape=[n]
        The feasible set's row sums :math:`s_i = \tau^{-1}\xi_i\phi'(\xi_i) > 0`.
    """
    z1, z2 = check_pair(z1, z2)
    tau = check_positive("temperature", temperature)
    row_sums = check_tensor("row_sums", row_sums, ndim=1)
    if row_sums.shape[0] != z1.shape[0] or bool((row_sums < 0).any()):
        raise ValueError(f"row_sums must be a non-negative vector of length n = {z1.shape[0]}; got shape {tuple(row_sums.shape)}.")
    c = energy_coefficients(z1, z2)
    n = c.shape[0]
    logits = (-c / (2 * tau)).masked_fill(torch.eye(n, dtype=torch.bool, device=c.device), -torch.inf)
    return row_sums.unsqueeze(1) * torch.softmax(logits, dim=1)


def solve_min_player_numerically(costs, row_sum: float, temperature: float, *, tol: float = 1e-12) -> np.ndarray:
    r"""Solve one row of the min player with a generic optimiser, for validation.

    .. math::

        \min_{a\ge 0,\ \sum_j a_j = s}\ \sum_j c_j a_j + 2\tau\sum_j a_j\log a_j

    The scaled simplex is charted by :math:`a = s\,\mathrm{softmax}(w)` and the objective is
    minimised over :math:`w` by scipy's trust-region Newton method (``trust-exact``) from the
    uniform point, with gradient and Hessian by the chain rule. Nothing in the solver knows the
    closed form; the chart only excludes the boundary, where the minimiser cannot lie (the
    entropy's derivative diverges there).

    Parameters
    ----------
    costs : array_like, shape=[m]
        The coefficients :math:`c_j` of one row (diagonal removed).
    row_sum : float
        :math:`s > 0`.
    temperature : float
        :math:`\tau > 0`.

    Returns
    -------
    numpy.ndarray, shape=[m]
        The minimiser found.
    """
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim != 1 or c.size < 1 or not np.all(np.isfinite(c)):
        raise ValueError(f"costs must be a finite 1-D array; got shape {c.shape}.")
    s = check_positive("row_sum", row_sum)
    tau = check_positive("temperature", temperature)

    def parts(w):
        log_p = w - np.logaddexp.reduce(w)
        p = np.exp(log_p)
        g = c + 2 * tau * (np.log(s) + log_p + 1)  # d objective / d a
        return p, log_p, g

    def objective(w):
        p, log_p, _ = parts(w)
        return s * (c @ p) + 2 * tau * s * (p @ (np.log(s) + log_p))

    def gradient(w):
        p, _, g = parts(w)
        return s * (p * g - p * (p @ g))

    def hessian(w):
        p, _, g = parts(w)
        jac = s * (np.diag(p) - np.outer(p, p))
        pg = p @ g
        curvature = s * (np.diag(p * g) - np.outer(p * g, p) - np.outer(p, p * g) + 2 * pg * np.outer(p, p) - pg * np.diag(p))
        return jac.T @ np.diag(2 * tau / (s * p)) @ jac + curvature

    result = minimize(objective, np.zeros(c.size), jac=gradient, hess=hessian, method="trust-exact",
                      options={"gtol": tol, "maxiter": 1000})
    return s * np.exp(result.x - np.logaddexp.reduce(result.x))


def loss_and_energy_gradients(loss: ContrastiveLoss, encoder, x1: torch.Tensor, x2: torch.Tensor, *,
                              stop_gradient: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The two sides of Theorem 1 for an encoder: :math:`\nabla_\theta\mathcal L` and :math:`\nabla_\theta\mathcal E_\alpha`.

    Computes :math:`\nabla_\theta\mathcal L_{\phi,\psi}` and :math:`\nabla_\theta\mathcal E_{\mathrm{sg}(\alpha)}`
    with :math:`\alpha = \alpha(\theta)` from Eq. 4, both by autograd, as flat vectors over the
    encoder's parameters. Theorem 1 says the first equals :math:`-\tfrac12` the second.
    With ``stop_gradient=False`` the energy's gradient also flows through :math:`\alpha(\theta)`
    (the "backprop α" variant of the paper's Sec. 6).

    Parameters
    ----------
    loss : ContrastiveLoss
    encoder : torch.nn.Module
        Maps ``[n, d_in]`` to ``[n, d]``.
    x1, x2 : torch.Tensor, shape=[n, d_in]
        The two views of the batch.
    """
    from .covariance import energy

    if not isinstance(loss, ContrastiveLoss):
        raise TypeError(f"loss must be a clbook.losses member; got {type(loss).__name__}.")
    if not isinstance(encoder, torch.nn.Module):
        raise TypeError(f"encoder must be a torch.nn.Module; got {type(encoder).__name__}.")
    x1, x2 = check_pair(x1, x2, names=("x1", "x2"))
    params = [p for p in encoder.parameters() if p.requires_grad]
    z1, z2 = encoder(x1), encoder(x2)
    grad_loss = torch.autograd.grad(loss(z1, z2), params)
    z1, z2 = encoder(x1), encoder(x2)
    weights = loss.importance(z1, z2)
    if stop_gradient:
        weights = weights.detach()
    grad_energy = torch.autograd.grad(energy(weights, z1, z2), params)
    flat = lambda grads: torch.cat([g.reshape(-1) for g in grads])  # noqa: E731
    return flat(grad_loss), flat(grad_energy)
