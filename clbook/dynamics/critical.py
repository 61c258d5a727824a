r"""Critical points of the one-layer dynamics: stability, roughness, power iteration, augmentation.

Tian (2023), Sec. 3.2–3.3 and App. B.3–B.5. A node follows :math:`\dot w = F(w) := P^\perp_wA(w)w` on the unit
sphere (Lemma 3, Eq. 7). At a critical point :math:`w_*` with :math:`A(w_*)w_* = \lambda_*w_*`:

* **stability** (Thm 1): the tangent Jacobian of :math:`F`,

  .. math::

      J = P^\perp_{w_*}\big(A(w_*) - \lambda_*I\big)P^\perp_{w_*} + P^\perp_{w_*}\,D[A(v)w_*]_{v=w_*}P^\perp_{w_*},

  and the roughness :math:`\rho(w_*) = \|D[A(v)w_*]_{v=w_*}P^\perp_{w_*}\|_2` (the smallest :math:`\rho` with
  :math:`\|(A(v)-A(w_*))w_*\|\le\rho\|v-w_*\| + O(\|v-w_*\|^2)`);
* **population model** (this module): a mixture of isotropic Gaussians, for which the ReLU-gated covariance
  :math:`A(w) = \mathbb V[x\,\mathbb 1(w^\top x>0)]` (uniform :math:`\alpha`, Cor. 1) has a closed form, so
  :math:`A` is smooth and :math:`J`, :math:`\rho` follow by autograd in float64;
* **roughness in closed form** (proved in Chapter 7): with uniform :math:`\alpha`,
  :math:`D[A(v)w_*][u] = -\mathbb E[h(w_*^\top x)]\,Bu` with the plane moment
  :math:`B = \int_{w_*^\top x = 0}xx^\top p(x)\,\mathrm dS`; with the Gaussian :math:`\alpha` of Cor. 2 (frozen),
  the factor is :math:`\mathbb E[g\,e^{-g^2/2\tau}]`, :math:`g = h(w_*^\top x)`;
* **power iteration** (Eq. PI, Thm 3): :math:`w \leftarrow A(w)w/\|A(w)w\|` with cycle detection;
* **augmentation by rotations** (App. B.5): the Fig. 8 landscape averaged over rotation jitter, in closed form.

Used in Chapters 7 and 8.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._validate import as_tensor, check_in_range, check_int, check_nonnegative, check_positive, check_real, check_tensor
from ..config import randn
from ..linalg import haar_orthonormal, single_thread
from ..losses._safe import safe_low, unit_rows_any_scale

__all__ = [
    "Mixture", "three_clusters", "mixture_gated_covariance", "mixture_plane_moment", "mixture_mean_output",
    "mixture_z0", "mixture_gaussian_factor", "plane_density_max_2d", "projected_field", "tangent_basis", "StabilityReport",
    "stability_report", "find_critical", "perturb_and_return", "PowerIteration", "power_iteration", "perturbed_patterns",
    "pattern_power_iterations",
    "lemma7_terms", "jitter_landscape", "cyclic_landscape", "mixture_grid", "mixture_polar_grid", "gaussian_alpha_covariance",
    "lemma_terms_along", "omega_at", "thm3_cap", "mixture_landscape",
]


@dataclass
class Mixture:
    r"""Mixture of isotropic Gaussians :math:`\sum_k\pi_k\,\mathcal N(m_k, \sigma^2 I)`: ``means [k, d]``, ``weights [k]``."""

    means: torch.Tensor
    weights: torch.Tensor
    sigma: float


def _check_mixture(mix: Mixture, like: torch.Tensor | None = None) -> Mixture:
    """``mix`` checked, on the device and dtype of ``like`` (a point ``w [d]``, whose size must match) when given."""
    if not isinstance(mix, Mixture):
        raise TypeError(f"mix must be a Mixture (see three_clusters); got {type(mix).__name__}.")
    m = as_tensor("mix.means", mix.means, ndim=2)
    p = as_tensor("mix.weights", mix.weights, ndim=1, dtype=m.dtype, device=m.device)
    if m.shape[0] < 1 or p.shape[0] != m.shape[0] or bool((p < 0).any()) or abs(float(p.sum()) - 1) > 1e-9:
        raise ValueError(f"mix.weights must be a probability vector over the {m.shape[0]} components of mix.means.")
    if like is not None:
        if like.shape[-1] != m.shape[1]:
            raise ValueError(f"w must have the dimension of the mixture, d = {m.shape[1]}; got shape {tuple(like.shape)}.")
        m, p = m.to(like), p.to(like)
    return Mixture(m, p, check_positive("mix.sigma", mix.sigma))


def three_clusters(sigma: float, *, weights=(0.3, 0.3, 0.4), angles=(0.0, 120.0, 240.0), scale: float = 1.0) -> Mixture:
    """The 2-D example of Chapter 7 (study note C4): clusters at unit distance ``scale`` and the given angles (degrees)."""
    sigma = check_positive("sigma", sigma)
    scale = check_positive("scale", scale)
    a = as_tensor("angles", angles, ndim=1) * math.pi / 180
    w = as_tensor("weights", weights, ndim=1, dtype=a.dtype, device=a.device)
    if w.shape != a.shape or a.shape[0] < 1:
        raise ValueError(f"weights and angles must be non-empty and of the same length; got {len(weights)} and {len(angles)}.")
    if bool((w <= 0).any()):
        raise ValueError(f"weights must be positive; got weights = {tuple(weights)}.")
    return _check_mixture(Mixture(scale * torch.stack([torch.cos(a), torch.sin(a)], 1), w / w.sum(), sigma * scale))


def _unit_vector(w, name: str = "w") -> torch.Tensor:
    w = check_tensor(name, w, ndim=1)
    if bool((w.detach() == 0).all()):
        raise ValueError(f"{name} must be non-zero.")
    n = torch.linalg.vector_norm(w)
    if safe_low(w.dtype) <= float(n.detach()) < math.inf:
        return w / n  # the usual case, unchanged
    return unit_rows_any_scale(w)  # a norm whose square over- or underflows: exact at any finite scale


def _eye(d: int, like: torch.Tensor) -> torch.Tensor:
    return torch.eye(d, dtype=like.dtype, device=like.device)


def _std(c):
    return torch.special.ndtr(c), torch.exp(-0.5 * c * c) / math.sqrt(2 * math.pi)


def mixture_gated_covariance(w, mix: Mixture, *, activation: str = "relu") -> torch.Tensor:
    r"""Population :math:`A(w) = \mathbb V[x\,h'(w^\top x)]` for a Gaussian mixture, differentiable in ``w``, ``[d, d]``.

    With :math:`c_k = w^\top m_k/\sigma`, :math:`\Phi = \Phi(c_k)`, :math:`\varphi = \varphi(c_k)` and unit :math:`w`:

    .. math::

        \mathbb E_k[x\mathbb 1] = m_k\Phi + \sigma\varphi w,\qquad
        \mathbb E_k[xx^\top\mathbb 1] = m_km_k^\top\Phi + \sigma\varphi(m_kw^\top + wm_k^\top) + \sigma^2(\Phi I - c_k\varphi ww^\top).

    ``activation`` is ``"relu"`` or ``"linear"`` (then :math:`A = \operatorname{Cov}[x]`).
    """
    if activation not in ("relu", "linear"):
        raise ValueError(f"activation must be 'relu' or 'linear'; got activation = {activation!r}.")
    w = _unit_vector(w)
    mix = _check_mixture(mix, w)
    m, p, s = mix.means, mix.weights, mix.sigma
    d = m.shape[1]
    eye = _eye(d, w)
    if activation == "linear":
        mean = p @ m
        return torch.einsum("k,ki,kj->ij", p, m, m) + s * s * eye - torch.outer(mean, mean)
    c = m @ w / s
    Phi, phi = _std(c)
    e = (p * Phi) @ m + s * (p @ phi) * w
    mw = torch.einsum("k,ki->i", p * phi, m)
    E = (torch.einsum("k,ki,kj->ij", p * Phi, m, m) + s * (torch.outer(mw, w) + torch.outer(w, mw))
         + s * s * ((p @ Phi) * eye - (p @ (c * phi)) * torch.outer(w, w)))
    return E - torch.outer(e, e)


def mixture_plane_moment(w, mix: Mixture) -> torch.Tensor:
    r"""Plane moment :math:`B = \int_{w^\top x=0}xx^\top p(x)\,\mathrm dS`, ``[d, d]``.

    .. math::

        B = \sum_k\pi_k\frac{\varphi(c_k)}{\sigma}(Pm_km_k^\top P + \sigma^2P),\qquad P = I - ww^\top.
    """
    w = _unit_vector(w)
    mix = _check_mixture(mix, w)
    P = _eye(w.shape[0], w) - torch.outer(w, w)
    pm = mix.means @ P
    _, phi = _std(mix.means @ w / mix.sigma)
    wt = mix.weights * phi / mix.sigma
    return torch.einsum("k,ki,kj->ij", wt, pm, pm) + mix.sigma ** 2 * wt.sum() * P


def mixture_mean_output(w, mix: Mixture) -> torch.Tensor:
    r"""The mean output of a ReLU unit on a Gaussian mixture, in closed form.

    .. math:: \mathbb E[\mathrm{relu}(w^\top x)] = \sum_k\pi_k(a_k\Phi(a_k/\sigma) + \sigma\varphi(a_k/\sigma)),\quad a_k = w^\top m_k.
    """
    w = _unit_vector(w)
    mix = _check_mixture(mix, w)
    a = mix.means @ w
    Phi, phi = _std(a / mix.sigma)
    return mix.weights @ (a * Phi + mix.sigma * phi)


def mixture_z0(w, mix: Mixture, *, temperature: float) -> torch.Tensor:
    r"""Cor. 2: :math:`z_0 = \mathbb E[e^{-g^2/2\tau}]`, :math:`g = \mathrm{relu}(w^\top x)`, in closed form.

    For :math:`s\sim\mathcal N(a, \sigma^2)`: :math:`\mathbb E[e^{-s^2/2\tau}\mathbb 1(s>0)] = \sqrt{\tau/(\tau+\sigma^2)}\,
    e^{-a^2/2(\tau+\sigma^2)}\,\Phi(a\sqrt{\tau}/(\sigma\sqrt{\tau+\sigma^2}))`.
    """
    w = _unit_vector(w)
    mix = _check_mixture(mix, w)
    tau = check_positive("temperature", temperature)
    a = mix.means @ w
    s2 = mix.sigma ** 2
    pos = math.sqrt(tau / (tau + s2)) * torch.exp(-a * a / (2 * (tau + s2))) * torch.special.ndtr(
        a * math.sqrt(tau) / (mix.sigma * math.sqrt(tau + s2)))
    return mix.weights @ (torch.special.ndtr(-a / mix.sigma) + pos)


def mixture_gaussian_factor(w, mix: Mixture, *, temperature: float) -> torch.Tensor:
    r""":math:`\mathbb E[g\,e^{-g^2/2\tau}]`, :math:`g = \mathrm{relu}(w^\top x)`: the roughness factor under the Gaussian :math:`\alpha`.

    For :math:`s\sim\mathcal N(a,\sigma^2)`, the Gaussian product gives :math:`\kappa\,\mathbb E[s'\mathbb 1(s'>0)]` with
    :math:`s'\sim\mathcal N(a\tau/(\tau+\sigma^2), \tau\sigma^2/(\tau+\sigma^2))` and
    :math:`\kappa = \sqrt{\tau/(\tau+\sigma^2)}\,e^{-a^2/2(\tau+\sigma^2)}`.
    """
    w = _unit_vector(w)
    mix = _check_mixture(mix, w)
    tau = check_positive("temperature", temperature)
    a = mix.means @ w
    s2 = mix.sigma ** 2
    kappa = math.sqrt(tau / (tau + s2)) * torch.exp(-a * a / (2 * (tau + s2)))
    mu, sd = a * tau / (tau + s2), math.sqrt(tau * s2 / (tau + s2))
    Phi, phi = _std(mu / sd)
    return mix.weights @ (kappa * (mu * Phi + sd * phi))


def plane_density_max_2d(w, mix: Mixture, *, half_width: float = 4.0, points: int = 8001) -> float:
    r"""Thm 2's :math:`r = \max_{w^\top x = 0}p(x)` for uniform :math:`\alpha` in 2-D, on a grid of the line :math:`x = t\,w^\perp`."""
    w = _unit_vector(w)
    mix = _check_mixture(mix, w)
    if mix.means.shape[1] != 2:
        raise ValueError(f"plane_density_max_2d needs 2-D data; got mix.means of shape {tuple(mix.means.shape)}.")
    half_width = check_positive("half_width", half_width)
    points = check_int("points", points, 3)
    t = torch.linspace(-half_width, half_width, points, dtype=w.dtype, device=w.device)
    x = t.unsqueeze(1) * torch.stack([-w[1], w[0]]).unsqueeze(0)
    d2 = ((x.unsqueeze(1) - mix.means.unsqueeze(0)) ** 2).sum(-1)
    dens = (mix.weights * torch.exp(-d2 / (2 * mix.sigma ** 2))).sum(1) / (2 * math.pi * mix.sigma ** 2)
    return float(dens.max())


