"""Bounds of Gate C (ropegeo.toy and its figures): every oversized or ill-typed request is a
ValueError naming the parameter, before any large allocation or long loop; and the chunked code
paths that keep memory bounded agree with direct computations.

References here are independent of the code under test: full softmax matrices built from
``apply_rope``, a plain Python argmax over a whole displacement range.
"""

import numpy as np
import pytest

from ropegeo import scaling
from ropegeo import toy as B
from ropegeo.gates import c as gates_c
from ropegeo.rotation import apply_rope


@pytest.fixture(scope="module")
def head():
    return B.train_offset_head(steps=30)


@pytest.fixture(scope="module")
def match_head():
    return B.train_match_head(steps=20)


# ----------------------------------------------------------------------------- unbounded work


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda h, m: B.train_offset_head(train_length=10**9), "train_length"),
        (lambda h, m: B.train_offset_head(head_dim=1024), "head_dim"),
        (lambda h, m: B.offset_head_loss(np.ones(600), np.ones(600), np.ones(300), offset=1, length=5), "operator"),
        (lambda h, m: B.train_offset_head(steps=100_001), "steps"),
        (lambda h, m: B.train_match_head(vocab=10**9), "vocab"),
        (lambda h, m: B.train_match_head(batch=10**9), "batch"),
        (lambda h, m: B.train_match_head(train_length=10**7), "train_length"),
        (lambda h, m: B.train_match_head(train_length=1024, batch=512), "batch"),  # 4 GiB of scores per step
        (lambda h, m: B.train_match_head(steps=100_001), "steps"),
        (lambda h, m: B.fine_tune(h, factor=1e7), "factor"),
        (lambda h, m: B.fine_tune(h, factor=100), "factor"),  # 6,400 > the longest offset-head length
        (lambda h, m: B.fine_tune(m, length=10**6), "length"),
        (lambda h, m: B.fine_tune(m, factor=16, batch=64), "batch"),
        (lambda h, m: B.fine_tune(h, extension="pi", factor=2, lr=1e300), "lr"),
        (lambda h, m: B.evaluate(m, 4096, sequences=10**6), "sequences"),
        (lambda h, m: B.evaluate(h, 64).by_position(bins=10**10), "bins"),
        (lambda h, m: B.evaluate(h, 64).by_displacement(bins=np.arange(20_002.0)), "bins"),
        (lambda h, m: B.distant_rival(h, 10**10), "length"),
        (lambda h, m: B.offset_head_loss(h.q, h.k, h.theta, offset=5, length=10**9), "length"),
        (lambda h, m: B.match_head_loss(m.q_table, m.k_table, np.zeros((1000, 1000), int), m.theta), "tokens"),
        (lambda h, m: B.score_profile(h, np.broadcast_to(0.0, (5_000_000,))), "deltas"),
        (lambda h, m: gates_c.gate_c(h.theta, train_length=10**7), "train_length"),
        (lambda h, m: gates_c.gate_c(h.theta, target_length=10**6), "target_length"),
        (lambda h, m: gates_c.gate_c(h.theta, seeds=range(10**5)), "seeds"),
        (lambda h, m: gates_c.gate_c(h.theta, match_steps=100_001), "match_steps"),
        (lambda h, m: gates_c.gate_c(np.ones(256), train_length=1024, target_length=2048), "MAX_STEP_BYTES"),
        (lambda h, m: B.train_heads("offset", range(10**6)), "seeds"),
        (lambda h, m: B.train_heads("offset", range(10**12)), "seeds"),
        (lambda h, m: B.compare([h], range(2, 100)), "lengths"),
        (lambda h, m: B.compare([h], [64], extensions=["raw"] * 20), "extensions"),
        (lambda h, m: B.evaluate_seeds([h] * 101, 64), "heads"),
    ],
)
def test_oversized_requests_name_the_parameter(head, match_head, call, name):
    with pytest.raises(ValueError, match=name):
        call(head, match_head)


