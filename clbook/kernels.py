r"""Kernel structure of the pairwise importance :math:`\alpha` and the large-batch limit of :math:`\mathbb C_\alpha`.

Tian (2023), *Understanding the role of nonlinearity in training dynamics of contrastive learning*,
Sec. 2: Definition 1 (kernel structure :math:`\alpha_{ij} = \mathcal K(x_0[i], x_0[j]) =
\sum_l\phi_l(x_0[i])\phi_l(x_0[j])` with :math:`\phi_l\ge 0`), Definition 2 (adjusted densities
:math:`\tilde p_l = \phi_l p_D / z_l`), Lemma 1 (the Gaussian :math:`\alpha` has kernel structure,
App. A Eqs. 17–22) and Lemma 2 / Corollary 1 (Eq. 4: :math:`\mathbb C_\alpha \to \sum_l z_l^2
\mathbb V_{\tilde p_l}[\bar g]` as :math:`N\to\infty`).

The finite-batch :math:`\mathbb C_\alpha` itself, in Tian (2023)'s scaling (Eq. 3, :math:`1/2N^2`), is
:func:`clbook.covariance.contrastive_covariance` with ``convention="tian2023"``; this module holds what Lemma 2
says it converges to. :func:`pairwise_limit` is that covariance of the atoms (no augmentation) with the weights
:math:`\alpha_{ij} = p_ip_j\mathcal K(x_i, x_j)`.

Population quantities (:func:`adjusted_densities`, :func:`variance_limit`, :func:`pairwise_limit`)
take a discrete distribution: atoms with probabilities ``weights``. Continuous data enter as a large
sample with equal weights.

Used in Chapters 5–8 (:func:`batch_min_eigenvalues`: Chapter 5's finite-batch counterexample;
:func:`relu_batch_covariances`: its batch estimates of Lemma 2).
"""
from __future__ import annotations

import itertools
import math
import warnings

import torch

from ._validate import as_tensor, check_int, check_nonnegative, check_positive, check_same, check_tensor

__all__ = [
    "gaussian_alpha", "uniform_alpha", "multi_indices", "gaussian_log_features", "gaussian_features",
    "uniform_features", "log_kernel_from_features", "adjusted_densities", "variance_limit", "pairwise_limit",
    "batch_min_eigenvalues", "relu_batch_covariances",
]


def _as_matrix(name: str, g, like: torch.Tensor | None = None) -> torch.Tensor:
    """``g`` as a finite floating-point ``[n, p]``.

    ``[n]`` reads as ``[n, 1]``; integers and lists are converted,
    on the dtype and device of ``like`` when given.
    """
    g = as_tensor(name, g, dtype=None if like is None else like.dtype, device=None if like is None else like.device)
    if g.ndim == 1:
        g = g.unsqueeze(1)
    if g.ndim != 2 or g.shape[0] < 1:
        raise ValueError(f"{name} must have shape [n] or [n, p] with n >= 1; got {tuple(g.shape)}.")
    return g


def gaussian_alpha(g, *, temperature: float) -> torch.Tensor:
    r"""Gaussian pairwise importance (Lemma 1), shape ``[n, n]``.

    .. math::

        \alpha_{ij} = \exp\big(-\|g(x_0[i]) - g(x_0[j])\|_2^2/2\tau\big).

    Parameters
    ----------
    g : torch.Tensor, shape=[n, p] or [n]
        The embeddings :math:`g(x_0[i])` of the un-augmented samples.
    temperature : float
        :math:`\tau > 0`.
    """
    g = _as_matrix("g", g)
    tau = check_positive("temperature", temperature)
    return torch.exp(-torch.cdist(g, g).pow(2) / (2 * tau))


def uniform_alpha(n: int, *, dtype=None, device=None) -> torch.Tensor:
    r"""Uniform pairwise importance :math:`\alpha_{ij}\equiv 1` (the quadratic loss), shape ``[n, n]``, ``n >= 1``.

    ``dtype``/``device`` default to those of :func:`clbook.setup`.
    """
    from .config import target_device_dtype

    n = check_int("n", n, 1)
    device, dtype = target_device_dtype(device, dtype)
    return torch.ones(n, n, dtype=dtype, device=device)


