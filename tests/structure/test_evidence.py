"""Evidence that discriminates: what the chapters' stored check records say, against the book's pages.

Every ``live`` or ``stored`` check of a chapter names an alternative (a plausible wrong claim) under which the same
measurement fails; :func:`clbook.verify.check` evaluates it on every run and raises when the check passes under it,
so nbval's re-execution of the chapters in ``make test`` proves every alternative anew. These tests read the
records that the chapters store with their report (``clbook.verify.collect``) and require that

* no chapter keeps a live or stored check without a failing alternative (CONTRIBUTING.md, "Checks and their
  alternatives");
* the Coverage page's status of every item is derived from the chapters' records: "stated and checked" only for
  labels with evidence, and the verdict of a reproduced experiment ("reproduced", "partly reproduced", "not
  reproduced", "unresolved") exactly as the chapter records it with ``verify.conclude``.
"""
import re
import sys
from pathlib import Path

import pytest

from clbook import verify

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402

COLLECTED = verify.collect(nbtools.chapters())
LABEL = re.compile(r"\b(?:acl|nonlin|esser|pokle)-(?:def|asm|lem|thm|cor|prop|rem|conj|ex|eq|fig|tab)-[0-9A-Za-z](?:[0-9A-Za-z.]*[0-9A-Za-z])?")  # noqa: E501
VERDICT_STATUSES = ("partly reproduced", "not reproduced", "unresolved", "reproduced")
PAGES = sorted((ROOT / "book" / "coverage").glob("*.md"))


def _evidence_labels():
    return {r["label"] for c in COLLECTED for r in c["records"] if r["kind"] != "illustration" and r["alternative"]}


def _conclusions():
    found = {}
    for c in COLLECTED:
        for label, verdict in c["conclusions"].items():
            found.setdefault(label, set()).add(verdict)
    return found


@pytest.mark.parametrize("chapter", COLLECTED, ids=[c["chapter"] for c in COLLECTED])
def test_every_counted_check_fails_under_its_alternative(chapter):
    records = chapter["records"]
    assert records, f"{chapter['path']} stores no check records (run `make outputs`)"
    unproven = [f"{r['label']}: {r['quantity']}" for r in records if r["kind"] != "illustration" and not r["alternative"]]
    assert not unproven, (
        f"{chapter['chapter']}: {len(unproven)} live/stored checks name no alternative, so they are not evidence: give each "
        "verify.Alternative(...) or make it kind='illustration' (CONTRIBUTING.md, 'Checks and their alternatives'). First: "
        + "; ".join(unproven[:5]))
    for r in records:
        if r["alternative"]:
            assert r["alternative_result"].endswith("fails"), f"{r['label']}: the stored alternative did not fail: {r}"


def _rows(page):
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith(("| item", "|---")):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            yield cells


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_coverage_statuses_are_derived_from_the_chapters(page):
    evidence, conclusions = _evidence_labels(), _conclusions()
    problems = []
    for cells in _rows(page):
        item, status = cells[0], cells[1]
        labels = LABEL.findall(status)
        if status.startswith("stated and checked"):
            missing = [lb for lb in labels if lb not in evidence]
            if not labels:
                problems.append(f"'{item}': 'stated and checked' names no label")
            elif missing:
                problems.append(f"'{item}': 'stated and checked' but no check with a failing alternative for {missing} "
                                "(status 'stated, illustrated only' or add evidence)")
        verdict = next((v for v in VERDICT_STATUSES if status.startswith(v)), None)
        if verdict is not None:
            if not labels:
                problems.append(f"'{item}': the verdict '{verdict}' names no label recorded by verify.conclude")
            for lb in labels:
                recorded = conclusions.get(lb)
                if recorded != {verdict}:
                    problems.append(f"'{item}': the page says '{verdict}' for {lb}; the chapters conclude "
                                    f"{sorted(recorded) if recorded else 'nothing (no verify.conclude)'}")
    assert not problems, f"{page.name} contradicts the chapters (CONTRIBUTING.md, 'Coverage'):\n  " + "\n  ".join(problems)


def test_every_conclusion_is_on_a_coverage_page():
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    missing = sorted(label for label in _conclusions() if label not in text)
    assert not missing, f"verdicts recorded by chapters but absent from the Coverage page: {missing}"
