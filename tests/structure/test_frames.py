"""Panels that move without a kernel: every chapter ships fresh precomputed frames of its panel, within budget.

``tools/frames.py`` (``make frames``) renders them from the panel's own figure function and controls; the browser
test moves every control in the built HTML (tests/browser). CONTRIBUTING.md, "Chapter anatomy".
"""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import frames  # noqa: E402
import nbtools  # noqa: E402

CHAPTERS = nbtools.chapters()


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_ships_fresh_frames_of_its_panel(path):
    folder = frames.FRAMES / path.stem
    assert (folder / "manifest.json").exists(), f"{path.stem}: no precomputed frames (run `make frames`)"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["source_hash"] == frames.source_hash(), (
        f"{path.stem}: the frames were drawn by other package code (run `make frames`; CONTRIBUTING.md, 'Chapter anatomy')")
    assert manifest["chapter"] == frames.chapter_of(path)
    files = sorted(p.name for p in folder.glob("*.png"))
    assert sorted(manifest["frames"].values()) == files, f"{path.stem}: the manifest and the PNG files disagree"
    for control in manifest["controls"]:
        for k in range(len(control["labels"])):
            key = "" if k == control["default"] else f"{control['name']}={k}"
            assert key in manifest["frames"], f"{path.stem}: no frame for {control['name']} = {control['labels'][k]}"
    size = sum((folder / f).stat().st_size for f in files)
    assert size <= frames.MAX_BYTES_PER_CHAPTER, f"{path.stem}: {size / 1e6:.1f} MB of frames (budget 5 MB)"
