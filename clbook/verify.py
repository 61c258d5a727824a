r"""Checks that compare a prediction with a measurement, and the records behind the dashboard.

A chapter validates each stated result with :func:`check`. It raises an ``AssertionError``
with a readable message when the measurement misses the prediction, and otherwise returns
a :class:`CheckRecord` that is collected. :func:`report`, the last cell of every chapter,
shows the chapter's records and stores them (with the chapter's run time) in the output's
metadata; the Verification page (:func:`collect`) gathers them from every chapter notebook.

Labels follow the book's convention ``<paper>-<kind>-<number>`` (``acl-thm-1``,
``nonlin-lem-7``, ``esser-conj-1``, ``pokle-cor-1``).
"""
from __future__ import annotations

import html
import json
import math
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from . import fmt

__all__ = [
    "CheckRecord", "KINDS", "Alternative", "check", "records", "clear", "report", "collect", "summarise", "LABEL_PATTERN",
    "VERDICTS", "conclude", "conclusions",
    "AGREEMENT_K", "Agreement", "agreement", "TableComparison", "compare_table", "detectable_difference",
    "ALPHA", "t_cutoff", "PairedTest", "paired_test",
]

LABEL_PATTERN = re.compile(r"^(acl|nonlin|esser|pokle)-(def|asm|lem|thm|cor|prop|rem|conj|ex|eq|fig|tab)-[0-9A-Za-z.]+$")
PAPERS = {"acl": "Tian 2022 (α-CL)", "nonlin": "Tian 2023 (nonlinearity)", "esser": "Esser et al. 2023", "pokle": "Pokle et al. 2022"}
METADATA_KEY = "clbook_checks"
KINDS = ("live", "stored", "illustration")
"""The kinds of check:

* ``live``: computed in this run, by a path independent of the prediction;
* ``stored``: reads a committed experiment result (``source``, e.g. ``"landscape/table2-independent"`` in
  :mod:`clbook.results`), which ``python -m clbook.experiments.<experiment>`` recomputes;
* ``illustration``: an identity or a construction shown for teaching; it is not evidence, and a result whose
  only checks are illustrations is listed as not checked.

A ``live`` or ``stored`` check counts as *evidence* only with an :class:`Alternative`: a named plausible wrong
claim under which the same comparison fails. :func:`check` evaluates the alternative on every run and raises
when the check would pass under it too, so executing a chapter (nbval, in ``make test``) proves every
alternative. A ``live``/``stored`` check without one is counted as *unproven*, not as evidence.
"""


@dataclass(frozen=True)
class Alternative:
    r"""A plausible wrong claim under which a check must fail: the negative control of the check.

    Give exactly one of

    * ``predicted``: what the alternative predicts (the paper's wrong constant, the sign flipped, a factor
      dropped, no effect, the effect the paper reports, ...), compared with the *same* measurement under the
      same tolerance rule;
    * ``measured``: the same measurement made in the alternative's world (the hypothesis broken, the other mask
      scheme, a non-homogeneous activation, ...), compared with the *same* prediction or bound.

    Either may be a value (number, array, tensor) or a function of no arguments that returns one (evaluated by
    :func:`check`, so it costs only when the check runs).

    Parameters
    ----------
    claim : str
        The wrong claim in words, e.g. ``"the paper's constant C0^3"`` or ``"no effect (gap 0)"``.

    Examples
    --------
    >>> from clbook import verify
    >>> alt = verify.Alternative("the factor 1/2 dropped", predicted=2.0)
    >>> r = verify.check("acl-thm-1", "a slope", 1.0, 1.0 + 1e-9,
    ...                  rtol=1e-6, alternative=alt)
    >>> r.alternative
    'the factor 1/2 dropped'
    """

    claim: str
    predicted: object = None
    measured: object = None

    def __post_init__(self):
        if not isinstance(self.claim, str) or not self.claim.strip():
            raise ValueError("Alternative.claim must name the wrong claim in words; got "
                             f"claim = {self.claim!r}.")
        if (self.predicted is None) == (self.measured is None):
            raise ValueError(f"Alternative {self.claim!r}: give exactly one of predicted (the alternative's "
                             "prediction) or measured (the measurement in the alternative's world).")

    def value(self, which: str):
        """The prediction or the measurement (``which``), called first when it is a function."""
        v = getattr(self, which)
        return v() if callable(v) else v


