"""Every chapter-1 exercise check: it rejects stubs and typical mistakes (with the intended
message) and accepts a solution derived here independently."""

import numpy as np
import pytest
import sympy as sp

from ropegeo.exercises import check, exercise_ids


def stub(*args, **kwargs):
    raise NotImplementedError


def test_all_chapter_checks_registered():
    assert set(exercise_ids("ch01")) == {
        "ch01-table-shifts", "ch01-permuted-scores", "ch01-shift-matrix", "ch01-sinusoidal", "ch01-causal-survivors",
    }


@pytest.mark.parametrize("ex", ["ch01-table-shifts", "ch01-shift-matrix", "ch01-causal-survivors"])
def test_value_stubs_fail(ex):
    fb = check(ex, None)
    assert not fb and "no answer yet" in fb.message


@pytest.mark.parametrize("ex", ["ch01-permuted-scores", "ch01-sinusoidal"])
def test_function_stubs_fail(ex):
    fb = check(ex, stub)
    assert not fb and "NotImplementedError" in fb.message
    assert not check(ex, None)


# ---- ch01-table-shifts ----------------------------------------------------------------------------


def test_table_shifts():
    # independent count: starts 0 .. 16 - 6
    assert check("ch01-table-shifts", 16 - 6 + 1)
    assert check("ch01-table-shifts", 11.0)
    assert "off by one" in check("ch01-table-shifts", 10).message
    assert "off by one" in check("ch01-table-shifts", 12).message
    assert "number of rows" in check("ch01-table-shifts", 16).message
    assert "whole number" in check("ch01-table-shifts", 10.5).message
    assert "whole number" in check("ch01-table-shifts", "11").message
    assert not check("ch01-table-shifts", 3)


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


# ---- ch01-shift-matrix ----------------------------------------------------------------------------


def test_shift_matrix():
    w, k = sp.symbols("omega k")
    a = w * k
    assert check("ch01-shift-matrix", sp.Matrix([[sp.cos(a), sp.sin(a)], [-sp.sin(a), sp.cos(a)]]))
    # the same matrix written as a rotation by -omega k
    assert check("ch01-shift-matrix", sp.Matrix([[sp.cos(-a), -sp.sin(-a)], [sp.sin(-a), sp.cos(-a)]]))
    assert "wrong sign" in check("ch01-shift-matrix", sp.Matrix([[sp.cos(a), -sp.sin(a)], [sp.sin(a), sp.cos(a)]])).message
    p = sp.Symbol("p")
    dep = check("ch01-shift-matrix", sp.Matrix([[sp.cos(w * p), 0], [0, 1]]))
    assert "contains p" in dep.message
    assert "unexpected symbols ['theta']" in check("ch01-shift-matrix", sp.Matrix([[sp.Symbol("theta"), 0], [0, 1]])).message
    assert "2x2" in check("ch01-shift-matrix", sp.eye(3)).message
    assert "does not give the pair" in check("ch01-shift-matrix", sp.eye(2)).message


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


# ---- ch01-causal-survivors ------------------------------------------------------------------------


def test_causal_survivors():
    # independent reasoning: perm shuffles slots 0..3 only and moves slot 3's token, so the
    # first unchanged slot is 4; every later slot has the same query and the same prefix set
    perm = [2, 0, 3, 1, 4, 5, 6, 7]
    survivors = [i for i in range(8) if perm[i] == i and set(perm[: i + 1]) == set(range(i + 1))]
    assert survivors == [4, 5, 6, 7]
    assert check("ch01-causal-survivors", survivors)
    assert check("ch01-causal-survivors", np.array([7, 6, 5, 4]))
    fb = check("ch01-causal-survivors", [])
    assert not fb and "4 slot(s) with an unchanged output are missing" in fb.message
    fb = check("ch01-causal-survivors", list(range(8)))
    assert not fb and "4 of your slots have an output that changes" in fb.message
    fb = check("ch01-causal-survivors", [7])
    assert not fb and "3 slot(s)" in fb.message
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
def test_table_shifts_odd_answers(answer, fragment):
    fb = check("ch01-table-shifts", answer)
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
    assert check("ch01-causal-survivors", {4, 5, 6, 7})


@pytest.mark.parametrize("answer", [range(10**20), [[1, 2], range(10**20)], [[1, 2, 3], [4, 5, 6]], "ab"])
def test_shift_matrix_never_builds_a_huge_matrix(answer):
    fb = check("ch01-shift-matrix", answer)
    assert not fb and "2x2" in fb.message


@pytest.mark.parametrize("ex", ["ch01-permuted-scores", "ch01-sinusoidal"])
@pytest.mark.parametrize("returned, fragment", [
    (10**400, "far outside the range"), ("x", "text"), (object(), "not real numbers"), (None, "None"),
])
def test_unreadable_results_are_named(ex, returned, fragment):
    fb = check(ex, lambda a, b: returned)
    assert not fb and fragment in fb.message and "what your function returned" in fb.message


def test_shift_matrix_refuses_unbounded_or_unevaluable_entries():
    w, k = sp.symbols("omega k")
    n = sp.Symbol("n", integer=True)
    c, s = sp.cos(w * k), sp.sin(w * k)
    # a Sum over 10**9 terms would be evaluated term by term; an Integral makes lambdify raise NotImplementedError
    fb = check("ch01-shift-matrix", sp.Matrix([[c, s], [-s, sp.Sum(sp.cos(w * n), (n, 1, 10**9))]]))
    assert not fb and "Sum" in fb.message
    fb = check("ch01-shift-matrix", sp.Matrix([[c, s], [-s, sp.Integral(sp.cos(w * k), (k, 0, 1))]]))
    assert not fb and "Integral" in fb.message and "NotImplementedError" not in fb.message
    fb = check("ch01-shift-matrix", sp.Matrix([[c, s], [-s, sp.exp(sp.exp(sp.exp(100 * w)))]]))
    assert not fb and "\n" not in fb.message
    fb = check("ch01-shift-matrix", sp.Matrix([[c, s], [-s, sp.expand((w + k + 1) ** 30)]]))
    assert not fb and "far larger" in fb.message
