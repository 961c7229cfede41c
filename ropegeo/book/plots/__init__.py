"""Figures of the book, one submodule per topic.

Every function builds a :class:`matplotlib.figure.Figure` directly (no pyplot, no global state)
and returns it, so a notebook cell that ends with the call shows the figure exactly once and a
script can save it with ``fig.savefig``. Import from the submodule, e.g.
``from ropegeo.book.plots.rotation import phase_clock``.
"""
