"""Chapter 3: every glued number against an independent derivation, and the chapter's structure.

The glued values are read from the executed notebook's stored outputs, so a stale or wrong
number in the rendered book fails here.
"""

import json
import math
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from glue import read_glued

NB = Path(__file__).resolve().parents[1] / "chapters" / "03_frequency_bank.ipynb"
D, B = 128, 10_000.0
THETA = [B ** (-2 * i / D) for i in range(D // 2)]
THETA8 = [B ** (-2 * i / 8) for i in range(4)]


@pytest.fixture(scope="module")
def nb():
    return json.loads(NB.read_text())


@pytest.fixture(scope="module")
def glued():
    return read_glued(NB)[0]


def K(delta, theta):
    return sum(math.cos(delta * t) for t in theta) / len(theta)


def dist(delta, theta, weights=None):
    w = [1.0] * len(theta) if weights is None else weights
    return math.sqrt(sum(wi * (2 - 2 * math.cos(delta * t)) for wi, t in zip(w, theta)) / sum(w))


def test_article_figures(glued):
    assert glued["n_pairs"] == 64
    assert round(glued["fastest_wavelength"], 2) == 6.28 and glued["fastest_wavelength"] == pytest.approx(2 * math.pi)
    assert round(glued["slowest_wavelength"]) == 54_410
    assert round(glued["fastest_turns"]) == 652 and round(glued["slowest_turns"], 3) == 0.075
    assert glued["slow_count"] == 18 == sum(4096 * t < 2 * math.pi for t in THETA)
    assert glued["first_slow_pair"] == 64 - 18
    np.testing.assert_allclose([glued[f"lam8_{j}"] for j in range(4)], [6.28, 62.8, 628, 6283], rtol=1e-3)
    assert round(glued["k6283"], 3) == 0.996 and glued["k6283"] == pytest.approx(K(6283, THETA8), abs=1e-12)
    assert glued["law8"] < 1e-12  # the prose states the bound 10^-12, not the digits
    # the figure's second peak: 6,283 less pair 2's wavelength (628), pairs 0-2 near whole turns, pair 3 at 0.9
    gap = (10_000 - 100) // 25
    ks = [(K(x, THETA8), x) for x in range(100, 10_001)]
    first = max(ks)[1]
    assert first == 6283 and glued["peak2_8"] == max(kv for kv in ks if abs(kv[1] - first) >= gap)[1] == 6283 - 628
    assert glued["peak2_8_k"] == pytest.approx(K(5655, THETA8), abs=1e-12)
    assert [round(5655 * t / (2 * math.pi), 1) for t in THETA8] == [900.0, 90.0, 9.0, 0.9]


def test_kernel_numbers(glued):
    assert glued["k1"] == pytest.approx(K(1, THETA), abs=1e-12)
    assert glued["k1_interp"] == pytest.approx(K(1 / 8, THETA), abs=1e-12)
    brute = max(range(4096, 32_769), key=lambda d: K(d, THETA))
    assert glued["far_offset"] == brute and glued["far_k"] == pytest.approx(K(brute, THETA), abs=1e-9)
    # the kernel's course in the prose: about 0.2 after a few hundred tokens, near zero past ~3,000, then -0.3 to 0.25
    ks = [K(d, THETA) for d in range(32_769)]
    assert glued["k_mean_300_1000"] == pytest.approx(sum(ks[300:1001]) / 701, abs=1e-12)
    assert glued["k_mean_1000_3000"] == pytest.approx(sum(ks[1000:3001]) / 2001, abs=1e-12)
    assert glued["k_far_min"] == pytest.approx(min(ks[6000:]), abs=1e-12)
    assert glued["k_far_max"] == pytest.approx(max(ks[6000:]), abs=1e-12)
    assert 0.15 < glued["k_mean_300_1000"] < 0.3 and abs(glued["k_mean_1000_3000"]) < 0.15
    assert abs(sum(ks[3000:]) / len(ks[3000:])) < 0.05  # "near zero past about 3,000"
    assert -0.35 < glued["k_far_min"] < -0.25 and 0.2 < glued["k_far_max"] < 0.3
    # R_6283 - I: each 2x2 block differs by cos-1 and sin; the largest entry over the four pairs
    assert glued["dist_id"] == pytest.approx(max(max(abs(math.cos(6283 * t) - 1), abs(math.sin(6283 * t))) for t in THETA8))


def test_critical_dimension(glued):
    # the closed form of the text against a turn-by-turn count of the slow pairs
    crit = (D / 2) * math.log(4096 / (2 * math.pi)) / math.log(B)
    assert glued["crit_index"] == pytest.approx(crit, rel=1e-12)
    full = [i for i in range(D // 2) if 4096 * THETA[i] >= 2 * math.pi]  # pairs that complete a turn
    assert glued["crit_last_full"] == max(full) == math.floor(crit)
    assert glued["crit_count"] == D // 2 - len(full) == glued["slow_count"]
    assert glued["crit_dim"] == 2 * math.ceil(crit) == 2 * len(full)  # Liu et al.'s critical dimension


@pytest.mark.parametrize("d, base, length", [(128, 10_000.0, 4096), (128, 500_000.0, 8192), (64, 500_000.0, 8192),
                                             (128, 1_000_000.0, 32_768), (16, 10_000.0, 100), (256, 2.0e6, 131_072)])
def test_critical_dimension_closed_form_matches_slow_pairs(d, base, length):
    from ropegeo.frequencies import frequencies, slow_pairs

    crit = (d / 2) * math.log(length / (2 * math.pi)) / math.log(base)
    closed = sum(1 for i in range(d // 2) if i > crit)
    assert closed == slow_pairs(frequencies(d, base), length) == d // 2 - 1 - math.floor(crit)


def test_bases(glued):
    for base in (10_000, 500_000, 1_000_000):
        th = [base ** (-2 * i / 128) for i in range(64)]
        assert glued[f"slow_base_{base}"] == sum(8192 * t < 2 * math.pi for t in th)
        assert glued[f"k1000_base_{base}"] == pytest.approx(K(1000, th), abs=1e-12)
    assert glued["k1000_base_500000"] > 3 * glued["k1000_base_10000"]
    # 1 - K(1) = (1/64) sum_i 2 sin^2(theta_i / 2): "a little less well" for the larger bases, in that order
    sep = {b: sum(2 * math.sin(b ** (-2 * i / 128) / 2) ** 2 for i in range(64)) / 64 for b in (10_000, 500_000, 1_000_000)}
    for b, v in sep.items():
        assert glued[f"sep1_base_{b}"] == pytest.approx(v, abs=1e-12)
    assert sep[10_000] > sep[500_000] > sep[1_000_000] > 0.6 * sep[10_000]


def test_torus_return(glued):
    best = min(range(1, 300), key=lambda d: math.sin(d * THETA[0] / 2) ** 2 + math.sin(d * THETA[16] / 2) ** 2)
    assert glued["torus_return"] == best == 63  # about 20 pi: ten turns of pair 0, one of pair 16
    assert glued["torus_turns0"] == pytest.approx(63 / (2 * math.pi), rel=1e-12)
    assert glued["torus_turns16"] == pytest.approx(63 * THETA[16] / (2 * math.pi), rel=1e-12)


def _worst_error(pos, angle, table):
    """Largest phase error over the 64 pairs: angle formed in ``angle``, cos/sin rounded to ``table``."""
    err = 0.0
    for th in THETA:
        a = angle(angle(pos) * angle(th))
        c, s = float(table(np.cos(a))), float(table(np.sin(a)))
        err = max(err, abs((math.atan2(s, c) - pos * th + math.pi) % (2 * math.pi) - math.pi))
    return err


def test_precision_numbers(glued):
    assert glued["limit_bfloat16"] == 256 and glued["limit_float16"] == 2048 and glued["limit_float32"] == 2**24
    assert glued["collapse_bf16"] == 256  # 257 rounds to 256 when positions are bfloat16
    assert float(ml_dtypes.bfloat16(257.0)) == 256.0
    assert glued["collapse_dep"] == 2**24 and float(np.float32(2**24 + 1)) == 2**24  # positions in float32
    bf16 = ml_dtypes.bfloat16
    assert glued["err4000_old"] == pytest.approx(_worst_error(4000, bf16, bf16), abs=1e-12)
    assert glued["err4000_dep"] == pytest.approx(_worst_error(4000, np.float32, bf16), abs=2e-4)
    assert glued["err4000_f32"] == pytest.approx(_worst_error(4000, np.float32, np.float32), abs=2e-7)
    # the prose: the bug scrambles the fast pairs; the deployed error is one bfloat16 rounding (2**-8 or so)
    assert glued["err4000_old"] > 1 and glued["err4000_dep"] < 2.0**-8 and glued["err4000_f32"] < 1e-3
    # deployed bfloat16 beyond the crossover: the worst of the 2,049 positions up to each length, by hand
    for m, key in ((100_000, "1e5"), (1_000_000, "1e6"), (10_000_000, "1e7")):
        assert glued[f"err_dep_{key}"] == pytest.approx(_window_error(m, bf16), abs=1e-5)
    # the reviewer's independent values (worst of 2,049): 0.0090 at 1e5
    assert round(glued["err_dep_1e5"], 4) == 0.0090
    assert glued["err_dep_1e5"] > 3 * glued["err4000_dep"] and glued["err_dep_1e6"] > 0.03 and glued["err_dep_1e7"] > 0.5
    assert _worst_error(1_000_000, np.float32, np.float32) > 10 * glued["err4000_dep"]  # float32's own error dominates


def _f32_signed_errors(positions, th32=None):
    """Signed phase error of every pair, float32 frequency, product and cos/sin, by hand in numpy float32."""
    th32 = np.asarray(THETA, dtype=np.float32) if th32 is None else th32
    pos = np.asarray(positions, dtype=np.int64)
    ang = pos.astype(np.float32)[:, None] * th32[None, :]  # one float32 rounding of the product
    assert ang.dtype == np.float32
    got = np.arctan2(np.sin(ang).astype(np.float64), np.cos(ang).astype(np.float64))
    exact = np.mod(pos[:, None].astype(np.float64) * np.asarray(THETA)[None, :], 2 * np.pi)
    return (got - exact + np.pi) % (2 * np.pi) - np.pi


def _window_error(n, table=None):
    """Worst phase error of positions n - 2048 .. n: float32 angles, cos/sin in float32, then cast to ``table``."""
    pos = np.arange(n - 2048, n + 1)
    ang = pos.astype(np.float32)[:, None] * np.asarray(THETA, dtype=np.float32)[None, :]
    c, s = np.cos(ang), np.sin(ang)
    if table is not None:
        c, s = c.astype(table), s.astype(table)
    c, s = c.astype(np.float64), s.astype(np.float64)
    exact = pos[:, None].astype(np.float64) * np.asarray(THETA)[None, :]
    return float(np.abs(np.arctan2(s * np.cos(exact) - c * np.sin(exact), c * np.cos(exact) + s * np.sin(exact))).max())


def test_deployed_crossover(glued):
    """The bfloat16 table's rounding dominates up to the first probe where float32's angle error alone exceeds it."""
    bf16 = ml_dtypes.bfloat16
    plateau = _window_error(4096, bf16)
    # a bfloat16 rounding at a tie moves by one step either way, with the same error: the max barely moves
    assert glued["dep_plateau"] == pytest.approx(plateau, abs=1e-5)
    previous = None
    for n in range(4096 + 1024, 131_073, 1024):  # a plain loop over the probes
        e = _window_error(n)
        if e > plateau:
            break
        previous = e
    assert glued["dep_cross"] == n and glued["f32_at_cross"] == pytest.approx(e, abs=1e-6)
    assert glued["f32_before_cross"] == pytest.approx(previous, abs=1e-6)
    assert e - plateau > 1e-4 and plateau - previous > 1e-4  # the crossing is not decided by rounding
    assert 30_000 <= n <= 40_000  # the reviewer's reading of the figure: a crossover near 30-40k
    assert previous < 0.8 * plateau < plateau < e  # a step, as the prose says
    # the step's cause: between the two probes some pair's angle m theta_i passes a power of two (2**15 here),
    # where float32's spacing doubles
    assert any((n - 1024) * t < 2**15 <= n * t for t in THETA)
    # beyond it float32 dominates: at 1e5 its own error is more than twice the table's rounding
    assert _window_error(100_000) > 2 * plateau


def test_scout_context_from_its_config(glued):
    rec = json.loads((NB.parents[1] / "ropegeo" / "data" / "llama-4-scout-17b-16e-instruct.json").read_text())
    assert rec["config"]["max_position_embeddings"] == 10_485_760 and rec["config"]["rope_theta"] == 500_000.0
    # "its RoPE layers attend only within chunks of 8,192 tokens": the chunk size of the record's RoPE layers
    assert glued["scout_chunk"] == rec["config"]["attention_chunk_size"] == 8192
    assert rec["layer_type"] == "chunked_attention" and rec["config"]["no_rope_layers"].count(1) == 36


def _tf436_table(kind, seq_len, dim=128, base=10_000.0, max_pos=4096, factor=2.0):
    """transformers 4.36.0's Llama*RotaryEmbedding._set_cos_sin_cache after model.to(bfloat16), in numpy: the
    buffer inv_freq was cast to bfloat16; a rebuild (only for seq_len > max_position_embeddings) takes t in
    inv_freq's dtype; the dynamic NTK class first recomputes inv_freq in float32 with its stretched base."""
    bf16 = ml_dtypes.bfloat16
    inv = np.float32(1.0) / (np.float32(base) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)))
    inv = inv.astype(bf16)  # the cast buffer
    assert seq_len > max_pos
    if kind == "dynamic":
        base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2))
        inv = np.float32(1.0) / (np.float32(base) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)))
    t = np.arange(seq_len).astype(inv.dtype)
    if kind == "linear":
        t = (t.astype(np.float32) / np.float32(factor)).astype(inv.dtype)
    freqs = (t.astype(np.float32)[:, None] * inv.astype(np.float32)[None, :]).astype(inv.dtype)
    cos, sin = (f(freqs.astype(np.float32)).astype(bf16).astype(np.float64) for f in (np.cos, np.sin))
    return cos, sin, base


