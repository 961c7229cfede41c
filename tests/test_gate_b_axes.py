"""Gate B per axis: the verdict is measured, not fixed by the calibration.

Calibrated on a text step, an axial split's squared neighbour distances add up to the text step's,
so at most one axis can reach ``D_text(1) / sqrt 2``: checked over random splits. Calibrated per axis
(the default), the verdict fails exactly the axes whose band returns near an earlier offset within the
extent. Controls: a layout where every axis passes (M-RoPE interleaved), one where none does (one
pair per axis at 1 rad, which returns near offset 6), and a mixed one, each against a brute-force
margin and threshold computed here from the definitions.
"""

import math

import numpy as np
import pytest

from ropegeo.frequencies import frequencies
from ropegeo.gates.b.axes import axis_gate_b
from ropegeo.multiaxis import axis_frequencies, mrope_bank


def brute(F, axis, extent):
    """(margin, threshold) from the definitions: equal weights over all pairs, rule D(1) / sqrt 2 of the axis."""
    band = np.abs(F[:, axis])

    def dist(k):
        return math.sqrt(4 * sum(math.sin(k * t / 2) ** 2 for t in band) / band.size)

    margin = min(dist(k) for k in range(1, extent))
    return margin, dist(1) / math.sqrt(2)


def status(F, axis, extent):
    m, t = brute(F, axis, extent)
    return "pass" if m >= t else "fail"


LAYOUTS = {
    "interleaved M-RoPE": (mrope_bank(128, 1e6, (24, 20, 20), round_robin=True), 32, ["pass"] * 3),
    "one fast pair per axis": (np.eye(3), 8, ["fail"] * 3),
    "toy, y owns the fastest pair": (axis_frequencies(frequencies(16, 100.0), np.array([1] + [0] * 7), 2), 8,
                                     ["pass", "fail"]),
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_per_axis_verdict_against_brute_force(name):
    F, extent, expected = LAYOUTS[name]
    got = [axis_gate_b(F, a, extent) for a in range(F.shape[1])]
    assert [d.status for d in got] == expected == [status(F, a, extent) for a in range(F.shape[1])]
    for a, d in enumerate(got):
        m, t = brute(F, a, extent)
        assert d.margin.margin == pytest.approx(m, rel=1e-9) and d.threshold == pytest.approx(t, rel=1e-9)
        assert "of a text step's squared neighbour distance" in d.reason


def test_two_or_more_axes_pass_and_none_pass():
    passing = {n: sum(axis_gate_b(F, a, e).passed for a in range(F.shape[1])) for n, (F, e, _) in LAYOUTS.items()}
    assert passing["interleaved M-RoPE"] >= 2 and passing["one fast pair per axis"] == 0


def test_text_step_calibration_passes_at_most_one_axis_by_construction():
    # the old default: over random axial splits, never two axes at once (what chapter 8 used to "measure")
    rng = np.random.default_rng(0)
    theta = frequencies(64, 1e4)
    for _ in range(30):
        F = axis_frequencies(theta, rng.integers(0, 3, theta.size), 3)
        text = np.abs(F.sum(axis=1))
        assert sum(axis_gate_b(F, a, 16, reference=text).passed for a in range(3)) <= 1
    # the same interleaved layout that passes every axis per axis passes none on the text step
    F = LAYOUTS["interleaved M-RoPE"][0]
    assert [axis_gate_b(F, a, 32, reference=np.abs(F.sum(axis=1))).status for a in range(3)] == ["fail"] * 3
