"""The rotation clock's front end (ropegeo/book/static/lab_clock.js, in Node) against apply_rope."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from jsrun import call_js
from ropegeo.book.widgets._lab import esm_source
from ropegeo.book.widgets.clock_lab import ClockLab, reference

STATES = [dict(m=3, n=7, head_dim=4, base=100.0, pairing="interleaved"),
          dict(m=103, n=107, head_dim=4, base=100.0, pairing="interleaved"),
          dict(m=3, n=7, head_dim=8, base=100.0, pairing="half"),
          dict(m=500, n=0, head_dim=16, base=1e4, pairing="half"),
          dict(m=0, n=512, head_dim=2, base=2.0, pairing="interleaved")]


def test_front_end_matches_apply_rope_and_shift_keeps_the_score():
    lab = ClockLab()
    got = call_js(esm_source("lab_clock.js"), [("compute", [s, lab.q, lab.k]) for s in STATES]
                  + [("shift", [STATES[0], 1]), ("shift", [STATES[3], 20])])
    for st, r in zip(STATES, got):
        ref = reference(st, lab.q, lab.k)
        assert r["state"] == st
        np.testing.assert_allclose([r["score"], r["relative"]], [ref["score"], ref["relative"]], atol=1e-12)
        for hand in r["hands"]:
            a, b = hand["pair"]
            np.testing.assert_allclose(hand["q"], ref["q_rotated"][[a, b]], atol=1e-12)
            np.testing.assert_allclose(hand["k"], ref["k_rotated"][[a, b]], atol=1e-12)
    assert abs(got[0]["score"] - got[1]["score"]) < 1e-12  # both shifted by 100: same score
    assert got[-2] == {"m": 4, "n": 8} and got[-1] == {}  # a shift past the end moves neither


def test_widget_state_is_validated():
    lab = ClockLab(m=10, n=20)
    assert lab.numbers["score"] == pytest.approx(reference(lab.state(), lab.q, lab.k)["score"])
    for name, value in [("m", -1), ("n", 513), ("head_dim", 3), ("pairing", "twisted"), ("q", [1.0])]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)
