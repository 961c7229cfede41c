"""The student edition: solutions stubbed with nbformat, checks kept, nothing else raises."""

import importlib.util
import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("make_assignments", ROOT / "scripts" / "make_assignments.py")
ma = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ma)


def _notebook():
    sol = new_code_cell(
        'def rotate(x, m):\n    """Rotate x by m."""\n    return x * m\n\nanswer = rotate(2, 3)\nprint(answer)\n'
        'check("ch09-demo", answer)\n',
        metadata={"tags": ["solution"]},
    )
    sol.outputs = [new_output("stream", name="stdout", text="6\n")]
    return new_notebook(cells=[
        new_markdown_cell("# Title"),
        new_code_cell("x = 1", outputs=[new_output("execute_result", data={"text/plain": "1"}, execution_count=1)]),
        new_markdown_cell("```{exercise}\n:label: ch09-demo\nRotate two by three.\n```"),
        new_markdown_cell("```{solution-start} ch09-demo\n:class: dropdown\n```"),
        new_markdown_cell("The trick is to multiply."),
        sol,
        new_markdown_cell("```{solution-end}\n```"),
        new_markdown_cell("Closing words."),
    ])


def test_student_edition_structure():
    st = ma.student_edition(_notebook())
    sources = [c.source for c in st.cells]
    assert "The trick is to multiply." not in sources
    assert not any("solution-start" in s or "solution-end" in s for s in sources)
    assert sources[2].startswith("**Exercise `ch09-demo`.** Rotate two by three.")
    stub = st.cells[3]
    assert stub.metadata["tags"] == ["stub"]
    assert 'raise NotImplementedError("ch09-demo: write the body of rotate")' in stub.source
    assert '"""Rotate x by m."""' in stub.source and "x * m" not in stub.source
    assert "answer = ...  # your answer" in stub.source
    assert "check('ch09-demo', answer)" in stub.source and "print" not in stub.source
    assert all(c.get("outputs", []) == [] for c in st.cells if c.cell_type == "code")
    nbformat.validate(st)


def test_check_on_an_expression_becomes_placeholder():
    src = ma.stub_source('found = [s for s in range(9) if s > 3]\ncheck("ch01-x", len(found))\n', "ch01-x")
    assert "found = ...  # your answer" in src
    assert "check('ch01-x', ...)" in src and "len(found)" not in src and "s > 3" not in src


def test_signature_kept_comments_and_tuples_handled():
    src = ma.stub_source(
        "def f(a,\n      b) -> int:\n    # the trick: add\n    return a + b\n\nx, y = f(1, 2), 3\nw = [0, 0]\nw[:1] = [5]\n", "ch01-z")
    assert "def f(a,\n      b) -> int:" in src and "trick" not in src and "a + b" not in src
    assert "x, y = ..., ...  # your answer" in src
    assert "w = ...  # your answer" in src and "w[:1]" not in src
    exec(compile(src, "stub", "exec"), {})  # the stub itself runs without error


def test_stub_of_cell_without_definitions_raises():
    src = ma.stub_source("import numpy as np\nnp.ones(3).sum()\n", "ch03-x")
    assert src.startswith('raise NotImplementedError("ch03-x')


def test_stub_of_magic_cell_raises():
    assert "NotImplementedError" in ma.stub_source("%timeit 1+1\n", "ch03-y")


def test_main_writes_both_editions_and_zips(tmp_path):
    from ropegeo.book.exercises import exercise

    exercise("ch09-demo")(lambda answer: (answer == 6, "six"))  # the demo's check, in a chapter the book lacks
    path = tmp_path / "09_demo.ipynb"
    nb = _notebook()
    nb.cells.insert(1, new_code_cell('%pip install "ropegeo[book] @ git+https://example.org/ropegeo"'))
    nbformat.write(nb, path)
    assert ma.main([str(path), "--out", str(tmp_path / "out")]) == 0
    import zipfile

    for fmt in ("nbgrader/source/ch09", "otter/ch09"):
        assert (tmp_path / "out" / fmt / "09_demo.ipynb").exists()

    for edition in ("student", "instructor"):
        with zipfile.ZipFile(tmp_path / "out" / f"{edition}.zip") as zf:
            assert zf.namelist() == [f"{edition}/09_demo.ipynb"]
    inst = nbformat.read(tmp_path / "out" / "instructor" / "09_demo.ipynb", as_version=4)
    assert inst == nbformat.read(path, as_version=4)


STUDENT = ROOT / "_build" / "assignments" / "student"


