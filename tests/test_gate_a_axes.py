"""Gate A for multi-axis RoPE (ropegeo.gates.a.axes) on numpy mirrors of transformers' M-RoPE code.

The mirrors (ropegeo.book.broken_axes.MultiAxisRotary) follow transformers 5.24's Qwen2VLRotaryEmbedding
(blocked sections [16, 24, 24]) and Qwen3VLTextRotaryEmbedding (interleaved, [24, 20, 20]); the same
cases run against transformers itself in tests/with_torch/test_mrope_real.py.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ropegeo.book.broken_axes import AXES_CORRECT, AXES_DEFECTS, MultiAxisRotary, axes_entry
from ropegeo.gates.verdicts import EXIT_CODES
from ropegeo.gates.a.gate import CORE_CHECKS, check_declaration, gate_a
from ropegeo.gates.a.axes import AXES_CHECKS, FINDINGS, GateAxesReport, axes_operator, axis_layout, gate_a_axes
from ropegeo.models.manifest import RopeManifest, read_config
from ropegeo.rotation import apply_rope

DTYPES = ("float32", "bfloat16")
# configurations as transformers 5 reads them (Qwen2-VL-7B's text fields; Qwen3-VL's text config)
QWEN2_VL = {"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_hidden_layers": 28,
            "max_position_embeddings": 32768, "rope_theta": 1e6,
            "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
QWEN3_VL = {"model_type": "qwen3_vl_text", "head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32,
            "max_position_embeddings": 262144,
            "rope_parameters": {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20],
                                "mrope_interleaved": True}}


def _pairs_by_loop(sections, interleaved, pairs=64):
    """The axis of each pair, by the words of the model cards: blocks in order, or Qwen3-VL's slots."""
    out = []
    if not interleaved:
        for axis, n in enumerate(sections):
            out += [axis] * n
        return out
    for i in range(pairs):
        if i % 3 == 1 and i < 3 * sections[1]:
            out.append(1)
        elif i % 3 == 2 and i < 3 * sections[2]:
            out.append(2)
        else:
            out.append(0)
    return out


@pytest.mark.parametrize("sections, interleaved", [((16, 24, 24), False), ((24, 20, 20), True), ((2, 1, 1), True)])
def test_axis_layout_is_the_documented_assignment(sections, interleaved):
    pairs = sum(sections)
    got = axis_layout(sections, interleaved, pairs)
    assert got.tolist() == _pairs_by_loop(sections, interleaved, pairs)
    assert [int(np.sum(got == a)) for a in range(3)] == list(sections)


def test_interleaved_slots_as_the_configuration_note_says():
    got = axis_layout((24, 20, 20), True, 64)
    assert np.flatnonzero(got == 1).tolist() == list(range(1, 59, 3))  # height: 1, 4, .. 58
    assert np.flatnonzero(got == 2).tolist() == list(range(2, 60, 3))  # width: 2, 5, .. 59
    assert got[60:].tolist() == [0, 0, 0, 0]


def _reference(x, pos3, base, sections, interleaved):
    """Independent float64 M-RoPE: pair i of a half-split head turns by theta_i * pos[axis(i)]."""
    d = x.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)
    axis = np.array(_pairs_by_loop(sections, interleaved, d // 2))
    ang = pos3[axis].T * theta  # (seq, pairs)
    c, s = np.cos(ang), np.sin(ang)
    h = d // 2
    out = x.copy()
    out[:, :h] = x[:, :h] * c - x[:, h:] * s
    out[:, h:] = x[:, :h] * s + x[:, h:] * c
    return out


@pytest.mark.parametrize("interleaved", [False, True])
def test_the_mirror_rotates_each_band_by_its_own_axis(interleaved):
    e = axes_entry("qwen3-vl" if interleaved else "qwen2-vl")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 128))
    pos3 = rng.integers(0, 3000, size=(3, 40))
    want = _reference(x, pos3, e.declared["base"], e.declared["mrope_section"], interleaved)
    got = e.impl(x, pos3)
    assert np.max(np.abs(got - want)) < 2e-3  # float32 angles up to 3,000 rad
    # text tokens: the three ids equal -> 1D RoPE over every pair, half-split
    p = rng.integers(0, 3000, size=40)
    np.testing.assert_allclose(e.impl(x, np.stack([p, p, p])), apply_rope(x, p, base=e.declared["base"],
                                                                          pairing="half"), atol=2e-3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(AXES_CORRECT))
