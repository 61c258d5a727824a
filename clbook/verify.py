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

__all__ = [
    "CheckRecord", "check", "records", "clear", "report", "collect", "LABEL_PATTERN", "format_number", "format_error", "chapters_in_toc",
]

LABEL_PATTERN = re.compile(r"^(acl|nonlin|esser|pokle)-(def|asm|lem|thm|cor|prop|rem|conj|ex|eq)-[0-9A-Za-z.]+$")
PAPERS = {"acl": "Tian 2022 (α-CL)", "nonlin": "Tian 2023 (nonlinearity)", "esser": "Esser et al. 2023", "pokle": "Pokle et al. 2022"}
METADATA_KEY = "clbook_checks"


@dataclass(frozen=True)
class CheckRecord:
    """One validation: what was predicted, what was measured, under which tolerance."""

    label: str
    quantity: str
    predicted: str
    measured: str
    tolerance: str
    error: float
    passed: bool
    seconds: float

    @property
    def paper(self) -> str:
        return PAPERS[self.label.split("-")[0]]


_records: list[CheckRecord] = []
_last = time.perf_counter()


def format_number(x: float, digits: int = 4) -> str:
    """Round for display: at most ``digits`` significant digits, scientific notation when small."""
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        return f"{x:.{digits}g}"
    return f"{x:.{max(digits - 2, 1)}e}"


ROUNDING_LEVEL = 1e-13
"""Below this magnitude a displayed number is shown as "< 1e-13": float64 rounding noise that
differs between thread counts and devices, so printing it would make stored outputs unstable."""


def format_error(x: float, digits: int = 2) -> str:
    """Format an error or a small quantity; magnitudes below :data:`ROUNDING_LEVEL` print as ``< 1e-13``."""
    x = float(x)
    if math.isfinite(x) and abs(x) < ROUNDING_LEVEL:
        return "< 1e-13"
    return format_number(x, digits)


def _to_array(name, value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number, array or tensor; got {type(value).__name__}.") from exc
    return arr


def _describe(arr: np.ndarray) -> str:
    if arr.size == 1:
        return format_error(arr.reshape(()), 4)
    return f"[{arr.size} values, {format_error(arr.min(), 4)} … {format_error(arr.max(), 4)}]"


def check(label: str, quantity: str, predicted=None, measured=None, *, rtol: float = 0.0, atol: float = 0.0,
          bound: float | None = None, lower: float | None = None) -> CheckRecord:
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
        The stated result, in the convention ``<paper>-<kind>-<number>`` (e.g. ``"acl-thm-1"``).
    quantity : str
        What is compared, in words, e.g. ``"relative gradient difference"``.

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
    if measured is None:
        raise ValueError("measured is required.")
    m = _to_array("measured", measured)
    if not np.all(np.isfinite(m)):
        raise AssertionError(f"{label}: {quantity}: the measurement contains NaN or inf.")
    if bound is not None or lower is not None:
        if predicted is not None:
            raise ValueError("give either predicted (with rtol/atol) or bound/lower, not both.")
        hi = math.inf if bound is None else float(bound)
        lo = -math.inf if lower is None else float(lower)
        ok = bool(np.all((m >= lo) & (m <= hi)))
        error = float(np.max(m)) if bound is not None else float(np.min(m))
        pred = " and ".join(s for s in (f"≥ {format_number(lo)}" if lower is not None else "",
                                        f"≤ {format_number(hi)}" if bound is not None else "") if s)
        tol = pred
        meas = _describe(m)
    else:
        if predicted is None:
            raise ValueError("give predicted (with rtol/atol) or a bound.")
        if rtol < 0 or atol < 0 or not (math.isfinite(rtol) and math.isfinite(atol)):
            raise ValueError(f"rtol and atol must be finite and >= 0; got rtol = {rtol}, atol = {atol}.")
        if rtol == 0 and atol == 0:
            raise ValueError("state a tolerance: rtol or atol must be > 0.")
        p = _to_array("predicted", predicted)
        try:
            p, mb = np.broadcast_arrays(p, m)
        except ValueError as exc:
            raise ValueError(f"predicted and measured shapes differ: {p.shape} vs {m.shape}.") from exc
        diff = np.abs(mb - p)
        allowed = atol + rtol * np.abs(p)
        ok = bool(np.all(diff <= allowed))
        error = float(np.max(diff)) if diff.size else 0.0
        pred, meas = _describe(p), _describe(mb)
        tol = " + ".join(s for s in (f"atol {format_number(atol)}" if atol else "",
                                     f"rtol {format_number(rtol)}" if rtol else "") if s)
    now = time.perf_counter()
    record = CheckRecord(label, quantity, pred, meas, tol, error, ok, now - _last)
    _last = now
    if not ok:
        raise AssertionError(
            f"{label} failed: {quantity}: predicted {pred}, measured {meas}, tolerance {tol}; "
            f"largest deviation {format_error(error)}."
        )
    _records.append(record)
    return record


def records() -> list[CheckRecord]:
    """The records of the checks that passed since the last :func:`clear`."""
    return list(_records)


def clear() -> None:
    """Forget the records (``clbook.setup`` does not; a chapter calls this once at its start)."""
    global _last
    _records.clear()
    _last = time.perf_counter()


def _table_rows(recs):
    return [(r.label, r.quantity, r.predicted, r.measured, r.tolerance, "✓" if r.passed else "✗") for r in recs]


class Report:
    """The display of one chapter's checks (text and HTML); the metadata carries the records."""

    header = ("result", "quantity", "prediction", "measurement", "tolerance", "")

    def __init__(self, chapter: str, recs: list[CheckRecord], seconds: float):
        self.chapter, self.recs, self.seconds = chapter, recs, seconds

    def _repr_mimebundle_(self, include=None, exclude=None):
        rows = _table_rows(self.recs)
        text = "\n".join(" | ".join(row) for row in rows)
        text = f"{len(rows)} checks passed in {self.chapter}:\n{text}"
        cells = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        head = "".join(f"<th>{h}</th>" for h in self.header)
        table = f'<table class="clbook-checks"><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>'
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


def chapters_in_toc(toc) -> list[Path]:
    """The chapter notebooks a Jupyter Book ``_toc.yml`` lists, in order (the dashboard itself excluded)."""
    toc = Path(toc)
    root = toc.parent
    out = []
    for name in re.findall(r"^\s*-?\s*(?:file|root):\s*([^\s#]+)", toc.read_text(encoding="utf-8"), flags=re.M):
        path = root / (name if name.endswith(".ipynb") else name + ".ipynb")
        if path.is_file() and path.stem != "verification":
            out.append(path)
    return out


def collect(paths) -> list[dict]:
    """Read the check records stored in the outputs of executed chapter notebooks.

    Returns one dict per chapter: ``{"chapter", "path", "seconds", "records"}``; a notebook
    without a report contributes ``records = []``.
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
                    found.update(chapter=meta["chapter"], seconds=meta["seconds"], records=meta["records"])
        out.append(found)
    return out
