"""Chapter 6's mechanism sentences as counts: the stored seed census and the budget overlap.

``ropegeo/data/runs/rival_census.json`` (seeds 0-59, ``scripts/make_rival_census.py``) holds, per
seed, whether raw extrapolation loses to a distant rival, the fast-band flag and what the NTK-aware
ruler does. Here its counts are recomputed with plain loops from the per-seed records, one stored
seed is re-derived from scratch with the independent evaluation of ``test_chapter06`` (complex pair
products, a written-out softmax, a closed-form chord), and every counted sentence is re-checked in
direction on a disjoint seed set (100-119), and the stored disjoint census
(``rival_census_check.json``, seeds 1000-1099, the script's ``--check``) is recounted the same way. The budget overlap of the amplitude ratios is recomputed
from the stored curve with loops, and its direction (the curves cross) on other seeds.
"""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from test_chapter06 import GLUED, L, OFF, T, bank, chord, ref_offset_eval, score

from ropegeo import toy as gc
from ropegeo.toy import budget_curves as bc
from ropegeo.gates.b.rival_census import MAX_CENSUS_SEEDS, census_counts, rival_census

RUNS = Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "runs"
CENSUS = json.loads((RUNS / "rival_census.json").read_text())
CENSUS_CHECK = json.loads((RUNS / "rival_census_check.json").read_text())
CURVE = json.loads((RUNS / "finetune_budget.json").read_text())
NTK_THETA = bank(16, 10_000.0 * 8 ** (16 / 14))  # the NTK-aware base at factor 8: B s^(d / (d - 2))
FAST = L * bank(16) >= 2 * math.pi


def by_hand(head):
    """The census record of one head, from the learned vectors alone."""
    beyond = score(head, np.arange(L, T))
    rival = L + int(np.argmax(beyond))
    amp = np.array([math.hypot(head.q[2 * i], head.q[2 * i + 1]) * math.hypot(head.k[2 * i], head.k[2 * i + 1])
                    for i in range(8)])
    w = np.where(FAST, amp, 0.0)
    fast_margin = chord(rival - OFF, bank(16), w)
    # Gate B's default rule for this weighting: a margin of D_train(1) / sqrt(2), D_train(1) the weighted
    # distance between neighbouring offsets (the least sharp head that tells them apart 9 to 1, judged at 3 to 1)
    threshold = chord(1, bank(16), w) * math.sqrt(math.log(3) / math.log(9))
    ntk = ref_offset_eval(head, T, theta=NTK_THETA, scale=1.0)
    wrong = ntk["winner_disp"][ntk["winner_disp"] != OFF]
    vals, counts = np.unique(wrong, return_counts=True)
    winner = int(vals[np.lexsort((vals, -counts))][0]) if wrong.size else None
    return {"raw_loses": bool(beyond.max() > score(head, [OFF])[0]), "rival": rival, "fast_margin": fast_margin,
            "fast_threshold": threshold, "flagged": fast_margin < threshold, "ntk_accuracy": ntk["acc"], "ntk_loses": ntk["acc"] < 1.0,
            "ntk_winner": winner, "ntk_near": None if winner is None else winner < L}


def loop_counts(rows):
    c = dict.fromkeys(("seeds", "raw_losers", "flagged", "flagged_losers", "missed_losers", "ntk_rescued",
                       "ntk_failures", "ntk_failures_raw_losers", "ntk_failures_new", "ntk_failures_near",
                       "ntk_failures_far"), 0)
    for r in rows:
        c["seeds"] += 1
        c["flagged"] += r["flagged"]
        if r["raw_loses"]:
            c["raw_losers"] += 1
            c["flagged_losers" if r["flagged"] else "missed_losers"] += 1
            c["ntk_rescued"] += not r["ntk_loses"]
        if r["ntk_loses"]:
            c["ntk_failures"] += 1
            c["ntk_failures_raw_losers" if r["raw_loses"] else "ntk_failures_new"] += 1
            c["ntk_failures_near" if r["ntk_near"] else "ntk_failures_far"] += 1
    c["flagged_survivors"] = c["flagged"] - c["flagged_losers"]
    c["clear_survivors"] = c["seeds"] - c["raw_losers"] - c["flagged_survivors"]
    c["sensitivity"] = c["flagged_losers"] / c["raw_losers"] if c["raw_losers"] else math.nan
    survivors = c["seeds"] - c["raw_losers"]
    c["specificity"] = c["clear_survivors"] / survivors if survivors else math.nan
    pairs = [(a["fast_margin"], b["fast_margin"]) for a in rows if a["raw_loses"] for b in rows if not b["raw_loses"]]
    c["margin_auc"] = sum(1.0 if x < y else 0.5 if x == y else 0.0 for x, y in pairs) / len(pairs) if pairs else math.nan
    return c


