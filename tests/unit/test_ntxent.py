"""Tests of clbook.losses.ntxent and clbook.losses.noncontrastive: the fused NT-Xent against the naive materialising form."""
import math

import pytest
import torch

import clbook
from clbook.losses import noncontrastive as NC
from clbook.losses import ntxent as NX


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0)


def naive_nt_xent(h1, h2, temperature):
    """The authors' construction (models/nt_xent.py): cosines from a 2B x 2B x m tensor, logits [positive, negatives], cross-entropy."""
    B = h1.shape[0]
    z = torch.cat([h1, h2], dim=0)
    sim = torch.nn.functional.cosine_similarity(z.unsqueeze(1), z.unsqueeze(0), dim=2) / temperature
    mask = torch.ones(2 * B, 2 * B, dtype=torch.bool)
    mask.fill_diagonal_(False)
    for i in range(B):
        mask[i, B + i] = mask[B + i, i] = False
    positives = torch.cat([torch.diag(sim, B), torch.diag(sim, -B)]).reshape(2 * B, 1)
    logits = torch.cat([positives, sim[mask].reshape(2 * B, -1)], dim=1)
    labels = torch.zeros(2 * B, dtype=torch.long)
    return torch.nn.functional.cross_entropy(logits, labels, reduction="sum") / (2 * B)


def pair(seed, *shape, dtype=torch.float64):
    g = clbook.generator(seed)
    first = clbook.randn(*shape, generator=g, dtype=dtype).requires_grad_()
    return first, clbook.randn(*shape, generator=g, dtype=dtype).requires_grad_()


@pytest.fixture(params=["no shift", "row maximum"])
def path(request, monkeypatch):
    """Run a test on both code paths of the log-sum-exp: the fixed (no) shift and the row-maximum shift."""
    if request.param == "row maximum":
        monkeypatch.setattr(NX, "_no_shift", lambda n, T, dtype: False)
    return request.param


