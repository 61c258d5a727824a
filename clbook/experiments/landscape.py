r"""The experiments of Pokle, Tian, Li and Risteski (2022): Tables 1, 2 and 4, the claims of Figs 4-7, and ablations.

Every model of the paper's experiments is a one- or two-layer encoder trained on the sparse-coding data of
Chapter 14 (:mod:`clbook.data.sparse_coding`) and scored by the minimum / median / maximum max-cosine of
Eq. 11 (:mod:`clbook.metrics.maxcos`) of its (online) first-layer weights. The default settings, and where each
comes from (the paper where it is explicit and consistent; the authors' code ``ashwinipokle/contrastive_landscape``,
``main.py`` / ``main_simclr.py``, where the paper is silent or contradicts itself); every choice on which the two
disagree is an argument of :func:`train`, so the ablations can vary it:

* data (Sec. 4.2): :math:`p = 50`, :math:`d = 10`, :math:`m = 50`, ``n`` :math:`= 1000` samples (paper; the code
  uses 3000), ``latent="iid"``: :math:`z\in\{0,\pm1\}^d` i.i.d. with :math:`\Pr(z_i=\pm1) = \beta/2` conditioned on
  :math:`z\ne0` (paper; ``"exact"``: the code's exactly-k-sparse latents, ``gen_z``), ``noise`` std
  :math:`\sigma_0 = \sqrt{\log d}/d = 0.152` (code; the paper gives two other values), ``noise_draw="sample"``: one
  noise vector per sample, drawn with the data and shared by both views at every epoch (paper and code;
  ``"epoch"``: fresh at every epoch, shared by the two views; ``"view"``: fresh for each view at every epoch);
* views: ``scheme="independent"`` masks (Eq. 3) with ``keep`` probability 0.5 (paper: "masking probability 0.5";
  the code's contrastive script falls back to the ``"dependent"`` masks of Eq. 2), fresh masks at every epoch;
* encoders: weights :math:`\mathcal N(0, 1/(pd))` (paper and code), ``bias_init="zero"`` (paper; ``"uniform"``:
  PyTorch's default :math:`U(\pm1/\sqrt{\text{fan-in}})`, the code), SReLU of Eq. 14 with a trainable threshold
  (the code thresholds at :math:`-b`, and with BatchNorm its bias also shifts the pre-activation: the same family of
  functions, parameterised differently; see :data:`DEPARTURES`), BatchNorm (batch
  statistics of each view, trainable affine, eps :math:`10^{-5}`) where Table 2 says "BN" (paper; the code's
  ``simplified`` NCL model silently drops it: model ``"NCL-basic-code"``), outputs :math:`\ell_2`-normalised;
* losses: NCL :math:`2 - 2\langle\hat h^o, \mathrm{SG}(\hat h^t)\rangle`, online and target updated alternately at
  every minibatch, each epoch starting with the online network (code; the paper says "alternating"), no EMA;
  CL: NT-Xent at :math:`T = 0.05` (code) over the :math:`2B` views (:mod:`clbook.losses.ntxent`);
* optimiser: plain SGD, ``lr`` 0.025 (paper; the code's scripts pass 0.005), batch 512, 8000 epochs; the last,
  smaller batch of an epoch is kept (``drop_last=False``, PyTorch's default and the code's non-contrastive
  loader; the code's contrastive loader drops it), seeds 1-5 (code).

Runs are vectorised: every (sparsity, seed) of one model trains in one stack of weights ``[R, ...]``. A run owns
a generator seeded from ``(seed, sparsity)`` that draws its data and, at every epoch, its permutation, its masks
(and its noise if it is redrawn). With ``paired=True`` the initial weights come from a second generator of their
own, so every model trained on one ``(seed, sparsity)`` sees the same data, permutations, masks and noise (CL and
NCL compared on the same views); with ``paired=False`` (the stored results of Chapter 17 before this change) the
weights are drawn from the first generator between the data and the first epoch. Either way a run is bit for bit
the same alone or in a stack (tested). Plain SGD is elementwise, so the stacked update is each run's update.

Named experiments (:data:`EXPERIMENTS`, run through :mod:`clbook.experiments.runner`, which resumes an
interrupted run and never replaces a complete result by a partial one)::

    python -m clbook.experiments.landscape table2-independent table2-dependent table1 ablation --out DIR
    python -m clbook.experiments.landscape bench        # matmul vs contrastive step throughput (make bench)
    python -m clbook.experiments.landscape faithfulness --checkout /tmp/authors   # ours vs the authors' code

Results with provenance go to ``--out`` (default :func:`clbook.results.user_dir`); the shipped ones are in
``clbook/results/landscape/``. Used in Chapter 17. float32 for training (the metric is computed in float64).
"""
from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

from .. import results
from .._validate import check_choice, check_in_range, check_int, check_nonnegative, check_positive, check_tensor
from ..config import generator as make_generator
from ..config import rand, randint, randn
from ..data import sparse_coding as sc
from ..losses import noncontrastive as _ncl
from ..losses import ntxent as _ntx
from ..losses.noncontrastive import ncl_loss, simsiam_loss
from ..losses.ntxent import nt_xent
from ..metrics import maxcos
from . import runner

__all__ = [
    "Model", "MODELS", "TrainResult", "train", "train_job", "nt_xent", "ncl_loss", "simsiam_loss", "batchnorm", "exact_latents",
    "PAPER_TABLE1", "PAPER_TABLE2", "PAPER_TABLE4", "AUTHORS_SECONDS_PER_EPOCH", "EXPERIMENTS", "TABLE2_MODELS", "ABLATIONS",
    "ABLATION_MODELS", "PILOT", "NOISE_DRAWS", "LATENTS", "BIAS_INITS", "jobs", "run", "estimate", "collect", "step_flops", "mixed",
    "end_values", "paired_gap", "ablation_effects", "replay",
    "summarise", "trajectory_summary", "bench", "faithfulness", "load", "main", "DATA", "METRICS", "FAITHFULNESS_PAIRS",
    "ABLATION_SPARSITIES", "MORE_SEEDS", "MORE_SEEDS_MODELS",
]

DATA = results.user_dir("landscape")  # default --out of a rerun; the shipped results are read with results.load
AUTHORS_SECONDS_PER_EPOCH = {"non-contrastive": 0.32, "contrastive": 11.5}  # measured on this machine (issue 9), 3000 samples
NOISE_DRAWS = ("sample", "epoch", "view")
LATENTS = ("iid", "exact")
BIAS_INITS = ("zero", "uniform")
METRICS = ("maximum", "median", "minimum")