@pytest.fixture(scope="module")
def disjoint():
    heads = []
    for first in (100, 110):  # train_heads takes at most 20 seeds; two batches of ten
        heads += gc.train_heads("offset", range(first, first + 10), offset=OFF, head_dim=16, base=10_000.0,
                                train_length=L)
    return [by_hand(h) for h in heads]


def test_stored_census_settings_and_counts():
    s = CENSUS["settings"]
    assert (s["head_dim"], s["train_length"], s["offset"], s["target_length"]) == (16, L, OFF, T)
    assert s["fast_pairs"] == int(FAST.sum()) and [r["seed"] for r in CENSUS["seeds"]] == list(range(60))
    assert census_counts(CENSUS) == loop_counts(CENSUS["seeds"])


def test_one_stored_seed_recomputed_from_scratch():
    # seed 1: the chapter's own loser, and the one whose NTK rival the chapter printed
    head = gc.train_heads("offset", [1], offset=OFF, head_dim=16, base=10_000.0, train_length=L)[0]
    mine, stored = by_hand(head), CENSUS["seeds"][1]
    for key in ("raw_loses", "rival", "flagged", "ntk_loses", "ntk_winner", "ntk_near"):
        assert mine[key] == stored[key], key
    assert mine["fast_margin"] == pytest.approx(stored["fast_margin"], rel=1e-9)
    assert mine["fast_threshold"] == pytest.approx(stored["fast_threshold"], rel=1e-9)
    assert mine["ntk_accuracy"] == pytest.approx(stored["ntk_accuracy"], rel=1e-12)


def test_the_stored_census_supports_the_chapter_sentences():
    c = census_counts(CENSUS)
    assert c["seeds"] >= 10
    # the fast-band flag, judged by Gate B's rule, catches every loser and flags far more seeds than lose:
    # a flag, not a forecast
    assert c["flagged_losers"] == c["raw_losers"] and c["missed_losers"] == 0
    assert c["flagged"] - c["flagged_losers"] > 2 * c["flagged_losers"]
    # ...and every survivor: specificity 0, so the flag says nothing about which seed loses, and the
    # margin itself barely ranks losers below survivors (0.5 is chance)
    assert (c["sensitivity"], c["specificity"]) == (1.0, 0.0) and c["flagged"] == c["seeds"]
    assert 0.4 < c["margin_auc"] < 0.7
    # with the old fixed threshold of 0.1 the same band would have missed a loser (seed 19: margin 0.26)
    assert any(r["raw_loses"] and r["fast_margin"] >= 0.1 for r in CENSUS["seeds"])
    # NTK rescues most raw losers, and some of its failures are seeds that did not lose raw
    assert c["ntk_rescued"] > c["raw_losers"] / 2 and c["ntk_failures_new"] >= 1


def test_counted_sentences_hold_in_direction_on_disjoint_seeds(disjoint):
    c = loop_counts(disjoint)
    assert c["raw_losers"] >= 1
    assert c["flagged"] > c["flagged_losers"] == c["raw_losers"]  # it flags every loser and seeds that do not lose
    assert c["ntk_rescued"] > c["raw_losers"] / 2  # NTK rescues most raw losers
    assert c["ntk_failures_new"] >= 1  # ...and fails in seeds of its own
    assert c["ntk_failures_near"] >= 1  # one of which attends to a near offset, not to a distant rival
    assert c["seeds"] == 20


