"""Gate A on more of transformers' rotary code, each declared by its shipped configuration:
Mistral, Qwen2 (YaRN), Phi-3 LongRoPE (short and long factors, the switch at 4,097), Gemma 3
(both rulers), DeepSeek-V3 (interleaved pairs written half-split, YaRN with mscale), GPT-OSS
(YaRN, ``truncate: false``) and a dynamic NTK configuration, in float32, bfloat16 and float16.
The real code passes; broken variants built from its parts fail with their defect class named.

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""


import pytest
from _requires import require


require("torch", "transformers")

import hf_models as hm  # noqa: E402  (needs torch)

from ropegeo.gates.a.gate import gate_a  # noqa: E402
from ropegeo.models.manifest import resolve  # noqa: E402

DTYPES = ("float32", "bfloat16", "float16")
PHI3 = "phi-3-mini-128k-instruct"
#: a dynamic NTK configuration (Llama layout): transformers stretches the base for a forward pass
#: longer than max_position_embeddings
DYNAMIC = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096,
           "rope_theta": 10000.0, "rope_scaling": {"rope_type": "dynamic", "factor": 4.0}}

#: case -> (shipped name or config, wrapper keywords, gate_a keywords besides the manifest)
CASES = {
    "mistral": ("mistral-7b", {}, {}),
    "qwen2-yarn": ("qwen2.5-7b-instruct", {}, {}),
    "phi3-long": (PHI3, {"served_length": 131_072}, {}),
    "phi3-short-4096": (PHI3, {"served_length": 4096}, {"target_length": 4096}),
    "phi3-long-4097": (PHI3, {"served_length": 4097}, {"target_length": 4097}),
    "phi3.5-long": ("phi-3.5-mini-instruct", {"served_length": 131_072}, {}),
    "gemma3-global": ("gemma-3-1b-it", {"layer_type": "full_attention"}, {}),
    "gemma3-local": ("gemma-3-1b-it", {"layer_type": "sliding_attention"}, {"layer_type": "sliding_attention"}),
    "deepseek-v3": ("deepseek-v3", {}, {}),
    "gpt-oss": ("gpt-oss-20b", {}, {}),
    # bare: Gate A itself calls a dynamic rule as within a pass of the target length, and reads a short run
    "dynamic-ntk": (DYNAMIC, {}, {"target_length": 16_384}),
}


def _run(case, dtype, defect=None):
    name, kw, gkw = CASES[case]
    gkw = dict(gkw)
    layer_type = gkw.pop("layer_type", None)
    manifest = resolve(name, layer_type=layer_type) if layer_type else name
    return gate_a(hm.model_rotary(name, dtype, defect, **kw), manifest=manifest, **gkw)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_real_code_passes_against_its_shipped_configuration(case, dtype):
    r = _run(case, dtype)
    assert r.passed, r.table()
    assert r.inferred["data_dtype"] == dtype
    assert r.inferred["pairing"] == r.declared["pairing"]
    assert r.check("context").passed and r.check("batch").passed


def test_declarations_read_from_the_configurations():
    assert _run("deepseek-v3", "float32").declared["head_dim"] == 64  # qk_rope_head_dim, interleaved
    assert _run("deepseek-v3", "float32").declared["pairing"] == "interleaved"
    assert _run("gpt-oss", "float32").declared["attention_factor"] > 1.0  # YaRN's factor on cos and sin
    assert _run("phi3-long", "float32").declared["attention_factor"] == pytest.approx(resolve(PHI3).attention_at(131_072))


def test_phi3_switch_at_4097_is_seen():
    # a forward pass of 4,097 tokens rotates with the long factors: held to the short ones, it fails
    name, kw, _ = CASES["phi3-long-4097"]
    r = gate_a(hm.model_rotary(name, "float32", **kw), manifest=name, target_length=4096)
    assert r.failed[0] == "frequencies" and r.defects[0] == "frequency", r.table()


def test_bare_longrope_module_breaks_a_long_declaration():
    # called on short runs (no long prompt), transformers' Phi-3 module rotates with the short factors
    r = gate_a(hm.model_rotary(PHI3, "float32"), manifest=PHI3)
    assert r.failed[0] == "frequencies" and r.defects[0] == "frequency", r.table()


DEFECTS = {
    # defect: (leading failed check, defect class)
    "wrapped-table": ("context", "position-id"),
    "int8-positions": ("context", "position-id"),
    "int16-positions": ("context", "position-id"),
    "query-scaled": ("norm", "magnitude"),
    "wrong-pairing": ("layout", "layout"),
    "bf16-angles": ("precision", "precision"),
    "first-row-only": ("batch", "position-id"),
    "origin-off-by-one": ("origin", "position-id"),
    "mirrored": ("frequencies", "convention"),
}
BROKEN_CASES = ["mistral", "qwen2-yarn", "phi3-long", "gemma3-global", "deepseek-v3", "gpt-oss", "dynamic-ntk"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("defect", list(DEFECTS))
@pytest.mark.parametrize("case", BROKEN_CASES)
def test_broken_variants_are_named(case, defect, dtype):
    r = _run(case, dtype, defect)
    if defect == "int16-positions" and r.declared["max_position"] <= 32_768:
        # every declared position fits in int16: the cast is harmless within this context
        assert r.passed, r.table()
        return
    check, kind = DEFECTS[defect]
    if case == "dynamic-ntk" and defect == "origin-off-by-one":
        # the shifted ids also lengthen the pass by one token, so dynamic NTK stretches its base by
        # 7.6e-5 too: a real second defect. float32 data show it at the read positions; float16 and
        # bfloat16 data show it only over the long context, where a per-pair frequency fit names it
        assert r.failed[0] in ("origin", "frequencies") and r.defects[0] in ("position-id", "frequency"), r.table()
        assert "position-id" in r.defects and set(r.defects) <= {"position-id", "frequency"}, r.table()
        return
    assert r.failed and r.failed[0] == check, r.table()
    assert r.defects[0] == kind, r.table()


def test_gpt_oss_truncate_is_part_of_the_promise():
    # the same YaRN block with truncate: true (the ramp ends rounded to whole pairs) is not what
    # gpt-oss's config.json (truncate: false) declares
    scaling = dict(hm.shipped_config("gpt-oss-20b")["rope_scaling"], truncate=True)
    r = gate_a(hm.model_rotary("gpt-oss-20b", "float32", rope_scaling=scaling), manifest="gpt-oss-20b")
    assert r.failed == ["frequencies"] and r.defects == ["frequency"], r.table()
