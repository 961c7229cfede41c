"""Checks for the exercises of chapter 8 (one frequency bank shared between position axes)."""

from __future__ import annotations

import math

import numpy as np

from ropegeo.book.exercises import (as_float_array, as_items, as_number, as_whole, call_student, correct, exercise,
                                    read_each, wrong)
from ropegeo.toy.axial_heads import split_study
from ropegeo.frequencies import frequencies
from ropegeo.multiaxis import axis_frequencies

# ---- problem data shared with the notebook -------------------------------------------------

#: ch08-fastest-width: Qwen2-VL's blocked sections and base, Qwen3-VL's interleaved sections and shipped base.
BLOCKED_SECTIONS, BLOCKED_BASE = (16, 24, 24), 1e6
INTERLEAVED_SECTIONS, INTERLEAVED_BASE = (24, 20, 20), 5e6

#: ch08-axial-floor: the (head width, base) cases the check asks the student's function about.
AXIAL_CASES = ((64, 100.0), (8, 100.0), (16, 10_000.0), (128, 10.0))

#: ch08-position-ids: the token sequences the check asks about (an int: text tokens; (h, w): an image).
POSITION_CASES = ([3], [2, (2, 3), 2], [(4, 4)], [1, (3, 2), (2, 2), 4], [5, (1, 1), 1], [(2, 5), 3], [0, (6, 1), 2])

#: ch08-slowest-usable: the grid task of the chapter (pairs of base 100, grid, target, steps, seeds, mass).
USABLE_TASK = dict(pairs=8, base=100.0, grid=(8, 8), target=(2, 3), steps=300, seeds=(0, 1, 2), mass=0.5)


def _blocked_axes(sections) -> list:
    return [axis for axis, n in enumerate(sections) for _ in range(n)]


def _interleaved_axes(sections) -> list:
    """Reference written from the description (time everywhere, then height at 1, 4, ..., width at 2, 5, ...)."""
    out = [0] * sum(sections)
    for axis in (1, 2):
        slot = axis
        while slot < 3 * sections[axis]:
            out[slot] = axis
            slot += 3
    return out


# ---- checks --------------------------------------------------------------------------------


def _wavelength(pair: int, base: float) -> float:
    return 2 * math.pi * base ** (2 * pair / 128)


