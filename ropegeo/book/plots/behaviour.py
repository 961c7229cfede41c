"""Figures of Gate C: trained heads by position, by displacement, across seeds.

Conditions are passed as a mapping ``label -> list of Evaluation`` (one evaluation per seed):
each seed is drawn as a thin line and the mean over seeds as a thick one, so an effect that
only some seeds show stays visible.
"""

from __future__ import annotations

import numbers

import numpy as np
from matplotlib.figure import Figure

from ropegeo import _validate as v
from ropegeo.book.plots.readable import finish, panels, valid_layout
from ropegeo.toy import MAX_BINS, MAX_PROFILE_CELLS, MAX_PROFILE_LENGTH, MAX_SEEDS, Evaluation, OffsetHead, SeedResults
from ropegeo.toy import score_profile as _score_values

#: Most conditions (labelled lists of evaluations) or result rows one figure draws (a full
#: ``ropegeo.toy.compare`` table has at most 16 x 16 rows).
MAX_TABLE_ROWS = 256

__all__ = [
    "accuracy_mass_by_position",
    "accuracy_mass_by_displacement",
    "attention_by_displacement",
    "score_profile_figure",
    "seed_table",
]

_COLOURS = ("#1f6f8b", "#c8553d", "#588b41", "#8a5a9e", "#d4a017", "#444444")


def _nanmean(ys: np.ndarray) -> np.ndarray:
    """Mean over seeds (axis 0) ignoring NaN (empty bins); NaN where every seed is NaN."""
    ok = np.isfinite(ys)
    n = ok.sum(axis=0)
    total = np.where(ok, ys, 0.0).sum(axis=0)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def _items(name: str, items, most: int, what: str) -> list:
    """An iterable as a list of 1 to ``most`` items, or a ValueError naming ``name``."""
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise ValueError(f"{name} must be a non-empty list of {what}, got {items!r}")
    out = []
    for item in items:
        if len(out) == most:
            raise ValueError(f"{name} must hold at most {most} {what}, got more")
        out.append(item)
    if not out:
        raise ValueError(f"{name} must be a non-empty list of {what}")
    return out


def _conditions(evaluations) -> dict:
    if isinstance(evaluations, Evaluation):
        evaluations = {"": [evaluations]}
    elif isinstance(evaluations, SeedResults):
        evaluations = {evaluations.label: list(evaluations.evaluations)}
    elif isinstance(evaluations, (list, tuple)):
        evaluations = {"": list(evaluations)}
    if not isinstance(evaluations, dict) or not evaluations:
        raise ValueError("evaluations must be a non-empty mapping label -> list of Evaluation (one per seed)")
    if len(evaluations) > MAX_TABLE_ROWS:
        raise ValueError(f"evaluations must hold at most MAX_TABLE_ROWS = {MAX_TABLE_ROWS} conditions, "
                         f"got {len(evaluations)}")
    out = {}
    for label, evs in evaluations.items():
        if isinstance(evs, SeedResults):
            evs = list(evs.evaluations)
        evs = [evs] if isinstance(evs, Evaluation) else _items(f"evaluations[{label!r}]", evs, MAX_SEEDS,
                                                               "Evaluation objects (one per seed)")
        if not all(isinstance(e, Evaluation) for e in evs):
            raise ValueError(f"evaluations[{label!r}] must be a non-empty list of Evaluation objects")
        out[str(label)] = evs
    return out


