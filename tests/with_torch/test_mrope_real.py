"""Gate A's multi-axis checks on transformers' own M-RoPE code (Qwen2-VL blocks, Qwen3-VL interleaving).

The rotary modules are transformers' ``Qwen2VLRotaryEmbedding`` and ``Qwen3VLTextRotaryEmbedding``,
built from a configuration written here (no network), and their ``apply_rotary_pos_emb``; Gate A
reads the declaration from the same configuration dict. The real code must pass in float32 and
bfloat16; broken integrations built from its parts must fail with their finding named. The numpy
mirrors of these cases run in ``make test`` (tests/test_gate_a_axes.py).

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest
from _requires import require

require("torch", "transformers")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch_io import _in, _out  # noqa: E402
from transformers import Qwen2_5_VLTextConfig, Qwen2VLTextConfig  # noqa: E402
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as q25  # noqa: E402
from transformers.models.qwen2_vl import modeling_qwen2_vl as q2  # noqa: E402
from transformers.models.qwen3_vl import modeling_qwen3_vl as q3  # noqa: E402
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig  # noqa: E402

from ropegeo.book.broken_axes import AXES_DEFECTS, MultiAxisRotary  # noqa: E402
from ropegeo.gates.verdicts import EXIT_CODES  # noqa: E402
from ropegeo.gates.a.gate import CORE_CHECKS, gate_a  # noqa: E402
from ropegeo.gates.a.axes import AXES_CHECKS  # noqa: E402
from ropegeo.models.manifest import model_record, read_config  # noqa: E402

DTYPES = ("float32", "bfloat16")
# config.json text fields as the hub files give them (Qwen2-VL-7B: the legacy rope_scaling block)
QWEN2_VL = {"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
            "num_hidden_layers": 28, "max_position_embeddings": 32768, "rope_theta": 1e6,
            "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
QWEN3_VL = {"model_type": "qwen3_vl_text", "head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 8, "num_hidden_layers": 36, "max_position_embeddings": 262144,
            "rope_parameters": {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20],
                                "mrope_interleaved": True}}


def _hf_config(cfg):
    fields = {k: val for k, val in cfg.items() if k not in ("model_type", "_name_or_path")}
    cls = {"qwen3": Qwen3VLTextConfig, "qwen2_5": Qwen2_5_VLTextConfig}.get(cfg["model_type"][:7].rstrip("_"),
                                                                            Qwen2VLTextConfig)
    return cls(**fields)


class _ShiftedInterleave(q3.Qwen3VLTextRotaryEmbedding):
    """Qwen3-VL's recomposition with the height and width slots one pair late (a broken port)."""

    def recomposition_frequencies(self, freq):
        freqs_thw = freq[0]
        for dim, offset in enumerate((1, 2), start=1):
            length = self.mrope_section[dim] * 3
            idx = slice(offset + 1, length + 1, 3)
            freqs_thw[..., idx] = freq[dim, ..., idx]
        return torch.cat((freqs_thw, freqs_thw), dim=-1)


def hf_mrope(cfg, dtype="float32", defect=None):
    """transformers' M-RoPE rotary module + apply_rotary_pos_emb as f(x, positions).

    ``x``: (seq, head_dim) or (batch, seq, head_dim); ``positions``: (3, seq) or (3, batch, seq).
    """
    hf = _hf_config(cfg)
    qwen3, qwen25 = cfg["model_type"].startswith("qwen3"), cfg["model_type"].startswith("qwen2_5")
    cls = (_ShiftedInterleave if defect == "interleave-off-by-one" else q3.Qwen3VLTextRotaryEmbedding) if qwen3 \
        else q25.Qwen2_5_VLRotaryEmbedding if qwen25 else q2.Qwen2VLRotaryEmbedding
    module, apply = cls(hf), (q3 if qwen3 else q25 if qwen25 else q2).apply_rotary_pos_emb
    sec = list(module.mrope_section)
    if defect == "sections-swapped":
        module.mrope_section = [sec[1], sec[0], sec[2]]
    if defect == "boundary-off-by-one":
        module.mrope_section = [sec[0] + 1, sec[1] - 1, sec[2]]

    def f(x, positions):
        xt = _in(x, dtype)
        pos = torch.as_tensor(np.asarray(positions).astype(np.int64))
        single = xt.dim() == 2
        if single:
            xt, pos = xt[None], pos[:, None, :]
        if defect == "one-axis-for-all":  # the text ids passed on: transformers expands them to all three
            pos = pos[0]
        with torch.no_grad():
            cos, sin = module(xt, pos)
            out, _ = apply(xt[:, None], xt[:, None], cos, sin)
        out = out[:, 0]
        return _out(out[0] if single else out, dtype)

    return f


