"""The graded assignments, graded where Gradescope grades them: in the environment their autograders declare.

For each master in book/assignments/, ``otter assign`` builds the student handout and the autograder. The
autograder's ``environment.yml`` is turned into a fresh virtual environment (``python -m venv``, then
``pip install`` of the declared lines, nothing from this checkout: no clbook, no development tools), cached
under ``_build/assignment-envs/`` by a hash of the declaration. There, with ``<venv>/bin/python -m otter run``:

- the solution scores full marks, and its kernel really ran in that environment (a probe cell records it);
- the unanswered student notebook scores zero on every question;
- each mutant (one plausible mistake in the answer to one question) loses points on that question and on no
  other: every test of a question calls only that question's function, with inputs it computes itself;
- the student handout, with the solution's answers, passes its public tests (``grader.check``) there.

The notebooks are graded two at a time; every grade is written to ``_build/assignments/grades.json``.
"""
import json
import re
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import assignments  # noqa: E402

# (question, text in the solution, wrong replacement, the mistake): each is an error a student could make.
MUTANTS = {
    "a1_pairwise_importance": [
        ("q1", "return torch.softmax(logits, dim=1)", "return torch.exp(logits) / torch.exp(logits).sum(dim=1, keepdim=True)",
         "exp then divide: nan at τ = 1e-3"),
        ("q2", "if j != i:", "if True:", "sums over j = i too"),
        ("q3", "G2 = 2 * beta * (Z1 - Z2)", "G2 = 2 * beta * (Z2 - Z1)", "sign of the positive-pair term"),
    ],
    "a2_deep_linear_pca": [
        ("q1", "w = w + lr * 2 * (X @ w)", "w = w - lr * 2 * (X @ w)", "descent instead of ascent"),
        ("q2", "g2 = 2 * W2 @ W1 @ X @ W1.T", "g2 = 2 * W2 @ W1 @ W1.T", "forgets X in one layer's gradient"),
    ],
    "a3_ssl_collapse": [
        ("q1", "expm(-2 * C * t)", "expm(-C * t)", "drops the factor 2 of the flow"),
        ("q2", "return 2 * (lam[1] - lam[0])", "return lam[1] - lam[0]", "drops the factor 2 of the rate"),
    ],
    "a4_gated_covariance": [
        ("q1", "mean = probs @ x_tilde", "mean = x_tilde.mean(dim=0)", "unweighted mean"),
        ("q2", "return 0.5 * (probs @ h**2 - (probs @ h) ** 2)", "return probs @ h**2 - (probs @ h) ** 2",
         "forgets the ½, so ∇E = 2A(w)w"),
        ("q3", "w = w + step * (Aw - (w @ Aw) * w)", "w = w + step * Aw", "no projection on the tangent space"),
        ("q4", "probs = torch.where(up, q, 1 - q).prod(dim=1)", "probs = torch.where(up, 1 - q, q).prod(dim=1)",
         "probabilities of y⁺ and y⁻ swapped"),
        ("q5", " and lam[-1] - lam[-2] > tol", "", "no check that λ_max is distinct"),
    ],
    "a5_linear_dual_dynamics": [
        ("q1", "-2 * keep**2 * Wt @ Sigma, -2 * keep**2 * Wo @ Sigma", "-2 * keep * Wt @ Sigma, -2 * keep * Wo @ Sigma",
         "E[D₁xxᵀD₂] read as αΣ"),
        ("q2", "Wo, Wt = lam * Wo - eta * gWo, lam * Wt - eta * gWt",
         "Wo = lam * Wo - eta * gWo\n        gWo, gWt = gradients(Wo, Wt)\n        Wt = lam * Wt - eta * gWt",
         "alternating instead of simultaneous updates"),
        ("q3", "return Q, (P - Q) / 2", "return Q, P - Q", "C₂ without the ½"),
        ("q4", "/ np.linalg.norm(WoT @ M))", "/ np.linalg.norm(Wo0 @ M))", "relative to the initial weights"),
    ],
}
NAMES = [m.stem for m in assignments.masters()]
PROBE = """
import importlib.util, json, os, sys
import torch
with open(os.environ["CLBOOK_KERNEL_PROBE"], "w") as f:
    json.dump({"prefix": sys.prefix, "clbook": importlib.util.find_spec("clbook") is not None, "torch": torch.__version__,
               "error": repr(getattr(sys, "last_value", None))}, f)
"""
RUN_NOTEBOOK = """
import sys, nbclient, nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
client = nbclient.NotebookClient(nb, timeout=300, startup_timeout=300, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}})
client.execute()
nbformat.write(nb, sys.argv[1])
"""


