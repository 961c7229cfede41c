"""The manifest and the configuration reader: shipped models reproduce their documented fields,
malformed configurations are refused with the field named."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from ropegeo.frequencies import frequencies
from ropegeo.models.manifest import (
    POSITION_ID_POLICIES,
    ConfigError,
    RopeManifest,
    load_model,
    model_record,
    read_config,
    shipped_models,
)
from ropegeo.scaling import Scaling

# Documented values, written out by hand from the models' published configurations and papers.
DOCUMENTED = {
    "llama-2-7b": dict(base=10_000.0, head_dim=128, rotary_dim=128, ctx=4096, rule=None),
    "llama-3.1-8b": dict(base=500_000.0, head_dim=128, rotary_dim=128, ctx=131_072, rule="llama3"),
    "mistral-7b": dict(base=10_000.0, head_dim=128, rotary_dim=128, ctx=32_768, rule=None),
    "qwen2.5-7b-instruct": dict(base=1_000_000.0, head_dim=128, rotary_dim=128, ctx=32_768, rule="yarn"),
    "qwen2.5-vl-7b-instruct": dict(base=1_000_000.0, head_dim=128, rotary_dim=128, ctx=128_000, rule=None),
    "phi-3.5-mini-instruct": dict(base=10_000.0, head_dim=96, rotary_dim=96, ctx=131_072, rule="longrope"),
    "phi-3-vision-128k-instruct": dict(base=10_000.0, head_dim=96, rotary_dim=96, ctx=131_072, rule="longrope"),
    "phi-3-mini-128k-instruct": dict(base=10_000.0, head_dim=96, rotary_dim=96, ctx=131_072, rule="longrope"),
    "gpt-neox-20b": dict(base=10_000.0, head_dim=96, rotary_dim=24, ctx=2048, rule=None),
    # DeepSeek-V3: the rotary part of each head is qk_rope_head_dim = 64 wide (hidden 7168 / 128 heads
    # would give 56); YaRN x40 from 4,096; adjacent pairs (transformers' rope_interleave default)
    "deepseek-v3": dict(base=10_000.0, head_dim=64, rotary_dim=64, ctx=163_840, rule="yarn", pairing="interleaved"),
    # Gemma 3 1B, full-attention layers (the record's default): base 1e6, no rule, no window
    "gemma-3-1b-it": dict(base=1_000_000.0, head_dim=256, rotary_dim=256, ctx=32_768, rule=None),
    # GPT-J 6B: 4096 / 16 = 256-wide heads, 64 of them rotate, in adjacent pairs; n_positions 2048
    "gpt-j-6b": dict(base=10_000.0, head_dim=256, rotary_dim=64, ctx=2048, rule=None, pairing="interleaved"),
    # gpt-oss-20b, full-attention layers: base 150,000, YaRN x32 from 4,096 without truncation
    "gpt-oss-20b": dict(base=150_000.0, head_dim=64, rotary_dim=64, ctx=131_072, rule="yarn"),
    # Llama 4 Scout, its chunked RoPE layers (every 4th layer has none): base 500,000, Llama 3's rule
    # x16 from 8,192 with both band factors 1, 10,485,760 positions; adjacent pairs (complex products)
    "llama-4-scout-17b-16e-instruct": dict(base=500_000.0, head_dim=128, rotary_dim=128, ctx=10_485_760,
                                           rule="llama3", pairing="interleaved"),
    # Gemma 3 4B (a text_config wrapper), its full-attention layers: Gemma3TextConfig's base 1e6 and head 256,
    # the shipped linear x8, 131,072 positions
    "gemma-3-4b-it": dict(base=1e6, head_dim=256, rotary_dim=256, ctx=131_072, rule="linear"),
    # Qwen3-VL 8B (a text_config wrapper): base 5e6, 128-wide heads, interleaved M-RoPE over 64 pairs
    "qwen3-vl-8b-instruct": dict(base=5e6, head_dim=128, rotary_dim=128, ctx=262_144, rule=None),
}


def test_every_shipped_model_is_documented_here():
    assert set(shipped_models()) == set(DOCUMENTED)


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_shipped_models_reproduce_documented_fields(name):
    doc = DOCUMENTED[name]
    m = load_model(name)
    rec = model_record(name)
    assert rec["source"] and rec["read_on"] and rec["model"]
    assert m.source == rec["source"]
    assert m.base == doc["base"] and m.head_dim == doc["head_dim"] and m.rotary_dim == doc["rotary_dim"]
    assert m.max_position_embeddings == doc["ctx"]
    assert (m.scaling.rule if m.scaling else None) == doc["rule"]
    assert m.pairing == doc.get("pairing", "half") and m.phase_dtype == "float32"
    assert not any("pairing assumed" in n for n in m.notes)  # every record names its model_type
    assert m.theta_at().shape == (doc["rotary_dim"] // 2,)


def test_documented_scaling_parameters():
    ll = load_model("llama-3.1-8b").scaling
    assert (ll.factor, ll.low_freq_factor, ll.high_freq_factor, ll.original_max_position_embeddings) == (8, 1, 4, 8192)
    qw = load_model("qwen2.5-7b-instruct")
    assert (qw.scaling.factor, qw.scaling.original_max_position_embeddings) == (4.0, 32768)
    assert qw.target_length == 131_072  # Qwen's documentation: 4 x 32,768
    phi = load_model("phi-3.5-mini-instruct")
    assert phi.scaling.factor == 131_072 / 4096 and len(phi.scaling.long_factor) == 48
    assert phi.train_length == 4096
    # GPT-NeoX-20B: 6144 / 64 = 96 wide heads, a quarter of them rotary
    neox = load_model("gpt-neox-20b")
    np.testing.assert_allclose(neox.theta_at(), 10_000.0 ** (-np.arange(12) / 12), rtol=1e-15)


def test_case_insensitive_name_and_unknown_name():
    assert load_model("Llama-2-7B").base == 10_000.0
    with pytest.raises(ValueError, match="not a shipped model; known: .*llama-2-7b"):
        load_model("gpt-5")


def test_read_from_path(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(model_record("llama-3.1-8b")["config"]))
    m = read_config(p)
    assert m.scaling.rule == "llama3" and m.source == str(p)
    np.testing.assert_array_equal(m.theta_at(), load_model("llama-3.1-8b").theta_at())


def test_manifest_round_trip_and_table():
    for name in shipped_models():
        m = load_model(name)
        again = RopeManifest.from_dict(json.loads(m.to_json()))
        assert again == m
        np.testing.assert_array_equal(again.theta_at(10**6), m.theta_at(10**6))
        text = str(m)
        assert f"{m.base:,.6g}" in text and m.pairing in text


def test_manifest_defaults_and_fields():
    m = RopeManifest()
    assert (m.base, m.head_dim, m.rotary_dim, m.pairing, m.position_id_policy) == (10_000.0, 128, 128, "interleaved", "contiguous")
    assert m.scaling is None and m.cache_offset == 0 and m.phase_dtype == "float64"
    np.testing.assert_array_equal(m.theta_at(), frequencies(128))
    assert m.attention_at() == 1.0
    m2 = m.with_(scaling={"rule": "linear", "factor": 4}, position_id_policy="kv-cache", cache_offset=100)
    np.testing.assert_allclose(m2.theta_at(), frequencies(128) / 4)
    assert set(POSITION_ID_POLICIES) >= {"contiguous", "left-padded", "packed-reset", "packed-continuous", "kv-cache"}


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(base=1.0), "base must be greater than 1"),
        (dict(head_dim=7), "head_dim must be an even integer"),
        (dict(rotary_dim=200), "rotary_dim must be at most 128"),
        (dict(pairing="zigzag"), "pairing must be one of"),
        (dict(position_id_policy="random"), "position_id_policy must be one of"),
        (dict(cache_offset=-1), "cache_offset must be at least 0"),
        (dict(phase_dtype="int8"), "phase_dtype must be one of"),
        (dict(max_position_embeddings=0), "max_position_embeddings must be at least 1"),
        (dict(scaling="linear"), "scaling must be a ropegeo.scaling.Scaling"),
        (dict(scaling={"rule": "longrope", "factor": 2, "original_max_position_embeddings": 64,
                       "short_factor": [1.0] * 3, "long_factor": [1.0] * 3}), "one entry per rotary pair \\(64\\)"),
    ],
)
def test_manifest_refusals(kw, match):
    with pytest.raises(ValueError, match=match):
        RopeManifest(**kw)


# ------------------------------------------------------------------------------------------------
# the reader's rules
# ------------------------------------------------------------------------------------------------
BASE = {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096, "rope_theta": 10000.0}


def cfg(**kw):
    c = copy.deepcopy(BASE)
    c.update(kw)
    return c


@pytest.mark.parametrize(
    "head, prf, expected",
    [(80, 0.4, 32), (128, 0.3, 38), (64, 0.7, 44), (96, 0.25, 24), (128, 1.0, 128), (256, 0.5, 128)],
)
def test_partial_rotary_rounds_down_like_int(head, prf, expected):
    # int() truncation, computed here by hand: 0.3 * 128 = 38.4 -> 38, 0.7 * 64 = 44.8 -> 44
    m = read_config(cfg(head_dim=head, partial_rotary_factor=prf))
    assert m.rotary_dim == expected == int(head * prf)
    assert read_config(cfg(head_dim=head, rotary_pct=prf)).rotary_dim == expected


def test_head_dim_key_wins_over_hidden_size():
    assert read_config(cfg(head_dim=64)).head_dim == 64
    assert read_config(cfg(head_dim=None)).head_dim == 128


def test_rope_parameters_block_and_default_type():
    m = read_config({**BASE, "rope_theta": None, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}})
    assert m.base == 5e5 and m.scaling is None
    m = read_config({**BASE, "rope_parameters": {"rope_type": "linear", "factor": 2.0}})
    assert m.scaling.rule == "linear"


def test_ignored_keys_are_recorded():
    m = read_config(cfg(rope_scaling={"type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 2048}))
    # transformers' dynamic rule uses max_position_embeddings and never reads this key
    assert m.scaling.original_max_position_embeddings == 4096
    assert "original_max_position_embeddings" in m.scaling.ignored_keys
    m = read_config(cfg(rope_scaling={"type": "linear", "factor": 2.0, "finetuned": True}))
    assert m.scaling.ignored_keys == ("finetuned",)


def test_longrope_top_level_original_overrides_factor():
    rec = model_record("phi-3.5-mini-instruct")["config"]
    c = copy.deepcopy(rec)
    c["rope_scaling"]["factor"] = 2.0  # ignored: max / original wins when original is top-level
    m = read_config(c)
    assert m.scaling.factor == 32.0 and "factor" in m.scaling.ignored_keys


def test_longrope_su_alias():
    assert load_model("phi-3-vision-128k-instruct").scaling.rule == "longrope"


@pytest.mark.parametrize(
    "config, match",
    [
        (cfg(rope_scaling={"type": "warp", "factor": 2}), "rope_scaling.rope_type 'warp' is not a known rope type"),
        (cfg(rope_scaling={"factor": 2}), "rope_scaling.rope_type is missing"),
        (cfg(rope_scaling={"type": "linear"}), "rope_scaling.factor is required"),
        (cfg(rope_scaling={"type": "linear", "factor": 0}), "rope_scaling.factor must be greater than 0"),
        (cfg(rope_scaling={"type": "linear", "factor": -1.5}), "rope_scaling.factor must be greater than 0"),
        (cfg(rope_scaling={"type": "linear", "factor": "big"}), "rope_scaling.factor must be a finite number"),
        (cfg(rope_scaling={"type": "ntk", "factor": 2}), "'ntk' is not a known rope type"),
        (cfg(rope_scaling={"type": "yarn"}), "rope_scaling.factor is required for yarn"),
        (cfg(rope_scaling={"type": "llama3", "factor": 8, "low_freq_factor": 4, "high_freq_factor": 1,
                           "original_max_position_embeddings": 8192}), "high_freq_factor .* must not be below"),
        (cfg(rope_scaling={"type": "longrope", "short_factor": [1.0] * 64, "long_factor": [1.0] * 63, "factor": 2}),
         "rope_scaling.long_factor must have one entry per rotary pair \\(64\\), got 63"),
        (cfg(rope_scaling={"type": "longrope", "short_factor": [1.0] * 64}), "rope_scaling.long_factor is required"),
        (cfg(rope_scaling={"type": "longrope", "short_factor": "1,1", "long_factor": [1.0] * 64, "factor": 2}),
         "short_factor must be a list"),
        (cfg(rope_scaling={"type": "yarn", "factor": 4, "truncate": "yes"}), "rope_scaling.truncate must be true or false"),
        (cfg(rope_scaling=[1, 2]), "rope_scaling must be a dict or null"),
        ({"num_attention_heads": 32}, "hidden_size is missing"),
        (cfg(hidden_size=0), "hidden_size must be a positive integer"),
        (cfg(head_dim=63), "head_dim must be even"),
        (cfg(rope_theta=0.5), "rope_theta must be a finite number greater than 1"),
        (cfg(partial_rotary_factor=1.5), "partial_rotary_factor must be in \\(0, 1\\]"),
        (cfg(partial_rotary_factor=0), "partial_rotary_factor must be a finite number greater than 0"),
        (cfg(head_dim=100, partial_rotary_factor=0.33), "int\\(100 \\* 0.33\\) = 33 rotary coordinates"),
        (cfg(max_position_embeddings=-5), "max_position_embeddings must be a positive integer"),
        ([1, 2, 3], "config must be a dict"),
    ],
)
def test_malformed_configs_are_refused_naming_the_field(config, match):
    with pytest.raises(ConfigError, match=match):
        read_config(config)


def test_unreadable_paths(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="is not valid JSON"):
        read_config(bad)


def test_scaling_from_hf_none_and_default():
    assert Scaling.from_hf(None) is None
    assert Scaling.from_hf({"rope_type": "default"}) is None


# Phi-3-mini-128k-instruct: the full lists come from one copy (see the record's source); a second,
# independent copy of the same config.json quotes these entries, and its GGUF conversion stores the
# attention factor below. Written out by hand here from that second source.
PHI3_MINI_QUOTED = dict(
    long_head=[1.0700000524520874, 1.1200000047683716, 1.149999976158142, 1.4199999570846558,
               1.5699999332427979, 1.7999999523162842, 2.129999876022339, 2.129999876022339,
               3.009999990463257, 5.910000324249268, 6.950000286102295, 9.070000648498535,
               9.930000305175781, 10.710000038146973, 11.130000114440918, 14.609999656677246],
    long_tail=[64.12435150146484, 64.15435028076172, 64.19435119628906, 64.24435424804688,
               64.57435607910156, 64.69000244140625, 64.76000213623047],
    short_head=[1.1, 1.1, 1.1, 1.3000000000000003, 1.3500000000000003],
    short_tail=[2.799999999999998, 2.8999999999999977, 3.049999999999997],
    gguf_attn_factor=1.190238118171692,  # stored as float32
    gguf_rope_dims=96,
)


def test_phi3_mini_128k_agrees_with_the_second_source():
    q = PHI3_MINI_QUOTED
    sc = model_record("phi-3-mini-128k-instruct")["config"]["rope_scaling"]
    long, short = sc["long_factor"], sc["short_factor"]
    assert long[:16] == q["long_head"] and long[-7:] == q["long_tail"]
    assert short[:5] == q["short_head"] and short[-3:] == q["short_tail"]
    m = load_model("phi-3-mini-128k-instruct")
    assert m.rotary_dim == q["gguf_rope_dims"] and len(long) == len(short) == q["gguf_rope_dims"] // 2
    assert np.float32(m.attention_at()) == np.float32(q["gguf_attn_factor"])


def test_phi3_mini_128k_lists_are_well_formed():
    """Transcription checks: a mistyped digit would break one of these."""
    sc = model_record("phi-3-mini-128k-instruct")["config"]["rope_scaling"]
    long, short = np.array(sc["long_factor"]), np.array(sc["short_factor"])
    # the long factors were stored as float32 and printed as doubles: each is exactly a float32
    assert np.array_equal(long.astype(np.float32).astype(np.float64), long)
    # the short factors are sums of 0.05 steps in double precision: within rounding of a 0.05 grid
    np.testing.assert_allclose(short * 20, np.round(short * 20), atol=1e-12)
    # both searched profiles are non-decreasing from the fastest pair to the slowest
    assert np.all(np.diff(long) >= 0) and np.all(np.diff(short) >= 0)
    # and the lists are not a sibling's: Phi-3.5-mini and Phi-3-vision ship different searches
    for other in ("phi-3.5-mini-instruct", "phi-3-vision-128k-instruct"):
        o = model_record(other)["config"]["rope_scaling"]
        assert o["long_factor"] != sc["long_factor"] and o["short_factor"] != sc["short_factor"]


@pytest.mark.parametrize("patch, field", [
    ({"max_position_embeddings": 10**400}, "max_position_embeddings"),
    ({"rope_theta": 10**400}, "rope_theta"),
    ({"head_dim": 10**12}, "head_dim"),
    ({"hidden_size": 10**12, "num_attention_heads": 1}, "hidden_size // num_attention_heads"),
    ({"rope_scaling": {"rope_type": ["yarn"], "factor": 4.0}}, "rope_type"),
    ({"rope_scaling": {"rope_type": "linear", "factor": 10**400}}, "factor"),
    ({"rope_scaling": {"rope_type": "linear", "factor": 1e300}}, "factor"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 10**30}},
     "original_max_position_embeddings"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096,
                       "beta_fast": ""}}, "beta_fast"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096,
                       "beta_slow": False}}, "beta_slow"),
])
def test_extreme_and_mistyped_fields_are_refused_by_name(patch, field):
    cfg = {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 8192}
    cfg.update(patch)
    with pytest.raises(ConfigError, match=field):
        read_config(cfg)


def test_yarn_beta_zero_or_null_means_the_default_as_in_the_reference():
    # transformers reads `rope_scaling.get("beta_fast") or 32`: null and 0 give the default
    for val in (None, 0):
        cfg = {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 8192,
               "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048,
                                "beta_fast": val, "beta_slow": val}}
        sc = read_config(cfg).scaling
        assert (sc.beta_fast, sc.beta_slow) == (32.0, 1.0)


def test_unreadable_files_name_the_file(tmp_path):
    from ropegeo.models.manifest import resolve

    bad = tmp_path / "config.json"
    bad.write_bytes(b"\xff\xfe{ not utf-8")
    with pytest.raises(ConfigError, match="config.json.*not UTF-8"):
        read_config(bad)
    with pytest.raises(ConfigError, match="empty"):
        resolve("")
    with pytest.raises(ConfigError, match="empty"):
        read_config("  ")


def test_scaling_from_dict_rejects_wrong_containers():
    with pytest.raises(ValueError, match="short_factor"):
        Scaling.from_dict({"rule": "longrope", "factor": 4.0, "original_max_position_embeddings": 4096,
                           "short_factor": 5, "long_factor": [1.0]})
    with pytest.raises(ValueError, match="ignored_keys"):
        Scaling.from_dict({"rule": "linear", "factor": 2.0, "ignored_keys": 5})
    assert Scaling.from_dict({"rule": "linear", "factor": 2.0, "ignored_keys": None}).ignored_keys == ()


def test_per_layer_type_rope_parameters_are_refused_not_ignored():
    cfg = {"hidden_size": 4096, "num_attention_heads": 32,
           "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8, "rope_theta": 1e6},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
    with pytest.raises(ConfigError, match="2 kinds of layer: full_attention .*sliding_attention .*layer_type"):
        read_config(cfg)
    # one of those blocks on its own is read as usual, and layer_type picks the same block
    m = read_config({**cfg, "rope_parameters": cfg["rope_parameters"]["full_attention"]})
    assert m.base == 1e6 and m.scaling.rule == "linear" and m.scaling.factor == 8
    full = read_config(cfg, layer_type="full_attention")
    assert (full.base, full.scaling.factor) == (1e6, 8) and full.name.endswith("(full_attention)")
    np.testing.assert_array_equal(full.theta_at(), m.theta_at())
    sliding = read_config(cfg, layer_type="sliding_attention")
    assert sliding.base == 1e4 and sliding.scaling is None
    with pytest.raises(ConfigError, match="layer_type must be one of full_attention, sliding_attention"):
        read_config(cfg, layer_type="global")
    with pytest.raises(ConfigError, match="single kind of layer"):
        read_config({"hidden_size": 4096, "num_attention_heads": 32}, layer_type="full_attention")


def test_unbounded_or_pathological_files_are_refused(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    with pytest.raises(ConfigError, match="nests its JSON too deeply"):
        read_config(deep)
    big = tmp_path / "big.json"
    big.write_text(" " * (2 << 20))
    with pytest.raises(ConfigError, match="bytes"):
        read_config(big)
    with pytest.raises(ConfigError, match="_name_or_path must be a string"):
        read_config({"hidden_size": 4096, "num_attention_heads": 32, "_name_or_path": 42})


def test_the_chosen_layer_block_wins_and_conflicts_are_refused():
    cfg = {"hidden_size": 2048, "num_attention_heads": 16, "rope_theta": 1e6,
           "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
    assert read_config(cfg, layer_type="sliding_attention").base == 1e4  # not the top-level 1e6
    with pytest.raises(ConfigError, match="both rope_scaling and per-layer-type rope_parameters"):
        read_config({**cfg, "rope_scaling": {"rope_type": "linear", "factor": 8}}, layer_type="sliding_attention")
    for bad in ({"full_attention": {"rope_theta": 1e6}, "sliding_attention": None},
                {"full_attention": {"rope_theta": 1e6}, "rope_type": "default"}):
        with pytest.raises(ConfigError, match="rope_parameters mixes per-layer-type blocks"):
            read_config({**cfg, "rope_parameters": bad}, layer_type="full_attention")


def test_the_manifest_is_one_operator_and_its_context():
    import dataclasses

    from ropegeo.operator import RotaryOperator

    m = load_model("qwen2.5-vl-7b-instruct")  # M-RoPE: its sections live in the operator
    assert isinstance(m.operator, RotaryOperator) and m.sections == m.operator.sections is not None
    names = [f.name for f in dataclasses.fields(RopeManifest)]
    assert names.count("operator") == 1
    # no context field repeats the operator, under any name: changing every operator field leaves each
    # context field as it was, and each operator field reads back through the manifest by its own name
    changed = m.with_(base=123_456.0, head_dim=64, rotary_dim=32, pairing="interleaved", scaling=None,
                      phase_dtype="float64", sections=None, round_robin=False)
    for name in names:
        if name != "operator":
            assert getattr(changed, name) == getattr(m, name), name
    for f in dataclasses.fields(RotaryOperator):
        if hasattr(changed, f.name):
            assert getattr(changed, f.name) is getattr(changed.operator, f.name), f.name
    # no name of the operator means another thing on the manifest: none of its field names is a method there,
    # and the operator at a length is read by the operator's own method names
    assert not {f.name for f in dataclasses.fields(RotaryOperator) if callable(getattr(changed, f.name, None))}
    assert not hasattr(m, "theta") and not hasattr(m, "attention_factor")
    assert np.array_equal(m.theta_at(9000), m.operator.theta_at(9000))
    assert m.attention_at(9000) == m.operator.attention_at(9000)
    with pytest.raises(ValueError, match="not both"):
        RopeManifest(m.operator, base=10_000.0)


def test_shipped_wrappers_read_as_transformers_builds_their_text_model():
    # Gemma 3 4B: full layers (i + 1) % 6 == 0 at base 1e6 with linear x8; sliding layers base 1e4, window 1,024
    from ropegeo.models.manifest import layer_kinds

    kinds = {k.kind: k for k in layer_kinds("gemma-3-4b-it")}
    assert kinds["full_attention"].layers == tuple(i for i in range(34) if (i + 1) % 6 == 0)
    sliding = kinds["sliding_attention"].manifest
    assert (sliding.base, sliding.head_dim, sliding.sliding_window, sliding.scaling) == (1e4, 256, 1024, None)
    assert kinds["full_attention"].manifest.sliding_window is None
    # Qwen3-VL 8B: interleaved sections [24, 20, 20]
    q = load_model("qwen3-vl-8b-instruct")
    assert (q.sections, q.round_robin) == ((24, 20, 20), True)
    for name in ("gemma-3-4b-it", "qwen3-vl-8b-instruct"):
        rec = model_record(name)
        assert rec["revision"] in rec["source"] and len(rec["revision"]) == 40 and "text_config" in rec["config"]


def test_pairing_width_is_validated_and_round_trips():
    # Gemma 4's proportional RoPE: half-split pairs (i, i + 256) across a 512-wide head, 64 of them turning
    m = RopeManifest(head_dim=512, rotary_dim=128, base=1e6 ** 0.25, pairing="half", pairing_width=512)
    assert m.pairing_width == 512 and "i with i + 256" in m.table()
    assert RopeManifest.from_dict(m.to_dict()).pairing_width == 512
    assert RopeManifest(head_dim=64, rotary_dim=32, pairing_width=32).pairing_width is None  # the rotary dim: default
    for bad in (64, 514, 255, "512"):  # below the rotary dim, above the head, odd, not an integer
        with pytest.raises(ValueError, match="pairing_width"):
            RopeManifest(head_dim=512, rotary_dim=128, pairing="half", pairing_width=bad)
    with pytest.raises(ValueError, match="pairing_width"):  # adjacent pairs have no span to widen
        RopeManifest(head_dim=512, rotary_dim=128, pairing="interleaved", pairing_width=512)
