r"""Losses, one concept per submodule.

- :mod:`clbook.losses.acl`: the α-CL family :math:`\mathcal L_{\phi,\psi}` of Tian (2022) and its named
  members (InfoNCE, quadratic, triplet, lifted, ...), Chapters 1-4;
- :mod:`clbook.losses.ntxent`: NT-Xent (SimCLR) with a fused hand-written backward pass, the contrastive loss of
  the experiments of Pokle et al. (2022), Chapter 17;
- :mod:`clbook.losses.noncontrastive`: the BYOL-style and SimSiam-style non-contrastive losses of those
  experiments, Chapter 17.

The members of :mod:`clbook.losses.acl` are also available here (``clbook.losses.infonce``), and so are
``nt_xent``, ``ncl_loss`` and ``simsiam_loss``.
"""
from . import acl, noncontrastive, ntxent
from .acl import *  # noqa: F403
from .acl import __all__ as _acl_all
from .noncontrastive import ncl_loss, simsiam_loss
from .ntxent import nt_xent

__all__ = ["acl", "ntxent", "noncontrastive", "nt_xent", "ncl_loss", "simsiam_loss", *_acl_all]
