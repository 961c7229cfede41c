"""Checks for the exercises of chapter 3 (the frequency bank)."""

from __future__ import annotations

import functools
import math

import numpy as np

from ropegeo.book.exercises import (as_items, as_number, as_whole, call_student, correct, exercise, need, need_function,
                                    wrong)
from ropegeo.frequencies import frequencies, slow_pairs
from ropegeo.margins import difference_distance, pairwise_distances, separation_margin
from ropegeo.precision import uniform


def _as_int(answer, what: str):
    return as_whole(answer, f"{what} as a single whole number")


# -- compute -----------------------------------------------------------------------------------

@exercise("ch03-slow-pairs")
def slow_pairs_check(answer):
    """Slow pairs at head dim 64, base 500,000, training length 8,192."""
    n = need(_as_int(answer, "the number of slow pairs"))
    expected = slow_pairs(theta := frequencies(64, 500_000.0), 8192)
    if n == expected:
        return correct(f"{n} of {theta.size} pairs show only an arc of their circle in 8,192 tokens.")
    if n == theta.size - expected:
        return wrong("that is the number of pairs that DO complete a turn; count the others.")
    if n < 0 or n > theta.size:
        return wrong(f"a head of width 64 has {theta.size} pairs; the count must lie between 0 and {theta.size}.")
    if n == slow_pairs(frequencies(128, 500_000.0), 8192):
        return wrong("your criterion is right but for a 128-wide head; this exercise's head is 64 wide.")
    if n > expected:
        return wrong("too many: a pair is slow only when length * theta_i / (2 pi) is below one.")
    return wrong("too few: check the exponent -2i/d with d = 64 and i running from 0 to 31." if n != expected - 1 else
                 "one short: check whether your comparison counts a pair exactly at one turn (< vs <=).")


# -- derive ------------------------------------------------------------------------------------

@exercise("ch03-integer-limit")
def integer_limit_check(answer):
    """Consecutive-integer limits of two 8-bit floats: e4m3 (3 stored mantissa bits), then e5m2 (2)."""
    if not isinstance(answer, (list, tuple, np.ndarray)):
        need(_as_int(answer, "each limit"))  # an odd single answer gets its own reason first
        return wrong("give two limits in a list, [N for e4m3, N for e5m2]: the formula applied to each format.")
    items = need(as_items(answer, "two limits, [N for e4m3, N for e5m2]"))
    if len(items) != 2:
        return wrong(f"expected two limits, [N for e4m3, N for e5m2], got {len(items)} items.")
    limits = [need(_as_int(x, "each limit")) for x in items]
    formats = (("e4m3", 3), ("e5m2", 2))
    expected = [2 ** (stored + 1) for _, stored in formats]
    if limits == expected:
        return correct("in each format every integer up to yours is exact, and the one after it is not.")
    if limits == expected[::-1]:
        return wrong("both values are limits of these formats, but in the wrong order: e4m3 first, then e5m2.")
    for n, want, (name, stored) in zip(limits, expected, formats):
        if n == want:
            continue
        if n == 2 ** stored:
            return wrong(f"{name}: that counts only the stored mantissa bits; a normal number also has an implicit "
                         "leading bit.")
        if n < want:
            return wrong(f"{name}: the integer after yours is exact in this format too: write it in binary and count "
                         "its significant bits.")
        return wrong(f"{name}: {n} needs more significant bits than the format holds: some integer up to it rounds "
                     "to a neighbour.")
    return wrong("check each format's stored mantissa bits.")  # not reached: some limit differs above


# -- implement ---------------------------------------------------------------------------------

_CASES = [([1, 2, 3], frequencies(16)), ([0, 7, 44, 45, 300], frequencies(8)),
          (list(range(0, 200, 3)), frequencies(32, 500.0)), ([5, 6283 + 5, 1000], frequencies(8))]


def _tolerance(offsets, theta) -> float:
    """What float32 or 6 decimals guarantee: half an ulp a phase, ~2**-24 a cos, sin, doubled by the chord, + 5e-7."""
    phase = max(abs(o) for o in offsets) * float(np.max(theta))
    return 5e-7 + 8 * 2.0**-24 * (1 + phase)


def _cosine_only(offsets, theta) -> float:
    """The margin computed from cosines alone, sqrt(mean_i (cos a theta_i - cos b theta_i)**2)."""
    c = np.cos(np.multiply.outer(np.asarray(offsets, float), theta))
    d2 = ((c[:, None, :] - c[None, :, :]) ** 2).mean(axis=-1)
    return float(np.sqrt(d2[np.triu_indices(len(offsets), 1)].min()))