def multi_indices(dim: int, terms: int) -> torch.Tensor:
    r"""All multi-indices :math:`l = (l_1,\dots,l_p)` with :math:`0\le l_k < L`, shape ``[L**p, p]`` (lexicographic)."""
    dim = check_int("dim", dim, 1, 6)
    terms = check_int("terms", terms, 1)
    if terms**dim > 2_000_000:
        raise ValueError(f"terms**dim must be <= 2e6 features; got terms = {terms}, dim = {dim} ({terms**dim}).")
    return torch.tensor(list(itertools.product(range(terms), repeat=dim)), dtype=torch.float64).reshape(-1, dim)


TRUNCATION_TOLERANCE = math.log(1e3)
r"""Default ``tolerance`` of :func:`gaussian_log_features`: warn when the truncated kernel of two of the given points may
be smaller than the kernel by more than a factor 1000 (a log-kernel error above :math:`\log 1000\approx 6.9`). It is
that lax so that a deliberate truncation study (Chapter 5 shows :math:`L = 2`, a log error of 5.8) stays quiet; pass
a smaller ``tolerance`` (e.g. ``1e-6``) where the features must reproduce the kernel."""


def _log_poisson_cdf(k: int, lam: float) -> float:
    r""":math:`\log P[\mathrm{Poisson}(\lambda)\le k]` (a lower bound, the log of the last term, where the CDF underflows)."""
    from scipy.special import pdtr

    cdf = float(pdtr(k, lam))
    if cdf > 1e-300:
        return math.log(cdf)
    return k * math.log(lam) - lam - math.lgamma(k + 1) if lam > 0 else 0.0


def _truncation_bound(y: torch.Tensor, tau: float, terms: int) -> float:
    r"""Upper bound on :math:`|\log\mathcal K_L - \log\mathcal K|` over pairs of rows of ``y >= 0``.

    Per coordinate the truncated series keeps :math:`P[\mathrm{Poisson}(y_ky'_k/\tau)\le L-1]` of
    :math:`e^{y_ky'_k/\tau}`, which decreases in :math:`y_ky'_k`, so the worst pair has :math:`\lambda_k = \max y_k^2/\tau`.
    """
    lam = (y.detach().amax(dim=0).double().pow(2) / tau).tolist()
    return -sum(_log_poisson_cdf(terms - 1, v) for v in lam)


def _terms_needed(y: torch.Tensor, tau: float, terms: int, tolerance: float) -> int:
    """The smallest L > terms whose bound meets ``tolerance`` (doubling, then bisection)."""
    lo, hi = terms, max(2 * terms, 2)
    while _truncation_bound(y, tau, hi) > tolerance:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _truncation_bound(y, tau, mid) > tolerance else (lo, mid)
    return hi


