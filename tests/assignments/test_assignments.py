"""The graded assignments: otter-grader builds them, and their autograders can tell right from wrong.

For each master in book/assignments/: ``otter assign`` must succeed (it runs every test on the solution),
the solution must score full marks, the unanswered student notebook zero, and a notebook with one subtly
wrong answer (a mutant below) must lose points on that question and only on it.
"""
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import assignments  # noqa: E402

# (question, text in the solution, wrong replacement): each is a mistake a student could make.
MUTANTS = {
    "a1_pairwise_importance": [
        ("q1", "return torch.softmax(logits, dim=1)",
         "return torch.exp(logits) / torch.exp(logits).sum(dim=1, keepdim=True)"),  # overflows at small τ
        ("q3", "G2 = 2 * beta * (Z1 - Z2)", "G2 = 2 * beta * (Z2 - Z1)"),  # sign of the positive-pair term
    ],
    "a2_deep_linear_pca": [
        ("q1", "w = w + lr * 2 * (X @ w)", "w = w - lr * 2 * (X @ w)"),  # descent instead of ascent
        ("q2", "g2 = 2 * W2 @ W1 @ X @ W1.T", "g2 = 2 * W2 @ W1 @ W1.T"),  # forgets X in one layer's gradient
    ],
    "a3_ssl_collapse": [
        ("q2", "return 2 * (lam[1] - lam[0])", "return lam[1] - lam[0]"),  # drops the factor 2 of the flow
    ],
}
NAMES = [m.stem for m in assignments.masters()]


@pytest.fixture(scope="module", params=NAMES)
def built(request):
    master = assignments.MASTERS / f"{request.param}.ipynb"
    return request.param, assignments.build(master)


def _grade_all(target, notebooks, tmp_path):
    """Grade several notebooks, two at a time (each ``otter run`` is mostly kernel start-up)."""
    paths = []
    for k, nb in enumerate(notebooks):
        folder = tmp_path / f"submission{k}"
        folder.mkdir()
        paths.append(folder / f"{target.name}.ipynb")
        nbformat.write(nb, paths[-1])
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda path: assignments.grade(target, path), paths))


def test_every_master_has_mutants():
    assert set(NAMES) == set(MUTANTS), "each assignment needs at least one mutant (a wrong answer its grader must catch)"


def test_solution_full_marks_student_zero_mutants_caught(built, tmp_path):
    name, target = built
    solution = nbformat.read(target / "autograder" / f"{name}.ipynb", as_version=4)
    student = nbformat.read(target / "student" / f"{name}.ipynb", as_version=4)
    mutants = []
    for question, right, wrong in MUTANTS[name]:
        mutant = nbformat.read(target / "autograder" / f"{name}.ipynb", as_version=4)
        cells = [c for c in mutant.cells if c.cell_type == "code" and right in c.source]
        assert len(cells) == 1, f"{name}: the solution text of {question} changed; update the mutant"
        cells[0].source = cells[0].source.replace(right, wrong)
        mutants.append(mutant)
    scores, blank, *graded = _grade_all(target, [solution, student, *mutants], tmp_path)
    assert scores and all(score == out_of > 0 for score, out_of in scores.values()), f"solution lost points: {scores}"
    assert set(blank) == set(scores) and all(score == 0 for score, _ in blank.values()), f"the unanswered notebook scored: {blank}"
    for (question, _, _), got in zip(MUTANTS[name], graded, strict=True):
        assert got[question][0] < got[question][1], f"{name}: the grader missed a wrong answer to {question}: {got}"
        others = {q: s for q, s in got.items() if q != question}
        assert all(s == m for s, m in others.values()), f"{name}: a wrong {question} cost points elsewhere: {got}"
