"""Figures of chapter 4: context-extension rules as rulers, their trade-off, real models.
"""

from __future__ import annotations


import math
import textwrap
from typing import Mapping

import numpy as np
from matplotlib.figure import Figure

from ropegeo import _validate as v
from ropegeo.book.plots.readable import MIN_FONT_PT, finish, panels, valid_layout
from ropegeo.frequencies import wavelengths
from ropegeo.models.manifest import RopeManifest
from ropegeo.novelty import JointNovelty

__all__ = ["draw_ruler", "draw_ruler_family", "ruler_panels", "stretch_profile", "tradeoff_plot", "model_ladders",
           "joint_novelty_plot", "ramp_comparison"]

_KEEP, _PART, _FULL, _BASE = "#087A98", "#b7791f", "#8b1e3f", "#9a9a9a"
_MAX_RULES = 16  # the rules or models one figure draws (13 shipped models today)
_MAX_PAIRS = 1024
_MAX_FAMILY = 8
_STYLES = ("-", "--", "-.", ":")
#: one marker per drawn series where dashed and dotted lines already mark lengths and thresholds
_MARKERS = ("o", "s", "^", "D", "v", "x", "P", "*", "<", ">", "h", "+")


def _figure(layout: str, wide_size: tuple, column_size: tuple) -> Figure:
    """A wide figure (laid out by :func:`_tight`) or a constrained one for the text column."""
    return Figure(figsize=wide_size) if layout == "wide" else Figure(figsize=column_size, layout="constrained")


def _tight(fig: Figure, layout: str) -> Figure:
    if layout == "wide":
        fig.tight_layout()
    return finish(fig, layout)


def _stacked(y: np.ndarray, gap: float, top: float = np.inf) -> np.ndarray:
    """Label heights nearest to the sorted heights ``y`` that keep ``gap`` between neighbours, none above ``top``.

    Least squares under ``out[i+1] - out[i] >= gap``: subtract ``i * gap``, fit a non-decreasing sequence by
    pooling adjacent violators, add ``i * gap`` back, cap the top labels under ``top``. Keeps the order of ``y``."""
    q = y - gap * np.arange(y.size)
    blocks = []  # [mean, count]
    for value in q:
        blocks.append([value, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m2, c2), (m1, c1) = blocks.pop(), blocks.pop()
            blocks.append([(m1 * c1 + m2 * c2) / (c1 + c2), c1 + c2])
    fitted = np.concatenate([np.full(c, m) for m, c in blocks])
    return np.minimum(fitted + gap * np.arange(y.size), top - gap * np.arange(y.size)[::-1])


def _label_points(fig: Figure, ax, points, labels, fontsize: float) -> None:
    """Label each point beside it (called once the figure is laid out).

    Points whose labels could overlap form a group; its labels are spread at least one line apart in
    the order of their points' heights, a thin line joining a moved label to its point.
    """
    fig.draw_without_rendering()
    xy = np.asarray(points, dtype=float)
    page = ax.transData.transform(xy) * 72.0 / fig.dpi  # points on the page
    box = ax.get_window_extent()
    left = page[:, 0] > (box.x0 + 0.75 * box.width) * 72.0 / fig.dpi
    width = 0.65 * fontsize * max(len(t) for t in labels) + 10.0
    heights = page[:, 1].copy()
    for group in _groups(page[:, 0], width):
        order = group[np.lexsort((page[group, 0], page[group, 1]))]
        heights[order] = _stacked(page[order, 1], 1.3 * fontsize, top=box.y1 * 72.0 / fig.dpi - 0.7 * fontsize)
    for (x, y), label, h, y0, to_left in zip(xy, labels, heights, page[:, 1], left):
        moved = abs(h - y0) > 0.25 * fontsize
        ann = ax.annotate(label, (x, y), textcoords="offset points", xytext=(-8 if to_left else 8, h - y0),
                          va="center", ha="right" if to_left else "left", fontsize=fontsize,
                          arrowprops=dict(arrowstyle="-", lw=0.5, color="0.4") if moved else None)
        ann.set_in_layout(False)


def _groups(x: np.ndarray, width: float) -> list:
    """Indices grouped so that points closer than ``width`` along x (in a chain) share a group."""
    order = np.argsort(x, kind="stable")
    groups, current = [], [order[0]]
    for a, b in zip(order[:-1], order[1:]):
        if x[b] - x[a] < width:
            current.append(b)
        else:
            groups.append(np.array(current))
            current = [b]
    groups.append(np.array(current))
    return groups


def _legend_below(fig: Figure, ax, layout: str, **wide_kw) -> None:
    """The axes' legend as drawn (``"wide"``, ``wide_kw``) or below the panels in one column (``"column"``)."""
    if layout == "wide":
        ax.legend(**wide_kw)
    else:
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=1, fontsize=11, frameon=False)


