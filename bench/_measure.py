"""Shared by the benchmarks: wall time and peak extra Python-heap memory of one call."""

from __future__ import annotations

import time
import tracemalloc


def measure(fn):
    """Run ``fn()`` once; return ``(result, seconds, peak MiB allocated during the call)``.

    tracemalloc sees numpy's allocations, so the peak covers the arrays the call creates.
    """
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, peak / 2**20
