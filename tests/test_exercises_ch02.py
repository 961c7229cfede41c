"""Every chapter 2 check: fails on a stub, fails on typical wrong answers with the intended
message, passes on a solution written here independently of the checker."""

import numpy as np
import pytest
import sympy as sp

from ropegeo.exercises import check, exercise_ids

IDS = ["ch02-direction-blind", "ch02-rotate-pair", "ch02-score-by-hand", "ch02-sign-flip", "ch02-which-defect"]


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


@pytest.mark.parametrize(
    "answer, fragment",
    [
        # the displacement taken as m - n: rotate query by 1, key by 4
        (float(np.real(np.conj((1 + 2j) * np.exp(0.5j)) * (3 - 1j) * np.exp(2j))), "swapped"),
        (1.0, "without any rotation"),  # q . k
        (1.0 * np.cos(-3 * 0.5), "only the symmetric"),
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


# ---------------------------------------------------------------- ch02-sign-flip
q1, q2, k1, k2, delta = sp.symbols("q1 q2 k1 k2 delta", real=True)
theta = sp.Symbol("theta", positive=True)
# independent derivation: s(d) = q.k cos(d theta) - (q1 k2 - q2 k1) sin(d theta), so the difference
# s(-d) - s(d) = 2 (q1 k2 - q2 k1) sin(d theta)
FLIP = 2 * (q1 * k2 - q2 * k1) * sp.sin(delta * theta)


def test_sign_flip_solution_passes():
    assert check("ch02-sign-flip", FLIP)
    # an equivalent but differently written form
    assert check("ch02-sign-flip", sp.expand(-2 * q2 * k1 * sp.sin(delta * theta) + 2 * q1 * k2 * sp.sin(delta * theta)))
    # symbols with no assumptions are matched by name
    Q1, Q2, K1, K2, D, T = sp.symbols("q1 q2 k1 k2 delta theta")
    assert check("ch02-sign-flip", 2 * (Q1 * K2 - Q2 * K1) * sp.sin(D * T))


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (-FLIP, "opposite sign"),
        (FLIP / 2, "half the right size"),
        (FLIP + (q1 * k1 + q2 * k2) * sp.cos(delta * theta), "does not vanish when k = q"),
        (2 * (q1 * k2 - q2 * k1) * sp.cos(delta * theta), "not odd in delta"),
        (2 * (q1 * k2 - q2 * k1) * sp.sin(2 * delta * theta), "not equal"),
        (FLIP.subs(theta, sp.Symbol("omega")), "only"),
        (3.5, "SymPy expression"),
        ("2*sin(delta)", "SymPy expression"),
    ],
)
def test_sign_flip_wrong_answers(answer, fragment):
    fb = check("ch02-sign-flip", answer)
    assert not fb
    assert fragment in fb.message
    assert "sin(delta*theta)" not in fb.message


# ---------------------------------------------------------------- ch02-rotate-pair


def rotate_pair(x, angle):
    x = np.asarray(x, dtype=float)
    z = (x[..., 0] + 1j * x[..., 1]) * np.exp(1j * np.asarray(angle, dtype=float))
    return np.stack([z.real, z.imag], axis=-1)


def test_rotate_solution_passes():
    assert check("ch02-rotate-pair", rotate_pair)


@pytest.mark.parametrize(
    "fn, fragment",
    [
        (lambda x, a: rotate_pair(x, -np.asarray(a)), "clockwise"),
        (lambda x, a: 2 * rotate_pair(x, a), "length"),
        (lambda x, a: rotate_pair(x, np.radians(a)), "degrees"),
        (lambda x, a: rotate_pair(x, a)[..., ::-1] * np.array([1, -1]) if np.ndim(a) == 0 else rotate_pair(x, a), "not the rotation"),
        (lambda x, a: rotate_pair(x, np.ravel(a)[0]), "not the rotation"),
        (lambda x, a: rotate_pair(x, a).ravel(), "shape"),
        (lambda x, a: np.einsum("ij,...j->...i", [[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]], x), "raised"),
        ("not a function", "expected a function"),
    ],
)
def test_rotate_wrong_answers(fn, fragment):
    fb = check("ch02-rotate-pair", fn)
    assert not fb
    assert fragment in fb.message


# ---------------------------------------------------------------- ch02-direction-blind


def test_direction_blind_solution_passes():
    # parallel (or anti-parallel) pair by pair, not parallel overall
    assert check("ch02-direction-blind", (np.array([1.0, 2.0, -1.0, 0.5]), np.array([-0.5, -1.0, 4.0, -2.0])))


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0]), "parallel as 4-vectors"),
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


# ---------------------------------------------------------------- ch02-which-defect


def _diagnose():
    """Diagnose the heads by probing with one-hot values (independent of the checker's table)."""
    from ropegeo.exercises.ch02 import mystery_heads

    verdict = {}
    for name, head in mystery_heads().items():
        w, out = head(np.eye(8))
        assert w.shape == (8,) and abs(w.sum() - 1) < 1e-12
        attends, reads = int(np.argmax(w)), int(np.argmax(out))
        verdict[name] = "healthy" if (attends, reads) == (5, 5) else ("routing" if attends != 5 else "value")
    return verdict


def test_which_defect_solution_passes():
    verdict = _diagnose()
    assert sorted(verdict.values()) == ["healthy", "routing", "value"]
    assert check("ch02-which-defect", verdict)