def _bank(where: str, th) -> np.ndarray:
    arr = v.finite_array(where, th)
    if arr.ndim != 1 or arr.size == 0 or arr.size > _MAX_PAIRS or np.any(arr <= 0):
        raise ValueError(f"{where} must be 1 to {_MAX_PAIRS} positive frequencies")
    return arr


def _thetas(thetas: Mapping, *, families: bool = False) -> dict:
    """Validate label -> frequencies; with ``families``, a value may also be a mapping
    current length -> frequencies (a rule that depends on the length, like dynamic NTK)."""
    if not isinstance(thetas, Mapping) or not thetas:
        raise ValueError("thetas must be a non-empty mapping of label -> frequencies")
    if len(thetas) > _MAX_RULES:
        raise ValueError(f"thetas holds {len(thetas)} rules; at most {_MAX_RULES} can be drawn")
    out, size = {}, None
    for label, th in thetas.items():
        if families and isinstance(th, Mapping):
            if not th or len(th) > _MAX_FAMILY:
                raise ValueError(f"thetas[{label!r}] must map 1 to {_MAX_FAMILY} lengths to frequencies")
            fam = {}
            for n, arr in th.items():
                n = v.real(f"a length of thetas[{label!r}]", n, greater_than=0.0)
                fam[n] = _bank(f"thetas[{label!r}][{n:g}]", arr)
            arrs = list(fam.values())
            value = fam
        else:
            value = _bank(f"thetas[{label!r}]", th)
            arrs = [value]
        for arr in arrs:
            if size is not None and arr.size != size:
                raise ValueError(f"every rule must have the same number of pairs; {label!r} has {arr.size}, not {size}")
            size = arr.size
        out[str(label)] = value
    return out


def _finish_ladder(ax, train_length: float, target_length: float, title, legend_size) -> None:
    """Training (dashed) and target (dotted) lengths, log wavelength axis, title, legend if ``legend_size``."""
    ax.axhline(train_length, color="0.25", lw=0.9, ls="--")
    ax.axhline(target_length, color="0.25", lw=0.9, ls=":")
    ax.set_yscale("log")
    if title:
        ax.set_title(title, fontsize=9)
    if legend_size:
        ax.legend(fontsize=legend_size, loc="upper left")


def draw_ruler(ax, base_theta, theta, train_length: float, target_length: float, *, title: str | None = None,
               legend: bool = False) -> None:
    """Draw one rule's wavelengths over the grey unscaled ladder on an existing axes.

    Pairs are coloured untouched (ratio within 0.1 % of 1), fully stretched (within 1 % of the rule's
    largest stretch, when above 1.001) or partly; dashed and dotted: training and target lengths.
    """
    lam0 = wavelengths(base_theta)
    lam = wavelengths(theta)
    ratio = lam / lam0
    idx = np.arange(lam.size)
    top = ratio.max()
    keep = np.abs(ratio - 1.0) <= 1e-3
    full = (~keep) & (ratio >= top * 0.99) if top > 1.001 else np.zeros_like(keep)
    part = ~keep & ~full
    ax.plot(idx, lam0, color=_BASE, lw=1.2, label="unscaled")
    ax.scatter(idx[keep], lam[keep], s=9, color=_KEEP, label="untouched", zorder=3)
    ax.scatter(idx[part], lam[part], s=9, color=_PART, label="partly stretched", zorder=3)
    ax.scatter(idx[full], lam[full], s=9, color=_FULL, label="fully stretched", zorder=3)
    _finish_ladder(ax, train_length, target_length, title, 7 if legend else None)


