"""Each intervention on a scheme whose answer is known in closed form.

NoPE attends uniformly to the m earlier keys; content-free ALiBi attends with weights
proportional to exp(-slope * distance), a geometric series; a T5 or Shaw head whose only
non-zero bias sits on one bucket (one clipped vector) splits its attention evenly inside it.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ropegeo.toy.attention import AttentionLayer
from ropegeo.toy.interventions import (
    PositionHead,
    construction_gap,
    global_shift,
    length_stretch,
    local_displacement,
    offset_task,
    position_head,
    sparse_retrieval,
    strict_attention,
)
from ropegeo.toy.schemes import RelativePositions, T5Bias, t5_bucket


def alibi_row(slope, m):
    """Closed form: weights on distances 1..m of a content-free ALiBi query (geometric series)."""
    r = math.exp(-slope)
    return np.array([r ** (k - 1) * (1 - r) / (1 - r**m) for k in range(1, m + 1)])


# ---- NoPE -------------------------------------------------------------------------------------


@given(st.integers(2, 80), st.data())
def test_nope_task_is_uniform(length, data):
    offset = data.draw(st.integers(1, length - 1))
    r = offset_task(position_head("none", seed=3), length, offset)
    m = np.arange(offset, length)
    np.testing.assert_allclose(r.target_mass, 1.0 / m, rtol=1e-12)
    # ties are never a win, except for a query with a single visible key
    assert r.accuracy == pytest.approx(np.mean(m == 1))


def test_nope_interventions_are_blind():
    h = position_head("none", seed=0)
    sh = global_shift(h, 30, 12.5)
    assert sh.weight_change < 1e-15 and sh.score_change < 1e-15 and sh.winners_kept == 1.0
    mv = local_displacement(h, 30, 4)
    m = np.arange(5, 30)  # the first query (m = offset) is skipped: its key would leave the range
    assert mv.score_change == 0.0
    assert mv.mass_before == pytest.approx(np.mean(1.0 / m)) and mv.mass_after == pytest.approx(mv.mass_before)
    st_ = length_stretch(h, 16, 3, factors=(1, 2, 4))
    assert np.all(st_.accuracy == 0.0)
    np.testing.assert_allclose(st_.mass, [np.mean(1.0 / np.arange(3, n)) for n in (16, 32, 64)], rtol=1e-12)


# ---- ALiBi ------------------------------------------------------------------------------------


@given(st.sampled_from([(8, 0), (8, 7), (12, 9), (1, 0)]), st.integers(3, 60), st.data())
def test_alibi_task_matches_the_geometric_series(cfg, length, data):
    heads, head = cfg
    h = position_head("alibi", heads=heads, head=head, seed=1)
    slope = h.layer.scheme.slope
    offset = data.draw(st.integers(1, length - 1))
    r = offset_task(h, length, offset)
    want = [alibi_row(slope, m)[offset - 1] for m in range(offset, length)]
    np.testing.assert_allclose(r.target_mass, want, rtol=1e-10)
    assert r.accuracy == (1.0 if offset == 1 else 0.0)  # the nearest key always wins


@given(st.floats(0.01, 2.0), st.integers(3, 40), st.data())
def test_alibi_local_displacement_is_minus_slope(slope, length, data):
    h = PositionHead(AttentionLayer(6, scheme="alibi", slope=slope, seed=0))
    offset = data.draw(st.integers(1, length - 2))
    mv = local_displacement(h, length, offset)
    assert mv.score_change == pytest.approx(-slope, rel=1e-12)
    # before: series; after: the key's weight is multiplied by exp(-slope), renormalised
    ms = np.arange(offset + 1, length)
    before = [alibi_row(slope, m)[offset - 1] for m in ms]
    after = []
    for m in ms:
        w = alibi_row(slope, m)
        moved = w[offset - 1] * math.exp(-slope)
        after.append(moved / (w.sum() - w[offset - 1] + moved))
    assert mv.mass_before == pytest.approx(np.mean(before), rel=1e-10)
    assert mv.mass_after == pytest.approx(np.mean(after), rel=1e-10)
    # a step toward the query raises the score by the slope
    assert local_displacement(h, length, offset + 1, step=-1).score_change == pytest.approx(slope, rel=1e-12)


# ---- global shift ------------------------------------------------------------------------------


@given(st.integers(0, 1000), st.integers(-500, 500))
def test_relative_schemes_are_shift_blind_and_absolute_ones_are_not(seed, shift):
    for name in ("relative", "t5", "alibi", "rope"):
        sh = global_shift(position_head(name, seed=seed), 24, shift)
        assert sh.weight_change < 1e-9 and sh.winners_kept == 1.0, name
    if shift != 0:
        assert global_shift(position_head("sinusoidal", seed=seed), 24, shift).score_change > 1e-6


def test_construction_gap_separates_guarantee_from_behaviour():
    for name, guaranteed in [("none", True), ("relative", True), ("t5", True), ("alibi", True), ("rope", True),
                             ("sinusoidal", False), ("absolute", False)]:
        gap = construction_gap(position_head(name, seed=2, **({"rows": 128} if name == "absolute" else {})), 20, 7)
        assert gap.guaranteed is guaranteed, name
        assert (gap.guaranteed_change < 1e-9) is guaranteed, name


# ---- T5 and Shaw: closed-form ceilings --------------------------------------------------------


@pytest.mark.parametrize("distance", [3, 20, 40, 100])
def test_t5_one_bucket_bias_splits_evenly(distance):
    """Bias b on the target's bucket, 0 elsewhere: the target gets e^b / (n_b e^b + m - n_b)."""
    b = 6.0
    bucket = int(t5_bucket(-distance, bidirectional=False))
    table = np.zeros(32)
    table[bucket] = b
    h = PositionHead(AttentionLayer(4, scheme=T5Bias(bidirectional=False, table=table), seed=0))
    length = 256
    r = sparse_retrieval(h, length, distance)
    want = []
    for m in range(distance, length):
        nb = sum(1 for dist in range(1, m + 1) if int(t5_bucket(-dist, bidirectional=False)) == bucket)
        want.append(math.exp(b) / (nb * math.exp(b) + m - nb))
    np.testing.assert_allclose(r.target_mass, want, rtol=1e-12)


