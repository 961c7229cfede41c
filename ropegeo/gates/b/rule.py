"""Gate B: does the deployed ruler keep the task's offsets apart? One decision rule, everywhere.

A head of amplitude ``a`` tuned to offset ``x`` scores a key at ``y`` by ``a K_w(y - x)``, and with
exact phases the margin ``D`` (:func:`ropegeo.margins.separation_margin`) gives it a lead of
``a D**2 / 2`` logits: a task needing a gap ``g`` needs ``D >= sqrt(2 g / a)``. :class:`GateBRule` holds
the gap (default three to one) and the amplitude (default: nine to one on adjacent offsets in
training), a threshold of ``D_train(1) / sqrt(2)``; ``fixed_margin`` is the named fallback.
:func:`gate_b_decision` judges one set on a bank, :func:`gate_b` a manifest's sets at its target length.

Examples
--------
>>> from ropegeo.models.manifest import load_model
>>> m = load_model("llama-3.1-8b")
>>> gate_b(m, train_length=m.train_length, target_length=m.target_length).status
'pass'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ropegeo import _validate as v
from ropegeo.gates.verdicts import Check
from ropegeo.gates.verdicts import status as checks_status
from ropegeo.margins import (MAX_DIRECT, MAX_OFFSETS, SeparationMargin, distance_kernel, margin_kernel, offset_array,
                             separation_margin)
from ropegeo.models.manifest import RopeManifest
from ropegeo.precision import as_pipeline, phase_table

__all__ = ["GateBRule", "GateBDecision", "gate_b_decision", "required_margin", "trained_sharpness",
           "GateBResult", "gate_b", "default_offsets", "check_offsets_in_context", "attention_span",
           "FIXED_MARGIN", "MAX_DISTANCE", "CALIBRATION_MASS", "PASS_MASS", "add_rule_arguments",
           "rule_from_arguments"]

#: Largest phase distance two signatures can be apart: a rule asking for it is inconclusive.
MAX_DISTANCE = 2.0
#: The named fallback: a fixed threshold (kernel similarity 0.995), used only when asked for.
FIXED_MARGIN = 0.1
#: Attention the reference head gives the right one of two adjacent offsets in training (nine to one).
CALIBRATION_MASS = 0.9
#: Default need of the task: attention on the right key against its closest rival (a gap of ``ln 3``).
PASS_MASS = 0.75


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def required_margin(gap: float, sharpness: float) -> float:
    """The smallest phase distance at which a head of amplitude ``sharpness`` (logits) keeps a logit
    gap ``gap``: ``sqrt(2 gap / sharpness)`` (above 2, no ruler meets it).

    Examples
    --------
    >>> round(required_margin(math.log(3), 100.0), 4)
    0.1482
    """
    gap = v.real("gap", gap, greater_than=0.0)
    sharpness = v.real("sharpness", sharpness, greater_than=0.0)
    return math.sqrt(2.0 * gap / sharpness)


def trained_sharpness(trained_theta, *, weights=None) -> float:
    """The least sharp head that gives the right one of two adjacent offsets :data:`CALIBRATION_MASS`
    on the (unscaled) training bank: ``2 logit(CALIBRATION_MASS) / D_train(1)**2``, ``inf`` when
    ``D_train(1) = 0``. ``weights``: the head's amplitudes per pair (default equal).

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> round(trained_sharpness(frequencies(8)), 2)
    18.91
    """
    th = v.frequencies(trained_theta, "trained_theta")
    return _sharpness(_reference_distance(th, v.pair_weights(weights, th.size, name="weights (amplitudes)")))


def _reference_distance(th: np.ndarray, w: np.ndarray) -> float:
    """``D_train(1)`` on a trusted training bank with weights ``w``."""
    return float(distance_kernel(np.array(1.0), th, 1.0, w))


def _sharpness(ref: float) -> float:
    return math.inf if ref == 0.0 else 2.0 * _logit(CALIBRATION_MASS) / (ref * ref)


@dataclass(frozen=True)
class GateBRule:
    """Gate B's one decision rule: the smallest margin the task can live with.

    The gap is ``gap`` (logits) or ``mass`` (attention share, ``gap = logit(mass)``; default
    :data:`PASS_MASS`); the amplitude is ``sharpness`` or :func:`trained_sharpness` of the training
    bank. ``fixed_margin`` is the fallback and excludes the other three.

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> th = frequencies(8)
    >>> round(GateBRule().threshold(th), 4)               # D_train(1) / sqrt(2)
    0.3409
    >>> GateBRule().judge(0.093, GateBRule().threshold(th))
    'fail'
    """

    gap: float | None = None
    mass: float | None = None
    sharpness: float | None = None
    fixed_margin: float | None = None

    def __post_init__(self):
        if self.fixed_margin is not None:
            if any(x is not None for x in (self.gap, self.mass, self.sharpness)):
                raise ValueError("fixed_margin is the fallback threshold: give it alone, or give gap/mass/sharpness")
            object.__setattr__(self, "fixed_margin", v.real("fixed_margin", self.fixed_margin, greater_than=0.0,
                                                            maximum=MAX_DISTANCE))
            return
        if self.gap is not None and self.mass is not None:
            raise ValueError("give the task's need as gap (logits) or as mass (attention share), not both")
        if self.gap is not None:
            object.__setattr__(self, "gap", v.real("gap", self.gap, greater_than=0.0, maximum=1e6))
        if self.mass is not None:
            mass = v.real("mass", self.mass, greater_than=0.5)
            if not mass < 1.0:
                raise ValueError(f"mass must be below 1 (an attention share against one rival), got {mass:g}")
            object.__setattr__(self, "mass", mass)
        if self.sharpness is not None:
            object.__setattr__(self, "sharpness", v.real("sharpness", self.sharpness, greater_than=0.0, maximum=1e6))

    @property
    def needed_gap(self) -> float | None:
        """The logit gap the task needs (``None`` under the fixed fallback)."""
        if self.fixed_margin is not None:
            return None
        return self.gap if self.gap is not None else _logit(PASS_MASS if self.mass is None else self.mass)

    def head_sharpness(self, trained_theta=None, *, weights=None) -> float | None:
        """Stated, or :func:`trained_sharpness` of ``trained_theta``."""
        if self.fixed_margin is not None:
            return None
        if self.sharpness is not None:
            return self.sharpness
        if trained_theta is None:
            raise ValueError("trained_theta is needed to take the head's sharpness from the training ruler "
                             "(or state sharpness=...)")
        return trained_sharpness(trained_theta, weights=weights)

    def threshold(self, trained_theta=None, *, weights=None) -> float:
        """The smallest margin that passes: ``sqrt(2 gap / sharpness)``, or ``fixed_margin``."""
        return self._threshold(self.head_sharpness(trained_theta, weights=weights))

    def _threshold(self, beta: float | None) -> float:
        return self.fixed_margin if self.fixed_margin is not None else \
            0.0 if math.isinf(beta) else math.sqrt(2.0 * self.needed_gap / beta)

    def _judged_head(self, th: np.ndarray, w: np.ndarray) -> tuple[float | None, float | None, float | None]:
        """``(sharpness, threshold, D_train(1) or None)`` on a trusted bank ``th``, weights ``w``."""
        ref = None if self.fixed_margin is not None or self.sharpness is not None else _reference_distance(th, w)
        beta = self.sharpness if ref is None else _sharpness(ref)
        return beta, self._threshold(beta), ref

    @staticmethod
    def judge(margin: float, threshold: float) -> str:
        """``"pass"``, ``"fail"`` or ``"inconclusive"`` (a threshold no ruler can meet, or none can miss)."""
        if not (0.0 < threshold < MAX_DISTANCE) or not math.isfinite(margin):
            return "inconclusive"
        return "pass" if margin >= threshold else "fail"

    def describe(self, threshold: float, sharpness: float | None) -> str:
        """The rule in words, with its numbers."""
        if self.fixed_margin is not None:
            return f"fixed margin {self.fixed_margin:g} (the fallback: not derived from the task)"
        need = f"a logit gap of {self.needed_gap:.3g}" + (
            f" (attention {self.mass:g} against one rival)" if self.mass is not None else
            " (attention 0.75 against one rival)" if self.gap is None else "")
        head = (f"a head of sharpness {sharpness:.4g} (stated)" if self.sharpness is not None else
                f"the least sharp head that gives adjacent offsets {CALIBRATION_MASS:g} of its attention in "
                f"training (sharpness {sharpness:.4g})")
        return f"{head} keeps {need}: margin at least {threshold:.4g}"

    def inconclusive_reason(self, threshold: float) -> str:
        """Why :meth:`judge` says ``"inconclusive"`` for this threshold ("" when it does not)."""
        if threshold >= MAX_DISTANCE:
            return (f"the rule asks for a margin of {threshold:.4g}, at least {MAX_DISTANCE:g}, the largest distance "
                    "two signatures can be apart: no ruler could pass, so the verdict says nothing about this one "
                    "(state a smaller gap or a sharper head)")
        if threshold <= 0.0:
            return ("the training ruler cannot tell adjacent offsets apart (D(1) = 0), so no head can be "
                    "calibrated on it and the threshold is 0: the check could not fail (state sharpness=...)")
        return ""


@dataclass(frozen=True)
class GateBDecision:
    """The verdict of :func:`gate_b_decision` for one offset set (``sharpness`` ``None`` under the
    fixed fallback; ``reference_distance`` is ``D_train(1)`` when the sharpness came from it)."""

    status: str
    margin: SeparationMargin
    threshold: float
    sharpness: float | None
    reference_distance: float | None
    rule: GateBRule
    reason: str

    @property
    def passed(self) -> bool:
        """``status == "pass"`` (an inconclusive verdict is not a pass)."""
        return self.status == "pass"

    @property
    def gap(self) -> float | None:
        """Logit gap the judged head gives the right key of the most confusable pair, ``a D**2 / 2``."""
        return None if self.sharpness is None else self.sharpness * self.margin.margin ** 2 / 2.0

    @property
    def mass(self) -> float | None:
        """Attention that head gives the right key against its most confusable rival."""
        return None if self.gap is None else 1.0 / (1.0 + math.exp(-self.gap))

    def __str__(self) -> str:
        return (f"{_WORD[self.status]}: margin {self.margin.margin:.4g} between {self.margin.confusable} against threshold "
                f"{self.threshold:.4g}; {self.reason}")


def gate_b_decision(offsets, theta=None, *, operator=None, seq_len: int | None = None, rule: GateBRule | None = None,
                    trained_theta=None, **margin_options) -> GateBDecision:
    """Gate B's verdict for one offset set on a deployed bank (``theta``, or ``operator`` at ``seq_len``).

    The margin is :func:`~ropegeo.margins.separation_margin` (``margin_options``: its ``dtype``,
    ``scale``, ``origin``, ``weighting``, ``method``; ``"band"`` refused); the threshold is ``rule``'s
    on ``trained_theta`` (default ``theta``, or ``operator.unscaled``). ValueError as
    ``separation_margin``, or for a bad ``rule`` or a ``trained_theta`` of another length.

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> gate_b_decision([5, 6288], frequencies(8)).status     # the head-width-8 near return
    'fail'
    >>> from ropegeo.operator import RotaryOperator
    >>> gate_b_decision(range(1, 65), operator=RotaryOperator(scale=1 / 8)).status  # the same ruler as one value
    'fail'
    """
    rule = GateBRule() if rule is None else rule
    if not isinstance(rule, GateBRule):
        raise ValueError(f"rule must be a GateBRule, got {type(rule).__name__}")
    weighting = margin_options.get("weighting", "pair")
    if isinstance(weighting, str) and weighting == "band":
        raise ValueError("weighting='band' judges each band alone; gate_b_decision judges one head: give "
                         "'pair' or the head's amplitudes")
    result = separation_margin(offsets, theta, operator=operator, seq_len=seq_len, **margin_options)
    if operator is None:
        th = default = v.frequencies(theta)
    else:  # checked when it was built
        th = operator.theta_at(seq_len)
        default = th if operator.theta_given is not None else operator.unscaled.theta
    ref_th = default if trained_theta is None else v.frequencies(trained_theta, "trained_theta")
    if ref_th.size != th.size:
        raise ValueError(f"trained_theta has {ref_th.size} pairs, theta {th.size}: they must match")
    w = v.pair_weights(None if isinstance(weighting, str) else weighting, th.size, name="weights (amplitudes)")
    beta, threshold, ref = rule._judged_head(ref_th, w)
    status = rule.judge(result.margin, threshold)
    reason = rule.inconclusive_reason(threshold) if status == "inconclusive" else rule.describe(threshold, beta)
    return GateBDecision(status, result, threshold, None if beta is None or math.isinf(beta) else beta, ref, rule,
                         reason)


#: Gate B's default sets: every offset up to 64, and 48 log-spaced ones up to attention's reach.
LOCAL_OFFSETS = 64
#: Where offset 0 sits by default (``target_length - 1 - largest offset``: phases round worst there).
ORIGIN_RULE = "the largest offset at the last position of the target context"
DISTANT_OFFSETS = 48


def attention_span(target_length: int, window: int | None) -> int:
    """Number of distinct offsets attention sees: the target context, cut by a sliding window."""
    return target_length if window is None else min(target_length, window)


def default_offsets(target_length: int, window: int | None = None) -> dict[str, np.ndarray]:
    """Gate B's default offset sets: ``"local 1..64"`` and, past a span of 128, 48 log-spaced
    ``"distant 64..span-1"`` offsets, ``span = min(target_length, window)`` (``target_length >= 3``).

    Examples
    --------
    >>> list(default_offsets(8192))
    ['local 1..64', 'distant 64..8,191']
    """
    n = v.length("target_length", target_length, minimum=3)
    return _default_sets(n, None if window is None else v.length("window", window, minimum=1))


def _default_sets(n: int, window: int | None) -> dict[str, np.ndarray]:
    span = max(3, attention_span(n, window))
    local = np.arange(1, min(LOCAL_OFFSETS, span - 1) + 1, dtype=np.float64)
    sets = {f"local 1..{int(local[-1])}": local}
    if span > 2 * LOCAL_OFFSETS:
        sets[f"distant 64..{span - 1:,}"] = np.unique(np.round(np.geomspace(LOCAL_OFFSETS, span - 1, DISTANT_OFFSETS)))
    return sets


_WORD = {"pass": "pass", "fail": "FAIL", "inconclusive": "inconclusive"}


@dataclass(frozen=True)
class GateBResult:
    """Gate B's margins of the task's offset sets (from :func:`gate_b`); ``status`` is
    :func:`ropegeo.gates.verdicts.status` of :attr:`checks`. Each of ``sets`` is a dict: ``name``,
    ``margin``, ``pair``, ``confusable``, ``dtype``, ``origin`` (and why), ``status``, ``rounding``,
    ``judged_margin`` and the like."""

    status: str
    threshold: float
    rule: GateBRule
    rule_text: str
    sharpness: float | None
    sets: list
    train_length: int
    target_length: int
    window: int | None = None
    notes: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """``status == "pass"``: an inconclusive Gate B is not a pass."""
        return self.status == "pass"

    @property
    def checks(self) -> list[Check]:
        """One ``Check`` per offset set."""
        return [Check(s["name"], {"pass": True, "fail": False}.get(s["status"]),
                      float(s.get("judged_margin", s["margin"])), float(self.threshold),
                      self.describe(s, self.threshold), "margin") for s in self.sets]

    @property
    def worst(self) -> dict:
        """The set with the smallest margin."""
        return min(self.sets, key=lambda s: s.get("judged_margin", s["margin"]))

    @staticmethod
    def describe(s: dict, threshold: float) -> str:
        """One set as a line: margin, the pairs attaining it, verdict against the threshold, phases, origin."""
        text = (f"{s['margin']:.4g} between {s['confusable']}: {_WORD[s['status']]} (threshold {threshold:.4g}); "
                f"{s['dtype']} phases, {s['frequencies']} frequencies, origin {s['origin']:,.0f} ({s['origin_rule']})")
        if s.get("rounding", 0.0) > 1e-3 * threshold:
            text += (f"; {s['dtype']} phases move a signature by up to {s['rounding']:.3g} at these positions, so the "
                     f"margin every position keeps is {s['judged_margin']:.4g} (exact margin less twice that)")
        return text

    @property
    def diagnosis(self) -> str:
        w = self.worst
        text = f"closest set {w['name']}: " + self.describe(w, self.threshold)
        if self.notes:
            text += "; " + "; ".join(self.notes)
        if self.status == "inconclusive":
            return f"inconclusive: {self.rule_text}; " + text
        if self.status == "pass":
            return f"every offset set keeps a margin of at least {self.threshold:.4g} ({self.rule_text}); " + text
        if w.get("margin", 0.0) >= self.threshold > w.get("judged_margin", w["margin"]):
            return text + f" ({self.rule_text}). Precision, not the ruler: phases formed in {w['dtype']} at this context"
        diffs = w.get("differences") or [w["pair"][1] - w["pair"][0]]
        shown = " or ".join(f"{d:,g}" for d in diffs[:3])
        return (text + f" ({self.rule_text}). The ruler turns a displacement of {shown} into nearly the identity")

    def to_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed}


def _offset_sets(offsets, target_length: int, window: int | None) -> dict:
    if offsets is None:
        return _default_sets(target_length, window)
    if isinstance(offsets, dict):
        if not offsets:
            raise ValueError("offsets must hold at least one named offset set")
        return {str(k): val for k, val in offsets.items()}
    return {"task offsets": offsets}


def _set_size(name, offs) -> tuple[int, float]:
    if isinstance(offs, range):
        if len(offs) > MAX_OFFSETS:  # refuse before anything is allocated
            raise ValueError(f"offsets ({name}) holds {len(offs):,} offsets; at most {MAX_OFFSETS:,} are allowed")
        return len(offs), (max(offs[0], offs[-1]) if len(offs) else 0)
    arr = v.finite_array("offsets", offs)
    return arr.size, (float(arr.max()) if arr.size else 0.0)


def check_offsets_in_context(offsets, target_length: int, origin: float | None = None) -> None:
    """Refuse (ValueError naming ``offsets``) a set past ``target_length - 1``, from ``origin`` if given."""
    for name, offs in _offset_sets(offsets, target_length, None).items():
        _, top = _set_size(name, offs)
        if top > target_length - 1:
            raise ValueError(f"offsets ({name}) reach {top:,.0f}, beyond the context: a target length of "
                             f"{target_length:,} holds offsets up to {target_length - 1:,}")
        if origin is not None and origin + top > target_length - 1:
            raise ValueError(f"offsets ({name}) at origin {origin:,g} reach position {origin + top:,.0f}, beyond the "
                             f"context of {target_length:,} tokens: lower the origin or the offsets")


def gate_b(manifest: RopeManifest, offsets=None, *, train_length: int, target_length: int,
           rule: GateBRule | None = None, origin: float | None = None) -> GateBResult:
    """Gate B: the margins of offset sets under the manifest's ruler served at ``target_length``.

    Offset 0 sits at ``origin`` (default: the largest offset on the last position). Sets above
    8,192 offsets use exact phases. In a phase dtype other than float64 a set is judged on the margin
    every position keeps: the exact margin less twice the largest rounding of a signature
    (``judged_margin``). Arguments are trusted (the callers check them); a given set is checked here.
    """
    rule = GateBRule() if rule is None else rule
    op, window, dtype = manifest.operator, manifest.sliding_window, manifest.phase_dtype
    theta, trained = op.theta_at(target_length), op.unscaled.theta  # the operator's banks, trusted
    beta, threshold, _ = rule._judged_head(trained, np.full(trained.size, 1.0 / trained.size))
    sets, notes = [], []
    if offsets is None and window is not None and window < target_length:
        notes.append(f"offsets stop below the attention window ({window:,} tokens): larger ones never reach attention")
    for name, offs in _offset_sets(offsets, target_length, window).items():
        off = offs if offsets is None else offset_array(offs)  # the default sets are built sorted and distinct
        n, top = off.size, float(off[-1])
        use = dtype if (dtype == "float64" or n <= MAX_DIRECT) else "float64"
        org = max(0.0, float(target_length - 1 - top)) if origin is None else origin
        m = margin_kernel(off, theta, as_pipeline(use), 1.0, org, method="auto")
        judged, rounding = m.margin, 0.0
        if use != "float64":  # judge what every position keeps: the exact margin less twice the rounding
            rounding = _rounding(off, theta, use, org)
            judged = margin_kernel(off, theta, as_pipeline("float64"), 1.0, org, method="auto").margin - 2 * rounding
        verdict = rule.judge(judged, threshold)
        entry = {"name": name, "n_offsets": m.n_offsets, "margin": m.margin, "pair": list(m.pair),
                 "confusable": m.confusable, "tied": m.tied, "differences": list(m.differences), "dtype": m.dtype,
                 "origin": org, "origin_rule": ORIGIN_RULE if origin is None else "given",
                 "method": m.method, "frequencies": "scaled at target" if manifest.scaling else "unscaled (no rule)",
                 "status": verdict, "passed": verdict == "pass", "rounding": rounding, "judged_margin": judged}
        if use != dtype:
            entry["note"] = (f"{n:,} offsets: distances from {dtype} phases would cost n^2, so exact phases were "
                             f"used (at most {MAX_DIRECT:,} offsets are compared in {dtype})")
        sets.append(entry)
    text = rule.inconclusive_reason(threshold) or rule.describe(threshold, beta)
    result = GateBResult(status="pass", threshold=threshold, rule=rule, rule_text=text,
                         sharpness=None if beta is None or math.isinf(beta) else beta, sets=sets,
                         train_length=train_length, target_length=target_length, window=window, notes=notes)
    return replace(result, status=checks_status(result.checks))


def _rounding(off: np.ndarray, theta: np.ndarray, dtype: str, origin: float) -> float:
    """Largest distance between a signature formed in ``dtype`` and the exact one, over the set's positions."""
    pos = origin + np.concatenate([[0.0], np.asarray(off, dtype=float)])
    cr, sr = phase_table(pos, theta, as_pipeline(dtype), 1.0)
    ce, se = phase_table(pos, theta, as_pipeline("float64"), 1.0)
    return float(np.sqrt(np.mean((cr - ce) ** 2 + (sr - se) ** 2, axis=1)).max())



