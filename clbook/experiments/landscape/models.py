r"""The encoders of Pokle et al.'s experiments: the architectures (:data:`MODELS`), their parameters and forward pass.

A network's parameters are a dict of stacked tensors, one slice per run: first-layer weights ``W0`` ``[R, m, p]``
and SReLU thresholds (or biases) ``b0`` ``[R, m]``, a second layer ``W1``, ``b1`` for two-layer models, BatchNorm's
scale ``g<k>`` and shift ``c<k>`` where the model has BatchNorm; a head (predictor or projector) is ``Wh``, ``bh``.
:func:`encode` is the forward pass through autograd; :class:`SharedEncoder` is the same function for the two views of
a one-layer shared encoder followed by the row normalisation, with a hand-written backward pass (the contrastive
models' hot path). The theory's one-layer networks of Chapters 14-16 are :mod:`clbook.dynamics.landscape` (a unit
test compares the two where they overlap). Used in Chapter 17 through :mod:`clbook.experiments.landscape`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..._validate import check_choice, check_in_range, check_int, check_positive, check_tensor
from ...config import rand, randint, randn

__all__ = ["Model", "MODELS", "BIAS_INITS", "batchnorm", "SharedEncoder", "encode", "apply_head", "exact_latents", "init_network",
           "init_head"]

BIAS_INITS = ("zero", "uniform")


@dataclass(frozen=True)
class Model:
    r"""One architecture of the paper's experiments.

    ``loss``: ``"ncl"`` (two networks, alternating), ``"ntxent"`` (one shared network, NT-Xent) or ``"simsiam"``
    (one shared network, symmetrised negative cosine with stop-gradient); ``bn``: BatchNorm after each linear
    layer; ``srelu``: SReLU (else the layer is linear); ``layers``: 1 or 2; ``head``: ``"none"``,
    ``"predictor"`` (linear :math:`m\times m`, on the branch being updated) or ``"projector"`` (linear
    :math:`m\times m` before NT-Xent).
    """

    loss: str
    bn: bool
    srelu: bool
    layers: int = 1
    head: str = "none"

    def __post_init__(self):
        check_choice("loss", self.loss, ("ncl", "ntxent", "simsiam"))
        check_choice("layers", self.layers, (1, 2))
        check_choice("head", self.head, ("none", "predictor", "projector"))


MODELS = {
    "NCL-linear": Model("ncl", bn=False, srelu=False),
    "CL-linear": Model("ntxent", bn=False, srelu=False),
    "NCL-basic": Model("ncl", bn=True, srelu=True),
    "NCL-basic-2L": Model("ncl", bn=True, srelu=True, layers=2),
    "CL-basic": Model("ntxent", bn=True, srelu=True),
    "NCL-basic-code": Model("ncl", bn=False, srelu=True),  # the code's `simplified` model (ignores --use_bn)
    "NCL-pred": Model("ncl", bn=True, srelu=True, head="predictor"),  # Sec. 5.2.2, Figs 5-6
    "SimCLR": Model("ntxent", bn=True, srelu=True, head="projector"),  # Table 1, Simplified-SimCLR
    "SimSiam": Model("simsiam", bn=True, srelu=True, head="predictor"),  # Table 1, Simplified-SimSiam
}


# ----------------------------------------------------------------------------------------------- forward pass


def batchnorm(u: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, *, eps: float = 1e-5) -> torch.Tensor:
    r"""BatchNorm in training mode over the batch axis ``-2``: :math:`\gamma(u-\bar u)/\sqrt{\mathrm{var}(u)+\epsilon}+\beta`.

    ``u`` ``[..., n, m]``; ``gamma``, ``beta`` ``[..., m]`` (broadcast against the leading axes of ``u``); biased
    variance, as ``torch.nn.BatchNorm1d``. The variance is the mean of the squared centred values (two passes):
    ``torch.var`` over a non-innermost axis is about 40 times slower on the CPU.
    """
    u, gamma, beta = check_tensor("u", u), check_tensor("gamma", gamma), check_tensor("beta", beta)
    if u.ndim < 2 or u.shape[-2] < 2:
        raise ValueError(f"u must be [..., n, m] with n >= 2 samples (as torch.nn.BatchNorm1d in training mode); got {list(u.shape)}.")
    for name, t in (("gamma", gamma), ("beta", beta)):
        if t.ndim < 1 or t.shape[-1] != u.shape[-1] or t.dtype != u.dtype:
            raise ValueError(f"{name} must be [..., m] with m = {u.shape[-1]} and dtype {u.dtype}; got {list(t.shape)}, {t.dtype}.")
    return _batchnorm(u, gamma, beta, eps=check_positive("eps", eps))


def _batchnorm(u, gamma, beta, *, eps=1e-5):
    c = u - u.mean(-2, keepdim=True)
    var = (c * c).mean(-2, keepdim=True)
    return c / torch.sqrt(var + eps) * gamma.unsqueeze(-2) + beta.unsqueeze(-2)


def _per_run(t: torch.Tensor, ndim: int) -> torch.Tensor:
    """A parameter ``[R, k]`` reshaped to broadcast against activations ``[R, ..., k]`` with ``ndim`` axes."""
    return t.reshape(t.shape[0], *([1] * (ndim - 2)), t.shape[-1])


def _linear(a, W):
    """``a @ Wᵀ`` run by run: ``a`` ``[R, B, k]`` or the two views of a shared encoder ``[R, 2, B, k]``, ``W`` ``[R, m, k]``.

    Both views go through one batched product of ``[R, 2B, k]``, the same for every ``R`` (a broadcast ``matmul``
    takes a different kernel for ``R = 1``, which would break stacked = single bit for bit).
    """
    if a.ndim == 3:
        return a @ W.transpose(-1, -2)
    R, V, B, k = a.shape
    return (a.reshape(R, V * B, k) @ W.transpose(-1, -2)).reshape(R, V, B, W.shape[-2])


def _layer(P, k, a, model):
    u = _linear(a, P[f"W{k}"])
    if model.bn:
        u = _batchnorm(u, _per_run(P[f"g{k}"], u.ndim - 1), _per_run(P[f"c{k}"], u.ndim - 1))
    b = _per_run(P[f"b{k}"], u.ndim)
    if model.srelu:
        return torch.relu(u - b) - torch.relu(-u - b)
    return u + b


def _check_network(P, a, model: Model) -> None:
    """Cheap checks of :func:`encode`'s arguments (keys and shapes only: it runs at every training step)."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a Model (a value of MODELS); got {type(model).__name__}.")
    keys = [f"{w}{k}" for k in range(model.layers) for w in ("W", "b")] + [f"{w}{k}" for k in range(model.layers) for w in ("g", "c")
                                                                             if model.bn]
    if not isinstance(P, dict) or any(k not in P for k in keys):
        raise ValueError(f"P must be a dict of the network's parameters with the keys {keys} (see init_network).")
    W = P["W0"]
    if not isinstance(a, torch.Tensor) or a.ndim not in (3, 4) or W.ndim != 3 or a.shape[0] != W.shape[0] or a.shape[-1] != W.shape[-1]:
        raise ValueError(f"a must be [R, B, p] or [R, 2, B, p] with R, p those of P['W0'] {list(W.shape)}; "
                         f"got {list(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__}.")


