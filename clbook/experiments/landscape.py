r"""The experiments of Pokle, Tian, Li and Risteski (2022): Tables 1, 2 and 4 and the claims of Figs 4-7.

Every model of the paper's experiments is a one- or two-layer encoder trained on the sparse-coding data of
Chapter 14 (:mod:`clbook.data.sparse_coding`) and scored by the minimum / median / maximum max-cosine of
Eq. 11 (:mod:`clbook.metrics.maxcos`) of its (online) first-layer weights. Settings, and where each comes from
(the paper where it is explicit and consistent; the authors' code ``ashwinipokle/contrastive_landscape``,
``main.py`` / ``main_simclr.py``, where the paper is silent or contradicts itself):

* data (Sec. 4.2): :math:`p = 50`, :math:`d = 10`, :math:`m = 50`, :math:`N = 1000` samples (paper; the code uses
  3000), :math:`z\in\{0,\pm1\}^d` i.i.d. with :math:`\Pr(z_i=\pm1) = \beta/2` conditioned on :math:`z\ne0`
  (paper; the code draws exactly-k-sparse latents), noise std :math:`\sqrt{\log d}/d = 0.152` (code; the paper
  gives two other values);
* views: independent masks (Eq. 3) with keep probability 0.5 (paper: "masking probability 0.5"; the code's CL
  scripts fall back to the dependent masks of Eq. 2), fresh masks at every step;
* encoders: weights :math:`\mathcal N(0, 1/(pd))` (paper and code), biases 0 (paper; the code keeps PyTorch's
  default), SReLU of Eq. 14 with a trainable threshold (the code thresholds at :math:`-b`; the two coincide at the
  zero start), BatchNorm (batch statistics, trainable affine, eps :math:`10^{-5}`) where Table 2 says "BN"
  (paper; the code's ``simplified`` NCL model silently drops it: model ``"NCL-basic-code"``), outputs
  :math:`\ell_2`-normalised (paper and code);
* losses: NCL :math:`2 - 2\langle\hat h^o, \mathrm{SG}(\hat h^t)\rangle`, online and target updated alternately at
  every minibatch, each epoch starting with the online network (code; the paper says "alternating"), no EMA;
  CL: NT-Xent at :math:`T = 0.05` (code) over the :math:`2B` views, computed from the :math:`2B\times2B` Gram
  matrix only (the code materialises a :math:`2B\times2B\times m` tensor);
* optimiser: plain SGD, learning rate 0.025 (paper; the code's scripts pass 0.005), batch 512, 8000 epochs,
  the last batch of an epoch smaller (PyTorch's ``DataLoader`` default), seeds 1-5 (code).

Runs are vectorised: every (sparsity, seed) of one model trains in one stack of weights ``[R, ...]``; each run
owns a generator seeded from ``(seed, sparsity)`` that draws, in order, its data, its initial weights and, at
each epoch, its permutation and masks, so a run is bit-for-bit the same alone or in a stack (tested). Plain SGD
is elementwise, so the stacked update is each run's update.

Command line: ``python -m clbook.experiments.landscape table2|table1|table4|figures|bench [--quick]`` (two
processes of one torch thread each; progress bars); results with provenance go to ``clbook/results/landscape/``.
Used in Chapter 17.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import platform
import resource
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import torch
from tqdm.auto import tqdm

from .. import results
from .._validate import check_choice, check_in_range, check_int, check_nonnegative, check_positive
from ..config import generator as make_generator
from ..config import randint, randn
from ..data import sparse_coding as sc
from ..metrics import maxcos

__all__ = [
    "Model", "MODELS", "TrainResult", "train", "nt_xent", "ncl_loss", "simsiam_loss", "batchnorm",
    "PAPER_TABLE1", "PAPER_TABLE2", "PAPER_TABLE4", "AUTHORS_SECONDS_PER_EPOCH",
    "table2", "table1", "table4", "figures", "run", "summarise", "bench", "load", "main", "DATA", "explore_figure", "compare", "METRICS",
]

DATA = results.user_dir("landscape")  # default --out of a rerun; the shipped results are read with results.load
AUTHORS_SECONDS_PER_EPOCH = {"non-contrastive": 0.32, "contrastive": 11.5}  # measured on this machine (issue 9), 3000 samples


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

    ``u`` ``[..., n, m]``; ``gamma``, ``beta`` ``[..., m]``; biased variance, as ``torch.nn.BatchNorm1d``.
    """
    mean = u.mean(-2, keepdim=True)
    var = u.var(-2, unbiased=False, keepdim=True)
    return (u - mean) / torch.sqrt(var + eps) * gamma.unsqueeze(-2) + beta.unsqueeze(-2)


