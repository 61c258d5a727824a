"""Speed of Pokle et al.'s experiments: the contrastive step against a plain matrix product, and ms per epoch of each model.

``python -m clbook.experiments.landscape bench`` (``make bench``) writes :func:`bench` to ``bench.json``.
"""
from __future__ import annotations

import math
import resource
import time

import torch

from ... import results
from ..._validate import check_choice, check_int
from ...config import generator as make_generator
from ...config import rand, randn
from ...losses import ntxent as _ntx
from .authors import AUTHORS_SECONDS_PER_EPOCH
from .models import MODELS, init_network
from .training import step_shared, train

__all__ = ["bench", "step_flops"]


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
    params = [init_network(generator, spec, p=p, d=d, m=m)[0] for _ in range(runs)]
    P = {k: torch.stack([q[k] for q in params]).to(dtype).requires_grad_() for k in params[0]}
    H = {}
    if spec.head != "none":
        H = {"Wh": (randn(runs, m, m, generator=generator, dtype=torch.float64) / math.sqrt(p * d)).to(dtype).requires_grad_(),
             "bh": torch.zeros(runs, m, dtype=dtype).requires_grad_()}
    a = (randn(runs, 2, batch, p, generator=generator, dtype=torch.float64) * (rand(runs, 2, batch, p, generator=generator) < 0.5))
    return spec, P, H, a.to(dtype)


def bench(*, epochs: int = 40, runs: int = 5, repeats: int = 9, steps: int = 5, models=None) -> dict:
    r"""Throughput of the contrastive step against one large matrix product, measured in the same run; ms per epoch.

    One process, one thread, float32. ``repeats`` times, interleaved: (1) one ``torch.mm`` of two square
    :math:`2048\times2048` matrices and one of the step's largest shape (:math:`E[Z, Z/t]`,
    :math:`1024\times1024` by :math:`1024\times100`); (2) ``steps`` training steps of CL-basic (``runs`` runs stacked,
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
        step_shared(P, H, a, spec, 0.05, 1e-9, None)  # warm-up
        square, shaped, step = [], [], []
        for _ in range(repeats):
            square.append(_matmul_gflops((2048, 2048, 2048), generator=g))
            shaped.append(_matmul_gflops((1024, 1024, 100), generator=g))
            t = time.perf_counter()
            for _ in range(steps):
                step_shared(P, H, a, spec, 0.05, 1e-9, None)
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
