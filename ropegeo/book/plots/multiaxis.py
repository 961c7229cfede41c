"""Figures of chapter 8: a frequency bank shared between axes, its kernels, and the grid heads.

Every function draws at the width of the book's text column (:mod:`ropegeo.book.plots.readable`):
panels stacked, fonts at least :data:`ropegeo.book.plots.readable.MIN_FONT_PT`.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ropegeo import _validate as v
from ropegeo.multiaxis import kernel_grid, multi_kernel
from ropegeo.book.plots.readable import COLUMN_WIDTH_IN, finish

__all__ = ["section_figure", "axis_kernel_figure", "kernel_map_figure", "split_figure", "split_budget_figure"]

_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red")


def _banks(banks: dict, most: int = 4) -> dict:
    if not isinstance(banks, dict) or not 1 <= len(banks) <= most:
        raise ValueError(f"banks must be a dict of 1 to {most} named frequency matrices")
    out = {}
    for name, F in banks.items():
        F = v.finite_array("banks", F)
        if F.ndim != 2 or not 1 <= F.shape[1] <= 4:
            raise ValueError(f"each bank must have shape (pairs, axes), got {F.shape} for {name!r}")
        out[str(name)] = F
    return out


def section_figure(banks: dict, axis_names=("time", "height", "width")) -> Figure:
    """Each pair's frequency (log scale) against its index, coloured by the axis it follows; one panel per bank,
    one key (in the first panel, where the points fall from upper left to lower right)."""
    banks = _banks(banks)
    fig = Figure(figsize=(COLUMN_WIDTH_IN, 2.9 * len(banks) + 0.4), layout="constrained")
    axes = fig.subplots(len(banks), 1, squeeze=False)[:, 0]
    for ax, (name, F) in zip(axes, banks.items()):
        axis_of = np.abs(F).argmax(axis=1)
        freq = np.abs(F).max(axis=1)
        for a in range(F.shape[1]):
            sel = axis_of == a
            ax.scatter(np.flatnonzero(sel), freq[sel], s=14, color=_COLOURS[a], label=str(axis_names[a]))
        ax.set(yscale="log", title=name, ylabel="rad per position")
    axes[0].legend(loc="lower left", ncols=F.shape[1])
    axes[-1].set_xlabel("pair index (0 = fastest)")
    return finish(fig, "column")


def axis_kernel_figure(freqs, extent: int, axis_names=("time", "height", "width"), *, title: str = "") -> Figure:
    """The kernel of each axis's own pairs against the offset along that axis, ``0 .. extent``."""
    F = _banks({"bank": freqs})["bank"]
    extent = v.integer("extent", extent, minimum=2, maximum=100_000)
    fig = Figure(figsize=(COLUMN_WIDTH_IN, 3.8), layout="constrained")
    ax = fig.subplots()
    d = np.arange(0, extent + 1.0)
    for a in range(F.shape[1]):
        band = np.flatnonzero(F[:, a])
        if band.size == 0:
            continue
        offsets = np.zeros((d.size, F.shape[1]))
        offsets[:, a] = d
        ax.plot(d, multi_kernel(offsets, F[band]), color=_COLOURS[a], label=f"{axis_names[a]} ({band.size} pairs)")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.set(xlabel="offset along the axis", ylabel="K of the axis's pairs", title=title)
    ax.legend(loc="center right")  # clear of all three curves (tests/test_chapter08.py checks it)
    return finish(fig, "column")


def kernel_map_figure(banks: dict, extent: int) -> Figure:
    """``K(dx, dy)`` of two-axis banks over ``-extent .. extent`` on both axes; one panel per bank."""
    banks = _banks(banks, most=3)
    extent = v.integer("extent", extent, minimum=1, maximum=64)
    fig = Figure(figsize=(COLUMN_WIDTH_IN, 4.0 * len(banks) + 0.4), layout="constrained")
    axes = fig.subplots(len(banks), 1, squeeze=False)[:, 0]
    for ax, (name, F) in zip(axes, banks.items()):
        image = ax.imshow(kernel_grid(F, extent), origin="lower", extent=(-extent - 0.5, extent + 0.5) * 2,
                          vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set(title=name, xlabel="offset Δx (patches)", ylabel="offset Δy (patches)")
        fig.colorbar(image, ax=ax, label="K")
    return finish(fig, "column")


#: Axis labels in the chapter's words for the fields of a split study.
_FIELD_LABELS = {"target_mass": "attention on the target"}


def split_figure(study: dict, field: str = "target_mass") -> Figure:
    """One row per split: the per-seed values of ``field`` (dots) and their mean (bar)."""
    if not isinstance(study, dict) or not study:
        raise ValueError("study must be the dict split_study returns")
    names = list(study)
    fig = Figure(figsize=(COLUMN_WIDTH_IN, 0.8 * len(names) + 1.6), layout="constrained")
    ax = fig.subplots()
    for i, name in enumerate(names):
        values = np.asarray(study[name][field], dtype=float)
        ax.barh(i, values.mean(), color="0.85")
        jitter = np.linspace(-0.25, 0.25, values.size)
        ax.scatter(values, i + jitter, s=12, color="tab:blue")
    ax.set_yticks(range(len(names)), names)
    ax.set(xlim=(0, 1), xlabel=_FIELD_LABELS.get(field, field.replace("_", " ")) + " (one dot per seed)")
    ax.invert_yaxis()
    return finish(fig, "column")


def split_budget_figure(curves: dict, field: str = "target_mass") -> Figure:
    """Mean of ``field`` over seeds against the training budget, with the min-max band, for each named curve."""
    if not isinstance(curves, dict) or not 1 <= len(curves) <= 4:
        raise ValueError("curves must be a dict of 1 to 4 budget_study results")
    fig = Figure(figsize=(COLUMN_WIDTH_IN, 3.8), layout="constrained")
    ax = fig.subplots()
    for colour, (name, c) in zip(_COLOURS, curves.items()):
        b, y = np.asarray(c["budgets"]), np.asarray(c[field])
        ax.plot(b, y.mean(axis=1), marker="o", color=colour, label=name)
        ax.fill_between(b, y.min(axis=1), y.max(axis=1), color=colour, alpha=0.2)
    ax.axhline(0.5, color="0.4", lw=0.8, ls=":", label="one half (the cut)")
    ax.set(xscale="log", ylim=(0, 1), xlabel="training steps",
           ylabel=_FIELD_LABELS.get(field, field.replace("_", " ")))
    ax.legend(loc="upper left")
    return finish(fig, "column")
