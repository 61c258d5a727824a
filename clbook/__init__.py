"""clbook: the package behind the executable book on the theory of contrastive learning.

Modules by concept (see the book's API page):

- :mod:`clbook.config`: seeds, device and dtype (``setup``);
- :mod:`clbook.losses`: the α-CL loss family and its members;
- :mod:`clbook.alpha`: pairwise importance and the min player;
- :mod:`clbook.covariance`: contrastive covariance and energy;
- :mod:`clbook.nets`: small encoders;
- :mod:`clbook.data`, :mod:`clbook.dynamics`, :mod:`clbook.metrics`: data generators, training dynamics, measurements;
- :mod:`clbook.experiments`: heavy experiments with committed results;
- :mod:`clbook.verify`: checks and the records behind the Verification page;
- :mod:`clbook.viz`, :mod:`clbook.widgets`: one figure style and parameter panels.
"""
from . import alpha, config, covariance, data, dynamics, losses, metrics, nets, verify, viz, widgets
from .config import current, generator, rand, randint, randn, setup, to_device
from .verify import check

__version__ = "0.2.0"

__all__ = [
    "alpha", "config", "covariance", "data", "dynamics", "losses", "metrics", "nets", "verify", "viz", "widgets",
    "setup", "current", "generator", "randn", "rand", "randint", "to_device", "check", "__version__",
]
