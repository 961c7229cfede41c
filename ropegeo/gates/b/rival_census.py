"""The distant-rival mechanism counted over seeds: who loses, who flags it, what a new ruler does.

Chapter 6 serves offset heads eight times past their training length; some seeds lose to a distant
rival (``ropegeo.toy.distant_rival``). :func:`rival_census` records, per seed, the raw loss, the
**fast-band flag** (Gate B's default verdict with the head's amplitudes on the pairs that turn at
least once in training, zero elsewhere; it flags every stored seed, so it explains, never judges)
and what the NTK-aware ruler does without fine-tuning; :func:`census_counts` gives the counts the
chapter states. :func:`necessity_table` sets Gate B's verdict on each served ruler against the
stored outcomes (``ropegeo/data/runs/finetune_budget.json``, ``rival_census.json``, made by
``scripts/make_rival_census.py``).
"""

from __future__ import annotations

import math

import numpy as np

from ropegeo import _validate as v
from ropegeo import toy as behaviour
from ropegeo.frequencies import frequencies
from ropegeo.gates.b.axes import axis_gate_b
from ropegeo.gates.b.rule import gate_b_decision
from ropegeo.multiaxis import axis_frequencies
from ropegeo.scaling import preset, scaled_frequencies

__all__ = ["MAX_CENSUS_SEEDS", "rival_census", "census_counts", "necessity_table"]

#: Most seeds one census trains (about a second of training and evaluation per seed).
MAX_CENSUS_SEEDS = 200
#: Seeds trained per call of ``ropegeo.toy.train_heads`` (its own limit is 20).
_BATCH = 20


def _seeds(seeds) -> list:
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise ValueError(f"seeds must be an iterable of integers, got {seeds!r}")
    out = [v.integer("seeds", s, minimum=0) for s in seeds]
    if not out or len(set(out)) != len(out):
        raise ValueError("seeds must hold at least one seed and no repeats")
    if len(out) > MAX_CENSUS_SEEDS:
        raise ValueError(f"seeds must hold at most MAX_CENSUS_SEEDS = {MAX_CENSUS_SEEDS} seeds, got {len(out)}")
    return out


def _record(head, target_length: int, theta: np.ndarray, fast: np.ndarray) -> dict:
    rival = behaviour.distant_rival(head, target_length)
    weights = np.where(fast, head.amplitudes(), 0.0)
    flag = gate_b_decision([head.offset, rival.rival], theta, weighting=weights)
    fast_margin = float(flag.margin.margin)
    raw = behaviour.evaluate(head, target_length)
    ntk = behaviour.evaluate(head, target_length, extension="ntk")
    wrong = {d: c for d, c in ntk.winner_counts().items() if d != head.offset}
    ntk_winner = next(iter(wrong)) if wrong else None  # most common wrong winner displacement
    return {
        "seed": int(head.seed), "raw_accuracy": raw.accuracy, "raw_loses": bool(rival.wins), "rival": int(rival.rival),
        "fast_margin": fast_margin, "fast_threshold": float(flag.threshold), "flagged": flag.status == "fail",
        "ntk_accuracy": ntk.accuracy,
        "ntk_loses": bool(ntk.accuracy < 1.0), "ntk_winner": None if ntk_winner is None else int(ntk_winner),
        "ntk_near": None if ntk_winner is None else bool(ntk_winner < head.train_length),
    }


def rival_census(seeds=range(60), *, head_dim: int = 16, base: float = 10_000.0, train_length: int = 64,
                 offset: int = 5, target_length: int = 512) -> dict:
    """Train an offset head per seed (at most :data:`MAX_CENSUS_SEEDS`) and record its distant rival.

    Returns ``{"settings", "seeds"}``: per seed ``raw_accuracy``, ``raw_loses``, ``rival``,
    ``fast_margin``, ``fast_threshold``, ``flagged`` (Gate B fails), ``ntk_accuracy``, ``ntk_loses``,
    ``ntk_winner`` (most common wrong winner, or None) and ``ntk_near`` (it lies inside training).
    Raises ValueError for bad seeds or settings.

    Examples
    --------
    >>> c = rival_census([0, 1])
    >>> [(r["seed"], r["raw_loses"], r["flagged"]) for r in c["seeds"]]
    [(0, False, True), (1, True, True)]
    """
    seeds = _seeds(seeds)
    train_length = v.integer("train_length", train_length, minimum=2)
    target_length = v.integer("target_length", target_length, minimum=train_length + 1)
    theta = frequencies(head_dim, base)
    fast = theta * train_length >= 2 * math.pi
    records = []
    with behaviour.one_blas_thread():
        for i in range(0, len(seeds), _BATCH):
            heads = behaviour.train_heads("offset", seeds[i:i + _BATCH], offset=offset, head_dim=head_dim,
                                          base=base, train_length=train_length)
            records += [_record(h, target_length, theta, fast) for h in heads]
    settings = dict(head_dim=head_dim, base=float(base), train_length=train_length, offset=offset,
                    target_length=target_length, gate_b_rule="default GateBRule()", fast_pairs=int(fast.sum()))
    return {"settings": settings, "seeds": records}


