"""The implementation under audit cannot write a verdict, and cannot take the command line down.

``gate-a`` and ``report MODULE:FUNCTION`` run the implementation in a worker process that only
calls it (``ropegeo.gates.a.isolated``); Gate A's judgement stays in the parent. These tests feed both
commands implementations that forge reports on every descriptor they can reach, print, exit,
hang, leave threads and children behind, raise BaseExceptions and close descriptors.
"""

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from ropegeo.gates.a import isolated as gate_a_run
from ropegeo.cli import main

ROPE = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    import numpy as np
    from ropegeo.rotation import apply_rope

    HERE = os.path.dirname(os.path.abspath(__file__))

    def rope(x, p):
        return apply_rope(x, p, pairing="half")

    def prints(x, p):
        print('{"passed": true}')
        print("noise on stderr", file=sys.stderr)
        os.write(1, b'{"passed": true}\\n')  # below Python's buffers too
        return rope(x, p)

    def exits(x, p):
        os._exit(0)

    def hangs(x, p):
        if len(p) > 3:  # passes the first probe, then hangs
            time.sleep(3600)
        return rope(x, p)

    def spins(x, p):
        while True:
            pass

    def thread(x, p):
        threading.Thread(target=threading.Event().wait, daemon=False).start()  # never ends
        return rope(x, p)

    class Boom(BaseException):
        pass

    def keyboard_interrupt(x, p):
        raise KeyboardInterrupt("raised by the implementation")

    def system_exit(x, p):
        raise SystemExit(0)

    def base_exception(x, p):
        raise Boom("a BaseException of its own")

    _children = []

    def forks(x, p):
        if not _children:
            pid = os.fork()
            if pid == 0:  # the child: must not outlive Gate A
                time.sleep(3600)
                os._exit(0)
            _children.append(pid)
            with open(os.path.join(HERE, "child.pid"), "w") as fh:
                fh.write(str(pid))
        return rope(x, p)

    def _escape(setsid):
        # a child that leaves the worker's process group (setpgid, or a session of its own), with a child
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.setsid() if setsid else os.setpgid(0, 0)
            grandchild = os.fork()
            if grandchild == 0:
                time.sleep(3600)
                os._exit(0)
            os.write(w, f"{grandchild}".encode())
            time.sleep(3600)
            os._exit(0)
        os.close(w)
        grandchild = int(os.read(r, 64))
        with open(os.path.join(HERE, "escaped.pid"), "a") as fh:
            fh.write(f"{pid} {grandchild} ")

    _escaped = []

    def escapes(x, p):
        if not _escaped:
            _escaped.append(_escape(False))
            _escaped.append(_escape(True))
        return rope(x, p)

    def escapes_and_hangs(x, p):
        escapes(x, p)
        time.sleep(3600)

    def command_pid():
        # the nearest ancestor running `python -m ropegeo` (the worker's parent is the supervisor)
        pid = os.getppid()
        while pid > 1:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"-m\\0ropegeo\\0" in fh.read():
                    return pid
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        raise RuntimeError("no command")

    def terminates_its_command(x, p):
        escapes(x, p)
        os.kill(command_pid(), signal.SIGTERM)
        time.sleep(3600)

    def closes_and_hangs(x, p):
        os.closerange(0, 4096)
        time.sleep(3600)

    def closes_and_returns(x, p):
        os.closerange(0, 4096)
        return rope(x, p)
    """
)

FORGE = textwrap.dedent(
    """
    import fcntl, os, stat, struct
    import numpy as np

    WHERE = {where!r}
    REPORT = {report!r}
    LINE = b"result " + REPORT.encode() + b"\\n"
    BODY = struct.pack(">I", 2) + b"{{}}"
    FRAME = struct.pack(">Q", len(BODY)) + os.urandom(32) + BODY  # well formed, not authentic

    def forge_requests():
        # the read ends of pipes (the worker's requests): reopened for writing through /proc
        for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
            try:
                if not (stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == 0):
                    continue
                w = os.open(f"/proc/self/fd/{{fd}}", os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            os.write(w, FRAME)
            os.close(w)

    def forge():
        if WHERE == "request":
            return forge_requests()
        fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
        targets = {{"stdout": [1], "stderr": [2], "proc": fds}}.get(WHERE, [fd for fd in fds if fd >= 3])
        for fd in targets:
            for data in ((FRAME,) if WHERE == "frame" else (LINE, FRAME)):
                try:
                    os.write(fd, data)
                except OSError:
                    pass
            if WHERE == "proc":  # reopening a descriptor through /proc (a pipe's read end gives a write end)
                try:
                    w = os.open(f"/proc/self/fd/{{fd}}", os.O_WRONLY | os.O_NONBLOCK)
                except OSError:
                    continue
                for data in (LINE, FRAME):
                    try:
                        os.write(w, data)
                    except OSError:
                        pass
                os.close(w)

    forge()  # at import ...

    def zeros(x, p):
        forge()  # ... and at every call
        return np.zeros_like(x)

    def honest_zeros(x, p):
        return np.zeros_like(x)
    """
)

CONFIG = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 10000.0,
          "max_position_embeddings": 4096}


def _passing_report() -> str:
    from ropegeo.gates.a.gate import gate_a
    from ropegeo.rotation import apply_rope

    report = gate_a(lambda x, p: apply_rope(x, p), head_dim=8, max_position=4096)
    assert report.passed
    return report.to_json()


@pytest.fixture()
def mods(tmp_path, monkeypatch):
    (tmp_path / "hostile.py").write_text(ROPE)
    report = _passing_report()
    for where in ("stdout", "stderr", "inherited", "frame", "proc", "request"):
        (tmp_path / f"forge_{where}.py").write_text(FORGE.format(where=where, report=report))
    (tmp_path / "exits_at_import.py").write_text("import os\nos._exit(0)\n")
    (tmp_path / "interrupts_at_import.py").write_text("raise KeyboardInterrupt('at import')\n")
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    monkeypatch.syspath_prepend(str(tmp_path))  # the worker's PYTHONPATH follows sys.path
    return tmp_path


def _cli(capsys, *argv):
    """Run the command line in this process (the implementation still runs in a worker)."""
    t0 = time.monotonic()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err, time.monotonic() - t0


def _command(kind, target, tmp, *extra):
    if kind == "gate-a":
        return ("gate-a", target, "--pairing", "half", "--head-dim", "16", "--max-position", "4096", *extra)
    return ("report", target, "--config", str(tmp / "config.json"), *extra)


def _gate_a_passed(kind, out):
    d = json.loads(out)  # the whole stdout is the parent's report
    return d["passed"] if kind == "gate-a" else d["gate_a"]["passed"]


def _one_line_error(code, out, err, *words):
    assert code == 2, (out, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("ropegeo: error: "), err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err


# ----------------------------------------------------------------------------- forged reports
_HONEST = {}


@pytest.mark.parametrize("where", ["stdout", "stderr", "inherited", "frame", "proc", "request"])
def test_a_forged_report_on_any_descriptor_cannot_change_the_verdict(mods, capsys, where):
    if not _HONEST:  # the same code, forging nothing: zeros fail
        _HONEST["run"] = _cli(capsys, *_command("gate-a", "forge_stdout:honest_zeros", mods, "--json"))
    honest = _HONEST["run"]
    assert honest[0] == 1 and _gate_a_passed("gate-a", honest[1]) is False
    code, out, err, _ = _cli(capsys, *_command("gate-a", f"forge_{where}:zeros", mods, "--json"))
    assert code != 0 and "PASS" not in out
    if where in ("stdout", "stderr"):
        # printed output goes to files the parent only mentions: the verdict is the honest one
        assert code == honest[0]
        d = json.loads(out)
        assert d["passed"] is False and d["failed"] == json.loads(honest[1])["failed"]
        assert any("printed" in n and where in n for n in d["notes"])
    else:
        # bytes on the channel (fd 3.., or reopened through /proc/self/fd) fail the framing or the
        # authentication: the run stops with no verdict, never a pass
        _one_line_error(code, out, err, "no verdict", "the implementation?")
        if where in ("frame", "request"):  # well formed, but not signed with the right key
            assert "failed authentication" in err


@pytest.mark.parametrize("where", ["inherited", "proc"])
def test_report_refuses_a_forged_channel_too(mods, capsys, where):
    code, out, err, _ = _cli(capsys, *_command("report", f"forge_{where}:zeros", mods, "--json"))
    _one_line_error(code, out, err, "no verdict")


def test_frames_are_authenticated_and_ordered():
    key, other = b"k" * 32, b"o" * 32
    frame = gate_a_run._pack(key, b"R", 5, {"kind": "value", "value": {"array": 0}}, [np.arange(6.0).reshape(2, 3)])
    (length,) = struct.unpack(">Q", frame[:8])
    tag, body = frame[8:40], frame[40:]
    assert length == len(body)
    header, arrays = gate_a_run._unpack(key, b"R", 5, tag, body)
    assert header["kind"] == "value" and np.array_equal(arrays[0], np.arange(6.0).reshape(2, 3))
    for k, direction, seq, t, b in ((other, b"R", 5, tag, body),      # another key
                                    (key, b"Q", 5, tag, body),        # reflected to the other side
                                    (key, b"R", 6, tag, body),        # replayed out of order
                                    (key, b"R", 5, tag, body[:-1] + b"x")):  # altered
        with pytest.raises(ValueError, match="authentication"):
            gate_a_run._unpack(k, direction, seq, t, b)
    # an authentic frame that describes its arrays wrongly is refused, not trusted
    bad = gate_a_run._pack(key, b"R", 0, {"kind": "value"}, [])
    body = bad[40:]
    head = json.loads(body[4:].decode())
    head["arrays"] = [{"dtype": "float64", "shape": [10**9]}]
    raw = json.dumps(head).encode()
    body = struct.pack(">I", len(raw)) + raw
    import hashlib
    import hmac

    tag = hmac.new(key, b"R" + struct.pack(">Q", 0) + body, hashlib.sha256).digest()
    with pytest.raises(ValueError, match="shorter than the arrays"):
        gate_a_run._unpack(key, b"R", 0, tag, body)


# ----------------------------------------------------------------------------- faults, both commands
@pytest.fixture(params=["gate-a", "report"])
def kind(request):
    return request.param


def _notes(kind, out):
    return json.loads(out)["notes"] if kind == "gate-a" else json.loads(out)["gate_a"]["notes"]


def test_prints_stay_out_of_json(mods, capsys, kind):
    code, out, err, _ = _cli(capsys, *_command(kind, "hostile:prints", mods, "--json"))
    assert _gate_a_passed(kind, out) is True, err
    assert any("printed" in n and "stdout" in n for n in _notes(kind, out))
    assert any("printed" in n and "stderr" in n for n in _notes(kind, out))
    # a quiet implementation gets no such note (the worker itself prints nothing)
    code, out, err, _ = _cli(capsys, *_command(kind, "hostile:rope", mods, "--json"))
    assert _gate_a_passed(kind, out) is True, err
    assert not any("printed" in n for n in _notes(kind, out)), _notes(kind, out)


def test_os_exit_is_an_error_not_a_pass(mods, capsys, kind):
    code, out, err, _ = _cli(capsys, *_command(kind, "hostile:exits", mods))
    _one_line_error(code, out, err, "ended the process (exit status 0)")
    code, out, err, _ = _cli(capsys, *_command(kind, "exits_at_import:f", mods))
    _one_line_error(code, out, err, "ended the process (exit status 0)")


@pytest.mark.parametrize("target", ["hostile:hangs", "hostile:spins"])
def test_a_hang_is_stopped_after_the_timeout(mods, capsys, kind, target):
    code, out, err, _ = _cli(capsys, *_command(kind, target, mods, "--timeout", "2"))
    _one_line_error(code, out, err, "timeout", "within 2 s")


def test_a_non_daemon_thread_does_not_keep_the_run_alive(mods, capsys, kind):
    code, out, err, _ = _cli(capsys, *_command(kind, "hostile:thread", mods, "--json"))
    assert _gate_a_passed(kind, out) is True, err


@pytest.mark.parametrize("target,name", [("hostile:keyboard_interrupt", "KeyboardInterrupt"),
                                         ("hostile:system_exit", "SystemExit"),
                                         ("hostile:base_exception", "Boom")])
def test_base_exceptions_raised_by_the_implementation_are_its_refusals(mods, capsys, kind, target, name):
    # raised on every call: the implementation refuses every probe, a contract break (exit 2)
    code, out, err, _ = _cli(capsys, *_command(kind, target, mods))
    _one_line_error(code, out, err, name)


def test_a_keyboard_interrupt_at_import_is_an_import_error(mods, capsys, kind):
    code, out, err, _ = _cli(capsys, *_command(kind, "interrupts_at_import:f", mods))
    _one_line_error(code, out, err, "KeyboardInterrupt", "at import")


def _dead(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _wait_dead(pid: int, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if _dead(pid):
            return True
        time.sleep(0.05)
    return _dead(pid)


def test_a_forked_child_is_killed_with_the_worker(mods, capsys, kind):
    code, out, err, _ = _cli(capsys, *_command(kind, "hostile:forks", mods, "--json"))
    assert _gate_a_passed(kind, out) is True, err
    pid = int((mods / "child.pid").read_text())
    assert _wait_dead(pid), f"the implementation's child {pid} outlived Gate A"


def test_closed_descriptors_stop_the_run_at_once(mods, capsys, kind):
    # the channel closes under a live worker: no waiting for the timeout, no orphan
    code, out, err, seconds = _cli(capsys, *_command(kind, "hostile:closes_and_hangs", mods, "--timeout", "600"))
    _one_line_error(code, out, err, "closed Gate A's channel")
    assert seconds < 300
    code, out, err, _ = _cli(capsys, *_command(kind, "hostile:closes_and_returns", mods, "--timeout", "600"))
    _one_line_error(code, out, err, "no verdict" if "channel" in err else "ended the process")


def test_a_fifo_config_is_refused_before_anything_starts(mods, capsys, kind):
    fifo = mods / "fifo.json"
    os.mkfifo(fifo)
    argv = (("gate-a", "hostile:rope", "--config", str(fifo)) if kind == "gate-a" else
            ("report", "hostile:rope", "--config", str(fifo)))
    code, out, err, seconds = _cli(capsys, *argv)
    _one_line_error(code, out, err, "not a regular file")
    if kind == "report":
        code, out, err, _ = _cli(capsys, "report", str(fifo))
        _one_line_error(code, out, err, "not a regular file")


def test_report_timeout_is_validated(mods, capsys):
    code, out, err, _ = _cli(capsys, *_command("report", "hostile:rope", mods, "--timeout", "0"))
    _one_line_error(code, out, err, "--timeout must be")


# ----------------------------------------------------------------------------- the parent's own end
def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except FileNotFoundError:
        return []


def _spawn(mods, *argv):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), str(mods), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-m", "ropegeo", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    end = time.monotonic() + 120
    while not _children(proc.pid):  # the worker is started once the options are checked
        assert proc.poll() is None and time.monotonic() < end, proc.communicate()
        time.sleep(0.05)
    return proc, _children(proc.pid)[0]


def test_the_worker_dies_with_a_killed_parent(mods):
    proc, worker = _spawn(mods, *_command("gate-a", "hostile:hangs", mods, "--timeout", "600"))
    time.sleep(1)
    proc.kill()
    proc.communicate(timeout=60)
    assert _wait_dead(worker), "the worker outlived its killed parent"


def test_ctrl_c_on_report_exits_130_and_kills_the_worker(mods):
    proc, worker = _spawn(mods, *_command("report", "hostile:hangs", mods, "--timeout", "600"))
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "ropegeo: interrupted\n" and out == ""
    assert _wait_dead(worker)


# ----------------------------------------------------------------------------- nothing outlives the command
def _escaped(mods) -> list[int]:
    path = mods / "escaped.pid"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_children_that_leave_the_group_or_the_session_are_killed(mods, capsys, kind):
    # a child that calls setpgid (not setsid) left the group the old cleanup killed, and survived
    code, out, err, _ = _cli(capsys, *_command(kind, "hostile:escapes", mods, "--json"))
    assert _gate_a_passed(kind, out) is True, err
    pids = _escaped(mods)
    assert len(pids) == 4
    assert all(_wait_dead(p) for p in pids), [p for p in pids if not _dead(p)]


def _run_until_escaped(mods, tmp, target):
    """The command (gate-a) in a process of its own, its temporary folders in ``tmp``, once the
    implementation's escaped children are all running."""
    env = dict(os.environ, TMPDIR=str(tmp))
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), str(mods), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-m", "ropegeo", *_command("gate-a", target, mods, "--timeout", "600")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    end = time.monotonic() + 120
    while len(_escaped(mods)) < 4:
        assert proc.poll() is None and time.monotonic() < end, proc.communicate()
        time.sleep(0.05)
    assert list(tmp.iterdir()), "the worker's temporary folder exists while it runs"
    return proc


