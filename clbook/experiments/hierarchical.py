r"""Sec. 5 of Tian (2023): two-layer networks trained with InfoNCE on the hierarchical token generator.

The setting (paper, with the authors' code where the paper is silent; ``luckmatters/ssl/real-dataset/bn_gen.py``
and the README's command for the paper):

* data: :func:`clbook.data.hierarchical.make_worlds` with :math:`d = 20` tokens, :math:`K = 10` positions,
  :math:`G = 40` generators of 5 fixed positions, :math:`P` candidates per position (paper);
* network: per position :math:`M = \beta P` filters without bias, PyTorch's default initialisation, an activation,
  optionally BatchNorm over the :math:`KM` hidden units (statistics of each view's batch, with or without
  back-propagation through the mean and the variance), a top layer to ``output_dim = 50`` (code/README);
* loss: outputs ℓ2-normalised, logits :math:`z_1[i]^\top z_1[j]` with the diagonal replaced by :math:`z_1[i]^\top z_2[i]`,
  cross-entropy at temperature :math:`T = 0.1` (code), or the code's quadratic loss;
* SGD with momentum 0.9 and weight decay :math:`5\times10^{-3}` (paper), learning rate 0.02 (README; the paper says
  :math:`2\times10^{-3}`), batch 128, 5000 steps (paper).

All variants (activation, loss, BatchNorm rule) and seeds of one :math:`(\beta, P)` train together: the
parameters of every run are stacked on leading axes, runs with the same seed share their world, their
initial weights and every batch (as in the authors' code, where the seed fixes all three), and SGD, being
elementwise, updates the stack exactly as it would update each run alone. A run whose loss turns NaN keeps
its last finite weights and stops (the code does the same).

Command line: ``python -m clbook.experiments.hierarchical table1|fig4|bench [--quick]``; results with
provenance are written to ``clbook/results/hierarchical/``. Used in Chapter 10.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import platform
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .. import results
from .._validate import check_choice, check_int, check_positive
from ..data.hierarchical import make_worlds, matching_scores, sample_tokens

__all__ = [
    "Variant", "TrainResult", "train", "filter_gradients", "batchnorm", "plot_filters", "load", "summary", "plot_matching", "fig4_claims",
    "PAPER_TABLE1", "TABLE1_RULES",
    "table1", "fig4", "bench", "main", "DATA", "BN_RULES", "ACTIVATIONS",
]

DATA = results.user_dir("hierarchical")  # default --out of a rerun; the shipped results are read with results.load
ACTIVATIONS = ("relu", "linear", "leakyrelu", "quadratic")
LOSSES = ("infonce", "quadratic")
BN_RULES = {  # name: (use BatchNorm, back-propagate through the mean, through the variance)
    "none": (False, False, False),
    "neither": (True, False, False),
    "var": (True, False, True),
    "mean": (True, True, False),
    "both": (True, True, True),
}


@dataclass(frozen=True)
class Variant:
    """One network/loss choice: ``activation`` in ACTIVATIONS, ``loss`` in (infonce, quadratic), ``bn`` in BN_RULES."""

    activation: str = "relu"
    loss: str = "infonce"
    bn: str = "mean"

    def __post_init__(self):
        check_choice("activation", self.activation, ACTIVATIONS)
        check_choice("loss", self.loss, LOSSES)
        check_choice("bn", self.bn, tuple(BN_RULES))


@dataclass
class TrainResult:
    """Matching scores per variant and seed (``[V][S]`` lists), and the run's bookkeeping."""

    variants: list[Variant]
    seeds: list[int]
    settings: dict
    chi_plus: list[list[float]]
    chi_minus: list[list[float]]
    final_loss: list[list[float]]
    stopped_at: list[list[int | None]] = field(default_factory=list)
    seconds: float = 0.0
    filters: torch.Tensor | None = None
    """Final lower-layer filters ``[V, S, K, M, d]``."""
    history: list[tuple[int, list[list[float]]]] = field(default_factory=list)
    """``(step, chi_plus [V][S])`` every ``history_every`` steps (empty unless asked)."""


def _activate(h: torch.Tensor, activation: str) -> torch.Tensor:
    if activation == "relu":
        return F.relu(h)
    if activation == "leakyrelu":
        return F.leaky_relu(h, 0.05)
    if activation == "quadratic":
        return h * h
    return h


