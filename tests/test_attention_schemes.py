"""The position schemes added for chapter 7 (relative, t5, alibi, rope with any schedule), each
checked against its defining property and against a scalar reference written here.

References are independent: T5's bucket as the published per-element recipe in float32 scalars,
ALiBi's slopes as the paper's recursive function, Shaw's scores as explicit loops.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ropegeo.toy.attention import AttentionLayer, permutation_deviation, shift_deviation
from ropegeo.toy.schemes import (
    ALiBi,
    RelativePositions,
    T5Bias,
    alibi_slopes,
    scheme_names,
    sinusoidal_encoding,
    t5_bucket,
)
from ulps import assert_ulps

seeds = st.integers(0, 2**32 - 1)


# ---- T5 ---------------------------------------------------------------------------------------


def ref_bucket(rel, bidirectional=True, num_buckets=32, max_distance=128):
    """One relative position, step by step as Mesh TensorFlow describes it (float32 log)."""
    ret = 0
    nb = num_buckets
    if bidirectional:
        nb //= 2
        if rel > 0:
            ret += nb
        n = abs(rel)
    else:
        n = max(-rel, 0)
    exact = nb // 2
    if n < exact:
        return ret + n
    x = np.float32(np.log(np.float32(n) / np.float32(exact)))
    x = np.float32(x / np.float32(math.log(max_distance / exact)))
    x = np.float32(x * np.float32(nb - exact))
    return ret + min(exact + int(x), nb - 1)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("nb, md", [(32, 128), (8, 20), (64, 1000), (6, 7), (20, 320), (40, 320)])
def test_t5_bucket_matches_scalar_reference(bidirectional, nb, md):
    # (20, 320) one-sided and (40, 320) two-sided put bucket edges exactly on integers (n = 20, 40,
    # 160: log(n / 10) / log(32) * 10 is a whole number), where float32 and float64 round apart
    if bidirectional is False and nb == 6:
        nb = 5  # an odd count is fine on one side
    rel = np.arange(-3 * md, 3 * md + 1)
    got = t5_bucket(rel, bidirectional=bidirectional, num_buckets=nb, max_distance=md)
    want = [ref_bucket(int(r), bidirectional, nb, md) for r in rel]
    assert got.tolist() == want


def test_t5_known_buckets():
    # decoder, 32 buckets: 16 exact ones, then log bins up to 128
    assert t5_bucket(np.arange(0, -16, -1), bidirectional=False).tolist() == list(range(16))
    assert t5_bucket([1, 5, 1000], bidirectional=False).tolist() == [0, 0, 0]
    # the first log bin starts at 16; distance 40 sits in the bin 40..45 (16 * 8**(7/16) = 39.7, 16 * 8**(8/16) = 45.25)
    b = t5_bucket(-np.arange(38, 48), bidirectional=False)
    assert b.tolist() == [22, 22, 23, 23, 23, 23, 23, 23, 24, 24]
    assert t5_bucket([-127, -128, -10**6], bidirectional=False).tolist() == [31, 31, 31]
    # encoder: 8 exact buckets per side, keys after the query offset by 16
    assert t5_bucket([0, -1, 1, -7, 7], bidirectional=True).tolist() == [0, 1, 17, 7, 23]


@given(st.integers(1, 2000), st.booleans(), st.sampled_from([(32, 128), (16, 64), (10, 50), (128, 2048)]))
def test_t5_buckets_are_monotone_and_exact_near_zero(n, bidirectional, cfg):
    nb, md = cfg
    side = nb // 2 if bidirectional else nb
    exact = side // 2
    dist = np.arange(0, n + 1)
    back = t5_bucket(-dist, bidirectional=bidirectional, num_buckets=nb, max_distance=md)
    assert np.all(np.diff(back) >= 0)  # farther never means a smaller bucket
    assert np.all(back < side) and np.all(back >= 0)
    small = dist < exact
    assert np.array_equal(back[small], dist[small])  # one exact bucket per small offset
    assert np.all(back[dist >= md] == side - 1)
    if bidirectional:
        fwd = t5_bucket(dist[1:], bidirectional=True, num_buckets=nb, max_distance=md)
        assert np.array_equal(fwd, back[1:] + side)  # mirror image, shifted by one side's count


def test_t5_validation():
    with pytest.raises(ValueError, match="num_buckets must be at least 4"):
        t5_bucket(0, num_buckets=3)
    with pytest.raises(ValueError, match="max_distance must be at least 9"):
        t5_bucket(0, num_buckets=32, max_distance=8)
    with pytest.raises(ValueError, match="whole numbers"):
        t5_bucket([0.5])
    with pytest.raises(ValueError, match="finite"):
        t5_bucket([np.nan])
    with pytest.raises(ValueError, match="bidirectional must be True or False"):
        t5_bucket(0, bidirectional="yes")
    with pytest.raises(ValueError, match="table must have shape \\(32,\\)"):
        T5Bias(table=np.zeros(31))
    layer = AttentionLayer(4, scheme="t5", seed=0)
    with pytest.raises(ValueError, match="positions must be integers for the t5 scheme"):
        layer(np.ones((3, 4)), positions=[0, 1.5, 2])


@given(seeds, st.integers(2, 9), st.integers(-500, 500), st.booleans())
def test_t5_layer_bias_is_table_of_bucket_and_shift_invariant(seed, n, shift, bidirectional):
    layer = AttentionLayer(8, scheme="t5", seed=seed, bidirectional=bidirectional, num_buckets=16, max_distance=40)
    x = np.random.default_rng(seed).standard_normal((n, 8))
    pos = np.arange(n) * 3
    res = layer.run(x, pos)
    plain = res.q @ res.k.T / math.sqrt(8)
    table = layer.scheme.table
    for i in range(n):
        for j in range(n):
            b = ref_bucket(int(pos[j] - pos[i]), bidirectional, 16, 40)
            assert res.scores[i, j] - plain[i, j] == pytest.approx(table[b], abs=1e-12)
    assert shift_deviation(layer, x, shift, pos).scores < 1e-12


# ---- ALiBi ------------------------------------------------------------------------------------


def ref_slopes(n):
    """The ALiBi paper's recursive recipe."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    p = 2 ** math.floor(math.log2(n))
    return power_of_2(p) + ref_slopes(2 * p)[0::2][: n - p]


