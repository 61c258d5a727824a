"""The table behind the property-based test of the whole public API (``tests/api/test_api.py``).

Every public callable of ``clbook`` (a module's ``__all__``, else every name not starting with ``_``, defined in
that module) has one :class:`Spec` in one of the ``domains_*.py`` files of this folder, keyed by its qualified
name, e.g. ``"clbook.linalg.haar_orthonormal"``. A spec gives

* ``valid``: a hypothesis strategy of keyword arguments inside the function's declared domain;
* ``expect``: a function ``(output, kwargs) -> None`` that asserts the documented shape (the test also asserts
  that every number in the output is finite);
* ``invalid``: calls outside the domain, each ``Bad(kwargs, name)``: the call must raise ``ValueError`` or
  ``TypeError`` whose message contains ``name`` (the parameter);
* or ``exempt``: why the callable is not called here (a result record the package constructs, a plotting or
  widget helper covered by the chapters' tests, a command line covered by its own tests), said in one sentence.

Positional arguments go under the key ``"_args"`` (a tuple).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Callable

import numpy as np
import torch
from hypothesis import strategies as st


@dataclass(frozen=True)
class Bad:
    """A call outside the domain and the parameter its error message must name."""

    kwargs: dict
    name: str
    error: tuple = (ValueError, TypeError)


@dataclass(frozen=True)
class Spec:
    valid: Any = None
    expect: Callable | None = None
    invalid: tuple = ()
    exempt: str = ""
    max_examples: int = 5

    def __post_init__(self):
        if not self.exempt and self.valid is None:
            raise ValueError("a spec needs a valid strategy or an exemption")
        if self.exempt and len(self.exempt.split()) < 4:
            raise ValueError("an exemption says why in a sentence")


def call(function, kwargs: dict):
    kwargs = dict(kwargs)
    args = kwargs.pop("_args", ())
    return function(*args, **kwargs)


def finite(out, path="output") -> None:
    """Assert every number reachable in ``out`` (tensors, arrays, numbers, sequences, dicts, dataclasses) is finite."""
    if isinstance(out, torch.Tensor):
        if out.is_floating_point() or out.is_complex():
            assert bool(torch.isfinite(out.detach()).all()), f"{path} has non-finite entries"
    elif isinstance(out, np.ndarray):
        if out.dtype.kind in "fc":
            assert np.all(np.isfinite(out)), f"{path} has non-finite entries"
    elif isinstance(out, (bool, str, type(None))):
        return
    elif isinstance(out, (int, float, np.floating, np.integer)):
        assert math.isfinite(float(out)), f"{path} = {out}"
    elif isinstance(out, dict):
        for k, v in out.items():
            finite(v, f"{path}[{k!r}]")
    elif isinstance(out, (list, tuple)):
        for k, v in enumerate(out):
            finite(v, f"{path}[{k}]")
    elif is_dataclass(out):
        for f in fields(out):
            finite(getattr(out, f.name), f"{path}.{f.name}")


def shape(*expected):
    """An ``expect`` function: the output is a tensor/array of this shape (``None`` matches any size)."""

    def check(out, kwargs):
        got = tuple(out.shape)
        assert len(got) == len(expected) and all(e is None or e == g for e, g in zip(expected, got, strict=True)), \
            f"shape {got}, expected {expected}"

    return check


def scalar(out, kwargs):
    """An ``expect`` function: a single real number (float, 0-d tensor or 1-element tensor)."""
    if isinstance(out, torch.Tensor):
        assert out.numel() == 1, f"expected a scalar, got shape {tuple(out.shape)}"
    else:
        float(out)


# -------------------------------------------------------------------------------------------- strategies

def generators():
    """A CPU torch.Generator with a drawn seed."""
    return st.integers(0, 2**31 - 1).map(lambda s: torch.Generator().manual_seed(s))


def tensors(*shape_, low: float = -3.0, high: float = 3.0, dtype=torch.float64):
    """A float tensor of a fixed shape with entries uniform in ``[low, high]`` from a drawn seed."""

    def make(seed):
        g = torch.Generator().manual_seed(seed)
        return low + (high - low) * torch.rand(shape_, generator=g, dtype=dtype)

    return st.integers(0, 2**31 - 1).map(make)


def unit_rows_tensor(n: int, d: int):
    return tensors(n, d).map(lambda x: x / x.norm(dim=-1, keepdim=True).clamp_min(1e-6))


def fixed(**kwargs):
    """A strategy that always gives these keyword arguments."""
    return st.just(kwargs)


def bad(example: dict, name: str, **override) -> Bad:
    """``example`` with ``override`` applied, expected to fail naming ``name``."""
    return Bad({**example, **override}, name)


EXEMPT_RECORD = "a result record that the package constructs and returns; users read it, they do not build it"
EXEMPT_PLOT = "a plotting helper that draws given data; the chapters' tests render every figure it makes"
EXEMPT_CLI = "a command line entry point, tested with its own bad arguments in the experiment's unit tests"
EXEMPT_WIDGET = "a widget builder; every panel's bounds are tested at the ends of their ranges in tests/api/test_widgets.py"
EXEMPT_HEAVY = "a full experiment of minutes or hours; its quick mode and its argument checks are tested in its unit tests"

__all__ = ["Bad", "Spec", "call", "finite", "shape", "scalar", "generators", "tensors", "unit_rows_tensor", "fixed", "bad",
           "EXEMPT_RECORD", "EXEMPT_PLOT", "EXEMPT_CLI", "EXEMPT_WIDGET", "EXEMPT_HEAVY", "field"]
