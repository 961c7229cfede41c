"""Figures of chapter 7: the shapes of the position terms, learned profiles, the comparison.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from matplotlib.figure import Figure

from ropegeo import _validate as v
from ropegeo.book.plots.readable import COLUMN_WIDTH_IN, fit_column
from ropegeo.frequencies import frequencies
from ropegeo.geometry import kernel
from ropegeo.toy.alternatives import Comparison, pair_profile
from ropegeo.toy.interventions import MAX_PROBE_LENGTH, PositionHead
from ropegeo.toy.schemes import alibi_slopes, t5_bucket

__all__ = ["bias_shapes", "learned_profiles", "comparison_figure", "ruler_budget_figure", "ruler_split_figure"]

#: Widest schedule :func:`bias_shapes` draws (the kernel costs offsets x pairs).
MAX_DRAWN_HEAD_DIM = 1024

_COLOURS = {"none": "#7f7f7f", "absolute": "#8c564b", "sinusoidal": "#9467bd", "relative": "#2ca02c",
            "t5": "#ff7f0e", "alibi": "#d62728", "rope": "#1f77b4"}


def bias_shapes(*, num_buckets: int = 32, max_distance: int = 128, heads: int = 8, head_dim: int = 16,
                base: float = 10_000.0, theta=None, max_offset: int = 300, panel: str | None = None) -> Figure:
    """Three position terms against the offset (up to ``max_offset``, 10 to 100,000): T5 buckets, ALiBi biases,
    the RoPE kernel.

    T5's bucketing (:func:`ropegeo.toy.schemes.t5_bucket`) in both directions; one ALiBi line per slope
    for ``heads``; ``K(delta)`` of ``head_dim`` (up to :data:`MAX_DRAWN_HEAD_DIM`) and ``base``, with an
    explicit schedule ``theta`` beside it. ``panel`` (``"t5"``, ``"alibi"``, ``"kernel"``) draws one alone.
    """
    max_offset = v.integer("max_offset", max_offset, minimum=10, maximum=100_000)
    head_dim = v.head_dim(head_dim, maximum=MAX_DRAWN_HEAD_DIM)
    if theta is not None:
        theta = v.frequencies(theta)
        if theta.size > MAX_DRAWN_HEAD_DIM // 2:
            raise ValueError(f"theta must have at most {MAX_DRAWN_HEAD_DIM // 2} pairs, got {theta.size}")
    panels = ("t5", "alibi", "kernel")
    if panel is not None and panel not in panels:
        raise ValueError(f"panel must be None or one of {panels}, got {panel!r}")
    if panel is None:
        fig = Figure(figsize=(13, 3.9), layout="constrained")
        a1, a2, a3 = fig.subplots(1, 3)
    else:
        fig = Figure(figsize=(COLUMN_WIDTH_IN, 3.6), layout="constrained")
        spare = Figure()  # the panels not asked for are drawn here and dropped
        a1, a2, a3 = (fig.subplots() if name == panel else spare.subplots() for name in panels)
    rel = np.arange(-max_offset, max_offset + 1)
    a1.step(rel, t5_bucket(rel, bidirectional=True, num_buckets=num_buckets, max_distance=max_distance),
            where="mid", label="bidirectional (encoder)")
    a1.step(rel, t5_bucket(rel, bidirectional=False, num_buckets=num_buckets, max_distance=max_distance),
            where="mid", label="unidirectional (decoder)")
    a1.axvline(-max_distance, color="0.6", ls=":", lw=1)
    a1.axvline(max_distance, color="0.6", ls=":", lw=1, label=f"max_distance = {max_distance}")
    a1.set(xlabel=r"offset $\delta$ = key position $-$ query position", ylabel="bucket (one learned bias each)",
           title=f"T5: {num_buckets} buckets")
    a1.legend(fontsize=8, loc="upper left")
    dist = np.arange(0, max_offset + 1)
    slopes = alibi_slopes(heads)
    for h, mu in enumerate(slopes):
        inverse = 1 / mu
        value = f"1/{inverse:.0f}" if abs(inverse - round(inverse)) < 1e-9 else f"{mu:.3g}"  # no small superscripts
        a2.plot(dist, -mu * dist, lw=1.2, label=f"head {h + 1}: μ = {value}")
    a2.set(xlabel=r"distance $|\delta|$", ylabel="bias added to the score",
           title=rf"ALiBi: {heads} heads, bias $= -\mu\,|\delta|$")
    a2.set_ylim(-min(40.0, slopes[0] * max_offset) * 1.05, 1)
    a2.legend(fontsize=7, ncol=2, loc="lower left")
    th = frequencies(head_dim, base)
    a3.plot(dist, kernel(dist, th), lw=1.2, label=rf"$d_\mathrm{{head}}$ = {head_dim}, base {base:g}")
    if theta is not None:
        a3.plot(dist, kernel(dist, theta), lw=1.2, label="given schedule")
    a3.axhline(0, color="0.6", lw=0.8)
    a3.set(xlabel=r"offset $\delta$ (the kernel is even: $K(-\delta) = K(\delta)$)", ylabel=r"kernel $K(\delta)$",
           title="RoPE: the equal-weight kernel")
    a3.legend(fontsize=8)
    if panel is not None:
        a2.legend(fontsize=8, ncol=2, loc="lower left")
        fit_column(fig)
    return fig


def learned_profiles(heads, *, length: int = 512, target: int | None = None, layout: str = "overlay",
                     slow_pairs: bool = False) -> Figure:
    """Trained position-only heads (1 to 10): score of the last query against the key ``delta`` slots back.

    Each row of scores (``length`` 3 to 4096) is shifted to a maximum of 0, on a log displacement axis
    stopped at -120, ``target`` marked. ``layout``: ``"overlay"`` (one axis) or ``"grid"`` (one panel per
    head, two columns). ``slow_pairs`` (grid only): on a second axis of each rope head's panel, the sum of
    every pair but the fastest (:func:`~ropegeo.toy.alternatives.pair_profile`) minus its value at ``target``.
    """

    if isinstance(heads, PositionHead):
        heads = [heads]
    if isinstance(heads, (str, bytes)) or not hasattr(heads, "__iter__"):
        raise ValueError(f"heads must be a PositionHead or a list of 1 to 10 PositionHead objects, got {heads!r}")
    heads = list(itertools.islice(heads, 11))
    if not heads or len(heads) > 10 or not all(isinstance(h, PositionHead) for h in heads):
        raise ValueError("heads must be 1 to 10 PositionHead objects")
    length = v.integer("length", length, minimum=3, maximum=MAX_PROBE_LENGTH)
    if target is not None:
        target = v.integer("target", target, minimum=1, maximum=MAX_PROBE_LENGTH)
    if layout not in ("overlay", "grid"):
        raise ValueError(f"layout must be 'overlay' or 'grid', got {layout!r}")
    if v.boolean("slow_pairs", slow_pairs) and (layout != "grid" or target is None):
        raise ValueError("slow_pairs needs layout='grid' and a target")
    if layout == "grid":
        return _profile_grid(heads, length, target, slow_pairs)
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax = fig.subplots()
    delta = np.arange(1, length)
    for h in heads:
        ax.plot(delta, _profile_row(h, length), lw=1.3, color=_COLOURS.get(h.name), label=h.name)
    if target is not None:
        ax.axvline(target, color="k", ls=":", lw=1, label=f"trained displacement {target}")
    for h in heads:
        L = getattr(h, "train_length", None)
        if L:
            ax.axvline(L, color="0.5", ls="--", lw=0.8)
            ax.text(L, 0.02, " training length", transform=ax.get_xaxis_transform(), fontsize=8, color="0.4")
            break
    lo = ax.get_ylim()[0]
    ax.set_ylim(max(lo, -120.0), 5.0)  # ALiBi's straight line would flatten everything else
    ax.set(xscale="log", xlabel=r"distance back $-\delta$ (the key is this many slots before the query)",
           ylabel="score minus the row's best score",
           title=f"What each trained head learned: the last query of a {length}-token sequence")
    ax.legend(fontsize=8, ncol=4, loc="lower left")
    return fig


def _profile_row(head, length: int) -> np.ndarray:
    """Scores of the last query against the keys 1 .. length - 1 back, minus their maximum."""
    row = head.scores(np.arange(length, dtype=np.float64))[length - 1, : length - 1][::-1]
    return row - row.max()


def _profile_grid(heads, length: int, target: int | None, slow_pairs: bool = False) -> Figure:
    """:func:`learned_profiles` as small multiples: one panel per head, two columns (one with ``slow_pairs``)."""
    rows = math.ceil(len(heads) / (cols := 1 if slow_pairs else 2))  # a twin axis needs the full width
    fig = Figure(figsize=(COLUMN_WIDTH_IN - 0.3, 1.9 * rows + 0.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)).ravel()
    back = np.arange(1, length)
    L = next((getattr(h, "train_length", None) for h in heads if getattr(h, "train_length", None)), None)
    for ax, h in zip(axes, heads):
        ax.plot(back, np.maximum(_profile_row(h, length), -60.0), lw=1.4, color=_COLOURS.get(h.name, "k"))
        if target is not None:
            ax.axvline(target, color="k", ls=":", lw=1)
        if L:
            ax.axvspan(L, length, color="0.9", lw=0)  # beyond the training window
        ax.set_title(h.name, loc="left")
        ax.set(xscale="log", ylim=(-62.0, 5.0), xticks=[1, 5, 64, length - 1] if length > 64 else [1, 5, length - 1])
        ax.set_xticklabels([str(t) for t in ax.get_xticks()])
        if slow_pairs and h.name == "rope":
            slow = pair_profile(h, length)[1:].sum(axis=0)
            twin = ax.twinx()
            twin.plot(back, slow - slow[target - 1], lw=1.0, color="#2ca02c")
            twin.axhline(0.0, color="#2ca02c", lw=0.6, ls="--")
            twin.set_ylabel("slower pairs' sum,\nminus it at target", color="#2ca02c", fontsize=7)
    for ax in axes[len(heads):]:
        ax.set_visible(False)
    fig.supxlabel("distance back $-\\delta$ (log scale)\nshaded: beyond the training length")
    fig.supylabel("score minus the row's best (floor at -60)")
    return fit_column(fig, width=COLUMN_WIDTH_IN - 0.3)


def _paired_bars(ax, comparison, key: str, ylabel: str, title: str) -> None:
    """Per scheme, the mean of ``key`` at the training length (light) and stretched (dark), one dot per seed."""
    names = list(comparison.results)
    for i, name in enumerate(names):
        c = _COLOURS.get(name)
        for dx, end, alpha in ((-0.2, "train", 0.45), (0.2, "long", 1.0)):
            values = comparison.per_seed(name, f"{key}_{end}")
            ax.bar(i + dx, values.mean(), width=0.4, color=c, alpha=alpha)
            ax.plot(np.full(values.size, i + dx), values, "k.", ms=3)
    ax.set_xticks(np.arange(len(names)), names, rotation=20)
    ax.set(ylabel=ylabel, title=title, ylim=(0, 1.05))


def comparison_figure(comparison, *, panel: str | None = None) -> Figure:
    """Length stretch, long-distance retrieval (and the match task, if run) per scheme, one dot per seed;
    ``panel`` (``"stretch"``, ``"retrieval"``, ``"match"``) draws one alone.
    """

    if not isinstance(comparison, Comparison):
        raise ValueError(f"comparison must be a ropegeo.toy.alternatives.Comparison, got {type(comparison).__name__}")
    s = comparison.settings
    match = bool(s.get("match", False))
    panels = ("stretch", "retrieval", "match") if match else ("stretch", "retrieval")
    if panel is not None and panel not in panels:
        raise ValueError(f"panel must be None or one of {panels}, got {panel!r}")
    if panel is None:
        fig = Figure(figsize=(17 if match else 12, 4.2), layout="constrained")
        axes = fig.subplots(1, len(panels))
    else:
        fig = Figure(figsize=(COLUMN_WIDTH_IN, 4.0), layout="constrained")
        spare = Figure()
        axes = [fig.subplots() if name == panel else spare.subplots() for name in panels]
    a1, a2 = axes[0], axes[1]
    factors = np.array(s["factors"], dtype=float)
    x_all = np.concatenate([[1.0], factors])
    names = list(comparison.results)
    for i, name in enumerate(names):  # each scheme nudged sideways, with its own marker: equal curves stay visible
        acc = np.column_stack([comparison.per_seed(name, "accuracy"), comparison.per_seed(name, "stretch_accuracy")])
        c, x = _COLOURS.get(name), x_all * 2.0 ** (0.06 * (i - (len(names) - 1) / 2))
        a1.plot(x, np.nanmean(acc, axis=0), "-" + "osD^vP*X"[i % 8], color=c, label=name, ms=5, mfc="none")
        for row in acc:
            a1.plot(x, row, ".", color=c, alpha=0.4)
    a1.set_xscale("log", base=2)
    a1.set_xticks(x_all, [f"{int(f)}x" for f in x_all])
    a1.set(xlabel=f"sequence length / training length ({s['train_length']})",
           ylabel=f"accuracy: attends {s['offset']} back", title="length stretch (local task)")
    a1.set_ylim(-0.05, 1.05)
    a1.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    lengths = f"light at L = {s['train_length']}, dark at {s['factors'][-1] * s['train_length']}"
    _paired_bars(a2, comparison, "retrieval_mass", f"attention on the key {s['distance']} back",
                 f"sparse retrieval: {lengths}")
    if match:
        _paired_bars(axes[2], comparison, "match_accuracy", "accuracy", f"most-recent match: {lengths}")
    if panel is not None:
        for ax in axes:
            ax.set_title(ax.get_title().replace(": light at", ":\nlight at"))
        fit_column(fig)
    return fig


_RULER_COLOURS = ("#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#ff7f0e", "#7f7f7f", "#17becf")
_SPLIT = (("target", "the key", "#1f77b4"), ("neighbours", "its two neighbours", "#ff7f0e"),
          ("beyond_window", "keys beyond the training length", "#d62728"), ("elsewhere", "elsewhere", "#bbbbbb"))


def _check_study(study) -> dict:
    if not isinstance(study, dict) or "rulers" not in study or "settings" not in study or not study["rulers"]:
        raise ValueError("study must be the dict of ropegeo.toy.alternatives.ruler_study (or its stored JSON)")
    return study


def ruler_budget_figure(study) -> Figure:
    """The far head's attention on its key at the longest length against the training budget, per ruler
    (mean line, a dot per seed), from ``ropegeo.toy.alternatives.ruler_study`` (or its stored JSON).
    """
    study = _check_study(study)
    st = study["settings"]
    budgets = np.array(st["budgets"], dtype=float)
    fig = Figure(figsize=(COLUMN_WIDTH_IN, 4.2), layout="constrained")
    ax = fig.subplots()
    n = len(study["rulers"])
    for r, (name, data) in enumerate(study["rulers"].items()):
        c = _RULER_COLOURS[r % len(_RULER_COLOURS)]
        mass = np.array([data["far"][str(int(b))]["target"] for b in budgets])  # budgets x seeds
        ax.plot(budgets, mass.mean(axis=1), "-o", color=c, lw=1.8, ms=5, label=name.replace(" x", " ×"))
        jitter = 2.0 ** ((r - (n - 1) / 2) * 0.08)
        for b, row in zip(budgets, mass):
            ax.plot(np.full(row.size, b * jitter), row, ".", color=c, alpha=0.45, ms=5)
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets, [f"{int(b):,}" for b in budgets])
    ax.set_ylim(-0.03, 1.03)
    ax.set(xlabel="training steps of the far head", ylabel=f"attention on the key {st['distance']} back",
           title=f"run at {st['factor'] * st['train_length']} tokens, trained at {st['train_length']}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, title="mean over seeds (line), each seed (dot)")
    return fit_column(fig)


def ruler_split_figure(study, *, steps: int | None = None) -> Figure:
    """Where each seed's far head puts its attention at the longest length: a stacked bar per seed
    (:class:`ropegeo.toy.alternatives.AttentionSplit`), one panel per ruler, at budget ``steps``
    (default the study's ``table_steps``).
    """
    study = _check_study(study)
    st = study["settings"]
    steps = st["table_steps"] if steps is None else steps
    if str(steps) not in next(iter(study["rulers"].values()))["far"]:
        raise ValueError(f"steps must be one of the study's budgets {st['budgets']}, got {steps!r}")
    names = list(study["rulers"])
    fig = Figure(figsize=(COLUMN_WIDTH_IN, 2.0 * len(names) + 1.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(len(names), 1, squeeze=False)).ravel()
    for ax, name in zip(axes, names):
        far = study["rulers"][name]["far"][str(steps)]
        order = np.argsort(far["target"])[::-1]
        bottom = np.zeros(order.size)
        for key, label, colour in _SPLIT:
            share = np.asarray(far[key])[order]
            ax.bar(np.arange(order.size), share, bottom=bottom, color=colour, width=0.85, label=label)
            bottom += share
        ax.set(ylim=(0, 1.0), yticks=[0, 0.5, 1])
        ax.set_title(name.replace(" x", " ×"), loc="left")
        ax.set_xticks([])
    axes[-1].set_xlabel(f"the {len(st['seeds'])} seeds, each panel sorted by the attention on the key")
    fig.supylabel("share of the attention, mean over queries")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=2)
    return fit_column(fig)
