"""Every chapter 2 check: fails on a stub, fails on typical wrong answers with the intended
message, passes on a solution written here independently of the checker."""

import numpy as np
import pytest
import sympy as sp

from ropegeo.book.exercises import check, exercise_ids

IDS = ["ch02-complex-rope", "ch02-direction-blind", "ch02-first-return", "ch02-score-by-hand", "ch02-sign-bug",
       "ch02-which-defect"]


def _raise(*args, **kwargs):
    raise NotImplementedError


def test_all_registered():
    assert exercise_ids("ch02") == IDS


@pytest.mark.parametrize("exercise_id", IDS)
@pytest.mark.parametrize("stub", [None, Ellipsis, _raise])
def test_stubs_fail(exercise_id, stub):
    fb = check(exercise_id, stub)
    assert not fb
    assert "stub" in fb.message or "NotImplementedError" in fb.message or "expected" in fb.message


# ---------------------------------------------------------------- ch02-score-by-hand
# q = (1, 2) at m = 4, k = (3, -1) at n = 1, theta = 0.5: rotate by hand with complex numbers
_ZQ = (1 + 2j) * np.exp(1j * 4 * 0.5)
_ZK = (3 - 1j) * np.exp(1j * 1 * 0.5)
SCORE = float(np.real(np.conj(_ZQ) * _ZK))


def test_score_solution_passes():
    assert check("ch02-score-by-hand", SCORE)
    assert check("ch02-score-by-hand", np.float32(SCORE))
    assert check("ch02-score-by-hand", round(SCORE, 3))  # "to three decimals" passes


@pytest.mark.parametrize("answer", [round(SCORE, 1), round(SCORE, 2) - 0.01, SCORE + 0.04, SCORE - 0.0035 * 3])
def test_score_rounded_too_early(answer):
    """Near the score but outside the tolerance: the method is right, so ask for three decimals, not a recompute."""
    assert 1e-3 * abs(SCORE) < abs(answer - SCORE) <= 0.05
    fb = check("ch02-score-by-hand", answer)
    assert not fb and "give at least three decimals" in fb.message and "is not the score" not in fb.message


@pytest.mark.parametrize(
    "answer, fragment",
    [
        # the displacement taken as m - n: rotate query by 1, key by 4
        (float(np.real(np.conj((1 + 2j) * np.exp(0.5j)) * (3 - 1j) * np.exp(2j))), "swapped"),
        (1.0, "without any rotation"),  # q . k
        (1.0 * np.cos(-3 * 0.5), "only the symmetric"),
        (-(-7.0) * np.sin(-3 * 0.5), "only the oriented sine term"),  # -(q x k) sin(delta theta) alone: -6.9825
        (1.0 * np.cos(-1.5) + (-7.0) * np.sin(-1.5), "sign reversed"),  # oriented term flipped
        (1.0 * np.cos(np.radians(-1.5)) + 7.0 * np.sin(np.radians(-1.5)), "degrees"),
        (3.0, "is not the score"),
        ("minus six", "single real number"),
        (float("nan"), "finite"),
    ],
)
def test_score_wrong_answers(answer, fragment):
    fb = check("ch02-score-by-hand", answer)
    assert not fb
    assert fragment in fb.message
    assert f"{SCORE:.4f}" not in fb.message


# ---------------------------------------------------------------- ch02-sign-bug
q1, q2, k1, k2, m, n = sp.symbols("q1 q2 k1 k2 m n", real=True)
delta = sp.Symbol("delta", real=True)
theta = sp.Symbol("theta", positive=True)
# independent derivation: the query turned by -m theta and the key by n theta differ by the angle
# (n + m) theta, so the score is q.k cos((m + n) theta) - (q1 k2 - q2 k1) sin((m + n) theta)
BUG = (q1 * k1 + q2 * k2) * sp.cos((m + n) * theta) - (q1 * k2 - q2 * k1) * sp.sin((m + n) * theta)
HEALTHY = BUG.subs(m, -m)  # the healthy score depends on n - m
KEY_BUG = BUG.subs(n, -n).subs(m, -m)  # query turned by +m, key by -n: the angle -(m + n) theta


def test_sign_bug_solution_passes():
    assert check("ch02-sign-bug", BUG)
    assert check("ch02-sign-bug", sp.expand(sp.expand_trig(BUG)))
    Q1, Q2, K1, K2, M, N, T = sp.symbols("q1 q2 k1 k2 m n theta")  # symbols without assumptions match by name
    assert check("ch02-sign-bug", (Q1 * K1 + Q2 * K2) * sp.cos((M + N) * T) - (Q1 * K2 - Q2 * K1) * sp.sin((M + N) * T))


