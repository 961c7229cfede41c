"""What every matplotlib-drawn ipywidgets lab shares: a figure rendered to a PNG image widget,
controls that redraw on change, and a check of control names.

A lab subclass builds its axes and controls in ``__init__`` (after :meth:`FigureLab._start`) and
implements ``update(**controls) -> state``; drawing goes through :meth:`FigureLab._png`.
"""

from __future__ import annotations

import io


def check_control_names(controls: dict, known: dict) -> None:
    """Refuse control names a lab does not have, naming the ones it has."""
    unknown = sorted(set(controls) - set(known))
    if unknown:
        raise ValueError(f"unknown control(s) {unknown}; the lab has {', '.join(known)}")


def panel_title(ax, text: str) -> None:
    """A panel title drawn as plain text (cheaper to redraw than ``set_title``)."""
    ax.text(0.5, 1.02, text, transform=ax.transAxes, ha="center", va="bottom", fontsize=9)


class FigureLab:
    """Base of the labs: owns the figure, its Agg canvas, the image widget and the display."""

    def _start(self, figsize: tuple[float, float], columns: int, width_ratios) -> list:
        """Create the figure and its canvas; return ``columns`` axes side by side."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self._fig = Figure(figsize=figsize, dpi=72)
        self._canvas = FigureCanvasAgg(self._fig)
        return list(self._fig.subplots(1, columns, gridspec_kw={"width_ratios": width_ratios}))

    def _watch(self, controls: dict) -> None:
        """Keep ``controls`` (name -> widget) and redraw whenever one of them changes."""
        self.controls = controls
        for ctl in controls.values():
            ctl.observe(self._on_change, names="value")

    def _on_change(self, _change) -> None:
        self.update(**{name: ctl.value for name, ctl in self.controls.items()})

    def update(self, **controls) -> dict:  # pragma: no cover - every lab defines it
        raise NotImplementedError

    def _png(self) -> bytes:
        """Draw with Agg and encode fast: about a third of the cost of ``Figure.savefig``."""
        from PIL import Image

        self._canvas.draw()
        size = self._canvas.get_width_height()
        rgba = Image.frombuffer("RGBA", size, self._canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buf = io.BytesIO()
        rgba.save(buf, format="png", compress_level=1)
        return buf.getvalue()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
