"""The chapter 2 derivations of ropegeo.book.symbolic, checked without trusting the module.

Each SymPy identity is rebuilt here from its own rotation matrix and simplified; each one also
gets a numerical counterpart as a hypothesis property (random points, numpy, or apply_rope).
"""

import functools

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ropegeo.book import symbolic as sym
from ropegeo.rotation import apply_rope, rotation_matrix

m, n, a, b, c = sp.symbols("m n a b c", real=True)
theta = sp.Symbol("theta", positive=True)
reals = st.floats(-50, 50, allow_nan=False)
freqs = st.floats(0.001, 3.0)


def R(angle):
    """An independent 2x2 rotation (counter-clockwise), built from the complex exponential."""
    z = sp.exp(sp.I * angle)
    return sp.Matrix([[sp.re(z), -sp.im(z)], [sp.im(z), sp.re(z)]]).applyfunc(sp.simplify)


def zero(expr):
    if isinstance(expr, sp.MatrixBase):
        return all(zero(e) for e in expr)
    return sp.simplify(sp.expand_trig(sp.expand(expr))) == 0


def by_name(identity):
    return identity.symbols


# ---------------------------------------------------------------- the 2x2 rotation itself


def test_rotation_2d_matches_complex_exponential():
    assert zero(sym.rotation_2d(a) - R(a))


def test_rotation_2d_rejects_garbage():
    with pytest.raises(ValueError, match="angle"):
        sym.rotation_2d(object())


# ---------------------------------------------------------------- relative, composition, inverse


def test_relative_identity_simplifies_independently():
    ident = sym.relative_identity()
    S = by_name(ident)
    mine = {m: S["m"], n: S["n"], theta: S["theta"]}
    # the left side really is the product of the two rotations, and it equals R_(n-m)
    assert zero(ident.lhs - (R(m * theta).T * R(n * theta)).subs(mine))
    assert zero(ident.lhs - R((n - m) * theta).subs(mine))
    assert ident.holds()
    assert zero(ident.simplified_lhs() - ident.rhs)


def test_composition_and_inverse_simplify_independently():
    comp = sym.composition_identity()
    S = by_name(comp)
    assert zero(comp.lhs - R((a + b) * theta).subs({a: S["a"], b: S["b"], theta: S["theta"]}))
    inv = sym.inverse_identity()
    assert zero(inv.lhs - sp.eye(2))
    assert comp.holds() and inv.holds()


def test_holds_can_fail():
    # the wrong-sign displacement is not the identity: holds() must say so
    bad = sym.Identity("wrong", R(m * theta).T * R(n * theta), R((m - n) * theta))
    assert not bad.holds()
    assert not sym.Identity("scalar", sp.cos(m) ** 2, sp.Integer(1)).holds()


@given(reals, reals, freqs)
def test_relative_identity_numerically(mv, nv, th):
    ident = sym.relative_identity()
    S = by_name(ident)
    want = rotation_matrix(nv - mv, 2, theta=[th])
    for side in (ident.lhs, ident.rhs):
        f = sp.lambdify((S["m"], S["n"], S["theta"]), side, "numpy")
        np.testing.assert_allclose(np.asarray(f(mv, nv, th), dtype=float), want, atol=1e-9)


@given(reals, reals, freqs)
def test_composition_inverse_numerically(av, bv, th):
    comp = sym.composition_identity()
    S = by_name(comp)
    f = sp.lambdify((S["a"], S["b"], S["theta"]), comp.lhs, "numpy")
    np.testing.assert_allclose(np.asarray(f(av, bv, th), dtype=float), rotation_matrix(av + bv, 2, theta=[th]), atol=1e-9)
    Ri = rotation_matrix(-av, 2, theta=[th]) @ rotation_matrix(av, 2, theta=[th])
    np.testing.assert_allclose(Ri, np.eye(2), atol=1e-12)


# ---------------------------------------------------------------- the score split


