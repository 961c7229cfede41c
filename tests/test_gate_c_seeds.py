"""Gate C judges each seed: the battery's accuracy checks pass only when every seed reaches the threshold.

Labelled controls: the stored twenty-seed battery (chapter 6), whose offset heads average 0.945 at 512
while 4 of 20 seeds score below 0.9 (the lowest 0.669), must fail the offset check (the seed mean passed it); batteries
where every seed clears the threshold must pass; one seed below is enough to fail.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from ropegeo.gates.c import GateCVerdict, judge_seeds

RUNS = Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "runs"
BATTERY = json.loads((RUNS / "gate_c_battery.json").read_text())["gate_c"]
OFFSET = "offset accuracy at target (min)"
MATCH = "match accuracy at target (min)"


def rejudge(per_seed, change=0.0):
    return judge_seeds(per_seed["offset L"]["accuracy"], per_seed["offset target"]["accuracy"],
                       per_seed["match target"]["accuracy"], change)


def test_stored_battery_fails_the_offset_check_per_seed():
    # negative control: the failure the seed mean hid (independent count from the stored accuracies)
    acc = np.array(BATTERY["per_seed"]["offset target"]["accuracy"])
    assert acc.mean() >= 0.9  # the old check (the mean) passed this battery
    below = sum(a < 0.9 for a in acc.tolist())
    assert below == 4
    c = rejudge(BATTERY["per_seed"])
    assert not c[OFFSET]["passed"] and c[OFFSET]["seeds_below"] == below and c[OFFSET]["seeds"] == 20
    assert c[OFFSET]["value"] == min(acc.tolist())
    assert c["offset accuracy at L (min)"]["passed"]  # positive control inside the same battery
    # the stored record carries the per-seed verdict
    assert BATTERY["checks"][OFFSET] == {k: c[OFFSET][k] for k in BATTERY["checks"][OFFSET]}
    assert not BATTERY["passed"]


@pytest.mark.parametrize("seeds", [1, 3, 10])
def test_every_seed_above_passes(seeds):
    # positive control: every seed clears each threshold, by any margin
    good = np.full(seeds, 0.9)
    c = judge_seeds(np.ones(seeds), good, good, 1e-9)
    assert all(x["passed"] for x in c.values())
    assert all(x.get("seeds_below", 0) == 0 for x in c.values())


@pytest.mark.parametrize("check, which", [(OFFSET, 1), (MATCH, 2), ("offset accuracy at L (min)", 0)])
def test_one_seed_below_fails(check, which):
    # negative control: nine perfect seeds and one just under the threshold; the mean (0.99) would pass
    arrays = [np.ones(10), np.ones(10), np.ones(10)]
    threshold = {0: 0.95, 1: 0.9, 2: 0.9}[which]
    arrays[which][3] = np.nextafter(threshold, 0.0)
    assert arrays[which].mean() > threshold
    c = judge_seeds(*arrays, 0.0)
    assert not c[check]["passed"] and c[check]["seeds_below"] == 1
    assert [n for n, x in c.items() if not x["passed"]] == [check]


def test_shift_check_controls():
    ones = np.ones(3)
    assert judge_seeds(ones, ones, ones, 1e-6)["global shift change (max)"]["passed"]
    assert not judge_seeds(ones, ones, ones, 2e-6)["global shift change (max)"]["passed"]


def test_table_says_how_many_seeds():
    c = rejudge(BATTERY["per_seed"])
    text = str(GateCVerdict(all(x["passed"] for x in c.values()), c, {}, {}))
    assert "4 of 20 seeds below" in text and "20 of 20 seeds below" in text and text.startswith("Gate C: FAIL")
