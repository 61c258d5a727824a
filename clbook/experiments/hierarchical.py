r"""Sec. 5 of Tian (2023): two-layer networks trained with InfoNCE on the hierarchical token generator.

The setting (paper, with the authors' code where the paper is silent; ``luckmatters/ssl/real-dataset/bn_gen.py``
and the README's command for the paper):

* data: :func:`clbook.data.hierarchical.make_worlds` with :math:`d = 20` tokens, :math:`K = 10` positions,
  :math:`G = 40` generators of 5 fixed positions, :math:`P` candidates per position (paper);
* network: per position :math:`M = \beta P` filters without bias, PyTorch's default initialisation, an activation,
  optionally BatchNorm over the :math:`KM` hidden units (statistics of each view's batch, with or without
  back-propagation through the mean and the variance), a top layer to ``output_dim = 50`` (code/README);
* loss: outputs ℓ2-normalised, the authors' InfoNCE (:func:`infonce_loss`; not SimCLR's NT-Xent of
  :mod:`clbook.losses.ntxent`, see there) at temperature :math:`T = 0.1` (code), or the code's quadratic loss;
* SGD with momentum 0.9 and weight decay :math:`5\times10^{-3}` (paper), learning rate 0.02 (README; the paper says
  :math:`2\times10^{-3}`), batch 128, 5000 steps (paper).

All variants (activation, loss, BatchNorm rule) and seeds of one :math:`(\beta, P)` train together: the
parameters of every run are stacked on leading axes, runs with the same seed share their world, their
initial weights and every batch (as in the authors' code, where the seed fixes all three), and SGD, being
elementwise, updates the stack exactly as it would update each run alone. A run whose loss turns NaN keeps
its last finite weights and stops (the code does the same). Random numbers are drawn on the CPU in float32 from
generators seeded with the run's seed (independent of torch's default dtype), then moved to ``device``.

Experiments (one job of :mod:`clbook.experiments.runner` per cell): ``table1`` (App. E.2, Table 1), ``fig4``
(Sec. 5, Fig. 4 and App. E.2, Figs 9-10), ``digits`` (App. E.3 on a substitute) and ``bench``. Command line::

    python -m clbook.experiments.hierarchical table1 [--quick]
        [--seeds 1,2,3] [--betas 1,2] [--candidates 1,3] [--out DIR]
        [--workers 2] [--backend local|dask] [--scheduler ADDRESS]
        [--fresh] [--threads 1]

The stored results ship in ``clbook/results/hierarchical/`` (read with :func:`load`; :func:`rows` flattens a table).
Used in Chapter 10; its figures are in :mod:`clbook.viz.hierarchical`.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .. import activations, config, results
from .._validate import check_choice, check_int, check_positive
from ..data.hierarchical import make_worlds, matching_scores, sample_tokens
from . import runner

__all__ = [
    "Variant", "TrainResult", "train", "infonce_loss", "filter_gradients", "batchnorm", "load", "rows", "summary",
    "fig4_claims", "PAPER_TABLE1", "TABLE1_RULES", "EXPERIMENTS", "jobs", "run", "train_cell", "digits_cell", "bench_cell",
    "digit_quadrants", "train_digits", "roughness", "main", "BN_RULES", "ACTIVATIONS",
]

# the independent random streams of one seed's runs (clbook.config.stream): initial weights and batches of the
# token worlds, and the digits run's two layers and batches
STREAMS = {"init": 10_000, "batches": 20_000, "digits_lower": 30_000, "digits_upper": 40_000, "digits_batches": 50_000}
ACTIVATIONS = activations.supported("relu", "linear", "leakyrelu", "quadratic")
LOSSES = ("infonce", "quadratic")
BN_RULES = {  # name: (use BatchNorm, back-propagate through the mean, through the variance)
    "none": (False, False, False),
    "neither": (True, False, False),
    "var": (True, False, True),
    "mean": (True, True, False),
    "both": (True, True, True),
}
EXPERIMENTS = ("table1", "fig4", "digits", "bench")
GRID = (1, 2, 5, 10), (1, 3, 5, 10)
"""The paper's :math:`\\beta` and :math:`P` values (Fig. 4 and Table 1)."""


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
    """The registry's activation (:mod:`clbook.activations`; the code's ``leakyrelu`` is ``leaky_relu``, slope 0.05)."""
    return activations.apply_unchecked(h, activation)


