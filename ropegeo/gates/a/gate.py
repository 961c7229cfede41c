"""Gate A: does a rotary implementation realise the operator it claims?

:func:`gate_a` runs the checks of :data:`CHECKS`; a failure names its class (``verdicts.DEFECT_CLASSES``).

Three protocols, each opting in to more checks:

``callable``
    ``f(x, positions) -> rotated x``, ``x`` of shape ``(seq, head_dim)`` (or ``(batch, seq,
    head_dim)`` with positions ``(batch, seq)``, for the ``batch`` check), integer positions.
``role``
    also a keyword ``role`` (``"query"``, ``"key"``, ``"value"``): adds ``roles`` and ``values``.
``decoder``
    also ``prefill(keys, values)`` and ``decode_step(query, key, value) -> (rotated_query,
    cached_keys, cached_values)``: adds ``decoding``.

It may return numpy arrays (float64 down to bfloat16) or torch tensors (retried with tensors when torch
is importable). Each check has its own random stream.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from ropegeo import _validate as v
from ropegeo._json import plain
from ropegeo.gates.a.algebra import (
    check_composition,
    check_decoding,
    check_inverse,
    check_norm,
    check_roles,
    check_shift,
    check_values,
)
from ropegeo.gates.a.call import UNIT, Bad, GateAError, Impl, Refused
from ropegeo.gates.a.checks import (
    PRECISION_LIMIT,
    Ctx,
    check_batch,
    check_context,
    check_frequencies,
    check_layout,
    check_origin,
    check_precision,
    short_run_note,
    short_run_reading,
)
from ropegeo.gates.verdicts import Check, Report, status, verdict
from ropegeo.models.manifest import RopeManifest, read_config, resolve
from ropegeo.operator import RotaryOperator

__all__ = ["gate_a", "check_declaration", "GateAReport", "CHECKS", "CORE_CHECKS", "DEFAULT_MAX_POSITION"]

#: Largest declared attention factor (1 / it the smallest): logits stay finite in float16 up to it.
MAX_ATTENTION_FACTOR = 1e3

#: The checks in the order they run (reading first, the algebra after): name, protocol, question, function.
_TABLE = (
    ("layout", "callable", "the coordinates that rotate together (and those that pass through) are the declared ones", check_layout),
    ("frequencies", "callable", "each pair turns at the declared frequency, in the declared direction", check_frequencies),
    ("precision", "callable", "angles are formed at least as precisely as declared (error growing with position)", check_precision),
    ("origin", "callable", "position 0 is the identity (the origin is not off by k)", check_origin),
    ("context", "callable", "positions across the whole declared context are used as given: no wrap, clamp, overflow or refusal", check_context),
    ("batch", "callable", "each row of a (batch, seq) position tensor is rotated by its own ids", check_batch),
    ("roles", "role", "queries and keys are rotated by the same operator (scaling applied to both)", check_roles),
    ("values", "role", "values pass through unrotated", check_values),
    ("decoding", "decoder", "decoding with a KV cache gives the scores of the full-sequence computation", check_decoding),
    ("norm", "callable", "rotation keeps the norm of every vector (after the declared attention factor)", check_norm),
    ("shift", "callable", "every query-key score is unchanged when both positions shift by the same amount", check_shift),
    ("composition", "callable", "rotating by a then by b equals rotating by a + b", check_composition),
    ("inverse", "callable", "rotating by a then by -a gives the input back", check_inverse),
)
#: Every check, the protocol it needs, and what it asks.
CHECKS = {name: (protocol, question) for name, protocol, question, _ in _TABLE}
#: The checks without which Gate A has no verdict: one not measured makes it "inconclusive".
CORE_CHECKS = ("layout", "frequencies", "origin", "context", "norm", "shift", "composition")
#: Readings that assume the map is a rotation: inconclusive when the norm check fails.
_ROTATION_READINGS = ("layout", "frequencies", "precision")

_HEAD_DIMS = (8, 16, 32, 64, 128, 256)
#: Widest head Gate A audits: its probes build head_dim x head_dim inputs per position.
MAX_AUDITED_HEAD_DIM = 1024
#: Declared context when neither ``max_position`` nor a manifest gives one.
DEFAULT_MAX_POSITION = 131_072
#: Largest declared context probed (positions stay exact in float64 far beyond).
MAX_POSITION = 2**26


@dataclass
class GateAReport(Report):
    """The result of :func:`gate_a`; ``to_dict`` / ``to_json`` / ``table`` give plain forms."""

    declared: dict
    protocols: list
    head_dims: list
    dtypes: list
    inferred: dict
    checks: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    _core = CORE_CHECKS  # the checks without which there is no verdict (a class attribute, not a field)

    @property
    def status(self) -> str:
        """:func:`ropegeo.gates.verdicts.status` over the core checks (:data:`CORE_CHECKS`)."""
        return status(self.checks, core=self._core)

    @property
    def passed(self) -> bool:
        """The status is ``"pass"``."""
        return self.status == "pass"

    @property
    def unresolved(self) -> list[Check]:
        """Core checks not measured, and checks that could not fail."""
        return [c for c in self.checks if c.passed is None and (c.name in self._core or c.inconclusive)]

    @property
    def failed(self) -> list[str]:
        """Names of the failed checks, most specific first."""
        return [c.name for c in self._failed_in_order()]

    @property
    def defects(self) -> list[str]:
        """The defect classes named by the failed checks, most specific first, without repeats.
        ``"algebra"`` (shift, composition or inverse failed) is listed only when no other class is:
        it is the symptom every specific defect also shows."""
        out = []
        for c in self._failed_in_order():
            if c.defect and c.defect not in out:
                out.append(c.defect)
        return out if out == ["algebra"] else [d for d in out if d != "algebra"]

    def check(self, name: str) -> Check:
        """The check called ``name`` (one of :data:`CHECKS`)."""
        for c in self.checks:
            if c.name == name:
                return c
        raise ValueError(f"name must be one of {', '.join(CHECKS)}, got {name!r}")

    def _failed_in_order(self) -> list[Check]:
        """Failed checks in table order, a roles defect first; when the map is not a (scaled) rotation,
        the readings that assume one go after the norm check."""
        failed = [c for c in self.checks if c.passed is False]
        roles = [c for c in failed if c.name == "roles"]
        failed = roles + [c for c in failed if c not in roles]
        readings = [c for c in failed if c.name in _ROTATION_READINGS]
        norm = [c for c in failed if c.name == "norm"]
        failed = self._ids_before_short_pass(failed)
        if not (norm and readings) or self._scaled_rotation:
            return failed
        return norm + [c for c in failed if c not in readings and c not in norm] + readings

    def _short_pass_from_ids(self) -> int | None:
        """The bound of a wrapped or clamped id table when the frequencies read are a pass that short."""
        short, pd = self.inferred.get("short_pass_frequencies"), self.inferred.get("position_defect")
        if short and pd and pd["kind"] in ("wrapped", "clamped") and pd["boundary"] <= short:
            return pd["boundary"]
        return None

    def _ids_before_short_pass(self, failed: list[Check]) -> list[Check]:
        """The context check moved ahead of the frequencies when :meth:`_short_pass_from_ids` holds."""
        names = [c.name for c in failed]
        if "context" not in names or "frequencies" not in names or self._short_pass_from_ids() is None:
            return failed
        ctx_check = failed[names.index("context")]
        rest = [c for c in failed if c is not ctx_check]
        i = [c.name for c in rest].index("frequencies")
        return rest[:i] + [ctx_check] + rest[i:]

    @property
    def _scaled_rotation(self) -> bool:
        """``norm`` found one scale for every vector (``inferred["norm_scale"]``): angles read true."""
        return self.inferred.get("norm_scale") is not None

    @property
    def diagnoses(self) -> list[str]:
        """The diagnosis of every failed check, in the order of :attr:`failed` (readings of a map
        that is not a rotation marked inconclusive)."""
        failed = [c for c in self.checks if c.passed is False]
        inconclusive = any(c.name == "norm" for c in failed) and not self._scaled_rotation
        bound = self._short_pass_from_ids()
        why = ("" if bound is None else f" (the position ids the module receives stay below {bound:,}, the position-id "
               "defect above, so it never sees a longer pass)")
        return [f"{c.diagnosis} (read as if the map were a rotation, which it is not: inconclusive)"
                if inconclusive and c.name in _ROTATION_READINGS else
                c.diagnosis + why if c.name == "frequencies" else c.diagnosis for c in self._failed_in_order()]

    @property
    def diagnosis(self) -> str:
        """The leading diagnosis, else why the report is inconclusive, else the one-line verdict."""
        d = self.diagnoses
        if d:
            return d[0]
        if self.unresolved:
            return "inconclusive: " + "; ".join(f"{c.name} {c.diagnosis.removeprefix('not measured: ')}"
                                                if c.inconclusive else
                                                f"{c.name} not measured ({c.diagnosis.removeprefix('not measured: ')})"
                                                for c in self.unresolved)
        return verdict(self.checks)

    def to_dict(self) -> dict:
        return {"status": self.status, "passed": self.passed, "failed": self.failed, "defects": self.defects,
                "diagnosis": self.diagnosis, "declared": plain(self.declared), "protocols": self.protocols,
                "head_dims": self.head_dims, "dtypes": self.dtypes, "inferred": plain(self.inferred),
                "checks": [c.to_dict() for c in self.checks], "notes": self.notes, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, d: dict) -> "GateAReport":
        """Invert ``to_dict``."""
        return cls(declared=d["declared"], protocols=d["protocols"], head_dims=d["head_dims"], dtypes=d["dtypes"],
                   inferred=d["inferred"], checks=[Check.from_dict(c) for c in d["checks"]], notes=list(d["notes"]),
                   seconds=d["seconds"])

    def table(self, passing_sizes: bool = True, legend: bool = False) -> str:
        """One line per check, the precision found, then the diagnoses (``passing_sizes=False``: a
        passing check shows only its tolerance; ``legend``: how to read the rows)."""
        inf = self.inferred
        lines = [f"Gate A: {self.status.upper()}  (protocols: {', '.join(self.protocols)}; "
                 f"head dims {', '.join(map(str, self.head_dims))}; inputs {', '.join(self.dtypes)}; "
                 f"positions up to {self.declared.get('max_position', 0):,})"]
        if inf.get("data_dtype"):
            have, res = inf.get("phase_precision", "not measured"), inf.get("phase_resolution")
            if have in PRECISION_LIMIT and isinstance(res, float) and res > PRECISION_LIMIT[have]:
                have = f"finer than the {inf['data_dtype']} data can show ({res:.0e})"
            seen = inf.get("data_rounding")
            seen = f"; measured {seen['dtype']}: a precision finding" if seen else ""
            lines.append(f"  data judged at: {inf['data_dtype']} (the {inf.get('data_dtype_source', '?')}{seen})   "
                         f"angle precision: {have}")
        width = max(len(n) for n in CHECKS)
        for c in self.checks:
            mark = ("cannot fail" if c.inconclusive else "skip") if c.passed is None else ("pass" if c.passed else "FAIL")
            size = "" if c.passed is None else f"  {c.violation:.2e} (tol {c.tolerance:.1e})"
            if c.passed and not passing_sizes:
                size = f"  (tol {c.tolerance:.1e})"
            lines.append(f"  {c.name:<{width}}  {mark}{size}")
        if legend:
            lines.append(_legend(self.checks))
        lines.append("diagnosis:")
        for c in self.checks:
            if c.passed is False:
                lines.append(f"  - {c.name}: {c.diagnosis}")
        if self.status != "fail":
            lines.append(f"  {self.diagnosis}")
        for c in self.checks:
            if c.passed is None and c not in self.unresolved:
                lines.append(f"  (not measured {c.name}: {c.diagnosis.removeprefix('not measured: ')})")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def _legend(checks) -> str:
    """How to read the rows of :meth:`GateAReport.table` (and what a zero tolerance means)."""
    text = ("  (each row: the largest violation found, then the tolerance it must not exceed, set by the "
            "precision read")
    exact = [c.name for c in checks if c.passed is not None and c.tolerance == 0]
    if exact:
        text += (f"; tol 0 marks an exact check ({', '.join(exact)}): its reading counts defects found "
                 "(misplaced coordinates, a wrapped, clamped or refused position), so it passes at 0 only")
    return text + ")"


def _as_manifest(manifest) -> RopeManifest:
    """A RopeManifest from a manifest, a config dict, a path or a shipped model name."""
    if isinstance(manifest, dict):
        return read_config(manifest)
    if isinstance(manifest, RopeManifest):
        return manifest
    if not isinstance(manifest, str) and not hasattr(manifest, "__fspath__"):
        raise ValueError("manifest must be a RopeManifest, a config dict, a config.json path or a "
                         f"shipped model name, got {type(manifest).__name__}")
    return resolve(manifest, option="manifest")


def _from_manifest(manifest, target_length):
    """Declared fields from a manifest (or a config dict, path or shipped name)."""
    manifest = _as_manifest(manifest)
    # the context probed is the one the frequencies are formed for (LongRoPE's long factors and
    # dynamic NTK's stretch past the original length, as a forward pass of that length uses them)
    seq = target_length or manifest.target_length or manifest.max_position_embeddings
    out = dict(head_dim=manifest.head_dim, base=manifest.base, rotary_dim=manifest.rotary_dim,
               pairing=manifest.pairing, phase_dtype=manifest.phase_dtype, max_position=seq,
               attention_factor=float(manifest.attention_at(seq)),
               extra_sizes=tuple(s for s in (manifest.max_position_embeddings,
                                             manifest.original_max_position_embeddings) if s),
               pairing_width=manifest.pairing_width)
    out["notes"] = []
    if manifest.logit_scale != 1.0:
        out["notes"].append(f"the configuration's attention also multiplies its softmax scale by "
                            f"{manifest.logit_scale:.6g} (DeepSeek's mscale_all_dim), outside the rotary code: Gate A "
                            "audits cos and sin only (the factor they carry here is "
                            f"{out['attention_factor']:.6g})")
    if manifest.scaling is not None:
        out["theta"] = manifest.theta_at(seq)
        # dynamic NTK's threshold is the block's length (transformers: max_position_embeddings)
        short = manifest.original_max_position_embeddings or manifest.scaling.original_max_position_embeddings
        if manifest.scaling.rule == "dynamic" and short and seq > short:
            out["pass_length"] = seq
            out["short_run"] = (short, manifest.theta_at(short))
        if manifest.scaling.rule in ("longrope", "dynamic") and short and seq > short:
            # what the same module rotates with when called on a short run (no long prompt in view)
            out["alt_theta"] = (f"the configuration's frequencies for a forward pass of at most {short:,} tokens "
                                f"({manifest.scaling.rule}: a module called on a short run picks these; audit them "
                                f"with --target-length {short}, or call the module as within a pass of "
                                f"{seq:,} tokens)", manifest.theta_at(short), short)
    out["name"] = manifest.name
    return out


def _dtype_arg(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or value not in UNIT:
        raise ValueError(f"{name} must be one of {', '.join(UNIT)}, got {value!r}")
    return value


def _probe_dims(fn, head_dim, rng, only_declared=False):
    """The head widths the implementation accepts (the first read in detail), output orders learnt."""
    dims = _accepted_dims(fn, head_dim, rng, only_declared)
    for d in dims:
        with contextlib.suppress(Refused):  # the identity probe refused: the checks report what they can
            fn.learn_order(d)
    return dims


def _accepted_dims(fn, head_dim, rng, only_declared):
    def probe(d):
        try:
            fn(rng.normal(size=(3, d)), np.arange(3))
            return None
        except Bad as exc:
            return GateAError(str(exc))
        except Refused as exc:  # the implementation refuses this head dim
            return exc.original

    if head_dim is not None:
        err = probe(head_dim)
        if isinstance(err, GateAError):
            raise err
        if err is not None:
            raise GateAError(f"the implementation failed on x of shape (3, {head_dim}) at positions 0..2: "
                             f"{type(err).__name__}: {err}")
        if only_declared:  # a configuration fixes the width: the model never sees another
            return [head_dim]
        return [head_dim] + [d for d in _HEAD_DIMS if d != head_dim and probe(d) is None][:2]
    results = {d: probe(d) for d in _HEAD_DIMS}
    dims = [d for d, e in results.items() if e is None]
    if not dims:
        bad = [e for e in results.values() if isinstance(e, GateAError)]
        if bad:
            raise bad[0]
        first = next(iter(results.values()))
        raise GateAError(f"the implementation accepted none of the head dims {list(_HEAD_DIMS)} "
                         f"(for example {type(first).__name__}: {first}); pass head_dim")
    small = [d for d in dims if d <= 128]
    primary = small[-1] if small else dims[0]
    return [primary] + [d for d in dims if d != primary][:2]


def _run_checks(ctx, seed: int) -> list[Check]:
    """Every check of the table, each on its own random stream; contract breaks become failures."""
    out = []
    for i, (name, protocol, _, body) in enumerate(_TABLE):
        rng = np.random.default_rng([seed, i])
        try:
            c = body(ctx, rng)
        except Bad as exc:
            c = Check(name, False, float("inf"), 0.0, str(exc), protocol, "contract")
        except Refused as exc:  # the implementation refused this probe
            c = Check.skipped(name, f"not measured: the implementation refused the probe ({exc})", protocol)
        out.append(c)
    return out


#: Where the declared attention factor is applied: on cos and sin, or on the logits (its square).
ATTENTION_FACTOR_IN = ("rotation", "softmax")


def _refuse_conflicts(m: dict, **given) -> None:
    """Refuse, by name, a plain declaring argument (``None``: not given) that contradicts the manifest's."""

    def same(a, b) -> bool:
        if a is None or b is None:
            return a is b
        if isinstance(a, str) or isinstance(b, str):
            return a == b
        return isinstance(a, numbers.Real) and not isinstance(a, bool) and isinstance(b, numbers.Real) and a == b

    for key, val in given.items():
        if val is None or (key in m and same(val, m[key])):
            continue
        if key in ("scale", "theta"):
            raise ValueError(f"{key} conflicts with the manifest, which declares the frequencies itself: drop {key} "
                             "or drop the manifest")
        raise ValueError(f"{key}={val!r} conflicts with the manifest, which declares {key}={m[key]!r}: drop {key} "
                         "or drop the manifest")


