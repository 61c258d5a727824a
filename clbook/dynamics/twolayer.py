r"""Two-layer networks with disjoint receptive fields (Tian 2023, Sec. 4, App. C, D).

The network has :math:`K` receptive fields with inputs :math:`\mathbf x_k\in\mathbb R^d`, filters
:math:`\mathbf w_{km}` (``W`` of shape ``[K, M, d]``), hidden units :math:`f_{1km} = h(\mathbf w_{km}^\top\mathbf x_k)`
and a top layer :math:`V` (``[out, K*M]``), :math:`\mathbf f_2 = V\mathbf f_1`. For a homogeneous activation
:math:`h(x) = h'(x)x`, so :math:`f_{1km} = \tilde{\mathbf x}_{km}^\top\mathbf w_{km}` with the gated input
:math:`\tilde{\mathbf x}_{km} = \mathbf x_k h'(\mathbf w_{km}^\top\mathbf x_k)`.

This module holds:

* :func:`lemma4_rhs`: the right-hand sides of Lemma 4, :math:`V\mathbb C_\alpha[\mathbf f_1]` and
  :math:`\sum_{k'm'}s_{km,k'm'}\mathbb C_\alpha[\tilde{\mathbf x}_{km}, \tilde{\mathbf x}_{k'm'}]\mathbf w_{k'm'}`
  (with BatchNorm of Def. 5 when ``bn=True``);
* :class:`LatentTokens`: a latent-variable model satisfying Assumption 2 (tokens in each field independent given a
  global class :math:`z`), enumerated *exactly*: every atom and its probability, so population covariances are sums;
* :func:`population_terms`: :math:`\mathbb V[\tilde{\mathbf x}]`, :math:`L_k`, :math:`\Delta(c)`, :math:`d_k`, :math:`b_k`,
  :math:`\lambda`, :math:`\mathbf s`, :math:`\delta_k` of Lemma 5, Theorem 5 and Corollary 3;
* the basin experiment and the probability of Eq. 155 behind Theorem 6.

Used in Chapter 9.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validate import check_choice, check_in_range, check_int, check_nonnegative, check_positive, check_real

__all__ = [
    "gated_inputs", "lemma4_rhs", "LatentTokens", "make_latent_tokens", "population_terms", "PopulationTerms",
    "blowup_closed_form", "blowup_time", "sphere_basin_fraction", "win_probability", "win_probability_mc",
]

ACTIVATIONS = ("relu", "linear", "leakyrelu")


def _hprime(t: torch.Tensor, activation: str) -> torch.Tensor:
    if activation == "relu":
        return (t > 0).to(t.dtype)
    if activation == "leakyrelu":
        return torch.where(t > 0, torch.ones_like(t), torch.full_like(t, 0.05))
    return torch.ones_like(t)


def gated_inputs(W: torch.Tensor, x: torch.Tensor, activation: str = "relu") -> torch.Tensor:
    r"""Gated inputs :math:`\tilde{\mathbf x}_{km}[i] = \mathbf x_k[i]\,h'(\mathbf w_{km}^\top\mathbf x_k[i])`, shape ``[n, K, M, d]``.

    ``W [K, M, d]``, ``x [n, K, d]``. For a homogeneous activation, :math:`f_{1km} = \tilde{\mathbf x}_{km}^\top\mathbf w_{km}`.
    """
    check_choice("activation", activation, ACTIVATIONS)
    if W.ndim != 3 or x.ndim != 3 or x.shape[1:] != (W.shape[0], W.shape[2]):
        raise ValueError(f"need W [K, M, d] and x [n, K, d]; got {tuple(W.shape)} and {tuple(x.shape)}.")
    pre = torch.einsum("kmd,nkd->nkm", W, x)
    return x.unsqueeze(2) * _hprime(pre, activation).unsqueeze(-1)


def _cov(alpha, a1, a2, b1, b2):
    from ..covariance import contrastive_covariance

    return contrastive_covariance(alpha, a1, a2, b1, b2)


def _bn_scale(f1: torch.Tensor, f2: torch.Tensor) -> torch.Tensor:
    both = torch.cat([f1, f2])
    return 1 / both.var(dim=0, unbiased=False).add(1e-12).sqrt()


def lemma4_rhs(W: torch.Tensor, V: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor, alpha: torch.Tensor, *,
               activation: str = "relu", bn: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Lemma 4 (and Lemma 6 with ``bn=True``): :math:`(\dot V, \dot W)` before the projection :math:`P^\perp_{\mathbf w}`.

    .. math::

        \dot V = V\,\mathbb C_\alpha[\mathbf f_1],\qquad
        \dot{\mathbf w}_{km} = \sum_{k'm'} s_{km,k'm'}\,
        \mathbb C_\alpha[\tilde{\mathbf x}_{km}, \tilde{\mathbf x}_{k'm'}]\,\mathbf w_{k'm'},
        \qquad S = V^\top V,

    the ascent direction of :math:`\tfrac12\operatorname{tr}\mathbb C_\alpha[\mathbf f_2]` with α held fixed (the book's
    :math:`\mathcal E_\alpha = \operatorname{tr}\mathbb C_\alpha`, Eq. 5). With ``bn=True`` the hidden units are batch-normalised with
    statistics over both views (App. D) and the gated inputs are replaced by
    :math:`\tilde{\mathbf x}^{\mathrm{bn}}_{km} = \tilde{\mathbf x}_{km}/\sigma_{km}`
    (Lemma 6; mean-backprop BatchNorm, Def. 5).

    Parameters
    ----------
    W : [K, M, d]; V : [out, K*M]; x1, x2 : [n, K, d] (the two views); alpha : [n, n].

    Returns
    -------
    (dV, dW) with the shapes of ``V`` and ``W``.
    """
    K, M, d = W.shape
    if V.ndim != 2 or V.shape[1] != K * M:
        raise ValueError(f"V must have shape [out, K*M = {K * M}]; got {tuple(V.shape)}.")
    g1, g2 = gated_inputs(W, x1, activation), gated_inputs(W, x2, activation)  # [n, K, M, d]
    f1 = torch.einsum("nkmd,kmd->nkm", g1, W).reshape(len(x1), -1)
    f2 = torch.einsum("nkmd,kmd->nkm", g2, W).reshape(len(x2), -1)
    if bn:  # constants (the batch mean) drop out of C_alpha; only the scale 1/sigma remains (Lemma 6)
        scale = _bn_scale(f1, f2)
        f1, f2 = f1 * scale, f2 * scale
        g1 = g1 * scale.view(1, K, M, 1)
        g2 = g2 * scale.view(1, K, M, 1)
    dV = V @ _cov(alpha, f1, f2, f1, f2)
    S = V.T @ V
    a1, a2 = g1.reshape(len(x1), -1), g2.reshape(len(x2), -1)
    big = _cov(alpha, a1, a2, a1, a2).reshape(K * M, d, K * M, d)
    dW = torch.einsum("ab,aibj,bj->ai", S, big, W.reshape(K * M, d)).reshape(K, M, d)
    return dV, dW


