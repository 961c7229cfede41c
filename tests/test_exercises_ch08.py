"""Every chapter-8 exercise check: it rejects stubs and typical mistakes (with the intended
message) and accepts a solution derived here independently."""

import math

import numpy as np
import pytest

from ropegeo.book.exercises import check, exercise_ids


def stub(*args, **kwargs):
    raise NotImplementedError


def test_all_chapter_checks_registered():
    assert set(exercise_ids("ch08")) == {"ch08-fastest-width", "ch08-axial-floor", "ch08-interleave",
                                         "ch08-slowest-usable"}


@pytest.mark.parametrize("ex", ["ch08-fastest-width", "ch08-slowest-usable"])
def test_value_stubs_fail(ex):
    fb = check(ex, None)
    assert not fb and "no answer yet" in fb.message
    assert not check(ex, ...)


@pytest.mark.parametrize("ex", ["ch08-axial-floor", "ch08-interleave"])
def test_function_stubs_fail(ex):
    fb = check(ex, stub)
    assert not fb and "NotImplementedError" in fb.message
    assert not check(ex, None)


# ---- ch08-fastest-width ---------------------------------------------------------------------------


def test_fastest_width():
    blocked = 16 + 24  # pairs before width's block
    interleaved = 2  # width's first slot
    assert check("ch08-fastest-width", (blocked, interleaved))
    assert check("ch08-fastest-width", [np.int64(40), 2.0])
    assert "off by one" in check("ch08-fastest-width", (39, 2)).message
    assert "where height starts" in check("ch08-fastest-width", (16, 2)).message
    assert "sections that come before" in check("ch08-fastest-width", (50, 2)).message
    assert "every third slot" in check("ch08-fastest-width", (40, 40)).message
    assert "offset" in check("ch08-fastest-width", (40, 5)).message
    assert "pair" in check("ch08-fastest-width", 40).message


# ---- ch08-axial-floor -----------------------------------------------------------------------------


def test_axial_floor():
    def solution(dx, d, b):
        dx = np.asarray(dx, dtype=float)
        fx = np.array([b ** (-4.0 * i / d) for i in range(d // 4)])
        return 0.5 + 0.5 * np.cos(np.multiply.outer(dx, fx)).mean(-1)

    assert check("ch08-axial-floor", solution)
    x_only = lambda dx, d, b: np.cos(np.multiply.outer(np.asarray(dx, float), b ** (-4.0 * np.arange(d // 4) / d))).mean(-1)
    assert "y pairs do not turn" in check("ch08-axial-floor", x_only).message
    full = lambda dx, d, b: np.cos(np.multiply.outer(np.asarray(dx, float), b ** (-2.0 * np.arange(d // 2) / d))).mean(-1)
    assert "half of the pairs" in check("ch08-axial-floor", full).message
    assert "differ" in check("ch08-axial-floor", lambda dx, d, b: np.ones(np.shape(dx))).message
    assert "values" in check("ch08-axial-floor", lambda dx, d, b: 1.0).message


# ---- ch08-interleave ------------------------------------------------------------------------------


def test_interleave():
    def solution(sections):
        out = [0] * sum(sections)
        out[1:3 * sections[1]:3] = [1] * len(range(1, 3 * sections[1], 3))
        out[2:3 * sections[2]:3] = [2] * len(range(2, 3 * sections[2], 3))
        return out

    assert check("ch08-interleave", solution)
    blocked = lambda s: [a for a, n in enumerate(s) for _ in range(n)]
    assert "blocked layout" in check("ch08-interleave", blocked).message
    assert "ignores the sections" in check("ch08-interleave", lambda s: [i % 3 for i in range(sum(s))]).message
    assert "differs at pair" in check("ch08-interleave", lambda s: [0] * sum(s)).message
    assert "one per pair" in check("ch08-interleave", lambda s: [0]).message


# ---- ch08-slowest-usable --------------------------------------------------------------------------


def test_slowest_usable():
    # the chapter's sweep: the attention on the target falls with the pair's speed; 4 is the last at 0.5 or more
    assert check("ch08-slowest-usable", 4)
    assert "try a faster pair" in check("ch08-slowest-usable", 5).message
    assert "slower pair still" in check("ch08-slowest-usable", 3).message
    assert "indexed 0 to 7" in check("ch08-slowest-usable", 8).message
    assert "whole number" in check("ch08-slowest-usable", 4.5).message
