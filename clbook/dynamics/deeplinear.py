r"""Deep linear contrastive learning (DeepLin): the max player with a fixed pairwise importance.

Tian (2022), α-CL, Sec. 4 and App. A.2. The encoder is :math:`z = W_L\cdots W_1 x` (Eq. 10) with
:math:`W_l\in\mathbb R^{n_l\times n_{l-1}}`; for a fixed :math:`\alpha` the energy is

.. math::

    \mathcal E_\alpha(\theta) = \operatorname{tr}\big(W X_\alpha W^\top\big),\qquad
    W = W_{>0},\quad X_\alpha = \mathbb C_\alpha[x],

and gradient ascent on :math:`\tfrac12\mathcal E_\alpha` is the flow of Lemma 1,

.. math::

    \dot W_l = W_{>l}^\top W_{>l}\,W_l\,F_{l-1},\qquad F_{l-1} = \mathbb C_\alpha[f_{l-1}] = W_{<l}X_\alpha W_{<l}^\top.

This module holds the flow's right-hand side (batched over random starts), the balance matrices,
the constraint sets of Eq. 11 (unit Frobenius norm per layer) and of Corollary 3 (rows of norm
:math:`1/\sqrt{n_l}`), projected training with a result dataclass (:func:`train`), the unconstrained
flow with its finite-time blow-up (:func:`solve_unconstrained`, :func:`aligned_blowup_time`), the
normalisation Jacobians of Lemma 6 and the norm-conservation measurements of Lemmas 2, 7 and 10
(:func:`normalization_jacobian`, :func:`weight_gradient_cosines`), and a generator of contrastive
batches with a controllable eigen-gap and augmentation strength (:func:`contrastive_batch`).

Weights are lists of tensors of shape ``[S, n_l, n_{l-1}]`` (``S`` independent starts, vectorised). The simulators
run with one thread (:func:`clbook.linalg.single_thread`): thousands of products of 10x10 matrices, where a second
thread only adds synchronisation, and the results then do not depend on the thread count. Figure 2 is drawn by
:mod:`clbook.viz.deeplinear`. Used in Chapter 2.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch

from .. import activations
from .. import alpha as _alpha
from .. import covariance as _covariance
from .. import losses as _losses
from .._validate import check_choice, check_int, check_nonnegative, check_positive, check_tensor
from ..config import defaults, randn
from ..linalg import single_thread

__all__ = [
    "NORMALIZATIONS", "ContrastiveBatch", "contrastive_batch", "set_top_gap", "random_weights", "project",
    "end_to_end", "energy", "flow", "balance_matrices", "tangent", "TrainResult", "train", "rank_one_report",
    "euler", "BlowupResult", "solve_unconstrained", "aligned_blowup_time", "aligned_weights", "normalization_jacobian",
    "weight_gradient_cosines", "normalized_mlp_gradients", "figure2_data",
]

NORMALIZATIONS = ("frobenius", "filter")
"""``frobenius``: :math:`\\|W_l\\|_F = 1` for every layer (the set :math:`\\Theta` of Eq. 11); ``filter``: rows of
:math:`W_l` have norm :math:`1/\\sqrt{n_l}` for :math:`l < L` and :math:`\\|W_L\\|_F = 1` (Corollary 3)."""


# ----------------------------------------------------------------------------------------------------------------
# data: a batch, its contrastive covariance, and spectral surgery
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ContrastiveBatch:
    r"""Two views of a batch, their pairwise importance and the input contrastive covariance :math:`X_\alpha`."""

    x1: torch.Tensor
    x2: torch.Tensor
    alpha: torch.Tensor
    X: torch.Tensor

    @property
    def eigenvalues(self) -> torch.Tensor:
        r"""Eigenvalues of :math:`X_\alpha`, descending."""
        return torch.linalg.eigvalsh(self.X).flip(0)


def contrastive_batch(n: int = 32, d: int = 10, *, gap: float = 1.0, augmentation: float = 0.5,
                      temperature: float = 0.5, seed: int = 0) -> ContrastiveBatch:
    r"""A batch with a controllable eigen-gap and augmentation strength, and its :math:`X_\alpha = \mathbb C_\alpha[x]`.

    First views :math:`x[i] = D g_i` with :math:`g_i\sim\mathcal N(0, I_d)` and scales
    :math:`D = \operatorname{diag}(1 + \text{gap}, 1, 0.9, \dots)` decreasing linearly to 0.3; second views
    :math:`x[i'] = x[i] + \text{augmentation}\cdot\epsilon_i` with isotropic Gaussian :math:`\epsilon_i`. The weights
    :math:`\alpha` are InfoNCE's (:math:`\epsilon = 0`, Eq. 6) at ``temperature`` evaluated on the inputs, so every
    :math:`\alpha_{ij} > 0`. Strong augmentation makes :math:`X_\alpha` indefinite (the positive-pair term of Eq. 5
    subtracts :math:`\sum_i\beta_i(x[i]-x[i'])(x[i]-x[i'])^\top`).

    Parameters
    ----------
    n, d : int
        Batch size (>= 3) and input dimension (>= 2).
    gap : float
        Extra scale of the first input coordinate (>= 0).
    augmentation : float
        Standard deviation of the view noise (>= 0).
    temperature : float
        InfoNCE temperature for :math:`\alpha` (> 0).
    seed : int
        Seed of the CPU generator.
    """
    n = check_int("n", n, 3)
    d = check_int("d", d, 2)
    gap = check_nonnegative("gap", gap)
    augmentation = check_nonnegative("augmentation", augmentation)
    temperature = check_positive("temperature", temperature)
    seed = check_int("seed", seed, 0)
    gen = torch.Generator().manual_seed(seed)
    device, dtype = defaults()
    scales = torch.cat([torch.tensor([1.0 + gap]), torch.linspace(1.0, 0.3, d - 1, dtype=torch.float64)])
    x1 = randn(n, d, generator=gen) * scales.to(device=device, dtype=dtype)
    x2 = x1 + augmentation * randn(n, d, generator=gen)
    weights = _alpha.pairwise_importance(_losses.infonce(temperature, 0.0), x1, x2)
    X = _covariance.contrastive_covariance(weights, x1, x2)
    return ContrastiveBatch(x1, x2, weights, 0.5 * (X + X.T))


def set_top_gap(X: torch.Tensor, gap: float) -> torch.Tensor:
    r"""Replace the top eigenvalue of symmetric ``X`` by :math:`\lambda_2 + \text{gap}`, keeping the eigenvectors.

    ``gap = 0`` gives a duplicated top eigenvalue: the counterexample after Theorem 3.
    """
    X = check_tensor("X", X, ndim=2)
    gap = check_nonnegative("gap", gap)
    if X.shape[0] != X.shape[1] or X.shape[0] < 2:
        raise ValueError(f"X must be square with size >= 2; got shape {tuple(X.shape)}.")
    lam, U = torch.linalg.eigh(0.5 * (X + X.T))
    lam = lam.clone()
    lam[-1] = lam[-2] + gap
    return (U * lam) @ U.T


# ----------------------------------------------------------------------------------------------------------------
# weights, constraint sets, the energy and the flow of Lemma 1
# ----------------------------------------------------------------------------------------------------------------
def _widths(widths) -> list[int]:
    widths = list(widths)
    if len(widths) < 2:
        raise ValueError(f"widths must list [n_0, n_1, ..., n_L] with L >= 1; got widths = {widths}.")
    return [check_int(f"widths[{k}]", w, 1) for k, w in enumerate(widths)]


def _weights(weights) -> list[torch.Tensor]:
    if isinstance(weights, torch.Tensor) or not isinstance(weights, (list, tuple)) or len(weights) == 0:
        raise TypeError("weights must be a non-empty list of tensors [S, n_l, n_{l-1}] (layer 1 first).")
    out = [check_tensor(f"weights[{k}]", W, ndim=3) for k, W in enumerate(weights)]
    for k in range(1, len(out)):
        if out[k].shape[2] != out[k - 1].shape[1] or out[k].shape[0] != out[k - 1].shape[0]:
            raise ValueError(f"weights[{k}] has shape {tuple(out[k].shape)}, which does not follow "
                             f"weights[{k - 1}] of shape {tuple(out[k - 1].shape)}.")
    return out


def project(weights, normalization: str = "frobenius") -> list[torch.Tensor]:
    r"""Retract every layer onto the constraint set (see :data:`NORMALIZATIONS`)."""
    weights = _weights(weights)
    check_choice("normalization", normalization, NORMALIZATIONS)
    return _project(weights, normalization)


def _norm(A, axis):
    """The 2-norm of ``A`` over ``axis``, kept as a size-1 axis: a torch tensor's ``norm``, numpy's ``linalg.norm``."""
    if isinstance(A, np.ndarray):
        return np.sqrt((A * A).sum(axis=axis, keepdims=True))
    return A.norm(dim=axis, keepdim=True)


def _project(weights, normalization):
    out = []
    for k, W in enumerate(weights):
        if normalization == "filter" and k < len(weights) - 1:
            out.append(W / (math.sqrt(W.shape[1]) * _norm(W, 2)))
        else:
            out.append(W / _norm(W, (1, 2)))
    return out


def tangent(weights, grads, normalization: str = "frobenius") -> list[torch.Tensor]:
    r"""Remove from each gradient its component along the weights: :math:`G - \langle G, W\rangle W/\|W\|^2`.

    Per layer for ``frobenius``; per row (filter) for ``filter`` on layers :math:`l < L`. This is what a
    normalisation layer does to the gradient (Lemmas 2, 7, 10).
    """
    weights, grads = _weights(weights), _weights(grads)
    check_choice("normalization", normalization, NORMALIZATIONS)
    return _tangent(weights, grads, normalization)


def _tangent(weights, grads, normalization):
    out = []
    for k, (W, G) in enumerate(zip(weights, grads, strict=True)):
        if normalization == "filter" and k < len(weights) - 1:
            out.append(G - (G * W).sum(axis=2, keepdims=True) / (W * W).sum(axis=2, keepdims=True) * W)
        else:
            out.append(G - (G * W).sum(axis=(1, 2), keepdims=True) / (W * W).sum(axis=(1, 2), keepdims=True) * W)
    return out


def random_weights(widths, *, n_starts: int = 1, seed: int = 0, normalization: str | None = "frobenius",
                   scale: float = 1.0) -> list[torch.Tensor]:
    r"""Gaussian weights ``[n_starts, n_l, n_{l-1}]``, projected onto the constraint set.

    Or scaled by ``scale``
    times :math:`1/\sqrt{n_{l-1}}` when ``normalization=None``).
    """
    widths = _widths(widths)
    n_starts = check_int("n_starts", n_starts, 1)
    scale = check_positive("scale", scale)
    gen = torch.Generator().manual_seed(check_int("seed", seed, 0))
    weights = [randn(n_starts, m, k, generator=gen) for k, m in zip(widths[:-1], widths[1:], strict=True)]
    if normalization is None:
        return [scale * W / math.sqrt(W.shape[2]) for W in weights]
    return project(weights, normalization)


def end_to_end(weights) -> torch.Tensor:
    r"""The product :math:`W = W_L\cdots W_1`, shape ``[S, n_L, n_0]``."""
    return _end_to_end(_weights(weights))


def _end_to_end(weights):
    W = weights[0]
    for Wl in weights[1:]:
        W = Wl @ W
    return W


def _check_X(X, n0: int) -> torch.Tensor:
    X = check_tensor("X", X, ndim=2)
    if X.shape != (n0, n0):
        raise ValueError(f"X must have shape [n_0, n_0] = [{n0}, {n0}]; got {tuple(X.shape)}.")
    return X


def energy(weights, X) -> torch.Tensor:
    r"""Eq. 11's objective :math:`\mathcal E_\alpha = \operatorname{tr}(WX_\alpha W^\top)` per start, shape ``[S]``."""
    weights = _weights(weights)
    return _energy(weights, _check_X(X, weights[0].shape[2]))