def test_sign_bug_accepts_an_unsimplified_derivation():
    def rot(a):
        return sp.Matrix([[sp.cos(a), -sp.sin(a)], [sp.sin(a), sp.cos(a)]])

    raw = ((rot(-m * theta) * sp.Matrix([q1, q2])).T * (rot(n * theta) * sp.Matrix([k1, k2])))[0, 0]
    assert check("ch02-sign-bug", raw)
    assert check("ch02-sign-bug", BUG.rewrite(sp.exp))


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (HEALTHY, "healthy RoPE score"),
        (KEY_BUG, "the key, not the query"),
        # the sign of the q x k term flipped in the bugged score gives the same expression: the message names both
        ((q1 * k1 + q2 * k2) * sp.cos((m + n) * theta) + (q1 * k2 - q2 * k1) * sp.sin((m + n) * theta), "q x k term"),
        (-BUG, "opposite sign"),
        (BUG.subs(theta, 2 * theta), "not equal"),
        (BUG.subs(n, delta), "only"),
        (3.5, "SymPy expression"),
        ("cos((m+n)*theta)", "SymPy expression"),
    ],
)
def test_sign_bug_wrong_answers(answer, fragment):
    fb = check("ch02-sign-bug", answer)
    assert not fb
    assert fragment in fb.message
    assert "m + n" not in fb.message and "(m+n)" not in fb.message


def test_sign_bug_refuses_a_huge_expression_before_simplifying():
    fb = check("ch02-sign-bug", (q1 + q2 + k1 + k2 + m) ** 8)
    assert not fb and "far larger" in fb.message
    x = q1 + q2 + k1 + k2 + m + theta
    assert "far larger" in check("ch02-sign-bug", BUG + sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1).message
    assert "far larger" in check("ch02-sign-bug", BUG + sum(sp.sin(i * m * theta) for i in range(2, 200))).message
    assert check("ch02-sign-bug", BUG + sp.sin(3 * m * theta) ** 2 + sp.cos(3 * m * theta) ** 2 - 1)


@pytest.mark.parametrize("answer, fragment", [
    (sp.Function("f")(m), "elementary functions"),
    (sp.Integral(q1, (q1, 0, 1)) * BUG, "Integral"),
    (sp.Sum(sp.sin(m * sp.Symbol("j")), (sp.Symbol("j"), 1, 10**9)), "Sum"),
    (BUG / sp.sin(0 * m), "sin and cos"),
    (sp.exp(sp.exp(sp.exp(100 * m))), "sin and cos"),
    (sp.sin(10**400 * m * theta), "far larger"),
    (sp.I * BUG, "not equal"),
    (BUG + 1e-12 * q1, "exact numbers"),
])
def test_sign_bug_odd_expressions(answer, fragment):
    fb = check("ch02-sign-bug", answer)
    assert not fb and fragment in fb.message and "\n" not in fb.message


# ---------------------------------------------------------------- ch02-complex-rope


def complex_rope(x, positions):
    """Independent: explicit per-pair loop with complex numbers."""
    x = np.asarray(x, dtype=float)
    out = np.empty_like(x)
    d = x.shape[-1]
    for i in range(d // 2):
        w = 10_000.0 ** (-2 * i / d)
        z = (x[..., 2 * i] + 1j * x[..., 2 * i + 1]) * np.exp(1j * w * np.asarray(positions, dtype=float))
        out[..., 2 * i], out[..., 2 * i + 1] = z.real, z.imag
    return out


def half_rope(x, positions):
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    perm = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])  # interleaved -> half layout
    inv = np.argsort(perm)
    return complex_rope(x[..., inv], positions)[..., perm]


def test_complex_rope_solution_passes():
    assert check("ch02-complex-rope", complex_rope)


@pytest.mark.parametrize(
    "fn, fragment",
    [
        (lambda x, p: complex_rope(x, -np.asarray(p)), "wrong way"),
        (half_rope, "half pairing"),
        (lambda x, p: 2 * complex_rope(x, p), "length"),
        (lambda x, p: np.concatenate([complex_rope(x[..., :2], p), complex_rope(x[..., 2:], p)], axis=-1)
         if np.shape(x)[-1] > 2 else complex_rope(x, p), "later pairs"),
        (lambda x, p: complex_rope(x, p)[..., ::-1], "not the rotary embedding"),
        (lambda x, p: complex_rope(x, np.round(p)), "rounds the positions"),
        (lambda x, p: complex_rope(x, np.asarray(p).astype(int)), "rounds the positions"),
        (lambda x, p: complex_rope(x, p).ravel(), "shape"),
        (lambda x, p: x[100], "raised IndexError"),
        ("not a function", "expected a function"),
    ],
)
def test_complex_rope_wrong_answers(fn, fragment):
    fb = check("ch02-complex-rope", fn)
    assert not fb
    assert fragment in fb.message


