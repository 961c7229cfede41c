"""Checks every chapter shares: glued names resolve, no errors stored, exercises complete."""

import json
import re

import pytest
from glue import CHAPTERS, read_glued

NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glued_name_in_the_prose_is_computed(path):
    values, used = read_glued(path)
    missing = sorted(used - set(values))
    assert not missing, f"prose uses glue names no cell computes: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_have_no_errors_and_run_in_order(path):
    nb = json.loads(path.read_text())
    counts = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        assert not [o for o in cell.get("outputs", []) if o["output_type"] == "error"], cell["source"]
        counts.append(cell.get("execution_count"))
    assert counts and all(c is not None for c in counts), "every code cell must be executed"
    assert counts == list(range(1, len(counts) + 1)), "cells must be executed once, top to bottom"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_at_least_four_exercises_each_with_a_solution(path):
    nb = json.loads(path.read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    labels = re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", text)
    solved = re.findall(r"```\{solution-start\} (\S+)", text)
    assert len(labels) >= 4, f"{path.name} has {len(labels)} exercises"
    assert sorted(labels) == sorted(solved), "every exercise needs exactly one solution block"
    tagged = [c for c in nb["cells"] if "solution" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) >= len(labels)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_opens_with_goals_and_install_cell(path):
    nb = json.loads(path.read_text())
    first_md = "".join(nb["cells"][0]["source"])
    assert first_md.startswith("# ")
    head = "\n".join("".join(c["source"]) for c in nb["cells"][:4])
    assert "What you will be able to do" in head
    code = [c for c in nb["cells"] if c["cell_type"] == "code"][0]
    assert "import ropegeo" in "".join(code["source"]) and "hide-cell" in code["metadata"].get("tags", [])


def test_the_book_build_skips_every_virtual_environment_the_makefile_creates():
    # `make test-torch` creates .venv-torch beside .venv; a book build that read it would parse the
    # READMEs of every installed package
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    makefile = (root / "Makefile").read_text()
    venvs = re.findall(r"^(?:VENV|TORCH_VENV)\s*:?=\s*(\S+)", makefile, flags=re.M)
    assert sorted(venvs) == [".venv", ".venv-torch"]
    config = (root / "_config.yml").read_text()
    excluded = re.search(r"^exclude_patterns:\s*\[(.*)\]", config, flags=re.M).group(1)
    for venv in venvs:
        assert f'"{venv}/*"' in excluded, venv


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_glued_values_are_plain_python_numbers(path):
    """myst-nb formats a glued number from its text/plain repr: ``np.int64(20)`` fails under ``:,``
    (a book-build warning, so `make test` fails late); glue ``int(x)`` / ``float(x)`` instead."""
    nb = json.loads(path.read_text())
    bad = [o["metadata"]["scrapbook"]["name"] for c in nb["cells"] for o in c.get("outputs", [])
           if o.get("metadata", {}).get("scrapbook")
           and re.match(r"np\.\w+\(", "".join(o["data"].get("application/papermill.record/text/plain", "")))]
    assert not bad, f"glued as numpy scalars (glue int(x) or float(x)): {bad}"


def test_glued_numpy_scalar_check_can_fail(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [{"output_type": "display_data", "metadata": {
        "scrapbook": {"name": "n", "mime_prefix": "application/papermill.record/"}},
        "data": {"application/papermill.record/text/plain": "np.int64(20)"}}]}]}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(AssertionError, match="numpy scalars"):
        test_glued_values_are_plain_python_numbers(path)
