"""Every item of the Coverage page has one of its four statuses (no placeholder left)."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STATUSES = ("stated and checked", "stated, illustrated only", "reproduced", "partly reproduced", "not reproduced", "unresolved",
            "analogue", "out of scope")
PAGES = sorted((ROOT / "book" / "coverage").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_every_item_has_a_status(page):
    rows = [ln for ln in page.read_text().splitlines() if ln.startswith("| ") and not ln.startswith(("| item", "|---"))]
    assert rows, f"{page.name} lists no items"
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) >= 4, f"{page.name}: a row without item | status | where | note: {row[:80]}"
        assert cells[1].startswith(STATUSES), f"{page.name}: '{cells[0]}' has status '{cells[1][:40]}', not one of {STATUSES} (CONTRIBUTING.md, 'Coverage')"  # noqa: E501
