"""Every chapter-3 check: fails on a stub, fails on a typical wrong answer with its message, passes the solution."""

import math

import ml_dtypes
import numpy as np
import pytest

from ropegeo.book.exercises import check, exercise_ids
from ropegeo.frequencies import frequencies


def stub(*args, **kwargs):
    raise NotImplementedError


def test_all_ids_registered():
    assert set(exercise_ids("ch03")) == {
        "ch03-slow-pairs", "ch03-integer-limit", "ch03-margin-function", "ch03-parser-collapse", "ch03-fast-band",
        "ch03-gate-b-rule",
    }


# -- slow pairs: an independent loop ---------------------------------------------------------------
SLOW = sum(1 for i in range(32) if 8192 * 500_000.0 ** (-2 * i / 64) < 2 * math.pi)


def test_slow_pairs():
    assert not check("ch03-slow-pairs", None)
    fb = check("ch03-slow-pairs", 32 - SLOW)
    assert not fb and "DO complete" in fb.message
    fb = check("ch03-slow-pairs", SLOW + 1)
    assert not fb and "too many" in fb.message
    # the count for a 128-wide head (the chapter's table, same base and length): the criterion, the wrong width
    slow128 = sum(1 for i in range(64) if 8192 * 500_000.0 ** (-2 * i / 128) < 2 * math.pi)
    assert slow128 == 29 and slow128 not in (SLOW, 32 - SLOW)
    fb = check("ch03-slow-pairs", slow128)
    assert not fb and "right but for a 128-wide head" in fb.message and "64 wide" in fb.message
    assert not check("ch03-slow-pairs", "14")
    # one short (a < for a <=): named, pointing at the comparison without giving away the pair range (the answer)
    fb = check("ch03-slow-pairs", SLOW - 1)
    assert not fb and "one short" in fb.message and "(< vs <=)" in fb.message
    assert str(SLOW) not in fb.message and str(32 - SLOW) not in fb.message and "to 31" not in fb.message
    fb = check("ch03-slow-pairs", SLOW - 2)
    assert not fb and "too few" in fb.message
    assert check("ch03-slow-pairs", SLOW)


# -- integer limit: ml_dtypes' own e4m3 and e5m2 formats ------------------------------------------
def _limit(dtype):
    n = 0
    while float(dtype(n + 1)) == n + 1:
        n += 1
    return n


def _e4m3_limit():
    return _limit(ml_dtypes.float8_e4m3fn)


def test_integer_limit():
    e4, e5 = _e4m3_limit(), _limit(ml_dtypes.float8_e5m2)
    assert (e4, e5) == (16, 8)  # ml_dtypes' formats: 2**(3 + 1) and 2**(2 + 1)
    assert not check("ch03-integer-limit", ...)
    fb = check("ch03-integer-limit", e4)  # one format alone is not the answer
    assert not fb and "two limits" in fb.message
    fb = check("ch03-integer-limit", [e4])
    assert not fb and "two limits" in fb.message
    fb = check("ch03-integer-limit", [e4, e5, 4])
    assert not fb and "3 items" in fb.message
    fb = check("ch03-integer-limit", [8, e5])
    assert not fb and "implicit" in fb.message and "e4m3" in fb.message
    fb = check("ch03-integer-limit", [e4, 4])
    assert not fb and "implicit" in fb.message and "e5m2" in fb.message
    fb = check("ch03-integer-limit", [e4 + 1, e5])
    assert not fb and "rounds" in fb.message and "e4m3" in fb.message
    fb = check("ch03-integer-limit", [e4, e5 - 1])
    assert not fb and "after yours" in fb.message and "e5m2" in fb.message
    fb = check("ch03-integer-limit", [e5, e4])
    assert not fb and "wrong order" in fb.message
    for bad in ([e4 - 1, e5], [e4 + 1, e5], [8, e5], [e4, e5 + 1], [e5, e4]):  # no feedback names a limit
        msg = check("ch03-integer-limit", bad).message
        assert str(e4) not in msg and f"{e5} " not in msg
    assert str(e4) not in check("ch03-integer-limit", [e4, e5]).message
    assert not check("ch03-integer-limit", [2.5, e5])
    assert not check("ch03-integer-limit", "16, 8")
    assert check("ch03-integer-limit", [e4, e5]) and check("ch03-integer-limit", (float(e4), np.int64(e5)))