def encode(P: dict, a: torch.Tensor, model: Model) -> torch.Tensor:
    r"""The representations ``[R, ..., m]`` of one network with parameters ``P`` (see the module) on inputs ``a``.

    ``a`` is ``[R, B, p]`` (one view) or ``[R, 2, B, p]`` (the two views of a shared encoder, BatchNorm over each
    view's batch); ``model`` one of :data:`MODELS`. Each layer: :math:`u = aW^\top`, BatchNorm if ``model.bn``, then
    SReLU :math:`\mathrm{relu}(u - b) - \mathrm{relu}(-u - b)` (Eq. 14, any sign of :math:`b`: a negative threshold
    gives :math:`2u` on :math:`(b, -b)`) or :math:`u + b`. Not normalised. Differentiable through autograd. Only the
    keys and shapes are checked (it runs at every training step; :func:`train` checks everything once).
    """
    _check_network(P, a, model)
    return _encode(P, a, model)


def _encode(P, a, model):
    h = _layer(P, 0, a, model)
    return _layer(P, 1, h, model) if model.layers == 2 else h


def apply_head(H: dict, h: torch.Tensor) -> torch.Tensor:
    """A linear head (predictor or projector) with parameters ``H = {"Wh": [R, m, m], "bh": [R, m]}`` on ``h`` ``[R, ..., m]``."""
    if not isinstance(H, dict) or "Wh" not in H or "bh" not in H:
        raise ValueError("H must be a dict {'Wh': [R, m, m], 'bh': [R, m]} (see init_head).")
    if not isinstance(h, torch.Tensor) or h.ndim not in (3, 4) or h.shape[0] != H["Wh"].shape[0] or h.shape[-1] != H["Wh"].shape[-1]:
        raise ValueError(f"h must be [R, B, m] or [R, 2, B, m] with R, m those of H['Wh'] {list(H['Wh'].shape)}.")
    return _linear(h, H["Wh"]) + _per_run(H["bh"], h.ndim)


