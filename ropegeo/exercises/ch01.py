"""Checks for the exercises of chapter 1 (permutation symmetry and absolute positions).

Each check receives the student's answer and returns ``correct(...)`` or ``wrong(reason)``; the
reason says what is off without giving the answer away.
"""

from __future__ import annotations

import numpy as np

from . import as_float_array, as_items, as_whole, call_student, correct, exercise, short, sympy_problem, wrong
from ..attention import AttentionLayer, sinusoidal_encoding

# ---- problem data shared with the notebook -------------------------------------------------

#: ch01-table-shifts: an absolute table of this many rows, a sequence of this many tokens.
TABLE_ROWS, SEQUENCE_LENGTH = 16, 6

#: ch01-causal-survivors: the permutation applied to an 8-token sequence.
SURVIVOR_PERM = (2, 0, 3, 1, 4, 5, 6, 7)


def survivor_problem():
    """The layer, tokens and permutation of exercise ch01-causal-survivors.

    Returns
    -------
    (layer, x, perm) : tuple
        A causal attention layer without positions (``d_model = 8``, seed 0), tokens of shape
        (8, 8) drawn with seed 1, and the permutation as an integer array.
    """
    layer = AttentionLayer(8, scheme="none", causal=True, seed=0)
    x = np.random.default_rng(1).standard_normal((8, 8))
    return layer, x, np.array(SURVIVOR_PERM)


# ---- checks --------------------------------------------------------------------------------


@exercise("ch01-table-shifts")
def _table_shifts(answer):
    n, bad = as_whole(answer, "a whole number of shifts")
    if bad:
        return bad
    # brute force: shift s is valid when every position s .. s + L - 1 indexes the table
    valid = sum(1 for s in range(TABLE_ROWS + 1) if s + SEQUENCE_LENGTH - 1 <= TABLE_ROWS - 1)
    if n == valid:
        return correct(f"{n} shifts keep all {SEQUENCE_LENGTH} positions inside the {TABLE_ROWS}-row table.")
    if n == TABLE_ROWS:
        return wrong("that is the number of rows: the last token of the sequence must fit in the table too.")
    if abs(n - valid) == 1:
        return wrong("off by one: check the smallest and the largest valid shift, both included.")
    return wrong(f"{n} is not the count of valid shifts; write down the first and last position for a shift s.")


def _random_scores(rng, n):
    return rng.standard_normal((n, n))


def _call(fn, *args):
    """Call the student's function; return (array, None) or (None, reason)."""
    out, err = call_student(fn, *args)
    if err:
        return None, err
    arr, bad = as_float_array(out, "what your function returned", finite=False)
    return (None, bad[1]) if bad else (arr, None)


@exercise("ch01-permuted-scores")
def _permuted_scores(answer):
    if not callable(answer):
        return wrong("expected a function f(S, perm) returning the score matrix of the permuted sequence.")
    rng = np.random.default_rng(2026)
    for n in (2, 5, 9):
        S = _random_scores(rng, n)
        perm = rng.permutation(n)
        while np.array_equal(perm, np.arange(n)) or np.array_equal(perm[perm], np.arange(n)) and n > 2:
            perm = rng.permutation(n)
        got, err = _call(answer, S.copy(), perm.copy())
        if err:
            return wrong(err)
        want = S[np.ix_(perm, perm)]
        if got.shape != want.shape:
            return wrong(f"for a {n}x{n} score matrix your function returned shape {got.shape}.")
        if np.allclose(got, want, atol=1e-12):
            continue
        inv = np.argsort(perm)
        if np.allclose(got, S[perm]):
            return wrong("only the rows (queries) moved: the keys are the same tokens, so the columns move too.")
        if np.allclose(got, S[:, perm]):
            return wrong("only the columns (keys) moved: the queries are the same tokens, so the rows move too.")
        if np.allclose(got, S[np.ix_(inv, inv)]):
            return wrong("this is the inverse permutation: slot i of the new sequence holds token perm[i].")
        if np.allclose(got, want.T):
            return wrong("the result is transposed: rows must stay queries and columns keys.")
        return wrong(f"for n={n} the result differs from the layer's scores of the permuted tokens.")
    return correct("the permuted scores are P S P^T: every pair of tokens keeps its score.")


def _matrix2(answer):
    import sympy as sp

    # look at the shape before building a Matrix: range(10**20) or a huge nested list must not be read
    if isinstance(answer, (sp.MatrixBase, np.ndarray)):
        shape = tuple(answer.shape)
    else:
        try:
            shape = (len(answer), *{len(row) for row in answer}) if 0 < len(answer) <= 2 else (len(answer),)
        except (TypeError, OverflowError):
            return None, f"expected a 2x2 SymPy Matrix in the symbols omega and k, got {type(answer).__name__}."
    if shape != (2, 2):
        return None, f"expected a 2x2 matrix, got shape {short(shape)}."
    try:
        M = sp.Matrix(answer)
    except Exception:  # noqa: BLE001 - not something SymPy can read as a matrix (even NotImplementedError)
        return None, "expected a 2x2 SymPy Matrix in the symbols omega and k."
    if M.shape != (2, 2):
        return None, f"expected a 2x2 matrix, got shape {M.shape}."
    return M, None


