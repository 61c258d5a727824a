"""Measurements of learned representations: max-cosine with its chance level, numerical and
effective rank, alignment, linear probe and kNN (scikit-learn).

One submodule per family of measurements (``clbook.metrics.<name>``); this package
re-exports the public names.
"""
from __future__ import annotations

__all__: list[str] = []
