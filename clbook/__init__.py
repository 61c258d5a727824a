"""clbook: the package behind the executable book on the theory of contrastive learning.

Modules by concept, each in the place a reader would look first (the book's API page lists every name):

Foundations
    :mod:`clbook.config` (``setup``: seeds, device, dtype; draws on the CPU, then moved), :mod:`clbook.fmt` (how
    numbers are printed), :mod:`clbook.verify` (checks and their kinds, comparisons with a paper's tables),
    :mod:`clbook.linalg` (Haar draws, Stiefel retractions, normalisation), :mod:`clbook.activations` (the one registry
    of activations), :mod:`clbook.results` (stored experiment
    results, shipped with the package, and their provenance).
Losses and what they weigh
    :mod:`clbook.losses` (``losses.acl``: the α-CL family; ``losses.ntxent``: NT-Xent; ``losses.noncontrastive``),
    :mod:`clbook.alpha` (pairwise importance and the min player), :mod:`clbook.covariance` (the contrastive
    covariance and energy), :mod:`clbook.kernels` (its large-batch limits), :mod:`clbook.nets` (small encoders).
Models
    :mod:`clbook.data` (one module per data model: ``digits``, ``hierarchical``, ``latent``, ``modes``,
    ``sparse_coding``, ``views``), :mod:`clbook.dynamics` (one module per model: ``critical``, ``deeplinear``,
    ``dual``, ``landscape``, ``onelayer``, ``relu2layer``, ``ssl``, ``stiefel``, ``twolayer``, ``wide``),
    :mod:`clbook.metrics` (``maxcos``, ``probes``).
Heavy runs
    :mod:`clbook.experiments` (``hierarchical``, ``landscape``, ``new_losses``, ``wide``, on one ``runner``).
Figures and panels
    :mod:`clbook.viz` (one style; a submodule per concept with the chapters' figures and panels),
    :mod:`clbook.widgets`.

Submodules of ``data``, ``dynamics``, ``metrics``, ``experiments``, ``losses`` and ``viz`` are imported explicitly
(``from clbook.dynamics import onelayer``). ``import clbook`` loads only :mod:`clbook.config`, :mod:`clbook.fmt`
and :mod:`clbook.verify` (with torch and numpy); every other module is imported on first use (``clbook.viz``,
``from clbook import losses``), and pyplot, ipywidgets, IPython and scipy only when a function needs them
(``tests/unit/test_import.py`` guards the list).
"""
import importlib

from . import config, fmt, verify
from .config import current, defaults, generator, rand, randint, randn, setup, to_device
from .verify import check

__version__ = "0.2.0"

_LAZY = ("activations", "alpha", "covariance", "data", "dynamics", "experiments", "kernels", "linalg", "losses", "metrics", "nets",
         "results", "viz", "widgets")


def __getattr__(name: str):
    """Import a submodule on first access (PEP 562), so that ``import clbook`` stays light."""
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    # modules
    "config", "fmt", "verify", "activations", "linalg", "results", "losses", "alpha", "covariance", "kernels", "nets",
    "data", "dynamics", "metrics", "experiments", "viz", "widgets",
    # the functions every chapter uses
    "setup", "current", "defaults", "generator", "randn", "rand", "randint", "to_device", "check", "__version__",
]
