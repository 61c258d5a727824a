"""clbook.viz.deeplinear: Fig. 2 draws from a training result; the panel trains and draws."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from clbook.dynamics import deeplinear as dl  # noqa: E402
from clbook.viz import deeplinear as viz_dl  # noqa: E402


def test_figure2_draws_one_line_pair_per_layer():
    res, _ = dl.figure2_data(depth=3, steps=30)
    fig = viz_dl.figure2(res)
    assert len(fig.axes) == 2 and len(fig.axes[1].lines) == 2 * 3
    plt.close(fig)
    plt.close(viz_dl.figure2_panel(depth=2, width=3))


def test_bad_input():
    with pytest.raises(TypeError, match="TrainResult"):
        viz_dl.figure2({"energy": []})
    res, _ = dl.figure2_data(depth=3, steps=30)
    with pytest.raises(ValueError, match="start"):
        viz_dl.figure2(res, start=3)
