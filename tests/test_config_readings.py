"""Real configurations read as their models use them, or refused by name.

Every expected value here is written out by hand from the model's published configuration and
from transformers' modeling code (its YaRN ``get_mscale``, DeepSeek's softmax scale, GPT-J's
``rotate_every_two``), never copied from ropegeo's output.
"""

from __future__ import annotations

import json
import math
import re
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from ropegeo.models.manifest import ConfigError, load_model, model_record, read_config, read_layer_kinds

DEEPSEEK_V3 = model_record("deepseek-v3")["config"]


def _yarn_by_hand(dim, base, factor, orig, beta_fast=32.0, beta_slow=1.0, truncate=True):
    """YaRN's per-pair frequencies, from the formula in transformers' _compute_yarn_parameters."""
    def corr(rot):
        return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))
    low, high = corr(beta_fast), corr(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    out = []
    for i in range(dim // 2):
        t = base ** (-2 * i / dim)
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        extrapolation = 1.0 - ramp
        out.append(t * extrapolation + (t / factor) * (1.0 - extrapolation))
    return np.array(out)


# ------------------------------------------------------------------ DeepSeek-V3 (MLA)
def test_deepseek_v3_reads_the_rotary_head_not_hidden_over_heads():
    m = load_model("deepseek-v3")
    assert 7168 // 128 == 56  # what a reader that ignores qk_rope_head_dim would audit
    assert (m.head_dim, m.rotary_dim, m.pairing) == (64, 64, "interleaved")
    assert (m.max_position_embeddings, m.train_length, m.target_length) == (163_840, 4096, 163_840)
    assert any("qk_nope_head_dim" in n for n in m.notes)


def test_deepseek_v3_yarn_frequencies_by_hand():
    m = load_model("deepseek-v3")
    np.testing.assert_allclose(m.theta_at(), _yarn_by_hand(64, 10_000.0, 40.0, 4096), rtol=1e-13)


def test_deepseek_mscale_handling_by_hand():
    # cos/sin factor: get_mscale(40, mscale) / get_mscale(40, mscale_all_dim), both 1.0 in V3
    m = load_model("deepseek-v3")
    assert m.attention_at() == 1.0
    # softmax scale: DeepseekV3Attention multiplies qk_head_dim ** -0.5 by mscale(40, mscale_all_dim) ** 2
    assert m.logit_scale == pytest.approx((0.1 * 1.0 * math.log(40) + 1.0) ** 2, rel=1e-15)
    # DeepSeek-V2-style values: mscale 0.707, mscale_all_dim 1.0 (the ratio is no longer 1)
    cfg = {**DEEPSEEK_V3, "rope_scaling": {**DEEPSEEK_V3["rope_scaling"], "mscale": 0.707}}
    m2 = read_config(cfg)
    want = (0.1 * 0.707 * math.log(40) + 1.0) / (0.1 * 1.0 * math.log(40) + 1.0)
    assert m2.attention_at() == pytest.approx(want, rel=1e-14)
    # without mscale_all_dim transformers leaves the softmax scale alone
    rs = {k: val for k, val in DEEPSEEK_V3["rope_scaling"].items() if k not in ("mscale", "mscale_all_dim")}
    m3 = read_config({**DEEPSEEK_V3, "rope_scaling": rs})
    assert m3.logit_scale == 1.0 and m3.attention_at() == pytest.approx(0.1 * math.log(40) + 1.0, rel=1e-14)


def test_deepseek_rope_interleave_false_is_half_split():
    assert read_config({**DEEPSEEK_V3, "rope_interleave": False}).pairing == "half"
    with pytest.raises(ConfigError, match="rope_interleave must be true or false"):
        read_config({**DEEPSEEK_V3, "rope_interleave": "yes"})


# ------------------------------------------------------------------ GPT-J
def test_gpt_j_fields():
    m = load_model("gpt-j-6b")
    assert (m.head_dim, m.rotary_dim, m.pairing, m.max_position_embeddings) == (4096 // 16, 64, "interleaved", 2048)
    np.testing.assert_allclose(m.theta_at(), [10_000.0 ** (-2 * i / 64) for i in range(32)], rtol=1e-15)


def test_rotary_dim_must_be_even():
    gptj = model_record("gpt-j-6b")["config"]
    assert read_config({**gptj, "partial_rotary_factor": 0.25}).rotary_dim == 64  # 256 * 0.25 = 64
    with pytest.raises(ConfigError, match="rotary_dim must be even"):
        read_config({**gptj, "rotary_dim": 63})


# ------------------------------------------------------------------ pairing by model type
@pytest.mark.parametrize("model_type,pairing", [
    ("gptj", "interleaved"), ("glm", "interleaved"), ("chatglm", "interleaved"), ("deepseek_v2", "interleaved"),
    ("llama", "half"), ("mistral", "half"), ("gpt_neox", "half"), ("qwen2", "half"), ("gpt_oss", "half"),
    # Cohere's rotate_half takes x[..., ::2] and x[..., 1::2] (adjacent pairs), unlike Llama's; Llama 4
    # and ERNIE 4.5 multiply adjacent pairs as complex numbers or interleave them too
    ("cohere", "interleaved"), ("cohere2", "interleaved"), ("llama4_text", "interleaved"),
    ("ernie4_5", "interleaved"), ("deepseek_v3", "interleaved"), ("gemma3_text", "half"), ("glm4_moe", "half"),
])
def test_pairing_follows_the_model_type(model_type, pairing):
    # Llama 4's layers differ (chunked RoPE layers, NoPE layers), as Gemma 3's (one rope block per layer kind
    # in Gemma3TextConfig): one kind is read
    kind = {"llama4_text": "chunked_attention", "gemma3_text": "full_attention",
            "gpt_oss": "full_attention"}.get(model_type)  # GptOssConfig: sliding and full layers, class window 128
    m = read_config({"model_type": model_type, "hidden_size": 512, "num_attention_heads": 8, "rope_theta": 1e4},
                    layer_type=kind)
    assert m.pairing == pairing and not any("pairing" in n for n in m.notes)  # other notes: class defaults


def test_the_pairing_table_is_read_from_the_pinned_transformers():
    # the table records the transformers release its pairings were read from; make test-torch
    # installs that release and tests/with_torch/test_pairing_table.py re-derives the table from it
    table = json.loads((files("ropegeo") / "data" / "tables" / "pairing_by_model_type.json").read_text())
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    assert f"TRANSFORMERS_VERSION := {table['transformers']}" in makefile
    assert set(table["pairing"].values()) == {"interleaved", "half"}
    assert len(table["pairing"]) > 100


def test_unknown_model_type_is_an_inference_stated_in_the_notes():
    m = read_config({"model_type": "brand_new", "hidden_size": 512, "num_attention_heads": 8, "rope_theta": 1e4})
    assert m.pairing == "half" and "pairing assumed half-split" in m.notes[0] and "brand_new" in m.notes[0]
    assert "pairing assumed" in m.table()


# ------------------------------------------------------------------ two rulers: Gemma 2 / 3, gpt-oss
GEMMA3_27B_TEXT = {  # google/gemma-3-27b-it's text_config (transformers 4.51 dump), RoPE fields
    "model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376, "num_attention_heads": 32,
    "max_position_embeddings": 131_072, "rope_local_base_freq": 10_000, "rope_theta": 1_000_000,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024, "sliding_window_pattern": 6,
}


def test_gemma3_has_two_rulers_one_per_kind_of_layer():
    with pytest.raises(ConfigError, match="2 kinds of layer") as err:
        read_config(GEMMA3_27B_TEXT)
    for part in ("full_attention (base 1,000,000, no window)", "sliding_attention (base 10,000, window 1,024)",
                 "layer_type"):
        assert part in str(err.value)
    full = read_config(GEMMA3_27B_TEXT, layer_type="full_attention")
    local = read_config(GEMMA3_27B_TEXT, layer_type="sliding_attention")
    assert (full.base, full.scaling.rule, full.scaling.factor, full.sliding_window) == (1e6, "linear", 8.0, None)
    assert (local.base, local.scaling, local.sliding_window) == (1e4, None, 1024)
    theta = [1e6 ** (-2 * i / 128) / 8 for i in range(64)]
    np.testing.assert_allclose(full.theta_at(), theta, rtol=1e-14)
    np.testing.assert_allclose(local.theta_at(), [1e4 ** (-2 * i / 128) for i in range(64)], rtol=1e-14)


def test_shipped_gemma_reads_its_long_range_layers_and_says_so():
    m = load_model("gemma-3-1b-it")
    assert m.layer_type == "full_attention" and m.sliding_window is None and m.base == 1e6
    assert any("sliding_attention" in n for n in m.notes)
    local = load_model("gemma-3-1b-it", layer_type="sliding_attention")
    assert (local.base, local.sliding_window) == (1e4, 512)


def test_gemma2_alternates_windowed_and_full_layers_on_one_base():
    cfg = {"model_type": "gemma2", "head_dim": 256, "hidden_size": 3584, "num_attention_heads": 16,
           "max_position_embeddings": 8192, "rope_theta": 10_000.0, "sliding_window": 4096}
    full = read_config(cfg, layer_type="full_attention")
    local = read_config(cfg, layer_type="sliding_attention")
    assert full.base == local.base == 1e4 and (full.sliding_window, local.sliding_window) == (None, 4096)


def test_gpt_oss_truncate_false_and_windowed_layers():
    m = load_model("gpt-oss-20b")
    assert m.scaling.truncate is False and "truncate false" in m.scaling.describe()
    np.testing.assert_allclose(m.theta_at(), _yarn_by_hand(64, 150_000.0, 32.0, 4096, truncate=False), rtol=1e-13)
    # truncated ends would move the ramp: the two readings differ
    assert not np.allclose(m.theta_at(), _yarn_by_hand(64, 150_000.0, 32.0, 4096, truncate=True), rtol=1e-6)
    assert m.attention_at() == pytest.approx(0.1 * math.log(32) + 1.0, rel=1e-14)
    assert load_model("gpt-oss-20b", layer_type="sliding_attention").sliding_window == 128


# ------------------------------------------------------------------ one window for every layer
def test_mistral_window_and_qwen_switched_off_window():
    assert load_model("mistral-7b").sliding_window == 4096
    cfg = {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 32768,
           "rope_theta": 1e6, "sliding_window": 131_072, "use_sliding_window": False}
    m = read_config(cfg)
    assert m.sliding_window is None and "use_sliding_window false" in m.notes[0]


# ------------------------------------------------------------------ contradictions, refused by name
def test_original_length_above_maximum_is_refused():
    base = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096}
    with pytest.raises(ConfigError, match="^original_max_position_embeddings \\(8,192\\) is above "
                                          "max_position_embeddings \\(4,096\\)"):
        read_config({**base, "original_max_position_embeddings": 8192})
    with pytest.raises(ConfigError, match="rope_scaling.original_max_position_embeddings \\(8,192\\) is above"):
        read_config({**base, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                              "original_max_position_embeddings": 8192}})
    # equal lengths are fine (Qwen2.5's documented YaRN block)
    assert read_config({**base, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                 "original_max_position_embeddings": 4096}}).target_length == 16384