def draw_ruler_family(ax, base_theta, family: Mapping, train_length: float, target_length: float, *,
                      title: str | None = None, legend: bool = True) -> None:
    """Draw a length-dependent rule (``family``: current length -> frequencies) on an existing axes,
    one solid wavelength line per current length ℓ, light (short) to dark (long), each with its own marker
    (dashed and dotted stay the training and target lengths).
    """
    lam0 = wavelengths(base_theta)
    idx = np.arange(lam0.size)
    ax.plot(idx, lam0, color=_BASE, lw=1.2, label="unscaled")
    items = sorted(family.items())
    for k, (n, th) in enumerate(items):
        shade = 0.25 + 0.75 * (k + 1) / len(items)
        ax.plot(idx, wavelengths(th), color=(0.55 * (1 - shade), 0.12 + 0.35 * (1 - shade), 0.25 + 0.35 * shade),
                ls="-", marker=_MARKERS[k], ms=3.5, markevery=(k, 4), lw=1.3, label=f"ℓ = {n:,.0f}")
    _finish_ladder(ax, train_length, target_length, title, 6 if legend else None)


def ruler_panels(base_theta, thetas: Mapping, train_length: float, target_length: float, *, columns: int = 4,
                 layout: str = "wide") -> Figure:
    """Small multiples: each rule's wavelength per pair against the unscaled ladder ``base_theta``.

    ``thetas`` maps each rule (at most 12) to its frequencies, or (dynamic NTK) to at most 8 lengths ->
    frequencies, drawn as a family; ``columns`` (1 to 6): panels per row of the wide layout.
    """
    layout = valid_layout(layout)
    rules = _thetas(thetas, families=True)
    base = v.finite_array("base_theta", base_theta)
    first = next(iter(rules.values()))
    first = next(iter(first.values())) if isinstance(first, dict) else first
    if base.shape != first.shape:
        raise ValueError("base_theta must have one entry per pair, like the rules")
    train_length = v.real("train_length", train_length, greater_than=0.0)
    target_length = v.real("target_length", target_length, greater_than=0.0)
    columns = v.integer("columns", columns, minimum=1, maximum=6)
    wide = layout == "wide"
    if not wide:
        columns = min(2, len(rules))
    rows = math.ceil(len(rules) / columns)
    fig = _figure(layout, (2.6 * columns, 2.3 * rows + 0.6), (5.2, 2.5 * rows + (0.9 if len(rules) % columns == 0 else 0.5)))
    axes = fig.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
    for k, (label, th) in enumerate(rules.items()):
        ax = axes[k // columns][k % columns]
        if isinstance(th, dict):
            draw_ruler_family(ax, base, th, train_length, target_length, title=label, legend=wide)
        else:
            draw_ruler(ax, base, th, train_length, target_length, title=label, legend=wide and k == 0)
    for k in range(len(rules), rows * columns):
        axes[k // columns][k % columns].set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("pair i")
    if not wide and len(rules) % columns:  # the panel above the spare one is the lowest of its column
        axes[-2][-1].set_xlabel("pair i")
        axes[-2][-1].xaxis.set_tick_params(labelbottom=True)
    for row in axes:
        row[0].set_ylabel("wavelength (tokens)")
    sep = "\n" if not wide else "; "
    fig.suptitle(f"wavelength per pair{sep}dashed: training length {train_length:,.0f}, dotted: target "
                 f"{target_length:,.0f}", fontsize=9)
    if wide:
        fig.tight_layout()
        return fig
    _gather_legends(fig, axes, len(rules), columns)
    return finish(fig, layout)


def _gather_legends(fig: Figure, axes, count: int, columns: int) -> None:
    """Column layout of :func:`ruler_panels`: every panel's legend entries in the spare panel, or below."""
    handles, labels = [], []
    for ax in axes.flat[:count]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if count < axes.size:
        spare = axes.flat[count]
        spare.set_visible(True)
        spare.axis("off")
        spare.legend(handles, labels, loc="center", fontsize=11, frameon=False)
    else:
        fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=11, frameon=False)


def stretch_profile(base_theta, thetas: Mapping, *, layout: str = "wide") -> Figure:
    """Per-pair stretch ``theta_i / theta'_i`` of every rule on one log axis (1 = untouched).

    ``thetas`` maps each rule (at most 12) to its served frequencies, beside the unscaled ``base_theta``.
    """
    layout = valid_layout(layout)
    rules = _thetas(thetas)
    base = v.finite_array("base_theta", base_theta)
    if base.shape != next(iter(rules.values())).shape:
        raise ValueError("base_theta must have one entry per pair, like the rules")
    fig = _figure(layout, (7.2, 3.6), (5.2, 3.4 + 0.25 * len(rules)))
    ax = fig.add_subplot()
    for k, (label, th) in enumerate(rules.items()):
        ax.plot(np.arange(th.size), base / th, ls=_STYLES[k % 4], lw=1.6, label=label)
    ax.set(yscale="log", xlabel="pair index i (fastest first)", ylabel=r"stretch $\theta_i\,/\,\theta'_i$")
    _legend_below(fig, ax, layout, fontsize=8, ncol=2)
    ax.grid(alpha=0.3, which="both")
    return _tight(fig, layout)


def tradeoff_plot(reports, *, names=None, layout: str = "wide") -> Figure:
    """Phase novelty against resolution, one point per rule (at most 12 extension reports, with both margins;
    ``names``: the rules' display names, one per report, default each report's rule).

    Left: per-pair novelty at the target length. Middle and right: total novelty against the Gate B
    margin of the small and of the paragraph-scale offsets.
    """
    layout = valid_layout(layout)
    reps = list(reports)
    if not reps or len(reps) > _MAX_RULES:
        raise ValueError(f"reports must hold 1 to {_MAX_RULES} extension reports")
    if any(r.margin is None or r.coarse_margin is None for r in reps):
        raise ValueError("every report needs both margins (compute them with small_offsets and coarse_step)")
    names = [r.rule for r in reps] if names is None else [str(x) for x in names]
    if len(names) != len(reps):
        raise ValueError("names must give one display name per report")
    if layout == "wide":
        fig = Figure(figsize=(11, 3.6))
        left, mid, right = fig.subplots(1, 3)
    else:
        fig, grid = panels(layout, 3, wide_size=(11, 3.6), panel_height=3.0)
        left, mid, right = grid[0]
        fig.set_size_inches(5.2, 9.4 + 0.25 * len(reps))
    for k, r in enumerate(reps):
        left.plot(np.arange(r.novelty.size), r.novelty, ls=_STYLES[k % 4], lw=1.5, label=names[k])
        for ax, y in ((mid, r.margin), (right, r.coarse_margin)):
            ax.scatter(r.total_novelty, y, s=36, zorder=3)
    left.set(xlabel="pair index i", ylabel="new phase at target (turns)")
    _legend_below(fig, left, layout, fontsize=7)
    mid.set_ylabel("margin, distances 1..16")
    right.set_ylabel("margin, paragraph-scale offsets" if layout == "wide" else "margin,\nparagraph-scale offsets")
    for ax in (left, mid, right):
        ax.grid(alpha=0.3)
    for ax in (mid, right):
        ax.set_xlabel("total phase novelty (turns)")
    fig = _tight(fig, layout)
    size = 8.0 if layout == "wide" else MIN_FONT_PT
    for ax, attr in ((mid, "margin"), (right, "coarse_margin")):
        _label_points(fig, ax, [(r.total_novelty, getattr(r, attr)) for r in reps], names, size)
    return fig


def _column_label(label: str, width: int = 22) -> str:
    """A y label for the column layout: the parenthesis on its own line, long names broken at hyphens."""
    lines = label.replace(" (", "\n(").split("\n")
    return "\n".join(part for line in lines for part in textwrap.wrap(line, width, break_on_hyphens=True) or [""])


def model_ladders(manifests: Mapping, *, layout: str = "wide") -> Figure:
    """Each model's served wavelengths (at its target length) as one row of dots (at most 12 manifests with
    a training length); a bar marks the training length, a diamond the target.
    """
    layout = valid_layout(layout)
    if not isinstance(manifests, Mapping) or not manifests or len(manifests) > _MAX_RULES:
        raise ValueError(f"manifests must be a mapping of 1 to {_MAX_RULES} label -> RopeManifest")
    fig = _figure(layout, (8.5, 0.55 * len(manifests) + 1.2), (5.2, 0.45 * len(manifests) + 2.0))
    ax = fig.add_subplot()
    labels = []

    for label, m in manifests.items():
        if not isinstance(m, RopeManifest):
            raise ValueError(f"manifests[{label!r}] must be a RopeManifest, got {type(m).__name__}")
    for row, (label, m) in enumerate(manifests.items()):
        if m.train_length is None:
            raise ValueError(f"{label}: the manifest has no training length")
        target = m.target_length
        lam = wavelengths(m.theta_at(target))
        colour = np.where(lam > m.train_length, _FULL, _KEEP)
        ax.scatter(lam, np.full(lam.size, row), s=10, c=colour, zorder=3)
        ax.scatter([m.train_length], [row], marker="|", s=300, color="0.15", zorder=4)
        ax.scatter([target], [row], marker="D", s=30, facecolor="none", edgecolor="0.15", zorder=4)
        labels.append(label if layout == "wide" else _column_label(label))
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xscale("log")
    sep = "; " if layout == "wide" else "\n"
    ax.set_xlabel(f"served wavelength (tokens){sep}teal within the training length, red beyond it{sep}"
                  "bar: training length, diamond: target", fontsize=9)
    ax.invert_yaxis()
    ax.grid(alpha=0.3, axis="x")
    return _tight(fig, layout)


def joint_novelty_plot(results: Mapping, per_pair: Mapping, train_length: float, threshold: float, *,
                       layout: str = "wide") -> Figure:
    """Joint phase novelty per rule (at most 12 :class:`ropegeo.novelty.JointNovelty`), beside its per-pair novelty.

    Left: distance from each served offset to the nearest training offset. Right: total per-pair novelty
    (``per_pair``, turns) against the median joint distance; ``threshold`` a reference line.
    """
    layout = valid_layout(layout)
    if not isinstance(results, Mapping) or not results or len(results) > _MAX_RULES:
        raise ValueError(f"results must be a mapping of 1 to {_MAX_RULES} label -> JointNovelty")
    if not isinstance(per_pair, Mapping) or set(per_pair) != set(results):
        raise ValueError("per_pair must be a mapping with the same labels as results")
    for label, res in results.items():
        if not isinstance(res, JointNovelty):
            raise ValueError(f"results[{label!r}] must be a JointNovelty, got {type(res).__name__}")
    novel = {k: v.real(f"per_pair[{k!r}]", x, minimum=0.0) for k, x in per_pair.items()}
    train_length = v.real("train_length", train_length, greater_than=0.0)
    threshold = v.real("threshold", threshold, minimum=0.0)
    fig = _figure(layout, (11, 3.8), (5.2, 8.2 + 0.25 * len(results)))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.7, 1]}) if layout == "wide" else fig.subplots(2, 1)
    for k, (label, res) in enumerate(results.items()):
        order = np.argsort(res.targets)
        # solid, one marker per rule (dotted: the threshold, dashed: the training length); the markers are
        # the scanned distances, so no line is read between two samples
        left.plot(res.targets[order], res.distance[order], ls="-", lw=0.9, marker=_MARKERS[k % len(_MARKERS)], ms=2.5,
                  label=label)
        med = float(np.median(res.distance))
        right.scatter(novel[label], med, s=36, zorder=3)
    for ax in (left, right):
        ax.axhline(threshold, color="0.3", lw=0.9, ls=":")
        ax.grid(alpha=0.3)
    left.axvline(train_length, color="0.3", lw=0.9, ls="--")
    linthresh, right_end = max(1.0, train_length / 64), max(1.0, max(float(r.targets.max()) for r in results.values()))
    left.set_xscale("symlog", linthresh=linthresh)
    left.set_xlim(0.0, right_end)  # ticks: 0, then decades past the linear part (none crowding the 0)
    left.set_xticks([0.0] + [10.0 ** e for e in range(math.ceil(math.log10(linthresh)),
                                                         math.floor(math.log10(right_end)) + 1)])
    left.set(xlabel="served distance (dashed: training length)", ylabel="distance to nearest training offset")
    _legend_below(fig, left, layout, fontsize=7, ncol=2)
    right.set(xlabel="per-pair novelty, total (turns)", ylabel="median joint distance")
    sep = "; " if layout == "wide" else "\n"
    fig.suptitle(f"joint phase novelty{sep}dotted: distance between neighbouring training offsets", fontsize=9)
    fig = _tight(fig, layout)
    _label_points(fig, right, [(novel[k], float(np.median(r.distance))) for k, r in results.items()], list(results),
                  8.0 if layout == "wide" else MIN_FONT_PT)
    return fig


