"""Gate B margins: brute force, the invariance shortcut, precision, weighting, the probe, errors."""

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ropegeo.frequencies import frequencies
from ropegeo.geometry import kernel
from ropegeo.precision import deployed, uniform
from ropegeo.margins import (
    MAX_DIRECT,
    attention_probe,
    band_slices,
    difference_distance,
    pairwise_distances,
    separation_margin,
)

NP = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
TH8 = frequencies(8)
TH16 = frequencies(16)
TH128 = frequencies(128)


def signature(pos, theta, name="float64", scale=1.0, table=None):
    """One offset's generated (cos, sin) row, scalar by scalar: angle in ``name``, table in ``table``."""
    t = NP[name]
    tab = NP[table or name]
    p = t(pos)
    if scale != 1.0:
        p = t(p * t(scale))
    out = []
    for th in theta:
        a = t(p * t(th))
        out.append((float(tab(np.cos(a))), float(tab(np.sin(a)))))
    return out


def pipe_of(kind, name):
    """(pipeline, angle dtype, table dtype) of the uniform or the deployed pipeline of ``name``."""
    if kind == "uniform":
        return uniform(name), name, name
    angle = "float64" if name == "float64" else "float32"
    return deployed(name), angle, name


def brute_margin(offsets, theta, name="float64", scale=1.0, origin=0.0, weights=None, table=None):
    """Pure-Python loop over every pair: the reference for the margin and the confusable pair."""
    w = [1.0 / len(theta)] * len(theta) if weights is None else [x / sum(weights) for x in weights]
    sigs = {a: signature(origin + a, theta, name, scale, table) for a in offsets}
    best = (math.inf, None)
    for a, b in itertools.combinations(sorted(offsets), 2):
        d2 = sum(wi * ((ca - cb) ** 2 + (sa - sb) ** 2) for wi, (ca, sa), (cb, sb) in zip(w, sigs[a], sigs[b]))
        if math.sqrt(d2) < best[0] - 1e-12:
            best = (math.sqrt(d2), (float(a), float(b)))
    return best


@pytest.mark.parametrize(
    "offsets, theta",
    [([1, 2, 3], TH128), ([0, 7, 44, 45, 300], TH8), ([5, 6288, 1000, 3], TH8), (list(range(0, 60, 7)), TH16),
     ([0.5, 2.25, 9.0, 100.75], TH16)],
)
def test_margin_matches_brute_force_float64(offsets, theta):
    m, pair = brute_margin(offsets, theta)
    res = separation_margin(offsets, theta)
    assert res.margin == pytest.approx(m, abs=1e-10)
    assert res.pair == pair


@pytest.mark.parametrize("kind", ["uniform", "deployed"])
@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("origin, scale", [(0.0, 1.0), (3000.0, 1.0), (3000.0, 0.125), (200.0, 0.3)])
def test_margin_matches_brute_force_low_precision(kind, name, origin, scale):
    offsets = [1, 2, 3, 17, 40, 41, 90]
    pipe, angle, table = pipe_of(kind, name)
    m, pair = brute_margin(offsets, TH16, angle, scale, origin, table=table)
    res = separation_margin(offsets, TH16, dtype=pipe, origin=origin, scale=scale)
    assert res.method == "generated"
    assert res.margin == pytest.approx(m, abs=1e-7)
    if m > 1e-6:
        assert res.pair == pair
    else:  # a collapse: the reported pair must itself be at distance 0
        a, b = res.pair
        assert signature(origin + a, TH16, angle, scale, table) == signature(origin + b, TH16, angle, scale, table)


@given(st.lists(st.integers(0, 3000), min_size=2, max_size=12, unique=True), st.sampled_from(["float64", "bfloat16"]),
       st.sampled_from(["uniform", "deployed"]))
def test_margin_matches_brute_force_property(offsets, name, kind):
    pipe, angle, table = pipe_of(kind, name)
    m, _ = brute_margin(offsets, TH8, angle, 1.0, 100.0, table=table)
    assert separation_margin(offsets, TH8, dtype=pipe, origin=100.0).margin == pytest.approx(m, abs=1e-7)


