"""Measurements of learned representations.

max-cosine with its chance level, numerical and effective rank, alignment, linear probe and kNN (scikit-learn).

One submodule per family of measurements; import the submodule (``from clbook.metrics import maxcos``).
"""
from __future__ import annotations

__all__: list[str] = []
