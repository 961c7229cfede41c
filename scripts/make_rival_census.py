"""Regenerate ropegeo/data/runs/rival_census.json: chapter 6's distant-rival mechanism over 60 seeds.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_rival_census.py [--check]

Trains the chapter's offset heads (head dim 16, base 10,000, length 64, offset 5) for seeds 0-59
and records, per seed, whether raw extrapolation to 512 loses to a distant rival, the fast-band
margin and flag, and what the NTK-aware rule does without fine-tuning
(``ropegeo.gates.b.rival_census.rival_census``). Seeds 0-9 are the chapter's own ten. With ``--check`` seeds
1000-1099 into ``rival_census_check.json``, the disjoint set on which the chapter states how its
counts vary. The tests use seeds 100-119. Deterministic; about a minute on one core. Records the settings, the ropegeo version
and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ropegeo.gates.b.rival_census import rival_census

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

SEEDS = range(60)
CHECK_SEEDS = range(1000, 1100)


def main() -> int:
    start = time.perf_counter()
    check = "--check" in sys.argv[1:]
    run = rival_census(CHECK_SEEDS if check else SEEDS)
    write_run(run, "rival_census_check.json" if check else "rival_census.json", "scripts/make_rival_census.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
