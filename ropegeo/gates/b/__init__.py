"""Gate B: the geometry keeps apart the offsets a task needs (:mod:`ropegeo.margins` measures; ``rule``
decides; ``axes`` per axis; ``rival_census`` counts over trained seeds)."""

from ropegeo.gates.b.rule import GateBResult, GateBRule, gate_b

__all__ = ["GateBResult", "GateBRule", "gate_b"]
