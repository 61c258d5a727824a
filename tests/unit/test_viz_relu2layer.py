"""clbook.viz.relu2layer: the figures of Chapter 3 draw from their data, and reject bad input."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import clbook  # noqa: E402
from clbook.dynamics import relu2layer as r2  # noqa: E402
from clbook.viz import relu2layer as viz_r2  # noqa: E402


def test_figures_draw():
    clbook.setup(0, device="cpu")
    prob = r2.make_problem(modes=3, gamma_range=(0.5, 1.5), n=12, seed=0)
    W1, W2 = r2.random_start(1, 2, 3, 2, seed=1)
    relu = r2.relu_ascent(W1[0], W2[0], prob.alpha, prob.batch.x1, prob.batch.x2, eta=1e-3, steps=20, record_every=10)
    lin = r2.sticky_ascent(W1, W2, prob.X, eta=1e-3, steps=20, record_every=10, keep_trajectory=True)
    fig = viz_r2.trajectories([("a", relu, lin), ("b", relu, lin)])
    assert len(fig.axes) == 2
    plt.close(fig)
    fig = viz_r2.mode_wins(torch.tensor([3, 1, 0]), torch.tensor([1.0, 0.5, 0.2]))
    plt.close(fig)
    fig = viz_r2.fig3_panel(0.9, 1.1, 2, 2, 0)
    assert len(fig.axes) == 4
    plt.close(fig)


def test_bad_input():
    with pytest.raises(ValueError, match="pairs"):
        viz_r2.trajectories([])
    with pytest.raises(ValueError, match="same length"):
        viz_r2.mode_wins([1, 2], [1.0])
    with pytest.raises(ValueError, match="gamma_low"):
        viz_r2.fig3_panel(gamma_low=2.0)