def test_the_configuration_reads_as_transformers_builds_it():
    for cfg in (QWEN2_VL, QWEN3_VL):
        hf, m = _hf_config(cfg), read_config(cfg)
        assert list(m.sections) == list(hf.rope_parameters["mrope_section"])
        module = (q3.Qwen3VLTextRotaryEmbedding if m.round_robin else q2.Qwen2VLRotaryEmbedding)(hf)
        np.testing.assert_allclose(module.inv_freq.double().numpy(), m.theta_at(), rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", [QWEN2_VL, QWEN3_VL], ids=["qwen2-vl", "qwen3-vl"])
def test_transformers_mrope_passes_from_its_configuration(cfg, dtype):
    r = gate_a(hf_mrope(cfg, dtype), manifest=cfg)
    assert r.status == "pass", r.table()
    assert r.inferred["data_dtype"] == dtype
    assert all(r.check(c).passed for c in CORE_CHECKS + AXES_CHECKS)
    assert r.axes["read"] == r.axes["read"] and r.finding is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("defect", list(AXES_DEFECTS))
def test_broken_integrations_fail_under_their_name(defect, dtype):
    interleaved, leads, cls = AXES_DEFECTS[defect]
    cfg = QWEN3_VL if interleaved else QWEN2_VL
    r = gate_a(hf_mrope(cfg, dtype, defect), manifest=cfg)
    assert r.status == "fail" and EXIT_CODES[r.status] == 1
    assert r.failed[0] == leads and r.finding == defect and r.defects[0] == cls, r.table()
    assert all(r.check(c).passed for c in CORE_CHECKS), r.table()  # text positions cannot show it


@pytest.mark.parametrize("defect", [None, *AXES_DEFECTS])
def test_the_numpy_mirror_matches_transformers(defect):
    for inter in ([False, True] if defect is None else [AXES_DEFECTS[defect][0]]):
        cfg = QWEN3_VL if inter else QWEN2_VL
        m = read_config(cfg)
        mirror = MultiAxisRotary(128, m.base, m.sections, inter, "float32", defect)
        rng = np.random.default_rng(1)
        x, pos = rng.normal(size=(2, 50, 128)), rng.integers(0, 5000, size=(3, 2, 50))
        # Two float32 pipelines: each rounds a frequency and an angle p * theta (largest below the largest
        # position), so their angles differ by up to about one float32 spacing of that angle, and a pair of
        # norm at most sqrt(2) max|x| turned by such a difference moves by that much times the angle gap.
        # (Measured: 1.05e-5 at positions below 64, where a fixed 1e-5 failed on one element of 12,800.)
        def tolerance(p):
            return 2 * math.sqrt(2) * np.abs(x).max() * float(np.spacing(np.float32(p.max())))

        np.testing.assert_allclose(mirror(x, pos), hf_mrope(cfg, "float32", defect)(x, pos), rtol=0, atol=tolerance(pos))
        small = pos % 64  # positions an image grid gives
        np.testing.assert_allclose(mirror(x, small), hf_mrope(cfg, "float32", defect)(x, small), rtol=0,
                                   atol=tolerance(small))


@pytest.mark.parametrize("dtype", DTYPES)
def test_transformers_qwen25_vl_passes_from_the_shipped_record(dtype):
    cfg = model_record("qwen2.5-vl-7b-instruct")["config"]
    r = gate_a(hf_mrope(cfg, dtype), manifest="qwen2.5-vl-7b-instruct")
    assert r.status == "pass", r.table()
    assert r.declared["max_position"] == 128_000 and r.axes["read_sections"] == [16, 24, 24]
    broken = gate_a(hf_mrope(cfg, dtype, "one-axis-for-all"), manifest="qwen2.5-vl-7b-instruct")
    assert broken.finding == "one-axis-for-all" and broken.defects[0] == "position-id"


def test_cli_routes_transformers_mrope_to_the_axis_checks(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    (tmp_path / "hfmrope.py").write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {here!r})
        from test_mrope_real import QWEN2_VL, hf_mrope
        good = hf_mrope(QWEN2_VL, "bfloat16")
        swapped = hf_mrope(QWEN2_VL, "bfloat16", "sections-swapped")
    """))
    config = tmp_path / "qwen2-vl-config.json"
    config.write_text(json.dumps(QWEN2_VL))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env.get("PYTHONPATH", "")
    for target, code in (("hfmrope:good", 0), ("hfmrope:swapped", 1)):
        out = subprocess.run([sys.executable, "-m", "ropegeo", "gate-a", target, "--config", str(config), "--json"],
                             capture_output=True, text=True, env=env, timeout=600)
        assert out.returncode == code, out.stdout[-2000:] + out.stderr
        d = json.loads(out.stdout)
        assert d["axes"]["sections"] == [16, 24, 24]
        assert d["axes"].get("finding") == (None if code == 0 else "sections-swapped")
