"""Gate B for one axis of a multi-axis head (chapter 8): are the offsets a task needs along that axis
kept apart by the pairs that turn with it?

The bank's split between axes is :mod:`ropegeo.multiaxis`; the decision is Gate B's one rule
(:func:`ropegeo.gates.b.rule.gate_b_decision`), with the head's sharpness calibrated on a step that
advances every axis at once.
"""

from __future__ import annotations

import numpy as np

from ropegeo import _validate as v
from ropegeo.gates.b.rule import GateBDecision, GateBRule, gate_b_decision
from ropegeo.multiaxis import MAX_EXTENT, frequency_matrix

__all__ = ["axis_gate_b"]


def axis_gate_b(freqs, axis: int, extent: int, *, rule: GateBRule | None = None, reference=None) -> GateBDecision:
    """Gate B for one axis of a multi-axis head: are offsets ``0 .. extent - 1`` along ``axis`` kept apart?

    The margin is that of the column ``F[:, axis]`` (the other pairs do not turn). The head's
    sharpness is one number for all axes, so the default rule calibrates it on ``reference``: the
    step that advances every axis by one (a text token in M-RoPE), whose per-pair phase is
    ``|sum_a F[i, a]|``. An axis passes when its band keeps the task's offsets at least as far
    apart as the rule asks of that one head.

    Examples
    --------
    >>> from ropegeo.multiaxis import mrope_bank
    >>> F = mrope_bank(128, 1e6, (16, 24, 24))
    >>> [axis_gate_b(F, a, 32).status for a in range(3)]
    ['pass', 'fail', 'fail']
    """
    F = frequency_matrix(freqs)
    axis = v.integer("axis", axis, minimum=0, maximum=F.shape[1] - 1)
    extent = v.integer("extent", extent, minimum=2, maximum=MAX_EXTENT)
    ref = np.abs(F.sum(axis=1)) if reference is None else v.frequencies(reference, "reference")
    if ref.size != F.shape[0]:
        raise ValueError(f"reference must have one frequency per pair ({F.shape[0]}), got {ref.size}")
    return gate_b_decision(range(extent), np.abs(F[:, axis]), rule=rule, trained_theta=ref)
