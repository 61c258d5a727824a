r"""Wide two-layer networks: the tangent kernel, and nonlinear versus linear under orthogonality (Esser et al. 2023).

The nonlinear network :math:`u^\phi(x) = W_2^\top\phi(W_1x)` and the linear one :math:`u^{\mathbb I}(x) = W_2^\top W_1x`
share Haar semi-orthogonal weights :math:`W_1^\top W_1 = \mathbb I_d`, :math:`W_2^\top W_2 = \mathbb I_z`. Their
difference is :math:`u^\phi - u^{\mathbb I} = W_2^\top\epsilon` with :math:`\epsilon = \phi(W_1x) - W_1x`.

* :func:`phi`, :func:`dphi`: the activations of Part III and their derivatives (:data:`ACTIVATIONS`);
* :func:`tangent_kernel`: the ``[z, z]`` tangent kernel of Lemma 1 for :math:`u = sW_2^\top\phi(W_1x)`;
* :func:`lemma2_ratio`: :math:`\sqrt h\max_{ij}|Q_{ij}|/\log h` for Haar :math:`Q` (Lemma 2 says it stays bounded);
* :func:`init_gaps`: every quantity in the proof of Theorem 1 at initialisation, batched over draws;
* :func:`train_nets`: the paper's projected gradient descent on the contrastive loss (1) for the linear network
  and nonlinear ones from the same initialisation (Conjecture 1, Fig. 2), with the gradients in closed form
  (:func:`contrastive_gradients`) and the step of :func:`clbook.dynamics.stiefel.projected_step`.

Activations: ``tanh`` and ``softplus2`` :math:`= 2(\mathrm{softplus}(y) - \log 2)` satisfy :math:`\phi(0) = 0`,
:math:`\phi'(0) = 1`, :math:`|\phi''|\le c`; ``relu`` has only :math:`\phi(0) = 0`; ``sigmoid`` has
:math:`\phi(0) = 1/2`; ``linear`` is the identity. Everything computes in torch on the device and dtype of
:func:`clbook.setup`; draws use :func:`clbook.linalg.haar_orthonormal` with an explicit generator. Used in
Chapters 11 (Lemma 1) and 12, and by :mod:`clbook.experiments.wide`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .. import activations
from .._validate import check_choice, check_int, check_positive, check_same
from ..linalg import haar_orthonormal, single_thread
from .ssl import setup_tensor, view_tensors
from .stiefel import projected_step_unchecked

__all__ = ["ACTIVATIONS", "CURVATURE", "phi", "dphi", "tangent_kernel", "lemma2_ratio", "InitGap", "init_gaps", "init_gap",
           "contrastive_gradients", "train_nets", "TrainPair", "train_pair", "gap"]

ACTIVATIONS = activations.supported("linear", "tanh", "softplus2", "relu", "sigmoid")
CURVATURE = {name: activations.REGISTRY[name].curvature for name in ACTIVATIONS}
r"""The constant :math:`c = \sup|\phi''|` of Theorem 1 (``relu``: not twice differentiable; ``sigmoid``: finite, but
:math:`\phi(0)\neq0` and :math:`\phi'(0) = 1/4`, so the theorem does not apply)."""


def _activation(name: str) -> str:
    return check_choice("activation", name, ACTIVATIONS)


def _phi(name: str, a: torch.Tensor) -> torch.Tensor:
    return activations.apply_unchecked(a, name)


def _dphi(name: str, a: torch.Tensor) -> torch.Tensor:
    return activations.derivative_unchecked(a, name)


def phi(name: str, a) -> torch.Tensor:
    r"""The activation :math:`\phi` (``name`` in :data:`ACTIVATIONS`) applied entrywise to a finite tensor ``a``."""
    return _phi(_activation(name), setup_tensor("a", a))


def dphi(name: str, a) -> torch.Tensor:
    r"""The derivative :math:`\phi'` entrywise (``relu``: the indicator of :math:`a > 0`, the convention at 0)."""
    return _dphi(_activation(name), setup_tensor("a", a))


def tangent_kernel(W1, W2, x, x2, *, activation: str = "tanh", ntk_scale: bool = True) -> torch.Tensor:
    r"""Lemma 1: the ``[z, z]`` matrix :math:`K_{lj} = \langle\nabla_\Theta u_l(x), \nabla_\Theta u_j(x')\rangle`.

    For :math:`u(x) = s\,W_2^\top\phi(W_1x)` with :math:`s = h^{-1/2}` (``ntk_scale``) or 1,

    .. math::

        K_{lj} = s^2\Big[\delta_{lj}\,\phi(W_1x)^\top\phi(W_1x')
               + x^\top x'\sum_{k=1}^h (W_2)_{kl}(W_2)_{kj}\,\phi'(w_k^\top x)\,\phi'(w_k^\top x')\Big].

    The first term comes from :math:`W_2`, the second from :math:`W_1`. ``W1 [h, d]``, ``W2 [h, z]``, ``x`` and
    ``x2`` ``[d]``, all finite.
    """
    W1, W2 = setup_tensor("W1", W1, 2), setup_tensor("W2", W2, 2)
    x, x2 = setup_tensor("x", x, 1), setup_tensor("x2", x2, 1)
    name = _activation(activation)
    if W1.shape[0] != W2.shape[0] or x.shape != x2.shape or x.shape[0] != W1.shape[1] or min(*W1.shape, W2.shape[1]) < 1:
        raise ValueError(f"need W1 [h, d], W2 [h, z], x and x2 [d] (all sizes >= 1); got {tuple(W1.shape)}, {tuple(W2.shape)}, "
                         f"{tuple(x.shape)}, {tuple(x2.shape)}.")
    a, a2 = W1 @ x, W1 @ x2
    s2 = 1.0 / W1.shape[0] if ntk_scale else 1.0
    second = (_phi(name, a) @ _phi(name, a2)) * torch.eye(W2.shape[1], dtype=W2.dtype, device=W2.device)
    first = (x @ x2) * (W2 * (_dphi(name, a) * _dphi(name, a2))[:, None]).T @ W2
    return s2 * (second + first)


def lemma2_ratio(h: int, d: int, *, reps: int = 20, generator: torch.Generator) -> torch.Tensor:
    r"""Lemma 2: :math:`\sqrt h\,\max_{ij}|Q_{ij}|/\log h` for ``reps`` Haar ``[h, d]`` matrices :math:`Q` (``[reps]``).

    Lemma 2 states :math:`P(\max_{ij}|Q_{ij}|\ge L\log h/\sqrt h)\to0`, so this ratio is bounded with high
    probability. The true scale of :math:`\max|Q_{ij}|` is :math:`\sqrt{2\log(hd)/h}`. Needs ``1 <= d <= h``,
    ``h >= 2``, ``reps >= 1``.
    """
    h, d, reps = check_int("h", h, 2), check_int("d", d, 1), check_int("reps", reps, 1)
    if d > h:
        raise ValueError(f"Lemma 2 needs d <= h; got d = {d}, h = {h}.")
    Q = haar_orthonormal(h, d, generator=generator, batch=(reps,))
    return math.sqrt(h) * Q.abs().amax(dim=(-2, -1)) / math.log(h)


@dataclass(frozen=True)
class InitGap:
    r"""The quantities of Theorem 1's proof for ``reps`` draws (each a tensor of length ``reps``).

    Attributes
    ----------
    gap : :math:`\|u^\phi(x) - u^{\mathbb I}(x)\| = \|W_2^\top\epsilon\|`.
    eps : :math:`\|\epsilon\| = \|\phi(W_1x) - W_1x\|`.
    taylor : :math:`\tfrac c2\big(\sum_i(w_i^\top x)^4\big)^{1/2}` (Taylor step, Eq. 13); ``None`` where
        :math:`c = \sup|\phi''|` is infinite (``relu``), for which the theorem says nothing.
    bound : the proof's bound :math:`K c\|x\|^2 d\log^2h/\sqrt h` with :math:`K = C/2` and the constant
        :math:`C = \max_{ij}h(W_1)_{ij}^2/\log^2h` of Lemma 2 measured on the same draw (so ``taylor <= bound``
        holds by construction on every draw: an illustration of the proof, not evidence); ``None`` where :math:`c`
        is infinite.
    lemma2 : :math:`\sqrt h\max_{ij}|(W_1)_{ij}|/\log h`.
    """

    gap: torch.Tensor
    eps: torch.Tensor
    taylor: torch.Tensor | None
    bound: torch.Tensor | None
    lemma2: torch.Tensor


def _activations(activations, *, nonlinear: bool = False) -> tuple[str, ...]:
    activations = (activations,) if isinstance(activations, str) else tuple(activations)
    if not activations:
        raise ValueError("activations must name at least one activation.")
    for a in activations:
        check_choice("activation", a, ACTIVATIONS[1:] if nonlinear else ACTIVATIONS)
    if len(set(activations)) != len(activations):
        raise ValueError(f"activations must not repeat a name; got {activations}.")
    return activations


def init_gaps(h: int, x, *, z: int = 3, activations=ACTIVATIONS[1:], reps: int = 20, generator: torch.Generator) -> dict:
    r"""Theorem 1 at initialisation for several activations on the same draws: ``{activation: InitGap}``.

    Draws ``reps`` pairs :math:`(W_1, W_2)` (Haar, orthonormal columns; all :math:`W_1`, then all :math:`W_2`, with
    ``generator``) and compares :math:`u^\phi(x)` with :math:`u^{\mathbb I}(x)` for every activation. See
    :class:`InitGap` for the quantities.

    Parameters
    ----------
    h : int
        Hidden width, ``h >= max(d, z, 2)``.
    x : tensor or array, shape=[d]
        The input (finite, ``d >= 1``).
    z : int
        Output dimension, ``1 <= z <= h``.
    activations : sequence of str
        Names in :data:`ACTIVATIONS`.
    reps : int
        Independent draws of :math:`(W_1, W_2)`, ``>= 1``.
    """
    x = setup_tensor("x", x, 1)
    d = x.shape[0]
    if d < 1:
        raise ValueError("x must have at least one entry.")
    h, z, reps = check_int("h", h, max(d, 2)), check_int("z", z, 1), check_int("reps", reps, 1)
    if z > h:
        raise ValueError(f"z must be <= h = {h}; got z = {z}.")
    activations = _activations(activations)
    W1 = haar_orthonormal(h, d, generator=generator, batch=(reps,), device=x.device, dtype=x.dtype)
    W2 = haar_orthonormal(h, z, generator=generator, batch=(reps,), device=x.device, dtype=x.dtype)
    a = W1 @ x  # [reps, h]
    logh2 = math.log(h) ** 2
    big_c = h * (W1**2).amax(dim=(-2, -1)) / logh2
    out = {}
    for name in activations:
        c = CURVATURE[name]
        eps = _phi(name, a) - a
        finite_c = math.isfinite(c)
        out[name] = InitGap(gap=torch.linalg.vector_norm((W2.transpose(-1, -2) @ eps[..., None])[..., 0], dim=-1),
                            eps=torch.linalg.vector_norm(eps, dim=-1),
                            taylor=c / 2 * (a**4).sum(-1).sqrt() if finite_c else None,
                            bound=(big_c / 2) * c * (x @ x) * d * logh2 / math.sqrt(h) if finite_c else None,
                            lemma2=big_c.sqrt())
    return out


def init_gap(h: int, x, *, z: int = 3, activation: str = "tanh", reps: int = 20, generator: torch.Generator) -> InitGap:
    r"""Theorem 1 at initialisation for one activation (see :func:`init_gaps`)."""
    return init_gaps(h, x, z=z, activations=(activation,), reps=reps, generator=generator)[activation]


def contrastive_gradients(W1, W2, x, x_pos, x_neg, activation: str) -> tuple[float, torch.Tensor, torch.Tensor]:
    r"""Loss (1)/n and its Euclidean gradients for :math:`u(x) = W_2^\top\phi(W_1x)`.

    With :math:`F = \phi(XW_1^\top)` (rows :math:`\phi(W_1x_i)^\top`), :math:`U = FW_2`, and likewise for the views,

    .. math::

        \mathcal L = \tfrac1n\operatorname{Tr}\big(U^\top(U^- - U^+)\big),\quad
        \nabla_{W_2}\mathcal L = \tfrac1n\big[F^\top(U^- - U^+) + (F^- - F^+)^\top U\big],

        \nabla_{W_1}\mathcal L = \tfrac1n\big[(\phi'(A)\odot(U^- - U^+)W_2^\top)^\top X
            + (\phi'(A^-)\odot UW_2^\top)^\top X^- - (\phi'(A^+)\odot UW_2^\top)^\top X^+\big].

    ``W1 [h, d]``, ``W2 [h, z]``, the views ``[n, d]`` (``n >= 1``); ``activation="linear"`` gives the linear
    network. Returns ``(loss, G1, G2)``.
    """
    W1, W2 = setup_tensor("W1", W1, 2), setup_tensor("W2", W2, 2)
    x, x_pos, x_neg = view_tensors(2, x=x, x_pos=x_pos, x_neg=x_neg)
    if W1.shape[0] != W2.shape[0] or W1.shape[1] != x.shape[1] or min(W2.shape) < 1:
        raise ValueError(f"need W1 [h, d], W2 [h, z] and views [n, d] with d = {x.shape[1]}; got {tuple(W1.shape)} and "
                         f"{tuple(W2.shape)}.")
    loss, G1, G2 = _contrastive_gradients(W1, W2, x, x_pos, x_neg, _activation(activation))
    return float(loss), G1, G2


def _contrastive_gradients(W1, W2, x, x_pos, x_neg, name):
    A, Ap, An = x @ W1.T, x_pos @ W1.T, x_neg @ W1.T
    F_, Fp, Fn = _phi(name, A), _phi(name, Ap), _phi(name, An)
    U, Up, Un = F_ @ W2, Fp @ W2, Fn @ W2
    n = x.shape[0]
    loss = (U * (Un - Up)).sum() / n
    G2 = (F_.T @ (Un - Up) + (Fn - Fp).T @ U) / n
    UW = U @ W2.T
    G1 = ((_dphi(name, A) * ((Un - Up) @ W2.T)).T @ x + (_dphi(name, An) * UW).T @ x_neg
          - (_dphi(name, Ap) * UW).T @ x_pos) / n
    return loss, G1, G2


def train_nets(x, x_pos, x_neg, *, h: int, z: int = 1, activations=("tanh",), eta: float = 0.05, steps: int = 300,
               every: int = 10, generator: torch.Generator) -> dict:
    r"""Train the linear network and one nonlinear network per activation from one Haar initialisation.

    Each step is the paper's projected update :math:`W\leftarrow\mathrm{qf}(W - \eta(\mathbb I - WW^\top)\nabla_W\mathcal L)`
    for both layers (Eq. 11 with the sign corrected; QR retraction; :func:`clbook.dynamics.stiefel.projected_step`)
    on loss (1)/n. Domain: views ``[n, d]`` (``n >= 1``, finite), ``h >= max(d, z)``, ``z >= 1``, non-linear
    ``activations`` from :data:`ACTIVATIONS` (the linear network is always trained), ``eta > 0``, ``steps >= 0``,
    ``every >= 1``. Returns ``{name: (outputs [len(record), n, z], losses [len(record)])}`` for ``"linear"`` and each
    activation, and ``"record"``: the recorded steps (every ``every`` steps and the last).
    """
    x, x_pos, x_neg = view_tensors(2, x=x, x_pos=x_pos, x_neg=x_neg)
    d = x.shape[1]
    z = check_int("z", z, 1)
    h = check_int("h", h, max(d, z))
    activations = _activations(activations, nonlinear=True)
    eta, steps, every = check_positive("eta", eta), check_int("steps", steps, 0), check_int("every", every, 1)
    W1 = haar_orthonormal(h, d, generator=generator, device=x.device, dtype=x.dtype)
    W2 = haar_orthonormal(h, z, generator=generator, device=x.device, dtype=x.dtype)
    nets = {name: (W1, W2) for name in ("linear", *activations)}
    out = {name: ([], []) for name in nets}
    record = [k for k in range(steps + 1) if k % every == 0 or k == steps]
    with single_thread():  # thin matrices: one thread is faster, and immune to a busy machine
        for k in range(steps + 1):
            for name, (V1, V2) in nets.items():
                loss, G1, G2 = _contrastive_gradients(V1, V2, x, x_pos, x_neg, name)
                if k in record:
                    out[name][0].append(_phi(name, x @ V1.T) @ V2)
                    out[name][1].append(loss)
                if k < steps:
                    nets[name] = (projected_step_unchecked(V1, G1, eta), projected_step_unchecked(V2, G2, eta))
    result = {name: (torch.stack(u), torch.stack(ls)) for name, (u, ls) in out.items()}
    result["record"] = torch.tensor(record)
    return result


@dataclass(frozen=True)
class TrainPair:
    r"""Outputs of the linear and the nonlinear network along training (Conjecture 1).

    Attributes
    ----------
    u_linear, u_nonlinear : torch.Tensor
        ``[len(record), n, z]`` outputs on the anchors at the recorded steps.
    record : torch.Tensor
        The recorded steps (0 = initialisation).
    losses_linear, losses_nonlinear : torch.Tensor
        Loss (1)/n at the recorded steps.
    """

    u_linear: torch.Tensor
    u_nonlinear: torch.Tensor
    record: torch.Tensor
    losses_linear: torch.Tensor
    losses_nonlinear: torch.Tensor

    @property
    def gap(self) -> torch.Tensor:
        r"""Mean over anchors of :math:`\|u^\phi_t(x_i) - u^{\mathbb I}_t(x_i)\|` at each recorded step."""
        return gap(self.u_nonlinear, self.u_linear)


def train_pair(x, x_pos, x_neg, *, h: int, z: int = 1, activation: str = "tanh", eta: float = 0.05, steps: int = 300,
               every: int = 10, generator: torch.Generator) -> TrainPair:
    r"""Train :math:`u^{\mathbb I}` and :math:`u^\phi` from the same Haar initialisation (see :func:`train_nets`)."""
    r = train_nets(x, x_pos, x_neg, h=h, z=z, activations=(activation,), eta=eta, steps=steps, every=every, generator=generator)
    return TrainPair(r["linear"][0], r[activation][0], r["record"], r["linear"][1], r[activation][1])


def gap(u_nonlinear, u_linear) -> torch.Tensor:
    r"""Mean over anchors of :math:`\|u^\phi_t(x_i) - u^{\mathbb I}_t(x_i)\|` for outputs ``[..., n, z]`` of one shape."""
    u_nonlinear, u_linear = setup_tensor("u_nonlinear", u_nonlinear), setup_tensor("u_linear", u_linear)
    check_same(("u_nonlinear", "u_linear"), u_nonlinear, u_linear, shape=True)
    if u_linear.ndim < 2 or min(u_linear.shape[-2:]) < 1:
        raise ValueError(f"u_nonlinear and u_linear must have shape [..., n, z] with n, z >= 1; got {tuple(u_linear.shape)}.")
    return torch.linalg.vector_norm(u_nonlinear - u_linear, dim=-1).mean(dim=-1)

