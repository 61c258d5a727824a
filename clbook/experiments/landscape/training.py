r"""Training Pokle et al.'s models: :func:`train` (every sparsity and seed of one model as one stack), :func:`train_job`.

The settings and where each comes from are in :mod:`clbook.experiments.landscape`. A run owns a generator seeded
from ``(seed, sparsity)`` that draws its data and, at every epoch, its permutation, its masks (and its noise if it
is redrawn); with ``paired=True`` the initial weights come from a second generator of their own. Plain SGD is
elementwise, so the stacked update is each run's update: a run is bit for bit the same alone or in a stack.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import asdict, dataclass

import torch
from tqdm.auto import tqdm

from ..._validate import check_choice, check_in_range, check_int, check_nonnegative, check_positive
from ...config import generator as make_generator
from ...config import randn
from ...data import sparse_coding as sc
from ...linalg import normalise_unchecked
from ...losses import noncontrastive as _ncl
from ...losses import ntxent as _ntx
from ...metrics import maxcos
from .models import BIAS_INITS, MODELS, Model, SharedEncoder, apply_head, encode, exact_latents, init_head, init_network

__all__ = ["TrainResult", "train", "train_job", "train_snapshots", "step_shared", "NOISE_DRAWS", "LATENTS", "METRICS"]

NOISE_DRAWS = ("sample", "epoch", "view")
LATENTS = ("iid", "exact")
METRICS = ("maximum", "median", "minimum")


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


# ----------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class _Settings:
    """The checked arguments of :func:`train` (``noise`` and ``record`` resolved)."""

    model: str
    sparsities: list
    seeds: list
    p: int
    d: int
    m: int
    n: int
    epochs: int
    batch: int
    lr: float
    keep: float
    scheme: str
    noise: float
    noise_draw: str
    latent: str
    bias_init: str
    drop_last: bool
    paired: bool
    temperature: float
    warm: float | None
    aligned: bool
    normalize: str | None
    record: int
    dtype: torch.dtype

    @property
    def spec(self) -> Model:
        return MODELS[self.model]

    @property
    def branches(self) -> tuple:
        return ("o", "t") if self.spec.loss == "ncl" else ("o",)

    def stored(self) -> dict:
        """The settings as a result stores them."""
        return dict(p=self.p, d=self.d, m=self.m, n=self.n, epochs=self.epochs, batch=self.batch, lr=self.lr, keep=self.keep,
                    scheme=self.scheme, noise=round(self.noise, 6), noise_draw=self.noise_draw, latent=self.latent,
                    bias_init=self.bias_init, drop_last=self.drop_last, paired=self.paired, temperature=self.temperature,
                    warm=self.warm, aligned=self.aligned, normalize=self.normalize, record=self.record,
                    dtype=str(self.dtype).replace("torch.", ""), model=asdict(self.spec))


def _check_sizes(kw: dict) -> None:
    kw["sparsities"] = [check_in_range("sparsity", s, 1e-9, 1.0) for s in kw["sparsities"]]
    kw["seeds"] = [check_int("seed", s, 0) for s in kw["seeds"]]
    if not kw["sparsities"] or not kw["seeds"]:
        raise ValueError("sparsities and seeds must be non-empty.")
    for name, low in (("p", 1), ("d", 1), ("m", 1), ("n", 2), ("epochs", 1), ("batch", 2)):
        kw[name] = check_int(name, kw[name], low)
    if not isinstance(kw["drop_last"], bool):
        raise TypeError(f"drop_last must be True or False; got {kw['drop_last']!r}.")
    if kw["drop_last"] and kw["batch"] > kw["n"]:
        raise ValueError(f"drop_last=True with batch = {kw['batch']} > n = {kw['n']} leaves no batch to train on.")


def _check_choices(kw: dict) -> None:
    kw["lr"], kw["keep"] = check_positive("lr", kw["lr"]), check_in_range("keep", kw["keep"], 0.0, 1.0)
    check_choice("scheme", kw["scheme"], sc.SCHEMES)
    noise = kw["noise"]
    kw["noise"] = sc.noise_std(kw["d"], reading="code") if noise is None else check_nonnegative("noise", noise)
    check_choice("noise_draw", kw["noise_draw"], NOISE_DRAWS)
    check_choice("latent", kw["latent"], LATENTS)
    check_choice("bias_init", kw["bias_init"], BIAS_INITS)
    kw["temperature"] = check_positive("temperature", kw["temperature"])
    if kw["warm"] is not None:
        kw["warm"] = check_nonnegative("warm", kw["warm"])
    if kw["normalize"] not in (None, "row", "column"):
        raise ValueError(f"normalize must be None, 'row' or 'column'; got normalize = {kw['normalize']!r}.")
    kw["record"] = kw["epochs"] if kw["record"] is None else check_int("record", kw["record"], 1)
    if kw["dtype"] not in (torch.float64, torch.float32):
        raise ValueError(f"dtype must be torch.float64 or torch.float32; got dtype = {kw['dtype']!r}.")
    if not isinstance(kw["paired"], bool):
        raise TypeError(f"paired must be True or False; got {kw['paired']!r}.")


def _check_train(model: str, **kw) -> _Settings:
    check_choice("model", model, tuple(MODELS))
    _check_sizes(kw)
    _check_choices(kw)
    return _Settings(model=model, **kw)


# ----------------------------------------------------------------------------------------------- one step


def _run_seed(seed: int, sparsity: float) -> int:
    return 1000 * int(seed) + int(round(1000 * sparsity))


_INIT_STREAM = 10_000_000  # paired=True: the initial weights of run (seed, sparsity) come from generator(_run_seed + this)


def _normalise(W, how):
    """The encoder's normalisation after a step: ``row`` (each unit's weights) or the columns."""
    return normalise_unchecked(W, "rows" if how == "row" else "columns")


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
    q = encode(net[upd], views[0], spec)
    if spec.head == "predictor":
        q = apply_head(H, q)
    with torch.no_grad():
        target = encode(net[other], views[1], spec)
    return _sgd(list(net[upd].values()) + list(H.values()), _ncl.ncl_loss_unchecked(q, target), lr, net[upd]["W0"], normalize)


def step_shared(P: dict, H: dict, a: torch.Tensor, spec: Model, temperature: float, lr: float, normalize: str | None) -> torch.Tensor:
    """One SGD step of a shared-encoder model (NT-Xent or SimSiam) on the two views ``a`` ``[R, 2, B, p]``; returns the loss ``[R]``.

    ``P`` and ``H`` (the head's parameters, ``{}`` without one) are updated in place; ``normalize`` rescales the rows
    (``"row"``) or columns (``"column"``) of ``W0`` after the step, or None. No argument checks (it runs at every step;
    :func:`train` checks its arguments once); :func:`clbook.experiments.landscape.benchmark.bench` times it.
    """
    if spec.loss == "ntxent" and spec.layers == 1 and spec.head == "none":  # CL-basic, CL-linear: the fused encoder
        Z = SharedEncoder.apply(a, P["W0"], P["b0"], P.get("g0"), P.get("c0"), spec.srelu)
        return _sgd(list(P.values()), _ntx.nt_xent_unit_views_unchecked(Z, temperature), lr, P["W0"], normalize)
    h = encode(P, a, spec)  # [R, 2, B, m]
    if spec.loss == "ntxent":
        loss = _ntx.nt_xent_views_unchecked(apply_head(H, h) if spec.head == "projector" else h, temperature)
    else:
        z = apply_head(H, h)
        loss = _ncl.simsiam_loss_unchecked(z[:, 0], z[:, 1], h[:, 0], h[:, 1])
    return _sgd(list(P.values()) + list(H.values()), loss, lr, P["W0"], normalize)


# ----------------------------------------------------------------------------------------------- the runs


def _draw_run(st: _Settings, sparsity: float, seed: int):
    """One run's draws: data (float64) from its generator, then its initial weights (its own stream when paired)."""
    spec = st.spec
    g = make_generator(_run_seed(seed, sparsity))
    M = sc.dictionary(st.p, st.d, generator=g)
    if st.latent == "iid":
        Z = sc.sparse_latents(st.n, st.d, sparsity=sparsity, generator=g)
    else:
        Z = exact_latents(st.n, st.d, sparsity=sparsity, generator=g)
    X = Z @ M.transpose(-1, -2)
    if st.noise_draw == "sample" and st.noise > 0:
        X = X + st.noise * randn(*X.shape, generator=g)
    M = M.to(torch.float64)
    gi = make_generator(_run_seed(seed, sparsity) + _INIT_STREAM) if st.paired else g
    idx, params = None, {}
    for br in st.branches:
        params[br], idx = init_network(gi, spec, p=st.p, d=st.d, m=st.m, M=M, warm=st.warm, aligned_idx=idx if st.aligned else None,
                                       bias_init=st.bias_init)
    head = init_head(gi, p=st.p, d=st.d, m=st.m, bias_init=st.bias_init) if spec.head != "none" else None
    return g, M, X.to(torch.float64), params, head


def _stack(dicts: list, dtype) -> dict:
    return {k: torch.stack([q[k] for q in dicts]).to(dtype).requires_grad_() for k in dicts[0]}


def _draw_runs(st: _Settings):
    """Every run's generator, and the stacked dictionaries ``M``, data ``X``, networks ``{branch: P}`` and head ``H``."""
    draws = [_draw_run(st, s, seed) for s in st.sparsities for seed in st.seeds]
    gens = [d[0] for d in draws]
    M = torch.stack([d[1] for d in draws]).to(st.dtype)
    X = torch.stack([d[2] for d in draws]).to(st.dtype)
    net = {br: _stack([d[3][br] for d in draws], st.dtype) for br in st.branches}
    H = _stack([d[4] for d in draws], st.dtype) if st.spec.head != "none" else {}
    if st.normalize is not None:
        with torch.no_grad():
            for br in st.branches:
                net[br]["W0"].copy_(_normalise(net[br]["W0"], st.normalize))
    return gens, M, X, net, H


def _epoch_views(st: _Settings, gens: list, X: torch.Tensor, rows: torch.Tensor):
    """The two masked (and, with ``noise_draw`` epoch/view, noisy) views of every run, in this epoch's order."""
    perms, D1, D2, E1, E2 = [], [], [], [], []
    for g in gens:
        perms.append(torch.randperm(st.n, generator=g))
        d1, d2 = sc.masks((st.n, st.p), keep=st.keep, generator=g, scheme=st.scheme)
        D1.append(d1)
        D2.append(d2)
        if st.noise_draw == "epoch":
            e = st.noise * randn(st.n, st.p, generator=g, dtype=torch.float64)
            E1.append(e)
            E2.append(e)
        elif st.noise_draw == "view":
            e = st.noise * randn(2, st.n, st.p, generator=g, dtype=torch.float64)
            E1.append(e[0])
            E2.append(e[1])
    perm = torch.stack(perms)
    X1 = X + torch.stack(E1).to(st.dtype) if E1 else X
    X2 = X + torch.stack(E2).to(st.dtype) if E2 else X
    A1 = (torch.stack(D1).to(st.dtype) * X1)[rows, perm]
    A2 = (torch.stack(D2).to(st.dtype) * X2)[rows, perm]
    return A1, A2


def _epoch(st: _Settings, net: dict, H: dict, A1: torch.Tensor, A2: torch.Tensor, starts: list) -> torch.Tensor:
    """One epoch of minibatch steps; returns the mean loss over its steps ``[R]`` (float64)."""
    spec = st.spec
    two = spec.loss == "ncl"
    A = None if two else torch.stack([A1, A2], dim=1)  # [R, 2, n, p]: the two views through one shared encoder
    total = 0.0
    for k, lo in enumerate(starts):
        if two:
            upd = "o" if k % 2 == 0 else "t"
            a1, a2 = A1[:, lo:lo + st.batch], A2[:, lo:lo + st.batch]
            loss = _step_two(net, H, (a1, a2) if upd == "o" else (a2, a1), upd, spec, st.lr, st.normalize)
        else:
            loss = step_shared(net["o"], H, A[:, :, lo:lo + st.batch], spec, st.temperature, st.lr, st.normalize)
        total = total + loss.to(torch.float64)
    return total / len(starts)


class _Trajectory:
    """The max-cosine summaries of the online first layer at the recorded epochs."""

    def __init__(self, W0: torch.Tensor, M: torch.Tensor):
        self.W0, self.M = W0, M.to(torch.float64)
        self.epochs, self.values = [], ([], [], [])
        self.add(0)

    def add(self, epoch: int) -> None:
        if self.epochs and self.epochs[-1] == epoch:
            return
        s = maxcos.max_cosine_summary(self.W0.detach().to(torch.float64), self.M)
        self.epochs.append(epoch)
        for store, v in zip(self.values, (s.maximum, s.median, s.minimum), strict=True):
            store.append(v.tolist())


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
    st = _check_train(model, sparsities=sparsities, seeds=seeds, p=p, d=d, m=m, n=n, epochs=epochs, batch=batch, lr=lr, keep=keep,
                      scheme=scheme, noise=noise, noise_draw=noise_draw, latent=latent, bias_init=bias_init, drop_last=drop_last,
                      paired=paired, temperature=temperature, warm=warm, aligned=aligned, normalize=normalize, record=record,
                      dtype=dtype)
    gens, M, X, net, H = _draw_runs(st)
    trajectory = _Trajectory(net["o"]["W0"], M)
    rows = torch.arange(len(gens)).unsqueeze(-1)
    starts = list(range(0, st.n - st.batch + 1, st.batch)) if st.drop_last else list(range(0, st.n, st.batch))
    start = time.perf_counter()
    for epoch in tqdm(range(1, st.epochs + 1), desc=model, disable=not progress, mininterval=20):
        A1, A2 = _epoch_views(st, gens, X, rows)
        last_loss = _epoch(st, net, H, A1, A2, starts)
        if epoch % st.record == 0 or epoch == st.epochs:
            trajectory.add(epoch)
    seconds = time.perf_counter() - start
    W = net["o"]["W0"].detach().to(torch.float64) if keep_weights else None
    mx, md, mn = trajectory.values
    return TrainResult(model=model, sparsities=list(st.sparsities), seeds=list(st.seeds), epochs=trajectory.epochs, maximum=mx,
                       median=md, minimum=mn, loss=last_loss.tolist(), seconds=seconds, settings=st.stored(), W=W)


def train_job(**params) -> dict:
    """One job of the runner: :func:`train` in float32 with ``params``; returns the rows (with trajectories) and settings."""
    res = train(dtype=torch.float32, **params)
    return dict(model=res.model, rows=res.rows(), settings=res.settings, train_seconds=round(res.seconds, 1))


def train_snapshots(model: str, *, at, **kw) -> tuple[TrainResult, torch.Tensor, list[dict]]:
    r""":func:`train`, keeping a copy of every network's parameters at the epochs ``at`` (for measurements along training).

    The same runs as :func:`train` with the same arguments ``kw`` (same checks, draws and steps: bit for bit the same
    trajectory, tested), plus the parameters of every branch at each epoch of ``at`` (0 is the initialisation).

    Parameters
    ----------
    model : str
        A key of :data:`MODELS`.
    at : sequence of int
        Epochs at which to copy the parameters, each in ``[0, epochs]``, increasing.
    **kw
        The other arguments of :func:`train` (not ``keep_weights`` or ``progress``).

    Returns
    -------
    result : TrainResult
        As :func:`train` returns it.
    M : torch.Tensor
        The runs' dictionaries ``[R, p, d]`` (float64), runs ordered as in ``result``.
    snapshots : list of dict
        One ``{"epoch": e, "params": {branch: {name: tensor [R, ...] (float64)}}}`` per epoch of ``at``; the branches
        are ``"o"`` (and ``"t"`` for a non-contrastive model).
    """
    for bad in ("keep_weights", "progress"):
        if bad in kw:
            raise ValueError(f"train_snapshots does not take {bad}.")
    defaults = {k: v.default for k, v in inspect.signature(train).parameters.items() if k not in ("model", "keep_weights", "progress")}
    unknown = sorted(set(kw) - set(defaults))
    if unknown:
        raise ValueError(f"train_snapshots got unknown arguments {unknown}.")
    st = _check_train(model, **(defaults | kw))
    if isinstance(at, (str, bytes)) or not list(at):
        raise ValueError(f"at must be a non-empty sequence of epochs; got at = {at!r}.")
    at = [check_int("at", e, 0, st.epochs) for e in at]
    if any(b <= a for a, b in zip(at, at[1:], strict=False)):
        raise ValueError(f"at must be increasing; got at = {at}.")
    gens, M, X, net, H = _draw_runs(st)
    trajectory = _Trajectory(net["o"]["W0"], M)
    rows = torch.arange(len(gens)).unsqueeze(-1)
    starts = list(range(0, st.n - st.batch + 1, st.batch)) if st.drop_last else list(range(0, st.n, st.batch))

    def snap(epoch):
        return dict(epoch=epoch, params={br: {k: v.detach().to(torch.float64).clone() for k, v in net[br].items()} for br in st.branches})

    snapshots = [snap(0)] if at[0] == 0 else []
    start = time.perf_counter()
    last_loss = torch.zeros(len(gens), dtype=torch.float64)
    for epoch in range(1, st.epochs + 1):
        A1, A2 = _epoch_views(st, gens, X, rows)
        last_loss = _epoch(st, net, H, A1, A2, starts)
        if epoch % st.record == 0 or epoch == st.epochs:
            trajectory.add(epoch)
        if epoch in at:
            snapshots.append(snap(epoch))
    seconds = time.perf_counter() - start
    mx, md, mn = trajectory.values
    result = TrainResult(model=model, sparsities=list(st.sparsities), seeds=list(st.seeds), epochs=trajectory.epochs, maximum=mx,
                         median=md, minimum=mn, loss=last_loss.tolist(), seconds=seconds, settings=st.stored())
    return result, M.to(torch.float64), snapshots
