"""Compare floats by what a computation guarantees, in units in the last place (ulps).

Two code paths that compute the same value (numpy's vectorised ``power`` and Python's ``**``, an
AVX-512 kernel and an AVX2 one, a BLAS kernel for another CPU, numpy and JavaScript's ``Math``)
may round the last bits differently; a correctly rounded operation is within 0.5 ulp, a libm
``exp``/``sin``/``pow`` within about 1 ulp, so two of them agree within a few ulps. A chain of n
such operations agrees within about n of them, relative to the size of its inputs (not its result,
when it cancels). Exact comparison stays for what is exact on any CPU: integers, booleans, a copy,
a permutation, a cast, and the same function on the same input in the same process.

``assert_rounds_within(got, x, to_format, ulps, unit)`` is for a value rounded to a narrow format
after an elementary function: ``got`` must be what ``to_format`` (a monotone rounding, such as a cast
to float32 and then bfloat16) makes of some value within ``ulps`` of ``x`` (in units of ``unit``'s
spacing); where ``x`` is far from a rounding boundary that is exactly ``to_format(x)``.

``assert_ulps(actual, desired, ulps)`` checks ``|actual - desired| <= ulps * spacing(|desired|)``
elementwise (with ``scale=`` the spacing of ``scale`` instead, for a chain that cancels), and that
both have the same shape and the same non-finite entries.

>>> import numpy as np
>>> assert_ulps(np.float64(0.1) + 0.2, 0.3, ulps=1)
>>> assert_ulps([1.0, np.nan], [1.0 + 2.0**-52, np.nan], ulps=1)
>>> assert_ulps(1.0 + 2.0**-50, 1.0, ulps=2)
Traceback (most recent call last):
    ...
AssertionError: 1 of 1 entries differ by more than 2 ulps (worst 4 ulps at (), 1.0000000000000009 vs 1.0)
"""

from __future__ import annotations

import numpy as np

__all__ = ["assert_rounds_within", "assert_ulps", "ulps_apart"]


def ulps_apart(actual, desired, scale=None) -> np.ndarray:
    """``|actual - desired|`` in units of ``spacing(|desired|)`` (or of ``spacing(|scale|)``), as float64."""
    a = np.asarray(actual)
    d = np.asarray(desired)
    dtype = np.result_type(a.dtype, d.dtype, np.float16)
    if not np.issubdtype(dtype, np.floating):
        dtype = np.float64
    a, d = a.astype(dtype), d.astype(dtype)
    ref = np.abs(d if scale is None else np.broadcast_to(np.asarray(scale, dtype=dtype), d.shape))
    unit = np.spacing(ref).astype(np.float64)
    unit = np.maximum(unit, np.finfo(dtype).smallest_subnormal)  # 0 has a spacing too
    with np.errstate(invalid="ignore", over="ignore"):
        return np.abs(a.astype(np.float64) - d.astype(np.float64)) / unit


def assert_ulps(actual, desired, ulps: float = 4, *, scale=None, err_msg: str = "") -> None:
    """Assert that ``actual`` is within ``ulps`` units in the last place of ``desired``.

    Same shape, the same NaNs and infinities; finite entries within ``ulps * spacing(|desired|)``
    (or ``spacing(|scale|)``, for a result that cancels below the size of its inputs). The
    precision is that of the wider of the two dtypes.
    """
    a = np.asarray(actual)
    d = np.asarray(desired)
    if a.shape != d.shape:
        raise AssertionError(f"shapes differ: {a.shape} vs {d.shape} {err_msg}".rstrip())
    af, df = np.isfinite(a), np.isfinite(d)
    same_special = np.array_equal(af, df) and np.array_equal(a[~af], d[~df], equal_nan=True)
    if not same_special:
        raise AssertionError(f"non-finite entries differ {err_msg}".rstrip())
    gap = np.where(af, ulps_apart(np.where(af, a, 0), np.where(df, d, 0), scale), 0.0)
    bad = gap > ulps
    if bad.any():
        at = tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), gap.shape))
        raise AssertionError(
            f"{int(bad.sum())} of {gap.size} entries differ by more than {ulps:g} ulps "
            f"(worst {gap[at]:.3g} ulps at {at}, {float(a[at])!r} vs {float(d[at])!r}) {err_msg}".rstrip()
        )


def assert_rounds_within(got, x, to_format, ulps: float = 2, unit=np.float64, err_msg: str = "") -> None:
    """Assert ``to_format(x - e) <= got <= to_format(x + e)`` with ``e = ulps * spacing(unit(|x|))``.

    ``to_format`` maps float64 to the rounded values (as float64) and must be monotone. Two
    implementations of an elementary function (each within an ulp of the exact value) then round
    to the same number except where the exact value sits within ``e`` of a rounding boundary; there
    either neighbour is accepted, and nothing else.

    >>> import ml_dtypes
    >>> to_bf16 = lambda v: np.asarray(v).astype(ml_dtypes.bfloat16).astype(np.float64)
    >>> mid = 1 + 2.0**-8  # halfway between two bfloat16 numbers
    >>> assert_rounds_within([1.0, 1.0078125], [mid - 2.0**-22, mid + 2.0**-22], to_bf16, ulps=4, unit=np.float32)
    >>> assert_rounds_within([1.0], [1 + 2.0**-9], to_bf16, ulps=4, unit=np.float32)
    >>> assert_rounds_within([1.0078125], [1 + 2.0**-9], to_bf16, ulps=4, unit=np.float32)
    Traceback (most recent call last):
        ...
    AssertionError: 1 of 1 entries outside the rounding of x +- 4 ulps (first at (0,): 1.0078125 not in [1.0, 1.0])
    """
    g = np.asarray(got, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if g.shape != x.shape:
        raise AssertionError(f"shapes differ: {g.shape} vs {x.shape} {err_msg}".rstrip())
    e = ulps * np.spacing(np.abs(x).astype(unit)).astype(np.float64)
    lo, hi = np.asarray(to_format(x - e), dtype=np.float64), np.asarray(to_format(x + e), dtype=np.float64)
    bad = ~((lo <= g) & (g <= hi)) & ~(np.isnan(g) & np.isnan(x))
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(f"{int(bad.sum())} of {g.size} entries outside the rounding of x +- {ulps:g} ulps "
                             f"(first at {at}: {float(g[at])!r} not in [{float(lo[at])!r}, {float(hi[at])!r}]) {err_msg}".rstrip())
