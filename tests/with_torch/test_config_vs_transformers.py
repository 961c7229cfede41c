"""The config reader against transformers, model by model: a differential test.

For each configuration below (a dict written as the hub ``config.json`` of the model named in its
comment), ``ropegeo.models.manifest.read_config`` must give the per-pair frequencies and the attention
factor that transformers' own code runs: the model type's configuration class
(``AutoConfig.for_model``), its rotary module (``<Family>RotaryEmbedding``) called as within a
forward pass of ``L`` tokens (so the dynamic rules, dynamic NTK and LongRoPE's short/long switch,
see ``max(position_ids) + 1 = L``), then its ``inv_freq`` buffer and ``attention_scaling``. Each is
checked at a short length and at the configuration's target length, with the rotary width (twice
the module's frequency count) and the pairing (the table derived from transformers' apply
functions).

transformers computes in float32, ropegeo in float64: the tolerance is a few float32 ulps.

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""

from __future__ import annotations

import copy
import importlib
import json
import math
from pathlib import Path

import pytest
from _requires import require


require("torch", "transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoConfig  # noqa: E402
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES, model_type_to_module_name  # noqa: E402

from ropegeo.models.manifest import PAIRING_BY_MODEL_TYPE, ConfigError, read_config  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "ropegeo" / "data"
#: float32 rounding of ``base ** (2i / d)`` (exponent not exact in float32 for d = 80, 96 ...) and of
#: the blends: a few ulps of float32
RTOL = 2e-6


def _hub(name: str) -> dict:
    """The hub config.json a shipped record copies (used only for LongRoPE's 48-entry factor lists)."""
    return json.loads((DATA / f"{name}.json").read_text())["config"]


def _llama(**kw) -> dict:
    return {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
            "intermediate_size": 11008, "num_hidden_layers": 32, "rms_norm_eps": 1e-5, "vocab_size": 32000, **kw}


_PHI3_128K = _hub("phi-3-mini-128k-instruct")["rope_scaling"]
_PHI35 = _hub("phi-3.5-mini-instruct")["rope_scaling"]
_PHI3 = {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32,
         "intermediate_size": 8192, "num_hidden_layers": 32, "vocab_size": 32064, "rope_theta": 10000.0,
         "original_max_position_embeddings": 4096}
_GEMMA3_1B = {"model_type": "gemma3_text", "hidden_size": 1152, "num_attention_heads": 4, "num_key_value_heads": 1,
              "head_dim": 256, "intermediate_size": 6912, "num_hidden_layers": 26, "max_position_embeddings": 32768,
              "rope_theta": 1000000, "rope_local_base_freq": 10000, "rope_scaling": None, "sliding_window": 512,
              "sliding_window_pattern": 6, "query_pre_attn_scalar": 256, "vocab_size": 262144}

#: case -> (config.json dict, layer_type, short length, long length)
CASES = {
    # meta-llama/Llama-2-7b-hf
    "llama-2-7b": (_llama(max_position_embeddings=4096, rope_theta=10000.0, rope_scaling=None), None, 128, 4096),
    # meta-llama/Meta-Llama-3-8B
    "llama-3-8b": (_llama(num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
                          max_position_embeddings=8192, rope_theta=500000.0, rope_scaling=None), None, 128, 8192),
    # meta-llama/Llama-3.1-8B
    "llama-3.1-8b": (_llama(num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
                            max_position_embeddings=131072, rope_theta=500000.0,
                            rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                          "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
                     None, 128, 131072),
    # meta-llama/Llama-3.2-1B (head_dim 64 written out, factor 32)
    "llama-3.2-1b": (_llama(hidden_size=2048, num_key_value_heads=8, head_dim=64, intermediate_size=8192,
                            num_hidden_layers=16, vocab_size=128256, max_position_embeddings=131072,
                            rope_theta=500000.0,
                            rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                          "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
                     None, 128, 131072),
    # codellama/CodeLlama-7b-hf
    "codellama-7b": (_llama(max_position_embeddings=16384, rope_theta=1000000, vocab_size=32016), None, 128, 16384),
    # mistralai/Mistral-7B-v0.1
    "mistral-7b-v0.1": ({"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32,
                         "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32,
                         "max_position_embeddings": 32768, "rope_theta": 10000.0, "sliding_window": 4096,
                         "vocab_size": 32000}, None, 128, 32768),
    # mistralai/Mistral-Nemo-Base-2407 (head_dim 128 though 5120 / 32 = 160)
    "mistral-nemo": ({"model_type": "mistral", "hidden_size": 5120, "num_attention_heads": 32, "head_dim": 128,
                      "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 40,
                      "max_position_embeddings": 1024000, "rope_theta": 1000000.0, "sliding_window": None,
                      "vocab_size": 131072}, None, 128, 131072),
    # mistralai/Mixtral-8x7B-v0.1
    "mixtral-8x7b": ({"model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32,
                      "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32,
                      "num_local_experts": 8, "num_experts_per_tok": 2, "max_position_embeddings": 32768,
                      "rope_theta": 1e6, "sliding_window": None, "vocab_size": 32000}, None, 128, 32768),
    # Qwen/Qwen2.5-7B-Instruct as shipped (no scaling block; the window declared but off)
    "qwen2.5-7b": ({"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
                    "intermediate_size": 18944, "num_hidden_layers": 28, "max_position_embeddings": 32768,
                    "max_window_layers": 28, "rope_theta": 1000000.0, "rope_scaling": None, "sliding_window": 131072,
                    "use_sliding_window": False, "vocab_size": 152064}, None, 128, 32768),
    # Qwen/Qwen2.5-7B-Instruct with the YaRN block its model card tells users to add
    "qwen2.5-7b-yarn": ({"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
                         "num_key_value_heads": 4, "intermediate_size": 18944, "num_hidden_layers": 28,
                         "max_position_embeddings": 32768, "max_window_layers": 28, "rope_theta": 1000000.0,
                         "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
                         "sliding_window": 131072, "use_sliding_window": False, "vocab_size": 152064},
                        None, 128, 131072),
    # Qwen/Qwen2-7B-Instruct
    "qwen2-7b": ({"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
                  "intermediate_size": 18944, "num_hidden_layers": 28, "max_position_embeddings": 32768,
                  "rope_theta": 1000000.0, "sliding_window": 131072, "use_sliding_window": False,
                  "vocab_size": 152064}, None, 128, 32768),
    # Qwen/Qwen3-0.6B (head_dim 128 though 1024 / 16 = 64)
    "qwen3-0.6b": ({"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8,
                    "head_dim": 128, "intermediate_size": 3072, "num_hidden_layers": 28,
                    "max_position_embeddings": 40960, "rope_theta": 1000000, "rope_scaling": None,
                    "sliding_window": None, "use_sliding_window": False, "vocab_size": 151936}, None, 128, 40960),
    # google/gemma-2-9b (head_dim 256, window 4,096 on alternate layers)
    "gemma-2-9b-full": ({"model_type": "gemma2", "hidden_size": 3584, "num_attention_heads": 16,
                         "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336,
                         "num_hidden_layers": 42, "max_position_embeddings": 8192, "rope_theta": 10000.0,
                         "sliding_window": 4096, "query_pre_attn_scalar": 256, "vocab_size": 256000},
                        "full_attention", 128, 8192),
    # google/gemma-3-1b-it, both kinds of layer
    "gemma-3-1b-full": (_GEMMA3_1B, "full_attention", 128, 32768),
    "gemma-3-1b-sliding": (_GEMMA3_1B, "sliding_attention", 128, 32768),
    # google/gemma-3-4b-it's text_config (linear x8 on the full layers), as a text model's config.json
    "gemma-3-4b-text-full": ({**_GEMMA3_1B, "hidden_size": 2560, "num_attention_heads": 8, "num_key_value_heads": 4,
                              "max_position_embeddings": 131072, "sliding_window": 1024,
                              "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}, "full_attention", 128, 131072),
    "gemma-3-4b-text-sliding": ({**_GEMMA3_1B, "hidden_size": 2560, "num_attention_heads": 8,
                                 "num_key_value_heads": 4, "max_position_embeddings": 131072, "sliding_window": 1024,
                                 "rope_scaling": {"factor": 8.0, "rope_type": "linear"}},
                                "sliding_attention", 128, 131072),
    # microsoft/phi-2 (partial_rotary_factor 0.4 of an 80-wide head: 32 rotary coordinates)
    "phi-2": ({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32, "intermediate_size": 10240,
               "num_hidden_layers": 32, "max_position_embeddings": 2048, "partial_rotary_factor": 0.4,
               "rope_theta": 10000.0, "rope_scaling": None, "vocab_size": 51200}, None, 128, 2048),
    # microsoft/Phi-3-mini-4k-instruct
    "phi-3-mini-4k": ({**_PHI3, "max_position_embeddings": 4096, "rope_scaling": None, "sliding_window": 2047},
                      None, 128, 4096),
    # microsoft/Phi-3-mini-128k-instruct (LongRoPE; the short list up to 4,096 tokens, the long one beyond)
    "phi-3-mini-128k": ({**_PHI3, "max_position_embeddings": 131072, "rope_scaling": _PHI3_128K,
                         "sliding_window": 262144}, None, 4096, 131072),
    "phi-3-mini-128k-4097": ({**_PHI3, "max_position_embeddings": 131072, "rope_scaling": _PHI3_128K,
                              "sliding_window": 262144}, None, 128, 4097),
    # microsoft/Phi-3.5-mini-instruct
    "phi-3.5-mini": ({**_PHI3, "max_position_embeddings": 131072, "rope_scaling": _PHI35, "sliding_window": 262144},
                     None, 128, 131072),
    # stabilityai/stablelm-2-1_6b (partial_rotary_factor 0.25 of a 64-wide head)
    "stablelm-2-1.6b": ({"model_type": "stablelm", "hidden_size": 2048, "num_attention_heads": 32,
                         "num_key_value_heads": 32, "intermediate_size": 5632, "num_hidden_layers": 24,
                         "max_position_embeddings": 4096, "partial_rotary_factor": 0.25, "rope_theta": 10000,
                         "vocab_size": 100352}, None, 128, 4096),
    # EleutherAI/gpt-neox-20b (rotary_pct 0.25 of a 96-wide head, base under rotary_emb_base)
    "gpt-neox-20b": ({"model_type": "gpt_neox", "hidden_size": 6144, "num_attention_heads": 64,
                      "intermediate_size": 24576, "num_hidden_layers": 44, "max_position_embeddings": 2048,
                      "rotary_emb_base": 10000, "rotary_pct": 0.25, "vocab_size": 50432}, None, 128, 2048),
    # EleutherAI/pythia-1.4b
    "pythia-1.4b": ({"model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16,
                     "intermediate_size": 8192, "num_hidden_layers": 24, "max_position_embeddings": 2048,
                     "rotary_emb_base": 10000, "rotary_pct": 0.25, "vocab_size": 50304}, None, 128, 2048),
    # EleutherAI/gpt-j-6b (rotary_dim 64 of a 256-wide head)
    "gpt-j-6b": ({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_layer": 28, "n_positions": 2048,
                  "rotary_dim": 64, "vocab_size": 50400}, None, 128, 2048),
    # tiiuae/falcon-7b
    "falcon-7b": ({"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "num_hidden_layers": 32,
                   "multi_query": True, "parallel_attn": True, "new_decoder_architecture": False, "alibi": False,
                   "bias": False, "vocab_size": 65024}, None, 128, 2048),
    # allenai/OLMo-2-1124-7B
    "olmo-2-7b": ({"model_type": "olmo2", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
                   "intermediate_size": 11008, "num_hidden_layers": 32, "max_position_embeddings": 4096,
                   "rope_theta": 500000, "rope_scaling": None, "vocab_size": 100352}, None, 128, 4096),
    # ibm-granite/granite-3.1-8b-instruct
    "granite-3.1-8b": ({"model_type": "granite", "hidden_size": 4096, "num_attention_heads": 32,
                        "num_key_value_heads": 8, "intermediate_size": 12800, "num_hidden_layers": 40,
                        "max_position_embeddings": 131072, "rope_theta": 10000000.0, "rope_scaling": None,
                        "attention_multiplier": 0.0078125, "vocab_size": 49155}, None, 128, 131072),
    # CohereForAI/c4ai-command-r-v01 (adjacent pairs)
    "command-r": ({"model_type": "cohere", "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 64,
                   "intermediate_size": 22528, "num_hidden_layers": 40, "max_position_embeddings": 131072,
                   "rope_theta": 8000000.0, "use_qk_norm": False, "logit_scale": 0.0625, "vocab_size": 256000},
                  None, 128, 131072),
    # deepseek-ai/DeepSeek-V2-Lite (MLA: a 64-wide rotary head; YaRN x40 with mscale 0.707 / 0.707)
    "deepseek-v2-lite": ({"model_type": "deepseek_v2", "hidden_size": 2048, "num_attention_heads": 16,
                          "num_key_value_heads": 16, "intermediate_size": 10944, "num_hidden_layers": 27,
                          "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                          "v_head_dim": 128, "max_position_embeddings": 163840, "rope_theta": 10000,
                          "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                                           "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                                           "type": "yarn"},
                          "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
                          "num_experts_per_tok": 6, "first_k_dense_replace": 1, "vocab_size": 102400},
                         None, 128, 163840),
    # deepseek-ai/DeepSeek-V3 (the shipped copy of its config.json)
    "deepseek-v3": (_hub("deepseek-v3"), None, 128, 163840),
    # openai/gpt-oss-20b (the shipped copy: YaRN x32, truncate false)
    "gpt-oss-20b": (_hub("gpt-oss-20b"), "full_attention", 128, 131072),
    # a dynamic-NTK Llama (rope_scaling as transformers' docs write it)
    "llama-dynamic": (_llama(max_position_embeddings=4096, rope_theta=10000.0,
                             rope_scaling={"type": "dynamic", "factor": 4.0}), None, 128, 16384),
    # lmsys/longchat-7b-16k-style linear interpolation (Llama, factor 8 from 2,048)
    "llama-linear": (_llama(max_position_embeddings=16384, rope_theta=10000.0,
                            rope_scaling={"type": "linear", "factor": 8.0}), None, 128, 16384),
    # transformers 5: a single rope_parameters block (Llama 3.1 as v5 saves it)
    "v5-llama-3.1": (_llama(num_key_value_heads=8, max_position_embeddings=131072,
                            rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                             "original_max_position_embeddings": 8192}), None, 128, 131072),
    # transformers 5: a single default block
    "v5-default": (_llama(max_position_embeddings=4096, rope_parameters={"rope_type": "default",
                                                                         "rope_theta": 10000.0}), None, 128, 4096),
    # transformers 5: Gemma 3 as v5 saves it, one block per kind of layer
    "v5-gemma3-full": ({**{k: val for k, val in _GEMMA3_1B.items() if k not in ("rope_theta", "rope_local_base_freq",
                                                                                 "rope_scaling")},
                        "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 4 + ["sliding_attention"] * 2,
                        "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0,
                                                               "rope_theta": 1000000.0},
                                            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}},
                       "full_attention", 128, 32768),
    "v5-gemma3-sliding": ({**{k: val for k, val in _GEMMA3_1B.items() if k not in ("rope_theta",
                                                                                    "rope_local_base_freq",
                                                                                    "rope_scaling")},
                           "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 4
                           + ["sliding_attention"] * 2,
                           "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0,
                                                                  "rope_theta": 1000000.0},
                                               "sliding_attention": {"rope_type": "default",
                                                                     "rope_theta": 10000.0}}},
                          "sliding_attention", 128, 32768),
}