def test_which_defect_wrong_answers():
    good = _diagnose()
    routing = next(h for h, v in good.items() if v == "routing")
    value = next(h for h, v in good.items() if v == "value")
    swapped = dict(good, **{routing: "value", value: "routing"})
    fb = check("ch02-which-defect", swapped)
    assert not fb and "swapped" in fb.message
    healthy = next(h for h, v in good.items() if v == "healthy")
    rotated = dict(good, **{healthy: "value", value: "healthy"})
    fb = check("ch02-which-defect", rotated)
    assert not fb and "misdiagnosed" in fb.message
    assert not check("ch02-which-defect", {h: "healthy" for h in good})
    assert "exactly one" in check("ch02-which-defect", {h: "healthy" for h in good}).message
    assert "one verdict for each" in check("ch02-which-defect", {"A": "healthy"}).message
    assert "must be one of" in check("ch02-which-defect", dict(good, A="broken")).message
    assert "expected a dict" in check("ch02-which-defect", ["routing", "healthy", "value"]).message


def test_mystery_heads_validate():
    from ropegeo.exercises.ch02 import mystery_heads

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


def test_sign_flip_refuses_a_huge_expression_before_simplifying():
    # (q1 + q2 + k1 + k2 + delta)**8 expands to 495 terms; simplifying that took minutes
    fb = check("ch02-sign-flip", (q1 + q2 + k1 + k2 + delta) ** 8)
    assert not fb and "far larger" in fb.message
    fb = check("ch02-sign-flip", sp.expand((q1 + q2 + k1 + k2 + delta) ** 6))
    assert not fb and "far larger" in fb.message
    # an identity hidden in trigonometric functions that expand_trig would blow up before simplifying
    x = q1 + q2 + k1 + k2 + delta + theta
    assert "far larger" in check("ch02-sign-flip", FLIP + sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1).message
    assert "far larger" in check("ch02-sign-flip", FLIP + sp.sin(1000 * delta) ** 2 + sp.cos(1000 * delta) ** 2 - 1).message
    # ... while a small hidden identity is still proved
    assert check("ch02-sign-flip", FLIP + sp.sin(3 * delta * theta) ** 2 + sp.cos(3 * delta * theta) ** 2 - 1)
    # a long sum: many terms, each cheap
    assert "far larger" in check("ch02-sign-flip", FLIP + sum(sp.sin(i * delta * theta) for i in range(2, 200))).message


def test_sign_flip_accepts_an_unsimplified_derivation():
    # the difference of the two scores straight from the rotation matrices, not simplified
    def score(d):
        rot = sp.Matrix([[sp.cos(d * theta), -sp.sin(d * theta)], [sp.sin(d * theta), sp.cos(d * theta)]])
        return (sp.Matrix([[q1, q2]]) * rot * sp.Matrix([k1, k2]))[0, 0]

    assert check("ch02-sign-flip", score(-delta) - score(delta))
    assert check("ch02-sign-flip", sp.expand(score(-delta) - score(delta)))
    assert check("ch02-sign-flip", FLIP.rewrite(sp.exp))  # the same, through complex exponentials


@pytest.mark.parametrize("answer, fragment", [
    (sp.Function("f")(delta), "elementary functions"),  # an undefined function has no value
    (sp.Integral(q1, (q1, 0, 1)) * FLIP, "Integral"),  # SymPy's lambdify raises NotImplementedError on it
    (sp.Sum(sp.sin(delta * sp.Symbol("n")), (sp.Symbol("n"), 1, 10**9)), "Sum"),  # 10**9 terms to add up
    (FLIP / sp.sin(0 * delta), "sin and cos"),  # zoo: no finite value anywhere
    (sp.oo, "sin and cos"),
    (sp.exp(sp.exp(sp.exp(100 * delta))), "sin and cos"),  # float64 overflow, not a number with many digits
    (sp.sin(10**400 * delta * theta), "far larger"),  # expand_trig would write sin(n x) with n terms
    (sp.I * FLIP, "not equal"),  # not real
    (FLIP + 1e-12 * q1, "exact numbers"),  # numerically close, symbolically different
])
def test_sign_flip_odd_expressions(answer, fragment):
    fb = check("ch02-sign-flip", answer)
    assert not fb and fragment in fb.message and "\n" not in fb.message


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
    ({"A": np.array(["routing", "value"]), "B": "healthy", "C": "value"}, "must be one of"),
    ({1: "routing", "B": "healthy", "C": "value"}, "one verdict for each"),
    ({"A": "routing", "B": "healthy", 3.5: "value"}, "one verdict for each"),
    ({"A": "routing", "B": "healthy", "C": "value", "D": "value"}, "one verdict for each"),
    ({"A": None, "B": "healthy", "C": "value"}, "must be one of"),
])
def test_which_defect_odd_answers(answer, fragment):
    fb = check("ch02-which-defect", answer)
    assert not fb and fragment in fb.message


def test_rotate_pair_reports_a_failure_on_the_basis_check():
    calls = []

    def only_five_calls(x, angle):
        calls.append(1)
        if len(calls) > 5:
            raise RuntimeError("sixth call")
        return rotate_pair(x, angle)

    fb = check("ch02-rotate-pair", only_five_calls)
    assert not fb and "raised RuntimeError: sixth call" in fb.message
