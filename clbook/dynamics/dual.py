r"""Training dynamics of dual networks on sparse-coding data (Pokle, Tian, Li, Risteski 2022, Sec. 5.2.1, App. C, D).

Three models, all in their *population* form (exact expectations, no sampling):

* **Linear dual networks** (Thm 2, Eq. 12/22). With independent masks of keep probability :math:`\alpha`,
  :math:`\nabla_{W^o}L = -2\alpha^2 W^t\Sigma`, :math:`\Sigma = \mathbb E[xx^\top] = 2p_z MM^\top + \sigma_0^2 I_p`.
  Simultaneous gradient descent with weight decay :math:`\lambda_t` (:func:`linear_gd`), its closed form with the
  corrected constants :math:`C_{1,t} = Q_t`, :math:`C_{2,t} = (P_t - Q_t)/2` (:func:`closed_form_coefficients`,
  :func:`linear_closed_form`), the paper's printed :math:`C_{2,t}` (:func:`paper_c2`), the gradient flow integrated
  with ``solve_ivp`` (:func:`linear_flow`) and its closed form (:func:`linear_flow_closed_form`); the component of
  :math:`W_tM` outside :math:`\mathrm{span}\{W^o_0M, W^t_0M\}` (:func:`span_residual`) and max-cosine (Eq. 11,
  :func:`max_cosine`) for Cor. 1.
* **Symmetric-ReLU dual networks** (Thm 3, Eqs. 13-14) with :math:`M = I`, :math:`\sigma_0 = 0`, fixed biases:
  the exact population loss and gradient by enumerating every latent :math:`z\in\{-1,0,1\}^d` and every mask
  :math:`D\in\{0,1\}^d` (:func:`population_loss`, :func:`population_gradient`), the paper's closed form of the loss
  (:func:`regime_loss`), the regime of Assumption 3 (:func:`regime_holds`), the alternating, row-normalised
  optimisation of Thm 3 (:func:`alternating`) and the one-half-round contraction of the off-diagonal entries
  (:func:`half_round_ratio`), whose first-order factor is :math:`\alpha^2\kappa/(W_{ii} - b)` (corrected).
* **Lemma 1** (App. D): the proportional update with normalisation (:func:`lemma1_iterate`) and its limit.

Arrays are NumPy float64 (torch tensors are accepted and converted). Used in Chapter 16.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from .._validate import check_in_range, check_int, check_nonnegative, check_positive, check_real

__all__ = [
    "data_covariance", "linear_gradients", "linear_gd", "LinearRun", "closed_form_coefficients", "paper_c2",
    "linear_closed_form", "linear_flow", "linear_flow_closed_form", "span_residual", "max_cosine",
    "span_metric_sup", "srelu", "enumerate_latents", "enumerate_masks", "population_loss", "population_gradient",
    "regime_loss", "regime_holds", "fixed_point", "alternating", "AlternatingRun", "half_round_ratio",
    "lemma1_iterate", "lemma1_limit", "phase_figure", "rownorm", "offdiag",
]


def _array(name: str, value, ndim: int | None = None) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers; got {type(value).__name__}.") from exc
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values.")
    return arr


def _schedule(name: str, value, steps: int) -> np.ndarray:
    arr = _array(name, value)
    if arr.ndim == 0:
        arr = np.full(steps, float(arr))
    if arr.shape != (steps,):
        raise ValueError(f"{name} must be a number or an array of length steps = {steps}; got shape {arr.shape}.")
    return arr


# ----------------------------------------------------------------------------------------------- linear networks
def data_covariance(M, *, p_z: float, sigma0: float = 0.0) -> np.ndarray:
    r"""Second moment :math:`\Sigma = \mathbb E[xx^\top] = 2p_z MM^\top + \sigma_0^2 I_p` of Eq. 1.

    The latent is the symmetric one of the proof of Thm 2 (App. C.1): :math:`z_i = \pm1` with probability
    :math:`p_z` each, :math:`0` otherwise, so :math:`\mathbb E[zz^\top] = 2p_zI`.

    Parameters
    ----------
    M : array [p, d]
        Column-orthonormal dictionary.
    p_z : float in (0, 0.5)
        Probability of each sign.
    sigma0 : float >= 0
        Noise standard deviation.
    """
    M = _array("M", M, 2)
    p_z = check_in_range("p_z", p_z, 0.0, 0.5)
    sigma0 = check_nonnegative("sigma0", sigma0)
    return 2 * p_z * M @ M.T + sigma0 ** 2 * np.eye(M.shape[0])


def linear_gradients(Wo, Wt, Sigma, *, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Population gradients of Eq. 12 for independent masks (App. C.1).

    .. math:: \nabla_{W^o}L = -2\alpha^2W^t\Sigma,\qquad \nabla_{W^t}L = -2\alpha^2W^o\Sigma .
    """
    Wo, Wt, Sigma = _array("Wo", Wo, 2), _array("Wt", Wt, 2), _array("Sigma", Sigma, 2)
    alpha = check_in_range("alpha", alpha, 0.0, 1.0)
    if Wo.shape != Wt.shape or Sigma.shape != (Wo.shape[1], Wo.shape[1]):
        raise ValueError(f"shapes must be Wo, Wt [m, p] and Sigma [p, p]; got {Wo.shape}, {Wt.shape}, {Sigma.shape}.")
    return -2 * alpha ** 2 * Wt @ Sigma, -2 * alpha ** 2 * Wo @ Sigma


