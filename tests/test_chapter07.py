"""Every number chapter 7 states in its prose, rederived independently.

Glued values are read from the stored outputs of ``chapters/07_alternatives.ipynb``. Closed forms
are computed here by hand (T5's bucket recipe as scalar float32 steps, ALiBi's geometric series,
counting arguments). Numbers of trained heads are recomputed from the heads' raw parameters with
scores written out per scheme and a per-query softmax loop, never through
``AttentionLayer`` or ``ropegeo.toy.interventions``; the heads come from the same seeded training
(whose gradients ``test_alternatives`` checks against finite differences).
"""

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from glue import read_glued
from test_attention import ref_attention, ref_code
from test_attention_schemes import ref_bucket
from ulps import assert_ulps

from ropegeo import scaling
from ropegeo.toy import alternatives as alt
from ropegeo.toy import scheme_heads as sh

NB = Path(__file__).resolve().parents[1] / "chapters" / "07_alternatives.ipynb"
SETTINGS = dict(offset=5, distance=40, train_length=64, factors=(2, 4, 8), shift=16)
OFF, DIST, L, SHIFT = 5, 40, 64, 16
RUNS = Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "runs"
RUN = json.loads((RUNS / "scheme_comparison.json").read_text())
STORED = {name: {key: [r[key] for r in rows] for key in rows[0]} for name, rows in RUN["results"].items()}
CHECK = json.loads((RUNS / "scheme_comparison_check.json").read_text())  # seeds 1000-1019, scripts/...py --check
CHECKED = {name: {key: [r[key] for r in rows] for key in rows[0]} for name, rows in CHECK["results"].items()}
SPREAD = ("", "_min", "_max")
HOLDOUT = range(1000, 1020)  # twenty seeds no stored run uses: the disjoint set every trained range is re-checked on


GLUED, USED = read_glued(NB)


def g(name):
    return GLUED[name]


CLOSED = {
    "none_queries_per_seq", "none_second_per_seq",
    "t5_exact", "t5_exact_last", "t5_exact_enc", "t5_width_100", "t5_last_start", "alibi_first", "alibi_last",
    "alibi_gentle_100", "alibi12_extra", "kernel_min", "kernel_argmin", "big_shift", "n_guaranteed",
    "sin_guarantee_change", "abs_guarantee_change", "rel_guarantee_worst", "cmp_offset", "cmp_distance",
    "cmp_train_length", "cmp_steps", "cmp_shift", "cmp_seeds", "cmp_trained", "cmp_long", "cmp_window",
    "cmp_keys_train", "cmp_keys_long", "alibi_move", "alibi_mass_before", "alibi_mass_after", "abs_rows_fraction",
    "none_ret_train", "none_ret_long", "rel_ceiling_long", "t5_ret_width", "t5_tie_ceiling_train", "fixed_acc_max",
    "none_needle", "alibi0_needle_40", "alibi7_needle_400", "sin_needle_40", "rope_needle_5", "rope_needle_40",
    "rope_needle_400", "rope_slow_needle_400", "cmp_match_steps", "cmp_match_batch", "none_once_share",
    "relative_tie_ceiling", "alibi12_n_added", "alibi12_n_between", "rel_clip", "slow_turn_400", "slow_wavelength",
    "ropeslow_slow_pairs", "slow_lam0", "slow_lam1", "slow_third_return", "slow_pair1_turns",
    "kernel_first_negative", "kernel_last_positive", "kernel_dip", "kernel_back_positive", "kernel_second_last_positive",
    "kernel_second_negative", "kernel_late_negative", "kernel_late_span", "alibi0_needle_40_bound", "sin_needle_40_bound",
    "tl_steps", "tl_slope", "tl_head_dim", "tl_lr", "rd_far_off", "cmp_queries_long", "abs_rows_count",
    "cmp_alibi_head", "cmp_alibi_heads", "cmp_alibi_slope", "alibi_ret_long_table",
    *(f"alibi_{h}_far_{w}" for h in ("gentle", "mid") for w in ("train", "long")),
}
TRAINED = {
    "learned_acc_min", "relt5_stretch_min", "sin_shift_weight_change", "rope_stretch_8_losers",
    *(f"{key}{x}" for key in ("abs_winners_kept", "sin_winners_kept", "abs_stretch_8", "sin_stretch_8", "rope_stretch_8")
      for x in SPREAD),
    *(f"{name}_ret_{when}{x}" for name in ("relative", "t5", "rope") for when in ("train", "long") for x in SPREAD),
    "rope10k_ret_long", "rope10k_stretch_8", "rope500_ret_long", "rope500_stretch_8", "ropeslow_ret_long",
    "ropeslow_stretch_8", "ruler_seeds", "ruler_steps", "r500_beats_10k", "slow_below_10k",
    *(f"{r}_{w}_{x}" for r in ("rope10k", "rope500", "ropeslow") for w in ("ret_long", "stretch_8") for x in ("min", "max")),
    "slow_neighbours_max", "slow_far_over_neighbours", "slow_captured", "slow_captured_min", "slow_captured_max",
    "slow_kept", "budget_lo", "budget_hi", "rope_losers_retrained", "rope_losers_far", "rope_ret_long_above",
    "slow_rival_farthest", "slow_rival_near", "slow_rival_first", "slow_rival_third", "ten_rival_mode",
    "ten_rival_mode_count", "ten_rival_off", "ten_captured", "ten_missed_far", "rival_example_seed",
    *(f"{k}_{b}" for k in ("slow_nb_wins", "slow_captured") for b in ("lo", "hi")),
    *(f"{k}_{b}{x}" for k in ("slow_nb", "ret_10k", "ret_slow") for b in ("lo", "hi") for x in SPREAD),
    "tl_seeds", "tl_length", "tl_nope1_k1_max", "tl_nope2_k1_min", "tl_nope2_k1_mass", "tl_alibi1_k1_mass",
    "tl_alibi2_k1_mass", "tl_k5_max", "tl_nope2_k5_max",
    "rope_losers_back3", "rope_losers_rival", "rope_losers_rival_pi", "rope_losers_off02", "rope_losers_off1",
    "rope_losers_off02_bound", "rope_losers_others_off0", "rope_losers_others_off1",
    "rope_losers_others", "rival_example_share", "slow_uncaptured_third", "slow_uncaptured",
    "slow_rival_j4", "slow_rival_j7", "slow_rival_j9",
    *(f"rd_{k}{w}" for k in ("n", "captured", "gap_agree", "slope_agree", "third", "at_return", "gap_miss", "slope_miss",
                              "captured_j4", "captured_j7", "captured_j9", "cap_queries_min", "cap_queries_max",
                              "cap_from_max", "kept_queries_max") for w in ("", "_check")),
    "slow_kept_last_max", "slow_captured_mean", "rd_third_cap", "rd_p1_against", "rd_p27_min", "rd_p27_max",
    "rd_p27_share_min",
    "rd_w0_min", "rd_w0_max", "rd_pair0_gap_max", "rd_cap_gap_min", "rd_cap_gap_max", "rd_kept_negative", "rd_kept",
    "rd_kept_gap_most", "rd_kept_gap_least", "rd_w0_min_check", "rd_w0_max_check", "rd_pair0_gap_max_check",
    *(f"rd_marginal{k}{w}" for k in ("", "_pair0", "_slow_max") for w in ("", "_check")),
    *(f"rd_{k}_further" for k in ("n", "captured", "slope_agree", "gap_agree", "at_return", "third")),
    "ruler_budgets", "ruler_trained", "rope_losers_check", "rope_losers_check_far", "rope_losers_check_rival",
    *(f"{r}_ret_long_check{x}" for r in ("rope10k", "rope500") for x in SPREAD), "r500_beats_10k_check",
    "rope500_stretch_8_min_check", "slow_neighbours_max_check",
    "learned_move_heads", "learned_move_halved", "abs_rows_exact_seeds", "abs_rows_both_seeds", "learned_move_before_min", "learned_move_after_max",
} | {f"{name}_match_{when}{x}" for name in sh.SCHEMES for when in ("train", "long") for x in SPREAD}
# the same measurements on seeds 1000-1019, from the stored check record (the chapter's dropdown)
CHECK_GLUES = {
    "abs_right_check", "learned_acc_min_check", "relt5_stretch_min_check",
    "sin_shift_weight_change_check", "learned_move_halved_check", "rope_stretch_8_losers_check",
    "rope_ret_long_above_check",
    *(f"{k}_check{x}" for k in ("abs_winners_kept", "sin_winners_kept", "sin_stretch_8", "rope_stretch_8",
                                 "relative_ret_long", "t5_ret_long", "rope_ret_long") for x in SPREAD),
    *(f"{name}_match_{when}_check{x}" for name in sh.SCHEMES for when in ("train", "long") for x in SPREAD),
}
TRAINED |= CHECK_GLUES


def test_every_ropegeo_path_in_the_prose_resolves():
    """Every `ropegeo.x.y` the chapter's markdown names is an importable module or an attribute of one."""
    import importlib
    import re
    import nbformat
    paths = {m for c in nbformat.read(NB, 4).cells if c.cell_type == "markdown"
             for m in re.findall(r"ropegeo(?:\.\w+)+", c.source)}
    assert len(paths) >= 3  # t5_bucket, alibi_slopes, two_layer at least
    for path in sorted(paths):
        parts = path.split(".")
        for cut in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for name in parts[cut:]:
                assert hasattr(obj, name), f"{path}: {'.'.join(parts[:cut])} has no {name}"
                obj = getattr(obj, name)
            break
        else:
            raise AssertionError(f"{path}: no importable prefix")


def test_every_glue_in_the_prose_is_defined_and_tested():
    assert USED <= set(GLUED)
    assert set(GLUED) == CLOSED | TRAINED


# ---- closed forms -----------------------------------------------------------------------------------


def test_t5_numbers():
    dec = [ref_bucket(-n, False) for n in range(2000)]
    enc = [ref_bucket(-n, True) for n in range(2000)]
    alone = [n for n in range(2000) if dec.count(dec[n]) == 1]
    assert g("t5_exact") == len(alone) == 32 // 2
    assert g("t5_exact_last") == max(alone) == 15
    assert g("t5_exact_enc") == sum(1 for n in range(2000) if enc.count(enc[n]) == 1) == 8
    assert g("t5_width_100") == dec.count(dec[100])
    # last bucket 31: 16 + floor(16 ln(n/16) / ln 8) >= 15 from n = 16 * 8**(15/16) = 112.99 on
    assert g("t5_last_start") == dec.index(31) == math.ceil(16 * 8 ** (15 / 16))
    assert g("t5_ret_width") == dec.count(dec[40]) == 6
    # the tie ceiling at 64 tokens: query m sees min(6, m - 39) keys of the target's bucket (distances 40..45)
    ceiling = sum(1 / min(6, m - 39) for m in range(40, 64)) / 24
    assert g("t5_tie_ceiling_train") == pytest.approx(ceiling, rel=1e-12)
    assert abs(g("t5_ret_train") - ceiling) < 0.002  # the trained heads sit at the ceiling


