"""Reading a trained offset head: its score profile, its slow ramps, and its distant rivals.

Displacements are ``delta = m - n`` (query at ``m``, key at ``n``; positive: the key is earlier),
the *negative* of the book's offset ``n - m``. ``theta, scale`` default to the head's own schedule.
:func:`~ropegeo.toy.pair_shapes` names each pair's shape in the window (ramp, dip, bump).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ropegeo import _validate as v
from ropegeo.geometry import kernel, near_collisions
from ropegeo.rotation import phase_angles
from ropegeo.toy.heads import OffsetHead, _check_head, _resolve

#: Longest evaluation length :func:`distant_rival` searches (and ``book.plots.behaviour.score_profile``).
MAX_PROFILE_LENGTH = 1_000_000
#: Most ``(displacement, pair)`` cells one :func:`score_profile` call computes (256 MiB ``per_pair``).
MAX_PROFILE_CELLS = 2**25


def score_profile(head: OffsetHead, deltas, *, theta=None, scale: float | None = None, per_pair: bool = False) -> np.ndarray:
    """The offset head's score at each displacement ``deltas`` (any shape, finite).

    ``deltas.size * pairs`` is at most :data:`MAX_PROFILE_CELLS`. Returns shape ``deltas.shape``, or
    ``deltas.shape + (pairs,)`` with ``per_pair`` (each pair's ``a_i cos(delta s theta_i) + b_i sin(...)``).
    Raises ValueError for a head that is not an OffsetHead, a bad schedule or non-finite deltas.
    """
    if not isinstance(head, OffsetHead):
        raise ValueError(f"head must be an OffsetHead, got {type(head).__name__}")
    _check_head(head)
    th, sc, att, _ = _resolve(head, 2, None, None, theta, scale)
    per_pair = v.boolean("per_pair", per_pair)
    d = v.finite_array("deltas", deltas)
    if d.size * th.size > MAX_PROFILE_CELLS:
        raise ValueError(f"deltas has {d.size:,} displacements; with {th.size} pairs at most "
                         f"{MAX_PROFILE_CELLS // th.size:,} fit MAX_PROFILE_CELLS = {MAX_PROFILE_CELLS:,}")
    return _profile(head, d, th, sc, att, per_pair)


def _profile(head, d, th, sc, att, per_pair):
    """Score profile in blocks of displacements (unchecked)."""
    a, b = head.coefficients()
    flat = d.reshape(-1)
    out = np.empty((flat.size, th.size) if per_pair else flat.size)
    step = max(1, (1 << 18) // th.size)
    for s0 in range(0, flat.size, step):
        ang = phase_angles(flat[s0 : s0 + step] * sc, th)
        parts = att * att * (a * np.cos(ang) + b * np.sin(ang))
        out[s0 : s0 + step] = parts if per_pair else parts.sum(axis=-1)
    if d.ndim == 0 and not per_pair:
        return out[0]  # a numpy scalar, as a sum over the pairs of one displacement
    return out.reshape(d.shape + ((th.size,) if per_pair else ()))


@dataclass(frozen=True)
class PairProfile:
    """How one rotary pair of a trained offset head shapes the score: ``amplitude * cos(delta s theta - phase)``.

    ``theta`` is in radians per position (times the scale), ``wavelength`` in tokens; ``ramp``: no
    turning point in ``[1, train_length]``, with ``slope`` its sign there (``-1`` favours near keys);
    ``turnaround``: the first turning point beyond ``train_length`` (``inf`` when none).
    """

    pair: int
    theta: float
    wavelength: float
    a: float
    b: float
    amplitude: float
    phase: float
    ramp: bool
    slope: int
    turnaround: float

    def to_dict(self) -> dict:
        return asdict(self)


def pair_profiles(head: OffsetHead, *, train_length: int | None = None) -> list:
    """Per-pair reading of an offset head (a list of :class:`PairProfile`, fastest pair first).

    ``train_length`` (default: the head's) is the window monotonicity is tested in.
    """
    if not isinstance(head, OffsetHead):
        raise ValueError(f"head must be an OffsetHead, got {type(head).__name__}")
    _check_head(head)
    L = v.length("train_length", head.train_length if train_length is None else train_length, minimum=2)
    a, b = head.coefficients()
    out = []
    for i, (t, ai, bi) in enumerate(zip(head.theta * head.scale, a, b)):
        amp, phase = float(math.hypot(ai, bi)), float(math.atan2(bi, ai))
        if t == 0:
            out.append(PairProfile(i, 0.0, math.inf, float(ai), float(bi), amp, phase, True, 0, math.inf))
            continue
        # turning points (phase + j pi) / t: first one at or after delta = 1
        j0 = math.ceil((t * 1.0 - phase) / math.pi)
        first = (phase + j0 * math.pi) / t
        ramp = first > L
        turn = first if ramp else (phase + math.ceil((t * L - phase) / math.pi) * math.pi) / t
        if turn <= L:
            turn += math.pi / t
        slope = 0
        if ramp:
            slope = int(np.sign(amp * math.cos(L * t - phase) - amp * math.cos(t - phase)))
        out.append(PairProfile(i, float(t), float(2 * math.pi / t), float(ai), float(bi), amp, phase, ramp, slope,
                               float(turn)))
    return out


def pair_shapes(head: OffsetHead) -> list:
    """What each pair of an offset head does inside its training window ``1..train_length``, fastest first.

    Each item is ``(shape, at)``. A pair monotone in the window is ``("near ramp", inf)`` (it favours
    near keys), ``("far ramp", inf)`` or ``("flat", inf)`` (zero frequency); any other pair is
    ``("dip", x)`` or ``("bump", x)``: its first turning point ``x`` in the window is a minimum or a
    maximum of its contribution ``amplitude cos(delta theta - phase)`` (:class:`PairProfile`).

    >>> from ropegeo.toy import train_offset_head
    >>> head = train_offset_head(5, head_dim=16, base=10_000.0, train_length=64, seed=1)
    >>> [shape for shape, _ in pair_shapes(head)[3:]]
    ['dip', 'near ramp', 'near ramp', 'near ramp', 'near ramp']
    """
    out = []
    for p in pair_profiles(head):
        if p.ramp:
            out.append(({-1: "near ramp", 1: "far ramp", 0: "flat"}[p.slope], math.inf))
            continue
        j = math.ceil((p.theta - p.phase) / math.pi)  # the first turning point at or after delta = 1
        out.append(("bump" if j % 2 == 0 else "dip", (p.phase + j * math.pi) / p.theta))
    return out


@dataclass(frozen=True)
class DistantRival:
    """The displacement beyond the training window (``window``) that an offset head scores highest.

    ``wins``: ``rival_score > target_score``. ``predicted`` is ``k + Delta`` where the fast band
    (``fast_pairs``: pairs turning at least once in the window) nearly realigns: the maximum of the
    kernel weighted by the learned amplitudes on the fast pairs (:func:`ropegeo.geometry.near_collisions`).
    ``fast_similarity`` / ``weighted_similarity`` are that kernel at ``rival - k`` over the fast band /
    every pair; ``weighted_margin = 1 - weighted_similarity``; ``fast_gap + slow_gap`` splits
    ``score(rival) - score(k)`` between the fast band and the slow pairs.
    """

    offset: int
    window: tuple
    rival: int
    rival_score: float
    target_score: float
    wins: bool
    fast_pairs: tuple
    predicted: int
    fast_similarity: float
    weighted_similarity: float
    weighted_margin: float
    fast_gap: float
    slow_gap: float

    def to_dict(self) -> dict:
        return asdict(self) | {"window": list(self.window), "fast_pairs": list(self.fast_pairs)}


def distant_rival(head: OffsetHead, length: int, *, theta=None, scale: float | None = None) -> DistantRival:
    """Find the strongest displacement in ``train_length .. length - 1`` and explain it geometrically.

    ``length`` is at most :data:`MAX_PROFILE_LENGTH`. Raises ValueError for a head that is not an
    OffsetHead, ``length <= train_length``, or a schedule without a fast pair.
    """
    if not isinstance(head, OffsetHead):
        raise ValueError(f"head must be an OffsetHead, got {type(head).__name__}")
    _check_head(head)
    L = head.train_length
    if L >= MAX_PROFILE_LENGTH:
        raise ValueError(f"head has train_length {L}; distant_rival searches lengths up to "
                         f"MAX_PROFILE_LENGTH = {MAX_PROFILE_LENGTH:,}")
    length = v.integer("length", length, minimum=L + 1, maximum=MAX_PROFILE_LENGTH)
    th, sc, att, _ = _resolve(head, length, None, None, theta, scale)
    k = head.offset
    # the best total score over the window, block by block (the first maximum, as argmax gives)
    best, rival, rival_parts = -np.inf, -1, None
    step = max(1, (1 << 18) // th.size)
    for start in range(L, length, step):
        deltas = np.arange(start, min(start + step, length))
        parts = _profile(head, deltas.astype(np.float64), th, sc, att, True)
        total = parts.sum(axis=-1)
        i = int(np.argmax(total))
        if total[i] > best or rival_parts is None:
            best, rival, rival_parts = total[i], int(deltas[i]), parts[i].copy()
    at_target = score_profile(head, k, theta=th, scale=sc, per_pair=True)
    w = head.amplitudes()
    fast = (th * sc * L) >= 2 * math.pi
    if not np.any(fast & (w > 0)):
        raise ValueError("the schedule has no pair that turns once inside the training window (no fast band)")
    w_fast = np.where(fast, w, 0.0)
    hit = near_collisions(th, L - k, length - 1 - k, top=1, scale=sc, weights=w_fast)[0]
    sim = float(kernel(rival - k, th, scale=sc, weights=w))
    fast_sim = float(kernel(rival - k, th, scale=sc, weights=w_fast))
    gap = rival_parts - at_target
    return DistantRival(offset=k, window=(L, length - 1), rival=rival, rival_score=float(best),
                        target_score=float(at_target.sum()), wins=bool(best > at_target.sum()),
                        fast_pairs=tuple(int(j) for j in np.nonzero(fast)[0]), predicted=k + hit.offset,
                        fast_similarity=fast_sim, weighted_similarity=sim, weighted_margin=1.0 - sim,
                        fast_gap=float(gap[fast].sum()), slow_gap=float(gap[~fast].sum()))
