"""The RoPE manifest: one :class:`~ropegeo.operator.RotaryOperator` and the context it serves in.

"We use RoPE" names a family, not an operator. :func:`read_config` reads a Hugging Face style
``config.json`` into a :class:`RopeManifest`; :func:`load_model` reads one shipped in ``ropegeo/data``.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ropegeo import _json
from ropegeo import _validate as v
from ropegeo.models.class_defaults import text_model_config, with_class_defaults
from ropegeo.models.model_types import (NOPE, LayerSpec, chatglm_view, describe_layers, layer_specs,
                                         multi_axis_layout, multi_axis_notes, proportional_view, refusal,
                                         rotary_dim_reading)
from ropegeo.operator import RotaryOperator
from ropegeo.scaling import Scaling, yarn_mscale

__all__ = ["RopeManifest", "POSITION_ID_POLICIES", "PAIRING_BY_MODEL_TYPE", "read_config", "load_model",
           "shipped_models", "ConfigError", "resolve", "model_record", "config_file", "LayerKind", "read_layer_kinds",
           "layer_kinds"]

POSITION_ID_POLICIES = ("contiguous", "left-padded", "packed-reset", "packed-continuous", "kv-cache")
PHASE_DTYPES = ("float64", "float32", "float16", "bfloat16")


class ConfigError(ValueError):
    """A configuration that cannot be turned into a manifest; the message names the field."""


#: The order of :meth:`RopeManifest.to_dict` after name and source.
_DICT_ORDER = ("base", "head_dim", "rotary_dim", "pairing", "position_id_policy", "scaling", "cache_offset", "phase_dtype",
               "max_position_embeddings", "original_max_position_embeddings", "sliding_window", "layer_type",
               "logit_scale", "sections", "round_robin", "pairing_width", "notes")
#: The operator's fields a manifest hands on by name (``m.base`` is ``m.operator.base``); given as plain
#: keywords to :class:`RopeManifest` they build its operator.
_OPERATOR_FIELDS = ("base", "head_dim", "rotary_dim", "pairing", "scaling", "phase_dtype", "sections", "round_robin")


@dataclass(frozen=True, init=False)
class RopeManifest:
    """One rotary operator and the context it serves in: everything needed to reproduce it.

    ``operator`` is a base and a rule (no explicit frequencies, position scale or attention
    factor), or its fields given as plain keywords build it and are read back by name (``m.base``
    is ``m.operator.base``). ``position_id_policy`` is one of :data:`POSITION_ID_POLICIES`;
    ``original_max_position_embeddings`` ``None`` means the declared length; a query sees keys
    fewer than ``sliding_window`` positions back; half-split pairs ``(i, i + pairing_width / 2)`` span
    ``pairing_width`` (``None``: the rotary width; Gemma 4's proportional RoPE spans its head); ``layer_type`` names the kind of layer for models
    whose layers differ; ``logit_scale`` multiplies the logits besides ``1 / sqrt(head width)`` and
    the rule's attention factor (DeepSeek-V2/V3: ``mscale(factor, mscale_all_dim) ** 2``);
    ``notes`` say what the reader inferred rather than read. Raises ``ValueError`` naming a field
    outside its set or range.

    Examples
    --------
    >>> m = RopeManifest(head_dim=64, base=500_000.0, max_position_embeddings=8192)
    >>> m.operator.head_dim, m.base, m.train_length
    (64, 500000.0, 8192)
    """

    operator: RotaryOperator
    position_id_policy: str = "contiguous"
    cache_offset: int = 0
    max_position_embeddings: int | None = None
    original_max_position_embeddings: int | None = None
    sliding_window: int | None = None
    layer_type: str | None = None
    logit_scale: float = 1.0
    pairing_width: int | None = None
    notes: tuple = ()
    name: str | None = None
    source: str | None = None

    def __init__(self, operator: RotaryOperator | None = None, *, position_id_policy: str = "contiguous",
                 cache_offset: int = 0, max_position_embeddings: int | None = None,
                 original_max_position_embeddings: int | None = None, sliding_window: int | None = None,
                 layer_type: str | None = None, logit_scale: float = 1.0, pairing_width: int | None = None, notes=(),
                 name: str | None = None, source: str | None = None, **fields) -> None:
        set_ = object.__setattr__
        set_(self, "operator", _manifest_operator(operator, fields))
        if position_id_policy not in POSITION_ID_POLICIES:
            raise ValueError(f"position_id_policy must be one of {', '.join(map(repr, POSITION_ID_POLICIES))}, "
                             f"got {position_id_policy!r}")
        set_(self, "position_id_policy", position_id_policy)
        set_(self, "cache_offset", v.length("cache_offset", cache_offset, minimum=0))
        for key, val in (("max_position_embeddings", max_position_embeddings), ("sliding_window", sliding_window),
                         ("original_max_position_embeddings", original_max_position_embeddings)):
            set_(self, key, None if val is None else v.length(key, val, minimum=1))
        set_(self, "logit_scale", v.real("logit_scale", logit_scale, greater_than=0.0))
        op, w = self.operator, pairing_width
        if w is not None and (v.integer("pairing_width", w, minimum=op.rotary_dim, maximum=op.head_dim) % 2
                              or (w != op.rotary_dim and op.pairing != "half")):
            raise ValueError(f"pairing_width must be even, and the rotary dim unless pairs are half-split, got {w}")
        set_(self, "pairing_width", None if w in (None, op.rotary_dim) else int(w))
        if not isinstance(notes, (list, tuple)) or not all(isinstance(n, str) for n in notes):
            raise ValueError(f"notes must be a list of strings, got {type(notes).__name__}")
        set_(self, "notes", tuple(notes))
        for key, val in (("layer_type", layer_type), ("name", name), ("source", source)):
            if val is not None and not isinstance(val, str):
                raise ValueError(f"{key} must be a string or None, got {type(val).__name__}")
            set_(self, key, val)

    @property
    def pairs(self) -> int:
        """Number of rotary pairs, ``rotary_dim // 2``."""
        return self.operator.pairs

    @property
    def train_length(self) -> int | None:
        """The pre-training context: ``original_max_position_embeddings``, else ``max_position_embeddings``."""
        return self.original_max_position_embeddings or self.max_position_embeddings

    @property
    def target_length(self) -> int | None:
        """The context served: the larger of ``max_position_embeddings`` and the rule's ``factor * original``."""
        cands = [self.max_position_embeddings] if self.max_position_embeddings else []
        sc = self.scaling
        if sc is not None and sc.original_max_position_embeddings:
            cands.append(int(round(sc.factor * sc.original_max_position_embeddings)))
        return max(cands) if cands else None

    def theta_at(self, seq_len: int | None = None) -> np.ndarray:
        """A copy of the operator's frequencies at ``seq_len`` (:meth:`ropegeo.operator.RotaryOperator.theta_at`)."""
        return np.array(self.operator.theta_at(seq_len))

    def attention_at(self, seq_len: int | None = None) -> float:
        """The operator's attention factor at ``seq_len`` (:meth:`ropegeo.operator.RotaryOperator.attention_at`)."""
        return self.operator.attention_at(seq_len)

    def with_(self, **changes) -> "RopeManifest":
        """A copy with some fields changed (validated again); the operator's fields by name, as on construction."""
        rotary = {k: changes.pop(k) for k in _OPERATOR_FIELDS if k in changes}
        if rotary:
            changes["operator"] = changes.get("operator", self.operator).with_(**rotary)
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """A JSON-ready dict: the operator's fields by name, then the context; :meth:`from_dict` inverts it."""
        out = {"name": self.name, "source": self.source}
        for key in _DICT_ORDER:
            out[key] = getattr(self, key)
        out.update(scaling=None if self.scaling is None else self.scaling.to_dict(), notes=list(self.notes),
                   sections=None if self.sections is None else list(self.sections))
        return out

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as a JSON string (non-finite numbers as null; keyword arguments go to ``json.dumps``)."""
        return _json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: Mapping) -> "RopeManifest":
        """Rebuild a manifest from :meth:`to_dict` output (``ValueError`` for unknown keys or bad values)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a manifest dict is required, got {type(data).__name__}")
        known = (set(cls.__dataclass_fields__) - {"operator"}) | set(_OPERATOR_FIELDS)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown manifest field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**dict(data))

    def table(self) -> str:
        """A short human-readable table of every field."""
        ctx = self.max_position_embeddings
        orig = self.original_max_position_embeddings
        rows = [
            ("model", self.name or "(unnamed)"),
            ("base (rope_theta)", f"{self.base:,.6g}"),
            ("head dim / rotary dim", f"{self.head_dim} / {self.rotary_dim} ({self.pairs} pairs)"),
            ("pairing", self.pairing),
            ("position ids", self.position_id_policy + (f", cache offset {self.cache_offset:,}" if self.cache_offset else "")),
            ("phase precision", self.phase_dtype),
            ("context: declared", "unknown" if ctx is None else f"{ctx:,}"),
            ("context: pre-training", "same as declared" if orig is None else f"{orig:,}"),
            ("context: served (target)", "unknown" if self.target_length is None else f"{self.target_length:,}"),
            ("scaling", "none" if self.scaling is None else self.scaling.describe()),
        ]
        if self.layer_type is not None:
            rows.append(("layer type", self.layer_type))
        if self.sliding_window is not None:
            rows.append(("attention window", f"{self.sliding_window:,} tokens (larger offsets never reach attention)"))
        if self.pairing_width is not None:
            rows.append(("pair layout", f"i with i + {self.pairing_width // 2}, the first {self.pairs} pairs turning"))
        if self.logit_scale != 1.0:
            rows.append(("extra logit scale", f"{self.logit_scale:.6g} (applied to the softmax scale)"))
        rows.extend(("note" if i == 0 else "", n) for i, n in enumerate(self.notes))
        if self.source:
            rows.append(("source", self.source))
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{k:<{width}}  {val}" for k, val in rows)

    def __str__(self) -> str:
        return self.table()


