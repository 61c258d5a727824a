r"""Wide two-layer networks under orthogonality constraints: nonlinear versus linear (Esser et al. 2023, Sec. 4).

The nonlinear network :math:`u^\phi(x) = W_2^\top\phi(W_1x)` and the linear one :math:`u^{\mathbb I}(x) = W_2^\top W_1x`
share Haar semi-orthogonal weights :math:`W_1^\top W_1 = \mathbb I_d`, :math:`W_2^\top W_2 = \mathbb I_z`. Their
difference is :math:`u^\phi - u^{\mathbb I} = W_2^\top\epsilon` with :math:`\epsilon = \phi(W_1x) - W_1x`.

* :func:`lemma2_ratio`: :math:`\sqrt h\max_{ij}|Q_{ij}|/\log h` for a Haar :math:`Q` (Lemma 2 says it stays bounded);
* :func:`init_gap`: every quantity in the proof of Theorem 1 at initialisation, batched over draws;
* :func:`train_pair`: the paper's projected gradient descent on the contrastive loss (1) for both networks from
  the same initialisation (Conjecture 1, Fig. 2), with the gradient of the nonlinear loss in closed form.

Activations: ``tanh`` and ``softplus2`` :math:`= 2(\mathrm{softplus}(y) - \log 2)` satisfy :math:`\phi(0) = 0`,
:math:`\phi'(0) = 1`, :math:`|\phi''|\le c`; ``relu`` has only :math:`\phi(0) = 0`; ``sigmoid`` has
:math:`\phi(0) = 1/2`. Used in Chapter 12 and by :mod:`clbook.experiments.wide`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ._validate import check_choice, check_int, check_positive
from .dynamics.ssl import as_array, haar_semi_orthogonal, retract_qr

__all__ = ["ACTIVATIONS", "CURVATURE", "phi", "dphi", "lemma2_ratio", "InitGap", "init_gap", "init_gaps", "TrainPair", "train_pair",
           "contrastive_gradients", "train_nets", "gap"]

ACTIVATIONS = ("tanh", "softplus2", "relu", "sigmoid")
CURVATURE = {"tanh": 4 / (3 * math.sqrt(3)), "softplus2": 0.5, "relu": math.inf, "sigmoid": 0.5 * 4 / (6 * math.sqrt(3))}
r"""The constant :math:`c = \sup|\phi''|` of Theorem 1 (``relu``: not twice differentiable; ``sigmoid``: finite, but
:math:`\phi(0)\neq0` and :math:`\phi'(0) = 1/4`, so the theorem does not apply)."""


def phi(name: str, a: np.ndarray) -> np.ndarray:
    r"""The activation :math:`\phi` applied entrywise."""
    check_choice("activation", name, ACTIVATIONS)
    if name == "tanh":
        return np.tanh(a)
    if name == "softplus2":
        return 2 * (np.logaddexp(0.0, a) - math.log(2.0))
    if name == "relu":
        return np.maximum(a, 0.0)
    return 0.5 * (1 + np.tanh(a / 2))


def dphi(name: str, a: np.ndarray) -> np.ndarray:
    r"""The derivative :math:`\phi'` (``relu``: the indicator of :math:`a > 0`)."""
    check_choice("activation", name, ACTIVATIONS)
    if name == "tanh":
        return 1 - np.tanh(a) ** 2
    if name == "softplus2":
        return 1 + np.tanh(a / 2)
    if name == "relu":
        return (a > 0).astype(np.float64)
    s = 0.5 * (1 + np.tanh(a / 2))
    return s * (1 - s)


def lemma2_ratio(h: int, d: int, *, reps: int = 20, generator: torch.Generator) -> np.ndarray:
    r"""Lemma 2: :math:`\sqrt h\,\max_{ij}|Q_{ij}|/\log h` for ``reps`` Haar ``[h, d]`` matrices :math:`Q`.

    Lemma 2 states :math:`P(\max_{ij}|Q_{ij}|\ge L\log h/\sqrt h)\to0`, so this ratio is bounded with high
    probability. The true scale of :math:`\max|Q_{ij}|` is :math:`\sqrt{2\log(hd)/h}`.
    """
    h, d, reps = check_int("h", h, 2), check_int("d", d, 1), check_int("reps", reps, 1)
    if d > h:
        raise ValueError(f"Lemma 2 needs d <= h; got d = {d}, h = {h}.")
    m = np.array([np.abs(haar_semi_orthogonal(h, d, generator=generator)).max() for _ in range(reps)])
    return math.sqrt(h) * m / math.log(h)


@dataclass(frozen=True)
class InitGap:
    r"""The quantities of Theorem 1's proof for ``reps`` draws (each an array of length ``reps``).

    Attributes
    ----------
    gap : :math:`\|u^\phi(x) - u^{\mathbb I}(x)\| = \|W_2^\top\epsilon\|`.
    eps : :math:`\|\epsilon\| = \|\phi(W_1x) - W_1x\|`.
    taylor : :math:`\tfrac c2\big(\sum_i(w_i^\top x)^4\big)^{1/2}` (Taylor step, Eq. 13).
    bound : the theorem's bound :math:`K c\|x\|^2 d\log^2h/\sqrt h` with :math:`K = C/2` and the constant
        :math:`C = \max_{ij}h(W_1)_{ij}^2/\log^2h` of Lemma 2 measured on the same draw.
    lemma2 : :math:`\sqrt h\max_{ij}|(W_1)_{ij}|/\log h`.
    """

    gap: np.ndarray
    eps: np.ndarray
    taylor: np.ndarray
    bound: np.ndarray
    lemma2: np.ndarray


def init_gaps(h: int, x, *, z: int = 3, activations=ACTIVATIONS, reps: int = 20, generator: torch.Generator) -> dict:
    r"""Theorem 1 at initialisation for several activations on the same draws: ``{activation: InitGap}``.

    Each repetition draws :math:`W_1` then :math:`W_2` (Haar, orthonormal columns) with ``generator`` and compares
    :math:`u^\phi(x)` with :math:`u^{\mathbb I}(x)` for every activation. See :class:`InitGap` for the quantities.

    Parameters
    ----------
    h : int
        Hidden width (``>= max(d, z)``).
    x : array, shape=[d]
        The input.
    z : int
        Output dimension.
    activations : sequence of str
        Names in :data:`ACTIVATIONS`.
    reps : int
        Independent draws of :math:`(W_1, W_2)`.
    """
    x = as_array("x", x, 1)
    d = x.shape[0]
    h, z, reps = check_int("h", h, max(d, 2)), check_int("z", z, 1, h), check_int("reps", reps, 1)
    activations = (activations,) if isinstance(activations, str) else tuple(activations)
    for a in activations:
        check_choice("activation", a, ACTIVATIONS)
    out = {a: {k: np.empty(reps) for k in ("gap", "eps", "taylor", "bound", "lemma2")} for a in activations}
    logh2 = math.log(h) ** 2
    for r in range(reps):
        W1 = haar_semi_orthogonal(h, d, generator=generator)
        W2 = haar_semi_orthogonal(h, z, generator=generator)
        a = W1 @ x
        big_c = h * np.max(W1**2) / logh2
        for name in activations:
            c = CURVATURE[name]
            eps = phi(name, a) - a
            o = out[name]
            o["gap"][r] = np.linalg.norm(W2.T @ eps)
            o["eps"][r] = np.linalg.norm(eps)
            o["taylor"][r] = c / 2 * math.sqrt(np.sum(a**4))
            o["bound"][r] = (big_c / 2) * c * (x @ x) * d * logh2 / math.sqrt(h)
            o["lemma2"][r] = math.sqrt(big_c)
    return {name: InitGap(**o) for name, o in out.items()}


def init_gap(h: int, x, *, z: int = 3, activation: str = "tanh", reps: int = 20, generator: torch.Generator) -> InitGap:
    r"""Theorem 1 at initialisation for one activation (see :func:`init_gaps`)."""
    return init_gaps(h, x, z=z, activations=(activation,), reps=reps, generator=generator)[activation]


def contrastive_gradients(W1, W2, x, x_pos, x_neg, activation: str):
    r"""Loss (1)/n and its Euclidean gradients for :math:`u(x) = W_2^\top\phi(W_1x)`.

    With :math:`F = \phi(XW_1^\top)` (rows :math:`\phi(W_1x_i)^\top`), :math:`U = FW_2`, and likewise for the views,

    .. math::

        \mathcal L = \tfrac1n\operatorname{Tr}\big(U^\top(U^- - U^+)\big),\quad
        \nabla_{W_2}\mathcal L = \tfrac1n\big[F^\top(U^- - U^+) + (F^- - F^+)^\top U\big],

        \nabla_{W_1}\mathcal L = \tfrac1n\big[(\phi'(A)\odot(U^- - U^+)W_2^\top)^\top X
            + (\phi'(A^-)\odot UW_2^\top)^\top X^- - (\phi'(A^+)\odot UW_2^\top)^\top X^+\big].

    Returns ``(loss, G1, G2)``; ``activation="linear"`` gives the linear network.
    """
    lin = activation == "linear"
    f = (lambda a: a) if lin else (lambda a: phi(activation, a))
    df = (lambda a: np.ones_like(a)) if lin else (lambda a: dphi(activation, a))
    A, Ap, An = x @ W1.T, x_pos @ W1.T, x_neg @ W1.T
    F, Fp, Fn = f(A), f(Ap), f(An)
    U, Up, Un = F @ W2, Fp @ W2, Fn @ W2
    n = len(x)
    loss = float(np.sum(U * (Un - Up))) / n
    G2 = (F.T @ (Un - Up) + (Fn - Fp).T @ U) / n
    UW = U @ W2.T
    G1 = ((df(A) * ((Un - Up) @ W2.T)).T @ x + (df(An) * UW).T @ x_neg - (df(Ap) * UW).T @ x_pos) / n
    return loss, G1, G2


@dataclass(frozen=True)
class TrainPair:
    r"""Outputs of the linear and the nonlinear network along training (Conjecture 1).

    Attributes
    ----------
    u_linear, u_nonlinear : np.ndarray
        ``[len(record), n, z]`` outputs on the anchors at the recorded steps.
    record : np.ndarray
        The recorded steps (0 = initialisation).
    losses_linear, losses_nonlinear : np.ndarray
        Loss (1)/n at the recorded steps.
    """

    u_linear: np.ndarray
    u_nonlinear: np.ndarray
    record: np.ndarray
    losses_linear: np.ndarray
    losses_nonlinear: np.ndarray

    @property
    def gap(self) -> np.ndarray:
        r"""Mean over anchors of :math:`\|u^\phi_t(x_i) - u^{\mathbb I}_t(x_i)\|` at each recorded step."""
        return np.linalg.norm(self.u_nonlinear - self.u_linear, axis=2).mean(axis=1)


def _orth_step(W, G, eta):
    return retract_qr(W - eta * (G - W @ (W.T @ G)))


def train_nets(x, x_pos, x_neg, *, h: int, z: int = 1, activations=("tanh",), eta: float = 0.05, steps: int = 300,
               every: int = 10, generator: torch.Generator) -> dict:
    r"""Train the linear network and one nonlinear network per activation from one Haar initialisation.

    Each step is the paper's projected update :math:`W\leftarrow\mathrm{qf}(W - \eta(\mathbb I - WW^\top)\nabla_W\mathcal L)`
    for both layers (Eq. 11 with the sign corrected; QR retraction) on loss (1)/n. Returns
    ``{name: (outputs [len(record), n, z], losses [len(record)])}`` for ``"linear"`` and each activation, and
    ``"record"``: the recorded steps (every ``every`` steps and the last).
    """
    x, x_pos, x_neg = as_array("x", x, 2), as_array("x_pos", x_pos, 2), as_array("x_neg", x_neg, 2)
    if not x.shape == x_pos.shape == x_neg.shape:
        raise ValueError(f"the views must share one shape [n, d]; got {x.shape}, {x_pos.shape}, {x_neg.shape}.")
    d = x.shape[1]
    h = check_int("h", h, d)
    z = check_int("z", z, 1, h)
    activations = (activations,) if isinstance(activations, str) else tuple(activations)
    for a in activations:
        check_choice("activation", a, ACTIVATIONS)
    eta, steps, every = check_positive("eta", eta), check_int("steps", steps, 0), check_int("every", every, 1)
    W1 = haar_semi_orthogonal(h, d, generator=generator)
    W2 = haar_semi_orthogonal(h, z, generator=generator)
    nets = {name: (W1.copy(), W2.copy()) for name in ("linear", *activations)}
    out = {name: ([], []) for name in nets}
    record = [k for k in range(steps + 1) if k % every == 0 or k == steps]
    for k in range(steps + 1):
        for name, (V1, V2) in nets.items():
            loss, G1, G2 = contrastive_gradients(V1, V2, x, x_pos, x_neg, name)
            if k in record:
                feats = x @ V1.T if name == "linear" else phi(name, x @ V1.T)
                out[name][0].append(feats @ V2)
                out[name][1].append(loss)
            if k < steps:
                nets[name] = (_orth_step(V1, G1, eta), _orth_step(V2, G2, eta))
    result = {name: (np.array(u), np.array(ls)) for name, (u, ls) in out.items()}
    result["record"] = np.array(record)
    return result


def train_pair(x, x_pos, x_neg, *, h: int, z: int = 1, activation: str = "tanh", eta: float = 0.05, steps: int = 300,
               every: int = 10, generator: torch.Generator) -> TrainPair:
    r"""Train :math:`u^{\mathbb I}` and :math:`u^\phi` from the same Haar initialisation (see :func:`train_nets`)."""
    r = train_nets(x, x_pos, x_neg, h=h, z=z, activations=(activation,), eta=eta, steps=steps, every=every, generator=generator)
    return TrainPair(r["linear"][0], r[activation][0], r["record"], r["linear"][1], r[activation][1])


def gap(u_nonlinear: np.ndarray, u_linear: np.ndarray) -> np.ndarray:
    r"""Mean over anchors of :math:`\|u^\phi_t(x_i) - u^{\mathbb I}_t(x_i)\|`, for outputs ``[..., n, z]``."""
    return np.linalg.norm(u_nonlinear - u_linear, axis=-1).mean(axis=-1)
