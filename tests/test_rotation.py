import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ropegeo.frequencies import frequencies
from ropegeo.rotation import apply_rope, pair_indices, pairing_permutation, rotation_matrix

head_dims = st.sampled_from([2, 4, 8, 16, 64, 128])
pairings = st.sampled_from(["interleaved", "half"])
positions = st.floats(-5000, 5000, allow_nan=False)
# float32 rounds every coordinate to ~6e-8 relative; a dot product of d terms of size ~1 then
# carries an error of order d * 6e-8. float64 carries ~1e-16 per term, plus the rounding of the
# angle position * theta (|angle| <= 1e4 gives ~2e-12 absolute).
TOL = {"float64": 1e-9, "float32": 5e-5}


def _vectors(seed, d, dtype):
    rng = np.random.default_rng(seed)
    return rng.normal(size=d).astype(dtype), rng.normal(size=d).astype(dtype)


@given(st.integers(0, 2**32 - 1), head_dims, pairings, positions, positions, st.sampled_from(["float64", "float32"]))
def test_relative_law(seed, d, pairing, m, n, dtype):
    q, k = _vectors(seed, d, dtype)
    lhs = apply_rope(q, m, pairing=pairing) @ apply_rope(k, n, pairing=pairing)
    rhs = q @ apply_rope(k, n - m, pairing=pairing)
    scale = np.linalg.norm(q.astype(float)) * np.linalg.norm(k.astype(float))
    assert abs(float(lhs) - float(rhs)) <= TOL[dtype] * max(1.0, scale)


@given(head_dims, pairings, positions, positions)
def test_matrix_identity_composition_inverse(d, pairing, m, n):
    Rm = rotation_matrix(m, d, pairing=pairing)
    Rn = rotation_matrix(n, d, pairing=pairing)
    np.testing.assert_allclose(Rm.T @ Rn, rotation_matrix(n - m, d, pairing=pairing), atol=1e-9)
    np.testing.assert_allclose(Rm @ Rn, rotation_matrix(m + n, d, pairing=pairing), atol=1e-9)
    np.testing.assert_allclose(rotation_matrix(-m, d, pairing=pairing) @ Rm, np.eye(d), atol=1e-9)
    np.testing.assert_allclose(Rm.T @ Rm, np.eye(d), atol=1e-12)


@given(st.integers(0, 2**32 - 1), head_dims, pairings, positions)
def test_norm_preserved_per_pair(seed, d, pairing, m):
    x, _ = _vectors(seed, d, "float64")
    y = apply_rope(x, m, pairing=pairing)
    a, b = pair_indices(d, pairing)
    np.testing.assert_allclose(np.hypot(y[a], y[b]), np.hypot(x[a], x[b]), rtol=1e-12, atol=1e-12)


@given(st.integers(0, 2**32 - 1), st.sampled_from([4, 8, 32]), st.sampled_from([None, 2, 4]))
def test_pairings_agree_after_permutation(seed, d, rot):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 5, d))
    pos = rng.uniform(-100, 100, size=5)
    p = pairing_permutation(d, rot, "interleaved", "half")
    a = apply_rope(x, pos, rotary_dim=rot, pairing="interleaved")[..., p]
    b = apply_rope(x[..., p], pos, rotary_dim=rot, pairing="half")
    np.testing.assert_allclose(a, b, atol=1e-12)
    back = pairing_permutation(d, rot, "half", "interleaved")
    np.testing.assert_array_equal(p[back], np.arange(d))


def test_permutation_explicit_small_case():
    # half layout of pairs (0,1),(2,3) is [x0, x2, x1, x3]
    np.testing.assert_array_equal(pairing_permutation(4), [0, 2, 1, 3])


@given(st.integers(0, 2**32 - 1), pairings, positions)
def test_partial_rotary_passes_through(seed, pairing, m):
    x = np.random.default_rng(seed).normal(size=16)
    y = apply_rope(x, m, rotary_dim=6, pairing=pairing)
    np.testing.assert_array_equal(y[6:], x[6:])
    np.testing.assert_allclose(y[:6], apply_rope(x[:6], m, pairing=pairing), atol=1e-12)


def test_explicit_two_dim_rotation_against_complex_multiplication():
    x = np.array([0.3, -1.2])
    for m in [0, 1, 2.5, -7]:
        z = complex(*x) * np.exp(1j * m)
        np.testing.assert_allclose(apply_rope(x, m), [z.real, z.imag], atol=1e-14)


def test_batched_positions_broadcast_and_scale_and_theta():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 7, 8))
    pos = np.arange(7) + 0.5
    y = apply_rope(x, pos, scale=0.25)
    for s in range(7):
        np.testing.assert_allclose(y[1, 2, s], apply_rope(x[1, 2, s], pos[s] * 0.25))
    theta = frequencies(8) * 0.25
    np.testing.assert_allclose(apply_rope(x, pos, theta=theta), y, atol=1e-12)


def test_dtype_kept():
    x = np.ones((3, 8), dtype=np.float32)
    assert apply_rope(x, [0, 1, 2]).dtype == np.float32
    assert apply_rope(np.ones((3, 8), dtype=int), 1).dtype == np.float64


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: apply_rope(np.ones(7), 1), "head_dim"),
        (lambda: apply_rope(np.ones((3, 8)), [1, 2]), "positions"),
        (lambda: apply_rope(np.ones(8), np.nan), "positions"),
        (lambda: apply_rope(np.ones(8), np.inf), "positions"),
        (lambda: apply_rope(np.full(8, np.nan), 1), "x"),
        (lambda: apply_rope(np.ones(8), 1, pairing="zigzag"), "pairing"),
        (lambda: apply_rope(np.ones(8), 1, rotary_dim=5), "rotary_dim"),
        (lambda: apply_rope(np.ones(8), 1, rotary_dim=10), "rotary_dim"),
        (lambda: apply_rope(np.ones(8), 1, theta=np.ones(5)), "theta"),
        (lambda: apply_rope(np.ones(8), 1, phase_dtype="int8"), "dtype"),
        (lambda: apply_rope(3.0, 1), "x"),
        (lambda: rotation_matrix(float("nan"), 8), "position"),
    ],
)
def test_bad_input(call, word):
    with pytest.raises(ValueError, match=word):
        call()


def test_low_precision_phases_refuse_overflow_instead_of_returning_nan():
    from ropegeo.rotation import phase_angles

    with pytest.raises(ValueError, match="positions exceed the largest float16"):
        apply_rope(np.ones(4), 70_000, phase_dtype="float16")
    with pytest.raises(ValueError, match="overflows float16"):
        phase_angles([60_000.0], [2.0], "float16")  # the position fits, the angle does not
    assert np.all(np.isfinite(apply_rope(np.ones(4), 60_000, phase_dtype="float16")))


def test_rotation_matrix_is_bounded():
    with pytest.raises(ValueError, match="head_dim must be at most 2048"):
        rotation_matrix(1.0, 2**20)


def test_rotation_that_overflows_the_dtype_is_refused():
    with pytest.raises(ValueError, match="x is too large to rotate in float64"):
        apply_rope([1.5e308, 1.5e308], np.pi / 4, theta=[1.0])
    with pytest.raises(ValueError, match="x is too large to rotate in float16"):
        apply_rope(np.array([60_000, 60_000], dtype=np.float16), np.pi / 4, theta=[1.0])
