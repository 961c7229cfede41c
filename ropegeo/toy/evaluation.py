"""Running a trained head: :func:`~ropegeo.toy.evaluate` under a schedule and interventions, and across seeds.

A schedule is a named extension rule (``ropegeo.scaling``) or explicit ``theta``, ``scale`` and
attention factor; the interventions are a global shift, a query offset, the query reset to 0 (a
broken KV cache) and positions or phases held in a low precision. Per query, whether the
attention *winner* is the target and how much *mass* lands on it; :func:`~ropegeo.toy.evaluate_seeds`
and :func:`~ropegeo.toy.compare` keep every seed's numbers (some effects appear for some seeds only).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from ropegeo import _validate as v
from ropegeo._json import dumps, plain
from ropegeo.operator import rotate_pairs
from ropegeo.rotation import apply_rope, phase_angles
from ropegeo.scaling import NAMED_RULES, rule_name
from ropegeo.softmax import softmax_rows
from ropegeo.toy.heads import MatchHead, OffsetHead, _check_head, _resolve, match_targets
from ropegeo.toy.training import MAX_HEAD_LENGTH, MAX_SEEDS, _bounded_list, _rng

# Evaluate at most this many (sequence, query, key) scores at once: about 32 MiB of float64.
_CELLS = 1 << 22

#: The standard comparison of :func:`compare`: ``ropegeo.scaling.NAMED_RULES`` but yarn and llama3.
EXTENSIONS = tuple(r for r in NAMED_RULES if r not in ("yarn", "llama3"))

#: Most random sequences one :func:`evaluate` of a match head scores.
MAX_SEQUENCES = 256
#: Most lengths, and most extension rules, in one :func:`compare` table.
MAX_CONDITIONS = 16
#: Most bins of :meth:`Evaluation.by_position` and :meth:`Evaluation.by_displacement`.
MAX_BINS = 10_000


@dataclass(frozen=True)
class Binned:
    """Accuracy and attention mass averaged within bins (left-closed ``edges``; NaN in empty bins),
    with ``count`` queries per bin.
    """

    edges: np.ndarray
    accuracy: np.ndarray
    mass: np.ndarray
    count: np.ndarray

    @property
    def centres(self) -> np.ndarray:
        return 0.5 * (self.edges[1:] + self.edges[:-1])

    def to_dict(self) -> dict:
        return {k: np.asarray(getattr(self, k)).tolist() for k in ("edges", "accuracy", "mass", "count")}


@dataclass(frozen=True)
class Evaluation:
    """A head run on sequences of one length under one schedule and intervention.

    Every per-query array holds the queries with a target, sequences concatenated;
    ``schedule`` is ``"own"``, a rule name or ``"custom"``; ``attention_by_displacement[delta]`` is
    the mean attention at ``delta`` over the queries that see it (NaN where none does).
    """

    kind: str
    seed: int | None
    length: int
    schedule: str
    theta: np.ndarray
    scale: float
    attention_factor: float
    interventions: dict
    query_position: np.ndarray
    target_position: np.ndarray
    winner_position: np.ndarray
    target_mass: np.ndarray
    attention_by_displacement: np.ndarray

    @property
    def correct(self) -> np.ndarray:
        """Whether the attention winner is the target, per query."""
        return self.winner_position == self.target_position

    @property
    def accuracy(self) -> float:
        """Fraction of queries whose attention winner is the target."""
        return float(self.correct.mean())

    @property
    def mass(self) -> float:
        """Mean attention mass on the target."""
        return float(self.target_mass.mean())

    @property
    def displacement(self) -> np.ndarray:
        """Target displacement ``query - target`` per query."""
        return self.query_position - self.target_position

    @property
    def winner_displacement(self) -> np.ndarray:
        """Displacement ``query - winner`` of the attention winner per query."""
        return self.query_position - self.winner_position

    def winner_counts(self) -> dict:
        """How many queries chose each winner displacement, most common first."""
        vals, counts = np.unique(self.winner_displacement, return_counts=True)
        order = np.lexsort((vals, -counts))
        return {int(vals[i]): int(counts[i]) for i in order}

    def _binned(self, x: np.ndarray, bins, hi: int) -> Binned:
        if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
            bins = v.integer("bins", bins, minimum=1, maximum=MAX_BINS)
            edges = np.linspace(0.0, float(hi), bins + 1)
        else:
            edges = v.finite_array("bins", bins)
            if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
                raise ValueError("bins must be a positive integer or an increasing array of at least two edges")
            if edges.size > MAX_BINS + 1:
                raise ValueError(f"bins must give at most MAX_BINS = {MAX_BINS} bins, got {edges.size - 1} "
                                 f"(an array of {edges.size} edges)")
        idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, edges.size - 2)
        inside = (x >= edges[0]) & (x <= edges[-1])
        n = edges.size - 1
        count = np.bincount(idx[inside], minlength=n)
        acc = np.bincount(idx[inside], weights=self.correct[inside].astype(float), minlength=n)
        mass = np.bincount(idx[inside], weights=self.target_mass[inside], minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            return Binned(edges, acc / count, mass / count, count)

    def by_position(self, bins=8) -> Binned:
        """Accuracy and mass binned by query position: ``bins`` equal bins over ``[0, length]`` (at most
        :data:`MAX_BINS`) or increasing edges.
        """
        return self._binned(self.query_position.astype(float), bins, self.length)

    def by_displacement(self, bins=8) -> Binned:
        """Accuracy and mass binned by the target displacement (see ``by_position``)."""
        return self._binned(self.displacement.astype(float), bins, self.length)

    def summary(self) -> dict:
        """The scalar numbers: accuracy, mass, query count, most common winner displacements."""
        top = dict(list(self.winner_counts().items())[:3])
        return {"kind": self.kind, "seed": self.seed, "length": self.length, "schedule": self.schedule,
                "scale": self.scale, "attention_factor": self.attention_factor,
                "interventions": dict(self.interventions), "accuracy": self.accuracy,
                "mass": self.mass, "queries": int(self.query_position.size), "top_winner_displacements": top}

    def to_dict(self) -> dict:
        """Summary plus every per-query array (as lists)."""
        d = self.summary()
        d["theta"] = self.theta.tolist()
        for name in ("query_position", "target_position", "winner_position", "target_mass", "attention_by_displacement"):
            d[name] = plain(getattr(self, name))
        return d

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as JSON (NaN as null; keyword arguments go to ``json.dumps``)."""
        return dumps(self.to_dict(), **kwargs)