@pytest.mark.parametrize("kind", ["uniform", "deployed"])
def test_pairwise_distances_against_loop(kind):
    offs = [3, 1, 8, 20]
    pipe, angle, table = pipe_of(kind, "float16")
    D = pairwise_distances(offs, TH8, dtype=pipe, origin=1000)
    srt = sorted(offs)
    for j, a in enumerate(srt):
        for k, b in enumerate(srt):
            sa, sb = signature(1000 + a, TH8, angle, 1.0, table), signature(1000 + b, TH8, angle, 1.0, table)
            ref = math.sqrt(sum(((x[0] - y[0]) ** 2 + (x[1] - y[1]) ** 2) / 4 for x, y in zip(sa, sb)))
            assert D[j, k] == pytest.approx(ref, abs=1e-12)


@given(st.floats(-1e5, 1e5, allow_nan=False), st.integers(1, 40))
def test_distance_is_chord_form_of_kernel(delta, seed):
    w = np.random.default_rng(seed).random(TH16.size) + 0.01
    d = difference_distance(delta, TH16, weights=w)
    k = kernel(delta, TH16, weights=w)
    assert d**2 == pytest.approx(2 * (1 - k), abs=1e-9)
    assert 0 <= d <= 2


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.integers(0, 50_000))
def test_translation_invariance_exact(a, b, shift):
    # float64 generated phases: the distance depends on a - b only (up to rounding)
    if a == b:
        return
    D1 = pairwise_distances([a, b], TH8, origin=0)[0, 1]
    D2 = pairwise_distances([a, b], TH8, origin=shift)[0, 1]
    assert D1 == pytest.approx(D2, abs=1e-7)
    assert D1 == pytest.approx(float(difference_distance(b - a, TH8)), abs=1e-7)


@pytest.mark.parametrize(
    "offsets",
    [range(0, 3000), range(5, 20_000, 7), [0, 3, 10, 11, 500, 6283, 9000], list(range(0, 4000, 13)) + [4001]],
)
def test_shortcut_agrees_with_direct_computation(offsets):
    fast = separation_margin(offsets, TH8, method="difference")
    slow = separation_margin(offsets, TH8, method="generated")
    assert fast.method == "difference" and slow.method == "generated"
    assert fast.margin == pytest.approx(slow.margin, abs=1e-7)
    assert fast.pair[1] - fast.pair[0] == slow.pair[1] - slow.pair[0]


def test_range_is_cheap_and_finds_the_article_near_return():
    # head dim 8: the most confusable pair of 1..100,000 is 6283 apart, K(6283) ~ 0.996
    res = separation_margin(range(1, 9000), TH8)
    assert res.pair[1] - res.pair[0] == 6283
    k = sum(math.cos(6283 * t) for t in TH8) / 4
    assert round(k, 3) == 0.996
    assert res.margin == pytest.approx(math.sqrt(2 * (1 - k)), rel=1e-9)
    big = separation_margin(range(0, 10**6), TH128)  # O(n * pairs): one row per difference
    assert big.method == "difference" and big.n_offsets == 10**6


def test_low_precision_breaks_invariance():
    exact = separation_margin([1, 2, 3], TH128, origin=32_764)
    f32 = separation_margin([1, 2, 3], TH128, dtype="float32", origin=32_764)
    bf16 = separation_margin([1, 2, 3], TH128, dtype="bfloat16", origin=32_764)
    assert exact.margin == pytest.approx(math.sqrt(2 * (1 - np.mean(np.cos(TH128)))), rel=1e-9)
    assert f32.margin != exact.margin and f32.margin == pytest.approx(exact.margin, abs=1e-3)
    assert bf16.margin == 0.0 and bf16.dtype == "bfloat16"
    # the deployed pipeline (float32 angles, bfloat16 cos/sin) keeps the three positions apart
    dep = separation_margin([1, 2, 3], TH128, dtype=deployed("bfloat16"), origin=32_764)
    assert dep.dtype == "deployed bfloat16" and dep.margin == pytest.approx(exact.margin, abs=2e-3)
    # 32765, 32766, 32767 in bfloat16 (8 significant bits, spacing 128 there): all become 32768
    assert {float(ml_dtypes.bfloat16(x)) for x in (32765, 32766, 32767)} == {32768.0}


