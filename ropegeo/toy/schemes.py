"""Position schemes of the toy attention layer: how each one brings positions into a head.

A scheme (:class:`PositionScheme`) overrides only the hook where its position information enters:
``embed`` (the inputs), ``rotate`` (queries and keys), ``bias`` (a term of the two positions added
to the scores), ``content_bias`` and ``value_bias`` (terms of a query and a displacement, as in Shaw
et al.). Schemes register by name (:func:`register_scheme`); the layer of
:mod:`ropegeo.toy.attention` accepts a registered name (``none``, ``absolute``, ``sinusoidal``,
``relative``, ``t5``, ``alibi``, ``rope``: one class each below) or an instance.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable

import numpy as np

from ropegeo import _validate as v
from ropegeo.rotation import apply_rope

__all__ = ["PositionScheme", "NoPositions", "AbsolutePositions", "SinusoidalPositions", "RotaryPositions",
           "RelativePositions", "T5Bias", "ALiBi", "t5_bucket", "alibi_slopes", "register_scheme", "make_scheme",
           "scheme_names", "sinusoidal_encoding", "check_entries", "as_generator", "MAX_ENTRIES", "MAX_WIDTH"]


#: Largest number of entries any array built here may have (scores, codes, tables): 256 MiB of float64.
MAX_ENTRIES = 2**25

#: Largest ``d_model`` and ``head_dim`` of the toy layer (three 1024 x 1024 projections are 24 MiB).
MAX_WIDTH = 1024

_SCHEMES: dict[str, Callable[..., "PositionScheme"]] = {}


def check_entries(name: str, shape: tuple[int, ...]) -> None:
    """Refuse an array of ``shape`` with more than :data:`MAX_ENTRIES` entries (a ValueError naming ``name``)."""
    entries = math.prod(int(s) for s in shape)
    if entries > MAX_ENTRIES:
        raise ValueError(
            f"{name} would have shape {tuple(shape)} ({entries:,} entries); at most {MAX_ENTRIES:,} are allowed"
        )


def as_generator(seed: Any) -> np.random.Generator:
    """A Generator as given, or one seeded from a non-negative integer ``seed``."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(v.integer("seed", seed, minimum=0))


def sinusoidal_encoding(positions, d_model: int, base: float = 10_000.0) -> np.ndarray:
    """The sinusoidal position code of the original Transformer, shape ``positions.shape + (d_model,)``.

    Column ``2i`` holds ``sin(p w_i)`` and ``2i + 1`` holds ``cos(p w_i)``, ``w_i = base ** (-2 i /
    d_model)``. Raises ValueError for an odd ``d_model``, ``base <= 1``, non-finite positions, or more
    than ``MAX_ENTRIES`` entries.

    Examples
    --------
    >>> sinusoidal_encoding(0, 4)
    array([0., 1., 0., 1.])
    """
    d_model = v.head_dim(d_model, "d_model")
    base = v.base(base)
    pos = v.finite_array("positions", positions)
    check_entries("the sinusoidal code", pos.shape + (d_model,))
    omega = base ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)
    angles = pos[..., None] * omega
    out = np.empty(pos.shape + (d_model,), dtype=np.float64)
    out[..., 0::2] = np.sin(angles)
    out[..., 1::2] = np.cos(angles)
    return out