def test_yarn_beta_fast_below_beta_slow_is_refused():
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
           "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "beta_fast": 1.0, "beta_slow": 32.0}}
    with pytest.raises(ConfigError, match="rope_scaling.beta_fast \\(1\\) is below rope_scaling.beta_slow \\(32\\)"):
        read_config(cfg)
    from ropegeo.scaling import Scaling

    with pytest.raises(ValueError, match="beta_fast"):
        Scaling("yarn", factor=4.0, original_max_position_embeddings=4096, beta_fast=1.0, beta_slow=2.0)


# google/gemma-3-4b-it's config.json, the RoPE-relevant part as shipped: everything else is a class default
GEMMA3_4B = {"model_type": "gemma3", "_name_or_path": "google/gemma-3-4b-it",
             "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                             "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                             "sliding_window": 1024}}
# Qwen/Qwen3-VL-8B-Instruct's text_config (RoPE fields as shipped)
QWEN3_VL_8B = {"model_type": "qwen3_vl", "text_config": {
    "model_type": "qwen3_vl_text", "head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32,
    "num_key_value_heads": 8, "num_hidden_layers": 36, "max_position_embeddings": 262144, "rope_theta": 5000000,
    "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"}}}


def test_gemma3_4b_text_config_read_as_the_text_class_builds_it():
    kinds = {k.kind: k for k in read_layer_kinds(GEMMA3_4B)}
    # Gemma3TextConfig: sliding_window_pattern 6, layer i full iff (i + 1) % 6 == 0
    assert kinds["full_attention"].layers == tuple(i for i in range(34) if (i + 1) % 6 == 0) == (5, 11, 17, 23, 29)
    full, sliding = kinds["full_attention"].manifest, kinds["sliding_attention"].manifest
    assert (full.head_dim, full.base, full.sliding_window, full.scaling.rule, full.scaling.factor) == \
        (256, 1e6, None, "linear", 8.0)
    assert (sliding.head_dim, sliding.base, sliding.sliding_window, sliding.scaling) == (256, 1e4, 1024, None)
    # the full layers' frequencies: linear x8 of the plain schedule at base 1e6 over a 256-wide head
    np.testing.assert_allclose(full.theta_at(), 1e6 ** (-np.arange(0, 256, 2) / 256) / 8, rtol=1e-12)
    np.testing.assert_allclose(sliding.theta_at(), 1e4 ** (-np.arange(0, 256, 2) / 256), rtol=1e-12)
    assert any("gemma3_text's configuration class" in n and "text_config" in n for n in full.notes)
    # the same block as a text model's own config.json reads the same
    alone = read_config(GEMMA3_4B["text_config"], layer_type="full_attention")
    assert alone.theta_at().tolist() == full.theta_at().tolist()
    # the 27B block states rope_local_base_freq and rope_theta: they win over the class defaults
    g27 = read_config({"model_type": "gemma3", "text_config": {**GEMMA3_27B_TEXT, "rope_local_base_freq": 2e4}},
                      layer_type="sliding_attention")
    assert (g27.base, g27.head_dim, g27.scaling) == (2e4, 128, None)