class _Stack:
    """Per-variant switches as tensors broadcastable against ``[V, S, n, ...]``."""

    def __init__(self, variants):
        self.variants = variants
        flag = lambda values: torch.tensor(values).view(-1, 1, 1, 1)  # noqa: E731
        self.use_bn = flag([BN_RULES[v.bn][0] for v in variants])
        self.through_mean = flag([BN_RULES[v.bn][1] for v in variants])
        self.through_var = flag([BN_RULES[v.bn][2] for v in variants])
        self.infonce = torch.tensor([v.loss == "infonce" for v in variants]).view(-1, 1)
        self.groups = {a: [k for k, v in enumerate(variants) if v.activation == a] for a in {v.activation for v in variants}}

    def activate(self, h):
        if len(self.groups) == 1:
            return _activate(h, next(iter(self.groups)))
        out = [None] * h.shape[0]
        for activation, members in self.groups.items():
            for k in members:
                out[k] = _activate(h[k], activation)
        return torch.stack(out)

    def batchnorm(self, y):
        mean = y.mean(dim=-2, keepdim=True)
        centred = y - torch.where(self.through_mean, mean, mean.detach())
        var = centred.square().mean(dim=-2, keepdim=True)  # biased, as BatchNorm; no gradient to the mean (it sums to 0)
        scale = (torch.where(self.through_var, var, var.detach()) + 1e-5).rsqrt()
        return torch.where(self.use_bn, centred * scale, y)


def batchnorm(y: torch.Tensor, rule: str) -> torch.Tensor:
    r"""BatchNorm of ``y [n, H]`` over its ``n`` samples with a back-propagation rule from :data:`BN_RULES`.

    The forward pass is the same for every rule but ``"none"``: :math:`(y - \mu)/\sqrt{\sigma^2 + 10^{-5}}` with the batch
    mean and (biased) variance; the rules differ in whether the gradient flows through :math:`\mu` and :math:`\sigma^2`.
    ``"mean"`` is Def. 5 of Tian (2023), mean-backprop BatchNorm.
    """
    check_choice("rule", rule, tuple(BN_RULES))
    if not isinstance(y, torch.Tensor) or y.ndim != 2 or y.shape[0] < 2:
        raise ValueError(f"y must be a tensor of shape [n >= 2, H]; got {getattr(y, 'shape', type(y).__name__)}.")
    return _Stack([Variant(bn=rule)]).batchnorm(y[None, None])[0, 0]


