"""Gate A on transformers' code for the defects issue 23's catalogue found misjudged: PhiMoE's
mscale, a YaRN attention factor dropped, dynamic NTK with a stale cache, one-sided key/query
defects. Each has a numpy mirror in tests/test_gate_a_real.py (run by ``make test``).

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""

import numpy as np
import pytest
from _requires import require


require("torch", "transformers")

import torch  # noqa: E402

import hf_catalogue as hc  # noqa: E402  (needs torch)
import hf_models as hm  # noqa: E402

from ropegeo.gates.a.gate import gate_a  # noqa: E402
from ropegeo.models.manifest import read_config, resolve  # noqa: E402

MSCALE = hc.PHIMOE["rope_scaling"]["long_mscale"]


# --------------------------------------------------------------------------- PhiMoE
def test_transformers_phimoe_module_rotates_with_the_short_factors_at_every_length():
    # what the shipped module does (transformers 5.24): the frequencies of the short factors for a
    # pass of 131,072 tokens too, while its own inv_freq buffer holds the long ones; mscale switches
    from transformers.models.phimoe import modeling_phimoe as pm

    config = hm.hf_config(hc.PHIMOE)
    module = pm.PhimoeRotaryEmbedding(config)
    x = torch.zeros(1, 2, 16)
    cos, sin = module(x, torch.tensor([[1, 131_071]]))
    short = np.asarray(hc.PHIMOE["rope_scaling"]["short_factor"])
    long = np.asarray(hc.PHIMOE["rope_scaling"]["long_factor"])
    theta_short = 1.0 / (short * 10_000.0 ** (np.arange(0, 16, 2) / 16))
    angle = torch.atan2(sin[0, 0, :8], cos[0, 0, :8]).double().numpy()
    assert np.allclose(angle, theta_short, rtol=1e-6)
    assert np.allclose(module.inv_freq.double().numpy(), theta_short * short / long, rtol=1e-6)
    assert torch.hypot(cos, sin)[0, 0, 0].item() == pytest.approx(MSCALE, rel=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_phimoe_at_long_context_passes_with_its_mscale(dtype):
    # PhimoeRotaryEmbedding reading its long factors, served within a pass of 131,072 tokens:
    # cos and sin carry long_mscale 1.2432 (it once failed: declared 1.1902, LongRoPE's default)
    m = read_config(hc.PHIMOE)
    assert m.attention_at(131_072) == pytest.approx(MSCALE, rel=1e-12)
    f = hm.model_rotary(hc.PHIMOE, dtype, served_length=131_072, rotary_class=hc.PhimoeLongFactors)
    r = gate_a(f, manifest=hc.PHIMOE)
    assert r.passed, r.table()
    assert r.declared["attention_factor"] == pytest.approx(MSCALE) and r.declared["max_position"] == 131_072
    assert r.inferred["data_dtype"] == dtype


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_shipped_phimoe_module_passes_short_and_fails_long_as_frequency(dtype):
    # the shipped module within a pass of 4,096 tokens: short factors, short_mscale, as declared
    short = hm.model_rotary(hc.PHIMOE, dtype, served_length=4096)
    r = gate_a(short, manifest=hc.PHIMOE, target_length=4096)
    assert r.passed, r.table()
    assert r.declared["attention_factor"] == pytest.approx(MSCALE)
    # within a pass of 131,072 tokens it keeps the short factors: the frequencies break the promise,
    # the factor on cos and sin does not
    long = gate_a(hm.model_rotary(hc.PHIMOE, dtype, served_length=131_072), manifest=hc.PHIMOE)
    assert long.failed[0] == "frequencies" and long.defects[0] == "frequency", long.table()
    assert long.check("norm").passed
    assert "forward pass of at most 4,096 tokens" in long.diagnosis


# --------------------------------------------------------------------------- YaRN's factor dropped
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", ["qwen2.5-7b-instruct", "gpt-oss-20b"])
def test_yarn_module_with_its_attention_factor_dropped_fails_as_magnitude(name, dtype):
    m = resolve(name)
    assert m.attention_at(m.target_length) > 1.1
    assert gate_a(hm.model_rotary(name, dtype), manifest=name).passed
    dropped = hm.model_rotary(name, dtype, "factor-dropped")
    r = gate_a(dropped, manifest=name)
    assert r.failed[0] == "norm" and r.defects[0] == "magnitude", r.table()
    assert "is missing" in r.diagnosis and "--attention-factor-in softmax" in r.diagnosis
    # declared where such code applies it (the softmax), it passes
    soft = gate_a(dropped, manifest=name, attention_factor_in="softmax")
    assert soft.passed and soft.declared["attention_factor_in"] == "softmax", soft.table()


# --------------------------------------------------------------------------- dynamic NTK
#: a dynamic NTK Llama configuration as transformers' docs write it (head width 64)
DYNAMIC = {"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 16,
           "max_position_embeddings": 4096, "rope_theta": 10_000.0, "rope_scaling": {"rope_type": "dynamic", "factor": 4.0}}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dynamic_ntk_fixed_module_passes_and_a_stale_cache_fails_as_frequency(dtype):
    # bare modules against the configuration: Gate A calls them as within a pass of 16,384 tokens and
    # reads a short run before and after the long calls
    fixed = gate_a(hm.model_rotary(DYNAMIC, dtype), manifest=DYNAMIC)
    assert fixed.passed, fixed.table()
    assert fixed.declared["max_position"] == 16_384
    assert any(n.startswith("dynamic NTK") and "short run" in n for n in fixed.notes), fixed.notes
    stale = gate_a(hm.model_rotary(DYNAMIC, dtype, rotary_class=hc.StaleDynamicNTK), manifest=DYNAMIC)
    assert stale.failed == ["frequencies"] and stale.defects == ["frequency"], stale.table()
    assert "not reset for shorter sequences" in stale.diagnosis, stale.diagnosis


# --------------------------------------------------------------------------- roles
ROLE_WORDS = {
    "keys-mirrored": "keys rotate the opposite way to queries",
    "queries-mirrored": "queries rotate the opposite way to keys",
    "keys-interpolated": "a position scaling (positions divided by s = 4) is applied to keys but not to queries",
    "queries-interpolated": "a position scaling (positions divided by s = 4) is applied to queries but not to keys",
}


def test_llama_apply_with_roles_passes():
    r = gate_a(hc.llama_with_roles(), head_dim=64, pairing="half", max_position=32_768)
    assert r.passed and "role" in r.protocols, r.table()
    assert r.check("roles").passed


@pytest.mark.parametrize("defect", hc.ROLE_DEFECTS)
def test_one_sided_defect_is_a_roles_defect_naming_its_side(defect):
    r = gate_a(hc.llama_with_roles(defect), head_dim=64, pairing="half", max_position=32_768)
    assert r.failed[0] == "roles" and r.defects == ["roles"], r.table()
    assert r.inferred["roles_departs"] == defect.split("-")[0]
    assert ROLE_WORDS[defect] in r.diagnosis, r.diagnosis
    assert r.check("frequencies").passed and r.check("layout").passed
    assert "relative law still holds" not in r.table()
