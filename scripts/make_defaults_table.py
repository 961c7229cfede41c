"""Regenerate ropegeo/data/tables/defaults_by_model_type.json from transformers' config classes.

    make test-torch          # once, to build .venv-torch (torch CPU + transformers)
    PYTHONPATH=. .venv-torch/bin/python scripts/make_defaults_table.py

A ``config.json`` may leave out a rotary field; transformers then takes the value its config
class defaults to for that model type (Qwen3's head width of 128, Mixtral's ``rope_theta`` of
1e6, GPT-NeoX's rotary fraction of 0.25, gpt-oss's YaRN block). For every model type of the
pairing table (the types with rotary code), this script records those class defaults that
``ropegeo.models.manifest.read_config`` cannot derive on its own:

- ``head_dim`` when the class fixes it (it stays the same when ``hidden_size`` doubles);
- the default rope block: ``rope_theta``, ``rope_type`` and the rule's parameters, and
  ``partial_rotary_factor`` (one block, or one per layer kind);
- ``rotary_dim`` of GPT-J and CodeGen, whose sin/cos table covers the class's 64 coordinates when a config
  leaves the count out;
- ``num_hidden_layers``, the layer count a config that leaves it out runs with (the layers of each kind
  of a layer pattern follow from it);
- ``max_position_embeddings``, the context the class declares when a config leaves it out
  (Falcon-7B's config.json states none: FalconConfig's 2,048 is what the model runs with);
- ``ignored``: fields a config may state that the model type's code never reads
  (``partial_rotary_factor`` and ``sliding_window`` on a plain Llama);
- ``sliding_window``, the window the class declares when a config leaves the key out (Cohere2's
  4,096, Gemma 4's 512; a null in the config stays null), and ``use_sliding_window`` (Qwen2: false).

Model types whose rotary code takes a layer type (Gemma 4) are included beside the pairing
table's types (``EXTRA_TYPES``).

``tests/with_torch/test_defaults_table.py`` re-derives the table and compares.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

TABLES = Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "tables"
OUT = TABLES / "defaults_by_model_type.json"


#: model types whose code rotates the class's rotary_dim coordinates (ropegeo.models.model_types reads it there)
ROTARY_DIM_TYPES = ("gptj", "codegen")

#: model types read beside the pairing table's (their rotary module takes a layer type)
EXTRA_TYPES = ("gemma4_text",)


def _text(cfg):
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return text if text is not None else cfg


def _fixed_head_dim(model_type: str, cfg) -> int | None:
    """The class's own head width, when it does not follow hidden_size / num_attention_heads."""
    from transformers import AutoConfig

    hd = getattr(cfg, "head_dim", None)
    heads = getattr(cfg, "num_attention_heads", None)
    hidden = getattr(cfg, "hidden_size", None)
    if not isinstance(hd, int) or not isinstance(heads, int) or not isinstance(hidden, int):
        return None
    wider = _text(AutoConfig.for_model(model_type, hidden_size=2 * hidden, num_attention_heads=heads))
    if getattr(wider, "head_dim", None) == hd and hd != (2 * hidden) // heads:
        return hd
    return None


def _plain(block):
    """A rope block as JSON: numbers, booleans, strings and lists of factors (no tensors or objects)."""
    return {k: v for k, v in block.items() if isinstance(v, (int, float, str, list))}  # bools are ints


def read_defaults(model_type: str) -> dict | None:
    """The class defaults of ``model_type`` that matter when a config.json leaves them out."""
    from transformers import AutoConfig

    try:
        cfg = _text(AutoConfig.for_model(model_type))
        out = {}
        try:
            hd = _fixed_head_dim(model_type, cfg)
        except Exception:  # noqa: BLE001 - Gemma 4: head_dim differs per layer kind (global_head_dim)
            hd = None
        if hd is not None:
            out["head_dim"] = hd
        nhl = getattr(cfg, "num_hidden_layers", None)
        if isinstance(nhl, int) and not isinstance(nhl, bool) and nhl > 0:
            out["num_hidden_layers"] = nhl  # the layer count a layer pattern (Gemma's 5:1, Llama 4's NoPE) runs over
        rd = getattr(cfg, "rotary_dim", None)
        if isinstance(rd, int) and not isinstance(rd, bool) and rd > 0 and model_type in ROTARY_DIM_TYPES:
            out["rotary_dim"] = rd  # GPT-J, CodeGen: their table rotates rotary_dim coordinates (class default 64)
        mpe = getattr(cfg, "max_position_embeddings", None)
        if isinstance(mpe, int) and not isinstance(mpe, bool) and mpe > 0:
            out["max_position_embeddings"] = mpe
        sw = getattr(cfg, "sliding_window", None)
        if isinstance(sw, int) and not isinstance(sw, bool) and sw > 0:
            out["sliding_window"] = sw  # Cohere2, Gemma 2/3/4, Mistral: the window of a config that leaves it out
        usw = getattr(cfg, "use_sliding_window", None)
        if isinstance(usw, bool):
            out["use_sliding_window"] = usw  # Qwen2: False, the window declared but off
        rp = getattr(cfg, "rope_parameters", None)
    except Exception:  # noqa: BLE001 - a class that cannot be built with its defaults is left out
        return None
    if isinstance(rp, dict) and rp:
        if all(isinstance(v, dict) for v in rp.values()):
            out["rope_parameters"] = {kind: _plain(b) for kind, b in rp.items()}
        else:
            out["rope_parameters"] = _plain(rp)
    return out or None


