r"""Two-layer ReLU networks on orthogonal mixtures: sticky weights and diversity (Tian 2022, α-CL, Sec. 5, App. A.3, C).

ReLU2Layer is :math:`\mathbf z = W_2\,h(W_1\mathbf x)` with :math:`h(t) = \max(t, 0)`, :math:`W_1\in\mathbb R^{K\times d}`,
:math:`W_2\in\mathbb R^{n_2\times K}`, each layer on its Frobenius sphere (the set :math:`\Theta` of Eq. 11). Under
Assumption 1 (:mod:`clbook.data.modes`) and :math:`W_1\ge 0` its energy is the linear one,

.. math::

    \mathcal E_\alpha = \operatorname{tr}(W_2W_1X_\alpha W_1^\top W_2^\top),\qquad X_\alpha = \mathbb C_\alpha[\mathbf x],

(Lemma 3) and its gradient dynamics are the linear dynamics
:math:`\dot W_1 = 2W_2^\top W_2W_1X_\alpha`, :math:`\dot W_2 = 2W_2W_1X_\alpha W_1^\top` with the **sticky weight
rule**: an entry of :math:`W_1` that reaches zero stays zero (Theorem 4).

This module holds

* :func:`forward`, :func:`energy` (the network itself, ReLU or linear, differentiable) and :func:`linear_energy`;
* :func:`sticky_ascent`: projected gradient ascent of the linear dynamics with (or without) the sticky rule,
  vectorised over a batch of initialisations (Theorems 4–6);
* :func:`relu_ascent`: the same ascent on the ReLU network itself, by autograd (the left side of Theorem 4);
* :func:`numerical_rank`, :func:`active_modes`, :func:`lemma15_bound`, :func:`make_problem` and
  :func:`fig3_run` (the training behind Fig. 3 of the paper, drawn by :mod:`clbook.viz.relu2layer`).

The simulators run with one thread (:func:`clbook.linalg.single_thread`): thousands of steps on matrices of a few
dozen entries, where a second thread only adds synchronisation, and the results then do not depend on the thread
count. Used in Chapter 3.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch

from .. import activations, covariance, losses
from .._validate import check_choice, check_int, check_pair, check_positive, check_tensor
from ..config import generator as make_generator
from ..config import randn
from ..data.modes import ModeBatch, orthogonal_modes
from ..linalg import normalise_unchecked, single_thread

__all__ = [
    "forward", "energy", "linear_energy", "StickyRun", "sticky_ascent", "ReluRun", "relu_ascent",
    "numerical_rank", "active_modes", "lemma15_bound", "Problem", "make_problem", "random_start", "fig3_run",
]

ACTIVATIONS = activations.supported("relu", "linear")


def _check_weights(W1, W2):
    W1 = check_tensor("W1", W1)
    W2 = check_tensor("W2", W2)
    if W1.ndim < 2 or W2.ndim != W1.ndim or W1.shape[:-2] != W2.shape[:-2] or W2.shape[-1] != W1.shape[-2]:
        raise ValueError(
            f"need W1 [..., K, d] and W2 [..., n2, K] with the same leading shape; got {tuple(W1.shape)} and {tuple(W2.shape)}."
        )
    return W1, W2


def forward(W1: torch.Tensor, W2: torch.Tensor, x: torch.Tensor, *, activation: str = "relu") -> torch.Tensor:
    r"""ReLU2Layer output :math:`\mathbf z = W_2\,h(W_1\mathbf x)` for every row of ``x``, shape ``[n, n2]``.

    ``W1 [K, d]``, ``W2 [n2, K]``, ``x [n, d]``; ``activation="linear"`` drops :math:`h`.
    """
    W1, W2 = _check_weights(W1, W2)
    x = check_tensor("x", x, ndim=2)
    check_choice("activation", activation, ACTIVATIONS)
    if W1.ndim != 2 or x.shape[1] != W1.shape[1]:
        raise ValueError(f"need W1 [K, d] and x [n, d] with the same d; got {tuple(W1.shape)} and {tuple(x.shape)}.")
    pre = x @ W1.T
    hidden = activations.apply_unchecked(pre, activation)
    return hidden @ W2.T


def energy(W1, W2, alpha, x1, x2, *, activation: str = "relu") -> torch.Tensor:
    r"""The energy :math:`\mathcal E_\alpha = \operatorname{tr}\mathbb C_\alpha[\mathbf z]` of the network's outputs on both views.

    Differentiable in ``W1`` and ``W2`` (autograd gives the network's true gradient, gates included).
    """
    x1, x2 = check_pair(x1, x2, names=("x1", "x2"))
    return covariance.energy(alpha, forward(W1, W2, x1, activation=activation), forward(W1, W2, x2, activation=activation))


def linear_energy(W1: torch.Tensor, W2: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    r"""Lemma 3's formula :math:`\operatorname{tr}(W_2W_1XW_1^\top W_2^\top)`, batched over leading dimensions, shape ``[...]``."""
    W1, W2 = _check_weights(W1, W2)
    X = check_tensor("X", X)
    if X.ndim < 2 or X.shape[-2:] != (W1.shape[-1], W1.shape[-1]):
        raise ValueError(f"X must be [..., d, d] with d = {W1.shape[-1]}; got {tuple(X.shape)}.")
    P = W2 @ W1
    return ((P @ X) * P).sum(dim=(-2, -1))


@dataclass(frozen=True)
class StickyRun:
    r"""Result of :func:`sticky_ascent`.

    Attributes
    ----------
    W1, W2 : torch.Tensor
        Final weights, ``[S, K, d]`` and ``[S, n2, K]``.
    energy : torch.Tensor
        Final energy per start, ``[S]``.
    history : torch.Tensor
        Energy every ``record_every`` steps, ``[T, S]``.
    trajectory : torch.Tensor or None
        ``W1`` every ``record_every`` steps, ``[T, S, K, d]``, when ``keep_trajectory``.
    last_change : torch.Tensor
        :math:`\max|\Delta W|` of the last step, per start, ``[S]``.
    steps : int
    stopping_reason : str
        ``"converged"`` when every start moved less than ``tol`` in its last step, else ``"max_steps"``.
    """

    W1: torch.Tensor
    W2: torch.Tensor
    energy: torch.Tensor
    history: torch.Tensor
    trajectory: torch.Tensor | None
    last_change: torch.Tensor
    steps: int
    stopping_reason: str


def sticky_ascent(W1, W2, X, *, eta: float, steps: int, sticky: bool = True, train_top: bool = True,
                  record_every: int = 1, keep_trajectory: bool = False, tol: float = 0.0) -> StickyRun:
    r"""Projected gradient ascent of the linear ReLU2Layer dynamics, with the sticky weight rule (Theorem 4).

    One step, for every start at once (``W1 [S, K, d]``, ``W2 [S, n2, K]``):

    .. math::

        G_1 = 2W_2^\top W_2W_1X,\quad G_2 = 2W_2W_1XW_1^\top,\quad
        W_1\leftarrow\frac{[W_1 + \eta\,\mathbb I(W_1>0)\odot G_1]_+}{\|\cdot\|_F},\quad
        W_2\leftarrow\frac{W_2 + \eta G_2}{\|\cdot\|_F}.

    With ``sticky=False`` it is plain projected ascent of the linear network (no mask, no clipping), whose local
    maxima are the aligned rank-one solutions of Theorem 3. With ``train_top=False``, ``W2`` is held fixed.

    Parameters
    ----------
    W1, W2 : torch.Tensor
        Initial weights, each normalised here to unit Frobenius norm. With ``sticky``, ``W1`` must be ``>= 0``.
    X : torch.Tensor, shape=[d, d] or [S, d, d]
        The input contrastive covariance :math:`X_\alpha` (symmetric), shared or one per start.
    eta : float
        Step size, > 0.
    steps : int
        Number of steps, >= 1.
    record_every : int
        Record the energy (and ``W1`` when ``keep_trajectory``) every this many steps.
    tol : float
        Stop early once every start moves less than ``tol`` (max-abs) in one step; 0 runs all steps.
    """
    W1, W2 = _check_weights(W1, W2)
    if W1.ndim != 3:
        raise ValueError(f"W1 must be [S, K, d] (a batch of starts); got shape {tuple(W1.shape)}.")
    X = check_tensor("X", X)
    d = W1.shape[-1]
    if X.shape not in ((d, d), (W1.shape[0], d, d)) or not torch.allclose(X, X.transpose(-1, -2), rtol=1e-12, atol=1e-12):
        raise ValueError(f"X must be symmetric, [d, d] or [S, d, d] with d = {d}, S = {W1.shape[0]}; got shape {tuple(X.shape)}.")
    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, minimum=1)
    record_every = check_int("record_every", record_every, minimum=1)
    if tol < 0 or not math.isfinite(tol):
        raise ValueError(f"tol must be finite and >= 0; got tol = {tol}.")
    if sticky and bool((W1 < 0).any()):
        raise ValueError("with sticky=True, W1 must be >= 0 (clip it first: Lemma 3 says the clipped net is the same).")
    with single_thread():
        return sticky_ascent_unchecked(W1, W2, X, eta=eta, steps=steps, sticky=sticky, train_top=train_top,
                                       record_every=record_every, keep_trajectory=keep_trajectory, tol=tol)


