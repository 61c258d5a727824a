"""clbook.viz.alpha: the figures of the pairwise importance (Chapters 1 and 4) draw, and reject bad input."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import clbook  # noqa: E402
from clbook import alpha, losses  # noqa: E402
from clbook.viz import alpha as viz_alpha  # noqa: E402


def test_anchor_profile_is_the_members_weights():
    d, a = viz_alpha.anchor_profile("InfoNCE", 0.5, 0.0, 16, True)
    assert d.shape == a.shape == (15,)
    np.testing.assert_allclose(a.sum(), 1.0, rtol=1e-12)  # InfoNCE with ε = 0: rows sum to one
    np.testing.assert_allclose(np.polyfit(d, np.log(a), 1)[0], -2.0, rtol=1e-10)  # slope −1/τ
    with pytest.raises(ValueError, match="name"):
        viz_alpha.anchor_profile("SimCLR")


def test_figures_draw():
    clbook.setup(0, device="cpu")
    for fig in (viz_alpha.member_weights(), viz_alpha.member_weights("Triplet", n=8), viz_alpha.rules(n=8)):
        assert fig.axes
        plt.close(fig)
    g = clbook.generator(0)
    z1 = clbook.randn(6, 3, generator=g)
    z2 = z1 + 0.1 * clbook.randn(6, 3, generator=g)
    ax = viz_alpha.row_sums(losses.pair_distances(z1, z2)[0], alpha.pairwise_importance(losses.infonce(0.5, 1.0), z1, z2).sum(1))
    assert len(ax.collections) == 1
    plt.close(ax.figure)


def test_bad_input():
    with pytest.raises(ValueError, match="temperature"):
        viz_alpha.member_weights(temperature=0.0)
    with pytest.raises(ValueError, match="n"):
        viz_alpha.rules(n=1)
    with pytest.raises(ValueError, match="same length"):
        viz_alpha.row_sums(np.zeros(3), np.zeros(4))