@dataclass
class LinearRun:
    """Trajectory of simultaneous gradient descent on Eq. 12: ``Wo[t]``, ``Wt[t]`` for ``t = 0..steps``."""

    Wo: np.ndarray
    Wt: np.ndarray


def linear_gd(Wo0, Wt0, Sigma, *, alpha: float, eta, lam, steps: int, trajectory: bool = True) -> LinearRun:
    r"""Simultaneous gradient descent of Thm 2: :math:`W_{t+1} = \lambda_tW_t - \eta_t\nabla_{W_t}L`.

    ``eta`` and ``lam`` are numbers or arrays of length ``steps`` (a schedule). Both networks are updated from the
    same :math:`(W^o_t, W^t_t)`. With ``trajectory=False`` only the first and the last iterate are kept
    (``Wo[0]``, ``Wo[-1]``).
    """
    Wo, Wt = _array("Wo0", Wo0, 2), _array("Wt0", Wt0, 2)
    steps = check_int("steps", steps, minimum=0)
    eta, lam = _schedule("eta", eta, steps), _schedule("lam", lam, steps)
    if np.any(eta < 0) or np.any(lam < 0):
        raise ValueError("eta and lam must be >= 0.")
    linear_gradients(Wo, Wt, Sigma, alpha=alpha)
    Sigma = _array("Sigma", Sigma, 2)
    out_o, out_t = [Wo], [Wt]
    for k in range(steps):
        go, gt = -2 * alpha ** 2 * Wt @ Sigma, -2 * alpha ** 2 * Wo @ Sigma
        Wo, Wt = lam[k] * Wo - eta[k] * go, lam[k] * Wt - eta[k] * gt
        if trajectory or k == steps - 1:
            out_o.append(Wo)
            out_t.append(Wt)
    return LinearRun(np.stack(out_o), np.stack(out_t))


def closed_form_coefficients(c, lam) -> tuple[np.ndarray, np.ndarray]:
    r"""Corrected constants of Thm 2 for ``t = 0..T``.

    With :math:`P_t = \prod_{i<t}(\lambda_i + c_i)` and :math:`Q_t = \prod_{i<t}(\lambda_i - c_i)`,

    .. math:: C_{1,t} = Q_t,\qquad C_{2,t} = \tfrac12(P_t - Q_t)
              = \sum_{j=0}^{t-1}c_j\prod_{i=0}^{j-1}(\lambda_i + c_i)\prod_{i=j+1}^{t-1}(\lambda_i - c_i),

    where :math:`c_t = 2\eta_t\alpha^2(2p_z + \sigma_0^2)`. Returns ``(C1, C2)``, arrays of length ``T + 1``.
    """
    c, lam = _array("c", c, 1), _array("lam", lam, 1)
    if c.shape != lam.shape:
        raise ValueError(f"c and lam must have the same length; got {c.shape} and {lam.shape}.")
    P = np.concatenate([[1.0], np.cumprod(lam + c)])
    Q = np.concatenate([[1.0], np.cumprod(lam - c)])
    return Q, (P - Q) / 2