def add_rule_arguments(parser) -> None:
    """Add ``--gap``, ``--mass``, ``--sharpness``, ``--min-margin`` to an argparse parser."""
    g = parser.add_argument_group("Gate B rule", "the threshold follows from the logit gap the task needs and the "
                                  "head's sharpness (default: attention 0.75 against the most confusable rival for "
                                  "the least sharp head that tells adjacent offsets apart 9:1 in training, a margin "
                                  "of D_train(1)/sqrt 2)")
    g.add_argument("--gap", type=float, default=None, help="logit gap the task needs between the right key and its "
                   "most confusable rival (default ln 3)")
    g.add_argument("--mass", type=float, default=None, help="the same need as attention on the right key against one "
                   "rival, in (0.5, 1) (default 0.75)")
    g.add_argument("--sharpness", type=float, default=None, help="the head's amplitude in logits, its score of a "
                   "perfect match (default: taken from the training ruler)")
    g.add_argument("--min-margin", type=float, default=None, help="the fallback: a fixed threshold, a phase distance "
                   f"in (0, 2] (e.g. {FIXED_MARGIN:g}); ignores the task and the head")


def rule_from_arguments(args) -> tuple[GateBRule | None, float | None]:
    """``(gate_b_rule, min_margin)`` from the options of :func:`add_rule_arguments`."""
    stated = [f"--{k}" for k in ("gap", "mass", "sharpness") if getattr(args, k, None) is not None]
    if args.min_margin is not None:
        if stated:
            raise ValueError(f"--min-margin is the fixed fallback threshold: drop {', '.join(stated)} or --min-margin")
        return None, args.min_margin
    if args.gap is not None and args.mass is not None:
        raise ValueError("--gap and --mass state the same need (logits or attention): give one")
    return GateBRule(gap=args.gap, mass=args.mass, sharpness=args.sharpness), None
