"""A probe of bad and hostile inputs: every one is refused in one clear line, never a traceback or a hang.

API: each public entry point, called with a bad value for one argument, raises a ``ValueError``
whose message names that argument (nothing else: no TypeError, KeyError, OSError, no result).
Command line: ``ropegeo.cli.main([...])`` in-process returns 2 with exactly one line on stderr and
nothing on stdout; the few inputs that need a process of their own (a FIFO, ``/dev/stdin`` held
open) run in a subprocess under a timeout. Every case runs under an alarm, so a hang fails it.
The bad values are checked at the public entry, so the whole probe takes seconds.
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from ropegeo import scaling
from ropegeo.gates.procedure import audit, geometry_audit
from ropegeo.cli import main
from ropegeo.frequencies import frequencies, wavelengths
from ropegeo.gates.a.gate import check_declaration, gate_a
from ropegeo.gates.c import gate_c
from ropegeo.geometry import adjacent_similarity, kernel, near_collisions
from ropegeo.models.manifest import RopeManifest, layer_kinds, load_model, model_record, read_config, resolve
from ropegeo.multiaxis import MAX_EXTENT, axial_bank, kernel_grid, mrope_assignment, nope_temperature
from ropegeo.rotation import apply_rope, rotation_matrix

ROOT = Path(__file__).resolve().parents[1]
NAN, INF = float("nan"), float("inf")
#: values that are no number at all
NOT_NUMBERS = ("8", b"8", [8], (8,), {}, object(), 1 + 2j, "nan")
#: numbers that no finite argument accepts
NON_FINITE = (NAN, INF, -INF)
#: bad for any count or length (integers from 1 or 2)
BAD_COUNTS = NOT_NUMBERS + NON_FINITE + (True, 2.5, -1, 0, -(2 ** 70), 2 ** 70)
#: bad for any frequency base
BAD_BASES = NOT_NUMBERS + NON_FINITE + (True, None, 1, 1.0, 0.5, 0, -10_000, 1e400)
#: bad for any real number
BAD_REALS = NOT_NUMBERS + NON_FINITE + (True, None)
#: bad for any choice among names
BAD_NAMES = ("", "foo", " half", "HALF ", 1, None, ["half"], b"half", object())


def good(x, p):
    return apply_rope(x, p, pairing="half")


THETA = frequencies(8, 10_000.0)
X = np.ones((4, 8))
P = np.arange(4)
MANIFEST = RopeManifest(head_dim=8, max_position_embeddings=64)


def sentinel(values) -> tuple:
    """The bad values of a plain operator keyword whose default is ``None`` ("not given")."""
    return tuple(x for x in values if x is not None)


API: list[tuple[str, object, str]] = []  # (case id, thunk, the argument its message must name)


def cases(fn, arg: str, values, label: str | None = None, **given) -> None:
    """One case per value: ``fn(**given, arg=value)`` must raise a ValueError naming ``label or arg``."""
    for value in values:
        kwargs = {**given, arg: value}
        API.append((f"{len(API)}-{fn.__name__}-{arg}", lambda kw=kwargs: fn(**kw), arg if label is None else label))


# ---------------------------------------------------------------------- core geometry
cases(apply_rope, "x", ("x", None, object(), np.ones(7), np.ones((4, 7)), [[NAN] * 8] * 4, np.ones((4, 0)),
                        np.array([["a"] * 8] * 4)), positions=P)
cases(apply_rope, "positions", ("p", None, [NAN] * 4, [INF] * 4, np.arange(5), [[0, 1]], object(), ["a"] * 4),
      x=X)
cases(apply_rope, "base", sentinel(BAD_BASES), x=X, positions=P)
cases(apply_rope, "rotary_dim", BAD_COUNTS + (3, 10, 7.0), x=X, positions=P)
cases(apply_rope, "pairing", sentinel(BAD_NAMES), x=X, positions=P)
cases(apply_rope, "scale", sentinel(BAD_REALS), x=X, positions=P)
cases(apply_rope, "phase_dtype", ("", "foo", " half", 1, ["float32"], object(), "int8", "float128"), x=X, positions=P)
cases(apply_rope, "theta", ("t", [NAN] * 4, [1.0] * 5, [], [[1.0] * 4], object()), x=X, positions=P)
cases(frequencies, "head_dim", BAD_COUNTS + (7, 3, 2 ** 20))
cases(frequencies, "base", sentinel(BAD_BASES))
cases(frequencies, "rotary_dim", BAD_COUNTS + (7, 130), head_dim=128)
cases(wavelengths, "theta", ("t", [], [-1.0], [NAN], [INF], [[1.0]], object()))
cases(kernel, "offsets", ("o", [NAN], [INF], object(), [1.5, "a"]), theta=THETA)
cases(kernel, "theta", ("t", [], [NAN], [-1.0], object()), offsets=[1, 2])
# positions and offsets past 2**48 (where float64 phases are rounding noise) are refused, not "computed"
cases(kernel, "offsets", ([2 ** 62], [-(2.0 ** 50)], np.array([1, 2 ** 49])), theta=THETA)
cases(apply_rope, "positions", (2 ** 62, -(2 ** 62), [0, 1, 2, 2.0 ** 49]), x=X)
cases(rotation_matrix, "position", (2 ** 62, -(2.0 ** 49)), head_dim=8)
cases(kernel, "scale", sentinel(BAD_REALS), offsets=[1, 2], theta=THETA)
cases(kernel, "weights", ("w", [1.0] * 3, [-1.0] * 4, [NAN] * 4, [0.0] * 4, object()), offsets=[1, 2], theta=THETA)
cases(adjacent_similarity, "theta", ("t", [], [NAN], object()))
cases(adjacent_similarity, "scale", sentinel(BAD_REALS), theta=THETA)
cases(near_collisions, "start", tuple(b for b in BAD_COUNTS if b != 0) + (10 ** 20, 101), theta=THETA, stop=100)
cases(near_collisions, "stop", BAD_COUNTS + (2 ** 60, 1), theta=THETA, start=2)
cases(near_collisions, "top", BAD_COUNTS + (10 ** 9,), theta=THETA, start=2, stop=100)
cases(near_collisions, "theta", ("t", [], [NAN], [-1.0], object()), start=2, stop=100)
cases(near_collisions, "progress", ("yes", 1, [True], object()), theta=THETA, start=2, stop=100)

# ---------------------------------------------------------------------- geometry audit
cases(geometry_audit, "head_dim", BAD_COUNTS + (7, 3, 10 ** 9))
cases(geometry_audit, "base", sentinel(BAD_BASES))
cases(geometry_audit, "train_length", BAD_COUNTS + (1,))
cases(geometry_audit, "target_length", BAD_COUNTS + (2,))
cases(geometry_audit, "rotary_dim", BAD_COUNTS + (7, 130))
cases(geometry_audit, "interpolate", ("yes", 1, [True], object()))
cases(geometry_audit, "search_start", BAD_COUNTS + (1, 40_000))
cases(geometry_audit, "search_limit", BAD_COUNTS + (1,))
cases(geometry_audit, "search_start", (10_000, 101, 100), search_limit=100)
cases(geometry_audit, "pairing", sentinel(BAD_NAMES))
cases(geometry_audit, "dtype", BAD_NAMES + ("float16", "bfloat16"))
cases(geometry_audit, "top", BAD_COUNTS + (1001,))
cases(geometry_audit, "min_margin", NOT_NUMBERS + NON_FINITE + (0, -0.1, 2.5, True))
cases(geometry_audit, "gate_b_rule", ("rule", 0.1, {}, object()))
cases(geometry_audit, "seed", ("s", -1, 1.5, NAN, None, True, object()))

# ---------------------------------------------------------------------- manifests and configs
cases(RopeManifest, "notes", (None, "a note", [1], (b"x",), 5, object()))
cases(RopeManifest, "name", (5, ["n"], object()))
cases(RopeManifest, "source", (5, ["s"], object()))
cases(RopeManifest, "base", BAD_BASES)
cases(RopeManifest, "head_dim", BAD_COUNTS + (7,))
cases(RopeManifest, "rotary_dim", BAD_COUNTS + (7, 130))
cases(RopeManifest, "pairing", BAD_NAMES)
cases(RopeManifest, "position_id_policy", BAD_NAMES)
cases(RopeManifest, "phase_dtype", BAD_NAMES)
cases(RopeManifest, "cache_offset", NOT_NUMBERS + NON_FINITE + (-1, True, 2.5))
cases(RopeManifest, "max_position_embeddings", BAD_COUNTS)
cases(RopeManifest, "sliding_window", BAD_COUNTS)
cases(RopeManifest, "logit_scale", BAD_REALS + (0, -1.0))
cases(RopeManifest, "layer_type", (5, ["full_attention"], object()))
cases(RopeManifest, "scaling", ("yarn", 5, {"factor": 2}, {"rule": "nope"}, object()))
cases(load_model, "name", ("tables/pairing_by_model_type", "../manifest", "/etc/passwd", "llama-2-7b/", "",
                          "x" * 5000, "llama\x00", None, 5, ["llama-2-7b"], object()))
cases(model_record, "name", ("tables/pairing_by_model_type", "../__init__", "nope", None, 5))
cases(load_model, "layer_type", ("nope", 5, ["full_attention"]), name="gemma-3-1b-it")
cases(resolve, "name_or_path", ("", "   ", "no-such-model", "x" * 5000, "/" + "x" * 300, "/dev/null", "/dev/zero", "/", "/tmp",
                          "/proc/self/mem", "a\x00b", None, 5, ["llama-2-7b"], b"llama-2-7b", object()),
      label="config", )
cases(layer_kinds, "name_or_path", ("", "x" * 5000, "/dev/null", "/", "a\x00b", "no-such-model", 5, None),
      label="config")
cases(read_config, "config", ("", "/dev/null", "/dev/zero", "/nonexistent/config.json", "x" * 5000, 5, None, [1, 2],
                              object(), "a\x00b"), label="config")
cases(read_config, "config", ({"rope_theta": "x"}, {"rope_theta": NAN}, {"hidden_size": -4, "num_attention_heads": 2},
                              {"head_dim": 7}, {"rope_scaling": "linear"}, {"rope_scaling": {"rope_type": "nope"}},
                              {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "beta_fast": 1,
                                                "beta_slow": 32}}, {"max_position_embeddings": 2 ** 70},
                              {"_name_or_path": 5}, {"text_config": {}}),
      label="")
cases(read_config, "layer_type", ("nope", 5), config={"hidden_size": 64, "num_attention_heads": 4})
cases(read_config, "name", (5, ["n"]), config={"hidden_size": 64, "num_attention_heads": 4})
cases(read_config, "config", ({"hidden_size": 64, "num_attention_heads": 4, "layer_types": []},
                              {"hidden_size": 64, "num_attention_heads": 4, "layer_types": ["full\x1b[2J"]}),
      label="layer_types")

# ---------------------------------------------------------------------- multi-axis sizes (checked before allocating)
cases(mrope_assignment, "sections", ((2 ** 40, 1, 1), (2048, 1)))
cases(kernel_grid, "extent", (65536, MAX_EXTENT, 2000), freqs=axial_bank())

# ---------------------------------------------------------------------- scaling rules
cases(scaling.preset, "rule", ("foo", " yarn", 1, ["yarn"], b"yarn", object(), "linearx"), train_length=4096,
      target_length=32768)
cases(scaling.preset, "train_length", BAD_COUNTS, rule="linear", target_length=32768)
cases(scaling.preset, "target_length", BAD_COUNTS, rule="linear", train_length=4096)
cases(scaling.preset, "foo", (1, "x", None), rule="yarn", train_length=4096, target_length=32768)
cases(scaling.yarn, "truncate", ("no", 0, None, [True]), base=1e4, head_dim=64, factor=4.0, original_length=4096)
cases(scaling.yarn, "beta_slow", (64.0, NAN, "x"), base=1e4, head_dim=64, factor=4.0, original_length=4096)
cases(scaling.yarn, "factor", BAD_REALS + (0, -2.0), base=1e4, head_dim=64, original_length=4096)
cases(scaling.yarn, "base", BAD_BASES, head_dim=64, factor=4.0, original_length=4096)

# ---------------------------------------------------------------------- Gate A (checked before any call)
cases(gate_a, "impl", (None, 5, "ropegeo.examples.rope:llama2", object()), head_dim=8)
for key, values in {
    "head_dim": BAD_COUNTS + (7, 3, 10 ** 6), "base": sentinel(BAD_BASES), "pairing": sentinel(BAD_NAMES),
    "rotary_dim": BAD_COUNTS + (7,), "scale": sentinel(BAD_REALS + (0, -1.0)),
    "phase_dtype": sentinel(BAD_NAMES + ("int8",)),
    "dtype": ("foo", " half", 1, ["float32"], object(), "int8"), "max_position": BAD_COUNTS + (8, 2 ** 60),
    "attention_factor": NOT_NUMBERS + NON_FINITE + (0, -1.0, True, 1e300, 1e-300), "seed": ("s", -1, 1.5, NAN, None, True),
    "attention_factor_in": BAD_NAMES, "theta": ("t", [NAN], [], [-1.0], [[1.0]]),
    "target_length": (5, "x"), "manifest": (5, "no-such-model", "/dev/null", "x" * 5000, [1], object()),
}.items():
    cases(gate_a, key, values, impl=good, head_dim=8 if key != "head_dim" else None)
    cases(check_declaration, key, values, head_dim=8 if key != "head_dim" else None)
cases(gate_a, "head_dim", (64, 256), impl=good, manifest="llama-3.1-8b")
cases(gate_a, "base", (20.0, 1e6), impl=good, manifest="llama-3.1-8b")
cases(gate_a, "scale", (2.0,), impl=good, manifest="llama-3.1-8b")
cases(gate_a, "theta", ([1.0, 0.1],), impl=good, manifest="llama-3.1-8b")
cases(gate_a, "phase_dtype", ("float64", "bfloat16"), impl=good, manifest="llama-3.1-8b")
cases(gate_a, "rotary_dim", (64,), impl=good, manifest="llama-3.1-8b")

# ---------------------------------------------------------------------- the three gates
cases(audit, "target", (None, 5, "no-such-model", "/dev/null", "x" * 5000, [1], object(), "/"))
cases(audit, "manifest", (None, 5, "no-such-model", object()), target=good)
cases(audit, "offsets", ("1-64", [1], [NAN, 1], [-1, 2], [1, 1], [1, 10 ** 9], {"a": [1]}, object(), [[1, 2]]),
      target=MANIFEST)
cases(audit, "train_length", BAD_COUNTS + (1,), target=MANIFEST)
cases(audit, "target_length", BAD_COUNTS + (2, 32), target=MANIFEST)
cases(audit, "min_margin", NOT_NUMBERS + NON_FINITE + (0, -0.5, 3.0, True), target=MANIFEST)
cases(audit, "origin", NOT_NUMBERS + NON_FINITE + (-1.0, True), target=MANIFEST)
cases(audit, "gate_c", ("yes", 1, None, [True], object()), target=MANIFEST)
cases(audit, "run_all", ("yes", 1, None), target=MANIFEST)
cases(audit, "seed", ("s", -1, 1.5, None, True), target=MANIFEST)
cases(audit, "gate_c_lengths", (("a", "b"), (64,), (64, 32), (1, 8), (64, 10 ** 6), 5, "64,512", {"a": 1},
                                (64.5, 512), (NAN, 512), (None, None)), target=MANIFEST, gate_c=True)
cases(audit, "gate_c_options", ({"foo": 1}, {"theta": [1.0]}, {"train_length": 8}, [("seeds", (0,))], "seeds=1", 5),
      target=MANIFEST, gate_c=True)
cases(gate_c, "theta", ("t", [], [NAN], [-1.0], [[1.0]], object()))
cases(gate_c, "train_length", BAD_COUNTS + (1, 4096), theta=THETA)
cases(gate_c, "target_length", BAD_COUNTS + (64, 10 ** 6), theta=THETA)
cases(gate_c, "offset", BAD_COUNTS + (64,), theta=THETA)
cases(gate_c, "seeds", ("0", -1, [], [1.5], [-1], list(range(100)), object(), None), theta=THETA)
cases(gate_c, "steps", BAD_COUNTS + (10 ** 9,), theta=THETA)
cases(gate_c, "min_train_accuracy", BAD_REALS + (1.5, -0.1), theta=THETA)
cases(gate_c, "target_theta", ([1.0], [NAN] * 4, "t"), theta=THETA)


class Hang(Exception):
    """The alarm went off: the call did not return in time."""


@contextmanager
def alarm(seconds: int):
    def ring(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_the_probe_is_large():
    assert len(API) + len(CLI) + len(SPAWNED) >= 300


@pytest.mark.parametrize("case, thunk, name", API, ids=[c for c, _, _ in API])
def test_api_refuses_with_a_value_error_naming_the_argument(case, thunk, name):
    with alarm(20):
        with pytest.raises(ValueError) as info:
            thunk()
    assert type(info.value).__name__ in ("ValueError", "ConfigError", "GateAError"), repr(info.value)
    message = str(info.value)
    assert name in message or name.replace("_", " ") in message, (case, message)
    assert "\n" not in message.strip() or name == "", message


# ---------------------------------------------------------------------- the command line, in-process
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad-configs")
    (d / "array.json").write_text("[1, 2, 3]")
    (d / "bad.json").write_text("{not json")
    (d / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "big.json").write_text('{"a": "' + "x" * (1 << 20) + '"}')
    (d / "empty.json").write_text("")
    (d / "badfield.json").write_text('{"rope_theta": "ten thousand"}')
    (d / "no_layers.json").write_text('{"hidden_size": 64, "num_attention_heads": 4, "layer_types": []}')
    locked = d / "locked"
    locked.mkdir()
    (locked / "config.json").write_text("{}")
    locked.chmod(0)
    noread = d / "noread.json"
    noread.write_text("{}")
    noread.chmod(0)
    yield d
    locked.chmod(0o700)


def config_cases(option_prefix):
    """Bad --config values: (argv tail builder over the files folder)."""
    names = ("array.json", "bad.json", "binary.json", "deep.json", "big.json", "empty.json", "badfield.json",
             "locked/config.json", "noread.json", "", ".")
    return [(lambda d, n=n: [*option_prefix, str(d / n) if n else ""]) for n in names] + [
        (lambda d: [*option_prefix, "x" * 5000]), (lambda d: [*option_prefix, "/dev/null"]),
        (lambda d: [*option_prefix, "/dev/zero"]), (lambda d: [*option_prefix, "/proc/self/mem"]),
        (lambda d: [*option_prefix, "no-such-model"]), (lambda d: [*option_prefix, "/"]),
    ]


def numbers_for(option, *extra, counts=True):
    """Bad values of a numeric option of ``audit`` (for a count, a huge or fractional one too)."""
    values = ("x", "", "nan", "inf", "-inf", "1e999", "-5", "0", "0x10", *extra)
    values += ("99999999999999999999999", "1.5") if counts else ()
    return [(lambda d, v=v: ["audit", option, v]) for v in values]


CLI = [
    *numbers_for("--head-dim", "7", "3"), *numbers_for("--base", "1", counts=False), *numbers_for("--train-length", "1"),
    *numbers_for("--target-length", "2"), *numbers_for("--rotary-dim", "7", "130"),
    *numbers_for("--search-limit", "1"), *numbers_for("--top", "1001"),
    *[(lambda d, v=v: ["audit", "--gap", v]) for v in ("x", "nan", "inf", "-1", "0")],
    *[(lambda d, v=v: ["audit", "--mass", v]) for v in ("x", "nan", "1", "1.5", "0", "0.3", "-0.2")],
    *[(lambda d, v=v: ["audit", "--sharpness", v]) for v in ("x", "nan", "inf", "-1", "0")],
    *[(lambda d, v=v: ["audit", "--min-margin", v]) for v in ("x", "nan", "inf", "-1", "0", "2.5")],
    *[(lambda d, v=v: ["audit", "--pairing", v]) for v in ("", "foo", "HALF")],
    (lambda d: ["audit", "--gap", "1", "--mass", "0.9"]), (lambda d: ["audit", "--min-margin", "0.1", "--gap", "1"]),
    (lambda d: ["audit", "--layer-type", "full_attention"]),
    (lambda d: ["audit", "--config", "llama-2-7b", "--head-dim", "64"]),
    (lambda d: ["audit", "--config", "llama-2-7b", "--interpolate"]),
    (lambda d: ["audit", "--config", "gemma-3-1b-it", "--layer-type", "nope"]),
    (lambda d: ["audit", "--config", "llama-2-7b", "--layer-type", "full_attention"]),
    (lambda d: ["audit", "--search-limit", "100", "--train-length", "4096", "--target-length", "2"]),
    *config_cases(["audit", "--config"]),
    (lambda d: []), (lambda d: ["nope"]), (lambda d: ["audit", "--nope"]), (lambda d: ["audit", "extra"]),
    (lambda d: ["audit", "--head-dim"]), (lambda d: ["--head-dim", "8"]), (lambda d: ["AUDIT"]),
    # gate-a: every option refused before the worker starts
    *[(lambda d, t=t: ["gate-a", t]) for t in ("", "nocolon", "a:b:c", ":f", "m:", "no_such_module_xyz:f",
                                               "ropegeo.examples.rope:nope", "ropegeo.examples.rope:")],
    *[(lambda d, o=o, v=v: ["gate-a", "ropegeo.examples.rope:llama2", o, v])
      for o, vals in {"--head-dim": ("x", "7", "0", "-2", "99999999"), "--base": ("x", "nan", "1", "-1", "1e999"),
                      "--pairing": ("foo", ""), "--rotary-dim": ("7", "0", "x"), "--scale": ("0", "nan", "-1", "x"),
                      "--attention-factor": ("0", "-1", "nan", "inf", "1e300", "1e-300"), "--attention-factor-in": ("both",),
                      "--phase-dtype": ("int8", "foo"), "--dtype": ("foo", "int8"),
                      "--max-position": ("0", "8", "99999999999999999999", "x"), "--timeout": ("0", "-1", "nan",
                                                                                            "inf", "1e9", "x"),
                      "--seed": ("-1", "x"), "--target-length": ("100",), "--layer-type": ("full_attention",)}.items()
      for v in vals],
    (lambda d: ["gate-a", "ropegeo.examples.rope:llama2", "--config", "llama-3.1-8b", "--head-dim", "64"]),
    (lambda d: ["gate-a", "ropegeo.examples.rope:llama2", "--config", str(d / "no_layers.json")]),
    (lambda d: ["audit", "--config", str(d / "no_layers.json")]),
    (lambda d: ["report", str(d / "no_layers.json")]),
    (lambda d: ["gate-a", "ropegeo.examples.rope:llama2", "--config", "llama-3.1-8b", "--base", "10000"]),
    (lambda d: ["gate-a", "ropegeo.examples.rope:llama2", "--config", "llama-3.1-8b", "--target-length", "x"]),
    (lambda d: ["gate-a", "ropegeo.examples.rope:llama2", "--config", "llama-3.1-8b", "--target-length", "1"]),
    *[(lambda d, f=f: ["gate-a", "ropegeo.examples.rope:llama2", *f(d)[1:]]) for f in config_cases(["", "--config"])],
    # report
    *[(lambda d, v=v: ["report", "llama-2-7b", "--offsets", v]) for v in (
        "", "x", "1-", "-3", "5-1", "1,,2", "1", "1-1", "1-99999999999999", "0-5000", "1.5,2", "a-b", "1-64,nan",
        "9999999", ",", "1 2")],
    *[(lambda d, o=o, v=v: ["report", "llama-2-7b", o, v]) for o, vals in {
        "--train-length": ("x", "0", "1", "-5", "999999999"), "--target-length": ("x", "0", "2", "10"),
        "--seeds": ("0", "11", "-1", "x"), "--timeout": ("0", "nan", "-1"), "--gap": ("nan", "-1"),
        "--mass": ("1", "0", "x"), "--min-margin": ("0", "3")}.items() for v in vals],
    (lambda d: ["report", "llama-2-7b", "--layer-type", "full_attention"]),
    (lambda d: ["report", "llama-2-7b", "--config", "llama-2-7b"]),
    (lambda d: ["report", "ropegeo.examples.rope:llama2"]),
    (lambda d: ["report", "ropegeo.examples.rope:llama2", "--config", "no-such-model"]),
    (lambda d: ["report", "ropegeo.examples.rope:llama2", "--config", "llama-2-7b", "--timeout", "0"]),
    (lambda d: ["report", "no_such_module_xyz:f", "--config", "llama-2-7b"]),
    *[(lambda d, f=f: ["report", *f(d)[2:]]) for f in config_cases(["", ""])],
    *[(lambda d, f=f: ["report", "ropegeo.examples.rope:llama2", *f(d)[1:]]) for f in config_cases(["", "--config"])],
]


@pytest.mark.parametrize("i", range(len(CLI)))
def test_cli_refuses_in_one_line_with_status_2(i, files, capsys):
    argv = CLI[i](files)
    with alarm(60):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own exits must not happen for bad input either
            code = exc.code
    out, err = capsys.readouterr()
    assert code == 2, (argv[:6], code, err[-500:])
    assert err.count("\n") == 1 and err.endswith("\n") and err.strip(), (argv[:6], err[-2000:])
    assert "Traceback" not in err and out == "", (argv[:6], out[-500:])


# ---------------------------------------------------------------------- the few that need their own process
def _fifo(d):
    path = d / "fifo.json"
    if not path.exists():
        os.mkfifo(path)
    return str(path)


SPAWNED = [
    ("audit-fifo", lambda d: ["audit", "--config", _fifo(d)]),
    ("report-fifo", lambda d: ["report", _fifo(d)]),
    ("gate-a-fifo", lambda d: ["gate-a", "ropegeo.examples.rope:llama2", "--config", _fifo(d)]),
    ("audit-stdin", lambda d: ["audit", "--config", "/dev/stdin"]),
    ("report-stdin", lambda d: ["report", "/dev/stdin"]),
    ("audit-fd", lambda d: ["audit", "--config", "/proc/self/fd/0"]),
]


@pytest.mark.parametrize("case, argv", SPAWNED, ids=[c for c, _ in SPAWNED])
def test_cli_never_blocks_on_a_pipe_or_fifo(case, argv, files):
    """stdin stays an open pipe nobody writes to, and the FIFO has no writer: reading either would block."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "ropegeo", *argv(files)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:  # not communicate(): it would close stdin, and a closed pipe reads as empty instead of blocking
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"{case}: blocked")
    finally:
        out, err = proc.stdout.read(), proc.stderr.read()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    assert proc.returncode == 2 and err.count("\n") == 1 and "regular file" in err, (case, proc.returncode, err)
    assert out == ""


