"""Every chapter-1 exercise check: it rejects stubs and typical mistakes (with the intended
message) and accepts a solution derived here independently."""

import numpy as np
import pytest
import sympy as sp

from ropegeo.book.exercises import check, exercise_ids


def stub(*args, **kwargs):
    raise NotImplementedError


def test_all_chapter_checks_registered():
    assert set(exercise_ids("ch01")) == {
        "ch01-half-similarity", "ch01-mirror-position", "ch01-any-start", "ch01-permuted-scores", "ch01-sinusoidal",
        "ch01-causal-survivors",
    }


@pytest.mark.parametrize("ex", ["ch01-half-similarity", "ch01-mirror-position", "ch01-any-start",
                                "ch01-causal-survivors"])
def test_value_stubs_fail(ex):
    fb = check(ex, None)
    assert not fb and "no answer yet" in fb.message


@pytest.mark.parametrize("ex", ["ch01-permuted-scores", "ch01-sinusoidal"])
def test_function_stubs_fail(ex):
    fb = check(ex, stub)
    assert not fb and "NotImplementedError" in fb.message
    assert not check(ex, None)


# ---- ch01-half-similarity ------------------------------------------------------------------------


def _half_point():
    """Independent: sum_i cos(omega_i k) with an explicit loop, first k >= 1 below 16 / 4."""
    import math

    k = 1
    while sum(math.cos(10_000 ** (-2 * i / 16) * k) for i in range(8)) >= 4:
        k += 1
    return k


def test_half_similarity():
    k = _half_point()
    assert check("ch01-half-similarity", k)
    assert check("ch01-half-similarity", float(k))
    # the success message must not answer the exercise's second question (does it fall steadily?)
    message = check("ch01-half-similarity", k).message.lower()
    assert not any(word in message for word in ("dips", "recovers", "steadily", "monoton"))
    assert "still at least half" in check("ch01-half-similarity", k - 1).message
    assert "already was" in check("ch01-half-similarity", k + 1).message
    assert "turns negative" in check("ch01-half-similarity", 91).message  # first k with a negative sum
    assert "positive" in check("ch01-half-similarity", 0).message
    assert "much earlier" in check("ch01-half-similarity", 10**6).message
    assert "whole number" in check("ch01-half-similarity", 9.5).message
    assert "text" in check("ch01-half-similarity", "9").message


# ---- ch01-mirror-position ------------------------------------------------------------------------


def test_mirror_codes_are_what_the_solution_says():
    """Independent: each code's similarity written out by hand at a few starts and offsets."""
    import math

    from ropegeo.book.exercises.ch01 import mirror_codes

    codes = mirror_codes()
    for p in (0, 7, 30):
        c = {name: code(np.arange(64)) for name, code in codes.items()}
        for k in (1, 5, 20):
            # A: lengths 3 and 0.5, so 9 cos(0.7 k) + 0.25 cos(0.05 k), whatever p
            assert c["A"][p] @ c["A"][p + k] == pytest.approx(9 * math.cos(0.7 * k) + 0.25 * math.cos(0.05 * k))
            sin_part = sum(math.cos(10_000 ** (-i / 2) * k) for i in range(2))  # width-4 code: two pairs
            # D: a constant coordinate adds 1; C: the ramp adds p (p + k) / 4096
            assert c["D"][p] @ c["D"][p + k] == pytest.approx(sin_part + 1)
            assert c["C"][p] @ c["C"][p + k] == pytest.approx(sin_part + p * (p + k) / 4096)
    table = codes["B"](np.arange(64))
    assert abs(table[0] @ table[5] - table[10] @ table[15]) > 0.1  # a table: the offset alone does not decide


def test_mirror_position():
    assert check("ch01-mirror-position", ["A", "D"])
    assert check("ch01-mirror-position", ("d", " a"))
    assert check("ch01-mirror-position", {"A", "D"})
    fb = check("ch01-mirror-position", ["A"])
    assert not fb and "1 code(s) the proof covers are missing" in fb.message
    fb = check("ch01-mirror-position", ["A", "B", "C", "D"])  # "every code" is not the answer
    assert not fb and "2 of your codes are not covered" in fb.message
    fb = check("ch01-mirror-position", ["A", "C"])  # a code built on sines is not covered for that reason
    assert not fb and "1 of your codes is not covered" in fb.message and "missing" in fb.message  # singular verb
    assert "by its letter" in check("ch01-mirror-position", ["E"]).message
    assert "by its letter" in check("ch01-mirror-position", [1, 2]).message
    assert "text" in check("ch01-mirror-position", "AD").message
    fb = check("ch01-mirror-position", [])
    assert not fb and "2 code(s) the proof covers are missing" in fb.message


# ---- ch01-any-start ------------------------------------------------------------------------------


