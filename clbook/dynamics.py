"""Training dynamics: projected flows on spheres and Stiefel manifolds, sticky weights,
power iteration, ODE integration (scipy ``solve_ivp``) and closed forms.

Simulators return a small result dataclass (trajectory, final state, stopping reason).
Sections below are grouped by the part of the book that introduced them.
"""
from __future__ import annotations

__all__: list[str] = []

# Part I (α-CL): deep linear networks, ReLU2Layer with sticky weights.

# Part II (nonlinearity): one-layer projected dynamics, power iteration, two-layer dynamics.

# Part III (dynamics): SSL gradient flows, the width-independent ODE.

# Part IV (landscape): dual networks, alternating optimisation.
