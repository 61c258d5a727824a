r"""Figure of the loss comparison of Chapter 4 (Tian 2022, Sec. 6, Table 1 at CPU scale): probe accuracy against epochs.

The data are a :class:`clbook.experiments.new_losses.Comparison` (:func:`clbook.experiments.new_losses.load`); this
module draws.
"""
from __future__ import annotations

import numpy as np

from .._validate import check_choice
from . import figure

__all__ = ["accuracy"]


def accuracy(comparison, *, value: str = "linear", methods=None, ax=None):
    r"""Mean probe accuracy (%) against epochs, one line per method, with a band of one standard deviation over seeds.

    ``comparison``: a :class:`~clbook.experiments.new_losses.Comparison`; ``value``: ``"linear"`` or ``"knn"``;
    ``methods``: a subset of ``comparison.methods`` (default all). Returns the axes.
    """
    from ..experiments.new_losses import Comparison, summary

    if not isinstance(comparison, Comparison):
        raise TypeError(f"comparison must be a clbook.experiments.new_losses.Comparison; got {type(comparison).__name__}.")
    check_choice("value", value, ("linear", "knn"))
    methods = list(methods) if methods is not None else list(comparison.methods)
    for m in methods:
        check_choice("methods", m, tuple(comparison.methods))
    stats = summary(comparison.rows, value=value)
    if ax is None:
        _, ax = figure(width=6.4, height=3.6)
    for m in methods:
        epochs = sorted(e for (k, e) in stats if k == m)
        mean = 100 * np.array([stats[(m, e)][0] for e in epochs])
        sd = 100 * np.array([stats[(m, e)][1] for e in epochs])
        ax.plot(epochs, mean, marker="o", ms=3, label=m)
        ax.fill_between(epochs, mean - sd, mean + sd, alpha=0.15)
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"{'linear probe' if value == 'linear' else '5-NN'} accuracy (%)")
    ax.legend(fontsize=7, ncol=2)
    return ax
