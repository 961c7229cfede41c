"""The supervisor between the command line and Gate A's worker: it outlives neither, and leaves nothing.

Run as ``python -I -S supervisor.py TMP REQ RESP COMMAND...`` (standard library only; its stdin a
pipe only the parent writes), it makes itself non-dumpable and a child subreaper, starts the worker
in a session of its own (stdout, stderr in ``TMP``), prints its pid, ignores SIGINT, SIGTERM and
SIGHUP, and never reaps it while waiting (no reused pid in ``/proc``). When its stdin ends it kills
the worker's group and every descendant until none is left, and removes ``TMP`` unless the parent
said ``c`` first. A process of the same user can still kill or stop it (see the README).
"""

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time

__all__ = []

_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 4, 36
#: Seconds the supervisor keeps killing what the implementation left before it gives up.
_CLEANUP_SECONDS = 30.0


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass


def _children() -> set[int]:
    """This process's children (zombies included), from ``/proc/self/task/*/children``."""
    pids = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as fh:
                pids.update(int(p) for p in fh.read().split())
        except OSError:
            pass
    return pids


def _kill_all(worker: int) -> None:
    """Kill the worker's group and every descendant re-parented here, until none is left."""
    own = os.getpgrp()
    try:
        os.killpg(worker, signal.SIGKILL)
    except OSError:
        pass
    end = time.monotonic() + _CLEANUP_SECONDS
    while time.monotonic() < end:
        kids = _children()
        if not kids:
            return
        for pid in kids:
            try:
                group = os.getpgid(pid)
                if group != own:
                    os.killpg(group, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while True:  # reap what has died; orphans of the killed arrive here and are killed next turn
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        time.sleep(0.01)


def _main(argv: list[str]) -> int:
    tmp, req, resp, command = argv[0], int(argv[1]), int(argv[2]), argv[3:]
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    with open(os.path.join(tmp, "stdout"), "wb") as out, open(os.path.join(tmp, "stderr"), "wb") as err:
        worker = subprocess.Popen(command, stdin=req, stdout=out, stderr=err, pass_fds=(resp,),
                                  start_new_session=True)
    os.close(req)
    os.close(resp)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    try:
        os.write(1, f"{worker.pid}\n".encode())
    except OSError:  # the parent is gone already: clean up at once
        pass
    said = b""
    while True:
        try:
            chunk = os.read(0, 64)
        except InterruptedError:  # pragma: no cover - retried by Python itself
            continue
        if not chunk:
            break
        said += chunk[:1]
    _kill_all(worker.pid)
    if not said.startswith(b"c"):  # the parent died: nobody else will remove the folder
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":  # pragma: no cover - runs as the supervising process
    sys.exit(_main(sys.argv[1:]))
