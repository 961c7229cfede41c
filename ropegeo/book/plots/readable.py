"""Figures that stay readable at the width of the book's text column.

The rendered book shrinks a figure to its column (about 730 px on a 1280 px desktop window, 328 px
on a 360 px phone), where a 13-inch figure's 8-point legends are 4 to 6 px tall.
:func:`fit_column` narrows a figure and raises every font to a floor; :func:`smallest_text_px`
measures the smallest text as a reader sees it (the tests hold every chapter figure to 9 px).
"""

from __future__ import annotations

import textwrap

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import AutoLocator, MaxNLocator

from ropegeo import _validate as v

__all__ = ["COLUMN_WIDTH_PX", "COLUMN_WIDTH_IN", "MIN_FONT_PT", "LAYOUTS", "valid_layout", "fit_column",
           "smallest_text_px", "panels", "finish"]

#: Width of the text column in CSS pixels, for the two window widths the book is checked at
#: (1280 px desktop, 360 px phone).
COLUMN_WIDTH_PX = {1280: 730, 360: 328}
#: Width a column figure is drawn at, in inches (at 100 dpi: 520 px, shrunk to 0.63 on a phone).
COLUMN_WIDTH_IN = 5.2
#: Smallest font a column figure uses, in points (15.3 px at 100 dpi, 9.6 px on a phone).
MIN_FONT_PT = 11.0


#: The layouts a book figure accepts: "wide" (the panels side by side, as first drawn) or
#: "column" (stacked at :data:`COLUMN_WIDTH_IN`, fonts at least :data:`MIN_FONT_PT`).
LAYOUTS = ("wide", "column")


def valid_layout(layout) -> str:
    """``layout`` if it is one of :data:`LAYOUTS`, else a ``ValueError`` naming it."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


def panels(layout: str, count: int, *, wide_size: tuple, panel_height: float = 3.4, rows: int = 1, **subplot_kw):
    """A figure and its axes for ``count`` (1 to 12) panels in ``rows`` (1 to 4), side by side in
    ``wide_size`` (``"wide"``) or stacked ``panel_height`` each (``"column"``); axes indexed
    ``(rows, count)`` either way.
    """
    valid_layout(layout)
    count = v.integer("count", count, minimum=1, maximum=12)
    rows = v.integer("rows", rows, minimum=1, maximum=4)
    if layout == "wide":
        fig = Figure(figsize=wide_size, layout="constrained")
        return fig, fig.subplots(rows, count, squeeze=False, **subplot_kw)
    fig = Figure(figsize=(COLUMN_WIDTH_IN, panel_height * count + 0.4), layout="constrained")
    return fig, fig.subplots(count, rows, squeeze=False, **subplot_kw).T


def finish(fig: Figure, layout: str) -> Figure:
    """Return ``fig`` as drawn (``"wide"``) or fitted to the text column (``"column"``, :func:`fit_column`)."""
    return fit_column(fig, height=fig.get_size_inches()[1]) if valid_layout(layout) == "column" else fig


def fit_column(fig: Figure, *, width: float = COLUMN_WIDTH_IN, height: float | None = None,
               min_font: float = MIN_FONT_PT, wrap: int = 48) -> Figure:
    """Narrow ``fig`` (in place) to ``width`` inches and raise every font to at least ``min_font`` points.

    For single-panel or already stacked figures. ``height`` defaults to the aspect ratio kept; titles
    longer than ``wrap`` characters are wrapped.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(13, 4))
    >>> ax = fig.subplots()
    >>> _ = ax.set_title("t", fontsize=6)
    >>> fit_column(fig).get_size_inches().round(2).tolist(), ax.title.get_fontsize()
    ([5.2, 1.6], 11.0)
    """
    if not isinstance(fig, Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    width = v.real("width", width, minimum=2.0, maximum=20.0)
    min_font = v.real("min_font", min_font, minimum=6.0, maximum=30.0)
    wrap = v.integer("wrap", wrap, minimum=20, maximum=200)
    w0, h0 = fig.get_size_inches()
    if height is None:
        height = h0 * width / w0
    height = v.real("height", height, minimum=1.0, maximum=40.0)
    fig.set_size_inches(width, height)
    for ax in fig.axes:
        ax.tick_params(labelsize=max(min_font, _tick_size(ax)))
        for axis in (ax.xaxis, ax.yaxis):  # fewer ticks, so that larger labels do not collide
            if type(axis.get_major_locator()) is AutoLocator:
                axis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
        for loc in ("left", "center", "right"):
            title = ax.get_title(loc)
            if len(title) > wrap and "\n" not in title:
                ax.set_title(textwrap.fill(title, wrap), loc=loc)
    for text in fig.findobj(Text):
        if text.get_fontsize() < min_font:
            text.set_fontsize(min_font)
    return fig


def _tick_size(ax) -> float:
    labels = ax.get_xticklabels() + ax.get_yticklabels()
    return max((t.get_fontsize() for t in labels), default=0.0)


def smallest_text_px(fig: Figure, *, column_px: float = COLUMN_WIDTH_PX[360]) -> float:
    """Height in CSS pixels of the figure's smallest visible text once the page fits it to ``column_px``.

    The figure is drawn as the notebook saves it (tight bounding box) and every visible text's size
    scaled by the shrink factor (at most 1); ``inf`` for a figure without text.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(5, 3))
    >>> _ = fig.subplots().set_title("t", fontsize=12)
    >>> round(smallest_text_px(fig, column_px=2000), 1)  # ticks at the default 10 pt: 13.9 px
    13.9
    """
    if not isinstance(fig, Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    column_px = v.real("column_px", column_px, minimum=50.0, maximum=4000.0)
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None
    if renderer is None:
        FigureCanvasAgg(fig)
        renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    bbox = fig.get_tightbbox(renderer)
    width_px = bbox.width * fig.dpi
    shrink = min(1.0, column_px / width_px)
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    if not sizes:
        return float("inf")
    return min(sizes) * fig.dpi / 72.0 * shrink

