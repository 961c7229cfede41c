"""``gate-a`` on the command line: the user's code runs in a worker process, under a watchdog.

The parent starts ``python -m ropegeo.gate_a_run`` with the parsed options. The worker imports
the implementation and runs :func:`ropegeo.gate_a.gate_a`; before and after the import and every
call of the implementation it writes a line on a control pipe, and at the end the report as JSON.
The parent stops the worker when one import or call takes longer than ``--timeout`` seconds
(whatever the code does: a loop in Python, a blocked C call, a sleep). Everything the worker's
process prints (the user's code included) goes to files that the parent reads afterwards, so
the implementation's output never mixes with the report; the report mentions it in a note.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback

__all__ = ["run_in_worker"]

_FIELDS = ("target", "head_dim", "base", "pairing", "rotary_dim", "scale", "phase_dtype", "dtype", "max_position",
           "attention_factor", "config", "target_length", "layer_type", "seed", "attention_factor_in")


_FROM_CONFIG = ("head_dim", "base", "pairing", "rotary_dim", "scale", "phase_dtype")  # --attention-factor overrides


def _stop(proc) -> None:
    """Kill the worker and everything it started (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _captured(path: str, stream: str) -> str | None:
    with open(path, errors="replace") as fh:
        text = fh.read()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    first = lines[0][:80]
    return (f"the implementation printed {len(lines)} line{'s' * (len(lines) != 1)} on {stream} while it ran "
            f"(kept out of this report; the first: {first!r})")


def _watch(proc, fd: int, timeout: float) -> dict:
    """Read the worker's control lines until its result; enforce the per-call timeout."""
    buf, state, since = b"", "start", time.monotonic()
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the worker closed the pipe: it ended
                proc.wait()
                raise ValueError(f"the implementation ended the process (exit status {proc.returncode}) before "
                                 "Gate A finished")
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                kind, _, rest = line.decode().partition(" ")
                if kind in ("result", "error", "crash"):
                    return {"kind": kind, "body": rest}
                state, since = kind, time.monotonic()
        elif state in ("call", "import") and time.monotonic() - since > timeout:
            _stop(proc)
            what = "importing the implementation" if state == "import" else "a call of the implementation"
            raise ValueError(f"timeout: {what} did not return within {timeout:g} s; stopped "
                             "(raise --timeout if it is only slow)")


def run_in_worker(args) -> tuple[dict, list[str]]:
    """Run Gate A for parsed ``gate-a`` options in a worker; returns (report dict, notes).

    Raises
    ------
    ValueError
        One line: the worker's own error (bad arguments, a contract break), a timeout, or a
        worker that died.
    """
    opts = {k: getattr(args, k, None) for k in _FIELDS}
    r, w = os.pipe()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd()] + [p for p in sys.path if p])
    with tempfile.TemporaryDirectory() as tmp:
        out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        with open(out_path, "w") as out, open(err_path, "w") as err:
            proc = subprocess.Popen([sys.executable, "-m", "ropegeo.gate_a_run", json.dumps(opts), str(w)],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, pass_fds=(w,), env=env,
                                    start_new_session=True)
        os.close(w)
        try:
            msg = _watch(proc, r, float(args.timeout))
        except BaseException:  # a timeout, Ctrl-C, anything: the worker must not outlive us
            _stop(proc)
            raise
        finally:
            os.close(r)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # threads the implementation left running keep it alive
            _stop(proc)
        notes = [n for n in (_captured(out_path, "stdout"), _captured(err_path, "stderr")) if n]
    if msg["kind"] == "error":
        raise ValueError(msg["body"])
    if msg["kind"] == "crash":
        raise RuntimeError("Gate A's worker failed:\n" + json.loads(msg["body"]))
    return json.loads(msg["body"]), notes


def _worker(opts: dict, fd: int) -> None:  # pragma: no cover - runs in the worker process
    from . import gate_a_call
    from .gate_a import gate_a, resolve_target
    from .manifest import resolve

    ctl = os.fdopen(fd, "w", buffering=1)

    def say(kind: str, body: str = "") -> None:
        ctl.write(f"{kind} {body}".rstrip() + "\n")
        ctl.flush()

    try:
        say("import")
        impl = resolve_target(opts["target"])
        say("imported")
        gate_a_call.CALL_HOOK = say
        kwargs = {k: opts[k] for k in ("head_dim", "base", "pairing", "rotary_dim", "scale", "phase_dtype", "dtype",
                                       "max_position", "attention_factor", "seed", "attention_factor_in")
                  if opts.get(k) is not None}
        if opts["config"] is not None:
            clash = [k for k in _FROM_CONFIG if k in kwargs]
            if clash:
                raise ValueError(f"--{clash[0].replace('_', '-')} comes from --config; give one or the other")
            kwargs["manifest"] = (opts["config"] if opts["layer_type"] is None else
                                  resolve(opts["config"], layer_type=opts["layer_type"]))
            kwargs["target_length"] = opts["target_length"]
        elif opts["target_length"] is not None or opts["layer_type"] is not None:
            flag = "--target-length" if opts["target_length"] is not None else "--layer-type"
            raise ValueError(f"{flag} applies with --config only")
        report = gate_a(impl, **kwargs)
        gate_a_call.CALL_HOOK = None
        say("result", report.to_json())
    except ValueError as exc:
        gate_a_call.CALL_HOOK = None
        say("error", " ".join(str(exc).split()))
    except Exception:  # a bug in ropegeo: hand the traceback to the parent
        gate_a_call.CALL_HOOK = None
        say("crash", json.dumps(traceback.format_exc()))
    finally:
        ctl.close()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(0)  # do not wait for threads the implementation may have started


if __name__ == "__main__":  # pragma: no cover
    _worker(json.loads(sys.argv[1]), int(sys.argv[2]))
