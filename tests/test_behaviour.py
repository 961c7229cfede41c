"""Gate C: hand-derived gradients, determinism, and every behavioural effect the chapters show.

Effects that depend on the seed are asserted as counts over ten seeds with wide margins.
Reference values come from independent computations (full score matrices built with
``apply_rope``, Python loops, closed forms), never from the code under test.
"""

import inspect
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ropegeo import scaling
from ropegeo import toy as B
from ropegeo.gates import c as gates_c
from ropegeo.frequencies import frequencies
from ropegeo.rotation import apply_rope

L, TARGET, OFFSET = 64, 512, 5


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def offset_heads():
    return B.train_heads("offset", range(10))


@pytest.fixture(scope="module")
def offset_heads_d8():
    return B.train_heads("offset", range(10), head_dim=8)


@pytest.fixture(scope="module")
def match_heads():
    return B.train_heads("match", range(3), steps=300)


# ----------------------------------------------------------------------------- references


def _brute_offset_loss(q, k, theta, offset, length, scale=1.0):
    """Cross-entropy from the full score matrix of rotated queries and keys (no running sums)."""
    pos = np.arange(length)
    qr = apply_rope(np.tile(q, (length, 1)), pos, theta=theta, scale=scale)
    kr = apply_rope(np.tile(k, (length, 1)), pos, theta=theta, scale=scale)
    s = qr @ kr.T
    total = 0.0
    for m in range(offset, length):
        row = s[m, :m]
        total += np.log(np.exp(row - row.max()).sum()) + row.max() - s[m, m - offset]
    return total / (length - offset)


def _brute_match_loss(qt, kt, tok, theta, scale=1.0):
    total, count = 0.0, 0
    for seq in tok:
        pos = np.arange(seq.size)
        qr = apply_rope(qt[seq], pos, theta=theta, scale=scale)
        kr = apply_rope(kt[seq], pos, theta=theta, scale=scale)
        for m in range(seq.size):
            earlier = [n for n in range(m) if seq[n] == seq[m]]
            if not earlier:
                continue
            row = kr[:m] @ qr[m]
            total += np.log(np.exp(row - row.max()).sum()) + row.max() - row[earlier[-1]]
            count += 1
    return total / count