@dataclass(frozen=True)
class CheckRecord:
    """One validation: what was predicted, what was measured, under which tolerance, and of which kind."""

    label: str
    quantity: str
    predicted: str
    measured: str
    tolerance: str
    error: float
    passed: bool
    seconds: float
    kind: str = "live"
    source: str = ""
    alternative: str = ""
    alternative_result: str = ""

    @property
    def paper(self) -> str:
        """The paper that the label's prefix names."""
        return PAPERS[self.label.split("-")[0]]

    @property
    def evidence(self) -> bool:
        """A ``live`` or ``stored`` check whose alternative was shown to fail."""
        return self.kind != "illustration" and bool(self.alternative)


_records: list[CheckRecord] = []
_last = time.perf_counter()



def _to_array(name, value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number, array or tensor; got {type(value).__name__}.") from exc
    return arr


def _is_count(value) -> bool:
    """Whether a measurement is a count (integers): it prints as it is, never against a floor."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    if isinstance(value, torch.Tensor):
        return not value.is_floating_point() and not value.is_complex() and value.dtype != torch.bool
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "iu"
    if isinstance(value, (list, tuple)) and value:
        return all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
    return False


def _show(x: float, floor: float | None) -> str:
    """A number of a check's row: below ``floor`` as the bound ``< floor``, otherwise a value (three digits)."""
    if floor is not None and math.isfinite(x) and abs(x) < floor:
        return fmt.error(x, floor)
    return fmt.value(x)


def _describe(arr: np.ndarray, floor: float | None = None) -> str:
    if arr.size == 1:
        return _show(float(arr.reshape(())), floor)
    return f"[{arr.size} values, {_show(float(arr.min()), floor)} … {_show(float(arr.max()), floor)}]"


def check(label: str, quantity: str, predicted=None, measured=None, *, rtol: float = 0.0, atol: float = 0.0,
          bound: float | None = None, lower: float | None = None, kind: str = "live", source: str = "",
          floor: float | None = None, alternative: Alternative | None = None) -> CheckRecord:
    r"""Compare a prediction with a measurement; raise ``AssertionError`` when they disagree.

    Two forms:

    * ``check(label, quantity, predicted, measured, rtol=..., atol=...)``: passes when
      :math:`|m - p| \le \mathrm{atol} + \mathrm{rtol}\,|p|` for every entry (arrays broadcast);
    * ``check(label, quantity, measured=m, bound=b)`` (and/or ``lower=l``): passes when
      :math:`l \le m \le b` for every entry, for one-sided claims (an error that must be small,
      a count that must be large).

    Parameters
    ----------
    label : str
        The stated result, in the convention ``<paper>-<kind>-<number>`` (e.g. ``"acl-thm-1"``; ``fig`` and
        ``tab`` for the papers' figures and tables, e.g. ``"pokle-tab-2"``).
    quantity : str
        What is compared, in words, e.g. ``"relative gradient difference"``.
    kind : {"live", "stored", "illustration"}
        See :data:`KINDS`. Only ``live`` and ``stored`` checks are evidence.
    source : str
        For ``kind="stored"``: the stored result read, ``"<experiment>/<name>"`` (see :mod:`clbook.results`).
    floor : float, optional
        Numbers below ``floor`` in magnitude display as ``"< floor"`` (:func:`clbook.fmt.error`). Default: the
        ``atol`` of a comparison, and the smaller of the bound and :data:`clbook.fmt.FLOORS` (float64) for an upper
        bound; a chapter states a larger one where the measured error is rounding noise above 1e-10.
    alternative : Alternative, optional
        The named wrong claim under which this comparison must fail (see :class:`Alternative`). It is evaluated
        here: a check that passes under its alternative raises ``AssertionError`` ("does not discriminate"). A
        ``live`` or ``stored`` check needs one to count as evidence; an ``illustration`` takes none.

    Returns
    -------
    CheckRecord
        Also appended to :func:`records`.
    """
    global _last
    _check_arguments(label, quantity, kind, source, floor, measured, alternative, bound, lower)
    counted = _is_count(measured)
    m = _to_array("measured", measured)
    if m.size == 0:
        raise ValueError("measured is empty: there is nothing to check.")
    if not np.all(np.isfinite(m)):
        raise AssertionError(f"{label}: {quantity}: the measurement contains NaN or inf.")
    if bound is not None or lower is not None:
        if predicted is not None:
            raise ValueError("give either predicted (with rtol/atol) or bound/lower, not both.")
        out = _within_bounds(label, m, bound, lower, floor, counted, alternative)
    else:
        out = _within_tolerance(label, predicted, m, rtol, atol, floor, alternative)
    now = time.perf_counter()
    claim = alternative.claim if alternative is not None else ""
    record = CheckRecord(label, quantity, out.predicted, out.measured, out.tolerance, out.error, out.ok, now - _last, kind,
                         source, claim, out.alternative)
    _last = now
    if not out.ok:
        raise AssertionError(
            f"{label} failed: {quantity}: predicted {out.predicted}, measured {out.measured}, tolerance {out.tolerance}; "
            f"largest deviation {fmt.value(out.error)}."
        )
    if alternative is not None and out.alternative_passes:
        raise AssertionError(
            f"{label} does not discriminate: {quantity} also passes under the alternative "
            f"'{alternative.claim}' ({out.alternative}; tolerance {out.tolerance}). Tighten the tolerance, measure more, "
            "or name an alternative the measurement can tell apart; otherwise the check is an illustration."
        )
    _records.append(record)
    return record


@dataclass(frozen=True)
class _Outcome:
    """What one comparison found: the verdict, the largest deviation, the displayed numbers and the alternative's."""

    ok: bool
    error: float
    predicted: str
    measured: str
    tolerance: str
    alternative: str = ""
    alternative_passes: bool = False


def _check_arguments(label, quantity, kind, source, floor, measured, alternative, bound, lower) -> None:
    if not isinstance(label, str) or not LABEL_PATTERN.match(label):
        raise ValueError(
            f"label must follow <paper>-<kind>-<number> (paper in acl/nonlin/esser/pokle), e.g. 'acl-thm-1'; got {label!r}."
        )
    if not isinstance(quantity, str) or not quantity.strip():
        raise ValueError("quantity must be a non-empty description of what is compared.")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got kind = {kind!r}.")
    if kind == "stored":
        _check_source(source)
    elif source:
        raise ValueError(f"source names the stored result of a kind='stored' check; got source = {source!r} with kind = {kind!r}.")
    if floor is not None and not (isinstance(floor, (int, float)) and math.isfinite(floor) and floor > 0):
        raise ValueError(f"floor must be a finite number > 0; got floor = {floor!r}.")
    if measured is None:
        raise ValueError("measured is required.")
    if alternative is None:
        return
    if not isinstance(alternative, Alternative):
        raise TypeError(f"alternative must be a clbook.verify.Alternative; got {type(alternative).__name__}.")
    if kind == "illustration":
        raise ValueError("an illustration takes no alternative: with a failing alternative it is evidence "
                         "(kind 'live' or 'stored').")
    if (bound is not None or lower is not None) and alternative.predicted is not None:
        raise ValueError(f"alternative {alternative.claim!r}: a bound check compares measurements, so its "
                         "alternative gives measured=, not predicted=.")


def _within_bounds(label, m, bound, lower, floor, counted, alternative) -> _Outcome:
    """``lower <= m <= bound`` entrywise; the alternative's measurement under the same bounds."""
    hi = math.inf if bound is None else float(bound)
    lo = -math.inf if lower is None else float(lower)

    def passes(x):
        return bool(np.all((x >= lo) & (x <= hi)))

    alt_text, alt_ok = "", False
    if alternative is not None:
        ma = _finite_alternative(label, alternative, "measured")
        alt_ok = passes(ma)
        alt_text = f"measured {_describe(ma)}: {'passes' if alt_ok else 'fails'}"
    show_floor = floor if floor is not None else (
        min(hi, fmt.FLOORS[torch.float64]) if bound is not None and lower is None and hi > 0 and not counted else None)
    pred = " and ".join(s for s in (f"≥ {fmt.value(lo)}" if lower is not None else "",
                                    f"≤ {fmt.value(hi)}" if bound is not None else "") if s)
    error = float(np.max(m)) if bound is not None else float(np.min(m))
    return _Outcome(passes(m), error, pred, _describe(m, show_floor), pred, alt_text, alt_ok)


def _within_tolerance(label, predicted, m, rtol, atol, floor, alternative) -> _Outcome:
    """``|m - p| <= atol + rtol |p|`` entrywise; the alternative's prediction or measurement under the same rule."""
    if predicted is None:
        raise ValueError("give predicted (with rtol/atol) or a bound.")
    if rtol < 0 or atol < 0 or not (math.isfinite(rtol) and math.isfinite(atol)):
        raise ValueError(f"rtol and atol must be finite and >= 0; got rtol = {rtol}, atol = {atol}.")
    if rtol == 0 and atol == 0:
        raise ValueError("state a tolerance: rtol or atol must be > 0.")
    p = _to_array("predicted", predicted)
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{label}: the prediction contains NaN or inf.")
    try:
        p, mb = np.broadcast_arrays(p, m)
    except ValueError as exc:
        raise ValueError(f"predicted and measured shapes differ: {p.shape} vs {m.shape}.") from exc
    diff = np.abs(mb - p)
    ok = bool(np.all(diff <= atol + rtol * np.abs(p)))
    alt_text, alt_ok = "", False
    if alternative is not None:
        which = "predicted" if alternative.predicted is not None else "measured"
        xa = _finite_alternative(label, alternative, which)
        try:
            pa, ma = np.broadcast_arrays(xa, m) if which == "predicted" else np.broadcast_arrays(p, xa)
        except ValueError as exc:
            other, shape = ("measurement", m.shape) if which == "predicted" else ("prediction", p.shape)
            raise ValueError(f"alternative {alternative.claim!r}: its {which} has shape {xa.shape}, the check's "
                             f"{other} {shape}.") from exc
        dev = np.abs(ma - pa)
        alt_ok = bool(np.all(dev <= atol + rtol * np.abs(pa)))
        alt_text = f"{which} {_describe(xa)}, deviation {fmt.value(float(np.max(dev)))}: {'passes' if alt_ok else 'fails'}"
    show_floor = floor if floor is not None else (atol if atol > 0 else None)
    tol = " + ".join(s for s in (f"atol {fmt.value(atol, 1)}" if atol else "", f"rtol {fmt.value(rtol, 1)}" if rtol else "") if s)
    error = float(np.max(diff)) if diff.size else 0.0
    return _Outcome(ok, error, _describe(p, None if not np.any(p) else show_floor), _describe(mb, show_floor), tol, alt_text,
                    alt_ok)


def _finite_alternative(label: str, alternative: Alternative, which: str) -> np.ndarray:
    x = _to_array(f"alternative.{which}", alternative.value(which))
    if x.size == 0 or (which == "predicted" and not np.all(np.isfinite(x))):
        raise ValueError(f"{label}: alternative {alternative.claim!r} gave a {which} that is empty or not finite.")
    return x  # a measurement that is not finite in the alternative's world fails the comparison


def _check_source(source: str) -> None:
    from . import results

    parts = source.split("/") if isinstance(source, str) else []
    if len(parts) != 2 or parts[0] not in results.EXPERIMENTS or not all(parts):
        raise ValueError(f"a kind='stored' check names its stored result as '<experiment>/<name>' with experiment in "
                         f"{', '.join(results.EXPERIMENTS)}; got source = {source!r}.")
    if not results.exists(*parts):
        raise ValueError(f"source = {source!r}: clbook ships no such result (stored: {', '.join(results.names(parts[0]))}).")


def records() -> list[CheckRecord]:
    """The records of the checks that passed since the last :func:`clear`."""
    return list(_records)


def clear() -> None:
    """Forget the records and conclusions (``clbook.setup`` does not; a chapter calls this once at its start)."""
    global _last
    _records.clear()
    _conclusions.clear()
    _last = time.perf_counter()


VERDICTS = ("reproduced", "partly reproduced", "not reproduced", "unresolved")
"""What a chapter concludes about a paper's experiment (a figure, a table, a proposition about runs).

The Coverage page's status of that item is derived from this record, never typed separately (a structure test
compares them)."""
_conclusions: dict[str, str] = {}


def conclude(label: str, verdict: str) -> str:
    """Record the chapter's verdict on a paper's experiment ``label`` (one of :data:`VERDICTS`).

    The verdict is stored with the chapter's report (:func:`report`) and read by the Coverage page's structure
    test, so a summary cannot call "reproduced" what the chapter does not.

    Parameters
    ----------
    label : str
        The item, in the label convention (``"pokle-tab-2"``, ``"nonlin-fig-4"``).
    verdict : str
        One of :data:`VERDICTS`.
    """
    if not isinstance(label, str) or not LABEL_PATTERN.match(label):
        raise ValueError(f"label must follow <paper>-<kind>-<number>, e.g. 'pokle-tab-2'; got {label!r}.")
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got verdict = {verdict!r}.")
    _conclusions[label] = verdict
    return verdict


def conclusions() -> dict:
    """The verdicts recorded by :func:`conclude` since the last :func:`clear`."""
    return dict(_conclusions)


def _table_rows(recs):
    return [(r.label, r.quantity, r.predicted, r.measured, r.tolerance, r.kind,
             f"{r.alternative} ({r.alternative_result})" if r.alternative else "—", "✓" if r.passed else "✗")
            for r in recs]


def _field(r, name):
    return r.get(name, "") if isinstance(r, dict) else getattr(r, name)


def summarise(recs) -> dict:
    """Counts per kind and the status of each labelled result, from records (objects or the dicts in metadata).

    Returns ``{"counts": {kind: n, "evidence": n, "unproven": n}, "status": {label: status}}``. ``evidence``
    counts the live and stored checks with a failing alternative, ``unproven`` those without one. Status is
    ``"live"`` (at least one live check with an alternative), ``"stored only"`` (evidence only from stored
    results), ``"unproven"`` (live or stored checks, none with an alternative) or ``"not checked"``
    (illustrations only).
    """
    counts = {k: 0 for k in KINDS} | {"evidence": 0, "unproven": 0}
    kinds_by_label: dict[str, set] = {}
    for r in recs:
        kind, label = _field(r, "kind"), _field(r, "label")
        counts[kind] += 1
        ks = kinds_by_label.setdefault(label, set())
        if kind != "illustration":
            proven = bool(_field(r, "alternative"))
            counts["evidence" if proven else "unproven"] += 1
            ks.add(kind if proven else "unproven")
        else:
            ks.add(kind)
    status = {label: "live" if "live" in ks else "stored only" if "stored" in ks else "unproven" if "unproven" in ks
              else "not checked" for label, ks in kinds_by_label.items()}
    return {"counts": counts, "status": status}


class Report:
    """The display of one chapter's checks (text and HTML); the metadata carries the records."""

    header = ("result", "quantity", "prediction", "measurement", "tolerance", "kind", "alternative (must fail)", "")

    def __init__(self, chapter: str, recs: list[CheckRecord], seconds: float):
        self.chapter, self.recs, self.seconds = chapter, recs, seconds

    def _summary_lines(self) -> list[str]:
        info = summarise(self.recs)
        c = info["counts"]
        lines = [f"{len(self.recs)} checks passed in {self.chapter}: {c['live']} live, {c['stored']} on stored results, "
                 f"{c['illustration']} illustrations (not evidence); {c['evidence']} of the "
                 f"{c['evidence'] + c['unproven']} live and stored checks fail under their named alternative."]
        stored = sorted(k for k, v in info["status"].items() if v == "stored only")
        unproven = sorted(k for k, v in info["status"].items() if v == "unproven")
        unchecked = sorted(k for k, v in info["status"].items() if v == "not checked")
        if stored:
            lines.append("Resting only on stored results: " + ", ".join(stored) + ".")
        if unproven:
            lines.append("No check with a failing alternative (not evidence yet): " + ", ".join(unproven) + ".")
        if unchecked:
            lines.append("Not checked (illustrations only): " + ", ".join(unchecked) + ".")
        if _conclusions:
            lines.append("Conclusions: " + "; ".join(f"{k}: {v}" for k, v in _conclusions.items()) + ".")
        return lines

    def _repr_mimebundle_(self, include=None, exclude=None):
        rows = _table_rows(self.recs)
        lines = self._summary_lines()
        text = "\n".join(lines + [" | ".join(row) for row in rows])
        cells = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        head = "".join(f"<th>{h}</th>" for h in self.header)
        intro = "".join(f"<p>{html.escape(line)}</p>" for line in lines)
        table = f'{intro}<table class="clbook-checks"><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>'
        meta = {METADATA_KEY: {"chapter": self.chapter, "seconds": round(self.seconds, 2),
                               "records": [asdict(r) for r in self.recs], "conclusions": dict(_conclusions)}}
        return {"text/plain": text, "text/html": table}, meta


def report(chapter: str) -> Report:
    """Display the chapter's checks; the output's metadata stores them with the chapter's run time.

    The run time counts from the last ``clbook.setup`` call. nbval compares the table (rounded
    values) but not the metadata, so the stored records stay exact and the run time is recorded
    without making outputs nondeterministic.
    """
    from .config import current

    if not _records:
        raise AssertionError(f"{chapter}: no check has passed; a chapter must validate its results.")
    return Report(chapter, records(), time.perf_counter() - current().started)


def collect(paths) -> list[dict]:
    """Read the check records stored in the outputs of executed chapter notebooks.

    Returns one dict per chapter: ``{"chapter", "path", "seconds", "records", "conclusions"}``; a notebook
    without a report contributes ``records = []``. Records stored before check kinds existed read as ``live``, and
    before alternatives existed as without one (unproven).
    """
    out = []
    for path in paths:
        path = Path(path)
        nb = json.loads(path.read_text(encoding="utf-8"))
        found = {"chapter": path.stem, "path": str(path), "seconds": None, "records": [], "conclusions": {}}
        for cell in nb.get("cells", []):
            for output in cell.get("outputs", []):
                meta = output.get("metadata", {}).get(METADATA_KEY)
                if meta:
                    found.update(chapter=meta["chapter"], seconds=meta["seconds"],
                                 records=[{"kind": "live", "source": "", "alternative": "", "alternative_result": ""} | r
                                          for r in meta["records"]],
                                 conclusions=dict(meta.get("conclusions", {})))
        out.append(found)
    return out


# ------------------------------------------------------------------------------ experiments against a paper

AGREEMENT_K = 2.0
r"""The one rule by which the book compares an experiment with a paper's number, fixed before any measurement:
a cell agrees when :math:`|\bar x_{\rm ours} - \bar x_{\rm paper}| \le k\sqrt{\mathrm{se}_{\rm paper}^2 +
\mathrm{se}_{\rm ours}^2}` with :math:`k = 2` and :math:`\mathrm{se} = \mathrm{sd}/\sqrt n` (the paper's ``±``
is read as the standard deviation over its ``n`` seeds). If the paper's numbers and ours came from the same
distribution, a cell would disagree with probability about 5 %."""


@dataclass(frozen=True)
class Agreement:
    """One cell: the paper's mean and sd over ``n_paper`` seeds, ours over ``n_ours``, the difference and the allowance."""

    key: str
    paper: float
    paper_sd: float
    n_paper: int
    ours: float
    ours_sd: float
    n_ours: int
    delta: float
    allowed: float
    agrees: bool


def _sd(name, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite standard deviation >= 0; got {name} = {value}.")
    return value


def _n(name, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a number of seeds >= 1; got {name} = {value!r}.")
    return int(value)


def agreement(paper: float, paper_sd: float, n_paper: int, ours: float, ours_sd: float, n_ours: int, *, key: str = "",
              k: float = AGREEMENT_K) -> Agreement:
    r"""Compare one cell by the rule of :data:`AGREEMENT_K`: :math:`|\Delta| \le k\sqrt{\mathrm{se}_p^2 + \mathrm{se}_o^2}`."""
    paper, ours = float(paper), float(ours)
    if not (math.isfinite(paper) and math.isfinite(ours)):
        raise ValueError(f"paper and ours must be finite numbers; got paper = {paper}, ours = {ours}.")
    paper_sd, ours_sd = _sd("paper_sd", paper_sd), _sd("ours_sd", ours_sd)
    n_paper, n_ours = _n("n_paper", n_paper), _n("n_ours", n_ours)
    if not (isinstance(k, (int, float)) and math.isfinite(k) and k > 0):
        raise ValueError(f"k must be a finite number > 0; got k = {k!r}.")
    allowed = k * math.sqrt(paper_sd ** 2 / n_paper + ours_sd ** 2 / n_ours)
    delta = ours - paper
    return Agreement(str(key), paper, paper_sd, n_paper, ours, ours_sd, n_ours, delta, allowed, abs(delta) <= allowed)


@dataclass(frozen=True)
class TableComparison:
    """A table compared with the paper's cell by cell (:func:`compare_table`)."""

    title: str
    cells: tuple
    k: float

    @property
    def n_cells(self) -> int:
        """The number of cells compared."""
        return len(self.cells)

    @property
    def n_agree(self) -> int:
        """The number of cells that agree with the paper."""
        return sum(c.agrees for c in self.cells)

    @property
    def disagreeing(self) -> list[Agreement]:
        """The cells that do not agree with the paper."""
        return [c for c in self.cells if not c.agrees]

    @property
    def k_family(self) -> float:
        r"""The allowance factor for the whole table: Bonferroni's :math:`\Phi^{-1}(1 - 0.05/(2n))` over ``n`` cells."""
        from statistics import NormalDist

        return NormalDist().inv_cdf(1 - 0.05 / (2 * self.n_cells))

    @property
    def reproduced(self) -> bool:
        """True when every cell agrees within :attr:`k_family` standard errors (a 5 % family-wise test)."""
        return all(abs(c.delta) <= c.allowed * self.k_family / self.k for c in self.cells)

    def summary(self) -> str:
        """One sentence: how many cells agree, under which rule, and the verdict on the table."""
        verdict = "reproduced" if self.reproduced else "not reproduced"
        text = (f"{self.title}: {self.n_agree} of {self.n_cells} cells agree with the paper (|Δ| ≤ {fmt.value(self.k)}·√(se_paper² + "
                f"se_ours²)); as a table (every cell within {fmt.value(self.k_family)} se, 5 % family-wise): {verdict}.")
        if self.disagreeing:
            text += " Disagreeing: " + "; ".join(
                f"{c.key} (paper {fmt.value(c.paper, 2)}, ours {fmt.value(c.ours, 2)}, Δ {fmt.value(c.delta, 2)}, allowed "
                f"{fmt.value(c.allowed, 2)})" for c in self.disagreeing) + "."
        return text

    def _repr_mimebundle_(self, include=None, exclude=None):
        head = ("cell", "paper", "ours", "Δ", "allowed", "agrees")
        rows = [(c.key, fmt.pm(c.paper, c.paper_sd), fmt.pm(c.ours, c.ours_sd), f"{c.delta:+.2f}", f"{c.allowed:.2f}",
                 "✓" if c.agrees else "✗") for c in self.cells]
        body = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in row) + "</tr>" for row in rows)
        table = (f"<p>{html.escape(self.summary())}</p><table class=\"clbook-checks\"><thead><tr>"
                 + "".join(f"<th>{h}</th>" for h in head) + f"</tr></thead><tbody>{body}</tbody></table>")
        return {"text/plain": self.summary(), "text/html": table}


def compare_table(paper: dict, ours: dict, *, n_paper: int, title: str = "Table", k: float = AGREEMENT_K) -> TableComparison:
    """Compare two tables cell by cell by the rule of :data:`AGREEMENT_K`.

    Parameters
    ----------
    paper : dict
        ``{cell: (mean, sd)}``, the paper's numbers (``sd`` over ``n_paper`` seeds; 0 where the paper gives none).
    ours : dict
        ``{cell: values}``, our per-seed values (a sequence of numbers) for every cell of ``paper``.
    n_paper : int
        The paper's number of seeds.
    """
    if not isinstance(paper, dict) or not paper:
        raise ValueError("paper must be a non-empty dict {cell: (mean, sd)}.")
    missing = [key for key in paper if key not in ours]
    if missing:
        raise ValueError(f"ours has no value for the paper's cells {', '.join(map(str, missing))}.")
    cells = []
    for key, (mean, sd) in paper.items():
        values = np.asarray(ours[key], dtype=np.float64).reshape(-1)
        if values.size == 0 or not np.all(np.isfinite(values)):
            raise ValueError(f"ours[{key!r}] must hold finite per-seed values; got {ours[key]!r}.")
        ours_sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
        cells.append(agreement(mean, sd, n_paper, float(values.mean()), ours_sd, int(values.size), key=str(key), k=k))
    return TableComparison(str(title), tuple(cells), float(k))


ALPHA = 0.05
"""The book's one significance level: two-sided 5 % per test, before any correction for the number of tests."""


def t_cutoff(df: int, *, alpha: float = ALPHA, tests: int = 1) -> float:
    r"""The two-sided cut-off of Student's t with ``df`` degrees of freedom, Bonferroni-corrected over ``tests``.

    :math:`t_{1 - \alpha / (2\,\mathrm{tests}),\,\mathrm{df}}`: with 5 paired seeds (df = 4) it is 2.78, not
    the normal 1.96 or the "2 se" of a rule of thumb. A table of ``tests`` comparisons that each use this cut-off
    has a family-wise false-positive rate of at most ``alpha``.

    Examples
    --------
    >>> round(t_cutoff(4), 2), round(t_cutoff(4, tests=3), 2)
    (2.78, 3.96)
    """
    df = _n("df", df)
    tests = _n("tests", tests)
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"alpha must lie in (0, 1); got alpha = {alpha!r}.")
    from scipy.stats import t

    return float(t.ppf(1 - alpha / (2 * tests), df))


