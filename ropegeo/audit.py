"""The audit: the bare geometry of a frequency bank, and the three gates as one procedure.

:func:`geometry_audit` reports the exactness of the relative law on deterministic random vectors,
the adjacent similarity ``K(1)``, the most identity-like distant offsets, the slow pairs and the
angular step ratio under position interpolation. It says nothing about a trained model.

:func:`audit` runs the three gates in order on a manifest, a configuration or an implementation
and a task's offset set: Gate A (the algebra, :mod:`ropegeo.gate_a`), Gate B (separation margins,
:mod:`ropegeo.margins`) and optionally Gate C (toy heads trained on the ruler,
:mod:`ropegeo.behaviour`). Its :class:`AuditReport` names the first gate that fails and the kind of
intervention that failure calls for: an implementation fix, a different ruler, or training.
"""

from __future__ import annotations

import json
import numbers
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from . import _validate as v
from .frequencies import frequencies, resolve_rotary_dim, slow_pairs
from .geometry import adjacent_similarity, near_collisions
from .rotation import apply_rope

__all__ = ["GeometryAudit", "geometry_audit", "relative_law_error", "GATES", "MIN_MARGIN", "GateBResult",
           "AuditReport", "audit", "gate_c_schedule", "parse_offsets"]

_ERROR_DTYPES = ("float64", "float32")


def relative_law_error(
    head_dim: int,
    base: float = 10_000.0,
    *,
    position_pairs=None,
    pairing: str = "interleaved",
    rotary_dim: int | None = None,
    theta=None,
    scale: float = 1.0,
    dtype: str = "float64",
    seed: int = 7,
) -> float:
    """Largest violation of ``<R_m q, R_n k> = <q, R_{n-m} k>`` over some position pairs.

    Parameters
    ----------
    head_dim, base, pairing, rotary_dim, theta, scale
        The rotary operator, as in :func:`ropegeo.rotation.apply_rope`.
    position_pairs : sequence of (m, n), optional
        Query and key positions to test. Default: ``(2, 9), (31, 40), (97, 611), (1024, 4094)``.
    dtype : {"float64", "float32"}
        Precision of the vectors and of the rotated results.
    seed : int
        Seed of the standard normal query and key vectors.

    Returns
    -------
    float
        ``max |<R_m q, R_n k> - <q, R_{n-m} k>|`` over the pairs.
    """
    if dtype not in _ERROR_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(_ERROR_DTYPES)}, got {dtype!r}")
    head_dim = v.head_dim(head_dim)
    seed = v.integer("seed", seed, minimum=0)
    if position_pairs is None:
        position_pairs = [(2, 9), (31, 40), (97, 611), (1024, 4094)]
    pairs = v.finite_array("position_pairs", position_pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
        raise ValueError(f"position_pairs must be a non-empty list of (m, n) pairs, got shape {pairs.shape}")
    rng = np.random.default_rng(seed)
    q = rng.normal(size=head_dim).astype(dtype)
    k = rng.normal(size=head_dim).astype(dtype)
    kw = dict(base=base, pairing=pairing, rotary_dim=rotary_dim, theta=theta, scale=scale)
    m, n = pairs[:, 0], pairs[:, 1]
    qs = np.broadcast_to(q, (len(m), head_dim))
    ks = np.broadcast_to(k, (len(m), head_dim))
    direct = np.sum(apply_rope(qs, m, **kw) * apply_rope(ks, n, **kw), axis=-1)
    relative = np.sum(qs * apply_rope(ks, n - m, **kw), axis=-1)
    return float(np.max(np.abs(direct.astype(np.float64) - relative.astype(np.float64))))


@dataclass(frozen=True)
class GeometryAudit:
    """The result of :func:`geometry_audit`. ``to_dict`` / ``to_json`` give a plain form."""

    head_dim: int
    rotary_dim: int
    base: float
    train_length: int
    target_length: int
    interpolate: bool
    pairing: str
    dtype: str
    relative_law_error: float
    adjacent_similarity: float
    distant_offset: int
    distant_similarity: float
    pair_count: int
    slow_pairs: int
    angular_step_ratio: float
    search_range: tuple[int, int]
    top_offsets: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["search_range"] = list(self.search_range)
        return d

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """A short human-readable table."""
        lo, hi = self.search_range
        rows = [
            ("head dim / rotary dim", f"{self.head_dim} / {self.rotary_dim}"),
            ("base", f"{self.base:g}"),
            ("pairing, dtype", f"{self.pairing}, {self.dtype}"),
            ("train -> target length", f"{self.train_length:,} -> {self.target_length:,}"),
            ("interpolation", f"{'on' if self.interpolate else 'off'} (angular step ratio {self.angular_step_ratio:g})"),
            ("relative-law error", f"{self.relative_law_error:.3e}"),
            ("adjacent similarity K(1)", f"{self.adjacent_similarity:.6f}"),
            (f"most identity-like offset in [{lo:,}, {hi:,}]", f"{self.distant_offset:,} (K = {self.distant_similarity:.6f})"),
            ("slow pairs (< 1 turn in training)", f"{self.slow_pairs} of {self.pair_count}"),
        ]
        for extra in self.top_offsets[1:]:
            rows.append(("  next", f"{extra['offset']:,} (K = {extra['similarity']:.6f})"))
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)

    def __str__(self) -> str:
        return self.table()


