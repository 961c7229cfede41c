"""Checks for the exercises of chapter 5 (where the same formula gets wired differently).

Each check derives the expected answer here and, when an answer is wrong, names the mistake it
recognises (an inverse permutation, a sign, another format's limit, another defect) without
printing the expected answer.
"""

from __future__ import annotations

import numpy as np

from ..broken import CATALOGUE, CacheOffByOne, PositionDefect
from ..gate_a import GateAError, gate_a
from ..rotation import pairing_permutation
from . import as_items, as_number, as_whole, call_student, correct, exercise, short, wrong

__all__ = ["mystery", "MYSTERY_DECLARED", "PADDING", "PROMPT", "table_rope", "TABLE_DECLARED", "TABLE_QUERY",
           "TABLE_KEY"]


# ---- ch05-permutation: interleaved -> half-split for head dim 8 ----------------------------
PERM_DIM = 8


@exercise("ch05-permutation")
def _check_permutation(answer):
    if isinstance(answer, (str, bytes)):
        return wrong(f"expected an array of {PERM_DIM} integer indices, got the text {short(answer)}")
    if isinstance(answer, np.ndarray) and answer.ndim != 1:
        return wrong(f"expected {PERM_DIM} indices (one per coordinate of the head), got shape {answer.shape}")
    items, bad = as_items(answer, f"an array of {PERM_DIM} integer indices", max_items=4096)
    if bad:
        return bad
    if len(items) != PERM_DIM:
        return wrong(f"expected {PERM_DIM} indices (one per coordinate of the head), got shape ({len(items)},)")
    perm = []
    for item in items:
        i, bad = as_whole(item, "indices as integers", limit=10**6)
        if bad:
            return bad
        perm.append(i)
    perm = np.array(perm)
    if sorted(perm.tolist()) != list(range(PERM_DIM)):
        return wrong(f"a permutation lists each index 0..{PERM_DIM - 1} exactly once")
    truth = pairing_permutation(PERM_DIM, source="interleaved", target="half")
    if np.array_equal(perm, truth):
        return correct("x[perm] lays the interleaved pairs out half-split: pair i lands on (i, i + 4).")
    if np.array_equal(perm, np.argsort(truth)):
        return wrong("that is the inverse permutation: it carries a half-split layout onto an interleaved one.")
    if np.array_equal(perm, np.arange(PERM_DIM)):
        return wrong("the identity leaves (2i, 2i+1) together; the half-split layout needs them i + 4 apart.")
    return wrong("with x_half = x_interleaved[perm], coordinate i of the half-split layout must be the first "
                 "member of pair i and coordinate i + 4 its second member; yours is not.")


# ---- ch05-bfloat16-position: where bfloat16 puts position 1001, and what it costs ------------
BF16_POSITION = 1001


@exercise("ch05-bfloat16-position")
def _check_bf16(answer):
    import ml_dtypes

    items, bad = as_items(answer, "a pair (rounded_position, phase_cost_in_radians)", max_items=64)
    if bad:
        return bad
    if len(items) != 2:
        return wrong("expected a pair (rounded_position, phase_cost_in_radians)")
    rounded, bad = as_number(items[0], "the rounded position as a finite number")
    if bad:
        return bad
    cost, bad = as_number(items[1], "the phase cost as a finite number (radians)")
    if bad:
        return bad
    p = BF16_POSITION
    truth = float(np.array(p, dtype=np.float64).astype(ml_dtypes.bfloat16))
    cost_truth = abs(p - truth) * 1.0  # the fastest pair turns 1 rad per position
    if rounded == p:
        return wrong(f"{p} is odd and above 512, so it needs 10 significant bits; bfloat16 keeps 8.")
    if rounded != truth:
        lower = float(np.nextafter(np.array(truth, dtype=ml_dtypes.bfloat16), np.array(0, dtype=ml_dtypes.bfloat16)))
        if rounded in (p - 1, p + 1, p + 3) or (rounded != lower and abs(rounded - p) <= 8):
            return wrong(f"round to the nearest bfloat16 number: between 512 and 1024 they are "
                         f"{int(2 ** (9 - 7))} apart.")
        return wrong("that is not where bfloat16 rounds this position; cast it with ml_dtypes and look.")
    if abs(cost - cost_truth) <= 1e-9:
        return correct(f"{p} becomes {truth:g}; the fastest pair is then {cost_truth:g} rad off before cos and "
                       "sin add their own rounding.")
    if abs(cost - cost_truth * 180 / np.pi) <= 1e-6:
        return wrong("the rounding is right; give the cost in radians, not degrees.")
    return wrong("the rounding is right; the cost is the position error times the pair's frequency "
                 "(1 rad per position for the fastest pair).")


# ---- ch05-padding-offset: displacement error from counting pads ---------------------------
PADDING = 3
PROMPT = 5


@exercise("ch05-padding-offset")
def _check_padding(answer):
    value, bad = as_whole(answer, "a number of positions (a whole number)")
    if bad:
        return bad
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


# ---- ch05-rope-half: implement the half-split layout, judged by Gate A ---------------------
@exercise("ch05-rope-half")
def _check_rope_half(answer):
    if not callable(answer):
        return wrong(f"expected a function rope_half(x, positions), got {type(answer).__name__}")
    # a stub raises NotImplementedError here (Gate A would count it as a refusal)
    _, err = call_student(answer, np.zeros((2, 16)), np.arange(2), what="rope_half(np.zeros((2, 16)), np.arange(2))")
    if err:
        return wrong(err)
    try:
        for d in (16, 64):
            rep = gate_a(answer, head_dim=d, pairing="half")
            if not rep.passed:
                return wrong(f"Gate A (head dim {d}, declared half-split, base 10,000) fails "
                             f"{', '.join(rep.failed)}: {rep.diagnosis}")
    except GateAError as exc:
        return wrong(f"Gate A cannot call it: {exc}")
    return correct("Gate A passes it as a half-split rotary operator with base 10,000 at head dims 16 and 64.")