class _Stack:
    """Per-variant switches as tensors broadcastable against ``[V, S, n, ...]``."""

    def __init__(self, variants, device=None):
        self.variants = variants
        flag = lambda values: torch.tensor(values, device=device).view(-1, 1, 1, 1)  # noqa: E731
        self.use_bn = flag([BN_RULES[v.bn][0] for v in variants])
        self.through_mean = flag([BN_RULES[v.bn][1] for v in variants])
        self.through_var = flag([BN_RULES[v.bn][2] for v in variants])
        self.infonce = torch.tensor([v.loss == "infonce" for v in variants], device=device).view(-1, 1)
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


def _forward(tokens, mags, W1, W2, stack, normalize: bool = True):
    r"""Token ids ``[S, n, K]`` -> outputs ``[V, S, n, out]``, ℓ2-normalised unless ``normalize=False``.

    The inputs are one-hot embeddings scaled by ``mags``, so :math:`\mathbf w_{km}^\top\mathbf x_k` is a lookup of
    ``W1 [V, S, K, d, M]`` at the token, times its magnitude (no matrix product with zeros).
    """
    S, n, K = tokens.shape
    dev = W1.device
    h = W1[:, torch.arange(S, device=dev).view(S, 1, 1), torch.arange(K, device=dev).view(1, 1, K), tokens] \
        * mags[tokens].unsqueeze(-1)
    y = stack.batchnorm(stack.activate(h).reshape(*h.shape[:3], -1)) @ W2.transpose(-1, -2)
    return F.normalize(y, dim=-1) if normalize else y


def _logits(z1, z2, temperature):
    r"""The authors' logits ``[..., n, n]``: :math:`z_1[i]^\top z_1[j]/T`, diagonal replaced by :math:`z_1[i]^\top z_2[i]/T`."""
    logits = z1 @ z1.transpose(-1, -2)
    positive = (z1 * z2).sum(-1)
    return (logits - torch.diag_embed(logits.diagonal(dim1=-2, dim2=-1)) + torch.diag_embed(positive)) / temperature


def _cross_entropy(logits):
    lead, n = logits.shape[:-2], logits.shape[-1]
    labels = torch.arange(n, device=logits.device).repeat(math.prod(lead))
    return F.cross_entropy(logits.reshape(-1, n), labels, reduction="none").reshape(*lead, n).mean(-1)


def infonce_loss(z1: torch.Tensor, z2: torch.Tensor, *, temperature: float = 0.1) -> torch.Tensor:
    r"""The authors' InfoNCE of Sec. 5 (``bn_gen.py``), per run: ``z1, z2 [..., n, m]`` -> ``[...]``.

    .. math::

        \ell = \frac1n\sum_{i=1}^n\Big[-\frac{z_1[i]^\top z_2[i]}{T}
               + \log\Big(e^{z_1[i]^\top z_2[i]/T} + \sum_{j\ne i}e^{z_1[i]^\top z_1[j]/T}\Big)\Big]:

    the logits :math:`z_1[i]^\top z_1[j]` with the diagonal replaced by the positive :math:`z_1[i]^\top z_2[i]`,
    cross-entropy with the diagonal as the label. Anchors and negatives come from the **first view only**, and the
    positive is in the denominator. It is therefore *not* SimCLR's NT-Xent (:func:`clbook.losses.nt_xent`: :math:`2n`
    anchors, negatives from both views, the positive in the denominator of every anchor); it is Tian (2023)'s Eq. 1
    with :math:`\epsilon = 1`: for unit rows, :func:`clbook.losses.infonce_reference` ``(z1, z2, temperature=T,
    eps=1) / (nT)`` (a unit test checks both statements). The book normalises the outputs first, as the code does.

    Parameters
    ----------
    z1, z2 : torch.Tensor, shape=[..., n, m]
        Outputs on the first and second views, ``n >= 2``, one shape and dtype.
    temperature : float
        :math:`T > 0`.
    """
    T = check_positive("temperature", temperature)
    if not isinstance(z1, torch.Tensor) or not isinstance(z2, torch.Tensor) or z1.shape != z2.shape or z1.ndim < 2:
        raise ValueError(f"z1 and z2 must be tensors [..., n, m] of one shape; got {getattr(z1, 'shape', z1)} and "
                         f"{getattr(z2, 'shape', z2)}.")
    if z1.shape[-2] < 2 or not z1.is_floating_point() or z1.dtype != z2.dtype:
        raise ValueError(f"z1 and z2 must be floating point of one dtype with n >= 2 samples; got n = {z1.shape[-2]}, "
                         f"dtypes {z1.dtype} and {z2.dtype}.")
    return _cross_entropy(_logits(z1, z2, T))