def test_shaw_clipped_key_shares_attention_beyond_k():
    K, length, distance = 4, 100, 30
    rows = 2 * K + 1
    table = np.zeros((rows, 2))
    table[0] = [10.0, 0.0]  # row 0 = displacement -K and everything farther
    layer = AttentionLayer(2, scheme=RelativePositions(max_distance=K, key_table=table, value_table=table), seed=0)
    layer.Wq = np.eye(2)  # query = token e_0
    h = PositionHead(layer)
    r = sparse_retrieval(h, length, distance)
    s = 10.0 / math.sqrt(2)
    want = [math.exp(s) / ((m - K + 1) * math.exp(s) + K - 1) for m in range(distance, length)]
    np.testing.assert_allclose(r.target_mass, want, rtol=1e-10)
    assert r.accuracy == 0.0  # tied with every other far key


# ---- length stretch of an absolute table --------------------------------------------------------


def test_stretch_past_an_absolute_table_is_refused_not_raised():
    h = position_head("absolute", rows=40, seed=0)
    st_ = length_stretch(h, 16, 2, factors=(1, 2, 4))
    assert not math.isnan(st_.accuracy[0]) and not math.isnan(st_.accuracy[1])
    assert math.isnan(st_.accuracy[2]) and "outside the absolute table" in st_.refused[2]
    with pytest.raises(ValueError, match="outside the absolute table"):
        global_shift(h, 16, 30)


# ---- plumbing -------------------------------------------------------------------------------------


@given(st.sampled_from(["absolute", "sinusoidal", "relative", "t5", "alibi", "rope", "none"]), st.integers(0, 99))
def test_pair_scores_agree_with_full_scores(name, seed):
    h = position_head(name, seed=seed, **({"rows": 64} if name == "absolute" else {}))
    pos = np.arange(20.0)
    S = h.scores(pos)
    qi, ki = np.meshgrid(np.arange(20), np.arange(20), indexing="ij")
    np.testing.assert_allclose(h.pair_scores(pos[qi], pos[ki]), S, atol=1e-12)


def test_strict_attention_and_validation():
    h = position_head("rope", seed=0)
    w = strict_attention(h, np.arange(6.0))
    assert np.all(w[0] == 0) and np.all(np.triu(w) == 0)
    np.testing.assert_allclose(w[1:].sum(1), 1.0)
    with pytest.raises(ValueError, match="head must be a PositionHead"):
        global_shift("rope", 10, 1)
    with pytest.raises(ValueError, match="length must be at least 6"):
        offset_task(h, 5, 5)
    with pytest.raises(ValueError, match="at most MAX_PROBE_LENGTH"):
        strict_attention(h, np.arange(5000.0))
    with pytest.raises(ValueError, match="token must have shape \\(16,\\)"):
        PositionHead(h.layer, token=np.ones(3))
    with pytest.raises(ValueError, match="moves every target key out"):
        local_displacement(h, 6, 5, step=3)
    with pytest.raises(ValueError, match="factors must hold at least one"):
        length_stretch(h, 16, 2, factors=())


