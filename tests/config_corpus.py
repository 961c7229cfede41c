"""The corpus of config.json files the config reader is compared on with transformers, and the comparison.

Each case is a configuration as a model ships it (its ``config.json``, the rotary fields as on the hub;
the comment names the model) or a variant that leaves fields out, sets them to null or makes them
contradict each other. ``tests/data/config_readings.json`` holds what transformers 5.24.0 makes of each
(its own configuration class and rotary module: ``scripts/make_config_readings.py``, run under
``.venv-torch``): per group of layers the layer indices, whether they rotate, the window or chunk, the
head and rotary width, the pairing, every frequency and the attention factor at two lengths, M-RoPE's
sections and layout; or the refusal. ``tests/test_config_readings.py`` compares ropegeo's reading with
the stored one (no torch); ``tests/with_torch/test_config_corpus.py`` re-derives the stored readings from
transformers and compares them too. Nothing here is copied from ropegeo's output.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np

READINGS = Path(__file__).resolve().parent / "data" / "config_readings.json"
#: transformers forms the frequencies in float32, ropegeo in float64: a few float32 ulps
RTOL = 2e-6
#: the two lengths a forward pass is read at (dynamic NTK and LongRoPE switch on the length)
SHORT = 128


def _shipped(name: str) -> dict:
    from ropegeo.models.manifest import model_record

    return copy.deepcopy(model_record(name)["config"])


def _llama(**kw) -> dict:
    return {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
            "intermediate_size": 11008, "num_hidden_layers": 32, "rms_norm_eps": 1e-5, "vocab_size": 32000, **kw}


_PHI3 = {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32,
         "intermediate_size": 8192, "num_hidden_layers": 32, "vocab_size": 32064, "rope_theta": 10000.0,
         "original_max_position_embeddings": 4096}
_GEMMA3_1B = {"model_type": "gemma3_text", "hidden_size": 1152, "num_attention_heads": 4, "num_key_value_heads": 1,
              "head_dim": 256, "intermediate_size": 6912, "num_hidden_layers": 26, "max_position_embeddings": 32768,
              "rope_theta": 1000000, "rope_local_base_freq": 10000, "rope_scaling": None, "sliding_window": 512,
              "sliding_window_pattern": 6, "query_pre_attn_scalar": 256, "vocab_size": 262144}
_GEMMA3_V5 = {**{k: val for k, val in _GEMMA3_1B.items() if k not in ("rope_theta", "rope_local_base_freq",
                                                                       "rope_scaling")},
              "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 4 + ["sliding_attention"] * 2,
              "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                                  "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}
_GEMMA4 = {"model_type": "gemma4_text", "head_dim": 256, "global_head_dim": 512, "hidden_size": 2560,
           "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": 12, "intermediate_size": 4096,
           "max_position_embeddings": 131072, "sliding_window": 512, "vocab_size": 1024,
           "rope_parameters": {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                  "rope_theta": 1e6},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
_QWEN2_VL = {"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_hidden_layers": 28,
             "max_position_embeddings": 32768, "rope_theta": 1e6,
             "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
_QWEN3_VL_TEXT = {"model_type": "qwen3_vl_text", "head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32,
                  "num_key_value_heads": 8, "num_hidden_layers": 36, "max_position_embeddings": 262144,
                  "rope_theta": 5000000,
                  "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"}}
_SCOUT = {k: v for k, v in _shipped("llama-4-scout-17b-16e-instruct").items() if k not in ("model_type", "_name_or_path")}
_LLAMA4_SMALL = {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
                 "num_hidden_layers": 8, "rope_theta": 5e5, "attention_chunk_size": 8192}
_COHERE2 = {"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 8,
            "rope_theta": 50000.0}
_MINIMAX_M2 = {"model_type": "minimax_m2", "hidden_size": 3072, "num_attention_heads": 48, "num_key_value_heads": 8,
               "head_dim": 128, "num_hidden_layers": 4, "max_position_embeddings": 196608, "rope_theta": 5000000,
               "rotary_dim": 64}
_GPTJ = {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_layer": 28, "n_positions": 2048, "rotary_dim": 64,
         "vocab_size": 50400}

#: name -> {"config": config.json dict, "long": the second length read (default 32,768), "refuse": the start of
#: ropegeo's refusal where transformers refuses or no layer rotates, "remote": why transformers' class refuses
#: what the model's own (remote) code reads, and "same_as": the case ropegeo's reading must then equal}
CASES: dict[str, dict] = {
    # ---------------------------------------------------------------- the shipped records (ropegeo/data)
    **{f"shipped:{n}": {"config": _shipped(n)} for n in (
        "deepseek-v3", "gemma-3-1b-it", "gemma-3-4b-it", "gpt-j-6b", "gpt-neox-20b", "gpt-oss-20b", "llama-2-7b",
        "llama-3.1-8b", "llama-4-scout-17b-16e-instruct", "mistral-7b", "phi-3-mini-128k-instruct",
        "phi-3.5-mini-instruct", "qwen2.5-7b-instruct", "qwen2.5-vl-7b-instruct",
        "qwen3-vl-8b-instruct")},
    # Phi-3-vision's legacy rope type "su": transformers 5.24's phi3 class refuses it (the model's own remote code,
    # written for transformers 4.38, reads it as LongRoPE); ropegeo reads it as the same block named longrope
    "phi-3-vision-su-as-longrope": {"config": {**_shipped("phi-3-vision-128k-instruct"), "rope_scaling": {
        **_shipped("phi-3-vision-128k-instruct")["rope_scaling"], "type": "longrope"}}},
    "shipped:phi-3-vision-128k-instruct": {
        "config": _shipped("phi-3-vision-128k-instruct"), "same_as": "phi-3-vision-su-as-longrope",
        "remote": "transformers 5.24.0's phi3 class refuses the legacy rope type 'su' (it asks for the block's "
                  "original_max_position_embeddings); the model's own code, written for transformers 4.38, reads it as "
                  "longrope, as ropegeo does"},
    "shipped:phi-3-mini-128k-instruct@4096": {"config": _shipped("phi-3-mini-128k-instruct"), "long": 4096},
    "shipped:phi-3-mini-128k-instruct@4097": {"config": _shipped("phi-3-mini-128k-instruct"), "long": 4097},
    "shipped:phi-3-mini-128k-instruct@131072": {"config": _shipped("phi-3-mini-128k-instruct"), "long": 131072},
    # ---------------------------------------------------------------- Llama family
    "meta-llama/Meta-Llama-3-8B": {"config": _llama(num_key_value_heads=8, intermediate_size=14336,
                                                    vocab_size=128256, max_position_embeddings=8192,
                                                    rope_theta=500000.0, rope_scaling=None)},
    "meta-llama/Llama-3.2-1B": {"config": _llama(
        hidden_size=2048, num_key_value_heads=8, head_dim=64, intermediate_size=8192, num_hidden_layers=16,
        vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0,
        rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"}), "long": 131072},
    "codellama/CodeLlama-7b-hf": {"config": _llama(max_position_embeddings=16384, rope_theta=1000000,
                                                   vocab_size=32016)},
    "llama-dynamic-ntk": {"config": _llama(max_position_embeddings=4096, rope_theta=10000.0,
                                           rope_scaling={"type": "dynamic", "factor": 4.0}), "long": 16384},
    "llama-linear-x8": {"config": _llama(max_position_embeddings=16384, rope_theta=10000.0,
                                         rope_scaling={"type": "linear", "factor": 8.0})},
    "llama-v5-rope-parameters-llama3": {"config": _llama(
        num_key_value_heads=8, max_position_embeddings=131072,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})},
    "llama-v5-rope-parameters-default": {"config": _llama(max_position_embeddings=4096, rope_parameters={
        "rope_type": "default", "rope_theta": 10000.0})},
    "llama-no-rope-theta": {"config": _llama(max_position_embeddings=4096)},
    "llama-rope-scaling-null": {"config": _llama(max_position_embeddings=4096, rope_theta=10000.0,
                                                 rope_scaling=None)},
    "llama-block-base-wins": {"config": _llama(max_position_embeddings=4096, rope_theta=10000.0,
                                               rope_parameters={"rope_type": "default", "rope_theta": 500000.0})},
    "llama-yarn-top-level-original-wins": {"config": _llama(
        max_position_embeddings=131072, original_max_position_embeddings=8192, rope_theta=500000.0,
        rope_scaling={"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 4096})},
    "llama3-without-original": {"config": _llama(max_position_embeddings=8192, rope_theta=500000.0, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0})},
    "llama-partial-factor-and-window-ignored": {"config": _llama(hidden_size=1024, num_attention_heads=8,
                                                                 partial_rotary_factor=0.5, sliding_window=64)},
    "llama-rotary-dim-ignored": {"config": _llama(hidden_size=1024, num_attention_heads=8, rotary_dim=32)},
    "llama-rotary-dim-and-partial-factor": {"config": _llama(hidden_size=1024, num_attention_heads=8,
                                                             rotary_dim=32, partial_rotary_factor=0.5)},
    "llama-yarn-without-factor": {"config": _llama(max_position_embeddings=131072, rope_theta=1e6, rope_scaling={
        "rope_type": "yarn", "original_max_position_embeddings": 32768}), "refuse": "rope_scaling.factor"},
    # ---------------------------------------------------------------- Mistral, Mixtral
    "mistralai/Mistral-7B-v0.1": {"config": {
        "model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "num_hidden_layers": 32, "max_position_embeddings": 32768, "rope_theta": 10000.0,
        "sliding_window": 4096, "vocab_size": 32000}},
    "mistralai/Mistral-Nemo-Base-2407": {"config": {
        "model_type": "mistral", "hidden_size": 5120, "num_attention_heads": 32, "head_dim": 128,
        "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 40,
        "max_position_embeddings": 1024000, "rope_theta": 1000000.0, "sliding_window": None, "vocab_size": 131072}},
    "mistralai/Mixtral-8x7B-v0.1": {"config": {
        "model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_local_experts": 8, "num_experts_per_tok": 2,
        "max_position_embeddings": 32768, "rope_theta": 1e6, "sliding_window": None, "vocab_size": 32000}},
    "mixtral-no-rotary-field": {"config": {"model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32,
                                           "num_hidden_layers": 4}},
    # ---------------------------------------------------------------- Qwen
    "Qwen/Qwen2-7B-Instruct": {"config": {
        "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "intermediate_size": 18944, "num_hidden_layers": 28, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
        "sliding_window": 131072, "use_sliding_window": False, "vocab_size": 152064}},
    "Qwen/Qwen2.5-7B-Instruct+yarn": {"config": {
        "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "intermediate_size": 18944, "num_hidden_layers": 28, "max_position_embeddings": 32768, "max_window_layers": 28,
        "rope_theta": 1000000.0, "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768,
                                                  "type": "yarn"},
        "sliding_window": 131072, "use_sliding_window": False, "vocab_size": 152064}, "long": 131072},
    "qwen2-window-on-max-window-layers-20": {"config": {
        "model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 28,
        "max_position_embeddings": 32768, "rope_theta": 1e4, "sliding_window": 4096, "use_sliding_window": True,
        "max_window_layers": 20}},
    "qwen2-window-without-use-sliding-window": {"config": {
        "model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 4,
        "sliding_window": 64}},
    "qwen2-layer-types-too-short": {"config": {
        "model_type": "qwen2", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 4,
        "layer_types": ["full_attention"] * 2}, "refuse": "layer_types lists 2 layers"},
    "qwen2_moe-window-on": {"config": {
        "model_type": "qwen2_moe", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 28,
        "max_position_embeddings": 32768, "rope_theta": 1e4, "sliding_window": 4096, "use_sliding_window": True,
        "max_window_layers": 20}},
    "Qwen/Qwen3-0.6B": {"config": {
        "model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8,
        "head_dim": 128, "intermediate_size": 3072, "num_hidden_layers": 28, "max_position_embeddings": 40960,
        "rope_theta": 1000000, "rope_scaling": None, "sliding_window": None, "use_sliding_window": False,
        "vocab_size": 151936}},
    "qwen3-without-head-dim": {"config": {"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16,
                                          "num_hidden_layers": 4, "rope_theta": 1e6}},
    "Qwen/Qwen3-30B-A3B": {"config": {
        "model_type": "qwen3_moe", "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 4,
        "head_dim": 128, "num_hidden_layers": 48, "max_position_embeddings": 40960, "rope_theta": 1000000.0,
        "rope_scaling": None, "sliding_window": None, "use_sliding_window": False}},
    "Qwen/Qwen2-VL-7B-Instruct": {"config": _QWEN2_VL},
    "qwen2_5_vl-mrope-interleaved-true": {"config": {
        "model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_hidden_layers": 28,
        "rope_theta": 1e6, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24], "mrope_interleaved": True}}},
    "qwen3_vl_text": {"config": _QWEN3_VL_TEXT},
    "qwen3_vl-v5-rope-parameters": {"config": {
        **{k: v for k, v in _QWEN3_VL_TEXT.items() if k not in ("rope_theta", "rope_scaling")},
        "rope_parameters": {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20],
                            "mrope_interleaved": True}}},
    "qwen2_vl-mrope-section-wrong-sum": {"config": {**_QWEN2_VL, "rope_scaling": {
        "type": "mrope", "mrope_section": [8, 8, 8]}}, "refuse": "rope_scaling.mrope_section [8, 8, 8] sums to 24"},
    "qwen2_vl-mrope-section-null": {"config": {**_QWEN2_VL, "rope_scaling": {
        "type": "mrope", "mrope_section": None}}, "refuse": "rope_scaling.mrope_section is null"},
    "qwen2_vl-mrope-section-dict": {"config": {**_QWEN2_VL, "rope_scaling": {
        "type": "mrope", "mrope_section": {"t": 16}}}, "refuse": "rope_scaling.mrope_section must list"},
    # ---------------------------------------------------------------- Gemma
    "google/gemma-2-9b": {"config": {
        "model_type": "gemma2", "hidden_size": 3584, "num_attention_heads": 16, "num_key_value_heads": 8,
        "head_dim": 256, "intermediate_size": 14336, "num_hidden_layers": 42, "max_position_embeddings": 8192,
        "rope_theta": 10000.0, "sliding_window": 4096, "query_pre_attn_scalar": 256, "vocab_size": 256000}},
    "google/gemma-7b": {"config": {
        "model_type": "gemma", "hidden_size": 3072, "num_attention_heads": 16, "num_key_value_heads": 16,
        "head_dim": 256, "intermediate_size": 24576, "num_hidden_layers": 28, "max_position_embeddings": 8192,
        "rope_theta": 10000.0, "vocab_size": 256000}},
    "gemma-3-4b-text": {"config": {**_GEMMA3_1B, "hidden_size": 2560, "num_attention_heads": 8,
                                   "num_key_value_heads": 4, "max_position_embeddings": 131072, "sliding_window": 1024,
                                   "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}},
    "gemma-3-v5-rope-parameters": {"config": _GEMMA3_V5},
    "google/gemma-3-27b-it": {"config": {"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376, "num_attention_heads": 32,
        "num_hidden_layers": 62, "rope_local_base_freq": 10000, "rope_theta": 1000000,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024, "sliding_window_pattern": 6}}},
    "gemma-3-empty-text-config": {"config": {"model_type": "gemma3", "text_config": {}}},
    "gemma-3-text-config-no-window": {"config": {"model_type": "gemma3", "text_config": {"num_hidden_layers": 12}}},
    "gemma-3-bidirectional": {"config": {**_GEMMA3_1B, "use_bidirectional_attention": True}},
    "gemma-3-text-config-string": {"config": {"model_type": "gemma3", "text_config": "gemma3_text"},
                                   "refuse": "text_config must be an object"},
    "gemma-3-text-config-number": {"config": {"model_type": "gemma3", "text_config": 5},
                                   "refuse": "text_config must be an object"},
    "gemma4_text": {"config": _GEMMA4},
    "gemma4_text-no-window": {"config": {k: v for k, v in _GEMMA4.items() if k != "sliding_window"}},
    "gemma4_text-bidirectional-all": {"config": {**_GEMMA4, "use_bidirectional_attention": "all"}},
    "gemma4_text-bidirectional-vision": {"config": {**_GEMMA4, "use_bidirectional_attention": "vision"}},
    "gemma4_text-last-layer-sliding": {"config": {**_GEMMA4, "num_hidden_layers": 4,
                                                  "layer_types": ["sliding_attention"] * 4}},
    "gemma4_text-class-defaults": {"config": {"model_type": "gemma4_text", "hidden_size": 2560,
                                              "num_attention_heads": 8, "head_dim": 256, "num_hidden_layers": 6}},
    # ---------------------------------------------------------------- Llama 4, Cohere
    "llama4-scout-text-config": {"config": {"model_type": "llama4", "text_config": _SCOUT}},
    "llama4_text-class-layers": {"config": _LLAMA4_SMALL},
    "llama4_text-layer-types-full": {"config": {**_LLAMA4_SMALL, "layer_types": ["full_attention"] * 8}},
    "llama4_text-chunk-null": {"config": {**_LLAMA4_SMALL, "attention_chunk_size": None}},
    "llama4_text-every-layer-chunked": {"config": {**_LLAMA4_SMALL, "layer_types": ["chunked_attention"] * 8}},
    "CohereForAI/c4ai-command-r-v01": {"config": {
        "model_type": "cohere", "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 64,
        "intermediate_size": 22528, "num_hidden_layers": 40, "max_position_embeddings": 131072,
        "rope_theta": 8000000.0, "use_qk_norm": False, "logit_scale": 0.0625, "vocab_size": 256000}},
    "cohere2-window-absent": {"config": _COHERE2},
    "cohere2-window-4096": {"config": {**_COHERE2, "sliding_window": 4096, "sliding_window_pattern": 4}},
    "cohere2-window-null": {"config": {**_COHERE2, "sliding_window": None}},
    # ---------------------------------------------------------------- partial rotary: Phi, StableLM, GPT-NeoX, GPT-J
    "microsoft/phi-2": {"config": {
        "model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32, "intermediate_size": 10240,
        "num_hidden_layers": 32, "max_position_embeddings": 2048, "partial_rotary_factor": 0.4,
        "rope_theta": 10000.0, "rope_scaling": None, "vocab_size": 51200}},
    "phi-block-factor-wins": {"config": {"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
                                         "partial_rotary_factor": 0.4, "rope_parameters": {
                                             "rope_type": "default", "rope_theta": 10000.0,
                                             "partial_rotary_factor": 0.5}}},
    "microsoft/Phi-3-mini-4k-instruct": {"config": {**_PHI3, "max_position_embeddings": 4096, "rope_scaling": None,
                                                    "sliding_window": 2047}},
    "stabilityai/stablelm-2-1_6b": {"config": {
        "model_type": "stablelm", "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 32,
        "intermediate_size": 5632, "num_hidden_layers": 24, "max_position_embeddings": 4096,
        "partial_rotary_factor": 0.25, "rope_theta": 10000, "vocab_size": 100352}},
    "stablelm-class-factor": {"config": {"model_type": "stablelm", "hidden_size": 2048, "num_attention_heads": 32,
                                         "rope_theta": 10000.0}},
    "EleutherAI/pythia-1.4b": {"config": {
        "model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16, "intermediate_size": 8192,
        "num_hidden_layers": 24, "max_position_embeddings": 2048, "rotary_emb_base": 10000, "rotary_pct": 0.25,
        "vocab_size": 50304}},
    "gpt_neox-top-level-factor-ignored": {"config": {"model_type": "gpt_neox", "hidden_size": 1024,
                                                     "num_attention_heads": 8, "partial_rotary_factor": 0.5}},
    "gpt_neox-rope-theta-ignored": {"config": {"model_type": "gpt_neox", "hidden_size": 2048,
                                               "num_attention_heads": 16, "rotary_pct": 0.25,
                                               "rotary_emb_base": 10000, "rope_theta": 500000}},
    "gptj-rope-theta-ignored": {"config": {**_GPTJ, "rope_theta": 500000}},
    "gptj-no-rotary-dim": {"config": {k: v for k, v in _GPTJ.items() if k != "rotary_dim"}},
    "codegen-no-rotary-dim": {"config": {"model_type": "codegen", "n_embd": 1024, "n_head": 16, "n_layer": 4}},
    "gptj-rotary-dim-and-partial-factor": {"config": {**_GPTJ, "partial_rotary_factor": 0.5}},
    "gptj-rotary-dim-and-agreeing-factor": {"config": {**_GPTJ, "partial_rotary_factor": 0.25}},
    "Salesforce/codegen-350M-mono": {"config": {
        "model_type": "codegen", "n_embd": 1024, "n_head": 16, "n_layer": 20, "n_positions": 2048, "n_ctx": 2048,
        "rotary_dim": 32, "vocab_size": 51200}},
    "codegen-rotary-dim-and-partial-factor": {"config": {
        "model_type": "codegen", "n_embd": 1024, "n_head": 16, "n_layer": 4, "rotary_dim": 32,
        "partial_rotary_factor": 0.25}},
    "phi-rotary-dim-and-partial-factor": {"config": {"model_type": "phi", "hidden_size": 2560,
                                                     "num_attention_heads": 32, "partial_rotary_factor": 0.4,
                                                     "rotary_dim": 16}},
    "MiniMaxAI/MiniMax-M2": {"config": _MINIMAX_M2},
    "minimax_m2-rotary-dim-and-partial-factor": {"config": {**_MINIMAX_M2, "partial_rotary_factor": 0.25}},
    "adept/persimmon-8b-base": {"config": {
        "model_type": "persimmon", "hidden_size": 4096, "num_attention_heads": 64, "num_hidden_layers": 36,
        "max_position_embeddings": 16384, "partial_rotary_factor": 0.5, "rope_theta": 25000.0}},
    "nvidia/Minitron-8B-Base": {"config": {
        "model_type": "nemotron", "hidden_size": 4096, "num_attention_heads": 48, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 32, "max_position_embeddings": 4096, "partial_rotary_factor": 0.5,
        "rope_theta": 10000}},
    "THUDM/glm-4-9b-hf": {"config": {
        "model_type": "glm", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 2,
        "head_dim": 128, "num_hidden_layers": 40, "max_position_embeddings": 131072, "partial_rotary_factor": 0.5,
        "rope_theta": 10000.0}},
    # ---------------------------------------------------------------- other families
    "tiiuae/falcon-7b": {"config": {
        "model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "num_hidden_layers": 32,
        "multi_query": True, "parallel_attn": True, "new_decoder_architecture": False, "alibi": False, "bias": False,
        "vocab_size": 65024}},
    "falcon-alibi": {"config": {"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 4, "alibi": True},
                     "refuse": "alibi is true"},
    "allenai/OLMo-2-1124-7B": {"config": {
        "model_type": "olmo2", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
        "intermediate_size": 11008, "num_hidden_layers": 32, "max_position_embeddings": 4096, "rope_theta": 500000,
        "rope_scaling": None, "vocab_size": 100352}},
    "ibm-granite/granite-3.1-8b-instruct": {"config": {
        "model_type": "granite", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 12800, "num_hidden_layers": 40, "max_position_embeddings": 131072,
        "rope_theta": 10000000.0, "rope_scaling": None, "attention_multiplier": 0.0078125, "vocab_size": 49155}},
    "bigcode/starcoder2-7b": {"config": {
        "model_type": "starcoder2", "hidden_size": 4608, "num_attention_heads": 36, "num_key_value_heads": 4,
        "num_hidden_layers": 32, "max_position_embeddings": 16384, "rope_theta": 1000000, "sliding_window": 4096}},
    "deepseek-ai/DeepSeek-V2-Lite": {"config": {
        "model_type": "deepseek_v2", "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 16,
        "intermediate_size": 10944, "num_hidden_layers": 27, "kv_lora_rank": 512, "q_lora_rank": None,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "max_position_embeddings": 163840,
        "rope_theta": 10000, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                                              "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                                              "type": "yarn"},
        "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
        "first_k_dense_replace": 1, "vocab_size": 102400}, "long": 163840},
    "deepseek-v3-rope-interleave-false": {"config": {**_shipped("deepseek-v3"), "rope_interleave": False}},
    # ---------------------------------------------------------------- 2025-26 families
    "HuggingFaceTB/SmolLM3-3B": {"config": {
        "model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 4,
        "num_hidden_layers": 36, "max_position_embeddings": 65536, "rope_theta": 5000000.0,
        "no_rope_layers": [0 if (i + 1) % 4 == 0 else 1 for i in range(36)], "use_sliding_window": False,
        "sliding_window": None}},
    "smollm3-class-nope-interval": {"config": {"model_type": "smollm3", "hidden_size": 2048,
                                               "num_attention_heads": 16, "num_hidden_layers": 8, "rope_theta": 2e6}},
    "smollm3-window-on-nope-layers": {"config": {"model_type": "smollm3", "hidden_size": 2048,
                                                 "num_attention_heads": 16, "num_hidden_layers": 8, "rope_theta": 2e6,
                                                 "use_sliding_window": True, "sliding_window": 4096}},
    "qwen3_5-text-config-class-defaults": {"config": {"model_type": "qwen3_5", "text_config": {"num_hidden_layers": 8}}},
    "baidu/ERNIE-4.5-0.3B-PT": {"config": {
        "model_type": "ernie4_5", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 2,
        "head_dim": 128, "num_hidden_layers": 18, "max_position_embeddings": 131072, "rope_theta": 500000}},
    "zai-org/GLM-4.5-Air": {"config": {
        "model_type": "glm4_moe", "hidden_size": 4096, "num_attention_heads": 96, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 46, "partial_rotary_factor": 0.5, "rope_theta": 1000000,
        "max_position_embeddings": 131072}},
    "Qwen/Qwen3-Next-80B-A3B-Instruct": {"config": {
        "model_type": "qwen3_next", "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 2,
        "head_dim": 256, "num_hidden_layers": 48, "partial_rotary_factor": 0.25, "rope_theta": 10000000,
        "max_position_embeddings": 262144, "full_attention_interval": 4}},
    "ByteDance-Seed/Seed-OSS-36B-Instruct": {"config": {
        "model_type": "seed_oss", "hidden_size": 5120, "num_attention_heads": 80, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 64, "rope_theta": 10000000.0, "max_position_embeddings": 524288}},
    "mistralai/Ministral-8B-Instruct-2410": {"config": {
        "model_type": "ministral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 36, "rope_theta": 100000000.0, "sliding_window": 32768,
        "max_position_embeddings": 32768}},
    "allenai/Olmo-3-7B-class-layers": {"config": {
        "model_type": "olmo3", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 8,
        "sliding_window": 4096, "rope_theta": 500000, "max_position_embeddings": 65536}},
    "kyutai/helium-1-2b": {"config": {
        "model_type": "helium", "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 28, "rope_theta": 100000.0, "max_position_embeddings": 4096}},
    "gpt_oss-class-defaults": {"config": {"model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64,
                                          "num_hidden_layers": 4}},
}

# openbmb/MiniCPM3-4B: MLA with a 32-wide rotary head and a LongRoPE block (16-entry lists, values of our own)
CASES["openbmb/MiniCPM3-4B"] = {"config": {
    "model_type": "minicpm3", "hidden_size": 2560, "num_attention_heads": 40, "num_key_value_heads": 40,
    "intermediate_size": 6400, "num_hidden_layers": 62, "q_lora_rank": 768, "kv_lora_rank": 256,
    "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "max_position_embeddings": 32768, "rope_theta": 10000.0,
    "rope_scaling": {"type": "longrope", "original_max_position_embeddings": 32768,
                     "short_factor": [1.0 + 0.05 * i for i in range(16)],
                     "long_factor": [1.0 + 0.5 * i for i in range(16)]}, "vocab_size": 73448}}


def lengths(case: dict) -> tuple[int, int]:
    """The two lengths a case's frequencies are read at."""
    return SHORT, int(case.get("long", 32768))