def test_2023_rebuilds_rounded_every_stage_except_dynamic_ntk(nb):
    """Cell 35: a rebuild after the cast (longer sequence, with or without linear scaling) rounded positions,
    frequencies and angles in bfloat16; dynamic NTK recomputed inv_freq in float32 first, so only its table was cast."""
    from ropegeo.precision import deployed, generated_phases

    n = 8192
    for kind in ("plain", "linear"):  # neighbouring positions share one row: the positions themselves rounded
        cos, sin, _ = _tf436_table(kind, n)
        same = (cos[1:] == cos[:-1]).all(axis=1) & (sin[1:] == sin[:-1]).all(axis=1)
        assert same.any(), kind
    cos, sin, ntk_base = _tf436_table("dynamic", n)
    assert ntk_base > 10_000.0
    assert not ((cos[1:] == cos[:-1]).all(axis=1) & (sin[1:] == sin[:-1]).all(axis=1)).any()
    # the deployed pipeline with the NTK base: float32 angles, the table alone in bfloat16
    theta = [ntk_base ** (-2 * i / 128) for i in range(64)]
    c_dep, s_dep = generated_phases(np.arange(n), theta, deployed("bfloat16"))
    assert max(np.abs(cos - c_dep).max(), np.abs(sin - s_dep).max()) <= 2.0**-8  # a table unit at most
    exact = np.multiply.outer(np.arange(n, dtype=float), theta)
    err = np.abs(np.arctan2(sin * np.cos(exact) - cos * np.sin(exact), cos * np.cos(exact) + sin * np.sin(exact)))
    assert err.max() < 0.01  # the table's rounding, not the old bug's radians
    prose = " ".join(" ".join("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert ("for a sequence longer than `max_position_embeddings`, with or without linear scaling; dynamic NTK "
            "escaped, since it recomputed `inv_freq` in float32 before each rebuild") in prose
    assert "under dynamic NTK scaling) every stage" not in prose
    assert "`cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)`" in prose  # quoted as transformers 5.24.0 writes it


def test_float32_angle_error_grows_with_position(glued):
    """Float32 keeps positions distinct to 2**24, but its angles are off by up to 2 m theta_i 2**-24."""
    f32 = np.float32
    for key, n in (("128k", 131_072), ("1m", 2**20), ("10m", 10_485_760)):
        window = np.arange(n - 2048, n + 1)
        err = np.abs(_f32_signed_errors(window)).max()
        # float32 cos/sin round differently across kernels: a few 1e-7 at most, far below what is stated
        assert glued[f"err_f32_{key}"] == pytest.approx(err, abs=1e-6)
        # at the power of two itself only the frequency's rounding shows: a single position understates the window
        assert _worst_error(n, f32, f32) < 0.6 * glued[f"err_f32_{key}"]
        # the bound: two roundings of m theta_0 (pair 0 has theta = 1), plus cos/sin's own
        assert glued[f"bound_f32_{key}"] == 2 * n * 2.0**-24
        assert glued[f"err_f32_{key}"] <= glued[f"bound_f32_{key}"] + 2.0**-22
    # the prose's digits: 0.0078, 0.062, 0.81 (the reviewer's independent values)
    assert round(glued["err_f32_128k"], 4) == 0.0078 and round(glued["err_f32_1m"], 3) == 0.062
    assert round(glued["err_f32_10m"], 2) == 0.81
    # the neighbour step's error near 10.5M: the difference of two neighbouring signed errors, most of a radian
    e = _f32_signed_errors(np.arange(10_485_760 - 2048, 10_485_760 + 1))
    step = np.abs((np.diff(e, axis=0) + np.pi) % (2 * np.pi) - np.pi).max()
    assert glued["err_f32_step_10m"] == pytest.approx(step, abs=1e-5) and 0.8 < glued["err_f32_step_10m"] < 1.0
    # per pair: pair 1's whole step (theta_1) is lost where two neighbours share a float32 angle; 13 pairs
    # are off by more than 0.1 rad (the 13th at 0.115, the 14th at 0.096); pair 0 (theta_0 = 1) keeps its step
    per_pair = np.abs((np.diff(e, axis=0) + np.pi) % (2 * np.pi) - np.pi).max(axis=0)
    theta1 = 10_000.0 ** (-2 / 128)
    assert glued["err_f32_step_pair"] == int(per_pair.argmax()) == 1
    assert glued["err_f32_step_theta"] == pytest.approx(theta1, rel=1e-12)
    assert glued["err_f32_step_10m"] == pytest.approx(theta1, abs=1e-5)
    assert glued["err_f32_step_over"] == int((per_pair > 0.1).sum()) == 13
    assert glued["scout_ctx"] == 10_485_760 and glued["scout_base"] == 500_000.0  # the record, read above
    assert per_pair[0] < 1e-6
    # and float64 frequencies and angles together move the same growth 2**(53 - 24) lower
    assert np.finfo(np.float64).nmant - np.finfo(np.float32).nmant == 29
    # the first collapse: below 2**24 pair 0 turns by exactly 1 rad a token, so neighbouring rows differ
    assert all(float(f32(m)) == m for m in (2**24 - 2, 2**24 - 1)) and abs(math.cos(1.0) - 1) > 0.4


def _transformers_inv_freq():
    """transformers' ``1.0 / (base ** (arange(0, 128, 2).float() / 128))`` in float32, by hand: the pow taken
    to 50 digits with mpmath and rounded to float32 (a correctly rounded pow), then a float32 reciprocal."""
    import mpmath

    with mpmath.workdps(50):
        exact = [mpmath.mpf(10_000) ** (mpmath.mpf(2 * i) / 128) for i in range(64)]
        pow32 = np.array([np.float32(float(x)) for x in exact], dtype=np.float32)
        for x, f in zip(exact, pow32):  # rounded to nearest: no float32 neighbour is closer to the exact power
            for g in (np.nextafter(f, np.float32(0)), np.nextafter(f, np.float32(np.inf))):
                assert abs(mpmath.mpf(float(f)) - x) < abs(mpmath.mpf(float(g)) - x)
        theta = [1 / x for x in exact]
        inv = np.float32(1.0) / pow32
        rel = [float(abs(mpmath.mpf(float(f)) - t) / t) for f, t in zip(inv, theta)]
        once = [float(abs(mpmath.mpf(float(np.float32(float(t)))) - t) / t) for t in theta]
    return inv, rel, once


def test_transformers_frequencies_round_twice(glued):
    """The library's inv_freq is a float32 pow and a float32 reciprocal: two roundings, not ropegeo's one."""
    inv, rel, once = _transformers_inv_freq()
    eps = 2.0**-24
    differ = int((inv != np.asarray(THETA, dtype=np.float32)).sum())
    assert glued["hf_freq_differ"] == differ and 10 < differ < 64  # many, not all: a second rounding
    assert glued["hf_freq_err_eps"] == pytest.approx(max(rel) / eps, rel=1e-6)
    assert glued["once_freq_err_eps"] == pytest.approx(max(once) / eps, rel=1e-6)
    # one rounding stays within half an ulp (at most eps relative); two may exceed it, and stay under 2 eps
    assert glued["once_freq_err_eps"] <= 1 < glued["hf_freq_err_eps"] < 2
    ulps = max(abs(float(f) - t) / float(np.spacing(f)) for f, t in zip(inv, THETA))
    assert glued["hf_freq_err_ulp"] == pytest.approx(ulps, rel=1e-6) and 0.5 < ulps < 1.5  # "about one unit"
    # the widened bound (1 + e) m theta eps covers the angle error of the library's own frequencies near 10.5M,
    # and the errors stated for frequencies rounded once are the same to the digits printed
    n = 10_485_760
    err = np.abs(_f32_signed_errors(np.arange(n - 2048, n + 1), th32=inv)).max()
    assert glued["err_hf_10m"] == pytest.approx(err, abs=1e-6)
    assert glued["hf_bound_factor"] == pytest.approx(1 + max(rel) / eps, rel=1e-6) and glued["hf_bound_factor"] > 2
    assert glued["bound_hf_10m"] == pytest.approx((1 + max(rel) / eps) * n * eps, rel=1e-6)
    assert glued["bound_hf_10m"] > glued["bound_f32_10m"]  # wider than the once-rounded bound
    assert err <= glued["bound_hf_10m"] + 2.0**-22
    assert round(glued["err_hf_10m"], 2) == round(glued["err_f32_10m"], 2) == 0.81


def test_float64_angles_keep_the_float32_frequency_error(glued):
    """Float64 angles from float32 frequencies: no step error, but m (theta_f32 - theta) stays (about 0.31 rad)."""
    n = 10_485_760
    pos = np.arange(n - 2048, n + 1)
    for key, f32 in (("once", np.asarray(THETA, dtype=np.float32)), ("hf", _transformers_inv_freq()[0])):
        # independently: the float64 product m f is exact to ~1e-9 rad, so the error is m (f - theta), wrapped;
        # f - theta is exact (Sterbenz) and m (f - theta) is rounded only at 1e-16 relative
        d = f32.astype(np.float64) - np.asarray(THETA)
        wrapped = (np.multiply.outer(pos.astype(np.float64), d) + np.pi) % (2 * np.pi) - np.pi
        assert glued[f"err_f64ang_{key}_10m"] == pytest.approx(np.abs(wrapped).max(), abs=1e-6)
        assert int(np.abs(wrapped).max(axis=0).argmax()) == 1  # pair 1, as for float32 angles
        # the step error is the frequency's own rounding |f - theta| (plus float64 noise of a few 1e-9)
        assert glued[f"err_f64ang_{key}_step"] == pytest.approx(np.abs(d).max(), abs=5e-9)
        assert glued[f"err_f64ang_{key}_step"] < 1e-6 * glued["err_f32_step_10m"]
    # the prose: 0.31 for both, well under float32 angles' 0.81 yet far above the float64 bound 2 m 2**-53
    assert round(glued["err_f64ang_once_10m"], 2) == round(glued["err_f64ang_hf_10m"], 2) == 0.31
    assert glued["err_f64ang_once_10m"] < glued["err_f32_10m"] and 2 * n * 2.0**-53 < 1e-8
    # the frequency-rounding part as a score sees it: delta (f32(theta_i) - theta_i) at offsets inside one 8,192 chunk
    chunk = [abs(8191 * (float(np.float32(t)) - t)) for t in THETA]
    assert glued["f32_freq_chunk_err"] == pytest.approx(max(chunk), rel=1e-9) and f"{glued['f32_freq_chunk_err']:.1e}" == "2.4e-04"
    # a consistent bank: the float64 phase difference over delta = 8191 anywhere in the context is delta f, not m f
    f = np.float32(THETA[1]).astype(np.float64)
    assert abs(((n * f) - ((n - 8191) * f)) - 8191 * f) < 1e-8 and glued["f32_freq_chunk_err"] < 1e-3 * glued["err_f64ang_once_10m"]


def test_gate_b_convention_sensitivity(nb, glued):
    """The threshold in units of D_train(1) is sqrt(ln need / ln calibration), by hand."""
    ratios = [math.sqrt(math.log(n) / math.log(c)) for c in (3, 9, 99) for n in (2, 3, 9, 99)]
    assert glued["sens_low"] == pytest.approx(min(ratios), rel=1e-9)
    assert glued["sens_high"] == pytest.approx(max(ratios), rel=1e-9)
    table = next("".join(o["data"]["text/markdown"]) for c in nb["cells"] for o in c.get("outputs", [])
                 if "calibration \\ need" in "".join(o.get("data", {}).get("text/markdown", "")))
    assert [f"{r:.3f}" for r in ratios] == re.findall(r"\d+\.\d{3}", table)
    # the defaults: 9:1 and 3:1 give 1/sqrt 2; the diagonal is one
    assert math.sqrt(math.log(3) / math.log(9)) == pytest.approx(1 / math.sqrt(2))
    ref = dist(1, THETA)
    # the prose: the interpolated parser fails under every convention, the retrieval sets pass under all
    assert glued["sens_parser"] == pytest.approx(glued["parser_interp"] / ref, rel=1e-9)
    assert glued["sens_parser"] < glued["sens_low"] and glued["sens_retr"] > glued["sens_high"]
    # the smaller of the two retrieval margins: passages 2,000 apart after 1/8, the grid 64 apart
    assert glued["sens_retr"] == pytest.approx(min(dist(2000, THETA), dist(64, THETA)) / ref, abs=0.05)
    # the parser without interpolation: the neighbours' distance itself, less rounding; set by the conventions
    assert glued["sens_plain_exact"] == pytest.approx(1.0, abs=1e-12)  # a tie with the diagonal's threshold
    assert 0.999 < glued["sens_plain_low"] == glued["sens_plain_dep"] < 1.0  # deployed bfloat16 fails the diagonal
    assert glued["sens_flip"] == pytest.approx(math.sqrt(math.log(9) / math.log(3)), rel=1e-12)
    assert glued["sens_flip"] > glued["sens_plain_exact"]  # all four fail under 3:1 calibration, 9:1 need


def _cast_error(pos):
    """model.to(bfloat16) on current transformers: inv_freq rounded to bfloat16, angles and cos/sin in float32,
    the table cast to bfloat16; the worst pair's phase error against the exact angle, by a loop."""
    bf16, err = ml_dtypes.bfloat16, 0.0
    for th in THETA:
        f = np.float32(float(bf16(th)))  # the cast buffer, widened by forward's .float()
        a = np.float32(np.float32(pos) * f)
        c, s = float(bf16(np.cos(a))), float(bf16(np.sin(a)))
        err = max(err, abs((math.atan2(s, c) - pos * th + math.pi) % (2 * math.pi) - math.pi))
    return err


def test_buffer_cast_numbers(glued):
    # the measurement on transformers 5.24.0: 0.24 rad at position 200, 2.56 at 4,000
    assert glued["err200_cast"] == pytest.approx(_cast_error(200), abs=2e-3) and round(glued["err200_cast"], 2) == 0.24
    assert glued["err4000_cast"] == pytest.approx(_cast_error(4000), abs=2e-3) and round(glued["err4000_cast"], 2) == 2.56
    assert glued["collapse_cast"] == 2**24  # its positions stay float32
    # the prose: between the loaded model and the old bug, and growing with position
    assert glued["err4000_dep"] < glued["err200_cast"] < glued["err4000_cast"]


def test_base_bound_numbers(glued):
    import mpmath

    from ropegeo.base_bound import min_base_sum

    runs = json.loads((NB.parents[1] / "ropegeo" / "data" / "runs" / "base_bound.json").read_text())
    rows = {r["length"]: r for r in runs["rows"]}
    lo, first, last = glued["bb_first_lo_4096"], glued["bb_first_4096"], glued["bb_all_4096"]
    assert [lo, first] == rows[4096]["first_valid"] and last == rows[4096]["all_valid_from"][1]

    # an independent reading of the criterion: a plain loop over m, in Python floats
    def loop_min(base, length=4096):
        th = [base ** (-2 * i / D) for i in range(D // 2)]
        return min(sum(math.cos(m * t) for t in th) for m in range(length + 1))

    # the smallest valid base: everything just below the proven-invalid end fails, the proven-valid end passes,
    # within the stated tolerance; the window of issue 35 (26,952 to 26,973, +0.11 at 26,960)
    assert first / lo - 1 <= 1.000001e-2 * glued["bb_tol_pct"] and glued["bb_tol_pct"] == pytest.approx(1e-3)
    assert loop_min(lo * (1 - 1e-7)) < 0 <= loop_min(first)
    assert 26_950 < lo < first < 26_953 and 26_972 < glued["bb_window_end_4096"] < 26_975
    assert loop_min(glued["bb_window_end_4096"] * (1 + 3e-5)) < 0 <= loop_min(glued["bb_window_end_4096"] * (1 - 1e-6))
    mid = math.sqrt(first * glued["bb_window_end_4096"])
    assert glued["bb_window_min"] == pytest.approx(loop_min(mid), abs=1e-9) and 0 < glued["bb_window_min"] < 0.2
    assert glued["bb_window_pct"] < glued["bb_grid_step_pct"] == pytest.approx(100 * (10 ** 0.0025 - 1))
    assert loop_min(last) >= 0 > loop_min(rows[4096]["all_valid_from"][0] * (1 - 1e-6))
    # the holes: counted from the proven intervals, and the middle of each proven-invalid one fails
    assert glued["bb_holes_4096"] == rows[4096]["holes"] == 15
    iv = rows[4096]["intervals"]
    holes = [(a, c) for a, c, s in iv if s == "invalid" and first < a < last]
    assert len(holes) == 15 and all(min_base_sum(4096, 128, math.sqrt(a * c)) < 0 for a, c in holes)
    # the paper's "4k" (2.7e4) is right for 4,096 and for 4,000; Su's 1.2e4 at 2k and 4.9e6 at 128k
    assert f"{first:.1e}" == "2.7e+04" == f"{glued['bb_first_4000']:.1e}"
    assert min_base_sum(4096, 128, 27_000.0) < 0  # the prose: "the base 27,000 itself fails"
    assert f"{glued['bb_first_2048']:.1e}" == "1.2e+04" and f"{glued['bb_first_128k']:.1e}" == "4.9e+06"
    assert glued["bb_first_128k"] == rows[131_072]["first_valid"][1] and 4.8725e6 < glued["bb_window_end_128k"] < 4.873e6
    # the prose: the paper's 7.8e6 at 128k fails at 131,072 but passes at 128,000; a direct numpy sum over every m,
    # the first failing m lying between the two readings of "128k"
    th = 7.8e6 ** (-2 * np.arange(D // 2) / D)
    s_m = np.concatenate([np.cos(np.multiply.outer(np.arange(a, min(a + 8192, 131_073), dtype=float), th)).sum(1)
                          for a in range(0, 131_073, 8192)])
    first_fail = int(np.argmax(s_m < 0))
    assert s_m[first_fail] < 0 and 128_000 < first_fail < 131_072 and s_m[:128_001].min() >= 0
    assert glued["bb_paper_128k_first_fail"] == first_fail
    assert glued["bb_paper_128000_min"] == pytest.approx(s_m[:128_001].min(), abs=1e-9) and glued["bb_paper_128000_min"] >= 0
    assert f"{glued['bb_paper_128000_min']:+.2f}" == "+0.03"
    assert glued["bb_paper_128k_min"] == pytest.approx(s_m.min(), abs=1e-9) and glued["bb_paper_128k_min"] < 0
    # Su's 2L against the wide-head integral: the first zero of the cosine integral, from mpmath
    assert glued["bb_su_4096"] == 2 * 4096
    assert glued["bb_ci_zero"] == pytest.approx(float(mpmath.findroot(mpmath.ci, 0.6)), abs=1e-12)
    assert glued["bb_ci_ratio"] == pytest.approx(1 / float(mpmath.findroot(mpmath.ci, 0.6)), abs=1e-12)
    assert round(glued["bb_ci_ratio"], 2) == 1.62
    assert glued["bb_ci_4096"] == pytest.approx(4096 / 0.6165054856, rel=1e-9)
    assert glued["bb_min_ratio"] == pytest.approx(min(r["first_valid"][0] / n for n, r in rows.items()))
    assert glued["bb_max_ratio"] == pytest.approx(max(r["first_valid"][0] / n for n, r in rows.items()))
    assert glued["bb_min_ratio_at"] == 1024 and glued["bb_max_ratio_at"] == 131_072
    assert round(glued["bb_min_ratio"], 1) == 4.2 and round(glued["bb_max_ratio"]) == 37
    # "rises from each context of the table to the next but once (4,000 above 4,096)", counted in the stored run
    by_l = sorted((n, r["first_valid"][0] / n) for n, r in rows.items())
    drops = [(a[0], b[0]) for a, b in zip(by_l, by_l[1:]) if b[1] < a[1]]
    assert drops == [(4000, 4096)]
    assert glued["bb_ratio_4000"] == pytest.approx(rows[4000]["first_valid"][0] / 4000, rel=1e-12)
    assert glued["bb_ratio_4096"] == pytest.approx(rows[4096]["first_valid"][0] / 4096, rel=1e-12)
    assert f"{glued['bb_ratio_4000']:.2f}" == "6.73" and f"{glued['bb_ratio_4096']:.2f}" == "6.58"
    assert round(1 / 0.6165054856, 2) == 1.62
    # every two-digit value quoted fails the criterion itself (a plain loop for the short ones)
    assert glued["bb_su_2k_min"] == pytest.approx(loop_min(1.2e4, 2048), abs=1e-9) and glued["bb_su_2k_min"] < 0
    assert glued["bb_paper_4k_min"] == pytest.approx(loop_min(2.7e4), abs=1e-9) and glued["bb_paper_4k_min"] < 0
    assert glued["bb_su_128k_min"] == pytest.approx(min_base_sum(131_072, 128, 4.9e6)) and glued["bb_su_128k_min"] < 0
    assert glued["bb_paper_128k_min"] == pytest.approx(min_base_sum(131_072, 128, 7.8e6)) and glued["bb_paper_128k_min"] < 0
    # 1.2e4, 2.7e4 and 4.9e6 are the smallest valid bases to two digits; 7.8e6 and 1.6e4 are not
    assert f"{rows[2048]['first_valid'][1]:.1e}" == "1.2e+04" and f"{rows[131_072]['first_valid'][1]:.1e}" == "4.9e+06"
    assert glued["bb_paper_2k_min"] == pytest.approx(loop_min(1.6e4, 2048), abs=1e-9) and glued["bb_paper_2k_min"] >= 0
    assert rows[2048]["first_valid"][1] < 1.6e4  # the paper's 2k value passes, but is not the smallest
    # the table's verdict for each of Men et al.'s values (two digits, against the certified rows)
    paper = {1024: 4.3e3, 2048: 1.6e4, 4000: 2.7e4, 4096: 2.7e4, 8192: 8.4e4, 32_768: 6.4e5, 131_072: 7.8e6}
    rounds = {n: round(rows[n]["first_valid"][1], 1 - int(math.floor(math.log10(b)))) == b for n, b in paper.items()}
    assert [n for n, ok in rounds.items() if not ok] == [2048, 32_768, 131_072] and glued["bb_paper_rounds"] == 4
    # "4 of the seven pass as printed, with 128k read as 131,072": one more under the 128,000 reading
    assert glued["bb_paper_passes"] == sum(min_base_sum(n, 128, b) >= 0 for n, b in paper.items()) == 4
    assert sum(min_base_sum(n, 128, b) >= 0 for n, b in {**paper, 131_072: None, 128_000: 7.8e6}.items() if b) == 5
    assert glued["bb_paper_1k_min"] == pytest.approx(loop_min(4.3e3, 1024), abs=1e-9) and glued["bb_paper_1k_min"] >= 0
    assert glued["bb_paper_8k_min"] == pytest.approx(loop_min(8.4e4, 8192), abs=1e-9) and glued["bb_paper_8k_min"] >= 0
    # 32k: the smallest valid base rounds to 6.3e5 and the paper's 6.4e5 fails (a plain loop in chunks)
    assert glued["bb_first_32k"] == rows[32_768]["first_valid"][1] and 629_900 < glued["bb_first_32k"] < 630_000
    assert glued["bb_paper_32k_min"] == pytest.approx(loop_min(6.4e5, 32_768), abs=1e-8) and glued["bb_paper_32k_min"] < -1
    assert loop_min(glued["bb_first_32k"], 32_768) >= 0
    # "the windows they round are narrower than a two-digit step": the first valid window at each length
    for n, step in ((2048, 1e3), (4096, 1e3), (131_072, 1e5)):
        a, c = next((a, c) for a, c, s in rows[n]["intervals"] if s == "valid")
        assert c - a < step
    # partial rotation: GPT-NeoX rotates 24 of 96; the 36 still pairs add 36, more than 12 cosines can take away
    assert glued["bb_neox"] == "vacuous" and (96 - 24) // 2 >= 24 // 2
    assert glued["liu_small_base"] == 500  # Liu et al. 2024, "Scaling laws of RoPE-based extrapolation"


def test_figure_functions_are_readable_at_phone_width():
    from ropegeo.frequencies import frequencies
    from ropegeo.book.plots import spectrum
    from ropegeo.book.plots.readable import smallest_text_px

    th = frequencies(128)
    figs = [spectrum.wavelength_ladder(th, 4096, 32_768, layout="column"),
            spectrum.base_comparison((1e4, 5e5), 128, 8192, layout="column"),
            spectrum.torus_plot(th, pairs=(0, 16), length=100, layout="column"),
            spectrum.kernel_plot(th, 5000, marks=2, mark_from=100, layout="column"),
            spectrum.phase_error_plot(th, 4096, layout="column"),
            spectrum.margin_plot(np.eye(3), [1, 2, 3], pair=(1, 2), layout="column"),
            spectrum.probe_plot([0.1, 0.5], [0.6, 0.9], layout="column"),
            spectrum.base_bound_plot(256, 16, low=100.0, high=2000.0, points=10, layout="column")]
    for fig in figs:
        assert smallest_text_px(fig) >= 9.0


def test_gate_b_numbers(glued):
    ref = dist(1, THETA)
    assert glued["parser_exact"] == pytest.approx(ref, rel=1e-9)
    assert glued["parser_beta"] == pytest.approx(2 * math.log(9) / ref**2, rel=1e-9)
    assert glued["parser_threshold"] == pytest.approx(ref / math.sqrt(2), rel=1e-9)
    # deployed: float32 positions and angles, only the table in bfloat16 -> the margin is the exact one,
    # up to the table's rounding; recompute the three signatures directly
    def sig(pos, angle, table, scale=1.0):
        p = angle(pos)
        if scale != 1.0:
            p = angle(p * angle(scale))
        return [(float(table(np.cos(angle(p * angle(t))))), float(table(np.sin(angle(p * angle(t)))))) for t in THETA]

    def margin(angle, table, scale=1.0):
        sigs = [sig(32_764 + j, angle, table, scale) for j in (1, 2, 3)]
        return min(math.sqrt(sum((a[0] - b[0]) ** 2 + (a[1] - b[1]) ** 2 for a, b in zip(x, y)) / 64)
                   for x, y in ((sigs[0], sigs[1]), (sigs[0], sigs[2]), (sigs[1], sigs[2])))

    bf16 = ml_dtypes.bfloat16
    assert glued["parser_dep"] == pytest.approx(margin(np.float32, bf16), abs=1e-9)
    assert glued["parser_dep"] == pytest.approx(0.244, abs=5e-4) and glued["parser_dep"] > glued["parser_threshold"]
    assert glued["parser_old"] == 0 == margin(bf16, bf16)
    assert glued["parser_interp"] == pytest.approx(margin(np.float32, bf16, 1 / 8), abs=1e-9)
    assert glued["parser_interp"] == pytest.approx(dist(1 / 8, THETA), abs=1e-3)
    assert round(glued["parser_interp"], 3) == 0.031 and glued["parser_interp"] < glued["parser_threshold"]
    # "bfloat16 stores only every 128th integer below 32,768, and all three positions become 32,768"
    assert glued["step_bfloat16"] == 128
    values = np.unique(np.arange(16_384, 32_768, dtype=np.float64).astype(bf16).astype(np.float64))
    assert set(np.diff(values)) == {128.0}
    assert {float(bf16(32_764 + j)) for j in (1, 2, 3)} == {glued["parser_stored"]} == {32_768.0}
    # retrieval: exact distance of 16,000 / 8 up to the table rounding; its threshold is the parser's,
    # D_train(1) / sqrt 2 (the head comes from neighbouring tokens of the training ruler, not the task)
    assert glued["retr_margin"] == pytest.approx(dist(16_000 / 8, THETA), abs=0.02)
    assert glued["retr_threshold"] == pytest.approx(ref / math.sqrt(2), rel=1e-9)
    assert glued["retr_margin"] > glued["retr_threshold"]
    # offsets 1..3 at scale 1/8 from the start: the largest distance is offsets 1 and 3, 2/8 apart
    assert glued["short_block"] == pytest.approx(dist(2 / 8, THETA), abs=2e-3)
    # fast band: a brute-force search over offsets 1..4096 with four pairs
    best = min(range(1, 4097), key=lambda d: dist(d, THETA[:4]))
    assert glued["fast_offset"] == best
    assert glued["d_fast"] == pytest.approx(dist(best, THETA[:4]), abs=1e-12)
    assert glued["band0_margin"] == pytest.approx(glued["d_fast"], abs=1e-12)
    assert glued["d_equal"] == pytest.approx(dist(best, THETA), abs=1e-12)


def mass(d, beta):
    return 1 / (1 + math.exp(-beta * d * d / 2))


def test_probe_numbers(glued):
    # most confusable pair of 1..8191 at head dim 8, by differences 1..8190
    best = min(range(1, 8191), key=lambda d: dist(d, THETA8))
    assert glued["small_b"] - glued["small_a"] == best == 6283
    beta8 = 2 * math.log(9) / dist(1, THETA8) ** 2  # calibrated on the finest step, 1
    assert glued["small_beta"] == pytest.approx(beta8, rel=1e-9)
    assert glued["mass_pair"] == pytest.approx(mass(dist(best, THETA8), beta8), abs=1e-9)
    assert glued["mass_pair"] < 0.55  # "only": well below the rule's three quarters
    assert glued["mass_control"] == pytest.approx(mass(dist(3141, THETA8), beta8), abs=1e-9)
    assert glued["mass_shift"] == pytest.approx(glued["mass_pair"], abs=1e-9)
    beta = 2 * math.log(9) / dist(1, THETA) ** 2
    assert glued["mass_f32"] == pytest.approx(mass(dist(1, THETA), beta), abs=2e-3)
    assert glued["mass_dep"] == pytest.approx(glued["mass_f32"], abs=5e-3)
    # the Gate B table's mass for the same pipeline: the keys' rounded distance turned into a mass, 0.900 against
    # the probe's 0.898; at the probe's own key positions (32,767, 32,766) that distance still gives 0.900, so the
    # gap is the probe's rounded query and rotation, not where the keys sit
    assert glued["parser_dep_mass"] == pytest.approx(mass(glued["parser_dep"], beta), abs=1e-9)
    assert round(glued["parser_dep_mass"], 3) == 0.900 and round(glued["mass_dep"], 3) == 0.898
    bf16 = ml_dtypes.bfloat16

    def sig(pos):  # float32 angles, the table in bfloat16
        a = [np.float32(np.float32(pos) * np.float32(t)) for t in THETA]
        return [(float(bf16(np.cos(x))), float(bf16(np.sin(x)))) for x in a]

    u, v = sig(32_767), sig(32_766)
    d_keys = math.sqrt(sum((p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 for p, q in zip(u, v)) / 64)
    assert round(mass(d_keys, beta), 3) == 0.900
    assert glued["mass_old"] == 0.5
    w = [1.0] * 4 + [0.0] * 60
    beta_fast = 2 * math.log(9) / dist(1, THETA, w) ** 2
    assert glued["mass_fast"] == pytest.approx(mass(dist(glued["fast_offset"], THETA, w), beta_fast), abs=1e-9)
    assert glued["mass_equal"] == pytest.approx(mass(dist(glued["fast_offset"], THETA), beta), abs=1e-9)
    assert glued["sweep_gap"] < 1e-9


def test_probe_figure_alt_text(nb):
    """The alt text: one distractor near distance 0 (about 0.09, offset 6,283 from the target), every other beyond 0.3."""
    close = [d for d in range(1, 8191) if dist(d, THETA8) < 0.3]  # every difference the sweep could hold
    assert close == [6283] and round(dist(6283, THETA8), 2) == 0.09
    cell = next(c for c in nb["cells"] if c["metadata"].get("mystnb", {}).get("figure", {}).get("name") == "fig-ch03-probe")
    assert "a single point, at distance about 0.09" in cell["metadata"]["mystnb"]["image"]["alt"]
    assert "beyond 0.3" in cell["metadata"]["mystnb"]["image"]["alt"]


def test_fast_band_offset_is_near_whole_turns(glued):
    # the exercise's explanation: 2,438 is within 0.03 of a whole number of turns of each fast pair
    t = [glued["fast_offset"] * th / (2 * math.pi) for th in THETA[:4]]
    assert all(abs(x - round(x)) < 0.03 for x in t)
    for j in range(4):  # the glued turn counts of the text, from the plain loop above
        assert glued[f"fast_turns_{j}"] == pytest.approx(t[j], rel=1e-12)
    # the family of near-returns, from a plain loop: 2,438, then 377, 2,061 = 2,438 - 377, 2,815 = 2,438 + 377
    dist = {k: math.sqrt(sum(2 - 2 * math.cos(k * th) for th in THETA[:4]) / 4) for k in range(1, 4097)}
    top = sorted(dist, key=dist.get)[:5]
    assert dist[top[3]] < dist[top[4]] - 0.05  # the order is far from rounding
    assert [glued[f"fast_top{k}"] for k in range(4)] == top[:4] == [2438, 377, 2061, 2815]
    assert top[2] == top[0] - top[1] and top[3] == top[0] + top[1]
    for k in range(4):
        assert glued[f"fast_top{k}_d"] == pytest.approx(dist[top[k]], abs=1e-9)
    # Gate B's threshold for a head on pairs 0-3: D_band(1) sqrt(ln 3 / ln 9); the offsets that fall below it
    thr = dist[1] * math.sqrt(math.log(3) / math.log(9))
    assert glued["fast_threshold"] == pytest.approx(thr, rel=1e-9)
    under = [k for k in dist if dist[k] < thr]
    assert min(abs(dist[k] - thr) for k in dist) > 1e-6  # the count is not decided by rounding
    assert glued["fast_under"] == len(under) and set(top[:4]) <= set(under)


def test_fast_band_exercise_family(glued):
    """The solution's family of pairs 4-7: best, runner-up, their difference, twice the runner-up less one."""
    w = [0.0] * 4 + [1.0] * 4 + [0.0] * 56
    d = {k: dist(k, THETA, w) for k in range(1, 4097)}
    order = sorted(d, key=d.get)
    assert d[order[6]] - d[order[5]] > 1e-3  # the six are not decided by rounding
    top = order[:6]
    assert [glued[f"fb_top{k}"] for k in range(6)] == top == [3665, 671, 2994, 1341, 670, 2012]
    for k in range(6):
        assert glued[f"fb_top{k}_d"] == pytest.approx(d[top[k]], abs=1e-9)
    assert top[2] == top[0] - top[1] and top[3] == 2 * top[1] - 1 == top[1] + top[4]
    assert glued["fb_twice"] == 2 * top[1] not in order[:6]
    assert glued["fb_twice_d"] == pytest.approx(d[2 * top[1]], abs=1e-9) and glued["fb_twice_d"] > glued["fb_top5_d"]


def test_distance_written_with_arguments(nb):
    """notation.md: D is written D(a, b) or D_min (a bare D is chapter 2's block-diagonal matrix), and phi_i is
    q_i's polar angle, so the computed phase is hat-alpha."""
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    maths = re.findall(r"\$\$.*?\$\$|\$[^$]+\$", prose, flags=re.S)
    bare = [m for m in maths if re.search(r"(?<![A-Za-z\\])D(?![(_A-Za-z])", m)]
    assert not bare, bare
    assert "\\varphi_i" not in prose and "\\hat\\alpha_i" in prose
    assert "D_\\text{min}" in prose


def test_one_meaning_for_mu_and_p_rope_cited(nb):
    """mu is ALiBi's slope book-wide (notation.md): chapter 3's mean vector is q-bar; p-RoPE is cited where named."""
    prose = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    assert not any("\\mu" in s for s in prose)
    assert any("\\bar q" in s for s in prose)
    named = [s for s in prose if "p-RoPE" in s]
    assert named and all("{cite}`barbero2025round`" in s[s.index("p-RoPE"):s.index("p-RoPE") + 60] for s in named)


def test_structure(nb):
    cells = nb["cells"]
    ladder = next(c for c in cells if "lam[[0, 1, 2, -2, -1]]" in "".join(c["source"]))
    shown = "".join("".join(o.get("data", {}).get("text/plain", "")) for o in ladder["outputs"])
    assert "6.28" in shown and "e+" not in shown  # the wavelengths print as numbers, not 6.280000e+00
    assert cells[0]["cell_type"] == "markdown" and "What you will be able to do" in "".join(cells[0]["source"])
    assert "hide-cell" in cells[1]["metadata"].get("tags", [])
    src = ["".join(c["source"]) for c in cells]
    labels = [s.split(":label: ")[1].split()[0] for s in src if s.startswith("```{exercise}")]
    assert len(labels) >= 4 and all(lab.startswith("ch03-") for lab in labels)
    for lab in labels:
        assert any(s.startswith("```{solution-start} " + lab) for s in src)
    # every glue reference in the prose was glued by a cell
    glued_names = {o["metadata"]["scrapbook"]["name"] for c in cells for o in c.get("outputs", [])
                   if o.get("metadata", {}).get("scrapbook")}
    used = set(re.findall(r"\{glue:text\}`([a-zA-Z0-9_]+)", "\n".join(src)))
    assert used <= glued_names, used - glued_names
    assert not any(o.get("output_type") == "error" for c in cells for o in c.get("outputs", []))


@given(d=st.integers(1, 512).map(lambda k: 2 * k), base=st.floats(2.0, 1e7), length=st.integers(2, 10**6))
def test_critical_dimension_property(d, base, length):
    """i_c = (d/2) ln(L/2 pi) / ln B splits the pairs exactly where slow_pairs does (away from ties)."""
    from ropegeo.frequencies import frequencies, slow_pairs

    crit = (d / 2) * math.log(length / (2 * math.pi)) / math.log(base)
    assume(abs(crit - round(crit)) > 1e-6)  # a pair exactly at one turn is a rounding tie
    closed = sum(1 for i in range(d // 2) if i > crit)
    assert closed == slow_pairs(frequencies(d, base), length)
