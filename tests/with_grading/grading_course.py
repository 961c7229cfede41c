"""Shared by the end-to-end grading tests: the chapters to grade, the tools' commands, the registry's points.

The course is generated from the chapters with ``scripts/make_assignments.py``'s generator into a
temporary folder; nbgrader and Otter-Grader then run as their command-line tools, in the
interpreter's own environment (``make test-grading`` creates ``.venv-grading`` with both pinned).
``ROPEGEO_GRADING_CHAPTERS=ch01,ch03`` limits the chapters graded (default: every chapter).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from course_formats import chapter_key, write_course_formats  # noqa: E402

from ropegeo.book.exercises import exercise_ids, exercise_points  # noqa: E402

CHAPTERS = {chapter_key(p.name): p for p in sorted((ROOT / "chapters").glob("*.ipynb"))}
SELECTED = [k.strip() for k in os.environ.get("ROPEGEO_GRADING_CHAPTERS", "").split(",") if k.strip()] or list(CHAPTERS)

#: One known wrong answer: the exercise, the answer's name and the line that spoils it (after the solution).
WRONG = {
    "ch01": ("ch01-half-similarity", "k_half", "k_half = k_half + 1  # a known wrong answer"),
    "ch02": ("ch02-score-by-hand", "value", "value = value + 1.0  # a known wrong answer"),
    "ch03": ("ch03-slow-pairs", "answer", "answer = answer + 1  # a known wrong answer"),
    "ch04": ("ch04-abf-slow", "count", "count = count + 1  # a known wrong answer"),
    "ch05": ("ch05-padding-offset", "padding_answer", "padding_answer = padding_answer + 1  # a known wrong answer"),
    "ch06": ("ch06-yarn-log", "L_match", "L_match = 2 * L_match  # a known wrong answer"),
    "ch07": ("ch07-shaw-ceiling", "ceiling", "ceiling = 2 * ceiling  # a known wrong answer"),
}


def environment() -> dict:
    """The tools' environment: this interpreter's scripts first on PATH (nbgrader calls `alembic`),
    and this repository's ropegeo first on the kernels' path."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run(args: list[str], cwd: Path) -> str:
    """Run a tool's command; fail the test with its output when it fails."""
    done = subprocess.run(args, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def write_course(out: Path) -> Path:
    """Generate the course formats of every chapter into ``out``."""
    write_course_formats(list(CHAPTERS.values()), out)
    return out


def kind(label: str) -> str:
    """An exercise's kind, read from its directive in the chapter (not through the generator)."""
    for path in CHAPTERS.values():
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        m = re.search(r":label: " + re.escape(label) + r"\s*\n\*\*(\w+)\.\*\*", text)
        if m:
            return m.group(1).lower()
    raise AssertionError(f"{label} is in no chapter")


def registry_points(key: str) -> dict[str, int]:
    """Points of each autograded exercise of chapter ``key``, from the registry."""
    return {label: exercise_points(label, kind(label)) for label in exercise_ids(key)}


def spoil(nb, name: str, line: str):
    """``nb`` with ``line`` appended to the first code cell that assigns ``name`` (a known wrong answer)."""
    nb = nbformat.from_dict(nb)
    pattern = re.compile(rf"^{re.escape(name)}\s*=", re.M)
    cell = next(c for c in nb.cells if c.cell_type == "code" and pattern.search(c.source))
    cell.source = cell.source.rstrip("\n") + "\n" + line + "\n"
    return nb
