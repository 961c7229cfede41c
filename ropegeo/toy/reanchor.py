"""Re-anchoring a model's frequency bank to a toy training length, keeping its slow/fast split.

Gate C trains at 64 tokens, where nearly every pair of a base-500,000 bank is slow. Pair ``i`` of
``theta_i = B ** (-2 i / d)`` completes less than one turn in ``L`` tokens when ``i > (d / 2)
ln(L / 2 pi) / ln(B)``; :func:`reanchored_base` picks ``B' = B ** (ln(l / 2 pi) / ln(L / 2 pi))``,
for which the toy length ``l`` has the model's critical index (up to rounding; :func:`split_counts`
checks it). The fastest pair stays at one radian per token; scaling every frequency by ``L / l``
instead would alias the fast pairs.
"""

from __future__ import annotations

import math

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies, slow_pairs

__all__ = ["reanchored_base", "split_counts"]


def reanchored_base(base: float, model_length: int, toy_length: int) -> float:
    """The base whose bank has, at ``toy_length``, the slow/fast split ``base`` has at ``model_length``.

    Both lengths are 7 or more. Raises ValueError for a base at most 1 or a length below 7.

    Examples
    --------
    >>> round(reanchored_base(10_000.0, 4096, 4096), 6)
    10000.0
    """
    base = v.base(base)
    model_length = v.length("model_length", model_length, minimum=7)
    toy_length = v.length("toy_length", toy_length, minimum=7)
    return float(base ** (math.log(toy_length / (2 * math.pi)) / math.log(model_length / (2 * math.pi))))


def split_counts(head_dim: int, base: float, model_length: int, toy_length: int) -> dict:
    """Slow pairs of the model's bank at ``model_length`` (``model``) and at ``toy_length``
    (``toy_same_bank``), of the re-anchored bank at ``toy_length`` (``toy_reanchored``), with
    ``pairs`` and ``reanchored_base``.
    """
    head_dim = v.head_dim(head_dim)
    b2 = reanchored_base(base, model_length, toy_length)
    th, th2 = frequencies(head_dim, base), frequencies(head_dim, b2)
    count = slow_pairs
    return {"pairs": head_dim // 2, "model": count(th, model_length), "toy_same_bank": count(th, toy_length),
            "toy_reanchored": count(th2, toy_length), "reanchored_base": b2}
