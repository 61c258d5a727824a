"""Data generators used across the book.

Each generator is a pure function with an explicit ``generator`` (a CPU ``torch.Generator``
from :func:`clbook.generator`); samples are drawn on the CPU and moved to the current device.
Sections below are grouped by the part of the book that introduced them; a function is
shared by every chapter that needs it.
"""
from __future__ import annotations

__all__: list[str] = []

# Part I (α-CL): Assumption-1 orthogonal mixtures, shifted digits.

# Part II (nonlinearity): latent categorical / summation models, hierarchical token generator.

# Part III (dynamics): Gaussian-noise views, half moons.

# Part IV (landscape): sparse coding with masking.
