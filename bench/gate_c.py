"""Gate C timings: each training and evaluation at L and 8L, from one run on this machine.

Run with one BLAS thread (the Makefile exports OPENBLAS_NUM_THREADS=1; the matrices are small and
threads only add overhead). Prints per-seed times and results for:

* the content-free offset head (head dim 16, base 10,000, L = 64, offset 5, 1,000 Adam steps),
  with its O(L) running-log-sum-exp loss, against the same loss from a full L x L score matrix;
* the most-recent-match head (8 tokens, 16 dims, 32 fresh sequences of 64 per step, 600 steps);
* fine-tuning the offset head under position interpolation at 8L (600 steps);
* evaluation at L and 8L under raw, PI, NTK and dynamic NTK, and under the interventions.

Targets: each training a few seconds at most on one core; an offset-head training well under one
second; one evaluation at 8L well under one second.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from ropegeo import behaviour as B  # noqa: E402
from ropegeo.frequencies import frequencies  # noqa: E402
from ropegeo.rotation import apply_rope  # noqa: E402

SEEDS = (0, 1, 2)
L, TARGET = 64, 512


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def full_matrix_offset_loss(q, k, theta, offset, length):
    """The loss the naive way: every query row of a length x length score matrix (for timing)."""
    pos = np.arange(length)
    s = apply_rope(np.tile(q, (length, 1)), pos, theta=theta) @ apply_rope(np.tile(k, (length, 1)), pos, theta=theta).T
    s = np.where(np.tri(length, length, -1, dtype=bool), s, -np.inf)[offset:]
    top = s.max(axis=1, keepdims=True)
    log_z = np.log(np.exp(s - top).sum(axis=1)) + top[:, 0]
    return float(np.mean(log_z - s[np.arange(s.shape[0]), np.arange(s.shape[0])]))


def main() -> None:
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")
    theta = frequencies(16)
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 16))
    for length in (L, TARGET):
        reps = 200
        _, t_fast = timed(lambda: [B.offset_head_loss(q, k, theta, offset=5, length=length) for _ in range(reps)])
        _, t_full = timed(lambda: [full_matrix_offset_loss(q, k, theta, 5, length) for _ in range(reps)])
        same = abs(B.offset_head_loss(q, k, theta, offset=5, length=length)[0] - full_matrix_offset_loss(q, k, theta, 5, length))
        print(f"offset loss at length {length}: running log-sum-exp {1e3 * t_fast / reps:.3f} ms (with gradient), "
              f"full matrix {1e3 * t_full / reps:.3f} ms (loss only), ratio {t_full / t_fast:.1f}x, |diff| {same:.1e}")

    print("\ntraining (per seed)")
    offset_heads, match_heads = [], []
    for seed in SEEDS:
        h, t = timed(lambda: B.train_offset_head(seed=seed))
        offset_heads.append(h)
        print(f"  offset head seed {seed}: {t:.3f} s, 1000 steps, final loss {h.losses[-1]:.2e}")
    for seed in SEEDS:
        m, t = timed(lambda: B.train_match_head(seed=seed))
        match_heads.append(m)
        print(f"  match head  seed {seed}: {t:.3f} s, 600 steps x 32 sequences, final loss {m.losses[-1]:.2e}")
    tuned = []
    for h in offset_heads:
        ft, t = timed(lambda: B.fine_tune(h, extension="pi", factor=8))
        tuned.append(ft)
        print(f"  PI fine-tune seed {h.seed}: {t:.3f} s, 600 steps at length {TARGET}")

    print("\nevaluation (time of one evaluation; accuracy / mass per seed)")
    for name, heads in (("offset", offset_heads), ("match", match_heads)):
        for ext in B.EXTENSIONS:
            for length in (L, TARGET):
                res, t = timed(lambda: B.evaluate_seeds(heads, length, extension=ext))
                per = "  ".join(f"{a:.3f}/{m:.3f}" for a, m in zip(res.accuracy, res.mass))
                print(f"  {name:<6} {ext:<11} L={length:<4} {1e3 * t / len(heads):7.1f} ms   {per}")
    res, t = timed(lambda: B.evaluate_seeds(tuned, TARGET))
    print(f"  offset PI+fine-tune L={TARGET} {1e3 * t / len(tuned):7.1f} ms   "
          + "  ".join(f"{a:.3f}/{m:.3f}" for a, m in zip(res.accuracy, res.mass)))

    print("\ninterventions at 8L on the offset heads (accuracy / mass per seed)")
    for label, kw in [
        ("shift 1e6, float64", dict(shift=1e6)),
        ("shift 1e6, float32 phases", dict(shift=1e6, phase_dtype="float32")),
        ("shift 2^24, float32 phases", dict(shift=2**24, phase_dtype="float32")),
        ("query off by one", dict(query_offset=1)),
        ("query reset to 0", dict(query_reset=True)),
        ("positions in bfloat16", dict(position_dtype="bfloat16")),
    ]:
        res, t = timed(lambda: B.evaluate_seeds(offset_heads, TARGET, **kw))
        print(f"  {label:<28} {1e3 * t / len(offset_heads):7.1f} ms   "
              + "  ".join(f"{a:.3f}/{m:.3f}" for a, m in zip(res.accuracy, res.mass)))

    rivals = [B.distant_rival(h, TARGET) for h in B.train_heads("offset", range(10))]
    print(f"\ndistant rival over 10 seeds: rival offsets {[r.rival for r in rivals]}, "
          f"wins in seeds {[s for s, r in enumerate(rivals) if r.wins]}, "
          f"fast-band prediction {sorted({r.predicted for r in rivals})}")
    verdict, t = timed(lambda: B.gate_c(theta))
    print(f"\ngate_c battery (3 seeds, raw extrapolation to {TARGET}): {t:.2f} s")
    print(verdict.table())


if __name__ == "__main__":
    main()