@dataclass(frozen=True)
class Model:
    """One architecture of the paper's experiments.

    ``loss``: ``"ncl"`` (two networks, alternating), ``"ntxent"`` (one shared network, NT-Xent) or ``"simsiam"``
    (one shared network, symmetrised negative cosine with stop-gradient); ``bn``: BatchNorm after each linear
    layer; ``srelu``: SReLU (else the layer is linear); ``layers``: 1 or 2; ``head``: ``"none"``,
    ``"predictor"`` (linear :math:`m\\times m`, on the branch being updated) or ``"projector"`` (linear
    :math:`m\\times m` before NT-Xent).
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
TABLE2_MODELS = ("CL-basic", "CL-linear", "NCL-basic", "NCL-basic-2L", "NCL-linear", "NCL-basic-code")

# Values copied from the paper: {model: {sparsity: ((max, sd), (median, sd), (min, sd))}}.
PAPER_TABLE2 = {
    "NCL-linear": {0.1: ((0.12, 0.03), (0.10, 0.01), (0.08, 0.1)), 0.2: ((0.11, 0.02), (0.09, 0.03), (0.08, 0.3)),
                   0.3: ((0.31, 0.006), (0.29, 0.007), (0.28, 0.002))},
    "CL-linear": {0.1: ((0.77, 0.01), (0.69, 0.01), (0.58, 0.01)), 0.2: ((0.78, 0.06), (0.68, 0.02), (0.59, 0.01)),
                  0.3: ((0.78, 0.04), (0.67, 0.01), (0.6, 0.03))},
    "NCL-basic": {0.1: ((0.9, 0.01), (0.83, 0.06), (0.52, 0.06)), 0.2: ((0.92, 0.01), (0.82, 0.07), (0.51, 0.03)),
                  0.3: ((0.84, 0.11), (0.58, 0.04), (0.42, 0.06))},
    "NCL-basic-2L": {0.1: ((0.94, 0.01), (0.91, 0.01), (0.66, 0.21)), 0.2: ((0.94, 0.009), (0.92, 0.002), (0.51, 0.11)),
                     0.3: ((0.83, 0.16), (0.48, 0.04), (0.36, 0.01))},
    "CL-basic": {0.1: ((0.93, 0.007), (0.91, 0.005), (0.88, 0.002)), 0.2: ((0.93, 0.002), (0.91, 0.009), (0.79, 0.14)),
                 0.3: ((0.93, 0.01), (0.86, 0.07), (0.76, 0.18))},
}
PAPER_TABLE1 = {
    "SimCLR": {0.1: ((0.94, 0.005), (0.92, 0.004), (0.83, 0.16)), 0.2: ((0.94, 0.004), (0.93, 0.003), (0.90, 0.01)),
               0.3: ((0.94, 0.006), (0.92, 0.007), (0.57, 0.019))},
    "SimSiam": {0.1: ((0.94, 0.007), (0.87, 0.08), (0.47, 0.07)), 0.2: ((0.93, 0.008), (0.82, 0.01), (0.45, 0.005)),
                0.3: ((0.678, 0.2), (0.45, 0.01), (0.37, 0.03))},
}
PAPER_TABLE4 = {  # NCL-basic, warm start: {sparsity: {sigma: (...)}}
    0.1: {0.14: ((0.84, 0.02), (0.73, 0.04), (0.58, 0.04)), 0.02: ((0.97, 0.005), (0.77, 0.01), (0.69, 0.04)),
          0.002: ((0.98, 0.003), (0.78, 0.04), (0.69, 0.02))},
    0.2: {0.14: ((0.84, 0.04), (0.73, 0.05), (0.57, 0.05)), 0.02: ((0.97, 0.006), (0.79, 0.07), (0.69, 0.03)),
          0.002: ((0.97, 0.006), (0.81, 0.08), (0.67, 0.03))},
    0.3: {0.14: ((0.82, 0.02), (0.71, 0.03), (0.58, 0.03)), 0.02: ((0.95, 0.009), (0.77, 0.06), (0.66, 0.01)),
          0.002: ((0.96, 0.02), (0.75, 0.04), (0.66, 0.02))},
}


# ----------------------------------------------------------------------------------------------- pieces


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


class _SharedEncoder(torch.autograd.Function):
    r"""The unit representations of the two views through one one-layer encoder, with a hand-written backward pass.

    ``a`` ``[R, 2, B, p]``, ``W`` ``[R, m, p]``, ``b`` ``[R, m]``, ``gamma``/``beta`` ``[R, m]`` or None. Forward:
    :math:`u = aW^\top`; BatchNorm over each view's batch (when ``gamma`` is given); SReLU
    :math:`h = \mathrm{relu}(y - b) - \mathrm{relu}(-y - b)` (or :math:`h = y + b`); :math:`Z = h/\max(\|h\|, 10^{-12})`.
    The same function as :func:`_encode` followed by the normalisation (tested against autograd), in fewer passes over
    the activations: the contrastive models spend most of the time outside NT-Xent here.
    """

    @staticmethod
    def forward(ctx, a, W, b, gamma, beta, srelu):
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


def _encode(P, a, model):
    h = _layer(P, 0, a, model)
    return _layer(P, 1, h, model) if model.layers == 2 else h


def _head(H, h):
    return _linear(h, H["Wh"]) + _per_run(H["bh"], h.ndim)


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


# ----------------------------------------------------------------------------------------------- training


@dataclass
class TrainResult:
    """Max-cosine summaries ``[R]`` per recorded epoch; runs ordered sparsity-major: ``(sparsities[i], seeds[j])`` is ``R = i·S + j``."""

    model: str
    sparsities: list
    seeds: list
    epochs: list          # recorded epochs (0 = initialisation)
    maximum: list         # [len(epochs)][R]
    median: list
    minimum: list
    loss: list            # [R] mean training loss over the last epoch
    seconds: float
    settings: dict
    W: torch.Tensor | None = None  # final online first-layer weights [R, m, p]

    def rows(self) -> list[dict]:
        """One dict per run: model, sparsity, seed, start and end (max, median, min), the trajectories, the final loss."""
        out = []
        S = len(self.seeds)
        for r in range(len(self.sparsities) * S):
            out.append(dict(model=self.model, sparsity=self.sparsities[r // S], seed=self.seeds[r % S],
                            start=[round(self.maximum[0][r], 4), round(self.median[0][r], 4), round(self.minimum[0][r], 4)],
                            end=[round(self.maximum[-1][r], 4), round(self.median[-1][r], 4), round(self.minimum[-1][r], 4)],
                            epochs=list(self.epochs),
                            maximum=[round(v[r], 4) for v in self.maximum], median=[round(v[r], 4) for v in self.median],
                            minimum=[round(v[r], 4) for v in self.minimum], loss=round(self.loss[r], 4)))
        return out


def _run_seed(seed: int, sparsity: float) -> int:
    return 1000 * int(seed) + int(round(1000 * sparsity))


_INIT_STREAM = 10_000_000  # paired=True: the initial weights of run (seed, sparsity) come from generator(_run_seed + this)


def _bias(gen, size, fan_in, how):
    if how == "zero":
        return torch.zeros(size, dtype=torch.float64)
    bound = 1.0 / math.sqrt(fan_in)
    return (2 * rand(size, generator=gen, dtype=torch.float64) - 1) * bound


def _init(gen, model, *, p, d, m, M, warm, aligned_idx=None, bias_init="zero"):
    """One network's parameters (float64): first-layer weights random N(0, 1/(pd)) or warm (atoms + N(0, warm²))."""
    if warm is None:
        W0 = randn(m, p, generator=gen, dtype=torch.float64) / math.sqrt(p * d)
        idx = None
    else:
        idx = randint(0, d, (m,), generator=gen) if aligned_idx is None else aligned_idx
        W0 = M[:, idx].T + warm * randn(m, p, generator=gen, dtype=torch.float64)
    P = {"W0": W0, "b0": _bias(gen, m, p, bias_init)}
    if model.layers == 2:
        P["W1"] = randn(m, m, generator=gen, dtype=torch.float64) / math.sqrt(p * d)
        P["b1"] = _bias(gen, m, m, bias_init)
    if model.bn:
        for k in range(model.layers):
            P[f"g{k}"] = torch.ones(m, dtype=torch.float64)
            P[f"c{k}"] = torch.zeros(m, dtype=torch.float64)
    return P, idx


def _normalise(W, how):
    if how == "row":
        return W / W.norm(dim=-1, keepdim=True)
    return W / W.norm(dim=-2, keepdim=True)


def _check_train(model, sparsities, seeds, p, d, m, n, epochs, batch, lr, keep, scheme, noise, noise_draw, latent, bias_init,
                 drop_last, temperature, warm, normalize, record, dtype):
    check_choice("model", model, tuple(MODELS))
    sparsities = [check_in_range("sparsity", s, 1e-9, 1.0) for s in sparsities]
    seeds = [check_int("seed", s, 0) for s in seeds]
    if not sparsities or not seeds:
        raise ValueError("sparsities and seeds must be non-empty.")
    p, d, m, n = check_int("p", p, 1), check_int("d", d, 1), check_int("m", m, 1), check_int("n", n, 2)
    epochs, batch = check_int("epochs", epochs, 1), check_int("batch", batch, 2)
    if not isinstance(drop_last, bool):
        raise TypeError(f"drop_last must be True or False; got {drop_last!r}.")
    if drop_last and batch > n:
        raise ValueError(f"drop_last=True with batch = {batch} > n = {n} leaves no batch to train on.")
    lr, keep = check_positive("lr", lr), check_in_range("keep", keep, 0.0, 1.0)
    check_choice("scheme", scheme, sc.SCHEMES)
    noise = sc.noise_std(d, reading="code") if noise is None else check_nonnegative("noise", noise)
    check_choice("noise_draw", noise_draw, NOISE_DRAWS)
    check_choice("latent", latent, LATENTS)
    check_choice("bias_init", bias_init, BIAS_INITS)
    temperature = check_positive("temperature", temperature)
    if warm is not None:
        warm = check_nonnegative("warm", warm)
    if normalize not in (None, "row", "column"):
        raise ValueError(f"normalize must be None, 'row' or 'column'; got normalize = {normalize!r}.")
    record = epochs if record is None else check_int("record", record, 1)
    if dtype not in (torch.float64, torch.float32):
        raise ValueError(f"dtype must be torch.float64 or torch.float32; got dtype = {dtype!r}.")
    return sparsities, seeds, p, d, m, n, epochs, batch, lr, keep, noise, temperature, warm, record


def _sgd(trainable, loss, lr, W0, normalize):
    grads = torch.autograd.grad(loss.sum(), trainable)
    with torch.no_grad():
        for t, gr in zip(trainable, grads, strict=True):
            t.sub_(lr * gr)
        if normalize is not None:
            W0.copy_(_normalise(W0, normalize))
    return loss.detach()


def _step_two(net, H, views, upd, spec, lr, normalize):
    """One alternating step of a non-contrastive model: update branch ``upd`` on ``views = (its view, the other's)``."""
    other = "t" if upd == "o" else "o"
    q = _encode(net[upd], views[0], spec)
    if spec.head == "predictor":
        q = _head(H, q)
    with torch.no_grad():
        target = _encode(net[other], views[1], spec)
    return _sgd(list(net[upd].values()) + list(H.values()), _ncl._ncl_loss(q, target), lr, net[upd]["W0"], normalize)


def _step_shared(P, H, a, spec, temperature, lr, normalize):
    """One step of a shared-encoder model (NT-Xent or SimSiam) on the two views ``a`` ``[R, 2, B, p]``."""
    if spec.loss == "ntxent" and spec.layers == 1 and spec.head == "none":  # CL-basic, CL-linear: the fused encoder
        Z = _SharedEncoder.apply(a, P["W0"], P["b0"], P.get("g0"), P.get("c0"), spec.srelu)
        return _sgd(list(P.values()), _ntx._nt_xent_unit_views(Z, temperature), lr, P["W0"], normalize)
    h = _encode(P, a, spec)  # [R, 2, B, m]
    if spec.loss == "ntxent":
        loss = _ntx._nt_xent_views(_head(H, h) if spec.head == "projector" else h, temperature)
    else:
        z = _head(H, h)
        loss = _ncl._simsiam_loss(z[:, 0], z[:, 1], h[:, 0], h[:, 1])
    return _sgd(list(P.values()) + list(H.values()), loss, lr, P["W0"], normalize)