def test_correct_mrope_passes_from_its_configuration(name, dtype):
    cfg = QWEN3_VL if AXES_CORRECT[name] else QWEN2_VL
    r = gate_a(axes_entry(name, dtype).impl, manifest=cfg)
    assert isinstance(r, GateAxesReport)
    assert r.status == "pass", r.table()
    assert r.inferred["data_dtype"] == dtype
    # text positions reduce to 1D RoPE: every 1D core check measured and passed
    assert all(r.check(c).passed for c in CORE_CHECKS)
    assert all(r.check(c).passed for c in AXES_CHECKS)
    assert r.axes["read_sections"] == list(cfg.get("rope_scaling", cfg.get("rope_parameters"))["mrope_section"])
    assert r.protocols == ["callable", "axes"] and r.finding is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(AXES_DEFECTS))
def test_broken_mrope_fails_and_is_named(name, dtype):
    e = axes_entry(name, dtype)
    r = gate_a(e.impl, **e.declared)
    assert r.status == "fail"
    assert r.failed[0] == e.leads, r.table()
    assert r.finding == e.finding and e.finding in FINDINGS
    assert r.defects[0] == e.defect
    # text positions cannot show any of these defects: the 1D checks pass
    assert all(r.check(c).passed for c in CORE_CHECKS), r.table()
    assert EXIT_CODES[r.status] == 1


@pytest.mark.parametrize("name", [*AXES_CORRECT, *AXES_DEFECTS])
def test_stepwise_float32_angles_are_judged_at_the_phase_dtype(name):
    # llama.cpp forms each pair's angle from the previous one in float32: its error (3.2e-6 rad, 1.5x
    # the old per-pair tolerance) once failed axis-bands as a layout defect, although the same
    # arithmetic passes the 1D gate; the bands now allow the 1D gate's float32 precision limit, and
    # the broken variants computed the same way still fail as before
    e = axes_entry(name, stepwise=True)
    r = gate_a(e.impl, **e.declared)
    if e.leads is None:
        assert r.status == "pass", r.table()
        assert r.check("axis-bands").passed and r.check("frequencies").passed
    else:
        assert r.failed[0] == e.leads and r.finding == e.finding, r.table()


def test_axis_bands_still_fail_a_frequency_error_above_the_phase_limit():
    # the control: a declared base 0.1 % off moves the slow pairs by up to 1e-3 of their angle,
    # a hundred times the float32 limit; the bands see it
    e = axes_entry("qwen2-vl", stepwise=True)
    r = gate_a(e.impl, **(e.declared | {"base": e.declared["base"] * 1.001}))
    assert r.check("axis-bands").passed is False, r.table()


def test_findings_in_words():
    words = {}
    for name in AXES_DEFECTS:
        e = axes_entry(name)
        words[name] = gate_a(e.impl, **e.declared).diagnosis
    assert "sections swapped" in words["sections-swapped"] and "[24, 16, 24]" in words["sections-swapped"]
    assert "every pair turns with the time ids" in words["one-axis-for-all"]
    assert "off by one pair" in words["interleave-off-by-one"] and "2, 5, 8" in words["interleave-off-by-one"]
    assert "boundary off by one" in words["boundary-off-by-one"] and "[17, 23, 24]" in words["boundary-off-by-one"]


def test_blocks_where_interleaving_is_declared_are_named():
    e = axes_entry("qwen2-vl")
    r = gate_a(MultiAxisRotary(128, 1e6, (24, 20, 20)), **{**e.declared, "mrope_section": (24, 20, 20),
                                                           "mrope_interleaved": True})
    assert r.finding == "blocked-not-interleaved" and r.failed[0] == "interleave"


