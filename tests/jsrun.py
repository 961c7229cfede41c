"""Run functions of the labs' JavaScript under Node and bring their results back to Python.

``call_js(module, [(name, args), ...])`` imports the ES module (a path; the labs' modules are
concatenated with the geometry core first, as :func:`ropegeo.book.widgets._anywidget.esm_source` does)
and returns each call's result as plain Python: typed arrays become lists, non-finite numbers
become floats (JSON cannot hold them, so they travel as strings).

One Node process per pytest process serves every call (starting Node and compiling the modules
for each test cost more than most of the computations): requests and answers travel as one line
of JSON each over its stdin and stdout. Each module text is written once, to a file named by its
hash, so the same source is imported (and compiled) once. A call that throws answers with the
error and fails its test; a process that dies or does not answer within the timeout is stopped,
fails the test, and a new one serves the next call.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import math
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

TIMEOUT = 300  # seconds for one call_js (as the one-process-per-call runner had)

_SERVER = r"""
import { createInterface } from "node:readline";
console.log = console.info = (...a) => console.error(...a);  // stdout carries the answers only
const revive = (x) => (x === "inf" ? Infinity : x === "-inf" ? -Infinity : x === "nan" ? NaN : Array.isArray(x) ? x.map(revive) : (x && typeof x === "object") ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, revive(v)])) : x);
const plain = (x) => {
  if (typeof x === "number") return Number.isFinite(x) ? x : String(x);
  if (ArrayBuffer.isView(x)) return Array.from(x, plain);
  if (Array.isArray(x)) return x.map(plain);
  if (x && typeof x === "object") return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, plain(v)]));
  return x;
};
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  let answer;
  try {
    const { module, calls } = JSON.parse(line);
    const mod = await import(module);
    answer = { out: calls.map(([name, args]) => plain(mod[name](...revive(args)))) };
  } catch (e) {
    answer = { error: String((e && e.stack) || e) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
"""


def node() -> str:
    exe = shutil.which("node")
    if exe is None:
        pytest.skip("node is not installed")
    return exe


def _encode(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, (list, tuple)):
        return [_encode(y) for y in x]
    if isinstance(x, dict):
        return {k: _encode(y) for k, y in x.items()}
    if hasattr(x, "tolist"):
        return _encode(x.tolist())
    return x


def _decode(x):
    if isinstance(x, str) and x in ("Infinity", "-Infinity", "NaN"):
        return float(x.replace("Infinity", "inf"))
    if isinstance(x, list):
        return [_decode(y) for y in x]
    if isinstance(x, dict):
        return {k: _decode(y) for k, y in x.items()}
    return x


class _Node:
    """The one Node process of this pytest process, and the folder of the modules it imports."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="ropegeo-jsrun-"))
        self.proc = None

    def module(self, source: str) -> str:
        path = self.dir / (hashlib.sha256(source.encode()).hexdigest()[:32] + ".mjs")
        if not path.exists():
            path.write_text(source)
        return path.as_uri()

    def start(self):
        if self.proc is None or self.proc.poll() is not None:
            server = self.dir / "server.mjs"
            server.write_text(_SERVER)
            with open(self.dir / "stderr.txt", "w") as err:
                self.proc = subprocess.Popen([node(), str(server)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=err, text=True, bufsize=1)
        return self.proc

    def stderr(self) -> str:
        path = self.dir / "stderr.txt"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def ask(self, request: str) -> dict:
        proc = self.start()
        try:
            proc.stdin.write(request + "\n")
            proc.stdin.flush()
            deadline = time.monotonic() + TIMEOUT
            line = ""
            while not line.endswith("\n"):
                ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    self.stop()
                    pytest.fail(f"node gave no answer within {TIMEOUT} s")
                chunk = proc.stdout.readline()
                if not chunk:  # the process ended
                    self.stop()
                    pytest.fail(f"node exited: {self.stderr()}")
                line += chunk
        except BrokenPipeError:
            self.stop()
            pytest.fail(f"node exited: {self.stderr()}")
        return json.loads(line)

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


_NODE: _Node | None = None


def _server() -> _Node:
    global _NODE
    if _NODE is None:
        node()  # skip before creating anything when node is missing
        _NODE = _Node()
        atexit.register(_NODE.close)
    return _NODE


def call_js(source: str, calls) -> list:
    """Evaluate ``[(function name, [args...]), ...]`` in the ES module ``source`` (its text)."""
    server = _server()
    answer = server.ask(json.dumps({"module": server.module(source), "calls": _encode(list(calls))}))
    assert "error" not in answer, answer.get("error", "")[-3000:]
    return _decode(answer["out"])