def test_score_split_sums_to_score():
    split = sym.score_split()
    S = split.symbols
    q1, q2, k1, k2 = S["q1"], S["q2"], S["k1"], S["k2"]
    # rebuild the score from independent rotations
    mine = (R(S["m"] * S["theta"]) * sp.Matrix([q1, q2])).dot(R(S["n"] * S["theta"]) * sp.Matrix([k1, k2]))
    assert zero(split.score - mine)
    total = split.symmetric + split.oriented
    assert zero(split.score.subs(S["n"], S["m"] + S["delta"]) - total)
    assert zero(split.in_delta() - total)


def test_score_split_parity_and_parallel():
    split = sym.score_split()
    S = split.symbols
    d = S["delta"]
    assert zero(split.symmetric.subs(d, -d) - split.symmetric)
    assert zero(split.oriented.subs(d, -d) + split.oriented)
    lam = sp.Symbol("lam", real=True)
    parallel = {S["k1"]: lam * S["q1"], S["k2"]: lam * S["q2"]}
    assert zero(split.oriented.subs(parallel))
    # the oriented term is not identically zero: it can fail
    assert not zero(split.oriented)
    assert zero(split.dot - (S["q1"] * S["k1"] + S["q2"] * S["k2"]))
    assert zero(split.cross - (S["q1"] * S["k2"] - S["q2"] * S["k1"]))


vec2 = st.tuples(st.floats(-5, 5), st.floats(-5, 5))


@given(vec2, vec2, reals, reals, freqs)
def test_score_split_numerically(qv, kv, mv, nv, th):
    q, k = np.array(qv), np.array(kv)
    score = apply_rope(q, mv, theta=[th]) @ apply_rope(k, nv, theta=[th])
    d = nv - mv
    dot, cross = q @ k, q[0] * k[1] - q[1] * k[0]
    assert score == pytest.approx(dot * np.cos(d * th) - cross * np.sin(d * th), abs=1e-8)
    swapped = apply_rope(q, nv, theta=[th]) @ apply_rope(k, mv, theta=[th])
    # swapping positions: symmetric part stays, oriented part flips
    assert score - swapped == pytest.approx(-2 * cross * np.sin(d * th), abs=1e-8)
    par = apply_rope(q, mv, theta=[th]) @ apply_rope(1.7 * q, nv, theta=[th])
    par_sw = apply_rope(q, nv, theta=[th]) @ apply_rope(1.7 * q, mv, theta=[th])
    assert par == pytest.approx(par_sw, abs=1e-8)


# ---------------------------------------------------------------- norms and blocks


def test_norm_identity():
    ident = sym.norm_identity()
    assert ident.holds()
    S = ident.symbols
    assert zero(ident.lhs - (R(S["m"] * S["theta"]) * sp.Matrix([S["x1"], S["x2"]])).dot(
        R(S["m"] * S["theta"]) * sp.Matrix([S["x1"], S["x2"]])))