def _unit_frobenius(W):
    return W / np.sqrt((W * W).sum(axis=(-2, -1), keepdims=True)) if isinstance(W, np.ndarray) else \
        normalise_unchecked(W, "frobenius")


def _absmax(A):
    return np.abs(A).max(axis=(-2, -1)) if isinstance(A, np.ndarray) else A.abs().amax(dim=(-2, -1))


def _energy_unchecked(W1, W2, X):
    P = W2 @ W1
    return ((P @ X) * P).sum(axis=(-2, -1))


def sticky_ascent_unchecked(W1, W2, X, *, eta: float, steps: int, sticky: bool = True, train_top: bool = True,
                            record_every: int = 1, keep_trajectory: bool = False, tol: float = 0.0) -> StickyRun:
    """The loop of :func:`sticky_ascent`, without its checks, on torch tensors or on numpy arrays.

    ``W1 [S, K, d]``, ``W2 [S, n2, K]`` and ``X`` are all torch tensors or all numpy arrays (float64); the same steps
    run on either (torch for the package and the chapters, numpy for a panel's small matrices, where torch's
    per-operation overhead is most of the time). The result holds torch tensors.
    """
    numpy = isinstance(W1, np.ndarray)
    W1, W2 = _unit_frobenius(W1), _unit_frobenius(W2)
    history, traj = [], []
    change = np.full(W1.shape[0], np.inf) if numpy else torch.full((W1.shape[0],), math.inf, dtype=W1.dtype,
                                                                    device=W1.device)
    reason, t = "max_steps", 0
    for t in range(1, steps + 1):
        top = W2.mT @ W2
        G1 = 2 * top @ W1 @ X
        new1 = W1 + eta * ((W1 > 0) * G1 if sticky else G1)
        new1 = _unit_frobenius((np.maximum(new1, 0) if numpy else new1.clamp_min(0)) if sticky else new1)
        new2 = _unit_frobenius(W2 + eta * 2 * W2 @ W1 @ X @ W1.mT) if train_top else W2
        if tol > 0 or t == steps:
            change = (np.maximum if numpy else torch.maximum)(_absmax(new1 - W1), _absmax(new2 - W2))
        W1, W2 = new1, new2
        if t % record_every == 0:
            history.append(_energy_unchecked(W1, W2, X))
            if keep_trajectory:
                traj.append(W1)
        if tol > 0 and bool((change < tol).all()):
            reason = "converged"
            break
    tensor = (lambda A: torch.from_numpy(np.ascontiguousarray(A))) if numpy else (lambda A: A)
    stack = (lambda As: tensor(np.stack(As))) if numpy else torch.stack
    energy = _energy_unchecked(W1, W2, X)
    hist = stack(history) if history else tensor(energy)[None]
    return StickyRun(tensor(W1), tensor(W2), tensor(energy), hist, stack(traj) if traj else None, tensor(change), t,
                     reason)


