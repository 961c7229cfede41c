"""Issue 26's configurations: read as transformers 5.24 runs them, or refused by name, and the same
through every entry point (read_config, the layer-aware audit, report's audit(), gate-a's manifest,
and the three commands)."""

import json
from pathlib import Path

import numpy as np
import pytest

from ropegeo.gates.procedure import audit, geometry_audit
from ropegeo.cli import main
from ropegeo.gates.a.gate import gate_a
from ropegeo.gates.layers import layer_audit
from ropegeo.models.manifest import ConfigError, read_config, read_layer_kinds
from ropegeo.models.model_types import NOPE, layer_specs, refusal

QWEN2_VL = {"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_hidden_layers": 28,
            "max_position_embeddings": 32768, "rope_theta": 1e6, "sliding_window": 32768,
            "use_sliding_window": False, "max_window_layers": 28,
            "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
QWEN3_VL = {"model_type": "qwen3_vl_text", "head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32,
            "max_position_embeddings": 262144,
            "rope_parameters": {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20],
                                "mrope_interleaved": True}}
GEMMA4 = {"model_type": "gemma4_text", "head_dim": 256, "global_head_dim": 512, "hidden_size": 2560,
          "num_attention_heads": 8, "num_hidden_layers": 12, "max_position_embeddings": 131072, "sliding_window": 512,
          "rope_parameters": {"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                 "rope_theta": 1e6},
                              "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
SCOUT_TEXT = {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
              "num_hidden_layers": 48, "max_position_embeddings": 10485760, "rope_theta": 500000.0,
              "attention_chunk_size": 8192, "no_rope_layers": [],
              "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                               "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
COHERE2 = {"model_type": "cohere2", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
           "max_position_embeddings": 8192, "rope_theta": 50000.0, "sliding_window": 4096, "sliding_window_pattern": 4}
QWEN2_ALL_FULL = {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_hidden_layers": 28,
                  "max_position_embeddings": 32768, "rope_theta": 1e6, "sliding_window": 4096,
                  "use_sliding_window": True, "max_window_layers": 28}
CHATGLM3 = {"model_type": "chatglm", "hidden_size": 4096, "num_attention_heads": 32, "kv_channels": 128,
            "seq_length": 32768, "rope_ratio": 50, "torch_dtype": "bfloat16"}
FALCON_7B = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "alibi": False,
             "new_decoder_architecture": False, "multi_query": True, "parallel_attn": True}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_positions": 1024}
BERT = {"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12, "max_position_embeddings": 512,
        "position_embedding_type": "absolute"}
FALCON_ALIBI = {"model_type": "falcon", "alibi": True, "hidden_size": 8192, "num_attention_heads": 128}
NULL_THETA = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
              "rope_theta": None}

REFUSED = {"gpt2": (GPT2, "no rotary position embedding"), "bert": (BERT, "no rotary position embedding"),
           "falcon-alibi": (FALCON_ALIBI, "ALiBi"), "null-theta": (NULL_THETA, "rope_theta is null")}


def plain(theta_base, dim):
    return theta_base ** (-np.arange(0, dim, 2) / dim)


# ------------------------------------------------------------------ readings, each against its own derivation
def test_mrope_text_positions_are_plain_rope_with_the_sections_named():
    m = read_config(QWEN2_VL)
    np.testing.assert_allclose(m.theta_at(), plain(1e6, 128), rtol=1e-13)
    assert m.scaling is None and m.sliding_window is None and m.pairing == "half"
    note = next(n for n in m.notes if "M-RoPE" in n)
    assert "[16, 24, 24]" in note and "0-15 follow the time id" in note and "40-63 the width id" in note
    assert "only text positions are audited" in note


def test_interleaved_mrope_is_named_with_its_slots():
    m = read_config(QWEN3_VL)
    np.testing.assert_allclose(m.theta_at(), plain(5e6, 128), rtol=1e-13)
    note = next(n for n in m.notes if "interleaved M-RoPE" in n)
    # Qwen3-VL: height takes slots 1, 4, .., 3*20-2, width 2, 5, .., 3*20-1 (recomposition_frequencies)
    assert "height takes pairs 1, 4, .. 58" in note and "width pairs 2, 5, .. 59" in note


@pytest.mark.parametrize("bad, word", [([16, 24], "three positive"), ([16, 24, 25], "sums to 65"),
                                       ([16, 24, 24.0], "three positive")])
def test_bad_sections_are_refused_by_name(bad, word):
    with pytest.raises(ConfigError, match="mrope_section") as e:
        read_config({**QWEN2_VL, "rope_scaling": {"type": "mrope", "mrope_section": bad}})
    assert word in str(e.value)


def test_proportional_reads_the_same_frequencies_transformers_builds():
    m = read_config(GEMMA4, layer_type="full_attention")
    # _compute_proportional_rope_parameters: 1 / 1e6 ** (arange(0, 2k, 2) / head_dim), k = int(0.25 * 512 // 2)
    k = int(0.25 * 512 // 2)
    want = 1.0 / 1e6 ** (np.arange(0, 2 * k, 2) / 512)
    np.testing.assert_allclose(m.theta_at(), want, rtol=1e-12)
    assert (m.head_dim, m.rotary_dim) == (512, 128) and m.pairing == "half"
    assert any("p-RoPE" in n and "192 have frequency 0" in n for n in m.notes)
    s = read_config(GEMMA4, layer_type="sliding_attention")
    assert (s.head_dim, s.rotary_dim, s.base, s.sliding_window) == (256, 256, 1e4, 512)


def test_proportional_factor_divides_like_linear():
    cfg = json.loads(json.dumps(GEMMA4))
    cfg["rope_parameters"]["full_attention"]["factor"] = 8.0
    m = read_config(cfg, layer_type="full_attention")
    np.testing.assert_allclose(m.theta_at(), 1.0 / 1e6 ** (np.arange(0, 128, 2) / 512) / 8.0, rtol=1e-12)


def test_llama4_nope_and_chunked_layers():
    kinds = read_layer_kinds(SCOUT_TEXT)
    assert [(k.kind, k.position_signal) for k in kinds] == [("chunked_attention", True), ("full_attention", False)]
    # Llama4TextConfig: layer i uses RoPE unless (i + 1) % no_rope_layer_interval == 0 (an empty list: the interval)
    assert kinds[1].layers == tuple(range(3, 48, 4)) and len(kinds[0].layers) == 36
    m = kinds[0].manifest
    assert m.sliding_window == 8192 and any("attention_chunk_size 8,192" in n for n in m.notes)
    assert any("layers 3, 7, 11, .. 47 (12 of 48)" in n and "NoPE" in n for n in m.notes)
    # only the chunked layers rotate: they are the operator read by default, and a note says so
    auto = read_config(SCOUT_TEXT)
    assert (auto.layer_type, auto.sliding_window) == ("chunked_attention", 8192)
    assert any("only chunked_attention has a rotary embedding" in n for n in auto.notes)
    assert auto.theta_at().tolist() == m.theta_at().tolist()
    # negative control: two kinds that both rotate still need a choice
    with pytest.raises(ConfigError, match="kinds of layer"):
        read_config({**SCOUT_TEXT, "no_rope_layers": [1] * 48, "layer_types": None, "attention_chunk_size": 8192,
                     "model_type": "gemma3_text", "sliding_window": 1024})
    explicit = read_layer_kinds({**SCOUT_TEXT, "no_rope_layers": [1, 0] * 24, "attention_chunk_size": None})
    assert [(k.kind, k.layers[:2]) for k in explicit] == [("full_attention", (0, 2)), ("nope_full_attention", (1, 3))]


def test_cohere2_full_layers_have_no_rope():
    with pytest.raises(ConfigError, match="no rotary embedding") as e:
        read_config(COHERE2, layer_type="full_attention")
    assert "base 50,000" in str(e.value)  # the kinds are listed: the sliding layers' base, the NoPE full layers
    s = read_config(COHERE2, layer_type="sliding_attention")
    assert (s.base, s.sliding_window) == (50_000.0, 4096)
    assert [sp.rope for sp in layer_specs(COHERE2)] == [True, False]


def test_qwen2_max_window_layers():
    m = read_config(QWEN2_ALL_FULL)
    assert m.sliding_window is None and any("max_window_layers (28)" in n for n in m.notes)
    half = read_layer_kinds({**QWEN2_ALL_FULL, "max_window_layers": 20})
    # Qwen2Config: sliding where i >= max_window_layers
    assert [(k.kind, k.layers[0], len(k.layers)) for k in half] == [("full_attention", 0, 20),
                                                                     ("sliding_attention", 20, 8)]
    assert half[1].manifest.sliding_window == 4096 and half[0].manifest.sliding_window is None
    with pytest.raises(ConfigError, match="max_window_layers"):
        read_config({**QWEN2_ALL_FULL, "model_type": "made_up"})


def test_chatglm_rotates_half_with_rope_ratio():
    m = read_config(CHATGLM3)
    # modeling_chatglm: RotaryEmbedding(kv_channels // 2), base 10,000 * rope_ratio, exponents over kv_channels // 2
    np.testing.assert_allclose(m.theta_at(), 1.0 / (10_000.0 * 50) ** (np.arange(0, 64, 2) / 64), rtol=1e-13)
    assert (m.head_dim, m.rotary_dim, m.pairing, m.max_position_embeddings) == (128, 64, "interleaved", 32768)
    # modeling_chatglm: idx_theta = outer(seq_idx, theta).float(), then cos/sin cast to bfloat16 / half: float32
    # angles, as transformers forms them (the manifest's "float32"), whatever torch_dtype says
    assert m.phase_dtype == "float32" and CHATGLM3.get("torch_dtype") in ("bfloat16", "float16")
    with pytest.raises(ConfigError, match="rope_scaling"):
        read_config({**CHATGLM3, "rope_scaling": {"type": "linear", "factor": 2.0}})


def test_falcon_reads_the_class_context():
    m = read_config(FALCON_7B)
    assert (m.head_dim, m.base, m.max_position_embeddings) == (4544 // 71, 10_000.0, 2048)
    assert any("defaults it to 2,048" in n for n in m.notes)
    a = geometry_audit(m)
    r = audit(FALCON_7B)
    assert a.train_length == r.gate_b.train_length == 2048  # audit and report read one context


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_no_rope_and_null_base_are_refused_by_name(name):
    cfg, word = REFUSED[name]
    assert word in refusal(cfg)
    msgs = []
    for call in (lambda: read_config(cfg), lambda: layer_audit(cfg), lambda: audit(cfg),
                 lambda: gate_a(lambda x, p: x, manifest=cfg)):
        with pytest.raises(ValueError) as e:
            call()
        msgs.append(str(e.value))
    assert len(set(msgs)) == 1 and word in msgs[0]


def test_null_base_inside_a_block_is_refused_and_a_block_base_wins():
    with pytest.raises(ConfigError, match="rope_parameters.rope_theta is null"):
        read_config({**NULL_THETA, "rope_theta": 1e4, "rope_parameters": {"rope_type": "default", "rope_theta": None}})
    assert read_config({**NULL_THETA, "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}}).base == 5e5


# ------------------------------------------------------------------ the layer-aware audit
def test_layer_audit_names_the_layers_without_position_signal():
    r = layer_audit(SCOUT_TEXT)
    assert r.audits[1] is None and r.audits[0].search_range[1] <= 8192
    assert [k.kind for k in r.no_position_signal] == ["full_attention"]
    text = r.table()
    assert "layers with no position signal: full_attention: layers 3, 7, 11, .. 47 (12 of 48)" in text
    assert "not a pass" in text
    d = r.to_dict()
    assert d["layer_kinds"][1]["position_signal"] is False and d["layer_kinds"][1]["audit"] is None
    assert d["outcome"] == r.audits[0].outcome  # the NoPE kind adds no check


def test_layer_audit_of_a_uniform_model_is_one_kind():
    r = layer_audit("llama-3.1-8b")
    assert len(r.kinds) == 1 and r.kinds[0].kind is None and r.outcome == geometry_audit(
        read_config(json.loads(json.dumps(__import__("ropegeo.models.manifest", fromlist=["x"]).model_record(
            "llama-3.1-8b")["config"])))).outcome


def test_gemma3_shipped_record_audits_both_rulers():
    r = layer_audit("gemma-3-1b-it")
    assert {k.kind for k in r.kinds} == {"sliding_attention", "full_attention"}
    assert all(a is not None for a in r.audits)
    bases = {k.kind: a.base for k, a in zip(r.kinds, r.audits)}
    assert bases == {"sliding_attention": 10_000.0, "full_attention": 1_000_000.0}


# ------------------------------------------------------------------ the three commands agree
def _write(tmp_path, cfg):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_commands_refuse_alike(tmp_path, capsys, name):
    cfg, word = REFUSED[name]
    path = _write(tmp_path, cfg)
    errs = []
    for argv in (["audit", "--config", path], ["report", path], ["report", "numpy:copy", "--config", path],
                 ["gate-a", "numpy:copy", "--config", path]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and word in err
        errs.append(err)
    assert len(set(errs)) == 1


def test_commands_on_a_nope_kind(tmp_path, capsys):
    path = _write(tmp_path, COHERE2)
    for argv in (["audit", "--config", path, "--layer-type", "full_attention"],
                 ["report", path, "--layer-type", "full_attention"],
                 ["gate-a", "numpy:copy", "--config", path, "--layer-type", "full_attention"]):
        assert main(argv) == 2
        assert "no rotary embedding (NoPE)" in capsys.readouterr().err
    main(["audit", "--config", path, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert [k["position_signal"] for k in out["layer_kinds"]] == [True, False]
    assert out["layer_kinds"][0]["audit"]["manifest"]["base"] == 50_000.0


@pytest.mark.parametrize("cfg, kind", [(QWEN2_VL, None), (QWEN3_VL, None), (CHATGLM3, None), (FALCON_7B, None),
                                       (QWEN2_ALL_FULL, None), (GEMMA4, "full_attention"),
                                       (SCOUT_TEXT, "chunked_attention"), (COHERE2, "sliding_attention")])
def test_audit_and_report_read_one_operator(tmp_path, capsys, cfg, kind):
    path = _write(tmp_path, cfg)
    extra = [] if kind is None else ["--layer-type", kind]
    main(["audit", "--config", path, "--json", *extra])
    a = json.loads(capsys.readouterr().out)
    main(["report", path, "--json", *extra])
    r = json.loads(capsys.readouterr().out)
    m = read_config(Path(path), layer_type=kind)
    assert a["manifest"] == r["manifest"] == json.loads(m.to_json())


def test_llama4_layer_types_decide_the_chunk_and_no_rope_layers_the_rotation():
    # Llama4TextModel masks by layer_types (chunked only where it says so) and rotates by no_rope_layers
    cfg = {**SCOUT_TEXT, "num_hidden_layers": 8, "layer_types": ["full_attention"] * 8}
    kinds = {k.kind: k for k in read_layer_kinds(cfg)}
    assert kinds["full_attention"].layers == (0, 1, 2, 4, 5, 6) and kinds["full_attention"].manifest.sliding_window is None
    assert kinds["nope_full_attention"].layers == (3, 7) and not kinds["nope_full_attention"].position_signal
    default = {k.kind: k for k in read_layer_kinds({**SCOUT_TEXT, "num_hidden_layers": 8})}  # the control
    assert default["chunked_attention"].manifest.sliding_window == 8192
    with pytest.raises(ConfigError, match="layer_types must name the kind of each of the 8 layers"):
        read_layer_kinds({**cfg, "layer_types": ["full_attention"] * 3})


def test_gemma4_last_layer_is_forced_to_full_attention():
    cfg = {"model_type": "gemma4_text", "hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
           "num_hidden_layers": 4, "layer_types": ["sliding_attention"] * 4}
    assert [(k.kind, k.layers) for k in read_layer_kinds(cfg)] == [("sliding_attention", (0, 1, 2)),
                                                                   ("full_attention", (3,))]
    other = {**cfg, "model_type": "gemma3_text"}  # the control: Gemma 3 keeps the list as given
    assert {k.kind: k.layers for k in read_layer_kinds(other)}["sliding_attention"] == (0, 1, 2, 3)
