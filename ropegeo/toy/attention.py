"""A toy single-head attention layer with pluggable position schemes.

For inputs ``x`` (..., seq, d_model) at positions ``p``: ``x' = scheme.embed(x, p)``;
``q, k, v = x' Wq, x' Wk, x' Wv``; ``q, k = scheme.rotate(q, k, p, p)``; scores
``q k^T / sqrt(head_dim) + scheme.bias(p, p)``; a softmax over keys (causal mask optional); ``A v``.
The schemes live in :mod:`ropegeo.toy.schemes`: a layer takes a registered name or an instance.
Everything is float64 and vectorised over leading batch axes.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from ropegeo import _validate as v
from ropegeo.rotation import apply_rope
from ropegeo.softmax import softmax
from ropegeo.toy.schemes import (MAX_WIDTH, as_generator, check_entries, make_scheme)

__all__ = ["AttentionLayer", "AttentionResult", "Deviation", "causal_mask", "permutation_deviation", "shift_deviation", "copy_back_head"]


def causal_mask(seq: int) -> np.ndarray:
    """Boolean (seq, seq) mask: (i, j) is True when query i may see key j (j <= i). At most ``MAX_ENTRIES`` entries."""
    seq = v.integer("seq", seq, minimum=1)
    check_entries("the causal mask", (seq, seq))
    return np.tri(seq, dtype=bool)


class AttentionResult(NamedTuple):
    """Everything one forward pass computes (see :meth:`AttentionLayer.run`)."""

    #: Pre-softmax scores ``(q k^T + content bias) / sqrt(head_dim)`` plus any bias, before masking; (..., seq, seq).
    scores: np.ndarray
    #: Attention weights (..., seq, seq); rows sum to 1, masked entries are exactly 0.
    weights: np.ndarray
    #: ``weights @ v`` (plus the scheme's value bias, if any), shape (..., seq, head_dim).
    outputs: np.ndarray
    #: Queries after the scheme's ``rotate`` hook, shape (..., seq, head_dim).
    q: np.ndarray
    #: Keys after the scheme's ``rotate`` hook, shape (..., seq, head_dim).
    k: np.ndarray
    #: Values, shape (..., seq, head_dim); no scheme rotates them.
    v: np.ndarray


class AttentionLayer:
    """One attention head with a pluggable position scheme.

    ``d_model`` is 1 to ``MAX_WIDTH``; ``head_dim`` (even) defaults to ``d_model`` rounded up to even;
    ``scheme`` is a name of :func:`~ropegeo.toy.schemes.scheme_names` or an instance, with its
    ``options`` (e.g. ``rows=16``, ``base=500``); ``causal`` is the default mask; ``seed`` draws
    ``Wq, Wk, Wv`` (variance ``1/d_model``) and any table. Raises ValueError for bad widths or an
    unknown scheme or options.

    Examples
    --------
    >>> layer = AttentionLayer(8, scheme="rope", seed=0)
    >>> layer(np.ones((5, 8))).shape
    (5, 8)
    """

    def __init__(self, d_model: int, head_dim: int | None = None, *, scheme="none", causal: bool = False, seed=0, **options):
        self.d_model = v.integer("d_model", d_model, minimum=1, maximum=MAX_WIDTH)
        if head_dim is None:
            head_dim = self.d_model + (self.d_model % 2)
        self.head_dim = v.head_dim(head_dim, "head_dim")
        if self.head_dim > MAX_WIDTH:
            raise ValueError(f"head_dim must be at most {MAX_WIDTH}, got {self.head_dim}")
        if not isinstance(causal, (bool, np.bool_)):
            raise ValueError(f"causal must be True or False, got {causal!r}")
        self.causal = bool(causal)
        rng = as_generator(seed)
        std = 1.0 / math.sqrt(self.d_model)
        self.Wq = std * rng.standard_normal((self.d_model, self.head_dim))
        self.Wk = std * rng.standard_normal((self.d_model, self.head_dim))
        self.Wv = std * rng.standard_normal((self.d_model, self.head_dim))
        self.scheme = make_scheme(scheme, **options)
        self.scheme.setup(self.d_model, self.head_dim, rng)

    def __repr__(self) -> str:
        return f"AttentionLayer(d_model={self.d_model}, head_dim={self.head_dim}, scheme={self.scheme!r}, causal={self.causal})"

    def _inputs(self, x, positions):
        x = v.finite_array("x", x)
        if x.ndim < 2 or x.shape[-1] != self.d_model or x.shape[-2] < 1:
            raise ValueError(f"x must have shape (..., seq, d_model={self.d_model}) with seq >= 1, got {x.shape}")
        seq = x.shape[-2]
        check_entries("the score matrix", x.shape[:-1] + (seq,))
        if positions is None:
            pos = np.arange(seq, dtype=np.float64)
        else:
            pos = v.finite_array("positions", positions)
            if pos.ndim == 0 or pos.shape[-1] != seq:
                raise ValueError(f"positions must have a last axis of length seq={seq}, got shape {pos.shape}")
            try:
                np.broadcast_shapes(pos.shape, x.shape[:-1])
            except ValueError:
                raise ValueError(f"positions of shape {pos.shape} do not broadcast against x.shape[:-1] = {x.shape[:-1]}") from None
        return x, self.scheme.check_positions(pos)

    def _mask(self, seq, causal):
        if causal is None:
            causal = self.causal
        if not isinstance(causal, (bool, np.bool_)):
            raise ValueError(f"causal must be True, False or None, got {causal!r}")
        return causal_mask(seq) if causal else None

    def run(self, x, positions=None, *, causal: bool | None = None) -> AttentionResult:
        """One forward pass of ``x`` (..., seq, d_model): an :class:`AttentionResult`.

        ``positions`` (default ``0 .. seq - 1``) are attached to slots; ``causal=None`` uses the layer's
        default. Raises ValueError for a wrong shape, non-finite values, positions the scheme refuses, or
        scores beyond ``MAX_ENTRIES``.
        """
        x, pos = self._inputs(x, positions)
        mask = self._mask(x.shape[-2], causal)
        h = self.scheme.embed(x, pos)
        q, k, val = h @ self.Wq, h @ self.Wk, h @ self.Wv
        q, k = self.scheme.rotate(q, k, pos, pos)
        raw = q @ np.swapaxes(k, -1, -2)
        c = self.scheme.content_bias(q, pos, pos)
        if c is not None:
            raw = raw + c
        scores = raw / math.sqrt(self.head_dim)
        b = self.scheme.bias(pos, pos)
        if b is not None:
            scores = scores + b
        weights = softmax(scores, mask)
        out = weights @ val
        vb = self.scheme.value_bias(weights, pos, pos)
        if vb is not None:
            out = out + vb
        return AttentionResult(scores, weights, out, q, k, val)

    def scores(self, x, positions=None) -> np.ndarray:
        """Pre-softmax scores, shape (..., seq, seq) (unmasked; see :meth:`run`)."""
        return self.run(x, positions, causal=False).scores

    def weights(self, x, positions=None, *, causal: bool | None = None) -> np.ndarray:
        """Attention weights, shape (..., seq, seq) (see :meth:`run`)."""
        return self.run(x, positions, causal=causal).weights

    def __call__(self, x, positions=None, *, causal: bool | None = None) -> np.ndarray:
        """Outputs, shape (..., seq, head_dim) (see :meth:`run`)."""
        return self.run(x, positions, causal=causal).outputs




class Deviation(NamedTuple):
    """Largest absolute deviations between what a symmetry predicts and what the layer does."""

    #: Largest deviation of the pre-softmax scores.
    scores: float
    #: Largest deviation of the attention weights.
    weights: float
    #: Largest deviation of the outputs.
    outputs: float


def _permutation(perm, seq: int) -> np.ndarray:
    p = np.asarray(perm)
    if p.shape != (seq,) or not np.issubdtype(p.dtype, np.integer) or not np.array_equal(np.sort(p), np.arange(seq)):
        raise ValueError(f"perm must be a permutation of 0..{seq - 1} (an integer array of length {seq}), got {perm!r}")
    return p


def permutation_deviation(layer: AttentionLayer, x, perm, positions=None, *, causal=None, carry_positions=False) -> Deviation:
    """How far the layer is from permutation equivariance for one permutation ``perm`` of the slots.

    Compares the pass on ``x[perm]`` with ``P S P^T``, ``P A P^T`` and ``P out`` from the pass on
    ``x``; with ``carry_positions`` each token keeps its position. 0 up to rounding for an equivariant layer.
    """
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., seq, d_model), got {x.shape}")
    p = _permutation(perm, x.shape[-2])
    a = layer.run(x, positions, causal=causal)
    pos = np.arange(x.shape[-2], dtype=np.float64) if positions is None else np.asarray(positions, dtype=np.float64)
    if carry_positions:
        pos = np.broadcast_to(pos, x.shape[:-1])[..., p]
    b = layer.run(x[..., p, :], pos, causal=causal)
    return Deviation(
        float(np.max(np.abs(b.scores - a.scores[..., p, :][..., :, p]))),
        float(np.max(np.abs(b.weights - a.weights[..., p, :][..., :, p]))),
        float(np.max(np.abs(b.outputs - a.outputs[..., p, :]))),
    )


def shift_deviation(layer: AttentionLayer, x, shift: float, positions=None, *, causal=None) -> Deviation:
    """How much a global ``shift`` of every position changes scores, weights and outputs.

    Raises ValueError as :meth:`AttentionLayer.run`, e.g. when the shifted positions leave an absolute table.
    """
    shift = v.real("shift", shift)
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., seq, d_model), got {x.shape}")
    pos = np.arange(x.shape[-2], dtype=np.float64) if positions is None else v.finite_array("positions", positions)
    a = layer.run(x, pos, causal=causal)
    b = layer.run(x, pos + shift, causal=causal)
    return Deviation(
        float(np.max(np.abs(b.scores - a.scores))),
        float(np.max(np.abs(b.weights - a.weights))),
        float(np.max(np.abs(b.outputs - a.outputs))),
    )




def copy_back_head(back: int = 2, *, length: int = 8, head_dim: int = 16, key_shift: float = 0.0,
                   value_lag: int = 0, sharpness: float = 8.0, seed: Any = 0) -> Callable:
    """A content-free rotary head that should read the token ``back`` places before the query.

    Every key holds the same random vector ``k`` and the query (position ``length - 1``) is
    ``sharpness * R_{-back} k``, so the score peaks at key ``m - back``. ``key_shift`` rotates the keys
    at shifted positions (a routing defect); ``value_lag`` rolls the values (a value-path defect).
    ``length`` is 2 to 4,096, ``sharpness`` at most 1e6. Returns ``head(values) -> (weights, output)``
    for ``values`` of shape ``(length, v)``.

    Examples
    --------
    >>> head = copy_back_head(2)
    >>> weights, out = head(np.eye(8))
    >>> int(weights.argmax()), int(out.argmax())
    (5, 5)
    """
    length = v.integer("length", length, minimum=2, maximum=4096)
    back = v.integer("back", back, minimum=1, maximum=length - 1)
    d = v.head_dim(head_dim)
    if d > MAX_WIDTH:
        raise ValueError(f"head_dim must be at most {MAX_WIDTH}, got {d}")
    shift = v.real("key_shift", key_shift)
    lag = v.integer("value_lag", value_lag, minimum=-(length - 1), maximum=length - 1)
    beta = v.real("sharpness", sharpness, greater_than=0.0, maximum=1e6)
    k = as_generator(seed).normal(size=d)
    keys = apply_rope(np.tile(k, (length, 1)), np.arange(length) + shift)
    query = apply_rope(apply_rope(beta * k, -float(back)), float(length - 1))
    logits = keys @ query / math.sqrt(d)
    weights = softmax(logits)

    def head(values):
        vals = v.finite_array("values", values)
        if vals.ndim != 2 or vals.shape[0] != length:
            raise ValueError(f"values must have shape ({length}, v), got {vals.shape}")
        return weights.copy(), weights @ np.roll(vals, lag, axis=0)

    return head


