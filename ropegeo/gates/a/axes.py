"""Gate A for multi-axis RoPE (M-RoPE: Qwen2-VL, Qwen2.5-VL, Qwen3-VL).

Three position ids (time, height, width) share the pairs as ``mrope_section = [t, h, w]``, in blocks
(Qwen2-VL) or interleaved (Qwen3-VL); the ``axes`` protocol is ``f(x, positions)`` with positions
``(3, seq)`` or ``(3, batch, seq)``. :func:`gate_a_axes` runs :func:`ropegeo.gates.a.gate.gate_a` on
text positions, then :data:`AXES_CHECKS` one axis at a time; a failed layout check names a :data:`FINDINGS`.
``axis-blind`` reads the probes ``interleave`` reads, at the same tolerance, so a layout check fails
first wherever a pair's own turn is visible; ``axis-bands`` leads only for code whose angles are not a
sum of per-axis terms (``book.broken_axes.AXES_BANDS_DEFECTS``; ``tests/test_gate_a_defects.py``).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from ropegeo.frequencies import frequencies
from ropegeo.gates.a.call import UNIT, Bad, Impl, Refused
from ropegeo.gates.a.checks import PRECISION_LIMIT
from ropegeo.gates.a.gate import CORE_CHECKS, MULTI_AXIS, GateAReport, _as_manifest, check_declaration, gate_a
from ropegeo.gates.a.read import angles, span, wrap
from ropegeo.gates.verdicts import Check
from ropegeo.models.model_types import axes_section
from ropegeo.operator import rotate_pairs
from ropegeo.rotation import pair_indices, phase_angles

__all__ = ["gate_a_axes", "check_axes_declaration", "axes_declared", "axes_operator", "axis_layout", "GateAxesReport",
           "AXES", "AXES_CHECKS", "FINDINGS",
           "MAX_AXES_PROBE_ROWS", "ANGLE_READ_SAFETY"]

#: The three position streams, in the order of ``positions[0], positions[1], positions[2]``.
AXES = ("time", "height", "width")
#: The multi-axis checks (all core: without them a multi-axis declaration has no verdict).
AXES_CHECKS = ("sections", "interleave", "axis-bands", "axis-blind")
#: What a failed ``sections`` or ``interleave`` check can read, by name.
FINDINGS = ("sections-swapped", "one-axis-for-all", "interleave-off-by-one", "boundary-off-by-one",
            "section-sizes", "blocked-not-interleaved", "interleaved-not-blocked", "frozen-pairs",
            "several-axes", "other")
#: Rows of one probe call (probes x head_dim): the probing is one call of this size at most.
MAX_AXES_PROBE_ROWS = 1 << 17
#: Tolerance of an angle read off a probe (unit basis vectors in), in unit roundoffs of the data dtype.
ANGLE_READ_SAFETY = 4.0
_SMALL = (1, 2, 3, 5, 7, 11, 13)  # small positions on each axis (image grids are small)
_MIXED = 16  # probes with the three ids at different positions


def axis_layout(sections, interleaved: bool, pairs: int, shift: int = 0) -> np.ndarray:
    """The axis each pair follows (0 time, 1 height, 2 width; -1 none), as transformers builds it;
    ``shift`` moves the interleaved slices (a broken variant).

    Examples
    --------
    >>> axis_layout((2, 1, 1), False, 4).tolist(), axis_layout((2, 1, 1), True, 4).tolist()
    ([0, 0, 1, 2], [0, 1, 2, 0])
    """
    out = np.full(pairs, -1, dtype=int)
    if not interleaved:
        edges = np.cumsum([0, *sections])
        for i in range(len(sections)):
            out[edges[i]:edges[i + 1]] = i % 3
        return out
    out[:] = 0
    for dim, offset in ((1, 1), (2, 2)):
        out[max(offset + shift, 0): 3 * sections[dim] + shift: 3] = dim
    return out


def axes_declared(manifest) -> bool:
    """True when ``manifest`` (a RopeManifest, config dict, path or shipped name) declares M-RoPE.

    Examples
    --------
    >>> axes_declared({"model_type": "qwen2_vl", "hidden_size": 128, "num_attention_heads": 1,
    ...                "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}})
    True
    """
    return manifest is not None and _as_manifest(manifest).sections is not None


def axes_operator(manifest):
    """ropegeo's own multi-axis operator for a manifest with ``mrope_section``, as a Gate A callable
    ``f(x, positions, role="query")``: positions ``(3,) + x.shape[:-1]`` or ``x.shape[:-1]`` (text);
    cos and sin carry the attention factor; values pass through.

    Examples
    --------
    >>> from ropegeo.models.manifest import RopeManifest
    >>> f = axes_operator(RopeManifest(head_dim=8, pairing="half", sections=(2, 1, 1)))
    >>> out = f(np.eye(8), np.zeros((3, 8), dtype=int))
    >>> bool(np.allclose(out, np.eye(8)))
    True
    """
    if getattr(manifest, "sections", None) is None:
        raise ValueError("manifest must declare mrope_section (a multi-axis operator)")
    seq = manifest.target_length or manifest.max_position_embeddings
    theta, factor = manifest.theta_at(seq), float(manifest.attention_at(seq))
    axis = axis_layout(manifest.sections, manifest.round_robin, manifest.pairs)

    def operator(x, positions, role: str = "query"):
        x = np.array(x, dtype=np.float64)
        if role == "value":
            return x
        pos = np.asarray(positions)
        if pos.shape == x.shape[:-1]:
            pos = np.broadcast_to(pos, (3, *pos.shape))
        if pos.shape != (3, *x.shape[:-1]):
            raise ValueError(f"positions must have shape (3,) + x.shape[:-1] = {(3, *x.shape[:-1])}, got {pos.shape}")
        ang = np.zeros((*x.shape[:-1], theta.size))
        for a in range(3):
            ang = np.where(axis == a, phase_angles(pos[a], theta, manifest.phase_dtype), ang)
        out = rotate_pairs(x, np.cos(ang), np.sin(ang), manifest.pairing)
        out[..., :manifest.rotary_dim] *= factor
        return out

    return operator


class _AxesCall:
    """Calls the implementation with (3, seq) positions, or (3, batch, seq) when it needs a batch."""

    def __init__(self, obj):
        self.fn = Impl(obj)
        self.form = None
        self.refusal = None

    def probe(self, d: int, rng) -> None:
        """Find the form of positions the implementation takes (``self.form``), or why none."""
        x, pos = rng.normal(size=(4, d)), np.tile(np.arange(4), (3, 1)) * np.array([[1], [2], [3]])
        for form in ("flat", "batch"):
            try:
                self.form = form
                self(x, pos)
                return
            except (Bad, Refused) as exc:
                self.refusal = str(exc)
        self.form = None

    def __call__(self, x, pos3):
        if self.form == "batch" and np.ndim(pos3) == 2:
            return self.fn(x[None], pos3[:, None, :])[0]
        return self.fn(x, pos3)


class _TextView:
    """The implementation as a 1D callable (the three ids equal), unchecked: the 1D gate judges it."""

    def __init__(self, call: _AxesCall):
        self.call = call

    def __call__(self, x, positions):
        return self.rotate(x, positions, {})

    def rotate(self, x, positions, kwargs):
        x, p = np.asarray(x), np.asarray(positions)
        pos3 = np.broadcast_to(p, (3, *p.shape)).copy()
        try:
            if self.call.form == "batch" and p.ndim == 1:
                return self.call.fn.raw(x[None], pos3[:, None, :], **kwargs)[0]
            return self.call.fn.raw(x, pos3, **kwargs)
        except Refused as exc:  # a refusal of the implementation stays a refusal
            raise exc.original from None


class _TextViewRoles(_TextView):
    """:class:`_TextView` of an implementation with the role protocol (queries, keys, values)."""

    def __call__(self, x, positions, role=None):
        return self.rotate(x, positions, {} if role is None else {"role": role})


@dataclass
class GateAxesReport(GateAReport):
    """:class:`ropegeo.gates.a.gate.GateAReport` of a multi-axis declaration: the text-position checks,
    then :data:`AXES_CHECKS`; ``axes`` holds the declared and read layouts."""

    axes: dict = field(default_factory=dict)
    _core = CORE_CHECKS + AXES_CHECKS

    @property
    def finding(self) -> str | None:
        """The name (:data:`FINDINGS`) of what the axis reading found wrong, or ``None``."""
        return self.axes.get("finding")

    def to_dict(self) -> dict:
        return {**super().to_dict(), "axes": self.axes}

    @classmethod
    def from_dict(cls, d: dict) -> "GateAxesReport":
        """Invert ``to_dict``."""
        base = GateAReport.from_dict(d)
        return cls(**{k: getattr(base, k) for k in GateAReport.__dataclass_fields__}, axes=dict(d.get("axes", {})))

    def table(self, passing_sizes: bool = True, legend: bool = False) -> str:
        lines = super().table(passing_sizes, legend).split("\n")
        ax = self.axes
        kind = "interleaved pair by pair" if ax.get("interleaved") else "in blocks"
        form = f"positions of shape {ax['form']}" if ax.get("form") else "positions of shape (3, seq) refused"
        text = f"  axes: mrope_section {ax.get('sections')} ({kind}); {form}"
        return "\n".join(lines[:1] + [text] + lines[1:])


def _probes(max_position: int, rng) -> np.ndarray:
    """Position triples: one axis at a time at small and spread positions, then mixed triples."""
    far = np.unique(np.round(np.geomspace(17, max_position - 1, 12)).astype(np.int64))
    steps = np.unique(np.concatenate([_SMALL, far]))
    single = [np.eye(3, dtype=np.int64)[a] * p for a in range(3) for p in steps]
    mixed = rng.integers(0, max_position, size=(_MIXED, 3))
    return np.array(single + list(mixed), dtype=np.int64)


def _read(call: _AxesCall, d: int, first, second, triples, order) -> np.ndarray:
    """Angle of every pair at every triple, shape (len(triples), pairs)."""
    k = len(triples)
    eye = np.tile(np.eye(d), (k, 1))
    out = call(eye, np.repeat(triples.T, d, axis=1))
    if order is not None:
        out = out[..., order]
    mats = out.reshape(k, d, d).transpose(0, 2, 1)
    return angles(mats, list(zip(first, second)))


def _finding(read, decl, sections, interleaved, vis=None) -> tuple[str, str, str]:
    """(name, words, defect class) for a read assignment that differs from the declared one, compared
    on the pairs whose turn is visible (``vis``; unseen pairs read as declared)."""
    pairs, sec = len(decl), list(sections)
    vis = np.ones(pairs, dtype=bool) if vis is None else vis

    def same(a, b) -> bool:
        return bool(np.array_equal(np.asarray(a)[vis], np.asarray(b)[vis]))

    if np.any(read == -2):
        return "several-axes", f"pairs {span(np.flatnonzero(read == -2))} turn with more than one axis's ids", "layout"
    if np.any(read == -1):
        return "frozen-pairs", f"pairs {span(np.flatnonzero(read == -1))} turn with no axis's ids", "layout"
    if np.all(read[vis] == read[vis][0]):
        words = f"one axis's ids used for all axes: every pair turns with the {AXES[read[vis][0]]} ids"
        return "one-axis-for-all", words, "position-id"
    for perm in itertools.permutations(range(3)):
        moved = [sec[i] for i in perm]
        if moved != sec and same(read, axis_layout(moved, interleaved, pairs)):
            return ("sections-swapped", f"sections swapped: the bands hold {moved} pairs (time, height, width), "
                    f"{sec} declared", "layout")
        relabel = np.array(perm)[decl]
        if list(perm) != [0, 1, 2] and same(read, relabel):
            a, b = [AXES[i] for i in range(3) if perm[i] != i][:2]
            return "sections-swapped", f"sections swapped: the {a} and {b} bands follow each other's ids", "layout"
    if interleaved:
        for shift in (-1, 1):
            if same(read, axis_layout(sec, True, pairs, shift)):
                h, w = np.flatnonzero(read == 1), np.flatnonzero(read == 2)
                return ("interleave-off-by-one", f"interleaving off by one pair: height takes pairs {span(h)}, width "
                        f"{span(w)} (declared {span(np.flatnonzero(decl == 1))} and {span(np.flatnonzero(decl == 2))})",
                        "layout")
        if same(read, axis_layout(sec, False, pairs)):
            return "blocked-not-interleaved", "the sections are in blocks, where interleaving is declared", "layout"
    elif same(read, axis_layout(sec, True, pairs)):
        return "interleaved-not-blocked", "the sections are interleaved, where blocks are declared", "layout"
    got = [int(np.sum(read == a)) for a in range(3)]
    if not interleaved and np.all(np.diff(read) >= 0):
        name = "boundary-off-by-one" if max(abs(g - s) for g, s in zip(got, sec)) == 1 else "section-sizes"
        words = "a section boundary off by one" if name == "boundary-off-by-one" else "other section sizes"
        return name, f"{words}: the blocks hold {got} pairs (time, height, width), {sec} declared", "layout"
    wrong = np.flatnonzero(read != decl)
    return "other", (f"pairs {span(wrong)} follow the {', '.join(sorted({AXES[a] for a in read[wrong]}))} ids, "
                     f"not the declared ones"), "layout"


@dataclass
class _Axes:
    """What the axis checks share: the declared layout, the angles read and their tolerances."""

    decl: np.ndarray  # declared axis of each pair
    theta: np.ndarray  # declared frequency of each pair
    triples: np.ndarray  # (k, 3) probe positions
    ang: np.ndarray  # (k, pairs) angles read
    tol_data: float  # angle tolerance of a pair that must not turn
    rel_phase: float  # relative angle error the declared phase dtype allows (the 1D gate's precision limit)


def _own(ax: _Axes) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's own-axis position at every probe, and the tolerance of its angle there."""
    pos = ax.triples[:, ax.decl].astype(float)  # (k, pairs)
    return pos, ax.tol_data + ax.rel_phase * pos * ax.theta


def _single(ax: _Axes):
    """Per probe: the one axis it moves (-1 for mixed probes), and how far."""
    moved = np.count_nonzero(ax.triples, axis=1) == 1
    axis = np.where(moved, np.argmax(ax.triples != 0, axis=1), -1)
    return axis, ax.triples.max(axis=1).astype(float)


def _ceiling(ratio: np.ndarray, visible: np.ndarray) -> float | None:
    """The largest error (in tolerances) the check could see on its least visible pair; ``None`` when
    an error was seen anyway (a pair that cannot show its error does not hide another's)."""
    return None if float(ratio.max()) > 1.0 else float(visible.min())


def _check_bands(ax: _Axes) -> Check:
    """Each band turns with its own axis's ids at its declared frequencies (single and mixed probes)."""
    axis, _ = _single(ax)
    pos, tol = _own(ax)
    use = (axis[:, None] == ax.decl[None, :]) | (axis[:, None] == -1)
    want = wrap(ax.theta * pos)
    ratio = np.where(use, np.abs(wrap(ax.ang - want)) / tol, 0.0)
    seen = np.where(use, np.abs(want) / tol, 0.0).max(axis=0)  # a frozen pair shows this error
    worst = np.unravel_index(np.argmax(ratio), ratio.shape)
    bad = np.flatnonzero(ratio.max(axis=0) > 1.0)
    bands = "; ".join(f"{AXES[a]} pairs {span(np.flatnonzero(ax.decl == a))}" for a in range(3))
    return Check.judged(
        "axis-bands", float(ratio.max()), 1.0,
        f"each band turns with its own axis's ids at its declared frequencies ({bands}; one axis at a time up to "
        f"{int(ax.triples.max()):,}, and {_MIXED} mixed triples)",
        f"pairs {span(bad)} do not turn with their own axis's ids at their declared frequencies (worst: pair "
        f"{worst[1]}, a {AXES[ax.decl[worst[1]]]} pair, off by {abs(wrap(ax.ang - want))[worst]:.3g} rad at "
        f"(time, height, width) = {tuple(int(t) for t in ax.triples[worst[0]])})",
        protocol="axes", defect="layout", ceiling=_ceiling(ratio, seen))


def _check_blind(ax: _Axes) -> Check:
    """Each band stays still when only another axis's ids move."""
    axis, far = _single(ax)
    other = (axis[:, None] >= 0) & (axis[:, None] != ax.decl[None, :])
    ratio = np.where(other, np.abs(wrap(ax.ang)) / ax.tol_data, 0.0)
    leak = np.where(other, np.abs(wrap(ax.theta * far[:, None])) / ax.tol_data, 0.0).max(axis=0)
    k, i = np.unravel_index(np.argmax(ratio), ratio.shape)
    bad = np.flatnonzero(ratio.max(axis=0) > 1.0)
    return Check.judged(
        "axis-blind", float(ratio.max()), 1.0,
        "each band stays still when only another axis's ids move",
        f"pairs {span(bad)} turn when only another axis's ids move (worst: pair {i}, a {AXES[ax.decl[i]]} pair, "
        f"turns {abs(wrap(ax.ang[k, i])):.3g} rad when the {AXES[max(axis[k], 0)]} id alone is {int(far[k]):,})",
        protocol="axes", defect="layout", ceiling=_ceiling(ratio, leak))


def _read_assignment(ax: _Axes) -> tuple[np.ndarray, np.ndarray]:
    """The axis each pair turns with (-1: none, -2: several), and whether each pair's turn is visible."""
    axis, far = _single(ax)
    moves = np.zeros((len(ax.decl), 3), dtype=bool)
    for a in range(3):
        rows = axis == a
        moves[:, a] = (np.abs(wrap(ax.ang[rows])) / ax.tol_data).max(axis=0) > 1.0
    read = np.where(moves.sum(axis=1) == 1, np.argmax(moves, axis=1), np.where(moves.any(axis=1), -2, -1))
    visible = (np.abs(wrap(ax.theta * far[axis >= 0][:, None])) / ax.tol_data).max(axis=0) > 1.0
    return read, visible


def _check_layout(ax: _Axes, sections, interleaved) -> tuple[list[Check], dict]:
    """``sections`` (pairs per axis) and ``interleave`` (which pair follows which axis), and the reading."""
    read, visible = _read_assignment(ax)
    got = [int(np.sum(read == a)) for a in range(3)]
    info = {"read": read.tolist(), "read_sections": got}
    seen_wrong = bool(np.any(visible & (read != ax.decl)))
    if not visible.all() and not seen_wrong:
        why = (f"inconclusive: pairs {span(np.flatnonzero(~visible))} turn less than their angle tolerance "
               f"({ax.tol_data:.2g} rad) at every probed position, so the axis they follow cannot be read")
        return [Check("sections", None, float("nan"), 0.0, why, "axes"),
                Check("interleave", None, float("nan"), 0.0, why, "axes")], info
    if not visible.all():  # the unseen pairs read as declared: the finding is about the others
        read = np.where(visible, read, ax.decl)
        got = [int(np.sum(read == a)) for a in range(3)]
    name, words, defect = (None, "", None) if np.array_equal(read, ax.decl) else _finding(read, ax.decl, sections,
                                                                                           interleaved, visible)
    info["finding"] = name
    order = "time, height and width interleaved pair by pair" if interleaved else "blocks time | height | width"
    size_err = float(sum(abs(g - s) for g, s in zip(got, sections)))
    pair_err = float(np.sum(read != ax.decl))
    return [Check.judged("sections", size_err, 0.0,
                         f"the bands hold the declared numbers of pairs: time {sections[0]}, height {sections[1]}, "
                         f"width {sections[2]}", f"{words} (bands read {got})", "axes", defect),
            Check.judged("interleave", pair_err, 0.0, f"every pair follows its declared axis ({order})",
                         f"{words}: {int(pair_err)} pairs follow another axis than declared", "axes", defect)], info


def _declaration(mrope_section, mrope_interleaved, manifest, options) -> tuple:
    """(sections, interleaved, the manifest without its axes or None), validated."""
    if manifest is not None:
        m = _as_manifest(manifest)
        if mrope_section is not None and m.sections is not None and (
                list(m.sections) != list(mrope_section) or bool(mrope_interleaved) != m.round_robin):
            raise ValueError(f"mrope_section={list(mrope_section)!r} conflicts with the manifest, which declares "
                             f"{list(m.sections)} ({'interleaved' if m.round_robin else 'blocked'}): drop "
                             "mrope_section or drop the manifest")
        sec = m.sections if m.sections is not None else mrope_section
        inter = m.round_robin if m.sections is not None else mrope_interleaved
        sec = axes_section(sec, inter, m.rotary_dim // 2)
        return sec, inter, m.with_(sections=None, round_robin=False)
    head_dim = options.get("head_dim")
    if head_dim is None:
        raise ValueError("mrope_section needs head_dim (the sections share out its rotary pairs)")
    check_declaration(**options)
    rot = options.get("rotary_dim") or head_dim
    return axes_section(mrope_section, mrope_interleaved, rot // 2), mrope_interleaved, None


def check_axes_declaration(*, mrope_section=None, mrope_interleaved: bool = False, manifest=None, **options) -> None:
    """Raise the ``ValueError`` :func:`gate_a_axes` would for these arguments, calling nothing.

    Examples
    --------
    >>> check_axes_declaration(mrope_section=(16, 24, 24), head_dim=128)
    >>> check_axes_declaration(mrope_section=(16, 24, 24), head_dim=64)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mrope_section [16, 24, 24] sums to 64, not to the 32 rotary pairs; ...
    """
    _, _, stripped = _declaration(mrope_section, mrope_interleaved, manifest, options)
    if stripped is not None:
        check_declaration(manifest=stripped, **options)


def gate_a_axes(impl, *, mrope_section=None, mrope_interleaved: bool = False, manifest=None, **options):
    """Gate A for a multi-axis rotary implementation (M-RoPE), with positions of shape (3, seq).

    ``mrope_section`` (time, height, width pairs, summing to the rotary pairs; or the manifest's) in
    blocks, or interleaved (``mrope_interleaved``); ``options`` are :func:`ropegeo.gates.a.gate.gate_a`'s.
    A ValueError for an invalid or conflicting declaration, or a contract break as in ``gate_a``.

    Examples
    --------
    >>> from ropegeo.book.broken_axes import MultiAxisRotary
    >>> r = gate_a_axes(MultiAxisRotary(64, sections=(8, 12, 12)), mrope_section=(8, 12, 12), head_dim=64,
    ...                 pairing="half", base=1e6, max_position=32768)
    >>> r.status, r.check("sections").passed, r.check("axis-blind").passed
    ('pass', True, True)
    """
    t0 = time.perf_counter()
    sec, inter, stripped = _declaration(mrope_section, mrope_interleaved, manifest, options)
    if stripped is not None:
        check_declaration(manifest=stripped, **options)
    call = _AxesCall(impl)
    seed = int(options.get("seed", 0) or 0)
    d0 = options.get("head_dim") or (stripped.head_dim if stripped is not None else None)
    call.probe(d0, np.random.default_rng([seed, 101]))
    text_impl = ((_TextViewRoles if call.fn.role else _TextView)(call) if call.form else impl)
    text = gate_a(text_impl, manifest=stripped, **options)
    axes = {"sections": list(sec), "interleaved": bool(inter), "form": {"flat": "(3, seq)", "batch": "(3, batch, seq)"}
            .get(call.form)}
    if call.form is None:
        why = (f"not measured: the implementation refused positions of shape (3, seq) and (3, batch, seq) "
               f"({call.refusal}); only its text positions were audited")
        extra = [Check.skipped(n, why if n == AXES_CHECKS[0] else f"not measured: as {AXES_CHECKS[0]}", "axes")
                 for n in AXES_CHECKS]
    else:
        extra, info = _axes_checks(call, text, sec, inter, seed)
        axes.update(info)
    notes = list(text.notes) + ["multi-axis RoPE: the checks before the axes ones ran on text positions (the three "
                                "ids equal), where the operator is 1D RoPE over every pair" if call.form else
                                "multi-axis RoPE: the checks before the axes ones called the implementation with "
                                "one position id per token, as it takes"]
    return GateAxesReport(declared={**text.declared, "mrope_section": list(sec), "mrope_interleaved": bool(inter)},
                          protocols=text.protocols + (["axes"] if call.form else []), head_dims=text.head_dims,
                          dtypes=text.dtypes, inferred=text.inferred, checks=text.checks + extra, notes=notes,
                          seconds=time.perf_counter() - t0, axes=axes)


def _axes_checks(call: _AxesCall, text: GateAReport, sec, inter, seed: int) -> tuple[list[Check], dict]:
    """Read every pair's angle with one axis moved at a time (and mixed), then judge the four checks."""
    dec, inf = text.declared, text.inferred
    d, rot = text.head_dims[0], dec["rotary_dim"]
    theta = (frequencies(d, dec["base"], rot) if dec.get("theta") is None else np.asarray(dec["theta"])) * dec["scale"]
    first, second = pair_indices(rot, dec["pairing"])
    triples = _probes(int(dec["max_position"]), np.random.default_rng([seed, 102]))
    if len(triples) * d > MAX_AXES_PROBE_ROWS:  # pragma: no cover - head_dim is at most 1,024
        triples = triples[: MAX_AXES_PROBE_ROWS // d]
    order = (inf.get("output_order") or {}).get(d)
    try:
        ang = _read(call, d, first, second, triples, None if order is None else np.asarray(order))
    except Refused as exc:
        why = f"not measured: the implementation refused the multi-axis probe ({exc})"
        return [Check.skipped(n, why, "axes") for n in AXES_CHECKS], {}
    except Bad as exc:
        return [Check(n, False, float("inf"), 0.0, str(exc), "axes", "contract") for n in AXES_CHECKS], {}
    u_data = UNIT.get(inf.get("data_dtype") or "float32", UNIT["float32"])
    ax = _Axes(decl=axis_layout(sec, inter, rot // 2), theta=theta, triples=triples, ang=ang,
               tol_data=ANGLE_READ_SAFETY * u_data, rel_phase=PRECISION_LIMIT[dec["phase_dtype"]])
    layout, info = _check_layout(ax, sec, inter)
    return layout + [_check_bands(ax), _check_blind(ax)], info


# the one-axis gate hands multi-axis declarations to this module (it cannot import it: this builds on it)
MULTI_AXIS.update(gate=gate_a_axes, declared=axes_declared, check=check_axes_declaration)