@pytest.mark.skipif(not os.environ.get("ROPEGEO_RUN_STUDENT_EDITIONS"), reason="run by `make assignments` (set ROPEGEO_RUN_STUDENT_EDITIONS=1)")
@pytest.mark.parametrize("chapter", sorted(p.name for p in (ROOT / "chapters").glob("*.ipynb")))
def test_student_edition_runs_with_stub_errors_only(chapter):
    from nbclient import NotebookClient

    path = STUDENT / chapter
    assert path.exists(), f"{path} missing: run `make assignments` first"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT / "chapters")}}).execute()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "stub" in cell.metadata.get("tags", []):
            assert all(e.ename == "NotImplementedError" for e in errors), (chapter, cell.source, errors)
        else:
            assert not errors, f"{chapter}: a non-stub cell raised {errors[0].ename}: {errors[0].evalue}\n{cell.source}"
    stub_cells = [c for c in nb.cells if "stub" in c.metadata.get("tags", [])]
    checks = [c for c in stub_cells if "check(" in c.source]
    for cell in checks:  # every check gave feedback, and it is "not yet" on a stub
        text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)
        assert "not yet" in text, (chapter, cell.source, text)


# ---- the course formats (nbgrader, Otter-Grader): structure, without the tools ----------------------

import ast  # noqa: E402
import functools  # noqa: E402
import re  # noqa: E402

import yaml  # noqa: E402

from ropegeo.book.exercises import REASONING_POINTS, exercise, exercise_ids, exercise_points  # noqa: E402

sys_path_scripts = str(ROOT / "scripts")
import sys  # noqa: E402

if sys_path_scripts not in sys.path:
    sys.path.insert(0, sys_path_scripts)
from course_formats import chapter_key, read_chapter, write_course_formats  # noqa: E402
from course_formats.answers import NBGRADER_MARKERS, OTTER_MARKERS, hidden, marked_source  # noqa: E402
from course_formats.chapter import Exercise  # noqa: E402

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
NBGRADER_KEYS = {"grade", "grade_id", "locked", "schema_version", "solution", "task"}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    out = tmp_path_factory.mktemp("course")
    write_course_formats(CHAPTERS, out)
    return out


@functools.lru_cache(maxsize=None)
def _exercises(path):
    return [p for p in read_chapter(nbformat.read(path, as_version=4)) if isinstance(p, Exercise)]


@functools.lru_cache(maxsize=None)
def _markdown(path):
    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


def _kind(label):
    """The exercise's kind read straight from its directive in the chapter (not through the generator)."""
    for path in CHAPTERS:
        m = re.search(r":label: " + re.escape(label) + r"\s*\n\*\*(\w+)\.\*\*", _markdown(path))
        if m:
            return m.group(1).lower()
    raise AssertionError(f"{label} not found in any chapter")


def _expected_points(key):
    """The registry's points for a chapter: every registered exercise, plus the written answers."""
    exercises = {e.label: e for path in CHAPTERS if chapter_key(path.name) == key for e in _exercises(path)}
    auto = sum(exercise_points(i, _kind(i)) for i in exercise_ids(key))
    return auto, REASONING_POINTS * sum(bool(e.prose) for e in exercises.values())


def test_every_registered_exercise_is_in_its_chapter():
    for path in CHAPTERS:
        key = chapter_key(path.name)
        assert sorted(e.label for e in _exercises(path)) == exercise_ids(key), path.name


def test_points_follow_the_kind_and_a_registered_override():
    assert [exercise_points("ch01-half-similarity", k) for k in ("compute", "derive", "implement", "investigate")] \
        == [1, 2, 2, 3]

    @exercise("ch09-points-demo", points=5)
    def _demo(answer):  # registered only for this test
        return True, "ok"

    assert exercise_points("ch09-points-demo", "compute") == 5
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="points"):
            exercise("ch09-points-bad", points=bad)
    with pytest.raises(ValueError, match="kind"):
        exercise_points("ch01-half-similarity", "guess")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_answer_cells_keep_the_whole_solution(path):
    """Markers removed, an answer cell is the solution cell without its check call: nothing lost."""
    for ex in _exercises(path):
        for cell in ex.code:
            without_check = [n for n in ast.parse(cell.source).body if not _is_check(n)]
            for markers in (NBGRADER_MARKERS, OTTER_MARKERS):
                marked = marked_source(cell.source, markers)
                kept = "\n".join(l for l in marked.splitlines() if l.strip() not in markers)
                assert ast.dump(ast.parse(kept)) == ast.dump(ast.Module(body=without_check, type_ignores=[])), \
                    (ex.label, marked)
                stubbed = re.sub(r"(?ms)^( *)" + re.escape(markers[0]) + r"$.*?^ *" + re.escape(markers[1]) + "$",
                                 lambda m: m.group(1) + "raise NotImplementedError()", marked)
                ast.parse(stubbed)  # the student's stub is still Python