def _check_A_fn(A_fn):
    if not callable(A_fn):
        raise TypeError(f"A_fn must be a function w -> A(w) returning a [d, d] tensor; got {type(A_fn).__name__}.")
    return A_fn


def _A_at(A_fn, w: torch.Tensor) -> torch.Tensor:
    A = _check_A_fn(A_fn)(w)
    if not isinstance(A, torch.Tensor) or A.shape != (w.shape[0], w.shape[0]):
        raise ValueError(f"A_fn(w) must return a [{w.shape[0]}, {w.shape[0]}] tensor; got {getattr(A, 'shape', type(A).__name__)}.")
    return A


def projected_field(w, A_fn) -> torch.Tensor:
    r"""Eq. 7 right-hand side :math:`F(w) = P^\perp_wA(w)w`, ``[d]``.

    ``w [d]`` is a unit vector (not renormalised here, so that autograd sees :math:`F` itself) and ``A_fn(w)``
    returns :math:`A(w)`, ``[d, d]``.
    """
    w = check_tensor("w", w, ndim=1)
    Aw = _A_at(A_fn, w) @ w
    return Aw - (w @ Aw) * w


def tangent_basis(w) -> torch.Tensor:
    r"""Orthonormal basis of :math:`w^\perp`, ``[d, d-1]`` (columns): eigenvectors of :math:`P^\perp_w` for eigenvalue 1.

    ``w [d]``, non-zero, ``d >= 2``.
    """
    w = _unit_vector(w)
    if w.shape[0] < 2:
        raise ValueError(f"w must have d >= 2 entries for a tangent space; got d = {w.shape[0]}.")
    P = _eye(w.shape[0], w) - torch.outer(w, w)
    return torch.linalg.eigh(P)[1][:, 1:]