def test_every_bound_is_a_documented_module_constant():
    for const in ("MAX_HEAD_LENGTH", "MAX_MATCH_LENGTH", "MAX_TRAINED_HEAD_DIM", "MAX_VOCAB", "MAX_BATCH",
                  "MAX_SEQUENCES", "MAX_SEEDS", "MAX_CONDITIONS", "MAX_BINS", "MAX_PROFILE_LENGTH",
                  "MAX_PROFILE_CELLS", "MAX_LR", "MAX_INIT_STD", "MAX_STEP_BYTES", "MAX_STEPS"):
        assert isinstance(getattr(B, const), (int, float))
    import inspect

    lines = "\n".join(inspect.getsource(m) for m in (B.training, B.evaluation, B.readouts)).splitlines()
    for const in ("MAX_HEAD_LENGTH", "MAX_MATCH_LENGTH", "MAX_SEEDS", "MAX_BINS", "MAX_STEP_BYTES"):
        i = next(k for k, line in enumerate(lines) if line.startswith(f"{const} ="))
        assert lines[i - 1].startswith("#:"), const  # documented where it is defined


# ----------------------------------------------------------------------------- wrong types


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda h: B.train_heads("offset", 5), "seeds"),
        (lambda h: B.train_heads("offset", None), "seeds"),
        (lambda h: B.train_heads("offset", "012"), "seeds"),
        (lambda h: B.train_heads("offset", []), "seeds"),
        (lambda h: gates_c.gate_c(h.theta, seeds=5), "seeds"),
        (lambda h: B.evaluate_seeds(h, 64), "heads"),
        (lambda h: B.evaluate_seeds(5, 64), "heads"),
        (lambda h: B.compare([h], 5), "lengths"),
        (lambda h: B.score_profile(h, [1.0], per_pair="yes"), "per_pair"),
    ],
)
def test_an_int_where_a_list_belongs(head, call, name):
    with pytest.raises(ValueError, match=name):
        call(head)


def test_huge_lengths_are_value_errors_not_overflow(head):
    with pytest.raises(ValueError, match="^length must be at most"):
        scaling.extension_schedule("dynamic", head_dim=16, base=1e4, train_length=64, length=10**300)
    with pytest.raises(ValueError, match="^train_length must be at most"):
        scaling.extension_schedule("ntk", head_dim=16, base=1e4, train_length=10**300, length=64)
    with pytest.raises(ValueError, match="train_length"):  # the default factor length / train_length
        scaling.extension_schedule("pi", head_dim=16, base=1e4, train_length=2, length=2**40)
    with pytest.raises(ValueError, match="^factor must be at most"):
        scaling.extension_schedule("pi", head_dim=16, base=1e4, train_length=64, length=128, factor=1e300)
    with pytest.raises(ValueError, match="^train_length must be at most"):
        B.pair_profiles(head, train_length=10**400)
    # the largest allowed values still work
    assert B.pair_profiles(head, train_length=2**48)[0].pair == 0
    assert scaling.extension_schedule("dynamic", head_dim=16, base=1e4, train_length=64, length=2**40,
                                      factor=1).rule == "dynamic"
    with pytest.raises(ValueError, match="length / train_length must be at most"):  # the default factor 2**34
        scaling.extension_schedule("dynamic", head_dim=16, base=1e4, train_length=64, length=2**40)


# ----------------------------------------------------------------------------- silent wrong answers


@pytest.mark.parametrize("kwargs,name", [(dict(lr=1e300), "lr"), (dict(init_std=1e300), "init_std"),
                                         (dict(lr=11.0), "lr"), (dict(init_std=0.0), "init_std")])
def test_learning_rate_and_init_are_bounded(kwargs, name):
    for train in (B.train_offset_head, B.train_match_head):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            train(steps=5, **kwargs)