# ---- content needle among blanks ----------------------------------------------------------------


@given(st.integers(3, 300), st.floats(0.0, 12.0), st.data())
def test_needle_closed_forms_none_alibi_rope(length, gain, data):
    from ropegeo.toy.interventions import needle_retrieval

    D = data.draw(st.integers(1, length - 1))
    m = length - 1
    e = math.exp(gain)
    assert needle_retrieval("none", length=length, distance=D, gain=gain).mass == pytest.approx(e / (e + m - 1), rel=1e-10)
    slope = 2.0**-3
    blanks = sum(math.exp(-slope * d) for d in range(1, m + 1) if d != D)
    want = math.exp(gain - slope * D) / (math.exp(gain - slope * D) + blanks)
    got = needle_retrieval("alibi", length=length, distance=D, gain=gain, heads=8, head=2)
    assert got.mass == pytest.approx(want, rel=1e-9)
    # rope: u has weight 2/d on every pair, so u . R_D u is the equal-weight kernel
    K = sum(math.cos(D * 10_000 ** (-2 * i / 16)) for i in range(8)) / 8
    r = needle_retrieval("rope", length=length, distance=D, gain=gain)
    assert r.needle_score == pytest.approx(gain * K, abs=1e-9)
    assert r.blank_score_max == 0.0
    assert r.mass == pytest.approx(math.exp(gain * K) / (math.exp(gain * K) + m - 1), rel=1e-9)


def test_needle_token_and_validation():
    from ropegeo.toy.interventions import needle_retrieval

    slow = np.zeros(16)
    slow[14] = 3.0  # normalised to unit length; the slowest pair turns 400 * 1e4**(-14/16) rad by D = 400
    r = needle_retrieval("rope", distance=400, token=slow)
    assert r.needle_score == pytest.approx(8.0 * math.cos(400 * 10_000 ** (-14 / 16)), rel=1e-12)
    with pytest.raises(ValueError, match="token must be a non-zero vector of shape \\(16,\\)"):
        needle_retrieval("rope", token=np.zeros(16))
    with pytest.raises(ValueError, match="length must be at least 41"):
        needle_retrieval("none", length=40, distance=40)
    with pytest.raises(ValueError, match="gain must be at least 0"):
        needle_retrieval("none", gain=-1.0)


@given(st.integers(2, 80), st.integers(2, 6), st.integers(1, 20), st.integers(0, 10**6))
def test_match_ceilings_by_brute_force(length, vocab, clip, seed):
    from ropegeo.toy.interventions import match_ceilings

    tok = np.random.default_rng(seed).integers(0, vocab, size=(3, length))
    once, tied = [], []
    for b in range(3):
        for m in range(length):
            copies = [n for n in range(m) if tok[b, n] == tok[b, m]]
            if copies:
                once.append(len(copies) == 1)
                tied.append(m - copies[-1] >= clip and len(copies) >= 2)
    if not once:
        with pytest.raises(ValueError, match="no query has an earlier occurrence"):
            match_ceilings(length, vocab=vocab, sequences=3, seed=seed, clip=clip)
        return
    c = match_ceilings(length, vocab=vocab, sequences=3, seed=seed, clip=clip)
    assert c.single_copy == pytest.approx(np.mean(once), abs=1e-12)
    assert c.clipped == pytest.approx(1 - np.mean(tied), abs=1e-12)


@given(st.integers(0, 10**6), st.integers(1, 150), st.booleans())
def test_t5_local_displacement_is_a_bucket_difference(seed, offset, bidirectional):
    h = position_head("t5", seed=seed, bidirectional=bidirectional)
    b = h.layer.scheme.table
    want = b[t5_bucket(-(offset + 1), bidirectional=bidirectional)] - b[t5_bucket(-offset, bidirectional=bidirectional)]
    got = local_displacement(h, offset + 3, offset)
    assert got.score_change == pytest.approx(want, abs=1e-12)
    if offset >= 128:  # both offsets in the last bucket: T5 cannot see the move at all
        assert got.score_change == 0.0 and got.mass_after == pytest.approx(got.mass_before, abs=1e-15)


# ---- bounds: an int where a list belongs, counts and sizes -----------------------------------------


