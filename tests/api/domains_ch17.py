"""API domains of Chapter 17's modules: clbook.experiments.landscape, clbook.losses.ntxent, clbook.losses.noncontrastive."""
from .spec import *  # noqa: F403

DOMAINS: dict = {}