def gaussian_log_features(g, *, temperature: float, terms: int, shift=None,
                          tolerance: float | None = TRUNCATION_TOLERANCE) -> torch.Tensor:
    r"""Logarithms of the non-negative features of the Gaussian kernel (Lemma 1, Eq. 22), shape ``[n, L**p]``.

    With :math:`y = g(x) - v \ge 0` (componentwise; :math:`v` is ``shift``, by default the smallest
    value of each coordinate in ``g``) and a multi-index :math:`l`,

    .. math::

        \log\phi_l(x) = -\frac{\|y\|^2}{2\tau} + \sum_{k=1}^{p}\Big(l_k\log y_k - \frac{l_k}{2}\log\tau
        - \tfrac12\log l_k!\Big),
        \qquad \sum_{l}\phi_l(x)\phi_l(x') = e^{-\|g(x)-g(x')\|^2/2\tau}\ \text{as } L\to\infty .

    This is the paper's ``AllChoose`` expansion of :math:`e^{y^\top y'/\tau}` with equal monomials
    grouped (the multinomial weights :math:`k!/\prod_k l_k!` cancel against :math:`1/k!`). Every
    feature is :math:`\ge 0` because :math:`y\ge 0`; a zero coordinate gives :math:`\log\phi_l = -\infty`
    for :math:`l_k > 0`. Working in log space keeps large :math:`\|y\|^2/\tau` finite.

    Parameters
    ----------
    g : torch.Tensor, shape=[n, p] or [n]
    temperature : float
        :math:`\tau > 0`.
    terms : int
        :math:`L`, the number of terms per coordinate (truncation).
    shift : torch.Tensor, shape=[p], optional
        :math:`v`; must satisfy :math:`g - v \ge 0`. Use one shift for all points that share a kernel.
    tolerance : float or None
        Warn (``RuntimeWarning``, with the bound) when the truncation error of the log-kernel between two of the
        given points, bounded by :math:`-\sum_k\log P[\mathrm{Poisson}(\max_i y_{ik}^2/\tau)\le L-1]` (exact in one
        dimension), exceeds ``tolerance``; default :data:`TRUNCATION_TOLERANCE` (a factor 1000); ``None``: no check.
    """
    return _gaussian_log_features(g, temperature, terms, shift, tolerance, stacklevel=3)


def _gaussian_log_features(g, temperature, terms, shift, tolerance, *, stacklevel: int) -> torch.Tensor:
    g = _as_matrix("g", g)
    tau = check_positive("temperature", temperature)
    v = g.min(dim=0).values if shift is None else as_tensor("shift", shift, ndim=1, dtype=g.dtype, device=g.device)
    if v.shape != (g.shape[1],):
        raise ValueError(f"shift must hold p = {g.shape[1]} values, one per coordinate of g; got shape {tuple(v.shape)}.")
    y = g - v
    if bool((y < 0).any()):
        raise ValueError("shift must lie below every g componentwise (g - shift >= 0): Lemma 1 needs g bounded below.")
    idx = multi_indices(g.shape[1], terms).to(g)
    if tolerance is not None:
        tolerance = check_nonnegative("tolerance", tolerance)
        bound = _truncation_bound(y, tau, terms)
        if bound > tolerance:
            need = _terms_needed(y, tau, terms, max(tolerance, 1e-12))
            warnings.warn(f"gaussian_log_features: terms = {terms} truncates the kernel: the log-kernel error may reach "
                          f"{bound:.3g} > tolerance = {tolerance:.3g} (max y^2/temperature = "
                          f"{float(y.amax(dim=0).pow(2).max()) / tau:.3g}); terms >= {need} meets the tolerance.",
                          RuntimeWarning, stacklevel=stacklevel)
    poly = (torch.xlogy(idx.unsqueeze(0), y.unsqueeze(1))
            - idx * (0.5 * math.log(tau)) - 0.5 * torch.lgamma(idx + 1)).sum(dim=2)
    return poly - (y.pow(2).sum(dim=1, keepdim=True) / (2 * tau))


def gaussian_features(g, *, temperature: float, terms: int, shift=None,
                      tolerance: float | None = TRUNCATION_TOLERANCE) -> torch.Tensor:
    r"""The features :math:`\phi_l(x)\ge 0` of :func:`gaussian_log_features`, exponentiated, shape ``[n, L**p]``."""
    return _gaussian_log_features(g, temperature, terms, shift, tolerance, stacklevel=3).exp()


def uniform_features(n: int, *, dtype=None, device=None) -> torch.Tensor:
    r"""The one feature :math:`\phi_0\equiv 1` of the uniform :math:`\alpha` (Def. 1 with a 1-D map), shape ``[n, 1]``.

    ``n >= 1``; ``dtype``/``device`` default to those of :func:`clbook.setup`.
    """
    from .config import target_device_dtype

    n = check_int("n", n, 1)
    device, dtype = target_device_dtype(device, dtype)
    return torch.ones(n, 1, dtype=dtype, device=device)


