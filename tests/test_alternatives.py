"""Training position-only heads per scheme, and the comparison table.

Hand-written gradients are checked by central finite differences of the loss computed through
the attention layer itself (an independent forward path). Trained heads are checked against the
ceilings that their scheme imposes in closed form, and the fixed-formula rows of the table
against their formulas.
"""

import math

import numpy as np
import pytest

from ropegeo.toy import alternatives as alt
from ropegeo.toy import offset_head_loss
from ropegeo.toy import scheme_heads as sh
from ropegeo.toy.attention import AttentionLayer
from ropegeo.toy.interventions import PositionHead, offset_task, sparse_retrieval
from ropegeo.toy.schemes import AbsolutePositions, RelativePositions, T5Bias, sinusoidal_encoding, t5_bucket

L, OFF = 12, 3


def fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        up = f()
        x[i] = old - eps
        down = f()
        x[i] = old
        g[i] = (up - down) / (2 * eps)
    return g


def layer_loss(layer):
    return sh.task_loss(PositionHead(layer), OFF, L)


def test_projection_gradients_absolute():
    rng = np.random.default_rng(0)
    d = 4
    T = rng.normal(size=(L + 3, d))
    Wq, Wk = rng.normal(size=(2, d, d))
    layer = AttentionLayer(d, scheme=AbsolutePositions(table=T), seed=0)
    layer.Wq, layer.Wk = Wq, Wk
    loss, dWq, dWk, dH = sh._fb_projection(np.eye(d)[0] + T[:L], Wq, Wk, OFF)
    assert loss == pytest.approx(layer_loss(layer), rel=1e-12)
    np.testing.assert_allclose(dWq, fd(lambda: layer_loss(layer), layer.Wq), atol=1e-6)
    np.testing.assert_allclose(dWk, fd(lambda: layer_loss(layer), layer.Wk), atol=1e-6)
    dT = fd(lambda: layer_loss(layer), layer.scheme.table)
    np.testing.assert_allclose(dH, dT[:L], atol=1e-6)
    assert np.all(dT[L:] == 0)  # rows past the training length get no gradient


def test_projection_gradients_sinusoidal():
    rng = np.random.default_rng(1)
    d = 6
    layer = AttentionLayer(d, scheme="sinusoidal", seed=0)
    layer.Wq, layer.Wk = rng.normal(size=(2, d, d))
    H = np.eye(d)[0] + sinusoidal_encoding(np.arange(L), d)
    loss, dWq, dWk, _ = sh._fb_projection(H, layer.Wq, layer.Wk, OFF)
    assert loss == pytest.approx(layer_loss(layer), rel=1e-12)
    np.testing.assert_allclose(dWq, fd(lambda: layer_loss(layer), layer.Wq), atol=1e-6)
    np.testing.assert_allclose(dWk, fd(lambda: layer_loss(layer), layer.Wk), atol=1e-6)


def test_relative_gradients():
    rng = np.random.default_rng(2)
    d, K = 4, 3
    q, k0 = rng.normal(size=(2, d))
    a = rng.normal(size=(2 * K + 1, d))
    layer = AttentionLayer(d, scheme=RelativePositions(max_distance=K, key_table=a, value_table=a, values=False), seed=0)
    layer.Wq, layer.Wk = np.zeros((d, d)), np.zeros((d, d))
    layer.Wq[0], layer.Wk[0] = q, k0
    pos = np.arange(L)
    idx = (np.clip(pos[None, :] - pos[:, None], -K, K) + K).ravel()
    loss, dq, da = sh._fb_relative(q, a, k0, idx, L, OFF)
    assert loss == pytest.approx(layer_loss(layer), rel=1e-12)
    np.testing.assert_allclose(dq, fd(lambda: layer_loss(layer), layer.Wq)[0], atol=1e-6)
    np.testing.assert_allclose(da, fd(lambda: layer_loss(layer), layer.scheme.key_table), atol=1e-6)


