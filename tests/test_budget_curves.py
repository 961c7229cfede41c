"""Bad input and small properties of ropegeo.toy.budget_curves, ropegeo.toy.dilution and ropegeo.toy.reanchor."""

import math

import numpy as np
import pytest

from ropegeo import toy as gc
from ropegeo.toy import budget_curves as bc
from ropegeo.toy import dilution, reanchor
from ropegeo.book.plots.budget import budget_figure, dilution_figure


@pytest.fixture(scope="module")
def head():
    return gc.train_offset_head(5, head_dim=16, train_length=64, seed=0)


@pytest.mark.parametrize("kwargs, name", [
    (dict(seeds=[]), "seeds"), (dict(seeds="01"), "seeds"), (dict(seeds=range(21)), "seeds"),
    (dict(rules=["nope"]), "rules"), (dict(rules="pi"), "rules"), (dict(budgets=[-1]), "budgets"),
    (dict(budgets=[10**6]), "budgets"), (dict(budgets=list(range(17))), "budgets"), (dict(factor=1), "factor"),
    (dict(head_dim=7), "head_dim"), (dict(train_length=4), "train_length"), (dict(lr=5.0), "lr"),
])
def test_budget_curve_refuses_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        bc.budget_curve(**kwargs)


def test_budget_curve_small_run_and_figure():
    run = bc.budget_curve(seeds=[0], rules=["pi", "ntk"], budgets=[0, 100])
    assert run["mass"]["pi"][1][0] > run["mass"]["pi"][0][0]
    assert run["amplitude_ratio"]["pi"][0] == [1.0]
    s = bc.spread([[0.1, 0.3, 0.2]])
    assert s["min"][0] == 0.1 and s["max"][0] == 0.3 and s["mean"][0] == pytest.approx(0.2)
    assert budget_figure(run).axes


def test_pipeline_mass_checks(head):
    assert bc.pipeline_mass(head, 64) == pytest.approx(gc.evaluate(head, 64).mass, rel=1e-12)
    with pytest.raises(ValueError, match="pipeline"):
        bc.pipeline_mass(head, 64, "float16")
    with pytest.raises(ValueError, match="length"):
        bc.pipeline_mass(head, 5)
    with pytest.raises(ValueError, match="head"):
        bc.pipeline_mass("head", 64)


def test_load_run():
    assert set(bc.load_run("finetune_budget")) >= {"settings", "mass", "provenance"}
    with pytest.raises(ValueError, match="name"):
        bc.load_run("../secrets")
    with pytest.raises(ValueError, match="name"):
        bc.load_run("missing_run")


def test_match_fix_curve_refuses_bad_input():
    for kwargs, name in ((dict(budgets=[2000]), "budgets"), (dict(rules=["x"]), "rules"), (dict(sequences=0), "sequences")):
        with pytest.raises(ValueError, match=name):
            bc.match_fix_curve(**kwargs)


def test_logit_multipliers():
    assert dilution.logit_multiplier("none", 4096, 64) == 1.0
    assert dilution.logit_multiplier("yarn", 64 * 1024, 64) == pytest.approx((0.1 * 10 * math.log(2) + 1) ** 2)
    assert dilution.logit_multiplier("log_length", 32, 64) == 1.0  # never below 1 inside the window
    with pytest.raises(ValueError, match="scaling"):
        dilution.logit_multiplier("qwen", 100, 64)


def test_dilution_probe(head):
    out = dilution.dilution_probe([head], [64, 1024], scalings=["none", "log_length"])
    assert out["mass"]["none"].shape == (2, 1) and out["mass"]["none"][1, 0] < out["mass"]["none"][0, 0]
    assert np.all(out["entropy"]["none"] <= np.array(out["uniform_entropy"])[:, None] + 1e-12)
    assert dilution_figure(out).axes
    for kwargs, name in ((dict(lengths=[3]), "lengths"), (dict(rule="pie"), "rule"), (dict(scalings="none"), "scalings")):
        with pytest.raises(ValueError, match=name):
            dilution.dilution_probe([head], **dict(dict(lengths=[64]), **kwargs))
    with pytest.raises(ValueError, match="heads"):
        dilution.dilution_probe(head, [64])


def test_reanchored_base():
    # the critical index (d/2) ln(L / 2 pi) / ln B is the same for the model and the toy
    b2 = reanchor.reanchored_base(500_000.0, 8192, 64)
    assert math.log(64 / (2 * math.pi)) / math.log(b2) == pytest.approx(math.log(8192 / (2 * math.pi)) / math.log(500_000.0))
    s = reanchor.split_counts(128, 500_000.0, 8192, 64)
    assert s["toy_reanchored"] == s["model"] < s["toy_same_bank"]
    with pytest.raises(ValueError, match="toy_length"):
        reanchor.reanchored_base(10_000.0, 4096, 4)
    with pytest.raises(ValueError, match="base"):
        reanchor.reanchored_base(1.0, 4096, 64)


def test_gate_c_schedule_keeps_the_models_split():
    from ropegeo.gates.c import gate_c_schedule
    from ropegeo.models.manifest import load_model

    m = load_model("llama-3.1-8b")
    plain = gate_c_schedule(m, 64, 512)
    kept = gate_c_schedule(m, 64, 512, model_length=m.train_length)
    assert plain["base"] == m.base and kept["base"] == pytest.approx(reanchor.reanchored_base(m.base, m.train_length, 64))
    slow = lambda th, n: int(np.sum(np.asarray(th) * n < 2 * math.pi))  # noqa: E731
    model_theta = m.base ** (-np.arange(0, m.rotary_dim, 2) / m.rotary_dim)
    assert slow(kept["theta"], 64) == slow(model_theta, m.train_length) < slow(plain["theta"], 64)
    # a toy manifest trained at the toy length is left alone
    same = gate_c_schedule(m, 64, 512, model_length=64)
    np.testing.assert_array_equal(same["theta"], plain["theta"])
