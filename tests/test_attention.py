"""Tests of ropegeo.toy.attention: the toy layer, its position schemes and its symmetry probes.

The layer is compared with a reference written with scalar loops (no matrix products), and every
symmetry claim is a hypothesis property over seeds, widths, lengths and permutations.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ropegeo.softmax import softmax, softmax_segments
from ropegeo.toy.attention import AttentionLayer, causal_mask, permutation_deviation, shift_deviation
from ropegeo.toy.schemes import (
    MAX_ENTRIES,
    AbsolutePositions,
    PositionScheme,
    make_scheme,
    register_scheme,
    scheme_names,
    sinusoidal_encoding,
)

seeds = st.integers(0, 2**32 - 1)


# ---- an independent reference: scalar loops --------------------------------------------------


def ref_code(p, dim, base=10_000.0):
    out = []
    for i in range(dim // 2):
        w = base ** (-2.0 * i / dim)
        out += [math.sin(p * w), math.cos(p * w)]
    return out


def ref_rotate(vec, p, base=10_000.0):
    """Interleaved rotary rotation with explicit 2x2 blocks."""
    d = len(vec)
    out = list(vec)
    for i in range(d // 2):
        a = p * base ** (-2.0 * i / d)
        x0, x1 = vec[2 * i], vec[2 * i + 1]
        out[2 * i] = x0 * math.cos(a) - x1 * math.sin(a)
        out[2 * i + 1] = x0 * math.sin(a) + x1 * math.cos(a)
    return out


def ref_attention(x, Wq, Wk, Wv, *, causal=False, add=None, rope_positions=None):
    """Scores, weights, outputs of one head by loops. ``add[i]`` is added to token i."""
    n, dm = x.shape
    dh = Wq.shape[1]
    h = [[x[i][c] + (add[i][c] if add is not None else 0.0) for c in range(dm)] for i in range(n)]

    def proj(W):
        return [[sum(h[i][c] * W[c][j] for c in range(dm)) for j in range(dh)] for i in range(n)]

    q, k, v = proj(Wq), proj(Wk), proj(Wv)
    if rope_positions is not None:
        q = [ref_rotate(q[i], rope_positions[i]) for i in range(n)]
        k = [ref_rotate(k[i], rope_positions[i]) for i in range(n)]
    S = [[sum(q[i][c] * k[j][c] for c in range(dh)) / math.sqrt(dh) for j in range(n)] for i in range(n)]
    A = []
    for i in range(n):
        visible = [j for j in range(n) if not causal or j <= i]
        top = max(S[i][j] for j in visible)
        e = [math.exp(S[i][j] - top) if j in visible else 0.0 for j in range(n)]
        total = sum(e)
        A.append([t / total for t in e])
    out = [[sum(A[i][j] * v[j][c] for j in range(n)) for c in range(dh)] for i in range(n)]
    return np.array(S), np.array(A), np.array(out)


# ---- the layer against the reference ---------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_layer_matches_loop_reference(causal):
    layer = AttentionLayer(6, 4, seed=3)
    x = np.random.default_rng(4).standard_normal((5, 6))
    res = layer.run(x, causal=causal)
    S, A, out = ref_attention(x, layer.Wq, layer.Wk, layer.Wv, causal=causal)
    np.testing.assert_allclose(res.scores, S, atol=1e-12)
    np.testing.assert_allclose(res.weights, A, atol=1e-12)
    np.testing.assert_allclose(res.outputs, out, atol=1e-12)


def test_absolute_sinusoidal_rope_match_reference():
    x = np.random.default_rng(5).standard_normal((4, 8))
    pos = np.array([2, 3, 4, 5])
    lay = AttentionLayer(8, seed=1, scheme="absolute", rows=10)
    _, _, out = ref_attention(x, lay.Wq, lay.Wk, lay.Wv, add=lay.scheme.table[pos])
    np.testing.assert_allclose(lay(x, pos), out, atol=1e-12)
    lay = AttentionLayer(8, seed=1, scheme="sinusoidal")
    _, _, out = ref_attention(x, lay.Wq, lay.Wk, lay.Wv, add=[ref_code(p, 8) for p in pos])
    np.testing.assert_allclose(lay(x, pos), out, atol=1e-12)
    lay = AttentionLayer(8, seed=1, scheme="rope")
    S, _, out = ref_attention(x, lay.Wq, lay.Wk, lay.Wv, rope_positions=pos)
    np.testing.assert_allclose(lay.scores(x, pos), S, atol=1e-12)
    np.testing.assert_allclose(lay(x, pos), out, atol=1e-12)


def test_values_are_never_rotated():
    x = np.random.default_rng(0).standard_normal((5, 8))
    lay = AttentionLayer(8, seed=2, scheme="rope")
    np.testing.assert_allclose(lay.run(x, np.arange(5) + 77).v, x @ lay.Wv, atol=1e-14)


def test_seed_and_generator_are_reproducible():
    a = AttentionLayer(8, seed=11)
    b = AttentionLayer(8, seed=np.random.default_rng(11))
    np.testing.assert_array_equal(a.Wq, b.Wq)
    assert not np.array_equal(a.Wq, AttentionLayer(8, seed=12).Wq)


# ---- permutation equivariance -----------------------------------------------------------------


@given(seeds, st.integers(1, 9), st.sampled_from([1, 3, 8, 16]), st.sampled_from([(), (2,), (2, 3)]), st.data())
def test_bare_attention_is_permutation_equivariant(seed, n, dm, batch, data):
    rng = np.random.default_rng(seed)
    layer = AttentionLayer(dm, seed=seed % 1000)
    x = rng.standard_normal(batch + (n, dm)) * 2.0
    perm = np.array(data.draw(st.permutations(range(n))), dtype=int)
    a, b = layer.run(x), layer.run(x[..., perm, :])
    # independent statement of P S P^T: entry (i, j) of the new scores is old entry (perm[i], perm[j])
    for i in range(n):
        for j in range(n):
            np.testing.assert_allclose(b.scores[..., i, j], a.scores[..., perm[i], perm[j]], rtol=0, atol=1e-12 * (1 + np.abs(a.scores).max()))
    P = np.eye(n)[perm]
    np.testing.assert_allclose(b.outputs, P @ a.outputs, atol=1e-12 * (1 + np.abs(a.outputs).max()))
    assert max(permutation_deviation(layer, x, perm)) < 1e-11


@given(seeds, st.integers(2, 8), st.sampled_from(["absolute", "sinusoidal", "rope"]), st.data())
def test_every_scheme_equivariant_when_positions_travel(seed, n, scheme, data):
    opts = {"rows": 12} if scheme == "absolute" else {}
    layer = AttentionLayer(8, scheme=scheme, seed=seed % 997, **opts)
    x = np.random.default_rng(seed).standard_normal((n, 8))
    perm = np.array(data.draw(st.permutations(range(n))), dtype=int)
    pos = np.arange(n) + 3
    assert max(permutation_deviation(layer, x, perm, pos, carry_positions=True)) < 1e-11


@pytest.mark.parametrize("scheme", ["absolute", "sinusoidal", "rope"])
def test_positions_attached_to_slots_break_equivariance(scheme):
    opts = {"rows": 12} if scheme == "absolute" else {}
    layer = AttentionLayer(8, scheme=scheme, seed=0, **opts)
    x = np.random.default_rng(1).standard_normal((6, 8))
    assert permutation_deviation(layer, x, [5, 4, 3, 2, 1, 0]).outputs > 1e-3


# ---- causal mask --------------------------------------------------------------------------------


@given(seeds, st.integers(2, 8), st.data())
def test_causal_mask_breaks_equivariance_but_not_scores(seed, n, data):
    layer = AttentionLayer(8, seed=seed % 991, causal=True)
    x = np.random.default_rng(seed).standard_normal((n, 8))
    perm = np.array(data.draw(st.permutations(range(n)).filter(lambda p: p[0] != 0)), dtype=int)
    dev = permutation_deviation(layer, x, perm)
    assert dev.scores < 1e-11  # the mask acts after the scores
    a, b = layer.run(x), layer.run(x[perm])
    # slot 0 sees only itself: its output is the value of whichever token sits there
    np.testing.assert_allclose(b.outputs[0], x[perm[0]] @ layer.Wv, atol=1e-12)
    np.testing.assert_allclose(a.outputs[0], x[0] @ layer.Wv, atol=1e-12)
    assert dev.outputs > 1e-6


@given(seeds, st.integers(1, 7), st.integers(0, 4), st.data())
def test_causal_slots_with_same_query_and_prefix_set_are_unchanged(seed, head, tail, data):
    n = head + tail
    x = np.random.default_rng(seed).standard_normal((n, 6))
    layer = AttentionLayer(6, seed=1, causal=True)
    perm = np.array(list(data.draw(st.permutations(range(head)))) + list(range(head, n)), dtype=int)
    change = np.abs(layer(x[perm]) - layer(x)).max(axis=-1)
    for i in range(n):
        same = perm[i] == i and set(perm[: i + 1]) == set(range(i + 1))
        if same:
            assert change[i] < 1e-12


def test_causal_argument_overrides_default():
    layer = AttentionLayer(4, seed=0, causal=True)
    x = np.random.default_rng(0).standard_normal((3, 4))
    assert np.all(np.triu(layer.weights(x), 1) == 0)
    assert np.all(layer.weights(x, causal=False) > 0)
    with pytest.raises(ValueError, match="causal"):
        layer.weights(x, causal="yes")


def test_softmax_and_mask():
    m = causal_mask(4)
    np.testing.assert_array_equal(m, [[j <= i for j in range(4)] for i in range(4)])
    w = softmax(np.zeros((4, 4)), m)
    np.testing.assert_allclose(w, m / m.sum(axis=1, keepdims=True))
    with pytest.raises(ValueError, match="no visible entry"):
        softmax(np.zeros((2, 2)), np.array([[True, False], [False, False]]))
    with pytest.raises(ValueError, match="boolean"):
        softmax(np.zeros((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="scores must be finite"):
        softmax([1.0, np.nan])
    with pytest.raises(ValueError, match="seq"):
        causal_mask(0)


def test_softmax_segments_matches_a_loop_per_segment():
    """The ragged kernel against math.exp and math.fsum per segment, with its own shift or a given bound."""
    rng = np.random.default_rng(3)
    sizes = [1, 3, 7, 2]
    x = rng.normal(scale=5.0, size=sum(sizes))
    starts = np.cumsum([0] + sizes[:-1])
    row = np.repeat(np.arange(len(sizes)), sizes)
    want, log_sums = [], []
    for a, n in zip(starts, sizes):
        e = [math.exp(t) for t in x[a:a + n]]
        want += [t / math.fsum(e) for t in e]
        log_sums.append(math.log(math.fsum(e)))
    for top in (None, np.array([x[a:a + n].max() + 1.0 for a, n in zip(starts, sizes)])):
        p, shift, z = softmax_segments(x.copy(), starts, row, top)
        np.testing.assert_allclose(p, want, rtol=1e-12)
        np.testing.assert_allclose(np.log(z) + shift, log_sums, rtol=1e-12)
    p, _, _ = softmax_segments(np.array([0.0, -1e4]), np.array([0]), np.zeros(2, dtype=int))
    assert p[0] == 1.0 and 0.0 < p[1] < 1e-250  # floored at EXP_FLOOR, not underflowed to a subnormal


# ---- absolute table ------------------------------------------------------------------------------


def test_absolute_table_errors_name_position_and_size():
    layer = AttentionLayer(8, scheme="absolute", rows=10, seed=0)
    x = np.zeros((4, 8))
    with pytest.raises(ValueError, match=r"position 10 is outside the absolute table, which has 10 rows \(positions 0 to 9\)"):
        layer.run(x, np.arange(4) + 7)
    with pytest.raises(ValueError, match=r"position -1 is outside .* 10 rows"):
        layer.run(x, np.arange(4) - 1)
    with pytest.raises(ValueError, match="integers"):
        layer.run(x, np.arange(4) + 0.5)
    with pytest.raises(ValueError, match="position 10 is outside"):
        shift_deviation(layer, x, 8)
    with pytest.raises(ValueError, match="width 5 but the layer has d_model=8"):
        AttentionLayer(8, scheme="absolute", table=np.zeros((4, 5)))
    with pytest.raises(ValueError, match="rows"):
        AbsolutePositions(rows=0)
    with pytest.raises(ValueError, match="at most"):
        AttentionLayer(1024, scheme="absolute", rows=2**16)
    with pytest.raises(ValueError, match="d_model must be at most 1024"):
        AttentionLayer(2048)
    with pytest.raises(ValueError, match="head_dim must be at most 1024"):
        AttentionLayer(8, 2048)


@given(seeds, st.integers(1, 5))
def test_absolute_global_shift_changes_scores(seed, shift):
    layer = AttentionLayer(8, scheme="absolute", rows=16, seed=seed % 1000)
    x = np.random.default_rng(seed).standard_normal((5, 8))
    S0 = layer.scores(x)
    S1 = layer.scores(x, np.arange(5) + shift)
    # independent expectation: the table rows differ, so the inputs differ, so the scores do
    assert not np.allclose(layer.scheme.table[:5], layer.scheme.table[shift : shift + 5])
    assert np.abs(S1 - S0).max() > 1e-6
    assert shift_deviation(layer, x, shift).scores == pytest.approx(np.abs(S1 - S0).max())


def test_explicit_table_is_used():
    table = np.arange(24.0).reshape(3, 8) / 10
    layer = AttentionLayer(8, scheme="absolute", table=table, seed=0)
    x = np.ones((3, 8))
    np.testing.assert_allclose(layer.run(x).v, (x + table) @ layer.Wv)


# ---- sinusoidal code -------------------------------------------------------------------------------


@given(st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=1, max_size=6), st.sampled_from([2, 4, 10, 32]),
       st.floats(1.5, 1e5))
def test_sinusoidal_encoding_matches_scalar_formula(positions, dim, base):
    got = sinusoidal_encoding(positions, dim, base)
    want = np.array([ref_code(p, dim, base) for p in positions])
    np.testing.assert_allclose(got, want, atol=1e-9)


def test_sinusoidal_encoding_shape_and_validation():
    assert sinusoidal_encoding(np.zeros((2, 3)), 6).shape == (2, 3, 6)
    np.testing.assert_array_equal(sinusoidal_encoding(0, 4), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="d_model must be an even"):
        sinusoidal_encoding([1.0], 5)
    with pytest.raises(ValueError, match="base must be greater than 1"):
        sinusoidal_encoding([1.0], 4, base=1.0)
    with pytest.raises(ValueError, match="positions must be finite"):
        sinusoidal_encoding([np.inf], 4)
    with pytest.raises(ValueError, match="at most"):
        sinusoidal_encoding(np.zeros(2**20), 64)
    with pytest.raises(ValueError, match="even d_model"):
        AttentionLayer(7, scheme="sinusoidal")


@given(seeds, st.floats(1, 1e4))
def test_sinusoidal_scheme_is_not_shift_invariant_but_rope_is(seed, shift):
    x = np.random.default_rng(seed).standard_normal((5, 8))
    rope = AttentionLayer(8, scheme="rope", seed=seed % 1000)
    assert shift_deviation(rope, x, shift).scores < 1e-9
    sinus = AttentionLayer(8, scheme="sinusoidal", seed=seed % 1000)
    pos = np.arange(5.0)
    # a shift that moves the fastest pair by a non-multiple of 2 pi changes the inputs, hence the scores
    if abs(math.remainder(shift, 2 * math.pi)) > 0.1:
        assert shift_deviation(sinus, x, shift, pos).scores > 1e-6


# ---- rope options ---------------------------------------------------------------------------------


@given(seeds, st.sampled_from(["interleaved", "half"]), st.floats(2.0, 1e6), st.floats(-500, 500))
def test_rope_scheme_scores_depend_on_displacement_only(seed, pairing, base, shift):
    layer = AttentionLayer(8, scheme="rope", base=base, pairing=pairing, seed=seed % 1000)
    x = np.random.default_rng(seed).standard_normal((4, 8))
    pos = np.array([0.0, 3.0, 7.5, 20.0])
    np.testing.assert_allclose(layer.scores(x, pos + shift), layer.scores(x, pos), atol=1e-9)


def test_rope_options_are_validated_at_construction():
    with pytest.raises(ValueError, match="pairing"):
        AttentionLayer(8, scheme="rope", pairing="zigzag")
    with pytest.raises(ValueError, match="base"):
        AttentionLayer(8, scheme="rope", base=0.5)
    with pytest.raises(ValueError, match="rotary_dim"):
        AttentionLayer(8, scheme="rope", rotary_dim=12)
    with pytest.raises(ValueError, match="theta"):
        AttentionLayer(8, scheme="rope", theta=[1.0, 0.1, 0.01, 0.001, 1e-4])
    lay = AttentionLayer(8, scheme="rope", theta=[1.0, 0.5], seed=0)  # partial rotary from theta
    x = np.random.default_rng(0).standard_normal((3, 8))
    np.testing.assert_allclose(lay.run(x, [5, 6, 7]).q[:, 4:], (x @ lay.Wq)[:, 4:])


# ---- validation of the layer -------------------------------------------------------------------------


def test_layer_validation_messages():
    with pytest.raises(ValueError, match="d_model"):
        AttentionLayer(0)
    with pytest.raises(ValueError, match="head_dim must be an even"):
        AttentionLayer(8, 3)
    with pytest.raises(ValueError, match="scheme must be one of"):
        AttentionLayer(8, scheme="alibi2")
    with pytest.raises(ValueError, match="seed"):
        AttentionLayer(8, seed=-1)
    with pytest.raises(ValueError, match="cannot be combined"):
        AttentionLayer(8, scheme=AbsolutePositions(4), rows=5)
    with pytest.raises(ValueError, match="causal"):
        AttentionLayer(8, causal=1)
    layer = AttentionLayer(8, seed=0)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., seq, d_model=8\)"):
        layer(np.zeros((3, 7)))
    with pytest.raises(ValueError, match="x must have shape"):
        layer(np.zeros(8))
    with pytest.raises(ValueError, match="x must be finite"):
        layer(np.full((2, 8), np.nan))
    with pytest.raises(ValueError, match="positions must have a last axis of length seq=3"):
        layer(np.zeros((3, 8)), [0, 1])
    with pytest.raises(ValueError, match="positions of shape"):
        layer(np.zeros((2, 3, 8)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="score matrix would have shape"):
        layer(np.zeros((1, 6000, 8)))
    with pytest.raises(ValueError, match="perm must be a permutation"):
        permutation_deviation(layer, np.zeros((3, 8)), [0, 0, 1])
    with pytest.raises(ValueError, match="shift must be finite"):
        shift_deviation(layer, np.zeros((3, 8)), np.inf)
    assert MAX_ENTRIES == 2**25


# ---- the extension point ----------------------------------------------------------------------------


def test_registry_accepts_a_new_scheme_with_a_bias_hook():
    @register_scheme("test_linear_bias")
    class LinearBias(PositionScheme):
        def __init__(self, slope=0.5):
            self.slope = slope

        def bias(self, qp, kp):
            return -self.slope * np.abs(qp[..., :, None] - kp[..., None, :])

    try:
        assert "test_linear_bias" in scheme_names()
        assert isinstance(make_scheme("test_linear_bias", slope=1.0), LinearBias)
        x = np.random.default_rng(0).standard_normal((4, 8))
        plain = AttentionLayer(8, seed=5)
        biased = AttentionLayer(8, seed=5, scheme="test_linear_bias", slope=1.0)
        want = plain.scores(x) - np.abs(np.subtract.outer(np.arange(4), np.arange(4)))
        np.testing.assert_allclose(biased.scores(x), want, atol=1e-12)
        # a bias that depends on displacement only: shift-invariant, yet not permutation-equivariant
        assert shift_deviation(biased, x, 9).scores < 1e-12
        assert permutation_deviation(biased, x, [1, 0, 2, 3]).scores > 1e-3  # (a reversal keeps |i - j|)
    finally:
        from ropegeo.toy import schemes as position_schemes

        position_schemes._SCHEMES.pop("test_linear_bias", None)


def test_builtin_schemes_registered():
    assert {"none", "absolute", "sinusoidal", "rope"} <= set(scheme_names())
    with pytest.raises(ValueError, match="identifier"):
        register_scheme("not a name")


# ---- figures ---------------------------------------------------------------------------------------


def test_figures_build_and_validate():
    from matplotlib.figure import Figure

    from ropegeo.book.plots.attention import causal_figure, permutation_figure, position_codes_figure, shift_map_figure
    from ropegeo.book.symbolic import sinusoidal_shift_matrix

    layer = AttentionLayer(8, seed=0)
    x = np.random.default_rng(0).standard_normal((4, 8))
    perm = np.array([2, 0, 3, 1])
    fig = permutation_figure(layer.scores(x), layer.scores(x[perm]), perm, list("abcd"))
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    # the right panel is labelled with the tokens in their new order
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == ["c", "a", "d", "b"]
    w = layer.weights(x, causal=True)
    assert len(causal_figure(w, w).axes) == 4
    assert len(position_codes_figure(np.ones((3, 8)), sinusoidal_encoding(np.arange(5), 8)).axes) == 4
    assert len(shift_map_figure(sinusoidal_shift_matrix(3, 8), 3).axes) == 3
    with pytest.raises(ValueError, match="perm must be a permutation"):
        permutation_figure(np.eye(3), np.eye(3), [0, 0, 1])
    with pytest.raises(ValueError, match="square"):
        permutation_figure(np.ones((2, 3)), np.ones((2, 3)), [0, 1])
    with pytest.raises(ValueError, match="one label per row"):
        permutation_figure(np.eye(2), np.eye(2), [1, 0], ["a"])
    with pytest.raises(ValueError, match="shape of weights"):
        causal_figure(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="at most 256"):
        shift_map_figure(np.eye(512), 1)
    with pytest.raises(ValueError, match="finite non-empty 2-D"):
        position_codes_figure(np.ones(3), np.ones((2, 2)))


# ---- copy_back_head: against a plain loop over pairs -------------------------------------------
def _copy_head_weights(k, back, length, key_shift, sharpness):
    """Score of key n for the query at m = length - 1, written pair by pair with cosines."""
    d = k.size
    theta = [10_000.0 ** (-2 * i / d) for i in range(d // 2)]
    m = length - 1
    scores = []
    for n in range(length):
        disp = (n + key_shift) - m + back
        s = sum((k[2 * i] ** 2 + k[2 * i + 1] ** 2) * math.cos(disp * t) for i, t in enumerate(theta))
        scores.append(sharpness * s / math.sqrt(d))
    e = np.exp(np.array(scores) - max(scores))
    return e / e.sum()


@pytest.mark.parametrize("back, length, shift, lag", [(2, 8, 0.0, 0), (2, 8, 1.0, 0), (2, 8, 0.0, 1), (3, 12, -0.5, 2)])
def test_copy_back_head_matches_pairwise_cosines(back, length, shift, lag):
    from ropegeo.toy.attention import copy_back_head

    k = np.random.default_rng(7).normal(size=16)
    head = copy_back_head(back, length=length, head_dim=16, key_shift=shift, value_lag=lag, seed=7)
    values = np.random.default_rng(1).normal(size=(length, 3))
    w, out = head(values)
    want = _copy_head_weights(k, back, length, shift, 8.0)
    np.testing.assert_allclose(w, want, rtol=1e-10, atol=1e-14)
    read = np.array([values[(j - lag) % length] for j in range(length)])  # slot j holds token j - lag
    np.testing.assert_allclose(out, want @ read, rtol=1e-10, atol=1e-14)


def test_copy_back_head_defects_route_and_read_as_described():
    from ropegeo.toy.attention import copy_back_head

    labels = np.eye(8)
    w, out = copy_back_head(2, seed=5)(labels)
    assert (w.argmax(), out.argmax()) == (5, 5)
    w, out = copy_back_head(2, seed=5, key_shift=1)(labels)
    assert (w.argmax(), out.argmax()) == (4, 4)  # routing defect: attends to and reads token 4
    w, out = copy_back_head(2, seed=5, value_lag=1)(labels)
    assert (w.argmax(), out.argmax()) == (5, 4)  # value-path defect: attends right, reads wrong


@pytest.mark.parametrize("kwargs, name", [
    (dict(back=0), "back"), (dict(back=8), "back"), (dict(length=1), "length"), (dict(length=10**6), "length"),
    (dict(head_dim=15), "head_dim"), (dict(head_dim=4096), "head_dim"), (dict(key_shift=float("nan")), "key_shift"),
    (dict(value_lag=8), "value_lag"), (dict(sharpness=0.0), "sharpness"), (dict(seed=-1), "seed"),
])
def test_copy_back_head_rejects_bad_parameters(kwargs, name):
    from ropegeo.toy.attention import copy_back_head

    with pytest.raises(ValueError, match=name):
        copy_back_head(**kwargs)


def test_copy_back_head_rejects_bad_values():
    from ropegeo.toy.attention import copy_back_head

    head = copy_back_head()
    for bad in (np.eye(7), np.ones(8), np.full((8, 2), np.inf)):
        with pytest.raises(ValueError, match="values"):
            head(bad)


def test_scheme_names_and_options_are_checked():
    from ropegeo.toy.attention import AttentionLayer

    with pytest.raises(ValueError, match="scheme must be one of"):
        AttentionLayer(8, scheme=["rope"])
    with pytest.raises(ValueError, match="does not take these options"):
        AttentionLayer(8, scheme="rope", bogus=1)
    with pytest.raises(ValueError, match="scores must have at least one entry"):
        softmax([])


def test_the_head_width_is_head_dim():
    """One name for the head width: the layer's argument and attribute and every scheme's setup."""
    import inspect

    from ropegeo.toy.schemes import _SCHEMES, PositionScheme

    assert "head_dim" in inspect.signature(AttentionLayer).parameters
    layer = AttentionLayer(6, 4, seed=0)
    assert layer.head_dim == 4 and not hasattr(layer, "d_head") and "head_dim=4" in repr(layer)
    for cls in [PositionScheme, *_SCHEMES.values()]:
        assert list(inspect.signature(cls.setup).parameters) == ["self", "d_model", "head_dim", "rng"], cls
