"""The failure review of issue 24, re-run as a user would: bad calls to the library and bad command lines.

Every call is classified automatically:

* **clear**: a ValueError / TypeError / RuntimeError raised by clbook itself whose message names the parameter (a
  library call), or exit status 2 with one line on stderr that names the option (a command line);
* **handled**: a correct result (checked against the right answer, or the documented warning);
* **silent**: a result without an error that is wrong or NaN (or a bad command line that exits 0);
* **crash**: an exception raised inside torch / numpy / sklearn / scipy, an error that names no parameter, a
  command line that exits 1 with a traceback, or a hang past the call's timeout.

The table goes to ``tools/reports/failure-review.json`` (call, expected, got, class) and the counts are printed.
Everything runs on the CPU with one thread, in temporary folders (``CLBOOK_RESULTS`` points there too, so no call
can write into ``runs/`` or ``clbook/results/``). About 3-5 CPU minutes::

    CLBOOK_THREADS=1 .venv/bin/python tools/review_failure.py [--only lib|cli] [-k WORD]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

os.environ.setdefault("CLBOOK_THREADS", "1")
os.environ.setdefault("CLBOOK_DEVICE", "cpu")

ROOT = Path(__file__).resolve().parents[1]
REPORT = Path(os.environ.get("CLBOOK_REVIEW_REPORT", ROOT / "tools" / "reports" / "failure-review.json"))
CLASSES = ("clear", "handled", "silent", "crash")
_CLEAR_TYPES = (ValueError, TypeError, RuntimeError)
_FOREIGN = ("torch", "numpy", "sklearn", "scipy", "joblib", "dask", "distributed")


# ------------------------------------------------------------------------------------------------ library calls


class Hang(Exception):
    """A call ran past its timeout."""


@contextlib.contextmanager
def _deadline(seconds: float):
    def alarm(signum, frame):  # noqa: ARG001
        raise Hang(f"no answer within {seconds:g} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _raised_in(exc: BaseException) -> str:
    """The package (clbook, torch, numpy, ...) of the innermost frame that raised ``exc``."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    path = frames[-1].filename.replace("\\", "/")
    if "/clbook/" in path:
        return "clbook"
    for name in _FOREIGN:
        if f"/{name}/" in path:
            return name
    return Path(path).name


LIB: list[dict] = []


def lib(call: str, fn, *, expected: str, names: str | None = None, ok=None, timeout: float = 60.0):
    """Register a library call: ``fn()`` should raise naming ``names`` (a regex), or return ``r`` with ``ok(r, w)``."""
    LIB.append(dict(call=call, fn=fn, expected=expected, names=names, ok=ok, timeout=timeout))


def classify_lib(case: dict) -> tuple[str, str]:
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught, _deadline(case["timeout"]):
            warnings.simplefilter("always")
            result = case["fn"]()
    except Hang as exc:
        return "crash", f"hang: {exc}"
    except Exception as exc:  # noqa: BLE001 - that is the point
        where = _raised_in(exc)
        message = " ".join(str(exc).split())
        got = f"{type(exc).__name__} from {where}: {message[:300]}"
        if where != "clbook" or not isinstance(exc, _CLEAR_TYPES):
            return "crash", got
        if case["names"] is None or re.search(case["names"], message):
            return "clear", got
        return "crash", got + " [names no parameter]"
    messages = [f"{w.category.__name__}: {' '.join(str(w.message).split())[:200]}" for w in caught]
    got = f"returned {_describe(result)}" + (f"; warned {messages}" if messages else "")
    if case["ok"] is not None:
        try:
            good = bool(case["ok"](result, messages))
        except Exception as exc:  # noqa: BLE001
            good, got = False, got + f" (check failed: {type(exc).__name__}: {exc})"
        if good:
            return "handled", got
    return "silent", got


def _describe(result) -> str:
    import numpy as np
    import torch

    if isinstance(result, torch.Tensor):
        if result.numel() == 1:
            return f"tensor {result.item()!r} ({result.dtype})"
        finite = bool(torch.isfinite(result).all()) if result.is_floating_point() else True
        return f"tensor shape {tuple(result.shape)} {result.dtype}{'' if finite else ' with NaN/inf'}"
    if isinstance(result, np.ndarray):
        return f"array shape {result.shape}"
    if isinstance(result, float):
        return repr(result)
    text = repr(result)
    return text[:120] + ("..." if len(text) > 120 else "")


def _finite(x) -> bool:
    import torch

    if isinstance(x, torch.Tensor):
        return bool(torch.isfinite(x).all())
    return math.isfinite(float(x))