def _loss(z1, z2, stack, temperature):
    """Loss per run ``[V, S]``: :func:`infonce_loss`, or the authors' quadratic loss, by variant."""
    logits = _logits(z1, z2, temperature)
    n = logits.shape[-1]
    quadratic = -(1 + 1 / n) * logits.diagonal(dim1=-2, dim2=-1).mean(-1) + logits.mean(dim=(-2, -1))
    return torch.where(stack.infonce, _cross_entropy(logits), quadratic)


def batchnorm(y: torch.Tensor, rule: str) -> torch.Tensor:
    r"""BatchNorm of ``y [n, H]`` over its ``n`` samples with a back-propagation rule from :data:`BN_RULES`.

    The forward pass is the same for every rule but ``"none"``: :math:`(y - \mu)/\sqrt{\sigma^2 + 10^{-5}}` with the batch
    mean and (biased) variance; the rules differ in whether the gradient flows through :math:`\mu` and :math:`\sigma^2`.
    ``"mean"`` is Def. 5 of Tian (2023), mean-backprop BatchNorm.
    """
    check_choice("rule", rule, tuple(BN_RULES))
    if not isinstance(y, torch.Tensor) or y.ndim != 2 or y.shape[0] < 2:
        raise ValueError(f"y must be a tensor of shape [n >= 2, H]; got {getattr(y, 'shape', type(y).__name__)}.")
    if not y.is_floating_point() or not bool(torch.isfinite(y.detach()).all()):
        raise ValueError("y must be a finite floating-point tensor.")
    return _Stack([Variant(bn=rule)], y.device).batchnorm(y[None, None])[0, 0]


