"""Gate A: the implementation realises the rotary operator it declares (``gate`` judges; ``read``,
``call``, ``checks``, ``positions``, ``algebra``, ``axes`` for M-RoPE; ``isolated``: the worker process)."""

from ropegeo.gates.a.axes import GateAxesReport, gate_a_axes
from ropegeo.gates.a.call import GateAError
from ropegeo.gates.a.gate import CHECKS, CORE_CHECKS, GateAReport, check_declaration, gate_a
from ropegeo.gates.a.read import infer_layout

__all__ = ["CHECKS", "CORE_CHECKS", "GateAError", "GateAReport", "GateAxesReport", "check_declaration", "gate_a",
           "gate_a_axes", "infer_layout"]
