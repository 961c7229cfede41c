"""Gate B separation margin: ropegeo against the naive pairwise loop, in one run.

4,096 offsets at head dim 128, base 10,000, phases generated in float32 at large positions (where
rounding breaks translation invariance, so ropegeo must use the generated phases: a blocked Gram
computation with exact collapse detection). The naive computation loops over the offsets and,
for each, takes the distance to every later offset from the same generated phases. A pure-Python
double loop (one pair at a time) is timed on a sample and extrapolated.

Targets: same margin and pair as the naive loop; ropegeo faster; peak extra memory < 256 MiB.
"""

from __future__ import annotations

import math
import time

import numpy as np
from _measure import measure

from ropegeo.frequencies import frequencies
from ropegeo.margins import separation_margin
from ropegeo.precision import generated_phases

N, HEAD_DIM, DTYPE, ORIGIN, STRIDE = 4096, 128, "float32", 1_000_000, 3
LIMIT_MIB = 256


def naive_rowwise(offsets, theta):
    cos, sin = generated_phases(ORIGIN + offsets, theta, DTYPE)
    w = 1.0 / theta.size
    best, pair = math.inf, None
    for j in range(offsets.size - 1):
        d2 = w * (((cos[j + 1 :] - cos[j]) ** 2).sum(axis=1) + ((sin[j + 1 :] - sin[j]) ** 2).sum(axis=1))
        k = int(np.argmin(d2))
        if d2[k] < best:
            best, pair = float(d2[k]), (float(offsets[j]), float(offsets[j + 1 + k]))
    return math.sqrt(best), pair


def python_pair_seconds(offsets, theta, sample=4000):
    cos, sin = generated_phases(ORIGIN + offsets, theta, DTYPE)
    cos, sin = cos.tolist(), sin.tolist()
    rng = np.random.default_rng(0)
    js = rng.integers(0, offsets.size, size=(sample, 2)).tolist()
    t0 = time.perf_counter()
    for j, k in js:
        cj, ck, sj, sk = cos[j], cos[k], sin[j], sin[k]
        math.sqrt(sum((a - b) ** 2 for a, b in zip(cj, ck)) + sum((a - b) ** 2 for a, b in zip(sj, sk)))
    return (time.perf_counter() - t0) / sample


def main() -> int:
    theta = frequencies(HEAD_DIM, 10_000.0)
    offsets = STRIDE * np.arange(N, dtype=np.float64)
    ours, t_ours, m_ours = measure(lambda: separation_margin(offsets, theta, dtype=DTYPE, origin=ORIGIN))
    (naive_margin, naive_pair), t_naive, m_naive = measure(lambda: naive_rowwise(offsets, theta))
    per_pair = python_pair_seconds(offsets, theta)
    pairs = N * (N - 1) // 2
    exact = separation_margin(offsets, theta)  # float64: translation invariance, O(n * pairs)
    same = ours.pair == naive_pair and abs(ours.margin - naive_margin) < 1e-9
    print(f"{N} offsets, head dim {HEAD_DIM}, {DTYPE} phases at positions {ORIGIN:,}+: method {ours.method}")
    print(f"ropegeo: {t_ours:.3f} s, peak {m_ours:.0f} MiB; margin {ours.margin:.6f} at {ours.pair}")
    print(f"naive row-wise loop: {t_naive:.3f} s, peak {m_naive:.0f} MiB; margin {naive_margin:.6f} at {naive_pair}")
    print(f"ratio naive / ropegeo: {t_naive / t_ours:.1f}x; pure-Python pair loop (extrapolated from a sample): "
          f"{per_pair * pairs:.0f} s, ratio {per_pair * pairs / t_ours:.0f}x")
    print(f"same margin and pair: {same}; peak memory under {LIMIT_MIB} MiB: {m_ours < LIMIT_MIB}")
    print(f"for comparison, exact float64 margin {exact.margin:.6f} at {exact.pair} ({exact.method})")
    return 0 if (same and m_ours < LIMIT_MIB) else 1


if __name__ == "__main__":
    raise SystemExit(main())
