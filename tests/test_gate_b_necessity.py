"""Gate B's verdicts against the trained outcomes of chapters 7 and 8 (issue 35), recounted from the JSON records.

Margins and thresholds come from the closed form of the phase distance at even weights,
``chord(dd) = sqrt(mean_i 4 sin^2(dd theta_i / 2))``, never from ``ropegeo.margins``; the default rule's
threshold is ``chord(1) / sqrt 2`` on the ruler the head was trained with. The finding these records give:
every one of their cells judges a head on the ruler it was trained with, over a length in which no offset
returns near another, so each passes by construction (margin = chord(1) = sqrt 2 x threshold). They add
seed runs where Gate B passes and heads succeed or stay undertrained, and no cell where Gate B fails.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ropegeo.gates.b.rival_census import necessity_table

RUNS = Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "runs"


def run(name):
    return json.loads((RUNS / f"{name}.json").read_text())


def chord(dd, th):
    return math.sqrt(float(np.mean(4 * np.sin(dd * np.asarray(th, dtype=float) / 2) ** 2)))


def judged(th, length):
    """(verdict, margin, threshold) of the default rule over every displacement 1 .. length - 1."""
    threshold = chord(1, th) / math.sqrt(2)
    margin = min(chord(dd, th) for dd in range(1, length - 1))
    return ("pass" if margin >= threshold else "fail"), margin, threshold


def recount(schemes, rulers, axial, success=0.9):
    """Cells (source, rule, budget) -> (verdict, margin, threshold, succeed, fail), from the records alone."""
    out = {}
    s = schemes["settings"]
    bank = 10_000.0 ** (-np.arange(0, s["head_dim"], 2) / s["head_dim"])
    for j, f in enumerate(s["factors"]):
        acc = [r["stretch_accuracy"][j] for r in schemes["results"]["rope"]]
        ok = sum(a >= success for a in acc)
        out[("scheme_comparison", f"rope x{f}", s["steps"])] = (*judged(bank, f * s["train_length"]), ok, len(acc) - ok)
    s = rulers["settings"]
    for name, r in rulers["rulers"].items():
        ok = sum(a >= success for a in r["stretch_accuracy"])
        out[("ruler_study", name, s["table_steps"])] = (*judged(r["theta"], s["factor"] * s["train_length"]), ok,
                                                         len(r["stretch_accuracy"]) - ok)
    s = axial["settings"]
    bank = s["base"] ** (-np.arange(0, s["head_dim"], 2) / s["head_dim"])
    for name, assignment in s["assignments"].items():
        axes = []
        for a, extent in enumerate(s["grid"]):
            band = np.where(np.asarray(assignment) == a, bank, 0.0)  # the other pairs do not turn along axis a
            axes.append(judged(band, extent + 1))  # offsets 0 .. extent - 1: differences 1 .. extent - 1
        verdict = "pass" if all(x[0] == "pass" for x in axes) else "fail"
        worst = min(axes, key=lambda x: x[1] / x[2])
        for budget, acc in zip(s["budgets"], axial["curves"][name]["accuracy"]):
            ok = sum(a >= success for a in acc)
            out[("axial_budget", name, budget)] = (verdict, worst[1], worst[2], ok, len(acc) - ok)
    return out


def table(schemes, rulers, axial):
    rows = necessity_table(run("finetune_budget"), run("rival_census"), scheme_comparison=schemes,
                           ruler_study=rulers, axial_budget=axial)
    return {(r["source"], r["rule"], r["budget"]): (r["verdict"], r["margin"], r["threshold"], r["succeed"], r["fail"])
            for r in rows if r["source"] in ("scheme_comparison", "ruler_study", "axial_budget")}


def same(got, want):
    assert got.keys() == want.keys()
    for k in want:
        assert got[k][0] == want[k][0] and got[k][3:] == want[k][3:], k
        assert got[k][1] == pytest.approx(want[k][1], rel=1e-9) and got[k][2] == pytest.approx(want[k][2], rel=1e-9), k


def test_chapters_7_and_8_records_against_gate_b():
    schemes, rulers, axial = run("scheme_comparison"), run("ruler_study"), run("axial_budget")
    want = recount(schemes, rulers, axial)
    same(table(schemes, rulers, axial), want)
    # the counts the report gives: 20 cells, 400 seed runs, Gate B passes every one
    assert len(want) == 3 + 3 + 14
    assert sum(c[3] + c[4] for c in want.values()) == 400
    assert sum(c[3] for c in want.values() if c[0] == "pass") == 283
    assert sum(c[4] for c in want.values() if c[0] == "pass") == 117
    assert all(c[0] == "pass" for c in want.values())
    # by construction: the head is judged on its own ruler and no offset returns within the length
    assert all(c[1] == pytest.approx(math.sqrt(2) * c[2], rel=1e-12) for c in want.values())
    # chapter 6's rows are unchanged and come first
    base = necessity_table(run("finetune_budget"), run("rival_census"))
    full = necessity_table(run("finetune_budget"), run("rival_census"), scheme_comparison=schemes, ruler_study=rulers,
                           axial_budget=axial)
    assert full[: len(base)] == base and len(full) == len(base) + 20


def test_negative_controls_change_the_recount_and_the_verdict():
    schemes, rulers, axial = run("scheme_comparison"), run("ruler_study"), run("axial_budget")
    # an altered record: one seed of the blocked split at 3,200 steps made to fail
    lost = json.loads(json.dumps(axial))
    lost["curves"]["blocked"]["accuracy"][-1][0] = 0.2
    got, want = table(schemes, rulers, lost), recount(schemes, rulers, axial)
    assert got[("axial_budget", "blocked", 3200)][3:] == (19, 1) != want[("axial_budget", "blocked", 3200)][3:]
    # a ruler whose every pair returns at offset 7 fails Gate B, here and in the recount
    wraps = json.loads(json.dumps(rulers))
    wraps["rulers"]["base 500"]["theta"] = [2 * math.pi / 7] * 8
    got, want = table(schemes, wraps, axial), recount(schemes, wraps, axial)
    same(got, want)
    assert got[("ruler_study", "base 500", 1000)][0] == "fail" and got[("ruler_study", "base 500", 1000)][1] < 1e-12
    # an axis that owns no pair cannot be read (no turn at all): Gate B gives no pass
    starved = json.loads(json.dumps(axial))
    starved["settings"]["assignments"]["y starved, slow"] = [0] * 8
    assert table(schemes, rulers, starved)[("axial_budget", "y starved, slow", 50)][0] != "pass"


@pytest.mark.parametrize("key", ["scheme_comparison", "ruler_study", "axial_budget"])
def test_records_of_another_shape_are_refused_by_name(key):
    with pytest.raises(ValueError, match=key):
        necessity_table(run("finetune_budget"), run("rival_census"), **{key: {"settings": {}}})
