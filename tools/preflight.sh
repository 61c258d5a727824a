#!/usr/bin/env bash
# Stops `make` at once, with one sentence, when this machine lacks what the set-up needs (README, "Prerequisites").
# Usage: tools/preflight.sh PYTHON [npm]
set -uo pipefail
python=${1:-python3}
need_gb=${CLBOOK_NEED_GB:-6}
fail() { echo "make: $*" >&2; exit 2; }
command -v "$python" > /dev/null 2>&1 || fail "no Python interpreter '$python' on PATH: install Python 3.11 (or run 'make PYTHON=/path/to/python3.11')."
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || fail "'$python' does not run."
[ "$version" = "3.11" ] || fail "'$python' is Python $version; the pinned set (requirements.txt) needs Python 3.11: install it or run 'make PYTHON=/path/to/python3.11'."
"$python" -c 'import venv, ensurepip' 2>/dev/null || fail "'$python' lacks venv/ensurepip: install your distribution's python3.11-venv package."
free_kb=$(df -Pk . | awk 'NR == 2 {print $4}')
[ "${free_kb:-0}" -ge $((need_gb * 1024 * 1024)) ] || fail "only $((free_kb / 1024 / 1024)) GB free here; the set-up needs about ${need_gb} GB (a 1.3 GB virtual environment, the build, the test environments)."
if [ "${2:-}" = npm ]; then
  command -v npm > /dev/null 2>&1 || fail "npm is missing: 'make book' installs MathJax and the widget manager from the npm registry (install Node.js 18+ with npm)."
fi
exit 0
