"""Failure is loud: numerically safe losses (scale invariance at any finite scale, overflow that is an error naming
the parameter), domain contracts of the encoders and probes, and no hidden global state."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from clbook import covariance, kernels
from clbook.losses import acl, noncontrastive, ntxent
from clbook.losses._safe import unit_rows_any_scale

F64, F32 = torch.float64, torch.float32
_CASES = settings(max_examples=40, deadline=None, derandomize=True, database=None)


def _pair(seed, B=6, m=4, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, m, generator=g, dtype=F64).to(dtype), torch.randn(B, m, generator=g, dtype=F64).to(dtype)


# ------------------------------------------------------------------ 1. numerically safe losses


@_CASES
@given(seed=st.integers(0, 2**31 - 1), exponent=st.floats(-300, 300), temperature=st.sampled_from([0.05, 0.5, 2.0]))
def test_nt_xent_is_scale_invariant_across_float64(seed, exponent, temperature):
    h1, h2 = _pair(seed)
    s = 10.0**exponent
    ref = ntxent.nt_xent(h1, h2, temperature=temperature)
    got = ntxent.nt_xent(h1 * s, h2 * s, temperature=temperature)
    assert math.isfinite(float(got))
    assert float(got) == pytest.approx(float(ref), rel=1e-12, abs=1e-12)
    assert float(ntxent.nt_xent_reference(h1 * s, h2 * s, temperature=temperature)) == pytest.approx(float(ref), rel=1e-12)


@_CASES
@given(seed=st.integers(0, 2**31 - 1), exponent=st.floats(-37, 37))
def test_nt_xent_is_scale_invariant_across_float32(seed, exponent):
    h1, h2 = _pair(seed, dtype=F32)
    s = 10.0**exponent
    ref = float(ntxent.nt_xent(h1, h2, temperature=0.5))
    assert float(ntxent.nt_xent(h1 * s, h2 * s, temperature=0.5)) == pytest.approx(ref, rel=1e-5)


@_CASES
@given(seed=st.integers(0, 2**31 - 1), exponent=st.floats(-300, 300), row_exponents=st.lists(st.floats(-300, 300), min_size=6, max_size=6))
def test_cosine_quantities_are_scale_invariant_row_by_row(seed, exponent, row_exponents):
    h1, h2 = _pair(seed)
    rows = torch.tensor([10.0**e for e in row_exponents], dtype=F64).unsqueeze(1)
    assert torch.allclose(unit_rows_any_scale(h1 * rows), unit_rows_any_scale(h1), rtol=1e-13, atol=1e-15)
    s = 10.0**exponent
    assert float(noncontrastive.ncl_loss(h1 * rows, h2 * s)) == pytest.approx(float(noncontrastive.ncl_loss(h1, h2)), rel=1e-12, abs=1e-12)
    assert float(noncontrastive.simsiam_loss(h1 * s, h2 * rows, h2, h1 * s)) == pytest.approx(
        float(noncontrastive.simsiam_loss(h1, h2, h2, h1)), rel=1e-12, abs=1e-12)


def test_scaled_unit_rows_have_correct_gradients():
    h = _pair(3)[0]
    for s in (1e-200, 1e-13, 1.0, 1e200):
        x = (h * s).requires_grad_(True)
        unit_rows_any_scale(x)[:, 0].sum().backward()
        y = h.clone().requires_grad_(True)
        unit_rows_any_scale(y)[:, 0].sum().backward()
        assert torch.allclose(x.grad * s, y.grad, rtol=1e-12, atol=1e-14)


def test_a_zero_row_is_the_zero_vector_and_normal_rows_are_unchanged():
    h = _pair(1)[0]
    h[2] = 0.0
    u = unit_rows_any_scale(h)
    assert bool((u[2] == 0).all()) and torch.isfinite(u).all()
    assert torch.equal(unit_rows_any_scale(h[[0, 1, 3]]), h[[0, 1, 3]] / h[[0, 1, 3]].norm(dim=-1, keepdim=True))


def test_nt_xent_temperature_that_overflows_is_an_error():
    h1, h2 = _pair(0, dtype=F32)
    with pytest.raises(ValueError, match="temperature"):
        ntxent.nt_xent(h1, h2, temperature=1e-39)


@pytest.mark.parametrize("dtype,scale", [(F64, 1e154), (F64, 1e300), (F32, 1.8e19), (F32, 1e30)])
def test_infonce_that_overflows_names_the_views(dtype, scale):
    z1, z2 = _pair(4, dtype=dtype)
    for loss in (acl.infonce(0.5), acl.quadratic(), acl.triplet()):
        with pytest.raises(ValueError, match="z1, z2"):
            loss(z1 * scale, z2 * scale)
    with pytest.raises(ValueError, match="z1, z2"):
        acl.infonce_reference(z1 * scale, z2 * scale)


def test_infonce_logits_that_overflow_name_the_temperature():
    z1, z2 = _pair(4)
    with pytest.raises(ValueError, match="temperature"):
        acl.infonce(1e-307)(z1 * 10, z2 * 10)


def test_infonce_stays_finite_just_below_the_overflow():
    z1, z2 = _pair(5)
    value = acl.infonce(1.0)(z1 * 1e100, z2 * 1e100)
    assert math.isfinite(float(value))


@pytest.mark.parametrize("dtype,scale", [(F64, 1e150), (F64, 1e-150), (F32, 1e18), (F32, 1e-18)])
def test_contrastive_covariance_and_energy_are_exactly_bilinear_near_the_limits(dtype, scale):
    z1, z2 = _pair(6, dtype=dtype)
    alpha = torch.rand(6, 6, generator=torch.Generator().manual_seed(0), dtype=F64).to(dtype)
    ref = covariance.contrastive_covariance(alpha, z1, z2)
    got = covariance.contrastive_covariance(alpha, z1 * scale, z2 * scale)
    assert torch.isfinite(got).all()
    if scale > 1:  # the product scale**2 is representable in the first case only for large scales
        rtol = 1e-12 if dtype == F64 else 1e-4
        assert torch.allclose(got / scale / scale, ref, rtol=rtol, atol=rtol * float(ref.abs().max()))
        e = covariance.energy(alpha, z1 * scale, z2 * scale) / scale / scale
        assert float(e) == pytest.approx(float(covariance.energy(alpha, z1, z2)), rel=rtol * 10)


@pytest.mark.parametrize("dtype,scale", [(F64, 1e154), (F32, 1.8e19)])
def test_contrastive_covariance_that_overflows_names_the_inputs(dtype, scale):
    z1, z2 = _pair(6, dtype=dtype)
    alpha = torch.ones(6, 6, dtype=dtype)
    with pytest.raises(ValueError, match="a1"):
        covariance.contrastive_covariance(alpha, z1 * scale, z2 * scale)
    with pytest.raises(ValueError, match="z1"):
        covariance.energy(alpha, z1 * scale, z2 * scale)


def test_gaussian_log_features_warns_with_the_error_bound():
    x = torch.rand(30, 2, generator=torch.Generator().manual_seed(0), dtype=F64)
    with pytest.warns(RuntimeWarning, match=r"log-kernel error may reach .* terms >= \d+"):
        kernels.gaussian_log_features(x, temperature=1e-3, terms=5)
    grid = torch.linspace(0, 2, 81, dtype=F64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the bound is exact in 1-D: a tolerance above it is quiet
        for L, tol in ((2, 5.81), (10, 0.34), (30, 2.2e-9)):
            kernels.gaussian_log_features(grid, temperature=0.5, terms=L, shift=torch.zeros(1, dtype=F64), tolerance=tol)
        kernels.gaussian_log_features(x, temperature=1e-3, terms=5, tolerance=None)
    with pytest.warns(RuntimeWarning):
        kernels.gaussian_log_features(grid, temperature=0.5, terms=10, shift=torch.zeros(1, dtype=F64), tolerance=0.33)


def test_gaussian_truncation_bound_is_exact_in_one_dimension():
    grid = torch.linspace(0, 2, 81, dtype=F64)
    for L in (2, 5, 10, 20):
        lp = kernels.gaussian_log_features(grid, temperature=0.5, terms=L, shift=torch.zeros(1, dtype=F64), tolerance=None)
        err = float((kernels.log_kernel_from_features(lp, lp) + (grid[:, None] - grid[None]).pow(2) / 1.0).abs().max())
        assert err == pytest.approx(kernels._truncation_bound(grid[:, None], 0.5, L), rel=1e-9)


def test_unchanged_numbers_for_normal_inputs():
    h1, h2 = _pair(9, B=8, m=5)
    u = torch.cat([h1, h2]) / torch.cat([h1, h2]).norm(dim=-1, keepdim=True).clamp_min(1e-12)
    S = u @ u.T / 0.05
    S.fill_diagonal_(-math.inf)
    k = torch.arange(16)
    old = (torch.logsumexp(S, -1) - S[k, (k + 8) % 16]).mean()
    assert float(ntxent.nt_xent(h1, h2, temperature=0.05)) == pytest.approx(float(old), rel=1e-14)
    assert np.isfinite(float(acl.infonce(0.5)(h1, h2)))


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e300])
def test_max_cosines_are_scale_invariant(scale):
    from clbook.metrics import maxcos

    W, M = _pair(11, B=8, m=5)[0], torch.linalg.qr(_pair(12, B=5, m=3)[0])[0]
    ref = maxcos.max_cosines(W, M)
    assert torch.allclose(maxcos.max_cosines(W * scale, M), ref, rtol=1e-12, atol=1e-14)
    assert torch.allclose(maxcos.max_cosines(W, M * scale), ref, rtol=1e-12, atol=1e-14)
    W32, M32 = W.float(), M.float()
    assert torch.allclose(maxcos.max_cosines(W32 * 1e20, M32), maxcos.max_cosines(W32, M32), rtol=1e-5)
    W0 = W.clone()
    W0[3] = 0.0  # a zero neuron still counts as cosine 0
    assert torch.allclose(maxcos.max_cosines(W0 * scale, M), maxcos.max_cosines(W0, M), rtol=1e-12, atol=1e-14)


def test_unit_rows_columns_frobenius_are_exact_where_a_norm_overflows():
    from clbook import linalg

    X = _pair(13)[0]
    for s in (1e160, 1e300):
        Y = X.clone()
        Y[1] *= s  # one row overflows its squared norm; the others keep the old formula bit for bit
        u = linalg.unit_rows(Y)
        assert torch.allclose(u[1], X[1] / X[1].norm(), rtol=1e-14, atol=1e-16)
        assert torch.equal(u[[0, 2, 3]], Y[[0, 2, 3]] / Y[[0, 2, 3]].norm(dim=-1, keepdim=True))
        assert torch.allclose(linalg.unit_columns(Y.T).T, u, rtol=1e-14, atol=1e-16)
        assert torch.allclose(linalg.unit_frobenius(X * s), X / X.norm(), rtol=1e-14, atol=1e-16)
    Z = X.clone()
    Z[0] = 0.0
    Z[1] *= 1e200
    assert torch.equal(linalg.unit_rows(Z)[0], torch.zeros(4, dtype=F64))  # a zero row stays zero
    tiny = X * 1e-13  # below the documented floor eps: unchanged behaviour (divided by eps)
    assert torch.equal(linalg.unit_rows(tiny), tiny / 1e-12)


@pytest.mark.parametrize("name", ["unit_rows", "unit_columns", "unit_frobenius"])
def test_unit_normalisations_refuse_nan_and_inf(name):
    from clbook import linalg

    for bad in (math.nan, math.inf):
        X = _pair(14)[0]
        X[2, 1] = bad
        with pytest.raises(ValueError, match="finite"):
            getattr(linalg, name)(X)


def test_batch_size_errors_name_the_inputs():
    from clbook import config

    h = _pair(15)[0]
    with pytest.raises(ValueError, match=r"^h1 and h2 must hold a batch of B >= 2"):
        ntxent.nt_xent(h[:0], h[:0])
    with pytest.raises(ValueError, match=r"^q, target must hold a batch of B >= 1"):
        noncontrastive.ncl_loss(h[:0], h[:0])
    with pytest.raises(ValueError, match=r"^z1 and z2 must hold a batch of n >= 2"):
        acl.infonce(0.5)(h[:1], h[:1])
    with pytest.raises(ValueError, match=r"^name \(the stream\) must be one of"):
        config.stream(0, "nope", {"data": 0})


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_directions_on_the_sphere_are_scale_invariant(scale):
    """The one-layer model's and the critical-point tools' directions: W0 * 1e200 is the same start as W0 (they
    gave zeros, NaN errors that named W, or 'w must be non-zero' for a non-zero w)."""
    from clbook.dynamics import critical, onelayer

    W = _pair(16, B=3, m=4)[0]
    U = torch.linalg.qr(_pair(17, B=4, m=2)[0])[0]
    atoms = torch.eye(4, dtype=F64)
    for a, b in zip(onelayer.match_patterns(W * scale, U, threshold=0.5), onelayer.match_patterns(W, U, threshold=0.5), strict=True):
        assert torch.equal(a, b)
    ref = onelayer.projected_ascent(W[:1].abs(), atoms, max_steps=30).W
    assert torch.allclose(onelayer.projected_ascent(W[:1].abs() * scale, atoms, max_steps=30).W, ref, rtol=1e-12, atol=1e-14)
    r, r0 = onelayer.lme_report(W[0].abs() * scale, atoms), onelayer.lme_report(W[0].abs(), atoms)
    assert r.value == pytest.approx(r0.value, rel=1e-12) and r.residual == pytest.approx(r0.residual, rel=1e-12, abs=1e-15)
    T = critical.tangent_basis(W[0] * scale)
    assert torch.allclose(T.T @ T, torch.eye(3, dtype=F64), atol=1e-12)
    assert float((T.T @ (W[0] / W[0].norm())).abs().max()) < 1e-12


def test_one_layer_shapes_and_zero_directions_are_named():
    from clbook.dynamics import onelayer

    W = _pair(18, B=3, m=4)[0]
    with pytest.raises(ValueError, match=r"^U must be \[d, M\]"):
        onelayer.match_patterns(W, torch.ones(2, 4, dtype=F64))  # was a RuntimeError from inside torch's matmul
    with pytest.raises(ValueError, match=r"^W0 must have non-zero rows"):
        onelayer.projected_ascent(torch.zeros(1, 4, dtype=F64), torch.eye(4, dtype=F64), max_steps=3)
    with pytest.raises(ValueError, match=r"^w must be non-zero"):
        onelayer.lme_report(torch.zeros(4, dtype=F64), torch.eye(4, dtype=F64))


# ------------------------------------------------------------------ 2. domain contracts


def _mlp(**kw):
    from clbook import nets

    return nets.MLP([3, 5, 2], generator=torch.Generator().manual_seed(0), device="cpu", dtype=F64, **kw)


@pytest.mark.parametrize("x,error,words", [
    (np.ones((2, 3)), TypeError, "torch.Tensor"),
    (torch.ones(2, 3, dtype=torch.int64), TypeError, "dtype"),
    (torch.ones(2, 3, dtype=F32), TypeError, "dtype"),
    (torch.tensor([[float("nan"), 0.0, 0.0]], dtype=F64), ValueError, "finite"),
    (torch.tensor([[math.inf, 0.0, 0.0]], dtype=F64), ValueError, "finite"),
    (torch.ones(2, 4, dtype=F64), ValueError, "shape"),
])
def test_mlp_forward_says_what_is_wrong_with_x(x, error, words):
    with pytest.raises(error, match=words) as info:
        _mlp()(x)
    assert str(info.value).startswith("x ")


def test_mlp_on_cuda_without_a_gpu_is_the_package_error():
    from clbook import nets

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match="no CUDA device"):
        nets.MLP([3, 2], generator=torch.Generator().manual_seed(0), device="cuda")


def test_mlp_weights_are_unchanged_and_come_from_the_generator_only():
    from clbook import config

    net = _mlp()
    g = torch.Generator().manual_seed(0)  # the old construction's weights: the same draws from the generator
    w1 = config.randn(5, 3, generator=g, device="cpu", dtype=F64) * math.sqrt(2 / 3)
    b1 = 0.1 * config.randn(5, generator=g, device="cpu", dtype=F64)
    assert torch.equal(net.body[0].weight, w1) and torch.equal(net.body[0].bias, b1)


def test_to_device_rejects_what_is_not_numbers():
    import clbook

    for x in ("abc", [[1.0], [1.0, 2.0]], [1j], {"a": 1}):
        with pytest.raises(TypeError, match="x "):
            clbook.to_device(x, device="cpu")
    assert clbook.to_device([1, 2], device="cpu", dtype=F64).dtype == F64


def test_probes_need_two_classes():
    from clbook.metrics import probes

    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match="train_y must hold at least 2 classes"):
        probes.linear_probe(X, np.zeros(10), X, np.zeros(10))
    with pytest.raises(ValueError, match="at least one sample"):
        probes.knn_probe(X[:0], np.zeros(0), X, np.zeros(10), k=1)


def test_linear_flow_that_overflows_names_times():
    from clbook.dynamics import ssl

    C = -torch.diag(torch.tensor([1.0, 2.0], dtype=F64))
    with pytest.raises(ValueError, match=r"^times: .* up to about 17\d"):
        ssl.linear_flow(torch.ones(2, 2, dtype=F64), C, torch.tensor([0.0, 400.0], dtype=F64))
    out = ssl.linear_flow(torch.ones(2, 2, dtype=F64), C, torch.tensor([0.0, 10.0], dtype=F64))
    assert torch.isfinite(out).all()


# ------------------------------------------------------------------ 3. command lines (checked before the first job)


def _square(x):
    return {"y": x * x}


def _jobs(n):
    from clbook.experiments.runner import Job

    return [Job(f"x={i}", {"x": i}, cost=i) for i in range(n)]


def _run(out, n, **kw):
    from clbook.experiments.runner import run_jobs

    return run_jobs(_square, _jobs(n), out=out, name="demo", command=f"t {n}", settings={"k": 1}, workers=1, progress=False, **kw)


def _cli(main, argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err.strip()
    return info.value.code, err


def test_out_that_is_a_file_or_cannot_be_created_is_one_line_exit_2(tmp_path, capsys):
    from clbook.experiments import wide

    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, words in ((afile, "is an existing file"), (afile / "sub", "cannot be created")):
        code, err = _cli(wide.main, ["--quick", "--out", str(out), "--workers", "1"], capsys)
        assert code == 2 and len(err.splitlines()) == 1 and words in err and "--out" in err


def test_unwritable_out_fails_before_any_job(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(ValueError, match="not writable"):
            _run(locked, 2)
    finally:
        locked.chmod(0o700)


def test_unreachable_scheduler_fails_fast_naming_it(tmp_path, capsys):
    import time

    from clbook.experiments import wide

    start = time.perf_counter()
    code, err = _cli(wide.main, ["--quick", "--out", str(tmp_path), "--scheduler", "tcp://127.0.0.1:9"], capsys)
    assert code == 2 and "--scheduler" in err and len(err.splitlines()) == 1
    assert time.perf_counter() - start < 10 and not list(tmp_path.iterdir())


def test_options_that_do_not_apply_are_refused(tmp_path, capsys):
    from clbook.experiments import hierarchical

    code, err = _cli(hierarchical.main, ["digits", "--betas", "2", "--out", str(tmp_path)], capsys)
    assert code == 2 and "betas" in err and len(err.splitlines()) == 1
    code, err = _cli(hierarchical.main, ["bench", "--seeds", "4", "--out", str(tmp_path)], capsys)
    assert code == 2 and "seeds" in err
    code, err = _cli(hierarchical.main, ["nope"], capsys)
    assert code == 2 and len(err.splitlines()) == 1


@pytest.mark.parametrize("module,names", [("wide", "tanh"), ("hierarchical", "table1"), ("new_losses", "quadratic")])
def test_help_lists_names_and_an_example(module, names, capsys):
    import importlib

    main = importlib.import_module(f"clbook.experiments.{module}").main
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "example:" in text and names in text and f"python -m clbook.experiments.{module}" in text
    assert "--discard-complete" in text


# ------------------------------------------------------------------ 4. provenance


def test_a_rerun_that_computes_nothing_keeps_the_bytes(tmp_path):
    import json

    _run(tmp_path, 3)
    # the stored provenance is made unlike anything a rerun would write (another command, date and wall time), so
    # that a rerun which rewrites the file is caught even when it runs within the same second as the first run
    path = tmp_path / "demo.json"
    stored = json.loads(path.read_text())
    stored["provenance"].update(command="t 3 (the original run)", date="2001-01-01T00:00:00", seconds=11.9)
    path.write_text(json.dumps(stored))
    before = path.read_bytes()
    data = _run(tmp_path, 3)
    assert path.read_bytes() == before and data["complete"]
    assert data["provenance"]["seconds"] == 11.9 and data["provenance"]["command"] == "t 3 (the original run)"


def test_each_job_records_the_code_machine_and_libraries(tmp_path):
    import stat

    data = _run(tmp_path, 2)
    for job in data["jobs"].values():
        assert set(job["provenance"]) == {"code", "machine", "libraries"} and "torch" in job["provenance"]["libraries"]
    mode = stat.S_IMODE((tmp_path / "demo.json").stat().st_mode)
    assert mode & 0o044 == 0o044  # readable by group and others (0644 under the usual umask)


def test_jobs_resumed_from_old_code_keep_their_code_version(tmp_path):
    import json

    old = {"experiment": "demo", "name": "demo", "complete": False, "settings": {"k": 1},
           "jobs": {"x=0": {"params": {"x": 0}, "result": {"y": 0}, "seconds": 0.1}},
           "provenance": {"command": "old", "code": "git 0123abc", "machine": "elsewhere", "seconds": 1.0}}
    (tmp_path / "demo.partial.json").write_text(json.dumps(old))
    data = _run(tmp_path, 2)
    assert data["jobs"]["x=0"]["provenance"]["code"] == "git 0123abc" and "inherited" in data["jobs"]["x=0"]["provenance"]
    assert data["jobs"]["x=1"]["provenance"]["code"] != "git 0123abc"
    assert "git 0123abc" in data["provenance"]["job_codes"]


def test_fresh_never_replaces_a_complete_result_with_a_smaller_one(tmp_path):
    _run(tmp_path, 4)
    before = (tmp_path / "demo.json").read_bytes()
    for kw in ({"resume": False}, {}):
        with pytest.raises(ValueError, match="discard-complete"):
            _run(tmp_path, 1, **kw)
    assert (tmp_path / "demo.json").read_bytes() == before
    data = _run(tmp_path, 1, resume=False, discard_complete=True)
    assert len(data["jobs"]) == 1


def test_other_settings_never_replace_a_complete_result_without_discard_complete(tmp_path):
    """The review's case: the error for other settings suggested --fresh, and following it replaced a complete result."""
    from clbook.experiments.runner import run_jobs

    _run(tmp_path, 4)
    before = (tmp_path / "demo.json").read_bytes()
    for resume in (True, False):  # as suggested (--fresh) and not
        with pytest.raises(ValueError, match="other settings.*discard-complete"):
            run_jobs(_square, _jobs(4), out=tmp_path, name="demo", command="t", settings={"k": 2}, workers=1, progress=False,
                     resume=resume)
    assert (tmp_path / "demo.json").read_bytes() == before