def test_stored_disjoint_census():
    """The chapter's second census (seeds 1000-1099): recounted by loops, one NTK failure inside the window
    re-derived from scratch, the glued counts, and the chapter's sentences in direction."""
    assert [r["seed"] for r in CENSUS_CHECK["seeds"]] == list(range(1000, 1100))
    assert CENSUS_CHECK["settings"] == CENSUS["settings"]
    c = loop_counts(CENSUS_CHECK["seeds"])
    assert census_counts(CENSUS_CHECK) == c
    near = [r for r in CENSUS_CHECK["seeds"] if r["ntk_loses"] and r["ntk_near"]]
    head = gc.train_heads("offset", [near[0]["seed"]], offset=OFF, head_dim=16, base=10_000.0, train_length=L)[0]
    mine = by_hand(head)
    for key in ("raw_loses", "rival", "flagged", "ntk_loses", "ntk_winner", "ntk_near"):
        assert mine[key] == near[0][key], key
    glued = {"chk_census_seeds": c["seeds"], "chk_census_losers": c["raw_losers"],
             "chk_census_ntk_rescued": c["ntk_rescued"], "chk_census_ntk_failures": c["ntk_failures"],
             "chk_census_ntk_new": c["ntk_failures_new"], "chk_census_ntk_far": c["ntk_failures_far"],
             "chk_census_ntk_near": c["ntk_failures_near"], "chk_census_first": 1000, "chk_census_last": 1099,
             "census_ntk_near": loop_counts(CENSUS["seeds"])["ntk_failures_near"]}
    assert {k: GLUED[k] for k in glued} == glued
    assert GLUED["chk_census_near_seed"] == ", ".join(str(r["seed"]) for r in near)
    assert GLUED["chk_census_near_at"] == ", ".join(str(r["ntk_winner"]) for r in near)
    # "six tokens past the target, where pair 0 nearly completes a turn": winner 11, 6 radians of pair 0
    assert [r["ntk_winner"] for r in near] == [OFF + 6] and abs(6 - 2 * math.pi) < 0.3
    # the prose's directions: most raw losers rescued, failures of its own, both kinds
    assert c["ntk_rescued"] > c["raw_losers"] / 2 and c["ntk_failures_new"] >= 1
    assert c["ntk_failures_far"] >= 1 and c["ntk_failures_near"] >= 1
    # the fast-band flag on these seeds: "flags 100 of 100, the 23 losers among them", and the margin's ranking
    # "0.58 (0.41 on seeds 1000-1099), where 0.5 is chance": near chance on both censuses, on opposite sides
    assert GLUED["chk_census_flagged"] == c["flagged"] == c["seeds"] and c["flagged_losers"] == c["raw_losers"]
    assert GLUED["chk_census_margin_auc"] == pytest.approx(c["margin_auc"], rel=1e-12)
    assert f'{GLUED["chk_census_margin_auc"]:.2f}' == "0.41" and 0.3 < c["margin_auc"] < 0.5 < GLUED["census_margin_auc"] < 0.7


def test_census_function_agrees_with_the_hand_derivation_on_a_few_disjoint_seeds(disjoint):
    run = rival_census([101, 104, 109])
    for rec, mine in zip(run["seeds"], (disjoint[1], disjoint[4], disjoint[9])):
        for key in ("raw_loses", "rival", "flagged", "ntk_loses", "ntk_winner", "ntk_near"):
            assert rec[key] == mine[key], (rec["seed"], key)
        assert rec["fast_threshold"] == pytest.approx(mine["fast_threshold"], rel=1e-9)


@pytest.mark.parametrize("seeds, fragment", [([], "at least one"), ([1, 1], "repeats"), ("01", "iterable"),
                                              (range(MAX_CENSUS_SEEDS + 1), "MAX_CENSUS_SEEDS"), ([-1], "seeds")])
def test_census_rejects_bad_seeds(seeds, fragment):
    with pytest.raises(ValueError, match=fragment):
        rival_census(seeds)


def test_census_counts_rejects_other_input():
    with pytest.raises(ValueError, match="census"):
        census_counts({"rows": []})