# openbmb/MiniCPM3-4B: MLA with a 32-wide rotary head and a LongRoPE block of 16-entry lists whose
# values we cannot quote here (the structure is the hub's: original 32,768 = max 32,768)
if "minicpm3" in CONFIG_MAPPING_NAMES:
    CASES["minicpm3-4b"] = ({"model_type": "minicpm3", "hidden_size": 2560, "num_attention_heads": 40,
                             "num_key_value_heads": 40, "intermediate_size": 6400, "num_hidden_layers": 62,
                             "q_lora_rank": 768, "kv_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32,
                             "max_position_embeddings": 32768, "rope_theta": 10000.0,
                             "rope_scaling": {"type": "longrope", "original_max_position_embeddings": 32768,
                                              "short_factor": [1.0 + 0.05 * i for i in range(16)],
                                              "long_factor": [1.0 + 0.5 * i for i in range(16)]},
                             "vocab_size": 73448}, None, 128, 32768)


# ------------------------------------------------------------------ transformers' side
def _module(model_type: str):
    name = model_type_to_module_name(model_type)
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


def _rotary_class(mod, model_type):
    found = [c for n, c in vars(mod).items() if isinstance(c, type) and n.endswith("RotaryEmbedding")
             and "vision" not in n.lower()]
    assert found, f"no rotary module in {mod.__name__}"
    return min(found, key=lambda c: len(c.__name__))


