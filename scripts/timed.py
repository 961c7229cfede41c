"""Run one command and print its wall time and the CPU time of it and all its descendants.

Usage: python scripts/timed.py LABEL COMMAND [ARG ...]   (exits with the command's status)

`make test` runs each stage through it, so its output states what each stage cost: the wall time
on this machine, and the CPU time (user + system), which another load on the machine changes far
less. On a quiet 2-core machine a stage that keeps both cores busy takes about half its CPU time.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python scripts/timed.py LABEL COMMAND [ARG ...]", file=sys.stderr)
        return 2
    label, command = argv[0], argv[1:]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    status = subprocess.call(command)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"== {label}: {wall:.1f} s wall, {cpu:.1f} s CPU (exit {status})", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
