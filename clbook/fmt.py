r"""How the book prints numbers: one policy, in one place, so a stored output reads the same on every machine.

A chapter's stored outputs are compared, character for character, with a fresh run on the reader's machine
(``make test`` runs nbval under several CPU kernels, thread counts and, where one is lent, a GPU). A printed
number must therefore carry only digits that every machine computes alike. Two kinds of number:

* **an error**: a quantity that is zero in exact arithmetic (a residual, the gap between a formula and autograd,
  the drift of a conserved quantity). Its measured value is rounding noise, which changes with the CPU kernel,
  the thread count and the device. :func:`error` prints it as a bound chosen before the measurement,
  ``"< 1e-10"``; only an error above the bound, which is not rounding noise, prints as a number (two
  significant digits).
* **a value**: a measured quantity that is not zero (an eigenvalue, an accuracy, a slope). :func:`value` prints
  it with ``digits`` significant digits, three by default. How many digits are stable is measured, not guessed:
  ``python tools/stability.py`` runs every chapter under the CPU kernels ``default``, ``avx2`` and the native
  one, with one and two threads, and lists every printed number that differs between them; a chapter prints
  fewer digits, or makes the quantity robust (a statistic over draws, a margin from a kink), where it does.

The floors, by the precision of the computation:

======================  ===========  ==============================================================
dtype                   floor        why
======================  ===========  ==============================================================
``torch.float64``       ``1e-10``    rounding noise of the book's float64 identities is below 1e-12
``torch.float32``       ``1e-4``     rounding noise of float32 training runs is below 1e-5
======================  ===========  ==============================================================

:func:`clbook.verify.check` and :func:`clbook.verify.report` use these functions, so a check's table follows
the same policy as the prose. Used by every chapter.
"""
from __future__ import annotations

import math
import numbers

import torch

__all__ = ["FLOORS", "DEFAULT_DIGITS", "value", "error", "floor_for", "percent", "pm", "glue"]

FLOORS = {torch.float64: 1e-10, torch.float32: 1e-4}
"""The bound below which an error prints as ``< floor``, by dtype."""

DEFAULT_DIGITS = 3
"""Significant digits of a printed value unless a chapter asks for fewer."""


def _real(name: str, x) -> float:
    if isinstance(x, torch.Tensor):
        if x.numel() != 1:
            raise ValueError(f"{name} must be a single number; got a tensor of shape {tuple(x.shape)}.")
        x = x.item()
    if hasattr(x, "item") and not isinstance(x, numbers.Real):  # numpy scalars and 0-d arrays
        try:
            x = x.item()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name} must be a single number; got {x!r}.") from exc
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {x!r} of type {type(x).__name__}.")
    return float(x)


def _digits(digits) -> int:
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or not 1 <= digits <= 6:
        raise ValueError(f"digits must be an integer from 1 to 6; got digits = {digits!r}.")
    return int(digits)


def floor_for(dtype: torch.dtype) -> float:
    """The error floor of a dtype (:data:`FLOORS`)."""
    if dtype not in FLOORS:
        raise ValueError(f"dtype must be torch.float64 or torch.float32; got dtype = {dtype!r}.")
    return FLOORS[dtype]


def _sci(x: float, digits: int) -> str:
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent):+d}".replace("e+", "e+") if int(exponent) > 0 else f"{mantissa}e{int(exponent)}"


def _sig(x: float, digits: int) -> str:
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        text = f"{x:.{digits}g}"
        return _sci(x, digits) if "e" in text else text
    return _sci(x, digits)


def value(x, digits: int = DEFAULT_DIGITS) -> str:
    """A measured value with ``digits`` significant digits (scientific notation below 1e-3 or from 1e5).

    >>> value(0.123456), value(1234.5, 2), value(2.5e-7)
    ('0.123', '1.2e+3', '2.5e-7')
    """
    x, digits = _real("x", x), _digits(digits)
    if not math.isfinite(x):
        return str(x)
    return _sig(x, digits)


def error(x, floor: float | None = None, *, dtype: torch.dtype = torch.float64) -> str:
    """An error (zero in exact arithmetic): ``"< floor"`` when ``|x| < floor``, else two significant digits.

    ``floor`` defaults to the floor of ``dtype`` (:data:`FLOORS`); a chapter may state a larger one in advance.

    >>> error(3e-16), error(2.5e-6), error(4e-5, 1e-4)
    ('< 1e-10', '2.5e-6', '< 1e-4')
    """
    x = _real("x", x)
    floor = floor_for(dtype) if floor is None else _real("floor", floor)
    if not (floor > 0 and math.isfinite(floor)):
        raise ValueError(f"floor must be a finite number > 0; got floor = {floor}.")
    if not math.isfinite(x):
        return str(x)
    if abs(x) < floor:
        return f"< {_sig(floor, 1)}"
    return _sig(x, 2)


def percent(x, digits: int = 1) -> str:
    """A fraction as a percentage with ``digits`` decimals: ``percent(0.6371) == '63.7 %'``."""
    x, digits = _real("x", x), _digits(digits)
    return f"{100 * x:.{digits}f} %"


def pm(mean, sd, digits: int = 2) -> str:
    """``mean ± sd`` with ``digits`` decimals (the papers' tables print two): ``pm(0.8812, 0.0213) == '0.88 ± 0.02'``."""
    mean, sd, digits = _real("mean", mean), _real("sd", sd), _digits(digits)
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def glue(name: str, variable, display: bool = False) -> None:
    """Store ``variable`` (usually a string from :func:`value` or :func:`error`) for the book's ``{glue}`` roles.

    This is :func:`myst_nb.glue` when myst-nb is installed (building the book), and otherwise emits the same display
    data (``application/papermill.record/...`` with ``scrapbook`` metadata), so a chapter runs unchanged where only
    clbook is installed (Colab, Binder, a course server) and myst-nb, with its Sphinx stack, is not.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string; got name = {name!r}.")
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        from IPython.core.formatters import format_display_data
        from IPython.display import display as ipy_display

        mimebundle, metadata = format_display_data(variable)
        prefix = "" if display else "application/papermill.record/"
        metadata["scrapbook"] = dict(name=name, mime_prefix=prefix)
        ipy_display({prefix + k: v for k, v in mimebundle.items()}, raw=True, metadata=metadata)
        return
    myst_glue(name, variable, display=display)
