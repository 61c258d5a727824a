"""Training dynamics: projected flows on spheres and Stiefel manifolds, sticky weights,
power iteration, ODE integration (scipy ``solve_ivp``) and closed forms.

Simulators return a small result dataclass (trajectory, final state, stopping reason).
One submodule per model (``clbook.dynamics.<name>``); this package re-exports the public names.
"""
from __future__ import annotations

__all__: list[str] = []
