"""Gate B judges phases in the dtype the model forms them in, at the positions the set occupies.

The margin a set keeps at every position is its exact margin less twice the largest distance between a
signature formed in the phase dtype and the exact one (a distance between two rounded signatures is at
least the exact one less both roundings). Labelled controls, with the rounding derived here from
numpy's float32 arithmetic:
* negative: Llama 4 Scout at its 10.5M-token context in float32 fails (precision, not the ruler);
* positive: the same ruler in float64 phases passes, and so does float32 at its training length and
  Llama 3.1 at its 131,072-token context.
"""

import math

import numpy as np
import pytest

from ropegeo.gates.b.rule import gate_b
from ropegeo.models.manifest import load_model

SCOUT = "llama-4-scout-17b-16e-instruct"


def float32_rounding(theta, positions):
    """Largest signature displacement of float32 phases (positions and frequencies cast, product in float32)."""
    p32 = np.asarray(positions, dtype=np.float32)[:, None] * np.asarray(theta, dtype=np.float32)[None, :]
    exact = np.asarray(positions, dtype=np.float64)[:, None] * np.asarray(theta, dtype=np.float64)[None, :]
    err = p32.astype(np.float64) - exact
    return float(np.sqrt(np.mean(4 * np.sin(err / 2) ** 2, axis=1)).max())


def local(m, target, dtype=None):
    m = m if dtype is None else m.with_(phase_dtype=dtype)
    b = gate_b(m, train_length=m.train_length, target_length=target)
    return b, b.sets[0]


def test_scout_at_its_context_fails_on_precision():
    m = load_model(SCOUT)
    b, s = local(m, m.target_length)
    theta = m.operator.theta_at(m.target_length)
    e = float32_rounding(theta, s["origin"] + np.arange(0, 65))
    assert s["rounding"] == pytest.approx(e, rel=1e-3, abs=1e-6) and e > 0.05
    assert s["margin"] >= b.threshold  # the rounded phases alone would pass
    assert s["judged_margin"] < b.threshold and b.status == "fail"
    assert "Precision, not the ruler" in b.diagnosis


@pytest.mark.parametrize("dtype, target", [("float64", None), (None, "train")])
def test_scout_positive_controls(dtype, target):
    m = load_model(SCOUT)
    b, s = local(m, m.target_length if target is None else m.train_length + 1, dtype)
    assert b.status == "pass", b.diagnosis
    assert s["judged_margin"] >= b.threshold


def test_llama31_keeps_its_pass_with_small_rounding():
    m = load_model("llama-3.1-8b")
    b, s = local(m, m.target_length)
    assert b.status == "pass" and 0 < s["rounding"] < 0.01
    assert s["judged_margin"] == pytest.approx(s["margin"] - 2 * s["rounding"], abs=5 * s["rounding"])
    assert math.isfinite(s["judged_margin"])


# ---------------------------------------------------------------- the relative law in the phase dtype (issue 35)
def float32_law(theta, pairs):
    """The relative law's phase distance in float32, derived here: each position's angle formed in float32
    (position and frequency cast, product in float32), their difference against the exact offset angle."""
    th32 = np.asarray(theta, dtype=np.float32)
    worst = 0.0
    for m, n in pairs:
        am = (np.float32(m) * th32).astype(np.float64)
        an = (np.float32(n) * th32).astype(np.float64)
        err = (an - am) - (n - m) * np.asarray(theta, dtype=np.float64)
        worst = max(worst, float(np.sqrt(np.mean(4 * np.sin(err / 2) ** 2))))
    return worst


def test_the_relative_law_is_judged_in_the_phase_dtype():
    from ropegeo.gates.procedure import geometry_audit

    m = load_model(SCOUT)
    target = 2**25  # Scout's ruler served at 33.5M tokens: float32 angles there are spaced by up to 2 rad / 2^24 ...
    a = geometry_audit(m, target_length=target)
    theta = m.operator.theta_at(target)
    pairs = [(2, 9), (31, 40), (97, 611), (m.train_length // 4, m.train_length - 2), (target // 4, target - 2)]
    want = float32_law(theta, pairs)
    # cos and sin are rounded to float32 in the pipeline too: at most a few 2^-24 apart from the derivation
    assert a.phase_law_error == pytest.approx(want, abs=1e-6)
    tol = a.gate_b.threshold / 2
    assert a.phase_law_check.passed is False and want > tol, a.table()
    assert a.outcome == "fail" and "relative law in float32 phases" in a.table()
    # ... the control: the same ruler with float64 phases keeps the law (and only Gate B speaks for the ruler)
    exact = geometry_audit(m.with_(phase_dtype="float64"), target_length=target)
    assert exact.phase_law_check.passed is True and exact.phase_law_error < 1e-8
    # bfloat16 phases break it already at the shipped context; float32 keeps it there (Gate B fails Scout for
    # its margin, not for the law)
    assert geometry_audit(m.with_(phase_dtype="bfloat16")).phase_law_check.passed is False
    shipped = geometry_audit(m)
    assert shipped.phase_law_check.passed is True and shipped.phase_law_error < tol


def test_the_law_check_passes_every_shipped_float32_configuration():
    from ropegeo.gates.procedure import geometry_audit

    a = geometry_audit(load_model("llama-3.1-8b"))
    theta = load_model("llama-3.1-8b").operator.theta_at(a.target_length)
    pairs = [(2, 9), (31, 40), (97, 611), (2048, 8190), (a.target_length // 4, a.target_length - 2)]
    assert a.phase_law_error == pytest.approx(float32_law(theta, pairs), abs=1e-6)
    assert a.phase_law_check.passed and a.outcome == "pass"
