"""ropegeo.novelty against brute-force loops written from the definition of the chord distance."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ropegeo.frequencies import frequencies
from ropegeo.novelty import MAX_WORK, base_change_factor, joint_novelty


def brute(theta_train, theta_served, L, targets):
    """Loop over every training offset; the distance is sqrt(mean |e^{i a} - e^{i b}|^2)."""
    near, dist = [], []
    for t in targets:
        best, arg = None, None
        for d in range(L):
            s = sum(abs(complex(math.cos(t * b), math.sin(t * b)) - complex(math.cos(d * a), math.sin(d * a))) ** 2
                    for a, b in zip(theta_train, theta_served))
            val = math.sqrt(s / len(theta_train))
            if best is None or val < best - 1e-12:
                best, arg = val, d
        near.append(arg)
        dist.append(best)
    return np.array(near), np.array(dist)


def test_matches_brute_force_on_a_small_bank():
    th = frequencies(8, 100.0)
    served = th * np.array([1.0, 0.7, 0.4, 0.25])  # a YaRN-like blend: fast kept, slow divided
    targets = list(range(0, 90, 7))
    res = joint_novelty(th, served, 24, targets)
    near, dist = brute(th, served, 24, targets)
    np.testing.assert_allclose(res.distance, dist, atol=1e-12)
    # where the nearest offset is unique, it is the same one
    assert np.mean(res.nearest == near) > 0.9


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 40), st.floats(1.5, 1e4), st.integers(1, 6))
def test_raw_bank_has_zero_novelty_below_L_and_the_chord_identity(L, base, half):
    th = frequencies(2 * half, base)
    res = joint_novelty(th, th, L, range(L))
    assert np.all(res.distance < 1e-7)
    # beyond L: the distance is sqrt(2 (1 - K(t - nearest))) with K the bank's own kernel
    far = joint_novelty(th, th, L, range(L, 3 * L))
    k = np.mean(np.cos(np.multiply.outer(far.targets - far.nearest, th)), axis=1)
    np.testing.assert_allclose(far.distance, np.sqrt(np.maximum(0, 2 * (1 - k))), atol=1e-7)
    assert np.all(far.distance <= 2 + 1e-12)


def test_interpolation_stays_within_half_a_step():
    # PI by s: served offset t sits at t / s; the nearest whole offset is at most 1/2 away
    # (below s (L - 1)), so the distance is at most sqrt(2 (1 - K(1/2)))
    th = frequencies(32, 10_000.0)
    s, L = 8, 256
    res = joint_novelty(th, th / s, L, range(0, s * (L - 1) + 1, 3))
    bound = math.sqrt(2 * (1 - np.mean(np.cos(th / 2))))
    assert res.distance.max() <= bound + 1e-12
    assert res.distance.max() == pytest.approx(bound, rel=1e-9)  # t = 4 (mod 8) hits it
    assert res.fraction_beyond(bound + 1e-9) == 0.0


def test_fraction_beyond_counts():
    th = frequencies(16, 10_000.0)
    res = joint_novelty(th, th, 16, range(32))
    assert res.fraction_beyond(0.0) == pytest.approx(np.mean(res.distance > 0))
    with pytest.raises(ValueError, match="threshold"):
        res.fraction_beyond(-1)


@pytest.mark.parametrize("kwargs, match", [
    (dict(theta_served=np.ones(3)), "same shape"),
    (dict(theta_train=[-1.0, 0.5]), "theta_train must hold non-negative"),
    (dict(train_length=0), "train_length must be at least 1"),
    (dict(train_length=2**23), "train_length \\* pairs"),
    (dict(targets=[-1, 2]), "whole, non-negative"),
    (dict(targets=[1.5]), "whole, non-negative"),
    (dict(targets=[]), "non-empty"),
    (dict(targets=[[1, 2]]), "flat"),
    (dict(targets=range(2**20 + 1)), "at most"),
    (dict(targets=range(2**18), train_length=2**18), "targets x train_length x pairs"),
])
def test_bad_input_names_the_parameter(kwargs, match):
    args = dict(theta_train=[1.0, 0.5], theta_served=[1.0, 0.25], train_length=8, targets=range(4))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        joint_novelty(**args)
    assert MAX_WORK >= 2**30


@pytest.mark.parametrize("d, s", [(96, 32.0), (128, 4.0), (64, 0.5), (4, 3.0)])
def test_base_change_factor_inverts_the_ntk_base(d, s):
    new_base = 10_000.0 * s ** (d / (d - 2))
    assert base_change_factor(d, 10_000.0, new_base) == pytest.approx(s, rel=1e-12)
    # it is the slowdown of the slowest pair
    old = 10_000.0 ** (-(d - 2) / d)
    new = new_base ** (-(d - 2) / d)
    assert old / new == pytest.approx(base_change_factor(d, 10_000.0, new_base), rel=1e-12)


@pytest.mark.parametrize("args, match", [
    ((8, 1.0, 10.0), "base must be greater than 1"),
    ((8, 10.0, 0.5), "new_base must be greater than 1"),
    ((3, 10.0, 20.0), "rotary_dim must be an even"),
    ((2, 10.0, 20.0), "at least 4"),
])
def test_base_change_factor_refuses(args, match):
    with pytest.raises(ValueError, match=match):
        base_change_factor(*args)
