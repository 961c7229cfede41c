"""Gate C: does a trained head actually use the rotary geometry?

:func:`gate_c` trains offset and match heads on a frequency schedule (:mod:`ropegeo.toy`) and
checks them at the training length, at a target length under the deployed schedule, and under a
global shift; :class:`GateCVerdict` holds every number behind the verdict.
"""

from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np

from ropegeo import _validate as v
from ropegeo.toy import (
    MAX_HEAD_LENGTH,
    MAX_MATCH_LENGTH,
    MAX_STEPS,
    check_match_step,
    check_theta,
    evaluate_seeds,
    one_blas_thread,
    seed_list,
    train_heads,
)
from ropegeo.gates.verdicts import Report
from ropegeo.toy.reanchor import reanchored_base

__all__ = ["GateCVerdict", "gate_c", "judge_seeds", "gate_c_schedule", "run_for_manifest", "check_options", "toy_lengths"]


@dataclass(frozen=True)
class GateCVerdict(Report):
    """Pass or fail of the standard Gate C battery: ``checks`` (from :func:`judge_seeds`), the
    per-seed accuracies and masses of each condition, and the battery's settings."""

    passed: bool
    checks: dict
    per_seed: dict
    settings: dict

    def to_dict(self) -> dict:
        """Plain-Python form: ``passed``, ``checks``, ``per_seed`` and ``settings``."""
        return {"passed": self.passed, "checks": self.checks, "per_seed": self.per_seed, "settings": self.settings}

    def table(self) -> str:
        rows = [f"Gate C: {'PASS' if self.passed else 'FAIL'}"]
        for name, c in self.checks.items():
            seeds = f"; {c['seeds_below']} of {c['seeds']} seeds below" if "seeds" in c else ""
            rows.append(f"  {'ok  ' if c['passed'] else 'FAIL'} {name:<34} {c['value']:.3g} (threshold {c['threshold']:g}{seeds})")
        return "\n".join(rows)


def gate_c(theta, *, train_length: int = 64, target_length: int = 512, target_theta=None, target_scale: float = 1.0,
           target_attention_factor: float = 1.0, offset: int = 5, seeds=(0, 1, 2), steps: int = 1000,
           match_steps: int = 600, min_train_accuracy: float = 0.95, min_target_accuracy: float = 0.9,
           min_match_accuracy: float = 0.9, max_shift_change: float = 1e-6, shift: float = 10_000.0,
           progress: bool = False) -> GateCVerdict:
    """Run the standard Gate C battery on a frequency schedule ``theta`` and return the verdict.

    Per seed (1 to 20, about 1 s each) an offset and a match head train at ``train_length`` (at most
    1,024); checked: the lowest offset accuracy there and at ``target_length`` (at most 4,096) under
    the deployed ``target_*`` schedule, the lowest match accuracy there, and the mass change under a
    global ``shift``. ValueError for a bad argument, before any training.
    """
    th = check_theta(theta)
    train_length = v.integer("train_length", train_length, minimum=2, maximum=MAX_MATCH_LENGTH)
    target_length = v.integer("target_length", target_length, minimum=train_length + 1, maximum=MAX_HEAD_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=train_length - 1)
    seeds = seed_list(seeds)
    steps = v.integer("steps", steps, minimum=1, maximum=MAX_STEPS)
    match_steps = v.integer("match_steps", match_steps, minimum=1, maximum=MAX_STEPS)
    # the match heads train with train_match_head's defaults (vocab 8, batch 32)
    check_match_step(train_length, 32, 8, 2 * th.size)
    tth = th if target_theta is None else check_theta(target_theta, "target_theta")
    if tth.size != th.size:
        raise ValueError(f"target_theta must have {th.size} pairs like theta, got {tth.size}")
    target_scale = v.real("target_scale", target_scale, greater_than=0.0)
    target_attention_factor = v.real("target_attention_factor", target_attention_factor, greater_than=0.0)
    thresholds = {k: v.real(k, a, minimum=0.0, maximum=1.0) for k, a in (("min_train_accuracy", min_train_accuracy),
                  ("min_target_accuracy", min_target_accuracy), ("min_match_accuracy", min_match_accuracy))}
    max_shift_change = v.real("max_shift_change", max_shift_change, minimum=0.0)
    shift = v.real("shift", shift)
    with one_blas_thread():  # small matrices: threads only add overhead (see behaviour.training)
        return _battery(th, tth, target_scale, target_attention_factor, train_length, target_length, offset, seeds,
                        steps, match_steps, thresholds, max_shift_change, shift, progress)


