"""The book against its design (shared design/BOOK.md): every chapter in _toc.yml is checked."""
import io
import json
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402

CHAPTERS = nbtools.chapters()
IDS = [p.stem for p in CHAPTERS]
LABEL = r"(?:acl|nonlin|esser|pokle)-(?:def|asm|lem|thm|cor|prop|rem|conj|ex|eq|fig|tab)-[0-9A-Za-z.]+"
BUDGET_SECONDS = 30.0


def load(path):
    return nbformat.read(path, as_version=4)


def markdown(nb):
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_toc_lists_chapters():
    assert CHAPTERS, "_toc.yml lists no chapter notebook"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_every_code_cell_has_stored_outputs_and_no_error(path):
    nb = load(path)
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        assert cell.execution_count is not None, f"{path.name} cell {k} was not executed (run `make outputs`; CONTRIBUTING.md, 'Numbers, outputs and machines')"  # noqa: E501
        assert not [o for o in cell.outputs if o.output_type == "error"], f"{path.name} cell {k} stores an error"
        assert "NBVAL_" not in cell.source, f"{path.name} cell {k} uses an NBVAL_ comment; use a cell tag (CONTRIBUTING.md, 'Chapter anatomy')"  # noqa: E501
        statements, lines = cell_size(cell.source)
        assert statements <= 25 and lines <= 40, (
            f"{path.name} cell {k} has {statements} statements and comment lines (at most 25) on {lines} lines (at most "
            "40); move code into clbook: CONTRIBUTING.md, 'Chapter anatomy'")


def cell_size(source: str) -> tuple[int, int]:
    """A cell's logical lines (statements and comment lines, as Python's tokenizer counts them) and non-blank lines.

    A statement wrapped over several lines to fit the page (80 characters) counts once: the rule is on the amount of
    code in a cell, not on its width."""
    code = "\n".join("pass" if ln.lstrip().startswith(("%", "!")) else ln for ln in source.splitlines())
    tokens = tokenize.generate_tokens(io.StringIO(code + "\n").readline)
    statements = sum(1 for t in tokens if t.type == tokenize.NEWLINE
                     or (t.type == tokenize.COMMENT and t.line.lstrip().startswith("#")))
    return statements, sum(1 for ln in source.splitlines() if ln.strip())


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_results_are_stated_labelled_and_checked(path):
    nb = load(path)
    text = markdown(nb)
    assert re.search(r"\{prf:(theorem|lemma|corollary|proposition)\}", text), f"{path.name} states no result"
    labels = set(re.findall(r":label:\s*(" + LABEL + ")", text))
    assert labels, f"{path.name}: no result carries a label in the book's convention"
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    checked = set(re.findall(r"verify\.check\(\s*f?[\"'](" + LABEL + ")[\"']", code))
    assert labels <= checked, f"{path.name}: labelled results no verify.check names: {sorted(labels - checked)} (CONTRIBUTING.md, 'Checks and their alternatives')"  # noqa: E501


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_anatomy(path):
    nb = load(path)
    text = markdown(nb)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert "colab-bootstrap" in first_code.metadata.get("tags", []), "the first code cell must be the Colab bootstrap (CONTRIBUTING.md, 'Chapter anatomy')"  # noqa: E501
    assert first_code.source == nbtools.bootstrap_source(), "Colab bootstrap URL differs from _config.yml (run `make sync`)"
    assert len(re.findall(r"\{exercise(?:-start)?\}", text)) >= 3, "fewer than three exercises (CONTRIBUTING.md, 'Chapter anatomy')"
    assert len(re.findall(r"\{solution(?:-start)?\}", text)) >= 3, "exercises need solutions"
    panels = [c for c in nb.cells if c.cell_type == "code" and "widgets.panel(" in c.source]
    assert panels, "no parameter panel (CONTRIBUTING.md, 'Chapter anatomy')"
    for cell in panels:
        assert "nbval-ignore-output" in cell.metadata.get("tags", []), "a panel cell must be tagged nbval-ignore-output"
    assert any("widgets.static(" in c.source for c in nb.cells if c.cell_type == "code"), "a panel needs its static twin"
    assert "verify.report(" in nb.cells[-1].source, "the last cell must show the chapter's checks (verify.report; CONTRIBUTING.md, 'Chapter anatomy')"  # noqa: E501
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not re.search(r";\s*$", cell.source.strip()), "a trailing ';' does not hide output under nbval"


def _measured_times():
    path = ROOT / "_build" / "nbval-times-1.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())["seconds"]
    return {Path(k).stem: v for k, v in data.items()}


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_chapter_within_budget(path):
    """The chapter runs top to bottom in at most 30 s (from the nbval run of `make test`, else executed here)."""
    times = _measured_times()
    if times is not None and path.stem in times:
        seconds = times[path.stem]
    else:
        seconds = nbtools.execute(path, write=False)
    print(f"{path.stem}: {seconds:.1f} s")
    assert seconds <= BUDGET_SECONDS, f"{path.name} took {seconds:.1f} s (budget {BUDGET_SECONDS} s; CONTRIBUTING.md, 'Numbers, outputs and machines')"  # noqa: E501


def test_dashboard_lists_every_chapter():
    import clbook

    found = clbook.verify.collect(CHAPTERS)
    for chapter in found:
        assert chapter["records"], f"{chapter['path']} stores no check records (its last cell must be verify.report)"
        assert all(r["passed"] for r in chapter["records"])


@pytest.mark.parametrize("config", ["native-1", "default-2", "avx2-1"])
def test_nbval_is_real(tmp_path, config):
    """Alter one stored number in a copy of Chapter 1: nbval in strict mode fails on exactly that cell, under each
    machine configuration that `make notebooks` plays (so the other stored outputs match on all of them)."""
    import os

    import stability

    source = CHAPTERS[0]
    nb = load(source)
    altered = None
    for k, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):  # nbval numbers the code cells
        for output in cell.get("outputs", []):
            if altered is None and output.get("output_type") == "stream" and re.search(r"\d\.\d+", output.text) \
                    and "nbval-ignore-output" not in cell.metadata.get("tags", []):
                output.text = re.sub(r"(\d\.\d*)(\d)", lambda m: m.group(1) + str((int(m.group(2)) + 1) % 10), output.text, count=1)
                altered = k
    assert altered is not None, "found no stored number to alter in Chapter 1"
    copy = tmp_path / source.name
    nbformat.write(nb, copy)
    env = {**os.environ, **stability.CONFIGS[config], "CLBOOK_DEVICE": "cpu"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
                          "--nbval-sanitize-with", str(ROOT / "nbval_sanitize.cfg"), "-q", "--rootdir", str(tmp_path), str(copy)],
                         cwd=source.parent, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode != 0, "nbval passed a notebook whose stored output was altered"
    assert "1 failed" in run.stdout and f"::Cell {altered}" in run.stdout, run.stdout[-3000:]