def test_divergence_is_reported_not_returned(monkeypatch, head, match_head):
    """With the bound lifted, a huge learning rate makes NaN parameters: the trainers must refuse them."""
    monkeypatch.setattr(B.training, "MAX_LR", 1e300)
    for call in (lambda: B.train_offset_head(lr=1e300, steps=5),
                 lambda: B.train_match_head(lr=1e300, steps=5),
                 lambda: B.fine_tune(head, extension="pi", factor=2, lr=1e300, steps=5),
                 lambda: B.fine_tune(match_head, extension="pi", factor=2, lr=1e300, steps=3)):
        with np.errstate(all="ignore"), pytest.raises(ValueError, match=r"diverged.*lower lr"):
            call()
    with pytest.raises(ValueError, match="init_std"):
        B.check_trained([np.array([1.0, np.inf])], np.zeros(3), 0.05, 0.3)
    with pytest.raises(ValueError, match="lr"):
        B.check_trained([np.ones(2)], np.array([1.0, np.nan]), 0.05)
    B.check_trained([np.ones(2)], np.ones(3), 0.05, 0.3)  # finite: no error


def test_low_precision_overflow_names_the_dtype(head):
    with pytest.raises(ValueError, match="phase_dtype='float16'"):
        B.evaluate(head, 64, shift=1e6, phase_dtype="float16")
    with pytest.raises(ValueError, match="position_dtype='float16' overflows.*65504"):
        B.evaluate(head, 64, position_dtype="float16", shift=1e5)
    with pytest.raises(ValueError, match="shift"):
        B.evaluate(head, 64, shift=1.7e308, query_offset=1.7e308)
    # just inside the range: float16 holds 65,504
    e = B.evaluate(head, 64, position_dtype="float16", shift=65_000.0)
    assert np.all(np.isfinite(e.target_mass))


# ----------------------------------------------------------------------------- the documented limits


def test_step_memory_accepts_the_book_runs_and_refuses_the_documented_edge():
    # every default training of the book fits in one step's memory
    B.check_match_step(64, 32, 8, 16)
    B.check_match_step(512, 4, 8, 16, length_name="length")
    # 512 MiB: at train_length 1024 (head_dim 16, vocab 8) batch 39 fits, 40 does not
    need = [B.match_step_bytes(1024, b, 8, 16) for b in (39, 40)]
    assert need[0] <= B.MAX_STEP_BYTES < need[1]
    B.check_match_step(1024, 39, 8, 16)
    with pytest.raises(ValueError, match="batch"):
        B.check_match_step(1024, 40, 8, 16)


def test_evaluate_runs_at_the_longest_length(head):
    e = B.evaluate(head, B.MAX_HEAD_LENGTH)
    assert e.length == 4096 and e.query_position.size == 4096 - head.offset


# ----------------------------------------------------------------------------- chunked paths agree


def _brute_weights(qs, ks):
    """Full softmax over strictly earlier keys for one sequence (independent of evaluate)."""
    L = qs.shape[0]
    s = qs @ ks.T
    s = np.where(np.tri(L, L, -1, dtype=bool), s, -np.inf)
    w = np.zeros_like(s)
    w[1:] = np.exp(s[1:] - s[1:].max(axis=1, keepdims=True))
    w[1:] /= w[1:].sum(axis=1, keepdims=True)
    return w


def test_attention_by_displacement_matches_a_full_softmax(head):
    n = 150
    e = B.evaluate(head, n)
    pos = np.arange(n)
    w = _brute_weights(apply_rope(np.tile(head.q, (n, 1)), pos, theta=head.theta),
                       apply_rope(np.tile(head.k, (n, 1)), pos, theta=head.theta))
    queries = np.arange(head.offset, n)  # the queries with a target
    want = np.full(n, np.nan)
    for delta in range(1, n):
        seen = queries[queries >= delta]
        if seen.size:
            want[delta] = np.mean(w[seen, seen - delta])
    np.testing.assert_allclose(e.attention_by_displacement, want, rtol=1e-12, atol=1e-15, equal_nan=True)
    np.testing.assert_allclose(e.target_mass, w[queries, queries - head.offset], rtol=1e-12, atol=1e-15)