@dataclass(frozen=True)
class LatentTokens:
    r"""An exactly enumerated model satisfying Assumption 2 of Tian (2023).

    A global class :math:`z\in\{0,\dots,C-1\}` has probabilities ``class_probs``; given :math:`z`, the token in each of the
    :math:`K` fields is drawn independently, :math:`\mathbb P[\mathbf x_k = \mathrm{mag}_k\mathbf e_a\,|\,z] =` ``token_probs[z, k, a]``.
    ``atoms`` lists every :math:`(z, a_1, \dots, a_K)` with its probability ``weights``.
    """

    class_probs: np.ndarray  # [C]
    token_probs: np.ndarray  # [C, K, d]
    magnitudes: np.ndarray  # [K]
    atoms: np.ndarray  # [N, 1 + K] ints: z, a_1..a_K
    weights: np.ndarray  # [N]

    def inputs(self) -> np.ndarray:
        """The input of every atom, ``[N, K, d]``."""
        C, K, d = self.token_probs.shape
        x = np.zeros((len(self.atoms), K, d))
        for k in range(K):
            x[np.arange(len(self.atoms)), k, self.atoms[:, 1 + k]] = self.magnitudes[k]
        return x


def make_latent_tokens(*, num_fields: int = 3, num_tokens: int = 4, num_classes: int = 2, class_probs=None,
                       concentration: float = 1.0, magnitudes=None, seed: int = 0) -> LatentTokens:
    r"""A random :class:`LatentTokens`: token probabilities from a Dirichlet(``concentration``) per class and field.

    ``magnitudes`` (one per field, default 1) scale the one-hot inputs, to make the fields' variances differ
    (the situation BatchNorm addresses in App. D).
    """
    K = check_int("num_fields", num_fields, 1, 8)
    d = check_int("num_tokens", num_tokens, 2, 8)
    C = check_int("num_classes", num_classes, 2, 6)
    if d ** K * C > 200_000:
        raise ValueError(f"num_tokens ** num_fields * num_classes = {d ** K * C} atoms is too many to enumerate (max 200000).")
    concentration = check_positive("concentration", concentration)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    p = np.full(C, 1 / C) if class_probs is None else np.asarray(class_probs, dtype=float)
    if p.shape != (C,) or np.any(p <= 0) or abs(p.sum() - 1) > 1e-12:
        raise ValueError(f"class_probs must be {C} positive numbers summing to 1; got {class_probs}.")
    mags = np.ones(K) if magnitudes is None else np.asarray(magnitudes, dtype=float)
    if mags.shape != (K,) or np.any(mags <= 0):
        raise ValueError(f"magnitudes must be {K} positive numbers; got {magnitudes}.")
    token_probs = rng.dirichlet(np.full(d, concentration), size=(C, K))
    atoms = np.array([(z, *a) for z in range(C) for a in itertools.product(range(d), repeat=K)])
    weights = p[atoms[:, 0]] * np.prod([token_probs[atoms[:, 0], k, atoms[:, 1 + k]] for k in range(K)], axis=0)
    return LatentTokens(p, token_probs, mags, atoms, weights)


