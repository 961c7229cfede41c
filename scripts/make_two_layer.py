"""Regenerate ropegeo/data/runs/two_layer.json: chapter 7's two-layer check of NoPE and ALiBi.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_two_layer.py

Trains ``ropegeo.toy.two_layer`` models (NoPE and ALiBi, one and two layers, offsets 1 and 5) for
seeds 0-19 at length 64 and stores accuracy and mass per seed. Deterministic; one to two
minutes on one core. Records the settings, the ropegeo version and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ropegeo.toy.two_layer import study

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

SETTINGS = {"seeds": list(range(20)), "offsets": [1, 5], "length": 64, "steps": 600, "slope": 0.5}


def main() -> int:
    start = time.perf_counter()
    s = SETTINGS
    res = study(s["seeds"], s["offsets"], length=s["length"], steps=s["steps"], slope=s["slope"])
    rows = [{"scheme": sc, "layers": ly, "offset": k, "accuracy": r["accuracy"].tolist(), "mass": r["mass"].tolist()}
            for (sc, ly, k), r in res.items()]
    write_run({"settings": s, "rows": rows}, "two_layer.json", "scripts/make_two_layer.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
