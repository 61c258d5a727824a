"""The command line ``python -m clbook.experiments.landscape`` (see ``--help``): named experiments, bench, faithfulness."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from ... import results
from .. import runner
from .authors import FAITHFULNESS_PAIRS, faithfulness
from .benchmark import bench
from .experiments import ABLATIONS, DATA, EXPERIMENTS, PILOT, jobs, run
from .models import MODELS

__all__ = ["main"]

PROG = "python -m clbook.experiments.landscape"
_ALONE = ("bench", "faithfulness")
_DEFAULT_PAIRS = ("contrastive", "non-contrastive")
# options that apply only to some experiments: {dest: (flag, the experiments it applies to)}
_ONLY = {"factors": ("--factors", ("ablation", "pilot")), "checkout": ("--checkout", ("faithfulness",)),
         "authors_pythonpath": ("--authors-pythonpath", ("faithfulness",)), "reuse_authors": ("--reuse-authors", ("faithfulness",)),
         "pairs": ("--pairs", ("faithfulness",))}
_NOT_ALONE = {"models": "--models", "seeds": "--seeds", "sparsities": "--sparsities"}  # not for bench or faithfulness
_FIXED_MODELS = ("table4", "figures")  # their models are fixed: --models would be ignored


def _parser() -> runner.ArgumentParser:
    parser = runner.ArgumentParser(
        prog=PROG, description="The experiments of Pokle, Tian, Li and Risteski (2022): Tables 1, 2 and 4, Figs 4-7, ablations.",
        epilog=f"experiments: {', '.join(EXPERIMENTS)}; or bench, or faithfulness (each alone)\n"
               f"models: {', '.join(MODELS)}\n"
               f"factors: ablation {', '.join(ABLATIONS)}; pilot {', '.join(PILOT)}\n"
               f"example:\n  {PROG} table4 --quick --workers 1 --out results/")
    parser.add_argument("experiment", nargs="+", choices=[*EXPERIMENTS, *_ALONE], metavar="EXPERIMENT",
                        help=f"one or more of {', '.join(EXPERIMENTS)} (run one after the other); or bench; or faithfulness")
    parser.add_argument("--quick", action="store_true", help="a small version (20 epochs, seeds 1-2), written under a quick- name")
    parser.add_argument("--epochs", type=runner.positive_int, default=None,
                        help="epochs (default 8000, the paper's; 1000 for pilot; 20 with --quick)")
    parser.add_argument("--models", type=runner.choice_list(MODELS), default=None, help="comma-separated model names")
    parser.add_argument("--factors", type=runner.choice_list({**ABLATIONS, **PILOT}), default=None,
                        help="ablation or pilot: comma-separated factors to run (default all)")
    parser.add_argument("--seeds", type=runner.int_list, default=None, help="comma-separated seeds (default 1-5)")
    parser.add_argument("--sparsities", type=runner.float_list, default=None, help="comma-separated Pr(sparse) (default 0.1,0.2,0.3)")
    parser.add_argument("--checkout", type=Path, default=None, help="faithfulness: a checkout of the authors' repository")
    parser.add_argument("--authors-pythonpath", default=None, help="faithfulness: a folder with yacs (pip install --target DIR yacs)")
    parser.add_argument("--reuse-authors", type=Path, default=None,
                        help="faithfulness: an earlier faithfulness.json whose runs of the authors' code are reused (only ours rerun)")
    parser.add_argument("--pairs", type=runner.choice_list(FAITHFULNESS_PAIRS), default=None,
                        help="faithfulness: which pairs to run (default contrastive,non-contrastive; contrastive-independent "
                             "is the authors' --use_masking path), written to faithfulness-<pairs>.json unless the default")
    runner.add_arguments(parser, discard_complete=True)
    return parser


def _check_args(parser: runner.ArgumentParser, args) -> None:
    """Refuse, before anything runs, the combinations of options that cannot apply."""
    chosen = set(args.experiment)
    if len(chosen) < len(args.experiment):
        parser.error("each experiment may be listed once")
    if chosen & set(_ALONE) and len(args.experiment) > 1:
        parser.error("'bench' and 'faithfulness' stand alone")
    for dest, (flag, where) in _ONLY.items():
        if getattr(args, dest) is not None and not chosen & set(where):
            parser.error(f"{flag} applies to {' and '.join(where)} only")
    if args.models is not None and chosen <= set(_FIXED_MODELS):
        parser.error(f"--models does not apply to {' and '.join(sorted(chosen))} (their models are fixed)")
    for dest, flag in _NOT_ALONE.items():
        if getattr(args, dest) is not None and chosen & set(_ALONE):
            parser.error(f"{flag} does not apply to {args.experiment[0]}")
    if args.sparsities is not None and not all(0 < s <= 1 for s in args.sparsities):
        parser.error(f"--sparsities must lie in (0, 1]; got {args.sparsities}")
    if args.experiment == ["faithfulness"] and args.checkout is None:
        parser.error("faithfulness needs --checkout PATH (a checkout of the authors' repository)")


def _bench(args, out: Path) -> None:
    data = bench(epochs=args.epochs or (5 if args.quick else 40), repeats=2 if args.quick else 9)
    path = results.write_json(out / f"{'quick-' if args.quick else ''}bench.json", data)
    s = data["summary"]
    print(f"matmul {s['matmul_gflops_median']} GFLOP/s, contrastive step {s['step_gflops_median']} GFLOP/s, ratio "
          f"{s['ratio_median']} (range {s['ratio_range'][0]}-{s['ratio_range'][1]}, target >= {s['target']})")
    for r in data["rows"]:
        print(f"  {r['model']:15s} {r['ms_per_epoch_per_run']:8.2f} ms per epoch per run")
    print(f"wrote {path}")


def _faithfulness(args, out: Path, command: str) -> None:
    theirs = results.read_json(args.reuse_authors) if args.reuse_authors is not None else None
    kinds = tuple(args.pairs) if args.pairs else _DEFAULT_PAIRS
    data = faithfulness(args.checkout, epochs=args.epochs or 200, pythonpath=args.authors_pythonpath, theirs=theirs, kinds=kinds,
                        command=command)
    name = "faithfulness" if kinds == _DEFAULT_PAIRS else "faithfulness-" + "+".join(kinds)
    path = results.write_json(out / f"{name}.json", data)
    for kind, v in data["models"].items():
        print(f"{kind}: {v['within']} of {v['cells']} (epoch, metric) cells within tolerance")
    print(f"wrote {path}")


def _experiments(args, out: Path, command: str) -> None:
    for experiment in args.experiment:  # every experiment's arguments are checked before the first job runs
        jobs(experiment, epochs=args.epochs, seeds=args.seeds, sparsities=args.sparsities, models=args.models, quick=args.quick,
             factors=args.factors if experiment in ("ablation", "pilot") else None)
    written = run(args.experiment, epochs=args.epochs, seeds=args.seeds, sparsities=args.sparsities, models=args.models,
                  factors=args.factors, quick=args.quick, out=out, workers=args.workers, backend=args.backend, scheduler=args.scheduler,
                  fresh=args.fresh, command=command, discard_complete=args.discard_complete, worker_timeout=args.worker_timeout)
    print("wrote", ", ".join(f"{out / name}.json" for name in written))


def main(argv=None) -> int:
    """The command line (see ``--help``); returns the exit status. Errors: one line on stderr, exit status 2."""
    parser = _parser()
    args = parser.parse_args(argv)
    _check_args(parser, args)
    command = f"{PROG} {' '.join(argv if argv is not None else sys.argv[1:])}"
    torch.set_num_threads(1)
    try:
        out = runner.check_out(args.out if args.out is not None else DATA)
        if args.experiment == ["bench"]:
            _bench(args, out)
        elif args.experiment == ["faithfulness"]:
            _faithfulness(args, out, command)
        else:
            _experiments(args, out, command)
    except (ValueError, TypeError, OSError) as exc:
        parser.fail(exc)
    return 0
