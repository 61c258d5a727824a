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

Everything computes in torch, on the device and dtype of its input (models and draws: those of
:func:`clbook.setup`); random numbers come from a CPU generator seeded with ``seed`` (:func:`clbook.generator`).

Used in Chapter 9.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from .. import activations
from .._validate import (
    as_tensor,
    check_choice,
    check_in_range,
    check_int,
    check_nonnegative,
    check_positive,
    check_real,
    check_same,
    check_tensor,
)

__all__ = [
    "gated_inputs", "lemma4_rhs", "LatentTokens", "make_latent_tokens", "population_terms", "PopulationTerms",
    "blowup_closed_form", "blowup_time", "sphere_basin_fraction", "win_probability", "win_probability_mc",
]

ACTIVATIONS = activations.supported("relu", "linear", "leakyrelu")


def _hprime(t: torch.Tensor, activation: str) -> torch.Tensor:
    """:math:`h'(t)` of :func:`clbook.dynamics.onelayer.activation_derivative` with the gate at 0 (``leakyrelu``: slope 0.05)."""
    return activations.derivative_unchecked(t, activation, tol=0.0)


def gated_inputs(W: torch.Tensor, x: torch.Tensor, activation: str = "relu") -> torch.Tensor:
    r"""Gated inputs :math:`\tilde{\mathbf x}_{km}[i] = \mathbf x_k[i]\,h'(\mathbf w_{km}^\top\mathbf x_k[i])`, shape ``[n, K, M, d]``.

    ``W [K, M, d]``, ``x [n, K, d]``, floating point, finite, same dtype. For a homogeneous activation,
    :math:`f_{1km} = \tilde{\mathbf x}_{km}^\top\mathbf w_{km}`.
    """
    check_choice("activation", activation, ACTIVATIONS)
    W, x = check_tensor("W", W), check_tensor("x", x)
    if W.ndim != 3 or x.ndim != 3 or x.shape[1:] != (W.shape[0], W.shape[2]):
        raise ValueError(f"need W [K, M, d] and x [n, K, d]; got W of shape {tuple(W.shape)} and x of shape {tuple(x.shape)}.")
    check_same(("W", "x"), W, x)
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
    W : [K, M, d]; V : [out, K*M]; x1, x2 : [n, K, d] (the two views, ``n >= 2``); alpha : [n, n]. One dtype.

    Returns
    -------
    (dV, dW) with the shapes of ``V`` and ``W``.
    """
    g1, g2 = gated_inputs(W, x1, activation), gated_inputs(W, x2, activation)  # [n, K, M, d]
    K, M, d = W.shape
    V = check_tensor("V", V)
    if V.ndim != 2 or V.shape[1] != K * M:
        raise ValueError(f"V must have shape [out, K*M = {K * M}]; got {tuple(V.shape)}.")
    check_same(("x1", "x2"), x1, x2, shape=True)
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
    ``atoms`` lists every :math:`(z, a_1, \dots, a_K)` (integers) with its probability ``weights``. Rescale the fields with
    ``dataclasses.replace(model, magnitudes=...)``.
    """

    class_probs: torch.Tensor  # [C]
    token_probs: torch.Tensor  # [C, K, d]
    magnitudes: torch.Tensor  # [K]
    atoms: torch.Tensor  # [N, 1 + K] long: z, a_1..a_K
    weights: torch.Tensor  # [N]

    def inputs(self) -> torch.Tensor:
        """The input of every atom, ``[N, K, d]``: one-hot tokens scaled by the field magnitudes."""
        d = self.token_probs.shape[2]
        onehot = torch.nn.functional.one_hot(self.atoms[:, 1:], d).to(self.weights.dtype)
        return onehot * self.magnitudes.to(self.weights).view(1, -1, 1)


