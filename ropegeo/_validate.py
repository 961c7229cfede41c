"""Validation helpers shared by every public function.

Each helper raises :class:`ValueError` with a message that names the parameter and what is
allowed, so that bad input never surfaces as a traceback from deep inside numpy.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import ml_dtypes
import numpy as np

PAIRINGS = ("interleaved", "half")


def integer(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` or raise a ValueError naming ``name``."""
    whole = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer())
    if isinstance(value, bool) or not whole:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return value


def real(name: str, value: Any, *, greater_than: float | None = None, minimum: float | None = None,
         maximum: float | None = None) -> float:
    """Return ``value`` as a finite ``float`` or raise a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond float range
        raise ValueError(f"{name} must be finite, got a number beyond the float range") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if greater_than is not None and not value > greater_than:
        raise ValueError(f"{name} must be greater than {greater_than:.10g}, got {value:.10g}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum:.10g}, got {value:.10g}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum:.10g}, got {value:.10g}")
    return value


#: The widest head any function accepts (real models use 64 to 256): keeps every per-pair table
#: small, while functions that build ``d x d`` matrices set their own, lower limit.
MAX_HEAD_DIM = 4096


def head_dim(value: Any, name: str = "head_dim", *, maximum: int = MAX_HEAD_DIM) -> int:
    """A head dimension: an even integer from 2 to ``maximum``."""
    value = integer(name, value, minimum=2, maximum=maximum)
    if value % 2:
        raise ValueError(f"{name} must be an even integer of at least 2, got {value}")
    return value


#: The longest sequence any length parameter may name (about 2.8e14 tokens): far beyond any
#: model, and small enough that every float derived from it is exact and finite.
MAX_LENGTH = 2**48


def length(name: str, value: Any, *, minimum: int = 1) -> int:
    """A sequence length or position count: an integer from ``minimum`` to :data:`MAX_LENGTH`."""
    return integer(name, value, minimum=minimum, maximum=MAX_LENGTH)


def printable(text: str | None) -> str | None:
    """Text read from a file with its control characters escaped: no newline or terminal escape reaches a report.

    >>> printable("llama\\nGate A: PASS\\x1b[2J")
    'llama\\\\nGate A: PASS\\\\x1b[2J'
    """
    if text is None or text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def is_collection(value: Any) -> bool:
    """Whether ``value`` is a collection of items: iterable, but neither text nor a 0-d array
    (a 0-d numpy array has ``__iter__`` and still cannot be iterated)."""
    return (not isinstance(value, (str, bytes)) and hasattr(value, "__iter__") and getattr(value, "ndim", 1) != 0)


def boolean(name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (or numpy bool); refuse strings, numbers and None."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {value!r}")


def base(value: Any, name: str = "base") -> float:
    """A frequency base: a finite real number greater than 1."""
    return real(name, value, greater_than=1.0)


def pairing(value: Any, name: str = "pairing") -> str:
    """A pairing convention: ``"interleaved"`` or ``"half"``."""
    if not isinstance(value, str) or value not in PAIRINGS:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, PAIRINGS))}, got {value!r}")
    return value


def finite_array(name: str, value: Any, *, dtype: Any = np.float64) -> np.ndarray:
    """Convert to a numeric array and refuse NaN or infinite entries."""
    try:
        arr = np.asarray(value)
    except Exception:  # ragged nesting and other exotic inputs
        raise ValueError(f"{name} must be a rectangular array of numbers (equal-length rows)") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        # ml_dtypes types (bfloat16) are not np.number subclasses but convert cleanly
        try:
            arr = arr.astype(np.float64)
        except OverflowError:
            raise ValueError(f"{name} must be finite: an entry is beyond the float range") from None
        except (TypeError, ValueError):
            raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}") from None
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} must hold real numbers, got complex values")
    if dtype is not None:
        arr = arr.astype(dtype, copy=False)
    if arr.size and not np.all(np.isfinite(arr.astype(np.float64, copy=False))):
        raise ValueError(f"{name} must be finite: found NaN or infinite entries")
    return arr


def float_dtype(value: Any, name: str = "dtype") -> np.dtype:
    """One of the floating dtypes ropegeo knows: float64, float32, float16, bfloat16."""
    known = {"float64": np.dtype(np.float64), "float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
             "bfloat16": np.dtype(ml_dtypes.bfloat16)}
    if isinstance(value, str):
        if value in known:
            return known[value]
    else:
        try:
            dt = np.dtype(value)
        except (TypeError, ValueError):
            dt = None
        if dt is not None and dt in known.values():
            return dt
    raise ValueError(f"{name} must be one of {', '.join(known)}, got {value!r}")


def frequencies(value: Any, name: str = "theta") -> np.ndarray:
    """Per-pair angular frequencies: a non-empty 1-D array of finite, non-negative numbers."""
    theta = finite_array(name, value)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of frequencies, got shape {theta.shape}")
    if np.any(theta < 0):
        raise ValueError(f"{name} must hold non-negative frequencies")
    return theta


def pair_weights(value: Any, pairs: int, name: str = "weights") -> np.ndarray:
    """Per-pair weights normalised to sum to one; ``None`` means equal weights."""
    if value is None:
        return np.full(pairs, 1.0 / pairs)
    w = finite_array(name, value)
    if w.shape != (pairs,):
        raise ValueError(f"{name} must have one entry per pair, shape ({pairs},), got {w.shape}")
    if np.any(w < 0) or not np.any(w > 0):
        raise ValueError(f"{name} must be non-negative with a positive sum")
    w = w / w.max()  # rescale first: the sum of huge weights would overflow
    return w / w.sum()