def library_cases() -> None:  # noqa: C901, PLR0915 - one registration per line is the readable form
    import numpy as np
    import torch

    import clbook
    from clbook import alpha, config, covariance, kernels, linalg, nets
    from clbook.data import digits, hierarchical, latent, sparse_coding, views
    from clbook.dynamics import landscape, onelayer, ssl, twolayer, wide
    from clbook.losses import acl, noncontrastive, ntxent
    from clbook.metrics import maxcos, probes

    F64, F32 = torch.float64, torch.float32

    def pair(seed=0, B=6, m=4, dtype=F64):
        g = torch.Generator().manual_seed(seed)
        a, b = torch.randn(B, m, generator=g, dtype=F64), torch.randn(B, m, generator=g, dtype=F64)
        return a.to(dtype), b.to(dtype)

    def nan_at(x, i=0, j=0, value=float("nan")):
        x = x.clone()
        x[i, j] = value
        return x

    def same(ref, rel=1e-10):
        return lambda r, w: _finite(r) and abs(float(r) - float(ref)) <= rel * max(1.0, abs(float(ref)))

    def close(ref, rtol=1e-10, atol=1e-12):
        return lambda r, w: _finite(r) and torch.allclose(r, ref, rtol=rtol, atol=atol)

    h1, h2 = pair(0)
    f1, f2 = pair(0, dtype=F32)
    ref = ntxent.nt_xent(h1, h2, temperature=0.5)
    ref32 = ntxent.nt_xent(f1, f2, temperature=0.5)

    # -- scale invariance: the cosine quantities are exact at any finite scale (issue: silently wrong)
    for s in (1e200, 1e-200, 1e-13, 1e300, 1e-300):
        lib(f"nt_xent(h1*{s:g}, h2*{s:g}, temperature=0.5) float64", lambda s=s: ntxent.nt_xent(h1 * s, h2 * s, temperature=0.5),
            expected=f"{float(ref):.6g}, as unscaled", names="h1|h2", ok=same(ref))
    for s in (1e20, 1e-20, 1e-30):
        lib(f"nt_xent(h1*{s:g}, h2*{s:g}) float32", lambda s=s: ntxent.nt_xent(f1 * s, f2 * s, temperature=0.5),
            expected=f"{float(ref32):.6g}, as unscaled", names="h1|h2", ok=same(ref32, 1e-5))
    lib("nt_xent_reference(h1*1e200, h2*1e200)", lambda: ntxent.nt_xent_reference(h1 * 1e200, h2 * 1e200, temperature=0.5),
        expected="as unscaled", names="h1|h2", ok=same(ref))
    lib("nt_xent(h1*1e200, h2*1e-200) (rows at different scales)", lambda: ntxent.nt_xent(h1 * 1e200, h2 * 1e-200, temperature=0.5),
        expected="as unscaled", names="h1|h2", ok=same(ref))
    ncl = noncontrastive.ncl_loss(h1, h2)
    lib("ncl_loss(q*1e200, target*1e-200)", lambda: noncontrastive.ncl_loss(h1 * 1e200, h2 * 1e-200), expected="as unscaled",
        names=r"\bq\b|target", ok=same(ncl))
    sim = noncontrastive.simsiam_loss(h1, h2, h2, h1)
    lib("simsiam_loss(p1*1e-300, ...)", lambda: noncontrastive.simsiam_loss(h1 * 1e-300, h2, h2 * 1e300, h1), expected="as unscaled",
        names="p1|p2|z1|z2", ok=same(sim))
    u = h1 / h1.norm(dim=1, keepdim=True)
    lib("linalg.unit_rows(X*1e200)", lambda: linalg.unit_rows(h1 * 1e200), expected="the unit rows of X (or an error naming X)",
        names=r"\bX\b", ok=close(u))
    W, M = pair(1, B=8, m=5)[0], torch.linalg.qr(torch.randn(5, 3, generator=torch.Generator().manual_seed(2), dtype=F64))[0]
    mc = maxcos.max_cosines(W, M)
    lib("maxcos.max_cosines(W*1e200, M)", lambda: maxcos.max_cosines(W * 1e200, M), expected="as unscaled", names=r"\bW\b", ok=close(mc))
    lib("maxcos.max_cosines(W*1e-200, M)", lambda: maxcos.max_cosines(W * 1e-200, M), expected="as unscaled", names=r"\bW\b", ok=close(mc))
    lib("kernels.gaussian_log_features(x, temperature=1e-3, terms=5)",
        lambda: kernels.gaussian_log_features(torch.rand(30, 2, generator=torch.Generator().manual_seed(0), dtype=F64),
                                              temperature=1e-3, terms=5),
        expected="a warning (or error) with the truncation bound", names="terms|temperature",
        ok=lambda r, w: any("error" in m and "terms" in m for m in w))
    lib("kernels.gaussian_features(x, temperature=1e-3, terms=5)",
        lambda: kernels.gaussian_features(torch.rand(30, 2, generator=torch.Generator().manual_seed(0), dtype=F64),
                                          temperature=1e-3, terms=5),
        expected="a warning (or error) with the truncation bound", names="terms|temperature",
        ok=lambda r, w: any("error" in m and "terms" in m for m in w))

    # -- overflow: a clear error, never NaN (issue: silent NaN)
    for dtype, s in ((F64, 1e154), (F32, 1.8e19)):
        z1, z2 = pair(4, dtype=dtype)
        tag = "float64" if dtype == F64 else "float32"
        lib(f"infonce(0.5)(z1*{s:g}, z2*{s:g}) {tag}", lambda z1=z1, z2=z2, s=s: acl.infonce(0.5)(z1 * s, z2 * s),
            expected="error naming z1, z2", names="z1")
        lib(f"contrastive_covariance(alpha, z1*{s:g}, z2*{s:g}) {tag}",
            lambda z1=z1, z2=z2, s=s, dtype=dtype: covariance.contrastive_covariance(torch.ones(6, 6, dtype=dtype), z1 * s, z2 * s),
            expected="error naming the inputs", names="a1|z1")
    z1, z2 = pair(4)
    lib("infonce_reference(z1*1e154, z2*1e154)", lambda: acl.infonce_reference(z1 * 1e154, z2 * 1e154), expected="error naming z1",
        names="z1")
    lib("acl.pair_distances(z1*1e154, z2*1e154)", lambda: acl.pair_distances(z1 * 1e154, z2 * 1e154), expected="error naming z1",
        names="z1")
    lib("covariance.energy(alpha, z1*1e154, z2*1e154)", lambda: covariance.energy(torch.ones(6, 6, dtype=F64), z1 * 1e154, z2 * 1e154),
        expected="error naming z1", names="z1")
    lib("alpha.pairwise_importance(infonce, z1*1e154, z2*1e154)",
        lambda: alpha.pairwise_importance(acl.infonce(0.5), z1 * 1e154, z2 * 1e154), expected="error naming z1", names="z1")
    lib("quadratic()(z1*1e154, z2*1e154)", lambda: acl.quadratic()(z1 * 1e154, z2 * 1e154), expected="error naming z1", names="z1")
    lib("nt_xent(h1, h2, temperature=1e-39) float32", lambda: ntxent.nt_xent(f1, f2, temperature=1e-39),
        expected="error naming temperature", names="temperature")
    lib("infonce(1e-307)(z1*10, z2*10)", lambda: acl.infonce(1e-307)(z1 * 10, z2 * 10), expected="error naming temperature",
        names="temperature")
    d_neg = torch.rand(5, 5, generator=torch.Generator().manual_seed(0), dtype=F64)
    lib("alpha.entropy_weights(d_neg*1e300, temperature=1e-3)", lambda: alpha.entropy_weights(d_neg * 1e300, temperature=1e-3),
        expected="finite weights, rows summing to 1 (or an error naming d_neg)", names="d_neg|temperature",
        ok=lambda r, w: _finite(r) and torch.allclose(r.sum(-1), torch.ones(5, dtype=F64)))
    g_sq = torch.rand(5, 5, generator=torch.Generator().manual_seed(1), dtype=F64)
    lib("kernels.gaussian_alpha(g, temperature=1e-300)", lambda: kernels.gaussian_alpha(g_sq, temperature=1e-300),
        expected="finite weights or an error naming temperature", names="temperature|g", ok=lambda r, w: _finite(r))

    # -- NaN / inf inputs: a clear error naming the tensor, never a NaN result (issue: silent NaN)
    lib("nt_xent(h1 with NaN, h2)", lambda: ntxent.nt_xent(nan_at(h1), h2, temperature=0.5), expected="error naming h1", names="h1")
    lib("nt_xent(h1, h2 with inf)", lambda: ntxent.nt_xent(h1, nan_at(h2, value=math.inf), temperature=0.5),
        expected="error naming h2", names="h2")
    lib("infonce(0.5)(z1 with NaN, z2)", lambda: acl.infonce(0.5)(nan_at(z1), z2), expected="error naming z1", names="z1")
    lib("contrastive_covariance(alpha, z1 with NaN, z2)",
        lambda: covariance.contrastive_covariance(torch.ones(6, 6, dtype=F64), nan_at(z1), z2), expected="error naming a1",
        names="a1|z1")
    lib("contrastive_covariance(alpha with NaN, z1, z2)",
        lambda: covariance.contrastive_covariance(nan_at(torch.ones(6, 6, dtype=F64)), z1, z2), expected="error naming alpha",
        names="alpha")
    lib("ncl_loss(q with NaN, target)", lambda: noncontrastive.ncl_loss(nan_at(h1), h2), expected="error naming q", names=r"\bq\b")
    lib("simsiam_loss(p1 with NaN, ...)", lambda: noncontrastive.simsiam_loss(nan_at(h1), h2, h2, h1), expected="error naming p1",
        names="p1")
    lib("maxcos.max_cosines(W with NaN, M)", lambda: maxcos.max_cosines(nan_at(W), M), expected="error naming W", names=r"\bW\b")
    lib("linalg.unit_rows(X with NaN)", lambda: linalg.unit_rows(nan_at(h1)), expected="error naming X", names=r"\bX\b")
    lib("kernels.gaussian_alpha(g with NaN)", lambda: kernels.gaussian_alpha(nan_at(g_sq), temperature=0.5), expected="error naming g",
        names=r"\bg\b")
    lib("alpha.entropy_weights(d_neg with NaN)", lambda: alpha.entropy_weights(nan_at(d_neg), temperature=0.5),
        expected="error naming d_neg", names="d_neg")
    lib("alpha.project_simplex(v with NaN)", lambda: alpha.project_simplex(nan_at(d_neg)), expected="error naming v", names=r"\bv\b")
    C2 = -torch.diag(torch.tensor([1.0, 2.0], dtype=F64))
    lib("ssl.linear_flow(theta0 with NaN, C, times)",
        lambda: ssl.linear_flow(nan_at(torch.ones(2, 2, dtype=F64)), C2, torch.tensor([0.0, 1.0], dtype=F64)),
        expected="error naming theta0", names="theta0")
    x3 = torch.randn(10, 3, generator=torch.Generator().manual_seed(5), dtype=F64)
    lib("ssl.trace_matrix(x with NaN, x_pos, x_neg)", lambda: ssl.trace_matrix(nan_at(x3), x3, x3), expected="error naming x",
        names=r"\bx\b")
    lib("landscape.encode(W with NaN, A)", lambda: landscape.encode(nan_at(torch.ones(4, 3, dtype=F64)), x3), expected="error naming W",
        names=r"\bW\b")
    atoms = torch.eye(3, dtype=F64)
    lib("onelayer.gated_covariance(W with NaN, atoms)",
        lambda: onelayer.gated_covariance(nan_at(torch.ones(1, 3, dtype=F64)), atoms), expected="error naming W", names=r"\bW\b")
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    lib("probes.linear_probe(train_x with NaN, ...)", lambda: probes.linear_probe(np.where(np.arange(3) == 1, np.nan, X), y, X, y),
        expected="error naming train_x", names="train_x")
    lib("probes.knn_probe(train_x with inf, ...)", lambda: probes.knn_probe(np.full_like(X, np.inf), y, X, y),
        expected="error naming train_x", names="train_x")

    # -- the encoder and the device (issue: crashes inside torch)
    def mlp(**kw):
        return nets.MLP([3, 5, 2], generator=torch.Generator().manual_seed(0), device="cpu", dtype=F64, **kw)

    lib("nets.MLP(...)(x with NaN)", lambda: mlp()(torch.tensor([[math.nan, 0.0, 0.0]], dtype=F64)), expected="error naming x",
        names=r"\bx\b")
    lib("nets.MLP(...)(int tensor)", lambda: mlp()(torch.ones(2, 3, dtype=torch.int64)), expected="error naming x", names=r"\bx\b")
    lib("nets.MLP(float64)(float32 tensor)", lambda: mlp()(torch.ones(2, 3, dtype=F32)), expected="error naming x", names=r"\bx\b")
    lib("nets.MLP(...)(numpy array)", lambda: mlp()(np.ones((2, 3))), expected="error naming x", names=r"\bx\b")
    lib("nets.MLP(...)(x with 4 features, model takes 3)", lambda: mlp()(torch.ones(2, 4, dtype=F64)), expected="error naming x",
        names=r"\bx\b")
    if not torch.cuda.is_available():
        lib('nets.MLP([3, 2], device="cuda") without a GPU',
            lambda: nets.MLP([3, 2], generator=torch.Generator().manual_seed(0), device="cuda"),
            expected="the package's device error", names="device|CUDA")
        lib('clbook.to_device(x, device="cuda") without a GPU', lambda: clbook.to_device([1.0], device="cuda"),
            expected="the package's device error", names="device|CUDA")
    lib("nets.MLP([3])", lambda: nets.MLP([3], generator=torch.Generator().manual_seed(0)), expected="error naming sizes",
        names="sizes")
    lib("nets.MLP([3, 0, 2])", lambda: nets.MLP([3, 0, 2], generator=torch.Generator().manual_seed(0)), expected="error naming sizes",
        names="sizes")
    lib('nets.MLP([3, 2], activation="nope")', lambda: nets.MLP([3, 2], generator=torch.Generator().manual_seed(0), activation="nope"),
        expected="error naming activation", names="activation")
    lib("nets.MLP([3, 2], generator=None)", lambda: nets.MLP([3, 2], generator=None), expected="error naming generator",
        names="generator")
    lib('clbook.to_device("abc")', lambda: clbook.to_device("abc"), expected="error naming x", names=r"\bx\b")
    lib("clbook.to_device([[1.0], [1.0, 2.0]]) (ragged)", lambda: clbook.to_device([[1.0], [1.0, 2.0]]), expected="error naming x",
        names=r"\bx\b")
    lib('clbook.to_device([1.0], device="tpu")', lambda: clbook.to_device([1.0], device="tpu"), expected="error naming device",
        names="device")
    lib('clbook.to_device([1.0], dtype="float64")', lambda: clbook.to_device([1.0], dtype="float64"),
        expected="float64 tensor or an error naming dtype", names="dtype", ok=lambda r, w: r.dtype == F64)
    lib("clbook.generator(-1)", lambda: clbook.generator(-1), expected="error naming seed", names="seed")
    lib("clbook.generator(2**70)", lambda: clbook.generator(2**70), expected="error naming seed", names="seed")
    lib("clbook.generator(1.5)", lambda: clbook.generator(1.5), expected="error naming seed", names="seed")
    lib("clbook.randn(-1, generator=g)", lambda: clbook.randn(-1, generator=clbook.generator(0)), expected="error naming shape",
        names="shape")
    lib("clbook.randn(2, generator=None)", lambda: clbook.randn(2, generator=None), expected="error naming generator",
        names="generator")
    lib('config.stream(0, "nope", {"data": 0})', lambda: config.stream(0, "nope", {"data": 0}), expected="error naming name",
        names="name")

    # -- probes (issue: crashes inside sklearn)
    lib("probes.linear_probe with one class", lambda: probes.linear_probe(X, np.zeros(20), X, np.zeros(20)),
        expected="error naming train_y", names="train_y")
    lib("probes.linear_probe(train_x[:10], train_y (20))", lambda: probes.linear_probe(X[:10], y, X, y),
        expected="error naming train_x/train_y", names="train_x|train_y")
    lib("probes.linear_probe(..., C=0)", lambda: probes.linear_probe(X, y, X, y, C=0), expected="error naming C", names=r"\bC\b")
    lib("probes.linear_probe(1-D train_x)", lambda: probes.linear_probe(X[:, 0], y, X[:, 0], y), expected="error naming train_x",
        names="train_x")
    lib("probes.linear_probe(test_x with other features)", lambda: probes.linear_probe(X, y, X[:, :2], y), expected="error naming test_x",
        names="test_x")
    lib("probes.linear_probe(..., max_iter=0)", lambda: probes.linear_probe(X, y, X, y, max_iter=0), expected="error naming max_iter",
        names="max_iter")
    lib("probes.linear_probe(torch tensors)",
        lambda: probes.linear_probe(torch.as_tensor(X), torch.as_tensor(y), torch.as_tensor(X), torch.as_tensor(y)),
        expected="the same accuracy as for arrays", names="train_x", ok=lambda r, w: r == probes.linear_probe(X, y, X, y))
    lib("probes.knn_probe(..., k=0)", lambda: probes.knn_probe(X, y, X, y, k=0), expected="error naming k", names=r"\bk\b")
    lib("probes.knn_probe(..., k=50) with 20 samples", lambda: probes.knn_probe(X, y, X, y, k=50), expected="error naming k",
        names=r"\bk\b")
    lib('probes.knn_probe(..., metric="nope")', lambda: probes.knn_probe(X, y, X, y, metric="nope"), expected="error naming metric",
        names="metric")
    lib("probes.knn_probe(zero rows, cosine)", lambda: probes.knn_probe(np.zeros((20, 3)), y, X, y, k=1),
        expected="an accuracy in [0, 1] or an error naming train_x", names="train_x", ok=lambda r, w: 0 <= r <= 1)

    # -- the linear flow (issue: RuntimeError naming no parameter)
    lib("ssl.linear_flow(theta0, C, times=[0, 400])",
        lambda: ssl.linear_flow(torch.ones(2, 2, dtype=F64), C2, torch.tensor([0.0, 400.0], dtype=F64)),
        expected="error naming times", names="times")
    lib("ssl.linear_flow(theta0, C, times=[1, 0]) (decreasing)",
        lambda: ssl.linear_flow(torch.ones(2, 2, dtype=F64), C2, torch.tensor([1.0, 0.0], dtype=F64)),
        expected="error naming times", names="times")
    lib("ssl.linear_flow(theta0 [2,2], C [3,3], times)",
        lambda: ssl.linear_flow(torch.ones(2, 2, dtype=F64), -torch.eye(3, dtype=F64), torch.tensor([0.0, 1.0], dtype=F64)),
        expected="error naming C or theta0", names=r"\bC\b|theta0")
    lib("ssl.linear_flow(..., rtol=0)",
        lambda: ssl.linear_flow(torch.ones(2, 2, dtype=F64), C2, torch.tensor([0.0, 1.0], dtype=F64), rtol=0),
        expected="error naming rtol", names="rtol")
    lib("ssl.linear_closed_form(theta0, C, times=[0, 400])",
        lambda: ssl.linear_closed_form(torch.ones(2, 2, dtype=F64), C2, torch.tensor([0.0, 400.0], dtype=F64)),
        expected="error naming times (the solution leaves float64)", names="times", ok=lambda r, w: _finite(r))
    lib("ssl.gd_two_layer(..., eta=nan)",
        lambda: ssl.gd_two_layer(torch.ones(2, 2, dtype=F64), torch.ones(2, 2, dtype=F64), C2, eta=math.nan, steps=3),
        expected="error naming eta", names="eta")

    # -- shapes, dtypes, types and domains of the losses
    lib("nt_xent(int tensors)", lambda: ntxent.nt_xent(torch.ones(4, 3, dtype=torch.int64), torch.ones(4, 3, dtype=torch.int64)),
        expected="error naming h1", names="h1")
    lib("nt_xent(float32, float64)", lambda: ntxent.nt_xent(f1, h2), expected="error naming h1/h2", names="h1|h2")
    lib("nt_xent(numpy arrays)", lambda: ntxent.nt_xent(h1.numpy(), h2.numpy()), expected="error naming h1", names="h1")
    lib("nt_xent(h1 [6,4], h2 [5,4])", lambda: ntxent.nt_xent(h1, h2[:5]), expected="error naming h1/h2", names="h1|h2")
    lib("nt_xent(1-D h1, h2)", lambda: ntxent.nt_xent(h1[0], h2[0]), expected="error naming h1", names="h1")
    lib("nt_xent(empty batch)", lambda: ntxent.nt_xent(h1[:0], h2[:0]), expected="error naming h1", names="h1")
    lib("nt_xent(..., temperature=0)", lambda: ntxent.nt_xent(h1, h2, temperature=0), expected="error naming temperature",
        names="temperature")
    lib("nt_xent(..., temperature=nan)", lambda: ntxent.nt_xent(h1, h2, temperature=math.nan), expected="error naming temperature",
        names="temperature")
    lib('nt_xent(..., temperature="0.5")', lambda: ntxent.nt_xent(h1, h2, temperature="0.5"), expected="error naming temperature",
        names="temperature")
    lib("nt_xent(..., temperature=True)", lambda: ntxent.nt_xent(h1, h2, temperature=True), expected="error naming temperature",
        names="temperature")
    lib("acl.infonce(temperature=-1)", lambda: acl.infonce(-1.0), expected="error naming temperature", names="temperature")
    lib("infonce(0.5)(z1 [2,6,4], z2 [2,6,4])", lambda: acl.infonce(0.5)(z1.expand(2, 6, 4), z2.expand(2, 6, 4)),
        expected="a batched loss or an error naming z1", names="z1", ok=lambda r, w: _finite(r))
    lib("contrastive_covariance(alpha [5,5], z1 [6,4], z2)", lambda: covariance.contrastive_covariance(torch.ones(5, 5, dtype=F64), z1, z2),
        expected="error naming alpha", names="alpha")
    lib('contrastive_covariance(..., convention="nope")',
        lambda: covariance.contrastive_covariance(torch.ones(6, 6, dtype=F64), z1, z2, convention="nope"),
        expected="error naming convention", names="convention")
    lib("acl.triplet(margin=nan)", lambda: acl.triplet(margin=math.nan), expected="error naming margin", names="margin")
    lib('acl.member("nope")', lambda: acl.member("nope"), expected="error naming name", names="name")
    lib('alpha.rule("nope")', lambda: alpha.rule("nope"), expected="error naming name", names="name")
    lib("alpha.entropy_weights(d_neg, temperature=0)", lambda: alpha.entropy_weights(d_neg, temperature=0),
        expected="error naming temperature", names="temperature")

    # -- other domains the chapters use
    lib("linalg.haar_orthonormal(3, 5)", lambda: linalg.haar_orthonormal(3, 5, generator=clbook.generator(0)),
        expected="error naming k", names=r"\bk\b")
    lib('linalg.retract(W, method="nope")', lambda: linalg.retract(torch.ones(3, 2, dtype=F64), method="nope"),
        expected="error naming method", names="method")
    lib("kernels.multi_indices(0, 3)", lambda: kernels.multi_indices(0, 3), expected="error naming dim", names="dim")
    lib("kernels.gaussian_log_features(x, temperature=0.5, terms=0)",
        lambda: kernels.gaussian_log_features(x3, temperature=0.5, terms=0), expected="error naming terms", names="terms")
    lib("kernels.uniform_alpha(0)", lambda: kernels.uniform_alpha(0), expected="error naming n", names=r"\bn\b")
    lib("maxcos.max_cosines(W [8,5], M [4,3])", lambda: maxcos.max_cosines(W, M[:4]), expected="error naming W/M", names=r"\bW\b|\bM\b")
    lib("maxcos.chance_level(0, 5, 5)", lambda: maxcos.chance_level(0, 5, 5), expected="error naming p", names=r"\bp\b")
    lib("latent.latent_summation(U, q=1.5)", lambda: latent.latent_summation(torch.eye(3, dtype=F64), 1.5), expected="error naming q",
        names=r"\bq\b")
    lib("sparse_coding.sample(..., sparsity=1.5)",
        lambda: sparse_coding.sample(10, p=5, d=3, sparsity=1.5, noise=0.1, generator=clbook.generator(0)),
        expected="error naming sparsity", names="sparsity")
    lib("views.moons_views(0)", lambda: views.moons_views(0), expected="error naming n", names=r"\bn\b")
    lib("wide.init_gap(h=1, x)", lambda: wide.init_gap(1, x3[0, :2], generator=clbook.generator(0)), expected="error naming h",
        names=r"\bh\b")
    lib("twolayer.blowup_time(y0=1, b=0)", lambda: twolayer.blowup_time(1.0, 0.0), expected="error naming b (or inf)", names=r"\bb\b",
        ok=lambda r, w: r == math.inf)
    lib('onelayer.activation(t, "nope")', lambda: onelayer.activation(x3, "nope"), expected="error naming name/activation",
        names="name|activation")
    lib("digits.shifted_digits(canvas=5)", lambda: digits.shifted_digits(canvas=5), expected="error naming canvas", names="canvas")
    lib("hierarchical.make_worlds([])", lambda: hierarchical.make_worlds([]), expected="error naming seeds", names="seeds")
    # -- directions on the sphere: the one-layer model's and the critical-point tools' (the rest of the scale class)
    from clbook.dynamics import critical

    Wn = torch.randn(3, 4, generator=torch.Generator().manual_seed(7), dtype=F64)
    U4 = torch.linalg.qr(torch.randn(4, 2, generator=torch.Generator().manual_seed(8), dtype=F64))[0]
    eye4 = torch.eye(4, dtype=F64)
    mp = onelayer.match_patterns(Wn, U4, threshold=0.5)
    lib("onelayer.match_patterns(W*1e200, U)", lambda: onelayer.match_patterns(Wn * 1e200, U4, threshold=0.5),
        expected="as unscaled", names=r"\bW\b", ok=lambda r, w: all(torch.equal(a, b) for a, b in zip(r, mp, strict=True)))
    lib("onelayer.match_patterns(W [3,4], U [2,4])", lambda: onelayer.match_patterns(Wn, U4.T), expected="error naming U",
        names=r"\bU\b")
    pa = onelayer.projected_ascent(Wn[:1].abs(), eye4, max_steps=50).W
    for s in (1e200, 1e-200):
        lib(f"onelayer.projected_ascent(W0*{s:g}, atoms)", lambda s=s: onelayer.projected_ascent(Wn[:1].abs() * s, eye4, max_steps=50).W,
            expected="as unscaled", names="W0", ok=close(pa))
    lib("onelayer.projected_ascent(W0 with a zero row, atoms)",
        lambda: onelayer.projected_ascent(torch.zeros(1, 4, dtype=F64), eye4, max_steps=5), expected="error naming W0", names="W0")
    lme = onelayer.lme_report(Wn[0].abs(), eye4)
    for s in (1e200, 1e-200):
        lib(f"onelayer.lme_report(w*{s:g}, atoms)", lambda s=s: onelayer.lme_report(Wn[0].abs() * s, eye4),
            expected="as unscaled", names=r"\bw\b",
            ok=lambda r, w: abs(r.value - lme.value) < 1e-12 and abs(r.residual - lme.residual) < 1e-12)

    def tangent_ok(w0):
        def ok(r, w):
            return (_finite(r) and torch.allclose(r.T @ r, torch.eye(3, dtype=F64), atol=1e-12)
                    and float((w0 / w0.norm() @ r).abs().max()) < 1e-12)
        return ok

    for s in (1e200, 1e-200):
        lib(f"critical.tangent_basis(w*{s:g})", lambda s=s: critical.tangent_basis(Wn[0] * s),
            expected="an orthonormal basis of w's complement", names=r"\bw\b", ok=tangent_ok(Wn[0]))
    lib("landscape.encode(W [4,3], A [10,5])", lambda: landscape.encode(torch.ones(4, 3, dtype=F64), torch.ones(10, 5, dtype=F64)),
        expected="error naming W/A", names=r"\bW\b|\bA\b")