def test_a_pair_too_slow_to_show_its_axis_is_inconclusive_not_a_pass():
    # Qwen3-VL's slowest pairs (base 5e6) turn 0.008 rad over 32,768 positions: below bfloat16's angle
    # rounding, so which axis they follow cannot be read there
    e = axes_entry("qwen3-vl", "bfloat16", max_position=32_768)
    r = gate_a(e.impl, **e.declared)
    assert r.status == "inconclusive" and EXIT_CODES[r.status] == 3
    assert r.check("sections").inconclusive and "cannot be read" in r.check("sections").diagnosis
    # an error that is seen is still an error
    b = axes_entry("interleave-off-by-one", "bfloat16", max_position=32_768)
    rb = gate_a(b.impl, **b.declared)
    assert rb.status == "fail" and rb.finding == "interleave-off-by-one"


def test_an_implementation_with_one_id_per_token_is_inconclusive():
    def text_only(x, positions):
        return apply_rope(x, positions, base=1e6, pairing="half")

    r = gate_a(text_only, manifest=QWEN2_VL)
    assert r.status == "inconclusive"
    assert all(r.check(c).passed for c in CORE_CHECKS)  # its text positions pass
    assert all(r.check(c).passed is None for c in AXES_CHECKS)
    assert "refused positions of shape (3, seq)" in r.diagnosis


def test_an_implementation_that_needs_a_batch_axis_is_called_with_one():
    f = MultiAxisRotary()

    def batched(x, positions):
        if np.ndim(positions) != 3:
            raise ValueError("position_ids must be (3, batch, seq)")
        return f(x, positions)

    r = gate_a(batched, manifest=QWEN2_VL)
    assert r.status == "pass", r.table()
    assert r.axes["form"] == "(3, batch, seq)"


def test_declaration_is_read_by_the_shared_reader():
    m = read_config(QWEN2_VL)
    assert (m.sections, m.round_robin) == ((16, 24, 24), False)
    m3 = read_config(QWEN3_VL)
    assert (m3.sections, m3.round_robin) == ((24, 20, 20), True)
    assert RopeManifest.from_dict(json.loads(m3.to_json())) == m3
    assert read_config({**QWEN2_VL, "model_type": "qwen2", "rope_scaling": None}).sections is None


@pytest.mark.parametrize("kwargs, word", [
    (dict(mrope_section=(16, 24, 25), head_dim=128), "mrope_section"),
    (dict(mrope_section=(16, 24, 24)), "head_dim"),
    (dict(mrope_section=(16, 24), head_dim=128), "three positive integers"),
    (dict(mrope_interleaved=True, head_dim=128), "mrope_interleaved is set without mrope_section"),
    (dict(mrope_section=(24, 20, 20), manifest=QWEN2_VL), "conflicts with the manifest"),
    (dict(mrope_section=(16, 24, 24), head_dim=128, pairing="diagonal"), "pairing"),
])
def test_bad_declarations_are_refused_by_name(kwargs, word):
    with pytest.raises(ValueError, match=word):
        check_declaration(**kwargs)
    called = []
    with pytest.raises(ValueError, match=word):
        gate_a(lambda x, p: called.append(1) or x, **kwargs)
    assert not called  # refused before the implementation is called


@pytest.mark.parametrize("cfg", [QWEN2_VL, QWEN3_VL], ids=["qwen2-vl", "qwen3-vl"])
def test_audit_runs_gate_a_on_its_own_multi_axis_operator(cfg):
    from ropegeo.gates.procedure import audit

    r = audit(cfg)
    assert r.status()["A"] == "pass", r.gate_a.diagnosis
    assert isinstance(r.gate_a, GateAxesReport) and r.gate_a.check("roles").passed
    assert r.gate_a.axes["read_sections"] == list(read_config(cfg).sections)


def test_the_reference_operator_reduces_to_1d_rope_on_text_ids():
    m = read_config(QWEN3_VL)
    f = axes_operator(m)
    rng = np.random.default_rng(3)
    x, p = rng.normal(size=(30, 128)), rng.integers(0, 100_000, size=30)
    np.testing.assert_allclose(f(x, p), apply_rope(x, p, theta=m.theta_at(), pairing="half", phase_dtype="float32"),
                               atol=1e-12)
    with pytest.raises(ValueError, match="mrope_section"):
        axes_operator(read_config({**QWEN2_VL, "model_type": "qwen2", "rope_scaling": None}))


