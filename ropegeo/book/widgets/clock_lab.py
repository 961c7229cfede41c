"""The rotation clock (chapter 2): move the query position ``m`` and the key position ``n``.

Each pair is a clock whose hand turns by ``position * theta_i``: shifting both positions turns the
hands and keeps the score ``<R_m q, R_n k>``; "play" advances both one token at a time.
"""

from __future__ import annotations

import numpy as np
import traitlets

from ropegeo.book.widgets._lab import Lab, esm_source, random_vectors
from ropegeo.frequencies import frequencies
from ropegeo.rotation import apply_rope

__all__ = ["ClockLab", "reference", "MAX_CLOCK_POSITION", "MAX_CLOCK_SPEED"]

#: Largest position either slider reaches.
MAX_CLOCK_POSITION = 512
#: Fastest animation, in tokens per second.
MAX_CLOCK_SPEED = 32
_WIDTH = 16  # the query and key vectors carried in the state (the lab uses the first head_dim)


class ClockLab(Lab):
    """The rotation clock (controls: ``DEFAULTS``, ``BOUNDS``).

    ``m``, ``n``: query and key positions; ``speed``: tokens per second of "play" (the lab never plays
    by itself); ``q``, ``k``: 16 entries, the first ``head_dim`` used.
    """

    _esm = esm_source("lab_clock.js")
    VECTOR_WIDTH = _WIDTH
    BOUNDS = {"m": (0, MAX_CLOCK_POSITION), "n": (0, MAX_CLOCK_POSITION), "head_dim": (2, 16), "base": (2.0, 1e5),
              "pairing": ("interleaved", "half"), "speed": (1, MAX_CLOCK_SPEED)}

    DEFAULTS = {"m": 3, "n": 7, "head_dim": 4, "base": 100.0, "pairing": "interleaved", "speed": 4}
    q = traitlets.List(traitlets.Float(), default_value=random_vectors(_WIDTH, 2)[0]).tag(sync=True)
    k = traitlets.List(traitlets.Float(), default_value=random_vectors(_WIDTH, 2)[1]).tag(sync=True)


def reference(state: dict, q, k) -> dict:
    """ropegeo's numbers for a clock state: ``score`` ``<R_m q, R_n k>``, ``relative``
    ``<q, R_(n-m) k>`` and the rotated pair coordinates ``q_rotated``, ``k_rotated``."""
    d = state["head_dim"]
    theta = frequencies(d, state["base"])
    qv, kv = np.asarray(q[:d], dtype=float)[None], np.asarray(k[:d], dtype=float)[None]
    kw = dict(theta=theta, pairing=state["pairing"])
    rq = apply_rope(qv, [state["m"]], **kw)[0]
    rk = apply_rope(kv, [state["n"]], **kw)[0]
    rel = apply_rope(kv, [state["n"] - state["m"]], **kw)[0]
    return {"score": float(rq @ rk), "relative": float(qv[0] @ rel), "q_rotated": rq, "k_rotated": rk}
