"""The bare positional geometry of a frequency bank.

With content stripped away and equal weight on every pair, comparing position 0 with offset
``delta`` gives the kernel ``K(delta) = mean_i cos(delta * theta_i)``. It is a diagnostic lens,
not a trained attention score: ``K(delta)`` near 1 means the rotation by ``delta`` is close to the
identity on this bank, so the offset looks like no offset at all.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import numpy as np

from ropegeo import _validate as v
from ropegeo.operator import RotaryOperator

__all__ = ["kernel", "adjacent_similarity", "near_collisions", "NearCollision"]

_BLOCK, _BATCH = 2048, 256  # offsets per block, blocks per batch: a few MiB whatever the range
_PROGRESS_WORK = 2_000_000_000  # offset-pairs beyond which a progress bar shows (a couple of seconds)
#: Largest search :func:`near_collisions` accepts, in offsets times pairs (about a minute on one core).
MAX_SEARCH_CELLS = 2**36
#: Largest offset (float64 holds every integer up to it exactly).
MAX_OFFSET = 2**53
#: Largest ``top`` of :func:`near_collisions`.
MAX_TOP = 10_000


def kernel(offsets, theta=None, *, operator: RotaryOperator | None = None, seq_len: int | None = None,
           scale: float | None = None, weights=None) -> np.ndarray:
    """The phase kernel ``K(delta) = sum_i w_i cos(delta * scale * theta_i)``, shape of ``offsets``, in [-1, 1].

    Offsets within +-2**48. ``theta``, or ``operator`` (its bank at ``seq_len`` and its scale,
    trusted; a ``scale`` given with it must agree). ``weights`` are normalised (default equal).

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> kernel([0, 1, 10], frequencies(8)).round(3).tolist()
    [1.0, 0.884, 0.424]
    """
    theta, scale = RotaryOperator.bank_of(theta, operator, seq_len=seq_len, scale=scale)
    w = v.pair_weights(weights, theta.size)
    d = v.finite_array("offsets", offsets)
    if d.size and float(np.abs(d).max()) > v.MAX_LENGTH:  # float64 phases beyond are rounding noise
        raise ValueError(f"offsets must lie within +-{v.MAX_LENGTH:,} (2**48), got {float(np.abs(d).max()):.6g}")
    flat = d.reshape(-1)
    if flat.size and not np.isfinite(float(np.abs(flat).max()) * abs(scale) * float(theta.max())):
        raise ValueError("offsets * scale * theta overflows: use smaller offsets or scale")
    out = np.empty(flat.size)
    step = max(1, (1 << 20) // theta.size)  # bound the temporary to about 8 MiB
    for s in range(0, flat.size, step):
        out[s : s + step] = np.cos(np.multiply.outer(flat[s : s + step] * scale, theta)) @ w
    return out.reshape(d.shape)


def adjacent_similarity(theta=None, *, operator: RotaryOperator | None = None, seq_len: int | None = None,
                        scale: float | None = None, weights=None) -> float:
    """``K(1)``: how alike two neighbouring positions look. Closer to 1 means coarser resolution.

    Arguments as in :func:`kernel`.

    Examples
    --------
    >>> from ropegeo.operator import RotaryOperator
    >>> round(adjacent_similarity(operator=RotaryOperator(head_dim=8)), 3)
    0.884
    """
    return float(kernel(1.0, theta, operator=operator, seq_len=seq_len, scale=scale, weights=weights))


@dataclass(frozen=True)
class NearCollision:
    """An offset whose rotation is close to the identity on a frequency bank.

    Examples
    --------
    >>> NearCollision(offset=6283, similarity=0.998)
    NearCollision(offset=6283, similarity=0.998)
    """

    offset: int
    similarity: float


def near_collisions(theta=None, start: int | None = None, stop: int | None = None, *,
                    operator: RotaryOperator | None = None, seq_len: int | None = None, top: int = 5,
                    scale: float | None = None, weights=None, progress: bool | None = None) -> list[NearCollision]:
    """The ``top`` integer offsets in ``[start, stop]`` with the largest kernel ``K``, largest first.

    Exact to about 1e-12, in a few MiB whatever the range. Other arguments as in :func:`kernel`; offsets up to ``2**53``, at most :data:`MAX_SEARCH_CELLS`
    offsets times pairs. ``progress``: a tqdm bar (``None``: for long searches, when tqdm is installed).

    Examples
    --------
    The two offsets between 100 and 10,000 that look most like offset 0 to a 16-wide head:

    >>> from ropegeo.frequencies import frequencies
    >>> [(c.offset, round(c.similarity, 3)) for c in near_collisions(frequencies(16), 100, 10_000, top=2)]
    [(182, 0.719), (195, 0.698)]
    """
    theta, scale = RotaryOperator.bank_of(theta, operator, seq_len=seq_len, scale=scale)
    w = v.pair_weights(weights, theta.size)
    if start is None or stop is None:
        raise ValueError("start and stop (the inclusive offset range) are required")
    start = v.integer("start", start, minimum=0, maximum=MAX_OFFSET)
    stop = v.integer("stop", stop, minimum=0, maximum=MAX_OFFSET)
    if stop < start:
        raise ValueError(f"the offset range is empty: stop={stop} is smaller than start={start}")
    top = v.integer("top", top, minimum=1, maximum=MAX_TOP)
    if progress is not None:
        progress = v.boolean("progress", progress)
    n = stop - start + 1
    if n * theta.size > MAX_SEARCH_CELLS:
        raise ValueError(f"the offset range [{start:,}, {stop:,}] is too long to search with {theta.size} pairs: "
                         f"at most {MAX_SEARCH_CELLS // theta.size:,} offsets (MAX_SEARCH_CELLS)")
    if not np.isfinite(stop * abs(scale) * float(theta.max())):
        raise ValueError("stop * scale * theta overflows: use a smaller scale or range")
    top = min(top, n)

    st = theta * scale
    j = np.arange(_BLOCK, dtype=np.float64)
    local = np.multiply.outer(j, st)  # (_BLOCK, pairs), angles of block-local steps
    # [cos | -sin] * w so that table @ [cos(a); sin(a)] gives K at a + j
    table = np.concatenate([np.cos(local) * w, -np.sin(local) * w], axis=1)
    del local

    n_blocks = -(-n // _BLOCK)
    if progress is None:  # a bar only where tqdm (an extra of ropegeo[book]) is installed
        progress = n * theta.size > _PROGRESS_WORK and importlib.util.find_spec("tqdm") is not None
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm  # optional: ropegeo[book]
        except ImportError as err:
            raise ValueError("progress=True needs tqdm (pip install 'ropegeo[book]' or tqdm)") from err

        bar = tqdm(total=n, desc="near-collision search", unit="offset", unit_scale=True)

    best_k = np.empty(0)
    best_off = np.empty(0, dtype=np.int64)
    for b0 in range(0, n_blocks, _BATCH):
        b1 = min(n_blocks, b0 + _BATCH)
        starts = start + _BLOCK * np.arange(b0, b1, dtype=np.int64)
        seed_angles = np.multiply.outer(starts.astype(np.float64), st)  # (blocks, pairs)
        seeds = np.concatenate([np.cos(seed_angles), np.sin(seed_angles)], axis=1)
        k = table @ seeds.T  # (_BLOCK, blocks): column c is block c
        offs = starts[None, :] + np.arange(_BLOCK, dtype=np.int64)[:, None]
        valid = offs <= stop
        k = k[valid]
        offs = offs[valid]
        if k.size > top:
            idx = np.argpartition(-k, top - 1)[:top]
            k, offs = k[idx], offs[idx]
        best_k = np.concatenate([best_k, k])
        best_off = np.concatenate([best_off, offs])
        if best_k.size > top:
            order = np.lexsort((best_off, -best_k))[:top]
            best_k, best_off = best_k[order], best_off[order]
        if bar is not None:
            bar.update(int(valid.sum()))
    if bar is not None:
        bar.close()
    order = np.lexsort((best_off, -best_k))
    return [NearCollision(int(best_off[i]), float(min(1.0, best_k[i]))) for i in order]

