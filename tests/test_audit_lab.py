"""The audit lab: its front end (ropegeo/book/static/lab_audit.js, run in Node) against ropegeo's
geometry_audit and gate_b, for every shipped configuration and each kind of layer of the models
whose layers differ, and a few custom banks."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets
from jsrun import call_js

from ropegeo.book.widgets._lab import esm_source
from ropegeo.book.widgets.audit_lab import AuditLab, audit_lab, idle_rule, law_normals, records, reference, set_text
from ropegeo.models.manifest import load_model, shipped_models

DEFAULT = dict(model="custom", layer_type="default", target_length=512, dtype="config", head_dim=16, base=10_000.0,
               train_length=64, rule="none")


def _states():
    recs = records()
    out = []
    for name, rec in recs.items():
        out.append(dict(DEFAULT, model=name, target_length=rec["target_length"]))
        out.append(dict(DEFAULT, model=name, target_length=2 * rec["train_length"] + 1, dtype="bfloat16"))
        out.append(dict(DEFAULT, model=name, target_length=3 * rec["train_length"], dtype="float64"))
        for kind in rec["layer_types"]:
            out.append(dict(DEFAULT, model=name, layer_type=kind, target_length=rec["target_length"]))
            out.append(dict(DEFAULT, model=name, layer_type=kind, target_length=rec["train_length"], dtype="float64"))
    out += [dict(DEFAULT), dict(DEFAULT, rule="yarn", dtype="float64"), dict(DEFAULT, rule="dynamic", dtype="float16"),
            dict(DEFAULT, rule="llama3", head_dim=64, base=5e5, train_length=4096, target_length=65536, dtype="float16"),
            dict(DEFAULT, rule="linear", target_length=100), dict(DEFAULT, train_length=4096, target_length=300_000),
            dict(DEFAULT, train_length=100, target_length=40, dtype="float64"),
            # trained beyond the lab's search limit: the capped search moves to 64..limit, and says why
            dict(DEFAULT, train_length=131_072, target_length=262_144, dtype="float64")]
    return out


def page_numbers(states):
    return call_js(esm_source("lab_audit.js"), [("compute", [s, records(), law_normals()]) for s in states])


def _geometry_rows(rows):
    """ropegeo's table rows up to the search note (Gate B follows, in the lab's own table)."""
    rows = [tuple(r) for r in rows]
    return rows[: rows.index(next(r for r in rows if r[0] == "  search range")) + 1]


def assert_matches(r, ref, state):
    a, want, m = r["audit"], ref["audit"], ref["manifest"]
    assert r["state"] == state
    got_m = r["manifest"]
    assert got_m["label"] == m["name"], (got_m, m)
    for key in ("base", "head_dim", "rotary_dim", "pairing", "phase_dtype", "sliding_window", "layer_type",
                "logit_scale", "notes"):
        assert got_m[key] == m[key], key
    for key in ("train_length", "target_length", "slow_pairs", "slow_pairs_target", "pairs_longer_than_train",
                "pairs_longer_than_target", "scaled_pairs", "search_range", "search_note", "pair_count", "dtype"):
        assert a[key] == want[key], (key, a[key], want[key])
    for key in ("attention_factor", "adjacent_similarity", "wavelength_range", "angular_step_ratio", "law_tolerance"):
        np.testing.assert_allclose(a[key], want[key], rtol=1e-9, err_msg=key)
    # rounding noise of float64 (about 1e-12) on both sides: the law holds, within the tolerance
    assert abs(a["relative_law_error"] - want["relative_law_error"]) <= 1e-9
    assert a["relative_law_error"] <= a["law_tolerance"]
    assert [t["offset"] for t in a["top_offsets"]] == [t["offset"] for t in want["top_offsets"]]
    np.testing.assert_allclose([t["similarity"] for t in a["top_offsets"]],
                               [t["similarity"] for t in want["top_offsets"]], atol=1e-9)
    # the rows read as ropegeo's table: same labels ("scaled" / "unscaled"), same text; the
    # relative-law error is rounding noise, so only its verdict and threshold are compared
    got_rows, want_rows = [tuple(x) for x in a["rows"]], _geometry_rows(ref["rows"])
    assert [x[0] for x in got_rows] == [x[0] for x in want_rows]
    for (label, g), (_, w) in zip(got_rows, want_rows):
        if label.startswith("relative-law error"):
            g, w = g.split(": ", 1)[1], w.split(": ", 1)[1]
        assert g == w, (label, g, w)
    gate = a["gate_b"]
    if ref["gate_b"] is None:
        assert not gate["passed"] and any(s.get("overflow") for s in gate["sets"])
        return
    for key in ("train_length", "target_length", "window", "notes"):
        assert gate[key] == ref["gate_b"][key], key
    # one rule: the page's threshold is GateBRule()'s, D_train(1) / sqrt 2 of the unscaled bank
    threshold = ref["gate_b"]["threshold"]
    assert gate["threshold"] == pytest.approx(threshold, rel=1e-12)
    tol = {"float64": 1e-9, "float32": 2e-6, "float16": 2e-3, "bfloat16": 2e-2}
    assert len(gate["sets"]) == len(ref["gate_b"]["sets"])
    for got, exp in zip(gate["sets"], ref["gate_b"]["sets"]):
        for key in ("name", "n_offsets", "origin", "origin_rule", "dtype", "frequencies"):
            assert got[key] == exp[key], (key, got[key], exp[key])
        assert abs(got["margin"] - exp["margin"]) <= tol[exp["dtype"]], (got, exp)
        if abs(exp["margin"] - threshold) > tol[exp["dtype"]]:
            assert got["status"] == exp["status"]
        if exp["dtype"] == "float64":
            assert got["pair"] == exp["pair"] and got["confusable"] == exp["confusable"]
            assert got["tied"] == exp["tied"]
            assert got["text"] == set_text(exp, threshold, state["target_length"], idle_rule(state))
    assert gate["status"] == ref["gate_b"]["status"] or any(
        abs(s["margin"] - threshold) <= 2e-2 for s in ref["gate_b"]["sets"])


def test_front_end_matches_geometry_audit_and_gate_b():
    states = _states()
    for st, r in zip(states, page_numbers(states)):
        assert_matches(r, reference(st), st)


def test_windows_search_ranges_and_layer_kinds_reach_the_page():
    """The cases the audit's rules were written for, read on the page: Mistral's window stops the
    search and the distant set; Gemma 3's sliding layers have their own base and window; a target
    no longer than training searches from 64; the lab's search limit caps a long context."""
    states = [dict(DEFAULT, model="mistral-7b", target_length=32768),
              dict(DEFAULT, model="gemma-3-1b-it", layer_type="sliding_attention", target_length=32768),
              dict(DEFAULT, train_length=4096, target_length=2048),
              dict(DEFAULT, model="llama-3.1-8b", target_length=131072),
              dict(DEFAULT, model="llama-2-7b", layer_type="sliding_attention", target_length=4096)]
    mistral, gemma, short, llama, llama2 = page_numbers(states)
    assert mistral["audit"]["search_range"] == [64, 4095]
    assert [s["name"] for s in mistral["audit"]["gate_b"]["sets"]] == ["local 1..64", "distant 64..4,095"]
    assert gemma["manifest"]["base"] == 10_000.0 and gemma["manifest"]["sliding_window"] == 512
    assert gemma["audit"]["search_range"] == [64, 511] and set(gemma["kinds"]) == {"sliding_attention", "full_attention"}
    assert short["audit"]["search_range"] == [64, 2048]
    assert llama["audit"]["search_range"] == [8192, 100_000] and "capped at search_limit 100,000" in llama["audit"]["search_note"]
    long_train = page_numbers([dict(DEFAULT, train_length=131_072, target_length=262_144)])[0]
    assert long_train["audit"]["search_range"] == [64, 100_000]
    assert "lie past the cap" in long_train["audit"]["search_note"]
    # a kind the model does not have: the page reads the record's default and says so in its state
    assert llama2["state"]["layer_type"] == "default" and llama2["kinds"] == []


