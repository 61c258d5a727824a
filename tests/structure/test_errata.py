"""Every Errata entry quotes the paper and says what kind of problem it is (the audit's format)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("erratum", "typo", "gap", "refinement", "convention", "not reproduced")
PAGES = sorted((ROOT / "book" / "errata").glob("*.md"))


def entries(page: Path) -> list[tuple[str, str]]:
    parts = re.split(r"\n### ", page.read_text())[1:]
    return [(p.split("\n", 1)[0], p) for p in parts]


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_every_entry_quotes_the_paper_and_names_its_kind(page):
    found = entries(page)
    assert found, f"{page.name} has no entries"
    for title, body in found:
        assert "**Paper says.**" in body, f"{page.name}: '{title}' does not quote the paper (**Paper says.**; CONTRIBUTING.md, 'Errata')"
        kind = re.search(r"\*\*Kind\.\*\*\s*([a-z ]+)", body)
        assert kind and kind.group(1).strip() in KINDS, f"{page.name}: '{title}' has no **Kind.** among {KINDS} (CONTRIBUTING.md, 'Errata')"
        assert "{ref}`" in body, f"{page.name}: '{title}' points to no chapter with its evidence (CONTRIBUTING.md, 'Errata')"
