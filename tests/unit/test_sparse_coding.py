"""clbook.data.sparse_coding: the data model of Pokle et al. (2022) Eq. 1 and the masks of Eqs 2-3."""
import math

import pytest
import torch

import clbook
from clbook.data import sparse_coding as sc


def test_dictionary_is_column_orthonormal_and_batched():
    M = sc.dictionary(50, 10, generator=clbook.generator(0), batch=3)
    assert M.shape == (3, 50, 10)
    torch.testing.assert_close(M.transpose(-1, -2) @ M, torch.eye(10).expand(3, 10, 10), atol=1e-13, rtol=0)
    a = sc.dictionary(6, 3, generator=clbook.generator(1))
    b = sc.dictionary(6, 3, generator=clbook.generator(1))
    torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("latent", ["symmetric", "binary"])
def test_latents_alphabet_nonzero_and_moment(latent):
    Z = sc.sparse_latents(200_000, 4, sparsity=0.2, generator=clbook.generator(2), latent=latent)
    allowed = {-1.0, 0.0, 1.0} if latent == "symmetric" else {0.0, 1.0}
    assert set(Z.unique().tolist()) <= allowed
    assert bool((Z != 0).any(dim=-1).all()), "every latent has a non-zero entry"
    emp = Z.T @ Z / len(Z)
    torch.testing.assert_close(emp, sc.latent_second_moment(4, sparsity=0.2, latent=latent), atol=4e-3, rtol=0)


def test_one_hot_latents():
    Z = sc.sparse_latents(1000, 5, sparsity=0.0, generator=clbook.generator(3), latent="one_hot", batch=2)
    assert Z.shape == (2, 1000, 5) and bool((Z.sum(-1) == 1).all())


def test_sample_model_and_given_dictionary():
    gen = clbook.generator(4)
    data = sc.sample(100, p=8, d=3, sparsity=0.3, noise=0.0, generator=gen)
    torch.testing.assert_close(data.X, data.Z @ data.M.T, rtol=0, atol=0)
    again = sc.sample(100, p=8, d=3, sparsity=0.3, noise=0.5, generator=gen, M=data.M)
    assert again.M is data.M and again.X.shape == (100, 8)
    batched = sc.sample(10, p=8, d=3, sparsity=0.3, noise=0.1, generator=gen, batch=4)
    assert batched.X.shape == (4, 10, 8) and batched.M.shape == (4, 8, 3)


def test_masks_and_views_laws():
    gen = clbook.generator(5)
    d1, d2 = sc.masks((100_000, 3), keep=0.3, generator=gen, scheme="independent")
    assert abs(float(d1.mean()) - 0.3) < 5e-3 and abs(float((d1 * d2).mean()) - 0.09) < 3e-3
    e1, e2 = sc.masks((100_000, 3), keep=0.3, generator=gen, scheme="dependent")
    torch.testing.assert_close(e1 + e2, 2 * torch.ones_like(e1), rtol=0, atol=0)
    assert float((e1 * e2).abs().max()) == 0.0
    X = clbook.randn(7, 3, generator=gen)
    a1, a2 = sc.views(X, keep=0.5, generator=gen, scheme="dependent")
    torch.testing.assert_close(a1 + a2, 2 * X, rtol=0, atol=1e-15)


def test_noise_readings():
    assert sc.noise_std(10, reading="code") == pytest.approx(math.sqrt(math.log(10)) / 10)
    assert sc.noise_std(10, reading="sec4.2") == pytest.approx(0.4799, abs=1e-4)
    assert sc.noise_std(10, reading="sec4.1") == pytest.approx(0.2303, abs=1e-4)


