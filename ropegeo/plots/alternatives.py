"""Figures of chapter 7: the shapes of the position terms, learned profiles, the comparison.

Every function builds a :class:`matplotlib.figure.Figure` without pyplot and returns it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from matplotlib.figure import Figure

from .. import _validate as v
from ..alternatives import Comparison
from ..attention import alibi_slopes, t5_bucket
from ..frequencies import frequencies
from ..geometry import kernel
from ..interventions import MAX_PROBE_LENGTH, PositionHead

__all__ = ["bias_shapes", "learned_profiles", "comparison_figure"]

#: Widest schedule :func:`bias_shapes` draws (the kernel costs offsets x pairs).
MAX_DRAWN_HEAD_DIM = 1024

_COLOURS = {"none": "#7f7f7f", "absolute": "#8c564b", "sinusoidal": "#9467bd", "relative": "#2ca02c",
            "t5": "#ff7f0e", "alibi": "#d62728", "rope": "#1f77b4"}


def bias_shapes(*, num_buckets: int = 32, max_distance: int = 128, heads: int = 8, head_dim: int = 16,
                base: float = 10_000.0, theta=None, max_offset: int = 300) -> Figure:
    """Three position terms as functions of the offset: T5 buckets, ALiBi biases, the RoPE kernel.

    Parameters
    ----------
    num_buckets, max_distance : int
        T5's bucketing (see :func:`ropegeo.attention.t5_bucket`); both directions are drawn.
    heads : int
        ALiBi head count; one line per slope of :func:`ropegeo.attention.alibi_slopes`.
    head_dim, base : int, float
        The RoPE schedule whose equal-weight kernel ``K(delta)`` is drawn (head_dim even, 2 to
        :data:`MAX_DRAWN_HEAD_DIM` = 1024).
    theta : array_like, optional
        An explicit schedule (e.g. from ``ropegeo.scaling``; at most ``MAX_DRAWN_HEAD_DIM // 2``
        pairs), drawn next to the plain one.
    max_offset : int
        Largest offset shown (10 to 100,000).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For options outside the ranges of the underlying functions.
    """
    max_offset = v.integer("max_offset", max_offset, minimum=10, maximum=100_000)
    head_dim = v.head_dim(head_dim, maximum=MAX_DRAWN_HEAD_DIM)
    if theta is not None:
        theta = v.frequencies(theta)
        if theta.size > MAX_DRAWN_HEAD_DIM // 2:
            raise ValueError(f"theta must have at most {MAX_DRAWN_HEAD_DIM // 2} pairs, got {theta.size}")
    fig = Figure(figsize=(13, 3.9), layout="constrained")
    a1, a2, a3 = fig.subplots(1, 3)
    rel = np.arange(-max_offset, max_offset + 1)
    a1.step(rel, t5_bucket(rel, bidirectional=True, num_buckets=num_buckets, max_distance=max_distance),
            where="mid", label="bidirectional (encoder)")
    a1.step(rel, t5_bucket(rel, bidirectional=False, num_buckets=num_buckets, max_distance=max_distance),
            where="mid", label="unidirectional (decoder)")
    a1.axvline(-max_distance, color="0.6", ls=":", lw=1)
    a1.axvline(max_distance, color="0.6", ls=":", lw=1, label=f"max_distance = {max_distance}")
    a1.set_xlabel("key position - query position")
    a1.set_ylabel("bucket (one learned bias each)")
    a1.set_title(f"T5: {num_buckets} buckets")
    a1.legend(fontsize=8, loc="upper left")
    dist = np.arange(0, max_offset + 1)
    slopes = alibi_slopes(heads)
    for h, m in enumerate(slopes):
        a2.plot(dist, -m * dist, lw=1.2, label=f"head {h + 1}: m = 2^{math.log2(m):.1f}")
    a2.set_xlabel("distance |query - key|")
    a2.set_ylabel("bias added to the score")
    a2.set_title(f"ALiBi: {heads} heads, bias = -m x distance")
    a2.set_ylim(-min(40.0, slopes[0] * max_offset) * 1.05, 1)
    a2.legend(fontsize=7, ncol=2, loc="lower left")
    th = frequencies(head_dim, base)
    a3.plot(dist, kernel(dist, th), lw=1.2, label=f"d = {head_dim}, base {base:g}")
    if theta is not None:
        a3.plot(dist, kernel(dist, theta), lw=1.2, label="given schedule")
    a3.axhline(0, color="0.6", lw=0.8)
    a3.set_xlabel("offset delta")
    a3.set_ylabel("K(delta) = mean_i cos(delta theta_i)")
    a3.set_title("RoPE: the equal-weight kernel")
    a3.legend(fontsize=8)
    return fig


def learned_profiles(heads, *, length: int = 512, target: int | None = None) -> Figure:
    """Trained position-only heads: score of the last query against the key ``delta`` slots back.

    Each curve is one head's row of scores for the query in slot ``length - 1`` (positions
    ``0 .. length - 1``), shifted so that its largest value is 0, against the displacement on a
    log axis. A trained absolute table beyond its trained rows and the plateaus of clipped or
    bucketed schemes are visible at a glance. The axis stops at -120 (ALiBi's line continues).

    Parameters
    ----------
    heads : PositionHead or sequence of PositionHead
        1 to 10 heads (e.g. one trained head per scheme).
    length : int
        Sequence length of the probe (3 to 4096).
    target : int, optional
        The trained displacement, marked with a vertical line (1 to ``MAX_PROBE_LENGTH``).

    Returns
    -------
    matplotlib.figure.Figure
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
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax = fig.subplots()
    delta = np.arange(1, length)
    for h in heads:
        row = h.scores(np.arange(length, dtype=np.float64))[length - 1, : length - 1][::-1]
        ax.plot(delta, row - row.max(), lw=1.3, color=_COLOURS.get(h.name), label=h.name)
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
    ax.set_xscale("log")
    ax.set_xlabel("displacement delta (key delta slots before the query)")
    ax.set_ylabel("score minus the row's best score")
    ax.set_title(f"What each trained head learned: the last query of a {length}-token sequence")
    ax.legend(fontsize=8, ncol=4, loc="lower left")
    return fig


def comparison_figure(comparison) -> Figure:
    """Length stretch, long-distance retrieval (and the match task, if run) for every scheme, one dot per seed.

    Parameters
    ----------
    comparison : ropegeo.alternatives.Comparison

    Returns
    -------
    matplotlib.figure.Figure
    """

    if not isinstance(comparison, Comparison):
        raise ValueError(f"comparison must be a ropegeo.alternatives.Comparison, got {type(comparison).__name__}")
    s = comparison.settings
    match = bool(s.get("match", False))
    fig = Figure(figsize=(17 if match else 12, 4.2), layout="constrained")
    axes = fig.subplots(1, 3 if match else 2)
    a1, a2 = axes[0], axes[1]
    factors = np.array(s["factors"], dtype=float)
    x_all = np.concatenate([[1.0], factors])
    names = list(comparison.results)
    for name in names:
        acc = np.column_stack([comparison.per_seed(name, "accuracy"), comparison.per_seed(name, "stretch_accuracy")])
        c = _COLOURS.get(name)
        a1.plot(x_all, np.nanmean(acc, axis=0), "-o", color=c, label=name, ms=4)
        for row in acc:
            a1.plot(x_all, row, ".", color=c, alpha=0.4)
    a1.set_xscale("log", base=2)
    a1.set_xticks(x_all, [f"{int(f)}x" for f in x_all])
    a1.set_xlabel(f"sequence length / training length ({s['train_length']})")
    a1.set_ylabel(f"accuracy: attends {s['offset']} back")
    a1.set_title("length stretch (local task)")
    a1.set_ylim(-0.05, 1.05)
    a1.legend(fontsize=8)
    pos = np.arange(len(names))
    for i, name in enumerate(names):
        c = _COLOURS.get(name)
        short = comparison.per_seed(name, "retrieval_mass_train")
        long = comparison.per_seed(name, "retrieval_mass_long")
        a2.bar(i - 0.2, short.mean(), width=0.4, color=c, alpha=0.45)
        a2.bar(i + 0.2, long.mean(), width=0.4, color=c)
        a2.plot(np.full(short.size, i - 0.2), short, "k.", ms=3)
        a2.plot(np.full(long.size, i + 0.2), long, "k.", ms=3)
    a2.set_xticks(pos, names, rotation=20)
    a2.set_ylabel(f"attention on the key {s['distance']} back")
    a2.set_title(f"sparse retrieval: light at L = {s['train_length']}, dark at {s['factors'][-1] * s['train_length']}")
    a2.set_ylim(0, 1.05)
    if match:
        a3 = axes[2]
        for i, name in enumerate(names):
            c = _COLOURS.get(name)
            short = comparison.per_seed(name, "match_accuracy_train")
            long = comparison.per_seed(name, "match_accuracy_long")
            a3.bar(i - 0.2, short.mean(), width=0.4, color=c, alpha=0.45)
            a3.bar(i + 0.2, long.mean(), width=0.4, color=c)
            a3.plot(np.full(short.size, i - 0.2), short, "k.", ms=3)
            a3.plot(np.full(long.size, i + 0.2), long, "k.", ms=3)
        a3.set_xticks(pos, names, rotation=20)
        a3.set_ylabel("accuracy")
        a3.set_title(f"most-recent match: light at L = {s['train_length']}, dark at {s['factors'][-1] * s['train_length']}")
        a3.set_ylim(0, 1.05)
    return fig