def questions(name):
    """The question names of a master, from its ``# BEGIN QUESTION`` cells."""
    nb = nbformat.read(assignments.master(name), as_version=4)
    return [re.search(r"name:\s*(\w+)", c.source).group(1) for c in nb.cells if c.cell_type == "raw" and "# BEGIN QUESTION" in c.source]


def solution_cells(nb):
    return [c for c in nb.cells if "otter_assign_solution_cell" in c.metadata.get("tags", [])]


@pytest.fixture(scope="session")
def built():
    """Every master through ``otter assign`` (without its own test run: the solution is graded below); a build from
    the same sources is reused."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        targets = pool.map(lambda name: assignments.build(assignments.master(name), run_tests=False, reuse=True), NAMES)
        return dict(zip(NAMES, targets, strict=True))


@pytest.fixture(scope="session")
def declared(built):
    return {name: assignments.declared_environment(assignments.autograder_zip(target)) for name, target in built.items()}


@pytest.fixture(scope="session")
def pythons(declared):
    """One clean virtual environment per distinct declaration (cached across runs under _build/)."""
    made = {env: assignments.clean_environment(env) for env in sorted(set(declared.values()), key=lambda e: e.key())}
    return {name: made[env] for name, env in declared.items()}


def _mutant(solution, name, question, right, wrong):
    nb = nbformat.from_dict(json.loads(json.dumps(solution)))
    cells = [c for c in solution_cells(nb) if right in c.source]
    assert len(cells) == 1 and cells[0].source.count(right) == 1, f"{name} {question}: the solution no longer has {right!r}"
    cells[0].source = cells[0].source.replace(right, wrong)
    return nb


def _student_run(name, target, python, folder):
    """The student's path: the handout unzipped, the answers filled in, every cell run with the installed packages."""
    with zipfile.ZipFile(target / f"{name}-student.zip") as handout:
        handout.extractall(folder)
    shutil.copy(target / "autograder" / f"{name}.ipynb", folder / f"{name}.ipynb")
    run = subprocess.run([str(python), "-c", RUN_NOTEBOOK, str(folder / f"{name}.ipynb"), str(folder)], capture_output=True, text=True,
                         env=assignments.isolated_env(python.parent.parent), cwd=folder, timeout=600)
    if run.returncode != 0:
        return RuntimeError(f"the handout of {name} did not run:\n{run.stderr[-3000:]}")
    nb = nbformat.read(folder / f"{name}.ipynb", as_version=4)
    text = lambda cell: "".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in cell.outputs)
    checks = [c for c in nb.cells if c.cell_type == "code" and "grader.check(" in c.source]
    return {re.search(r'check\("(\w+)"\)', c.source).group(1): text(c) for c in checks}