def test_bad_arguments():
    gen = clbook.generator(0)
    with pytest.raises(ValueError, match="need p >= d"):
        sc.dictionary(3, 5, generator=gen)
    with pytest.raises(ValueError, match="sparsity must lie in"):
        sc.sparse_latents(3, 2, sparsity=1.5, generator=gen)
    with pytest.raises(ValueError, match="latent must be one of"):
        sc.sparse_latents(3, 2, sparsity=0.5, generator=gen, latent="gauss")
    with pytest.raises(ValueError, match="keep must lie in"):
        sc.masks((2, 2), keep=-0.1, generator=gen)
    with pytest.raises(ValueError, match="scheme must be one of"):
        sc.masks((2, 2), keep=0.5, generator=gen, scheme="both")
    with pytest.raises(ValueError, match="M must have shape"):
        sc.sample(3, p=4, d=2, sparsity=0.5, noise=0.0, generator=gen, M=torch.eye(3))
    with pytest.raises(ValueError, match="noise must be >= 0"):
        sc.sample(3, p=4, d=2, sparsity=0.5, noise=-1.0, generator=gen)


def test_dictionary_is_the_core_haar_draw():
    from clbook import linalg

    torch.testing.assert_close(sc.dictionary(7, 3, generator=clbook.generator(6)),
                               linalg.haar_orthonormal(7, 3, generator=clbook.generator(6)), rtol=0, atol=0)


@pytest.mark.parametrize("nonzero", [True, False])
def test_second_moment_against_monte_carlo(nonzero):
    gen = clbook.generator(7)
    M = sc.dictionary(6, 3, generator=gen)
    Z = sc.sparse_latents(200_000, 3, sparsity=0.2, generator=gen, nonzero=nonzero)
    X = Z @ M.T + 0.3 * clbook.randn(200_000, 6, generator=gen)
    Sigma = sc.second_moment(M, sparsity=0.2, noise=0.3, nonzero=nonzero)
    torch.testing.assert_close(X.T @ X / len(X), Sigma, atol=6e-3, rtol=0)
    other = sc.second_moment(M, sparsity=0.2, noise=0.3, nonzero=not nonzero)
    assert float((X.T @ X / len(X) - other).abs().max()) > 0.05


@pytest.mark.parametrize("scheme", ["independent", "dependent"])
def test_mask_moment_against_draws(scheme):
    d1, d2 = sc.masks((400_000, 3), keep=0.3, generator=clbook.generator(8), scheme=scheme)
    torch.testing.assert_close(d1.T @ d2 / len(d1), sc.mask_moment(3, keep=0.3, scheme=scheme), atol=6e-3, rtol=0)


def test_more_bad_arguments():
    gen = clbook.generator(0)
    with pytest.raises(ValueError, match="almost sure"):
        sc.sparse_latents(3, 2, sparsity=1e-9, generator=gen)
    with pytest.raises(TypeError, match="shape"):
        sc.masks(5, keep=0.5, generator=gen)
    with pytest.raises(ValueError, match="X must have at least 2"):
        sc.views(torch.zeros(3), keep=0.5, generator=gen)
    with pytest.raises(TypeError, match="generator"):
        sc.dictionary(4, 2, generator=0)
    with pytest.raises(ValueError, match="noise must be >= 0"):
        sc.second_moment(torch.eye(3, 2), sparsity=0.2, noise=-0.1)


def test_enumerations():
    Z, pz = sc.enumerate_latents(3, sparsity=0.4)
    D, pd = sc.enumerate_masks(3, keep=0.3)
    assert Z.shape == (27, 3) and D.shape == (8, 3)
    assert float(pz.sum()) == pytest.approx(1.0) and float(pd.sum()) == pytest.approx(1.0)
    torch.testing.assert_close(Z.T @ (pz[:, None] * Z), 0.4 * torch.eye(3), atol=1e-15, rtol=0)
    torch.testing.assert_close(pd @ D, torch.full((3,), 0.3), atol=1e-15, rtol=0)
    with pytest.raises(ValueError, match="d must be >= 1"):
        sc.enumerate_latents(0, sparsity=0.5)
    with pytest.raises(ValueError, match="keep must lie in"):
        sc.enumerate_masks(3, keep=1.5)
