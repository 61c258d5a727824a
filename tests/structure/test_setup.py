"""The set-up a newcomer relies on: pins, README commands, CI, Binder, packaging."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import nbtools  # noqa: E402


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-r", "--")):
            continue
        assert "==" in line, f"{path.name}: unpinned requirement {line!r}"
        name, version = line.split("==")
        pins[name.lower()] = version
    return pins


def test_requirements_pin_the_toolchain():
    req = (ROOT / "requirements.txt").read_text()
    reader = _pins(ROOT / "binder" / "reader.txt")
    assert "-r binder/reader.txt" in req, "the development set includes the reader's set (one place for the runtime pins)"
    assert reader.get("torch") == "2.13.0", "torch must be pinned to 2.13.0 exactly"
    assert "+cpu" not in req and "+cpu" not in (ROOT / "binder" / "reader.txt").read_text()
    dev = _pins(ROOT / "requirements.txt")
    assert dev.get("jupyter-book", "").startswith("1."), "Jupyter Book 1 (2.x cannot build offline)"
    assert not set(dev) & set(reader), f"pinned twice: {set(dev) & set(reader)}"


def test_package_dependencies_stay_unpinned_and_cover_the_reader_set():
    text = (ROOT / "pyproject.toml").read_text()
    deps = re.search(r"^dependencies = \[(.*?)\]", text, flags=re.S | re.M).group(1)
    assert "==" not in deps and "torch" in deps
    floors = dict(re.findall(r'"([A-Za-z0-9_.-]+)>=([0-9.]+)"', deps))
    names = {n.lower() for n in re.findall(r'"([A-Za-z0-9_.-]+)', deps)}
    assert set(_pins(ROOT / "binder" / "reader.txt")) <= names, "every reader pin is a dependency of the package"
    tested = _pins(ROOT / "binder" / "floor.txt")
    for name, low in floors.items():
        if name != "torch":  # torch's floor (Colab's 2.11) is tried by `make colab-exact`, not in `make test`
            assert tested.get(name.lower()) == low, f"pyproject.toml declares {name}>={low}; binder/floor.txt must test exactly it"


def test_readme_ci_and_binder():
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    binder = (ROOT / "binder" / "requirements.txt").read_text()
    assert "-r reader.txt" in binder and "download.pytorch.org/whl/cpu" in binder
    for tool in ("pytest", "ruff", "playwright", "hypothesis", "otter", "jupyter-book", "sphinx"):
        assert tool not in (ROOT / "binder" / "reader.txt").read_text(), f"Binder does not need {tool}"
    assert (ROOT / "binder" / "postBuild").stat().st_mode & 0o111


def test_license_matches_the_declared_licence():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^license = "MIT"$', text, flags=re.M) and 'license-files = ["LICENSE"]' in text
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_version_in_one_place_and_in_the_bootstrap():
    import clbook

    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
    assert nbtools.package_version() == clbook.__version__
    assert f'CLBOOK = "{clbook.__version__}"' in nbtools.bootstrap_source()
    assert nbtools.bootstrap_source().count(nbtools.book_url()) == 1


def test_api_page_is_generated_from_the_package():
    import subprocess

    run = subprocess.run([sys.executable, str(ROOT / "tools" / "apidoc.py"), "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_reader_run_compares_a_print_however_the_kernel_cut_it():
    """The Colab-like run compares a chapter's two passes by text: one print that arrived as two stream messages
    (the kernel flushes on a timer) must read the same as one message, while a changed number must not."""
    import nbformat
    import run_chapters

    def cell(*texts):
        outputs = [nbformat.v4.new_output("stream", name="stdout", text=t) for t in texts]
        return nbformat.v4.new_code_cell("print(...)", outputs=outputs)

    whole = run_chapters._text(cell("verdicts checked: 42\n"))
    assert run_chapters._text(cell("verdicts checked:", " 42\n")) == whole
    assert run_chapters._text(cell("verdicts checked:", " 43\n")) != whole
    shown = nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output("execute_result", data={"text/plain": "1"})])
    shown.outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": "2"}))
    assert run_chapters._text(shown) != run_chapters._text(
        nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output("execute_result", data={"text/plain": "12"})]))
