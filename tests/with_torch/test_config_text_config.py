"""Multimodal wrappers (``text_config``) and class-default windows against transformers: a differential test.

transformers builds the wrapper's text configuration class from the nested block, with that class's
defaults (``AutoConfig.for_model(wrapper, **cfg).get_text_config()``). ``read_layer_kinds`` must agree with
it kind by kind: the layers of each kind, which rotate, the window, the head width, and every frequency of
the model's own rotary module for that kind. Where transformers refuses, ropegeo refuses by name.

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""

from __future__ import annotations

import copy

import pytest
from _requires import require

require("torch", "transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from test_config_vs_transformers import RTOL, _module, _rotary_class, hf_config  # noqa: E402

from ropegeo.models.manifest import ConfigError, model_record, read_config, read_layer_kinds  # noqa: E402

_SCOUT = {k: v for k, v in model_record("llama-4-scout-17b-16e-instruct")["config"].items()
          if k not in ("model_type", "_name_or_path")}

CASES = {
    # google/gemma-3-4b-it's config.json (RoPE-relevant fields as shipped: the rest are class defaults)
    "gemma-3-4b": {"model_type": "gemma3", "text_config": {
        "hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}},
    # google/gemma-3-27b-it's text_config (a transformers 4.5x dump: legacy rope fields)
    "gemma-3-27b": {"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376, "num_attention_heads": 32,
        "num_hidden_layers": 62, "rope_local_base_freq": 10000, "rope_theta": 1000000,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024, "sliding_window_pattern": 6}},
    # variants: the text block empty (every field a class default), no window given
    "gemma-3-empty-text": {"model_type": "gemma3", "text_config": {}},
    "gemma-3-no-window": {"model_type": "gemma3", "text_config": {"num_hidden_layers": 12}},
    # Qwen/Qwen3-VL-8B-Instruct's text_config
    "qwen3-vl-8b": {"model_type": "qwen3_vl", "text_config": {
        "model_type": "qwen3_vl_text", "head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "num_hidden_layers": 36, "max_position_embeddings": 262144, "rope_theta": 5000000,
        "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"}}},
    # meta-llama/Llama-4-Scout-17B-16E-Instruct: the shipped record's text fields, as a wrapper
    "llama-4-scout": {"model_type": "llama4", "text_config": _SCOUT},
    # Cohere2 with sliding_window left out: the class's 4,096 on its sliding layers
    "cohere2-no-window": {"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32,
                          "num_hidden_layers": 8, "rope_theta": 50000.0},
}


def _text(cfg):
    return hf_config(cfg).get_text_config()


def _inv_freq(text, kind):
    mod = _module(text.model_type)
    rotary = _rotary_class(mod, text.model_type)(text)
    x, pos = torch.zeros(1, 1, 8), torch.tensor([[0, 1]])
    with torch.no_grad():
        if isinstance(getattr(rotary, "rope_type", None), dict):
            rotary(x, pos, kind)
            return getattr(rotary, f"{kind}_inv_freq").double().numpy()
        if text.model_type.startswith("qwen3_vl"):
            rotary(x, pos[None].expand(3, 1, 2))
        else:
            rotary(x, pos)
    return rotary.inv_freq.double().numpy()


def _nope(text, i):
    if text.model_type == "llama4_text":
        return not text.no_rope_layers[i]
    if text.model_type == "cohere2":  # Cohere2Attention rotates only where the layer has a window
        return text.layer_types[i] != "sliding_attention" or text.sliding_window is None
    return False


@pytest.mark.parametrize("case", sorted(CASES))
def test_layer_kinds_windows_and_frequencies_match_transformers(case):
    cfg = CASES[case]
    text = _text(cfg)
    kinds = read_layer_kinds(copy.deepcopy(cfg))
    types = list(getattr(text, "layer_types", None) or [None] * text.num_hidden_layers)
    for k in kinds:
        layers = k.layers if k.kind is not None else tuple(range(len(types)))
        if not layers:  # the layer count is a class default ropegeo does not record: the kinds, not their layers
            assert k.kind in set(types) and k.total_layers is None, k
            layers = tuple(i for i, t in enumerate(types) if t == k.kind)
        assert all(types[i] == k.kind for i in layers) if k.kind is not None else True
        assert all(_nope(text, i) == (not k.position_signal) for i in layers), k.kind
        if not k.position_signal:
            continue
        m = k.manifest
        assert m.head_dim == text.head_dim
        window = text.sliding_window if k.kind == "sliding_attention" else None
        if text.model_type == "llama4_text":
            window = text.attention_chunk_size
        assert m.sliding_window == window, k.kind
        np.testing.assert_allclose(m.theta_at(), _inv_freq(text, k.kind or "full_attention"), rtol=RTOL, atol=0)
    assert sum(len(k.layers) for k in kinds if k.kind is not None) in (0, len(types))
    assert {k.kind for k in kinds} == (set(types) if kinds[0].kind is not None else {None})


def test_qwen3_vl_layout_matches_transformers():
    text = _text(CASES["qwen3-vl-8b"])
    m = read_config(copy.deepcopy(CASES["qwen3-vl-8b"]))
    assert list(m.sections) == list(text.rope_parameters["mrope_section"]) and m.round_robin


@pytest.mark.parametrize("text", ["gemma3_text", 5])
def test_text_config_not_a_block_is_refused_where_transformers_refuses(text):
    with pytest.raises(Exception):  # noqa: B017 - transformers' own validation error
        hf_config({"model_type": "gemma3", "text_config": text})
    with pytest.raises(ConfigError, match="^text_config must be an object"):
        read_config({"model_type": "gemma3", "text_config": text})


def test_layer_types_of_the_wrong_length_are_refused_as_transformers_refuses():
    cfg = {"model_type": "qwen2", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 4,
           "layer_types": ["full_attention"] * 2}
    with pytest.raises(Exception, match="layer_types"):  # noqa: B017
        hf_config(cfg)
    with pytest.raises(ConfigError, match="^layer_types lists 2 layers"):
        read_config(cfg)


def test_cohere2_null_window_rotates_nowhere():
    cfg = {"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 8,
           "rope_theta": 50000.0, "sliding_window": None}
    assert hf_config(cfg).sliding_window is None  # Cohere2Attention: rotary only when the layer has a window
    with pytest.raises(ConfigError, match="no kind of layer of this config has a rotary embedding"):
        read_config(cfg)


@pytest.mark.parametrize("extra", [{}, {"layer_types": ["full_attention"] * 8}, {"attention_chunk_size": None},
                                   {"layer_types": ["chunked_attention"] * 8}])
def test_llama4_chunk_follows_layer_types_and_rope_follows_no_rope_layers(extra):
    cfg = {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
           "num_hidden_layers": 8, "rope_theta": 5e5, "attention_chunk_size": 8192, **extra}
    text = _text(cfg)
    for k in read_layer_kinds(copy.deepcopy(cfg)):
        for i in k.layers:
            assert bool(text.no_rope_layers[i]) == k.position_signal
            chunked = text.layer_types[i] == "chunked_attention" and text.attention_chunk_size is not None
            if k.position_signal:
                assert k.manifest.sliding_window == (text.attention_chunk_size if chunked else None)


def test_gemma4_last_layer_is_full_as_transformers_forces_it():
    cfg = {"model_type": "gemma4_text", "hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
           "num_hidden_layers": 4, "layer_types": ["sliding_attention"] * 4}
    text = _text(cfg)
    got = {i: k.kind for k in read_layer_kinds(copy.deepcopy(cfg)) for i in k.layers}
    assert [got[i] for i in range(4)] == list(text.layer_types)


def test_mrope_layout_sets_are_those_of_the_modeling_files():
    # interleaved: recomposition_frequencies slices mrope_section[dim] * 3 pairs with stride 3; no file reads the key
    from pathlib import Path

    import transformers

    from ropegeo.models import model_types

    root = Path(transformers.__file__).parent / "models"
    mrope, interleaved = set(), set()
    for f in root.glob("*/modeling_*.py"):
        text = f.read_text()
        if "mrope_section" in text:
            mrope.add(f.parent.name)
            assert "mrope_interleaved" not in text, f
            if "mrope_section[dim] * 3" in text:
                interleaved.add(f.parent.name)
    assert interleaved == set(model_types._MROPE_INTERLEAVED_TYPES)
    assert mrope - interleaved == set(model_types._MROPE_BLOCK_TYPES)


@pytest.mark.parametrize("said", [True, False, None])
def test_qwen2_5_vl_ignores_mrope_interleaved_as_transformers_does(said):
    block = {"type": "mrope", "mrope_section": [16, 24, 24], **({} if said is None else {"mrope_interleaved": said})}
    cfg = {"model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28, "rope_theta": 1e6,
           "rope_scaling": block}
    m = read_config(copy.deepcopy(cfg))
    text = _text(cfg)
    mod = _module("qwen2_5_vl")
    rotary = _rotary_class(mod, "qwen2_5_vl")(text)
    # the module's layout: pair j follows axis (block index of j); a time-only position moves only the time block
    pos = torch.zeros(3, 1, 1, dtype=torch.long)
    pos[0] = 5
    with torch.no_grad():
        cos, _ = rotary(torch.zeros(1, 1, 8), pos)
    moved = (cos[0, 0, : m.pairs] != 1).numpy()
    assert moved.tolist() == [j < 16 for j in range(m.pairs)] and m.round_robin is False


@pytest.mark.parametrize("model_type", ["llama", "mistral", "qwen2", "qwen3", "gemma", "olmo2", "granite", "gpt_neox",
                                        "stablelm", "phi", "persimmon", "glm", "nemotron"])
@pytest.mark.parametrize("where", ["top", "block"])
def test_partial_rotary_factor_is_read_only_where_the_code_reads_it(model_type, where):
    cfg = {"model_type": model_type, "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 8,
           "head_dim": 128, "num_hidden_layers": 2}
    if where == "top":
        cfg["partial_rotary_factor"] = 0.5
    else:
        block = dict(hf_config(cfg).rope_parameters)
        cfg["rope_parameters"] = {**block, "partial_rotary_factor": 0.5}
    text = _text(cfg)
    turning = int((torch.as_tensor(_inv_freq(text, "full_attention")) != 0).sum())
    m = read_config(copy.deepcopy(cfg))
    assert m.rotary_dim == 2 * turning, (model_type, where)


@pytest.mark.parametrize("model_type", ["llama", "mistral", "qwen2", "phi3", "gemma2", "olmo2"])
def test_sliding_window_is_read_only_where_the_code_reads_it(model_type):
    cfg = {"model_type": model_type, "hidden_size": 1024, "num_attention_heads": 8, "head_dim": 128,
           "num_hidden_layers": 2, "sliding_window": 64}
    mod = _module(model_type)
    from pathlib import Path

    text = _text(cfg)
    reads = "sliding_window" in Path(mod.__file__).read_text() and text.sliding_window == 64  # Qwen2: off
    kinds = read_layer_kinds(copy.deepcopy(cfg))
    windows = {k.manifest.sliding_window for k in kinds if k.manifest is not None}
    assert (64 in windows) == reads, (model_type, windows)
