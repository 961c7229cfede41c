"""The three gates (A, the algebra: :mod:`ropegeo.gates.a`; B, the geometry: :mod:`ropegeo.gates.b`;
C, a trained head: :mod:`ropegeo.gates.c`) and the procedure that runs them (:mod:`ropegeo.gates.procedure`)."""

from ropegeo.gates.a import GateAReport, gate_a
from ropegeo.gates.procedure import AuditReport, GeometryAudit, audit, geometry_audit
from ropegeo.gates.b import GateBRule, gate_b
from ropegeo.gates.c import GateCVerdict, gate_c
from ropegeo.gates.layers import layer_audit

__all__ = ["AuditReport", "GateAReport", "GateBRule", "GateCVerdict", "GeometryAudit", "audit", "gate_a", "gate_b",
           "gate_c", "geometry_audit", "layer_audit"]