for _field in _OPERATOR_FIELDS:  # read-only views of the operator's fields, by the operator's names
    setattr(RopeManifest, _field, property(lambda self, _f=_field: getattr(self.operator, _f),
                                           doc=f"The operator's ``{_field}``."))


def _manifest_operator(operator, fields: dict) -> RotaryOperator:
    """The operator of a manifest: given, or built from its fields (a base and a rule)."""
    unknown = sorted(set(fields) - set(_OPERATOR_FIELDS))
    if unknown:
        raise TypeError(f"RopeManifest() got unknown field(s): {', '.join(unknown)}")
    if operator is None:
        if "base" in fields and fields["base"] is None:
            raise ValueError("base must be a real number, got None")
        if fields.get("phase_dtype", "float64") not in PHASE_DTYPES:
            raise ValueError(f"phase_dtype must be one of {', '.join(PHASE_DTYPES)}, got {fields['phase_dtype']!r}")
        return RotaryOperator(**fields)
    if fields:
        raise ValueError(f"give operator or its fields ({', '.join(sorted(fields))}), not both")
    if not isinstance(operator, RotaryOperator):
        raise ValueError(f"operator must be a ropegeo.RotaryOperator, got {type(operator).__name__}")
    if operator.theta_given is not None or operator.attention_factor is not None or operator.scale != 1.0:
        raise ValueError("a manifest's operator is a base and a scaling rule, without explicit theta, attention "
                         "factor or position scale")
    return operator


