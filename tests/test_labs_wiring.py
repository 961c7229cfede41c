"""The wiring lab's front end (ropegeo/book/static/lab_wiring.js, in Node) against apply_rope."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from jsrun import call_js
from ropegeo.book.widgets._lab import esm_source
from ropegeo.book.widgets.wiring_lab import WiringLab, reference

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
    dict(BASE, query_pairing="half", dtype="float32"),
    dict(BASE, query_pairing="half", dtype="bfloat16"),
    dict(BASE, query_pairing="half", dtype="float16"),
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
        assert r["judged_shifts"] == ref["judged_shifts"]
        assert (r["shift_status"], r["scores_status"]) == (ref["shift_status"], ref["scores_status"]), st
        assert (r["layout_status"], r["layout_mismatches"]) == (ref["layout_status"], ref["layout_mismatches"]), st
        assert r["shift_pass"] is (r["shift_status"] == "pass") and r["scores_pass"] is (r["scores_status"] == "pass")
        verdicts.append((r["shift_pass"], r["scores_pass"]))
    # the lessons: shifts and resets are harmless, a wrong cache offset gives wrong scores with the
    # law intact, a mixed pairing breaks the law itself
    assert verdicts[0] == verdicts[1] == verdicts[2] == verdicts[4] == (True, True)
    assert verdicts[5] == (True, False)
    assert verdicts[6][0] is False


def test_a_mixed_pairing_in_half_precision_is_inconclusive_never_green():
    """Query paired "half" against keys declared interleaved: float32 shows the law broken. In
    bfloat16 both tolerances (about 5e2 and 4 |q||k|) pass the largest change a score can show
    (2 |q||k|): neither verdict can fail, so both say "inconclusive" (they said "holds" and "match").
    float16 keeps the shifts 1, 5 and 17 below the ceiling."""
    lab = WiringLab()
    mixed = dict(BASE, query_pairing="half")
    states = [dict(mixed, dtype=dt) for dt in ("float32", "bfloat16", "float16")]
    got = call_js(esm_source("lab_wiring.js"), [("compute", [s, lab.q, lab.k]) for s in states])
    for st, r in zip(states, got):
        ref = reference(st, lab.q, lab.k)
        assert (r["shift_status"], r["scores_status"]) == (ref["shift_status"], ref["scores_status"])
    f32, bf16, f16 = (reference(s, lab.q, lab.k) for s in states)
    assert f32["shift_status"] == "fail"
    # independent: bfloat16 keeps 8 significant bits; Gate A's tolerance 16 u (sqrt(d) + 2 p theta_max)
    u = 2.0**-8
    assert bf16["tolerance_scores"] == pytest.approx(16 * u * (4 + 2 * 31))
    assert bf16["tolerance_scores"] > 2 and bf16["tolerance_shift"] > 2
    assert (bf16["shift_status"], bf16["scores_status"]) == ("inconclusive", "inconclusive")
    assert not got[1]["shift_pass"] and not got[1]["scores_pass"]
    # float16 keeps the shifts whose tolerance stays below the ceiling (4,096 is past it)
    assert f16["judged_shifts"] == [1, 5, 17] and f16["tolerance_shift"] < 2
    assert reference(dict(BASE, dtype="float16"), lab.q, lab.k)["shift_status"] == "pass"


def test_a_mixed_pairing_fails_the_layout_reading_in_every_dtype():
    """The tolerances of float16 (0.5 to 0.8 |q||k|) are too coarse to see a mixed pairing: the shift
    and score checks pass. The layout reading is exact (zeros stay zeros), so the lab shows the
    mixed pairing as a failure in every dtype, as Gate A's layout check does, and a correct wiring
    as a pass in every dtype."""
    lab = WiringLab()
    states = [dict(BASE, query_pairing=qp, dtype=dt, head_dim=d, base=b) for qp in ("interleaved", "half")
              for dt in ("float64", "float32", "float16", "bfloat16") for d, b in ((16, 1e4), (64, 1e7))]
    got = call_js(esm_source("lab_wiring.js"), [("compute", [s, lab.q, lab.k]) for s in states])
    for st, r in zip(states, got):
        ref = reference(st, lab.q, lab.k)
        assert (r["layout_status"], r["layout_mismatches"]) == (ref["layout_status"], ref["layout_mismatches"]), st
        # independent: interleaved pairs (2i, 2i+1), half pairs (i, i + d/2); the two agree on no coordinate
        # of a head of 4 or more
        assert ref["layout_mismatches"] == (st["head_dim"] if st["query_pairing"] == "half" else 0), st
    f16 = reference(dict(BASE, query_pairing="half", dtype="float16"), lab.q, lab.k)
    assert (f16["shift_status"], f16["scores_status"], f16["layout_status"]) == ("pass", "pass", "fail")


def test_widget_state_is_validated():
    lab = WiringLab(policy="kv-cache", cache_offset=40)
    assert lab.numbers["positions"][-1] == 40
    for name, value in [("policy", "random"), ("pad", -1), ("cache_offset", 10**5), ("dtype", "int8"), ("head_dim", 5)]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)


def test_position_words_match_the_ids_ropegeo_gives():
    """The readout's ids are the keys' (tokens 0..30) and the query's (token 31), as ropegeo gives
    them; every policy says why (packed-reset: the same ids as contiguous, by design)."""
    from ropegeo.book.widgets.wiring_lab import positions_text

    lab = WiringLab()
    src = esm_source("lab_wiring.js")
    got = call_js(src, [("compute", [s, lab.q, lab.k]) for s in STATES])
    texts = call_js(src, [("positionsText", [r["positions"], r["state"]["policy"]]) for r in got])
    for st, r, text in zip(STATES, got, texts):
        want = positions_text(reference(st, lab.q, lab.k)["positions"])
        assert text.startswith(want + f" ({st['policy']}: "), (text, want)
    assert "the same ids as contiguous" in texts[STATES.index(dict(BASE, policy="packed-reset", pad=4000, dtype="float16"))]
    assert texts[0].startswith("position ids: keys 0..30 get 0..30, the query (token 31) gets 31")
    assert call_js(src, [("withUnit", [1, "tokens"]), ("withUnit", [17, "tokens"])]) == ["1 token", "17 tokens"]
