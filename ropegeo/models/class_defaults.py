"""What transformers' configuration classes fill in when a ``config.json`` leaves a rotary field out.

The table ``data/tables/defaults_by_model_type.json`` (``scripts/make_defaults_table.py``) holds
them per model type; :func:`with_class_defaults` fills the gaps and says what it filled.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

_TABLE = json.loads(((Path(__file__).resolve().parent.parent / "data") / "tables" / "defaults_by_model_type.json").read_text())
#: model type -> {"head_dim": int, "max_position_embeddings": int, "sliding_window": int,
#: "rope_parameters": block or {layer kind: block}, "ignored": [fields its code never reads]}
DEFAULTS: dict = _TABLE["defaults"]
SOURCE = f"transformers {_TABLE['transformers']}"

#: fields that state something about the rotary operator (any one present: the config says how it rotates)
_ROPE_KEYS = ("rope_theta", "rope_scaling", "rope_parameters", "rotary_emb_base", "rope_local_base_freq",
              "partial_rotary_factor", "rotary_pct", "rotary_dim")
_BASE_KEYS = ("rope_theta", "rotary_emb_base")
_WIDTH_KEYS = ("partial_rotary_factor", "rotary_pct", "rotary_dim")
#: fields that state the context (GPT-J: n_positions; ChatGLM: seq_length)
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "seq_length")
#: keys of a default rope block that are not the scaling rule's own parameters
_NOT_RULE = ("rope_theta", "partial_rotary_factor", "rope_type", "type")


def _block_has(cfg: Mapping, keys) -> bool:
    block = cfg.get("rope_parameters")
    inner = isinstance(block, Mapping) and any(block.get(k) is not None for k in keys)
    return inner or any(cfg.get(k) is not None for k in keys)


def text_model_config(cfg: Mapping) -> tuple[Mapping, list[str]]:
    """The text model of a multimodal wrapper (``text_config``, as ``gemma3_text``), and a note saying so."""
    if "text_config" not in cfg:
        return cfg, []
    text, outer = cfg["text_config"], cfg.get("model_type")
    if text is not None and not isinstance(text, Mapping):
        raise ValueError(f"text_config must be an object (the text model's settings), got {type(text).__name__}")
    block = dict(text or {})
    kind = f"{outer}_text" if isinstance(outer, str) and f"{outer}_text" in DEFAULTS else block.get("model_type")
    if not isinstance(kind, str) or not kind.isprintable():
        raise ValueError("text_config: ropegeo does not know which text configuration class transformers builds "
                         f"from it (model_type {outer!r} has no *_text class in {SOURCE}, and the block names none)")
    block["model_type"] = kind
    for key in ("_name_or_path", "name"):
        if key in cfg and key not in block:
            block[key] = cfg[key]
    said = "the block" if text else "an empty block (null): every field"
    return block, [f"the text model is read from text_config as transformers builds it: {kind}'s configuration "
                   f"class, with its defaults for what {said} leaves out"]


def with_class_defaults(cfg: Mapping) -> tuple[Mapping, list[str]]:
    """``cfg`` with the absent rotary fields its model type's class defaults, and a note for each."""
    kind = cfg.get("model_type")
    d = DEFAULTS.get(kind) if isinstance(kind, str) else None
    if not d:
        return cfg, []
    out, notes = _without_ignored(dict(cfg), d.get("ignored", ()), kind)
    cfg = dict(out)  # what is left is what the class reads
    who = f"{kind}'s configuration class ({SOURCE})"
    if "head_dim" in d and cfg.get("head_dim") is None and cfg.get("qk_rope_head_dim") is None:
        out["head_dim"] = d["head_dim"]
        notes.append(f"head_dim is not in the config: {who} defaults it to {d['head_dim']}")
    if "rotary_dim" in d and cfg.get("rotary_dim") is None:  # GPT-J, CodeGen: the table's width
        out["rotary_dim"] = d["rotary_dim"]
        notes.append(f"rotary_dim is not in the config: {who} defaults it to {d['rotary_dim']}")
    mpe = d.get("max_position_embeddings")
    if mpe is not None and not any(cfg.get(k) is not None for k in _LENGTH_KEYS):
        out["max_position_embeddings"] = mpe  # Falcon-7B's config.json states no context: FalconConfig's 2,048
        notes.append(f"max_position_embeddings is not in the config: {who} defaults it to {mpe:,}")
    window = d.get("sliding_window")
    if window is not None and "sliding_window" not in cfg:  # absent only: a null stays null (no window)
        out["sliding_window"] = window
        notes.append(f"sliding_window is not in the config: {who} defaults it to {window:,}")
    out, notes = _bidirectional_window(out, kind, notes)
    if d.get("use_sliding_window") is not None and "use_sliding_window" not in cfg and out.get("sliding_window"):
        out["use_sliding_window"] = d["use_sliding_window"]
        notes.append(f"use_sliding_window is not in the config: {who} defaults it to "
                     f"{str(d['use_sliding_window']).lower()}")
    block = d.get("rope_parameters")
    if not block:
        return out, notes
    if not any(cfg.get(k) is not None for k in _ROPE_KEYS):
        out["rope_parameters"] = block
        notes.append(f"the config states no rotary field: {who} defaults are used ({_describe(block)})")
        return out, notes
    if isinstance(next(iter(block.values())), Mapping):  # one block per layer kind
        if cfg.get("rope_parameters") is None:
            return _legacy_per_kind(out, block, who, notes)
        return out, notes
    if not _block_has(cfg, _BASE_KEYS) and block.get("rope_theta") is not None:
        out["rope_theta"] = block["rope_theta"]
        notes.append(f"rope_theta is not in the config: {who} defaults it to {block['rope_theta']:,.10g}")
    factor = block.get("partial_rotary_factor")
    if not _block_has(cfg, _WIDTH_KEYS) and factor not in (None, 1, 1.0):
        out["partial_rotary_factor"] = factor
        notes.append(f"partial_rotary_factor is not in the config: {who} defaults it to {factor:g}")
    rule = block.get("rope_type", "default")
    if rule != "default" and not _block_has(cfg, ("rope_type", "type")) and cfg.get("rope_scaling") is None:
        out["rope_scaling"] = {k: v for k, v in block.items() if k not in _NOT_RULE or k == "rope_type"}
        notes.append(f"no scaling block in the config: {who} defaults to its {rule} block")
    return out, notes


