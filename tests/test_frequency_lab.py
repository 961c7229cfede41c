"""The frequency lab: its state against independent derivations, bounded controls, the widget."""

import math

import numpy as np
import pytest

import traitlets

from jsrun import call_js
from ropegeo.book.widgets._lab import esm_source
from ropegeo.book.widgets.frequency_lab import CONTROLS, KERNEL_POINTS, FrequencyLab, frequency_lab, lab_state, readout


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


def test_widget_state_is_validated():
    lab = frequency_lab(dtype="bfloat16")
    assert isinstance(lab, FrequencyLab) and lab.state()["dtype"] == "bfloat16"
    assert lab.numbers["parser_margin"] == lab_state(**lab.state())["parser_margin"]
    with pytest.raises(ValueError, match="unknown control"):
        frequency_lab(heads=3)
    for name, value in [("head_dim", 7), ("head_dim", 300), ("base", 5.0), ("dtype", "float8"), ("target_length", 10**6)]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)
    assert "export default" in lab._esm and "function compute" in lab._esm


def _page_numbers(states):
    return call_js(esm_source("lab_frequency.js"), [("compute", [s]) for s in states])


STATES = [
    dict(head_dim=128, base=1e4, train_length=4096, target_length=32768, interpolate=False, dtype="float32"),
    dict(head_dim=128, base=1e4, train_length=4096, target_length=32768, interpolate=True, dtype="bfloat16"),
    dict(head_dim=64, base=5e5, train_length=2048, target_length=131072, interpolate=False, dtype="float16"),
    dict(head_dim=4, base=10.0, train_length=16, target_length=16, interpolate=True, dtype="float64"),
    dict(head_dim=256, base=1e7, train_length=131072, target_length=1000, interpolate=True, dtype="float16"),
    dict(head_dim=16, base=500.0, train_length=100, target_length=1499, interpolate=False, dtype="bfloat16"),
]


def test_front_end_numbers_match_lab_state():
    """The JavaScript (run in Node) gives ropegeo's numbers: float64 ones to 1e-9, the dtype's K
    within about an ulp of the format (its cos/sin are correctly rounded, numpy's float32 ones are not)."""
    for st, r in zip(STATES, _page_numbers(STATES)):
        assert_matches(r, lab_state(**st))


def assert_matches(r, ref):
    c = ref["controls"]
    assert r["state"] == c
    assert r["slow_pairs"] == ref["slow_pairs"] and r["integer_limit"] == ref["integer_limit"]
    np.testing.assert_allclose(r["scale"], ref["scale"], rtol=1e-15)
    np.testing.assert_allclose(r["wavelength_range"], ref["wavelengths"][[0, -1]], rtol=1e-9)
    np.testing.assert_allclose(r["adjacent_distance"], ref["adjacent_distance"], rtol=1e-9)
    assert [o for o, _ in r["near"]] == [o for o, _ in ref["near"]]
    np.testing.assert_allclose([k for _, k in r["near"]], [k for _, k in ref["near"]], atol=1e-9)
    offs = list(ref["kernel_offsets"])
    tol = {"float64": 1e-9, "float32": 1e-6, "float16": 2e-3, "bfloat16": 2e-2}[c["dtype"]]
    for smp in r["samples"]:
        j = offs.index(smp["offset"])
        assert abs(smp["k"] - ref["kernel_values"][j]) <= 1e-9
        if np.isnan(ref["kernel_dtype"][j]):
            assert smp["k_dtype"] is None
        else:
            assert abs(smp["k_dtype"] - ref["kernel_dtype"][j]) <= tol
    if ref["parser_margin"] is None:
        assert r["parser_margin"] is None
    else:
        assert abs(r["parser_margin"] - ref["parser_margin"]) <= max(tol, 1e-9)
        if ref["parser_margin"] == 0:
            assert r["parser_margin"] == 0 and tuple(r["parser_pair"]) == ref["parser_pair"]


def test_readout_words_say_what_ropegeos_readout_says():
    """After each move, the page's lines carry the facts of ropegeo's readout: the slow-pair count,
    the most identity-like offset beyond training or, with a target within training, that there is
    none to search (the kernel chart then marks nothing)."""
    import re

    from ropegeo.book.widgets.frequency_lab import readout

    src = esm_source("lab_frequency.js")
    states = [dict(head_dim=64, base=1e4, train_length=4096, target_length=32768, interpolate=False, dtype="float32"),
              dict(head_dim=64, base=1e4, train_length=8192, target_length=4096, interpolate=False, dtype="float32"),
              dict(head_dim=16, base=100.0, train_length=10_000, target_length=10_000, interpolate=True, dtype="bfloat16")]
    for st in states:
        r = call_js(src, [("compute", [st])])[0]
        page = call_js(src, [("readoutLines", [r])])[0]
        want = readout(lab_state(**st)).split("\n")
        assert want[1] in page  # the slow pairs, word for word
        none = [w for w in want if w.startswith("no offset beyond training")]
        assert [p for p in page if p.startswith("no offset beyond training")] == none
        near = [w for w in want if w.startswith("most identity-like")]
        if near:
            off = re.search(r"\]: ([\d,]+) \(K", near[0]).group(1)
            assert any(p.startswith(near[0].split("]:")[0]) and f"]: {off} tokens" in p for p in page), (page, near)
        assert bool(none) == (st["target_length"] <= st["train_length"]) and bool(near) != bool(none)