def test_alibi_numbers():
    # alibi_slopes computes 2 ** (-8 h / H) with numpy's pow: within an ulp of the power of two
    assert_ulps([g("alibi_first"), g("alibi_last")], [2.0**-1, 2.0**-8], ulps=1)
    assert g("alibi_gentle_100") == pytest.approx(100 / 256)
    assert g("alibi12_extra") == pytest.approx(2 ** -0.5, rel=1e-14)
    # H = 12: the 8 slopes 2**-h, then every other slope of the H = 16 sequence 2**(-h/2): h = 1, 3, 5, 7
    kept = [2.0 ** -h for h in range(1, 9)]
    added = [2.0 ** (-h / 2) for h in (1, 3, 5, 7)]
    assert g("alibi12_n_added") == len(added) == 12 - 8
    assert g("alibi12_extra") == pytest.approx(added[0]) and added[0] > max(kept) == g("alibi_first")
    between = [a for a in added if any(lo < a < hi for lo, hi in zip(kept[1:], kept[:-1]))]
    assert g("alibi12_n_between") == len(between) == len(added) - 1
    # content-free ALiBi with slope 1/2: weights r**delta over the m earlier keys
    r = math.exp(-0.5)
    before, after = [], []
    for m in range(OFF + 1, L):  # the first query is skipped: its moved key would leave the sequence
        w = [r**d for d in range(1, m + 1)]
        before.append(w[OFF - 1] / sum(w))
        moved = w[OFF - 1] * r
        after.append(moved / (sum(w) - w[OFF - 1] + moved))
    assert g("alibi_move") == pytest.approx(-0.5, rel=1e-12)
    assert g("alibi_mass_before") == pytest.approx(np.mean(before), rel=1e-10)
    assert g("alibi_mass_after") == pytest.approx(np.mean(after), rel=1e-10)


def test_alibi_far_key_per_head():
    # the table's ALiBi row is head 0 of 8, the steepest slope 2**-1
    assert (g("cmp_alibi_head"), g("cmp_alibi_heads")) == (0, 8) and g("cmp_alibi_slope") == pytest.approx(0.5, rel=1e-12)

    def far(mu, length):  # mean over queries m >= 40 of exp(-40 mu) / sum_{d=1..m} exp(-d mu), summed term by term
        return np.mean([math.exp(-mu * DIST) / math.fsum(math.exp(-mu * d) for d in range(1, m + 1))
                        for m in range(DIST, length)])

    assert g("alibi_ret_long_table") == pytest.approx(far(0.5, 8 * L), rel=1e-6)
    assert g("alibi_ret_long_table") == pytest.approx(np.mean(STORED["alibi"]["retrieval_mass_long"]), rel=1e-6)
    for tag, mu in (("gentle", 2.0**-8), ("mid", 2.0**-4)):
        assert g(f"alibi_{tag}_far_train") == pytest.approx(far(mu, L), rel=1e-9)
        assert g(f"alibi_{tag}_far_long") == pytest.approx(far(mu, 8 * L), rel=1e-9)
    # the prose: the steep head buries the key, the gentle ones leave it near the uniform share (within 25%)
    assert g("alibi_ret_long_table") < 1e-6
    for tag, when in (("gentle", "train"), ("gentle", "long"), ("mid", "long")):
        assert 0.75 < g(f"alibi_{tag}_far_{when}") / g(f"none_ret_{when}") < 1.25
    assert g("alibi_gentle_far_long") > g("rel_ceiling_long") > g("none_ret_long")  # the reviewer's comparison


def test_table_digits_follow_the_spread():
    import re
    import nbformat
    cell = next(c for c in nbformat.read(NB, 4).cells if c.cell_type == "code" and "cmp.markdown()" in c.source)
    table = next(o["data"]["text/markdown"] for o in cell.outputs if "text/markdown" in o.get("data", {}))
    rows = {line.split("|")[1].strip(): [x.strip() for x in line.split("|")[1:-1]] for line in table.splitlines()[2:]}
    score = {n: np.asarray(STORED[n]["move_score_change"]) for n in STORED}
    ret = {n: np.asarray(STORED[n]["retrieval_mass_long"]) for n in STORED}
    for name in ("absolute", "sinusoidal", "relative", "t5", "rope"):
        digits = len(rows[name][5].split(".")[1]) if "." in rows[name][5] else 0
        # no more decimals than the first significant digit of the spread over seeds allows
        assert digits == max(0, -math.floor(math.log10(np.ptp(score[name])))) < 2, name
        assert float(rows[name][5]) == pytest.approx(score[name].mean(), abs=0.5 * 10.0**-digits + 1e-12)
    assert rows["absolute"][5] == "-66" and re.fullmatch(r"1\.000 → 0\.9", rows["rope"][8])
    assert float(rows["rope"][8].split("→")[1]) == pytest.approx(ret["rope"].mean(), abs=0.05)
    assert np.ptp(ret["rope"]) > 0.1  # why RoPE's far mass gets one decimal


def test_kernel_numbers():
    theta = [10_000 ** (-2 * i / 16) for i in range(8)]
    K = [sum(math.cos(d * t) for t in theta) / 8 for d in range(301)]
    i = min(range(301), key=K.__getitem__)
    assert g("kernel_argmin") == i
    assert g("kernel_min") == pytest.approx(K[i], abs=1e-12)
    first = next(d for d in range(301) if K[d] < 0)
    assert g("kernel_first_negative") == first == g("kernel_last_positive") + 1 and all(k > 0 for k in K[:first])
    # "dips below zero at 91 alone ... positive again from 92 to 266": scan the signs by hand
    back = next(d for d in range(first, 301) if K[d] >= 0)
    second = next(d for d in range(back, 301) if K[d] < 0)
    assert back == first + 1 == g("kernel_back_positive") and g("kernel_dip") == pytest.approx(K[first], abs=1e-12)
    assert g("kernel_second_negative") == second == g("kernel_second_last_positive") + 1 and second - back > 100
    assert all(k > 0 for k in K[back:second]) and K[first] > -0.05  # a shallow, one-offset dip
    assert g("kernel_late_negative") == sum(k < 0 for k in K[second:]) and g("kernel_late_span") == 301 - second
    assert 0 < g("kernel_late_negative") < g("kernel_late_span")  # "crosses zero often": both signs occur there
    # the troughs deepen: the lowest value comes in the last third, below every earlier trough
    assert i > 200 and min(K[:200]) > K[i] + 0.05
    # the kernel figure's caption and alt text state these numbers
    meta = json.loads(NB.read_text())["cells"]
    kernel_fig = next(c for c in meta if "bias_shapes(panel=\"kernel\")" in "".join(c["source"]))["metadata"]["mystnb"]
    caption = kernel_fig["figure"]["caption"]
    assert f"up to $\\delta = {first - 1}$" in caption and f"zero at {first} alone" in caption and f"up to {second - 1}," in caption
    alt = kernel_fig["image"]["alt"]
    assert f"positive up to offset {first - 1}" in alt and f"near offset {i}" in alt and f"minus {-K[i]:.2f}" in alt
    assert f"below zero at offset {first}," in alt and f"positive up to offset {second - 1}," in alt


def _weights(seed, rows=None):
    rng = np.random.default_rng(seed)
    Wq, Wk, Wv = (rng.standard_normal((16, 16)) / 4 for _ in range(3))
    table = rng.standard_normal((rows, 16)) if rows else None
    return Wq, Wk, Wv, table


def test_construction_numbers():
    assert g("big_shift") == 1000
    assert g("n_guaranteed") == 5  # none, relative, t5, alibi, rope: all see p_j - p_i only
    worst_sin = worst_abs = 0.0
    for s in (0, 1, 2):
        x = np.random.default_rng(10_000 + s).standard_normal((24, 16))
        Wq, Wk, Wv, table = _weights(s, rows=1100)
        S0, _, _ = ref_attention(x, Wq, Wk, Wv, add=table[:24])
        S1, _, _ = ref_attention(x, Wq, Wk, Wv, add=table[1000:1024])
        worst_abs = max(worst_abs, np.abs(S1 - S0).max())
        Wq, Wk, Wv, _ = _weights(s)
        S0, _, _ = ref_attention(x, Wq, Wk, Wv, add=[ref_code(p, 16) for p in range(24)])
        S1, _, _ = ref_attention(x, Wq, Wk, Wv, add=[ref_code(p + 1000, 16) for p in range(24)])
        worst_sin = max(worst_sin, np.abs(S1 - S0).max())
    assert g("abs_guarantee_change") == pytest.approx(worst_abs, rel=1e-9)
    assert g("sin_guarantee_change") == pytest.approx(worst_sin, rel=1e-9)
    assert 0 <= g("rel_guarantee_worst") < 1e-9  # rounding of angles up to ~1000 rad


def test_settings_and_counts():
    assert (g("cmp_offset"), g("cmp_distance"), g("cmp_train_length"), g("cmp_shift")) == (OFF, DIST, L, SHIFT)
    assert g("cmp_steps") == 1000 == RUN["settings"]["steps"]
    assert g("cmp_seeds") == len(RUN["settings"]["seeds"]) >= 10
    assert all(len(rows) == g("cmp_seeds") for rows in RUN["results"].values())
    # learned schemes x (local, far) x seeds, plus a match head for every scheme and seed
    assert g("cmp_trained") == (5 * 2 + 7) * g("cmp_seeds")
    for key, value in SETTINGS.items():
        assert RUN["settings"][key] == (list(value) if isinstance(value, tuple) else value), key
    assert RUN["settings"]["match"] is True and RUN["provenance"]["script"] == "scripts/make_scheme_comparison.py"
    assert g("cmp_match_steps") == 300 and g("cmp_match_batch") == 16
    assert (g("cmp_long"), g("cmp_window"), g("cmp_keys_train"), g("cmp_keys_long")) == (512, 48, 63, 511)
    assert g("abs_rows_fraction") == pytest.approx((L - OFF) / (512 - OFF))


def test_uniform_and_clipped_retrieval_closed_forms():
    assert g("none_ret_train") == pytest.approx(np.mean([1 / m for m in range(DIST, L)]), rel=1e-12)
    assert g("none_ret_long") == pytest.approx(np.mean([1 / m for m in range(DIST, 512)]), rel=1e-12)
    # keys 16 or more slots back share the clipped vector: m - 16 + 1 of them for query m
    assert g("rel_clip") == 16  # train_position_head's default clipping distance
    assert g("rel_ceiling_long") == pytest.approx(np.mean([1 / (m - 15) for m in range(DIST, 512)]), rel=1e-12)
    assert g("fixed_acc_max") == 0.0  # uniform ties and nearest-wins never pick a key 5 back


# ---- trained heads, re-scored by hand --------------------------------------------------------------


def ref_rotated(vec, positions, theta):
    out = np.empty((len(positions), len(vec)))
    for r, p in enumerate(positions):
        for i, t in enumerate(theta):
            a, b = vec[2 * i], vec[2 * i + 1]
            out[r, 2 * i] = a * math.cos(p * t) - b * math.sin(p * t)
            out[r, 2 * i + 1] = a * math.sin(p * t) + b * math.cos(p * t)
    return out


