"""The one-procedure audit: the verdict logic on constructed cases, its three forms, its validation.

Expected margins are derived here from closed forms (``D = sqrt(2 (1 - mean cos(delta theta)))``),
never read from ``ropegeo.margins``.
"""

import json
import math

import numpy as np
import pytest

from ropegeo.book.broken import CATALOGUE, broken_entries, correct_entries, entry
from ropegeo.gates.a.call import GateAError
from ropegeo.gates.procedure import GATES, AuditReport, audit
from ropegeo.gates.c import gate_c_schedule
from ropegeo.gates.c import GateCVerdict
from ropegeo.models.manifest import RopeManifest, shipped_models


def bank(d, base=10_000.0):
    return np.array([base ** (-2.0 * i / d) for i in range(d // 2)])


def chord(delta, theta, weights=None):
    w = np.ones_like(theta) if weights is None else np.asarray(weights, float)
    w = w / w.sum()
    return math.sqrt(2.0 * (1.0 - float(np.sum(w * np.cos(delta * theta)))))


def declared_manifest(name):
    """The manifest an entry's authors declare, from its Gate A keyword arguments."""
    dec = dict(CATALOGUE[name].declared)
    scale = dec.pop("scale", 1.0)
    if scale != 1.0:
        dec["scaling"] = {"rule": "linear", "factor": 1.0 / scale}
    return RopeManifest(phase_dtype="float32", **dec)


def fake_c(passed: bool) -> GateCVerdict:
    checks = {"offset accuracy at target (min)": {"value": 1.0 if passed else 0.4, "threshold": 0.9,
                                                   "passed": passed}}
    return GateCVerdict(passed, checks, {}, {})


# ------------------------------------------------------------------ the three constructed cases
@pytest.mark.parametrize("name", broken_entries())
def test_broken_implementation_fails_at_a(name):
    # Gate C is requested but must be skipped: it would test a ruler the code does not implement
    r = audit(entry(name).impl, manifest=declared_manifest(name), offsets=range(1, 17), train_length=64,
              target_length=512, gate_c=True)
    assert r.first_failure == "A" and r.intervention == "implementation fix"
    assert r.gate_a_on == "implementation"
    assert CATALOGUE[name].check in r.gate_a.failed
    assert r.gate_c is None and "Gate A failed first" in r.gate_c_note
    assert "Gate A fails" in r.verdict and "implementation fix" in r.verdict


@pytest.mark.parametrize("name", correct_entries())
def test_correct_implementation_passes_a(name):
    r = audit(entry(name).impl, manifest=declared_manifest(name), offsets=range(1, 17), train_length=64,
              target_length=512)
    assert r.status()["A"] == "pass" and r.first_failure != "A" and not r.complete


def test_near_collision_inside_the_offset_set_fails_at_b():
    theta = bank(8)
    expected = chord(6283, theta)  # offsets 5 and 6288 differ by 6283, where the 4 pairs nearly realign
    m = RopeManifest(head_dim=8, max_position_embeddings=4096)
    r = audit(m, offsets=[5, 6288], target_length=8192)
    # Gate B's rule: adjacent offsets on the training ruler, over sqrt 2
    assert 0.05 < expected < r.gate_b.threshold == pytest.approx(chord(1, theta) / math.sqrt(2), rel=1e-9)
    assert r.status() == {"A": "pass", "B": "FAIL", "C": "not run"}
    assert r.first_failure == "B" and r.intervention == "different ruler"
    s = r.gate_b.sets[0]
    assert s["margin"] == pytest.approx(expected, rel=1e-9) and s["pair"] == [5.0, 6288.0]
    assert "6,283" in r.reason
    # the advice says what a small margin costs a trained head, without claiming training is powerless
    # (the margin is normalised, softmax scores are not)
    assert "risk flag, not a barrier" in r.verdict and "growing its weights" in r.verdict
    assert "no amount of training" not in r.verdict
    # the fixed fallback, when asked for: just below the margin the same ruler passes
    ok = audit(m, offsets=[5, 6288], target_length=8192, min_margin=expected * 0.999)
    assert ok.gate_b.passed and ok.first_failure is None


def test_sound_ruler_with_untrained_length_fails_at_c():
    theta = bank(16)
    m = RopeManifest(head_dim=16, max_position_embeddings=64)
    r = audit(m, offsets=range(1, 9), target_length=512, gate_c=True,
              gate_c_options=dict(seeds=(0,), match_steps=300))
    # B passes: on this ruler the closest pair of offsets 1..8 is a unit step apart
    assert min(chord(k, theta) for k in range(1, 8)) == pytest.approx(r.gate_b.sets[0]["margin"], rel=1e-9)
    assert r.status() == {"A": "pass", "B": "pass", "C": "FAIL"}
    assert r.first_failure == "C" and r.intervention == "training" and r.complete
    assert r.gate_c.settings["train_length"] == 64 and r.gate_c.settings["target_length"] == 512
    failing = [n for n, c in r.gate_c.checks.items() if not c["passed"]]
    assert failing and all(n.split(" (")[0] in r.reason for n in failing)


# ------------------------------------------------------------------ verdict logic without training
def test_verdict_order_and_reuse_of_a_gate_c_verdict():
    m = RopeManifest(head_dim=16, max_position_embeddings=64)
    good = audit(m, offsets=range(1, 9), target_length=512, gate_c=fake_c(True))
    assert good.passed and good.complete and good.intervention is None and "your code was not run" in good.verdict and "toy heads" in good.verdict
    bad = audit(m, offsets=range(1, 9), target_length=512, gate_c=fake_c(False))
    assert bad.first_failure == "C" and bad.intervention == GATES["C"][1]
    # a given verdict is reported even when B fails: the first failure is still B
    both = audit(RopeManifest(head_dim=8, max_position_embeddings=4096), offsets=[5, 6288], target_length=8192,
                 gate_c=fake_c(False))
    assert both.status() == {"A": "pass", "B": "FAIL", "C": "FAIL"}
    assert both.first_failure == "B"


def test_gate_c_skipped_after_a_failure_unless_run_all():
    r = audit(entry("wrong-base").impl, manifest=declared_manifest("wrong-base"), offsets=range(1, 9),
              train_length=64, target_length=128, gate_c=True)
    assert r.gate_c is None and "skipped" in r.gate_c_note


def test_defaults_come_from_the_manifest():
    r = audit("llama-3.1-8b")
    assert r.gate_b.train_length == 8192 and r.gate_b.target_length == 131_072
    assert [s["name"] for s in r.gate_b.sets] == ["local 1..64", "distant 64..131,071"]
    assert r.gate_a_on == "reference" and r.gate_a.passed
    # phases in the declared float32, at the far end of the context
    s = r.gate_b.sets[0]
    assert s["dtype"] == "float32" and s["origin"] == 131_072 - 1 - 64


def test_text_json_and_html_forms():
    r = audit(RopeManifest(head_dim=8, max_position_embeddings=4096), offsets=[5, 6288], target_length=8192)
    text = r.table()
    assert text.splitlines()[0].startswith("Audit of") and "Gate B  FAIL" in text and "verdict:" in text
    assert repr(r) == text == str(r)
    d = json.loads(r.to_json(allow_nan=False))
    assert d["first_failure"] == "B" and d["intervention"] == "different ruler"
    assert d["status"] == {"A": "pass", "B": "FAIL", "C": "not run"}
    assert d["gate_b"]["sets"][0]["pair"] == [5.0, 6288.0] and d["gate_c"] is None
    html = r._repr_html_()
    assert "Gate B" in html and "different ruler" in html and "<table>" in html


def test_gate_c_schedule_reanchors_the_rule():
    lin = RopeManifest(head_dim=16, max_position_embeddings=512, original_max_position_embeddings=64,
                       scaling={"rule": "linear", "factor": 8.0})
    s = gate_c_schedule(lin, 64, 512)
    np.testing.assert_allclose(s["theta"], bank(16), rtol=1e-15)
    np.testing.assert_allclose(s["target_theta"], bank(16) / 8.0, rtol=1e-15)
    assert s["rule"] == "linear" and s["target_attention_factor"] == 1.0
    yarn = RopeManifest(head_dim=16, max_position_embeddings=4096, original_max_position_embeddings=512,
                        scaling={"rule": "yarn", "factor": 8.0, "original_max_position_embeddings": 512})
    y = gate_c_schedule(yarn, 64, 512)
    # YaRN's attention factor 0.1 ln s + 1 does not depend on the anchor
    assert y["target_attention_factor"] == pytest.approx(0.1 * math.log(8.0) + 1.0)
    # YaRN fully interpolates the pairs that turn fewer than beta_slow = 1 times over the anchor length;
    # over 64 tokens more pairs turn that little than over 512, so the re-anchored ruler divides more
    # pairs by the full factor 8 (and never touches the fastest one)
    ratio_toy = y["target_theta"] / bank(16)
    ratio_512 = yarn.theta_at(4096) / bank(16)
    assert np.sum(np.isclose(ratio_toy, 1 / 8)) > np.sum(np.isclose(ratio_512, 1 / 8))
    assert ratio_toy[0] == pytest.approx(1.0) and np.all(np.diff(ratio_toy) <= 1e-12)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(target=3.5), "target"),
        (dict(target="no-such-model"), "no-such-model"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), min_margin=0.0), "min_margin"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), min_margin=3.0), "min_margin"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), target_length=32), "target_length"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), gate_c="yes"), "gate_c"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), offsets=[3]), "offsets"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), offsets=[-1, 4]), "offsets"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), origin=-5), "origin"),
        # run_all: Gate B fails this width-8 ruler's local set (offsets 6 apart nearly realign), and
        # Gate C's options are read only when it runs
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), gate_c=True, run_all=True,
              gate_c_options={"theta": [1.0]}), "gate_c_options"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), gate_c=True, run_all=True,
              gate_c_lengths=5), "gate_c_lengths"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), gate_c=True, run_all=True,
              gate_c_lengths=(64, 10_000)), "gate_c_lengths"),
        (dict(target=RopeManifest(head_dim=8, max_position_embeddings=64), offsets=[1, 40_000]), "offsets"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_parameter(kwargs, word):
    target = kwargs.pop("target")
    with pytest.raises(ValueError, match=word):
        audit(target, **kwargs)


def test_a_callable_that_breaks_the_contract():
    with pytest.raises(GateAError):
        audit(lambda x: x, manifest=RopeManifest(head_dim=64))


def test_a_callable_needs_its_declaration():
    # the operator an implementation claims is never assumed (no default pairing or head width)
    with pytest.raises(ValueError, match="manifest is required"):
        audit(entry("query-restart").impl)


def test_report_type():
    assert isinstance(audit("gpt-neox-20b"), AuditReport)


# ------------------------------------------------------------------ the audit's figures
def test_figures_build_and_validate():
    from matplotlib.figure import Figure

    from ropegeo.book.plots.audit import gate_grid, margin_bars, rival_figure
    from ropegeo.toy import train_offset_head

    r = audit(RopeManifest(head_dim=8, max_position_embeddings=4096), offsets=[5, 6288], target_length=8192)
    fig = gate_grid({"collision": r, "llama": audit("llama-2-7b")})
    assert isinstance(fig, Figure)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count("FAIL") == 1 and "different ruler" in texts
    with pytest.raises(ValueError, match="reports"):
        gate_grid({})
    with pytest.raises(ValueError, match="AuditReport"):
        gate_grid({"x": 3})
    assert isinstance(margin_bars([("a", {"local 1..64": 0.2, "distant 64..99": 0.6})]), Figure)
    with pytest.raises(ValueError, match="margin"):
        margin_bars([("a", {"local": 2.5})])
    with pytest.raises(ValueError, match="min_margin"):
        margin_bars([("a", {"local": 0.2})], min_margin=0)
    head = train_offset_head(5, head_dim=8, train_length=64, steps=200, seed=0)
    assert isinstance(rival_figure(head, 256), Figure)
    with pytest.raises(ValueError, match="length"):
        rival_figure(head, 64)
    with pytest.raises(ValueError, match="OffsetHead"):
        rival_figure("head", 256)


def test_large_offset_sets_are_bounded_and_noted():
    m = RopeManifest(head_dim=16, max_position_embeddings=64, phase_dtype="float32")
    with pytest.raises(ValueError, match="at most"):
        audit(m, offsets=range(10**9), target_length=512)
    r = audit(m, offsets=range(1, 10_000), target_length=20_000)
    s = r.gate_b.sets[0]
    assert s["dtype"] == "float64" and "exact phases" in s["note"]
    assert s["margin"] == pytest.approx(chord(1, bank(16)), rel=1e-9)
    small = audit(m, offsets=range(1, 65), target_length=512).gate_b.sets[0]
    assert small["dtype"] == "float32" and "note" not in small


# ------------------------------------------------------------------ the report subcommand
def _report(argv, capsys):
    import argparse

    from ropegeo.cli.report import add_report_subcommand

    parser = argparse.ArgumentParser()
    add_report_subcommand(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", *argv])
    status = args.func(args)
    return status, capsys.readouterr().out


#: A config declaring what the catalogue's implementations claim: head 64, adjacent pairs, base 10,000.
GPTJ_64 = {"model_type": "gptj", "n_embd": 1024, "n_head": 16, "n_positions": 4096}


def test_report_subcommand(capsys, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(GPTJ_64))
    status, out = _report(["llama-2-7b"], capsys)
    assert status == 0 and "Gate C  not run" in out
    status, out = _report(["llama-2-7b", "--offsets", "1-8,4000", "--json"], capsys)
    d = json.loads(out)
    assert status == 0 and d["gate_b"]["sets"][0]["n_offsets"] == 9
    # a broken implementation given as MODULE:FUNCTION, with its declaration: exit status 1 at Gate A
    status, out = _report(["ropegeo.book.broken:CacheOffByOne", "--config", str(cfg), "--offsets", "1-16",
                           "--train-length", "64", "--target-length", "512"], capsys)
    assert status == 1 and "Gate A  FAIL" in out and "implementation fix" in out


def test_parse_offsets():
    from ropegeo.cli.report import parse_offsets

    np.testing.assert_array_equal(parse_offsets("3, 1-4,10"), [1, 2, 3, 4, 10])
    for bad in ("", "x", "5-3", "-2", "1-2000000"):
        with pytest.raises(ValueError, match="--offsets"):
            parse_offsets(bad)


# ------------------------------------------------------------------ properties
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25)
@given(half=st.integers(2, 16), log_base=st.floats(2.0, 6.0), a=st.integers(0, 5000), gap=st.integers(1, 5000),
       shift=st.integers(0, 10_000))
def test_gate_b_margin_is_the_chord_of_the_gap(half, log_base, a, gap, shift):
    """Exact phases: the margin of {a, a + gap} depends on the gap only (the relative law), as a closed form."""
    d, base = 2 * half, 10.0**log_base
    m = RopeManifest(head_dim=d, base=base, max_position_embeddings=64)
    r = audit(m, offsets=[a, a + gap], target_length=20_001, min_margin=0.05)
    moved = audit(m, offsets=[a + shift, a + gap + shift], target_length=20_001, min_margin=0.05)
    want = chord(gap, bank(d, base))
    assert r.gate_b.sets[0]["margin"] == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert moved.gate_b.sets[0]["margin"] == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert r.gate_b.passed == (want >= 0.05)
    assert r.first_failure == (None if want >= 0.05 else "B")


_M8 = RopeManifest(head_dim=8, max_position_embeddings=4096)
_PARTS = {
    "a_pass": audit(_M8, offsets=[1, 2], target_length=8192),
    "b_fail": audit(_M8, offsets=[5, 6288], target_length=8192),
    "a_fail": audit(entry("wrong-base").impl, manifest=declared_manifest("wrong-base"), offsets=[1, 2],
                    train_length=64, target_length=128),
}


@settings(max_examples=20)
@given(states=st.lists(st.sampled_from(["pass", "FAIL", "not run"]), min_size=3, max_size=3))
def test_first_failure_is_the_first_fail_in_gate_order(states):
    """Whatever the states, the verdict names the first FAIL in the order A, B, C."""
    gate_a_of = {"pass": _PARTS["a_pass"].gate_a, "FAIL": _PARTS["a_fail"].gate_a}
    gate_b_of = {"pass": _PARTS["a_pass"].gate_b, "FAIL": _PARTS["b_fail"].gate_b}
    a_state = "FAIL" if states[0] == "FAIL" else "pass"
    b_state = "FAIL" if states[1] == "FAIL" else "pass"
    c = None if states[2] == "not run" else fake_c(states[2] == "pass")
    m = _PARTS["a_pass"].manifest
    report = AuditReport("composed", m, gate_a_of[a_state], "reference", gate_b_of[b_state], c)
    got = report.status()
    want_b = "FAIL" if states[1] == "FAIL" else "pass"
    assert got == {"A": "FAIL" if states[0] == "FAIL" else "pass", "B": want_b, "C": states[2]}
    fails = [g for g in "ABC" if got[g] == "FAIL"]
    assert report.first_failure == (fails[0] if fails else None)
    assert report.intervention == (GATES[fails[0]][1] if fails else None)


def test_report_through_the_command_line(capsys, tmp_path):
    from ropegeo.cli import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(GPTJ_64))
    assert main(["report", "llama-2-7b", "--offsets", "1-16"]) == 0
    assert "Gate B  pass" in capsys.readouterr().out
    assert main(["report", "ropegeo.book.broken:QueryRestart", "--config", str(cfg), "--offsets", "1-16",
                 "--train-length", "64", "--target-length", "512", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["first_failure"] == "A"
    for argv, word in ((["report", "nope"], "nope"), (["report", "llama-2-7b", "--offsets", "9-2"], "--offsets"),
                       (["report", "llama-2-7b", "--min-margin", "0"], "min_margin"),
                       (["report", "llama-2-7b", "--manifest", "mistral-7b"], "--config"),
                       (["report", "ropegeo.book.broken:QueryRestart"], "--config"),
                       (["report", "llama-2-7b", "--gate-c", "--seeds", "0"], "--seeds")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and word in err and "Traceback" not in err


@pytest.mark.parametrize("name", shipped_models())
def test_reference_operator_passes_gate_a_for_every_shipped_model(name):
    """ropegeo's own operator for a manifest carries the manifest's attention factor on cos and sin and
    its frequencies at the declared context (LongRoPE's long factors), as Gate A declares them: before,
    every YaRN and LongRoPE model's report failed Gate A on ropegeo's own operator."""
    report = audit(name)
    assert report.status()["A"] == "pass", report.gate_a.diagnosis
