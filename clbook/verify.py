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
    "CheckRecord", "KINDS", "check", "records", "clear", "report", "collect", "summarise", "LABEL_PATTERN",
    "AGREEMENT_K", "Agreement", "agreement", "TableComparison", "compare_table", "detectable_difference",
]

LABEL_PATTERN = re.compile(r"^(acl|nonlin|esser|pokle)-(def|asm|lem|thm|cor|prop|rem|conj|ex|eq|fig|tab)-[0-9A-Za-z.]+$")
PAPERS = {"acl": "Tian 2022 (α-CL)", "nonlin": "Tian 2023 (nonlinearity)", "esser": "Esser et al. 2023", "pokle": "Pokle et al. 2022"}
METADATA_KEY = "clbook_checks"
KINDS = ("live", "stored", "illustration")
"""The kinds of check:

* ``live``: computed in this run, by a path independent of the prediction (it can fail);
* ``stored``: reads a committed experiment result (``source``, e.g. ``"landscape/table2-independent"`` in
  :mod:`clbook.results`), which ``python -m clbook.experiments.<experiment>`` recomputes;
* ``illustration``: an identity or a construction shown for teaching; it is not evidence, and a result whose
  only checks are illustrations is listed as not checked.
"""


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

    @property
    def paper(self) -> str:
        return PAPERS[self.label.split("-")[0]]


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
          floor: float | None = None) -> CheckRecord:
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

    Returns
    -------
    CheckRecord
        Also appended to :func:`records`.
    """
    global _last
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
    counted = _is_count(measured)
    m = _to_array("measured", measured)
    if m.size == 0:
        raise ValueError("measured is empty: there is nothing to check.")
    if not np.all(np.isfinite(m)):
        raise AssertionError(f"{label}: {quantity}: the measurement contains NaN or inf.")
    if bound is not None or lower is not None:
        if predicted is not None:
            raise ValueError("give either predicted (with rtol/atol) or bound/lower, not both.")
        hi = math.inf if bound is None else float(bound)
        lo = -math.inf if lower is None else float(lower)
        ok = bool(np.all((m >= lo) & (m <= hi)))
        error = float(np.max(m)) if bound is not None else float(np.min(m))
        show_floor = floor if floor is not None else (min(hi, fmt.FLOORS[torch.float64]) if bound is not None and lower is None
                                                      and hi > 0 and not counted else None)
        pred = " and ".join(s for s in (f"≥ {fmt.value(lo)}" if lower is not None else "",
                                        f"≤ {fmt.value(hi)}" if bound is not None else "") if s)
        tol = pred
        meas = _describe(m, show_floor)
    else:
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
        allowed = atol + rtol * np.abs(p)
        ok = bool(np.all(diff <= allowed))
        error = float(np.max(diff)) if diff.size else 0.0
        show_floor = floor if floor is not None else (atol if atol > 0 else None)
        pred, meas = _describe(p, None if not np.any(p) else show_floor), _describe(mb, show_floor)
        tol = " + ".join(s for s in (f"atol {fmt.value(atol, 1)}" if atol else "",
                                     f"rtol {fmt.value(rtol, 1)}" if rtol else "") if s)
    now = time.perf_counter()
    record = CheckRecord(label, quantity, pred, meas, tol, error, ok, now - _last, kind, source)
    _last = now
    if not ok:
        raise AssertionError(
            f"{label} failed: {quantity}: predicted {pred}, measured {meas}, tolerance {tol}; "
            f"largest deviation {fmt.value(error)}."
        )
    _records.append(record)
    return record


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
    """Forget the records (``clbook.setup`` does not; a chapter calls this once at its start)."""
    global _last
    _records.clear()
    _last = time.perf_counter()


def _table_rows(recs):
    return [(r.label, r.quantity, r.predicted, r.measured, r.tolerance, r.kind, "✓" if r.passed else "✗") for r in recs]


def summarise(recs) -> dict:
    """Counts per kind and the status of each labelled result, from records (objects or the dicts in metadata).

    Returns ``{"counts": {kind: n}, "status": {label: status}}`` with status ``"live"`` (at least one live
    check), ``"stored only"`` (evidence only from stored results) or ``"not checked"`` (illustrations only).
    """
    counts = {k: 0 for k in KINDS}
    kinds_by_label: dict[str, set] = {}
    for r in recs:
        kind = r["kind"] if isinstance(r, dict) else r.kind
        label = r["label"] if isinstance(r, dict) else r.label
        counts[kind] += 1
        kinds_by_label.setdefault(label, set()).add(kind)
    status = {label: "live" if "live" in ks else "stored only" if "stored" in ks else "not checked"
              for label, ks in kinds_by_label.items()}
    return {"counts": counts, "status": status}


class Report:
    """The display of one chapter's checks (text and HTML); the metadata carries the records."""

    header = ("result", "quantity", "prediction", "measurement", "tolerance", "kind", "")

    def __init__(self, chapter: str, recs: list[CheckRecord], seconds: float):
        self.chapter, self.recs, self.seconds = chapter, recs, seconds

    def _summary_lines(self) -> list[str]:
        info = summarise(self.recs)
        c = info["counts"]
        lines = [f"{len(self.recs)} checks passed in {self.chapter}: {c['live']} live, {c['stored']} on stored results, "
                 f"{c['illustration']} illustrations (not evidence)."]
        stored = sorted(k for k, v in info["status"].items() if v == "stored only")
        unchecked = sorted(k for k, v in info["status"].items() if v == "not checked")
        if stored:
            lines.append("Resting only on stored results: " + ", ".join(stored) + ".")
        if unchecked:
            lines.append("Not checked (illustrations only): " + ", ".join(unchecked) + ".")
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
                               "records": [asdict(r) for r in self.recs]}}
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

    Returns one dict per chapter: ``{"chapter", "path", "seconds", "records"}``; a notebook
    without a report contributes ``records = []``. Records stored before check kinds existed read as ``live``.
    """
    out = []
    for path in paths:
        path = Path(path)
        nb = json.loads(path.read_text(encoding="utf-8"))
        found = {"chapter": path.stem, "path": str(path), "seconds": None, "records": []}
        for cell in nb.get("cells", []):
            for output in cell.get("outputs", []):
                meta = output.get("metadata", {}).get(METADATA_KEY)
                if meta:
                    found.update(chapter=meta["chapter"], seconds=meta["seconds"],
                                 records=[{"kind": "live", "source": ""} | r for r in meta["records"]])
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
        return len(self.cells)

    @property
    def n_agree(self) -> int:
        return sum(c.agrees for c in self.cells)

    @property
    def disagreeing(self) -> list[Agreement]:
        return [c for c in self.cells if not c.agrees]

    @property
    def k_family(self) -> float:
        """The allowance factor for the whole table: Bonferroni's :math:`\\Phi^{-1}(1 - 0.05/(2n))` over ``n`` cells."""
        from statistics import NormalDist

        return NormalDist().inv_cdf(1 - 0.05 / (2 * self.n_cells))

    @property
    def reproduced(self) -> bool:
        """True when every cell agrees within :attr:`k_family` standard errors (a 5 % family-wise test)."""
        return all(abs(c.delta) <= c.allowed * self.k_family / self.k for c in self.cells)

    def summary(self) -> str:
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
