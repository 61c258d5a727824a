"""Training dynamics of the book's models, one submodule per model.

The submodules hold projected flows on spheres and Stiefel manifolds, sticky weights, power iteration, ODE
integration (scipy ``solve_ivp``) and closed forms. Every simulator returns a small result dataclass (trajectory,
final state) that is a :class:`Run`: its ``stopping_reason`` says, in one field with one name, why the run stopped.
Import the submodule (``from clbook.dynamics import deeplinear``).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Run"]


@runtime_checkable
class Run(Protocol):
    """What every simulator's result has: why the run stopped.

    ``stopping_reason`` is a short string such as ``"steps"`` / ``"max_steps"`` (the budget was spent),
    ``"converged"``, ``"diverged"`` or ``"t_end"``, or a sentence naming the tolerance that was met. The result
    classes of :mod:`~clbook.dynamics.deeplinear`, :mod:`~clbook.dynamics.onelayer`, :mod:`~clbook.dynamics.relu2layer`,
    :mod:`~clbook.dynamics.ssl` and :mod:`~clbook.dynamics.stiefel` declare it as their last field
    (``tests/unit/test_results_contract.py``).
    """

    stopping_reason: str