def _positions(length, shift, query_offset, query_reset, position_dtype):
    idx = np.arange(length, dtype=np.float64)
    with np.errstate(over="ignore"):
        kpos = idx + shift
        qpos = np.zeros(length) if query_reset else idx + shift + query_offset
    if not (np.all(np.isfinite(kpos)) and np.all(np.isfinite(qpos))):
        raise ValueError(f"shift={shift:g} and query_offset={query_offset:g} put position ids beyond the float range")
    if position_dtype is not None:
        reach = max(float(np.max(np.abs(kpos))), float(np.max(np.abs(qpos))))
        with np.errstate(over="ignore"):
            kpos = kpos.astype(position_dtype).astype(np.float64)
            qpos = qpos.astype(position_dtype).astype(np.float64)
        if not (np.all(np.isfinite(kpos)) and np.all(np.isfinite(qpos))):
            label = "bfloat16" if position_dtype.name == "bfloat16" else position_dtype.name
            top = float(ml_dtypes.finfo(position_dtype).max)
            raise ValueError(f"position_dtype={label!r} overflows: position ids reach {reach:g} (shift={shift:g}, "
                             f"query_offset={query_offset:g}, length {length}) but its largest number is {top:g}; "
                             f"use a wider position_dtype or a smaller shift")
    return qpos, kpos


def _check_phases(qpos, kpos, theta, scale, phase_dtype, shift) -> None:
    """Refuse a phase dtype in which the largest phase overflows."""
    top = max(float(np.max(np.abs(qpos))), float(np.max(np.abs(kpos)))) * scale
    try:
        phase_angles(np.array([top]), theta, phase_dtype)
    except ValueError as err:
        raise ValueError(f"phase_dtype={str(phase_dtype)!r} cannot hold the phases of these positions "
                         f"(shift={shift:g}, position ids up to {top:g} after scaling): {err}") from None


