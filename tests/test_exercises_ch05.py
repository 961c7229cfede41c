"""Every chapter-5 check: fails on a stub, fails on typical wrong answers with its message, passes
on the solution. The expected answers are derived here independently of the checks."""

import math

import ml_dtypes
import numpy as np
import pytest
from pathlib import Path

NB = Path(__file__).resolve().parents[1] / "chapters" / "05_implementation.ipynb"

from ropegeo.book.exercises import check, exercise_ids
from ropegeo.book.exercises.ch05 import (SUSPECT_DECLARED, PADDING, PROMPT, TABLE_DECLARED, TABLE_KEY, TABLE_QUERY, suspect_rope,
                                    table_rope)


def stub(*args, **kwargs):
    raise NotImplementedError


def test_all_checks_registered():
    assert set(exercise_ids("ch05")) == {"ch05-permutation", "ch05-bfloat16-position", "ch05-padding-offset",
                                         "ch05-rope-half", "ch05-diagnose", "ch05-table-size",
                                         "ch05-query-ahead"}


@pytest.mark.parametrize("ex", ["ch05-permutation", "ch05-bfloat16-position", "ch05-padding-offset",
                                "ch05-rope-half", "ch05-diagnose", "ch05-table-size", "ch05-query-ahead"])
def test_stubs_fail(ex):
    assert not check(ex, None)
    assert not check(ex, ...)
    fb = check(ex, stub)
    assert not fb


# ---- permutation: derived from the definitions of the two layouts
def _perm_by_definition(d):
    """x_interleaved = x_half[perm]: interleaved slot 2i holds half-split coordinate i, slot 2i + 1 holds i + d/2."""
    perm = np.empty(d, dtype=int)
    for i in range(d // 2):
        perm[2 * i] = i
        perm[2 * i + 1] = i + d // 2
    return perm


def test_permutation():
    p = _perm_by_definition(12)
    # the rotation commutes with it: rotating half-split then permuting = permuting then rotating interleaved
    from ropegeo.rotation import apply_rope

    x = np.random.default_rng(0).normal(size=(3, 12))
    pos = np.array([0, 7, 300])
    np.testing.assert_allclose(apply_rope(x, pos, pairing="half")[:, p], apply_rope(x[:, p], pos, pairing="interleaved"),
                               atol=1e-12)
    assert check("ch05-permutation", p)
    assert check("ch05-permutation", p.astype(float))
    assert "other direction" in check("ch05-permutation", np.argsort(p)).message
    assert "identity" in check("ch05-permutation", np.arange(12)).message
    assert "exactly once" in check("ch05-permutation", [0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).message
    assert "shape" in check("ch05-permutation", np.arange(8)).message
    assert "pair i" in check("ch05-permutation", np.roll(p, 1)).message
    # the message never contains the answer
    for bad in (np.argsort(p), np.arange(12), np.roll(p, 1)):
        assert str(p.tolist()) not in check("ch05-permutation", bad).message


def test_bfloat16_position():
    # bfloat16 keeps 8 significant bits: between 1024 and 2048 its numbers are 2**(10-7) = 8 apart,
    # so 2021 sits between 2016 and 2024 and rounds to 2024, three radians off for theta_0 = 1
    grid = np.arange(1024, 2048, 8)
    rounded = float(grid[np.argmin(np.abs(grid - 2021))])
    assert rounded == float(np.float32(2021).astype(ml_dtypes.bfloat16)) == 2024.0
    cost = abs(2021 - rounded) * 1.0
    assert check("ch05-bfloat16-position", (rounded, cost))
    assert check("ch05-bfloat16-position", [int(rounded), int(cost)])
    assert "11 significant bits" in check("ch05-bfloat16-position", (2021, 0)).message
    assert "nearest bfloat16 number" in check("ch05-bfloat16-position", (2016, 5)).message
    assert "nearest bfloat16 number" in check("ch05-bfloat16-position", (2020, 1)).message
    assert "degrees" in check("ch05-bfloat16-position", (rounded, np.degrees(cost))).message
    assert "frequency" in check("ch05-bfloat16-position", (rounded, 0.5)).message
    assert "exactly" in check("ch05-bfloat16-position", (rounded, 3.01)).message
    negative = check("ch05-bfloat16-position", (rounded, -cost))  # the position error taken the other way round
    assert not negative and "drop the sign" in negative.message, negative.message
    assert "pair" in check("ch05-bfloat16-position", 2024).message
    assert "cast it" in check("ch05-bfloat16-position", (4000, 1)).message
    # never reveals the answer
    for wrong_answer in ((2016, 5), (2021, 0), (rounded, 0.5)):
        assert "2024" not in check("ch05-bfloat16-position", wrong_answer).message


def test_bfloat16_position_is_not_printed_by_the_chapter():
    # the chapter must not print the exercise's rounding (issue 25: cell 39 printed "1,001 as 1,000")
    text = NB.read_text()
    assert "2,021 as" not in text and "2021 as" not in text


def test_padding_offset():
    # with mask-based ids the next real token is at PROMPT; counting slots puts it at PADDING + PROMPT
    answer = (PADDING + PROMPT) - PROMPT
    assert check("ch05-padding-offset", answer)
    assert "wrong sign" in check("ch05-padding-offset", -answer).message
    assert "position the new token is given" in check("ch05-padding-offset", PADDING + PROMPT).message
    assert "zero" in check("ch05-padding-offset", 0).message
    assert "compare the position" in check("ch05-padding-offset", 42).message


def _half(x, positions, base=10_000.0, width=None):
    """Half-split rotation of all of x, with the frequencies of a head of ``width`` (default: x's own)."""
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2) / (width or d))
    ang = np.asarray(positions, dtype=float)[:, None] * inv
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)], axis=-1)


