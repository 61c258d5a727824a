"""Tests of clbook.experiments.landscape (Chapter 17): stacked training = single runs, the Gram-only NT-Xent, bad input."""
import json
import math

import pytest
import torch

import clbook
from clbook.experiments import landscape as L

SMALL = dict(p=12, d=4, m=8, n=40, batch=16, epochs=4, keep_weights=True)


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0)


def naive_nt_xent(h1, h2, temperature):
    """The authors' way: cosine similarities from a 2B x 2B x m tensor, then cross-entropy over l != k."""
    z = torch.cat([h1, h2], dim=0)
    sim = torch.nn.functional.cosine_similarity(z.unsqueeze(1), z.unsqueeze(0), dim=2) / temperature  # [2B, 2B] via [2B, 2B, m]
    n = z.shape[0]
    B = n // 2
    total = 0.0
    for k in range(n):
        others = [sim[k, j] for j in range(n) if j != k]
        total = total + torch.logsumexp(torch.stack(others), 0) - sim[k, (k + B) % n]
    return total / n


@pytest.mark.parametrize("name", ["NCL-basic", "CL-basic", "NCL-basic-2L", "NCL-linear", "CL-linear", "SimCLR", "SimSiam", "NCL-pred"])
def test_stacked_equals_single(name):
    both = L.train(name, sparsities=(0.1, 0.3), seeds=(1, 2), **SMALL)
    one = L.train(name, sparsities=(0.3,), seeds=(2,), **SMALL)
    assert torch.equal(both.W[3], one.W[0])
    assert both.minimum[-1][3] == one.minimum[-1][0]
    assert both.loss[3] == one.loss[0]


def test_warm_start_and_normalisation_stacked():
    kw = dict(SMALL, warm=0.02, normalize="row")
    both = L.train("NCL-basic", sparsities=(0.2,), seeds=(1, 2, 3), **kw)
    one = L.train("NCL-basic", sparsities=(0.2,), seeds=(3,), **kw)
    assert torch.equal(both.W[2], one.W[0])
    assert torch.allclose(both.W.norm(dim=-1), torch.ones(3, 8, dtype=torch.float64), atol=1e-12)
    assert max(both.maximum[0]) > 0.99  # a warm start with sigma = 0.02 puts neurons next to atoms


@pytest.mark.parametrize("T", [0.05, 0.5, 0.002])  # 0.002: 2/T too large for the fixed shift, the row-maximum path
def test_nt_xent_equals_naive(T):
    g = clbook.generator(3)
    h1 = clbook.randn(6, 5, generator=g).requires_grad_()
    h2 = clbook.randn(6, 5, generator=g).requires_grad_()
    ours, naive = L.nt_xent(h1, h2, temperature=T), naive_nt_xent(h1, h2, T)
    assert ours.item() == pytest.approx(naive.item(), rel=1e-12)
    g1 = torch.autograd.grad(ours, [h1, h2])
    g2 = torch.autograd.grad(naive, [h1, h2])
    for a, b in zip(g1, g2, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)


def test_nt_xent_batched_and_gradcheck():
    g = clbook.generator(4)
    h1 = clbook.randn(3, 4, 3, generator=g).requires_grad_()
    h2 = clbook.randn(3, 4, 3, generator=g).requires_grad_()
    out = L.nt_xent(h1, h2, temperature=0.3)
    assert out.shape == (3,)
    for r in range(3):
        assert out[r].item() == pytest.approx(naive_nt_xent(h1[r], h2[r], 0.3).item(), rel=1e-12)
    assert torch.autograd.gradcheck(lambda a, b: L.nt_xent(a, b, temperature=0.3), (h1, h2))


@pytest.mark.parametrize("T", [0.05, 0.02])  # float32: fixed shift at 0.05, row maximum at 0.02
def test_nt_xent_float32_matches_float64(T):
    g = clbook.generator(6)
    h1, h2 = clbook.randn(2, 64, 8, generator=g), clbook.randn(2, 64, 8, generator=g)
    a = [h.clone().requires_grad_() for h in (h1, h2)]
    b = [h.float().requires_grad_() for h in (h1, h2)]
    la, lb = L.nt_xent(*a, temperature=T), L.nt_xent(*b, temperature=T)
    assert torch.allclose(lb.double(), la, rtol=1e-5)
    for x, y in zip(torch.autograd.grad(la.sum(), a), torch.autograd.grad(lb.sum(), b), strict=True):
        assert torch.allclose(y.double(), x, rtol=1e-3, atol=1e-5 * x.abs().max().item())