@dataclass(frozen=True)
class ReluRun:
    """Result of :func:`relu_ascent`: ``relu(W1)`` every ``record_every`` steps (``[T, K, d]``), final ``W1, W2``."""

    clipped_trajectory: torch.Tensor
    W1: torch.Tensor
    W2: torch.Tensor
    steps: int


def relu_ascent(W1, W2, alpha, x1, x2, *, eta: float, steps: int, record_every: int = 1,
                activation: str = "relu") -> ReluRun:
    r"""Gradient ascent on the energy of the network itself, by autograd (the ReLU side of Theorem 4).

    .. math::

        W_l \leftarrow W_l + \eta\,\nabla_{W_l}\mathcal E_\alpha,\qquad
        W_1\leftarrow W_1/\|[W_1]_+\|_F,\quad W_2\leftarrow W_2/\|W_2\|_F .

    ``W1`` may go negative; by Lemma 3 only :math:`[W_1]_+` matters, so the layer is normalised by
    :math:`\|[W_1]_+\|_F`. With a ``ReLU`` and Assumption-1 data the recorded :math:`[W_1]_+` equals the trajectory
    of :func:`sticky_ascent` with :math:`X_\alpha = \mathbb C_\alpha[\mathbf x]`.
    """
    W1, W2 = _check_weights(W1, W2)
    if W1.ndim != 2:
        raise ValueError(f"W1 must be [K, d] (one start); got shape {tuple(W1.shape)}.")
    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, minimum=1)
    record_every = check_int("record_every", record_every, minimum=1)
    energy(W1, W2, alpha, x1, x2, activation=activation)  # validates every argument once
    h = functools.partial(activations.apply_unchecked, name=activation)
    laplacian, rows = covariance.laplacian_and_rows(alpha, diagonal=False)  # the one C_α, prepared once for all steps

    def energy_fast(W1, W2):  # covariance.energy without re-validating alpha, x1, x2 at every step
        return covariance.energy_unchecked(laplacian, rows, h(x1 @ W1.T) @ W2.T, h(x2 @ W1.T) @ W2.T)

    W1 = (W1 / W1.clamp_min(0).norm()).detach().clone().requires_grad_()
    W2 = (W2 / W2.norm()).detach().clone().requires_grad_()
    traj = []
    with single_thread():
        for t in range(1, steps + 1):
            g1, g2 = torch.autograd.grad(energy_fast(W1, W2), (W1, W2))
            with torch.no_grad():
                new1 = W1 + eta * g1
                new1 = new1 / new1.clamp_min(0).norm()
                new2 = W2 + eta * g2
                W1.copy_(new1)
                W2.copy_(new2 / new2.norm())
            if t % record_every == 0:
                traj.append(W1.detach().clamp_min(0))
    return ReluRun(torch.stack(traj), W1.detach(), W2.detach(), steps)