def _finite_difference(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        up = f()
        x[idx] = old - eps
        down = f()
        x[idx] = old
        g[idx] = (up - down) / (2 * eps)
    return g


# ----------------------------------------------------------------------------- losses and gradients


def _op(theta, scale):
    """The operator of a bank read with a position scale."""
    from ropegeo import RotaryOperator

    return RotaryOperator(head_dim=2 * len(theta), theta=theta, scale=scale)


@pytest.mark.parametrize("length,offset,scale,d", [(24, 5, 1.0, 8), (40, 3, 0.25, 16), (9, 8, 1.0, 4)])
def test_offset_loss_matches_full_matrix_and_finite_differences(length, offset, scale, d):
    rng = np.random.default_rng(length)
    theta = frequencies(d)
    q, k = rng.normal(scale=1.5, size=(2, d))
    loss, dq, dk = B.offset_head_loss(q, k, _op(theta, scale), offset=offset, length=length)
    assert loss == pytest.approx(_brute_offset_loss(q, k, theta, offset, length, scale), rel=1e-10, abs=1e-12)
    f = lambda: B.offset_head_loss(q, k, _op(theta, scale), offset=offset, length=length)[0]  # noqa: E731
    np.testing.assert_allclose(dq, _finite_difference(f, q), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dk, _finite_difference(f, k), rtol=1e-5, atol=1e-7)


def test_offset_loss_gradient_with_large_logits():
    # saturated scores exercise the log-space running sums
    rng = np.random.default_rng(3)
    theta = frequencies(8)
    q, k = rng.normal(scale=6.0, size=(2, 8))
    loss, dq, dk = B.offset_head_loss(q, k, theta, offset=5, length=30)
    assert np.isfinite(loss) and loss == pytest.approx(_brute_offset_loss(q, k, theta, 5, 30), rel=1e-9)
    f = lambda: B.offset_head_loss(q, k, theta, offset=5, length=30)[0]  # noqa: E731
    np.testing.assert_allclose(dq, _finite_difference(f, q, 1e-7), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_match_loss_matches_loops_and_finite_differences(scale):
    rng = np.random.default_rng(11)
    theta = frequencies(8)
    qt, kt = rng.normal(size=(2, 4, 8))
    tok = rng.integers(0, 4, size=(3, 12))
    loss, dq, dk = B.match_head_loss(qt, kt, tok, _op(theta, scale))
    assert loss == pytest.approx(_brute_match_loss(qt, kt, tok, theta, scale), rel=1e-10)
    f = lambda: B.match_head_loss(qt, kt, tok, _op(theta, scale))[0]  # noqa: E731
    np.testing.assert_allclose(dq, _finite_difference(f, qt), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dk, _finite_difference(f, kt), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("spread", [math.inf, 0.0])
def test_match_loss_in_chunks_by_table_and_by_rows(spread, monkeypatch):
    # the step reads its scores from a table of distances back, one sequence per chunk here; with
    # spread 0 every row is shifted by its own maximum instead of the table's exponentials
    from ropegeo.toy import heads

    monkeypatch.setattr(heads, "_CHUNK_SCORES", 100)  # 66 query-key pairs per sequence of 12
    monkeypatch.setattr(heads, "_TABLE_SPREAD", spread)
    rng = np.random.default_rng(12)
    theta = frequencies(8)
    qt, kt = rng.normal(size=(2, 4, 8))
    tok = rng.integers(0, 4, size=(5, 12))
    loss, dq, dk = B.match_head_loss(qt, kt, tok, _op(theta, 0.75))
    assert loss == pytest.approx(_brute_match_loss(qt, kt, tok, theta, 0.75), rel=1e-10)
    f = lambda: B.match_head_loss(qt, kt, tok, _op(theta, 0.75))[0]  # noqa: E731
    np.testing.assert_allclose(dq, _finite_difference(f, qt), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dk, _finite_difference(f, kt), rtol=1e-5, atol=1e-7)


def test_match_loss_with_scores_wider_than_the_table_spread():
    # logits spanning thousands of nats take the row-by-row softmax; no underflow, no NaN
    rng = np.random.default_rng(5)
    theta = frequencies(8)
    qt, kt = rng.normal(scale=12.0, size=(2, 4, 8))
    tok = rng.integers(0, 4, size=(4, 16))
    loss, dq, dk = B.match_head_loss(qt, kt, tok, theta)
    assert np.isfinite(loss) and loss == pytest.approx(_brute_match_loss(qt, kt, tok, theta, 1.0), rel=1e-9)
    assert np.isfinite(dq).all() and np.isfinite(dk).all()


def test_match_loss_gain_is_scaled_tables():
    # the squared attention factor g multiplies every logit: the loss of tables scaled by sqrt(g),
    # and its gradient times sqrt(g)
    from ropegeo.toy import heads

    rng = np.random.default_rng(8)
    theta = frequencies(16)
    qt, kt = rng.normal(size=(2, 6, 16))
    tok = rng.integers(0, 6, size=(7, 40))
    g = 1.7
    loss, dq, dk = heads._match_loss(qt, kt, tok, heads._rotations(40, theta, 0.5), g)
    from ropegeo import RotaryOperator

    by_operator = RotaryOperator(head_dim=16, theta=theta, scale=0.5, attention_factor=math.sqrt(g))
    np.testing.assert_allclose(B.match_head_loss(qt, kt, tok, by_operator)[0], loss, rtol=1e-12)
    ref, rq, rk = B.match_head_loss(qt * math.sqrt(g), kt * math.sqrt(g), tok, _op(theta, 0.5))
    assert loss == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(dq, math.sqrt(g) * rq, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(dk, math.sqrt(g) * rk, rtol=1e-10, atol=1e-14)


@given(st.integers(1, 6), st.integers(1, 40), st.integers(2, 5), st.integers(0, 10_000))
def test_match_targets_against_loop(batch, seq, vocab, seed):
    tok = np.random.default_rng(seed).integers(0, vocab, size=(batch, seq))
    expected = np.full(tok.shape, -1)
    for b in range(batch):
        for m in range(seq):
            for n in range(m - 1, -1, -1):
                if tok[b, n] == tok[b, m]:
                    expected[b, m] = n
                    break
    np.testing.assert_array_equal(B.match_targets(tok), expected)


def test_score_profile_is_the_rotated_dot_product(offset_heads):
    h = offset_heads[0]
    deltas = np.array([1, 5, 17, 63, 200, 511])
    m = 600.0
    direct = [apply_rope(h.q, m, theta=h.theta) @ apply_rope(h.k, m - d, theta=h.theta) for d in deltas]
    np.testing.assert_allclose(B.score_profile(h, deltas), direct, rtol=1e-10)
    parts = B.score_profile(h, deltas, per_pair=True)
    a, b = h.coefficients()
    assert parts.shape == (6, 8)
    np.testing.assert_allclose(parts.sum(-1), direct, rtol=1e-10)
    np.testing.assert_allclose(h.amplitudes(), np.hypot(a, b))


# ----------------------------------------------------------------------------- training, determinism


def test_training_is_deterministic_and_seeded():
    a = B.train_offset_head(seed=4, steps=200)
    b = B.train_offset_head(seed=4, steps=200)
    c = B.train_offset_head(seed=5, steps=200)
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.losses, b.losses)
    assert not np.array_equal(a.q, c.q)
    m1 = B.train_match_head(seed=2, steps=30)
    m2 = B.train_match_head(seed=2, steps=30)
    np.testing.assert_array_equal(m1.q_table, m2.q_table)
    e1, e2 = B.evaluate(m1, 128, seed=9), B.evaluate(m2, 128, seed=9)
    np.testing.assert_array_equal(e1.target_mass, e2.target_mass)
    g1 = B.train_offset_head(seed=np.random.default_rng(7), steps=50)
    g2 = B.train_offset_head(seed=np.random.default_rng(7), steps=50)
    np.testing.assert_array_equal(g1.k, g2.k)
    assert g1.seed is None


def test_heads_learn_their_task_in_distribution(offset_heads, match_heads):
    for h in offset_heads:
        e = B.evaluate(h, L)
        assert e.accuracy == 1.0 and e.mass > 0.95
        assert h.losses[-1] < 0.05 * h.losses[0]
    for m in match_heads:
        e = B.evaluate(m, L, sequences=16)
        assert e.accuracy > 0.98 and e.mass > 0.9
        # targets are the most recent earlier match, checked by a loop
        assert np.all(e.target_position < e.query_position)


def test_evaluation_targets_and_displacement_profile(offset_heads):
    e = B.evaluate(offset_heads[0], 100)
    np.testing.assert_array_equal(e.query_position, np.arange(OFFSET, 100))
    np.testing.assert_array_equal(e.displacement, OFFSET)
    prof = e.attention_by_displacement
    assert np.isnan(prof[0]) and prof[OFFSET] > 0.95
    # mass per query and mass at the displacement agree for a single sequence
    assert prof[OFFSET] == pytest.approx(e.mass, rel=1e-12)
    binned = e.by_position([0, 50, 100])
    assert binned.count.tolist() == [45, 50]
    json.dumps(e.to_dict())
    json.dumps(offset_heads[0].to_dict())


# ----------------------------------------------------------------------------- interventions


def test_global_shift_changes_nothing_in_float64(offset_heads, match_heads):
    for h in offset_heads[:3] + match_heads[:1]:
        base = B.evaluate(h, TARGET)
        moved = B.evaluate(h, TARGET, shift=1e6)
        np.testing.assert_array_equal(base.winner_position, moved.winner_position)
        assert np.max(np.abs(base.target_mass - moved.target_mass)) < 1e-6


def test_global_shift_in_float32_breaks_only_when_large(offset_heads):
    broken = 0
    for h in offset_heads:
        base = B.evaluate(h, TARGET)
        mild = B.evaluate(h, TARGET, shift=1e6, phase_dtype="float32")
        huge = B.evaluate(h, TARGET, shift=2**24, phase_dtype="float32")
        assert mild.accuracy == pytest.approx(base.accuracy, abs=0.02)
        assert np.max(np.abs(mild.target_mass - base.target_mass)) > 1e-9  # float32 is visible
        broken += huge.accuracy < 0.5
    assert broken >= 8


def test_query_reset_turns_the_relative_head_absolute(offset_heads):
    for h in offset_heads:
        e = B.evaluate(h, TARGET, query_reset=True)
        assert e.accuracy < 0.1
        # every later query picks the same absolute key, whatever its own position
        late = e.winner_position[e.query_position >= TARGET // 2]
        assert np.unique(late).size == 1
        normal = B.evaluate(h, TARGET).winner_position[e.query_position >= TARGET // 2]
        assert np.unique(normal).size == late.size


@pytest.mark.parametrize("step", [1, -1])
def test_query_off_by_one_moves_the_offset(offset_heads, step):
    for h in offset_heads[:5]:
        e = B.evaluate(h, L, query_offset=step)
        # the first query cannot see displacement offset + 1; every other query misses
        assert np.all(~e.correct[1:])
        assert next(iter(e.winner_counts())) == OFFSET - step


def test_bfloat16_positions_fail_past_256(offset_heads):
    edges = [0, 256, 512]
    early, late = [], []
    for h in offset_heads:
        b = B.evaluate(h, TARGET, position_dtype="bfloat16").by_position(edges)
        early.append(b.accuracy[0])
        late.append(b.accuracy[1])
    # bfloat16 holds every integer up to 256 exactly, then every other one
    assert min(early) >= 0.95
    assert np.mean(late) < 0.3


# ----------------------------------------------------------------------------- extension


def test_extension_schedules_closed_forms():
    d, base = 16, 10_000.0
    plain = base ** (-2 * np.arange(d // 2) / d)
    kw = dict(head_dim=d, base=base, train_length=64)
    pi = scaling.extension_schedule("pi", length=512, **kw)
    assert pi.scale == pytest.approx(1 / 8) and pi.attention_factor == 1.0
    np.testing.assert_allclose(pi.theta, plain)
    ntk = scaling.extension_schedule("ntk", length=512, **kw)
    np.testing.assert_allclose(ntk.theta, (base * 8 ** (d / (d - 2))) ** (-2 * np.arange(d // 2) / d))
    # the NTK base keeps the fastest pair and slows the slowest exactly 8x
    assert ntk.theta[0] == pytest.approx(1.0) and ntk.theta[-1] == pytest.approx(plain[-1] / 8)
    # dynamic NTK with factor 1 (the base follows the length) at 8L is the NTK rule for factor 8; at L
    # it is the plain schedule
    np.testing.assert_allclose(scaling.extension_schedule("dynamic_ntk", length=512, factor=1, **kw).theta, ntk.theta)
    np.testing.assert_allclose(scaling.extension_schedule("dynamic_ntk", length=64, factor=1, **kw).theta, plain)
    # by default configured for 8L and read at 8L, as transformers: base * (8 * 8 - 7) ** (d / (d - 2))
    dyn8 = scaling.extension_schedule("dynamic", length=512, **kw)
    np.testing.assert_allclose(dyn8.theta, (base * 57 ** (d / (d - 2))) ** (-2 * np.arange(d // 2) / d))
    # configured for 8L but run at 2L: the transformers formula base * (8 * 2 - 7) ** (d / (d - 2))
    dyn = scaling.extension_schedule("dynamic", length=128, factor=8, **kw)
    np.testing.assert_allclose(dyn.theta, (base * 9 ** (d / (d - 2))) ** (-2 * np.arange(d // 2) / d))
    raw = scaling.extension_schedule("raw", length=512, **kw)
    assert raw.scale == 1.0 and raw.rule == "none"
    yarn = scaling.extension_schedule("yarn", length=512, **kw)
    assert yarn.attention_factor == pytest.approx(0.1 * math.log(8) + 1)
    assert yarn.theta[0] == pytest.approx(plain[0]) and yarn.theta[-1] == pytest.approx(plain[-1] / 8)
    llama = scaling.extension_schedule("llama3", length=512, **kw)
    lam = 2 * np.pi / plain
    np.testing.assert_allclose(llama.theta[lam < 64 / 4], plain[lam < 64 / 4])
    np.testing.assert_allclose(llama.theta[lam > 64], plain[lam > 64] / 8)


def test_yarn_attention_factor_scales_the_logits(offset_heads):
    h = offset_heads[0]
    e = B.evaluate(h, 128, extension="yarn")
    sch = scaling.extension_schedule("yarn", head_dim=16, base=10_000.0, train_length=L, length=128)
    assert e.attention_factor == pytest.approx(sch.attention_factor)
    # the same logits by hand: rotate with YaRN's frequencies, multiply by the factor squared
    direct = B.score_profile(h, np.arange(1, 128), theta=sch.theta) * sch.attention_factor**2
    p = np.exp(direct[:99][::-1] - direct[:99].max())  # query at position 99 sees displacements 1..99
    assert e.target_mass[99 - OFFSET] == pytest.approx(p[::-1][OFFSET - 1] / p.sum(), rel=1e-9)
    # the same schedule given explicitly (as a manifest's rope parameters would be)
    explicit = B.evaluate(h, 128, theta=sch.theta, attention_factor=sch.attention_factor)
    np.testing.assert_allclose(explicit.target_mass, e.target_mass, rtol=1e-12)
    with pytest.raises(ValueError, match="attention_factor"):
        B.evaluate(h, 128, attention_factor=-1.0)


def test_interpolation_without_fine_tuning_moves_the_offset(offset_heads):
    for h in offset_heads:
        e = B.evaluate(h, TARGET, extension="pi")
        assert e.accuracy < 0.05
        # positions squeezed 8x: the head's offset 5 now sits at displacement 40
        assert next(iter(e.winner_counts())) == 8 * OFFSET


def test_fine_tuned_interpolation_keeps_the_winner_and_splits_the_mass(offset_heads):
    accurate, masses, neighbours = 0, [], []
    for h in offset_heads:
        tuned = B.fine_tune(h, extension="pi", factor=8)
        assert tuned.scale == pytest.approx(1 / 8) and tuned.train_length == TARGET
        assert h.scale == 1.0  # the original is untouched
        e = B.evaluate(tuned, TARGET)
        accurate += e.accuracy > 0.9
        masses.append(e.mass)
        prof = e.attention_by_displacement
        neighbours.append(prof[OFFSET - 1] + prof[OFFSET + 1])
    assert accurate >= 7
    assert max(masses) < 0.6
    assert min(neighbours) > 0.15  # the mass went to the neighbouring offsets


def test_accuracy_and_mass_disagree_under_ntk(offset_heads):
    rows = B.compare(offset_heads, [L, TARGET], extensions=["raw", "ntk"])
    ntk = {r.label: r for r in rows}["ntk L=512"]
    assert ntk.accuracy.shape == (10,)
    # most seeds keep the winner while some of the mass leaks
    assert np.count_nonzero(ntk.accuracy > 0.95) >= 7
    assert np.count_nonzero((ntk.accuracy > 0.95) & (ntk.mass < 0.9)) >= 1
    assert np.all(ntk.mass <= ntk.accuracy + 0.05)
    json.dumps([r.to_dict() for r in rows])


def test_match_head_fine_tuning_sharpens_interpolation(match_heads):
    m = match_heads[0]
    before = B.evaluate(m, 256, extension="pi", factor=4)
    tuned = B.fine_tune(m, extension="pi", factor=4, steps=40, batch=2, seed=1)
    after = B.evaluate(tuned, 256)
    assert tuned.train_length == 256 and tuned.scale == pytest.approx(0.25)
    assert after.accuracy > 0.95 and after.mass > before.mass + 0.05
    np.testing.assert_array_equal(m.q_table, match_heads[0].q_table)  # original untouched


def test_match_head_extension(match_heads):
    raw = B.evaluate_seeds(match_heads, TARGET)
    pi = B.evaluate_seeds(match_heads, TARGET, extension="pi")
    at_l = B.evaluate_seeds(match_heads, L)
    assert np.all(raw.accuracy < at_l.accuracy - 0.1)  # raw extrapolation hurts
    assert np.all(pi.accuracy > 0.95) and np.all(pi.mass < pi.accuracy - 0.1)  # winner kept, mass split


# ----------------------------------------------------------------------------- slow ramps, distant rivals


def test_slow_ramps_turn_around_beyond_the_window(offset_heads):
    deltas = np.arange(1, TARGET)
    for h in offset_heads:
        profiles = B.pair_profiles(h)
        parts = B.score_profile(h, deltas, per_pair=True)
        turned = 0
        for p in profiles:
            slope = np.sign(np.diff(parts[:, p.pair]))
            changes = deltas[1:][np.nonzero(slope[1:] != slope[:-1])[0] + 1]
            if p.ramp:
                assert np.all(slope[: L - 2] == slope[0])  # monotone inside the window
                assert p.slope == slope[0]
            if p.ramp and p.turnaround < TARGET:
                assert changes.size and abs(changes[0] - p.turnaround) <= 1.5
                turned += p.slope == -1
        # at least one ramp that favours near keys turns around before 8L
        assert turned >= 1


def test_distant_rival_where_the_fast_band_realigns(offset_heads):
    wins, matched = [], 0
    for h in offset_heads:
        r = B.distant_rival(h, TARGET)
        w = np.where(np.asarray(r.fast_pairs)[:, None] == np.arange(8), 1, 0).sum(0) * h.amplitudes()
        gaps = np.arange(L - OFFSET, TARGET - OFFSET)
        brute = OFFSET + gaps[np.argmax(np.cos(np.outer(gaps, h.theta)) @ w)]
        assert r.predicted == brute
        matched += r.rival == r.predicted
        assert r.rival_score - r.target_score == pytest.approx(r.fast_gap + r.slow_gap, abs=1e-9)
        e = B.evaluate(h, TARGET)
        if r.wins:
            wins.append(h.seed)
            assert np.all(e.correct[e.query_position < r.rival])
            assert np.all(e.winner_displacement[e.query_position >= r.rival] == r.rival)
            assert r.fast_similarity > 0.95
        else:
            assert e.accuracy == 1.0
    assert matched >= 8
    assert 1 <= len(wins) <= 6  # a per-seed effect: some seeds only
    raw = B.evaluate_seeds(offset_heads, TARGET)
    assert raw.count(lambda e: e.accuracy < 1.0) == len(wins)
    assert [s for s, a in zip(raw.seeds, raw.accuracy) if a < 1.0] == wins


def test_slow_ramp_turnaround_makes_a_distant_winner_at_d8(offset_heads_d8):
    won = 0
    for h in offset_heads_d8:
        r = B.distant_rival(h, TARGET)
        won += r.wins and r.slow_gap > 0
    assert won >= 8


# ----------------------------------------------------------------------------- verdict


def test_gate_c_verdict():
    theta = frequencies(16)
    ntk = scaling.extension_schedule("ntk", head_dim=16, base=10_000.0, train_length=L, length=TARGET).theta
    kw = dict(seeds=(0,), match_steps=250, min_match_accuracy=0.8)
    good = gates_c.gate_c(theta, target_theta=ntk, **kw)
    bad = gates_c.gate_c(theta, target_scale=1 / 8, **kw)
    assert good.passed
    assert not bad.passed
    assert not bad.checks["offset accuracy at target (min)"]["passed"]
    assert bad.checks["offset accuracy at L (min)"]["passed"]
    assert "FAIL" in str(bad)
    json.dumps(good.to_dict())


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: B.train_offset_head(offset=0), "offset"),
        (lambda: B.train_offset_head(offset=64, train_length=64), "offset"),
        (lambda: B.train_offset_head(head_dim=7), "head_dim"),
        (lambda: B.train_offset_head(base=1.0), "base"),
        (lambda: B.train_offset_head(steps=0), "steps"),
        (lambda: B.train_offset_head(lr=-1.0), "lr"),
        (lambda: B.train_offset_head(seed=-1), "seed"),
        (lambda: B.train_offset_head(theta=[1.0, 0.1], head_dim=8), "head_dim"),
        (lambda: B.train_offset_head(theta=[1.0, np.nan], head_dim=4), "theta"),
        (lambda: B.train_match_head(vocab=1), "vocab"),
        (lambda: B.train_match_head(batch=0), "batch"),
        (lambda: B.train_heads("nope"), "kind"),
        (lambda: scaling.extension_schedule("yarnish", head_dim=8, base=1e4, train_length=64, length=512), "extension"),
        (lambda: scaling.extension_schedule("pi", head_dim=8, base=1e4, train_length=64, length=512, factor=0.5), "factor"),
        (lambda: B.match_targets([0.5, 1.5]), "tokens"),
        (lambda: B.match_head_loss(np.ones((2, 4)), np.ones((2, 4)), [[0, 3]], [1.0, 0.1]), "tokens"),
        (lambda: B.offset_head_loss(np.ones(4), np.ones(6), [1.0, 0.1], offset=1, length=5), "q and k"),
    ],
)
def test_validation_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_evaluation_validation(offset_heads):
    h = offset_heads[0]
    for kwargs, match in [
        (dict(length=1), "length"),
        (dict(length=5000), "length"),
        (dict(length=5), "offset"),
        (dict(length=64, extension="ntk", theta=h.theta), "either"),
        (dict(length=64, theta=[1.0, 2.0]), "theta"),
        (dict(length=64, shift=math.inf), "shift"),
        (dict(length=64, query_reset="yes"), "query_reset"),
        (dict(length=64, position_dtype="int8"), "position_dtype"),
        (dict(length=64, phase_dtype="float8"), "phase_dtype"),
        (dict(length=64, sequences=0), "sequences"),
    ]:
        with pytest.raises(ValueError, match=match):
            B.evaluate(h, **kwargs)
    with pytest.raises(ValueError, match="head"):
        B.evaluate("head", 64)
    with pytest.raises(ValueError, match="bins"):
        B.evaluate(h, 64).by_position([3, 1])
    with pytest.raises(ValueError, match="length"):
        B.distant_rival(h, L)
    explicit = B.train_offset_head(theta=h.theta, head_dim=16, steps=5)
    with pytest.raises(ValueError, match="base"):
        B.evaluate(explicit, 128, extension="ntk")
    with pytest.raises(ValueError, match="target_length"):
        gates_c.gate_c(h.theta, train_length=64, target_length=64)


# ----------------------------------------------------------------------------- figures


def test_figures_build_without_pyplot(offset_heads, match_heads):
    from matplotlib.figure import Figure

    from ropegeo.book.plots import behaviour as P

    evals = {"raw": [B.evaluate(h, TARGET) for h in offset_heads[:3]],
             "pi": [B.evaluate(h, TARGET, extension="pi") for h in offset_heads[:3]]}
    figs = [
        P.accuracy_mass_by_position(evals),
        P.accuracy_mass_by_displacement({"match": [B.evaluate(m, TARGET) for m in match_heads]}),
        P.attention_by_displacement(evals, max_displacement=64),
        P.score_profile_figure(offset_heads[:4], TARGET),
        P.seed_table(B.compare(offset_heads[:3], [L, TARGET], extensions=["raw", "pi"])),
    ]
    for fig in figs:
        assert isinstance(fig, Figure) and fig.axes
    assert len(figs[0].axes) == 2
    source = inspect.getsource(P)
    assert "import matplotlib.pyplot" not in source and "from matplotlib import pyplot" not in source
    with pytest.raises(ValueError, match="evaluations"):
        P.accuracy_mass_by_position({})


def test_step_count_is_bounded_for_every_trainer():
    from ropegeo.toy import MAX_STEPS, fine_tune, train_match_head, train_offset_head

    for call in (lambda: train_offset_head(steps=MAX_STEPS + 1),
                 lambda: train_match_head(steps=MAX_STEPS + 1),
                 lambda: fine_tune(train_offset_head(steps=5), extension="pi", factor=2, steps=MAX_STEPS + 1)):
        with pytest.raises(ValueError, match=r"steps must be at most 100000"):
            call()


def test_evaluation_and_verdict_json_have_no_nan():
    import json

    from ropegeo.gates.c import GateCVerdict

    e = B.evaluate(B.train_offset_head(steps=20), 32)
    d = json.loads(e.to_json())
    assert d["attention_by_displacement"][0] is None  # displacement 0 is never attended (NaN)
    assert d["queries"] == e.query_position.size and d["accuracy"] == e.accuracy
    verdict = GateCVerdict(False, {"x": {"passed": False, "value": np.nan, "threshold": 1.0}}, {}, {"theta": [1.0]})
    assert json.loads(verdict.to_json())["checks"]["x"]["value"] is None


def test_trainers_take_the_operator_or_a_frozen_bank():
    """A RotaryOperator or a bank trains the same head as the plain numbers it holds; what a trained
    head cannot model (partial rotation, low-precision phases, several axes, a conflicting width) is refused."""
    from ropegeo import RotaryOperator

    plain = B.train_offset_head(head_dim=8, base=500.0, steps=30)
    by_op = B.train_offset_head(operator=RotaryOperator(head_dim=8, base=500.0), steps=30)
    by_bank = B.train_offset_head(operator=plain.theta, steps=30)
    for h in (by_op, by_bank):
        np.testing.assert_array_equal(h.q, plain.q)
        np.testing.assert_array_equal(h.losses, plain.losses)
    assert by_op.base == 500.0 and by_bank.base is None
    scaled = B.train_offset_head(operator=RotaryOperator(head_dim=8, scale=0.5), steps=30)
    assert scaled.scale == 0.5 and not np.array_equal(scaled.losses, B.train_offset_head(head_dim=8, steps=30).losses)
    yarn = B.train_match_head(operator=RotaryOperator(head_dim=8, attention_factor=1.5), steps=5)
    assert yarn.attention_factor == 1.5
    for op, name in ((RotaryOperator(head_dim=8, rotary_dim=4), "operator"),
                     (RotaryOperator(head_dim=8, phase_dtype="float32"), "operator"),
                     (RotaryOperator(head_dim=1024), "operator")):
        with pytest.raises(ValueError, match=name):
            B.train_offset_head(operator=op, steps=1)
    with pytest.raises(ValueError, match="head_dim"):
        B.train_offset_head(operator=RotaryOperator(head_dim=8), head_dim=16, steps=1)
    with pytest.raises(ValueError, match="head_dim must be 4"):
        B.train_match_head(operator=[1.0, 0.1], head_dim=8, steps=1)
    tuned = B.fine_tune(plain, operator=RotaryOperator(head_dim=8, base=500.0, scale=0.25), length=64, steps=5)
    assert tuned.scale == 0.25 and tuned.stages[-1]["extension"] == "custom"
    np.testing.assert_array_equal(tuned.theta, plain.theta)
    with pytest.raises(ValueError, match="operator must have 4 pairs"):
        B.fine_tune(plain, operator=RotaryOperator(head_dim=16), steps=5)
