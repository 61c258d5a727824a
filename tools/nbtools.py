"""Book tooling: the chapter list, the Colab bootstrap cell, executing notebooks.

Used by the Makefile (``make outputs``, ``make sync``) and by tests/structure.
"""
from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP_TAG = "colab-bootstrap"


def repository_url() -> str:
    """The repository URL, from its one place: ``repository.url`` in ``_config.yml``."""
    text = (ROOT / "_config.yml").read_text(encoding="utf-8")
    match = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", text, flags=re.M)
    if not match:
        raise SystemExit("_config.yml has no repository.url")
    return match.group(1)


def toc_entries() -> list[Path]:
    """Every file that ``_toc.yml`` names, in order, resolved to an existing path."""
    text = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    out = []
    for name in re.findall(r"^\s*-?\s*(?:file|root):\s*([^\s#]+)", text, flags=re.M):
        for ext in (".ipynb", ".md"):
            if (ROOT / (name + ext)).is_file():
                out.append(ROOT / (name + ext))
                break
        else:
            raise SystemExit(f"_toc.yml names {name}, which does not exist")
    return out


def chapters() -> list[Path]:
    """The chapter notebooks (every ``.ipynb`` in the table of contents except the dashboard).

    ``CLBOOK_CHAPTERS`` (space-separated paths) overrides the list, to check a chapter before it joins ``_toc.yml``.
    """
    override = os.environ.get("CLBOOK_CHAPTERS", "").split()
    if override:
        return [(ROOT / name).resolve() for name in override]
    return [p for p in toc_entries() if p.suffix == ".ipynb" and p.stem != "verification"]


def book_url() -> str:
    """Where the book is published: ``html.baseurl`` in ``_config.yml`` (ends with a slash)."""
    text = (ROOT / "_config.yml").read_text(encoding="utf-8")
    match = re.search(r"^\s+baseurl:\s*(\S+)", text, flags=re.M)
    if not match:
        raise SystemExit("_config.yml has no html.baseurl")
    url = match.group(1)
    return url if url.endswith("/") else url + "/"


def package_version() -> str:
    """The version of clbook in this checkout (``clbook/__init__.py``), without importing it."""
    match = re.search(r'^__version__ = "([^"]+)"', (ROOT / "clbook" / "__init__.py").read_text(encoding="utf-8"), flags=re.M)
    if not match:
        raise SystemExit("clbook/__init__.py has no __version__")
    return match.group(1)


def wheel_name(version: str | None = None) -> str:
    return f"clbook-{version or package_version()}-py3-none-any.whl"


def _pieces(text: str, width: int) -> list[str]:
    """``text`` cut after a ``/`` where it can be (else every ``width`` characters) into pieces of at most ``width``."""
    pieces = []
    while len(text) > width:
        cut = text.rfind("/", 0, width) + 1 or width
        pieces.append(text[:cut])
        text = text[cut:]
    return pieces + [text]


