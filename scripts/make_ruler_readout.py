"""Regenerate ropegeo/data/runs/ruler_readout.json: why chapter 7's slowed far heads are captured or not.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_ruler_readout.py

Trains the far head (40 back, 64 tokens, 1,000 steps) under base 10,000 slowed x8, as in
``make_ruler_study.py``, for seeds 0-19, the disjoint check seeds 1000-1019 and 40 further seeds 1020-1059 (``further_seeds``), and stores per seed
``ropegeo.toy.alternatives.attention_split`` at 512 tokens (means over queries 40-511), ``rival_readout``
(the last query) and capture per query: the last query's mass beyond the window (``last_beyond``), the share of
queries 40-511 putting half or more there (``captured_queries``) and the first query from which every later one
does (``captured_from``, -1 if the last does not). A few seconds on one core. Records the settings, the ropegeo version and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from ropegeo import scaling
from ropegeo.frequencies import frequencies
from ropegeo.toy.alternatives import attention_split, rival_readout
from ropegeo.toy.interventions import strict_attention
from ropegeo.toy.scheme_heads import train_position_head

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

SETTINGS = {"seeds": list(range(20)), "check_seeds": list(range(1000, 1020)),
            "further_seeds": list(range(1020, 1060)), "distance": 40, "train_length": 64,
            "length": 512, "steps": 1000, "slope_from": 30, "ruler": "base 10,000 slowed x8"}


def readouts(seeds, s=SETTINGS) -> dict:
    """Per-seed split and readout of the slowed ruler's far heads, as lists keyed by field."""
    theta = scaling.linear(frequencies(16, 10_000.0), 8.0)
    out = {}
    for seed in seeds:
        head = train_position_head("rope", s["distance"], train_length=s["train_length"], steps=s["steps"], seed=seed,
                                   operator=theta)
        split = attention_split(head, s["length"], s["distance"], s["train_length"])
        read = rival_readout(head, s["length"], s["distance"], s["train_length"], slope_from=s["slope_from"])
        for key, value in {**split._asdict(), **read._asdict(), **per_query(head, s)}.items():
            out.setdefault(key, []).append(value)
    return out


def per_query(head, s=SETTINGS) -> dict:
    """Capture query by query: the mass each query m = distance .. length - 1 puts on keys train_length or more back."""
    w = strict_attention(head, np.arange(s["length"], dtype=np.float64))
    m = np.arange(s["distance"], s["length"])
    back = m[:, None] - np.arange(s["length"])[None, :]
    beyond = np.where(back >= s["train_length"], w[m], 0.0).sum(axis=1)
    held = beyond >= 0.5
    kept = np.flatnonzero(~held)  # captured from the query after the last one that is not
    start = -1 if not held[-1] else int(m[kept[-1] + 1]) if kept.size else int(m[0])
    return {"last_beyond": float(beyond[-1]), "captured_queries": float(held.mean()), "captured_from": start}


def main() -> int:
    start = time.perf_counter()
    run = {"settings": SETTINGS, **{w: readouts(SETTINGS[w]) for w in ("seeds", "check_seeds", "further_seeds")}}
    write_run(run, "ruler_readout.json", "scripts/make_ruler_readout.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
