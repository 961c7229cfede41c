"""transformers' side of the config reader's differential tests, and the checks the corpus does not make.

``hf_config`` and ``hf_rope`` build a config.json with transformers (``AutoConfig.for_model``) and call its
rotary module as within a forward pass of ``L`` tokens (``inv_freq`` and ``attention_scaling``); the corpus
of ``tests/config_corpus.py`` is compared field by field in ``test_config_corpus.py``. Here: DeepSeek's
softmax scale, M-RoPE's cos table for text tokens, Falcon's class context and YaRN's factor to float64.

transformers computes in float32, ropegeo in float64: the tolerance is a few float32 ulps.

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""

from __future__ import annotations

import copy
import math
import sys
from pathlib import Path

import pytest
from _requires import require


require("torch", "transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoConfig  # noqa: E402

from ropegeo.models.manifest import read_config  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / p) for p in ("tests", "scripts")]
import config_corpus as corpus  # noqa: E402
import make_config_readings  # noqa: E402

#: float32 rounding of ``base ** (2i / d)`` (exponent not exact in float32 for d = 80, 96 ...) and of
#: the blends: a few ulps of float32
RTOL = 2e-6


# ------------------------------------------------------------------ transformers' side
_module = make_config_readings.module  # the generator's own lookups: one place reads transformers' modules


def _rotary_class(mod, model_type):
    return make_config_readings.rotary_class(mod)


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


# ------------------------------------------------------------------ the comparisons (the corpus: test_config_corpus.py)
@pytest.mark.parametrize("case", ["deepseek-ai/DeepSeek-V2-Lite", "shipped:deepseek-v3"])
def test_deepseek_softmax_scale_matches_the_attention_module(case):
    cfg = corpus.config(case)
    config = hf_config(cfg)
    mod = _module(cfg["model_type"])
    # the attention module's scaling is yarn_apply_mscale(rope_parameters, qk_head_dim ** -0.5)
    extra = mod.yarn_apply_mscale(config.rope_parameters, 1.0)
    assert read_config(copy.deepcopy(cfg)).logit_scale == pytest.approx(extra, rel=1e-12)


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


def test_falcon_context_is_the_class_default():
    cfg = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "alibi": False}
    assert read_config(copy.deepcopy(cfg)).max_position_embeddings == hf_config(cfg).max_position_embeddings


def test_yarn_attention_factor_at_float32_ln():
    # the factor transformers returns is a python float: ropegeo's must agree to float64, not float32
    cfg = corpus.config("Qwen/Qwen2.5-7B-Instruct+yarn")
    _, att = hf_rope(cfg, 128)
    assert read_config(copy.deepcopy(cfg)).attention_at() == pytest.approx(att, rel=1e-12)
    assert att == pytest.approx(0.1 * math.log(4.0) + 1.0, rel=1e-12)
