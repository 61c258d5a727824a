r"""Training dynamics of dual networks on sparse-coding data (Pokle, Tian, Li, Risteski 2022, Sec. 5.2.1, App. C, D).

Three models, all in their *population* form (exact expectations, no sampling):

* **Linear dual networks** (Thm 2, Eq. 12/22). The views' cross moment is
  :math:`\mathbb E[a_1a_2^\top] = K\circ\Sigma` with the mask moment :math:`K`
  (:func:`clbook.data.sparse_coding.mask_moment`) and :math:`\Sigma = \mathbb E[xx^\top]`
  (:func:`clbook.data.sparse_coding.second_moment`); for independent masks it is :math:`\alpha^2\Sigma`, and
  :math:`\nabla_{W^o}L = -2\alpha^2 W^t\Sigma`. The exact loss (:func:`linear_population`, Ch. 14), simultaneous
  gradient descent with weight decay :math:`\lambda_t` (:func:`linear_gd`), its closed form with the corrected
  constants :math:`C_{1,t} = Q_t`, :math:`C_{2,t} = (P_t - Q_t)/2` (:func:`closed_form_coefficients`,
  :func:`linear_closed_form`), the paper's printed :math:`C_{2,t}` (:func:`paper_c2`), the gradient flow integrated
  with scipy's ``solve_ivp`` (:func:`linear_flow`) and its closed form (:func:`linear_flow_closed_form`); the part
  of :math:`W_tM` outside :math:`\mathrm{span}\{W^o_0M, W^t_0M\}` (:func:`span_residual`) and the best max-cosine of
  that span (:func:`span_metric_sup`, with :mod:`clbook.metrics.maxcos`) for Cor. 1.
* **Symmetric-ReLU dual networks** (Thm 3, Eqs. 13-14) with :math:`M = I`, :math:`\sigma_0 = 0`, fixed biases:
  the exact population loss and gradient by enumerating every latent :math:`z\in\{-1,0,1\}^d` and every mask
  :math:`D\in\{0,1\}^d` (:func:`clbook.data.sparse_coding.enumerate_latents`, ``enumerate_masks``;
  :func:`population_loss`, :func:`population_gradient`), the closed form of the loss in the
  regime of Assumption 3 (:func:`regime_loss`, :func:`regime_holds`), the alternating, row-normalised optimisation
  of Thm 3 (:func:`alternating`) and one inner loop (:func:`half_round_ratio`, :func:`fixed_point`).
* **Lemma 1** (App. D): the proportional update with normalisation (:func:`lemma1_iterate`) and its limit.

Names: ``keep`` is the masks' keep probability :math:`\alpha`; ``sparsity`` is :math:`\beta = \Pr(z_i\neq0)`, the
paper's :math:`\kappa` (Assumption 1) and :math:`2p_z` (proof of Thm 2). Every function computes in torch on the
device and in the dtype of its tensor arguments (numbers, lists and arrays are placed on the device and in the
dtype of :func:`clbook.setup`, see :func:`clbook._validate.as_tensor`); :func:`linear_flow` hands the ODE to
scipy on the CPU and returns the result where its input lives. Used in Chapters 14 and 16.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .. import linalg
from .._validate import as_tensor, check_in_range, check_int, check_nonnegative, check_positive, check_real
from ..data import sparse_coding as sc
from ..metrics import maxcos
from .landscape import srelu

__all__ = [
    "linear_population", "linear_gradients", "linear_gd", "LinearRun", "closed_form_coefficients", "paper_c2",
    "linear_closed_form", "linear_flow", "linear_flow_closed_form", "span_residual", "span_metric_sup",
    "population_loss", "population_gradient", "regime_loss",
    "regime_holds", "fixed_point", "alternating", "AlternatingRun", "half_round_ratio", "offdiag",
    "lemma1_iterate", "lemma1_limit",
]


def _matrix(name: str, value, like: torch.Tensor | None = None) -> torch.Tensor:
    if like is None:
        return as_tensor(name, value, ndim=2)
    return as_tensor(name, value, ndim=2, device=like.device, dtype=like.dtype)


def _schedule(name: str, value, steps: int, like: torch.Tensor) -> torch.Tensor:
    arr = as_tensor(name, value, device=like.device, dtype=like.dtype)
    if arr.ndim == 0:
        arr = arr.expand(steps)
    if tuple(arr.shape) != (steps,):
        raise ValueError(f"{name} must be a number or a sequence of length steps = {steps}; got shape {tuple(arr.shape)}.")
    if bool((arr < 0).any()):
        raise ValueError(f"{name} must be >= 0 at every step.")
    return arr


def _linear_args(Wo, Wt, Sigma):
    Wo = _matrix("Wo", Wo)
    Wt, Sigma = _matrix("Wt", Wt, Wo), _matrix("Sigma", Sigma, Wo)
    if Wo.shape != Wt.shape or Sigma.shape != (Wo.shape[1], Wo.shape[1]):
        raise ValueError(f"shapes must be Wo, Wt [m, p] and Sigma [p, p]; got {list(Wo.shape)}, {list(Wt.shape)}, "
                         f"{list(Sigma.shape)}.")
    if Wo.numel() == 0:
        raise ValueError(f"Wo must have m >= 1 rows and p >= 1 columns; got {list(Wo.shape)}.")
    return Wo, Wt, Sigma


def _view_moment(Sigma: torch.Tensor, keep: float, scheme: str) -> torch.Tensor:
    r""":math:`\mathbb E[a_1a_2^\top] = K\circ\Sigma` (symmetric), with :math:`K` from :func:`clbook.data.sparse_coding.mask_moment`."""
    return sc.mask_moment(Sigma.shape[-1], keep=keep, scheme=scheme).to(Sigma) * Sigma


# ----------------------------------------------------------------------------------------------- linear networks
def linear_population(Wo, Wt, Sigma, *, keep: float, scheme: str = "independent") -> torch.Tensor:
    r"""Exact population value of the linear non-contrastive loss, Eq. 12, for either masking scheme.

    .. math::

        L = 2 - 2\,\mathrm{tr}\big(W^o\,(K\circ\Sigma)\,W^{t\top}\big),

    where :math:`K` is :func:`clbook.data.sparse_coding.mask_moment` (the masks are independent of :math:`x`) and
    :math:`\Sigma = \mathbb E[xx^\top]` (:func:`clbook.data.sparse_coding.second_moment`).

    Parameters
    ----------
    Wo, Wt : torch.Tensor, shape=[m, p]
    Sigma : torch.Tensor, shape=[p, p]
        Symmetric; moved to ``Wo``'s device and dtype.
    keep : float
        :math:`\alpha\in[0, 1]`.
    scheme : {"independent", "dependent"}

    Returns
    -------
    torch.Tensor, shape=[] (0-d)
    """
    Wo, Wt, Sigma = _linear_args(Wo, Wt, Sigma)
    C = _view_moment(Sigma, keep, scheme)
    return 2 - 2 * torch.einsum("ij,jk,ik->", Wo, C, Wt)


def linear_gradients(Wo, Wt, Sigma, *, keep: float, scheme: str = "independent") -> tuple[torch.Tensor, torch.Tensor]:
    r"""Population gradients of Eq. 12 (App. C.1).

    With :math:`C = K\circ\Sigma`,

    .. math:: \nabla_{W^o}L = -2W^tC,\qquad \nabla_{W^t}L = -2W^oC,

    i.e. :math:`-2\alpha^2W^t\Sigma` for independent masks. Shapes as in :func:`linear_population`.
    """
    Wo, Wt, Sigma = _linear_args(Wo, Wt, Sigma)
    C = _view_moment(Sigma, keep, scheme)
    return -2 * Wt @ C, -2 * Wo @ C


@dataclass(frozen=True)
class LinearRun:
    """Trajectory of simultaneous gradient descent on Eq. 12.

    ``Wo[t]``, ``Wt[t]`` for ``t = 0..steps`` (or the first and the last iterate only).
    """

    Wo: torch.Tensor
    Wt: torch.Tensor


def linear_gd(Wo0, Wt0, Sigma, *, keep: float, eta, lam, steps: int, scheme: str = "independent",
              trajectory: bool = True) -> LinearRun:
    r"""Simultaneous gradient descent of Thm 2: :math:`W_{t+1} = \lambda_tW_t - \eta_t\nabla_{W_t}L` on Eq. 12.

    ``eta`` and ``lam`` are numbers ``>= 0`` or sequences of length ``steps`` (a schedule). Both networks are updated
    from the same :math:`(W^o_t, W^t_t)`. With ``trajectory=False`` only the first and the last iterate are kept
    (``Wo[0]``, ``Wo[-1]``). Shapes as in :func:`linear_population`; ``steps >= 0``.
    """
    Wo, Wt, Sigma = _linear_args(Wo0, Wt0, Sigma)
    steps = check_int("steps", steps, 0)
    eta, lam = _schedule("eta", eta, steps, Wo), _schedule("lam", lam, steps, Wo)
    C = _view_moment(Sigma, keep, scheme)
    out_o, out_t = [Wo], [Wt]
    for k in range(steps):
        Wo, Wt = lam[k] * Wo + 2 * eta[k] * Wt @ C, lam[k] * Wt + 2 * eta[k] * Wo @ C
        if trajectory or k == steps - 1:
            out_o.append(Wo)
            out_t.append(Wt)
    return LinearRun(torch.stack(out_o), torch.stack(out_t))


def _coefficients(c, lam) -> tuple[torch.Tensor, torch.Tensor]:
    c = as_tensor("c", c, ndim=1)
    lam = as_tensor("lam", lam, ndim=1, device=c.device, dtype=c.dtype)
    if c.shape != lam.shape:
        raise ValueError(f"c and lam must have the same length; got {tuple(c.shape)} and {tuple(lam.shape)}.")
    return c, lam


def closed_form_coefficients(c, lam) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Corrected constants of Thm 2 for ``t = 0..T``.

    With :math:`P_t = \prod_{i<t}(\lambda_i + c_i)` and :math:`Q_t = \prod_{i<t}(\lambda_i - c_i)`,

    .. math:: C_{1,t} = Q_t,\qquad C_{2,t} = \tfrac12(P_t - Q_t)
              = \sum_{j=0}^{t-1}c_j\prod_{i=0}^{j-1}(\lambda_i + c_i)\prod_{i=j+1}^{t-1}(\lambda_i - c_i),

    where :math:`c_t = 2\eta_t\alpha^2(\beta + \sigma_0^2)` (the paper's :math:`2\eta_t\alpha^2(2p_z + \sigma_0^2)`).
    ``c`` and ``lam`` are 1-D of one length ``T``. Returns ``(C1, C2)``, each of length ``T + 1``.
    """
    c, lam = _coefficients(c, lam)
    one = torch.ones(1, device=c.device, dtype=c.dtype)
    P = torch.cat([one, torch.cumprod(lam + c, 0)])
    Q = torch.cat([one, torch.cumprod(lam - c, 0)])
    return Q, (P - Q) / 2


