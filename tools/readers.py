"""The paths readers take, tested here: the package as a wheel, a Colab-like install, a Binder-like install.

    python tools/readers.py dist      # build the wheel and the sdist into _build/dist and check what they ship
    python tools/readers.py colab     # `make colab`: a fresh venv without development tools, torch from pip's
                                      # resolution, clbook installed by the chapters' own first cell from the wheel
                                      # (served on 127.0.0.1), then every chapter run alone, twice in one kernel
    python tools/readers.py binder    # `make binder`: a fresh venv from binder/'s files (minus the unreachable
                                      # PyTorch index), clbook installed as binder/postBuild does, every chapter run
    python tools/readers.py floor     # `make floor`: the oldest versions clbook supports (binder/floor.txt, Colab's
                                      # own) with the pinned torch, the wheel; every chapter under nbval against its
                                      # stored outputs, every panel built and moved (ipywidgets 7)

Reports go to _build/readers/<mode>.json. Exit status 1 on any failure.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbtools  # noqa: E402

ROOT = nbtools.ROOT
DIST = ROOT / "_build" / "dist"
OUT = ROOT / "_build" / "readers"
HARNESS = ["nbclient", "ipykernel"]  # what stands in for Colab's or Binder's own kernel


def sh(cmd, **kw) -> subprocess.CompletedProcess:
    print("$", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def build_dist() -> tuple[Path, Path]:
    """Build the wheel and the sdist with this environment's setuptools (no network), check their contents."""
    shutil.rmtree(DIST, ignore_errors=True)
    DIST.mkdir(parents=True)
    sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(DIST), str(ROOT)],
       cwd=ROOT)
    code = f"from setuptools import build_meta; print(build_meta.build_sdist({str(DIST)!r}))"
    sh([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.DEVNULL)
    for leftover in (ROOT / "build",):
        shutil.rmtree(leftover, ignore_errors=True)
    wheel = DIST / nbtools.wheel_name()
    sdists = sorted(DIST.glob("clbook-*.tar.gz"))
    if not wheel.is_file() or len(sdists) != 1:
        raise SystemExit(f"expected {wheel.name} and one sdist in {DIST}; found {sorted(p.name for p in DIST.iterdir())}")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "clbook" / "results").glob("*/*.json")}
    missing = sorted(shipped - set(names))
    problems = []
    if missing:
        problems.append(f"the wheel lacks stored results: {missing[:5]}")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        problems.append("the wheel lacks LICENSE")
    import tarfile

    with tarfile.open(sdists[0]) as tar:
        members = tar.getnames()
    if not any(m.endswith("/LICENSE") for m in members):
        problems.append("the sdist lacks LICENSE")
    if not any("clbook/results/landscape/" in m for m in members):
        problems.append("the sdist lacks the stored results")
    if problems:
        raise SystemExit("; ".join(problems))
    print(f"{wheel.name}: {len(names)} files, {len(shipped)} stored results, LICENSE; {sdists[0].name}: {len(members)} files")
    return wheel, sdists[0]


