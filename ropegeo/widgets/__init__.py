"""Interactive labs (ipywidgets / anywidget), one submodule per lab.

Every lab validates and bounds its controls, so no slider position can allocate without bound,
and keeps its update fast enough for dragging (see ``bench/widgets.py``).
"""