def plot_filters(result: TrainResult, *, variant: int = 0, seed: int = 0, field: int = 0, ax=None):
    """Heat map of the filters of one receptive field (rows: filters, columns: tokens), as in Fig. 5."""
    import matplotlib.pyplot as plt

    if result.filters is None:
        raise ValueError("result has no filters.")
    W = result.filters[variant, seed, field]
    W = W / (W.norm(dim=-1, keepdim=True) + 1e-12)
    if ax is None:
        _, ax = plt.subplots(figsize=(3.4, 2.6))
    ax.imshow(W.numpy(), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax.set_xlabel("token")
    ax.set_ylabel("filter")
    return ax


def _forward(tokens, mags, W1, W2, stack):
    r"""Token ids ``[S, n, K]`` -> ℓ2-normalised outputs ``[V, S, n, out]``.

    The inputs are one-hot embeddings scaled by ``mags``, so :math:`\mathbf w_{km}^\top\mathbf x_k` is a lookup of
    ``W1 [V, S, K, d, M]`` at the token, times its magnitude (no matrix product with zeros).
    """
    S, n, K = tokens.shape
    h = W1[:, torch.arange(S).view(S, 1, 1), torch.arange(K).view(1, 1, K), tokens] * mags[tokens].unsqueeze(-1)
    y = stack.batchnorm(stack.activate(h).reshape(*h.shape[:3], -1))
    return F.normalize(y @ W2.transpose(-1, -2), dim=-1)


def _loss(z1, z2, stack, temperature):
    """Loss per run ``[V, S]``: the authors' InfoNCE (negatives from the first view) or their quadratic loss."""
    logits = z1 @ z1.transpose(-1, -2)
    positive = (z1 * z2).sum(-1)
    logits = (logits - torch.diag_embed(logits.diagonal(dim1=-2, dim2=-1)) + torch.diag_embed(positive)) / temperature
    V, S, n, _ = logits.shape
    labels = torch.arange(n).repeat(V * S)
    ce = F.cross_entropy(logits.reshape(-1, n), labels, reduction="none").reshape(V, S, n).mean(-1)
    quadratic = -(1 + 1 / n) * logits.diagonal(dim1=-2, dim2=-1).mean(-1) + logits.mean(dim=(-2, -1))
    return torch.where(stack.infonce, ce, quadratic)


def filter_gradients(variant: Variant, W1: torch.Tensor, W2: torch.Tensor, tokens1: torch.Tensor, tokens2: torch.Tensor,
                     magnitudes: torch.Tensor, *, temperature: float = 0.1) -> torch.Tensor:
    r"""Gradient of one network's loss with respect to its filters, ``[K, M, d]`` (autograd).

    ``W1 [K, M, d]`` are the filters :math:`\mathbf w_{km}`, ``W2 [out, K*M]`` the top layer :math:`V`, ``tokens1, tokens2 [n, K]``
    a batch of positive pairs (:func:`clbook.data.hierarchical.sample_tokens`). Used to check Theorem 4 of Tian (2023):
    with linear activation and a rank-one top layer the :math:`M` rows of each receptive field are co-linear.
    """
    if not isinstance(variant, Variant):
        raise TypeError(f"variant must be a Variant; got {type(variant).__name__}.")
    if W1.ndim != 3 or W2.ndim != 2 or W2.shape[1] != W1.shape[0] * W1.shape[1]:
        raise ValueError(f"need W1 [K, M, d] and W2 [out, K*M]; got {tuple(W1.shape)} and {tuple(W2.shape)}.")
    if tokens1.shape != tokens2.shape or tokens1.ndim != 2 or tokens1.shape[1] != W1.shape[0]:
        raise ValueError(f"tokens1 and tokens2 must both have shape [n, K = {W1.shape[0]}].")
    check_positive("temperature", temperature)
    W1 = W1.detach().transpose(-1, -2)[None, None].clone().requires_grad_()
    W2 = W2.detach()[None, None]
    stack, mags = _Stack([variant]), magnitudes.to(W1.dtype)
    loss = _loss(_forward(tokens1[None], mags, W1, W2, stack), _forward(tokens2[None], mags, W1, W2, stack), stack, temperature)
    (grad,) = torch.autograd.grad(loss.sum(), W1)
    return grad[0, 0].transpose(-1, -2)


def train(variants, seeds, *, beta: int, candidates: int, zeta: float = 1.0, steps: int = 5000, batch: int = 128,
          lr: float = 0.02, momentum: float = 0.9, weight_decay: float = 5e-3, temperature: float = 0.1,
          output_dim: int = 50, num_tokens: int = 20, num_positions: int = 10, num_generators: int = 40,
          pattern_len: int = 5, dtype: torch.dtype = torch.float32, progress: bool = False,
          history_every: int = 0) -> TrainResult:
    r"""Train every ``variant`` with every seed at one :math:`(\beta, P)`, as one batched computation.

    Parameters
    ----------
    variants : sequence of Variant
    seeds : sequence of int
        Each seed fixes a world, the initial weights and the batches, shared by all variants.
    beta, candidates : int
        Over-parameterisation :math:`\beta` and candidates per position :math:`P`; :math:`M = \beta P` filters.
    zeta : float
        Token-magnitude non-uniformity (App. E.2 uses 2, 5, 10).
    history_every : int
        Record :math:`\bar\chi_+` every so many steps (0: never).
    """
    variants = list(variants)
    if not variants or not all(isinstance(v, Variant) for v in variants):
        raise TypeError("variants must be a non-empty sequence of Variant.")
    seeds = [check_int("seeds[k]", s, 0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one seed.")
    beta = check_int("beta", beta, 1)
    P = check_int("candidates", candidates, 1, num_tokens)
    steps = check_int("steps", steps, 1)
    n = check_int("batch", batch, 2)
    history_every = check_int("history_every", history_every, 0)
    for name, value in (("lr", lr), ("temperature", temperature)):
        check_positive(name, value)
    start = time.perf_counter()
    worlds = make_worlds(seeds, num_tokens=num_tokens, num_positions=num_positions, candidates_per_position=P,
                         num_generators=num_generators, pattern_len=pattern_len, zeta=zeta)
    V, S, K, d, M = len(variants), len(seeds), num_positions, num_tokens, beta * P
    W1_init, W2_init = [], []
    for seed in seeds:  # PyTorch's default nn.Linear initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        gen = torch.Generator().manual_seed(10_000 + seed)
        W1_init.append((torch.rand(K, M, d, generator=gen) * 2 - 1) / math.sqrt(d))
        W2_init.append((torch.rand(output_dim, K * M, generator=gen) * 2 - 1) / math.sqrt(K * M))
    W1 = torch.stack(W1_init).transpose(-1, -2).to(dtype).expand(V, S, K, d, M).clone().requires_grad_()
    W2 = torch.stack(W2_init).to(dtype).expand(V, S, output_dim, K * M).clone().requires_grad_()
    stack = _Stack(variants)
    mags = worlds.magnitudes.to(dtype)
    opt = torch.optim.SGD([W1, W2], lr=lr, momentum=momentum, weight_decay=weight_decay)
    alive = torch.ones(V, S, dtype=torch.bool)
    stopped: list[list[int | None]] = [[None] * S for _ in variants]
    last = torch.zeros(V, S)
    used = worlds.used_tokens()
    history = []

    def scores():
        filters = W1.detach().transpose(-1, -2)
        return [matching_scores(filters[v], used, absolute=var.activation == "linear") for v, var in enumerate(variants)]

    single = [worlds.select(s) for s in range(S)]
    data_gens = [torch.Generator().manual_seed(20_000 + seed) for seed in seeds]
    for step in tqdm(range(steps), disable=not progress, desc=f"β={beta} P={P}", leave=False):
        if history_every and step % history_every == 0:
            history.append((step, [plus.tolist() for plus, _ in scores()]))
        draws = [sample_tokens(w, n, generator=g) for w, g in zip(single, data_gens, strict=True)]
        t1, t2 = torch.cat([x[0] for x in draws]), torch.cat([x[1] for x in draws])
        opt.zero_grad(set_to_none=False)
        per_run = _loss(_forward(t1, mags, W1, W2, stack), _forward(t2, mags, W1, W2, stack), stack, temperature)
        finite = torch.isfinite(per_run.detach())
        for v, s in torch.nonzero(alive & ~finite).tolist():
            alive[v, s], stopped[v][s] = False, step
        if not alive.any():
            break
        last = torch.where(finite, per_run.detach().float(), last)
        torch.where(alive, per_run, torch.zeros_like(per_run)).sum().backward()
        frozen = None
        with torch.no_grad():
            if not alive.all():
                mask = alive.to(dtype)
                W1.grad.nan_to_num_(0.0).mul_(mask.view(V, S, 1, 1, 1))
                W2.grad.nan_to_num_(0.0).mul_(mask.view(V, S, 1, 1))
                frozen = (W1.detach().clone(), W2.detach().clone())
        opt.step()
        if frozen is not None:
            with torch.no_grad():  # stopped runs keep their weights (weight decay and momentum would still move them)
                W1[~alive], W2[~alive] = frozen[0][~alive], frozen[1][~alive]
    final = scores()
    if history_every:
        history.append((steps, [plus.tolist() for plus, _ in final]))
    chi_plus, chi_minus = [plus.tolist() for plus, _ in final], [minus.tolist() for _, minus in final]
    settings = dict(beta=beta, candidates=P, zeta=zeta, steps=steps, batch=n, lr=lr, momentum=momentum,
                    weight_decay=weight_decay, temperature=temperature, output_dim=output_dim, num_tokens=num_tokens,
                    num_positions=num_positions, num_generators=num_generators, pattern_len=pattern_len, dtype=str(dtype))
    return TrainResult(variants, seeds, settings, chi_plus, chi_minus, last.tolist(), stopped, time.perf_counter() - start,
                       W1.detach().transpose(-1, -2).clone(), history)


def digit_quadrants(*, seed: int = 0) -> torch.Tensor:
    """scikit-learn's 8×8 digits (1797 images, scaled to [0, 1]), shape ``[1797, 8, 8]`` (float64)."""
    from sklearn.datasets import load_digits

    images = torch.tensor(load_digits().images, dtype=torch.float64) / 16
    return images[torch.randperm(len(images), generator=torch.Generator().manual_seed(check_int("seed", seed, 0)))]


def _shift_views(images: torch.Tensor, index: torch.Tensor, gen: torch.Generator, augment: bool) -> torch.Tensor:
    """Images ``[n, 8, 8]``, each shifted by up to one pixel in each direction when ``augment`` (zero fill)."""
    batch = images[index]
    if not augment:
        return batch
    padded = torch.nn.functional.pad(batch, (1, 1, 1, 1))
    dx, dy = torch.randint(0, 3, (2, len(index)), generator=gen)
    rows = (torch.arange(8).view(1, 8) + dy.view(-1, 1)).unsqueeze(-1).expand(-1, 8, 8)
    cols = (torch.arange(8).view(1, 8) + dx.view(-1, 1)).unsqueeze(1).expand(-1, 8, 8)
    return padded[torch.arange(len(index)).view(-1, 1, 1), rows, cols]


def _quadrants(batch: torch.Tensor) -> torch.Tensor:
    """``[n, 8, 8]`` -> the four 4×4 quadrants as receptive fields ``[n, 4, 16]`` (upper-left, upper-right, lower-left, lower-right)."""
    n = len(batch)
    return batch.reshape(n, 2, 4, 2, 4).permute(0, 1, 3, 2, 4).reshape(n, 4, 16)


def train_digits(*, augment: bool, seeds=(1, 2, 3), filters: int = 16, steps: int = 3000, batch: int = 8, lr: float = 0.02,
                 temperature: float = 0.1, output_dim: int = 50, activation: str = "relu", bn: str = "mean") -> torch.Tensor:
    """App. E.3 on a substitute: the two-layer network on scikit-learn's 8×8 digits with four 4×4 receptive fields.

    The paper uses MNIST (14×14 quadrants, batch 8, 50 000 steps) with or without ``RandomResizedCrop``; MNIST needs a
    download, so this uses the digits that ship with scikit-learn, and random shifts by up to one pixel as the
    augmentation. Without augmentation the two views are the same image. Returns the filters ``[S, 4, M, 16]``.
    """
    seeds = [check_int("seeds[k]", s, 0) for s in seeds]
    M = check_int("filters", filters, 1)
    steps, n = check_int("steps", steps, 1), check_int("batch", batch, 2)
    variant = Variant(activation, "infonce", bn)
    stack = _Stack([variant])
    images = digit_quadrants()
    K, d = 4, 16
    W1 = torch.stack([(torch.rand(K, d, M, generator=torch.Generator().manual_seed(30_000 + s), dtype=torch.float64) * 2 - 1) / 4
                      for s in seeds])[None].requires_grad_()
    W2 = torch.stack([(torch.rand(output_dim, K * M, generator=torch.Generator().manual_seed(40_000 + s), dtype=torch.float64) * 2 - 1)
                      / math.sqrt(K * M) for s in seeds])[None].requires_grad_()
    opt = torch.optim.SGD([W1, W2], lr=lr, momentum=0.9, weight_decay=5e-3)
    gens = [torch.Generator().manual_seed(50_000 + s) for s in seeds]

    def forward(x):  # x [S, n, K, d]
        h = stack.activate(torch.einsum("snkd,vskdm->vsnkm", x, W1))
        y = stack.batchnorm(h.reshape(*h.shape[:3], -1))
        return F.normalize(y @ W2.transpose(-1, -2), dim=-1)

    for _ in range(steps):
        idx = [torch.randint(len(images), (n,), generator=g) for g in gens]
        x1 = torch.stack([_quadrants(_shift_views(images, i, g, augment)) for i, g in zip(idx, gens, strict=True)])
        x2 = torch.stack([_quadrants(_shift_views(images, i, g, augment)) for i, g in zip(idx, gens, strict=True)])
        opt.zero_grad()
        _loss(forward(x1), forward(x2), stack, temperature).sum().backward()
        opt.step()
    return W1.detach()[0].permute(0, 1, 3, 2)  # [S, K, M, d]


def roughness(filters: torch.Tensor) -> torch.Tensor:
    r"""Mean squared difference between neighbouring pixels of each 4×4 filter over its mean square (0 = constant):
    a proxy for high-frequency content. ``filters [..., 16]`` -> ``[...]``."""
    w = filters.reshape(*filters.shape[:-1], 4, 4)
    dx = (w[..., :, 1:] - w[..., :, :-1]).square().mean(dim=(-2, -1))
    dy = (w[..., 1:, :] - w[..., :-1, :]).square().mean(dim=(-2, -1))
    return (dx + dy) / w.square().mean(dim=(-2, -1)).clamp_min(1e-12)


def digits(*, quick: bool = False, seeds=(1, 2, 3)) -> dict:
    """App. E.3 substitute: filters with and without augmentation, their roughness, and the filters themselves."""
    start = time.perf_counter()
    steps = 300 if quick else 3000
    out = {}
    for augment in (False, True):
        W = train_digits(augment=augment, seeds=seeds, steps=steps)
        out["augmented" if augment else "plain"] = dict(filters=W.tolist(), roughness=roughness(W).mean(dim=(1, 2)).tolist())
    provenance = _provenance(f"digits quick={quick}", time.perf_counter() - start)
    return dict(experiment="digits", settings=dict(steps=steps, batch=8, filters=16, lr=0.02, temperature=0.1, seeds=list(seeds),
                                                   augmentation="random shift by up to 1 pixel"), results=out, provenance=provenance)


def _provenance(command: str, seconds: float) -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=DATA.parents[2]).stdout.strip()
    except OSError:
        commit = "unknown"
    return dict(command=command, commit=commit, date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                seconds=round(seconds, 1), machine=f"{platform.machine()}, {multiprocessing.cpu_count()} cores",
                python=platform.python_version(), torch=torch.__version__)


def _record(result: TrainResult) -> list[dict]:
    rows = []
    for v, variant in enumerate(result.variants):
        for s, seed in enumerate(result.seeds):
            rows.append(dict(**asdict(variant), seed=seed, beta=result.settings["beta"], candidates=result.settings["candidates"],
                             zeta=result.settings["zeta"], chi_plus=round(result.chi_plus[v][s], 4),
                             chi_minus=round(result.chi_minus[v][s], 4), final_loss=round(result.final_loss[v][s], 4),
                             stopped_at=result.stopped_at[v][s]))
    return rows


def _train_record(job):
    variants, seeds, beta, P, zeta, steps, threads = job
    torch.set_num_threads(threads)
    return _record(train(variants, seeds, beta=beta, candidates=P, zeta=zeta, steps=steps))


def _sweep(variants, *, betas, candidates, zeta, seeds, steps, desc, workers=2):
    """Every (β, P) of the grid, the largest first, on ``workers`` processes of one torch thread each."""
    grid = sorted(((b, p) for b in betas for p in candidates), key=lambda bp: -bp[0] * bp[1])
    jobs = [(variants, list(seeds), b, p, zeta, steps, 1) for b, p in grid]
    rows = []
    if workers == 1:
        for job in tqdm(jobs, desc=desc):
            rows += _train_record(job)
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            for part in tqdm(pool.map(_train_record, jobs), total=len(jobs), desc=desc):
                rows += part
    rows.sort(key=lambda r: (r["beta"], r["candidates"]))
    probe = train(variants[:1], seeds[:1], beta=1, candidates=1, zeta=zeta, steps=1)
    settings = {k: v for k, v in probe.settings.items() if k not in ("beta", "candidates", "steps")} | dict(steps=steps)
    return rows, settings


def table1(*, quick: bool = False, seeds=(1, 2, 3)) -> dict:
    """App. E.2, Table 1: ReLU, InfoNCE, ζ = 10, the four BatchNorm back-propagation rules, β, P ∈ {1,2,5,10} × {1,3,5,10}."""
    start = time.perf_counter()
    variants = [Variant("relu", "infonce", bn) for bn in ("neither", "var", "mean", "both")]
    betas, cands, steps = ((1, 5), (1, 5), 300) if quick else ((1, 2, 5, 10), (1, 3, 5, 10), 5000)
    rows, settings = _sweep(variants, betas=betas, candidates=cands, zeta=10.0, seeds=seeds, steps=steps, desc="Table 1")
    provenance = _provenance(f"table1 quick={quick}", time.perf_counter() - start)
    return dict(experiment="table1", settings=settings, rows=rows, provenance=provenance)


def fig4(*, quick: bool = False, seeds=(1, 2, 3)) -> dict:
    """Sec. 5, Fig. 4 (and App. E.2, Figs 9-10): four activations × two losses, mean-backprop BatchNorm, ζ = 1."""
    start = time.perf_counter()
    variants = [Variant(a, loss, "mean") for loss in LOSSES for a in ACTIVATIONS]
    betas, cands, steps = ((1, 5), (1, 3), 300) if quick else ((1, 2, 5, 10), (1, 3, 5, 10), 5000)
    rows, settings = _sweep(variants, betas=betas, candidates=cands, zeta=1.0, seeds=seeds, steps=steps, desc="Fig. 4")
    provenance = _provenance(f"fig4 quick={quick}", time.perf_counter() - start)
    return dict(experiment="fig4", settings=settings, rows=rows, provenance=provenance)


def load(name: str) -> dict:
    """A committed result of this module from ``clbook/results/hierarchical/<name>.json`` (``table1``, ``fig4``, ``bench``)."""
    check_choice("name", name, ("table1", "fig4", "bench", "digits", "quick-table1", "quick-fig4", "quick-bench", "quick-digits"))
    return results.load("hierarchical", name)


def summary(rows: list[dict], *, keys=("activation", "loss", "bn", "beta", "candidates"), value: str = "chi_plus") -> dict:
    """Mean and standard deviation (over seeds, ``ddof=0`` as numpy's default) of ``value`` per distinct ``keys``."""
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(float(row[value]))
    out = {}
    for key, values in groups.items():
        mean = sum(values) / len(values)
        out[key] = (mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)), len(values))
    return out