def _gamma(alpha: float, n: int, generator: torch.Generator) -> torch.Tensor:
    r"""``n`` draws of :math:`\mathrm{Gamma}(\alpha, 1)` with ``generator``, float64 on the CPU.

    Marsaglia and Tsang (2000); :math:`\alpha < 1` by
    the boost :math:`G_{\alpha+1}U^{1/\alpha}`), float64 on the CPU.
    """
    a = alpha + 1 if alpha < 1 else alpha
    dd = a - 1 / 3
    c = 1 / math.sqrt(9 * dd)
    out = torch.empty(n, dtype=torch.float64)
    todo = torch.arange(n)
    while todo.numel():
        x = torch.randn(todo.numel(), generator=generator, dtype=torch.float64)
        u = torch.rand(todo.numel(), generator=generator, dtype=torch.float64)
        v = (1 + c * x) ** 3
        ok = (v > 0) & (torch.log(u) < 0.5 * x * x + dd - dd * v + dd * torch.log(v.clamp_min(1e-300)))
        out[todo[ok]] = dd * v[ok]
        todo = todo[~ok]
    if alpha < 1:
        out = out * torch.rand(n, generator=generator, dtype=torch.float64) ** (1 / alpha)
    return out


def make_latent_tokens(*, num_fields: int = 3, num_tokens: int = 4, num_classes: int = 2, class_probs=None,
                       concentration: float = 1.0, magnitudes=None, seed: int = 0) -> LatentTokens:
    r"""A random :class:`LatentTokens`: token probabilities from a Dirichlet(``concentration``) per class and field.

    Parameters
    ----------
    num_fields, num_tokens, num_classes : int
        :math:`K\in[1, 8]`, :math:`d\in[2, 8]`, :math:`C\in[2, 6]`, with at most 200 000 atoms :math:`Cd^K`.
    class_probs : sequence of float, optional
        :math:`\mathbb P[z = c]`, ``C`` positive numbers summing to one (default uniform).
    concentration : float
        Dirichlet parameter, ``> 0``.
    magnitudes : sequence of float, optional
        One positive scale per field (default 1), to make the fields' variances differ (the situation BatchNorm
        addresses in App. D).
    seed : int
        Seed of the CPU generator of the Dirichlet draws (Gamma variables normalised).
    """
    from ..config import generator, target_device_dtype

    K = check_int("num_fields", num_fields, 1, 8)
    d = check_int("num_tokens", num_tokens, 2, 8)
    C = check_int("num_classes", num_classes, 2, 6)
    if d ** K * C > 200_000:
        raise ValueError(f"num_tokens ** num_fields * num_classes = {d ** K * C} atoms is too many to enumerate (max 200000).")
    concentration = check_positive("concentration", concentration)
    device, dtype = target_device_dtype(None, None)
    p = torch.full((C,), 1 / C, dtype=torch.float64) if class_probs is None else \
        as_tensor("class_probs", class_probs, dtype=torch.float64, device="cpu")
    if p.shape != (C,) or bool((p <= 0).any()) or abs(float(p.sum()) - 1) > 1e-12:
        raise ValueError(f"class_probs must be {C} positive numbers summing to 1; got class_probs = {class_probs}.")
    mags = torch.ones(K, dtype=torch.float64) if magnitudes is None else \
        as_tensor("magnitudes", magnitudes, dtype=torch.float64, device="cpu")
    if mags.shape != (K,) or bool((mags <= 0).any()):
        raise ValueError(f"magnitudes must be {K} positive numbers; got magnitudes = {magnitudes}.")
    g = _gamma(concentration, C * K * d, generator(check_int("seed", seed, 0))).reshape(C, K, d)
    token_probs = g / g.sum(-1, keepdim=True)
    atoms = torch.tensor([(z, *a) for z in range(C) for a in itertools.product(range(d), repeat=K)], dtype=torch.long)
    z = atoms[:, 0]
    weights = p[z] * torch.stack([token_probs[z, k, atoms[:, 1 + k]] for k in range(K)]).prod(0)
    to = dict(device=device, dtype=dtype)
    return LatentTokens(p.to(**to), token_probs.to(**to), mags.to(**to), atoms.to(device), weights.to(**to))


@dataclass(frozen=True)
class PopulationTerms:
    r"""Population quantities of Lemma 5, Theorem 5 and Corollary 3 for :math:`M = 1` (all exact, torch tensors)."""

    gated: torch.Tensor  # [N, K, d] gated inputs of every atom
    variance: torch.Tensor  # [K*d, K*d]  V[x~]
    L: torch.Tensor  # [K, d, d]   E_z V[x~_k | z]
    delta: torch.Tensor  # [C, K*d]   Delta(c) = E[x~ | z=c] - E[x~ | z != c]
    A: torch.Tensor  # [K, d, d]   A_k = V[x~_k]
    d: torch.Tensor  # [K]  d_k = w_k^T L_k w_k
    b: torch.Tensor  # [K]  b_k = w_k^T Delta_k (C = 2; Delta_k := E[x~_k|z=1] - E[x~_k|z=0])
    lam: float  # top eigenvalue of V[f_1]
    s: torch.Tensor  # [K] its unit eigenvector (sign: s . b >= 0)
    Z: float
    delta_k: torch.Tensor  # [K] Theorem 5's delta_k, Eq. 143
    f_variance: torch.Tensor  # [K, K] V[f_1]


