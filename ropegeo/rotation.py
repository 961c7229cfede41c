"""Applying rotary position embeddings to queries and keys.

Two layouts pair the coordinates of a head:

``"interleaved"``
    coordinates ``2i`` and ``2i + 1`` rotate together (RoFormer, GPT-J, Meta's original Llama code).
``"half"``
    coordinates ``i`` and ``i + r/2`` rotate together (the ``rotate_half`` layout of GPT-NeoX
    and Hugging Face transformers), where ``r`` is the rotary dimension.

Both rotate pair ``i`` by the angle ``position * scale * theta_i``. With partial rotary, only the
first ``r`` coordinates rotate and the rest pass through unchanged.
"""

from __future__ import annotations

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies, resolve_rotary_dim

__all__ = ["apply_rope", "rotate_pairs", "rotation_matrix", "pairing_permutation", "pair_indices", "phase_angles",
           "relative_law_error"]


def _resolve_theta(head_dim: int, base: float, rotary_dim: int | None, theta) -> tuple[np.ndarray, int]:
    """Frequencies and rotary dimension, from ``theta`` when given, else from the schedule."""
    if theta is None:
        head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
        return frequencies(head_dim, base, rotary_dim), rotary_dim
    theta = v.finite_array("theta", theta)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(f"theta must be a non-empty 1-D array of frequencies, got shape {theta.shape}")
    rot = 2 * theta.size
    if rotary_dim is not None and v.integer("rotary_dim", rotary_dim) != rot:
        raise ValueError(f"rotary_dim={rotary_dim} does not match theta, which has {theta.size} pairs (rotary_dim {rot})")
    if rot > head_dim:
        raise ValueError(f"theta has {theta.size} pairs, which needs head_dim >= {rot}, got head_dim={head_dim}")
    return theta, rot


def pair_indices(rotary_dim: int, pairing: str = "interleaved") -> tuple[np.ndarray, np.ndarray]:
    """Indices of the first and second coordinate of each rotary pair.

    Parameters
    ----------
    rotary_dim : int
        Number of rotating coordinates (even, at least 2).
    pairing : {"interleaved", "half"}
        The layout.

    Returns
    -------
    (first, second) : tuple of numpy.ndarray, each shape (rotary_dim // 2,)
        Pair ``i`` rotates coordinates ``first[i]`` and ``second[i]``.
    """
    rotary_dim = v.head_dim(rotary_dim, "rotary_dim")
    pairing = v.pairing(pairing)
    half = rotary_dim // 2
    if pairing == "interleaved":
        return np.arange(0, rotary_dim, 2), np.arange(1, rotary_dim, 2)
    return np.arange(half), np.arange(half, rotary_dim)


