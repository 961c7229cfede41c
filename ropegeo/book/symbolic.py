"""SymPy derivations the chapters display, as SymPy objects a notebook shows and a test simplifies.

An :class:`Identity` holds the two sides of a claimed equality unsimplified and
:meth:`Identity.residual` simplifies their difference. A bad argument raises a ``ValueError``
naming it; strings are refused where an expression is expected (SymPy would evaluate them as code).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from ropegeo import _validate as v

__all__ = ["Identity", "rotation_2d", "relative_identity", "composition_identity", "inverse_identity", "ScoreSplit",
           "score_split", "norm_identity", "block_rotation", "block_relative_identity", "AdditiveExpansion",
           "additive_expansion", "PositionPositionSplit", "sinusoid_position_term", "rope_bilinear_score",
           "shift_change", "character_identity", "rotation_as_phase", "SinusoidalShift", "sinusoidal_shift",
           "sinusoidal_shift_matrix", "sinusoidal_self_similarity", "amplitude_phase_identity", "requirement_phase"]


# --- Chapter 2: the identity hidden in a rotation -------------------------------------------

# Shared symbols: positions and frequencies are real, so conjugation and trigsimp behave.
_m, _n, _a, _b, _c = sp.symbols("m n a b c", real=True)
_delta = sp.Symbol("delta", real=True)
_theta = sp.Symbol("theta", positive=True)
_q1, _q2, _k1, _k2 = sp.symbols("q1 q2 k1 k2", real=True)


@dataclass(frozen=True, repr=False)
class Identity:
    """A claimed equality ``lhs == rhs`` between SymPy expressions or matrices (as built), named in words,
    with its free ``symbols`` by name.
    """

    name: str
    lhs: object
    rhs: object
    symbols: dict = field(default_factory=dict)

    def residual(self):
        """``lhs - rhs`` after trigonometric simplification: zero (or a zero matrix) when it holds."""
        diff = self.lhs - self.rhs
        if isinstance(diff, sp.MatrixBase):
            return diff.applyfunc(lambda e: sp.simplify(sp.expand_trig(e)))
        return sp.simplify(sp.expand_trig(diff))

    def holds(self) -> bool:
        """True when :meth:`residual` simplifies to zero."""
        r = self.residual()
        if isinstance(r, sp.MatrixBase):
            return r.is_zero_matrix is True
        return r == 0

    def simplified_lhs(self):
        """The left side after ``trigsimp``: what the multiplication collapses to."""
        if isinstance(self.lhs, sp.MatrixBase):
            return self.lhs.applyfunc(sp.trigsimp)
        return sp.trigsimp(self.lhs)

    def __repr__(self) -> str:
        return f"Identity[{self.name}]: {sp.sstr(self.lhs)} = {sp.sstr(self.rhs)}"

    def _repr_latex_(self) -> str:
        return rf"$\displaystyle {sp.latex(self.lhs)} = {sp.latex(self.rhs)}$"


def _expr(name: str, value) -> sp.Expr:
    """A SymPy expression from a number or an expression; strings are refused (SymPy would ``eval`` them)."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a number or a SymPy expression, not a string (build it with sympy.symbols)")
    try:
        out = value if isinstance(value, sp.Basic) else sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError, ValueError):
        out = None
    if not isinstance(out, sp.Expr):
        raise ValueError(f"{name} must be a number or a SymPy expression, got {value!r}")
    return out


def rotation_2d(angle) -> sp.Matrix:
    """The 2x2 counter-clockwise rotation ``[[cos a, -sin a], [sin a, cos a]]`` by ``angle`` (a SymPy
    expression or number)."""
    a = _expr("angle", angle)
    return sp.Matrix([[sp.cos(a), -sp.sin(a)], [sp.sin(a), sp.cos(a)]])


def relative_identity() -> Identity:
    """``R_m^T R_n = R_{n-m}`` for one pair turning at ``theta``: the product multiplied out, against the
    rotation by ``(n - m) theta``."""
    lhs = rotation_2d(_m * _theta).T * rotation_2d(_n * _theta)
    rhs = rotation_2d((_n - _m) * _theta)
    return Identity("R_m^T R_n = R_(n-m)", lhs, rhs, {"m": _m, "n": _n, "theta": _theta})