# ------------------------------------------------------------------------------------------------ command lines


CLI: list[dict] = []


def cli(experiment: str, argv: list[str], *, expected: str, words: str | None = None, ok=None, timeout: float = 180.0,
        setup=None, label: str | None = None):
    """Register a command line: exit 2 with one stderr line matching ``words``, or exit 0 with ``ok(tmp, stdout)``."""
    CLI.append(dict(experiment=experiment, argv=argv, expected=expected, words=words, ok=ok, timeout=timeout, setup=setup,
                    label=label))


def _run_cli(case: dict, tmp: Path, env: dict) -> tuple[str, str]:
    argv = [a.replace("{tmp}", str(tmp)) for a in case["argv"]]
    if case["setup"] is not None:
        case["setup"](tmp)
    command = [sys.executable, "-m", f"clbook.experiments.{case['experiment']}", *argv]
    start = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=case["timeout"], env=env, cwd=tmp)
    except subprocess.TimeoutExpired:
        return "crash", f"hang: no exit within {case['timeout']:g} s"
    seconds = time.monotonic() - start
    err_lines = [line for line in proc.stderr.splitlines() if line.strip()]
    tail = " | ".join(err_lines[-3:])[:400]
    got = f"exit {proc.returncode} in {seconds:.1f} s; stderr {len(err_lines)} line(s): {tail}"
    if "Traceback (most recent call last)" in proc.stderr:
        return "crash", got
    if proc.returncode == 2:
        if len(err_lines) == 1 and (case["words"] is None or re.search(case["words"], err_lines[0])):
            return "clear", got
        return "crash", got + " [not one line naming the option]"
    if proc.returncode == 0:
        if case["ok"] is not None:
            try:
                good = bool(case["ok"](tmp, proc.stdout))
            except Exception as exc:  # noqa: BLE001
                good, got = False, got + f" (check failed: {type(exc).__name__}: {exc})"
            if good:
                return "handled", got + f"; stdout: {' '.join(proc.stdout.split())[:200]}"
        return "silent", got + f"; stdout: {' '.join(proc.stdout.split())[:200]}"
    return "crash", got


