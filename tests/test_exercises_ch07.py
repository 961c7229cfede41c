"""Every chapter-7 exercise check: it rejects stubs and typical mistakes (with the intended
message) and accepts a solution derived here independently."""

import math

import numpy as np
import pytest

from ropegeo.book.exercises import check, exercise_ids


def stub(*args, **kwargs):
    raise NotImplementedError


def test_all_chapter_checks_registered():
    assert set(exercise_ids("ch07")) == {"ch07-t5-bucket", "ch07-alibi-mass", "ch07-alibi-slopes", "ch07-shaw-ceiling",
                                            "ch07-two-layer-bound"}


@pytest.mark.parametrize("ex", ["ch07-t5-bucket", "ch07-shaw-ceiling"])
def test_value_stubs_fail(ex):
    fb = check(ex, None)
    assert not fb and "no answer yet" in fb.message
    assert not check(ex, ...)


@pytest.mark.parametrize("ex", ["ch07-alibi-mass", "ch07-alibi-slopes", "ch07-two-layer-bound"])
def test_function_stubs_fail(ex):
    fb = check(ex, stub)
    assert not fb and "NotImplementedError" in fb.message
    assert not check(ex, None)


# ---- ch07-t5-bucket -------------------------------------------------------------------------------


def test_t5_bucket():
    # by hand: decoder, 32 buckets -> 16 exact; n >= 16: 16 + floor(16 log(n/16) / log 8)
    def bucket(n):
        return n if n < 16 else min(31, 16 + int(16 * math.log(n / 16) / math.log(8)))

    def encoder(n):  # bidirectional: 16 per side, 8 exact
        return n if n < 8 else min(15, 8 + int(8 * math.log(n / 8) / math.log(16)))

    b = bucket(60)
    count = sum(1 for n in range(1, 1000) if bucket(n) == b)
    assert (b, count) == (26, 8)  # 16 * 8**(10/16) = 58.7 and 16 * 8**(11/16) = 66.8: distances 59 .. 66
    assert check("ch07-t5-bucket", (b, count))
    assert check("ch07-t5-bucket", [np.int64(26), 8.0])
    assert "exact one-offset buckets" in check("ch07-t5-bucket", (60, 1)).message
    assert "encoder (bidirectional)" in check("ch07-t5-bucket", (encoder(60), 8)).message
    assert "negative" in check("ch07-t5-bucket", (16 + encoder(60), 8)).message
    assert "off by one" in check("ch07-t5-bucket", (26, 7)).message
    assert "off by one" in check("ch07-t5-bucket", (26, 9)).message
    assert "wrong count" in check("ch07-t5-bucket", (26, 2)).message
    assert "is not where distance 60" in check("ch07-t5-bucket", (20, 8)).message
    assert "pair" in check("ch07-t5-bucket", 26).message
    assert "whole numbers" in check("ch07-t5-bucket", (26.5, 8)).message


# ---- ch07-alibi-mass ------------------------------------------------------------------------------


def test_alibi_mass():
    def solution(slope, N, r):
        # geometric series over distances 1..N
        q = math.exp(-slope)
        return q ** (r - 1) * (1 - q) / (1 - q**N)

    assert check("ch07-alibi-mass", solution)

    def with_self(slope, N, r):
        w = [math.exp(-slope * d) for d in range(0, N + 1)]
        return w[r] / sum(w)

    assert "strictly earlier" in check("ch07-alibi-mass", with_self).message

    def next_key(slope, N, r):  # the key r + 1 back: the exponent one too high
        q = math.exp(-slope)
        return q**r * (1 - q) / (1 - q**N)

    fb = check("ch07-alibi-mass", next_key)
    assert not fb and "off by one in r" in fb.message and "r + 1 back" in fb.message

    def self_for_farthest(slope, N, r):  # the query at distance 0 in, the farthest key out: the same number
        w = [math.exp(-slope * d) for d in range(0, N)]
        return w[r] / sum(w) if r < N else 0.0

    fb = check("ch07-alibi-mass", self_for_farthest)
    assert not fb and "off by one in r" in fb.message and "distance 0" in fb.message

    def previous_key(slope, N, r):  # the key r - 1 back: the exponent one too low
        q = math.exp(-slope)
        return q ** (r - 2) * (1 - q) / (1 - q**N)

    fb = check("ch07-alibi-mass", previous_key)
    assert not fb and "off by one in r" in fb.message and "r - 1 back" in fb.message

    def infinite(slope, N, r):
        q = math.exp(-slope)
        return q ** (r - 1) * (1 - q)

    assert "infinitely many" in check("ch07-alibi-mass", infinite).message

    def flipped(slope, N, r):
        w = [math.exp(slope * d) for d in range(1, N + 1)]
        return w[r - 1] / sum(w)

    assert "sign" in check("ch07-alibi-mass", flipped).message
    assert "is not the attention" in check("ch07-alibi-mass", lambda s, N, r: 0.5).message
    assert "one number" in check("ch07-alibi-mass", lambda s, N, r: "x").message
    assert "raised ZeroDivisionError" in check("ch07-alibi-mass", lambda s, N, r: 1 / 0).message
    assert "expected a function" in check("ch07-alibi-mass", 0.3).message