@dataclass(frozen=True)
class PopulationTerms:
    r"""Population quantities of Lemma 5, Theorem 5 and Corollary 3 for :math:`M = 1` (all exact)."""

    gated: np.ndarray  # [N, K, d] gated inputs of every atom
    variance: np.ndarray  # [K*d, K*d]  V[x~]
    L: np.ndarray  # [K, d, d]   E_z V[x~_k | z]
    delta: np.ndarray  # [C, K*d]   Delta(c) = E[x~ | z=c] - E[x~ | z != c]
    A: np.ndarray  # [K, d, d]   A_k = V[x~_k]
    d: np.ndarray  # [K]  d_k = w_k^T L_k w_k
    b: np.ndarray  # [K]  b_k = w_k^T Delta_k (C = 2; Delta_k := E[x~_k|z=1] - E[x~_k|z=0])
    lam: float  # top eigenvalue of V[f_1]
    s: np.ndarray  # [K] its unit eigenvector (sign: s . b >= 0)
    Z: float
    delta_k: np.ndarray  # [K] Theorem 5's delta_k, Eq. 143
    f_variance: np.ndarray  # [K, K] V[f_1]


def population_terms(model: LatentTokens, W: np.ndarray, *, activation: str = "relu") -> PopulationTerms:
    r"""Exact population terms for filters ``W [K, d]`` (one filter per field).

    Requires ``num_classes == 2`` for the scalars of Theorem 5 (``d``, ``b``, ``lam``, ``s``, ``delta_k``); ``variance``,
    ``L`` and ``delta`` are computed for any :math:`C`.
    """
    check_choice("activation", activation, ACTIVATIONS)
    C, K, dim = model.token_probs.shape
    W = np.asarray(W, dtype=float)
    if W.shape != (K, dim):
        raise ValueError(f"W must have shape [K, d] = [{K}, {dim}]; got {W.shape}.")
    x = model.inputs()
    pre = np.einsum("nkd,kd->nk", x, W)
    gate = {"relu": (pre > 0) * 1.0, "leakyrelu": np.where(pre > 0, 1.0, 0.05), "linear": np.ones_like(pre)}[activation]
    g = x * gate[..., None]
    flat = g.reshape(len(g), -1)
    pw = model.weights
    mean = pw @ flat
    variance = (flat - mean).T @ ((flat - mean) * pw[:, None])
    z = model.atoms[:, 0]
    cond_mean = np.stack([model.weights[z == c] @ flat[z == c] / model.class_probs[c] for c in range(C)])
    L = np.zeros((K, dim, dim))
    for c in range(C):
        sel = z == c
        centred = (flat[sel] - cond_mean[c]).reshape(-1, K, dim)
        w = pw[sel] / model.class_probs[c]
        L += model.class_probs[c] * np.einsum("n,nki,nkj->kij", w, centred, centred)
    delta = np.stack([cond_mean[c] - (mean - model.class_probs[c] * cond_mean[c]) / (1 - model.class_probs[c]) for c in range(C)])
    A = np.stack([variance[k * dim:(k + 1) * dim, k * dim:(k + 1) * dim] for k in range(K)])
    f = np.einsum("nkd,kd->nk", g, W)
    fmean = pw @ f
    f_variance = (f - fmean).T @ ((f - fmean) * pw[:, None])
    if C != 2:
        nan = np.full(K, np.nan)
        return PopulationTerms(g, variance, L, delta, A, nan, nan, math.nan, nan, math.nan, nan, f_variance)
    p0, p1 = model.class_probs
    delta_k = (cond_mean[1] - cond_mean[0]).reshape(K, dim)
    d_k = np.einsum("kd,kde,ke->k", W, L, W)
    b_k = np.einsum("kd,kd->k", W, delta_k)
    evals, evecs = np.linalg.eigh(f_variance)
    lam, s = float(evals[-1]), evecs[:, -1]
    s = s if s @ b_k >= 0 else -s
    Z = float(np.sqrt(np.sum((b_k / (lam - d_k)) ** 2)))
    ratio = b_k ** 2 / (lam - d_k)
    dk = p0 * p1 / (Z ** 2 * (lam - d_k)) * (ratio.sum() - ratio)
    return PopulationTerms(g, variance, L, delta, A, d_k, b_k, lam, s, Z, dk, f_variance)


