"""Checks for the exercises of chapter 2 (the identity hidden in a rotation)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import sympy as sp

from ropegeo.book.exercises import (as_float_array, as_items, as_number, as_whole, call_student, correct, exercise, need,
                                    need_function, short, sympy_problem, wrong)
from ropegeo.frequencies import frequencies
from ropegeo.rotation import apply_rope
from ropegeo.toy.attention import copy_back_head

# ---- ch02-score-by-hand: the one-pair score from its two terms ------------------------------
SCORE_Q = np.array([1.0, 2.0])
SCORE_K = np.array([3.0, -1.0])
SCORE_THETA = 0.5
SCORE_M, SCORE_N = 4, 1


def _score(q, k, m, n, theta):
    th = np.array([theta])
    return float(apply_rope(q, m, theta=th) @ apply_rope(k, n, theta=th))


def _fmt(x: float) -> str:
    return f"{x:.4f}" if abs(x) < 1e6 else f"{x:.4g}"


@exercise("ch02-score-by-hand")
def _check_score(answer):
    value = need(as_number(answer, "a single real number"))
    q, k, th, m, n = SCORE_Q, SCORE_K, SCORE_THETA, SCORE_M, SCORE_N
    truth = _score(q, k, m, n, th)
    close = lambda x: abs(value - x) <= 1e-3 * max(1.0, abs(x))  # noqa: E731
    if close(truth):
        return correct(f"the score is {truth:.4f}.")
    if close(_score(q, k, n, m, th)):
        # flipping the sign of the oriented term gives the same number as swapping the positions
        return wrong("that is the score with query and key positions swapped (or, equivalently, with the "
                     "oriented term's sign reversed): delta = n - m is key position minus query position.")
    if close(float(q @ k)):
        return wrong("that is q . k, the score without any rotation: the positions must enter.")
    if close(float(q @ k) * np.cos((n - m) * th)):
        return wrong("that is only the symmetric cosine term: the oriented sine term is missing.")
    if close(-float(q[0] * k[1] - q[1] * k[0]) * np.sin((n - m) * th)):  # -(q x k) sin(delta theta) alone
        return wrong("that is only the oriented sine term: the symmetric cosine term, (q . k) cos(delta theta), is missing.")
    if close(_score(q, k, m, n, np.radians(th))) or close(float(q @ k) * np.cos(np.radians((n - m) * th))):
        return wrong("theta is in radians per position; it looks like degrees were used somewhere.")
    if abs(value - truth) <= 0.05:  # the right method, rounded too early: the prompt asks for three decimals
        return wrong(f"close: {_fmt(value)} is near the score but not within 0.001; give at least three decimals.")
    return wrong(f"{_fmt(value)} is not the score; compute q . k and q x k first, then combine them with cos and sin of the offset angle.")


# ---- ch02-sign-bug: the score when the query is turned the wrong way -------------------------
_BUG_NAMES = ("q1", "q2", "k1", "k2", "m", "n", "theta")


def _bug_symbols():
    q1, q2, k1, k2, m, n = sp.symbols("q1 q2 k1 k2 m n", real=True)
    return {"q1": q1, "q2": q2, "k1": k1, "k2": k2, "m": m, "n": n, "theta": sp.Symbol("theta", positive=True)}


def _is_zero(expr) -> bool:
    expr = sp.expand(expr)
    # cheap first: after the angle-addition formulas both sides are polynomials in sin and cos of
    # m theta and n theta, which usually cancel term by term; simplify only what is left
    if sp.expand(sp.expand_trig(expr)) == 0 or sp.expand(expr.rewrite(sp.exp)) == 0:
        return True
    return sp.simplify(sp.expand_trig(expr)) == 0 or sp.simplify(expr.rewrite(sp.exp)) == 0


#: Size bounds of a sign-bug answer (the intended one has about 20 tree nodes, 2 expanded terms): anything
#: larger is refused before SymPy simplifies it (simplifying a large expansion takes minutes).
MAX_BUG_NODES, MAX_BUG_TERMS = 300, 64


def _expanded_terms(expr, cap: int) -> int:
    """An estimate (an upper bound for polynomials) of the terms of ``sp.expand(expr)``, stopped past ``cap``.

    Every sub-expression is bounded too (``expand`` works inside function arguments).
    """
    def terms(e) -> int:
        if not e.args:
            return 1
        inner = [terms(a) for a in e.args]
        if e.is_Add:
            n = sum(inner)
        elif e.is_Mul:
            n = 1
            for t in inner:
                n = min(n * t, cap + 1)
        elif e.is_Pow and e.exp.is_Integer and abs(int(e.exp)) >= 2 and inner[0] > 1:
            p = abs(int(e.exp))
            n = cap + 1 if p > cap else math.comb(inner[0] + p - 1, p)
        elif isinstance(e, (sp.functions.elementary.trigonometric.TrigonometricFunction,
                            sp.functions.elementary.hyperbolic.HyperbolicFunction)) and len(e.args) == 1:
            # expand_trig: sin(a + b) doubles the terms for every summand, sin(c x) has about c terms
            n = 1
            for term in e.args[0].args if e.args[0].is_Add else (e.args[0],):
                c = term.as_coeff_Mul()[0]
                n = min(n * 2 * (min(abs(int(c)), cap + 1) if c.is_Integer and c != 0 else 1), cap + 1)
        else:  # a power that does not multiply out, a function of several arguments
            n = 1
        if n > cap or max(inner) > cap:
            raise OverflowError
        return n

    try:
        return terms(expr)
    except (OverflowError, RecursionError):
        return cap + 1


def _values(expr, symbols, points):
    """``expr`` at each point (dicts of symbol values) in float64, as complex numbers, or None without a finite value.

    Evaluated with ``lambdify`` and NumPy, never in arbitrary precision: ``exp(exp(exp(100 m)))``
    overflows to inf at once instead of computing a number with millions of digits.
    """
    names = list(_BUG_NAMES)
    try:
        fn = sp.lambdify([symbols[n] for n in names], expr, modules="numpy")
        columns = [np.array([float(p[n]) for p in points]) for n in names]
        values = np.broadcast_to(np.asarray(fn(*columns), dtype=np.complex128), (len(points),))
    except Exception:  # noqa: BLE001 - NumPy cannot evaluate it (undefined functions; SymPy raises even
        return None    # NotImplementedError for an Integral, which is no stub of the student's)
    return values if np.all(np.isfinite(values)) else None


def _bug_scores(S):
    """The bugged score and the two scores it is easily confused with, from complex numbers.

    Independent of ``ropegeo.book.symbolic``: a plane vector is a complex number, a rotation by ``a``
    multiplies it by ``exp(i a)``, and the dot product of two plane vectors is ``Re(conj(z) w)``.
    """
    zq, zk = S["q1"] + sp.I * S["q2"], S["k1"] + sp.I * S["k2"]
    m, n, t = S["m"], S["n"], S["theta"]

    def score(query_angle, key_angle):
        return sp.re(sp.expand_complex(sp.conjugate(zq * sp.exp(sp.I * query_angle)) * zk * sp.exp(sp.I * key_angle)))

    return {"bug": score(-m * t, n * t), "healthy": score(m * t, n * t), "key bug": score(m * t, -n * t)}


@exercise("ch02-sign-bug")
def _check_sign_bug(answer):
    if not isinstance(answer, sp.Expr):
        return wrong(f"expected a SymPy expression in {', '.join(_BUG_NAMES)}, got {type(answer).__name__}")
    problem = sympy_problem(answer, MAX_BUG_NODES)
    if problem is None and _expanded_terms(answer, MAX_BUG_TERMS) > MAX_BUG_TERMS:
        problem = "is far larger than the answer needs: simplify it first"
    if problem:  # refused before SymPy simplifies it (a large expansion takes minutes)
        return wrong(f"your expression {problem}.")
    S = _bug_symbols()
    unknown = sorted(s.name for s in answer.free_symbols if s.name not in S)
    if unknown:
        return wrong(f"the expression uses symbols {short(unknown)}; only {', '.join(_BUG_NAMES)} are allowed.")
    ans = answer.subs({s: S[s.name] for s in answer.free_symbols}, simultaneous=True)
    scores = _bug_scores(S)
    # screen numerically at random points (fast whatever the expression); SymPy confirms a match
    rng = np.random.default_rng(13)
    points = [dict(zip(("q1", "q2", "k1", "k2"), rng.uniform(-2, 2, 4)), m=rng.uniform(-6, 6), n=rng.uniform(-6, 6),
                   theta=rng.uniform(0.1, 2)) for _ in range(8)]
    got = _values(ans, S, points)
    if got is None:
        return wrong("your expression has no finite real-or-complex value at some real q, k, m, n and positive "
                     f"theta: use only {', '.join(_BUG_NAMES)}, numbers, sin and cos.")
    want = {name: _values(expr, S, points) for name, expr in scores.items()}
    scale = max(1.0, float(np.max(np.abs(want["bug"]))))

    def same(a, b):
        return bool(np.all(np.abs(a - b) <= 1e-9 * scale))

    if same(got, want["bug"]):
        if _is_zero(ans - scores["bug"]):
            return correct("this is the bugged score; now read off which combination of m and n it depends on, "
                           "and what a global shift does to it.")
        return wrong("it is numerically very close to the bugged score, but SymPy does not find them equal: use "
                     "exact numbers instead of rounded floats, write it with sin and cos, and check again.")
    if same(got, want["healthy"]):
        return wrong("that is the healthy RoPE score: in this implementation the query is turned by -m theta.")
    if same(got, want["key bug"]):
        return wrong("that is the score when the key, not the query, is turned the wrong way, which is also the bugged "
                     "score with the sign of its q x k term (q1 k2 - q2 k1) flipped: recheck which of the two you did.")
    if same(got, -want["bug"]):
        return wrong("right size, opposite sign: recheck the sign of the dot product's terms.")
    return wrong("not equal to the score of the bugged implementation: rotate q by -m theta and k by n theta, then "
                 "take their dot product.")


# ---- ch02-complex-rope: RoPE through complex multiplication ----------------------------------


def _rope_cases(rng):
    return [
        ("one vector of width 2", rng.normal(size=(1, 2)), np.array([3.0])),
        ("8 tokens of width 16", rng.normal(size=(8, 16)), np.arange(8.0)),
        ("a (2, 5, 8) batch at shifted fractional positions", rng.normal(size=(2, 5, 8)), np.arange(5.0) * 1.5 + 100),
    ]


@exercise("ch02-complex-rope")
def _check_complex_rope(fn):
    need_function(fn, f"expected a function complex_rope(x, positions), got {type(fn).__name__}")
    for label, x, pos in _rope_cases(np.random.default_rng(21)):
        out = need(call_student(fn, x.copy(), pos.copy(), what=f"on {label} it"))
        got = need(as_float_array(out, f"on {label} what it returned", finite=False))
        want = apply_rope(x, pos)
        if got.shape != want.shape:
            return wrong(f"on {label} it returned shape {got.shape}; expected the shape of x, {want.shape}")
        if np.allclose(got, want, atol=1e-9):
            continue
        if np.allclose(got, apply_rope(x, pos, pairing="half"), atol=1e-9):
            return wrong("it pairs i with i + d_head/2 (half pairing); pair neighbours 2i and 2i + 1, one complex number.")
        if np.allclose(got, apply_rope(x, -pos), atol=1e-9):
            return wrong("it turns the wrong way: multiply by exp(+i m theta_i), not by its conjugate.")
        if any(np.allclose(got, apply_rope(x, whole(pos)), atol=1e-9) for whole in (np.round, np.floor)):
            return wrong(f"on {label} it rounds the positions to whole numbers; positions may be fractional.")
        if not np.allclose(np.linalg.norm(got, axis=-1), np.linalg.norm(x, axis=-1), atol=1e-8):
            return wrong(f"on {label} it changes the length of the vectors; a rotation preserves it.")
        if x.shape[-1] > 2 and np.allclose(got[..., :2], want[..., :2], atol=1e-9):
            return wrong("the first pair is right but later pairs are not: check theta_i = 10000^(-2i/d_head).")
        return wrong(f"on {label} the result is not the rotary embedding of x at those positions.")
    return correct("your complex multiplication is the rotary embedding, pair for pair.")


# ---- ch02-direction-blind: contents whose score cannot tell before from after ----------------
BLIND_HEAD_DIM = 4
BLIND_BASE = 10_000.0
BLIND_OFFSETS = np.arange(1, 2001, dtype=np.float64)


@exercise("ch02-direction-blind")
def _check_direction_blind(answer):
    items = need(as_items(answer, "a pair (q, k) of two arrays of shape (4,)", max_items=64))
    if len(items) != 2:
        return wrong("expected a pair (q, k) of two arrays of shape (4,)")
    q = need(as_float_array(items[0], "q", finite=False))
    k = need(as_float_array(items[1], "k", finite=False))
    if q.shape != (BLIND_HEAD_DIM,) or k.shape != (BLIND_HEAD_DIM,):
        return wrong(f"q and k must both have shape (4,), got {q.shape} and {k.shape}")
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(k))):
        return wrong("q and k must be finite")
    # the verdict does not depend on the scale of q or k: judge the unit vectors (scaled by their
    # largest entry first, so that no square overflows or underflows)
    units = {}
    for name, x in (("q", q), ("k", k)):
        top = float(np.max(np.abs(x)))
        if top == 0.0:
            return wrong(f"{name} is zero: every pair must carry content.")
        x = x / top
        units[name] = x = x / np.linalg.norm(x)
        for i in range(2):
            if np.hypot(x[2 * i], x[2 * i + 1]) < 1e-6:
                return wrong(f"pair {i} of {name} (coordinates {2 * i}, {2 * i + 1}) is zero: every pair must carry content.")
    q, k = units["q"], units["k"]
    cos_qk = abs(q @ k)
    if cos_qk > 1 - 1e-6:
        return wrong("q and k are collinear as 4-vectors (one is a multiple of the other): that case is easy; find a pair that is not.")
    d = BLIND_OFFSETS
    forward = apply_rope(np.broadcast_to(k, (d.size, 4)), d, base=BLIND_BASE) @ q
    backward = apply_rope(np.broadcast_to(k, (d.size, 4)), -d, base=BLIND_BASE) @ q
    gap = np.abs(forward - backward)
    if not np.all(np.isfinite(gap)):
        return wrong("the scores of q and k are not finite numbers; choose moderate entries.")
    if np.all(gap <= 1e-9):  # q and k are unit vectors: an absolute tolerance is a relative one
        return correct("the score is the same at +delta and -delta for every offset tested.")
    worst = int(np.argmax(gap))
    return wrong(f"direction is still visible: at delta = {d[worst]:.0f} the scores of the unit vectors q/|q| and "
                 f"k/|k| at +delta and -delta differ by {gap[worst]:.3g}.")


# ---- ch02-first-return: the first far offset where the 16-wide bank's kernel comes back above 0.9 ----
RETURN_HEAD_DIM, RETURN_LEVEL, RETURN_AFTER = 16, 0.9, 64
RETURN_SEARCH = 1_000_000  # the offsets the check scans; the answer lies well inside


def _return_kernel(lags):
    return np.cos(np.multiply.outer(np.asarray(lags, dtype=float), frequencies(RETURN_HEAD_DIM))).mean(axis=-1)


@exercise("ch02-first-return")
def _check_first_return(answer):
    offset = need(as_number(answer, "offset"))
    if offset != round(offset) or not RETURN_AFTER < offset <= RETURN_SEARCH:
        return wrong(f"give a whole offset beyond {RETURN_AFTER} (the check scans up to {RETURN_SEARCH:,})")
    level = float(_return_kernel(offset))
    if level <= RETURN_LEVEL:
        return wrong(f"K({offset:.0f}) = {level:.4f}, not above {RETURN_LEVEL}")
    earlier = np.arange(RETURN_AFTER + 1.0, offset)
    if earlier.size and _return_kernel(earlier).max() > RETURN_LEVEL:
        return wrong(f"K({offset:.0f}) = {level:.4f} is above {RETURN_LEVEL}, but an earlier offset beyond {RETURN_AFTER} is too")
    return correct(f"K({offset:.0f}) = {level:.4f}: the first return above {RETURN_LEVEL} beyond the window.")


# ---- ch02-which-defect: measure a routing fault and a value-path fault, alone or together --------
HEAD_LENGTH = 8  # tokens 0..7; the query sits at position 7 and should copy token 5
#: each head's (key_shift, value_lag): a half shift, two faults that cancel in the output, none, two that add up
_HEAD_FAULTS = {"A": (0.5, 0), "B": (-1.0, 1), "C": (0.0, 0), "D": (2.0, -1)}
SHIFT_TOLERANCE = 0.1  # a key shift within this of the truth is accepted


def mystery_heads() -> dict:
    """Four attention heads that should copy the token two places before the query.

    Content-free rotary heads (every key the same vector, the query that vector turned back by two
    positions), query at position 7 over tokens 0..7; keys cached ``key_shift`` ids too high (routing,
    whole or half) and each value slot read ``value_lag`` tokens late, cyclically (value path).
    Returns ``heads["A"](values) -> (weights, output)`` by name: ``values`` has shape ``(8, v)``, the
    ``weights`` (8 of them) sum to one, ``output = weights @ (values as the head reads them)``.
    """
    def make(key_shift: float, value_lag: int):
        return copy_back_head(2, length=HEAD_LENGTH, head_dim=16, key_shift=key_shift, value_lag=value_lag,
                              sharpness=8.0, seed=11)

    return {name: make(*faults) for name, faults in _HEAD_FAULTS.items()}


def _read_faults(answer):
    """``({head: (key_shift, value_lag)}, None)`` from the answer, or ``(None, verdict)``."""
    if not isinstance(answer, dict):
        return None, wrong("expected a dict such as {'A': (key_shift, value_lag), ...}, got "
                           f"{type(answer).__name__}")
    names = sorted(_HEAD_FAULTS)
    if len(answer) != len(names) or not all(isinstance(key, str) and key in names for key in answer):
        keys = ", ".join(short(key, 20) for key in itertools.islice(answer, 6)) + (", ..." if len(answer) > 6 else "")
        return None, wrong(f"give one (key_shift, value_lag) for each head {names}, got keys [{keys}]")
    faults = {}
    for name in names:
        items = need(as_items(answer[name], f"head {name}'s (key_shift, value_lag)", max_items=2))
        if len(items) != 2:
            return None, wrong(f"head {name}: give a pair (key_shift, value_lag)")
        shift = need(as_number(items[0], f"head {name}'s key_shift"))
        lag = need(as_whole(items[1], f"head {name}'s value_lag (a whole number of slots)"))
        faults[name] = (float(shift), int(lag))
    return faults, None


@exercise("ch02-which-defect")
def _check_which_defect(answer):
    faults = need(_read_faults(answer))
    shift_ok = {h: abs(faults[h][0] - _HEAD_FAULTS[h][0]) <= SHIFT_TOLERANCE for h in faults}
    lag_ok = {h: (faults[h][1] - _HEAD_FAULTS[h][1]) % HEAD_LENGTH == 0 for h in faults}  # a cyclic lag
    if all(shift_ok.values()) and all(lag_ok.values()):
        return correct("the weights say which slots a head reads, the output what those slots hand back: a routing "
                       "fault moves the first, a value-path fault moves the second against the first.")
    for h in sorted(faults):
        shift, lag = faults[h]
        true_shift, true_lag = _HEAD_FAULTS[h]
        if (shift, lag) == (0.0, 0) and _HEAD_FAULTS[h] != (0.0, 0) and not shift_ok[h] and not lag_ok[h]:
            return wrong(f"head {h} is not healthy: its output may look right, but compare its weights with the "
                         "slot a healthy head reads.")
        if not shift_ok[h] and true_shift != 0 and abs(shift + true_shift) <= SHIFT_TOLERANCE:
            return wrong(f"head {h}'s key_shift has the wrong sign: keys cached with ids that are too high look "
                         "later than they are, so the head reads an earlier slot.")
        if not shift_ok[h] and true_shift != round(true_shift) and shift == round(shift):
            return wrong(f"head {h}'s key_shift is not a whole number: look at how its weight is shared between "
                         "its two heaviest slots.")
        if not lag_ok[h] and (lag + true_lag) % HEAD_LENGTH == 0:
            return wrong(f"head {h}'s value_lag has the wrong sign: a slot that holds an earlier token's message "
                         "has a positive lag.")
    bad = [h for h in sorted(faults) if not (shift_ok[h] and lag_ok[h])]
    return wrong(f"heads {bad} are misdiagnosed: feed one-hot values, and read the key shift from the weights and "
                 "the value lag from how the output is moved against the weights.")