def paper_c2(c, lam) -> torch.Tensor:
    r"""The paper's printed :math:`C_{2,t}`, for ``t = 0..T``.

    :math:`C_{2,t} = \sum_j c_j\prod_{i=j}^{t-1}(\lambda_i - c_i)\prod_{i<j}(\lambda_i+c_i)`
    (product from :math:`i = j`, an off-by-one), for ``t = 0..T``.

    Computed by the recursion :math:`X_{t+1} = (\lambda_t - c_t)(X_t + c_tP_t)`, :math:`X_0 = 0`.
    """
    c, lam = _coefficients(c, lam)
    one = torch.ones(1, device=c.device, dtype=c.dtype)
    P = torch.cat([one, torch.cumprod(lam + c, 0)])
    out = [torch.zeros((), device=c.device, dtype=c.dtype)]
    for t in range(len(c)):
        out.append((lam[t] - c[t]) * (out[-1] + c[t] * P[t]))
    return torch.stack(out)


def _eig(C: torch.Tensor):
    return torch.linalg.eigh((C + C.T) / 2)


def linear_closed_form(Wo0, Wt0, Sigma, *, keep: float, eta, lam, steps: int,
                       scheme: str = "independent") -> tuple[torch.Tensor, torch.Tensor]:
    r"""Full-matrix closed form of the linear dynamics after ``steps`` steps (this book's form of Thm 2).

    With :math:`C = K\circ\Sigma` (:math:`\alpha^2\Sigma` for independent masks),

    .. math:: W^{o}_t = \tfrac12\Big[(W^o_0 + W^t_0)\prod_i(\lambda_iI + 2\eta_iC)
              + (W^o_0 - W^t_0)\prod_i(\lambda_iI - 2\eta_iC)\Big],

    and :math:`W^t_t` with the sign of the second term flipped. Computed in the eigenbasis of :math:`C`.
    """
    Wo0, Wt0, Sigma = _linear_args(Wo0, Wt0, Sigma)
    steps = check_int("steps", steps, 0)
    eta, lam = _schedule("eta", eta, steps, Wo0), _schedule("lam", lam, steps, Wo0)
    ev, U = _eig(_view_moment(Sigma, keep, scheme))
    grow = torch.prod(lam[:, None] + 2 * eta[:, None] * ev[None, :], dim=0)
    shrink = torch.prod(lam[:, None] - 2 * eta[:, None] * ev[None, :], dim=0)
    S, Dm = (Wo0 + Wt0) @ U, (Wo0 - Wt0) @ U
    return 0.5 * (S * grow + Dm * shrink) @ U.T, 0.5 * (S * grow - Dm * shrink) @ U.T


