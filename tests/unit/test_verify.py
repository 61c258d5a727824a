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


def test_number_policy_in_the_report():
    rec = verify.check("acl-thm-1", "residual", measured=3e-13, bound=1e-8)
    assert rec.measured == "< 1e-10" and rec.kind == "live"
    rec = verify.check("acl-thm-1", "zero", 0.0, 2e-12, atol=1e-9)
    assert rec.predicted == "0" and rec.measured == "< 1e-9"
    rec = verify.check("acl-thm-1", "value", 0.123456, 0.1234561, rtol=1e-5)
    assert rec.predicted == rec.measured == "0.123"
    assert not hasattr(verify, "format_number") and not hasattr(verify, "format_error")  # one formatter: clbook.fmt


def test_kinds_and_sources():
    verify.check("pokle-thm-1", "live", 1.0, 1.0, atol=1e-9, alternative=verify.Alternative("off by one", predicted=2.0))
    verify.check("pokle-tab-2", "stored", measured=0.5, lower=0.1, kind="stored", source="landscape/table2-independent",
                 alternative=verify.Alternative("chance level", measured=0.05))
    verify.check("pokle-eq-1", "identity", 0.0, 0.0, atol=1e-12, kind="illustration")
    info = verify.summarise(verify.records())
    assert info["counts"] == {"live": 1, "stored": 1, "illustration": 1, "evidence": 2, "unproven": 0}
    assert info["status"] == {"pokle-thm-1": "live", "pokle-tab-2": "stored only", "pokle-eq-1": "not checked"}
    text = verify.report("Chapter Y")._repr_mimebundle_()[0]["text/plain"]
    assert "1 live, 1 on stored results, 1 illustrations" in text and "Not checked (illustrations only): pokle-eq-1" in text
    for bad in [dict(kind="guess"), dict(kind="stored"), dict(kind="stored", source="landscape/nope"),
                dict(kind="stored", source="table2"), dict(source="landscape/table2-independent")]:
        with pytest.raises(ValueError):
            verify.check("pokle-thm-1", "q", 1.0, 1.0, atol=1e-9, **bad)


def test_table_comparison_cell_by_cell():
    paper = {"a": (0.50, 0.02), "b": (0.60, 0.01), "c": (0.70, 0.0)}
    ours = {"a": [0.51, 0.49, 0.50], "b": [0.80, 0.81, 0.79], "c": [0.70, 0.71, 0.69]}
    t = verify.compare_table(paper, ours, n_paper=5, title="T")
    assert t.n_cells == 3 and t.n_agree == 2 and [c.key for c in t.disagreeing] == ["b"] and not t.reproduced
    assert "2 of 3 cells agree" in t.summary()
    a = verify.agreement(0.5, 0.1, 5, 0.6, 0.1, 5)
    assert a.allowed == pytest.approx(2 * (0.02 / 5 * 1) ** 0.5 * 1) and a.agrees  # 0.1 <= 2*sqrt(0.002+0.002)
    assert verify.compare_table({"x": (0.5, 0.1)}, {"x": [0.52, 0.48, 0.5]}, n_paper=5).reproduced
    with pytest.raises(ValueError, match="no value"):
        verify.compare_table(paper, {"a": [0.5]}, n_paper=5)
    with pytest.raises(ValueError, match="n_paper"):
        verify.agreement(0.5, 0.1, 0, 0.5, 0.1, 5)
    d = verify.detectable_difference(0.05, 5, 0.05, 5)
    assert 0.08 < d < 0.1


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