@pytest.mark.parametrize("h", list(range(1, 41)) + [64, 96, 100, 128])
def test_alibi_slopes_match_the_paper(h):
    np.testing.assert_allclose(alibi_slopes(h), ref_slopes(h), rtol=1e-13)


@pytest.mark.parametrize("h", [1, 2, 4, 8, 16, 32, 64])
def test_alibi_slopes_power_of_two_closed_form(h):
    want = [2.0 ** (-8.0 * k / h) for k in range(1, h + 1)]
    np.testing.assert_allclose(alibi_slopes(h), want, rtol=1e-14)


def test_alibi_slopes_interleave_for_other_counts():
    s12 = alibi_slopes(12)
    assert_ulps(s12[:8], [2.0**-k for k in range(1, 9)], ulps=1)  # numpy's pow: within an ulp
    np.testing.assert_allclose(s12[8:], [2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5], rtol=1e-14)
    with pytest.raises(ValueError, match="heads must be at least 1"):
        alibi_slopes(0)
    with pytest.raises(ValueError, match="head must be at most 7"):
        ALiBi(heads=8, head=8)
    with pytest.raises(ValueError, match="slope must be greater than 0"):
        ALiBi(slope=-1.0)


@given(seeds, st.integers(2, 10), st.sampled_from([1, 3, 8, 12]), st.data())
def test_alibi_bias_is_linear_in_distance_with_the_documented_slope(seed, n, heads, data):
    head = data.draw(st.integers(0, heads - 1))
    layer = AttentionLayer(6, scheme="alibi", heads=heads, head=head, seed=seed)
    x = np.random.default_rng(seed).standard_normal((n, 6))
    pos = np.sort(np.random.default_rng(seed + 1).uniform(-50, 50, n))  # fractional positions are fine
    res = layer.run(x, pos)
    bias = res.scores - res.q @ res.k.T / math.sqrt(6)
    slope = ref_slopes(heads)[head]
    want = -slope * np.abs(pos[:, None] - pos[None, :])
    np.testing.assert_allclose(bias, want, atol=1e-12)
    assert shift_deviation(layer, x, data.draw(st.floats(-1e3, 1e3)), pos).scores < 1e-9


