"""Reading a trained offset head: its score profile, its slow ramps, and its distant rivals.

:func:`~ropegeo.toy.pair_profiles` and :func:`~ropegeo.toy.pair_shapes` say which pairs were learned as a ramp
(or a dip, a bump) inside the training window and where they turn around; :func:`~ropegeo.toy.distant_rival`
says which distant displacement beats the target once the fast pairs nearly realign (predicted with
the kernel of :func:`ropegeo.geometry.kernel` weighted by the head's learned amplitudes).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ropegeo import _validate as v
from ropegeo.geometry import kernel, near_collisions
from ropegeo.rotation import phase_angles
from ropegeo.toy.heads import OffsetHead, _check_head, _resolve

#: Longest evaluation length :func:`distant_rival` searches (and the longest horizon of
#: ``ropegeo.book.plots.behaviour.score_profile``): one million displacements.
MAX_PROFILE_LENGTH = 1_000_000
#: Most ``(displacement, pair)`` cells one :func:`score_profile` call computes
#: (``deltas.size * pairs``): the ``per_pair`` result is then at most 256 MiB.
MAX_PROFILE_CELLS = 2**25


def score_profile(head: OffsetHead, deltas, *, theta=None, scale: float | None = None, per_pair: bool = False) -> np.ndarray:
    """The offset head's score as a function of displacement.

    Parameters
    ----------
    head : OffsetHead
    deltas : array_like
        Distances back ``delta = m - n`` from the query at ``m`` to the key at ``n`` (any shape;
        finite; positive means the key is earlier). This ``delta`` is the *negative* of the book's
        offset ``n - m`` (see the notation page): the key five back is ``delta = 5`` here and
        offset ``-5`` in the chapters;
        ``deltas.size * pairs`` at most :data:`MAX_PROFILE_CELLS` (2**25: a million
        displacements for a 64-wide head).
    theta, scale : optional
        Schedule to read the profile under (default: the head's own).
    per_pair : bool
        Return each pair's contribution ``a_i cos(delta s theta_i) + b_i sin(delta s theta_i)``
        instead of their sum.

    Returns
    -------
    numpy.ndarray
        Shape ``deltas.shape`` (or ``deltas.shape + (pairs,)`` with ``per_pair``).

    Raises
    ------
    ValueError
        For a head that is not an OffsetHead, a bad schedule, non-finite deltas, or more than
        ``MAX_PROFILE_CELLS`` cells.
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
    """Score profile in blocks of displacements (the (block, pairs) temporaries stay small)."""
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
    """How one rotary pair of a trained offset head shapes the score.

    The pair contributes ``amplitude * cos(delta s theta - phase)``; its slope changes sign at the
    turning points ``delta = (phase + j pi) / (s theta)``.

    Attributes
    ----------
    pair : int
    theta : float
        Frequency, radians per position (times the position scale).
    wavelength : float
        ``2 pi / (s theta)`` in tokens.
    a, b, amplitude, phase : float
        Learned coefficients, ``hypot(a, b)`` and ``atan2(b, a)``.
    ramp : bool
        No turning point in ``[1, train_length]``: inside the window the pair is monotone.
    slope : int
        Sign of the slope inside the window when it is a ramp (``-1`` favours near keys).
    turnaround : float
        First turning point beyond ``train_length`` (``inf`` when none; a zero frequency never turns).
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
    """Per-pair reading of an offset head: amplitude, phase, ramps and where they turn around.

    Parameters
    ----------
    head : OffsetHead
    train_length : int, optional
        The window to test monotonicity in (2 to ``ropegeo._validate.MAX_LENGTH`` = 2**48;
        default: the head's training length).

    Returns
    -------
    list of PairProfile, fastest pair first.
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
    """The displacement beyond the training window that an offset head scores highest.

    Attributes
    ----------
    offset : int
        The trained target displacement ``k``.
    window : tuple of int
        The displacement range searched, ``(train_length, length - 1)``.
    rival : int
        Displacement with the highest score in that range.
    rival_score, target_score : float
        ``score(rival)`` and ``score(k)`` (logits).
    wins : bool
        ``rival_score > target_score``: every query that can see the rival attends to it.
    fast_pairs : tuple of int
        The pairs that complete at least one turn inside the training window (the fast band).
    predicted : int
        ``k + Delta`` for the ``Delta`` in ``[train_length - k, length - 1 - k]`` where the fast
        band nearly realigns: the largest value of the kernel
        ``K_w(Delta) = sum_i w_i cos(Delta theta_i) / sum_i w_i`` with the learned amplitudes
        ``w_i = hypot(a_i, b_i)`` as weights on the fast pairs and zero on the others
        (:func:`ropegeo.geometry.near_collisions`). A geometric prediction of ``rival``.
    fast_similarity : float
        ``K_w(rival - k)`` over the fast band.
    weighted_similarity : float
        The same kernel over every pair, weighted by the learned amplitudes.
    weighted_margin : float
        ``1 - weighted_similarity``: the Gate B separation margin of the target and the rival
        under the head's own weights.
    fast_gap, slow_gap : float
        ``score(rival) - score(k)`` split into the fast band's part and the slow pairs' part.
        The fast part is close to zero where the band realigns; the slow part (the ramps)
        decides whether the rival wins.
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
        d = asdict(self)
        d["window"] = list(self.window)
        d["fast_pairs"] = list(self.fast_pairs)
        return d


def distant_rival(head: OffsetHead, length: int, *, theta=None, scale: float | None = None) -> DistantRival:
    """Find the strongest displacement beyond the training window and explain it geometrically.

    Parameters
    ----------
    head : OffsetHead
    length : int
        The evaluation length; displacements ``train_length .. length - 1`` are searched
        (``train_length < length <=`` :data:`MAX_PROFILE_LENGTH` = 1,000,000), a block at a time.
    theta, scale : optional
        Schedule (default: the head's own).

    Raises
    ------
    ValueError
        For a head that is not an OffsetHead, ``length <= train_length`` or beyond
        ``MAX_PROFILE_LENGTH``, or a schedule without a fast pair.
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