@dataclass
class StabilityReport:
    r"""At a critical point.

    :math:`\lambda_*`, gap, residual :math:`\|F(w_*)\|`, roughness :math:`\rho`, tangent Jacobian eigenvalues (real
    parts, ascending), :math:`\max_u u^\top Ju` (numerical range), Thm 1's bound :math:`-(\lambda_{\rm gap}-\rho)`,
    ``is_lme`` (:math:`w_*` is the top eigenvector with a positive gap).
    """

    lam: float
    gap: float
    residual: float
    rho: float
    jac_eigs: list
    numerical_range_max: float
    thm1_bound: float
    is_lme: bool


def stability_report(w, A_fn) -> StabilityReport:
    r"""Thm 1 quantities at ``w`` by autograd: :math:`J` of :math:`F` on the tangent space and :math:`\rho`.

    ``w [d]`` (``d >= 2``, normalised here) should be a critical point; ``A_fn(w)`` returns :math:`A(w)` ``[d, d]``,
    differentiable in ``w`` (e.g. :func:`mixture_gated_covariance`). Use float64.
    """
    w = _unit_vector(w).detach()
    Q = tangent_basis(w)
    A = _A_at(A_fn, w).detach()
    ev, evec = torch.linalg.eigh(A)
    lam = float(w @ A @ w)
    JF = torch.autograd.functional.jacobian(lambda v: projected_field(v / torch.linalg.vector_norm(v), A_fn), w)
    JA = torch.autograd.functional.jacobian(lambda v: A_fn(v / torch.linalg.vector_norm(v)) @ w, w)
    J = Q.T @ JF @ Q
    rho = float(torch.linalg.matrix_norm(JA @ Q, ord=2))
    nr = float(torch.linalg.eigvalsh(0.5 * (J + J.T)).max())
    gap = float(ev[-1] - ev[-2])
    return StabilityReport(lam, gap, float(torch.linalg.vector_norm(A @ w - lam * w)), rho,
                           sorted(torch.linalg.eigvals(J).real.tolist()), nr, -(gap - rho),
                           bool(abs(float(evec[:, -1] @ w)) > 1 - 1e-8 and gap > 0))