@pytest.mark.parametrize("T", [0.05, 0.5, 2.0])
def test_value_and_gradient_equal_naive_float64(T, path):
    h1, h2 = pair(3, 6, 5)
    ours, naive = NX.nt_xent(h1, h2, temperature=T), naive_nt_xent(h1, h2, T)
    assert ours.item() == pytest.approx(naive.item(), rel=1e-12)
    for a, b in zip(torch.autograd.grad(ours, [h1, h2]), torch.autograd.grad(naive, [h1, h2]), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_the_two_paths_are_chosen_by_the_size_of_the_logits():
    assert NX._no_shift(1024, 0.05, torch.float32)       # 20 + log 1024 < 80
    assert not NX._no_shift(1024, 0.0125, torch.float32)  # 80 + 7
    assert NX._no_shift(1024, 0.002, torch.float64) and not NX._no_shift(1024, 0.001, torch.float64)


@pytest.mark.parametrize("T, dtype", [(0.0125, torch.float32), (0.001, torch.float64)])
def test_small_temperature_is_finite_and_matches_reference(T, dtype):
    h1, h2 = pair(7, 16, 4, dtype=dtype)
    ours, ref = NX.nt_xent(h1, h2, temperature=T), NX.nt_xent_reference(h1, h2, temperature=T)
    assert torch.isfinite(ours).all()
    torch.testing.assert_close(ours, ref, rtol=1e-5 if dtype == torch.float32 else 1e-12, atol=0.0)


@pytest.mark.parametrize("T", [0.05, 0.3])
def test_float32_matches_float64(T, path):
    g = clbook.generator(6)
    h1, h2 = clbook.randn(2, 64, 8, generator=g), clbook.randn(2, 64, 8, generator=g)
    a = [h.clone().requires_grad_() for h in (h1, h2)]
    b = [h.float().requires_grad_() for h in (h1, h2)]
    la, lb = NX.nt_xent(*a, temperature=T), NX.nt_xent(*b, temperature=T)
    torch.testing.assert_close(lb.double(), la, rtol=1e-5, atol=0.0)
    for x, y in zip(torch.autograd.grad(la.sum(), a), torch.autograd.grad(lb.sum(), b), strict=True):
        torch.testing.assert_close(y.double(), x, rtol=1e-3, atol=1e-5 * x.abs().max().item())


def test_gradcheck(path):
    h1, h2 = pair(4, 3, 4, 3)
    assert torch.autograd.gradcheck(lambda a, b: NX.nt_xent(a, b, temperature=0.3), (h1, h2))


def test_stacked_runs_are_independent_batches(path):
    h1, h2 = pair(5, 2, 3, 5, 4)
    out = NX.nt_xent(h1, h2, temperature=0.2)
    assert out.shape == (2, 3)
    grads = torch.autograd.grad(out.sum(), [h1, h2])
    for i in range(2):
        for j in range(3):
            a, b = h1[i, j].detach().requires_grad_(), h2[i, j].detach().requires_grad_()
            one = naive_nt_xent(a, b, 0.2)
            assert out[i, j].item() == pytest.approx(one.item(), rel=1e-12)
            ga, gb = torch.autograd.grad(one, [a, b])
            torch.testing.assert_close(grads[0][i, j], ga, rtol=1e-10, atol=1e-12)
            torch.testing.assert_close(grads[1][i, j], gb, rtol=1e-10, atol=1e-12)


def test_upstream_gradient_scales_each_run(path):
    h1, h2 = pair(8, 3, 4, 5)
    w = torch.tensor([0.5, -2.0, 3.0], dtype=torch.float64)
    g_weighted = torch.autograd.grad((NX.nt_xent(h1, h2, temperature=0.1) * w).sum(), [h1])[0]
    g_plain = torch.autograd.grad(NX.nt_xent(h1, h2, temperature=0.1).sum(), [h1])[0]
    torch.testing.assert_close(g_weighted, g_plain * w[:, None, None], rtol=1e-12, atol=1e-14)


def test_no_gradient_requested_gives_the_same_value():
    h1, h2 = pair(9, 10, 4)
    with torch.no_grad():
        a = NX.nt_xent(h1, h2, temperature=0.05)
    assert a.item() == pytest.approx(NX.nt_xent(h1, h2, temperature=0.05).item(), rel=1e-14)


def test_zero_rows_stay_finite():
    h1, h2 = pair(10, 5, 3)
    h1 = h1.detach().clone()
    h1[0] = 0.0
    h1.requires_grad_()
    loss = NX.nt_xent(h1, h2, temperature=0.1)
    assert torch.isfinite(loss) and all(torch.isfinite(g).all() for g in torch.autograd.grad(loss, [h1, h2]))


def test_closed_form_for_orthogonal_views():
    # B = 2, m = 4, all four views orthonormal: every logit is 0, so the loss is log(2B - 1).
    eye = torch.eye(4, dtype=torch.float64)
    assert NX.nt_xent(eye[:2], eye[2:], temperature=0.1).item() == pytest.approx(math.log(3), rel=1e-14)


def test_reference_equals_naive():
    h1, h2 = pair(11, 7, 3)
    assert NX.nt_xent_reference(h1, h2, temperature=0.2).item() == pytest.approx(naive_nt_xent(h1, h2, 0.2).item(), rel=1e-12)


def test_flops():
    assert NX.ntxent_flops(512, 50) == 6 * 1024 ** 2 * 50
    with pytest.raises(ValueError, match="batch"):
        NX.ntxent_flops(0, 50)
    with pytest.raises(ValueError, match="features"):
        NX.ntxent_flops(4, 1.5)


@pytest.mark.parametrize("h1, h2, temperature, error, match", [
    (torch.zeros(0, 3), torch.zeros(0, 3), 0.1, ValueError, "B >= 2"),
    (torch.ones(1, 3), torch.ones(1, 3), 0.1, ValueError, "B >= 2"),
    (torch.tensor([[1.0, float("nan")], [0.0, 1.0]]), torch.ones(2, 2), 0.1, ValueError, "h1 must contain only finite"),
    (torch.ones(3, 2), torch.ones(4, 2), 0.1, ValueError, "h1 and h2"),
    (torch.ones(3), torch.ones(3), 0.1, ValueError, "h1 and h2"),
    (torch.ones(3, 2), torch.ones(3, 2, dtype=torch.float64), 0.1, ValueError, "dtype"),
    (torch.ones(3, 2), torch.ones(3, 2), 0.0, ValueError, "temperature"),
    (torch.ones(3, 2), torch.ones(3, 2), -1.0, ValueError, "temperature"),
    (torch.ones(3, 2), torch.ones(3, 2), "0.1", TypeError, "temperature"),
    (torch.ones(3, 2, dtype=torch.long), torch.ones(3, 2, dtype=torch.long), 0.1, TypeError, "h1"),
    ([[1.0, 0.0]], torch.ones(1, 2), 0.1, TypeError, "h1"),
])
def test_bad_input(h1, h2, temperature, error, match):
    with pytest.raises(error, match=match):
        NX.nt_xent(h1, h2, temperature=temperature)


# ------------------------------------------------------------------------------------------------ non-contrastive


def test_ncl_and_simsiam_losses():
    g = clbook.generator(5)
    q, t = clbook.randn(2, 7, 4, generator=g), clbook.randn(2, 7, 4, generator=g)
    cos = torch.nn.functional.cosine_similarity(q, t, dim=-1).mean(-1)
    torch.testing.assert_close(NC.ncl_loss(q, t), 2 - 2 * cos, atol=1e-13, rtol=0.0)
    torch.testing.assert_close(NC.simsiam_loss(q, q, t, t), -cos, atol=1e-13, rtol=0.0)
    # the l2 form of Eq. 4 equals 2 - 2 cos
    qn, tn = q / q.norm(dim=-1, keepdim=True), t / t.norm(dim=-1, keepdim=True)
    torch.testing.assert_close(NC.ncl_loss(q, t), ((qn - tn) ** 2).sum(-1).mean(-1), atol=1e-13, rtol=0.0)


def test_stop_gradient():
    q, t = pair(12, 5, 3)
    loss = NC.ncl_loss(q, t)
    gq, gt = torch.autograd.grad(loss, [q, t], allow_unused=True)
    assert gt is None and gq.abs().sum() > 0
    p1, p2, z1, z2 = (*pair(13, 5, 3), *pair(14, 5, 3))
    grads = torch.autograd.grad(NC.simsiam_loss(p1, p2, z1, z2), [p1, p2, z1, z2], allow_unused=True)
    assert grads[2] is None and grads[3] is None


@pytest.mark.parametrize("args, error, match", [
    ((torch.ones(3, 2), torch.ones(4, 2)), ValueError, "q and target"),
    ((torch.ones(3), torch.ones(3)), ValueError, "q must have shape"),
    ((torch.full((2, 2), float("nan")), torch.ones(2, 2)), ValueError, "q must contain only finite"),
    ((torch.ones(2, 2, dtype=torch.long), torch.ones(2, 2)), TypeError, "q"),
    ((torch.ones(0, 2), torch.ones(0, 2)), ValueError, "B >= 1"),
])
def test_ncl_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        NC.ncl_loss(*args)


def test_simsiam_bad_input():
    with pytest.raises(ValueError, match="p1 and z2"):
        NC.simsiam_loss(torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 3))
