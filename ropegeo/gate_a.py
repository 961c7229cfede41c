"""Gate A: does a rotary implementation realise the operator it claims?

:func:`gate_a` takes any rotary implementation and measures, numerically, the algebra RoPE promises
(every query-key score survives a global shift, rotations compose, invert and keep norms), then
reads off what the implementation actually does (which coordinates rotate together, which pass
through, which frequencies and in which precision) and compares it with what was declared.

Three protocols, each opting in to more checks:

``callable``
    ``f(x, positions) -> rotated x`` with ``x`` of shape ``(seq, head_dim)`` and integer
    ``positions`` of shape ``(seq,)``. Checks: ``norm``, ``shift``, ``composition``, ``inverse``,
    ``layout``, ``frequencies``, ``precision``.
``role``
    the callable also accepts a keyword ``role`` (``"query"``, ``"key"`` or ``"value"``).
    Adds ``roles`` (queries and keys rotated alike, scaling included) and ``values`` (values pass
    through unrotated).
``decoder``
    the object also has ``prefill(keys, values)`` (raw prompt keys and values, shape
    ``(n, head_dim)``; the implementation rotates and caches them with its own position
    bookkeeping) and ``decode_step(query, key, value) -> (rotated_query, cached_keys,
    cached_values)`` (raw vectors of the next token, shape ``(head_dim,)``; returns the rotated
    query, shape ``(head_dim,)``, and the whole cache after appending, shapes ``(n + 1, head_dim)``).
    Adds ``decoding``: the scores of each decoded query against the cache equal those of the
    full-sequence computation.

Arrays are numpy. A callable written for PyTorch tensors is retried with tensors when torch is
importable (duck typed, never imported otherwise); that path is small and untested here.
"""

from __future__ import annotations

import inspect
import json
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from . import _validate as v
from .frequencies import frequencies, resolve_rotary_dim

__all__ = ["gate_a", "GateAReport", "Check", "GateAError", "CHECKS", "infer_layout"]

#: Every check, the protocol it needs, and what it asks.
CHECKS = {
    "norm": ("callable", "rotation keeps the norm of every vector"),
    "shift": ("callable", "every query-key score is unchanged when both positions shift by the same amount"),
    "composition": ("callable", "rotating by a then by b equals rotating by a + b"),
    "inverse": ("callable", "rotating by a then by -a gives the input back"),
    "layout": ("callable", "the coordinates that rotate together (and those that pass through) are the declared ones"),
    "frequencies": ("callable", "each pair turns at the declared frequency"),
    "precision": ("callable", "angles are formed at least as precisely as declared"),
    "roles": ("role", "queries and keys are rotated by the same operator (scaling applied to both)"),
    "values": ("role", "values pass through unrotated"),
    "decoding": ("decoder", "decoding with a KV cache gives the scores of the full-sequence computation"),
}
# Order in which diagnoses are listed: the specific ones first, the symptoms after.
_PRIORITY = ("layout", "frequencies", "precision", "roles", "values", "decoding", "norm", "shift", "composition", "inverse")

_HEAD_DIMS = (8, 16, 32, 64, 128, 256)
#: Widest head Gate A probes: its probes build head_dim x head_dim inputs per position (about
#: 0.5 GiB at 1,024).
MAX_HEAD_DIM = 1024
_SMALL_SHIFTS = (1, 5, 17)
_LARGE_SHIFTS = (4096, 65_536, 1_000_000)
_LAYOUT_POSITIONS = (1, 2, 7, 300, 2047)  # within a 2,048-row cos/sin table
_PRECISION_POSITIONS = (3, 37, 101, 419, 1001)
# unit roundoff of each working precision
_UNIT = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
# Largest relative angle error (90th percentile over pairs and positions) accepted for a declared
# phase precision; also the boundaries used to name the precision an implementation has. Measured
# values sit near one or two unit roundoffs (float32 ~1.2e-7, float16 ~3.3e-4, bfloat16 ~3.6e-3),
# so each limit lies about halfway (on a log scale) to the next coarser format.
_PRECISION_LIMIT = {"float64": 1e-12, "float32": 1e-5, "float16": 1.1e-3, "bfloat16": 3e-2}
_SAFETY = 16.0  # margin over the first-order rounding bound in every tolerance
_BATCH = 16


class GateAError(ValueError):
    """The object under test breaks the calling contract (not a finding about RoPE)."""


class _Bad(Exception):
    """An implementation returned something unusable during a check."""


class _Refused(Exception):
    """The implementation raised on a probe: it refuses that input.

    Only exceptions raised inside the implementation are wrapped, so an error in ropegeo's own
    probing (a bug, or memory) propagates instead of being reported as a refusal.
    """

    def __init__(self, exc: BaseException):
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.original = exc


@dataclass(frozen=True)
class Check:
    """One Gate A check.

    Attributes
    ----------
    name : str
        One of :data:`CHECKS`.
    passed : bool or None
        ``None`` when the check was skipped (the implementation does not offer the protocol).
    violation : float
        Size of the worst violation (relative: scores over ``|q| |k|``, vectors over ``|x|``;
        for ``layout`` the number of misplaced coordinates); ``nan`` when skipped.
    tolerance : float
        The largest violation accepted, derived from dtype and position (see :func:`gate_a`).
    diagnosis : str
        Plain words: what is wrong, or what was verified.
    protocol : str
        ``"callable"``, ``"role"`` or ``"decoder"``.
    """

    name: str
    passed: bool | None
    violation: float
    tolerance: float
    diagnosis: str
    protocol: str