def find_critical(w0, A_fn, *, step: float = 2.0, max_steps: int = 4000, tol: float = 1e-13) -> torch.Tensor:
    r"""A critical point reached from ``w0``.

    projected ascent :math:`w\leftarrow\mathrm{normalize}(w + \eta F(w))` until :math:`\|F\| <` ``tol`` (or
    ``max_steps``), on one thread.
    """
    step = check_positive("step", step)
    max_steps = check_int("max_steps", max_steps, 1)
    tol = check_positive("tol", tol)
    w = _unit_vector(w0, "w0").detach()
    _check_A_fn(A_fn)
    with single_thread(), torch.no_grad():
        for _ in range(max_steps):
            f = projected_field(w, A_fn)
            if float(torch.linalg.vector_norm(f)) < tol:
                break
            w = w + step * f
            w = w / torch.linalg.vector_norm(w)
    return w


def perturb_and_return(w_star, A_fn, *, eps: float, directions: int, generator: torch.Generator, step: float = 1.0,
                       steps: int = 300) -> torch.Tensor:
    r"""Perturb :math:`w_*` along random tangent directions and follow Eq. 7.

    Perturb by ``eps`` along ``directions`` random tangent directions, follow Eq. 7 (explicit steps on the sphere),
    return the final distances :math:`\|w(T) - w_*\|`, ``[directions]``.
    """
    eps = check_positive("eps", eps)
    directions = check_int("directions", directions, 1)
    steps = check_int("steps", steps, 1)
    if eps >= 1:
        raise ValueError(f"eps must lie in (0, 1) (a kick on the unit sphere); got eps = {eps}.")
    step = check_positive("step", step)
    w_star = _unit_vector(w_star, "w_star").detach()
    _check_A_fn(A_fn)
    Q = tangent_basis(w_star)
    g = randn(directions, Q.shape[1], generator=generator, device=w_star.device, dtype=w_star.dtype)
    U = (g / torch.linalg.vector_norm(g, dim=1, keepdim=True)) @ Q.T
    out = []
    with single_thread(), torch.no_grad():
        for u in U:
            w = math.sqrt(1 - eps * eps) * w_star + eps * u
            for _ in range(steps):
                w = w + step * projected_field(w, A_fn)
                w = w / torch.linalg.vector_norm(w)
            out.append(torch.linalg.vector_norm(w - w_star))
    return torch.stack(out)


@dataclass
class PowerIteration:
    r"""Eq. PI trajectory.

    iterates ``W [T+1, d]``, discrepancies :math:`\|w(t+1)-w(t)\|` ``[T]``, :math:`c_t = \phi_1(t)^\top w(t)` ``[T+1]``,
    gaps ``[T+1]``, ``cycle`` (period of an exactly repeating state, 0 if none).
    """

    W: torch.Tensor
    discrepancy: torch.Tensor
    c: torch.Tensor
    gap: torch.Tensor
    cycle: int


def power_iteration(w0, A_fn, *, steps: int = 100, shift: float = 0.0, cycle_tol: float = 1e-12) -> PowerIteration:
    r"""Eq. PI, :math:`w \leftarrow (A(w)+sI)w/\|(A(w)+sI)w\|` (``shift`` :math:`s\ge0`, Eq. 104), on one thread.

    ``cycle`` is the smallest period :math:`p\ge2` with :math:`\|w(T) - w(T-p)\| <` ``cycle_tol`` while
    :math:`\|w(T)-w(T-1)\|\ge` ``cycle_tol`` (a limit cycle of the discrete map), else 0. The sign of
    :math:`\phi_1(t)` is chosen so that :math:`c_t\ge0`.
    """
    steps = check_int("steps", steps, 1)
    shift = check_nonnegative("shift", shift)
    cycle_tol = check_positive("cycle_tol", cycle_tol)
    w = _unit_vector(w0, "w0").detach()
    if w.shape[0] < 2:
        raise ValueError(f"w0 must have d >= 2 entries (the gap needs two eigenvalues); got d = {w.shape[0]}.")
    _check_A_fn(A_fn)
    Ws, cs, gaps = [w], [], []
    with single_thread(), torch.no_grad():
        for t in range(steps + 1):
            A = A_fn(w)
            ev, evec = torch.linalg.eigh(A)
            cs.append(abs(float(evec[:, -1] @ w)))
            gaps.append(float(ev[-1] - ev[-2]))
            if t == steps:
                break
            v = A @ w + shift * w
            w = v / torch.linalg.vector_norm(v)
            Ws.append(w)
    W = torch.stack(Ws)
    disc = torch.linalg.vector_norm(W[1:] - W[:-1], dim=1)
    cycle = 0
    if float(disc[-1]) >= cycle_tol:
        for p in range(2, min(50, steps) + 1):
            if float(torch.linalg.vector_norm(W[-1] - W[-1 - p])) < cycle_tol:
                cycle = p
                break
    as_w = dict(dtype=w.dtype, device=w.device)
    return PowerIteration(W, disc, torch.tensor(cs, **as_w), torch.tensor(gaps, **as_w), cycle)