def filter_gradients(variant: Variant, W1: torch.Tensor, W2: torch.Tensor, tokens1: torch.Tensor, tokens2: torch.Tensor,
                     magnitudes: torch.Tensor, *, temperature: float = 0.1, normalize: bool = True) -> torch.Tensor:
    r"""Gradient of one network's loss with respect to its filters, ``[K, M, d]`` (autograd).

    ``W1 [K, M, d]`` are the filters :math:`\mathbf w_{km}`, ``W2 [out, K*M]`` the top layer :math:`V`, ``tokens1, tokens2
    [n, K]`` (integers in ``[0, d)``, ``n >= 2``) a batch of positive pairs (:func:`clbook.data.hierarchical.sample_tokens`)
    and ``magnitudes [d]`` the token magnitudes. Used to check Theorem 4 of Tian (2023): with linear activation and a
    rank-one top layer the :math:`M` rows of each receptive field are co-linear.

    ``normalize=False`` drops the ℓ2 normalisation of the outputs. With it, a rank-one ``W2 = v s^T`` maps every input
    to :math:`\pm v/\|v\|`: the loss then depends only on signs and its gradient is zero (autograd returns rounding
    noise), so Theorem 4 is checked on the unnormalised outputs.
    """
    if not isinstance(variant, Variant):
        raise TypeError(f"variant must be a Variant; got {type(variant).__name__}.")
    for name, t in (("W1", W1), ("W2", W2), ("magnitudes", magnitudes)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor; got {type(t).__name__}.")
    if W1.ndim != 3 or W2.ndim != 2 or W2.shape[1] != W1.shape[0] * W1.shape[1]:
        raise ValueError(f"need W1 [K, M, d] and W2 [out, K*M]; got W1 of shape {tuple(W1.shape)} and W2 of shape {tuple(W2.shape)}.")
    if magnitudes.shape != (W1.shape[2],):
        raise ValueError(f"magnitudes must hold d = {W1.shape[2]} values; got shape {tuple(magnitudes.shape)}.")
    if not isinstance(tokens1, torch.Tensor) or not isinstance(tokens2, torch.Tensor) or tokens1.shape != tokens2.shape \
            or tokens1.ndim != 2 or tokens1.shape[1] != W1.shape[0] or tokens1.shape[0] < 2:
        raise ValueError(f"tokens1 and tokens2 must both be tensors of shape [n >= 2, K = {W1.shape[0]}].")
    if tokens1.dtype != torch.long or tokens2.dtype != torch.long or int(tokens1.min()) < 0 or int(tokens2.min()) < 0 \
            or int(tokens1.max()) >= W1.shape[2] or int(tokens2.max()) >= W1.shape[2]:
        raise ValueError(f"tokens1 and tokens2 must hold token ids (torch.long) in [0, {W1.shape[2]}).")
    T = check_positive("temperature", temperature)
    dev = W1.device
    W1 = W1.detach().transpose(-1, -2)[None, None].clone().requires_grad_()
    W2 = W2.detach().to(W1)[None, None]
    stack, mags = _Stack([variant], dev), magnitudes.to(W1)
    t1, t2 = tokens1.to(dev)[None], tokens2.to(dev)[None]
    loss = _loss(_forward(t1, mags, W1, W2, stack, normalize), _forward(t2, mags, W1, W2, stack, normalize), stack, T)
    (grad,) = torch.autograd.grad(loss.sum(), W1)
    return grad[0, 0].transpose(-1, -2)


def _check_train(variants, seeds, *, beta, candidates, steps, batch, history_every, lr, temperature, zeta, output_dim, num_tokens):
    """:func:`train`'s argument checks; returns ``(variants, seeds, beta, P, steps, batch, history_every)``, checked."""
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
    for name, value in (("lr", lr), ("temperature", temperature), ("zeta", zeta)):
        check_positive(name, value)
    check_int("output_dim", output_dim, 1)
    return variants, seeds, beta, P, steps, n, history_every


def train(variants, seeds, *, beta: int, candidates: int, zeta: float = 1.0, steps: int = 5000, batch: int = 128,
          lr: float = 0.02, momentum: float = 0.9, weight_decay: float = 5e-3, temperature: float = 0.1,
          output_dim: int = 50, num_tokens: int = 20, num_positions: int = 10, num_generators: int = 40,
          pattern_len: int = 5, dtype: torch.dtype = torch.float32, progress: bool = False,
          history_every: int = 0, device=None) -> TrainResult:
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
    dtype : torch.float32 or torch.float64
        Of the training (the draws are float32 whatever it is, so both train on the same data and initial weights).
    device : optional
        Where to train (default: that of :func:`clbook.setup`, else the CPU). The numbers do not depend on it beyond
        rounding.
    """
    from ..config import target_device_dtype

    device, dtype = target_device_dtype(device, dtype)
    variants, seeds, beta, P, steps, n, history_every = _check_train(
        variants, seeds, beta=beta, candidates=candidates, steps=steps, batch=batch, history_every=history_every, lr=lr,
        temperature=temperature, zeta=zeta, output_dim=output_dim, num_tokens=num_tokens)
    start = time.perf_counter()
    worlds = make_worlds(seeds, num_tokens=num_tokens, num_positions=num_positions, candidates_per_position=P,
                         num_generators=num_generators, pattern_len=pattern_len, zeta=zeta)
    V, S, K, d, M = len(variants), len(seeds), num_positions, num_tokens, beta * P
    W1_init, W2_init = [], []
    for seed in seeds:  # PyTorch's default nn.Linear initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        gen = config.stream(seed, "init", STREAMS)
        W1_init.append((torch.rand(K, M, d, generator=gen, dtype=torch.float32) * 2 - 1) / math.sqrt(d))
        W2_init.append((torch.rand(output_dim, K * M, generator=gen, dtype=torch.float32) * 2 - 1) / math.sqrt(K * M))
    to = dict(dtype=dtype, device=device)
    W1 = torch.stack(W1_init).transpose(-1, -2).to(**to).expand(V, S, K, d, M).clone().requires_grad_()
    W2 = torch.stack(W2_init).to(**to).expand(V, S, output_dim, K * M).clone().requires_grad_()
    stack = _Stack(variants, device)
    mags = worlds.magnitudes.to(**to)
    opt = torch.optim.SGD([W1, W2], lr=lr, momentum=momentum, weight_decay=weight_decay)
    alive = torch.ones(V, S, dtype=torch.bool, device=device)
    stopped: list[list[int | None]] = [[None] * S for _ in variants]
    last = torch.zeros(V, S, dtype=torch.float32, device=device)
    used = worlds.used_tokens().to(device)
    history = []

    def scores():
        filters = W1.detach().transpose(-1, -2)
        return [matching_scores(filters[v], used, absolute=var.activation == "linear") for v, var in enumerate(variants)]

    single = [worlds.select(s) for s in range(S)]
    data_gens = [config.stream(seed, "batches", STREAMS) for seed in seeds]
    for step in tqdm(range(steps), disable=not progress, desc=f"β={beta} P={P}", leave=False):
        if history_every and step % history_every == 0:
            history.append((step, [plus.tolist() for plus, _ in scores()]))
        draws = [sample_tokens(w, n, generator=g) for w, g in zip(single, data_gens, strict=True)]
        t1, t2 = torch.cat([x[0] for x in draws]).to(device), torch.cat([x[1] for x in draws]).to(device)
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
                       W1.detach().transpose(-1, -2).cpu().clone(), history)


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
    W1 = torch.stack([(torch.rand(K, d, M, generator=config.stream(s, "digits_lower", STREAMS), dtype=torch.float64) * 2 - 1) / 4
                      for s in seeds])[None].requires_grad_()
    W2 = torch.stack([(torch.rand(output_dim, K * M, generator=config.stream(s, "digits_upper", STREAMS), dtype=torch.float64) * 2 - 1)
                      / math.sqrt(K * M) for s in seeds])[None].requires_grad_()
    opt = torch.optim.SGD([W1, W2], lr=lr, momentum=0.9, weight_decay=5e-3)
    gens = [config.stream(s, "digits_batches", STREAMS) for s in seeds]

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
    r"""Mean squared difference between neighbouring pixels of each 4×4 filter over its mean square (0 = constant).

    a proxy for high-frequency content. ``filters [..., 16]`` -> ``[...]``.
    """
    w = filters.reshape(*filters.shape[:-1], 4, 4)
    dx = (w[..., :, 1:] - w[..., :, :-1]).square().mean(dim=(-2, -1))
    dy = (w[..., 1:, :] - w[..., :-1, :]).square().mean(dim=(-2, -1))
    return (dx + dy) / w.square().mean(dim=(-2, -1)).clamp_min(1e-12)


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


def _record(result: TrainResult) -> list[dict]:
    out = []
    for v, variant in enumerate(result.variants):
        for s, seed in enumerate(result.seeds):
            out.append(dict(**asdict(variant), seed=seed, beta=result.settings["beta"], candidates=result.settings["candidates"],
                            zeta=result.settings["zeta"], chi_plus=round(result.chi_plus[v][s], 4),
                            chi_minus=round(result.chi_minus[v][s], 4), final_loss=round(result.final_loss[v][s], 4),
                            stopped_at=result.stopped_at[v][s]))
    return out


def train_cell(variants: list, seeds: list, beta: int, candidates: int, zeta: float, steps: int) -> list[dict]:
    r"""One job of ``table1``/``fig4``.

    every variant (dicts of :class:`Variant` fields) and seed at one :math:`(\beta, P)`, float32 on the CPU; returns one
    row per run (variant fields, seed, β, P, ζ, χ̄₊, χ̄₋, final loss, stop step).
    """
    return _record(train([Variant(**v) for v in variants], seeds, beta=beta, candidates=candidates, zeta=zeta, steps=steps,
                         device="cpu", dtype=torch.float32))


def digits_cell(augment: bool, seeds: list, steps: int) -> dict:
    """One job of ``digits``: the filters ``[S, 4, 16, 16]`` (as lists) and their mean roughness per seed."""
    W = train_digits(augment=augment, seeds=seeds, steps=steps)
    return dict(filters=W.tolist(), roughness=roughness(W).mean(dim=(1, 2)).tolist())


REFERENCE_MS_PER_ITERATION = 21.0
"""The authors' ``bn_gen.py`` at the README's Sec. 5 setting, one run, one thread, measured on this project's 2-core machine."""


def bench_cell(steps: int) -> dict:
    """The ``bench`` job.

    a fixed slice (β = 5, P = 5, the four BatchNorm rules × 3 seeds = 12 runs, float32, CPU) timed against the authors'
    21 ms per iteration.
    """
    steps = check_int("steps", steps, 1)
    variants = [Variant("relu", "infonce", bn) for bn in TABLE1_RULES]
    train(variants, [1, 2, 3], beta=5, candidates=5, zeta=10.0, steps=5, device="cpu")  # warm-up
    result = train(variants, [1, 2, 3], beta=5, candidates=5, zeta=10.0, steps=steps, device="cpu")
    runs = len(variants) * 3
    ms = 1000 * result.seconds / steps / runs
    return dict(runs=runs, steps=steps, seconds=round(result.seconds, 2), ms_per_iteration_per_run=round(ms, 3),
                reference_ms_per_iteration=REFERENCE_MS_PER_ITERATION, speedup=round(REFERENCE_MS_PER_ITERATION / ms, 1))


_TRAIN_SETTINGS = dict(batch=128, lr=0.02, momentum=0.9, weight_decay=0.005, temperature=0.1, output_dim=50, num_tokens=20,
                       num_positions=10, num_generators=40, pattern_len=5, dtype="torch.float32")


def jobs(experiment: str, *, quick: bool = False, seeds=None, betas=None, candidates=None) -> list[runner.Job]:
    """The jobs of one experiment (the settings they share are recorded by :func:`run` with the result).

    ``table1``: ReLU, InfoNCE, ζ = 10, the four BatchNorm rules; ``fig4``: four activations × two losses, mean-backprop
    BatchNorm, ζ = 1; both over β × P (default the paper's 1, 2, 5, 10 × 1, 3, 5, 10, seeds 1, 2, 3, 5000 steps; ``quick``:
    β, P ∈ {1, 5} × {1, 5} (``fig4``: {1, 3}), 300 steps). ``digits``: with and without augmentation (3000 steps, quick
    300). ``bench``: 200 steps (quick 50). Seeds are positive integers; β ≥ 1; 1 ≤ P ≤ 20.
    """
    return _plan(experiment, quick=quick, seeds=seeds, betas=betas, candidates=candidates)[0]


def _plan(experiment: str, *, quick: bool = False, seeds=None, betas=None, candidates=None) -> tuple[list, dict]:
    """:func:`jobs` and the settings they share: ``(list of runner.Job, settings)``."""
    check_choice("experiment", experiment, EXPERIMENTS)
    if experiment == "bench" and seeds is not None:  # given at all, the default values included
        raise ValueError("seeds (--seeds) do not apply to bench (one timing run); leave them out.")
    seeds = [1, 2, 3] if seeds is None else [check_int("seeds[k]", s, 1) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct positive integers, at least one; got seeds = {seeds}.")
    if experiment in ("bench", "digits") and (betas is not None or candidates is not None):
        raise ValueError(f"betas, candidates (--betas, --candidates) apply to table1 and fig4 only; {experiment} has neither.")
    if experiment == "bench":
        steps = 50 if quick else 200
        return [runner.Job("bench", dict(steps=steps))], dict(steps=steps)
    if experiment == "digits":
        steps = 300 if quick else 3000
        settings = dict(steps=steps, batch=8, filters=16, lr=0.02, temperature=0.1, seeds=seeds,
                        augmentation="random shift by up to 1 pixel")
        return [runner.Job(name, dict(augment=name == "augmented", seeds=seeds, steps=steps), cost=1.0)
                for name in ("plain", "augmented")], settings
    if experiment == "table1":
        variants, zeta = [Variant("relu", "infonce", bn) for bn in TABLE1_RULES], 10.0
        default = ((1, 5), (1, 5)) if quick else GRID
    else:
        variants, zeta = [Variant(a, loss, "mean") for loss in LOSSES for a in ACTIVATIONS], 1.0
        default = ((1, 5), (1, 3)) if quick else GRID
    betas = list(default[0]) if betas is None else [check_int("betas[k]", b, 1) for b in betas]
    candidates = list(default[1]) if candidates is None else [check_int("candidates[k]", p, 1, 20) for p in candidates]
    steps = 300 if quick else 5000
    todo = [runner.Job(f"beta={b},P={p}", dict(variants=[asdict(v) for v in variants], seeds=seeds, beta=b, candidates=p,
                                                zeta=zeta, steps=steps), cost=float(b * p * len(variants)))
            for b in betas for p in candidates]
    return todo, dict(zeta=zeta, **_TRAIN_SETTINGS, steps=steps, seeds=seeds)


_FUNCTIONS = {"table1": train_cell, "fig4": train_cell, "digits": digits_cell, "bench": bench_cell}


def run(experiment: str, *, quick: bool = False, seeds=None, betas=None, candidates=None, out=None, workers: int = 2,
        backend: str = "local", scheduler: str | None = None, fresh: bool = False, threads: int = 1,
        progress: bool = True, command: str = "", discard_complete: bool = False,
        worker_timeout: float = runner.WORKER_TIMEOUT) -> dict:
    """Run one experiment through :func:`clbook.experiments.runner.run_jobs` and return its result.

    Writes ``<out>/<name>.json`` (``name`` is the experiment, prefixed ``quick-`` in quick mode; ``out`` defaults to
    :func:`clbook.results.user_dir` ``("hierarchical")``). A result converted from the old format (its jobs have no
    timing) is never resumed: ``fresh=True`` starts over.
    """
    todo, settings = _plan(experiment, quick=quick, seeds=seeds, betas=betas, candidates=candidates)
    name = f"quick-{experiment}" if quick else experiment
    out = Path(out) if out is not None else results.user_dir("hierarchical")
    final = out / f"{name}.json"
    if not fresh and final.is_file():
        old = results.read_json(final)
        if any(job.get("seconds") is None for job in old.get("jobs", {}).values()):
            raise ValueError(f"{final} was converted from the old result format and cannot be resumed; rerun with --fresh "
                             "or choose another --out.")
    return runner.run_jobs(_FUNCTIONS[experiment], todo, out=out, name=name, command=command or f"hierarchical {name}",
                           settings=settings, workers=workers if experiment != "bench" else 1, backend=backend,
                           scheduler=scheduler, resume=not fresh, progress=progress, threads=threads,
                           experiment="hierarchical", discard_complete=discard_complete, worker_timeout=worker_timeout)


def load(name: str, *, directory=None) -> dict:
    """A result of this module in the runner's format.

    the shipped ``clbook/results/hierarchical/<name>.json``, or ``<directory>/<name>.json`` of your own run. ``name`` is
    an experiment of :data:`EXPERIMENTS`, optionally prefixed ``quick-``.

    The shipped ``table1``, ``fig4``, ``digits`` and ``bench`` were computed before the runner existed and converted
    once, mechanically (``provenance["converted"]``); their jobs carry no timing (``seconds`` is ``None``).
    """
    if not isinstance(name, str) or name.removeprefix("quick-") not in EXPERIMENTS:
        raise ValueError(f"name must be one of {', '.join(EXPERIMENTS)} (optionally prefixed 'quick-'); got name = {name!r}.")
    return results.load("hierarchical", name, directory=directory)


def rows(data: dict) -> list[dict]:
    """The runs of a ``table1``/``fig4`` result, one dict per (variant, seed, β, P), ordered by (β, P)."""
    if not isinstance(data, dict) or "jobs" not in data:
        raise ValueError("data must be a result of this module in the runner's format (see load).")
    out = [row for job in data["jobs"].values() for row in job["result"]]
    if not out or not isinstance(out[0], dict) or "chi_plus" not in out[0]:
        raise ValueError("data holds no training rows: rows() reads table1 and fig4 results.")
    return sorted(out, key=lambda r: (r["beta"], r["candidates"]))


def summary(rows: list[dict], *, keys=("activation", "loss", "bn", "beta", "candidates"), value: str = "chi_plus") -> dict:
    """Mean and standard deviation (over seeds, ``ddof=0`` as numpy's default) of ``value`` per distinct ``keys``.

    ``{key tuple: (mean, sd, count)}``.
    """
    groups: dict[tuple, list[float]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(float(row[value]))
    out = {}
    for key, values in groups.items():
        mean = sum(values) / len(values)
        out[key] = (mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)), len(values))
    return out


def fig4_claims(rows: list[dict]) -> dict[str, list[float]]:
    r"""The claims of Sec. 5.1 and App.

    E.2 about Fig. 4 / Figs 9-10, each as a difference that is positive when it holds, **per seed** (runs of one seed
    share world, initialisation and batches, so the differences are paired): ``{claim: [value for each seed, in
    increasing seed order]}``.

    "Over-parameterised, several patterns" means the nine cells :math:`\beta\in\{2,5,10\}`, :math:`P\in\{3,5,10\}`.
    """
    table = {(r["activation"], r["loss"], r["beta"], r["candidates"], r["seed"]): (r["chi_plus"], r["chi_minus"]) for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    over = [(beta, P) for beta in (2, 5, 10) for P in (3, 5, 10)]
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    out: dict[str, list[float]] = {}
    for seed in seeds:
        def m(a, beta, P, loss="infonce", k=0, seed=seed):
            return table[a, loss, beta, P, seed][k]

        def gain(a, P, m=m):
            return m(a, 10, P) - m(a, 1, P)

        cells = sorted({(beta, P) for (a, loss, beta, P, s) in table if s == seed})
        chi_minus = {a: mean([m(a, *c, k=1) for c in over]) for a in ACTIVATIONS}
        claims = {
            "P = 1, β = 1: linear beats ReLU": m("linear", 1, 1) - m("relu", 1, 1),
            "P = 1: ReLU gains from β = 1 to 10": gain("relu", 1),
            "P > 1, β > 1: ReLU beats linear (mean of 9 cells)": mean([m("relu", *c) - m("linear", *c) for c in over]),
            "P > 1: ReLU gains more from β = 1 to 10 than linear": mean([gain("relu", P) - gain("linear", P) for P in (3, 5, 10)]),
            "InfoNCE beats quadratic loss (mean of all cells)": mean([m(a, *c) - m(a, *c, loss="quadratic")
                                                                      for a in ACTIVATIONS for c in cells]),
            "ReLU has the lowest χ̄₋ (P > 1, β > 1; margin)": min(v for a, v in chi_minus.items() if a != "relu") - chi_minus["relu"],
        }
        for k, v in claims.items():
            out.setdefault(k, []).append(v)
    return out


def _seed_list(text: str) -> list[int]:
    values = runner.int_list(text)
    if any(v < 1 for v in values) or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expected distinct positive seeds such as '1,2,3'; got {text!r}")
    return values


def _positive_list(text: str) -> list[int]:
    values = runner.int_list(text)
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers such as '1,2,5'; got {text!r}")
    return values


def main(argv=None) -> int:
    """The command line (see the module docstring); returns the exit status."""
    parser = runner.ArgumentParser(
        prog="python -m clbook.experiments.hierarchical", description=__doc__.split("\n")[0],
        epilog=f"experiments: {', '.join(EXPERIMENTS)} (--betas and --candidates apply to table1 and fig4; --seeds to all "
               "but bench)\nexample:\n  python -m clbook.experiments.hierarchical table1 --quick --seeds 1,2 --out results/ --workers 2")
    parser.add_argument("experiment", choices=EXPERIMENTS, help=f"one of {', '.join(EXPERIMENTS)}")
    parser.add_argument("--quick", action="store_true", help="a small version (seconds to minutes), written under a quick- name")
    parser.add_argument("--seeds", type=_seed_list, default=None,
                        help="comma-separated distinct positive seeds, e.g. 1,2 (default 1,2,3; not for bench)")
    parser.add_argument("--betas", type=_positive_list, default=None, help="β values, table1 and fig4 only (default 1,2,5,10)")
    parser.add_argument("--candidates", type=_positive_list, default=None,
                        help="P values in 1..20, table1 and fig4 only (default 1,3,5,10)")
    parser.add_argument("--threads", type=runner.positive_int, default=1, help="torch threads per job (default 1)")
    runner.add_arguments(parser, discard_complete=True)
    args = parser.parse_args(argv)
    if args.experiment == "bench" and parser.given("workers") and args.workers != 1:
        parser.error(f"--workers {args.workers} does not apply to bench (one timing job in one process); leave it out")
    command = "python -m clbook.experiments.hierarchical " + " ".join(sys.argv[1:] if argv is None else argv)
    try:
        data = run(args.experiment, quick=args.quick, seeds=args.seeds, betas=args.betas, candidates=args.candidates,
                   out=args.out, workers=args.workers, backend=args.backend, scheduler=args.scheduler, fresh=args.fresh,
                   threads=args.threads, command=command, discard_complete=args.discard_complete,
                   worker_timeout=args.worker_timeout)
    except (ValueError, TypeError, OSError) as exc:
        parser.fail(exc)
    where = Path(args.out) if args.out is not None else results.user_dir("hierarchical")
    print(f"wrote {where / (data['name'] + '.json')} ({data['provenance']['seconds']} s, {len(data['jobs'])} jobs)")
    return 0


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: worker processes must find the jobs' function by its
    # module name (a function of __main__ is pickled by value, with the module's autograd classes, and fails there).
    from clbook.experiments.hierarchical import main as _main

    sys.exit(_main())