def _validated(*, head_dim, base, pairing, rotary_dim, scale, theta, phase_dtype, dtype, max_position,
               attention_factor, manifest, target_length, seed, attention_factor_in="rotation", operator=None) -> dict:
    """The declaration of :func:`gate_a`, from its arguments, an operator or a manifest, validated once."""
    extra_sizes, name, alt_theta, notes, m = (), None, None, [], {}
    if not isinstance(attention_factor_in, str) or attention_factor_in not in ATTENTION_FACTOR_IN:
        raise ValueError(f"attention_factor_in must be one of {', '.join(ATTENTION_FACTOR_IN)}, "
                         f"got {attention_factor_in!r}")
    if target_length is not None:
        if manifest is None:
            raise ValueError("target_length applies with a manifest (or --config) only")
        target_length = v.length("target_length", target_length, minimum=2)
    if manifest is not None:
        if operator is not None:
            raise ValueError("give operator or manifest (which declares its operator), not both")
        m = _from_manifest(manifest, target_length)
        _refuse_conflicts(m, head_dim=head_dim, base=base, pairing=pairing, rotary_dim=rotary_dim, scale=scale,
                          theta=theta, phase_dtype=phase_dtype)
        head_dim, base, rotary_dim, pairing = m["head_dim"], m["base"], m["rotary_dim"], m["pairing"]
        phase_dtype, extra_sizes, name = m["phase_dtype"], m["extra_sizes"], m["name"]
        notes = list(m["notes"])
        if attention_factor is not None:  # declared over the configuration's (e.g. a reading ropegeo lacks)
            attention_factor = v.real("attention_factor", attention_factor, greater_than=0.0)
            if attention_factor != m["attention_factor"]:
                notes.append(f"attention factor {attention_factor:.6g} declared in place of the configuration's "
                             f"{m['attention_factor']:.6g}")
        else:
            attention_factor = m["attention_factor"]
        theta = m.get("theta", theta)
        alt_theta = m.get("alt_theta")
        if max_position is None:
            max_position = m["max_position"]
    op, attention_factor = _declared_operator(operator, attention_factor, head_dim=head_dim, base=base,
                                              pairing=pairing, rotary_dim=rotary_dim, scale=scale, theta=theta,
                                              phase_dtype=phase_dtype)
    dtype = _dtype_arg("dtype", dtype, allow_none=True)
    max_position = DEFAULT_MAX_POSITION if max_position is None else v.length("max_position", max_position, minimum=16)
    if max_position > MAX_POSITION:
        raise ValueError(f"max_position must be at most {MAX_POSITION:,}, got {max_position:,}")
    seed = v.integer("seed", seed, minimum=0)
    return dict(operator=op, head_dim=head_dim if operator is None else op.head_dim,
                rotary_dim=rotary_dim if operator is None else op.rotary_dim, dtype=dtype, max_position=max_position,
                attention_factor=attention_factor, seed=seed, extra_sizes=extra_sizes, name=name, alt_theta=alt_theta,
                notes=notes, attention_factor_in=attention_factor_in, pass_length=m.get("pass_length"),
                short_run=m.get("short_run"), pairing_width=m.get("pairing_width"))