def evaluate(head, length: int, *, extension: str | None = None, factor: float | None = None, theta=None,
             scale: float | None = None, attention_factor: float | None = None, shift: float = 0.0,
             query_offset: float = 0.0, query_reset: bool = False, position_dtype: str | None = None,
             phase_dtype: str = "float64", sequences: int = 8, seed=12345) -> Evaluation:
    """Run a trained head on sequences of ``length`` and score every query's attention.

    Scores are formed as a rotary layer forms them (:func:`ropegeo.rotation.apply_rope`, a softmax
    over strictly earlier keys), a few sequences at a time. ``length`` is 2 to
    :data:`MAX_HEAD_LENGTH`. The schedule is the head's own, a named ``extension``
    (:func:`~ropegeo.scaling.extension_schedule`, ``factor`` default ``length / train_length``), or
    explicit ``theta`` / ``scale`` / ``attention_factor``. ``shift`` moves every position id,
    ``query_offset`` the queries' only, ``query_reset`` sets the queries' to 0; ``position_dtype``
    rounds position ids and ``phase_dtype`` holds the angle table (each must hold every value).
    ``sequences`` (at most :data:`MAX_SEQUENCES`) and ``seed`` serve a match head. Raises ValueError
    for a bad argument or a dtype that overflows at these positions.
    """
    _check_head(head)
    length = v.integer("length", length, minimum=2, maximum=MAX_HEAD_LENGTH)
    th, sc, att, name = _resolve(head, length, extension, factor, theta, scale, attention_factor)
    shift = v.real("shift", shift)
    query_offset = v.real("query_offset", query_offset)
    if not isinstance(query_reset, (bool, np.bool_)):
        raise ValueError(f"query_reset must be True or False, got {query_reset!r}")
    pdt = None if position_dtype is None else v.float_dtype(position_dtype, "position_dtype")
    v.float_dtype(phase_dtype, "phase_dtype")
    sequences = v.integer("sequences", sequences, minimum=1, maximum=MAX_SEQUENCES)
    d = head.head_dim
    interventions = {
        "shift": shift, "query_offset": query_offset, "query_reset": bool(query_reset),
        "position_dtype": None if position_dtype is None else str(position_dtype), "phase_dtype": str(phase_dtype),
    }
    qpos, kpos = _positions(length, shift, query_offset, bool(query_reset), pdt)
    _check_phases(qpos, kpos, th, sc, phase_dtype, shift)
    rope = dict(theta=th, scale=sc, phase_dtype=phase_dtype)
    if isinstance(head, OffsetHead):
        if head.offset >= length:
            raise ValueError(f"length must exceed the head's offset {head.offset}, got {length}")
        qs = apply_rope(np.broadcast_to(head.q, (length, d)), qpos, **rope)[None]
        ks = apply_rope(np.broadcast_to(head.k, (length, d)), kpos, **rope)[None]
        if att != 1.0:
            qs, ks = qs * att, ks * att
        idx = np.arange(length)
        target = np.where(idx >= head.offset, idx - head.offset, -1)[None]

        def rotated(s0, s1):
            return qs[s0:s1], ks[s0:s1]
    else:
        rng, _ = _rng(seed)
        tok = rng.integers(0, head.vocab, size=(sequences, length))
        target = match_targets(tok)

        # the rotations are checked and formed once; the chunks use the unchecked kernel
        q_ang, k_ang = phase_angles(qpos * sc, th, phase_dtype), phase_angles(kpos * sc, th, phase_dtype)
        q_cos, q_sin, k_cos, k_sin = np.cos(q_ang), np.sin(q_ang), np.cos(k_ang), np.sin(k_ang)

        def rotated(s0, s1):  # (chunk, length, head_dim): never every sequence at once
            q = rotate_pairs(head.q_table[tok[s0:s1]], q_cos, q_sin)
            k = rotate_pairs(head.k_table[tok[s0:s1]], k_cos, k_sin)
            return (q * att, k * att) if att != 1.0 else (q, k)
    return _score_queries(head, length, name, th, sc, att, interventions, rotated, target)


