"""Run functions of the labs' JavaScript under Node and bring their results back to Python.

``call_js(module, [(name, args), ...])`` imports the ES module (a path; the labs' modules are
concatenated with the geometry core first, as :func:`ropegeo.book.widgets._anywidget.esm_source` does)
and returns each call's result as plain Python: typed arrays become lists, non-finite numbers
become floats (JSON cannot hold them, so they travel as strings).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

_SCRIPT = r"""
const mod = await import(process.argv[2]);
const calls = JSON.parse(await new Promise((ok) => { let s = ""; process.stdin.on("data", (c) => s += c); process.stdin.on("end", () => ok(s)); }));
const revive = (x) => (x === "inf" ? Infinity : x === "-inf" ? -Infinity : x === "nan" ? NaN : Array.isArray(x) ? x.map(revive) : (x && typeof x === "object") ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, revive(v)])) : x);
const plain = (x) => {
  if (typeof x === "number") return Number.isFinite(x) ? x : String(x);
  if (ArrayBuffer.isView(x)) return Array.from(x, plain);
  if (Array.isArray(x)) return x.map(plain);
  if (x && typeof x === "object") return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, plain(v)]));
  return x;
};
const out = calls.map(([name, args]) => plain(mod[name](...revive(args))));
process.stdout.write(JSON.stringify(out));
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


def call_js(source: str, calls) -> list:
    """Evaluate ``[(function name, [args...]), ...]`` in the ES module ``source`` (its text)."""
    exe = node()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "module.mjs"
        path.write_text(source)
        runner = Path(tmp) / "run.mjs"
        runner.write_text(_SCRIPT)
        run = subprocess.run([exe, str(runner), path.as_uri()], input=json.dumps(_encode(list(calls))),
                             capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return _decode(json.loads(run.stdout))