def _declared_operator(operator, attention_factor, **plain) -> tuple[RotaryOperator, float]:
    """The declared operator (built at the widest head when none is declared) and attention factor."""
    if operator is not None:
        op = RotaryOperator.coerce(operator, **plain)
        if op.sections is not None:
            raise ValueError("Gate A audits one position axis: operator must have no sections")
        if attention_factor is None:
            attention_factor = op.attention_at(None)
        if op.scaling is not None or op.attention_factor is not None:
            op = RotaryOperator(head_dim=op.head_dim, pairing=op.pairing, base=op.base, theta=op.theta,
                                scale=op.scale, phase_dtype=op.phase_dtype)
    else:
        given = dict(plain, base=10_000.0 if plain["base"] is None else plain["base"],
                     phase_dtype=_dtype_arg("phase_dtype", "float32" if plain["phase_dtype"] is None
                                            else plain["phase_dtype"]))
        width = given["head_dim"]
        if width is None:
            given["head_dim"] = MAX_AUDITED_HEAD_DIM
        elif isinstance(width, numbers.Real) and not isinstance(width, bool) and width > MAX_AUDITED_HEAD_DIM:
            raise ValueError(f"head_dim must be at most {MAX_AUDITED_HEAD_DIM}, got {width}")
        op = RotaryOperator.coerce(**given)
    if op.head_dim > MAX_AUDITED_HEAD_DIM:
        raise ValueError(f"head_dim must be at most {MAX_AUDITED_HEAD_DIM}, got {op.head_dim}")
    if not op.scale > 0:
        raise ValueError(f"scale must be greater than 0, got {op.scale:.10g}")
    if op.theta_given is not None and min(op.theta_given) <= 0:
        raise ValueError("theta must be a non-empty 1-D array of positive frequencies")
    attention_factor = 1.0 if attention_factor is None else attention_factor
    return op, v.real("attention_factor", attention_factor, greater_than=0.0, minimum=1 / MAX_ATTENTION_FACTOR,
                      maximum=MAX_ATTENTION_FACTOR)


