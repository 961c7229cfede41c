"""ropegeo: the geometry of rotary position embeddings.

The rotary operator as one value (:class:`RotaryOperator`), frequency schedules, rotation, the
phase kernel, context-extension rules, phase precision, and a three-gate audit (A: the algebra
holds; B: the geometry separates the offsets a task needs; C: a trained model uses it).

``import ropegeo`` loads the core only (``ropegeo.frequencies`` is the module: a package face never
binds a name over a submodule); the rest is a package each, imported by name: ``ropegeo.scaling``,
``ropegeo.models``, ``ropegeo.gates``, ``ropegeo.toy``, ``ropegeo.book``, ``ropegeo.cli``.
"""

import os as _os
import sys as _sys


def _quiet_interrupt(kind, value, traceback, _previous=_sys.excepthook):
    """The command line's Ctrl-C while numpy still imports: one line and exit 130, as later (``cli.main``);
    also an error raised while handling the interrupt (numpy's start turns it into an ImportError)."""
    exc, seen = value, set()
    while exc is not None and id(exc) not in seen and not isinstance(exc, KeyboardInterrupt):
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    if exc is None or id(exc) in seen:
        return _previous(kind, value, traceback)
    _sys.stderr.write("ropegeo: interrupted\n")
    _sys.stderr.flush()
    _os._exit(130)  # not sys.exit: the interpreter may count this interrupt as unhandled and end by SIGINT


_argv0 = (getattr(_sys, "argv", None) or [""])[0]
if _argv0 == "-m" or _argv0.endswith(("/ropegeo", "\\ropegeo", "ropegeo.exe")):  # python -m ropegeo, the script
    _sys.excepthook = _quiet_interrupt

from ropegeo.frequencies import slow_pairs, turns, wavelengths
from ropegeo.geometry import NearCollision, adjacent_similarity, kernel, near_collisions
from ropegeo.operator import RotaryOperator
from ropegeo.rotation import apply_rope, pairing_permutation, relative_law_error, rotation_matrix

__version__ = "0.1.0"

__all__ = ["NearCollision", "RotaryOperator", "adjacent_similarity", "apply_rope", "kernel", "near_collisions",
           "pairing_permutation", "relative_law_error", "rotation_matrix", "slow_pairs", "turns", "wavelengths"]
