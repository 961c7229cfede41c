"""Chapter 8's glued numbers, each against an independent derivation, and its trained claims re-run
on a disjoint seed set (the chapter trains seeds 0-19 and reads the budget curve of seeds 0-19 from a
stored run; this file uses seeds 20 and up, 1000 and up for the budget curve)."""

import math
import re
from pathlib import Path

import mpmath
import nbformat
import numpy as np
import pytest
from glue import bounds_rounded_the_wrong_way as _bounds_rounded_the_wrong_way
from glue import read_glued

from ropegeo.toy.axial_heads import axial_scores, budget_study, split_study, train_axial_head
from ropegeo.base_bound import base_bound, base_sum
from ropegeo.multiaxis import axis_frequencies

NB = Path(__file__).resolve().parents[1] / "chapters" / "08_multi_axis.ipynb"
G, _ = read_glued(NB)


def close(name, value, rel=1e-9, abs_=1e-12):
    assert G[name] == pytest.approx(value, rel=rel, abs=abs_), name


# ---- M-RoPE by hand: transformers' blocked split of inv_freq = base ** (-arange(0, 128, 2) / 128) -------------

INV = [1e6 ** (-2 * i / 128) for i in range(64)]
BLOCKS = {"time": range(0, 16), "height": range(16, 40), "width": range(40, 64)}


def test_blocked_sections_frequencies_and_turns():
    for name, idx in BLOCKS.items():
        close(f"q2_{name}_pairs", len(idx))
        close(f"q2_{name}_fast", INV[idx[0]])
        close(f"q2_{name}_slow", INV[idx[-1]])
        close(f"q2_{name}_turns", INV[idx[0]] * 63 / (2 * math.pi))  # first patch to last: 63 steps
        mpmath.mp.dps = 40  # 1 - K(1) of the band in high precision, no cancellation
        gap = 1 - mpmath.fsum(mpmath.cos(mpmath.mpf(1e6) ** (-mpmath.mpf(2 * i) / 128)) for i in idx) / len(idx)
        close(f"q2_{name}_gap", float(gap), rel=1e-7)
    close("q2_extent", 64)
    close("q2_extent_last", 63)
    for name in ("height", "width"):  # the slow kernels at the last patch
        close(f"q2_{name}_k_last", math.fsum(math.cos(63 * INV[i]) for i in BLOCKS[name]) / len(BLOCKS[name]))
    assert 0.75 < G["q2_height_k_last"] < 0.85 and G["q2_width_k_last"] > 0.9999


def test_time_band_returns_first_at_its_local_maximum_and_the_others_never():
    def band_k(idx, d):
        return sum(math.cos(d * INV[i]) for i in idx) / len(idx)

    for name, idx in BLOCKS.items():
        ks = [band_k(idx, d) for d in range(0, 66)]
        peaks = [d for d in range(2, 65) if ks[d] >= ks[d - 1] and ks[d] >= ks[d + 1]]
        if name == "time":
            close("q2_time_return", peaks[0])
            close("q2_time_return_k", ks[peaks[0]])
            # the chapter calls it a plateau: the kernel changes by less than 0.02 over offsets 5 to 7
            close("q2_time_k5", ks[5])
            close("q2_time_k7", ks[7])
            assert peaks[0] == 6 and max(ks[5:8]) - min(ks[5:8]) < 0.02 and ks[4] - ks[5] > 0.04
        else:
            assert not peaks, name
    close("q2_no_return", 2)


def _signature(positions, theta):
    """Rotate one unit vector per pair: the signature of a position, pairs weighted equally."""
    p = np.asarray(positions, dtype=float)[:, None] * np.asarray(theta)[None, :]
    return np.concatenate([np.cos(p), np.sin(p)], axis=1) / math.sqrt(len(theta))


def _brute_margin(theta, extent):
    s = _signature(range(extent), theta)
    d = np.sqrt(((s[:, None, :] - s[None, :, :]) ** 2).sum(-1))
    return d[~np.eye(extent, dtype=bool)].min()


def _interleaved_axes():
    axes = [0] * 64
    for axis in (1, 2):
        for slot in range(axis, 60, 3):
            axes[slot] = axis
    return axes


@pytest.mark.parametrize("layout", ["blocked", "interleaved", "qwen3"])
def test_gate_b_margins_and_verdicts_by_brute_force(layout):
    axes = ([0] * 16 + [1] * 24 + [2] * 24) if layout == "blocked" else _interleaved_axes()
    # Qwen3-VL as shipped: base 5e6 (Qwen3-VL-8B's config.json: rope_theta 5000000, mrope_section [24, 20, 20])
    inv = [5e6 ** (-2 * i / 128) for i in range(64)] if layout == "qwen3" else INV
    threshold = _brute_margin(inv, 2)[()] / math.sqrt(2)  # D of a text step (all axes move) / sqrt 2
    if layout != "qwen3":
        close("gb_threshold", threshold, rel=1e-7)
    shares = []
    for a, name in enumerate(("time", "height", "width")):
        column = [t if ax == a else 0.0 for t, ax in zip(inv, axes)]
        m = _brute_margin(column, 64)
        rel = 1e-6 if m > 1e-4 else 1e-3  # the brute force subtracts nearly equal vectors
        if layout != "qwen3":
            close(f"gb_{layout}_{name}", m, rel=rel)
            assert G[f"gb_{layout}_{name}_status"] == ("pass" if m >= threshold else "fail")
        shares.append(m / threshold)
    # calibrated per axis: the threshold is the axis's own D(1) / sqrt 2, and no band returns within 32
    own = sum(_brute_margin([t if ax == a else 0.0 for t, ax in zip(inv, axes)], 64)
              >= _brute_margin([t if ax == a else 0.0 for t, ax in zip(inv, axes)], 2)[()] / math.sqrt(2) * (1 - 1e-3)
              for a in range(3))
    close(f"gb_{layout}_own_passes", own)
    assert own == 3 and sum(m >= threshold for m in np.array(shares) * threshold) <= 1
    if layout == "qwen3":
        close("gb_qwen3_worst_share", min(shares), rel=1e-6)
        close("gb_qwen3_text_passes", sum(x >= 1 for x in shares))
        assert abs(min(shares) - 1) > 1e-3  # no verdict on the text step sits at its threshold
        close("q3_base", 5e6)
    elif layout == "interleaved":
        close("gb_interleaved_worst_share", min(shares), rel=1e-6)
    else:
        close("gb_blocked_width_share", shares[2], rel=1e-3)
    close("gb_extent_last", 63)
    # needed sharpness / text head: the text step's squared neighbour distance over the axis's own
    for a, name in enumerate(("time", "height", "width")):
        column = [t if ax == a else 0.0 for t, ax in zip(inv, axes)]
        factor = (_brute_margin(inv, 2)[()] / _brute_margin(column, 2)[()]) ** 2
        close(f"gb_{layout}_{name}_sharper", factor, rel=1e-6)
    # the values the review derived independently (blocked 1.0 / 951 / 3.0e7; interleaved 2.1 / 3.2 / 4.8;
    # Qwen3-VL 2.0 / 3.2 / 5.1), to the digits the prose prints
    printed = {"blocked": ("1.0", "951", "3.0e+07"), "interleaved": ("2.1", "3.2", "4.8"), "qwen3": ("2.0", "3.2", "5.1")}
    fmt = ("{:.1f}", "{:,.0f}", "{:.1e}") if layout == "blocked" else ("{:.1f}",) * 3
    got = tuple(f.format(G[f"gb_{layout}_{n}_sharper"]) for f, n in zip(fmt, ("time", "height", "width")))
    assert got == printed[layout]


