"""Gate C on a grid: a content-free head with a multi-axis bank, trained to attend at a fixed 2D offset.

Chapter 6's head moved to a grid of patches: patch ``p = (x, y)`` rotates pair ``i`` by ``p . f_i``
(the rows of a ``(pairs, 2)`` matrix from :mod:`ropegeo.multiaxis`), so the score depends on
``delta = p - p'`` only: ``sum_i a_i cos(delta . f_i) + b_i sin(delta . f_i)``. Every query
attends over all other patches (not causal) and is trained, by full-batch Adam with the gradient
derived by hand, to attend to the patch at ``p + target``. :func:`split_study` trains one head per
seed for each split of a bank between the axes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ropegeo import _validate as v
from ropegeo.softmax import softmax, softmax_rows
from ropegeo.toy import MAX_STEPS, Adam, check_trained, one_blas_thread, seed_list, training_settings
from ropegeo.toy.training import _pair_coefficients, _pair_gradients

__all__ = ["MAX_GRID", "AxialHead", "AxialEvaluation", "axial_scores", "axial_head_loss", "train_axial_head",
           "evaluate_axial", "split_study", "budget_study", "crossing", "confusion", "factor_agreement"]

#: Largest grid side: one step holds a few (side**2, side**2) arrays.
MAX_GRID = 32


@dataclass(frozen=True)
class AxialHead:
    """A trained content-free head on a ``grid`` of patches.

    ``q, k``: shape ``(2 * pairs,)``, interleaved; ``freqs``: shape ``(pairs, 2)``, radians per patch
    along (x, y); ``target``: the displacement ``key - query`` trained for.
    """

    q: np.ndarray
    k: np.ndarray
    freqs: np.ndarray
    target: tuple
    grid: tuple
    seed: int
    losses: np.ndarray

    def amplitudes(self) -> np.ndarray:
        """Weight of every pair in the score, ``hypot(a_i, b_i)``."""
        a, b = _pair_coefficients(self.q, self.k)
        return np.hypot(a, b)


def _layout(grid, target):
    """Patch coordinates, displacement index per (query, key), training queries and their targets."""
    gx, gy = grid
    xs, ys = np.meshgrid(np.arange(gx), np.arange(gy), indexing="xy")
    pos = np.stack([xs.ravel(), ys.ravel()], axis=1)  # patch n at (x, y), n = y * gx + x
    delta = pos[:, None, :] - pos[None, :, :]  # query minus key
    index = (delta[..., 0] + gx - 1) * (2 * gy - 1) + (delta[..., 1] + gy - 1)
    table = np.stack(np.meshgrid(np.arange(-(gx - 1), gx), np.arange(-(gy - 1), gy), indexing="ij"), -1).reshape(-1, 2)
    goal = pos + np.asarray(target)
    inside = np.flatnonzero((goal[:, 0] >= 0) & (goal[:, 0] < gx) & (goal[:, 1] >= 0) & (goal[:, 1] < gy))
    return pos, index, table, inside, goal[inside, 1] * gx + goal[inside, 0]


def _check(freqs, grid, target):
    F = v.finite_array("freqs", freqs)
    if F.ndim != 2 or F.shape[1] != 2 or F.shape[0] == 0 or F.shape[0] > 256:
        raise ValueError(f"freqs must have shape (pairs, 2) with 1 to 256 pairs, got {F.shape}")
    if not v.is_collection(grid) or len(list(grid)) != 2:
        raise ValueError(f"grid must be a pair (patches along x, patches along y), got {grid!r}")
    g = tuple(v.integer("grid", n, minimum=2, maximum=MAX_GRID) for n in grid)
    if not v.is_collection(target) or len(list(target)) != 2:
        raise ValueError(f"target must be a pair (dx, dy), got {target!r}")
    t = tuple(v.integer("target", d, minimum=-(n - 1), maximum=n - 1) for d, n in zip(target, g))
    if t == (0, 0):
        raise ValueError("target must not be (0, 0): a query never attends to itself")
    return F, g, t


def _prepared(g, t, F):
    """What a training step reuses: phases per displacement, gathered indices, the self mask."""
    _, index, table, inside, goal = _layout(g, t)
    ang = table @ F.T
    sel = index[inside]
    keep = np.ones(sel.shape)
    keep[np.arange(inside.size), inside] = 0.0  # never the query itself
    return np.cos(ang), np.sin(ang), sel, keep, goal


def _loss(q, k, cos, sin, sel, keep, goal):
    """Loss, gradients and attention for the training queries (unchecked)."""
    a, b = _pair_coefficients(q, k)
    s = cos @ a + sin @ b  # one score per displacement
    rows = s[sel]  # (queries, keys)
    n = goal.size
    hit = np.arange(n), goal
    target = rows[hit]
    p, top, z = softmax_rows(rows, keep)
    loss = float((np.log(z[:, 0]) + top[:, 0] - target).sum() / n)
    resid = p.copy()
    resid[hit] -= 1.0
    g = np.bincount(sel.ravel(), weights=resid.ravel(), minlength=s.size) / n
    return (loss, *_pair_gradients(q, k, cos.T @ g, sin.T @ g), p)


def axial_scores(head: AxialHead) -> np.ndarray:
    """Scores of every query patch for every key patch, shape (patches, patches), from the head's coefficients."""
    pos, index, table, _, _ = _layout(head.grid, head.target)
    a, b = _pair_coefficients(head.q, head.k)
    ang = table @ head.freqs.T
    return (np.cos(ang) @ a + np.sin(ang) @ b)[index]


