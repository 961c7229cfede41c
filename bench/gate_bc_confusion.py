"""Gate B's fast-band flag and Gate C's battery judged on stored runs: confusion counts per seed.

No training: both read stored runs of ``ropegeo/data/runs/``.

* **The fast-band flag** (``ropegeo.gates.b.rival_census``) on the 60-seed census
  (``rival_census.json``): labelled positive = the seed loses to a distant rival under raw
  extrapolation, negative = it does not. Prints TP / FN / FP / TN, sensitivity, specificity and the
  margin's AUC (chance that a loser's fast-band margin lies below a survivor's; 0.5 is chance).
* **Gate C's battery** (``gate_c_battery.json``, 10 seeds): each check per seed (pass or fail
  against its threshold), the verdict by the minimum over seeds (``ropegeo.gates.c.judge_seeds``)
  and the verdict the seed mean would have given.

Run with ``python bench/gate_bc_confusion.py``; it exits 1 if a verdict contradicts its labels (a
Gate C check that passes with a seed below its threshold).

Measured 2026-12-05 (stored runs): the fast-band flag TP 12, FN 0, FP 48, TN 0 (sensitivity 1.00,
specificity 0.00, AUC 0.58): it flags every seed, so the audit uses no fast-band flag. Gate C's
battery: offset accuracy at 512 passes 8 of 10 seeds (two at 0.744), match accuracy 0 of 10; the
mean (0.949) passed the offset check, the per-seed minimum fails it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from ropegeo.gates.b.rival_census import census_counts
from ropegeo.gates.c import judge_seeds

RUNS = Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "runs"


def fast_band() -> None:
    c = census_counts(json.loads((RUNS / "rival_census.json").read_text()))
    print(f"fast-band flag on {c['seeds']} census seeds (positive = loses to a distant rival):")
    print(f"  TP {c['flagged_losers']}  FN {c['missed_losers']}  FP {c['flagged_survivors']}  TN {c['clear_survivors']}"
          f"   sensitivity {c['sensitivity']:.2f}  specificity {c['specificity']:.2f}  margin AUC {c['margin_auc']:.2f}")


def battery() -> int:
    run = json.loads((RUNS / "gate_c_battery.json").read_text())["gate_c"]
    ps, stored = run["per_seed"], run["checks"]
    arrays = [np.array(ps[k]["accuracy"]) for k in ("offset L", "offset target", "match target")]
    checks = judge_seeds(*arrays, stored["global shift change (max)"]["value"])
    print(f"Gate C battery, seeds {ps['offset L']['seeds']}:")
    bad = 0
    for (name, c), acc in zip(list(checks.items())[:3], arrays):
        marks = " ".join("p" if a >= c["threshold"] else "F" for a in acc)
        mean_pass = acc.mean() >= c["threshold"]
        print(f"  {name:<34} per seed [{marks}]  {c['seeds'] - c['seeds_below']} of {c['seeds']} pass;"
              f" verdict (min {c['value']:.3f}) {'pass' if c['passed'] else 'FAIL'};"
              f" by the mean ({acc.mean():.3f}) it would {'pass' if mean_pass else 'fail'}")
        bad += c["passed"] != bool(np.all(acc >= c["threshold"]))
    return bad


def main() -> int:
    fast_band()
    return 1 if battery() else 0


if __name__ == "__main__":
    sys.exit(main())