@dataclass(frozen=True)
class PairedTest:
    """A paired comparison of two conditions over the same seeds (:func:`paired_test`)."""

    n: int
    mean: float
    se: float
    t: float
    cutoff: float
    detectable: float
    tests: int

    @property
    def verdict(self) -> str:
        """``"holds"`` (mean > 0 beyond the cut-off), ``"reversed"`` (< 0 beyond it) or ``"within noise"``."""
        if self.se == 0:
            return "holds" if self.mean > 0 else "reversed" if self.mean < 0 else "within noise"
        return "holds" if self.t > self.cutoff else "reversed" if self.t < -self.cutoff else "within noise"

    def rules_out(self, effect: float) -> bool:
        """Whether a "within noise" verdict excludes a true gap of ``effect``: ``|effect| >= detectable``."""
        return abs(float(effect)) >= self.detectable

    def __str__(self) -> str:
        return (f"gap {fmt.value(self.mean, 2)} ± {fmt.value(self.se, 2)} (se, n = {self.n}), t = {fmt.value(self.t, 2)}"
                f" against ±{fmt.value(self.cutoff, 3)}: {self.verdict}; smallest gap detected with 80 % power "
                f"{fmt.value(self.detectable, 2)}")


def paired_test(a, b, *, alpha: float = ALPHA, tests: int = 1, power: float = 0.8) -> PairedTest:
    r"""Paired t-test of ``a - b`` over seeds, two-sided, at ``alpha`` Bonferroni-corrected over ``tests``.

    The verdict is ``"holds"`` when :math:`t = \bar d / \mathrm{se}(d) >` :func:`t_cutoff` ``(n - 1, alpha,
    tests)``, ``"reversed"`` below minus it, else ``"within noise"``; ``detectable`` is the smallest true gap the
    test finds with probability ``power`` (:math:`(t_{\rm cut} + t_{\rm power, n-1})\,\mathrm{se}`), the
    power statement a "no difference" verdict needs.
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"a and b must hold the same number (>= 2) of paired values; got {a.size} and {b.size}.")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("a and b must be finite.")
    if not (isinstance(power, (int, float)) and 0.5 <= power < 1):
        raise ValueError(f"power must lie in [0.5, 1); got power = {power!r}.")
    d = a - b
    n = d.size
    se = float(d.std(ddof=1) / math.sqrt(n))
    mean = float(d.mean())
    cutoff = t_cutoff(n - 1, alpha=alpha, tests=tests)
    from scipy.stats import t as student

    detectable = (cutoff + float(student.ppf(power, n - 1))) * se
    tval = mean / se if se > 0 else math.copysign(math.inf, mean) if mean else 0.0
    return PairedTest(n, mean, se, tval, cutoff, detectable, int(tests))


def detectable_difference(sd_a: float, n_a: int, sd_b: float, n_b: int, *, k: float = AGREEMENT_K, power: float = 0.8) -> float:
    r"""The smallest true difference of two means that a "differs by more than :math:`k` se" test detects with ``power``.

    :math:`(k + z_{\rm power})\sqrt{\mathrm{sd}_a^2/n_a + \mathrm{sd}_b^2/n_b}` (normal approximation). A claim of
    "no difference" is only made when this is below the effect the paper reports.
    """
    sd_a, sd_b, n_a, n_b = _sd("sd_a", sd_a), _sd("sd_b", sd_b), _n("n_a", n_a), _n("n_b", n_b)
    if not (isinstance(power, (int, float)) and 0.5 <= power < 1):
        raise ValueError(f"power must lie in [0.5, 1); got power = {power!r}.")
    from statistics import NormalDist

    return (k + NormalDist().inv_cdf(power)) * math.sqrt(sd_a ** 2 / n_a + sd_b ** 2 / n_b)