# -- margin function ---------------------------------------------------------------------------------
def good_margin(offsets, theta):
    best = (math.inf, None)
    offs = sorted(offsets)
    for j, a in enumerate(offs):
        for b in offs[j + 1 :]:
            d2 = sum(2 - 2 * math.cos((b - a) * t) for t in theta) / len(theta)
            if math.sqrt(max(d2, 0)) < best[0] - 1e-12:
                best = (math.sqrt(max(d2, 0)), (a, b))
    return best


def unweighted_margin(offsets, theta):
    m, pair = good_margin(offsets, theta)
    return m * math.sqrt(len(theta)), pair


def one_minus_k(offsets, theta):
    m, pair = good_margin(offsets, theta)
    return m * m / 2, pair


def neighbours_only(offsets, theta):
    offs = sorted(offsets)
    ds = [(math.sqrt(sum(2 - 2 * math.cos((b - a) * t) for t in theta) / len(theta)), (a, b)) for a, b in zip(offs, offs[1:])]
    return min(ds)


def reversed_pair(offsets, theta):
    m, (a, b) = good_margin(offsets, theta)
    return m, (b, a)


def float32_margin(offsets, theta):
    """A correct answer computed entirely in float32."""
    offs = np.sort(np.asarray(offsets, dtype=np.float32))
    ph = np.multiply.outer(offs, np.asarray(theta, dtype=np.float32))
    u = np.concatenate([np.cos(ph), np.sin(ph)], axis=1)
    d2 = ((u[:, None, :] - u[None, :, :]) ** 2).sum(axis=-1) / np.float32(len(theta))
    d2[np.tril_indices(len(offs))] = np.inf
    j, k = np.unravel_index(np.argmin(d2), d2.shape)
    return np.sqrt(d2[j, k]), (offs[j], offs[k])


def rounded_margin(offsets, theta):
    m, pair = good_margin(offsets, theta)
    return round(m, 6), pair


def no_factor_two(offsets, theta):  # |u(a) - u(b)|**2 taken as 1 - cos
    m, pair = good_margin(offsets, theta)
    return m / math.sqrt(2), pair


def cosine_only(offsets, theta):
    best = (math.inf, None)
    for j, a in enumerate(sorted(offsets)):
        for b in sorted(offsets)[j + 1 :]:
            d = math.sqrt(sum((math.cos(a * t) - math.cos(b * t)) ** 2 for t in theta) / len(theta))
            best = min(best, (d, (a, b)), key=lambda x: x[0])
    return best


def test_margin_function_accepts_float32_and_six_decimals():
    assert check("ch03-margin-function", float32_margin)
    assert check("ch03-margin-function", rounded_margin)


def mean_over_coordinates(offsets, theta):  # the chord right, but averaged over the 2 * pairs coordinates
    offs = np.sort(np.asarray(offsets, dtype=float))
    ph = np.multiply.outer(offs, theta)
    u = np.concatenate([np.cos(ph), np.sin(ph)], axis=1)
    d2 = ((u[:, None, :] - u[None, :, :]) ** 2).mean(axis=-1)
    d2[np.tril_indices(len(offs))] = np.inf
    j, k = np.unravel_index(np.argmin(d2), d2.shape)
    return float(np.sqrt(d2[j, k])), (offs[j], offs[k])


def weights_sum_to_two(offsets, theta):  # w_i = 2/d_head with d_head taken as len(theta)
    best = (math.inf, None)
    offs = sorted(offsets)
    for j, a in enumerate(offs):
        for b in offs[j + 1 :]:
            d = math.sqrt(sum((2 / len(theta)) * (2 - 2 * math.cos((b - a) * t)) for t in theta))
            best = min(best, (d, (a, b)), key=lambda x: x[0])
    return best


