"""Joint phase novelty: how far a served offset lies from every offset seen in training.

Per-pair novelty (:func:`ropegeo.extension.phase_novelty`) asks, one circle at a time, whether a
pair visits an angle it never visited in training. A rule can score zero there and still serve
*combinations* of angles that never occurred together: under YaRN or Llama 3 the fast pairs read
the offset ``delta`` while the slow pairs read ``delta / s``, and no training offset put the
fast pairs at ``delta`` and the slow pairs at ``delta / s`` at the same time.

This module measures that on the torus of all pairs. An offset ``delta`` under frequencies
``theta`` is the point ``u(delta) = (exp(i delta theta_0), .., exp(i delta theta_{P-1}))``. The
distance between two such points is the equal-weight chord distance of the Gate B margin,

``D(a, b) = sqrt(mean_i |u_i(a) - u_i(b)|^2) = 2 sqrt(mean_i sin^2((phi_i(a) - phi_i(b)) / 2))``

which lies in ``[0, 2]``; for two offsets of one bank it is ``sqrt(2 (1 - K(a - b)))``. The
joint novelty of a served offset is its distance to the *nearest* training offset
``0, 1, .., L - 1`` (the query-key distances a causal model trained on ``L`` tokens has seen).

The search over training offsets is one matrix product per chunk of targets (the inner product
of the cos/sin tables gives ``K`` for every pair of offsets at once); the winning offset's
distance is then recomputed from the phase differences, so small distances keep their digits.

Also here: :func:`base_change_factor`, the NTK stretch that a change of base amounts to (adjusted
base frequency, "ABF", is the same ruler change made before continued pre-training rather than at
inference).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ropegeo import _validate as v

__all__ = ["JointNovelty", "joint_novelty", "base_change_factor", "MAX_WORK"]

#: Largest search :func:`joint_novelty` accepts, in targets x training offsets x pairs (about
#: half a minute of matrix products on one core).
MAX_WORK = 2**36
#: Largest number of target offsets, and largest training length times pairs (the training
#: table is built once: 2**24 cells are 256 MiB of cos/sin).
MAX_TARGETS = 2**20
MAX_TRAIN_CELLS = 2**23
# targets per chunk are chosen so that one chunk's score matrix stays near 2**22 cells (32 MiB)
_CHUNK_CELLS = 2**22


@dataclass(frozen=True)
class JointNovelty:
    """Distances from served offsets to their nearest training offsets, from :func:`joint_novelty`.

    Attributes
    ----------
    targets : numpy.ndarray, shape (n,), int64
        The served offsets.
    nearest : numpy.ndarray, shape (n,), int64
        For each target, the training offset whose phase point is closest.
    distance : numpy.ndarray, shape (n,), float64
        The chord distance to it, in ``[0, 2]`` (0: the served phases occurred in training).
    """

    targets: np.ndarray
    nearest: np.ndarray
    distance: np.ndarray

    def fraction_beyond(self, threshold: float) -> float:
        """Share of the targets whose distance exceeds ``threshold`` (a number in [0, 2])."""
        t = v.real("threshold", threshold, minimum=0.0)
        return float(np.mean(self.distance > t))


def _targets(targets) -> np.ndarray:
    if isinstance(targets, range):
        targets = np.arange(targets.start, targets.stop, targets.step)
    arr = v.finite_array("targets", targets)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"targets must be a flat, non-empty list of offsets, got shape {arr.shape}")
    if arr.size > MAX_TARGETS:
        raise ValueError(f"targets may hold at most {MAX_TARGETS:,} offsets, got {arr.size:,}")
    if np.any(arr < 0) or np.any(arr != np.round(arr)) or np.any(arr > 2**53):
        raise ValueError("targets must be whole, non-negative offsets (at most 2**53)")
    return arr.astype(np.int64)


def _table(offsets: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Rows ``[cos(delta theta), sin(delta theta)] / sqrt(P)``: row products are ``K`` values."""
    ang = np.multiply.outer(offsets.astype(np.float64), theta)
    return np.concatenate([np.cos(ang), np.sin(ang)], axis=1) / np.sqrt(theta.size)


