"""Root pytest configuration: record how long each notebook takes under nbval.

When ``CLBOOK_TIMES`` names a file, the seconds spent in each notebook's cells are summed
and written there at the end of the session; tests/structure checks them against the
30-second chapter budget.
"""
import json
import os
from collections import defaultdict
from pathlib import Path

_times = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _times[path] += report.duration


def pytest_sessionfinish(session, exitstatus):
    target = os.environ.get("CLBOOK_TIMES")
    if target and _times:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        data = {"threads": int(os.environ.get("CLBOOK_THREADS", "1")), "seconds": {k: round(v, 2) for k, v in _times.items()}}
        Path(target).write_text(json.dumps(data, indent=1))
