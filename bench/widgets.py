"""Update latency of the book's interactive labs at their default settings.

Each lab contributes one function to LABS that builds the lab once and returns a callable
performing one full update (computation and redraw), cycling through a few nearby settings the
way a dragged slider would. The script reports the median and the 90th percentile over repeated
updates and checks the target: median under 100 ms per update.

Add a lab: write ``def my_lab() -> Callable[[int], object]`` and append it to LABS.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Callable

TARGET_MS = 100.0
REPEATS = 30


def frequency_lab() -> Callable[[int], object]:
    """The frequency lab (chapter 3): K(Δ), wavelength ladder and Gate B readout."""
    from ropegeo.widgets.frequency_lab import CONTROLS, frequency_lab

    lab = frequency_lab()
    defaults = {name: spec[-1] for name, spec in CONTROLS.items()}
    # a dragged slider: neighbouring target lengths, with the interpolation toggled now and then
    settings = [dict(defaults, target_length=defaults["target_length"] + 16 * j, interpolate=(j % 4 == 3))
                for j in range(8)]
    return lambda i: lab.update(**settings[i % len(settings)])


def audit_lab() -> Callable[[int], object]:
    """The audit lab (chapter 6): relative law, served K(Δ), distant offset, slow pairs, trade-off."""
    from ropegeo.widgets.audit_lab import CONTROLS, RULES, audit_lab

    lab = audit_lab()
    defaults = {name: spec[-1] for name, spec in CONTROLS.items()}
    # a dragged target-length slider, with the extension rule switched now and then
    settings = [dict(defaults, target_length=defaults["target_length"] + 16 * j, rule=RULES[(j // 2) % len(RULES)])
                for j in range(12)]
    return lambda i: lab.update(**settings[i % len(settings)])


LABS: list[Callable[[], Callable[[int], object]]] = [frequency_lab, audit_lab]


def measure(build: Callable[[], Callable[[int], object]], repeats: int = REPEATS) -> tuple[float, float]:
    update = build()
    update(0)  # warm-up (imports, first draw)
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        update(i + 1)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> int:
    failed = False
    for build in LABS:
        median, p90 = measure(build)
        ok = median < TARGET_MS
        failed |= not ok
        print(f"{build.__name__}: median {median:.1f} ms, p90 {p90:.1f} ms per update "
              f"(target median < {TARGET_MS:.0f} ms): {'ok' if ok else 'TOO SLOW'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
