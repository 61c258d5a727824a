"""One figure style for the book.

Plot helpers take ``ax=None`` and return the axes; captions live in the notebook's figure
metadata, not in titles. Used by every chapter.
"""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import NullLocator

__all__ = ["STYLE", "use_style", "figure", "PANEL_MARGINS", "light_log_ticks", "COLORS", "Table"]

COLORS = ["#1f5a96", "#d1495b", "#2e933c", "#edae49", "#6c4f9e", "#00798c", "#8c564b", "#555555"]

STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": mpl.cycler(color=COLORS),
    "lines.linewidth": 2,
    "font.size": 10,
    "legend.frameon": False,
    "svg.hashsalt": "clbook",
}


def use_style() -> None:
    """Apply the book's matplotlib style (``clbook.setup`` leaves matplotlib alone; chapters call this)."""
    mpl.rcParams.update(STYLE)


class _ConstrainedOnce(ConstrainedLayoutEngine):
    """Constrained layout that is not recomputed for a figure it has just laid out, unchanged, at the same dpi and size.

    ``savefig`` without a tight bounding box (a live panel's PNG) draws a figure twice, and each draw ran the layout,
    the costliest part of drawing a small figure; the second run found the same layout (identical PNG).
    """

    _key = None

    def execute(self, fig):
        key = (fig.dpi, tuple(fig.get_size_inches()))
        if key == self._key and not fig.stale:
            return None
        result = super().execute(fig)
        self._key = key
        return result


PANEL_MARGINS = {"left": 0.75, "right": 0.15, "bottom": 0.5, "top": 0.15, "wspace": 0.8, "hspace": 0.6}
"""A live panel's fixed margins, in inches (:func:`figure` with ``margins``): room for tick labels and axis labels
at the book's font size. ``top`` grows by 0.25 in for a title (pass ``top=0.4``)."""


def _margin_fractions(margins, width: float, height: float, ncols: int, nrows: int) -> dict:
    m = dict(PANEL_MARGINS)
    if margins is not True:
        unknown = set(margins) - set(PANEL_MARGINS)
        if unknown:
            raise ValueError(f"margins: unknown keys {sorted(unknown)}; choose from {sorted(PANEL_MARGINS)}.")
        m.update(margins)
    if any(not isinstance(v, (int, float)) or v < 0 for v in m.values()):
        raise ValueError(f"margins must be non-negative numbers of inches; got margins = {m}.")
    axis_w = (width - m["left"] - m["right"] - (ncols - 1) * m["wspace"]) / ncols
    axis_h = (height - m["bottom"] - m["top"] - (nrows - 1) * m["hspace"]) / nrows
    if axis_w <= 0 or axis_h <= 0:
        raise ValueError(f"margins {m} leave no room for the axes in a {width} x {height} in figure.")
    return {"left": m["left"] / width, "right": 1 - m["right"] / width, "bottom": m["bottom"] / height,
            "top": 1 - m["top"] / height, "wspace": m["wspace"] / axis_w, "hspace": m["hspace"] / axis_h}


def figure(ncols: int = 1, nrows: int = 1, *, width: float = 6.4, height: float = 3.6, margins=None, **kwargs):
    """A new figure with the book's size conventions; returns ``(fig, axes)``.

    ``margins=None`` lays the figure out with constrained layout. A live panel's figure passes ``margins``: ``True``
    for :data:`PANEL_MARGINS`, or a dict of some of them (inches); the axes then sit at fixed positions and drawing
    runs no layout pass (constrained layout is about 40 % of the time to draw a panel's small PNG).
    """
    if ncols < 1 or nrows < 1:
        raise ValueError(f"ncols and nrows must be >= 1; got ncols = {ncols}, nrows = {nrows}.")
    if margins is None or margins is False:
        return plt.subplots(nrows, ncols, figsize=(width, height), layout=_ConstrainedOnce(), **kwargs)
    if margins is not True and not isinstance(margins, dict):
        raise TypeError(f"margins must be None, True or a dict of inches; got margins = {margins!r}.")
    fractions = _margin_fractions(margins, width, height, ncols, nrows)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), **kwargs)
    fig.subplots_adjust(**fractions)
    return fig, axes


def light_log_ticks(fig):
    """Turn off the minor ticks of ``fig``'s log and symlog axes and return ``fig``.

    a panel's figure draws faster (each minor tick is a full matplotlib tick with its own lines and label; on an axis
    spanning several decades they cost more to draw than the rest of the figure). The major ticks, labels and grid stay.
    """
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() in ("log", "symlog"):
                axis.set_minor_locator(NullLocator())
    return fig


class Table:
    """A small table that shows as aligned text and as HTML (no pandas needed).

    Parameters
    ----------
    header : sequence of str
    rows : sequence of sequences
        Cells are shown with ``str``; round numbers before passing them.
    """

    def __init__(self, header, rows):
        self.header = [str(h) for h in header]
        self.rows = [[str(c) for c in row] for row in rows]
        for k, row in enumerate(self.rows):
            if len(row) != len(self.header):
                raise ValueError(f"row {k} has {len(row)} cells; the header has {len(self.header)}.")

    def __repr__(self) -> str:
        widths = [max(len(r[k]) for r in [self.header, *self.rows]) for k in range(len(self.header))]
        line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
        return "\n".join([line(self.header), line(["-" * w for w in widths]), *map(line, self.rows)])

    def _repr_html_(self) -> str:
        import html

        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in self.rows)
        return f'<table class="clbook-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
