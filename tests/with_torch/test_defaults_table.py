"""Configurations that leave rotary fields out, read as transformers reads them: the shipped
table of configuration-class defaults (ropegeo/data/tables/defaults_by_model_type.json) against
transformers' config classes, and the resulting frequencies against the model's rotary module.

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""

import copy
import json
import sys
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest
from _requires import require


require("torch", "transformers")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import make_defaults_table  # noqa: E402
from test_config_vs_transformers import RTOL, hf_config, hf_rope  # noqa: E402

from ropegeo.models.manifest import read_config  # noqa: E402

SHIPPED = json.loads((files("ropegeo") / "data" / "tables" / "defaults_by_model_type.json").read_text())

#: sparse configurations: each leaves out a field its configuration class fills in
SPARSE = {
    "qwen3-no-head-dim": {"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "rope_theta": 1e6,
                          "max_position_embeddings": 40960},
    "mixtral-no-rope-fields": {"model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32,
                               "max_position_embeddings": 32768},
    "stablelm-no-rotary-fraction": {"model_type": "stablelm", "hidden_size": 2048, "num_attention_heads": 32,
                                    "rope_theta": 10000.0, "max_position_embeddings": 4096},
    "gpt-neox-no-rope-fields": {"model_type": "gpt_neox", "hidden_size": 6144, "num_attention_heads": 64,
                                "max_position_embeddings": 2048},
    "cohere-no-rope-fields": {"model_type": "cohere", "hidden_size": 8192, "num_attention_heads": 64,
                              "max_position_embeddings": 131072},
    "gpt-oss-no-rope-fields": {"model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64,
                               "num_key_value_heads": 8, "max_position_embeddings": 131072},
    "gemma-no-head-dim": {"model_type": "gemma", "hidden_size": 3072, "num_attention_heads": 16,
                          "rope_theta": 10000.0, "max_position_embeddings": 8192},
    "phi-no-rotary-fraction": {"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
                               "rope_theta": 10000.0, "max_position_embeddings": 2048},
}


def test_the_shipped_table_is_what_the_config_classes_default_to():
    import transformers

    if transformers.__version__ != SHIPPED["transformers"]:
        pytest.skip(f"the table was read from transformers {SHIPPED['transformers']}, "
                    f"{transformers.__version__} is installed")
    assert make_defaults_table.build()["defaults"] == SHIPPED["defaults"]


@pytest.mark.parametrize("case", sorted(SPARSE))
def test_a_sparse_config_is_read_as_transformers_fills_it(case):
    cfg = SPARSE[case]
    # GptOssConfig alternates sliding (window 128) and full layers on one rotary block: its full layers are read
    m = read_config(copy.deepcopy(cfg), layer_type="full_attention" if cfg["model_type"] == "gpt_oss" else None)
    assert m.notes, "every filled-in field is said"
    config = hf_config(cfg)
    head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    assert m.head_dim == head
    L = m.max_position_embeddings
    for length in (128, L):
        inv, att = hf_rope(cfg, length)
        assert m.rotary_dim == 2 * inv.size
        np.testing.assert_allclose(m.theta_at(length), inv, rtol=RTOL, atol=0, err_msg=f"{case} at {length}")
        assert m.attention_at(length) == pytest.approx(att, rel=1e-6)