def test_ncl_and_simsiam_losses():
    g = clbook.generator(5)
    q, t = clbook.randn(2, 7, 4, generator=g), clbook.randn(2, 7, 4, generator=g)
    cos = torch.nn.functional.cosine_similarity(q, t, dim=-1).mean(-1)
    assert torch.allclose(L.ncl_loss(q, t), 2 - 2 * cos, atol=1e-13)
    assert torch.allclose(L.simsiam_loss(q, q, t, t), -cos, atol=1e-13)


def test_batchnorm_matches_torch():
    g = clbook.generator(6)
    u = clbook.randn(9, 4, generator=g)
    bn = torch.nn.BatchNorm1d(4, dtype=torch.float64)
    assert torch.allclose(L.batchnorm(u, torch.ones(4), torch.zeros(4)), bn(u), atol=1e-12)


def test_summarise_and_rows():
    res = L.train("NCL-linear", sparsities=(0.1, 0.2), seeds=(1, 2), **SMALL)
    rows = res.rows()
    assert len(rows) == 4 and rows[1]["seed"] == 2 and rows[2]["sparsity"] == 0.2
    s = L.summarise(rows)
    assert set(s) == {0.1, 0.2}
    assert s[0.1][2][0] == pytest.approx((rows[0]["end"][2] + rows[1]["end"][2]) / 2)
    assert all(not math.isnan(v) for v in res.loss)


@pytest.mark.parametrize("kwargs, match", [
    (dict(model="nope"), "model"),
    (dict(model="CL-basic", sparsities=(1.5,)), "sparsity"),
    (dict(model="CL-basic", seeds=()), "non-empty"),
    (dict(model="CL-basic", epochs=0), "epochs"),
    (dict(model="CL-basic", lr=-1.0), "lr"),
    (dict(model="CL-basic", keep=2.0), "keep"),
    (dict(model="CL-basic", scheme="both"), "scheme"),
    (dict(model="CL-basic", normalize="diag"), "normalize"),
    (dict(model="CL-basic", warm=-0.1), "warm"),
    (dict(model="CL-basic", temperature=0.0), "temperature"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        L.train(**kwargs)


def test_bad_input_misc():
    with pytest.raises(ValueError, match="h1 and h2"):
        L.nt_xent(torch.zeros(3, 2), torch.zeros(4, 2))
    with pytest.raises(ValueError, match="loss"):
        L.Model("byol", bn=False, srelu=False)
    with pytest.raises(ValueError, match="name"):
        L.load("table9")
    with pytest.raises(ValueError, match="experiment"):
        L.run(["table9"], epochs=1)


def test_compare():
    paper = {("A", 0.1): ((0.9, 0.01), (0.8, 0.01), (0.5, 0.3))}
    ours = {("A", 0.1): ((0.9, 0.01), (0.6, 0.01), (0.7, 0.01))}
    cells = L.compare(paper, ours)
    assert [c["differs"] for c in cells] == [False, True, False]  # min: 0.2 < 2 SE = 0.27
    assert cells[1]["delta"] == pytest.approx(-0.2)
    with pytest.raises(ValueError, match="no row"):
        L.compare(paper, {})


@pytest.mark.parametrize("argv", [["table1", "all"], ["bench", "table2"], ["table1", "table1"], ["table1", "table4", "--name", "x"]])
def test_command_line_rejects_bad_lists(argv, capsys):
    with pytest.raises(SystemExit):
        L.main(argv)
    assert "error" in capsys.readouterr().err


def test_command_line_runs_several_experiments_in_one_pool(tmp_path):
    argv = ["table1", "table4", "--quick", "--epochs", "2", "--seeds", "1", "--sparsities", "0.2", "--workers", "1", "--out", str(tmp_path)]
    assert L.main(argv) == 0
    for name, tags in (("table1", {"SimCLR", "SimSiam"}), ("table4", {"warm=0.14", "warm=0.02", "warm=0.002"})):
        data = json.loads((tmp_path / f"quick-{name}.json").read_text())
        assert data["complete"] and {j["tag"] for j in data["jobs"]} == tags


def test_scheme_reaches_every_job():
    jobs = L._jobs("table2", quick=True, epochs=2, seeds=[1], models=["CL-linear", "CL-basic"], scheme="dependent")
    assert [kw["scheme"] for _, _, kw in jobs] == ["dependent", "dependent"]
    assert "scheme" not in L._jobs("table2", quick=True, epochs=2, seeds=[1])[0][2]
    with pytest.raises(ValueError, match="scheme"):
        L._jobs("table2", quick=True, epochs=2, seeds=[1], scheme="both")
