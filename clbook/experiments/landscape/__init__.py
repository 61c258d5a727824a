r"""The experiments of Pokle, Tian, Li and Risteski (2022): Tables 1, 2 and 4, the claims of Figs 4-7, and ablations.

Every model of the paper's experiments is a one- or two-layer encoder trained on the sparse-coding data of
Chapter 14 (:mod:`clbook.data.sparse_coding`) and scored by the minimum / median / maximum max-cosine of
Eq. 11 (:mod:`clbook.metrics.maxcos`) of its (online) first-layer weights. The default settings, and where each
comes from (the paper where it is explicit and consistent; the authors' code ``ashwinipokle/contrastive_landscape``,
``main.py`` / ``main_simclr.py``, where the paper is silent or contradicts itself); every choice on which the two
disagree is an argument of :func:`train`, so the ablations can vary it:

* data (Sec. 4.2): :math:`p = 50`, :math:`d = 10`, :math:`m = 50`, ``n`` :math:`= 1000` samples (paper; the code
  uses 3000), ``latent="iid"``: :math:`z\in\{0,\pm1\}^d` i.i.d. with :math:`\Pr(z_i=\pm1) = \beta/2` conditioned on
  :math:`z\ne0` (paper; ``"exact"``: the code's exactly-k-sparse latents, ``gen_z``), ``noise`` std
  :math:`\sigma_0 = \sqrt{\log d}/d = 0.152` (code; the paper gives two other values), ``noise_draw="sample"``: one
  noise vector per sample, drawn with the data and shared by both views at every epoch (paper and code;
  ``"epoch"``: fresh at every epoch, shared by the two views; ``"view"``: fresh for each view at every epoch);
* views: ``scheme="independent"`` masks (Eq. 3) with ``keep`` probability 0.5 (paper: "masking probability 0.5";
  the code's contrastive script falls back to the ``"dependent"`` masks of Eq. 2), fresh masks at every epoch;
* encoders: weights :math:`\mathcal N(0, 1/(pd))` (paper and code), ``bias_init="zero"`` (paper; ``"uniform"``:
  PyTorch's default :math:`U(\pm1/\sqrt{\text{fan-in}})`, the code), SReLU of Eq. 14 with a trainable threshold
  (the code thresholds at :math:`-b`, and with BatchNorm its bias also shifts the pre-activation: the same family of
  functions, parameterised differently; see :data:`DEPARTURES`), BatchNorm (batch
  statistics of each view, trainable affine, eps :math:`10^{-5}`) where Table 2 says "BN" (paper; the code's
  ``simplified`` NCL model silently drops it: model ``"NCL-basic-code"``), outputs :math:`\ell_2`-normalised;
* losses: NCL :math:`2 - 2\langle\hat h^o, \mathrm{SG}(\hat h^t)\rangle`, online and target updated alternately at
  every minibatch, each epoch starting with the online network (code; the paper says "alternating"), no EMA;
  CL: NT-Xent at :math:`T = 0.05` (code) over the :math:`2B` views (:mod:`clbook.losses.ntxent`);
* optimiser: plain SGD, ``lr`` 0.025 (paper; the code's scripts pass 0.005), batch 512, 8000 epochs; the last,
  smaller batch of an epoch is kept (``drop_last=False``, PyTorch's default and the code's non-contrastive
  loader; the code's contrastive loader drops it), seeds 1-5 (code).

Runs are vectorised: every (sparsity, seed) of one model trains in one stack of weights ``[R, ...]``. A run owns
a generator seeded from ``(seed, sparsity)`` that draws its data and, at every epoch, its permutation, its masks
(and its noise if it is redrawn). With ``paired=True`` the initial weights come from a second generator of their
own, so every model trained on one ``(seed, sparsity)`` sees the same data, permutations, masks and noise (CL and
NCL compared on the same views); with ``paired=False`` (the stored results of Chapter 17 before this change) the
weights are drawn from the first generator between the data and the first epoch. Either way a run is bit for bit
the same alone or in a stack (tested). Plain SGD is elementwise, so the stacked update is each run's update.

The package, one module per job: :mod:`~clbook.experiments.landscape.models` (the architectures, their parameters
and forward pass, the fused encoder), :mod:`~clbook.experiments.landscape.training` (:func:`train`,
:func:`train_job`), :mod:`~clbook.experiments.landscape.experiments` (the named experiments, their jobs, :func:`run`,
:func:`estimate`, :func:`load`, the paper's tables), :mod:`~clbook.experiments.landscape.analysis` (reading stored
results), :mod:`~clbook.experiments.landscape.benchmark` (speed), :mod:`~clbook.experiments.landscape.authors`
(faithfulness to the authors' code) and :mod:`~clbook.experiments.landscape.cli` (the command line). Every public
name of the former single module is importable from the package. (The modules are not named ``bench`` and
``faithfulness``: the package re-exports functions of those names, which would hide the modules.)

Named experiments (:data:`EXPERIMENTS`, run through :mod:`clbook.experiments.runner`, which resumes an
interrupted run and never replaces a complete result by a partial one)::

    python -m clbook.experiments.landscape table2-independent \
        table2-dependent table1 ablation --out DIR
    # matmul vs contrastive step throughput (make bench)
    python -m clbook.experiments.landscape bench
    # ours vs the authors' code
    python -m clbook.experiments.landscape faithfulness \
        --checkout /tmp/authors

Results with provenance go to ``--out`` (default :func:`clbook.results.user_dir`); the shipped ones are in
``clbook/results/landscape/``. Used in Chapter 17. float32 for training (the metric is computed in float64).
"""