def venv(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    sh([sys.executable, "-m", "venv", str(path)])
    python = path / "bin" / "python"
    sh([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    return python


def newest_cpu_torch(python: Path) -> str:
    """The newest torch with a CPU build that pip can see (the local wheel here; PyTorch's CPU index in CI).

    Plain ``torch`` from PyPI is the CUDA build with several GB of nvidia packages, which a CPU reader does not get.
    """
    out = subprocess.run([str(python), "-m", "pip", "index", "versions", "torch"], capture_output=True, text=True).stdout
    listed = re.search(r"Available versions:\s*(.*)", out)
    versions = [v.strip() for v in listed.group(1).split(",")] if listed else []
    cpu = [v for v in versions if v.endswith("+cpu")]
    if not cpu:
        raise SystemExit(f"no CPU build of torch is visible to pip (configure PyTorch's CPU index); pip said:\n{out[-1500:]}")

    def key(v):
        return tuple(int(x) for x in re.findall(r"\d+", v.split("+")[0]))

    return max(cpu, key=key).split("+")[0]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/", server


def bootstrap(python: Path, wheel_url: str, env: dict) -> subprocess.CompletedProcess:
    """Run the chapters' first cell (the Colab bootstrap) as a script in the reader's environment."""
    source = nbtools.bootstrap_source()
    return subprocess.run([str(python), "-c", source], capture_output=True, text=True, env=env | {"CLBOOK_WHEEL_URL": wheel_url},
                          cwd=env["HOME"])


def run_chapters(python: Path, mode: str, env: dict, *, twice: bool) -> dict:
    report = OUT / f"{mode}-chapters.json"
    cmd = [str(python), str(ROOT / "tools" / "run_chapters.py"), "--report", str(report), "--parallel", "2"]
    if twice:
        cmd.append("--twice")
    done = subprocess.run(cmd + [str(p) for p in nbtools.chapters()], env=env, cwd=env["HOME"])
    return {"returncode": done.returncode, "chapters": json.loads(report.read_text()) if report.exists() else []}


def reader_env(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLBOOK_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(CLBOOK_DEVICE=os.environ.get("CLBOOK_DEVICE", "cpu"), CLBOOK_THREADS="1", CLBOOK_RESULTS=str(tmp / "results"),
               HOME=str(tmp / "home"), MPLBACKEND="module://matplotlib_inline.backend_inline")
    (tmp / "home").mkdir(parents=True, exist_ok=True)
    return env


def colab() -> int:
    wheel, _ = build_dist()
    tmp = Path(tempfile.mkdtemp(prefix="clbook-colab-"))
    python = venv(OUT / "colab-venv")
    env = reader_env(tmp)
    torch_version = newest_cpu_torch(python)
    sh([str(python), "-m", "pip", "install", "-q", f"torch=={torch_version}", *HARNESS], env=env)
    base, server = serve(DIST)
    try:
        bad = bootstrap(python, base + "no-such-clbook.whl", env)
        lines = [ln for ln in bad.stderr.strip().splitlines() if ln.strip()]
        loud = bad.returncode != 0 and lines and lines[-1].startswith("RuntimeError: could not install clbook")
        verdict = "fails with one sentence" if loud else "DOES NOT FAIL LOUDLY"
        print(f"bootstrap with a missing wheel: {verdict}: {lines[-1] if lines else ''}")
        start = time.perf_counter()
        good = bootstrap(python, base + wheel.name, env)
        probe = "import clbook, torch; print(clbook.__version__, clbook.__file__, torch.__version__)"
        installed = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, env=env, cwd=env["HOME"]).stdout.split()
        print(f"bootstrap from {base}{wheel.name}: exit {good.returncode} in {time.perf_counter() - start:.0f} s; "
              f"installed {installed}")
        chapters = run_chapters(python, "colab", env | {"CLBOOK_WHEEL_URL": base + wheel.name}, twice=True)
        experiment = _experiment_from_installed(python, env, tmp)
    finally:
        server.shutdown()
    ok = loud and good.returncode == 0 and len(installed) == 3 and "site-packages" in installed[1] \
        and chapters["returncode"] == 0 and experiment["ok"]
    report = dict(mode="colab", torch=installed[2] if len(installed) == 3 else None, clbook=installed[:2],
                  bootstrap_missing_wheel=lines[-1] if lines else "", bootstrap_ok=good.returncode == 0, experiment=experiment,
                  chapters=chapters["chapters"], ok=ok)
    (OUT / "colab.json").write_text(json.dumps(report, indent=1))
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"Colab-like run: {'PASSED' if ok else 'FAILED'} (torch {report['torch']}); report in {OUT / 'colab.json'}")
    if not ok:
        print(failures(chapters["chapters"], bootstrap=good, experiment=experiment))
    return 0 if ok else 1


def failures(chapters: list[dict], *, bootstrap=None, experiment=None) -> str:
    """What failed, in a few lines, printed last (a CI log shows its tail)."""
    lines = [f"  {c['chapter']}: {c['status']}: {(c['error'] or str(c.get('differences', '')))[-500:]}"
             for c in chapters if c["status"] != "ok"]
    if bootstrap is not None and bootstrap.returncode != 0:
        lines.append(f"  bootstrap: exit {bootstrap.returncode}: {bootstrap.stderr[-500:]}")
    if experiment is not None and not experiment.get("ok", True):
        lines.append(f"  experiment: {experiment}")
    return "What failed:\n" + ("\n".join(lines) or "  (no chapter failed: see the checks above)")


def _experiment_from_installed(python: Path, env: dict, tmp: Path) -> dict:
    """An experiment's command line run from the installed package writes to the user's folder, with provenance."""
    out = tmp / "results" / "new_losses"
    site = subprocess.run([str(python), "-c", "import clbook, pathlib; print(pathlib.Path(clbook.__file__).parent)"],
                          capture_output=True, text=True, env=env, cwd=env["HOME"]).stdout.strip()

    def files():  # every file of the installed package, with its modification time
        return {str(p): p.stat().st_mtime_ns for p in Path(site).rglob("*") if p.is_file() and "__pycache__" not in p.parts}

    before = files()
    done = subprocess.run([str(python), "-m", "clbook.experiments.new_losses", "--quick"], capture_output=True, text=True,
                          env=env, timeout=600, cwd=env["HOME"])
    written = sorted(p.name for p in out.glob("*.json")) if out.exists() else []
    after = files()
    in_site = sorted(path for path, mtime in after.items() if before.get(path) != mtime)  # new or rewritten by the run
    code = ""
    if written:
        data = json.loads((out / written[0]).read_text())
        code = data.get("provenance", {}).get("code", "")
    ok = done.returncode == 0 and bool(written) and not in_site and code.startswith("clbook ")
    print(f"experiment from the installed package: exit {done.returncode}, wrote {written} under CLBOOK_RESULTS, "
          f"{len(in_site)} files written into site-packages, provenance code {code!r}")
    if done.returncode != 0:
        print(done.stderr[-2000:])
    return dict(ok=ok, written=written, provenance_code=code, files_in_site_packages=in_site)


def binder() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="clbook-binder-"))
    python = venv(OUT / "binder-venv")
    env = reader_env(tmp)
    reqs = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    local = OUT / "binder-requirements.txt"
    # PyTorch's CPU index cannot be reached from here; everything else is installed as repo2docker would.
    local.write_text("\n".join(ln.replace("-r ", f"-r {ROOT / 'binder'}/") for ln in reqs if not ln.startswith("--extra-index-url")))
    start = time.perf_counter()
    sh([str(python), "-m", "pip", "install", "-q", "-r", str(local), *HARNESS], env=env)
    sh(["bash", str(ROOT / "binder" / "postBuild")], cwd=ROOT, env=env | {"PATH": f"{python.parent}:{env['PATH']}"})
    install_seconds = time.perf_counter() - start
    chapters = run_chapters(python, "binder", env, twice=False)
    versions = subprocess.run([str(python), "-c", "import clbook, torch; print(clbook.__version__, torch.__version__)"],
                              capture_output=True, text=True, env=env, cwd=env["HOME"]).stdout.split()
    dev = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, env=env).stdout
    dev_tools = ("pytest", "ruff", "playwright", "hypothesis", "jupyter-book", "otter-grader", "sphinx")
    tools = [t for t in dev_tools if f"\n{t}==" in "\n" + dev]
    ok = chapters["returncode"] == 0 and not tools
    report = dict(mode="binder", versions=versions, install_seconds=round(install_seconds), development_tools=tools,
                  chapters=chapters["chapters"], ok=ok)
    (OUT / "binder.json").write_text(json.dumps(report, indent=1))
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"Binder-like run: {'PASSED' if ok else 'FAILED'} (clbook, torch {versions}; development tools installed: {tools or 'none'})")
    if not ok:
        print(failures(chapters["chapters"]))
    return 0 if ok else 1


