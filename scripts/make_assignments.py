"""Write the student and instructor editions of every chapter.

Usage: python scripts/make_assignments.py [--out _build/assignments] chapters/*.ipynb

The instructor edition is the chapter as it is. The student edition is derived with nbformat:

- code cells tagged ``solution`` become stubs: each top-level function keeps its signature and
  docstring and its body raises ``NotImplementedError``; each top-level assignment becomes
  ``name = ...`` (an unanswered placeholder); every ``check(...)`` call stays, so the student gets
  feedback from the first run (an answer given as an expression, such as ``len(found)``, becomes
  ``...`` so that the stub reports "no answer yet" instead of failing); anything else in the cell
  is dropped. A solution cell that defines
  nothing and calls no check becomes one ``raise NotImplementedError`` line (tagged ``stub``).
- markdown cells between a ``{solution-start}`` and a ``{solution-end}`` directive are dropped;
- every ``{exercise}`` directive is turned into plain Markdown (Jupyter does not render MyST);
- all outputs and execution counts are cleared.

Each edition is written to ``OUT/<edition>/`` and zipped to ``OUT/<edition>.zip``.

The same chapters also become an nbgrader course (``OUT/nbgrader/``) and one Otter-Grader
assignment per chapter (``OUT/otter/chNN/``), written by ``scripts/course_formats``.
"""

from __future__ import annotations

import argparse
import ast
import copy
import re
import sys
import zipfile
from pathlib import Path

import nbformat

# scripts/ (the course_formats package) and the repository's ropegeo (its exercise registry) first
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from course_formats import write_course_formats  # noqa: E402
from course_formats.chapter import is_check_call  # noqa: E402

EXERCISE = re.compile(r"^```\{exercise\}[^\n]*\n(?P<body>.*?)^```\s*$", re.S | re.M)
LABEL = re.compile(r"^:label:\s*(\S+)\s*$", re.M)
OPTION = re.compile(r"^:[a-z-]+:.*$\n?", re.M)


def _tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def stub_source(source: str, label: str = "this exercise") -> str:
    """The student stub for one solution cell's source (see the module docstring)."""
    # IPython magics (%pip, !cmd) are not Python: leave such cells to the raise-only stub
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = ast.Module(body=[], type_ignores=[])
    lines = source.splitlines()
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # the signature: from the first decorator to the line that closes it with ':'
            # (comments between the signature and the body are solution text: dropped)
            first = node.lineno - 1 - len(node.decorator_list)
            last = node.lineno - 1
            while last < node.body[0].lineno - 1 and not lines[last].split("#")[0].rstrip().endswith(":"):
                last += 1
            out.extend(lines[first : last + 1])
            indent = " " * node.body[0].col_offset
            if ast.get_docstring(node, clean=False) is not None:
                out.extend(lines[node.body[0].lineno - 1 : node.body[0].end_lineno])
            out.append(f'{indent}raise NotImplementedError("{label}: write the body of {node.name}")')
            out.append("")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                # only names become placeholders: x[i] = ... or x.attr = ... is solution work
                if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(t, ast.Name) for t in target.elts):
                    names = ", ".join(t.id for t in target.elts)
                    blanks = ", ".join("..." for _ in target.elts)
                    out.append(f"{names} = {blanks}  # your answer")
                elif isinstance(target, ast.Name):
                    out.append(f"{target.id} = ...  # your answer")
        elif is_check_call(node):
            call = node.value
            if len(call.args) >= 2 and not isinstance(call.args[1], ast.Name):
                # an expression such as len(valid) would fail on a stub; ask for the answer itself
                call.args[1] = ast.Constant(value=...)
                out.append(ast.unparse(node) + "  # put your answer in place of ...")
            else:
                out.append(ast.unparse(node))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(ast.unparse(node))
    if not any(l and not l.startswith(("import", "from")) for l in out):
        return f'raise NotImplementedError("{label}: write your solution here")'
    return "\n".join(out).rstrip() + "\n"


def _plain_exercise(match: re.Match) -> str:
    body = match.group("body")
    label = LABEL.search(body)
    text = OPTION.sub("", body).strip()
    title = f"**Exercise `{label.group(1)}`.**" if label else "**Exercise.**"
    return f"{title} {text}\n"


def student_edition(nb):
    """Return a new notebook: the student edition of ``nb``."""
    nb = copy.deepcopy(nb)
    cells = []
    inside_solution = False
    label = "this exercise"
    for cell in nb.cells:
        src = cell.source
        if cell.cell_type == "markdown":
            if "{solution-start}" in src:
                m = re.search(r"\{solution-start\}\s*(\S+)", src)
                label = m.group(1) if m else label
                inside_solution = True
                continue
            if "{solution-end}" in src:
                inside_solution = False
                continue
            if inside_solution:
                continue
            cell.source = EXERCISE.sub(_plain_exercise, src)
        elif cell.cell_type == "code":
            if "solution" in _tags(cell):
                cell.source = stub_source(src, label)
                tags = (_tags(cell) - {"solution"}) | {"stub"}
                cell.metadata["tags"] = sorted(tags)
            cell.outputs = []
            cell.execution_count = None
        cells.append(cell)
    nb.cells = cells
    return nb


def _zip(folder: Path) -> Path:
    target = folder.with_suffix(".zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.glob("*.ipynb")):
            zf.write(path, f"{folder.name}/{path.name}")
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("_build/assignments"))
    args = parser.parse_args(argv)
    for edition in ("student", "instructor"):
        (args.out / edition).mkdir(parents=True, exist_ok=True)
    for path in args.notebooks:
        nb = nbformat.read(path, as_version=4)
        nbformat.write(nb, args.out / "instructor" / path.name)
        student = student_edition(nb)
        nbformat.validate(student)
        nbformat.write(student, args.out / "student" / path.name)
        stubs = sum("stub" in _tags(c) for c in student.cells)
        print(f"{path.name}: {stubs} solution cell(s) stubbed")
    for edition in ("student", "instructor"):
        print(f"wrote {_zip(args.out / edition)}")
    for line in write_course_formats(args.notebooks, args.out):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
