"""Regenerate ropegeo/data/runs/gate_c_battery.json: chapter 6's Gate C battery over 20 seeds and its fix.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_gate_c_battery.py [--check]

With ``--check``, seeds 20-39 into ``gate_c_battery_check.json``: the disjoint set on which the
tests check the chapter's ranges.

Runs ``ropegeo.gates.c.gate_c`` on the head-dim-16 ruler (base 10,000) trained at 64 and
served at 512 by raw extrapolation, with the battery settings of chapter 6 (match heads trained
300 steps) over seeds 0-19, then ``ropegeo.toy.budget_curves.match_fix_curve`` (the fix the verdict
prescribes: fine-tuning at 512). Deterministic; a minute or two on one core. Records the
settings, the ropegeo version and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ropegeo.gates.c import gate_c
from ropegeo.toy.budget_curves import match_fix_curve
from ropegeo.frequencies import frequencies

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402


def main() -> int:
    start = time.perf_counter()
    check = "--check" in sys.argv[1:]
    seeds = range(20, 40) if check else range(20)
    verdict = gate_c(frequencies(16, 10_000.0), train_length=64, target_length=512, seeds=seeds, match_steps=300)
    run = {"gate_c": verdict.to_dict(), "fix": match_fix_curve(seeds=seeds)}
    write_run(run, "gate_c_battery_check.json" if check else "gate_c_battery.json", "scripts/make_gate_c_battery.py",
              start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
