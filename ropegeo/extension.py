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
    """Per pair, the fraction of its circle visited when serving but never in training, in turns.

    ``max(0, min(n theta'_i, 2 pi) - min(L theta_i, 2 pi)) / (2 pi)``: the arc swept over the
    ``n = target_length`` served positions outside the one swept over the ``L`` trained ones.
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
    """The trade-off of one rule, from :func:`extension_report`, at the target length.

    ``stretch`` is ``theta_i / theta'_i``; ``scaled_pairs`` changed by more than 0.1 %;
    ``novelty`` is :func:`phase_novelty` per pair (``novel_pairs``: above 1e-9 turns);
    ``margin`` covers offsets ``1 .. small_offsets``, ``coarse_margin`` ``step, 2 step, .., L``.
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


def extension_report(scaling: Scaling | None, *, rotary_dim: int, base: float, train_length: int,
                     target_length: int, small_offsets: int | None = 16,
                     coarse_step: int | None = 64) -> ExtensionReport:
    """Measure one rule's (``None``: raw extrapolation) phase novelty and local resolution at the target length.

    Margins over ``1 .. small_offsets`` (2 to 100,000) and over multiples of ``coarse_step`` (up to
    ``train_length / 2``) up to the training length; ``None`` skips either.
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
    """Rows of dicts (same keys) as an aligned plain-text table (numbers right-aligned)."""
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

