"""API domains of the modules of Part I (see spec.py)."""
from .spec import *  # noqa: F403

DOMAINS: dict = {}
