"""Small fixes to the HTML that Jupyter Book 1 writes, so that pages load without console errors.

- sphinx-thebe 0.3.1 registers its inline configuration script twice with sphinx-book-theme
  1.3.0, so every page declares ``const THEBE_JS_URL`` twice (a SyntaxError in the browser).
  Identical inline scripts are emitted once.
- pydata-sphinx-theme logs "Got invalid theme mode" on a first visit unless a default mode is
  set; the book sets ``default_mode: light``.
"""


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


def setup(app):
    app.connect("html-page-context", _default_mode)
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