def population_terms(model: LatentTokens, W, *, activation: str = "relu") -> PopulationTerms:
    r"""Exact population terms for filters ``W [K, d]`` (one filter per field; a list or array is converted).

    The scalars of Theorem 5 (``d``, ``b``, ``lam``, ``s``, ``Z``, ``delta_k``) need ``num_classes == 2`` and are NaN
    otherwise; ``variance``, ``L``, ``delta``, ``A`` and ``f_variance`` are computed for any :math:`C`. Computed on the
    device and in the dtype of the model.
    """
    if not isinstance(model, LatentTokens):
        raise TypeError(f"model must be a LatentTokens (see make_latent_tokens); got {type(model).__name__}.")
    check_choice("activation", activation, ACTIVATIONS)
    C, K, dim = model.token_probs.shape
    pw = model.weights
    W = as_tensor("W", W, dtype=pw.dtype, device=pw.device)
    if W.shape != (K, dim):
        raise ValueError(f"W must have shape [K, d] = [{K}, {dim}]; got {tuple(W.shape)}.")
    x = model.inputs()
    g = x * _hprime(torch.einsum("nkd,kd->nk", x, W), activation).unsqueeze(-1)
    flat = g.reshape(len(g), -1)
    mean = pw @ flat
    variance = (flat - mean).T @ ((flat - mean) * pw[:, None])
    z = model.atoms[:, 0]
    cond_mean = torch.stack([pw[z == c] @ flat[z == c] / model.class_probs[c] for c in range(C)])
    L = torch.zeros(K, dim, dim, dtype=pw.dtype, device=pw.device)
    for c in range(C):
        sel = z == c
        centred = (flat[sel] - cond_mean[c]).reshape(-1, K, dim)
        L = L + model.class_probs[c] * torch.einsum("n,nki,nkj->kij", pw[sel] / model.class_probs[c], centred, centred)
    delta = torch.stack([cond_mean[c] - (mean - model.class_probs[c] * cond_mean[c]) / (1 - model.class_probs[c])
                         for c in range(C)])
    A = torch.stack([variance[k * dim:(k + 1) * dim, k * dim:(k + 1) * dim] for k in range(K)])
    f = torch.einsum("nkd,kd->nk", g, W)
    fmean = pw @ f
    f_variance = (f - fmean).T @ ((f - fmean) * pw[:, None])
    if C != 2:
        nan = torch.full((K,), math.nan, dtype=pw.dtype, device=pw.device)
        return PopulationTerms(g, variance, L, delta, A, nan, nan, math.nan, nan, math.nan, nan, f_variance)
    p0, p1 = model.class_probs
    delta_k = (cond_mean[1] - cond_mean[0]).reshape(K, dim)
    d_k = torch.einsum("kd,kde,ke->k", W, L, W)
    b_k = torch.einsum("kd,kd->k", W, delta_k)
    evals, evecs = torch.linalg.eigh(f_variance)
    lam, s = float(evals[-1]), evecs[:, -1]
    s = s if float(s @ b_k) >= 0 else -s
    Z = float(torch.sqrt(torch.sum((b_k / (lam - d_k)) ** 2)))
    ratio = b_k ** 2 / (lam - d_k)
    dk = p0 * p1 / (Z ** 2 * (lam - d_k)) * (ratio.sum() - ratio)
    return PopulationTerms(g, variance, L, delta, A, d_k, b_k, lam, s, Z, dk, f_variance)


