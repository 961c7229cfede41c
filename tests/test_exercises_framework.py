import pytest

from ropegeo.book.exercises import Feedback, check, correct, exercise, exercise_ids, wrong


@exercise("ch09-demo-square")
def _demo(answer):
    if not callable(answer):
        return wrong("expected a function of one number.")
    if answer(3) == -9:
        return wrong("the sign is flipped: a square is never negative.")
    return correct("squares correctly.") if answer(3) == 9 and answer(-2) == 4 else wrong("3 should map to 9.")


def test_feedback_on_stub_wrong_and_right():
    def stub(x):
        raise NotImplementedError

    assert not check("ch09-demo-square", stub) and "NotImplementedError" in check("ch09-demo-square", stub).message
    assert "no answer yet" in check("ch09-demo-square", None).message
    assert "no answer yet" in check("ch09-demo-square", ...).message
    fb = check("ch09-demo-square", lambda x: -x * x)
    assert not fb and "sign is flipped" in str(fb) and "not yet" in str(fb)
    ok = check("ch09-demo-square", lambda x: x * x)
    assert ok and isinstance(ok, Feedback) and "correct" in ok._repr_html_()


def test_unknown_and_malformed_ids():
    with pytest.raises(ValueError, match="unknown"):
        check("ch09-nope", 1)
    with pytest.raises(ValueError, match="exercise_id"):
        check("chapter nine", 1)
    with pytest.raises(ValueError, match="exercise_id"):
        exercise("bad id")


def test_ids_listed():
    assert "ch09-demo-square" in exercise_ids()


# ---- check() always answers ------------------------------------------------------------------------
# Whatever the student passes, check() returns a falsy Feedback with a one-line message; only an
# unfinished stub (NotImplementedError) is singled out, and it is reported as a stub, never as a crash.

import itertools  # noqa: E402
import re  # noqa: E402

import numpy as np  # noqa: E402
import sympy as sp  # noqa: E402

from ropegeo.book.exercises import (  # noqa: E402
    MAX_MESSAGE, as_float_array, as_items, as_number, as_whole, call_student, short,
)

#: exercises whose answer is a function (the others take a value)
FUNCTION_EXERCISES = {
    "ch01-permuted-scores", "ch01-sinusoidal", "ch02-complex-rope", "ch03-margin-function", "ch04-yarn-ramp",
    "ch05-rope-half", "ch06-reset-winner", "ch06-interpolated-rope", "ch07-alibi-mass", "ch07-alibi-slopes",
    "ch08-axial-floor", "ch08-position-ids",
}
BOOK_EXERCISES = [i for i in exercise_ids() if not i.startswith("ch09-")]


def _raises(exc):
    def fn(*args, **kwargs):
        raise exc

    return fn


def _recurse(*args, **kwargs):
    return _recurse(*args, **kwargs)


def _returns(value):
    def fn(*args, **kwargs):
        return value

    return fn


def _no_arguments():
    return 1.0


ODD_ANSWERS = {
    "10**400": 10**400,
    "-10**400": -(10**400),
    "inf": float("inf"),
    "-inf": float("-inf"),
    "nan": float("nan"),
    "1e300": 1e300,
    "text x": "x",
    "text 3": "3",
    "bytes": b"3",
    "True": True,
    "complex": 1 + 2j,
    "object": object(),
    "symbol": sp.Symbol("x"),
    "huge sympy": (sp.Symbol("q1") + sp.Symbol("q2") + sp.Symbol("k1") + sp.Symbol("k2") + sp.Symbol("delta")) ** 8,
    "sympy matrix": sp.Matrix([[1, 2], [3, 4]]),
    "numpy array": np.arange(4.0),
    "numpy 2-d": np.ones((3, 3)),
    "empty array": np.array([]),
    "range(10**20)": range(10**20),
    "endless iterator": itertools.count(),
    "[inf]": [float("inf")],
    "(inf, inf)": (float("inf"), float("inf")),
    "(10**400, 1)": (10**400, 1),
    "[10**400] * 3": [10**400] * 3,
    "{inf: [1]}": {float("inf"): [1]},
    "{1: [inf]}": {1: [float("inf")]},
    "mixed-key dict": {1: "a", "b": 2},
    "dict of arrays": {"A": np.arange(3), "B": np.arange(3), "C": np.arange(3)},
    "raises ValueError": _raises(ValueError("boom")),
    "raises TypeError": _raises(TypeError("bad")),
    "raises RecursionError": _recurse,
    "raises ZeroDivisionError": _raises(ZeroDivisionError("division by zero")),
    "wrong arity": _no_arguments,
    "returns 10**400": _returns(10**400),
    "returns (10**400, (1, 2))": _returns((10**400, (1, 2))),
    "returns x": _returns("x"),
    "returns object": _returns(object()),
    "returns symbol": _returns(sp.Symbol("x")),
    "returns nan": _returns(float("nan")),
    "returns None": _returns(None),
    "returns range(10**20)": _returns(range(10**20)),
}


