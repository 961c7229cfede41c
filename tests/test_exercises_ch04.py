"""Every chapter-4 exercise check: it rejects stubs and typical mistakes (with the intended
message) and accepts a solution derived here independently."""

import math

import numpy as np
import pytest

from ropegeo.exercises import check, exercise_ids


def stub(*args, **kwargs):
    raise NotImplementedError


def test_all_chapter_checks_registered():
    assert set(exercise_ids("ch04")) == {
        "ch04-pi-step", "ch04-llama3-bands", "ch04-ntk-base", "ch04-yarn-ramp", "ch04-longrope-switch",
    }


@pytest.mark.parametrize("ex", ["ch04-pi-step", "ch04-llama3-bands", "ch04-ntk-base", "ch04-longrope-switch"])
def test_value_stubs_fail(ex):
    fb = check(ex, None)
    assert not fb and "no answer yet" in fb.message


def test_function_stub_fails():
    fb = check("ch04-yarn-ramp", stub)
    assert not fb and "NotImplementedError" in fb.message
    assert not check("ch04-yarn-ramp", None)


def test_pi_step():
    assert check("ch04-pi-step", 4096 / 131072)
    assert check("ch04-pi-step", 0.03125)
    assert "raw extrapolation" in check("ch04-pi-step", 1.0).message
    assert "smaller, not larger" in check("ch04-pi-step", 32).message
    assert "4,096 -> 32,768" in check("ch04-pi-step", 0.125).message
    assert "not 2 pi" in check("ch04-pi-step", 2 * math.pi / 32).message
    assert "as a number" in check("ch04-pi-step", "1/32").message
    assert not check("ch04-pi-step", 0.03)


def test_llama3_bands():
    # independent count, pair by pair, from Llama-3.1-8B's rope_scaling (8192 / 4 and 8192 / 1)
    keep = div = blend = 0
    for i in range(64):
        lam = 2 * math.pi * 500_000.0 ** (2 * i / 128)
        if lam < 2048:
            keep += 1
        elif lam > 8192:
            div += 1
        else:
            blend += 1
    assert check("ch04-llama3-bands", (keep, div, blend))
    assert "blended" in check("ch04-llama3-bands", (keep, div + blend, 0)).message
    assert "blended" in check("ch04-llama3-bands", (keep + blend, div, 0)).message
    assert "add up to" in check("ch04-llama3-bands", (keep, div, blend + 1)).message
    assert "three pair counts" in check("ch04-llama3-bands", (keep, div)).message
    assert "whole number" in check("ch04-llama3-bands", (keep, div, 6.0)).message
    lam10k = [2 * math.pi * 10_000.0 ** (2 * i / 128) for i in range(64)]
    k2 = sum(x < 2048 for x in lam10k)
    d2 = sum(x > 8192 for x in lam10k)
    assert "500,000" in check("ch04-llama3-bands", (k2, d2, 64 - k2 - d2)).message


def test_ntk_base():
    # solve (B')^(-(d-2)/d) = B^(-(d-2)/d) / s for d = 96, s = 32
    d, s, B = 96, 32.0, 10_000.0
    want = (B ** (-(d - 2) / d) / s) ** (-d / (d - 2))
    assert check("ch04-ntk-base", want)
    assert "a little less than s" in check("ch04-ntk-base", B * s).message
    assert "upside down" in check("ch04-ntk-base", B * s ** ((d - 2) / d)).message
    assert "faster" in check("ch04-ntk-base", B / s ** (d / (d - 2))).message
    assert not check("ch04-ntk-base", 2 * want)


