"""Regenerate ropegeo/data/runs/axial_crossing.json: where chapter 8's two splits first put half of the
attention on the target in every seed, on a fine grid of budgets.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_axial_crossing.py

The same heads as ``make_axial_budget.py`` (head dim 16, base 100, an 8 x 8 grid, target offset (2, 3)),
read every 5 steps from 200 to 300 (the blocked split) and every 25 steps from 800 to 1,600 (the split
whose y axis owns only the slowest pair), for seeds 0-19 and the disjoint seeds 2000-2019. Up to 1,600
steps last-digit rounding moves a seed's target mass by less than 1e-12 (``tests/test_chapter08.py``,
``TRAINING_SPREAD``). About ten seconds on one core. Records the settings, the ropegeo version and the
git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from ropegeo.frequencies import frequencies
from ropegeo.multiaxis import axis_frequencies
from ropegeo.toy.axial_heads import budget_study

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

#: Chapter 8's toy; each split read on its own fine grid of budgets around its crossing of one half.
SETTINGS = {"head_dim": 16, "base": 100.0, "grid": [8, 8], "target": [2, 3],
            "seeds": list(range(20)), "disjoint_seeds": list(range(2000, 2020)),
            "assignments": {"blocked": [0, 0, 0, 0, 1, 1, 1, 1], "y starved, slow": [0, 0, 0, 0, 0, 0, 0, 1]},
            "budgets": {"blocked": list(range(200, 305, 5)), "y starved, slow": list(range(800, 1625, 25))}}


def axial_crossing(settings: dict = SETTINGS, seeds=None) -> dict:
    """Every seed's target mass at every budget of its split's grid, for the seeds and the disjoint seeds."""
    theta = frequencies(settings["head_dim"], settings["base"])
    curves = {}
    for name, assignment in settings["assignments"].items():
        F = axis_frequencies(theta, np.array(assignment), 2)
        curves[name] = {}
        for key in ("seeds", "disjoint_seeds"):
            r = budget_study(F, settings["budgets"][name], seeds=settings[key] if seeds is None else seeds,
                             target=tuple(settings["target"]), grid=tuple(settings["grid"]))
            curves[name][key] = {"accuracy": r["accuracy"].tolist(), "target_mass": r["target_mass"].tolist()}
    return {"settings": settings, "curves": curves}


def main() -> int:
    start = time.perf_counter()
    write_run(axial_crossing(), "axial_crossing.json", "scripts/make_axial_crossing.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
