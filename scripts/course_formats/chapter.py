"""A chapter notebook read as course material: plain cells and exercises.

``read_chapter(nb)`` walks the chapter once and returns its parts in order: every cell outside an
exercise's solution is a plain cell (outputs cleared), and every ``{exercise}`` directive with the
solution that follows it (``{solution-start}`` ... ``{solution-end}``) is an :class:`Exercise`.
The course formats (nbgrader, Otter-Grader) are written from these parts, so they read the
chapter's tagged solution cells exactly as the student edition does (CONTRIBUTING, "Exercises").
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass, field

EXERCISE = re.compile(r"^```\{exercise\}[^\n]*\n(?P<body>.*?)^```\s*$", re.S | re.M)
LABEL = re.compile(r"^:label:\s*(\S+)\s*$", re.M)
OPTION = re.compile(r"^:[a-z-]+:.*$\n?", re.M)
KIND = re.compile(r"\*\*(Compute|Derive|Implement|Investigate)\.\*\*")
DIRECTIVE = re.compile(r"^```\{solution-(start|end)\}[^\n]*\n(?::[a-z-]+:.*\n)*```\s*$", re.M)
CHAPTER = re.compile(r"^(\d\d)_")


@dataclass
class Exercise:
    """One exercise: its id, kind, prompt, given cells and solution (code cells and prose)."""

    label: str
    kind: str
    prompt: str  #: the exercise text as plain Markdown (Jupyter does not render MyST directives)
    given: list = field(default_factory=list)  #: untagged code cells between the prompt and the solution
    solution: list = field(default_factory=list)  #: the solution's cells, code (tagged) and markdown
    #: the ``check(...)`` call of the solution (source), whose answer the graders test
    check_call: str = ""

    @property
    def code(self) -> list:
        """The solution's code cells."""
        return [c for c in self.solution if c.cell_type == "code"]

    @property
    def prose(self) -> str:
        """The solution's written part (its markdown), the model answer to the reasoning questions."""
        return "\n\n".join(c.source.strip() for c in self.solution if c.cell_type == "markdown").strip()

    @property
    def answer_is_function(self) -> bool:
        """True when the check receives a function the solution defines (an "implement" answer)."""
        call = ast.parse(self.check_call).body[0].value
        defined = {n.name for c in self.code for n in _tree(c.source).body if isinstance(n, ast.FunctionDef)}
        return isinstance(call.args[1], ast.Name) and call.args[1].id in defined


def chapter_key(name: str) -> str:
    """``"ch01"`` for ``01_permutation_symmetry.ipynb``."""
    m = CHAPTER.match(name)
    if m is None:
        raise ValueError(f"chapter notebook names start with two digits and '_', got {name!r}")
    return f"ch{m.group(1)}"


def _tree(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError:  # IPython magics: not Python, holds no definitions
        return ast.Module(body=[], type_ignores=[])


def is_check_call(node: ast.stmt) -> bool:
    """True for a top-level statement that is a call of ``check(...)``."""
    call = node.value if isinstance(node, ast.Expr) else None
    if not isinstance(call, ast.Call):
        return False
    fn = call.func
    name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
    return name == "check"


def _check_calls(source: str) -> list[str]:
    return [ast.unparse(n) for n in _tree(source).body if is_check_call(n)]


def _plain(cell, source: str):
    out = copy.deepcopy(cell)
    out.source = source
    if out.cell_type == "code":
        out.outputs, out.execution_count = [], None
    return out


def _exercise(body: str) -> Exercise:
    label = LABEL.search(body)
    if label is None:
        raise ValueError(f"an exercise directive without :label: ({body[:60]!r})")
    kind = KIND.search(body)
    text = OPTION.sub("", body).strip()
    prompt = f"**Exercise `{label.group(1)}`.** {text}\n"
    return Exercise(label.group(1), kind.group(1).lower() if kind else "compute", prompt)


def _split_markdown(cell, parts: list, pending: list) -> None:
    """Split a markdown cell at its exercise directives: text before one stays plain."""
    pos = 0
    for m in EXERCISE.finditer(cell.source):
        before = cell.source[pos : m.start()].strip()
        if before:
            parts.append(_plain(cell, before))
        pending.append(_exercise(m.group("body")))
        parts.append(pending[-1])
        pos = m.end()
    rest = cell.source[pos:].strip()
    if rest:
        pending[-1].given.append(_plain(cell, rest))


def read_chapter(nb) -> list:
    """The chapter's parts in order: plain cells (outputs cleared) and :class:`Exercise` records."""
    parts: list = []
    pending: list[Exercise] = []  # exercises whose solution has not started yet
    current: Exercise | None = None  # the exercise whose solution is being read
    for cell in nb.cells:
        src = cell.source
        if cell.cell_type == "markdown" and "{solution-start}" in src:
            label = re.search(r"\{solution-start\}\s*(\S+)", src).group(1)
            current = next((e for e in pending if e.label == label), None)
            if current is None:
                raise ValueError(f"solution-start {label!r} has no exercise directive before it")
            pending.remove(current)
            prose = DIRECTIVE.sub("", src).strip()
            if prose:
                current.solution.append(_plain(cell, prose))
        elif cell.cell_type == "markdown" and "{solution-end}" in src:
            current = None
        elif current is not None:
            current.solution.append(_plain(cell, src))
        elif cell.cell_type == "markdown" and EXERCISE.search(src):
            _split_markdown(cell, parts, pending)
        elif pending and "solution" not in cell.metadata.get("tags", []):
            pending[-1].given.append(_plain(cell, src))  # what the student is given, in order
        else:
            parts.append(_plain(cell, src))
    for ex in (p for p in parts if isinstance(p, Exercise)):
        calls = [c for cell in ex.code for c in _check_calls(cell.source)]
        if not calls:
            raise ValueError(f"{ex.label}: its solution calls no check(...)")
        ex.check_call = calls[-1]
    return parts
