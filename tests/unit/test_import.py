"""``import clbook`` stays light (issue 23; budget in design/BOOK.md): the modules it loads are a fixed list, and
neither the package, nor the experiments, nor their command lines load pyplot, ipywidgets, IPython or scipy
before a function needs them. The time it takes is measured by ``python -X importtime -c "import clbook"`` (see
CONTRIBUTING.md), not by a timed test."""
import json
import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "ipywidgets", "IPython", "scipy", "sklearn")
EAGER = ["clbook", "clbook._validate", "clbook.config", "clbook.fmt", "clbook.verify"]


def _loaded(body: str) -> list[str]:
    """The clbook and heavy modules a fresh interpreter holds after running ``body``."""
    roots = {"clbook", *HEAVY}
    code = f"import json, sys\n{body}\nprint(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in {roots!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_clbook_loads_only_the_foundations():
    loaded = _loaded("import clbook")
    assert [m for m in loaded if m.startswith("clbook")] == EAGER
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_submodules_load_on_first_use():
    loaded = _loaded("import clbook; clbook.losses; from clbook import alpha")
    assert "clbook.losses" in loaded and "clbook.alpha" in loaded and "clbook.viz" not in loaded


@pytest.mark.parametrize("module", ["landscape", "hierarchical", "wide", "new_losses"])
def test_experiments_and_their_command_lines_stay_light(module):
    body = ("import runpy; sys.argv = ['x', '--help']\ntry:\n    runpy.run_module('clbook.experiments.%s', run_name='__main__')\n"
            "except SystemExit:\n    pass" % module)
    heavy = [m for m in _loaded(body) if m.split(".")[0] in HEAVY]
    assert heavy == [], f"python -m clbook.experiments.{module} --help loads heavy modules: {heavy[:5]}"
