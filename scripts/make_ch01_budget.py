"""Regenerate ropegeo/data/runs/ch01_budget.json: chapter 1's position-position term over a budget of steps.

    PYTHONPATH=. OPENBLAS_NUM_THREADS=1 python scripts/make_ch01_budget.py

Chapter 1 trains the position-position term PE(m)^T G PE(n) alone, with plain gradient descent (learning rate 2),
on "attend to the key five back": queries at 32..287, each choosing among the 33 keys m - 32 .. m, sinusoidal
code of width 16. This records, for every seed of 0-39 and both starts (spread 1/4 and the layer's own 1/16), the
non-commuting remainder's norm as a fraction of its start, the commuting share of G and the loss after 100, 300,
1,000 and 3,000 steps; and, from spread 1/4 after 300 steps, the remainder's fraction under weight decay 1e-3 and
1e-2. The seeds are trained together (one batch), with the same arithmetic per seed as the chapter's hidden cell,
so the 300-step values are the chapter's to rounding. ``tests/test_chapter01.py`` re-trains a few stored seeds
with its own trainer and checks the claims' directions on seeds 20-39. Records the settings and the git commit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from ropegeo.softmax import softmax
from ropegeo.toy.schemes import sinusoidal_encoding

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_budget_curve import write_run  # noqa: E402

SETTINGS = {"d_model": 16, "queries": [32, 287], "key_reach": 32, "gap": 5, "lr": 2.0,
            "spreads": {"start": 0.25, "layer": 0.0625}, "budgets": [100, 300, 1000, 3000],
            "seeds": list(range(0, 20)), "disjoint_seeds": list(range(20, 40)),
            "weight_decays": [1e-3, 1e-2], "decay_steps": 300}


def commuting_part(G):
    """alpha I + beta J on each diagonal 2x2 block of every G in the batch, zero elsewhere."""
    out = np.zeros_like(G)
    for i in range(G.shape[-1] // 2):
        blk = G[:, 2 * i:2 * i + 2, 2 * i:2 * i + 2]
        alpha, beta = (blk[:, 0, 0] + blk[:, 1, 1]) / 2, (blk[:, 1, 0] - blk[:, 0, 1]) / 2
        out[:, 2 * i:2 * i + 2, 2 * i:2 * i + 2] = np.stack([np.stack([alpha, -beta], -1), np.stack([beta, alpha], -1)], -2)
    return out


def train(seeds, spread, budgets, settings=SETTINGS, weight_decay=0.0):
    """Remainder kept, commuting share and loss of every seed at every budget."""
    queries = np.arange(settings["queries"][0], settings["queries"][1] + 1)
    pq = sinusoidal_encoding(queries.astype(float), settings["d_model"])
    pk = sinusoidal_encoding((queries[:, None] - np.arange(settings["key_reach"] + 1)).astype(float), settings["d_model"])
    d = settings["d_model"]
    G = np.stack([np.random.default_rng(seed).standard_normal((d, d)) * spread for seed in seeds])
    R0 = np.linalg.norm((G - commuting_part(G)).reshape(len(seeds), -1), axis=1)
    out = {"remainder_kept": [], "commuting_share": [], "loss": []}
    for step in range(1, max(budgets) + 1):
        s = np.einsum("bqj,qkj->bqk", pq @ G, pk)
        probs = softmax(s)
        loss = -np.log(probs[:, :, settings["gap"]]).mean(axis=1)
        probs[:, :, settings["gap"]] -= 1
        grad = pq.T @ np.einsum("bqk,qkj->bqj", probs, pk) / len(queries)
        G = G - settings["lr"] * (grad + weight_decay * G)
        if step in budgets:
            C = commuting_part(G)
            out["remainder_kept"].append((np.linalg.norm((G - C).reshape(len(seeds), -1), axis=1) / R0).tolist())
            out["commuting_share"].append((np.sum(C ** 2, axis=(1, 2)) / np.sum(G ** 2, axis=(1, 2))).tolist())
            out["loss"].append(loss.tolist())  # the loss before this last step
    return out


def budget_run(settings: dict = SETTINGS) -> dict:
    runs = {}
    for key in ("seeds", "disjoint_seeds"):
        runs[key] = {name: train(settings[key], spread, settings["budgets"], settings)
                     for name, spread in settings["spreads"].items()}
        runs[key]["decay"] = {f"{wd:g}": train(settings[key], settings["spreads"]["start"], [settings["decay_steps"]],
                                               settings, weight_decay=wd)["remainder_kept"][0]
                              for wd in settings["weight_decays"]}
    return {"settings": settings, "runs": runs}


def main() -> int:
    start = time.perf_counter()
    write_run(budget_run(), "ch01_budget.json", "scripts/make_ch01_budget.py", start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
