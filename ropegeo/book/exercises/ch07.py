"""Checks for the exercises of chapter 7 (alternatives to RoPE compared by intervention)."""

from __future__ import annotations

import decimal
import math

import numpy as np

from ropegeo.book.exercises import (as_float_array, as_items, as_number, as_whole, call_student, correct, exercise,
                                    need, need_function, read_each, wrong)
from ropegeo.toy.schemes import alibi_slopes, t5_bucket

# ---- problem data shared with the notebook -------------------------------------------------

#: ch07-t5-bucket: a decoder-style T5 layer with these settings, a key this far back.
T5_BUCKETS, T5_MAX_DISTANCE, T5_DISTANCE = 32, 128, 60

#: ch07-shaw-ceiling: clipping distance, sequence length, distance of the relevant key.
SHAW_K, SHAW_LENGTH, SHAW_DISTANCE = 16, 512, 40


_call = call_student  # (value, None), or (None, reason) when the student's function raised


def _rounds_to(value: float, given: float) -> bool:
    """Whether ``value`` rounded to the decimal digits written in ``given`` (its shortest repr) is ``given``.

    >>> _rounds_to(1 / 496, 0.00202), _rounds_to(1 / 496, 0.002), _rounds_to(1 / 496, 0.0021)
    (True, True, False)
    """
    if not math.isfinite(given):
        return False
    exponent = decimal.Decimal(repr(float(given))).normalize().as_tuple().exponent  # -(digits after the point)
    return abs(value - given) <= 0.5 * 10.0 ** exponent * (1 + 1e-9)


# ---- checks --------------------------------------------------------------------------------


@exercise("ch07-t5-bucket")
def _t5_bucket(answer):
    items, _ = as_items(answer, "a pair (bucket, count)", max_items=64)
    if items is None or len(items) != 2:
        return wrong("expected a pair (bucket, count): the bucket index and how many distances share it.")
    bucket, count = items
    b, c = (need(as_whole(x, "the bucket and the count as whole numbers")) for x in (bucket, count))
    n = np.arange(1, 4 * T5_MAX_DISTANCE)
    buckets = t5_bucket(-n, bidirectional=False, num_buckets=T5_BUCKETS, max_distance=T5_MAX_DISTANCE)
    want_b = int(buckets[T5_DISTANCE - 1])
    want_c = int(np.sum(buckets == want_b))
    if b != want_b:
        if b == T5_DISTANCE:
            return wrong(f"exact one-offset buckets only cover the smallest distances; {T5_DISTANCE} is in the log-spaced range.")
        if b == int(t5_bucket(-T5_DISTANCE, bidirectional=True, num_buckets=T5_BUCKETS, max_distance=T5_MAX_DISTANCE)):
            return wrong("that is the encoder (bidirectional) bucket: a decoder spends all 32 buckets on one side.")
        if b == int(t5_bucket(T5_DISTANCE, bidirectional=True, num_buckets=T5_BUCKETS, max_distance=T5_MAX_DISTANCE)):
            return wrong("the key is before the query, so the relative position key - query is negative.")
        return wrong(f"bucket {b} is not where distance {T5_DISTANCE} falls; evaluate the log-spaced formula and round down.")
    if c != want_c:
        if abs(c - want_c) == 1:
            return wrong("right bucket; the count is off by one: list the first and last distance in it, both included.")
        return wrong("right bucket, wrong count: find every distance whose bucket is the same.")
    return correct(f"distance {T5_DISTANCE} shares bucket {want_b}, and so one learned bias, with {want_c - 1} other distances.")


def _alibi_mass_reference(slope, N, r):
    d = np.arange(1, N + 1)
    w = np.exp(-slope * d)
    return w[r - 1] / w.sum()


@exercise("ch07-alibi-mass")
def _alibi_mass(answer):
    need_function(answer, "expected a function alibi_mass(slope, N, r) returning a probability.")
    cases = [(0.5, 10, 1), (0.5, 10, 5), (2 ** -4, 200, 40), (1.0, 1, 1), (2 ** -8, 511, 300), (0.25, 64, 64)]
    for slope, N, r in cases:
        got = need(as_number(need(_call(answer, slope, N, r)), "your function to return one number (a probability)"))
        want = _alibi_mass_reference(slope, N, r)
        if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-15):
            continue
        z, d0 = math.exp(-slope), np.exp(-slope * np.arange(0, N + 1))
        for sign, also in (("+", " (or on the key r back with the query at distance 0 among the keys)"), ("-", "")):
            if math.isclose(got, z ** (r - 1 + int(sign + "1")) * (1 - z) / (1 - z**N), rel_tol=1e-9):  # exponent off
                return wrong(f"off by one in r: that is the attention on the key r {sign} 1 back{also}; the key r back "
                             "has weight z**r, so z**(r - 1) once z leaves the sum.")
        if math.isclose(got, d0[r] / d0.sum(), rel_tol=1e-9):
            return wrong("the query sees strictly earlier keys only: distances 1 .. N, not the query itself at 0.")
        if math.isclose(got, z ** (r - 1) * (1 - z), rel_tol=1e-9):  # not the answer: that continued above
            return wrong("this is the mass with infinitely many keys: the query sees only N of them.")
        if math.isclose(got, np.exp(slope * r) / np.exp(slope * np.arange(1, N + 1)).sum(), rel_tol=1e-9):
            return wrong("the sign of the bias is flipped: ALiBi penalises distance.")
        return wrong(f"for slope={slope:g}, N={N}, r={r} your value {got:.6g} is not the attention on that key.")
    return correct("your closed form matches the softmax over the N earlier keys.")


