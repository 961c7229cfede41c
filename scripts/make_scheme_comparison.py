"""Regenerate ropegeo/data/runs/scheme_comparison.json: chapter 7's scheme-by-intervention table.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_scheme_comparison.py [--check]

Runs ``ropegeo.toy.alternatives.compare_schemes`` for all seven schemes with the match task, over
seeds 0-19 (with ``--check``: the disjoint seeds 1000-1019, into ``scheme_comparison_check.json``,
the record on which the chapter's "same measurements on seeds 1000-1019" dropdown and the tests'
direction checks read), and stores every per-seed measurement (``Comparison.to_dict``). Deterministic on one
machine; about three minutes on one core. The match heads of the table train chaotically
(a change in the last bit of a BLAS kernel grows into different weights after a few hundred steps),
so individual seeds need not reproduce on another CPU while the spread over seeds does. Records
the settings, the ropegeo version and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ropegeo.toy.alternatives import compare_schemes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

SETTINGS = {"offset": 5, "distance": 40, "train_length": 64, "factors": (2, 4, 8), "shift": 16,
            "seeds": tuple(range(20)), "match": True}


def main() -> int:
    start = time.perf_counter()
    check = "--check" in sys.argv[1:]
    settings = dict(SETTINGS, seeds=tuple(range(1000, 1020))) if check else SETTINGS
    run = compare_schemes(**settings).to_dict()
    write_run(run, "scheme_comparison_check.json" if check else "scheme_comparison.json",
              "scripts/make_scheme_comparison.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
