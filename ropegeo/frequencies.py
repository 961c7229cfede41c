"""The frequency schedule of rotary position embeddings.

Pair ``i`` of a rotary subspace of dimension ``r`` turns by ``theta_i = base ** (-2 i / r)``
radians per position. Everything here is float64 and vectorised.
"""

from __future__ import annotations

import math

import numpy as np

from ropegeo import _validate as v

__all__ = ["frequencies", "wavelengths", "turns", "slow_pairs", "character_coherence", "resolve_rotary_dim"]

TWO_PI = 2.0 * math.pi


def schedule(rotary_dim: int, base: float) -> np.ndarray:
    """The geometric schedule ``base ** (-2 i / rotary_dim)``, unchecked: for validated inputs.

    Examples
    --------
    >>> schedule(8, 10_000.0).round(4).tolist()
    [1.0, 0.1, 0.01, 0.001]
    """
    exponents = np.arange(0, rotary_dim, 2) / rotary_dim  # 2i / r for pair i
    return np.power(base, -exponents)


def resolve_rotary_dim(head_dim: int, rotary_dim: int | None = None) -> tuple[int, int]:
    """``(head_dim, rotary_dim)`` checked: even, ``2 <= rotary_dim <= head_dim`` (``None``: the whole head)."""
    head_dim = v.head_dim(head_dim)
    if rotary_dim is None:
        return head_dim, head_dim
    rotary_dim = v.integer("rotary_dim", rotary_dim, minimum=2, maximum=head_dim)
    if rotary_dim % 2:
        raise ValueError(f"rotary_dim must be even (between 2 and head_dim={head_dim}), got {rotary_dim}")
    return head_dim, rotary_dim


def frequencies(head_dim: int | None = None, base: float | None = None, rotary_dim: int | None = None) -> np.ndarray:
    """Angular frequencies ``theta_i = base ** (-2 i / rotary_dim)`` (radians per position), fastest first.

    Defaults: head width 128, base 10,000, the whole head rotating (partial rotary spaces the
    exponents over ``rotary_dim``, as GPT-NeoX). A new array of shape ``(rotary_dim // 2,)``.

    Examples
    --------
    >>> frequencies(8).round(4).tolist()
    [1.0, 0.1, 0.01, 0.001]
    """
    _, rotary_dim = resolve_rotary_dim(128 if head_dim is None else head_dim, rotary_dim)
    return schedule(rotary_dim, v.base(10_000.0 if base is None else base))


def wavelengths(theta) -> np.ndarray:
    """Wavelength ``2 pi / theta_i`` of each pair of a bank ``theta`` (radians per position), in tokens.

    Shape ``(pairs,)``; ``inf`` for a zero frequency. An operator's bank is ``op.theta_at(n) * op.scale``.

    Examples
    --------
    >>> wavelengths([1.0, 0.0]).round(3).tolist()
    [6.283, inf]
    """
    theta = v.frequencies(theta)
    with np.errstate(divide="ignore"):
        return np.where(theta > 0, TWO_PI / np.where(theta > 0, theta, 1.0), np.inf)


def turns(theta, length: float) -> np.ndarray:
    """How many full turns each pair of a bank makes over ``length`` positions: ``length * theta / (2 pi)``.

    Examples
    --------
    >>> turns([1.0, 0.01], 100).round(3).tolist()
    [15.915, 0.159]
    """
    theta = v.frequencies(theta)
    length = v.real("length", length, greater_than=0.0)
    return length * theta / TWO_PI


def slow_pairs(theta, length: float) -> int:
    """Number of pairs that do not complete one full turn over ``length`` positions.

    Examples
    --------
    >>> slow_pairs(frequencies(128), 4096)
    18
    """
    return int(np.count_nonzero(turns(theta, length) < 1.0))


#: Largest number of pairs :func:`character_coherence` accepts (its output is pairs x pairs).
MAX_COHERENCE_PAIRS = 4096


def character_coherence(theta, window: int) -> np.ndarray:
    """How alike the pairs' characters ``exp(i t theta_i)`` look over ``window`` positions: ``(pairs, pairs)``.

    ``|sin(window d / 2) / sin(d / 2)| / window`` with ``d = theta_j - theta_i`` (1 when ``d`` is
    a multiple of ``2 pi``): 0 off the diagonal on a DFT grid, near 1 for RoPE's slow pairs.
    """
    theta = v.frequencies(theta)
    if theta.size > MAX_COHERENCE_PAIRS:
        raise ValueError(f"theta may have at most {MAX_COHERENCE_PAIRS} pairs, got {theta.size}")
    n = v.length("window", window, minimum=1)
    # only d modulo 2 pi matters; reduce it to [-pi, pi) so that small differences stay small
    d = theta[None, :] - theta[:, None]
    wide = np.abs(d) > np.pi  # reduce only these: adding pi to a tiny difference would round it away
    d[wide] = np.mod(d[wide] + np.pi, TWO_PI) - np.pi
    aligned = d == 0.0  # every term of the sum is 1
    safe = np.where(aligned, 1.0, d)
    with np.errstate(invalid="ignore"):
        out = np.abs(np.sin(n * safe / 2) / np.sin(safe / 2)) / n
    return np.minimum(np.where(aligned, 1.0, out), 1.0)

