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
        'check("ch02-demo", answer)\n',
        metadata={"tags": ["solution"]},
    )
    sol.outputs = [new_output("stream", name="stdout", text="6\n")]
    return new_notebook(cells=[
        new_markdown_cell("# Title"),
        new_code_cell("x = 1", outputs=[new_output("execute_result", data={"text/plain": "1"}, execution_count=1)]),
        new_markdown_cell("```{exercise}\n:label: ch02-demo\nRotate two by three.\n```"),
        new_markdown_cell("```{solution-start} ch02-demo\n:class: dropdown\n```"),
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
    assert sources[2].startswith("**Exercise `ch02-demo`.** Rotate two by three.")
    stub = st.cells[3]
    assert stub.metadata["tags"] == ["stub"]
    assert 'raise NotImplementedError("ch02-demo: write the body of rotate")' in stub.source
    assert '"""Rotate x by m."""' in stub.source and "x * m" not in stub.source
    assert "answer = ...  # your answer" in stub.source
    assert "check('ch02-demo', answer)" in stub.source and "print" not in stub.source
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
    path = tmp_path / "01_demo.ipynb"
    nbformat.write(_notebook(), path)
    assert ma.main([str(path), "--out", str(tmp_path / "out")]) == 0
    import zipfile

    for edition in ("student", "instructor"):
        with zipfile.ZipFile(tmp_path / "out" / f"{edition}.zip") as zf:
            assert zf.namelist() == [f"{edition}/01_demo.ipynb"]
    inst = nbformat.read(tmp_path / "out" / "instructor" / "01_demo.ipynb", as_version=4)
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