def ref_scores(head, positions):
    """Scores from the head's raw parameters, formula by formula (token e_0 at every slot)."""
    pos = np.asarray(positions, dtype=float)
    n = pos.size
    lay, name = head.layer, head.name
    e0 = np.eye(16)[0]
    if name in ("absolute", "sinusoidal"):
        if name == "absolute":
            H = e0 + lay.scheme.table[pos.astype(int)]
        else:
            H = e0 + np.array([ref_code(p, 16) for p in pos])
        return (H @ lay.Wq) @ (H @ lay.Wk).T / 4
    if name == "relative":
        q, k0, a = lay.Wq[0], lay.Wk[0], lay.scheme.key_table
        row = {r: q @ a[r + 16] for r in range(-16, 17)}
        return np.array([[q @ k0 + row[int(min(max(pos[j] - pos[i], -16), 16))] for j in range(n)] for i in range(n)]) / 4
    if name == "t5":
        b = lay.scheme.table
        cache = {}
        return np.array([[b[cache.setdefault(int(pos[j] - pos[i]), ref_bucket(int(pos[j] - pos[i]), False))]
                          for j in range(n)] for i in range(n)])
    if name == "rope":
        theta = lay.scheme.options["theta"]
        return ref_rotated(lay.Wq[0], pos, theta) @ ref_rotated(lay.Wk[0], pos, theta).T / 4
    raise AssertionError(name)


def ref_task(S, k):
    """(accuracy, mean mass) of the displacement task, one query at a time."""
    correct, mass = [], []
    for m in range(k, S.shape[0]):
        row = S[m, :m]
        w = np.exp(row - row.max())
        w /= w.sum()
        t = m - k
        others = np.delete(w, t)
        correct.append(others.size == 0 or w[t] > others.max())
        mass.append(w[t])
    return float(np.mean(correct)), float(np.mean(mass))


# ---- the stored scheme comparison: every glue, one recomputed seed, directions on other seeds ------------


def _glued_spread(key, values):
    vals = [float(x) for x in values]
    for suffix, want in (("", sum(vals) / len(vals)), ("_min", min(vals)), ("_max", max(vals))):
        assert g(key + suffix) == pytest.approx(want, rel=1e-12, abs=1e-15), key + suffix


def test_glued_trained_numbers_are_the_stored_runs():
    """Every trained number of the comparison, recomputed from the stored JSON with plain Python."""
    last = {name: [a[-1] for a in STORED[name]["stretch_accuracy"]] for name in STORED}
    _glued_spread("abs_winners_kept", STORED["absolute"]["shift_winners_kept"])
    _glued_spread("sin_winners_kept", STORED["sinusoidal"]["shift_winners_kept"])
    for key, name in (("abs_stretch_8", "absolute"), ("sin_stretch_8", "sinusoidal"), ("rope_stretch_8", "rope")):
        _glued_spread(key, last[name])
    assert g("rope_stretch_8_losers") == sum(a < 1 for a in last["rope"])
    assert g("learned_acc_min") == min(min(STORED[n]["accuracy"]) for n in sh.LEARNED) == 1.0
    assert g("fixed_acc_max") == max(max(STORED[n]["accuracy"]) for n in ("none", "alibi"))
    assert g("relt5_stretch_min") == min(min(a) for n in ("relative", "t5") for a in STORED[n]["stretch_accuracy"])
    assert g("sin_shift_weight_change") == max(STORED["sinusoidal"]["shift_weight_change"])
    for name in ("relative", "t5", "rope"):
        _glued_spread(f"{name}_ret_train", STORED[name]["retrieval_mass_train"])
        _glued_spread(f"{name}_ret_long", STORED[name]["retrieval_mass_long"])
    for name in sh.SCHEMES:
        _glued_spread(f"{name}_match_train", STORED[name]["match_accuracy_train"])
        _glued_spread(f"{name}_match_long", STORED[name]["match_accuracy_long"])
    # the statements of the prose, on the stored seeds
    assert min(last["absolute"]) == max(last["absolute"]) == pytest.approx(g("abs_rows_fraction"), abs=1e-12)
    assert g("relative_ret_long_max") <= g("rel_ceiling_long") + 1e-12
    assert g("relative_match_train_max") <= g("relative_tie_ceiling") + 1e-12
    assert g("none_match_train_min") == g("none_match_train_max") == pytest.approx(g("none_once_share"), abs=1e-12)
    assert g("sin_winners_kept_min") == 1.0  # "the sinusoidal head keeps every winner in every seed"
    assert g("abs_winners_kept") < 1.0 and g("sin_winners_kept_min") > g("abs_winners_kept")  # worst sinusoidal seed above the absolute mean


@pytest.fixture(scope="module")
def seed0():
    return alt.compare_schemes(**SETTINGS, seeds=(0,), match=True)


def _task(head, length, k):
    return ref_task(ref_scores(head, np.arange(length)), k)


def _recomputed(run, stored):
    """The one seed of ``run`` (a fresh ``compare_schemes``), re-scored by hand from the heads' raw parameters,
    against entry 0 of ``stored`` (a record's per-scheme lists); raises AssertionError on the first mismatch."""
    for name in sh.LEARNED:
        local, far = run.heads[(name, "local")][0], run.heads[(name, "far")][0]
        assert _task(local, L, OFF)[0] == stored[name]["accuracy"][0], name
        assert _task(local, 512, OFF)[0] == pytest.approx(stored[name]["stretch_accuracy"][0][-1], abs=1e-12), name
        assert _task(far, L, DIST)[1] == pytest.approx(stored[name]["retrieval_mass_train"][0], rel=1e-6), name
        assert _task(far, 512, DIST)[1] == pytest.approx(stored[name]["retrieval_mass_long"][0], rel=1e-6), name
    for name in ("absolute", "sinusoidal"):  # the global shift, by hand
        h = run.heads[(name, "local")][0]
        ws = []
        for start in (0, SHIFT):
            S = ref_scores(h, np.arange(start, start + L - SHIFT))
            W = np.zeros_like(S)
            for m in range(1, S.shape[0]):
                e = np.exp(S[m, :m] - S[m, :m].max())
                W[m, :m] = e / e.sum()
            ws.append(W)
        kept = np.mean([np.argmax(ws[0][m]) == np.argmax(ws[1][m]) for m in range(1, L - SHIFT)])
        assert kept == pytest.approx(stored[name]["shift_winners_kept"][0], abs=1e-12), name
    # match heads: training is chaotic for some schemes (last-bit differences grow), so only to the
    # two decimals the prose quotes
    for name in sh.SCHEMES:
        acc = ref_match_accuracy(run.heads[(name, "match")][0], L)
        assert acc == pytest.approx(stored[name]["match_accuracy_train"][0], abs=0.02), name


def test_one_stored_seed_recomputed(seed0):
    """Seed 0 retrained here and re-scored by hand from the heads' raw parameters."""
    assert all(STORED[name]["accuracy"][0] == 1.0 for name in sh.LEARNED)
    _recomputed(seed0, STORED)


def test_recomputation_fails_on_a_changed_record(seed0):
    """Negative control: the same seed against a record changed in one number fails."""
    for name, key, factor in (("t5", "retrieval_mass_long", 1.01), ("sinusoidal", "shift_winners_kept", 0.9),
                              ("rope", "match_accuracy_train", 0.9)):
        changed = copy.deepcopy(STORED)
        changed[name][key][0] *= factor
        with pytest.raises(AssertionError):
            _recomputed(seed0, changed)


@pytest.fixture(scope="module")
def check_seed():
    """The first seed of the check record, retrained (all schemes): the record is what the code produces."""
    assert CHECK["settings"]["seeds"][0] == HOLDOUT[0]
    return alt.compare_schemes(**SETTINGS, seeds=(HOLDOUT[0],), match=True)


def test_one_check_seed_recomputed(check_seed):
    """Seed 1000 retrained here and re-scored by hand, against the stored check record."""
    _recomputed(check_seed, CHECKED)


def test_moved_target_glues():
    """The trained local heads with their target moved one slot: every stored head of the five schemes."""
    before = [b for n in sh.LEARNED for b in STORED[n]["move_mass_before"]]
    after = [a for n in sh.LEARNED for a in STORED[n]["move_mass_after"]]
    assert g("learned_move_heads") == len(before) == 5 * 20
    assert g("learned_move_halved") == sum(a < b / 2 for b, a in zip(before, after))
    assert g("learned_move_before_min") == pytest.approx(min(before), abs=1e-12) and min(before) > 0.99
    assert g("learned_move_after_max") == pytest.approx(max(after), abs=1e-12) and max(after) < 0.5


def _per_seed(record):
    """``Comparison.per_seed`` on a record's per-scheme lists, in plain numpy."""
    return lambda name, key: np.array(record[name][key], dtype=float)


def _check_claims(ps):
    """Each direction the prose states about the comparison, on a record of seeds other than the table's.

    The prose gives the check record's own numbers in its dropdown (glued, tested below); what is checked
    here is what the sentences claim about the table, so that a new seed set can only break a test by
    breaking a sentence. Raises AssertionError naming the first claim that fails.
    """
    for name in sh.LEARNED:  # "every scheme with something to train solves the training task"
        assert ps(name, "accuracy").min() >= 0.95, f"{name} solves the training task"
    for name in ("relative", "t5", "rope"):  # the relative schemes keep every winner under a shift (a theorem)
        assert ps(name, "shift_winners_kept").min() == 1.0, f"{name} keeps every winner"
    assert ps("absolute", "shift_winners_kept").mean() < 1.0, "the absolute head loses winners"
    # "the sinusoidal head keeps every winner [in seeds 0-19]": elsewhere its worst seed beats the absolute mean
    assert ps("sinusoidal", "shift_winners_kept").min() > ps("absolute", "shift_winners_kept").mean()
    assert ps("sinusoidal", "shift_weight_change").max() < 0.1, "the sinusoidal weights move, but a little"
    halved = sum(np.sum(ps(n, "move_mass_after") < ps(n, "move_mass_before") / 2) for n in sh.LEARNED)
    assert halved >= 0.9 * len(sh.LEARNED) * len(ps("rope", "accuracy")), "the moved key keeps less than half"
    for name in ("relative", "t5"):  # "keep solving the local task" at every stretch
        assert ps(name, "stretch_accuracy").min() >= 0.95, f"{name} keeps solving the local task"
    # "the absolute head fails where its trained rows end ... measured, not guaranteed": loose on a new set of seeds
    # within a hundredth of the queries (five of 507) of the trained rows' share
    np.testing.assert_allclose(ps("absolute", "stretch_accuracy")[:, -1], (L - OFF) / (512 - OFF), atol=0.01)
    sin8, rope8 = ps("sinusoidal", "stretch_accuracy")[:, -1], ps("rope", "stretch_accuracy")[:, -1]
    assert sin8.max() < 0.6 < rope8.mean(), "the sinusoidal head decays, RoPE keeps most queries"
    assert np.sum(rope8 < 1) >= 1, "some RoPE seeds lose queries at eight times the length"
    assert ps("relative", "retrieval_mass_long").max() <= g("rel_ceiling_long") + 1e-12
    t5_train = ps("t5", "retrieval_mass_train")  # "just under the tie ceiling"
    assert t5_train.max() <= g("t5_tie_ceiling_train") + 1e-12 and t5_train.mean() > g("t5_tie_ceiling_train") - 0.01
    assert ps("t5", "retrieval_mass_long").mean() < t5_train.mean()
    assert ps("rope", "retrieval_mass_long").mean() > 0.5 > ps("t5", "retrieval_mass_long").max()
    rope_far = ps("rope", "retrieval_mass_long")  # "the seed matters": most above 0.8, not all
    assert np.sum(rope_far > 0.8) >= len(rope_far) / 2 and rope_far.min() < 0.8
    assert ps("alibi", "match_accuracy_long").min() > 0.99, "ALiBi above 0.99 in every seed"
    assert ps("none", "match_accuracy_train").max() <= g("none_once_share") + 1e-12
    assert ps("relative", "match_accuracy_train").max() <= g("relative_tie_ceiling") + 1e-12
    for name in ("t5", "rope"):
        assert ps(name, "match_accuracy_long").mean() < ps(name, "match_accuracy_train").mean(), f"{name} drops"
    for name in ("absolute", "sinusoidal"):
        assert ps(name, "match_accuracy_long").max() < 0.5, f"{name} collapses below half"


