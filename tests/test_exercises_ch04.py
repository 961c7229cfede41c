"""Every chapter-4 exercise check: it rejects stubs and typical mistakes (with the intended
message) and accepts a solution derived here independently."""

import math

import numpy as np
import pytest

from ropegeo.book.exercises import check, exercise_ids


def stub(*args, **kwargs):
    raise NotImplementedError


def test_all_chapter_checks_registered():
    assert set(exercise_ids("ch04")) == {
        "ch04-llama3-bands", "ch04-abf-slow", "ch04-llama3-half", "ch04-yarn-ramp", "ch04-joint-first",
    }


@pytest.mark.parametrize("ex", ["ch04-llama3-bands", "ch04-abf-slow", "ch04-llama3-half", "ch04-joint-first"])
def test_value_stubs_fail(ex):
    fb = check(ex, None)
    assert not fb and "no answer yet" in fb.message


def test_function_stub_fails():
    fb = check("ch04-yarn-ramp", stub)
    assert not fb and "NotImplementedError" in fb.message
    assert not check("ch04-yarn-ramp", None)


def test_llama3_bands():
    # independent count, pair by pair: Llama-3.1-8B's rope_scaling (edges 8192 / 4 and 8192 / 1, base 500,000)
    # on a head 64 wide (32 pairs)
    keep = div = blend = 0
    for i in range(32):
        lam = 2 * math.pi * 500_000.0 ** (2 * i / 64)
        if lam < 2048:
            keep += 1
        elif lam > 8192:
            div += 1
        else:
            blend += 1
    assert check("ch04-llama3-bands", (keep, div, blend))
    # the 128-wide head's counts (printed in the chapter) are not the answer
    assert not check("ch04-llama3-bands", (29, 29, 6))
    assert "blended" in check("ch04-llama3-bands", (keep, div + blend, 0)).message
    assert "blended" in check("ch04-llama3-bands", (keep + blend, div, 0)).message
    assert "add up to" in check("ch04-llama3-bands", (keep, div, blend + 1)).message
    assert "three pair counts" in check("ch04-llama3-bands", (keep, div)).message
    assert "whole number" in check("ch04-llama3-bands", (keep, div, blend + 0.5)).message
    # integral floats are counts too, as in ch04-abf-slow (which accepts float(want))
    assert check("ch04-llama3-bands", (float(keep), np.float64(div), float(blend)))
    assert "whole number" in check("ch04-llama3-bands", (keep, True, blend)).message
    lam10k = [2 * math.pi * 10_000.0 ** (2 * i / 64) for i in range(32)]
    k2 = sum(x < 2048 for x in lam10k)
    d2 = sum(x > 8192 for x in lam10k)
    assert "500,000" in check("ch04-llama3-bands", (k2, d2, 32 - k2 - d2)).message


