"""Figures of the frequency bank: wavelength ladder, kernel, torus, phase precision, margins.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ropegeo import _validate as v
from ropegeo.base_bound import min_base_sum
from ropegeo.book.plots.readable import finish, panels, valid_layout
from ropegeo.frequencies import frequencies, turns, wavelengths
from ropegeo.geometry import kernel, near_collisions
from ropegeo.precision import as_pipeline, consecutive_integer_limit, deployed, max_phase_error

__all__ = ["wavelength_ladder", "base_comparison", "kernel_plot", "torus_plot", "phase_error_plot", "margin_plot",
           "probe_plot", "base_bound_plot"]

# One role per colour across the chapter's figures and the labs (labs.css: rl-fast, rl-slow/rl-dtype, rl-exact,
# rl-mark): teal for pairs that turn in training and for float32 phases, orange for slow pairs, for phases formed
# in a narrow dtype and for what fails; blue for the exact kernel, red for its near-collisions; wine for other marks. Other series (bases, pipelines) take colours outside these
# roles, told apart by line style as well (colour-blind safe).
_FAST, _SLOW, _MARK = "#087A98", "#c05621", "#8b1e3f"
_EXACT, _PEAK = "#1f6fb4", "#d62728"  # the exact kernel and its near-collisions, as the frequency and kernel labs draw them
_SERIES = ("#332288", "#AA4499", "#117733", "#882255", "#999933", "0.3")
_STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v"), ((0, (1, 3)), "x"))


def _done(fig: Figure, layout: str) -> Figure:
    """A single-panel figure as drawn (``"wide"``) or fitted to the text column (``"column"``), laid out tight."""
    fig = finish(fig, valid_layout(layout))
    fig.tight_layout()
    return fig


def _is_pair(x) -> bool:
    """Whether ``x`` is a sequence of exactly two items (a huge range must not overflow len)."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__") or getattr(x, "ndim", 1) != 1:
        return False
    try:
        return len(x) == 2
    except OverflowError:
        return False


def draw_ladder(ax, theta, train_length: float, target_length: float | None = None) -> None:
    """Draw the wavelength ladder on an existing axes (shared by the figure and the lab)."""
    lam = wavelengths(theta)
    slow = turns(theta, train_length) < 1.0
    idx = np.arange(lam.size)
    ax.scatter(idx[~slow], lam[~slow], s=12, color=_FAST, label="completes a turn in training")
    ax.scatter(idx[slow], lam[slow], s=12, color=_SLOW, label="less than one turn in training")
    ax.axhline(train_length, color="0.3", lw=1, ls="--")
    ax.text(0, train_length * 1.15, f"training length {train_length:,.0f}", fontsize=8, color="0.3")
    if target_length is not None and target_length != train_length:
        ax.axhline(target_length, color="0.3", lw=1, ls=":")
        ax.text(0, target_length * 1.15, f"target length {target_length:,.0f}", fontsize=8, color="0.3")
    ax.set(yscale="log", xlabel="pair index i (fastest first)", ylabel=r"wavelength $2\pi/\theta_i$ (tokens)")
    ax.legend(loc="lower right", fontsize=8)


def wavelength_ladder(theta, train_length: float, target_length: float | None = None, *,
                      layout: str = "wide") -> Figure:
    """Wavelength of every pair of ``theta`` (rad/position) on a log axis against the training length.

    Pairs whose wavelength exceeds ``train_length`` are drawn as slow; ``target_length``, the context
    to serve, is drawn as a second line.
    """
    train_length = v.real("train_length", train_length, greater_than=0.0)
    if target_length is not None:
        target_length = v.real("target_length", target_length, greater_than=0.0)
    fig = Figure(figsize=(7, 3.6))
    draw_ladder(fig.add_subplot(), theta, train_length, target_length)
    return _done(fig, layout)


