"""Attention dilution: how a trained head's attention spreads as the context grows.

Served longer than it was trained, a head sees many unseen keys that together can take the
attention from the target even when none outscores it. Two remedies multiply the logits by a
factor growing with the length: YaRN's attention factor (``0.1 ln s + 1`` on queries and keys)
and log-length scaling (``ln n / ln L`` for ``n > L``, as Qwen's ``use_logn_attn`` and Chiang and
Cholak, 2022). :func:`dilution_probe` measures the last query's target mass and entropy under each.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ropegeo import _validate as v
from ropegeo import scaling
from ropegeo import toy as behaviour
from ropegeo.scaling import rule_name
from ropegeo.softmax import softmax

__all__ = ["SCALINGS", "logit_multiplier", "dilution_probe"]

#: Logit scalings the probe compares.
SCALINGS = ("none", "yarn", "log_length")
#: Most lengths in one probe, and the longest.
MAX_LENGTHS = 16
MAX_DILUTION_LENGTH = 1 << 16


def logit_multiplier(scaling: str, length: int, train_length: int) -> float:
    """The factor a scaling multiplies the logits by at ``length`` for a head trained at ``train_length``.

    ``"none"``: 1; ``"yarn"``: ``(0.1 ln s + 1) ** 2``, ``s = max(1, length / train_length)``;
    ``"log_length"``: ``max(1, ln length / ln train_length)``. Raises ValueError for an unknown
    scaling or lengths below 2.

    Examples
    --------
    >>> round(logit_multiplier("log_length", 4096, 64), 6)
    2.0
    """
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    length = v.integer("length", length, minimum=2)
    train_length = v.integer("train_length", train_length, minimum=2)
    s = max(1.0, length / train_length)
    if scaling == "none":
        return 1.0
    if scaling == "yarn":
        return (0.1 * math.log(s) + 1.0) ** 2
    return max(1.0, math.log(length) / math.log(train_length))


def _last_query(head, length: int, rule: str, multiplier: float) -> tuple[float, float]:
    """Target mass and entropy (nats) of the last query of a ``length``-token sequence."""
    sch = scaling.extension_schedule(rule, head_dim=head.head_dim, base=head.base,
                                       train_length=head.original_train_length, length=length)
    deltas = np.arange(1, length)  # every key the last query sees, strictly earlier
    z = multiplier * behaviour.score_profile(head, deltas, theta=sch.theta, scale=sch.scale)
    p = softmax(z)
    nz = p > 0
    return float(p[head.offset - 1]), float(-(p[nz] * np.log(p[nz])).sum())


def dilution_probe(heads, lengths, *, rule: str = "yarn", scalings=SCALINGS) -> dict:
    """Target mass and attention entropy of the last query against length, per logit scaling.

    ``heads``: 1 to ``MAX_SEEDS`` offset heads trained on a base; ``lengths``: at most 16, each above
    the offsets and at most 65,536; ``rule`` serves the heads at each length (the scaling replaces its
    attention factor). Returns ``lengths``, ``seeds``, ``rule``, ``multiplier``, ``mass`` and
    ``entropy`` (scaling -> (lengths, seeds)) and ``uniform_entropy`` (``ln(n - 1)``).

    Examples
    --------
    >>> from ropegeo import toy as behaviour
    >>> heads = behaviour.train_heads("offset", [0], offset=5, head_dim=16, train_length=64)
    >>> out = dilution_probe(heads, [64, 1024], scalings=["none"])
    >>> bool(out["mass"]["none"][1, 0] < out["mass"]["none"][0, 0])
    True
    """
    if isinstance(heads, behaviour.OffsetHead) or not v.is_collection(heads):
        raise ValueError("heads must be a list of trained offset heads (one per seed)")
    heads = list(itertools.islice(heads, behaviour.MAX_SEEDS + 1))
    if not heads or len(heads) > behaviour.MAX_SEEDS:
        raise ValueError(f"heads must hold 1 to MAX_SEEDS = {behaviour.MAX_SEEDS} offset heads")
    for h in heads:
        if not isinstance(h, behaviour.OffsetHead) or h.base is None:
            raise ValueError("heads must be offset heads trained on a base (ropegeo.toy.train_offset_head)")
    if not v.is_collection(lengths):
        raise ValueError(f"lengths must be a list of sequence lengths, got {lengths!r}")
    most_offset = max(h.offset for h in heads)
    lengths = [v.integer("lengths", n, minimum=most_offset + 1, maximum=MAX_DILUTION_LENGTH)
               for n in itertools.islice(lengths, MAX_LENGTHS + 1)]
    if not lengths or len(lengths) > MAX_LENGTHS:
        raise ValueError(f"lengths must hold 1 to {MAX_LENGTHS} lengths")
    try:
        rule_name(rule)
    except ValueError:
        raise ValueError(f"rule must be a rule name such as {scaling.RULES}, got {rule!r}") from None
    if isinstance(scalings, str) or not v.is_collection(scalings):
        raise ValueError(f"scalings must be a list drawn from {SCALINGS}, got {scalings!r}")
    scalings = list(itertools.islice(scalings, len(SCALINGS) + 1))
    if not scalings or any(s not in SCALINGS for s in scalings):
        raise ValueError(f"scalings must be a non-empty list drawn from {SCALINGS}, got {scalings!r}")
    train = heads[0].original_train_length
    out = {"lengths": lengths, "seeds": [h.seed for h in heads], "rule": rule, "multiplier": {}, "mass": {},
           "entropy": {}, "uniform_entropy": [math.log(n - 1) for n in lengths]}
    for sc in scalings:
        mult = [logit_multiplier(sc, n, train) for n in lengths]
        cells = [[_last_query(h, n, rule, c) for h in heads] for n, c in zip(lengths, mult)]
        arr = np.array(cells)  # (lengths, seeds, 2)
        out["multiplier"][sc] = mult
        out["mass"][sc], out["entropy"][sc] = arr[..., 0], arr[..., 1]
    return out
