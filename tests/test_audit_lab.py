"""The audit lab: its front end (ropegeo/static/lab_audit.js, run in Node) against ropegeo's
config_audit and Gate B, for every shipped configuration and a few custom banks."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from jsrun import call_js
from ropegeo.manifest import shipped_models
from ropegeo.widgets._lab import esm_source
from ropegeo.widgets.audit_lab import AuditLab, audit_lab, law_normals, records, reference

DEFAULT = dict(model="custom", target_length=512, dtype="config", head_dim=16, base=10_000.0, train_length=64, rule="none")


def _states():
    recs = records()
    out = []
    for name, rec in recs.items():
        out.append(dict(DEFAULT, model=name, target_length=rec["target_length"]))
        out.append(dict(DEFAULT, model=name, target_length=2 * rec["train_length"] + 1, dtype="bfloat16"))
    out += [dict(DEFAULT), dict(DEFAULT, rule="yarn", dtype="float64"), dict(DEFAULT, rule="dynamic", dtype="float16"),
            dict(DEFAULT, rule="llama3", head_dim=64, base=5e5, train_length=4096, target_length=65536, dtype="float16"),
            dict(DEFAULT, rule="linear", target_length=100)]
    return out


def page_numbers(states):
    return call_js(esm_source("lab_audit.js"), [("compute", [s, records(), law_normals()]) for s in states])


def assert_matches(r, ref, state):
    a, want = r["audit"], ref["audit"]
    assert r["state"] == state
    assert a["train_length"] == want["train_length"] and a["target_length"] == want["target_length"]
    for key in ("pairs_longer_than_train", "pairs_longer_than_target", "slow_pairs_train", "slow_pairs_target",
                "scaled_pairs", "search_range"):
        assert a[key] == want[key], key
    for key in ("attention_factor", "adjacent_similarity", "wavelength_range"):
        np.testing.assert_allclose(a[key], want[key], rtol=1e-9, err_msg=key)
    # rounding noise of float64 (about 1e-14) on both sides: the law holds
    if a["relative_law_error"] is not None:
        assert abs(a["relative_law_error"] - want["relative_law_error"]) <= 1e-9 and a["relative_law_error"] < 1e-9
    assert [t["offset"] for t in a["top_offsets"]] == [t["offset"] for t in want["top_offsets"]]
    np.testing.assert_allclose([t["similarity"] for t in a["top_offsets"]],
                               [t["similarity"] for t in want["top_offsets"]], atol=1e-9)
    if ref["gate_b"] is None:
        assert not a["gate_b"]["passed"] and any(s.get("overflow") for s in a["gate_b"]["sets"])
        return
    tol = {"float64": 1e-9, "float32": 2e-6, "float16": 2e-3, "bfloat16": 2e-2}
    for got, exp in zip(a["gate_b"]["sets"], ref["gate_b"]["sets"]):
        assert got["name"] == exp["name"] and got["n_offsets"] == exp["n_offsets"] and got["origin"] == exp["origin"]
        assert abs(got["margin"] - exp["margin"]) <= tol[exp["dtype"]], (got, exp)
        if abs(exp["margin"] - 0.1) > tol[exp["dtype"]]:
            assert got["passed"] == exp["passed"]
    assert a["gate_b"]["passed"] == ref["gate_b"]["passed"] or any(
        abs(s["margin"] - 0.1) <= 2e-2 for s in ref["gate_b"]["sets"])


def test_front_end_matches_config_audit_and_gate_b():
    states = _states()
    for st, r in zip(states, page_numbers(states)):
        assert_matches(r, reference(st), st)


def test_records_carry_every_shipped_model_and_real_longrope_lists():
    recs = records()
    assert list(recs) == shipped_models()
    phi = recs["phi-3-mini-128k-instruct"]["scaling"]
    assert phi["rule"] == "longrope" and len(phi["long_factor"]) == 48 and len(set(phi["long_factor"])) > 1


def test_widget_state_is_validated():
    lab = audit_lab(head_dim=16, base=10_000.0, train_length=64, target_length=512, rule="none")
    assert lab.state() == DEFAULT and set(lab.records) == set(shipped_models())
    assert audit_lab("llama-3.1-8b").target_length == 131_072
    assert lab.numbers["audit"]["train_length"] == 64
    for name, value in [("model", "gpt-5"), ("target_length", 2), ("dtype", "float8"), ("head_dim", 7), ("rule", "longrope")]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)
    with pytest.raises(ValueError, match="unknown control"):
        audit_lab(heads=3)
    assert isinstance(lab, AuditLab) and "export default" in lab._esm
