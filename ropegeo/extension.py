"""What a rule trades: phase novelty against local resolution, and tables.

:func:`~ropegeo.extension.extension_report` measures one rule at a target length;
:func:`~ropegeo.extension.text_table` prints rows of such reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import TWO_PI
from ropegeo.geometry import adjacent_similarity
from ropegeo.margins import separation_margin
from ropegeo.operator import RotaryOperator
from ropegeo.scaling.config import Scaling


def phase_novelty(theta_train, theta_served, train_length: int, target_length: int) -> np.ndarray:
    """Per pair, the fraction of its circle visited when serving but never in training.

    In training, pair ``i`` sweeps the arc ``[0, min(L * theta_i, 2 pi))`` (positions and offsets
    below ``L``); served at ``n`` positions with frequencies ``theta'`` it sweeps
    ``[0, min(n * theta'_i, 2 pi))``. The novelty is the part of the second arc outside the first,
    in turns: ``max(0, min(n theta'_i, 2 pi) - min(L theta_i, 2 pi)) / (2 pi)``, in [0, 1).
    Pairs that already turned fully in training never show novel phases.

    Parameters
    ----------
    theta_train, theta_served : array_like, shape (pairs,)
        Frequencies used in training and when serving.
    train_length, target_length : int
        ``L`` and ``n`` (positive).

    Returns
    -------
    numpy.ndarray, shape (pairs,)
    """
    a = v.finite_array("theta_train", theta_train)
    b = v.finite_array("theta_served", theta_served)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"theta_train and theta_served must be 1-D with the same shape, got {a.shape} and {b.shape}")
    if np.any(a < 0) or np.any(b < 0):
        raise ValueError("frequencies must be non-negative")
    return _novelty(a, b, v.length("train_length", train_length, minimum=1),
                    v.length("target_length", target_length, minimum=1))


def _novelty(a: np.ndarray, b: np.ndarray, L: int, n: int) -> np.ndarray:
    return np.maximum(0.0, np.minimum(n * b, TWO_PI) - np.minimum(L * a, TWO_PI)) / TWO_PI


@dataclass(frozen=True)
class ExtensionReport:
    """The trade-off of one rule, from :func:`extension_report`.

    Attributes
    ----------
    rule : str
        Rule name (``"none"`` for raw extrapolation).
    theta : numpy.ndarray, shape (pairs,)
        Served frequencies at the target length.
    stretch : numpy.ndarray, shape (pairs,)
        Per-pair wavelength ratio ``theta_i / theta'_i`` (1 = untouched, ``s`` = fully interpolated).
    scaled_pairs : int
        Pairs whose frequency changed by more than 0.1 %.
    novelty : numpy.ndarray, shape (pairs,)
        :func:`phase_novelty` per pair, in turns.
    novel_pairs : int
        Pairs that visit new phase at the target length (novelty above 1e-9 turns).
    total_novelty : float
        Sum of the per-pair novelty, in turns.
    adjacent_similarity : float
        ``K(1)`` of the served bank (closer to 1: neighbours harder to tell apart).
    fastest_step : float
        Angle, in radians, the fastest pair turns between neighbouring tokens.
    margin : float or None
        Gate B separation margin for offsets ``1 .. small_offsets`` (None if not requested).
    coarse_margin : float or None
        Gate B margin for the paragraph-scale offsets ``step, 2 step, .., train_length`` (None if
        not requested).
    attention_factor : float
    """

    rule: str
    theta: np.ndarray
    stretch: np.ndarray
    scaled_pairs: int
    novelty: np.ndarray
    novel_pairs: int
    total_novelty: float
    adjacent_similarity: float
    fastest_step: float
    margin: float | None
    coarse_margin: float | None
    attention_factor: float

    def row(self) -> dict:
        """The scalar fields as a dict (for tables)."""
        return {
            "rule": self.rule,
            "scaled pairs": self.scaled_pairs,
            "novel pairs": self.novel_pairs,
            "novelty (turns)": round(self.total_novelty, 4),
            "K(1)": round(self.adjacent_similarity, 6),
            "fastest step (rad)": round(self.fastest_step, 4),
            "margin 1..n": None if self.margin is None else round(self.margin, 6),
            "coarse margin": None if self.coarse_margin is None else round(self.coarse_margin, 6),
            "attention factor": round(self.attention_factor, 4),
        }


def extension_report(scaling: Scaling | None, *, base: float, rotary_dim: int, train_length: int,
                     target_length: int, small_offsets: int | None = 16,
                     coarse_step: int | None = 64) -> ExtensionReport:
    """Measure one rule's phase novelty and local resolution at the target length.

    Parameters
    ----------
    scaling : Scaling or None
        The rule (``None``: raw extrapolation).
    base, rotary_dim
        The schedule being stretched.
    train_length, target_length : int
        Pre-training and serving lengths (at least 2).
    small_offsets : int or None
        Gate B margin over the offsets ``1 .. small_offsets`` (2 to 100,000); ``None`` skips it.
    coarse_step : int or None
        Gate B margin over ``coarse_step, 2 coarse_step, ..`` up to the training length (the step
        between 1 and ``train_length / 2``); ``None`` skips it.

    Returns
    -------
    ExtensionReport
    """
    d = v.head_dim(rotary_dim, "rotary_dim")
    L = v.length("train_length", train_length, minimum=2)
    n = v.length("target_length", target_length, minimum=2)
    op = RotaryOperator(head_dim=d, base=base, scaling=scaling)  # checked once; its banks are trusted below
    base_theta, theta, att = op.unscaled.theta, np.array(op.theta_at(n)), op.attention_at(n)
    stretch = base_theta / theta
    nov = _novelty(base_theta, theta, L, n)
    margin = None
    if small_offsets is not None:
        k = v.integer("small_offsets", small_offsets, minimum=2, maximum=100_000)
        margin = separation_margin(range(1, k + 1), operator=op, seq_len=n).margin
    coarse = None
    if coarse_step is not None:
        step = v.integer("coarse_step", coarse_step, minimum=1, maximum=L // 2)
        coarse = separation_margin(range(step, L + 1, step), operator=op, seq_len=n).margin
    return ExtensionReport(
        rule="none" if scaling is None else scaling.rule,
        theta=theta,
        stretch=stretch,
        scaled_pairs=int(np.count_nonzero(np.abs(stretch - 1.0) > 1e-3)),
        novelty=nov,
        novel_pairs=int(np.count_nonzero(nov > 1e-9)),
        total_novelty=float(nov.sum()),
        adjacent_similarity=adjacent_similarity(operator=op, seq_len=n),
        fastest_step=float(theta[0]),
        margin=margin,
        coarse_margin=coarse,
        attention_factor=float(att),
    )


def text_table(rows) -> str:
    """Rows of dicts (same keys) as an aligned plain-text table (numbers right-aligned).

    Raises
    ------
    ValueError
        For no rows or rows with different keys.
    """
    if isinstance(rows, (str, bytes, Mapping)) or not hasattr(rows, "__iter__"):
        raise ValueError(f"rows must be a non-empty list of dicts, got {type(rows).__name__}")
    rows = list(rows)
    if not rows or not all(isinstance(r, Mapping) for r in rows):
        raise ValueError("rows must be a non-empty list of dicts")
    keys = list(rows[0])
    if not all(isinstance(k, str) for k in keys):
        raise ValueError("rows must have string keys (the column names)")
    if any(list(r) != keys for r in rows):
        raise ValueError("every row must have the same keys in the same order")

    def fmt(x):
        if isinstance(x, float):
            return f"{int(x):,}" if x.is_integer() and abs(x) < 1e15 else f"{x:,.6g}"
        if isinstance(x, int) and not isinstance(x, bool):
            return f"{x:,}"
        return "-" if x is None else str(x)

    cells = [[fmt(r[k]) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[j]) for c in cells)) for j, k in enumerate(keys)]
    numeric = [all(isinstance(r[k], (int, float)) and not isinstance(r[k], bool) for r in rows) for k in keys]
    def line(vals):
        return "  ".join(val.rjust(w) if num else val.ljust(w) for val, w, num in zip(vals, widths, numeric)).rstrip()
    return "\n".join([line(keys), line(["-" * w for w in widths])] + [line(c) for c in cells])