# ---- Shaw et al. ------------------------------------------------------------------------------


def ref_shaw(x, Wq, Wk, Wv, aK, aV, K, pos, causal=False):
    n, dh = x.shape[0], Wq.shape[1]
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    S = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            r = int(min(max(pos[j] - pos[i], -K), K)) + K
            S[i, j] = sum(q[i, c] * (k[j, c] + aK[r, c]) for c in range(dh)) / math.sqrt(dh)
    out = np.zeros((n, dh))
    for i in range(n):
        vis = [j for j in range(n) if not causal or j <= i]
        e = np.array([math.exp(S[i, j] - max(S[i, jj] for jj in vis)) for j in vis])
        w = e / e.sum()
        for wj, j in zip(w, vis):
            r = int(min(max(pos[j] - pos[i], -K), K)) + K
            out[i] += wj * (v[j] + aV[r])
    return S, out


@given(seeds, st.integers(1, 8), st.integers(1, 4), st.booleans())
def test_relative_layer_matches_loop_reference(seed, n, K, causal):
    layer = AttentionLayer(6, scheme="relative", max_distance=K, seed=seed)
    x = np.random.default_rng(seed).standard_normal((n, 6))
    pos = np.arange(n) * 2 - 3
    res = layer.run(x, pos, causal=causal)
    S, out = ref_shaw(x, layer.Wq, layer.Wk, layer.Wv, layer.scheme.key_table, layer.scheme.value_table, K, pos, causal)
    np.testing.assert_allclose(res.scores, S, atol=1e-12)
    np.testing.assert_allclose(res.outputs, out, atol=1e-12)


@given(seeds, st.integers(-300, 300))
def test_relative_scores_shift_invariant_and_blind_beyond_the_clip(seed, shift):
    layer = AttentionLayer(4, scheme="relative", max_distance=3, seed=seed)
    x = np.broadcast_to(np.random.default_rng(seed).standard_normal(4), (12, 4))  # one token everywhere
    S = layer.scores(x)
    assert shift_deviation(layer, x, shift).scores < 1e-12
    row = S[11]  # keys 3 .. 11 slots back share one vector: identical scores
    assert np.ptp(row[: 11 - 3 + 1]) < 1e-12
    assert np.ptp(row[8:12]) > 0  # within the clip they differ (random table)


def test_relative_validation_and_batches():
    with pytest.raises(ValueError, match="key_table must have shape \\(5, head_dim\\)"):
        RelativePositions(max_distance=2, key_table=np.zeros((4, 4)))
    with pytest.raises(ValueError, match="key_table has width 4 but the layer has head_dim=6"):
        AttentionLayer(6, scheme="relative", max_distance=2, key_table=np.zeros((5, 4)))
    with pytest.raises(ValueError, match="max_distance must be at least 1"):
        RelativePositions(max_distance=0)
    with pytest.raises(ValueError, match="positions must be integers for the relative scheme"):
        AttentionLayer(4, scheme="relative").run(np.ones((2, 4)), positions=[0, 0.5])
    # batched positions: each sequence uses its own displacements
    layer = AttentionLayer(4, scheme="relative", max_distance=2, seed=3, values=False)
    x = np.random.default_rng(0).standard_normal((2, 5, 4))
    pos = np.array([np.arange(5), np.arange(5) * 2])
    both = layer.run(x, pos)
    for b in range(2):
        one = layer.run(x[b], pos[b])
        np.testing.assert_allclose(both.scores[b], one.scores, atol=1e-13)
        np.testing.assert_allclose(both.outputs[b], one.outputs, atol=1e-13)
    np.testing.assert_allclose(both.outputs, both.weights @ both.v, atol=1e-13)  # values=False


