"""What every lab shares: one anywidget whose JavaScript computes and draws everything.

Its ES module is the geometry core (``ropegeo_core.js``), the shared interface (``labs_ui.js``) and
the lab's own file, computing from the widget state: the same lab answers in Jupyter and on the
static book, where no kernel runs. Python validates the state and gives ropegeo's numbers for it
(each lab's ``reference``), which the browser tests compare with the page's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anywidget
import numpy as np
import traitlets

_TRAITS = {bool: traitlets.Bool, int: traitlets.Int, float: traitlets.Float, str: traitlets.Unicode}
STATIC = Path(__file__).resolve().parent.parent / "static"
_SHARED = ("ropegeo_core.js", "labs_ui.js")


def random_vectors(head_dim: int, seed: int) -> tuple[list, list]:
    """A lab's default query and key: two seeded standard-normal vectors of ``head_dim`` entries (6 decimals)."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=head_dim).round(6).tolist(), rng.normal(size=head_dim).round(6).tolist()


def esm_source(lab_file: str) -> str:
    """The ES module of one lab: the core, the shared interface, then the lab's file."""
    return "\n".join((STATIC / name).read_text(encoding="utf-8") for name in (*_SHARED, lab_file))


class Lab(anywidget.AnyWidget):
    """Base of the labs: subclasses set ``_esm = esm_source("lab_x.js")``, ``DEFAULTS`` and ``BOUNDS``.

    Each ``DEFAULTS`` entry becomes a synced trait of the default's type. ``BOUNDS`` maps a trait to
    ``(minimum, maximum)`` or to a tuple of allowed values, enforced by :meth:`_bounded` (an even
    ``head_dim``) unless the subclass defines ``_check``; a value outside raises
    ``traitlets.TraitError`` naming the parameter. ``VECTOR_WIDTH`` query and key entries are checked
    finite. ``numbers`` is the lab module's ``reference`` for the current state.
    """

    _css = (STATIC / "labs.css").read_text(encoding="utf-8")
    BOUNDS: dict = {}
    DEFAULTS: dict = {}
    VECTOR_WIDTH = 0

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, default in cls.__dict__.get("DEFAULTS", {}).items():
            trait = _TRAITS[type(default)](default).tag(sync=True)
            setattr(cls, name, trait)
            trait.class_init(cls, name)  # what traitlets does for a trait written in the class body
        if cls.BOUNDS and "_check" not in cls.__dict__:
            cls._check = traitlets.validate(*cls.BOUNDS)(Lab._bounded)
        if cls.VECTOR_WIDTH and "_check_vector" not in cls.__dict__:
            cls._check_vector = traitlets.validate("q", "k")(lambda self, p: self._finite_vector(p, cls.VECTOR_WIDTH))

    @property
    def numbers(self) -> dict:
        """The lab module's ``reference`` for the current state."""
        vectors = (self.q, self.k) if self.VECTOR_WIDTH else ()
        return sys.modules[type(self).__module__].reference(self.state(), *vectors)

    def _bounded(self, proposal):
        name = proposal["trait"].name
        value = proposal["value"]
        spec = self.BOUNDS[name]
        numeric = len(spec) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in spec)
        if numeric:
            lo, hi = spec
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise traitlets.TraitError(f"{name} must be a number from {lo:,} to {hi:,}, got {value!r}")
            if not lo <= value <= hi:
                raise traitlets.TraitError(f"{name} must be from {lo:,} to {hi:,}, got {value!r}")
            if name == "head_dim" and value % 2:
                raise traitlets.TraitError(f"head_dim must be even (between {lo} and {hi}), got {value}")
            return value
        if value not in spec:
            raise traitlets.TraitError(f"{name} must be one of {', '.join(map(repr, spec))}, got {value!r}")
        return value

    def _finite_vector(self, proposal, width: int):
        value = proposal["value"]
        if len(value) != width or not all(np.isfinite(value)):
            raise traitlets.TraitError(f"{proposal['trait'].name} must hold {width} finite numbers")
        return value

    def state(self) -> dict:
        """The lab's controls as a plain dict (the arguments of its ``reference``)."""
        return {name: getattr(self, name) for name in self.DEFAULTS}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={val!r}" for k, val in self.state().items())
        return f"{type(self).__name__}({args})"
