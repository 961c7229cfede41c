"""Checks for the exercises of chapter 1 (permutation symmetry and absolute positions)."""

from __future__ import annotations

import numpy as np

from ropegeo.book.exercises import (as_float_array, as_items, as_whole, call_student, read_each, correct, exercise,
                                    need, need_function, sympy_problem, wrong)
from ropegeo.toy.attention import AttentionLayer
from ropegeo.toy.schemes import sinusoidal_encoding

# ---- problem data shared with the notebook -------------------------------------------------

#: ch01-half-similarity: the width of the sinusoidal code, and the offsets searched (1 .. this).
SIMILARITY_WIDTH, SIMILARITY_SEARCH = 16, 2048

#: ch01-causal-survivors: the permutation applied to an 8-token sequence.
SURVIVOR_PERM = (3, 1, 0, 2, 4, 6, 5, 7)

#: ch01-mirror-position: the letters of :func:`mirror_codes`.
MIRROR_CODES = ("A", "B", "C", "D")


def survivor_problem():
    """The layer, tokens and permutation of exercise ch01-causal-survivors: a causal attention layer
    without positions (``d_model = 8``, seed 0), tokens of shape (8, 8) drawn with seed 1, and
    ``SURVIVOR_PERM`` as an integer array."""
    layer = AttentionLayer(8, scheme="none", causal=True, seed=0)
    x = np.random.default_rng(1).standard_normal((8, 8))
    return layer, x, np.array(SURVIVOR_PERM)


def mirror_codes():
    """The four codes of exercise ch01-mirror-position, by letter: each maps whole positions 0 to 63, an array of
    shape ``(N,)``, to codes of shape ``(N, width)``.

    Examples
    --------
    >>> codes = mirror_codes()
    >>> sorted(codes), codes["A"](np.arange(3)).shape
    (['A', 'B', 'C', 'D'], (3, 4))
    """
    table = np.random.default_rng(5).standard_normal((64, 4))

    def turning(p):  # two pairs turning at their own rates, from their own start angles and lengths
        a, b = 0.7 * p + 0.4, 0.05 * p + 1.0
        return np.stack([3 * np.sin(a), 3 * np.cos(a), 0.5 * np.sin(b), 0.5 * np.cos(b)], axis=-1)

    def ramp(p):  # the sinusoidal code and the position itself, scaled
        return np.concatenate([sinusoidal_encoding(p, 4), (p / 64.0)[:, None]], axis=-1)

    def constant(p):  # the sinusoidal code and a constant coordinate
        return np.concatenate([sinusoidal_encoding(p, 4), np.ones((p.size, 1))], axis=-1)

    def lookup(p):  # a random table, one row per position
        return table[p.astype(int)]

    return {"A": turning, "B": lookup, "C": ramp, "D": constant}


# ---- checks --------------------------------------------------------------------------------


@exercise("ch01-half-similarity")
def _half_similarity(answer):
    n = need(as_whole(answer, "a whole number of positions k"))
    if n < 1:
        return wrong("the offset must be a positive whole number: at k = 0 the code is compared with itself.")
    sim = _similarity(np.arange(1, SIMILARITY_SEARCH + 1))
    below = np.flatnonzero(sim < SIMILARITY_WIDTH / 4) + 1
    first = int(below[0])
    if n == first:
        return correct(f"k = {n} is the first offset at which the two codes share less than half of their "
                       "similarity at k = 0. For the second question, look at every offset below it, not just the end.")
    if n > SIMILARITY_SEARCH:
        return wrong(f"the similarity first falls below half much earlier than k = {n}.")
    value = float(_similarity(np.array([n]))[0])
    if value >= SIMILARITY_WIDTH / 4:
        return wrong(f"at k = {n} the similarity is still at least half of its value at k = 0.")
    if n == int(np.flatnonzero(sim < 0)[0]) + 1:
        return wrong("that is where the similarity first turns negative; the question asks where it first "
                     "drops below half.")
    return wrong(f"at k = {n} the similarity is below half, but it already was at a smaller offset.")


def _similarity(k):
    """PE(p) . PE(p + k) for the code of exercise ch01-half-similarity, by brute force at p = 0 and p = 37."""
    a = sinusoidal_encoding(np.zeros(1), SIMILARITY_WIDTH) @ sinusoidal_encoding(k, SIMILARITY_WIDTH).T
    b = sinusoidal_encoding(np.full(1, 37.0), SIMILARITY_WIDTH) @ sinusoidal_encoding(37.0 + k, SIMILARITY_WIDTH).T
    return 0.5 * (a[0] + b[0])


def _sympy_answer(answer, what, allowed):
    """A SymPy expression in the symbols ``allowed`` (names), or (None, reason)."""
    import sympy as sp

    if isinstance(answer, (str, bytes)):
        return None, f"expected {what} as a SymPy expression, got text: build it from sympy symbols."
    if isinstance(answer, bool) or not isinstance(answer, (sp.Basic, int, float)):
        return None, f"expected {what} as a SymPy expression, got {type(answer).__name__}."
    expr = sp.sympify(answer)
    if not isinstance(expr, sp.Expr):
        return None, f"expected {what} as a SymPy expression, got {type(expr).__name__}."
    problem = sympy_problem(expr, 300)
    if problem:
        return None, f"your expression {problem}."
    extra = sorted({s.name for s in expr.free_symbols} - set(allowed))
    if extra:
        return None, f"unexpected symbols {extra}: use only {', '.join(allowed)}."
    return expr, None


