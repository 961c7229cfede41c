"""Regenerate ropegeo/data/runs/slowest_usable.json: the sweep of exercise ch08-slowest-usable over 20 seeds.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_slowest_usable.py

Chapter 8's grid head (head dim 16, base 100, an 8 x 8 grid, target offset (2, 3), 300 steps) with y on a
single pair j and x on the other seven, for every j, over seeds 0-19 and the disjoint seeds 1000-1019. At 300
steps a seed's target mass agrees to 1e-9 across CPUs (CONTRIBUTING.md), so ``tests/test_exercises_ch08.py``
re-trains a few stored seeds to ``TRAINING_SPREAD``. Records the settings, the ropegeo version and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from ropegeo.frequencies import frequencies
from ropegeo.multiaxis import axis_frequencies
from ropegeo.toy.axial_heads import split_study

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

#: The exercise's task; y on pair j (0 the fastest), x on the other seven.
SETTINGS = {"head_dim": 16, "base": 100.0, "grid": [8, 8], "target": [2, 3], "steps": 300,
            "seeds": list(range(20)), "disjoint_seeds": list(range(1000, 1020))}


def slowest_usable(settings: dict = SETTINGS, seeds=None) -> dict:
    """Every seed's accuracy and target mass for every pair j given to y, for the seeds and the disjoint seeds."""
    theta = frequencies(settings["head_dim"], settings["base"])
    pairs = theta.size
    splits = {str(j): axis_frequencies(theta, (np.arange(pairs) == j).astype(int), 2) for j in range(pairs)}
    sweep = {}
    for key in ("seeds", "disjoint_seeds"):
        r = split_study(splits, seeds=settings[key] if seeds is None else seeds, target=tuple(settings["target"]),
                        grid=tuple(settings["grid"]), steps=settings["steps"])
        sweep[key] = {field: [r[str(j)][field].tolist() for j in range(pairs)] for field in ("accuracy", "target_mass")}
    return {"settings": settings, "sweep": sweep}


def main() -> int:
    start = time.perf_counter()
    write_run(slowest_usable(), "slowest_usable.json", "scripts/make_slowest_usable.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