class SharedEncoder(torch.autograd.Function):
    r"""The unit representations of the two views through one one-layer encoder, with a hand-written backward pass.

    ``SharedEncoder.apply(a, W, b, gamma, beta, srelu)``: ``a`` ``[R, 2, B, p]``, ``W`` ``[R, m, p]``, ``b`` ``[R, m]``,
    ``gamma``/``beta`` ``[R, m]`` or None, ``srelu`` a bool. Forward: :math:`u = aW^\top`; BatchNorm over each view's
    batch (when ``gamma`` is given); SReLU :math:`h = \mathrm{relu}(y - b) - \mathrm{relu}(-y - b)` (or
    :math:`h = y + b`); :math:`Z = h/\max(\|h\|, 10^{-12})`. The same function as :func:`encode` followed by the
    normalisation (tested against autograd), in fewer passes over the activations: the contrastive models spend most of
    the time outside NT-Xent here. No argument checks (the training step's hot path).
    """

    @staticmethod
    def forward(ctx, a, W, b, gamma, beta, srelu):
        """The two views' unit representations ``[R, V, B, m]`` from inputs ``a`` ``[R, V, B, p]`` (see the class)."""
        R, V, B, p = a.shape
        u = torch.bmm(a.reshape(R, V * B, p), W.transpose(-1, -2)).reshape(R, V, B, W.shape[-2])
        bn = gamma is not None
        if bn:
            c = u.sub_(u.mean(-2, keepdim=True))
            s = (c * c).mean(-2, keepdim=True).add_(1e-5).rsqrt_()
            xhat = c.mul_(s)
            y = torch.addcmul(beta[:, None, None, :], xhat, gamma[:, None, None, :])
        else:
            xhat = s = None
            y = u
        bb = b[:, None, None, :]
        if srelu:
            pos, neg = (y > bb).to(y.dtype), (y < -bb).to(y.dtype)  # both are 1 where b < 0 and |y| < -b: h = 2y there
            h = y * (pos + neg) - bb * (pos - neg)
        else:
            pos = neg = None
            h = y + bb
        r = h.norm(dim=-1, keepdim=True)
        rc = r.clamp_min(1e-12)
        Z = h.div_(rc)
        ctx.save_for_backward(a, Z, rc, xhat, s, gamma, pos, neg)
        ctx.srelu, ctx.bn, ctx.active = srelu, bn, bool((r > 1e-12).all())
        return Z

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gZ):
        """The hand-written gradients of the inputs and parameters, given the gradient ``gZ`` of the outputs."""
        a, Z, rc, xhat, s, gamma, pos, neg = ctx.saved_tensors
        R, V, B, p = a.shape
        dot = (Z * gZ).sum(-1, keepdim=True)
        if not ctx.active:
            dot = dot * (rc > 1e-12)
        gh = (gZ - Z * dot).div_(rc)
        if ctx.srelu:
            gb = (gh * (neg - pos)).sum((1, 2))
            gy = gh.mul_(pos + neg)
        else:
            gb = gh.sum((1, 2))
            gy = gh
        if ctx.bn:
            gbeta = gy.sum((1, 2))
            ggamma = (gy * xhat).sum((1, 2))
            gx = gy * gamma[:, None, None, :]
            gu = (gx - gx.mean(-2, keepdim=True) - xhat * (gx * xhat).mean(-2, keepdim=True)).mul_(s)
        else:
            gbeta = ggamma = None
            gu = gy
        gW = torch.bmm(gu.reshape(R, V * B, -1).transpose(-1, -2), a.reshape(R, V * B, p))
        return None, gW, gb, ggamma, gbeta, None


# ----------------------------------------------------------------------------------------------- data and parameters