# One reader per field group: each takes the config and the fields read so far, returns new fields.

_DATA = (Path(__file__).resolve().parent.parent / "data")

#: Largest config.json read (real ones are a few KiB; LongRoPE lists make them tens of KiB).
MAX_CONFIG_BYTES = 1 << 20

#: Coordinate pairing of each model type: transformers' table (``scripts/make_pairing_table.py``), remote
#: code (ChatGLM2/3; Kimi K2 is DeepSeek-V3's code), and Gemma 4's layer-typed module (rotate_half).
PAIRING_BY_MODEL_TYPE = {**json.loads((_DATA / "tables" / "pairing_by_model_type.json").read_text())["pairing"],
                         "chatglm": "interleaved", "kimi_k2": "interleaved", "gemma4_text": "half"}

#: Layer kinds whose rotary operator ropegeo reads (chunked: Llama 4's RoPE layers).
LAYER_KINDS = ("full_attention", "sliding_attention", "chunked_attention")


def _positive_int(cfg: Mapping, key: str, where: str = "", *, maximum: int = v.MAX_LENGTH) -> int:
    val = cfg[key]
    if (isinstance(val, bool) or not isinstance(val, numbers.Real) or not 1 <= val <= maximum
            or not float(val).is_integer()):
        raise ConfigError(f"{where}{key} must be a positive integer up to {maximum:,}, got {val!r}")
    return int(val)


def _positive_real(cfg: Mapping, key: str, where: str = "", *, greater_than: float = 0.0) -> float:
    val = cfg[key]
    try:
        ok = (not isinstance(val, bool) and isinstance(val, numbers.Real) and math.isfinite(float(val))
              and val > greater_than)
    except OverflowError:  # an integer literal beyond the float range
        ok = False
    if not ok:
        raise ConfigError(f"{where}{key} must be a finite number greater than {greater_than:g}, got {val!r}")
    return float(val)


def _given(cfg: Mapping, key: str) -> bool:
    return cfg.get(key) is not None


def _params(cfg: Mapping) -> Mapping | None:
    """The single ``rope_parameters`` block (transformers 5), if any."""
    p = cfg.get("rope_parameters")
    return p if isinstance(p, Mapping) else None


#: model types whose transformers modeling code ignores a top-level rope_theta: GPT-J's rotary table is
#: built with base 10,000 whatever the config says; GPT-NeoX's configuration reads rotary_emb_base only.
_BASE_FIXED = {"gptj": None, "gpt_neox": "rotary_emb_base"}


def _read_base(cfg: Mapping, got: dict) -> dict:
    params = _params(cfg)
    kind = cfg.get("model_type")
    if isinstance(kind, str) and kind in _BASE_FIXED:
        key = _BASE_FIXED[kind]
        base = 10_000.0
        if key is not None and params is not None and _given(params, "rope_theta"):  # v5-saved GPT-NeoX
            base = _positive_real(params, "rope_theta", "rope_parameters.", greater_than=1.0)
        elif key is not None and _given(cfg, key):
            base = _positive_real(cfg, key, greater_than=1.0)
        top = cfg.get("rope_theta")
        notes = [f"rope_theta {top!r} is ignored: transformers' {kind} code rotates with base {base:,.10g}"] \
            if _given(cfg, "rope_theta") and top != base else []
        return {"base": base, "notes": notes}
    # transformers 5 fills a rope_parameters block from the top level only where the block is silent:
    # the block's own rope_theta wins
    if params is not None and _given(params, "rope_theta"):
        return {"base": _positive_real(params, "rope_theta", "rope_parameters.", greater_than=1.0)}
    if _given(cfg, "rope_theta"):
        return {"base": _positive_real(cfg, "rope_theta", greater_than=1.0)}
    if _given(cfg, "rotary_emb_base"):  # GPT-NeoX's name for the base
        return {"base": _positive_real(cfg, "rotary_emb_base", greater_than=1.0)}
    return {"base": 10_000.0, "notes": ["no rope_theta: base 10,000, the default of transformers' configuration "
                                        "classes"]}


def _head_from(cfg: Mapping, width_key: str, heads_key: str) -> int:
    width, heads = _positive_int(cfg, width_key), _positive_int(cfg, heads_key)
    head_dim = width // heads
    if not 2 <= head_dim <= v.MAX_HEAD_DIM:
        raise ConfigError(f"{width_key} // {heads_key} = {head_dim:,} is not a rotary head width "
                          f"(2 to {v.MAX_HEAD_DIM:,})")
    return head_dim