def register_scheme(name: str):
    """Class decorator: ``AttentionLayer(scheme=name, **options)`` then builds ``cls(**options)``."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a short identifier such as 'alibi', got {name!r}")

    def decorate(cls):
        _SCHEMES[name] = cls
        cls.name = name
        return cls

    return decorate


def scheme_names() -> list[str]:
    """Names of the registered position schemes."""
    return sorted(_SCHEMES)


def make_scheme(scheme: "str | PositionScheme" = "none", **options) -> "PositionScheme":
    """A position scheme from a registered name and its options, or an instance as is (no options). Raises ValueError otherwise."""
    if isinstance(scheme, PositionScheme):
        if options:
            raise ValueError(f"scheme options {sorted(options)} cannot be combined with a scheme instance")
        return scheme
    if not isinstance(scheme, str) or scheme not in _SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(map(repr, scheme_names()))}, got {scheme!r}")
    cls = _SCHEMES[scheme]
    try:
        inspect.signature(cls).bind(**options)
    except TypeError as exc:
        raise ValueError(f"scheme {scheme!r} does not take these options: {exc}") from None
    return cls(**options)


class PositionScheme:
    """Base class of position schemes: every hook leaves its input unchanged; the layer calls :meth:`setup` first."""

    name = "base"

    def setup(self, d_model: int, head_dim: int, rng: np.random.Generator) -> None:
        """Create parameters that depend on the layer's widths (tables, slopes...)."""

    def check_positions(self, positions: np.ndarray) -> np.ndarray:
        """Validate positions (already a finite float array); return them, possibly converted."""
        return positions

    def embed(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Inputs ``(..., seq, d_model)`` after position information is added."""
        return x

    def rotate(self, q: np.ndarray, k: np.ndarray, q_positions: np.ndarray, k_positions: np.ndarray):
        """Queries and keys ``(..., seq, head_dim)`` after position information is applied."""
        return q, k

    def bias(self, q_positions: np.ndarray, k_positions: np.ndarray) -> np.ndarray | None:
        """A term ``(..., seq_q, seq_k)`` added to the scores, or None."""
        return None

    def content_bias(self, q: np.ndarray, q_positions: np.ndarray, k_positions: np.ndarray) -> np.ndarray | None:
        """A term ``(..., seq_q, seq_k)`` added to ``q k^T`` before the ``1/sqrt(head_dim)`` scaling, or None."""
        return None

    def value_bias(self, weights: np.ndarray, q_positions: np.ndarray, k_positions: np.ndarray) -> np.ndarray | None:
        """A term ``(..., seq_q, head_dim)`` added to the outputs ``weights @ v``, or None."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@register_scheme("none")
class NoPositions(PositionScheme):
    """No position information at all (NoPE): the layer sees a set of tokens."""


@register_scheme("absolute")
class AbsolutePositions(PositionScheme):
    """A table of ``rows`` vectors, one per position, added to the inputs (learned absolute positions).

    ``table`` (rows, d_model) is explicit, else drawn at setup with standard deviation ``scale``; an
    instance keeps the table it drew for its first layer. Raises ValueError for a table of the wrong
    width, or a position that is negative, fractional or past the last row.
    """

    def __init__(self, rows: int = 64, table=None, scale: float = 1.0):
        self.scale = v.real("scale", scale, greater_than=0.0)
        if table is None:
            self.rows = v.integer("rows", rows, minimum=1)
            self.table = None
        else:
            t = v.finite_array("table", table)
            if t.ndim != 2 or t.shape[0] < 1:
                raise ValueError(f"table must be a 2-D array (rows, d_model), got shape {t.shape}")
            self.rows, self.table = t.shape[0], t
        check_entries("the absolute table", (self.rows, 1))

    def setup(self, d_model, head_dim, rng):
        if self.table is None:
            check_entries("the absolute table", (self.rows, d_model))
            self.table = self.scale * rng.standard_normal((self.rows, d_model))
        elif self.table.shape[1] != d_model:
            raise ValueError(f"table has width {self.table.shape[1]} but the layer has d_model={d_model}")

    def check_positions(self, positions):
        _integer_positions(positions, "to index the absolute table")
        outside = (positions < 0) | (positions >= self.rows)
        if np.any(outside):
            p = positions[outside].flat[0]
            raise ValueError(
                f"positions: position {p:g} is outside the absolute table, which has {self.rows} rows "
                f"(positions 0 to {self.rows - 1})"
            )
        return positions.astype(np.int64)

    def embed(self, x, positions):
        return x + self.table[positions]

    def __repr__(self):
        return f"AbsolutePositions(rows={self.rows})"


@register_scheme("sinusoidal")
class SinusoidalPositions(PositionScheme):
    """The sinusoidal code (:func:`sinusoidal_encoding`) times ``scale``, added to the inputs."""

    def __init__(self, base: float = 10_000.0, scale: float = 1.0):
        self.base = v.base(base)
        self.scale = v.real("scale", scale, greater_than=0.0)

    def setup(self, d_model, head_dim, rng):
        if d_model % 2:
            raise ValueError(f"the sinusoidal scheme needs an even d_model, got {d_model}")

    def embed(self, x, positions):
        return x + self.scale * sinusoidal_encoding(positions, x.shape[-1], self.base)

    def __repr__(self):
        return f"SinusoidalPositions(base={self.base:g})"


@register_scheme("rope")
class RotaryPositions(PositionScheme):
    """Rotary position embeddings: queries and keys rotated by :func:`ropegeo.rotation.apply_rope`.

    The options go to ``apply_rope``; any schedule of ``ropegeo.scaling`` plugs in through ``theta``;
    ``attention_factor`` multiplies the rotated queries and keys (YaRN's, LongRoPE's).
    """

    def __init__(self, base=10_000.0, rotary_dim=None, pairing="interleaved", theta=None, scale=1.0, phase_dtype="float64",
                 attention_factor=1.0):
        self.options = dict(
            base=v.base(base), rotary_dim=rotary_dim, pairing=v.pairing(pairing), theta=theta,
            scale=v.real("scale", scale), phase_dtype=v.float_dtype(phase_dtype).name,
        )
        self.attention_factor = v.real("attention_factor", attention_factor, greater_than=0.0)

    def setup(self, d_model, head_dim, rng):
        # a dry run on one zero vector validates every option against the head width
        apply_rope(np.zeros(head_dim), 0.0, **self.options)

    def rotate(self, q, k, q_positions, k_positions):
        q, k = apply_rope(q, q_positions, **self.options), apply_rope(k, k_positions, **self.options)
        if self.attention_factor != 1.0:
            q, k = q * self.attention_factor, k * self.attention_factor
        return q, k

    def __repr__(self):
        return f"RotaryPositions(base={self.options['base']:g}, pairing={self.options['pairing']!r})"


def _integer_positions(positions: np.ndarray, why: str) -> np.ndarray:
    bad = positions != np.round(positions)
    if np.any(bad):
        raise ValueError(f"positions must be integers {why}, got {positions[bad].flat[0]:g}")
    return positions


def _displacements(q_positions: np.ndarray, k_positions: np.ndarray) -> np.ndarray:
    """``k_j - q_i`` for every pair: shape (..., seq_q, seq_k), bounded by MAX_ENTRIES."""
    shape = np.broadcast_shapes(q_positions.shape[:-1], k_positions.shape[:-1]) + (q_positions.shape[-1], k_positions.shape[-1])
    check_entries("the displacement matrix", shape)
    return k_positions[..., None, :] - q_positions[..., :, None]


#: Largest ``num_buckets`` and ``max_distance`` :func:`t5_bucket` accepts (float32 is exact to 2**24).
T5_MAX_BUCKETS = 4096
T5_MAX_DISTANCE = 2**24


def _t5_options(num_buckets, max_distance, bidirectional) -> tuple[int, int, bool]:
    if not isinstance(bidirectional, (bool, np.bool_)):
        raise ValueError(f"bidirectional must be True or False, got {bidirectional!r}")
    bidirectional = bool(bidirectional)
    num_buckets = v.integer("num_buckets", num_buckets, minimum=4 if bidirectional else 2, maximum=T5_MAX_BUCKETS)
    per_side = num_buckets // 2 if bidirectional else num_buckets
    max_exact = per_side // 2
    max_distance = v.integer("max_distance", max_distance, minimum=max_exact + 1, maximum=T5_MAX_DISTANCE)
    return num_buckets, max_distance, bidirectional


def t5_bucket(relative_position, *, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128) -> np.ndarray:
    """T5's bucket of a relative position ``key - query`` (Raffel et al., 2020), int64 in ``[0, num_buckets)``.

    With ``bidirectional`` half the buckets serve keys after the query; without it every later key
    falls in bucket 0. On a side of ``B`` buckets with ``e = B // 2``: offset ``n < e`` is bucket
    ``n``, larger offsets get log-spaced buckets up to ``max_distance``, which share the last. The
    logarithm is evaluated in float32, as transformers' ``_relative_position_bucket`` does.
    ``num_buckets`` is at most 4096, ``max_distance`` at most ``2**24``. Raises ValueError for
    fractional or non-finite positions or options out of range.

    Examples
    --------
    >>> t5_bucket([-1, 0, 1, -20, -200], bidirectional=False).tolist()
    [1, 0, 0, 17, 31]
    """
    num_buckets, max_distance, bidirectional = _t5_options(num_buckets, max_distance, bidirectional)
    rel = v.finite_array("relative_position", relative_position)
    if np.any(rel != np.round(rel)):
        raise ValueError("relative_position must hold whole numbers (key position - query position)")
    out = np.zeros(rel.shape, dtype=np.int64)
    if bidirectional:
        side = num_buckets // 2
        out += np.where(rel > 0, side, 0)
        n = np.abs(rel)
    else:
        side = num_buckets
        n = np.maximum(-rel, 0.0)
    exact = side // 2
    # every n >= max_distance lands in the last bucket: clip first so float32 stays exact
    n = np.minimum(n, max_distance)
    nf = np.maximum(n, exact).astype(np.float32)
    large = exact + (np.log(nf / np.float32(exact)) / np.float32(math.log(max_distance / exact))
                     * np.float32(side - exact)).astype(np.int64)
    large = np.minimum(large, side - 1)
    return out + np.where(n < exact, n.astype(np.int64), large)


@register_scheme("t5")
class T5Bias(PositionScheme):
    """T5's relative bias ``table[t5_bucket(p_j - p_i)]`` added to the scores (Raffel et al., 2020).

    Options as in :func:`t5_bucket`; ``table`` (num_buckets,) is explicit, else drawn with standard
    deviation ``scale``. Raises ValueError for options out of range, a table of the wrong length, or
    fractional positions.
    """

    def __init__(self, num_buckets: int = 32, max_distance: int = 128, bidirectional: bool = True, table=None, scale: float = 1.0):
        self.num_buckets, self.max_distance, self.bidirectional = _t5_options(num_buckets, max_distance, bidirectional)
        self.scale = v.real("scale", scale, greater_than=0.0)
        self.table = None
        if table is not None:
            t = v.finite_array("table", table)
            if t.shape != (self.num_buckets,):
                raise ValueError(f"table must have shape ({self.num_buckets},), one bias per bucket, got {t.shape}")
            self.table = t.copy()

    def setup(self, d_model, head_dim, rng):
        if self.table is None:
            self.table = self.scale * rng.standard_normal(self.num_buckets)

    def check_positions(self, positions):
        return _integer_positions(positions, "for the t5 scheme (it looks displacements up in a table)")

    def buckets(self, q_positions, k_positions) -> np.ndarray:
        """Bucket of every (query, key) pair, shape (..., seq_q, seq_k)."""
        return t5_bucket(_displacements(q_positions, k_positions), bidirectional=self.bidirectional,
                         num_buckets=self.num_buckets, max_distance=self.max_distance)

    def bias(self, q_positions, k_positions):
        return self.table[self.buckets(q_positions, k_positions)]

    def __repr__(self):
        return (f"T5Bias(num_buckets={self.num_buckets}, max_distance={self.max_distance}, "
                f"bidirectional={self.bidirectional})")


#: Largest head count :func:`alibi_slopes` accepts.
ALIBI_MAX_HEADS = 4096


def alibi_slopes(heads: int) -> np.ndarray:
    """ALiBi's head-specific slopes (Press, Smith and Lewis, 2022) for 1 to 4096 ``heads``.

    For ``H`` a power of two, ``2 ** (-8 h / H)``, ``h = 1 .. H``; otherwise the ``P`` slopes of the
    largest power of two ``P < H`` followed by every other slope of the ``2P`` sequence, as the
    paper's code does.

    Examples
    --------
    >>> alibi_slopes(4).round(8).tolist()
    [0.25, 0.0625, 0.015625, 0.00390625]
    """
    heads = v.integer("heads", heads, minimum=1, maximum=ALIBI_MAX_HEADS)
    p = 1 << (heads.bit_length() - 1)  # largest power of two <= heads
    first = 2.0 ** (-8.0 * np.arange(1, p + 1) / p)
    if p == heads:
        return first
    extra = 2.0 ** (-4.0 * (2 * np.arange(heads - p) + 1) / p)
    return np.concatenate([first, extra])


@register_scheme("alibi")
class ALiBi(PositionScheme):
    """Attention with linear biases: ``bias(i, j) = -slope * |p_i - p_j|`` (ALiBi as published in a causal layer).

    The slope is ``alibi_slopes(heads)[head]``, or an explicit positive ``slope``. Raises ValueError
    for a head index outside ``[0, heads)`` or a non-positive slope.
    """

    def __init__(self, heads: int = 8, head: int = 0, slope: float | None = None):
        if slope is None:
            self.heads = v.integer("heads", heads, minimum=1, maximum=ALIBI_MAX_HEADS)
            self.head = v.integer("head", head, minimum=0, maximum=self.heads - 1)
            self.slope = float(alibi_slopes(self.heads)[self.head])
        else:
            self.heads, self.head = None, None
            self.slope = v.real("slope", slope, greater_than=0.0)

    def bias(self, q_positions, k_positions):
        return -self.slope * np.abs(_displacements(q_positions, k_positions))

    def __repr__(self):
        return f"ALiBi(slope={self.slope:g})"


@register_scheme("relative")
class RelativePositions(PositionScheme):
    """Learned relative position representations (Shaw, Uszkoreit and Vaswani, 2018).

    Tables indexed by ``r = clip(p_j - p_i, -K, K)`` (``K = max_distance``, 1 to 4096; row ``r + K``):
    ``a^K_r`` enters the score ``q_i . (k_j + a^K_r) / sqrt(head_dim)`` and, with ``values``,
    ``a^V_r`` the output ``sum_j A_ij (v_j + a^V_r)``. Tables not given are drawn with standard
    deviation ``scale``. Raises ValueError for options out of range, tables of the wrong shape, or
    fractional positions.
    """

    def __init__(self, max_distance: int = 16, key_table=None, value_table=None, values: bool = True, scale: float = 1.0):
        self.max_distance = v.integer("max_distance", max_distance, minimum=1, maximum=4096)
        if not isinstance(values, (bool, np.bool_)):
            raise ValueError(f"values must be True or False, got {values!r}")
        self.values = bool(values)
        self.scale = v.real("scale", scale, greater_than=0.0)
        self.key_table = None if key_table is None else self._table("key_table", key_table)
        self.value_table = None if value_table is None else self._table("value_table", value_table)

    def _table(self, name, t):
        t = v.finite_array(name, t)
        if t.ndim != 2 or t.shape[0] != 2 * self.max_distance + 1:
            raise ValueError(f"{name} must have shape ({2 * self.max_distance + 1}, head_dim), got {t.shape}")
        return t.copy()

    def setup(self, d_model, head_dim, rng):
        rows = 2 * self.max_distance + 1
        for name in ("key_table", "value_table"):
            t = getattr(self, name)
            if t is None:
                setattr(self, name, self.scale * rng.standard_normal((rows, head_dim)))
            elif t.shape[1] != head_dim:
                raise ValueError(f"{name} has width {t.shape[1]} but the layer has head_dim={head_dim}")

    def check_positions(self, positions):
        return _integer_positions(positions, "for the relative scheme (it looks displacements up in a table)")

    def index(self, q_positions, k_positions) -> np.ndarray:
        """Table row of every (query, key) pair: ``clip(p_j - p_i, -K, K) + K``, shape (..., seq_q, seq_k)."""
        K = self.max_distance
        return (np.clip(_displacements(q_positions, k_positions), -K, K) + K).astype(np.int64)

    def content_bias(self, q, q_positions, k_positions):
        idx = self.index(q_positions, k_positions)
        qa = q @ self.key_table.T  # (..., seq_q, 2K + 1): each query against every row
        shape = np.broadcast_shapes(qa.shape[:-1], idx.shape[:-1])
        qa = np.broadcast_to(qa, shape + qa.shape[-1:])
        idx = np.broadcast_to(idx, shape + idx.shape[-1:])
        return np.take_along_axis(qa, idx, axis=-1)

    def value_bias(self, weights, q_positions, k_positions):
        if not self.values:
            return None
        idx = self.index(q_positions, k_positions)
        idx = np.broadcast_to(idx, weights.shape)
        rows = self.value_table.shape[0]
        # weight per table row, one row at a time: memory stays O(seq_q * seq_k)
        per_row = np.stack([np.where(idx == r, weights, 0.0).sum(axis=-1) for r in range(rows)], axis=-1)
        return per_row @ self.value_table

    def __repr__(self):
        return f"RelativePositions(max_distance={self.max_distance}, values={self.values})"
