"""Losses, one concept per submodule.

- :mod:`clbook.losses.acl`: the α-CL family :math:`\\mathcal L_{\\phi,\\psi}` of Tian (2022) and its named
  members (InfoNCE, quadratic, triplet, lifted, ...), Chapters 1-4;

The members of :mod:`clbook.losses.acl` are also available here (``clbook.losses.infonce``).
"""
from . import acl
from .acl import *  # noqa: F403
from .acl import __all__ as _acl_all

__all__ = ["acl", *_acl_all]