def test_comparison_directions_on_disjoint_seeds():
    """The prose's claims about the table hold on the check record's seeds, 1000-1019, and on the table's own."""
    assert CHECK["settings"]["seeds"] == list(HOLDOUT) and not set(RUN["settings"]["seeds"]) & set(HOLDOUT)
    assert CHECK["provenance"]["script"] == RUN["provenance"]["script"] == "scripts/make_scheme_comparison.py"
    assert {k: v for k, v in CHECK["settings"].items() if k != "seeds"} == \
        {k: v for k, v in RUN["settings"].items() if k != "seeds"}
    _check_claims(_per_seed(CHECKED))
    _check_claims(_per_seed(STORED))


@pytest.mark.parametrize("name, key, value", [
    ("sinusoidal", "match_accuracy_long", 0.55), ("alibi", "match_accuracy_long", 0.985),
    ("relative", "retrieval_mass_long", 0.01), ("t5", "retrieval_mass_long", 0.6), ("rope", "shift_winners_kept", 0.98),
    ("relative", "accuracy", 0.9), ("absolute", "stretch_accuracy", [1.0, 1.0, 1.0, 65 / 507]),
])
def test_claims_fail_on_a_changed_record(name, key, value):
    """Negative control: one seed of the check record changed against a claim, and the check fails."""
    changed = copy.deepcopy(CHECKED)
    changed[name][key][3] = value if not isinstance(value, list) else value[-len(changed[name][key][3]):]
    with pytest.raises(AssertionError):
        _check_claims(_per_seed(changed))


def test_check_glues_are_the_check_record():
    """The dropdown's numbers, recomputed from the stored check record with plain Python."""
    last = {name: [a[-1] for a in CHECKED[name]["stretch_accuracy"]] for name in CHECKED}
    queries = 512 - OFF
    assert g("cmp_queries_long") == queries == 507 and g("abs_rows_count") == L - OFF == 59
    assert g("abs_rows_count") / queries == pytest.approx(g("abs_rows_fraction"), rel=1e-12)
    right = [round(a * queries) for a in last["absolute"]]
    assert all(abs(a * queries - r) < 1e-9 for a, r in zip(last["absolute"], right))  # whole queries
    # "exactly 59 queries in 40 of 40 seeds (both stored sets)": counted from both records with plain Python
    both = [round(a[-1] * queries) for rec in (STORED, CHECKED) for a in rec["absolute"]["stretch_accuracy"]]
    assert g("abs_rows_both_seeds") == len(both) == 40
    assert g("abs_rows_exact_seeds") == sum(r == L - OFF for r in both)
    lo, hi = min(right), max(right)
    assert g("abs_right_check") == (f"exactly {lo} queries in every seed" if lo == hi else f"from {lo} to {hi} queries, by seed")
    assert g("learned_acc_min_check") == min(min(CHECKED[n]["accuracy"]) for n in sh.LEARNED)
    assert g("relt5_stretch_min_check") == min(min(a) for n in ("relative", "t5") for a in CHECKED[n]["stretch_accuracy"])
    assert g("sin_shift_weight_change_check") == max(CHECKED["sinusoidal"]["shift_weight_change"])
    assert g("learned_move_halved_check") == sum(a < b / 2 for n in sh.LEARNED
                                                 for b, a in zip(CHECKED[n]["move_mass_before"], CHECKED[n]["move_mass_after"]))
    assert g("rope_stretch_8_losers_check") == sum(a < 1 for a in last["rope"])
    assert g("rope_ret_long_above_check") == sum(a > 0.8 for a in CHECKED["rope"]["retrieval_mass_long"])
    _glued_spread("abs_winners_kept_check", CHECKED["absolute"]["shift_winners_kept"])
    _glued_spread("sin_winners_kept_check", CHECKED["sinusoidal"]["shift_winners_kept"])
    _glued_spread("sin_stretch_8_check", last["sinusoidal"])
    _glued_spread("rope_stretch_8_check", last["rope"])
    for name in ("relative", "t5", "rope"):
        _glued_spread(f"{name}_ret_long_check", CHECKED[name]["retrieval_mass_long"])
    for name in sh.SCHEMES:
        for when in ("train", "long"):
            _glued_spread(f"{name}_match_{when}_check", CHECKED[name][f"match_accuracy_{when}"])
    # the notebook's own retraining of RoPE's local heads on these seeds agrees with the record
    assert g("rope_losers_check") == g("rope_stretch_8_losers_check")


STUDY = json.loads((Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "runs" / "ruler_study.json").read_text())
TEN, FAST, SLOW = "base 10,000", "base 500", "base 10,000 slowed x8"
RULERS = {TEN: [10_000 ** (-2 * i / 16) for i in range(8)], FAST: [500 ** (-2 * i / 16) for i in range(8)],
          SLOW: [10_000 ** (-2 * i / 16) / 8 for i in range(8)]}
KEYS = {TEN: "rope10k", FAST: "rope500", SLOW: "ropeslow"}


def ref_split(S, k, L):
    """Mean attention on the target k back, its two neighbours, keys at least L back, the rest; by hand."""
    parts = np.zeros(4)
    for m in range(k, S.shape[0]):
        row = S[m, :m]
        w = np.exp(row - row.max())
        w /= w.sum()
        back = m - np.arange(m)
        t, nb, far = w[back == k].sum(), w[np.abs(back - k) == 1].sum(), w[back >= L].sum()
        parts += (t, nb, far, 1 - t - nb - far)
    return parts / (S.shape[0] - k)


def test_ruler_study_settings_and_rulers():
    st = STUDY["settings"]
    assert (st["offset"], st["distance"], st["train_length"], st["factor"], st["head_dim"]) == (OFF, DIST, L, 8, 16)
    assert st["seeds"] == list(range(20)) and st["table_steps"] in st["budgets"]
    for name, theta in RULERS.items():
        np.testing.assert_allclose(STUDY["rulers"][name]["theta"], theta, rtol=1e-13)
    # the slowed ruler is scaling.linear's (position interpolation's) for a factor of 8
    np.testing.assert_allclose(scaling.linear(np.array(RULERS[TEN]), 8.0), RULERS[SLOW], rtol=1e-15)
    # the slowed ruler's pairs whose wavelength exceeds the training window, and its wavelengths: by hand
    lam = [2 * math.pi * 8 * 10_000 ** (2 * i / 16) for i in range(8)]
    assert g("ropeslow_slow_pairs") == sum(x > L for x in lam) == 7
    assert g("slow_lam0") == pytest.approx(16 * math.pi, rel=1e-12) and g("slow_lam1") == pytest.approx(lam[1], rel=1e-12)
    assert g("slow_third_return") == pytest.approx(DIST + 48 * math.pi, rel=1e-12)
    assert g("slow_pair1_turns") == pytest.approx(3 * 10_000 ** (-1 / 8), rel=1e-12)