def train(model: str, *, sparsities=(0.1, 0.2, 0.3), seeds=(1, 2, 3, 4, 5), p: int = 50, d: int = 10, m: int = 50, n: int = 1000,
          epochs: int = 8000, batch: int = 512, lr: float = 0.025, keep: float = 0.5, scheme: str = "independent",
          noise: float | None = None, noise_draw: str = "sample", latent: str = "iid", bias_init: str = "zero",
          drop_last: bool = False, paired: bool = False, temperature: float = 0.05, warm: float | None = None,
          aligned: bool = False, normalize: str | None = None, record: int | None = None, dtype: torch.dtype = torch.float64,
          progress: bool = False, keep_weights: bool = False) -> TrainResult:
    r"""Train one model of the paper for every (sparsity, seed), all runs stacked.

    Parameters
    ----------
    model : str
        A key of :data:`MODELS`.
    sparsities, seeds : sequences
        :math:`\beta = \Pr(z_i\ne0)` values and seeds; ``len(sparsities) * len(seeds)`` runs.
    p, d, m, n : int
        Input dimension, atoms, neurons, samples.
    epochs, batch, lr : int, int, float
        Plain SGD; an epoch is one pass over a fresh permutation of the ``n`` samples.
    keep : float
        :math:`\alpha`, probability that a coordinate is kept (``1 -`` the paper's masking probability); for the
        dependent masks, the probability that it goes to the first view.
    scheme : str
        ``"independent"`` (Eq. 3) or ``"dependent"`` (Eq. 2) masks.
    noise : float, optional
        Noise std :math:`\sigma_0 \ge 0`; default :math:`\sqrt{\log d}/d` (the code).
    noise_draw : {"sample", "epoch", "view"}
        When the noise is drawn: once per sample with the data, both views and every epoch sharing it (paper and
        code); afresh at every epoch, shared by the two views; afresh for each view at every epoch.
    latent : {"iid", "exact"}
        i.i.d. :math:`\{0,\pm1\}` latents conditioned on :math:`z\ne0` (paper) or the code's exactly-k-sparse ones
        (:func:`exact_latents`).
    bias_init : {"zero", "uniform"}
        Biases (and SReLU thresholds) at 0 (paper) or :math:`U(\pm1/\sqrt{\text{fan-in}})` (PyTorch, the code).
    drop_last : bool
        Drop the last, smaller batch of every epoch (the code's contrastive loader) or keep it.
    paired : bool
        Draw the initial weights from a generator of their own, so that every model trained on one
        ``(seed, sparsity)`` sees the same data, permutations, masks and noise.
    temperature : float
        NT-Xent temperature :math:`T`.
    warm : float, optional
        Warm start (Sec. 5.2.2): each neuron is a random atom plus :math:`\mathcal N(0, \sigma^2)` noise with
        :math:`\sigma` = ``warm`` (the paper's :math:`p^{-c/2}`); online and target draw their atoms
        independently (code) unless ``aligned``.
    normalize : {None, "row", "column"}
        Rescale the rows (or columns) of the first-layer weights to unit norm after every step (Figs 7, 13-16).
    record : int, optional
        Record the max-cosines every ``record`` epochs (default: start and end only).
    dtype : torch.dtype
        Training precision (data, masks and initial weights are drawn in float64 first).

    Returns
    -------
    TrainResult
    """
    (sparsities, seeds, p, d, m, n, epochs, batch, lr, keep, noise, temperature, warm, record) = _check_train(
        model, sparsities, seeds, p, d, m, n, epochs, batch, lr, keep, scheme, noise, noise_draw, latent, bias_init, drop_last,
        temperature, warm, normalize, record, dtype)
    if not isinstance(paired, bool):
        raise TypeError(f"paired must be True or False; got {paired!r}.")
    spec = MODELS[model]
    two = spec.loss == "ncl"
    branches = ("o", "t") if two else ("o",)

    # per-run draws: data (float64), then initial weights (from the same generator, or their own when paired)
    gens, Ms, Xs, params = [], [], [], {br: [] for br in branches}
    heads = []
    for s in sparsities:
        for seed in seeds:
            g = make_generator(_run_seed(seed, s))
            M = sc.dictionary(p, d, generator=g)
            Z = sc.sparse_latents(n, d, sparsity=s, generator=g) if latent == "iid" else exact_latents(n, d, sparsity=s, generator=g)
            X = Z @ M.transpose(-1, -2)
            if noise_draw == "sample" and noise > 0:
                X = X + noise * randn(*X.shape, generator=g)
            Ms.append(M.to(torch.float64))
            Xs.append(X.to(torch.float64))
            gi = make_generator(_run_seed(seed, s) + _INIT_STREAM) if paired else g
            idx = None
            for br in branches:
                P, idx = _init(gi, spec, p=p, d=d, m=m, M=Ms[-1], warm=warm, aligned_idx=idx if aligned else None,
                               bias_init=bias_init)
                params[br].append(P)
            if spec.head != "none":
                heads.append({"Wh": randn(m, m, generator=gi, dtype=torch.float64) / math.sqrt(p * d),
                              "bh": _bias(gi, m, m, bias_init)})
            gens.append(g)
    R = len(gens)
    M = torch.stack(Ms).to(dtype)
    X = torch.stack(Xs).to(dtype)
    net = {br: {k: torch.stack([P[k] for P in params[br]]).to(dtype).requires_grad_() for k in params[br][0]} for br in branches}
    H = {k: torch.stack([h[k] for h in heads]).to(dtype).requires_grad_() for k in heads[0]} if heads else {}
    if normalize is not None:
        with torch.no_grad():
            for br in branches:
                net[br]["W0"].copy_(_normalise(net[br]["W0"], normalize))

    def summary():
        s = maxcos.max_cosine_summary(net["o"]["W0"].detach().to(torch.float64), M.to(torch.float64))
        return s.maximum.tolist(), s.median.tolist(), s.minimum.tolist()

    rec_epochs, mx, md, mn = [0], *([v] for v in summary())
    last_loss = torch.zeros(R, dtype=torch.float64)
    rows = torch.arange(R).unsqueeze(-1)
    starts = list(range(0, n - batch + 1, batch)) if drop_last else list(range(0, n, batch))
    start = time.perf_counter()
    for epoch in tqdm(range(1, epochs + 1), desc=model, disable=not progress, mininterval=20):
        perms, D1, D2, E1, E2 = [], [], [], [], []
        for g in gens:
            perms.append(torch.randperm(n, generator=g))
            d1, d2 = sc.masks((n, p), keep=keep, generator=g, scheme=scheme)
            D1.append(d1)
            D2.append(d2)
            if noise_draw == "epoch":
                e = noise * randn(n, p, generator=g, dtype=torch.float64)
                E1.append(e)
                E2.append(e)
            elif noise_draw == "view":
                e = noise * randn(2, n, p, generator=g, dtype=torch.float64)
                E1.append(e[0])
                E2.append(e[1])
        perm = torch.stack(perms)
        X1 = X + torch.stack(E1).to(dtype) if E1 else X
        X2 = X + torch.stack(E2).to(dtype) if E2 else X
        A1 = (torch.stack(D1).to(dtype) * X1)[rows, perm]
        A2 = (torch.stack(D2).to(dtype) * X2)[rows, perm]
        A = None if two else torch.stack([A1, A2], dim=1)  # [R, 2, n, p]: the two views through one shared encoder
        total = 0.0
        for k, lo in enumerate(starts):
            if two:
                upd = "o" if k % 2 == 0 else "t"
                a1, a2 = A1[:, lo:lo + batch], A2[:, lo:lo + batch]
                loss = _step_two(net, H, (a1, a2) if upd == "o" else (a2, a1), upd, spec, lr, normalize)
            else:
                loss = _step_shared(net["o"], H, A[:, :, lo:lo + batch], spec, temperature, lr, normalize)
            total = total + loss.to(torch.float64)
        last_loss = total / len(starts)
        if epoch % record == 0 or epoch == epochs:
            if rec_epochs[-1] != epoch:
                rec_epochs.append(epoch)
                for store, v in zip((mx, md, mn), summary(), strict=True):
                    store.append(v)
    seconds = time.perf_counter() - start
    settings = dict(p=p, d=d, m=m, n=n, epochs=epochs, batch=batch, lr=lr, keep=keep, scheme=scheme, noise=round(noise, 6),
                    noise_draw=noise_draw, latent=latent, bias_init=bias_init, drop_last=drop_last, paired=paired,
                    temperature=temperature, warm=warm, aligned=aligned, normalize=normalize, record=record,
                    dtype=str(dtype).replace("torch.", ""), model=asdict(spec))
    W = net["o"]["W0"].detach().to(torch.float64) if keep_weights else None
    return TrainResult(model=model, sparsities=list(sparsities), seeds=list(seeds), epochs=rec_epochs, maximum=mx, median=md,
                       minimum=mn, loss=last_loss.tolist(), seconds=seconds, settings=settings, W=W)


def train_job(**params) -> dict:
    """One job of the runner: :func:`train` in float32 with ``params``; returns the rows (with trajectories) and settings."""
    res = train(dtype=torch.float32, **params)
    return dict(model=res.model, rows=res.rows(), settings=res.settings, train_seconds=round(res.seconds, 1))


# ----------------------------------------------------------------------------------------------- experiments