# ---- ch05-diagnose: name the defect of a mystery implementation ----------------------------
#: What the mystery implementation declares (keyword arguments of gate_a).
MYSTERY_DECLARED = {"head_dim": 32, "pairing": "interleaved", "base": 10_000.0}


class _Mystery:
    """A rotary layer with a KV cache; its defect is the exercise (run Gate A on it)."""

    def __init__(self):
        self._impl = CacheOffByOne(32)

    def __call__(self, x, positions, role="query"):
        return self._impl(x, positions, role=role)

    def prefill(self, keys, values):
        return self._impl.prefill(keys, values)

    def decode_step(self, query, key, value):
        return self._impl.decode_step(query, key, value)


def mystery() -> _Mystery:
    """A fresh mystery implementation for ``ch05-diagnose`` (declared: :data:`MYSTERY_DECLARED`)."""
    return _Mystery()


_MYSTERY_NAME = "cache-off-by-one"


@exercise("ch05-diagnose")
def _check_diagnose(answer):
    if not isinstance(answer, str):
        return wrong(f"expected the name of a catalogue entry as a string, got {type(answer).__name__}")
    name = answer.strip().lower()
    if name not in CATALOGUE:
        return wrong(f"{short(answer)} is not a catalogue name; the names are: {', '.join(CATALOGUE)}")
    if name == _MYSTERY_NAME:
        return correct("the new token lands one past the cache: a defect in the decoding path only.")
    guess = CATALOGUE[name]
    if not guess.broken:
        return wrong(f"{name!r} is a correct implementation, but Gate A fails this one.")
    rep = gate_a(mystery(), **MYSTERY_DECLARED)
    if guess.check in rep.failed:
        return wrong(f"right check ('{guess.check}' fails), wrong defect: read where the diagnosis says the new "
                     "token is placed.")
    return wrong(f"that defect would make Gate A's '{guess.check}' check fail, and on this implementation it "
                 "passes.")


# ---- ch05-table-size: the length of a cos/sin table that wraps ----------------------------
#: What the table-based implementation declares (keyword arguments of gate_a).
TABLE_DECLARED = {"head_dim": 32, "pairing": "interleaved", "base": 10_000.0}
_TABLE_ROWS = 6144  # 3 * 2048: a common size that is not a power of two


def table_rope():
    """A rotary callable ``f(x, positions)`` built on a precomputed cos/sin table (``ch05-table-size``).

    It declares :data:`TABLE_DECLARED`; how many rows its table holds is the exercise.
    """
    impl = PositionDefect(TABLE_DECLARED["head_dim"], mode="wrapped", size=_TABLE_ROWS)

    def rope(x, positions):
        return impl(x, positions, role="key")

    return rope


#: The query and key positions of the second part of ``ch05-table-size``.
TABLE_QUERY, TABLE_KEY = 10_000, 5_000


def _table_answer(answer):
    items, bad = as_items(answer, "a pair (rows, offset)", max_items=64)
    if bad:
        return None, None, bad
    if len(items) != 2:
        return None, None, wrong("expected a pair (rows, offset): the table's length and how far after the key the "
                                 "query appears")
    rows, bad = as_whole(items[0], "the number of rows as a whole number", limit=10**12)
    if bad:
        return None, None, bad
    seen, bad = as_whole(items[1], "the offset as a whole number of positions", limit=10**12)
    return rows, seen, bad


@exercise("ch05-table-size")
def _check_table_size(answer):
    n, seen, bad = _table_answer(answer)
    if bad:
        return bad
    rows = _TABLE_ROWS
    if n != rows:
        if n == rows - 1:
            return wrong("that is the index of the last row; the table holds one row more (rows 0 to that index).")
        if n > rows and n % rows == 0:
            return wrong("the rotations do repeat after that many positions, but they already repeat sooner: find "
                         "the smallest period.")
        if n in (131_072, 4096):
            return wrong("that is a context you declared to Gate A, not a property of the table; read the diagnosis "
                         "of the run with the default context.")
        if n > 0 and n & (n - 1) == 0:
            return wrong("tables are often a power of two long, but not this one: test your guess by comparing "
                         "f(x, [p]) with f(x, [p - N]) for a position p past the table.")
        return wrong("look for the smallest N with f(x, [p]) equal to f(x, [p - N]) for a position p past the table.")
    q, k = TABLE_QUERY % rows, TABLE_KEY % rows
    truth = q - k
    if seen == truth:
        return correct(f"the table has {rows:,} rows; the query at {TABLE_QUERY:,} is read from row {q:,}, so the score "
                       f"sees it {abs(truth):,} positions {'before' if truth < 0 else 'after'} the key instead of "
                       f"{TABLE_QUERY - TABLE_KEY:,} after: the sign of the displacement flips.")
    if seen == TABLE_QUERY - TABLE_KEY:
        return wrong("the table length is right; that offset is the true one, but the score sees the positions the "
                     "table rows stand for.")
    if seen == -truth:
        return wrong("the table length is right; check the sign: query position minus key position, both as the "
                     "table sees them.")
    if seen == q:
        return wrong("the table length is right; that is the row the query is read from: subtract the key's.")
    return wrong("the table length is right; reduce both positions modulo the table length, then subtract the key's "
                 "from the query's.")