def _battery(th, tth, target_scale, target_attention_factor, train_length, target_length, offset, seeds, steps,
             match_steps, thresholds, max_shift_change, shift, progress) -> GateCVerdict:
    """The trainings, evaluations and checks of :func:`gate_c` on checked values."""
    d = 2 * th.size
    offs = train_heads("offset", seeds, offset=offset, head_dim=d, theta=th, train_length=train_length, steps=steps)
    match = train_heads("match", seeds, head_dim=d, theta=th, train_length=train_length, steps=match_steps,
                        progress=progress)
    deployed = dict(theta=tth, scale=target_scale, attention_factor=target_attention_factor)
    at_l = evaluate_seeds(offs, train_length, label="offset L")
    at_t = evaluate_seeds(offs, target_length, label="offset target", **deployed)
    m_t = evaluate_seeds(match, target_length, sequences=4, label="match target", **deployed)
    shifted = evaluate_seeds(offs, target_length, shift=shift, label="offset shifted", **deployed)
    change = max(float(np.max(np.abs(a.target_mass - b.target_mass))) for a, b in zip(at_t.evaluations, shifted.evaluations))
    checks = judge_seeds(at_l.accuracy, at_t.accuracy, m_t.accuracy, change,
                         max_shift_change=max_shift_change, **thresholds)
    per_seed = {r.label: r.to_dict() for r in (at_l, at_t, m_t, shifted)}
    settings = {"theta": th.tolist(), "target_theta": tth.tolist(), "target_scale": target_scale,
                "target_attention_factor": target_attention_factor,
                "train_length": train_length, "target_length": target_length, "offset": offset,
                "seeds": [h.seed for h in offs], "steps": steps, "match_steps": match_steps, "shift": shift}
    return GateCVerdict(all(c["passed"] for c in checks.values()), checks, per_seed, settings)


def judge_seeds(offset_at_l, offset_at_target, match_at_target, shift_change: float, *,
                min_train_accuracy: float = 0.95, min_target_accuracy: float = 0.9,
                min_match_accuracy: float = 0.9, max_shift_change: float = 1e-6) -> dict:
    """Gate C's checks from per-seed accuracies: every seed must reach each threshold (the minimum
    over seeds, never the mean). ``name -> {"passed", "value", "threshold"}``, accuracy checks also
    ``seeds_below`` and ``seeds``.

    Examples
    --------
    >>> c = judge_seeds([1.0, 1.0], [1.0, 0.5], [0.95, 0.95], 0.0)
    >>> c["offset accuracy at target (min)"]["passed"], c["offset accuracy at target (min)"]["seeds_below"]
    (False, 1)
    >>> c["match accuracy at target (min)"]["passed"]
    True
    """
    checks = {}
    for name, acc, threshold in (("offset accuracy at L (min)", offset_at_l, min_train_accuracy),
                                 ("offset accuracy at target (min)", offset_at_target, min_target_accuracy),
                                 ("match accuracy at target (min)", match_at_target, min_match_accuracy)):
        acc = np.asarray(acc, dtype=float)
        below = int(np.count_nonzero(acc < threshold))
        checks[name] = {"value": float(acc.min()), "threshold": float(threshold), "passed": below == 0,
                        "seeds_below": below, "seeds": int(acc.size)}
    checks["global shift change (max)"] = {"value": float(shift_change), "threshold": float(max_shift_change),
                                           "passed": bool(shift_change <= max_shift_change)}
    return checks


#: Gate C's toy lengths: the training length (at most) and the longest target.
_C_TRAIN_LENGTH = 64
_C_MAX_LENGTH = 4096