def _rounded(x, ref, what="", advice=""):  # a correct value rounded to a few digits: the digits, not the method
    return abs(x - ref) <= 5e-4 and f"your {what} {x:.6g} is off by {abs(x - ref):.1e}, the size of rounding: {advice}."


def _slip(m, ref, offsets, theta, tol):
    """A one-line diagnosis of a margin ``m`` that misses ``ref``, or None."""
    pairs = len(theta)
    near = functools.partial(math.isclose, m, abs_tol=tol)
    if near(ref * math.sqrt(pairs)):
        return f"your distances are {math.sqrt(pairs):.3g} times too large: weight each pair by 1/pairs."
    if near(ref / math.sqrt(2)):  # mean over the 2 * pairs coordinates, or |u(a) - u(b)|**2 taken as 1 - cos
        return ("your distances are sqrt(2) times too small: average the squared chords over the pairs "
                "(len(theta)), not over the 2 * len(theta) coordinates, and note that "
                "|u(a) - u(b)|**2 = 2 - 2 cos((a - b) theta_i) for unit vectors, not 1 - cos.")
    if near(ref * math.sqrt(2)):  # weights 2/d_head with d_head taken as len(theta): they sum to 2
        return ("your distances are sqrt(2) times too large: the pair weights must sum to one, 1/len(theta) each "
                "(2/d_head with d_head = 2 * len(theta), not len(theta)).")
    if near(_cosine_only(offsets, theta)):
        return "you compared only the cosines: each pair is a point (cos, sin), and its sine counts as well."
    if near(ref**2 / 2):
        return "you returned 1 - K; the distance is the chord length, the square root of twice that."
    if near(ref**2):
        return "you returned the squared distance; take its square root."
    if _rounded(m, ref):
        return _rounded(m, ref, "margin", "return it unrounded, or round to at least six decimals")
    if m > ref:
        return (f"for offsets {offsets[:6]}... with {pairs} pairs your margin is {m:.6g}, larger than the smallest "
                "distance of the set: compare every pair of offsets, not only neighbours.")
    if abs(m) <= tol:  # a zero margin: some pair compared an offset with itself
        return f"for offsets {offsets[:6]}... your margin is 0: are you comparing an offset with itself?"
    return (f"for offsets {offsets[:6]}... your margin {m:.6g} is below the true smallest distance: check each "
            "pair's distance, |u(a) - u(b)| with u = (cos, sin), averaged over the pairs.")


@exercise("ch03-margin-function")
def margin_function_check(fn):
    """A brute-force ``margin(offsets, theta) -> (margin, (a, b))``, equal weights, to float32's :func:`_tolerance`."""
    need_function(fn, "pass the function itself, margin, not its result.")
    for offsets, theta in _CASES:
        ref = separation_margin(offsets, theta)
        out, err = call_student(fn, list(offsets), np.array(theta))
        if err:  # report, do not crash the student's notebook
            return wrong(f"{err} (offsets {offsets[:5]}...)")
        if not isinstance(out, tuple) or len(out) != 2:
            return wrong("return a tuple (margin, (a, b)).")
        m, pair = out
        m = need(as_number(m, "the margin as one finite number"))
        pair = need(as_items(pair, "the pair as two offsets (a, b)", max_items=16))
        if len(pair) != 2:
            return wrong(f"the pair must hold two offsets (a, b), got {len(pair)} items.")
        a = need(as_number(pair[0], "each offset of the pair as a finite number"))
        b = need(as_number(pair[1], "each offset of the pair as a finite number"))
        tol = _tolerance(offsets, theta)
        if not math.isclose(m, ref.margin, abs_tol=tol):
            return wrong(_slip(m, ref.margin, offsets, theta, tol))
        if a >= b:
            return wrong("return the pair as (smaller offset, larger offset).")
        dist = float(difference_distance(b - a, theta))
        if a not in offsets or b not in offsets or not math.isclose(dist, ref.margin, abs_tol=tol):
            return wrong(f"the pair ({a:g}, {b:g}) is not a pair of the set at the margin distance.")
    return correct("your brute force agrees with ropegeo on every test set.")