def _numeric(expr, names, points):
    """Evaluate a SymPy expression at rows of ``points`` (one column per name); None if it cannot."""
    import sympy as sp

    by_name = {s.name: s for s in expr.free_symbols}
    args = [by_name.get(n, sp.Symbol(n)) for n in names]
    try:
        f = sp.lambdify(args, expr, "numpy")
        out = np.array([complex(f(*row)) for row in points])
    except Exception:  # noqa: BLE001 - SymPy or NumPy cannot evaluate the student's expression
        return None
    if not np.all(np.isfinite(out)) or np.abs(out.imag).max() > 1e-9:
        return None
    return out.real


@exercise("ch01-mirror-position")
def _mirror_position(answer):
    items = need(as_items(answer, "a list of code names such as ['A', 'B']", max_items=16, allow_sets=True))
    if not all(isinstance(i, str) and i.strip().upper() in MIRROR_CODES for i in items):
        return wrong(f"name each code by its letter: {', '.join(repr(c) for c in MIRROR_CODES)}.")
    got = {i.strip().upper() for i in items}
    truth = {name for name, code in mirror_codes().items() if _offset_alone(code)}
    if got == truth:
        return correct("the proof covers every code whose similarity depends on the offset alone, whatever its "
                       "entries: the sinusoidal form is never used.")
    parts = []
    if got - truth:
        parts.append(f"{len(got - truth)} of your codes {'is' if len(got - truth) == 1 else 'are'} not covered: "
                     "the proof needs something about their similarity that they do not have")
    if truth - got:
        parts.append(f"{len(truth - got)} code(s) the proof covers are missing: it never uses sines or cosines")
    return wrong("; ".join(parts) + ".")


def _offset_alone(code) -> bool:
    """Whether ``code(p) . code(p + k)`` is the same at every start ``p`` (0 to 31) for every ``k`` (0 to 32)."""
    c = code(np.arange(64, dtype=np.float64))
    sims = np.array([[c[p] @ c[p + k] for p in range(32)] for k in range(33)])
    return bool(np.ptp(sims, axis=1).max() < 1e-9 * max(1.0, np.abs(sims).max()))


@exercise("ch01-any-start")
def _any_start(answer):
    expr = need(_sympy_answer(answer, "z(p).z(p + k)", ("a", "b", "omega", "k", "p")))
    names = ("a", "b", "omega", "k", "p")
    rng = np.random.default_rng(12)
    pts = np.column_stack([rng.uniform(-2, 2, (10, 2)), rng.uniform(0.05, 1.5, 10), rng.uniform(-20, 20, (10, 2))])
    got = _numeric(expr, names, pts)
    if got is None:
        return wrong("your expression cannot be evaluated at numeric a, b, omega, k and p.")
    a, b, w, k, p = pts.T
    want = (a * a + b * b) * np.cos(w * k)
    if np.allclose(got, want, atol=1e-9):
        if "p" in {s.name for s in expr.free_symbols}:
            return correct("right, and p cancels: simplify your expression to see that only k is left.")
        return correct("the start vector only sets the scale: any code that rotates one fixed vector compares "
                       "itself through cos(omega k) alone, an even function of k.")
    pts2 = pts.copy()
    pts2[:, 4] += 3.0
    other = _numeric(expr, names, pts2)
    if other is not None and not np.allclose(other, got, atol=1e-9):
        return wrong("your expression changes when p changes: the product must not depend on p.")
    if np.allclose(got, np.cos(w * k), atol=1e-9):
        return wrong("this is right only for a start vector of length 1: keep a and b in the answer.")
    if np.allclose(got, (a * a + b * b) * np.cos(w * k) + 2 * a * b * np.sin(w * k), atol=1e-9) or np.allclose(
            got, (a * a - b * b) * np.cos(w * k), atol=1e-9):
        return wrong("a sine or a difference of squares survived: collect the terms again; a rotation matrix "
                     "contributes only its symmetric part to x^T R x.")
    if np.allclose(got, a * a * np.cos(w * k), atol=1e-9) or np.allclose(got, b * b * np.cos(w * k), atol=1e-9):
        return wrong("only one coordinate of the start vector is left: (a, b) has two, and both enter the product.")
    if np.allclose(got, (a * a + b * b) * np.cos(w * k) * -1, atol=1e-9):
        return wrong("the sign is off: at k = 0 the product is the squared length of the start vector.")
    return wrong("your expression differs from z(p).z(p + k) at some values of a, b, omega and k.")


def _random_scores(rng, n):
    """Random scores with the column of one padding key set to -inf (a padding mask belongs to the key
    token and moves with it, unlike the causal mask, which belongs to the slots)."""
    S = rng.standard_normal((n, n))
    S[:, rng.integers(n)] = -np.inf
    return S


