r"""The activations of the book's models: one definition, one spelling and one set of properties each.

A model takes its activation by name. Its module lists the names for which its theory holds (``ACTIVATIONS``, a
tuple drawn from :data:`REGISTRY` by :func:`supported`) and evaluates them here, so that ``relu`` means the same
function, the same derivative convention and the same properties in every chapter.

======================  ===========================================  ==========  =================
name                    :math:`h(t)`                                 degree      :math:`\sup|h''|`
======================  ===========================================  ==========  =================
``linear``              :math:`t`                                    1           0
``relu``                :math:`\max(t, 0)`                           1           :math:`\infty`
``leaky_relu``          :math:`t` for :math:`t>0`, else ``slope``    1           :math:`\infty`
                        :math:`\cdot t` (default 0.05)
``quadratic``           :math:`t^2`                                  2           2
``tanh``                :math:`\tanh t`                              —           :math:`4/(3\sqrt3)`
``softplus2``           :math:`2(\mathrm{softplus}(t) - \log 2)`     —           1/2
``sigmoid``             :math:`1/(1 + e^{-t})`                       —           :math:`1/(6\sqrt3)`
======================  ===========================================  ==========  =================

The degree :math:`p` is that of homogeneity, :math:`h'(t)\,t = p\,h(t)` (Tian 2023, Assumption 1); "—" marks a
non-homogeneous activation. The derivative takes the gate convention of Tian (2023): :math:`h'(t)` is that of the
negative side for :math:`t\le\mathrm{tol}`. Tian's code spells leaky ReLU ``leakyrelu``: :data:`ALIASES` maps it
to ``leaky_relu``, and the modules whose stored results use that key keep it in their ``ACTIVATIONS``.
The thresholded SReLU of Pokle et al. (2022) has a bias per unit and lives with its model
(:func:`clbook.dynamics.landscape.srelu`).

Used by :mod:`clbook.dynamics.onelayer`, :mod:`clbook.dynamics.twolayer`, :mod:`clbook.dynamics.wide`,
:mod:`clbook.dynamics.relu2layer`, :mod:`clbook.experiments.hierarchical` and :mod:`clbook.nets`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ._validate import check_choice, check_nonnegative, check_real, check_tensor

__all__ = ["Activation", "REGISTRY", "ALIASES", "LEAKY_SLOPE", "canonical", "supported", "apply", "derivative"]

LEAKY_SLOPE = 0.05  # the slope of leaky ReLU's negative side in Tian's code and in the book


@dataclass(frozen=True)
class Activation:
    """One activation's properties (its function and derivative are :func:`apply` and :func:`derivative`)."""

    name: str
    degree: int | None  # homogeneity degree p with h'(t) t = p h(t); None when h is not homogeneous
    curvature: float  # sup |h''| (math.inf where h is not twice differentiable)
    zero_at_zero: bool  # h(0) = 0


REGISTRY = {a.name: a for a in (
    Activation("linear", 1, 0.0, True),
    Activation("relu", 1, math.inf, True),
    Activation("leaky_relu", 1, math.inf, True),
    Activation("quadratic", 2, 2.0, True),
    Activation("tanh", None, 4 / (3 * math.sqrt(3)), True),
    Activation("softplus2", None, 0.5, True),
    Activation("sigmoid", None, 1 / (6 * math.sqrt(3)), False),
)}
ALIASES = {"leakyrelu": "leaky_relu"}  # Tian's code's spelling


def canonical(name: str) -> str:
    """The registry's name for ``name`` (an alias such as ``leakyrelu`` is resolved); unknown names raise."""
    name = check_choice("activation", name, tuple(REGISTRY) + tuple(ALIASES))
    return ALIASES.get(name, name)


def supported(*names: str) -> tuple[str, ...]:
    """A module's tuple of activation names, each checked against the registry (aliases allowed, kept as given)."""
    for name in names:
        canonical(name)
    return tuple(names)


def apply_unchecked(t: torch.Tensor, name: str, *, slope: float = LEAKY_SLOPE) -> torch.Tensor:
    r""":func:`apply` without the argument checks, for the models' loops."""
    name = ALIASES.get(name, name)
    if name == "linear":
        return t
    if name == "relu":
        return torch.relu(t)
    if name == "leaky_relu":
        return torch.where(t > 0, t, slope * t)
    if name == "quadratic":
        return t * t
    if name == "tanh":
        return torch.tanh(t)
    if name == "softplus2":
        return 2 * (F.softplus(t) - math.log(2.0))
    return torch.sigmoid(t)


def derivative_unchecked(t: torch.Tensor, name: str, *, slope: float = LEAKY_SLOPE, tol: float = 0.0) -> torch.Tensor:
    r""":func:`derivative` without the argument checks, for the models' loops."""
    name = ALIASES.get(name, name)
    if name == "linear":
        return torch.ones_like(t)
    if name == "relu":
        return (t > tol).to(t.dtype)
    if name == "leaky_relu":
        return torch.where(t > tol, torch.ones_like(t), torch.full_like(t, slope))
    if name == "quadratic":
        return 2 * t
    if name == "tanh":
        return 1 - torch.tanh(t) ** 2
    if name == "softplus2":
        return 2 * torch.sigmoid(t)
    s = torch.sigmoid(t)
    return s * (1 - s)


def apply(t: torch.Tensor, name: str, *, slope: float = LEAKY_SLOPE) -> torch.Tensor:
    r""":math:`h(t)` entrywise for a floating-point tensor ``t`` of any shape (NaN and infinities pass through).

    ``name`` is a registry name or an alias; ``slope`` (finite) is leaky ReLU's slope for :math:`t\le0`.
    """
    name = canonical(name)
    return apply_unchecked(check_tensor("t", t, finite=False), name, slope=check_real("slope", slope))


def derivative(t: torch.Tensor, name: str, *, slope: float = LEAKY_SLOPE, tol: float = 0.0) -> torch.Tensor:
    r""":math:`h'(t)` entrywise, with the gate convention: the negative side's slope for :math:`t\le` ``tol``.

    ``t`` is a floating-point tensor of any shape; ``slope`` is finite; ``tol >= 0``.
    """
    name = canonical(name)
    t = check_tensor("t", t, finite=False)
    return derivative_unchecked(t, name, slope=check_real("slope", slope), tol=check_nonnegative("tol", tol))