def _my_ramp(base, d, L, bf, bs, truncate=True, reverse=False, doubled=False):
    # written from YaRN's description: the fractional pair index where a pair turns r times over L
    def where(r):
        return (2 if doubled else 1) * d * math.log(L / (2 * math.pi * r)) / (2 * math.log(base))

    lo, hi = where(bf), where(bs)
    if truncate:
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, d - 1)
    if lo == hi:
        hi += 0.001
    out = []
    for i in range(d // 2):
        t = min(1.0, max(0.0, (i - lo) / (hi - lo)))
        out.append(t if reverse else 1.0 - t)
    return np.array(out)


def test_yarn_ramp():
    assert check("ch04-yarn-ramp", lambda b, d, L, bf, bs: _my_ramp(b, d, L, bf, bs))
    assert "reversed" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs: _my_ramp(b, d, L, bf, bs, reverse=True)).message
    assert "not rounded" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs: _my_ramp(b, d, L, bf, bs, truncate=False)).message
    assert "swapped" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs: _my_ramp(b, d, L, bs, bf)).message
    fb = check("ch04-yarn-ramp", lambda b, d, L, bf, bs: _my_ramp(b, d, L, bf, bs, doubled=True))
    assert not fb and "pair index i" in fb.message
    assert "shape" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs: np.ones(d)).message
    assert "pair" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs: np.ones(d // 2)).message
    assert "expected a function" in check("ch04-yarn-ramp", 3).message


def test_longrope_switch():
    # the reference's rule: long factors when seq_len > original_max_position_embeddings (4096)
    assert check("ch04-longrope-switch", 4097)
    assert check("ch04-longrope-switch", 4097.0)
    assert "exactly the original length" in check("ch04-longrope-switch", 4096).message
    assert "declared context" in check("ch04-longrope-switch", 131072).message
    assert "long" in check("ch04-longrope-switch", 5000).message
    assert "whole number" in check("ch04-longrope-switch", 4097.5).message


# ---- odd answers: a specific one-line "not yet", never an exception --------------------------------
@pytest.mark.parametrize("ex", ["ch04-pi-step", "ch04-ntk-base"])
@pytest.mark.parametrize("answer, fragment", [
    (10**400, "far outside the range"), (float("inf"), "finite"), (float("nan"), "finite"), ("0.03125", "text"),
    (np.array([0.03125]), "shape (1,)"), (1j, "complex"),
])
def test_number_checks_refuse_odd_answers(ex, answer, fragment):
    fb = check(ex, answer)
    assert not fb and fragment in fb.message and "\n" not in fb.message


def test_pi_step_accepts_a_zero_d_array():
    assert check("ch04-pi-step", np.array(4096 / 131072))


@pytest.mark.parametrize("answer, fragment", [
    ((10**400, 0, 0), "between 0 and 64"),
    ((-1, 30, 35), "between 0 and 64"),
    (range(10**20), "three pair counts"),
])
def test_llama3_bands_odd_answers(answer, fragment):
    fb = check("ch04-llama3-bands", answer)
    assert not fb and fragment in fb.message and len(fb.message) < 200


@pytest.mark.parametrize("fn, fragment", [
    (lambda b, d, L, bf, bs: 1 / 0, "raised ZeroDivisionError"),
    (lambda b, d, L, bf, bs: np.ones(3)[10], "raised IndexError"),
    (lambda b, d: None, "raised TypeError"),
    (lambda b, d, L, bf, bs: 10**400, "far outside the range"),
    (lambda b, d, L, bf, bs: [10**400] * (d // 2), "far outside the range"),
    (lambda b, d, L, bf, bs: "x", "text"),
    (lambda b, d, L, bf, bs: object(), "not real numbers"),
    (lambda b, d, L, bf, bs: __import__("sympy").Symbol("x"), "not real numbers"),
    (lambda b, d, L, bf, bs: np.full(d // 2, np.nan), "pair 0"),
])
def test_yarn_ramp_reports_the_students_failure(fn, fragment):
    fb = check("ch04-yarn-ramp", fn)
    assert not fb and fragment in fb.message and "\n" not in fb.message


def test_yarn_ramp_recursion_is_reported():
    def forever(*args):
        return forever(*args)

    fb = check("ch04-yarn-ramp", forever)
    assert not fb and "raised RecursionError" in fb.message


@pytest.mark.parametrize("answer, fragment", [
    (10**400, "far outside the range"),
    (1e20, "far outside the range"),
    (float("inf"), "finite"),
    ("4097", "text"),
    (0, "at least one token"),
])
def test_longrope_switch_odd_answers(answer, fragment):
    fb = check("ch04-longrope-switch", answer)
    assert not fb and fragment in fb.message and "\n" not in fb.message


def test_longrope_switch_matrix_answer_is_one_line():
    import sympy as sp

    fb = check("ch04-longrope-switch", sp.Matrix([[1, 2], [3, 4]]))
    assert not fb and "\n" not in fb.message and "whole number" in fb.message
    fb = check("ch04-longrope-switch", np.ones((3, 3)))
    assert not fb and "\n" not in fb.message


def test_number_checks_evaluate_sympy_numbers_in_float64():
    import sympy as sp

    assert check("ch04-pi-step", sp.Rational(1, 32))
    assert check("ch04-ntk-base", 10_000 * sp.Integer(32) ** sp.Rational(96, 94))
    # a tower that SymPy would try to evaluate to millions of digits: float64 overflows at once
    fb = check("ch04-ntk-base", sp.exp(sp.exp(sp.exp(100))))
    assert not fb and "finite" in fb.message
    n = sp.Symbol("n", integer=True)
    fb = check("ch04-pi-step", sp.Sum(1 / n**2, (n, 1, 10**9)))
    assert not fb and "Sum" in fb.message
    assert "not a real number" in check("ch04-pi-step", sp.I / 32).message