def test_qwen3_vl_and_llama4_wrappers_are_read():
    m = read_config(QWEN3_VL_8B)
    assert (m.base, m.head_dim, m.sections, m.round_robin, m.max_position_embeddings) == \
        (5e6, 128, (24, 20, 20), True, 262144)
    from ropegeo.models.manifest import model_record

    scout = model_record("llama-4-scout-17b-16e-instruct")["config"]
    wrapped = read_config({"model_type": "llama4", "text_config": {k: v for k, v in scout.items()
                                                                   if k != "model_type"}})
    assert (wrapped.layer_type, wrapped.sliding_window, wrapped.scaling.rule) == ("chunked_attention", 8192, "llama3")
    assert wrapped.theta_at().tolist() == load_model("llama-4-scout-17b-16e-instruct").theta_at().tolist()


@pytest.mark.parametrize("text", ["gemma3_text", 5, ["x"]])
def test_text_config_that_is_not_a_block_is_refused_by_name(text):
    with pytest.raises(ConfigError, match="^text_config must be an object"):
        read_config({"model_type": "gemma3", "text_config": text})
    with pytest.raises(ConfigError, match="^text_config: ropegeo does not know"):
        read_config({"model_type": "made_up", "text_config": {"rope_theta": 1e4}})


# ------------------------------------------------------------------ citations
@pytest.mark.parametrize("name", ["deepseek-v3", "gemma-3-1b-it", "gpt-j-6b", "gpt-oss-20b", "llama-3.1-8b",
                                  "llama-2-7b", "mistral-7b", "qwen2.5-7b-instruct", "gpt-neox-20b",
                                  "phi-3-mini-128k-instruct", "phi-3-vision-128k-instruct", "phi-3.5-mini-instruct",
                                  "gemma-3-4b-it", "qwen3-vl-8b-instruct"])