def squared_distance(offsets, theta):
    m, pair = good_margin(offsets, theta)
    return m * m, pair


def wrong_pair(offsets, theta):  # the right margin, but the pair of the largest distance
    m, _ = good_margin(offsets, theta)
    offs = sorted(offsets)
    far = max(((a, b) for j, a in enumerate(offs) for b in offs[j + 1 :]),
              key=lambda p: sum(2 - 2 * math.cos((p[1] - p[0]) * t) for t in theta))
    return m, far


@pytest.mark.parametrize("student", [no_factor_two, mean_over_coordinates])
def test_margin_function_sqrt2_too_small_names_both_causes(student):
    """1 - cos for the squared chord and a mean over the 2 * pairs coordinates both give margin / sqrt 2."""
    fb = check("ch03-margin-function", student)
    assert not fb and "sqrt(2) times too small" in fb.message
    assert "2 * len(theta) coordinates" in fb.message and "not 1 - cos" in fb.message
    assert "itself" not in fb.message and "too large" not in fb.message


def test_margin_function_sqrt2_too_large_names_the_weights():
    fb = check("ch03-margin-function", weights_sum_to_two)
    assert not fb and "sqrt(2) times too large" in fb.message and "sum to one" in fb.message


def test_margin_function_squared_and_wrong_pair():
    fb = check("ch03-margin-function", squared_distance)
    assert not fb and "squared distance" in fb.message
    fb = check("ch03-margin-function", wrong_pair)
    assert not fb and "not a pair of the set at the margin distance" in fb.message


def test_margin_function_names_the_slip():
    fb = check("ch03-margin-function", cosine_only)
    assert not fb and "only the cosines" in fb.message and "itself" not in fb.message
    # a margin off by more than float32 guarantees, with no known slip, still fails
    fb = check("ch03-margin-function", lambda o, t: (good_margin(o, t)[0] + 1e-3, good_margin(o, t)[1]))
    assert not fb and "larger than the smallest" in fb.message


def _cos_only_no_two(offsets, theta):
    """Both slips at once: cosines only, and no factor 2 (below the true margin on [1, 2, 3])."""
    c = [[math.cos(o * t) for t in theta] for o in offsets]
    best = min((math.sqrt(sum((x - y) ** 2 for x, y in zip(c[i], c[j])) / len(theta) / 2), (offsets[i], offsets[j]))
               for i in range(len(offsets)) for j in range(i + 1, len(offsets)))
    return best


def test_margin_function_self_comparison_only_at_zero():
    fb = check("ch03-margin-function", _cos_only_no_two)
    assert not fb and "itself" not in fb.message and "below the true smallest" in fb.message
    fb = check("ch03-margin-function", lambda o, t: (0.0, (o[0], o[1])))  # an offset against itself: margin 0
    assert not fb and "itself" in fb.message


def test_margin_function():
    fb = check("ch03-margin-function", stub)
    assert not fb and "NotImplementedError" in fb.message
    assert not check("ch03-margin-function", None)
    fb = check("ch03-margin-function", 0.5)
    assert not fb and "function itself" in fb.message
    fb = check("ch03-margin-function", unweighted_margin)
    assert not fb and "1/pairs" in fb.message
    fb = check("ch03-margin-function", one_minus_k)
    assert not fb and "1 - K" in fb.message
    fb = check("ch03-margin-function", neighbours_only)
    assert not fb and "every pair" in fb.message and "larger than the smallest distance" in fb.message
    fb = check("ch03-margin-function", reversed_pair)
    assert not fb and "smaller offset" in fb.message
    assert check("ch03-margin-function", good_margin)


# -- parser merge: bfloat16 rounding of the three positions, by hand -------------------------------
def _rows(p):
    return len({float(ml_dtypes.bfloat16(p + j)) for j in (1, 2, 3)})


