"""The shipped pairing table (ropegeo/data/tables/pairing_by_model_type.json) against transformers'
own rotary code: re-derived with scripts/make_pairing_table.py, it is the same table.

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""

import json
import sys
from importlib.resources import files
from pathlib import Path

import pytest
from _requires import require


require("torch", "transformers")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import make_pairing_table  # noqa: E402

SHIPPED = json.loads((files("ropegeo") / "data" / "tables" / "pairing_by_model_type.json").read_text())


def test_the_shipped_table_is_what_transformers_rotates():
    import transformers

    if transformers.__version__ != SHIPPED["transformers"]:
        pytest.skip(f"the table was read from transformers {SHIPPED['transformers']}, "
                    f"{transformers.__version__} is installed")
    assert make_pairing_table.build()["pairing"] == SHIPPED["pairing"]


@pytest.mark.parametrize("model_type,pairing", [("gptj", "interleaved"), ("cohere", "interleaved"),
                                                ("deepseek_v3", "interleaved"), ("llama", "half"),
                                                ("gpt_neox", "half"), ("gpt_oss", "half")])
def test_the_reading_on_families_whose_pairing_the_project_tests_directly(model_type, pairing):
    # the same pairings the wrapped modules of hf_rotary / hf_models show to Gate A's layout check
    assert make_pairing_table.read_pairing(model_type) == pairing


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cohere_code_passes_gate_a_against_its_config(dtype):
    # Command R's config.json names model_type "cohere": the reader pairs adjacent coordinates, as
    # transformers' Cohere code rotates them, so the real code passes (it failed as "layout" when
    # the table said half-split)
    import numpy as np
    import torch
    from transformers import CohereConfig
    from transformers.models.cohere import modeling_cohere as cohere

    from ropegeo.gates.a.gate import gate_a

    config = {"model_type": "cohere", "hidden_size": 8192, "num_attention_heads": 64, "max_position_embeddings": 131_072,
              "rope_theta": 8_000_000.0}
    rot = cohere.CohereRotaryEmbedding(CohereConfig(**{k: v for k, v in config.items() if k != "model_type"}))
    torch_dtype = getattr(torch, dtype)

    def f(x, positions):
        xt = torch.from_numpy(np.asarray(x, dtype=np.float32)).to(torch_dtype)
        pos = torch.as_tensor(np.asarray(positions).astype(np.int64))
        single = xt.dim() == 2
        xt, pos = (xt[None], pos[None]) if single else (xt, pos)
        cos, sin = rot(xt, pos)
        q, _ = cohere.apply_rotary_pos_emb(xt[:, None], xt[:, None], cos, sin)
        out = q[:, 0].float().numpy()
        return out[0] if single else out

    # the wrapper returns float32 whatever the module ran in: the serving precision is declared (Gate A judges at
    # the declared or returned dtype, and a coarser rounding it measures is a finding, never a licence)
    r = gate_a(f, manifest=config, dtype=dtype)
    assert r.declared["pairing"] == "interleaved"
    assert r.passed, r.table()
