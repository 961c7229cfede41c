"""Fine-tuning budget curves: what an extension rule's fine-tuning buys, step by step, seed by seed.

Chapter 6 trains offset heads at a short length and serves them eight times longer under a rule.
:func:`budget_curve` fine-tunes every seed's head under each rule for each budget (a fresh run per
budget from the same trained head; budget 0 is the untouched head) and records per seed the
target *mass* and winner *accuracy* at the target length (phases in float64, and in bfloat16 to
measure fragility), and the *amplitude ratio* ``sum_i |a_i + i b_i|`` after over before: what
fine-tuning pays for resolution. The book's curve is stored in ``ropegeo/data/runs/`` by
``scripts/make_budget_curve.py`` and read with :func:`load_run`.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import ml_dtypes
import numpy as np

from ropegeo import _validate as v
from ropegeo import scaling
from ropegeo import toy as behaviour
from ropegeo.scaling import rule_name
from ropegeo.softmax import softmax

__all__ = ["CURVE_RULES", "BUDGETS", "MATCH_BUDGETS", "RUNS", "PIPELINES", "budget_curve", "match_fix_curve",
           "pipeline_mass", "spread", "load_run", "rule_overlap"]

#: ``ropegeo.scaling.NAMED_RULES`` but dynamic, as the stored runs key them (``"raw"``, ``"pi"``: aliases).
CURVE_RULES = tuple({"none": "raw", "linear": "pi"}.get(r, r) for r in scaling.NAMED_RULES if r != "dynamic")
#: Fine-tuning budgets (Adam steps at the target length); 0 is the untouched head.
BUDGETS = (0, 150, 300, 600, 1500, 3000, 6000)
#: Where stored runs live.
RUNS = Path(__file__).resolve().parent.parent / "data" / "runs"
#: Most budgets in one curve, and the largest budget (each costs about 0.1 ms per step).
MAX_BUDGETS = 16
MAX_BUDGET = 20_000


#: How the rotary tables are formed when a head is served (see :func:`pipeline_mass`).
PIPELINES = ("float64", "bf16_cos_sin")


def _bf16(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(ml_dtypes.bfloat16).astype(np.float64)


def pipeline_mass(head, length: int, pipeline: str = "float64", *, extension: str | None = None,
                  factor: float | None = None) -> float:
    """Mean attention mass of an offset head on its target at ``length`` (at most 4096), with the rotary tables of a pipeline.

    ``"float64"`` is exact; ``"bf16_cos_sin"`` forms the angles in float32, casts cos, sin, queries,
    keys and rotated vectors to bfloat16 (the order of current transformers rotary classes); the
    angle table rounded to bfloat16 itself is ``ropegeo.toy.evaluate(..., phase_dtype="bfloat16")``.
    ``extension, factor`` serve the head under a named rule. Raises ValueError for a head that is not
    an offset head, a bad length, pipeline or rule.
    """
    if not isinstance(head, behaviour.OffsetHead):
        raise ValueError(f"head must be an ropegeo.toy.OffsetHead, got {type(head).__name__}")
    length = v.integer("length", length, minimum=head.offset + 1, maximum=4096)
    if pipeline not in PIPELINES:
        raise ValueError(f"pipeline must be one of {PIPELINES}, got {pipeline!r}")
    if extension is None:
        theta, scale, att = head.theta, head.scale, head.attention_factor
    else:
        sch = scaling.extension_schedule(extension, head_dim=head.head_dim, base=head.base,
                                           train_length=head.original_train_length, length=length, factor=factor)
        theta, scale, att = sch.theta, sch.scale * head.scale, sch.attention_factor * head.attention_factor
    pos = np.arange(length, dtype=np.float64) * scale
    q, k = head.q, head.k
    if pipeline == "float64":
        ang = pos[:, None] * theta
        cos, sin = np.cos(ang), np.sin(ang)
    else:
        ang = (pos.astype(np.float32)[:, None] * theta.astype(np.float32)).astype(np.float64)
        cos, sin = _bf16(np.cos(ang).astype(np.float32)), _bf16(np.sin(ang).astype(np.float32))
        q, k = _bf16(q), _bf16(k)

    def rotate(x):  # interleaved pairs (2i, 2i + 1), as the heads are trained
        x1, x2 = x[0::2], x[1::2]
        out = np.empty((length, x.size))
        out[:, 0::2], out[:, 1::2] = x1 * cos - x2 * sin, x1 * sin + x2 * cos
        return _bf16(out) if pipeline == "bf16_cos_sin" else out

    scores = (att * att * rotate(q) @ rotate(k).T)[head.offset:]
    m = np.arange(length)
    p = softmax(scores, (m[None, :] < m[:, None])[head.offset:])
    rows = np.arange(scores.shape[0])
    return float(np.mean(p[rows, rows]))


def _head_settings(head_dim, base, train_length, offset, factor, lr):
    return {"head_dim": v.head_dim(head_dim, maximum=64), "base": v.base(base),
            "train_length": v.integer("train_length", train_length, minimum=8, maximum=256),
            "offset": v.integer("offset", offset, minimum=1, maximum=7),
            "factor": v.integer("factor", factor, minimum=2, maximum=16),
            "lr": v.real("lr", lr, greater_than=0.0, maximum=1.0)}


def _rules_and_budgets(rules, budgets, most_steps: int) -> tuple[list, list]:
    """A curve's checked rule names and budgets (1 to :data:`MAX_BUDGETS`, 0 to ``most_steps``)."""
    if isinstance(rules, str) or not v.is_collection(rules):
        raise ValueError(f"rules must be a list of rule names such as ('raw', 'pi'), got {rules!r}")
    rules = [str(r) for r in itertools.islice(rules, len(scaling.RULES) + 2)]
    if not rules:
        raise ValueError(f"rules must hold at least one rule name, got {rules!r}")
    for r in rules:
        try:
            rule_name(r)
        except ValueError:
            raise ValueError(f"rules must hold rule names such as {CURVE_RULES}, got {r!r}") from None
    if not v.is_collection(budgets):
        raise ValueError(f"budgets must be a list of step counts such as (0, 30, 100), got {budgets!r}")
    budgets = [v.integer("budgets", b, minimum=0, maximum=most_steps) for b in itertools.islice(budgets, MAX_BUDGETS + 1)]
    if not budgets or len(budgets) > MAX_BUDGETS:
        raise ValueError(f"budgets must hold 1 to {MAX_BUDGETS} step counts")
    return rules, budgets


