"""The nbgrader edition of a chapter: ``source/chNN/<chapter>.ipynb`` of an nbgrader course.

Every exercise becomes cells with nbgrader metadata (schema version 3):

- its prompt, read-only (``locked``);
- each solution code cell an autograded answer cell (``solution``), the answer between
  ``### BEGIN SOLUTION`` / ``### END SOLUTION`` (see :mod:`course_formats.answers`);
- one autograder-tests cell (``grade``, ``locked``) worth the exercise's points from the registry
  (``ropegeo.book.exercises.exercise_points``); a value answer's precise check is hidden
  (``### BEGIN HIDDEN TESTS``);
- when the solution has prose (its reasoning), a manually graded Markdown answer cell
  (``solution`` and ``grade``) worth ``REASONING_POINTS``, whose source is that prose (the model
  answer nbgrader removes from the student's copy).

Everything else in the chapter stays as it is, outputs cleared.
"""

from __future__ import annotations

import copy

from nbformat.v4 import new_code_cell, new_markdown_cell

from ropegeo.book.exercises import REASONING_POINTS, exercise_points

from .answers import (NBGRADER_MARKERS, answer_expression, answer_sources, check_lines, hidden, presence_lines,
                      test_header)
from .chapter import Exercise

SCHEMA_VERSION = 3
HIDDEN = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")

#: The course's nbgrader_config.py: long cells (a chapter trains small heads) get time to finish.
CONFIG = """\
# nbgrader configuration of the ropegeo course (written by scripts/make_assignments.py)
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "ropegeo"
c.Execute.timeout = 900
"""


def grade_metadata(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: int | None = None) -> dict:
    """nbgrader's cell metadata (schema version 3)."""
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return meta


def _tagged(cell, meta: dict):
    cell.metadata["nbgrader"] = meta
    return cell


def test_source(ex: Exercise, points: int) -> str:
    """The autograder-tests cell of ``ex``: visible presence test and hidden precise check, or the check."""
    lines = test_header(ex, points)
    if hidden(ex):
        lines += presence_lines(ex) + [HIDDEN[0], *check_lines(ex), HIDDEN[1]]
    else:
        lines += check_lines(ex, answer_expression(ex))
    return "\n".join(lines) + "\n"


def exercise_cells(ex: Exercise) -> list:
    """The cells of one exercise in the nbgrader edition."""
    points = exercise_points(ex.label, ex.kind)
    cells = [_tagged(new_markdown_cell(ex.prompt), grade_metadata(f"{ex.label}-prompt", grade=False,
                                                                    solution=False, locked=True))]
    cells += [copy.deepcopy(c) for c in ex.given]
    answers = answer_sources(ex, NBGRADER_MARKERS)
    for n, source in enumerate(s for s in answers if s):
        cells.append(_tagged(new_code_cell(source), grade_metadata(f"{ex.label}-answer-{n + 1}", grade=False,
                                                                   solution=True, locked=False)))
    cells.append(_tagged(new_code_cell(test_source(ex, points)),
                         grade_metadata(f"{ex.label}-tests", grade=True, solution=False, locked=True, points=points)))
    if ex.prose:
        cells.append(new_markdown_cell(f"**Your reasoning for `{ex.label}`.** Answer the exercise's questions "
                                       "in words in the cell below (graded by hand)."))
        cells.append(_tagged(new_markdown_cell(ex.prose), grade_metadata(
            f"{ex.label}-reasoning", grade=True, solution=True, locked=False, points=REASONING_POINTS)))
    return cells


def nbgrader_notebook(nb, parts: list):
    """The chapter ``nb`` (read into ``parts``) as an nbgrader source notebook."""
    out = copy.deepcopy(nb)
    out.metadata.pop("widgets", None)
    out.cells = []
    for part in parts:
        out.cells.extend(exercise_cells(part) if isinstance(part, Exercise) else [copy.deepcopy(part)])
    return out
