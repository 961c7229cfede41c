"""Re-anchoring a model's frequency bank to a toy training length, keeping its slow/fast split.

Gate C trains tiny heads at a toy length (64 tokens) because it cannot train at a real model's
(8,192 or more). Trained at 64 on the model's own bank, almost every pair of a base-500,000 bank
completes less than one turn inside the window: nearly all pairs are *slow*, which is not the
regime the model was trained in. Chapter 3's split is the critical index: pair ``i`` of a bank
``theta_i = B ** (-2 i / d)`` completes less than one turn in ``L`` tokens when

    i > (d / 2) * ln(L / (2 pi)) / ln(B).

:func:`reanchored_base` chooses the base ``B'`` for which the toy length ``l`` has the same
critical index as the model's training length ``L`` with its base ``B``:

    ln(l / (2 pi)) / ln(B') = ln(L / (2 pi)) / ln(B),   so   B' = B ** (ln(l / 2 pi) / ln(L / 2 pi)).

The fastest pair stays at one radian per token (no aliasing), and the count of pairs that
complete a turn within the training length matches the model's at its own training length
(up to the rounding of the critical index to whole pairs; :func:`split_counts` checks it).
Scaling every frequency by ``L / l`` instead would keep every pair's turn count exactly, but
pushes the fast pairs past pi radians per token, where integer positions alias them.
"""

from __future__ import annotations

import math

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies, slow_pairs

__all__ = ["reanchored_base", "split_counts"]


def reanchored_base(base: float, model_length: int, toy_length: int) -> float:
    """The base whose bank has, at ``toy_length``, the slow/fast split ``base`` has at ``model_length``.

    Parameters
    ----------
    base : float
        The model's base (greater than 1).
    model_length, toy_length : int
        The model's training length and the toy training length; both above ``2 pi`` (7 or more),
        so that at least the fastest pair turns once.

    Returns
    -------
    float
        ``base ** (ln(toy_length / 2 pi) / ln(model_length / 2 pi))``.

    Raises
    ------
    ValueError
        For a base at most 1 or a length below 7.

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
    """Slow pairs of the model's bank at its own length, at the toy length, and of the re-anchored bank.

    Returns
    -------
    dict
        ``pairs``, ``model`` (slow pairs of ``base`` at ``model_length``), ``toy_same_bank``
        (of ``base`` at ``toy_length``), ``toy_reanchored`` (of :func:`reanchored_base` at
        ``toy_length``) and ``reanchored_base``.
    """
    head_dim = v.head_dim(head_dim)
    b2 = reanchored_base(base, model_length, toy_length)
    th, th2 = frequencies(head_dim, base), frequencies(head_dim, b2)
    count = slow_pairs
    return {"pairs": head_dim // 2, "model": count(th, model_length), "toy_same_bank": count(th, toy_length),
            "toy_reanchored": count(th2, toy_length), "reanchored_base": b2}
