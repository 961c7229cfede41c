"""Every chapter-8 exercise check: it rejects stubs and typical mistakes (with the intended
message) and accepts a solution derived here independently."""

import math
from pathlib import Path

import nbformat
import numpy as np
import pytest

from ropegeo.book.exercises import check, exercise_ids

NB = Path(__file__).resolve().parents[1] / "chapters" / "08_multi_axis.ipynb"


def stub(*args, **kwargs):
    raise NotImplementedError


def test_all_chapter_checks_registered():
    assert set(exercise_ids("ch08")) == {"ch08-fastest-width", "ch08-axial-floor", "ch08-position-ids",
                                         "ch08-slowest-usable"}


@pytest.mark.parametrize("ex", ["ch08-fastest-width", "ch08-slowest-usable"])
def test_value_stubs_fail(ex):
    fb = check(ex, None)
    assert not fb and "no answer yet" in fb.message
    assert not check(ex, ...)


@pytest.mark.parametrize("ex", ["ch08-axial-floor", "ch08-position-ids"])
def test_function_stubs_fail(ex):
    fb = check(ex, stub)
    assert not fb and "NotImplementedError" in fb.message
    assert not check(ex, None)


# ---- ch08-fastest-width ---------------------------------------------------------------------------


def test_fastest_width():
    # width's first pair: 40 when blocked (after 16 + 24), slot 2 when interleaved; pair i turns base ** (-2i/128)
    blocked, interleaved = 2 * math.pi * 1e6 ** (80 / 128), 2 * math.pi * 5e6 ** (4 / 128)
    assert 35_000 < blocked < 36_000 and 10 < interleaved < 10.5
    ok = check("ch08-fastest-width", (blocked, interleaved))
    assert ok
    # the exercise asks for the exponents: B^(5/8) against B^(1/32), so x5 moves them by 2.7 and 1.05
    assert "2 pi B^(80/128)" in ok.message and "2 pi B^(4/128)" in ok.message
    assert 2.7 < 5 ** (80 / 128) < 2.75 and 1.05 < 5 ** (4 / 128) < 1.06
    assert check("ch08-fastest-width", [np.float32(blocked), interleaved])  # float32 keeps 1e-7 relative
    assert "pair indices" in check("ch08-fastest-width", (40, 2)).message
    assert "frequency" in check("ch08-fastest-width", (2 * math.pi / blocked, interleaved)).message
    assert "2 pi" in check("ch08-fastest-width", (blocked / (2 * math.pi), interleaved)).message
    assert "off by one" in check("ch08-fastest-width", (2 * math.pi * 1e6 ** (78 / 128), interleaved)).message
    assert "Qwen2-VL's base" in check("ch08-fastest-width", (blocked, 2 * math.pi * 1e6 ** (4 / 128))).message
    assert "contiguous" in check("ch08-fastest-width", (blocked, 2 * math.pi * 5e6 ** (80 / 128))).message
    assert "interleaved" in check("ch08-fastest-width", (blocked, 11.0)).message
    assert "blocked" in check("ch08-fastest-width", (30_000.0, interleaved)).message
    assert "wavelength" in check("ch08-fastest-width", 40).message
    # the success message's own rounding passes, each end alone and both together
    assert "35,333" in ok.message and "10.17" in ok.message
    for answer in ((35_333, interleaved), (blocked, 10.17), (35_333, 10.17)):
        assert check("ch08-fastest-width", answer), answer
    # a value is read as the pair with the nearest wavelength before the pair choice is blamed
    right_b = check("ch08-fastest-width", (36_000.0, interleaved)).message  # pair 40, wrong arithmetic (2 %)
    assert "blocked: right pair" in right_b and "find the first pair" not in right_b
    right_i = check("ch08-fastest-width", (blocked, 10.5)).message  # pair 2, wrong arithmetic (3 %)
    assert "interleaved: right pair" in right_i and "find the first pair" not in right_i
    for pair in (39, 41):
        assert "off by one" in check("ch08-fastest-width", (2 * math.pi * 1e6 ** (2 * pair / 128), interleaved)).message
    far_b = check("ch08-fastest-width", (2 * math.pi * 1e6 ** (2 * 20 / 128), interleaved)).message
    assert "blocked: find the first pair" in far_b
    far_i = check("ch08-fastest-width", (blocked, 2 * math.pi * 5e6 ** (2 * 5 / 128))).message
    assert "interleaved: find the first pair" in far_i


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


# ---- ch08-position-ids ---------------------------------------------------------------------------