def config(name: str) -> dict:
    """A fresh copy of case ``name``'s configuration."""
    return copy.deepcopy(CASES[name]["config"])


def stored() -> dict:
    """The stored readings (``tests/data/config_readings.json``)."""
    return json.loads(READINGS.read_text())


# ---------------------------------------------------------------------- ropegeo's reading, in the same form
def ropegeo_groups(cfg: dict, lens) -> list[dict]:
    """ropegeo's reading of a configuration (``read_layer_kinds``) as groups of layers, the stored form."""
    from ropegeo.models.manifest import read_layer_kinds

    out = []
    for k in read_layer_kinds(copy.deepcopy(cfg)):
        g = {"kind": k.kind, "layers": list(k.layers), "rotates": k.position_signal}
        m = k.manifest
        if m is not None:
            g.update(window=m.sliding_window, head_dim=m.head_dim, rotary_dim=m.rotary_dim, pairing=m.pairing,
                     pairing_width=getattr(m, "pairing_width", None) or m.rotary_dim,
                     theta={str(n): m.theta_at(n).tolist() for n in lens},
                     attention={str(n): float(m.attention_at(n)) for n in lens},
                     sections=None if m.sections is None else list(m.sections),
                     interleaved=bool(m.round_robin) if m.sections is not None else None)
        out.append(g)
    return out


