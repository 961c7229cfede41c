"""Figures of the book, one submodule per topic.

Every function builds a :class:`matplotlib.figure.Figure` directly (no pyplot, no global state)
and returns it, so a notebook cell that ends with the call shows the figure exactly once and a
script can save it with ``fig.savefig``. Import from the submodule, e.g.
``from ropegeo.book.plots.rotation import phase_clock``. A figure's ``layout`` is ``"wide"`` (the
default: as first designed) or ``"column"`` (its panels stacked at the width of the book's text
column, fonts of at least 11 pt: :mod:`ropegeo.book.plots.readable`), unless its docstring says
otherwise. A bad argument raises a ``ValueError`` that names it.
"""
