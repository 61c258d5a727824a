# Two commands do all set-up on a fresh machine: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 2> /dev/null || echo python3)
# The CPU build of torch by default (PyPI's default build bundles CUDA: several GB). For a GPU:
# make TORCH_INDEX=https://download.pytorch.org/whl/cu128 (README, "Prerequisites").
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
export TORCH_INDEX
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.clbook-installed
CHAPTERS = $(shell test -x $(BIN)/python && $(BIN)/python tools/nbtools.py list)
NBVAL = $(BIN)/python -m pytest -p no:cacheprovider --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg -q

.PHONY: book bench test lint unit notebooks structure assignments-test assignments browser chromium outputs sync lab serve clean help dist colab binder floor colab-exact stability frames

help:
	@echo "make book     build the HTML book into _build/html (sets up .venv first)"
	@echo "make test     lint, unit and API tests, nbval on every chapter as three machines, structure tests,"
	@echo "              the Colab-like and Binder-like runs, the autograders in their own environment, the browser test"
	@echo "make colab    build the wheel, install it as Colab would, run every chapter alone (twice in one kernel)"
	@echo "make binder   install binder/'s environment in a fresh venv and run every chapter"
	@echo "make floor    every chapter (nbval) and panel against the oldest supported versions (binder/floor.txt)"
	@echo "make colab-exact  Colab's exact set (Python 3.13, torch 2.11 CUDA build from PyPI, ~5 GB): chapters and panels"
	@echo "make stability  list the printed numbers that differ between machine configurations"
	@echo "make assignments  build the graded assignments (student notebooks, autograders) into _build/assignments"
	@echo "make bench    time the batched experiments against the authors' code (reports in clbook/results/)"
	@echo "make outputs  re-execute every chapter on the CPU and store outputs and widget state, then make frames"
	@echo "make frames   precompute every panel's figures for the HTML book (panels that move without a kernel)"
	@echo "make lab      open JupyterLab in the virtual environment"
	@echo "make serve    serve _build/html on http://127.0.0.1:8000"
	@echo "make browser  build the book and open every page in headless Chromium (screenshots in _build/screenshots)"

$(STAMP): requirements.txt binder/reader.txt pyproject.toml
	@bash tools/preflight.sh $(PYTHON)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --retries 1 --timeout 30 --extra-index-url $(TORCH_INDEX) "torch==$$(sed -n 's/^torch==//p' binder/reader.txt)"
	$(BIN)/python -m pip install -q -r requirements.txt -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (clbook)" > /dev/null
	touch $(STAMP)

book: $(STAMP)
	@bash tools/preflight.sh $(BIN)/python npm
	bash tools/vendor.sh
	rm -rf _build/html _build/.doctrees _build/jupyter_execute
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(BIN)/python tools/readers.py dist
	mkdir -p _build/html/_static/wheels && cp _build/dist/clbook-*.whl _build/html/_static/wheels/
	@echo "The book is in _build/html: open _build/html/index.html, or run 'make serve'."

# Each stage in turn, stopping at the first that fails; each prints its wall and CPU time, and the last line the total.
TEST_STAGES := lint unit notebooks structure colab binder floor assignments-test browser
test: $(STAMP)
	@set -e; total=$$(date +%s); for stage in $(TEST_STAGES); do \
	TIMEFORMAT="make test: $$stage: %0R s wall, %0U s user + %0S s system CPU"; time $(MAKE) --no-print-directory $$stage; \
	done; echo "make test: every stage passed in $$(( $$(date +%s) - total )) s (set-up not counted)"

# ruff on the package, the tests, the tools and every notebook cell.
lint: $(STAMP)
	$(BIN)/ruff check clbook tests tools book

unit: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -q tests/unit tests/api

