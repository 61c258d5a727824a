"""Tests of clbook.alpha: the min player (Theorem 2) in closed form and by a generic solver."""
import numpy as np
import pytest
import torch

import clbook
from clbook import alpha, losses, nets


def batch(n=9, d=4, seed=0, noise=0.5):
    g = clbook.generator(seed)
    z1 = clbook.randn(n, d, generator=g)
    return z1, z1 + noise * clbook.randn(n, d, generator=g)


@pytest.mark.parametrize("member", [losses.infonce(0.5, 0.0), losses.infonce(0.2, 1.0), losses.mine(),
                                    losses.soft_triplet(0.7), losses.n_plus_one_tuplet()])
def test_theorem2_numeric_solver_matches_eq4(member):
    z1, z2 = batch()
    weights = alpha.pairwise_importance(member, z1, z2).numpy()
    costs = alpha.energy_coefficients(z1, z2).numpy()
    for i in range(len(weights)):
        others = np.arange(len(weights)) != i
        solved = alpha.solve_min_player_numerically(costs[i, others], weights[i].sum(), member.psi_temperature)
        np.testing.assert_allclose(solved, weights[i, others], rtol=1e-6, atol=1e-10)


def test_numeric_solver_detects_wrong_temperature():
    z1, z2 = batch()
    member = losses.infonce(0.5)
    weights = alpha.pairwise_importance(member, z1, z2).numpy()
    costs = alpha.energy_coefficients(z1, z2).numpy()
    solved = alpha.solve_min_player_numerically(costs[0, 1:], 1.0, 0.25)  # the paper's Lemma 5 read literally
    assert np.abs(solved - weights[0, 1:]).max() > 1e-3


def test_entropy_min_player_closed_form_and_row_sums():
    z1, z2 = batch()
    member = losses.infonce(0.5, 1.0)
    weights = alpha.pairwise_importance(member, z1, z2)
    xi = torch.exp(member.log_xi(losses.margins(z1, z2)))
    torch.testing.assert_close(weights.sum(dim=1), xi / (xi + 1.0), rtol=1e-13, atol=0)
    closed = alpha.entropy_min_player(z1, z2, 0.5, weights.sum(dim=1))
    torch.testing.assert_close(closed, weights, rtol=1e-12, atol=1e-15)


def test_energy_coefficients_make_energy_linear():
    z1, z2 = batch()
    weights = losses.infonce().importance(z1, z2)
    energy = clbook.covariance.energy(weights, z1, z2)
    assert float((alpha.energy_coefficients(z1, z2) * weights).sum()) == pytest.approx(float(energy), rel=1e-13)


def test_stop_gradient_matters():
    g = clbook.generator(1)
    x1 = clbook.randn(10, 4, generator=g)
    x2 = x1 + 0.3 * clbook.randn(10, 4, generator=g)
    net = nets.MLP([4, 8, 3], generator=g, normalize=True)
    _, sg = alpha.loss_and_energy_gradients(losses.infonce(0.1), net, x1, x2)
    _, bp = alpha.loss_and_energy_gradients(losses.infonce(0.1), net, x1, x2, stop_gradient=False)
    assert float(sg @ bp / (sg.norm() * bp.norm())) < 0.999
    _, sg_q = alpha.loss_and_energy_gradients(losses.quadratic(), net, x1, x2)
    _, bp_q = alpha.loss_and_energy_gradients(losses.quadratic(), net, x1, x2, stop_gradient=False)
    torch.testing.assert_close(sg_q, bp_q)


def test_argument_errors():
    z1, z2 = batch()
    with pytest.raises(TypeError, match="clbook.losses member"):
        alpha.pairwise_importance(lambda a, b: 0, z1, z2)
    with pytest.raises(ValueError, match="row_sum must be > 0"):
        alpha.solve_min_player_numerically([1.0, 2.0], 0.0, 0.5)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        alpha.entropy_min_player(z1, z2, -1.0, torch.ones(len(z1)))
    with pytest.raises(ValueError, match="row_sums"):
        alpha.entropy_min_player(z1, z2, 1.0, torch.ones(3))
    with pytest.raises(ValueError, match="costs"):
        alpha.solve_min_player_numerically([[1.0]], 1.0, 1.0)
    with pytest.raises(TypeError, match="encoder"):
        alpha.loss_and_energy_gradients(losses.infonce(), "net", z1, z2)