def test_shipped_results_without_job_provenance_still_load():
    from clbook import results

    for experiment in results.EXPERIMENTS:
        for name in results.names(experiment):
            data = results.load(experiment, name)
            assert isinstance(data, dict)


# ------------------------------------------------------------------ 5. no hidden global state


def _global_state():
    import random

    return (torch.get_rng_state().clone(), np.random.get_state()[1].copy(), random.getstate(), torch.get_default_dtype(),
            torch.are_deterministic_algorithms_enabled(), torch.get_num_threads())


def _same(a, b):
    return torch.equal(a[0], b[0]) and bool((a[1] == b[1]).all()) and a[2:] == b[2:]


@pytest.fixture
def unusual_global_state():
    """Global settings unlike those any job or setup would choose (float32, nondeterministic, 2 threads, odd seeds).

    The tests' default state (clbook.setup: float64, deterministic, one thread) is what a leaky job would set, so a
    leak would go unseen from it; from this state every such change shows.
    """
    import random

    dtype, det, threads = torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()
    torch.set_default_dtype(F32)
    torch.use_deterministic_algorithms(False)
    torch.set_num_threads(2)
    torch.manual_seed(12345)
    np.random.seed(54321)
    random.seed(777)
    yield
    torch.set_default_dtype(dtype)
    torch.use_deterministic_algorithms(det)
    torch.set_num_threads(threads)