def axial_head_loss(q, k, freqs, *, target=(2, 3), grid=(8, 8)) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean ``-log`` attention on the target patch over the queries whose target is on the grid,
    and its exact gradient: ``(loss, dq, dk)``.
    """
    F, g, t = _check(freqs, grid, target)
    q = v.finite_array("q", q)
    k = v.finite_array("k", k)
    if q.shape != (2 * F.shape[0],) or k.shape != q.shape:
        raise ValueError(f"q and k must have shape ({2 * F.shape[0]},), got {q.shape} and {k.shape}")
    loss, dq, dk, _ = _loss(q, k, *_prepared(g, t, F))
    return loss, dq, dk


def train_axial_head(freqs, *, target=(2, 3), grid=(8, 8), steps: int = 300, lr: float = 0.05,
                     init_std: float = 0.3, seed: int = 0) -> AxialHead:
    """Train a content-free grid head to attend to the patch at ``query + target``.

    ``freqs`` has shape ``(pairs, 2)``; ``target`` is not (0, 0) and inside the grid; ``grid`` sides
    are 2 to :data:`MAX_GRID`; ``steps, lr, init_std`` as for chapter 6's heads.

    Examples
    --------
    >>> from ropegeo.multiaxis import axial_bank
    >>> h = train_axial_head(axial_bank(8, 100.0), steps=50)
    >>> bool(h.losses[-1] < h.losses[0])
    True
    """
    F, g, t = _check(freqs, grid, target)
    steps, lr, init_std = training_settings(steps, lr, init_std)
    seed = v.integer("seed", seed, minimum=0)
    q, k = np.random.default_rng(seed).normal(scale=init_std, size=(2, 2 * F.shape[0]))
    losses = _train(q, k, F, g, t, steps, lr)
    check_trained((q, k), losses, lr, init_std)
    return AxialHead(q, k, F, t, g, seed, losses)


def _train(q, k, F, g, t, steps, lr, record=()):
    """Adam on (q, k) in place; with ``record``, also returns copies of (q, k) after those step counts."""
    prepared = _prepared(g, t, F)
    opt = Adam([q, k], lr)
    losses, kept = np.empty(steps), {}
    with np.errstate(over="ignore", invalid="ignore"), one_blas_thread():
        for step in range(steps):
            losses[step], dq, dk, _ = _loss(q, k, *prepared)
            opt.step([dq, dk])
            if step + 1 in record:
                kept[step + 1] = (q.copy(), k.copy())
    return (losses, kept) if record else losses


@dataclass(frozen=True)
class AxialEvaluation:
    """Where a grid head's attention goes, averaged over the queries whose target is on the grid.

    ``accuracy``: share whose largest attention is on the target; ``same_x_mass`` / ``same_y_mass``:
    mass at the right x / y offset and a wrong other one; ``other_mass``: the rest;
    ``edge_pick``: share whose largest attention is on the target's column in the grid's last row
    along the target's y direction (what a head that only ranks rows picks); ``column_ramp``: whether
    the score along the target's column rises strictly with the key's row towards that direction.
    """

    accuracy: float
    target_mass: float
    same_x_mass: float
    same_y_mass: float
    other_mass: float
    edge_pick: float
    column_ramp: bool


def evaluate_axial(head: AxialHead) -> AxialEvaluation:
    """Read a trained grid head: accuracy, and where its attention goes (:class:`AxialEvaluation`)."""
    if not isinstance(head, AxialHead):
        raise ValueError(f"head must be an AxialHead, got {type(head).__name__}")
    pos, index, table, inside, goal = _layout(head.grid, head.target)
    seen = np.ones((inside.size, pos.shape[0]), dtype=bool)
    seen[np.arange(inside.size), inside] = False
    p = softmax(axial_scores(head)[inside], seen)
    rel = pos[None, :, :] - pos[inside][:, None, :]  # key minus query
    right_x, right_y = rel[..., 0] == head.target[0], rel[..., 1] == head.target[1]
    n, top, up = np.arange(inside.size), p.argmax(axis=1), 1 if head.target[1] >= 0 else -1
    dy = np.arange(1 - head.grid[1], head.grid[1]) * up  # key row minus query row, towards the target
    ang = np.stack([np.full(dy.size, -head.target[0]), -dy], axis=1) @ head.freqs.T  # query minus key
    a, b = _pair_coefficients(head.q, head.k)
    return AxialEvaluation(accuracy=float(np.mean(top == goal)),
                           target_mass=float(np.mean(p[n, goal])),
                           same_x_mass=float(np.mean(np.sum(p * (right_x & ~right_y), axis=1))),
                           same_y_mass=float(np.mean(np.sum(p * (right_y & ~right_x), axis=1))),
                           other_mass=float(np.mean(np.sum(p * (~right_x & ~right_y), axis=1))),
                           edge_pick=float(np.mean(right_x[n, top] & (pos[top, 1] == (head.grid[1] - 1 if up > 0 else 0)))),
                           column_ramp=bool(np.all(np.diff(np.cos(ang) @ a + np.sin(ang) @ b) > 0)))


def split_study(splits: dict, seeds=range(10), **options) -> dict:
    """Train one head per seed (at most :data:`ropegeo.toy.MAX_SEEDS`) for every named split and evaluate it.

    ``options`` go to :func:`train_axial_head`. Returns ``{name: {field: array (seeds,)}}`` with the
    fields of :class:`AxialEvaluation`.
    """
    seeds = seed_list(seeds)
    if not isinstance(splits, dict) or not splits or len(splits) > 16:
        raise ValueError("splits must be a dict of 1 to 16 named frequency matrices")
    out = {}
    for name, F in splits.items():
        rows = [evaluate_axial(train_axial_head(F, seed=s, **options)) for s in seeds]
        out[name] = {f: np.array([getattr(r, f) for r in rows]) for f in AxialEvaluation.__dataclass_fields__}
    return out


def budget_study(freqs, budgets, seeds=range(10), *, target=(2, 3), grid=(8, 8), lr: float = 0.05,
                 init_std: float = 0.3) -> dict:
    """Accuracy and target mass per seed after each training budget (one run per seed, read at each budget).

    Returns ``{"budgets": list, "accuracy": (budgets, seeds), "target_mass": (budgets, seeds)}``.
    """
    F, g, t = _check(freqs, grid, target)
    seeds = seed_list(seeds)
    if not v.is_collection(budgets):
        raise ValueError(f"budgets must be a list of step counts, got {budgets!r}")
    b = sorted({v.integer("budgets", n, minimum=1, maximum=MAX_STEPS) for n in list(budgets)[:64]})
    if not b:
        raise ValueError("budgets must hold at least one step count")
    _, lr, init_std = training_settings(b[-1], lr, init_std)
    acc, mass = np.empty((len(b), len(seeds))), np.empty((len(b), len(seeds)))
    for j, s in enumerate(seeds):
        q, k = np.random.default_rng(s).normal(scale=init_std, size=(2, 2 * F.shape[0]))
        losses, kept = _train(q, k, F, g, t, b[-1], lr, record=set(b))
        for i, n in enumerate(b):
            e = evaluate_axial(AxialHead(*kept[n], F, t, g, s, losses[:n]))
            acc[i, j], mass[i, j] = e.accuracy, e.target_mass
    return {"budgets": b, "accuracy": acc, "target_mass": mass}


def crossing(masses, budgets, cut: float = 0.5, spread: float = 1e-3) -> tuple[int, int, bool]:
    """The bracket ``(lo, hi]`` of budgets where every seed's target mass (``masses``: budgets x seeds) reaches ``cut``.

    A budget whose lowest seed lies within ``spread`` of the cut sits on it (rounding on another CPU could
    put it on either side), so the bracket widens past it; the flag says whether it did.

    >>> crossing([[0.4, 0.6], [0.4999, 0.7], [0.6, 0.8]], [10, 20, 30])
    (10, 30, True)
    """
    lows = np.asarray(v.finite_array("masses", masses)).min(axis=1)
    b = [v.integer("budgets", n, minimum=0) for n in budgets]
    above = np.flatnonzero(lows >= cut)
    if lows.size != len(b) or not above.size or above[0] == 0:
        raise ValueError("masses must have one row per budget, start below the cut and reach it")
    lo, hi = int(above[0]) - 1, int(above[0])
    while lo > 0 and lows[lo] > cut - spread:
        lo -= 1
    while hi < len(b) - 1 and lows[hi] < cut + spread:
        hi += 1
    return b[lo], b[hi], (lo, hi) != (above[0] - 1, above[0])


def confusion(said: dict, got: dict) -> dict:
    """Counts ``tp, fp, fn, tn`` of a verdict per split (``said``: passes) against trained success (``got``)."""
    if set(said) != set(got):
        raise ValueError("said and got must name the same splits")
    cells = {"tp": (True, True), "fp": (True, False), "fn": (False, True), "tn": (False, False)}
    return {k: sum(bool(said[n]) == s and bool(got[n]) == g for n in said) for k, (s, g) in cells.items()}


def factor_agreement(factor: dict, study: dict) -> dict:
    """How often the split with the smaller ``factor`` trains better, over the pairs of splits whose factors differ.

    Returns ``pairs``, ``untied`` (pairs whose mean accuracies differ), ``accuracy_agree`` (of those, the smaller
    factor has the higher accuracy) and ``mass_agree`` (of all pairs, the higher mean target mass).
    """
    if set(factor) != set(study):
        raise ValueError("factor and study must name the same splits")
    mean = {n: (float(np.mean(study[n]["accuracy"])), float(np.mean(study[n]["target_mass"]))) for n in study}
    pairs = [(a, c) for a in factor for c in factor if factor[a] < factor[c]]
    untied = [(a, c) for a, c in pairs if mean[a][0] != mean[c][0]]
    return {"pairs": len(pairs), "untied": len(untied), "accuracy_agree": sum(mean[a][0] > mean[c][0] for a, c in untied),
            "mass_agree": sum(mean[a][1] > mean[c][1] for a, c in pairs)}