def _read_head(cfg: Mapping, got: dict) -> dict:
    if _given(cfg, "qk_rope_head_dim"):  # DeepSeek-V2/V3 (MLA): the rotary part is a head of its own
        rope = _positive_int(cfg, "qk_rope_head_dim", maximum=v.MAX_HEAD_DIM)
        nope = cfg.get("qk_nope_head_dim")
        extra = f"; the other {nope} coordinates of each query/key head (qk_nope_head_dim) never rotate" \
            if nope else ""
        return {"head_dim": rope, "notes": [f"rotary head: qk_rope_head_dim = {rope}{extra}"]}
    if _given(cfg, "head_dim"):
        return {"head_dim": _positive_int(cfg, "head_dim", maximum=v.MAX_HEAD_DIM)}
    for width, heads in (("hidden_size", "num_attention_heads"), ("n_embd", "n_head")):  # n_*: GPT-J
        if _given(cfg, width) and _given(cfg, heads):
            return {"head_dim": _head_from(cfg, width, heads)}
    missing = "hidden_size" if not _given(cfg, "hidden_size") else "num_attention_heads"
    raise ConfigError(f"config needs head_dim, or hidden_size and num_attention_heads: {missing} is missing")


def _read_rotary(cfg: Mapping, got: dict) -> dict:
    head_dim = got["head_dim"]
    if head_dim % 2:
        raise ConfigError(f"head_dim must be even, got {head_dim}")
    if _given(cfg, "qk_rope_head_dim"):
        return {"rotary_dim": head_dim}
    holder, where, key = None, "", None
    params = _params(cfg)
    if params is not None and _given(params, "partial_rotary_factor"):  # the block wins, as in transformers 5
        holder, where, key = params, "rope_parameters.", "partial_rotary_factor"
    for k in ("partial_rotary_factor", "rotary_pct"):  # rotary_pct: GPT-NeoX
        if key is None and _given(cfg, k):
            holder, key = cfg, k
    from_factor = None
    if key is not None:
        prf = _positive_real(holder, key, where)
        if prf > 1:
            raise ConfigError(f"{where}{key} must be in (0, 1], got {prf:g}")
        from_factor = int(head_dim * prf)  # truncated, as transformers truncates it
        if from_factor < 2 or from_factor % 2:
            raise ConfigError(f"{where}{key}={prf:g} gives int({head_dim} * {prf:g}) = {from_factor} rotary "
                              "coordinates; it must be an even number of at least 2")
    if _given(cfg, "rotary_dim"):  # GPT-J, CodeGen: an absolute count; MiniMax-M2: a factor's default
        rot = _positive_int(cfg, "rotary_dim", maximum=head_dim)
        if rot % 2:
            raise ConfigError(f"rotary_dim must be even, got {rot}")
        try:
            got_dim, notes = rotary_dim_reading(cfg.get("model_type"), rot, from_factor, f"{where}{key}",
                                                cfg.get("model_type") in PAIRING_BY_MODEL_TYPE)
        except ValueError as exc:
            raise ConfigError(f"{exc} of a {head_dim}-wide head") from None
        return {"rotary_dim": got_dim or head_dim, "notes": notes}
    return {"rotary_dim": head_dim if from_factor is None else from_factor}