@pytest.fixture(scope="session")
def results(built, pythons, tmp_path_factory):
    """Grade everything in the clean environments, two notebooks at a time; a failed job keeps its exception."""
    jobs = {}
    for name, target in built.items():
        zip_path, python = assignments.autograder_zip(target), pythons[name]
        solution = nbformat.read(target / "autograder" / f"{name}.ipynb", as_version=4)
        probed = nbformat.from_dict(json.loads(json.dumps(solution)))
        probed.cells.append(nbformat.v4.new_code_cell(PROBE.strip()))
        probe = tmp_path_factory.mktemp(f"{name}-probe") / "probe.json"
        notebooks = {"solution": (probed, {"CLBOOK_KERNEL_PROBE": str(probe)}),
                     "blank": (nbformat.read(target / "student" / f"{name}.ipynb", as_version=4), {})}
        for k, (question, right, wrong, _) in enumerate(MUTANTS.get(name, [])):
            notebooks[f"mutant{k}"] = (_mutant(solution, name, question, right, wrong), {})
        for label, (nb, extra) in notebooks.items():
            folder = tmp_path_factory.mktemp(f"{name}-{label}")
            nbformat.write(nb, folder / f"{name}.ipynb")
            jobs[name, label] = (assignments.grade, (zip_path, folder / f"{name}.ipynb"), {"python": python, "extra_env": extra})
        jobs[name, "probe"] = (lambda path: json.loads(path.read_text()) if path.exists() else None, (probe,), {})
        jobs[name, "student"] = (_student_run, (name, target, python, tmp_path_factory.mktemp(f"{name}-student")), {})

    def run(job):
        function, args, kwargs = job
        try:
            return function(*args, **kwargs)
        except Exception as error:  # reported by the test that needs this result
            return error

    probes = {key: job for key, job in jobs.items() if key[1] == "probe"}
    others = {key: job for key, job in jobs.items() if key[1] != "probe"}
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(others, pool.map(run, others.values()), strict=True))
    done.update({key: run(job) for key, job in probes.items()})
    def describe(name, label):
        if not label.startswith("mutant"):
            return label
        question, _, _, mistake = MUTANTS[name][int(label.removeprefix("mutant"))]
        return f"{label} ({question}: {mistake})"

    summary = {name: {} for name in built}
    for (name, label), value in done.items():
        summary[name][describe(name, label)] = repr(value) if isinstance(value, Exception) else value
    (assignments.OUT / "grades.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    return done


def _get(results, name, label):
    value = results[name, label]
    if isinstance(value, Exception):
        raise value
    return value


def test_every_question_has_a_mutant():
    for name in NAMES:
        missing = set(questions(name)) - {q for q, *_ in MUTANTS.get(name, [])}
        assert not missing, f"{name}: no mutant for {sorted(missing)} (each question needs a wrong answer its tests must catch)"


def _pins(path):
    """``{package: version}`` of a pip requirements file, following its ``-r`` includes."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            pins.update(_pins(path.parent / line[3:].strip()))
        elif "==" in line:
            package, version = line.split("==")
            pins[package.strip().lower()] = version.strip()
    return pins


@pytest.mark.parametrize("name", NAMES)
def test_declared_environment(name, declared):
    """The autograder declares Python 3.11, otter-grader and every import of the solutions and tests, with the book's pins
    (requirements.txt and the files it includes)."""
    env = declared[name]
    pins = _pins(ROOT / "requirements.txt")
    assert env.python == "3.11"
    assert "otter-grader[grading,plugins]==7.0.0" in env.pip and pins["otter-grader"] == "7.0.0"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in env.pip
    for package in ("torch", "numpy", "scipy"):
        assert f"{package}=={pins[package]}" in env.pip, f"{name}: {package} is not declared with the pin of requirements.txt"
    assert not any("clbook" in line for line in env.pip)


@pytest.mark.parametrize("name", NAMES)
def test_nothing_imports_clbook(name, built):
    nb = nbformat.read(assignments.master(name), as_version=4)
    assert not [c for c in nb.cells if c.cell_type == "code" and re.search(r"\bclbook\b", c.source)]
    with zipfile.ZipFile(assignments.autograder_zip(built[name])) as archive:
        assert not [f for f in archive.namelist() if f.startswith("tests/") and b"clbook" in archive.read(f)]


def test_student_install_line_is_the_tested_one(declared):
    """The line students run on Colab is the line that built the grading environment, and the docs show it."""
    lines = {env.student_line() for env in declared.values()}
    assert len(lines) == 1
    line = lines.pop()
    assert line in (ROOT / "book" / "assignments.md").read_text()
    for name in NAMES:
        intro = next(c for c in nbformat.read(assignments.master(name), as_version=4).cells if c.cell_type == "markdown")
        assert line in intro.source and f"{name}-student.zip" in intro.source, f"{name}: the setup note does not show the install line"


@pytest.mark.parametrize("name", NAMES)
def test_solution_full_marks_in_clean_environment(name, results):
    scores = _get(results, name, "solution")
    assert set(scores) == set(questions(name)), f"{name}: graded questions {sorted(scores)}"
    assert all(score == out_of > 0 for score, out_of in scores.values()), f"{name}: the solution lost points: {scores}"


@pytest.mark.parametrize("name", NAMES)
def test_grading_kernel_ran_in_clean_environment(name, results, pythons):
    _get(results, name, "solution")
    probe = _get(results, name, "probe")
    assert probe is not None, f"{name}: the probe cell did not run"
    assert Path(probe["prefix"]) == pythons[name].parent.parent, f"{name}: the notebook ran in {probe['prefix']}"
    assert probe["clbook"] is False and probe["torch"].startswith("2.13.0")
    assert probe["error"] == "None", f"{name}: a cell of the solution raised {probe['error']}"


@pytest.mark.parametrize("name", NAMES)
def test_blank_notebook_scores_zero(name, results):
    blank = _get(results, name, "blank")
    assert set(blank) == set(questions(name)) and all(score == 0 for score, _ in blank.values()), f"{name}: {blank}"


@pytest.mark.parametrize("name", NAMES)
def test_each_mutant_loses_points_on_its_question_only(name, results):
    for k, (question, _, _, mistake) in enumerate(MUTANTS[name]):
        got = _get(results, name, f"mutant{k}")
        assert got[question][0] < got[question][1], f"{name}: the tests of {question} missed '{mistake}': {got}"
        others = {q: s for q, s in got.items() if q != question}
        assert all(s == m for s, m in others.values()), f"{name}: '{mistake}' in {question} cost points elsewhere: {got}"


@pytest.mark.parametrize("name", NAMES)
def test_student_handout_passes_its_public_tests(name, results):
    checks = _get(results, name, "student")
    assert set(checks) == set(questions(name))
    failed = {q: out for q, out in checks.items() if "All test cases passed!" not in out}
    assert not failed, f"{name}: public tests failed in the student's environment: {failed}"


def test_tools_reject_bad_input(tmp_path, built):
    with pytest.raises(ValueError, match="unknown assignment 'a9'"):
        assignments.master("a9")
    with pytest.raises(ValueError, match="no notebook at"):
        assignments.grade(assignments.autograder_zip(built[NAMES[0]]), tmp_path / "missing.ipynb")
    with pytest.raises(ValueError, match="expected one autograder zip"):
        assignments.autograder_zip(tmp_path)
    (tmp_path / "other.zip").write_bytes(b"")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("README", "not an autograder")
    with pytest.raises(ValueError, match="no environment.yml"):
        assignments.declared_environment(tmp_path / "other.zip")
    env = assignments.Environment("3.11", ("pip", "r-base"), ("numpy",))
    with pytest.raises(ValueError, match="conda package 'r-base'"):
        env.conda_extras()
    with pytest.raises(RuntimeError, match="declares Python 2.7"):
        assignments.clean_environment(assignments.Environment("2.7", (), ()), root=tmp_path)
    cli = subprocess.run([sys.executable, str(ROOT / "tools" / "assignments.py"), "grade"], capture_output=True, text=True)
    assert cli.returncode == 2 and "usage" not in cli.stdout and "build [NAME ...]" in cli.stderr
    cli = subprocess.run([sys.executable, str(ROOT / "tools" / "assignments.py"), "build", "a9"], capture_output=True, text=True)
    assert cli.returncode == 1 and "unknown assignment 'a9'" in cli.stderr