@given(st.integers(0, 2**32 - 1), st.floats(-1e5, 1e5))
def test_norm_numerically(seed, pos):
    x = np.random.default_rng(seed).normal(size=(4, 32))
    np.testing.assert_allclose(np.linalg.norm(apply_rope(x, pos), axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12)


@pytest.mark.parametrize("pairs", [1, 2, 3])
def test_block_rotation_structure_and_identity(pairs):
    Rb, thetas = sym.block_rotation(pairs=pairs)
    assert Rb.shape == (2 * pairs, 2 * pairs) and len(thetas) == pairs
    for i, t in enumerate(thetas):
        assert zero(Rb[2 * i:2 * i + 2, 2 * i:2 * i + 2] - R(m * t).subs(m, sym.relative_identity().symbols["m"]))
    mask = sp.Matrix(2 * pairs, 2 * pairs, lambda r, col: 0 if r // 2 == col // 2 else 1)
    assert all(Rb[r, col] == 0 for r in range(2 * pairs) for col in range(2 * pairs) if mask[r, col])
    assert sym.block_relative_identity(pairs).holds()


@pytest.mark.parametrize("bad", [0, 17, 1.5, "3", True])
def test_block_rotation_validates(bad):
    with pytest.raises(ValueError, match="pairs"):
        sym.block_rotation(pairs=bad)


@given(st.lists(freqs, min_size=3, max_size=3), reals, reals)
def test_block_identity_numerically(ths, mv, nv):
    ident = sym.block_relative_identity(3)
    S = ident.symbols
    f = sp.lambdify((S["m"], S["n"], S["theta_0"], S["theta_1"], S["theta_2"]), ident.lhs, "numpy")
    want = rotation_matrix(nv - mv, 6, theta=ths)
    np.testing.assert_allclose(np.asarray(f(mv, nv, *ths), dtype=float), want, atol=1e-9)


# ---------------------------------------------------------------- additive versus rotary


def test_additive_expansion_has_four_families():
    exp = sym.additive_expansion()
    S = exp.symbols
    fam = exp.families
    assert list(fam) == ["content-content", "content-position", "position-content", "position-position"]
    assert sp.simplify(sp.expand(exp.score) - sp.MatAdd(*fam.values())) == sp.ZeroMatrix(1, 1) or \
        sp.expand(exp.score) == sp.MatAdd(*fam.values())
    x, xp, pm, pn = S["x"], S["x'"], S["p_m"], S["p_n"]
    has = {name: (t.has(x), t.has(pm), t.has(xp), t.has(pn)) for name, t in fam.items()}
    assert has["content-content"] == (True, False, True, False)
    assert has["content-position"] == (True, False, False, True)
    assert has["position-content"] == (False, True, True, False)
    assert has["position-position"] == (False, True, False, True)


@settings(max_examples=10)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5))
def test_additive_expansion_numerically(seed, d):
    exp = sym.additive_expansion()
    S = exp.symbols
    rng = np.random.default_rng(seed)
    arrays = {k: rng.normal(size=(d, 1) if k[0] in "xp" else (d, d)) for k in S}
    vals = {S[k]: sp.Matrix(v) for k, v in arrays.items()}
    parts = {name: float(np.asarray(t.subs(vals).doit()).astype(float).item()) for name, t in exp.families.items()}
    # the same four products computed with numpy, family by family
    G = arrays["W_q"].T @ arrays["W_k"]
    want = {
        "content-content": arrays["x"].T @ G @ arrays["x'"],
        "content-position": arrays["x"].T @ G @ arrays["p_n"],
        "position-content": arrays["p_m"].T @ G @ arrays["x'"],
        "position-position": arrays["p_m"].T @ G @ arrays["p_n"],
    }
    for name, value in want.items():
        assert parts[name] == pytest.approx(value.item(), rel=1e-9, abs=1e-9)
    total = (arrays["x"] + arrays["p_m"]).T @ G @ (arrays["x'"] + arrays["p_n"])
    assert sum(parts.values()) == pytest.approx(total.item(), rel=1e-9, abs=1e-9)


def test_position_position_split():
    pp = sym.sinusoid_position_term()
    S = pp.symbols
    w, w11, w12, w21, w22 = S["omega"], S["w11"], S["w12"], S["w21"], S["w22"]
    M, N = S["m"], S["n"]
    mine = (sp.Matrix([sp.sin(M * w), sp.cos(M * w)]).T * pp.W * sp.Matrix([sp.sin(N * w), sp.cos(N * w)]))[0, 0]
    assert zero(pp.term - mine)
    assert zero(pp.term - pp.relative - pp.absolute)
    C = sp.Symbol("C", real=True)
    shift = {M: M + C, N: N + C}
    assert zero(pp.relative.subs(shift, simultaneous=True) - pp.relative)
    assert not zero(pp.absolute.subs(shift, simultaneous=True) - pp.absolute)
    assert zero(pp.absolute.subs({w22: w11, w21: -w12}))
    assert not zero(pp.absolute)


@given(st.tuples(*[st.floats(-3, 3)] * 4), reals, reals, freqs)
def test_position_position_numerically(W, mv, nv, om):
    pp = sym.sinusoid_position_term()
    S = pp.symbols
    args = (S["omega"], S["w11"], S["w12"], S["w21"], S["w22"], S["m"], S["n"])
    f_rel = sp.lambdify(args, pp.relative, "numpy")
    f_abs = sp.lambdify(args, pp.absolute, "numpy")
    Wm = np.array(W).reshape(2, 2)
    pm = np.array([np.sin(mv * om), np.cos(mv * om)])
    pn = np.array([np.sin(nv * om), np.cos(nv * om)])
    assert pm @ Wm @ pn == pytest.approx(f_rel(om, *W, mv, nv) + f_abs(om, *W, mv, nv), abs=1e-9)


