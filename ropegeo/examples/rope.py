"""Rotary position embeddings as three model families write them, in plain numpy.

Each has Gate A's signature ``f(x, positions) -> rotated x`` (``x``: ``(..., seq, head_dim)``) and
none uses ropegeo: they stand for the code an engineer brings to the audit, e.g.
``python -m ropegeo gate-a ropegeo.examples.rope:llama31 --config llama-3.1-8b``.

>>> import numpy as np
>>> from ropegeo.gates.a.gate import gate_a
>>> gate_a(llama2, head_dim=64, pairing="half", max_position=4096).passed
True
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

__all__ = ["llama2", "llama31", "gptj", "llama2_bfloat16", "llama2_bfloat16_angles"]


def _inverse_frequencies(rotary_dim: int, base: float) -> np.ndarray:
    return 1.0 / base ** (np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)


def _llama3_frequencies(inv_freq: np.ndarray, factor: float = 8.0, low: float = 1.0, high: float = 4.0,
                        original: int = 8192) -> np.ndarray:
    """Llama 3.1's rule: slow pairs divided by the factor, fast pairs kept, a blend between."""
    wavelength = 2 * math.pi / inv_freq
    smooth = (original / wavelength - low) / (high - low)
    blended = (1 - smooth) * inv_freq / factor + smooth * inv_freq
    out = np.where(wavelength > original / low, inv_freq / factor, blended)
    return np.where(wavelength < original / high, inv_freq, out)


def _rotate_half(x: np.ndarray, positions, inv_freq: np.ndarray) -> np.ndarray:
    angles = np.asarray(positions, dtype=np.float64)[..., None] * inv_freq  # (..., seq, pairs)
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def llama2(x, positions):
    """Half-split pairs ``(i, i + head_dim/2)``, base 10,000: Llama 2's rotary embedding."""
    x = np.asarray(x, dtype=np.float64)
    return _rotate_half(x, positions, _inverse_frequencies(x.shape[-1], 10_000.0))


def llama31(x, positions):
    """Half-split pairs, base 500,000, Llama 3.1's frequency rule: Llama 3.1's rotary embedding."""
    x = np.asarray(x, dtype=np.float64)
    inv_freq = _llama3_frequencies(_inverse_frequencies(x.shape[-1], 500_000.0))
    return _rotate_half(x, positions, inv_freq)


def gptj(x, positions, rotary_dim: int = 64):
    """Adjacent pairs ``(2i, 2i + 1)`` on the first ``rotary_dim`` coordinates, base 10,000: GPT-J."""
    x = np.asarray(x, dtype=np.float64)
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    angles = np.asarray(positions, dtype=np.float64)[..., None] * _inverse_frequencies(rotary_dim, 10_000.0)
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = rot[..., 0::2], rot[..., 1::2]
    out = np.empty_like(rot)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return np.concatenate([out, rest], axis=-1)


def llama2_bfloat16(x, positions):
    """:func:`llama2` served in bfloat16 as transformers serves it: float32 angles, bfloat16 data."""
    bf16 = ml_dtypes.bfloat16
    x = np.asarray(x).astype(bf16)
    angles = np.asarray(positions, dtype=np.float32)[..., None] * _inverse_frequencies(x.shape[-1], 10_000.0).astype(np.float32)
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1).astype(bf16)
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1).astype(bf16)
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return (x * cos + rotated * sin).astype(bf16)


def llama2_bfloat16_angles(x, positions):
    """A broken :func:`llama2_bfloat16`: positions and frequencies multiplied in bfloat16."""
    bf16 = ml_dtypes.bfloat16
    x = np.asarray(x).astype(bf16)
    inv_freq = _inverse_frequencies(x.shape[-1], 10_000.0).astype(bf16)
    angles = (np.asarray(positions).astype(bf16)[..., None] * inv_freq).astype(np.float32)
    cos = np.concatenate([np.cos(angles)] * 2, axis=-1).astype(bf16)
    sin = np.concatenate([np.sin(angles)] * 2, axis=-1).astype(bf16)
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return (x * cos + rotated * sin).astype(bf16)