def test_records_cite_the_hub_config_at_a_named_commit(name):
    rec = model_record(name)
    assert "code index id" not in json_text(rec)
    rev = rec["revision"]
    # every shipped record names a commit: a branch such as main can move under the reader
    assert isinstance(rev, str) and len(rev) == 40 and set(rev) <= set("0123456789abcdef"), rev
    assert rec["source"] == f"https://huggingface.co/{rec['model']}/blob/{rev}/config.json"
    assert rec["revision_note"] and rec["read_from"]
    # the note says how the revision was found and what was (not) checked at it
    assert "commit" in rec["revision_note"]


def json_text(rec) -> str:
    import json

    return json.dumps(rec)


# ------------------------------------------------------------------ found by tests/with_torch/test_config_vs_transformers.py
def _llama_cfg(**kw):
    return {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, **kw}


def test_llama4_equal_band_factors_are_read_as_transformers_computes_them():
    # meta-llama/Llama-4-Scout-17B-16E: low_freq_factor == high_freq_factor == 1, no blended band;
    # transformers divides the pairs with wavelength above 8,192 by 16 and keeps the others
    m = read_config({"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
                     "max_position_embeddings": 10485760, "rope_theta": 500000.0,
                     "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                                      "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
                    layer_type="chunked_attention")
    plain = 500000.0 ** (-np.arange(0, 128, 2) / 128)
    want = np.where(2 * np.pi / plain > 8192, plain / 16.0, plain)
    np.testing.assert_allclose(m.theta_at(), want, rtol=1e-13)


def test_rope_parameters_block_wins_over_top_level():
    # transformers 5 only fills the block's rope_theta / partial_rotary_factor from the top level when absent
    m = read_config(_llama_cfg(max_position_embeddings=4096, rope_theta=10000.0,
                               rope_parameters={"rope_type": "default", "rope_theta": 500000.0}))
    assert m.base == 500000.0
    m = read_config({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}})
    assert m.rotary_dim == int(80 * 0.5)


