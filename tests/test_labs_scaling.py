"""The scaling lab's front end (ropegeo/book/static/lab_scaling.js, run in Node) against ropegeo."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from jsrun import call_js
from ropegeo.book.widgets._lab import esm_source
from ropegeo.book.widgets.scaling_lab import LAB_RULES, ScalingLab, lab_report

STATES = [
    dict(rule="yarn", factor=8.0, head_dim=128, base=1e4, train_length=4096),
    dict(rule="llama3", factor=8.0, head_dim=128, base=5e5, train_length=8192, low_freq_factor=1.0, high_freq_factor=4.0),
    dict(rule="dynamic", factor=1.0, head_dim=64, base=1e4, train_length=2048),
    dict(rule="ntk", factor=63.5, head_dim=256, base=1e7, train_length=32768),
    dict(rule="linear", factor=2.5, head_dim=96, base=1000.0, train_length=1024),
    dict(rule="none", factor=4.0, head_dim=32, base=2e4, train_length=4096),
    dict(rule="yarn", factor=16.0, head_dim=96, base=1e4, train_length=4096, beta_fast=8.0, beta_slow=0.5),
    dict(rule="llama3", factor=1.0, head_dim=64, base=1e4, train_length=4096, low_freq_factor=2.0, high_freq_factor=3.0),
]
FIELDS = ("scaled_pairs", "novel_pairs", "total_novelty", "adjacent_similarity", "fastest_step", "margin",
          "coarse_margin", "attention_factor")


def _full(st):
    out = dict(beta_fast=32.0, beta_slow=1.0, low_freq_factor=1.0, high_freq_factor=4.0)
    out.update(st)
    return out


def test_front_end_matches_evaluate_for_every_rule():
    states = [_full(s) for s in STATES]
    got = call_js(esm_source("lab_scaling.js"), [("compute", [s]) for s in states])
    for st, r in zip(states, got):
        assert r["refused"] is None
        assert r["state"] == st
        assert [x["rule"] for x in r["rules"]] == list(LAB_RULES)
        for x in r["rules"]:
            kw = dict(st)
            kw.pop("rule")
            rep = lab_report(x["rule"], kw.pop("factor"), **kw)
            for f in FIELDS:
                np.testing.assert_allclose(x[f], getattr(rep, f), rtol=1e-9, atol=1e-12, err_msg=f"{x['rule']} {f}")
            np.testing.assert_allclose(x["adjacent_distance"], np.sqrt(2 * (1 - rep.adjacent_similarity)), atol=1e-7)


@pytest.mark.parametrize("crossed, held", [
    (dict(rule="yarn", beta_fast=0.5, beta_slow=2.0), dict(beta_fast=0.5, beta_slow=0.25)),
    (dict(rule="yarn", beta_fast=32.0, beta_slow=100.0), dict(beta_fast=32.0, beta_slow=31.75)),
    (dict(rule="yarn", beta_fast=0.25, beta_slow=0.25), dict(beta_fast=0.5, beta_slow=0.25)),
    (dict(rule="llama3", low_freq_factor=8.0, high_freq_factor=4.0), dict(low_freq_factor=3.75, high_freq_factor=4.0)),
    (dict(rule="llama3", low_freq_factor=64.0, high_freq_factor=64.0), dict(low_freq_factor=63.75, high_freq_factor=64.0)),
])
def test_front_end_never_reaches_a_refused_state(crossed, held):
    """A slider pushed past the other end of YaRN's ramp or Llama 3's band is held 0.25 below it:
    the lab draws ropegeo's numbers for the held state instead of blanking (ropegeo refuses the
    crossed one)."""
    st = _full(dict(factor=8.0, head_dim=64, base=1e4, train_length=4096) | crossed)
    r = call_js(esm_source("lab_scaling.js"), [("compute", [st])])[0]
    assert r["refused"] is None and r["selected"] is not None
    assert {k: r["state"][k] for k in held} == held
    kw = dict(r["state"])
    rep = lab_report(kw.pop("rule"), kw.pop("factor"), **kw)
    for f in FIELDS:
        np.testing.assert_allclose(r["selected"][f], getattr(rep, f), rtol=1e-9, atol=1e-12, err_msg=f)
    kw = dict(st)
    with pytest.raises(ValueError, match="must be greater"):
        lab_report(kw.pop("rule"), kw.pop("factor"), **kw)


def test_widget_state_is_validated():
    lab = ScalingLab(rule="ntk", factor=4.0, head_dim=64)
    assert lab.report.rule == "ntk" and lab.state()["head_dim"] == 64
    for name, value in [("rule", "longrope"), ("factor", 100.0), ("head_dim", 100), ("train_length", 5000), ("base", 1e9)]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)
    assert repr(lab).startswith("ScalingLab(rule='ntk'")
