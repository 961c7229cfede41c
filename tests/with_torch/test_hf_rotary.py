"""Gate A on transformers' own rotary code: the real implementations pass in every serving dtype,
and broken variants built from their parts fail with their own defect class named.

Skipped when torch or transformers is absent (the book's environment has neither); run with
``make test-torch``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _requires import require


require("torch", "transformers")

import hf_rotary as h  # noqa: E402  (needs torch)

from ropegeo.gates.a.gate import gate_a  # noqa: E402

DTYPES = ("float32", "bfloat16", "float16")


def _impl(family, dtype, defect=None):
    if family == "gptj":
        return h.gptj_rotary(dtype, defect)
    return h.llama_rotary(dtype, defect, family=family, base=h.DECLARED[family]["base"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("family", ["llama", "neox", "gptj"])
def test_real_implementations_pass_in_every_serving_dtype(family, dtype):
    r = gate_a(_impl(family, dtype), **h.DECLARED[family])
    assert r.passed, r.table()
    assert r.inferred["data_dtype"] == dtype  # read from the returned arrays
    assert r.inferred["layout"]["pairing"] == h.DECLARED[family]["pairing"]
    assert r.check("context").passed and r.check("batch").passed
    assert "every measured check passed" in r.diagnosis  # the skipped protocol checks are listed, never hidden


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_data_returned_as_float32_is_a_precision_finding(dtype):
    # judged at the float32 returned: the rounding inside is named, declaring the dtype makes it pass
    f = _impl("llama", dtype)
    r = gate_a(lambda x, p: f(x, p).astype("float32"), **h.DECLARED["llama"])
    assert r.failed[0] == "precision" and r.inferred["data_rounding"]["dtype"] == dtype, r.table()
    assert gate_a(lambda x, p: f(x, p).astype("float32"), dtype=dtype, **h.DECLARED["llama"]).passed


def test_declared_float32_data_makes_bfloat16_rounding_fail():
    # what the data dtype buys: held to float32, the same bfloat16 code is out of tolerance
    f = _impl("llama", "bfloat16")
    r = gate_a(lambda x, p: f(x, p).astype("float32"), dtype="float32", **h.DECLARED["llama"])
    assert not r.passed


DEFECTS = {
    # defect: (failed check that leads, defect class, words the diagnosis must contain)
    "wrapped-table": ("context", "position-id", "P mod 4,096"),
    "clamped-table": ("context", "position-id", "from 8,191 on is rotated as 8,191"),
    "int8-positions": ("context", "position-id", "8-bit integer"),
    "int16-positions": ("context", "position-id", "16-bit integer"),
    "ignored-positions": ("context", "position-id", "positions are ignored"),
    "origin-off-by-one": ("origin", "position-id", "origin is off by +1"),
    "first-row-only": ("batch", "position-id", "first row's position ids"),
    "start-position": ("context", "position-id", "one contiguous run"),
    "bf16-angles": ("precision", "precision", "formed in bfloat16"),
    "mirrored": ("frequencies", "convention", "relative law still holds"),
    "wrong-pairing": ("layout", "layout", "interleaved layout, while the declared convention is half-split"),
    "query-scaled": ("norm", "magnitude", "norm ratio up to 1.25"),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("defect", list(DEFECTS))
def test_broken_llama_variants_are_named(defect, dtype):
    check, kind, words = DEFECTS[defect]
    r = gate_a(_impl("llama", dtype, defect), **h.DECLARED["llama"])
    assert r.failed[0] == check, r.table()
    assert r.defects[0] == kind
    assert words in r.diagnosis, r.diagnosis


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("defect", ["wrapped-table", "int8-positions", "first-row-only", "origin-off-by-one"])
def test_broken_gptj_variants_are_named(defect, dtype):
    check, kind, words = DEFECTS[defect]
    declared = dict(h.DECLARED["gptj"], max_position=131_072 if defect == "wrapped-table" else 2_048)
    r = gate_a(_impl("gptj", dtype, defect), **declared)
    assert r.failed[0] == check and r.defects[0] == kind, r.table()


def test_gptj_table_past_its_length_is_refused_by_name():
    # the real GPT-J table holds 2,048 rows: declared with a longer context, it cannot serve it
    r = gate_a(_impl("gptj", "float32"), **dict(h.DECLARED["gptj"], max_position=8_192))
    assert r.failed == ["context"] and "refuses positions from 2,048 on" in r.diagnosis


def test_command_line_on_a_wrapped_bfloat16_llama():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
    args = [sys.executable, "-m", "ropegeo", "gate-a", "--head-dim", "64", "--base", "500000", "--pairing", "half",
            "--json"]
    ok = subprocess.run(args[:4] + ["hf_rotary:llama_bf16"] + args[4:], capture_output=True, text=True, env=env,
                        timeout=600)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["inferred"]["data_dtype"] == "bfloat16"
    bad = subprocess.run(args[:4] + ["hf_rotary:llama_bf16_wrapped"] + args[4:], capture_output=True, text=True,
                         env=env, timeout=600)
    assert bad.returncode == 1 and json.loads(bad.stdout)["defects"] == ["position-id"]


def test_torch_tensors_in_and_out():
    # an implementation written for tensors: Gate A retries with torch tensors and reads bfloat16 back
    import torch
    from transformers.models.llama import modeling_llama as llama

    f = h.llama_rotary("bfloat16")

    def tensor_rope(x, positions):
        if not isinstance(x, torch.Tensor):
            raise TypeError("x must be a torch.Tensor")
        out = f(x.float().numpy(), positions.numpy())
        return torch.from_numpy(out.astype("float32")).to(torch.bfloat16)

    assert llama.apply_rotary_pos_emb  # the wrapper above is built on it
    r = gate_a(tensor_rope, **h.DECLARED["llama"])
    assert r.passed, r.table()
    assert r.inferred["data_dtype"] == "bfloat16" and any("torch tensors" in n for n in r.notes)


SCALED = {
    # shipped configuration -> transformers' rope_parameters block for the same model
    "llama-3.1-8b": ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192, "rope_theta": 500_000.0}, 131_072),
    "qwen2.5-7b-instruct": ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768,
                             "rope_theta": 1_000_000.0}, 32_768),
}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("model", list(SCALED))
def test_scaled_rules_checked_against_what_the_config_promises(model, dtype):
    from ropegeo.models.manifest import resolve

    params, mpe = SCALED[model]
    m = resolve(model)
    f = h.llama_rotary(dtype, head_dim=m.head_dim, rope_parameters=params, max_position_embeddings=mpe)
    r = gate_a(f, manifest=model)
    assert r.passed, r.table()
    if m.attention_at() != 1.0:  # YaRN: transformers multiplies cos and sin by the factor
        assert r.inferred["attention_factor_applied"] is True
    # the same code without its scaling rule breaks the promise, as a frequency defect
    plain = h.llama_rotary(dtype, head_dim=m.head_dim, base=params["rope_theta"])
    r = gate_a(plain, manifest=model)
    assert r.failed[0] == "frequencies" and r.defects[0] == "frequency", r.table()
