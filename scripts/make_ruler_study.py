"""Regenerate ropegeo/data/runs/ruler_study.json: chapter 7's RoPE heads under three rulers.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_ruler_study.py

Runs ``ropegeo.toy.alternatives.ruler_study`` for base 10,000, base 500 and base 10,000 with every
frequency divided by 8 (position interpolation's ruler for eight times the length, here used
from the first training step), over seeds 0-19 and five training budgets of the far head. About
two minutes on one core. Records the settings, the ropegeo version and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ropegeo import scaling
from ropegeo.toy.alternatives import ruler_study
from ropegeo.frequencies import frequencies

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

#: Name -> frequencies of a 16-wide head; the names are what the chapter prints.
RULERS = {"base 10,000": frequencies(16, 10_000.0), "base 500": frequencies(16, 500.0),
          "base 10,000 slowed x8": scaling.linear(frequencies(16, 10_000.0), 8.0)}
SETTINGS = {"seeds": tuple(range(20)), "budgets": (250, 500, 1000, 2000, 4000), "table_steps": 1000}


def main() -> int:
    start = time.perf_counter()
    run = ruler_study(RULERS, **SETTINGS)
    write_run(run, "ruler_study.json", "scripts/make_ruler_study.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
