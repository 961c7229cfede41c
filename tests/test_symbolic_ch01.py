"""Tests of chapter 1's SymPy derivation: a shift of the sinusoidal code is a fixed rotation."""

import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from ropegeo.book.symbolic import sinusoidal_shift, sinusoidal_shift_matrix
from ropegeo.toy.schemes import sinusoidal_encoding

D = sinusoidal_shift()


def test_derived_matrix_is_the_closed_form():
    w, k = D.omega, D.k
    # written down independently from sin(a+b) = sin a cos b + cos a sin b and
    # cos(a+b) = cos a cos b - sin a sin b with a = w p, b = w k
    expected = sp.Matrix([[sp.cos(w * k), sp.sin(w * k)], [-sp.sin(w * k), sp.cos(w * k)]])
    assert (D.matrix - expected).applyfunc(sp.simplify).is_zero_matrix


def test_derivation_facts():
    assert D.residual.is_zero_matrix
    assert D.depends_on_position is False
    assert D.p not in D.matrix.free_symbols
    assert D.gram == sp.eye(2)
    assert sp.simplify(D.determinant - 1) == 0
    assert sp.simplify(D.rotation_angle + D.omega * D.k) == 0
    # the shifted pair really is the pair at p + k (not p - k)
    target = sp.Matrix([sp.sin(D.omega * (D.p + D.k)), sp.cos(D.omega * (D.p + D.k))])
    assert (D.shifted - target).applyfunc(lambda e: sp.simplify(sp.expand_trig(e))).is_zero_matrix


@given(st.floats(0.01, 3.0), st.floats(-100, 100), st.floats(-1000, 1000))
def test_derived_matrix_numerically_shifts_the_pair(w, k, p):
    M = np.array(D.matrix.subs({D.omega: w, D.k: k}).evalf(), dtype=float)
    got = M @ np.array([math.sin(w * p), math.cos(w * p)])
    np.testing.assert_allclose(got, [math.sin(w * (p + k)), math.cos(w * (p + k))], atol=1e-9)


@given(st.floats(-3000, 3000), st.sampled_from([2, 4, 8, 16, 64]), st.floats(2.0, 1e5),
       st.lists(st.floats(-5000, 5000), min_size=1, max_size=8))
def test_shift_matrix_against_direct_evaluation(k, dim, base, positions):
    M = sinusoidal_shift_matrix(k, dim, base)
    pos = np.array(positions)
    direct = sinusoidal_encoding(pos + k, dim, base)
    np.testing.assert_allclose(sinusoidal_encoding(pos, dim, base) @ M.T, direct, atol=1e-8)


@given(st.floats(-500, 500), st.floats(-500, 500), st.sampled_from([2, 6, 16]))
def test_shift_matrix_is_a_block_rotation_group(a, b, dim):
    Ma, Mb = sinusoidal_shift_matrix(a, dim), sinusoidal_shift_matrix(b, dim)
    np.testing.assert_allclose(Ma @ Mb, sinusoidal_shift_matrix(a + b, dim), atol=1e-9)
    np.testing.assert_allclose(Ma.T @ Ma, np.eye(dim), atol=1e-12)
    np.testing.assert_allclose(sinusoidal_shift_matrix(-a, dim), Ma.T, atol=1e-12)
    block = np.kron(np.eye(dim // 2), np.ones((2, 2)))
    assert np.all(Ma[block == 0] == 0)
    np.testing.assert_allclose(np.linalg.det(Ma[:2, :2]), 1.0, atol=1e-12)


def test_shift_matrix_validation():
    with pytest.raises(ValueError, match="shift must be finite"):
        sinusoidal_shift_matrix(np.nan, 4)
    with pytest.raises(ValueError, match="d_model must be an even"):
        sinusoidal_shift_matrix(1, 5)
    with pytest.raises(ValueError, match="d_model must be at most 4096"):
        sinusoidal_shift_matrix(1, 8192)
    with pytest.raises(ValueError, match="base must be greater than 1"):
        sinusoidal_shift_matrix(1, 4, base=1)


def test_symbolic_inputs_refuse_strings_which_sympy_would_evaluate(tmp_path):
    import sympy as sp

    from ropegeo.book.symbolic import block_rotation, rotation_2d, shift_change

    marker = tmp_path / "ran"
    code = f"__import__('pathlib').Path({str(marker)!r}).touch() or m"
    for call in (lambda: block_rotation(code), lambda: rotation_2d(code),
                 lambda: shift_change(sp.Symbol("m"), [sp.Symbol("m")], shift=code)):
        with pytest.raises(ValueError, match="not a string"):
            call()
    assert not marker.exists()
    with pytest.raises(ValueError, match="position must be a number"):
        block_rotation([])


def test_self_similarity_identity():
    from ropegeo.book.symbolic import sinusoidal_self_similarity

    ident = sinusoidal_self_similarity()
    assert ident.holds()
    p, k, w = (ident.symbols[n] for n in ("p", "k", "omega"))
    # the simplified product holds no p and is even in k
    simple = sp.simplify(ident.lhs)
    assert p not in simple.free_symbols
    assert sp.simplify(simple.subs(k, -k) - simple) == 0
    # numerically, against the code itself: one pair of width-2 sinusoidal_encoding
    for wv, kv, pv in ((0.3, 4.0, 11.0), (1.0, -7.5, 250.0)):
        val = float(ident.lhs.subs({w: wv, k: kv, p: pv}))
        code = sinusoidal_encoding(np.array([pv, pv + kv]) * wv, 2)
        assert val == pytest.approx(code[0] @ code[1], abs=1e-12)
        assert val == pytest.approx(math.cos(wv * kv), abs=1e-12)
    # a wrong right side is caught: the identity machinery can fail
    from ropegeo.book.symbolic import Identity

    assert not Identity("wrong", ident.lhs, sp.cos(w * (p + k)), ident.symbols).holds()