def test_ruler_glues_are_the_stored_runs():
    """Every glued ruler number, recomputed from the stored JSON with plain Python."""
    st = STUDY["settings"]
    far = {n: STUDY["rulers"][n]["far"][str(st["table_steps"])] for n in RULERS}
    assert g("ruler_seeds") == 20 and g("ruler_steps") == st["table_steps"]
    for name, key in KEYS.items():
        _glued_spread(f"{key}_ret_long", far[name]["target"])
        _glued_spread(f"{key}_stretch_8", STUDY["rulers"][name]["stretch_accuracy"])
    pairs = list(zip(far[TEN]["target"], far[FAST]["target"], far[SLOW]["target"]))
    assert g("r500_beats_10k") == sum(b > a for a, b, _ in pairs)
    assert g("slow_below_10k") == sum(c < a for a, _, c in pairs)
    slow = far[SLOW]
    assert g("slow_neighbours_max") == max(slow["neighbours"])
    assert g("slow_far_over_neighbours") == sum(b > n for b, n in zip(slow["beyond_window"], slow["neighbours"]))
    # capture read at the last query (the readout's query), from the stored per-query record checked below
    last = READOUT["seeds"]["last_beyond"]
    captured = [b for b in last if b >= 0.5]
    assert (g("slow_captured"), g("slow_captured_min"), g("slow_captured_max")) == (len(captured), min(captured), max(captured))
    assert g("slow_kept_last_max") == max(b for b in last if b < 0.5) < 0.5 <= g("slow_captured_min")
    assert g("slow_captured_mean") == sum(b >= 0.5 for b in slow["beyond_window"]) < g("slow_captured")  # the mean blurs
    assert g("slow_kept") == sum(t >= 0.5 for t in slow["target"])
    assert (g("budget_lo"), g("budget_hi")) == (st["budgets"][0], st["budgets"][-1])
    for tag, b in (("lo", st["budgets"][0]), ("hi", st["budgets"][-1])):
        f = STUDY["rulers"][SLOW]["far"][str(b)]
        assert g(f"slow_nb_{tag}") == pytest.approx(sum(f["neighbours"]) / 20, rel=1e-12)
        _glued_spread(f"slow_nb_{tag}", f["neighbours"])  # the mean and the range over seeds 0-19
        assert g(f"slow_nb_wins_{tag}") == sum(n > w for n, w in zip(f["neighbours"], f["beyond_window"]))
        assert g(f"slow_captured_{tag}") == sum(w >= 0.5 for w in f["beyond_window"])
        assert g(f"ret_10k_{tag}") == pytest.approx(sum(STUDY["rulers"][TEN]["far"][str(b)]["target"]) / 20, rel=1e-12)
        assert g(f"ret_slow_{tag}") == pytest.approx(sum(f["target"]) / 20, rel=1e-12)
        _glued_spread(f"ret_slow_{tag}", f["target"])
        _glued_spread(f"ret_10k_{tag}", STUDY["rulers"][TEN]["far"][str(b)]["target"])
        for key in ("target", "neighbours", "beyond_window", "elsewhere"):  # the four shares add up
            assert all(0 <= x <= 1 for x in f[key])
        assert all(abs(sum(v) - 1) < 1e-9 for v in zip(*(f[k] for k in ("target", "neighbours", "beyond_window", "elsewhere"))))
    # the prose's statements on the stored seeds
    assert g("slow_below_10k") >= 14 and g("slow_neighbours_max") < 0.1 and g("slow_far_over_neighbours") >= 14
    assert g("slow_kept") >= 4 and g("slow_captured") >= 4  # two groups, not one spread
    assert g("slow_nb_lo") > 10 * g("slow_nb_hi") and g("slow_nb_wins_lo") >= 1 and g("slow_captured_hi") >= 4
    assert g("ret_slow_hi") - g("ret_slow_lo") > 0 and g("ret_slow_hi") < g("ret_10k_lo") < g("ret_10k_hi")
    assert 3 < g("r500_beats_10k") < 17  # no order between the two unscaled rulers
    # the far rivals: where the fastest slowed pair returns, never the farthest key
    rivals = far[SLOW]["rival"]
    assert g("slow_rival_farthest") == sum(r == 511 for r in rivals) == 0
    assert g("slow_rival_near") == sum(near_return(r) for r in rivals) >= 18
    assert g("slow_rival_first") == sum(near_return(r) and round((r - DIST) / (16 * math.pi)) == 1 for r in rivals)
    assert g("slow_rival_third") == sum(near_return(r) and round((r - DIST) / (16 * math.pi)) == 3 for r in rivals)
    assert g("slow_rival_third") > g("slow_rival_first") >= 1
    third = [i for i, (r, b) in enumerate(zip(rivals, last))
             if near_return(r) and round((r - DIST) / (16 * math.pi)) == 3 and b >= 0.5]
    best = max(third, key=lambda i: far[SLOW]["beyond_window"][i])  # the figure's seed: the group's most captured
    assert g("rival_example_seed") == STUDY["settings"]["seeds"][best] and g("rival_example_share") >= 0.85
    assert g("rival_example_share") == far[SLOW]["beyond_window"][best]
    # the seeds that are not captured have a near-return rival too; the rarer returns, named by seed
    uncaptured = [i for i, b in enumerate(last) if b < 0.5]
    assert g("slow_uncaptured") == len(uncaptured)
    assert g("slow_uncaptured_third") == sum(near_return(rivals[i]) and round((rivals[i] - DIST) / (16 * math.pi)) == 3
                                             for i in uncaptured) >= len(uncaptured) - 2
    for n in (4, 7, 9):
        named = [str(s) for s, r in zip(st["seeds"], rivals) if near_return(r) and round((r - DIST) / (16 * math.pi)) == n]
        assert g(f"slow_rival_j{n}") == ", ".join(named) and len(named) == 1  # "in one seed each"
    assert g("slow_rival_first") + g("slow_rival_third") + 3 == g("slow_rival_near") == 20
    ten = far[TEN]
    counts = {r: ten["rival"].count(r) for r in ten["rival"]}
    mode = max(counts, key=counts.get)
    assert (g("ten_rival_mode"), g("ten_rival_mode_count")) == (mode, counts[mode]) and counts[mode] >= 10
    turns = [(mode - DIST) * 10_000 ** (-2 * i / 16) / (2 * math.pi) for i in range(3)]
    assert g("ten_rival_off") == pytest.approx(max(abs(t - round(t)) for t in turns), rel=1e-9) and g("ten_rival_off") < 0.1
    assert g("ten_captured") == sum(b >= 0.5 for b in ten["beyond_window"]) < g("slow_captured_mean")
    assert g("ten_missed_far") == sum(b > n + e for b, n, e in zip(ten["beyond_window"], ten["neighbours"], ten["elsewhere"]))
    assert g("ten_missed_far") >= 18


def near_return(r, tolerance=2):
    """Whether distance r lies within ``tolerance`` slots of 40 + j * 16 pi (j >= 1): a return of the slowed ruler's fastest pair."""
    return any(abs(r - (DIST + j * 16 * math.pi)) <= tolerance for j in range(1, 10))


def ref_rival(S, L):
    """The distance, at least L back, of the key the last query scores highest (ties to the farthest)."""
    last = S[-1]
    best = max(range(S.shape[0] - L), key=lambda n: (last[n], -n))
    return S.shape[0] - 1 - best


def test_near_return_count_has_controls():
    """The near-return test passes returns and fails what is not one, on numbers and on fixed heads."""
    assert near_return(90) and near_return(191) and near_return(240) and near_return(492)
    assert not near_return(115) and not near_return(511) and not near_return(64) and not near_return(417)
    # uniform attention (NoPE) prefers the farthest key, recency (ALiBi) the nearest beyond the window
    assert alt.far_rival(sh.fixed_head("none"), 512, L) == 511 and not near_return(511)
    assert alt.far_rival(sh.fixed_head("alibi"), 512, L) == L and not near_return(L)


def _ruler_heads(name, seeds, steps, task):
    k = DIST if task == "far" else OFF
    return [sh.train_position_head("rope", k, train_length=L, steps=steps, seed=s, operator=np.array(RULERS[name]))
            for s in seeds]


def test_ruler_head_count():
    """"That is 360 heads": every stored local head and far head, counted from the record."""
    heads = sum(len(r["stretch_accuracy"]) + sum(len(f["target"]) for f in r["far"].values()) for r in STUDY["rulers"].values())
    assert g("ruler_trained") == heads == 3 * 20 * (1 + 5)
    assert g("ruler_budgets") == len(STUDY["settings"]["budgets"]) == len(STUDY["rulers"][TEN]["far"]) == 5


def test_ruler_study_stored_point_recomputed():
    """Seed 0 of the slowed ruler at the table's budget, retrained and split by hand."""
    steps = STUDY["settings"]["table_steps"]
    (far,) = _ruler_heads(SLOW, [0], steps, "far")
    (local,) = _ruler_heads(SLOW, [0], steps, "local")
    split = ref_split(ref_scores(far, np.arange(512)), DIST, L)
    stored = STUDY["rulers"][SLOW]["far"][str(steps)]
    for value, key in zip(split, ("target", "neighbours", "beyond_window", "elsewhere")):
        assert value == pytest.approx(stored[key][0], rel=1e-6, abs=1e-9), key
    assert _task(local, 512, OFF)[0] == pytest.approx(STUDY["rulers"][SLOW]["stretch_accuracy"][0], abs=1e-12)
    assert ref_rival(ref_scores(far, np.arange(512)), L) == stored["rival"][0]


def test_ruler_directions_on_disjoint_seeds():
    """The prose's counted sentences about the rulers, re-run on seeds 1000-1019 (the study used 0-19)."""
    assert not set(HOLDOUT) & set(STUDY["settings"]["seeds"])
    steps = STUDY["settings"]["table_steps"]
    heads = {n: _ruler_heads(n, HOLDOUT, steps, "far") for n in (TEN, SLOW)}
    scores = {n: [ref_scores(h, np.arange(512)) for h in hs] for n, hs in heads.items()}
    split = {n: np.array([ref_split(S, DIST, L) for S in scores[n]]) for n in scores}
    ten, slow = split[TEN], split[SLOW]
    assert np.sum(slow[:, 0] < ten[:, 0]) >= 14  # the slowed ruler keeps less on the key in most seeds
    assert slow[:, 1].max() < 0.1  # not to the neighbours...
    assert g("slow_neighbours_max_check") == pytest.approx(slow[:, 1].max(), rel=1e-6)  # the dropdown's, from the readout
    assert np.sum(slow[:, 2] > slow[:, 1]) >= 14  # ...but to keys beyond the training window
    assert np.sum(slow[:, 2] >= 0.5) >= 5 and np.sum(slow[:, 0] >= 0.5) >= 3  # two groups of seeds
    # the mechanism: the best far key is a return of the fastest slowed pair, never the farthest key
    rivals = [ref_rival(S, L) for S in scores[SLOW]]
    assert sum(r == 511 for r in rivals) == 0 and sum(near_return(r) for r in rivals) >= 18
    thirds = sum(near_return(r) and round((r - DIST) / (16 * math.pi)) == 3 for r in rivals)
    firsts = sum(near_return(r) and round((r - DIST) / (16 * math.pi)) == 1 for r in rivals)
    assert thirds > firsts
    # base 10,000: the same kind of rival, at the stored mode, with far weaker capture
    assert sum(ref_rival(S, L) == g("ten_rival_mode") for S in scores[TEN]) >= 10
    assert np.sum(ten[:, 2] >= 0.5) <= 3 < np.sum(slow[:, 2] >= 0.5)
    assert np.sum(ten[:, 2] > ten[:, 1] + ten[:, 3]) >= 16
    # the table's far RoPE head (the same training): most seeds keep more than 0.8 on the key, with a long low tail
    assert np.sum(ten[:, 0] > 0.8) >= 14 and ten[:, 0].mean() > 0.8
    # "read the low ends as this draw of seeds": each ruler has a seed below the stored range here
    fast = np.array([ref_split(ref_scores(h, np.arange(512)), DIST, L) for h in _ruler_heads(FAST, HOLDOUT, steps, "far")])
    assert ten[:, 0].min() < g("rope10k_ret_long_min") and fast[:, 0].min() < g("rope500_ret_long_min") - 0.2
    assert 4 <= np.sum(fast[:, 0] > ten[:, 0]) <= 16  # no order between the two unscaled rulers
    # the dropdown's held-out ranges and count, trained in the chapter, against these hand-split heads
    for key, values in (("rope10k", ten[:, 0]), ("rope500", fast[:, 0])):
        for x, value in zip(SPREAD, (values.mean(), values.min(), values.max())):
            assert g(f"{key}_ret_long_check{x}") == pytest.approx(value, rel=1e-6), key + x
    assert np.abs(fast[:, 0] - ten[:, 0]).min() > 1e-6  # the count below is not decided by rounding
    assert g("r500_beats_10k_check") == np.sum(fast[:, 0] > ten[:, 0])
    # the budget, on all twenty held-out seeds (about 25 s; the prose's counts and ranges rest on seeds 0-19): blur at
    # 250 steps that is gone by 4,000, a share on the key that rises, and far rivals that still capture seeds
    lo = np.array([ref_split(ref_scores(h, np.arange(512)), DIST, L) for h in _ruler_heads(SLOW, HOLDOUT, 250, "far")])
    hi = np.array([ref_split(ref_scores(h, np.arange(512)), DIST, L) for h in _ruler_heads(SLOW, HOLDOUT, 4000, "far")])
    assert lo[:, 1].mean() > 5 * hi[:, 1].mean() and hi[:, 1].max() < 0.01 and hi[:, 0].mean() > lo[:, 0].mean()
    assert np.sum(hi[:, 2] >= 0.5) >= 4
    local = {n: np.array([_task(h, 512, OFF)[0] for h in _ruler_heads(n, HOLDOUT, steps, "local")]) for n in (TEN, FAST)}
    assert local[FAST].min() > 0.95 and local[FAST].mean() >= local[TEN].mean()
    assert g("rope500_stretch_8_min_check") == pytest.approx(local[FAST].min(), abs=1e-12)


