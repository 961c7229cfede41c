"""The audit lab: pick a shipped model configuration (or a custom bank) and a target length; read
the geometry audit and Gate B's verdict.

:class:`AuditLab` is an anywidget whose JavaScript (``ropegeo/static/lab_audit.js`` on the shared
geometry core) computes and draws, in Jupyter and on the static book alike. The shipped
configurations' records (:func:`records`, from :mod:`ropegeo.manifest`) travel in the widget state,
so the page needs no kernel and no network. It shows

* the **geometry audit** of :func:`ropegeo.audit.geometry_audit`: the served ruler, attention
  factor, rescaled and slow pairs, ``K(1)``, the relative-law error and the most identity-like
  offsets beyond training;
* **Gate B** of :func:`ropegeo.audit.audit`: the separation margins of the default offset sets
  (:func:`ropegeo.audit.default_offsets`) at the far end of the target context, in the phase
  dtype, and the verdict (every margin at least :data:`ropegeo.audit.MIN_MARGIN`).

:func:`reference` gives ropegeo's numbers for a lab state; the tests compare them with the page's.
"""

from __future__ import annotations

import numpy as np
import traitlets

from ..audit import MIN_MARGIN, gate_b as run_gate_b, geometry_audit
from ..manifest import PHASE_DTYPES, RopeManifest, load_model, shipped_models
from ..scaling import preset
from ._lab import Lab, esm_source

__all__ = ["AuditLab", "audit_lab", "records", "law_normals", "reference", "RULES", "MAX_TARGET", "SEARCH_LIMIT"]

#: Extension rules of the custom bank (LongRoPE needs searched per-pair factors: pick a Phi-3 model).
RULES = ("none", "linear", "ntk", "dynamic", "yarn", "llama3")
#: Largest target length the lab accepts.
MAX_TARGET = 1 << 20
#: Largest offset of the near-collision search (as :func:`ropegeo.audit.geometry_audit`).
SEARCH_LIMIT = 100_000


def records() -> dict:
    """The shipped configurations as the lab's front end reads them: name -> manifest fields."""
    out = {}
    for name in shipped_models():
        m = load_model(name)
        out[name] = {"name": name, "base": m.base, "head_dim": m.head_dim, "rotary_dim": m.rotary_dim,
                     "pairing": m.pairing, "phase_dtype": m.phase_dtype, "train_length": m.train_length,
                     "target_length": m.target_length,
                     "scaling": None if m.scaling is None else m.scaling.to_dict()}
    return out


def law_normals() -> list:
    """The first 512 standard normals of ``numpy.random.default_rng(7)``: the query (first
    ``head_dim``) and key (next ``head_dim``) of :func:`ropegeo.audit.relative_law_error`."""
    return np.random.default_rng(7).normal(size=2 * 256).tolist()


def _manifest(state: dict) -> RopeManifest:
    dtype = state["dtype"]
    if state["model"] != "custom":
        m = load_model(state["model"])
        return m if dtype == "config" else m.with_(phase_dtype=dtype)
    train, target = state["train_length"], state["target_length"]
    rule = state["rule"]
    sc = None if rule == "none" or target <= train else preset(rule, train_length=train, target_length=target)
    return RopeManifest(base=state["base"], head_dim=state["head_dim"], scaling=sc, max_position_embeddings=train,
                        phase_dtype="float32" if dtype == "config" else dtype, name="custom")


def reference(state: dict) -> dict:
    """ropegeo's numbers for a lab state: ``audit`` (``geometry_audit``, top 3, as a dict; its own
    margins from exact phases) and
    ``gate_b`` (Gate B over the default offset sets, origin at the end of the target context;
    ``None`` when the phases overflow the dtype)."""
    m = _manifest(state)
    target = state["target_length"]
    # the geometry audit is taken from exact phases so that a dtype overflow there cannot hide the rest
    audit = geometry_audit(m.with_(phase_dtype="float64"), target_length=target, search_limit=SEARCH_LIMIT,
                           top=3).to_dict()
    try:
        gate = run_gate_b(m, train_length=m.train_length, target_length=target, min_margin=MIN_MARGIN)
        gate_b = {"passed": gate.passed, "sets": gate.sets}
    except ValueError:
        gate_b = None
    return {"audit": audit, "gate_b": gate_b}


class AuditLab(Lab):
    """The audit lab (an anywidget computing in JavaScript).

    Parameters
    ----------
    model : str
        A shipped configuration (:func:`ropegeo.manifest.shipped_models`) or ``"custom"``.
    target_length : int
        Context to serve, 3 to 2**20 tokens.
    dtype : str
        ``"config"`` (the configuration's phase dtype) or one of float64, float32, float16, bfloat16.
    head_dim, base, train_length, rule
        The custom bank (used when ``model == "custom"``): even head dim 4 to 256, base 10 to
        10**7, training length 16 to 131,072, rule stretching it to the target.
    records : dict
        The shipped configurations (:func:`records`), embedded for the front end.
    law_normals : list of float
        :func:`law_normals`: the vectors of the relative-law check, embedded for the front end.

    Raises
    ------
    traitlets.TraitError
        For a value outside its bounds (the message names the parameter).
    """

    _esm = esm_source("lab_audit.js")
    BOUNDS = {"model": (*shipped_models(), "custom"), "target_length": (3, MAX_TARGET),
              "dtype": ("config", *PHASE_DTYPES), "head_dim": (4, 256), "base": (10.0, 1e7),
              "train_length": (16, 131_072), "rule": RULES}

    model = traitlets.Unicode("llama-3.1-8b").tag(sync=True)
    target_length = traitlets.Int(131_072).tag(sync=True)
    dtype = traitlets.Unicode("config").tag(sync=True)
    head_dim = traitlets.Int(128).tag(sync=True)
    base = traitlets.Float(10_000.0).tag(sync=True)
    train_length = traitlets.Int(4096).tag(sync=True)
    rule = traitlets.Unicode("none").tag(sync=True)
    records = traitlets.Dict().tag(sync=True)
    law_normals = traitlets.List(traitlets.Float()).tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(records=records(), law_normals=law_normals(), **kwargs)

    @traitlets.validate(*BOUNDS)
    def _check(self, proposal):
        value = self._bounded(proposal)
        if proposal["trait"].name == "head_dim" and value % 2:
            raise traitlets.TraitError(f"head_dim must be even (between 4 and 256), got {value}")
        return value

    @property
    def numbers(self) -> dict:
        """:func:`reference` for the current state."""
        return reference(self.state())


def audit_lab(model: str = "custom", **controls) -> AuditLab:
    """Build the audit lab (display the returned object in a notebook).

    Parameters
    ----------
    model : str
        A shipped configuration or ``"custom"`` (default) for the bank set by ``head_dim``,
        ``base``, ``train_length`` and ``rule``.
    **controls
        ``target_length``, ``dtype``, ``head_dim``, ``base``, ``train_length``, ``rule``.

    Raises
    ------
    ValueError
        For an unknown control name; ``traitlets.TraitError`` for a value out of bounds.
    """
    unknown = sorted(set(controls) - set(AuditLab.BOUNDS))
    if unknown:
        raise ValueError(f"unknown control(s) {', '.join(unknown)}; the controls are {', '.join(AuditLab.BOUNDS)}")
    if model != "custom" and "target_length" not in controls:
        controls["target_length"] = load_model(model).target_length
    return AuditLab(model=model, **controls)
