"""The slim core install: numpy, ml_dtypes and ropegeo, nothing of the book's extras.

A fresh virtual environment gets ``pip install <this tree>`` (the core dependencies only; pip's
cache makes it quick) and runs the command line there: a config audit and Gate A on a shipped
correct implementation. The extras (matplotlib, SymPy, ipywidgets, anywidget, tqdm) must be
absent there and never imported by ``import ropegeo`` or the CLI. About 30 s, and about two minutes
more for the README: its Python block and every command of its bash blocks run there as written,
each with the exit status its comment states.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
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
    # no pip inside (ensurepip costs seconds): this test's pip installs into it (`pip --python`);
    # no .pyc compiled at install time: the commands below compile only what they import
    venv.create(env, with_pip=False, clear=True)
    python = env / "bin" / "python"
    # build from a copy of what a source distribution holds, so no build output lands in the tree
    src = tmp_path_factory.mktemp("core-src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "ropegeo", src / "ropegeo", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-compile",
                    "--disable-pip-version-check", str(src)], check=True, cwd=env, env=ENV, timeout=600)
    return python


def run(python, *args, cwd):
    return subprocess.run([python, *args], capture_output=True, text=True, cwd=cwd, env=ENV, timeout=300)


def test_core_install_has_no_book_extras(core_python, tmp_path):
    probe = ("import importlib.util, sys, ropegeo, ropegeo.cli, ropegeo.gates.procedure, ropegeo.gates.a.gate, ropegeo.models.manifest, "
             "ropegeo.toy, ropegeo.gates.c; "
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
    out = run(core_python, "-m", "ropegeo", "gate-a", "ropegeo.book.broken:Rotary", "--head-dim", "64", "--json",
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr + out.stdout
    assert json.loads(out.stdout)["passed"] is True


# ------------------------------------------------------------------ the README, run as written
def readme_blocks(lang: str) -> list[str]:
    """The README's fenced code blocks of one language, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S | re.M)


def readme_commands() -> list[tuple[str, int]]:
    """Every command of the README's bash blocks with the exit status its comment states ("exit N";
    0 when it states none). `make ...` and `pip install ...` lines are skipped: they build this tree."""
    out = []
    for block in readme_blocks("bash"):
        for line in block.splitlines():
            code, _, comment = line.partition("#")
            code = code.strip()
            if not code or code.startswith(("make ", "pip install")):
                continue
            stated = re.search(r"\bexit (\d+)", comment)
            out.append((code, int(stated.group(1)) if stated else 0))
    return out


@pytest.fixture(scope="module")
def readme_root(tmp_path_factory):
    """An empty folder outside the repository: the README's commands run anywhere (the examples ship in
    the package), importing the core install's copy, not this tree. The `config.json` that
    `python -m ropegeo.examples` writes is put there first, so each command also runs on its own."""
    root = tmp_path_factory.mktemp("readme-root")
    shutil.copyfile(ROOT / "ropegeo" / "examples" / "config.json", root / "config.json")
    return root


def test_readme_examples_are_found():
    commands = [c for c, _ in readme_commands()]
    assert len(readme_blocks("python")) == 1 and len(commands) >= 15
    for sub in ("audit", "gate-a", "report"):
        assert any(c.startswith(f"python -m ropegeo {sub} ") for c in commands), sub
    assert {s for _, s in readme_commands()} == {0, 1}  # both stated statuses occur: the parser reads them
    assert "mymodule" not in (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_python_block_runs_as_pasted(core_python, readme_root):
    script = readme_root / "readme_block.py"
    script.write_text(readme_blocks("python")[0], encoding="utf-8")
    out = run(core_python, script.name, cwd=readme_root)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Gate A: PASS" in out.stdout and "Gates A and B pass" in out.stdout


@pytest.mark.parametrize("command, status", readme_commands(), ids=[c for c, _ in readme_commands()])
def test_readme_command_runs_with_its_stated_exit_status(core_python, readme_root, command, status):
    argv = shlex.split(command)
    assert argv[0] == "python", command
    out = run(core_python, *argv[1:], cwd=readme_root)
    assert out.returncode == status, f"{command}: exit {out.returncode}, stated {status}\n{out.stderr[-2000:]}"
    assert out.stdout.strip() and "Traceback" not in out.stderr