@dataclass
class GateAReport:
    """The result of :func:`gate_a`; ``to_dict`` / ``to_json`` / ``table`` give plain forms."""

    declared: dict
    protocols: list
    head_dims: list
    dtypes: list
    inferred: dict
    checks: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        """True when no check failed (skipped checks do not count)."""
        return all(c.passed is not False for c in self.checks)

    @property
    def failed(self) -> list[str]:
        """Names of the failed checks, most specific first."""
        return [c.name for c in self._ordered() if c.passed is False]

    def check(self, name: str) -> Check:
        """The check called ``name``."""
        for c in self.checks:
            if c.name == name:
                return c
        raise ValueError(f"name must be one of {', '.join(CHECKS)}, got {name!r}")

    def _ordered(self) -> list[Check]:
        return sorted(self.checks, key=lambda c: _PRIORITY.index(c.name))

    @property
    def diagnoses(self) -> list[str]:
        """The diagnosis of every failed check, most specific first."""
        return [c.diagnosis for c in self._ordered() if c.passed is False]

    @property
    def diagnosis(self) -> str:
        """The leading diagnosis, or a one-line pass verdict."""
        d = self.diagnoses
        if d:
            return d[0]
        unmeasured = [c.name for c in self.checks if c.passed is None and c.diagnosis.startswith("not measured")]
        if unmeasured:
            return f"every measured check passed; not measured: {', '.join(unmeasured)}"
        return "every check passed"

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "failed": self.failed,
            "diagnosis": self.diagnosis,
            "declared": self.declared,
            "protocols": self.protocols,
            "head_dims": self.head_dims,
            "dtypes": self.dtypes,
            "inferred": _plain(self.inferred),
            "checks": [
                {**asdict(c), "violation": c.violation if math.isfinite(c.violation) else None}
                for c in self.checks
            ],
            "notes": self.notes,
            "seconds": self.seconds,
        }

    def to_json(self, **kwargs) -> str:
        kwargs.setdefault("default", _json_default)
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """A readable report: one line per check, then the diagnoses."""
        lines = [
            f"Gate A: {'PASS' if self.passed else 'FAIL'}  (protocols: {', '.join(self.protocols)}; "
            f"head dims {', '.join(map(str, self.head_dims))}; dtypes {', '.join(self.dtypes)})"
        ]
        width = max(len(n) for n in CHECKS)
        for c in self.checks:
            mark = "skip" if c.passed is None else ("pass" if c.passed else "FAIL")
            size = "" if c.passed is None else f"  {c.violation:.2e} (tol {c.tolerance:.1e})"
            lines.append(f"  {c.name:<{width}}  {mark}{size}")
        lines.append("diagnosis:")
        for c in self.checks:
            if c.passed is False:
                lines.append(f"  - {c.name}: {c.diagnosis}")
        if self.passed:
            lines.append(f"  {self.diagnosis}")
        for c in self.checks:
            if c.passed is None:
                lines.append(f"  (skipped {c.name}: {c.diagnosis})")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _plain(o):
    """A JSON-safe copy: numpy scalars to Python, non-finite floats to None."""
    if isinstance(o, dict):
        return {k: _plain(val) for k, val in o.items()}
    if isinstance(o, (list, tuple)):
        return [_plain(val) for val in o]
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        return float(o) if math.isfinite(o) else None
    return o


def _json_default(o):
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return None if not np.isfinite(o) else float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


# --------------------------------------------------------------------------- calling the object
def _accepts_role(obj) -> bool:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return False
    params = sig.parameters
    return "role" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class _Impl:
    """Calls the implementation with validation of what comes back."""

    def __init__(self, obj):
        if not callable(obj):
            raise GateAError(
                f"implementation must be a callable f(x, positions) -> rotated x, got {type(obj).__name__}"
            )
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            sig = None
        if sig is not None:
            try:
                sig.bind(np.zeros((1, 2)), np.zeros(1))
            except TypeError:
                raise GateAError(
                    f"implementation must accept two positional arguments (x, positions); its signature is {sig}"
                ) from None
        self.obj = obj
        self.role = _accepts_role(obj)
        self.decoder = callable(getattr(obj, "prefill", None)) and callable(getattr(obj, "decode_step", None))
        self.torch = None  # the torch module once the implementation is found to need tensors
        self.out_unit = 0.0  # coarsest unit roundoff of any array returned so far (reset per check)

    def _wrap(self, a):
        if self.torch is None:
            return a
        return self.torch.from_numpy(np.ascontiguousarray(a))  # untested: torch is optional

    @staticmethod
    def _unwrap(out, what):
        if hasattr(out, "detach") and hasattr(out, "cpu") and not isinstance(out, np.ndarray):
            out = out.detach().cpu().float().numpy() if str(getattr(out, "dtype", "")) == "torch.bfloat16" \
                else out.detach().cpu().numpy()  # untested torch path
        try:
            arr = np.asarray(out)
        except Exception:  # pragma: no cover - exotic returns
            raise _Bad(f"{what} returned {type(out).__name__}, not an array") from None
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype.name == "bfloat16"):
            raise _Bad(f"{what} returned {type(out).__name__} of dtype {arr.dtype}, not an array of real numbers")
        if np.iscomplexobj(arr):
            raise _Bad(f"{what} returned complex values; return real arrays of the input's shape")
        return arr.astype(np.float64)

    def __call__(self, x, positions, role=None):
        kwargs = {"role": role} if (role is not None and self.role) else {}
        x = np.asarray(x)
        positions = np.asarray(positions)
        with np.errstate(all="ignore"):
            try:
                try:
                    out = self.obj(self._wrap(x), self._wrap(positions), **kwargs)
                except (TypeError, AttributeError):
                    if self.torch is not None or not self._try_torch():
                        raise
                    out = self.obj(self._wrap(x), self._wrap(positions), **kwargs)
            except (Exception, SystemExit) as exc:  # sys.exit inside the implementation is a refusal too
                raise _Refused(exc) from exc
        dt = getattr(out, "dtype", None)
        self.out_unit = max(self.out_unit, _UNIT.get(str(dt).replace("torch.", ""), 0.0))
        arr = self._unwrap(out, "the implementation")
        if arr.shape != x.shape:
            raise _Bad(f"the implementation returned shape {arr.shape} for x of shape {x.shape}; it must return x's shape")
        if not np.all(np.isfinite(arr)):
            hi = int(np.max(np.abs(positions))) if positions.size else 0
            raise _Bad(f"the implementation returned NaN or infinite values (positions up to {hi:,})")
        return arr

    def _try_torch(self) -> bool:  # pragma: no cover - torch is not installed in the test env
        try:
            import torch  # noqa: PLC0415
        except ImportError:
            return False
        self.torch = torch
        return True


# --------------------------------------------------------------------------- layout and angles
def _unit(dtype: str) -> float:
    return _UNIT[dtype]


