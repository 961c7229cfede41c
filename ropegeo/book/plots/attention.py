"""Figures of chapter 1: score matrices under a permutation, the causal mask, position codes.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from ropegeo import _validate as v
from ropegeo.book.plots.readable import finish, panels
from ropegeo.frequencies import frequencies
from ropegeo.geometry import kernel
from ropegeo.toy.schemes import sinusoidal_encoding

__all__ = ["permutation_figure", "causal_figure", "position_codes_figure", "shift_map_figure", "self_similarity_figure"]


def _square(name: str, a) -> np.ndarray:
    a = v.finite_array(name, a)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
        raise ValueError(f"{name} must be a square 2-D matrix, got shape {a.shape}")
    if a.shape[0] > 256:
        raise ValueError(f"{name} has {a.shape[0]} rows; at most 256 can be drawn legibly")
    return a


def _labels(tokens, n: int) -> list[str]:
    if tokens is None:
        return [str(i) for i in range(n)]
    if not v.is_collection(tokens):
        raise ValueError(f"tokens must be a list of {n} labels, got {tokens!r}")
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"tokens must have one label per row ({n}), got {len(tokens)}")
    return tokens


def _heat(ax, m, labels_rows, labels_cols, title, vmax, cmap="RdBu_r", annotate=True):
    shown = np.ma.masked_invalid(m)
    im = ax.imshow(shown, cmap=colormaps[cmap].with_extremes(bad="#d9d9d9"), vmin=-vmax, vmax=vmax)
    n = m.shape[0]
    ax.set_xticks(range(n), labels_cols)
    ax.set_yticks(range(n), labels_rows)
    ax.set(xlabel="key", ylabel="query", title=title)
    if annotate and n <= 8:
        for i in range(n):
            for j in range(n):
                if np.isfinite(m[i, j]):
                    dark = im.norm(m[i, j]) > 0.8 or (cmap == "RdBu_r" and im.norm(m[i, j]) < 0.2)
                    ax.text(j, i, f"{np.round(m[i, j], 2) + 0.0:.2f}",  # + 0.0: never "-0.00"
                            ha="center", va="center", fontsize=7,
                            color="white" if dark else "black")
    return im


def permutation_figure(scores, permuted_scores, perm, tokens=None, *, layout: str = "wide") -> Figure:
    """Scores ``S`` of a sequence and ``permuted_scores`` of ``x[perm]`` side by side (``P S P^T`` for an
    equivariant layer); ``tokens`` label the original order.
    """
    s = _square("scores", scores)
    t = _square("permuted_scores", permuted_scores)
    n = s.shape[0]
    if t.shape != s.shape:
        raise ValueError(f"permuted_scores must have the shape of scores {s.shape}, got {t.shape}")
    p = np.asarray(perm)
    if p.shape != (n,) or not np.array_equal(np.sort(p), np.arange(n)):
        raise ValueError(f"perm must be a permutation of 0..{n - 1}, got {perm!r}")
    lab = _labels(tokens, n)
    plab = [lab[i] for i in p]
    vmax = float(np.nanmax(np.abs(np.concatenate([s.ravel(), t.ravel()])))) or 1.0
    fig, axes = panels(layout, 2, wide_size=(9.5, 4.2), panel_height=4.6)
    a1, a2 = axes[0]
    _heat(a1, s, lab, lab, "scores S, original order", vmax)
    im = _heat(a2, t, plab, plab, "scores of the permuted tokens", vmax)
    fig.colorbar(im, ax=[a1, a2], shrink=0.8, label="score")
    return finish(fig, layout)


def causal_figure(weights, weights_back, tokens=None, *, layout: str = "wide") -> Figure:
    """Causal attention weights of a sequence, of its permutation mapped back (``P^T A' P``) and their
    difference; ``tokens`` label the original order.
    """
    a = _square("weights", weights)
    b = _square("weights_back", weights_back)
    if a.shape != b.shape:
        raise ValueError(f"weights_back must have the shape of weights {a.shape}, got {b.shape}")
    lab = _labels(tokens, a.shape[0])
    fig, grid = panels(layout, 3, wide_size=(12, 4.0), panel_height=4.4)
    axes = grid[0]
    _heat(axes[0], np.where(a > 0, a, np.nan), lab, lab, "causal weights, original order", 1.0, cmap="Blues")
    axes[0].images[0].set_clim(0, 1)
    _heat(axes[1], np.where(b > 0, b, np.nan), lab, lab, "permuted, then put back", 1.0, cmap="Blues")
    axes[1].images[0].set_clim(0, 1)
    diff = b - a
    vmax = float(np.max(np.abs(diff))) or 1.0
    im = _heat(axes[2], diff, lab, lab, "put back \u2212 original", vmax)
    fig.colorbar(im, ax=axes[2], shrink=0.8, label="weight difference")
    return finish(fig, layout)


def position_codes_figure(table, code, *, table_title="learned absolute table", code_title="sinusoidal code",
                          layout: str = "wide") -> Figure:
    """Two position codes as images, one row per position: ``table`` (e.g. a random absolute table) and
    ``code`` (e.g. :func:`ropegeo.toy.schemes.sinusoidal_encoding` of ``0 .. positions - 1``).
    """
    fig, grid = panels(layout, 2, wide_size=(10, 4.2), panel_height=3.6)
    for ax, m, title in zip(grid[0], (table, code), (table_title, code_title)):
        m = np.asarray(m, dtype=np.float64)
        if m.ndim != 2 or m.size == 0 or not np.all(np.isfinite(m)):
            raise ValueError(f"each code must be a finite non-empty 2-D array, got shape {m.shape}")
        vmax = float(np.max(np.abs(m))) or 1.0
        im = ax.imshow(m, aspect="auto", cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
        ax.set(xlabel="coordinate", ylabel="position", title=title)
        fig.colorbar(im, ax=ax, shrink=0.8)
    return finish(fig, layout)


def shift_map_figure(matrix, shift, *, zoom: int = 8, layout: str = "wide") -> Figure:
    """The shift map of the sinusoidal code (:func:`ropegeo.book.symbolic.sinusoidal_shift_matrix` for
    ``shift``): the whole matrix and its leading ``zoom`` x ``zoom`` corner (``zoom`` at least 2).
    """
    m = _square("matrix", matrix)
    shift = v.real("shift", shift)
    zoom = min(v.integer("zoom", zoom, minimum=2), m.shape[0])
    fig, grid = panels(layout, 2, wide_size=(10, 4.4), panel_height=4.8)
    a1, a2 = grid[0]
    im = a1.imshow(m, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    a1.set(title=f"shift by k = {shift:g}: the whole map", xlabel="coordinate of the code at p",
           ylabel="coordinate of the code at p + k")
    corner = m[:zoom, :zoom]
    a2.imshow(corner, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    for i in range(zoom):
        for j in range(zoom):
            if corner[i, j] != 0:
                a2.text(j, i, f"{corner[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(corner[i, j]) > 0.6 else "black")  # readable on the dark ends
    a2.set(title=f"its first {zoom // 2} blocks: 2×2 rotations", xticks=range(zoom), yticks=range(zoom),
           xlabel="coordinate of the code at p", ylabel="coordinate of the code at p + k")
    fig.colorbar(im, ax=[a1, a2], shrink=0.8)
    return finish(fig, layout)


_MAX_SIMILARITY_OFFSET = 100_000  # largest |k| drawn by self_similarity_figure
_MAX_STARTS = 8  # curves overlaid by self_similarity_figure


def self_similarity_figure(d_model: int = 16, max_offset: int = 200, starts=(0, 150, 5000), *,
                           base: float = 10_000.0, layout: str = "wide") -> Figure:
    """``PE(p) . PE(p + k)`` of the sinusoidal code (``d_model`` 2 to 1,024) against ``k`` (``|k|`` up to
    ``max_offset``).

    One brute-force curve per start ``p`` in ``starts`` (1 to 8) and the closed form
    ``(dim / 2) K(k)`` dashed on top: the curves coincide and are even in ``k``.
    """

    d_model = v.head_dim(d_model, "d_model", maximum=1024)
    max_offset = v.integer("max_offset", max_offset, minimum=1, maximum=_MAX_SIMILARITY_OFFSET)
    p0 = v.finite_array("starts", starts)
    if p0.ndim != 1 or not 1 <= p0.size <= _MAX_STARTS:
        raise ValueError(f"starts must be 1 to {_MAX_STARTS} positions, got shape {p0.shape}")
    base = v.base(base)
    k = np.linspace(-max_offset, max_offset, min(4001, 20 * max_offset + 1))
    fig, grid = panels(layout, 1, wide_size=(8, 4.2), panel_height=4.2)
    ax = grid[0, 0]
    for p in p0:
        sim = sinusoidal_encoding(p + k, d_model, base) @ sinusoidal_encoding(p, d_model, base)
        ax.plot(k, sim, lw=3 if p == p0[0] else 1.2, alpha=0.6, label=f"brute force from p = {p:g}")
    closed = (d_model / 2) * kernel(k, frequencies(d_model, base))
    ax.plot(k, closed, "k--", lw=1, label=r"$\sum_i \cos(\omega_i k) = \frac{d_\mathrm{model}}{2}K(k)$")
    ax.axvline(0, color="#999999", lw=0.8)
    ax.axhline(0, color="#cccccc", lw=0.8, zorder=0)
    ax.set(xlabel=r"offset $k$ (positions)", ylabel=r"$\mathrm{PE}(p)\cdot\mathrm{PE}(p+k)$",
           title=f"sinusoidal code, width {d_model}: one curve for every start, mirror-symmetric in k")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)  # below: the peak stays visible
    return finish(fig, layout)
