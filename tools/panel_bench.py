"""How fast the live panels update in a kernel: a benchmark (not a timed test), run by ``make bench``.

For every registered panel (:class:`clbook.widgets.PanelSpec`), each control is moved to every value of its frame
grid (:func:`clbook.widgets.frame_grid`: 5 values per slider, every option) with the others at their initial
values, as a reader moves it; each update is timed as the live panel performs it: the figure function, then the
PNG that the panel sends to the browser (:func:`clbook.widgets.render_png`). Wall time and the process's CPU time
are both recorded: on a loaded machine the CPU time is the better estimate of the wall time on an idle one. Budget
(design/BOOK.md): median update at most 200 ms and none over 1 s on the 2-core machine.

    python tools/panel_bench.py [--out tools/reports/panel-latency.json] [chapter title ...]
"""
from __future__ import annotations

import argparse
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

    from clbook import widgets

    compute, render, cpu = [], [], []
    grid = widgets.frame_grid(spec.controls())
    # the panel's first draw (figure and PNG) happens when the chapter shows it: not an update, but it warms what
    # every later update reuses (fonts, the PNG writer), as it does in a kernel
    widgets.render_png(spec.figure(**grid["frames"][""]))
    plt.close("all")
    widgets.settle_heap()  # as widgets.panel does after its first draw
    for key, values in grid["frames"].items():
        if not key:
            continue
        start, cpu_start = time.perf_counter(), time.process_time()
        fig = spec.figure(**values)
        middle = time.perf_counter()
        widgets.render_png(fig)
        render.append(time.perf_counter() - middle)
        compute.append(middle - start)
        cpu.append(time.process_time() - cpu_start)
        plt.close(fig)
    total = [a + b for a, b in zip(compute, render, strict=True)]
    return dict(updates=len(total), median_s=round(statistics.median(total), 3), max_s=round(max(total), 3),
                cpu_median_s=round(statistics.median(cpu), 3), cpu_max_s=round(max(cpu), 3),
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
