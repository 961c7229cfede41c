"""The 2D kernel lab: one frequency bank split between two position axes, ``K(dx, dy)`` on a patch grid.

Pair ``i`` gets a 2D frequency ``(fx_i, fy_i)`` and ``K(dx, dy) = (1/P) sum_i cos(dx fx_i + dy fy_i)``.
The split of ``theta_i = B ** (-2 i / d)`` decides what each axis resolves:

- ``"blocked"``: the first half of the pairs (rounded up; the fast ones) turn with x, the rest with
  y, as M-RoPE lays out its sections (Qwen2-VL): y gets only slow pairs;
- ``"interleaved"``: even pairs with x, odd with y (Qwen3-VL's interleaved M-RoPE);
- ``"share"``: the first ``floor(x_share * P + 0.5)`` pairs with x;
- ``"mixed"``: every pair along ``phi_i = i * golden angle``, ``fx_i = theta_i cos(phi_i)``,
  ``fy_i = theta_i sin(phi_i)`` (RoPE-Mixed, Heo et al. 2024, learns its directions).

The near-returns are the offsets other than ``(0, 0)`` whose ``K`` exceeds a threshold.
:func:`reference` is the page's computation in numpy (a direct sum of cosines).
"""

from __future__ import annotations

import math

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies
from ropegeo.multiaxis import kernel_grid
from ropegeo.book.widgets._lab import Lab, esm_source

__all__ = ["AxesLab", "reference", "split_frequencies", "SPLITS", "GOLDEN_ANGLE", "MAX_LAB_HEAD_DIM", "MAX_LAB_GRID"]

#: Largest head dimension the lab accepts (as the kernel lab).
MAX_LAB_HEAD_DIM = 256
#: Largest grid half-width G: offsets -G..G on each axis, (2G + 1)^2 of them per update.
MAX_LAB_GRID = 64
#: The ways of splitting the pairs between the axes.
SPLITS = ("blocked", "interleaved", "share", "mixed")
#: The angle between the directions of consecutive pairs in the ``"mixed"`` split (radians).
GOLDEN_ANGLE = math.pi * (3.0 - math.sqrt(5.0))
_MAX_TOP = 20


class AxesLab(Lab):
    """The 2D kernel ``K(dx, dy)`` of a bank split between two axes (controls: ``DEFAULTS``, ``BOUNDS``).

    ``split`` as in the module docstring; ``x_share``: fraction of the pairs on x under ``"share"``;
    ``grid``: offsets ``-grid..grid`` on each axis; ``threshold``: ``K`` above it off the origin is a
    near-return; ``top``: how many of the largest ``K`` off the origin to list.

    Examples
    --------
    >>> AxesLab(head_dim=32, split="interleaved")  # doctest: +SKIP
    """

    _esm = esm_source("lab_axes.js")
    BOUNDS = {"head_dim": (2, MAX_LAB_HEAD_DIM), "base": (10.0, 1e7), "split": SPLITS, "x_share": (0.0, 1.0),
              "grid": (1, MAX_LAB_GRID), "threshold": (0.0, 0.99), "top": (1, _MAX_TOP)}

    DEFAULTS = {"head_dim": 16, "base": 100.0, "split": "blocked", "x_share": 0.5, "grid": 32, "threshold": 0.9,
                "top": 5}


def split_frequencies(head_dim: int, base: float, split: str = "blocked", x_share: float = 0.5):
    """The per-pair frequency vectors ``(fx, fy)``, shape (head_dim // 2,) each, radians per patch.

    Raises ``ValueError`` naming a parameter out of range (``head_dim`` up to :data:`MAX_LAB_HEAD_DIM`).

    Examples
    --------
    >>> fx, fy = split_frequencies(8, 100.0, "blocked")
    >>> fx.round(3).tolist(), fy.round(3).tolist()
    ([1.0, 0.316, 0.0, 0.0], [0.0, 0.0, 0.1, 0.032])
    >>> fx, fy = split_frequencies(8, 100.0, "interleaved")
    >>> fx.round(3).tolist(), fy.round(3).tolist()
    ([1.0, 0.0, 0.1, 0.0], [0.0, 0.316, 0.0, 0.032])
    """
    head_dim = v.head_dim(head_dim, maximum=MAX_LAB_HEAD_DIM)
    theta = frequencies(head_dim, v.base(base))
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(map(repr, SPLITS))}, got {split!r}")
    x_share = v.real("x_share", x_share, minimum=0.0, maximum=1.0)
    return _split(theta, split, x_share)


def _split(theta: np.ndarray, split: str, x_share: float):
    pairs = theta.size
    i = np.arange(pairs)
    if split == "mixed":
        phi = i * GOLDEN_ANGLE
        return theta * np.cos(phi), theta * np.sin(phi)
    if split == "interleaved":
        on_x = i % 2 == 0
    else:
        n_x = (pairs + 1) // 2 if split == "blocked" else math.floor(x_share * pairs + 0.5)
        on_x = i < n_x
    return np.where(on_x, theta, 0.0), np.where(on_x, 0.0, theta)


def reference(state: dict) -> dict:
    """ropegeo's numbers for a lab state (``AxesLab.state()``; ``ValueError`` out of the lab's bounds).

    ``k``: the grid of :func:`ropegeo.multiaxis.kernel_grid` (row ``dy + G``, column ``dx + G``);
    ``fx``, ``fy``, ``pairs``, ``x_pairs``, ``y_pairs``; ``count``: offsets off the origin with
    ``K > threshold``; ``top``: ``(dx, dy, K)`` of the largest ``K`` with ``dy > 0`` or ``dy = 0, dx > 0``,
    largest first, ties by ``dy`` then ``dx``.
    """
    # the lab's own bounds, so that the reference never runs longer than one lab update
    lo, hi = AxesLab.BOUNDS["base"]
    st = {"head_dim": v.head_dim(state["head_dim"], maximum=MAX_LAB_HEAD_DIM),
          "base": v.real("base", state["base"], minimum=lo, maximum=hi),
          "split": state["split"], "x_share": state["x_share"],
          "grid": v.integer("grid", state["grid"], minimum=1, maximum=MAX_LAB_GRID),
          "threshold": v.real("threshold", state["threshold"], minimum=0.0, maximum=AxesLab.BOUNDS["threshold"][1]),
          "top": v.integer("top", state["top"], minimum=1, maximum=_MAX_TOP)}
    fx, fy = split_frequencies(st["head_dim"], st["base"], st["split"], st["x_share"])
    G = st["grid"]
    k = kernel_grid(np.stack([fx, fy], axis=1), G)  # ropegeo.multiaxis: the grid of a two-axis bank
    dy, dx = np.meshgrid(np.arange(-G, G + 1), np.arange(-G, G + 1), indexing="ij")
    off_origin = (dx != 0) | (dy != 0)
    count = int(np.sum(off_origin & (k > st["threshold"])))
    half = (dy > 0) | ((dy == 0) & (dx > 0))
    kk, xs, ys = k[half], dx[half], dy[half]
    order = np.lexsort((xs, ys, -kk))[: st["top"]]  # K descending, then dy, then dx ascending
    return {"k": k, "fx": fx, "fy": fy, "pairs": fx.size, "x_pairs": int(np.sum(fx != 0)),
            "y_pairs": int(np.sum(fy != 0)), "count": count,
            "top": [(int(xs[j]), int(ys[j]), float(kk[j])) for j in order]}