def _ids(segments, after_image):
    """Qwen2-VL's get_rope_index written out: ``after_image(start, h, w)`` is where text resumes."""
    t, hh, ww, start = [], [], [], 0
    for seg in segments:
        if isinstance(seg, tuple):
            h, w = seg
            for k in range(h * w):
                t.append(start), hh.append(start + k // w), ww.append(start + k % w)
            start = after_image(start, h, w)
        else:
            for k in range(seg):
                t.append(start + k), hh.append(start + k), ww.append(start + k)
            start += seg
    return np.array([t, hh, ww])


def test_position_ids():
    right = lambda s: _ids(s, lambda st, h, w: st + max(h - 1, w - 1) + 1)
    assert check("ch08-position-ids", right)
    assert check("ch08-position-ids", lambda s: right(s).astype(float))
    # a 32 x 48 image: 1,536 tokens, the text after it 48 ids on
    ids = right([(32, 48), 1])
    assert ids.shape == (3, 32 * 48 + 1) and ids[0, -1] == 48
    by_count = lambda s: _ids(s, lambda st, h, w: st + h * w)
    assert "number of tokens" in check("ch08-position-ids", by_count).message
    at_max = lambda s: _ids(s, lambda st, h, w: st + max(h - 1, w - 1))
    assert "not at it" in check("ch08-position-ids", at_max).message
    assert "row by row" in check("ch08-position-ids", _col_major).message
    assert "differ first" in check("ch08-position-ids", lambda s: right(s) + 1).message
    assert "shape" in check("ch08-position-ids", lambda s: right(s)[:2]).message


def _col_major(segments):
    """The ids right, but an image's tokens column by column."""
    t, hh, ww, start = [], [], [], 0
    for seg in segments:
        if isinstance(seg, tuple):
            h, w = seg
            for k in range(h * w):
                t.append(start), hh.append(start + k % h), ww.append(start + k // h)
            start += max(h, w)
        else:
            for k in range(seg):
                t.append(start + k), hh.append(start + k), ww.append(start + k)
            start += seg
    return np.array([t, hh, ww])


# ---- ch08-slowest-usable --------------------------------------------------------------------------


def test_slowest_usable():
    # the chapter's sweep: the attention on the target falls with the pair's speed; 4 is the last at 0.5 or more
    ok = check("ch08-slowest-usable", 4)
    assert ok
    # pair 4 of base 100 (16 wide) over the 8-row grid's 7 row steps: 100 ** (-8 / 16) * 7 / (2 pi) of a turn
    assert f"{0.1 * 7 / (2 * math.pi):.3f} of a turn over the grid's 7 row steps" in ok.message
    assert "try a faster pair" in check("ch08-slowest-usable", 5).message
    assert "slower pair still" in check("ch08-slowest-usable", 3).message
    assert "indexed 0 to 7" in check("ch08-slowest-usable", 8).message
    assert "whole number" in check("ch08-slowest-usable", 4.5).message


def test_position_ids_video_answer_in_the_solution():
    # the solution's Qwen2.5-VL video: two-frame temporal patches at 1.5 fps (tau = 4/3 s), tokens_per_second 2;
    # transformers truncates t * tau * r to an integer (.long()), here with exact fractions
    from fractions import Fraction
    ids = [int(t * Fraction(4, 3) * 2) for t in range(6)]
    nb = nbformat.read(NB, 4)
    solution = next(c.source for c in nb.cells if c.source.startswith("With $\\tau r = 8/3$"))
    assert ", ".join(map(str, ids)) in solution
    gaps = {b - a for a, b in zip(ids, ids[1:])}
    assert gaps == {2, 3} and "2 or 3 ids apart" in solution


def test_slowest_usable_solution_shape():
    # the solution: from pair 1 on the attention on the target falls with the pair's speed; pair 0 (a return within
    # the grid's 8 rows) does a little worse than pair 1. The check's own sweep, seeds 0-2, re-trained here.
    from ropegeo.frequencies import frequencies
    from ropegeo.multiaxis import axis_frequencies
    from ropegeo.toy.axial_heads import split_study
    theta = frequencies(16, 100.0)
    mass = []
    for j in range(8):
        assignment = np.zeros(8, dtype=int)
        assignment[j] = 1
        splits = {"s": axis_frequencies(theta, assignment, 2)}
        mass.append(split_study(splits, seeds=range(3), target=(2, 3), grid=(8, 8), steps=300)["s"]["target_mass"].mean())
    assert mass[0] < mass[1] and all(a > b for a, b in zip(mass[1:], mass[2:])), np.round(mass, 3)
    nb = nbformat.read(NB, 4)
    solution = next(c.source for c in nb.cells if c.source.startswith("From pair 1 on"))
    assert "Pair 0, the fastest" in solution
