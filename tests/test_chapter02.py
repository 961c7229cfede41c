"""Chapter 2's numbers, read from the stored notebook outputs, against independent derivations.

Nothing here calls ropegeo's rotation code: rotations are rebuilt with explicit cosines and
sines, frequencies with the closed form ``base ** (-2 i / d)``, and the expected values come from
the identities the chapter derives (zero change under a global shift, a closed-form score split,
the Dirichlet kernel for the coherence of characters, ...).
"""

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from glue import read_glued

NB = Path(__file__).resolve().parents[1] / "chapters" / "02_complex_rotation.ipynb"


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NB, as_version=4)


@pytest.fixture(scope="module")
def glued():
    return read_glued(NB)[0]


def rot(x, pos, theta):
    """Interleaved rotary rotation by explicit cos/sin: x (..., 2P), pos broadcast to x.shape[:-1]."""
    x = np.asarray(x, dtype=float)
    ang = np.asarray(pos, dtype=float)[..., None] * np.asarray(theta)
    c, s = np.cos(ang), np.sin(ang)
    out = np.empty(np.broadcast_shapes(x.shape, c.shape[:-1] + (x.shape[-1],)))
    a, b = x[..., 0::2], x[..., 1::2]
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def freqs(d, base=10_000.0):
    return np.array([base ** (-2 * i / d) for i in range(d // 2)])


# ---------------------------------------------------------------- the notebook itself


def test_every_glue_reference_is_glued(nb, glued):
    refs = set()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            refs |= set(re.findall(r"\{glue:text\}`([a-z_0-9]+)", cell.source))
    assert refs, "the chapter states no glued numbers"
    assert refs <= set(glued), f"unglued references: {sorted(refs - set(glued))}"


def test_every_glued_number_has_a_test_below(glued):
    """A number added to the chapter must be added here too, with its independent derivation."""
    tested = {
        "additive_scale", "additive_shift_change", "amp_amplitude", "amp_gamma", "amp_peak", "amp_peak_numeric",
        "bound_250", "bound_zero", "complex_gap", "counter_bound_ratio", "cos_max", "cos_min", "counter_peak", "counter_ratio",
        "decay_seeds", "dft_rows_changed", "fast_angle", "grid_pairs", "mass_healthy", "mass_routing", "mass_value",
        "max_coherence", "norm_change", "numpy_rope_tol", "off_block_max", "query_only_change", "read_healthy",
        "read_routing", "read_value", "value_wrap_weight", "rope_rows_changed", "rope_shift_change", "rounding_bound", "routed_healthy",
        "routed_routing", "routed_value", "s_forward", "s_oriented", "s_parallel_forward", "s_parallel_swapped",
        "s_antiparallel_forward", "s_antiparallel_swapped", "trained_near_negative", "trained_near_median",
        "trained_near_p10", "trained_near_p90", "further_near_negative", "further_near_median", "further_near_p10",
        "further_near_p90", "further_seeds", "trained_ratio_median", "trained_ratio_p10", "trained_ratio_p90",
        "further_ratio_median", "further_ratio_p10", "further_ratio_p90", "further_far_wins", "further_reach_above",
        "further_reach_ratio_min", "further_reach_ratio_max",
        "bound_far_mean", "bound_far_low", "bound_far_high", "bound_kernel_corr", "normal_form_planes", "corr_samples", "corr_max_z", "corr_kernel_250",
        "far_kernel_max", "far_kernel_at",
        "s_swapped", "s_symmetric", "score_scale", "shift_bound", "angle_spacing", "shift_gap_half", "shift_gap_interleaved",
        "slow_angle", "trained_far_wins", "trained_peak_at_target", "figure_seeds", "reach_share_min", "reach_share_max", "reach_ratio_min", "reach_ratio_max",
        "trained_near_min", "trained_near_max", "further_near_min", "further_near_max", "further_peak_at_target",
        "further_reach_share_min", "further_reach_share_max", "reach_above_all", "all_seeds",
        "rope_shift_ceiling", "first_u_miss", "first_v_miss", "first_fastest_even", "first_odd_low", "first_odd_high",
        "best_phase_miss", "best_close_pairs", "best_close_miss", "defect_b_slot", "defect_b_token",
        "near_median_move", "near_outer_move", "near_max_move", "window_low", "window_high", "window_below",
        "window_count", "window_first16", "window_last16", "further_window_low", "further_window_high",
        "further_window_below", "window_rise_seeds", "further_window_rise_seeds",
    }
    assert set(glued) == tested


def test_no_errors_and_figures_shown(nb):
    pngs = 0
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o.output_type != "error", o.get("evalue")
            pngs += "image/png" in o.get("data", {})
    assert pngs >= 3


def test_exercises_and_solutions(nb):
    from ropegeo.book.exercises import exercise_ids

    labels = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            labels += re.findall(r"```\{exercise\}\n:label: (ch02-[a-z0-9-]+)", cell.source)
    assert len(labels) >= 4
    assert set(labels) <= set(exercise_ids("ch02"))
    verdicts = [
        o["data"]["text/plain"]
        for cell in nb.cells
        if "solution" in cell.get("metadata", {}).get("tags", [])
        for o in cell.get("outputs", [])
        if "[ch02-" in o.get("data", {}).get("text/plain", "")
    ]
    assert len(verdicts) == len(labels) and all("correct:" in v for v in verdicts)


def test_opens_with_goals_and_hidden_setup(nb):
    assert "What you will be able to do" in nb.cells[0].source
    assert "hide-cell" in nb.cells[1].metadata.get("tags", [])


# ---------------------------------------------------------------- the numbers


def test_complex_gap(glued):
    # complex multiplication and the rotation are the same map: only rounding may separate them
    assert 0 <= glued["complex_gap"] < 1e-14


def test_rounding_is_stated_as_a_bound(nb, glued):
    """Quantities that are only rounding appear in the prose as bounds, with room to spare, never as digits."""
    assert glued["rounding_bound"] == 1e-12 and glued["shift_bound"] == 1e-10
    # 2**13 <= 10,000 < 2**14, and float64 keeps 52 bits after the leading one
    assert glued["angle_spacing"] == 2.0 ** (13 - 52)
    for name in ("complex_gap", "norm_change"):
        assert glued[name] < glued["rounding_bound"] / 100, name
    for name in ("shift_gap_interleaved", "shift_gap_half", "rope_shift_change"):
        assert glued[name] < glued["shift_bound"] / 10, name
    # the rotary shift's bound states its size: above the measured change, within a factor 100 of it
    assert glued["rope_shift_change"] < glued["rope_shift_ceiling"] < 100 * glued["rope_shift_change"]
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for name in ("complex_gap", "norm_change", "shift_gap_interleaved", "shift_gap_half", "rope_shift_change"):
        assert f"`{name}:" not in prose, name


def test_global_shift(glued):
    # the relative law says a global shift changes nothing; angles near 1e4 rad round at ~1e-12
    assert 0 <= glued["shift_gap_interleaved"] < 1e-10
    assert 0 <= glued["shift_gap_half"] < 1e-10
    rng = np.random.default_rng(2)
    Q, K = rng.normal(size=(6, 64)), rng.normal(size=(6, 64))
    th, pos = freqs(64), np.arange(6.0)
    base_scores = rot(Q, pos, th) @ rot(K, pos, th).T
    moved = rot(Q, pos + 10_000, th) @ rot(K, pos, th).T
    assert glued["score_scale"] == pytest.approx(np.abs(base_scores).max(), rel=1e-9)
    assert glued["query_only_change"] == pytest.approx(np.abs(moved - base_scores).max(), rel=1e-6)
    assert glued["query_only_change"] > 1.0  # a one-sided shift is a real change


def test_score_split_numbers(glued):
    q, k, th, d = np.array([1.0, 0.5]), np.array([0.3, 1.0]), 0.35, 4
    dot, cross = 1.0 * 0.3 + 0.5 * 1.0, 1.0 * 1.0 - 0.5 * 0.3
    assert glued["s_symmetric"] == pytest.approx(dot * np.cos(d * th), rel=1e-12)
    assert glued["s_oriented"] == pytest.approx(-cross * np.sin(d * th), rel=1e-12)
    # score from complex numbers: Re(conj(zq e^{i 3 th}) zk e^{i 7 th})
    zq, zk = complex(*q), complex(*k)
    fwd = (np.conj(zq * np.exp(3j * th)) * zk * np.exp(7j * th)).real
    sw = (np.conj(zq * np.exp(7j * th)) * zk * np.exp(3j * th)).real
    assert glued["s_forward"] == pytest.approx(fwd, rel=1e-12)
    assert glued["s_swapped"] == pytest.approx(sw, rel=1e-12)
    assert glued["s_forward"] == pytest.approx(glued["s_symmetric"] + glued["s_oriented"], rel=1e-12)
    assert glued["s_swapped"] == pytest.approx(glued["s_symmetric"] - glued["s_oriented"], rel=1e-12)
    par = 2.5 * abs(zq) ** 2 * np.cos(4 * th)  # parallel contents: only the cosine term survives
    assert glued["s_parallel_forward"] == pytest.approx(par, rel=1e-12)
    assert glued["s_parallel_swapped"] == pytest.approx(par, rel=1e-12)
    anti = -1.5 * abs(zq) ** 2 * np.cos(4 * th)  # opposite contents: collinear too, so blind to the order as well
    assert glued["s_antiparallel_forward"] == pytest.approx(anti, rel=1e-12)
    assert glued["s_antiparallel_swapped"] == pytest.approx(anti, rel=1e-12)


def test_norms_and_score_range(glued):
    assert 0 <= glued["norm_change"] < 1e-13
    rng = np.random.default_rng(3)
    rng.normal(size=(1000, 128))
    rng.uniform(0, 100_000, size=1000)
    qv, kv = rng.normal(size=128), rng.normal(size=128)
    th = freqs(128)
    dots = qv[0::2] * kv[0::2] + qv[1::2] * kv[1::2]
    cross = qv[0::2] * kv[1::2] - qv[1::2] * kv[0::2]
    delta = np.arange(4096.0)[:, None]
    s = (dots * np.cos(delta * th) - cross * np.sin(delta * th)).sum(axis=1) / (np.linalg.norm(qv) * np.linalg.norm(kv))
    assert glued["cos_min"] == pytest.approx(s.min(), abs=1e-10)
    assert glued["cos_max"] == pytest.approx(s.max(), abs=1e-10)


def test_block_numbers(glued):
    assert glued["off_block_max"] == 0.0
    assert glued["fast_angle"] == pytest.approx(37.0)
    assert glued["slow_angle"] == pytest.approx(37 * 10_000 ** (-14 / 16), rel=1e-12)


def test_additive_versus_rope(glued):
    rng = np.random.default_rng(4)
    X6, Wq, Wk = rng.normal(size=(6, 16)), rng.normal(size=(16, 16)) / 4, rng.normal(size=(16, 16)) / 4
    w = freqs(16)

    def sinusoid(p):  # column 2i: sin(p w_i), column 2i + 1: cos(p w_i)
        out = np.empty((len(p), 16))
        out[:, 0::2] = np.sin(np.outer(p, w))
        out[:, 1::2] = np.cos(np.outer(p, w))
        return out

    def additive(p):
        h = X6 + sinusoid(p)
        return (h @ Wq.T) @ (h @ Wk.T).T

    p = np.arange(6.0)
    assert glued["additive_scale"] == pytest.approx(np.abs(additive(p)).max(), rel=1e-9)
    assert glued["additive_shift_change"] == pytest.approx(np.abs(additive(p + 100) - additive(p)).max(), rel=1e-9)
    assert 0 <= glued["rope_shift_change"] < 1e-10


def test_routing_versus_value_defect(glued):
    # derived: the healthy head reads m - 2 = 5; ids one too high move the read to 4; a value
    # cache one slot late keeps the routing at 5 but returns token 4's label
    assert (glued["routed_healthy"], glued["read_healthy"]) == (5, 5)
    assert (glued["routed_routing"], glued["read_routing"]) == (4, 4)
    assert (glued["routed_value"], glued["read_value"]) == (5, 4)
    # brute force with explicit loops
    rng = np.random.default_rng(5)
    kc = rng.normal(size=16)
    th = freqs(16)
    q = 8.0 * rot(kc, -2.0, th)
    for name, shift in (("healthy", 0), ("routing", 1)):
        logits = np.array([rot(q, 7.0, th) @ rot(kc, t + shift, th) for t in range(8)]) / 4.0
        w = np.exp(logits - logits.max())
        w /= w.sum()
        assert glued[f"mass_{name}"] == pytest.approx(w.max(), rel=1e-9)
    assert glued["mass_value"] == pytest.approx(glued["mass_healthy"], rel=1e-12)
    # the prose's formula: logit = 8 <R_m q, R_n k> / sqrt(16) = 2 S(delta), S(delta) = sum_i |k_i|^2 cos((delta + 2) theta_i)
    kk = kc[0::2] ** 2 + kc[1::2] ** 2
    logits = np.array([rot(q, 7.0, th) @ rot(kc, float(t), th) for t in range(8)]) / 4.0
    assert np.allclose(logits, [2 * kk @ np.cos((t - 7 + 2) * th) for t in range(8)], rtol=1e-12, atol=1e-12)
    # the value fault wraps: slot 0 carries token 7's label, with the healthy routing's weight at slot 0
    logits = np.array([rot(q, 7.0, th) @ rot(kc, float(t), th) for t in range(8)]) / 4.0
    w = np.exp(logits - logits.max())
    assert glued["value_wrap_weight"] == pytest.approx(w[0] / w.sum(), rel=1e-9)
    assert 0.005 < glued["value_wrap_weight"] < 0.02  # "thin"


def test_fourier_contrast(glued):
    assert glued["rope_rows_changed"] == 1
    assert glued["dft_rows_changed"] == 32
    L, th = 4096, freqs(128)
    on_grid = 0
    for t in th:
        turns = L * t / (2 * np.pi)
        on_grid += abs(turns - round(turns)) < 1e-6
    assert glued["grid_pairs"] == on_grid
    # Dirichlet kernel: |sum_t e^{i t D}| / L = |sin(L D / 2) / (L sin(D / 2))|
    best = 0.0
    for i in range(len(th)):
        for j in range(i + 1, len(th)):
            D = th[j] - th[i]
            best = max(best, abs(np.sin(L * D / 2) / (L * np.sin(D / 2))))
    assert glued["max_coherence"] == pytest.approx(best, rel=1e-9)


def test_amplitude_phase_numbers(glued):
    import math

    q, k, th = (1.0, 0.5), (0.3, 1.0), 0.35
    assert glued["amp_amplitude"] == pytest.approx(math.hypot(*q) * math.hypot(*k), rel=1e-12)
    gamma = math.atan2(k[1], k[0]) - math.atan2(q[1], q[0])
    assert glued["amp_gamma"] == pytest.approx(gamma, rel=1e-12)
    assert glued["amp_peak"] == pytest.approx(-gamma / th, rel=1e-12)
    # brute force: the one-pair score on a grid 0.01 apart, within half a wavelength of 0
    grid = np.round(np.arange(-897, 898) * 0.01, 2)
    s = [q[0] * (math.cos(d * th) * k[0] - math.sin(d * th) * k[1]) + q[1] * (math.sin(d * th) * k[0] + math.cos(d * th) * k[1])
         for d in grid]
    assert glued["amp_peak_numeric"] == pytest.approx(grid[int(np.argmax(s))], abs=1e-9)
    assert abs(glued["amp_peak_numeric"] - glued["amp_peak"]) <= 0.005


def _abel_bound(delta, th=None):
    """RoFormer's Abel bound at offset delta, by hand: the mean length of the partial sums of e^(i delta theta_j)."""
    import cmath

    th = freqs(128) if th is None else th
    total, partial = 0.0, 0j
    for t in th:
        partial += cmath.exp(1j * delta * t)
        total += abs(partial)
    return total / len(th)


def test_decay_bound_numbers(glued):
    th, bound = freqs(128), _abel_bound

    assert glued["bound_zero"] == pytest.approx(65 / 2)
    assert glued["bound_250"] == pytest.approx(bound(250.0), rel=1e-12)
    assert glued["bound_250"] < glued["bound_zero"] / 4
    # distances 200-250: the mean and the swing the prose states, and 250 in a trough below the mean
    far = np.array([bound(float(d)) for d in range(200, 251)])
    assert glued["bound_far_mean"] == pytest.approx(far.mean(), rel=1e-12)
    assert glued["bound_far_low"] == pytest.approx(far.min(), rel=1e-12)
    assert glued["bound_far_high"] == pytest.approx(far.max(), rel=1e-12)
    assert glued["bound_250"] < glued["bound_far_mean"] - 1 and far[-1] < far[-3]
    # the wiggles follow the kernel (the mean cosine) beyond distance 20
    dist = np.arange(20.0, 251.0)
    K = np.cos(np.outer(dist, th)).mean(axis=1)
    b = np.array([bound(d) for d in dist])
    assert glued["bound_kernel_corr"] == pytest.approx(np.corrcoef(b, K)[0, 1], rel=1e-9)
    assert glued["bound_kernel_corr"] > 0.7


def test_decay_counterexample(glued):
    k = np.random.default_rng(7).normal(size=128)
    th = freqs(128)
    q = rot(k, -200.0, th)
    deltas = np.arange(-250.0, 1.0)
    scores = np.array([q @ rot(k, d, th) for d in deltas])
    assert glued["counter_peak"] == -200
    assert deltas[np.argmax(scores)] == -200
    # at delta = -200 the score is |k|^2 (every pair aligned); at 0 it is k^T R_200 k
    assert glued["counter_ratio"] == pytest.approx(k @ k / (k @ rot(k, 200.0, th)), rel=1e-9)
    assert glued["counter_ratio"] > 1
    # RoFormer's full bound at -200, by an explicit Abel sum: max |h_(i+1) - h_i| (h_64 = 0) times sum_j |P_j|
    h = [complex(q[2 * i], -q[2 * i + 1]) * complex(k[2 * i], k[2 * i + 1]) for i in range(64)] + [0j]
    step = max(abs(h[i + 1] - h[i]) for i in range(64))
    partial, total = 0j, 0.0
    for t in th:
        partial += np.exp(-200j * t)
        total += abs(partial)
    at_target = q @ rot(k, -200.0, th)
    assert at_target == pytest.approx(k @ k, rel=1e-9)  # every pair aligned at -200
    assert glued["counter_bound_ratio"] == pytest.approx(step * total / at_target, rel=1e-9)
    assert glued["counter_bound_ratio"] > 1  # the bound holds, loosely


STATED_SEEDS = [*range(0, 20), *range(1000, 1020), *range(1040, 1060), *range(2020, 2040)]
FURTHER_SEEDS = [*range(3000, 3040)]  # the chapter's second set, to show how the spread moves
DISJOINT_SEEDS = [*range(2000, 2020), *range(2040, 2060)]  # never used by the chapter


def _heads(seeds):
    from ropegeo.toy import train_heads

    return [h for i in range(0, len(seeds), 20)
            for h in train_heads("offset", seeds=seeds[i:i + 20], offset=5, head_dim=16, train_length=64)]


def _profiles(heads):
    """Score with explicit rotations (not score_profile): query at m, key at m - back: q . R_(-back) k."""
    back = np.arange(1.0, 4097.0)
    return np.array([rot(np.broadcast_to(h.k, (back.size, 16)), -back, freqs(16)) @ h.q for h in heads])


@pytest.fixture(scope="module")
def stated():
    heads = _heads(STATED_SEEDS)
    return heads, _profiles(heads)


def _reachable(heads):
    """max over the two free phases u, v of the even and the odd pairs' scores, on a grid of 400,000 points per
    phase (theta_2j = 10^(3-j) * 1e-3, theta_2j+1 = 10^(3-j) * 10^-3.5), and how far the grid may fall short."""
    u = np.linspace(0.0, 2 * np.pi, 400_001)[:-1]
    mult = 10.0 ** (3 - np.arange(4))
    basis = np.concatenate([np.cos(np.outer(u, mult)), np.sin(np.outer(u, mult))], axis=1)  # (grid, 8)
    best, slack = [], []
    for h in heads:
        zq, zk = h.q[0::2] + 1j * h.q[1::2], h.k[0::2] + 1j * h.k[1::2]
        hh = np.conj(zq) * zk  # S(delta) = Re sum_i hh_i e^(i delta theta_i)
        total = 0.0
        for group in (hh[0::2], hh[1::2]):
            total += (basis @ np.concatenate([group.real, -group.imag])).max()
        best.append(total)
        slack.append(np.abs(hh) @ np.tile(mult, 2) ** 2 * (u[1] / 2) ** 2 / 2)
    return np.array(best), np.array(slack), np.array([np.abs(np.conj(h.q[0::2] + 1j * h.q[1::2]) * (h.k[0::2] + 1j * h.k[1::2])).sum() for h in heads])


def _spread(prof):
    """The nearest key's share of the target score and the best far score over the target, summarised."""
    share = prof[:, 0] / prof[:, 4]
    ratio = prof[:, 63:].max(axis=1) / prof[:, 4]
    return {"near_negative": np.sum(share < 0), "near_median": np.median(share),
            "near_p10": np.percentile(share, 10), "near_p90": np.percentile(share, 90),
            "near_min": share.min(), "near_max": share.max(), "peak_at_target": np.sum(prof[:, :63].argmax(axis=1) == 4),
            "ratio_median": np.median(ratio), "ratio_p10": np.percentile(ratio, 10),
            "ratio_p90": np.percentile(ratio, 90), "far_wins": np.sum(ratio > 1)}, share, ratio


def test_trained_head_numbers(glued, stated):
    heads, prof = stated
    assert [h.seed for h in heads] == STATED_SEEDS
    assert glued["decay_seeds"] == 80 and glued["figure_seeds"] == 20
    assert glued["trained_peak_at_target"] == np.sum(prof[:, :63].argmax(axis=1) == 4)
    further = _heads(FURTHER_SEEDS)
    assert glued["further_seeds"] == len(further) == 40
    for name, p in (("trained", prof), ("further", _profiles(further))):
        summary, _, _ = _spread(p)
        for key, value in summary.items():
            assert glued[f"{name}_{key}"] == pytest.approx(value, rel=1e-6), (name, key)
    # the prose counts: peak at the target, nearest key below zero in most seeds, no fading beyond the window
    assert glued["trained_peak_at_target"] >= 76 and glued["trained_near_negative"] >= 60
    assert glued["further_near_negative"] >= 30 and glued["trained_near_p90"] < 0 and glued["further_near_p90"] < 0
    assert glued["further_peak_at_target"] >= 38
    assert glued["trained_ratio_p10"] > 0.9 and glued["trained_far_wins"] >= 60 and glued["further_far_wins"] >= 30
    # how far the share's summaries move between the two sets, from the glued table values
    moves = {key: abs(glued[f"trained_{key}"] - glued[f"further_{key}"])
             for key in ("near_median", "near_p10", "near_p90", "near_min", "near_max")}
    assert glued["near_median_move"] == pytest.approx(moves["near_median"], rel=1e-9)
    assert glued["near_outer_move"] == pytest.approx(max(moves["near_p10"], moves["near_p90"], moves["near_min"]), rel=1e-9)
    assert glued["near_max_move"] == pytest.approx(moves["near_max"], rel=1e-9)
    # the prose's reading: the median moves least (under 0.01), the highest seed most
    assert glued["near_median_move"] < 0.01 < glued["near_outer_move"] < glued["near_max_move"]
    # The blocks after 0-19 are where earlier versions of these claims were re-checked (1000-1019 by an earlier
    # test, 1040-1059 and 2020-2039 by reviewers); they stay so that the seeds which broke an earlier range
    # stated on seeds 0-19 alone (1059, 2022, 2024 and 2033) are counted. Nothing uses 1020-1039.
    _, share, _ = _spread(prof)
    by_seed = dict(zip(STATED_SEEDS, share))
    assert all(by_seed[s] > 0 for s in (1059, 2022, 2024, 2033))


def test_reachable_peak_of_the_trained_heads(glued, stated):
    heads, prof = stated
    grid, slack, total = _reachable(heads)
    target = prof[:, 4]
    # reachable_peak refines past the grid: at least the grid's best, at most the grid's best plus its slack
    ratios = glued["reach_ratio_min"], glued["reach_ratio_max"]
    assert ratios[0] >= (grid / target).min() * (1 - 1e-12) and ratios[0] <= ((grid + slack) / target).min()
    assert ratios[1] >= (grid / target).max() * (1 - 1e-12) and ratios[1] <= ((grid + slack) / target).max()
    shares = glued["reach_share_min"], glued["reach_share_max"]
    assert shares[0] >= (grid / total).min() * (1 - 1e-12) and shares[0] <= ((grid + slack) / total).min()
    assert shares[1] >= (grid / total).max() * (1 - 1e-12) and shares[1] <= ((grid + slack) / total).max()
    # "just below sum |h_i|" and "none of these heads is such a head": every reachable peak beats the target
    assert 0.95 < shares[0] and shares[1] < 1
    assert ratios[0] > 1.1
    # the score at whole offsets never exceeds the reachable peak (first 4,096 offsets back)
    assert np.all(prof.max(axis=1) <= (grid + slack) * (1 + 1e-12))
    # the further seeds (3000-3039): the reachable peak beats the target in every one
    further = _heads(FURTHER_SEEDS)
    grid_f, slack_f, total_f = _reachable(further)
    target_f = _profiles(further)[:, 4]
    assert glued["further_reach_above"] == np.sum(grid_f > target_f) == 40
    # the summary's count over every seed the chapter trained: 80 + 40
    assert glued["all_seeds"] == 120 and glued["reach_above_all"] == np.sum(grid > target) + np.sum(grid_f > target_f) == 120
    assert (grid_f / total_f).min() * (1 - 1e-12) <= glued["further_reach_share_min"] <= ((grid_f + slack_f) / total_f).min()
    assert (grid_f / total_f).max() * (1 - 1e-12) <= glued["further_reach_share_max"] <= ((grid_f + slack_f) / total_f).max()
    assert 0.95 < glued["further_reach_share_min"] and glued["further_reach_share_max"] < 1
    for key, pick in (("further_reach_ratio_min", np.min), ("further_reach_ratio_max", np.max)):
        assert pick(grid_f / target_f) * (1 - 1e-12) <= glued[key] <= pick((grid_f + slack_f) / target_f)
    # "some distant offset eventually beats it": the seeds without a far win within 4,096 offsets are beaten
    # further out (explicit cosines over the first million distances back)
    losers = np.flatnonzero(prof[:, 63:].max(axis=1) <= target)
    assert 1 <= losers.size <= 10
    back = np.arange(4097.0, 1_000_001.0)
    for i in losers:
        zq, zk = heads[i].q[0::2] + 1j * heads[i].q[1::2], heads[i].k[0::2] + 1j * heads[i].k[1::2]
        hh = np.conj(zq) * zk
        best = max(((np.exp(-1j * np.outer(chunk, freqs(16))) @ hh).real.max() for chunk in np.array_split(back, 20)))
        assert best > target[i], STATED_SEEDS[i]


def test_reachable_peak_uses_h_not_its_conjugate(nb):
    """S(delta) = Re sum_i h_i e^(i delta theta_i) with h_i = conj(q_i) k_i = a_i + i b_i (a = q.k, b = q x k)."""
    cell = next(c.source for c in nb.cells if c.cell_type == "code" and "reachable_peak(" in c.source)
    assert "a + 1j * b" in cell and "a - 1j * b" not in cell
    from ropegeo.toy import train_heads

    head = train_heads("offset", seeds=[0], offset=5, head_dim=16, train_length=64)[0]
    a, b = head.coefficients()
    assert np.allclose(a + 1j * b, np.conj(head.q[0::2] + 1j * head.q[1::2]) * (head.k[0::2] + 1j * head.k[1::2]))


def test_trained_head_claims_hold_on_disjoint_seeds(glued):
    """The chapter's counts and ranges, re-checked on 40 seeds it never used (2000-2019, 2040-2059).

    The nearest key's sign is a habit, not a rule, so the chapter states counts and robust summaries (median,
    10th and 90th percentiles) on its 80 seeds and on 40 further ones; this test asks for the same majorities,
    the nearest key's median within 0.05 and its percentiles within 0.1 of the stated ones, a far score that
    wins in most seeds with its median within 0.15 of the stated one, and a reachable far peak above the target
    in every seed.
    """
    heads = _heads(DISJOINT_SEEDS)
    prof = _profiles(heads)
    ratio = prof[:, 63:].max(axis=1) / prof[:, 4]
    near, share = prof[:, 0], prof[:, 0] / prof[:, 4]
    assert np.sum(prof[:, :63].argmax(axis=1) == 4) >= 38  # peak at the target
    assert np.sum(near < 0) >= 34  # nearest key below zero: most seeds
    # the robust summaries stated (median, 10th and 90th percentiles) move little on new seeds
    assert np.median(share) == pytest.approx(glued["trained_near_median"], abs=0.05)
    assert np.percentile(share, 10) == pytest.approx(glued["trained_near_p10"], abs=0.1)
    assert np.percentile(share, 90) == pytest.approx(glued["trained_near_p90"], abs=0.1)
    # the median moves least: the lowest seed's share moves more than the median does
    assert abs(share.min() - glued["trained_near_min"]) > abs(np.median(share) - glued["trained_near_median"])
    assert np.median(ratio) == pytest.approx(glued["trained_ratio_median"], abs=0.15)
    assert np.percentile(ratio, 10) > 0.9 and np.sum(ratio > 1) >= 30
    grid, slack, total = _reachable(heads)
    assert np.all(grid > prof[:, 4]) and np.all(grid / total > 0.95)
    # the bottom panel's trend beyond the window (stated on seeds 0-19): the median window best stays in the
    # stated band to within 0.15, below the target's level in most windows, and rises rather than falls
    # (measured here: 0.41-1.15, below in 59 of 63, 0.70 over the first 16 windows and 0.89 over the last 16)
    level = _window_level(prof)
    assert level.min() == pytest.approx(glued["window_low"], abs=0.15)
    assert level.max() == pytest.approx(glued["window_high"], abs=0.15)
    assert np.sum(level < 1) >= 50 and level[-16:].mean() > level[:16].mean()
    # the per-seed count (stated: most of the 80 and of the 40 further seeds rise): at least 90% rise here too
    assert _rising(prof) >= 36


def _rising(prof):
    """Seeds whose mean window best over the last 16 windows exceeds the mean over the first 16."""
    best = np.stack([[prof[s, 64 * w:64 * (w + 1)].max() for w in range(1, 64)] for s in range(len(prof))])
    return int(np.sum(best[:, -16:].mean(axis=1) > best[:, :16].mean(axis=1)))


def _window_level(prof):
    """Median over the seeds of each 64-offset window's best (beyond the first), over the median target score."""
    best = prof.reshape(len(prof), 64, 64).max(axis=2)[:, 1:]
    return np.median(best, axis=0) / np.median(prof[:, 4])


def test_decay_figure_alt_text_states_the_band(nb, stated, glued):
    """The bottom panel (seeds 0-19): the median of each window's best score beyond the training window swings
    between about half and 1.2 times the target level (the dashed line: the median score at delta = -5)."""
    _, prof = stated
    median = _window_level(prof[:20])  # windows of 64 distances, beyond the first
    assert 0.4 < median.min() < 0.6 and 1.1 < median.max() < 1.3
    # the prose's numbers for the same panel
    assert glued["window_low"] == pytest.approx(median.min(), rel=1e-9)
    assert glued["window_high"] == pytest.approx(median.max(), rel=1e-9)
    assert glued["window_count"] == median.size == 63 and glued["window_below"] == np.sum(median < 1)
    assert glued["window_below"] > 50  # "below it in most windows"
    assert glued["window_first16"] == pytest.approx(median[:16].mean(), rel=1e-9)
    assert glued["window_last16"] == pytest.approx(median[-16:].mean(), rel=1e-9)
    assert glued["window_last16"] > glued["window_first16"]  # it rises rather than falls
    # the same band and count on the further seeds (3000-3039), and the per-seed rise on both sets
    further = _profiles(_heads(FURTHER_SEEDS))
    level = _window_level(further)
    assert glued["further_window_low"] == pytest.approx(level.min(), rel=1e-9)
    assert glued["further_window_high"] == pytest.approx(level.max(), rel=1e-9)
    assert glued["further_window_below"] == np.sum(level < 1) > 50
    assert glued["window_rise_seeds"] == _rising(prof) >= 72 and glued["further_window_rise_seeds"] == _rising(further) >= 36
    cell = next(c for c in nb.cells if c.cell_type == "code" and "decay_panels(" in c.source)
    assert "swings between about half and 1.2 times" in cell.metadata["mystnb"]["image"]["alt"]


def test_decay_figure_alt_text_states_the_bound(nb):
    """The top panel: from distance 100 on, the bound wiggles between about 6.4 and 11.6, ending near 6.5."""
    bound = _abel_bound

    b = np.array([bound(float(d)) for d in range(100, 251)])
    assert round(b.min(), 1) == 6.4 and round(b.max(), 1) == 11.6 and round(b[-1], 1) == 6.5
    # at distance 0 every partial sum P_j has length j: the bound starts at (1 + ... + 64) / 64 = 32.5
    assert bound(0.0) == pytest.approx(32.5) and bound(0.0) > 2 * bound(20.0)  # and falls steeply
    cell = next(c for c in nb.cells if c.cell_type == "code" and "decay_panels(" in c.source)
    alt = cell.metadata["mystnb"]["image"]["alt"]
    assert "falls steeply from 32.5," in alt
    assert "between about 6.4 and 11.6" in alt and "trough near 6.5" in alt


def test_clock_figure_alt_text_states_the_arc(nb):
    """The clock's lower panel labels the arc (n - m) theta between the query at m and the key at n."""
    cell = next(c for c in nb.cells if c.cell_type == "code" and "phase_clock(" in c.source)
    theta = float(re.search(r"theta=([0-9.]+)", cell.source).group(1))
    m = int(re.search(r"query_position=([0-9]+)", cell.source).group(1))
    n = int(re.search(r"key_position=([0-9]+)", cell.source).group(1))
    assert (theta, m, n) == (0.6, 2, 5)
    assert f"the arc, {(n - m) * theta:.2f} radians" in cell.metadata["mystnb"]["image"]["alt"]


# Symbols of chapter 2's prose, each of which notation.md must list (as the chapter's opening says it does),
# and symbols the chapter must not use because notation.md gives the letter another meaning or none.
CHAPTER_SYMBOLS = [
    r"$q_i,\ k_i$", r"$q_1, q_2$; $k_1, k_2$", r"$\chi_\theta(m)", r"$R(\varphi)$", r"$R_m$", r"$M,\ U,\ D,\ X$",
    r"$D_p = U^\top M_p U$", r"$A$", r"$\kappa$", r"$\xi$", r"$h_i = \overline{q_i}\,k_i$", r"$P_j(\delta)",
    r"$j$", r"$W = W_q^\top W_k$", r"$w_{11}, \dots, w_{22}$", r"$u,\ v$", r"$\gamma_i = \psi_i - \varphi_i$",
    r"$\alpha(m)$", r"$\mathrm{PE}(p)$", r"$N$", r"$\omega_i", r"$\beta$", r"$\delta = n - m$",
]
UNLISTED_IN_CHAPTER = [r"\rho", r"\Phi", "N_m", "z_q", "z_k", "p_m", "p_n", "f_q", "f_k", "x_1", "R_aR_b"]


def test_chapter_symbols_are_on_the_notation_page(nb):
    notation = (NB.parents[1] / "notation.md").read_text()
    missing = [s for s in CHAPTER_SYMBOLS if s not in notation]
    assert not missing, f"not listed in notation.md: {missing}"
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    spans = re.findall(r"\$([^$]+)\$", prose.replace("$$", "$"))
    assert spans
    used = [s for s in UNLISTED_IN_CHAPTER if any(s in span for span in spans)]
    assert not used, f"symbols notation.md does not list (or lists with another meaning): {used}"
    assert "$P_j(\\delta)" in prose and "$\\mathrm{PE}(m)" in prose  # the listed forms are the ones used
    assert "Every symbol in this chapter's text is listed on the {doc}`notation page" in nb.cells[3].source


def test_numpy_rope_listing(nb, glued):
    assert glued["numpy_rope_tol"] == 1e-9
    src = next(c.source for c in nb.cells if c.cell_type == "code" and "def rope_numpy" in c.source)
    ns = {"np": np}
    exec(src.split("\n\n\nx_demo")[0], ns)  # the function alone
    assert len(src.split("\n\n\nx_demo")[0].splitlines()) <= 10
    x = np.random.default_rng(0).normal(size=(5, 8))
    pos = np.arange(5.0) * 7
    # independent: half pairing means coordinate i pairs with i + 4; rotate each pair explicitly
    want = np.empty_like(x)
    for i in range(4):
        t = 10_000.0 ** (-2 * i / 8)
        c, s = np.cos(pos * t), np.sin(pos * t)
        want[:, i] = c * x[:, i] - s * x[:, i + 4]
        want[:, i + 4] = s * x[:, i] + c * x[:, i + 4]
    np.testing.assert_allclose(ns["rope_numpy"](x, pos), want, atol=1e-12)


def test_exercise_order_and_structure(nb):
    cells = nb.cells
    labels = []
    for i, c in enumerate(cells):
        if c.cell_type == "markdown" and c.source.startswith("```{exercise}"):
            label = c.source.split(":label: ")[1].split()[0]
            labels.append(label)
            j = i + 1 + (cells[i + 1].cell_type == "code")
            assert cells[j].source.startswith("```{solution-start} " + label)
            j += 1
            assert cells[j].cell_type == "code", label  # prose may follow the code that computes its numbers
            while not cells[j].source.startswith("```{solution-end}"):
                if cells[j].cell_type == "code":
                    assert "solution" in cells[j].metadata.get("tags", []), label
                else:
                    assert "{exercise}" not in cells[j].source and "{solution-" not in cells[j].source, label
                j += 1
    assert labels == ["ch02-score-by-hand", "ch02-sign-bug", "ch02-complex-rope", "ch02-direction-blind",
                      "ch02-first-return", "ch02-which-defect"]
    kinds = [next(c.source for c in cells if f":label: {lab}" in c.source).split("**")[1] for lab in labels]
    assert kinds == ["Compute.", "Derive.", "Implement.", "Investigate.", "Investigate.", "Investigate."]


# ---------------------------------------------------------------- added for issue 38


def test_normal_form_of_a_random_rotation(nb, glued):
    """The planes' angles, from the symmetric part of A (eigenvalues cos theta_i, each twice)."""
    A, _ = np.linalg.qr(np.random.default_rng(9).normal(size=(8, 8)))
    A[:, 0] *= np.linalg.det(A)
    cosines = np.sort(np.linalg.eigvalsh((A + A.T) / 2))
    assert np.allclose(cosines[0::2], cosines[1::2], atol=1e-9)  # each angle twice: no fixed axis
    angles = np.sort(np.arccos(cosines[0::2]))
    assert glued["normal_form_planes"] == 4
    cell = next(c for c in nb.cells if c.cell_type == "code" and "np.sort(plane_angles)" in c.source)
    printed = next(o["data"]["text/plain"] for o in cell.outputs if "text/plain" in o.get("data", {}))
    shown = np.array([float(v) for v in re.findall(r"-?[0-9]+\.[0-9]+", printed)])
    assert np.allclose(shown, angles, atol=1.5e-3)


def test_correlated_decay(glued):
    """E[q^T R_delta k] for k = q + noise is d_head K(delta): the same sample, rotated by hand."""
    th = freqs(128)
    rng = np.random.default_rng(11)
    q = rng.normal(size=(20_000, 128))
    k = q + rng.normal(size=q.shape)
    lags = np.arange(0.0, 251.0, 10.0)
    z = []
    for lag in lags:
        s = np.sum(q * rot(k, lag, th), axis=1)
        z.append(abs(s.mean() - 2 * np.cos(lag * th).sum()) / (s.std() / np.sqrt(s.size)))
    assert glued["corr_samples"] == 20_000
    assert glued["corr_max_z"] == pytest.approx(max(z), rel=1e-6)
    assert glued["corr_max_z"] < 4  # the closed form holds within sampling error
    assert glued["corr_kernel_250"] == pytest.approx(np.cos(250 * th).mean(), rel=1e-12)


def test_near_return_of_the_trained_bank(glued):
    th = freqs(16)
    lags = np.arange(64.0, 1_000_001.0)
    best, at = -np.inf, None
    for chunk in np.array_split(lags, 10):
        k_vals = np.cos(np.outer(chunk, th)).mean(axis=1)
        if k_vals.max() > best:
            best, at = k_vals.max(), chunk[k_vals.argmax()]
    assert glued["far_kernel_max"] == pytest.approx(best, rel=1e-9)
    assert glued["far_kernel_at"] == at
    assert best > 0.9  # "close to 1"


def test_shift_figure_alt_text_states_the_curve():
    rng = np.random.default_rng(4)
    x6, wq, wk = rng.normal(size=(6, 16)), rng.normal(size=(16, 16)) / 4, rng.normal(size=(16, 16)) / 4

    def additive(p):
        code = np.zeros((p.size, 16))
        code[:, 0::2], code[:, 1::2] = np.sin(np.outer(p, freqs(16))), np.cos(np.outer(p, freqs(16)))
        h = x6 + code
        return (h @ wq.T) @ (h @ wk.T).T

    p = np.arange(6.0)
    change = [np.abs(additive(p + c) - additive(p)).max() for c in np.arange(10.0, 210.0, 10.0)]
    nb = nbformat.read(NB, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("shifts = np.arange(10.0"))
    low, high = map(float, re.search(r"between about ([0-9.]+) and ([0-9.]+)", cell.metadata["mystnb"]["image"]["alt"]).groups())
    assert low == round(min(change), 1) and high == round(max(change), 1)


def test_section_order_and_figure_reference(nb):
    heads = [line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines() if line.startswith("## ")]
    assert heads.index("## Many pairs: the block-diagonal operator") < heads.index("## Rotation keeps lengths")
    assert heads.index("## Many pairs: the block-diagonal operator") < heads.index("## Does the score decay with distance?")
    prose = next(c.source for c in nb.cells if c.source.startswith("The healthy head puts"))
    assert "left column" in prose and "top row" not in prose


def test_first_return_reading(glued):
    """The solution's reading of the first and the best return, by phases wrapped with np.angle."""
    th = freqs(16)
    lags = np.arange(65.0, 200_001.0)
    first = int(lags[np.argmax(np.cos(np.outer(lags, th)).mean(axis=1) > 0.9)])
    best = int(glued["far_kernel_at"])

    def miss(phase):
        return np.abs(np.angle(np.exp(1j * np.asarray(phase, dtype=float))))

    pairs, best_pairs = miss(first * th), miss(best * th)
    approx = {"abs": 1e-9}
    assert glued["first_u_miss"] == pytest.approx(miss(first / 1000), **approx) and glued["first_u_miss"] < 1e-3
    assert glued["first_v_miss"] == pytest.approx(miss(first / 10**3.5), **approx)
    assert glued["first_fastest_even"] == pytest.approx(pairs[0], **approx)
    assert np.all(pairs[2::2] < 0.05) and pairs[0] > 0.3  # three even pairs aligned, the fastest not
    assert glued["first_odd_low"] == pytest.approx(pairs[1::2].min(), **approx)
    assert glued["first_odd_high"] == pytest.approx(pairs[1::2].max(), **approx)
    assert np.cos(first * th[0::2]).mean() > 0.95 and np.cos(first * th[1::2]).mean() < 0.9  # mostly the even half
    assert glued["best_phase_miss"] == pytest.approx(max(miss(best / 1000), miss(best / 10**3.5)), **approx)
    assert glued["best_phase_miss"] < 0.1
    close = best_pairs < 0.5
    assert glued["best_close_pairs"] == close.sum() == 6
    assert glued["best_close_miss"] == pytest.approx(best_pairs[close].max(), **approx)
    assert best_pairs[~close].min() > 4 * glued["best_close_miss"]  # a clear gap: the count does not hinge on 0.5


def test_head_b_reads_the_wrong_slot(glued):
    """Head B's faults (key_shift -1, value_lag 1): it reads slot 5 - (-1) = 6, which holds token 6 - 1 = 5."""
    from ropegeo.book.exercises.ch02 import _HEAD_FAULTS, mystery_heads

    shift, lag = _HEAD_FAULTS["B"]
    weights, output = mystery_heads()["B"](np.eye(8))
    assert glued["defect_b_slot"] == int(np.argmax(weights)) == 5 - shift
    assert glued["defect_b_token"] == int(np.argmax(output)) == 5 - shift - lag == 5