@exercise("ch01-shift-matrix")
def _shift_matrix(answer):
    import sympy as sp

    M, err = _matrix2(answer)
    if err:
        return wrong(err)
    for entry in M:
        problem = sympy_problem(sp.sympify(entry), 200)
        if problem:  # a Sum over 10**9 terms would be evaluated term by term below
            return wrong(f"an entry of your matrix {problem}.")
    names = {s.name for s in M.free_symbols}
    if "p" in names:
        return wrong("your matrix contains p: the map must be the same at every position.")
    extra = names - {"omega", "k"}
    if extra:
        return wrong(f"unexpected symbols {sorted(extra)}: use only omega (frequency) and k (shift).")
    by_name = {s.name: s for s in M.free_symbols}
    try:
        f = sp.lambdify([by_name.get("omega", sp.Symbol("omega")), by_name.get("k", sp.Symbol("k"))], M, "numpy")
    except Exception:  # noqa: BLE001 - SymPy cannot print it for NumPy (it may raise NotImplementedError)
        return wrong("your matrix cannot be evaluated at numeric omega and k.")
    rng = np.random.default_rng(7)
    forward = backward = True
    for _ in range(12):
        w, k, p = rng.uniform(0.05, 1.5), rng.uniform(-20, 20), rng.uniform(-50, 50)
        try:
            A = np.asarray(f(w, k), dtype=np.float64)
        except Exception:
            return wrong("your matrix cannot be evaluated at numeric omega and k.")
        v0 = np.array([np.sin(w * p), np.cos(w * p)])
        forward &= np.allclose(A @ v0, [np.sin(w * (p + k)), np.cos(w * (p + k))], atol=1e-9)
        backward &= np.allclose(A @ v0, [np.sin(w * (p - k)), np.cos(w * (p - k))], atol=1e-9)
    if forward:
        return correct("this matrix moves every sinusoidal pair from p to p + k.")
    if backward:
        return wrong("your matrix moves the code from p to p - k: the angle has the wrong sign.")
    return wrong("multiplying [sin(omega p), cos(omega p)] by your matrix does not give the pair at p + k.")


@exercise("ch01-sinusoidal")
def _sinusoidal(answer):
    if not callable(answer):
        return wrong("expected a function f(positions, dim) returning the sinusoidal code.")
    for dim, pos in ((16, np.arange(40.0)), (6, np.array([0.0, 3.5, 100.0, 2047.0]))):
        got, err = _call(answer, pos.copy(), dim)
        if err:
            return wrong(err)
        want = sinusoidal_encoding(pos, dim)
        if got.shape != want.shape:
            return wrong(f"for {pos.size} positions and dim={dim} expected shape {want.shape}, got {got.shape}.")
        if np.allclose(got, want, atol=1e-9):
            continue
        if np.allclose(got[:, 0::2], want[:, 1::2]) and np.allclose(got[:, 1::2], want[:, 0::2]):
            return wrong("sines and cosines are swapped: even columns hold sines, odd columns cosines.")
        half = np.concatenate([want[:, 0::2], want[:, 1::2]], axis=1)
        if np.allclose(got, half):
            return wrong("right values, wrong layout: sines and cosines of one frequency sit in adjacent columns.")
        if np.allclose(got[:, :2], want[:, :2]) and not np.allclose(got[:, 2:], want[:, 2:]):
            return wrong("the first pair is right but later frequencies are off: check the exponent of the base.")
        return wrong(f"values differ from the sinusoidal code (dim={dim}); check the frequencies and the layout.")
    return correct("your code matches the sinusoidal encoding.")


@exercise("ch01-causal-survivors")
def _causal_survivors(answer):
    items, bad = as_items(answer, "a list of slot indices (integers from 0 to 7)", max_items=64, allow_sets=True)
    if bad:
        return bad
    slots = set()
    for item in items:
        i, bad = as_whole(item, "slot indices as whole numbers from 0 to 7")
        if bad:
            return bad
        slots.add(i)
    got = sorted(slots)
    if any(i < 0 or i > 7 for i in got):
        return wrong("slot indices run from 0 to 7.")
    layer, x, perm = survivor_problem()
    changed = np.max(np.abs(layer(x[perm]) - layer(x)), axis=-1)
    truth = {i for i in range(8) if changed[i] < 1e-12}
    extra = sorted(set(got) - truth)
    missing = sorted(truth - set(got))
    if not extra and not missing:
        return correct("exactly these slots see the same query and the same set of keys as before.")
    parts = []
    if extra:
        parts.append(f"{len(extra)} of your slots have an output that changes")
    if missing:
        parts.append(f"{len(missing)} slot(s) with an unchanged output are missing")
    return wrong("; ".join(parts) + ".")