def rope_partial_solution(x, positions, rotary_dim):
    x = np.asarray(x, dtype=float)
    return np.concatenate([_half(x[..., :rotary_dim], positions), x[..., rotary_dim:]], axis=-1)


def rope_interleaved(x, positions, rotary_dim):
    x = np.asarray(x, dtype=float)
    r = rotary_dim
    ang = np.asarray(positions, dtype=float)[:, None] * 10_000.0 ** (-np.arange(0, r, 2) / r)
    a, b = x[..., 0:r:2], x[..., 1:r:2]
    out = x.copy()
    out[..., 0:r:2] = a * np.cos(ang) - b * np.sin(ang)
    out[..., 1:r:2] = a * np.sin(ang) + b * np.cos(ang)
    return out


def test_rope_half():
    from ropegeo.rotation import apply_rope

    x, p = np.random.default_rng(2).normal(size=(5, 80)), np.arange(5) * 321
    assert np.allclose(rope_partial_solution(x, p, 20), apply_rope(x, p, rotary_dim=20, pairing="half"))
    assert check("ch05-rope-half", rope_partial_solution)
    fb = check("ch05-rope-half", rope_interleaved)
    assert not fb and "interleaved layout, while the declared convention is half-split" in fb.message
    # a copy of the chapter's whole-head helper (cell 7's rope_with(rotate_half, ...)) rotates every coordinate
    fb = check("ch05-rope-half", lambda x, p, r: _half(x, p))
    assert not fb and "while the declared rotary dim is 8" in fb.message
    # frequencies spread over the whole head instead of the rotary part
    spread = lambda x, p, r: np.concatenate([_half(np.asarray(x)[..., :r], p, width=np.shape(x)[-1]),  # noqa: E731
                                             np.asarray(x)[..., r:]], axis=-1)
    fb = check("ch05-rope-half", spread)
    assert not fb and "frequencies" in fb.message
    wrong_base = lambda x, p, r: np.concatenate([_half(np.asarray(x)[..., :r], p, 500_000.0),  # noqa: E731
                                                 np.asarray(x)[..., r:]], axis=-1)
    fb = check("ch05-rope-half", wrong_base)
    assert not fb and "base" in fb.message
    fb = check("ch05-rope-half", lambda x, p, r: np.asarray(x)[..., :4])
    assert not fb and "cannot call it" in fb.message
    assert "expected a function" in check("ch05-rope-half", 3).message


