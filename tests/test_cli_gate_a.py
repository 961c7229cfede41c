import json
import os
import subprocess
import sys
import textwrap

import pytest

from ropegeo.cli import main

MODULE = textwrap.dedent(
    """
    import numpy as np
    from ropegeo.rotation import apply_rope

    def good_half(x, positions):
        return apply_rope(x, positions, pairing="half")

    def restart(x, positions):
        # every call starts again at position 0: scores depend on the batch, not on positions
        return apply_rope(x, np.arange(len(positions)))

    def wrong_shape(x, positions):
        return x[..., :-1]

    def with_nan(x, positions):
        return x * np.nan

    def one_arg(x):
        return x
    """
)


@pytest.fixture()
def env(tmp_path):
    (tmp_path / "userrope.py").write_text(MODULE)
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "multiline_error.py").write_text("raise RuntimeError('first line\\nsecond line')\n")
    (tmp_path / "exits_when_called.py").write_text("def f(x, p):\n    raise SystemExit(3)\n")
    e = dict(os.environ)
    e["PYTHONPATH"] = str(tmp_path) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def _run(env, *args):
    return subprocess.run([sys.executable, "-m", "ropegeo", "gate-a", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_passing_implementation_exits_0(env):
    out = _run(env, "userrope:good_half", "--pairing", "half", "--head-dim", "32")
    assert out.returncode == 0, out.stderr
    assert "Gate A: PASS" in out.stdout


def test_failing_implementation_exits_1_and_says_why(env):
    out = _run(env, "userrope:good_half", "--head-dim", "32")  # declared interleaved by default
    assert out.returncode == 1
    assert "half-split layout, while the declared convention is interleaved" in out.stdout
    out = _run(env, "userrope:restart", "--head-dim", "16", "--json")
    assert out.returncode == 1
    d = json.loads(out.stdout)
    assert d["passed"] is False and "composition" in d["failed"]


def test_json_for_a_decoder_class():
    out = subprocess.run([sys.executable, "-m", "ropegeo", "gate-a", "ropegeo.broken:Rotary", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    d = json.loads(out.stdout)
    assert d["protocols"] == ["callable", "role", "decoder"] and d["passed"] is True


@pytest.mark.parametrize(
    "args,message",
    [
        (["userrope:wrong_shape", "--head-dim", "8"], "returned shape"),
        (["userrope:with_nan", "--head-dim", "8"], "NaN"),
        (["userrope:one_arg"], "two positional arguments"),
        (["nosuchmodule:f"], "cannot import module"),
        (["userrope:missing"], "has no attribute"),
        (["userrope"], "MODULE:FUNCTION"),
        (["userrope:good_half", "--pairing", "diagonal"], "pairing must be one of"),
        (["userrope:good_half", "--head-dim", "7"], "head_dim must be an even integer"),
        (["userrope:good_half", "--base", "abc"], "invalid float value"),
        ([], "required"),
        (["exits_on_import:f"], "cannot import module 'exits_on_import' (SystemExit: 0)"),
        (["multiline_error:f"], "first line second line"),
        (["exits_when_called:f"], "SystemExit: 3"),
        (["userrope:good_half", "--head-dim", "2048"], "head_dim must be at most 1024"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(env, args, message):
    out = _run(env, *args)
    assert out.returncode == 2
    assert message in out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert out.stdout == ""


def test_main_in_process(capsys):
    assert main(["gate-a", "ropegeo.broken:QueryRestart"]) == 1
    assert "restarts at the origin" in capsys.readouterr().out
