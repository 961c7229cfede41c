"""Regenerate ropegeo/data/runs/base_bound.json: Men et al.'s base bound, certified, for chapter 3.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_base_bound.py

For each context length, ``ropegeo.base_bound.base_bound`` (head width 128, every coordinate
rotating) cuts the bases from L to 1,000 L into intervals proven valid, proven invalid, or
unresolved (at a crossing, no wider than the tolerance, 1e-5 of the base), and the row stores them
with the first valid base, the base from which every larger one is valid and the holes between.
No grid: what the row says holds for every base in the range. Deterministic; a few minutes on one
core (L = 131,072 takes most of it). Records the settings, the ropegeo version and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ropegeo.base_bound import base_bound

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

#: Context lengths. "4k" is 4,000 or 4,096 depending on who counts.
LENGTHS = (1024, 2048, 4000, 4096, 8192, 32_768, 131_072)
HEAD_DIM = 128
TOLERANCE = 1e-5


def main() -> int:
    start = time.perf_counter()
    rows = []
    for length in LENGTHS:
        t = time.perf_counter()
        b = base_bound(length, HEAD_DIM, low=float(length), high=1000.0 * length, tolerance=TOLERANCE)
        rows.append(b.to_dict())
        print(f"L={length:,}: first valid in {b.first_valid}, all valid from {b.all_valid_from}, {b.holes} holes, "
              f"{b.evaluations} evaluations, {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    settings = {"head_dim": HEAD_DIM, "lengths": list(LENGTHS), "tolerance": TOLERANCE, "range": "L to 1000 L"}
    write_run({"settings": settings, "rows": rows}, "base_bound.json", "scripts/make_base_bound.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