# nbval in strict mode against the stored outputs, as three other machines would run the chapters: one thread with
# this CPU's kernels; two threads with torch's portable kernels and older MKL/OpenBLAS instruction sets; one thread
# with AVX2 kernels. The two one-thread runs share the two cores, started 5 s apart (started together, their first
# kernels can be given the same free ports; tools/readers.py); then the two-thread run.
NATIVE := CLBOOK_THREADS=1
PORTABLE := CLBOOK_THREADS=2 ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 OPENBLAS_CORETYPE=Prescott
AVX2 := CLBOOK_THREADS=1 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 OPENBLAS_CORETYPE=Haswell
notebooks: $(STAMP)
	mkdir -p _build
	@set -e; export CLBOOK_DEVICE=$${CLBOOK_DEVICE:-cpu}; \
	$(NATIVE) CLBOOK_TIMES=_build/nbval-times-1.json $(NBVAL) $(CHAPTERS) book/verification.ipynb > _build/nbval-native.log 2>&1 & native=$$!; \
	sleep 5; $(AVX2) CLBOOK_TIMES=_build/nbval-times-avx2.json $(NBVAL) $(CHAPTERS) > _build/nbval-avx2.log 2>&1 & avx2=$$!; \
	wait $$native && a=0 || a=$$?; wait $$avx2 && b=0 || b=$$?; \
	echo "nbval, 1 thread, native kernels:  $$(tail -1 _build/nbval-native.log)"; \
	echo "nbval, 1 thread, AVX2 kernels:    $$(tail -1 _build/nbval-avx2.log)"; \
	if [ $$a -ne 0 ]; then cat _build/nbval-native.log; fi; if [ $$b -ne 0 ]; then cat _build/nbval-avx2.log; fi; \
	test $$a -eq 0 -a $$b -eq 0
	$(PORTABLE) CLBOOK_DEVICE=$${CLBOOK_DEVICE:-cpu} CLBOOK_TIMES=_build/nbval-times-2.json $(NBVAL) $(CHAPTERS)

# The printed numbers that move between those machines (nothing should): python tools/stability.py --help
stability: $(STAMP)
	$(BIN)/python tools/stability.py --configs native-1 default-2 avx2-1

# The paths readers take: the wheel and sdist; a Colab-like install; a Binder-like install (tools/readers.py).
dist: $(STAMP)
	$(BIN)/python tools/readers.py dist

colab: $(STAMP)
	$(BIN)/python tools/readers.py colab

binder: $(STAMP)
	$(BIN)/python tools/readers.py binder

# The oldest versions clbook supports (binder/floor.txt: Colab's runtime, declared as pyproject.toml's floor), with the
# pinned torch: every chapter under nbval against its stored outputs, every panel built and moved (ipywidgets 7).
floor: $(STAMP)
	$(BIN)/python tools/readers.py floor

# Colab's exact set, torch included (Python 3.13, torch 2.11.0 from PyPI: the CUDA build, about 5 GB): every chapter
# and panel, as `make floor` runs them. Not part of `make test` (the download); its last report is in the README.
colab-exact: $(STAMP)
	$(BIN)/python tools/readers.py colab-exact

structure: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -q tests/structure

# The graded assignments (otter-grader): build them, and check that each autograder gives the solution full
# marks, the blank student notebook zero, and catches a wrong answer.
assignments: $(STAMP)
	$(BIN)/python tools/assignments.py build

assignments-test: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider -q tests/assignments

# Debian's Chromium, driven by the playwright package (no browser download).
chromium:
	@command -v chromium > /dev/null || [ "$$(id -u)" = 0 ] || { echo "make: the browser test needs Chromium: install Debian's chromium package (as root: apt-get install chromium), or run make as root." >&2; exit 2; }
	@command -v chromium > /dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null; }

browser: $(STAMP) chromium book
	$(BIN)/python -m pytest -p no:cacheprovider -q -s tests/browser

# Speed benchmarks (not timed tests): fixed slices of the heavy experiments, reports with provenance in clbook/results/.
bench: $(STAMP)
	$(BIN)/python -m clbook.experiments.hierarchical bench --fresh --out clbook/results/hierarchical
	$(BIN)/python -m clbook.experiments.landscape bench --out clbook/results/landscape
	CLBOOK_THREADS=1 $(BIN)/python tools/panel_bench.py --out tools/reports/panel-latency.json

outputs: $(STAMP)
	CLBOOK_DEVICE=cpu CLBOOK_THREADS=1 $(BIN)/python tools/nbtools.py outputs
	$(MAKE) --no-print-directory frames

# Every chapter panel's figures over a grid of its controls, for the HTML book's kernel-less panels (tools/frames.py).
frames: $(STAMP)
	CLBOOK_DEVICE=cpu CLBOOK_THREADS=1 $(BIN)/python tools/frames.py

sync: $(STAMP)
	$(BIN)/python tools/nbtools.py sync

lab: $(STAMP)
	$(BIN)/jupyter lab book/

serve:
	$(BIN)/python -m http.server --bind 127.0.0.1 --directory _build/html 8000

clean:
	rm -rf _build