def blowup_closed_form(y0: float, b: float, t: float) -> float:
    r"""Eq. 147: the solution of :math:`\dot y = (y + b)\,y`, from :math:`\frac{y}{y+b} = \frac{y_0}{y_0+b}e^{bt}` (before blow-up)."""
    y0, b, t = check_real("y0", y0), check_positive("b", b), check_real("t", t)
    r = y0 / (y0 + b) * math.exp(b * t)
    if r >= 1:
        raise ValueError(f"t = {t} is at or past the blow-up time {blowup_time(y0, b)}.")
    return b * r / (1 - r)


def blowup_time(y0: float, b: float) -> float:
    r"""Eq. 150: :math:`t^* = \frac1b\ln(1 + b/y_0)` for :math:`y_0 > 0`."""
    return math.log1p(check_positive("b", b) / check_positive("y0", y0)) / b


def sphere_basin_fraction(dim: int, c: float, *, b: float = 0.5, samples: int = 4000, steps: int = 400, dt: float = 0.05,
                          seed: int = 0) -> float:
    r"""Fraction of uniformly random starts on the sphere that converge to :math:`+\mathbf u_1` under the projected flow

    .. math:: \dot{\mathbf y} = P^\perp_{\mathbf y}\big[(\mathbf y + \mathbf b)\circ\mathbf y\big],\qquad b_1 = b + c,\ b_l = b\ (l > 1),

    i.e. :math:`A = \sum_l g_l(\mathbf u_l^\top\mathbf w)\mathbf u_l\mathbf u_l^\top` with :math:`g_l(y) = y + b_l`
    in the basis :math:`\{\mathbf u_l\}`,
    plus the modulation :math:`c\,\mathbf u_1\mathbf u_1^\top` of Theorem 6. Euler steps on the sphere, vectorised over starts.
    """
    dim = check_int("dim", dim, 2, 1000)
    c = check_nonnegative("c", c)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    y = rng.standard_normal((check_int("samples", samples, 1), dim))
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    bias = np.full(dim, check_positive("b", b))
    bias[0] += c
    for _ in range(check_int("steps", steps, 1)):
        grad = (y + bias) * y
        grad -= np.sum(grad * y, axis=1, keepdims=True) * y
        y += check_positive("dt", dt) * grad
        y /= np.linalg.norm(y, axis=1, keepdims=True)
    return float(np.mean(y[:, 0] > 0.999))


def win_probability(d: int, eps: float) -> float:
    r"""Eq. 155: :math:`\mathbb P[E_l]` for :math:`Y_l\sim U[-1,1]` i.i.d. (:math:`l = 1..d`),
    :math:`E_l = \{Y_l > 0,\ Y_l + \epsilon \ge \max_{l'\ne l}Y_{l'}\}`."""
    d = check_int("d", d, 1)
    eps = check_in_range("eps", eps, -1.0 + 1e-15, math.inf)
    if eps > 1:
        return 0.5
    if eps >= 0:
        return (1 - ((1 + eps) / 2) ** d) / d + eps / 2
    return ((1 + eps / 2) ** d - ((1 + eps) / 2) ** d) / d


def win_probability_mc(d: int, eps: float, *, samples: int = 200_000, seed: int = 0) -> float:
    """Monte Carlo estimate of the probability of :func:`win_probability`."""
    d = check_int("d", d, 2)
    eps = check_real("eps", eps)
    rng = np.random.default_rng(check_int("seed", seed, 0))
    Y = rng.uniform(-1, 1, size=(check_int("samples", samples, 1), d))
    return float(np.mean((Y[:, 0] > 0) & (Y[:, 0] + eps >= Y[:, 1:].max(axis=1))))
