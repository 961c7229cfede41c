"""Gate B: does the deployed ruler keep the task's offsets apart? One decision rule, everywhere.

A margin (:func:`ropegeo.margins.separation_margin`) is a phase distance ``D``; a verdict needs a
threshold, and this module derives it from what the task needs. A rotary head of amplitude ``a``
(its score of a perfect match) tuned to offset ``x`` scores a key at ``y`` by ``a K_w(y - x)``, and
with exact phases ``D(x, y)**2 = 2 (1 - K_w(y - x))``, so it puts the right key ahead of the wrong
one by a score gap of ``a D**2 / 2`` logits. A task that needs a gap ``g`` therefore needs
``D >= sqrt(2 g / a)`` (:func:`~ropegeo.gates.b.rule.required_margin`).

:class:`GateBRule` holds the two numbers: the gap (stated, or as an attention share; default
three to one) and the amplitude (stated, or taken from the training ruler: the least sharp head
that tells adjacent offsets apart nine to one in training, :func:`~ropegeo.gates.b.rule.trained_sharpness`). With the
defaults the threshold is ``D_train(1) / sqrt(2)``. A fixed threshold survives only as the named
fallback ``GateBRule(fixed_margin=FIXED_MARGIN)``.

:func:`gate_b_decision` judges one offset set on a bank; :func:`gate_b` judges a manifest's
default (or given) offset sets at its target length, as :func:`ropegeo.gates.procedure.audit`, the geometry
audit, the command line and the audit lab do. Verdicts use the vocabulary of
:mod:`ropegeo.gates.verdicts`: ``"pass"``, ``"fail"`` or ``"inconclusive"`` (a threshold that no ruler can
meet, or none can miss, decides nothing).

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

# --------------------------------------------------------------------------------------------
# the decision rule
# --------------------------------------------------------------------------------------------

#: Largest phase distance two signatures can be apart (every pair antipodal). A rule asking for a
#: margin this large can never be met, so its verdict is inconclusive, never a fail of the ruler.
MAX_DISTANCE = 2.0
#: The named fallback: a fixed threshold on the margin (a phase distance; kernel similarity
#: 0.995). It ignores the task and the head, so it is used only when asked for
#: (``GateBRule(fixed_margin=...)``, ``--min-margin`` on the command line).
FIXED_MARGIN = 0.1
#: Attention the reference head gives the right one of two adjacent offsets on the training
#: ruler (nine to one): this fixes the head's sharpness when the user does not state it.
CALIBRATION_MASS = 0.9
#: Default need of the task: the attention the right key keeps against its most confusable rival
#: under deployment (three to one, a logit gap of ``ln 3``).
PASS_MASS = 0.75


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def required_margin(gap: float, sharpness: float) -> float:
    """The smallest phase distance at which a head of amplitude ``sharpness`` keeps a logit gap ``gap``.

    A rotary head tuned to offset ``a`` whose score of a perfect match is ``sharpness`` (the
    amplitude ``|q||k| / sqrt(d)``, spread over the pairs with weights ``w_i``) scores a key at offset
    ``b`` by ``sharpness * K_w(b - a)``. With exact phases ``D(a, b)**2 = 2 (1 - K_w(b - a))`` (the
    definition of the distance, pair by pair), so the right key leads the wrong one by
    ``sharpness * (1 - K_w) = sharpness * D**2 / 2`` logits, and the gap is at least ``gap`` exactly
    when ``D >= sqrt(2 * gap / sharpness)``.

    Parameters
    ----------
    gap : float
        Logit gap the task needs (positive); an attention share ``p`` against one rival is a gap
        of ``log(p / (1 - p))``.
    sharpness : float
        The head's amplitude, in logits (positive).

    Returns
    -------
    float
        The threshold on the margin (may exceed 2, the largest distance: then no ruler meets it).

    Examples
    --------
    >>> round(required_margin(math.log(3), 100.0), 4)
    0.1482
    """
    gap = v.real("gap", gap, greater_than=0.0)
    sharpness = v.real("sharpness", sharpness, greater_than=0.0)
    return math.sqrt(2.0 * gap / sharpness)


def trained_sharpness(trained_theta, *, weights=None) -> float:
    """The reference head's amplitude, taken from the training ruler.

    The least sharp head that gives the right one of two *adjacent* offsets (a step of 1, the finest
    step every training sequence shows) :data:`CALIBRATION_MASS` of its attention on the training
    ruler, in exact arithmetic: ``2 logit(CALIBRATION_MASS) / D_train(1)**2``. ``inf`` when the
    training ruler cannot tell adjacent offsets apart (``D_train(1) = 0``).

    Parameters
    ----------
    trained_theta : array_like, shape (pairs,)
        The bank the model was trained with (unscaled).
    weights : array_like, shape (pairs,), optional
        The head's amplitudes per pair; default equal.

    Returns
    -------
    float

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> round(trained_sharpness(frequencies(8)), 2)
    18.91
    """
    th = v.frequencies(trained_theta, "trained_theta")
    return _sharpness(_reference_distance(th, v.pair_weights(weights, th.size, name="weights (amplitudes)")))


def _reference_distance(th: np.ndarray, w: np.ndarray) -> float:
    """``D_train(1)``: the distance of adjacent offsets on a (trusted) training bank with weights ``w``."""
    return float(distance_kernel(np.array(1.0), th, 1.0, w))


def _sharpness(ref: float) -> float:
    return math.inf if ref == 0.0 else 2.0 * _logit(CALIBRATION_MASS) / (ref * ref)


@dataclass(frozen=True)
class GateBRule:
    """Gate B's one decision rule: the smallest margin the task can live with.

    A margin ``D`` gives a head of amplitude ``a`` a logit gap of ``a * D**2 / 2`` between the right
    key and its most confusable rival (:func:`~ropegeo.gates.b.rule.required_margin`), so the threshold follows from two
    numbers: the gap the task needs and the head's amplitude.

    * The **gap** is the user's to state, as logits (``gap``) or as the attention share the right
      key keeps against one rival (``mass``: ``gap = logit(mass)``). Default: :data:`PASS_MASS`.
    * The **amplitude** is the user's to state (``sharpness``), or it is taken from the training
      ruler (:func:`~ropegeo.gates.b.rule.trained_sharpness`): the least sharp head that gives two adjacent offsets
      :data:`CALIBRATION_MASS` on the training ruler. Step 1 is the finest step training shows, and
      it shows it in every sequence; steps the training never showed (longer than its context)
      cannot calibrate a head.

    With both defaults the threshold is ``D_train(1) * sqrt(ln 3 / ln 9) = D_train(1) / sqrt(2)``:
    the deployed ruler must keep every pair the task needs at least ``1/sqrt(2)`` as far apart as
    adjacent tokens were in training.

    ``fixed_margin`` is the fallback: a fixed phase distance, nothing derived (:data:`FIXED_MARGIN`
    is the customary 0.1). It excludes the other three.

    The verdict (:meth:`judge`) is ``"pass"`` when the margin reaches the threshold, ``"fail"`` when
    not, and ``"inconclusive"`` when the check could not go either way: a threshold at or above
    :data:`MAX_DISTANCE` (no ruler can meet it) or at 0 (no ruler can miss it).

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> th = frequencies(8)
    >>> round(GateBRule().threshold(th), 4)               # D_train(1) / sqrt(2)
    0.3409
    >>> round(GateBRule(mass=0.99).threshold(th), 4)      # a stricter task
    0.6971
    >>> GateBRule(fixed_margin=0.1).threshold(th)
    0.1
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
            object.__setattr__(self, "sharpness", v.real("sharpness", self.sharpness, greater_than=0.0,
                                                         maximum=1e6))

    @property
    def needed_gap(self) -> float | None:
        """The logit gap the task needs (``None`` under the fixed fallback)."""
        if self.fixed_margin is not None:
            return None
        if self.gap is not None:
            return self.gap
        return _logit(PASS_MASS if self.mass is None else self.mass)

    def head_sharpness(self, trained_theta=None, *, weights=None) -> float | None:
        """The amplitude of the head judged: stated, or :func:`~ropegeo.gates.b.rule.trained_sharpness` of ``trained_theta``."""
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
        if self.fixed_margin is not None:
            return self.fixed_margin
        return 0.0 if math.isinf(beta) else math.sqrt(2.0 * self.needed_gap / beta)

    def _judged_head(self, th: np.ndarray, w: np.ndarray) -> tuple[float | None, float | None, float | None]:
        """``(sharpness, threshold, D_train(1) or None)`` on a trusted training bank ``th`` with weights ``w``."""
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
    """The verdict of :func:`gate_b_decision` for one offset set.

    Attributes
    ----------
    status : {"pass", "fail", "inconclusive"}
        :meth:`GateBRule.judge` of the margin against the threshold.
    margin : SeparationMargin
        The deployed margin and its most confusable pairs (``margin.confusable`` names the class
        when several tie).
    threshold : float
        The smallest margin that passes.
    sharpness : float or None
        The amplitude of the head judged (``None`` under the fixed fallback).
    reference_distance : float or None
        ``D_train(1)``, the distance of adjacent offsets on the training ruler, when the sharpness
        was taken from it.
    rule : GateBRule
    reason : str
        The rule in words, or why the verdict is inconclusive.
    """

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
        word = {"pass": "pass", "fail": "FAIL", "inconclusive": "inconclusive"}[self.status]
        return (f"{word}: margin {self.margin.margin:.4g} between {self.margin.confusable} against threshold "
                f"{self.threshold:.4g}; {self.reason}")


