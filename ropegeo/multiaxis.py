"""One frequency bank shared between several position axes.

A multi-axis rotary head gives every token a position per axis (time, height and width for a
video, x and y for an image patch) and lets each rotary pair turn with a *combination* of them:
pair ``i`` turns by ``p . f_i`` radians at position vector ``p``, where ``f_i`` (one row of the
``(pairs, axes)`` matrix ``F``) is the pair's frequency vector. Three schemes fill ``F``:

* **Axial split** (M-RoPE, RoPE-Axial): each pair follows one axis, ``f_i = theta_i e_a``. How
  the pairs are dealt out decides what each axis can resolve: Qwen2-VL's blocked sections
  (:func:`mrope_assignment`) give time the fastest pairs and width the slowest; Qwen3-VL's
  interleaved sections deal them round-robin.
* **Mixed** (RoPE-Mixed, Heo et al. 2024): a pair turns with a direction in the plane,
  ``f_i = |f_i| (cos a_i, sin a_i)`` (:func:`mixed_bank`).
* **Partial rotation** (p-RoPE, transformers' ``proportional``): only the fastest pairs turn at
  all (:func:`proportional_frequencies`).

A displacement ``delta`` (one entry per axis) turns pair ``i`` by ``delta . f_i``, so with
content stripped away the kernel is ``K(delta) = mean_i cos(delta . f_i)`` (:func:`multi_kernel`).
Along one axis ``a`` that is chapter 3's kernel of the column ``F[:, a]``: the pairs of the other
axes do not turn and add ``cos 0 = 1`` each. Every per-axis question (resolution, near-returns,
margins, Gate B, Men et al.'s sum) is therefore the one-axis question asked of one column
(:func:`axis_report`), and this module reuses :mod:`ropegeo.geometry`, :mod:`ropegeo.margins` and
:mod:`ropegeo.gates.b.rule` for it.

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
           "proportional_frequencies", "multi_kernel", "kernel_grid", "axis_band", "AxisReport", "axis_report",
           "band_sum", "band_support", "nope_temperature"]

#: Axis names of M-RoPE's three position streams, in transformers' order.
MROPE_AXES = ("time", "height", "width")
#: Most axes a bank may share its pairs between (time, height, width and one spare).
MAX_AXES = 4
#: Largest extent (positions per axis) a per-axis report or support search scans; its margin and
#: near-return searches grow with it.
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
    """Which axis each rotary pair follows, as transformers deals M-RoPE's sections out.

    Blocked (Qwen2-VL, Qwen2.5-VL: ``apply_multimodal_rotary_pos_emb``): the first ``sections[0]``
    pairs (the fastest) follow axis 0, the next ``sections[1]`` axis 1, and so on. Interleaved
    (Qwen3-VL: ``apply_interleaved_mrope``): axis ``a >= 1`` takes pairs ``a, a + 3, a + 6, ...``
    below ``3 * sections[a]``, and axis 0 keeps every other pair.

    Parameters
    ----------
    sections : sequence of int
        Pairs per axis (``mrope_section`` of the configuration); they sum to ``head_dim // 2``
        (at most ``MAX_HEAD_DIM // 2``).
    round_robin : bool
        Qwen3-VL's layout (three axes only).

    Returns
    -------
    numpy.ndarray of int, shape (sum(sections),)
        The axis of each pair, pair 0 being the fastest.

    Raises
    ------
    ValueError
        For bad sections, or an interleaved layout that is not three axes whose slots fit.

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
    """M-RoPE's frequency matrix, shape (head_dim // 2, 3): the 1D bank dealt out by sections.

    Qwen2-VL and Qwen2.5-VL: ``mrope_bank(128, 1e6, (16, 24, 24))``; Qwen3-VL:
    ``mrope_bank(128, 5e6, (24, 20, 20), round_robin=True)``. For a text token the three position
    ids are equal, so every pair turns by ``p * theta_i``: the rows sum to the 1D bank.

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
    """Heo et al.'s RoPE-Axial, shape (head_dim // 2, 2): x takes the first half of the pairs, y the second.

    Each axis gets its own full bank ``base ** (-4 i / head_dim)``, ``i < head_dim / 4`` (their
    ``compute_axial_cis``, base 100 in their ViTs).

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
    """Heo et al.'s RoPE-Mixed at initialisation, shape (head_dim // 2, 2).

    The first half of the pairs turn along the direction ``angle``, the second half along
    ``angle + pi/2``, with magnitudes ``base ** (-4 i / head_dim)`` (their ``init_random_2d_freqs``,
    base 10, one random angle per head). Training then moves every entry freely.

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
    """p-RoPE (transformers' ``proportional`` rope type): the fastest pairs of the full-head bank turn, the rest do not.

    ``int(fraction * head_dim // 2)`` pairs keep ``base ** (-2 i / head_dim)``, the spacing of the
    *whole* head; the others get frequency 0. Partial rotary (``frequencies(head_dim, base,
    rotary_dim)``) instead re-spaces its pairs over the narrower width.

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
    """``K(delta) = sum_i w_i cos(delta . f_i)`` for displacement vectors ``delta``.

    Parameters
    ----------
    offsets : array_like, shape (..., axes)
        Displacements, one entry per axis (finite).
    freqs : array_like, shape (pairs, axes)
        The frequency matrix (rows ``f_i``).
    weights : array_like, shape (pairs,), optional
        Non-negative pair weights, normalised; default equal.

    Returns
    -------
    numpy.ndarray, shape offsets.shape[:-1]

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
    """``K(dx, dy)`` over ``-extent .. extent`` on both axes of a two-axis bank, shape (2 extent + 1, 2 extent + 1).

    Row ``j`` is ``dy = j - extent`` and column ``i`` is ``dx = i - extent``. ``extent`` is at
    most :data:`MAX_EXTENT`, and the grid times the pairs at most :data:`MAX_KERNEL_CELLS` cosines
    (a ``ValueError`` naming ``extent`` before anything is allocated).

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


def axis_band(freqs, axis: int) -> np.ndarray:
    """Indices of the pairs that turn when only ``axis`` moves (non-zero entries of column ``axis``).

    Examples
    --------
    >>> axis_band(mrope_bank(8, 100.0, (2, 1, 1)), 0).tolist()
    [0, 1]
    """
    F = frequency_matrix(freqs)
    axis = v.integer("axis", axis, minimum=0, maximum=F.shape[1] - 1)
    return np.flatnonzero(F[:, axis])


@dataclass(frozen=True)
class AxisReport:
    """What one axis of a shared bank can resolve over ``extent`` positions.

    Attributes
    ----------
    axis : int
    pairs : int
        Pairs that turn with this axis.
    fastest, slowest : float
        The largest and smallest of their frequencies (radians per position; nan without pairs).
    turns : float
        Turns the fastest of them makes over ``extent`` positions.
    k1 : float
        ``K(1)`` along the axis on the whole head (the other pairs add 1 each).
    band_k1 : float
        ``K(1)`` of the axis's own pairs alone (nan without pairs): the resolution of its band.
    near_return : int or None
        The first offset in ``2 .. extent`` where the band kernel has a local maximum (it climbs
        back towards 1 there: the axis's nearest return), ``None`` when the band kernel only falls
        over the extent (no pair of the band has come round yet).
    near_return_similarity : float
        Its band kernel value (nan without a return).
    margin : float
        :func:`ropegeo.margins.separation_margin` of offsets ``0 .. extent - 1`` along the axis,
        on the whole head.
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
    """Resolution, nearest return and margin of one axis of a shared bank, over ``extent`` positions.

    Parameters
    ----------
    freqs : array_like, shape (pairs, axes)
    axis : int
    extent : int
        Positions along the axis (2 to :data:`MAX_EXTENT`): a 32-patch-wide image has extent 32.

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


def band_sum(m, theta, constant: float = 0.0) -> np.ndarray:
    """Men et al.'s sum restricted to a band: ``constant + sum_i cos(m theta_i)``.

    A displacement along one axis turns only that axis's pairs; the others add 1 each, which is
    ``constant``. With ``constant = 0`` the sum asks whether the band *alone* still prefers a
    similar key to a random one at distance ``m``.

    Examples
    --------
    >>> band_sum([0, 1], [1.0, 0.0]).round(4).tolist()
    [2.0, 1.5403]
    """
    th = v.frequencies(theta)
    constant = v.real("constant", constant)
    m = v.finite_array("m", m)
    if m.size * th.size > MAX_KERNEL_CELLS:
        raise ValueError(f"distances times pairs exceeds MAX_KERNEL_CELLS = {MAX_KERNEL_CELLS:,}")
    return np.cos(np.multiply.outer(m, th)).sum(axis=-1) + constant


def band_support(theta, max_length: int, constant: float = 0.0) -> int | None:
    """The first distance ``m`` in ``1 .. max_length`` at which :func:`band_sum` turns negative (``None``: never).

    Men et al.'s criterion applied to one band: the band supports a context up to one less than
    this distance.

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

    It is exactly 1 for the first ``floor_scale - 1`` positions and grows with the logarithm of
    the position after that (transformers' ``Llama4TextAttention``, ``attn_temperature_tuning``).

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
