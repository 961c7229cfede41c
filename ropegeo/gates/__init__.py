"""The three gates of an audit, and the procedure that runs them in order.

A: the algebra holds (:mod:`ropegeo.gates.a`). B: the geometry separates the offsets a task needs
(:mod:`ropegeo.gates.b`). C: a trained head uses it (:mod:`ropegeo.gates.c`). The procedure and
the geometry audit are in :mod:`ropegeo.gates.procedure`, the layer-by-layer audit in
:mod:`ropegeo.gates.layers`, the verdict vocabulary in :mod:`ropegeo.gates.verdicts`.
"""

from ropegeo.gates.a import GateAReport, gate_a
from ropegeo.gates.procedure import AuditReport, GeometryAudit, audit, geometry_audit
from ropegeo.gates.b import GateBRule, gate_b
from ropegeo.gates.c import GateCVerdict, gate_c
from ropegeo.gates.layers import layer_audit

__all__ = ["AuditReport", "GateAReport", "GateBRule", "GateCVerdict", "GeometryAudit", "audit", "gate_a", "gate_b",
           "gate_c", "geometry_audit", "layer_audit"]