def composition_identity() -> Identity:
    """``R_a R_b = R_{a+b}``: a steps then b steps is one move of ``a + b`` steps."""
    lhs = rotation_2d(_a * _theta) * rotation_2d(_b * _theta)
    rhs = rotation_2d((_a + _b) * _theta)
    return Identity("R_a R_b = R_(a+b)", lhs, rhs, {"a": _a, "b": _b, "theta": _theta})


def inverse_identity() -> Identity:
    """``R_{-m} R_m = I``: a negative position undoes a positive one."""
    lhs = rotation_2d(-_m * _theta) * rotation_2d(_m * _theta)
    return Identity("R_(-m) R_m = I", lhs, sp.eye(2), {"m": _m, "theta": _theta})


@dataclass(frozen=True)
class ScoreSplit:
    """The 2-D rotary score ``<R_m q, R_n k>`` (``score``, multiplied out) and its two terms in ``delta = n - m``:
    ``symmetric = dot cos(delta theta)`` (even) and ``oriented = -cross sin(delta theta)`` (odd), with
    ``dot = q . k`` and ``cross = q1 k2 - q2 k1``.
    """

    score: sp.Expr
    symmetric: sp.Expr
    oriented: sp.Expr
    dot: sp.Expr
    cross: sp.Expr
    symbols: dict

    def in_delta(self) -> sp.Expr:
        """The score with ``n`` replaced by ``m + delta``."""
        return self.score.subs(_n, _m + _delta)


def score_split() -> ScoreSplit:
    """Split the one-pair rotary score into a symmetric cosine term and an oriented sine term:
    ``score = (q.k) cos(delta theta) - (q x k) sin(delta theta)``, since ``conj(z_q) z_k = q.k + i (q x k)``.
    """
    q = sp.Matrix([_q1, _q2])
    k = sp.Matrix([_k1, _k2])
    score = sp.expand((rotation_2d(_m * _theta) * q).dot(rotation_2d(_n * _theta) * k))
    dot = _q1 * _k1 + _q2 * _k2
    cross = _q1 * _k2 - _q2 * _k1
    symbols = {s.name: s for s in (_q1, _q2, _k1, _k2, _m, _n, _delta, _theta)}
    return ScoreSplit(score=score, symmetric=dot * sp.cos(_delta * _theta), oriented=-cross * sp.sin(_delta * _theta),
                      dot=dot, cross=cross, symbols=symbols)


def norm_identity() -> Identity:
    """``|R_m x|^2 = |x|^2``: rotating a pair never changes its length."""
    x1, x2 = sp.symbols("x1 x2", real=True)
    x = sp.Matrix([x1, x2])
    y = rotation_2d(_m * _theta) * x
    return Identity("|R_m x|^2 = |x|^2", sp.expand(y.dot(y)), x1**2 + x2**2,
                    {"x1": x1, "x2": x2, "m": _m, "theta": _theta})


def _pairs(pairs) -> int:
    if isinstance(pairs, bool):
        raise ValueError(f"pairs must be an integer between 1 and 16, got {pairs!r}")
    return v.integer("pairs", pairs, minimum=1, maximum=16)


def block_rotation(position=None, pairs: int = 3) -> tuple[sp.Matrix, tuple]:
    """The block-diagonal rotary operator over ``pairs`` (1 to 16) symbolic frequencies: ``(R, thetas)``,
    block ``i`` turning by ``position * theta_i`` (``position`` defaults to the symbol ``m``).
    """
    pairs = _pairs(pairs)
    pos = _m if position is None else _expr("position", position)
    thetas = sp.symbols(f"theta_0:{pairs}", positive=True)
    return sp.diag(*[rotation_2d(pos * t) for t in thetas]), thetas


def block_relative_identity(pairs: int = 3) -> Identity:
    """``R_m^T R_n = R_{n-m}`` for the block-diagonal operator over ``pairs`` (1 to 16) frequencies."""
    Rm, thetas = block_rotation(_m, pairs)
    Rn, _ = block_rotation(_n, pairs)
    Rd, _ = block_rotation(_n - _m, pairs)
    syms = {"m": _m, "n": _n, **{t.name: t for t in thetas}}
    return Identity(f"block R_m^T R_n = R_(n-m), {len(thetas)} pairs", Rm.T * Rn, Rd, syms)


@dataclass(frozen=True)
class AdditiveExpansion:
    """``(x + p_m)^T W_q^T W_k (x' + p_n)`` (``score``) and its expanded terms by family
    (``"content-content"``, ``"content-position"``, ``"position-content"``, ``"position-position"``).
    """

    score: object
    families: dict
    symbols: dict