def _one_line_not_yet(fb):
    assert isinstance(fb, Feedback)
    assert not fb and fb.ok is False
    assert isinstance(fb.message, str) and fb.message
    assert "\n" not in fb.message and "\r" not in fb.message
    assert len(fb.message) <= MAX_MESSAGE
    assert "\n" not in str(fb) and "\n" not in fb._repr_html_()


@pytest.mark.parametrize("name", list(ODD_ANSWERS))
@pytest.mark.parametrize("exercise_id", BOOK_EXERCISES)
def test_every_check_answers_odd_input_with_one_line(exercise_id, name):
    fb = check(exercise_id, ODD_ANSWERS[name])
    _one_line_not_yet(fb)
    # each check validates its answer itself: the registry's safety net is not needed for these
    assert "checking your answer raised" not in fb.message


@pytest.mark.parametrize("exercise_id", sorted(FUNCTION_EXERCISES))
def test_a_stub_is_reported_as_a_stub_not_as_a_crash(exercise_id):
    fb = check(exercise_id, _raises(NotImplementedError(f"{exercise_id}: write the body")))
    _one_line_not_yet(fb)
    assert "NotImplementedError" in fb.message and "checking your answer raised" not in fb.message


@pytest.mark.parametrize("name, error", [
    ("raises ValueError", "ValueError: boom"), ("raises TypeError", "TypeError: bad"),
    ("raises RecursionError", "RecursionError"), ("wrong arity", "TypeError"),
])
@pytest.mark.parametrize("exercise_id", sorted(FUNCTION_EXERCISES))
def test_the_students_exception_is_named(exercise_id, name, error):
    fb = check(exercise_id, ODD_ANSWERS[name])
    _one_line_not_yet(fb)
    assert f"raised {error}" in fb.message and "checking your answer" not in fb.message


def test_function_exercises_listed():
    assert FUNCTION_EXERCISES <= set(BOOK_EXERCISES)
    for exercise_id in set(BOOK_EXERCISES) - FUNCTION_EXERCISES:  # a value exercise refuses a function
        fb = check(exercise_id, _returns(1))
        assert not fb and "NotImplementedError" not in fb.message


# ---- the registry's own safety net ----------------------------------------------------------------


@exercise("ch09-demo-crash")
def _demo_crash(answer):
    if answer == "stub":
        raise NotImplementedError
    if answer == "recursion":
        return _demo_crash(answer)
    if answer == "malformed":
        return "not a (ok, message) pair"
    if answer == "lines":
        return wrong("first line\nsecond line\r\n   third line")
    if answer == "long":
        return wrong("x" * 5000)
    if answer == "good":
        return correct("a correct message stays exactly as it is.")
    return 1 / 0


@pytest.mark.parametrize("answer, fragment", [
    ("zero", "checking your answer raised ZeroDivisionError: division by zero"),
    ("recursion", "checking your answer raised RecursionError"),
    ("malformed", "checking your answer raised ValueError"),
    ("lines", "first line second line third line"),
    ("long", "..."),
    ("stub", "NotImplementedError: write its body"),
])
def test_check_turns_every_failure_into_a_one_line_verdict(answer, fragment):
    fb = check("ch09-demo-crash", answer)
    _one_line_not_yet(fb)
    assert fragment in fb.message


def test_a_correct_message_is_kept_verbatim():
    fb = check("ch09-demo-crash", "good")
    assert fb and fb.message == "a correct message stays exactly as it is."