# ---- NoPE and the sinusoidal shift map ---------------------------------------------------------


@given(seeds, st.integers(2, 8), st.data())
def test_nope_is_permutation_equivariant_without_a_mask(seed, n, data):
    layer = AttentionLayer(5, scheme="none", seed=seed)
    x = np.random.default_rng(seed).standard_normal((n, 5))
    perm = np.array(data.draw(st.permutations(range(n))))
    dev = permutation_deviation(layer, x, perm)
    assert max(dev) < 1e-12
    if n >= 3 and perm[0] != 0:  # the mask pins slot 0 to a different token: no longer equivariant
        assert permutation_deviation(layer, x, perm, causal=True).outputs > 1e-9


@given(st.floats(-1e3, 1e3), st.sampled_from([2, 8, 16]), st.floats(-200, 200))
def test_sinusoidal_shift_is_a_fixed_linear_map(k, dim, p):
    # block i: [sin w(p+k), cos w(p+k)] = [[cos wk, sin wk], [-sin wk, cos wk]] [sin wp, cos wp]
    M = np.zeros((dim, dim))
    for i in range(dim // 2):
        w = 10_000.0 ** (-2.0 * i / dim)
        c, s = math.cos(w * k), math.sin(w * k)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    ps = np.array([p, p + 1.0, p - 7.5])
    np.testing.assert_allclose(sinusoidal_encoding(ps + k, dim), sinusoidal_encoding(ps, dim) @ M.T, atol=1e-9)


# ---- RoPE with a scaled schedule ------------------------------------------------------------------


@given(seeds, st.floats(1.0, 4.0), st.floats(-1e3, 1e3))
def test_rope_with_scaling_theta_and_attention_factor(seed, factor, shift):
    from ropegeo import scaling

    theta, att = scaling.yarn(8, 10_000.0, 4.0, 64)
    plain = AttentionLayer(8, scheme="rope", theta=theta, seed=seed)
    scaled = AttentionLayer(8, scheme="rope", theta=theta, attention_factor=factor, seed=seed)
    x = np.random.default_rng(seed).standard_normal((5, 8))
    np.testing.assert_allclose(scaled.scores(x), factor**2 * plain.scores(x), rtol=1e-12, atol=1e-12)
    assert shift_deviation(scaled, x, shift).scores < 1e-9
    assert att > 1.0  # YaRN's own factor is available to pass through
    with pytest.raises(ValueError, match="attention_factor must be greater than 0"):
        AttentionLayer(8, scheme="rope", attention_factor=0.0)


def test_all_seven_schemes_registered_and_run():
    assert set(scheme_names()) >= {"none", "absolute", "sinusoidal", "relative", "t5", "alibi", "rope"}
    x = np.random.default_rng(0).standard_normal((3, 6, 8))
    for name in ("none", "absolute", "sinusoidal", "relative", "t5", "alibi", "rope"):
        res = AttentionLayer(8, scheme=name, seed=1).run(x, causal=True)
        assert res.outputs.shape == (3, 6, 8)
        np.testing.assert_allclose(res.weights.sum(-1), 1.0, atol=1e-12)
        assert np.all(np.triu(res.weights, 1) == 0)


def test_displacement_matrix_is_bounded():
    layer = AttentionLayer(2, scheme="alibi", seed=0)
    with pytest.raises(ValueError, match="at most"):
        layer.scheme.bias(np.zeros(8000), np.zeros(8000))
