"""The audit lab: a shipped configuration (and, where layers differ, the kind of layer) or a custom
bank, a target length and the phase dtype; the geometry audit and Gate B.

The records (:func:`records`) travel in the widget state, so the page needs no kernel and no
network. It shows :func:`ropegeo.gates.procedure.geometry_audit`'s rows (the search range from the
training length to the target, from 64 when nothing is extended, stopped by a sliding window or
:data:`SEARCH_LIMIT`) and :func:`ropegeo.gates.b.rule.gate_b` on the default offset sets at the far
end of the target context, in the phase dtype, against :class:`ropegeo.gates.b.rule.GateBRule`'s
threshold, with the class of pairs that attains each margin.
"""

from __future__ import annotations

import numpy as np
import traitlets

from ropegeo.book.widgets._lab import Lab, esm_source
from ropegeo.gates.b.rule import GateBResult
from ropegeo.gates.procedure import geometry_audit
from ropegeo.gates.b.rule import MAX_DISTANCE  # noqa: F401 - the page exports the same limit (tests compare them)
from ropegeo.gates.b.rule import gate_b as run_gate_b
from ropegeo.models.manifest import LAYER_KINDS, PHASE_DTYPES, RopeManifest, load_model, shipped_models
from ropegeo.scaling import NAMED_RULES, preset

__all__ = ["AuditLab", "audit_lab", "records", "law_normals", "reference", "MAX_TARGET", "SEARCH_LIMIT"]

# the custom bank's rules are scaling.NAMED_RULES (LongRoPE needs searched per-pair factors: pick a Phi-3 model)
#: Largest target length the lab accepts.
MAX_TARGET = 1 << 24
#: Largest offset of the near-collision search (the lab's ``search_limit`` of
#: :func:`ropegeo.gates.procedure.geometry_audit`).
SEARCH_LIMIT = 100_000
#: How many identity-like offsets the lab lists.
TOP = 3


def _fields(m: RopeManifest) -> dict:
    return {"label": m.name, "base": m.base, "head_dim": m.head_dim, "rotary_dim": m.rotary_dim,
            "pairing": m.pairing, "phase_dtype": m.phase_dtype, "train_length": m.train_length,
            "target_length": m.target_length, "scaling": None if m.scaling is None else m.scaling.to_dict(),
            "sliding_window": m.sliding_window, "layer_type": m.layer_type, "logit_scale": m.logit_scale,
            "notes": list(m.notes)}


def _kinds(name: str) -> list[str]:
    """The kinds of layer of a shipped model whose layers differ (empty when they all share one)."""
    out = []
    for kind in LAYER_KINDS:
        try:
            load_model(name, layer_type=kind)
        except ValueError:
            continue
        out.append(kind)
    return out if len(out) > 1 else []


def records() -> dict:
    """The shipped configurations as the lab's front end reads them.

    Model name -> the manifest fields of its default reading, plus ``name`` and ``layer_types``: kind ->
    the same fields for that kind of layer (empty when the layers all share one operator).
    """
    out = {}
    for name in shipped_models():
        out[name] = {"name": name, **_fields(load_model(name)),
                     "layer_types": {k: _fields(load_model(name, layer_type=k)) for k in _kinds(name)}}
    return out


def law_normals() -> list:
    """The first 512 standard normals of ``numpy.random.default_rng(7)``: the query (first
    ``head_dim``) and key (next ``head_dim``) of :func:`ropegeo.rotation.relative_law_error`."""
    return np.random.default_rng(7).normal(size=2 * 256).tolist()


def _manifest(state: dict) -> RopeManifest:
    dtype = state["dtype"]
    if state["model"] != "custom":
        kind = state.get("layer_type", "default")
        kind = kind if kind in _kinds(state["model"]) else None
        m = load_model(state["model"], layer_type=kind)
        return m if dtype == "config" else m.with_(phase_dtype=dtype)
    train, target = state["train_length"], state["target_length"]
    rule = state["rule"]
    sc = None if rule == "none" or target <= train else preset(rule, train_length=train, target_length=target)
    return RopeManifest(base=state["base"], head_dim=state["head_dim"], scaling=sc, max_position_embeddings=train,
                        phase_dtype="float32" if dtype == "config" else dtype, name="custom")