def gate_a(impl, *, operator: RotaryOperator | None = None, head_dim: int | None = None, base: float | None = None,
           pairing: str | None = None, rotary_dim: int | None = None, scale: float | None = None, theta=None,
           phase_dtype: str | None = None, dtype: str | None = None, max_position: int | None = None,
           attention_factor: float | None = None, manifest=None, target_length: int | None = None, seed: int = 0,
           attention_factor_in: str = "rotation", mrope_section=None, mrope_interleaved: bool = False) -> GateAReport:
    """Audit a rotary implementation against the operator it declares.

    The declaration is ``operator`` or its fields (as in :func:`ropegeo.rotation.apply_rope`;
    ``phase_dtype``: the coarsest angle precision accepted, default float32), or a ``manifest``
    (config dict, path or shipped name; ``target_length`` picks the frequencies of a dynamic rule;
    ``mrope_section``/``mrope_interleaved`` go to :func:`ropegeo.gates.a.axes.gate_a_axes`).
    Without ``head_dim`` (at most 1,024) the widths 8 .. 256 the callable accepts are probed.
    ``dtype`` is the data's precision (default: that of the arrays returned); ``max_position`` the
    context probed (default 131,072); ``attention_factor`` (1e-3 to 1e3) sits in the ``"rotation"``
    (cos and sin) or the ``"softmax"`` (``attention_factor_in``).

    Raises :class:`GateAError` (a ``ValueError``) when ``impl`` breaks the calling contract, and a
    ``ValueError`` naming a bad declared argument.

    Examples
    --------
    >>> from ropegeo.rotation import apply_rope
    >>> report = gate_a(lambda x, p: apply_rope(x, p, pairing="half"), head_dim=32, pairing="half",
    ...                 max_position=8192)
    >>> report.passed, report.diagnosis
    (True, 'every measured check passed; not measured: roles, values, decoding')
    """
    axes_report = _multi_axis(dict(locals()))  # the parameters as given; M-RoPE goes to gate_a_axes
    if axes_report is not None:
        return axes_report
    t0 = time.perf_counter()
    decl = _validated(operator=operator, head_dim=head_dim, base=base, pairing=pairing, rotary_dim=rotary_dim,
                      scale=scale, theta=theta, phase_dtype=phase_dtype, dtype=dtype, max_position=max_position,
                      attention_factor=attention_factor, manifest=manifest, target_length=target_length, seed=seed,
                      attention_factor_in=attention_factor_in)
    in_softmax = decl["attention_factor_in"] == "softmax"
    fn = Impl(impl, 1.0 if in_softmax else decl["attention_factor"])
    ctx, declared = _context(fn, decl, only_declared=manifest is not None)
    return _report(ctx, fn, declared, _run_checks(ctx, decl["seed"]), t0)


