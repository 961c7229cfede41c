"""Fields a model type's code reads or ignores, against transformers' modeling files and modules.

Where M-RoPE interleaves (the modeling files), which model types read ``partial_rotary_factor`` (top level or
in the rope block) and ``sliding_window``, and Qwen2.5-VL's ``mrope_interleaved``. The configurations
themselves (text_config wrappers, class-default windows and layer kinds, refusals) are compared field by
field in ``test_config_corpus.py``, on the corpus of ``tests/config_corpus.py``.

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""

from __future__ import annotations

import copy

import pytest
from _requires import require

require("torch", "transformers")

import torch  # noqa: E402
from test_config_vs_transformers import _module, _rotary_class, hf_config  # noqa: E402

from ropegeo.models.manifest import read_config, read_layer_kinds  # noqa: E402


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
