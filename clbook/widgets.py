"""Parameter panels: bounded controls wired to a pure function that returns a figure.

A panel contains no mathematics. ``figure_fn(**params)`` computes and plots; the panel only
passes the controls' values. :func:`static` draws the same function at the initial values,
the twin figure that the HTML and a printout show.

Used by every chapter.
"""
from __future__ import annotations

from typing import Callable

import ipywidgets as w
import matplotlib.pyplot as plt
from IPython.display import display

__all__ = ["panel", "static", "slider", "log_slider", "int_slider", "dropdown", "toggle"]


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


def static(figure_fn: Callable, **params) -> None:
    """Draw ``figure_fn(**params)`` once and show it: the panel's static twin."""
    fig = figure_fn(**params)
    display(fig)
    plt.close(fig)


def panel(figure_fn: Callable, controls: dict, *, columns: int = 3) -> w.VBox:
    """Wire ``controls`` (name -> widget) to ``figure_fn(**values)``; returns the panel widget.

    The figure is redrawn into an Output widget each time a control changes.
    """
    if not controls:
        raise ValueError("controls must name at least one widget.")
    for name, control in controls.items():
        if not isinstance(control, w.ValueWidget):
            raise TypeError(f"controls[{name!r}] must be an ipywidgets value widget; got {type(control).__name__}.")

    def draw(**values):
        fig = figure_fn(**values)
        display(fig)
        plt.close(fig)

    out = w.interactive_output(draw, controls)
    items = list(controls.values())
    rows = [w.HBox(items[k:k + columns]) for k in range(0, len(items), columns)]
    return w.VBox([*rows, out])