def set_text(entry: dict, threshold: float, target_length: int, idle_rule: str | None = None) -> str:
    """The lab's line for one Gate B set: :meth:`ropegeo.gates.b.rule.GateBResult.describe`, its
    origin said as the positions the set covers (from the origin to the last position of the target
    context, ``target_length - 1``), and a custom rule the target does not reach named.

    Examples
    --------
    >>> s = {"margin": 0.25, "confusable": "offsets 1 and 2", "status": "pass", "dtype": "float32",
    ...      "frequencies": "unscaled (no rule)", "origin": 0,
    ...      "origin_rule": "the largest offset at the last position of the target context"}
    >>> set_text(s, 0.17, 3, "linear").split("; ")[1]
    'float32 phases, unscaled (linear not applied: the target is within training) frequencies, positions 0..2 (its largest offset ends on the last position of the target context)'
    """
    text = GateBResult.describe(entry, threshold)
    where = f"origin {entry['origin']:,.0f} ({entry['origin_rule']})"
    text = text.replace(where, f"positions {entry['origin']:,.0f}..{target_length - 1:,} "
                               "(its largest offset ends on the last position of the target context)")
    if idle_rule:
        text = text.replace("unscaled (no rule)", f"unscaled ({idle_rule} not applied: the target is within training)")
    return text


def idle_rule(state: dict) -> str | None:
    """The custom rule a state names but the audit does not apply (its target is within training)."""
    named = state["model"] == "custom" and state["rule"] != "none"
    return state["rule"] if named and state["target_length"] <= state["train_length"] else None


def reference(state: dict) -> dict:
    """ropegeo's numbers for a lab state.

    ``manifest`` (as a dict); ``audit``: :func:`ropegeo.gates.procedure.geometry_audit` of it (top 3,
    search limit :data:`SEARCH_LIMIT`, exact phases so that a dtype overflow cannot hide the rest);
    ``rows``: its table rows; ``gate_b``: :func:`ropegeo.gates.b.rule.gate_b` in the phase dtype,
    ``None`` when the positions overflow the dtype.
    """
    m = _manifest(state)
    target = state["target_length"]
    exact = geometry_audit(m.with_(phase_dtype="float64"), target_length=target, search_limit=SEARCH_LIMIT, top=TOP)
    try:
        gate = run_gate_b(m, train_length=m.train_length, target_length=target).to_dict()
    except ValueError:
        gate = None
    return {"manifest": m.to_dict(), "audit": exact.to_dict(), "rows": exact.rows(), "gate_b": gate}


class AuditLab(Lab):
    """The audit lab (controls: ``DEFAULTS``, ``BOUNDS``).

    ``model``: a shipped configuration or ``"custom"`` (the bank of ``head_dim``, ``base``,
    ``train_length``, ``rule``); ``layer_type``: the kind of layer audited for a model whose layers
    differ (``"default"``: the record's); ``dtype``: ``"config"`` or a phase dtype. ``records`` and
    ``law_normals`` (:func:`records`, :func:`law_normals`) are embedded for the front end.
    """

    _esm = esm_source("lab_audit.js")
    BOUNDS = {"model": (*shipped_models(), "custom"), "layer_type": ("default", *LAYER_KINDS),
              "target_length": (3, MAX_TARGET), "dtype": ("config", *PHASE_DTYPES), "head_dim": (4, 256),
              "base": (10.0, 1e7), "train_length": (16, 131_072), "rule": NAMED_RULES}

    DEFAULTS = {"model": "llama-3.1-8b", "layer_type": "default", "target_length": 131_072, "dtype": "config",
                "head_dim": 128, "base": 10_000.0, "train_length": 4096, "rule": "none"}
    records = traitlets.Dict().tag(sync=True)
    law_normals = traitlets.List(traitlets.Float()).tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(records=records(), law_normals=law_normals(), **kwargs)


def audit_lab(model: str = "custom", **controls) -> AuditLab:
    """Build the audit lab for ``model`` (``"custom"``: the bank of the controls).

    Raises ``ValueError`` for an unknown control name; ``traitlets.TraitError`` for a value out of bounds.
    """
    unknown = sorted(set(controls) - set(AuditLab.BOUNDS))
    if unknown:
        raise ValueError(f"unknown control(s) {', '.join(unknown)}; the controls are {', '.join(AuditLab.BOUNDS)}")
    if model != "custom" and "target_length" not in controls:
        controls["target_length"] = load_model(model).target_length
    return AuditLab(model=model, **controls)