def test_placeholders_inside_a_tuple_are_no_answer_yet():
    for answer in ((..., ...), [1, None], (None,)):
        fb = check("ch09-demo-crash", answer)
        _one_line_not_yet(fb)
        assert "no answer yet" in fb.message and "placeholders" in fb.message


def test_keyboard_interrupt_is_not_swallowed():
    @exercise("ch09-demo-interrupt")
    def _interrupt(answer):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check("ch09-demo-interrupt", 1)


# ---- the validation helpers -----------------------------------------------------------------------


@pytest.mark.parametrize("answer, value", [(3, 3.0), (2.5, 2.5), (np.float32(0.5), 0.5), (np.int64(7), 7.0),
                                           (np.array(4.0), 4.0), (sp.Integer(3), 3.0), (sp.Rational(1, 4), 0.25)])
def test_as_number_accepts_real_numbers(answer, value):
    assert as_number(answer, "x") == (value, None)


@pytest.mark.parametrize("answer, fragment", [
    (10**400, "far outside the range"), (-(10**400), "far outside the range"), (float("inf"), "finite"),
    (float("nan"), "finite"), ("3", "text"), (True, "bool"), (1j, "complex"), (sp.I, "not a real number"),
    (sp.Symbol("x"), "Symbol"), (np.arange(3), "shape (3,)"), (None, "NoneType"), ([1.0], "list"),
])
def test_as_number_refuses_with_a_reason(answer, fragment):
    value, (ok, message) = as_number(answer, "one number")
    assert value is None and not ok and fragment in message and message.startswith("expected one number")


def test_as_whole():
    assert as_whole(11, "n") == (11, None) and as_whole(11.0, "n") == (11, None)
    assert as_whole(np.int64(-3), "n") == (-3, None)
    for answer, fragment in ((10**400, "~10**400, which is far outside the range"), (1e300, "far outside"),
                             (10.5, "not a whole number"), ("11", "text"), (float("inf"), "finite"),
                             (False, "bool")):
        n, (ok, message) = as_whole(answer, "a count")
        assert n is None and not ok and fragment in message, (answer, message)


def test_as_items_never_materialises_a_huge_iterable():
    assert as_items((1, 2), "a pair") == ([1, 2], None)
    assert as_items(iter([1, 2, 3]), "a list") == ([1, 2, 3], None)
    for answer, fragment in ((range(10**20), "far too many"), (itertools.count(), "far too many"), ("ab", "text"),
                             ({"a": 1}, "dict"), ({1, 2}, "set"), (5, "int"), (np.array(3.0), "single")):
        items, (ok, message) = as_items(answer, "a list", max_items=100)
        assert items is None and not ok and fragment in message, (answer, message)
    assert as_items({3, 1}, "slots", allow_sets=True)[1] is None


def test_as_float_array():
    arr, bad = as_float_array([[1, 2], [3, 4]], "x")
    assert bad is None and arr.dtype == np.float64 and arr.shape == (2, 2)
    for value, fragment in (([10**400], "far outside"), (["1", "2"], "text"), ([1j], "complex"),
                            ([sp.Symbol("x")], "not real numbers"), (None, "None"), ([[1], [1, 2]], "cannot be read"),
                            ([np.nan], "nan"), (range(10**20), "far too many")):
        arr, (ok, message) = as_float_array(value, "what your function returned")
        assert arr is None and not ok and fragment in message, (value, message)
    assert as_float_array([np.inf], "x", finite=False)[1] is None


def test_call_student():
    assert call_student(lambda a, b: a + b, 1, 2) == (3, None)
    value, reason = call_student(_raises(ValueError("bad\nvalue")), what="f")
    assert value is None and reason == "f raised ValueError: bad value"
    assert "RecursionError" in call_student(_recurse)[1]
    with pytest.raises(NotImplementedError):
        call_student(_raises(NotImplementedError))


def test_short_is_one_short_line():
    assert short(10**400) == "~10**400" and short(-(10**400)) == "~-10**400"
    text = short(sp.Matrix([[1, 2], [3, 4]]))
    assert "\n" not in text and len(text) <= 60
    assert len(short("y" * 10_000)) <= 60 and "\n" not in short(np.ones((50, 50)))

    class Unprintable:
        def __repr__(self):
            raise RuntimeError

    assert "Unprintable" in short(Unprintable())
    assert re.fullmatch(r"[^\n]{1,60}", short(range(10**20)))