def test_rope_bilinear_score_is_shift_invariant():
    score, S = sym.rope_bilinear_score()
    C = S["c"]
    moved = score.subs({S["m"]: S["m"] + C, S["n"]: S["n"] + C}, simultaneous=True)
    # exponential form: every phase pair e^{i theta (m + c)} e^{-i theta (n + c)} cancels c exactly
    assert sp.simplify(sp.expand((moved - score).rewrite(sp.exp))) == 0
    # the score is the 2-D formula x^T Wq^T R_(n-m) Wk y, evaluated independently
    rng = np.random.default_rng(1)
    vals = dict(zip(["x1", "x2", "y1", "y2", "a11", "a12", "a21", "a22", "b11", "b12", "b21", "b22"], rng.normal(size=12)))
    vals.update(m=2.0, n=-1.5, theta=0.7)
    x, y = np.array([vals["x1"], vals["x2"]]), np.array([vals["y1"], vals["y2"]])
    Wq = np.array([[vals["a11"], vals["a12"]], [vals["a21"], vals["a22"]]])
    Wk = np.array([[vals["b11"], vals["b12"]], [vals["b21"], vals["b22"]]])
    d = (vals["n"] - vals["m"]) * vals["theta"]
    want = x @ Wq.T @ np.array([[np.cos(d), -np.sin(d)], [np.sin(d), np.cos(d)]]) @ Wk @ y
    got = float(score.subs({S[k]: v for k, v in vals.items()}))
    assert got == pytest.approx(want, rel=1e-10)
    # and it does depend on the displacement
    vals["n"] += 1.0
    assert float(score.subs({S[k]: v for k, v in vals.items()})) != pytest.approx(want, rel=1e-3)


# ---------------------------------------------------------------- characters


def test_character_identity():
    ident = sym.character_identity()
    assert ident.holds()
    S = ident.symbols
    assert sp.simplify(ident.lhs - sp.exp(sp.I * (S["m"] + S["n"]) * S["theta"])) == 0
    assert not sym.Identity("bad", ident.lhs, sp.exp(sp.I * S["m"] * S["theta"]) + sp.exp(sp.I * S["n"] * S["theta"])).holds()


@given(reals, reals, freqs)
def test_character_numerically(mv, nv, th):
    chi = lambda t: np.exp(1j * t * th)  # noqa: E731
    assert abs(chi(mv + nv) - chi(mv) * chi(nv)) < 1e-12


def test_rotation_as_phase():
    ident = sym.rotation_as_phase()
    assert ident.holds()
    S = ident.symbols
    assert zero(ident.rhs - R(S["m"] * S["theta"]) * sp.Matrix([S["x1"], S["x2"]]))


@functools.lru_cache(maxsize=1)
def _phase_fn():
    ident = sym.rotation_as_phase()
    S = ident.symbols
    return sp.lambdify((S["x1"], S["x2"], S["m"], S["theta"]), ident.lhs, "numpy")


@given(vec2, reals, freqs)
def test_rotation_as_phase_numerically(xv, mv, th):
    z = complex(*xv) * np.exp(1j * mv * th)
    got = np.asarray(_phase_fn()(xv[0], xv[1], mv, th), dtype=float).ravel()
    np.testing.assert_allclose(got, [z.real, z.imag], atol=1e-9)
    np.testing.assert_allclose(got, apply_rope(np.array(xv), mv, theta=[th]), atol=1e-9)


def test_identity_repr_and_latex():
    ident = sym.inverse_identity()
    assert ident.name in repr(ident)
    assert ident._repr_latex_().startswith("$\\displaystyle")


# ---------------------------------------------------------------- shift_change


