"""The examples in the package's docstrings (shown on the API page) run and print what they show."""
import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "clbook"
MODULES = sorted(
    ".".join(("clbook", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
    for p in PACKAGE.rglob("*.py") if p.name != "__main__.py" and ">>>" in p.read_text())


def test_there_are_examples():
    assert MODULES, "no docstring example found: the glob or the package moved"


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