@exercise("ch07-alibi-slopes")
def _alibi_slopes(answer):
    need_function(answer, "expected a function slopes(heads) returning one slope per head.")
    for h in (1, 2, 4, 8, 16, 3, 5, 6, 12, 20, 24, 40):
        got = need(_call(answer, h))
        got = need(as_float_array(got, f"for H = {h} heads what your function returned", finite=False)).reshape(-1)
        want, p = alibi_slopes(h), 1 << (h.bit_length() - 1)  # p: the largest power of two <= h
        if got.shape != want.shape:
            return wrong(f"for H = {h} heads expected {h} slopes, got {got.size}.")
        for alt, hint in ((want, None), (2.0 ** (-8.0 * np.arange(1, h + 1) / h), f"right for powers of two, but for H = {h} "
                           "heads the paper does not use 2^(-8h/H): it keeps a power-of-two set and adds slopes from the next one."),
                          (2.0 ** (-8.0 * np.arange(0, h) / h), "the first head's slope is not 1: the exponents start at h = 1."),
                          (np.r_[want[:p], alibi_slopes(2 * p)[1::2][: h - p]], f"for H = {h} heads you added the 2nd, 4th, "
                           f"... slopes of the {2 * p}-head set, which are the {p}-head set's own: take its 1st, 3rd, 5th, ..."),
                          (want[::-1], f"for H = {h} heads your slopes are reversed: the first head gets the steepest slope.")):
            if np.allclose(got, alt, rtol=1e-6, atol=0):  # float32 answers pass
                if hint is None:
                    break
                return wrong(hint)
        else:
            order = "steepest first." if p == h else "keep the power-of-two set first, then the added slopes."
            return wrong(f"right slopes for H = {h} heads, wrong order: {order}" if np.allclose(np.sort(got), np.sort(want),
                         rtol=1e-6) else f"for H = {h} heads the slopes differ from ALiBi's.")
    return correct("your slopes match ALiBi's for powers of two and for the other head counts.")


@exercise("ch07-shaw-ceiling")
def _shaw_ceiling(answer):
    x = need(as_number(answer, "one number: the largest attention the key can receive"))
    keys = SHAW_LENGTH - 1  # the last query sees every earlier slot
    # brute force: distances 1 .. keys, those at or beyond K share the clipped vector of K
    shared = sum(1 for dist in range(1, keys + 1) if min(dist, SHAW_K) == min(SHAW_DISTANCE, SHAW_K))
    want = 1.0 / shared
    close = [1.0 / near for near in (shared - 1, shared + 1)]
    if math.isclose(x, want, rel_tol=1e-9) or (_rounds_to(want, x) and not any(_rounds_to(c, x) for c in close)):
        return correct(f"{shared} keys share the clipped vector, so the best a head can do is split its attention "
                       "evenly among them.")
    if _rounds_to(want, x):
        return wrong("that agrees with the ceiling to the digits you gave, but so would a neighbouring count of keys: "
                     "give more significant digits (or the exact fraction as a float).")
    if not 0 < x <= 1:
        return wrong("an attention weight lies between 0 and 1.")
    if math.isclose(x, 1 / keys, rel_tol=1e-9):
        return wrong("not every earlier key looks the same: distances below the clipping distance have their own vectors.")
    for near in (shared - 1, shared + 1):
        if math.isclose(x, 1 / near, rel_tol=1e-9):
            return wrong("off by one: count the distances from the clipping distance to the farthest key, both included.")
    if math.isclose(x, 1.0, rel_tol=1e-9):
        return wrong("a content-free head cannot single the key out: others share its representation exactly.")
    return wrong("that is not the ceiling; count how many keys share the key's clipped representation.")


#: ch07-two-layer-bound: the (distance back r, sequence length) cases the check asks the student's function about.
TWO_LAYER_CASES = ((5, 64), (1, 64), (2, 10), (3, 3), (7, 40), (1, 2), (12, 13))


def _winnable_reference(r: int, length: int) -> list:
    """Query slots m (r <= m < length) whose target m - r can be the two-layer NoPE probe's strict winner.

    Token keys n = 1 .. m-1 score monotonically in n (affine in the start token's share, which falls
    strictly with n), so only n = 1 or n = m - 1 can be their strict maximum; the start token (n = 0)
    is a key of its own.
    """
    return [m for m in range(r, length) if m - r in (0, 1, m - 1)]


@exercise("ch07-two-layer-bound")
def _two_layer_bound(answer):
    need_function(answer, "expected a function winnable(r, length) returning the list of query slots.")
    for r, length in TWO_LAYER_CASES:
        got = need(_call(answer, r, length))
        items, bad = as_items(got, f"for r = {r}, length = {length}, a list of query slots", max_items=length + 1)
        if items is None:
            return bad or wrong(f"for r = {r}, length = {length} expected a list of query slots.")
        slots = need(read_each(items, as_whole, "query slots as whole numbers"))
        want = _winnable_reference(r, length)
        if sorted(set(slots)) == want and len(slots) == len(want):
            continue
        where = f"for r = {r} and length {length}"
        if any(not r <= m < length for m in slots):
            return wrong(f"{where} a slot is out of range: the queries that have a target r back are r .. length - 1.")
        if len(slots) != len(set(slots)):
            return wrong(f"{where} a slot appears twice; list each query once.")
        missing, extra = sorted(set(want) - set(slots)), sorted(set(slots) - set(want))
        if r in missing:
            return wrong(f"{where} one case is missing: the start token is a key of its own, with a score of its own.")
        if extra:
            return wrong(f"{where} too many: for a fixed query the score over the token keys is monotone in the key's "
                         "slot, so a target inside that range can never be the strict winner.")
        return wrong(f"{where} some query is missing: the target can be an end of the range of token keys the query sees.")
    return correct("right for every case: beyond the start token, a target can only win at an end of the token keys, "
                   "so the number of winnable queries does not grow with the length unless r = 1.")