def gate_b_decision(offsets, theta=None, *, operator=None, seq_len: int | None = None, rule: GateBRule | None = None,
                    trained_theta=None, **margin_options) -> GateBDecision:
    """Gate B's verdict for one offset set: does the deployment keep the task's offsets apart?

    The margin is :func:`~ropegeo.margins.separation_margin` of the deployed bank ``theta``; the threshold is
    ``rule``'s (:class:`GateBRule`; default: a logit gap of ``ln 3`` for the least sharp head that
    tells adjacent offsets apart nine to one on the training ruler, a margin of ``D_train(1)/sqrt 2``).

    Parameters
    ----------
    offsets, theta, operator, seq_len
        As in :func:`~ropegeo.margins.separation_margin`: the deployed bank, plain or an operator's
        (its frequencies at ``seq_len``, trusted).
    rule : GateBRule, optional
        The decision rule. Default ``GateBRule()``.
    trained_theta : array_like, shape (pairs,), optional
        The bank the model was trained with; default ``theta``, or the operator's without its rule
        (``operator.unscaled``). Only read when the rule takes the head's sharpness from the
        training ruler.
    **margin_options
        ``dtype``, ``scale``, ``origin``, ``weighting``, ``method`` of :func:`~ropegeo.margins.separation_margin`.
        An amplitude array as ``weighting`` weights the training distance too; ``"band"`` is
        refused (it judges bands, not one head).

    Returns
    -------
    GateBDecision

    Raises
    ------
    ValueError
        As :func:`~ropegeo.margins.separation_margin`; for ``weighting="band"``, a ``rule`` that is not a
        :class:`GateBRule`, or a ``trained_theta`` of another length.

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> gate_b_decision([5, 6288], frequencies(8)).status     # the head-width-8 near return
    'fail'
    >>> th = frequencies(128)
    >>> gate_b_decision(range(1, 65), th, scale=1 / 8).status   # interpolation x8, a local task
    'fail'
    >>> from ropegeo.precision import deployed
    >>> gate_b_decision([1, 2, 3], th, dtype=deployed("bfloat16"), origin=32_764).status
    'pass'
    >>> gate_b_decision([1, 2, 3], th, dtype="bfloat16", origin=32_764).status
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


# --------------------------------------------------------------------------------------------
# Gate B of a manifest: its default offset sets at the target length
# --------------------------------------------------------------------------------------------

#: Gate B's default offset sets: every offset up to 64 (local order) and 48 log-spaced offsets up to
#: the largest offset attention sees (long-range retrieval).
LOCAL_OFFSETS = 64
#: Where offset 0 sits by default, as the reports say it: ``target_length - 1 - largest offset``, so the
#: set's largest offset lands on the context's last position, where phases round worst (``origin`` 0
#: for a set that spans the whole context).
ORIGIN_RULE = "the largest offset at the last position of the target context"
DISTANT_OFFSETS = 48


def attention_span(target_length: int, window: int | None) -> int:
    """Number of distinct offsets attention sees: the target context, cut by a sliding window."""
    return target_length if window is None else min(target_length, window)


def default_offsets(target_length: int, window: int | None = None) -> dict[str, np.ndarray]:
    """Gate B's default offset sets for a target length (at least 3) and an attention window.

    ``"local 1..64"``: every offset from 1 to ``min(64, span - 1)``; ``"distant 64..span-1"``: 48
    log-spaced integers from 64 to ``span - 1`` (duplicates removed; only when the span exceeds
    128), where ``span = min(target_length, window)``: offsets at or beyond a sliding window never
    reach attention.

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
    """Gate B: the separation margins of the task's offset sets (from :func:`gate_b`).

    Attributes
    ----------
    status : {"pass", "fail", "inconclusive"}
        ``"fail"`` when a set's margin is below the threshold, ``"inconclusive"`` when the rule
        cannot decide (:meth:`GateBRule.judge`), ``"pass"`` otherwise (:func:`ropegeo.gates.verdicts.status`
        of :attr:`checks`).
    threshold : float
        The smallest margin that passes, a phase distance (``D^2 = 2 (1 - K)``).
    rule : GateBRule
        The rule that set it; ``rule_text`` says it in words, ``sharpness`` is the amplitude of the
        head judged (``None`` under the fixed fallback).
    sets : list of dict
        One entry per offset set: ``name``, ``n_offsets``, ``margin``, ``pair`` (one most
        confusable pair), ``confusable`` (the class when several tie, else the pair), ``tied``,
        ``dtype`` (precision of the phases), ``origin`` (position of offset 0) and ``origin_rule``
        (why there), ``method``, ``frequencies`` (``"scaled at target"``), ``status`` and ``passed``.
    train_length, target_length : int
        The lengths the ruler was judged at.
    window : int or None
        The attention window of the layers audited (``None``: every offset is seen).
    notes : list of str
        What limited the sets (the window), in plain words.
    """

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
        """One :class:`ropegeo.gates.verdicts.Check` per offset set (``passed`` is ``None`` when inconclusive)."""
        out = []
        for s in self.sets:
            ok = {"pass": True, "fail": False}.get(s["status"])
            out.append(Check(s["name"], ok, float(s.get("judged_margin", s["margin"])), float(self.threshold),
                             self.describe(s, self.threshold), "margin"))
        return out

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
        d = asdict(self)
        d["passed"] = self.passed
        return d


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
    """Refuse offset sets that reach beyond the context (a ValueError naming ``offsets``).

    An offset is a distance between two positions of one context, so it is at most
    ``target_length - 1``; with an ``origin``, ``origin + offset`` must stay inside it too.
    """
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
    """Gate B: the separation margins of offset sets under the manifest's ruler, judged by one rule.

    Phases use the frequencies served at ``target_length`` (scaled by the rule) in the manifest's
    phase precision, with offset 0 at ``origin`` (default ``target_length - 1 - largest offset``: the
    largest offset at the last position of the target context, where rounding is worst). Sets above 8,192 offsets
    use exact phases (a note says so). A set in a phase dtype other than float64 is judged on the margin
    every position keeps: its exact margin less twice the largest distance between a signature formed
    in that dtype and the exact one at the set's positions (``rounding`` and ``judged_margin`` in its
    entry; ``margin`` stays the one from the rounded phases). The threshold is ``rule``'s (default :class:`GateBRule`),
    with the training ruler the manifest's unscaled bank (``frequencies(rotary_dim, base)``).
    Arguments are trusted (checked by the callers: :func:`ropegeo.gates.procedure.audit`,
    :func:`ropegeo.gates.procedure.geometry_audit`); a given offset set is checked here, once.
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
    return _with_status(result)


def _rounding(off: np.ndarray, theta: np.ndarray, dtype: str, origin: float) -> float:
    """Largest distance between a signature formed in ``dtype`` and the exact one, over the set's positions."""
    pos = origin + np.concatenate([[0.0], np.asarray(off, dtype=float)])
    cr, sr = phase_table(pos, theta, as_pipeline(dtype), 1.0)
    ce, se = phase_table(pos, theta, as_pipeline("float64"), 1.0)
    return float(np.sqrt(np.mean((cr - ce) ** 2 + (sr - se) ** 2, axis=1)).max())


def _with_status(result: GateBResult) -> GateBResult:
    return replace(result, status=checks_status(result.checks))


# --------------------------------------------------------------------------------------------
# the command line's Gate B options (audit and report share them)
# --------------------------------------------------------------------------------------------


def add_rule_arguments(parser) -> None:
    """Add Gate B's rule options to an argparse parser: ``--gap``, ``--mass``, ``--sharpness``, ``--min-margin``."""
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