#: The multi-axis gate, registered by :mod:`ropegeo.gates.a.axes` on import: "gate", "declared", "check".
MULTI_AXIS: dict = {}
_AXES_ARGS = ("mrope_section", "mrope_interleaved")  # the multi-axis gate validates these


def _multi_axis(arguments: dict):
    """:func:`ropegeo.gates.a.axes.gate_a_axes`'s report when the arguments declare M-RoPE, else None."""
    if arguments["mrope_section"] is None and not arguments["mrope_interleaved"] and \
            not MULTI_AXIS["declared"](arguments["manifest"]):  # False for no manifest
        return None
    if arguments.pop("operator", None) is not None:
        raise ValueError("operator: a RotaryOperator declares one axis; declare M-RoPE with mrope_section "
                         "or a manifest")
    return MULTI_AXIS["gate"](**arguments)


def check_declaration(**options) -> None:
    """Raise the ``ValueError`` :func:`gate_a` would for these keyword arguments, calling nothing.

    Examples
    --------
    >>> check_declaration(head_dim=64, pairing="half")
    >>> check_declaration(head_dim=7)
    Traceback (most recent call last):
    ...
    ValueError: head_dim must be an even integer of at least 2, got 7
    """
    params = inspect.signature(gate_a).parameters
    unknown = [k for k in options if k not in params or k == "impl"]
    if unknown:
        raise ValueError(f"{unknown[0]} is not an argument of gate_a")
    axes = {k: options.pop(k) for k in _AXES_ARGS if k in options}
    if any(val not in (None, False) for val in axes.values()):
        MULTI_AXIS["check"](**axes, **options)
        return
    _validated(**{**{k: p.default for k, p in params.items() if k not in ("impl", *_AXES_ARGS)}, **options})