def _energy(weights, X):
    W = _end_to_end(weights)
    return (np if isinstance(W, np.ndarray) else torch).einsum("sij,jk,sik->s", W, X, W)


def flow(weights, X, *, _scaled: bool = False) -> list[torch.Tensor]:
    r"""Lemma 1: :math:`\dot W_l = W_{>l}^\top W_{>l}W_l F_{l-1}` for every layer (= :math:`\tfrac12\nabla_{W_l}\mathcal E`).

    Computed with the prefix covariances :math:`F_l = W_lF_{l-1}W_l^\top` (:math:`F_0 = X_\alpha`) and the suffix
    Gram matrices :math:`M_{l-1} = W_l^\top M_l W_l` (:math:`M_L = I`), in :math:`O(L)` products.
    """
    weights = _weights(weights)
    X = _check_X(X, weights[0].shape[2])
    return _flow(weights, X, _scaled)


def _flow(weights, X, _scaled=False):
    S, top = weights[0].shape[0], weights[-1]
    if isinstance(X, np.ndarray):  # the same products on numpy arrays (a panel's small matrices)
        F, eye = [np.broadcast_to(X, (S, *X.shape))], np.broadcast_to(np.eye(top.shape[1]), (S, top.shape[1], top.shape[1]))
    else:
        F = [X.expand(S, -1, -1)]
        eye = torch.eye(top.shape[1], dtype=top.dtype, device=top.device).expand(S, -1, -1)
    for W in weights[:-1]:
        F.append(W @ F[-1] @ W.mT)
    M = [None] * len(weights)
    M[-1] = eye
    for k in range(len(weights) - 1, 0, -1):
        M[k - 1] = weights[k].mT @ M[k] @ weights[k]
    if _scaled:
        return [M[k] @ W @ F[k] / _floor(_norm(M[k], (1, 2)) * _norm(F[k], (1, 2)), 1e-300) for k, W in enumerate(weights)]
    return [M[k] @ W @ F[k] for k, W in enumerate(weights)]


