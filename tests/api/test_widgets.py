"""Every registered panel (a PanelSpec in the PANELS of a clbook.viz submodule) draws at the ends of every range.

A chapter that shows a panel registers it, so a slider bound that takes a reader out of the valid domain fails here.
"""
import importlib
import pkgutil

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import clbook  # noqa: E402
import clbook.viz  # noqa: E402
from clbook import widgets  # noqa: E402


def registered():
    found = []
    for info in pkgutil.iter_modules(clbook.viz.__path__, "clbook.viz."):
        module = importlib.import_module(info.name)
        for spec in getattr(module, "PANELS", ()):
            assert isinstance(spec, widgets.PanelSpec), f"{info.name}.PANELS holds a {type(spec).__name__}"
            found.append(pytest.param(spec, id=f"{spec.chapter}:{spec.figure.__name__}"))
    return found


@pytest.mark.parametrize("spec", registered())
def test_panel_draws_at_the_ends_of_every_range(spec):
    clbook.setup(seed=0, device="cpu")
    for values in widgets.extremes(spec.controls()):
        fig = spec.figure(**values)
        assert fig.axes, f"{spec.figure.__name__}({values}) drew nothing"
        plt.close(fig)
    # how fast a panel updates is measured by a benchmark (tools/panel_bench.py, make bench), not by a timed test


def test_extremes_cover_each_end():
    import ipywidgets as w

    controls = {"a": w.FloatSlider(value=0.5, min=0.1, max=1.0), "b": w.Dropdown(options=["x", "y"], value="x"),
                "c": w.Checkbox(value=False), "d": w.IntSlider(value=3, min=1, max=5)}
    got = widgets.extremes(controls)
    assert got[0] == {"a": 0.5, "b": "x", "c": False, "d": 3} and len(got) == 1 + 2 + 1 + 1 + 2


@pytest.mark.parametrize("spec", registered())
def test_panel_moves(spec):
    """The live panel is built and every control moved once (to the far end of its range, or another option): the
    figure function is called with the moved value. Runs under ipywidgets 8 here and under 7 in ``make floor``."""
    import ipywidgets as w

    clbook.setup(seed=0, device="cpu")
    calls = []

    def figure(**values):
        calls.append(values)
        fig, ax = plt.subplots(figsize=(1, 1))
        return fig

    controls = spec.controls()
    moved_to = {}
    for values in widgets.extremes(controls)[1:]:
        (name,) = [k for k, v in values.items() if v != controls[k].value] or [None]
        if name is not None:
            moved_to[name] = values[name]  # the last end: the far end of a slider, the last option
    box = widgets.panel(widgets.PanelSpec(spec.chapter, figure, lambda: controls))
    assert isinstance(box, w.VBox) and calls, "the panel did not draw its initial figure"
    for name, value in moved_to.items():
        before = len(calls)
        controls[name].value = value
        assert len(calls) == before + 1, f"{spec.chapter}: moving {name} to {value!r} did not redraw"
        assert calls[-1][name] == pytest.approx(value), f"{spec.chapter}: moving {name} drew with {calls[-1][name]!r}"
    plt.close("all")


def test_render_png_draws_the_pixels_of_savefig():
    """The live panel's PNG (a shared renderer, zlib level 1) has the pixels of ``savefig`` at the same dpi, for two
    figures in a row of the same size (the second reuses the renderer) and one of another size."""
    import io

    import numpy as np
    from PIL import Image

    def pixels(png):
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))

    for k, size in enumerate([(4.0, 3.0), (4.0, 3.0), (3.0, 2.0)]):
        fig, ax = plt.subplots(figsize=size)
        ax.plot([0, 1, 2], [k, 1, 0], label=f"line {k}")
        ax.set_title(f"figure {k}")
        ax.legend()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=widgets.PANEL_DPI)
        assert np.array_equal(pixels(widgets.render_png(fig)), pixels(buf.getvalue()))
        assert fig.dpi == plt.rcParams["figure.dpi"], "render_png must leave the figure's dpi as it was"
        plt.close(fig)
    with pytest.raises(ValueError, match="dpi"):
        widgets.render_png(plt.figure(), dpi=5)
    plt.close("all")