def numerical_rank(W: torch.Tensor, *, rtol: float = 1e-6) -> torch.Tensor:
    r"""Number of singular values above ``rtol`` times the largest, per matrix of ``W [..., p, q]`` (``int64``)."""
    W = check_tensor("W", W)
    if W.ndim < 2:
        raise ValueError(f"W must have at least 2 dimensions; got shape {tuple(W.shape)}.")
    s = torch.linalg.svdvals(W)
    return (s > rtol * s[..., :1]).sum(dim=-1)


def active_modes(W1: torch.Tensor, *, atol: float = 1e-9) -> torch.Tensor:
    r"""Number of input coordinates (modes) that some hidden node still uses: columns of ``W1 [..., K, d]`` with an entry above ``atol``."""
    W1 = check_tensor("W1", W1)
    if W1.ndim < 2:
        raise ValueError(f"W1 must have at least 2 dimensions; got shape {tuple(W1.shape)}.")
    return (W1.abs().amax(dim=-2) > atol).sum(dim=-1)


def lemma15_bound(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    r"""Lemma 15's upper bound on :math:`\min_m u_m`, for ``v > 0`` and :math:`u^\top v = 0`, batched over rows.

    .. math::

        \min_m u_m \le -\frac{\min_m v_m}{d-k}\,\frac{\|u\|_\infty}{\|v\|_\infty},

    with :math:`k` the number of nonnegative entries of :math:`u`. Returns the right-hand side, shape ``[...]``.
    """
    u = check_tensor("u", u)
    v = check_tensor("v", v)
    if u.shape != v.shape:
        raise ValueError(f"u and v must have the same shape; got {tuple(u.shape)} and {tuple(v.shape)}.")
    if bool((v <= 0).any()):
        raise ValueError("v must be entrywise > 0.")
    negatives = (u < 0).sum(dim=-1).clamp_min(1).to(u.dtype)
    return -(v.amin(dim=-1) / negatives) * (u.abs().amax(dim=-1) / v.abs().amax(dim=-1))


@dataclass(frozen=True)
class Problem:
    r"""An Assumption-1 batch, its pairwise importance and :math:`X_\alpha = \mathbb C_\alpha[\mathbf x]`."""

    batch: ModeBatch
    alpha: torch.Tensor
    X: torch.Tensor


def make_problem(*, modes: int, gamma_range: tuple[float, float], n: int = 64, seed: int = 0,
                 temperature: float = 0.5, embed_dim: int = 6, mix_fraction: float = 0.0) -> Problem:
    r"""Assumption-1 data with InfoNCE weights (:math:`\epsilon = 0`) of a random ``embed_dim``-dimensional embedding.

    The weights are fixed, strictly positive, and not uniform, as in the theory of Sec. 5 (which holds for any
    fixed :math:`\alpha > 0`). Mode magnitudes run from 2 to 1 with 20 % jitter (:func:`clbook.data.modes.orthogonal_modes`).
    """
    gen = make_generator(check_int("seed", seed, minimum=0))
    with single_thread():
        batch = orthogonal_modes(n, modes=modes, generator=gen, gamma_range=gamma_range, mix_fraction=mix_fraction)
        Z1 = randn(n, check_int("embed_dim", embed_dim, minimum=1), generator=gen)
        Z2 = randn(n, embed_dim, generator=gen)
        alpha = losses.infonce(check_positive("temperature", temperature)).importance(Z1, Z2)
        X = covariance.contrastive_covariance(alpha, batch.x1, batch.x2)
    return Problem(batch, alpha, 0.5 * (X + X.T))


def random_start(starts: int, hidden: int, dim: int, out: int, *, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``starts`` random initialisations: :math:`W_1 = |G_1|` (nonnegative), :math:`W_2 = G_2`, Gaussian, unit Frobenius norm."""
    gen = make_generator(check_int("seed", seed, minimum=0))
    W1 = randn(check_int("starts", starts, minimum=1), check_int("hidden", hidden, minimum=1),
               check_int("dim", dim, minimum=1), generator=gen).abs()
    W2 = randn(starts, check_int("out", out, minimum=1), hidden, generator=gen)
    return normalise_unchecked(W1, "frobenius"), normalise_unchecked(W2, "frobenius")


def fig3_run(gamma_low: float = 0.05, gamma_high: float = 4.0, modes: int = 8, hidden: int = 10, seed: int = 0,
             *, out: int = 20, steps: int = 3000, eta: float = 0.2) -> tuple[Problem, StickyRun]:
    r"""The training behind Fig. 3: sticky ascent of ReLU2Layer (``hidden`` nodes, ``out`` outputs) from one random start.

    Data: :func:`make_problem` with ``modes`` modes, :math:`\gamma\sim\mathcal U(\gamma_{lo}, \gamma_{hi})` and ``seed``;
    start: :func:`random_start` with ``seed + 1``; :math:`X_\alpha` is divided by its largest entry (same optima,
    rescaled time). Cached: the same arguments return the same (read-only) result.
    """
    gamma_low, gamma_high = check_positive("gamma_low", gamma_low), check_positive("gamma_high", gamma_high)
    if gamma_low > gamma_high:
        raise ValueError(f"need 0 < gamma_low <= gamma_high; got gamma_low = {gamma_low}, gamma_high = {gamma_high}.")
    return _fig3_run(gamma_low, gamma_high, check_int("modes", modes, 1), check_int("hidden", hidden, 1), check_int("seed", seed, 0),
                     check_int("out", out, 1), check_int("steps", steps, 1), check_positive("eta", eta))


@functools.lru_cache(maxsize=16)
def _fig3_run(gamma_low, gamma_high, modes, hidden, seed, out, steps, eta):
    prob = make_problem(modes=modes, gamma_range=(gamma_low, gamma_high), seed=seed)
    W1, W2 = random_start(1, hidden, modes, out, seed=seed + 1)
    run = sticky_ascent(W1, W2, prob.X / prob.X.abs().max(), eta=eta, steps=steps, record_every=steps)
    return prob, run