def _floor(A, low):
    return np.maximum(A, low) if isinstance(A, np.ndarray) else A.clamp_min(low)


def balance_matrices(weights) -> list[torch.Tensor]:
    r"""The balance matrices :math:`W_lW_l^\top - W_{l+1}^\top W_{l+1}`, :math:`1\le l<L` (Lemma 1: constant in time)."""
    weights = _weights(weights)
    return [W @ W.transpose(1, 2) - V.transpose(1, 2) @ V for W, V in zip(weights[:-1], weights[1:], strict=True)]


# ----------------------------------------------------------------------------------------------------------------
# projected training (Eq. 11, Cor 3) and the structure of its end points (Thm 3)
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class TrainResult:
    r"""Projected gradient ascent on :math:`\mathcal E_\alpha` from ``S`` starts.

    Attributes
    ----------
    weights : list of torch.Tensor
        Final weights ``[S, n_l, n_{l-1}]``.
    steps : numpy.ndarray, shape=[T]
        The recorded steps (0 and every ``record_every`` steps, and the last).
    energy : numpy.ndarray, shape=[T, S]
        :math:`\mathcal E_\alpha` at the recorded steps.
    singular_values : numpy.ndarray, shape=[T, S, L, 2]
        The two largest singular values of every layer (0 where a layer has rank < 2).
    stopping_reason : str
    """

    weights: list
    steps: np.ndarray
    energy: np.ndarray
    singular_values: np.ndarray
    stopping_reason: str