# Table 1 of Tian (2023), App. E.2, copied from the paper: chi_plus mean and std for
# (beta, P) -> [(mu no, var no), (mu no, var yes), (mu yes, var no), (mu yes, var yes)] = our bn rules neither, var, mean, both.
PAPER_TABLE1 = {
    (1, 1): [(0.31, 0.24), (0.23, 0.06), (0.30, 0.24), (0.23, 0.06)],
    (1, 3): [(0.65, 0.09), (-0.03, 0.01), (0.64, 0.07), (0.24, 0.11)],
    (1, 5): [(0.61, 0.06), (-0.00, 0.00), (0.62, 0.02), (0.38, 0.04)],
    (1, 10): [(0.66, 0.06), (0.53, 0.05), (0.70, 0.03), (0.56, 0.04)],
    (2, 1): [(0.36, 0.13), (0.27, 0.06), (0.63, 0.11), (0.33, 0.12)],
    (2, 3): [(0.78, 0.01), (0.00, 0.01), (0.80, 0.02), (0.41, 0.07)],
    (2, 5): [(0.78, 0.02), (0.22, 0.21), (0.77, 0.07), (0.56, 0.02)],
    (2, 10): [(0.83, 0.08), (0.72, 0.06), (0.80, 0.04), (0.71, 0.05)],
    (5, 1): [(0.63, 0.06), (0.43, 0.12), (0.67, 0.06), (0.46, 0.06)],
    (5, 3): [(0.90, 0.06), (0.45, 0.07), (0.90, 0.03), (0.60, 0.08)],
    (5, 5): [(0.90, 0.01), (0.72, 0.01), (0.88, 0.06), (0.74, 0.02)],
    (5, 10): [(0.88, 0.01), (0.88, 0.04), (0.92, 0.03), (0.90, 0.03)],
    (10, 1): [(0.63, 0.12), (0.37, 0.15), (0.70, 0.17), (0.46, 0.15)],
    (10, 3): [(0.95, 0.05), (0.72, 0.06), (0.94, 0.05), (0.80, 0.03)],
    (10, 5): [(0.98, 0.02), (0.84, 0.05), (0.96, 0.06), (0.92, 0.01)],
    (10, 10): [(0.90, 0.01), (0.97, 0.02), (0.89, 0.03), (0.97, 0.02)],
}
TABLE1_RULES = ("neither", "var", "mean", "both")


