"""The angle heatmap's front end (ropegeo/book/static/lab_angles.js, run in Node) against ropegeo.

The page's served frequencies, columns, per-pair phases at the training and target lengths, the
angle table's rounding and a sample of the map's cells (phase and change from plain RoPE) are
compared with :func:`ropegeo.book.widgets.angle_lab.reference`, which computes them with
ropegeo.scaling and ropegeo.rotation.phase_angles. Phases are compared on the circle (a phase just
below 2 pi and one just above 0 are neighbours).
"""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from jsrun import call_js
from ropegeo.book.widgets._lab import esm_source
from ropegeo.book.widgets.angle_lab import ANGLE_DTYPES, ANGLE_RULES, COLUMNS, AngleLab, heatmap_positions, reference

STATES = [dict(rule=r, factor=f, head_dim=d, base=b, train_length=L, dtype=dt)
          for r, f, d, b, L, dt in [
              ("yarn", 4.0, 64, 1e4, 2048, "float64"),
              ("none", 1.0, 16, 100.0, 512, "float64"),
              ("linear", 8.0, 128, 5e5, 8192, "float32"),
              ("ntk", 64.0, 256, 1e7, 8192, "bfloat16"),
              ("llama3", 2.5, 32, 1e4, 1024, "bfloat16"),
              ("yarn", 16.5, 128, 1e4, 4096, "bfloat16"),
              ("llama3", 1.0, 64, 5e5, 4096, "float32"),
          ]]


def _cyclic(a, b):
    """Distance on the circle between phases (radians)."""
    d = np.mod(np.asarray(a, dtype=float) - np.asarray(b, dtype=float) + np.pi, 2 * np.pi) - np.pi
    return np.abs(d)


def assert_matches(r):
    """A page result against ropegeo's reference for its own state."""
    st = r["state"]
    ref = reference(st, [(c["column"], c["pair"]) for c in r["cells"]])
    assert r["target_length"] == ref["target_length"] == round(st["factor"] * st["train_length"]), st
    assert r["positions"] == ref["positions"].tolist(), st
    assert r["column_step"] == ref["column_step"] and r["aliased_pairs"] == ref["aliased_pairs"], st
    np.testing.assert_allclose(r["theta"], ref["theta"], rtol=1e-9, err_msg=str(st))
    # angles up to ~ target x theta_0: float64 products of frequencies equal to 1e-15 agree to ~1e-10
    tol = 1e-13 * max(1.0, r["target_length"]) + 1e-12
    assert np.all(_cyclic(r["at_train"], ref["at_train"]) <= tol), st
    assert np.all(_cyclic(r["at_target"], ref["at_target"]) <= tol), st
    assert abs(r["rounding"] - ref["rounding"]) <= tol, (st, r["rounding"], ref["rounding"])
    assert r["cells"], st
    assert np.all(_cyclic([c["phase"] for c in r["cells"]], ref["phase"]) <= tol), st
    assert np.all(_cyclic([c["change"] for c in r["cells"]], ref["change"]) <= tol), st
    assert all(-np.pi <= c["change"] < np.pi and 0 <= c["phase"] < 2 * np.pi for c in r["cells"])


def test_front_end_matches_ropegeo_for_every_rule_and_dtype():
    got = call_js(esm_source("lab_angles.js"), [("compute", [s]) for s in STATES])
    for st, r in zip(STATES, got):
        assert r["state"] == st
        assert len(r["positions"]) == COLUMNS
        assert_matches(r)
    assert {s["rule"] for s in STATES} == set(ANGLE_RULES) and {s["dtype"] for s in STATES} == set(ANGLE_DTYPES)


