"""RoFormer's long-term decay argument: a bound on the rotary score that shrinks with distance.

Write one head's score at offset ``delta`` with complex pairs, ``S(delta) = Re sum_i h_i
e^(i delta theta_i)`` with ``h_i = conj(q_i) k_i``. Summation by parts (Abel's transformation)
with the partial sums ``P_j(delta) = sum_{i < j} e^(i delta theta_i)`` and ``h_{d/2} = 0`` gives

    |sum_i h_i e^(i delta theta_i)| <= (max_i |h_{i+1} - h_i|) * sum_{j=1}^{d/2} |P_j(delta)|,

RoFormer's section 3.4.3. Its content-free factor, the *relative upper bound*, falls with ``|delta|``
(the paper's long-term-decay figure); it bounds the score from above and does not say that a
given head's score shrinks (chapter 2's contents aimed far away score highest there).
"""

from __future__ import annotations

import numpy as np

from ropegeo import _validate as v

__all__ = ["relative_upper_bound", "abel_bound", "reachable_peak", "MAX_CELLS", "MAX_MULTIPLE"]

#: Most ``(offset, pair)`` cells one call computes (about 256 MiB of complex128 at most).
MAX_CELLS = 2**24
#: Largest multiple :func:`reachable_peak` accepts (its grid holds 32 points per turn of a group's fastest pair).
MAX_MULTIPLE = 2**20


def _offsets_and_theta(offsets, theta):
    d = v.finite_array("offsets", offsets)
    th = v.frequencies(theta)
    if d.size * th.size > MAX_CELLS:
        raise ValueError(f"offsets has {d.size:,} entries; with {th.size} pairs at most "
                         f"{MAX_CELLS // th.size:,} fit MAX_CELLS = {MAX_CELLS:,}")
    if d.size and not np.isfinite(float(np.abs(d).max()) * float(th.max())):
        raise ValueError("offsets * theta overflows: use smaller offsets")
    return d, th


def _partial_sums(d, th):
    """``|P_j(delta)|`` for ``j = 1 .. pairs``, shape ``d.shape + (pairs,)``."""
    return np.abs(np.cumsum(np.exp(1j * np.multiply.outer(d, th)), axis=-1))


def relative_upper_bound(offsets, theta) -> np.ndarray:
    """RoFormer's relative upper bound ``(1 / pairs) sum_{j=1}^{pairs} |P_j(delta)|``, shape of ``offsets``.

    ``(pairs + 1) / 2`` at ``delta = 0``; the sum runs in the order of ``theta``.

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> float(relative_upper_bound(0, frequencies(8)))
    2.5
    """
    d, th = _offsets_and_theta(offsets, theta)
    return _partial_sums(d, th).mean(axis=-1)


def abel_bound(q, k, offsets, theta) -> np.ndarray:
    """The full bound ``max_i |h_{i+1} - h_i| * sum_j |P_j(delta)|`` on ``|<R_m q, R_n k>|``, ``delta = n - m``.

    ``q`` and ``k``: shape ``(2 * pairs,)``, interleaved pairs.
    """
    d, th = _offsets_and_theta(offsets, theta)
    q = v.finite_array("q", q)
    k = v.finite_array("k", k)
    if q.shape != (2 * th.size,) or k.shape != q.shape:
        raise ValueError(f"q and k must both have shape ({2 * th.size},) to match theta, got {q.shape} and {k.shape}")
    h = np.conj(q[0::2] + 1j * q[1::2]) * (k[0::2] + 1j * k[1::2])
    step = np.abs(np.diff(np.append(h, 0.0))).max()
    return step * _partial_sums(d, th).sum(axis=-1)


def reachable_peak(h, groups, multiples) -> float:
    """The best score far offsets come close to when the frequencies are rationally related.

    Pair ``i`` turns at ``theta_i = multiples[i] * g_groups[i]``, with generators ``g`` rationally
    independent of each other and of ``2 pi``. Then ``delta g`` is dense on the torus (Kronecker),
    and the supremum of ``S(delta) = Re sum_i h_i e^(i delta theta_i)`` over far offsets is the sum,
    over groups, of the maximum over ``u`` of ``Re sum_(i in group) h_i e^(i multiples[i] u)``: at most
    ``sum |h_i|``, equal to it when every group can line up at once. ``h``: complex,
    shape ``(pairs,)``; ``groups``: integers; ``multiples``: integers 1 to :data:`MAX_MULTIPLE`.

    Examples
    --------
    >>> round(reachable_peak([1, 1j], [0, 1], [1, 1]), 6)  # two independent phases: both line up
    2.0
    >>> round(reachable_peak([1, -1], [0, 0], [1, 2]), 6)  # one phase drives both: cos u - cos 2u
    1.125
    """
    hv = np.asarray(h, dtype=complex)
    if hv.ndim != 1 or hv.size == 0 or not np.all(np.isfinite(hv)):
        raise ValueError("h must be a non-empty 1-D array of finite complex numbers")
    g = v.finite_array("groups", groups)
    mult = v.finite_array("multiples", multiples)
    if g.shape != hv.shape or mult.shape != hv.shape or np.any(g != np.round(g)):
        raise ValueError(f"groups and multiples must be integer arrays of shape {hv.shape}, like h")
    if np.any(mult != np.round(mult)) or mult.min() < 1 or mult.max() > MAX_MULTIPLE:
        raise ValueError(f"multiples must be whole numbers from 1 to MAX_MULTIPLE = {MAX_MULTIPLE}")
    return float(sum(_group_peak(hv[g == group], mult[g == group]) for group in np.unique(g)))


def _group_peak(h, m):
    """``max_u Re sum_i h_i e^(i m_i u)``: a grid, then Newton steps from every point that may hold the peak."""
    step = 2 * np.pi / (32 * m.max())
    u = np.arange(0.0, 2 * np.pi, step)
    f = (np.exp(1j * np.multiply.outer(u, m)) @ h).real
    slack = np.abs(h) @ m**2 * step**2 / 8  # how far the grid may fall below a peak in its cell
    u = u[f >= f.max() - slack]
    for _ in range(30):
        e = np.exp(1j * np.multiply.outer(u, m))
        d1, d2 = -(e @ (m * h)).imag, -(e @ (m**2 * h)).real
        u = u + np.clip(np.where(d2 < 0, -d1 / np.where(d2 < 0, d2, -1.0), 0.0), -step, step)
    return max(f.max(), (np.exp(1j * np.multiply.outer(u, m)) @ h).real.max())