def test_any_start():
    a, b, w, k, p = sp.symbols("a b omega k p", real=True)
    # independent: multiply out by hand with explicit sines and cosines
    c0 = (a * sp.cos(w * p) - b * sp.sin(w * p), a * sp.sin(w * p) + b * sp.cos(w * p))
    c1 = tuple(e.subs(p, p + k) for e in c0)
    raw = c0[0] * c1[0] + c0[1] * c1[1]
    assert check("ch01-any-start", (a**2 + b**2) * sp.cos(w * k))
    fb = check("ch01-any-start", raw)
    assert fb and "p cancels" in fb.message
    assert "length 1" in check("ch01-any-start", sp.cos(w * k)).message
    assert "changes when p changes" in check("ch01-any-start", (a**2 + b**2) * sp.cos(w * p)).message
    assert "symmetric part" in check("ch01-any-start", (a**2 - b**2) * sp.cos(w * k)).message
    assert "sign" in check("ch01-any-start", -(a**2 + b**2) * sp.cos(w * k)).message
    for one_coordinate in (a**2 * sp.cos(w * k), b**2 * sp.cos(w * k)):  # a start vector with one coordinate
        assert "only one coordinate" in check("ch01-any-start", one_coordinate).message
    assert "differs" in check("ch01-any-start", (a**2 + b**2) * sp.cos(2 * w * k)).message
    assert "unexpected symbols" in check("ch01-any-start", sp.Symbol("theta")).message
    assert "cannot be evaluated" in check("ch01-any-start", sp.sqrt(-1 - a**2)).message


# ---- ch01-permuted-scores -------------------------------------------------------------------------


def test_permuted_scores():
    def solution(S, perm):
        n = len(perm)
        return np.array([[S[perm[i], perm[j]] for j in range(n)] for i in range(n)])

    assert check("ch01-permuted-scores", solution)
    assert "only the rows" in check("ch01-permuted-scores", lambda S, p: S[p]).message
    assert "only the columns" in check("ch01-permuted-scores", lambda S, p: S[:, p]).message
    inv = check("ch01-permuted-scores", lambda S, p: S[np.ix_(np.argsort(p), np.argsort(p))])
    assert "inverse permutation" in inv.message
    assert "transposed" in check("ch01-permuted-scores", lambda S, p: S[np.ix_(p, p)].T).message
    assert "shape" in check("ch01-permuted-scores", lambda S, p: S[:1]).message
    assert "expected a function" in check("ch01-permuted-scores", np.eye(3)).message


def test_permuted_scores_refuses_the_matrix_product_on_a_padding_mask():
    # the text's P S P^T, computed as a product, turns the padding key's -inf into nan
    def by_product(S, perm):
        P = np.eye(len(perm))[perm]
        return P @ S @ P.T

    with np.errstate(invalid="ignore"):
        fb = check("ch01-permuted-scores", by_product)
    assert not fb and "nan" in fb.message and "-inf" in fb.message and "every entry" in fb.message
    S = np.zeros((5, 5))
    S[:, 2] = -np.inf
    with np.errstate(invalid="ignore"):
        assert np.isnan(by_product(S, np.array([2, 0, 4, 1, 3]))).all()  # the product's nan reaches all 25 entries
    # the answer keeps the -inf column where the padded token went: checked against an explicit loop
    rng = np.random.default_rng(0)
    S = rng.standard_normal((5, 5))
    S[:, 2] = -np.inf
    perm = np.array([2, 0, 4, 1, 3])
    looped = np.array([[S[perm[i], perm[j]] for j in range(5)] for i in range(5)])
    assert np.all(np.isneginf(looped[:, 0])) and np.isfinite(looped[:, 1:]).all()


# ---- ch01-sinusoidal ------------------------------------------------------------------------------