def _context(fn, decl: dict, *, only_declared: bool):
    """The checks' context and the declared operator's record."""
    op, head_dim, max_position, attention_factor, seed = (decl[k] for k in ("operator", "head_dim", "max_position",
                                                                             "attention_factor", "seed"))
    in_softmax = decl["attention_factor_in"] == "softmax"
    before = None
    if decl["pass_length"]:  # dynamic NTK: read a short run first, before any long pass can grow a cache
        before = short_run_reading(fn, head_dim, decl["short_run"][0], max_position)
        fn.pass_length = decl["pass_length"]
    dims = _probe_dims(fn, head_dim, np.random.default_rng([seed, len(_TABLE)]), only_declared=only_declared)
    if dims[0] != op.head_dim:  # the probed width (none was declared)
        op = op.with_(head_dim=dims[0], rotary_dim=decl["rotary_dim"])
    ctx = Ctx(fn, operator=op, dims=dims, data_dtype=decl["dtype"], max_position=max_position,
              extra_sizes=decl["extra_sizes"], alt_theta=decl["alt_theta"])
    ctx.notes.extend(decl["notes"])
    ctx.pairing_width = decl["pairing_width"] or op.rotary_dim  # Gemma 4's proportional RoPE: the whole head
    ctx.softmax_factor = attention_factor if in_softmax else None
    if in_softmax and attention_factor != 1.0:
        ctx.notes.append(f"attention factor {attention_factor:.6g} declared in the softmax: the attention must multiply "
                         f"its logits by {attention_factor ** 2:.6g}, and the rotation keep unit length (checked)")
    if decl["pass_length"]:
        ctx.short_run = (*decl["short_run"], before)
        ctx.notes.append(short_run_note(decl["pass_length"], decl["short_run"][0]))
    declared = {"head_dim": op.head_dim, "rotary_dim": op.rotary_dim, "base": op.base, "pairing": op.pairing,
                "scale": op.scale, "phase_dtype": op.phase_dtype, "dtype": decl["dtype"], "max_position": max_position,
                "attention_factor": attention_factor, "attention_factor_in": decl["attention_factor_in"],
                "theta": None if op.theta_given is None else list(op.theta_given)}
    if decl["pairing_width"]:
        declared["pairing_width"] = decl["pairing_width"]
    if decl["name"]:
        declared["model"] = decl["name"]
    return ctx, declared