def exact_latents(n: int, d: int, *, sparsity: float, generator: torch.Generator) -> torch.Tensor:
    r"""The authors' exactly-k-sparse latents (``data_model/gen_sparse_coding_data.py::gen_z``), ``[n, d]``.

    Every sample has :math:`s_1 = \lceil d\beta/2\rceil` entries :math:`-1` and
    :math:`s_2 - s_1 = \max(\lceil d\beta\rceil, s_1 + 1) - s_1` entries :math:`+1` at uniformly random positions.
    For :math:`d = 10`: :math:`\beta = 0.1` and :math:`0.2` both give one :math:`-1` and one :math:`+1`,
    :math:`\beta = 0.3` gives two :math:`-1` and one :math:`+1`.
    """
    n, d = check_int("n", n, 1), check_int("d", d, 1)
    beta = check_in_range("sparsity", sparsity, 0.0, 1.0)
    s1 = math.ceil(d * beta / 2)
    s2 = max(math.ceil(d * beta), s1 + 1)
    if s2 > d:
        raise ValueError(f"sparsity = {beta} asks for {s2} non-zero entries of d = {d}.")
    base = torch.zeros(d, dtype=torch.float64)
    base[:s1] = -1.0
    base[s1:s2] = 1.0
    order = rand(n, d, generator=generator, dtype=torch.float64).argsort(dim=-1)
    return base.to(order.device)[order]


def _bias(gen, size, fan_in, how):
    if how == "zero":
        return torch.zeros(size, dtype=torch.float64)
    bound = 1.0 / math.sqrt(fan_in)
    return (2 * rand(size, generator=gen, dtype=torch.float64) - 1) * bound


def _check_init(generator, model, p, d, m, bias_init):
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator; got {type(generator).__name__}.")
    if not isinstance(model, Model):
        raise TypeError(f"model must be a Model (a value of MODELS); got {type(model).__name__}.")
    check_int("p", p, 1), check_int("d", d, 1), check_int("m", m, 1)
    check_choice("bias_init", bias_init, BIAS_INITS)


def init_network(generator: torch.Generator, model: Model, *, p: int, d: int, m: int, M: torch.Tensor | None = None,
                 warm: float | None = None, aligned_idx: torch.Tensor | None = None,
                 bias_init: str = "zero") -> tuple[dict, torch.Tensor | None]:
    r"""One network's parameters (float64, unstacked) drawn from ``generator``; returns ``(P, atoms)``.

    First-layer weights :math:`\mathcal N(0, 1/(pd))` (``warm=None``) or a warm start: row :math:`i` is atom
    ``M[:, atoms[i]]`` plus :math:`\mathcal N(0, \text{warm}^2)` noise, the atoms drawn uniformly (or ``aligned_idx``,
    the other branch's, for aligned starts); ``atoms`` is None for a random start. Biases and thresholds by
    ``bias_init`` (:data:`BIAS_INITS`: zero, or PyTorch's :math:`U(\pm1/\sqrt{\text{fan-in}})`); BatchNorm scale 1
    and shift 0. The draws, in this order: ``W0``, ``b0``, then ``W1``, ``b1`` for two layers.
    """
    _check_init(generator, model, p, d, m, bias_init)
    if warm is None:
        W0 = randn(m, p, generator=generator, dtype=torch.float64) / math.sqrt(p * d)
        idx = None
    else:
        if M is None:
            raise ValueError("M (the dictionary [p, d]) is needed for a warm start (warm is not None).")
        idx = randint(0, d, (m,), generator=generator) if aligned_idx is None else aligned_idx
        W0 = M[:, idx].T + warm * randn(m, p, generator=generator, dtype=torch.float64)
    P = {"W0": W0, "b0": _bias(generator, m, p, bias_init)}
    if model.layers == 2:
        P["W1"] = randn(m, m, generator=generator, dtype=torch.float64) / math.sqrt(p * d)
        P["b1"] = _bias(generator, m, m, bias_init)
    if model.bn:
        for k in range(model.layers):
            P[f"g{k}"] = torch.ones(m, dtype=torch.float64)
            P[f"c{k}"] = torch.zeros(m, dtype=torch.float64)
    return P, idx


def init_head(generator: torch.Generator, *, p: int, d: int, m: int, bias_init: str = "zero") -> dict:
    r"""A linear head's parameters (float64): ``Wh`` :math:`\mathcal N(0, 1/(pd))` ``[m, m]``, then ``bh`` by ``bias_init``."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator; got {type(generator).__name__}.")
    p, d, m = check_int("p", p, 1), check_int("d", d, 1), check_int("m", m, 1)
    check_choice("bias_init", bias_init, BIAS_INITS)
    return {"Wh": randn(m, m, generator=generator, dtype=torch.float64) / math.sqrt(p * d), "bh": _bias(generator, m, m, bias_init)}
