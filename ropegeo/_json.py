"""One JSON sanitiser for every report: plain Python values, with no NaN or infinity.

JSON has no NaN or infinity and no numpy types. :func:`plain` turns a report's ``to_dict()``
into plain Python (dicts, lists, ints, floats, strings, booleans, None): numpy scalars become
Python numbers, arrays and tuples become lists, and non-finite floats become ``None``.
:func:`dumps` is ``json.dumps`` of that, refusing anything left over (``allow_nan=False``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

__all__ = ["plain", "dumps"]


def plain(o: Any) -> Any:
    """A JSON-safe copy of ``o`` (see the module docstring); mappings keep their keys.

    Examples
    --------
    >>> plain({"x": np.float64(1.5), "y": [np.inf, np.int64(3)], "z": np.array([0.5, np.nan])})
    {'x': 1.5, 'y': [None, 3], 'z': [0.5, None]}
    """
    if isinstance(o, dict):
        return {k: plain(val) for k, val in o.items()}
    if isinstance(o, (list, tuple)):
        return [plain(val) for val in o]
    if isinstance(o, np.ndarray):
        return plain(o.tolist())
    if isinstance(o, (bool, np.bool_)):
        return bool(o)
    if isinstance(o, (int, np.integer)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        return float(o) if math.isfinite(o) else None
    return o


def dumps(o: Any, **kwargs) -> str:
    """``json.dumps(plain(o), allow_nan=False, **kwargs)``.

    Examples
    --------
    >>> dumps({"margin": np.float32(0.25), "rival": float("nan")})
    '{"margin": 0.25, "rival": null}'
    """
    kwargs.setdefault("allow_nan", False)
    return json.dumps(plain(o), **kwargs)
