"""Write book/api.md from the package itself: every module of clbook, its one-line summary and its ``__all__``.

    python tools/apidoc.py          # write book/api.md
    python tools/apidoc.py --check  # exit 1 if book/api.md differs from what the package says (a structure test runs this)

The page cannot drift from the code: a module added, moved or renamed, or a name added to an ``__all__``, changes the
generated page, and the check fails until it is regenerated.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "api.md"

GROUPS = [
    ("Foundations", "Set-up and devices, the number policy, checks, small linear algebra, stored results.",
     ["clbook.config", "clbook.fmt", "clbook.verify", "clbook.linalg", "clbook.results"]),
    ("Losses, pairwise importance and covariances", "The α-CL family and the other losses, the min player, the contrastive "
     "covariance and its kernels, small networks.",
     ["clbook.losses", "clbook.alpha", "clbook.covariance", "clbook.kernels", "clbook.nets"]),
    ("Data", "Generators of the papers' data models and views; samples are drawn on the CPU from explicit generators.",
     ["clbook.data"]),
    ("Dynamics", "Models and their training dynamics: flows, closed forms, critical points, landscapes.", ["clbook.dynamics"]),
    ("Metrics", "Measurements of learned representations.", ["clbook.metrics"]),
    ("Experiments", "Heavy experiments, each with a command line (`python -m clbook.experiments.<name> --help`) on one runner "
     "(`clbook.experiments.runner`): results with provenance go to `--out` (default: your user data folder), the results "
     "the chapters show ship with the package in `clbook/results/<name>/`, and a sweep runs on local processes or a Dask "
     "cluster (`--backend dask --scheduler tcp://host:8786`).", ["clbook.experiments"]),
    ("Figures and panels", "One figure style, the figures of the chapters (functions of their data) and the parameter panels.",
     ["clbook.viz", "clbook.widgets"]),
]


def modules(prefix: str) -> list:
    """The module ``prefix`` if it is a plain module, else its submodules (recursively), sorted; private ones left out."""
    import clbook  # noqa: F401

    top = importlib.import_module(prefix)
    if not hasattr(top, "__path__"):
        return [top]
    found = [top] if getattr(top, "__all__", None) else []
    for info in pkgutil.walk_packages(top.__path__, prefix + "."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        if getattr(module, "__all__", None):
            found.append(module)
    return sorted(found, key=lambda m: m.__name__)


def summary(module) -> str:
    """The first paragraph of the module's docstring, its reST roles turned into MyST."""
    import re

    doc = (module.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    doc = re.sub(r":math:`([^`]*)`", r"$\1$", doc)
    doc = re.sub(r":(?:mod|func|class|data|meth|attr):`~?([^`]*)`", r"`\1`", doc)
    return doc.replace("``", "`")


def page() -> str:
    lines = ["# The `clbook` API", "",
             "The package behind the chapters, module by module, generated from the package itself (`python tools/apidoc.py`). "
             "Every public function checks its arguments and raises a `ValueError` or `TypeError` that names the parameter, "
             "the value and what was expected; `tests/api` tries every one of them with valid and invalid input.", ""]
    seen = set()
    for title, intro, prefixes in GROUPS:
        lines += [f"## {title}", "", intro, ""]
        for prefix in prefixes:
            for module in modules(prefix):
                if module.__name__ in seen:
                    continue
                seen.add(module.__name__)
                names = [n for n in module.__all__ if not isinstance(getattr(module, n, None), type(sys))]
                if hasattr(module, "__path__"):  # a package: its submodules document what it re-exports
                    subs = [m for m in modules(module.__name__) if m is not module]
                    names = [n for n in names if not any(n in getattr(m, "__all__", ()) for m in subs)]
                if not names:
                    lines += [f"### `{module.__name__}`", "", summary(module), ""]
                    continue
                lines += [f"### `{module.__name__}`", "", summary(module), "", "```{eval-rst}",
                          f".. automodule:: {module.__name__}", f"   :members: {', '.join(names)}", "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = page()
    if argv == ["--check"]:
        if PAGE.read_text(encoding="utf-8") != text:
            print("book/api.md is out of date with the package: run `python tools/apidoc.py`.")
            return 1
        return 0
    if argv:
        print(__doc__)
        return 2
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