def test_axis_distance_weighting_and_the_identity():
    # D_a(1)^2 sums axis a's pairs, each weighted 2/d_head, the other pairs counting zero (notation.md): then the axes'
    # squared distances add up to the text step's, and the factor is D_text(1)^2 / D_a(1)^2. The band's own mean
    # (cell 6's 1 - K(1) of the band) is another normalisation and gives another factor.
    for layout, inv, axes in (("blocked", INV, [0] * 16 + [1] * 24 + [2] * 24), ("interleaved", INV, _interleaved_axes()),
                              ("qwen3", [5e6 ** (-2 * i / 128) for i in range(64)], _interleaved_axes())):
        sq = lambda ts: (2 / 128) * math.fsum(4 * math.sin(t / 2) ** 2 for t in ts)
        d_axis = [sq(t for t, ax in zip(inv, axes) if ax == a) for a in range(3)]
        d_text = sq(inv)
        assert math.fsum(d_axis) == pytest.approx(d_text, rel=1e-13)
        for a, name in enumerate(("time", "height", "width")):
            close(f"gb_{layout}_{name}_sharper", d_text / d_axis[a], rel=1e-9)
            band = [t for t, ax in zip(inv, axes) if ax == a]
            band_mean = math.fsum(4 * math.sin(t / 2) ** 2 for t in band) / len(band)
            if layout == "blocked":  # cell 6's gap: 1 - K(1) over the band's own pairs = D^2 / 2 of the band's mean
                close(f"q2_{name}_gap", band_mean / 2, rel=1e-9)
            if len(band) != 64:
                assert abs(G[f"gb_{layout}_{name}_sharper"] / (d_text / band_mean) - 1) > 0.1  # the other one
    assert f"{G['gb_blocked_width_sharper']:.2e}" == "3.01e+07"  # the review's value; 1.13e7 with the band's own mean
    notation = (NB.parents[1] / "notation.md").read_text()
    row = next(line for line in notation.splitlines() if line.startswith("| $D_a(1)^2$"))
    assert "weighted $2/d_\\text{head}$" in row and "counting zero" in row and "own pairs; " not in row
    prose = "".join(c.source for c in nbformat.read(NB, 4).cells if c.cell_type == "markdown")
    assert "each pair weighted $2/d_\\text{head}$, the other pairs counting\nzero" in prose
    assert "the mean taken over the band's own pairs alone" in prose


# ---- vision --------------------------------------------------------------------------------------------------


