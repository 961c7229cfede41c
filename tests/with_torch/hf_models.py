"""transformers' rotary code of more model families, built from the shipped configurations.

Each wrapper builds the family's own configuration class from the ``config`` block of a shipped
``ropegeo/data/NAME.json`` (the hub ``config.json``), instantiates the family's rotary embedding
module and runs its own ``apply_rotary_pos_emb`` (or ``apply_rotary_pos_emb_interleave`` for
DeepSeek-V3) in the serving dtype, as ``f(x, positions)`` over numpy arrays (see
:mod:`hf_rotary`). A *defect* rebuilds the same parts the way a broken integration would.
Imported only when torch and transformers are installed.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import torch
from transformers import AutoConfig

from torch_io import _batched, _in, _out, _positions

DATA = Path(__file__).resolve().parents[2] / "ropegeo" / "data"

#: shipped name -> (transformers module, rotary class, apply function)
FAMILIES = {
    "mistral-7b": ("mistral", "MistralRotaryEmbedding", "apply_rotary_pos_emb"),
    "qwen2.5-7b-instruct": ("qwen2", "Qwen2RotaryEmbedding", "apply_rotary_pos_emb"),
    "phi-3-mini-128k-instruct": ("phi3", "Phi3RotaryEmbedding", "apply_rotary_pos_emb"),
    "phi-3.5-mini-instruct": ("phi3", "Phi3RotaryEmbedding", "apply_rotary_pos_emb"),
    "gemma-3-1b-it": ("gemma3", "Gemma3RotaryEmbedding", "apply_rotary_pos_emb"),
    "deepseek-v3": ("deepseek_v3", "DeepseekV3RotaryEmbedding", "apply_rotary_pos_emb_interleave"),
    "gpt-oss-20b": ("gpt_oss", "GptOssRotaryEmbedding", "apply_rotary_pos_emb"),
    "llama-3.1-8b": ("llama", "LlamaRotaryEmbedding", "apply_rotary_pos_emb"),
}
#: a config dict's model_type -> the same (dicts of other types are read as Llama's)
BY_MODEL_TYPE = {
    "phimoe": ("phimoe", "PhimoeRotaryEmbedding", "apply_rotary_pos_emb"),
    "qwen2": FAMILIES["qwen2.5-7b-instruct"],
}


def shipped_config(name: str) -> dict:
    """The hub ``config.json`` a shipped model cites (the ``config`` block of ropegeo/data/NAME.json)."""
    return dict(json.loads((DATA / f"{name}.json").read_text())["config"])


def hf_config(name: str, **overrides):
    """The family's transformers configuration, from the shipped hub ``config.json`` (or a dict)."""
    cfg = dict(name) if isinstance(name, dict) else shipped_config(name)
    cfg.pop("_name_or_path", None)
    model_type = cfg.pop("model_type")
    cfg.update(overrides)
    return AutoConfig.for_model(model_type, **cfg)


def rope_width(config) -> int:
    """The width the rotary module works on (DeepSeek: ``qk_rope_head_dim``)."""
    if getattr(config, "qk_rope_head_dim", None):
        return config.qk_rope_head_dim
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def family(name):
    """(transformers module, rotary class, apply function) of a shipped name or a config dict."""
    if isinstance(name, str):
        return FAMILIES[name]
    return BY_MODEL_TYPE.get(name.get("model_type"), FAMILIES["llama-3.1-8b"])


def model_rotary(name: str, dtype: str = "float32", defect: str | None = None, *, served_length: int | None = None,
                 layer_type: str | None = None, rotary_class=None, **overrides):
    """The family's rotary module + apply function of shipped model ``name`` as ``f(x, positions)``.

    ``name`` may also be a ``config.json`` dict (a Llama one, e.g. a dynamic NTK block; or a
    type in ``BY_MODEL_TYPE``, e.g. PhiMoE).

    ``served_length``: the module is called as within a forward pass of that many tokens (its
    dynamic rules, LongRoPE's short/long switch and dynamic NTK, read ``max(position_ids) + 1``;
    the wrapper appends one position ``served_length - 1`` to the ids it passes and drops its
    row again). ``None``: the call's own positions decide, as in a bare module call.
    ``layer_type``: Gemma 3's ``"full_attention"`` or ``"sliding_attention"`` ruler.
    ``rotary_class``: a variant of the family's rotary class (a subclass), called with the
    configuration in its place. ``defect="factor-dropped"``: the module's ``attention_scaling``
    (YaRN's and LongRoPE's factor on cos and sin) set to 1, as a port that leaves it to the attention.
    """
    config = hf_config(name, **overrides)
    module_name, cls, apply_name = family(name)
    mod = importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}")
    rotary = (rotary_class or getattr(mod, cls))(config)
    if defect == "factor-dropped":
        rotary.attention_scaling = 1.0
    apply = getattr(mod, apply_name)
    extra = {} if layer_type is None else {"layer_type": layer_type}

    def f(x, positions):
        (xt, pos), single = _batched(_in(x, dtype), positions)
        pos = _positions(pos, defect)
        with torch.no_grad():
            ids = pos if served_length is None else torch.cat([pos, torch.full_like(pos[..., :1], served_length - 1)], -1)
            cos, sin = rotary(xt, ids, **extra)
            if served_length is not None:
                cos, sin = cos[..., :-1, :], sin[..., :-1, :]
            if defect == "bf16-angles":  # cos/sin of an angle table formed in bfloat16
                suffix = "" if layer_type is None else f"{layer_type}_"  # Gemma 3 keeps one table per layer kind
                inv_freq = getattr(rotary, f"{suffix}inv_freq")
                freqs = ids[..., None].to(torch.bfloat16) * inv_freq.to(torch.bfloat16)
                if served_length is not None:
                    freqs = freqs[..., :-1, :]
                emb = freqs.float() if cos.shape[-1] == freqs.shape[-1] else torch.cat((freqs, freqs), -1).float()
                scaling = getattr(rotary, f"{suffix}attention_scaling", 1.0)
                cos, sin = (emb.cos() * scaling).to(xt.dtype), (emb.sin() * scaling).to(xt.dtype)
            if defect == "mirrored":
                sin = -sin
            q = xt[:, None]
            if defect == "wrong-pairing":
                out = _other_pairing(mod, apply_name, q, cos, sin)
            else:
                out, _ = apply(q, q, cos, sin)
            if defect == "query-scaled":
                out = out * 1.25
            out = out[:, 0]
        return _out(out[0] if single else out, dtype)

    return f


def _other_pairing(mod, apply_name, q, cos, sin):
    """The family's cos/sin applied with the pairing it does not use: DeepSeek's rotate_half path
    (``rope_interleave`` off) on interleaved weights; adjacent pairs elsewhere."""
    if apply_name == "apply_rotary_pos_emb_interleave":
        return mod.apply_rotary_pos_emb(q, q, cos, sin)[0]
    # GPT-OSS's cos/sin hold one angle per pair; the others repeat them (cat(freqs, freqs))
    half = cos.shape[-1] if mod.__name__.endswith("gpt_oss") else cos.shape[-1] // 2
    c, s = cos[..., :half].unsqueeze(1), sin[..., :half].unsqueeze(1)
    r = 2 * half
    x1, x2 = q[..., 0:r:2], q[..., 1:r:2]
    out = q.clone()
    out[..., 0:r:2], out[..., 1:r:2] = x1 * c - x2 * s, x2 * c + x1 * s
    return out
