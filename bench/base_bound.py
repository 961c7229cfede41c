"""Men et al.'s base bound, certified: what the scan proves and what it costs.

    PYTHONPATH=. python bench/base_bound.py [LENGTH]

Runs ``base_bound(LENGTH, 128)`` over bases from L to 1,000 L (default L = 4,096; one BLAS thread)
and prints its intervals by verdict (proven valid, proven invalid, unresolved: how many and how
much of the range in log base), the smallest valid base and the base from which every larger one
is valid, the full evaluations and cosines it took and its time. Then the confusion counts against
an independent grid of 400 bases per decade, each judged by ``min_base_sum``: a proven interval
must hold no grid base of the other verdict (the off-diagonal counts are 0), and the grid's own
first valid base shows what a grid scan reports when a window of valid bases is narrower than its
step.
"""

from __future__ import annotations

import math
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from ropegeo.base_bound import base_bound, min_base_sum  # noqa: E402


def main(length: int = 4096) -> int:
    t0 = time.perf_counter()
    b = base_bound(length, 128)
    seconds = time.perf_counter() - t0
    span = math.log(b.high / b.low)
    print(f"L = {length:,}, head 128, bases {b.low:,.0f} to {b.high:,.0f}, tolerance {b.tolerance:g} of the base")
    for status in ("valid", "invalid", "unresolved"):
        parts = [(lo, hi) for lo, hi, s in b.intervals if s == status]
        share = sum(math.log(hi / lo) for lo, hi in parts) / span
        print(f"  {status:>10}: {len(parts):4d} intervals, {100 * share:8.4f}% of the range (log base)")
    print(f"  smallest valid base in [{b.first_valid[0]:,.2f}, {b.first_valid[1]:,.2f}]; every base valid from "
          f"{b.all_valid_from[1]:,.2f}; {b.holes} holes between")
    print(f"  cost: {b.evaluations:,} full evaluations, {b.cells:,} cosines, {seconds:.1f} s")
    grid = np.geomspace(b.low, b.high, 1 + 400 * round(math.log10(b.high / b.low)))
    t0 = time.perf_counter()
    ok = np.array([min_base_sum(length, 128, float(x)) >= 0 for x in grid])
    confusion = {(s, g): 0 for s in ("valid", "invalid", "unresolved") for g in (True, False)}
    for lo, hi, s in b.intervals:
        inside = (grid >= lo) & (grid <= hi)
        confusion[s, True] += int(ok[inside].sum())
        confusion[s, False] += int((~ok[inside]).sum())
    print(f"  against {grid.size:,} grid bases (400 per decade, {time.perf_counter() - t0:.1f} s):")
    print("      proven \\ grid   valid  invalid")
    for s in ("valid", "invalid", "unresolved"):
        print(f"      {s:>10}    {confusion[s, True]:6d}   {confusion[s, False]:6d}")
    print(f"  the grid's first valid base: {grid[np.argmax(ok)]:,.0f} (the certified one: {b.first_valid[1]:,.0f})")
    return 0 if confusion["valid", False] == confusion["invalid", True] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096))
