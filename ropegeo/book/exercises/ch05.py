"""Checks for the exercises of chapter 5 (one operator, many implementations: pairs, positions, precision)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

from ropegeo.book.broken import PositionDefect
from ropegeo.book.exercises import (as_items, as_number, as_whole, call_student, correct, exercise, need, need_function,
                                    short, read_each, wrong)
from ropegeo.gates.a.call import GateAError
from ropegeo.gates.a.gate import gate_a
from ropegeo.rotation import pairing_permutation

__all__ = ["suspect_rope", "SUSPECT_DECLARED", "PADDING", "PROMPT", "table_rope", "TABLE_DECLARED", "TABLE_QUERY",
           "TABLE_KEY", "CACHE_DECLARED"]


# ---- ch05-permutation: half-split -> interleaved for head dim 12 -----------------------------
PERM_DIM = 12


@exercise("ch05-permutation")
def _check_permutation(answer):
    if isinstance(answer, np.ndarray) and answer.ndim != 1:
        return wrong(f"expected {PERM_DIM} indices (one per coordinate of the head), got shape {answer.shape}")
    items = need(as_items(answer, f"an array of {PERM_DIM} integer indices", max_items=4096))
    if len(items) != PERM_DIM:
        return wrong(f"expected {PERM_DIM} indices (one per coordinate of the head), got shape ({len(items)},)")
    perm = np.array(need(read_each(items, as_whole, "indices as integers", limit=10**6)))
    if sorted(perm.tolist()) != list(range(PERM_DIM)):
        return wrong(f"a permutation lists each index 0..{PERM_DIM - 1} exactly once")
    half = PERM_DIM // 2
    truth = pairing_permutation(PERM_DIM, source="half", target="interleaved")
    if np.array_equal(perm, truth):
        return correct(f"x_half[perm] lays the half-split pairs out interleaved: pair i, at (i, i + {half}), lands on "
                       "(2i, 2i + 1).")
    if np.array_equal(perm, np.argsort(truth)):
        return wrong("that is the other direction (interleaved to half-split, the one the chapter printed for width "
                     "8); here the checkpoint is half-split and the code interleaved.")
    if np.array_equal(perm, np.arange(PERM_DIM)):
        return wrong(f"the identity leaves the pairs at (i, i + {half}); the interleaved layout needs them side by side.")
    return wrong(f"with x_interleaved = x_half[perm], coordinate 2i of the interleaved layout must be the first member "
                 f"of pair i (half-split coordinate i) and coordinate 2i + 1 its second member (i + {half}); yours is not.")


# ---- ch05-bfloat16-position: where bfloat16 puts position 2021, and what it costs ------------
#: the position of the exercise (not one of the probes Gate A's diagnoses print)
BF16_POSITION = 2021


@exercise("ch05-bfloat16-position")
def _check_bf16(answer):
    items = need(as_items(answer, "a pair (rounded_position, phase_cost_in_radians)", max_items=64))
    if len(items) != 2:
        return wrong("expected a pair (rounded_position, phase_cost_in_radians)")
    rounded = need(as_number(items[0], "the rounded position as a finite number"))
    cost = need(as_number(items[1], "the phase cost as a finite number (radians)"))
    p = BF16_POSITION
    truth = float(np.array(p, dtype=np.float64).astype(ml_dtypes.bfloat16))
    cost_truth = abs(p - truth) * 1.0  # the fastest pair turns 1 rad per position
    k = int(np.floor(np.log2(p)))  # p lies in the binade [2**k, 2**(k + 1))
    if rounded == p:
        return wrong(f"{p} is odd and above {2 ** k:,}, so it needs {k + 1} significant bits; bfloat16 keeps 8.")
    if rounded != truth:
        if abs(rounded - p) <= 2 ** (k - 7):
            return wrong(f"round to the nearest bfloat16 number: between {2 ** k:,} and {2 ** (k + 1):,} they are "
                         f"{int(2 ** (k - 7))} apart.")
        return wrong("that is not where bfloat16 rounds this position; cast it with ml_dtypes and look.")
    if abs(cost - cost_truth) <= 1e-9:
        return correct(f"{p} becomes {truth:g}; the fastest pair is then {cost_truth:g} rad off before cos and "
                       "sin add their own rounding.")
    if abs(cost - cost_truth) <= 0.05:
        return wrong("the rounding is right; the cost is a whole number of radians here (the position error times "
                     "1 rad per position), so give it exactly.")
    if abs(cost + cost_truth) <= 1e-9:
        return wrong("the rounding is right; the cost is a size, so drop the sign: the phase is off by the distance "
                     "between the two positions times the pair's frequency, whichever way the position moved.")
    if abs(cost - cost_truth * 180 / np.pi) <= 1e-6:
        return wrong("the rounding is right; give the cost in radians, not degrees.")
    return wrong("the rounding is right; the cost is the position error times the pair's frequency "
                 "(1 rad per position for the fastest pair).")


# ---- ch05-padding-offset: displacement error from counting pads ---------------------------
PADDING = 3
PROMPT = 5


@exercise("ch05-padding-offset")
def _check_padding(answer):
    value = need(as_whole(answer, "a number of positions (a whole number)"))
    # prefill ids from the mask: real tokens 0..PROMPT-1; decode id from the cache length with pads
    correct_pos = PROMPT
    given_pos = PADDING + PROMPT
    err = given_pos - correct_pos
    if value == err:
        return correct(f"the new token sits {err} positions too late, so every displacement to a prompt key is "
                       f"off by {err}: the padding slots were counted on the decoding side only.")
    if value == -err:
        return wrong("right size, wrong sign: the new token is placed later than it should be, so its "
                     "position minus the correct one is positive.")
    if value == given_pos:
        return wrong("that is the position the new token is given, not its error against the correct one.")
    if value == 0:
        return wrong("a shift of zero would need both sides counted the same way; here prefill and decoding "
                     "count different things.")
    return wrong("compare the position the decoding step assigns (from the cache length) with the one the "
                 "mask-based ids of the prompt imply for the next real token.")


# ---- ch05-rope-half: partial rotary, half-split over the rotary part, judged by Gate A ---------
@exercise("ch05-rope-half")
def _check_rope_half(answer):
    need_function(answer, f"expected a function rope_partial(x, positions, rotary_dim), got {type(answer).__name__}")
    # a stub raises NotImplementedError here (Gate A would count it as a refusal)
    need(call_student(answer, np.zeros((2, 16)), np.arange(2), 8, what="rope_partial(zeros (2, 16), arange(2), 8)"))
    try:
        for d, r in ((16, 8), (64, 32), (80, 20)):  # a whole-head helper rotates the pass-through coordinates too
            rep = gate_a(lambda x, p, r=r: answer(x, p, r), head_dim=d, rotary_dim=r, pairing="half")
            if not rep.passed:
                return wrong(f"Gate A (head dim {d}, rotary_dim {r}, half-split over the rotary part, base 10,000) "
                             f"fails {', '.join(rep.failed)}: {rep.diagnosis}")
    except GateAError as exc:
        return wrong(f"Gate A cannot call it: {exc}")
    return correct("Gate A passes it: half-split over the rotary part, base 10,000, at (16, 8), (64, 32) and (80, 20).")


# ---- ch05-diagnose: find the defect of a suspect implementation ---------------------------
#: What the suspect implementation declares (keyword arguments of gate_a).
SUSPECT_DECLARED = {"head_dim": 32, "pairing": "half", "base": 10_000.0}


def suspect_rope():
    """A rotary callable ``f(x, positions)`` with one wiring defect (``ch05-diagnose``).

    It declares :data:`SUSPECT_DECLARED`; what it does instead is the exercise.
    """
    base = SUSPECT_DECLARED["base"]

    def rope(x, positions):
        x = np.asarray(x, dtype=np.float64)
        d = x.shape[-1]
        angle = np.asarray(positions, dtype=np.float64)[..., None] * base ** (-np.arange(0, d, 2) / d)
        angle = np.repeat(angle, 2, axis=-1)  # the defect: a table laid out for interleaved pairs ...
        h = d // 2
        turned = np.concatenate([-x[..., h:], x[..., :h]], axis=-1)  # ... used with rotate_half
        return x * np.cos(angle) + turned * np.sin(angle)

    return rope


def _suspect_pairs() -> np.ndarray:
    """The rotary pair whose frequency each coordinate of the suspect turns at: j // 2."""
    return np.arange(SUSPECT_DECLARED["head_dim"]) // 2


