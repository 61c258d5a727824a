"""Tests of clbook.viz and clbook.widgets: the table, bounded controls, the panel wiring."""
import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import pytest  # noqa: E402

from clbook import viz, widgets  # noqa: E402


def test_table_text_and_html():
    table = viz.Table(["a", "b"], [[1, "x<y"], [22, "z"]])
    assert repr(table).splitlines()[0].startswith("a ") and "x&lt;y" in table._repr_html_()
    with pytest.raises(ValueError, match="row 0 has 1 cells"):
        viz.Table(["a", "b"], [[1]])


def test_controls_reject_out_of_range_values():
    with pytest.raises(ValueError, match="must lie in"):
        widgets.slider("τ", 5.0, 0.0, 1.0, 0.1)
    with pytest.raises(ValueError, match="0 < low"):
        widgets.log_slider("τ", 1.0, 0.0, 2.0)
    with pytest.raises(ValueError, match="must lie in"):
        widgets.int_slider("N", 1, 2, 10)


def test_panel_wires_controls_to_pure_function():
    calls = []

    def figure_fn(n):
        calls.append(n)
        fig, ax = viz.figure()
        ax.plot(range(n))
        return fig

    control = widgets.int_slider("n", 3, 1, 10)
    panel = widgets.panel(figure_fn, {"n": control})
    assert isinstance(panel, ipywidgets.VBox) and calls == [3]
    control.value = 5
    assert calls == [3, 5]
    with pytest.raises(TypeError, match="value widget"):
        widgets.panel(figure_fn, {"n": 3})