def _pairs(model_type: str, **kw) -> int | None:
    """The number of turning frequencies the model type's rotary module builds (its full-attention kind), or None."""
    import torch
    from make_pairing_table import _module, _rotary_class
    from transformers import AutoConfig

    try:
        cfg = _text(AutoConfig.for_model(model_type, **kw))
        mod = _module(model_type)
        cls = _rotary_class(mod) if mod is not None else None
        if cls is None:
            return None
        rotary = cls(cfg)
        inv = getattr(rotary, "inv_freq", None)
        if inv is None:
            inv = getattr(rotary, "full_attention_inv_freq", None)
        return int((inv != 0).sum()) if isinstance(inv, torch.Tensor) else None  # Gemma 4: zeros do not turn
    except Exception:  # noqa: BLE001 - a module that cannot be built with its defaults says nothing
        return None


def _default_block(model_type: str) -> dict | None:
    """The class's single default rope block (None for one block per layer kind, or none)."""
    from transformers import AutoConfig

    try:
        rp = getattr(_text(AutoConfig.for_model(model_type)), "rope_parameters", None)
    except Exception:  # noqa: BLE001
        return None
    if not isinstance(rp, dict) or not rp or any(isinstance(v, dict) for v in rp.values()):
        return None
    return _plain(rp)


def ignored_fields(model_type: str) -> list[str]:
    """Fields a config may state that the model type's code never reads: ``partial_rotary_factor`` when the
    rotary module builds as many turning frequencies with a factor of 0.5 as with 1; ``sliding_window`` when the
    modeling file never names it (plain Llama)."""
    from make_pairing_table import _module

    out = []
    full, half = _pairs(model_type, partial_rotary_factor=1.0), _pairs(model_type, partial_rotary_factor=0.5)
    if full is not None and half == full and full > 1:
        out.append("partial_rotary_factor")  # the top-level key (GPT-NeoX reads it only inside the rope block)
    block = _default_block(model_type)
    if block is not None:
        full = _pairs(model_type, rope_parameters={**block, "partial_rotary_factor": 1.0})
        half = _pairs(model_type, rope_parameters={**block, "partial_rotary_factor": 0.5})
        if full is not None and half == full and full > 1:
            out.append("rope_parameters.partial_rotary_factor")
    mod = _module(model_type)
    if mod is not None and "sliding_window" not in Path(mod.__file__).read_text():
        out.append("sliding_window")
    return out


def build() -> dict:
    import transformers

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    types = json.loads((TABLES / "pairing_by_model_type.json").read_text())["pairing"]
    table = {}
    for model_type in sorted(set(types) | set(EXTRA_TYPES)):
        d = read_defaults(model_type) or {}
        ignored = ignored_fields(model_type)
        if ignored:
            d["ignored"] = ignored
        if d:
            table[model_type] = d
    return {"transformers": transformers.__version__,
            "method": "AutoConfig.for_model(model_type) with its defaults: head_dim when fixed by the class (unchanged "
                      "when hidden_size doubles), rotary_dim (GPT-J, CodeGen), num_hidden_layers, max_position_embeddings, sliding_window, use_sliding_window, the default rope_parameters block(s), "
                      "and the fields the model type's code never reads (ignored: partial_rotary_factor when the "
                      "rotary module builds as many frequencies with a factor of 0.5, sliding_window when the "
                      "modeling file never names it) "
                      "(scripts/make_defaults_table.py)",
            "defaults": table}


def main() -> int:
    data = build()
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{OUT}: {len(data['defaults'])} model types, transformers {data['transformers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