def test_band_weighting_shows_hidden_fast_band_collision():
    equal = separation_margin([0, 2438], TH128)
    band = separation_margin([0, 2438], TH128, weighting="band", bands=16)
    assert equal.margin > 1.0
    assert band.margin < 0.15 and band.bands[0].margin == band.margin
    # the band margin equals the margin computed on that band's frequencies alone
    m, _ = brute_margin([0, 2438], TH128[:4])
    assert band.bands[0].margin == pytest.approx(m, abs=1e-10)
    assert band.bands[0].first_pair == 0 and band.bands[0].last_pair == 3
    assert band.bands[0].shortest_wavelength == pytest.approx(2 * math.pi)


def test_amplitudes_are_normalised_and_match_loop():
    amps = np.linspace(1, 5, 8)
    a = separation_margin([1, 9, 30, 31], TH16, weighting=amps)
    b = separation_margin([1, 9, 30, 31], TH16, weighting=10 * amps)
    m, pair = brute_margin([1, 9, 30, 31], TH16, weights=list(amps))
    assert a.margin == pytest.approx(m, abs=1e-10) and a.pair == pair and a.weighting == "amplitudes"
    assert b.margin == pytest.approx(a.margin, abs=1e-14)


def test_band_slices_cover_everything():
    for pairs, bands in [(64, 4), (64, 7), (5, 5), (3, 1)]:
        sl = band_slices(pairs, bands)
        assert len(sl) == bands and sl[0].start == 0 and sl[-1].stop == pairs
        assert all(a.stop == b.start for a, b in zip(sl, sl[1:]))


def test_probe_follows_closed_form():
    for c in [6284, 3142, 50, 2]:
        p = attention_probe(1, [c], TH8, sharpness=8.0)
        d = float(difference_distance(c - 1, TH8))
        assert p.target_mass == pytest.approx(1 / (1 + math.exp(-8.0 * d * d / 2)), abs=1e-9)
        assert p.scores[0] == pytest.approx(8.0)


def test_probe_collapse_in_bfloat16_and_shift_invariance():
    p = attention_probe(1, [2, 3], TH128, dtype="bfloat16", query_position=32_768)
    np.testing.assert_allclose(p.weights, 1 / 3, atol=1e-12)
    # deployed: the three keys stay apart and the target wins, as in float32
    dep = attention_probe(1, [2, 3], TH128, dtype=deployed("bfloat16"), query_position=32_768, sharpness=100)
    f32 = attention_probe(1, [2, 3], TH128, dtype="float32", query_position=32_768, sharpness=100)
    assert dep.winner == 0 and dep.target_mass == pytest.approx(f32.target_mass, abs=0.02)
    a = attention_probe(1, [6284], TH8, query_position=0)
    b = attention_probe(1, [6284], TH8, query_position=12_345)
    assert a.target_mass == pytest.approx(b.target_mass, abs=1e-9)


def test_probe_with_fast_band_amplitudes():
    w = np.zeros(64)
    w[:4] = 1
    fast = attention_probe(100, [2538], TH128, amplitudes=w)
    equal = attention_probe(100, [2538], TH128)
    assert fast.target_mass < 0.55 < 0.99 < equal.target_mass


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(offsets=[]), "at least two"),
        (dict(offsets=[5]), "at least two"),
        (dict(offsets=[1, -2]), "non-negative"),
        (dict(offsets=[1, np.nan]), "finite"),
        (dict(offsets=[1, np.inf]), "finite"),
        (dict(offsets=[1, 2, 2]), "distinct"),
        (dict(offsets=[[1, 2], [3, 4]]), "1-D"),
        (dict(offsets=["a", "b"]), "offsets"),
        (dict(offsets=[1, 2], dtype="float8"), "dtype"),
        (dict(offsets=[1, 2], dtype="int32"), "dtype"),
        (dict(offsets=[1, 2], weighting="head"), "weighting"),
        (dict(offsets=[1, 2], weighting=[1.0, 2.0]), "weights"),
        (dict(offsets=[1, 2], weighting=-np.ones(64)), "non-negative"),
        (dict(offsets=[1, 2], weighting="band", bands=65), "bands"),
        (dict(offsets=[1, 2], scale=0.0), "scale"),
        (dict(offsets=[1, 2], origin=-1), "origin"),
        (dict(offsets=[1, 2], method="fast"), "method"),
        (dict(offsets=[1, 2], dtype="float32", method="difference"), "float64"),
        (dict(offsets=range(0, 2**40)), "at most"),
        (dict(offsets=range(0, MAX_DIRECT + 1), dtype="bfloat16"), "at most"),
        (dict(offsets=range(0, MAX_DIRECT + 1), method="generated"), "at most"),
    ],
)
def test_bad_inputs_raise_clear_errors(kwargs, word):
    offsets = kwargs.pop("offsets")
    with pytest.raises(ValueError, match=word):
        separation_margin(offsets, TH128, **kwargs)