def _parser_merge():
    return next(p for p in range(1000) if _rows(p) == 1)


def test_parser_merge_is_a_tie_to_even():
    # 259 and 261 are ties between bfloat16 neighbours 2 apart; both round to 260, whose last
    # significand bit is 0, so 259, 260, 261 share one value: the first window of three that does
    assert _parser_merge() == 258
    assert {float(ml_dtypes.bfloat16(x)) for x in (259, 260, 261)} == {260.0}


def test_parser_collapse():
    P = _parser_merge()
    first_pair = next(p for p in range(1000) if _rows(p) < 3)
    assert first_pair < P
    assert not check("ch03-parser-collapse", None)
    # below the answer, two of the three share a row at 254 (257 -> 256), 255 (256, 257 -> 256, 258) and
    # 257 (258, 259 -> 260, 260): the message must be true at each, not only at the first collision
    assert first_pair == 254 and [_rows(o) for o in (254, 255, 256, 257)] == [2, 2, 3, 2]
    for below in (254, 255, 257):
        fb = check("ch03-parser-collapse", below)
        assert not fb and "a collision" in fb.message and "third is still apart" in fb.message
        assert "first collision" not in fb.message and f"origin {below}" in fb.message
    fb = check("ch03-parser-collapse", 0)
    assert not fb and "distinct" in fb.message
    fb = check("ch03-parser-collapse", P + 1)  # the first position, o + 1 = 259, which the solution names
    assert not fb and "first of the three positions" in fb.message and "origin o" in fb.message
    for later in range(P + 2, P + 12):
        fb = check("ch03-parser-collapse", later)
        expect = {1: "earlier origin", 2: "only two", 3: "smaller origin"}[_rows(later)]
        assert not fb and expect in fb.message
    fb = check("ch03-parser-collapse", 10**6)
    assert not fb and "far too large" in fb.message
    assert check("ch03-parser-collapse", P)


# -- second band: a plain loop over offsets --------------------------------------------------------
def _band_best():
    th = frequencies(128)[4:8]
    dist = [sum(1 - math.cos(d * t) for t in th) for d in range(1, 4097)]
    order = np.argsort(dist)
    return int(order[0]) + 1, int(order[1]) + 1


def test_fast_band():
    best, second = _band_best()
    assert not check("ch03-fast-band", None)
    fb = check("ch03-fast-band", second)
    assert not fb and "not the closest" in fb.message
    fb = check("ch03-fast-band", 1)
    assert not fb and "much closer" in fb.message
    fb = check("ch03-fast-band", 2438)  # the text's answer for pairs 0-3 is not this exercise's
    assert not fb
    fb = check("ch03-fast-band", 5000)
    assert not fb and "between 1 and 4096" in fb.message
    assert check("ch03-fast-band", best)
    msg = check("ch03-fast-band", best).message
    assert "near-returns too" in msg and str(second) not in msg  # there is a family; the runner-up is not named
    th = frequencies(128)
    d_band = math.sqrt(sum(2 - 2 * math.cos(best * t) for t in th[4:8]) / 4)
    d_equal = math.sqrt(sum(2 - 2 * math.cos(best * t) for t in th) / 64)
    assert f"{d_band:.3f}" not in msg and f"{d_equal:.3f}" not in msg  # the success message gives nothing away


# -- odd answers: a specific one-line "not yet", never an exception ----------------------------------
@pytest.mark.parametrize("ex", ["ch03-slow-pairs", "ch03-integer-limit", "ch03-parser-collapse", "ch03-fast-band"])
@pytest.mark.parametrize("answer, fragment", [
    (10**400, "~10**400, which is far outside the range"),
    (-(10**400), "far outside the range"),
    (1e300, "far outside the range"),
    (float("inf"), "finite"),
    (float("nan"), "finite"),
    ("16", "text"),
    (2.5, "not a whole number"),
])
def test_whole_number_checks_refuse_odd_answers(ex, answer, fragment):
    fb = check(ex, answer)
    assert not fb and fragment in fb.message and "\n" not in fb.message