def test_top_level_original_length_overrides_the_block_for_yarn_and_llama3():
    m = read_config(_llama_cfg(max_position_embeddings=131072, original_max_position_embeddings=8192,
                               rope_theta=500000.0, rope_scaling={"rope_type": "yarn", "factor": 16.0,
                                                                  "original_max_position_embeddings": 4096}))
    assert m.scaling.original_max_position_embeddings == 8192
    np.testing.assert_allclose(m.theta_at(), _yarn_by_hand(128, 500000.0, 16.0, 8192), rtol=1e-13)
    m = read_config(_llama_cfg(max_position_embeddings=8192, rope_theta=500000.0,
                               rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                             "high_freq_factor": 4.0}))
    assert m.scaling.original_max_position_embeddings == 8192  # transformers 5: max_position_embeddings


def test_yarn_without_factor_is_refused_as_transformers_5_validates():
    with pytest.raises(ConfigError, match="rope_scaling.factor is required for yarn"):
        read_config(_llama_cfg(max_position_embeddings=131072, rope_theta=1e6,
                               rope_scaling={"rope_type": "yarn", "original_max_position_embeddings": 32768}))


def test_gptj_and_gpt_neox_ignore_a_top_level_rope_theta():
    # GPT-J's sinusoid table uses base 10,000; GPT-NeoX's config reads rotary_emb_base only
    m = read_config({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64, "rope_theta": 500000})
    assert m.base == 10_000.0 and any("ignored" in n for n in m.notes)
    m = read_config({"model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16, "rotary_pct": 0.25,
                     "rotary_emb_base": 10000, "rope_theta": 500000})
    assert m.base == 10_000.0 and any("ignored" in n for n in m.notes)