def test_the_pictures_say_what_the_chapter_says():
    """Independent of the page: plain RoPE in float64 changes nothing; linear interpolation changes
    the slowest pair's phase at the target to its phase at the training length; YaRN leaves the
    fastest pair alone; bfloat16 angles are off by radians at a long target, float32 ones are not."""
    got = call_js(esm_source("lab_angles.js"), [("compute", [s]) for s in [
        dict(rule="none", factor=4.0, head_dim=64, base=1e4, train_length=2048, dtype="float64"),
        dict(rule="linear", factor=4.0, head_dim=64, base=1e4, train_length=2048, dtype="float64"),
        dict(rule="yarn", factor=4.0, head_dim=64, base=1e4, train_length=2048, dtype="float64"),
        dict(rule="none", factor=4.0, head_dim=64, base=1e4, train_length=2048, dtype="bfloat16"),
        dict(rule="none", factor=4.0, head_dim=64, base=1e4, train_length=2048, dtype="float32")]])
    none, lin, yarn, bf16, f32 = got
    assert none["changed_cells"] == 0 and none["rounding"] == 0.0
    theta = 1e4 ** (-62 / 64)
    assert lin["at_target"][-1] == pytest.approx(2048 * theta, rel=1e-12)  # 4 x 2048 x theta / 4
    assert yarn["theta"][0] == 1.0 and yarn["theta"][-1] == pytest.approx(theta / 4, rel=1e-12)
    assert bf16["rounding"] > 1.0 > 1e-3 > f32["rounding"] > 0
    assert lin["changed_cells"] > yarn["changed_cells"] > 0


def test_positions_and_the_factor_steps():
    assert heatmap_positions(2048).tolist() == [k * 2560 // 240 for k in range(240)]
    got = call_js(esm_source("lab_angles.js"), [("compute", [dict(rule="linear", factor=3.3, head_dim=64, base=1e4,
                                                                   train_length=512, dtype="float64")]),
                                                 ("compute", [dict(rule="warp", factor=99, head_dim=7, base=1.0,
                                                                   train_length=3, dtype="float16")])])
    assert got[0]["state"]["factor"] == 3.5 and got[0]["target_length"] == 1792
    assert got[1]["state"] == dict(rule="yarn", factor=64, head_dim=64, base=100, train_length=2048, dtype="float64")
    for r in got:
        assert_matches(r)


def test_widget_state_is_validated():
    lab = AngleLab(rule="ntk", factor=2.0, head_dim=32)
    assert lab.numbers["target_length"] == 4096 and lab.state()["head_dim"] == 32
    for name, value in [("rule", "dynamic"), ("factor", 65.0), ("head_dim", 48), ("train_length", 3000),
                        ("base", 10.0), ("dtype", "float16")]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)
    with pytest.raises(ValueError, match="dtype"):
        reference(dict(lab.state(), dtype="float16"))
    assert repr(lab).startswith("AngleLab(rule='ntk'")


def test_readout_words_follow_ropegeos_counts():
    """The aliasing line says "no pair" when ropegeo counts none (linear x64, d 16, train 512) and the
    count otherwise; the slowest pair's line gives the total turns and names the phase as mod 2 pi."""
    from jsrun import call_js
    from ropegeo.book.widgets._lab import esm_source
    from ropegeo.book.widgets.angle_lab import reference

    src = esm_source("lab_angles.js")
    states = [dict(rule="linear", factor=64, head_dim=16, base=1e4, train_length=512, dtype="float64"),
              dict(rule="yarn", factor=4, head_dim=64, base=100.0, train_length=2048, dtype="float64")]
    for st in states:
        r = call_js(src, [("compute", [st])])[0]
        text = call_js(src, [("aliasText", [r])])[0]
        n = reference(st, [])["aliased_pairs"]
        if n == 0:
            assert "no pair turns more than half a turn" in text and "0 pairs" not in text
        else:
            assert text.split(": ", 1)[1].startswith(f"{n} pairs turn" if n > 1 else "1 pair turns"), text
    assert reference(states[0], [])["aliased_pairs"] == 0 < reference(states[1], [])["aliased_pairs"]
