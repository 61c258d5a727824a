"""Panels that move without a kernel: precompute every chapter panel's figures and ship them with the HTML book.

For each registered panel (a :class:`clbook.widgets.PanelSpec` in the ``PANELS`` of a ``clbook.viz`` submodule) this
draws the panel's own figure function at its controls' initial values and at a grid of each control's values with
the others at their initial values (:func:`clbook.widgets.frame_grid`), and writes the PNGs and a manifest to
``book/_static/frames/<notebook>/``. The book's Sphinx extension (``book/_ext/clbook_sphinx.py``) puts a player over
the chapter's live panel: the same controls, switching between the stored frames in the browser. The live panel
(in a kernel) and the frames use the same controls and the same figure function.

    python tools/frames.py            # `make frames`: every chapter (a few minutes)
    python tools/frames.py ch06_one_layer ...
    python tools/frames.py --check    # exit 1 when a manifest is stale (the package's sources changed)

Each manifest records a hash of the package's sources; ``tests/structure/test_frames.py`` fails when it is stale.
"""
from __future__ import annotations

import hashlib
import importlib
import io
import json
import pkgutil
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbtools  # noqa: E402

ROOT = nbtools.ROOT
FRAMES = ROOT / "book" / "_static" / "frames"
DPI = 80
MAX_BYTES_PER_CHAPTER = 5_000_000


def source_hash() -> str:
    """A hash of every source file of the package (what a frame can depend on), stable across machines."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "clbook").rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def registered() -> dict:
    """``{chapter title: PanelSpec}`` of every registered panel."""
    import clbook.viz
    from clbook import widgets

    found = {}
    for info in pkgutil.iter_modules(clbook.viz.__path__, "clbook.viz."):
        for spec in getattr(importlib.import_module(info.name), "PANELS", ()):
            if isinstance(spec, widgets.PanelSpec):
                found.setdefault(spec.chapter, spec)
    return found


def chapter_of(path: Path) -> str:
    """The chapter title a notebook reports (``verify.report("Chapter 6")``)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in reversed(nb["cells"]):
        text = "".join(cell["source"])
        if "verify.report(" in text:
            return text.split("verify.report(", 1)[1].split(")", 1)[0].strip().strip("\"'")
    raise SystemExit(f"{path}: no verify.report cell")


def render(spec, values: dict) -> bytes:
    import matplotlib.pyplot as plt

    fig = spec.figure(**values)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def build(path: Path, spec, digest: str) -> dict:
    from clbook import widgets

    folder = FRAMES / path.stem
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    grid = widgets.frame_grid(spec.controls())
    frames, seconds = {}, []
    for k, (key, values) in enumerate(grid["frames"].items()):
        start = time.perf_counter()
        (folder / f"{k}.png").write_bytes(render(spec, values))
        seconds.append(time.perf_counter() - start)
        frames[key] = f"{k}.png"
    size = sum(p.stat().st_size for p in folder.glob("*.png"))
    manifest = dict(chapter=spec.chapter, notebook=path.stem, figure=f"{spec.figure.__module__}.{spec.figure.__name__}",
                    source_hash=digest, dpi=DPI, controls=grid["controls"], frames=frames, bytes=size)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{path.stem}: {len(frames)} frames, {size / 1e6:.2f} MB, {sum(seconds):.1f} s "
          f"(slowest {max(seconds):.2f} s)")
    if size > MAX_BYTES_PER_CHAPTER:
        raise SystemExit(f"{path.stem}: {size / 1e6:.1f} MB of frames (budget {MAX_BYTES_PER_CHAPTER / 1e6:.0f} MB)")
    return manifest


def main(argv: list[str]) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import clbook

    digest = source_hash()
    chapters = {p.stem: p for p in nbtools.chapters()}
    if argv == ["--check"]:
        stale = [stem for stem in chapters if not (FRAMES / stem / "manifest.json").exists()
                 or json.loads((FRAMES / stem / "manifest.json").read_text())["source_hash"] != digest]
        print("stale or missing frames: " + (", ".join(stale) or "none"))
        return 1 if stale else 0
    unknown = [a for a in argv if a not in chapters]
    if unknown:
        raise SystemExit(f"unknown chapters {unknown}; choose from {sorted(chapters)}")
    panels = registered()
    for stem in argv or chapters:
        title = chapter_of(chapters[stem])
        if title not in panels:
            raise SystemExit(f"{stem}: no registered panel for {title!r} (a PanelSpec in a clbook.viz PANELS)")
        clbook.setup(seed=0, device="cpu", threads=1)
        build(chapters[stem], panels[title], digest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