def _binned_panels(evaluations, by: str, bins, title: str, xlabel: str, layout: str = "wide") -> Figure:
    conds = _conditions(evaluations)
    fig, grid = panels(valid_layout(layout), 2, wide_size=(9.0, 3.4), panel_height=2.9, sharex=True)
    ax_acc, ax_mass = grid[0]
    for c, (label, evs) in enumerate(conds.items()):
        colour = _COLOURS[c % len(_COLOURS)]
        length = max(e.length for e in evs)
        edges = np.linspace(0.0, float(length), bins + 1) if isinstance(bins, int) else bins
        curves = [getattr(e, by)(edges) for e in evs]
        x = curves[0].centres
        for name, ax in (("accuracy", ax_acc), ("mass", ax_mass)):
            ys = np.array([getattr(b, name) for b in curves])
            for y in ys:
                ax.plot(x, y, color=colour, lw=0.8, alpha=0.35)
            ax.plot(x, _nanmean(ys), color=colour, lw=2.2, marker="o", ms=3,
                    label=f"{label} ({len(evs)} seeds)" if label else f"{len(evs)} seeds")
    ax_acc.set_ylabel("accuracy (winner = target)")
    ax_mass.set_ylabel("attention mass on target")
    for ax in (ax_acc, ax_mass):
        ax.set(xlabel=xlabel, ylim=(-0.03, 1.03))
        ax.grid(alpha=0.3)
    ax_acc.legend(fontsize=8, loc="best")
    fig.suptitle(title)
    return finish(fig, layout)


def accuracy_mass_by_position(evaluations, *, bins: int = 16, title: str = "By absolute query position",
                              layout: str = "wide") -> Figure:
    """Accuracy and mass on the target against the query's absolute position, per seed and mean.

    ``bins``: a count of equal bins over ``[0, length]`` (1 to ``ropegeo.toy.MAX_BINS``) or increasing edges.
    """
    return _binned_panels(evaluations, "by_position", _bins(bins), title, "query position", layout)


def accuracy_mass_by_displacement(evaluations, *, bins=16, title: str = "By displacement to the target") -> Figure:
    """Accuracy and attention mass against the target displacement (see :func:`accuracy_mass_by_position`)."""
    return _binned_panels(evaluations, "by_displacement", _bins(bins), title, "displacement query - target")


def _bins(bins):
    """A bin count (int) or validated increasing edges (float array)."""
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        return v.integer("bins", bins, minimum=1, maximum=MAX_BINS)
    edges = v.finite_array("bins", bins)
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("bins must be a positive integer or an increasing array of at least two edges")
    if edges.size > MAX_BINS + 1:
        raise ValueError(f"bins must give at most MAX_BINS = {MAX_BINS} bins, got {edges.size - 1}")
    return edges


def attention_by_displacement(evaluations, *, max_displacement: int | None = None, log: bool = False,
                              title: str = "Where the attention goes", layout: str = "wide") -> Figure:
    """Mean attention weight at each displacement (up to ``max_displacement``), per seed and mean;
    ``log`` shows small leaks such as a distant rival.
    """
    conds = _conditions(evaluations)
    if max_displacement is not None:
        max_displacement = v.length("max_displacement", max_displacement)
    valid_layout(layout)
    fig = Figure(figsize=(8.0, 3.4), layout="constrained")
    ax = fig.subplots()
    for c, (label, evs) in enumerate(conds.items()):
        colour = _COLOURS[c % len(_COLOURS)]
        n = min(e.length for e in evs)
        stop = n if max_displacement is None else min(n, max_displacement + 1)
        ys = np.array([e.attention_by_displacement[1:stop] for e in evs])
        x = np.arange(1, stop)
        for y in ys:
            ax.plot(x, y, color=colour, lw=0.8, alpha=0.35)
        ax.plot(x, _nanmean(ys), color=colour, lw=2.0, label=label or None)
    if log:
        ax.set_yscale("log")
    ax.set(xlabel="distance back −δ = m − n", ylabel="mean attention weight")
    ax.grid(alpha=0.3)
    if any(conds):
        ax.legend(fontsize=8)
    ax.set_title(title)
    return finish(fig, layout)


