"""ropegeo: the geometry of rotary position embeddings.

The package behind the book: the rotary operator as one value (:class:`RotaryOperator`),
frequency schedules, rotation in both pairing conventions, the phase kernel and its
near-collisions, context-extension rules, phase precision, and a three-gate audit (A: the
algebra holds; B: the geometry separates the offsets a task needs; C: a trained model uses it).

``import ropegeo`` loads the core only: the frequencies, the rotation, the kernel and its
near-collisions. ``ropegeo.frequencies`` is the module (the schedule is
``ropegeo.frequencies.frequencies``): a package face never binds a name over a submodule. The rest is a package each, imported by name: ``ropegeo.scaling`` (context
extension), ``ropegeo.models`` (configurations), ``ropegeo.gates`` (the three gates and the
audit), ``ropegeo.toy`` (trained heads), ``ropegeo.book`` (figures, labs, exercises),
``ropegeo.cli`` (the command line).
"""

from ropegeo.frequencies import slow_pairs, turns, wavelengths
from ropegeo.geometry import NearCollision, adjacent_similarity, kernel, near_collisions
from ropegeo.operator import RotaryOperator
from ropegeo.rotation import apply_rope, pairing_permutation, relative_law_error, rotation_matrix

__version__ = "0.1.0"

__all__ = [
    "NearCollision",
    "RotaryOperator",
    "adjacent_similarity",
    "apply_rope",
    "kernel",
    "near_collisions",
    "pairing_permutation",
    "relative_law_error",
    "rotation_matrix",
    "slow_pairs",
    "turns",
    "wavelengths",
]
