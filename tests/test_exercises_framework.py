import pytest

from ropegeo.exercises import Feedback, check, correct, exercise, exercise_ids, wrong


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
