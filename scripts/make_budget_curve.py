"""Regenerate ropegeo/data/runs/finetune_budget.json: chapter 6's fine-tuning budget curve.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_budget_curve.py [--check]

Seeds 0-19; with ``--check`` seeds 20-39 into ``finetune_budget_check.json``, the disjoint set on
which the tests check that the chapter's ranges and directions hold. Deterministic (every head and
fine-tuning run is seeded); a few minutes of CPU each. The file records the settings, the ropegeo
version and the git commit of the code that produced it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import ropegeo
from ropegeo.toy.budget_curves import BUDGETS, CURVE_RULES, RUNS, budget_curve


def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_run(run: dict, name: str, script: str, start: float) -> None:
    """Add the provenance record to ``run`` and write it to ``ropegeo/data/runs/<name>``.

    ``script`` is the generating script's path from the repository root; ``start`` the
    ``time.perf_counter()`` reading taken when the run began (for the timing line on stderr).
    """
    run["provenance"] = {"script": script, "ropegeo_version": ropegeo.__version__,
                         "git_commit": commit(), "numpy": np.__version__}
    path = RUNS / name
    path.write_text(json.dumps(run, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path} in {time.perf_counter() - start:.0f} s", file=sys.stderr)


def main() -> int:
    start = time.perf_counter()
    check = "--check" in sys.argv[1:]
    run = budget_curve(seeds=range(20, 40) if check else range(20), rules=CURVE_RULES, budgets=BUDGETS)
    write_run(run, "finetune_budget_check.json" if check else "finetune_budget.json", "scripts/make_budget_curve.py",
              start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
