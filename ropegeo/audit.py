"""The geometry audit: what the bare frequency bank supplies before any learning.

:func:`geometry_audit` reports the exactness of the relative law on deterministic random vectors,
the adjacent similarity ``K(1)``, the most identity-like distant offsets, the slow pairs and the
angular step ratio under position interpolation. It says nothing about a trained model.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np

from . import _validate as v
from .frequencies import frequencies, resolve_rotary_dim, slow_pairs
from .geometry import adjacent_similarity, near_collisions
from .rotation import apply_rope

__all__ = ["GeometryAudit", "geometry_audit", "relative_law_error"]

_ERROR_DTYPES = ("float64", "float32")


def relative_law_error(
    head_dim: int,
    base: float = 10_000.0,
    *,
    position_pairs=None,
    pairing: str = "interleaved",
    rotary_dim: int | None = None,
    theta=None,
    scale: float = 1.0,
    dtype: str = "float64",
    seed: int = 7,
) -> float:
    """Largest violation of ``<R_m q, R_n k> = <q, R_{n-m} k>`` over some position pairs.

    Parameters
    ----------
    head_dim, base, pairing, rotary_dim, theta, scale
        The rotary operator, as in :func:`ropegeo.rotation.apply_rope`.
    position_pairs : sequence of (m, n), optional
        Query and key positions to test. Default: ``(2, 9), (31, 40), (97, 611), (1024, 4094)``.
    dtype : {"float64", "float32"}
        Precision of the vectors and of the rotated results.
    seed : int
        Seed of the standard normal query and key vectors.

    Returns
    -------
    float
        ``max |<R_m q, R_n k> - <q, R_{n-m} k>|`` over the pairs.
    """
    if dtype not in _ERROR_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(_ERROR_DTYPES)}, got {dtype!r}")
    head_dim = v.head_dim(head_dim)
    seed = v.integer("seed", seed, minimum=0)
    if position_pairs is None:
        position_pairs = [(2, 9), (31, 40), (97, 611), (1024, 4094)]
    pairs = v.finite_array("position_pairs", position_pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
        raise ValueError(f"position_pairs must be a non-empty list of (m, n) pairs, got shape {pairs.shape}")
    rng = np.random.default_rng(seed)
    q = rng.normal(size=head_dim).astype(dtype)
    k = rng.normal(size=head_dim).astype(dtype)
    kw = dict(base=base, pairing=pairing, rotary_dim=rotary_dim, theta=theta, scale=scale)
    m, n = pairs[:, 0], pairs[:, 1]
    qs = np.broadcast_to(q, (len(m), head_dim))
    ks = np.broadcast_to(k, (len(m), head_dim))
    direct = np.sum(apply_rope(qs, m, **kw) * apply_rope(ks, n, **kw), axis=-1)
    relative = np.sum(qs * apply_rope(ks, n - m, **kw), axis=-1)
    return float(np.max(np.abs(direct.astype(np.float64) - relative.astype(np.float64))))


@dataclass(frozen=True)
class GeometryAudit:
    """The result of :func:`geometry_audit`. ``to_dict`` / ``to_json`` give a plain form."""

    head_dim: int
    rotary_dim: int
    base: float
    train_length: int
    target_length: int
    interpolate: bool
    pairing: str
    dtype: str
    relative_law_error: float
    adjacent_similarity: float
    distant_offset: int
    distant_similarity: float
    pair_count: int
    slow_pairs: int
    angular_step_ratio: float
    search_range: tuple[int, int]
    top_offsets: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["search_range"] = list(self.search_range)
        return d

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """A short human-readable table."""
        lo, hi = self.search_range
        rows = [
            ("head dim / rotary dim", f"{self.head_dim} / {self.rotary_dim}"),
            ("base", f"{self.base:g}"),
            ("pairing, dtype", f"{self.pairing}, {self.dtype}"),
            ("train -> target length", f"{self.train_length:,} -> {self.target_length:,}"),
            ("interpolation", f"{'on' if self.interpolate else 'off'} (angular step ratio {self.angular_step_ratio:g})"),
            ("relative-law error", f"{self.relative_law_error:.3e}"),
            ("adjacent similarity K(1)", f"{self.adjacent_similarity:.6f}"),
            (f"most identity-like offset in [{lo:,}, {hi:,}]", f"{self.distant_offset:,} (K = {self.distant_similarity:.6f})"),
            ("slow pairs (< 1 turn in training)", f"{self.slow_pairs} of {self.pair_count}"),
        ]
        for extra in self.top_offsets[1:]:
            rows.append(("  next", f"{extra['offset']:,} (K = {extra['similarity']:.6f})"))
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)

    def __str__(self) -> str:
        return self.table()


def geometry_audit(
    head_dim: int = 128,
    base: float = 1e4,
    train_length: int = 4096,
    target_length: int = 32768,
    rotary_dim: int | None = None,
    *,
    interpolate: bool = False,
    search_start: int | None = None,
    search_limit: int = 100_000,
    pairing: str = "interleaved",
    dtype: str = "float64",
    top: int = 1,
    seed: int = 7,
) -> GeometryAudit:
    """Audit the bare geometry of a rotary frequency bank.

    Parameters
    ----------
    head_dim : int
        Width of one head (even, at least 2).
    base : float
        Frequency base (finite, greater than 1).
    train_length, target_length : int
        Context seen in training and the context to serve (each at least 2).
    interpolate : bool
        Apply linear position interpolation, scaling positions by
        ``min(1, train_length / target_length)``.
    search_start : int, optional
        First offset of the near-collision search (at least 2). Default: ``train_length``.
    search_limit : int
        Largest offset searched, whatever the target length (at least 2): the search covers
        ``[search_start, min(target_length, search_limit)]``.
    pairing : {"interleaved", "half"}
        Pairing convention used in the relative-law check.
    rotary_dim : int, optional
        Partial rotary dimension.
    dtype : {"float64", "float32"}
        Precision of the relative-law check.
    top : int
        How many distant offsets to report (at least 1).
    seed : int
        Seed of the random vectors in the relative-law check.

    Returns
    -------
    GeometryAudit

    Notes
    -----
    The relative law is tested at position pairs ``(2, 9), (31, 40), (97, 611)`` and
    ``(L // 4, L - 2)`` for the training length ``L``.
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    base = v.base(base)
    train_length = v.integer("train_length", train_length, minimum=2)
    target_length = v.integer("target_length", target_length, minimum=2)
    search_limit = v.integer("search_limit", search_limit, minimum=2)
    if search_start is not None:
        search_start = v.integer("search_start", search_start, minimum=2)
    top = v.integer("top", top, minimum=1)
    pairing = v.pairing(pairing)

    theta = frequencies(head_dim, base, rotary_dim)
    # interpolation squeezes the target window into the trained one; it never stretches
    squeeze = train_length / target_length
    scale = squeeze if (interpolate and squeeze < 1.0) else 1.0
    pairs = [(2, 9), (31, 40), (97, 611), (train_length // 4, train_length - 2)]
    err = relative_law_error(
        head_dim, base, position_pairs=pairs, pairing=pairing, rotary_dim=rotary_dim,
        scale=scale, dtype=dtype, seed=seed,
    )
    stop = min(target_length, search_limit)
    first = train_length if search_start is None else search_start
    start = min(stop, max(first, 2))
    hits = near_collisions(theta, start, stop, top=top, scale=scale)
    return GeometryAudit(
        head_dim=head_dim,
        rotary_dim=rotary_dim,
        base=base,
        train_length=train_length,
        target_length=target_length,
        interpolate=bool(interpolate),
        pairing=pairing,
        dtype=dtype,
        relative_law_error=err,
        adjacent_similarity=adjacent_similarity(theta, scale=scale),
        distant_offset=hits[0].offset,
        distant_similarity=hits[0].similarity,
        slow_pairs=slow_pairs(theta, train_length),
        pair_count=int(theta.size),
        angular_step_ratio=scale,
        search_range=(start, stop),
        top_offsets=[{"offset": h.offset, "similarity": h.similarity} for h in hits],
    )
