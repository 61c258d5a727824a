"""API domains of the modules of Part II (see spec.py)."""
from .spec import *  # noqa: F403

DOMAINS: dict = {}