def score_profile_figure(heads, horizon: int, *, per_pair: bool = False, title: str | None = None,
                  layout: str = "wide") -> Figure:
    """The learned ``score(delta)`` of offset heads (at most ``ropegeo.toy.MAX_SEEDS``) up to ``horizon``.

    ``horizon`` runs 2 to ``ropegeo.toy.MAX_PROFILE_LENGTH`` (``horizon * pairs`` at most
    ``MAX_PROFILE_CELLS``); the training window is shaded, the target marked; ``per_pair`` adds each
    pair's contribution for the first head.
    """
    if isinstance(heads, OffsetHead):
        heads = [heads]
    heads = _items("heads", heads, MAX_SEEDS, "OffsetHead objects")
    if not all(isinstance(h, OffsetHead) for h in heads):
        raise ValueError("heads must be a non-empty list of OffsetHead")
    horizon = v.integer("horizon", horizon, minimum=2, maximum=MAX_PROFILE_LENGTH)
    pairs = max(h.theta.size for h in heads)
    if horizon * pairs > MAX_PROFILE_CELLS:
        raise ValueError(f"horizon must be at most {MAX_PROFILE_CELLS // pairs:,} for heads with {pairs} pairs "
                         f"(MAX_PROFILE_CELLS = {MAX_PROFILE_CELLS:,}), got {horizon:,}")
    per_pair = v.boolean("per_pair", per_pair)
    column = valid_layout(layout) == "column"
    deltas = np.arange(1, horizon + 1)
    fig = Figure(figsize=(9.0, 3.6 if not per_pair else 6.4) if not column else (5.2, 3.4 if not per_pair else 7.0),
                 layout="constrained")
    axes = fig.subplots(2 if per_pair else 1, 1, sharex=True, squeeze=False)[:, 0]
    ax = axes[0]
    for i, h in enumerate(heads):
        ax.plot(deltas, _score_values(h, deltas), lw=1.0, color=_COLOURS[i % len(_COLOURS)], label=f"seed {h.seed}")
    L = heads[0].train_length
    for a in axes:
        a.axvspan(1, L, color="0.85", zorder=0, label="training window" if a is ax else None)
        a.axvline(heads[0].offset, color="k", lw=0.8, ls=":")
        a.grid(alpha=0.3)
    ax.set_ylabel("score (logit)")
    ax.legend(fontsize=7, ncol=2 if not column else 1)
    if per_pair:
        parts = _score_values(heads[0], deltas, per_pair=True)
        for j in range(parts.shape[1]):
            axes[1].plot(deltas, parts[:, j], lw=1.0, label=f"pair {j}")
        axes[1].set_ylabel(f"per-pair contribution (seed {heads[0].seed})" if not column
                           else f"per pair (seed {heads[0].seed})")
        axes[1].set_yscale("symlog", linthresh=1.0)  # the fastest pair's swing would flatten the slow pairs
        axes[1].legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.22))  # below: off the data
    axes[-1].set_xlabel("distance back −δ = m − n")
    ax.set_title(title or (f"Learned score profile, trained on displacements < {L}" if not column
                           else f"Learned score, trained on distances < {L}"))
    return finish(fig, layout)


def seed_table(results, *, title: str = "Accuracy and mass per seed", layout: str = "wide") -> Figure:
    """Per-seed accuracy and mass of several conditions (``results``: SeedResults, at most
    :data:`MAX_TABLE_ROWS`) as dot plots."""
    if isinstance(results, SeedResults):
        results = [results]
    results = _items("results", results, MAX_TABLE_ROWS, "SeedResults")
    if not all(isinstance(r, SeedResults) for r in results):
        raise ValueError("results must be a non-empty list of SeedResults")
    fig, grid = panels(valid_layout(layout), 2, wide_size=(9.0, 0.45 * len(results) + 1.4),
                       panel_height=0.42 * len(results) + 1.0, sharey=True)
    ax_acc, ax_mass = grid[0]
    if layout == "column":
        ax_mass.tick_params(labelleft=True)
    y = np.arange(len(results))[::-1]
    for yi, r in zip(y, results):
        for ax, vals in ((ax_acc, r.accuracy), (ax_mass, r.mass)):
            ax.scatter(vals, np.full(vals.shape, yi), s=14, color=_COLOURS[0], alpha=0.6)
            ax.plot([vals.mean()], [yi], marker="|", ms=14, color="k")
    ax_acc.set_yticks(y, [r.label for r in results], fontsize=8)
    if layout == "column":
        ax_mass.set_yticks(y, [r.label for r in results], fontsize=8)
    ax_acc.set_xlabel("accuracy")
    ax_mass.set_xlabel("mass on target")
    for ax in (ax_acc, ax_mass):
        ax.set_xlim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    return finish(fig, layout)