def test_axial_and_mixed_kernels_along_x_from_heo_et_al_formulas():
    dim = 64
    mag100 = 100.0 ** (-np.arange(0, dim, 4)[: dim // 4] / dim)  # compute_axial_cis
    mag10 = 10.0 ** (-np.arange(0, dim, 4)[: dim // 4] / dim)  # init_random_2d_freqs
    ang = math.pi / 8
    fx_mixed = np.concatenate([mag10 * math.cos(ang), mag10 * math.cos(math.pi / 2 + ang)])
    dx = np.arange(-16, 17)
    axial = [np.mean(np.concatenate([np.cos(d * mag100), np.ones(dim // 4)])) for d in dx]
    mixed = [np.mean(np.cos(d * fx_mixed)) for d in dx]
    close("axial_min_x", min(axial))
    close("mixed_min_x", min(mixed))
    close("vit_head", dim)
    close("mixed_angle_deg", 22.5)
    # like for like: the axial layout at base 10, the mixed one at base 100
    axial10 = [np.mean(np.concatenate([np.cos(d * mag10), np.ones(dim // 4)])) for d in dx]
    close("axial10_min_x", min(axial10))
    fx100 = np.concatenate([mag100 * math.cos(ang), mag100 * math.cos(math.pi / 2 + ang)])
    close("mixed100_min_x", min(np.mean(np.cos(d * fx100)) for d in dx))
    # along the mixed bank's own directions: one half of the pairs stands still, the axial floor at base 10
    fy_mixed = np.concatenate([mag10 * math.sin(ang), mag10 * math.sin(math.pi / 2 + ang)])
    for glued, u in (("mixed_min_phi", ang), ("mixed_min_phi90", ang + math.pi / 2)):
        along = [np.mean(np.cos(d * (fx_mixed * math.cos(u) + fy_mixed * math.sin(u)))) for d in dx]
        close(glued, min(along), rel=1e-9, abs_=1e-12)
        assert abs(min(along) - min(axial10)) < 1e-12
    # the chapter's comparisons: floors along the mixed directions, none along x
    assert G["mixed_min_x"] < 0 < G["axial10_min_x"] < G["axial_min_x"] and G["mixed100_min_x"] < G["axial_min_x"]


def test_rendered_bounds_never_pass_the_true_value():
    # "at or above 0.61" for a minimum of 0.6063 is false as written: a lower bound is rounded down
    prose = "".join(c.source for c in nbformat.read(NB, 4).cells if c.cell_type == "markdown")
    assert _bounds_rounded_the_wrong_way(prose, G) == []
    for name in ("axial_min_x", "axial10_min_x", "mixed100_min_x"):
        assert G[f"{name}_floor"] <= G[name] < G[f"{name}_floor"] + 0.01
        assert f"`{name}_floor:.2f`" in prose and f"at or above {{glue:text}}`{name}:" not in prose
    assert (G["axial_min_x_floor"], G["mixed100_min_x_floor"]) == (0.60, 0.34)  # the review's true minima 0.6063, 0.3491
    # the scan catches the old text (negative control)
    old = "stays at or above {glue:text}`axial_min_x:.2f` along $x$, every seed at {glue:text}`fine_ratio_low:.2f` or more"
    assert len(_bounds_rounded_the_wrong_way(old, G)) == 1 + (float(f"{G['fine_ratio_low']:.2f}") > G["fine_ratio_low"])
    assert _bounds_rounded_the_wrong_way("at most {glue:text}`axial10_min_x:.2f`", G)  # 0.38 < 0.3823


def test_axial_floor_far_out_from_the_factor_ten():
    # the solution to ch08-axial-floor: x pairs i and i + 8 of base 100, 64 wide, differ by exactly 10, so with alpha
    # the slower one's phase K(dx, 0) = 1/2 + 1/32 sum_i (cos alpha_i + cos 10 alpha_i), at least 1/2 + 1/4 min(...)
    mag = 100.0 ** (-np.arange(0, 64, 4) / 64)
    assert np.allclose(mag[:8], 10 * mag[8:], rtol=1e-13, atol=0)
    low = min(float((0.5 + (np.cos(np.multiply.outer(c, mag[8:])) + np.cos(10 * np.multiply.outer(c, mag[8:])))
                     .sum(axis=1) / 32).min()) for c in np.array_split(np.arange(1.0, 2e6 + 1), 80))
    close("axial_far_min", low, rel=1e-6)  # phases near 2e6 rad: both forms agree to ~1e-9
    # the bound: the stationary point of cos alpha + cos 10 alpha next to 9 pi / 10, by Newton on its derivative
    psi = mpmath.findroot(lambda t: mpmath.sin(t) + 10 * mpmath.sin(10 * t), 0.9 * mpmath.pi)
    bound = float(0.5 + (mpmath.cos(psi) + mpmath.cos(10 * psi)) / 4)
    grid = np.linspace(0, 2 * np.pi, 100_001)
    assert bound <= 0.5 + 0.25 * (np.cos(grid) + np.cos(10 * grid)).min() + 1e-12  # it is the minimum
    close("axial_floor_bound", bound, rel=1e-6)
    assert 0 < G["axial_floor_bound"] < G["axial_far_min"] < G["axial_min_x"]


def test_heo_et_al_reported_numbers():
    # naver-ai/rope-vit README, DeiT-III Base (400 epochs), ImageNet top-1 at 224 / 384 px
    reported = {"plain": (83.4, 82.8), "axial": (83.6, 83.9), "mixed": (83.8, 84.4)}
    for k, (a, b) in reported.items():
        close(f"heo_{k}_224", a)
        close(f"heo_{k}_384", b)


# ---- p-RoPE, Llama 4, base bound -----------------------------------------------------------------------------


def test_proportional_against_transformers_formula():
    head_dim, base, p = 512, 1e6, 0.25  # Gemma 4's full-attention layers
    rope_angles = int(p * head_dim // 2)  # transformers' _compute_proportional_rope_parameters
    close("p_rotating", rope_angles)
    close("p_slowest", base ** (-(2 * (rope_angles - 1)) / head_dim))
    close("partial_slowest", base ** (-(2 * (rope_angles - 1)) / (2 * rope_angles)))
    close("p_keep", p)
    close("p_head", head_dim)
    # Barbero et al. 2025, Table 2 (Gemma 2B from scratch, Wiki): 0.75-RoPE, 0.25-RoPE, RoPE, NoPE
    close("gemma_ppl_prope", 4.4414)
    close("gemma_ppl_prope25", 4.5302)
    close("gemma_ppl_rope", 4.4627)
    close("gemma_ppl_nope", 4.8594)
    # "dropping a quarter of the frequencies helped and dropping three quarters hurt"
    assert G["gemma_ppl_prope"] < G["gemma_ppl_rope"] < G["gemma_ppl_prope25"] < G["gemma_ppl_nope"]


def test_llama4_temperature_by_formula():
    def scale(pos):
        return math.log(math.floor((pos + 1.0) / 8192) + 1.0) * 0.1 + 1.0

    for name, pos in (("temp_first", 8190), ("temp_8k", 8191), ("temp_128k", 131_071), ("temp_1m", 1_048_575),
                      ("temp_10m", 10_485_759)):
        close(name, scale(pos))
    assert G["temp_first"] == 1.0 and G["temp_8k"] > 1.0


def test_band_supports_by_direct_sums():
    # text: Men et al.'s sum of the whole bank, evaluated by ropegeo.base_bound (another code path)
    m = np.arange(1, 40_000)
    s = base_sum(m, head_dim=128, base=1e6)
    close("bb_text", int(m[np.argmax(s < 0)]))
    for name in ("time", "height"):
        idx = BLOCKS[name]
        d = next(d for d in range(1, 5000) if math.fsum(math.cos(d * INV[i]) for i in idx) < 0)
        close(f"bb_{name}", d)
    width = np.array([INV[i] for i in BLOCKS["width"]])
    assert np.cos(np.multiply.outer(np.arange(1, 200_001.0), width)).sum(-1).min() > 0
    assert G["bb_width_verdict"] == "never do"
    # the unturned pairs outnumber the turning ones on every axis, so no axis can fail
    close("bb_axes_safe", sum(64 - len(idx) >= len(idx) for idx in BLOCKS.values()))
    close("bb_time_still", 48)
    close("bb_time_turning", 16)
    # one axis of RoPE-Axial: 16 pairs turn, 16 stand still and add 16, so the sum is never negative
    assert base_bound(1024, 64, rotary_dim=32).vacuous and G["vit_axis_verdict"] == "vacuous"


# ---- the grid task -------------------------------------------------------------------------------------------

THETA = [100.0 ** (-2 * i / 16) for i in range(8)]
ASSIGN = {"interleaved": [0, 1] * 4, "blocked": [0] * 4 + [1] * 4, "y starved, slow": [0] * 7 + [1],
          "y starved, fast": [1] + [0] * 7}
KEYS = {"interleaved": "il", "blocked": "bl", "y starved, slow": "slow", "y starved, fast": "fast"}


def _splits():
    return {name: axis_frequencies(THETA, np.array(a), 2) for name, a in ASSIGN.items()}


def test_slow_pair_against_qwen2vl_width_by_hand():
    # per step: the toy's slow y pair (pair 7 of base 100, 16 wide) against Qwen2-VL's fastest width pair (pair 40
    # of base 1e6, 128 wide): 10**-1.75 against 10**-3.75, exactly 100; a ramp's neighbour gap is linear in the
    # angle, a peak's quadratic; the total turns across each grid (7 and 63 steps) differ by 700 / 63
    slow, width = 100.0 ** (-14 / 16), 1e6 ** (-80 / 128)
    close("slow_step", slow)
    close("width_step", width)
    close("step_ratio", 100.0, rel=1e-12)
    close("peak_ratio", 1e4, rel=1e-12)
    close("turn_ratio", 700 / 63, rel=1e-12)


def test_edge_row_accuracy_by_enumeration():
    # queries whose target (x + 2, y + 3) lies on the 8 x 8 grid, and those whose target is in the last row
    queries = [(x, y) for x in range(8) for y in range(8) if x + 2 < 8 and y + 3 < 8]
    last = [q for q in queries if q[1] + 3 == 7]
    close("grid_queries", len(queries))
    close("edge_right", len(last))
    close("edge_accuracy", len(last) / len(queries))
    close("toy_slow_accuracy_mean", len(last) / len(queries))  # the slow split picks the last row in every seed


def test_grid_gate_b_margins_by_brute_force():
    threshold = _brute_margin(THETA, 2)[()] / math.sqrt(2)
    close("toy_threshold", threshold, rel=1e-7)
    fails = 0
    for name, a in ASSIGN.items():
        column = [t if ax == 1 else 0.0 for t, ax in zip(THETA, a)]
        m = _brute_margin(column, 8)
        close(f"toy_y_margin_{KEYS[name]}", m, rel=1e-6)
        fails += m < threshold
    close("toy_y_fails", fails)
    own = [_brute_margin(c, 8) < _brute_margin(c, 2)[()] / math.sqrt(2)
           for c in ([t if ax == 1 else 0.0 for t, ax in zip(THETA, a)] for a in ASSIGN.values())]
    close("toy_y_own_fails", sum(own))
    assert own == [False, False, False, True]  # only the split whose one fast y pair returns within 8
    # why each split fails on the text step: y's share of the step's squared distance, sum (1 - cos) by hand
    share = {n: math.fsum(1 - math.cos(t) for t, ax in zip(THETA, a) if ax == 1) / math.fsum(1 - math.cos(t) for t in THETA)
             for n, a in ASSIGN.items()}
    for name in ASSIGN:
        close(f"toy_y_share_{KEYS[name]}", share[name], rel=1e-9)
    # "in three by construction": below one half, y's margin (at most its own D_y(1)) cannot reach the threshold
    short = [n for n in ASSIGN if share[n] < 0.5]
    assert short == ["interleaved", "blocked", "y starved, slow"] and G["toy_y_short"] == len(short) == 3
    for n in short:
        assert G[f"toy_y_margin_{KEYS[n]}"] <= math.sqrt(share[n]) * threshold * math.sqrt(2) * (1 + 1e-9) < threshold
    assert [f"{share[n]:{f}}" for n, f in zip(short, (".2f", ".3f", ".4f"))] == ["0.25", "0.011", "0.0002"]
    # the fast pair: y carries 0.67 > 1/2, so its neighbours are clear of the threshold; the margin comes from a
    # near-return, the offsets 6 rows apart (1 radian per row: 6 radians is 0.28 short of a turn)
    assert share["y starved, fast"] > 0.5 and f"{share['y starved, fast']:.2f}" == "0.67"
    fast = [t if ax == 1 else 0.0 for t, ax in zip(THETA, ASSIGN["y starved, fast"])]
    gaps = {k: _brute_margin([t * k for t in fast], 2)[()] for k in range(1, 8)}  # distance of offsets k apart
    assert min(gaps, key=gaps.get) == G["toy_y_return_gap"] == 6
    close("toy_y_margin_fast", gaps[6], rel=1e-6)
    assert gaps[1] > threshold > gaps[6] and f"{G['toy_y_margin_fast']:.4f}" == "0.0998"
    # the factor for y: the text step's squared neighbour distance over y's own, from 1 - cos by hand
    text = math.fsum(1 - math.cos(t) for t in THETA)
    for name, a in ASSIGN.items():
        close(f"toy_y_sharper_{KEYS[name]}", text / math.fsum(1 - math.cos(t) for t, ax in zip(THETA, a) if ax == 1),
              rel=1e-9)
    close("toy_splits", 4)
    for name, value in (("grid_side", 8), ("grid_last", 7), ("task_dx", 2), ("task_dy", 3), ("toy_pairs", 8),
                        ("toy_steps", 300), ("toy_seeds", 20), ("budget_seeds", 20), ("budget_last", 3200)):
        close(name, value)
    assert G["range_seeds"] == "20–39" and G["range_seeds_far"] == "3000–3019"


def test_glued_spreads_are_consistent():
    for key in KEYS.values():
        for field in ("accuracy", "target_mass"):
            lo, mid, hi = (G[f"toy_{key}_{field}_{s}"] for s in ("min", "mean", "max"))
            assert 0 <= lo <= mid + 1e-12 and mid <= hi + 1e-12 and hi <= 1


@pytest.fixture(scope="module")
def disjoint_study():
    return split_study(_splits(), seeds=range(20, 40), target=(2, 3), grid=(8, 8), steps=300)


def test_split_direction_on_disjoint_seeds(disjoint_study):
    mass = {n: r["target_mass"] for n, r in disjoint_study.items()}
    # the chapter: the slow split fails, the others keep the target; interleaved best, then the fast pair, then blocked
    assert G["toy_slow_target_mass_max"] < 0.5 and mass["y starved, slow"].max() < 0.5
    assert G["toy_bl_accuracy_min"] == 1.0 and disjoint_study["blocked"]["accuracy"].min() == 1.0
    assert G["toy_slow_accuracy_mean"] < 0.5 and disjoint_study["y starved, slow"]["accuracy"].mean() < 0.5
    assert mass["blocked"].mean() < mass["y starved, fast"].mean() < mass["interleaved"].mean()
    assert G["toy_bl_target_mass_mean"] < G["toy_fast_target_mass_mean"] < G["toy_il_target_mass_mean"]
    # Gate B's y margins order the splits as the trained heads do
    margin = {n: G[f"toy_y_margin_{KEYS[n]}"] for n in ASSIGN}
    assert sorted(ASSIGN, key=margin.get) == sorted(ASSIGN, key=lambda n: mass[n].mean())
    assert G["order_agrees"] == "the same order"


def _confusion(study, passes):
    success = {n: bool(np.min(study[n]["accuracy"]) == 1.0) for n in ASSIGN}
    return {key: sum(passes[n] == said and success[n] == got for n in ASSIGN)
            for key, (said, got) in {"tp": (True, True), "fp": (True, False), "fn": (False, True),
                                     "tn": (False, False)}.items()}


def test_per_axis_verdict_and_factor_against_training_on_disjoint_seeds(disjoint_study):
    # the per-axis verdict on y (brute force above: only the fast split fails) against trained success
    passes = {n: n != "y starved, fast" for n in ASSIGN}
    counts = _confusion(disjoint_study, passes)
    assert counts == {"tp": 2, "fp": 1, "fn": 1, "tn": 0}
    for key, n in counts.items():
        close(f"own_{key}", n)
    # a negative control: a verdict that passed exactly the successes would count no error
    perfect = {n: bool(np.min(disjoint_study[n]["accuracy"]) == 1.0) for n in ASSIGN}
    assert _confusion(disjoint_study, perfect) == {"tp": 3, "fp": 0, "fn": 0, "tn": 1}
    # the factor orders accuracies in every pair and the attention in all but interleaved / fast
    factor = {n: G[f"toy_y_sharper_{KEYS[n]}"] for n in ASSIGN}
    pairs = [(a, b) for a in ASSIGN for b in ASSIGN if factor[a] < factor[b]]
    acc = {n: disjoint_study[n]["accuracy"].mean() for n in ASSIGN}
    mass = {n: disjoint_study[n]["target_mass"].mean() for n in ASSIGN}
    close("factor_pairs", len(pairs))
    assert sum(acc[a] >= acc[b] for a, b in pairs) == len(pairs)
    # "in 3 of the 3 pairs whose accuracies differ": the others tie at accuracy 1 (the slow split is in every
    # untied pair, and has the largest factor)
    untied = [(a, b) for a, b in pairs if acc[a] != acc[b]]
    assert len(untied) == 3 and all(b == "y starved, slow" for _, b in untied)
    close("factor_untied", len(untied))
    close("factor_accuracy_agree", sum(acc[a] > acc[b] for a, b in untied))
    swapped = [(a, b) for a, b in pairs if not mass[a] > mass[b]]
    assert swapped == [("y starved, fast", "interleaved")] and G["factor_mass_agree"] == len(pairs) - 1
    assert 0 < G["il_fast_gap"] < 0.02 and 0 < mass["interleaved"] - mass["y starved, fast"] < 0.02
    close("il_fast_gap", G["toy_il_target_mass_mean"] - G["toy_fast_target_mass_mean"], rel=1e-9)


def test_ranges_move_less_than_stated_on_disjoint_seeds(disjoint_study):
    # "on another 20 seeds each end moved by less than range_shift"
    shift = G["range_shift"]
    assert len(disjoint_study["blocked"]["target_mass"]) == 20
    for name, key in KEYS.items():
        mass = disjoint_study[name]["target_mass"]
        assert abs(mass.min() - G[f"toy_{key}_target_mass_min"]) < shift, name
        assert abs(mass.max() - G[f"toy_{key}_target_mass_max"]) < shift, name
    # "accuracy 0.20 in every seed" of the slow split
    assert G["toy_slow_accuracy_min"] == G["toy_slow_accuracy_max"] == 0.2
    assert np.all(disjoint_study["y starved, slow"]["accuracy"] == 0.2)


def test_ranges_on_a_far_seed_set(disjoint_study):
    # "on seeds 20-39 each end moved by less than range_shift, but on seeds 3000-3019 the blocked split's upper end
    # moved by range_shift_far (every other end by less than range_shift)": both glued from the chapter's own
    # re-runs (no constants); here the ends are re-trained and compared with the glued ends of seeds 0-19
    far = split_study(_splits(), seeds=range(3000, 3020), target=(2, 3), grid=(8, 8), steps=300)
    moved = [{(name, end): abs(getattr(s[name]["target_mass"], end)() - G[f"toy_{key}_target_mass_{end}"])
              for name, key in KEYS.items() for end in ("min", "max")} for s in (disjoint_study, far)]
    top = moved[1].pop(("blocked", "max"))
    largest = max(max(m.values()) for m in moved)
    close("range_shift_far", top, rel=0, abs_=1e-9)
    close("range_shift", math.floor(100 * largest) / 100 + 0.01)
    assert largest < G["range_shift"] < top and f"{G['range_shift']:.2f}" == "0.02"  # the review: 0.011 at most
    prose = re.sub(r"\s+", " ", "".join(c.source for c in nbformat.read(NB, 4).cells if c.cell_type == "markdown"))
    assert "moved by {glue:text}`range_shift_far:.3f`" in prose and "by less than {glue:text}`range_shift`" in prose


def _ramp_and_pick(head):
    """Independent of evaluate_axial: the score table by loops over (query, key), the column read key by key."""
    scores = axial_scores(head)
    gx, gy = head.grid
    patch = [(x, y) for y in range(gy) for x in range(gx)]
    column = {}
    picks_last_row = True
    for qi, (x, y) in enumerate(patch):
        if x + 2 >= gx:
            continue
        for ki, (kx, ky) in enumerate(patch):
            if kx == x + 2:
                column[ky - y] = scores[qi, ki]  # the score depends on the offset only: every row offset -7..7
        if y + 3 < gy:  # a training query: its target lies on the grid
            best = max((k for k in range(len(patch)) if k != qi), key=lambda k: scores[qi, k])
            picks_last_row &= patch[best] == (x + 2, gy - 1)
    offsets = sorted(column)
    ramp = all(column[b] > column[a] for a, b in zip(offsets, offsets[1:]))
    return ramp, picks_last_row


def test_slow_split_ramp_on_disjoint_seeds():
    # "in 20 of 20 seeds (20 of 20 on seeds 20-39) its score rises with the key's row ... every query's largest
    # attention goes to the last row"; "0 of 60 heads of the other splits (0 of 60 on seeds 20-39)": re-derived by
    # loops over the score table (not evaluate_axial), on all 20 disjoint seeds of every split (80 heads, ~10 s)
    splits = _splits()
    seeds = range(20, 40)
    assert G["range_seeds"] == "20–39"
    slow = [_ramp_and_pick(train_axial_head(splits["y starved, slow"], seed=s)) for s in seeds]
    close("slow_ramp_seeds_disjoint", sum(r for r, _ in slow))
    close("slow_edge_seeds_disjoint", sum(p for _, p in slow))
    others = [_ramp_and_pick(train_axial_head(splits[n], seed=s))[0] for n in ("interleaved", "blocked", "y starved, fast")
              for s in seeds]
    close("other_ramp_seeds_disjoint", sum(others))
    close("other_ramp_heads", 60)
    assert len(others) == G["other_ramp_heads"]
    # the counts the prose states, on both seed sets: every slow head ramps and picks the last row, no other head ramps
    for tag in ("", "_disjoint"):
        assert G[f"slow_ramp_seeds{tag}"] == G[f"slow_edge_seeds{tag}"] == 20 and G[f"other_ramp_seeds{tag}"] == 0


def test_mechanism_counts_on_disjoint_seeds(disjoint_study):
    # "most of the attention that misses the target lands on the target's column": 20 of 20 seeds, both splits, on
    # seeds 0-19 and on seeds 20-39 (the chapter counts both; this re-trains 20-39)
    for name, glued in (("y starved, slow", "slow_column_seeds"), ("blocked", "blocked_column_seeds")):
        r = disjoint_study[name]
        count = int(np.sum(r["same_x_mass"] > 0.5 * (1.0 - r["target_mass"])))
        close(f"{glued}_disjoint", count)
        close("again_seeds", len(r["same_x_mass"]))
        assert G[glued] == count == len(r["same_x_mass"]) == 20, name


def test_review_wording():
    prose = re.sub(r"\s+", " ", "".join(c.source for c in nbformat.read(NB, 4).cells if c.cell_type == "markdown"))
    assert "`budget_bl_below_min:.3f`, sits just below the cut)" in prose  # 0.4815: below, not within 1e-3
    assert G["budget_bl_below_min"] < 0.5 - 1e-3
    assert "No band returns within" not in prose and "No band comes back within $D_a(1)/\\sqrt 2$" in prose
    assert "number of keys attended" in prose and "$\\log n$" not in prose and "2501.19399" in prose
    assert "$t$ gets id" not in prose and "8t/3" not in prose and "\\varphi" not in prose
    assert "n_0\\,2\\pi + \\sum_i n_i\\theta_i" in prose  # Kronecker for integer offsets: 2 pi joins the frequencies
    assert "as it must by construction" not in prose and "`toy_y_return_gap`" in prose


def test_budget_direction_on_disjoint_seeds():
    splits = _splits()
    budgets = [200, 300, 400, 800, 1600, 3200]  # one run per seed, read at each budget: 300 costs nothing
    curves = {n: budget_study(splits[n], budgets, seeds=range(1000, 1020), target=(2, 3), grid=(8, 8))
              for n in ("blocked", "y starved, slow")}
    slow, blocked = curves["y starved, slow"]["target_mass"], curves["blocked"]["target_mass"]
    # the chapter: every blocked seed above one half from 400 steps, the slow split only later; both get there by 3200
    assert G["budget_bl_half"] == 400 and blocked[2].min() >= 0.5
    assert G["budget_slow_half"] > 400 and slow[2].max() < 0.5
    # "on seeds budget_check_seeds it stays above budget_slow_floor"
    assert G["budget_check_seeds"] == "1000–1019" and G["budget_slow_floor"] == 0.8
    assert G["budget_slow_last_min"] > G["budget_slow_floor"] and slow[-1].min() > G["budget_slow_floor"]

    # the bracket: on the new seeds each split first has every seed at one half between the same two budgets
    def crossing(m):
        i = int(np.flatnonzero(m.min(axis=1) >= 0.5)[0])
        return budgets[i - 1], budgets[i]

    (bl_lo, bl_hi), (sl_lo, sl_hi) = crossing(blocked), crossing(slow)
    # the chapter's blocked crossing is (200, 300]: the doubling grid's (200, 400] narrowed by the 300-step study
    assert (bl_lo, bl_hi) == (G["budget_bl_below"], G["toy_steps"])
    assert (sl_lo, sl_hi) == (G["budget_slow_below"], G["budget_slow_half"])
    close("budget_ratio_low", sl_lo / bl_hi)
    close("budget_ratio_high", sl_hi / bl_lo)


def test_adam_scaling_prediction_against_the_bracket():
    # y's fastest pair in the blocked split (pair 4 of base 100) against the slow split's (pair 7)
    w_blocked, w_slow = 100.0 ** (-8 / 16), 100.0 ** (-14 / 16)
    close("w_blocked", w_blocked)
    close("w_slow", w_slow)
    close("adam_ramp", math.sqrt(w_blocked / w_slow))
    close("adam_peak", w_blocked / w_slow)
    # all of y's pairs: the square root of the ratio of Gate B's factors, D_y(1)^2 = sum 2 (1 - cos theta) over
    # y's pairs (the text-step distance is the same bank in both splits and cancels)
    theta = 100.0 ** (-2 * np.arange(8) / 16)
    curv = {name: sum(2 * (1 - math.cos(t)) for t in theta[np.array(a) == 1]) for name, a in ASSIGN.items()}
    close("adam_factor", math.sqrt(curv["blocked"] / curv["y starved, slow"]), rel=1e-9)
    # the bracket: (800, 1600] for the slow split over (200, 300] for the blocked one
    close("budget_ratio_low", 800 / 300)
    close("budget_ratio_high", 1600 / 200)
    # the peak predictions fall inside it; the ramp's falls below it (predictions that could have failed)
    for name in ("adam_peak", "adam_factor"):
        assert G["budget_ratio_low"] <= G[name] <= G["budget_ratio_high"], name
    assert G["adam_ramp"] < G["budget_ratio_low"]


def test_blocked_crossing_from_the_300_step_study():
    # the 300-step study (seeds 0-19, the budget run's seeds) has every blocked seed past one half; the stored
    # run's 200-step minimum sits on the cut, below it
    assert G["budget_bl_study_min"] >= 0.5
    close("budget_bl_study_min", G["toy_bl_target_mass_min"])
    from ropegeo.toy.budget_curves import load_run
    run = load_run("axial_budget")
    at = run["settings"]["budgets"].index(200)
    close("budget_bl_below_min", min(run["curves"]["blocked"]["target_mass"][at]))
    assert 0.45 < G["budget_bl_below_min"] < 0.5


def test_budget_bracket_from_the_stored_record():
    from ropegeo.toy.budget_curves import load_run
    run = load_run("axial_budget")
    b = run["settings"]["budgets"]
    for key, name in (("bl", "blocked"), ("slow", "y starved, slow")):
        lows = [min(row) for row in run["curves"][name]["target_mass"]]
        first = next(i for i, v in enumerate(lows) if v >= 0.5)
        assert first > 0 and lows[first - 1] < 0.5
        close(f"budget_{key}_half", b[first])
        close(f"budget_{key}_below", b[first - 1])


# ---- the stored budget run: what this machine re-trains, seed by seed, to the spread training allows ----------

#: How far one seed's attention on the target may move when another CPU or BLAS kernel rounds the
#: training's last digits: measured up to 2.6e-4 after 3,200 Adam steps (AVX-512 against
#: NPY_DISABLE_CPU_FEATURES=X86_V4 and OPENBLAS_CORETYPE=Prescott), below 1e-12 up to 1,600 steps.
TRAINING_SPREAD = 1e-3


#: The stored seeds this file re-trains (a quarter of them: the whole curve of each, every budget).
RETRAINED = [0, 7, 13, 19]


def _record_disagreements(stored: dict, rerun: dict, spread: float = TRAINING_SPREAD) -> list[str]:
    """Where a re-run of some stored seeds disagrees with the stored run: a seed's target mass beyond
    ``spread``, or its accuracy at all (accuracy counts queries: a seed that flips one is a different result)."""
    seeds = rerun["settings"]["seeds"]
    columns = [stored["settings"]["seeds"].index(s) for s in seeds]
    out = []
    for name, c in stored["curves"].items():
        for field, tol in (("target_mass", spread), ("accuracy", 0.0)):
            a, b = np.array(c[field]), np.array(rerun["curves"][name][field])
            if a.ndim != 2 or a.shape[0] != b.shape[0] or a.shape[1] <= max(columns):
                out.append(f"{name} {field}: stored shape {a.shape}, re-run {b.shape}")
                continue
            a = a[:, columns]
            for i, j in zip(*np.nonzero(np.abs(a - b) > tol)):
                out.append(f"{name} {field} at budget {stored['settings']['budgets'][i]}, seed {seeds[j]}: "
                           f"stored {a[i, j]:.6f}, re-run {b[i, j]:.6f}")
    return out


@pytest.fixture(scope="module")
def budget_run():
    import sys
    sys.path.insert(0, str(NB.parents[1] / "scripts"))
    from make_axial_budget import SETTINGS, axial_budget

    from ropegeo.toy.budget_curves import load_run
    stored = load_run("axial_budget")
    rerun = axial_budget(stored["settings"], seeds=RETRAINED)
    rerun["settings"] = {**stored["settings"], "seeds": RETRAINED}
    return stored, SETTINGS, rerun


def test_stored_budget_run_is_what_the_code_trains(budget_run):
    stored, settings, rerun = budget_run
    assert stored["settings"] == settings  # the script's settings are the stored ones
    # the splits the chapter defines (cell "grid, target, toy_steps") are the ones the run trained
    assert {n: a for n, a in stored["settings"]["assignments"].items()} == {n: list(ASSIGN[n]) for n in stored["curves"]}
    assert _record_disagreements(stored, rerun) == []


def test_stored_budget_check_fails_a_changed_record(budget_run):
    stored, _, rerun = budget_run
    import copy
    for field, delta in (("target_mass", 5 * TRAINING_SPREAD), ("accuracy", 1 / 30)):
        forged = copy.deepcopy(stored)
        forged["curves"]["y starved, slow"][field][-1][RETRAINED[1]] += delta
        assert len(_record_disagreements(forged, rerun)) == 1, field
    fewer = copy.deepcopy(stored)
    fewer["curves"]["blocked"]["target_mass"] = fewer["curves"]["blocked"]["target_mass"][:-1]  # a budget lost
    assert _record_disagreements(fewer, rerun)


def test_stated_settings_match_their_sources():
    # the lab's cell: the lab's threshold as stated is the lab's default
    from ropegeo.book.widgets.axes_lab import AxesLab
    import nbformat
    nb = nbformat.read(NB, as_version=4)
    cell = {marker: next(c.source for c in nb.cells if marker in c.source)  # found by content, not by index
            for marker in ("## Lab: the 2D kernel", "# Gemma 4's full-attention layers", "d_vit = 64")}
    assert AxesLab.DEFAULTS["threshold"] == 0.9 and "(0.9 by default)" in cell["## Lab: the 2D kernel"]
    # Gemma 4's full-attention settings as the config corpus holds them (transformers' Gemma4TextConfig)
    from config_corpus import config
    gemma4 = config("gemma4_text")
    full = gemma4["rope_parameters"]["full_attention"]
    assert full["rope_type"] == "proportional"
    assert "rho, d_p, base_p = 0.25, 512, 1e6" in cell["# Gemma 4's full-attention layers"]
    assert (full["partial_rotary_factor"], gemma4["global_head_dim"], full["rope_theta"]) \
        == (0.25, 512, 1e6)
    # the kernel map compares the axial layout at both bases with the mixed one
    assert '"RoPE-Axial (base 10)": axial_bank(d_vit, 10.0)' in cell["d_vit = 64"]


# ---- the fine-grid crossings (stored run axial_crossing): read back, re-trained in part, disjoint seeds ------

def _first_all_above(masses, budgets):
    """The budget before, and the first budget at which, every seed (columns) has target mass >= 0.5."""
    for i, row in enumerate(masses):
        if min(row) >= 0.5:
            return budgets[i - 1], budgets[i]
    raise AssertionError("no budget has every seed at one half")


def _robust_bracket(masses, budgets, spread=TRAINING_SPREAD):
    """As _first_all_above, but a budget whose lowest seed lies within ``spread`` of one half counts on either side."""
    lows = [min(row) for row in masses]
    first = next(i for i, low in enumerate(lows) if low >= 0.5)
    surely_below = max(i for i in range(first) if lows[i] <= 0.5 - spread)
    surely_above = min(i for i in range(first, len(lows)) if lows[i] >= 0.5 + spread)
    return budgets[surely_below], budgets[surely_above], budgets[first - 1]


def test_crossing_widens_only_on_the_cut():
    from ropegeo.toy.axial_heads import crossing
    assert crossing([[0.4, 0.6], [0.48, 0.7], [0.6, 0.8]], [10, 20, 30]) == (20, 30, False)
    assert crossing([[0.4, 0.6], [0.4995, 0.7], [0.6, 0.8]], [10, 20, 30]) == (10, 30, True)
    assert crossing([[0.4, 0.6], [0.48, 0.7], [0.5004, 0.8], [0.6, 0.9]], [10, 20, 30, 40]) == (20, 40, True)
    with pytest.raises(ValueError):
        crossing([[0.6, 0.7]], [10])


def test_fine_crossings_from_the_stored_record():
    from ropegeo.toy.budget_curves import load_run
    run = load_run("axial_crossing")
    s = run["settings"]
    assert s["assignments"] == {"blocked": ASSIGN["blocked"], "y starved, slow": ASSIGN["y starved, slow"]}
    assert set(s["seeds"]).isdisjoint(s["disjoint_seeds"]) and len(s["seeds"]) == len(s["disjoint_seeds"]) == 20
    close("fine_seeds", 20)
    # "every 5 steps around the blocked split's crossing and every 25 around the slow split's", "seeds 2000-2019"
    assert (G["fine_every_bl"], G["fine_every_slow"]) == (5, 25)
    assert set(np.diff(s["budgets"]["blocked"])) == {5} and set(np.diff(s["budgets"]["y starved, slow"])) == {25}
    assert G["fine_other_seeds"] == "2000–2019" and s["disjoint_seeds"] == list(range(2000, 2020))
    ratios = {}
    for tag, key in (("", "seeds"), ("_disjoint", "disjoint_seeds")):
        bl = _robust_bracket(run["curves"]["blocked"][key]["target_mass"], s["budgets"]["blocked"])
        sl = _robust_bracket(run["curves"]["y starved, slow"][key]["target_mass"], s["budgets"]["y starved, slow"])
        # the blocked crossing is clear of the cut; the slow one sits on it at 1,475 in both sets ("about 1,475-1,500")
        assert bl[:2] == _first_all_above(run["curves"]["blocked"][key]["target_mass"], s["budgets"]["blocked"])
        assert sl[2] == G["fine_slow_cut"] == 1475 and (sl[0], sl[1]) == (1450, 1500)
        for name, value in (("bl_below", bl[0]), ("bl_half", bl[1]), ("slow_below", sl[0]), ("slow_half", sl[1])):
            close(f"fine_{name}{tag}", value)
        close(f"fine_ratio_low{tag}", sl[0] / bl[1])
        close(f"fine_ratio_high{tag}", sl[1] / bl[0])
        ratios[key] = (sl[0] / bl[1], sl[1] / bl[0])
        # the fine crossings sit inside the coarse bracket: (200, 300] and (800, 1600]
        assert 200 <= bl[0] and bl[1] <= 300 and 800 <= sl[0] and sl[1] <= 1600
    every = [r for pair in ratios.values() for r in pair]
    for name in ("adam_peak", "adam_factor"):
        close(f"{name}_short_min", 1 - G[name] / min(every))
        close(f"{name}_short_max", 1 - G[name] / max(every))
    # the claims: the fastest pairs' prediction falls below every ratio; the factor's square root lies at the lower
    # end of the first set's bracket (inside it, in its lowest tenth) and below the second's, by up to a tenth
    assert G["adam_ramp"] < G["adam_peak"] < min(every) and 0.15 < G["adam_peak_short_min"]
    low, high = ratios["seeds"]
    assert low <= G["adam_factor"] <= low + 0.1 * (high - low)
    assert G["adam_factor"] < ratios["disjoint_seeds"][0] and G["adam_factor_short_max"] < 0.11


def test_fine_crossings_retrained():
    # re-train two stored seeds of each set, every budget of both splits, to the spread training allows
    # (below 1e-12 up to 1,600 steps), and the accuracy exactly
    import sys
    sys.path.insert(0, str(NB.parents[1] / "scripts"))
    from make_axial_crossing import SETTINGS, axial_crossing
    from ropegeo.toy.budget_curves import load_run
    stored = load_run("axial_crossing")
    assert stored["settings"] == SETTINGS
    picks = {"seeds": [0, 13], "disjoint_seeds": [2000, 2019]}
    for key, seeds in picks.items():
        rerun = axial_crossing(SETTINGS, seeds=seeds)["curves"]
        for name in SETTINGS["assignments"]:
            cols = [SETTINGS[key].index(sd) for sd in seeds]
            for field, tol in (("target_mass", TRAINING_SPREAD), ("accuracy", 0.0)):
                want = np.array(stored["curves"][name][key][field])[:, cols]
                got = np.array(rerun[name][key][field])
                assert np.max(np.abs(got - want)) <= tol, (name, key, field)


# ---- the figures' keys: one per figure, clear of the data it explains -----------------------------------------

def _points_under_legend(fig):
    """Every plotted point (line vertices, scatter offsets) of fig that falls inside a legend's box, in pixels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig).draw()
    hits = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent()
        pts = [ax.transData.transform(line.get_xydata()) for line in ax.get_lines()]
        pts += [ax.transData.transform(c.get_offsets()) for c in ax.collections if len(c.get_offsets())]
        for p in pts:
            hits += [tuple(q) for q in p if box.contains(*q)]
    return hits


def test_chapter_figures_keys_do_not_cover_their_data():
    from ropegeo.book.plots.multiaxis import axis_kernel_figure, section_figure
    from ropegeo.multiaxis import mrope_bank
    F2 = mrope_bank(128, 1e6, (16, 24, 24))
    F3 = mrope_bank(128, 1e6, (24, 20, 20), round_robin=True)
    kernels = axis_kernel_figure(F2, 64, title="Qwen2-VL")
    assert _points_under_legend(kernels) == []
    sections = section_figure({"blocked": F2, "interleaved": F3})
    assert sum(ax.get_legend() is not None for ax in sections.axes) == 1  # one key for both panels
    assert _points_under_legend(sections) == []
    # a negative control: the key where the kernel figure used to put it (lower left) covers the time curve
    kernels.axes[0].legend(loc="lower left")
    assert _points_under_legend(kernels)


def test_factor_rule_shortfall_on_seeds_1000_to_1019():
    # "on seeds 1000-1019, where the slow split has every seed past one half only from far_slow_half steps,
    # far_short_min to far_short_max low": re-trained here on the stored run's fine grids (deterministic to 1e-12
    # up to 1,600 steps, so the crossings are exact)
    import sys
    sys.path.insert(0, str(NB.parents[1] / "scripts"))
    from make_axial_crossing import SETTINGS
    assert G["far_seeds"] == "1000–1019"
    seeds = range(1000, 1020)
    assert set(seeds).isdisjoint(SETTINGS["seeds"]) and set(seeds).isdisjoint(SETTINGS["disjoint_seeds"])
    splits = _splits()
    cross = {}
    for name in ("blocked", "y starved, slow"):
        b = SETTINGS["budgets"][name]
        r = budget_study(splits[name], b, seeds=seeds, target=(2, 3), grid=(8, 8))
        cross[name] = _first_all_above(r["target_mass"], b)
        assert _robust_bracket(r["target_mass"], b)[:2] == cross[name], name  # neither crossing sits on the cut
        if name == "y starved, slow":  # the median seed's ratio on these seeds (the blocked median on a 5-step grid)
            med = list(range(100, 205, 5))
            bl_med = _median_bracket(budget_study(splits["blocked"], med, seeds=seeds, target=(2, 3), grid=(8, 8))
                                     ["target_mass"], med)
            sl_med = _median_bracket(r["target_mass"], b)
            close("med_ratio_low_far", sl_med[0] / bl_med[1])
            close("med_ratio_high_far", sl_med[1] / bl_med[0])
    (bl_lo, bl_hi), (sl_lo, sl_hi) = cross["blocked"], cross["y starved, slow"]
    close("far_slow_half", sl_hi)
    # the square root of the factors' ratio, from the brute-force curvature of test_adam_scaling_prediction...
    theta = 100.0 ** (-2 * np.arange(8) / 16)
    curv = {name: sum(2 * (1 - math.cos(t)) for t in theta[np.array(a) == 1]) for name, a in ASSIGN.items()}
    factor = math.sqrt(curv["blocked"] / curv["y starved, slow"])
    close("far_short_min", 1 - factor / (sl_lo / bl_hi), rel=1e-9)
    close("far_short_max", 1 - factor / (sl_hi / bl_lo), rel=1e-9)
    # the claim's direction: the rule under-predicts here too, and by more than on the chapter's two sets
    assert 0 < G["far_short_min"] < G["far_short_max"] and G["adam_factor_short_max"] < G["far_short_max"]
    # "the better of the two rules": the fastest pairs' prediction falls further short on these seeds as well
    peak = 100.0 ** (-8 / 16) / 100.0 ** (-14 / 16)
    assert 1 - peak / (sl_hi / bl_lo) > G["far_short_max"]


# ---- the fourth review's items ----------------------------------------------------------------------------------


def test_time_band_far_out_mostly_below_zero():
    # "from offset 20 to 63 it is negative at ... of the offsets, with a mean of ..., down to ...": by math.cos
    ks = [math.fsum(math.cos(d * INV[i]) for i in BLOCKS["time"]) / 16 for d in range(20, 64)]
    close("q2_time_far_from", 20)
    close("q2_time_far_min", min(ks), rel=1e-9)
    close("q2_time_far_mean", math.fsum(ks) / len(ks), rel=1e-9)
    close("q2_time_far_below", sum(k < 0 for k in ks) / len(ks))
    assert G["q2_time_far_below"] > 0.9 and G["q2_time_far_mean"] < -0.1 and max(ks) > 0  # mostly, not always
    cells = nbformat.read(NB, 4).cells
    prose = re.sub(r"\s+", " ", "".join(c.source for c in cells if c.cell_type == "markdown"))
    assert "oscillates mostly below zero" in prose and "wanders around zero" not in prose
    meta = next(c.metadata["mystnb"] for c in cells if c.get("metadata", {}).get("mystnb", {}).get("figure", {})
                .get("name") == "fig-ch08-axis-kernels")
    assert "mostly below zero" in meta["figure"]["caption"] and "mostly below zero" in meta["image"]["alt"]
    assert "around zero" not in meta["figure"]["caption"] + meta["image"]["alt"]


def test_odd_over_odd_ratio_reaches_zero():
    # the bank {1, 3}: K = 1/2 + (cos a + cos 3a)/4 = cos(a/2)^2 (2 cos(a)^2 - 2 cos(a) + 1), free of cancellation
    a = np.arange(1.0, 2e6 + 1)
    c = np.cos(a)
    factored = (np.cos(a / 2) ** 2 * (2 * c * c - 2 * c + 1)).min()
    assert np.allclose(0.5 + 0.25 * (np.cos(a[:1000]) + np.cos(3 * a[:1000])),
                       np.cos(a[:1000] / 2) ** 2 * (2 * np.cos(a[:1000]) ** 2 - 2 * np.cos(a[:1000]) + 1), atol=1e-15)
    close("odd_ratio_min", factored, rel=1e-2)
    assert 0 < G["odd_ratio_min"] < 1e-10 < G["axial_floor_bound"]
    prose = re.sub(r"\s+", " ", "".join(c.source for c in nbformat.read(NB, 4).cells if c.cell_type == "markdown"))
    assert "A rational ratio keeps a floor" not in prose and "an odd/odd ratio such as 3 does not" in prose


def test_interleaved_slow_end_belongs_to_time():
    axes = _interleaved_axes()
    first = min(i for i in range(64) if all(ax == 0 for ax in axes[i:]))
    close("il_time_tail_first", first)
    close("il_time_tail", 64 - first)
    assert first == 60 and axes[59] != 0


def test_review_wording_fourth():
    cells = nbformat.read(NB, 4).cells
    prose = re.sub(r"\s+", " ", "".join(c.source for c in cells if c.cell_type == "markdown"))
    assert "Meta's announcement links" not in prose and "2501.19399" in prose
    # ch08-fastest-width: no per-patch value of the fastest width pair before the exercise
    exercise = next(i for i, c in enumerate(cells) if "ch08-fastest-width" in c.source and "{exercise}" in c.source)
    before = "".join(c.source for c in cells[:exercise] if c.cell_type == "markdown")
    assert "width_step" not in before and "slow_step" not in before and "q2_width_fast" not in before
    assert "\\phi" not in prose.replace("\\Phi", "")  # RoPE-Mixed's angle is Phi, not the polar angle's phi
    notation = (NB.parents[1] / "notation.md").read_text()
    h_row = next(line for line in notation.splitlines() if line.startswith("| $h$ |"))
    s_row = next(line for line in notation.splitlines() if line.startswith("| $S$ |"))
    assert "\\cos(\\delta\\theta_i + \\gamma_i)" in h_row and "\\cos(\\delta\\theta_i + \\gamma_i)" in s_row
    assert any(line.startswith("| $\\Phi$ | RoPE-Mixed") for line in notation.splitlines())


def _median_bracket(masses, budgets):
    import statistics
    return _robust_bracket([[statistics.median(row)] for row in masses], budgets)[:2]


def test_median_seed_crossing_ratio():
    # the median seed's ratio beside the lowest seed's: the slow split's median from the stored fine grid, the blocked
    # split's re-trained on a 5-step grid from 100 steps (before the stored grid starts)
    from ropegeo.toy.budget_curves import load_run
    run = load_run("axial_crossing")
    s = run["settings"]
    med = list(range(100, 205, 5))
    ratios = {}
    for tag, key in (("", "seeds"), ("_disjoint", "disjoint_seeds")):
        bl = _median_bracket(budget_study(_splits()["blocked"], med, seeds=s[key], target=(2, 3), grid=(8, 8))
                             ["target_mass"], med)
        sl = _median_bracket(run["curves"]["y starved, slow"][key]["target_mass"], s["budgets"]["y starved, slow"])
        close(f"med_ratio_low{tag}", sl[0] / bl[1])
        close(f"med_ratio_high{tag}", sl[1] / bl[0])
        ratios[key] = (sl[0] / bl[1], sl[1] / bl[0])
        assert G["adam_factor"] < sl[0] / bl[1]  # the factor rule is low against the median seed on every set
    ratios["far"] = (G["med_ratio_low_far"], G["med_ratio_high_far"])  # re-trained in the test on seeds 1000-1019
    every = [r for pair in ratios.values() for r in pair]
    close("med_short_min", 1 - G["adam_factor"] / min(every))
    close("med_short_max", 1 - G["adam_factor"] / max(every))
    assert 0 < G["med_short_min"] < G["med_short_max"]
    # "which moves less between the sets than the lowest seed's": the brackets' midpoints over the three sets
    lowest = [(G[f"fine_ratio_low{t}"] + G[f"fine_ratio_high{t}"]) / 2 for t in ("", "_disjoint")]
    lowest.append((G["adam_factor"] / (1 - G["far_short_min"]) + G["adam_factor"] / (1 - G["far_short_max"])) / 2)
    median = [sum(pair) / 2 for pair in ratios.values()]
    assert max(median) - min(median) < max(lowest) - min(lowest)
    prose = re.sub(r"\s+", " ", "".join(c.source for c in nbformat.read(NB, 4).cells if c.cell_type == "markdown"))
    assert "moves less between the sets than the lowest seed's" in prose


def test_review_wording_fifth():
    import json
    from ropegeo.book.exercises import check
    cells = nbformat.read(NB, 4).cells
    prose = re.sub(r"\s+", " ", "".join(c.source for c in cells if c.cell_type == "markdown"))
    # Qwen2.5-VL's clock rule lives in its own file, in Qwen2_5_VLModel.get_rope_index (v5.24.0)
    assert "(`get_rope_index` in the same file)" not in prose
    assert "(`Qwen2_5_VLModel.get_rope_index` in `src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py`" in prose
    assert "`tokens_per_second * second_per_grid_ts`" in prose and "`.long()`" in prose
    # v5.24.0's recomposition_frequencies: split by the undoubled sections, taken in turn, then repeated
    assert "sections doubled" not in prose
    assert "the 64 frequencies split by the sections and taken in turn, then repeated" in prose
    # ch08-fastest-width: neither the per-step ratio nor the amplitude built on it before the exercise ...
    exercise = next(i for i, c in enumerate(cells) if "ch08-fastest-width" in c.source and "{exercise}" in c.source)
    before = "".join(c.source for c in cells[:exercise] if c.cell_type == "markdown")
    assert "step_ratio" not in before and "peak_ratio" not in before and "100 times" not in before
    solution = "".join(c.source for c in cells[exercise:exercise + 4] if c.cell_type == "markdown")
    assert "`step_ratio:.0f`" in solution and "`peak_ratio:,.0f`" in solution
    # ... and what is shown there (the slow pair to 4 decimals, the per-grid ratio to 1) does not pass the checker
    assert "`w_slow:.4f`" in before and "`turn_ratio:.1f`" in before
    per_step = round(G["turn_ratio"], 1) * 63 / 7  # 11.1 across the grids, times 63 / 7 steps: 99.9 per step
    interleaved = 2 * math.pi * 5e6 ** (4 / 128)
    assert not check("ch08-fastest-width", (2 * math.pi / (round(G["w_slow"], 4) / per_step), interleaved))
    # whereas the per-step factor 100 would give it away (35,299 against 35,333 passes): hence none before the exercise
    assert check("ch08-fastest-width", (2 * math.pi / (round(G["w_slow"], 4) / 100), interleaved))
    # the clock rule's jitter at 8/3 ids per temporal patch: gaps of 2 or 3 ids, at most 2/3 id = 1/3 s off
    gaps = [(8 * (n + 1)) // 3 - (8 * n) // 3 for n in range(5)]
    assert sorted(set(gaps)) == [2, 3]
    close("tps_jitter_ids", max(abs(3 * g - 8) for g in gaps) / 3)
    close("tps_jitter_s", max(abs(3 * g - 8) for g in gaps) / 3 * 0.5)  # tokens_per_second = 2: an id is 0.5 s
    assert G["tps_jitter_s"] < 0.5 and "under half a second" in prose and "up to half a second" not in prose
    # "floor" is the unturned-pairs bound only; no p/q (p is a position, q a query)
    assert "the axial head's floor" not in prose and "the axial head's lowest value along $x$ within 16 patches" in prose
    assert "$p/q$" not in prose and "A ratio of two whole numbers, in lowest terms" in prose
    # the kernel figure plots offsets 0 to 63, as the text reads
    call = next(c.source for c in cells if c.cell_type == "code" and "axis_kernel_figure(" in c.source)
    assert "axis_kernel_figure(F2, extent - 1," in call and G["q2_extent_last"] == 63
    # captions and alt texts
    splits_fig = next(c for c in cells if c.metadata.get("mystnb", {}).get("figure", {}).get("name") == "fig-ch08-splits")
    assert "grey bar at the mean" in splits_fig.metadata["mystnb"]["figure"]["caption"]
    assert "grey bar at the mean" in splits_fig.metadata["mystnb"]["image"]["alt"]
    maps = next(c for c in cells if c.metadata.get("mystnb", {}).get("figure", {}).get("name") == "fig-ch08-kernel-maps")
    assert "bluer, below-zero troughs" in maps.metadata["mystnb"]["image"]["alt"]
    # the Qwen3-VL-8B config is cited at the revision the stored data file was read from
    root = NB.parents[1]
    revision = json.loads((root / "ropegeo" / "data" / "qwen3-vl-8b-instruct.json").read_text())["revision"]
    bib = (root / "references.bib").read_text()
    entry = bib[bib.index("@misc{qwen2025qwen3vl8bconfig"):]
    entry = entry[:entry.index("\n}")]
    assert f"Qwen3-VL-8B-Instruct/blob/{revision}/config.json" in entry and "blob/main" not in entry