def test_diagnose():
    # independent: the angle of coordinate j at several positions, fitted as a frequency, named by pair
    f = suspect_rope()
    d, base = SUSPECT_DECLARED["head_dim"], SUSPECT_DECLARED["base"]
    theta = [base ** (-2 * i / d) for i in range(d // 2)]
    found = []
    for j in range(d):
        e = np.zeros(d)
        e[j] = 1.0
        cosines = [f(e[None], [p])[0][j] for p in (1, 2, 3)]
        # the pair i whose cos(p theta_i) matches at every probe position
        fits = [i for i, t in enumerate(theta) if all(abs(c - math.cos(p * t)) < 1e-12 for p, c in zip((1, 2, 3), cosines))]
        assert len(fits) == 1
        found.append(fits[0])
    assert found == [j // 2 for j in range(d)]
    # the evidence the exercise points at: Gate A fails the norm check (not a rotation), the layout passes
    from ropegeo.gates.a.gate import gate_a

    rep = gate_a(f, **SUSPECT_DECLARED)
    assert "norm" in rep.failed and "layout" not in rep.failed
    assert check("ch05-diagnose", found)
    assert check("ch05-diagnose", np.array(found))
    assert "declaration" in check("ch05-diagnose", [j % (d // 2) for j in range(d)]).message
    assert "reversed" in check("ch05-diagnose", [d // 2 - 1 - j // 2 for j in range(d)]).message
    assert "2 of the 32" in check("ch05-diagnose", [1, 1] + found[2:]).message
    assert "32 pair indices" in check("ch05-diagnose", found[:5]).message
    assert "text" in check("ch05-diagnose", "cache-off-by-one").message
    assert "whole" in check("ch05-diagnose", [0.5] * d).message


# ---- odd answers: a specific one-line "not yet", never an exception --------------------------------
@pytest.mark.parametrize("answer, fragment", [
    ("3", "text"), (b"3", "text"), (3.5, "not a whole number"), (10**400, "far outside the range"),
    (float("inf"), "finite"), (float("nan"), "finite"), (True, "bool"),
])
def test_padding_offset_needs_a_number(answer, fragment):
    fb = check("ch05-padding-offset", answer)
    assert not fb and fragment in fb.message


def test_padding_offset_accepts_numeric_types():
    answer = (PADDING + PROMPT) - PROMPT
    assert check("ch05-padding-offset", float(answer))
    assert check("ch05-padding-offset", np.int64(answer))


@pytest.mark.parametrize("answer, fragment", [
    ((10**400, 1), "far outside the range"),
    ((1000, 10**400), "far outside the range"),
    ((float("inf"), 1), "finite"),
    (("1000", "1"), "text"),
    (range(10**20), "far too many"),
    ({1000: 1}, "dict"),
    ((1000, 1, 2), "pair"),
])
def test_bfloat16_position_odd_answers(answer, fragment):
    fb = check("ch05-bfloat16-position", answer)
    assert not fb and fragment in fb.message


@pytest.mark.parametrize("answer, fragment", [
    (range(10**20), "far too many"), ([10**400] * 12, "far outside the range"), ([np.inf] * 12, "finite"),
    (np.ones((2, 4)), "shape (2, 4)"), ("01234567", "text"), ([0.5] * 12, "not a whole number"),
])
def test_permutation_odd_answers(answer, fragment):
    fb = check("ch05-permutation", answer)
    assert not fb and fragment in fb.message


@pytest.mark.parametrize("fn, fragment", [
    (lambda x, p, r: 1 / 0, "raised ZeroDivisionError"),
    (lambda x, p, r: x[100], "raised IndexError"),
    (lambda x, p: x, "raised TypeError"),
    (lambda x, p, r, q: x, "raised TypeError"),
])
def test_rope_half_reports_the_students_failure(fn, fragment):
    fb = check("ch05-rope-half", fn)
    assert not fb and fragment in fb.message and "\n" not in fb.message


def test_rope_half_recursion_is_reported():
    def forever(x, p, r):
        return forever(x, p, r)

    fb = check("ch05-rope-half", forever)
    assert not fb and "raised RecursionError" in fb.message


def test_diagnose_long_text_is_shortened():
    fb = check("ch05-diagnose", "cache\n" * 10_000)
    assert not fb and "\n" not in fb.message and len(fb.message) <= 300


# ---- table size: the period of the rotation, found by brute force (no Gate A)
def _period_by_scan(f, d, limit=20_000):
    """Smallest n > 0 with f(x, n) == x (a wrapped table returns to its first row)."""
    x = np.random.default_rng(11).normal(size=d)
    n = np.arange(1, limit)
    y = f(np.tile(x, (n.size, 1)), n)
    hit = np.flatnonzero(np.linalg.norm(y - x, axis=1) < 1e-9 * np.linalg.norm(x))
    return int(n[hit[0]]) if hit.size else None


def _seen_offset(f, d, m, n):
    """The offset delta = n - m a score sees, by brute force: the displacement whose plain rotation matches it."""
    from ropegeo.rotation import apply_rope

    rng = np.random.default_rng(5)
    q, k = rng.normal(size=(2, d))
    s = f(q[None], [m])[0] @ f(k[None], [n])[0]
    offs = np.arange(-8000, 8001)
    cand = apply_rope(np.tile(k, (offs.size, 1)), offs) @ q  # score of q at 0 against k at delta
    return int(offs[np.argmin(np.abs(cand - s))])


def _length_by_scan(f):
    """The table's length as the student measures it, written independently: the period of the rotation."""
    return _period_by_scan(f, TABLE_DECLARED["head_dim"])


def test_table_size():
    f = table_rope()
    rows = _period_by_scan(f, TABLE_DECLARED["head_dim"])
    assert rows is not None and rows & (rows - 1) != 0  # not a power of two
    seen = _seen_offset(f, TABLE_DECLARED["head_dim"], TABLE_QUERY, TABLE_KEY)
    assert seen != TABLE_KEY - TABLE_QUERY and seen > 0  # the query now reads as before the key
    assert check("ch05-table-size", (_length_by_scan, seen))
    assert check("ch05-table-size", [_length_by_scan, float(seen)])
    def graded(offset):
        return check("ch05-table-size", (_length_by_scan, offset)).message
    assert "one row more" in graded(TABLE_KEY % (rows - 1) - TABLE_QUERY % (rows - 1))
    assert "8,192 rows" in graded(TABLE_KEY % 8192 - TABLE_QUERY % 8192)
    assert "true one" in graded(TABLE_KEY - TABLE_QUERY)
    assert "sign" in graded(-seen)
    assert "row the query is read from" in graded(TABLE_QUERY % rows)
    assert "modulo" in graded(17)
    assert not check("ch05-table-size", "many")
    assert not check("ch05-table-size", seen)  # the offset alone: the measured length is graded too
    assert not check("ch05-table-size", (rows, seen))  # a number read off Gate A is not a measurement


def test_table_size_grades_the_measurement():
    # the length is graded on tables the student never saw: a function that knows the answer fails, and so
    # does one that is off by a row; a function that raises is reported
    rows = _period_by_scan(table_rope(), TABLE_DECLARED["head_dim"])
    seen = _seen_offset(table_rope(), TABLE_DECLARED["head_dim"], TABLE_QUERY, TABLE_KEY)
    knows = check("ch05-table-size", (lambda f: rows, seen))
    assert not knows and "must measure the table it is given" in knows.message
    short = check("ch05-table-size", (lambda f: _length_by_scan(f) - 1, seen))
    assert not short and "one short" in short.message and f"{rows:,}" not in short.message
    other = check("ch05-table-size", (lambda f: 4096, seen))
    assert not other and "not this table's length" in other.message and f"{rows:,}" not in other.message
    raises = check("ch05-table-size", (lambda f: 1 / 0, seen))
    assert not raises and "raised ZeroDivisionError" in raises.message
    # the other tables are measured by the scan as well: each is a table of its own length
    from ropegeo.book.exercises.ch05 import _OTHER_ROWS
    assert [_length_by_scan(table_rope(n)) for n in _OTHER_ROWS] == list(_OTHER_ROWS) and rows not in _OTHER_ROWS
    assert max(_OTHER_ROWS) <= 16_384  # the exercise promises tables of up to 16,384 rows


def test_table_size_with_gate_a():
    from ropegeo.gates.a.gate import gate_a

    f = table_rope()
    assert gate_a(f, max_position=4096, **TABLE_DECLARED).passed  # every probe below the table: blind
    r = gate_a(f, **TABLE_DECLARED)
    assert r.failed == ["context"] and r.defects == ["position-id"]
    assert f"P mod {_period_by_scan(f, 32):,}" in r.diagnosis


# ---- query ahead (a query one past the cache): the check runs Gate A on the student's cache; caches written here by hand
def _rot16(x, positions):
    """Interleaved rotation written out: pair i is (2i, 2i + 1), angle p * 10000 ** (-2 i / 16)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    ang = np.asarray(positions, dtype=float)[:, None] * 10_000.0 ** (-np.arange(0, 16, 2) / 16)
    out = x.copy()
    out[:, 0::2] = x[:, 0::2] * np.cos(ang) - x[:, 1::2] * np.sin(ang)
    out[:, 1::2] = x[:, 0::2] * np.sin(ang) + x[:, 1::2] * np.cos(ang)
    return out


class _Cache:
    def __init__(self, slip=0, restart=False, key_slip=0):  # slip moves the query, key_slip the new key
        self.slip, self.restart, self.key_slip = slip, restart, key_slip
        self.keys = self.values = np.zeros((0, 16))

    def __call__(self, x, positions, role="query"):
        x = np.asarray(x, dtype=float)
        if role == "value":
            return x.copy()
        pos = np.broadcast_to(np.asarray(positions), x.shape[:-1]).reshape(-1)
        return _rot16(x.reshape(-1, 16), pos).reshape(x.shape)

    def prefill(self, keys, values):
        self.keys, self.values = self(keys, np.arange(len(keys)), "key"), np.array(values, dtype=float)

    def decode_step(self, q, k, v):
        p = 0 if self.restart else len(self.keys) + self.slip
        pk = 0 if self.restart else len(self.keys) + self.key_slip
        self.keys, self.values = np.vstack([self.keys, _rot16(k, [pk])]), np.vstack([self.values, v])
        return _rot16(q, [p])[0], self.keys.copy(), self.values.copy()


def test_query_ahead_passes_the_deliberate_slip():
    fb = check("ch05-query-ahead", _Cache(slip=1))
    assert fb and "one position past" in fb.message, fb.message


@pytest.mark.parametrize("cache,words", [(_Cache(slip=0), "finds nothing"), (_Cache(slip=2), "another position"),
                                         (_Cache(slip=-1), "another position"), (_Cache(restart=True), "another decoding"),
                                         (_Cache(slip=1, key_slip=1), "moved together"),
                                         (_Cache(key_slip=1), "you moved the key")])
def test_query_ahead_rejects_other_caches(cache, words):
    fb = check("ch05-query-ahead", cache)
    assert not fb and words in fb.message, fb.message


def test_query_ahead_rejects_a_plain_function_and_the_class():
    assert "prefill" in check("ch05-query-ahead", lambda x, p: _rot16(x, p)).message
    assert "instance" in check("ch05-query-ahead", _Cache).message