def test_wide_jobs_and_mlp_leave_global_state_alone(tmp_path, unusual_global_state):
    from clbook import nets
    from clbook.experiments import wide

    before = _global_state()
    nets.MLP([3, 4, 2], generator=torch.Generator().manual_seed(0), device="cpu", dtype=F64)
    params = dict(seed=0, h=4, activations=["tanh"], steps=2, every=1, eta=0.05, z=1, n=20, moon_noise=0.05, variance=0.1, scale=2.0)
    first = wide.fig2_job(**params)
    wide.run({"widths": [4], "seeds": [0], "steps": 2, "every": 1, "n": 20, "activations": ["tanh"]}, quick=True, out=tmp_path,
             workers=1, progress=False)
    assert _same(before, _global_state())
    torch.set_default_dtype(F32)  # a caller's other setup changes nothing in the job's numbers
    try:
        assert wide.fig2_job(**params) == first
    finally:
        torch.set_default_dtype(before[3])


def test_landscape_run_leaves_global_state_alone(tmp_path, unusual_global_state):
    from clbook.experiments import landscape

    before = _global_state()
    landscape.run(["table4"], epochs=1, seeds=[1], sparsities=[0.1], quick=True, out=tmp_path, workers=1, progress=False)
    assert _same(before, _global_state())


def _api_test_module():
    import importlib

    return importlib.import_module("tests.api.test_api")


_ALLOWED_TO_CHANGE_GLOBAL_STATE = ("clbook.config.setup",)  # the one function documented to change global settings


@pytest.mark.parametrize("qualname", [q for q in _api_test_module().CALLED if q not in _ALLOWED_TO_CHANGE_GLOBAL_STATE])
def test_every_public_callable_leaves_global_state_alone(qualname, unusual_global_state):
    """Each public callable of the API table, called once on valid input, changes no global setting or stream."""
    from hypothesis import HealthCheck

    api = _api_test_module()
    spec, function = api.TABLE[qualname], api.PUBLIC[qualname]

    @settings(max_examples=1, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(spec.valid)
    def run(kwargs):
        before = _global_state()
        api.call(function, kwargs)
        assert _same(before, _global_state()), f"{qualname} changed torch's, numpy's or random's global state"

    run()


def test_the_global_state_check_sees_a_leak(unusual_global_state):
    """Negative control of the test above: setup (which changes global settings by design) is caught by it."""
    import clbook

    before = _global_state()
    clbook.setup(seed=0, device="cpu", threads=1)
    assert not _same(before, _global_state())
