"""Figures of chapter 5: one rotary operator, many implementations (pairs, positions, precision).
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ropegeo import _validate as v
from ropegeo.book.broken import CATALOGUE, Rotary, attention_comparison, entry, position_ids
from ropegeo.book.plots.readable import finish, panels, valid_layout
from ropegeo.frequencies import frequencies
from ropegeo.gates.a.gate import CHECKS
from ropegeo.precision import consecutive_integer_limit, max_phase_error
from ropegeo.rotation import apply_rope, pair_indices

__all__ = ["pairing_layouts", "mixing_effect", "position_id_grid", "decoding_scores", "phase_error_curves",
           "gate_a_matrix"]

_MAX_DRAWN_DIM = 32  # largest head drawn coordinate by coordinate
_MAX_OFFSET = 4096


def pairing_layouts(head_dim: int = 8, *, layout: str = "wide") -> Figure:
    """Which coordinates rotate together (``head_dim`` 2 to 32): each convention's rotation matrix, the two
    entries of a pair in one colour (interleaved: 2x2 diagonal blocks; half-split: ``head_dim / 2`` apart).
    """
    layout = valid_layout(layout)
    d = v.head_dim(head_dim)
    if d > _MAX_DRAWN_DIM:
        raise ValueError(f"head_dim must be at most {_MAX_DRAWN_DIM} to be drawn, got {d}")
    fig, grid = panels(layout, 2, wide_size=(8.5, 4.0), panel_height=4.6)
    axes = grid[0]
    cmap = ListedColormap(["#f4f4f4"] + [f"C{i % 10}" for i in range(d // 2)])
    for ax, pairing, title in zip(axes, ("interleaved", "half"), ("interleaved: (2i, 2i+1)", f"half-split: (i, i+{d // 2})")):
        first, second = pair_indices(d, pairing)
        img = np.zeros((d, d))
        for i, (a, b) in enumerate(zip(first, second)):
            img[np.ix_([a, b], [a, b])] = i + 1
        ax.imshow(img, cmap=cmap, vmin=0, vmax=d // 2, interpolation="nearest")
        for i, (a, b) in enumerate(zip(first, second)):
            for r, c in ((a, a), (a, b), (b, a), (b, b)):
                ax.text(c, r, str(i), ha="center", va="center", fontsize=8, color="white")
        ax.set(title=title, xticks=range(d), yticks=range(d), xlabel="input coordinate", ylabel="output coordinate")
    sep = "; " if layout == "wide" else "\n"
    fig.suptitle(f"Rotation matrix pattern of one head ($d_\\mathrm{{head}}$ = {d}){sep}the number is the pair index")
    return finish(fig, layout)


def mixing_effect(head_dim: int = 64, *, seed: int = 0, span: int = 64, layout: str = "wide") -> Figure:
    """What mixing conventions does: norms intact, every oriented interaction changed.

    Seeded interleaved-trained queries and keys (``head_dim`` 4 to 512) rotated by the interleaved and
    the half-split helper. Left: one pair's score for ``n - m`` in ``-span .. span`` (at most 4,096).
    Right: norms (mixed over correct) and many random pairs' scores, mixed against correct.
    """
    layout = valid_layout(layout)
    d = v.head_dim(head_dim)
    v.integer("head_dim", d, minimum=4, maximum=512)
    seed = v.integer("seed", seed, minimum=0)
    span = v.integer("span", span, minimum=1, maximum=_MAX_OFFSET)
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, d))
    delta = np.arange(-span, span + 1)
    if layout == "wide":
        fig = Figure(figsize=(10, 3.8), layout="constrained")
        ax1, ax2, ax3 = fig.subplots(1, 3, width_ratios=[1.6, 0.8, 1.0])
    else:
        fig = Figure(figsize=(5.2, 11.0), layout="constrained")
        ax1, ax2, ax3 = fig.subplots(3, 1, height_ratios=[1.0, 0.8, 1.3])
    for pairing, style, label in (("interleaved", "-", "interleaved helper (correct)"),
                                  ("half", "--", "half-split helper (mixed)")):
        s = apply_rope(np.broadcast_to(k, (delta.size, d)), delta, pairing=pairing) @ q
        ax1.plot(delta, s / np.sqrt(d), style, lw=1.4, label=label)
    ax1.plot([0], [q @ k / np.sqrt(d)], "ko", ms=5, label=f"δ = 0: both {q @ k / np.sqrt(d):.3f}")
    ax1.set(xlabel="offset δ = n - m", ylabel=r"score / $\sqrt{d_\mathrm{head}}$", title="one query-key pair")
    ax1.legend(fontsize=8)
    X = rng.normal(size=(400, d))
    p = rng.integers(0, 4096, size=400)
    ratio = np.linalg.norm(apply_rope(X, p, pairing="half"), axis=-1) / np.linalg.norm(apply_rope(X, p), axis=-1)
    ax2.hist(ratio - 1.0, bins=30, color="C2")
    ax2.set(xlabel="mixed / correct norm, minus 1", title="norms: unchanged")
    ax2.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
    Q, K = rng.normal(size=(2, 400, d))
    m, n = rng.integers(0, 512, size=(2, 400))
    sc = np.sum(apply_rope(Q, m) * apply_rope(K, n), axis=-1) / np.sqrt(d)
    sm = np.sum(apply_rope(Q, m, pairing="half") * apply_rope(K, n, pairing="half"), axis=-1) / np.sqrt(d)
    ax3.scatter(sc, sm, s=6, alpha=0.6, color="C3")
    lim = float(np.max(np.abs(np.concatenate([sc, sm])))) * 1.05
    ax3.plot([-lim, lim], [-lim, lim], color="#888888", lw=0.8)
    ax3.set(xlabel="score, correct", ylabel="score, mixed", title="scores: scrambled", aspect="equal")
    return finish(fig, layout)


def position_id_grid(*, prompt: int = 6, pad: int = 3, documents=(4, 3, 3), layout: str = "wide") -> Figure:
    """Position ids slot by slot: ``pad`` (0 to 8) left-padding slots, ids from the mask then slot
    indices; packed ``documents`` (at most 16 slots), reset then continuous; one decoding step after
    ``prompt`` (1 to 16) tokens by the correct, the restarting and the off-by-one cache.
    """
    layout = valid_layout(layout)
    prompt = v.integer("prompt", prompt, minimum=1, maximum=16)
    pad = v.integer("pad", pad, minimum=0, maximum=8)
    if not v.is_collection(documents):
        raise ValueError(f"documents must be a list of document lengths, got {documents!r}")
    docs = [v.integer("documents", n, minimum=1, maximum=16) for n in documents]
    if not docs or sum(docs) > 16:
        raise ValueError(f"documents must be 1 to 16 slots in all, got {list(documents)}")
    rows = []
    n_real = prompt
    lp = position_ids("left-padded", n_real, pad=pad)
    rows.append(("left padding, ids from the mask", lp, [-1] * pad + [0] * n_real))
    rows.append(("left padding, ids = slot index", position_ids("left-padded-naive", n_real, pad=pad),
                 [-1] * pad + [0] * n_real))
    doc_of = np.concatenate([np.full(n, i) for i, n in enumerate(docs)]).tolist()
    rows.append(("packing, ids reset per document", position_ids("packed-reset", docs), doc_of))
    rows.append(("packing, continuous ids", position_ids("packed-continuous", docs), doc_of))
    for name, label in (("interleaved", "KV cache: correct"), ("query-restart", "KV cache: query restarts at 0"),
                        ("cache-off-by-one", "KV cache: off by one")):
        impl = entry(name, 8).impl
        impl.prefill(np.zeros((prompt, 8)), np.zeros((prompt, 8)))
        ids = np.concatenate([np.arange(prompt), [impl._next_position()]])
        rows.append((label, ids, [0] * prompt + [-2]))
    width = max(len(r[1]) for r in rows)
    wide = layout == "wide"
    if wide:
        fig = Figure(figsize=(1.0 + 0.55 * width + 2.6, 0.5 * len(rows) + 0.9), layout="constrained")
    else:
        fig = Figure(figsize=(5.2, 0.85 * len(rows) + 1.1), layout="constrained")
    ax = fig.subplots()
    colours = {-1: "#d9d9d9", -2: "#ff9f43"}
    step = 1 if wide else 1.7  # in the column layout each row's name sits above its slots
    for r, (label, ids, groups) in enumerate(rows):
        y = r * step + (step - 1)
        for c, (pid, g) in enumerate(zip(ids, groups)):
            colour = colours.get(g, ["#9ecae1", "#a1d99b", "#fdd0a2", "#dadaeb"][g % 4])
            ax.add_patch(_rect(c, y, colour))
            ax.text(c + 0.5, y + 0.5, "pad" if pid < 0 else str(int(pid)), ha="center", va="center", fontsize=8)
        if not wide:
            ax.text(0.04, y - 0.12, label, ha="left", va="bottom", fontsize=11)
    ax.set(xlim=(0, width), ylim=(len(rows) * step, 0))
    if wide:
        ax.set_yticks(np.arange(len(rows)) + 0.5, [r[0] for r in rows])
    else:
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
    ax.set_xticks(np.arange(width) + 0.5, [str(i) for i in range(width)])
    ax.set(xlabel="slot in the row (array index)", title="position id written in each slot")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return finish(fig, layout)


def _rect(c, r, colour):
    return Rectangle((c + 0.04, r + 0.06), 0.92, 0.88, facecolor=colour, edgecolor="white")


def decoding_scores(names=("interleaved", "query-restart", "cache-off-by-one", "scaled-queries"), *,
                    prompt: int = 48, head_dim: int = 64, seed: int = 0, layout: str = "wide") -> Figure:
    """Scores of one decoded query against the whole cache for 1 to 8 catalogue entries, against the
    operator each declares (:func:`ropegeo.book.broken.attention_comparison`; ``prompt`` at most 1,024).
    """
    layout = valid_layout(layout)
    names = list(names)
    if not 1 <= len(names) <= 8:
        raise ValueError(f"names must list 1 to 8 catalogue entries, got {len(names)}")
    prompt = v.integer("prompt", prompt, minimum=1, maximum=1024)
    if layout == "wide":
        fig = Figure(figsize=(3.0 * len(names), 3.2), layout="constrained")
        axes = np.atleast_1d(fig.subplots(1, len(names), sharey=True))
    else:
        cols = min(2, len(names))
        rows = -(-len(names) // cols)
        fig = Figure(figsize=(5.2, 3.0 * rows + 0.7), layout="constrained")
        grid = fig.subplots(rows, cols, sharey=True, squeeze=False)
        for ax in grid.flat[len(names):]:
            ax.set_visible(False)
        axes = grid.flat[:len(names)]
    for ax, name in zip(axes, names):
        res = attention_comparison(name, prompt=prompt, head_dim=head_dim, seed=seed)
        j = np.arange(prompt + 1)
        ax.plot(j, res["reference_scores"], color="#444444", lw=1.2, label="declared operator")
        ax.plot(j, res["scores"], "o", ms=3, color="C3", label="decoded")
        ax.set_title(f"{name}\nmax gap {res['score_error']:.2f}", fontsize=9)
        ax.set_xlabel("cached key")
    if layout == "wide":
        axes[0].set_ylabel(r"score / $\sqrt{d_\mathrm{head}}$")
        axes[0].legend(fontsize=8)
        return fig
    for ax in grid[:, 0]:
        ax.set_ylabel(r"score / $\sqrt{d_\mathrm{head}}$")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=11, frameon=False)
    return finish(fig, layout)


def phase_error_curves(head_dim: int = 128, base: float = 10_000.0, *, max_position: int = 60_000,
                       points: int = 300, layout: str = "wide") -> Figure:
    """Largest phase error over the pairs against position (``points`` 10 to 2,000 up to ``max_position``,
    16 to 65,000) for float32, float16 and bfloat16 angles; dashed: each format's ``2**p``.
    """
    layout = valid_layout(layout)

    theta = frequencies(head_dim, base)
    max_position = v.integer("max_position", max_position, minimum=16, maximum=65_000)
    points = v.integer("points", points, minimum=10, maximum=2000)
    pos = np.unique(np.geomspace(1, max_position, points).round()).astype(float)
    fig = Figure(figsize=(7.5, 4.2) if layout == "wide" else (5.2, 5.0), layout="constrained")
    ax = fig.subplots()
    for i, dtype in enumerate(("float32", "float16", "bfloat16")):
        err = max_phase_error(pos, theta, dtype)
        ax.loglog(pos, np.maximum(err, 1e-10), lw=1.3, color=f"C{i}", label=f"{dtype} angles")
        lim = consecutive_integer_limit(dtype)
        if lim <= max_position:
            ax.axvline(lim, ls="--", lw=0.8, color=f"C{i}")
            ax.text(lim, 2e-9, f" {lim:,}", color=f"C{i}", fontsize=8, rotation=90, va="bottom")
    ax.axhline(np.pi, color="#888888", lw=0.8)
    ax.text(1.2, np.pi * 1.15, "pi: the phase says nothing", fontsize=8, color="#666666")
    ax.set(xlabel="position", ylabel="largest phase error over pairs (rad)", ylim=(1e-9, 10))
    sep = " " if layout == "wide" else "\n"
    ax.set_title(f"Phase error of generated angles{sep}($d_\\mathrm{{head}}$ = {head_dim}, base {base:,.0f})")
    if layout == "wide":
        ax.legend(fontsize=8, loc="lower right")
    else:  # below the axes, clear of the limit labels
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=11, frameon=False)
    return finish(fig, layout)


def _check_grid(reports) -> tuple[list, np.ndarray]:
    """The check names and a (reports, checks) grid: 0 not measured, 1 passed, 2 failed."""
    if not isinstance(reports, dict) or not 1 <= len(reports) <= 40:
        raise ValueError("reports must be a dict of 1 to 40 GateAReport objects keyed by label")
    names = list(CHECKS)
    grid = np.zeros((len(reports), len(names)))
    for r, rep in enumerate(reports.values()):
        for c, name in enumerate(names):
            p = rep.check(name).passed
            grid[r, c] = 0 if p is None else (1 if p else 2)
    return names, grid


def gate_a_matrix(reports: dict) -> Figure:
    """Pass / fail / skip of every Gate A check, one row per report (1 to 40, keyed by a label)."""

    names, grid = _check_grid(reports)
    fig = Figure(figsize=(1.2 + 0.75 * len(names) + 1.5, 0.38 * len(reports) + 1.6), layout="constrained")
    ax = fig.subplots()
    ax.imshow(grid, cmap=ListedColormap(["#eeeeee", "#74c476", "#de2d26"]), vmin=0, vmax=2, aspect="auto")
    for r in range(grid.shape[0]):
        for c in range(grid.shape[1]):
            ax.text(c, r, {0: "skip", 1: "pass", 2: "FAIL"}[int(grid[r, c])], ha="center", va="center", fontsize=7,
                    color="white" if grid[r, c] == 2 else "black")
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
    ax.set_yticks(range(len(reports)), list(reports))
    ax.set_title("Gate A on the catalogue")
    return fig


#: Width of :func:`gate_a_grid` in inches: at 100 dpi it fits a phone's text column with its 10-point
#: labels still at least 9 px tall.
GRID_WIDTH = 4.8


def gate_a_grid(reports: dict, *, title: str | None = None) -> Figure:
    """Gate A's checks as a grid readable at a narrow column (:func:`gate_a_matrix`'s content,
    :data:`GRID_WIDTH` inches wide): pass green, fail red with an ``x``, not measured grey with a dash.
    """
    names, grid = _check_grid(reports)
    fig = Figure(figsize=(GRID_WIDTH, 0.27 * len(reports) + 2.1), layout="constrained")
    ax = fig.subplots()
    colours = ["#d9d9d9", "#74c476", "#de2d26"]
    ax.imshow(grid, cmap=ListedColormap(colours), vmin=0, vmax=2, aspect="auto")
    for r in range(grid.shape[0]):
        for c in range(grid.shape[1]):
            mark = {0: "-", 1: "", 2: "x"}[int(grid[r, c])]
            ax.text(c, r, mark, ha="center", va="center", fontsize=10, color="white" if grid[r, c] == 2 else "black")
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=10)
    ax.set_yticks(range(len(reports)), list(reports), fontsize=10)
    ax.tick_params(length=0)
    handles = [Patch(color=colours[1], label="pass"), Patch(color=colours[2], label="fail (x)"),
               Patch(color=colours[0], label="not measured (-)")]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=10, frameon=False)
    if title:
        ax.set_title(title, fontsize=11)
    return fig


# keep the catalogue import used (for readers of this module: the figures draw from it)
_ = (CATALOGUE, Rotary)