# ---------------------------------------------------------------- ch02-direction-blind


def test_direction_blind_solution_passes():
    # collinear (same or opposite direction) pair by pair, not collinear overall
    assert check("ch02-direction-blind", (np.array([1.0, 2.0, -1.0, 0.5]), np.array([-0.5, -1.0, 4.0, -2.0])))


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0]), "collinear as 4-vectors"),
        (([1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]), "pair 1 of q"),
        (([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]), "pair 1 of k"),
        (([1.0, 0.0, 0.0, 1.0], [0.0, 2.0, 0.0, 3.0]), "direction is still visible"),
        (([1.0, 0.0, 0.0, 1.0], [2.0, 0.0, 1.0, 3.0]), "direction is still visible"),
        (([1.0, 0.0, 0.0], [1.0, 0.0, 0.0]), "shape (4,)"),
        ((1.0, 2.0, 3.0), "pair (q, k)"),
        (([np.nan, 0, 0, 1], [1, 0, 0, 1]), "finite"),
    ],
)
def test_direction_blind_wrong_answers(answer, fragment):
    fb = check("ch02-direction-blind", answer)
    assert not fb
    assert fragment in fb.message


def test_direction_blind_needs_frequencies_in_zero_pi():
    """The solution's caveat: at theta and 2 pi - theta two non-collinear pairs cancel at every whole offset,
    while RoPE's frequencies (distinct, in (0, pi)) make the sines independent, so the same contents are seen."""
    q, k = np.array([1.0, 0.0, 1.0, 0.0]), np.array([0.0, 1.0, 0.0, 1.0])  # each pair: q x k = 1, not collinear
    delta = np.arange(1.0, 2001.0)

    def odd_part(theta):  # S(delta) - S(-delta) = -2 sum_i (q x k)_i sin(delta theta_i), by explicit rotations
        def score(d):
            total = 0.0
            for i, t in enumerate(theta):
                c, s_ = np.cos(d * t), np.sin(d * t)
                q1, q2, k1, k2 = q[2 * i], q[2 * i + 1], k[2 * i], k[2 * i + 1]
                total = total + q1 * (c * k1 - s_ * k2) + q2 * (s_ * k1 + c * k2)
            return total
        return score(delta) - score(-delta)

    assert np.abs(odd_part([1.0, 2 * np.pi - 1.0])).max() < 1e-9  # blind, though no pair is collinear
    rope = 10_000.0 ** (-np.arange(0, 4, 2) / 4)  # (1, 0.01)
    assert np.abs(odd_part(rope)).max() > 1  # RoPE's bank sees the direction
    assert not check("ch02-direction-blind", (q, k))
    for base in (1.5, 10.0, 10_000.0):
        for d in (4, 8, 16):
            th = base ** (-np.arange(0, d, 2) / d)
            assert 0 < th.min() and th.max() < np.pi and np.all(np.diff(th) < 0)
            assert np.linalg.matrix_rank(np.sin(np.outer(delta, th))) == th.size  # independent sines


# ---------------------------------------------------------------- ch02-which-defect


def _diagnose():
    """Measure each head's faults with one-hot values (independent of the checker's table): the key shift from
    the weights' centre (the score is symmetric about slot 5 - key_shift), the value lag from the circular
    cross-correlation of the output with the weights."""
    from ropegeo.book.exercises.ch02 import mystery_heads

    faults = {}
    for name, head in mystery_heads().items():
        w, out = head(np.eye(8))
        assert w.shape == (8,) and abs(w.sum() - 1) < 1e-12
        peak = int(np.argmax(w))
        side = peak - 1 if w[peak - 1] > w[(peak + 1) % 8] else peak + 1
        # a tie between the two heaviest slots is a half shift; a clear winner a whole one
        centre = (peak + side) / 2 if abs(w[peak] - w[side]) < 1e-9 else peak
        corr = [float(np.dot(np.roll(out, lag), w)) for lag in range(8)]  # out = w moved back by the lag
        lag = int(np.argmax(corr))
        faults[name] = (5 - centre, lag - 8 if lag > 4 else lag)
    return faults


def test_which_defect_solution_passes():
    faults = _diagnose()
    assert faults == {"A": (0.5, 0), "B": (-1, 1), "C": (0, 0), "D": (2, -1)}
    assert check("ch02-which-defect", faults)
    assert check("ch02-which-defect", {h: [s + 0.05, lag + 8] for h, (s, lag) in faults.items()})  # lags are cyclic


