"""Training dynamics.

projected flows on spheres and Stiefel manifolds, sticky weights, power iteration, ODE integration (scipy ``solve_ivp``)
and closed forms.

Simulators return a small result dataclass (trajectory, final state, stopping reason).
One submodule per model; import the submodule (``from clbook.dynamics import deeplinear``).
"""
from __future__ import annotations

__all__: list[str] = []