def _score_queries(head, length, name, th, sc, att, interventions, rotated, target):
    n_seq = target.shape[0]
    earlier = np.tri(length, length, -1)
    weight_sum = np.zeros((length, length))
    visible = np.zeros(length)
    out_q, out_t, out_w, out_m = [], [], [], []
    chunk = max(1, _CELLS // (length * length))
    for s0 in range(0, n_seq, chunk):
        qs, ks = rotated(s0, s0 + chunk)
        s = qs @ ks.transpose(0, 2, 1)
        tgt = target[s0 : s0 + chunk]
        valid = tgt >= 0
        bi, mi = np.nonzero(valid)
        ti = tgt[bi, mi]
        s -= (1.0 - earlier) * 1e30
        out_w.append(np.argmax(s[bi, mi], axis=-1))
        p, _, _ = softmax_rows(s, earlier, masked=True)
        out_q.append(mi)
        out_t.append(ti)
        out_m.append(p[bi, mi, ti])
        vf = valid.astype(np.float64)
        weight_sum += np.einsum("bmn,bm->mn", p, vf)
        visible += vf.sum(axis=0)
    # mean attention at each displacement over the evaluated queries that can see it: row m adds
    # its weights at displacements 1 .. m, rows in order (the sums of a bincount over the lower
    # triangle, without its index arrays)
    by_disp = np.zeros(length)
    seen = np.zeros(length)
    for m in range(1, length):
        by_disp[1 : m + 1] += weight_sum[m, m - 1 :: -1]
        seen[1 : m + 1] += visible[m]
    with np.errstate(invalid="ignore", divide="ignore"):
        attention = np.where(seen > 0, by_disp / np.where(seen > 0, seen, 1.0), np.nan)
    cat = np.concatenate
    return Evaluation(
        kind=head.kind, seed=head.seed, length=length, schedule=name, theta=np.asarray(th, dtype=float).copy(),
        scale=float(sc), attention_factor=float(att), interventions=interventions, query_position=cat(out_q).astype(np.int64),
        target_position=cat(out_t).astype(np.int64), winner_position=cat(out_w).astype(np.int64),
        target_mass=cat(out_m), attention_by_displacement=attention,
    )


@dataclass(frozen=True)
class SeedResults:
    """One condition (length, schedule, intervention) evaluated for several independently trained heads."""

    label: str
    seeds: tuple
    accuracy: np.ndarray
    mass: np.ndarray
    evaluations: tuple = field(repr=False, default=())

    accuracy_mean = property(lambda self: float(self.accuracy.mean()), doc="Mean accuracy over the seeds.")
    accuracy_std = property(lambda self: float(self.accuracy.std()), doc="Standard deviation of the accuracy.")
    mass_mean = property(lambda self: float(self.mass.mean()), doc="Mean target mass over the seeds.")
    mass_std = property(lambda self: float(self.mass.std()), doc="Standard deviation of the target mass.")

    def count(self, predicate) -> int:
        """How many seeds satisfy ``predicate(evaluation)``: effects that only some seeds show."""
        return int(sum(bool(predicate(e)) for e in self.evaluations))

    def to_dict(self) -> dict:
        return {"label": self.label, "seeds": list(self.seeds), "accuracy": self.accuracy.tolist(),
                "mass": self.mass.tolist(), "accuracy_mean": self.accuracy_mean, "accuracy_std": self.accuracy_std,
                "mass_mean": self.mass_mean, "mass_std": self.mass_std}

    def row(self) -> str:
        return (f"{self.label:<40} accuracy {self.accuracy_mean:6.3f} ± {self.accuracy_std:5.3f}   "
                f"mass {self.mass_mean:6.3f} ± {self.mass_std:5.3f}   (n={len(self.seeds)})")


def evaluate_seeds(heads, length: int, *, label: str | None = None, **options) -> SeedResults:
    """Evaluate every head of a list (1 to :data:`MAX_SEEDS`, one per seed) under one condition (``options`` of :func:`evaluate`)."""
    heads = _head_list(heads)
    evals = tuple(evaluate(h, length, **options) for h in heads)
    if label is None:
        extra = ", ".join(f"{k}={val}" for k, val in sorted(options.items()) if k not in ("sequences", "seed"))
        label = f"L={length}" + (f", {extra}" if extra else "")
    return SeedResults(label=label, seeds=tuple(h.seed for h in heads), accuracy=np.array([e.accuracy for e in evals]),
                       mass=np.array([e.mass for e in evals]), evaluations=evals)


def _head_list(heads) -> list:
    """1 to MAX_SEEDS trained heads (one per seed) as a list."""
    if isinstance(heads, (OffsetHead, MatchHead)):
        raise ValueError("heads must be a list of trained heads (one per seed), got a single head: use [head]")
    heads = _bounded_list("heads", heads, MAX_SEEDS, "trained heads (one per seed; MAX_SEEDS)")
    if not heads:
        raise ValueError("heads must hold at least one trained head")
    return heads


def compare(heads, lengths, extensions=EXTENSIONS, **options) -> list:
    """The length-by-schedule table: :func:`evaluate_seeds` for every length and extension rule.

    At most :data:`MAX_CONDITIONS` lengths and rules; ``options`` apply to every cell. Returns a list
    of :class:`SeedResults` ordered by extension then length, labelled ``"<rule> L=<length>"``.
    """
    heads = _head_list(heads)
    lengths = [v.integer("lengths", n, minimum=2, maximum=MAX_HEAD_LENGTH)
               for n in _bounded_list("lengths", lengths, MAX_CONDITIONS, "lengths (MAX_CONDITIONS)")]
    if isinstance(extensions, str):
        extensions = (extensions,)
    extensions = [rule_name(ext, "extensions")
                  for ext in _bounded_list("extensions", extensions, MAX_CONDITIONS, "rule names (MAX_CONDITIONS)")]
    out = []
    for name in extensions:
        for n in lengths:
            out.append(evaluate_seeds(heads, n, extension=name, label=f"{name} L={n}", **options))
    return out