def test_which_defect_asks_what_the_chapter_did_not_show():
    """A half shift, both faults at once, sizes other than 1 and a head whose output looks healthy."""
    from ropegeo.book.exercises.ch02 import mystery_heads

    heads = mystery_heads()
    outputs = {h: heads[h](np.eye(8))[1] for h in heads}
    assert np.abs(outputs["B"] - outputs["C"]).max() < 0.01 and int(np.argmax(outputs["B"])) == 5
    w_a, _ = heads["A"](np.eye(8))
    assert w_a[4] == pytest.approx(w_a[5], rel=1e-9) and w_a[4] > 0.4


@pytest.mark.parametrize("change, fragment", [
    ({"B": (0, 0)}, "head B is not healthy"),
    ({"D": (-2, -1)}, "wrong sign"),
    ({"A": (1, 0)}, "not a whole number"),
    ({"A": (0, 0)}, "not a whole number"),
    ({"D": (2, 1)}, "value_lag has the wrong sign"),
    ({"C": (3, 2)}, "misdiagnosed"),
    ({"B": (-1, 2)}, "misdiagnosed"),
])
def test_which_defect_wrong_answers(change, fragment):
    good = {"A": (0.5, 0), "B": (-1, 1), "C": (0, 0), "D": (2, -1)}
    fb = check("ch02-which-defect", dict(good, **change))
    assert not fb and fragment in fb.message


@pytest.mark.parametrize("answer, fragment", [
    (["routing"], "expected a dict"),
    ({"A": (0, 0)}, "for each head"),
    ({"A": "healthy", "B": (0, 0), "C": (0, 0), "D": (0, 0)}, "text"),
    ({"A": (0, 0, 0), "B": (0, 0), "C": (0, 0), "D": (0, 0)}, "too many"),
    ({"A": (0, 0.5), "B": (0, 0), "C": (0, 0), "D": (0, 0)}, "whole number"),
    ({"A": (float("nan"), 0), "B": (0, 0), "C": (0, 0), "D": (0, 0)}, "finite"),
])
def test_which_defect_odd_answers(answer, fragment):
    fb = check("ch02-which-defect", answer)
    assert not fb and fragment in fb.message


def test_mystery_heads_validate():
    from ropegeo.book.exercises.ch02 import mystery_heads

    head = mystery_heads()["A"]
    for bad in (np.eye(7), np.ones(8), np.full((8, 2), np.nan)):
        with pytest.raises(ValueError, match="values"):
            head(bad)


def test_direction_blind_placeholders():
    fb = check("ch02-direction-blind", (Ellipsis, Ellipsis))
    assert not fb and "placeholders" in fb.message


# ---------------------------------------------------------------- odd answers


@pytest.mark.parametrize("answer, fragment", [
    (10**400, "far outside the range"), (float("inf"), "finite"), ("-6.9", "text"), (sp.Symbol("s"), "Symbol"),
    (np.array([SCORE]), "shape (1,)"),
])
def test_score_odd_answers(answer, fragment):
    fb = check("ch02-score-by-hand", answer)
    assert not fb and fragment in fb.message


def test_score_accepts_numpy_and_sympy_numbers():
    assert check("ch02-score-by-hand", np.array(SCORE))
    assert check("ch02-score-by-hand", sp.Float(SCORE))


def test_score_message_of_a_huge_number_is_short():
    fb = check("ch02-score-by-hand", -1e300)
    assert not fb and len(fb.message) < 200 and "is not the score" in fb.message


@pytest.mark.parametrize("scale", [1e-150, 1e-3, 1.0, 1e150, 1e300])
def test_direction_blind_is_scale_invariant(scale):
    blind = (np.array([1.0, 2.0, -1.0, 0.5]), np.array([-0.5, -1.0, 4.0, -2.0]))
    visible = (np.array([1.0, 0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0, 1.0]))
    assert check("ch02-direction-blind", (blind[0] * scale, blind[1] * scale))
    assert check("ch02-direction-blind", (blind[0] * scale, blind[1]))
    fb = check("ch02-direction-blind", (visible[0] * scale, visible[1] * scale))
    assert not fb and "direction is still visible" in fb.message


def test_direction_blind_huge_entries_are_not_a_pass():
    # the probe: at scale 1e154 the old tolerance overflowed to inf and everything passed
    fb = check("ch02-direction-blind", ([1e154, 0, 1e154, 0], [1e154, 0, 0, 1e154]))
    assert not fb and "direction is still visible" in fb.message
    assert not check("ch02-direction-blind", ([1e308, 0, 1e308, 0], [1e308, 0, 0, 1e308]))