def _report(ctx, fn, declared: dict, checks: list, t0: float) -> GateAReport:
    """The report of a finished run: what was inferred, the protocols met, the notes."""
    inferred = dict(ctx.inferred)
    lay = inferred.get("layout")
    if lay is not None:
        inferred["pairing"] = lay["pairing"]
        inferred["rotary_dim"] = lay["rotary_dim"]
    if ctx.position_defect is not None:
        inferred["position_defect"] = {k: ctx.position_defect[k] for k in ("kind", "boundary")}
    protocols = ["callable"] + (["role"] if fn.role else []) + (["decoder"] if fn.decoder else [])
    notes = list(dict.fromkeys(ctx.notes))
    if fn.order:
        inferred["output_order"] = {int(w): [int(i) for i in o] for w, o in fn.order.items()}
        notes.append("the implementation returns the coordinates in another order (position 0 gives a permutation, "
                     "not the identity, e.g. interleaved pairs written half-split); queries and keys are reordered "
                     "alike, so scores are unchanged: the checks read the output in the input's order")
    if fn.torch is not None:  # pragma: no cover - torch path
        notes.append("the implementation was called with torch tensors")
    return GateAReport(declared=declared, protocols=protocols, head_dims=ctx.dims, dtypes=["float64", "float32"],
                       inferred=inferred, checks=checks, notes=notes, seconds=time.perf_counter() - t0)


def resolve_target(target: str):
    """Import ``MODULE:ATTR[.ATTR]`` (a class is built without arguments); ValueError otherwise."""
    if not isinstance(target, str) or target.count(":") != 1 or not all(target.split(":")):
        raise ValueError(f"target must look like MODULE:FUNCTION (for example mypkg.rope:apply), got {target!r}")
    module_name, attr = target.split(":")
    try:
        obj = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # an import error (even sys.exit) is the user's input
        raise ValueError(f"target: cannot import module {module_name!r} ({type(exc).__name__}: {exc})") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"target: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, type):
        try:
            obj = obj()
        except (Exception, SystemExit) as exc:
            raise ValueError(f"target: the class {attr!r} cannot be built without arguments ({exc})") from None
    return obj
