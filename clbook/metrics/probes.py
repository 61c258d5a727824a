r"""Linear probe and k-nearest-neighbour accuracy on frozen features (scikit-learn).

The evaluation of Sec. 6 of the α-CL paper ("linear evaluation protocol") on a small scale: a
logistic regression on standardised features, and a cosine kNN classifier. Used in Chapter 4.
"""
from __future__ import annotations

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from .._validate import check_int, check_positive

__all__ = ["linear_probe", "knn_probe"]


def _as_numpy(name: str, x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    x = np.asarray(x)
    if name.endswith("_x") and x.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers; got an array of dtype {x.dtype}.")
    if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must contain only finite values.")
    return x


def _check(train_x, train_y, test_x, test_y):
    train_x, test_x = _as_numpy("train_x", train_x), _as_numpy("test_x", test_x)
    train_y, test_y = _as_numpy("train_y", train_y).ravel(), _as_numpy("test_y", test_y).ravel()
    if train_x.ndim != 2 or test_x.ndim != 2 or train_x.shape[1] != test_x.shape[1]:
        raise ValueError(f"train_x and test_x must be [n, d] with the same d; got {train_x.shape} and {test_x.shape}.")
    if len(train_y) != len(train_x) or len(test_y) != len(test_x):
        raise ValueError("train_y and test_y must have one label per row of train_x and test_x.")
    if len(train_x) < 1 or len(test_x) < 1:
        raise ValueError(f"train_x and test_x must hold at least one sample each; got {len(train_x)} and {len(test_x)}.")
    return train_x, train_y, test_x, test_y


def _check_classes(train_y) -> None:
    classes = np.unique(train_y)
    if len(classes) < 2:
        raise ValueError(f"train_y must hold at least 2 classes (a classifier of one class has nothing to learn); got "
                         f"{len(classes)} class{'' if len(classes) == 1 else 'es'} {classes.tolist()}.")


def linear_probe(train_x, train_y, test_x, test_y, *, C: float = 0.1, max_iter: int = 500) -> float:
    r"""Test accuracy of a multinomial logistic regression (L2 penalty :math:`1/C`) on standardised features.

    Parameters
    ----------
    train_x, test_x : array_like or torch.Tensor, shape=[n, d]
    train_y, test_y : array_like, shape=[n]
    C : float
        Inverse regularisation strength, > 0.
    max_iter : int
        lbfgs iterations, ≥ 1.

    Raises
    ------
    ValueError
        Fewer than 2 classes in ``train_y``, shapes that do not match, NaN or infinite features.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train_x, train_y, test_x, test_y = _check(train_x, train_y, test_x, test_y)
    _check_classes(train_y)
    C = check_positive("C", C)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=max_iter))
    with threadpool_limits(1):  # one BLAS thread: fast on a shared machine, and deterministic
        model.fit(train_x, train_y)
        return float(model.score(test_x, test_y))


def knn_probe(train_x, train_y, test_x, test_y, *, k: int = 5, metric: str = "cosine") -> float:
    """Test accuracy of a ``k``-nearest-neighbour classifier (majority vote) with the given metric."""
    from sklearn.neighbors import KNeighborsClassifier

    train_x, train_y, test_x, test_y = _check(train_x, train_y, test_x, test_y)
    k = check_int("k", k, minimum=1, maximum=len(train_x))
    if metric not in ("cosine", "euclidean"):
        raise ValueError(f"metric must be 'cosine' or 'euclidean'; got metric = {metric!r}.")
    model = KNeighborsClassifier(n_neighbors=k, metric=metric)
    with threadpool_limits(1):
        model.fit(train_x, train_y)
        return float(model.score(test_x, test_y))
