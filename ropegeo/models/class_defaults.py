"""What transformers fills in when a ``config.json`` leaves a rotary field out.

A model's configuration class supplies defaults for absent fields: Qwen3's head width of 128,
Mixtral's ``rope_theta`` of 1e6, GPT-NeoX's rotary fraction of 0.25, gpt-oss's YaRN block,
Falcon's context of 2,048. The
table ``data/tables/defaults_by_model_type.json`` records them per model type; it is generated
from transformers' config classes by ``scripts/make_defaults_table.py`` (the transformers version
is in the file). :func:`with_class_defaults` fills a configuration's gaps from it, before
:func:`ropegeo.models.manifest.read_config` reads the fields, and says what it filled. Internal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

_TABLE = json.loads(((Path(__file__).resolve().parent.parent / "data") / "tables" / "defaults_by_model_type.json").read_text())
#: model type -> {"head_dim": int, "max_position_embeddings": int, "rope_parameters": block or {layer kind: block}}
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


def with_class_defaults(cfg: Mapping) -> tuple[Mapping, list[str]]:
    """``cfg`` with the absent rotary fields its model type's class defaults, and a note for each."""
    kind = cfg.get("model_type")
    d = DEFAULTS.get(kind) if isinstance(kind, str) else None
    if not d:
        return cfg, []
    out, notes = dict(cfg), []
    who = f"{kind}'s configuration class ({SOURCE})"
    if "head_dim" in d and cfg.get("head_dim") is None and cfg.get("qk_rope_head_dim") is None:
        out["head_dim"] = d["head_dim"]
        notes.append(f"head_dim is not in the config: {who} defaults it to {d['head_dim']}")
    mpe = d.get("max_position_embeddings")
    if mpe is not None and not any(cfg.get(k) is not None for k in _LENGTH_KEYS):
        out["max_position_embeddings"] = mpe  # Falcon-7B's config.json states no context: FalconConfig's 2,048
        notes.append(f"max_position_embeddings is not in the config: {who} defaults it to {mpe:,}")
    block = d.get("rope_parameters")
    if not block:
        return out, notes
    if not any(cfg.get(k) is not None for k in _ROPE_KEYS):
        out["rope_parameters"] = block
        notes.append(f"the config states no rotary field: {who} defaults are used ({_describe(block)})")
        return out, notes
    if isinstance(next(iter(block.values())), Mapping):  # one block per layer kind: fill all or nothing
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


def _describe(block: Mapping) -> str:
    if isinstance(next(iter(block.values())), Mapping):
        return "; ".join(f"{kind}: {_describe(b)}" for kind, b in block.items())
    parts = [f"base {block['rope_theta']:,.10g}"] if block.get("rope_theta") is not None else []
    if block.get("rope_type", "default") != "default":
        parts.append(f"rule {block['rope_type']}")
    if block.get("partial_rotary_factor") not in (None, 1, 1.0):
        parts.append(f"rotary fraction {block['partial_rotary_factor']:g}")
    return ", ".join(parts) or "plain schedule"