@pytest.mark.parametrize("call,name", [
    (lambda h: construction_gap(h, 16, 3, seeds=5), "seeds"),
    (lambda h: construction_gap(h, 16, 3, seeds=None), "seeds"),
    (lambda h: construction_gap(h, 16, 3, seeds=()), "seeds"),
    (lambda h: construction_gap(h, 16, 3, seeds=range(10**6)), "seeds"),
    (lambda h: construction_gap(h, 16, 3, seeds=range(10**15)), "seeds"),
    (lambda h: length_stretch(h, 16, 3, factors=5), "factors"),
    (lambda h: length_stretch(h, 16, 3, factors=[1] * 17), "factors"),
    (lambda h: length_stretch(h, 16, 3, factors=(2, 10**30)), "factors"),
    (lambda h: global_shift(h, 16, 1e308, start=1e308), "shift"),
    (lambda h: h.pair_scores(np.zeros((10**5, 1)), np.zeros((1, 10**5))), "q_positions and k_positions"),
])
def test_bounded_counts_name_the_parameter(call, name):
    h = position_head("rope", seed=0)
    with pytest.raises(ValueError, match=name):
        call(h)


def test_needle_match_and_token_bounds():
    from ropegeo.toy.schemes import MAX_ENTRIES
    from ropegeo.toy.interventions import MAX_GAIN, TokenHead, match_ceilings, needle_retrieval

    with pytest.raises(ValueError, match="^gain must be at most"):
        needle_retrieval("none", gain=1e308)
    with pytest.raises(ValueError, match="^d_model must be at most 1024"):
        needle_retrieval("none", d_model=65_536)
    with pytest.raises(ValueError, match="^clip must be at most"):
        match_ceilings(64, clip=10**30)
    # the largest gain still gives a finite answer: all the attention on the needle, as e^g / (e^g + m - 1)
    assert needle_retrieval("none", gain=MAX_GAIN).mass == 1.0
    assert match_ceilings(64, clip=2**48).clipped == 1.0  # nothing is ever clipped
    head = TokenHead(AttentionLayer(8, scheme="none", seed=0), np.eye(8))
    with pytest.raises(ValueError, match="tokens of shape \\(3, 4096\\)"):
        head.scores(np.zeros((3, 4096), dtype=int))  # 3 * 4096**2 scores > MAX_ENTRIES
    assert 2 * 4096**2 <= MAX_ENTRIES and head.scores(np.zeros((1, 64), dtype=int)).shape == (1, 64, 64)


def test_match_task_row_blocks(monkeypatch):
    from ropegeo.toy import interventions as I

    head = I.TokenHead(AttentionLayer(16, scheme="rope", seed=0), np.eye(16)[:4])
    with pytest.raises(ValueError, match="sequences"):
        I.match_task(head, 64, sequences=257)
    whole = I.match_task(head, 200, sequences=5)
    monkeypatch.setattr(I, "_ROW_CELLS", 200 * 7)  # seven query rows per block
    blocked = I.match_task(head, 200, sequences=5)
    assert whole.accuracy == blocked.accuracy and whole.mass == blocked.mass
    # exact: the scores are computed once either way, and blocks only group rows of a row-wise softmax
    assert np.array_equal(whole.query, blocked.query) and np.array_equal(whole.target_mass, blocked.target_mass)
    # and against a direct softmax of the layer's scores
    tok = np.random.default_rng(12345).integers(0, 4, size=(5, 200))
    S = head.scores(tok)
    masses = []
    for b in range(5):
        for m in range(200):
            earlier = [j for j in range(m) if tok[b, j] == tok[b, m]]
            if earlier:
                row = S[b, m, :m]
                w = np.exp(row - row.max())
                masses.append(w[earlier[-1]] / w.sum())
    np.testing.assert_allclose(blocked.target_mass, masses, rtol=1e-12)


def test_pair_scores_bound_scales_with_width():
    from ropegeo.toy.interventions import MAX_PAIRS, position_head

    wide = position_head("rope", d_model=1024)
    q = np.arange(MAX_PAIRS * 16 // 1024 + 1) % 5000
    with pytest.raises(ValueError, match="for a width of 1024"):
        wide.pair_scores(q, q + 1)


def test_a_win_by_rounding_noise_is_a_tie():
    """Equal scores computed by different BLAS paths differ in the last digits: not a win."""
    from ropegeo.toy.interventions import TIE, _task

    w = np.zeros((3, 3))
    w[2, 1] = 0.5                      # slot 2's target at offset 1 is slot 1
    w[2, 0] = 0.5 - 1e-15              # slot 0 "loses" by rounding noise only
    w[1, 0] = 1.0
    assert _task(w, 1).correct.tolist() == [True, False]
    w[2, 0] = 0.5 - 10 * TIE           # a real margin is a win
    assert _task(w, 1).correct.tolist() == [True, True]
