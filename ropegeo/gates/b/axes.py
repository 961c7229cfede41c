"""Gate B for one axis of a multi-axis head (chapter 8), the head's sharpness calibrated on that axis.

Calibrated on a text step (every axis at once), an axial split passes at most one axis by
construction: the axes' squared neighbour distances add up to the text step's.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ropegeo import _validate as v
from ropegeo.gates.b.rule import GateBDecision, GateBRule, gate_b_decision
from ropegeo.margins import difference_distance
from ropegeo.multiaxis import MAX_EXTENT, frequency_matrix

__all__ = ["axis_gate_b"]


def axis_gate_b(freqs, axis: int, extent: int, *, rule: GateBRule | None = None, reference=None) -> GateBDecision:
    """Gate B for one axis of a multi-axis head: are offsets ``0 .. extent - 1`` along ``axis`` kept apart?

    The margin is that of ``F[:, axis]``, the sharpness calibrated on ``reference`` (default the
    axis itself); the reason states the axis's share of a text step's squared neighbour distance.

    Examples
    --------
    >>> from ropegeo.multiaxis import mrope_bank
    >>> F = mrope_bank(128, 1e6, (24, 20, 20), round_robin=True)
    >>> [axis_gate_b(F, a, 32).status for a in range(3)]
    ['pass', 'pass', 'pass']
    """
    F = frequency_matrix(freqs)
    axis = v.integer("axis", axis, minimum=0, maximum=F.shape[1] - 1)
    extent = v.integer("extent", extent, minimum=2, maximum=MAX_EXTENT)
    band = np.abs(F[:, axis])
    ref = band if reference is None else v.frequencies(reference, "reference")
    if ref.size != F.shape[0]:
        raise ValueError(f"reference must have one frequency per pair ({F.shape[0]}), got {ref.size}")
    decision = gate_b_decision(range(extent), band, rule=rule, trained_theta=ref)
    text = float(difference_distance(1.0, np.abs(F.sum(axis=1))))
    share = float(difference_distance(1.0, band)) ** 2 / text**2 if text > 0 else float("nan")
    calibrated = "this axis's own neighbours" if reference is None else "the given reference step"
    return replace(decision, reason=f"{decision.reason}; sharpness calibrated on {calibrated}; the axis carries "
                                    f"{share:.3g} of a text step's squared neighbour distance")