# ---- ch07-alibi-slopes ----------------------------------------------------------------------------


def test_alibi_slopes():
    def solution(h):
        # the recursive recipe of the paper, written out
        def pow2(n):
            return [2 ** (-8 * (i + 1) / n) for i in range(n)]

        if h & (h - 1) == 0:
            return pow2(h)
        p = 1 << (h.bit_length() - 1)
        return pow2(p) + solution(2 * p)[0::2][: h - p]

    assert check("ch07-alibi-slopes", solution)
    assert check("ch07-alibi-slopes", lambda h: np.asarray(solution(h), dtype=np.float32))  # float32 answers are right
    assert "differ" in check("ch07-alibi-slopes", lambda h: np.asarray(solution(h)) * (1 + 1e-4)).message  # not loose
    naive = check("ch07-alibi-slopes", lambda h: [2 ** (-8 * (i + 1) / h) for i in range(h)])
    assert "right for powers of two" in naive.message
    assert "exponents start at h = 1" in check("ch07-alibi-slopes", lambda h: [2 ** (-8 * i / h) for i in range(h)]).message
    assert "wrong order" in check("ch07-alibi-slopes", lambda h: sorted(solution(h), reverse=True)).message
    assert "expected 3 slopes" in check("ch07-alibi-slopes", lambda h: solution(h) + [0.1] * (h == 3)).message
    assert "differ" in check("ch07-alibi-slopes", lambda h: [0.1] * h).message
    # ascending for every H: H = 2 is the first that differs, a power of two, so the hint is about the order alone
    ascending = check("ch07-alibi-slopes", lambda h: sorted(solution(h)))
    assert not ascending and "H = 2" in ascending.message and "reversed" in ascending.message
    assert "power-of-two set first" not in ascending.message
    # a power of two in another order, not reversed: the hint is about the order alone
    swapped = check("ch07-alibi-slopes", lambda h: solution(h)[1:2] + solution(h)[:1] + solution(h)[2:] if h == 4 else solution(h))
    assert not swapped and "H = 4" in swapped.message and "steepest first" in swapped.message
    assert "power-of-two set first" not in swapped.message

    def even_fill(h):  # the next power's 2nd, 4th, ... slopes: the existing set's own, repeated
        p = 1 << (h.bit_length() - 1)
        return solution(h) if p == h else solution(p) + solution(2 * p)[1::2][: h - p]

    filled = check("ch07-alibi-slopes", even_fill)
    assert not filled and "H = 3" in filled.message and "2nd, 4th" in filled.message and "1st, 3rd" in filled.message
    assert "differ" not in filled.message
    # the first-fill solution passes the same check: the diagnosis does not catch the right answer
    assert even_fill(3) != solution(3) and check("ch07-alibi-slopes", solution)


# ---- ch07-shaw-ceiling ----------------------------------------------------------------------------


def test_shaw_ceiling():
    # 511 earlier keys; distances 16 .. 511 all use the clipped vector: 496 keys, even split
    keys = 511
    shared = keys - 16 + 1
    assert check("ch07-shaw-ceiling", 1 / shared)
    assert "own vectors" in check("ch07-shaw-ceiling", 1 / keys).message
    assert "off by one" in check("ch07-shaw-ceiling", 1 / (shared - 1)).message
    assert "off by one" in check("ch07-shaw-ceiling", 1 / (shared + 1)).message
    assert "cannot single the key out" in check("ch07-shaw-ceiling", 1.0).message
    assert "between 0 and 1" in check("ch07-shaw-ceiling", 2.0).message
    assert "count how many keys" in check("ch07-shaw-ceiling", 0.01).message
    assert "one number" in check("ch07-shaw-ceiling", "1/496").message


