"""Check once, at the entry: how many validator calls one audit makes.

Every public function checks its arguments with the helpers of ``ropegeo/_validate.py``. This
benchmark wraps each helper with a counter and runs

* one default ``geometry_audit()`` (head 128, base 10,000, 4,096 -> 32,768 tokens), and
* one default Gate A run on the reference implementation (``gate_a(apply_rope, head_dim=64)``;
  the calls the implementation makes itself are not counted: they are not Gate A's),

then prints, per run, the number of validator calls (all of them, and the outermost ones: a
helper that calls another, as ``head_dim`` calls ``integer``, counts once there), how often each
named input was checked, and which file made each outermost call. No file is left out: a check
Gate B, the margins or the precision make counts like any other. It also counts how often one audit
of a scaled manifest (Llama 3.1 8B, the llama3 rule) computes the rule's frequencies.

Target (issues 24 and 34): each input checked once, at the entry, and at most 20 outermost calls
for one default audit; the scaled frequencies computed once.

Measured (one run each, same machine; counts do not depend on the machine):

=================================  ======================  ===================  ==================================
run                                main, d5d8d9f           branch operator      branch opflow (issue 34)
=================================  ======================  ===================  ==================================
geometry_audit(): all calls        171 (127 outermost)     93 (69 outermost)    outermost 18: the operator 7, the
                                                                                manifest 3, the audit's arguments
                                                                                4, geometry 4; Gate B, margins,
                                                                                precision, frequencies 0
gate_a(apply_rope, head_dim=64),   19 (13 outermost)       12 (10 outermost)    unchanged
the implementation's uncounted
scaled frequencies, one audit of   3                       1                    1
llama-3.1-8b
=================================  ======================  ===================  ==================================

Run from the repository root: ``PYTHONPATH=. python bench/validation.py`` (``--json`` for a record).
"""

from __future__ import annotations

import collections
import functools
import inspect
import json
import sys

import numpy as np

from ropegeo import _validate
from ropegeo.gates.procedure import geometry_audit
from ropegeo.gates.a.gate import gate_a
from ropegeo.rotation import apply_rope

#: The helpers counted: every public function of ``ropegeo/_validate.py``.
VALIDATORS = tuple(name for name, fn in vars(_validate).items()
                   if inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == _validate.__name__
                   and name != "is_collection")
#: The name each helper checks when no name is passed (their defaults).
_DEFAULT_NAMES = {"head_dim": "head_dim", "base": "base", "pairing": "pairing", "float_dtype": "dtype",
                  "frequencies": "theta", "pair_weights": "weights"}


class Counter:
    """Wraps the validators while active; counts every call and the outermost ones by name."""

    def __init__(self) -> None:
        self.calls = 0
        self.outer = 0
        self.by_name: collections.Counter = collections.Counter()
        self.by_helper: collections.Counter = collections.Counter()
        self._depth = 0
        self._saved: dict = {}
        self.by_file: collections.Counter = collections.Counter()  # outermost calls, by the file making them

    def _wrap(self, helper: str, fn):
        @functools.wraps(fn)
        def counted(*args, **kwargs):
            self.calls += 1
            self.by_helper[helper] += 1
            if self._depth == 0:
                self.outer += 1
                self.by_name[_checked_name(helper, args, kwargs)] += 1
                self.by_file[sys._getframe(1).f_code.co_filename.split("ropegeo/")[-1]] += 1
            self._depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth -= 1
        return counted

    def uncounted(self, fn):
        """``fn`` with counting suspended while it runs (the implementation Gate A audits)."""
        @functools.wraps(fn)
        def run(*args, **kwargs):
            self._depth += 1_000_000  # any depth > 0 is not outermost; calls inside are subtracted below
            before = self.calls, dict(self.by_helper)
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth -= 1_000_000
                self.calls, self.by_helper = before[0], collections.Counter(before[1])
        return run

    def __enter__(self) -> "Counter":
        for helper in VALIDATORS:
            fn = getattr(_validate, helper)
            self._saved[helper] = fn
            setattr(_validate, helper, self._wrap(helper, fn))
        return self

    def __exit__(self, *exc) -> None:
        for helper, fn in self._saved.items():
            setattr(_validate, helper, fn)


def _checked_name(helper: str, args, kwargs) -> str:
    """The parameter name a validator call checks (first argument for ``integer(name, value)`` etc.)."""
    if "name" in kwargs:
        return kwargs["name"]
    if helper in _DEFAULT_NAMES:  # value first, optional name second
        return args[1] if len(args) > 1 and isinstance(args[1], str) else _DEFAULT_NAMES[helper]
    return args[0] if args and isinstance(args[0], str) else helper


def count(run) -> Counter:
    with Counter() as c:
        run(c)
    return c


def _rotate(x, positions):
    """The implementation Gate A audits: the reference rotation (its own checks are not counted)."""
    return apply_rope(x, positions)


RUNS = {
    "geometry_audit()": lambda c: geometry_audit(),
    # the implementation's own validator calls are its business, not Gate A's: not counted
    "gate_a(apply_rope, head_dim=64)": lambda c: gate_a(c.uncounted(_rotate), head_dim=64),
}


def scaled_computations(model: str = "llama-3.1-8b") -> int:
    """How often one geometry audit of a shipped (scaled) model computes the rule's frequencies."""
    from ropegeo import operator as config  # the operator calls the rule table's dispatcher by this name
    from ropegeo.models.manifest import load_model

    real, calls = config.scaled_frequencies, []

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    m = load_model(model).with_()  # a fresh manifest
    config.scaled_frequencies = counted
    try:
        geometry_audit(m, search_limit=5000)
    finally:
        config.scaled_frequencies = real
    return len(calls)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    record = {}
    for label, fn in RUNS.items():
        c = count(fn)
        record[label] = {"calls": c.calls, "outermost": c.outer, "outermost_by_file": dict(c.by_file.most_common()),
                         "by_input": dict(c.by_name.most_common()), "by_helper": dict(c.by_helper.most_common())}
    record["scaled frequencies computed by one audit of llama-3.1-8b"] = scaled_computations()
    if "--json" in argv:
        print(json.dumps(record, indent=1))
        return 0
    for label, r in record.items():
        if not isinstance(r, dict):
            print(f"{label}: {r}")
            continue
        print(f"{label}: {r['calls']} validator calls ({r['outermost']} outermost)")
        print("  outermost, by file: " + ", ".join(f"{k} {n}" for k, n in r["outermost_by_file"].items()))
        print("  inputs checked more than once: " + (", ".join(
            f"{k} x{n}" for k, n in r["by_input"].items() if n > 1) or "none"))
        print("  by helper: " + ", ".join(f"{k} {n}" for k, n in r["by_helper"].items()))
    return 0


if __name__ == "__main__":
    np.seterr(all="warn")
    raise SystemExit(main())