from ...losses.noncontrastive import ncl_loss, simsiam_loss
from ...losses.ntxent import nt_xent
from .analysis import ablation_effects, end_values, escape_epochs, mixed, paired_gap, replay, rows_by_model, seed_spread, trajectory_summary
from .authors import AUTHORS_SECONDS_PER_EPOCH, FAITHFULNESS_PAIRS, faithfulness
from .benchmark import bench, step_flops
from .cli import main
from .experiments import (
    ABLATION_MODELS,
    ABLATION_REST,
    ABLATION_SPARSITIES,
    ABLATIONS,
    DATA,
    EXPERIMENTS,
    MORE_SEEDS,
    MORE_SEEDS_MODELS,
    PAPER_TABLE1,
    PAPER_TABLE2,
    PAPER_TABLE4,
    PILOT,
    SCRIPTS,
    SCRIPTS_BY_LOSS,
    SCRIPTS_MODELS,
    SCRIPTS_NOT_ADOPTED,
    SCRIPTS_SOURCES,
    TABLE2_MODELS,
    estimate,
    jobs,
    load,
    run,
)
from .models import BIAS_INITS, MODELS, Model, batchnorm, exact_latents
from .training import LATENTS, METRICS, NOISE_DRAWS, TrainResult, train, train_job

__all__ = [
    "Model", "MODELS", "TrainResult", "train", "train_job", "nt_xent", "ncl_loss", "simsiam_loss", "batchnorm", "exact_latents",
    "PAPER_TABLE1", "PAPER_TABLE2", "PAPER_TABLE4", "AUTHORS_SECONDS_PER_EPOCH", "EXPERIMENTS", "TABLE2_MODELS", "ABLATIONS",
    "ABLATION_MODELS", "PILOT", "NOISE_DRAWS", "LATENTS", "BIAS_INITS", "jobs", "run", "estimate", "rows_by_model", "step_flops", "mixed",
    "end_values", "paired_gap", "ablation_effects", "replay",
    "seed_spread", "trajectory_summary", "escape_epochs", "bench", "faithfulness", "load", "main", "DATA", "METRICS", "FAITHFULNESS_PAIRS",
    "ABLATION_SPARSITIES", "ABLATION_REST", "MORE_SEEDS", "MORE_SEEDS_MODELS", "SCRIPTS", "SCRIPTS_BY_LOSS", "SCRIPTS_MODELS",
    "SCRIPTS_SOURCES", "SCRIPTS_NOT_ADOPTED",
]
