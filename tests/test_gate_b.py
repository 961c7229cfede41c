"""Gate B's one decision rule (ropegeo.gates.b.rule): derived from the gap a task needs, checked against
brute-force loops; it fails what should fail, passes healthy deployments, is inconclusive when it
cannot decide, names tied classes, refuses offsets beyond the context, and drives the exit status."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ropegeo.softmax import softmax
from ropegeo.gates.procedure import audit, geometry_audit
from ropegeo.cli import main
from ropegeo.frequencies import frequencies
from ropegeo.gates.b.rule import (FIXED_MARGIN, MAX_DISTANCE, GateBRule, gate_b, gate_b_decision, required_margin,
                            trained_sharpness)
from ropegeo.models.manifest import RopeManifest, load_model, shipped_models
from ropegeo.margins import attention_probe, separation_margin
from ropegeo.precision import deployed, uniform

TH8, TH128 = frequencies(8), frequencies(128)


def _distance(a, b, theta):
    """Equal-weight chord distance between the exact signatures of a and b, pair by pair."""
    total = 0.0
    for t in theta:
        total += (math.cos(a * t) - math.cos(b * t)) ** 2 + (math.sin(a * t) - math.sin(b * t)) ** 2
    return math.sqrt(total / len(theta))


def _score(amplitude, tuned, key, theta):
    """A head of amplitude ``amplitude`` tuned to offset ``tuned``: its score for a key at ``key``."""
    return amplitude * sum(math.cos((key - tuned) * t) for t in theta) / len(theta)


# ------------------------------------------------------------------------- the derivation


@pytest.mark.parametrize("amplitude, a, b", [(7.0, 5, 6288), (55.0, 1, 2), (3.0, 0, 17)])
def test_score_gap_is_amplitude_times_half_the_squared_distance(amplitude, a, b):
    gap = _score(amplitude, a, a, TH8) - _score(amplitude, a, b, TH8)
    assert gap == pytest.approx(amplitude * _distance(a, b, TH8) ** 2 / 2, rel=1e-10)
    # so a gap g needs D >= sqrt(2 g / amplitude): at exactly that distance the gap is g
    assert required_margin(gap, amplitude) == pytest.approx(_distance(a, b, TH8), rel=1e-10)


def test_trained_sharpness_gives_adjacent_offsets_nine_to_one_in_training():
    beta = trained_sharpness(TH128)
    scores = np.array([_score(beta, 40, 40, TH128), _score(beta, 40, 41, TH128)])
    assert softmax(scores)[0] == pytest.approx(0.9, abs=1e-12)
    # the probe head of ropegeo.margins, at that sharpness, agrees
    assert attention_probe(1, [2], TH128, sharpness=beta).target_mass == pytest.approx(0.9, abs=1e-9)


def test_default_threshold_is_the_adjacent_training_distance_over_root_two():
    for theta in (TH8, TH128, frequencies(64, 5e5)):
        d1 = _distance(0, 1, theta)
        assert GateBRule().threshold(theta) == pytest.approx(d1 / math.sqrt(2), rel=1e-10)
        # stated needs move it as sqrt(gap): a 99:1 share needs sqrt(ln 99 / ln 9) times D(1)
        assert GateBRule(mass=0.99).threshold(theta) == pytest.approx(d1 * math.sqrt(math.log(99) / math.log(9)),
                                                                      rel=1e-10)
        assert GateBRule(gap=2.0, sharpness=50.0).threshold(theta) == pytest.approx(math.sqrt(4 / 50), rel=1e-12)
    assert GateBRule(fixed_margin=FIXED_MARGIN).threshold(TH8) == 0.1


# ------------------------------------------------------------------------- fails what should fail


def test_fails_interpolation_by_eight_on_a_local_task():
    stretched = load_model("llama-2-7b").with_(scaling={"rule": "linear", "factor": 8.0})
    r = audit(stretched, target_length=8 * 4096)
    local = r.gate_b.sets[0]
    assert local["status"] == "fail" and r.outcome == "fail" and r.first_failure == "B" and r.exit_code == 1
    # independent: adjacent offsets 1/8 apart on the training ruler, against D_train(1) / sqrt 2
    assert _distance(0, 1 / 8, frequencies(128)) < _distance(0, 1, frequencies(128)) / math.sqrt(2)
    assert gate_b_decision(range(1, 65), TH128, scale=1 / 8).status == "fail"
    assert geometry_audit(interpolate=True).outcome == "fail"


def test_fails_the_head_width_eight_near_return_a_two_offset_task():
    dec = gate_b_decision([5, 6288], TH8)
    assert dec.status == "fail" and dec.margin.margin == pytest.approx(_distance(5, 6288, TH8), rel=1e-10)
    assert dec.threshold == pytest.approx(_distance(0, 1, TH8) / math.sqrt(2), rel=1e-10)
    r = audit(RopeManifest(head_dim=8, max_position_embeddings=4096), offsets=[5, 6288], target_length=8192)
    assert r.gate_b.status == "fail" and r.first_failure == "B"
    # {0, 1, 6283} as well
    assert gate_b_decision([0, 1, 6283], TH8).status == "fail"


def test_fails_bfloat16_phases_at_long_range():
    assert gate_b_decision([1, 2, 3], TH128, dtype="bfloat16", origin=32_764).status == "fail"
    llama2 = load_model("llama-2-7b").with_(phase_dtype="bfloat16")
    r = audit(llama2, target_length=32_768)
    assert r.gate_b.sets[0]["status"] == "fail" and r.gate_b.sets[0]["margin"] == 0.0
    assert "identical signatures" in r.gate_b.sets[0]["confusable"]


@pytest.mark.parametrize(
    "dtype, scale, passed",
    [("float32", 1.0, True), (deployed("bfloat16"), 1.0, True), (deployed("float16"), 1.0, True),
     ("bfloat16", 1.0, False), (uniform("float16"), 1.0, False), ("float32", 0.125, False),
     (deployed("bfloat16"), 0.125, False)],
)
def test_verdict_is_what_the_judged_head_does_through_the_same_pipeline(dtype, scale, passed):
    dec = gate_b_decision([1, 2, 3], TH128, dtype=dtype, origin=32_764, scale=scale)
    assert dec.passed is passed
    a, b = dec.margin.pair
    probe = attention_probe(a, [b], TH128, sharpness=dec.sharpness, dtype=dtype, scale=scale, query_position=32_768)
    assert (probe.target_mass >= 0.75) is passed


# ------------------------------------------------------------------------- passes healthy deployments


def test_passes_every_shipped_configuration_at_its_own_context():
    for name in shipped_models():
        m = load_model(name)
        b = gate_b(m, train_length=m.train_length, target_length=m.target_length)
        if name == "gemma-3-4b-it":
            # its full-attention layers run linear x8 at base 1e6 (every pair 8 times slower) to 131,072 positions:
            # adjacent offsets come closer than the threshold; the model resolves them on its sliding layers
            assert b.status == "fail" and b.diagnosis.startswith("closest set local 1..64"), b.diagnosis
            s = load_model(name, layer_type="sliding_attention")
            assert gate_b(s, train_length=s.train_length, target_length=s.target_length).status == "pass"
            continue
        # Llama 4 Scout's 10.5M-token context: float32 phases there round the fast pairs by up to about 0.3 rad
        # (tests/test_gate_b_precision.py); every other shipped configuration passes
        expected = "fail" if name.startswith("llama-4-scout") else "pass"
        assert b.status == expected, (name, b.diagnosis)
        assert b.threshold == pytest.approx(_distance(0, 1, frequencies(m.rotary_dim, m.base)) / math.sqrt(2),
                                            rel=1e-10)


def test_llama_31_default_audit_passes_and_exits_zero(capsys):
    r = audit("llama-3.1-8b")
    assert r.gate_b.status == "pass" and r.outcome == "pass" and r.exit_code == 0
    assert main(["audit", "--config", "llama-3.1-8b"]) == 0
    assert main(["report", "llama-3.1-8b"]) == 0
    capsys.readouterr()


# ------------------------------------------------------------------------- inconclusive


def test_a_threshold_no_ruler_can_meet_is_inconclusive_not_a_pass_or_fail():
    rule = GateBRule(sharpness=0.1)  # needs sqrt(2 ln 3 / 0.1) = 4.7 > 2
    assert rule.threshold(TH128) >= MAX_DISTANCE
    dec = gate_b_decision([1, 2], TH128, rule=rule)
    assert dec.status == "inconclusive" and not dec.passed and "largest distance" in dec.reason
    r = audit("llama-2-7b", gate_b_rule=rule)
    assert r.gate_b.status == "inconclusive" and r.outcome == "inconclusive" and r.exit_code == 3
    assert r.status()["B"] == "inconclusive" and "No verdict" in r.verdict and not r.passed


def test_a_training_ruler_blind_to_adjacent_offsets_is_inconclusive():
    dec = gate_b_decision([1, 2], np.zeros(4))
    assert dec.threshold == 0.0 and dec.status == "inconclusive" and "could not fail" in dec.reason


def test_a_fail_outranks_an_inconclusive_gate():
    r = audit(RopeManifest(head_dim=8, max_position_embeddings=64, phase_dtype="bfloat16"), offsets=[1, 2, 3],
              target_length=40_000, origin=32_764, gate_b_rule=GateBRule(sharpness=0.1))
    assert r.status()["B"] == "inconclusive"
    assert r.outcome == ("fail" if r.status()["A"] == "FAIL" else "inconclusive")


# ------------------------------------------------------------------------- ties


def _brute_ties(offsets, theta, rtol=1e-9):
    offs = sorted(offsets)
    d = {(a, b): _distance(a, b, theta) for i, a in enumerate(offs) for b in offs[i + 1:]}
    m = min(d.values())
    return m, sorted(p for p, x in d.items() if x <= m * (1 + rtol))


def test_every_adjacent_pair_ties_in_exact_arithmetic_and_is_named_as_a_class():
    m, tied = _brute_ties(range(1, 65), TH128 / 8)
    assert len(tied) == 63 and all(b - a == 1 for a, b in tied)
    got = separation_margin(range(1, 65), TH128 / 8)
    assert got.tied == 63 and got.confusable == "every adjacent pair (63 pairs, tied)"
    assert got.margin == pytest.approx(m, rel=1e-10) == pytest.approx(0.03123, abs=5e-6)


def test_float32_rounding_does_not_pick_a_winner_and_the_origin_does_not_move_the_class():
    named = set()
    for origin in (32_703, 32_704, 32_705):
        got = separation_margin(range(1, 65), TH128 / 8, dtype="float32", origin=origin)
        assert got.confusable == "every adjacent pair (63 pairs, tied within rounding)", origin
        named.add(got.pair)
    r = audit(load_model("llama-2-7b").with_(scaling={"rule": "linear", "factor": 8.0}), target_length=32_768)
    assert "every adjacent pair" in r.gate_b.diagnosis and "40 and 41" not in r.gate_b.diagnosis


def test_a_single_closest_pair_is_named_and_a_tied_difference_class_counted():
    assert separation_margin([5, 6288], TH8).confusable == "offsets 5 and 6,288"
    m, tied = _brute_ties([0, 1, 6283, 6284], TH8)
    assert tied == [(0, 6283), (1, 6284)]
    got = separation_margin([0, 1, 6283, 6284], TH8)
    assert got.tied == 2 and got.confusable == "every pair 6,283 apart (2 pairs, tied)"


# ------------------------------------------------------------------------- bad input and the command line


def test_offsets_beyond_the_context_are_refused(capsys):
    with pytest.raises(ValueError, match="offsets"):
        audit("llama-3.1-8b", offsets=[1, 131_072])
    with pytest.raises(ValueError, match="offsets"):
        audit("llama-3.1-8b", offsets=[1, 10], origin=131_070)
    assert main(["report", "llama-3.1-8b", "--offsets", "1,4611686018427387904"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--offsets" in err and "beyond the context" in err


def test_exit_status_follows_the_verdict(capsys):
    assert main(["audit", "--interpolate"]) == 1
    assert main(["audit", "--sharpness", "0.1"]) == 3
    capsys.readouterr()
    assert main(["report", "llama-2-7b", "--sharpness", "0.1", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["outcome"] == "inconclusive"
    assert main(["audit", "--min-margin", "0.01", "--interpolate"]) == 0  # the fixed fallback, as asked
    for argv, word in [(["audit", "--min-margin", "0.1", "--gap", "2"], "--min-margin"),
                       (["audit", "--gap", "1", "--mass", "0.8"], "--mass"), (["audit", "--mass", "1"], "mass"),
                       (["report", "llama-2-7b", "--sharpness", "-1"], "sharpness")]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and word in err, (argv, err)


def test_rule_input_is_checked():
    for kwargs, word in [(dict(gap=1.0, mass=0.8), "mass"), (dict(mass=0.5), "mass"), (dict(mass=1.0), "mass"),
                         (dict(gap=0.0), "gap"), (dict(sharpness=float("nan")), "sharpness"),
                         (dict(fixed_margin=0.1, gap=1.0), "fixed_margin"), (dict(fixed_margin=2.5), "fixed_margin")]:
        with pytest.raises(ValueError, match=word):
            GateBRule(**kwargs)
    with pytest.raises(ValueError, match="band"):
        gate_b_decision([1, 2], TH128, weighting="band")
    with pytest.raises(ValueError, match="trained_theta"):
        gate_b_decision([1, 2], TH128, trained_theta=TH8)
    with pytest.raises(ValueError, match="rule"):
        gate_b_decision([1, 2], TH128, rule=0.1)
    with pytest.raises(ValueError, match="gate_b_rule"):
        audit("llama-2-7b", gate_b_rule=GateBRule(), min_margin=0.1)


def test_gate_b_decision_takes_the_operator():
    from ropegeo.operator import RotaryOperator
    from ropegeo.scaling import Scaling

    th = frequencies(64, 500_000.0)
    for op, plain in [(RotaryOperator(head_dim=64, base=500_000.0, scale=0.25), dict(scale=0.25)),
                      (RotaryOperator(head_dim=64, base=500_000.0, scaling=Scaling("linear", factor=4.0)), {})]:
        deployed = op.theta_at()
        got = gate_b_decision(range(1, 65), operator=op)
        want = gate_b_decision(range(1, 65), deployed, trained_theta=th, **plain)
        assert (got.status, got.margin, got.threshold) == (want.status, want.margin, want.threshold)
    # the training ruler is the operator's without its rule: judged against the deployed bank instead, the
    # threshold differs (the control that the default is read)
    lin = RotaryOperator(head_dim=64, base=500_000.0, scaling=Scaling("linear", factor=4.0))
    assert gate_b_decision(range(1, 65), operator=lin).threshold != \
        gate_b_decision(range(1, 65), lin.theta_at()).threshold