def perturbed_patterns(d: int, eta: float, *, generator: torch.Generator) -> torch.Tensor:
    r"""Fig. 1 (right): :math:`U = Q + \eta\,G/\sqrt d` with columns renormalised, ``[d, d]``.

    :math:`Q` is Haar-orthogonal (:func:`clbook.linalg.haar_orthonormal`) and :math:`G` standard normal, both drawn
    on the CPU with ``generator`` (in that order), then moved to the device and dtype of :func:`clbook.setup`;
    ``d >= 1``, ``eta >= 0``.
    """
    d = check_int("d", d, 1)
    eta = check_nonnegative("eta", eta)
    Q = haar_orthonormal(d, generator=generator)
    U = Q + eta * randn(d, d, generator=generator, device=Q.device, dtype=Q.dtype) / math.sqrt(d)
    return U / torch.linalg.vector_norm(U, dim=0, keepdim=True)


def pattern_power_iterations(eta: float, *, generator: torch.Generator, q: float = 0.2, d: int = 8, steps: int = 100,
                             activation: str = "relu") -> tuple[torch.Tensor, list[PowerIteration]]:
    r"""Fig. 1 (right): power iteration started at every pattern of the latent summation model with perturbed patterns.

    Draws :math:`U` = :func:`perturbed_patterns` ``(d, eta, generator=generator)``, builds the latent summation model
    of :math:`U` with probability ``q`` per pattern (:func:`clbook.data.latent.latent_summation`, :math:`2^d`
    atoms), whose gated covariance :math:`A(w)` (:func:`clbook.dynamics.onelayer.gated_covariance`, uniform
    :math:`\alpha`) is piecewise constant, and runs :func:`power_iteration` for ``steps`` steps from each column
    :math:`u_m`. Chapter 8 reads convergence near :math:`u_m` for small ``eta`` and cycles for larger ``eta``.

    Parameters
    ----------
    eta : float
        Perturbation :math:`\eta\ge0` of the orthonormal patterns.
    generator : torch.Generator
        CPU generator of :math:`U` (the only draw).
    q : float
        Probability :math:`q\in(0, 1)` of each latent pattern.
    d : int
        Dimension and number of patterns, ``2 <= d <= 16``.
    steps : int
        Power-iteration steps per run.
    activation : str
        The activation of the gate (a name of :mod:`clbook.activations` that ``gated_covariance`` accepts).

    Returns
    -------
    U : torch.Tensor, shape=[d, d]
        The patterns, columns of unit norm.
    runs : list of PowerIteration
        One run per pattern, started at :math:`u_m`.
    """
    from ..data import latent
    from . import onelayer

    d = check_int("d", d, 2)   # power iteration needs two eigenvalues
    U = perturbed_patterns(d, eta, generator=generator)
    model = latent.latent_summation(U, q)

    def A_fn(v):
        return onelayer.gated_covariance(v, model.atoms, model.probs, activation=activation)

    return U, [power_iteration(U[:, m], A_fn, steps=steps) for m in range(d)]


def lemma7_terms(A, w) -> dict:
    r"""Lemmas 7–8 for one PD matrix (batched ``A [n, d, d]``, ``w [n, d]``, unit, :math:`c>0` after a sign flip of :math:`\phi_1`).

    returns ``c``, ``d`` (:math:`\phi_1^\top w'` with :math:`w' = Aw/\|Aw\|`), ``mu``
    (:math:`\frac{1+c}{2c^2}(\lambda_2/\lambda_1)^2`), ``step`` (:math:`\|w'-w\|`) and ``step_bound``
    (:math:`\sqrt{2(1+\mu c)(1-c)}`).
    """
    A = check_tensor("A", A, ndim=3)
    w = check_tensor("w", w, ndim=2)
    if A.shape[1] != A.shape[2] or A.shape[1] < 2 or w.shape != A.shape[:2]:
        raise ValueError(f"A must be [n, d, d] with d >= 2 and w [n, d]; got A of shape {tuple(A.shape)} and w of shape "
                         f"{tuple(w.shape)}.")
    ev, evec = torch.linalg.eigh(A)
    phi = evec[..., -1]
    c = (phi * w).sum(-1)
    phi = phi * torch.sign(c).unsqueeze(-1)
    c = c.abs()
    wn = torch.einsum("nij,nj->ni", A, w)
    wn = wn / torch.linalg.vector_norm(wn, dim=1, keepdim=True)
    mu = (1 + c) / (2 * c * c) * (ev[:, -2] / ev[:, -1]) ** 2
    return {"c": c, "d": (phi * wn).sum(-1), "mu": mu, "step": torch.linalg.vector_norm(wn - w, dim=1),
            "step_bound": torch.sqrt(2 * (1 + mu * c) * (1 - c))}


