"""The frequency lab: its state against independent derivations, bounded controls, the widget."""

import math

import numpy as np
import pytest

from ropegeo.widgets.frequency_lab import CONTROLS, KERNEL_POINTS, frequency_lab, lab_state, readout


def test_default_state_matches_closed_forms():
    s = lab_state()
    d, B = 128, 10_000.0
    lam = [2 * math.pi * B ** (2 * i / d) for i in range(d // 2)]
    np.testing.assert_allclose(s["wavelengths"], lam, rtol=1e-12)
    assert s["slow_pairs"] == sum(1 for x in lam if 4096 / x < 1) == 18
    assert s["scale"] == 1.0
    # kernel at the drawn offsets by a plain loop
    for j in (0, 7, 500, len(s["kernel_offsets"]) - 1):
        delta = s["kernel_offsets"][j]
        ref = sum(math.cos(delta * B ** (-2 * i / d)) for i in range(d // 2)) / (d // 2)
        assert s["kernel_values"][j] == pytest.approx(ref, abs=1e-12)
    k1 = sum(math.cos(B ** (-2 * i / d)) for i in range(d // 2)) / (d // 2)
    assert s["adjacent_distance"] == pytest.approx(math.sqrt(2 * (1 - k1)), rel=1e-9)
    assert s["parser_margin"] > 0  # float32 keeps offsets 1-3 apart near 32,768
    assert len(s["near"]) == 3 and all(4096 <= o <= 32_768 for o, _ in s["near"])


def test_interpolation_and_bfloat16_readout():
    s = lab_state(interpolate=True, dtype="bfloat16")
    assert s["scale"] == pytest.approx(4096 / 32_768)
    assert s["parser_margin"] == 0.0
    text = readout(s)
    assert "COLLAPSED" in text and "bfloat16" in text and "256" in text


def test_dtype_kernel_against_direct_ml_dtypes():
    import ml_dtypes

    s = lab_state(dtype="bfloat16", target_length=2000)
    d = s["kernel_offsets"]
    t = ml_dtypes.bfloat16
    ang = (d.astype(t)[:, None] * s["theta"].astype(t)[None, :]).astype(t)
    ref = np.cos(ang).astype(t).astype(np.float64).mean(axis=1)
    np.testing.assert_array_equal(s["kernel_dtype"], ref)
    exact = lab_state(dtype="float64", target_length=2000)
    np.testing.assert_allclose(exact["kernel_dtype"], exact["kernel_values"], atol=1e-12)


def test_float16_overflow_is_reported_not_raised():
    s = lab_state(dtype="float16", target_length=131_072)
    assert s["parser_margin"] is None and s["largest_finite"] == 65504.0
    d = s["kernel_offsets"]
    assert np.all(np.isnan(s["kernel_dtype"][d > 65504])) and np.all(np.isfinite(s["kernel_dtype"][d <= 65504]))
    assert "OVERFLOW" in readout(s)
    # positions are stored in the dtype before they are scaled: interpolation does not rescue them
    assert lab_state(dtype="float16", target_length=131_072, train_length=4096, interpolate=True)["parser_margin"] is None
    assert lab_state(dtype="float16", target_length=60_000)["parser_margin"] is not None


def test_kernel_points_bounded_at_extremes():
    s = lab_state(head_dim=256, base=1e7, train_length=16, target_length=131_072, dtype="float16")
    assert s["kernel_offsets"].size <= KERNEL_POINTS
    assert s["kernel_offsets"][0] == 0 and s["kernel_offsets"][-1] == 131_072
    small = lab_state(head_dim=4, target_length=100, train_length=200)
    assert small["kernel_offsets"].size == 101 and small["near"] == []


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(head_dim=2), "head_dim"),
        (dict(head_dim=258), "head_dim"),
        (dict(head_dim=7), "head_dim"),
        (dict(base=1.0), "base"),
        (dict(base=1e9), "base"),
        (dict(train_length=8), "train_length"),
        (dict(target_length=10**7), "target_length"),
        (dict(target_length=float("nan")), "target_length"),
        (dict(interpolate="yes"), "interpolate"),
        (dict(dtype="int8"), "dtype"),
    ],
)
def test_controls_are_bounded(kwargs, word):
    with pytest.raises(ValueError, match=word):
        lab_state(**kwargs)


def test_controls_table_is_consistent():
    assert set(CONTROLS) == {"head_dim", "base", "train_length", "target_length", "interpolate", "dtype"}
    lab_state(**{k: spec[-1] for k, spec in CONTROLS.items()})


def test_widget_builds_and_updates():
    lab = frequency_lab()
    first = lab.image.value
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    lab.controls["dtype"].value = "bfloat16"  # goes through the observer
    assert lab.state["controls"]["dtype"] == "bfloat16"
    assert "COLLAPSED" in lab.text.value
    assert bytes(lab.image.value) != bytes(first)  # the dtype curve of K changed
    with pytest.raises(ValueError, match="unknown control"):
        frequency_lab(heads=3)
    sliders = lab.controls
    assert sliders["head_dim"].max == CONTROLS["head_dim"][1] and sliders["target_length"].max == CONTROLS["target_length"][1]
