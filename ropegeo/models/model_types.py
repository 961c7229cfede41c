"""What a model type's code does beyond its rope block, as ``read_config`` needs it: read from
transformers 5.24's code as plain functions of the parsed configuration, raising ``ValueError``
naming the field.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Mapping

from ropegeo.models.class_defaults import DEFAULTS

__all__ = ["NO_ROPE_MODEL_TYPES", "refusal", "chatglm_view", "rotary_dim_reading", "multi_axis_notes", "multi_axis_layout", "axes_section",
           "proportional_view",
           "LayerSpec", "layer_specs", "describe_layers", "NOPE"]

#: model types with no rotary position embedding, and what gives their attention its positions.
NO_ROPE_MODEL_TYPES = {
    **dict.fromkeys(("gpt2", "gpt_bigcode", "gpt_neo"), "learned absolute position embeddings (wpe)"),
    **dict.fromkeys(("opt", "distilbert", "albert", "electra", "bart"), "learned absolute position embeddings"),
    **dict.fromkeys(("bert", "roberta", "xlm-roberta"),
                    "learned absolute position embeddings (position_embedding_type)"),
    **dict.fromkeys(("bloom", "mpt"), "ALiBi (a linear bias on the attention logits)"),
    "t5": "relative position buckets (a learned bias on the attention logits)",
    "whisper": "sinusoidal (encoder) and learned (decoder) absolute position embeddings",
}

#: position_embedding_type values (BERT family) that are not rotary
_NOT_ROTARY_EMBEDDING_TYPES = ("absolute", "relative_key", "relative_key_query", "alibi", "learned")

#: model types whose M-RoPE code splits the pairs into blocks or interleaves them, whatever ``mrope_interleaved``
#: says (no modeling file of transformers 5.24.0 reads that key): interleaved where ``recomposition_frequencies``
#: slices ``mrope_section[dim] * 3`` pairs with stride 3 (``tests/with_torch/test_config_text_config.py`` re-derives
#: both sets from the modeling files)
_MROPE_INTERLEAVED_TYPES = frozenset({"cohere_compass", "cosmos3_edge", "hy_v4_vl", "qwen3_5", "qwen3_5_moe",
                                     "qwen3_omni_moe", "qwen3_vl", "qwen3_vl_moe", "qwen4_exp"})
_MROPE_BLOCK_TYPES = frozenset({"ernie4_5_vl_moe", "glm4v", "glm4v_moe", "glm_image", "glm_ocr", "hunyuan_vl",
                               "neomme", "paddleocr_vl", "qwen2_5_omni", "qwen2_5_vl", "qwen2_vl"})

#: model types whose class alternates linear-attention layers (no RoPE) with full attention every
#: ``full_attention_interval`` layers (transformers 5.24.0's Qwen3NextConfig, Qwen3_5TextConfig, Qwen3_5MoeTextConfig)
_LINEAR_ATTENTION_TYPES = frozenset({"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"})

#: the layers of a kind with no rotary embedding
NOPE = "no rotary embedding (NoPE): no position signal"


def _given(cfg: Mapping, key: str) -> bool:
    return cfg.get(key) is not None


def _blocks(cfg: Mapping) -> list[tuple[str, Mapping]]:
    """The rope blocks of a configuration with their field names (per-layer-type blocks too)."""
    out = []
    for name in ("rope_scaling", "rope_parameters"):
        b = cfg.get(name)
        if isinstance(b, Mapping):
            if b and all(isinstance(x, Mapping) for x in b.values()):  # one block per layer type
                out += [(f"{name}.{k}", x) for k, x in b.items() if isinstance(x, Mapping)]
            else:
                out.append((name, b))
    return out


def refusal(cfg: Mapping) -> str | None:
    """Why ropegeo cannot read this configuration as a rotary operator (``None``: it can).

    Examples
    --------
    >>> refusal({"model_type": "gpt2", "n_embd": 768, "n_head": 12}).split(":")[0]
    "model_type 'gpt2' has no rotary position embedding"
    >>> refusal({"model_type": "llama", "rope_theta": 10000.0}) is None
    True
    """
    kind = cfg.get("model_type")
    if isinstance(kind, str) and kind in NO_ROPE_MODEL_TYPES:
        return (f"model_type {kind!r} has no rotary position embedding: its attention gets positions from "
                f"{NO_ROPE_MODEL_TYPES[kind]}, so there is no RoPE to audit")
    if cfg.get("alibi") is True:
        return (f"alibi is true: this {kind or 'model'} configuration uses ALiBi (a linear bias on the attention "
                "logits) instead of a rotary embedding, so there is no RoPE to audit")
    pet = cfg.get("position_embedding_type")
    if isinstance(pet, str) and pet in _NOT_ROTARY_EMBEDDING_TYPES:
        return (f"position_embedding_type is {pet!r}: the model has no rotary position embedding, so there is "
                "no RoPE to audit")
    in_block = any(_given(b, "rope_theta") for _, b in _blocks(cfg))
    if "rope_theta" in cfg and cfg["rope_theta"] is None and not in_block:  # a block's own base wins
        return ("rope_theta is null: transformers fills a default only when the key is absent; a null base "
                "fails when the rotary embedding is built, so ropegeo refuses it (remove the key, or give the base)")
    for where, block in _blocks(cfg):
        if "rope_theta" in block and block["rope_theta"] is None:
            return (f"{where}.rope_theta is null: transformers fails when the rotary embedding is built; "
                    "give the base or remove the key")
    return None


def _number(cfg: Mapping, key: str, default: float) -> float:
    val = cfg.get(key, default)
    if val is None:
        val = default
    if isinstance(val, bool) or not isinstance(val, numbers.Real) or not math.isfinite(float(val)) or val <= 0:
        raise ValueError(f"{key} must be a positive finite number, got {val!r}")
    return float(val)


def chatglm_view(cfg: Mapping) -> tuple[dict, list[str]]:
    """A ChatGLM2/3 configuration in the standard fields, with notes: the first half of each head
    (``kv_channels``) rotates in adjacent pairs with base ``10,000 * rope_ratio``.

    Examples
    --------
    >>> view, notes = chatglm_view({"model_type": "chatglm", "kv_channels": 128, "hidden_size": 4096,
    ...                             "num_attention_heads": 32, "seq_length": 32768, "rope_ratio": 50})
    >>> view["head_dim"], view["rotary_dim"], view["rope_theta"], view["max_position_embeddings"]
    (128, 64, 500000.0, 32768)
    """
    if any(_given(cfg, k) for k in ("rope_scaling", "rope_parameters")):
        bad = next(k for k in ("rope_scaling", "rope_parameters") if _given(cfg, k))
        raise ValueError(f"{bad}: ChatGLM's modeling code does not read it (its base is 10,000 x rope_ratio); "
                         "ropegeo does not guess what a ChatGLM config with it means")
    view = {k: val for k, val in cfg.items() if k not in ("kv_channels", "seq_length", "rope_ratio", "rope_theta",
                                                         "partial_rotary_factor", "rotary_pct", "rotary_dim")}
    head = cfg.get("kv_channels")
    if head is None:
        if not (_given(cfg, "hidden_size") and _given(cfg, "num_attention_heads")):
            raise ValueError("a ChatGLM config needs kv_channels, or hidden_size and num_attention_heads")
        head = int(cfg["hidden_size"]) // int(cfg["num_attention_heads"])
    if isinstance(head, bool) or not isinstance(head, numbers.Integral) or head < 4 or head % 4:
        raise ValueError(f"kv_channels must be a positive multiple of 4 (half of the head rotates in pairs), got {head!r}")
    ratio = _number(cfg, "rope_ratio", 1.0)
    view.update(head_dim=int(head), rotary_dim=int(head) // 2, rope_theta=10_000.0 * ratio)
    if _given(cfg, "seq_length") and not _given(cfg, "max_position_embeddings"):
        view["max_position_embeddings"] = cfg["seq_length"]
    notes = [f"ChatGLM (remote code, modeling_chatglm.py): the first {head // 2} of {head} coordinates of each head "
             f"rotate, in adjacent pairs, with base 10,000 x rope_ratio ({ratio:g}) = {10_000.0 * ratio:,.10g}"
             + ("; context from seq_length" if "max_position_embeddings" in view and not
                _given(cfg, "max_position_embeddings") else ""),
             "ChatGLM caches cos and sin in the model's half precision (float16 or bfloat16), not float32"]
    if _given(cfg, "rope_theta"):
        notes.append(f"rope_theta {cfg['rope_theta']!r} is ignored: ChatGLM's code rotates with base "
                     f"10,000 x rope_ratio = {10_000.0 * ratio:,.10g}")
    return view, notes


#: model types whose transformers 5.24.0 code reads rotary_dim (the other types it knows never do): GPT-J and CodeGen
#: build their sin/cos table over rotary_dim coordinates whatever partial_rotary_factor says; MiniMax-M2's class turns
#: rotary_dim into partial_rotary_factor unless that is given. ChatGLM's and Gemma 4's views (chatglm_view,
#: proportional_view) state the count they derive as rotary_dim. (tests/with_torch/test_config_corpus.py compares.)
_ROTARY_DIM_READERS = {"gptj": "count", "codegen": "count", "minimax_m2": "factor", "chatglm": "count",
                       "gemma4_text": "count"}


def rotary_dim_reading(kind, rot: int, from_factor: int | None, factor: str, known: bool) -> tuple[int | None, list]:
    """The rotary width a config stating ``rotary_dim = rot`` runs with (``None``: the factor's, or the head's), and
    notes; ``from_factor`` is the width ``factor`` gives. ``known``: transformers knows the model type. Raises
    ``ValueError`` when both are set, disagree, and the type is unknown.

    Examples
    --------
    >>> rotary_dim_reading("gptj", 64, 128, "partial_rotary_factor", True)[0]
    64
    >>> rotary_dim_reading("llama", 64, None, "partial_rotary_factor", True)[0] is None
    True
    """
    reads = _ROTARY_DIM_READERS.get(kind, "ignored" if known else "count")
    if reads == "ignored":
        return from_factor, [f"rotary_dim is in the config, but {kind}'s code in transformers never reads it: ignored"]
    if from_factor is None or from_factor == rot:
        return rot, []
    if reads == "factor":
        return from_factor, [f"rotary_dim ({rot}) and {factor} both set: {kind}'s configuration class keeps {factor}"]
    if kind in _ROTARY_DIM_READERS:
        return rot, [f"{factor} is in the config, but {kind}'s code in transformers rotates rotary_dim ({rot}) "
                     f"coordinates: {factor} ignored"]
    raise ValueError(f"rotary_dim ({rot}) contradicts {factor}, which gives {from_factor} rotary coordinates")


def _sections(block: Mapping, where: str, pairs: int) -> list[int]:
    where = f"{where}." if where else ""
    sec = block["mrope_section"]
    if sec is None:
        raise ValueError(f"{where}mrope_section is null: transformers' M-RoPE code needs the three sections "
                         "(time, height, width); give them or remove the key")
    if (isinstance(sec, (str, bytes, Mapping)) or not isinstance(sec, (list, tuple)) or len(sec) != 3
            or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s > 0 for s in sec)):
        raise ValueError(f"{where}mrope_section must list three positive integers (time, height, width), got {sec!r}")
    if sum(sec) != pairs:
        raise ValueError(f"{where}mrope_section {list(sec)} sums to {sum(sec)}, not to the {pairs} rotary pairs; "
                         "ropegeo reads sections that share out the whole bank")
    return [int(s) for s in sec]


def multi_axis_layout(cfg: Mapping, pairs: int) -> tuple[tuple[int, int, int], bool] | None:
    """The M-RoPE declaration ``(sections, round_robin)`` of a configuration, or ``None``.

    ``round_robin`` is True where the model type's code interleaves (Qwen3-VL), False for blocks.

    Examples
    --------
    >>> cfg = {"model_type": "qwen2_vl", "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
    >>> multi_axis_layout(cfg, 64)
    ((16, 24, 24), False)
    """
    kind = cfg.get("model_type")
    found = None
    for where, block in _blocks(cfg):
        interleaved_key = block.get("mrope_interleaved", cfg.get("mrope_interleaved"))
        if "mrope_section" not in block:
            if interleaved_key is not None:
                raise ValueError(f"{where}.mrope_interleaved is set without mrope_section")
            continue
        sec = _sections(block, where, pairs)
        if interleaved_key is not None and not isinstance(interleaved_key, bool):
            raise ValueError(f"mrope_interleaved must be true or false, got {interleaved_key!r}")
        # the model type's code decides (Qwen3-VL interleaves, Qwen2.5-VL splits); the key only for other types
        family = _mrope_family(kind)
        interleaved = family in _MROPE_INTERLEAVED_TYPES if family else bool(interleaved_key)
        found = found or (tuple(sec), interleaved)
    if found is None and cfg.get("mrope_interleaved") is not None:
        raise ValueError("mrope_interleaved is set without mrope_section")
    return found


def _mrope_family(kind) -> str | None:
    """The transformers model type whose M-RoPE code a text model type runs (``qwen3_vl_text`` -> ``qwen3_vl``)."""
    if not isinstance(kind, str):
        return None
    for suffix in ("", "_text", "_thinker"):
        base = kind[: -len(suffix)] if suffix and kind.endswith(suffix) else kind
        if base in _MROPE_INTERLEAVED_TYPES or base in _MROPE_BLOCK_TYPES:
            return base
    return None


def axes_section(section, interleaved, pairs: int) -> tuple[int, int, int] | None:
    """Gate A's ``mrope_section`` keyword checked against ``pairs`` (``None`` stays ``None``)."""
    if not isinstance(interleaved, bool):
        raise ValueError(f"mrope_interleaved must be true or false, got {interleaved!r}")
    if section is None:
        if interleaved:
            raise ValueError("mrope_interleaved is set without mrope_section")
        return None
    return tuple(_sections({"mrope_section": section}, "", pairs))


def multi_axis_notes(cfg: Mapping, pairs: int) -> list[str]:
    """Notes for an M-RoPE configuration: for text tokens the three ids are equal (1D RoPE)."""
    layout = multi_axis_layout(cfg, pairs)
    if layout is None:
        return []
    sec, interleaved = list(layout[0]), layout[1]
    said = next((b.get("mrope_interleaved", cfg.get("mrope_interleaved")) for _, b in _blocks(cfg)
                 if "mrope_section" in b), None)
    ignored = ([f"mrope_interleaved is {str(said).lower()}, but {cfg.get('model_type')}'s code in transformers does "
                "not read it: the layout is the code's"] if said is not None and said != interleaved else [])
    if interleaved:
        text = (f"interleaved M-RoPE (sections {sec}): height takes pairs 1, 4, .. {3 * sec[1] - 2}, width "
                f"pairs 2, 5, .. {3 * sec[2] - 1}, time the others")
    else:
        a, b = sec[0], sec[0] + sec[1]
        text = (f"M-RoPE (mrope_section {sec}): pairs 0-{a - 1} follow the time id, {a}-{b - 1} the height "
                f"id, {b}-{pairs - 1} the width id")
    return ignored + [f"{text}; for text tokens the three ids are equal, so it is 1D RoPE over all {pairs} pairs: "
                      "only text positions are audited (image and video positions are not)"]


def proportional_view(view: Mapping, block_key: str, head_dim: int) -> tuple[dict, list[str]]:
    """A ``proportional`` rope block (Gemma 4) as the ``2k``-wide partial rotary with base ``B ** (2k / head_dim)``.

    The first ``k = int(partial_rotary_factor * head_dim // 2)`` pairs rotate with exponents over
    the whole head, the others never: the same ``k`` frequencies, up to a permutation of coordinates.
    transformers pairs coordinate ``i`` with ``i + head_dim / 2``: the view's ``_pairing_width`` says so.

    Examples
    --------
    >>> v, _ = proportional_view({"rope_parameters": {"rope_type": "proportional", "rope_theta": 1e6,
    ...                          "partial_rotary_factor": 0.25}}, "rope_parameters", 512)
    >>> v["rotary_dim"], round(v["rope_parameters"]["rope_theta"], 4)
    (128, 31.6228)
    """
    block = dict(view[block_key])
    where = f"{block_key}."
    theta = block.get("rope_theta", view.get("rope_theta"))
    if isinstance(theta, bool) or not isinstance(theta, numbers.Real) or not math.isfinite(float(theta)) or theta <= 1:
        raise ValueError(f"{where}rope_theta must be a finite number greater than 1 for proportional RoPE, got {theta!r}")
    prf = block.get("partial_rotary_factor", 1.0)
    prf = 1.0 if prf is None else prf
    if isinstance(prf, bool) or not isinstance(prf, numbers.Real) or not 0 < prf <= 1:
        raise ValueError(f"{where}partial_rotary_factor must be in (0, 1], got {prf!r}")
    k = int(prf * head_dim // 2)
    if k < 1:
        raise ValueError(f"{where}partial_rotary_factor {prf:g} rotates no pair of a {head_dim}-wide head")
    factor = block.get("factor", 1.0)
    factor = 1.0 if factor is None else factor
    base = float(theta) ** (2 * k / head_dim)
    new = {"rope_type": "default" if factor == 1 else "linear", "rope_theta": base}
    if factor != 1:
        new["factor"] = factor
    out = {key: val for key, val in view.items() if key not in ("partial_rotary_factor", "rotary_pct")}
    out.update({block_key: new, "rotary_dim": 2 * k, "head_dim": head_dim, "_pairing_width": head_dim})
    out.pop("rope_theta", None)
    notes = [f"proportional RoPE (p-RoPE): the fastest {k} of {head_dim // 2} pairs rotate with theta_i = "
             f"{float(theta):,.10g}^(-2i/{head_dim}) (exponents over the whole head), the other {head_dim // 2 - k} "
             f"have frequency 0 and never rotate; read as {2 * k} rotary coordinates with base "
             f"{float(theta):,.10g}^({2 * k}/{head_dim}) = {base:.6g}, the same {k} frequencies",
             f"proportional layout: transformers pairs coordinate i with i + {head_dim // 2} across the whole head; "
             f"pairs {k} to {head_dim // 2 - 1} pass through (pairing_width {head_dim}, as Gate A checks it)"]
    return out, notes


@dataclass(frozen=True)
class LayerSpec:
    """One kind of layer as the model's code runs it (``rope`` False: NoPE; ``chunk``: Llama 4's)."""

    kind: str
    layers: tuple
    rope: bool = True
    window: int | None = None
    chunk: int | None = None


def _num_layers(cfg: Mapping) -> int | None:
    """The layer count: the config's, else its model type's class default (a layer pattern runs over it)."""
    kind = cfg.get("model_type")
    n = cfg.get("num_hidden_layers", cfg.get("n_layer", cfg.get("num_layers")))
    if n is None and not any(k in cfg for k in ("num_hidden_layers", "n_layer", "num_layers")) and isinstance(kind, str):
        n = DEFAULTS.get(kind, {}).get("num_hidden_layers")
    return int(n) if isinstance(n, numbers.Integral) and not isinstance(n, bool) and 0 < n <= 100_000 else None


def _group(types: list) -> dict[str, tuple]:
    out: dict[str, list] = {}
    for i, t in enumerate(types):
        out.setdefault(t, []).append(i)
    return {k: tuple(val) for k, val in out.items()}


def _llama4(cfg: Mapping, n: int | None) -> list[LayerSpec]:
    rope = cfg.get("no_rope_layers")
    if rope:  # transformers: an empty list falls back to the interval
        if (isinstance(rope, (str, bytes, Mapping)) or not isinstance(rope, (list, tuple))
                or not all(r in (0, 1) and not isinstance(r, float) for r in rope)):
            raise ValueError("no_rope_layers must list 0 (NoPE) or 1 (RoPE) for each layer")
        flags = [bool(r) for r in rope]
    else:
        every = cfg.get("no_rope_layer_interval", 4)
        if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
            raise ValueError(f"no_rope_layer_interval must be a positive integer, got {every!r}")
        flags = [(i + 1) % every != 0 for i in range(n if n is not None else every)]
    chunk = cfg.get("attention_chunk_size", 8192) if "attention_chunk_size" in cfg else 8192
    if cfg.get("model_type") == "smollm3":  # SmolLM3Config: no chunk; its NoPE layers take the window, if any
        chunk = None
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, numbers.Integral) or chunk < 1):
        raise ValueError(f"attention_chunk_size must be a positive integer or null, got {chunk!r}")
    types = cfg.get("layer_types")
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window") is True else None
    if (types is None or n is None) and cfg.get("model_type") == "smollm3":
        types = ["sliding_attention" if window is not None and not f else "full_attention" for f in flags]
    elif types is None or n is None:  # Llama4TextConfig: chunked where the layer rotates and a chunk is set
        types = ["chunked_attention" if f and chunk is not None else "full_attention" for f in flags]
    elif isinstance(types, (str, bytes, Mapping)) or not isinstance(types, (list, tuple)) or len(types) != len(flags) \
            or not all(isinstance(t, str) and t.isprintable() for t in types):
        raise ValueError(f"layer_types must name the kind of each of the {len(flags)} layers")
    # the mask follows layer_types (chunked only where it says so), the rotation no_rope_layers
    clash = {t for t, f in zip(types, flags) if f} & {t for t, f in zip(types, flags) if not f}
    names = [t if f or t not in clash else f"nope_{t}" for t, f in zip(types, flags)]
    rotates = {name: f for name, f in zip(names, flags)}
    known = bool(rope) or n is not None  # without the layer count: the kinds, not their layers
    return [LayerSpec(k, idx if known else (), rope=rotates[k], chunk=chunk if k == "chunked_attention" else None,
                      window=window if k == "sliding_attention" else None) for k, idx in _group(names).items()]


