"""The geometry audit of a configuration, as a newcomer reads it: one Gate B for `audit` and
`report`, a search range that never collapses, rows that say which frequencies they use, and every
number beside its verdict and threshold."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ropegeo.cli import main
from ropegeo.gates.procedure import audit, geometry_audit
from ropegeo.gates.b.rule import default_offsets
from ropegeo.models.manifest import load_model, shipped_models


@pytest.mark.parametrize("name", shipped_models())
def test_audit_and_report_give_the_same_margins(name):
    g = geometry_audit(load_model(name)).gate_b
    r = audit(name).gate_b
    assert [(s["name"], s["margin"], s["origin"], s["dtype"]) for s in g.sets] == \
        [(s["name"], s["margin"], s["origin"], s["dtype"]) for s in r.sets]


@pytest.mark.parametrize("name", shipped_models())
def test_search_range_is_never_a_single_point(name):
    a = geometry_audit(load_model(name))
    s0, s1 = a.search_range
    assert s0 < s1 and a.search_note
    hits = [h["offset"] for h in a.top_offsets]
    assert all(s0 <= h <= s1 for h in hits)


def test_no_extension_searches_the_distant_offsets_and_says_so():
    a = geometry_audit(load_model("llama-2-7b"))  # trained and served at 4,096
    assert a.search_range == (64, 4096) and "no offset beyond training" in a.search_note
    theta = 10_000.0 ** (-np.arange(64) / 64)
    offs = np.arange(64, 4097)
    assert a.distant_offset == offs[np.argmax(np.cos(np.outer(offs, theta)).mean(axis=1))]  # brute force


def test_a_capped_search_says_why():
    a = geometry_audit(load_model("llama-3.1-8b"), search_limit=50_000)
    assert a.search_range == (8192, 50_000) and "capped at search_limit 50,000" in a.search_note
    full = geometry_audit(load_model("llama-3.1-8b"))
    assert full.search_range == (8192, 131_072)  # by default the search reaches the target


def test_a_search_capped_within_training_says_the_context_reaches_beyond_it():
    a = geometry_audit(load_model("llama-3.1-8b"), search_limit=5000)  # trained at 8,192, served at 131,072
    assert a.search_range == (64, 5000)
    assert "capped at search_limit 5,000 (the context reaches 131,071)" in a.search_note
    assert "lie past the cap" in a.search_note and "no offset beyond training" not in a.search_note
    short = geometry_audit(load_model("llama-2-7b"), search_limit=3000)  # served at its training length
    assert short.search_range == (64, 3000) and "no offset beyond training (4,096) is seen" in short.search_note


def test_mistral_window_stops_gate_b_and_the_search():
    a = geometry_audit(load_model("mistral-7b"))
    names = [s["name"] for s in a.gate_b.sets]
    assert names == ["local 1..64", "distant 64..4,095"]
    assert a.search_range[1] == 4095 and "attention window (4,096)" in a.search_note
    assert any("attention window" in n for n in a.gate_b.notes)
    assert "attention window" in a.table()
    # the offsets of the distant set, written out from the rule: 48 log-spaced from 64 to 4,095
    np.testing.assert_array_equal(default_offsets(32_768, 4096)["distant 64..4,095"],
                                  np.unique(np.round(np.geomspace(64, 4095, 48))))


def test_gpt_oss_sliding_layers_see_no_distant_set():
    a = geometry_audit(load_model("gpt-oss-20b", layer_type="sliding_attention"))
    assert [s["name"] for s in a.gate_b.sets] == ["local 1..64"]  # a 128-token window: no distant offsets
    assert a.search_range[1] == 127


def test_rows_name_their_frequencies_origin_verdict_and_threshold():
    a = geometry_audit(load_model("llama-3.1-8b"))
    text = a.table()
    for word in ("unscaled", "scaled", "origin", "threshold", "pass"):
        assert word in text
    for s in a.gate_b.sets:
        assert s["origin"] == 131_072 - 1 - max(default_offsets(131_072)[s["name"]])
        assert s["frequencies"] == "scaled at target"
    law = next(line for line in text.splitlines() if line.startswith("relative-law error"))
    assert "pass" in law and "threshold" in law
    assert a.relative_law_error <= a.law_tolerance


def test_relative_law_tolerance_written_out():
    a = geometry_audit(load_model("llama-2-7b"))
    # 16 eps(float64) x head width x (1 + largest position tested, 4,094)
    assert a.law_tolerance == pytest.approx(16 * 2.0 ** -52 * 128 * (1 + 4094), rel=1e-15)


def test_identity_verdict_uses_gate_b_threshold():
    # head dim 8: offset 6,283 nearly returns to the identity (2 pi x 1000 = 6283.19)
    a = geometry_audit(head_dim=8, train_length=4096, target_length=7000)
    assert a.distant_offset == 6283
    line = next(line for line in a.table().splitlines() if "identity-like offsets" in line)
    assert "confusable with 0" in line and f"{1 - 0.1 ** 2 / 2:.4g}" in line


def test_report_rows_state_origin_and_threshold(capsys):
    assert main(["report", "mistral-7b"]) == 0
    out = capsys.readouterr().out
    b = next(line for line in out.splitlines() if "Gate B" in line)
    assert "origin" in b and "threshold 0.1" in b and "attention window" in b


def test_audit_cli_config_layer_type_and_conflicts(capsys):
    assert main(["audit", "--config", "gemma-3-1b-it", "--layer-type", "sliding_attention", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["manifest"]["sliding_window"] == 512 and out["base"] == 10_000.0
    assert main(["audit", "--config", "llama-2-7b", "--head-dim", "64"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--head-dim" in err and "--config" in err


def test_deepseek_audit_uses_the_rotary_head(capsys):
    assert main(["audit", "--config", "deepseek-v3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["head_dim"] == 64 and out["rotary_dim"] == 64 and len(out["theta"]) == 32
    assert out["manifest"]["logit_scale"] == pytest.approx((0.1 * math.log(40) + 1) ** 2, rel=1e-15)


def test_report_says_why_its_margins_differ_from_audit():
    assert not audit("llama-2-7b").gate_b.notes
    own = audit("llama-2-7b", offsets=range(1, 17)).gate_b
    assert any("offsets chosen here" in n and "audit --config" in n for n in own.notes)
    longer = audit("llama-2-7b", target_length=8192).gate_b
    assert any("target_length chosen here" in n for n in longer.notes)


def test_defaults_filled_in_by_audit_are_not_called_the_callers_choice():
    from ropegeo.models.manifest import RopeManifest

    # no declared length: audit fills in 4,096 -> 32,768 itself; no "chosen here" note
    assert not audit(RopeManifest(head_dim=16)).gate_b.notes


def test_doctest_examples_run():
    import doctest

    import ropegeo.gates.procedure
    import ropegeo.models.manifest

    for mod in (ropegeo.models.manifest, ropegeo.gates.procedure):
        result = doctest.testmod(mod)
        assert result.attempted > 0 and result.failed == 0, mod.__name__