#: model types whose configuration class halves the window of a bidirectional model (``sliding_window // 2 + 1``,
#: "due to fa we set exclusive bounds"), and the ``use_bidirectional_attention`` values that do it
_BIDIRECTIONAL = {"gemma3_text": (True,), "gemma4_text": ("all",), "gemma4_unified": ("all",),
                  "diffusion_gemma": ("all",)}


def _bidirectional_window(cfg: dict, kind: str, notes: list) -> tuple[dict, list]:
    """Gemma 3/4's bidirectional variants: the window the class sets from the one the config states."""
    said, window = cfg.get("use_bidirectional_attention"), cfg.get("sliding_window")
    if kind not in _BIDIRECTIONAL or said not in _BIDIRECTIONAL[kind] or said is False or not isinstance(window, int):
        return cfg, notes
    cfg["sliding_window"] = window // 2 + 1
    return cfg, notes + [f"use_bidirectional_attention {said!r}: {kind}'s configuration class ({SOURCE}) sets the "
                         f"window to sliding_window // 2 + 1 = {window // 2 + 1:,} (a query sees {window // 2:,} "
                         "positions on each side)"]


def _without_ignored(cfg: dict, ignored, kind: str) -> tuple[dict, list[str]]:
    """``cfg`` without the fields ``kind``'s code never reads (the table's ``ignored``), and a note for each."""
    notes = []
    for field in ignored:
        where, _, key = field.rpartition(".")
        for holder in ("rope_parameters", "rope_scaling") if where else ("",):
            block = cfg.get(holder) if holder else cfg
            if not isinstance(block, Mapping) or block.get(key) is None:
                continue
            if holder and any(isinstance(b, Mapping) for b in block.values()):
                continue  # one block per layer kind: each kind's code decides (Gemma 4's proportional rule)
            if holder:
                cfg[holder] = {k: val for k, val in block.items() if k != key}
            else:
                cfg.pop(key)
            notes.append(f"{holder + '.' if holder else ''}{key} is in the config, but {kind}'s code in {SOURCE} "
                         "never reads it: ignored")
    return cfg, notes


def _legacy_per_kind(cfg: dict, blocks: Mapping, who: str, notes: list) -> tuple[Mapping, list[str]]:
    """Gemma 3's legacy fields as one block per layer kind (``rope_local_base_freq``: the sliding layers')."""
    scaling = cfg.pop("rope_scaling", None)
    theta, local = cfg.pop("rope_theta", None), cfg.pop("rope_local_base_freq", None)
    out = {}
    for kind, default in blocks.items():
        b = dict(default)
        if kind == "sliding_attention":
            b["rope_theta"] = local if local is not None else b.get("rope_theta")
        else:
            b["rope_theta"] = theta if theta is not None else b.get("rope_theta")
            if isinstance(scaling, Mapping):
                b = {**{k: val for k, val in b.items() if k in ("rope_theta", "partial_rotary_factor")},
                     **{k: val for k, val in scaling.items() if k != "type"},
                     "rope_type": scaling.get("rope_type", scaling.get("type", "default"))}
            elif scaling is not None:
                cfg["rope_scaling"] = scaling  # not a block: the scaling reader refuses it by name
        out[kind] = b
    cfg["rope_parameters"] = out
    notes.append(f"{who} gives each kind of layer its own rotary block ({_describe(out)}): "
                 "rope_theta and rope_scaling apply to the full-attention layers, rope_local_base_freq to the "
                 "sliding ones, the class defaults to what the config leaves out")
    return cfg, notes


def _describe(block: Mapping) -> str:
    if isinstance(next(iter(block.values())), Mapping):
        return "; ".join(f"{kind}: {_describe(b)}" for kind, b in block.items())
    parts = [f"base {block['rope_theta']:,.10g}"] if block.get("rope_theta") is not None else []
    if block.get("rope_type", "default") != "default":
        parts.append(f"rule {block['rope_type']}")
    if block.get("partial_rotary_factor") not in (None, 1, 1.0):
        parts.append(f"rotary fraction {block['partial_rotary_factor']:g}")
    return ", ".join(parts) or "plain schedule"