def test_t5_gradients():
    b = np.random.default_rng(3).normal(size=16)
    layer = AttentionLayer(4, scheme=T5Bias(num_buckets=16, max_distance=20, bidirectional=False, table=b), seed=0)
    pos = np.arange(L)
    idx = t5_bucket(pos[None, :] - pos[:, None], bidirectional=False, num_buckets=16, max_distance=20).ravel()
    loss, db = sh._fb_t5(b, idx, L, OFF)
    assert loss == pytest.approx(layer_loss(layer), rel=1e-12)
    np.testing.assert_allclose(db, fd(lambda: layer_loss(layer), layer.scheme.table), atol=1e-6)


def test_rope_head_is_gate_c_head_inside_the_layer():
    h = sh.train_position_head("rope", OFF, train_length=L, head_dim=8, steps=50, seed=4)
    gate_c_loss, _, _ = offset_head_loss(h.layer.Wq[0] / math.sqrt(8), h.layer.Wk[0], h.layer.scheme.options["theta"],
                                         offset=OFF, length=L)
    assert sh.task_loss(h, OFF, L) == pytest.approx(gate_c_loss, rel=1e-10)
    assert h.losses.size == 50


@pytest.mark.parametrize("scheme", sh.LEARNED)
def test_every_learned_scheme_learns_a_local_offset(scheme):
    h = sh.train_position_head(scheme, 5, train_length=64, steps=600, seed=0)
    assert h.losses[-1] < 0.05 * h.losses[0]
    assert offset_task(h, 64, 5).accuracy == 1.0
    again = sh.train_position_head(scheme, 5, train_length=64, steps=600, seed=0)
    np.testing.assert_array_equal(h.losses, again.losses)  # deterministic for a seed


def test_trained_heads_respect_their_closed_form_ceilings():
    # Shaw clipped at K: the key 40 back shares its vector with every key >= K back
    K = 16
    rel = sh.train_position_head("relative", 40, train_length=64, steps=600, seed=1, max_distance=K)
    r = sparse_retrieval(rel, 256, 40)
    ceiling = 1.0 / (r.query - K + 1)
    assert np.all(r.target_mass <= ceiling + 1e-12)
    assert r.accuracy == 0.0
    # T5: the key shares its bucket with the others of the same bucket
    t5 = sh.train_position_head("t5", 40, train_length=64, steps=600, seed=1)
    r = sparse_retrieval(t5, 256, 40)
    dist = np.arange(1, 256)
    same = t5_bucket(-dist, bidirectional=False) == t5_bucket(-40, bidirectional=False)
    n_same = np.array([np.sum(same[:m]) for m in r.query])
    assert np.all(r.target_mass <= 1.0 / n_same + 1e-12)
    assert n_same.max() == 6  # distances 40 .. 45


def test_absolute_stretch_fails_exactly_where_the_trained_rows_end():
    h = sh.train_position_head("absolute", 5, train_length=32, steps=600, seed=0)
    assert np.all(h.layer.scheme.table[32:] == np.random.default_rng(0).normal(scale=0.3, size=(256, 16))[32:])
    r = offset_task(h, 128, 5)
    inside = r.query < 32
    assert r.correct[inside].all()
    assert r.correct[~inside].mean() < 0.2  # untrained rows: chance-level


def test_comparison_fixed_rows_match_their_formulas():
    c = alt.compare_schemes(("none", "alibi"), seeds=(0,), train_length=32, offset=3, distance=20, shift=8,
                            factors=(2, 4))
    none, alibi = c.results["none"][0], c.results["alibi"][0]
    assert none.accuracy == 0.0 and none.move_score_change == 0.0 and none.shift_guaranteed
    assert none.retrieval_mass_train == pytest.approx(np.mean(1.0 / np.arange(20, 32)), rel=1e-12)
    assert none.retrieval_mass_long == pytest.approx(np.mean(1.0 / np.arange(20, 128)), rel=1e-12)
    slope = 0.5  # head 0 of 8: 2**(-8/8)
    assert alibi.move_score_change == pytest.approx(-slope, rel=1e-12)
    r = math.exp(-slope)
    want = np.mean([r ** 19 * (1 - r) / (1 - r**m) for m in range(20, 32)])
    assert alibi.retrieval_mass_train == pytest.approx(want, rel=1e-10)
    assert math.isnan(none.final_loss)
    text = c.markdown()
    assert text.count("\n") == 3 and "| alibi | fixed slope |" in text and "| none | none |" in text