def _complete(path: Path, n: int | None = None) -> bool:
    data = json.loads(path.read_text())
    return data["complete"] and (n is None or len(data["jobs"]) == n)


def cli_cases() -> None:  # noqa: PLR0915
    # a tiny complete wide result, computed once (two jobs of 2 steps) and copied where a case needs it
    W = ["--quick", "--widths", "2,3", "--seeds", "0", "--steps", "2", "--activations", "tanh", "--workers", "1"]

    def with_result(tmp: Path) -> None:
        shutil.copy(TINY / "quick-fig2.json", tmp / "quick-fig2.json")

    def help_ok(names):
        return lambda tmp, out: "example:" in out and all(n in out for n in names)

    # -- wide: names, seeds, numbers
    cli("wide", ["--activations", "nope", "--out", "{tmp}"], expected="exit 2 naming --activations", words="activations")
    cli("wide", ["--activations", "tanh,tanh", "--out", "{tmp}", "--quick"], expected="exit 2 naming activations", words="activations")
    cli("wide", ["--widths", "1", "--out", "{tmp}", "--quick"], expected="exit 2 naming widths", words="widths")
    cli("wide", ["--widths", "abc", "--out", "{tmp}"], expected="exit 2 naming --widths", words="widths")
    cli("wide", ["--widths", "", "--out", "{tmp}"], expected="exit 2 naming --widths", words="widths")
    cli("wide", ["--seeds", "-1", "--out", "{tmp}", "--quick"], expected="exit 2 naming --seeds", words="seeds")
    cli("wide", ["--seeds", "1.5", "--out", "{tmp}", "--quick"], expected="exit 2 naming --seeds", words="seeds")
    cli("wide", ["--seeds", "0,0", "--out", "{tmp}", "--quick", "--widths", "2", "--steps", "1"],
        expected="exit 2 naming seeds (a repeated seed)", words="seeds")
    cli("wide", ["--steps", "0", "--out", "{tmp}"], expected="exit 2 naming --steps", words="steps")
    cli("wide", ["--workers", "0", "--out", "{tmp}"], expected="exit 2 naming --workers", words="workers")
    cli("wide", ["--workers", "1000", "--out", "{tmp}", "--quick"], expected="exit 2 naming workers", words="workers")
    cli("wide", ["--backend", "mpi", "--out", "{tmp}"], expected="exit 2 naming --backend", words="backend")
    cli("wide", ["--worker-timeout", "0", "--out", "{tmp}"], expected="exit 2 naming --worker-timeout", words="worker-timeout")
    cli("wide", ["--worker-timeout", "5", *W, "--out", "{tmp}"], expected="exit 2: --worker-timeout applies to Dask runs only",
        words="worker-timeout")
    cli("wide", ["--nope", "--out", "{tmp}"], expected="exit 2 naming --nope", words="nope")
    cli("wide", ["extra", "--out", "{tmp}"], expected="exit 2 naming the extra argument", words="extra")
    # -- --out
    cli("wide", [*W, "--out", "{tmp}/afile"], expected="exit 2 naming --out (an existing file)", words="--out",
        setup=lambda tmp: (tmp / "afile").write_text("x"))
    cli("wide", [*W, "--out", "{tmp}/afile/sub"], expected="exit 2 naming --out (cannot be created)", words="--out",
        setup=lambda tmp: (tmp / "afile").write_text("x"))
    cli("wide", [*W, "--out", "/proc"], expected="exit 2 naming --out (exists, not writable)", words="--out")
    cli("wide", [*W, "--out", "/proc/clbook-review/x"], expected="exit 2 naming --out (cannot be created)", words="--out")
    cli("wide", [*W, "--out", ""], expected="exit 2 naming --out (empty)", words="--out")
    cli("wide", [*W, "--out", "{tmp}/corrupt"], expected="exit 2 naming the unreadable result file", words="quick-fig2|--out|json",
        setup=lambda tmp: ((tmp / "corrupt").mkdir(), (tmp / "corrupt" / "quick-fig2.partial.json").write_text("{not json")))
    # -- scheduler
    cli("wide", [*W, "--out", "{tmp}", "--scheduler", "tcp://127.0.0.1:9"], expected="exit 2 naming --scheduler (5 s after the start)",
        words="--scheduler", timeout=90)
    cli("wide", [*W, "--out", "{tmp}", "--scheduler", "tcp://10.255.255.1:8786"],
        expected="exit 2 naming --scheduler (no Dask answer)", words="--scheduler", timeout=90)
    cli("wide", [*W, "--out", "{tmp}", "--scheduler", "::::"], expected="exit 2 naming --scheduler (not an address)",
        words="scheduler", timeout=90)
    cli("wide", [*W, "--out", "{tmp}", "--scheduler", "tcp://no-such-host.invalid:8786"],
        expected="exit 2 naming --scheduler (unknown host)", words="scheduler", timeout=90)
    cli("wide", [*W, "--out", "{tmp}", "--backend", "local", "--scheduler", "tcp://127.0.0.1:9"],
        expected="exit 2 naming --scheduler/--backend (contradictory)", words="scheduler|backend", timeout=90)
    # -- results: rerun, --fresh, other settings
    cli("wide", [*W, "--out", "{tmp}"], expected="exit 0, a complete 2-job result (a tiny run)",
        ok=lambda tmp, out: _complete(tmp / "quick-fig2.json", 2), timeout=240)
    cli("wide", [*W, "--out", "{tmp}"], expected="exit 0, the complete result unchanged byte for byte (nothing to compute)",
        setup=lambda tmp: (with_result(tmp), (tmp / "before").write_bytes((tmp / "quick-fig2.json").read_bytes())),
        ok=lambda tmp, out: (tmp / "quick-fig2.json").read_bytes() == (tmp / "before").read_bytes())
    cli("wide", [*W, "--out", "{tmp}", "--fresh"], expected="exit 0, the same 2 jobs recomputed (complete)", setup=with_result,
        ok=lambda tmp, out: _complete(tmp / "quick-fig2.json", 2), timeout=240)
    cli("wide", [*W[:2], "2", *W[3:], "--out", "{tmp}", "--fresh"], expected="exit 2 naming --discard-complete (would shrink 2 -> 1)",
        words="discard-complete", setup=with_result)
    cli("wide", [*W[:2], "2", *W[3:], "--out", "{tmp}"], expected="exit 2 naming --discard-complete (would shrink 2 -> 1)",
        words="discard-complete", setup=with_result)
    cli("wide", [*W[:6], "3", *W[7:], "--out", "{tmp}"], expected="exit 2 naming --discard-complete (other settings)",
        words="discard-complete", setup=with_result)
    cli("wide", [*W[:2], "2", *W[3:], "--out", "{tmp}", "--fresh", "--discard-complete"],
        expected="exit 0, a complete 1-job result (explicitly discarded)", setup=with_result,
        ok=lambda tmp, out: _complete(tmp / "quick-fig2.json", 1), timeout=240)
    cli("wide", ["--help"], expected="exit 0, names and an example", ok=help_ok(["tanh", "softplus2", "example:", "--discard-complete"]))
    # -- hierarchical
    cli("hierarchical", ["nope", "--out", "{tmp}"], expected="exit 2 naming the experiment", words="nope|experiment")
    cli("hierarchical", [], expected="exit 2 naming the experiment argument", words="experiment|arguments")
    cli("hierarchical", ["digits", "--betas", "2", "--out", "{tmp}"], expected="exit 2 naming --betas", words="betas")
    cli("hierarchical", ["digits", "--candidates", "2", "--out", "{tmp}"], expected="exit 2 naming --candidates", words="candidates")
    cli("hierarchical", ["bench", "--seeds", "4", "--out", "{tmp}"], expected="exit 2 naming --seeds", words="seeds")
    cli("hierarchical", ["bench", "--seeds", "1,2,3", "--out", "{tmp}"], expected="exit 2 naming --seeds (the default, given)",
        words="seeds")
    cli("hierarchical", ["bench", "--workers", "2", "--out", "{tmp}"], expected="exit 2 naming --workers (bench runs one job)",
        words="workers")
    cli("hierarchical", ["table1", "--seeds", "0", "--out", "{tmp}"], expected="exit 2 naming --seeds", words="seeds")
    cli("hierarchical", ["table1", "--seeds", "1,1", "--out", "{tmp}"], expected="exit 2 naming --seeds", words="seeds")
    cli("hierarchical", ["table1", "--candidates", "21", "--out", "{tmp}"], expected="exit 2 naming candidates", words="candidates")
    cli("hierarchical", ["table1", "--betas", "0", "--out", "{tmp}"], expected="exit 2 naming --betas", words="betas")
    cli("hierarchical", ["table1", "--threads", "0", "--out", "{tmp}"], expected="exit 2 naming --threads", words="threads")
    cli("hierarchical", ["table1", "--quick", "--out", "{tmp}/afile"], expected="exit 2 naming --out", words="--out",
        setup=lambda tmp: (tmp / "afile").write_text("x"))
    cli("hierarchical", ["--help"], expected="exit 0, names and an example",
        ok=help_ok(["table1", "fig4", "digits", "bench", "example:", "--seeds"]))
    # -- new_losses
    cli("new_losses", ["--methods", "nope", "--out", "{tmp}"], expected="exit 2 naming --methods", words="methods|nope")
    cli("new_losses", ["--methods", "quadratic", "--out", "{tmp}", "--quick"], expected="exit 2 naming --name (a subset)",
        words="name")
    cli("new_losses", ["--methods", "quadratic,quadratic", "--name", "x", "--out", "{tmp}"], expected="exit 2 naming --methods",
        words="methods")
    cli("new_losses", ["--seeds", "0,0", "--name", "x", "--out", "{tmp}"], expected="exit 2 naming --seeds", words="seeds")
    cli("new_losses", ["--seeds", "x", "--out", "{tmp}"], expected="exit 2 naming --seeds", words="seeds")
    cli("new_losses", ["--name", "../escape", "--seeds", "0", "--out", "{tmp}"], expected="exit 2 naming --name", words="name")
    cli("new_losses", ["--name", "", "--seeds", "0", "--out", "{tmp}"], expected="exit 2 naming --name", words="name")
    cli("new_losses", ["--threads", "-2", "--out", "{tmp}"], expected="exit 2 naming --threads", words="threads")
    cli("new_losses", ["--quick", "--out", "{tmp}", "--scheduler", "tcp://127.0.0.1:9"], expected="exit 2 naming --scheduler",
        words="--scheduler", timeout=90)
    cli("new_losses", ["--quick", "--out", "{tmp}/afile/x"], expected="exit 2 naming --out", words="--out",
        setup=lambda tmp: (tmp / "afile").write_text("x"))
    cli("new_losses", ["--help"], expected="exit 0, names and an example",
        ok=help_ok(["quadratic", "InfoNCE", "example:", "--name"]))
    # -- landscape
    cli("landscape", ["nope", "--out", "{tmp}"], expected="exit 2 naming the experiment", words="nope|EXPERIMENT|experiment")
    cli("landscape", ["--out", "{tmp}"], expected="exit 2 naming EXPERIMENT", words="EXPERIMENT|experiment|arguments")
    cli("landscape", ["table4", "table4", "--out", "{tmp}"], expected="exit 2 (listed twice)", words="once|table4")
    cli("landscape", ["bench", "table4", "--out", "{tmp}"], expected="exit 2 (bench stands alone)", words="bench|alone")
    cli("landscape", ["table4", "--models", "nope", "--out", "{tmp}"], expected="exit 2 naming --models", words="models|nope")
    cli("landscape", ["table4", "--models", "CL-basic", "--quick", "--out", "{tmp}"],
        expected="exit 2 naming --models (table4 trains NCL-basic only)", words="models")
    cli("landscape", ["figures", "--models", "CL-basic", "--quick", "--out", "{tmp}"],
        expected="exit 2 naming --models (figures has its own models)", words="models")
    cli("landscape", ["table2-independent", "--models", "SimCLR", "--quick", "--epochs", "1", "--seeds", "1", "--sparsities", "0.1",
                      "--workers", "1", "--out", "{tmp}"],
        expected="exit 0: any model may be trained under Table 2's masks; one SimCLR job",
        ok=lambda tmp, out: list(json.loads((tmp / "quick-table2-independent.json").read_text())["jobs"]) == ["SimCLR/0.1"],
        timeout=240)
    cli("landscape", ["figures", "--seeds", "1,2,3,4", "--quick", "--out", "{tmp}"],
        expected="exit 2 naming --seeds (figures runs 3 seeds)", words="seeds")
    cli("landscape", ["table4", "--factors", "noise=0", "--out", "{tmp}"], expected="exit 2 naming --factors", words="factors")
    cli("landscape", ["table4", "--sparsities", "0", "--out", "{tmp}"], expected="exit 2 naming --sparsities", words="sparsities")
    cli("landscape", ["table4", "--sparsities", "nan", "--out", "{tmp}"], expected="exit 2 naming --sparsities", words="sparsities")
    cli("landscape", ["table4", "--seeds", "1,1", "--quick", "--out", "{tmp}"], expected="exit 2 naming --seeds (repeated)",
        words="seeds")
    cli("landscape", ["table4", "--epochs", "0", "--out", "{tmp}"], expected="exit 2 naming --epochs", words="epochs")
    cli("landscape", ["bench", "--seeds", "1", "--out", "{tmp}"], expected="exit 2 naming --seeds", words="seeds")
    cli("landscape", ["faithfulness", "--out", "{tmp}"], expected="exit 2 naming --checkout", words="checkout")
    cli("landscape", ["faithfulness", "--checkout", "{tmp}/none", "--out", "{tmp}"], expected="exit 2 naming --checkout",
        words="checkout")
    cli("landscape", ["table4", "--quick", "--out", "{tmp}/afile"], expected="exit 2 naming --out", words="--out",
        setup=lambda tmp: (tmp / "afile").write_text("x"))
    cli("landscape", ["table4", "--quick", "--epochs", "1", "--seeds", "1", "--out", "{tmp}", "--scheduler", "tcp://127.0.0.1:9"],
        expected="exit 2 naming --scheduler", words="--scheduler", timeout=90)
    cli("landscape", ["table4", "table1", "--quick", "--epochs", "1", "--seeds", "1", "--workers", "1", "--out", "{tmp}"],
        expected="exit 2 naming --discard-complete before table4's jobs (table1 has a complete result with other settings)",
        words="discard-complete",
        setup=lambda tmp: (tmp / "quick-table1.json").write_text(json.dumps(
            {"experiment": "table1", "name": "quick-table1", "complete": True, "settings": {"other": 1},
             "jobs": {"x": {"params": {}, "result": 1, "seconds": 1.0}}, "provenance": {"code": "git 0"}})),
        ok=None, timeout=240)
    cli("landscape", ["--help"], expected="exit 0, names and an example",
        ok=help_ok(["table2-independent", "NCL-basic", "SimCLR", "example:", "--discard-complete"]))