def test_rope_losers_look_beyond_the_window():
    """The table's losing RoPE seeds, retrained and split by hand; and the direction on seeds 1000-1019."""
    losers = [s for s, acc in zip(RUN["settings"]["seeds"], STORED["rope"]["stretch_accuracy"]) if acc[-1] < 1]
    assert g("rope_losers_retrained") == len(losers)
    heads = [sh.train_position_head("rope", OFF, train_length=L, steps=RUN["settings"]["steps"], seed=s) for s in losers]
    far = [p for p in (ref_split(ref_scores(h, np.arange(512)), OFF, L) for h in heads) if p[2] > p[1] + p[3]]
    assert g("rope_losers_far") == len(far) and 2 * len(far) > len(losers)
    # the rival: a near-return of the three fastest pairs (each within 0.03 of a turn of its phase at the target)
    theta = RULERS[TEN]

    def offsets(r):
        return [abs((r - OFF) * t / (2 * math.pi) - round((r - OFF) * t / (2 * math.pi))) for t in theta]

    rivals = [ref_rival(ref_scores(h, np.arange(512)), L) for h in heads]
    back3 = [max(offsets(r)[:3]) < 0.03 for r in rivals]
    assert g("rope_losers_back3") == sum(back3) and 2 * sum(back3) > len(losers)
    common = [r for r, b in zip(rivals, back3) if b]
    assert g("rope_losers_rival") == max(set(common), key=common.count) == 382 and len(set(common)) == 1
    assert g("rope_losers_rival_pi") == pytest.approx((382 - OFF) / math.pi, rel=1e-12)
    assert round(g("rope_losers_rival_pi"), 3) == 120.003  # "five plus 120.003 times pi"
    assert g("rope_losers_off02") == pytest.approx(max(offsets(382)[0], offsets(382)[2]), rel=1e-9) and g("rope_losers_off02") < 0.002
    assert g("rope_losers_off1") == pytest.approx(offsets(382)[1], rel=1e-9) and g("rope_losers_off1") < 0.03
    others = [(s, r) for s, r, b in zip(losers, rivals, back3) if not b]
    assert g("rope_losers_others") == ", ".join(f"seed {s}'s at {r} (pair 2 {offsets(r)[2]:.2f} of a turn off)" for s, r in others)
    assert all(offsets(r)[2] > 0.1 for _, r in others)
    # "within 0.002 of a turn": the bound is the value rounded up, never down
    assert g("rope_losers_off02") <= g("rope_losers_off02_bound") < g("rope_losers_off02") + 0.001
    assert round(g("rope_losers_off02"), 3) < g("rope_losers_off02")  # the plain rounding would understate it
    # the other rival is a near-return of pairs 0 and 1 only
    assert [r for _, r in others] == [363]
    assert g("rope_losers_others_off0") == pytest.approx(offsets(363)[0], rel=1e-9) and g("rope_losers_others_off0") < 0.03
    assert g("rope_losers_others_off1") == pytest.approx(offsets(363)[1], rel=1e-9) and g("rope_losers_others_off1") < 0.03
    other = [sh.train_position_head("rope", OFF, train_length=L, seed=s) for s in HOLDOUT]
    lost = [ref_scores(h, np.arange(512)) for h in other if _task(h, 512, OFF)[0] < 1]
    assert len(lost) >= 3, "fewer than 3 losing seeds among 1000-1019: the direction could not be checked"
    # the chapter's own count on these seeds: losers, most of the miss beyond the window, the rival again at 382
    assert g("rope_losers_check") == len(lost)
    assert g("rope_losers_check_far") == sum(p[2] > p[1] + p[3] for p in (ref_split(S, OFF, L) for S in lost))
    assert g("rope_losers_check_rival") == sum(ref_rival(S, L) == 382 for S in lost)
    assert 2 * g("rope_losers_check_rival") > g("rope_losers_check")  # "again 382 back" for most of them
    assert sum(p[2] > p[1] + p[3] for p in (ref_split(S, OFF, L) for S in lost)) * 2 > len(lost)
    assert sum(max(offsets(ref_rival(S, L))[:3]) < 0.03 for S in lost) * 2 > len(lost)  # the same near-return


# ---- the two-layer check (stored run) ------------------------------------------------------------

TWO = json.loads((Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "runs" / "two_layer.json").read_text())
CELLS = {(r["scheme"], r["layers"], r["offset"]): r for r in TWO["rows"]}


def test_two_layer_glues_and_bounds():
    from ropegeo.toy.schemes import alibi_slopes

    from ropegeo.toy import two_layer as tl

    s = TWO["settings"]
    assert s["seeds"] == list(range(20)) and g("tl_seeds") == 20 and g("tl_length") == s["length"] == 64
    # the setup paragraph: the stored run's steps and slope, and the code's width and learning rate it did not set
    assert (g("tl_steps"), g("tl_slope")) == (s["steps"], s["slope"]) == (600, 0.5)
    model = tl.train("nope", 2, 1, length=16, steps=3, seed=0)
    assert model.params["E"].shape == (2, g("tl_head_dim")) == (2, 8)  # one learned embedding per token, width 8
    same = tl.train("nope", 2, 1, length=16, steps=3, seed=0, lr=g("tl_lr"))
    assert all(np.array_equal(model.params[k], same.params[k]) for k in model.params)  # the default learning rate
    assert not np.array_equal(tl.train("nope", 2, 1, length=16, steps=3, seed=0, lr=g("tl_lr") / 2).params["E"], model.params["E"])
    # "the steepest slope of an eight-head model": stored by another run of numpy's pow, so within an ulp
    assert_ulps(s["slope"], alibi_slopes(8)[0], ulps=1)
    n = s["length"]
    assert g("tl_nope1_k1_max") == max(CELLS[("nope", 1, 1)]["accuracy"]) <= 2 / (n - 1) + 1e-12
    assert g("tl_nope2_k1_min") == min(CELLS[("nope", 2, 1)]["accuracy"]) == 1.0
    assert g("tl_nope2_k1_mass") == pytest.approx(np.mean(CELLS[("nope", 2, 1)]["mass"]))
    assert g("tl_alibi1_k1_mass") == pytest.approx(np.mean(CELLS[("alibi", 1, 1)]["mass"]))
    assert g("tl_alibi2_k1_mass") == pytest.approx(np.mean(CELLS[("alibi", 2, 1)]["mass"]))
    assert g("tl_alibi2_k1_mass") > g("tl_alibi1_k1_mass")
    assert g("tl_k5_max") == max(max(r["accuracy"]) for k, r in CELLS.items() if k[2] == 5) < 0.1
    # NoPE, two layers: the probe's score is monotone in the start token's share over the token keys,
    # so only the queries whose target is the start token (i = 5) or the first token key (i = 6) can win
    assert max(CELLS[("nope", 2, 5)]["accuracy"]) <= 2 / (n - 5) + 1e-12
    assert g("tl_nope2_k5_max") == max(CELLS[("nope", 2, 5)]["accuracy"]) == pytest.approx(2 / (n - 5), rel=1e-12)


def test_two_layer_stored_point_and_direction_on_disjoint_seeds():
    from ropegeo.toy import two_layer as tl

    s = TWO["settings"]
    first = tl.probe(tl.train("nope", 2, 1, length=64, steps=s["steps"], slope=s["slope"], seed=0), 64)
    assert first["accuracy"] == CELLS[("nope", 2, 1)]["accuracy"][0]
    assert first["mass"] == pytest.approx(CELLS[("nope", 2, 1)]["mass"][0], abs=1e-6)
    assert not set(HOLDOUT) & set(s["seeds"])
    alibi = {1: [], 2: []}
    for seed in HOLDOUT:
        one = tl.probe(tl.train("nope", 1, 1, length=64, steps=s["steps"], seed=seed), 64)
        two = tl.probe(tl.train("nope", 2, 1, length=64, steps=s["steps"], seed=seed), 64)
        assert two["accuracy"] == 1.0 and one["accuracy"] <= 2 / 63 + 1e-12, seed  # every query; the bound
        for layers in (1, 2):
            alibi[layers].append(tl.probe(tl.train("alibi", layers, 1, length=64, steps=s["steps"], slope=s["slope"],
                                                   seed=seed), 64)["mass"])
        for scheme in tl.SCHEMES:
            far = tl.probe(tl.train(scheme, 2, 5, length=64, steps=s["steps"], slope=s["slope"], seed=seed), 64)
            assert far["accuracy"] < 0.1
    assert np.mean(alibi[2]) > np.mean(alibi[1])  # the second layer sharpens ALiBi's recency


# ---- content needle among blanks (gain 8, 512 tokens: the last query sees 511 keys) ------------------


def needle_mass(scores, needle):
    w = np.exp(np.array(scores) - max(scores))
    return w[needle] / w.sum()


def test_needle_numbers():
    gain, m = 8.0, 511
    theta = [10_000 ** (-2 * i / 16) for i in range(8)]
    e = math.exp(gain)
    assert g("none_needle") == pytest.approx(e / (e + m - 1), rel=1e-10)
    for key, slope, D in (("alibi0_needle_40", 2.0**-1, 40), ("alibi7_needle_400", 2.0**-8, 400)):
        scores = [(gain if d == D else 0.0) - slope * d for d in range(1, m + 1)]
        assert g(key) == pytest.approx(needle_mass(scores, D - 1), rel=1e-9), key
    for D in (5, 40, 400):
        K = sum(math.cos(D * t) for t in theta) / 8  # u . R_D u with weight 2/d per pair
        assert g(f"rope_needle_{D}") == pytest.approx(math.exp(gain * K) / (math.exp(gain * K) + m - 1), rel=1e-9)
    c = math.cos(400 * theta[-1])
    assert g("rope_slow_needle_400") == pytest.approx(math.exp(gain * c) / (math.exp(gain * c) + m - 1), rel=1e-9)
    assert g("slow_turn_400") == pytest.approx(400 * theta[-1], rel=1e-12)
    assert g("slow_wavelength") == pytest.approx(2 * math.pi * 10_000 ** (14 / 16), rel=1e-12)
    # "less than 10⁻⁵" and "less than 10⁻⁸": the least power of ten above each value
    for key, exponent in (("alibi0_needle_40", -5), ("sin_needle_40", -8)):
        assert 10.0 ** (exponent - 1) < g(key) < 10.0**exponent, key
        assert g(f"{key}_bound") == "10" + {-5: "⁻⁵", -8: "⁻⁸"}[exponent]
    # sinusoidal: the code is added to every slot, blanks included; score = gain (h_i . h_j) with h = x + PE
    u = [math.sqrt(2 / 16) if c % 2 == 0 else 0.0 for c in range(16)]
    h_last = np.add(u, ref_code(511, 16))
    scores = []
    for j in range(511):
        h = np.add(u if j == 511 - 40 else [0.0] * 16, ref_code(j, 16))
        scores.append(gain * float(h_last @ h))
    assert g("sin_needle_40") == pytest.approx(needle_mass(scores, 511 - 40), rel=1e-6)