def _nothing_left(mods, tmp):
    pids = _escaped(mods)
    assert all(_wait_dead(p) for p in pids), f"outlived the command: {[p for p in pids if not _dead(p)]}"
    end = time.monotonic() + 10
    while list(tmp.iterdir()) and time.monotonic() < end:
        time.sleep(0.05)
    assert not list(tmp.iterdir()), f"left behind: {list(tmp.iterdir())}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_no_process_or_folder_outlives_the_command_whatever_signal_ends_it(mods, tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _run_until_escaped(mods, tmp, "hostile:escapes_and_hangs")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:  # an orderly exit: one line, 128 + the signal's number
        assert proc.returncode == 128 + sig and err == f"ropegeo: stopped by {signal.Signals(sig).name}\n", err
        assert out == ""
    _nothing_left(mods, tmp)


def test_an_implementation_that_terminates_its_command_leaves_nothing(mods, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _run_until_escaped(mods, tmp, "hostile:terminates_its_command")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err == "ropegeo: stopped by SIGTERM\n" and out == "", (proc.returncode, err)
    _nothing_left(mods, tmp)


# ----------------------------------------------------------------------------- the command's own output
PROC_FORGE = textwrap.dedent(
    """
    import os, signal, time
    import numpy as np

    LINE = b'{"passed": true, "status": "pass"}\\nGate A: PASS\\n'

    def ancestors():
        # up to the nearest running `python -m ropegeo` (the command); a plain parent when there is none
        out, pid = [], os.getppid()
        while pid > 1:
            out.append(pid)
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"-m\\0ropegeo\\0" in fh.read():
                    return out
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        return out[:1]

    def forge():
        for pid in ancestors():  # the supervisor and the command (before: the command and its caller)
            for fd in (1, 2):
                try:
                    w = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY)
                except OSError:
                    continue
                os.write(w, LINE)
                os.close(w)

    forge()  # at import ...

    def zeros(x, p):
        forge()  # ... and at every call
        return np.zeros_like(x)

    def forges_and_kills(x, p):
        forge()
        os.kill(ancestors()[-1], signal.SIGKILL)
        time.sleep(3600)
    """
)


def _as_a_plain_user() -> list[str]:
    """Run as this user without capabilities: root (or CAP_SYS_PTRACE) may open any process's
    descriptors, non-dumpable or not; a plain user may not."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: cannot drop CAP_SYS_PTRACE to test as a plain user")
    return ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]


def _run_as_user(mods, *argv, user="plain"):
    """``user``: "plain" (this user without capabilities) or "root" (root with all of them: the
    worker gives up CAP_SYS_PTRACE before the implementation is imported)."""
    if user == "root" and os.geteuid() != 0:
        pytest.skip("not root")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), str(mods), env.get("PYTHONPATH", "")])
    prefix = _as_a_plain_user() if user == "plain" else []
    return subprocess.run([*prefix, sys.executable, *argv], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("user", ["plain", "root"])
def test_the_forge_through_proc_works_on_an_unprotected_parent(mods, user):
    # the controls: the same code under a parent that stays dumpable writes on its stdout; so does root
    # (CAP_SYS_PTRACE) on a non-dumpable one
    (mods / "forge_parent.py").write_text(PROC_FORGE)
    child = "subprocess.run([sys.executable, '-c', 'import forge_parent'])"
    out = _run_as_user(mods, "-c", f"import subprocess, sys; {child}", user=user)
    assert "Gate A: PASS" in out.stdout, out
    if user == "root":
        out = _run_as_user(mods, "-c", f"import ctypes, subprocess, sys; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); {child}",
                           user=user)
        assert "Gate A: PASS" in out.stdout, out


@pytest.mark.parametrize("user", ["plain", "root"])
def test_the_implementation_cannot_reopen_the_commands_stdout(mods, kind, user):
    # on fd 1 and fd 2 of the command and of the supervisor, at import and at every call
    (mods / "forge_parent.py").write_text(PROC_FORGE)
    out = _run_as_user(mods, "-m", "ropegeo", *_command(kind, "forge_parent:zeros", mods, "--json"), user=user)
    assert out.returncode == 1, out.stderr
    assert _gate_a_passed(kind, out.stdout) is False  # the whole stdout is the command's own report
    assert "PASS" not in out.stderr
    killed = _run_as_user(mods, "-m", "ropegeo", *_command(kind, "forge_parent:forges_and_kills", mods, "--json"),
                          user=user)
    assert killed.returncode == -signal.SIGKILL and killed.stdout == "" and "PASS" not in killed.stderr, killed
