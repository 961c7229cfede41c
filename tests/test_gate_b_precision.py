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