def hf_config(cfg: dict):
    cfg = copy.deepcopy(cfg)
    cfg.pop("_name_or_path", None)
    return AutoConfig.for_model(cfg.pop("model_type"), **cfg)


def hf_rope(cfg: dict, seq_len: int, layer_type: str | None = None) -> tuple[np.ndarray, float]:
    """``(inv_freq, attention_scaling)`` of the model's rotary module after a forward pass of ``seq_len`` tokens."""
    config = hf_config(cfg)
    mod = _module(cfg["model_type"])
    rotary = _rotary_class(mod, cfg["model_type"])(config)
    if hasattr(rotary, "embed_positions"):  # GPT-J: a sin/cos table; the angle at position 1 is the frequency
        sin, cos = torch.split(rotary.embed_positions[1].double(), rotary.embed_positions.shape[-1] // 2)
        return torch.atan2(sin, cos).numpy(), 1.0
    x = torch.zeros(1, 1, 8, dtype=torch.float32)
    pos = torch.tensor([[0, seq_len - 1]])
    per_kind = isinstance(getattr(rotary, "rope_type", None), dict)
    with torch.no_grad():
        if per_kind:
            kind = layer_type or "full_attention"
            rotary(x, pos, kind)
            return (getattr(rotary, f"{kind}_inv_freq").double().numpy(),
                    float(getattr(rotary, f"{kind}_attention_scaling")))
        rotary(x, pos)
    return rotary.inv_freq.double().numpy(), float(rotary.attention_scaling)


# ------------------------------------------------------------------ the comparisons
@pytest.mark.parametrize("case", sorted(CASES))
def test_frequencies_and_attention_factor_match_transformers(case):
    cfg, layer_type, short, long = CASES[case]
    m = read_config(copy.deepcopy(cfg), layer_type=layer_type)
    for L in (short, long):
        inv, att = hf_rope(cfg, L, layer_type)
        assert m.rotary_dim == 2 * inv.size, f"{case}: rotary width {m.rotary_dim} vs transformers {2 * inv.size}"
        np.testing.assert_allclose(m.theta_at(L), inv, rtol=RTOL, atol=0, err_msg=f"{case} at L={L}")
        assert m.attention_at(L) == pytest.approx(att, rel=1e-6), f"{case} at L={L}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_pairing_and_head_width_match_transformers(case):
    cfg, layer_type, _, _ = CASES[case]
    m = read_config(copy.deepcopy(cfg), layer_type=layer_type)
    config = hf_config(cfg)
    assert m.pairing == PAIRING_BY_MODEL_TYPE[cfg["model_type"]]
    if getattr(config, "qk_rope_head_dim", None):
        head = config.qk_rope_head_dim
    elif cfg["model_type"] == "gptj":
        head = config.n_embd // config.n_head
    else:
        head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    assert m.head_dim == head


@pytest.mark.parametrize("case", ["deepseek-v2-lite", "deepseek-v3"])
def test_deepseek_softmax_scale_matches_the_attention_module(case):
    cfg = CASES[case][0]
    config = hf_config(cfg)
    mod = _module(cfg["model_type"])
    # the attention module's scaling is yarn_apply_mscale(rope_parameters, qk_head_dim ** -0.5)
    extra = mod.yarn_apply_mscale(config.rope_parameters, 1.0)
    assert read_config(copy.deepcopy(cfg)).logit_scale == pytest.approx(extra, rel=1e-12)


@pytest.mark.parametrize("case", ["mistral-7b-v0.1", "gemma-2-9b-full", "qwen2.5-7b", "phi-3-mini-4k"])
def test_sliding_window_as_the_model_uses_it(case):
    cfg, layer_type, _, _ = CASES[case]
    config = hf_config(cfg)
    m = read_config(copy.deepcopy(cfg), layer_type=layer_type)
    if layer_type == "full_attention" or getattr(config, "use_sliding_window", True) is False:
        assert m.sliding_window is None
    else:
        assert m.sliding_window == config.sliding_window


def test_gemma2_sliding_layers_read_the_window():
    cfg = CASES["gemma-2-9b-full"][0]
    m = read_config(copy.deepcopy(cfg), layer_type="sliding_attention")
    assert m.sliding_window == hf_config(cfg).sliding_window == 4096
    np.testing.assert_allclose(m.theta_at(128), hf_rope(cfg, 128)[0], rtol=RTOL)


_GEMMA4 = {"model_type": "gemma4_text", "head_dim": 256, "global_head_dim": 512, "hidden_size": 2560,
           "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": 12, "intermediate_size": 4096,
           "max_position_embeddings": 131072, "sliding_window": 512, "vocab_size": 1024,
           "rope_parameters": {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                  "rope_theta": 1e6},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}


@pytest.mark.parametrize("kind", ["full_attention", "sliding_attention"])
def test_proportional_rule_matches_gemma4(kind):
    # Gemma 4's rotary module builds head_dim / 2 frequencies; the proportional rule leaves the slow ones at 0
    m = read_config(copy.deepcopy(_GEMMA4), layer_type=kind)
    inv, att = hf_rope(_GEMMA4, 128, kind)
    rotating = inv[inv > 0]
    assert m.head_dim == 2 * inv.size and m.rotary_dim == 2 * rotating.size and att == 1.0
    assert np.all(inv[rotating.size:] == 0)  # the rotating pairs are the fastest ones, first
    np.testing.assert_allclose(m.theta_at(), rotating, rtol=RTOL)
    assert m.pairing == "half" and m.pairing == PAIRING_BY_MODEL_TYPE["gemma4_text"]
    mod = _module("gemma4_text")
    x = torch.eye(m.head_dim)[:1].reshape(1, 1, 1, -1)  # e_0 turns into e_(D/2): rotate_half
    cos, sin = torch.cos(torch.ones(1, 1, m.head_dim)), torch.sin(torch.ones(1, 1, m.head_dim))
    out = mod.apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=2).reshape(-1)
    assert abs(float(out[m.head_dim // 2])) > 0.5


@pytest.mark.parametrize("cfg", [
    {"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_hidden_layers": 28,
     "max_position_embeddings": 32768, "rope_theta": 1e6, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
    {"model_type": "qwen3_vl_text", "head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32,
     "num_hidden_layers": 36, "max_position_embeddings": 262144,
     "rope_parameters": {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20], "mrope_interleaved": True}},
], ids=["qwen2-vl", "qwen3-vl"])
def test_mrope_text_frequencies_match_transformers(cfg):
    m = read_config(copy.deepcopy(cfg))
    config = hf_config(cfg)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    mod = _module(cfg["model_type"])
    rot = [c for n, c in vars(mod).items() if isinstance(c, type) and n.endswith("RotaryEmbedding")
           and "vision" not in n.lower()]
    rotary = min(rot, key=lambda c: len(c.__name__))(text)
    np.testing.assert_allclose(m.theta_at(), rotary.inv_freq.double().numpy(), rtol=RTOL)
    # text tokens: the three position streams are equal, so cos equals the 1D table
    pos = torch.arange(7)[None].expand(3, 1, 7)
    cos, _ = rotary(torch.zeros(1, 7, 8), pos)
    want = np.cos(np.arange(7)[:, None] * m.theta_at()[None, :])
    np.testing.assert_allclose(cos[0].double().numpy()[:, :m.pairs], want, rtol=1e-5, atol=1e-6)


def test_llama4_nope_and_chunked_layers_match_the_config_class():
    from ropegeo.models.manifest import read_layer_kinds

    cfg = {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
           "num_hidden_layers": 48, "max_position_embeddings": 10485760, "rope_theta": 500000.0,
           "attention_chunk_size": 8192, "no_rope_layers": []}
    config = hf_config(cfg)
    kinds = {k.kind: k for k in read_layer_kinds(copy.deepcopy(cfg))}
    nope = tuple(i for i, r in enumerate(config.no_rope_layers) if not r)
    assert kinds["full_attention"].layers == nope and not kinds["full_attention"].position_signal
    chunked = tuple(i for i, t in enumerate(config.layer_types) if t == "chunked_attention")
    assert kinds["chunked_attention"].layers == chunked
    assert kinds["chunked_attention"].manifest.sliding_window == config.attention_chunk_size


@pytest.mark.parametrize("model_type, extra", [
    ("cohere2", {"sliding_window": 4096, "sliding_window_pattern": 4}),
    ("qwen2", {"sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 28}),
    ("qwen2", {"sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 20}),
    ("qwen2_moe", {"sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 20}),
])
def test_layer_kinds_match_the_config_class(model_type, extra):
    from ropegeo.models.manifest import read_layer_kinds

    cfg = {"model_type": model_type, "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 28,
           "max_position_embeddings": 32768, "rope_theta": 1e4, **extra}
    config = hf_config(cfg)
    kinds = read_layer_kinds(copy.deepcopy(cfg))
    want = {}
    for i, t in enumerate(config.layer_types):
        want.setdefault(t, []).append(i)
    if len(want) == 1:
        assert len(kinds) == 1 and kinds[0].manifest.sliding_window is None
        return
    assert {k.kind: list(k.layers) for k in kinds} == want
    for k in kinds:  # cohere2: RoPE only where the window is (Cohere2Attention applies it if sliding_window)
        assert k.position_signal == (model_type != "cohere2" or k.kind == "sliding_attention")


def test_falcon_context_is_the_class_default():
    cfg = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "alibi": False}
    assert read_config(copy.deepcopy(cfg)).max_position_embeddings == hf_config(cfg).max_position_embeddings


def test_alibi_falcon_has_no_rotary_module():
    cfg = {"model_type": "falcon", "hidden_size": 256, "num_attention_heads": 4, "alibi": True}
    assert hf_config(cfg).alibi is True
    with pytest.raises(ConfigError, match="ALiBi"):
        read_config(cfg)


def test_yarn_attention_factor_at_float32_ln():
    # the factor transformers returns is a python float: ropegeo's must agree to float64, not float32
    cfg = CASES["qwen2.5-7b-yarn"][0]
    _, att = hf_rope(cfg, 128)
    assert read_config(copy.deepcopy(cfg)).attention_at() == pytest.approx(att, rel=1e-12)
    assert att == pytest.approx(0.1 * math.log(4.0) + 1.0, rel=1e-12)