# ------------------------------------------------------------------ configuration-class defaults
@pytest.mark.parametrize("cfg,expect,said", [
    # Qwen3's class fixes head_dim 128 (hidden 1024 / 16 heads would give 64)
    ({"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "rope_theta": 1e6},
     {"head_dim": 128, "rotary_dim": 128, "base": 1e6}, "head_dim is not in the config"),
    # Mixtral's class defaults rope_theta to 1e6
    ({"model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32},
     {"head_dim": 128, "base": 1e6}, "states no rotary field"),
    # StableLM's class rotates a quarter of each head
    ({"model_type": "stablelm", "hidden_size": 2048, "num_attention_heads": 32, "rope_theta": 10000.0},
     {"head_dim": 64, "rotary_dim": 16}, "partial_rotary_factor is not in the config"),
    # gpt-oss's class carries its YaRN block
    ({"model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64},
     {"head_dim": 64, "base": 150_000.0}, "defaults are used (base 150,000, rule yarn)"),
])
def test_absent_fields_take_the_model_types_class_defaults(cfg, expect, said):
    # gpt-oss's class alternates sliding (window 128) and full layers: its full layers are read
    m = read_config(cfg, layer_type="full_attention" if cfg["model_type"] == "gpt_oss" else None)
    for key, value in expect.items():
        assert getattr(m, key) == value, key
    assert any(said in n for n in m.notes), m.notes
    if cfg["model_type"] == "gpt_oss":
        assert m.scaling.rule == "yarn" and m.scaling.factor == 32.0


def test_fields_the_config_states_are_never_replaced_by_class_defaults():
    m = read_config({"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "head_dim": 64,
                     "rope_theta": 10000.0})
    # the config states no context: Qwen3Config's 32,768 is filled, and said; nothing it states is replaced
    assert (m.head_dim, m.base, m.max_position_embeddings) == (64, 10000.0, 32768)
    assert m.notes == ("max_position_embeddings is not in the config: qwen3's configuration class "
                       "(transformers 5.24.0) defaults it to 32,768",)
    assert read_config({"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "head_dim": 64,
                        "rope_theta": 10000.0, "max_position_embeddings": 4096}).notes == ()
    table = json.loads((files("ropegeo") / "data" / "tables" / "defaults_by_model_type.json").read_text())
    pairing = json.loads((files("ropegeo") / "data" / "tables" / "pairing_by_model_type.json").read_text())
    assert table["transformers"] == pairing["transformers"]  # both read from the pinned release
    assert set(table["defaults"]) <= set(pairing["pairing"]) | {"gemma4_text"}  # Gemma 4: a layer-typed module


# ------------------------------------------------------------------ what transformers refuses, refused by name
_QWEN2_VL = {"model_type": "qwen2_vl", "hidden_size": 512, "num_attention_heads": 8}
_QWEN2_4 = {"model_type": "qwen2", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 4}


@pytest.mark.parametrize("cfg,message", [
    ({**_QWEN2_4, "layer_types": ["full_attention"] * 2}, "^layer_types lists 2 layers, but num_hidden_layers is 4"),
    ({**_QWEN2_4, "layer_types": ["full_attention"] * 5}, "^layer_types lists 5 layers, but num_hidden_layers is 4"),
    ({**_QWEN2_VL, "rope_scaling": {"type": "mrope", "mrope_section": {"t": 8}}},
     "^rope_scaling.mrope_section must list three positive integers"),
    ({**_QWEN2_VL, "rope_scaling": {"type": "mrope", "mrope_section": None}}, "^rope_scaling.mrope_section is null"),
    ({**_QWEN2_VL, "rope_scaling": {"type": "mrope", "mrope_section": [8, 8, 8]}},
     "^rope_scaling.mrope_section \\[8, 8, 8\\] sums to 24, not to the 32"),
    ({"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
      "rope_theta": 5e4, "sliding_window": None}, "^no kind of layer of this config has a rotary embedding"),
])
def test_configs_transformers_refuses_are_refused_by_name(cfg, message):
    with pytest.raises(ConfigError, match=message):
        read_config(cfg)


def test_the_same_fields_in_their_valid_form_are_read():  # the controls of the refusals above
    assert len(read_config({**_QWEN2_4, "layer_types": ["full_attention"] * 4}).theta_at()) == 32
    m = read_config({**_QWEN2_VL, "rope_scaling": {"type": "mrope", "mrope_section": [8, 12, 12]}})
    assert (m.sections, m.round_robin) == ((8, 12, 12), False)
    c = read_config({"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
                     "rope_theta": 5e4, "sliding_window": 4096})
    assert (c.layer_type, c.sliding_window, c.base) == ("sliding_attention", 4096, 5e4)  # the one kind that rotates


def test_an_absent_window_takes_the_class_default_and_a_null_stays_null():
    # Cohere2Config(sliding_window=4096) and sliding_window_pattern 4: layers 3, 7, .. are full attention, NoPE
    base = {"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 8,
            "rope_theta": 5e4}
    kinds = {k.kind: k for k in read_layer_kinds(base)}
    assert kinds["full_attention"].layers == (3, 7) and not kinds["full_attention"].position_signal
    m = kinds["sliding_attention"].manifest
    assert m.sliding_window == 4096 and any("sliding_window is not in the config" in n for n in m.notes)
    # Gemma4TextConfig(sliding_window=512)
    gemma4 = {"model_type": "gemma4_text", "hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
              "num_hidden_layers": 6}
    assert read_config(gemma4, layer_type="sliding_attention").sliding_window == 512
    # a window the config states is never replaced; a plain llama has no class window
    assert read_config({**gemma4, "sliding_window": 257}, layer_type="sliding_attention").sliding_window == 257
    assert read_config({"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8}).sliding_window is None


@pytest.mark.parametrize("model_type,said,interleaved", [
    ("qwen2_5_vl", True, False), ("qwen2_5_vl", None, False),  # Qwen2.5-VL's code splits blocks: the key is ignored
    ("qwen3_vl_text", False, True), ("qwen3_vl_text", None, True),  # Qwen3-VL's code always interleaves
    ("custom_vl", True, True), ("custom_vl", None, False),  # a type transformers does not know: the key decides
])
def test_mrope_layout_is_the_model_types_code(model_type, said, interleaved):
    block = {"rope_type": "default", "mrope_section": [24, 20, 20], **({} if said is None else {"mrope_interleaved": said})}
    m = read_config({"model_type": model_type, "hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 1e6,
                     "rope_scaling": block})
    assert (m.sections, m.round_robin) == ((24, 20, 20), interleaved)
    assert any("does not read it" in n for n in m.notes) == (said is not None and said != interleaved)


def test_fields_a_model_types_code_never_reads_are_ignored_with_a_note():
    # LlamaRotaryEmbedding builds head_dim / 2 frequencies whatever partial_rotary_factor says, and LlamaAttention
    # has no window (the table's "ignored", generated from transformers 5.24.0)
    llama = read_config({"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8,
                         "partial_rotary_factor": 0.5, "sliding_window": 64})
    assert (llama.rotary_dim, llama.sliding_window) == (128, None)
    assert sum("never reads it: ignored" in n for n in llama.notes) == 2
    # GPT-NeoX reads the factor only inside its rope block (the top-level key: its class's 0.25 applies)
    neox = {"model_type": "gpt_neox", "hidden_size": 1024, "num_attention_heads": 8}
    assert read_config({**neox, "partial_rotary_factor": 0.5}).rotary_dim == 32
    assert read_config({**neox, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                                                    "partial_rotary_factor": 0.5}}).rotary_dim == 64
    # controls: StableLM and Phi read the factor, Mistral the window; Qwen2's window is off unless switched on
    assert read_config({"model_type": "stablelm", "hidden_size": 1024, "num_attention_heads": 8,
                        "partial_rotary_factor": 0.5}).rotary_dim == 64
    assert read_config({"model_type": "mistral", "hidden_size": 1024, "num_attention_heads": 8,
                        "sliding_window": 64}).sliding_window == 64
    qwen2 = {"model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 8, "sliding_window": 64}
    assert read_config(qwen2).sliding_window is None
    assert read_config({**qwen2, "use_sliding_window": True}).sliding_window == 64


# ------------------------------------------------------------------ the corpus, against transformers' stored readings
# tests/config_corpus.py: every config.json and variant; tests/data/config_readings.json: what transformers 5.24.0 makes
# of each (scripts/make_config_readings.py; tests/with_torch/test_config_corpus.py re-derives it)
import config_corpus as corpus  # noqa: E402

STORED = corpus.stored()


def test_the_corpus_is_read_from_the_pinned_transformers_and_covers_the_families():
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    assert f"TRANSFORMERS_VERSION := {STORED['transformers']}" in makefile
    assert set(STORED["cases"]) == set(corpus.CASES) and len(corpus.CASES) >= 60
    types = {corpus.CASES[n]["config"].get("model_type") for n in corpus.CASES}
    assert len(types) >= 30, sorted(types)
    refused = [n for n, r in STORED["cases"].items() if "refused" in r]
    assert 5 <= len(refused) and all("refuse" in corpus.CASES[n] or "remote" in corpus.CASES[n] for n in refused)


@pytest.mark.parametrize("name", sorted(corpus.CASES))
def test_each_config_is_read_as_transformers_reads_it(name):
    case, want = corpus.CASES[name], STORED["cases"][name]
    rotating = "groups" in want and any(g["rotates"] for g in want["groups"])
    if "remote" in case:  # transformers' class refuses what the model's own code reads: ropegeo reads it so
        assert "refused" in want
        got = corpus.ropegeo_groups(corpus.config(name), corpus.lengths(case))
        assert corpus.disagreements(STORED["cases"][case["same_as"]], got) == []
    elif "refuse" in case:  # transformers refuses, or runs no rotary embedding: ropegeo refuses by name
        assert "refused" in want or not rotating, want
        with pytest.raises(ConfigError, match="^" + re.escape(case["refuse"])):
            corpus.ropegeo_groups(corpus.config(name), corpus.lengths(case))
    else:
        assert "refused" not in want, want
        assert corpus.disagreements(want, corpus.ropegeo_groups(corpus.config(name), corpus.lengths(case))) == []


def _changed(reading, **change):
    out = json.loads(json.dumps(reading))
    g = next(g for g in out["groups"] if g["rotates"])
    for key, val in change.items():
        g[key] = val(g[key]) if callable(val) else val
    return out


@pytest.mark.parametrize("name,change,words", [
    ("shipped:llama-3.1-8b", {"theta": lambda t: {n: [x * (1 + 1e-5) for x in v] for n, v in t.items()}}, "frequency"),
    ("shipped:gpt-oss-20b", {"attention": lambda a: {n: x * 1.001 for n, x in a.items()}}, "attention factor"),
    ("gemma4_text", {"pairing_width": 128}, "pairing_width"),
    ("shipped:mistral-7b", {"window": 4095}, "window"),
    ("shipped:gpt-j-6b", {"pairing": "half"}, "pairing"),
    ("shipped:qwen3-vl-8b-instruct", {"interleaved": False}, "interleaved"),
    ("google/gemma-2-9b", {"layers": [0, 2]}, "layers"),
    ("llama4_text-class-layers", {"rotates": False}, "rotates"),
])
def test_the_comparison_catches_a_changed_reading(name, change, words):
    # negative controls: the stored reading changed in one field; ropegeo's reading no longer agrees
    case = corpus.CASES[name]
    got = corpus.ropegeo_groups(corpus.config(name), corpus.lengths(case))
    assert corpus.disagreements(STORED["cases"][name], got) == []
    bad = corpus.disagreements(_changed(STORED["cases"][name], **change), got)
    assert bad and any(words in b for b in bad), bad


# ------------------------------------------------------------------ what the corpus found, by hand
def test_rotary_dim_is_read_only_where_the_model_types_code_reads_it():
    # transformers 5.24.0: GPT-J and CodeGen rotate rotary_dim coordinates (their table ignores partial_rotary_factor),
    # MiniMax-M2's class turns rotary_dim into partial_rotary_factor unless that is set, other types never read it
    gptj = model_record("gpt-j-6b")["config"]
    m = read_config({**gptj, "partial_rotary_factor": 0.5})
    assert m.rotary_dim == 64 and any("partial_rotary_factor ignored" in n for n in m.notes)
    minimax = {"model_type": "minimax_m2", "hidden_size": 3072, "num_attention_heads": 48, "head_dim": 128,
               "rope_theta": 5e6, "rotary_dim": 64}
    assert read_config(minimax).rotary_dim == 64
    assert read_config({**minimax, "partial_rotary_factor": 0.25}).rotary_dim == 32  # int(128 * 0.25)
    llama = read_config({"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8, "rotary_dim": 32})
    assert llama.rotary_dim == 128 and any("never reads it" in n for n in llama.notes)
    # a model type transformers does not know: both fields must agree
    with pytest.raises(ConfigError, match="rotary_dim \\(32\\) contradicts partial_rotary_factor"):
        read_config({"model_type": "made_up", "hidden_size": 1024, "num_attention_heads": 8, "rotary_dim": 32,
                     "partial_rotary_factor": 0.5})


@pytest.mark.parametrize("model_type,said,window", [
    ("gemma4_text", "all", 257), ("gemma4_text", "vision", 512), ("gemma4_text", None, 512),
    ("gemma3_text", True, 257), ("gemma3_text", False, 512),
])
def test_bidirectional_gemma_halves_its_window_as_its_class_does(model_type, said, window):
    # Gemma3TextConfig / Gemma4TextConfig.__post_init__: sliding_window = sliding_window // 2 + 1 ("all" for Gemma 4)
    cfg = {"model_type": model_type, "hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
           "num_hidden_layers": 6, "sliding_window": 512, **({} if said is None else
                                                               {"use_bidirectional_attention": said})}
    assert read_config(cfg, layer_type="sliding_attention").sliding_window == window
    absent = {k: v for k, v in cfg.items() if k != "sliding_window"}  # the class's 512 (Gemma 4) halved too
    if model_type == "gemma4_text":
        assert read_config(absent, layer_type="sliding_attention").sliding_window == window


# ------------------------------------------------------------------ Gate A on Gemma 4's own layout (numpy mirror)
def _gemma4_global(exponent_width=512, pair_across=512, width=512, turning=64):
    """Gemma 4's full-attention rotary as transformers runs it (numpy mirror of Gemma4TextRotaryEmbedding with the
    proportional rule and rotate_half): frequencies 1e6^(-2i/512) for the first 64 of 256 pairs, 0 for the others,
    cos/sin in float32; pairs (i, i + pair_across / 2)."""
    i = np.arange(pair_across // 2)
    inv = np.where(i < turning, 1e6 ** (-2.0 * i / exponent_width), 0.0).astype(np.float32)

    def f(x, p):
        x = np.asarray(x, np.float32)
        ang = np.asarray(p, np.float32)[..., None] * inv
        c, s = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))
        h = pair_across // 2
        head, rest = x[..., :pair_across], x[..., pair_across:]
        rot = np.concatenate([-head[..., h:], head[..., :h]], -1)
        return np.concatenate([head * c + rot * s, rest], -1).astype(np.float32)
    return f


def test_gemma4_global_layers_pass_gate_a_under_their_own_config_and_a_frequency_bug_is_named():
    from ropegeo.gates.a.gate import gate_a

    m = read_config(corpus.config("gemma4_text"), layer_type="full_attention")
    assert (m.head_dim, m.rotary_dim, m.pairing_width) == (512, 128, 512)
    r = gate_a(_gemma4_global(), manifest=m)
    assert r.passed, r.table()
    assert "across the 512-wide head, the first 64 turning" in r.check("layout").diagnosis
    # exponents over the 128 rotating coordinates instead of the whole head: a frequency defect, named as such
    bug = gate_a(_gemma4_global(exponent_width=128), manifest=m)
    assert bug.failed[0] == "frequencies" and bug.defects == ["frequency"], bug.table()
    # the same 64 frequencies laid out as a plain partial rotary (i, i + 64): not the model's layout
    moved = gate_a(_gemma4_global(pair_across=128), manifest=m)
    assert moved.failed[0] == "layout" and moved.defects[0] == "layout", moved.table()
