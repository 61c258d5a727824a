"""clbook.linalg: Haar draws (invariants and law), retractions, normalisation; clbook._validate.as_tensor."""
import numpy as np
import pytest
import torch

import clbook
from clbook import linalg
from clbook._validate import as_tensor


def test_haar_orthonormal_invariants_and_determinism():
    Q = linalg.haar_orthonormal(7, 3, generator=clbook.generator(0), batch=(4,))
    assert Q.shape == (4, 7, 3) and linalg.stiefel_error(Q) < 1e-13
    again = linalg.haar_orthonormal(7, 3, generator=clbook.generator(0), batch=(4,))
    assert torch.equal(Q, again)
    assert linalg.haar_orthonormal(5, generator=clbook.generator(1)).shape == (5, 5)


def test_haar_law_first_entry_moments():
    """For Haar Q in O(n), q11 has mean 0 and variance 1/n (a law check that sign fixing is needed for)."""
    Q = linalg.haar_orthonormal(4, 1, generator=clbook.generator(3), batch=(20000,))
    x = Q[:, 0, 0]
    assert abs(float(x.mean())) < 4 * (1 / 4 / 20000) ** 0.5
    assert float((x ** 2).mean()) == pytest.approx(0.25, abs=4 * np.sqrt(2 / 15 / 20000 * 1.0))


def test_retractions():
    W = clbook.randn(6, 3, generator=clbook.generator(2))
    for method in linalg.RETRACTIONS:
        R = linalg.retract(W, method=method)
        assert linalg.stiefel_error(R) < 1e-13
    Q = linalg.haar_orthonormal(6, 3, generator=clbook.generator(4))
    torch.testing.assert_close(linalg.retract(Q), Q)  # points on the manifold are fixed
    torch.testing.assert_close(linalg.retract(Q, method="polar"), Q)
    U, _, Vh = torch.linalg.svd(W, full_matrices=False)
    torch.testing.assert_close(linalg.retract(W, method="polar"), U @ Vh)
    with pytest.raises(ValueError, match="tall"):
        linalg.retract(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="method"):
        linalg.retract(W, method="cayley")
    with pytest.raises(ValueError, match="full column rank"):
        linalg.retract(torch.zeros(4, 2))


def test_unit_rows_columns():
    X = torch.tensor([[3.0, 4.0], [0.0, 0.0]])
    torch.testing.assert_close(linalg.unit_rows(X), torch.tensor([[0.6, 0.8], [0.0, 0.0]]))
    torch.testing.assert_close(linalg.unit_columns(X.T), torch.tensor([[0.6, 0.0], [0.8, 0.0]]))
    with pytest.raises(ValueError, match="eps"):
        linalg.unit_rows(X, eps=0.0)


def test_single_thread_restores():
    torch.set_num_threads(2)
    with linalg.single_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    torch.set_num_threads(1)


def test_as_tensor():
    t = as_tensor("x", [1, 2, 3])
    assert t.dtype == torch.float64 and t.tolist() == [1.0, 2.0, 3.0]
    assert as_tensor("x", np.ones((2, 2), dtype=np.float32)).dtype == torch.float32
    assert as_tensor("x", torch.arange(3)).dtype == torch.float64
    with pytest.raises(TypeError, match="x must hold real numbers"):
        as_tensor("x", ["a", "b"])
    with pytest.raises(TypeError, match="x must be real"):
        as_tensor("x", torch.ones(2, dtype=torch.complex64))
    with pytest.raises(ValueError, match="x must have 2 dimensions"):
        as_tensor("x", [1.0], ndim=2)
    with pytest.raises(ValueError, match="finite"):
        as_tensor("x", [1.0, float("nan")])


def test_the_normalisation_family():
    """Rows, columns and the whole matrix: each checked form is its unchecked kernel away from the floor."""
    from clbook.linalg import normalise_unchecked, unit_columns, unit_frobenius, unit_rows

    W = torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for over, checked, norm in (("rows", unit_rows, lambda M: M.norm(dim=-1)),
                                ("columns", unit_columns, lambda M: M.norm(dim=-2)),
                                ("frobenius", unit_frobenius, lambda M: torch.linalg.matrix_norm(M))):
        U = normalise_unchecked(W, over)
        assert torch.equal(U, checked(W)), over
        torch.testing.assert_close(norm(U), torch.ones_like(norm(U)), rtol=1e-14, atol=1e-14)
    assert not torch.allclose(torch.linalg.matrix_norm(normalise_unchecked(W, "rows")), torch.ones(3, dtype=torch.float64))