def ramp_comparison(base_theta, train_length: float, weights: Mapping, *, max_turns: float = 40.0,
                    paper: tuple | None = None, layout: str = "wide") -> Figure:
    """Per-pair keep-weights in [0, 1] of at most 12 rules (1 keeps ``theta_i``, 0 divides it by ``s``).

    Left: against pair index. Right: against turns ``L theta_i / 2 pi`` (``L = train_length``) up to
    ``max_turns``, where a ramp linear in turns is straight. ``paper=(beta_fast, beta_slow)`` draws
    YaRN's paper ramp ``clip((r - beta_slow) / (beta_fast - beta_slow), 0, 1)`` first.
    """
    layout = valid_layout(layout)
    base = _bank("base_theta", base_theta)
    train_length = v.real("train_length", train_length, greater_than=0.0)
    if not isinstance(weights, Mapping) or not weights or len(weights) > _MAX_RULES:
        raise ValueError(f"weights must be a mapping of 1 to {_MAX_RULES} label -> weights")
    rows = {}
    if paper is not None:
        fast, slow = (v.real(n, x, greater_than=0.0) for n, x in zip(("beta_fast", "beta_slow"), paper))
        if fast <= slow:
            raise ValueError("paper must be (beta_fast, beta_slow) with beta_fast > beta_slow")
        r = train_length * base / (2 * math.pi)
        rows["paper: linear in turns"] = np.clip((r - slow) / (fast - slow), 0.0, 1.0)
    for label, w in weights.items():
        arr = v.finite_array(f"weights[{label!r}]", w)
        if arr.shape != base.shape or np.any(arr < 0) or np.any(arr > 1):
            raise ValueError(f"weights[{label!r}] must hold one weight in [0, 1] per pair")
        rows[str(label)] = arr
    max_turns = v.real("max_turns", max_turns, greater_than=0.0)
    turns = train_length * base / (2 * math.pi)
    fig = _figure(layout, (10, 3.4), (5.2, 6.6 + 0.25 * len(rows)))
    left, right = fig.subplots(1, 2) if layout == "wide" else fig.subplots(2, 1)
    for k, (label, w) in enumerate(rows.items()):
        left.plot(np.arange(w.size), w, ls=_STYLES[k % 4], marker=".", ms=4, lw=1.3, label=label)
        right.plot(turns, w, ls=_STYLES[k % 4], marker=".", ms=4, lw=1.3, label=label)
    left.set_xlabel("pair index i")
    right.set(xlim=(0.0, max_turns), xlabel=f"turns over L = {train_length:,.0f} tokens")
    for ax in (left, right):
        ax.set_ylabel("keep-weight")
        ax.grid(alpha=0.3)
        if layout == "wide":
            ax.legend(fontsize=8)
    if layout == "wide":
        fig.tight_layout()
    else:
        _legend_below(fig, left, layout)
    return finish(fig, layout)