def _chord(phase_a: np.ndarray, phase_b: np.ndarray) -> np.ndarray:
    """Row-wise ``2 sqrt(mean sin^2((a - b) / 2))`` for phase arrays of shape (n, pairs)."""
    return 2.0 * np.sqrt(np.mean(np.sin((phase_a - phase_b) / 2.0) ** 2, axis=1))


def joint_novelty(theta_train, theta_served, train_length: int, targets) -> JointNovelty:
    """Distance from each served offset to the nearest training offset, on the torus of all pairs.

    Parameters
    ----------
    theta_train : array_like, shape (pairs,)
        Frequencies the model was trained with (radians per position).
    theta_served : array_like, shape (pairs,)
        Frequencies it is served with (a rule's output, e.g. from
        :func:`ropegeo.scaling.scaled_frequencies`).
    train_length : int
        ``L``: training offsets are ``0 .. L - 1``; ``L * pairs`` at most ``MAX_TRAIN_CELLS``.
    targets : array_like or range of int, shape (n,)
        Served offsets (whole, non-negative; at most ``MAX_TARGETS``).

    Raises
    ------
    ValueError
        For frequencies of different shapes, negative or non-finite frequencies, bad offsets, or a
        search larger than ``MAX_WORK`` (targets x L x pairs).

    Examples
    --------
    Raw extrapolation serves the training bank itself, so every offset below ``L`` was seen:

    >>> from ropegeo.frequencies import frequencies
    >>> th = frequencies(16, 10_000.0)
    >>> res = joint_novelty(th, th, 64, range(0, 64, 8))
    >>> res.nearest.tolist(), float(res.distance.max())
    ([0, 8, 16, 24, 32, 40, 48, 56], 0.0)
    """
    a = v.frequencies(theta_train, "theta_train")
    b = v.frequencies(theta_served, "theta_served")
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"theta_train and theta_served must be 1-D with the same shape, got {a.shape} and {b.shape}")
    L = v.length("train_length", train_length, minimum=1)
    if L * a.size > MAX_TRAIN_CELLS:
        raise ValueError(f"train_length * pairs must be at most {MAX_TRAIN_CELLS:,}, got {L * a.size:,}")
    t = _targets(targets)
    if t.size * L * a.size > MAX_WORK:
        raise ValueError(f"targets x train_length x pairs must be at most {MAX_WORK:,}, "
                         f"got {t.size * L * a.size:,}: use fewer targets")
    train = np.arange(L, dtype=np.int64)
    table = _table(train, a)  # (L, 2P)
    nearest = np.empty(t.size, dtype=np.int64)
    step = max(1, _CHUNK_CELLS // L)
    for lo in range(0, t.size, step):
        scores = _table(t[lo:lo + step], b) @ table.T  # (chunk, L): K between served and trained points
        nearest[lo:lo + step] = np.argmax(scores, axis=1)
    dist = np.empty(t.size)
    for lo in range(0, t.size, step):
        served = np.multiply.outer(t[lo:lo + step].astype(np.float64), b)
        seen = np.multiply.outer(nearest[lo:lo + step].astype(np.float64), a)
        dist[lo:lo + step] = _chord(served, seen)
    return JointNovelty(targets=t, nearest=nearest, distance=dist)


def base_change_factor(base: float, new_base: float, rotary_dim: int) -> float:
    """The NTK factor ``s`` whose static base change turns ``base`` into ``new_base``.

    NTK-aware scaling serves base ``B s^(d / (d - 2))``; solving for ``s`` gives
    ``s = (B' / B)^((d - 2) / d)``, the factor by which the change slows the slowest pair. Pair
    ``i`` is slowed by ``(B' / B)^(2 i / d)``.

    Parameters
    ----------
    base, new_base : float
        Old and new base (each greater than 1).
    rotary_dim : int
        ``d``, even, at least 4.

    Returns
    -------
    float
        Below 1 when the base shrinks.

    Examples
    --------
    >>> round(base_change_factor(10_000.0, 10_000.0 * 32 ** (96 / 94), 96), 9)
    32.0
    """
    b0 = v.base(base)
    b1 = v.base(new_base, "new_base")
    d = v.head_dim(rotary_dim, "rotary_dim")
    if d < 4:
        raise ValueError("rotary_dim must be at least 4 (d / (d - 2) is undefined at d = 2)")
    return float((b1 / b0) ** ((d - 2) / d))