def blowup_closed_form(y0: float, b: float, t: float) -> float:
    r"""Eq. 147: the solution of :math:`\dot y = (y + b)\,y`, from :math:`\frac{y}{y+b} = \frac{y_0}{y_0+b}e^{bt}` (before blow-up).

    ``y0`` finite with :math:`y_0 + b\ne0`, ``b > 0``, ``t`` finite and before the blow-up time (:func:`blowup_time`).
    """
    y0, b, t = check_real("y0", y0), check_positive("b", b), check_real("t", t)
    if y0 + b == 0:
        raise ValueError(f"y0 + b must be non-zero (y0 = -b is a fixed point); got y0 = {y0}, b = {b}.")
    r = y0 / (y0 + b) * math.exp(min(b * t, 700.0))
    if r >= 1:
        raise ValueError(f"t = {t} is at or past the blow-up time {blowup_time(y0, b)}.")
    return b * r / (1 - r)


def blowup_time(y0: float, b: float) -> float:
    r"""Eq. 150: :math:`t^* = \frac1b\ln(1 + b/y_0)` for :math:`y_0 > 0`, :math:`b > 0`."""
    return math.log1p(check_positive("b", b) / check_positive("y0", y0)) / b


def sphere_basin_fraction(dim: int, c: float, *, b: float = 0.5, samples: int = 4000, steps: int = 400, dt: float = 0.05,
                          seed: int = 0) -> float:
    r"""Fraction of uniformly random starts on the sphere that converge to :math:`+\mathbf u_1`.

    Under the projected flow

    .. math:: \dot{\mathbf y} = P^\perp_{\mathbf y}\big[(\mathbf y + \mathbf b)\circ\mathbf y\big],\qquad b_1 = b + c,\ b_l = b\ (l > 1),

    i.e. :math:`A = \sum_l g_l(\mathbf u_l^\top\mathbf w)\mathbf u_l\mathbf u_l^\top` with :math:`g_l(y) = y + b_l`
    in the basis :math:`\{\mathbf u_l\}`, plus the modulation :math:`c\,\mathbf u_1\mathbf u_1^\top` of Theorem 6. Euler steps on
    the sphere, vectorised over starts, on the device of :func:`clbook.setup`; starts drawn with ``clbook.generator(seed)``.
    A start counts when its final first coordinate exceeds 0.999.

    ``dim`` in [2, 1000], ``c >= 0``, ``b > 0``, ``samples >= 1``, ``steps >= 1``, ``dt > 0``.
    """
    from ..config import generator, randn

    dim = check_int("dim", dim, 2, 1000)
    c = check_nonnegative("c", c)
    b = check_positive("b", b)
    samples, steps = check_int("samples", samples, 1), check_int("steps", steps, 1)
    dt = check_positive("dt", dt)
    y = randn(samples, dim, generator=generator(check_int("seed", seed, 0)))
    y = y / y.norm(dim=1, keepdim=True)
    bias = torch.full((dim,), b, dtype=y.dtype, device=y.device)
    bias[0] += c
    for _ in range(steps):
        grad = (y + bias) * y
        grad = grad - (grad * y).sum(dim=1, keepdim=True) * y
        y = y + dt * grad
        y = y / y.norm(dim=1, keepdim=True)
    return float((y[:, 0] > 0.999).double().mean())


def win_probability(d: int, eps: float) -> float:
    r"""Eq. 155.

    :math:`\mathbb P[E_l]` for :math:`Y_l\sim U[-1,1]` i.i.d. (:math:`l = 1..d`), :math:`E_l = \{Y_l > 0,\ Y_l +
    \epsilon \ge \max_{l'\ne l}Y_{l'}\}`; ``d >= 1``, :math:`\epsilon > -1` finite.
    """
    d = check_int("d", d, 1)
    eps = check_in_range("eps", eps, -1.0 + 1e-15, math.inf)
    if eps > 1:
        return 0.5
    if eps >= 0:
        return (1 - ((1 + eps) / 2) ** d) / d + eps / 2
    return ((1 + eps / 2) ** d - ((1 + eps) / 2) ** d) / d


def win_probability_mc(d: int, eps: float, *, samples: int = 200_000, seed: int = 0) -> float:
    """Monte Carlo estimate of the probability of :func:`win_probability`.

    Requires ``d >= 2``, ``eps`` finite, ``samples >= 1``;
    drawn with ``clbook.generator(seed)``.
    """
    from ..config import generator, rand

    d = check_int("d", d, 2)
    eps = check_real("eps", eps)
    Y = 2 * rand(check_int("samples", samples, 1), d, generator=generator(check_int("seed", seed, 0))) - 1
    return float(((Y[:, 0] > 0) & (Y[:, 0] + eps >= Y[:, 1:].max(dim=1).values)).double().mean())