def paper_c2(c, lam) -> np.ndarray:
    r"""The paper's printed :math:`C_{2,t} = \sum_j c_j\prod_{i=j}^{t-1}(\lambda_i - c_i)\prod_{i<j}(\lambda_i+c_i)`
    (product from :math:`i = j`, an off-by-one error), for ``t = 0..T``.

    Computed by the recursion :math:`X_{t+1} = (\lambda_t - c_t)(X_t + c_tP_t)`, :math:`X_0 = 0`.
    """
    c, lam = _array("c", c, 1), _array("lam", lam, 1)
    if c.shape != lam.shape:
        raise ValueError(f"c and lam must have the same length; got {c.shape} and {lam.shape}.")
    P = np.concatenate([[1.0], np.cumprod(lam + c)])
    out = [0.0]
    for t in range(len(c)):
        out.append((lam[t] - c[t]) * (out[-1] + c[t] * P[t]))
    return np.array(out)


def linear_closed_form(Wo0, Wt0, Sigma, *, alpha: float, eta, lam, steps: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Full-matrix closed form of the linear dynamics after ``steps`` steps (this book's form of Thm 2).

    .. math:: W^{o}_t = \tfrac12\Big[(W^o_0 + W^t_0)\prod_i(\lambda_iI + 2\eta_i\alpha^2\Sigma)
              + (W^o_0 - W^t_0)\prod_i(\lambda_iI - 2\eta_i\alpha^2\Sigma)\Big],

    and :math:`W^t_t` with the sign of the second term flipped. Computed in the eigenbasis of :math:`\Sigma`.
    """
    Wo0, Wt0, Sigma = _array("Wo0", Wo0, 2), _array("Wt0", Wt0, 2), _array("Sigma", Sigma, 2)
    steps = check_int("steps", steps, minimum=0)
    eta, lam = _schedule("eta", eta, steps), _schedule("lam", lam, steps)
    alpha = check_in_range("alpha", alpha, 0.0, 1.0)
    ev, U = np.linalg.eigh((Sigma + Sigma.T) / 2)
    grow = np.prod(lam[:, None] + 2 * eta[:, None] * alpha ** 2 * ev[None, :], axis=0)
    shrink = np.prod(lam[:, None] - 2 * eta[:, None] * alpha ** 2 * ev[None, :], axis=0)
    S, Dm = (Wo0 + Wt0) @ U, (Wo0 - Wt0) @ U
    return 0.5 * (S * grow + Dm * shrink) @ U.T, 0.5 * (S * grow - Dm * shrink) @ U.T


def linear_flow(Wo0, Wt0, Sigma, *, alpha: float, decay: float = 0.0, t_eval, rtol: float = 1e-11,
                atol: float = 1e-13):
    r"""Gradient flow of Eq. 12 with weight decay, integrated with scipy ``solve_ivp`` (DOP853).

    .. math:: \dot W^o = -\mu W^o + 2\alpha^2W^t\Sigma,\qquad \dot W^t = -\mu W^t + 2\alpha^2W^o\Sigma,

    the limit :math:`\eta\to0` of :func:`linear_gd` with :math:`\lambda = 1 - \eta\mu`. Returns ``(Wo, Wt)`` of
    shape ``[len(t_eval), m, p]``.
    """
    Wo0, Wt0, Sigma = _array("Wo0", Wo0, 2), _array("Wt0", Wt0, 2), _array("Sigma", Sigma, 2)
    alpha = check_in_range("alpha", alpha, 0.0, 1.0)
    mu = check_real("decay", decay)
    t_eval = _array("t_eval", t_eval, 1)
    shape = Wo0.shape

    def rhs(_, y):
        Wo, Wt = y[: Wo0.size].reshape(shape), y[Wo0.size:].reshape(shape)
        return np.concatenate([(-mu * Wo + 2 * alpha ** 2 * Wt @ Sigma).ravel(),
                               (-mu * Wt + 2 * alpha ** 2 * Wo @ Sigma).ravel()])

    sol = solve_ivp(rhs, (float(t_eval[0]), float(t_eval[-1])), np.concatenate([Wo0.ravel(), Wt0.ravel()]),
                    method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    Y = sol.y.T
    return Y[:, : Wo0.size].reshape(-1, *shape), Y[:, Wo0.size:].reshape(-1, *shape)


def linear_flow_closed_form(Wo0, Wt0, Sigma, *, alpha: float, decay: float = 0.0, t: float):
    r"""Closed form of :func:`linear_flow` at time ``t``:
    :math:`W^{o,t}(t) = \tfrac12[(W^o_0 + W^t_0)e^{t(2\alpha^2\Sigma - \mu I)} \pm (W^o_0 - W^t_0)e^{-t(2\alpha^2\Sigma + \mu I)}]`.
    """
    Wo0, Wt0, Sigma = _array("Wo0", Wo0, 2), _array("Wt0", Wt0, 2), _array("Sigma", Sigma, 2)
    alpha = check_in_range("alpha", alpha, 0.0, 1.0)
    mu, t = check_real("decay", decay), check_nonnegative("t", t)
    ev, U = np.linalg.eigh((Sigma + Sigma.T) / 2)
    grow, shrink = np.exp(t * (2 * alpha ** 2 * ev - mu)), np.exp(-t * (2 * alpha ** 2 * ev + mu))
    S, Dm = (Wo0 + Wt0) @ U, (Wo0 - Wt0) @ U
    return 0.5 * (S * grow + Dm * shrink) @ U.T, 0.5 * (S * grow - Dm * shrink) @ U.T


def span_residual(W, M, Wo0, Wt0) -> float:
    r"""Relative distance of :math:`WM` from :math:`\mathrm{span}\{W^o_0M, W^t_0M\}` (Cor. 1).

    Least squares over two scalars :math:`(a, b)`: returns
    :math:`\min_{a,b}\|WM - aW^o_0M - bW^t_0M\|_F / \|WM\|_F`.
    """
    W, M, Wo0, Wt0 = (_array(n, v, 2) for n, v in (("W", W), ("M", M), ("Wo0", Wo0), ("Wt0", Wt0)))
    A = np.stack([(Wo0 @ M).ravel(), (Wt0 @ M).ravel()], axis=1)
    y = (W @ M).ravel()
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    return float(np.linalg.norm(y - A @ coef) / np.linalg.norm(y))


def max_cosine(W, M, *, in_span: bool = False) -> np.ndarray:
    r"""Per-atom max-cosine of Eq. 11 (with :math:`j\in[d]`): :math:`\mathrm{mc}_j = \max_i |\langle W_{i*}/\|W_{i*}\|,
    M_{*j}\rangle|`.

    With ``in_span=True``, ``W`` is an ``[m, d]`` matrix of coordinates :math:`A = WM` and the rows are normalised by
    :math:`\|A_{i*}\|\le\|W_{i*}\|`, so the value is an upper bound of the metric of any :math:`W` with
    :math:`WM = A`. Returns an array of length :math:`d`; the paper reports its max, median and min.
    """
    W = _array("W", W, 2)
    if in_span:
        A = W
    else:
        M = _array("M", M, 2)
        if M.shape[0] != W.shape[1]:
            raise ValueError(f"W [m, p] and M [p, d] must agree in p; got {W.shape} and {M.shape}.")
        A = W @ M / np.linalg.norm(M, axis=0, keepdims=True)
    norms = np.linalg.norm(A if in_span else W, axis=1, keepdims=True)
    return np.abs(A / norms).max(axis=0)


def span_metric_sup(A, B, *, n_angles: int = 2001, extra_angles=()) -> np.ndarray:
    r"""Upper envelope over :math:`\theta` of ``max_cosine(cos θ A + sin θ B, in_span=True)`` summarised as
    (max, median, min) over atoms: the best the span of the initialisation can do (Cor. 1).

    The metric is scale-invariant and even, so :math:`\theta\in[0,\pi)` covers every :math:`(a, b)\neq 0`.
    Returns an array ``[3]``: the supremum over the grid (plus ``extra_angles``) of each summary separately.
    """
    A, B = _array("A", A, 2), _array("B", B, 2)
    n_angles = check_int("n_angles", n_angles, minimum=2)
    th = np.concatenate([np.linspace(0, np.pi, n_angles, endpoint=False), _array("extra_angles", extra_angles)])
    C = np.cos(th)[:, None, None] * A + np.sin(th)[:, None, None] * B
    mc = np.abs(C / np.linalg.norm(C, axis=2, keepdims=True)).max(axis=1)
    return np.array([mc.max(1).max(), np.median(mc, axis=1).max(), mc.min(1).max()])


# ------------------------------------------------------------------------------------- symmetric-ReLU networks
def srelu(u, b):
    r"""Symmetric ReLU of Eq. 14: :math:`\mathrm{ReLU}(u - b) - \mathrm{ReLU}(-u - b)` (dead zone :math:`|u|\le b`)."""
    u, b = np.asarray(u, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.maximum(u - b, 0) - np.maximum(-u - b, 0)


def enumerate_latents(d: int, *, kappa: float) -> tuple[np.ndarray, np.ndarray]:
    r"""All :math:`3^d` latents of Assumption 1 (:math:`z_i = \pm1` w.p. :math:`\kappa/2` each, else 0) and their
    probabilities. Returns ``(Z [3^d, d], prob [3^d])``."""
    d = check_int("d", d, minimum=1, maximum=8)
    kappa = check_in_range("kappa", kappa, 0.0, 1.0)
    Z = np.array(list(itertools.product((-1.0, 0.0, 1.0), repeat=d)))
    prob = np.where(Z == 0, 1 - kappa, kappa / 2).prod(axis=1)
    return Z, prob


def enumerate_masks(d: int, *, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    r"""All :math:`2^d` diagonals of a mask with i.i.d. Bernoulli(:math:`\alpha`) entries (Eq. 3) and their
    probabilities. Returns ``(D [2^d, d], prob [2^d])``."""
    d = check_int("d", d, minimum=1, maximum=10)
    alpha = check_in_range("alpha", alpha, 0.0, 1.0)
    D = np.array(list(itertools.product((0.0, 1.0), repeat=d)))
    prob = np.where(D == 1, alpha, 1 - alpha).prod(axis=1)
    return D, prob


def _srelu_args(Wo, Wt, bo, bt, alpha, kappa):
    Wo, Wt = _array("Wo", Wo, 2), _array("Wt", Wt, 2)
    d = Wo.shape[1]
    if Wo.shape != Wt.shape or Wo.shape[0] != d:
        raise ValueError(f"Wo and Wt must be square [d, d] (M = I, m = p = d); got {Wo.shape} and {Wt.shape}.")
    bo = np.broadcast_to(_array("bo", bo), (d,)).astype(np.float64)
    bt = np.broadcast_to(_array("bt", bt), (d,)).astype(np.float64)
    if np.any(bo < 0) or np.any(bt < 0):
        raise ValueError("biases bo and bt must be >= 0.")
    Z, pz = enumerate_latents(d, kappa=kappa)
    D, pd = enumerate_masks(d, alpha=alpha)
    return Wo, Wt, bo, bt, Z, pz, D, pd


def _mean_output(W, b, Z, D, pd):
    """E_D[SReLU_b(W D z)] for every latent: [n_z, d]."""
    A = Z[:, None, :] * D[None, :, :]                      # [n_z, n_D, d]  views D z
    return np.einsum("k,zki->zi", pd, srelu(A @ W.T, b))


def population_loss(Wo, Wt, bo, bt, *, alpha: float, kappa: float) -> float:
    r"""Exact population loss of Eq. 13 with :math:`M = I`, :math:`\sigma_0 = 0`, by enumeration:

    .. math:: L = 2 - 2\sum_z \Pr(z)\,\big\langle\mathbb E_{D_1}\mathrm{SReLU}_{b^o}(W^oD_1z),\
              \mathbb E_{D_2}\mathrm{SReLU}_{b^t}(W^tD_2z)\big\rangle,

    using the independence of :math:`D_1` and :math:`D_2` given :math:`z`. Cost :math:`O(3^d2^dd^2)`.
    """
    Wo, Wt, bo, bt, Z, pz, D, pd = _srelu_args(Wo, Wt, bo, bt, alpha, kappa)
    fo, ft = _mean_output(Wo, bo, Z, D, pd), _mean_output(Wt, bt, Z, D, pd)
    return float(2 - 2 * np.einsum("z,zi,zi->", pz, fo, ft))


def population_gradient(Wo, Wt, bo, bt, *, alpha: float, kappa: float) -> np.ndarray:
    r"""Exact :math:`\nabla_{W^o}L` of Eq. 13 (target under stop-gradient), by enumeration:

    .. math:: \nabla_{W^o}L = -2\,\mathbb E_z\,\mathbb E_{D_1}\big[(f^t(z)\odot\mathbf 1[|W^oD_1z| > b^o])(D_1z)^\top\big],
              \qquad f^t(z) = \mathbb E_{D_2}\mathrm{SReLU}_{b^t}(W^tD_2z).

    The gradient with respect to :math:`W^t` is ``population_gradient(Wt, Wo, bt, bo, ...)`` (Eq. 13 is symmetric).
    """
    Wo, Wt, bo, bt, Z, pz, D, pd = _srelu_args(Wo, Wt, bo, bt, alpha, kappa)
    ft = _mean_output(Wt, bt, Z, D, pd)
    A = Z[:, None, :] * D[None, :, :]
    active = (np.abs(A @ Wo.T) > bo).astype(np.float64)        # [n_z, n_D, d]
    return -2 * np.einsum("z,k,zi,zki,zkj->ij", pz, pd, ft, active, A)


def regime_loss(Wo, Wt, bo, bt, *, alpha: float, kappa: float) -> float:
    r"""The paper's closed form of Eq. 13 (App. C.3, with the brackets restored):

    .. math:: L = 2 - 2\alpha^2\kappa\sum_i\Big[(W^o_{ii} - b^o_i)(W^t_{ii} - b^t_i)
              + \alpha^2\kappa\sum_{j\neq i}W^o_{ij}W^t_{ij}\Big].

    Exact when both networks are in the regime of Assumption 3 (:func:`regime_holds`).
    """
    Wo, Wt = _array("Wo", Wo, 2), _array("Wt", Wt, 2)
    alpha, kappa = check_in_range("alpha", alpha, 0.0, 1.0), check_in_range("kappa", kappa, 0.0, 1.0)
    d = Wo.shape[0]
    bo, bt = np.broadcast_to(np.asarray(bo, float), (d,)), np.broadcast_to(np.asarray(bt, float), (d,))
    off = ~np.eye(d, dtype=bool)
    s = alpha ** 2 * kappa
    diag = (np.diag(Wo) - bo) * (np.diag(Wt) - bt)
    return float(2 - 2 * s * (diag.sum() + s * (Wo * Wt)[off].sum()))


def regime_holds(W, b) -> bool:
    r"""Deterministic form of Assumption 3 with :math:`M = I`, :math:`\sigma_0 = 0`: for every row,
    :math:`s_i := \sum_{j\neq i}|W_{ij}| < b_i < W_{ii} - s_i`.

    Then neuron :math:`i` fires exactly when :math:`D_{ii}z_i\neq0`, with the sign of :math:`z_i`, for every
    latent and mask.
    """
    W = _array("W", W, 2)
    d = W.shape[0]
    b = np.broadcast_to(np.asarray(b, float), (d,))
    s = np.abs(W).sum(axis=1) - np.abs(np.diag(W))
    return bool(np.all(s < b) and np.all(b < np.diag(W) - s))


def fixed_point(Wt, bt, *, alpha: float, kappa: float) -> np.ndarray:
    r"""Limit of one inner loop of Thm 3 in the regime: row :math:`i` of :math:`W^{o*}` is :math:`G_{i*}/\|G_{i*}\|`
    with :math:`G_{ii} = W^t_{ii} - b^t_i`, :math:`G_{ij} = \alpha^2\kappa W^t_{ij}` (Lemma 1, vector form)."""
    Wt = _array("Wt", Wt, 2)
    d = Wt.shape[0]
    G = alpha ** 2 * kappa * Wt
    G[np.diag_indices(d)] = np.diag(Wt) - np.broadcast_to(np.asarray(bt, float), (d,))
    return G / np.linalg.norm(G, axis=1, keepdims=True)


def rownorm(W) -> np.ndarray:
    r"""Rescale every row of ``W`` to unit :math:`\ell_2` norm (Assumption 4)."""
    W = _array("W", W, 2)
    norms = np.linalg.norm(W, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("W has a zero row; it cannot be row-normalised.")
    return W / norms


def offdiag(W) -> np.ndarray:
    """The off-diagonal entries of a square matrix, as a flat array."""
    W = _array("W", W, 2)
    return W[~np.eye(W.shape[0], dtype=bool)]


@dataclass
class AlternatingRun:
    """Result of :func:`alternating`.

    ``Wo``, ``Wt``: final weights; ``offdiag``: Frobenius norm of the off-diagonal part of the network just
    updated, after each half-round (index 0: the target at the start); ``diag``: the matching smallest diagonal
    entry; ``inner_change``: the last step's max change of each inner loop; ``regime``: whether Assumption 3 held
    for both networks after each half-round.
    """

    Wo: np.ndarray
    Wt: np.ndarray
    offdiag: np.ndarray
    diag: np.ndarray
    inner_change: np.ndarray
    regime: np.ndarray


def alternating(Wo, Wt, b, *, alpha: float, kappa: float, eta: float = 2.0, inner_steps: int = 60,
                rounds: int = 4) -> AlternatingRun:
    r"""Alternating, row-normalised gradient descent of Thm 3 on the exact population loss (Eq. 13, :math:`M = I`).

    Each round runs ``inner_steps`` steps :math:`W^o\leftarrow\mathrm{rownorm}(W^o - \eta\nabla_{W^o}L)` with the
    target fixed, then the same for :math:`W^t` with the online network fixed. Gradients come from
    :func:`population_gradient` (exact enumeration). Both networks share the bias ``b``.
    """
    Wo, Wt = rownorm(_array("Wo", Wo, 2)), rownorm(_array("Wt", Wt, 2))
    eta = check_positive("eta", eta)
    inner_steps = check_int("inner_steps", inner_steps, minimum=1)
    rounds = check_int("rounds", rounds, minimum=1)
    off, dia, change, regime = [np.linalg.norm(offdiag(Wt))], [np.diag(Wt).min()], [], [
        regime_holds(Wo, b) and regime_holds(Wt, b)]
    for _ in range(rounds):
        for which in (0, 1):
            for _ in range(inner_steps):
                if which == 0:
                    new = rownorm(Wo - eta * population_gradient(Wo, Wt, b, b, alpha=alpha, kappa=kappa))
                    step, Wo = np.abs(new - Wo).max(), new
                else:
                    new = rownorm(Wt - eta * population_gradient(Wt, Wo, b, b, alpha=alpha, kappa=kappa))
                    step, Wt = np.abs(new - Wt).max(), new
            W = Wo if which == 0 else Wt
            off.append(np.linalg.norm(offdiag(W)))
            dia.append(np.diag(W).min())
            change.append(step)
            regime.append(regime_holds(Wo, b) and regime_holds(Wt, b))
    return AlternatingRun(Wo, Wt, np.array(off), np.array(dia), np.array(change), np.array(regime))


def half_round_ratio(Wt, b, *, alpha: float, kappa: float, eta: float = 2.0, inner_steps: int = 200):
    r"""One inner loop of Thm 3 from :math:`W^o = W^t`, on the exact population gradient.

    Returns ``(W_star, ratio)``: the online weights at the end and
    :math:`\|\mathrm{off}(W^{o*})\|_F/\|\mathrm{off}(W^t)\|_F`, whose first-order value is
    :math:`\alpha^2\kappa/(W^t_{ii} - b)` (uniform diagonal).
    """
    Wt = rownorm(_array("Wt", Wt, 2))
    eta = check_positive("eta", eta)
    inner_steps = check_int("inner_steps", inner_steps, minimum=1)
    Wo = Wt.copy()
    for _ in range(inner_steps):
        Wo = rownorm(Wo - eta * population_gradient(Wo, Wt, b, b, alpha=alpha, kappa=kappa))
    base = np.linalg.norm(offdiag(Wt))
    return Wo, float(np.linalg.norm(offdiag(Wo)) / base) if base > 0 else 0.0


# ------------------------------------------------------------------------------------------------------ Lemma 1
def lemma1_iterate(v0, a, c_seq) -> np.ndarray:
    r"""The proportional update with normalisation of Lemma 1 (App. D), in its vector form:

    .. math:: v_1\leftarrow v_1 + c^{(t)},\quad v_i\leftarrow v_i + a_ic^{(t)}\ (i\ge2),\quad
              v\leftarrow v/\|v\|_2 .

    ``a`` is a number (the lemma as stated) or an array of length :math:`d-1` (the form Thm 3 uses).
    Returns the trajectory ``[len(c_seq) + 1, d]``.
    """
    v = _array("v0", v0, 1)
    d = v.shape[0]
    if d < 2:
        raise ValueError(f"v0 must have length d >= 2; got {d}.")
    a = np.broadcast_to(_array("a", a), (d - 1,))
    c_seq = _array("c_seq", c_seq, 1)
    if np.any(c_seq <= 0):
        raise ValueError("every c^(t) in c_seq must be > 0.")
    g = np.concatenate([[1.0], a])
    out = [v / np.linalg.norm(v)]
    for c in c_seq:
        v = out[-1] + c * g
        out.append(v / np.linalg.norm(v))
    return np.stack(out)


def lemma1_limit(a, d: int | None = None) -> np.ndarray:
    r"""Limit of Lemma 1: :math:`(1, a_2, \dots, a_d)/\sqrt{1 + \sum_i a_i^2}` (scalar ``a`` needs ``d``)."""
    a = _array("a", a)
    if a.ndim == 0:
        d = check_int("d", d, minimum=2)
        a = np.full(d - 1, float(a))
    g = np.concatenate([[1.0], a])
    return g / np.linalg.norm(g)


# --------------------------------------------------------------------------------------------------- the panel
def phase_figure(alpha: float = 0.8, kappa: float = 0.5, b: float = 0.3, delta: float = 0.02, d: int = 3,
                 rounds: int = 4, seed: int = 0):
    r"""Panel of Chapter 16: alternating optimisation of Thm 3 on the exact population loss.

    Left: the :math:`(\alpha^2\kappa, b)` plane with the phase boundary :math:`\alpha^2\kappa = 1 - b` and the
    chosen point. Right: the off-diagonal norm after each half-round, measured and as predicted by the factor
    :math:`\alpha^2\kappa/(W_{ii} - b)`, with the regime of Assumption 3 marked.
    """
    from .. import viz

    alpha, kappa = check_in_range("alpha", alpha, 0.05, 1.0), check_in_range("kappa", kappa, 0.05, 1.0)
    b, delta = check_in_range("b", b, 0.0, 0.95), check_in_range("delta", delta, 0.0, 0.3)
    d = check_int("d", d, minimum=2, maximum=4)
    rounds = check_int("rounds", rounds, minimum=1, maximum=6)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    W0 = np.eye(d) + delta * rng.uniform(-1, 1, (d, d)) * (1 - np.eye(d))
    W1 = np.eye(d) + delta * rng.uniform(-1, 1, (d, d)) * (1 - np.eye(d))
    s = alpha ** 2 * kappa
    run = alternating(W0, W1, b, alpha=alpha, kappa=kappa, eta=1.0 / s, inner_steps=25, rounds=rounds)
    pred = run.offdiag[0] * np.concatenate([[1.0], np.cumprod(s / (run.diag[:-1] - b))])
    fig, (ax0, ax1) = viz.figure(ncols=2, width=8.4, height=3.2)
    bb = np.linspace(0, 0.95, 50)
    ax0.fill_between(bb, 0, 1 - bb, color="C2", alpha=0.15, label="contracts")
    ax0.fill_between(bb, 1 - bb, 1, color="C3", alpha=0.15, label="grows")
    ax0.plot(bb, 1 - bb, "k-", lw=1)
    ax0.plot([b], [s], "ko")
    ax0.set_xlabel("bias $b$")
    ax0.set_ylabel(r"$\alpha^2\kappa$")
    ax0.set_xlim(0, 0.95)
    ax0.set_ylim(0, 1)
    ax0.legend(loc="upper right", fontsize=8)
    k = np.arange(len(run.offdiag))
    ax1.semilogy(k, np.maximum(run.offdiag, 1e-300), "o-", label="exact enumeration")
    ax1.semilogy(k, np.maximum(pred, 1e-300), "k--", lw=1, label=r"$\prod\alpha^2\kappa/(W_{ii}-b)$")
    bad = ~run.regime
    if bad.any():
        ax1.semilogy(k[bad], run.offdiag[bad], "rx", ms=9, label="Assumption 3 fails")
    ax1.set_xlabel("half-round")
    ax1.set_ylabel("off-diagonal norm")
    ax1.legend(fontsize=8)
    return fig