TINY: Path = Path()


def run_cli(only: str | None) -> list[dict]:
    global TINY
    rows = []
    base = Path(tempfile.mkdtemp(prefix="clbook-review-"))
    env = dict(os.environ, CLBOOK_THREADS="1", CLBOOK_DEVICE="cpu", CLBOOK_RESULTS=str(base / "default-results"),
               PYTHONPATH=os.environ.get("PYTHONPATH") or str(ROOT), TQDM_DISABLE="1", PYTHONWARNINGS="ignore")
    try:
        TINY = base / "tiny"
        TINY.mkdir()
        proc = subprocess.run([sys.executable, "-m", "clbook.experiments.wide", "--quick", "--widths", "2,3", "--seeds", "0",
                               "--steps", "2", "--activations", "tanh", "--workers", "1", "--out", str(TINY)],
                              capture_output=True, text=True, env=env, timeout=300)
        if proc.returncode != 0:
            raise SystemExit(f"the tiny wide result could not be computed:\n{proc.stderr}")
        for k, case in enumerate(CLI):
            call = f"python -m clbook.experiments.{case['experiment']} {' '.join(case['argv'])}"
            if only and only not in call:
                continue
            tmp = base / f"case{k:03d}"
            tmp.mkdir()
            cls, got = _run_cli(case, tmp, env)
            rows.append(dict(kind="command line", call=call, expected=case["expected"], got=got, **{"class": cls}))
            print(f"{cls:8s} {call}\n         {got[:240]}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return rows


def run_lib(only: str | None) -> list[dict]:
    import torch

    torch.set_num_threads(1)
    library_cases()
    rows = []
    for case in LIB:
        if only and only not in case["call"]:
            continue
        cls, got = classify_lib(case)
        rows.append(dict(kind="library", call=case["call"], expected=case["expected"], got=got, **{"class": cls}))
        print(f"{cls:8s} {case['call']}\n         {got[:240]}", flush=True)
    return rows


def counts(rows: list[dict]) -> dict:
    return {c: sum(r["class"] == c for r in rows) for c in CLASSES}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("lib", "cli"), default=None, help="run only the library calls or the command lines")
    parser.add_argument("-k", default=None, help="run only the calls whose text contains this (no report written)")
    parser.add_argument("--update", action="store_true",
                        help="with -k: replace those calls' rows in the existing report and recount it")
    args = parser.parse_args(argv)
    start = time.time()
    rows: list[dict] = []
    if args.only in (None, "lib"):
        rows += run_lib(args.k)
    if args.only in (None, "cli"):
        cli_cases()
        rows += run_cli(args.k)
    lib_rows = [r for r in rows if r["kind"] == "library"]
    cli_rows = [r for r in rows if r["kind"] == "command line"]
    summary = {"library": counts(lib_rows), "command line": counts(cli_rows), "total": counts(rows),
               "calls": {"library": len(lib_rows), "command line": len(cli_rows)}, "seconds": round(time.time() - start, 1)}
    print(json.dumps(summary, indent=1))
    if args.only is None and args.k is None:
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        REPORT.write_text(json.dumps({"summary": summary, "calls": rows}, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {REPORT}")
    elif args.update and args.k is not None:
        report = json.loads(REPORT.read_text())
        new = {(r["kind"], r["call"]): r for r in rows}
        merged = [new.pop((r["kind"], r["call"]), r) for r in report["calls"]]
        merged += list(new.values())
        lib_rows = [r for r in merged if r["kind"] == "library"]
        cli_rows = [r for r in merged if r["kind"] == "command line"]
        report["summary"] = {"library": counts(lib_rows), "command line": counts(cli_rows), "total": counts(merged),
                             "calls": {"library": len(lib_rows), "command line": len(cli_rows)},
                             "seconds": report["summary"].get("seconds"),
                             "rerun": sorted({*report["summary"].get("rerun", []), *(r["call"] for r in rows)})}
        REPORT.write_text(json.dumps({"summary": report["summary"], "calls": merged}, indent=1, ensure_ascii=False) + "\n")
        print(f"updated {len(rows)} rows of {REPORT}: {json.dumps(report['summary']['total'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