@pytest.mark.parametrize("returned, fragment", [
    ((10**400, (1, 2)), "far outside the range"),
    ((float("nan"), (1, 2)), "finite"),
    ((0.5, (10**400, 2)), "far outside the range"),
    ((0.5, range(10**20)), "far too many"),
    ((0.5, (1, 2, 3)), "two offsets"),
    ((0.5, "ab"), "text"),
    (10**400, "tuple"),
])
def test_margin_function_odd_results(returned, fragment):
    fb = check("ch03-margin-function", lambda offsets, theta: returned)
    assert not fb and fragment in fb.message and "\n" not in fb.message


def test_margin_function_rounded_to_four_decimals_is_told_to_round_less():
    fb = check("ch03-margin-function", lambda o, t: (round(float(good_margin(o, t)[0]), 4), good_margin(o, t)[1]))
    assert not fb and "decimals" in fb.message and "every pair" not in fb.message


# -- Gate B's rule: the threshold by hand, D_train(1) from the chord of each pair ------------------
def _d1():
    th = [10_000.0 ** (-2 * i / 128) for i in range(64)]
    return math.sqrt(sum(2 - 2 * math.cos(t) for t in th) / 64)


def test_gate_b_rule():
    th = [500_000.0 ** (-2 * i / 128) for i in range(64)]  # base 500,000, off the chapter's table
    d1 = math.sqrt(sum(2 - 2 * math.cos(t) for t in th) / 64)
    # 3 rivals at distance D, each beta D^2 / 2 behind: weight 1 / (1 + 3 exp(-beta D^2 / 2)) >= 0.9,
    # beta = 2 ln 4 / d1^2; solved here by bisection on D, not by the closed form
    def share(D):
        return 1 / (1 + 3 * math.exp(-(2 * math.log(4) / d1**2) * D**2 / 2))
    lo, hi = 0.0, 2.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if share(mid) < 0.9 else (lo, mid)
    want = hi
    assert want > d1 and abs(d1 - _d1()) > 0.01  # stricter than the calibration; not base 10,000's D(1)
    assert check("ch03-gate-b-rule", want) and check("ch03-gate-b-rule", round(want, 5))
    assert not check("ch03-gate-b-rule", None) and not check("ch03-gate-b-rule", "x")
    assert check("ch03-gate-b-rule", float(f"{want:.4g}"))  # four significant digits pass
    for rounded in (round(want, 3), float(f"{want:.3g}")):  # three do not: told it is the rounding, not the method
        assert abs(rounded - want) > 1e-4 * want
        fb = check("ch03-gate-b-rule", rounded)
        assert not fb and "right, but round to at least 4 significant digits" in fb.message
        assert "rivals" not in fb.message
    fb = check("ch03-gate-b-rule", want + 2e-3)  # off by more than rounding: not called right
    assert not fb and "right, but" not in fb.message
    for answer, fragment in ((d1 * math.sqrt(math.log(9) / math.log(4)), "against one rival"),
                             (d1 * math.sqrt(math.log(3) / math.log(4)), "harder, not easier"),
                             (d1 * math.sqrt(math.log(4) / math.log(27)), "wrong way up"),
                             (d1 * math.sqrt(math.log(27) / math.log(9)), "default 9:1"),
                             (want / d1, "units of D_train(1)"),
                             (d1 * math.log(27) / math.log(4), "square root"),
                             (_d1() * math.sqrt(math.log(27) / math.log(4)), "base is 500,000"),
                             (_d1() * math.sqrt(math.log(99) / math.log(9)), "least A_star"),
                             (2 * want, "least A_star")):
        fb = check("ch03-gate-b-rule", answer)
        assert not fb and f"{want:.3f}" not in fb.message
        assert not fb and fragment in fb.message, (answer, fb.message)