# The one-at-a-time ablations of issue 17 at full length, each relative to the Table 2 setting of the paper's text
# (independent masks, keep 0.5, sigma_0 = 0.152 drawn once per sample, n = 1000, i.i.d. latents, zero biases, lr 0.025,
# last batch kept), at Pr(sparse) 0.2 with 5 seeds: {factor: (settings, models)}. The baseline and "scheme=dependent"
# are not rerun: they are the jobs of the same models at 0.2 in table2-independent and table2-dependent (same seeds,
# paired streams, so the same data, permutations and masks). The factors were chosen by the pilot
# (clbook/results/landscape/pilot.json): only the noise shared by the two views moved the contrastive models there;
# n = 3000 is required by the issue; latents, lr, bias init and drop_last moved CL-basic by < 0.04 and are not rerun.
ABLATIONS = {
    "noise=0": (dict(noise=0.0), ("CL-basic", "CL-linear", "NCL-basic", "NCL-linear")),
    "noise_draw=view": (dict(noise_draw="view"), ("CL-basic", "CL-linear", "NCL-basic", "NCL-linear")),
    "noise_draw=epoch": (dict(noise_draw="epoch"), ("CL-basic", "NCL-basic")),
    "noise=0.05": (dict(noise=0.05), ("CL-basic", "NCL-basic")),
    "n=3000": (dict(n=3000), ("CL-basic", "NCL-basic")),
}
ABLATION_MODELS = ("CL-basic", "CL-linear", "NCL-basic", "NCL-linear")
# The pilot's factors (1000 epochs, seeds 1-2, Pr(sparse) 0.1-0.3, CL-basic and NCL-basic; pilot.json also holds
# CL-linear and NCL-linear for the first four).
PILOT = {
    "base": {}, "scheme=dependent": dict(scheme="dependent"), "noise=0": dict(noise=0.0), "noise_draw=view": dict(noise_draw="view"),
    "noise_draw=epoch": dict(noise_draw="epoch"), "n=3000": dict(n=3000), "latent=exact": dict(latent="exact"),
    "lr=0.005": dict(lr=0.005), "bias_init=uniform": dict(bias_init="uniform"), "drop_last": dict(drop_last=True),
    "noise=0.05": dict(noise=0.05), "dependent+noise_draw=view": dict(scheme="dependent", noise_draw="view"),
    "noise=0.48": dict(noise=0.48), "dependent+keep=0.25": dict(scheme="dependent", keep=0.25),
}
# Issue 26 (Chapter 17 complete): the ablation's factors that matter at the other two sparsities, and more seeds under
# independent masks for the two models whose verdicts moved with the draw of seeds (seeds 6-15: new random streams,
# so with seeds 1-5 of table2-independent / ablation they make 15 paired seeds).
ABLATION_SPARSITIES = {"noise=0": ABLATION_MODELS, "noise_draw=view": ABLATION_MODELS, "n=3000": ("CL-basic", "NCL-basic")}
MORE_SEEDS = (6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
MORE_SEEDS_MODELS = ("CL-basic", "NCL-basic")
EXPERIMENTS = ("table2-independent", "table2-dependent", "table1", "ablation", "table4", "figures", "pilot",
               "table2-independent-seeds", "ablation-seeds", "ablation-sparsities")
# measured ms per epoch per run (bench, n = 1000), for ordering the jobs (largest first) and for estimates
_MS_PER_EPOCH = {"ntxent": 10.0, "simsiam": 2.7, "ncl": 1.8}


def _cost(params: dict) -> float:
    spec = MODELS[params["model"]]
    ms = _MS_PER_EPOCH[spec.loss] * (1.5 if spec.layers == 2 or spec.head != "none" else 1.0)
    return ms * params["epochs"] * len(params["seeds"]) * len(params["sparsities"]) * params.get("n", 1000) / 1000 / 1000


def jobs(experiment: str, *, epochs: int | None = None, seeds=None, sparsities=None, models=None, quick: bool = False,
         factors=None) -> list:
    """The jobs (:class:`clbook.experiments.runner.Job`) of a named experiment: one per (model or setting, sparsity).

    ``table2-independent`` / ``table2-dependent``: the Table 2 models under the masks of the paper's text (Eq. 3) /
    of the authors' contrastive script (Eq. 2); ``table1``: Simplified-SimCLR and -SimSiam with keep probability
    0.1 (the caption's Bernoulli(0.1)); ``ablation``: the factors and models of :data:`ABLATIONS` at Pr(sparse) 0.2;
    ``pilot``: :data:`PILOT` at 1000 epochs, 2 seeds; ``table4`` and ``figures``: the warm starts of Chapter 17;
    ``ablation-sparsities``: the factors of :data:`ABLATION_SPARSITIES` at Pr(sparse) 0.1 and 0.3;
    ``table2-independent-seeds`` / ``ablation-seeds``: CL-basic and NCL-basic under independent masks, without /
    with per-view noise, at :data:`MORE_SEEDS` (seeds 6-15), so that the verdicts rest on 15 paired seeds.
    ``factors`` (ablation and pilot only) keeps the named factors of :data:`ABLATIONS` / :data:`PILOT`.
    Every job uses ``paired=True`` (same data, permutations and masks for every model of one seed and sparsity),
    records the max-cosines every ``epochs // 80`` epochs (every 100 at 8000) and defaults to 8000 epochs, seeds
    1-5 and Pr(sparse) 0.1, 0.2, 0.3 (``quick``: 20 epochs, seeds 1-2).
    """
    check_choice("experiment", experiment, EXPERIMENTS)
    pilot = experiment == "pilot"
    E = check_int("epochs", epochs, 1) if epochs is not None else (20 if quick else 1000 if pilot else 8000)
    more = experiment in ("table2-independent-seeds", "ablation-seeds")
    seeds = [check_int("seed", s, 0) for s in seeds] if seeds is not None else (
        [16, 17] if quick and more else list(MORE_SEEDS) if more else [1, 2] if quick or pilot else [1, 2, 3, 4, 5])
    betas = [check_in_range("sparsity", s, 1e-9, 1.0) for s in sparsities] if sparsities is not None else [0.1, 0.2, 0.3]
    if models is not None:
        for name in models:
            check_choice("model", name, tuple(MODELS))
    if factors is not None:
        known = ABLATIONS if experiment == "ablation" else PILOT if pilot else None
        if known is None:
            raise ValueError(f"factors applies to the ablation and the pilot, not to {experiment!r}.")
        if isinstance(factors, str) or not list(factors):
            raise ValueError(f"factors must be a non-empty list of names from {list(known)}; got {factors!r}.")
        for factor in factors:
            check_choice("factor", factor, tuple(known))
    base = dict(epochs=E, seeds=seeds, record=max(E // 80, 1), paired=True)
    todo = []  # (key prefix, model, settings)
    if experiment in ("table2-independent", "table2-dependent"):
        scheme = experiment.split("-")[1]
        todo = [(name, name, dict(scheme=scheme)) for name in (models or TABLE2_MODELS)]
    elif experiment == "table1":  # "diagonal entries in random masks from Bernoulli(0.1)" (Table 1 caption): keep 0.1
        todo = [(name, name, dict(keep=0.1)) for name in (models or ("SimCLR", "SimSiam"))]
    elif experiment == "ablation":
        todo = [(f"{factor}/{name}", name, kw) for factor, (kw, names) in ABLATIONS.items() for name in names
                if (models is None or name in models) and (factors is None or factor in factors)]
        betas = [0.2] if sparsities is None else betas
    elif experiment == "ablation-sparsities":  # the same factors at Pr(sparse) 0.1 and 0.3 (0.2 is in "ablation")
        todo = [(f"{factor}/{name}", name, ABLATIONS[factor][0]) for factor, names in ABLATION_SPARSITIES.items()
                for name in names if models is None or name in models]
        betas = [0.1, 0.3] if sparsities is None else betas
    elif experiment in ("table2-independent-seeds", "ablation-seeds"):
        kw = dict(scheme="independent") if experiment == "table2-independent-seeds" else dict(noise_draw="view")
        prefix = "" if experiment == "table2-independent-seeds" else "noise_draw=view/"
        todo = [(f"{prefix}{name}", name, kw) for name in (models or MORE_SEEDS_MODELS)]
    elif pilot:
        todo = [(f"{factor}/{name}", name, kw) for factor, kw in PILOT.items() for name in (models or ("CL-basic", "NCL-basic"))
                if factors is None or factor in factors]
    elif experiment == "table4":
        todo = [(f"warm={s}", "NCL-basic", dict(warm=s)) for s in (0.14, 0.02, 0.002)]
    elif experiment == "figures":  # Figs 4-7 at Pr(sparse) = 0.2 (3 runs in the paper), plus this book's alignment ablation
        c1, c2 = 50 ** -0.5, 50 ** -1.0
        todo = [("fig4 warm c=1", "NCL-basic", dict(warm=c1)),
                ("fig5 warm c=1 + predictor", "NCL-pred", dict(warm=c1)),
                ("fig6 random + predictor", "NCL-pred", {}),
                ("fig7 warm c=2 + row norm, keep 0.1", "NCL-basic", dict(warm=c2, normalize="row", keep=0.1)),
                ("fig16 warm c=2 + column norm, keep 0.25", "NCL-basic", dict(warm=c2, normalize="column", keep=0.25)),
                ("warm c=2", "NCL-basic", dict(warm=c2)),
                ("warm c=2 aligned", "NCL-basic", dict(warm=c2, aligned=True)),
                ("warm c=1 aligned", "NCL-basic", dict(warm=c1, aligned=True))]
        base = base | dict(seeds=seeds[:3])
        betas = [0.2] if sparsities is None else betas
    out = []
    for prefix, name, kw in todo:
        for s in betas:
            params = base | kw | dict(model=name, sparsities=[s])
            out.append(runner.Job(key=f"{prefix}/{s}", params=params, cost=_cost(params)))
    if not out:
        raise ValueError(f"experiment {experiment!r} has no jobs with models = {models!r}.")
    return out


def run(experiments, *, epochs: int | None = None, seeds=None, sparsities=None, models=None, factors=None, quick: bool = False, out=None,
        workers: int = 2, backend: str = "local", scheduler: str | None = None, fresh: bool = False, progress: bool = True,
        command: str | None = None) -> dict:
    """Run named experiments one after the other through :func:`clbook.experiments.runner.run_jobs`.

    Each is written to ``<out>/<name>.json`` (``quick-<name>`` with ``quick``), with ``<name>.partial.json`` while it
    runs; an interrupted run resumes where it stopped (``fresh=False``). Returns ``{name: result}``.
    """
    if isinstance(experiments, str) or not list(experiments):
        raise ValueError(f"experiments must be a non-empty list of names from {EXPERIMENTS}; got {experiments!r}.")
    out = Path(out) if out is not None else DATA
    command = command or f"python -m clbook.experiments.landscape {' '.join(sys.argv[1:])}"
    done = {}
    for experiment in experiments:
        todo = jobs(experiment, epochs=epochs, seeds=seeds, sparsities=sparsities, models=models, quick=quick,
                    factors=factors if experiment in ("ablation", "pilot") else None)
        name = f"quick-{experiment}" if quick else experiment
        settings = dict(experiment=experiment, quick=quick, dtype="float32",
                        jobs={job.key: job.params for job in todo})
        done[name] = runner.run_jobs(train_job, todo, out=out, name=name, command=command, settings=settings, workers=workers,
                                     backend=backend, scheduler=scheduler, resume=not fresh, progress=progress,
                                     experiment=experiment)
    return done


def collect(data: dict) -> dict:
    """``{model or tag: rows}`` of a stored result, whatever its format (the runner's ``jobs`` dict, or the older list)."""
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), (dict, list)):
        raise ValueError(f"data must be a stored result, a dict with 'jobs' (see load); got {type(data).__name__}.")
    out = {}
    try:
        if isinstance(data["jobs"], dict):
            for key, job in data["jobs"].items():
                out.setdefault(key.rsplit("/", 1)[0], []).extend(job["result"]["rows"])
        else:
            for job in data["jobs"]:
                out.setdefault(job["tag"], []).extend(job["rows"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"data is not a stored landscape result: a job lacks {exc}.") from None
    return out


def _check_rows(rows, keys) -> list[dict]:
    if not isinstance(rows, (list, tuple)) or not rows:
        raise ValueError("rows must be a non-empty list of result rows (TrainResult.rows() or collect(...)[model]).")
    for r in rows:
        if not isinstance(r, dict) or any(k not in r for k in keys):
            raise ValueError(f"rows must be result rows with the keys {list(keys)}; got {r!r:.80}.")
    return list(rows)


def mixed(independent: dict, dependent: dict) -> dict:
    """The authors' own configuration, assembled: contrastive models from ``dependent``, the others from ``independent``.

    ``main_simclr.py`` without ``--use_masking`` (as the repository's scripts run it) falls back to the dependent
    masks of Eq. 2, while ``main.py`` (non-contrastive) always uses independent masks. Returns ``{model: rows}``.
    """
    ind, dep = collect(independent), collect(dependent)
    out = {}
    for key in ind:
        source = dep if MODELS[key.split("/")[-1]].loss == "ntxent" else ind
        if key not in source:
            raise ValueError(f"{key!r} is missing from the {'dependent' if source is dep else 'independent'} result.")
        out[key] = source[key]
    return out


def end_values(groups: dict) -> dict:
    """Per-seed end points of stored runs: ``{(key, sparsity, metric): [value of each seed, seeds in increasing order]}``.

    ``groups`` maps a model (or ``factor/model``) to its rows, as :func:`collect` and :func:`mixed` return them;
    ``metric`` is one of :data:`METRICS`. The per-seed lists are what :func:`clbook.verify.compare_table` and
    :func:`paired_gap` take.
    """
    if not isinstance(groups, dict) or not groups:
        raise ValueError(f"groups must be a non-empty dict {{model: rows}} (see collect); got {groups!r:.80}.")
    out = {}
    for key, rows in groups.items():
        rows = _check_rows(rows, ("sparsity", "seed", "end"))
        for r in sorted(rows, key=lambda r: (r["sparsity"], r["seed"])):
            for k, metric in enumerate(METRICS):
                out.setdefault((key, r["sparsity"], metric), []).append(float(r["end"][k]))
    return out


def paired_gap(values: dict, a: str, b: str, *, sparsity: float, metric: str = "minimum") -> tuple[float, float]:
    r"""Mean and standard error over seeds of the seed-by-seed difference ``a − b`` of :func:`end_values`.

    The runs of one seed are paired (``paired=True``: same data, initial weights where the architectures agree,
    permutations and masks), so the standard error is that of the differences, :math:`s_{a-b}/\sqrt{n}`.
    """
    check_choice("metric", metric, METRICS)
    if not isinstance(values, dict):
        raise ValueError(f"values must be the dict of end_values; got {type(values).__name__}.")
    try:
        va, vb = values[(a, sparsity, metric)], values[(b, sparsity, metric)]
    except KeyError as exc:
        raise ValueError(f"values has no cell {exc.args[0]!r}; a and b must be keys of end_values at this sparsity.") from None
    if len(va) != len(vb) or len(va) < 2:
        raise ValueError(f"a and b need the same seeds, at least 2; got {len(va)} and {len(vb)} values.")
    diff = torch.tensor(va, dtype=torch.float64) - torch.tensor(vb, dtype=torch.float64)
    return float(diff.mean()), float(diff.std() / math.sqrt(len(diff)))


def ablation_effects(baseline: dict, variants: dict, *, models, sparsity: float = 0.2, metric: str = "minimum") -> list[dict]:
    """One-at-a-time ablations against a baseline, paired by seed, from :func:`end_values` dicts.

    ``baseline`` holds the baseline runs keyed by model; ``variants`` maps a factor name to its :func:`end_values`
    dict (keyed by model, or by ``factor/model`` as the ablation result stores them). Returns one dict per factor
    (baseline first): ``factor``, and per model ``values[model] = (mean, sd)`` and ``change[model] = (mean, se)`` of
    the seed-by-seed difference from the baseline, and ``gap = (mean, se)`` of ``models[0] − models[1]`` under that
    factor (Table 2's claim (i) when the models are CL-basic and NCL-basic).
    """
    check_choice("metric", metric, METRICS)
    models = list(models)
    if len(models) != 2:
        raise ValueError(f"models must name two models (the gap is the first minus the second); got {models!r}.")
    if not isinstance(variants, dict):
        raise ValueError(f"variants must be a dict {{factor: end_values}}; got {type(variants).__name__}.")

    def values(data, factor, name):
        for key in ((f"{factor}/{name}", sparsity, metric), (name, sparsity, metric)):
            if isinstance(data, dict) and key in data:
                return torch.tensor(data[key], dtype=torch.float64)
        raise ValueError(f"{'baseline' if factor is None else 'variants'} has no runs of {name!r} at sparsity {sparsity}"
                         + ("" if factor is None else f" for the factor {factor!r}") + ".")

    base = {name: values(baseline, None, name) for name in models}
    rows = []
    for factor, data in [("baseline", None), *variants.items()]:
        row = dict(factor=factor, values={}, change={})
        current = {}
        for name in models:
            v = base[name] if data is None else values(data, factor, name)
            if len(v) != len(base[name]) or len(v) < 2:
                raise ValueError(f"{factor}: {name} has {len(v)} seeds, the baseline {len(base[name])}; they must be paired.")
            d = v - base[name]
            current[name] = v
            row["values"][name] = (float(v.mean()), float(v.std()))
            row["change"][name] = (float(d.mean()), float(d.std() / math.sqrt(len(d))))
        g = current[models[0]] - current[models[1]]
        row["gap"] = (float(g.mean()), float(g.std() / math.sqrt(len(g))))
        rows.append(row)
    return rows


def replay(data: dict, model: str, *, sparsity: float = 0.2, seed: int = 1, epochs: int = 200) -> dict:
    """Rerun the first ``epochs`` epochs of one stored run live and compare it with its stored trajectory.

    ``data`` is a stored result of the runner (e.g. ``load("table2-independent")``); the run is trained with the
    stored job's own settings (scheme, noise, seeds' streams, float32), alone, which gives the same numbers as in its
    stack (a unit test checks this). Returns ``epochs`` (the recorded epochs up to ``epochs``), ``live`` and
    ``stored`` (``{metric: [value at each epoch]}``) and ``max_abs_diff`` over them.
    """
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        raise ValueError("data must be a stored result of the runner (a dict whose 'jobs' maps keys to jobs).")
    key = f"{model}/{sparsity}"
    if key not in data["jobs"]:
        raise ValueError(f"data has no job {key!r}; it has {sorted(data['jobs'])[:6]}.")
    params = dict(data["jobs"][key]["params"])
    epochs = check_int("epochs", epochs, 1, params["epochs"])
    run = next((r for r in data["jobs"][key]["result"]["rows"] if r["seed"] == seed), None)
    if run is None:
        raise ValueError(f"seed must be one of the stored seeds {params['seeds']}; got seed = {seed!r}.")
    params.update(seeds=[seed], epochs=epochs)
    res = train(dtype=torch.float32, **params)
    common = [(k, run["epochs"].index(e)) for k, e in enumerate(res.epochs) if e in run["epochs"]]  # recorded in both
    live = {m: [float(getattr(res, m)[k][0]) for k, _ in common] for m in METRICS}
    stored = {m: [run[m][i] for _, i in common] for m in METRICS}
    diff = max(abs(a - b) for m in METRICS for a, b in zip(live[m], stored[m], strict=True))
    return dict(epochs=[res.epochs[k] for k, _ in common], live=live, stored=stored, max_abs_diff=diff)


def summarise(rows: list[dict], *, where: str = "end") -> dict:
    """Mean and sample standard deviation over seeds of (max, median, min) for each sparsity: ``{sparsity: [(mean, sd)] * 3}``."""
    check_choice("where", where, ("start", "end"))
    rows = _check_rows(rows, ("sparsity", where))
    out = {}
    for s in sorted({r["sparsity"] for r in rows}):
        vals = torch.tensor([r[where] for r in rows if r["sparsity"] == s], dtype=torch.float64)
        sd = vals.std(0) if len(vals) > 1 else torch.zeros(3, dtype=torch.float64)
        out[s] = [(float(a), float(b)) for a, b in zip(vals.mean(0), sd, strict=True)]
    return out


def trajectory_summary(rows: list[dict], *, metric: str = "minimum") -> dict:
    """Per sparsity: the recorded epochs and the mean, sample sd and count over runs of one metric at each of them."""
    check_choice("metric", metric, METRICS)
    rows = _check_rows(rows, ("sparsity", "epochs", metric))
    out = {}
    for s in sorted({r["sparsity"] for r in rows}):
        runs = [r for r in rows if r["sparsity"] == s]
        epochs = runs[0]["epochs"]
        if any(r["epochs"] != epochs for r in runs):
            raise ValueError(f"the runs at sparsity {s} were recorded at different epochs.")
        vals = torch.tensor([r[metric] for r in runs], dtype=torch.float64)
        sd = vals.std(0) if len(runs) > 1 else torch.zeros(len(epochs), dtype=torch.float64)
        out[s] = dict(epochs=epochs, mean=vals.mean(0).tolist(), sd=sd.tolist(), count=len(runs))
    return out


def load(name: str) -> dict:
    """A stored result ``clbook/results/landscape/<name>.json`` (see :func:`clbook.results.names`)."""
    check_choice("name", name, tuple(results.names("landscape")))
    return results.load("landscape", name)


# ----------------------------------------------------------------------------------------------- speed


def _matmul_gflops(shape: tuple[int, int, int], *, generator: torch.Generator) -> float:
    """GFLOP/s of one ``[a, k] @ [k, b]`` float32 product (second of two calls; the first warms the caches)."""
    a, k, b = shape
    x, y = randn(a, k, generator=generator, dtype=torch.float32), randn(k, b, generator=generator, dtype=torch.float32)
    out = torch.empty(a, b, dtype=torch.float32)
    torch.mm(x, y, out=out)
    t = time.perf_counter()
    torch.mm(x, y, out=out)
    return 2 * a * k * b / (time.perf_counter() - t) / 1e9


def step_flops(model: str, *, batch: int = 512, p: int = 50, m: int = 50) -> int:
    r"""Floating-point operations counted for one training step of one run of a shared-encoder model.

    The matrix products only: NT-Xent's :math:`6n^2m` (:func:`clbook.losses.ntxent.ntxent_flops`, :math:`n = 2B`),
    the encoder's forward :math:`2npm` and its weight gradient :math:`2npm` (the input needs no gradient), and the
    same for a projector (:math:`m\times m`, also its input gradient). Elementwise work (BatchNorm, SReLU, the
    normalisation, the :math:`n^2` exponentials) is not counted: it is the overhead that the ratio to a plain matrix
    product measures.
    """
    spec = MODELS[check_choice("model", model, tuple(MODELS))]
    if spec.loss != "ntxent" or spec.layers != 1:
        raise ValueError(f"step_flops counts one-layer NT-Xent models; got model = {model!r}.")
    n = 2 * check_int("batch", batch, 1)
    total = _ntx.ntxent_flops(batch, m) + 4 * n * p * m
    if spec.head == "projector":
        total += 6 * n * m * m
    return total


def _cl_step_state(model, runs, batch, p, d, m, generator, dtype=torch.float32):
    spec = MODELS[model]
    params = [_init(generator, spec, p=p, d=d, m=m, M=None, warm=None)[0] for _ in range(runs)]
    P = {k: torch.stack([q[k] for q in params]).to(dtype).requires_grad_() for k in params[0]}
    H = {}
    if spec.head != "none":
        H = {"Wh": (randn(runs, m, m, generator=generator, dtype=torch.float64) / math.sqrt(p * d)).to(dtype).requires_grad_(),
             "bh": torch.zeros(runs, m, dtype=dtype).requires_grad_()}
    a = (randn(runs, 2, batch, p, generator=generator, dtype=torch.float64) * (rand(runs, 2, batch, p, generator=generator) < 0.5))
    return spec, P, H, a.to(dtype)


def bench(*, epochs: int = 40, runs: int = 5, repeats: int = 9, steps: int = 5, models=None) -> dict:
    """Throughput of the contrastive step against one large matrix product, measured in the same run; ms per epoch.

    One process, one thread, float32. ``repeats`` times, interleaved: (1) one ``torch.mm`` of two square
    :math:`2048\\times2048` matrices and one of the step's largest shape (:math:`E[Z, Z/t]`,
    :math:`1024\\times1024` by :math:`1024\\times100`); (2) ``steps`` training steps of CL-basic (``runs`` runs stacked,
    batch 512: forward, backward, SGD update, no data preparation), whose GFLOP/s counts the matrix products of
    :func:`step_flops`. The ratio is the step's GFLOP/s over the larger of the two matrix products' GFLOP/s of the same
    repeat (median over the repeats, and its range); on a shared machine the ratio of the best step to the best
    product (``ratio_of_bests``) is the least disturbed estimate of the two throughputs. Then, for each model, ms per
    epoch per run of :func:`train` (``epochs`` epochs, ``runs`` seeds at Pr(sparse) 0.2, n = 1000, data preparation
    included).
    """
    epochs, runs = check_int("epochs", epochs, 1), check_int("runs", runs, 1)
    repeats, steps = check_int("repeats", repeats, 1), check_int("steps", steps, 1)
    models = list(models) if models is not None else ["CL-basic", "CL-linear", "SimCLR", "NCL-basic", "NCL-basic-2L", "NCL-linear",
                                                      "NCL-basic-code", "SimSiam"]
    for name in models:
        check_choice("model", name, tuple(MODELS))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    try:
        g = make_generator(0)
        spec, P, H, a = _cl_step_state("CL-basic", runs, 512, 50, 10, 50, g)
        flops = step_flops("CL-basic") * runs
        _step_shared(P, H, a, spec, 0.05, 1e-9, None)  # warm-up
        square, shaped, step = [], [], []
        for _ in range(repeats):
            square.append(_matmul_gflops((2048, 2048, 2048), generator=g))
            shaped.append(_matmul_gflops((1024, 1024, 100), generator=g))
            t = time.perf_counter()
            for _ in range(steps):
                _step_shared(P, H, a, spec, 0.05, 1e-9, None)
            step.append(flops * steps / (time.perf_counter() - t) / 1e9)
        med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
        reference = [max(x, y) for x, y in zip(square, shaped, strict=True)]
        ratios = [s / r for s, r in zip(step, reference, strict=True)]
        rows = []
        for name in models:
            train(name, sparsities=[0.2], seeds=list(range(1, runs + 1)), epochs=2, dtype=torch.float32)  # warm-up
            res = train(name, sparsities=[0.2], seeds=list(range(1, runs + 1)), epochs=epochs, dtype=torch.float32)
            per = res.seconds / epochs / runs
            ref = AUTHORS_SECONDS_PER_EPOCH["contrastive" if MODELS[name].loss == "ntxent" else "non-contrastive"]
            rows.append(dict(model=name, ms_per_epoch_per_run=round(1000 * per, 3), seconds_per_epoch_per_seed=round(per, 5),
                             authors_seconds_per_epoch=ref, speedup_per_epoch=round(ref / per, 1),
                             speedup_per_sample=round(ref / 3 / per, 1)))
    finally:
        torch.set_num_threads(threads)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return dict(experiment="bench", epochs=epochs, runs=runs, repeats=repeats, steps=steps, dtype="float32", threads=1,
                matmul_square_2048_gflops=[round(v, 1) for v in square], matmul_step_shape_gflops=[round(v, 1) for v in shaped],
                step_gflops=[round(v, 1) for v in step], ratio=[round(v, 3) for v in ratios],
                summary=dict(matmul_gflops_median=round(med(reference), 1), step_gflops_median=round(med(step), 1),
                             ratio_median=round(med(ratios), 3), ratio_range=[round(min(ratios), 3), round(max(ratios), 3)],
                             matmul_gflops_best=round(max(reference), 1), step_gflops_best=round(max(step), 1),
                             ratio_of_bests=round(max(step) / max(reference), 3), target=0.5),
                counted=("per run and step: NT-Xent 6 n^2 m (Gram matrix 2 n^2 m, E [Z, Z/t] 4 n^2 m) + encoder 4 n p m, "
                         f"n = 2B = 1024, p = m = 50: {step_flops('CL-basic') / 1e6:.1f} MFLOP"),
                rows=rows, peak_memory_mb=round(peak_mb, 1),
                provenance=results.provenance(f"python -m clbook.experiments.landscape bench --epochs {epochs}",
                                              time.perf_counter() - t0))


def estimate(experiments, ms_per_epoch: dict, *, workers: int = 2, slowdown: float = 1.0, **kw) -> dict:
    """Estimated wall time of named experiments run one after the other on ``workers`` processes.

    ``ms_per_epoch`` maps a model to its measured ms per epoch per run at n = 1000 (the ``rows`` of :func:`bench`);
    a job's time is that × epochs × runs × n / 1000 × ``slowdown`` (two processes on two cores share memory
    bandwidth and caches). Jobs are scheduled as :func:`clbook.experiments.runner.run_jobs` does, largest first
    on the first free worker. ``kw`` are the options of :func:`jobs`. Returns per experiment its jobs' estimated
    seconds and wall seconds, and the total.
    """
    workers = check_int("workers", workers, 1)
    slowdown = check_positive("slowdown", slowdown)
    out, total = {}, 0.0
    for experiment in experiments:
        todo = jobs(experiment, **kw)
        seconds = {}
        for job in todo:
            q = job.params
            if q["model"] not in ms_per_epoch:
                raise ValueError(f"ms_per_epoch has no entry for {q['model']!r}.")
            seconds[job.key] = (ms_per_epoch[q["model"]] / 1000 * q["epochs"] * len(q["seeds"]) * len(q["sparsities"])
                                * q.get("n", 1000) / 1000 * slowdown)
        free = [0.0] * workers
        for job in sorted(todo, key=lambda j: -j.cost):
            k = free.index(min(free))
            free[k] += seconds[job.key]
        out[experiment] = dict(jobs={k: round(v) for k, v in seconds.items()}, cpu_seconds=round(sum(seconds.values())),
                               wall_seconds=round(max(free)))
        total += max(free)
    return dict(experiments=out, wall_seconds=round(total), workers=workers, slowdown=slowdown)


# ----------------------------------------------------------------------------------------------- faithfulness

AUTHORS_REPOSITORY = "https://github.com/ashwinipokle/contrastive_landscape"
AUTHORS_SHIMS = (
    "numpy >= 1.24 removed the aliases np.float and np.int that their datasets use: restored as float and int",
    "wandb is replaced by a stub (init() returns a run whose finish() does nothing; log() does nothing): no network, no account",
    "seaborn is replaced by a stub (only used to draw weight heat maps for wandb)",
    "functions.train.log_all_metrics, which --log_metrics makes them call after every epoch, is replaced by a recorder of "
    "their own utils.log_metrics.check_sparse_coding_learning(model, M) every `record` epochs; functions.train.train and "
    "alternate_train are wrapped to record the same metric before the first epoch",
    "torch.set_num_threads(1) and OMP/MKL/OpenBLAS threads 1 (this machine's one-core-per-process policy)",
)
# What our defaults do on purpose differently from the authors' code (each one is an argument of train()).
DEPARTURES = {
    "samples": "n = 1000 (paper, Sec. 4.2) instead of the code's nn: 3000 (n=3000 is an ablation)",
    "latents": "i.i.d. {0, ±1} latents conditioned on z != 0 (paper) instead of the code's exactly-k-sparse gen_z (latent='exact')",
    "noise": "the code's std sqrt(log d)/d = 0.152, drawn once per sample (same as the code; the paper states two other values)",
    "masks": "independent masks (Eq. 3, the paper's text) for every model; the code's contrastive script falls back to the "
             "dependent masks of Eq. 2 (scheme='dependent')",
    "bias": "biases and SReLU thresholds start at 0 (paper) instead of PyTorch's U(±1/sqrt(fan-in)) (bias_init='uniform')",
    "srelu": "Eq. 14, relu(y - b) - relu(-y - b) with y = Wx (or BN(Wx) + beta). The code's SymReLU(x, b) = relu(x) - relu(-x + 2b) "
             "is applied to x = Wx + b without BatchNorm, which is Eq. 14 with threshold -b (the same law at a symmetric start); "
             "with BatchNorm it is applied to x = BN(Wx + b) = BN(Wx) (+ BN's own shift), which is Eq. 14 with threshold -b of "
             "BN(Wx) - b: the code's bias both shifts the pre-activation and sets the threshold, ours has two parameters (BN's "
             "shift and the threshold). Same family of functions, different parameterisation and start",
    "batchnorm": "BatchNorm in NCL-basic as Table 2 says; the code's `simplified` model ignores --use_bn (our NCL-basic-code)",
    "last batch": "the last, smaller batch of an epoch is kept; the code's contrastive loader drops it (drop_last=True): with "
                  "n = 1000 and batch 512 it trains on 512 samples per epoch",
    "learning rate": "0.025 (paper and the code's argparse default) instead of the 0.005 of the code's scripts (lr=0.005)",
    "random numbers": "torch generators seeded from (seed, Pr(sparse)) instead of numpy/torch global seeds 1-5; the "
                      "distributions are the same, the draws are not",
    "precision": "float32 training as the code; the data are drawn in float64 and cast once (the code casts every batch)",
    "NT-Xent": "the same loss from the 2B x 2B Gram matrix (the code forms a 2B x 2B x m tensor of cosines)",
}


def _authors_main() -> None:  # pragma: no cover - runs in a subprocess, with the authors' checkout on sys.path
    """Entry point of the subprocess that runs one of the authors' scripts unchanged, with :data:`AUTHORS_SHIMS` applied.

    ``argv``: ``checkout record out.json -- script args...``; writes ``{"runs": [{"name", "group", "epochs", "maximum",
    "median", "minimum", "seconds"}]}`` after every recorded epoch.
    """
    import json
    import runpy
    import types

    import numpy as np

    checkout, record, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if sys.argv[4] != "--":
        raise SystemExit("usage: checkout record out.json -- script args...")
    script, args = sys.argv[5], sys.argv[6:]
    sys.path.insert(0, checkout)
    torch.set_num_threads(1)
    np.float, np.int = float, int
    runs = []

    class _Run:
        def finish(self):
            pass

    def _init_run(**kw):
        runs.append(dict(name=kw.get("name"), group=kw.get("group"), epochs=[0], maximum=[], median=[], minimum=[], start=time.time()))
        return _Run()

    sys.modules["wandb"] = types.SimpleNamespace(init=_init_run, log=lambda *a, **k: None, Image=lambda *a, **k: None)
    sys.modules["seaborn"] = types.SimpleNamespace(heatmap=lambda *a, **k: None)
    import functions.train as ft  # the authors' module
    from utils.log_metrics import check_sparse_coding_learning  # the authors' metric

    def dump(**extra):
        Path(out).write_text(json.dumps(dict(script=script, args=args, runs=runs, **extra), indent=1))

    counter = {"epoch": 0}

    def _record(model, M, z, loss, logger, vals_to_log=None, log_weights=False):
        counter["epoch"] += 1
        if counter["epoch"] % record == 0:
            run = runs[-1]
            values = check_sparse_coding_learning(model, M)[:3]
            run["epochs"].append(counter["epoch"])
            for key, v in zip(("maximum", "median", "minimum"), values, strict=True):
                run[key].append(float(v))
            run["loss"], run["seconds"] = float(loss.detach()), time.time() - run["start"]
            dump()

    def _wrap(fn):
        def inner(model, *a, **kw):
            counter["epoch"] = 0
            for key, v in zip(("maximum", "median", "minimum"), check_sparse_coding_learning(model, kw["M"])[:3], strict=True):
                runs[-1][key].append(float(v))
            return fn(model, *a, **kw)
        return inner

    ft.log_all_metrics = _record
    ft.train, ft.alternate_train = _wrap(ft.train), _wrap(ft.alternate_train)
    sys.argv = [script, *args]
    runpy.run_path(str(Path(checkout) / script), run_name="__main__")
    dump(complete=True)


def _run_authors(checkout: Path, script: str, args: list, *, record: int, python: str, pythonpath: str | None, workdir: Path) -> dict:
    import json

    out = workdir / f"{Path(script).stem}.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    cmd = [python, "-c", "from clbook.experiments.landscape import _authors_main; _authors_main()", str(checkout), str(record),
           str(out), "--", script, *args]
    done = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the authors' {script} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


def _by_epoch(runs: list[dict], metric: str) -> tuple[list, torch.Tensor]:
    epochs = runs[0]["epochs"]
    if any(r["epochs"] != epochs for r in runs):
        raise ValueError("runs recorded at different epochs cannot be compared epoch by epoch.")
    return epochs, torch.tensor([r[metric] for r in runs], dtype=torch.float64)


FAITHFULNESS_PAIRS = {
    "contrastive": dict(script="main_simclr.py", flags=["--model", "simclr", "--temperature", "0.05", "--use_bn", "True"],
                        ours=dict(model="CL-basic", scheme="dependent")),
    "non-contrastive": dict(script="main.py", flags=["--model", "simplified", "--use_bn", "True"],
                            ours=dict(model="NCL-basic-code", scheme="independent")),
    # issue 26: the contested path, the authors' contrastive script with independent masks (MaskedSparseContrastiveDataset,
    # masks drawn per view over one noisy sample: the noise is shared by the two views, as in train()'s default)
    "contrastive-independent": dict(script="main_simclr.py", flags=["--model", "simclr", "--temperature", "0.05", "--use_bn",
                                                                    "True", "--use_masking", "True"],
                                    ours=dict(model="CL-basic", scheme="independent")),
}


def faithfulness(checkout, *, epochs: int = 200, seeds=(1, 2, 3), record: int = 10, n: int = 1000, batch: int = 500,
                 lr: float = 0.025, sparsity: float = 0.2, python: str | None = None, pythonpath: str | None = None,
                 authors_commit: str | None = None, theirs: dict | None = None, command: str | None = None,
                 kinds=("contrastive", "non-contrastive")) -> dict:
    r"""Run the authors' scripts and :func:`train` at identical settings; compare the max-cosine trajectories.

    The authors' ``main_simclr.py --model simclr --use_bn True`` (their CL-basic, with the dependent masks its
    scripts use) and ``main.py --model simplified`` (their NCL model, independent masks, no BatchNorm) run unchanged
    from ``checkout`` (a checkout of :data:`AUTHORS_REPOSITORY`, never copied into this repository) in a subprocess
    with the shims :data:`AUTHORS_SHIMS`; ``yacs`` must be importable there (``pythonpath``). Ours: CL-basic with
    ``scheme="dependent"`` and NCL-basic-code with independent masks, both with the code's ``latent="exact"`` and
    ``bias_init="uniform"``, at the same ``n``, ``batch``, ``lr``, epochs, Pr(sparse), keep probability 0.5 and
    temperature 0.05. ``batch`` 500 divides ``n`` = 1000, so the code's ``drop_last`` makes no difference.

    Tolerance, fixed before looking: at every recorded epoch and for each of the three metrics, the means over the
    seeds agree when :math:`|\Delta| \le 2\sqrt{\mathrm{se}_\text{theirs}^2 + \mathrm{se}_\text{ours}^2}` with
    :math:`\mathrm{se} = s/\sqrt{k}` over the :math:`k` seeds. The seeds are not the same draws (different generators).

    ``theirs``: an earlier result of this function (same settings) whose recorded runs of the authors' code are reused
    instead of running it again (an hour of CPU for the contrastive script); only our side is recomputed.

    ``kinds``: the pairs of :data:`FAITHFULNESS_PAIRS` to run; ``"contrastive-independent"`` is the authors'
    ``main_simclr.py --use_masking True`` (independent masks) against CL-basic with independent masks.
    """
    import json  # noqa: F401  (the subprocess results are JSON)

    checkout = Path(checkout).resolve()
    for f in ("main.py", "main_simclr.py", "functions/train.py", "utils/log_metrics.py"):
        if not (checkout / f).is_file():
            raise ValueError(f"checkout must be a checkout of {AUTHORS_REPOSITORY}; {checkout / f} is missing.")
    epochs, record = check_int("epochs", epochs, 1), check_int("record", record, 1)
    n, batch = check_int("n", n, 2), check_int("batch", batch, 2)
    lr, sparsity = check_positive("lr", lr), check_in_range("sparsity", sparsity, 1e-9, 1.0)
    seeds = [check_int("seed", s, 1) for s in seeds]
    if seeds != list(range(1, len(seeds) + 1)):
        raise ValueError(f"the authors' scripts run seeds 1..num_exp; seeds must be 1, 2, ..., k; got {seeds}.")
    if epochs % record:
        raise ValueError(f"record must divide epochs; got epochs = {epochs}, record = {record}.")
    python = python or sys.executable
    if authors_commit is None:
        got = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
        authors_commit = got.stdout.strip() if got.returncode == 0 else "unknown (not a git checkout)"
    t0 = time.perf_counter()
    theirs_given = theirs
    settings = dict(n=n, batch=batch, lr=lr, epochs=epochs, record=record, sparsity=sparsity, seeds=seeds, keep=0.5, temperature=0.05,
                    p=50, d=10, m=50)
    config = (f"nn: {n}\nnum_exp: {len(seeds)}\nNUM_EPOCHES: {epochs}\nbatch_size: {batch}\np: 50\nd: 10\nm: 50\nlr: {lr}\n"
              "has_online_ReLU: True\nhas_target_ReLU: True\nhas_target_predictor: False\nalternative_optimization: True\n"
              f"rm_predictor: True\nsigma0: 0\none_hot_latent: False\nsparsity_levels: ({sparsity},)\nmasking_probs: (0.5,)\n")
    if isinstance(kinds, str) or not kinds or any(k not in FAITHFULNESS_PAIRS for k in kinds):
        raise ValueError(f"kinds must be a non-empty list of {list(FAITHFULNESS_PAIRS)}; got kinds = {kinds!r}.")
    pairs = {k: FAITHFULNESS_PAIRS[k] for k in kinds}
    out = dict(experiment="faithfulness", settings=settings, authors=dict(repository=AUTHORS_REPOSITORY, commit=authors_commit,
                                                                          config=config, shims=list(AUTHORS_SHIMS)),
               departures=DEPARTURES, tolerance="|mean_theirs - mean_ours| <= 2 sqrt(se_theirs^2 + se_ours^2), se = sd / sqrt(seeds), "
                                                "at every recorded epoch, for each metric", models={})
    if theirs_given is not None:  # where the reused runs of the authors' code came from
        out["authors"]["runs_recorded_by"] = theirs_given.get("authors", {}).get("runs_recorded_by", theirs_given.get("provenance"))
    with tempfile.TemporaryDirectory(prefix="clbook-authors-") as tmp:
        work = Path(tmp)
        (work / "faith.yaml").write_text(config)
        for kind, spec in pairs.items():
            args = ["--cfg", str(work / "faith.yaml"), "--logDir", str(work / "log" / kind), "--normalize_repr", "True",
                    "--lr", str(lr), "--batch_size", str(batch), "--log_metrics", *spec["flags"]]
            (work / "log").mkdir(exist_ok=True)
            if theirs_given is not None:
                if theirs_given.get("settings") != settings:
                    raise ValueError("theirs was computed with other settings; run without theirs= to rerun the authors' code.")
                recorded = theirs_given["models"][kind]["theirs"]["runs"]
                theirs = dict(runs=[dict(r, seconds=r.get("seconds", 0.0)) for r in recorded])
            else:
                theirs = _run_authors(checkout, spec["script"], args, record=record, python=python, pythonpath=pythonpath,
                                      workdir=work)
            ours = train(spec["ours"]["model"], scheme=spec["ours"]["scheme"], sparsities=[sparsity], seeds=seeds, n=n, batch=batch,
                         lr=lr, epochs=epochs, record=record, latent="exact", bias_init="uniform", paired=True, dtype=torch.float32)
            ours_runs = [dict(seed=r["seed"], epochs=r["epochs"], maximum=r["maximum"], median=r["median"], minimum=r["minimum"])
                         for r in ours.rows()]
            their_runs = [dict(seed=i + 1, epochs=r["epochs"], maximum=[round(v, 4) for v in r["maximum"]],
                               median=[round(v, 4) for v in r["median"]], minimum=[round(v, 4) for v in r["minimum"]],
                               seconds=round(r.get("seconds", 0.0), 1)) for i, r in enumerate(theirs["runs"])]
            cells = []
            for metric in METRICS:
                e1, a = _by_epoch(their_runs, metric)
                e2, b = _by_epoch(ours_runs, metric)
                if e1 != e2:
                    raise RuntimeError(f"recorded epochs differ: theirs {e1}, ours {e2}.")
                k1, k2 = a.shape[0], b.shape[0]
                for j, e in enumerate(e1):
                    ma, mb = float(a[:, j].mean()), float(b[:, j].mean())
                    sa, sb = float(a[:, j].std()) / math.sqrt(k1), float(b[:, j].std()) / math.sqrt(k2)
                    tol = 2 * math.sqrt(sa ** 2 + sb ** 2)
                    cells.append(dict(metric=metric, epoch=e, theirs=round(ma, 4), ours=round(mb, 4), delta=round(mb - ma, 4),
                                      se_theirs=round(sa, 4), se_ours=round(sb, 4), tolerance=round(tol, 4), within=abs(mb - ma) <= tol))
            out["models"][kind] = dict(
                theirs=dict(script=spec["script"], args=args, runs=their_runs),
                ours=dict(model=spec["ours"]["model"], settings=ours.settings, runs=ours_runs, seconds=round(ours.seconds, 1)),
                comparison=cells, within=sum(c["within"] for c in cells), cells=len(cells))
    out["provenance"] = results.provenance(command or f"python -m clbook.experiments.landscape faithfulness --checkout {checkout}",
                                           time.perf_counter() - t0)
    return out


# ----------------------------------------------------------------------------------------------- command line


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clbook.experiments.landscape", description=__doc__.split("\n")[0])
    parser.add_argument("experiment", nargs="+", choices=[*EXPERIMENTS, "bench", "faithfulness"], metavar="EXPERIMENT",
                        help=f"one or more of {', '.join(EXPERIMENTS)} (run one after the other); or bench; or faithfulness")
    parser.add_argument("--quick", action="store_true", help="a small version (20 epochs, seeds 1-2), written under a quick- name")
    parser.add_argument("--epochs", type=runner.positive_int, default=None,
                        help="epochs (default 8000, the paper's; 1000 for pilot; 20 with --quick)")
    parser.add_argument("--models", type=runner.choice_list(MODELS), default=None, help="comma-separated model names")
    parser.add_argument("--factors", type=runner.choice_list({**ABLATIONS, **PILOT}), default=None,
                        help="ablation or pilot: comma-separated factors to run (default all)")
    parser.add_argument("--seeds", type=runner.int_list, default=None, help="comma-separated seeds (default 1-5)")
    parser.add_argument("--sparsities", type=runner.float_list, default=None, help="comma-separated Pr(sparse) (default 0.1,0.2,0.3)")
    parser.add_argument("--checkout", type=Path, default=None, help="faithfulness: a checkout of the authors' repository")
    parser.add_argument("--authors-pythonpath", default=None, help="faithfulness: a folder with yacs (pip install --target DIR yacs)")
    parser.add_argument("--reuse-authors", type=Path, default=None,
                        help="faithfulness: an earlier faithfulness.json whose runs of the authors' code are reused (only ours rerun)")
    parser.add_argument("--pairs", type=runner.choice_list(FAITHFULNESS_PAIRS), default=None,
                        help="faithfulness: which pairs to run (default contrastive,non-contrastive; contrastive-independent "
                             "is the authors' --use_masking path), written to faithfulness-<pairs>.json unless the default")
    runner.add_arguments(parser)
    args = parser.parse_args(argv)
    special = {"bench", "faithfulness"} & set(args.experiment)
    if len(set(args.experiment)) < len(args.experiment):
        parser.error("each experiment may be listed once")
    if special and len(args.experiment) > 1:
        parser.error("'bench' and 'faithfulness' stand alone")
    if args.sparsities is not None and not all(0 < s <= 1 for s in args.sparsities):
        parser.error(f"--sparsities must lie in (0, 1]; got {args.sparsities}")
    out = args.out if args.out is not None else DATA
    torch.set_num_threads(1)
    if args.experiment == ["bench"]:
        data = bench(epochs=args.epochs or (5 if args.quick else 40), repeats=2 if args.quick else 9)
        path = results.write_json(out / f"{'quick-' if args.quick else ''}bench.json", data)
        s = data["summary"]
        print(f"matmul {s['matmul_gflops_median']} GFLOP/s, contrastive step {s['step_gflops_median']} GFLOP/s, ratio "
              f"{s['ratio_median']} (range {s['ratio_range'][0]}-{s['ratio_range'][1]}, target >= {s['target']})")
        for r in data["rows"]:
            print(f"  {r['model']:15s} {r['ms_per_epoch_per_run']:8.2f} ms per epoch per run")
        print(f"wrote {path}")
        return 0
    if args.experiment == ["faithfulness"]:
        if args.checkout is None:
            parser.error("faithfulness needs --checkout PATH (a checkout of the authors' repository)")
        theirs = results.read_json(args.reuse_authors) if args.reuse_authors is not None else None
        kinds = tuple(args.pairs) if args.pairs else ("contrastive", "non-contrastive")
        data = faithfulness(args.checkout, epochs=args.epochs or 200, pythonpath=args.authors_pythonpath, theirs=theirs, kinds=kinds,
                            command=f"python -m clbook.experiments.landscape {' '.join(argv if argv is not None else sys.argv[1:])}")
        name = "faithfulness" if kinds == ("contrastive", "non-contrastive") else "faithfulness-" + "+".join(kinds)
        path = results.write_json(out / f"{name}.json", data)
        for kind, v in data["models"].items():
            print(f"{kind}: {v['within']} of {v['cells']} (epoch, metric) cells within tolerance")
        print(f"wrote {path}")
        return 0
    command = f"python -m clbook.experiments.landscape {' '.join(argv if argv is not None else sys.argv[1:])}"
    try:
        written = run(args.experiment, epochs=args.epochs, seeds=args.seeds, sparsities=args.sparsities, models=args.models,
                      factors=args.factors, quick=args.quick, out=out, workers=args.workers, backend=args.backend, scheduler=args.scheduler,
                      fresh=args.fresh, command=command)
    except ValueError as exc:
        parser.error(str(exc))
    print("wrote", ", ".join(f"{out / name}.json" for name in written))
    return 0


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: worker processes must find the jobs' function by its
    # module name (a function of __main__ is pickled by value, with the module's autograd classes, and fails there).
    from clbook.experiments.landscape import main as _main

    sys.exit(_main())
