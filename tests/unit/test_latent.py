"""Tests of clbook.data.latent: exact enumeration of the latent categorical and summation models."""
import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook.data import latent
from clbook.linalg import haar_orthonormal

F64 = torch.float64


@pytest.fixture(autouse=True)
def _setup():
    clbook.setup(seed=0)


@settings(max_examples=20, deadline=None)
@given(M=st.integers(1, 6), seed=st.integers(0, 1000))
def test_summation_moments(M, seed):
    gen = clbook.generator(seed)
    U = haar_orthonormal(M, generator=gen)
    q = 0.05 + 0.9 * clbook.rand(M, generator=gen)
    s = 0.5 + clbook.rand(M, generator=gen)
    model = latent.latent_summation(U, q, scales=s)
    p, X = model.probs, model.atoms
    assert model.atoms.shape == (2**M, M)
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-13)
    assert torch.allclose(p @ X, torch.zeros(M, dtype=F64), atol=1e-13)            # E y = 0
    cov = torch.einsum("n,nd,ne->de", p, X, X)
    assert torch.allclose(cov, U @ torch.diag(s**2) @ U.T, atol=1e-12)              # E y^2 = 1


def test_summation_loop_oracle():
    U = haar_orthonormal(3, generator=clbook.generator(1))
    q = torch.tensor([0.2, 0.5, 0.7], dtype=F64)
    model = latent.latent_summation(U, q)
    for k, bits in enumerate(itertools.product((1, 0), repeat=3)):
        y = [math.sqrt((1 - qm) / qm) if b else -math.sqrt(qm / (1 - qm)) for b, qm in zip(bits, q.tolist(), strict=True)]
        prob = math.prod(qm if b else 1 - qm for b, qm in zip(bits, q.tolist(), strict=True))
        assert float(model.probs[k]) == pytest.approx(prob, rel=1e-14)
        assert torch.allclose(model.atoms[k], U @ torch.tensor(y, dtype=F64), atol=1e-14)


def test_categorical_and_sampling():
    U = haar_orthonormal(4, generator=clbook.generator(2))
    p = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=F64)
    model = latent.latent_categorical(U, p)
    assert torch.equal(model.atoms, U.T)
    X = latent.sample(model, 4000, generator=clbook.generator(3))
    freq = (X @ U).argmax(dim=1).bincount(minlength=4).double() / 4000
    assert torch.allclose(freq, p, atol=0.03)


def test_predictions_and_threshold():
    U = haar_orthonormal(4, generator=clbook.generator(4))
    model = latent.latent_summation(U, 0.25)
    A = latent.eq9_prediction(model, 1)
    ev = torch.linalg.eigvalsh(A)
    assert float(ev[-1]) == pytest.approx(0.75**2) and float(ev[0]) == pytest.approx(0.25)
    q = latent.summation_threshold()
    assert (1 - q) ** 2 == pytest.approx(q, abs=1e-15)


def test_bad_inputs():
    U = haar_orthonormal(3, generator=clbook.generator(5))
    with pytest.raises(ValueError, match="q"):
        latent.latent_summation(U, 1.0)
    with pytest.raises(ValueError, match="scales"):
        latent.latent_summation(U, 0.3, scales=torch.tensor([1.0, -1.0, 1.0], dtype=F64))
    with pytest.raises(ValueError, match="probs"):
        latent.latent_categorical(U, torch.tensor([0.5, 0.5, 0.5], dtype=F64))
    with pytest.raises(ValueError, match="M <= d"):
        latent.latent_categorical(torch.eye(2, 3, dtype=F64), torch.full((3,), 1 / 3, dtype=F64))
    with pytest.raises(ValueError, match="Eq. 9"):
        latent.eq9_prediction(latent.latent_categorical(U, torch.full((3,), 1 / 3, dtype=F64)), 0)
    with pytest.raises(TypeError, match="LatentModel"):
        latent.sample("model", 3, generator=clbook.generator(0))
    with pytest.raises(ValueError, match="q"):
        latent.latent_summation(U, torch.tensor([0.2, 0.3], dtype=F64))
    with pytest.raises(ValueError, match="U"):
        latent.latent_summation(torch.zeros(3, 0, dtype=F64), 0.2)
    with pytest.raises(ValueError, match="U"):
        latent.latent_summation(torch.full((3, 3), float("nan"), dtype=F64), 0.2)
    with pytest.raises(TypeError, match="U"):
        latent.latent_summation("U", 0.2)
    with pytest.raises(ValueError, match="M = 16"):
        latent.latent_summation(torch.eye(17, dtype=F64), 0.2)
    with pytest.raises(ValueError, match="m"):
        latent.eq8_prediction(latent.latent_categorical(U, torch.full((3,), 1 / 3, dtype=F64)), 3)
    with pytest.raises(ValueError, match="n"):
        latent.sample(latent.latent_summation(U, 0.3), 0, generator=clbook.generator(0))


def test_integer_and_list_input_is_converted():
    model = latent.latent_categorical([[1, 0], [0, 1]], [0.25, 0.75])
    assert model.atoms.dtype == F64 and torch.equal(model.atoms, torch.eye(2, dtype=F64))


def test_model_follows_the_dtype_of_U():
    U = haar_orthonormal(3, generator=clbook.generator(6), dtype=torch.float32)
    model = latent.latent_summation(U, 0.3)
    assert model.atoms.dtype == model.probs.dtype == torch.float32