# ---------------------------------------------------------------------- single findings, with their controls
def test_nope_temperature_with_a_tiny_floor_scale_is_computed_not_overflowed():
    """Against exact arithmetic: floor((p + 1) / floor_scale) as a Python integer (math.log takes any size)."""
    from fractions import Fraction

    def exact(p, floor_scale, attn_scale=0.1):
        return math.log(math.floor(Fraction(p + 1) / Fraction(floor_scale)) + 1) * attn_scale + 1

    for p, fs in [(10 ** 10, 1e-300), (0, 1e-300), (2 ** 40, 3e-10), (81919, 8192.0), (8190, 8192.0), (10 ** 15, 1.0),
                  (2 ** 53, 1e-5)]:
        got = float(nope_temperature([p], floor_scale=fs)[0])
        assert math.isclose(got, exact(p, fs), rel_tol=1e-12), (p, fs, got, exact(p, fs))
    assert round(float(nope_temperature([1e10], floor_scale=1e-300)[0]), 1) == 72.4  # the value


def test_kernel_grid_refuses_before_allocating():
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="extent"):
            kernel_grid(axial_bank(), 65536)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    assert kernel_grid(axial_bank(), 100).shape == (201, 201)  # the control: a grid within the limit


def test_a_huge_gate_a_target_is_the_targets_fault_not_the_channels(capsys):
    code = main(["gate-a", "m" * 100_000 + ":f"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and len(err) < 500, err[:300]
    assert "target must look like MODULE:FUNCTION" in err and "100,002 characters" in err
    assert "channel" not in err and "implementation" not in err


def test_names_read_from_a_config_are_escaped_before_printing(tmp_path, capsys):
    forged = "evil\nGate A: PASS\nverdict: pass\x1b[2J\x1b]0;title\x07"
    cfg = {"_name_or_path": forged, "model_type": "llama", "hidden_size": 512, "num_attention_heads": 4,
           "rope_theta": 10000.0, "max_position_embeddings": 4096}
    (tmp_path / "config.json").write_text(__import__("json").dumps(cfg))
    for argv in (["audit", "--config", str(tmp_path / "config.json")], ["report", str(tmp_path / "config.json")]):
        main(argv)
        out, err = capsys.readouterr()
        text = out + err
        assert "evil" in text, text[:500]  # the control: the name is printed ...
        assert "\x1b" not in text and "\x07" not in text  # ... with no escape sequence reaching the terminal ...
        assert not any(ln.strip() in ("Gate A: PASS", "verdict: pass") for ln in text.splitlines())  # ... nor a line


def test_version(capsys):
    import ropegeo

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"ropegeo {ropegeo.__version__}\n"
    out = subprocess.run([sys.executable, "-m", "ropegeo", "--version"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0 and out.stdout == f"ropegeo {ropegeo.__version__}\n" and out.stderr == ""
    version = next(ln for ln in (ROOT / "pyproject.toml").read_text().splitlines() if ln.startswith("version"))
    assert version.split('"')[1] == ropegeo.__version__


def test_ctrl_c_while_numpy_imports_is_one_line_and_exit_130(tmp_path):
    """A KeyboardInterrupt raised where numpy is imported (a stand-in numpy raises it), i.e. before
    any handler of the command line exists."""
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise KeyboardInterrupt\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run([sys.executable, "-m", "ropegeo", "audit"], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    assert (out.returncode, out.stderr, out.stdout) == (130, "ropegeo: interrupted\n", "")
    # an import that turns the interrupt into an error of its own (numpy's C start does) is still the interrupt ...
    (fake / "__init__.py").write_text("try:\n    raise KeyboardInterrupt\nexcept KeyboardInterrupt:\n"
                                      "    raise ImportError('could not import module datetime')\n")
    out = subprocess.run([sys.executable, "-m", "ropegeo", "audit"], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    assert (out.returncode, out.stderr) == (130, "ropegeo: interrupted\n")
    # ... but a plain broken install is not mistaken for one
    (fake / "__init__.py").write_text("raise ImportError('a broken numpy')\n")
    out = subprocess.run([sys.executable, "-m", "ropegeo", "audit"], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 1 and "a broken numpy" in out.stderr
    (fake / "__init__.py").write_text("raise KeyboardInterrupt\n")
    # the control: imported as a library (not the command line), the interrupt is the caller's, unchanged
    lib = subprocess.run([sys.executable, "-c", "import ropegeo"], capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    assert lib.returncode != 0 and "KeyboardInterrupt" in lib.stderr


def test_ctrl_c_at_any_moment_of_the_start_is_one_line():
    """A real SIGINT at several moments of the start (numpy importing, the parser, the audit). Before
    Python reaches the package (runpy locating it, a few milliseconds) the interrupt is Python's own."""
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3, 0.6):
        proc = subprocess.Popen([sys.executable, "-m", "ropegeo", "audit"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        frames = re.findall(r'File "([^"]*)"', err)
        before_the_package = (proc.returncode == -signal.SIGINT and err == "") or "init_import_site" in err or (
            frames and not any("/ropegeo/" in f for f in frames))
        if proc.returncode == 0 or before_the_package:
            continue  # finished before the signal, or Python had not reached the package (its start: no handler yet)
        if err.rstrip().endswith('could not import module "datetime"'):
            continue  # numpy's C start turned the interrupt into an ImportError of its own, with no trace of it
        assert proc.returncode == 130 and err == "ropegeo: interrupted\n" and out == "", (delay, proc.returncode, err)