def _unit(h):
    return h / h.norm(dim=-1, keepdim=True).clamp_min(1e-12)


class _MeanLSE(torch.autograd.Function):
    r""":math:`\frac1{2B}\sum_k\log\sum_{l\ne k}e^{z_k^\top z_l/T}` for unit rows, with a hand-written backward (no 3-D tensor).

    Forward: one ``baddbmm`` writes :math:`S_{kl} = (z_k^\top z_l - 1)/T` with :math:`-\infty` on the diagonal, then
    :math:`E = e^{S}` in place and its row sums :math:`t_k`. The shift :math:`1/T` is the largest possible logit of unit
    rows, so no row maximum is needed while :math:`e^{-2/T}` stays a normal number of the dtype (otherwise the row
    maximum is subtracted). Backward: with :math:`P = \mathrm{diag}(t)^{-1}E` the row softmax,
    :math:`(P + P^\top)Z = (EZ)/t + E^\top(Z/t)`: products with the saved :math:`E` (one product with
    :math:`[Z, Z/t]` when :math:`E` is symmetric, as it is with the fixed shift), the divisions on :math:`2B\times m`
    matrices only, so :math:`P` is never formed.
    """

    @staticmethod
    def forward(ctx, Z, T):
        n, m = Z.shape[-2], Z.shape[-1]
        Z3 = Z.reshape(-1, n, m)
        fixed = 2.0 / T < (60.0 if Z.dtype == torch.float32 else 600.0)
        shift = 1.0 / T if fixed else 0.0
        base = torch.zeros(n, n, dtype=Z.dtype, device=Z.device)
        base.fill_diagonal_(-math.inf)
        base.sub_(shift)
        S = torch.baddbmm(base.expand(Z3.shape[0], n, n), Z3, Z3.transpose(-1, -2), alpha=1.0 / T)
        if not fixed:
            shift = S.amax(-1, keepdim=True)
            S.sub_(shift)
        S.exp_()
        tot = S.sum(-1, keepdim=True)
        ctx.save_for_backward(Z3, S, tot)
        ctx.T, ctx.shape, ctx.symmetric = T, Z.shape, fixed
        return (shift + tot.log()).squeeze(-1).mean(-1).reshape(Z.shape[:-2])

    @staticmethod
    def backward(ctx, grad):
        Z3, E, tot = ctx.saved_tensors
        n = Z3.shape[-2]
        if ctx.symmetric:  # E = E^T: one pass over E for both products
            m = Z3.shape[-1]
            both = E @ torch.cat([Z3, Z3 / tot], dim=-1)
            dZ = both[..., :m] / tot + both[..., m:]
        else:
            dZ = torch.baddbmm(E @ Z3 / tot, E.transpose(-1, -2), Z3 / tot)
        return (dZ.reshape(ctx.shape) * (grad / (n * ctx.T))[..., None, None]), None


def nt_xent(h1: torch.Tensor, h2: torch.Tensor, *, temperature: float = 0.05) -> torch.Tensor:
    r"""NT-Xent over the :math:`2B` views of a batch, from the :math:`2B\times2B` Gram matrix only.

    .. math::

        \ell = \frac1{2B}\sum_{k=1}^{2B}\Big[-\frac{\hat h_k^\top\hat h_{\pi(k)}}{T}
               + \log\sum_{l\ne k}e^{\hat h_k^\top\hat h_l/T}\Big]

    (the code's loss; Eq. 8 with normalised representations and :math:`\tau = 1/T`). ``h1``, ``h2``
    ``[..., B, m]``; returns ``[...]``. Memory :math:`O(B^2)` per run, never :math:`O(B^2m)`; the
    log-sum-exp term has a hand-written backward, :math:`\partial/\partial Z = (P + P^\top)Z/(2BT)` with
    :math:`P` the row softmax of the masked Gram matrix.
    """
    if h1.shape != h2.shape or h1.ndim < 2:
        raise ValueError(f"h1 and h2 must be paired representations [..., B, m] of one shape; got {list(h1.shape)}, {list(h2.shape)}.")
    T = check_positive("temperature", temperature)
    u1, u2 = _unit(h1), _unit(h2)
    lse = _MeanLSE.apply(torch.cat([u1, u2], dim=-2), T)
    return lse - (u1 * u2).sum(-1).mean(-1) / T