@exercise("ch03-gate-b-rule")
def gate_b_rule_check(answer):
    """Gate B's threshold for an attention weight A = 0.9 against N = 3 rivals at the margin, calibrated at 4:1 on the
    128-wide head with base 500,000, exact phases: D_train(1) sqrt(ln(N A / (1 - A)) / ln 4), N A / (1 - A) = 27."""
    t = need(as_number(answer, "the threshold as one number"))
    d1 = float(difference_distance(1, frequencies(128, 500_000.0)))
    odds, cal = math.log(27), math.log(4)
    expected = d1 * math.sqrt(odds / cal)
    near = functools.partial(math.isclose, t, rel_tol=1e-4)
    if near(expected):
        return correct("each rival at the margin multiplies the odds the task needs; the square root tempers it.")
    if near(d1 * math.sqrt(math.log(9) / cal)):
        return wrong("that guards the weight against one rival; with N_rival rivals at the same distance the right "
                     "key gets 1 / (1 + N_rival exp(-gap)).")
    if near(d1 * math.sqrt(math.log(3) / cal)):
        return wrong("more rivals make the task harder, not easier: the odds the task needs grow with N_rival.")
    if near(d1 * math.sqrt(cal / odds)):
        return wrong("the log-odds are the wrong way up: the task's ln goes over the calibration's.")
    if near(d1 * math.sqrt(odds / math.log(9))):
        return wrong("that calibrates at the chapter's default 9:1; this head is calibrated at 4:1.")
    if near(expected / d1):
        return wrong("that is the threshold in units of D_train(1); multiply by the distance between neighbours.")
    if near(d1 * odds / cal):
        return wrong("the gap grows with D squared, so the threshold takes the square root of the ratio.")
    if near(float(difference_distance(1, frequencies(128))) * math.sqrt(odds / cal)):
        return wrong("D_train(1) belongs to this head's own bank: its base is 500,000.")
    if _rounded(t, expected):
        return wrong(_rounded(t, expected, "threshold", "right, but round to at least 4 significant digits"))
    return wrong("write the right key's weight against N_rival rivals that each trail it by beta D^2 / 2, ask for at "
                 "least A_star, and put in beta = 2 ln r_cal / D_train(1)^2.")


# -- investigate -------------------------------------------------------------------------------

@exercise("ch03-parser-collapse")
def parser_collapse_check(answer):
    """Smallest origin where offsets 1, 2, 3 share one all-bfloat16 phase row (head dim 128, base 10,000)."""
    n = need(_as_int(answer, "the origin"))
    if n < 0:
        return wrong("origins are non-negative positions.")
    if n > 100_000:
        return wrong("far too large: the three positions merge much earlier.")
    want = _first_parser_merge()
    if n == want:
        return correct("this is the first origin at which all three of the parser's offsets share one phase row "
                       "when every stage runs in bfloat16.")
    if n == want + 1:
        return wrong(f"{n} is the first of the three positions, o + 1; the question asks for the origin o.")
    rows = _parser_rows(n)
    if rows == 1:
        return wrong(f"the three positions do share one row at origin {n}, but there is an earlier origin where "
                     "they do.")
    if rows == 2 and n > want:
        return wrong(f"at origin {n} only two of the three positions share a row; all three merge at a smaller "
                     "origin: scan upwards from 0.")
    if rows == 2:
        return wrong(f"at origin {n} two of the three positions share a row (a collision), but the third is "
                     "still apart.")
    if n > want:
        return wrong(f"at origin {n} the three positions have distinct bfloat16 signatures, although all three "
                     "merge at a smaller origin: scan upwards from 0.")
    return wrong(f"at origin {n} the three positions still have distinct bfloat16 signatures.")


def _parser_rows(origin: int) -> int:
    """How many distinct all-bfloat16 phase rows the positions origin + 1, 2, 3 produce."""
    d = pairwise_distances([1, 2, 3], frequencies(128), dtype=uniform("bfloat16"), origin=origin)
    zero = d == 0
    return 1 if zero.all() else 2 if zero[np.triu_indices(3, 1)].any() else 3


@functools.lru_cache(maxsize=1)
def _first_parser_merge() -> int:
    """Brute force: the first origin whose three positions all share one all-bfloat16 phase row."""
    return next(o for o in range(0, 100_001) if _parser_rows(o) == 1)


@exercise("ch03-fast-band")
def fast_band_check(answer):
    """The offset in [1, 4096] most confusable with 0 for a head on pairs 4-7 only (d=128, base 10,000)."""
    n = need(_as_int(answer, "the offset"))
    if not 1 <= n <= 4096:
        return wrong("the offset must lie between 1 and 4096.")
    theta = frequencies(128)
    w = np.zeros(theta.size)
    w[4:8] = 1.0
    d = difference_distance(np.arange(1, 4097), theta, weights=w)
    best = int(np.argmin(d)) + 1
    if n == best:
        return correct("no other offset up to 4,096 brings pairs 4-7 closer to offset 0, though the next ones are "
                       "near-returns too; compare its distance with the equal-weight one and read the turns.")
    rank = int(np.sum(d < d[n - 1])) + 1
    if rank <= 5:
        return wrong(f"offset {n} is a near-return of pairs 4-7 (rank {rank}), but not the closest one.")
    return wrong(f"the distance of pairs 4-7 at offset {n} is {d[n - 1]:.3f}; several offsets come much closer to 0.")