def _relu_cos_antiderivative(u: torch.Tensor) -> torch.Tensor:
    r""":math:`\int_{-\pi/2}^u\max(\cos s, 0)\,\mathrm ds`, exact and periodic-aware."""
    v = u + math.pi / 2
    n = torch.floor(v / (2 * math.pi))
    r = v - 2 * math.pi * n
    return 2 * n + 1 - torch.cos(torch.clamp(r, max=math.pi))


def jitter_landscape(theta, angles, *, jitter: float) -> torch.Tensor:
    r"""App.

    B.5 on Fig. 8: :math:`\mathcal E(\theta) = \tfrac12\mathbb V_{x_0}[b(\theta|x_0)]` with ReLU, uniform :math:`\alpha`
    and rotation jitter :math:`t\sim U[-a, a]` of unit points at ``angles``, in closed form:

    .. math::

        b(\theta|\theta_j) = \frac{1}{2a}\int_{-a}^{a}\max(\cos(\theta-\theta_j-t), 0)\,\mathrm dt
        = \frac{F(\theta-\theta_j+a) - F(\theta-\theta_j-a)}{2a},

    with :math:`F` the antiderivative of :math:`\max(\cos, 0)`; ``jitter`` :math:`a = 0` is the plain Fig. 8.
    """
    theta = check_tensor("theta", theta, ndim=1)
    angles = check_tensor("angles", angles, ndim=1)
    a = check_in_range("jitter", jitter, 0.0, math.pi)
    delta = theta.unsqueeze(1) - angles.unsqueeze(0)
    if a == 0:
        b = torch.clamp(torch.cos(delta), min=0)
    else:
        b = (_relu_cos_antiderivative(delta + a) - _relu_cos_antiderivative(delta - a)) / (2 * a)
    return 0.5 * b.var(dim=1, unbiased=False)


def cyclic_landscape(theta, angles, *, order: int) -> torch.Tensor:
    r"""App.

    B.5 with the cyclic group :math:`C_n` (``order`` :math:`n`): :math:`b(\theta|x_0) = \frac1n\sum_k
    \mathrm{relu}(\cos(\theta-\theta_j-2\pi k/n))`; :math:`\mathcal E` is exactly :math:`2\pi/n`-periodic.
    """
    theta = check_tensor("theta", theta, ndim=1)
    angles = check_tensor("angles", angles, ndim=1)
    n = check_int("order", order, 1)
    shifts = 2 * math.pi * torch.arange(n, dtype=theta.dtype, device=theta.device) / n
    delta = theta[:, None, None] - angles[None, :, None] - shifts[None, None, :]
    b = torch.clamp(torch.cos(delta), min=0).mean(-1)
    return 0.5 * b.var(dim=1, unbiased=False)


def mixture_grid(mix: Mixture, *, points: int = 301, reach: float = 5.0) -> tuple[torch.Tensor, torch.Tensor]:
    r"""2-D quadrature grid for a mixture.

    nodes ``[n, 2]`` on a square covering every mean :math:`\pm` ``reach`` :math:`\sigma`, and weights ``[n]``
    :math:`p(x)h^2`, renormalised to sum to one.
    """
    mix = _check_mixture(mix)
    if mix.means.shape[1] != 2:
        raise ValueError(f"mixture_grid needs 2-D data; got mix.means of shape {tuple(mix.means.shape)}.")
    points = check_int("points", points, 3)
    half = float(mix.means.abs().max()) + check_positive("reach", reach) * mix.sigma
    t = torch.linspace(-half, half, points, dtype=mix.means.dtype, device=mix.means.device)
    x = torch.cartesian_prod(t, t)
    d2 = ((x.unsqueeze(1) - mix.means.unsqueeze(0)) ** 2).sum(-1)
    p = (mix.weights * torch.exp(-d2 / (2 * mix.sigma ** 2))).sum(1)
    return x, p / p.sum()


