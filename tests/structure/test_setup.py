"""The set-up a newcomer relies on: pins, README commands, CI, Binder."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_requirements_pin_the_toolchain():
    req = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^torch==2\.13\.0$", req, flags=re.M), "torch must be pinned to 2.13.0 exactly"
    assert "+cpu" not in req
    assert re.search(r"^jupyter-book==1\.", req, flags=re.M), "Jupyter Book 1 (2.x cannot build offline)"
    for line in req.splitlines():
        if line.strip() and not line.startswith("#"):
            assert "==" in line, f"unpinned requirement: {line}"


def test_package_dependencies_stay_unpinned():
    text = (ROOT / "pyproject.toml").read_text()
    deps = re.search(r"dependencies = \[(.*?)\]", text, flags=re.S).group(1)
    assert "==" not in deps and "torch" in deps


def test_readme_ci_and_binder():
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "-r ../requirements.txt" in (ROOT / "binder" / "requirements.txt").read_text()
    assert (ROOT / "binder" / "postBuild").stat().st_mode & 0o111
