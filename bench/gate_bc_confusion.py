"""Gate B's fast-band flag and Gate C's battery judged on stored runs: confusion counts per seed.

No training: both read stored runs of ``ropegeo/data/runs/``.

* **The fast-band flag** (``ropegeo.gates.b.rival_census``) on the 60-seed census
  (``rival_census.json``): labelled positive = the seed loses to a distant rival under raw
  extrapolation, negative = it does not. Prints TP / FN / FP / TN, sensitivity, specificity and the
  margin's AUC (chance that a loser's fast-band margin lies below a survivor's; 0.5 is chance).
* **Gate C's battery** (``gate_c_battery.json``, 20 seeds): each check per seed (pass or fail
  against its threshold), the verdict by the minimum over seeds (``ropegeo.gates.c.judge_seeds``)
  and the verdict the seed mean would have given.

* **Gate B per axis** (``ropegeo.gates.b.axes.axis_gate_b``, calibrated on the axis) on labelled axes:
  positive = the axis's band returns within the extent (brute-force distance of some offset below
  the axis's own ``D(1) / sqrt 2``), over M-RoPE blocked and interleaved, one fast pair per axis,
  and the four grid splits of chapter 8.
* **Gate B's precision** on every shipped configuration at its own context, in its phase dtype and
  in float64: positive = float32 rounding at the set's positions (derived here with numpy's float32
  product) moves a signature by more than half the exact margin's excess over the threshold.
* **The relative law in the phase dtype** (``geometry_audit``'s ``phase_law_check``): every shipped
  configuration in its own dtype, float64 and bfloat16, and Scout's ruler at 2^25 tokens; positive =
  the law's phase distance, derived here from numpy / ml_dtypes products, reaches half Gate B's threshold.

Run with ``python bench/gate_bc_confusion.py``; it exits 1 if a verdict contradicts its labels (a
Gate C check that passes with a seed below its threshold).

Measured 2026-12-05 (stored runs): the fast-band flag TP 12, FN 0, FP 48, TN 0 (sensitivity 1.00,
specificity 0.00, AUC 0.58): it flags every seed, so the audit uses no fast-band flag. Gate C's
battery: offset accuracy at 512 passes 8 of 10 seeds (two at 0.744), match accuracy 0 of 10; the
mean (0.949) passed the offset check, the per-seed minimum fails it. Gate B per axis: TP 4, FN 0,
FP 0, TN 13 over 17 labelled axes (the text-step calibration it replaced passed at most one axis
of any split). Gate B's precision: TP 1 (Llama 4 Scout at 10.5M tokens, float32), FN 0, FP 0, TN 27
(with 16 shipped configurations, later the same day: TP 3, FN 0, FP 0, TN 29). The relative law in the
phase dtype: TP 17 (every configuration in bfloat16, Scout's ruler at 2^25 tokens in float32), FN 0,
FP 0, TN 33 over 50 audits (about two minutes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from ropegeo.gates.b.rival_census import census_counts
from ropegeo.gates.c import judge_seeds

RUNS = Path(__file__).resolve().parents[1] / "ropegeo" / "data" / "runs"


def fast_band() -> None:
    c = census_counts(json.loads((RUNS / "rival_census.json").read_text()))
    print(f"fast-band flag on {c['seeds']} census seeds (positive = loses to a distant rival):")
    print(f"  TP {c['flagged_losers']}  FN {c['missed_losers']}  FP {c['flagged_survivors']}  TN {c['clear_survivors']}"
          f"   sensitivity {c['sensitivity']:.2f}  specificity {c['specificity']:.2f}  margin AUC {c['margin_auc']:.2f}")


def battery() -> int:
    run = json.loads((RUNS / "gate_c_battery.json").read_text())["gate_c"]
    ps, stored = run["per_seed"], run["checks"]
    arrays = [np.array(ps[k]["accuracy"]) for k in ("offset L", "offset target", "match target")]
    checks = judge_seeds(*arrays, stored["global shift change (max)"]["value"])
    print(f"Gate C battery, seeds {ps['offset L']['seeds']}:")
    bad = 0
    for (name, c), acc in zip(list(checks.items())[:3], arrays):
        marks = " ".join("p" if a >= c["threshold"] else "F" for a in acc)
        mean_pass = acc.mean() >= c["threshold"]
        print(f"  {name:<34} per seed [{marks}]  {c['seeds'] - c['seeds_below']} of {c['seeds']} pass;"
              f" verdict (min {c['value']:.3f}) {'pass' if c['passed'] else 'FAIL'};"
              f" by the mean ({acc.mean():.3f}) it would {'pass' if mean_pass else 'fail'}")
        bad += c["passed"] != bool(np.all(acc >= c["threshold"]))
    return bad


def _counts(pairs) -> str:
    tp = sum(p and f for p, f in pairs)
    fn = sum(p and not f for p, f in pairs)
    fp = sum(f and not p for p, f in pairs)
    return f"TP {tp}  FN {fn}  FP {fp}  TN {len(pairs) - tp - fn - fp}"


def per_axis() -> int:
    from ropegeo.frequencies import frequencies
    from ropegeo.gates.b.axes import axis_gate_b
    from ropegeo.multiaxis import axis_frequencies, mrope_bank

    theta = frequencies(16, 100.0)
    layouts = [(mrope_bank(128, 1e6, (16, 24, 24)), 32), (mrope_bank(128, 1e6, (24, 20, 20), round_robin=True), 32),
               (np.eye(3), 8)] + [(axis_frequencies(theta, np.array(a), 2), 8)
                                  for a in ([0, 1] * 4, [0] * 4 + [1] * 4, [0] * 7 + [1], [1] + [0] * 7)]
    pairs = []
    for F, extent in layouts:
        for a in range(F.shape[1]):
            band = np.abs(F[:, a])
            d = np.sqrt(4 * np.mean(np.sin(np.arange(1, extent)[:, None] * band[None, :] / 2) ** 2, axis=1))
            pairs.append((bool(d.min() < d[0] / np.sqrt(2)), axis_gate_b(F, a, extent).status == "fail"))
    print(f"Gate B per axis on {len(pairs)} labelled axes (positive = the band returns within the extent):")
    print("  " + _counts(pairs))
    return sum(p != f for p, f in pairs)


def precision() -> int:
    from ropegeo.gates.b.rule import gate_b
    from ropegeo.models.manifest import load_model, shipped_models

    pairs = []
    for name in shipped_models():
        for dtype in ("own", "float64"):
            m = load_model(name)
            m = m if dtype == "own" else m.with_(phase_dtype="float64")
            b = gate_b(m, train_length=m.train_length, target_length=m.target_length)
            s = b.sets[0]  # the local set, compared in the phase dtype
            exact = gate_b(m.with_(phase_dtype="float64"), train_length=m.train_length,
                           target_length=m.target_length).sets[0]["margin"]
            pos = s["origin"] + np.arange(0, 65)
            th = np.asarray(m.operator.theta_at(m.target_length))
            err = ((pos.astype(np.float32)[:, None] * th.astype(np.float32)[None, :]).astype(np.float64)
                   - pos[:, None] * th[None, :]) if m.phase_dtype == "float32" else np.zeros((1, 1))
            rounding = float(np.sqrt(np.mean(4 * np.sin(err / 2) ** 2, axis=1)).max())
            pairs.append((bool(2 * rounding > exact - b.threshold), s["status"] == "fail"))
    print(f"Gate B's local set on {len(pairs) // 2} shipped configurations, own dtype and float64 "
          "(positive = rounding larger than half the exact margin's excess):")
    print("  " + _counts(pairs))
    return sum(p != f for p, f in pairs)


def _law(theta, pairs, dtype) -> float:
    """The relative law's phase distance with each position's angle formed in ``dtype`` (derived here: position
    and frequency cast, product in that format, as numpy and ml_dtypes round it)."""
    import ml_dtypes

    fmt = {"float64": np.float64, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16}[dtype]
    th = np.asarray(theta, dtype=np.float64)
    worst = 0.0
    for m, n in pairs:
        am, an = ((np.asarray(p, dtype=np.float64).astype(fmt) * th.astype(fmt)).astype(np.float64) for p in (m, n))
        err = (an - am) - (n - m) * th
        worst = max(worst, float(np.sqrt(np.mean(4 * np.sin(err / 2) ** 2))))
    return worst


def phase_law() -> int:
    from ropegeo.gates.procedure import geometry_audit
    from ropegeo.models.manifest import load_model, shipped_models

    cases = [(name, dtype, None) for name in shipped_models() for dtype in ("own", "float64", "bfloat16")]
    cases += [("llama-4-scout-17b-16e-instruct", dtype, 2**25) for dtype in ("own", "float64")]
    pairs = []
    for name, dtype, target in cases:
        m = load_model(name)
        m = m if dtype == "own" else m.with_(phase_dtype=dtype)
        a = geometry_audit(m, target_length=target)
        T, L = a.target_length, a.train_length
        law_pairs = [(2, 9), (31, 40), (97, 611), (L // 4, L - 2)] + ([(T // 4, T - 2)] if T > L else [])
        derived = _law(m.operator.theta_at(T), law_pairs, m.phase_dtype)
        pairs.append((derived >= a.gate_b.threshold / 2, a.phase_law_check.passed is False))
    print(f"the relative law in the phase dtype on {len(pairs)} audits (shipped configurations in their own dtype, "
          "float64 and bfloat16; Scout's ruler at 2^25 tokens in float32 and float64; positive = the derived law "
          "distance reaches half Gate B's threshold):")
    print("  " + _counts(pairs))
    return sum(p != f for p, f in pairs)


def main() -> int:
    fast_band()
    bad = battery() + per_axis() + precision() + phase_law()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
