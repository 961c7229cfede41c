"""The smallest base that keeps Men et al.'s discrimination sum non-negative over a context.

Men et al. (2024) compare a key similar to the query with a random one: the similar key's
advantage at distance ``m`` is ``2 sigma^2 S(m)``, ``S(m) = sum_i cos(m theta_i)``, and a context
of ``L`` tokens needs ``S(m) >= 0`` for every ``m = 0 .. L``.

**The valid set has holes and islands** (at ``L = 4,096`` the bases 26,952 to 26,973), so
:func:`base_bound` does not scan a grid: it *certifies*. With ``u = ln(base)``,
``|dS(m)/du| <= m c(u)``, ``c(u) = sum_i (2 i / r) theta_i``, falling in ``u``
(:func:`slope_bound` at ``m = L``). One evaluation at ``u`` proves an interval: ``S(w, u) < 0``
keeps ``[u, u - S(w, u) / (w c(u)))`` invalid; all ``S(m, u) >= 0`` keep the base valid up to
``u + min_m S(m, u) / (m c(u))``. A walk follows the few deciding distances; at a crossing it
steps over by the tolerance (*unresolved*), with a margin for float64 rounding (``8 eps`` per
pair per unit of ``L``). A scan's evaluations, ``(L + 1) * pairs`` cosines each, count against
:data:`MAX_BOUND_CELLS` (past it, the rest is unresolved).

**Su's estimate**: an infinitely wide head gives ``S(m) ~ (r / 2) (Ci(m) - Ci(m / base)) / ln(base)``,
so ``base >= L / x0 = 1.62 L`` (``x0 = 0.6165``, the first zero of Ci): ``integral_estimate``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ropegeo import _json
from ropegeo import _validate as v
from ropegeo.frequencies import frequencies, resolve_rotary_dim

__all__ = ["MAX_SUM_CELLS", "MAX_BOUND_CELLS", "BaseBound", "base_sum", "min_base_sum", "slope_bound", "base_bound"]

#: Most cosines one call of :func:`base_sum` or :func:`min_base_sum` evaluates (distances times pairs).
MAX_SUM_CELLS = 1 << 30
#: Most cosines one scan of :func:`base_bound` evaluates over all its intervals.
MAX_BOUND_CELLS = 1 << 37
_CHUNK = 1 << 16  # distances evaluated at once
#: Allowance for float64 rounding of one sum, per pair and per unit of the largest phase.
_ROUND = 8 * np.finfo(np.float64).eps
#: Distances a walk follows after each full evaluation, and most steps it takes before re-evaluating.
_KEEP, _STEPS = 256, 2000
#: The first zero of the cosine integral Ci (tests/test_base_bound.py checks it with mpmath).
_CI_ZERO = 0.6165054856207162


def _exponents(rotary_dim: int) -> np.ndarray:
    return 2.0 * np.arange(rotary_dim // 2) / rotary_dim


def _chunks(length: int, theta: np.ndarray, constant: float):
    """Yield ``(m, S(m))`` for ``m = 0 .. length``: ``S(a + j) = Re sum_i e^{i j theta_i} e^{i a theta_i}``."""
    rows = max(1, min(math.isqrt(length + 1), _CHUNK // theta.size))
    near = np.exp(1j * np.multiply.outer(np.arange(rows), theta))
    starts_per_chunk = max(1, _CHUNK // rows)
    for first in range(0, length + 1, rows * starts_per_chunk):
        starts = np.arange(first, min(length + 1, first + rows * starts_per_chunk), rows)
        s = (near @ np.exp(1j * np.multiply.outer(theta, starts))).real.T.reshape(-1) + constant
        m = np.arange(first, first + s.size)
        keep = m <= length
        yield m[keep], s[keep]


def base_sum(m, head_dim: int = 128, base: float = 10_000.0, rotary_dim: int | None = None) -> np.ndarray:
    """Men et al.'s sum ``S(m) = sum_i cos(m theta_i)`` over every pair of the head, the shape of ``m``.

    Distances up to ``2**48``; the pairs beyond ``rotary_dim`` add 1 each.

    Examples
    --------
    >>> base_sum([0, 1], head_dim=4, base=100.0).round(4).tolist()
    [2.0, 1.5353]
    >>> round(float(base_sum(3, head_dim=8, rotary_dim=4)), 3)  # two pairs never rotate: they add 2
    2.01
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    theta = frequencies(head_dim, v.base(base), rotary_dim)
    m = v.finite_array("m", m)
    if m.size and np.abs(m).max() > v.MAX_LENGTH:
        raise ValueError(f"m must be at most 2**48 = {v.MAX_LENGTH:,} in size (beyond, float64 phases are "
                         f"rounding noise), got {np.abs(m).max():.4g}")
    _check_cells(m.size * theta.size, "m")
    flat, out = m.reshape(-1), np.empty(m.size)
    step = max(1, _CHUNK // theta.size)
    for a in range(0, flat.size, step):
        out[a:a + step] = np.cos(np.multiply.outer(flat[a:a + step], theta)).sum(axis=1)
    return out.reshape(m.shape) + (head_dim - rotary_dim) / 2


def min_base_sum(length: int, head_dim: int = 128, base: float = 10_000.0, rotary_dim: int | None = None) -> float:
    """The smallest ``S(m)`` over ``m = 0 .. length``: at least 0 exactly when the base meets the criterion.

    Examples
    --------
    >>> round(min_base_sum(4096, 128, 10_000.0), 2) < 0 <= round(min_base_sum(4096, 128, 100_000.0), 2)
    True
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    base = v.base(base)
    length = v.length("length", length)
    _check_cells((length + 1) * (rotary_dim // 2), "length")
    theta = frequencies(head_dim, base, rotary_dim)
    return min(float(s.min()) for _, s in _chunks(length, theta, (head_dim - rotary_dim) / 2))


def slope_bound(length: int, head_dim: int = 128, base: float = 10_000.0, rotary_dim: int | None = None) -> float:
    """``length * sum_i (2 i / r) theta_i``: bounds ``|dS(m)/d ln(base)|`` for every ``m <= length``, from ``base`` up.

    Examples
    --------
    >>> round(slope_bound(4096, 128, 26_960.0))
    2512
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    theta = frequencies(head_dim, v.base(base), rotary_dim)
    return v.length("length", length) * float(_exponents(rotary_dim) @ theta)


def _check_cells(cells: float, name: str) -> None:
    if cells > MAX_SUM_CELLS:
        raise ValueError(f"{name} asks for {int(cells):,} cosines, more than MAX_SUM_CELLS = {MAX_SUM_CELLS:,}; "
                         f"use {'fewer distances' if name == 'm' else 'a shorter length'}")


@dataclass(frozen=True)
class BaseBound:
    """What :func:`base_bound` proved for one context length.

    ``intervals``: consecutive ``(low, high, status)``, each ``"valid"`` or ``"invalid"`` (proven)
    or ``"unresolved"`` (steps of ``tolerance`` over a crossing, or the rest once the budget ran
    out). The smallest valid base lies in ``first_valid``; every base from ``all_valid_from[1]``
    up is valid (``None``: not proven). ``holes`` counts runs proven invalid between them;
    ``vacuous``: the unrotated pairs alone keep the sum non-negative. ``su_estimate`` is ``2 L``.
    """

    length: int
    head_dim: int
    rotary_dim: int
    low: float
    high: float
    tolerance: float
    intervals: tuple
    first_valid: tuple | None
    all_valid_from: tuple | None
    holes: int
    vacuous: bool
    su_estimate: float
    integral_estimate: float
    evaluations: int
    cells: int

    def to_dict(self) -> dict:
        return _json.plain(asdict(self))


def _probe(length, theta, constant):
    """Every ``S(m)`` at one base: its minimum, the ``_KEEP`` distances of smallest ``S(m)/m``, those ratios, the next."""
    best, ms, keys = math.inf, np.empty(0, dtype=np.int64), np.empty(0)
    for m, s in _chunks(length, theta, constant):
        if m[0] == 0:
            m, s = m[1:], s[1:]
        best = min(best, float(s.min()))
        ms, keys = np.concatenate([ms, m]), np.concatenate([keys, s / m])
        if keys.size > _KEEP + 1:
            j = np.argpartition(keys, _KEEP)[:_KEEP + 1]
            ms, keys = ms[j], keys[j]
    order = np.argsort(keys)
    ms, keys = ms[order], keys[order]
    return best, ms[:_KEEP], keys[:_KEEP], (keys[_KEEP] if keys.size > _KEEP else math.inf)


def _walk(u, u_end, w, expo, constant, stall, invalid, rounding):
    """Follow the distances ``w`` up from ``u`` while they keep deciding; how far ``[u, end)`` is proven."""
    w = w.astype(np.float64)
    for _ in range(_STEPS):
        if u >= u_end:
            return u_end
        theta = np.exp(-expo * u)
        s = np.cos(np.multiply.outer(w, theta)).sum(axis=1) + constant
        reach = w * float(expo @ theta)  # |dS(w)/du| <= w c(u), for every base from u up
        step = (-(s + rounding) / reach).max() if invalid else ((s - rounding) / reach).min()
        if step < stall:
            return u
        u += step
    return min(u, u_end)


def _sweep(length, expo, constant, u_lo, u_hi, tol, budget):
    """Cut ``[u_lo, u_hi]`` (log bases) into proven-valid, proven-invalid and unresolved intervals."""
    pieces, u, cells, evaluations = [], u_lo, 0, 0
    per, rounding = (length + 1) * expo.size, _ROUND * expo.size * (length + 1)
    while u < u_hi:
        if cells + per > budget:
            pieces.append((u, u_hi, "unresolved"))
            break
        theta = np.exp(-expo * u)
        f, w, keys, next_key = _probe(length, theta, constant)
        cells, evaluations = cells + per, evaluations + 1
        if f < 0:
            end, status = _walk(u, u_hi, w[keys < 0], expo, constant, tol / 256, True, rounding), "invalid"
        else:  # distances outside w keep S(m) >= 0 up to u + next_key / c(u); follow the others
            reach = u + (next_key - rounding) / float(expo @ theta)
            end, status = _walk(u, min(u_hi, reach), w, expo, constant, tol / 256, False, rounding), "valid"
        if end - u < tol / 256:  # a crossing: step over it
            end, status = min(u_hi, u + tol), "unresolved"
        pieces.append((u, end, status))
        u = end
    return _merge(pieces), evaluations, cells


def _merge(pieces):
    out = []
    for a, b, s in pieces:
        if out and out[-1][2] == s:
            out[-1] = (out[-1][0], b, s)
        else:
            out.append((a, b, s))
    return out


def _summary(intervals):
    """(first_valid, all_valid_from, holes) from the merged intervals, in bases."""
    statuses = [s for _, _, s in intervals]
    if "valid" not in statuses:
        return None, None, 0
    j0 = statuses.index("valid")
    first = (next(a for a, _, s in intervals if s != "invalid"), intervals[j0][0])
    last = None
    if statuses[-1] == "valid":
        bad = [c for _, c, s in intervals if s == "invalid"]
        last = (bad[-1] if bad else intervals[0][0], intervals[-1][0])
    runs = [s for s in statuses[j0:len(statuses) - (last is not None)] if s != "unresolved"]
    return first, last, sum(s == "invalid" and p == "valid" for p, s in zip(runs, runs[1:]))


def base_bound(length: int, head_dim: int = 128, *, rotary_dim: int | None = None, low: float | None = None,
               high: float | None = None, tolerance: float = 1e-5) -> BaseBound:
    """Certify Men et al.'s criterion ``S(m) >= 0`` for all ``m = 0 .. length`` over bases ``low`` to ``high``.

    Every base ends in an interval proven valid or invalid, but for an unresolved step of
    ``tolerance`` (relative, ``1e-9`` to ``1e-2``) at each crossing. Defaults: ``L`` to ``1,000 L``;
    a few seconds at ``L = 4,096``, about six minutes at ``L = 131,072`` on one core.

    Examples
    --------
    >>> b = base_bound(1024, 128, low=1e3, high=1e4, tolerance=1e-4)
    >>> [round(x, -1) for x in b.first_valid], [round(x, -1) for x in b.all_valid_from], b.holes
    ([4290.0, 4290.0], [6020.0, 6020.0], 2)
    >>> base_bound(1024, 96, rotary_dim=24).vacuous  # GPT-NeoX-style quarter rotation
    True
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    length = v.length("length", length, minimum=2)
    low = v.real("low", float(length) if low is None else low, greater_than=1.0)
    high = v.real("high", 1e3 * length if high is None else high, greater_than=low)
    tolerance = v.real("tolerance", tolerance, minimum=1e-9, maximum=1e-2)
    pairs, constant = rotary_dim // 2, (head_dim - rotary_dim) / 2
    _check_cells((length + 1) * pairs, "length")
    common = dict(length=length, head_dim=head_dim, rotary_dim=rotary_dim, low=low, high=high, tolerance=tolerance,
                  su_estimate=2.0 * length, integral_estimate=length / _CI_ZERO)
    if constant >= pairs:  # the unrotated pairs outweigh any sum of cosines
        return BaseBound(intervals=((low, high, "valid"),), first_valid=None, all_valid_from=None, holes=0,
                         vacuous=True, evaluations=0, cells=0, **common)
    pieces, evaluations, cells = _sweep(length, _exponents(rotary_dim), constant, math.log(low), math.log(high),
                                        math.log1p(tolerance), MAX_BOUND_CELLS)
    ends = [low] + [math.exp(b) for _, b, _ in pieces[:-1]] + [high]  # the range's own ends, not exp(log(.))
    intervals = tuple((ends[j], ends[j + 1], s) for j, (_, _, s) in enumerate(pieces))
    first, last, holes = _summary(intervals)
    return BaseBound(intervals=intervals, first_valid=first, all_valid_from=last, holes=holes, vacuous=False,
                     evaluations=evaluations, cells=cells, **common)
