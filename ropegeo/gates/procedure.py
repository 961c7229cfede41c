"""The audit: the geometry of a rotary operator (:func:`geometry_audit`, nothing about a trained
model), and the three gates as one procedure (:func:`audit`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from html import escape
from typing import Any

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import TWO_PI, wavelengths
from ropegeo.gates.a.axes import axes_operator
from ropegeo.gates.a.gate import gate_a as run_gate_a
from ropegeo.gates.b.rule import (
    LOCAL_OFFSETS,
    GateBResult,
    GateBRule,
    attention_span,
    check_offsets_in_context,
    gate_b,
)
from ropegeo.gates import c as gates_c
from ropegeo.gates.c import GateCVerdict
from ropegeo.gates.verdicts import EXIT_CODES, STATUSES, Check, Report
from ropegeo.gates.verdicts import status as checks_status
from ropegeo.geometry import adjacent_similarity, near_collisions
from ropegeo.models.manifest import RopeManifest, read_config, resolve
from ropegeo.operator import RotaryOperator
from ropegeo.precision import as_pipeline, phase_table
from ropegeo.rotation import apply_rope, law_error
from ropegeo.scaling import Scaling

__all__ = ["GeometryAudit", "geometry_audit", "GATES", "AuditReport", "audit"]

#: The three gates, what each asks, and the kind of intervention a failure there calls for.
GATES = {
    "A": ("algebraic relativity: the implementation realises the rotary operator it declares", "implementation fix"),
    "B": ("geometric identifiability: the deployed ruler keeps the task's offsets apart", "different ruler"),
    "C": ("statistical familiarity: heads trained on this ruler use it at the target length", "training"),
}
_ADVICE = {
    "A": "fix the implementation (pairing, position ids, cache offset, scaling side, base or angle precision) "
         "before judging the geometry or the model",
    "B": "a risk flag, not a barrier: change the ruler (a larger head or rotary width, another base, another "
         "extension rule, or finer phase precision), or budget for training; on this ruler a trained head can "
         "still tell these offsets apart, but only by growing its weights on the few pairs in which they differ, "
         "which takes fine-tuning (chapter 6 measures the curve)",
    "C": "train: fine-tune or continue training at the target length under the deployed schedule",
}
#: How a gate's state is printed.
_WORDS = {"pass": "pass", "fail": "FAIL", "inconclusive": "inconclusive"}
_LAW_PAIRS = ((2, 9), (31, 40), (97, 611))
#: The row of the manifest's table that names the context served; the audit prints its own target there.
_SERVED_ROW = "context: served (target)"


def _search_range(train: int, target: int, window: int | None, start: int | None,
                  limit: int | None) -> tuple[int, int, str]:
    """The offsets searched for identity-like displacements, and why those."""
    stop, why = attention_span(target, window), []
    if window is not None and window < target:
        stop -= 1
        why.append(f"stops at {stop:,}: the attention window ({window:,}) hides larger offsets")
    seen = stop  # the largest offset attention sees
    if limit is not None and limit < stop:
        stop = limit
        why.append(f"capped at search_limit {limit:,} (the context reaches {attention_span(target, window) - 1:,})")
    stop = max(stop, 2)
    if start is None and train < stop:
        start = train
        why.append(f"offsets beyond the training length {train:,}")
    elif start is None:
        start = min(LOCAL_OFFSETS, stop - 1)
        if seen > train:  # the context reaches beyond training, the capped search does not
            why.append(f"the offsets beyond training ({train:,}) lie past the cap, so the distant offsets from "
                       f"{start:,} are searched, as Gate B's distant set")
        else:
            why.append(f"no offset beyond training ({train:,}) is seen, so the distant offsets from {start:,} are "
                       "searched, as Gate B's distant set")
    else:
        why.append(f"from search_start {start:,}")
    if start >= stop:  # only a given search_start can get here: refused, never moved silently
        reach = (f"search_limit {limit:,}" if limit is not None and limit == stop else
                 f"the end of the search range, {stop:,} (where attention's reach ends)")
        raise ValueError(f"search_start must be below {reach}, got {start:,}")
    return max(start, 1), stop, "; ".join(why)


def _phase_law(theta: np.ndarray, pairs, dtype: str) -> float:
    """Largest phase distance between ``e^{i(phi(n) - phi(m))}``, the phases of ``m`` and ``n`` formed in ``dtype``
    (:func:`ropegeo.precision.phase_table`), and the exact ``e^{i(n - m) theta}`` (even weights, as Gate B's)."""
    m, n = (np.array([p[i] for p in pairs], dtype=np.float64) for i in (0, 1))
    cm, sm = phase_table(m, theta, as_pipeline(dtype), 1.0)
    cn, sn = phase_table(n, theta, as_pipeline(dtype), 1.0)
    formed = (cn + 1j * sn) * (cm - 1j * sm)
    return float(np.sqrt(np.mean(np.abs(formed - np.exp(1j * np.multiply.outer(n - m, theta))) ** 2, axis=1)).max())


def _law_tolerance(dtype: str, head_dim: int, top_position: int) -> float:
    """Rounding a score may carry: 16 eps(dtype) x head width x (1 + largest position)."""
    return float(16 * np.finfo(dtype).eps * head_dim * (1 + top_position))


@dataclass(frozen=True)
class GeometryAudit(Report):
    """The geometry audit of one manifest (lengths in tokens; ``theta`` and ``attention_factor`` served
    at ``target_length``: rows on them say "scaled", rows on the pre-training bank "unscaled")."""

    manifest: RopeManifest
    train_length: int
    target_length: int
    theta: np.ndarray
    attention_factor: float
    dtype: str
    relative_law_error: float
    law_tolerance: float
    adjacent_similarity: float
    slow_pairs: int
    slow_pairs_target: int
    pairs_longer_than_train: int
    pairs_longer_than_target: int
    scaled_pairs: int
    angular_step_ratio: float
    search_range: tuple[int, int]
    search_note: str
    top_offsets: list
    gate_b: GateBResult
    #: The relative law as served: the largest phase distance between a pair's offset signature formed
    #: from its two positions' phases in the manifest's phase dtype and the exact one (Gate B's units),
    #: at the law's positions and ``(target // 4, target - 2)``; judged against half Gate B's threshold.
    phase_law_error: float = 0.0

    head_dim = property(lambda self: self.manifest.head_dim)
    rotary_dim = property(lambda self: self.manifest.rotary_dim)
    base = property(lambda self: self.manifest.base)
    pairing = property(lambda self: self.manifest.pairing)
    pair_count = property(lambda self: int(self.theta.size))
    distant_offset = property(lambda self: self.top_offsets[0]["offset"])
    distant_similarity = property(lambda self: self.top_offsets[0]["similarity"])
    interpolate = property(lambda self: self.manifest.scaling is not None and self.manifest.scaling.rule == "linear")

    @property
    def margins(self) -> dict:
        """Gate B's sets by name."""
        return {s["name"]: s for s in self.gate_b.sets}

    @property
    def wavelength_range(self) -> tuple[float, float]:
        lam = wavelengths(self.theta)
        return float(lam.min()), float(lam.max())

    def to_dict(self) -> dict:
        """JSON-ready: the manifest as a dict, every measured number, ``theta`` as a list."""
        d = {k: getattr(self, k) for k in ("train_length", "target_length", "attention_factor", "dtype",
                                            "relative_law_error", "law_tolerance", "adjacent_similarity",
                                            "slow_pairs", "slow_pairs_target", "pairs_longer_than_train",
                                            "pairs_longer_than_target", "scaled_pairs", "angular_step_ratio",
                                            "search_note", "head_dim", "rotary_dim", "base", "pairing",
                                            "pair_count", "distant_offset", "distant_similarity", "interpolate",
                                            "phase_law_error")}
        return {"manifest": self.manifest.to_dict(), **d, "theta": [float(x) for x in self.theta],
                "wavelength_range": list(self.wavelength_range), "search_range": list(self.search_range),
                "top_offsets": list(self.top_offsets), "margins": self.margins, "gate_b": self.gate_b.to_dict()}

    @property
    def checks(self) -> list:
        """The relative law against its rounding tolerance, then Gate B's sets, as ``Check`` records."""
        law = Check("relative law", bool(self.relative_law_error <= self.law_tolerance), self.relative_law_error,
                    self.law_tolerance, f"relative-law error {self.relative_law_error:.3e} against the rounding "
                    f"allowed, {self.law_tolerance:.1e}", "callable")
        return [law, self.phase_law_check, *self.gate_b.checks]

    @property
    def phase_law_check(self) -> Check:
        """The relative law in the manifest's phase dtype (``phase_law_error``): it holds when twice its
        error (both positions' rounding, as Gate B subtracts it from a margin) stays below Gate B's
        threshold, so rounding alone never spans the separation the task needs."""
        dt, tol = self.manifest.phase_dtype, self.gate_b.threshold / 2
        return Check.judged(f"relative law ({dt} phases)", self.phase_law_error, tol,
                            f"the relative law holds in {dt} phases to {self.phase_law_error:.2e}, below half Gate B's "
                            f"threshold ({tol:.3g})",
                            f"the relative law breaks in {dt} phases: a pair's offset signature is off by "
                            f"{self.phase_law_error:.3g} (phase distance), at least half Gate B's threshold "
                            f"({tol:.3g}): the served positions, not only the offset, move scores", "callable",
                            ceiling=2.0)

    @property
    def outcome(self) -> str:
        """:func:`ropegeo.gates.verdicts.status` of :attr:`checks`."""
        return checks_status(self.checks)

    def row(self) -> dict:
        """The headline numbers as one flat dict (for a comparison table across models)."""
        m = self.manifest
        return {"model": (m.name or "?").split("/")[-1], "base": m.base, "rotary/head": f"{m.rotary_dim}/{m.head_dim}",
                "train": self.train_length, "target": self.target_length,
                "rule": "none" if m.scaling is None else m.scaling.rule, "attention": round(self.attention_factor, 4),
                "slow pairs": self.slow_pairs, "K(1)": round(self.adjacent_similarity, 5),
                "margin 1..64": round(self.gate_b.sets[0]["margin"], 4)}

    def rows(self) -> list[tuple[str, str]]:
        """The audit as ``(label, value)`` text rows, in the order :meth:`table` prints them."""
        p, (lo, hi), (s0, s1) = self.pair_count, self.wavelength_range, self.search_range
        law_ok = "pass" if self.relative_law_error <= self.law_tolerance else "FAIL"
        k_id = 1 - self.gate_b.threshold ** 2 / 2
        rows = [
            ("train -> target length", f"{self.train_length:,} -> {self.target_length:,}"),
            ("attention factor on cos, sin at target", f"{self.attention_factor:.6g}"),
            ("pairs rescaled by the rule", f"{self.scaled_pairs} of {p}"),
            ("wavelengths, scaled at target", f"{lo:,.4g} .. {hi:,.6g} tokens"),
            ("pairs longer than train / target, scaled", f"{self.pairs_longer_than_train} / "
                                                          f"{self.pairs_longer_than_target} of {p}"),
            ("slow pairs (< 1 turn) over train, unscaled", f"{self.slow_pairs} of {p}"),
            ("slow pairs (< 1 turn) over target, scaled", f"{self.slow_pairs_target} of {p}"),
            ("adjacent similarity K(1), scaled", f"{self.adjacent_similarity:.6f}"),
            (f"relative-law error ({self.dtype}), scaled", f"{self.relative_law_error:.3e}: {law_ok} (threshold "
                                                          f"{self.law_tolerance:.1e}, the rounding allowed)"),
        ]
        for i, hit in enumerate(self.top_offsets):
            label = f"identity-like offsets in [{s0:,}, {s1:,}], scaled" if i == 0 else ""
            same = ("not judged: Gate B is inconclusive" if self.gate_b.status == "inconclusive" else
                    "confusable with 0" if hit["similarity"] >= k_id else "distinct from 0")
            rows.append((label, f"{hit['offset']:,} (K = {hit['similarity']:.6f}: {same}, "
                                f"threshold K {k_id:.4g} = Gate B margin {self.gate_b.threshold:.4g})"))
        rows.append(("  search range", self.search_note))
        for s in self.gate_b.sets:
            rows.append((f"Gate B margin, {s['name']}", GateBResult.describe(s, self.gate_b.threshold)))
        rows.extend(("  Gate B note", n) for n in self.gate_b.notes)
        law = self.phase_law_check
        rows.append((f"relative law in {self.manifest.phase_dtype} phases", f"{self.phase_law_error:.3e}: "
                     f"{'pass' if law.passed else 'FAIL' if law.passed is False else 'inconclusive'} (threshold "
                     f"{law.tolerance:.3g}, half Gate B's: phase distance of an offset formed at its positions)"))
        return rows

    def table(self) -> str:
        """The manifest followed by the audit, as aligned text: every number with its verdict."""
        rows = self.rows()
        width = max(len(r[0]) for r in rows)
        body = "\n".join(f"{k:<{width}}  {val}" for k, val in rows)
        return self._header() + "\n" + "-" * 40 + "\n" + body

    def _header(self) -> str:
        """The manifest's table, its served context replaced by this audit's target."""
        own, lines = self.manifest.target_length, self.manifest.table().split("\n")
        for i, line in enumerate(lines):
            if line.startswith(_SERVED_ROW):
                alone = "unknown" if own is None else f"{own:,}"
                value = f"{self.target_length:,} (this audit's target length"
                value += ")" if own == self.target_length else f"; the manifest alone: {alone})"
                start = len(line) - len(line[len(_SERVED_ROW):].lstrip())  # where the value column starts
                lines[i] = line[:start] + value
        return "\n".join(lines)


def _plain_manifest(operator, head_dim, base, rotary_dim, pairing, interpolate, train, target) -> RopeManifest:
    """The manifest an operator or plain numbers define, at plain lengths (interpolation: linear, target / train)."""
    op = RotaryOperator.coerce(operator, head_dim=head_dim, base=base, rotary_dim=rotary_dim, pairing=pairing)
    if op.sections is not None:
        raise ValueError("geometry_audit audits an operator of one position axis (a manifest carries M-RoPE's)")
    if interpolate and target > train:
        if op.scaling is not None:
            raise ValueError(f"interpolate=True conflicts with the operator's scaling ({op.scaling.describe()})")
        op = op.with_(scaling=Scaling("linear", factor=target / train))
    return RopeManifest(op, max_position_embeddings=train, name=f"head dim {op.head_dim}, base {op.base:g}")


def _audited_manifest(operator, head_dim, base, train_length, target_length, rotary_dim, interpolate, pairing):
    """The manifest geometry_audit audits, its training and target lengths; conflicts refused by name."""
    if operator is not None and not isinstance(operator, (RopeManifest, RotaryOperator)):
        raise ValueError(f"operator must be a RopeManifest or a RotaryOperator (plain numbers go by keyword: "
                         f"head_dim=..., base=...), got {type(operator).__name__}")
    if not isinstance(operator, RopeManifest):
        train = v.length("train_length", 4096 if train_length is None else train_length, minimum=2)
        target = v.length("target_length", 32_768 if target_length is None else target_length, minimum=3)
        interpolate = False if interpolate is None else v.boolean("interpolate", interpolate)
        return _plain_manifest(operator, head_dim, base, rotary_dim, pairing, interpolate, train, target), train, target
    m = operator  # a plain argument that contradicts its operator is refused by name:
    RotaryOperator.coerce(m.operator, head_dim=head_dim, base=base, rotary_dim=rotary_dim, pairing=pairing)
    if m.train_length is None:
        raise ValueError("the manifest has no max_position_embeddings: the training length is unknown")
    if train_length is not None and train_length != m.train_length:
        raise ValueError(f"train_length={train_length!r} conflicts with the manifest's training length {m.train_length}")
    if interpolate is not None:
        raise ValueError("interpolate is for plain numbers: the manifest carries its own scaling rule")
    target = m.target_length if target_length is None else target_length
    return m, m.train_length, v.length("target_length", target, minimum=3)


def geometry_audit(operator=None, *, head_dim: int | None = None, base: float | None = None,
                   train_length: int | None = None, target_length: int | None = None, rotary_dim: int | None = None,
                   interpolate: bool | None = None, search_start: int | None = None, search_limit: int | None = None,
                   pairing: str | None = None, dtype: str = "float64", top: int = 1, gate_b_rule: GateBRule | None = None,
                   min_margin: float | None = None, seed: int = 7) -> GeometryAudit:
    """Audit the geometry of a manifest, an operator, or the one plain keywords define (``head_dim``
    128, ``base`` 10,000, ``train_length`` 4,096; plain keywords must agree with an operator given).
    ``target_length``: the manifest's, else 32,768. The identity-like search runs from ``search_start``
    to ``search_limit`` (``search_note`` says why); ``dtype`` is the relative law's; ``top`` (1 to 1,000)
    offsets are reported; Gate B is ``gate_b_rule`` or ``min_margin``. ValueError names a bad argument.

    Examples
    --------
    >>> r = geometry_audit(head_dim=8, train_length=4096, target_length=7000)
    >>> r.distant_offset, round(r.distant_similarity, 4)
    (6283, 0.9957)

    A shipped manifest (Llama 3.1 8B: the llama3 rule stretches 8,192 to 131,072 tokens):

    >>> from ropegeo.models.manifest import load_model
    >>> r = geometry_audit(load_model("llama-3.1-8b"))
    >>> r.train_length, r.target_length, r.scaled_pairs, r.pair_count
    (8192, 131072, 35, 64)
    >>> round(r.adjacent_similarity, 3), r.gate_b.passed
    (0.978, True)
    """
    m, train, target = _audited_manifest(operator, head_dim, base, train_length, target_length, rotary_dim,
                                         interpolate, pairing)
    if dtype not in ("float64", "float32"):
        raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
    start = None if search_start is None else v.length("search_start", search_start, minimum=2)
    limit = None if search_limit is None else v.length("search_limit", search_limit, minimum=2)
    top, rule = v.integer("top", top, minimum=1, maximum=1000), _gate_b_rule(gate_b_rule, min_margin)
    return _geometry(m, train, target, start, limit, dtype, top, rule, v.integer("seed", seed, minimum=0))


def _gate_b_rule(gate_b_rule, min_margin) -> GateBRule:
    """A GateBRule, or the fixed fallback ``min_margin``."""
    if min_margin is not None:
        if gate_b_rule is not None:
            raise ValueError("give gate_b_rule or min_margin (the fixed fallback threshold), not both")
        return GateBRule(fixed_margin=v.real("min_margin", min_margin, greater_than=0.0, maximum=2.0))
    if gate_b_rule is None:
        return GateBRule()
    if not isinstance(gate_b_rule, GateBRule):
        raise ValueError(f"gate_b_rule must be a ropegeo.gates.b.rule.GateBRule, got {type(gate_b_rule).__name__}")
    return gate_b_rule


def _geometry(m, train, target, start, limit, dtype, top, rule, seed) -> GeometryAudit:
    s0, s1, note = _search_range(train, target, m.sliding_window, start, limit)  # refuses a start past the end
    op, plain_op = m.operator, m.operator.unscaled  # checked once; frequencies cached per length
    law_op = op if op.sections is None else op.with_(sections=None, round_robin=False)  # text tokens: one axis
    theta, att, plain = np.array(op.theta_at(target)), op.attention_at(target), plain_op.theta
    pairs, lam = [*_LAW_PAIRS, (train // 4, train - 2)], TWO_PI / theta  # a manifest's bank: positive, scale 1
    err = law_error(law_op, np.asarray(pairs, dtype=np.float64), dtype, seed, seq_len=target, phase_dtype="float64")
    hits = near_collisions(start=s0, stop=s1, top=top, operator=op, seq_len=target)
    return GeometryAudit(
        manifest=m, train_length=int(train), target_length=int(target), theta=theta, attention_factor=float(att),
        dtype=dtype, relative_law_error=err, law_tolerance=_law_tolerance(dtype, m.head_dim, max(max(p) for p in pairs)),
        adjacent_similarity=adjacent_similarity(operator=op, seq_len=target),
        slow_pairs=int(np.count_nonzero(train * plain / TWO_PI < 1.0)),  # frequencies.slow_pairs, on trusted banks
        slow_pairs_target=int(np.count_nonzero(target * theta / TWO_PI < 1.0)),
        pairs_longer_than_train=int(np.count_nonzero(lam > train)),
        pairs_longer_than_target=int(np.count_nonzero(lam > target)),
        scaled_pairs=int(np.count_nonzero(np.abs(plain / theta - 1.0) > 1e-3)),
        angular_step_ratio=float(theta[0] / plain[0]), search_range=(s0, s1), search_note=note,
        top_offsets=[{"offset": h.offset, "similarity": h.similarity} for h in hits],
        gate_b=gate_b(m, None, train_length=train, target_length=target, rule=rule),
        phase_law_error=_phase_law(theta, pairs + ([(target // 4, target - 2)] if target > train else []),
                                   m.phase_dtype),
    )


@dataclass
class AuditReport(Report):
    """The result of :func:`audit`: three gates, one verdict. ``gate_a_on`` is ``"implementation"``
    (the caller's code) or ``"reference"`` (ropegeo's operator for the manifest); ``gate_c`` is
    ``None`` when not run (``gate_c_note`` says why)."""

    subject: str
    manifest: Any
    gate_a: Any
    gate_a_on: str
    gate_b: GateBResult
    gate_c: Any = None
    gate_c_note: str = ""
    seconds: float = 0.0

    def status(self) -> dict:
        """Each gate's state as printed: ``{"A": "pass" | "FAIL" | "inconclusive", "B": ..., "C": ... | "not run"}``."""
        out = {"A": _WORDS[self._state("A")], "B": _WORDS[self._state("B")]}
        out["C"] = "not run" if self.gate_c is None else _WORDS[self._state("C")]
        return out

    def _state(self, gate: str) -> str:
        """One gate's outcome in :mod:`ropegeo.gates.verdicts`' words."""
        report = {"A": self.gate_a, "B": self.gate_b, "C": self.gate_c}[gate]
        own = getattr(report, "status", None)
        return own if isinstance(own, str) and own in STATUSES else "pass" if report.passed else "fail"

    @property
    def outcome(self) -> str:
        """``"fail"`` when any gate fails, ``"inconclusive"`` when A, B or a Gate C that ran could not
        decide, else ``"pass"`` (Gate C not run leaves it untested, not inconclusive)."""
        states = [self._state(g) for g in ("AB" if self.gate_c is None else "ABC")]
        return "fail" if "fail" in states else "inconclusive" if "inconclusive" in states else "pass"

    @property
    def exit_code(self) -> int:
        """:data:`ropegeo.gates.verdicts.EXIT_CODES` of :attr:`outcome`."""
        return EXIT_CODES[self.outcome]

    @property
    def first_failure(self) -> str | None:
        """The first gate that fails, in the order A, B, C (``None`` when none fails)."""
        return next((gate for gate, state in self.status().items() if state == "FAIL"), None)

    @property
    def passed(self) -> bool:
        """:attr:`outcome` is ``"pass"`` (see :attr:`complete` for a gate not run)."""
        return self.outcome == "pass"

    @property
    def complete(self) -> bool:
        """All three gates ran."""
        return self.gate_c is not None

    @property
    def intervention(self) -> str | None:
        """What the first failure calls for (``GATES``' second column), or ``None``."""
        gate = self.first_failure
        return None if gate is None else GATES[gate][1]

    @property
    def reason(self) -> str:
        """Why the first failing gate failed, in plain words."""
        gate = self.first_failure
        if gate == "A":
            return self.gate_a.diagnosis
        if gate == "B":
            return self.gate_b.diagnosis
        if gate == "C":
            failed = [f"{name} {c['value']:.3g} (needs {'<=' if 'change' in name else '>='} {c['threshold']:g})"
                      for name, c in self.gate_c.checks.items() if not c["passed"]]
            return "; ".join(failed)
        return ""

    @property
    def verdict(self) -> str:
        """One sentence: the first failing gate and the intervention, or what remains untested."""
        gate = self.first_failure
        if gate is not None:
            later = {"A": " Later gates are not conclusive until this one passes.",
                     "B": " Gate C on this ruler measures whether training pays for it."}.get(gate, "")
            return (f"Gate {gate} fails ({GATES[gate][0].split(':')[0]}): {self.reason}. "
                    f"Intervention: {GATES[gate][1]} - {_ADVICE[gate]}.{later}")
        if self.outcome == "inconclusive":
            gates = [g for g in "ABC" if self.status()[g] == "inconclusive"]
            why = "; ".join(self.gate_b.diagnosis if g == "B" else getattr(self.gate_a if g == "A" else self.gate_c,
                                                                          "diagnosis", "") for g in gates)
            return (f"No verdict: Gate {' and '.join(gates)} could not decide ({why}). Inconclusive is not a pass: "
                    "state what the task needs (the rule's gap or the head's sharpness) or what was not measured.")
        a = ("Gate A checked the configuration's own operator (your code was not run) and Gate B passes: the ruler"
             if self.gate_a_on != "implementation" else "Gates A and B pass: the operator is what it claims and the ruler")
        if self.gate_c is None:
            return (f"{a} separates the task's offsets. "
                    "Gate C was not run, so whether a model uses this geometry at the target length is untested.")
        a = ("Gate A checked the configuration's own operator (your code was not run); the ruler"
             if self.gate_a_on != "implementation" else "All three gates pass: the operator is exact, the ruler")
        return (f"{a} separates the task's offsets, and toy heads "
                "trained on it keep working at the target length. None of this tests the real model's weights.")

    def to_dict(self) -> dict:
        """JSON-ready form: verdict, status, and every gate's full report."""
        return {"subject": self.subject, "verdict": self.verdict, "first_failure": self.first_failure,
                "intervention": self.intervention, "status": self.status(), "outcome": self.outcome,
                "manifest": self.manifest.to_dict(), "gate_a_on": self.gate_a_on, "gate_a": self.gate_a.to_dict(),
                "gate_b": self.gate_b.to_dict(), "gate_c": None if self.gate_c is None else self.gate_c.to_dict(),
                "gate_c_note": self.gate_c_note, "seconds": self.seconds}

    def _rows(self) -> list[tuple[str, str, str]]:
        """``(gate, printed state, text)``: ``checked`` for a pass on the configuration's own operator,
        ``moot`` after the first failure."""
        st = dict(self.status())
        if self.gate_a_on == "implementation":
            a_text = f"{self.gate_a.diagnosis} (on your implementation)"
        else:
            a_text = f"the configuration's own operator; your code was not run: {self.gate_a.diagnosis}"
            st["A"] = "checked" if st["A"] == "pass" else st["A"]
        c_text = self.gate_c_note if self.gate_c is None else (
            "; ".join(f"{n} {c['value']:.3g}" for n, c in self.gate_c.checks.items()))
        rows = [["A", st["A"], a_text], ["B", st["B"], self.gate_b.diagnosis], ["C", st["C"], c_text]]
        first = self.first_failure
        for row in rows:
            if first is not None and row[0] > first and row[1] not in ("not run", "FAIL"):
                row[1], row[2] = "moot", f"measured {row[1]}, not conclusive after Gate {first} failed: {row[2]}"
        return [tuple(r) for r in rows]

    def table(self) -> str:
        """A readable report: one line per gate, then the verdict."""
        rows = [f"  Gate {gate}  {state:<7}  {text}" for gate, state, text in self._rows()]
        return "\n".join([f"Audit of {self.subject}", *rows, "verdict: " + self.verdict])

    __repr__ = Report.__str__

    def _repr_html_(self) -> str:
        colour = {"pass": "#1a7f37", "FAIL": "#b42318", "not run": "#6b6b6b", "inconclusive": "#b54708",
                  "checked": "#6b6b6b", "moot": "#6b6b6b"}
        rows = "".join(
            f"<tr><td><b>Gate {g}</b></td><td style='color:{colour[s]};font-weight:bold'>{escape(s)}</td>"
            f"<td style='text-align:left'>{escape(t)}</td></tr>"
            for g, s, t in self._rows()
        )
        return (f"<div><p><b>Audit of {escape(self.subject)}</b></p><table>{rows}</table>"
                f"<p><b>Verdict.</b> {escape(self.verdict)}</p></div>")


def _reference_operator(manifest):
    """ropegeo's own operator for a manifest as a Gate A callable with roles (cos, sin times the
    attention factor, as transformers does)."""
    if manifest.sections is not None:  # multi-axis (M-RoPE): three position streams
        return axes_operator(manifest)
    seq = manifest.target_length or manifest.max_position_embeddings  # the context Gate A declares
    theta, factor = manifest.theta_at(seq), float(manifest.attention_at(seq))

    def operator(x, positions, role: str = "query"):
        if role == "value":
            return np.array(x, dtype=np.float64, copy=True)
        out = apply_rope(x, positions, theta=theta, pairing=manifest.pairing, rotary_dim=manifest.rotary_dim,
                         phase_dtype=manifest.phase_dtype)
        if factor != 1.0:
            rot = manifest.rotary_dim or out.shape[-1]
            out[..., :rot] *= factor
        return out

    return operator


def _manifest_of(target, where: str):
    """A RopeManifest from a manifest, a config dict, a path or a shipped model name."""
    if isinstance(target, RopeManifest):
        return target
    if isinstance(target, dict):
        return read_config(target)
    if isinstance(target, str) or hasattr(target, "__fspath__"):
        return resolve(target, option=where)
    raise ValueError(
        f"{where} must be a RopeManifest, a config dict, a config.json path, a shipped model name "
        f"or a callable implementation, got {type(target).__name__}"
    )


def _declaration(target, manifest):
    """``(declared manifest, Gate A callable, "implementation" | "reference", subject)``."""
    if callable(target) and not isinstance(target, (RopeManifest, dict, str)):
        if manifest is None:
            raise ValueError("manifest is required for an implementation: ropegeo does not assume the operator "
                             "your code declares (give a RopeManifest, a config dict or path, or a shipped model name)")
        subject = getattr(target, "__name__", None) or type(target).__name__
        return _manifest_of(manifest, "manifest"), target, "implementation", subject
    declared = _manifest_of(target, "target")
    return declared, _reference_operator(declared), "reference", declared.name or "a RoPE manifest"


def _own_choices(declared, offsets, origin, train, target) -> list[str]:
    """A note when the caller chose offsets, an origin or lengths other than the manifest's."""
    own = [k for k, val in (("offsets", offsets), ("origin", origin)) if val is not None]
    own += [k for k, val, default in (("train_length", train, declared.train_length),
                                       ("target_length", target, declared.target_length))
            if val is not None and val != default]
    return [f"{', '.join(own)} chosen here, not the model's: the geometry audit of this manifest (audit --config) "
            "uses the defaults, so its margins may differ"] if own else []


def audit(target, offsets=None, *, manifest=None, train_length: int | None = None, target_length: int | None = None,
          gate_b_rule: GateBRule | None = None, min_margin: float | None = None, origin: float | None = None,
          gate_c=False, gate_c_lengths: tuple | None = None, gate_c_options: dict | None = None, run_all: bool = False,
          seed: int = 0) -> AuditReport:
    """Audit a rotary setup with the three gates and return one verdict.

    ``target``: a manifest, config dict or path, shipped name (Gate A then checks ropegeo's own operator),
    or an implementation ``f(x, positions)`` declared by ``manifest``. ``offsets`` (default
    :func:`~ropegeo.gates.b.rule.default_offsets`) fit the target context from ``origin``; lengths
    default to the manifest's, else 4,096 and 32,768. ``gate_c=True`` trains toy heads (``gate_c_lengths``,
    ``gate_c_options``), skipped after a failure unless ``run_all``. ValueError for a bad argument;
    :class:`ropegeo.gates.a.gate.GateAError` when a callable breaks the contract.
    """
    t0 = time.perf_counter()
    declared, impl, a_on, subject = _declaration(target, manifest)
    rule = _gate_b_rule(gate_b_rule, min_margin)
    if origin is not None:
        origin = v.real("origin", origin, minimum=0.0)
    if not isinstance(run_all, (bool, np.bool_)):
        raise ValueError(f"run_all must be True or False, got {run_all!r}")
    if not isinstance(gate_c, (bool, np.bool_, GateCVerdict)):
        raise ValueError(f"gate_c must be True, False or a GateCVerdict, got {type(gate_c).__name__}")
    train = v.length("train_length", train_length if train_length is not None else (declared.train_length or 4096),
                     minimum=2)
    tgt = target_length if target_length is not None else (declared.target_length or max(train, 32_768))
    tgt = v.length("target_length", tgt, minimum=train)
    if offsets is not None:
        check_offsets_in_context(offsets, tgt, origin)
    c_options = gates_c.check_options(gate_c_options)
    if gate_c_lengths is not None:
        gates_c.toy_lengths(gate_c_lengths, train, tgt)
    a = run_gate_a(impl, manifest=declared, seed=v.integer("seed", seed, minimum=0))
    b = gate_b(declared, offsets, train_length=train, target_length=tgt, rule=rule, origin=origin)
    b.notes.extend(_own_choices(declared, offsets, origin, train_length, target_length))
    c, note = (gate_c, "") if isinstance(gate_c, GateCVerdict) else (None, "")
    if c is None and not gate_c:
        note = "not requested (gate_c=True, or --gate-c on the command line, trains and probes toy heads on this ruler)"
    elif c is None and not run_all and not (a.passed and b.status != "fail"):
        note = f"skipped: Gate {'A' if not a.passed else 'B'} failed first (pass run_all=True to run it anyway)"
    elif c is None:
        c = gates_c.run_for_manifest(declared, gate_c_lengths, c_options, train, tgt)
    return AuditReport(subject=subject, manifest=declared, gate_a=a, gate_a_on=a_on, gate_b=b, gate_c=c,
                       gate_c_note=note, seconds=time.perf_counter() - t0)
