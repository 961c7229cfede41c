"""The config corpus against transformers itself, and Gate A on Gemma 4's own rotary module.

``tests/config_corpus.py`` lists every config.json and variant the config reader is compared on;
``tests/data/config_readings.json`` stores what transformers makes of each (``make test`` compares ropegeo
with it, without torch). Here the stored readings are re-derived from the pinned transformers
(``scripts/make_config_readings.py``: its configuration classes and rotary modules), and ropegeo's
reading is compared with the fresh one. Then transformers' own Gemma 4 global-layer module, run with
its config, goes through Gate A: it passes under the manifest read from that config, and a frequency bug
in it is named as a frequency defect, a layout bug as a layout defect.

Skipped when torch or transformers is absent; run with ``make test-torch``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from _requires import require

require("torch", "transformers")

import torch  # noqa: E402

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / p) for p in ("tests", "scripts")]
import config_corpus as corpus  # noqa: E402
import make_config_readings  # noqa: E402
from torch_io import _batched, _in, _out, _positions  # noqa: E402

from ropegeo.models.manifest import ConfigError, read_config  # noqa: E402


@pytest.fixture(scope="module")
def fresh():
    import transformers

    stored = corpus.stored()
    if transformers.__version__ != stored["transformers"]:
        pytest.skip(f"the readings were taken from transformers {stored['transformers']}, "
                    f"{transformers.__version__} is installed")
    return make_config_readings.build()


def _same(a, b, where=""):
    """Equal structure; integers, booleans and strings exactly, floats (float32 computations) to RTOL."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for k in a:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool):
        assert b == pytest.approx(a, rel=corpus.RTOL, abs=0), where
    else:
        assert a == b, where


def test_the_stored_readings_are_what_transformers_reads(fresh):
    _same(corpus.stored()["cases"], fresh["cases"], "cases")


@pytest.mark.parametrize("name", sorted(corpus.CASES))
def test_ropegeo_reads_each_config_as_transformers_does(fresh, name):
    case, want = corpus.CASES[name], fresh["cases"][name]
    if "remote" in case:
        assert "refused" in want
        want = fresh["cases"][case["same_as"]]
    elif "refuse" in case:
        assert "refused" in want or not any(g["rotates"] for g in want["groups"]), want
        with pytest.raises(ConfigError, match="^" + re.escape(case["refuse"])):
            corpus.ropegeo_groups(corpus.config(name), corpus.lengths(case))
        return
    assert corpus.disagreements(want, corpus.ropegeo_groups(corpus.config(name), corpus.lengths(case))) == []


# ---------------------------------------------------------------------- Gate A on Gemma 4's global layers
def _gemma4_global(dtype="float32", bug=None):
    """Gemma4TextRotaryEmbedding (full_attention) and Gemma 4's apply_rotary_pos_emb, built from the corpus's
    Gemma 4 config, as f(x, positions). ``bug="frequency"``: the proportional frequencies formed with exponents
    over the 128 rotating coordinates instead of the whole head (a port's bug); ``bug="layout"``: the module's
    cos/sin applied to the first 128 coordinates, pairs (i, i + 64)."""
    from transformers.models.gemma4 import modeling_gemma4 as g4

    config = make_config_readings.hf_config(corpus.config("gemma4_text"))
    rotary = g4.Gemma4TextRotaryEmbedding(config)
    inv = rotary.full_attention_inv_freq
    if bug == "frequency":
        k = int((inv != 0).sum())
        inv[:k] = 1e6 ** (-torch.arange(0, 2 * k, 2, dtype=torch.float32) / (2 * k))

    def f(x, positions):
        (xt, pos), single = _batched(_in(x, dtype), positions)
        pos = _positions(pos, None)
        with torch.no_grad():
            cos, sin = rotary(xt, pos, "full_attention")
            q = xt[:, :, None, :]  # (batch, seq, heads, dim)
            if bug == "layout":
                turning = int((inv != 0).sum())
                c, s = cos[..., :turning], sin[..., :turning]
                c, s = torch.cat([c, c], -1), torch.cat([s, s], -1)
                head = g4.apply_rotary_pos_emb(q[..., : 2 * turning], c, s, unsqueeze_dim=2)
                out = torch.cat([head, q[..., 2 * turning:]], -1)[:, :, 0]
            else:
                out = g4.apply_rotary_pos_emb(q, cos, sin, unsqueeze_dim=2)[:, :, 0]
        return _out(out[0] if single else out, dtype)

    return f


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gemma4_global_module_passes_gate_a_under_its_own_config(dtype):
    from ropegeo.gates.a.gate import gate_a

    m = read_config(corpus.config("gemma4_text"), layer_type="full_attention")
    r = gate_a(_gemma4_global(dtype), manifest=m)
    assert r.passed, r.table()
    assert r.inferred["layout"]["pairs"][:2] == [[0, 256], [1, 257]] and r.inferred["rotary_dim"] == 128
    assert "across the 512-wide head, the first 64 turning" in r.check("layout").diagnosis


@pytest.mark.parametrize("bug,check,defect", [("frequency", "frequencies", "frequency"), ("layout", "layout", "layout")])
def test_gemma4_global_module_bugs_are_named(bug, check, defect):
    from ropegeo.gates.a.gate import gate_a

    m = read_config(corpus.config("gemma4_text"), layer_type="full_attention")
    r = gate_a(_gemma4_global("float32", bug), manifest=m)
    assert r.failed[0] == check and r.defects[0] == defect, r.table()