@exercise("ch08-fastest-width")
def _fastest_width(answer):
    items, bad = as_items(answer, "a pair (blocked, interleaved) of wavelengths in patches", max_items=8)
    if items is None or len(items) != 2:
        return bad or wrong("expected a pair (blocked, interleaved): the wavelength, in patches, of the fastest width "
                            "pair in each layout.")
    got, bad = read_each(items, as_number, "wavelengths as numbers")
    if bad:
        return bad
    pair_b, pair_i = _blocked_axes(BLOCKED_SECTIONS).index(2), _interleaved_axes(INTERLEAVED_SECTIONS).index(2)
    want = (_wavelength(pair_b, BLOCKED_BASE), _wavelength(pair_i, INTERLEAVED_BASE))
    tol = 1e-3  # the success message prints 35,333 and 10.17: its own rounding passes
    close = [math.isclose(g, w, rel_tol=tol) for g, w in zip(got, want)]
    if all(close):
        return correct(f"width's fastest pair is pair {pair_b} when blocked (wavelength {want[0]:,.0f} patches, "
                       f"2 pi B^({2 * pair_b}/128)) and pair {pair_i} in Qwen3-VL (wavelength {want[1]:.2f} "
                       f"patches, 2 pi B^({2 * pair_i}/128)).")
    if all(math.isclose(g, w, rel_tol=tol) for g, w in zip(got, want[::-1])):
        return wrong("both wavelengths are right but swapped: the pair is (blocked, interleaved), Qwen2-VL's first.")
    if got == [pair_b, pair_i] or [round(g) for g in got] == [pair_b, pair_i]:
        return wrong("those look like pair indices; the question asks how many patches one full turn of that pair takes.")
    for g, w in zip(got, want):
        if math.isclose(g, 2 * math.pi / w, rel_tol=tol):
            return wrong("that is a frequency in radians per patch; a wavelength is the distance of one full turn.")
        if math.isclose(g, w / (2 * math.pi), rel_tol=tol):
            return wrong("one full turn is 2 pi radians, not 1.")
    # the pair each value belongs to: the nearest wavelength at that base, on a log scale
    near = [min(range(64), key=lambda p: abs(math.log(max(g, 1e-300) / _wavelength(p, b))))
            for g, b in zip(got, (BLOCKED_BASE, INTERLEAVED_BASE))]
    if not close[0]:
        if near[0] == pair_b:
            return wrong("blocked: right pair, but not its wavelength: 2 pi times the base to the pair's exponent.")
        if abs(near[0] - pair_b) == 1:
            return wrong("blocked: off by one pair; pairs are counted from 0 and width's block comes after the other two.")
        return wrong("blocked: find the first pair that follows width, then its frequency at Qwen2-VL's base.")
    if math.isclose(got[1], _wavelength(pair_i, BLOCKED_BASE), rel_tol=tol):
        return wrong("interleaved: right pair, but Qwen3-VL does not use Qwen2-VL's base.")
    if math.isclose(got[1], _wavelength(pair_b, INTERLEAVED_BASE), rel_tol=tol):
        return wrong("interleaved: the sections are no longer contiguous blocks, so width's first pair moves.")
    if near[1] == pair_i:
        return wrong("interleaved: right pair, but not its wavelength: 2 pi times the base to the pair's exponent.")
    return wrong("interleaved: find the first pair that follows width in the interleaved layout, at Qwen3-VL's base.")


def _axial_reference(dx, d, b):
    # brute force: rotate a unit vector in every pair by its own angle and average the cosines
    quarter = d // 4
    fx = b ** (-4.0 * np.arange(quarter) / d)
    dx = np.asarray(dx, dtype=float)
    angles = np.concatenate([np.multiply.outer(dx, fx), np.zeros(dx.shape + (quarter,))], axis=-1)
    return np.cos(angles).mean(axis=-1)