def budget_curve(seeds=range(10), rules=CURVE_RULES, budgets=BUDGETS, *, head_dim: int = 16, base: float = 10_000.0,
                 train_length: int = 64, offset: int = 5, factor: int = 8, lr: float = 0.05) -> dict:
    """Fine-tune offset heads under each rule for each budget and measure them at ``factor * train_length``.

    ``budgets`` are 0 to 20,000 steps (at most 16); heads have ``head_dim`` at most 64, ``train_length``
    8 to 256, ``offset`` 1 to 7; ``factor`` is 2 to 16, ``lr`` at most 1. Returns ``settings`` and, for
    ``mass``, ``accuracy``, ``mass_bf16``, ``mass_bf16_cos_sin`` (:func:`pipeline_mass`) and
    ``amplitude_ratio``, a dict ``rule -> budgets x seeds``. Raises ValueError for a bad argument.

    Examples
    --------
    >>> run = budget_curve(seeds=[0], rules=["pi"], budgets=[0, 100])
    >>> run["mass"]["pi"][1][0] > run["mass"]["pi"][0][0]
    True
    """
    seeds = behaviour.seed_list(seeds)
    rules, budgets = _rules_and_budgets(rules, budgets, MAX_BUDGET)
    s = _head_settings(head_dim, base, train_length, offset, factor, lr)
    target = s["factor"] * s["train_length"]
    heads = behaviour.train_heads("offset", seeds, offset=s["offset"], head_dim=s["head_dim"], base=s["base"],
                                  train_length=s["train_length"], lr=s["lr"])
    keys = ("mass", "accuracy", "mass_bf16", "mass_bf16_cos_sin", "amplitude_ratio")
    out = {k: {r: [] for r in rules} for k in keys}
    for rule in rules:
        for steps in budgets:
            row = {k: [] for k in keys}
            for h in heads:
                if steps == 0:
                    tuned, run = h, dict(extension=rule, factor=s["factor"])
                else:
                    tuned = behaviour.fine_tune(h, extension=rule, factor=s["factor"], length=target, steps=steps,
                                                lr=s["lr"])
                    run = {}
                e = behaviour.evaluate(tuned, target, **run)
                e16 = behaviour.evaluate(tuned, target, phase_dtype="bfloat16", **run)  # angle table in bfloat16
                row["mass"].append(e.mass)
                row["accuracy"].append(e.accuracy)
                row["mass_bf16"].append(e16.mass)
                row["mass_bf16_cos_sin"].append(pipeline_mass(tuned, target, "bf16_cos_sin", **run))
                row["amplitude_ratio"].append(float(tuned.amplitudes().sum() / h.amplitudes().sum()))
            for k in keys:
                out[k][rule].append(row[k])
    out["settings"] = dict(s, seeds=seeds, rules=rules, budgets=budgets, target_length=target)
    return out


#: Fine-tuning budgets of :func:`match_fix_curve` (Adam steps of 4 sequences at the target length).
MATCH_BUDGETS = (0, 10, 30, 100)