def _top2(W: torch.Tensor) -> torch.Tensor:
    if isinstance(W, np.ndarray):
        s = np.linalg.svd(W, compute_uv=False)
        return np.concatenate([s, np.zeros_like(s)], axis=-1)[..., :2] if s.shape[-1] < 2 else s[..., :2]
    s = torch.linalg.svdvals(W)
    if s.shape[-1] < 2:
        s = torch.cat([s, torch.zeros_like(s)], dim=-1)
    return s[..., :2]


def train(X, weights, *, steps: int, eta: float, normalization: str = "frobenius", record_every: int = 10,
          tol: float = 0.0, layer_scaled: bool = False) -> TrainResult:
    r"""Projected ascent on Eq. 11: :math:`W_l \leftarrow \Pi\big(W_l + \eta\,P_{T}(\dot W_l)\big)` for all layers at once.

    :math:`\dot W_l` is Lemma 1's flow, :math:`P_T` removes its radial part (:func:`tangent`, what a normalisation
    layer does) and :math:`\Pi` retracts onto the constraint set (:func:`project`; it undoes the exact
    :math:`\eta^2\|P_T\dot W_l\|^2` growth of the norm). Stops after ``steps`` steps, or earlier when every start's
    largest tangent gradient falls below ``tol``.

    With ``layer_scaled=True`` layer :math:`l` takes the step :math:`\eta/(\|M_l\|_F\|F_{l-1}\|_F)`, where
    :math:`M_l = W_{>l}^\top W_{>l}` and :math:`\|M_l\|_F\|F_{l-1}\|_F` bounds the curvature of :math:`\mathcal E` in
    :math:`W_l`. At an aligned rank-one point with :math:`\mathcal E = \lambda_{\max} = 1` the factor is 1, so near the
    optimum this is the same dynamics; far from it (near the saddle :math:`W_{>l}\approx 0` of a deep random start) the
    steps are larger, so deep networks escape the saddle in tens instead of thousands of steps.
    """
    weights = project(_weights(weights), normalization)
    X = _check_X(X, weights[0].shape[2])
    steps = check_int("steps", steps, 0)
    eta = check_positive("eta", eta)
    record_every = check_int("record_every", record_every, 1)
    tol = check_nonnegative("tol", tol)
    with single_thread():
        return train_unchecked(X, weights, steps=steps, eta=eta, normalization=normalization, record_every=record_every,
                               tol=tol, layer_scaled=layer_scaled)


