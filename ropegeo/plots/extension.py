"""Figures of chapter 4: context-extension rules as rulers, their trade-off, real models.

Every function builds a :class:`matplotlib.figure.Figure` without pyplot and returns it.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
from matplotlib.figure import Figure

from .. import _validate as v
from ..frequencies import wavelengths

__all__ = ["draw_ruler", "ruler_panels", "stretch_profile", "tradeoff_plot", "model_ladders"]

_KEEP, _PART, _FULL, _BASE = "#087A98", "#b7791f", "#8b1e3f", "#9a9a9a"
_MAX_RULES = 12
_MAX_PAIRS = 1024


def _thetas(thetas: Mapping) -> dict:
    if not isinstance(thetas, Mapping) or not thetas:
        raise ValueError("thetas must be a non-empty mapping of label -> frequencies")
    if len(thetas) > _MAX_RULES:
        raise ValueError(f"thetas holds {len(thetas)} rules; at most {_MAX_RULES} can be drawn")
    out, size = {}, None
    for label, th in thetas.items():
        arr = v.finite_array(f"thetas[{label!r}]", th)
        if arr.ndim != 1 or arr.size == 0 or arr.size > _MAX_PAIRS or np.any(arr <= 0):
            raise ValueError(f"thetas[{label!r}] must be 1 to {_MAX_PAIRS} positive frequencies")
        if size is not None and arr.size != size:
            raise ValueError(f"every rule must have the same number of pairs; {label!r} has {arr.size}, not {size}")
        size = arr.size
        out[str(label)] = arr
    return out


def draw_ruler(ax, base_theta, theta, train_length: float, target_length: float, *, title: str | None = None,
               legend: bool = False) -> None:
    """Draw one rule's wavelengths over the base ladder on an existing axes.

    Pairs are coloured by how much the rule stretched them: untouched (ratio within 0.1 % of 1),
    fully scaled (within 1 % of the largest stretch of the rule, when that exceeds 1.001), or in
    between. The grey line is the unscaled ladder; dashed and dotted lines mark the training and
    target lengths.
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
    ax.axhline(train_length, color="0.25", lw=0.9, ls="--")
    ax.axhline(target_length, color="0.25", lw=0.9, ls=":")
    ax.set_yscale("log")
    if title:
        ax.set_title(title, fontsize=9)
    if legend:
        ax.legend(fontsize=7, loc="upper left")


