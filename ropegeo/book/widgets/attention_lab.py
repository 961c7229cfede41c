"""The attention-score heatmap (chapter 3): the causal matrix ``<R_m q, R_n k>`` over positions.

For a query and key content by formula, the score of every query ``m`` against every key
``n <= m``: with RoPE a function of the offset alone (stripes parallel to the diagonal), an offset
whose rotation nearly returns to the identity (:func:`ropegeo.geometry.near_collisions`, weighted
by the content's pairs, past the first zero of their kernel) a stripe almost as bright as the
diagonal. A scaling rule changes the frequencies (YaRN's factor ``a`` multiplies every score by
``a**2``); angles formed in a low precision break the stripes far from the origin.

At most :func:`grid_side` positions per side are drawn (``MAX_ATTN_PRODUCTS`` multiply-adds): a
longer span is sampled every ``ceil(span / G)`` positions.
"""

from __future__ import annotations

import math

import numpy as np
import traitlets

from ropegeo.geometry import kernel, near_collisions
from ropegeo.rotation import apply_rope
from ropegeo.scaling import NAMED_RULES, preset, scaled_frequencies
from ropegeo.book.widgets._lab import Lab, esm_source
from ropegeo.book.widgets.scaling_lab import MAX_LAB_FACTOR

__all__ = ["AttentionLab", "reference", "content", "grid_side", "MAX_ATTN_SPAN", "MAX_ATTN_GRID", "MAX_ATTN_HEAD_DIM",
           "MAX_ATTN_PRODUCTS",
           "CONTENTS"]

#: Largest number of positions the heatmap spans.
MAX_ATTN_SPAN = 16_384
#: Largest number of cells per side (a longer span is sampled).
MAX_ATTN_GRID = 256
#: Largest head dimension (a d-wide rotation per drawn position and a d-long dot per cell).
MAX_ATTN_HEAD_DIM = 128
#: Multiply-adds of the causal matrix per update, ``G**2 d / 2``: a wide head gets fewer cells per side.
MAX_ATTN_PRODUCTS = 2**20
#: The content presets.
CONTENTS = ("equal", "slow", "fast", "varied")
_GOLDEN_ANGLE = math.pi * (3.0 - math.sqrt(5.0))
_TOP = 3


class AttentionLab(Lab):
    """The attention-score heatmap (controls: ``DEFAULTS``, ``BOUNDS``).

    ``content``: the query and key (:func:`content`; ``seed`` for ``"varied"``); ``span`` and
    ``train_length``: multiples of 16; ``dtype``: the precision the angles are formed in; ``rule``
    stretches ``train_length`` by ``factor``.

    Examples
    --------
    >>> AttentionLab(content="slow", head_dim=8, span=8192)  # doctest: +SKIP
    """

    _esm = esm_source("lab_attention.js")
    BOUNDS = {"content": CONTENTS, "seed": (0, 99), "encoding": ("rope", "none"), "head_dim": (4, MAX_ATTN_HEAD_DIM),
              "base": (2.0, 1e7), "span": (16, MAX_ATTN_SPAN), "dtype": ("float64", "float32", "float16", "bfloat16"),
              "rule": tuple(r for r in NAMED_RULES if r != "dynamic"), "factor": (1, MAX_LAB_FACTOR),
              "train_length": (16, MAX_ATTN_SPAN)}

    DEFAULTS = {"content": "slow", "seed": 0, "encoding": "rope", "head_dim": 8, "base": 10_000.0, "span": 8192,
                "dtype": "float64", "rule": "none", "factor": 4, "train_length": 64}

    @traitlets.validate(*BOUNDS)
    def _check(self, proposal):
        value = self._bounded(proposal)  # head_dim: also even
        name = proposal["trait"].name
        if name in ("span", "train_length") and value % 16:
            raise traitlets.TraitError(f"{name} must be a multiple of 16, got {value}")
        return value


