"""The smallest base that keeps Men et al.'s discrimination sum non-negative over a context.

Men et al. (2024, "Base of RoPE Bounds Context Length") assume the coordinates of a query and a
key are independent with equal spread, and show that how much more a query attends to a key
similar to itself than to a random key, at a distance of ``m`` tokens, is proportional to

``B(m) = sum_i cos(m theta_i)``  (one term per rotary pair, ``theta_i = base ** (-2 i / r)``).

Their criterion for a context of ``L`` tokens is ``B(m) >= 0`` for every ``m = 0 .. L``: past the
first ``m`` where the sum turns negative, a similar key gets *less* attention than a random one
on average. The lower bound on the base is then the smallest base that satisfies it.

Two facts make the bound subtler than one number, and :func:`base_bound` reports both:

* **The valid set has holes.** ``min_m B(m)`` is not monotone in the base: for ``L = 4,096`` a base
  near 2.9e4 already satisfies the criterion, yet some larger bases fail it again, and every base
  is safe only from about 5.9e4. A plain bisection on the base would return either number, or
  neither, depending on its bracket. :func:`base_bound` scans a log-spaced grid, then bisects
  every change of sign it sees, so a hole narrower than one grid step can be missed; the result
  states the step.
* **Partial rotation empties the criterion.** A pair that does not rotate contributes
  ``cos(0) = 1`` at every distance. With ``rotary_dim < head_dim`` the sum gains
  ``(head_dim - rotary_dim) / 2``, and once the unrotated pairs are at least as many as the
  rotated ones no base can fail (GPT-NeoX rotates a quarter of each head). The function computes
  the sum with those terms, as the derivation's independence assumption implies, and says when the
  criterion is vacuous rather than report a bound.

Su's asymptotic estimate for the same criterion is ``base >~ 2 L``; it is carried in the result
for comparison (the grid results are larger at every length the book uses).

Cost: one evaluation of ``min_m B(m)`` takes ``(L + 1) * pairs`` cosines; a scan takes that many
per grid point and per bisection step, capped by :data:`MAX_BOUND_CELLS`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies, resolve_rotary_dim

__all__ = ["MAX_BOUND_CELLS", "BaseBound", "base_sum", "min_base_sum", "base_bound"]

#: Most cosines one scan of :func:`base_bound` may evaluate: ``(length + 1) * pairs`` per base,
#: times the grid points plus the bisection steps. 2**35 phases take several minutes on one core.
MAX_BOUND_CELLS = 1 << 35

#: Phases evaluated at once (a block of positions times the pairs); bounds memory, and lets a
#: validity test stop at the first block that goes negative.
_BLOCK_CELLS = 1 << 16
#: Bisection steps per change of sign: the crossing is located to within 2**-16 of a grid step (in log base).
_BISECTIONS = 16


def _theta(head_dim: int, base: float, rotary_dim: int) -> np.ndarray:
    return frequencies(head_dim, base, rotary_dim)


def _min_sum(length: int, theta: np.ndarray, constant: float, stop_below: float | None = None) -> float:
    """``min over m = 0..length`` of ``constant + sum_i cos(m theta_i)``, a block of ``m`` at a time.

    Within a block the phases advance by repeated multiplication with ``exp(i theta)`` (a
    cumulative product, three times cheaper than the cosines), restarted exactly at every block,
    so rounding grows by at most a block's length times the float64 epsilon. With ``stop_below``,
    returns as soon as a block's minimum is below it (a validity test).
    """
    step = max(1, _BLOCK_CELLS // theta.size)
    turn = np.exp(1j * theta)
    best = math.inf
    for start in range(0, length + 1, step):
        rows = min(step, length + 1 - start)
        block = np.empty((rows, theta.size), dtype=np.complex128)
        block[0] = np.exp(1j * start * theta)
        block[1:] = turn
        np.cumprod(block, axis=0, out=block)
        best = min(best, float(block.real.sum(axis=1).min()) + constant)
        if stop_below is not None and best < stop_below:
            break
    return best


def base_sum(m, head_dim: int = 128, base: float = 10_000.0, rotary_dim: int | None = None) -> np.ndarray:
    """Men et al.'s sum ``B(m) = sum_i cos(m theta_i)`` over every pair of the head.

    Parameters
    ----------
    m : array_like of float
        Distances in tokens (finite).
    head_dim : int
        Width of the head (even).
    base : float
        Frequency base (greater than 1).
    rotary_dim : int, optional
        Coordinates that rotate (partial rotary); the other ``(head_dim - rotary_dim) / 2``
        pairs add ``cos(0) = 1`` each. Default: the whole head.

    Returns
    -------
    numpy.ndarray, float64, the shape of ``m``
        Between ``-head_dim / 2`` and ``head_dim / 2``; ``head_dim / 2`` at ``m = 0``.

    Raises
    ------
    ValueError
        For a bad head dimension, rotary dimension or base, or non-finite distances.

    Examples
    --------
    >>> base_sum([0, 1], head_dim=4, base=100.0).round(4).tolist()
    [2.0, 1.5353]
    >>> round(float(base_sum(3, head_dim=8, rotary_dim=4)), 3)  # two pairs never rotate: they add 2
    2.01
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    theta = _theta(head_dim, v.base(base), rotary_dim)
    m = v.finite_array("m", m)
    return np.cos(np.multiply.outer(m, theta)).sum(axis=-1) + (head_dim - rotary_dim) / 2