def pairing_permutation(
    head_dim: int, rotary_dim: int | None = None, source: str = "interleaved", target: str = "half"
) -> np.ndarray:
    """The coordinate permutation that carries one pairing layout onto another.

    If ``x`` is laid out in ``source`` convention, ``x[..., perm]`` holds the same pairs laid out in
    ``target`` convention, so that
    ``apply_rope(x, p, pairing=source)[..., perm] == apply_rope(x[..., perm], p, pairing=target)``.
    Pass-through coordinates (partial rotary) stay where they are.

    Returns
    -------
    numpy.ndarray of int, shape (head_dim,)
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    s1, s2 = pair_indices(rotary_dim, source)
    t1, t2 = pair_indices(rotary_dim, target)
    perm = np.arange(head_dim)
    perm[t1] = s1
    perm[t2] = s2
    return perm


def phase_angles(positions, theta, dtype="float64", *, scale: float = 1.0) -> np.ndarray:
    """Rotation angles ``positions[..., None] * scale * theta`` formed in a given floating dtype.

    The angle stages of a rotary layer (see :mod:`ropegeo.precision`), in order: the positions
    are cast to ``dtype``; when ``scale != 1`` they are multiplied there by ``scale`` (cast to
    ``dtype``); the frequencies are cast to ``dtype`` and the product is formed there. Hugging
    Face transformers 4.38 cast position ids to float32 and then divided them by a linear-scaling
    factor, as here; later versions fold the factor into the float32 inverse frequencies, which
    gives the same angles for a power-of-two factor. The result is returned as float64 holding
    exactly the values the chosen dtype produced.

    Parameters
    ----------
    positions : array_like
        Positions (any shape; finite).
    theta : array_like, shape (pairs,)
        Angular frequencies.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        Precision in which positions, scale, frequencies and their product are held.
    scale : float
        Position multiplier (finite).

    Returns
    -------
    numpy.ndarray, shape positions.shape + (pairs,), float64

    Raises
    ------
    ValueError
        For an unknown dtype, non-finite positions or scale, a theta that is not 1-D, or
        positions (times scale, times theta) beyond the range of ``dtype``.

    Examples
    --------
    >>> float(phase_angles([257.0], [1.0], "bfloat16")[0, 0])  # 257 is not a bfloat16 number
    256.0
    """
    dt = v.float_dtype(dtype)
    pos = v.finite_array("positions", positions)
    th = v.finite_array("theta", theta)
    scale = v.real("scale", scale)
    if th.ndim != 1:
        raise ValueError(f"theta must be 1-D, got shape {th.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        pos_dt = pos.astype(dt)  # stage 1: positions cast
        if scale != 1.0:
            pos_dt = (pos_dt * np.asarray(scale).astype(dt)).astype(dt)  # stage 2: scale applied
        if not np.all(np.isfinite(pos_dt.astype(np.float64))):
            what = "positions" if scale == 1.0 else "positions times scale"
            raise ValueError(f"{what} exceed the largest {dt.name} number; use a wider phase dtype")
        prod = pos_dt[..., None] * th.astype(dt)  # stage 3: angles formed
        out = prod.astype(np.float64)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"positions * theta overflows {dt.name}: use smaller positions or a wider phase dtype")
    return out


def apply_rope(
    x,
    positions,
    *,
    base: float = 10_000.0,
    rotary_dim: int | None = None,
    pairing: str = "interleaved",
    theta=None,
    scale: float = 1.0,
    phase_dtype: str = "float64",
) -> np.ndarray:
    """Rotate queries or keys by their positions.

    Parameters
    ----------
    x : array_like, shape (..., seq, head_dim)
        Queries or keys. A 1-D vector of shape (head_dim,) is accepted too.
    positions : array_like
        Position of each row: a scalar, shape (seq,), or any shape that broadcasts against
        ``x.shape[:-1]``. Positions are numbers, not indices: they may be offset, scaled or
        fractional, but must be finite.
    base : float
        Frequency base (ignored when ``theta`` is given).
    rotary_dim : int, optional
        How many leading coordinates rotate; the rest pass through. Defaults to the whole head,
        or to ``2 * len(theta)``.
    pairing : {"interleaved", "half"}
        Which coordinates rotate together (see the module docstring).
    theta : array_like, optional
        Explicit per-pair frequencies (for example from ``ropegeo.scaling``).
    scale : float
        Multiplies every position before rotating (position interpolation uses ``1/s``).
    phase_dtype : {"float64", "float32", "float16", "bfloat16"}
        Precision in which the angle table is formed (see :func:`phase_angles`); cosine and sine
        are then taken in float64.

    Returns
    -------
    numpy.ndarray, same shape as ``x``
        Floating input keeps its dtype; integer input gives float64. The rotation itself is
        computed in float64.

    Raises
    ------
    ValueError
        For a bad head dimension, base, pairing or rotary dimension, non-finite values, or
        positions that do not broadcast against ``x``.

    Examples
    --------
    Pair 0 turns by 1 radian per position, pair 1 by 0.01:

    >>> import numpy as np
    >>> q = np.array([1.0, 0.0, 1.0, 0.0])
    >>> apply_rope(q, 1, base=10_000.0).round(3).tolist()
    [0.54, 0.841, 1.0, 0.01]

    The score of two rotated vectors depends on their displacement only:

    >>> bool(np.isclose(apply_rope(q, 7) @ apply_rope(q, 5), apply_rope(q, 2) @ apply_rope(q, 0)))
    True
    """
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("x must have at least one axis (head_dim), got a scalar")
    out_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) or x.dtype.name == "bfloat16" else np.float64
    xf = v.finite_array("x", x)
    head_dim = xf.shape[-1]
    if head_dim % 2 == 1 or head_dim < 2:
        raise ValueError(f"the last axis of x (head_dim) must be even and at least 2, got {head_dim}")
    pairing = v.pairing(pairing)
    scale = v.real("scale", scale)
    theta, rot = _resolve_theta(head_dim, base, rotary_dim, theta)
    pos = v.finite_array("positions", positions)
    try:
        pos = np.broadcast_to(pos, xf.shape[:-1])
    except ValueError:
        raise ValueError(
            f"positions of shape {np.shape(positions)} do not broadcast against x.shape[:-1] = {xf.shape[:-1]}"
        ) from None
    angles = phase_angles(pos, theta, v.float_dtype(phase_dtype, "phase_dtype"), scale=scale)
    with np.errstate(over="ignore", invalid="ignore"):
        result = rotate_pairs(xf, np.cos(angles), np.sin(angles), pairing).astype(out_dtype, copy=False)
    if not np.all(np.isfinite(result.astype(np.float64, copy=False))):
        raise ValueError(f"x is too large to rotate in {np.dtype(out_dtype).name}: a rotated pair can grow by "
                         "sqrt(2) in one coordinate and overflows; scale x down or use a wider dtype")
    return result


def rotate_pairs(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, pairing: str = "interleaved") -> np.ndarray:
    """The rotation kernel of :func:`apply_rope`, without any check: for inner loops.

    Rotates pair ``i`` of ``x`` by the angle whose cosine and sine are ``cos[..., i]`` and
    ``sin[..., i]``; coordinates beyond ``2 * cos.shape[-1]`` pass through. The caller guarantees
    what :func:`apply_rope` checks: ``x`` is a float64 array of shape ``(..., head_dim)``,
    ``cos`` and ``sin`` broadcast against ``x.shape[:-1] + (pairs,)`` with ``2 * pairs <=
    head_dim``, and ``pairing`` is ``"interleaved"`` or ``"half"``. Validate once at the public
    entry (with :func:`apply_rope` or ``ropegeo._validate``), then call this in the loop.

    Returns
    -------
    numpy.ndarray, float64, shape ``x.shape`` (a new array).

    Examples
    --------
    >>> import numpy as np
    >>> rotate_pairs(np.array([1.0, 0.0]), np.array([0.0]), np.array([1.0])).tolist()
    [0.0, 1.0]
    """
    pairs = cos.shape[-1]
    if pairing == "interleaved":
        first, second = slice(0, 2 * pairs, 2), slice(1, 2 * pairs, 2)
    else:
        first, second = slice(0, pairs), slice(pairs, 2 * pairs)
    a, b = x[..., first], x[..., second]
    out = x.copy()
    out[..., first] = a * cos - b * sin
    out[..., second] = a * sin + b * cos
    return out


#: Largest head dimension for which a full ``head_dim x head_dim`` matrix is built (32 MiB).
MAX_MATRIX_DIM = 2048


def rotation_matrix(
    position: float,
    head_dim: int = 128,
    *,
    base: float = 10_000.0,
    rotary_dim: int | None = None,
    pairing: str = "interleaved",
    theta=None,
    scale: float = 1.0,
) -> np.ndarray:
    """The orthogonal matrix ``R`` with ``apply_rope(x, position) == R @ x``.

    Block diagonal in the pair coordinates: pair ``i`` carries the 2x2 rotation by
    ``position * scale * theta_i``; pass-through coordinates carry the identity.

    Returns
    -------
    numpy.ndarray, shape (head_dim, head_dim), float64
    """
    position = v.real("position", position)
    head_dim = v.head_dim(head_dim, maximum=MAX_MATRIX_DIM)
    eye = np.eye(head_dim)
    # columns of R are the images of the basis vectors
    return apply_rope(
        eye, position, base=base, rotary_dim=rotary_dim, pairing=pairing, theta=theta, scale=scale
    ).T


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