def test_validation():
    with pytest.raises(ValueError, match="nothing to train: use fixed_head"):
        sh.train_position_head("alibi")
    with pytest.raises(ValueError, match="scheme must be one of the learned schemes"):
        sh.train_position_head("bogus")
    with pytest.raises(ValueError, match="offset must be at most 63"):
        sh.train_position_head("t5", 64)
    with pytest.raises(ValueError, match="max_distance must be at least 17"):  # decoder: 16 exact buckets
        sh.train_position_head("t5", 5, max_distance=4)
    with pytest.raises(ValueError, match="scheme must be one of the fixed schemes"):
        sh.fixed_head("rope")
    with pytest.raises(ValueError, match="schemes must be a non-empty selection"):
        alt.compare_schemes(("rope", "xl"))
    with pytest.raises(ValueError, match="factors must be a non-empty increasing"):
        alt.compare_schemes(("none",), factors=(4, 2))
    with pytest.raises(ValueError, match="shift must be at most"):
        alt.compare_schemes(("none",), shift=100)


def test_figures_build_and_validate():
    import json

    from matplotlib.figure import Figure

    from ropegeo.book.plots.alternatives import bias_shapes, comparison_figure, learned_profiles

    c = alt.compare_schemes(("none", "t5", "rope"), seeds=(0,), train_length=24, offset=3, distance=10, shift=4,
                            factors=(2,), steps=100)
    json.dumps(c.to_dict())  # plain Python all the way down
    back = alt.Comparison.from_dict(json.loads(json.dumps(c.to_dict())))  # the stored-run round trip
    assert list(back.results) == ["none", "t5", "rope"] and back.heads == {}
    assert back.settings["factors"] == (2,) and back.markdown() == c.markdown()
    for name in c.results:
        assert repr(back.results[name]) == repr(c.results[name])  # NaN fields compare equal as text
    with pytest.raises(ValueError, match="settings"):
        alt.Comparison.from_dict({"results": {}})
    with pytest.raises(ValueError, match="SchemeResult fields"):
        alt.Comparison.from_dict({"settings": {}, "results": {"rope": [{"seed": 0}]}})
    assert isinstance(bias_shapes(max_offset=50, heads=12, theta=np.ones(8) * 0.1), Figure)
    fig = learned_profiles([c.heads[(n, "local")][0] for n in ("none", "t5", "rope")], length=48, target=3)
    assert [ln.get_label() for ln in fig.axes[0].lines][:3] == ["none", "t5", "rope"]
    fig = comparison_figure(c)
    assert len(fig.axes) == 2 and len(fig.axes[1].patches) == 2 * 3
    m = alt.compare_schemes(("alibi",), seeds=(0,), train_length=24, offset=3, distance=10, shift=4, factors=(2,),
                            match=True, match_steps=20)
    fig = comparison_figure(m)
    assert len(fig.axes) == 3 and len(fig.axes[2].patches) == 2
    with pytest.raises(ValueError, match="max_offset must be at least 10"):
        bias_shapes(max_offset=3)
    with pytest.raises(ValueError, match="heads must be 1 to 10 PositionHead"):
        learned_profiles([])
    with pytest.raises(ValueError, match="comparison must be a ropegeo.toy.alternatives.Comparison"):
        comparison_figure({})