def match_fix_curve(seeds=range(10), rules=("raw", "pi"), budgets=MATCH_BUDGETS, *, head_dim: int = 16,
                    base: float = 10_000.0, train_length: int = 64, factor: int = 8, train_steps: int = 300,
                    sequences: int = 4) -> dict:
    """Gate C's prescribed fix, measured: fine-tune its match heads at the target length.

    Match heads trained with ``train_steps`` (1 to 2,000) are fine-tuned under each rule for each
    budget (0 to 1,000 steps) at ``factor * train_length`` and evaluated there on ``sequences``
    (1 to 16) random sequences. ``head_dim`` at most 64, ``train_length`` 8 to 128, ``factor`` 2 to 8.
    Returns ``settings``, ``accuracy`` and ``mass`` (rule -> budgets x seeds).
    """
    seeds = behaviour.seed_list(seeds)
    rules, budgets = _rules_and_budgets(rules, budgets, 1000)
    s = {"head_dim": v.head_dim(head_dim, maximum=64), "base": v.base(base),
         "train_length": v.integer("train_length", train_length, minimum=8, maximum=128),
         "factor": v.integer("factor", factor, minimum=2, maximum=8),
         "train_steps": v.integer("train_steps", train_steps, minimum=1, maximum=2000),
         "sequences": v.integer("sequences", sequences, minimum=1, maximum=16)}
    target = s["factor"] * s["train_length"]
    heads = behaviour.train_heads("match", seeds, head_dim=s["head_dim"], base=s["base"],
                                  train_length=s["train_length"], steps=s["train_steps"])
    out = {"accuracy": {r: [] for r in rules}, "mass": {r: [] for r in rules}}
    for rule in rules:
        for steps in budgets:
            acc, mass = [], []
            for h in heads:
                tuned = h if steps == 0 else behaviour.fine_tune(h, extension=rule, factor=s["factor"],
                                                                 length=target, steps=steps, seed=h.seed)
                e = behaviour.evaluate(tuned, target, sequences=s["sequences"],
                                       **({"extension": rule, "factor": s["factor"]} if steps == 0 else {}))
                acc.append(e.accuracy)
                mass.append(e.mass)
            out["accuracy"][rule].append(acc)
            out["mass"][rule].append(mass)
    out["settings"] = dict(s, seeds=seeds, rules=rules, budgets=budgets, target_length=target)
    return out


def spread(values) -> dict:
    """Mean, min, max and the 10th and 90th percentiles of per-seed values (seeds on the last axis)."""
    x = np.asarray(values, dtype=float)
    return {"mean": x.mean(axis=-1), "min": x.min(axis=-1), "max": x.max(axis=-1),
            "p10": np.percentile(x, 10, axis=-1), "p90": np.percentile(x, 90, axis=-1)}


def rule_overlap(run: dict, rule: str, against: str = "pi", quantity: str = "amplitude_ratio") -> dict:
    """Where one rule's seeds reach another's, budget by budget, in a stored budget curve.

    Returns ``budgets``, per budget ``rule_mean``, ``rule_max``, ``against_mean``, ``against_min``, and
    ``mean_above`` / ``seed_above_min``: the budgets where the rule's mean exceeds the other's mean /
    some seed of the rule exceeds the other's lowest seed. Raises ValueError for a rule or quantity
    the run does not hold.

    Examples
    --------
    >>> o = rule_overlap(load_run("finetune_budget"), "llama3")
    >>> o["mean_above"], o["seed_above_min"][-2:]
    ([150, 300, 600], [3000, 6000])
    """
    if not isinstance(run, dict) or "settings" not in run:
        raise ValueError("run must be a budget curve (budget_curve or load_run)")
    if not isinstance(quantity, str) or not isinstance(run.get(quantity), dict):
        raise ValueError(f"quantity must be a per-seed quantity of the run, got {quantity!r}")
    for name, r in (("rule", rule), ("against", against)):
        if not isinstance(r, str) or r not in run[quantity]:
            raise ValueError(f"{name} must be one of the run's rules {sorted(run[quantity])}, got {r!r}")
    budgets = list(run["settings"]["budgets"])
    a, b = np.asarray(run[quantity][rule], dtype=float), np.asarray(run[quantity][against], dtype=float)
    out = {"budgets": budgets, "rule_mean": a.mean(axis=1).tolist(), "rule_max": a.max(axis=1).tolist(),
           "against_mean": b.mean(axis=1).tolist(), "against_min": b.min(axis=1).tolist()}
    out["mean_above"] = [n for n, x, y in zip(budgets, out["rule_mean"], out["against_mean"]) if x > y]
    out["seed_above_min"] = [n for n, x, y in zip(budgets, out["rule_max"], out["against_min"]) if x > y]
    return out


def load_run(name: str = "finetune_budget") -> dict:
    """A stored run from ``ropegeo/data/runs/<name>.json``; a ValueError when ``name`` is not one."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ValueError(f"name must be the name of a stored run (letters, digits, underscores), got {name!r}")
    path = RUNS / f"{name}.json"
    if not path.is_file():
        stored = sorted(p.stem for p in RUNS.glob("*.json"))
        raise ValueError(f"name must be one of the stored runs {stored}, got {name!r}")
    return json.loads(path.read_text())
