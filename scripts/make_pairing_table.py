"""Regenerate ropegeo/data/tables/pairing_by_model_type.json from transformers' own rotary code.

    make test-torch          # once, to build .venv-torch (torch CPU + transformers)
    PYTHONPATH=. .venv-torch/bin/python scripts/make_pairing_table.py

For every model type transformers registers, the script builds the default configuration, the
model's rotary embedding module and its ``apply_rotary_pos_emb`` (DeepSeek's interleave variant
where the configuration asks for it; GPT-J's and CodeGen's sinusoid table), rotates the basis
vectors e_0 .. e_(D-1) by one position and reads which coordinate e_0 turns into: e_1 means
adjacent (interleaved) pairs, e_(D/2) means the two halves (half-split). Types whose rotary code
cannot be called this way (vision or multi-axis rulers, other signatures) are left out and fall
back to the reader's default, with a note. ``tests/with_torch/test_pairing_table.py`` re-derives
the table and compares.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import warnings
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "tables" / "pairing_by_model_type.json"


def _text_config(model_type: str):
    from transformers import AutoConfig

    cfg = AutoConfig.for_model(model_type)
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return text if text is not None else cfg


def _rotary_class(mod):
    """The text model's rotary embedding class of a modeling module (vision ones last)."""
    names = [n for n, c in vars(mod).items() if inspect.isclass(c) and n.endswith("RotaryEmbedding")
             and c.__module__ == mod.__name__]
    names.sort(key=lambda n: (any(w in n for w in ("Vision", "Patch", "Audio", "2D", "Visual")), len(n)))
    return getattr(mod, names[0]) if names else None


def _module(model_type: str):
    """The modeling module of ``model_type`` (gemma3_text lives in gemma3's)."""
    try:
        return importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    except ImportError:
        import transformers
        from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

        name = MODEL_MAPPING_NAMES.get(model_type)
        return importlib.import_module(getattr(transformers, name).__module__) if isinstance(name, str) else None


def _cos_sin(mod, cfg, torch):
    """cos and sin at position 1 for many tokens, and the apply function, or None."""
    if hasattr(mod, "create_sinusoidal_positions"):  # GPT-J, CodeGen: one table, rotate_every_two
        dim = getattr(cfg, "rotary_dim", None) or cfg.n_embd // cfg.n_head
        return ("table", mod.create_sinusoidal_positions(4, dim)[1], mod.apply_rotary_pos_emb)
    cls = _rotary_class(mod)
    if cls is None:
        return None
    if not hasattr(mod, "apply_rotary_pos_emb") and hasattr(mod, "apply_rotary_emb"):  # DeepSeek-V2: complex
        return ("complex", cls(cfg), mod.apply_rotary_emb)
    interleave = bool(getattr(cfg, "rope_interleave", False)) and hasattr(mod, "apply_rotary_pos_emb_interleave")
    apply = mod.apply_rotary_pos_emb_interleave if interleave else getattr(mod, "apply_rotary_pos_emb", None)
    if apply is None:
        return None
    rot = cls(cfg)
    params = inspect.signature(rot.forward).parameters
    kw = {}
    if "layer_type" in params:
        kinds = getattr(cfg, "layer_types", None) or ["full_attention"]
        kw["layer_type"] = "full_attention" if "full_attention" in kinds else kinds[0]
    tables = [rot(torch.zeros(1, 1, 4), torch.full((1, 1), p, dtype=torch.long), **kw) for p in (0, 1)]
    return ("module", tables, apply)


def _images(kind, table, apply, torch):
    """Rows: the image of each basis vector e_k rotated by one position (None when it cannot run)."""
    if kind == "table":  # GPT-J's sinusoid table; (batch, seq, heads, dim) layout
        d = table.shape[-1]
        sin, cos = torch.split(table[None, None].float().expand(1, d, d), d // 2, dim=-1)
        return apply(torch.eye(d)[None, :, None, :], sin, cos)[0, :, 0]
    if kind == "complex":  # DeepSeek-V2: freqs_cis, adjacent coordinates read as one complex number
        f = table(torch.zeros(1, 1, 4), torch.ones(1, 1, dtype=torch.long))
        d = 2 * f.shape[-1]
        q = torch.eye(d)[None, None]
        return apply(q, q, f.expand(1, d, f.shape[-1]))[0][0, 0]
    maps = []
    for cos, sin in table:  # positions 0 and 1; position 0 reveals a fixed output order (DeepSeek-V3)
        for d in (cos.shape[-1], 2 * cos.shape[-1]):  # gpt-oss keeps one angle per pair
            try:
                q = torch.eye(d)[None, None]  # (batch, heads, seq = d basis vectors, dim)
                maps.append(apply(q, q, cos.expand(1, d, cos.shape[-1]), sin.expand(1, d, sin.shape[-1]))[0][0, 0])
                break
            except Exception:  # noqa: BLE001
                continue
    if len(maps) != 2:
        return None
    # position 0: the identity, or the fixed order the output is written in, times an attention factor
    scale = float(maps[0].abs().amax())
    order = (maps[0] / scale).round()
    if not torch.allclose(order * scale, maps[0], rtol=0.0, atol=1e-6 * scale):
        return None
    return maps[1] @ order.T / scale  # a permutation's inverse is its transpose: the input's order again


def read_pairing(model_type: str) -> str | None:
    """``"interleaved"`` or ``"half"`` as transformers rotates ``model_type``; None when unreadable."""
    import torch

    try:
        mod = _module(model_type)
        got = None if mod is None else _cos_sin(mod, _text_config(model_type), torch)
        out = None if got is None else _images(*got, torch)
    except Exception:  # noqa: BLE001 - a type whose code cannot be called this way is left out
        return None
    if out is None:
        return None
    out = out.double()
    moved = (out[0] - torch.eye(out.shape[-1])[0]).abs()
    moved[0] = 0.0
    partner = int(moved.argmax())
    if float(moved[partner]) == 0.0:
        return None
    width = int(((out - torch.eye(out.shape[-1])).abs().sum(-1) > 0).sum())  # coordinates that rotate
    if partner == 1:
        return "interleaved"
    if partner == width // 2:
        return "half"
    return None


def build() -> dict:
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    table = {}
    for model_type in sorted(CONFIG_MAPPING_NAMES):
        p = read_pairing(model_type)
        if p is not None:
            table[model_type] = p
    return {"transformers": transformers.__version__,
            "method": "each model type's default configuration, rotary module and apply_rotary_pos_emb rotate "
                      "the basis vectors by one position; e_0 turning into e_1 is interleaved, into e_(D/2) "
                      "half-split (scripts/make_pairing_table.py)",
            "pairing": table}


def main() -> int:
    data = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    counts = {k: sum(v == k for v in data["pairing"].values()) for k in ("interleaved", "half")}
    print(f"{OUT}: {len(data['pairing'])} model types ({counts}), transformers {data['transformers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