def plot_matching(rows: list[dict], *, loss: str = "infonce", value: str = "chi_plus", ax=None):
    """Fig. 4 / Figs 9-10: the matching score against β, one panel per P, one line per activation (mean ± std over seeds)."""
    import matplotlib.pyplot as plt

    stats = summary([r for r in rows if r["loss"] == loss], keys=("activation", "candidates", "beta"), value=value)
    cands = sorted({k[1] for k in stats})
    if ax is None:
        _, ax = plt.subplots(1, len(cands), figsize=(2.6 * len(cands), 2.6), sharey=True, squeeze=False)
        ax = ax[0]
    for a, P in zip(ax, cands, strict=True):
        for activation in ACTIVATIONS:
            pts = sorted((k[2], v) for k, v in stats.items() if k[0] == activation and k[1] == P)
            if pts:
                betas = [b for b, _ in pts]
                a.errorbar(betas, [v[0] for _, v in pts], yerr=[v[1] for _, v in pts], marker="o", ms=3, capsize=2, label=activation)
        a.set_xscale("log")
        a.set_xticks([1, 2, 5, 10], ["1", "2", "5", "10"])
        a.set_xlabel("β")
        a.set_title(f"P = {P}")
    ax[0].set_ylabel({"chi_plus": "χ̄₊", "chi_minus": "χ̄₋"}[value] + f" ({loss})")
    ax[-1].legend(fontsize=7)
    return ax