def _window_rule(cfg: Mapping, kind: str | None, n: int | None) -> list | None:
    """The layer types of Qwen2-style ``max_window_layers`` (None: the config does not use it)."""
    if not _given(cfg, "max_window_layers") or _given(cfg, "layer_types"):
        return None
    if cfg.get("use_sliding_window") is not True or not _given(cfg, "sliding_window"):
        return None
    mwl = cfg["max_window_layers"]
    if isinstance(mwl, bool) or not isinstance(mwl, numbers.Integral) or mwl < 0:
        raise ValueError(f"max_window_layers must be a non-negative integer, got {mwl!r}")
    if n is None:
        raise ValueError("num_hidden_layers is required to read max_window_layers")
    if kind in ("qwen2_moe",):  # sliding on every other layer below max_window_layers
        return ["sliding_attention" if (i + 1) % 2 and i < mwl else "full_attention" for i in range(n)]
    if kind in ("qwen2", "qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text", "qwen3", "dots1",
                "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker"):
        return ["sliding_attention" if i >= mwl else "full_attention" for i in range(n)]
    raise ValueError(f"max_window_layers with use_sliding_window true: ropegeo does not know which layers "
                     f"model_type {kind!r} windows; give layer_types")


def layer_specs(cfg: Mapping) -> list[LayerSpec] | None:
    """The kinds of layer of a configuration as its model runs them (``None``: one kind, all RoPE).

    Examples
    --------
    >>> [(s.kind, len(s.layers), s.rope, s.chunk) for s in layer_specs(
    ...     {"model_type": "llama4_text", "num_hidden_layers": 48, "attention_chunk_size": 8192})]
    [('chunked_attention', 36, True, 8192), ('full_attention', 12, False, None)]
    """
    kind = cfg.get("model_type")
    n = _num_layers(cfg)
    if kind in ("llama4_text", "llama4", "smollm3"):  # no_rope_layers: 0 marks a layer without RoPE
        return _llama4(cfg, n)
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window") is not False else None
    if kind == "cohere2" and "sliding_window" in cfg and window is None and n is not None:
        # Cohere2Attention rotates only where sliding_window is set: with it null no layer rotates
        pattern = cfg.get("sliding_window_pattern", 4)
        types = cfg.get("layer_types") or ["sliding_attention" if (i + 1) % pattern else "full_attention"
                                           for i in range(n)] if isinstance(pattern, int) and pattern > 0 else None
        return [LayerSpec(k, idx, rope=False) for k, idx in _group(list(types or ["full_attention"] * n)).items()]
    types = cfg.get("layer_types")
    if kind == "gemma4_text" and isinstance(types, list) and types and types[-1] == "sliding_attention":
        types = [*types[:-1], "full_attention"]  # Gemma4TextConfig forces the last layer to full attention
    if types is None and kind in _LINEAR_ATTENTION_TYPES and n is not None:  # a full layer every 4th, by default
        every = cfg.get("full_attention_interval", 4)
        if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
            raise ValueError(f"full_attention_interval must be a positive integer, got {every!r}")
        types = ["linear_attention" if (i + 1) % every else "full_attention" for i in range(n)]
    if types is None:
        types = _window_rule(cfg, kind, n)
    if types is None and n is not None and _given(cfg, "sliding_window"):
        pattern = {"gemma2": 2, "gpt_oss": 2, "olmo3": 4}.get(kind, cfg.get("sliding_window_pattern"))
        if pattern is None and kind in ("gemma3_text", "gemma3", "gemma4_text", "cohere2"):
            pattern = {"cohere2": 4}.get(kind, 6)
        if isinstance(pattern, numbers.Integral) and not isinstance(pattern, bool) and pattern >= 1:
            types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
            if kind == "gemma4_text" and types:
                types[-1] = "full_attention"  # transformers forces Gemma 4's last layer to full attention
    if types is None and _given(cfg, "sliding_window") and (
            kind in ("gemma2", "gemma3_text", "gemma3", "gemma4_text", "cohere2", "gpt_oss")
            or _given(cfg, "sliding_window_pattern") or _given(cfg, "rope_local_base_freq")):
        types = ["sliding_attention", "full_attention"]  # the layer count is not in the config: kinds only
        nope = {"full_attention"} if kind == "cohere2" else set()
        return [LayerSpec(k, (), rope=k not in nope, window=window if k == "sliding_attention" else None)
                for k in types]
    if types is None:
        return None
    if isinstance(types, (str, bytes, Mapping)) or not isinstance(types, (list, tuple)) \
            or not all(isinstance(t, str) and t.isprintable() for t in types):
        raise ValueError("layer_types must be a list of layer-kind names (printable strings)")
    if not types:
        raise ValueError("layer_types is empty: it must name the kind of each layer (or be left out)")
    if n is not None and len(types) != n:  # transformers' layer_type_validation refuses it
        raise ValueError(f"layer_types lists {len(types)} layers, but num_hidden_layers is {n}: it must name the "
                         "kind of each layer")
    nope = {"full_attention"} if kind == "cohere2" else set()  # Cohere2: RoPE only where the window is
    nope.add("linear_attention")  # Qwen3-Next, Qwen3.5: linear attention (Gated DeltaNet) has no RoPE
    return [LayerSpec(k, idx, rope=k not in nope, window=window if k == "sliding_attention" else None)
            for k, idx in _group(list(types)).items()]


def describe_layers(layers: tuple, total: int | None = None) -> str:
    """``"layers 3, 7, .. 47 (12 of 48)"``: a short list of layer indices."""
    if not layers:
        return "layers (count not in the config)"
    shown = ", ".join(map(str, layers[:3])) + (f", .. {layers[-1]}" if len(layers) > 3 else "")
    of = f" of {total}" if total else ""
    return f"layer{'s' if len(layers) > 1 else ''} {shown} ({len(layers)}{of})"