def test_python_style_number_formats():
    xs = [0.1, 0.12345678, 1.0, 6.283185307, 54410.123, 1234567.0, 2.5e-5, 0.00012345, 1e21, 0.999999, 99999.95, 5.0]
    calls = [("fmtG", [x, d, g]) for x in xs for d in (4, 6) for g in (False, True)]
    want = [format(x, f"{',' if g else ''}.{d}g") for x in xs for d in (4, 6) for g in (False, True)]
    assert call_js(esm_source("lab_audit.js"), calls) == want


def test_records_carry_every_shipped_model_its_layer_kinds_and_real_longrope_lists():
    recs = records()
    assert list(recs) == shipped_models()
    phi = recs["phi-3-mini-128k-instruct"]["scaling"]
    assert phi["rule"] == "longrope" and len(phi["long_factor"]) == 48 and len(set(phi["long_factor"])) > 1
    for name, rec in recs.items():
        for kind, fields in {"default": rec, **rec["layer_types"]}.items():
            m = load_model(name, layer_type=None if kind == "default" else kind)
            assert fields["label"] == m.name and fields["sliding_window"] == m.sliding_window
            assert fields["logit_scale"] == m.logit_scale and fields["layer_type"] == m.layer_type
    assert set(recs["gpt-oss-20b"]["layer_types"]) == {"full_attention", "sliding_attention"}
    assert recs["deepseek-v3"]["logit_scale"] > 1 and recs["llama-2-7b"]["layer_types"] == {}


