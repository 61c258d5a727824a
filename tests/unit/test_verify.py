"""Tests of clbook.verify: checks pass and fail when they should; records reach the dashboard."""
import json

import pytest

from clbook import verify


def test_check_passes_and_records():
    rec = verify.check("acl-thm-1", "a quantity", 1.0, 1.0 + 1e-13, rtol=1e-12)
    assert rec.passed and verify.records() == [rec] and rec.paper.startswith("Tian 2022")


@pytest.mark.parametrize("kwargs", [
    {"predicted": 1.0, "measured": 1.1, "rtol": 1e-3},
    {"predicted": [1.0, 2.0], "measured": [1.0, 2.1], "atol": 1e-2},
    {"measured": 1e-3, "bound": 1e-6},
    {"measured": 0.5, "lower": 0.9},
    {"measured": float("nan"), "bound": 1.0},
])
def test_check_fails_loudly(kwargs):
    with pytest.raises(AssertionError, match="acl-thm-2"):
        verify.check("acl-thm-2", "something", **kwargs)
    assert verify.records() == []


@pytest.mark.parametrize("label", ["thm-1", "acl-theorem-1", "foo-thm-1", "acl-thm-", ""])
def test_label_convention_enforced(label):
    with pytest.raises(ValueError, match="label must follow"):
        verify.check(label, "q", 1.0, 1.0, rtol=1e-9)


def test_tolerance_required_and_forms_exclusive():
    with pytest.raises(ValueError, match="state a tolerance"):
        verify.check("acl-thm-1", "q", 1.0, 1.0)
    with pytest.raises(ValueError, match="not both"):
        verify.check("acl-thm-1", "q", 1.0, 1.0, bound=2.0)
    with pytest.raises(ValueError, match="shapes differ"):
        verify.check("acl-thm-1", "q", [1.0, 2.0], [1.0, 2.0, 3.0], rtol=1e-9)


def test_format_error_masks_rounding_noise():
    assert verify.format_error(3e-16) == "< 1e-13" and verify.format_error(0.0) == "< 1e-13"
    assert verify.format_error(2.5e-6) == "2.5e-06" and verify.format_number(0.123456) == "0.1235"


def test_report_metadata_roundtrip(tmp_path):
    with pytest.raises(AssertionError, match="no check has passed"):
        verify.report("Chapter X")
    verify.check("pokle-cor-1", "q", 2.0, 2.0, atol=1e-9)
    bundle, meta = verify.report("Chapter X")._repr_mimebundle_()
    assert "pokle-cor-1" in bundle["text/plain"] and "<table" in bundle["text/html"]
    notebook = {"cells": [{"cell_type": "code", "outputs": [{"output_type": "display_data", "data": bundle, "metadata": meta}]}]}
    path = tmp_path / "chX.ipynb"
    path.write_text(json.dumps(notebook))
    (found,) = verify.collect([path])
    assert found["chapter"] == "Chapter X" and found["records"][0]["label"] == "pokle-cor-1" and found["seconds"] >= 0


def test_chapters_in_toc(tmp_path):
    (tmp_path / "book").mkdir()
    for name in ("ch01.ipynb", "verification.ipynb", "notes.md"):
        (tmp_path / "book" / name).write_text("{}")
    toc = "root: book/notes\nchapters:\n  - file: book/ch01\n  - file: book/verification\n  - file: book/missing\n"
    (tmp_path / "_toc.yml").write_text(toc)
    assert [p.name for p in verify.chapters_in_toc(tmp_path / "_toc.yml")] == ["ch01.ipynb"]
