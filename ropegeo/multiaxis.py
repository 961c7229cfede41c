"""One frequency bank shared between several position axes.

Pair ``i`` turns by ``p . f_i`` at position vector ``p``, ``f_i`` a row of the ``(pairs, axes)``
matrix ``F``. Along one axis the kernel (:func:`multi_kernel`) is the 1D kernel of the column
``F[:, a]``, so every per-axis question is the 1D one asked of one column (:func:`axis_report`).

Examples
--------
>>> F = mrope_bank(128, 1e6, (16, 24, 24))
>>> [int(np.count_nonzero(F[:, a])) for a in range(3)]
[16, 24, 24]
>>> float(multi_kernel([[0, 0, 0]], F)[0])
1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from math import log

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies
from ropegeo.geometry import kernel
from ropegeo.margins import separation_margin

__all__ = ["frequency_matrix", "MROPE_AXES", "MAX_AXES", "MAX_EXTENT", "MAX_KERNEL_CELLS",
           "mrope_assignment", "axis_frequencies", "mrope_bank", "axial_bank", "mixed_bank",
           "proportional_frequencies", "multi_kernel", "kernel_grid", "AxisReport", "axis_report",
           "band_support", "nope_temperature"]

#: Axis names of M-RoPE's three position streams, in transformers' order.
MROPE_AXES = ("time", "height", "width")
#: Most axes a bank may share its pairs between (time, height, width and one spare).
MAX_AXES = 4
#: Largest extent (positions per axis) a per-axis report scans.
MAX_EXTENT = 1 << 16
#: Most offsets-times-pairs cosines one :func:`multi_kernel` or :func:`band_support` call evaluates.
MAX_KERNEL_CELLS = 1 << 26


def frequency_matrix(freqs, name: str = "freqs") -> np.ndarray:
    """A bank of multi-axis frequencies, checked: shape (pairs, axes), finite, 1 to :data:`MAX_AXES` axes.

    Examples
    --------
    >>> frequency_matrix([[1.0, 0.0], [0.0, 0.1]]).shape
    (2, 2)
    """
    F = v.finite_array(name, freqs)
    if F.ndim != 2 or F.shape[0] == 0 or not 1 <= F.shape[1] <= MAX_AXES:
        raise ValueError(f"{name} must have shape (pairs, axes) with 1 to {MAX_AXES} axes, got {F.shape}")
    return F


def _sections(sections) -> list[int]:
    if not v.is_collection(sections):
        raise ValueError(f"sections must be a list of pair counts such as (16, 24, 24), got {sections!r}")
    out = [v.integer("sections", s, minimum=0) for s in list(sections)[: MAX_AXES + 1]]
    if not 1 <= len(out) <= MAX_AXES or sum(out) == 0:
        raise ValueError(f"sections must hold 1 to {MAX_AXES} pair counts with a positive sum, got {sections!r}")
    if sum(out) > v.MAX_HEAD_DIM // 2:  # the pairs of one head
        raise ValueError(f"sections must sum to at most {v.MAX_HEAD_DIM // 2} pairs (head_dim {v.MAX_HEAD_DIM}), "
                         f"got {sum(out):,}")
    return out


def mrope_assignment(sections, *, round_robin: bool = False) -> np.ndarray:
    """The axis each rotary pair follows (pair 0 the fastest), as transformers deals M-RoPE's sections out.

    Blocked (Qwen2-VL): runs of ``sections[a]`` pairs. ``round_robin`` (Qwen3-VL, three axes):
    axis ``a >= 1`` takes pairs ``a, a + 3, ...`` below ``3 * sections[a]``, axis 0 the others.

    Examples
    --------
    >>> mrope_assignment((2, 1, 1)).tolist()
    [0, 0, 1, 2]
    >>> mrope_assignment((2, 2, 2), round_robin=True).tolist()
    [0, 1, 2, 0, 1, 2]
    >>> mrope_assignment((4, 1, 1), round_robin=True).tolist()
    [0, 1, 2, 0, 0, 0]
    """
    secs = _sections(sections)
    round_robin = v.boolean("round_robin", round_robin)
    if not round_robin:
        return np.repeat(np.arange(len(secs)), secs)
    if len(secs) != 3:
        raise ValueError(f"interleaved M-RoPE has three axes (time, height, width), got sections {secs}")
    pairs = sum(secs)
    out = np.zeros(pairs, dtype=int)
    for axis, offset in ((1, 1), (2, 2)):
        idx = np.arange(offset, 3 * secs[axis], 3)
        if idx.size and idx[-1] >= pairs:
            raise ValueError(f"sections {secs}: axis {axis}'s interleaved slots run past the {pairs} pairs")
        out[idx] = axis
    if np.count_nonzero(out == 0) != secs[0]:
        raise ValueError(f"sections {secs}: the interleaved layout leaves {np.count_nonzero(out == 0)} pairs to "
                         f"axis 0, not {secs[0]}")
    return out


def axis_frequencies(theta, assignment, axes: int | None = None) -> np.ndarray:
    """The ``(pairs, axes)`` frequency matrix of an axial split: pair ``i`` turns with axis ``assignment[i]`` only.

    Examples
    --------
    >>> axis_frequencies([1.0, 0.1], [1, 0]).tolist()
    [[0.0, 1.0], [0.1, 0.0]]
    """
    th = v.frequencies(theta)
    a = np.asarray(assignment)
    if a.shape != th.shape or not np.issubdtype(a.dtype, np.integer) or (a.size and a.min() < 0):
        raise ValueError(f"assignment must hold one non-negative axis index per pair, shape {th.shape}")
    n = int(a.max()) + 1 if axes is None else v.integer("axes", axes, minimum=1, maximum=MAX_AXES)
    if n > MAX_AXES or int(a.max()) >= n:
        raise ValueError(f"assignment names axis {int(a.max())}; axes must be at most {MAX_AXES} and cover it")
    F = np.zeros((th.size, n))
    F[np.arange(th.size), a] = th
    return F


def mrope_bank(head_dim: int = 128, base: float = 1e6, sections=(16, 24, 24), *, round_robin: bool = False) -> np.ndarray:
    """M-RoPE's frequency matrix, shape (head_dim // 2, 3): the 1D bank dealt out by sections (rows sum to it).

    Examples
    --------
    >>> F = mrope_bank(8, 100.0, (2, 1, 1))
    >>> F.round(3).tolist()
    [[1.0, 0.0, 0.0], [0.316, 0.0, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.032]]
    """
    head_dim = v.head_dim(head_dim)
    assignment = mrope_assignment(sections, round_robin=round_robin)
    if assignment.size != head_dim // 2:
        raise ValueError(f"sections sum to {assignment.size} pairs, but head_dim {head_dim} has {head_dim // 2}")
    return axis_frequencies(frequencies(head_dim, base), assignment, axes=len(_sections(sections)))


def axial_bank(head_dim: int = 64, base: float = 100.0) -> np.ndarray:
    """Heo et al.'s RoPE-Axial, shape (head_dim // 2, 2): x and y each take half the pairs, ``base ** (-4 i / head_dim)``.

    Examples
    --------
    >>> axial_bank(8, 100.0).round(4).tolist()  # rounded: 100 ** -0.5 is a pow, within an ulp of 0.1
    [[1.0, 0.0], [0.1, 0.0], [0.0, 1.0], [0.0, 0.1]]
    """
    head_dim = v.head_dim(head_dim)
    if head_dim % 4:
        raise ValueError(f"head_dim must be a multiple of 4 for two axes, got {head_dim}")
    half = frequencies(head_dim // 2, base)
    return axis_frequencies(np.concatenate([half, half]), np.repeat([0, 1], half.size), axes=2)


def mixed_bank(head_dim: int = 64, base: float = 10.0, angle: float = 0.0) -> np.ndarray:
    """Heo et al.'s RoPE-Mixed at initialisation, shape (head_dim // 2, 2): halves along ``angle`` and ``angle + pi/2``.

    Examples
    --------
    >>> mixed_bank(8, 10.0, 0.0).round(3).tolist()
    [[1.0, 0.0], [0.316, 0.0], [0.0, 1.0], [0.0, 0.316]]
    """
    head_dim = v.head_dim(head_dim)
    if head_dim % 4:
        raise ValueError(f"head_dim must be a multiple of 4 for two axes, got {head_dim}")
    angle = v.real("angle", angle)
    mag = frequencies(head_dim // 2, base)
    directions = np.array([angle, angle + np.pi / 2])
    return np.concatenate([np.outer(mag, [float(np.cos(d)), float(np.sin(d))]) for d in directions])


def proportional_frequencies(head_dim: int, base: float, fraction: float) -> np.ndarray:
    """p-RoPE: the fastest ``int(fraction * head_dim // 2)`` pairs of the full-head bank turn, the others have 0.

    Examples
    --------
    >>> proportional_frequencies(8, 10_000.0, 0.5).round(4).tolist()
    [1.0, 0.1, 0.0, 0.0]
    """
    head_dim = v.head_dim(head_dim)
    fraction = v.real("fraction", fraction, minimum=0.0, maximum=1.0)
    theta = frequencies(head_dim, base)
    kept = int(fraction * head_dim // 2)
    theta[kept:] = 0.0
    return theta


def multi_kernel(offsets, freqs, *, weights=None) -> np.ndarray:
    """``K(delta) = sum_i w_i cos(delta . f_i)`` for displacements ``(..., axes)``; shape ``offsets.shape[:-1]``.

    Examples
    --------
    >>> F = axial_bank(8, 100.0)
    >>> multi_kernel([[1, 0], [0, 1]], F).round(4).tolist()
    [0.8838, 0.8838]
    """
    F = frequency_matrix(freqs)
    w = v.pair_weights(weights, F.shape[0])
    d = v.finite_array("offsets", offsets)
    if d.ndim == 0 or d.shape[-1] != F.shape[1]:
        raise ValueError(f"offsets must end in one entry per axis ({F.shape[1]}), got shape {d.shape}")
    flat = d.reshape(-1, F.shape[1])
    if flat.shape[0] * F.shape[0] > MAX_KERNEL_CELLS:
        raise ValueError(f"offsets times pairs is {flat.shape[0] * F.shape[0]:,} cosines, more than "
                         f"MAX_KERNEL_CELLS = {MAX_KERNEL_CELLS:,}: use fewer offsets")
    return (np.cos(flat @ F.T) @ w).reshape(d.shape[:-1])


def kernel_grid(freqs, extent: int, *, weights=None) -> np.ndarray:
    """``K(dx, dy)`` over ``-extent .. extent`` of a two-axis bank: row ``j`` is ``dy = j - extent``, column ``i`` ``dx``.

    The grid times the pairs is at most :data:`MAX_KERNEL_CELLS` cosines.

    Examples
    --------
    >>> float(kernel_grid(axial_bank(8, 100.0), 1)[1, 1])
    1.0
    """
    F = frequency_matrix(freqs)
    if F.shape[1] != 2:
        raise ValueError(f"freqs must have two axes (x, y) for a grid, got {F.shape[1]}")
    extent = v.integer("extent", extent, minimum=1, maximum=MAX_EXTENT)
    if (2 * extent + 1) ** 2 * F.shape[0] > MAX_KERNEL_CELLS:  # before the grid is built
        raise ValueError(f"extent {extent:,}: a grid of (2 extent + 1)^2 offsets times {F.shape[0]} pairs is more "
                         f"than MAX_KERNEL_CELLS = {MAX_KERNEL_CELLS:,} cosines: use a smaller extent")
    r = np.arange(-extent, extent + 1.0)
    dx, dy = np.meshgrid(r, r)
    return multi_kernel(np.stack([dx, dy], axis=-1), F, weights=weights)


@dataclass(frozen=True)
class AxisReport:
    """What one axis of a shared bank resolves over ``extent`` positions (nan where it has no pairs).

    ``k1`` is ``K(1)`` on the whole head, ``band_k1`` on the axis's own pairs; ``near_return`` the
    first local maximum of the band kernel in ``2 .. extent`` (``None``: it only falls); ``margin``
    the separation margin of offsets ``0 .. extent - 1`` on the whole head.
    """

    axis: int
    pairs: int
    fastest: float
    slowest: float
    turns: float
    k1: float
    band_k1: float
    near_return: int | None
    near_return_similarity: float
    margin: float


def axis_report(freqs, axis: int, extent: int) -> AxisReport:
    """Resolution, nearest return and margin of one axis of a shared bank, over 2 to :data:`MAX_EXTENT` positions.

    Examples
    --------
    >>> r = axis_report(mrope_bank(128, 1e6, (16, 24, 24)), 2, 32)
    >>> r.pairs, round(r.band_k1, 6), r.near_return
    (24, 1.0, None)
    """
    F = frequency_matrix(freqs)
    axis = v.integer("axis", axis, minimum=0, maximum=F.shape[1] - 1)
    extent = v.integer("extent", extent, minimum=2, maximum=MAX_EXTENT)
    col = np.abs(F[:, axis])
    band = col[col > 0]
    k1 = float(kernel(1.0, col))
    margin = separation_margin(range(extent), col).margin
    if band.size == 0:
        return AxisReport(axis, 0, np.nan, np.nan, 0.0, k1, np.nan, None, np.nan, float(margin))
    k = kernel(np.arange(0.0, extent + 2.0), band)
    peaks = np.flatnonzero((k[2:-1] >= k[1:-2]) & (k[2:-1] >= k[3:])) + 2
    near = int(peaks[0]) if peaks.size else None
    return AxisReport(axis=axis, pairs=int(band.size), fastest=float(band.max()), slowest=float(band.min()),
                      turns=float(band.max() * extent / (2 * np.pi)), k1=k1, band_k1=float(k[1]),
                      near_return=near, near_return_similarity=np.nan if near is None else float(k[near]),
                      margin=float(margin))


def band_support(theta, max_length: int, constant: float = 0.0) -> int | None:
    """The first ``m`` in ``1 .. max_length`` where Men et al.'s band sum ``constant + sum_i cos(m theta_i)`` is negative.

    ``constant`` stands for the pairs of other axes (1 each); ``None``: never negative.

    Examples
    --------
    >>> band_support([1.0], 10)
    2
    >>> band_support([1.0], 10, constant=1.0) is None
    True
    """
    th = v.frequencies(theta)
    max_length = v.integer("max_length", max_length, minimum=1, maximum=MAX_KERNEL_CELLS)
    constant = v.real("constant", constant)
    step = max(1, (1 << 16) // th.size)
    if max_length * th.size > MAX_KERNEL_CELLS:
        raise ValueError(f"max_length times pairs exceeds MAX_KERNEL_CELLS = {MAX_KERNEL_CELLS:,}")
    for start in range(1, max_length + 1, step):
        m = np.arange(start, min(start + step, max_length + 1), dtype=np.float64)
        s = np.cos(np.multiply.outer(m, th)).sum(axis=-1) + constant
        neg = np.flatnonzero(s < 0)
        if neg.size:
            return int(m[neg[0]])
    return None


def nope_temperature(positions, floor_scale: float = 8192.0, attn_scale: float = 0.1) -> np.ndarray:
    """Llama 4's query scale on its NoPE layers: ``log(floor((p + 1) / floor_scale) + 1) * attn_scale + 1``.

    Examples
    --------
    >>> nope_temperature([0, 8190, 8191, 81919]).round(4).tolist()
    [1.0, 1.0, 1.0693, 1.2398]
    """
    p = v.finite_array("positions", positions)
    if np.any(p < 0):
        raise ValueError("positions must be non-negative")
    floor_scale = v.real("floor_scale", floor_scale, greater_than=0.0)
    attn_scale = v.real("attn_scale", attn_scale, minimum=0.0)
    with np.errstate(over="ignore"):
        q = (p + 1.0) / floor_scale
    exact = q < 2.0 ** 52  # beyond, floor and + 1 change q by less than its rounding: log q, formed without overflow
    logs = np.where(exact, np.log(np.floor(np.where(exact, q, 0.0)) + 1.0), np.log(p + 1.0) - log(floor_scale))
    return logs * attn_scale + 1.0