@exercise("ch05-diagnose")
def _check_diagnose(answer):
    d = SUSPECT_DECLARED["head_dim"]
    if isinstance(answer, (str, bytes)):
        return wrong(f"expected {d} pair indices, one per coordinate, got the text {short(answer)}")
    items = need(as_items(answer, f"an array of {d} pair indices", max_items=4096))
    if len(items) != d:
        return wrong(f"expected {d} pair indices (one per coordinate of the head), got {len(items)}")
    pairs = np.array(need(read_each(items, as_whole, "pair indices as whole numbers", limit=10**6)))
    truth = _suspect_pairs()
    if np.array_equal(pairs, truth):
        return correct("coordinate j turns at the frequency of pair j // 2: the cos/sin table is laid out for "
                       "interleaved pairs while rotate_half pairs j with j + 16, so each plane gets two different "
                       "angles and the map is no rotation at all.")
    if np.array_equal(pairs, np.arange(d) % (d // 2)):
        return wrong("that is what the declaration (half-split) promises, not what the code does: rotate e_j at "
                     "position 1 and read the angle of coordinate j.")
    if np.array_equal(pairs, d // 2 - 1 - truth):
        return wrong("right grouping, reversed order: pair 0 is the fastest (1 rad per position).")
    wrong_count = int(np.sum(pairs != truth))
    return wrong(f"{wrong_count} of the {d} coordinates are assigned another pair than the one whose frequency they "
                 "turn at; f(e_j, [1])[j] is the cosine of coordinate j's angle at position 1.")


# ---- ch05-table-size: the length of a cos/sin table that wraps ----------------------------
#: What the table-based implementation declares (keyword arguments of gate_a).
TABLE_DECLARED = {"head_dim": 32, "pairing": "interleaved", "base": 10_000.0}
_TABLE_ROWS = 6144  # 3 * 2048: a common size that is not a power of two


def table_rope(rows: int = _TABLE_ROWS):
    """A rotary callable ``f(x, positions)`` built on a precomputed cos/sin table (``ch05-table-size``).

    It declares :data:`TABLE_DECLARED`; how many rows its table holds is the exercise (the check builds
    tables of other lengths with ``rows``).
    """
    impl = PositionDefect(TABLE_DECLARED["head_dim"], mode="wrapped", size=rows)

    def rope(x, positions):
        return impl(x, positions, role="key")

    return rope


#: The query and key positions of the second part of ``ch05-table-size``.
TABLE_QUERY, TABLE_KEY = 10_000, 5_000
#: Other table lengths the check measures the student's ``table_length`` on (none a power of two).
_OTHER_ROWS = (3_000, 10_240)


def _offset_with(rows: int) -> int:
    """The offset delta = n - m (key minus query) the score sees for TABLE_QUERY and TABLE_KEY, ``rows`` rows."""
    return TABLE_KEY % rows - TABLE_QUERY % rows


def _measured_length(fn, rows: int):
    """``fn``'s reading of a table of ``rows`` rows, or a verdict (a wrong length on the exercise's own table is
    described without its value)."""
    got = need(call_student(fn, table_rope(rows), what="table_length(rope)"))
    n = need(as_whole(got, "table_length(rope) as a whole number of rows", limit=10**12))
    if n == rows:
        return None
    if rows != _TABLE_ROWS:
        return wrong(f"on a table of {rows:,} rows your table_length returned {n:,}: it must measure the table it is "
                     "given (the smallest N with f(x, [p]) equal to f(x, [p - N]) for a position p past the table).")
    if n == rows - 1:
        return wrong("table_length is one short: that is the index of the table's last row, and it holds one more.")
    return wrong(f"table_length(rope) returned {n:,}, which is not this table's length: rotate one vector at a position "
                 "well past the table and at every smaller position, and take the smallest gap that repeats it.")


@exercise("ch05-table-size")
def _check_table_size(answer):
    items = need(as_items(answer, "a pair (table_length, offset)", max_items=64))
    if len(items) != 2:
        return wrong("expected a pair (table_length, offset): your function that measures a table's length, and the "
                     "offset the score sees")
    fn, offset = items
    need_function(fn, f"the first item must be your function table_length(f), got {type(fn).__name__}")
    for rows in (_TABLE_ROWS, *_OTHER_ROWS):
        bad = _measured_length(fn, rows)
        if bad:
            return bad
    seen = need(as_whole(offset, "the offset as a whole number of positions", limit=10**12))
    rows = _TABLE_ROWS
    truth = _offset_with(rows)
    if seen == truth:
        return correct(f"table_length measures every table it is given; the query at {TABLE_QUERY:,} is read from row "
                       f"{TABLE_QUERY % rows:,} of the {rows:,}, so the score sees delta = {truth:+,} (the query "
                       f"{abs(truth):,} positions {'after' if truth < 0 else 'before'} the key) instead of "
                       f"{TABLE_KEY - TABLE_QUERY:+,}: the sign of the displacement flips.")
    if seen == TABLE_KEY - TABLE_QUERY:
        return wrong("that offset is the true one, but the score sees the positions the table rows stand for.")
    if seen == -truth:
        return wrong("right size, wrong sign: delta = n - m, the key's position minus the query's, as the table sees them.")
    if seen == TABLE_QUERY % rows:
        return wrong("that is the row the query is read from: subtract it from the key's.")
    if seen == _offset_with(rows - 1):
        return wrong("that uses the index of the table's last row as its length; the table holds one row more.")
    for other in (4096, 8192, 131_072):
        if seen == _offset_with(other):
            return wrong(f"that offset assumes a table of {other:,} rows; use the length your table_length measured.")
    return wrong("reduce both positions modulo the table's length and subtract the query's row from the key's.")


# ---- ch05-query-ahead: break a KV cache on purpose and read Gate A's decoding diagnosis ----
#: What the student's cache declares (keyword arguments of gate_a).
CACHE_DECLARED = {"head_dim": 16, "pairing": "interleaved", "base": 10_000.0}


@exercise("ch05-query-ahead")
def _check_query_ahead(answer):
    if isinstance(answer, type):
        return wrong("pass an instance of your cache class (YourCache()), not the class itself")
    need_function(answer, f"expected a cache object with __call__, prefill and decode_step, got {type(answer).__name__}")
    missing = [m for m in ("prefill", "decode_step") if not callable(getattr(answer, m, None))]
    if missing:
        return wrong(f"Gate A runs its decoding check only on an object with prefill and decode_step; yours lacks "
                     f"{' and '.join(missing)}")
    need(call_student(answer, np.zeros((2, 16)), np.arange(2), what="your cache(np.zeros((2, 16)), np.arange(2))"))
    try:
        rep = gate_a(answer, **CACHE_DECLARED)
    except GateAError as exc:
        return wrong(f"Gate A cannot call it: {exc}")
    if rep.check("decoding").passed is None:
        return wrong(f"Gate A could not run its decoding check: {rep.check('decoding').diagnosis}")
    others = [c for c in rep.failed if c != "decoding"]
    if others:
        return wrong(f"only decode_step should be wrong, but Gate A also fails {', '.join(others)}: {rep.diagnosis}")
    if rep.passed:
        return wrong("Gate A finds nothing: your decode_step still rotates the query at the cache length")
    if re.search(r"off-by-[+-]\d+ cache offset", rep.diagnosis):
        return wrong("Gate A reads the query and the new key moved together; the exercise moves the query alone")
    if re.search(r"new key is placed at position \d+ instead of \d+", rep.diagnosis):
        return wrong("you moved the key; the exercise moves the query (and places the new key at the cache length)")
    found = re.search(r"decoding query sits at position (\d+) instead of (\d+)", rep.diagnosis)
    if found is None:
        return wrong(f"Gate A reads another decoding defect than a misplaced query: {rep.diagnosis}")
    if int(found.group(1)) - int(found.group(2)) != 1:
        return wrong("Gate A reads the query at another position; the exercise asks for one position too far")
    return correct("Gate A fails only decoding and reads the query one position past the cache length while the "
                   "new key is placed right: every single forward pass is right, and the slip exists only between "
                   "the cache and the new token.")