def test_rope_row_agrees_with_gate_c_readings():
    """The rope head's local displacement is Gate C's score profile difference s(k + 1) - s(k)."""
    from ropegeo.toy import score_profile, train_offset_head
    from ropegeo.toy.interventions import global_shift, local_displacement

    h = sh.train_position_head("rope", 5, train_length=64, seed=2)
    gate = train_offset_head(5, head_dim=16, train_length=64, seed=2)
    s5, s6 = score_profile(gate, [5.0, 6.0])
    assert local_displacement(h, 64, 5).score_change == pytest.approx(s6 - s5, rel=1e-9, abs=1e-9)
    assert global_shift(h, 64, 12_345).weight_change < 1e-9


# ---- most-recent match (content and position) -----------------------------------------------------

from ropegeo.toy.interventions import TokenHead, match_task  # noqa: E402

TOK = np.random.default_rng(7).integers(0, 4, size=(3, L))


def match_layer_loss(head):
    return sh.match_loss(head, TOK)


def _table_head(scheme_obj, V=4, d=4, seed=0):
    rng = np.random.default_rng(seed)
    layer = AttentionLayer(V, d, scheme=scheme_obj, seed=0)
    layer.Wq, layer.Wk = rng.normal(size=(2, V, d))
    return TokenHead(layer, np.eye(V))


@pytest.mark.parametrize("kind", ["none", "alibi", "t5", "relative"])
def test_match_table_gradients(kind):
    from ropegeo.toy.schemes import ALiBi

    pos = np.arange(L)
    if kind == "none":
        head, kw = _table_head("none"), {}
    elif kind == "alibi":
        head = _table_head(ALiBi(slope=0.3))
        kw = {"bias": -0.3 * np.abs(pos[:, None] - pos[None, :]).astype(float)}
    elif kind == "t5":
        b = np.random.default_rng(1).normal(size=16)
        head = _table_head(T5Bias(num_buckets=16, max_distance=20, bidirectional=False, table=b))
        kw = {"bias": (head.layer.scheme.table, t5_bucket(pos[None, :] - pos[:, None], bidirectional=False,
                                                          num_buckets=16, max_distance=20).ravel())}
    else:
        a = np.random.default_rng(2).normal(size=(7, 4))
        head = _table_head(RelativePositions(max_distance=3, key_table=a, value_table=a, values=False))
        kw = {"rel": (head.layer.scheme.key_table, np.clip(pos[None, :] - pos[:, None], -3, 3) + 3)}
    loss, dQt, dKt, dtab, da = sh._fb_match_table(head.layer.Wq, head.layer.Wk, TOK, **kw)
    assert loss == pytest.approx(match_layer_loss(head), rel=1e-12)
    np.testing.assert_allclose(dQt, fd(lambda: match_layer_loss(head), head.layer.Wq), atol=1e-6)
    np.testing.assert_allclose(dKt, fd(lambda: match_layer_loss(head), head.layer.Wk), atol=1e-6)
    if kind == "t5":
        np.testing.assert_allclose(dtab, fd(lambda: match_layer_loss(head), head.layer.scheme.table), atol=1e-6)
    if kind == "relative":
        np.testing.assert_allclose(da, fd(lambda: match_layer_loss(head), head.layer.scheme.key_table), atol=1e-6)


@pytest.mark.parametrize("kind", ["absolute", "sinusoidal"])
def test_match_projection_gradients(kind):
    rng = np.random.default_rng(3)
    d = 4
    E = rng.normal(size=(4, d))
    T = rng.normal(size=(L + 2, d)) if kind == "absolute" else sinusoidal_encoding(np.arange(L), d)
    layer = AttentionLayer(d, scheme=AbsolutePositions(table=T) if kind == "absolute" else "sinusoidal", seed=0)
    layer.Wq, layer.Wk = rng.normal(size=(2, d, d))
    head = TokenHead(layer, E)
    loss, dE, dP, dWq, dWk = sh._fb_match_projection(E, T[:L], layer.Wq, layer.Wk, TOK)
    assert loss == pytest.approx(match_layer_loss(head), rel=1e-12)
    np.testing.assert_allclose(dE, fd(lambda: match_layer_loss(head), head.embedding), atol=1e-6)
    np.testing.assert_allclose(dWq, fd(lambda: match_layer_loss(head), layer.Wq), atol=1e-6)
    np.testing.assert_allclose(dWk, fd(lambda: match_layer_loss(head), layer.Wk), atol=1e-6)
    if kind == "absolute":
        np.testing.assert_allclose(dP, fd(lambda: match_layer_loss(head), layer.scheme.table)[:L], atol=1e-6)


