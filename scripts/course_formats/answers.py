"""Answer cells and test code for the course formats, from a chapter's solution cells.

A grader's answer cell is the solution cell with its answer between two marker lines (nbgrader:
``### BEGIN SOLUTION`` / ``### END SOLUTION``; Otter-Grader: ``# BEGIN SOLUTION`` /
``# END SOLUTION``), which the tool replaces by a stub in the student's copy. As in the student
edition, a function keeps its signature and docstring (only its body is marked) and imports stay;
the ``check(...)`` call leaves the answer cell and becomes the exercise's test.

Tests call the book's own check through its module (``ropegeo.book.exercises.check``), so a student
who rebinds ``check`` in the notebook does not change the grade. When the answer is a value (a
number, a tuple, an expression), the precise check is a hidden test: its messages say which way
an answer is off, so a visible pass/fail would let a student find a whole-number answer by trial;
the visible test only asks that an answer is there. A function (an "implement" exercise) cannot
be found by trial, so its precise check is the visible test.
"""

from __future__ import annotations

import ast

from .chapter import Exercise, is_check_call

NBGRADER_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
OTTER_MARKERS = ("# BEGIN SOLUTION", "# END SOLUTION")


def _spans(tree: ast.Module, lines: list[str]) -> list[tuple[str, int, int, ast.stmt]]:
    """(kind, first line, last line, node) for each top-level statement, 0-based and inclusive.

    Comment lines before a statement belong to it; kind is "check", "import", "function" or "answer".
    """
    spans, previous_end = [], 0
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
        while first > previous_end and lines[first - 1].strip().startswith("#"):
            first -= 1
        kind = ("check" if is_check_call(node) else "import" if isinstance(node, (ast.Import, ast.ImportFrom))
                else "function" if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else "answer")
        spans.append((kind, first, node.end_lineno - 1, node))
        previous_end = node.end_lineno
    return spans


def _function(node, first: int, last: int, lines: list[str], markers: tuple[str, str]) -> list[str]:
    """A function with its body between the markers (signature and docstring stay)."""
    body = node.body
    # the signature ends on the line that closes it with ':' (comments after it are solution text)
    sig_end = node.lineno - 1
    while sig_end < body[0].lineno - 1 and not lines[sig_end].split("#")[0].rstrip().endswith(":"):
        sig_end += 1
    kept = lines[first : sig_end + 1]
    rest_start = sig_end + 1
    if ast.get_docstring(node, clean=False) is not None:
        kept += lines[body[0].lineno - 1 : body[0].end_lineno]
        rest_start = body[0].end_lineno
    rest = lines[rest_start : last + 1]
    while rest and not rest[0].strip():
        rest.pop(0)
    if not rest:
        return kept
    indent = " " * body[-1].col_offset
    return kept + [indent + markers[0], *rest, indent + markers[1]]


def marked_source(source: str, markers: tuple[str, str]) -> str:
    """The solution cell ``source`` with its answer between ``markers`` and its check calls removed.

    Returns "" when nothing of the cell is left to answer (a cell that only calls ``check``).
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: the whole cell is the answer
        return f"{markers[0]}\n{source.rstrip()}\n{markers[1]}\n"
    lines = source.splitlines()
    out: list[str] = []
    block: list[str] = []

    def close():
        if block:
            out.extend([markers[0], *block, markers[1]])
            block.clear()

    for kind, first, last, node in _spans(tree, lines):
        if kind == "answer":
            block.extend(lines[first : last + 1])
            continue
        close()
        if kind == "import":
            out.extend(lines[first : last + 1])
        elif kind == "function":
            out.extend(["", *_function(node, first, last, lines, markers), ""])
    close()
    text = "\n".join(out).strip("\n")
    return text + "\n" if any(m in text for m in markers) else ""


def answer_expression(ex: Exercise) -> str:
    """The answer the solution passes to its check, as source (a name or an expression)."""
    return ast.unparse(ast.parse(ex.check_call).body[0].value.args[1])


def answer_sources(ex: Exercise, markers: tuple[str, str]) -> list[str]:
    """The exercise's answer cells (solution cells with markers; cells left with nothing to answer dropped).

    The last one opens with a comment naming what the test reads, which the tool's stub keeps.
    """
    sources = [s for s in (marked_source(c.source, markers) for c in ex.code) if s]
    if sources:
        sources[-1] = f"# your answer, as the test reads it: {answer_expression(ex)}\n" + sources[-1]
    return sources


def hidden(ex: Exercise) -> bool:
    """True when the exercise's precise check is a hidden test (a value answer, see the module)."""
    return not ex.answer_is_function


def check_lines(ex: Exercise, answer: str = "_answer") -> list[str]:
    """The precise test: the book's check on ``answer``, printed, and asserted."""
    return [
        f"_feedback = ropegeo.book.exercises.check({ex.label!r}, {answer})",
        "print(_feedback)",
        "assert _feedback.ok, _feedback.message",
    ]


def presence_lines(ex: Exercise) -> list[str]:
    """The visible test of a hidden check: the answer is computed and is not a stub's placeholder."""
    return [
        f"_answer = {answer_expression(ex)}  # a NameError here means the answer is missing",
        "assert _answer is not None and _answer is not ..., 'no answer yet: replace the stub with your solution'",
    ]


def test_header(ex: Exercise, points: int) -> list[str]:
    what = "checked when the notebook is graded" if hidden(ex) else "checked by the book's check(...)"
    unit = "point" if points == 1 else "points"
    return ["import ropegeo.book.exercises", "", f"# {ex.label}: {points} {unit}, your answer is {what}"]
