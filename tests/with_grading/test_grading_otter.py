"""The Otter-Grader assignments, graded end to end by Otter itself (``make test-grading``).

For each chapter: ``otter assign`` builds the student notebook and the autograder zip from the
master notebook; ``otter run`` (Otter's grading without Docker) grades the solutions (every
question gets its registry points), the student notebook with its stubs (zero on every question)
and, for the chapters in ``WRONG``, the solutions with one known wrong answer (exactly that
exercise's points lost). Skipped when otter-grader is not installed.
"""

import json

import pytest

pytest.importorskip("otter")

import nbformat  # noqa: E402
from grading_course import SELECTED, WRONG, registry_points, run, spoil, write_course  # noqa: E402


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return write_course(tmp_path_factory.mktemp("course")) / "otter"


def _grade(zip_path, nb, folder):
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "submission.ipynb")
    run(["otter", "run", "-a", str(zip_path), "-o", str(folder), str(folder / "submission.ipynb")], cwd=folder)
    results = json.loads((folder / "results.json").read_text())
    return {t["name"]: (t["score"], t["max_score"]) for t in results["tests"] if "score" in t}


@pytest.fixture(scope="module", params=SELECTED)
def graded(request, course):
    """Per submission, Otter's (score, max score) of each question of the chapter."""
    key = request.param
    folder = course / key
    master = next(folder.glob("*.ipynb"))
    run(["otter", "assign", master.name, "dist"], cwd=folder)
    zip_path = next((folder / "dist" / "autograder").glob("*.zip"))
    solution = nbformat.read(folder / "dist" / "autograder" / master.name, as_version=4)
    student = nbformat.read(folder / "dist" / "student" / master.name, as_version=4)
    scores = {"solution": _grade(zip_path, solution, folder / "graded-solution"),
              "stubs": _grade(zip_path, student, folder / "graded-stubs")}
    if key in WRONG:
        _, name, line = WRONG[key]
        scores["wrong"] = _grade(zip_path, spoil(solution, name, line), folder / "graded-wrong")
    return key, scores


def test_solutions_get_full_points(graded):
    key, scores = graded
    assert scores["solution"] == {label: (p, p) for label, p in registry_points(key).items()}


def test_stubs_get_zero(graded):
    key, scores = graded
    assert scores["stubs"] == {label: (0, p) for label, p in registry_points(key).items()}


def test_one_wrong_answer_loses_exactly_its_points(graded):
    key, scores = graded
    if key not in WRONG:
        pytest.skip(f"no known wrong answer for {key}")
    label = WRONG[key][0]
    expected = {lab: (0 if lab == label else p, p) for lab, p in registry_points(key).items()}
    assert scores["wrong"] == expected