def train_unchecked(X, weights, *, steps: int, eta: float, normalization: str = "frobenius", record_every: int = 10,
                    tol: float = 0.0, layer_scaled: bool = False) -> TrainResult:
    """The loop of :func:`train`, without its checks, on torch tensors or on numpy arrays.

    ``X [n_0, n_0]`` and ``weights`` (``[S, n_l, n_{l-1}]`` each, on the constraint set) are all torch tensors or all
    numpy arrays; the same products run on either (torch for the package and the chapters, numpy for a panel's
    small matrices, where torch's per-operation overhead is most of the time). The final weights come back as torch
    tensors.
    """
    rec_steps, rec_e, rec_s = [], [], []
    numpy = isinstance(X, np.ndarray)

    def host(A):
        return A if numpy else A.cpu().numpy()

    def record(t):
        rec_steps.append(t)
        rec_e.append(host(_energy(weights, X)))
        sv = [_top2(W) for W in weights]
        rec_s.append(np.stack(sv, axis=1) if numpy else torch.stack(sv, dim=1).cpu().numpy())

    reason = f"reached steps = {steps}"
    record(0)
    for t in range(1, steps + 1):
        g = _tangent(weights, _flow(weights, X, layer_scaled), normalization)
        weights = _project([W + eta * G for W, G in zip(weights, g, strict=True)], normalization)
        if tol > 0 and max(float(abs(G).max()) for G in g) < tol:
            record(t)
            reason = f"tangent gradient below tol = {tol} at step {t}"
            break
        if t % record_every == 0 or t == steps:
            record(t)
    if numpy:
        weights = [torch.from_numpy(np.ascontiguousarray(W)) for W in weights]
    return TrainResult(weights, np.array(rec_steps), np.stack(rec_e), np.stack(rec_s), reason)


def euler(X, weights, *, eta: float, steps: int) -> list[torch.Tensor]:
    r"""``steps`` forward-Euler steps :math:`W_l \leftarrow W_l + \eta\dot W_l` of the *unconstrained* Lemma 1 flow.

    Each step changes the balance matrices by exactly :math:`\eta^2(\dot W_l\dot W_l^\top - \dot W_{l+1}^\top\dot W_{l+1})`,
    so at a fixed time :math:`t = \eta\cdot\text{steps}` the balance has drifted by :math:`O(\eta)`. Returns the weights.
    """
    weights = _weights(weights)
    X = _check_X(X, weights[0].shape[2])
    eta = check_positive("eta", eta)
    steps = check_int("steps", steps, 0)
    with single_thread():
        for _ in range(steps):
            weights = [W + eta * G for W, G in zip(weights, _flow(weights, X), strict=True)]
    return weights


def rank_one_report(weights, X) -> dict:
    r"""Theorem 3's conclusions, per start: energy ratio, rank-one-ness, alignment, and the bottom direction.

    Returns a dict of numpy arrays of shape ``[S]``: ``energy_ratio`` :math:`\mathcal E/\lambda_{\max}(X)`;
    ``sigma_ratio`` :math:`\max_l\sigma_2(W_l)/\sigma_1(W_l)`; ``alignment`` :math:`\min_l|\langle u_1(W_l),
    v_1(W_{l+1})\rangle|` (left singular vector of a layer against the right one of the next; 1 if ``L = 1``);
    ``top_direction`` :math:`|\langle v_1(W_1), u_{\max}(X)\rangle|`.
    """
    weights = _weights(weights)
    X = _check_X(X, weights[0].shape[2])
    lam, U = torch.linalg.eigh(X)
    svd = [torch.linalg.svd(W) for W in weights]
    sig = torch.stack([_top2(W) for W in weights], dim=1)
    ratio = (sig[..., 1] / sig[..., 0]).amax(dim=1)
    align = torch.ones(weights[0].shape[0], dtype=X.dtype, device=X.device)
    for (U1, _, _), (_, _, Vh2) in zip(svd[:-1], svd[1:], strict=True):
        align = torch.minimum(align, (U1[:, :, 0] * Vh2[:, 0, :]).sum(dim=1).abs())
    top = (svd[0][2][:, 0, :] @ U[:, -1]).abs()
    return {"energy_ratio": (energy(weights, X) / lam[-1]).cpu().numpy(), "sigma_ratio": ratio.cpu().numpy(),
            "alignment": align.cpu().numpy(), "top_direction": top.cpu().numpy()}


