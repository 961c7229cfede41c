"""The angle heatmap (chapter 4): the phase of every pair at every position, under a rule and a precision.

Each cell is ``position * theta_i mod 2 pi`` (rows: pairs, fastest at the bottom; columns: 0 to 1.25
times the target length); a second map shows the change from plain float64 RoPE in ``[-pi, pi)``: a
rule changes the slow rows, a bfloat16 angle table scrambles the fast ones.
"""

from __future__ import annotations

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies
from ropegeo.rotation import phase_angles
from ropegeo.scaling import NAMED_RULES, preset, scaled_frequencies
from ropegeo.book.widgets._lab import Lab, esm_source

__all__ = ["AngleLab", "reference", "heatmap_positions", "ANGLE_RULES", "ANGLE_DTYPES", "HEAD_DIMS", "TRAIN_LENGTHS",
           "MAX_ANGLE_FACTOR", "COLUMNS"]

ANGLE_RULES = tuple(r for r in NAMED_RULES if r != "dynamic")  # the lab reads no current length
ANGLE_DTYPES = ("float64", "float32", "bfloat16")
HEAD_DIMS = (16, 32, 64, 128, 256)
TRAIN_LENGTHS = (512, 1024, 2048, 4096, 8192)
#: Largest factor of the lab's slider (steps of 0.5, so the target length is a whole number).
MAX_ANGLE_FACTOR = 64.0
#: Positions drawn (columns of the heatmap).
COLUMNS = 240


def heatmap_positions(target_length: int) -> np.ndarray:
    """The heatmap's positions: ``floor(k * X / 240)`` for ``k = 0 .. 239``, ``X = floor(1.25 * target)``."""
    x = (5 * int(target_length)) // 4
    return np.array([(k * x) // COLUMNS for k in range(COLUMNS)], dtype=np.int64)


def _served(state: dict) -> tuple[np.ndarray, int]:
    d, base, train = state["head_dim"], state["base"], state["train_length"]
    target = int(round(state["factor"] * train))
    sc = preset(state["rule"], train_length=train, target_length=target)
    theta, _ = scaled_frequencies(sc, d, base)
    return theta, target


def reference(state: dict, cells=()) -> dict:
    """ropegeo's numbers for an angle-lab state (bounds as :class:`AngleLab`).

    ``theta`` (served), ``target_length``, ``positions`` (the columns), ``at_train`` and ``at_target``
    (each pair's phase in the dtype, in ``[0, 2 pi)``), ``rounding`` (largest angle error at the target,
    radians), ``column_step`` (tokens per column), ``aliased_pairs`` (more than half a turn per column),
    and per ``(column, pair)`` of ``cells``: ``phase`` and ``change`` from plain float64 RoPE in
    ``[-pi, pi)``. Raises ``ValueError`` for a value not offered or out of range.

    Examples
    --------
    >>> r = reference(dict(rule="linear", factor=2.0, head_dim=16, base=1e4, train_length=512, dtype="float64"))
    >>> r["target_length"], round(float(r["at_target"][-1] - r["at_train"][-1] * 2), 12)
    (1024, 0.0)
    """
    for name, allowed in (("rule", ANGLE_RULES), ("dtype", ANGLE_DTYPES), ("head_dim", HEAD_DIMS),
                          ("train_length", TRAIN_LENGTHS)):
        if state[name] not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {state[name]!r}")
    v.real("factor", state["factor"], minimum=1.0, maximum=MAX_ANGLE_FACTOR)
    v.real("base", state["base"], minimum=100.0, maximum=1e7)
    theta, target = _served(state)
    dt = state["dtype"]
    pos = heatmap_positions(target)
    wrap = lambda a: np.mod(a, 2 * np.pi)  # noqa: E731
    ends = phase_angles([float(state["train_length"]), float(target)], theta, dt)
    exact_end = phase_angles([float(target)], theta, "float64")[0]
    step = ((5 * target) // 4) / COLUMNS  # tokens per column
    out = {"theta": theta, "target_length": target, "positions": pos, "at_train": wrap(ends[0]),
           "column_step": step, "aliased_pairs": int(np.count_nonzero(theta * step > np.pi)),
           "at_target": wrap(ends[1]), "rounding": float(np.max(np.abs(ends[1] - exact_end)))}
    cells = np.asarray(list(cells), dtype=np.int64).reshape(-1, 2)
    if cells.size:
        col, pair = cells[:, 0], cells[:, 1]
        served = phase_angles(pos[col].astype(float), theta, dt)[np.arange(col.size), pair]
        plain = phase_angles(pos[col].astype(float), frequencies(state["head_dim"], state["base"]), "float64")
        plain = plain[np.arange(col.size), pair]
        out["phase"] = wrap(served)
        out["change"] = np.mod(served - plain + np.pi, 2 * np.pi) - np.pi
    else:
        out["phase"] = out["change"] = np.zeros(0)
    return out


class AngleLab(Lab):
    """The angle heatmap (controls: ``DEFAULTS``, ``BOUNDS``): ``rule`` with :func:`ropegeo.scaling.preset`'s
    defaults, target length ``factor`` x ``train_length``, ``dtype`` the angles are formed in.
    """

    _esm = esm_source("lab_angles.js")
    BOUNDS = {"rule": ANGLE_RULES, "factor": (1.0, MAX_ANGLE_FACTOR), "head_dim": HEAD_DIMS, "base": (100.0, 1e7),
              "train_length": TRAIN_LENGTHS, "dtype": ANGLE_DTYPES}

    DEFAULTS = {"rule": "yarn", "factor": 4.0, "head_dim": 64, "base": 1e4, "train_length": 2048, "dtype": "float64"}
