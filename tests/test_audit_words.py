"""The audit's own words: what was checked, and no green pass after an earlier gate failed.

Labelled controls:
* a configuration alone: Gate A ran on ropegeo's own operator, so its row says so ("checked",
  "your code was not run") and never prints a green "pass"; a correct implementation prints "pass";
* a gate after the first failure prints "moot" with the measured state in words; with no failure,
  every measured gate prints its own state.
"""


import pytest

from ropegeo.book.broken import entry
from ropegeo.gates.c import GateCVerdict
from ropegeo.gates.procedure import audit
from ropegeo.models.manifest import RopeManifest

KW = dict(offsets=range(1, 17), train_length=64, target_length=512)


def declared(name):
    dec = dict(entry(name).declared)
    scale = dec.pop("scale", 1.0)
    if scale != 1.0:
        dec["scaling"] = {"rule": "linear", "factor": 1.0 / scale}
    return RopeManifest(phase_dtype="float32", **dec)


def rows(report):
    return {g: (state, text) for g, state, text in report._rows()}


def test_configuration_only_says_your_code_was_not_run():
    r = audit(RopeManifest(head_dim=16, max_position_embeddings=64), offsets=range(1, 9), target_length=512)
    state, text = rows(r)["A"]
    assert r.gate_a_on == "reference" and r.status()["A"] == "pass"  # the outcome still counts it
    assert state == "checked" and "the configuration's own operator; your code was not run" in text
    assert "the operator is what it claims" not in r.verdict and "your code was not run" in r.verdict
    assert "color:#1a7f37;font-weight:bold'>checked" not in r._repr_html_()
    assert "Gate A  checked" in str(r)


def test_correct_implementation_prints_a_pass():
    r = audit(entry("half").impl, manifest=declared("half"), **KW)
    assert rows(r)["A"][0] == "pass" and "on your implementation" in rows(r)["A"][1]
    assert rows(r)["B"][0] == r.status()["B"]  # nothing failed before B: its own state
    assert "Gates A and B pass" in r.verdict


def test_restart_row_shows_no_green_gate_b():
    r = audit(entry("query-restart").impl, manifest=declared("query-restart"), **KW)
    assert r.first_failure == "A" and r.status()["B"] == "pass"  # B was measured and passed
    state, text = rows(r)["B"]
    assert state == "moot" and text.startswith("measured pass, not conclusive after Gate A failed")
    assert "Gate B  moot" in str(r) and "Gate B</b></td><td style='color:#1a7f37" not in r._repr_html_()


@pytest.mark.parametrize("c_passed, expected", [(True, "moot"), (False, "FAIL")])
def test_gate_c_after_a_gate_b_failure(c_passed, expected):
    r = audit(RopeManifest(head_dim=8, max_position_embeddings=4096), offsets=[5, 6288], target_length=8192)
    assert r.first_failure == "B"
    checks = {"offset accuracy at target (min)": {"value": 1.0 if c_passed else 0.4, "threshold": 0.9,
                                                  "passed": c_passed}}
    r.gate_c = GateCVerdict(c_passed, checks, {}, {})
    assert rows(r)["C"][0] == expected and rows(r)["B"][0] == "FAIL"