def _code(positions, dim, swap=False, exponent=2.0, half=False):
    positions = np.asarray(positions, dtype=float)
    out = np.empty(positions.shape + (dim,))
    for i in range(dim // 2):
        w = 10_000.0 ** (-exponent * i / dim)
        s, c = np.sin(positions * w), np.cos(positions * w)
        if swap:
            s, c = c, s
        if half:
            out[..., i], out[..., dim // 2 + i] = s, c
        else:
            out[..., 2 * i], out[..., 2 * i + 1] = s, c
    return out


def test_sinusoidal():
    assert check("ch01-sinusoidal", _code)
    assert "swapped" in check("ch01-sinusoidal", lambda p, d: _code(p, d, swap=True)).message
    assert "exponent" in check("ch01-sinusoidal", lambda p, d: _code(p, d, exponent=1.0)).message
    assert "layout" in check("ch01-sinusoidal", lambda p, d: _code(p, d, half=True)).message
    assert "shape" in check("ch01-sinusoidal", lambda p, d: _code(p, d)[..., :-1]).message
    # a function that flattens its positions passes 1-D positions but not a 2-D array of them
    flat = lambda p, d: _code(np.ravel(p), d)
    fb = check("ch01-sinusoidal", flat)
    assert not fb and "(3, 4)" in fb.message and "(3, 4, 8)" in fb.message
    assert check("ch01-sinusoidal", lambda p, d: flat(p, d).reshape(np.shape(p) + (d,)))
    # positions cast to whole numbers: right at the whole positions, wrong at 3.5, and told so
    for whole in (np.trunc, np.rint, lambda p: np.asarray(p).astype(int)):
        fb = check("ch01-sinusoidal", lambda p, d, whole=whole: _code(whole(p), d))
        assert not fb and "fractional positions" in fb.message
    assert "fractional" not in check("ch01-sinusoidal", lambda p, d: _code(p, d, exponent=1.0)).message


# ---- ch01-causal-survivors ------------------------------------------------------------------------


def test_causal_survivors():
    # independent reasoning: a slot survives when it holds the same query token and sees the same set of keys.
    # Slot 1 keeps its token but not its prefix (a trap); slots 5 and 6 swap; slots 4 and 7 survive
    perm = [3, 1, 0, 2, 4, 6, 5, 7]
    survivors = [i for i in range(8) if perm[i] == i and set(perm[: i + 1]) == set(range(i + 1))]
    assert survivors == [4, 7] and perm[1] == 1
    assert check("ch01-causal-survivors", survivors)
    # "up to rounding": the survivors' outputs agree to below the prompt's 1e-12, the others do not
    from ropegeo.book.exercises.ch01 import survivor_problem

    layer, x, p = survivor_problem()
    change = np.abs(layer(x[p]) - layer(x)).max(axis=-1)
    assert change[[4, 7]].max() < 1e-12 < change[[0, 1, 2, 3, 5, 6]].min()
    assert check("ch01-causal-survivors", np.array([7, 4]))
    fb = check("ch01-causal-survivors", [])
    assert not fb and "2 slot(s) with an unchanged output are missing" in fb.message
    fb = check("ch01-causal-survivors", list(range(8)))
    assert not fb and "6 of your slots have an output that changes" in fb.message
    fb = check("ch01-causal-survivors", [7])
    assert not fb and "1 slot(s)" in fb.message
    # a strict subset of {4, 7} (or none), what comparing with == finds: the hint to compare up to rounding
    for subset in ([], [4], [7]):
        assert "compare up to rounding, 1e-12" in check("ch01-causal-survivors", subset).message, subset
    for other in ([1, 4, 7], [4, 5], list(range(8))):
        assert "compare up to rounding" not in check("ch01-causal-survivors", other).message, other
    fb = check("ch01-causal-survivors", [1, 4, 7])  # same token in slot 1, but it sees other keys
    assert not fb and "1 of your slots have an output that changes" in fb.message
    assert not check("ch01-causal-survivors", [4, 5, 6, 7])  # the answer for a shuffle of slots 0-3 only
    assert "0 to 7" in check("ch01-causal-survivors", [8]).message
    assert "list of slot" in check("ch01-causal-survivors", 5).message


@pytest.mark.parametrize("ex", ["ch01-permuted-scores", "ch01-sinusoidal"])
def test_a_crashing_function_is_reported_not_raised(ex):
    def broken(a, b):
        return a[100]

    fb = check(ex, broken)
    assert not fb and "raised IndexError" in fb.message


# ---- odd answers get a specific one-line "not yet", never an exception -----------------------------


@pytest.mark.parametrize("answer, fragment", [
    (10**400, "~10**400, which is far outside the range"),
    (float("inf"), "finite"),
    (float("nan"), "finite"),
    ("11", "text"),
    (True, "bool"),
])
def test_half_similarity_odd_answers(answer, fragment):
    fb = check("ch01-half-similarity", answer)
    assert not fb and fragment in fb.message and "\n" not in fb.message


@pytest.mark.parametrize("answer, fragment", [
    ([float("inf")], "finite"),
    ((float("inf"), 4), "finite"),
    ([10**400], "far outside the range"),
    (range(10**20), "far too many"),
    ("4567", "text"),  # the characters of a string are not slot numbers
    ({4: 1}, "dict"),
    ([4.5, 5], "whole number"),
])
def test_causal_survivors_odd_answers(answer, fragment):
    fb = check("ch01-causal-survivors", answer)
    assert not fb and fragment in fb.message and "\n" not in fb.message


def test_causal_survivors_accepts_a_set():
    assert check("ch01-causal-survivors", {4, 7})


@pytest.mark.parametrize("ex", ["ch01-permuted-scores", "ch01-sinusoidal"])
@pytest.mark.parametrize("returned, fragment", [
    (10**400, "far outside the range"), ("x", "text"), (object(), "not real numbers"), (None, "None"),
])
def test_unreadable_results_are_named(ex, returned, fragment):
    fb = check(ex, lambda a, b: returned)
    assert not fb and fragment in fb.message and "what your function returned" in fb.message
