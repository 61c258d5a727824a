"""API domains of the modules of Part I (see spec.py): Tian (2022), α-CL, Chapters 1-4."""
import torch
from hypothesis import strategies as st

from .spec import Bad, Spec, scalar, shape, tensors

_n, _p = 5, 3
_A = torch.rand(_n, _n, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
_X = torch.randn(_n, _p, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
_cov = {"alpha": _A, "a1": _X, "a2": _X + 0.1}

DOMAINS: dict = {
    # covariance
    "clbook.covariance.contrastive_covariance": Spec(
        valid=st.fixed_dictionaries({"alpha": tensors(_n, _n, low=0.0, high=1.0), "a1": tensors(_n, _p), "a2": tensors(_n, _p),
                                     "convention": st.sampled_from(["tian2022", "tian2023"])}),
        expect=shape(_p, _p),
        invalid=(Bad({**_cov, "alpha": _A[:3]}, "alpha"), Bad({**_cov, "a2": _X[:, :2]}, "a2"),
                 Bad({**_cov, "alpha": _A.float()}, "alpha"), Bad({**_cov, "a1": _X.long()}, "a1"),
                 Bad({**_cov, "a1": _X * float("nan")}, "a1"), Bad({**_cov, "b1": _X}, "b1"),
                 Bad({"alpha": _A[:1, :1], "a1": _X[:1], "a2": _X[:1]}, "n >= 2"),
                 Bad({**_cov, "convention": "tian2024"}, "convention"))),
    "clbook.covariance.energy": Spec(
        valid=st.fixed_dictionaries({"alpha": tensors(_n, _n, low=0.0, high=1.0), "z1": tensors(_n, _p), "z2": tensors(_n, _p)}),
        expect=scalar,
        invalid=(Bad({"alpha": _A, "z1": _X, "z2": _X[:4]}, "z2"), Bad({"alpha": _A * float("inf"), "z1": _X, "z2": _X}, "alpha"),
                 Bad({"alpha": _A, "z1": torch.zeros(_n, 2, 2), "z2": torch.zeros(_n, 2, 2)}, "z1"))),
}