def test_bad_inputs_other_functions():
    with pytest.raises(ValueError, match="at most"):
        pairwise_distances(range(5000), TH8)
    with pytest.raises(ValueError, match="theta"):
        difference_distance(1, [])
    with pytest.raises(ValueError, match="distractors"):
        attention_probe(1, [], TH8)
    with pytest.raises(ValueError, match="sharpness"):
        attention_probe(1, [2], TH8, sharpness=1e6)
    with pytest.raises(ValueError, match="dtype"):
        attention_probe(1, [2], TH8, dtype="float8")


def test_margin_work_is_bounded():
    from ropegeo.margins import pairwise_distances, separation_margin

    # a plain count of the entries evaluated (MAX_MARGIN_CELLS = 2**33), no calibrated weights
    uneven = np.arange(2**17) * 2
    uneven[-1] += 1  # not an arithmetic progression: every pair must be compared (2**34 comparisons)
    with pytest.raises(ValueError, match="comparing every pair of 131,072 unevenly spaced offsets"):
        separation_margin(uneven, frequencies(8))
    with pytest.raises(ValueError, match="difference table over a span of 4,194,304 positions"):
        separation_margin([0, 1, 2**22], np.tile(frequencies(4096), 2))  # 2**22 x 4,096 pairs
    with pytest.raises(ValueError, match="4,096 x 4,096 distance matrix with 2048 pairs"):
        pairwise_distances(np.arange(4096) * 7919, frequencies(4096))
    # an evenly spaced set stays cheap at the largest size
    assert separation_margin(range(0, 2**20), frequencies(8)).margin > 0


# ---- the staged pipeline in the probe, and the decision rule ------------------------------------


@pytest.mark.parametrize("kind", ["uniform", "deployed"])
def test_probe_scores_against_scalar_loop(kind):
    """Rotate query and keys scalar by scalar through the pipeline's dtypes, then dot over sqrt(d)."""
    pipe, angle, table = pipe_of(kind, "bfloat16")
    r = NP["bfloat16"]
    beta, target, qpos, dis = 20.0, 3.0, 700.0, [5.0, 40.0]
    d = 2 * TH8.size
    amp = [math.sqrt(beta * math.sqrt(d) / TH8.size)] * TH8.size
    got = attention_probe(target, dis, TH8, sharpness=beta, dtype=pipe, query_position=qpos).scores

    def rot(a, b, c, s):
        a, b, c, s = (r(x) for x in (a, b, c, s))
        return float(r(r(a * c) - r(b * s))), float(r(r(a * s) + r(b * c)))

    q_sig = signature(qpos, TH8, angle, 1.0, table)
    for j, off in enumerate([target] + dis):
        k_sig = signature(qpos - off, TH8, angle, 1.0, table)
        total = 0.0
        for i, th in enumerate(TH8):
            qa, qb = rot(amp[i], 0.0, *q_sig[i])
            ka, kb = rot(amp[i] * math.cos(target * th), amp[i] * math.sin(target * th), *k_sig[i])
            total += qa * ka + qb * kb
        assert got[j] == pytest.approx(total / math.sqrt(d), abs=1e-9)


def test_probe_mass_closed_form():
    from ropegeo.margins import probe_mass

    assert probe_mass(0.0, 5.0) == 0.5
    assert probe_mass(math.sqrt(2 * math.log(9) / 7.0), 7.0) == pytest.approx(0.9, abs=1e-12)
    np.testing.assert_allclose(probe_mass([0.1, 0.3], 50.0), [1 / (1 + math.exp(-50 * x * x / 2)) for x in (0.1, 0.3)])
