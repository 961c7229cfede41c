"""Softmax: the attention weights of a row of scores, in one place.

:func:`softmax` is the checked entry (any shape, an optional boolean mask); :func:`softmax_rows`
is the in-place kernel the trainers call at every step, which also returns what the backward
pass needs.
"""

from __future__ import annotations

import numpy as np

from ropegeo import _validate as v

__all__ = ["softmax", "softmax_rows", "softmax_segments", "exp_rows", "EXP_FLOOR"]


def softmax(scores, mask=None) -> np.ndarray:
    """Softmax over the last axis; where the boolean ``mask`` is False an entry gets exactly zero weight.

    ``ValueError`` for a row whose entries are all masked (its softmax is undefined).

    Examples
    --------
    >>> softmax([0.0, 0.0, 0.0], [True, True, False]).tolist()
    [0.5, 0.5, 0.0]
    """
    s = v.finite_array("scores", scores)
    if s.ndim == 0 or s.shape[-1] == 0:
        raise ValueError(f"scores must have at least one entry along the last axis, got shape {s.shape}")
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype != np.bool_:
            raise ValueError(f"mask must be boolean, got dtype {m.dtype}")
        try:
            m = np.broadcast_to(m, s.shape)
        except ValueError:
            raise ValueError(f"mask of shape {np.shape(mask)} does not broadcast against scores {s.shape}") from None
        if not np.all(m.any(axis=-1)):
            raise ValueError("mask leaves a row with no visible entry; its softmax is undefined")
        s = np.where(m, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


#: Scores more than this far below a row's maximum get probability exp(-600) ~ 1e-261 instead
#: of underflowing into subnormal numbers, which are two orders of magnitude slower to process.
EXP_FLOOR = -600.0


def softmax_rows(s: np.ndarray, earlier: np.ndarray, *, masked: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """In-place masked softmax over the last axis: returns (p, row max, row sum of exp).

    ``earlier`` (seq, seq) is 1.0 where a key may be attended; ``masked`` says the caller has
    already pushed the other scores down by 1e30. Rows with no allowed key get probability zero.
    """
    if not masked:
        s -= (1.0 - earlier) * 1e30
    top = s.max(axis=-1, keepdims=True)
    s -= top
    np.maximum(s, EXP_FLOOR, out=s)
    np.exp(s, out=s)
    s *= earlier
    z = s.sum(axis=-1, keepdims=True)
    s /= np.where(z > 0, z, 1.0)
    return s, top, z


def softmax_segments(e: np.ndarray, starts: np.ndarray, row: np.ndarray, top=None, *, exponentiated: bool = False,
                     weights=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """In-place softmax over segments ``e[starts[j]:starts[j + 1]]`` of a flat array: (p, shift, sum of exp).

    ``row[i]`` is the segment of entry ``i``; ``top`` defaults to each segment's maximum; with
    ``exponentiated``, ``e`` already holds ``exp(score - top[j])`` (:func:`exp_rows`); ``weights``
    per segment multiply the probabilities. The trainers' unchecked kernel for ragged rows.

    Examples
    --------
    >>> p, top, z = softmax_segments(np.log([1.0, 3.0, 2.0]), np.array([0, 2]), np.array([0, 0, 1]))
    >>> p.round(3).tolist(), z.round(3).tolist()
    ([0.25, 0.75, 1.0], [1.333, 1.0])
    """
    if not exponentiated:
        if top is None:
            top = np.maximum.reduceat(e, starts)
        e -= top[row]
        np.maximum(e, EXP_FLOOR, out=e)
        np.exp(e, out=e)
    z = np.add.reduceat(e, starts)
    e *= ((1.0 if weights is None else weights) / z)[row]
    return e, top, z


def exp_rows(x: np.ndarray, top: np.ndarray) -> np.ndarray:
    """``exp(x - top)`` row by row (``top`` at least each row's maximum): softmax numerators computed
    once for a table whose entries :func:`softmax_segments` later reads many times."""
    return np.exp(x - top[:, None])