def test_rope_match_head_is_gate_c_inside_the_layer():
    from ropegeo.toy import match_head_loss

    h = sh.train_scheme_match_head("rope", vocab=4, train_length=L, head_dim=8, steps=20, batch=4, seed=5)
    want, _, _ = match_head_loss(h.layer.Wq / math.sqrt(8), h.layer.Wk, TOK, h.layer.scheme.options["theta"])
    assert sh.match_loss(h, TOK) == pytest.approx(want, rel=1e-10)


def test_match_closed_forms_nope_ceiling_and_alibi_recency():
    from ropegeo.toy import match_targets

    # ideal content: a token matches only itself, with a large margin
    big = 40.0 * np.eye(8)
    nope = TokenHead(AttentionLayer(8, 8, scheme="none", seed=0), np.eye(8))
    nope.layer.Wq, nope.layer.Wk = big, np.eye(8)
    r = match_task(nope, 64, sequences=8, seed=12345)
    # brute force on the same sequences: NoPE wins only when exactly one earlier occurrence exists
    tok = np.random.default_rng(12345).integers(0, 8, size=(8, 64))
    tgt = match_targets(tok)
    once = [sum(1 for n in range(m) if tok[b, n] == tok[b, m]) == 1 for b in range(8) for m in range(64) if tgt[b, m] >= 0]
    assert r.accuracy == pytest.approx(np.mean(once), abs=1e-12)
    alibi = TokenHead(AttentionLayer(8, 8, scheme="alibi", head=7, seed=0), np.eye(8))
    alibi.layer.Wq, alibi.layer.Wk = big, np.eye(8)
    assert match_task(alibi, 512, sequences=4).accuracy == 1.0  # recency breaks every tie toward the latest


@pytest.mark.parametrize("scheme", sh.SCHEMES)
def test_match_heads_train_for_every_scheme(scheme):
    h = sh.train_scheme_match_head(scheme, steps=150, batch=8, seed=0)
    assert h.losses[-1] < 0.6 * h.losses[0]
    again = sh.train_scheme_match_head(scheme, steps=150, batch=8, seed=0)
    np.testing.assert_array_equal(h.losses, again.losses)
    assert match_task(h, 64).accuracy > (0.05 if scheme == "none" else 0.8)


def test_match_validation():
    with pytest.raises(ValueError, match="scheme must be one of"):
        sh.train_scheme_match_head("xl")
    with pytest.raises(ValueError, match="vocab must be at most 64"):
        sh.train_scheme_match_head("none", vocab=100)
    with pytest.raises(ValueError, match="head must be a TokenHead"):
        match_task("rope", 10)
    with pytest.raises(ValueError, match="embedding must have shape"):
        TokenHead(AttentionLayer(4, scheme="none"), np.eye(3))
    h = _table_head("none")
    with pytest.raises(ValueError, match="tokens must lie in"):
        h.scores(np.full((1, 5), 9))
    with pytest.raises(ValueError, match="match must be True or False"):
        alt.compare_schemes(("none",), match="yes")


# ---- closed-form limits -------------------------------------------------------------------------


def brute_clipped_ceiling(length, distance, clip):
    """Per query: count the earlier keys whose clipped displacement equals the target's."""
    best = []
    for m in range(distance, length):
        row = lambda n: max(n - m, -clip)  # noqa: E731  (keys are earlier: n - m < 0)
        sharing = sum(1 for n in range(m) if row(n) == row(m - distance))
        best.append(1.0 / sharing)
    return sum(best) / len(best)


