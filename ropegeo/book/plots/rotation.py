"""Figures of chapter 2: one pair as a clock, the two terms of its score, a head's block-diagonal
operator, the long-term-decay claim against a counterexample and trained heads, the defect heads,
and additive against rotary codes under a global shift.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Arc, Circle, FancyArrowPatch

from ropegeo import _validate as v
from ropegeo.book.plots.readable import finish, panels
from ropegeo.rotation import apply_rope, rotation_matrix

__all__ = ["phase_clock", "score_terms", "score_split_figure", "block_rotation_image", "decay_panels",
           "defect_heads_figure", "shift_change_figure"]

_MAX_HANDS = 64  # arrows on one clock; more would be unreadable
_MAX_OFFSET = 10_000  # largest |delta| drawn by score_terms
_MAX_HEAD_DIM = 256  # largest matrix drawn as an image
_COLOURS = {"query": "#1f77b4", "key": "#d62728", "arc": "#2ca02c", "trail": "#555555"}


def _pair(name: str, value) -> np.ndarray:
    arr = v.finite_array(name, value)
    if arr.shape != (2,):
        raise ValueError(f"{name} must be one feature pair of shape (2,), got shape {arr.shape}")
    if not np.any(arr != 0):
        raise ValueError(f"{name} must be a non-zero pair: a zero vector has no direction to rotate")
    return arr


def _one_pair(q, k, theta):
    """The checked contents and frequency of one pair, with ``q . k`` and ``q x k``."""
    q, k, theta = _pair("q", q), _pair("k", k), v.real("theta", theta, greater_than=0.0)
    return q, k, theta, float(q @ k), float(q[0] * k[1] - q[1] * k[0])


def _arrow(ax, tip, colour, *, width=1.6, alpha=1.0, style="-|>"):
    ax.add_patch(
        FancyArrowPatch((0.0, 0.0), tuple(tip), arrowstyle=style, mutation_scale=12,
                        color=colour, lw=width, alpha=alpha, shrinkA=0, shrinkB=0)
    )


def _clock_axes(ax, radius):
    ax.add_patch(Circle((0, 0), radius, fill=False, lw=0.8, ls="--", color="#999999"))
    ax.axhline(0, color="#cccccc", lw=0.6, zorder=0)
    ax.axvline(0, color="#cccccc", lw=0.6, zorder=0)
    lim = 1.3 * radius
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim))
    ax.set(aspect="equal", xlabel="first coordinate (real part)", ylabel="second coordinate (imaginary part)")


def phase_clock(pair=(1.0, 0.0), theta: float = 0.6, positions=range(8), *,
                query_position: float = 2.0, key_position: float = 5.0, layout: str = "wide") -> Figure:
    """One rotary pair ``pair`` (non-zero) turning at ``theta`` rad/position, drawn as a clock hand.

    Left: the pair at each of ``positions`` (1 to 64). Right: as a query at ``query_position`` and a key
    at ``key_position``, with the arc of the angle ``(n - m) theta`` the score sees.
    """
    z = _pair("pair", pair)
    theta = v.real("theta", theta, greater_than=0.0)
    if isinstance(positions, range):
        try:
            too_many = len(positions) > _MAX_HANDS
        except OverflowError:
            too_many = True
        if too_many:
            raise ValueError(f"positions must hold 1 to {_MAX_HANDS} positions, got a longer range")
        positions = list(positions)
    pos = v.finite_array("positions", positions)
    if pos.ndim != 1 or not 1 <= pos.size <= _MAX_HANDS:
        raise ValueError(f"positions must be a 1-D array of 1 to {_MAX_HANDS} positions, got shape {pos.shape}")
    m = v.real("query_position", query_position)
    n = v.real("key_position", key_position)
    r = float(np.hypot(*z))
    th = np.array([theta])

    fig, grid = panels(layout, 2, wide_size=(10, 4.8), panel_height=4.8)
    left, right = grid[0]

    _clock_axes(left, r)
    hands = apply_rope(np.broadcast_to(z, (pos.size, 2)), pos, theta=th)
    shades = np.linspace(0.35, 1.0, pos.size)
    for p, tip, alpha in zip(pos, hands, shades):
        _arrow(left, tip, _COLOURS["trail"], alpha=float(alpha))
        left.annotate(f"{p:g}", tuple(1.12 * tip), ha="center", va="center", fontsize=8)
    left.set_title(rf"one pair at positions {pos[0]:g}..{pos[-1]:g}, $\theta$ = {theta:g} rad/position")

    _clock_axes(right, r)
    qm, kn = apply_rope(np.stack([z, z]), np.array([m, n]), theta=th)
    _arrow(right, qm, _COLOURS["query"], width=2.2)
    _arrow(right, kn, _COLOURS["key"], width=2.2)
    # the labels sit in the corners, outside the circle, so that they never cross it or a hand
    for corner, ha, text, colour in (((0.02, 0.98), "left", f"query at m = {m:g}", _COLOURS["query"]),
                                     ((0.98, 0.98), "right", f"key at n = {n:g}", _COLOURS["key"])):
        right.annotate(text, corner, xycoords="axes fraction", color=colour, ha=ha, va="top")
    a_q, a_k = np.degrees(np.arctan2(qm[1], qm[0])), np.degrees(np.arctan2(kn[1], kn[0]))
    sweep = np.degrees((n - m) * theta)
    start, end = (a_q, a_q + sweep) if sweep >= 0 else (a_q + sweep, a_q)
    right.add_patch(Arc((0, 0), 0.9 * r, 0.9 * r, theta1=start, theta2=end, color=_COLOURS["arc"], lw=2))
    right.annotate(rf"arc: $(n-m)\theta$ = {np.radians(sweep):.2f} rad", (0.98, 0.02), xycoords="axes fraction",
                   color=_COLOURS["arc"], ha="right", va="bottom")
    right.set_title("the score sees only the angle between them")
    return finish(fig, layout)


def score_terms(q=(1.0, 0.5), k=(0.3, 1.0), theta: float = 0.35, max_offset: int = 20, *,
                mark: float | None = None, layout: str = "wide") -> Figure:
    """The one-pair score against ``delta = n - m`` (``|delta|`` up to ``max_offset``, 1 to 10,000), with its
    symmetric ``(q . k) cos(delta theta)`` and oriented ``-(q x k) sin(delta theta)`` terms; the score is
    computed independently with :func:`ropegeo.rotation.apply_rope`; ``mark`` marks a displacement and
    its mirror.
    """
    q, k, theta, dot, cross = _one_pair(q, k, theta)
    max_offset = v.integer("max_offset", max_offset, minimum=1, maximum=_MAX_OFFSET)
    if mark is not None:
        mark = v.real("mark", mark, minimum=-max_offset, maximum=max_offset)
    samples = min(4001, 40 * max_offset + 1)
    delta = np.linspace(-max_offset, max_offset, samples)
    integers = np.arange(-max_offset, max_offset + 1, dtype=np.float64)
    th = np.array([theta])

    def score(d):
        # query at 0, key at d: the relative law makes this <R_m q, R_(m+d) k> for every m
        return apply_rope(np.broadcast_to(k, (d.size, 2)), d, theta=th) @ q

    fig, grid = panels(layout, 1, wide_size=(8, 4.2), panel_height=4.6)
    ax = grid[0, 0]
    ax.plot(delta, dot * np.cos(delta * theta), color="#1f77b4",
            label=rf"symmetric: $(q\cdot k)\cos\delta\theta$, $q\cdot k$ = {dot:.3g}")
    ax.plot(delta, -cross * np.sin(delta * theta), color="#ff7f0e",
            label=rf"oriented: $-(q\times k)\sin\delta\theta$, $q\times k$ = {cross:.3g}")
    ax.plot(delta, score(delta), color="black", lw=2, label=r"score $\langle R_m q, R_n k\rangle$")
    if max_offset <= 200:
        ax.plot(integers, score(integers), "o", color="black", ms=3)
    if mark is not None:
        for d, style in ((mark, "-"), (-mark, "--")):
            ax.axvline(d, color="#777777", ls=style, lw=1)
    ax.axhline(0, color="#cccccc", lw=0.8, zorder=0)
    ax.set(xlabel=r"offset $\delta = n - m$ (positions)", ylabel="contribution to the score",
           title=rf"one pair, $\theta$ = {theta:g}: the cosine part is even, the sine part odd")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2 if layout == "wide" else 1, fontsize=8,
              frameon=False)
    return finish(fig, layout)


def block_rotation_image(position: float = 1.0, head_dim: int = 16, *, base: float = 10_000.0,
                         pairings=("interleaved", "half"), layout: str = "wide") -> Figure:
    """The rotary operator ``R_position`` of a head (``head_dim`` up to 256) as an image per pairing.

    One panel per entry of ``pairings`` (1 or 2), entries on a fixed [-1, 1] scale, one colour bar.
    """
    position = v.real("position", position)
    head_dim = v.head_dim(head_dim)
    if head_dim > _MAX_HEAD_DIM:
        raise ValueError(f"head_dim must be at most {_MAX_HEAD_DIM} to draw as an image, got {head_dim}")
    if isinstance(pairings, str):
        pairings = (pairings,)
    pairings = tuple(v.pairing(p, "pairings") for p in pairings)
    if not 1 <= len(pairings) <= 2:
        raise ValueError(f"pairings must name 1 or 2 layouts, got {len(pairings)}")

    fig, grid = panels(layout, len(pairings), wide_size=(4.6 * len(pairings) + 0.8, 4.4), panel_height=4.6)
    axes = grid[0]
    image = None
    for ax, pairing in zip(axes, pairings):
        R = rotation_matrix(position, head_dim, base=base, pairing=pairing)
        image = ax.imshow(R, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
        ax.set(title=f"{pairing} pairing", xlabel="input coordinate", ylabel="output coordinate")
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="matrix entry")
    fig.suptitle(rf"rotary operator at position {position:g}, $d_{{\mathrm{{head}}}}$ = {head_dim}, base {base:g}")
    return finish(fig, layout)


_MAX_CURVE = 1_000_000  # points in one curve of the figures below
_MAX_SEEDS = 64  # trained heads overlaid in decay_panels


def _curve(name: str, x, y) -> tuple[np.ndarray, np.ndarray]:
    x = v.finite_array(f"{name} offsets", x)
    y = v.finite_array(name, y)
    if x.ndim != 1 or not 2 <= x.size <= _MAX_CURVE:
        raise ValueError(f"{name} offsets must be 1-D with 2 to {_MAX_CURVE:,} points, got shape {x.shape}")
    if y.shape[-1:] != x.shape:
        raise ValueError(f"{name} must end in an axis of {x.size} values (one per offset), got shape {y.shape}")
    return x, y


def decay_panels(bound, counter, trained, *, train_length: int | None = None, target: float | None = None,
                 window: int = 64, layout: str = "wide") -> Figure:
    """The long-term-decay claim in three panels, each ``(offsets, values)``: RoFormer's relative upper bound
    (:func:`ropegeo.decay.relative_upper_bound`), a counterexample's score, and 1 to 64 trained heads'
    scores ``(seeds, offsets)``, each seed's best score per ``window`` offsets drawn as median and
    min-max band. ``train_length`` shades the offsets seen in training; ``target`` (a trained offset)
    draws its median score.
    """
    (xb, yb), (xc, yc), (xt, yt) = (_curve(n, *c) for n, c in
                                    (("bound", bound), ("counter", counter), ("trained", trained)))
    if yb.ndim != 1 or yc.ndim != 1:
        raise ValueError("bound and counter must each be one curve (1-D values)")
    if yt.ndim != 2 or not 1 <= yt.shape[0] <= _MAX_SEEDS:
        raise ValueError(f"trained scores must have shape (seeds, offsets) with 1 to {_MAX_SEEDS} seeds, got {yt.shape}")
    if train_length is not None:
        train_length = v.integer("train_length", train_length, minimum=2)
    window = v.integer("window", window, minimum=1, maximum=xt.size)
    if target is not None:
        target = v.real("target", target)
        if not np.any(xt == target):
            raise ValueError(f"target must be one of the trained offsets, got {target:g}")
    fig, grid = panels(layout, 3, wide_size=(13, 4), panel_height=3.6)
    a1, a2, a3 = grid[0]
    a1.plot(xb, yb, color="black")
    a1.set(xlabel=r"distance $|\delta|$ (positions)", ylabel=r"$\frac{2}{d_\mathrm{head}}\sum_j |P_j(\delta)|$",
           title="RoFormer's relative upper bound")
    a2.plot(xc, yc, color="#d62728")
    a2.axvline(float(xc[np.argmax(yc)]), color="#777777", ls="--", lw=1)
    a2.set(xlabel=r"offset $\delta = n - m$", ylabel="score", title="contents aimed far back: no decay")
    if train_length is not None:
        a3.axvspan(-(train_length - 1), 0, color="#dddddd", zorder=0, label="offsets seen in training")
    n_win = xt.size // window
    best = yt[:, : n_win * window].reshape(yt.shape[0], n_win, window).max(axis=2)
    centres = xt[: n_win * window].reshape(n_win, window).mean(axis=1)
    a3.fill_between(centres, best.min(axis=0), best.max(axis=0), color="#1f77b4", alpha=0.3, lw=0,
                    label=f"min-max over {yt.shape[0]} seeds")
    a3.plot(centres, np.median(best, axis=0), color="#1f77b4", lw=1.2, label="median")
    if target is not None:
        a3.axhline(float(np.median(yt[:, xt == target])), color="black", ls="--", lw=1,
                   label=f"score at the target $\\delta$ = {target:g} (median)".replace("-", "\u2212"))
    a3.set(xlabel=r"offset $\delta = n - m$", ylabel=f"best score in each window of {window} offsets",
           title="trained heads: no fading with distance")
    a3.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1 if layout == "column" else 2)  # below the band
    for ax in (a2, a3):
        ax.axhline(0, color="#cccccc", lw=0.8, zorder=0)
    if layout == "column":
        a3.set_ylabel(f"best score per {window} offsets")
        a1.set_ylabel("relative upper bound")
    return finish(fig, layout)


def defect_heads_figure(weights, outputs, *, target: int | None = None, layout: str = "wide") -> Figure:
    """Attention weights (top) and read-out labels (bottom) of 1 to 6 copy heads, a column each.

    ``weights`` and ``outputs`` map the same names to arrays of one common length (at most 256);
    ``target`` marks the position to read.
    """
    if not isinstance(weights, dict) or not isinstance(outputs, dict) or set(weights) != set(outputs):
        raise ValueError("weights and outputs must be dicts with the same head names")
    if not 1 <= len(weights) <= 6:
        raise ValueError(f"weights must hold 1 to 6 heads, got {len(weights)}")
    w = {str(n): v.finite_array(f"weights[{n!r}]", a) for n, a in weights.items()}
    o = {str(n): v.finite_array(f"outputs[{n!r}]", a) for n, a in outputs.items()}
    shapes = {a.shape for a in w.values()} | {a.shape for a in o.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1 or next(iter(shapes))[0] > 256:
        raise ValueError(f"every weights and outputs array must be 1-D of one common length (at most 256), got {shapes}")
    if target is not None:
        target = v.integer("target", target, minimum=0, maximum=next(iter(shapes))[0] - 1)
    fig, axes = panels(layout, len(w), rows=2, wide_size=(3.4 * len(w) + 0.6, 5), panel_height=2.4)
    for j, name in enumerate(w):
        pos = np.arange(w[name].size)
        for row, data, label in ((0, w[name], "attention weight"), (1, o[name], "output (label read)")):
            ax = axes[row, j]
            colours = ["#d62728" if i == int(np.argmax(data)) else "#9ecae1" for i in pos]
            ax.bar(pos, data, color=colours)
            if target is not None:
                ax.axvline(target, color="black", ls=":", lw=1)
            ax.set(ylim=(0, 1.05), xticks=pos, ylabel=label if j == 0 else "")
        axes[0, j].set(title=f"{name}: attends to {int(np.argmax(w[name]))}", xlabel="key position")
        axes[1, j].set(title=f"reads token {int(np.argmax(o[name]))}", xlabel="token label")
        if layout == "column":
            axes[1, j].set_ylabel("output")
            axes[0, j].set_ylabel("weight")
    return finish(fig, layout)


def shift_change_figure(shifts, changes, *, layout: str = "wide") -> Figure:
    """The largest score change under a global shift (2 to 10,000 ``shifts``), one line per scheme (1 to 6
    non-negative ``changes``), log scale.
    """
    c = v.finite_array("shifts", shifts)
    if c.ndim != 1 or not 2 <= c.size <= 10_000:
        raise ValueError(f"shifts must be 1-D with 2 to 10,000 values, got shape {c.shape}")
    if not isinstance(changes, dict) or not 1 <= len(changes) <= 6:
        raise ValueError("changes must be a dict of 1 to 6 schemes")
    data = {str(n): v.finite_array(f"changes[{n!r}]", a) for n, a in changes.items()}
    for n, a in data.items():
        if a.shape != c.shape or np.any(a < 0):
            raise ValueError(f"changes[{n!r}] must be {c.size} non-negative values, got shape {a.shape}")
    floor = 1e-17
    fig, grid = panels(layout, 1, wide_size=(8, 4), panel_height=4.2)
    ax = grid[0, 0]
    for n, a in data.items():
        ax.plot(c, np.maximum(a, floor), marker="o", ms=3, label=n)
    ax.set(yscale="log", xlabel="global shift $c$ added to every position", ylabel="largest change of any score",
           title="moving the origin: the additive code's scores move, the rotary ones only round")
    ax.legend()
    return finish(fig, layout)


def score_split_figure(q=(1.0, 0.5), k=(0.3, 1.0), theta: float = 0.35, delta: float = 4.0, *,
                       layout: str = "wide") -> Figure:
    """One pair's score at ``+delta`` and ``-delta`` (``0 < delta <= 10,000``) as three bars each: the
    symmetric part (equal), the oriented part (opposite) and the score from
    :func:`ropegeo.rotation.apply_rope`.
    """
    q, k, theta, dot, cross = _one_pair(q, k, theta)
    delta = v.real("delta", delta, greater_than=0.0, maximum=_MAX_OFFSET)
    th = np.array([theta])
    fig, grid = panels(layout, 1, wide_size=(7, 3.8), panel_height=4.4)
    ax = grid[0, 0]
    colours = ("#1f77b4", "#ff7f0e", "black")
    names = ("symmetric part", "oriented part", "score")
    for g, d in enumerate((delta, -delta)):
        total = float(apply_rope(k, d, theta=th) @ q)  # query at 0, key at d
        parts = (dot * np.cos(d * theta), -cross * np.sin(d * theta), total)
        for j, (value, colour, name) in enumerate(zip(parts, colours, names)):
            x = 4 * g + j
            ax.bar(x, value, color=colour, label=name if g == 0 else None)
            ax.annotate(f"{value:.3f}".replace("-", "\u2212"), (x, value), ha="center", va="bottom" if value >= 0 else "top", fontsize=8)
    ax.axhline(0, color="#999999", lw=0.8)
    sep = ",\n" if layout == "column" else ", "
    ax.set_xticks([1, 5], [rf"key after the query{sep}$\delta$ = +{delta:g}", rf"key before the query{sep}$\delta$ = −{delta:g}"])
    ax.set_ylabel("contribution to the score")
    ax.set_title("swapping the positions keeps the symmetric part and flips the oriented one")
    ax.legend(fontsize=8)
    return finish(fig, layout)
