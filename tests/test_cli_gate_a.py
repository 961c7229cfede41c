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

    def chatty(x, positions):
        print("rotating", len(positions), "rows")
        return apply_rope(x, positions, pairing="half")

    def hangs(x, positions):
        if len(positions) > 3:  # passes the contract probe, then hangs
            while True:
                pass
        return apply_rope(x, positions)

    import threading

    def leaves_a_thread(x, positions):
        threading.Thread(target=threading.Event().wait, daemon=False).start()  # never ends
        return apply_rope(x, positions, pairing="half")

    def sleeps(x, positions):
        import time
        time.sleep(3600)

    from ropegeo.models.manifest import resolve

    _LLAMA31 = resolve("llama-3.1-8b")

    def llama31(x, positions):
        return apply_rope(x, positions, theta=_LLAMA31.theta_at(), pairing="half")

    def llama31_unscaled(x, positions):
        return apply_rope(x, positions, base=500_000.0, pairing="half")

    def gemma3_sliding(x, positions):  # Gemma 3's sliding layers: base 10,000, 256-wide heads
        return apply_rope(x, positions, base=10_000.0, pairing="half")
    """
)


@pytest.fixture()
def env(tmp_path):
    (tmp_path / "userrope.py").write_text(MODULE)
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "multiline_error.py").write_text("raise RuntimeError('first line\\nsecond line')\n")
    (tmp_path / "exits_when_called.py").write_text("def f(x, p):\n    raise SystemExit(3)\n")
    (tmp_path / "hangs_on_import.py").write_text("import time\ntime.sleep(3600)\n")
    (tmp_path / "prints_on_import.py").write_text(
        "print('hello from import')\nfrom ropegeo.rotation import apply_rope\n"
        "def f(x, p):\n    return apply_rope(x, p)\n")
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
    out = subprocess.run([sys.executable, "-m", "ropegeo", "gate-a", "ropegeo.book.broken:Rotary", "--json"],
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
    assert main(["gate-a", "ropegeo.book.broken:QueryRestart"]) == 1
    assert "restarts at the origin" in capsys.readouterr().out


def test_a_hanging_call_or_import_stops_with_one_line(env):
    for target in ("userrope:hangs", "userrope:sleeps", "hangs_on_import:f"):
        out = _run(env, target, "--head-dim", "16", "--timeout", "2")
        assert out.returncode == 2, (target, out.stderr)
        assert "timeout" in out.stderr and "within 2 s" in out.stderr
        assert out.stderr.count("\n") == 1 and out.stdout == ""


def test_printed_output_never_reaches_json(env):
    for target, extra in (("userrope:chatty", ["--pairing", "half"]), ("prints_on_import:f", [])):
        out = _run(env, target, "--head-dim", "16", "--json", *extra)
        assert out.returncode == 0, out.stderr
        d = json.loads(out.stdout)  # the whole stdout is the report
        assert any("printed" in n and "stdout" in n for n in d["notes"])
    text = _run(env, "userrope:chatty", "--head-dim", "16", "--pairing", "half")
    assert "rotating" not in text.stdout.split("note:")[0] and "printed" in text.stdout


def test_ctrl_c_exits_130_with_one_line(env):
    import signal
    import time

    # a shell's background job inherits SIGINT ignored (Python then never raises KeyboardInterrupt):
    # give the command line the default disposition a terminal would
    proc = subprocess.Popen([sys.executable, "-m", "ropegeo", "gate-a", "userrope:sleeps", "--head-dim", "16"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    end = time.monotonic() + 120
    while not _children(proc.pid):  # wait for the worker (a loaded machine starts Python slowly)
        assert proc.poll() is None and time.monotonic() < end
        time.sleep(0.05)
    worker = _children(proc.pid)[0]
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err == "ropegeo: interrupted\n" and out == ""
    assert _dead(worker)  # killed with its process group before the command line returned


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except FileNotFoundError:
        return []


def _dead(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


FORGER = textwrap.dedent(
    """
    import os
    import numpy as np

    PASSING = {report!r}

    def _forge():
        for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
            for line in ("result " + PASSING + "\\n", 'result {{"passed": true}}\\n'):
                try:
                    os.write(fd, line.encode())
                except OSError:
                    pass

    _forge()

    def zeros(x, positions):
        _forge()
        return np.zeros_like(x)
    """
)


def test_a_forged_report_on_the_workers_descriptors_is_no_verdict(env, tmp_path):
    # issue 23: zeros behind a complete passing report written on the inherited pipe got PASS,
    # and a forged result line a KeyError traceback. The worker now only returns arrays, and
    # bytes it did not write fail the channel's framing: one line, exit 2, never a pass
    from ropegeo.gates.a.gate import gate_a
    from ropegeo.rotation import apply_rope

    passing = gate_a(lambda x, p: apply_rope(x, p), head_dim=16, max_position=4096).to_json()
    (tmp_path / "forger.py").write_text(FORGER.format(report=passing))
    out = _run(env, "forger:zeros", "--head-dim", "16", "--max-position", "4096", "--json")
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stdout == "" and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "no verdict" in out.stderr


def test_config_declares_the_operator(env):
    out = _run(env, "userrope:llama31", "--config", "llama-3.1-8b", "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    d = json.loads(out.stdout)
    assert d["declared"]["max_position"] == 131_072 and d["declared"]["pairing"] == "half"
    assert d["declared"]["model"]
    # forgetting the Llama 3.1 scaling rule is a frequency defect against what the config promises
    out = _run(env, "userrope:llama31_unscaled", "--config", "llama-3.1-8b", "--json")
    assert out.returncode == 1
    d = json.loads(out.stdout)
    assert d["failed"][0] == "frequencies" and d["defects"][0] == "frequency"


@pytest.mark.parametrize("args,message", [
    (["userrope:llama31", "--config", "llama-3.1-8b", "--base", "10000"], "--base comes from --config"),
    (["userrope:good_half", "--target-length", "4096"], "--target-length applies with --config only"),
    (["userrope:good_half", "--timeout", "0"], "--timeout must be"),
    (["userrope:good_half", "--dtype", "int4"], "dtype must be one of"),
    (["userrope:good_half", "--max-position", "3"], "max_position must be at least 16"),
])
def test_new_options_refuse_bad_values(env, args, message):
    out = _run(env, *args)
    assert out.returncode == 2 and message in out.stderr and out.stderr.count("\n") == 1


def test_max_position_option(env):
    out = _run(env, "userrope:good_half", "--pairing", "half", "--head-dim", "16", "--max-position", "4096", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["declared"]["max_position"] == 4096


def test_threads_left_running_do_not_keep_gate_a_waiting(env):
    out = _run(env, "userrope:leaves_a_thread", "--pairing", "half", "--head-dim", "16", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["passed"] is True


def test_nothing_declared_says_defaults_were_assumed_and_what_was_read(env):
    # Llama-style code run with no declaration fails against the defaults; the report says the
    # defaults were assumed and what the implementation reads as
    out = _run(env, "userrope:llama31_unscaled", "--json")
    assert out.returncode == 1
    d = json.loads(out.stdout)
    note = [n for n in d["notes"] if n.startswith("nothing about the operator was declared")]
    assert len(note) == 1, d["notes"]
    assert "half-split pairs" in note[0] and "base 500,000 (scale 1)" in note[0]
    out = _run(env, "userrope:llama31", "--json")  # Llama 3.1's rule is not one geometric schedule
    assert "not one geometric schedule" in " ".join(json.loads(out.stdout)["notes"])
    # a declaration, even a wrong one, is the user's: no such note
    out = _run(env, "userrope:llama31_unscaled", "--pairing", "half", "--json")
    d = json.loads(out.stdout)
    assert d["failed"][0] == "frequencies"
    assert not any(n.startswith("nothing about the operator") for n in d["notes"])


def test_layer_type_picks_the_ruler_of_a_model_with_two_kinds_of_layer(env):
    out = _run(env, "userrope:gemma3_sliding", "--config", "gemma-3-1b-it", "--layer-type", "sliding_attention",
               "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    # the same code held to the full-attention layers' base of 1,000,000 is a frequency defect
    out = _run(env, "userrope:gemma3_sliding", "--config", "gemma-3-1b-it", "--layer-type", "full_attention",
               "--json")
    assert out.returncode == 1 and json.loads(out.stdout)["defects"][0] == "frequency"
    out = _run(env, "userrope:good_half", "--layer-type", "sliding_attention")
    assert out.returncode == 2 and out.stderr.strip() == "ropegeo: error: --layer-type applies with --config only"


def test_attention_factor_flags(env, tmp_path):
    # a YaRN port without its factor fails against the config (magnitude); declared in the softmax it
    # passes; --attention-factor overrides the config's factor with a note
    (tmp_path / "yarnport.py").write_text(textwrap.dedent("""
        from ropegeo.models.manifest import resolve
        from ropegeo.rotation import apply_rope
        _m = resolve("qwen2.5-7b-instruct")
        _theta = _m.theta_at(_m.target_length)

        def dropped(x, positions):
            return apply_rope(x, positions, theta=_theta, pairing="half")

        def doubled(x, positions):
            return 1.5 * apply_rope(x, positions, theta=_theta, pairing="half")
    """))
    out = _run(env, "yarnport:dropped", "--config", "qwen2.5-7b-instruct", "--json")
    assert out.returncode == 1, out.stderr
    assert json.loads(out.stdout)["defects"][0] == "magnitude"
    out = _run(env, "yarnport:dropped", "--config", "qwen2.5-7b-instruct", "--attention-factor-in", "softmax")
    assert out.returncode == 0, out.stdout + out.stderr
    out = _run(env, "yarnport:doubled", "--config", "qwen2.5-7b-instruct", "--attention-factor", "1.5")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "attention factor 1.5 declared in place of the configuration's" in out.stdout


@pytest.mark.parametrize("args", [["--base", "1e13"], ["--base", "1e300"], ["--scale", "1e20"]])
def test_extreme_declarations_are_inconclusive_with_exit_3_never_pass(env, args):
    # the declared pairs turn too slowly (base 1e13) or too fast (scale 1e20) for layout and
    # frequencies to be measured, and the tolerances reach the largest error: before, PASS and exit 0
    out = _run(env, "userrope:good_half", "--pairing", "half", "--head-dim", "32", *args)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "Gate A: INCONCLUSIVE" in out.stdout and "PASS" not in out.stdout
    assert "multiple of pi" not in out.stdout
    d = json.loads(_run(env, "userrope:good_half", "--pairing", "half", "--head-dim", "32", "--json", *args).stdout)
    assert d["status"] == "inconclusive" and d["passed"] is False and d["diagnosis"].startswith("inconclusive: ")


def test_config_with_one_rotating_kind_audits_it_and_says_so(env, tmp_path):
    # Llama 4 Scout's config.json as shipped (a multimodal wrapper): chunked RoPE layers and NoPE full layers;
    # only one kind rotates, so gate-a --config audits it without --layer-type and says so in a note
    from ropegeo.models.manifest import model_record

    text = {k: v for k, v in model_record("llama-4-scout-17b-16e-instruct")["config"].items() if k != "model_type"}
    (tmp_path / "scout.json").write_text(json.dumps({"model_type": "llama4", "text_config": text}))
    (tmp_path / "scoutrope.py").write_text(
        "from ropegeo.models.manifest import load_model\nfrom ropegeo.rotation import apply_rope\n"
        "_T = load_model('llama-4-scout-17b-16e-instruct').theta_at()\n"
        "def scout(x, p):\n    return apply_rope(x, p, theta=_T, pairing='interleaved')\n"
        "def unscaled(x, p):\n    return apply_rope(x, p, base=500000.0, pairing='interleaved')\n")
    out = _run(env, "scoutrope:scout", "--config", str(tmp_path / "scout.json"), "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    d = json.loads(out.stdout)
    assert any("only chunked_attention has a rotary embedding" in n for n in d["notes"])
    # negative control: the same code without Llama 4's llama3 x16 rule fails as frequency
    out = _run(env, "scoutrope:unscaled", "--config", str(tmp_path / "scout.json"), "--json")
    assert out.returncode == 1 and json.loads(out.stdout)["failed"][0] == "frequencies"