def ruler_panels(base_theta, thetas: Mapping, train_length: float, target_length: float, *, columns: int = 4) -> Figure:
    """Small multiples: each rule's wavelength per pair against the unscaled ladder.

    Parameters
    ----------
    base_theta : array_like, shape (pairs,)
        The unscaled frequencies.
    thetas : mapping of str -> array_like, shape (pairs,)
        Served frequencies per rule (at most 12 rules).
    train_length, target_length : float
        Drawn as horizontal lines (dashed and dotted).
    columns : int
        Panels per row (1 to 6).

    Returns
    -------
    matplotlib.figure.Figure
    """
    rules = _thetas(thetas)
    base = v.finite_array("base_theta", base_theta)
    if base.shape != next(iter(rules.values())).shape:
        raise ValueError("base_theta must have one entry per pair, like the rules")
    train_length = v.real("train_length", train_length, greater_than=0.0)
    target_length = v.real("target_length", target_length, greater_than=0.0)
    columns = v.integer("columns", columns, minimum=1, maximum=6)
    rows = math.ceil(len(rules) / columns)
    fig = Figure(figsize=(2.6 * columns, 2.3 * rows + 0.6))
    axes = fig.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
    for k, (label, th) in enumerate(rules.items()):
        ax = axes[k // columns][k % columns]
        draw_ruler(ax, base, th, train_length, target_length, title=label, legend=(k == 0))
    for k in range(len(rules), rows * columns):
        axes[k // columns][k % columns].set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("pair i")
    for row in axes:
        row[0].set_ylabel("wavelength (tokens)")
    fig.suptitle(
        f"wavelength per pair; dashed: training length {train_length:,.0f}, dotted: target {target_length:,.0f}",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def stretch_profile(base_theta, thetas: Mapping) -> Figure:
    """Per-pair stretch ``theta_i / theta'_i`` of every rule on one log axis (1 = untouched).

    Returns
    -------
    matplotlib.figure.Figure
    """
    rules = _thetas(thetas)
    base = v.finite_array("base_theta", base_theta)
    if base.shape != next(iter(rules.values())).shape:
        raise ValueError("base_theta must have one entry per pair, like the rules")
    fig = Figure(figsize=(7.2, 3.6))
    ax = fig.add_subplot()
    styles = ["-", "--", "-.", ":"]
    for k, (label, th) in enumerate(rules.items()):
        ax.plot(np.arange(th.size), base / th, ls=styles[k % 4], lw=1.6, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("pair index i (fastest first)")
    ax.set_ylabel("stretch θ_i / θ'_i")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def tradeoff_plot(reports) -> Figure:
    """Phase novelty against resolution, one point per rule.

    Parameters
    ----------
    reports : sequence of ropegeo.scaling.ExtensionReport
        With both margins (``small_offsets`` and ``coarse_step`` not None); at most 12.

    Returns
    -------
    matplotlib.figure.Figure
        Left: per-pair novelty (turns of new phase at the target length). Middle and right: total
        novelty against the Gate B margin of the small offsets and of the paragraph-scale offsets
        (higher is better resolved).
    """
    reps = list(reports)
    if not reps or len(reps) > _MAX_RULES:
        raise ValueError(f"reports must hold 1 to {_MAX_RULES} extension reports")
    if any(r.margin is None or r.coarse_margin is None for r in reps):
        raise ValueError("every report needs both margins (compute them with small_offsets and coarse_step)")
    fig = Figure(figsize=(11, 3.6))
    left, mid, right = fig.subplots(1, 3)
    styles = ["-", "--", "-.", ":"]
    for k, r in enumerate(reps):
        left.plot(np.arange(r.novelty.size), r.novelty, ls=styles[k % 4], lw=1.5, label=r.rule)
        for ax, y in ((mid, r.margin), (right, r.coarse_margin)):
            ax.scatter(r.total_novelty, y, s=36, zorder=3)
            ax.annotate(r.rule, (r.total_novelty, y), textcoords="offset points", xytext=(6, -12 + 9 * (k % 3)),
                        fontsize=8)
    left.set_xlabel("pair index i")
    left.set_ylabel("new phase at target (turns)")
    left.legend(fontsize=7)
    mid.set_ylabel("margin, offsets 1..16")
    right.set_ylabel("margin, paragraph-scale offsets")
    for ax in (left, mid, right):
        ax.grid(alpha=0.3)
    for ax in (mid, right):
        ax.set_xlabel("total phase novelty (turns)")
    fig.tight_layout()
    return fig


def model_ladders(manifests: Mapping) -> Figure:
    """Each model's served wavelengths (at its target length) as one row of dots.

    Parameters
    ----------
    manifests : mapping of str -> ropegeo.manifest.RopeManifest
        At most 12 models, each with a known training length.

    Returns
    -------
    matplotlib.figure.Figure
        One row per model on a log wavelength axis; a bar marks the training length and a
        diamond the target length.
    """
    if not isinstance(manifests, Mapping) or not manifests or len(manifests) > _MAX_RULES:
        raise ValueError(f"manifests must be a mapping of 1 to {_MAX_RULES} label -> RopeManifest")
    fig = Figure(figsize=(8.5, 0.55 * len(manifests) + 1.2))
    ax = fig.add_subplot()
    labels = []
    from ..manifest import RopeManifest

    for label, m in manifests.items():
        if not isinstance(m, RopeManifest):
            raise ValueError(f"manifests[{label!r}] must be a RopeManifest, got {type(m).__name__}")
    for row, (label, m) in enumerate(manifests.items()):
        if m.train_length is None:
            raise ValueError(f"{label}: the manifest has no training length")
        target = m.target_length
        lam = wavelengths(m.theta(target))
        colour = np.where(lam > m.train_length, _FULL, _KEEP)
        ax.scatter(lam, np.full(lam.size, row), s=10, c=colour, zorder=3)
        ax.scatter([m.train_length], [row], marker="|", s=300, color="0.15", zorder=4)
        ax.scatter([target], [row], marker="D", s=30, facecolor="none", edgecolor="0.15", zorder=4)
        labels.append(label)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("served wavelength (tokens): teal within the training length, red beyond it; "
                  "bar: training length, diamond: target", fontsize=9)
    ax.invert_yaxis()
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    return fig
