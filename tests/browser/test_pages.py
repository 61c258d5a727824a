"""Open every page of the built book in a real browser (Debian's Chromium driven by Playwright).

Run after `jupyter-book build`. Serves _build/html on 127.0.0.1, blocks every request that
leaves the machine, and fails on: a console error, a failed or 4xx/5xx request to the local
server, math left unrendered or rendered with an error, a broken image, an unresolved
cross-reference, a notebook page whose stored widget views render nothing. Saves a screenshot
of every page under _build/screenshots/ and prints one line per page.
"""
import functools
import http.server
import json
import shutil
import statistics
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

playwright = pytest.importorskip("playwright.sync_api")

PAGES = sorted(str(p.relative_to(HTML)) for p in HTML.rglob("*.html")
               if not p.relative_to(HTML).parts[0].startswith(("_", "genindex", "search", "prf"))
               and p.name not in {"genindex.html", "search.html"}) if HTML.exists() else []


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    if not PAGES:
        pytest.fail("no built book in _build/html: run `jupyter-book build .` first")
    handler = functools.partial(_Quiet, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is not installed (make test installs Debian's chromium)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


_summary = []

INSPECT = """() => {
  const math = document.querySelectorAll('.math, span.math, div.math');
  const rendered = document.querySelectorAll('mjx-container');
  const errors = document.querySelectorAll('mjx-merror, merror, .MathJax_Error');
  const rawTex = [...math].filter(el => !el.querySelector('mjx-container') && /\\\\[a-zA-Z]+/.test(el.textContent)).length;
  const broken = [...document.images].filter(img => img.complete && img.naturalWidth === 0).map(img => img.src);
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  const widgets = document.querySelectorAll('.jupyter-widgets, .widget-slider, .widget-dropdown, .widget-checkbox').length;
  const unresolved = [...document.querySelectorAll('span.xref, .problematic')].map(el => el.textContent).slice(0, 5);
  return {math: math.length, rendered: rendered.length, errors: errors.length, rawTex, broken, views, widgets, unresolved};
}"""


# Code that scrolls sideways at the default width (1280 x 900): every visible code block (chapter cells, the API's
# docstring examples, the assignments' and run page's shell lines) and the API page's generated signatures (one
# parameter a line past 80 characters: maximum_signature_line_length in _config.yml). A command that must stay one
# line wraps softly instead (the class clbook-wrap).
WIDE = """() => {
  const wide = sel => [...document.querySelectorAll(sel)]
    .filter(el => el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1);
  const longest = text => text.split('\\n').reduce((a, b) => a.length >= b.length ? a : b, '').slice(0, 100);
  return {code: wide('div.cell_input pre, div.highlight pre').map(pre => longest(pre.textContent)),
          signatures: wide('dt.sig').map(el => el.textContent.replace(/\\s+/g, ' ').slice(0, 100))};
}"""


@pytest.mark.parametrize("page", PAGES)
def test_page(page, server, browser):
    """The page loads offline without console errors or failed requests, its formulas render, its stored widgets show,
    and none of its code scrolls sideways (WIDE)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    console, failed, external = [], [], []

    def route(r):
        if r.request.url.startswith(server):
            return r.continue_()
        external.append(r.request.url)
        return r.abort()

    context.route("**/*", route)
    tab = context.new_page()
    blocked = "Failed to load resource: net::ERR_FAILED"
    tab.on("console", lambda m: console.append(m.text) if m.type == "error" and not m.text.startswith(blocked) else None)
    tab.on("pageerror", lambda e: console.append(f"uncaught: {e}"))
    tab.on("requestfailed", lambda r: failed.append(r.url) if r.url.startswith(server) else None)
    tab.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.url.startswith(server) and r.status >= 400 else None)
    start = time.perf_counter()
    tab.goto(f"{server}/{page}", wait_until="load")
    tab.wait_for_function("() => !window.MathJax || !window.MathJax.startup || window.MathJax.startup.promise", timeout=20000)
    tab.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    views = "script[type=\"application/vnd.jupyter.widget-view+json\"]"
    has_views = tab.evaluate(f"() => document.querySelectorAll('{views}').length")
    if has_views:
        # attached, not visible: under a frame player the stored live panel is kept in the page but hidden
        tab.wait_for_selector(".jupyter-widgets", state="attached", timeout=20000)
    seconds = time.perf_counter() - start
    info = tab.evaluate(INSPECT)
    wide = tab.evaluate(WIDE)
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / (page.replace("/", "__").replace(".html", ".png"))), full_page=False)
    context.close()
    line = (f"{page}: {seconds * 1000:.0f} ms, formulas {info['rendered']}/{info['math']} rendered, "
            f"widgets {info['widgets']} rendered for {info['views']} stored views")
    print(line)
    _summary.append({"page": page, "ms": round(seconds * 1000), **info, "external_blocked": external})
    assert not console, f"{page}: console errors: {console[:5]}"
    assert not failed, f"{page}: failed local requests: {failed[:5]}"
    assert info["errors"] == 0, f"{page}: {info['errors']} formulas rendered with an error"
    assert info["rawTex"] == 0, f"{page}: {info['rawTex']} formulas left as raw LaTeX"
    assert info["rendered"] >= info["math"], f"{page}: only {info['rendered']} of {info['math']} formulas rendered"
    assert not info["broken"], f"{page}: broken images {info['broken'][:3]}"
    assert not info["unresolved"], f"{page}: unresolved cross-references {info['unresolved']}"
    if info["views"]:
        assert info["widgets"] > 0, f"{page}: {info['views']} stored widget views but no widget rendered"
    assert not wide["code"], f"{page}: {len(wide['code'])} code blocks scroll sideways, e.g. the line {wide['code'][0]!r}"
    assert not wide["signatures"], f"{page}: {len(wide['signatures'])} signatures scroll sideways: {wide['signatures'][0]!r}"


def teardown_module(module):
    if _summary:
        times = [row["ms"] for row in _summary]
        report = {"pages": len(_summary), "median_ms": statistics.median(times), "pages_detail": _summary}
        (ROOT / "_build" / "browser-report.json").write_text(json.dumps(report, indent=1))
        print(f"\n{len(_summary)} pages, median load {statistics.median(times):.0f} ms; screenshots in {SHOTS.relative_to(ROOT)}")


FRAMES = ROOT / "book" / "_static" / "frames"
CHAPTER_PAGES = {p.parent.name + "/" + p.stem: p for p in (ROOT / "book").glob("part*/*.ipynb")}

MOVE = """async ([name, index]) => {
  const player = document.querySelector('.clbook-player');
  const input = player.querySelector(`[data-control="${name}"]`);
  input.value = String(index);
  player.removeAttribute('data-last-ms');
  input.dispatchEvent(new Event('input'));
  const img = player.querySelector('img.clbook-player-frame');
  for (let k = 0; k < 200 && !player.hasAttribute('data-last-ms'); k++) await new Promise(r => setTimeout(r, 5));
  return {src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0,
          ms: Number(player.getAttribute('data-last-ms')), key: player.getAttribute('data-key')};
}"""


@pytest.mark.parametrize("chapter", sorted(CHAPTER_PAGES))
def test_panel_moves_without_a_kernel(chapter, server, browser):
    """Every control of the chapter's panel, moved to every stored value in the built HTML (no kernel): the frame
    shown is the stored frame of that value, and it shows within 100 ms of the move. As a reader meets it: the player
    is scrolled into view first, which fetches its frames (the wait for them is not part of a move's time)."""
    manifest = json.loads((FRAMES / chapter.split("/")[1] / "manifest.json").read_text())
    page = f"book/{chapter}.html"
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(server) else r.abort())
    tab = context.new_page()
    tab.goto(f"{server}/{page}", wait_until="load")
    assert tab.locator(".clbook-player").count() == 1, f"{page}: no frame player over the panel"
    tab.locator(".clbook-player").scroll_into_view_if_needed()
    tab.wait_for_selector(".clbook-player[data-preloaded]", state="attached", timeout=20_000)
    slowest = 0.0
    for control in manifest["controls"]:
        for index in range(len(control["labels"])):
            got = tab.evaluate(MOVE, [control["name"], index])
            key = "" if index == control["default"] else f"{control['name']}={index}"
            assert got["src"].endswith("/" + manifest["frames"][key]) and got["ok"], \
                f"{page}: {control['name']} = {control['labels'][index]} shows {got['src']}, not {manifest['frames'][key]}"
            slowest = max(slowest, got["ms"])
    tab.locator(".clbook-player").scroll_into_view_if_needed()
    tab.screenshot(path=str(SHOTS / f"player__{chapter.replace('/', '__')}.png"), full_page=False)
    context.close()
    print(f"{page}: {len(manifest['frames'])} frames, every control moved, slowest frame {slowest:.0f} ms")
    assert slowest < 100, f"{page}: a frame took {slowest:.0f} ms to show (budget 100 ms)"