def fig4_claims(rows: list[dict]) -> dict[str, float]:
    r"""The claims of Sec. 5.1 and App. E.2 about Fig. 4 / Figs 9-10, each as a difference that is positive when it holds.

    Means over seeds of :math:`\bar\chi_+` (or :math:`\bar\chi_-`); "over-parameterised, several patterns" means the nine
    cells :math:`\beta\in\{2,5,10\}`, :math:`P\in\{3,5,10\}`.
    """
    plus = summary(rows, keys=("activation", "loss", "beta", "candidates"))
    minus = summary(rows, keys=("activation", "loss", "beta", "candidates"), value="chi_minus")
    m = lambda a, beta, P, loss="infonce", S=plus: S[a, loss, beta, P][0]  # noqa: E731
    over = [(beta, P) for beta in (2, 5, 10) for P in (3, 5, 10)]
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    gain = lambda a, P: m(a, 10, P) - m(a, 1, P)  # noqa: E731
    infonce = [(k, v[0]) for k, v in plus.items() if k[1] == "infonce"]
    chi_minus = {a: mean([m(a, *c, S=minus) for c in over]) for a in ACTIVATIONS}
    return {
        "P = 1, β = 1: linear beats ReLU": m("linear", 1, 1) - m("relu", 1, 1),
        "P = 1: ReLU gains from β = 1 to 10": gain("relu", 1),
        "P > 1, β > 1: ReLU beats linear (mean of 9 cells)": mean([m("relu", *c) - m("linear", *c) for c in over]),
        "P > 1: ReLU gains more from β = 1 to 10 than linear": mean([gain("relu", P) - gain("linear", P) for P in (3, 5, 10)]),
        "InfoNCE beats quadratic loss (mean of all cells)": mean([v - plus[a, "quadratic", beta, P][0] for (a, _, beta, P), v in infonce]),
        "ReLU has the lowest χ̄₋ (P > 1, β > 1; margin)": min(v for a, v in chi_minus.items() if a != "relu") - chi_minus["relu"],
    }