# ---- most-recent match: every scheme's match head, re-scored by hand -------------------------------


def match_sequences(length):
    """The sequences ``match_task`` documents: 8 of them, tokens uniform over 8 types, seed 12345."""
    return np.random.default_rng(12345).integers(0, 8, size=(8, length))


def latest_copies(tok):
    """Per scored query: (batch, slot, slot of the latest earlier copy, number of earlier copies)."""
    out = []
    for b in range(tok.shape[0]):
        for m in range(tok.shape[1]):
            copies = [n for n in range(m) if tok[b, n] == tok[b, m]]
            if copies:
                out.append((b, m, copies[-1], len(copies)))
    return out


def ref_match_scores(head, tok):
    lay, name = head.layer, head.name
    n = tok.shape[1]
    pos = np.arange(n)
    if name in ("absolute", "sinusoidal"):
        P = lay.scheme.table[:n] if name == "absolute" else np.array([ref_code(p, 16) for p in pos])
        H = head.embedding[tok] + P
        return np.einsum("bmd,bnd->bmn", H @ lay.Wq, H @ lay.Wk) / 4
    if name == "rope":
        theta = lay.scheme.options["theta"]
        Qr = np.stack([ref_rotated(lay.Wq[v], pos, theta) for v in range(8)])  # (vocab, L, d)
        Kr = np.stack([ref_rotated(lay.Wk[v], pos, theta) for v in range(8)])
        Q, K = Qr[tok, pos], Kr[tok, pos]
        return np.einsum("bmd,bnd->bmn", Q, K) / 4
    Q, K = lay.Wq[tok], lay.Wk[tok]  # one-hot inputs: row t of each projection
    S = np.einsum("bmd,bnd->bmn", Q, K) / 4
    if name == "alibi":
        S = S - 0.5 * np.abs(pos[:, None] - pos[None, :])
    elif name == "t5":
        buckets = {dlt: ref_bucket(dlt, False) for dlt in range(-n, n)}
        S = S + lay.scheme.table[np.vectorize(buckets.get)(pos[None, :] - pos[:, None])]
    elif name == "relative":
        a = lay.scheme.key_table
        r = np.clip(pos[None, :] - pos[:, None], -16, 16) + 16
        S = S + np.einsum("bmd,mnd->bmn", Q, a[r]) / 4
    return S


def ref_match_accuracy(head, length):
    tok = match_sequences(length)
    S = ref_match_scores(head, tok)
    correct = []
    for b, m, t, _ in latest_copies(tok):
        row = S[b, m, :m]
        w = np.exp(row - row.max())
        w /= w.sum()
        correct.append(all(w[t] > w[j] for j in range(m) if j != t))
    return float(np.mean(correct))


def test_match_closed_forms():
    copies = latest_copies(match_sequences(L))
    once = np.mean([c == 1 for _, _, _, c in copies])
    assert g("none_once_share") == pytest.approx(once, abs=1e-12)
    # NoPE can only be right where a single earlier copy exists, and the trained head is right there
    assert g("none_match_train") == pytest.approx(once, abs=1e-12)
    # exactly 1/7 by counting, sequence by sequence: 56 queries with an earlier copy, 8 of them with exactly one
    tok = match_sequences(L)
    per_seq = [(sum(1 for b, _, _, _ in copies if b == k), sum(1 for b, _, _, c in copies if b == k and c == 1))
               for k in range(tok.shape[0])]
    assert set(per_seq) == {(g("none_queries_per_seq"), g("none_second_per_seq"))} == {(56, 8)}
    assert g("none_once_share") == pytest.approx(1 / 7, abs=1e-15)
    tied = np.mean([m - t >= 16 and c >= 2 for _, m, t, c in copies])
    assert g("relative_tie_ceiling") == pytest.approx(1 - tied, abs=1e-12)
    assert g("relative_match_train") <= g("relative_tie_ceiling") + 1e-12


# ---- why a slowed seed is captured: the stored readout (scripts/make_ruler_readout.py) -----------------

READOUT = json.loads((Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "runs" / "ruler_readout.json").read_text())
# Measured: the 40 stored heads retrained under AVX-512, NPY_DISABLE_CPU_FEATURES=X86_V4 and "X86_V3 X86_V4" with
# OPENBLAS_CORETYPE=Prescott agree to 4e-9 relative (7e-8 absolute on a slow-pair difference of about 30); 1e-7
# relative is 25 times that and far below any change the prose could notice.
TRAINING_SPREAD = 1e-7


def ref_pair_terms(head, length):
    """Each pair's term in the last query's score against the keys 1 .. length - 1 back: (pairs, length - 1), by hand."""
    theta = head.layer.scheme.options["theta"]
    q = ref_rotated(head.layer.Wq[0], [length - 1], theta)[0]
    K = ref_rotated(head.layer.Wk[0], range(length - 1), theta)[::-1]  # row r - 1: the key r back
    return np.array([K[:, 2 * i: 2 * i + 2] @ q[2 * i: 2 * i + 2] for i in range(len(theta))]) / 4


def ref_readout(head, length=512):
    """(rival, pair-0 gap, slow gap, slope over distances 30..63, pair-0 weight) from the raw parameters."""
    P = ref_pair_terms(head, length)
    rival = ref_rival(ref_scores(head, np.arange(length)), L)
    slow = P[1:].sum(axis=0)
    x = np.arange(30, L, dtype=float)
    y = slow[29: L - 1]
    slope = np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2)  # least squares, written out
    q0, k0 = head.layer.Wq[0][:2], head.layer.Wk[0][:2]
    return rival, P[0, rival - 1] - P[0, DIST - 1], slow[rival - 1] - slow[DIST - 1], slope, math.hypot(*q0) * math.hypot(*k0) / 4


def ref_per_query(S, k=DIST, L_=L):
    """(last query's mass >= L_ back, share of queries k.. with half or more there, first query from which all do)."""
    far = []
    for m in range(k, S.shape[0]):
        row = S[m, :m]
        w = np.exp(row - row.max())
        far.append(w[m - np.arange(m) >= L_].sum() / w.sum())
    held = [f >= 0.5 for f in far]
    start = -1
    if held[-1]:
        start = k + len(held)
        while start > k and held[start - 1 - k]:
            start -= 1
    return far[-1], sum(held) / len(held), start


def _matches_record(stored, seeds_key, index, computed):
    """Whether one seed's recomputed (split, readout) agrees with the stored record to the training spread."""
    rec = {k: v[index] for k, v in stored[seeds_key].items()}
    split, (rival, g0, gs, slope, w0), (last, share, start) = computed
    if rec["rival"] != rival or rec["captured_from"] != start or rec["captured_queries"] != pytest.approx(share, abs=1e-12):
        return False
    pairs = list(zip(split, (rec[k] for k in ("target", "neighbours", "beyond_window", "elsewhere"))))
    pairs += [(g0, rec["pair0_gap"]), (gs, rec["slow_gap"]), (slope, rec["slow_slope"]), (w0, rec["pair0_weight"]),
              (last, rec["last_beyond"])]
    return all(a == pytest.approx(b, rel=TRAINING_SPREAD, abs=1e-9) for a, b in pairs)


@pytest.fixture(scope="module")
def readout_heads():
    s = READOUT["settings"]
    assert (s["distance"], s["train_length"], s["length"], s["steps"], s["slope_from"]) == (DIST, L, 512, 1000, 30)
    assert s["seeds"] == STUDY["settings"]["seeds"] and s["check_seeds"] == list(HOLDOUT)
    assert s["further_seeds"] == list(range(1020, 1060))
    return {w: _ruler_heads(SLOW, s[w], s["steps"], "far") for w in ("seeds", "check_seeds", "further_seeds")}


def test_ruler_readout_is_the_retrained_heads(readout_heads):
    """Every stored seed retrained and read out by hand; a changed record fails the same comparison."""
    computed = {w: [(ref_split(S, DIST, L), ref_readout(h), ref_per_query(S))
                    for h in hs for S in [ref_scores(h, np.arange(512))]] for w, hs in readout_heads.items()}
    for w, rows in computed.items():
        for i, row in enumerate(rows):
            assert _matches_record(READOUT, w, i, row), (w, READOUT["settings"][w][i])
    # the stored ruler study's seeds are the same heads: the same split and rival
    far = STUDY["rulers"][SLOW]["far"]["1000"]
    for i, (split, read, _) in enumerate(computed["seeds"]):
        assert read[0] == far["rival"][i] and split[2] == pytest.approx(far["beyond_window"][i], rel=1e-6, abs=1e-9)
    # negative control: the comparison notices a record moved by 1e-5 relative, or a different rival
    changed = json.loads(json.dumps(READOUT))
    changed["seeds"]["slow_gap"][2] *= 1 + 1e-5
    assert not _matches_record(changed, "seeds", 2, computed["seeds"][2])
    changed["seeds"]["slow_gap"][2] = READOUT["seeds"]["slow_gap"][2]
    changed["seeds"]["rival"][2] += 1
    assert not _matches_record(changed, "seeds", 2, computed["seeds"][2])
    changed["seeds"]["rival"][2] = READOUT["seeds"]["rival"][2]
    changed["seeds"]["captured_from"][2] += 1  # and a capture start moved by one query
    assert not _matches_record(changed, "seeds", 2, computed["seeds"][2])


def test_pair_profile_and_readout_functions_against_the_hand_derivation(readout_heads):
    head = readout_heads["seeds"][0]
    P = alt.pair_profile(head, 512)
    np.testing.assert_allclose(P, ref_pair_terms(head, 512), rtol=0, atol=1e-9 * np.abs(P).max())
    np.testing.assert_allclose(P.sum(axis=0), ref_scores(head, np.arange(512))[-1, -2::-1], rtol=0, atol=1e-9 * np.abs(P).max())
    got, want = alt.rival_readout(head, 512, DIST, L), ref_readout(head)
    assert got.rival == want[0] and np.allclose(got[1:], want[1:], rtol=1e-9, atol=1e-9)
    for bad in ({"length": 3}, {"distance": 64}, {"train_length": 512}, {"slope_from": 62}):
        args = {"length": 512, "distance": DIST, "train_length": L, **bad}
        with pytest.raises(ValueError, match=next(iter(bad))):
            alt.rival_readout(head, args["length"], args["distance"], args["train_length"], slope_from=args.get("slope_from", 30))
    with pytest.raises(ValueError, match="head"):
        alt.pair_profile(sh.fixed_head("alibi"), 64)


