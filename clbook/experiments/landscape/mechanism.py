r"""How much a trained encoder's positive-pair match rests on the noise that the two views share (issue 26, item 5).

Under independent masks (Eq. 3) the two views of a sample :math:`x = Mz + \epsilon` both keep about a quarter of the
coordinates, and on those they carry the *same* noise :math:`\epsilon`. Chapter 17's reading of its ablations is that
this shared noise gives NT-Xent a shortcut: it can tell a sample's two views from the others' without learning the
atoms. The measurement: on held-out pairs drawn from a run's own dictionary, the mean cosine of the two views'
representations (NT-Xent's positive logit times :math:`T`)

* (a) with the views as generated (:attr:`PairViews.shared`), and
* (b) with the noise of the second view, on the coordinates both views keep, replaced by fresh independent noise of
  the same law (:attr:`PairViews.fresh`): the same latents, masks and first view, and each view with the same
  marginal law; only the sharing of the noise is gone.

The drop (a) − (b) is the part of the positive-pair match carried by shared noise. An encoder that reads only the
signal gives 0, one that reads only noise a large drop (both unit-tested). The reading predicts a clearly positive drop
for CL-basic trained with shared noise and about 0 when it was trained with per-view noise; "no reliance" (drop 0) is
the world in which the measurement fails, judged with :func:`clbook.verify.paired_test` over seeds.
:func:`pair_views` draws the held-out pairs, :func:`noise_reliance` measures, :func:`mechanism_job` trains and measures
along training (the runner's job of the experiment ``mechanism``).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..._validate import check_choice, check_in_range, check_int, check_nonnegative, check_tensor
from ...config import check_generator, randn, stream
from ...data import sparse_coding as sc
from .models import MODELS, encode, exact_latents
from .training import LATENTS, METRICS, train_snapshots

__all__ = ["PairViews", "pair_views", "noise_reliance", "mechanism_job", "reliance_tests", "STREAMS"]

STREAMS = {"held_out": 20_000_000}  # held-out pairs of run (seed, sparsity): config.stream(1000 seed + 1000 sparsity, ...)


@dataclass(frozen=True)
class PairViews:
    """Held-out pairs of views ``[..., 2, n, p]``: as generated (``shared``) and with the shared coordinates' noise redrawn (``fresh``).

    ``both`` ``[..., n, p]`` marks the coordinates that both views keep; ``fresh`` equals ``shared`` everywhere else
    and in the whole first view.
    """

    shared: torch.Tensor
    fresh: torch.Tensor
    both: torch.Tensor


def pair_views(M: torch.Tensor, *, n: int, sparsity: float, noise: float, keep: float = 0.5, generator: torch.Generator,
               latent: str = "iid") -> PairViews:
    r"""Held-out pairs of views of :math:`x = Mz + \sigma_0\epsilon` under independent masks, with and without shared noise.

    Parameters
    ----------
    M : torch.Tensor
        The dictionary ``[p, d]`` (a trained run's own).
    n : int
        Number of held-out samples, ``>= 2``.
    sparsity : float
        :math:`\beta = \Pr(z_i \ne 0)` in ``(0, 1]``.
    noise : float
        :math:`\sigma_0 \ge 0`.
    keep : float
        Probability that a view keeps a coordinate (Eq. 3, independent masks).
    generator : torch.Generator
        Draws, in this order: the latents, :math:`\epsilon`, the two masks, the fresh noise :math:`\epsilon'`.
    latent : {"iid", "exact"}
        The latents of :func:`~clbook.experiments.landscape.training.train`.

    Returns
    -------
    PairViews
        ``shared`` :math:`(D_1x, D_2x)`; ``fresh`` :math:`(D_1x, D_2(x + \sigma_0 B(\epsilon' - \epsilon)))` with
        :math:`B = D_1D_2` the coordinates both keep, so that the second view's noise there is :math:`\epsilon'`,
        independent of the first view's; all float64 ``[2, n, p]``, ``both`` ``[n, p]``.
    """
    M = check_tensor("M", M, 2).to(torch.float64)
    n = check_int("n", n, 2)
    sparsity = check_in_range("sparsity", sparsity, 1e-9, 1.0)
    noise = check_nonnegative("noise", noise)
    keep = check_in_range("keep", keep, 0.0, 1.0)
    check_generator(generator)
    check_choice("latent", latent, LATENTS)
    p, d = M.shape
    if latent == "iid":
        Z = sc.sparse_latents(n, d, sparsity=sparsity, generator=generator)
    else:
        Z = exact_latents(n, d, sparsity=sparsity, generator=generator)
    eps = randn(n, p, generator=generator)
    d1, d2 = sc.masks((n, p), keep=keep, generator=generator, scheme="independent")
    d1, d2 = d1.to(torch.float64).cpu(), d2.to(torch.float64).cpu()
    eps_fresh = randn(n, p, generator=generator)
    X = Z.to(torch.float64).cpu() @ M.cpu().T + noise * eps
    both = d1 * d2
    shared = torch.stack([d1 * X, d2 * X])
    fresh = torch.stack([d1 * X, d2 * (X + noise * both * (eps_fresh - eps))])
    return PairViews(shared=shared, fresh=fresh, both=both.bool())


def _positive(model, params, views):
    """Per run: the mean cosine of the two views' representations and the share of samples matched to their own pair."""
    spec = MODELS[model]
    if spec.loss == "ncl":
        h1, h2 = encode(params["o"], views[:, 0], spec), encode(params["t"], views[:, 1], spec)
    else:
        h = encode(params["o"], views, spec)
        h1, h2 = h[:, 0], h[:, 1]
    z1 = h1 / h1.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    z2 = h2 / h2.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    cos = (z1 * z2).sum(-1)  # [R, n]
    gram = z1 @ z2.transpose(-1, -2)  # [R, n, n]: sample i's first view against every second view
    hit = (gram.argmax(-1) == torch.arange(gram.shape[-1])).to(torch.float64)
    return cos.mean(-1), hit.mean(-1)


def noise_reliance(model: str, params: dict, views: PairViews) -> dict:
    r"""How much the positive-pair match of a trained encoder rests on the noise shared by the two views.

    Parameters
    ----------
    model : str
        A key of :data:`~clbook.experiments.landscape.models.MODELS` without a head: a shared encoder (NT-Xent,
        the pair is :math:`(f(a_1), f(a_2))`) or a non-contrastive pair of networks (the pair of its loss,
        :math:`(f^o(a_1), f^t(a_2))`).
    params : dict
        ``{"o": P}`` (and ``"t"`` for a non-contrastive model), each a dict of stacked parameters ``[R, ...]`` as
        :func:`~clbook.experiments.landscape.training.train_snapshots` returns them.
    views : PairViews
        Held-out pairs, ``shared`` and ``fresh`` ``[R, 2, n, p]`` (one draw of :func:`pair_views` per run, stacked).

    Returns
    -------
    dict
        ``shared``, ``fresh``: the mean positive cosine ``[R]`` (float64) on the views as generated and with the
        shared coordinates' noise redrawn; ``drop`` = shared − fresh; ``match_shared``, ``match_fresh``: the share of
        samples whose first view is closest (cosine) to its own second view among the ``n`` second views.
    """
    check_choice("model", model, tuple(MODELS))
    spec = MODELS[model]
    if spec.head != "none":
        raise ValueError(f"model must be a model without a head; {model!r} has a {spec.head}.")
    branches = ("o", "t") if spec.loss == "ncl" else ("o",)
    if not isinstance(params, dict) or any(b not in params for b in branches):
        raise ValueError(f"params must be a dict with the branches {list(branches)} of {model!r}.")
    if not isinstance(views, PairViews):
        raise TypeError(f"views must be a PairViews (see pair_views); got {type(views).__name__}.")
    shared, fresh = check_tensor("views", views.shared, 4), check_tensor("views", views.fresh, 4)
    if shared.shape != fresh.shape or shared.shape[1] != 2 or shared.shape[2] < 2:
        raise ValueError(f"views must hold shared and fresh of one shape [R, 2, n >= 2, p]; got {list(shared.shape)}, "
                         f"{list(fresh.shape)}.")
    W = params["o"].get("W0") if isinstance(params["o"], dict) else None
    if W is None or W.ndim != 3 or W.shape[0] != shared.shape[0] or W.shape[-1] != shared.shape[-1]:
        raise ValueError(f"params['o']['W0'] must be [R, m, p] with R, p those of the views {list(shared.shape)}.")
    dtype = W.dtype
    with torch.no_grad():
        cos_a, hit_a = _positive(model, params, shared.to(dtype))
        cos_b, hit_b = _positive(model, params, fresh.to(dtype))
    cos_a, cos_b = cos_a.to(torch.float64), cos_b.to(torch.float64)
    return dict(shared=cos_a, fresh=cos_b, drop=cos_a - cos_b, match_shared=hit_a.to(torch.float64),
                match_fresh=hit_b.to(torch.float64))


def _held_out(M, seeds, sparsity, settings, n_held_out):
    """One :func:`pair_views` per run (its own stream), stacked ``[R, 2, n, p]``."""
    draws = [pair_views(M[r], n=n_held_out, sparsity=sparsity, noise=settings["noise"], keep=settings["keep"],
                        latent=settings["latent"], generator=stream(1000 * seed + round(1000 * sparsity), "held_out", STREAMS))
             for r, seed in enumerate(seeds)]
    return PairViews(shared=torch.stack([v.shared for v in draws]), fresh=torch.stack([v.fresh for v in draws]),
                     both=torch.stack([v.both for v in draws]))


def mechanism_job(*, model: str, sparsities, seeds, at, n_held_out: int = 1000, **train_kw) -> dict:
    r"""One job of the experiment ``mechanism``: train, and measure :func:`noise_reliance` at the epochs ``at``.

    Parameters
    ----------
    model : str
        A key of :data:`~clbook.experiments.landscape.models.MODELS` without a head.
    sparsities : list of float
        One Pr(sparse) (a one-element list, as the other experiments' jobs store it).
    seeds : list of int
        Seeds, ``>= 0``; one run each, trained as :func:`~clbook.experiments.landscape.training.train` (float32).
    at : list of int
        Epochs at which to measure (0: the initialisation).
    n_held_out : int
        Held-out samples per run, drawn from the run's own dictionary with its noise level, masks keep probability
        and latents (:func:`pair_views`, stream ``"held_out"`` of :data:`STREAMS`).
    **train_kw
        The other settings of :func:`~clbook.experiments.landscape.training.train` (``noise_draw``, ``paired``, ...).

    Returns
    -------
    dict
        ``rows``: one per seed with ``epochs`` (= ``at``), ``shared``, ``fresh``, ``drop``, ``match_shared``,
        ``match_fresh`` (one value per epoch) and the min / median / max max-cosine at those epochs; ``settings``.
    """
    check_choice("model", model, tuple(MODELS))
    if MODELS[model].head != "none":
        raise ValueError(f"model must be a model without a head; {model!r} has a {MODELS[model].head}.")
    if isinstance(sparsities, (int, float)) or len(list(sparsities)) != 1:
        raise ValueError(f"sparsities must be a list of one Pr(sparse); got {sparsities!r}.")
    n_held_out = check_int("n_held_out", n_held_out, 2)
    seeds = [check_int("seed", s, 0) for s in seeds]
    result, M, snaps = train_snapshots(model, sparsities=list(sparsities), seeds=seeds, at=at, dtype=torch.float32, **train_kw)
    sparsity = result.sparsities[0]
    views = _held_out(M, seeds, sparsity, result.settings, n_held_out)
    measured = [noise_reliance(model, s["params"], views) for s in snaps]
    epochs = [s["epoch"] for s in snaps]
    cols = {e: result.epochs.index(e) for e in epochs if e in result.epochs}
    rows = []
    for r, seed in enumerate(seeds):
        row = dict(model=model, sparsity=sparsity, seed=seed, epochs=epochs)
        for key in ("shared", "fresh", "drop", "match_shared", "match_fresh"):
            row[key] = [round(float(m[key][r]), 5) for m in measured]
        for key, values in zip(METRICS, (result.maximum, result.median, result.minimum), strict=True):
            row[key] = [round(values[cols[e]][r], 4) if e in cols else None for e in epochs]
        rows.append(row)
    return dict(model=model, rows=rows, settings=result.settings | dict(n_held_out=n_held_out, at=epochs),
                train_seconds=round(result.seconds, 1))


def _drops(data: dict, quantity: str = "drop") -> dict:
    """``{(noise_draw, model, sparsity): (epochs, {seed: drops})}`` from a stored ``mechanism`` result."""
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict) or not data["jobs"]:
        raise ValueError("data must be a stored mechanism result (a dict with 'jobs'; see experiments.load).")
    out = {}
    for key, job in data["jobs"].items():
        rows = job.get("result", {}).get("rows") if isinstance(job, dict) else None
        if not rows or "drop" not in rows[0]:
            continue  # a job not run yet (partial result)
        draw = key.split("/")[0].removeprefix("noise_draw=")
        if quantity == "drop":
            by_seed = {r["seed"]: r["drop"] for r in rows}
        else:  # the share of pairs identified that is lost when the shared noise is redrawn
            by_seed = {r["seed"]: [a - b for a, b in zip(r["match_shared"], r["match_fresh"], strict=True)] for r in rows}
        out[(draw, rows[0]["model"], rows[0]["sparsity"])] = (rows[0]["epochs"], by_seed)
    if not out:
        raise ValueError("data holds no finished job of the mechanism experiment.")
    return out


def reliance_tests(data: dict, *, epoch: int | None = None, quantity: str = "drop") -> list:
    r"""The verdicts of a stored ``mechanism`` result at one epoch: the drops against "no reliance", and shared against per-view.

    For every finished job (noise draw, model, Pr(sparse)): the drop of each seed at ``epoch`` (default the last
    measured one) tested against 0 ("no reliance": the world in which the measurement fails) with
    :func:`clbook.verify.paired_test`; and, for every model and Pr(sparse) with both noise draws, the drop under
    shared noise (``sample``) against per-view noise (``view``), paired by seed (the two share data, latents and
    initial weights). Bonferroni over all the tests returned (``tests`` in each row).

    Parameters
    ----------
    data : dict
        A stored result of the experiment ``mechanism`` (complete or partial).
    epoch : int, optional
        A measured epoch (default: the last).
    quantity : {"drop", "match"}
        The drop of the mean positive cosine (default), or of the share of held-out pairs identified
        (``match_shared - match_fresh``: the identifications that the shared noise alone makes).

    Returns
    -------
    list of dict
        One row per test: ``what`` (``"drop"`` or ``"sample - view"``), ``noise_draw``, ``model``, ``sparsity``,
        ``epoch``, ``mean``, ``sd``, ``t``, ``cutoff``, ``detectable``, ``tests``, ``verdict``.
    """
    from ... import verify

    check_choice("quantity", quantity, ("drop", "match"))
    groups = _drops(data, quantity)
    cells = []
    for (draw, model, sparsity), (epochs, by_seed) in sorted(groups.items()):
        e = epochs[-1] if epoch is None else check_int("epoch", epoch, 0)
        if e not in epochs:
            raise ValueError(f"epoch {e} was not measured; the measured epochs are {epochs}.")
        seeds = sorted(by_seed)
        cells.append(("drop", draw, model, sparsity, e, [by_seed[s][epochs.index(e)] for s in seeds], [0.0] * len(seeds), seeds))
    for _what, draw, model, sparsity, e, a, _, seeds in list(cells):
        other = groups.get(("view", model, sparsity))
        if draw == "sample" and other is not None and e in other[0] and sorted(other[1]) == seeds:
            b = [other[1][s][other[0].index(e)] for s in seeds]
            cells.append(("sample - view", "sample - view", model, sparsity, e, a, b, seeds))
    rows = []
    for what, draw, model, sparsity, e, a, b, _ in cells:
        test = verify.paired_test(a, b, tests=len(cells))
        diffs = [x - y for x, y in zip(a, b, strict=True)]
        sd = (sum((x - test.mean) ** 2 for x in diffs) / (len(diffs) - 1)) ** 0.5
        rows.append(dict(what=what, noise_draw=draw, model=model, sparsity=sparsity, epoch=e, mean=test.mean, sd=sd, t=test.t,
                         cutoff=test.cutoff, detectable=test.detectable, tests=test.tests, verdict=test.verdict))
    return rows