def _pins(path: Path) -> dict:
    pins = {}
    for line in path.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


COLAB_EXACT = dict(python="3.13", torch="2.11.0")  # Colab's runtime (googlecolab/backend-info, August 2026)


def _pyenv_python(version: str) -> str:
    """An interpreter of ``version`` (``python3.13`` on PATH, else pyenv's), or exit with one sentence."""
    found = shutil.which(f"python{version}")
    # a pyenv shim is on PATH for every installed version but runs only the active ones: try it before taking it
    if found and subprocess.run([found, "--version"], capture_output=True).returncode == 0:
        return found
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = sorted(root.glob(f"{version}.*/bin/python{version}")) if root.is_dir() else []
    if not candidates:
        raise SystemExit(f"make colab-exact needs Python {version} (python{version} on PATH, or pyenv install {version}).")
    return str(candidates[-1])


def floor(exact: bool = False) -> int:
    """Every chapter and panel against the floor of pyproject.toml (binder/floor.txt), the stored outputs compared.

    ``exact``: Colab's exact set instead, with its Python and its torch from PyPI (the CUDA build, several GB).
    """
    mode = "colab-exact" if exact else "floor"
    wheel, _ = build_dist()
    tmp = Path(tempfile.mkdtemp(prefix=f"clbook-{mode}-"))
    if exact:
        interpreter = _pyenv_python(COLAB_EXACT["python"])
        shutil.rmtree(OUT / f"{mode}-venv", ignore_errors=True)
        sh([interpreter, "-m", "venv", str(OUT / f"{mode}-venv")])
        python = OUT / f"{mode}-venv" / "bin" / "python"
        sh([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    else:
        python = venv(OUT / f"{mode}-venv")
    env = reader_env(tmp)
    dev = _pins(ROOT / "requirements.txt") | _pins(ROOT / "binder" / "reader.txt")
    torch_version = COLAB_EXACT["torch"] if exact else dev["torch"]
    start = time.perf_counter()
    # the floor run keeps torch's CPU build (PyTorch's CPU index; TORCH_INDEX as in the Makefile), so that it downloads no
    # CUDA build; colab-exact takes Colab's torch from PyPI as Colab does
    index = [] if exact else ["--extra-index-url", os.environ.get("TORCH_INDEX", "https://download.pytorch.org/whl/cpu")]
    sh([str(python), "-m", "pip", "install", "-q", "--retries", "1", "--timeout", "60", *index, f"torch=={torch_version}"],
       env=env)
    sh([str(python), "-m", "pip", "install", "-q", "-r", str(ROOT / "binder" / "floor.txt"), f"pytest=={dev['pytest']}",
        f"nbval=={dev['nbval']}"], env=env)
    sh([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], env=env)
    install_seconds = time.perf_counter() - start
    versions = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                              env=env).stdout
    floor_pins = _pins(ROOT / "binder" / "floor.txt")
    got = {k.lower(): v for k, v in (ln.split("==", 1) for ln in versions.splitlines() if "==" in ln)}
    drift = {k: (v, got.get(k)) for k, v in floor_pins.items() if got.get(k) != v}
    # The chapters run from a copy, so that only the installed wheel can be imported.
    work = tmp / "book"
    shutil.copytree(ROOT / "book", work, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    shutil.copy(ROOT / "tests" / "api" / "test_widgets.py", work / "test_widgets.py")
    chapters = [str(work / p.relative_to(ROOT / "book")) for p in nbtools.chapters()]
    nbval = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
             "--nbval-sanitize-with", str(ROOT / "nbval_sanitize.cfg"), "-q", "--rootdir", str(work)]
    half = (len(chapters) + 1) // 2
    logs = [OUT / f"{mode}-nbval-1.log", OUT / f"{mode}-nbval-2.log"]
    runs = []
    for k, (part, log) in enumerate(zip((chapters[:half], chapters[half:]), logs, strict=True)):
        # the two halves start their first kernels a few seconds apart: started together, both can be given the same
        # free TCP ports, and one kernel dies before replying (seen once, 2026-11-26: "Kernel died before replying
        # to kernel_info" on the first chapter of a half)
        time.sleep(5 * (k > 0))
        runs.append(subprocess.Popen(nbval + part, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, cwd=work))
    codes = [r.wait() for r in runs]
    panels = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(work),
                             str(work / "test_widgets.py"), "-k", "moves or extremes"], capture_output=True, text=True,
                            env=env, cwd=work)
    tails = [log.read_text().strip().splitlines()[-1] if log.read_text().strip() else "" for log in logs]
    ok = not drift and all(c == 0 for c in codes) and panels.returncode == 0
    torch_got = subprocess.run([str(python), "-c", "import sys, torch; print(sys.version.split()[0], torch.__version__)"],
                               capture_output=True, text=True, env=env, cwd=env["HOME"]).stdout.split()
    report = dict(mode=mode, python_torch=torch_got, floor=floor_pins, drift=drift, install_seconds=round(install_seconds),
                  nbval=tails, nbval_exit=codes, panels=(panels.stdout.strip().splitlines() or [""])[-1], ok=ok)
    (OUT / f"{mode}.json").write_text(json.dumps(report, indent=1))
    for code, log in zip(codes, logs, strict=True):
        if code:
            print(log.read_text()[-6000:])
    if panels.returncode:
        print(panels.stdout[-4000:])
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{mode} run (binder/floor.txt; Python and torch {torch_got}): {'PASSED' if ok else 'FAILED'}; nbval {tails}; "
          f"panels {report['panels']}; versions not at the floor: {drift or 'none'}; report in {OUT / (mode + '.json')}")
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    if argv == ["dist"]:
        build_dist()
        return 0
    if argv == ["colab"]:
        return colab()
    if argv == ["binder"]:
        return binder()
    if argv == ["floor"]:
        return floor()
    if argv == ["colab-exact"]:
        return floor(exact=True)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