def additive_expansion() -> AdditiveExpansion:
    """Expand the score of additive absolute encodings (contents ``x``, ``x'`` and codes ``p_m``, ``p_n``,
    ``d x 1``; ``W_q``, ``W_k``, ``d x d``) into its four families of terms.
    """
    d = sp.Symbol("d", integer=True, positive=True)
    x, xp = sp.MatrixSymbol("x", d, 1), sp.MatrixSymbol("x'", d, 1)
    pm, pn = sp.MatrixSymbol("p_m", d, 1), sp.MatrixSymbol("p_n", d, 1)
    Wq, Wk = sp.MatrixSymbol("W_q", d, d), sp.MatrixSymbol("W_k", d, d)
    score = (x + pm).T * Wq.T * Wk * (xp + pn)
    families = {}
    for term in sp.expand(score).args:
        left = "position" if term.has(pm) else "content"
        right = "position" if term.has(pn) else "content"
        families[f"{left}-{right}"] = term
    order = ("content-content", "content-position", "position-content", "position-position")
    families = {key: families[key] for key in order}
    symbols = {s.name: s for s in (x, xp, pm, pn, Wq, Wk)}
    return AdditiveExpansion(score=score, families=families, symbols=symbols)


@dataclass(frozen=True)
class PositionPositionSplit:
    """The position-position term ``p_m^T W p_n`` of a 2-D sinusoid ``p_t = (sin t w, cos t w)`` with a general
    ``W``: its part in ``n - m`` (``relative``) and in ``m + n`` (``absolute``, zero only when ``W``
    commutes with rotations).
    """

    term: sp.Expr
    relative: sp.Expr
    absolute: sp.Expr
    W: sp.Matrix
    symbols: dict


def sinusoid_position_term() -> PositionPositionSplit:
    """Split the sinusoid's position-position term into relative (``d = n - m``) and absolute (``s = m + n``)
    parts by the product-to-sum formulas.
    """
    w = sp.Symbol("omega", positive=True)
    w11, w12, w21, w22 = sp.symbols("w11 w12 w21 w22", real=True)
    W = sp.Matrix([[w11, w12], [w21, w22]])

    def p(t):
        return sp.Matrix([sp.sin(t * w), sp.cos(t * w)])

    term = sp.expand((p(_m).T * W * p(_n))[0, 0])
    d, s = (_n - _m) * w, (_m + _n) * w
    relative = (w11 + w22) / 2 * sp.cos(d) + (w21 - w12) / 2 * sp.sin(d)
    absolute = (w22 - w11) / 2 * sp.cos(s) + (w12 + w21) / 2 * sp.sin(s)
    syms = {str(x): x for x in (w, w11, w12, w21, w22, _m, _n)}
    return PositionPositionSplit(term, relative, absolute, W, syms)


def rope_bilinear_score() -> tuple[sp.Expr, dict]:
    """RoPE's score for 2-D contents, ``(R_m W_q x)^T (R_n W_k x')`` with general ``W_q, W_k``, multiplied
    out, and its symbols by name (including the shift ``c``).
    """
    x = sp.Matrix(sp.symbols("x1 x2", real=True))
    xp = sp.Matrix(sp.symbols("y1 y2", real=True))
    Wq = sp.Matrix(2, 2, sp.symbols("a11 a12 a21 a22", real=True))
    Wk = sp.Matrix(2, 2, sp.symbols("b11 b12 b21 b22", real=True))
    score = sp.expand((rotation_2d(_m * _theta) * Wq * x).dot(rotation_2d(_n * _theta) * Wk * xp))
    syms = {s.name: s for s in score.free_symbols}
    syms.setdefault("c", _c)
    return score, syms


def shift_change(expr, positions, shift=None):
    """``expr(positions + shift) - expr(positions)`` simplified (``shift`` defaults to the symbol ``c``):
    zero exactly when ``expr`` depends on the position symbols only through their differences.

    Trigonometric functions are rewritten as complex exponentials before expanding, so the shifts
    cancel term by term (much faster than ``simplify`` on the trigonometric form).
    """
    if not isinstance(expr, sp.Expr):
        raise ValueError(f"expr must be a SymPy expression, got {type(expr).__name__}")
    positions = tuple(positions)
    if not positions or not all(isinstance(p, sp.Symbol) for p in positions):
        raise ValueError("positions must be a non-empty sequence of SymPy symbols")
    shift = _c if shift is None else _expr("shift", shift)
    moved = expr.subs({p: p + shift for p in positions}, simultaneous=True)
    diff = sp.expand(sp.powsimp(sp.expand((moved - expr).rewrite(sp.exp))))
    return sp.simplify(diff) if diff != 0 else diff