def ncl_loss(q: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    r"""Eqs 4 / 5 on a batch: :math:`\frac1B\sum_k\|\hat q_k - \mathrm{SG}(\hat t_k)\|^2`.

    Equals :math:`2 - \frac2B\sum_k\langle\hat q_k,\mathrm{SG}(\hat t_k)\rangle` for non-zero rows.

    ``q`` is the updated branch (after the predictor, if any), ``target`` the other branch; returns ``[...]``.
    """
    return 2 - 2 * (_unit(q) * _unit(target).detach()).sum(-1).mean(-1)


def simsiam_loss(p1, p2, z1, z2) -> torch.Tensor:
    r"""Simplified SimSiam: :math:`\tfrac12[-\cos(p_1,\mathrm{SG}z_2) - \cos(p_2,\mathrm{SG}z_1)]`, batch-averaged."""
    c1 = (_unit(p1) * _unit(z2).detach()).sum(-1).mean(-1)
    c2 = (_unit(p2) * _unit(z1).detach()).sum(-1).mean(-1)
    return -(c1 + c2) / 2


def _layer(P, k, a, model):
    u = a @ P[f"W{k}"].transpose(-1, -2)
    if model.bn:
        u = batchnorm(u, P[f"g{k}"], P[f"c{k}"])
    b = P[f"b{k}"].unsqueeze(-2)
    if model.srelu:
        return torch.relu(u - b) - torch.relu(-u - b)
    return u + b


def _encode(P, a, model):
    h = _layer(P, 0, a, model)
    return _layer(P, 1, h, model) if model.layers == 2 else h


def _head(H, h):
    return h @ H["Wh"].transpose(-1, -2) + H["bh"].unsqueeze(-2)


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
        out = []
        for r in range(len(self.sparsities) * len(self.seeds)):
            out.append(dict(model=self.model, sparsity=self.sparsities[r // len(self.seeds)], seed=self.seeds[r % len(self.seeds)],
                            start=[round(self.maximum[0][r], 4), round(self.median[0][r], 4), round(self.minimum[0][r], 4)],
                            end=[round(self.maximum[-1][r], 4), round(self.median[-1][r], 4), round(self.minimum[-1][r], 4)],
                            minimum=[round(v[r], 4) for v in self.minimum], loss=round(self.loss[r], 4)))
        return out


def _run_seed(seed: int, sparsity: float) -> int:
    return 1000 * int(seed) + int(round(1000 * sparsity))


def _init(gen, model, *, p, d, m, M, warm, aligned_idx=None):
    """One network's parameters (float64): first-layer weights random N(0, 1/(pd)) or warm (atoms + N(0, warm²))."""
    if warm is None:
        W0 = randn(m, p, generator=gen, dtype=torch.float64) / math.sqrt(p * d)
        idx = None
    else:
        idx = randint(0, d, (m,), generator=gen) if aligned_idx is None else aligned_idx
        W0 = M[:, idx].T + warm * randn(m, p, generator=gen, dtype=torch.float64)
    P = {"W0": W0, "b0": torch.zeros(m, dtype=torch.float64)}
    if model.layers == 2:
        P["W1"] = randn(m, m, generator=gen, dtype=torch.float64) / math.sqrt(p * d)
        P["b1"] = torch.zeros(m, dtype=torch.float64)
    if model.bn:
        for k in range(model.layers):
            P[f"g{k}"] = torch.ones(m, dtype=torch.float64)
            P[f"c{k}"] = torch.zeros(m, dtype=torch.float64)
    return P, idx


def _normalise(W, how):
    if how == "row":
        return W / W.norm(dim=-1, keepdim=True)
    return W / W.norm(dim=-2, keepdim=True)


def train(model: str, *, sparsities=(0.1, 0.2, 0.3), seeds=(1, 2, 3, 4, 5), p: int = 50, d: int = 10, m: int = 50, n: int = 1000,
          epochs: int = 8000, batch: int = 512, lr: float = 0.025, keep: float = 0.5, scheme: str = "independent",
          noise: float | None = None, temperature: float = 0.05, warm: float | None = None, aligned: bool = False,
          normalize: str | None = None, record: int | None = None, dtype: torch.dtype = torch.float64, progress: bool = False,
          keep_weights: bool = False) -> TrainResult:
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
        :math:`\alpha`, probability that a coordinate is kept (``1 -`` the paper's masking probability).
    scheme : str
        ``"independent"`` (Eq. 3) or ``"dependent"`` (Eq. 2) masks.
    noise : float, optional
        Noise std; default :math:`\sqrt{\log d}/d` (the code).
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
    check_choice("model", model, tuple(MODELS))
    spec = MODELS[model]
    sparsities = [check_in_range("sparsity", s, 1e-9, 1.0) for s in sparsities]
    seeds = [check_int("seed", s, 0) for s in seeds]
    if not sparsities or not seeds:
        raise ValueError("sparsities and seeds must be non-empty.")
    p, d, m, n = check_int("p", p, 1), check_int("d", d, 1), check_int("m", m, 1), check_int("n", n, 2)
    epochs, batch = check_int("epochs", epochs, 1), check_int("batch", batch, 2)
    lr, keep = check_positive("lr", lr), check_in_range("keep", keep, 0.0, 1.0)
    check_choice("scheme", scheme, sc.SCHEMES)
    noise = sc.noise_std(d, reading="code") if noise is None else check_nonnegative("noise", noise)
    temperature = check_positive("temperature", temperature)
    if warm is not None:
        warm = check_nonnegative("warm", warm)
    if normalize not in (None, "row", "column"):
        raise ValueError(f"normalize must be None, 'row' or 'column'; got normalize = {normalize!r}.")
    record = epochs if record is None else check_int("record", record, 1)
    if dtype not in (torch.float64, torch.float32):
        raise ValueError(f"dtype must be torch.float64 or torch.float32; got dtype = {dtype!r}.")
    two = spec.loss == "ncl"
    branches = ("o", "t") if two else ("o",)

    # per-run draws: data, initial weights (float64, CPU)
    gens, Ms, Xs, params = [], [], [], {br: [] for br in branches}
    heads = []
    for s in sparsities:
        for seed in seeds:
            g = make_generator(_run_seed(seed, s))
            data = sc.sample(n, p=p, d=d, sparsity=s, noise=noise, generator=g)
            Ms.append(data.M.to(torch.float64))
            Xs.append(data.X.to(torch.float64))
            idx = None
            for br in branches:
                P, idx = _init(g, spec, p=p, d=d, m=m, M=Ms[-1], warm=warm, aligned_idx=idx if aligned else None)
                params[br].append(P)
            if spec.head != "none":
                heads.append({"Wh": randn(m, m, generator=g, dtype=torch.float64) / math.sqrt(p * d),
                              "bh": torch.zeros(m, dtype=torch.float64)})
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
    start = time.perf_counter()
    for epoch in tqdm(range(1, epochs + 1), desc=model, disable=not progress, mininterval=20):
        perms, D1, D2 = [], [], []
        for g in gens:
            perms.append(torch.randperm(n, generator=g))
            d1, d2 = sc.masks((n, p), keep=keep, generator=g, scheme=scheme)
            D1.append(d1)
            D2.append(d2)
        perm = torch.stack(perms)
        A1 = (torch.stack(D1).to(dtype) * X)[rows, perm]
        A2 = (torch.stack(D2).to(dtype) * X)[rows, perm]
        total, steps = 0.0, 0
        for k, lo in enumerate(range(0, n, batch)):
            a1, a2 = A1[:, lo:lo + batch], A2[:, lo:lo + batch]
            if two:
                upd = "o" if k % 2 == 0 else "t"
                other = "t" if upd == "o" else "o"
                a_u, a_v = (a1, a2) if upd == "o" else (a2, a1)
                q = _encode(net[upd], a_u, spec)
                if spec.head == "predictor":
                    q = _head(H, q)
                with torch.no_grad():
                    target = _encode(net[other], a_v, spec)
                loss = ncl_loss(q, target)
                trainable = list(net[upd].values()) + list(H.values())
            else:
                h1, h2 = _encode(net["o"], a1, spec), _encode(net["o"], a2, spec)
                if spec.loss == "ntxent":
                    if spec.head == "projector":
                        h1, h2 = _head(H, h1), _head(H, h2)
                    loss = nt_xent(h1, h2, temperature=temperature)
                else:
                    loss = simsiam_loss(_head(H, h1), _head(H, h2), h1, h2)
                upd = "o"
                trainable = list(net["o"].values()) + list(H.values())
            grads = torch.autograd.grad(loss.sum(), trainable)
            with torch.no_grad():
                for t, gr in zip(trainable, grads, strict=True):
                    t.sub_(lr * gr)
                if normalize is not None:
                    net[upd]["W0"].copy_(_normalise(net[upd]["W0"], normalize))
            total = total + loss.detach().to(torch.float64)
            steps += 1
        last_loss = total / steps
        if epoch % record == 0 or epoch == epochs:
            if rec_epochs[-1] != epoch:
                rec_epochs.append(epoch)
                for store, v in zip((mx, md, mn), summary(), strict=True):
                    store.append(v)
    seconds = time.perf_counter() - start
    settings = dict(p=p, d=d, m=m, n=n, epochs=epochs, batch=batch, lr=lr, keep=keep, scheme=scheme, noise=round(noise, 6),
                    temperature=temperature, warm=warm, aligned=aligned, normalize=normalize, dtype=str(dtype).replace("torch.", ""),
                    model=asdict(spec))
    W = net["o"]["W0"].detach().to(torch.float64) if keep_weights else None
    return TrainResult(model=model, sparsities=list(sparsities), seeds=list(seeds), epochs=rec_epochs, maximum=mx, median=md,
                       minimum=mn, loss=last_loss.tolist(), seconds=seconds, settings=settings, W=W)


# ----------------------------------------------------------------------------------------------- experiments


def _provenance(command: str, seconds: float) -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=DATA.parents[2]).stdout.strip()
    except OSError:
        commit = "unknown"
    return dict(command=command, commit=commit, date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                seconds=round(seconds, 1), machine=f"{platform.machine()}, {multiprocessing.cpu_count()} cores, {platform.node()}",
                python=platform.python_version(), torch=torch.__version__)


def _jobs(experiment: str, *, quick: bool, epochs: int | None, seeds, models=None, sparsities=None,
          scheme: str | None = None) -> list[tuple[str, str, dict]]:
    """(tag, model, keyword arguments of :func:`train`) for every job of an experiment; tags are unique within it."""
    E = epochs if epochs is not None else (100 if quick else 8000)
    seeds = list(seeds) if seeds is not None else ([1, 2] if quick else [1, 2, 3, 4, 5])
    betas = list(sparsities) if sparsities else [0.1, 0.2, 0.3]
    base = dict(epochs=E, seeds=seeds, sparsities=betas, record=max(E // 20, 1))
    if scheme is not None:  # e.g. the dependent masks of the code's contrastive scripts (Chapter 17's diagnostic)
        base["scheme"] = check_choice("scheme", scheme, sc.SCHEMES)
    if experiment == "table2":
        names = models or ("CL-basic", "CL-linear", "NCL-basic", "NCL-basic-2L", "NCL-linear", "NCL-basic-code")
        return [(name, name, base) for name in names]
    if experiment == "table1":  # "diagonal entries in random masks from Bernoulli(0.1)" (Table 1 caption): keep 0.1
        return [(name, name, base | dict(keep=0.1)) for name in ("SimCLR", "SimSiam")]
    if experiment == "table4":
        return [(f"warm={s}", "NCL-basic", base | dict(warm=s)) for s in (0.14, 0.02, 0.002)]
    if experiment == "figures":  # Figs 4-7 at Pr(sparse) = 0.2 (3 runs in the paper), plus this book's alignment ablation
        f = dict(epochs=E, seeds=seeds[:3], sparsities=[0.2], record=max(E // 40, 1))
        c1, c2 = 50 ** -0.5, 50 ** -1.0
        return [("fig4 warm c=1", "NCL-basic", f | dict(warm=c1)),
                ("fig5 warm c=1 + predictor", "NCL-pred", f | dict(warm=c1)),
                ("fig6 random + predictor", "NCL-pred", f),
                ("fig7 warm c=2 + row norm, keep 0.1", "NCL-basic", f | dict(warm=c2, normalize="row", keep=0.1)),
                ("fig16 warm c=2 + column norm, keep 0.25", "NCL-basic", f | dict(warm=c2, normalize="column", keep=0.25)),
                ("warm c=2", "NCL-basic", f | dict(warm=c2)),
                ("warm c=2 aligned", "NCL-basic", f | dict(warm=c2, aligned=True)),
                ("warm c=1 aligned", "NCL-basic", f | dict(warm=c1, aligned=True))]
    raise ValueError(f"experiment must be table1, table2, table4 or figures; got {experiment!r}.")


def _cost(model: str, kw: dict) -> float:
    return kw["epochs"] * len(kw["seeds"]) * len(kw["sparsities"]) * (6.0 if MODELS[model].loss == "ntxent" else 1.0)


def _run_job(job):
    experiment, tag, model, kw, dtype = job
    torch.set_num_threads(1)
    res = train(model, dtype=getattr(torch, dtype), progress=True, **kw)
    return experiment, tag, res.rows(), res.settings, round(res.seconds, 1)


def run(experiments, *, quick: bool = False, epochs: int | None = None, seeds=None, workers: int = 2, dtype: str = "float32",
        out: Path = DATA, models=None, name: str | None = None, sparsities=None, scheme: str | None = None) -> dict:
    """Run the jobs of ``experiments`` (largest first) on ``workers`` processes of one thread each; write one JSON per experiment."""
    workers = check_int("workers", workers, 1, 2)
    check_choice("dtype", dtype, ("float32", "float64"))
    jobs = [(e, tag, model, kw, dtype) for e in experiments
            for tag, model, kw in _jobs(e, quick=quick, epochs=epochs, seeds=seeds, models=models, sparsities=sparsities, scheme=scheme)]
    jobs.sort(key=lambda j: -_cost(j[2], j[3]))
    start = time.perf_counter()
    done = {e: [] for e in experiments}
    if workers == 1:
        results = map(_run_job, jobs)
    else:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        results = pool.map(_run_job, jobs)
    out.mkdir(parents=True, exist_ok=True)
    # the commit and date of the start: the code that runs is the code of this moment, whatever is committed meanwhile
    provenance = _provenance(f"python -m clbook.experiments.landscape {' '.join(sys.argv[1:])}", 0.0)

    def write(complete: bool) -> dict:
        # Written after every finished job too (``complete`` false), so a run that is stopped keeps what it finished.
        written = {}
        for e in experiments:
            data = dict(experiment=e, quick=quick, epochs=epochs, complete=complete, jobs=done[e],
                        provenance=provenance | dict(seconds=round(time.perf_counter() - start, 1)))
            path = out / f"{'quick-' if quick else ''}{name or e}.json"
            path.write_text(json.dumps(data, indent=1))
            written[e] = str(path)
        return written

    for e, tag, rows, settings, seconds in tqdm(results, total=len(jobs), desc="jobs"):
        done[e].append(dict(tag=tag, settings=settings, seconds=seconds, rows=rows))
        write(complete=False)
    if workers > 1:
        pool.shutdown()
    return write(complete=True)


def table2(**kw) -> dict:
    """Table 2 (App. A.2.1): five models × Pr(sparse) ∈ {0.1, 0.2, 0.3} × 5 seeds, plus the code's BN-less NCL-basic."""
    return run(["table2"], **kw)


def table1(**kw) -> dict:
    """Table 1: Simplified-SimCLR and Simplified-SimSiam, keep probability 0.1 (the caption's Bernoulli(0.1))."""
    return run(["table1"], **kw)


def table4(**kw) -> dict:
    """Table 4 (App. B.1.4): NCL-basic from warm starts with σ ∈ {0.14, 0.02, 0.002}."""
    return run(["table4"], **kw)


def figures(**kw) -> dict:
    """The claims of Figs 4-7 and 16 at Pr(sparse) = 0.2, 3 seeds, and the aligned-warm-start ablation."""
    return run(["figures"], **kw)


def load(name: str) -> dict:
    """The stored result ``clbook/results/landscape/<name>.json`` (``table1``, ``table2``, ``table4``, ``figures``, ``bench``)."""
    names = ("table1", "table2", "table4", "figures", "bench", "table2-dependent", "table2-dependent-ncl")
    check_choice("name", name, tuple(f"{q}{e}" for q in ("", "quick-") for e in names))
    return results.load("landscape", name)


def summarise(rows: list[dict], *, where: str = "end") -> dict:
    """Mean and sample standard deviation over seeds of (max, median, min) for each sparsity: ``{sparsity: [(mean, sd)] * 3}``."""
    check_choice("where", where, ("start", "end"))
    out = {}
    for s in sorted({r["sparsity"] for r in rows}):
        vals = torch.tensor([r[where] for r in rows if r["sparsity"] == s], dtype=torch.float64)
        sd = vals.std(0) if len(vals) > 1 else torch.zeros(3, dtype=torch.float64)
        out[s] = [(float(a), float(b)) for a, b in zip(vals.mean(0), sd, strict=True)]
    return out


def bench(*, epochs: int = 200, seeds=(1, 2, 3, 4, 5), sparsity: float = 0.2, dtype: str = "float32") -> dict:
    """Seconds per epoch per seed of every Table 2 model (one process, one thread) at one sparsity, and the peak memory.

    Compared with the authors' code timed on this machine at the paper's settings (3000 samples, batch 512):
    0.32 s per epoch (non-contrastive) and 11-12 s per epoch (contrastive). Our epochs have 1000 samples (the paper's
    N); the ratio per sample is reported too.
    """
    epochs = check_int("epochs", epochs, 1)
    torch.set_num_threads(1)
    rows = []
    t0 = time.perf_counter()
    for name in ("NCL-linear", "CL-linear", "NCL-basic", "NCL-basic-2L", "CL-basic"):
        train(name, sparsities=[sparsity], seeds=list(seeds)[:1], epochs=2, dtype=getattr(torch, dtype))  # warm-up
        res = train(name, sparsities=[sparsity], seeds=list(seeds), epochs=epochs, dtype=getattr(torch, dtype))
        per = res.seconds / epochs / len(seeds)
        ref = AUTHORS_SECONDS_PER_EPOCH["contrastive" if MODELS[name].loss == "ntxent" else "non-contrastive"]
        rows.append(dict(model=name, seconds=round(res.seconds, 2), seconds_per_epoch_per_seed=round(per, 5),
                         authors_seconds_per_epoch=ref, speedup_per_epoch=round(ref / per, 1),
                         speedup_per_sample=round(ref / 3 / per, 1)))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    full = sum(r["seconds_per_epoch_per_seed"] for r in rows) * 8000 * 15
    return dict(experiment="bench", epochs=epochs, seeds=list(seeds), sparsity=sparsity, dtype=dtype, rows=rows,
                peak_memory_mb=round(peak_mb, 1), table2_cpu_seconds_estimate=round(full),
                table2_wall_seconds_estimate_2_processes=round(full / 2),
                provenance=_provenance(f"python -m clbook.experiments.landscape bench (epochs={epochs})", time.perf_counter() - t0))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clbook.experiments.landscape", description=__doc__.split("\n")[0])
    parser.add_argument("experiment", nargs="+", choices=["table2", "table1", "table4", "figures", "all", "bench"],
                        help="one or more of table2, table1, table4, figures (run in one pool of workers), or all, or bench")
    parser.add_argument("--quick", action="store_true", help="a small version (100 epochs, 2 seeds), written under a quick- name")
    parser.add_argument("--epochs", type=int, default=None, help="epochs (default 8000, the paper's; 100 with --quick)")
    parser.add_argument("--workers", type=int, default=2, help="processes of one torch thread each (1 or 2)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--models", default=None, help="table2 only: comma-separated model names")
    parser.add_argument("--seeds", default=None, help="comma-separated seeds (default 1-5)")
    parser.add_argument("--sparsities", default=None, help="comma-separated Pr(sparse) values (default 0.1,0.2,0.3)")
    parser.add_argument("--scheme", default=None, choices=sc.SCHEMES,
                        help="masks of every job (default: each experiment's own, independent)")
    parser.add_argument("--name", default=None, help="output name (default: the experiment's)")
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    models = args.models.split(",") if args.models else None
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    torch.set_num_threads(1)
    if len(args.experiment) > 1 and ({"all", "bench"} & set(args.experiment) or len(set(args.experiment)) < len(args.experiment)):
        parser.error("'all' and 'bench' stand alone; other experiments may be listed once each")
    if args.name and len(args.experiment) > 1:
        parser.error("--name needs a single experiment")
    if args.experiment == ["bench"]:
        data = bench(epochs=args.epochs or (20 if args.quick else 200), dtype=args.dtype)
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"{'quick-' if args.quick else ''}bench.json"
        path.write_text(json.dumps(data, indent=1))
        print(json.dumps(data["rows"], indent=1), f"\npeak {data['peak_memory_mb']} MB; wrote {path}")
        return 0
    experiments = ["table2", "table1", "table4", "figures"] if args.experiment == ["all"] else args.experiment
    written = run(experiments, quick=args.quick, epochs=args.epochs, seeds=seeds, workers=args.workers, dtype=args.dtype, out=args.out,
                  models=models, name=args.name, sparsities=[float(b) for b in args.sparsities.split(",")] if args.sparsities else None,
                  scheme=args.scheme)
    print("wrote", written)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def explore_figure(model: str = "NCL-basic", sparsity: float = 0.2, warm_c: float = 0.0, aligned: bool = False, normalize: str = "none",
                   keep: float = 0.5, epochs: int = 150, seed: int = 1):
    """Panel of Chapter 17: one small run (p = 30, d = 6, m = 30, 256 samples, batch 128, lr 0.1), max-cosines against epochs.

    ``warm_c`` = 0 starts at random, otherwise from the warm start with :math:`\\sigma = p^{-c/2}`; the dashed line
    is the chance level of a random :math:`W` (:func:`clbook.metrics.maxcos.chance_level`). Returns a Figure.
    """
    from .. import viz

    check_nonnegative("warm_c", warm_c)
    check_choice("normalize", normalize, ("none", "row", "column"))
    p, d, m = 30, 6, 30
    res = train(model, sparsities=[sparsity], seeds=[seed], p=p, d=d, m=m, n=256, batch=128, epochs=epochs, lr=0.1, keep=keep,
                warm=p ** (-warm_c / 2) if warm_c > 0 else None, aligned=aligned, normalize=None if normalize == "none" else normalize,
                record=max(epochs // 15, 1))
    fig, ax = viz.figure(width=5.6, height=3.2)
    for key, values in (("maximum", res.maximum), ("median", res.median), ("minimum", res.minimum)):
        ax.plot(res.epochs, [v[0] for v in values], marker="o", ms=3, label=key)
    ax.axhline(maxcos.chance_level(p, d, m).minimum, color="0.5", ls="--", lw=0.8, label="chance (min)")
    ax.set(xlabel="epoch", ylabel="max-cosine", ylim=(0, 1.02),
           title=f"{model}, Pr(sparse) = {sparsity}, {'warm c = ' + str(warm_c) if warm_c > 0 else 'random init'}")
    ax.legend(fontsize=7, loc="lower right")
    return fig


METRICS = ("maximum", "median", "minimum")


def compare(paper: dict, ours: dict, *, n_paper: int = 5, n_ours: int = 5, margin: float = 0.05) -> list[dict]:
    r"""Cell-by-cell comparison of a table of the paper with ours.

    ``paper`` and ``ours`` map a row key to three ``(mean, sd)`` pairs (max, median, min). A cell *differs beyond
    noise* when :math:`|\Delta| > \max(\text{margin}, 2\,\mathrm{SE})` with
    :math:`\mathrm{SE} = \sqrt{s_p^2/n_p + s_o^2/n_o}` (the standard error of a difference of two means).
    Returns one dict per cell: ``key``, ``metric``, ``paper``, ``paper_sd``, ``ours``, ``ours_sd``, ``delta``, ``se``, ``differs``.
    """
    check_nonnegative("margin", margin)
    n_paper, n_ours = check_int("n_paper", n_paper, 1), check_int("n_ours", n_ours, 1)
    out = []
    for key in paper:
        if key not in ours:
            raise ValueError(f"ours has no row {key!r}; it has {sorted(ours, key=str)}.")
        for k, metric in enumerate(METRICS):
            (pm, ps), (om, osd) = paper[key][k], ours[key][k]
            se = math.sqrt(ps ** 2 / n_paper + osd ** 2 / n_ours)
            delta = om - pm
            out.append(dict(key=key, metric=metric, paper=pm, paper_sd=ps, ours=om, ours_sd=osd, delta=delta, se=se,
                            differs=abs(delta) > max(margin, 2 * se)))
    return out
