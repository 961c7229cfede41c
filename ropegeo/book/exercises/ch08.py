"""Checks for the exercises of chapter 8 (one frequency bank shared between position axes)."""

from __future__ import annotations

import math

import numpy as np

from ropegeo.book.exercises import as_float_array, as_items, as_whole, call_student, correct, exercise, read_each, wrong
from ropegeo.toy.axial_heads import split_study
from ropegeo.frequencies import frequencies
from ropegeo.multiaxis import axis_frequencies

# ---- problem data shared with the notebook -------------------------------------------------

#: ch08-fastest-width: the sections of the two layouts (pairs of a 128-wide head).
BLOCKED_SECTIONS, INTERLEAVED_SECTIONS = (16, 24, 24), (24, 20, 20)

#: ch08-axial-floor: the (head width, base) cases the check asks the student's function about.
AXIAL_CASES = ((64, 100.0), (8, 100.0), (16, 10_000.0), (128, 10.0))

#: ch08-interleave: the section lists the check asks about (each fits its interleaved slots).
INTERLEAVE_CASES = ((24, 20, 20), (22, 21, 21), (2, 1, 1), (4, 1, 1), (11, 11, 10), (3, 3, 2))

#: ch08-slowest-usable: the grid task of the chapter (pairs of base 100, grid, target, steps, seeds, mass).
USABLE_TASK = dict(pairs=8, base=100.0, grid=(8, 8), target=(2, 3), steps=300, seeds=(0, 1, 2), mass=0.5)


def _blocked_axes(sections) -> list:
    out = []
    for axis, n in enumerate(sections):
        out += [axis] * n
    return out


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


@exercise("ch08-fastest-width")
def _fastest_width(answer):
    items, bad = as_items(answer, "a pair (blocked, interleaved) of pair indices", max_items=8)
    if items is None or len(items) != 2:
        return bad or wrong("expected a pair (blocked, interleaved): the index of the fastest width pair in each layout.")
    got, bad = read_each(items, as_whole, "pair indices as whole numbers")
    if bad:
        return bad
    want_b = _blocked_axes(BLOCKED_SECTIONS).index(2)
    want_i = _interleaved_axes(INTERLEAVED_SECTIONS).index(2)
    if got[0] != want_b:
        if got[0] == want_b - 1 or got[0] == want_b + 1:
            return wrong("blocked: off by one; pairs are counted from 0 and width's block starts after the other two.")
        if got[0] == _blocked_axes(BLOCKED_SECTIONS).index(1):
            return wrong("blocked: that is where height starts; width is the third section.")
        return wrong("blocked: add up the sections that come before width.")
    if got[1] != want_i:
        if got[1] == want_b:
            return wrong("interleaved: the sections are no longer contiguous blocks; width takes every third slot.")
        return wrong("interleaved: list the slots width takes, starting from its offset.")
    return correct(f"width's fastest pair is pair {want_b} when blocked and pair {want_i} when interleaved.")


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
        return wrong(f"for d = {d}, b = {b:g} your values differ from K(dx, 0).")
    return correct("K(dx, 0) is one half plus half the kernel of the x bank, so it never drops below 0.")


@exercise("ch08-interleave")
def _interleave(answer):
    if not callable(answer):
        return wrong("expected a function interleave(sections) returning one axis per pair.")
    for sections in INTERLEAVE_CASES:
        got, err = call_student(answer, tuple(sections))
        if err:
            return wrong(err)
        got, bad = as_float_array(got, f"for sections {list(sections)} what your function returned")
        if bad:
            return bad
        want = np.array(_interleaved_axes(sections), dtype=float)
        got = got.reshape(-1)
        if got.shape != want.shape:
            return wrong(f"for sections {list(sections)} expected {want.size} entries (one per pair), got {got.size}.")
        if np.array_equal(got, want):
            continue
        if np.array_equal(got, np.array(_blocked_axes(sections), dtype=float)):
            return wrong("that is the blocked layout of Qwen2-VL; interleaving deals the slots out every third pair.")
        if np.array_equal(got, np.arange(want.size) % 3):
            return wrong("a plain round-robin ignores the sections: height and width stop at 3 times their section.")
        return wrong(f"for sections {list(sections)} your layout differs at pair {int(np.flatnonzero(got != want)[0])}.")
    return correct("your layout matches apply_interleaved_mrope's for every section list tried.")


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
    turns = frequencies(2 * pairs, USABLE_TASK["base"])[j] * USABLE_TASK["grid"][1] / (2 * math.pi)
    return correct(f"pair {j} is the slowest usable one: {here:.2f} on the target; it turns {turns:.2f} of a turn "
                   "across the grid.")