def gate_c_schedule(manifest, train_length: int, target_length: int, *, model_length: int | None = None) -> dict:
    """The toy schedule Gate C trains and tests on for a manifest (toy lengths up to 4,096): the
    manifest's rule re-anchored at the toy training length, and with ``model_length`` above it the
    base re-anchored (``ropegeo.toy.reanchor.reanchored_base``) to keep the model's slow/fast split.
    Returns ``theta``, ``target_theta``, ``target_attention_factor``, the lengths, ``rule`` and ``base``.
    """
    train_length = v.length("train_length", train_length, minimum=2)
    target_length = v.integer("target_length", target_length, minimum=train_length + 1, maximum=_C_MAX_LENGTH)
    base = manifest.base
    if model_length is not None:
        model_length = v.length("model_length", model_length, minimum=2)
        if model_length > train_length >= 7:
            base = reanchored_base(base, model_length, train_length)
    sc = manifest.scaling
    if sc is not None and sc.original_max_position_embeddings is not None:
        sc = replace(sc, original_max_position_embeddings=train_length)
    op = manifest.operator.with_(base=base, scaling=sc)  # the manifest's operator, re-anchored at the toy length
    theta, tt, att = np.array(op.unscaled.theta), np.array(op.theta_at(target_length)), op.attention_at(target_length)
    rule = "none" if sc is None else sc.rule
    return {"theta": theta, "target_theta": tt, "target_attention_factor": float(att),
            "train_length": train_length, "target_length": target_length, "rule": rule, "base": float(base)}


#: What Gate C takes from the manifest and ``gate_c_lengths``, never from ``gate_c_options``.
_C_FROM_MANIFEST = ("theta", "train_length", "target_length", "target_theta", "target_attention_factor")


def toy_lengths(gate_c_lengths, train: int, target: int) -> tuple[int, int]:
    """Gate C's toy lengths: the given pair, checked, or the model's ratio from 64 tokens."""
    if gate_c_lengths is None:
        c_train = min(train, _C_TRAIN_LENGTH)
        return c_train, min(_C_MAX_LENGTH, max(c_train + 1, int(round(c_train * target / train))))
    if not v.is_collection(gate_c_lengths) or isinstance(gate_c_lengths, Mapping) or len(list(gate_c_lengths)) != 2:
        raise ValueError(f"gate_c_lengths must be a pair (train, target), got {gate_c_lengths!r}")
    c_train, c_target = gate_c_lengths
    c_train = v.integer("gate_c_lengths (train)", c_train, minimum=2, maximum=MAX_MATCH_LENGTH)
    c_target = v.integer("gate_c_lengths (target)", c_target, minimum=c_train + 1, maximum=_C_MAX_LENGTH)
    return c_train, c_target


def check_options(gate_c_options) -> dict:
    """``gate_c_options`` checked: a dict of :func:`gate_c`'s own keyword arguments."""
    if gate_c_options is None:
        return {}
    if not isinstance(gate_c_options, Mapping):
        raise ValueError(f"gate_c_options must be a dict of ropegeo.gates.c.gate_c's options, got "
                         f"{type(gate_c_options).__name__}")
    known = [k for k in inspect.signature(gate_c).parameters if k not in _C_FROM_MANIFEST and k != "progress"]
    for key in gate_c_options:
        if key in _C_FROM_MANIFEST:
            raise ValueError(f"gate_c_options must not set {key!r}: it comes from the manifest and gate_c_lengths")
        if key not in known:
            raise ValueError(f"gate_c_options: unknown option {key!r}; known: {', '.join(known)}")
    return dict(gate_c_options)


def run_for_manifest(declared, gate_c_lengths, opts: dict, train: int, target: int) -> GateCVerdict:
    """The battery on a manifest's bank at toy lengths (:func:`toy_lengths`), as ``audit`` runs it."""
    c_train, c_target = toy_lengths(gate_c_lengths, train, target)
    offset = opts.get("offset", 5)
    if isinstance(offset, numbers.Integral) and not isinstance(offset, bool) and c_train <= offset + 1:
        raise ValueError(f"Gate C trains a head to attend {offset} tokens back, so the training length must be "
                         f"at least {offset + 2}, got {c_train}")
    sch = gate_c_schedule(declared, c_train, c_target, model_length=train)
    c = gate_c(sch["theta"], train_length=sch["train_length"], target_length=sch["target_length"],
                   target_theta=sch["target_theta"], target_attention_factor=sch["target_attention_factor"], **opts)
    c.settings["rule"] = sch["rule"]
    c.settings["base"] = sch["base"]  # re-anchored to keep the model's slow/fast split
    return c