def _call(fn, *args):
    """Call the student's function; return (array, None) or (None, reason)."""
    out, err = call_student(fn, *args)
    if err:
        return None, err
    arr, bad = as_float_array(out, "what your function returned", finite=False)
    return (None, bad[1]) if bad else (arr, None)


@exercise("ch01-permuted-scores")
def _permuted_scores(answer):
    need_function(answer, "expected a function f(S, perm) returning the score matrix of the permuted sequence.")
    rng = np.random.default_rng(2026)
    for n in (2, 5, 9):
        S = _random_scores(rng, n)
        perm = rng.permutation(n)
        while np.array_equal(perm, np.arange(n)) or np.array_equal(perm[perm], np.arange(n)) and n > 2:
            perm = rng.permutation(n)
        got = need(_call(answer, S.copy(), perm.copy()))
        want = S[np.ix_(perm, perm)]
        if got.shape != want.shape:
            return wrong(f"for a {n}x{n} score matrix your function returned shape {got.shape}.")
        if np.allclose(got, want, atol=1e-12):
            continue
        if np.isnan(got).any() and not np.isnan(want).any():
            return wrong("your result holds nan: a matrix product multiplies the padding key's -inf by the zeros of P "
                         "(0 x inf is nan), and the sums carry that nan into every entry. Move entries instead.")
        inv = np.argsort(perm)
        if np.allclose(got, S[perm]):
            return wrong("only the rows (queries) moved: the keys are the same tokens, so the columns move too.")
        if np.allclose(got, S[:, perm]):
            return wrong("only the columns (keys) moved: the queries are the same tokens, so the rows move too.")
        if np.allclose(got, S[np.ix_(inv, inv)]):
            return wrong("this is the inverse permutation: slot p of the new sequence holds token perm[p].")
        if np.allclose(got, want.T):
            return wrong("the result is transposed: rows must stay queries and columns keys.")
        return wrong(f"for n={n} the result differs from the layer's scores of the permuted tokens.")
    return correct("the permuted scores are P S P^T: every pair of tokens keeps its score.")


@exercise("ch01-sinusoidal")
def _sinusoidal(answer):
    need_function(answer, "expected a function f(positions, dim) returning the sinusoidal code.")
    for dim, pos in ((16, np.arange(40.0)), (6, np.array([0.0, 3.5, 100.0, 2047.0])), (8, np.r_[:12.0].reshape(3, 4))):
        got = need(_call(answer, pos.copy(), dim))
        want = sinusoidal_encoding(pos, dim)
        if got.shape != want.shape:
            return wrong(f"for positions of shape {pos.shape}, dim={dim}: expected {want.shape}, got {got.shape}.")
        if np.allclose(got, want, atol=1e-9):
            continue
        if np.allclose(got[..., 0::2], want[..., 1::2]) and np.allclose(got[..., 1::2], want[..., 0::2]):
            return wrong("sines and cosines are swapped: even columns hold sines, odd columns cosines.")
        if np.allclose(got, np.concatenate([want[..., 0::2], want[..., 1::2]], axis=-1)):
            return wrong("right values, wrong layout: sines and cosines of one frequency sit in adjacent columns.")
        if any(np.allclose(got, sinusoidal_encoding(whole(pos), dim)) for whole in (np.trunc, np.rint, np.ceil)):
            return wrong("right at whole positions, wrong at 3.5: fractional positions were rounded; keep them float.")
        if np.allclose(got[..., :2], want[..., :2]) and not np.allclose(got[..., 2:], want[..., 2:]):
            return wrong("the first pair is right but later frequencies are off: check the exponent of the base.")
        return wrong(f"values differ from the sinusoidal code (dim={dim}); check the frequencies and the layout.")
    return correct("your code matches the sinusoidal encoding.")


@exercise("ch01-causal-survivors")
def _causal_survivors(answer):
    items = need(as_items(answer, "a list of slot indices (integers from 0 to 7)", max_items=64, allow_sets=True))
    slots = need(read_each(items, as_whole, "slot indices as whole numbers from 0 to 7"))
    got = sorted(set(slots))
    if any(i < 0 or i > 7 for i in got):
        return wrong("slot indices run from 0 to 7.")
    layer, x, perm = survivor_problem()
    changed = np.max(np.abs(layer(x[perm]) - layer(x)), axis=-1)
    truth = {i for i in range(8) if changed[i] < 1e-12}
    extra, missing = sorted(set(got) - truth), sorted(truth - set(got))
    if not extra and not missing:
        return correct("these slots see the same query and the same set of keys as before; their outputs agree "
                       "up to rounding.")
    parts = [f"{len(extra)} of your slots have an output that changes"] if extra else []
    if missing:  # a strict subset of the survivors (or none): most likely compared with ==, which rounding defeats
        parts.append(f"{len(missing)} slot(s) with an unchanged output are missing"
                     + (" (compare up to rounding, 1e-12, not with ==)" if set(got) < truth else ""))
    return wrong("; ".join(parts) + ".")