def character_identity() -> Identity:
    """``chi(m + n) = chi(m) chi(n)`` for the character ``chi(t) = exp(i t theta)``."""

    def chi(t):
        return sp.exp(sp.I * t * _theta)

    return Identity("chi(m+n) = chi(m) chi(n)", chi(_m + _n), chi(_m) * chi(_n), {"m": _m, "n": _n, "theta": _theta})


def rotation_as_phase() -> Identity:
    """Multiplying ``x1 + i x2`` by ``exp(i m theta)`` is the rotation ``R_m`` acting on ``(x1, x2)``:
    ``(Re, Im)`` against ``R_m x``."""
    x1, x2 = sp.symbols("x1 x2", real=True)
    z = sp.expand_complex((x1 + sp.I * x2) * sp.exp(sp.I * _m * _theta))
    lhs = sp.Matrix([sp.re(z), sp.im(z)])
    rhs = rotation_2d(_m * _theta) * sp.Matrix([x1, x2])
    return Identity("Re/Im of (x1 + i x2) e^(i m theta) = R_m x", lhs, rhs,
                    {"x1": x1, "x2": x2, "m": _m, "theta": _theta})


# --- Chapter 1: shifting the sinusoidal code is a fixed linear map ---------------------------

import functools  # noqa: E402  (Chapter 1 section)
from typing import NamedTuple  # noqa: E402  (Chapter 1 section)

import numpy as np


class SinusoidalShift(NamedTuple):
    """The derivation that a shift by ``k`` acts on one sinusoidal pair as a fixed 2x2 matrix."""

    #: Position (real symbol).
    p: sp.Symbol
    #: Shift (real symbol).
    k: sp.Symbol
    #: Frequency (positive symbol).
    omega: sp.Symbol
    #: One pair of the code at position ``p``: ``[sin(omega p), cos(omega p)]``, shape (2, 1).
    code: sp.Matrix
    #: The same pair at ``p + k``, expanded with the angle-addition formulas, shape (2, 1).
    shifted: sp.Matrix
    #: The coefficients of ``shifted`` on ``code``, read off term by term, shape (2, 2).
    matrix: sp.Matrix
    #: ``matrix * code`` minus the pair at ``p + k``, simplified (zeros when the map is right).
    residual: sp.Matrix
    #: The angle ``a`` with ``matrix == rotation_2d(a)`` (``-omega k``).
    rotation_angle: object
    #: Whether ``p`` appears in ``matrix`` (False: one map serves every position).
    depends_on_position: bool
    #: ``matrix.T * matrix``, simplified (the identity for an orthogonal map).
    gram: sp.Matrix
    #: ``det(matrix)``, simplified (1 for a rotation).
    determinant: sp.Expr


def sinusoidal_shift() -> SinusoidalShift:
    """Derive the matrix that carries one sinusoidal pair from position ``p`` to ``p + k``.

    The pair at ``p + k`` is expanded with the angle-addition formulas and its coefficients on
    ``sin(omega p)``, ``cos(omega p)`` read off; the fields check the map, its orthogonality and its angle.
    """
    p, k = sp.symbols("p k", real=True)
    omega = sp.Symbol("omega", positive=True)
    s, c = sp.symbols("s c")  # placeholders for sin(omega p) and cos(omega p)

    def pair(t):
        return sp.Matrix([sp.sin(omega * t), sp.cos(omega * t)])

    code = pair(p)
    shifted = sp.expand_trig(pair(p + k).applyfunc(sp.expand))
    linear = shifted.subs({sp.sin(omega * p): s, sp.cos(omega * p): c}).applyfunc(sp.expand)
    matrix = sp.Matrix([[row.coeff(s), row.coeff(c)] for row in linear])
    residual = (matrix * code - pair(p + k)).applyfunc(lambda e: sp.simplify(sp.expand_trig(e)))
    candidate = sp.atan2(matrix[1, 0], matrix[0, 0])
    for guess in (omega * k, -omega * k):
        if (matrix - rotation_2d(guess)).applyfunc(sp.simplify).is_zero_matrix:
            candidate = guess
            break
    return SinusoidalShift(
        p=p, k=k, omega=omega, code=code, shifted=shifted, matrix=matrix, residual=residual,
        rotation_angle=candidate, depends_on_position=p in matrix.free_symbols,
        gram=(matrix.T * matrix).applyfunc(sp.simplify), determinant=sp.simplify(matrix.det()),
    )