@pytest.mark.parametrize("printed", [0.002016, 0.0020161, 2.016e-3])
def test_shaw_ceiling_accepts_printed_precision(printed):
    # rounded to digits that still tell 1/496 from 1/495 and 1/497: accepted
    assert check("ch07-shaw-ceiling", printed)


@pytest.mark.parametrize("printed", [0.002, 0.00202])
def test_shaw_ceiling_too_few_digits_says_so(printed):
    # right to its digits but also matching a neighbouring count: asks for digits, not a method
    fb = check("ch07-shaw-ceiling", printed)
    assert not fb and "more significant digits" in fb.message and "count how many" not in fb.message


# ---- odd answers: a specific one-line "not yet", never an exception --------------------------------


@pytest.mark.parametrize("answer, fragment", [
    ((10**400, 8), "far outside the range"), ((26, float("inf")), "finite"), (("26", 8), "text"),
    (range(10**20), "pair"), ((26, 8, 1), "pair"),
])
def test_t5_bucket_odd_answers(answer, fragment):
    fb = check("ch07-t5-bucket", answer)
    assert not fb and fragment in fb.message


@pytest.mark.parametrize("answer, fragment", [
    (10**400, "far outside the range"), (float("inf"), "finite"), (float("nan"), "finite"), ("1/496", "text"),
])
def test_shaw_ceiling_odd_answers(answer, fragment):
    fb = check("ch07-shaw-ceiling", answer)
    assert not fb and fragment in fb.message


@pytest.mark.parametrize("returned, fragment", [
    (10**400, "far outside the range"), (float("nan"), "finite"), (None, "NoneType"), ([0.5], "list"),
])
def test_alibi_mass_odd_results(returned, fragment):
    fb = check("ch07-alibi-mass", lambda s, N, r: returned)
    assert not fb and fragment in fb.message and "one number" in fb.message


@pytest.mark.parametrize("returned, fragment", [
    (10**400, "far outside the range"), ([10**400], "far outside the range"), ("x", "text"),
    ([None], "None"), (range(10**20), "far too many"),
])
def test_alibi_slopes_odd_results(returned, fragment):
    fb = check("ch07-alibi-slopes", lambda h: returned)
    assert not fb and fragment in fb.message


# ---- ch07-two-layer-bound ---------------------------------------------------------------------------


def winnable_by_brute_force(r, length):
    """Derived here independently: for each query m, build the key scores the probe can give
    (the start token has its own free score; the token keys n = 1 .. m-1 score a monotone function of n,
    tried both increasing and decreasing), and ask whether the target m - r can be the strict maximum."""
    out = []
    for m in range(r, length):
        t = m - r
        if t == 0:
            out.append(m)  # the start token's score is free: set it above every token key
            continue
        ranks = np.arange(1, m)  # token keys 1 .. m-1
        if any(np.argmax(order) == t - 1 and np.sum(order == order.max()) == 1 for order in (ranks, -ranks)):
            out.append(m)
    return out


def test_two_layer_bound():
    # r = 5 at length 64: only the start token (m = 5) and the first token key (m = 6) can win
    assert winnable_by_brute_force(5, 64) == [5, 6]
    assert winnable_by_brute_force(1, 10) == list(range(1, 10))  # one back: the last token key, an end
    assert check("ch07-two-layer-bound", winnable_by_brute_force)
    assert check("ch07-two-layer-bound", lambda r, L: tuple(winnable_by_brute_force(r, L)))
    assert "start token" in check("ch07-two-layer-bound", lambda r, L: [m for m in winnable_by_brute_force(r, L) if m != r]).message
    assert "too many" in check("ch07-two-layer-bound", lambda r, L: list(range(r, L))).message
    assert "missing" in check("ch07-two-layer-bound", lambda r, L: [r, r + 1] if r + 1 < L else [r]).message
    assert "out of range" in check("ch07-two-layer-bound", lambda r, L: [0]).message
    assert "whole numbers" in check("ch07-two-layer-bound", lambda r, L: [2.5]).message
    assert "list each query once" in check("ch07-two-layer-bound", lambda r, L: winnable_by_brute_force(r, L) * 2).message