def _built_head(slow_sign):
    """A slowed-ruler head built by hand: pair 0 peaks at distance 40 (weight 500), pair 3 alone carries a slope
    through the window, rising with distance (slow_sign = +1) or falling (-1). The labelled controls of the rule."""
    head = sh.train_position_head("rope", DIST, train_length=L, steps=1, operator=np.array(RULERS[SLOW]))
    th = RULERS[SLOW]
    best = None
    for sign in (1, -1):  # the rotation's sign convention, found rather than assumed
        Wq, Wk = np.zeros(16), np.zeros(16)
        Wq[0], Wk[0:2] = math.sqrt(2000), math.sqrt(2000) * np.array([math.cos(sign * DIST * th[0]), math.sin(sign * DIST * th[0])])
        head.layer.Wq[0], head.layer.Wk[0] = Wq, Wk
        if int(np.argmax(ref_pair_terms(head, 64)[0])) + 1 == DIST:
            best = Wk.copy()
    head.layer.Wk[0] = best
    for phase in (math.pi / 2, -math.pi / 2):
        head.layer.Wq[0][6], head.layer.Wk[0][6:8] = math.sqrt(80), math.sqrt(80) * np.array([math.cos(phase), math.sin(phase)])
        slow = ref_pair_terms(head, 512)[3]
        if np.sign(slow[62] - slow[29]) == slow_sign:
            return head
    raise AssertionError("no phase gave the wanted slope")


@pytest.mark.parametrize("slow_sign, captured", [(1, True), (-1, False)])
def test_readout_rule_has_labelled_controls(slow_sign, captured):
    """A rising slow-pair slope must lift a return above the target (captured); a falling one must not."""
    head = _built_head(slow_sign)
    read = alt.rival_readout(head, 512, DIST, L)
    split = alt.attention_split(head, 512, DIST, L)
    assert near_return(read.rival) and read.pair0_weight == pytest.approx(500, rel=1e-12)
    assert (read.slow_slope > 0, read.slow_gap > 0, split.beyond_window >= 0.5) == (captured, captured, captured)
    assert abs(read.pair0_gap) < 1.0  # at a return the fastest pair gives almost what it gives at 40


def test_readout_glues_and_the_counts_on_disjoint_seeds():
    """Every glued readout number from the stored JSON in plain Python; the counts hold on seeds 1000-1019."""
    lam0 = 16 * math.pi
    for w, key in (("seeds", ""), ("check_seeds", "_check")):
        r, seeds = READOUT[w], READOUT["settings"][w]
        cap = [b >= 0.5 for b in r["last_beyond"]]
        j = [round((x - DIST) / lam0) for x in r["rival"]]
        at = [near_return(x) for x in r["rival"]]
        assert g(f"rd_n{key}") == len(seeds) == 20 and g(f"rd_captured{key}") == sum(cap)
        assert g(f"rd_gap_agree{key}") == sum((x > 0) == c for x, c in zip(r["slow_gap"], cap)) >= 19
        capq = [x for x, c in zip(r["captured_queries"], cap) if c]
        assert (g(f"rd_cap_queries_min{key}"), g(f"rd_cap_queries_max{key}")) == (min(capq), max(capq))
        assert g(f"rd_kept_queries_max{key}") == max(x for x, c in zip(r["captured_queries"], cap) if not c)
        assert g(f"rd_cap_from_max{key}") == max(x for x, c in zip(r["captured_from"], cap) if c)
        assert g(f"rd_slope_agree{key}") == sum((x > 0) == c for x, c in zip(r["slow_slope"], cap)) >= 16
        assert g(f"rd_gap_miss{key}") == ", ".join(str(s) for s, x, c in zip(seeds, r["slow_gap"], cap) if (x > 0) != c)
        assert g(f"rd_slope_miss{key}") == ", ".join(str(s) for s, x, c in zip(seeds, r["slow_slope"], cap) if (x > 0) != c)
        assert g(f"rd_at_return{key}") == sum(at) == 20  # every rival at a return of the fastest pair; never the farthest key
        assert all(x != 511 for x in r["rival"])
        assert g(f"rd_third{key}") == sum(a and n == 3 for a, n in zip(at, j))
        for n in (4, 7, 9):
            assert g(f"rd_captured_j{n}{key}") == sum(a and c and m == n for a, c, m in zip(at, cap, j))
        # the fastest pair: heavy, and almost the same at the rival as at the target
        assert min(r["pair0_weight"]) > 400 and max(abs(x) for x in r["pair0_gap"]) < 4
    r = READOUT["seeds"]
    cap = [b >= 0.5 for b in r["last_beyond"]]
    capg = [x for x, c in zip(r["slow_gap"], cap) if c]
    kept = [x for x, c in zip(r["slow_gap"], cap) if not c]
    assert (g("rd_cap_gap_min"), g("rd_cap_gap_max")) == (min(capg), max(capg)) and min(capg) > 0  # "in every captured seed"
    assert g("rd_kept") == len(kept) and g("rd_kept_negative") == sum(x < 0 for x in kept)
    assert g("rd_kept_gap_most") == -min(kept) and g("rd_kept_gap_least") == -max(x for x in kept if x < 0)
    assert (g("rd_w0_min"), g("rd_w0_max")) == (min(r["pair0_weight"]), max(r["pair0_weight"]))
    assert g("rd_pair0_gap_max") == max(abs(x) for x in r["pair0_gap"]) < 1
    # "the third return is the most frequent rival here ... on seeds 1000-1019 in only 9 of 20", farther returns there
    assert g("rd_third") == g("slow_rival_third") > 10 and g("rd_third_check") < g("rd_third")
    assert g("rd_captured_j7_check") > max(g("rd_captured_j4_check"), g("rd_captured_j9_check"))
    # the farthest key: the fastest pair's phase there, in turns from its phase at the target
    turns = (511 - DIST) / lam0
    assert g("rd_far_off") == pytest.approx(abs(turns - round(turns)), rel=1e-12) and g("rd_far_off") > 0.25
    # a seed captured from a late query on averages near or below one half over all queries: the mean blurs capture
    assert any(c and b < 0.5 for c, b in zip(cap, r["beyond_window"]))
    assert g("rd_cap_queries_min") < 0.75 < g("rd_cap_queries_max") and g("rd_kept_queries_max") == 0
    # the same weight and fastest-pair gap on seeds 1000-1019, glued beside seeds 0-19's
    c = READOUT["check_seeds"]
    assert (g("rd_w0_min_check"), g("rd_w0_max_check")) == (min(c["pair0_weight"]), max(c["pair0_weight"]))
    assert g("rd_pair0_gap_max_check") == max(abs(x) for x in c["pair0_gap"]) > 3 * g("rd_pair0_gap_max")
    # marginal seeds: the slower pairs' gap under 1.5 in size, the fastest pair's gap of the same order there
    for w, key in (("seeds", ""), ("check_seeds", "_check")):
        small = [(abs(a), abs(b)) for a, b in zip(READOUT[w]["pair0_gap"], READOUT[w]["slow_gap"]) if abs(b) < 1.5]
        assert g(f"rd_marginal{key}") == len(small) >= 1
        assert g(f"rd_marginal_pair0{key}") == max(a for a, _ in small) and g(f"rd_marginal_slow_max{key}") == max(b for _, b in small)
    assert g("rd_marginal_pair0") > 0.5 * min(b for a, b in zip(READOUT["seeds"]["pair0_gap"], READOUT["seeds"]["slow_gap"])
                                              if abs(b) < 1.5)  # "of the same order"


def test_readout_on_forty_further_seeds():
    """Seeds 1020-1059: the slope's sign near the base rate; the slower pairs' gap and the returns replicate."""
    r, lam0 = READOUT["further_seeds"], 16 * math.pi
    cap = [b >= 0.5 for b in r["last_beyond"]]
    n = len(cap)
    assert g("rd_n_further") == n == 40 and g("rd_captured_further") == sum(cap)
    slope = sum((x > 0) == c for x, c in zip(r["slow_slope"], cap))
    assert g("rd_slope_agree_further") == slope
    base = max(sum(cap), n - sum(cap))  # the better constant guess
    assert abs(slope - base) <= 0.1 * n  # "near the base rate", not the 18/20 and 19/20 of the stored sets
    assert slope / n < min(g("rd_slope_agree") / g("rd_n"), g("rd_slope_agree_check") / g("rd_n_check")) - 0.15
    assert g("rd_gap_agree_further") == sum((x > 0) == c for x, c in zip(r["slow_gap"], cap)) == n
    j = [round((x - DIST) / lam0) for x in r["rival"]]
    at = [abs(x - (DIST + k * lam0)) <= 2 for x, k in zip(r["rival"], j)]
    assert g("rd_at_return_further") == sum(at) == n
    assert g("rd_third_further") == sum(a and k == 3 for a, k in zip(at, j)) > n // 2


def test_third_return_pair_by_pair():
    """At the third return pair 1 is nearly back; the slower pairs' lead at the rival comes from pairs 2-7 (by hand)."""
    r, seeds = READOUT["seeds"], READOUT["settings"]["seeds"]
    sel = [i for i, (b, x) in enumerate(zip(r["last_beyond"], r["rival"])) if b >= 0.5 and round((x - DIST) / (16 * math.pi)) == 3]
    heads = _ruler_heads(SLOW, [seeds[i] for i in sel], READOUT["settings"]["steps"], "far")
    p1, p27 = [], []
    for i, h in zip(sel, heads):
        P = ref_pair_terms(h, 512)
        gap = P[:, r["rival"][i] - 1] - P[:, DIST - 1]
        p1.append(gap[1])
        p27.append(gap[2:].sum())
    assert g("rd_third_cap") == len(sel) >= 5 and g("rd_p1_against") == sum(x < 0 for x in p1) >= len(sel) - 2
    assert g("rd_p27_min") == pytest.approx(min(p27), rel=1e-6) and min(p27) > 0
    assert g("rd_p27_max") == pytest.approx(max(p27), rel=1e-6)
    assert g("rd_p27_share_min") == pytest.approx(min(b / (a + b) for a, b in zip(p1, p27)), rel=1e-6)
    # pair 1 over the span: 3 lam0 / lam1 turns, nearly one
    assert 0.9 < g("slow_pair1_turns") < 1


def test_rival_figure_draws_the_slower_pairs():
    from ropegeo.book.plots.alternatives import learned_profiles

    head = sh.train_position_head("rope", DIST, steps=20, operator=np.array(RULERS[SLOW]))
    fig = learned_profiles([head, sh.fixed_head("alibi")], target=DIST, layout="grid", slow_pairs=True)
    twin = [ax for ax in fig.axes if ax.get_ylabel().startswith("slower pairs")]
    assert len(twin) == 1  # the rope head's panel only
    panels = [ax for ax in fig.axes if ax not in twin and ax.get_visible()]
    assert len(panels) == 2 and len({round(ax.get_position().x0, 6) for ax in panels}) == 1  # stacked: one column
    y = twin[0].lines[0].get_ydata()
    slow = ref_pair_terms(head, 512)[1:].sum(axis=0)
    np.testing.assert_allclose(y, slow - slow[DIST - 1], rtol=0, atol=1e-9 * np.abs(slow).max())
    for bad in ({"layout": "overlay"}, {"target": None}):
        with pytest.raises(ValueError, match="slow_pairs"):
            learned_profiles(head, **{"target": DIST, "layout": "grid", "slow_pairs": True, **bad})
    with pytest.raises(ValueError, match="slow_pairs"):
        learned_profiles(head, target=DIST, layout="grid", slow_pairs="yes")
