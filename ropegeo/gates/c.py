"""Gate C: does a trained head actually use the rotary geometry? The verdict of the audit.

:func:`gate_c` trains offset and match heads on a frequency schedule (:mod:`ropegeo.toy`)
and checks them at the training length, at a target length under the deployed schedule, and
under a global shift of every position. :class:`GateCVerdict` holds every number behind the
verdict. Gate A (:mod:`ropegeo.gates.a.gate`) checks an implementation; Gate B
(:func:`ropegeo.gates.audit.geometry_audit`) checks the geometry of a schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ropegeo import _validate as v
from ropegeo._json import dumps
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

__all__ = ["GateCVerdict", "gate_c"]


@dataclass(frozen=True)
class GateCVerdict:
    """Pass or fail of the standard Gate C battery, with every number behind it.

    Attributes
    ----------
    passed : bool
        All checks pass.
    checks : dict
        ``name -> {"passed": bool, "value": float, "threshold": float}``.
    per_seed : dict
        Per-seed accuracies and masses of each condition.
    settings : dict
        The battery's settings (lengths, offset, seeds, schedule).
    """

    passed: bool
    checks: dict
    per_seed: dict
    settings: dict

    def to_dict(self) -> dict:
        """Plain-Python form: ``passed``, ``checks``, ``per_seed`` and ``settings``."""
        return {"passed": self.passed, "checks": self.checks, "per_seed": self.per_seed, "settings": self.settings}

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as JSON (non-finite numbers as null; keyword arguments go to ``json.dumps``)."""
        return dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        rows = [f"Gate C: {'PASS' if self.passed else 'FAIL'}"]
        for name, c in self.checks.items():
            rows.append(f"  {'ok  ' if c['passed'] else 'FAIL'} {name:<34} {c['value']:.3f} (threshold {c['threshold']:g})")
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.table()


def gate_c(
    theta,
    *,
    train_length: int = 64,
    target_length: int = 512,
    target_theta=None,
    target_scale: float = 1.0,
    target_attention_factor: float = 1.0,
    offset: int = 5,
    seeds=(0, 1, 2),
    steps: int = 1000,
    match_steps: int = 600,
    min_train_accuracy: float = 0.95,
    min_target_accuracy: float = 0.9,
    min_match_accuracy: float = 0.9,
    max_shift_change: float = 1e-6,
    shift: float = 10_000.0,
    progress: bool = False,
) -> GateCVerdict:
    """Run the standard Gate C battery on a frequency schedule and return the verdict.

    For each seed an offset head (target displacement ``offset``) and a most-recent-match head
    are trained on ``theta`` at ``train_length``. Checks:

    * ``offset accuracy at L``: the lowest per-seed offset accuracy at ``train_length``;
    * ``offset accuracy at target``: the mean offset accuracy at ``target_length`` under the
      deployed schedule (``target_theta`` and ``target_scale``; default: ``theta`` unscaled);
    * ``match accuracy at target``: the mean match accuracy at ``target_length`` under that schedule;
    * ``global shift change``: the largest change of attention mass when every position is shifted
      by ``shift`` (float64 phases), which must stay below ``max_shift_change``.

    Parameters
    ----------
    theta : array_like, shape (pairs,)
        The training schedule, radians per position (at most ``MAX_TRAINED_HEAD_DIM // 2`` pairs).
    train_length, target_length : int
        ``2 <= train_length < target_length``; ``offset < train_length``. The match heads train
        at ``train_length``, so it is at most :data:`MAX_MATCH_LENGTH` = 1024; the heads are
        evaluated at ``target_length``, at most :data:`MAX_HEAD_LENGTH` = 4096.
    target_theta, target_scale, target_attention_factor
        The deployed schedule at the target length (frequencies, position multiplier, and the
        multiplier of rotated queries and keys, e.g. from ``ropegeo.scaling.rope_parameters``).
    offset : int
    seeds : iterable of int
        1 to :data:`MAX_SEEDS` = 20 seeds (about 1 s each at the defaults).
    steps, match_steps : int
        Training steps of the two heads (each 1 to :data:`MAX_STEPS`).
    min_train_accuracy, min_target_accuracy, min_match_accuracy : float in [0, 1]
    max_shift_change : float
    shift : float
    progress : bool
        Show progress bars while the heads train (about 1 s per match head and seed).

    Returns
    -------
    GateCVerdict

    Raises
    ------
    ValueError
        For bad lengths, seeds or steps, thresholds outside [0, 1], or a target schedule of
        another size; all before any training.
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
    thresholds = {
        "min_train_accuracy": v.real("min_train_accuracy", min_train_accuracy, minimum=0.0, maximum=1.0),
        "min_target_accuracy": v.real("min_target_accuracy", min_target_accuracy, minimum=0.0, maximum=1.0),
        "min_match_accuracy": v.real("min_match_accuracy", min_match_accuracy, minimum=0.0, maximum=1.0),
    }
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
    checks = {
        "offset accuracy at L (min)": {"value": float(at_l.accuracy.min()), "threshold": thresholds["min_train_accuracy"]},
        "offset accuracy at target (mean)": {"value": at_t.accuracy_mean, "threshold": thresholds["min_target_accuracy"]},
        "match accuracy at target (mean)": {"value": m_t.accuracy_mean, "threshold": thresholds["min_match_accuracy"]},
    }
    for c in checks.values():
        c["passed"] = bool(c["value"] >= c["threshold"])
    checks["global shift change (max)"] = {"value": change, "threshold": max_shift_change,
                                           "passed": bool(change <= max_shift_change)}
    per_seed = {r.label: r.to_dict() for r in (at_l, at_t, m_t, shifted)}
    settings = {"theta": th.tolist(), "target_theta": tth.tolist(), "target_scale": target_scale,
                "target_attention_factor": target_attention_factor,
                "train_length": train_length, "target_length": target_length, "offset": offset,
                "seeds": [h.seed for h in offs], "steps": steps, "match_steps": match_steps, "shift": shift}
    return GateCVerdict(all(c["passed"] for c in checks.values()), checks, per_seed, settings)