def test_match_evaluation_in_several_chunks_matches_a_full_softmax(match_head):
    n, seqs = 1024, 6  # four sequences per chunk at this length: two chunks, the second partial
    e = B.evaluate(match_head, n, sequences=seqs, seed=7)
    tok = np.random.default_rng(7).integers(0, match_head.vocab, size=(seqs, n))
    pos = np.arange(n)
    masses, winners, best, at_winner = [], [], [], []
    for row in tok:
        w = _brute_weights(apply_rope(match_head.q_table[row], pos, theta=match_head.theta),
                           apply_rope(match_head.k_table[row], pos, theta=match_head.theta))
        for m in range(n):
            earlier = [j for j in range(m) if row[j] == row[m]]
            if earlier:
                masses.append(w[m, earlier[-1]])
                winners.append(int(np.argmax(w[m, :m])))
                best.append(w[m, :m].max())
                at_winner.append(w[m, e.winner_position[len(winners) - 1]])
    np.testing.assert_allclose(e.target_mass, masses, rtol=1e-9, atol=1e-15)
    # the winner is the brute-force argmax, except at a near-tie within the rounding the two paths
    # carry (the rtol above), where the other key wins by as much
    same = e.winner_position == np.array(winners)
    assert np.all(same | (np.array(at_winner) >= np.array(best) * (1 - 1e-9)))


def test_distant_rival_searches_block_by_block_like_one_argmax(head):
    n = 100_000  # several blocks of displacements
    r = B.distant_rival(head, n)
    deltas = np.arange(head.train_length, n)
    a, b = head.coefficients()
    ang = deltas[:, None] * head.theta
    total = (a * np.cos(ang) + b * np.sin(ang)).sum(axis=1)
    i = int(np.argmax(total))
    assert r.rival == deltas[i]
    assert r.rival_score == pytest.approx(total[i], rel=1e-12)
    assert r.wins == (total[i] > r.target_score)


def test_score_profile_blocks_and_shapes(head):
    d = np.arange(-300_000.0, 300_000.0, 1.5).reshape(2, -1)  # several blocks
    a, b = head.coefficients()
    ang = d[..., None] * head.theta
    parts = a * np.cos(ang) + b * np.sin(ang)
    np.testing.assert_allclose(B.score_profile(head, d), parts.sum(-1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(B.score_profile(head, d[:, :7], per_pair=True), parts[:, :7], rtol=1e-12, atol=1e-12)
    one = B.score_profile(head, 5)
    assert np.ndim(one) == 0
    assert one == pytest.approx((a * np.cos(5 * head.theta) + b * np.sin(5 * head.theta)).sum(), rel=1e-12)


# ----------------------------------------------------------------------------- figures


def test_figure_bounds(head):
    from ropegeo.book.plots import behaviour as P

    ev = B.evaluate(head, 64)
    wide = B.train_offset_head(head_dim=512, steps=1)
    for call, name in [
        (lambda: P.score_profile_figure(head, 10**9), "horizon"),
        (lambda: P.score_profile_figure(wide, 500_000), "horizon"),  # 256 pairs: at most 131,072
        (lambda: P.score_profile_figure(5, 64), "heads"),
        (lambda: P.score_profile_figure([head] * 101, 64), "heads"),
        (lambda: P.accuracy_mass_by_position(ev, bins=10**10), "bins"),
        (lambda: P.accuracy_mass_by_displacement(ev, bins=10**10), "bins"),
        (lambda: P.accuracy_mass_by_position(ev, bins=np.arange(20_002.0)), "bins"),
        (lambda: P.accuracy_mass_by_position({"a": 5}), "evaluations"),
        (lambda: P.attention_by_displacement(ev, max_displacement=10**400), "max_displacement"),
        (lambda: P.seed_table(5), "results"),
    ]:
        with pytest.raises(ValueError, match=name):
            call()
    assert P.accuracy_mass_by_position(ev, bins=np.int64(4)).axes  # a numpy integer is a count too
    assert P.seed_table(B.evaluate_seeds([head], 64)).axes  # one SeedResults is one row