@pytest.mark.parametrize("length,distance,clip", [(512, 40, 16), (64, 40, 16), (30, 4, 4), (30, 3, 4),
                                                  (41, 40, 16), (100, 1, 1), (20, 7, 30)])
def test_clipped_retrieval_ceiling_matches_a_brute_force_count(length, distance, clip):
    assert alt.clipped_retrieval_ceiling(length, distance, clip=clip) == pytest.approx(
        brute_clipped_ceiling(length, distance, clip), rel=1e-12)


def test_clipped_retrieval_ceiling_bounds_a_trained_relative_head():
    head = sh.train_position_head("relative", 6, train_length=L + 4, head_dim=8, steps=150, seed=0, max_distance=4)
    for n in (L + 4, 3 * L):
        ceiling = alt.clipped_retrieval_ceiling(n, 6, clip=4)
        assert ceiling < 1
        assert sparse_retrieval(head, n, 6).mass <= ceiling + 1e-12


def brute_rows_share(length, train_length, offset):
    scored = range(offset, length)
    covered = [m for m in scored if all(p < train_length for p in [m, *range(m)])]
    return len(covered) / len(scored)


@pytest.mark.parametrize("length,train_length,offset", [(512, 64, 5), (64, 64, 5), (40, 64, 5), (7, 3, 2), (100, 99, 1)])
def test_trained_rows_share_matches_a_brute_force_count(length, train_length, offset):
    assert alt.trained_rows_share(length, train_length, offset) == pytest.approx(
        brute_rows_share(length, train_length, offset), rel=1e-15)


@pytest.mark.parametrize("call,name", [
    (lambda: alt.clipped_retrieval_ceiling(40, 40), "length"),
    (lambda: alt.clipped_retrieval_ceiling(512, 0), "distance"),
    (lambda: alt.clipped_retrieval_ceiling(512, 40, clip=0), "clip"),
    (lambda: alt.clipped_retrieval_ceiling(512, 4.5), "distance"),
    (lambda: alt.clipped_retrieval_ceiling(1 << 25, 40), "length"),
    (lambda: alt.trained_rows_share(5, 64, 5), "length"),
    (lambda: alt.trained_rows_share(512, 5, 5), "train_length"),
    (lambda: alt.trained_rows_share(512, 64, 0), "offset"),
    (lambda: alt.trained_rows_share(512, True, 5), "train_length"),
    (lambda: alt.far_rival(sh.fixed_head("none"), 3, 2), "length"),
    (lambda: alt.far_rival(sh.fixed_head("none"), 64, 64), "train_length"),
    (lambda: alt.far_rival(sh.fixed_head("none"), 64, 1), "train_length"),
    (lambda: alt.far_rival(sh.fixed_head("none"), 64.5, 8), "length"),
])
def test_closed_forms_name_the_bad_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        call()


# ---- bounds: counts, sizes, work, and divergence -------------------------------------------------