def test_shift_change_zero_for_relative_and_nonzero_for_absolute():
    score, S = sym.rope_bilinear_score()
    assert sym.shift_change(score, (S["m"], S["n"])) == 0
    pp = sym.sinusoid_position_term()
    P = pp.symbols
    assert sym.shift_change(pp.relative, (P["m"], P["n"])) == 0
    assert sym.shift_change(pp.absolute, (P["m"], P["n"])) != 0
    assert sym.shift_change(pp.term, (P["m"], P["n"])) != 0


@functools.lru_cache(maxsize=1)
def _shift_change_fn():
    pp = sym.sinusoid_position_term()
    P = pp.symbols
    C = sp.Symbol("C", real=True)
    change = sym.shift_change(pp.term, (P["m"], P["n"]), C)
    args = (P["omega"], P["w11"], P["w12"], P["w21"], P["w22"], P["m"], P["n"], C)
    return sp.lambdify(args, change, "numpy")


@given(st.tuples(*[st.floats(-3, 3)] * 4), reals, reals, reals, freqs)
def test_shift_change_numerically(W, mv, nv, cv, om):
    got = complex(_shift_change_fn()(om, *W, mv, nv, cv))
    Wm = np.array(W).reshape(2, 2)

    def term(x, y):
        return np.array([np.sin(x * om), np.cos(x * om)]) @ Wm @ np.array([np.sin(y * om), np.cos(y * om)])

    assert got.real == pytest.approx(term(mv + cv, nv + cv) - term(mv, nv), abs=1e-8)
    assert abs(got.imag) < 1e-8


def test_shift_change_validates():
    with pytest.raises(ValueError, match="expr"):
        sym.shift_change("m + n", (m, n))
    with pytest.raises(ValueError, match="positions"):
        sym.shift_change(m + n, ())
    with pytest.raises(ValueError, match="positions"):
        sym.shift_change(m + n, (m, 3))


def test_amplitude_phase_identity():
    import math

    from ropegeo.book.symbolic import amplitude_phase_identity

    ident = amplitude_phase_identity()
    assert ident.holds()
    S = ident.symbols
    # numerically against a rotation written out here, at a few points
    for rq, rk, phi, psi, d, t in ((1.0, 2.0, 0.3, -1.1, 4.0, 0.35), (0.5, 3.0, 2.0, 2.5, -7.5, 1.2)):
        q = (rq * math.cos(phi), rq * math.sin(phi))
        k = (rk * math.cos(psi), rk * math.sin(psi))
        a = d * t
        rk_vec = (math.cos(a) * k[0] - math.sin(a) * k[1], math.sin(a) * k[0] + math.cos(a) * k[1])
        want = q[0] * rk_vec[0] + q[1] * rk_vec[1]
        vals = {S["r_q"]: rq, S["r_k"]: rk, S["phi"]: phi, S["psi"]: psi, S["delta"]: d, S["theta"]: t}
        assert float(ident.lhs.subs(vals)) == pytest.approx(want, abs=1e-12)
        assert float(ident.rhs.subs(vals)) == pytest.approx(want, abs=1e-12)
        # the peak: delta = (phi - psi) / theta maximises the pair's score
        vals[S["delta"]] = (phi - psi) / t
        assert float(ident.rhs.subs(vals)) == pytest.approx(rq * rk)
    # the wrong sign of the angle is not an identity
    from ropegeo.book.symbolic import Identity

    wrong = S["r_q"] * S["r_k"] * sp.cos(S["delta"] * S["theta"] - S["psi"] + S["phi"])
    assert not Identity("wrong", ident.lhs, wrong, S).holds()


def test_requirement_phase():
    from ropegeo.book.symbolic import requirement_phase

    recurrence, solution = requirement_phase()
    (m,) = [s for s in solution.free_symbols if s.name == "m"]
    (theta,) = [s for s in solution.free_symbols if s.name == "theta"]
    assert sp.simplify(solution - m * theta) == 0
    # it satisfies the recurrence and the initial condition, checked by substitution
    assert sp.simplify(solution.subs(m, m + 1) - solution - theta) == 0
    assert solution.subs(m, 0) == 0
    assert recurrence.rhs == theta