def geometry_audit(
    head_dim: int = 128,
    base: float = 1e4,
    train_length: int = 4096,
    target_length: int = 32768,
    rotary_dim: int | None = None,
    *,
    interpolate: bool = False,
    search_start: int | None = None,
    search_limit: int = 100_000,
    pairing: str = "interleaved",
    dtype: str = "float64",
    top: int = 1,
    seed: int = 7,
) -> GeometryAudit:
    """Audit the bare geometry of a rotary frequency bank.

    Parameters
    ----------
    head_dim : int
        Width of one head (even, at least 2).
    base : float
        Frequency base (finite, greater than 1).
    train_length, target_length : int
        Context seen in training and the context to serve (each at least 2).
    interpolate : bool
        Apply linear position interpolation, scaling positions by
        ``min(1, train_length / target_length)``.
    search_start : int, optional
        First offset of the near-collision search (at least 2). Default: ``train_length``.
    search_limit : int
        Largest offset searched, whatever the target length (at least 2): the search covers
        ``[search_start, min(target_length, search_limit)]``.
    pairing : {"interleaved", "half"}
        Pairing convention used in the relative-law check.
    rotary_dim : int, optional
        Partial rotary dimension.
    dtype : {"float64", "float32"}
        Precision of the relative-law check.
    top : int
        How many distant offsets to report (at least 1).
    seed : int
        Seed of the random vectors in the relative-law check.

    Returns
    -------
    GeometryAudit

    Notes
    -----
    The relative law is tested at position pairs ``(2, 9), (31, 40), (97, 611)`` and
    ``(L // 4, L - 2)`` for the training length ``L``.
    """
    head_dim, rotary_dim = resolve_rotary_dim(head_dim, rotary_dim)
    base = v.base(base)
    train_length = v.length("train_length", train_length, minimum=2)
    target_length = v.length("target_length", target_length, minimum=2)
    search_limit = v.length("search_limit", search_limit, minimum=2)
    if search_start is not None:
        search_start = v.length("search_start", search_start, minimum=2)
    top = v.integer("top", top, minimum=1, maximum=1000)
    pairing = v.pairing(pairing)
    interpolate = v.boolean("interpolate", interpolate)

    theta = frequencies(head_dim, base, rotary_dim)
    # interpolation squeezes the target window into the trained one; it never stretches
    squeeze = train_length / target_length
    scale = squeeze if (interpolate and squeeze < 1.0) else 1.0
    pairs = [(2, 9), (31, 40), (97, 611), (train_length // 4, train_length - 2)]
    err = relative_law_error(
        head_dim, base, position_pairs=pairs, pairing=pairing, rotary_dim=rotary_dim,
        scale=scale, dtype=dtype, seed=seed,
    )
    stop = min(target_length, search_limit)
    first = train_length if search_start is None else search_start
    start = min(stop, max(first, 2))
    hits = near_collisions(theta, start, stop, top=top, scale=scale)
    return GeometryAudit(
        head_dim=head_dim,
        rotary_dim=rotary_dim,
        base=base,
        train_length=train_length,
        target_length=target_length,
        interpolate=bool(interpolate),
        pairing=pairing,
        dtype=dtype,
        relative_law_error=err,
        adjacent_similarity=adjacent_similarity(theta, scale=scale),
        distant_offset=hits[0].offset,
        distant_similarity=hits[0].similarity,
        slow_pairs=slow_pairs(theta, train_length),
        pair_count=int(theta.size),
        angular_step_ratio=scale,
        search_range=(start, stop),
        top_offsets=[{"offset": h.offset, "similarity": h.similarity} for h in hits],
    )


# =============================================================================================
# The audit as one procedure: Gate A, then Gate B, then (optionally) Gate C
# =============================================================================================

#: The three gates, what each asks, and the kind of intervention a failure there calls for.
GATES = {
    "A": ("algebraic relativity: the implementation realises the rotary operator it declares",
          "implementation fix"),
    "B": ("geometric identifiability: the deployed ruler keeps the task's offsets apart",
          "different ruler"),
    "C": ("statistical familiarity: heads trained on this ruler use it at the target length",
          "training"),
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
#: Default smallest acceptable separation margin of Gate B (a phase distance, in [0, 2]).
MIN_MARGIN = 0.1
#: Largest toy lengths Gate C uses (its evaluation forms length-by-length score matrices).
_C_MAX_LENGTH = 4096
_C_TRAIN_LENGTH = 64


@dataclass(frozen=True)
class GateBResult:
    """Gate B of :func:`audit`: the separation margins of the task's offset sets.

    Attributes
    ----------
    passed : bool
        Every set's margin is at least ``min_margin``.
    min_margin : float
        The threshold, a phase distance in [0, 2] (``D^2 = 2 (1 - K)``: 0.1 is ``K = 0.995``).
    sets : list of dict
        One entry per offset set: ``name``, ``n_offsets``, ``margin``, ``pair`` (the most
        confusable offsets), ``dtype`` (precision of the phases), ``origin`` (position of offset
        0), ``method`` and ``passed``.
    train_length, target_length : int
        The lengths the ruler was judged at.
    theta : list of float
        The frequencies served at the target length (radians per position), fastest first.
    attention_factor : float
        The rule's attention factor at the target length.
    adjacent_similarity : float
        ``K(1)`` of the served bank.
    distant_offset, distant_similarity : int, float
        The most identity-like offset in ``[train_length, min(target_length, 100000)]`` and its K
        (``None`` when the target is not longer than the training length).
    slow_pairs, pair_count : int
        Pairs of the training bank under one turn in ``train_length``; number of pairs.
    """

    passed: bool
    min_margin: float
    sets: list
    train_length: int
    target_length: int
    theta: list
    attention_factor: float
    adjacent_similarity: float
    distant_offset: int | None
    distant_similarity: float | None
    slow_pairs: int
    pair_count: int

    @property
    def worst(self) -> dict:
        """The set with the smallest margin."""
        return min(self.sets, key=lambda s: s["margin"])

    @property
    def diagnosis(self) -> str:
        w = self.worst
        a, b = w["pair"]
        gap = b - a
        text = (f"offsets {a:,g} and {b:,g} ({w['name']}) are {w['margin']:.3g} apart in phase "
                f"({w['dtype']} phases)")
        if self.passed:
            return f"every offset set keeps a margin of at least {self.min_margin:g}; the closest: " + text
        return (text + f", below the margin {self.min_margin:g}: the ruler turns a displacement of {gap:,g} "
                "into nearly the identity")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class AuditReport:
    """The result of :func:`audit`: three gates, one verdict.

    Attributes
    ----------
    subject : str
        What was audited.
    manifest : ropegeo.manifest.RopeManifest
        The declared operator (for a callable: its declaration).
    gate_a : ropegeo.gate_a.GateAReport
    gate_a_on : str
        ``"implementation"`` when Gate A ran on the caller's code, ``"reference"`` when it ran on
        ropegeo's own operator for the manifest (then it checks the declaration, not anyone's code).
    gate_b : GateBResult
    gate_c : ropegeo.behaviour.GateCVerdict or None
        ``None`` when Gate C was not run; ``gate_c_note`` says why.
    gate_c_note : str
    seconds : float
        Wall time of the whole audit.
    """

    subject: str
    manifest: Any
    gate_a: Any
    gate_a_on: str
    gate_b: GateBResult
    gate_c: Any = None
    gate_c_note: str = ""
    seconds: float = 0.0

    # ------------------------------------------------------------------ the verdict
    def status(self) -> dict:
        """``{"A": "pass" | "FAIL", "B": ..., "C": "pass" | "FAIL" | "not run"}``."""
        out = {"A": "pass" if self.gate_a.passed else "FAIL", "B": "pass" if self.gate_b.passed else "FAIL"}
        out["C"] = "not run" if self.gate_c is None else ("pass" if self.gate_c.passed else "FAIL")
        return out

    @property
    def first_failure(self) -> str | None:
        """The first gate that fails, in the order A, B, C (``None`` when none fails)."""
        for gate, state in self.status().items():
            if state == "FAIL":
                return gate
        return None

    @property
    def passed(self) -> bool:
        """No gate failed (a gate that was not run does not count as passed: see :attr:`complete`)."""
        return self.first_failure is None

    @property
    def complete(self) -> bool:
        """All three gates ran."""
        return self.gate_c is not None

    @property
    def intervention(self) -> str | None:
        """The kind of intervention the first failure calls for: ``"implementation fix"``,
        ``"different ruler"`` or ``"training"`` (``None`` when no gate failed)."""
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
        if self.gate_c is None:
            return ("Gates A and B pass: the operator is what it claims and the ruler separates the task's offsets. "
                    "Gate C was not run, so whether a model uses this geometry at the target length is untested.")
        return ("All three gates pass: the operator is exact, the ruler separates the task's offsets, and toy heads "
                "trained on it keep working at the target length. None of this tests the real model's weights.")

    # ------------------------------------------------------------------ plain forms
    def to_dict(self) -> dict:
        """JSON-ready form: verdict, status, and every gate's full report."""
        return {
            "subject": self.subject,
            "verdict": self.verdict,
            "first_failure": self.first_failure,
            "intervention": self.intervention,
            "status": self.status(),
            "manifest": self.manifest.to_dict(),
            "gate_a_on": self.gate_a_on,
            "gate_a": self.gate_a.to_dict(),
            "gate_b": self.gate_b.to_dict(),
            "gate_c": None if self.gate_c is None else self.gate_c.to_dict(),
            "gate_c_note": self.gate_c_note,
            "seconds": self.seconds,
        }

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as JSON (keyword arguments go to ``json.dumps``)."""
        from .gate_a import _json_default

        kwargs.setdefault("default", _json_default)
        return json.dumps(_finite(self.to_dict()), **kwargs)

    def _rows(self) -> list[tuple[str, str, str]]:
        st = self.status()
        a_on = "your implementation" if self.gate_a_on == "implementation" else "ropegeo's operator for the manifest"
        a_text = f"{self.gate_a.diagnosis} (on {a_on})"
        c_text = self.gate_c_note if self.gate_c is None else (
            "; ".join(f"{n} {c['value']:.3g}" for n, c in self.gate_c.checks.items()))
        return [("A", st["A"], a_text), ("B", st["B"], self.gate_b.diagnosis), ("C", st["C"], c_text)]

    def table(self) -> str:
        """A readable report: one line per gate, then the verdict."""
        lines = [f"Audit of {self.subject}"]
        for gate, state, text in self._rows():
            lines.append(f"  Gate {gate}  {state:<7}  {text}")
        lines.append("verdict: " + self.verdict)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from html import escape

        colour = {"pass": "#1a7f37", "FAIL": "#b42318", "not run": "#6b6b6b"}
        rows = "".join(
            f"<tr><td><b>Gate {g}</b></td><td style='color:{colour[s]};font-weight:bold'>{escape(s)}</td>"
            f"<td style='text-align:left'>{escape(t)}</td></tr>"
            for g, s, t in self._rows()
        )
        return (f"<div><p><b>Audit of {escape(self.subject)}</b></p><table>{rows}</table>"
                f"<p><b>Verdict.</b> {escape(self.verdict)}</p></div>")


def _finite(o):
    """Replace non-finite floats by None, recursively (JSON has no NaN or infinity)."""
    if isinstance(o, dict):
        return {k: _finite(val) for k, val in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(val) for val in o]
    if isinstance(o, float) and not np.isfinite(o):
        return None
    return o


def _reference_operator(manifest):
    """ropegeo's own rotary operator for a manifest, as a Gate A callable with roles."""
    theta = manifest.theta()

    def operator(x, positions, role: str = "query"):
        if role == "value":
            return np.array(x, dtype=np.float64, copy=True)
        return apply_rope(x, positions, theta=theta, pairing=manifest.pairing, rotary_dim=manifest.rotary_dim,
                          phase_dtype=manifest.phase_dtype)

    return operator


def _manifest_of(target, where: str):
    """A RopeManifest from a manifest, a config dict, a path or a shipped model name."""
    from .manifest import RopeManifest, read_config, resolve

    if isinstance(target, RopeManifest):
        return target
    if isinstance(target, dict):
        return read_config(target)
    if isinstance(target, str) or hasattr(target, "__fspath__"):
        return resolve(target)
    raise ValueError(
        f"{where} must be a RopeManifest, a config dict, a config.json path, a shipped model name "
        f"or a callable implementation, got {type(target).__name__}"
    )


def _offset_sets(offsets, target_length: int) -> dict:
    from .manifest import default_offsets

    if offsets is None:
        return default_offsets(target_length)
    if isinstance(offsets, dict):
        if not offsets:
            raise ValueError("offsets must hold at least one named offset set")
        return {str(k): val for k, val in offsets.items()}
    return {"task offsets": offsets}


def _gate_b(manifest, offsets, train_length, target_length, min_margin, origin, dtype) -> GateBResult:
    from .margins import MAX_DIRECT, MAX_OFFSETS, separation_margin

    theta = manifest.theta(target_length)
    att = manifest.attention_factor(target_length)
    sets = []
    for name, offs in _offset_sets(offsets, target_length).items():
        if isinstance(offs, range):
            if len(offs) > MAX_OFFSETS:  # refuse before anything is allocated
                raise ValueError(f"offsets ({name}) holds {len(offs):,} offsets; at most {MAX_OFFSETS:,} are allowed")
            n, top = len(offs), (max(offs[0], offs[-1]) if len(offs) else 0)
        else:
            arr = v.finite_array("offsets", offs)
            n, top = arr.size, (float(arr.max()) if arr.size else 0.0)
        # distances from generated (low-precision) phases cost n^2: large sets fall back to exact phases
        use = dtype if (dtype == "float64" or n <= MAX_DIRECT) else "float64"
        org = max(0.0, float(target_length - 1 - top)) if origin is None else origin
        m = separation_margin(offs, theta, dtype=use, origin=org)
        entry = {"name": name, "n_offsets": m.n_offsets, "margin": m.margin, "pair": list(m.pair), "dtype": m.dtype,
                 "origin": org, "method": m.method, "passed": bool(m.margin >= min_margin)}
        if use != dtype:
            entry["note"] = (f"{n:,} offsets: distances from {dtype} phases would cost n^2, so exact phases were "
                             f"used (at most {MAX_DIRECT:,} offsets are compared in {dtype})")
        sets.append(entry)
    plain = frequencies(manifest.rotary_dim, manifest.base)
    stop = min(target_length, 100_000)
    hit = near_collisions(theta, train_length, stop, top=1)[0] if stop > train_length else None
    return GateBResult(
        passed=all(s["passed"] for s in sets), min_margin=min_margin, sets=sets, train_length=train_length,
        target_length=target_length, theta=[float(t) for t in theta], attention_factor=float(att),
        adjacent_similarity=adjacent_similarity(theta), distant_offset=None if hit is None else hit.offset,
        distant_similarity=None if hit is None else hit.similarity, slow_pairs=slow_pairs(plain, train_length),
        pair_count=int(theta.size),
    )


def gate_c_schedule(manifest, train_length: int, target_length: int, *, model_length: int | None = None) -> dict:
    """The toy schedule Gate C trains and tests on, for a manifest.

    Gate C cannot run a real model (ropegeo has no weights), so it trains tiny heads at a toy
    training length and tests them at a toy target length, under the manifest's extension rule
    re-anchored at the toy training length (same rule, same factor,
    ``original_max_position_embeddings`` replaced by the toy length).

    With ``model_length`` (the model's own training length) above the toy length, the bank is
    re-anchored too: its base becomes ``ropegeo.reanchor.reanchored_base(base, model_length,
    train_length)``, so that as many pairs complete a turn within the toy length as within the
    model's (the slow/fast split of chapter 4); on the model's own base almost every pair of a
    long-context bank would be slow at 64 tokens.

    Parameters
    ----------
    manifest : ropegeo.manifest.RopeManifest
    train_length, target_length : int
        The toy lengths, ``2 <= train_length < target_length <= 4096``.
    model_length : int, optional
        The model's training length; ``audit`` passes it. Default: no re-anchoring of the base.

    Returns
    -------
    dict
        ``theta`` (training bank, shape (pairs,)), ``target_theta``, ``target_attention_factor``,
        ``train_length``, ``target_length``, ``rule`` (``"none"`` or the rule's name), ``base``
        (the base of the training bank, re-anchored or the manifest's).
    """
    from dataclasses import replace

    from .scaling import scaled_frequencies

    train_length = v.length("train_length", train_length, minimum=2)
    target_length = v.integer("target_length", target_length, minimum=train_length + 1, maximum=_C_MAX_LENGTH)
    base = manifest.base
    if model_length is not None:
        from .reanchor import reanchored_base

        model_length = v.length("model_length", model_length, minimum=2)
        if model_length > train_length >= 7:
            base = reanchored_base(base, model_length, train_length)
    theta = frequencies(manifest.rotary_dim, base)
    sc = manifest.scaling
    if sc is None:
        tt, att, rule = theta, 1.0, "none"
    else:
        if sc.original_max_position_embeddings is not None:
            sc = replace(sc, original_max_position_embeddings=train_length)
        tt, att = scaled_frequencies(sc, base, manifest.rotary_dim, seq_len=target_length)
        rule = sc.rule
    return {"theta": theta, "target_theta": tt, "target_attention_factor": float(att),
            "train_length": train_length, "target_length": target_length, "rule": rule, "base": float(base)}


def audit(
    target,
    offsets=None,
    *,
    manifest=None,
    train_length: int | None = None,
    target_length: int | None = None,
    min_margin: float = MIN_MARGIN,
    origin: float | None = None,
    gate_c=False,
    gate_c_lengths: tuple | None = None,
    gate_c_options: dict | None = None,
    run_all: bool = False,
    seed: int = 0,
) -> AuditReport:
    """Audit a rotary setup with the three gates and return one verdict.

    Gate A checks the algebra (:func:`ropegeo.gate_a.gate_a`), Gate B the separation margins
    of the task's offsets under the deployed ruler and phase precision
    (:func:`ropegeo.margins.separation_margin`), Gate C trains toy heads on that ruler and tests
    them at the target length (:func:`ropegeo.behaviour.gate_c`). The verdict names the first
    gate that fails and the kind of intervention it calls for: an implementation fix (A), a
    different ruler (B) or training (C).

    Parameters
    ----------
    target : RopeManifest, dict, str, path or callable
        A manifest, a parsed ``config.json``, the path of one, a shipped model name (see
        :func:`ropegeo.manifest.shipped_models`), or a rotary implementation ``f(x, positions)``
        (the Gate A protocols). A callable's declaration comes from ``manifest``; without it, the
        RoPE defaults (base 10,000, interleaved, head dim 64, float32 angles) are assumed.
    offsets : array_like, range or dict of name -> offsets, optional
        The offsets the task must tell apart (non-negative, distinct, at least two per set).
        Default: :func:`ropegeo.manifest.default_offsets` of the target length (every offset up
        to 64, and 48 log-spaced offsets up to the target).
    manifest : RopeManifest, dict, str or path, optional
        The declaration of a callable ``target`` (ignored otherwise).
    train_length, target_length : int, optional
        Context of training and context to serve. Default: the manifest's
        (``original_max_position_embeddings`` / the rule's reach), else 4,096 and 32,768.
        ``2 <= train_length <= target_length``.
    min_margin : float
        Gate B threshold: the smallest acceptable phase distance between two required offsets,
        in ``(0, 2]``. The default 0.1 means a kernel similarity of 0.995.
    origin : float, optional
        Position of offset 0 when phases are generated in limited precision (non-negative).
        Default: the far end of the target context (``target_length - 1 - max offset``), where
        rounding is worst.
    gate_c : bool or ropegeo.behaviour.GateCVerdict
        ``True`` runs Gate C (seconds to a minute: it trains heads); a verdict computed earlier
        is used as it is.
    gate_c_lengths : (int, int), optional
        Toy training and target lengths of Gate C. Default: training at ``min(train_length, 64)``
        and testing at the same extension ratio (at most 4,096, at least one more token).
    gate_c_options : dict, optional
        Further keyword arguments of :func:`ropegeo.behaviour.gate_c` (``seeds``, ``steps``,
        ``match_steps``, ``offset``, thresholds).
    run_all : bool
        Run Gate C even when Gate A or B has already failed (default: it is skipped then).
    seed : int
        Seed of Gate A's random vectors.

    Returns
    -------
    AuditReport
        ``table()``/``str()`` for text, ``to_json()`` for JSON, rich display in a notebook.

    Raises
    ------
    ValueError
        For an unreadable target or manifest, bad lengths, offsets or margin;
        :class:`ropegeo.gate_a.GateAError` (a ValueError) when a callable breaks the calling
        contract.

    Notes
    -----
    What the gates can establish is limited on purpose. With a manifest as target, Gate A runs on
    ropegeo's own operator for it: it checks that the declaration is a consistent rotary operator
    in the declared precision, not that anyone's code implements it. Gate C trains toy heads on
    the manifest's frequencies (see :func:`gate_c_schedule`); it says whether the ruler can be
    learned and carried to a longer context, not whether a given checkpoint does.
    """
    import time

    from .gate_a import gate_a as run_gate_a
    from .manifest import RopeManifest

    t0 = time.perf_counter()
    if callable(target) and not isinstance(target, (RopeManifest, dict, str)):
        if manifest is None:
            declared = RopeManifest(base=10_000.0, head_dim=64, pairing="interleaved", phase_dtype="float32",
                                    name="declared defaults")
        else:
            declared = _manifest_of(manifest, "manifest")
        impl, a_on = target, "implementation"
        subject = getattr(target, "__name__", None) or type(target).__name__
    else:
        declared = _manifest_of(target, "target")
        impl, a_on = _reference_operator(declared), "reference"
        subject = declared.name or "a RoPE manifest"
    min_margin = v.real("min_margin", min_margin, greater_than=0.0, maximum=2.0)
    if origin is not None:
        origin = v.real("origin", origin, minimum=0.0)
    if not isinstance(run_all, (bool, np.bool_)):
        raise ValueError(f"run_all must be True or False, got {run_all!r}")
    train = train_length if train_length is not None else (declared.train_length or 4096)
    train = v.length("train_length", train, minimum=2)
    tgt = target_length if target_length is not None else (declared.target_length or max(train, 32_768))
    tgt = v.length("target_length", tgt, minimum=train)
    seed = v.integer("seed", seed, minimum=0)

    # ---- Gate A
    a = run_gate_a(impl, manifest=declared, seed=seed)
    # ---- Gate B, on the declared ruler at the target length, in the declared phase precision
    b = _gate_b(declared, offsets, train, tgt, min_margin, origin, declared.phase_dtype)
    # ---- Gate C
    from .behaviour import GateCVerdict

    c, note = None, ""
    if isinstance(gate_c, GateCVerdict):
        c = gate_c
    elif not isinstance(gate_c, (bool, np.bool_)):
        raise ValueError(f"gate_c must be True, False or a GateCVerdict, got {type(gate_c).__name__}")
    elif not gate_c:
        note = "not requested (gate_c=True, or --gate-c on the command line, trains and probes toy heads on this ruler)"
    elif not run_all and not (a.passed and b.passed):
        note = f"skipped: Gate {'A' if not a.passed else 'B'} failed first (pass run_all=True to run it anyway)"
    else:
        from .behaviour import gate_c as run_gate_c

        if gate_c_lengths is None:
            c_train = min(train, _C_TRAIN_LENGTH)
            c_target = min(_C_MAX_LENGTH, max(c_train + 1, int(round(c_train * tgt / train))))
        else:
            try:
                c_train, c_target = gate_c_lengths
            except (TypeError, ValueError):
                raise ValueError(f"gate_c_lengths must be a pair (train, target), got {gate_c_lengths!r}") from None
        opts = dict(gate_c_options or {})
        offset = opts.get("offset", 5)
        if isinstance(offset, numbers.Integral) and not isinstance(offset, bool) and c_train <= offset + 1:
            raise ValueError(f"Gate C trains a head to attend {offset} tokens back, so the training length must be "
                             f"at least {offset + 2}, got {c_train}")
        sch = gate_c_schedule(declared, c_train, c_target, model_length=train)
        for key in ("theta", "train_length", "target_length", "target_theta", "target_attention_factor"):
            if key in opts:
                raise ValueError(f"gate_c_options must not set {key!r}: it comes from the manifest and gate_c_lengths")
        c = run_gate_c(sch["theta"], train_length=sch["train_length"], target_length=sch["target_length"],
                       target_theta=sch["target_theta"], target_attention_factor=sch["target_attention_factor"],
                       **opts)
        c.settings["rule"] = sch["rule"]
        c.settings["base"] = sch["base"]  # re-anchored to keep the model's slow/fast split
    return AuditReport(subject=subject, manifest=declared, gate_a=a, gate_a_on=a_on, gate_b=b, gate_c=c,
                       gate_c_note=note, seconds=time.perf_counter() - t0)


# =============================================================================================
# Command line: python -m ropegeo report TARGET ...
# =============================================================================================


def parse_offsets(text: str) -> np.ndarray:
    """Offsets from a command-line list such as ``"1-64,128,1000-1003"`` (inclusive ranges).

    Raises
    ------
    ValueError
        Naming ``--offsets`` for anything else, a reversed range or more than 2**20 offsets.
    """
    from .margins import MAX_OFFSETS

    if not isinstance(text, str) or not text.strip():
        raise ValueError("--offsets must be a comma-separated list of offsets or ranges, e.g. 1-64,128")
    parts, total = [], 0
    for item in text.split(","):
        item = item.strip()
        try:
            if "-" in item[1:]:
                lo, hi = (int(x) for x in item.split("-", 1))
            else:
                lo = hi = int(item)
        except ValueError:
            raise ValueError(f"--offsets: {item!r} is neither an integer nor a range a-b") from None
        if lo < 0 or hi < lo:
            raise ValueError(f"--offsets: {item!r} must be a non-negative offset or an increasing range a-b")
        total += hi - lo + 1
        if total > MAX_OFFSETS:
            raise ValueError(f"--offsets lists more than {MAX_OFFSETS:,} offsets")
        parts.append(np.arange(lo, hi + 1, dtype=np.float64))
    return np.unique(np.concatenate(parts))


def add_report_subcommand(sub) -> None:
    """Register ``report`` (the three-gate audit) on an argparse subparsers object."""
    p = sub.add_parser(
        "report",
        help="the three-gate audit of a model configuration or an implementation, with a verdict",
        description="Run Gate A (algebra), Gate B (separation margins of the task's offsets) and, with "
        "--gate-c, Gate C (toy heads trained on the ruler), and print the verdict: the first gate that "
        "fails and the kind of intervention it calls for. Exit status 0 when no gate fails, 1 when one "
        "does, 2 for bad arguments.",
    )
    p.add_argument("target", help="a shipped model name (e.g. llama-3.1-8b), a config.json path, or an "
                   "implementation as MODULE:FUNCTION")
    p.add_argument("--manifest", default=None, metavar="NAME_OR_PATH",
                   help="the declaration of a MODULE:FUNCTION target (a model name or config.json)")
    p.add_argument("--offsets", default=None,
                   help="offsets the task must tell apart, e.g. 1-64,1000 (default: 1..64 and 48 log-spaced)")
    p.add_argument("--train-length", type=int, default=None, help="training context (default: the config's)")
    p.add_argument("--target-length", type=int, default=None, help="context to serve (default: the config's)")
    p.add_argument("--min-margin", type=float, default=MIN_MARGIN,
                   help=f"Gate B threshold, a phase distance in (0, 2] (default {MIN_MARGIN:g})")
    p.add_argument("--gate-c", action="store_true", help="also run Gate C (trains toy heads: seconds)")
    p.add_argument("--seeds", type=int, default=1, help="Gate C seeds (default 1)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--layer-type", default=None, metavar="TYPE",
                   help="the layer type to audit when the configuration's rope_parameters holds one block per "
                   "layer type (e.g. full_attention for Gemma 3)")
    p.set_defaults(func=run_report_subcommand)


def run_report_subcommand(args) -> int:
    """Run ``report`` from parsed arguments; returns 0 (no gate failed) or 1."""
    from .gate_a import _resolve

    target = args.target
    manifest = None
    if isinstance(target, str) and ":" in target and not target.lower().endswith(".json"):
        target = _resolve(target)
        manifest = args.manifest
    elif args.manifest is not None:
        raise ValueError("--manifest declares a MODULE:FUNCTION target; a configuration declares itself")
    if args.layer_type is not None:
        from .manifest import resolve

        if isinstance(target, str) and ":" not in target:
            target = resolve(target, layer_type=args.layer_type)
        elif manifest is not None:
            manifest = resolve(manifest, layer_type=args.layer_type)
        else:
            raise ValueError("--layer-type picks a block of a configuration; give a config (or --manifest)")
    offsets = None if args.offsets is None else parse_offsets(args.offsets)
    seeds = v.integer("--seeds", args.seeds, minimum=1, maximum=10)
    report = audit(target, offsets, manifest=manifest, train_length=args.train_length,
                   target_length=args.target_length, min_margin=args.min_margin, gate_c=bool(args.gate_c),
                   gate_c_options={"seeds": tuple(range(seeds))})
    print(report.to_json(indent=2) if args.json else report.table())
    return 0 if report.passed else 1
