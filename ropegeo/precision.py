"""Phases as real implementations generate them, in limited precision.

A rotary layer builds its cosine and sine tables from positions and frequencies held in the dtype
of its buffers. In float32, float16 or bfloat16 every step rounds: the position itself (a large
integer may not be representable), the angle ``position * theta`` and the cosine and sine. This
module reproduces that pipeline (bfloat16 through ``ml_dtypes``) and measures it against the
float64 truth.

Two facts organise the chapter's figures:

* a binary floating format with ``p`` significant bits holds every integer up to ``2**p`` and
  then skips odd integers (float64: ``2**53``, float32: ``2**24``, float16: ``2048``,
  bfloat16: ``256``), so beyond that point neighbouring positions share one phase row;
* the rounding of the angle grows with the angle, so the phase error of a pair grows roughly in
  proportion to ``position * theta``.
"""

from __future__ import annotations

import numpy as np

from . import _validate as v
from .rotation import phase_angles

__all__ = [
    "PHASE_DTYPES",
    "generated_phases",
    "phase_error",
    "max_phase_error",
    "consecutive_integer_limit",
    "position_spacing",
    "first_collapse",
]

PHASE_DTYPES = ("float64", "float32", "float16", "bfloat16")

# Work on at most this many (position, pair) cells at a time: about 16 MiB per float64 table.
_CELLS = 1 << 21
# The largest position range first_collapse scans, and its default length.
_MAX_SCAN = 1 << 26
#: Largest scan of :func:`first_collapse`, in positions times pairs (about ten seconds).
MAX_SCAN_WORK = 1 << 29
_DEFAULT_SCAN = 1 << 16


def _finfo(dt: np.dtype):
    """Format facts of a floating dtype (ml_dtypes knows bfloat16, numpy the others)."""
    import ml_dtypes

    return ml_dtypes.finfo(dt) if dt.name == "bfloat16" else np.finfo(dt)