def disagreements(want: dict, got: list[dict]) -> list[str]:
    """Where ropegeo's groups (``got``) differ from transformers' reading (``want``, a stored entry)."""
    bad = []
    groups = want["groups"]
    total = sum(len(g["layers"]) for g in groups)
    if len(got) == 1 and got[0]["kind"] is None:  # one operator for every layer
        if sum(g["rotates"] for g in groups) != len(groups) or len({json.dumps(_op(g)) for g in groups}) != 1:
            bad.append(f"ropegeo reads one kind of layer, transformers {len(groups)}: "
                       f"{[(g['kind'], g['rotates'], g.get('window')) for g in groups]}")
            return bad
        if got[0]["layers"] and got[0]["layers"] != list(range(total)):
            bad.append(f"layers {got[0]['layers']} vs {total}")
        pairs = [(got[0], groups[0])]
    else:
        pairs = []
        for g in got:  # each kind: the same layers as one of transformers' groups
            match = [h for h in groups if set(g["layers"]) & set(h["layers"])]
            if len(match) != 1 or sorted(match[0]["layers"]) != sorted(g["layers"]):
                bad.append(f"{g['kind']}: layers {g['layers']} vs transformers "
                           f"{[(h['kind'], h['layers']) for h in match]}")
                continue
            pairs.append((g, match[0]))
        if len(pairs) == len(got) and len(got) != len(groups):
            bad.append(f"{len(got)} kinds of layer vs transformers' {len(groups)}")
    for g, h in pairs:
        bad += [f"{g['kind']}: {msg}" for msg in _compare(g, h)]
    return bad