def _auc(low, high) -> float:
    """The chance that a value of ``low`` lies below one of ``high`` (ties half); nan if either is empty."""
    if not low or not high:
        return math.nan
    a, b = np.asarray(low, dtype=float)[:, None], np.asarray(high, dtype=float)[None, :]
    return float(np.mean((a < b) + 0.5 * (a == b)))


def census_counts(census: dict) -> dict:
    """The counts a chapter states from a :func:`rival_census` (ValueError when it is not one).

    Seeds, losers, flagged (losers / survivors), sensitivity and specificity (``nan`` when empty),
    ``margin_auc`` (the chance a loser's fast-band margin lies below a survivor's, ties half) and
    the NTK failures (rescued, new, near or far from training).

    Examples
    --------
    >>> row = dict(raw_loses=True, flagged=True, fast_margin=0.1, ntk_loses=False, ntk_near=None)
    >>> c = census_counts({"seeds": [row, dict(row, raw_loses=False, fast_margin=0.3)]})
    >>> c["ntk_rescued"], c["sensitivity"], c["specificity"], c["margin_auc"]
    (1, 1.0, 0.0, 1.0)
    """
    if not isinstance(census, dict) or not isinstance(census.get("seeds"), list):
        raise ValueError("census must be the dict rival_census returns")
    rows = census["seeds"]
    losers = [r for r in rows if r["raw_loses"]]
    survivors = [r for r in rows if not r["raw_loses"]]
    ntk_fail = [r for r in rows if r["ntk_loses"]]
    caught, clear = sum(r["flagged"] for r in losers), sum(not r["flagged"] for r in survivors)
    return {
        "seeds": len(rows), "raw_losers": len(losers),
        "flagged": sum(r["flagged"] for r in rows), "flagged_losers": caught,
        "missed_losers": len(losers) - caught, "flagged_survivors": len(survivors) - clear, "clear_survivors": clear,
        "sensitivity": caught / len(losers) if losers else math.nan,
        "specificity": clear / len(survivors) if survivors else math.nan,
        "margin_auc": _auc([r["fast_margin"] for r in losers], [r["fast_margin"] for r in survivors]),
        "ntk_rescued": sum(not r["ntk_loses"] for r in losers), "ntk_failures": len(ntk_fail),
        "ntk_failures_raw_losers": sum(r["raw_loses"] for r in ntk_fail),
        "ntk_failures_new": sum(not r["raw_loses"] for r in ntk_fail),
        "ntk_failures_near": sum(bool(r["ntk_near"]) for r in ntk_fail),
        "ntk_failures_far": sum(r["ntk_near"] is False for r in ntk_fail),
    }


def _verdict(rule: str, s: dict):
    """Gate B (default rule, even weighting) on ``rule``'s ruler for the offset task: every displacement 1..T-1."""
    scaling = None if rule == "raw" else preset(rule, train_length=s["train_length"], target_length=s["target_length"])
    theta, _ = scaled_frequencies(scaling, s["head_dim"], s["base"], seq_len=s["target_length"])
    return gate_b_decision(range(1, s["target_length"]), theta, trained_theta=frequencies(s["head_dim"], s["base"]))