# ------------------------------------------------------------------ the amplitude ratios: means cross, seeds overlap
def test_rule_overlap_against_plain_loops():
    o = bc.rule_overlap(CURVE, "llama3", "pi")
    budgets = CURVE["settings"]["budgets"]
    for i, n in enumerate(budgets):
        a, b = CURVE["amplitude_ratio"]["llama3"][i], CURVE["amplitude_ratio"]["pi"][i]
        assert o["rule_max"][i] == max(a) and o["against_min"][i] == min(b)
        assert (n in o["mean_above"]) == (sum(a) / len(a) > sum(b) / len(b))
        assert (n in o["seed_above_min"]) == (max(a) > min(b))
    # at 3,000 steps Llama 3's largest seed lies above PI's smallest (16.1 against 8.4 on seeds 0-19)
    at = budgets.index(3000)
    assert o["rule_max"][at] > o["against_min"][at]
    assert o["mean_above"] == [150, 300, 600]


def test_amplitude_curves_cross_on_disjoint_seeds():
    run = bc.budget_curve(seeds=range(20, 23), rules=("pi", "llama3"), budgets=(150, 3000))
    r = {k: np.mean(run["amplitude_ratio"][k], axis=1) for k in ("pi", "llama3")}
    assert r["llama3"][0] > r["pi"][0]  # small budget: Llama 3's heads grow more
    assert r["llama3"][1] < r["pi"][1]  # 3,000 steps: interpolation's grow more


def test_rule_overlap_rejects_bad_input():
    with pytest.raises(ValueError, match="rule"):
        bc.rule_overlap(CURVE, "alibi")
    with pytest.raises(ValueError, match="quantity"):
        bc.rule_overlap(CURVE, "ntk", quantity="loss")
    with pytest.raises(ValueError, match="run"):
        bc.rule_overlap([], "ntk")


# ------------------------------------------------------------------ the chapter's glued counts
def test_glued_census_counts():
    c = loop_counts(CENSUS["seeds"])
    assert GLUED["census_seeds"] == c["seeds"] == 60
    assert GLUED["census_losers"] == c["raw_losers"] and GLUED["census_flagged"] == c["flagged"]
    assert GLUED["census_flagged_losers"] == c["flagged_losers"] and GLUED["census_missed"] == c["missed_losers"]
    assert GLUED["census_flagged_survivors"] == c["flagged"] - c["flagged_losers"]
    assert (GLUED["census_sensitivity"], GLUED["census_specificity"]) == (c["sensitivity"], c["specificity"]) == (1.0, 0.0)
    assert GLUED["census_margin_auc"] == pytest.approx(c["margin_auc"], rel=1e-12)
    assert GLUED["census_missed_fixed"] == sum(r["raw_loses"] and r["fast_margin"] >= 0.1 for r in CENSUS["seeds"]) >= 1
    assert GLUED["census_ntk_rescued"] == c["ntk_rescued"] and GLUED["census_ntk_failures"] == c["ntk_failures"]
    assert GLUED["census_ntk_new"] == c["ntk_failures_new"] and GLUED["census_ntk_far"] == c["ntk_failures_far"]
    # the prose: "mostly removes" (more than half rescued) and "brings near-returns of its own" (new failures)
    assert c["ntk_rescued"] > c["raw_losers"] / 2 and c["ntk_failures_new"] >= 1
    # the census's first ten seeds are the chapter's ten: its counts agree with the ten-seed glues
    ten = CENSUS["seeds"][:10]
    assert GLUED["rival_count"] == sum(r["raw_loses"] for r in ten)
    assert GLUED["ntk_perfect"] == sum(not r["ntk_loses"] for r in CENSUS["seeds"][:20])  # stated over seeds 0-19
    assert GLUED["ntk_fail_seeds"] == ", ".join(str(r["seed"]) for r in ten if r["ntk_loses"])


def test_glued_budget_overlap():
    budgets = CURVE["settings"]["budgets"]
    at = budgets.index(3000)
    llama, pi = CURVE["amplitude_ratio"]["llama3"], CURVE["amplitude_ratio"]["pi"]
    above = [b for b, a, p in zip(budgets, llama, pi) if sum(a) / len(a) > sum(p) / len(p)]
    assert GLUED["llama3_mean_above"] == ", ".join(f"{b:,}" for b in above) == "150, 300, 600"
    assert GLUED["llama3_max_3000"] == max(llama[at]) > GLUED["pi_min_3000"] == min(pi[at])
    # the ordering the prose keeps: at 3,000 steps every other rule's mean is below interpolation's
    for rule in ("raw", "ntk", "yarn", "llama3"):
        r = CURVE["amplitude_ratio"][rule][at]
        assert sum(r) / len(r) < sum(pi[at]) / len(pi[at])


