"""Near-collision search: ropegeo's blocked phase-seed search against the naive full matrix.

Prints, from one run on this machine: time and peak extra memory of the naive evaluation (the
seed article's approach: cos of an offsets x pairs matrix) and of ropegeo.near_collisions at
head dim 128 over 10^6 offsets, their ratio, the agreement of the top offsets, and ropegeo alone
over 10^7 offsets. Targets: >= 15x faster, top similarities within 1e-9, < 64 MiB extra at 10^7.
"""

from __future__ import annotations

import time

import numpy as np
from _measure import measure

from ropegeo.frequencies import frequencies
from ropegeo.geometry import near_collisions


def naive_top(theta, start, stop, top):
    offsets = np.arange(start, stop + 1, dtype=np.float64)
    sims = np.cos(offsets[:, None] * theta[None, :]).mean(axis=1)
    idx = np.argsort(-sims, kind="stable")[:top]
    return [(int(offsets[i]), float(sims[i])) for i in idx]


def main() -> None:
    theta = frequencies(128, 10_000.0)
    start, n, top = 2, 10**6, 5
    stop = start + n - 1
    naive, t_naive, m_naive = measure(lambda: naive_top(theta, start, stop, top))
    ours, t_ours, m_ours = measure(lambda: near_collisions(theta, start, stop, top=top, progress=False))
    diff = max(abs(a[1] - b.similarity) for a, b in zip(naive, ours))
    same = [a[0] for a in naive] == [b.offset for b in ours]
    print(f"head dim 128, 10^6 offsets: naive {t_naive:.3f} s, {m_naive:.0f} MiB; "
          f"ropegeo {t_ours:.3f} s, {m_ours:.1f} MiB")
    print(f"speed-up: {t_naive / t_ours:.1f}x (target >= 15x); same top-{top} offsets: {same}; "
          f"max similarity difference {diff:.1e} (target <= 1e-9)")
    big, t_big, m_big = measure(lambda: near_collisions(theta, start, start + 10**7 - 1, top=top, progress=False))
    print(f"ropegeo alone, 10^7 offsets: {t_big:.3f} s, peak extra memory {m_big:.1f} MiB (target < 64 MiB); "
          f"best offset {big[0].offset} with K = {big[0].similarity:.6f}")


if __name__ == "__main__":
    main()
