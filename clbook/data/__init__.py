"""Data generators used across the book.

Each generator is a pure function with an explicit ``generator`` (a CPU ``torch.Generator``
from :func:`clbook.generator`); samples are drawn on the CPU and moved to the current device.
One submodule per generator family; import the submodule (``from clbook.data import latent``).
A function is shared by every chapter that needs it.
"""
from __future__ import annotations

__all__: list[str] = []