def test_mistral_training_length_is_the_papers():
    rec = json.loads((RUNS.parent / "mistral-7b.json").read_text())
    assert rec["trained_context"]["length"] == 8192 == GLUED["mistral_train"]  # Jiang et al. 2023, Table 1
    assert GLUED["mistral_declared"] == rec["config"]["max_position_embeddings"] == 32_768


# ------------------------------------------------------------------ figures as a reader sees them
def test_gate_a_grid_stays_in_chapter_5():
    # captions, alt text and column widths of every chapter's figures: tests/test_plots_readable.py
    nb = json.loads((Path(__file__).resolve().parents[1] / "chapters" / "06_audit.ipynb").read_text())
    src = "\n".join("".join(c["source"]) for c in nb["cells"])
    assert "gate_a_matrix" not in src  # Gate A's grid lives in chapter 5


def test_chapter6_figure_functions_are_readable_at_phone_width():
    from ropegeo.toy import dilution
    from ropegeo.book.plots.audit import margin_bars, rival_figure
    from ropegeo.book.plots.behaviour import accuracy_mass_by_position, attention_by_displacement, score_profile_figure, seed_table
    from ropegeo.book.plots.budget import budget_figure, dilution_figure
    from ropegeo.book.plots.readable import smallest_text_px

    heads = gc.train_heads("offset", [0, 1], offset=OFF, head_dim=16, base=10_000.0, train_length=L, steps=200)
    res = gc.evaluate_seeds(heads, 128, label="t")
    figs = [budget_figure(CURVE, layout="column"), rival_figure(heads[0], 128, layout="column"),
            seed_table([res], layout="column"), accuracy_mass_by_position(res, layout="column"),
            score_profile_figure(heads[0], 128, per_pair=True, layout="column"),
            attention_by_displacement(res, max_displacement=8, layout="column"),
            dilution_figure(dilution.dilution_probe(heads, [64, 128], rule="yarn"), layout="column"),
            margin_bars([("a", {"local 1..64": 0.2, "distant": 0.7})], thresholds=[0.1], layout="column")]
    for fig in figs:
        assert smallest_text_px(fig) >= 9.0
    with pytest.raises(ValueError, match="layout"):
        budget_figure(CURVE, layout="phone")


def test_gate_grid_colours_what_the_report_prints():
    """The grid shows each gate as the report prints it: "checked" for a configuration's own operator,
    "moot" after the first failure, a green "pass" only for a pass on code (labelled controls for each)."""
    from ropegeo.book.broken import entry
    from ropegeo.book.plots.audit import gate_grid
    from ropegeo.gates.procedure import audit
    from ropegeo.models.manifest import RopeManifest

    def printed(report):  # the state column of the plain-text report
        return [re.match(r"\s*Gate [ABC]  (not run|\S+)", line).group(1) for line in str(report).splitlines()[1:4]]

    restart = audit(entry("query-restart").impl, manifest=RopeManifest(head_dim=64, phase_dtype="float32"))
    config = audit("llama-3.1-8b")
    code = audit(entry("interleaved").impl, manifest=RopeManifest(head_dim=64, phase_dtype="float32"))
    reports = {"restart": restart, "config": config, "code": code}
    fig = gate_grid(reports, layout="column")
    cells = [t.get_text() for t in fig.axes[0].texts if t.get_position()[0] in (0, 1, 2)]
    want = [w for r in reports.values() for w in printed(r)]
    assert cells == want
    assert printed(restart)[:2] == ["FAIL", "moot"] and printed(config)[0] == "checked"
    assert code.gate_a_on == "implementation" and printed(code)[0] == "pass"  # the one green pass
    colours = fig.axes[0].images[0].get_array()
    assert colours[0, 1] != colours[2, 0] and colours[1, 0] != colours[2, 0]
    hatched = sum(p.get_hatch() == "//" for p in fig.axes[0].patches)
    assert hatched == want.count("checked") + want.count("moot") >= 2
