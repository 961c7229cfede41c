"""Regenerate ropegeo/data/runs/base_bound.json: Men et al.'s base bound, chapter 3.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_base_bound.py

For each context length, scans bases from L to 1,000 L with ``ropegeo.base_bound.base_bound``
(head width 128, every coordinate rotating) and stores the first valid base, the base from which
every larger one is valid, the holes in between and the grid step that bounds what the scan can
miss. The grid is 400 bases per decade up to 8,192 tokens and coarser for the two long contexts,
whose evaluations cost 4 and 16 times more; for those two a second scan at 1,000 bases per decade
looks for a valid island in the half decade below the first valid base (``refined`` in the row). Deterministic; about ten minutes on one busy core.
Records the settings, the ropegeo version and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ropegeo.base_bound import base_bound

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

#: (context length, grid bases per decade). "4k" is 4,000 or 4,096 depending on who counts.
LENGTHS = ((1024, 400), (2048, 400), (4000, 400), (4096, 400), (8192, 400), (32_768, 100), (131_072, 40))
HEAD_DIM = 128
#: Grid density of the second look below the first valid base of a coarse scan.
REFINE = 1000


def main() -> int:
    start = time.perf_counter()
    rows = []
    for length, per_decade in LENGTHS:
        t = time.perf_counter()
        b = base_bound(length, HEAD_DIM, low=float(length), high=1000.0 * length, per_decade=per_decade)
        row = dict(b.to_dict(), per_decade=per_decade)
        if per_decade < 400:  # a coarse grid: look again below its first valid base, 1,000 bases per decade
            fine = base_bound(length, HEAD_DIM, low=b.first_valid / 2, high=b.first_valid, per_decade=REFINE)
            row["refined"] = {"low": fine.low, "high": fine.high, "per_decade": REFINE, "grid_ratio": fine.grid_ratio,
                              "first_valid": fine.first_valid}
            if fine.first_valid is not None and fine.first_valid < b.first_valid:
                row["first_valid"] = fine.first_valid
        rows.append(row)
        print(f"L={length:,}: first valid {b.first_valid:.4g}, all valid from {b.all_valid_from:.4g}, "
              f"{len(b.holes)} holes, {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    settings = {"head_dim": HEAD_DIM, "lengths": [n for n, _ in LENGTHS], "per_decade": [p for _, p in LENGTHS],
                "range": "L to 1000 L"}
    write_run({"settings": settings, "rows": rows}, "base_bound.json", "scripts/make_base_bound.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