@functools.lru_cache(maxsize=1)
def _sinusoidal_shift_block():
    """The derived 2x2 shift matrix as a numpy function of (omega, k), derived once."""
    d = sinusoidal_shift()
    return sp.lambdify((d.omega, d.k), d.matrix, modules="numpy")


def sinusoidal_shift_matrix(shift, d_model: int, base: float = 10_000.0):
    """The derived shift map of a whole sinusoidal code, ``(d_model, d_model)`` (``d_model`` even, 2 to 4096).

    Block ``i`` is :func:`sinusoidal_shift`'s matrix at ``omega = base ** (-2 i / d_model)``, so that
    ``sinusoidal_encoding(p + shift) == M @ sinusoidal_encoding(p)`` for every ``p``
    (:func:`ropegeo.toy.schemes.sinusoidal_encoding`).
    """
    shift = v.real("shift", shift)
    d_model = v.integer("d_model", d_model, minimum=2, maximum=4096)
    d_model = v.head_dim(d_model, "d_model")
    base = v.base(base)
    block = _sinusoidal_shift_block()
    omega = base ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)
    blocks = np.asarray(block(omega, shift), dtype=np.float64)  # (2, 2, pairs)
    out = np.zeros((d_model, d_model))
    idx = np.arange(0, d_model, 2)
    for r in range(2):
        for col in range(2):
            out[idx + r, idx + col] = blocks[r, col]
    return out


def sinusoidal_self_similarity() -> Identity:
    """One sinusoidal pair compared with itself ``k`` positions later: ``cos(omega k)``, free of ``p``.

    Summed over a code's pairs: ``PE(p) . PE(p + k) = (d / 2) K(k)``.

    Examples
    --------
    >>> sinusoidal_self_similarity().holds()
    True
    """
    p, k = sp.symbols("p k", real=True)
    omega = sp.Symbol("omega", positive=True)
    lhs = sp.sin(omega * p) * sp.sin(omega * (p + k)) + sp.cos(omega * p) * sp.cos(omega * (p + k))
    return Identity("PE(p) . PE(p + k) = cos(omega k), one pair", lhs, sp.cos(omega * k),
                    {"p": p, "k": k, "omega": omega})


def amplitude_phase_identity() -> Identity:
    """The one-pair score in amplitude-phase form: ``q^T R(delta theta) k = r_q r_k cos(delta theta + psi - phi)``.

    With ``q = r_q (cos phi, sin phi)`` and ``k = r_k (cos psi, sin psi)``: the angle ``psi - phi``
    from query to key chooses the pair's preferred offset.

    Examples
    --------
    >>> amplitude_phase_identity().holds()
    True
    """
    r_q, r_k = sp.symbols("r_q r_k", positive=True)
    phi, psi = sp.symbols("phi psi", real=True)
    q = sp.Matrix([r_q * sp.cos(phi), r_q * sp.sin(phi)])
    k = sp.Matrix([r_k * sp.cos(psi), r_k * sp.sin(psi)])
    lhs = sp.expand((q.T * rotation_2d(_delta * _theta) * k)[0, 0])
    rhs = r_q * r_k * sp.cos(_delta * _theta + psi - phi)
    return Identity("q^T R(delta theta) k = |q||k| cos(delta theta + psi - phi)", lhs, rhs,
                    {"r_q": r_q, "r_k": r_k, "phi": phi, "psi": psi, "delta": _delta, "theta": _theta})


def requirement_phase():
    """Solve ``alpha(m + 1) - alpha(m) = theta``, ``alpha(0) = 0`` (the phase condition of the RoPE derivation):
    the recurrence (a ``sympy.Eq``) and its only solution, ``m theta``.

    Examples
    --------
    >>> requirement_phase()[1]
    m*theta
    """
    m = sp.Symbol("m", integer=True, nonnegative=True)
    phase = sp.Function("alpha")
    recurrence = sp.Eq(phase(m + 1) - phase(m), _theta)
    solution = sp.rsolve(phase(m + 1) - phase(m) - _theta, phase(m), {phase(0): 0})
    return recurrence, sp.simplify(solution)