@exercise("ch08-axial-floor")
def _axial_floor(answer):
    if not callable(answer):
        return wrong("expected a function axial_x(dx, d, b) returning K(dx, 0).")
    dx = np.array([0.0, 1.0, 2.0, 5.0, 17.0, 100.0])
    for d, b in AXIAL_CASES:
        got, err = call_student(answer, dx, d, b)
        if err:
            return wrong(err)
        got, bad = as_float_array(got, f"for d = {d}, b = {b:g} what your function returned")
        if bad:
            return bad
        want = _axial_reference(dx, d, b)
        if got.shape != want.shape:
            return wrong(f"for {dx.size} offsets expected {dx.size} values, got shape {got.shape}.")
        if np.allclose(got, want, rtol=1e-9, atol=1e-12):
            continue
        full = np.cos(np.multiply.outer(dx, frequencies(d // 2, b))).mean(axis=-1)
        if np.allclose(got, full, rtol=1e-9, atol=1e-12):
            return wrong("that is the kernel of the x pairs alone: the y pairs do not turn, and they count too.")
        if np.allclose(got, np.cos(np.multiply.outer(dx, frequencies(d, b))).mean(axis=-1), rtol=1e-9, atol=1e-12):
            return wrong("that is a one-axis head of width d; in RoPE-Axial each axis has only half of the pairs.")
        if np.allclose(got, 0.5 * full, rtol=1e-9, atol=1e-12):
            return wrong("at dx = 0 the kernel must be 1: the pairs that stand still count in the mean as well.")
        if np.allclose(got, 0.5 + 0.5 * np.cos(np.multiply.outer(dx, frequencies(d, b))).mean(axis=-1), rtol=1e-9,
                       atol=1e-12):
            return wrong("the x pairs carry the bank of a head half as wide, base ** (-4 i / d), not the full-width "
                         "bank base ** (-2 i / d).")
        return wrong(f"for d = {d}, b = {b:g} your values differ from K(dx, 0).")
    return correct("your K(dx, 0) matches RoPE-Axial's for every head width and base tried.")


def _position_ids(segments, resume=1, image_row_major=True, text_by_count=False) -> np.ndarray:
    """Reference written from Qwen2-VL's rule (and, with other flags, the check's typical mistakes)."""
    ids, nxt = [], 0
    for seg in segments:
        if isinstance(seg, tuple):
            h, w = seg
            rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
            if not image_row_major:
                rows, cols = rows.T, cols.T
            for r, c in zip(rows.ravel(), cols.ravel()):
                ids.append((nxt, nxt + r, nxt + c))
            nxt = nxt + h * w if text_by_count else nxt + max(h, w) - 1 + resume
        else:
            ids += [(nxt + i, nxt + i, nxt + i) for i in range(seg)]
            nxt += seg
    return np.array(ids, dtype=float).reshape(-1, 3).T


@exercise("ch08-position-ids")
def _position_ids_check(answer):
    if not callable(answer):
        return wrong("expected a function mrope_positions(segments) returning a (3, tokens) array of ids.")
    for segments in POSITION_CASES:
        got, err = call_student(answer, list(segments))
        if err:
            return wrong(err)
        got, bad = as_float_array(got, f"for {segments} what your function returned")
        if bad:
            return bad
        want = _position_ids(segments)
        if got.shape != want.shape:
            return wrong(f"for {segments} expected shape {want.shape} (time, height, width by token), got {got.shape}.")
        if np.array_equal(got, want):
            continue
        for flags, why in (({"text_by_count": True}, "after an image the ids do not advance by its number of tokens; "
                            "text resumes one past the largest id the image used."),
                           ({"resume": 0}, "text after an image starts one past the largest id used, not at it."),
                           ({"image_row_major": False}, "an image's tokens run row by row: the column id moves fastest.")):
            if np.array_equal(got, _position_ids(segments, **flags)):
                return wrong(why)
        return wrong(f"for {segments} your ids differ first at token {int(np.flatnonzero((got != want).any(axis=0))[0])}.")
    return correct("your ids match M-RoPE's for every sequence tried.")


def _usable_mass(j: int) -> float:
    t = USABLE_TASK
    assignment = np.zeros(t["pairs"], dtype=int)
    assignment[j] = 1
    F = axis_frequencies(frequencies(2 * t["pairs"], t["base"]), assignment, 2)
    r = split_study({"s": F}, seeds=t["seeds"], target=t["target"], grid=t["grid"], steps=t["steps"])
    return float(r["s"]["target_mass"].mean())


@exercise("ch08-slowest-usable")
def _slowest_usable(answer):
    j, bad = as_whole(answer, "one pair index j (0 is the fastest)")
    if bad:
        return bad
    pairs = USABLE_TASK["pairs"]
    if not 0 <= j < pairs:
        return wrong(f"the bank has {pairs} pairs, indexed 0 to {pairs - 1}.")
    limit = USABLE_TASK["mass"]
    here = _usable_mass(j)
    if here < limit:
        return wrong(f"with y on pair {j} the heads put {here:.2f} on the target on average, below {limit}: "
                     "try a faster pair.")
    if j + 1 < pairs and _usable_mass(j + 1) >= limit:
        return wrong(f"pair {j} works, but a slower pair still keeps at least {limit} on the target.")
    steps = USABLE_TASK["grid"][1] - 1  # row steps from the first row to the last
    turns = frequencies(2 * pairs, USABLE_TASK["base"])[j] * steps / (2 * math.pi)
    return correct(f"pair {j} is the slowest usable one: {here:.2f} on the target; it turns {turns:.3f} of a turn "
                   f"over the grid's {steps} row steps.")