def test_report_round_trip_keeps_the_multi_axis_core():
    e = axes_entry("qwen2-vl")
    r = gate_a_axes(e.impl, **e.declared)
    back = GateAxesReport.from_dict(json.loads(r.to_json()))
    assert back.status == r.status == "pass" and back.axes == r.axes


# ------------------------------------------------------------------ shipped records
def _cites_a_commit(rec):
    rev = rec["revision"]
    assert isinstance(rev, str) and len(rev) == 40 and set(rev) <= set("0123456789abcdef"), rev
    assert rec["source"] == f"https://huggingface.co/{rec['model']}/blob/{rev}/config.json"
    assert "commit" in rec["revision_note"] and rec["read_from"]


def test_shipped_qwen25_vl_record_routes_to_the_multi_axis_checks():
    from ropegeo.models.manifest import load_model, model_record

    m = load_model("qwen2.5-vl-7b-instruct")
    assert (m.sections, m.round_robin, m.max_position_embeddings, m.base) == ((16, 24, 24), False, 128000,
                                                                                        1e6)
    assert m.sliding_window is None  # use_sliding_window false
    rec = model_record("qwen2.5-vl-7b-instruct")
    _cites_a_commit(rec)
    for dtype in DTYPES:
        r = gate_a(MultiAxisRotary(dtype=dtype), manifest="qwen2.5-vl-7b-instruct")
        assert r.status == "pass", r.table()
    r = gate_a(MultiAxisRotary(defect="sections-swapped"), manifest="qwen2.5-vl-7b-instruct")
    assert r.finding == "sections-swapped"


# ------------------------------------------------------------------ the command line
MODULE = textwrap.dedent(
    """
    from ropegeo.book.broken_axes import MultiAxisRotary
    from ropegeo.rotation import apply_rope

    good = MultiAxisRotary()
    good_bf16 = MultiAxisRotary(dtype="bfloat16")
    one_axis = MultiAxisRotary(defect="one-axis-for-all")

    def text_only(x, positions):
        return apply_rope(x, positions, base=1e6, pairing="half")
    """
)


@pytest.fixture()
def env(tmp_path):
    (tmp_path / "axesrope.py").write_text(MODULE)
    (tmp_path / "qwen2-vl-config.json").write_text(json.dumps(QWEN2_VL))
    e = dict(os.environ)
    e["PYTHONPATH"] = str(tmp_path) + os.pathsep + e.get("PYTHONPATH", "")
    return e, str(tmp_path / "qwen2-vl-config.json")


def _run(env, *args):
    return subprocess.run([sys.executable, "-m", "ropegeo", "gate-a", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.parametrize("target, code, word", [("axesrope:good", 0, "Gate A: PASS"),
                                                ("axesrope:good_bf16", 0, "Gate A: PASS"),
                                                ("axesrope:one_axis", 1, "every pair turns with the time ids"),
                                                ("axesrope:text_only", 3, "Gate A: INCONCLUSIVE")])
def test_cli_config_routes_to_the_multi_axis_checks(env, target, code, word):
    e, config = env
    out = _run(e, target, "--config", config)
    assert out.returncode == code, out.stdout + out.stderr
    assert word in out.stdout and "mrope_section [16, 24, 24]" in out.stdout


def test_cli_declares_sections_without_a_config(env):
    e, _ = env
    out = _run(e, "axesrope:good", "--mrope-section", "16,24,24", "--head-dim", "128", "--base", "1e6",
               "--pairing", "half", "--max-position", "32768", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    d = json.loads(out.stdout)
    assert d["status"] == "pass" and d["axes"]["sections"] == [16, 24, 24]


@pytest.mark.parametrize("args, word", [(["--mrope-section", "16,24"], "three positive integers"),
                                        (["--mrope-section", "a,b,c"], "mrope-section"),
                                        (["--mrope-section", "16,24,24", "--config", "CFG"], "comes from --config")])
def test_cli_bad_sections_exit_2(env, args, word):
    e, config = env
    args = [config if a == "CFG" else a for a in args]
    out = _run(e, "axesrope:good", "--head-dim", "128", *args)
    assert out.returncode == 2 and word in out.stderr and out.stderr.count("\n") == 1, out.stderr
