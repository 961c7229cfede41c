"""Gate A: the implementation realises the rotary operator it declares.

``gate`` runs the checks and judges them; ``read`` and ``call`` read and call the implementation;
``checks``, ``positions`` and ``algebra`` are the checks; ``isolated`` runs the implementation in
a separate process whose answers the parent judges.
"""

from ropegeo.gates.a.call import GateAError
from ropegeo.gates.a.gate import CHECKS, CORE_CHECKS, GateAReport, check_declaration, gate_a
from ropegeo.gates.a.read import infer_layout

__all__ = ["CHECKS", "CORE_CHECKS", "GateAError", "GateAReport", "check_declaration", "gate_a", "infer_layout"]
