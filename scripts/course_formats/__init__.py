"""The book's chapters as course material for the graders instructors use: nbgrader and Otter-Grader.

``write_course_formats(chapters, out)`` writes, from the chapter notebooks alone (their tagged
solution cells) and the exercise registry (``ropegeo.book.exercises``: checks and points):

- ``out/nbgrader/``: an nbgrader course (``nbgrader_config.py``, ``source/chNN/<chapter>.ipynb``);
  ``cd out/nbgrader && nbgrader generate_assignment chNN`` releases a chapter;
- ``out/otter/chNN/<chapter>.ipynb``: an Otter Assign master notebook per chapter, with the
  ``requirements.txt`` its autograder installs; ``otter assign <notebook> dist`` builds it.

Modules: ``chapter`` (reading a chapter into plain cells and exercises), ``answers`` (answer cells
with solution markers, test code), ``nbgrader_course`` and ``otter_assignment`` (one format each).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from .chapter import Exercise, chapter_key, read_chapter
from .nbgrader_course import CONFIG, nbgrader_notebook
from .otter_assignment import otter_notebook

__all__ = ["write_course_formats", "read_chapter", "chapter_key", "Exercise", "install_requirement", "requirements"]

INSTALL = re.compile(r"%pip install[^\n\"]*\"(?P<req>[^\"]+)\"")


def install_requirement(nb) -> str:
    """The requirement the chapter's first cell installs on Colab (``ropegeo[book] @ git+...``)."""
    for cell in nb.cells:
        m = INSTALL.search(cell.source) if cell.cell_type == "code" else None
        if m:
            return m.group("req")
    raise ValueError("the chapter has no '%pip install \"...\"' cell naming the ropegeo requirement")


#: Modules a chapter may import beyond ropegeo[book], and the distribution that provides each (its pin is
#: read from the book's requirements.txt).
EXTRA_DISTRIBUTIONS = {"myst_nb": "myst-nb"}


def requirements(nb, pins: Path) -> str:
    """What an autograder installs to run the chapter: ropegeo (as the chapter's first cell installs
    it) and the pinned extras the chapter imports (``myst_nb`` for its glued numbers)."""
    lines = [install_requirement(nb)]
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    pinned = {re.split(r"[=<>~ ]", l)[0].lower(): l.strip() for l in pins.read_text().splitlines()
              if l.strip() and not l.startswith(("#", "-"))}
    for module, dist in EXTRA_DISTRIBUTIONS.items():
        if re.search(rf"^\s*(from|import)\s+{module}\b", code, re.M):
            lines.append(pinned.get(dist, dist))
    return "\n".join(lines) + "\n"


def write_course_formats(chapters: list[Path], out: Path) -> list[str]:
    """Write the nbgrader course and the Otter assignments of ``chapters`` under ``out``; one line each."""
    course = out / "nbgrader"
    (course / "source").mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(CONFIG)
    report = []
    for path in chapters:
        nb = nbformat.read(path, as_version=4)
        key, parts = chapter_key(path.name), read_chapter(nb)
        for folder, edition in ((course / "source" / key, nbgrader_notebook(nb, parts)),
                                (out / "otter" / key, otter_notebook(nb, parts, key))):
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.validate(edition)
            nbformat.write(edition, folder / path.name)
        pins = Path(__file__).resolve().parents[2] / "requirements.txt"
        (out / "otter" / key / "requirements.txt").write_text(requirements(nb, pins))
        n = sum(isinstance(p, Exercise) for p in parts)
        report.append(f"{path.name}: {n} exercises -> nbgrader source/{key}, otter {key}")
    return report
