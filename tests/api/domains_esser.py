"""API domains of the modules of Part III (see spec.py)."""
from .spec import *  # noqa: F403

DOMAINS: dict = {}
