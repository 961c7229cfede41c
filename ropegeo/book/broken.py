"""A catalogue of rotary implementations, correct and broken, for the book, the tests and the exercises.

Each implementation is a :class:`Rotary` (or a subclass with one defect) that follows the three
protocols of :mod:`ropegeo.gates.a.gate` (``f(x, positions, role=...)``, ``prefill``,
``decode_step``). A :class:`CatalogueEntry` pairs it with what it *declares*; a defect is a gap
between the two, or a break of the algebra itself.

:data:`CATALOGUE` holds four correct entries (interleaved, half-split, partial rotary, consistently
interpolated) and eight broken ones (``mixed-pairing``, ``query-restart``, ``cache-off-by-one``,
``scaled-queries``, ``bfloat16-angles``, ``wrong-base``, ``missliced-partial``, ``rotated-values``:
each entry's ``title`` says what it does). :data:`DEFECTS` is the wider catalogue Gate A is tested
on: every defect class, each with the check that must lead its report and the words its diagnosis
must contain (position-id, precision, frequency, layout, convention,
magnitude, roles, values, decoding, algebra, contract), plus correct implementations served in bfloat16 and float16 that must pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import ml_dtypes
import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import resolve_rotary_dim
from ropegeo.models.manifest import RopeManifest
from ropegeo.rotation import apply_rope, pair_indices
from ropegeo.softmax import softmax

__all__ = ["Rotary", "CatalogueEntry", "CATALOGUE", "entry", "correct_entries", "broken_entries",
           "attention_comparison", "position_ids", "POSITION_POLICIES", "mixing_summary", "shift_score_change",
           "packed_score_change", "partial_score_parts", "manifest_replays", "DEFECTS", "defect_entry",
           "PositionDefect", "ServedRotary", "LognQueries", "BatchedCache"]

_ROLES = ("query", "key", "value")


class Rotary:
    """A rotary layer with a KV cache (:func:`ropegeo.rotation.apply_rope`'s settings), correct unless a
    subclass overrides one step.

    ``prefill(keys, values)`` starts a cache holding the prompt at positions ``0 .. n-1``;
    ``decode_step(q, k, v)`` places the next token after the cache and returns ``(rotated q, cached
    keys, cached values)``; values (``role="value"``) pass through.
    """

    defect = None

    def __init__(self, head_dim: int = 64, base: float = 10_000.0, pairing: str = "interleaved",
                 rotary_dim: int | None = None, scale: float = 1.0, phase_dtype: str = "float64"):
        self.head_dim, self.rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
        self.base = v.base(base)
        self.pairing = v.pairing(pairing)
        self.scale = v.real("scale", scale, greater_than=0.0)
        v.float_dtype(phase_dtype, "phase_dtype")
        self.phase_dtype = phase_dtype
        self._keys = np.zeros((0, self.head_dim))
        self._values = np.zeros((0, self.head_dim))

    # -- the pieces a defect may change
    def _rotate(self, x, positions, role):
        if role == "value":
            return np.array(x, dtype=np.result_type(x, np.float32), copy=True)
        return apply_rope(x, positions, base=self.base, pairing=self.pairing, rotary_dim=self.rotary_dim,
                          scale=self.scale, phase_dtype=self.phase_dtype)

    def _next_position(self) -> int:
        return self._keys.shape[0]

    # -- the protocols
    def _check(self, x, name="x"):
        x = v.finite_array(name, x, dtype=None)
        if x.ndim == 0 or x.shape[-1] != self.head_dim:
            raise ValueError(f"{name} must have last axis head_dim={self.head_dim}, got shape {x.shape}")
        return x

    def __call__(self, x, positions, role: str = "query"):
        """Rotate queries or keys (values pass through); see the class notes."""
        if role not in _ROLES:
            raise ValueError(f"role must be one of {', '.join(map(repr, _ROLES))}, got {role!r}")
        return self._rotate(self._check(x), positions, role)

    def prefill(self, keys, values) -> None:
        """Start a new cache with the prompt's raw keys and values, shape ``(n, head_dim)``."""
        keys, values = self._check(keys, "keys"), self._check(values, "values")
        if keys.ndim != 2 or keys.shape != values.shape:
            raise ValueError(f"keys and values must both have shape (n, {self.head_dim}), got {keys.shape} and {values.shape}")
        pos = np.arange(keys.shape[0])
        self._keys = np.asarray(self._rotate(keys, pos, "key"), dtype=np.float64)
        self._values = np.asarray(self._rotate(values, pos, "value"), dtype=np.float64)

    def decode_step(self, query, key, value):
        """Append the next token's key and value; return (rotated query, cached keys, cached values)."""
        q, k, val = (self._check(a, n) for a, n in ((query, "query"), (key, "key"), (value, "value")))
        if q.shape != (self.head_dim,) or k.shape != q.shape or val.shape != q.shape:
            raise ValueError(f"query, key and value must each have shape ({self.head_dim},)")
        p = self._next_position()
        qr, kr, vr = (np.asarray(self._rotate(a[None], [p], role), dtype=np.float64)[0]
                      for a, role in zip((q, k, val), _ROLES))
        self._keys = np.vstack([self._keys, kr])
        self._values = np.vstack([self._values, vr])
        return qr, self._keys.copy(), self._values.copy()

    def __repr__(self) -> str:
        kind = type(self).__name__
        return (f"{kind}(head_dim={self.head_dim}, base={self.base:g}, pairing={self.pairing!r}, "
                f"rotary_dim={self.rotary_dim}, scale={self.scale:g}, phase_dtype={self.phase_dtype!r})")


class QueryRestart(Rotary):
    """Decoding forgets the cache: the new token's position ids restart at 0."""

    def _next_position(self) -> int:
        return 0


class CacheOffByOne(Rotary):
    """Decoding places the new token at ``len(cache) + 1`` instead of ``len(cache)``."""

    def _next_position(self) -> int:
        return self._keys.shape[0] + 1


class ScaledQueries(Rotary):
    """A position scaling ``query_scale`` applied to queries only; keys (and the cache) keep scale 1."""

    def __init__(self, *args, query_scale: float = 0.5, **kwargs):
        super().__init__(*args, **kwargs)
        self.query_scale = v.real("query_scale", query_scale, greater_than=0.0)

    def _rotate(self, x, positions, role):
        if role == "query":
            return apply_rope(x, positions, base=self.base, pairing=self.pairing, rotary_dim=self.rotary_dim,
                              scale=self.scale * self.query_scale, phase_dtype=self.phase_dtype)
        return super()._rotate(x, positions, role)


class MisslicedPartial(Rotary):
    """Partial rotary with the slices swapped: the trailing ``rotary_dim`` coordinates rotate."""

    def _rotate(self, x, positions, role):
        if role == "value":
            return super()._rotate(x, positions, role)
        x = np.asarray(x, dtype=np.float64)
        r, d = self.rotary_dim, self.head_dim
        out = x.copy()
        out[..., d - r:] = apply_rope(x[..., d - r:], positions, base=self.base, pairing=self.pairing,
                                      phase_dtype=self.phase_dtype, scale=self.scale)
        return out


class RotatedValues(Rotary):
    """Values are rotated by position exactly as keys are."""

    def _rotate(self, x, positions, role):
        return super()._rotate(x, positions, "key" if role == "value" else role)


class LognQueries(Rotary):
    """Qwen's logn attention folded into the rotary code: a query at 0-based position ``p`` with
    ``p + 1 > length`` is multiplied by ``log(p + 1) / log(length)`` (Qwen-7B's ``logn_list``,
    ``seq_length`` 8,192); keys, values and shorter positions are as in :class:`Rotary`."""

    def __init__(self, *args, length: int = 8192, **kwargs):
        super().__init__(*args, **kwargs)
        self.length = v.integer("length", length, minimum=2)

    def _rotate(self, x, positions, role):
        out = super()._rotate(x, positions, role)
        if role != "query":
            return out
        n = np.asarray(positions, dtype=np.float64) + 1.0
        return out * np.where(n > self.length, np.log(np.maximum(n, 1.0)) / np.log(self.length), 1.0)[..., None]


class BatchedCache(Rotary):
    """``decode_step`` returns the cached keys and values with a leading batch axis, ``(1, n, head_dim)``,
    as a cache layer stores them: the calling contract asks for ``(n, head_dim)``."""

    def decode_step(self, query, key, value):
        q, keys, values = super().decode_step(query, key, value)
        return q, keys[None], values[None]


class PositionDefect(Rotary):
    """What a broken integration does to position ids before an otherwise correct rotation.

    ``mode``: ``"wrapped"`` (a table of ``size`` rows indexed modulo its size), ``"clamped"`` (at
    ``size - 1``), ``"int8"``, ``"ignored"`` (slot indices), ``"origin"`` (shifted by ``size``),
    ``"first-row"`` (a batch read through its first row), ``"start"`` (only the first id read) or
    ``"bfloat16"`` (ids built in the data's bfloat16, as ``arange(seq, dtype=x.dtype)`` does),
    ``"nonnegative"`` (negative ids clamped to 0, a left-padding guard) or ``"stale-block"`` (the 256
    table rows from ``size`` on hold the previous row's angles: built to show what ``composition`` sees alone).
    """

    _MODES = ("wrapped", "clamped", "int8", "ignored", "origin", "first-row", "start", "bfloat16", "nonnegative",
              "stale-block")

    def __init__(self, *args, mode: str = "wrapped", size: int = 4096, **kwargs):
        super().__init__(*args, **kwargs)
        if mode not in self._MODES:
            raise ValueError(f"mode must be one of {', '.join(self._MODES)}, got {mode!r}")
        self.mode, self.size = mode, v.integer("size", size, minimum=-(2**20), maximum=2**40)

    def _ids(self, positions):
        p = np.asarray(positions, dtype=np.int64)
        if self.mode == "wrapped":
            return p % self.size
        if self.mode == "clamped":
            return np.minimum(p, self.size - 1)
        if self.mode == "int8":
            return p.astype(np.int8).astype(np.int64)
        if self.mode == "ignored":
            return np.broadcast_to(np.arange(p.shape[-1]), p.shape) if p.ndim else np.zeros_like(p)
        if self.mode == "origin":
            return p + self.size
        if self.mode == "start":
            return p[..., :1] + np.arange(p.shape[-1]) if p.ndim else p
        if self.mode == "bfloat16":
            return p.astype(ml_dtypes.bfloat16).astype(np.float64)
        if self.mode == "nonnegative":
            return np.maximum(p, 0)
        if self.mode == "stale-block":
            return np.where((p >= self.size) & (p < self.size + 256), p - 1, p)
        return np.broadcast_to(p.reshape(-1, p.shape[-1])[0], p.shape) if p.ndim > 1 else p

    def _rotate(self, x, positions, role):
        return super()._rotate(x, self._ids(positions), role)


class ServedRotary(Rotary):
    """A correct rotary layer served in a low-precision ``data_dtype``, as models are deployed.

    Angles are formed in ``phase_dtype`` (float32 unless given); cos, sin and the vectors are cast to
    ``data_dtype`` and rotated there. These break it: ``variant`` ``"mirrored"`` (sin negated),
    ``"odd-mirrored"`` (on odd pairs), ``"scaled"`` (cos and sin times ``gain``), ``"reversed"`` (the
    frequency table reversed); ``inv_freq_dtype`` (the frequencies rounded, as
    ``model.to(torch.bfloat16)`` does to the buffer); ``table_dtype`` (cos and sin rounded to it
    first); ``still`` (the last ``still`` pairs at position id 0).
    """

    _VARIANTS = (None, "mirrored", "odd-mirrored", "scaled", "reversed")

    def __init__(self, *args, data_dtype: str = "bfloat16", variant: str | None = None, gain: float = 1.2,
                 inv_freq_dtype: str | None = None, table_dtype: str | None = None, still: int = 0, **kwargs):
        kwargs.setdefault("phase_dtype", "float32")
        super().__init__(*args, **kwargs)
        self.data = _DATA[data_dtype]
        if variant not in self._VARIANTS:
            raise ValueError(f"variant must be one of {', '.join(map(repr, self._VARIANTS))}, got {variant!r}")
        for name, value in (("inv_freq_dtype", inv_freq_dtype), ("table_dtype", table_dtype)):
            if value is not None and value not in _DATA:
                raise ValueError(f"{name} must be None or one of {', '.join(_DATA)}, got {value!r}")
        self.variant, self.gain = variant, v.real("gain", gain, greater_than=0.0)
        self.inv_freq_dtype, self.table_dtype = inv_freq_dtype, table_dtype
        self.still = v.integer("still", still, minimum=0, maximum=self.rotary_dim // 2)

    def _rotate(self, x, positions, role):
        x = np.asarray(x, dtype=np.float64).astype(self.data)
        if role == "value":
            return x
        r, ph = self.rotary_dim, np.float64 if self.phase_dtype == "float64" else np.float32
        theta = (self.base ** (-np.arange(0, r, 2, dtype=ph) / ph(r))).astype(ph)
        if self.inv_freq_dtype:
            theta = theta.astype(_DATA[self.inv_freq_dtype]).astype(ph)
        if self.variant == "reversed":
            theta = theta[::-1]
        ang = np.asarray(positions, dtype=ph)[..., None] * (theta * ph(self.scale))
        if self.still:
            ang[..., r // 2 - self.still:] = 0.0
        gain = self.gain if self.variant == "scaled" else 1.0
        sign = {"mirrored": -1.0, "odd-mirrored": np.where(np.arange(r // 2) % 2, -1.0, 1.0)}.get(self.variant, 1.0)
        c, sn = np.cos(ang) * gain, np.sin(ang) * gain * sign
        if self.table_dtype:
            c, sn = (t.astype(_DATA[self.table_dtype]) for t in (c, sn))
        c, sn = c.astype(self.data), sn.astype(self.data)
        a, b = pair_indices(r, self.pairing)
        out = x.copy()
        out[..., a] = x[..., a] * c - x[..., b] * sn
        out[..., b] = x[..., a] * sn + x[..., b] * c
        return out


_DATA = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float32": np.float32, "float64": np.float64}


@dataclass(frozen=True)
class CatalogueEntry:
    """One implementation (``impl``, a fresh :class:`Rotary`) with its declaration.

    ``declared``: keyword arguments of :func:`ropegeo.gates.a.gate.gate_a`; ``manifest``: the
    :class:`ropegeo.models.manifest.RopeManifest` fields of what the code *actually* does (after a
    12-token prompt); ``check``: the Gate A check that must flag it (``None`` when correct), with
    ``keyword`` in its diagnosis and ``defect`` its class (:data:`ropegeo.gates.verdicts.DEFECT_CLASSES`).
    """

    name: str
    title: str
    impl: Rotary
    declared: dict
    manifest: dict
    check: str | None = None
    keyword: str | None = None
    extra: dict = field(default_factory=dict)
    defect: str | None = None

    @property
    def broken(self) -> bool:
        return self.check is not None


def _build(head_dim: int = 64) -> dict[str, CatalogueEntry]:
    d = head_dim
    h = d // 2
    base_m = dict(head_dim=d, base=10_000.0, rotary_dim=d, pairing="interleaved", position_id_policy="kv-cache",
                  cache_offset=12, phase_dtype="float64")

    def m(**kw):
        return base_m | kw

    entries = [
        CatalogueEntry("interleaved", "correct, interleaved pairs (2i, 2i+1)", Rotary(d),
                       dict(head_dim=d, pairing="interleaved"), m()),
        CatalogueEntry("half", "correct, half-split pairs (i, i+d/2)", Rotary(d, pairing="half"),
                       dict(head_dim=d, pairing="half"), m(pairing="half")),
        CatalogueEntry("partial", f"correct partial rotary: {h} of {d} coordinates rotate (half-split)",
                       Rotary(d, pairing="half", rotary_dim=h),
                       dict(head_dim=d, pairing="half", rotary_dim=h), m(pairing="half", rotary_dim=h)),
        CatalogueEntry("interpolated", "correct, positions interpolated by 1/4 on both sides",
                       Rotary(d, scale=0.25), dict(head_dim=d, scale=0.25),
                       m(scaling={"rule": "linear", "factor": 4.0}), extra={"scale": 0.25}),
        CatalogueEntry("mixed-pairing", "the half-split helper applied to a model declared interleaved",
                       Rotary(d, pairing="half"), dict(head_dim=d, pairing="interleaved"), m(pairing="half"),
                       "layout", "half-split layout, while the declared convention is interleaved"),
        CatalogueEntry("query-restart", "decoding restarts the new token's position at 0",
                       QueryRestart(d), dict(head_dim=d), m(cache_offset=0),
                       "decoding", "restarts at the origin"),
        CatalogueEntry("cache-off-by-one", "decoding places the new token one past the cache length",
                       CacheOffByOne(d), dict(head_dim=d), m(cache_offset=13),
                       "decoding", "off-by-+1 cache offset"),
        CatalogueEntry("scaled-queries", "a position scaling of 1/2 applied to queries, not to cached keys",
                       ScaledQueries(d, query_scale=0.5), dict(head_dim=d),
                       m(scaling={"rule": "linear", "factor": 2.0}), "roles",
                       "is applied to queries but not to keys", extra={"query_scale": 0.5}),
        CatalogueEntry("bfloat16-angles", "the angle table is formed in bfloat16",
                       Rotary(d, phase_dtype="bfloat16"), dict(head_dim=d), m(phase_dtype="bfloat16"),
                       "precision", "formed in bfloat16"),
        CatalogueEntry("wrong-base", "base 10,000 used where the configuration declares 500,000",
                       Rotary(d, base=10_000.0), dict(head_dim=d, base=500_000.0), m(),
                       "frequencies", "declared base is 500,000"),
        CatalogueEntry("missliced-partial", f"partial rotary that rotates the trailing {h} coordinates",
                       MisslicedPartial(d, pairing="half", rotary_dim=h),
                       dict(head_dim=d, pairing="half", rotary_dim=h), m(pairing="half", rotary_dim=h),
                       "layout", "wrong end of the head"),
        CatalogueEntry("rotated-values", "values are rotated by position like keys",
                       RotatedValues(d), dict(head_dim=d), m(), "values", "values are rotated by position"),
    ]
    return {e.name: e for e in entries}


CATALOGUE: dict[str, CatalogueEntry] = _build()


def _fresh(table: dict, build, name: str, head_dim: int) -> CatalogueEntry:
    if not isinstance(name, str) or name not in table:
        raise ValueError(f"name must be one of {', '.join(table)}, got {name!r}")
    head_dim = v.head_dim(head_dim, maximum=v.MAX_HEAD_DIM)
    if head_dim < 4 or head_dim % 4:
        raise ValueError(f"head_dim must be a multiple of 4 (partial rotary takes half of it), got {head_dim}")
    return build(head_dim)[name]


def entry(name: str, head_dim: int = 64) -> CatalogueEntry:
    """A fresh :data:`CATALOGUE` entry (an empty cache); ``ValueError`` for an unknown name or a head width
    not a multiple of 4."""
    return _fresh(CATALOGUE, _build, name, head_dim)


def correct_entries() -> list[str]:
    """Names of the correct implementations."""
    return [n for n, e in CATALOGUE.items() if not e.broken]


def broken_entries() -> list[str]:
    """Names of the broken implementations."""
    return [n for n, e in CATALOGUE.items() if e.broken]


def attention_comparison(name: str, *, prompt: int = 300, head_dim: int = 64, seed: int = 0) -> dict:
    """One decoding step of an entry against a correct :class:`Rotary` built from its declaration.

    Both prefill ``prompt`` random keys and values (``seed``), decode one more token and attend from
    it to the whole cache: ``scores``, ``reference_scores`` (over ``sqrt(head_dim)``), ``output``,
    ``reference_output``, ``score_error`` (largest absolute difference) and ``output_error``
    (relative norm).
    """
    prompt = v.integer("prompt", prompt, minimum=1, maximum=8192)
    head_dim = v.integer("head_dim", head_dim, maximum=512)
    seed = v.integer("seed", seed, minimum=0)
    e = entry(name, head_dim)
    decl = dict(e.declared)
    decl.pop("head_dim", None)
    ref = Rotary(head_dim, **decl)
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.normal(size=(prompt + 1, head_dim)) for _ in range(3))
    res = {}
    for tag, impl in (("", e.impl), ("reference_", ref)):
        impl.prefill(K[:prompt], V[:prompt])
        q, kc, vc = impl.decode_step(Q[prompt], K[prompt], V[prompt])
        s = kc @ q / np.sqrt(head_dim)
        res[tag + "scores"] = s
        res[tag + "output"] = softmax(s) @ vc
    res["score_error"] = float(np.max(np.abs(res["scores"] - res["reference_scores"])))
    res["output_error"] = float(np.linalg.norm(res["output"] - res["reference_output"])
                                / np.linalg.norm(res["reference_output"]))
    return res


# ------------------------------------------------------------------------- position-id policies
POSITION_POLICIES = ("contiguous", "left-padded", "left-padded-naive", "packed-reset", "packed-continuous")


def position_ids(policy: str, lengths, *, pad: int = 0) -> np.ndarray:
    """The position id (int64) of every slot of one batch row under a position-id policy.

    ``lengths``: the sequence's length or each packed document's (at most 65,536 slots with ``pad``).
    ``"left-padded"`` gives the ``pad`` slots id ``-1`` and counts from the mask; ``"left-padded-naive"``
    counts slots; ``"packed-reset"`` restarts at 0 per document; ``"packed-continuous"`` runs on.
    """
    if policy not in POSITION_POLICIES:
        raise ValueError(f"policy must be one of {', '.join(map(repr, POSITION_POLICIES))}, got {policy!r}")
    try:
        lens = np.atleast_1d(np.asarray(lengths))
    except (TypeError, ValueError):
        lens = np.empty(0)
    if lens.ndim != 1 or lens.size == 0 or not np.issubdtype(lens.dtype, np.integer) or np.any(lens < 1):
        raise ValueError(f"lengths must be a positive integer or a non-empty list of them, got {lengths!r}")
    if np.any(lens > 65_536):  # checked before summing, which could wrap around in int64
        raise ValueError(f"each length must be at most 65,536 slots, got {int(lens.max()):,}")
    pad = v.integer("pad", pad, minimum=0, maximum=65_536)
    total = sum(int(n) for n in lens) + pad
    if total > 65_536:
        raise ValueError(f"pad + sum(lengths) must be at most 65,536 slots, got {total:,}")
    if pad and not policy.startswith("left-padded"):
        raise ValueError(f"pad is only meaningful for the left-padded policies, not {policy!r}")
    if policy in ("contiguous", "packed-continuous", "left-padded-naive"):
        return np.arange(total, dtype=np.int64)
    if policy == "left-padded":
        return np.concatenate([np.full(pad, -1, dtype=np.int64), np.arange(total - pad, dtype=np.int64)])
    return np.concatenate([np.arange(n, dtype=np.int64) for n in lens])


# ------------------------------------------------------------------------- the chapter's measurements
def mixing_summary(head_dim: int = 64, *, samples: int = 400, max_position: int = 512, seed: int = 0) -> dict:
    """What rotating interleaved-trained vectors with the half-split helper does.

    Draws ``Q, K = rng.normal(size=(2, samples, head_dim))``, then ``m, n`` below ``max_position``
    (``default_rng(seed)``). ``norm_change``: largest ``| |R'x| / |Rx| - 1 |``;
    ``score_change_median``, ``score_change_max``: ``|s' - s| / (|q| |k|)``; ``equal_position_change``:
    the same at ``m = n``; ``pairs`` and ``pairs_intact`` (still rotated as one).
    """
    d = v.head_dim(head_dim)
    v.integer("head_dim", d, minimum=4, maximum=512)
    samples = v.integer("samples", samples, minimum=1, maximum=100_000)
    max_position = v.integer("max_position", max_position, minimum=1, maximum=10**7)
    rng = np.random.default_rng(v.integer("seed", seed, minimum=0))
    Q, K = rng.normal(size=(2, samples, d))
    m, n = rng.integers(0, max_position, size=(2, samples))
    norms = np.linalg.norm(Q, axis=-1) * np.linalg.norm(K, axis=-1)
    right = np.sum(apply_rope(Q, m) * apply_rope(K, n), axis=-1)
    mixed = np.sum(apply_rope(Q, m, pairing="half") * apply_rope(K, n, pairing="half"), axis=-1)
    change = np.abs(mixed - right) / norms
    ratio = np.linalg.norm(apply_rope(Q, m, pairing="half"), axis=-1) / np.linalg.norm(apply_rope(Q, m), axis=-1)
    same_r = np.sum(apply_rope(Q, m) * apply_rope(K, m), axis=-1)
    same_m = np.sum(apply_rope(Q, m, pairing="half") * apply_rope(K, m, pairing="half"), axis=-1)

    inter = set(zip(*(a.tolist() for a in pair_indices(d, "interleaved"))))
    half = set(zip(*(a.tolist() for a in pair_indices(d, "half"))))
    return {"norm_change": float(np.max(np.abs(ratio - 1.0))), "score_change_median": float(np.median(change)),
            "score_change_max": float(np.max(change)),
            "equal_position_change": float(np.max(np.abs(same_m - same_r) / norms)), "pairs": d // 2,
            "pairs_intact": len(inter & half)}


def shift_score_change(name: str = "interleaved", shift: int = 1000, *, side: str = "both", head_dim: int = 64,
                 samples: int = 64, max_position: int = 512, seed: int = 0) -> float:
    """``max |s' - s| / (|q| |k|)`` when positions move by ``shift`` on both sides or (``side="query"``) the
    query's only.

    Draws ``Q, K`` then ``m, n`` below ``max_position`` from ``default_rng(seed)`` and rotates them
    with the catalogue entry's implementation.
    """
    if side not in ("both", "query"):
        raise ValueError(f"side must be 'both' or 'query', got {side!r}")
    shift = v.integer("shift", shift, minimum=-10**7, maximum=10**7)
    samples = v.integer("samples", samples, minimum=1, maximum=100_000)
    max_position = v.integer("max_position", max_position, minimum=1, maximum=10**7)
    head_dim = v.head_dim(head_dim, maximum=v.MAX_HEAD_DIM)
    impl = entry(name, head_dim).impl
    if samples * head_dim > 2**23:
        raise ValueError(f"samples * head_dim must be at most {2**23:,} (64 MiB per array), got {samples * head_dim:,}")
    rng = np.random.default_rng(v.integer("seed", seed, minimum=0))
    Q, K = rng.normal(size=(2, samples, head_dim))
    m, n = rng.integers(0, max_position, size=(2, samples))
    norms = np.linalg.norm(Q, axis=-1) * np.linalg.norm(K, axis=-1)
    s0 = np.sum(impl(Q, m, role="query") * impl(K, n, role="key"), axis=-1)
    dn = shift if side == "both" else 0
    s1 = np.sum(impl(Q, m + shift, role="query") * impl(K, n + dn, role="key"), axis=-1)
    return float(np.max(np.abs(s1 - s0) / norms))


def packed_score_change(documents=(40, 25, 35), *, head_dim: int = 64, seed: int = 0) -> float:
    """Largest ``|s_continuous - s_reset| / (|q| |k|)`` of a within-document score between
    ``"packed-reset"`` and ``"packed-continuous"`` ids (``Q, K`` drawn from ``default_rng(seed)``).
    """
    reset = position_ids("packed-reset", documents)
    cont = position_ids("packed-continuous", documents)
    lengths = [int(n) for n in np.atleast_1d(documents)]
    if max(lengths) > 4096:
        raise ValueError(f"each document must be at most 4,096 tokens here (its scores form a square), "
                         f"got {max(lengths):,}")
    d = v.head_dim(head_dim, maximum=v.MAX_HEAD_DIM)
    rng = np.random.default_rng(v.integer("seed", seed, minimum=0))
    Q, K = rng.normal(size=(2, reset.size, d))
    worst, start = 0.0, 0
    for n in lengths:  # scores only inside each document (a block-diagonal mask)
        sl = slice(start, start + n)
        q, k = Q[sl], K[sl]
        norms = np.linalg.norm(q, axis=-1)[:, None] * np.linalg.norm(k, axis=-1)[None, :]
        s_r = apply_rope(q, reset[sl]) @ apply_rope(k, reset[sl]).T
        s_c = apply_rope(q, cont[sl]) @ apply_rope(k, cont[sl]).T
        worst = max(worst, float(np.max(np.abs(s_c - s_r) / norms)))
        start += n
    return worst


def partial_score_parts(head_dim: int = 64, rotary_dim: int = 16, *, span: int = 256, seed: int = 0):
    """``delta`` (``-span .. span``) and the partial-rotary score of seeded ``q`` (at 0) and ``k`` (at ``delta``),
    summed over the rotating and over the pass-through coordinates (half-split, base 10,000).
    """
    d, r = resolve_rotary_dim(head_dim, rotary_dim)
    span = v.integer("span", span, minimum=1, maximum=100_000)
    rng = np.random.default_rng(v.integer("seed", seed, minimum=0))
    q, k = rng.normal(size=(2, d))
    delta = np.arange(-span, span + 1)
    kr = apply_rope(np.broadcast_to(k, (delta.size, d)), delta, pairing="half", rotary_dim=r)
    return delta, kr[:, :r] @ q[:r], kr[:, r:] @ q[r:]


def manifest_replays(name: str, *, head_dim: int = 64, seed: int = 0) -> bool:
    """Whether an entry's manifest alone reproduces one decoding step of its code (12-token prompt, ``seed``).

    ``False``: the defect lies somewhere the manifest has no field for.
    """
    prompt = 12  # the catalogue's manifests state cache_offset for a 12-token prompt
    head_dim = v.head_dim(head_dim, maximum=v.MAX_HEAD_DIM)
    impl = entry(name, head_dim).impl
    m = RopeManifest(**CATALOGUE[name].manifest)
    x = np.random.default_rng(v.integer("seed", seed, minimum=0)).normal(size=(prompt + 1, head_dim))
    impl.prefill(x[:prompt], x[:prompt])
    q, keys, values = impl.decode_step(x[prompt], x[prompt], x[prompt])
    positions = np.r_[np.arange(prompt), m.cache_offset]
    ref = apply_rope(x, positions, theta=m.theta_at(), pairing=m.pairing, rotary_dim=m.rotary_dim,
                     phase_dtype=m.phase_dtype)
    return bool(np.allclose(q, ref[-1]) and np.allclose(keys, ref) and np.allclose(values, x))



# ------------------------------------------------------------------------- every defect class
def _defects(head_dim: int = 64) -> dict[str, CatalogueEntry]:
    d = head_dim
    decl = dict(head_dim=d)
    served = dict(head_dim=d, pairing="half")
    m = dict(head_dim=d, base=10_000.0, rotary_dim=d, pairing="interleaved", phase_dtype="float32")
    mh = dict(m, pairing="half")

    def bad(name, title, impl, check, keyword, defect, declared=decl, manifest=m):
        return CatalogueEntry(name, title, impl, dict(declared), dict(manifest), check, keyword, defect=defect)

    def srv(name, title, check, keyword, defect, data_dtype="float32", **kw):  # served half-split, declared so
        return bad(name, title, ServedRotary(d, pairing="half", data_dtype=data_dtype, **kw), check, keyword, defect,
                   declared=served, manifest=mh)

    entries = [
        CatalogueEntry("served-bfloat16", "correct, served in bfloat16 (angles in float32, cos/sin and vectors "
                       "cast to bfloat16)", ServedRotary(d, pairing="half", data_dtype="bfloat16"), dict(served),
                       dict(mh)),
        CatalogueEntry("served-float16", "correct, served in float16", ServedRotary(d, pairing="half",
                       data_dtype="float16"), dict(served), dict(mh)),
        bad("wrapped-table", "a cos/sin table of 4,096 rows indexed modulo its size",
            PositionDefect(d, mode="wrapped", size=4096), "context", "P mod 4,096", "position-id"),
        bad("clamped-table", "a cos/sin table of 8,192 rows indexed with a clamp",
            PositionDefect(d, mode="clamped", size=8192), "context", "rotated as 8,191", "position-id"),
        bad("int8-positions", "position ids stored in int8", PositionDefect(d, mode="int8"),
            "context", "8-bit integer", "position-id"),
        bad("bfloat16-position-ids", "position ids built in the data's bfloat16 (arange(seq, dtype=x.dtype))",
            PositionDefect(d, mode="bfloat16"), "context", "rounded to bfloat16", "position-id"),
        bad("ignored-positions", "each row rotated by its slot index, whatever ids it is given",
            PositionDefect(d, mode="ignored"), "context", "positions are ignored", "position-id"),
        bad("origin-off-by-two", "every position id shifted by 2", PositionDefect(d, mode="origin", size=2),
            "origin", "origin is off by +2", "position-id"),
        bad("start-position-only", "only the first id read, as the start of a contiguous run",
            PositionDefect(d, mode="start"), "context", "one contiguous run", "position-id"),
        bad("first-row-only", "a (batch, seq) position tensor read through its first row",
            PositionDefect(d, mode="first-row"), "batch", "first row's position ids", "position-id"),
        bad("float16-angles", "the angle table formed in float16", Rotary(d, phase_dtype="float16"),
            "precision", "formed in float16", "precision"),
        bad("undeclared-interpolation", "positions interpolated by 1/4 that the declaration does not state",
            Rotary(d, scale=0.25), "frequencies", "0.25 times the declared one", "frequency"),
        srv("reversed-frequencies", "the frequency table in reverse order (slowest pair first)", "frequencies",
            "ordering is reversed", "frequency", variant="reversed"),
        srv("mirrored", "sin enters with the other sign (served in bfloat16)", "frequencies",
            "relative law still holds", "convention", "bfloat16", variant="mirrored"),
        srv("scaled-table", "cos and sin multiplied by 1.2 (served in bfloat16)", "norm", "norm ratio up to 1.2",
            "magnitude", "bfloat16", variant="scaled"),
        # issue 35: what the audited code must not excuse, and what Gate A must name as itself
        bad("scaled-table-float64", "cos and sin multiplied by 1.01, all in float64",
            ServedRotary(d, pairing="half", data_dtype="float64", phase_dtype="float64", variant="scaled", gain=1.01),
            "norm", "median 1.01", "magnitude", declared=served, manifest=dict(mh, phase_dtype="float64")),
        srv("bfloat16-table-float32-data", "cos and sin rounded to bfloat16, the vectors kept in float32",
            "precision", "rounds as bfloat16", "precision", table_dtype="bfloat16"),
        srv("bfloat16-inv-freq", "inv_freq held in bfloat16 (model.to(torch.bfloat16)), the rest in float32",
            "frequencies", "rounded to bfloat16", "frequency", inv_freq_dtype="bfloat16"),
        srv("float16-inv-freq", "inv_freq held in float16, the rest in float32", "frequencies",
            "rounded to float16", "frequency", inv_freq_dtype="float16"),
        srv("odd-pairs-mirrored", "sin enters with the other sign on odd pairs only", "frequencies",
            "rotate the opposite way", "convention", variant="odd-mirrored"),
        srv("pairs-never-turn", "the last quarter of the pairs never turn (a fourth position id left at 0)",
            "layout", "never turn", "layout", still=d // 8),
        *(bad(f"clamped-table-{n}", f"a cos/sin table of {n:,} rows indexed with a clamp",
              PositionDefect(d, mode="clamped", size=n), "context", f"table of {n:,} rows indexed with a clamp",
              "position-id") for n in (2048, 1024, 512)),
        # the algebra and the contract: what only shift, composition, inverse or a contract break can show
        bad("logn-queries", "queries from position 8,192 on multiplied by log_8192(p + 1) (Qwen's logn attention, "
            "undeclared: a feature, not a bug)", LognQueries(d), "shift", "score depends on absolute position", "algebra"),
        bad("stale-table-block", "the table rows 1,700..1,955 hold the angles of the row before (a block filled one "
            "row late)", PositionDefect(d, mode="stale-block", size=1700), "composition", "not additive in position",
            "algebra"),
        bad("negative-ids-clamped", "negative position ids clamped to 0 (a guard for left padding's -1)",
            PositionDefect(d, mode="nonnegative"), "inverse", "negative positions are not the inverse", "algebra"),
        bad("batched-cache", "decode_step returns the caches with a batch axis, (1, n, head_dim)", BatchedCache(d),
            "values", "decode_step returned shapes", "contract"),
    ]
    kinds = {"mixed-pairing": "layout", "missliced-partial": "layout", "query-restart": "decoding",
             "cache-off-by-one": "decoding", "scaled-queries": "roles", "bfloat16-angles": "precision",
             "wrong-base": "frequency", "rotated-values": "values"}
    catalogue = _build(d)
    return {e.name: e for e in entries} | {n: replace(catalogue[n], defect=k) for n, k in kinds.items()}


#: Gate A's test catalogue: correct implementations served in low precision, and at least one
#: broken implementation for every defect class, with the check that must lead and its words.
DEFECTS: dict[str, CatalogueEntry] = _defects()


def defect_entry(name: str, head_dim: int = 64) -> CatalogueEntry:
    """A fresh :data:`DEFECTS` entry, checked as :func:`entry` checks."""
    return _fresh(DEFECTS, _defects, name, head_dim)