def _read_multi_axis(cfg: Mapping, got: dict) -> dict:
    try:  # M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): its sections, and a note
        sec, inter = multi_axis_layout(cfg, got["rotary_dim"] // 2) or (None, False)
        return {"notes": multi_axis_notes(cfg, got["rotary_dim"] // 2), "sections": sec, "round_robin": inter}
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _read_pairing(cfg: Mapping, got: dict) -> dict:
    kind = cfg.get("model_type")
    if kind is not None and not isinstance(kind, str):
        raise ConfigError(f"model_type must be a string, got {type(kind).__name__}")
    if cfg.get("rope_interleave") is not None:  # DeepSeek-V3 in transformers: True (the default) or False
        if not isinstance(cfg["rope_interleave"], bool):
            raise ConfigError(f"rope_interleave must be true or false, got {cfg['rope_interleave']!r}")
        return {"pairing": "interleaved" if cfg["rope_interleave"] else "half"}
    if kind in PAIRING_BY_MODEL_TYPE:
        return {"pairing": PAIRING_BY_MODEL_TYPE[kind]}
    why = "the config names no model_type" if kind is None else f"model_type {kind!r} is not in ropegeo's table"
    return {"pairing": "half", "notes": [f"pairing assumed half-split (transformers' rotate_half): {why}"]}


def _read_lengths(cfg: Mapping, got: dict) -> dict:
    out = {"max_position_embeddings": None, "original_max_position_embeddings": None}
    for key in ("max_position_embeddings", "n_positions"):  # n_positions: GPT-J
        if _given(cfg, key):
            out["max_position_embeddings"] = _positive_int(cfg, key)
            break
    if _given(cfg, "original_max_position_embeddings"):
        out["original_max_position_embeddings"] = _positive_int(cfg, "original_max_position_embeddings")
    return out


def _read_scaling(cfg: Mapping, got: dict) -> dict:
    name = next((k for k in ("rope_scaling", "rope_parameters") if _given(cfg, k)), None)
    max_pos, orig = got["max_position_embeddings"], got["original_max_position_embeddings"]
    try:
        scaling = Scaling.from_hf(None if name is None else cfg[name], field_name=name or "rope_scaling",
                                  max_position_embeddings=max_pos, original_max_position_embeddings=orig,
                                  pairs=got["rotary_dim"] // 2)
        if scaling is not None:
            scaling.check_pairs(got["rotary_dim"] // 2)
    except ValueError as exc:  # a ConfigError too: the same message
        raise ConfigError(str(exc)) from None
    out = {"scaling": scaling}
    block_orig = None if scaling is None or scaling.rule == "dynamic" else scaling.original_max_position_embeddings
    if orig is None and block_orig is not None:
        out["original_max_position_embeddings"] = orig = block_orig
    if max_pos is not None and orig is not None and orig > max_pos:
        where = "original_max_position_embeddings" if got["original_max_position_embeddings"] else \
            f"{name}.original_max_position_embeddings"
        raise ConfigError(f"{where} ({orig:,}) is above max_position_embeddings ({max_pos:,}): a model cannot be "
                          "pre-trained on more tokens than it declares")
    return out


def _read_window(cfg: Mapping, got: dict) -> dict:
    if not _given(cfg, "sliding_window"):
        return {"sliding_window": None}
    window = _positive_int(cfg, "sliding_window")
    if cfg.get("use_sliding_window") is False:  # Qwen2: the window is declared but switched off
        return {"sliding_window": None, "notes": [f"sliding_window {window:,} is off (use_sliding_window false)"]}
    return {"sliding_window": window}


def _read_logit_scale(cfg: Mapping, got: dict) -> dict:
    sc = got["scaling"]
    if not _given(cfg, "qk_rope_head_dim") or sc is None or sc.rule != "yarn" or not sc.mscale_all_dim:
        return {}
    # DeepSeek-V2/V3 attention multiplies its softmax scale by mscale(factor, mscale_all_dim) ** 2
    m = yarn_mscale(sc.factor, sc.mscale_all_dim)
    return {"logit_scale": m * m,
            "notes": [f"softmax scale multiplied by (0.1 * {sc.mscale_all_dim:g} * ln {sc.factor:g} + 1)^2 = "
                      f"{m * m:.6g} (mscale_all_dim, DeepSeek attention)"]}


#: The readers, in order; each may use the fields of the ones before it.
_READERS = (_read_base, _read_head, _read_rotary, _read_multi_axis, _read_pairing, _read_lengths, _read_scaling, _read_window,
            _read_logit_scale)


def _load(config, source: str | None) -> tuple[Mapping, str | None]:
    """The parsed configuration and its source label, from a dict or a (bounded) JSON file."""
    if not (isinstance(config, (str, Path)) or hasattr(config, "__fspath__")):
        if not isinstance(config, Mapping):
            raise ConfigError(f"config must be a dict (parsed config.json) or a path, got {type(config).__name__}")
        return config, source
    if not str(config).strip():
        raise ConfigError("config: the path is empty; give a config.json path or a shipped model name")
    path = config_file(config)  # a regular file only: a FIFO or a terminal would block the read
    try:
        with path.open("rb") as fh:  # bounded read: a file may still grow while it is read
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"config: {str(path)!r} holds more than {MAX_CONFIG_BYTES:,} bytes; is it a config.json?")
        cfg = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"config: cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config: {str(path)!r} is not UTF-8 text (byte {exc.start}); is it a config.json?") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"config: {str(path)!r} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ConfigError(f"config: {str(path)!r} nests its JSON too deeply to be a config.json") from None
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"config: {str(path)!r} holds a JSON {type(cfg).__name__}, not an object")
    return cfg, source or str(path)


def _specs(cfg: Mapping) -> list[LayerSpec] | None:
    """The kinds of layer as the model runs them (:func:`ropegeo.models.model_types.layer_specs`)."""
    try:
        return layer_specs(cfg)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _kind_view(cfg: Mapping, kind: str, block: Mapping | None, spec: LayerSpec | None = None) -> dict:
    """The configuration as the layers of one kind read it."""
    view = {k: val for k, val in cfg.items() if k not in ("layer_types", "rope_local_base_freq")}
    if block is not None:  # transformers 5: one rope_parameters block per layer kind
        view["rope_parameters"] = block
        if _given(block, "rope_theta"):
            view.pop("rope_theta", None)  # the chosen layer's own base wins over a top-level one
    elif kind == "sliding_attention" and _given(cfg, "rope_local_base_freq"):
        # Gemma 3: local layers rotate with their own base and no scaling rule
        view.update(rope_theta=cfg["rope_local_base_freq"], rope_scaling=None, rope_parameters=None)
    if cfg.get("model_type") == "gemma4_text" and kind == "full_attention":
        view["head_dim"] = cfg.get("global_head_dim") or 512  # Gemma4TextConfig: global_head_dim, default 512
    if kind != "sliding_attention":
        view.pop("sliding_window", None)
    if spec is not None and spec.chunk is not None:  # Llama 4: the chunk bounds the offsets attention sees
        view.update(sliding_window=spec.chunk, use_sliding_window=None)
    return view


def _layer_kinds(cfg: Mapping) -> dict[str, dict | None] | None:
    """``{kind: view or None (NoPE)}`` for layers that differ, ``None`` when they share one operator."""
    params = cfg.get("rope_parameters")
    specs = _specs(cfg)
    by_kind = {sp.kind: sp for sp in specs or ()}
    if isinstance(params, Mapping) and any(isinstance(b, Mapping) for b in params.values()):
        bad = [k for k, b in params.items() if not isinstance(b, Mapping)]
        if bad:
            raise ConfigError(f"rope_parameters mixes per-layer-type blocks with other entries ({', '.join(map(str, bad))}): "
                              "each value must be the block of one layer type")
        if _given(cfg, "rope_scaling"):
            raise ConfigError("the config has both rope_scaling and per-layer-type rope_parameters; they conflict, "
                              "so ropegeo reads neither: remove one of them")
        return {str(k): _kind_view(cfg, str(k), b, by_kind.get(str(k))) for k, b in params.items()}
    if specs is None:
        return None
    if len(specs) == 1 and specs[0].rope and specs[0].kind in ("sliding_attention",):
        return None  # every layer windowed: the config as a whole
    return {sp.kind: _kind_view(cfg, sp.kind, None, sp) if sp.rope else None for sp in specs}


def _describe_kind(view: Mapping | None) -> str:
    if view is None:
        return NOPE
    params = _params(view) or {}
    base = view.get("rope_theta", params.get("rope_theta", 10_000))
    window = view.get("sliding_window")
    base = f"{base:,.10g}" if isinstance(base, numbers.Real) and not isinstance(base, bool) else repr(base)
    return f"base {base}, " + ("no window" if window is None else f"window {window:,}")


def _kind_notes(cfg: Mapping, kind: str) -> list[str]:
    """What the other kinds of layer are, and this kind's chunk: said in the chosen kind's notes."""
    specs = {sp.kind: sp for sp in _specs(cfg) or ()}
    total = sum(len(sp.layers) for sp in specs.values()) or None
    notes = []
    sp = specs.get(kind)
    if sp is not None and sp.layers:
        notes.append(f"{kind}: {describe_layers(sp.layers, total)}")
    if sp is not None and sp.chunk is not None:
        notes.append(f"chunked attention (attention_chunk_size {sp.chunk:,}): a query sees only the keys of its own "
                     f"{sp.chunk:,}-token chunk, so no offset of {sp.chunk:,} or more reaches attention; the chunk "
                     "is read as the attention window (the same bound on offsets)")
    if kind == "full_attention" and cfg.get("use_sliding_window") is True and _given(cfg, "max_window_layers") \
            and not _given(cfg, "layer_types"):
        notes.append(f"use_sliding_window is true, but layers below max_window_layers ({cfg['max_window_layers']}) "
                     "attend to the whole context (transformers' layer_types): no window on these layers")
    for other in specs.values():
        if other.kind != kind and not other.rope:
            notes.append(f"{other.kind}: {describe_layers(other.layers, total)} have {NOPE}; they are not part of "
                         "this operator")
    return notes


def _choose_kind(cfg: Mapping, layer_type) -> tuple[Mapping, str | None, list[str]]:
    kinds = _layer_kinds(cfg)
    if kinds is None:
        if layer_type is not None:
            raise ConfigError(f"layer_type {layer_type!r} was given, but this config has a single kind of layer "
                              "(layer_type is for configurations whose layers differ)")
        return cfg, None, []
    if len(kinds) == 1:
        kind, view = next(iter(kinds.items()))
        if view is None:
            raise ConfigError(f"every layer of this config ({kind}) has {NOPE}: there is no RoPE to audit")
        return view, None, _kind_notes(cfg, kind)
    listing = "; ".join(f"{k} ({_describe_kind(view)})" for k, view in kinds.items())
    rotating = [k for k, view in kinds.items() if view is not None]
    if not rotating:
        raise ConfigError(f"no kind of layer of this config has a rotary embedding ({listing}): there is no RoPE "
                          "to audit")
    if layer_type is None and len(rotating) == 1:  # Llama 4, Cohere2: one kind rotates, the others are NoPE
        kind = rotating[0]
        note = (f"the config has {len(kinds)} kinds of layer ({listing}); only {kind} has a rotary embedding, "
                f"so its operator is the one audited")
        return kinds[kind], kind, [note] + _kind_notes(cfg, kind)
    if layer_type is None:
        raise ConfigError(f"the config has {len(kinds)} kinds of layer: {listing}; ropegeo audits one rotary "
                          "operator at a time: choose one with layer_type (--layer-type), or audit every kind "
                          "with audit --config (ropegeo.gates.layers.layer_audit)")
    if not isinstance(layer_type, str) or layer_type not in kinds:
        raise ConfigError(f"layer_type must be one of {', '.join(kinds)}, got {layer_type!r}")
    if kinds[layer_type] is None:
        raise ConfigError(f"layer_type {layer_type!r}: these layers have {NOPE}; there is no rotary operator to "
                          f"audit (the config's kinds: {listing})")
    if layer_type not in LAYER_KINDS and not isinstance(cfg.get("rope_parameters"), Mapping):
        raise ConfigError(f"layer_type {layer_type!r}: ropegeo reads the rotary operator of "
                          f"{', '.join(LAYER_KINDS)} layers only")
    return kinds[layer_type], layer_type, _kind_notes(cfg, layer_type)


def _model_view(view: Mapping) -> tuple[Mapping, list[str]]:
    """The view in ropegeo's fields for ChatGLM and the ``proportional`` rule."""
    try:
        if view.get("model_type") == "chatglm":
            return chatglm_view(view)
        for key in ("rope_parameters", "rope_scaling"):
            block = view.get(key)
            if isinstance(block, Mapping) and block.get("rope_type", block.get("type")) == "proportional":
                head = _read_head(view, {})["head_dim"]
                return proportional_view(view, key, head)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return view, []


def _opening(cfg: Mapping) -> tuple[Mapping, list[str]]:
    """The text model transformers builds, and a note; refuses a config without RoPE."""
    try:
        text, notes = text_model_config(cfg)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    for c in (cfg, text) if text is not cfg else (cfg,):
        why = refusal(c)
        if why is not None:
            raise ConfigError(why)
    return text, notes


def read_config(config, *, name: str | None = None, source: str | None = None,
                layer_type: str | None = None) -> RopeManifest:
    """Build a manifest from a ``config.json`` (a dict, or a path to at most 1 MiB), read as its model uses it.

    Absent fields take the model type's class defaults. ``layer_type`` picks the kind of layer of a model whose layers differ (required there, refused
    elsewhere). The manifest's phases are float32, as transformers computes them; ``notes`` list
    what was inferred. Raises :class:`ConfigError` (a ``ValueError``) naming a missing, malformed
    or contradictory field.

    Examples
    --------
    >>> m = read_config({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64,
    ...                  "n_positions": 2048})
    >>> m.head_dim, m.rotary_dim, m.pairing, m.max_position_embeddings
    (256, 64, 'interleaved', 2048)

    A scaling block is read by its rule's reader (Llama 3.1's ``rope_scaling``):

    >>> m = read_config({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
    ...                  "rope_theta": 500000.0, "max_position_embeddings": 131072,
    ...                  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
    ...                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})
    >>> m.scaling.describe(), m.train_length, m.pairing
    ('llama3 x8 from 8,192 (low 1, high 4)', 8192, 'half')
    >>> round(float(m.theta_at()[-1] / 500000.0 ** (-126 / 128)), 6)  # the slowest pair runs 8 times slower
    0.125
    """
    cfg, source = _load(config, source)
    for key in ("_name_or_path", "name"):
        if cfg.get(key) is not None and not isinstance(cfg[key], str):
            raise ConfigError(f"{key} must be a string, got {type(cfg[key]).__name__}")
    cfg, text_notes = _opening(cfg)
    label = name or v.printable(cfg.get("_name_or_path") or cfg.get("name"))
    cfg, filled = with_class_defaults(cfg)
    filled = text_notes + filled
    view, kind, kind_notes = _choose_kind(cfg, layer_type)
    view, model_notes = _model_view(view)
    fields: dict[str, Any] = {"notes": list(filled) + model_notes, "pairing_width": view.pop("_pairing_width", None)}
    for reader in _READERS:
        new = reader(view, fields)
        fields["notes"] += new.pop("notes", [])
        fields.update(new)
    fields["notes"] += kind_notes
    # every reader, ChatGLM's remote code too, forms the angles in float32 and casts cos/sin to the model dtype
    return RopeManifest(
        position_id_policy="contiguous", cache_offset=0, phase_dtype="float32", layer_type=kind,
        name=f"{label or 'config'} ({kind})" if kind and not name else label,
        source=source or cfg.get("source"), **fields)


@dataclass(frozen=True)
class LayerKind:
    """One kind of layer (``kind`` ``None``: every layer alike), its layer indices and its manifest (``None``: NoPE)."""

    kind: str | None
    layers: tuple
    manifest: RopeManifest | None
    total_layers: int | None = None

    @property
    def position_signal(self) -> bool:
        """False for a kind with no rotary embedding."""
        return self.manifest is not None

    def describe(self) -> str:
        """``"chunked_attention: layers 0, 1, 2, .. 46 (36 of 48)"`` and, for NoPE, what it lacks."""
        where = describe_layers(self.layers, self.total_layers) if self.layers else "every layer"
        head = f"{self.kind or 'all layers'}: {where}"
        return head if self.position_signal else f"{head}: {NOPE}"


def read_layer_kinds(config, *, name: str | None = None, source: str | None = None) -> tuple[LayerKind, ...]:
    """Every kind of layer of a configuration, each with its rotary operator (or none, for NoPE).

    One entry per kind for a model whose layers differ, else one with ``kind=None``; raises as
    :func:`read_config`.

    Examples
    --------
    >>> kinds = read_layer_kinds({"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40,
    ...                           "head_dim": 128, "num_hidden_layers": 48, "rope_theta": 500000.0,
    ...                           "max_position_embeddings": 10485760})
    >>> [(k.kind, len(k.layers), k.position_signal) for k in kinds]
    [('chunked_attention', 36, True), ('full_attention', 12, False)]
    >>> kinds[0].manifest.sliding_window
    8192
    """
    cfg, source = _load(config, source)
    text, _ = _opening(cfg)
    filled, _ = with_class_defaults(text)
    kinds = _layer_kinds(filled)
    specs = {sp.kind: sp for sp in _specs(filled) or ()}
    total = sum(len(sp.layers) for sp in specs.values()) or None
    if kinds is None or len(kinds) == 1:
        m = read_config(cfg, name=name, source=source)
        return (LayerKind(None, tuple(range(total)) if total else (), m, total),)
    out = []
    for kind, view in kinds.items():
        m = None if view is None else read_config(cfg, name=name and f"{name} ({kind})", source=source, layer_type=kind)
        out.append(LayerKind(kind, specs[kind].layers if kind in specs else (), m, total))
    return tuple(out)


def layer_kinds(name_or_path) -> tuple[LayerKind, ...]:
    """:func:`read_layer_kinds` of a shipped model name, a config.json path or a parsed config dict."""
    if isinstance(name_or_path, Mapping):
        return read_layer_kinds(name_or_path)
    if not isinstance(name_or_path, (str, Path)) and not hasattr(name_or_path, "__fspath__"):
        raise ValueError(f"config must be a model name, a path or a config dict, got {type(name_or_path).__name__}")
    text = str(name_or_path)
    if isinstance(name_or_path, str) and text.strip().lower() in shipped_models():
        rec = model_record(text)
        return read_layer_kinds(rec["config"], name=rec.get("model"), source=rec.get("source"))
    return read_layer_kinds(config_file(text))


def shipped_models() -> list[str]:
    """Names of the model configurations shipped with ropegeo (``ropegeo/data/*.json``)."""
    return sorted(p.stem for p in _DATA.glob("*.json"))


def model_record(name: str) -> dict:
    """The raw shipped record of a model: ``model``, ``source``, ``read_on``, ``layer_type`` (optional), ``config``."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    if key not in shipped_models():  # a name, never a path: nothing outside the shipped records is read
        raise ValueError(f"name {_shown(name)} is not a shipped model; known: {', '.join(shipped_models())}")
    return json.loads((_DATA / f"{key}.json").read_text(encoding="utf-8"))


def load_model(name: str, *, layer_type: str | None = None) -> RopeManifest:
    """The manifest of a shipped model (one of :func:`shipped_models`, case-insensitive).

    ``layer_type`` defaults to the record's own (its long-range layers), named in the notes.
    """
    rec = model_record(name)
    chosen = layer_type if layer_type is not None else rec.get("layer_type")
    label = rec.get("model", name.strip().lower())
    m = read_config(rec["config"], name=None if chosen else label, source=rec.get("source"), layer_type=chosen)
    if chosen is None:
        return m
    text, _ = _opening(rec["config"])  # a wrapper's text model, with its class defaults, as read_config reads it
    others = [k for k in (_layer_kinds(with_class_defaults(text)[0]) or {}) if k != chosen]
    notes = m.notes
    if layer_type is None:
        notes += (f"{chosen} layers: the kind this shipped record reads by default; its "
                  f"{', '.join(others)} layers: layer_type={others[0]!r} (--layer-type {others[0]})",)
    return m.with_(name=f"{label} ({chosen})", notes=notes)


def resolve(name_or_path, *, layer_type: str | None = None, option: str = "config") -> RopeManifest:
    """The manifest of a shipped model name or a ``config.json`` path; errors name the argument ``option``."""
    if not isinstance(name_or_path, (str, Path)):
        raise ValueError(f"{option} must be a model name or a path, got {type(name_or_path).__name__}")
    text = str(name_or_path)
    if not text.strip():
        raise ConfigError(f"{option} is empty; give a config.json path or one of: {', '.join(shipped_models())}")
    if text.strip().lower() in shipped_models():
        return load_model(text, layer_type=layer_type)
    return read_config(config_file(text, option), layer_type=layer_type)


def _shown(text: str, limit: int = 80) -> str:
    """``repr(text)``, shortened in the middle when long (an error message stays one readable line)."""
    return repr(text) if len(text) <= limit else repr(text[: limit // 2]) + " ... " + repr(text[-limit // 4:])


def config_file(path, option: str = "config") -> Path:
    """The path of a configuration file, checked before anything opens it: an existing regular file.

    A FIFO or ``/dev/stdin`` would block the read. Raises :class:`ConfigError` naming ``option``.

    Examples
    --------
    >>> config_file("/dev/null")
    Traceback (most recent call last):
    ...
    ropegeo.models.manifest.ConfigError: config: '/dev/null' is not a regular file (a directory, FIFO, pipe or device); give a config.json path or a shipped model name
    """
    text = os.fspath(path) if hasattr(path, "__fspath__") else path
    if not isinstance(text, str) or not text.strip():
        got = "an empty path" if isinstance(text, str) else type(path).__name__
        raise ConfigError(f"{option} must be a config.json path or a shipped model name, got {got}")
    try:
        mode = os.stat(text).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise ConfigError(f"{option}: cannot read {_shown(text)}: it is neither a file nor a shipped model; "
                          f"shipped: {', '.join(shipped_models())}") from None
    except (OSError, ValueError) as exc:  # too long, no permission, a loop of links; ValueError: a NUL byte
        raise ConfigError(f"{option}: cannot read {_shown(text)}: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{option}: {_shown(text)} is not a regular file (a directory, FIFO, pipe or device); "
                          "give a config.json path or a shipped model name")
    return Path(text)