# ----------------------------------------------------------------------------------------------------------------
# the unconstrained flow blows up in finite time
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class BlowupResult:
    """The unconstrained Lemma 1 flow integrated by ``solve_ivp`` (RK45) until a layer norm reaches ``max_norm``.

    ``t``: output times; ``norms``: ``[T, L]`` Frobenius norms; ``balance_drift``: max over time of the largest
    entry of the change of the balance matrices; ``blowup_time``: time at which ``max_norm`` was reached (``inf`` if
    not); ``stopping_reason``.
    """

    t: np.ndarray
    norms: np.ndarray
    balance_drift: float
    blowup_time: float
    stopping_reason: str


def solve_unconstrained(X, weights, *, t_max: float, max_norm: float = 1e3, rtol: float = 1e-10,
                        atol: float = 1e-12) -> BlowupResult:
    r"""Integrate :math:`\dot W_l = W_{>l}^\top W_{>l}W_lF_{l-1}` without constraints for one start (``S = 1``)."""
    weights = _weights(weights)
    if weights[0].shape[0] != 1:
        raise ValueError(f"solve_unconstrained integrates one start; got S = {weights[0].shape[0]}.")
    X = _check_X(X, weights[0].shape[2])
    t_max = check_positive("t_max", t_max)
    max_norm = check_positive("max_norm", max_norm)
    shapes = [tuple(W.shape) for W in weights]
    sizes = [int(np.prod(s)) for s in shapes]
    Xn = X.detach().cpu().numpy()

    def unpack(y):
        out, k = [], 0
        for s, m in zip(shapes, sizes, strict=True):
            out.append(torch.from_numpy(y[k:k + m].reshape(s)))
            k += m
        return out

    Xt = torch.from_numpy(Xn)

    def rhs(_, y):
        return torch.cat([G.reshape(-1) for G in _flow(unpack(y), Xt)]).numpy()

    bounds = np.cumsum([0] + sizes)

    def too_big(_, y):
        return max(float(np.linalg.norm(y[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)) - max_norm

    too_big.terminal = True
    y0 = torch.cat([W.detach().cpu().reshape(-1) for W in weights]).numpy()
    with single_thread():
        from scipy.integrate import solve_ivp

        sol = solve_ivp(rhs, (0.0, t_max), y0, rtol=rtol, atol=atol, events=too_big, dense_output=False)
    layers = [unpack(sol.y[:, k]) for k in range(sol.y.shape[1])]
    norms = np.array([[float(W.norm()) for W in ws] for ws in layers])
    b0 = balance_matrices(layers[0])
    drift = max((float((b - c).abs().max()) for ws in layers for b, c in zip(balance_matrices(ws), b0, strict=True)),
                default=0.0)
    hit = sol.t_events[0].size > 0
    return BlowupResult(sol.t, norms, drift, float(sol.t_events[0][0]) if hit else math.inf,
                        f"a layer norm reached {max_norm:g}" if hit else f"reached t_max = {t_max:g}")


def aligned_weights(X, widths, *, scale: float, seed: int = 0) -> list[torch.Tensor]:
    r"""Balanced aligned rank-one weights :math:`W_l = a\,v_lv_{l-1}^\top`.

    With :math:`v_0 = u_{\max}(X)`, random unit
    :math:`v_l` (``l >= 1``) and :math:`a` = ``scale``; one start.
    """
    widths = _widths(widths)
    X = _check_X(X, widths[0])
    scale = check_positive("scale", scale)
    gen = torch.Generator().manual_seed(check_int("seed", seed, 0))
    vs = [torch.linalg.eigh(X)[1][:, -1]]
    for n in widths[1:]:
        v = randn(n, generator=gen).to(X)
        vs.append(v / v.norm())
    return [(scale * torch.outer(vs[k + 1], vs[k])).unsqueeze(0) for k in range(len(widths) - 1)]


def aligned_blowup_time(scale: float, depth: int, lam: float, max_norm: float = math.inf) -> float:
    r"""Closed form for aligned balanced weights.

    :math:`\dot a = \lambda a^{2L-1}`, so :math:`a(t)` reaches ``max_norm`` at :math:`t = \big(a_0^{-(2L-2)} -
    a_{\max}^{-(2L-2)}\big)/\big((2L-2)\lambda\big)` (``L >= 2``, :math:`\lambda > 0`). With ``max_norm = inf`` this is
    the blow-up time.
    """
    scale = check_positive("scale", scale)
    depth = check_int("depth", depth, 2)
    lam = check_positive("lam", lam)
    p = 2 * depth - 2
    tail = 0.0 if math.isinf(max_norm) else check_positive("max_norm", max_norm) ** (-p)
    return (scale ** (-p) - tail) / (p * lam)


# ----------------------------------------------------------------------------------------------------------------
# normalisation layers: Lemma 6 (Jacobians) and Lemmas 2, 7, 10 (norm conservation)
# ----------------------------------------------------------------------------------------------------------------
def normalization_jacobian(x, kind: str = "l2") -> torch.Tensor:
    r"""Lemma 6 (corrected): the Jacobian of :math:`y = x/\|x\|` or of :math:`y = P_1^\perp x/\|P_1^\perp x\|`.

    .. math::

        J_{\ell_2}(x) = \frac{P_x^\perp}{\|x\|},\qquad J_{LN}(x) = \frac{P^\perp_{x,\mathbf 1}}{\|P_{\mathbf 1}^\perp x\|},

    where :math:`P^\perp_{x,\mathbf 1}` projects onto the complement of :math:`\operatorname{span}\{\mathbf 1, P_{\mathbf 1}^\perp x\}`.
    Both are symmetric and satisfy :math:`J(x)x = 0` (so the paper's forward rule :math:`y = J(x)x` is false).
    """
    x = check_tensor("x", x, ndim=1)
    check_choice("kind", kind, ("l2", "layernorm"))
    eye = torch.eye(x.shape[0], dtype=x.dtype, device=x.device)
    if kind == "layernorm":
        c = x - x.mean()
        y = c / c.norm()
        one = torch.ones_like(x) / math.sqrt(x.shape[0])
        return (eye - torch.outer(one, one) - torch.outer(y, y)) / c.norm()
    y = x / x.norm()
    return (eye - torch.outer(y, y)) / x.norm()


def _normalization_layer(f: torch.Tensor, kind: str) -> torch.Tensor:
    if kind == "l2":
        return f / f.norm(dim=1, keepdim=True)
    if kind == "layernorm":
        c = f - f.mean(dim=1, keepdim=True)
        return c / c.std(dim=1, unbiased=False, keepdim=True)
    c = f - f.mean(dim=0, keepdim=True)
    return c / c.std(dim=0, unbiased=False, keepdim=True)


def normalized_mlp_gradients(kind: str = "l2", *, widths=(8, 12, 10, 9, 6), norm_after: int = 2,
                             activation: str = "relu", n: int = 16, seed: int = 0) -> tuple[list, list]:
    r"""Weights and InfoNCE-loss gradients of a bias-free MLP with one normalisation layer (Lemmas 2, 7, 10).

    The MLP is :math:`x\to W_1\to h\to\cdots\to W_L` with a normalisation layer right after linear layer
    ``norm_after`` (``kind``: ``"l2"`` per sample, ``"layernorm"`` per sample without affine part or epsilon,
    ``"batchnorm"`` per node over the batch), reversible activations ``h`` between the linear layers, and the InfoNCE
    loss (:math:`\epsilon = 0`, :math:`\tau = 0.5`) on the output of two views of ``n`` Gaussian inputs.
    Returns ``(weights, grads)``, lists of ``[n_l, n_{l-1}]`` tensors; layers ``l <= norm_after`` are below the
    normalisation.
    """
    check_choice("kind", kind, ("l2", "layernorm", "batchnorm"))
    check_choice("activation", activation, ("relu", "linear", "leaky_relu"))
    widths = _widths(widths)
    norm_after = check_int("norm_after", norm_after, 1, len(widths) - 1)
    n = check_int("n", n, 3)
    gen = torch.Generator().manual_seed(check_int("seed", seed, 0))
    h = functools.partial(activations.apply_unchecked, name=activation)
    x1 = randn(n, widths[0], generator=gen)
    x2 = x1 + 0.3 * randn(n, widths[0], generator=gen)
    Ws = [(randn(m, k, generator=gen) / math.sqrt(k)).requires_grad_(True)
          for k, m in zip(widths[:-1], widths[1:], strict=True)]

    def forward(x):
        f = x
        for k, W in enumerate(Ws, start=1):
            f = f @ W.T
            if k == norm_after:
                f = _normalization_layer(f, kind)
            if k < len(Ws):
                f = h(f)
        return f

    loss = _losses.infonce(0.5, 0.0)(forward(x1), forward(x2))
    grads = torch.autograd.grad(loss, Ws)
    return [W.detach() for W in Ws], list(grads)


def weight_gradient_cosines(kind: str = "l2", **kwargs) -> np.ndarray:
    r"""Lemmas 2, 7, 10: :math:`\langle W_l, \nabla_{W_l}\mathcal L\rangle/(\|W_l\|\|\nabla_{W_l}\mathcal L\|)` per layer.

    For the network of :func:`normalized_mlp_gradients` (same keyword arguments). For ``batchnorm`` the cosine of the
    normalised layer is taken per row :math:`w_{lk}` (Lemma 10) and the one largest in absolute value is returned;
    the other layers use the Frobenius inner product. One number per layer.
    """
    Ws, grads = normalized_mlp_gradients(kind, **kwargs)
    norm_layer = kwargs.get("norm_after", 2) - 1
    out = []
    for k, (W, G) in enumerate(zip(Ws, grads, strict=True)):
        if kind == "batchnorm" and k == norm_layer:
            c = (W * G).sum(dim=1) / (W.norm(dim=1) * G.norm(dim=1))
            out.append(float(c[c.abs().argmax()]))
        else:
            out.append(float((W * G).sum() / (W.norm() * G.norm())))
    return np.array(out)


# ----------------------------------------------------------------------------------------------------------------
# Fig. 2 of the paper
# ----------------------------------------------------------------------------------------------------------------
def figure2_data(depth: int = 5, width: int = 8, gap: float = 1.0, augmentation: float = 0.5, eta: float = 0.3,
                 steps: int = 800, seed: int = 1, layer_scaled: bool = False, n: int = 32, d: int = 10):
    r"""The run behind the paper's Fig. 2.

    projected training (:func:`train`) of one DeepLin net with widths ``[d, width, ..., width, 6]`` on :math:`X_\alpha`
    of :func:`contrastive_batch` scaled to :math:`\lambda_{\max} = 1`. Returns ``(result, X)``. Results are cached (the
    static figure, the panel's first draw and the chapter's table share one run); treat them as read-only.
    """
    depth = check_int("depth", depth, 1, 8)
    width = check_int("width", width, 2, 64)
    steps, seed = check_int("steps", steps, 0), check_int("seed", seed, 0)
    n, d = check_int("n", n, 3), check_int("d", d, 2)
    return _figure2_run(depth, width, check_nonnegative("gap", gap), check_nonnegative("augmentation", augmentation),
                        check_positive("eta", eta), steps, seed, bool(layer_scaled), n, d)


@functools.lru_cache(maxsize=16)
def _figure2_run(depth, width, gap, augmentation, eta, steps, seed, layer_scaled, n, d):
    batch = contrastive_batch(n, d, gap=gap, augmentation=augmentation, seed=0)
    lam = float(batch.eigenvalues[0])
    if lam <= 0:
        raise ValueError(f"lambda_max(X_alpha) = {lam:.3g} <= 0: lower the augmentation (Theorem 3 needs lambda_max > 0).")
    X = batch.X / lam
    weights = random_weights([d] + [width] * (depth - 1) + [6], n_starts=1, seed=seed)
    res = train(X, weights, steps=steps, eta=eta, record_every=max(1, steps // 150), layer_scaled=layer_scaled)
    return res, X
