"""Gate B: the geometry keeps apart the offsets a task needs.

:mod:`ropegeo.margins` (a part of the core) measures how far apart a frequency bank keeps offsets;
``rule`` decides from the task's needs whether that is enough; ``rival_census`` counts, over trained seeds, what the rule flags.
"""

from ropegeo.gates.b.rule import GateBResult, GateBRule, gate_b

__all__ = ["GateBResult", "GateBRule", "gate_b"]