def grid_side(head_dim: int) -> int:
    """Cells per side of the heatmap: ``MAX_ATTN_GRID``, or fewer so that ``G**2 d / 2`` stays
    within ``MAX_ATTN_PRODUCTS``.

    Examples
    --------
    >>> grid_side(8), grid_side(32), grid_side(128)
    (256, 256, 128)
    """
    return min(MAX_ATTN_GRID, math.isqrt(2 * MAX_ATTN_PRODUCTS // head_dim))


def content(kind: str, head_dim: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The query and key of a content preset, pair ``i`` = coordinates ``(2i, 2i + 1)``.

    ``"equal"``: ``(1, 0)`` in every pair; ``"slow"`` / ``"fast"``: in the slower half (``i >= P // 2``) /
    faster half (``i < ceil(P / 2)``) only; ``"varied"``: ``q_j = cos(g (j + 1) (seed + 1))``,
    ``k_j = sin(g (j + 1) (seed + 2) + 1)``, ``g`` the golden angle.

    Examples
    --------
    >>> q, k = content("slow", 8)
    >>> q.tolist()
    [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    """
    pairs = head_dim // 2
    if kind == "varied":
        j = np.arange(1, head_dim + 1, dtype=float)
        return np.cos(_GOLDEN_ANGLE * j * (seed + 1)), np.sin(_GOLDEN_ANGLE * j * (seed + 2) + 1.0)
    on = {"equal": np.ones(pairs, bool), "slow": np.arange(pairs) >= pairs // 2,
          "fast": np.arange(pairs) < -(-pairs // 2)}[kind]
    q = np.zeros(head_dim)
    q[0::2] = on
    return q, q.copy()


def reference(state: dict) -> dict:
    """ropegeo's numbers for a lab state: ``positions``, ``theta``, ``attention_factor``, ``q``, ``k``,
    ``scores`` (NaN above the diagonal), ``bound`` (``sum_i |q_i| |k_i|`` times the gain),
    ``returns_from`` (the first offset where the content's weighted kernel reaches 0; None if never
    below ``span`` or without RoPE) and ``returns`` (``(offset, K_w)`` from there to ``span - 1``).
    """
    d, span, rope = state["head_dim"], state["span"], state["encoding"] == "rope"
    scaling = None
    if rope and state["rule"] != "none":
        scaling = preset(state["rule"], train_length=state["train_length"],
                         target_length=state["train_length"] * state["factor"])
    theta, att = scaled_frequencies(scaling, d, state["base"])
    stride = -(-span // grid_side(d))
    positions = np.arange(0, span, stride)
    q, k = content(state["content"], d, state["seed"])
    amplitudes = np.hypot(q[0::2], q[1::2]) * np.hypot(k[0::2], k[1::2])
    gain = att**2 if rope else 1.0
    if rope:
        rq = apply_rope(np.broadcast_to(q, (positions.size, d)), positions, theta=theta, phase_dtype=state["dtype"])
        rk = apply_rope(np.broadcast_to(k, (positions.size, d)), positions, theta=theta, phase_dtype=state["dtype"])
    else:
        rq, rk = np.broadcast_to(q, (positions.size, d)), np.broadcast_to(k, (positions.size, d))
    scores = gain * (rq @ rk.T)
    scores[np.triu_indices(positions.size, 1)] = np.nan
    returns, start = [], None
    if rope:  # past the main lobe: from the first offset where this content's kernel reaches 0
        below = np.flatnonzero(kernel(np.arange(1, span, dtype=float), theta, weights=amplitudes) <= 0)
        if below.size:
            start = int(below[0]) + 1
            returns = [(c.offset, c.similarity) for c in
                       near_collisions(theta, start, span - 1, top=_TOP, weights=amplitudes, progress=False)]
    return {"positions": positions, "theta": theta, "attention_factor": att, "q": q, "k": k, "scores": scores,
            "bound": gain * amplitudes.sum(), "returns": returns, "returns_from": start}
