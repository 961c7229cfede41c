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


def test_reachable_peak_against_a_brute_force_torus():
    """Two groups with small multiples: the peak over a fine 2-D grid of (u, v), plus the grid's error bound."""
    from ropegeo.decay import reachable_peak

    rng = np.random.default_rng(0)
    groups, multiples = np.array([0, 0, 0, 1, 1]), np.array([1, 2, 5, 1, 3])
    for _ in range(5):
        h = rng.normal(size=5) + 1j * rng.normal(size=5)
        u = np.linspace(0, 2 * np.pi, 1201)[:-1]
        U, V = np.meshgrid(u, u, indexing="ij")
        phase = np.stack([U, U, U, V, V], axis=-1) * multiples
        brute = (np.exp(1j * phase) @ h).real.max()
        slack = np.abs(h) @ multiples**2 * (u[1] / 2) ** 2  # a grid point lies within half a step of the peak
        peak = reachable_peak(h, groups, multiples)
        assert brute <= peak + 1e-12 and peak <= brute + slack
        assert peak <= np.abs(h).sum() + 1e-12
    # one independent phase per pair: every pair lines up, the peak is sum |h|
    h = rng.normal(size=4) + 1j * rng.normal(size=4)
    assert reachable_peak(h, [0, 1, 2, 3], [7, 1, 3, 1]) == pytest.approx(np.abs(h).sum(), rel=1e-12)
    # one phase driving opposed harmonics cannot line them up: strictly below sum |h| (cos u - cos 2u peaks at 9/8)
    assert reachable_peak([1.0, -1.0], [0, 0], [1, 2]) == pytest.approx(1.125, rel=1e-9)


def test_reachable_peak_bounds_the_score_at_integer_offsets():
    """The 16-wide base-10,000 bank: theta_(2j) = 10^(3 - j) * 10^-3, theta_(2j+1) = 10^(3 - j) * 10^-3.5."""
    from ropegeo.decay import reachable_peak

    th = 10.0 ** (-np.arange(8) / 2)
    h = np.random.default_rng(3).normal(size=8) + 1j * np.random.default_rng(4).normal(size=8)
    i = np.arange(8)
    peak = reachable_peak(h, i % 2, 10 ** (3 - i // 2))
    d = np.arange(0.0, 1_000_000.0)
    score = np.cos(np.outer(d, th)) @ h.real - np.sin(np.outer(d, th)) @ h.imag
    assert score.max() <= peak * (1 + 1e-9)  # no offset beats it
    assert score.max() >= 0.98 * peak  # and far offsets come close
    assert peak < 0.999 * np.abs(h).sum()  # rationally related: sum |h| is out of reach for these contents


@pytest.mark.parametrize("kwargs, word", [
    ({"h": [], "groups": [], "multiples": []}, "h"),
    ({"h": [1.0, np.nan], "groups": [0, 1], "multiples": [1, 1]}, "h"),
    ({"h": [1.0, 1.0], "groups": [0], "multiples": [1, 1]}, "groups"),
    ({"h": [1.0, 1.0], "groups": [0, 0.5], "multiples": [1, 1]}, "groups"),
    ({"h": [1.0], "groups": [0], "multiples": [0]}, "multiples"),
    ({"h": [1.0], "groups": [0], "multiples": [2**21]}, "multiples"),
])
def test_reachable_peak_refuses_bad_input(kwargs, word):
    from ropegeo.decay import reachable_peak

    with pytest.raises(ValueError, match=word):
        reachable_peak(**kwargs)
