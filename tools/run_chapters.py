"""Run chapter notebooks as a reader would, each alone in an empty folder, and report (used by tools/readers.py).

Runs inside the reader's virtual environment (Colab-like or Binder-like), whose only extra packages are nbclient and
ipykernel, the harness that stands in for Colab's or Binder's own kernel. For each chapter: copy the notebook alone
into a fresh temporary folder outside the repository, execute every cell in one kernel, then execute every cell a
second time in the same kernel and compare the text outputs of the two passes (a chapter that runs twice in one
kernel must print the same numbers). Writes a JSON report; exit status 1 if any chapter fails.

    python tools/run_chapters.py --report out.json [--twice] [--parallel 2] chapter.ipynb ...
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

SANITIZE = [(re.compile(r"/tmp/ipykernel_\d+/\d+\.py"), "IPYKERNEL_CELL"), (re.compile(r"at 0x[0-9a-f]+"), "at 0xADDR")]


def _text(cell) -> str:
    if "nbval-ignore-output" in cell.metadata.get("tags", []):
        return ""
    text = ""
    for o in cell.get("outputs", []):
        # One print can arrive as several stream messages (the kernel flushes on a timer), and where the cut falls
        # differs between runs: stream pieces are joined as they came, as nbval's coalescing does; warnings are shown
        # once per session and go to stderr, numbers go to stdout.
        if o.output_type == "stream" and o.get("name") != "stderr":
            text += o.text
        elif o.output_type in ("display_data", "execute_result"):
            text += "".join(f"\n{v if isinstance(v, str) else ''.join(v)}\n"
                            for m, v in o.get("data", {}).items() if m.startswith("text/"))
    for pattern, replacement in SANITIZE:
        text = pattern.sub(replacement, text)
    return text


def run_one(source: Path, twice: bool, timeout: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="clbook-reader-"))
    path = folder / source.name
    shutil.copy(source, path)
    nb = nbformat.read(path, as_version=4)
    result = {"chapter": source.name, "status": "ok", "seconds": None, "second_pass_differs": [], "error": ""}
    # A local socket (no TCP warning from ipykernel), at an absolute path: a relative one would be resolved in the
    # client's and in the kernel's working directory (the chapter's folder), which differ, and the kernel never answers.
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(folder / "kernel-ipc"))
    client = NotebookClient(nb, km=km, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    # The kernel's own stderr (ipykernel's shutdown warnings, one per kernel) goes to a log beside the chapter; its
    # tail joins the report when the chapter fails, so the harness's output stays the report's.
    log = (folder / "kernel.log").open("w")
    try:
        with client.setup_kernel(stderr=log, stdout=log):
            start = time.perf_counter()
            for index, cell in enumerate(nb.cells):
                if cell.cell_type == "code":
                    client.execute_cell(cell, index)
            result["seconds"] = round(time.perf_counter() - start, 1)
            if twice:
                first = [_text(c) for c in nb.cells]
                for index, cell in enumerate(nb.cells):
                    if cell.cell_type == "code":
                        client.execute_cell(cell, index)
                second = [_text(c) for c in nb.cells]
                result["second_pass_differs"] = [k for k, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
                if result["second_pass_differs"]:
                    result["status"] = "differs on a second run in the same kernel"
                    result["differences"] = {k: [first[k][-1500:], second[k][-1500:]] for k in result["second_pass_differs"]}
    except CellExecutionError as exc:
        result["status"] = "error"
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        result["error"] = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(lines[-6:]))[-1500:]
    except Exception as exc:  # the kernel did not start or died: a failed chapter, reported like the others
        result["status"] = "error"
        log.flush()
        tail = (folder / "kernel.log").read_text(errors="replace").strip().splitlines()[-8:]
        result["error"] = f"{type(exc).__name__}: {exc}\n" + "\n".join(tail)
    finally:
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="+", type=Path)
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--twice", action="store_true", help="run every chapter a second time in the same kernel and compare")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=600)
    args = parser.parse_args(argv)
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        results = list(pool.map(lambda p: run_one(p.resolve(), args.twice, args.timeout), args.chapters))
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(results, indent=1))
    for r in results:
        extra = f" (cells {r['second_pass_differs']})" if r["second_pass_differs"] else ""
        print(f"{r['chapter']}: {r['status']}{extra}, {r['seconds']} s")
        if r["error"]:
            print("    " + r["error"].replace("\n", "\n    "))
        for k, (a, b) in r.get("differences", {}).items():
            print(f"    cell {k}, first pass: {a[-300:]!r}\n    cell {k}, second pass: {b[-300:]!r}")
    failed = [r for r in results if r["status"] != "ok"]
    if failed:  # again at the end, where a log's tail shows it
        print(f"{len(failed)} of {len(results)} chapters failed: " + "; ".join(f"{r['chapter']} ({r['status']})" for r in failed))
        for r in failed:
            print(f"  {r['chapter']}: {r['error'][-600:] or r.get('differences')}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
