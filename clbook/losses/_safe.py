r"""Numerically safe building blocks of the losses: unit rows at any finite scale, and overflow that is reported.

:func:`unit_rows_any_scale` is :math:`h/\|h\|` row by row. When every row norm is a normal number of the dtype well above
the underflow of its square (:math:`\|h\|\ge\sqrt{\text{tiny}/\varepsilon}`, about :math:`10^{-146}` in float64
and :math:`10^{-16}` in float32) and finite, it is exactly ``h / h.norm()``. Otherwise (a squared norm that
overflows or underflows) each row is first multiplied by the power of two :math:`2^{-e}` that brings its largest
entry into :math:`[1/2, 1)` (an exact scaling), and the scaled row is normalised: the result is the unit row at
any finite scale, :math:`10^{-300}` to :math:`10^{300}`. An all-zero row gives the zero row (documented: its
cosine with every row is 0).
"""
from __future__ import annotations

import math

import torch

__all__ = ["unit_rows_any_scale", "safe_low", "check_finite_result"]


def safe_low(dtype: torch.dtype) -> float:
    """The smallest row norm whose square (and the squares of entries near it) is computed without underflow."""
    info = torch.finfo(dtype)
    return math.sqrt(info.tiny / info.eps)


def _pow2_scale(h: torch.Tensor) -> torch.Tensor:
    """``h`` with each row multiplied by the power of two that puts its largest |entry| in [1/2, 1) (exact)."""
    m = h.detach().abs().amax(dim=-1, keepdim=True)
    e = torch.frexp(m).exponent  # m = f 2^e, f in [1/2, 1); 0 for a zero row
    half = torch.div(-e, 2, rounding_mode="floor")
    one = torch.ones_like(m)
    # two factors, each within the normal range, so that 2^-e never overflows or underflows on its own
    return h * torch.ldexp(one, half) * torch.ldexp(one, -e - half)


def unit_rows_any_scale(h: torch.Tensor) -> torch.Tensor:
    r""":math:`h/\|h\|` along the last axis, exact at any finite scale; a zero row stays zero (see the module docstring)."""
    n = h.norm(dim=-1, keepdim=True)
    if h.numel() == 0 or bool(((n >= safe_low(h.dtype)) & (n < math.inf)).all()):
        return h / n
    s = _pow2_scale(h)
    ns = s.norm(dim=-1, keepdim=True)
    return s / torch.where(ns > 0, ns, torch.ones_like(ns))


def check_finite_result(value: torch.Tensor, what: str, names: str, hint: str) -> torch.Tensor:
    """Raise a ValueError naming ``names`` when ``value`` (computed from finite input) is not finite: an overflow."""
    if not bool(torch.isfinite(value.detach()).all()):
        raise ValueError(f"{names}: {what} overflows {str(value.dtype).replace('torch.', '')} (the input is finite, the "
                         f"result is not representable); {hint}.")
    return value