def test_alternative_must_fail():
    alt = verify.Alternative("the factor 2 dropped", predicted=2.0)
    rec = verify.check("acl-thm-1", "slope", 1.0, 1.0 + 1e-9, rtol=1e-6, alternative=alt)
    assert rec.evidence and rec.alternative == "the factor 2 dropped" and "fails" in rec.alternative_result
    with pytest.raises(AssertionError, match="does not discriminate"):
        verify.check("acl-thm-1", "slope", 1.0, 1.0 + 1e-9, rtol=1e-6,
                     alternative=verify.Alternative("a tiny change", predicted=1.0 + 1e-8))
    rec = verify.check("acl-thm-1", "error", measured=1e-12, bound=1e-9,
                       alternative=verify.Alternative("sign flipped", measured=lambda: 0.3))
    assert rec.evidence
    with pytest.raises(AssertionError, match="does not discriminate"):
        verify.check("acl-thm-1", "error", measured=1e-12, bound=1e-9,
                     alternative=verify.Alternative("no effect", measured=lambda: 1e-11))
    # a measurement that blows up in the alternative's world fails the comparison
    assert verify.check("acl-thm-1", "value", 1.0, 1.0, atol=1e-9,
                        alternative=verify.Alternative("unstable", measured=float("inf"))).evidence
    info = verify.summarise(verify.records())
    assert info["counts"]["evidence"] == 3 and info["counts"]["unproven"] == 0


def test_alternative_arguments():
    with pytest.raises(ValueError, match="exactly one"):
        verify.Alternative("x")
    with pytest.raises(ValueError, match="exactly one"):
        verify.Alternative("x", predicted=1.0, measured=1.0)
    with pytest.raises(ValueError, match="claim"):
        verify.Alternative("", predicted=1.0)
    with pytest.raises(TypeError, match="Alternative"):
        verify.check("acl-thm-1", "q", 1.0, 1.0, atol=1e-9, alternative="sign")
    with pytest.raises(ValueError, match="illustration takes no alternative"):
        verify.check("acl-thm-1", "q", 1.0, 1.0, atol=1e-9, kind="illustration",
                     alternative=verify.Alternative("x", predicted=2.0))
    with pytest.raises(ValueError, match="measured="):
        verify.check("acl-thm-1", "q", measured=1.0, bound=2.0, alternative=verify.Alternative("x", predicted=3.0))
    verify.check("acl-thm-1", "unproven", 1.0, 1.0, atol=1e-9)
    assert verify.summarise(verify.records())["status"] == {"acl-thm-1": "unproven"}


def test_t_cutoffs_and_paired_test():
    assert verify.t_cutoff(4) == pytest.approx(2.776, abs=1e-3)
    assert verify.t_cutoff(4, tests=3) == pytest.approx(3.961, abs=1e-3)
    assert verify.t_cutoff(10_000) == pytest.approx(1.960, abs=1e-3)
    t = verify.paired_test([1.0, 2.0, 3.0, 4.0, 5.0], [0.5, 1.0, 2.0, 3.0, 3.0])
    assert t.n == 5 and t.mean == pytest.approx(1.1) and t.verdict == "holds"
    # t = 2.05 with 5 seeds: "holds" by 2 se, within noise by the t(4) cut-off
    d = [0.2, 0.1, 0.3, -0.05, 0.2]
    t = verify.paired_test(d, [0.0] * 5)
    assert 2.0 < t.t < 2.78 and t.verdict == "within noise" and not t.rules_out(0.05) and t.rules_out(1.0)
    assert verify.paired_test([0.0] * 5, d).verdict == "within noise"
    assert verify.paired_test([-1.0, -1.1, -0.9], [0.0, 0.0, 0.0]).verdict == "reversed"
    with pytest.raises(ValueError, match="same number"):
        verify.paired_test([1.0], [1.0])
    with pytest.raises(ValueError, match="df"):
        verify.t_cutoff(0)


def test_conclusions_recorded():
    verify.conclude("pokle-tab-2", "not reproduced")
    assert verify.conclusions() == {"pokle-tab-2": "not reproduced"}
    with pytest.raises(ValueError, match="verdict"):
        verify.conclude("pokle-tab-2", "kind of")
    verify.clear()
    assert verify.conclusions() == {}