def log_kernel_from_features(log_a, log_b) -> torch.Tensor:
    r""":math:`\log\mathcal K(a_i, b_j) = \log\sum_l\phi_l(a_i)\phi_l(b_j)` by ``logsumexp``, shape ``[n, m]``."""
    log_a = check_tensor("log_a", log_a, ndim=2, finite=False)
    log_b = check_tensor("log_b", log_b, ndim=2, finite=False)
    if bool(torch.isnan(log_a).any()) or bool(torch.isnan(log_b).any()) or bool(torch.isposinf(log_a).any()) \
            or bool(torch.isposinf(log_b).any()):
        raise ValueError("log_a and log_b must be logarithms of non-negative features: no NaN and no +inf (-inf is a zero).")
    check_same(("log_a", "log_b"), log_a, log_b)
    if log_a.shape[1] != log_b.shape[1]:
        raise ValueError(f"log_a and log_b need the same number of features; got {log_a.shape[1]} and {log_b.shape[1]}.")
    return torch.logsumexp(log_a.unsqueeze(1) + log_b.unsqueeze(0), dim=2)


def _weights(weights, n: int, like: torch.Tensor) -> torch.Tensor:
    w = as_tensor("weights", weights, ndim=1, dtype=like.dtype, device=like.device)
    if w.shape[0] != n:
        raise ValueError(f"weights must have one entry per atom ({n}); got {w.shape[0]}.")
    if bool((w < 0).any()) or abs(float(w.sum()) - 1) > 1e-9:
        raise ValueError(f"weights must be a probability vector (>= 0, sum 1); got sum {float(w.sum()):.6g}.")
    return w