@pytest.mark.parametrize("call,name", [
    (lambda: alt.compare_schemes(("none",), seeds=5), "seeds"),
    (lambda: alt.compare_schemes(("none",), seeds=None), "seeds"),
    (lambda: alt.compare_schemes(("none",), seeds=range(10**6)), "seeds"),
    (lambda: alt.compare_schemes(("none",), factors=5), "factors"),
    (lambda: alt.compare_schemes(("none",), factors=tuple(range(1, 20))), "factors"),
    (lambda: alt.compare_schemes(("none",), train_length=128, factors=(64,)), "factors"),
    (lambda: alt.compare_schemes(5), "schemes"),
    (lambda: alt.compare_schemes("rope"), "schemes"),
    (lambda: alt.compare_schemes(("rope", "rope")), "schemes"),
    (lambda: sh.train_position_head("absolute", head_dim=256, rows=65_536), "rows"),
    (lambda: sh.train_position_head("relative", head_dim=512), "head_dim must be at most 256"),
    (lambda: sh.train_position_head("t5", lr=1e300), "lr"),
    (lambda: sh.train_position_head("sinusoidal", init_std=1e300), "init_std"),
    (lambda: sh.train_scheme_match_head("none", train_length=1024, batch=512), "batch"),
    (lambda: sh.train_scheme_match_head("absolute", steps=100_001), "steps"),
    (lambda: alt.compare_schemes(("absolute",), train_length=1024, factors=(2,), steps=100_001), "steps"),
    (lambda: sh.train_scheme_match_head("alibi", vocab=65), "vocab"),
    (lambda: alt.clipped_retrieval_ceiling(10**30, 10**29), "distance"),
    (lambda: alt.clipped_retrieval_ceiling(512, 40, clip=10**400), "clip"),
    (lambda: alt.trained_rows_share(100, 10**400, 5), "train_length"),
    (lambda: alt.trained_rows_share(100, 64, 10**30), "offset"),
    (lambda: sh.match_loss("head", [[0, 1]]), "head"),
])
def test_bounds_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_match_loss_refuses_oversized_token_batches():
    head = sh.train_scheme_match_head("none", steps=1)
    with pytest.raises(ValueError, match="tokens of shape \\(200, 1024\\)"):
        sh.match_loss(head, np.zeros((200, 1024), dtype=int))


@pytest.mark.parametrize("scheme", sh.SCHEMES)
def test_divergence_is_reported_for_every_scheme(monkeypatch, scheme):
    """With the learning-rate bound lifted, the parameters blow up: the trainers must say so, naming lr."""
    from ropegeo import toy as behaviour

    monkeypatch.setattr(behaviour.training, "MAX_LR", 1e300)
    with np.errstate(all="ignore"):
        with pytest.raises(ValueError, match="diverged.*lower lr"):
            sh.train_scheme_match_head(scheme, train_length=16, head_dim=8, steps=5, lr=1e300)
        if scheme in ("absolute", "sinusoidal", "relative", "rope"):  # products of learned vectors overflow
            with pytest.raises(ValueError, match="diverged.*lower lr"):
                sh.train_position_head(scheme, train_length=16, head_dim=8, steps=5, lr=1e300)
        elif scheme == "t5":  # the score is one learned bias: huge, but finite, and so is the head
            h = sh.train_position_head(scheme, train_length=16, head_dim=8, steps=5, lr=1e300)
            assert np.all(np.isfinite(h.layer.scheme.table)) and np.all(np.isfinite(h.losses))


def test_learned_profiles_takes_one_head_or_a_list():
    from matplotlib.figure import Figure

    from ropegeo.book.plots.alternatives import bias_shapes, learned_profiles

    h = sh.fixed_head("none")
    assert isinstance(learned_profiles(h, length=32), Figure)
    for call, name in [(lambda: learned_profiles(5), "heads"), (lambda: learned_profiles([h] * 11), "heads"),
                       (lambda: learned_profiles(h, target="x"), "target"),
                       (lambda: bias_shapes(head_dim=65_536), "head_dim"),
                       (lambda: bias_shapes(theta=np.ones(600)), "theta")]:
        with pytest.raises(ValueError, match=name):
            call()


def test_budgets_accept_the_book_runs():
    """The chapter's comparison (defaults, match=True, three seeds) passes every bound unchanged."""
    alt._check_trainers(sh.SCHEMES, 64, 16, 1000, True, 300, 16, {})
    alt.check_position_memory("absolute", 1024, 256, 8192)  # the largest documented example fits in memory
    with pytest.raises(ValueError, match="MAX_STEP_BYTES"):
        alt.check_match_memory("absolute", 1024, 512, 8, 256, 8192)


def test_far_rival_labelled_controls():
    """Uniform attention prefers the farthest key (ties go to it); ALiBi's recency the nearest beyond the window."""
    assert alt.far_rival(sh.fixed_head("none"), 512, 64) == 511
    assert alt.far_rival(sh.fixed_head("alibi"), 512, 64) == 64
    assert alt.far_rival(sh.fixed_head("alibi"), 100, 99) == 99  # one key beyond the window: that key
