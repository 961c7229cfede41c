"""The geometry audit of a model whose layers differ (Gemma 2/3, gpt-oss, Llama 4, Cohere2), kind by
kind: a kind with no rotary embedding has no position signal, is reported, and never counts as a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from ropegeo.gates.procedure import geometry_audit
from ropegeo.gates.verdicts import Report
from ropegeo.gates.verdicts import status as checks_status
from ropegeo.models.manifest import LayerKind, RopeManifest, layer_kinds

__all__ = ["LayerAudit", "layer_audit"]


@dataclass(frozen=True)
class LayerAudit(Report):
    """One :class:`~ropegeo.gates.procedure.GeometryAudit` per kind of layer (``None`` for a NoPE kind)."""

    kinds: tuple
    audits: tuple

    @property
    def outcome(self) -> str:
        """:func:`ropegeo.gates.verdicts.status` of the checks of every kind that rotates."""
        checks = [c for a in self.audits if a is not None for c in a.checks]
        return checks_status(checks)

    @property
    def no_position_signal(self) -> list[LayerKind]:
        """The kinds whose layers have no rotary embedding at all."""
        return [k for k in self.kinds if not k.position_signal]

    def to_dict(self) -> dict:
        """JSON-ready: one entry per kind, the audit of the kinds that rotate."""
        return {"outcome": self.outcome, "layer_kinds": [
            {"kind": k.kind, "layers": list(k.layers), "total_layers": k.total_layers,
             "position_signal": k.position_signal, "summary": k.describe(),
             "audit": None if a is None else a.to_dict()} for k, a in zip(self.kinds, self.audits)]}

    def table(self) -> str:
        """Each kind's heading, then its audit, or what it lacks."""
        parts = []
        for k, a in zip(self.kinds, self.audits):
            parts.append(f"=== {k.describe()}")
            parts.append(a.table() if a is not None else
                         "no rotary operator: these layers carry no position signal, so Gate B has nothing to "
                         "judge here (not a pass)")
        nope = self.no_position_signal
        if nope:
            parts.append("layers with no position signal: " + "; ".join(k.describe() for k in nope))
        return "\n".join(parts)


def layer_audit(config, **options) -> LayerAudit:
    """Audit every kind of layer of a model (shipped name, config path or dict; a manifest is one kind)
    with :func:`ropegeo.gates.procedure.geometry_audit` and its ``options``; raises as they do.

    Examples
    --------
    >>> r = layer_audit({"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32,
    ...                  "num_hidden_layers": 32, "max_position_embeddings": 8192, "rope_theta": 50000.0,
    ...                  "sliding_window": 4096, "sliding_window_pattern": 4})
    >>> [(k.kind, len(k.layers), k.position_signal) for k in r.kinds]
    [('sliding_attention', 24, True), ('full_attention', 8, False)]
    >>> r.audits[1] is None
    True
    """
    if isinstance(config, RopeManifest):
        kinds = (LayerKind(config.layer_type, (), config),)
    else:
        kinds = layer_kinds(config)
    audits = tuple(None if k.manifest is None else geometry_audit(k.manifest, **options) for k in kinds)
    return LayerAudit(kinds=kinds, audits=audits)

