"""The Otter-Grader edition of a chapter: a master notebook in Otter Assign's format (Otter 7).

The notebook opens with a raw ``# ASSIGNMENT CONFIG`` cell. Every exercise is a question::

    # BEGIN QUESTION        (raw; name: the exercise id, points: from the registry)
    <prompt> <given cells>
    # BEGIN SOLUTION        (raw; code cells with # BEGIN SOLUTION / # END SOLUTION lines)
    # END SOLUTION
    # BEGIN TESTS           (raw; one code cell per test case, in Otter's OK format)
    # END TESTS
    # END QUESTION

A value answer has a visible test worth 0 points (an answer is there) and a hidden test worth the
question's points (the book's check); a function answer has one visible test, the check (see
:mod:`course_formats.answers`). When the solution has prose, a manually graded question
``<id>-reasoning`` (``manual: true``) follows, its solution the prose. ``otter assign`` turns the
notebook into the student's copy and an autograder zip (for Gradescope or ``otter run``).
"""

from __future__ import annotations

import copy

from nbformat.v4 import new_code_cell, new_markdown_cell, new_raw_cell

from ropegeo.book.exercises import REASONING_POINTS, exercise_points

from .answers import OTTER_MARKERS, answer_expression, answer_sources, check_lines, hidden, presence_lines
from .chapter import Exercise


def _config(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def assignment_config(name: str) -> str:
    """The raw ``# ASSIGNMENT CONFIG`` cell: tests in the notebook's metadata, OK format, no PDF."""
    return _config([
        "# ASSIGNMENT CONFIG",
        f"name: {name}",
        "requirements: requirements.txt",
        "init_cell: true",
        "check_all_cell: false",
        "export_cell: false",
        "solutions_pdf: false",
        "run_tests: false",
        "tests:",
        "  files: false",
        "  ok_format: true",
    ])


def _test_case(lines: list[str], *, hidden_case: bool, points: int):
    head = ['""" # BEGIN TEST CONFIG', f"hidden: {'true' if hidden_case else 'false'}", f"points: {points}",
            '""" # END TEST CONFIG']
    return new_code_cell("\n".join(head + ["import ropegeo.book.exercises", *lines]) + "\n")


def test_cells(ex: Exercise, points: int) -> list:
    """The test cases of ``ex`` (no output is printed: Otter compares a test's output with none)."""
    checks = [line for line in check_lines(ex, answer_expression(ex)) if not line.startswith("print")]
    if hidden(ex):
        return [_test_case(presence_lines(ex), hidden_case=False, points=0),
                _test_case(checks, hidden_case=True, points=points)]
    return [_test_case(checks, hidden_case=False, points=points)]


def question_cells(ex: Exercise) -> list:
    """The cells of one exercise (and of its written answer, when it has one)."""
    points = exercise_points(ex.label, ex.kind)
    cells = [new_raw_cell(_config(["# BEGIN QUESTION", f"name: {ex.label}", f"points: {points}"])),
             new_markdown_cell(ex.prompt), *[copy.deepcopy(c) for c in ex.given],
             new_raw_cell("# BEGIN SOLUTION")]
    answers = answer_sources(ex, OTTER_MARKERS)
    cells += [new_code_cell(s) for s in answers if s]
    cells += [new_raw_cell("# END SOLUTION"), new_raw_cell("# BEGIN TESTS"), *test_cells(ex, points),
              new_raw_cell("# END TESTS"), new_raw_cell("# END QUESTION")]
    if ex.prose:
        cells += [new_raw_cell(_config(["# BEGIN QUESTION", f"name: {ex.label}-reasoning", "manual: true",
                                        f"points: {REASONING_POINTS}"])),
                  new_markdown_cell(f"**Your reasoning for `{ex.label}`.** Answer the exercise's questions in "
                                    "words (graded by hand)."),
                  new_raw_cell("# BEGIN SOLUTION"), new_markdown_cell(ex.prose), new_raw_cell("# END SOLUTION"),
                  new_raw_cell("# END QUESTION")]
    return cells


def otter_notebook(nb, parts: list, name: str):
    """The chapter ``nb`` (read into ``parts``) as an Otter Assign master notebook named ``name``."""
    out = copy.deepcopy(nb)
    out.metadata.pop("widgets", None)
    out.cells = [new_raw_cell(assignment_config(name))]
    for part in parts:
        out.cells.extend(question_cells(part) if isinstance(part, Exercise) else [copy.deepcopy(part)])
    return out
