"""The slim core install: numpy, ml_dtypes and ropegeo, nothing of the book's extras.

A fresh virtual environment gets ``pip install <this tree>`` (the core dependencies only; pip's
cache makes it quick) and runs the command line there: a config audit and Gate A on a shipped
correct implementation. The extras (matplotlib, SymPy, ipywidgets, anywidget, tqdm) must be
absent there and never imported by ``import ropegeo`` or the CLI. About 30 s.
"""

import json
import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# no PYTHONPATH: the environment must import its installed copy, not this tree
ENV = {k: val for k, val in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
EXTRAS = ("matplotlib", "sympy", "ipywidgets", "anywidget", "tqdm")

pytestmark = pytest.mark.install


@pytest.fixture(scope="module")
def core_python(tmp_path_factory):
    env = tmp_path_factory.mktemp("core-venv")
    venv.create(env, with_pip=True, clear=True)
    python = env / "bin" / "python"
    # build from a copy of what a source distribution holds, so no build output lands in the tree
    src = tmp_path_factory.mktemp("core-src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "ropegeo", src / "ropegeo", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(src)],
                   check=True, cwd=env, env=ENV, timeout=600)
    return python


def run(python, *args, cwd):
    return subprocess.run([python, *args], capture_output=True, text=True, cwd=cwd, env=ENV, timeout=300)


def test_core_install_has_no_book_extras(core_python, tmp_path):
    probe = ("import importlib.util, sys, ropegeo, ropegeo.cli, ropegeo.audit, ropegeo.gate_a, ropegeo.manifest, "
             "ropegeo.behaviour, ropegeo.gate_c; "
             f"print([m for m in {EXTRAS!r} if importlib.util.find_spec(m) or m in sys.modules]); "
             "print(ropegeo.__file__)")
    out = run(core_python, "-c", probe, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    found, where = out.stdout.splitlines()
    assert found == "[]"
    assert str(ROOT) not in where  # the installed copy, not this tree


def test_cli_audits_a_config_without_the_extras(core_python, tmp_path):
    out = run(core_python, "-m", "ropegeo", "audit", "--config", "llama-2-7b", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["manifest"]["name"] == "meta-llama/Llama-2-7b-hf"


def test_cli_gate_a_passes_a_shipped_correct_implementation(core_python, tmp_path):
    out = run(core_python, "-m", "ropegeo", "gate-a", "ropegeo.broken:Rotary", "--head-dim", "64", "--json",
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr + out.stdout
    assert json.loads(out.stdout)["passed"] is True
