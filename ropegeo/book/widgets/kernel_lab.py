"""The kernel lab: drag the frequency bank's controls and watch ``K(delta)`` and its near-returns.

The page computes ``K(delta) = mean_i cos(delta * s * theta_i)``, draws it and lists the most
identity-like offsets in a bounded range; :func:`reference` gives ropegeo's numbers (the browser
test checks the two agree to 1e-9).
"""

from __future__ import annotations

import math

import numpy as np
import traitlets

from ropegeo import _validate as v
from ropegeo.book.widgets._lab import Lab, esm_source
from ropegeo.frequencies import frequencies
from ropegeo.geometry import kernel, near_collisions

__all__ = ["KernelLab", "reference", "distinct_returns", "MAX_SPAN", "MAX_LAB_HEAD_DIM", "MAX_LAB_OFFSET"]

#: Offsets searched per update; the JavaScript clips a longer range to this many.
MAX_SPAN = 200_000
#: Largest head dimension the lab accepts.
MAX_LAB_HEAD_DIM = 256
#: Largest offset, training or target length the lab accepts.
MAX_LAB_OFFSET = 100_000_000
_MAX_TOP = 20


class KernelLab(Lab):
    """The equal-weight kernel ``K(delta)`` of a rotary frequency bank (controls: ``DEFAULTS``).

    ``offset_start .. offset_stop``: the inclusive range drawn and searched (at most :data:`MAX_SPAN`
    offsets); ``interpolate`` multiplies offsets by ``s = train_length / target_length``; ``top``:
    offsets listed. A value out of range raises ``traitlets.TraitError`` naming the parameter.

    Examples
    --------
    >>> KernelLab(head_dim=8, offset_start=1000, offset_stop=20000)  # doctest: +SKIP
    """

    _esm = esm_source("lab_kernel.js")

    DEFAULTS = {"head_dim": 8, "base": 10_000.0, "offset_start": 1, "offset_stop": 20_000, "interpolate": False,
                "train_length": 4096, "target_length": 16_384, "top": 5}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._check_range(self.offset_start, self.offset_stop)

    @staticmethod
    def _bad(proposal, fn):
        try:
            return fn(proposal["value"])
        except ValueError as exc:
            raise traitlets.TraitError(str(exc)) from None

    @traitlets.validate("head_dim", "base", "train_length", "target_length", "top")
    def _v_control(self, proposal):
        name = proposal["trait"].name
        if name == "head_dim":
            return self._bad(proposal, lambda x: v.integer(name, v.head_dim(x), maximum=MAX_LAB_HEAD_DIM))
        if name == "base":
            return self._bad(proposal, v.base)
        top = _MAX_TOP if name == "top" else MAX_LAB_OFFSET
        return self._bad(proposal, lambda x: v.integer(name, x, minimum=1, maximum=top))

    @traitlets.validate("offset_start", "offset_stop")
    def _v_offset(self, proposal):
        name = proposal["trait"].name
        value = self._bad(proposal, lambda x: v.integer(name, x, minimum=0, maximum=MAX_LAB_OFFSET))
        # cross-validated: under hold_trait_notifications (construction, a front-end update of
        # both ends) this runs once both new values are in place
        start = value if name == "offset_start" else self.offset_start
        stop = value if name == "offset_stop" else self.offset_stop
        self._check_range(start, stop)
        return value

    @staticmethod
    def _check_range(start: int, stop: int):
        if stop < start:
            raise traitlets.TraitError(
                f"the offset range is empty: offset_stop={stop} is smaller than offset_start={start}"
            )
        span = stop - start + 1
        if span > MAX_SPAN:
            raise traitlets.TraitError(
                f"the offset range holds {span:,} offsets; the lab searches at most {MAX_SPAN:,} per update"
            )

    @property
    def scale(self) -> float:
        """The offset multiplier ``s``: ``min(1, train_length / target_length)`` when interpolating, else 1."""
        return min(1.0, self.train_length / self.target_length) if self.interpolate else 1.0


def reference(head_dim: int, base: float, offset_start: int, offset_stop: int, *, interpolate: bool = False,
              train_length: int = 4096, target_length: int = 16_384, top: int = 5, offsets=None) -> dict:
    """``ropegeo``'s numbers for a lab state (arguments as :class:`KernelLab`).

    ``scale``; ``top``: ``(offset, K)`` from :func:`ropegeo.geometry.near_collisions`; ``k``: ``K`` at
    ``offsets`` (empty if None); ``returns``: :func:`distinct_returns` within ``return_width``.
    """
    # the lab's own limits, so that the reference can never run longer than one lab update
    head_dim = v.head_dim(head_dim, maximum=MAX_LAB_HEAD_DIM)
    theta = frequencies(head_dim, base)
    start = v.integer("offset_start", offset_start, minimum=0, maximum=MAX_LAB_OFFSET)
    stop = v.integer("offset_stop", offset_stop, minimum=0, maximum=MAX_LAB_OFFSET)
    try:
        KernelLab._check_range(start, stop)
    except traitlets.TraitError as exc:
        raise ValueError(str(exc)) from None
    interpolate = v.boolean("interpolate", interpolate)
    train_length = v.integer("train_length", train_length, minimum=1, maximum=MAX_LAB_OFFSET)
    target_length = v.integer("target_length", target_length, minimum=1, maximum=MAX_LAB_OFFSET)
    top = v.integer("top", top, minimum=1, maximum=_MAX_TOP)
    scale = 1.0 if not interpolate else min(1.0, train_length / target_length)
    found = near_collisions(theta, start, stop, top=top, scale=scale, progress=False)
    k = kernel(np.asarray([] if offsets is None else offsets, dtype=np.float64), theta, scale=scale)
    n = stop - start + 1  # one return per window: a fastest wavelength or 1% of the range, whichever is wider
    width = max(1, min(n, max(math.ceil(2 * math.pi / (scale * theta[0])), math.ceil(n / 100))))
    returns = distinct_returns(kernel(np.arange(start, stop + 1, dtype=np.float64), theta, scale=scale), start, top, width)
    return {"scale": scale, "top": [(c.offset, c.similarity) for c in found], "k": k.tolist(),
            "returns": returns, "return_width": width}


def distinct_returns(values, start: int, top: int, width: int) -> list:
    """The ``top`` offsets ``(offset, K)`` with the largest ``K`` (at most 1) among those whose
    ``K`` (``values`` at ``start, start + 1, ...``) is the largest within ``width`` offsets either side
    (ties: the smaller offset): one offset per return, where :func:`ropegeo.geometry.near_collisions`
    may list two neighbours on one peak.

    Examples
    --------
    >>> distinct_returns([0.1, 0.9, 0.8, 0.2, 0.7, 0.1], 10, 3, 1)
    [(11, 0.9), (14, 0.7)]
    """
    values = np.asarray(values, dtype=np.float64)
    padded = np.concatenate([np.full(width, -np.inf), values, np.full(width, -np.inf)])
    cur, span = padded.copy(), 1  # the largest over each window of 2 width + 1, by doubling spans
    while 2 * span <= 2 * width + 1:
        cur[:-span] = np.maximum(cur[:-span], cur[span:])
        span *= 2
    k = np.arange(values.size)
    window = np.maximum(cur[k], cur[k + 2 * width + 1 - span])
    peaks, last = [], None
    for k in np.flatnonzero(values >= window):
        if last is not None and k - last <= width and values[last] == values[k]:
            continue
        peaks.append(int(k))
        last = k
    peaks.sort(key=lambda j: (-values[j], j))
    return [(start + j, min(1.0, float(values[j]))) for j in peaks[:top]]