def bootstrap_source(url: str | None = None, version: str | None = None) -> str:
    """The first cell of every chapter: install the clbook wheel this book was built with, or fail in one sentence.

    ``CLBOOK_WHEEL_URL`` overrides the address (``make colab`` serves the wheel on 127.0.0.1 and runs this very cell).
    """
    version = version or package_version()
    url = url or f"{book_url()}_static/wheels/{wheel_name(version)}"
    pieces = _pieces(url, 64)  # the address in pieces that fit the page (80 columns)
    wheel = "\n".join(("WHEEL = (" if k == 0 else "         ") + f'"{piece}"' + (")" if k == len(pieces) - 1 else "")
                      for k, piece in enumerate(pieces))
    return (
        "import os\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        f'CLBOOK = "{version}"  # the clbook this chapter was run with\n'
        f"{wheel}\n"
        "try:\n"
        "    import clbook\n"
        "    assert clbook.__version__ == CLBOOK\n"
        "except (ImportError, AssertionError):\n"
        '    wheel = os.environ.get("CLBOOK_WHEEL_URL", WHEEL)\n'
        '    print(f"Installing clbook {CLBOOK} from {wheel} (about half a minute)"\n'
        '          " ...", file=sys.stderr, flush=True)\n'
        "    pip = subprocess.run(\n"
        '        [sys.executable, "-m", "pip", "install", "-q", wheel],\n'
        "        capture_output=True, text=True)\n"
        "    if pip.returncode != 0:\n"
        '        why = (pip.stderr.strip().splitlines() or ["pip failed"])[-1]\n'
        '        raise RuntimeError(f"could not install clbook {CLBOOK} from {wheel}: "\n'
        '                           f"{why}") from None\n'
        '    if "clbook" in sys.modules:\n'
        '        raise RuntimeError(f"clbook was updated to {CLBOOK}: restart the "\n'
        '                           "kernel and run this chapter again.") from None\n'
        '    print(f"clbook {CLBOOK} installed.", file=sys.stderr, flush=True)\n'
        "    import clbook"
    )


def sync_bootstrap(path: Path) -> bool:
    """Make the chapter's first code cell the Colab bootstrap with the configured URL; True if changed."""
    nb = nbformat.read(path, as_version=4)
    source = bootstrap_source()
    for cell in nb.cells:
        if cell.cell_type == "code":
            if BOOTSTRAP_TAG not in cell.metadata.get("tags", []):
                raise SystemExit(f"{path}: the first code cell must be the Colab bootstrap (tag {BOOTSTRAP_TAG})")
            if cell.source != source:
                cell.source = source
                nbformat.write(nb, path)
                return True
            return False
    raise SystemExit(f"{path}: no code cell")


def kernel_env(extra: dict | None = None) -> dict:
    """The environment of a chapter's kernel: this process's, the CPU and one thread unless set, fixed hashing."""
    env = dict(os.environ)
    env.setdefault("CLBOOK_DEVICE", "cpu")
    env.setdefault("CLBOOK_THREADS", "1")
    env.update(PYTHONHASHSEED="0", MPLBACKEND="module://matplotlib_inline.backend_inline")
    env.update(extra or {})
    return env


def execute_notebook(nb, folder: Path, *, env: dict | None = None, timeout: int = 600, kernel_name: str = "python3"):
    """Execute ``nb`` in place in a kernel started in ``folder`` with ``kernel_env(env)``; return it."""
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, resources={"metadata": {"path": str(folder)}},
                            record_timing=False, store_widget_state=True)
    client.execute(env=kernel_env(env))
    return nb


def execute(path: Path, *, write: bool = True, timeout: int = 600, env: dict | None = None) -> float:
    """Execute a notebook on the CPU in its folder, store outputs and widget state; return seconds."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    execute_notebook(nb, path.parent, env=env, timeout=timeout)
    seconds = time.perf_counter() - start
    if write:
        nbformat.write(nb, path)
    return seconds


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"sync", "outputs", "list"}:
        print("usage: python tools/nbtools.py sync | outputs [notebook ...] | list")
        return 2
    if argv[0] == "list":
        print("\n".join(str(p.relative_to(ROOT)) for p in chapters()))
        return 0
    targets = [Path(a).resolve() for a in argv[1:]] or chapters()
    for path in chapters():
        if sync_bootstrap(path):
            print(f"synced the Colab bootstrap URL in {path.relative_to(ROOT)}")
    if argv[0] == "outputs":
        for path in targets:
            seconds = execute(path)
            print(f"{path.relative_to(ROOT)}: executed in {seconds:.1f} s")
        dashboard = ROOT / "book" / "verification.ipynb"
        if dashboard.exists() and not argv[1:]:  # the dashboard gathers every chapter: refresh it after a full run only
            execute(dashboard)
            print("book/verification.ipynb: refreshed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
