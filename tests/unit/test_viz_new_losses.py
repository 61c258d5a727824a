"""clbook.viz.new_losses: the accuracy figure draws from a stored comparison."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from clbook.experiments import new_losses as nl  # noqa: E402
from clbook.viz import new_losses as viz_nl  # noqa: E402


def test_accuracy_draws_one_line_per_method():
    data = nl.load("quick")
    ax = viz_nl.accuracy(data, value="knn", methods=["quadratic", "α-CL-r_H"])
    assert len(ax.lines) == 2
    plt.close(ax.figure)


def test_bad_input():
    data = nl.load("quick")
    with pytest.raises(TypeError, match="Comparison"):
        viz_nl.accuracy({"rows": []})
    with pytest.raises(ValueError, match="value"):
        viz_nl.accuracy(data, value="loss")
    with pytest.raises(ValueError, match="methods"):
        viz_nl.accuracy(data, methods=["SimCLR"])
