"""Small fixes to the HTML that Jupyter Book 1 writes, so that pages load without console errors.

- sphinx-thebe 0.3.1 registers its inline configuration script twice with sphinx-book-theme
  1.3.0, so every page declares ``const THEBE_JS_URL`` twice (a SyntaxError in the browser).
  Identical inline scripts are emitted once.
- pydata-sphinx-theme logs "Got invalid theme mode" on a first visit unless a default mode is
  set; the book sets ``default_mode: light``.
- Panels that move without a kernel: on a chapter page with precomputed frames
  (``book/_static/frames/<notebook>/manifest.json``, written by ``tools/frames.py``), the player (the panel's
  controls over its stored frames, ``clbook-player.js``) is put before the stored live panel, which stays in the
  page for a running kernel but is hidden.
"""
import html
import json
import re
from pathlib import Path

FRAMES = Path(__file__).resolve().parents[1] / "_static" / "frames"
NOTE = ("Precomputed frames, no kernel needed: each control moves alone, the others at their initial values. Run the "
        "chapter (Colab, Binder, locally) to move them together.")


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        # an inline script has filename None or "" depending on who added it
        filename = getattr(script, "filename", script) or ""
        key = (str(filename), tuple(sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items())))
        if key in seen:
            continue
        seen.add(key)
        kept.append(script)
    context["script_files"] = kept


def _default_mode(app, pagename, templatename, context, doctree):
    if not context.get("default_mode"):
        context["default_mode"] = "light"


def player(manifest: dict, base: str) -> str:
    """The HTML of one panel's player: its stored frames, its controls (built by clbook-player.js)."""
    spec = dict(base=base, controls=manifest["controls"], frames=manifest["frames"])
    first = base + manifest["frames"][""]
    return (f'<div class="clbook-player" data-chapter="{html.escape(manifest["chapter"])}" '
            f"data-spec='{html.escape(json.dumps(spec), quote=True)}'>"
            '<div class="clbook-player-controls"></div>'
            f'<img class="clbook-player-frame" src="{first}" alt="{html.escape(manifest["chapter"])}: the panel\'s figure">'
            f'<p class="clbook-player-note">{NOTE}</p></div>')


_LIVE = re.compile(r'<div class="(cell [^"]*tag_nbval-ignore-output[^"]*)"')


def _frames(app, pagename, templatename, context, doctree):
    manifest_path = FRAMES / pagename.rsplit("/", 1)[-1] / "manifest.json"
    body = context.get("body")
    if not body or not manifest_path.exists():
        return
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for match in _LIVE.finditer(body):
        following = body[match.end():].split('<div class="cell ', 1)[0]
        if "application/vnd.jupyter.widget-view+json" in following:
            base = "../" * pagename.count("/") + f"_static/frames/{manifest['notebook']}/"
            opening = f'<div class="{match.group(1)} clbook-live-panel"'
            context["body"] = body[:match.start()] + player(manifest, base) + opening + body[match.end():]
            return


def setup(app):
    app.connect("html-page-context", _default_mode)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    app.connect("html-page-context", _frames)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