def _op(g: dict) -> dict:
    return {k: g.get(k) for k in ("rotates", "window", "head_dim", "rotary_dim", "pairing", "theta", "sections")}


def _compare(g: dict, h: dict) -> list[str]:
    if g["rotates"] != h["rotates"]:
        return [f"rotates {g['rotates']} vs transformers {h['rotates']}"]
    if not h["rotates"]:
        return []
    bad = [f"{key} {g[key]!r} vs transformers {h[key]!r}" for key in
           ("window", "head_dim", "rotary_dim", "pairing", "pairing_width", "sections", "interleaved")
           if g[key] != h[key]]
    for n, theta in h["theta"].items():
        mine = np.asarray(g["theta"][n])
        if mine.shape != np.shape(theta):
            bad.append(f"{len(mine)} frequencies vs transformers {len(theta)} at L={n}")
        elif not np.allclose(mine, theta, rtol=RTOL, atol=0):
            i = int(np.argmax(np.abs(mine - theta) / np.abs(theta)))
            bad.append(f"frequency {i} at L={n}: {mine[i]!r} vs transformers {theta[i]!r}")
        if abs(g["attention"][n] - h["attention"][n]) > 1e-6 * abs(h["attention"][n]):
            bad.append(f"attention factor at L={n}: {g['attention'][n]!r} vs transformers {h['attention'][n]!r}")
    return bad