REFERENCE_MS_PER_ITERATION = 21.0
"""The authors' ``bn_gen.py`` at the README's Sec. 5 setting, one run, one thread, measured on this project's 2-core machine."""


def bench(*, steps: int = 200) -> dict:
    """Time a fixed slice (β = 5, P = 5, the four BatchNorm rules × 3 seeds = 12 runs) against the authors' 21 ms per iteration."""
    steps = check_int("steps", steps, 1)
    variants = [Variant("relu", "infonce", bn) for bn in ("neither", "var", "mean", "both")]
    train(variants, [1, 2, 3], beta=5, candidates=5, zeta=10.0, steps=5)  # warm-up
    result = train(variants, [1, 2, 3], beta=5, candidates=5, zeta=10.0, steps=steps)
    runs = len(variants) * 3
    ms = 1000 * result.seconds / steps / runs
    return dict(experiment="bench", runs=runs, steps=steps, seconds=round(result.seconds, 2),
                ms_per_iteration_per_run=round(ms, 3), reference_ms_per_iteration=REFERENCE_MS_PER_ITERATION,
                speedup=round(REFERENCE_MS_PER_ITERATION / ms, 1), provenance=_provenance(f"bench steps={steps}", result.seconds))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clbook.experiments.hierarchical", description=__doc__.split("\n")[0])
    parser.add_argument("experiment", choices=["table1", "fig4", "bench", "digits"])
    parser.add_argument("--quick", action="store_true", help="a small version (seconds), written under a quick- name")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.experiment == "bench":
        data = bench(steps=50 if args.quick else 200)
    elif args.experiment == "digits":
        data = digits(quick=args.quick)
    else:
        data = (table1 if args.experiment == "table1" else fig4)(quick=args.quick)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{'quick-' if args.quick else ''}{args.experiment}.json"
    path.write_text(json.dumps(data, indent=1))
    print(f"wrote {path} ({data['provenance']['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
