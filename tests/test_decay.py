"""RoFormer's long-term-decay bound: the partial sums by explicit loops, the bound really bounds
the score (rotated with explicit cosines and sines), and bad input is refused by name."""

import cmath
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ropegeo.decay import MAX_CELLS, abel_bound, relative_upper_bound


def theta(d, base=10_000.0):
    return np.array([base ** (-2 * i / d) for i in range(d // 2)])


def loop_bound(delta, th):
    total, partial = 0.0, 0j
    for t in th:
        partial += cmath.exp(1j * delta * t)
        total += abs(partial)
    return total / len(th)


def test_relative_upper_bound_by_loops():
    th = theta(128)
    for delta in (0.0, 1.0, 17.0, -17.0, 250.0, 1234.5):
        assert relative_upper_bound(delta, th) == pytest.approx(loop_bound(delta, th), rel=1e-12)
    assert relative_upper_bound(0.0, th) == pytest.approx((64 + 1) / 2)
    # even in delta, and the shape follows the offsets
    d = np.arange(-5.0, 6.0).reshape(11, 1)
    out = relative_upper_bound(d, th)
    assert out.shape == (11, 1)
    np.testing.assert_allclose(out[::-1], out, rtol=1e-12)


def test_bound_falls_over_the_first_few_hundred_positions():
    # the claim of RoFormer's figure, checked on block averages (the curve itself wiggles)
    b = relative_upper_bound(np.arange(0.0, 256.0), theta(128)).reshape(8, 32).mean(axis=1)
    assert np.all(np.diff(b) < 0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.floats(-5000, 5000))
def test_abel_bound_bounds_the_score(seed, delta):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, 16))
    th = theta(16)
    score = 0.0
    for i, t in enumerate(th):  # <R_m q, R_n k> at n - m = delta, by explicit rotation of the key
        c, s = math.cos(delta * t), math.sin(delta * t)
        k1, k2 = c * k[2 * i] - s * k[2 * i + 1], s * k[2 * i] + c * k[2 * i + 1]
        score += q[2 * i] * k1 + q[2 * i + 1] * k2
    assert abs(score) <= abel_bound(q, k, delta, th) * (1 + 1e-9) + 1e-9


def test_abel_bound_is_tight_for_a_single_pair():
    # one pair: h_1 = 0 closes the sum, the bound is |h_0| * 1 = |q||k|, reached at the aligned offset
    q, k = np.array([3.0, 4.0]), np.array([1.0, 0.0])
    assert abel_bound(q, k, 0.0, [0.5]) == pytest.approx(5.0)


@pytest.mark.parametrize("call, name", [
    (lambda: relative_upper_bound([np.nan], theta(8)), "offsets"),
    (lambda: relative_upper_bound([1.0], [-1.0]), "theta"),
    (lambda: relative_upper_bound(np.zeros(MAX_CELLS // 4 + 1), theta(8)), "MAX_CELLS"),
    (lambda: relative_upper_bound([1e308], [4.0, 2.0]), "overflows"),
    (lambda: abel_bound(np.ones(6), np.ones(8), [1.0], theta(8)), "shape"),
    (lambda: abel_bound(np.ones(8), [np.inf] * 8, [1.0], theta(8)), "k"),
])
def test_refuses_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()
