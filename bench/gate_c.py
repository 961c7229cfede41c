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

``python bench/gate_c.py battery`` measures what ``report llama-3.1-8b --gate-c`` costs, as
ratios to references measured in the same run (so the numbers mean the same on a loaded machine):

* the trainings' raw cost: the heads the report's battery trains (same schedule, lengths, steps
  and seeds), trained directly with ``train_heads`` and nothing else;
* ``python -c "import numpy"``: the cost of starting an interpreter with numpy.

The command runs as a user's would: a fresh ``python -m ropegeo report llama-3.1-8b --gate-c``
with no BLAS variable set (the library fixes one thread itself, with threadpoolctl). Wall and
CPU times are minima over a few runs. The battery is also timed in-process, split into the
training loops, the evaluations and the rest.

Measured 2026-12-02 on 2 cores shared with other jobs (load average 22): the report took 3.1 s
of CPU (17.8 s wall), 1.75 times the CPU of its trainings alone and 10.5 times ``import numpy``'s.
Before the match head read its scores from a table of distances back, the same command took
20.4 s of CPU (123 s wall, same load); its JSON verdict is unchanged apart from the timings.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

if "battery" not in sys.argv[1:]:  # the battery runs with the default environment, as a user's would
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's ropegeo, not an installed one


from ropegeo import toy as B  # noqa: E402
from ropegeo.gates import c as gates_c  # noqa: E402
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
    verdict, t = timed(lambda: gates_c.gate_c(theta))
    print(f"\ngate_c battery (3 seeds, raw extrapolation to {TARGET}): {t:.2f} s")
    print(verdict.table())


class LoopTimer:
    """Times the training loops (``heads._run_offset`` / ``heads._run_match``) and the evaluations
    (``gate_c.evaluate_seeds``) while a battery runs, by wrapping them in place."""

    def __init__(self):
        from ropegeo.gates import c as C
        from ropegeo.toy import heads as H

        self.spent = {"offset loops": 0.0, "match loops": 0.0, "evaluations": 0.0}
        self._patches = [(H, "_run_offset", "offset loops"), (H, "_run_match", "match loops"),
                         (C, "evaluate_seeds", "evaluations")]

    def __enter__(self):
        self._saved = []
        for module, name, key in self._patches:
            original = getattr(module, name)
            self._saved.append((module, name, original))

            def timed_call(*args, _f=original, _k=key, **kwargs):
                t0 = time.perf_counter()
                try:
                    return _f(*args, **kwargs)
                finally:
                    self.spent[_k] += time.perf_counter() - t0

            setattr(module, name, timed_call)
        return self

    def __exit__(self, *exc):
        for module, name, original in self._saved:
            setattr(module, name, original)


def battery_cost(label: str, run) -> None:
    """One battery run: wall time, the training loops' raw cost, the ratio, and the rest."""
    with LoopTimer() as lt:
        t0 = time.perf_counter()
        run()
        wall = time.perf_counter() - t0
    loops = lt.spent["offset loops"] + lt.spent["match loops"]
    rest = wall - loops - lt.spent["evaluations"]
    print(f"{label}: {wall:.2f} s wall; training loops {loops:.2f} s (offset {lt.spent['offset loops']:.2f}, "
          f"match {lt.spent['match loops']:.2f}); wall / loops = {wall / loops:.3f}; evaluations "
          f"{lt.spent['evaluations']:.2f} s ({100 * lt.spent['evaluations'] / wall:.1f}%); everything else "
          f"{rest:.2f} s ({100 * rest / wall:.1f}%)")


#: BLAS and OpenMP thread variables: removed from the command's environment (a user's default).
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: The command a user runs; its Gate C trains one offset and one match head (head dim 128).
REPORT = [sys.executable, "-m", "ropegeo", "report", "llama-3.1-8b", "--gate-c"]


def run_command(argv, runs: int = 3) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of a fresh process, each the minimum over ``runs`` runs."""
    env = {k: val for k, val in os.environ.items() if k not in _THREAD_VARIABLES}
    env["PYTHONPATH"] = str(ROOT)
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def report_trainings() -> dict:
    """The settings of the heads ``report llama-3.1-8b --gate-c`` trains, read from one run of it."""
    from ropegeo.gates.procedure import audit

    s = audit("llama-3.1-8b", gate_c=True, gate_c_options={"seeds": (0,)}).gate_c.settings
    return {"theta": np.array(s["theta"]), "train_length": s["train_length"], "offset": s["offset"],
            "seeds": s["seeds"], "steps": s["steps"], "match_steps": s["match_steps"]}


def raw_training_cost(t: dict, runs: int = 3) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of those trainings alone (``train_heads``), minima over ``runs``."""
    d = 2 * t["theta"].size
    walls, cpus = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        B.train_heads("offset", t["seeds"], offset=t["offset"], head_dim=d, theta=t["theta"],
                      train_length=t["train_length"], steps=t["steps"])
        B.train_heads("match", t["seeds"], head_dim=d, theta=t["theta"], train_length=t["train_length"],
                      steps=t["match_steps"])
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def battery() -> None:
    """What ``report llama-3.1-8b --gate-c`` costs, against the trainings' raw cost and ``import numpy``."""
    from ropegeo.gates.procedure import audit
    from ropegeo.gates.c import gate_c

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; no BLAS thread variable in the "
          f"command's environment")
    trainings = report_trainings()
    numpy_wall, numpy_cpu = run_command([sys.executable, "-c", "import numpy"], runs=5)
    report_wall, report_cpu = run_command(REPORT)
    raw_wall, raw_cpu = raw_training_cost(trainings)
    print(f"python -m ropegeo report llama-3.1-8b --gate-c: {report_wall:.2f} s wall, {report_cpu:.2f} s CPU "
          f"(minima of 3 runs)")
    print(f"  its trainings alone (1 offset head, {trainings['steps']} steps; 1 match head, "
          f"{trainings['match_steps']} steps; head dim {2 * trainings['theta'].size}, length "
          f"{trainings['train_length']}): {raw_wall:.2f} s wall, {raw_cpu:.2f} s CPU")
    print(f"  python -c 'import numpy': {numpy_wall:.3f} s wall, {numpy_cpu:.3f} s CPU")
    print(f"  report / trainings' raw cost = {report_wall / raw_wall:.2f} (wall), {report_cpu / raw_cpu:.2f} (CPU)")
    print(f"  report / import numpy = {report_wall / numpy_wall:.1f} (wall), {report_cpu / numpy_cpu:.1f} (CPU); "
          f"trainings / import numpy = {raw_wall / numpy_wall:.1f} (wall)")
    print("\nin-process split of the battery:")
    battery_cost("report llama-3.1-8b --gate-c (1 seed, head dim 128, 64 -> 1,024)",
                 lambda: audit("llama-3.1-8b", gate_c=True, gate_c_options={"seeds": (0,)}))
    battery_cost("gate_c defaults (3 seeds, head dim 16, 64 -> 512)", lambda: gate_c(frequencies(16)))


if __name__ == "__main__":
    battery() if "battery" in sys.argv[1:] else main()
