"""Tests of clbook.covariance: the vectorised C_α against the double sum of Eq. 5, and invariants."""
import pytest
import torch

import clbook
from clbook import covariance


def loop_covariance(weights, a1, a2, b1, b2):
    out = torch.zeros(a1.shape[1], b1.shape[1])
    for i in range(len(a1)):
        for j in range(len(a1)):
            if i != j:
                out += weights[i, j] * (torch.outer(a1[i] - a1[j], b1[i] - b1[j]) - torch.outer(a1[i] - a2[i], b1[i] - b2[i]))
    return out


def loop_covariance_2023(weights, a1, a2, b1, b2):
    """Tian (2023) Eq. 3 read literally: 1/(2N²) Σ over all i, j, the diagonal of α included."""
    n = len(a1)
    out = torch.zeros(a1.shape[1], b1.shape[1])
    for i in range(n):
        for j in range(n):
            out += weights[i, j] * (torch.outer(a1[i] - a1[j], b1[i] - b1[j]) - torch.outer(a1[i] - a2[i], b1[i] - b2[i]))
    return out / (2 * n * n)


def data(n=6, p=3, q=2, seed=0):
    g = clbook.generator(seed)
    return [clbook.randn(n, k, generator=g) for k in (p, p, q, q)] + [clbook.rand(n, n, generator=g)]


def test_matches_double_sum_oracle():
    a1, a2, b1, b2, weights = data()
    torch.testing.assert_close(covariance.contrastive_covariance(weights, a1, a2, b1, b2),
                               loop_covariance(weights, a1, a2, b1, b2), rtol=1e-12, atol=1e-12)


def test_tian2023_convention_matches_its_own_double_sum():
    a1, a2, b1, b2, weights = data()
    got = covariance.contrastive_covariance(weights, a1, a2, b1, b2, convention="tian2023")
    torch.testing.assert_close(got, loop_covariance_2023(weights, a1, a2, b1, b2), rtol=1e-12, atol=1e-12)
    # the diagonal of α matters in 2023 (it weighs the positive pairs) ...
    bumped = covariance.contrastive_covariance(weights + torch.eye(6), a1, a2, b1, b2, convention="tian2023")
    assert float((bumped - got).abs().max()) > 1e-3
    # ... and with a zero diagonal the two conventions differ by the factor 1/(2N²) only
    off = weights * (1 - torch.eye(6))
    torch.testing.assert_close(covariance.contrastive_covariance(off, a1, a2, b1, b2, convention="tian2023"),
                               covariance.contrastive_covariance(weights, a1, a2, b1, b2) / 72, rtol=1e-12, atol=1e-14)


def test_vectors_read_as_one_column():
    a1, a2, _, _, weights = data(p=1)
    torch.testing.assert_close(covariance.contrastive_covariance(weights, a1[:, 0], a2[:, 0]),
                               covariance.contrastive_covariance(weights, a1, a2))


def test_symmetric_and_trace_is_energy():
    a1, a2, _, _, weights = data()
    cov = covariance.contrastive_covariance(weights, a1, a2)
    torch.testing.assert_close(cov, cov.T, rtol=0, atol=1e-13)
    assert float(torch.trace(cov)) == pytest.approx(float(covariance.energy(weights, a1, a2)), rel=1e-12)


def test_diagonal_of_alpha_is_ignored():
    a1, a2, _, _, weights = data()
    changed = weights + 100 * torch.eye(len(weights))
    cc = covariance.contrastive_covariance
    torch.testing.assert_close(cc(changed, a1, a2), cc(weights, a1, a2))


def test_collapsed_and_augmentation_invariant_cases():
    _, _, _, _, weights = data()
    same = torch.ones(6, 3)
    assert float(covariance.contrastive_covariance(weights, same, same).abs().max()) < 1e-13
    # identical views: only the negative-pair term remains, which is positive semidefinite
    a1 = data(seed=1)[0]
    eig = torch.linalg.eigvalsh(covariance.contrastive_covariance(weights, a1, a1))
    assert float(eig.min()) > -1e-12


def test_linear_in_alpha_and_bilinear():
    a1, a2, b1, b2, weights = data()
    other = data(seed=2)[-1]
    lhs = covariance.contrastive_covariance(2 * weights + 3 * other, a1, a2, b1, b2)
    cc = covariance.contrastive_covariance
    rhs = 2 * cc(weights, a1, a2, b1, b2) + 3 * cc(other, a1, a2, b1, b2)
    torch.testing.assert_close(lhs, rhs)


def test_argument_errors():
    a1, a2, b1, b2, weights = data()
    with pytest.raises(ValueError, match=r"alpha must have shape \[n, n\]"):
        covariance.contrastive_covariance(weights[:3], a1, a2)
    with pytest.raises(ValueError, match="both b1 and b2"):
        covariance.contrastive_covariance(weights, a1, a2, b1)
    with pytest.raises(ValueError, match="same shape"):
        covariance.contrastive_covariance(weights, a1, a2[:, :2])
    with pytest.raises(ValueError, match="finite"):
        covariance.energy(weights * float("inf"), a1, a2)
    with pytest.raises(ValueError, match="same samples"):
        covariance.contrastive_covariance(weights, a1, a2, b1[:4], b2[:4])
    with pytest.raises(ValueError, match="convention"):
        covariance.contrastive_covariance(weights, a1, a2, convention="tian2021")
    with pytest.raises(ValueError, match="alpha must share the dtype"):
        covariance.contrastive_covariance(weights.float(), a1, a2)
    with pytest.raises(ValueError, match="n >= 2"):
        covariance.energy(weights[:1, :1], a1[:1], a2[:1])
    with pytest.raises(TypeError, match="z1"):
        covariance.energy(weights, a1.long(), a2)
    with pytest.raises(ValueError, match="z1 and z2 must share"):
        covariance.energy(weights, a1, a2.float())


def test_energy_gradient_closed_form():
    """With α fixed, ∂E/∂z[i] = 2 Σ_j (α_ij + α_ji)(z[i] − z[j]) − 2 β_i (z[i] − z[i'])."""
    z1, z2, _, _, weights = data()
    z1 = z1.clone().requires_grad_()
    covariance.energy(weights, z1, z2).backward()
    w = weights * (1 - torch.eye(len(weights)))
    sym = w + w.T
    z = z1.detach()
    expected = 2 * (sym.sum(dim=1, keepdim=True) * z - sym @ z) - 2 * w.sum(dim=1, keepdim=True) * (z - z2)
    torch.testing.assert_close(z1.grad, expected, rtol=1e-12, atol=1e-12)