def necessity_table(budget_run: dict, census: dict, *, success: float = 0.9, scheme_comparison: dict | None = None,
                    ruler_study: dict | None = None, axial_budget: dict | None = None) -> list:
    """Gate B's verdict on each served ruler against the stored heads' accuracy at the target length.

    A seed succeeds at accuracy ``>= success``; no head is trained. With ``scheme_comparison`` or
    ``ruler_study`` (chapter 7's records) one cell per stretch factor / ruler, judged on the ruler the
    head was trained with; with ``axial_budget`` (chapter 8's) one per split and budget, Gate B passing
    when every axis passes :func:`ropegeo.gates.b.axes.axis_gate_b`. One dict per cell (rule, budget;
    the census is raw at budget 0): ``source``, ``rule``, ``budget``, ``verdict``, ``margin``,
    ``threshold``, ``pair``, ``succeed``, ``fail``. ValueError for other records or ``success``
    outside (0, 1].

    Examples
    --------
    >>> from ropegeo.toy.budget_curves import load_run
    >>> rows = necessity_table(load_run("finetune_budget"), load_run("rival_census"))
    >>> [(r["rule"], r["verdict"], r["succeed"], r["fail"]) for r in rows if r["budget"] == 0][1:]
    [('pi', 'fail', 0, 20), ('ntk', 'pass', 19, 1), ('yarn', 'pass', 19, 1), ('llama3', 'fail', 20, 0),
     ('raw', 'pass', 48, 12)]

    Chapter 7's rulers, each judged on the ruler its heads were trained with (a pass by construction:
    no offset returns near another within the stretched length, so the margin is sqrt 2 x the threshold):

    >>> rows = necessity_table(load_run("finetune_budget"), load_run("rival_census"), ruler_study=load_run("ruler_study"))
    >>> [(r["rule"], r["verdict"], r["succeed"], r["fail"]) for r in rows if r["source"] == "ruler_study"]
    [('base 10,000', 'pass', 16, 4), ('base 10,000 slowed x8', 'pass', 17, 3), ('base 500', 'pass', 20, 0)]
    """
    if not all(isinstance(r, dict) and "settings" in r for r in (budget_run, census)) or "accuracy" not in budget_run:
        raise ValueError("budget_run and census must be the stored finetune_budget and rival_census records")
    if not 0.0 < float(success) <= 1.0:
        raise ValueError(f"success must lie in (0, 1], got {success!r}")
    cells = [("finetune_budget", budget_run["settings"], rule, b, budget_run["accuracy"][rule][i])
             for rule in budget_run["settings"]["rules"] for i, b in enumerate(budget_run["settings"]["budgets"])]
    cells.append(("rival_census", census["settings"], "raw", 0, [r["raw_accuracy"] for r in census["seeds"]]))
    rows = []
    for source, s, rule, budget, acc in cells:
        d = _verdict(rule, s)
        ok = sum(a >= success for a in acc)
        rows.append(_row(source, rule, budget, d, acc, success))
    if scheme_comparison is not None:
        rows += _scheme_rows(scheme_comparison, success)
    if ruler_study is not None:
        rows += _ruler_rows(ruler_study, success)
    if axial_budget is not None:
        rows += _axial_rows(axial_budget, success)
    return rows


def _row(source, rule, budget, d, acc, success) -> dict:
    ok = sum(a >= success for a in acc)
    return {"source": source, "rule": rule, "budget": int(budget), "verdict": d.status,
            "margin": float(d.margin.margin), "threshold": float(d.threshold),
            "pair": tuple(int(x) for x in d.margin.pair), "succeed": int(ok), "fail": len(acc) - ok}


def _scheme_rows(run: dict, success: float) -> list:
    """Chapter 7's RoPE heads (base 10,000) stretched by each factor, on every displacement there."""
    if not isinstance(run, dict) or not isinstance(run.get("results"), dict) or "rope" not in run["results"]:
        raise ValueError("scheme_comparison must be the stored scheme_comparison record")
    s = run["settings"]
    th = frequencies(s["head_dim"], 10_000.0)
    return [_row("scheme_comparison", f"rope x{f}", s["steps"],
                 gate_b_decision(range(1, f * s["train_length"]), th, trained_theta=th),
                 [r["stretch_accuracy"][j] for r in run["results"]["rope"]], success)
            for j, f in enumerate(s["factors"])]


def _ruler_rows(run: dict, success: float) -> list:
    """Chapter 7's rulers: the local head at ``factor * train_length``, on the ruler it was trained with."""
    if not isinstance(run, dict) or not isinstance(run.get("rulers"), dict) or "settings" not in run:
        raise ValueError("ruler_study must be the stored ruler_study record")
    s = run["settings"]
    long = s["factor"] * s["train_length"]
    rows = []
    for name, r in run["rulers"].items():
        th = np.asarray(r["theta"], dtype=float)
        rows.append(_row("ruler_study", name, s["table_steps"], gate_b_decision(range(1, long), th, trained_theta=th),
                         r["stretch_accuracy"], success))
    return rows


def _axial_rows(run: dict, success: float) -> list:
    """Chapter 8's 2D splits: every axis over its grid extent (calibrated on the axis), at every budget."""
    if not isinstance(run, dict) or not isinstance(run.get("curves"), dict) or "settings" not in run:
        raise ValueError("axial_budget must be the stored axial_budget record")
    s = run["settings"]
    theta = frequencies(s["head_dim"], s["base"])
    rows = []
    for name, assignment in s["assignments"].items():
        F = axis_frequencies(theta, np.asarray(assignment), len(s["grid"]))
        per_axis = [axis_gate_b(F, a, n) for a, n in enumerate(s["grid"])]
        rank = {"fail": 0, "inconclusive": 1, "pass": 2}  # the verdict: any axis failing, else any inconclusive
        d = min(per_axis, key=lambda x: (rank[x.status], x.margin.margin / x.threshold if x.threshold > 0 else 0.0))
        for budget, acc in zip(s["budgets"], run["curves"][name]["accuracy"]):
            rows.append(_row("axial_budget", name, budget, d, acc, success))
    return rows
