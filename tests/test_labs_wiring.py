"""The wiring lab's front end (ropegeo/static/lab_wiring.js, in Node) against apply_rope."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from jsrun import call_js
from ropegeo.widgets._lab import esm_source
from ropegeo.widgets.wiring_lab import WiringLab, reference

BASE = dict(head_dim=16, base=1e4, pairing="interleaved", query_pairing="interleaved", policy="contiguous",
            pad=0, cache_offset=31, dtype="float32")
STATES = [
    dict(BASE),
    dict(BASE, dtype="float64"),
    dict(BASE, policy="left-padded", pad=300),
    dict(BASE, policy="packed-continuous", pad=4000, dtype="bfloat16"),
    dict(BASE, policy="packed-reset", pad=4000, dtype="float16"),
    dict(BASE, policy="kv-cache", cache_offset=30, dtype="float64"),
    dict(BASE, query_pairing="half", dtype="float64"),
    dict(BASE, pairing="half", query_pairing="half", head_dim=64, base=5e5, dtype="bfloat16"),
]


def test_front_end_matches_apply_rope_and_gate_a_verdicts():
    lab = WiringLab()
    got = call_js(esm_source("lab_wiring.js"), [("compute", [s, lab.q, lab.k]) for s in STATES])
    verdicts = []
    for st, r in zip(STATES, got):
        ref = reference(st, lab.q, lab.k)
        assert r["state"] == st and r["positions"] == ref["positions"]
        np.testing.assert_allclose(r["reference"], ref["reference"], atol=1e-9)
        np.testing.assert_allclose(r["scores"], ref["scores"], atol=1e-9)
        for key in ("score_error", "shift_residual"):
            np.testing.assert_allclose(r[key], ref[key], atol=1e-9, err_msg=key)
        np.testing.assert_allclose([r["tolerance_scores"], r["tolerance_shift"]],
                                   [ref["tolerance_scores"], ref["tolerance_shift"]], rtol=1e-12)
        verdicts.append((r["shift_pass"], r["scores_pass"]))
    # the lessons: shifts and resets are harmless, a wrong cache offset gives wrong scores with the
    # law intact, a mixed pairing breaks the law itself
    assert verdicts[0] == verdicts[1] == verdicts[2] == verdicts[4] == (True, True)
    assert verdicts[5] == (True, False)
    assert verdicts[6][0] is False


def test_widget_state_is_validated():
    lab = WiringLab(policy="kv-cache", cache_offset=40)
    assert lab.numbers["positions"][-1] == 40
    for name, value in [("policy", "random"), ("pad", -1), ("cache_offset", 10**5), ("dtype", "int8"), ("head_dim", 5)]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)