def test_widget_state_is_validated():
    lab = audit_lab(head_dim=16, base=10_000.0, train_length=64, target_length=512, rule="none")
    assert lab.state() == DEFAULT and set(lab.records) == set(shipped_models())
    assert audit_lab("llama-3.1-8b").target_length == 131_072
    assert lab.numbers["audit"]["train_length"] == 64
    for name, value in [("model", "gpt-5"), ("target_length", 2), ("dtype", "float8"), ("head_dim", 7),
                        ("rule", "longrope"), ("layer_type", "linear_attention")]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)
    with pytest.raises(ValueError, match="unknown control"):
        audit_lab(heads=3)
    assert isinstance(lab, AuditLab) and "export default" in lab._esm


def test_readout_words_say_what_the_audit_did():
    """A custom rule the target does not reach is named as not applied (the manifest and each set),
    never read as "none"; each set says the positions it covers; a count is singular for one."""
    idle = dict(DEFAULT, rule="linear", train_length=4096, target_length=3)
    applied = dict(DEFAULT, rule="linear", train_length=64, target_length=512)
    src = esm_source("lab_audit.js")
    r_idle, r_applied = page_numbers([idle, applied])
    assert idle_rule(idle) == "linear" and idle_rule(applied) is None
    rows = dict(call_js(src, [("manifestRows", [r_idle["manifest"], 3])])[0])
    assert rows["extension rule"].startswith("linear, not applied: the target (3) does not exceed training (4,096)")
    assert all("linear not applied" in s["text"] and "(no rule)" not in s["text"] for s in r_idle["audit"]["gate_b"]["sets"])
    assert dict(call_js(src, [("manifestRows", [r_applied["manifest"], 512])])[0])["extension rule"] == "linear"
    # positions: from the origin to the last position of the target context, as ropegeo places the set
    llama = page_numbers([dict(DEFAULT, model="llama-3.1-8b", target_length=131_072)])[0]
    ref = reference(llama["state"])["gate_b"]
    for got, exp in zip(llama["audit"]["gate_b"]["sets"], ref["sets"]):
        assert f"positions {exp['origin']:,.0f}..131,071 (its largest offset ends" in got["text"]
    assert len(r_idle["audit"]["gate_b"]["sets"]) == 1  # target 3: one set, "1 default offset set"
    assert call_js(src, [("plural", [1, "default offset set"]), ("plural", [2, "default offset set"])]) == [
        "1 default offset set", "2 default offset sets"]


def test_numbers_read_as_words_a_reader_expects():
    """A token count is printed in full ("16,777,216 tokens", never "1.678×10^+7 tokens"); other large
    or small numbers as powers of ten without a "+"."""
    src = esm_source("lab_audit.js")
    got = call_js(src, [("withUnit", [16_777_216, "tokens"]), ("fmtNum", [1.5e7 + 0.5]), ("fmtNum", [3.2e-4, 2]),
                        ("withUnit", [1, "tokens"])])
    assert got == ["16,777,216 tokens", "1.500×10^7", "3.2×10^-4", "1 token"]
