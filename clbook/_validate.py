"""Argument checks shared by the public functions of :mod:`clbook`.

Every public function validates its inputs with these helpers, so that bad input
raises a :class:`ValueError` or :class:`TypeError` that names the parameter, the value
received and what was expected, instead of a traceback from deep inside torch.
"""
from __future__ import annotations

import math
import numbers

import torch

__all__ = [
    "check_positive",
    "check_nonnegative",
    "check_int",
    "check_in_range",
    "check_tensor",
    "check_pair",
    "check_choice",
    "check_real",
    "as_tensor",
    "check_same",
]


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_real(name: str, value) -> float:
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number; got {value!r} of type {type(value).__name__}.")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite; got {name} = {value}.")
    return value


def check_positive(name: str, value) -> float:
    """Return ``float(value)`` if it is a finite number > 0, else raise."""
    value = check_real(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0; got {name} = {value}.")
    return value


def check_nonnegative(name: str, value) -> float:
    """Return ``float(value)`` if it is a finite number >= 0, else raise."""
    value = check_real(name, value)
    if value < 0:
        raise ValueError(f"{name} must be >= 0; got {name} = {value}.")
    return value


def check_in_range(name: str, value, low: float, high: float) -> float:
    """Return ``float(value)`` if ``low <= value <= high``, else raise."""
    value = check_real(name, value)
    if not low <= value <= high:
        raise ValueError(f"{name} must lie in [{low}, {high}]; got {name} = {value}.")
    return value


def check_int(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``int(value)`` if it is an integer within ``[minimum, maximum]``, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {value!r} of type {type(value).__name__}.")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {name} = {value}.")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}; got {name} = {value}.")
    return value


def check_choice(name: str, value, choices) -> object:
    """Return ``value`` if it is one of ``choices``, else raise."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}; got {name} = {value!r}.")
    return value


def check_tensor(name: str, value, ndim: int | None = None, *, finite: bool = True) -> torch.Tensor:
    """Check that ``value`` is a floating-point tensor with ``ndim`` dimensions and finite entries."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(value).__name__}.")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions; got shape {tuple(value.shape)}.")
    if not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor; got dtype {value.dtype}.")
    if finite and not bool(torch.isfinite(value.detach()).all()):
        raise ValueError(f"{name} must contain only finite values; it has NaN or infinite entries.")
    return value


def check_pair(z1, z2, *, names=("z1", "z2"), min_samples: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """Check two paired batches ``[n, d]`` of views: same shape, same dtype, ``n >= min_samples``."""
    z1 = check_tensor(names[0], z1, ndim=2)
    z2 = check_tensor(names[1], z2, ndim=2)
    check_same(names, z1, z2, shape=True)
    if z1.shape[0] < min_samples:
        raise ValueError(f"{names[0]} and {names[1]} must hold a batch of n >= {min_samples} samples; got n = {z1.shape[0]}.")
    return z1, z2


def as_tensor(name: str, value, *, ndim: int | None = None, min_ndim: int | None = None, dtype: torch.dtype | None = None,
              device=None, finite: bool = True) -> torch.Tensor:
    """The one argument coercion of the package: ``value`` as a floating-point tensor, checked.

    Accepts a tensor, a numpy array, a list or a number. Integer and boolean input is converted to floating point
    on purpose (``dtype``, default: the input's floating dtype, else the default of :func:`clbook.setup`); complex or
    non-numeric input is rejected with a :class:`TypeError`. ``device``/``dtype`` move the result (default: a tensor
    stays where it is; other input goes to the device of :func:`clbook.setup`). Checks ``ndim`` (exactly) or
    ``min_ndim`` and, with ``finite``, that every entry is finite.
    """
    if isinstance(value, torch.Tensor):
        tensor = value
    else:
        try:
            import numpy as np

            arr = np.asarray(value)
        except Exception as exc:  # noqa: BLE001 - any failure to read the value is a type error for the caller
            raise TypeError(f"{name} must be a tensor, an array or a list of numbers; got {type(value).__name__}.") from exc
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers; got an array of dtype {arr.dtype} from {type(value).__name__}.")
        tensor = torch.as_tensor(arr)
        if device is None:
            from .config import defaults

            device = defaults()[0]
    if tensor.is_complex():
        raise TypeError(f"{name} must be real; got a complex tensor of dtype {tensor.dtype}.")
    if dtype is None:
        if tensor.is_floating_point():
            dtype = tensor.dtype
        else:
            from .config import defaults

            dtype = defaults()[1]
    elif dtype not in (torch.float64, torch.float32):
        raise ValueError(f"dtype must be torch.float64 or torch.float32; got dtype = {dtype!r}.")
    tensor = tensor.to(device=device if device is not None else tensor.device, dtype=dtype)
    if ndim is not None and tensor.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions; got shape {tuple(tensor.shape)}.")
    if min_ndim is not None and tensor.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions; got shape {tuple(tensor.shape)}.")
    if finite and tensor.numel() and not bool(torch.isfinite(tensor.detach()).all()):
        raise ValueError(f"{name} must contain only finite values; it has NaN or infinite entries.")
    return tensor


def check_same(names: tuple[str, ...], *tensors: torch.Tensor, shape: bool = False) -> None:
    """The one paired-tensor check: tensors share dtype and device (and, with ``shape``, their shape).

    Raises a :class:`ValueError` that names the first tensor and the one that differs.
    """
    first = tensors[0]
    for name, t in zip(names[1:], tensors[1:], strict=True):
        if shape and t.shape != first.shape:
            raise ValueError(f"{names[0]} and {name} must have the same shape; got {tuple(first.shape)} and "
                             f"{tuple(t.shape)}.")
        if t.dtype != first.dtype or t.device != first.device:
            raise ValueError(f"{names[0]} and {name} must share dtype and device; got {first.dtype}/{first.device} and "
                             f"{t.dtype}/{t.device}. Convert one with .to(other).")
