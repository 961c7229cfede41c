"""The geometry audit of a model whose layers differ, layer kind by layer kind.

Gemma 2/3 alternate sliding and global layers with two rulers; gpt-oss lists its ``layer_types``;
Llama 4 interleaves chunked RoPE layers with NoPE layers; Cohere2's full-attention layers have no
rotary embedding. :func:`layer_audit` reads every kind with the one configuration reader
(:func:`ropegeo.models.manifest.read_layer_kinds`) and runs :func:`ropegeo.gates.procedure.geometry_audit` on each
kind that rotates. A kind with no rotary embedding is reported as having no position signal: it
has no ruler, so Gate B has nothing to judge there, and it is never counted as a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from ropegeo import _json
from ropegeo.gates.procedure import geometry_audit
from ropegeo.gates.verdicts import status as checks_status
from ropegeo.models.manifest import LayerKind, RopeManifest, layer_kinds

__all__ = ["LayerAudit", "layer_audit"]


@dataclass(frozen=True)
class LayerAudit:
    """One :class:`~ropegeo.gates.procedure.GeometryAudit` per kind of layer (``None`` for a NoPE kind)."""

    kinds: tuple
    audits: tuple

    @property
    def outcome(self) -> str:
        """:func:`ropegeo.gates.verdicts.status` of the checks of every kind that rotates. Kinds with no
        rotary embedding add no check: they are reported, not passed."""
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

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as JSON (keyword arguments go to ``json.dumps``)."""
        return _json.dumps(self.to_dict(), **kwargs)

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

    def __str__(self) -> str:
        return self.table()


def layer_audit(config, **options) -> LayerAudit:
    """Audit every kind of layer of a model: a shipped name, a config.json path or a config dict.

    Parameters
    ----------
    config : str, path, dict or RopeManifest
        The model (see :func:`ropegeo.models.manifest.layer_kinds`); a manifest is one kind.
    **options
        Keyword arguments of :func:`ropegeo.gates.procedure.geometry_audit` (``target_length``,
        ``search_limit``, ``top``, ``gate_b_rule``, ``min_margin``, ``dtype``, ``seed``).

    Returns
    -------
    LayerAudit

    Raises
    ------
    ValueError
        As :func:`ropegeo.models.manifest.read_layer_kinds` and :func:`ropegeo.gates.procedure.geometry_audit`.

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

