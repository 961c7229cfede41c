"""Joint phase novelty: how far a served offset lies from every offset seen in training.

A rule with no per-pair novelty (:func:`ropegeo.extension.phase_novelty`) can still serve
*combinations* of angles never seen together: under YaRN the fast pairs read ``delta``, the slow
ones ``delta / s``. An offset is the point ``u(delta) = (exp(i delta theta_i))_i`` on the torus;
its joint novelty is the equal-weight chord distance
``2 sqrt(mean_i sin^2((phi_i(a) - phi_i(b)) / 2))`` (in ``[0, 2]``) to the nearest training offset
``0 .. L - 1``. :func:`base_change_factor` is the NTK stretch a change of base (ABF) amounts to.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ropegeo import _validate as v

__all__ = ["JointNovelty", "joint_novelty", "base_change_factor", "MAX_WORK"]

#: Largest search :func:`joint_novelty` accepts, in targets x training offsets x pairs.
MAX_WORK = 2**36
#: Largest number of target offsets, and largest training length times pairs (one cos/sin table).
MAX_TARGETS = 2**20
MAX_TRAIN_CELLS = 2**23
_CHUNK_CELLS = 2**22  # one chunk's score matrix (32 MiB)


@dataclass(frozen=True)
class JointNovelty:
    """The served ``targets``, the ``nearest`` training offset of each and the chord ``distance`` to it (0: seen)."""

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


def joint_novelty(theta_train, theta_served, train_length: int, targets) -> JointNovelty:
    """Distance from each served offset (whole, non-negative) to the nearest training offset ``0 .. L - 1``.

    Within :data:`MAX_TARGETS`, :data:`MAX_TRAIN_CELLS` and :data:`MAX_WORK`. Raw extrapolation
    serves the training bank itself, so every offset below ``L`` was seen:

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
        dist[lo:lo + step] = 2.0 * np.sqrt(np.mean(np.sin((served - seen) / 2.0) ** 2, axis=1))  # chord
    return JointNovelty(targets=t, nearest=nearest, distance=dist)


def base_change_factor(rotary_dim: int, base: float, new_base: float) -> float:
    """The NTK factor ``s = (B' / B)^((d - 2) / d)`` whose static base change turns ``base`` into ``new_base``.

    The factor by which the change slows the slowest pair (below 1 when the base shrinks).

    Examples
    --------
    >>> round(base_change_factor(96, 10_000.0, 10_000.0 * 32 ** (96 / 94)), 9)
    32.0
    """
    b0 = v.base(base)
    b1 = v.base(new_base, "new_base")
    d = v.head_dim(rotary_dim, "rotary_dim")
    if d < 4:
        raise ValueError("rotary_dim must be at least 4 (d / (d - 2) is undefined at d = 2)")
    return float((b1 / b0) ** ((d - 2) / d))
