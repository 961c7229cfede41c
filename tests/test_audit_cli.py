import json
import subprocess
import sys

import numpy as np
import pytest

from ropegeo.gates.procedure import geometry_audit
from ropegeo.rotation import relative_law_error
from ropegeo.cli import main

# What the seed article's own script prints for its default settings (head 128, base 1e4,
# train 4096, target 32768), with and without --interpolate.
SEED_DEFAULT = dict(distant_offset=28269, distant_similarity=0.24029067886798017,
                    adjacent_similarity=0.9702138094651191, slow_pairs=18, pair_count=64)
SEED_INTERP = dict(distant_offset=4636, distant_similarity=0.356300351441532,
                   adjacent_similarity=0.9995122883195481, angular_step_ratio=0.125)


def test_matches_seed_script_defaults():
    r = geometry_audit()
    for key, value in SEED_DEFAULT.items():
        assert getattr(r, key) == pytest.approx(value, abs=1e-10)
    assert r.relative_law_error < 1e-12
    assert r.angular_step_ratio == 1.0


def test_matches_seed_script_interpolated():
    r = geometry_audit(interpolate=True)
    for key, value in SEED_INTERP.items():
        assert getattr(r, key) == pytest.approx(value, abs=1e-10)


def test_relative_law_error_small_in_both_dtypes():
    # float32 vectors of 16 unit-variance entries: rounding of order 16 * 6e-8 per score
    assert relative_law_error(16, dtype="float32") < 1e-4
    assert relative_law_error(16) < 1e-12


def test_audit_json_round_trip_and_top():
    r = geometry_audit(head_dim=8, train_length=4096, target_length=7000, top=3)
    d = json.loads(r.to_json())
    assert d["distant_offset"] == 6283 and len(d["top_offsets"]) == 3
    assert d["search_range"] == [4096, 7000]


def _run(*args):
    return subprocess.run([sys.executable, "-m", "ropegeo", *args], capture_output=True, text=True)


def test_cli_table_and_json():
    out = _run("audit")
    assert out.returncode == 0
    assert "28,269" in out.stdout and "AuditResult" not in out.stdout
    js = _run("audit", "--interpolate", "--json", "--top", "2")
    d = json.loads(js.stdout)
    assert d["distant_offset"] == 4636 and d["angular_step_ratio"] == 0.125
    assert len(d["top_offsets"]) == 2


@pytest.mark.parametrize(
    "args, word",
    [
        (["audit", "--head-dim", "7"], "head_dim"),
        (["audit", "--base", "1"], "base"),
        (["audit", "--base", "nan"], "base"),
        (["audit", "--train-length", "1"], "train_length"),
        (["audit", "--pairing", "zigzag"], "pairing"),
        (["audit", "--rotary-dim", "200"], "rotary_dim"),
        (["audit", "--head-dim", "x"], "head-dim"),
        (["audit", "--nope"], "unrecognized"),
        ([], "required"),
        (["audit", "--head-dim", "2000000"], "head_dim must be at most"),
        (["audit", "--search-limit", "1000000000000", "--target-length", "1000000000000"], "too long to search"),
        (["audit", "--config", "llama-2-7b", "--target-length", "10" + "0" * 30], "target_length must be at most"),
        (["audit", "--config", ""], "empty"),
        (["report", "llama-2-7b", "--target-length", "99999999999999999999"], "target_length must be at most"),
        (["report", "llama-2-7b", "--gate-c", "--train-length", "2", "--target-length", "3"],
         "training length must be at least 7"),
    ],
)
def test_cli_bad_input_exit_2_one_line(args, word, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and word in err and "Traceback" not in err


def test_cli_subprocess_error_is_one_line():
    out = _run("audit", "--head-dim", "9")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_geometry_audit_interpolate_must_be_a_bool():
    with pytest.raises(ValueError, match="interpolate must be True or False"):
        geometry_audit(head_dim=8, interpolate="no")
