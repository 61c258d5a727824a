"""How fast the live panels update in a kernel: a benchmark (not a timed test), run by ``make bench``.

For every registered panel (:class:`clbook.widgets.PanelSpec`), each control is moved to every value of its frame
grid (:func:`clbook.widgets.frame_grid`: 5 values per slider, every option) with the others at their initial
values, as a reader moves it; each update is timed as the live panel performs it: the figure function, then the
PNG that the inline backend sends to the browser (``fig.savefig`` at the inline backend's resolution). Budget
(design/BOOK.md): median update at most 200 ms and none over 1 s on the 2-core machine.

    python tools/panel_bench.py [--out tools/reports/panel-latency.json] [chapter title ...]
"""
from __future__ import annotations

import argparse
import io
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import frames  # noqa: E402
import nbtools  # noqa: E402

MEDIAN_BUDGET_S, MAX_BUDGET_S = 0.2, 1.0


def measure(spec) -> dict:
    import matplotlib.pyplot as plt
    from matplotlib_inline.backend_inline import InlineBackend

    from clbook import widgets

    dpi = InlineBackend.instance().rc.get("figure.dpi", 72)
    compute, render = [], []
    grid = widgets.frame_grid(spec.controls())
    spec.figure(**grid["frames"][""])  # the panel's first draw happens when the chapter shows it: not an update
    plt.close("all")
    for key, values in grid["frames"].items():
        if not key:
            continue
        start = time.perf_counter()
        fig = spec.figure(**values)
        middle = time.perf_counter()
        fig.savefig(io.BytesIO(), format="png", dpi=dpi, bbox_inches="tight")
        render.append(time.perf_counter() - middle)
        compute.append(middle - start)
        plt.close(fig)
    total = [a + b for a, b in zip(compute, render, strict=True)]
    return dict(updates=len(total), median_s=round(statistics.median(total), 3), max_s=round(max(total), 3),
                compute_median_s=round(statistics.median(compute), 3), render_median_s=round(statistics.median(render), 3),
                within_budget=statistics.median(total) <= MEDIAN_BUDGET_S and max(total) <= MAX_BUDGET_S)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter titles, e.g. 'Chapter 6' (default: every panel)")
    parser.add_argument("--out", type=Path, default=nbtools.ROOT / "tools" / "reports" / "panel-latency.json")
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("module://matplotlib_inline.backend_inline")
    import clbook

    panels = frames.registered()
    unknown = [c for c in args.chapters if c not in panels]
    if unknown:
        parser.error(f"no panel for {unknown}; panels: {', '.join(panels)}")
    rows = {}
    for title in args.chapters or panels:
        clbook.setup(seed=0, device="cpu", threads=1)
        rows[title] = measure(panels[title])
        r = rows[title]
        print(f"{title}: {r['updates']} updates, median {r['median_s'] * 1000:.0f} ms (compute {r['compute_median_s'] * 1000:.0f}, "
              f"PNG {r['render_median_s'] * 1000:.0f}), worst {r['max_s'] * 1000:.0f} ms: "
              f"{'within' if r['within_budget'] else 'OVER'} budget")
    report = dict(budget=dict(median_s=MEDIAN_BUDGET_S, max_s=MAX_BUDGET_S), threads=1, machine=platform.processor() or
                  platform.machine(), python=platform.python_version(), clbook=clbook.__version__,
                  date=time.strftime("%Y-%m-%d"), panels=rows,
                  within_budget=sum(r["within_budget"] for r in rows.values()), of=len(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"{report['within_budget']} of {report['of']} panels within budget; report in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
