"""The audit lab's state function against computations written out here, its bounds and its widget."""

import math

import numpy as np
import pytest

from ropegeo.widgets.audit_lab import CONTROLS, KERNEL_POINTS, RULES, audit_lab, lab_state, readout


def bank(d, base=10_000.0):
    return np.array([base ** (-2.0 * i / d) for i in range(d // 2)])


def k_mean(delta, theta):
    return float(np.mean(np.cos(delta * theta)))


def novelty(theta_train, theta_served, L, T):
    tau = 2 * math.pi
    return sum(max(0.0, min(T * b, tau) - min(L * a, tau)) / tau for a, b in zip(theta_train, theta_served))


def test_kernel_distant_offset_and_slow_pairs_against_loops():
    s = lab_state(head_dim=8, base=10_000.0, train_length=4096, target_length=7000, rule="none")
    theta = bank(8)
    np.testing.assert_allclose(s["theta"], theta, rtol=1e-15)
    # K at every drawn offset, as a plain mean of cosines
    for off, val in zip(s["kernel_offsets"][::97], s["kernel_values"][::97]):
        assert val == pytest.approx(k_mean(off, theta), abs=1e-12)
    # brute force over every offset of the search range
    offs = np.arange(4096, 7001)
    ks = np.cos(np.outer(offs, theta)).mean(axis=1)
    assert s["distant"][0] == int(offs[np.argmax(ks)]) == 6283
    assert s["distant"][1] == pytest.approx(ks.max(), abs=1e-12)
    # a pair is slow when it turns less than once in training: 4096 theta < 2 pi
    assert s["slow_pairs"] == sum(4096 * t < 2 * math.pi for t in theta) == 1
    assert s["adjacent_similarity"] == pytest.approx(k_mean(1, theta), abs=1e-15)
    assert s["adjacent_distance"] == pytest.approx(math.sqrt(2 * (1 - k_mean(1, theta))), rel=1e-9)
    assert s["relative_law_error"] < 1e-9


def test_tradeoff_against_closed_forms():
    L, T, d = 4096, 32_768, 128
    s = lab_state(head_dim=d, train_length=L, target_length=T, rule="linear")
    theta = bank(d)
    rows = {r["rule"]: r for r in s["tradeoff"]}
    assert [r["rule"] for r in s["tradeoff"]] == list(RULES) and rows["linear"]["selected"]
    # raw: every pair that has not finished a turn in training sees new phase
    assert rows["none"]["novelty"] == pytest.approx(novelty(theta, theta, L, T), rel=1e-12)
    assert rows["none"]["novel_pairs"] == sum(L * t < 2 * math.pi for t in theta)
    # position interpolation: no new phase, a step eight times smaller
    assert rows["linear"]["novelty"] == pytest.approx(0.0, abs=1e-12)
    assert rows["linear"]["adjacent_distance"] == pytest.approx(math.sqrt(2 * (1 - k_mean(1, theta / 8))), rel=1e-9)
    np.testing.assert_allclose(s["theta"], theta / 8, rtol=1e-15)
    # NTK-aware: base * s ** (d / (d - 2))
    ntk = bank(d, 10_000.0 * 8 ** (d / (d - 2)))
    assert rows["ntk"]["adjacent_distance"] == pytest.approx(math.sqrt(2 * (1 - k_mean(1, ntk))), rel=1e-9)
    assert rows["ntk"]["novelty"] == pytest.approx(novelty(theta, ntk, L, T), rel=1e-9)
    # the selected rule's served kernel at the drawn offsets
    for off, val in zip(s["kernel_offsets"][::211], s["kernel_values"][::211]):
        assert val == pytest.approx(k_mean(off, theta / 8), abs=1e-12)


def test_relative_law_checked_where_the_target_reaches():
    s = lab_state(target_length=32_768)
    assert max(n for _, n in s["law_pairs"]) == 32_767
    # an honest rotation keeps the law to rounding; the error grows with the angle but stays tiny
    assert 0 <= s["relative_law_error"] < 1e-9


def test_no_extension_when_the_target_is_short():
    s = lab_state(train_length=4096, target_length=1024, rule="yarn")
    assert not s["extended"] and s["distant"] is None
    np.testing.assert_allclose(s["theta"], bank(128), rtol=1e-15)
    assert all(r["novelty"] == 0 for r in s["tradeoff"])
    assert "none needed" in readout(s)


def test_bounded_work_at_the_largest_setting():
    hi = {k: spec[1] for k, spec in CONTROLS.items() if len(spec) == 3}
    s = lab_state(**hi, rule="dynamic")
    assert s["kernel_offsets"].size <= KERNEL_POINTS
    assert s["kernel_offsets"][-1] == hi["target_length"]


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(head_dim=7), "head_dim"),
        (dict(head_dim=2), "head_dim"),
        (dict(head_dim=512), "head_dim"),
        (dict(base=1.0), "base"),
        (dict(base=float("nan")), "base"),
        (dict(train_length=8), "train_length"),
        (dict(target_length=10**7), "target_length"),
        (dict(rule="longrope"), "rule"),
        (dict(head_dim="wide"), "head_dim"),
    ],
)
def test_controls_are_validated(kwargs, word):
    with pytest.raises(ValueError, match=word):
        lab_state(**kwargs)


def test_readout_and_widget():
    s = lab_state(head_dim=16, train_length=64, target_length=512)
    text = readout(s)
    assert "relative law" in text and "slow pairs" in text and "trade-off" in text
    assert f"{s['distant'][0]:,}" in text
    lab = audit_lab(head_dim=16, train_length=64, target_length=512)
    assert lab.state["controls"]["head_dim"] == 16
    assert lab.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    lab.controls["rule"].value = "linear"
    assert lab.state["controls"]["rule"] == "linear" and "PI" in lab.text.value
    with pytest.raises(ValueError, match="unknown control"):
        audit_lab(dtype="float16")