@pytest.mark.parametrize("answer, fragment", [
    ((10**400, 1), "far outside"),
    (([np.inf, 0, 0, 1], [1, 0, 0, 1]), "finite"),
    ((["1", "0", "0", "1"], [1, 0, 0, 1]), "text"),
    (([0, 0, 0, 0], [1, 0, 0, 1]), "zero"),
    (range(10**20), "far too many"),
    ("qk", "text"),
])
def test_direction_blind_odd_answers(answer, fragment):
    fb = check("ch02-direction-blind", answer)
    assert not fb and fragment in fb.message


@pytest.mark.parametrize("answer, fragment", [
    ({"A": np.array([0.5, 0.0, 1.0]), "B": (0, 0), "C": (0, 0), "D": (0, 0)}, "far too many"),
    ({1: (0, 0), "B": (0, 0), "C": (0, 0)}, "for each head"),
    ({"A": (0, 0), "B": (0, 0), 3.5: (0, 0)}, "for each head"),
    ({"A": (0, 0), "B": (0, 0), "C": (0, 0), "D": (0, 0), "E": (0, 0)}, "for each head"),
    ({"A": None, "B": (0, 0), "C": (0, 0), "D": (0, 0)}, "NoneType"),
    ({"A": (0,), "B": (0, 0), "C": (0, 0), "D": (0, 0)}, "give a pair"),
])
def test_which_defect_more_odd_answers(answer, fragment):
    fb = check("ch02-which-defect", answer)
    assert not fb and fragment in fb.message


# ---------------------------------------------------------------- ch02-first-return
def _kernel16(delta):
    """K(delta) of the 16-wide base-10,000 bank by an explicit loop over the pairs, theta_i = 10^(-i/2)."""
    delta = np.asarray(delta, dtype=float)
    return sum(np.cos(delta * 10.0 ** (-i / 2)) for i in range(8)) / 8


def _first_return():
    lags = np.arange(65.0, 200_001.0)
    k = _kernel16(lags)
    first = int(lags[np.argmax(k > 0.9)])
    # a decision with margin: no earlier offset within rounding of 0.9, and the answer clearly above it
    assert np.abs(k[: first - 65] - 0.9).min() > 1e-9 and k[first - 65] > 0.9 + 1e-9
    return first


def test_first_return_solution_passes():
    first = _first_return()
    assert check("ch02-first-return", first)
    assert check("ch02-first-return", np.int64(first)) and check("ch02-first-return", float(first))


@pytest.mark.parametrize("shift, fragment", [(-1, "not above 0.9"), (None, "earlier offset")])
def test_first_return_wrong_answers(shift, fragment):
    first = _first_return()
    if shift is None:  # a later return above 0.9: the first one comes before it
        lags = np.arange(first + 1.0, 1_000_001.0)
        answer = int(lags[np.argmax(_kernel16(lags) > 0.9)])
    else:
        answer = first + shift
    fb = check("ch02-first-return", answer)
    assert not fb and fragment in fb.message
    assert str(first) not in fb.message  # never reveals the solution


@pytest.mark.parametrize("answer, fragment", [(64, "beyond 64"), (81_000.5, "whole offset"), (2_000_000, "beyond 64"),
                                              ("81681", "expected"), (float("nan"), "expected")])
def test_first_return_odd_answers(answer, fragment):
    fb = check("ch02-first-return", answer)
    assert not fb and fragment in fb.message


def test_first_return_solution_explanation():
    """The solution's reading: at the first return u is on a turn and v is 0.7 rad off; at the best both are close."""
    def miss(phase):
        return abs((phase + np.pi) % (2 * np.pi) - np.pi)

    first, best = _first_return(), 615_746
    assert miss(1e-3 * first) < 1e-3 and 0.6 < miss(10 ** -3.5 * first) < 0.8
    assert miss(1e-3 * best) < 0.1 and miss(10 ** -3.5 * best) < 0.1
    assert 0.9 < _kernel16(first) < _kernel16(best)
    pairs = {d: np.array([miss(d * 10.0 ** (-i / 2)) for i in range(8)]) for d in (first, best)}
    odd = pairs[first][1::2]
    assert round(odd.min(), 2) == 0.37 and round(odd.max(), 2) == 0.70  # "the odd pairs by 0.37 to 0.70"
    assert np.sum(pairs[best] < 0.13) == 6  # "six of the eight pairs within about 0.13 of a turn"