def min_base_sum(length: int, head_dim: int = 128, base: float = 10_000.0, rotary_dim: int | None = None) -> float:
    """The smallest ``B(m)`` over the integer distances ``m = 0 .. length``.

    The base satisfies Men et al.'s criterion for a context of ``length`` tokens exactly when
    this is at least 0.

    Parameters
    ----------
    length : int
        Context length ``L`` (at least 1); ``(L + 1) * pairs`` may not exceed
        :data:`MAX_BOUND_CELLS`.
    head_dim, base, rotary_dim
        As in :func:`base_sum`.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For bad arguments or a scan beyond :data:`MAX_BOUND_CELLS`.

    Examples
    --------
    >>> round(min_base_sum(4096, 128, 10_000.0), 2) < 0 <= round(min_base_sum(4096, 128, 100_000.0), 2)
    True
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    base = v.base(base)
    length = v.length("length", length)
    _check_cells((length + 1) * (rotary_dim // 2))
    return _min_sum(length, _theta(head_dim, base, rotary_dim), (head_dim - rotary_dim) / 2)


def _check_cells(cells: float) -> None:
    if cells > MAX_BOUND_CELLS:
        raise ValueError(f"length times pairs times grid evaluates {int(cells):,} cosines, more than "
                         f"MAX_BOUND_CELLS = {MAX_BOUND_CELLS:,}; use a shorter length, a coarser grid or a "
                         "narrower base range")


@dataclass(frozen=True)
class BaseBound:
    """What :func:`base_bound` found for one context length.

    Attributes
    ----------
    length, head_dim, rotary_dim : int
        The context ``L`` and the head.
    low, high : float
        The base range scanned.
    grid_ratio : float
        Ratio of neighbouring grid bases. An interval of bases narrower than this (a hole in the
        valid set, or a valid island) can lie between two grid points unseen.
    first_valid : float or None
        Smallest valid base found (a grid crossing refined by bisection, or ``low`` itself when
        ``low`` is valid). ``None`` if no base in the range is valid.
    all_valid_from : float or None
        Every base from here to ``high`` was valid on the grid: the last crossing from invalid to
        valid. ``None`` if ``high`` itself is invalid.
    holes : tuple of (float, float)
        Invalid intervals between ``first_valid`` and ``all_valid_from`` (bisected ends).
    vacuous : bool
        True when the unrotated pairs alone keep the sum non-negative at every distance (partial
        rotation with ``head_dim - rotary_dim >= rotary_dim``): every base passes, the bound says
        nothing, and ``first_valid`` / ``all_valid_from`` are ``None``.
    su_estimate : float
        Su's asymptotic estimate ``2 L``.
    evaluations : int
        Evaluations of ``min_m B(m)`` the scan made.
    """

    length: int
    head_dim: int
    rotary_dim: int
    low: float
    high: float
    grid_ratio: float
    first_valid: float | None
    all_valid_from: float | None
    holes: tuple
    vacuous: bool
    su_estimate: float
    evaluations: int

    def to_dict(self) -> dict:
        d = asdict(self)
        d["holes"] = [list(h) for h in self.holes]
        return d


def _crossing(length, head_dim, rotary_dim, constant, lo, hi, hi_valid):
    """Bisect (in log base) between ``lo`` and ``hi``, of opposite validity (``hi_valid`` at ``hi``);
    returns (the base at the bracket's ``hi`` end: the first valid base of an upward crossing, the
    first invalid one of a downward crossing, evaluations)."""
    a, b = math.log(lo), math.log(hi)
    for _ in range(_BISECTIONS):
        mid = 0.5 * (a + b)
        th = _theta(head_dim, math.exp(mid), rotary_dim)
        if (_min_sum(length, th, constant, stop_below=0.0) >= 0.0) == hi_valid:
            b = mid
        else:
            a = mid
    return math.exp(b), _BISECTIONS


def base_bound(length: int, head_dim: int = 128, *, rotary_dim: int | None = None, low: float = 2.0,
               high: float | None = None, per_decade: int = 48) -> BaseBound:
    """Scan bases for Men et al.'s criterion ``B(m) >= 0`` for all ``m = 0 .. length``.

    A log-spaced grid of ``per_decade`` bases per decade between ``low`` and ``high`` is
    evaluated; every change of validity between neighbouring grid points is bisected (in log base)
    to a relative precision far below the grid step. Intervals narrower than one grid step
    (``grid_ratio`` in the result) can be missed.

    Parameters
    ----------
    length : int
        Context length ``L`` (at least 2).
    head_dim : int
        Head width (even).
    rotary_dim : int, optional
        Partial rotary (see :func:`base_sum`); the unrotated pairs add 1 each.
    low, high : float
        Base range (``1 < low < high``). Default ``high``: ``10,000 * L``.
    per_decade : int
        Grid density (8 to 1,000).

    Returns
    -------
    BaseBound

    Raises
    ------
    ValueError
        For bad arguments, or a scan of more than :data:`MAX_BOUND_CELLS` cosines (counting the
        grid, then again with 16 bisection steps for every change of sign the grid shows).

    Examples
    --------
    >>> coarse = base_bound(1024, 128, low=1e3, high=1e4)  # 48 bases per decade steps over an island
    >>> fine = base_bound(1024, 128, low=1e3, high=1e4, per_decade=400)
    >>> round(coarse.first_valid, -2), round(fine.first_valid, -2), round(fine.all_valid_from, -2), fine.su_estimate
    (5600.0, 4300.0, 6000.0, 2048.0)
    >>> base_bound(1024, 96, rotary_dim=24).vacuous  # GPT-NeoX-style quarter rotation
    True
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    length = v.length("length", length, minimum=2)
    low = v.real("low", low, greater_than=1.0)
    high = v.real("high", 1e4 * length if high is None else high, greater_than=low)
    per_decade = v.integer("per_decade", per_decade, minimum=8, maximum=1000)
    pairs, constant = rotary_dim // 2, (head_dim - rotary_dim) / 2
    n = max(2, int(math.ceil(per_decade * math.log10(high / low))) + 1)
    ratio = (high / low) ** (1.0 / (n - 1))
    common = dict(length=length, head_dim=head_dim, rotary_dim=rotary_dim, low=low, high=high,
                  grid_ratio=ratio, su_estimate=2.0 * length)
    if constant >= pairs:  # the unrotated pairs outweigh any sum of cosines
        return BaseBound(first_valid=None, all_valid_from=None, holes=(), vacuous=True, evaluations=0, **common)
    _check_cells((length + 1) * pairs * n)
    grid = low * ratio ** np.arange(n)
    valid = np.array([_min_sum(length, _theta(head_dim, float(b), rotary_dim), constant, stop_below=0.0) >= 0.0
                      for b in grid])
    evaluations = n
    changes = np.nonzero(valid[1:] != valid[:-1])[0]
    _check_cells((length + 1) * pairs * (n + _BISECTIONS * changes.size))  # the bisections still to come
    ups, downs = [], []  # crossings invalid -> valid, valid -> invalid
    for j in changes:
        lo, hi = float(grid[j]), float(grid[j + 1])
        x, k = _crossing(length, head_dim, rotary_dim, constant, lo, hi, hi_valid=not valid[j])
        (downs if valid[j] else ups).append(x)
        evaluations += k
    first = float(low) if valid[0] else (ups[0] if ups else None)
    last = None if not valid[-1] else (ups[-1] if ups else float(low))
    holes = tuple((d, u) for d, u in zip(downs, ups[0 if valid[0] else 1:]))
    return BaseBound(first_valid=first, all_valid_from=last, holes=holes, vacuous=False,
                     evaluations=evaluations, **common)


