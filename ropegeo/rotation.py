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
from ropegeo.frequencies import resolve_rotary_dim
from ropegeo.operator import MAX_MATRIX_DIM, RotaryOperator, phase_kernel, rotate_pairs

__all__ = ["apply_rope", "rotation_matrix", "pairing_permutation", "pair_indices", "phase_angles",
           "relative_law_error", "law_error"]


def pair_indices(rotary_dim: int, pairing: str = "interleaved") -> tuple[np.ndarray, np.ndarray]:
    """``(first, second)``: pair ``i`` rotates coordinates ``first[i]`` and ``second[i]``, each ``(rotary_dim // 2,)``."""
    rotary_dim = v.head_dim(rotary_dim, "rotary_dim")
    pairing = v.pairing(pairing)
    half = rotary_dim // 2
    if pairing == "interleaved":
        return np.arange(0, rotary_dim, 2), np.arange(1, rotary_dim, 2)
    return np.arange(half), np.arange(half, rotary_dim)


def pairing_permutation(
    head_dim: int, rotary_dim: int | None = None, source: str = "interleaved", target: str = "half"
) -> np.ndarray:
    """The coordinate permutation ``perm`` that carries one pairing layout onto another.

    ``apply_rope(x, p, pairing=source)[..., perm] == apply_rope(x[..., perm], p, pairing=target)``;
    pass-through coordinates stay where they are.

    Examples
    --------
    Interleaved pairs (0, 1), (2, 3) become the half-split pairs (0, 2), (1, 3):

    >>> pairing_permutation(4).tolist()
    [0, 2, 1, 3]
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    s1, s2 = pair_indices(rotary_dim, source)
    t1, t2 = pair_indices(rotary_dim, target)
    perm = np.arange(head_dim)
    perm[t1] = s1
    perm[t2] = s2
    return perm


def phase_angles(positions, theta, dtype="float64", *, scale: float = 1.0) -> np.ndarray:
    """Rotation angles ``positions[..., None] * scale * theta`` formed in ``dtype``, returned as float64.

    Positions are cast to ``dtype``, scaled there, and multiplied there by the frequencies cast
    to it (stages 1 to 3 of :mod:`ropegeo.precision`); ``ValueError`` beyond the dtype's range.

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
    return phase_kernel(pos, th, dt, scale)


def apply_rope(x, positions, *, operator: RotaryOperator | None = None, rotary_dim: int | None = None,
               base: float | None = None, pairing: str | None = None, theta=None, scale: float | None = None,
               phase_dtype: str | None = None) -> np.ndarray:
    """Rotate queries or keys ``(..., head_dim)`` by their positions (broadcast against ``x.shape[:-1]``).

    Positions are numbers within +-2**48 (multi-axis: a leading row per axis). The operator, or
    its fields as plain keywords (a keyword given with an operator must agree with it). Floating
    input keeps its dtype, integer input gives float64; the rotation is computed in float64.

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

    The same rotation from an operator built once:

    >>> from ropegeo.operator import RotaryOperator
    >>> op = RotaryOperator(head_dim=4)
    >>> bool(np.array_equal(apply_rope(q, 1, operator=op), apply_rope(q, 1)))
    True
    """
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("x must have at least one axis (head_dim), got a scalar")
    if operator is None and (x.shape[-1] % 2 == 1 or x.shape[-1] < 2):
        raise ValueError(f"the last axis of x (head_dim) must be even and at least 2, got {x.shape[-1]}")
    op = RotaryOperator.coerce(operator, head_dim=None if operator is not None else x.shape[-1], base=base,
                               rotary_dim=rotary_dim, pairing=pairing, theta=theta, scale=scale, phase_dtype=phase_dtype)
    return op.apply(x, positions)


def rotation_matrix(position: float, head_dim: int | None = None, *, operator: RotaryOperator | None = None,
                    base: float | None = None, rotary_dim: int | None = None, pairing: str | None = None, theta=None,
                    scale: float | None = None) -> np.ndarray:
    """The orthogonal ``(head_dim, head_dim)`` matrix ``R`` with ``apply_rope(x, position) == R @ x``.

    ``head_dim`` up to :data:`~ropegeo.operator.MAX_MATRIX_DIM` (default 128); the operator as in :func:`apply_rope`.

    Examples
    --------
    >>> import numpy as np
    >>> R = rotation_matrix(3.0, 8, pairing="half")
    >>> bool(np.allclose(R @ np.arange(8.0), apply_rope(np.arange(8.0), 3.0, pairing="half")))
    True
    """
    if head_dim is not None:
        head_dim = v.head_dim(head_dim, maximum=MAX_MATRIX_DIM)
    elif operator is None:
        head_dim = 128
    op = RotaryOperator.coerce(operator, head_dim=head_dim, base=base, rotary_dim=rotary_dim, pairing=pairing,
                               theta=theta, scale=scale)
    return op.matrix(position)


_ERROR_DTYPES = ("float64", "float32")
#: Query and key positions :func:`relative_law_error` tests by default.
DEFAULT_POSITION_PAIRS = ((2, 9), (31, 40), (97, 611), (1024, 4094))


def relative_law_error(head_dim: int | None = None, base: float | None = None, *,
                       operator: RotaryOperator | None = None, position_pairs=None, pairing: str | None = None,
                       rotary_dim: int | None = None, theta=None, scale: float | None = None, dtype: str = "float64",
                       seed: int = 7) -> float:
    """``max |<R_m q, R_n k> - <q, R_{n-m} k>|`` over position pairs ``(m, n)``, for seeded normal ``q``, ``k``.

    The operator as in :func:`apply_rope` (``head_dim`` required without one); ``dtype`` (float64
    or float32) is that of the vectors and the rotated results.

    Examples
    --------
    >>> relative_law_error(64) < 1e-9
    True
    """
    if dtype not in _ERROR_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(_ERROR_DTYPES)}, got {dtype!r}")
    if operator is None and head_dim is None:
        raise ValueError("head_dim is required (or give operator)")
    op = RotaryOperator.coerce(operator, head_dim=head_dim, base=base, pairing=pairing, rotary_dim=rotary_dim,
                               theta=theta, scale=scale)
    seed = v.integer("seed", seed, minimum=0)
    pairs = v.finite_array("position_pairs", DEFAULT_POSITION_PAIRS if position_pairs is None else position_pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
        raise ValueError(f"position_pairs must be a non-empty list of (m, n) pairs, got shape {pairs.shape}")
    return law_error(op, pairs, dtype, seed)


def law_error(op: RotaryOperator, pairs: np.ndarray, dtype: str, seed: int, *, seq_len: int | None = None,
              phase_dtype: str | None = None) -> float:
    """:func:`relative_law_error` without its checks; ``phase_dtype`` replaces the operator's."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=op.head_dim).astype(dtype)
    k = rng.normal(size=op.head_dim).astype(dtype)
    m, n = pairs[:, 0], pairs[:, 1]
    qs = np.broadcast_to(q, (len(m), op.head_dim))
    ks = np.broadcast_to(k, (len(m), op.head_dim))
    q64, k64 = qs.astype(np.float64), ks.astype(np.float64)

    def rot(x64, pos):  # as apply_rope: rotated in float64, returned in the vectors' dtype
        return op.finish(op.rotate(x64, pos, seq_len, phase_dtype), dtype)

    direct = np.sum(rot(q64, m) * rot(k64, n), axis=-1)
    relative = np.sum(qs * rot(k64, n - m), axis=-1)
    return float(np.max(np.abs(direct.astype(np.float64) - relative.astype(np.float64))))