def _wrap_far(x):
    """Wrap only the angles beyond +-pi, so that small differences keep their exact value."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(np.abs(x) > np.pi, _wrap(x), x)


def _wrap(a):
    return (np.asarray(a) + np.pi) % (2 * np.pi) - np.pi


def _matrices(impl: _Impl, d: int, positions, role=None) -> np.ndarray:
    """R(p) for each p, shape (len(positions), d, d), with f(x, p) = R(p) @ x."""
    pos = np.asarray(positions, dtype=np.int64)
    eye = np.tile(np.eye(d), (pos.size, 1))
    out = impl(eye, np.repeat(pos, d), role=role)
    return out.reshape(pos.size, d, d).transpose(0, 2, 1)


def infer_layout(mats: np.ndarray, tol: float = 1e-6) -> dict:
    """Which coordinates rotate together, read off rotation matrices.

    Parameters
    ----------
    mats : numpy.ndarray, shape (k, d, d)
        The matrices ``R(p)`` of an implementation at ``k`` positions (``f(x, p) = R(p) @ x``).
    tol : float
        Entries below this are treated as zero.

    Returns
    -------
    dict
        ``pairs`` (list of ``[a, b]`` with ``a < b``, sorted by ``a``), ``passthrough`` (indices of
        coordinates left unchanged at every position), ``odd`` (coordinates that are neither),
        ``pairing`` (``"interleaved"``, ``"half"``, ``"both"`` for a single pair, where the two
        coincide, or ``"other"``), ``rotary_dim`` and
        ``offset`` (first rotating coordinate).
    """
    mats = v.finite_array("mats", mats)
    if mats.ndim != 3 or mats.shape[0] == 0 or mats.shape[1] != mats.shape[2] or mats.shape[1] == 0:
        raise ValueError(f"mats must be a non-empty stack of square matrices, shape (n, d, d), got {mats.shape}")
    tol = v.real("tol", tol, greater_than=0.0)
    d = mats.shape[-1]
    off = np.abs(mats).max(axis=0)
    off[np.arange(d), np.arange(d)] = 0.0
    coupled = (off > tol) | (off.T > tol)
    pairs, passthrough, odd = [], [], []
    for i in range(d):
        partners = np.flatnonzero(coupled[i])
        if partners.size == 0:
            if np.all(np.abs(mats[:, i, i] - 1.0) < tol):
                passthrough.append(i)
            else:
                odd.append(i)
        elif partners.size == 1 and np.flatnonzero(coupled[partners[0]]).tolist() == [i]:
            if i < partners[0]:
                pairs.append([i, int(partners[0])])
        else:
            odd.append(i)
    rot = sorted(c for p in pairs for c in p)
    r = len(rot)
    pairing = "other"
    offset = rot[0] if rot else 0
    if r and rot == list(range(offset, offset + r)):
        rel = [(a - offset, b - offset) for a, b in pairs]
        if all(b == a + 1 and a % 2 == 0 for a, b in rel):
            pairing = "interleaved"
        elif all(b == a + r // 2 for a, b in rel):
            pairing = "half"
    if r == 2 and pairing != "other":
        pairing = "both"  # one pair of neighbours: interleaved and half-split coincide
    return {"pairs": pairs, "passthrough": passthrough, "odd": odd, "pairing": pairing,
            "rotary_dim": r, "offset": int(offset)}


def _angles(mats: np.ndarray, pairs) -> np.ndarray:
    """Angle of each pair at each position, shape (k, pairs): atan2(R[b, a], R[a, a])."""
    a = np.array([p[0] for p in pairs], dtype=int)
    b = np.array([p[1] for p in pairs], dtype=int)
    return np.arctan2(mats[:, b, a], mats[:, a, a])


def _fit_schedule(theta_hat: np.ndarray, rotary_dim: int):
    """Fit ln theta_i = ln s - (2 i / r) ln B; returns (base, scale, max residual) or None."""
    th = np.abs(theta_hat)
    ok = th > 0
    if ok.sum() < 2:
        return None
    i = np.arange(th.size)[ok]
    slope, intercept = np.polyfit(i, np.log(th[ok]), 1)
    resid = float(np.max(np.abs(np.log(th[ok]) - (slope * i + intercept))))
    base = math.exp(-slope * rotary_dim / 2.0) if slope < 0 else float("nan")
    return base, math.exp(intercept), resid


def _layout_name(p: str) -> str:
    return {"interleaved": "interleaved", "half": "half-split", "both": "single"}.get(p, "irregular")


# --------------------------------------------------------------------------- the gate
def _score_rel(qa, ka, qb, kb, q, k):
    """max |<qa,ka> - <qb,kb>| / (|q| |k|) over the batch."""
    sa = np.sum(qa * ka, axis=-1)
    sb = np.sum(qb * kb, axis=-1)
    scale = np.linalg.norm(q, axis=-1) * np.linalg.norm(k, axis=-1)
    return float(np.max(np.abs(sa - sb) / scale))


def _vec_rel(a, b, ref):
    return float(np.max(np.linalg.norm(a - b, axis=-1) / np.linalg.norm(ref, axis=-1)))


def _tol(u: float, d: int, pmax: float, theta_max: float) -> float:
    """Rounding bound for unit roundoff u: output rounding ~ u sqrt(d), angle rounding ~ u p theta per side."""
    return _SAFETY * u * (math.sqrt(d) + 2.0 * pmax * max(theta_max, 1e-12))


def gate_a(
    impl,
    *,
    head_dim: int | None = None,
    base: float = 10_000.0,
    pairing: str = "interleaved",
    rotary_dim: int | None = None,
    scale: float = 1.0,
    theta=None,
    phase_dtype: str = "float32",
    manifest=None,
    seed: int = 0,
) -> GateAReport:
    """Audit a rotary implementation against the operator it declares.

    Parameters
    ----------
    impl : callable
        ``f(x, positions) -> rotated x``; optionally with a ``role`` keyword and
        ``prefill`` / ``decode_step`` methods (see the module docstring for the protocols).
        ``x`` has shape ``(seq, head_dim)`` (float64 or float32), ``positions`` shape ``(seq,)``
        (int64, not necessarily sorted, possibly negative for the inverse check).
    head_dim : int, optional
        The head width to test in detail (2 to 1,024). Default: the head widths 8 .. 256 that the
        callable accepts are probed and the largest up to 128 is used; the algebraic checks run on
        up to three of them.
    base, pairing, rotary_dim, scale, theta
        The declared operator, as in :func:`ropegeo.rotation.apply_rope` (pair ``i`` turns by
        ``scale * theta_i`` per position; ``theta`` overrides ``base``).
    phase_dtype : {"float64", "float32", "float16", "bfloat16"}
        The coarsest angle precision accepted (default float32).
    manifest : ropegeo.manifest.RopeManifest, optional
        Take every declared field from a manifest instead (its scaling rule's frequencies when
        it has one).
    seed : int
        Seed of the random vectors and positions.

    Returns
    -------
    GateAReport
        Pass/fail, violation size and tolerance of every check, diagnoses in plain words, and
        what was inferred (layout, frequency base and scale, phase precision).

    Raises
    ------
    GateAError
        (a ``ValueError``) when ``impl`` breaks the calling contract: not callable, a signature
        that cannot take ``(x, positions)``, an error or a wrong shape on ordinary input, or
        NaN at ordinary positions.
    ValueError
        For invalid declared parameters.

    Notes
    -----
    Tolerances are first-order rounding bounds times 16: with unit roundoff ``u`` of the working
    precision, a score may move by ``|q| |k| u (sqrt(d) + 2 p_max theta_max)`` (rounding of the
    output and of angles up to ``p_max theta_max`` on both sides). The working precision is the
    coarsest of the input dtype, the dtype returned and the angle precision measured by the
    ``precision`` check (capped at the declared ``phase_dtype``: an implementation coarser than
    declared is held to the declared precision, so its symptoms show too). Float32 inputs are
    tested at shifts up to 4,096 only; the large shifts (65,536 and 1,000,000) run in float64.

    The ``precision`` check fits each pair's angle against a straight line in position (robust
    to a constant origin offset) and takes the 90th percentile of the relative deviation; a
    float32 angle table measures about 1e-7, float16 about 3e-4 and bfloat16 about 4e-3.

    Checks that need the ``role`` or ``decoder`` protocol are reported as skipped
    (``passed=None``) for a plain callable, never as passed. A position an implementation refuses
    (an exception on a very large or negative position, e.g. a finite cos/sin table) is noted and
    that probe skipped; an exception on ordinary input is a :class:`GateAError`.
    """
    t0 = time.perf_counter()
    if manifest is not None:
        from .manifest import RopeManifest, read_config, resolve

        if isinstance(manifest, dict):
            manifest = read_config(manifest)
        elif not isinstance(manifest, RopeManifest):
            if not isinstance(manifest, str) and not hasattr(manifest, "__fspath__"):
                raise ValueError("manifest must be a RopeManifest, a config dict, a config.json path or a "
                                 f"shipped model name, got {type(manifest).__name__}")
            manifest = resolve(manifest)
        head_dim, base, rotary_dim = manifest.head_dim, manifest.base, manifest.rotary_dim
        pairing, phase_dtype = manifest.pairing, manifest.phase_dtype
        if manifest.scaling is not None:
            theta = manifest.theta()
    base = v.base(base)
    pairing = v.pairing(pairing)
    scale = v.real("scale", scale, greater_than=0.0)
    if not isinstance(phase_dtype, str) or phase_dtype not in _UNIT:
        raise ValueError(f"phase_dtype must be one of {', '.join(_UNIT)}, got {phase_dtype!r}")
    seed = v.integer("seed", seed, minimum=0)
    if head_dim is not None:
        head_dim = v.head_dim(head_dim, maximum=MAX_HEAD_DIM)
        resolve_rotary_dim(head_dim, rotary_dim)
    if theta is not None:
        theta = v.finite_array("theta", theta)
        if theta.ndim != 1 or theta.size == 0 or np.any(theta <= 0):
            raise ValueError(f"theta must be a non-empty 1-D array of positive frequencies, got shape {theta.shape}")
    fn = _Impl(impl)
    rng = np.random.default_rng(seed)
    notes: list[str] = []

    # ---- contract and head dims
    def probe(d):
        try:
            fn(rng.normal(size=(3, d)), np.arange(3))
            return None
        except _Bad as exc:
            return GateAError(str(exc))
        except _Refused as exc:  # the implementation refuses this head dim
            return exc.original

    if head_dim is not None:
        err = probe(head_dim)
        if err is not None:
            if isinstance(err, GateAError):
                raise err
            raise GateAError(f"the implementation failed on x of shape (3, {head_dim}) at positions 0..2: "
                             f"{type(err).__name__}: {err}")
        dims = [head_dim] + [d for d in _HEAD_DIMS if d != head_dim and probe(d) is None][:2]
        primary = head_dim
    else:
        results = {d: probe(d) for d in _HEAD_DIMS}
        bad = [e for e in results.values() if isinstance(e, GateAError)]
        dims = [d for d, e in results.items() if e is None]
        if not dims:
            if bad:
                raise bad[0]
            first = next(iter(results.values()))
            raise GateAError(f"the implementation accepted none of the head dims {list(_HEAD_DIMS)} "
                             f"(for example {type(first).__name__}: {first}); pass head_dim")
        small = [d for d in dims if d <= 128]
        primary = small[-1] if small else dims[0]
        dims = [primary] + [d for d in dims if d != primary][:2]
    d = primary
    _, rot_decl = resolve_rotary_dim(d, rotary_dim)
    theta_decl = (frequencies(d, base, rot_decl) if theta is None else theta) * scale
    if theta is not None and 2 * theta.size > d:
        raise ValueError(f"theta has {theta.size} pairs, which needs head_dim >= {2 * theta.size}, got {d}")
    if theta is not None:
        rot_decl = 2 * theta.size
    theta_max = float(theta_decl.max())
    protocols = ["callable"] + (["role"] if fn.role else []) + (["decoder"] if fn.decoder else [])
    qrole, krole = ("query", "key") if fn.role else (None, None)
    checks: dict[str, Check] = {}

    def record(name, passed, violation, tol, diagnosis):
        checks[name] = Check(name, None if passed is None else bool(passed), float(violation), float(tol),
                             diagnosis, CHECKS[name][0])

    def guarded(name, body):
        try:
            body()
        except _Bad as exc:
            record(name, False, float("inf"), 0.0, str(exc))
        except _Refused as exc:  # the implementation refused this probe (e.g. a position past its table)
            record(name, None, float("nan"), 0.0, f"not measured: the implementation refused the probe ({exc})")

    def refused(call):
        """Run call; return the exception if the implementation refuses (not a contract break)."""
        try:
            return call(), None
        except _Refused as exc:
            return None, exc.original

    # ---- norm
    def norm_check():
        worst, tol_worst, ratio = 0.0, 1.0, []
        for dd in dims:
            for dtype in ("float64", "float32"):
                x = rng.normal(size=(_BATCH, dd)).astype(dtype)
                p = rng.integers(0, 4096, size=_BATCH)
                for role in ({qrole, krole} if fn.role else {None}):
                    fn.out_unit = 0.0
                    y = fn(x, p, role=role)
                    r = np.linalg.norm(y, axis=-1) / np.linalg.norm(x.astype(np.float64), axis=-1)
                    ratio.append(float(np.median(r)))
                    viol = float(np.max(np.abs(r - 1.0)))
                    tol = _SAFETY * unit(dtype) * math.sqrt(dd)
                    if viol / tol > worst / tol_worst:
                        worst, tol_worst = viol, tol
        ok = worst <= tol_worst
        if ok:
            msg = "every rotated vector keeps its norm"
        else:
            msg = (f"rotated vectors change length (norm ratio up to {1 + worst:.4g}, median {np.median(ratio):.4g}): "
                   "the map is not a rotation; a magnitude factor (an attention temperature, a scaled cos/sin table) "
                   "is folded into it")
        record("norm", ok, worst, tol_worst, msg)

    # ---- shift invariance
    def shift_check():
        worst, tol_worst, where = 0.0, 1.0, None
        for dd in dims:
            q = rng.normal(size=(_BATCH, dd))
            k = rng.normal(size=(_BATCH, dd))
            m = rng.integers(0, 64, size=_BATCH)
            n = rng.integers(0, 64, size=_BATCH)
            for dtype in ("float64", "float32"):
                qd, kd = q.astype(dtype), k.astype(dtype)
                fn.out_unit = 0.0
                q0, k0 = fn(qd, m, role=qrole), fn(kd, n, role=krole)
                u = unit(dtype)
                shifts = _SMALL_SHIFTS + (_LARGE_SHIFTS if dtype == "float64" else _LARGE_SHIFTS[:1])
                for c in shifts:
                    res, exc = refused(lambda: (fn(qd, m + c, role=qrole), fn(kd, n + c, role=krole)))
                    if exc is not None:
                        notes.append(f"shift {c:,} skipped: the implementation refused positions near {c:,} "
                                     f"({type(exc).__name__}: {exc})")
                        continue
                    viol = _score_rel(q0, k0, res[0], res[1], q, k)
                    tol = _tol(max(u, unit(dtype)), dd, 64 + c, theta_max)
                    if viol / tol > worst / tol_worst:
                        worst, tol_worst, where = viol, tol, (c, dtype, dd)
        ok = worst <= tol_worst
        if ok:
            msg = "query-key scores survive shifts of 1 to 1,000,000 positions"
        else:
            c, dtype, dd = where
            msg = (f"shifting query and key by the same {c:,} positions changes their score by {worst:.2e} "
                   f"of |q||k| ({dtype}, head dim {dd}): the score depends on absolute position")
        record("shift", ok, worst, tol_worst, msg)

    # ---- composition and inverse
    def compose_check():
        worst, tol_worst = 0.0, 1.0
        for dd in dims:
            for dtype in ("float64", "float32"):
                x = rng.normal(size=(_BATCH, dd)).astype(dtype)
                a = rng.integers(0, 2048, size=_BATCH)
                b = rng.integers(0, 2048, size=_BATCH)
                fn.out_unit = 0.0
                two = fn(fn(x, a, role=krole).astype(dtype), b, role=krole)
                one = fn(x, a + b, role=krole)
                viol = _vec_rel(two, one, x.astype(np.float64))
                tol = _tol(unit(dtype), dd, 4096, theta_max)
                if viol / tol > worst / tol_worst:
                    worst, tol_worst = viol, tol
        ok = worst <= tol_worst
        msg = ("rotating by a then b equals rotating by a + b" if ok else
               f"rotating by a then by b differs from rotating by a + b by {worst:.2e} of |x|: "
               "the rotation is not additive in position")
        record("composition", ok, worst, tol_worst, msg)

    def inverse_check():
        x = rng.normal(size=(_BATCH, d))
        a = rng.integers(1, 4096, size=_BATCH)
        fn.out_unit = 0.0
        res, exc = refused(lambda: fn(fn(x, a, role=krole), -a, role=krole))
        if exc is not None:
            record("inverse", None, float("nan"), 0.0,
                   f"the implementation refuses negative positions ({type(exc).__name__}), so R(-a) cannot be formed")
            return
        viol = _vec_rel(res, x, x)
        tol = _tol(unit("float64"), d, 8192, theta_max)
        ok = viol <= tol
        msg = ("rotating by a then by -a gives the input back" if ok else
               f"rotating by a then by -a misses the input by {viol:.2e} of |x|: negative positions are not the inverse")
        record("inverse", ok, viol, tol, msg)


    # ---- layout, frequencies, precision (float64, primary head dim)
    inferred: dict[str, Any] = {}
    mats = {}

    def layout_check():
        mats["key"] = _matrices(fn, d, _LAYOUT_POSITIONS + _PRECISION_POSITIONS, role=krole)
        lay = infer_layout(mats["key"][: len(_LAYOUT_POSITIONS)])
        inferred["layout"] = lay
        # a declared pair that turns by a multiple of pi per position looks, at every integer
        # position, like a sign flip or the identity: no probe can see which coordinates it couples
        blind = np.all(np.abs(np.sin(np.multiply.outer(_LAYOUT_POSITIONS, theta_decl))) < 1e-9, axis=0)
        if blind.any():
            inferred["layout_blind"] = True
            i = int(np.argmax(blind))
            record("layout", None, float("nan"), 0.0,
                   f"not measured: declared pair {i} turns by {theta_decl[i]:.6g} rad, a multiple of pi, per "
                   "position, so no integer position shows which coordinates it couples")
            return
        problems, misplaced = [], 0
        r = lay["rotary_dim"]
        declared_pairs = _declared_pairs(d, rot_decl, pairing)
        misplaced = sum(1 for p in declared_pairs if p not in lay["pairs"]) * 2
        misplaced += sum(1 for p in lay["pairs"] if p not in declared_pairs) * 2
        if lay["odd"]:
            problems.append(f"coordinates {_span(lay['odd'])} are neither rotated in a pair nor passed through: "
                            "the map is not a set of independent 2-D rotations")
        if r == 0 and not lay["odd"]:
            problems.append("no coordinate rotates: the implementation returns its input unchanged")
        elif lay["pairing"] == "other" and r:
            a, b = lay["pairs"][0]
            problems.append(f"coordinates pair up irregularly (for example {a} with {b}): neither interleaved nor half-split")
        elif r and lay["pairing"] not in (pairing, "both"):
            h = r // 2
            if lay["pairing"] == "half":
                problems.append(f"coordinates i and i+{h} rotate together: half-split layout, while the declared "
                                "convention is interleaved")
            else:
                problems.append("coordinates 2i and 2i+1 rotate together: interleaved layout, while the declared "
                                "convention is half-split")
        if r and r != rot_decl:
            problems.append(f"{r} of {d} coordinates rotate, while the declared rotary dim is {rot_decl}")
        elif r and lay["offset"] != 0:
            problems.append(f"coordinates {_span(list(range(lay['offset'], lay['offset'] + r)))} rotate and "
                            f"{_span(lay['passthrough'])} pass through: the rotary slice is taken from the wrong "
                            f"end of the head (partial rotary rotates the leading {rot_decl} coordinates)")
        if not problems and misplaced:
            problems.append("the rotating pairs differ from the declared ones")
        pt = f"; coordinates {_span(lay['passthrough'])} pass through" if lay["passthrough"] else ""
        ok = not problems
        msg = (f"{_layout_name(lay['pairing'])} pairs over {r} coordinates{pt}, as declared" if ok
               else "; ".join(problems))
        record("layout", ok, misplaced + len(lay["odd"]), 0.0, msg)

    guarded("layout", layout_check)

    def freq_precision_checks():
        lay = inferred.get("layout")
        if inferred.get("layout_blind"):
            for name in ("frequencies", "precision"):
                record(name, None, float("nan"), 0.0, "not measured: the pairs could not be observed (see layout)")
            return
        if lay is None or not lay["pairs"]:
            record("frequencies", None, float("nan"), 0.0, "no rotating pair was found to measure")
            record("precision", None, float("nan"), 0.0, "no rotating pair was found to measure")
            return
        ang = _angles(mats["key"], lay["pairs"])
        npos = len(_LAYOUT_POSITIONS)
        theta_hat = _wrap(ang[1] - ang[0])  # positions 2 and 1: immune to an origin offset
        # precision: how far angles stray from a line in position
        pp = np.array(_PRECISION_POSITIONS, dtype=float)
        pred = ang[0][None, :] + (pp[:, None] - 1.0) * theta_hat[None, :]
        dev = np.abs(_wrap(ang[npos:] - pred))
        big = pp[:, None] * np.abs(theta_hat)[None, :] >= 1.0
        if not big.any():
            record("precision", None, float("nan"), 0.0,
                   f"not measured: no probed angle reaches 1 rad (positions up to {int(pp.max()):,}, fastest pair "
                   f"{float(np.abs(theta_hat).max()):.3g} rad per position), too small for rounding to show")
            stat = None
        else:
            rel = dev[big] / (pp[:, None] * np.abs(theta_hat)[None, :])[big]
            stat = float(np.quantile(rel, 0.9))
        if stat is not None:
            precision_record(stat)
        frequency_record(theta_hat)

    def precision_record(stat):
        names = [n for n in ("float64", "float32", "float16", "bfloat16") if stat <= _PRECISION_LIMIT[n]]
        have = names[0] if names else "coarser than bfloat16"
        inferred["phase_precision"] = have
        inferred["relative_phase_error"] = stat
        limit = _PRECISION_LIMIT[phase_dtype]
        ok = stat <= limit
        if ok:
            msg = f"angles are formed with relative error {stat:.1e} ({have} or better; {phase_dtype} declared)"
        else:
            where = f"the rounding of {have}" if names else "worse than bfloat16 rounding"
            msg = (f"rotation angles carry a relative error of {stat:.1e}, {where}: the angle table is formed in "
                   f"{have}, while {phase_dtype} or better is declared (an angle of 100 rad is off by about "
                   f"{100 * stat:.2g} rad)")
        record("precision", ok, stat, limit, msg)

    def frequency_record(theta_hat):
        have = inferred.get("phase_precision", phase_dtype)
        inferred["theta"] = np.abs(theta_hat).tolist()
        tol_f = max(1e-6, 4.0 * _UNIT.get(have, 2.0**-8))
        if len(theta_hat) != len(theta_decl):
            ref = (frequencies(d, base, 2 * len(theta_hat)) * scale) if theta is None else None
        else:
            ref = theta_decl
        fit = _fit_schedule(theta_hat, 2 * len(theta_hat))
        if fit is not None:
            inferred["base"], inferred["scale"], inferred["schedule_residual"] = fit
        if ref is None:
            record("frequencies", False, float("inf"), tol_f,
                   f"{len(theta_hat)} pairs rotate, but the declared frequencies have {len(theta_decl)}")
            return
        # integer positions cannot tell theta from theta + 2 pi: compare the angles modulo 2 pi
        relerr = np.abs(_wrap_far(theta_hat - ref)) / ref
        viol = float(relerr.max())
        ok = viol <= tol_f
        if ok:
            msg = f"every pair turns at its declared frequency (largest relative deviation {viol:.1e})"
        elif np.all(np.abs(_wrap_far(theta_hat + ref)) <= max(tol_f, 1e-6) * ref):
            msg = "every pair rotates the opposite way (sin enters with the other sign): a mirrored convention"
        else:
            i = int(np.argmax(relerr))
            msg = (f"pair {i} turns at {abs(theta_hat[i]):.6g} rad per position instead of the declared "
                   f"{ref[i]:.6g} (relative deviation {viol:.2e})")
            ratio = np.abs(theta_hat) / ref
            if np.ptp(ratio) <= 1e-6 * ratio.mean():
                r = float(ratio.mean())
                msg = (f"every frequency is {r:.4g} times the declared one: positions advance {r:.4g} times as "
                       "fast as declared (a position interpolation forgotten, applied twice, or applied on one "
                       "side of the declaration only)")
            elif fit is not None and fit[2] < 1e-3 and theta is None:
                b_hat, s_hat, _ = fit
                if abs(b_hat / base - 1.0) > 1e-3:
                    msg = f"the frequencies follow base {b_hat:,.6g}, while the declared base is {base:,.6g}: " + msg
            elif fit is not None and fit[2] >= 1e-3:
                msg = "the frequencies are not a geometric schedule: " + msg
        record("frequencies", ok, viol, tol_f, msg)

    try:
        freq_precision_checks()
    except _Bad as exc:
        record("frequencies", False, float("inf"), 0.0, str(exc))
        record("precision", False, float("inf"), 0.0, str(exc))
    except _Refused as exc:  # refused a probe position
        for name in ("frequencies", "precision"):
            record(name, None, float("nan"), 0.0, f"not measured: the implementation refused the probe ({exc})")

    # the working precision the algebraic checks allow: the phase precision found, unless it is
    # coarser than declared (then the declared one, so the symptoms show too)
    have = inferred.get("phase_precision")
    u_phase = _UNIT[have] if have in _UNIT and _UNIT[have] <= _UNIT[phase_dtype] else _UNIT[phase_dtype]
    inferred["working_unit_roundoff"] = u_phase

    def unit(dtype: str) -> float:
        u = max(_UNIT[dtype], fn.out_unit, u_phase)
        fn.out_unit = 0.0
        return u

    for name, body in (("norm", norm_check), ("shift", shift_check),
                       ("composition", compose_check), ("inverse", inverse_check)):
        guarded(name, body)

    # ---- roles and values
    def roles_check():
        if not fn.role:
            record("roles", None, float("nan"), 0.0,
                   "needs the role protocol; a callable without a role keyword rotates queries and keys alike "
                   "by construction")
            return
        mq = _matrices(fn, d, _LAYOUT_POSITIONS, role="query")
        mk = mats.get("key")
        if mk is None:
            mk = _matrices(fn, d, _LAYOUT_POSITIONS, role="key")
        mk = mk[: len(_LAYOUT_POSITIONS)]
        viol = float(np.max(np.abs(mq - mk)))
        tol = _tol(unit("float64"), d, max(_LAYOUT_POSITIONS), theta_max)
        if viol <= tol:
            record("roles", True, viol, tol, "queries and keys are rotated by the same operator")
            return
        lq, lk = infer_layout(mq), infer_layout(mk)
        nq = np.linalg.norm(mq[0], ord=2)
        nk = np.linalg.norm(mk[0], ord=2)
        if lq["pairs"] != lk["pairs"]:
            msg = (f"queries use the {_layout_name(lq['pairing'])} layout and keys the {_layout_name(lk['pairing'])} "
                   "one: the two sides of every score are paired differently")
        elif abs(nq / nk - 1.0) > 1e-6:
            msg = (f"queries are multiplied by {nq:.4g} and keys by {nk:.4g}: a scaling applied to one side only")
        else:
            tq = np.abs(_wrap(_angles(mq, lq["pairs"])[1] - _angles(mq, lq["pairs"])[0]))
            tk = np.abs(_wrap(_angles(mk, lk["pairs"])[1] - _angles(mk, lk["pairs"])[0]))
            ratio = tq / np.where(tk > 0, tk, 1.0)
            if np.ptp(ratio) < 1e-6 * max(1.0, abs(ratio.mean())):
                msg = (f"queries rotate at {ratio.mean():.4g} times the key frequencies: a position scaling "
                       f"(interpolation factor {ratio.mean():.4g}) is applied to queries but not to keys")
            else:
                msg = "queries and keys are rotated by different operators"
        record("roles", False, viol, tol, msg)

    def values_check():
        if not fn.role and not fn.decoder:
            record("values", None, float("nan"), 0.0, "needs the role or decoder protocol (a plain callable never sees values)")
            return
        viol, where = 0.0, ""
        x = rng.normal(size=(_BATCH, d))
        p = rng.integers(1, 4096, size=_BATCH)
        if fn.role:
            viol = _vec_rel(fn(x, p, role="value"), x, x)
            where = "values passed with role='value'"
        if fn.decoder:
            dv = _decode_values(fn, d, rng)
            if dv > viol:
                viol, where = dv, "values read back from the KV cache"
        tol = _SAFETY * unit("float64") * math.sqrt(d)
        ok = viol <= tol
        msg = ("values pass through unrotated" if ok else
               f"{where} differ from the inputs by {viol:.2e} of |v|: values are rotated by position, so the "
               "message a token carries changes with where it sits (RoPE rotates queries and keys only)")
        record("values", ok, viol, tol, msg)

    guarded("roles", roles_check)
    guarded("values", values_check)

    # ---- decoding
    def decoding_check():
        if not fn.decoder:
            record("decoding", None, float("nan"), 0.0, "needs the decoder protocol (prefill / decode_step)")
            return
        viol, tol, msg = _decode_scores(fn, d, rng, qrole, krole, theta_decl, inferred.get("layout"), unit("float64"))
        record("decoding", viol <= tol, viol, tol, msg)

    guarded("decoding", decoding_check)

    declared = {"head_dim": d, "rotary_dim": rot_decl, "base": base, "pairing": pairing, "scale": scale,
                "phase_dtype": phase_dtype, "theta": None if theta is None else theta.tolist()}
    ordered = [checks[n] for n in CHECKS if n in checks]
    lay = inferred.get("layout")
    if lay is not None:
        inferred["pairing"] = lay["pairing"]
        inferred["rotary_dim"] = lay["rotary_dim"]
    if fn.torch is not None:  # pragma: no cover
        notes.append("the implementation was called with torch tensors (untested path)")
    return GateAReport(declared=declared, protocols=protocols, head_dims=dims, dtypes=["float64", "float32"],
                       inferred=inferred, checks=ordered, notes=sorted(set(notes)),
                       seconds=time.perf_counter() - t0)


def _declared_pairs(d: int, r: int, pairing: str) -> list[list[int]]:
    h = r // 2
    if pairing == "interleaved":
        return [[2 * i, 2 * i + 1] for i in range(h)]
    return [[i, i + h] for i in range(h)]


def _span(idx) -> str:
    idx = list(idx)
    if not idx:
        return "none"
    if idx == list(range(idx[0], idx[0] + len(idx))) and len(idx) > 2:
        return f"{idx[0]}..{idx[-1]}"
    return ", ".join(map(str, idx[:8])) + (", ..." if len(idx) > 8 else "")


_PREFILL = 12
_STEPS = 3


def _raw_decode(fn: _Impl, d: int, rng, *, steps: int = _STEPS):
    """Run prefill + decode steps; returns (Q, K, V, list of (q_rot, keys, values))."""
    n_all = _PREFILL + steps
    Q, K, V = (rng.normal(size=(n_all, d)) for _ in range(3))
    try:
        fn.obj.prefill(fn._wrap(K[:_PREFILL]), fn._wrap(V[:_PREFILL]))
    except Exception as exc:
        raise _Refused(exc) from exc
    out = []
    for t in range(steps):
        i = _PREFILL + t
        try:
            res = fn.obj.decode_step(fn._wrap(Q[i]), fn._wrap(K[i]), fn._wrap(V[i]))
        except Exception as exc:
            raise _Refused(exc) from exc
        if not isinstance(res, tuple) or len(res) != 3:
            raise _Bad("decode_step must return (rotated_query, cached_keys, cached_values)")
        qd = fn._unwrap(res[0], "decode_step")
        kc = fn._unwrap(res[1], "decode_step")
        vc = fn._unwrap(res[2], "decode_step")
        if qd.shape != (d,) or kc.shape != (i + 1, d) or vc.shape != (i + 1, d):
            raise _Bad(f"decode_step returned shapes {qd.shape}, {kc.shape}, {vc.shape} with {i} tokens cached "
                       f"before it; expected ({d},), ({i + 1}, {d}), ({i + 1}, {d})")
        if not (np.all(np.isfinite(qd)) and np.all(np.isfinite(kc)) and np.all(np.isfinite(vc))):
            raise _Bad("decode_step returned NaN or infinite values")
        out.append((qd, kc, vc))
    return Q, K, V, out


def _decode_values(fn: _Impl, d: int, rng) -> float:
    _, _, V, out = _raw_decode(fn, d, rng, steps=1)
    vc = out[-1][2]
    return _vec_rel(vc, V[: vc.shape[0]], V[: vc.shape[0]])


def _match_position(fn: _Impl, vec_raw, vec_rot, role, limit: int):
    """The integer position p in [0, limit] with f(vec_raw, p) == vec_rot, or None."""
    cand = np.arange(limit + 1)
    rot = fn(np.tile(vec_raw, (cand.size, 1)), cand, role=role)
    err = np.linalg.norm(rot - vec_rot, axis=-1) / np.linalg.norm(vec_raw)
    i = int(np.argmin(err))
    return (int(cand[i]) if err[i] < 1e-9 else None)


def _decode_scores(fn: _Impl, d: int, rng, qrole, krole, theta_decl, layout, u: float):
    Q, K, V, out = _raw_decode(fn, d, rng)
    n_all = Q.shape[0]
    pos = np.arange(n_all)
    qf = fn(Q, pos, role=qrole)
    kf = fn(K, pos, role=krole)
    tol = _tol(u, d, n_all, float(theta_decl.max()))
    viol, worst_t = 0.0, 0
    for t, (qd, kc, _) in enumerate(out):
        i = _PREFILL + t
        s_dec = kc @ qd
        s_full = kf[: i + 1] @ qf[i]
        norms = np.linalg.norm(K[: i + 1], axis=-1) * np.linalg.norm(Q[i])
        e = float(np.max(np.abs(s_dec - s_full) / norms))
        if e > tol and viol <= tol:
            worst_t = t  # diagnose the first step that goes wrong
        viol = max(viol, e)
    if viol <= tol:
        return viol, tol, (f"{_STEPS} decoding steps after a prefill of {_PREFILL} tokens reproduce the "
                           "full-sequence scores")
    t = worst_t
    i = _PREFILL + t
    qd, kc, _ = out[t]
    limit = 2 * n_all + 2
    pq = _match_position(fn, Q[i], qd, qrole, limit)
    pk = _match_position(fn, K[i], kc[i], krole, limit)
    cache_ok = np.max(np.linalg.norm(kc[:i] - kf[:i], axis=-1) / np.linalg.norm(K[:i], axis=-1)) <= tol
    head = f"decoding step {t + 1} (token {i}, {i} tokens cached) changes scores by {viol:.2e} of |q||k|: "
    if not cache_ok:
        return viol, tol, head + ("the cached keys differ from the full-sequence keys (prefill rotates them at "
                                  "other positions)")
    if pq == 0 and i != 0:
        return viol, tol, head + (f"the decoding query is rotated at position 0 instead of {i}: it restarts at the "
                                  f"origin while the cached keys keep positions 0..{i - 1}, so every displacement "
                                  f"is off by {i}")
    if pq is not None and pk is not None and pq == pk:
        delta = pq - i
        return viol, tol, head + (f"the new token is placed at position {pq} while the cache holds {i} tokens at "
                                  f"0..{i - 1}: an off-by-{delta:+d} cache offset (query and new key move together, "
                                  f"so every displacement to the cached keys is wrong by {abs(delta)})")
    if pq is not None:
        return viol, tol, head + f"the decoding query sits at position {pq} instead of {i}"
    # no integer position reproduces the query: estimate a scale from the slow pairs
    if layout is not None and layout["pairs"]:
        a = np.array([p[0] for p in layout["pairs"]])
        b = np.array([p[1] for p in layout["pairs"]])
        z_raw = Q[i, a] + 1j * Q[i, b]
        z_rot = qd[a] + 1j * qd[b]
        ang = np.angle(z_rot / z_raw)
        th = theta_decl[: a.size]
        slow = (i * th < 1.0) & (i * th > 1e-3)
        if slow.any():
            s = float(np.median(ang[slow] / (i * th[slow])))
            return viol, tol, head + (f"the decoding query is rotated with {s:.4g} times the angles of its position "
                                      "while the cached keys keep the unscaled ones: a scaling applied to the query "
                                      "but not to the cached keys")
    return viol, tol, head + "the decoding query is rotated differently from the full computation"


# --------------------------------------------------------------------------- command line
def _resolve(target: str):
    """Import ``MODULE:ATTR[.ATTR]``; a class is instantiated without arguments."""
    import importlib

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


def add_subcommand(sub) -> None:
    """Register ``gate-a`` on an argparse subparsers object (used by :mod:`ropegeo.cli`)."""
    p = sub.add_parser(
        "gate-a",
        help="Gate A: audit a rotary implementation given as MODULE:FUNCTION",
        description="Run the Gate A checks on an importable rotary implementation f(x, positions) "
        "(optionally with a role keyword and prefill/decode_step methods). Exit status 0 when every "
        "check passes, 1 when one fails, 2 for bad arguments.",
    )
    p.add_argument("target", help="the implementation, as MODULE:FUNCTION (a class is built with no arguments)")
    p.add_argument("--head-dim", type=int, default=None, help="head dimension to test (default: probe 8..256)")
    p.add_argument("--base", type=float, default=10_000.0, help="declared frequency base (default 10000)")
    p.add_argument("--pairing", default="interleaved", help="declared pairing: 'interleaved' or 'half'")
    p.add_argument("--rotary-dim", type=int, default=None, help="declared partial rotary dimension")
    p.add_argument("--scale", type=float, default=1.0, help="declared position scale (default 1)")
    p.add_argument("--phase-dtype", default="float32", help="coarsest accepted angle precision (default float32)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random vectors (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run_subcommand)


def run_subcommand(args) -> int:
    """Run ``gate-a`` from parsed arguments; returns 0 (pass) or 1 (a check failed)."""
    impl = _resolve(args.target)
    report = gate_a(impl, head_dim=args.head_dim, base=args.base, pairing=args.pairing,
                    rotary_dim=args.rotary_dim, scale=args.scale, phase_dtype=args.phase_dtype, seed=args.seed)
    print(report.to_json(indent=2) if args.json else report.table())
    return 0 if report.passed else 1
