"""Phase error by pipeline (chapter 5): for one pair (or the worst), the angle between the phase a
pipeline generates and the exact one against position, for :data:`PIPELINES` (float32 throughout;
``deployed``: float32 angles, bfloat16 cos/sin; ``cast``: the buffer rounded by
``model.to(torch.bfloat16)``; bfloat16 throughout).
"""

from __future__ import annotations

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies
from ropegeo.precision import buffer_cast, deployed, max_phase_error, phase_error, uniform
from ropegeo.book.widgets._lab import Lab, esm_source

__all__ = ["PipelineLab", "reference", "curve_positions", "PIPELINES", "HEAD_DIMS", "MAX_POSITION", "POINTS"]

#: The four pipelines, by the names the lab publishes.
PIPELINES = {"float32": uniform("float32"), "deployed": deployed("bfloat16"), "cast": buffer_cast("bfloat16"),
             "bfloat16": uniform("bfloat16")}
HEAD_DIMS = (16, 32, 64, 128, 256)
#: Bounds of the largest position drawn.
MIN_POSITION, MAX_POSITION = 100, 10_000_000
#: Log-spaced positions per curve (before duplicates are dropped).
POINTS = 200


def curve_positions(max_position: int) -> np.ndarray:
    """The curves' positions: ``round(max_position ** (k / (POINTS - 1)))`` for ``k = 0 .. POINTS - 1``,
    without repeats."""
    m = v.integer("max_position", max_position, minimum=MIN_POSITION, maximum=MAX_POSITION)
    return np.unique(np.round(float(m) ** (np.arange(POINTS) / (POINTS - 1))).astype(np.int64))


def reference(state: dict, at=None) -> dict:
    """ropegeo's phase error (radians) of each pipeline of :data:`PIPELINES` for a pipeline-lab state.

    At positions ``at`` (default :func:`curve_positions`), for pair ``pair``
    (:func:`ropegeo.precision.phase_error`) or, with ``worst``, the largest over the pairs
    (:func:`ropegeo.precision.max_phase_error`); also ``positions``. Raises ``ValueError`` out of range.

    Examples
    --------
    >>> r = reference(dict(base=1e4, head_dim=16, pair=2, worst=False, max_position=1000), at=[999])
    >>> [f"{r[name][0]:.0e}" for name in ("float32", "deployed", "cast", "bfloat16")]
    ['2e-06', '7e-04', '1e-01', '1e-01']
    """
    d = state["head_dim"]
    if d not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {', '.join(map(str, HEAD_DIMS))}, got {d!r}")
    base = v.real("base", state["base"], minimum=100.0, maximum=1e7)
    pair = v.integer("pair", state["pair"], minimum=0, maximum=d // 2 - 1)
    pos = curve_positions(state["max_position"]) if at is None else np.asarray(at, dtype=float)
    theta = frequencies(d, base)
    out = {"positions": np.asarray(pos)}
    for name, pipe in PIPELINES.items():
        if state["worst"]:
            out[name] = max_phase_error(np.asarray(pos, dtype=float), theta, pipe)
        else:
            out[name] = phase_error(np.asarray(pos, dtype=float), theta[[pair]], pipe)[:, 0]
    return out


class PipelineLab(Lab):
    """Phase error against position for four pipelines (controls: ``DEFAULTS``, ``BOUNDS``).

    ``pair``: 0 to ``head_dim / 2 - 1`` (held there when the width shrinks); ``worst``: the largest
    error over the pairs instead.
    """

    _esm = esm_source("lab_pipeline.js")
    BOUNDS = {"base": (100.0, 1e7), "head_dim": HEAD_DIMS, "pair": (0, 127), "worst": (True, False),
              "max_position": (MIN_POSITION, MAX_POSITION)}

    DEFAULTS = {"base": 1e4, "head_dim": 128, "pair": 8, "worst": False, "max_position": 65_536}

    @property
    def numbers(self) -> dict:
        """:func:`reference` for the current state (a pair beyond the width is held at the last pair)."""
        st = self.state()
        st["pair"] = min(st["pair"], st["head_dim"] // 2 - 1)
        return reference(st)
