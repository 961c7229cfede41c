"""The nbgrader course, graded end to end by nbgrader itself (``make test-grading``).

For each chapter: ``nbgrader generate_assignment`` releases it; ``nbgrader autograde`` grades the
instructor's solutions (the source notebook: every autograded exercise gets its registry points),
the released student notebook with its stubs (zero on every autograded cell) and, for the chapters
in ``WRONG``, the solutions with one known wrong answer (exactly that exercise's points lost).
Skipped when nbgrader is not installed.
"""

import pytest

pytest.importorskip("nbgrader")

import nbformat  # noqa: E402
from grading_course import SELECTED, WRONG, registry_points, run, spoil, write_course  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return write_course(tmp_path_factory.mktemp("course")) / "nbgrader"


def _submit(course, key, student, nb, name):
    folder = course / "submitted" / student / key
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)


@pytest.fixture(scope="module", params=SELECTED)
def graded(request, course):
    """Per student, the score of each autograder-tests cell of the chapter, and the gradebook's totals."""
    key = request.param
    run(["nbgrader", "generate_assignment", key, "--force"], cwd=course)
    source = next((course / "source" / key).glob("*.ipynb"))
    solution = nbformat.read(source, as_version=4)
    _submit(course, key, "solution", solution, source.name)
    _submit(course, key, "stubs", nbformat.read(course / "release" / key / source.name, as_version=4), source.name)
    if key in WRONG:
        _, name, line = WRONG[key]
        _submit(course, key, "wrong", spoil(solution, name, line), source.name)
    run(["nbgrader", "autograde", key, "--force"], cwd=course)
    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in ("solution", "stubs", "wrong"):
            if student == "wrong" and key not in WRONG:
                continue
            sub = gb.find_submission(key, student)
            tests = {g.name.removesuffix("-tests"): g.score for g in sub.notebooks[0].grades if g.name.endswith("-tests")}
            scores[student] = (tests, sub.code_score, sub.max_code_score)
    return key, scores


def test_solutions_get_full_points(graded):
    key, scores = graded
    tests, code, max_code = scores["solution"]
    assert tests == registry_points(key)
    assert code == max_code == sum(registry_points(key).values())


def test_stubs_get_zero(graded):
    key, scores = graded
    tests, code, max_code = scores["stubs"]
    assert set(tests) == set(registry_points(key)) and all(v == 0 for v in tests.values()), tests
    assert code == 0 and max_code == sum(registry_points(key).values())


def test_one_wrong_answer_loses_exactly_its_points(graded):
    key, scores = graded
    if key not in WRONG:
        pytest.skip(f"no known wrong answer for {key}")
    label = WRONG[key][0]
    tests, code, _ = scores["wrong"]
    expected = dict(registry_points(key), **{label: 0})
    assert tests == expected
    assert code == sum(registry_points(key).values()) - registry_points(key)[label]