def adjusted_densities(features, weights) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Definition 2: the masses :math:`z_l` and the adjusted densities :math:`\tilde p_l` on the atoms.

    .. math::

        z_l = \sum_i p_i\,\phi_l(x_i) \ge 0,\qquad \tilde p_l(x_i) = \phi_l(x_i)\,p_i / z_l .

    ``features [n, L]`` holds :math:`\phi_l(x_i)\ge 0` (e.g. :func:`gaussian_features`), ``weights [n]`` the
    probabilities :math:`p_i` (non-negative, summing to one within 1e-9). Returns ``(z [L], ptilde [L, n])``; a row
    with :math:`z_l = 0` is left at zero.
    """
    phi = as_tensor("features", features, ndim=2)
    if bool((phi < 0).any()):
        raise ValueError("features must be non-negative (Definition 1).")
    w = _weights(weights, phi.shape[0], phi)
    z = w @ phi
    safe = torch.where(z > 0, z, torch.ones_like(z))
    ptilde = (phi * w.unsqueeze(1)).T / safe.unsqueeze(1)
    return z, torch.where(z.unsqueeze(1) > 0, ptilde, torch.zeros_like(ptilde))


def variance_limit(gbar, weights, features) -> torch.Tensor:
    r"""Eq. 4, right-hand side: :math:`\sum_l z_l^2\,\mathbb V_{x_0\sim\tilde p_l}[\bar g(x_0)]`, shape ``[p, p]``.

    ``gbar [n, p]`` (or ``[n]``) holds :math:`\bar g(x_i) = \mathbb E_{\mathrm{aug}}[g(x)\mid x_0 = x_i]` on the atoms,
    ``weights [n]`` their probabilities and ``features [n, L]`` the :math:`\phi_l(x_i)` (:func:`adjusted_densities`).
    """
    gbar = _as_matrix("gbar", gbar)
    features = as_tensor("features", features, ndim=2, dtype=gbar.dtype, device=gbar.device)
    if features.shape[0] != gbar.shape[0]:
        raise ValueError(f"gbar and features must describe the same atoms; got n = {gbar.shape[0]} and {features.shape[0]}.")
    z, pt = adjusted_densities(features, weights)
    mean = pt @ gbar                                     # [L, p]
    second = torch.einsum("ln,np,nq->lpq", pt, gbar, gbar)
    var = second - mean.unsqueeze(2) * mean.unsqueeze(1)
    return torch.einsum("l,lpq->pq", z.pow(2), var)


def pairwise_limit(gbar, weights, kernel) -> torch.Tensor:
    r"""Eq. 4 without the feature expansion, shape ``[p, p]``.

    .. math::

        \tfrac12\sum_{i,j}p_ip_j\,\mathcal K(x_i,x_j)\,(\bar g_i - \bar g_j)(\bar g_i - \bar g_j)^\top
        = \sum_l z_l^2\,\mathbb V_{\tilde p_l}[\bar g],

    i.e. half the contrastive covariance (:func:`clbook.covariance.contrastive_covariance`, Tian 2022's Eq. 5) of the
    ``n >= 2`` atoms without augmentation, with the pair weights :math:`\alpha_{ij} = p_ip_j\mathcal K(x_i, x_j)`.

    Parameters
    ----------
    gbar : torch.Tensor, shape=[n, p] or [n]
        :math:`\bar g(x_i)` on the atoms.
    weights : torch.Tensor, shape=[n]
        The probabilities :math:`p_i` of the atoms.
    kernel : torch.Tensor, shape=[n, n]
        :math:`\mathcal K(x_i, x_j)`.
    """
    from .covariance import contrastive_covariance

    gbar = _as_matrix("gbar", gbar)
    n = gbar.shape[0]
    if n < 2:
        raise ValueError(f"gbar must hold n >= 2 atoms (a variance needs pairs); got n = {n}.")
    K = as_tensor("kernel", kernel, ndim=2, dtype=gbar.dtype, device=gbar.device)
    if K.shape != (n, n):
        raise ValueError(f"kernel must have shape [{n}, {n}]; got {tuple(K.shape)}.")
    w = _weights(weights, n, gbar)
    return 0.5 * contrastive_covariance(K * torch.outer(w, w), gbar, gbar)


def batch_min_eigenvalues(n: int, reps: int, *, scales, noise: float, generator: torch.Generator) -> torch.Tensor:
    r"""Smallest eigenvalue of the finite-batch :math:`\mathbb C^{(N)}_\alpha[x]` (Eq. 3, uniform :math:`\alpha`) for ``reps`` batches.

    Each batch draws ``n`` samples :math:`x_0\sim\mathcal N(0, \operatorname{diag}(s)^2)` and two views
    :math:`x = x_0 + \sigma\epsilon`, :math:`x' = x_0 + \sigma\epsilon'`; the large-batch limit (Lemma 2, Cor. 1) is
    :math:`\operatorname{diag}(s)^2`, positive definite, while a finite batch is often indefinite (Chapter 5).

    Parameters
    ----------
    n : int
        Batch size :math:`N\ge2`.
    reps : int
        Number of batches, ``>= 1``.
    scales : sequence of float, shape=[p]
        The standard deviations :math:`s` of the data, positive.
    noise : float
        The augmentation noise :math:`\sigma\ge0`.
    generator : torch.Generator
        CPU generator of the draws (:func:`clbook.generator`); draws are made on the CPU, then moved to the device
        of :func:`clbook.setup`.

    Returns
    -------
    torch.Tensor, shape=[reps]
    """
    from .config import randn
    from .covariance import contrastive_covariance

    n, reps = check_int("n", n, 2), check_int("reps", reps, 1)
    noise = check_nonnegative("noise", noise)
    s = as_tensor("scales", scales, ndim=1)
    if s.shape[0] < 1 or bool((s <= 0).any()):
        raise ValueError(f"scales must hold p >= 1 positive standard deviations; got scales = {s.tolist()}.")
    p = s.shape[0]
    x0 = randn(reps, n, p, generator=generator, device=s.device, dtype=s.dtype) * s
    v1 = x0 + noise * randn(reps, n, p, generator=generator, device=s.device, dtype=s.dtype)
    v2 = x0 + noise * randn(reps, n, p, generator=generator, device=s.device, dtype=s.dtype)
    ones = uniform_alpha(n, dtype=s.dtype, device=s.device)
    C = torch.stack([contrastive_covariance(ones, a, b, convention="tian2023") for a, b in zip(v1, v2, strict=True)])
    return torch.linalg.eigvalsh(C)[:, 0]


def relu_batch_covariances(n: int, reps: int, *, atoms, weights, w, noise: float, temperature: float,
                           generator: torch.Generator) -> torch.Tensor:
    r"""Finite-batch :math:`\mathbb C^{(N)}_\alpha[g]` (Eq. 3) of :math:`g(x) = \mathrm{ReLU}(w^\top x)` for ``reps`` batches.

    Each batch draws ``n`` atoms :math:`x_0[i]` by their probabilities ``weights`` (with replacement) and two views
    :math:`x = x_0 + \sigma\epsilon`, :math:`x' = x_0 + \sigma\epsilon'`, and weighs the pairs with the Gaussian
    :math:`\alpha` on the clean outputs, :math:`\alpha_{ij} = \exp(-(g(x_0[i]) - g(x_0[j]))^2/2\tau)`
    (:func:`gaussian_alpha`). Lemma 2 predicts the mean of the first column, :math:`(1 - 1/N)\,
    \mathbb C^{(\infty)}_\alpha[g]` (Chapter 5).

    Parameters
    ----------
    n : int
        Batch size :math:`N\ge2`.
    reps : int
        Number of batches, ``>= 1``.
    atoms : torch.Tensor, shape=[m, p]
        The support of :math:`p_D`.
    weights : torch.Tensor, shape=[m]
        Their probabilities (``>= 0``, sum 1).
    w : torch.Tensor, shape=[p]
        The node's weight vector.
    noise : float
        The augmentation noise :math:`\sigma\ge0`.
    temperature : float
        :math:`\tau > 0` of the Gaussian :math:`\alpha`.
    generator : torch.Generator
        CPU generator of the draws (:func:`clbook.generator`): per batch the atoms, then the noise of view 1, then
        of view 2.

    Returns
    -------
    torch.Tensor, shape=[reps, 2]
        Per batch, :math:`\mathbb C^{(N)}_\alpha[g]` with :math:`\alpha_{ii} = 0` (the sum over :math:`j\ne i`)
        and with the diagonal kept (Eq. 3 as printed), in ``tian2023`` scaling
        (:func:`clbook.covariance.contrastive_covariance`), on the CPU (a table of numbers).
    """
    from .config import check_generator, randn
    from .covariance import contrastive_covariance

    n, reps = check_int("n", n, 2), check_int("reps", reps, 1)
    noise = check_nonnegative("noise", noise)
    tau = check_positive("temperature", temperature)
    atoms = as_tensor("atoms", atoms, ndim=2)
    probs = _weights(weights, atoms.shape[0], atoms)
    w = as_tensor("w", w, ndim=1, dtype=atoms.dtype, device=atoms.device)
    if w.shape[0] != atoms.shape[1]:
        raise ValueError(f"w must have one entry per coordinate of the atoms ({atoms.shape[1]}); got {w.shape[0]}.")
    check_generator(generator)
    p, out = atoms.shape[1], []
    for _ in range(reps):
        pick = torch.multinomial(probs.cpu(), n, replacement=True, generator=generator)
        x0 = atoms[pick.to(atoms.device)]
        v1 = torch.relu((x0 + noise * randn(n, p, generator=generator, device=atoms.device, dtype=atoms.dtype)) @ w)
        v2 = torch.relu((x0 + noise * randn(n, p, generator=generator, device=atoms.device, dtype=atoms.dtype)) @ w)
        A = gaussian_alpha(torch.relu(x0 @ w), temperature=tau)
        A_off = A - torch.diag(torch.diagonal(A))
        out.append([float(contrastive_covariance(a, v1, v2, convention="tian2023")) for a in (A_off, A)])
    return torch.tensor(out, dtype=atoms.dtype)