def linear_flow(Wo0, Wt0, Sigma, *, keep: float, decay: float = 0.0, t_eval, scheme: str = "independent",
                rtol: float = 1e-11, atol: float = 1e-13) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Gradient flow of Eq. 12 with weight decay, integrated with scipy's ``solve_ivp`` (DOP853).

    .. math:: \dot W^o = -\mu W^o + 2W^tC,\qquad \dot W^t = -\mu W^t + 2W^oC,\qquad C = K\circ\Sigma,

    the limit :math:`\eta\to0` of :func:`linear_gd` with :math:`\lambda = 1 - \eta\mu`. scipy integrates on the CPU
    in float64 (explicit transfer); the result comes back on the device and in the dtype of ``Wo0``.
    ``t_eval`` is an increasing 1-D sequence of times ``>= 0`` (its first entry is the start). Returns ``(Wo, Wt)`` of
    shape ``[len(t_eval), m, p]``.
    """
    import numpy as np
    from scipy.integrate import solve_ivp

    Wo0, Wt0, Sigma = _linear_args(Wo0, Wt0, Sigma)
    mu = check_real("decay", decay)
    t = as_tensor("t_eval", t_eval, ndim=1, device="cpu", dtype=torch.float64)
    if t.numel() < 1 or bool((t < 0).any()) or bool((t[1:] <= t[:-1]).any()):
        raise ValueError("t_eval must be a non-empty, increasing sequence of times >= 0.")
    rtol, atol = check_positive("rtol", rtol), check_positive("atol", atol)
    C = _view_moment(Sigma, keep, scheme).detach().cpu().to(torch.float64).numpy()
    shape, size = tuple(Wo0.shape), Wo0.numel()

    def rhs(_, y):
        Wo, Wt = y[:size].reshape(shape), y[size:].reshape(shape)
        return np.concatenate([(-mu * Wo + 2 * Wt @ C).ravel(), (-mu * Wt + 2 * Wo @ C).ravel()])

    y0 = torch.cat([Wo0.reshape(-1), Wt0.reshape(-1)]).detach().cpu().to(torch.float64).numpy()
    times = t.numpy()
    if times.size == 1:
        Y = y0[None, :]
    else:
        sol = solve_ivp(rhs, (float(times[0]), float(times[-1])), y0, method="DOP853", t_eval=times, rtol=rtol, atol=atol)
        if not sol.success:
            raise RuntimeError(f"solve_ivp failed: {sol.message}")
        Y = sol.y.T
    Y = torch.as_tensor(Y).to(device=Wo0.device, dtype=Wo0.dtype)
    return Y[:, :size].reshape(-1, *shape), Y[:, size:].reshape(-1, *shape)


def linear_flow_closed_form(Wo0, Wt0, Sigma, *, keep: float, decay: float = 0.0, t: float,
                            scheme: str = "independent") -> tuple[torch.Tensor, torch.Tensor]:
    r"""Closed form of :func:`linear_flow` at time ``t >= 0``.

    :math:`W^{o,t}(t) = \tfrac12[(W^o_0 + W^t_0)e^{t(2C - \mu I)} \pm (W^o_0 - W^t_0)e^{-t(2C + \mu I)}]`.
    """
    Wo0, Wt0, Sigma = _linear_args(Wo0, Wt0, Sigma)
    mu, t = check_real("decay", decay), check_nonnegative("t", t)
    ev, U = _eig(_view_moment(Sigma, keep, scheme))
    grow, shrink = torch.exp(t * (2 * ev - mu)), torch.exp(-t * (2 * ev + mu))
    S, Dm = (Wo0 + Wt0) @ U, (Wo0 - Wt0) @ U
    return 0.5 * (S * grow + Dm * shrink) @ U.T, 0.5 * (S * grow - Dm * shrink) @ U.T


def span_residual(W, M, Wo0, Wt0) -> float:
    r"""Relative distance of :math:`WM` from :math:`\mathrm{span}\{W^o_0M, W^t_0M\}` (Cor. 1).

    Least squares over two scalars :math:`(a, b)`: returns
    :math:`\min_{a,b}\|WM - aW^o_0M - bW^t_0M\|_F / \|WM\|_F` (``W``, ``Wo0``, ``Wt0`` ``[m, p]``, ``M`` ``[p, d]``,
    :math:`WM\neq0`).
    """
    W = _matrix("W", W)
    M, Wo0, Wt0 = _matrix("M", M, W), _matrix("Wo0", Wo0, W), _matrix("Wt0", Wt0, W)
    if not (W.shape == Wo0.shape == Wt0.shape and W.shape[1] == M.shape[0]):
        raise ValueError(f"W, Wo0, Wt0 must be [m, p] and M [p, d]; got {list(W.shape)}, {list(Wo0.shape)}, "
                         f"{list(Wt0.shape)}, {list(M.shape)}.")
    A = torch.stack([(Wo0 @ M).reshape(-1), (Wt0 @ M).reshape(-1)], dim=1)
    y = (W @ M).reshape(-1)
    if float(y.norm()) == 0:
        raise ValueError("W M is zero: the relative residual is undefined.")
    coef = torch.linalg.pinv(A) @ y            # least squares, also when W^o_0 M and W^t_0 M are collinear
    return float((y - A @ coef).norm() / y.norm())


def span_metric_sup(A, B, *, n_angles: int = 2001, extra_angles=()) -> torch.Tensor:
    r"""Upper envelope over :math:`\theta` of the max-cosine summaries of :math:`\cos\theta A + \sin\theta B`.

    Read in :math:`\mathrm{span}(M)` (Cor. 1): the best the span of the initialisation can do.

    ``A`` and ``B`` are ``[m, d]`` coordinate matrices (:math:`W^o_0M`, :math:`W^t_0M`); the metric of a combination
    :math:`C` is ``maxcos.max_cosines(C, I_d)``, rows normalised by :math:`\|C_{i*}\|\le\|W_{i*}\|`. It is
    scale-invariant and even, so :math:`\theta\in[0,\pi)` covers every :math:`(a, b)\neq 0`. Returns ``[3]``: the
    supremum over the grid (``n_angles >= 2``, plus ``extra_angles``) of the maximum, the median and the minimum.
    """
    A = _matrix("A", A)
    B = _matrix("B", B, A)
    if A.shape != B.shape:
        raise ValueError(f"A and B must have one shape [m, d]; got {list(A.shape)} and {list(B.shape)}.")
    n_angles = check_int("n_angles", n_angles, 2)
    extra = as_tensor("extra_angles", list(extra_angles) if not isinstance(extra_angles, torch.Tensor) else extra_angles,
                      device=A.device, dtype=A.dtype).reshape(-1)
    grid = torch.arange(n_angles, device=A.device, dtype=A.dtype) * (math.pi / n_angles)
    th = torch.cat([grid, extra])
    C = torch.cos(th)[:, None, None] * A + torch.sin(th)[:, None, None] * B
    eye = torch.eye(A.shape[1], device=A.device, dtype=A.dtype)
    s = maxcos.max_cosine_summary(C, eye)
    return torch.stack([s.maximum.max(), s.median.max(), s.minimum.max()])


# ------------------------------------------------------------------------------------- symmetric-ReLU networks
def _bias_vector(name: str, b, d: int, like: torch.Tensor) -> torch.Tensor:
    b = as_tensor(name, b, device=like.device, dtype=like.dtype)
    if b.ndim > 1 or (b.ndim == 1 and b.shape[0] != d):
        raise ValueError(f"{name} must be a number or a vector of length d = {d}; got shape {tuple(b.shape)}.")
    if bool((b < 0).any()):
        raise ValueError(f"{name} (an SReLU threshold) must be >= 0.")
    return b.expand(d)


def _srelu_args(Wo, Wt, bo, bt, keep, sparsity):
    Wo = _matrix("Wo", Wo)
    Wt = _matrix("Wt", Wt, Wo)
    d = Wo.shape[1]
    if Wo.shape != Wt.shape or Wo.shape[0] != d:
        raise ValueError(f"Wo and Wt must be square [d, d] (M = I, m = p = d); got {list(Wo.shape)} and {list(Wt.shape)}.")
    bo, bt = _bias_vector("bo", bo, d, Wo), _bias_vector("bt", bt, d, Wo)
    Z, pz = sc.enumerate_latents(d, sparsity=sparsity)
    D, pd = sc.enumerate_masks(d, keep=keep)
    return Wo, Wt, bo, bt, Z.to(Wo), pz.to(Wo), D.to(Wo), pd.to(Wo)


def _mean_output(W, b, Z, D, pd):
    """E_D[SReLU_b(W D z)] for every latent: [n_z, d]."""
    A = Z[:, None, :] * D[None, :, :]                      # [n_z, n_D, d]  views D z
    return torch.einsum("k,zki->zi", pd, srelu(A @ W.T, b))


def population_loss(Wo, Wt, bo, bt, *, keep: float, sparsity: float) -> float:
    r"""Exact population loss of Eq. 13 with :math:`M = I`, :math:`\sigma_0 = 0`, by enumeration.

    .. math:: L = 2 - 2\sum_z \Pr(z)\,\big\langle\mathbb E_{D_1}\mathrm{SReLU}_{b^o}(W^oD_1z),\
              \mathbb E_{D_2}\mathrm{SReLU}_{b^t}(W^tD_2z)\big\rangle,

    using the independence of :math:`D_1` and :math:`D_2` given :math:`z`. ``Wo``, ``Wt`` ``[d, d]`` with
    ``d <= 8``, thresholds ``bo``, ``bt`` numbers or ``[d]``, ``>= 0``. Cost :math:`O(3^d2^dd^2)`.
    """
    Wo, Wt, bo, bt, Z, pz, D, pd = _srelu_args(Wo, Wt, bo, bt, keep, sparsity)
    fo, ft = _mean_output(Wo, bo, Z, D, pd), _mean_output(Wt, bt, Z, D, pd)
    return float(2 - 2 * torch.einsum("z,zi,zi->", pz, fo, ft))


def population_gradient(Wo, Wt, bo, bt, *, keep: float, sparsity: float) -> torch.Tensor:
    r"""Exact :math:`\nabla_{W^o}L` of Eq. 13 (target under stop-gradient), by enumeration.

    .. math:: \nabla_{W^o}L = -2\,\mathbb E_z\,\mathbb E_{D_1}\big[(f^t(z)\odot\mathbf 1[|W^oD_1z| > b^o])(D_1z)^\top\big],
              \qquad f^t(z) = \mathbb E_{D_2}\mathrm{SReLU}_{b^t}(W^tD_2z).

    The gradient with respect to :math:`W^t` is ``population_gradient(Wt, Wo, bt, bo, ...)`` (Eq. 13 is symmetric).
    Arguments as in :func:`population_loss`; returns ``[d, d]``.
    """
    Wo, Wt, bo, bt, Z, pz, D, pd = _srelu_args(Wo, Wt, bo, bt, keep, sparsity)
    return _gradient(Wo, Wt, bo, bt, Z, pz, D, pd)


def _gradient(Wo, Wt, bo, bt, Z, pz, D, pd):
    """:func:`population_gradient` from the enumeration, unchecked, on torch tensors or numpy arrays."""
    numpy = isinstance(Wo, np.ndarray)
    xp = np if numpy else torch
    A = Z[:, None, :] * D[None, :, :]                      # [n_z, n_D, d]  views D z
    u = A @ Wt.T
    ft = xp.einsum("k,zki->zi", pd, np.maximum(u - bt, 0) - np.maximum(-u - bt, 0) if numpy else srelu(u, bt))
    active = abs(A @ Wo.T) > bo                            # [n_z, n_D, d]
    active = active.astype(Wo.dtype) if numpy else active.to(Wo.dtype)
    weighted = pz[:, None, None] * pd[None, :, None] * ft[:, None, :] * active
    return -2 * xp.einsum("zki,zkj->ij", weighted, A)


def regime_loss(Wo, Wt, bo, bt, *, keep: float, sparsity: float) -> float:
    r"""The closed form of Eq. 13 in the regime of Assumption 3 (App. C.3, with the brackets restored).

    .. math:: L = 2 - 2\alpha^2\beta\sum_i\Big[(W^o_{ii} - b^o_i)(W^t_{ii} - b^t_i)
              + \alpha^2\beta\sum_{j\neq i}W^o_{ij}W^t_{ij}\Big]

    (the paper's :math:`\kappa = \beta`). Exact when both networks are in the regime (:func:`regime_holds`) and
    :math:`\sigma_0 = 0`. Arguments as in :func:`population_loss` (any ``d >= 1``).
    """
    Wo = _matrix("Wo", Wo)
    Wt = _matrix("Wt", Wt, Wo)
    if Wo.shape != Wt.shape or Wo.shape[0] != Wo.shape[1]:
        raise ValueError(f"Wo and Wt must be square [d, d]; got {list(Wo.shape)} and {list(Wt.shape)}.")
    alpha, beta = check_in_range("keep", keep, 0.0, 1.0), check_in_range("sparsity", sparsity, 0.0, 1.0)
    d = Wo.shape[0]
    bo, bt = _bias_vector("bo", bo, d, Wo), _bias_vector("bt", bt, d, Wo)
    off = ~torch.eye(d, dtype=torch.bool, device=Wo.device)
    s = alpha**2 * beta
    diag = (torch.diagonal(Wo) - bo) * (torch.diagonal(Wt) - bt)
    return float(2 - 2 * s * (diag.sum() + s * (Wo * Wt)[off].sum()))


def regime_holds(W, b) -> bool:
    r"""Deterministic form of Assumption 3 with :math:`M = I`, :math:`\sigma_0 = 0`.

    for every row, :math:`s_i := \sum_{j\neq i}|W_{ij}| < b_i < W_{ii} - s_i`.

    Then neuron :math:`i` fires exactly when :math:`D_{ii}z_i\neq0`, with the sign of :math:`z_i`, for every
    latent and mask. ``W`` square ``[d, d]``; ``b`` a number or ``[d]``, ``>= 0``.
    """
    W = _matrix("W", W)
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be square [d, d]; got {list(W.shape)}.")
    b = _bias_vector("b", b, W.shape[0], W)
    s = W.abs().sum(dim=1) - torch.diagonal(W).abs()
    return bool((s < b).all() and (b < torch.diagonal(W) - s).all())


def fixed_point(Wt, bt, *, keep: float, sparsity: float) -> torch.Tensor:
    r"""Limit of one inner loop of Thm 3 in the regime.

    row :math:`i` of :math:`W^{o*}` is :math:`G_{i*}/\|G_{i*}\|` with :math:`G_{ii} = W^t_{ii} - b^t_i`, :math:`G_{ij} =
    \alpha^2\beta W^t_{ij}` (Lemma 1, vector form). ``Wt`` ``[d, d]``, ``bt`` a number or ``[d]``; returns ``[d, d]``.
    """
    Wt = _matrix("Wt", Wt)
    if Wt.shape[0] != Wt.shape[1]:
        raise ValueError(f"Wt must be square [d, d]; got {list(Wt.shape)}.")
    alpha, beta = check_in_range("keep", keep, 0.0, 1.0), check_in_range("sparsity", sparsity, 0.0, 1.0)
    d = Wt.shape[0]
    G = alpha**2 * beta * Wt
    G = G - torch.diag(torch.diagonal(G)) + torch.diag(torch.diagonal(Wt) - _bias_vector("bt", bt, d, Wt))
    return linalg.unit_rows(G)


def offdiag(W) -> torch.Tensor:
    """The off-diagonal entries of a square matrix ``[d, d]``, as a flat tensor of length ``d (d - 1)``."""
    W = _matrix("W", W)
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be square [d, d]; got {list(W.shape)}.")
    return W[~torch.eye(W.shape[0], dtype=torch.bool, device=W.device)]


def _rows(name: str, W: torch.Tensor) -> torch.Tensor:
    if bool((W.norm(dim=1) == 0).any()):
        raise ValueError(f"{name} has a zero row; it cannot be row-normalised (Assumption 4).")
    return linalg.unit_rows(W)


@dataclass(frozen=True)
class AlternatingRun:
    """Result of :func:`alternating`.

    ``Wo``, ``Wt``: final weights; ``offdiag``: Frobenius norm of the off-diagonal part of the network just
    updated, after each half-round (index 0: the target at the start); ``diag``: the matching smallest diagonal
    entry; ``inner_change``: the last step's largest change of each inner loop; ``regime``: whether Assumption 3
    held for both networks after each half-round (index 0: at the start).
    """

    Wo: torch.Tensor
    Wt: torch.Tensor
    offdiag: torch.Tensor
    diag: torch.Tensor
    inner_change: torch.Tensor
    regime: torch.Tensor


def alternating(Wo, Wt, b, *, keep: float, sparsity: float, eta: float = 2.0, inner_steps: int = 60,
                rounds: int = 4) -> AlternatingRun:
    r"""Alternating, row-normalised gradient descent of Thm 3 on the exact population loss (Eq. 13, :math:`M = I`).

    Each round runs ``inner_steps`` steps :math:`W^o\leftarrow\mathrm{rownorm}(W^o - \eta\nabla_{W^o}L)` with the
    target fixed, then the same for :math:`W^t` with the online network fixed. Gradients come from
    :func:`population_gradient` (exact enumeration). Both networks share the threshold ``b``. ``Wo``, ``Wt``
    ``[d, d]`` (``d <= 8``, no zero row), ``eta > 0``, ``inner_steps >= 1``, ``rounds >= 1``.
    """
    Wo = _matrix("Wo", Wo)
    Wt = _matrix("Wt", Wt, Wo)
    Wo, Wt = _rows("Wo", Wo), _rows("Wt", Wt)
    eta = check_positive("eta", eta)
    inner_steps, rounds = check_int("inner_steps", inner_steps, 1), check_int("rounds", rounds, 1)
    population_gradient(Wo, Wt, b, b, keep=keep, sparsity=sparsity)   # checks every argument once
    return alternating_unchecked(Wo, Wt, b, keep=keep, sparsity=sparsity, eta=eta, inner_steps=inner_steps,
                                 rounds=rounds)


def alternating_unchecked(Wo, Wt, b, *, keep: float, sparsity: float, eta: float, inner_steps: int,
                          rounds: int) -> AlternatingRun:
    """The loop of :func:`alternating`, without its checks, on torch tensors or on numpy arrays.

    ``Wo`` and ``Wt`` (unit rows) are both torch tensors or both numpy arrays (float64); the enumeration of latents
    and masks is made once. The same half-rounds run on either (torch for the package and the chapters, numpy for a
    panel's ``d <= 4``, where torch's per-operation overhead is most of the time). The result holds torch tensors.
    """
    numpy = isinstance(Wo, np.ndarray)
    d = Wo.shape[0]
    Z, pz = sc.enumerate_latents(d, sparsity=sparsity)
    D, pd = sc.enumerate_masks(d, keep=keep)
    if numpy:
        Z, pz, D, pd = (x.detach().cpu().numpy().astype(np.float64) for x in (Z, pz, D, pd))
        bv, off_mask = np.full(d, float(b)), ~np.eye(d, dtype=bool)

        def rows(W):
            return W / np.maximum(np.linalg.norm(W, axis=-1, keepdims=True), 1e-12)
    else:
        Z, pz, D, pd = (x.to(Wo) for x in (Z, pz, D, pd))
        bv, off_mask, rows = _bias_vector("b", b, d, Wo), ~torch.eye(d, dtype=torch.bool, device=Wo.device), linalg.unit_rows

    def norm(x):
        return np.linalg.norm(x) if numpy else x.norm()

    def holds(W):  # regime_holds(W, b)
        s = abs(W).sum(axis=1) - abs(W.diagonal())
        return bool((s < bv).all() and (bv < W.diagonal() - s).all())

    off, dia = [norm(Wt[off_mask])], [Wt.diagonal().min()]
    change, regime = [], [holds(Wo) and holds(Wt)]
    for _ in range(rounds):
        for which in (0, 1):
            for _ in range(inner_steps):
                if which == 0:
                    new = rows(Wo - eta * _gradient(Wo, Wt, bv, bv, Z, pz, D, pd))
                    step, Wo = abs(new - Wo).max(), new
                else:
                    new = rows(Wt - eta * _gradient(Wt, Wo, bv, bv, Z, pz, D, pd))
                    step, Wt = abs(new - Wt).max(), new
            W = Wo if which == 0 else Wt
            off.append(norm(W[off_mask]))
            dia.append(W.diagonal().min())
            change.append(step)
            regime.append(holds(Wo) and holds(Wt))
    if numpy:
        t = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64))  # noqa: E731
        return AlternatingRun(t(Wo), t(Wt), t(off), t(dia), t(change), torch.tensor(regime))
    return AlternatingRun(Wo, Wt, torch.stack(off), torch.stack(dia), torch.stack(change),
                          torch.tensor(regime, device=Wo.device))


def half_round_ratio(Wt, b, *, keep: float, sparsity: float, eta: float = 2.0,
                     inner_steps: int = 200) -> tuple[torch.Tensor, float]:
    r"""One inner loop of Thm 3 from :math:`W^o = W^t`, on the exact population gradient.

    Returns ``(W_star, ratio)``: the online weights at the end and
    :math:`\|\mathrm{off}(W^{o*})\|_F/\|\mathrm{off}(W^t)\|_F` (0 when :math:`W^t` is diagonal), whose first-order
    value is :math:`\alpha^2\beta/(W^t_{ii} - b)` (uniform diagonal). ``Wt`` ``[d, d]`` without a zero row.
    """
    Wt = _rows("Wt", _matrix("Wt", Wt))
    eta = check_positive("eta", eta)
    inner_steps = check_int("inner_steps", inner_steps, 1)
    Wo = Wt.clone()
    for _ in range(inner_steps):
        Wo = linalg.unit_rows(Wo - eta * population_gradient(Wo, Wt, b, b, keep=keep, sparsity=sparsity))
    base = float(offdiag(Wt).norm())
    return Wo, float(offdiag(Wo).norm()) / base if base > 0 else 0.0


# ------------------------------------------------------------------------------------------------------ Lemma 1
def lemma1_iterate(v0, a, c_seq) -> torch.Tensor:
    r"""The proportional update with normalisation of Lemma 1 (App. D), in its vector form.

    .. math:: v_1\leftarrow v_1 + c^{(t)},\quad v_i\leftarrow v_i + a_ic^{(t)}\ (i\ge2),\quad
              v\leftarrow v/\|v\|_2 .

    ``v0`` is a non-zero vector of length :math:`d\ge2`; ``a`` a number (the lemma as stated) or a vector of length
    :math:`d-1` (the form Thm 3 uses); ``c_seq`` a 1-D sequence of steps :math:`c^{(t)} > 0`.
    Returns the trajectory ``[len(c_seq) + 1, d]`` (row 0: ``v0`` normalised).
    """
    v = as_tensor("v0", v0, ndim=1)
    d = v.shape[0]
    if d < 2:
        raise ValueError(f"v0 must have length d >= 2; got {d}.")
    if float(v.norm()) == 0:
        raise ValueError("v0 must be non-zero.")
    a = as_tensor("a", a, device=v.device, dtype=v.dtype)
    if a.ndim > 1 or (a.ndim == 1 and a.shape[0] != d - 1):
        raise ValueError(f"a must be a number or a vector of length d - 1 = {d - 1}; got shape {tuple(a.shape)}.")
    c_seq = as_tensor("c_seq", c_seq, ndim=1, device=v.device, dtype=v.dtype)
    if bool((c_seq <= 0).any()):
        raise ValueError("every c^(t) in c_seq must be > 0.")
    g = torch.cat([torch.ones(1, device=v.device, dtype=v.dtype), a.expand(d - 1)])
    out = [v / v.norm()]
    for c in c_seq:
        w = out[-1] + c * g
        out.append(w / w.norm())
    return torch.stack(out)


def lemma1_limit(a, d: int | None = None) -> torch.Tensor:
    r"""Limit of Lemma 1.

    :math:`(1, a_2, \dots, a_d)/\sqrt{1 + \sum_i a_i^2}`. A scalar ``a`` needs ``d >= 2``; a vector ``a`` gives
    :math:`d` = its length + 1.
    """
    a = as_tensor("a", a)
    if a.ndim == 0:
        if d is None:
            raise ValueError("d is required with a scalar a (the limit has d coordinates).")
        d = check_int("d", d, 2)
        a = a.expand(d - 1)
    elif a.ndim > 1 or a.shape[0] < 1:
        raise ValueError(f"a must be a number or a non-empty vector; got shape {tuple(a.shape)}.")
    g = torch.cat([torch.ones(1, device=a.device, dtype=a.dtype), a])
    return g / g.norm()