def _slow_loop(base, length, d=128):
    # pair i turns length * base^(-2i/d) / (2 pi) times; slow when that is below one
    return sum(1 for i in range(d // 2) if length * base ** (-2 * i / d) / (2 * math.pi) < 1)


def _t_extra(new_base, d_extra):
    # Liu et al.: the wavelength of pair d_extra / 2 at the new base, 2 pi B'^(d_extra / d) with d = 128
    return 2 * math.pi * new_base ** (d_extra / 128)


def test_abf_slow():
    want = _slow_loop(1_000_000.0, 16_384)
    # closed form of chapter 3: pair i is slow when i > (d/2) ln(L / 2 pi) / ln B
    assert want == 64 - 1 - math.floor(64 * math.log(16_384 / (2 * math.pi)) / math.log(1_000_000.0))
    d_extra = 2 * (64 - _slow_loop(10_000.0, 4096))  # twice the pairs that turn in Llama 2's pre-training
    t_extra = _t_extra(1_000_000.0, d_extra)
    assert check("ch04-abf-slow", (want, t_extra))
    # rounding to three significant digits is accepted, 1% off is not
    assert check("ch04-abf-slow", (float(want), float(f"{t_extra:.3g}")))
    assert not check("ch04-abf-slow", (want, 1.01 * t_extra))
    # the success message leaves the comparison to the student (issue 25)
    msg = check("ch04-abf-slow", (want, t_extra)).message
    assert str(_slow_loop(10_000.0, 4096)) not in msg and "more pairs" not in msg
    # the count alone is not the whole answer
    fb = check("ch04-abf-slow", want)
    assert not fb and "(count, T_extra)" in fb.message
    assert "16,384" in check("ch04-abf-slow", (_slow_loop(1_000_000.0, 4096), t_extra)).message
    assert "base, 1,000,000" in check("ch04-abf-slow", (_slow_loop(10_000.0, 16_384), t_extra)).message
    assert "Llama 2's count" in check("ch04-abf-slow", _slow_loop(10_000.0, 4096)).message
    assert "do complete a turn" in check("ch04-abf-slow", (64 - want, t_extra)).message
    assert "between 0 and 64" in check("ch04-abf-slow", 65).message
    assert "whole number" in check("ch04-abf-slow", (27.5, t_extra)).message
    assert not check("ch04-abf-slow", (want + 1, t_extra))
    assert "expected a pair" in check("ch04-abf-slow", (want, t_extra, 0)).message
    # typical slips in T_extra
    assert "500,000" in check("ch04-abf-slow", (want, _t_extra(500_000.0, d_extra))).message
    assert "own stage" in check("ch04-abf-slow", (want, _t_extra(1_000_000.0, 2 * (64 - want)))).message
    assert "new base" in check("ch04-abf-slow", (want, _t_extra(10_000.0, d_extra))).message
    assert "exponent" in check("ch04-abf-slow", (want, 2 * math.pi * 1e6 ** (d_extra / 256))).message
    # the two entries in the wrong order: said so, whether T_extra is rounded to a whole number or not
    for swapped in ((t_extra, want), (round(t_extra), want)):
        assert "order is swapped" in check("ch04-abf-slow", swapped).message
    assert "order is swapped" not in check("ch04-abf-slow", (65, t_extra)).message
    assert "T_extra in tokens" in check("ch04-abf-slow", (want, "lots")).message


def test_llama3_half():
    import sympy as sp

    # g = (8192 / lambda - 1) / 3 = 1/2  <=>  8192 theta_i / (2 pi) = 5/2, theta_i = 500000^(-2i/128)
    i = sp.Symbol("i")
    sol = sp.nsolve(8192 * sp.Integer(500_000) ** (-2 * i / 128) / (2 * sp.pi) - sp.Rational(5, 2), i, 30)
    want = float(sol)
    assert check("ch04-llama3-half", want)
    assert "exponent's numerator" in check("ch04-llama3-half", 2 * want).message
    idx = lambda r: 64 * math.log(8192 / (2 * math.pi * r)) / math.log(500_000.0)
    assert "wavelength" in check("ch04-llama3-half", idx(1.6)).message
    assert "YaRN" in check("ch04-llama3-half", idx(2.0)).message
    assert "YaRN" in check("ch04-llama3-half", (idx(1.0) + idx(4.0)) / 2).message  # the same point
    assert "close but not exact" in check("ch04-llama3-half", round(want)).message
    assert check("ch04-llama3-half", round(want, 4))  # the printed digits are accepted
    assert "four decimals" in check("ch04-llama3-half", round(want, 2)).message
    assert not check("ch04-llama3-half", 12.0)


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


def _paper_gamma(base, d, L, bf, bs):
    # the paper's ramp, pair by pair: gamma(r) = (r - alpha) / (beta - alpha), clipped to [0, 1]
    out = []
    for i in range(d // 2):
        r = L * base ** (-2 * i / d) / (2 * math.pi)
        out.append(min(1.0, max(0.0, (r - bs) / (bf - bs))))
    return np.array(out)


def test_yarn_ramp():
    code = lambda b, d, L, bf, bs, t=True: _my_ramp(b, d, L, bf, bs, truncate=t)
    fb = check("ch04-yarn-ramp", code)
    assert fb and "reference code" in fb.message
    fb = check("ch04-yarn-ramp", lambda b, d, L, bf, bs, t: _paper_gamma(b, d, L, bf, bs))
    assert fb and "paper" in fb.message
    # ignoring truncate, or mixing the two definitions, is not accepted
    assert "truncate=True" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs, t: _my_ramp(b, d, L, bf, bs)).message
    mixed = lambda b, d, L, bf, bs, t: _my_ramp(b, d, L, bf, bs) if t else _paper_gamma(b, d, L, bf, bs)
    assert "settle on one" in check("ch04-yarn-ramp", mixed).message
    rev = lambda b, d, L, bf, bs, t: _my_ramp(b, d, L, bf, bs, truncate=t, reverse=True)
    assert "reversed" in check("ch04-yarn-ramp", rev).message
    assert "swapped" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs, t: _my_ramp(b, d, L, bs, bf, truncate=t)).message
    fb = check("ch04-yarn-ramp", lambda b, d, L, bf, bs, t: _my_ramp(b, d, L, bf, bs, truncate=t, doubled=True))
    assert not fb and "pair index i" in fb.message
    assert "shape" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs, t: np.ones(d)).message
    assert "pair" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs, t: np.ones(d // 2)).message
    assert "expected a function" in check("ch04-yarn-ramp", 3).message
    # an own implementation is accepted whatever the function is called and however it loops
    assert check("ch04-yarn-ramp", lambda b, d, L, bf, bs, t: np.array(list(_my_ramp(b, d, L, bf, bs, truncate=t))))
    # the old five-argument signature is told what it lacks
    assert "raised" in check("ch04-yarn-ramp", lambda b, d, L, bf, bs: _my_ramp(b, d, L, bf, bs)).message


def test_yarn_ramp_refuses_a_wrapper_of_ropegeos_ramp():
    from ropegeo import scaling as S
    from ropegeo.scaling import yarn_ramp

    def attribute(b, d, L, bf, bs, t):
        return S.yarn_ramp(d, b, L, beta_fast=bf, beta_slow=bs, truncate=t)

    def imported(b, d, L, bf, bs, t):
        return yarn_ramp(d, b, L, beta_fast=bf, beta_slow=bs, truncate=t)

    def through_the_rule(b, d, L, bf, bs, t):  # the weight read back from YaRN's served frequencies
        th, _ = S.yarn(d, b, 2.0, L, beta_fast=bf, beta_slow=bs, truncate=t)
        return 2 * th / (b ** (-np.arange(0, d, 2) / d)) - 1

    for fn in (attribute, imported, through_the_rule):
        fb = check("ch04-yarn-ramp", fn)
        assert not fb and "without ropegeo.scaling" in fb.message, fn.__name__
    # the profile hook is gone after the check, and a hook installed before it is restored
    import sys

    def outer(frame, event, arg):
        return None

    sys.setprofile(outer)
    try:
        check("ch04-yarn-ramp", imported)
        assert sys.getprofile() is outer
    finally:
        sys.setprofile(None)
    assert sys.getprofile() is None


def test_yarn_ramp_paper_and_code_differ_on_the_bench():
    # issue 25: the two weightings differ by up to 0.356 on the chapter's bench
    gap = np.abs(_paper_gamma(10_000.0, 96, 4096, 32.0, 1.0) - _my_ramp(10_000.0, 96, 4096, 32.0, 1.0)).max()
    assert round(gap, 3) == 0.356


def _first_crossing(stretch_of):
    """Brute force over offsets 0, 1, ..: every training offset 0..4095 is tried, with the
    chord distance written from its definition (complex exponentials), and the rule's
    frequencies written here from YaRN's paper (no call into ropegeo)."""
    d, B, L = 96, 10_000.0, 4096
    th = B ** (-np.arange(0, d, 2) / d)
    served = th / stretch_of(th)
    step = np.sqrt(np.mean(np.abs(np.exp(1j * th) - 1) ** 2))  # neighbouring training offsets
    train = np.exp(1j * np.outer(np.arange(L), th))
    for n in range(L):
        dist = np.sqrt(np.mean(np.abs(train - np.exp(1j * n * served)) ** 2, axis=1)).min()
        if dist > step:
            return n
    return None


def _yarn_stretch(th, d=96, B=10_000.0, L=4096, s=32.0):
    where = lambda r: d * math.log(L / (2 * math.pi * r)) / (2 * math.log(B))
    lo, hi = max(math.floor(where(32)), 0), min(math.ceil(where(1)), d - 1)
    w = 1 - np.clip((np.arange(th.size) - lo) / (hi - lo), 0, 1)
    return 1 / (w + (1 - w) / s)


def test_joint_first():
    want = _first_crossing(_yarn_stretch)
    assert 0 < want < 4096
    assert check("ch04-joint-first", want)
    assert check("ch04-joint-first", float(want))
    assert "one later" in check("ch04-joint-first", want - 1).message
    assert "keep scanning" in check("ch04-joint-first", want - 5).message
    # beyond the first crossing the message says so plainly (the distance stays beyond D(1) there)
    for n in (want + 2, want + 300, 4000):
        fb = check("ch04-joint-first", n)
        assert not fb and "earlier offset already does" in fb.message
    assert "far below the training length" in check("ch04-joint-first", 5000).message
    assert "whole number" in check("ch04-joint-first", want + 0.5).message
    ntk = _first_crossing(lambda th: (10_000.0 * 32 ** (96 / 94)) ** (np.arange(0, 96, 2) / 96) * th)
    assert "NTK" in check("ch04-joint-first", ntk).message


# ---- odd answers: a specific one-line "not yet", never an exception --------------------------------
@pytest.mark.parametrize("ex", ["ch04-llama3-half"])
@pytest.mark.parametrize("answer, fragment", [
    (10**400, "far outside the range"), (float("inf"), "finite"), (float("nan"), "finite"), ("0.03125", "text"),
    (np.array([0.03125]), "shape (1,)"), (1j, "complex"),
])
def test_number_checks_refuse_odd_answers(ex, answer, fragment):
    fb = check(ex, answer)
    assert not fb and fragment in fb.message and "\n" not in fb.message


def test_llama3_half_accepts_a_zero_d_array():
    want = 64 * math.log(8192 / (2 * math.pi * 2.5)) / math.log(500_000.0)
    assert check("ch04-llama3-half", np.array(want))


@pytest.mark.parametrize("answer, fragment", [
    ((10**400, 0, 0), "far outside the range"),  # read with as_whole, as ch04-abf-slow reads its count
    ((-1, 30, 35), "between 0 and 32"),
    (range(10**20), "three pair counts"),
])
def test_llama3_bands_odd_answers(answer, fragment):
    fb = check("ch04-llama3-bands", answer)
    assert not fb and fragment in fb.message and len(fb.message) < 200


@pytest.mark.parametrize("fn, fragment", [
    (lambda b, d, L, bf, bs, t: 1 / 0, "raised ZeroDivisionError"),
    (lambda b, d, L, bf, bs, t: np.ones(3)[10], "raised IndexError"),
    (lambda b, d: None, "raised TypeError"),
    (lambda b, d, L, bf, bs, t: 10**400, "far outside the range"),
    (lambda b, d, L, bf, bs, t: [10**400] * (d // 2), "far outside the range"),
    (lambda b, d, L, bf, bs, t: "x", "text"),
    (lambda b, d, L, bf, bs, t: object(), "not real numbers"),
    (lambda b, d, L, bf, bs, t: __import__("sympy").Symbol("x"), "not real numbers"),
    (lambda b, d, L, bf, bs, t: np.full(d // 2, np.nan), "pair 0"),
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
    ("103", "text"),
    (-3, "non-negative"),
])
def test_joint_first_odd_answers(answer, fragment):
    fb = check("ch04-joint-first", answer)
    assert not fb and fragment in fb.message and "\n" not in fb.message


def test_joint_first_matrix_answer_is_one_line():
    import sympy as sp

    fb = check("ch04-joint-first", sp.Matrix([[1, 2], [3, 4]]))
    assert not fb and "\n" not in fb.message and "whole number" in fb.message
    fb = check("ch04-joint-first", np.ones((3, 3)))
    assert not fb and "\n" not in fb.message


def test_number_checks_evaluate_sympy_numbers_in_float64():
    import sympy as sp

    exact = 64 * sp.log(sp.Integer(8192) / (2 * sp.pi * sp.Rational(5, 2))) / sp.log(500_000)
    assert check("ch04-llama3-half", exact)
    # a tower that SymPy would try to evaluate to millions of digits: float64 overflows at once
    fb = check("ch04-llama3-half", sp.exp(sp.exp(sp.exp(100))))
    assert not fb and "finite" in fb.message
    n = sp.Symbol("n", integer=True)
    fb = check("ch04-llama3-half", sp.Sum(1 / n**2, (n, 1, 10**9)))
    assert not fb and "Sum" in fb.message
    assert "not a real number" in check("ch04-llama3-half", sp.I / 32).message


def test_joint_first_yarn_stays_beyond_the_step_after_crossing():
    # the checker's message for a late answer: from YaRN's first crossing up to L, every offset is beyond D(1)
    d, B, L = 96, 10_000.0, 4096
    th = B ** (-np.arange(0, d, 2) / d)
    served = th / _yarn_stretch(th)
    step = np.sqrt(np.mean(np.abs(np.exp(1j * th) - 1) ** 2))
    train = np.exp(1j * np.outer(np.arange(L), th))
    k = (np.exp(1j * np.outer(np.arange(L), served)) @ train.conj().T).real / th.size
    dist = np.sqrt(np.maximum(0.0, 2 * (1 - k.max(axis=1))))
    first = int(np.argmax(dist > step))
    assert first == _first_crossing(_yarn_stretch)
    assert np.all(dist[first:] > step) and np.all(dist[:first] <= step)