def kernel_plot(theta, stop: int, *, scale: float = 1.0, start: int = 0, marks: int = 3, mark_from: int | None = None,
                points: int = 4000, layout: str = "wide") -> Figure:
    """The equal-weight kernel K(Δ) of ``theta`` (times ``scale``) over ``[start, stop]`` (stop at most 10**7).

    At most ``points`` (20,000) offsets; ``marks`` near-collisions searched exactly over
    ``[mark_from, stop]`` (default a tenth of ``stop``), at least a 25th of the range apart.
    """
    start = v.integer("start", start, minimum=0)
    stop = v.integer("stop", stop, minimum=start + 1, maximum=10**7)
    points = v.integer("points", points, minimum=10, maximum=20_000)
    marks = v.integer("marks", marks, minimum=0, maximum=20)
    n = stop - start + 1
    d = np.arange(start, stop + 1) if n <= points else np.linspace(start, stop, points).round()
    k = kernel(d, theta, scale=scale)
    fig = Figure(figsize=(7, 3.4))
    ax = fig.add_subplot()
    ax.plot(d, k, lw=0.7, color=_EXACT)
    ax.axhline(0, color="0.6", lw=0.6)
    if marks:
        lo = max(2, stop // 10) if mark_from is None else v.integer("mark_from", mark_from, minimum=0)
        lo = min(lo, stop)
        gap = max(1, (stop - lo) // 25)  # mark separate peaks, not neighbours of one peak
        chosen = []
        for hit in near_collisions(theta, lo, stop, top=20 * marks, scale=scale, progress=False):
            if all(abs(hit.offset - c.offset) >= gap for c in chosen):
                chosen.append(hit)
            if len(chosen) == marks:
                break
        # number each marker and list the numbers in one box: labels beside close peaks collide
        rank = {h.offset: r for r, h in enumerate(sorted(chosen, key=lambda h: h.offset))}
        for j, hit in enumerate(chosen, start=1):  # alternate sides along the axis, so close peaks' numbers part
            side = -1 if rank[hit.offset] % 2 == 0 else 1
            ax.plot([hit.offset], [hit.similarity], "o", color=_PEAK, ms=6, mfc="none")
            ax.annotate(str(j), (hit.offset, hit.similarity), textcoords="offset points", xytext=(6 * side, 6),
                        ha="left" if side > 0 else "right", fontsize=8, color=_PEAK, fontweight="bold")
    tall = marks and any(h.similarity > 0.5 for h in chosen)  # tall peaks: the listing needs room above them
    if marks and chosen:  # low peaks: the listing sits top right, away from K(0) = 1 at the left edge
        listing = "\n".join(f"{j}: δ={h.offset:,}, K={h.similarity:.3f}" for j, h in enumerate(chosen, start=1))
        ax.text(0.03 if tall else 0.97, 0.97, listing, transform=ax.transAxes, ha="left" if tall else "right",
                va="top", fontsize=8, color=_PEAK, bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="0.8", alpha=0.9))
    ax.set(xlabel="offset δ (tokens)", ylabel=r"$K(\delta)$, mean of $\cos(\delta\theta_i)$")
    ax.set_ylim(min(-0.45, float(k.min()) - 0.05), 1.6 if tall else 1.15)
    return _done(fig, layout)


def torus_plot(theta, pairs=(0, 1), *, length: int = 200, mark_return: bool = True, layout: str = "wide") -> Figure:
    """Positions ``0 .. length-1`` as points on the torus of two pairs' phases, coloured by position.

    With ``mark_return`` the offset ``Δ`` whose two phases come nearest to a whole number of turns
    (``return_offset``) is circled at positions 0 and ``Δ``.
    """
    th = v.frequencies(theta)
    length = v.integer("length", length, minimum=2, maximum=100_000)
    mark_return = v.boolean("mark_return", mark_return)
    if not _is_pair(pairs):
        raise ValueError(f"pairs must be two pair indices (i, j), got {pairs!r}")
    i, j = (v.integer("pairs", p, minimum=0, maximum=th.size - 1) for p in pairs)
    p = np.arange(length)
    two_pi = 2 * np.pi
    fig = Figure(figsize=(4.4, 4.1))
    ax = fig.add_subplot()
    sc = ax.scatter(np.mod(p * th[i], two_pi), np.mod(p * th[j], two_pi), c=p, s=8, cmap="viridis")
    fig.colorbar(sc, ax=ax, label="position")
    for x, colour in ((0, "#d97706"), (two_pi, "#d97706")):  # left and right edges: one circle
        ax.axvline(x, color=colour, lw=3)
    for y, colour in ((0, "#7c3aed"), (two_pi, "#7c3aed")):  # bottom and top edges: the other
        ax.axhline(y, color=colour, lw=3)
    if mark_return:
        delta = return_offset(th[[i, j]], length)
        pts = np.mod(np.array([0, delta])[:, None] * th[[i, j]], two_pi)
        ax.plot(pts[:, 0], pts[:, 1], "o", ms=11, mfc="none", mec=_MARK, mew=1.6)
        ax.annotate(f"positions 0 and {delta:,}", pts[1], textcoords="offset points", xytext=(10, 12),
                    fontsize=8, color=_MARK, fontweight="bold")
    ax.set(xlim=(0, two_pi), ylim=(0, two_pi), xlabel=f"phase of pair {i} (rad)", ylabel=f"phase of pair {j} (rad)")
    ax.set_title("opposite edges glued (same colour)", fontsize=8)
    return _done(fig, layout)


def return_offset(theta, length: int) -> int:
    """The offset in ``1 .. length-1`` at which the pairs come closest to a whole number of turns.

    The minimiser of ``sum_i sin^2(Δ θ_i / 2)`` (the equal-weight phase distance to offset 0).
    """
    th = v.frequencies(theta)
    length = v.integer("length", length, minimum=2, maximum=100_000)
    d = np.arange(1, length)
    return int(d[np.argmin((np.sin(np.multiply.outer(d, th) / 2) ** 2).sum(axis=1))])


def base_comparison(bases=(10_000.0, 500_000.0, 1_000_000.0), head_dim: int = 128, train_length: float = 8192,
                    stop: float = 1_000_000, *, points: int = 600, layout: str = "wide") -> Figure:
    """Wavelength ladders (left) and ``K(Δ)`` at ``points`` (10 to 5,000) log-spaced offsets up to ``stop``
    (at most 10**9; right) of one to six bases for a head of ``head_dim``.
    """
    if not v.is_collection(bases) or not 1 <= len(bases) <= 6:
        raise ValueError(f"bases must be a list of one to six bases, got {bases!r}")
    bases = [v.base(b) for b in bases]
    head_dim = v.head_dim(head_dim)
    train_length = v.real("train_length", train_length, greater_than=0.0)
    stop = v.real("stop", stop, minimum=2.0, maximum=1e9)
    points = v.integer("points", points, minimum=10, maximum=5000)
    valid_layout(layout)
    fig, grid = panels(layout, 2, wide_size=(9, 3.6), panel_height=3.3)
    lad, ker = grid[0]
    d = np.geomspace(1, stop, points)
    for b, c, (ls, marker) in zip(bases, _SERIES, _STYLES):  # not fast/slow colours: a base is not a pair's role
        th = frequencies(head_dim, b)
        lad.plot(np.arange(th.size), wavelengths(th), marker, ms=2.5, color=c, label=f"base {b:,.0f}")
        ker.plot(d, kernel(d, th), lw=1.2, ls=ls, color=c, label=f"base {b:,.0f}")
    lad.axhline(train_length, color="0.3", lw=1, ls="--")
    lad.text(0, train_length * 1.3, f"training length {train_length:,.0f}", fontsize=8, color="0.3")
    lad.set(yscale="log", xlabel="pair index i (fastest first)", ylabel=r"wavelength $2\pi/\theta_i$ (tokens)")
    lad.legend(fontsize=8, loc="upper left")
    ker.axhline(0, color="0.6", lw=0.6)
    ker.set(xscale="log", xlabel="offset δ (tokens)", ylabel="K(δ)")
    ker.legend(fontsize=8, loc="lower left")
    return finish(fig, layout)


#: The phase pipelines :func:`phase_error_plot` draws by default.
ERROR_PIPELINES = ("float32", deployed("bfloat16"), "float16", "bfloat16")


def phase_error_plot(theta, stop: int = 2**24, dtypes=ERROR_PIPELINES, *, points: int = 400,
                     layout: str = "wide") -> Figure:
    """Largest phase error over the pairs against position, one curve per pipeline or dtype name
    (:func:`ropegeo.precision.as_pipeline`), log-log; dashed: each low-precision angle dtype's
    consecutive-integer limit; dash-dot: float32 angles (deployed), dotted: rounded frequencies (buffer-cast).
    """
    stop = v.integer("stop", stop, minimum=2, maximum=2**30)
    points = v.integer("points", points, minimum=10, maximum=5000)
    if not v.is_collection(dtypes):
        raise ValueError(f"dtypes must be a list of pipelines or dtype names such as ('float32', 'bfloat16'), "
                         f"got {dtypes!r}")
    pipes = [as_pipeline(dt) for dt in dtypes]
    pos = np.unique(np.geomspace(1, stop, points).round())
    colours = {"float32": _FAST, "float16": _SERIES[0], "bfloat16": _SLOW, "deployed float16": _SERIES[4],
               "deployed bfloat16": _SERIES[3], "float64": "0.4", "buffer-cast bfloat16": _SERIES[2],
               "buffer-cast float16": _SERIES[2]}
    fig = Figure(figsize=(7, 5.4))
    ax = fig.add_subplot()
    for pipe in pipes:
        keep = pos < 65504 if pipe.angle_dtype == "float16" else np.ones(pos.size, bool)
        err = max_phase_error(pos[keep], theta, pipe)
        label = pipe.label + (", every stage" if pipe.label in ("float16", "bfloat16") else "")
        ls = "-" if pipe.angle_dtype == pipe.table_dtype else ":" if pipe.frequency_dtype else "-."
        ax.plot(pos[keep], np.maximum(err, 1e-12), lw=1.8 if ls == ":" else 1.2, color=colours.get(pipe.label),
                label=label, ls=ls)
        lim = consecutive_integer_limit(pipe.angle_dtype)
        if lim <= stop:
            ax.axvline(lim, color="0.45", lw=0.8, ls="--")  # a dtype's limit, shared by its pipelines
    ax.set(xscale="log", yscale="log", ylim=(1e-9, 4), xlabel="position", ylabel="largest phase error (rad)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2))  # below: the curves fill the axes
    return _done(fig, layout)


def margin_plot(distances, offsets, *, pair=None, layout: str = "wide") -> Figure:
    """A pairwise phase-distance matrix as an image, with the most confusable pair circled.

    ``distances`` (shape ``(n, n)``) comes from :func:`ropegeo.margins.pairwise_distances`, its rows
    and columns labelled by the sorted ``offsets``; ``pair`` overrides the pair circled.
    """
    D = v.finite_array("distances", distances)
    off = v.finite_array("offsets", offsets)
    if D.ndim != 2 or D.shape[0] != D.shape[1] or D.shape[0] != off.size:
        raise ValueError(f"distances must be ({off.size}, {off.size}) to match offsets, got {D.shape}")
    fig = Figure(figsize=(4.6, 4))
    ax = fig.add_subplot()
    im = ax.imshow(D, cmap="magma", vmin=0, vmax=max(1e-12, float(D.max())), origin="lower")
    fig.colorbar(im, ax=ax, label="phase distance D")
    if off.size <= 12:
        ax.set_xticks(range(off.size), [f"{o:g}" for o in off], rotation=90, fontsize=7)
        ax.set_yticks(range(off.size), [f"{o:g}" for o in off], fontsize=7)
    if pair is not None:
        if not _is_pair(pair):
            raise ValueError(f"pair must be two of the offsets, got {pair!r}")
        missing = [p for p in pair if not np.any(off == p)]
        if missing:
            raise ValueError(f"pair must be two of the offsets; {missing[0]!r} is not among them")
        r, c = (int(np.flatnonzero(off == p)[0]) for p in pair)
        for a, b in ((r, c), (c, r)):
            ax.plot([b], [a], "o", ms=12, mfc="none", mec="#2ec4b6", mew=2)
    ax.set(xlabel="slot b", ylabel="slot a")
    return _done(fig, layout)


def probe_plot(margins, masses, *, sharpness: float = 8.0, layout: str = "wide") -> Figure:
    """Attention mass on the target (:func:`ropegeo.margins.attention_probe`) against the pair's margin,
    with the exact-phase prediction ``1 / (1 + exp(-sharpness D^2 / 2))``.
    """
    m = v.finite_array("margins", margins).reshape(-1)
    a = v.finite_array("masses", masses).reshape(-1)
    if m.shape != a.shape:
        raise ValueError(f"margins and masses must have the same length, got {m.size} and {a.size}")
    beta = v.real("sharpness", sharpness, greater_than=0.0)
    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot()
    ax.scatter(m, a, s=8, color=_FAST, label="probe, one distractor each")
    x = np.linspace(0, 2, 200)
    ax.plot(x, 1 / (1 + np.exp(-beta * x**2 / 2)), color=_MARK, lw=1, label="1 / (1 + exp(-β D(a, b)²/2))")
    ax.axhline(0.5, color="0.6", lw=0.6, ls=":")
    ax.set(xlabel="phase distance D(a, b), target a, distractor b", ylabel="attention mass on target")
    ax.legend(fontsize=8, loc="lower right")
    return _done(fig, layout)


def base_bound_plot(length: int, head_dim: int = 128, *, low: float = 1.5e4, high: float = 9e4, points: int = 100,
                    marks=(), intervals=(), layout: str = "wide") -> Figure:
    """Men et al.'s criterion ``min over delta <= length of sum_i cos(delta theta_i)`` against the base (valid at or
    above zero).

    Sampled at ``points`` (10 to 400) log-spaced bases in ``(low, high)``, so it can step over a narrow
    hole (:func:`ropegeo.base_bound.base_bound` certifies intervals); ``marks`` (at most 6):
    ``(base, label)`` lines. ``intervals``: ``(low, high, status)`` rows of a certified scan
    (``ropegeo/data/runs/base_bound.json``); those whose status is ``"invalid"`` are shaded, else the
    failing samples are.
    """
    length = v.length("length", length, minimum=2)
    low = v.real("low", low, greater_than=1.0)
    high = v.real("high", high, greater_than=low)
    points = v.integer("points", points, minimum=10, maximum=400)
    valid_layout(layout)
    marks = list(marks)
    if len(marks) > 6 or not all(_is_pair(m) and isinstance(m[1], str) for m in marks):
        raise ValueError("marks must hold at most 6 (base, label) pairs")
    bases = np.geomspace(low, high, points)
    low_sum = np.array([min_base_sum(length, head_dim, float(b)) for b in bases])
    fig = Figure(figsize=(7, 3.6))
    ax = fig.add_subplot()
    ax.plot(bases, low_sum, lw=1.2, color=_FAST, marker="o", ms=2.5)
    if not v.is_collection(intervals) or not all(v.is_collection(iv) and len(iv) == 3 for iv in intervals):
        raise ValueError("intervals must hold (low, high, status) rows")
    bad = [(float(a), float(b)) for a, b, status in intervals if status == "invalid" and b > low and a < high]
    if not intervals:  # no certificate: shade around each failing sample
        edges = np.concatenate([[low], np.sqrt(bases[1:] * bases[:-1]), [high]])
        bad = [(edges[j], edges[j + 1]) for j in np.flatnonzero(low_sum < 0)]
    for j, (a, b) in enumerate(bad):
        ax.axvspan(max(a, low), min(b, high), color=_SLOW, alpha=0.15, lw=0,
                   label=r"fails: some $\delta \leq L$ has $C_B(\delta) < 0$" if j == 0 else None)
    ax.axhline(0, color="0.3", lw=0.8)
    for j, (b, label) in enumerate(marks):
        b = v.real("marks", b, greater_than=0.0)
        ax.axvline(b, color=_MARK, lw=0.9, ls="--")
        ax.annotate(label, (b, 1.0), xycoords=("data", "axes fraction"), textcoords="offset points",
                    xytext=(3, -12 - 12 * j), fontsize=8, color=_MARK)
    ax.set(xscale="log", ylim=(low_sum.min() - 0.5, max(1.0, float(low_sum.max())) + 0.5))
    ax.set(xlabel="base $B$", ylabel=rf"min over $\delta \leq$ {length:,} of $C_B(\delta)$")
    ax.legend(fontsize=8, loc="lower right")
    return _done(fig, layout)
