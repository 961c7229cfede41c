"""The float comparisons of the tests (tests/ulps.py): cases each must pass and cases it must fail."""

from __future__ import annotations

import doctest

import ml_dtypes
import numpy as np
import pytest

import ulps
from ulps import assert_rounds_within, assert_ulps, ulps_apart


def test_examples():
    assert doctest.testmod(ulps).failed == 0


def test_assert_ulps_counts_units_in_the_last_place():
    x = np.array([1.0, 1e-300, 3.5e300, -2.0, 0.0])
    assert_ulps(x, x, ulps=0)
    up = np.nextafter(np.nextafter(x, np.inf), np.inf)  # two ulps away everywhere
    assert ulps_apart(up, x).tolist() == [2.0, 2.0, 2.0, 1.0, 2.0]  # -2.0 + 2 ulps(-2) up: spacing halves below 2
    assert_ulps(up, x, ulps=2)
    with pytest.raises(AssertionError, match="5 of 5 entries differ by more than 1 ulps"):
        assert_ulps(up + np.spacing(np.abs(x)), x, ulps=1)
    assert_ulps(np.float32(1) + np.float32(2**-23), np.float32(1), ulps=1)  # float32 ulps for float32
    with pytest.raises(AssertionError):
        assert_ulps(np.float32(1) + np.float32(2**-22), np.float32(1), ulps=1)


def test_assert_ulps_refuses_other_shapes_and_other_non_finite_entries():
    assert_ulps([np.nan, np.inf, -np.inf], [np.nan, np.inf, -np.inf], ulps=0)
    for got, want in (([np.nan], [1.0]), ([np.inf], [-np.inf]), ([1.0], [np.nan]), ([1.0, 2.0], [1.0])):
        with pytest.raises(AssertionError):
            assert_ulps(got, want)


def test_assert_ulps_with_a_scale_for_a_chain_that_cancels():
    assert_ulps(1e-17, 0.0, ulps=1, scale=1.0)  # a residual of inputs of size 1
    with pytest.raises(AssertionError):
        assert_ulps(1e-17, 0.0, ulps=1)
    with pytest.raises(AssertionError):
        assert_ulps(1e-15, 0.0, ulps=4, scale=1.0)


def test_assert_rounds_within_accepts_a_neighbour_only_at_a_rounding_boundary():
    to_bf16 = lambda v: np.asarray(v).astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)  # noqa: E731
    mid = 1 + 2.0**-8  # halfway between the bfloat16 numbers 1 and 1 + 2**-7
    assert_rounds_within([1.0, 1 + 2.0**-7], [mid, mid], to_bf16, ulps=1, unit=np.float32)
    x = np.array([1 + 2.0**-9, 1.5])  # far from a boundary: only the rounding of x itself
    assert_rounds_within(to_bf16(x), x, to_bf16, ulps=4, unit=np.float32)
    with pytest.raises(AssertionError, match="1 of 2 entries"):
        assert_rounds_within([1 + 2.0**-7, 1.5], x, to_bf16, ulps=4, unit=np.float32)
    with pytest.raises(AssertionError, match="shapes"):
        assert_rounds_within([1.0], x, to_bf16)
