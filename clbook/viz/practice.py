"""Figures of Chapter 17 (the experiments of Pokle et al. 2022 in practice): one small training run, as a panel.

Compute lives in :mod:`clbook.experiments.landscape`; this module draws.
"""
from __future__ import annotations

import functools

from .. import widgets
from .._validate import check_choice, check_in_range, check_int, check_nonnegative
from ..config import defaults
from ..experiments import landscape as lx
from ..metrics import maxcos
from . import figure

__all__ = ["explore", "PANELS", "EXPLORE_MODELS"]

EXPLORE_MODELS = ("NCL-basic", "NCL-pred", "NCL-basic-code", "CL-basic", "NCL-linear", "CL-linear")


@functools.lru_cache(maxsize=32)
def _run(model, sparsity, warm_c, aligned, normalize, keep, scheme, epochs, seed, setup_key):
    """The training of :func:`explore`, cached per control value.

    Moving a control back shows the run again at once;
    ``setup_key``, the device and dtype of ``clbook.setup``, is part of the key. Read-only.
    """
    p, d, m = 30, 6, 30
    return lx.train(model, sparsities=[sparsity], seeds=[seed], p=p, d=d, m=m, n=256, batch=256, epochs=epochs, lr=0.5,
                    keep=keep, scheme=scheme, warm=p ** (-warm_c / 2) if warm_c > 0 else None, aligned=aligned,
                    normalize=None if normalize == "none" else normalize, record=max(epochs // 15, 1))


def explore(model: str = "NCL-basic", sparsity: float = 0.2, warm_c: float = 0.0, aligned: bool = False, normalize: str = "none",
            keep: float = 0.5, scheme: str = "independent", epochs: int = 30, seed: int = 1):
    r"""One small run (p = 30, d = 6, m = 30, 256 samples, full batch, lr 0.5): the three max-cosine summaries against epochs.

    One full-batch step of 0.5 an epoch moves the weights about as far as 2.5 epochs of minibatch SGD at lr 0.1 with
    batch 128 (the panel's earlier setting, two steps of 0.1 an epoch), so 30 epochs show what about 75 showed there
    at a tenth of the cost (an update takes about 0.1 s): the independent warm start degrades, the aligned one keeps,
    the predictor rescues, the dependent masks beat the independent ones.

    ``warm_c`` = 0 starts at random, otherwise from the warm start with :math:`\sigma = p^{-c/2}`; ``scheme``: the
    views' masks (independent, Eq. 3, or dependent, Eq. 2). The dashed line is the chance level of a random
    :math:`W` (:func:`clbook.metrics.maxcos.chance_level`). Returns a Figure.
    """
    check_choice("model", model, EXPLORE_MODELS)
    sparsity = check_in_range("sparsity", sparsity, 0.05, 1.0)
    warm_c = check_nonnegative("warm_c", warm_c)
    check_choice("normalize", normalize, ("none", "row", "column"))
    check_choice("scheme", scheme, ("independent", "dependent"))
    keep = check_in_range("keep", keep, 0.05, 1.0)
    epochs, seed = check_int("epochs", epochs, 1, 2000), check_int("seed", seed, 0)
    if not isinstance(aligned, bool):
        raise TypeError(f"aligned must be True or False; got aligned = {aligned!r}.")
    p, d, m = 30, 6, 30
    res = _run(model, sparsity, warm_c, aligned, normalize, keep, scheme, epochs, seed, str(defaults()))
    fig, ax = figure(width=5.6, height=3.2, margins={"top": 0.35})
    for key, values in (("maximum", res.maximum), ("median", res.median), ("minimum", res.minimum)):
        ax.plot(res.epochs, [v[0] for v in values], marker="o", ms=3, label=key)
    ax.axhline(maxcos.chance_level(p, d, m).minimum, color="0.5", ls="--", lw=0.8, label="chance (min)")
    start = f"warm c = {warm_c:g}" + (", aligned" if aligned else "") if warm_c > 0 else "random init"
    ax.set(xlabel="epoch", ylabel="max-cosine", ylim=(0, 1.02))
    ax.set_title(f"{model}, Pr(sparse) = {sparsity:g}, {scheme} masks, {start}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def _explore_controls() -> dict:
    return {
        "model": widgets.dropdown("model", list(EXPLORE_MODELS), "NCL-basic"),
        "sparsity": widgets.slider("Pr(sparse)", 0.2, 0.1, 0.5, 0.05),
        "warm_c": widgets.slider("warm start c (0 = random)", 2.0, 0.0, 3.0, 0.25),
        "aligned": widgets.toggle("aligned", False),
        "normalize": widgets.dropdown("normalise W", ["none", "row", "column"], "none"),
        "keep": widgets.slider("keep α", 0.5, 0.1, 0.9, 0.1),
        "scheme": widgets.dropdown("masks", ["independent", "dependent"], "independent"),
        "epochs": widgets.int_slider("epochs", 30, 10, 60, 10),
    }


PANELS = [widgets.PanelSpec("Chapter 17", explore, _explore_controls)]
