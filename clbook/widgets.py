"""Parameter panels: bounded controls wired to a pure function that returns a figure.

A panel contains no mathematics. ``figure_fn(**params)`` computes and plots; the panel only
passes the controls' values. :func:`static` draws the same function at the initial values,
the twin figure that the HTML and a printout show.

A chapter's panel is declared once, in the package, as a :class:`PanelSpec` (the figure function and a function
that builds its bounded controls) listed in the ``PANELS`` of a :mod:`clbook.viz` submodule; the chapter shows it
with ``widgets.panel(spec)`` and ``widgets.static(spec)``. ``tests/api/test_widgets.py`` draws every registered
panel at the ends of every control's range (:func:`extremes`), so a bound that lets a reader leave the valid
domain fails a test.

Used by every chapter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import ipywidgets as w
import matplotlib.pyplot as plt
from IPython.display import display

__all__ = ["PanelSpec", "panel", "static", "extremes", "frame_grid", "render_png", "slider", "log_slider", "int_slider", "dropdown",
           "toggle"]


@dataclass(frozen=True)
class PanelSpec:
    """A chapter's parameter panel.

    ``figure(**values)`` returns a matplotlib figure; ``controls()`` builds the bounded widgets, name -> widget, whose
    values are the figure's keyword arguments.
    """

    chapter: str
    figure: Callable
    controls: Callable[[], dict]

    def __post_init__(self):
        if not callable(self.figure):
            raise TypeError(f"PanelSpec: figure must be a function that returns a figure; got figure = {self.figure!r}.")
        if not callable(self.controls):
            raise TypeError(f"PanelSpec: controls must be a function that builds the controls; got controls = {self.controls!r}.")


def extremes(controls: dict) -> list[dict]:
    """The values at which a panel is tested.

    every control at its initial value, then each control alone at each end of its range (sliders) or at each option
    (dropdowns, checkboxes).
    """
    if not isinstance(controls, dict) or not all(isinstance(c, w.ValueWidget) for c in controls.values()):
        raise TypeError(f"controls must be a dict of name -> ipywidgets control; got controls = {controls!r}.")
    base = {name: c.value for name, c in controls.items()}
    out = [base]
    for name, c in controls.items():
        if isinstance(c, w.FloatLogSlider):
            ends = [c.base ** c.min, c.base ** c.max]
        elif isinstance(c, (w.FloatSlider, w.IntSlider)):
            ends = [c.min, c.max]
        elif isinstance(c, w.Dropdown):
            ends = [v for _, v in c.options] if c.options and isinstance(c.options[0], tuple) else list(c.options)
        elif isinstance(c, w.Checkbox):
            ends = [False, True]
        else:
            raise TypeError(f"controls[{name!r}]: no test ends for {type(c).__name__}.")
        out += [base | {name: v} for v in ends if v != base[name]]
    return out


def _grid_values(c, points: int) -> tuple[list, list[str]]:
    """The values of one control in the frame grid and their labels.

    ``points`` across a slider's range (snapped to its step, the initial value included), every option of a dropdown,
    both states of a checkbox.
    """
    import numpy as np

    if isinstance(c, w.FloatLogSlider):
        exps = {round(c.min + round((e - c.min) / c.step) * c.step, 10) for e in np.linspace(c.min, c.max, points)}
        values = sorted({float(c.base ** e) for e in exps} | {float(c.value)})
        return values, [f"{v:.3g}" for v in values]
    if isinstance(c, w.IntSlider):
        values = sorted({int(round(v)) for v in np.linspace(c.min, c.max, points)} | {int(c.value)})
        return values, [str(v) for v in values]
    if isinstance(c, w.FloatSlider):
        raw = np.linspace(c.min, c.max, points).tolist() + [c.value]
        values = sorted({round(c.min + round((v - c.min) / c.step) * c.step, 12) for v in raw})
        values = [min(max(v, c.min), c.max) for v in values]
        return values, [f"{v:.3g}" for v in values]
    if isinstance(c, w.Dropdown):
        pairs = [(str(o[0]), o[1]) if isinstance(o, tuple) else (str(o), o) for o in c.options]
        return [v for _, v in pairs], [label for label, _ in pairs]
    if isinstance(c, w.Checkbox):
        return [False, True], ["off", "on"]
    raise TypeError(f"no frame grid for a {type(c).__name__}.")


def frame_grid(controls: dict, *, points: int = 5) -> dict:
    """The frames that let a panel move without a kernel.

    its figure at the controls' initial values, and at ``points`` values of each control (every option of a dropdown)
    with the others at their initial values.

    Returns ``{"controls": [{"name", "label", "labels", "default"}], "frames": {key: values}}`` where ``key`` is
    ``""`` for the initial frame and ``"<name>=<index>"`` for a control moved to ``labels[index]``; ``values`` are
    the figure function's keyword arguments. ``tools/frames.py`` renders them for the HTML book.
    """
    if not isinstance(controls, dict) or not controls or not all(isinstance(c, w.ValueWidget) for c in controls.values()):
        raise TypeError(f"controls must be a non-empty dict of name -> ipywidgets control; got controls = {controls!r}.")
    if isinstance(points, bool) or not isinstance(points, int) or not 2 <= points <= 25:
        raise ValueError(f"points must be an integer in [2, 25]; got points = {points!r}.")
    base = {name: c.value for name, c in controls.items()}
    described, frames = [], {"": dict(base)}
    for name, c in controls.items():
        values, labels = _grid_values(c, points)
        default = min(range(len(values)), key=lambda k: 0 if values[k] == base[name] else
                      abs(values[k] - base[name]) if isinstance(base[name], (int, float)) and not isinstance(base[name], bool)
                      else 1)
        values[default] = base[name]
        described.append(dict(name=name, label=(c.description or name).strip(), labels=labels, default=default))
        for k, v in enumerate(values):
            if k != default:
                frames[f"{name}={k}"] = base | {name: v}
    return {"controls": described, "frames": frames}


def slider(description: str, value: float, low: float, high: float, step: float) -> w.FloatSlider:
    """A float slider whose bounds keep the computation valid."""
    if not low <= value <= high:
        raise ValueError(f"{description}: value must lie in [{low}, {high}]; got {value}.")
    return w.FloatSlider(value=value, min=low, max=high, step=step, description=description,
                         continuous_update=False, style={"description_width": "initial"})


def log_slider(description: str, value: float, low: float, high: float) -> w.FloatLogSlider:
    """A slider over ``[low, high]`` on a log scale (``low > 0``)."""
    import math

    if not 0 < low <= value <= high:
        raise ValueError(f"{description}: need 0 < low <= value <= high; got {low}, {value}, {high}.")
    return w.FloatLogSlider(value=value, base=10, min=math.log10(low), max=math.log10(high), step=0.05,
                            description=description, continuous_update=False, style={"description_width": "initial"})


def int_slider(description: str, value: int, low: int, high: int, step: int = 1) -> w.IntSlider:
    """An integer slider with bounds."""
    if not low <= value <= high:
        raise ValueError(f"{description}: value must lie in [{low}, {high}]; got {value}.")
    return w.IntSlider(value=value, min=low, max=high, step=step, description=description,
                       continuous_update=False, style={"description_width": "initial"})


def dropdown(description: str, options, value=None) -> w.Dropdown:
    """A choice among ``options``."""
    options = list(options)
    return w.Dropdown(options=options, value=options[0] if value is None else value, description=description,
                      style={"description_width": "initial"})


def toggle(description: str, value: bool = False) -> w.Checkbox:
    """An on/off switch."""
    return w.Checkbox(value=value, description=description, indent=False)


PANEL_DPI = 72
"""The resolution at which a live panel sends its figure to the browser (the static twin uses the notebook's)."""


_RENDERERS: dict = {}
"""One Agg renderer per (width, height, dpi), shared by every update of the live panels (see :func:`render_png`)."""


def render_png(fig, *, dpi: int = PANEL_DPI) -> bytes:
    """The PNG a live panel shows: ``fig`` drawn once at ``dpi`` (no tight bounding box, which draws it twice).

    The pixels are those of ``fig.savefig(buf, format="png", dpi=dpi)``; the figure is drawn by an Agg renderer kept
    for its size and dpi, shared by all updates. Matplotlib caches text metrics per renderer, and each savefig makes
    a new one, so a panel's new figure paid again for the layout of every tick label and title it had already shown
    (a third to a half of drawing a small figure). The PNG is written with zlib level 1 (a few ms; the level changes
    the size by about 10 %, not the pixels).
    """
    import io

    from matplotlib.backends.backend_agg import RendererAgg
    from PIL import Image

    if not hasattr(fig, "savefig"):
        raise TypeError(f"fig must be a matplotlib figure; got {type(fig).__name__}.")
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not 20 <= dpi <= 300:
        raise ValueError(f"dpi must be a number in [20, 300]; got dpi = {dpi!r}.")
    before = fig.dpi
    fig.dpi = dpi
    try:
        width, height = fig.bbox.size
        key = (width, height, dpi)
        renderer = _RENDERERS.get(key)
        if renderer is None:
            if len(_RENDERERS) >= 8:
                _RENDERERS.clear()
            renderer = _RENDERERS[key] = RendererAgg(width, height, dpi)
        renderer.clear()
        fig.draw(renderer)
        image = Image.frombuffer("RGBA", (int(renderer.width), int(renderer.height)), renderer.buffer_rgba(),
                                 "raw", "RGBA", 0, 1)
        buf = io.BytesIO()
        image.save(buf, format="png", compress_level=1)
    finally:
        fig.dpi = before
    return buf.getvalue()


def static(figure_fn, **params) -> None:
    """Draw ``figure_fn(**params)`` once and show it.

    the panel's static twin (a :class:`PanelSpec` draws at its controls' initial values).
    """
    if isinstance(figure_fn, PanelSpec):
        params = {name: c.value for name, c in figure_fn.controls().items()} | params
        figure_fn = figure_fn.figure
    fig = figure_fn(**params)
    display(fig)
    plt.close(fig)


def settle_heap() -> None:
    """Collect, then freeze the objects alive now (``gc.freeze``), once a panel has drawn its first figure.

    Python's full garbage collections walk every tracked object: with torch, matplotlib and a chapter's results loaded
    that took about 0.3 s, and one landed on some panel update every few dozen (the worst updates measured). Frozen
    objects (the modules, the chapter's data) are no longer walked; the figures of later updates are still collected.
    :func:`panel` calls it; ``tools/panel_bench.py`` calls it at the same point.
    """
    import gc

    gc.collect()
    gc.freeze()


def panel(figure_fn, controls: dict | None = None, *, columns: int = 3) -> w.VBox:
    """Wire ``controls`` (name -> widget) to ``figure_fn(**values)``; returns the panel widget.

    ``panel(spec)`` with a :class:`PanelSpec` builds its controls. The figure is redrawn into an Output widget each
    time a control changes.
    """
    if isinstance(figure_fn, PanelSpec):
        if controls is not None:
            raise ValueError("give a PanelSpec alone, or a figure function with its controls.")
        figure_fn, controls = figure_fn.figure, figure_fn.controls()
    if controls is None:
        raise ValueError("controls must name at least one widget.")
    if not controls:
        raise ValueError("controls must name at least one widget.")
    for name, control in controls.items():
        if not isinstance(control, w.ValueWidget):
            raise TypeError(f"controls[{name!r}] must be an ipywidgets value widget; got {type(control).__name__}.")

    def draw(**values):
        from IPython.display import Image

        fig = figure_fn(**values)
        display(Image(render_png(fig)))
        plt.close(fig)

    out = w.interactive_output(draw, controls)
    settle_heap()
    items = list(controls.values())
    rows = [w.HBox(items[k:k + columns]) for k in range(0, len(items), columns)]
    return w.VBox([*rows, out])