def generated_phases(positions, theta, dtype="float64", *, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Cosine and sine tables generated entirely in one floating dtype.

    The pipeline is the one of common implementations: positions cast to ``dtype`` (and, when
    ``scale != 1``, multiplied by ``scale`` in ``dtype``), frequencies cast to ``dtype``, the angle
    product formed in ``dtype`` (:func:`ropegeo.rotation.phase_angles`), then cosine and sine
    evaluated and rounded to ``dtype``.

    Parameters
    ----------
    positions : array_like
        Token positions (any shape; finite). Numbers, not indices: fractional values are allowed.
    theta : array_like, shape (pairs,)
        Angular frequencies in radians per position (non-negative, finite).
    dtype : {"float64", "float32", "float16", "bfloat16"}
        Precision of every step.
    scale : float
        Position multiplier (position interpolation uses ``train_length / target_length``).

    Returns
    -------
    (cos, sin) : tuple of numpy.ndarray, each shape positions.shape + (pairs,), float64
        Exactly the values the dtype produced, widened to float64.

    Raises
    ------
    ValueError
        For an unknown dtype, non-finite positions, a bad ``theta`` or a non-finite ``scale``.
    """
    dt = v.float_dtype(dtype)
    th = v.frequencies(theta)
    scale = v.real("scale", scale)
    pos = v.finite_array("positions", positions)
    with np.errstate(over="ignore", invalid="ignore"):
        pos_dt = pos.astype(dt)
        if scale != 1.0:
            pos_dt = pos_dt * np.asarray(scale).astype(dt)
        if not np.all(np.isfinite(pos_dt.astype(np.float64))):
            raise ValueError(
                f"positions (times scale) exceed the largest {dt.name} number; "
                "use smaller positions or a wider dtype"
            )
        angles = phase_angles(pos_dt, th, dt).astype(dt)  # refuses an overflowing product
        cos = np.cos(angles).astype(np.float64)
        sin = np.sin(angles).astype(np.float64)
    return cos, sin


def phase_error(positions, theta, dtype="float32", *, scale: float = 1.0) -> np.ndarray:
    """Angular error of generated phases against the float64 truth, per position and pair.

    The error is the angle between the generated unit vector ``(cos, sin)`` and the exact one at
    ``position * scale * theta_i``, wrapped into ``[0, pi]`` radians. It includes every rounding
    of the pipeline of :func:`generated_phases`.

    Parameters
    ----------
    positions : array_like
        Token positions (any shape; finite).
    theta : array_like, shape (pairs,)
        Angular frequencies, radians per position.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        Precision of the generated phases.
    scale : float
        Position multiplier.

    Returns
    -------
    numpy.ndarray, shape positions.shape + (pairs,), float64
        Radians, in ``[0, pi]``.

    Raises
    ------
    ValueError
        As :func:`generated_phases`.
    """
    th = v.frequencies(theta)
    scale = v.real("scale", scale)
    pos = v.finite_array("positions", positions)
    cos, sin = generated_phases(pos, th, dtype, scale=scale)
    true = np.multiply.outer(pos * scale, th)
    # angle of the generated vector relative to the true one: rotate it back by the true angle
    ct, st = np.cos(true), np.sin(true)
    return np.abs(np.arctan2(sin * ct - cos * st, cos * ct + sin * st))


def max_phase_error(positions, theta, dtype="float32", *, scale: float = 1.0) -> np.ndarray:
    """Largest phase error over the pairs at each position, computed in bounded chunks.

    Parameters
    ----------
    positions : array_like, shape (n,)
        Token positions (finite).
    theta, dtype, scale
        As in :func:`phase_error`.

    Returns
    -------
    numpy.ndarray, shape (n,), float64
        ``max_i phase_error(positions, theta)[:, i]`` in radians.
    """
    th = v.frequencies(theta)
    pos = v.finite_array("positions", positions)
    if pos.ndim != 1:
        raise ValueError(f"positions must be 1-D, got shape {pos.shape}")
    out = np.empty(pos.size)
    step = max(1, _CELLS // th.size)
    for s in range(0, pos.size, step):
        out[s : s + step] = phase_error(pos[s : s + step], th, dtype, scale=scale).max(axis=-1)
    return out


def consecutive_integer_limit(dtype) -> int:
    """The largest ``N`` such that every integer ``0..N`` is exactly representable in ``dtype``.

    For a binary format with ``p`` significant bits (the stored mantissa plus the implicit bit)
    this is ``2**p``: float64 ``2**53``, float32 ``2**24``, float16 ``2048``, bfloat16 ``256``.
    Past it, ``N + 1`` rounds onto a neighbour and two positions share one phase row.

    Raises
    ------
    ValueError
        For an unknown dtype.
    """
    info = _finfo(v.float_dtype(dtype))
    return 2 ** (int(info.nmant) + 1)


def position_spacing(position, dtype) -> float:
    """Gap between neighbouring representable numbers of ``dtype`` around a position.

    The gap is constant on each binade ``[2**k, 2**(k+1))``: it is ``2**k`` times the format's
    machine epsilon (``2**(1 - p)`` for ``p`` significant bits). A position in that binade can only
    be stored to the nearest multiple of the gap, so a gap of 16 means that only every 16th integer
    position is kept. Positions below 1 report the gap of ``[1, 2)``.

    Parameters
    ----------
    position : float
        A finite, non-negative position.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The storage format.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a negative or non-finite position, or an unknown dtype.

    Examples
    --------
    >>> position_spacing(32_764, "float16"), position_spacing(32_764, "bfloat16")
    (16.0, 128.0)
    """
    x = v.real("position", position, minimum=0.0)
    dt = v.float_dtype(dtype)
    info = _finfo(dt)
    if x > float(info.max):
        raise ValueError(f"position must be at most the largest {dt.name} number, {float(info.max):g}; got {x:g}")
    _, exponent = np.frexp(max(x, 1.0))  # x = f * 2**exponent with 0.5 <= f < 1
    return float(np.ldexp(float(info.eps), int(exponent) - 1))


def first_collapse(theta, dtype, *, start: int = 0, stop: int | None = None, scale: float = 1.0) -> int | None:
    """The first integer position whose generated phase row equals the next position's.

    Scans ``n = start .. stop - 1`` and compares the whole row of cosines and sines generated at
    ``n`` with the row at ``n + 1`` (see :func:`generated_phases`). From the returned position on,
    at least one pair of neighbouring positions is indistinguishable to the layer, whatever its
    weights.

    Parameters
    ----------
    theta : array_like, shape (pairs,)
        Angular frequencies, radians per position.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        Precision of the generated phases.
    start : int
        First position scanned (0 to ``2**53 - 1``: positions are scanned in float64, exact up to
        ``2**53``).
    stop : int, optional
        End of the scan (exclusive), at most ``start + 2**26`` and ``2**53``. Default:
        ``start + 2**16`` (enough for float16 and bfloat16 from 0; start float32 near ``2**24``).
    scale : float
        Position multiplier.

    Returns
    -------
    int or None
        The first collapsing position, or ``None`` if no neighbours collapse in the range.

    Raises
    ------
    ValueError
        For an unknown dtype, a bad ``theta``, a negative ``start``, a range longer than
        ``2**26`` positions, or more than :data:`MAX_SCAN_WORK` positions times pairs.
    """
    th = v.frequencies(theta)
    dt = v.float_dtype(dtype)
    # positions are scanned in float64, which holds every integer only up to 2**53
    start = v.integer("start", start, minimum=0, maximum=2**53 - 1)
    if stop is None:
        stop = min(start + _DEFAULT_SCAN, 2**53)
    stop = v.integer("stop", stop, minimum=start + 1, maximum=min(start + _MAX_SCAN, 2**53))
    if (stop - start) * th.size > MAX_SCAN_WORK:
        raise ValueError(f"scanning {stop - start:,} positions with {th.size} pairs is too long: at most "
                         f"{MAX_SCAN_WORK // th.size:,} positions (MAX_SCAN_WORK = {MAX_SCAN_WORK:,} position-pairs)")
    step = max(1, _CELLS // (2 * th.size))
    for s in range(start, stop, step):
        e = min(stop, s + step)
        pos = np.arange(s, e + 1, dtype=np.float64)  # one extra for the neighbour of the last
        cos, sin = generated_phases(pos, th, dt, scale=scale)
        same = np.all((cos[1:] == cos[:-1]) & (sin[1:] == sin[:-1]), axis=-1)
        hit = np.flatnonzero(same)
        if hit.size:
            return int(s + hit[0])
    return None