def mixture_polar_grid(mix: Mixture, *, theta0: float, cuts, radius: float,
                       points: int = 48) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Polar Gauss–Legendre quadrature of a 2-D mixture: nodes ``[n, 2]`` and weights :math:`p(x)\,\mathrm dA` ``[n]``.

    ``points`` Gauss–Legendre nodes in the radius :math:`r\in[0, R]` and as many in the angle
    :math:`\theta_0 + \varphi` on each piece :math:`\varphi\in[c_i, c_{i+1}]` of ``cuts``, so that a function that is
    smooth inside every piece (a gate :math:`\mathbb 1(v^\top x > 0)` or a kink of :math:`\mathrm{relu}(w^\top x)`
    at a cut) is integrated to the rule's order; Chapter 7 differentiates such integrals in :math:`v`. The weights
    are the mixture density times the area element, not renormalised: they sum to the mass inside the disk
    (:func:`mixture_grid` is the square grid, renormalised).

    Parameters
    ----------
    mix : Mixture
        A mixture in two dimensions (:func:`three_clusters`).
    theta0 : float
        The angle (radians) from which ``cuts`` are measured.
    cuts : sequence of float
        Increasing angles :math:`c_0 < c_1 < \dots`, at least two, spanning at most :math:`2\pi`.
    radius : float
        :math:`R > 0`, the radius of the disk (e.g. the largest mean's norm plus 10σ).
    points : int
        Nodes per dimension of each piece, ``>= 1``.

    Returns
    -------
    nodes : torch.Tensor, shape=[(len(cuts) - 1) * points**2, 2]
    weights : torch.Tensor, shape=[(len(cuts) - 1) * points**2]
    """
    from numpy.polynomial.legendre import leggauss

    mix = _check_mixture(mix)
    if mix.means.shape[1] != 2:
        raise ValueError(f"mixture_polar_grid needs 2-D data; got mix.means of shape {tuple(mix.means.shape)}.")
    theta0 = check_real("theta0", theta0)
    R = check_positive("radius", radius)
    points = check_int("points", points, 1)
    c = as_tensor("cuts", cuts, ndim=1, dtype=torch.float64, device="cpu")
    if c.shape[0] < 2 or bool((c[1:] <= c[:-1]).any()) or float(c[-1] - c[0]) > 2 * math.pi + 1e-12:
        raise ValueError(f"cuts must be at least two increasing angles spanning at most 2π; got cuts = {c.tolist()}.")
    cuts = c.tolist()
    x, w = (torch.as_tensor(a, dtype=mix.means.dtype, device=mix.means.device) for a in leggauss(points))
    r, wr = R / 2 * (x + 1), R / 2 * w
    nodes, weights = [], []
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=False):
        t = theta0 + lo + (hi - lo) / 2 * (x + 1)
        pts = torch.stack([torch.outer(r, torch.cos(t)), torch.outer(r, torch.sin(t))], -1).reshape(-1, 2)
        d2 = ((pts.unsqueeze(1) - mix.means.unsqueeze(0)) ** 2).sum(-1)
        p = torch.exp(-d2 / (2 * mix.sigma ** 2)) @ mix.weights / (2 * math.pi * mix.sigma ** 2)
        nodes.append(pts)
        weights.append(torch.outer(wr * r, (hi - lo) / 2 * w).reshape(-1) * p)
    return torch.cat(nodes), torch.cat(weights)


def gaussian_alpha_covariance(w, w_alpha, nodes, weights, *, temperature: float, terms: int = 200) -> torch.Tensor:
    r"""Large-batch gated covariance under the Gaussian :math:`\alpha` of Cor. 2, frozen at ``w_alpha`` (stop-gradient).

    .. math::

        A_{\rm g}(w) = \sum_{l\ge0}\Big(z_l\,\mathbb E[\phi_l\tilde x\tilde x^\top]
        - \mathbb E[\phi_l\tilde x]\,\mathbb E[\phi_l\tilde x]^\top\Big),\qquad
        \phi_l = e^{-g^2/2\tau}\frac{g^l}{\sqrt{l!\,\tau^l}},\ g = \mathrm{relu}(w_\alpha^\top x),\ \tilde x = x\,\mathbb 1(w^\top x > 0),

    i.e. :math:`\sum_lz_l^2\mathbb V_{\tilde p_l}[\tilde x]` (Lemma 2), on quadrature ``nodes [n, d]`` with ``weights [n]``;
    features in log space, ``terms`` of them.
    """
    nodes = check_tensor("nodes", nodes, ndim=2)
    weights = check_tensor("weights", weights, ndim=1)
    if weights.shape[0] != nodes.shape[0] or bool((weights < 0).any()):
        raise ValueError(f"weights must hold {nodes.shape[0]} non-negative numbers, one per node; got shape "
                         f"{tuple(weights.shape)}.")
    tau = check_positive("temperature", temperature)
    terms = check_int("terms", terms, 1)
    w, w_alpha = _unit_vector(w), _unit_vector(w_alpha, "w_alpha")
    if w.shape[0] != nodes.shape[1] or w_alpha.shape[0] != nodes.shape[1]:
        raise ValueError(f"w and w_alpha must have d = {nodes.shape[1]} entries, like the nodes; got {w.shape[0]} and "
                         f"{w_alpha.shape[0]}.")
    g = torch.clamp(nodes @ w_alpha, min=0)
    ls = torch.arange(terms, dtype=nodes.dtype, device=nodes.device)
    logphi = (-g * g / (2 * tau)).unsqueeze(1) + torch.special.xlogy(ls.unsqueeze(0), g.unsqueeze(1)) \
        - 0.5 * torch.lgamma(ls + 1) - 0.5 * ls * math.log(tau)
    phi = torch.exp(logphi)                                                    # [n, L]
    xt = nodes * (nodes @ w > 1e-12).to(nodes.dtype).unsqueeze(1)
    z = weights @ phi                                                          # [L]
    k = phi @ z                                                                # E_y K(x, y)
    m = (phi * weights.unsqueeze(1)).T @ xt                                    # [L, d]
    return torch.einsum("n,ni,nj->ij", weights * k, xt, xt) - m.T @ m


def lemma_terms_along(W, A_fn) -> dict:
    r"""Lemmas 7–11 along a power-iteration trajectory ``W [T+1, d]`` (from :func:`power_iteration`), ``[T]`` each.

    Returns ``c`` (:math:`c_t = \phi_1(t)^\top w(t)`), ``d`` (:math:`d_t = \phi_1(t)^\top w(t+1)`), ``c_next``
    (:math:`c_{t+1}`), ``mu`` (Lemma 7), the local Lipschitz ratio ``L`` :math:`= \|\delta A(t)\|_2/\|\delta w(t)\|_2`,
    the local ``kappa`` :math:`= \|\phi_1' - \phi_1 - \Delta\phi_1\|/\|\delta A\|_2^2` of Lemma 9, ``nu`` (Lemma 10 with
    these ``L``, ``kappa``), ``omega`` :math:`= \mu + \nu` (Def. 4) and ``gap``. Signs of :math:`\phi_1` are aligned
    with :math:`w(t)`; ``A_fn`` must give positive definite matrices along the trajectory.
    """
    W = check_tensor("W", W, ndim=2)
    if W.shape[0] < 2 or W.shape[1] < 2:
        raise ValueError(f"W must hold T + 1 >= 2 iterates of dimension d >= 2; got shape {tuple(W.shape)}.")
    out = {k: [] for k in ("c", "d", "c_next", "mu", "L", "kappa", "nu", "omega", "gap")}
    with single_thread(), torch.no_grad():
        As = [_A_at(A_fn, w) for w in W]
        eig = [torch.linalg.eigh(A) for A in As]
        for t in range(W.shape[0] - 1):
            (ev, V), (_, V1) = eig[t], eig[t + 1]
            phi = V[:, -1] * torch.sign(V[:, -1] @ W[t])
            phi1 = V1[:, -1] * torch.sign(V1[:, -1] @ phi)
            c, d = float(phi @ W[t]), float(phi @ W[t + 1])
            gap = float(ev[-1] - ev[-2])
            mu = (1 + c) / (2 * c * c) * float(ev[-2] / ev[-1]) ** 2
            dA = As[t + 1] - As[t]
            nA = float(torch.linalg.matrix_norm(dA, ord=2))
            L = nA / max(float(torch.linalg.vector_norm(W[t + 1] - W[t])), 1e-300)
            coef = (V[:, :-1].T @ dA @ V[:, -1]) / (ev[-1] - ev[:-1])
            dphi = V[:, :-1] @ coef * torch.sign(V[:, -1] @ W[t])
            kappa = float(torch.linalg.vector_norm(phi1 - phi - dphi)) / nA ** 2 if nA > 0 else 0.0
            nu = 2 * kappa * L * L * (1 + mu * c) + 2 * L / gap * math.sqrt(mu * (1 + mu * c))
            for k, v in zip(out, (c, d, float(phi1 @ W[t + 1]), mu, L, kappa, nu, mu + nu, gap), strict=True):
                out[k].append(v)
    return {k: torch.tensor(v, dtype=W.dtype, device=W.device) for k, v in out.items()}


def omega_at(w, A_fn) -> float:
    r"""Def. 4's irregularity :math:`\omega(w) = \mu + \nu` at one point.

    From one power-iteration step (local :math:`L`, :math:`\kappa`, see :func:`lemma_terms_along`).
    """
    w = _unit_vector(w).detach()
    with single_thread(), torch.no_grad():
        v = _A_at(A_fn, w) @ w
    return float(lemma_terms_along(torch.stack([w, v / torch.linalg.vector_norm(v)]), A_fn)["omega"][0])


def thm3_cap(c0: float, gamma: float) -> float:
    r"""Thm 3's cap :math:`B_\gamma = \{w: w^\top w(0)\ge(c_0-c_\gamma)/(1-c_\gamma)\}` with :math:`c_\gamma = 2\sqrt\gamma/(1+\gamma)`.

    returns the threshold; ``0 <= gamma < 1``, ``-1 <= c0 <= 1``.
    """
    gamma = check_in_range("gamma", gamma, 0.0, 1.0)
    if gamma == 1.0:
        raise ValueError("gamma must be < 1 (Thm 3 needs a contraction); got gamma = 1.0.")
    c0 = check_in_range("c0", c0, -1.0, 1.0)
    cg = 2 * math.sqrt(gamma) / (1 + gamma)
    return (c0 - cg) / (1 - cg)


def mixture_landscape(theta, mix: Mixture) -> torch.Tensor:
    r"""The 2-D landscape :math:`\mathcal E(\theta) = \tfrac12\mathbb V[\mathrm{relu}(w^\top x)]` of a Gaussian mixture.

    Here :math:`w = (\cos\theta, \sin\theta)`, in closed form (uniform :math:`\alpha`, Cor. 1), ``theta [T]`` -> ``[T]``.

    With :math:`a_k = w^\top m_k/\sigma`: :math:`\mathbb E_k[\mathrm{relu}] = \sigma(a_k\Phi + \varphi)`,
    :math:`\mathbb E_k[\mathrm{relu}^2] = \sigma^2((a_k^2+1)\Phi + a_k\varphi)`.
    """
    theta = check_tensor("theta", theta, ndim=1)
    mix = _check_mixture(mix, torch.zeros(2, dtype=theta.dtype, device=theta.device))
    a = torch.stack([torch.cos(theta), torch.sin(theta)], 1) @ mix.means.T / mix.sigma
    Phi, phi = _std(a)
    m1 = (a * Phi + phi) @ mix.weights * mix.sigma
    m2 = ((a * a + 1) * Phi + a * phi) @ mix.weights * mix.sigma ** 2
    return 0.5 * (m2 - m1 ** 2)
