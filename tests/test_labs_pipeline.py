"""The phase-error-by-pipeline lab's front end (ropegeo/book/static/lab_pipeline.js, in Node) against ropegeo.

Each curve is compared with :func:`ropegeo.book.widgets.pipeline_lab.reference`
(:func:`ropegeo.precision.phase_error` / ``max_phase_error`` of uniform float32, deployed bfloat16,
buffer-cast bfloat16 and uniform bfloat16). The angles and the bfloat16 tables round exactly as
ropegeo's, so the three curves with a bfloat16 table agree to float64 rounding; the float32 curve
agrees within one float32 ulp of cos/sin, because numpy's vectorised float32 cos/sin is an
approximation (see tests/test_js_core.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from jsrun import call_js
from ropegeo.frequencies import frequencies
from ropegeo.precision import phase_error
from ropegeo.book.widgets._lab import esm_source
from ropegeo.book.widgets.pipeline_lab import PIPELINES, PipelineLab, curve_positions, reference

STATES = [dict(base=1e4, head_dim=128, pair=8, worst=False, max_position=65536),
          dict(base=1e4, head_dim=128, pair=0, worst=True, max_position=60000),
          dict(base=5e5, head_dim=64, pair=31, worst=False, max_position=10_000_000),
          dict(base=100.0, head_dim=16, pair=3, worst=True, max_position=100),
          dict(base=1e7, head_dim=256, pair=100, worst=False, max_position=1_000_000)]
#: One float32 ulp of cos/sin (below 1): the float32 curve's allowance; the others agree to 1e-9.
TOL = {"float32": 2.0**-23, "deployed": 1e-9, "cast": 1e-9, "bfloat16": 1e-9}


def assert_matches(r):
    """A page result against ropegeo's reference for its own state, at the page's positions."""
    st = r["state"]
    assert r["positions"] == curve_positions(st["max_position"]).tolist(), st
    ref = reference(st, at=r["positions"])
    assert set(r["errors"]) == set(PIPELINES)
    for name, tol in TOL.items():
        got, want = np.asarray(r["errors"][name], dtype=float), ref[name]
        bad = np.flatnonzero(~(np.abs(got - want) <= tol))
        if name != "float32":
            # numpy's float32 cos/sin may be one float32 ulp from the correctly rounded value that the
            # page rounds; where that ulp straddles a bfloat16 rounding boundary the table entry moves
            # by one bfloat16 step (2^-8 of a value below 1): allowed at a few positions, never more
            step = np.abs(got - want) <= 2.0**-8 + 1e-9
            bad = bad[~step[bad]] if bad.size <= max(1, len(got) // 100) else bad
        assert bad.size == 0, (st, name, [(r["positions"][k], got[k], want[k]) for k in bad[:3]])
        assert r["at_max"][name] == r["errors"][name][-1]


def test_front_end_matches_phase_error_of_every_pipeline():
    got = call_js(esm_source("lab_pipeline.js"), [("compute", [s]) for s in STATES])
    for st, r in zip(STATES, got):
        assert r["state"] == st
        assert_matches(r)


def test_the_curves_order_as_chapter_5_says():
    """At position 4,000 (width 128, base 10,000): float32 < deployed bfloat16 table < cast buffer and
    all-bfloat16 for the largest error over the pairs; for pair 0 (theta = 1, a bfloat16 number) the
    cast buffer changes nothing, so it equals the deployed table exactly."""
    worst, first = call_js(esm_source("lab_pipeline.js"), [
        ("compute", [dict(base=1e4, head_dim=128, pair=0, worst=True, max_position=4000)]),
        ("compute", [dict(base=1e4, head_dim=128, pair=0, worst=False, max_position=4000)])])
    e = worst["at_max"]
    assert e["float32"] < 1e-3 < e["deployed"] < 0.01 < 0.1 < e["cast"] and e["bfloat16"] > 0.1
    assert first["errors"]["cast"] == first["errors"]["deployed"]


def test_controls_are_held_in_range():
    """A pair beyond the head width is held at the last pair, a fractional largest position is
    rounded: every state draws ropegeo's numbers."""
    got = call_js(esm_source("lab_pipeline.js"), [
        ("compute", [dict(base=1e4, head_dim=16, pair=60, worst=False, max_position=1023.29)]),
        ("compute", [dict(base=1e9, head_dim=100, pair=-4, worst=0, max_position=1e12)])])
    assert got[0]["state"] == dict(base=1e4, head_dim=16, pair=7, worst=False, max_position=1023)
    assert got[1]["state"] == dict(base=1e7, head_dim=128, pair=0, worst=False, max_position=10_000_000)
    for r in got:
        assert_matches(r)


def test_reference_is_phase_error():
    r = reference(dict(base=1e4, head_dim=32, pair=5, worst=False, max_position=1000))
    theta = frequencies(32, 1e4)  # the lab's bank, bit for bit (a pow written out here may differ by an ulp)
    for name, pipe in PIPELINES.items():
        np.testing.assert_array_equal(r[name], phase_error(r["positions"].astype(float), theta, pipe)[:, 5])
    assert r["positions"][0] == 1 and r["positions"][-1] == 1000 and np.all(np.diff(r["positions"]) > 0)


def test_widget_state_is_validated():
    lab = PipelineLab(head_dim=16, pair=3)
    assert set(lab.numbers) == {"positions", *PIPELINES}
    lab.pair = 60  # allowed by the trait (up to 127): held at the last pair of the head
    assert np.array_equal(lab.numbers["float32"], reference(dict(lab.state(), pair=7))["float32"])
    for name, value in [("base", 10.0), ("head_dim", 48), ("pair", 128), ("max_position", 10), ("worst", "yes")]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)
    with pytest.raises(ValueError, match="pair"):
        reference(dict(base=1e4, head_dim=16, pair=8, worst=False, max_position=1000))


def test_readout_names_the_legends_curves_and_only_the_verticals_drawn():
    """The readout's names are the legend's; the dashed verticals it describes are those inside the
    axis (none at 100, bfloat16's at 4,000, both at 10^7); the log slider reaches 4,000 and comes
    back to 60,000 (two significant digits), and its number field takes any value."""
    src = esm_source("lab_pipeline.js")
    states = [dict(base=1e4, head_dim=128, pair=8, worst=False, max_position=m) for m in (100, 4000, 10_000_000)]
    results = call_js(src, [("compute", [s]) for s in states])
    lines = call_js(src, [("readout", [r]) for r in results])
    for r, (first, second) in zip(results, lines):
        assert "deployed" not in first and "cast " not in first.split("cast by")[0]
        assert "bfloat16 cos/sin, float32 angles (loaded in bfloat16)" in first
        m = r["state"]["max_position"]
        assert ("from 256 on (bfloat16)" in second) == (m >= 256)
        assert ("from 16,777,216 on (float32)" in second) == (m >= 2**24)
        assert ("no vertical drawn" in second) == (m < 256)
    assert call_js(src, [("logValue", [3.6, 2, 7]), ("logValue", [4.78, 2, 7]), ("logValue", [7, 2, 7])]) == [4000, 60000, 10_000_000]
    # an arrow key's step that rounds back to the value shown moves to the next value instead
    assert call_js(src, [("nextLogValue", [10_000, 1, 2, 7]), ("nextLogValue", [10_000, -1, 2, 7]),
                         ("nextLogValue", [99, 1, 2, 7]), ("nextLogValue", [10_000_000, 1, 2, 7])]) == [11_000, 9_900, 100, 10_000_000]