def _is_check(node):
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and getattr(
        node.value.func, "id", getattr(node.value.func, "attr", "")) == "check"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_nbgrader_source_structure(course, path):
    key = chapter_key(path.name)
    nb = nbformat.read(course / "nbgrader" / "source" / key / path.name, as_version=4)
    nbformat.validate(nb)
    graded = [c for c in nb.cells if "nbgrader" in c.metadata]
    ids = [c.metadata.nbgrader["grade_id"] for c in graded]
    assert len(ids) == len(set(ids))
    auto = manual = 0
    for cell in graded:
        meta = cell.metadata.nbgrader
        assert meta["schema_version"] == 3 and NBGRADER_KEYS <= set(meta), meta
        assert ("points" in meta) == meta["grade"], meta
        if meta["solution"] and not meta["grade"]:  # autograded answer
            assert cell.cell_type == "code" and cell.source.count(NBGRADER_MARKERS[0]) >= 1
            assert cell.source.count(NBGRADER_MARKERS[0]) == cell.source.count(NBGRADER_MARKERS[1])
        elif meta["grade"] and not meta["solution"]:  # autograder tests
            assert cell.cell_type == "code" and meta["locked"] and meta["points"] > 0
            label = meta["grade_id"].removesuffix("-tests")
            assert meta["points"] == exercise_points(label, _kind(label))
            assert f"check({label!r}," in cell.source
            auto += meta["points"]
        elif meta["grade"] and meta["solution"]:  # manually graded answer: the written reasoning
            assert cell.cell_type == "markdown" and meta["points"] == REASONING_POINTS
            manual += meta["points"]
    assert (auto, manual) == _expected_points(key)
    tests = {c.metadata.nbgrader["grade_id"].removesuffix("-tests"): c.source for c in graded
             if c.metadata.nbgrader["grade"] and not c.metadata.nbgrader["solution"]}
    for ex in _exercises(path):
        has_hidden = "### BEGIN HIDDEN TESTS" in tests[ex.label]
        assert has_hidden == hidden(ex) and has_hidden == ("### END HIDDEN TESTS" in tests[ex.label])
        if has_hidden:  # the visible part never calls the check
            assert "check(" not in tests[ex.label].split("### BEGIN HIDDEN TESTS")[0]


def _otter_blocks(nb):
    """Questions of an Otter master notebook: name -> (config, cells between its begin and end)."""
    questions, current, depth = {}, None, []
    for cell in nb.cells:
        first = cell.source.splitlines()[0] if cell.source else ""
        if cell.cell_type == "raw" and first.startswith("# BEGIN "):
            depth.append(first.removeprefix("# BEGIN "))
            if first == "# BEGIN QUESTION":
                config = yaml.safe_load("\n".join(cell.source.splitlines()[1:]))
                current = questions.setdefault(config["name"], (config, []))
            elif current is not None:
                current[1].append(first)
        elif cell.cell_type == "raw" and first.startswith("# END "):
            assert depth.pop() == first.removeprefix("# END "), (first, depth)
            if first == "# END QUESTION":
                current = None
            elif current is not None:
                current[1].append(first)
        elif current is not None:
            current[1].append(cell)
    assert depth == []
    return questions


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_otter_master_structure(course, path):
    key = chapter_key(path.name)
    nb = nbformat.read(course / "otter" / key / path.name, as_version=4)
    nbformat.validate(nb)
    assert nb.cells[0].cell_type == "raw" and nb.cells[0].source.startswith("# ASSIGNMENT CONFIG")
    config = yaml.safe_load("\n".join(nb.cells[0].source.splitlines()[1:]))
    reqs = (course / "otter" / key / config["requirements"]).read_text().splitlines()
    assert config["name"] == key and reqs[0].startswith("ropegeo[book] @ ")
    assert ("from myst_nb import" in path.read_text()) == any(r.startswith("myst-nb==") for r in reqs)
    questions = _otter_blocks(nb)
    auto = sum(q["points"] for q, _ in questions.values() if not q.get("manual"))
    manual = sum(q["points"] for q, _ in questions.values() if q.get("manual"))
    assert (auto, manual) == _expected_points(key)
    for ex in _exercises(path):
        config, cells = questions[ex.label]
        assert config["points"] == exercise_points(ex.label, _kind(ex.label))
        markers = [c for c in cells if isinstance(c, str)]
        assert markers == ["# BEGIN SOLUTION", "# END SOLUTION", "# BEGIN TESTS", "# END TESTS"]
        tests = cells[cells.index("# BEGIN TESTS") + 1 : cells.index("# END TESTS")]
        configs = [yaml.safe_load(t.source.split('""" # BEGIN TEST CONFIG')[1].split('""" # END TEST CONFIG')[0])
                   for t in tests]
        assert sum(c["points"] for c in configs) == config["points"]
        assert [c["hidden"] for c in configs] == ([False, True] if hidden(ex) else [False])
        assert not any("print(" in t.source for t in tests)  # Otter compares a test's output with none
        answers = cells[cells.index("# BEGIN SOLUTION") + 1 : cells.index("# END SOLUTION")]
        assert answers and all(OTTER_MARKERS[0] in c.source for c in answers)
        if ex.prose:
            assert questions[f"{ex.label}-reasoning"][0]["manual"] is True
