"""The reading checks of Gate A (``check(ctx, rng) -> Check``): layout, frequencies, precision,
origin, context and batch. Internal; the table is in :mod:`ropegeo.gates.a.gate`.
"""

from __future__ import annotations

import math
from dataclasses import replace

import ml_dtypes
import numpy as np

from ropegeo.gates.a.call import UNIT, Bad, Refused
from ropegeo.gates.a.positions import find_position_defect
from ropegeo.gates.a.read import (
    angles,
    fmt_positions,
    infer_layout,
    layout_name,
    matrices,
    probe_positions,
    refine_theta,
    relative_rows,
    rotate_by_pairs,
    span,
    tried,
    wrap,
    wrap_far,
)
from ropegeo.gates.verdicts import Check

#: Positions at which the matrices are read: consecutive at the start, then away from powers of two.
READ_POSITIONS = (1, 2, 3, 7, 37, 101, 300, 419, 1001)
#: Largest relative angle error (90th percentile) accepted per declared angle precision, about
#: halfway (log scale) to the next coarser format (measured: float32 ~1e-7, float16 ~3e-4, bfloat16 ~4e-3).
PRECISION_LIMIT = {"float64": 1e-12, "float32": 1e-5, "float16": 1.1e-3, "bfloat16": 3e-2}
DATA_SAFETY = 8.0  # normwise rounding of a rotated vector stays below a few unit roundoffs
ANGLE_SAFETY = 16.0
#: The smallest sine of a rotation angle that the layout reading sees (``infer_layout``'s threshold).
LAYOUT_SEEN = 1e-6
#: The largest error the vector and score checks can see (2 |x|, 2 |q||k|): a tolerance reaching it cannot fail.
CEILING = 2.0
_LOW = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


class Ctx:
    """What every check reads: the implementation, the declaration, and what was inferred."""

    def __init__(self, fn, *, operator, dims, data_dtype, max_position, extra_sizes=(), alt_theta=None):
        self.fn, self.dims, self.max_position, self.extra_sizes = fn, dims, max_position, extra_sizes
        self.d, self.rot_decl = operator.head_dim, operator.rotary_dim
        self.pairing, self.base = operator.pairing, operator.base
        self.pairing_width = operator.rotary_dim  # half-split pairs (i, i + width / 2); the head for Gemma 4's p-RoPE
        self.theta_decl = operator.theta * operator.scale  # radians per position, the position scale folded in
        self.theta_given = operator.theta_given is not None
        self.theta_max = float(self.theta_decl.max())
        self.phase_dtype, self.data_dtype_declared = operator.phase_dtype, data_dtype
        self.read_positions = tuple(p for p in READ_POSITIONS if p < max_position)  # at least 1, 2, 3, 7
        self.krole = "key" if fn.role else None  # the role the operator is read from (the side nearer the declaration)
        self.key_role = self.krole  # what scores use for keys, always
        self.qrole = "query" if fn.role else None
        self.inferred: dict = {}
        self.notes: list[str] = []
        self.mats = self.theta_hat = self.position_defect = None
        self.freq_state = None  # "ok", "mirrored", "wrong" or None (not measured)
        self.u_data, self.u_phase, self.gain = UNIT["float32"], UNIT[self.phase_dtype], 1.0
        # (what, frequencies, pass length): another reading of the declaration (LongRoPE's short factors,
        # dynamic NTK's unstretched ones), those of a forward pass of at most that length
        self.alt_theta = alt_theta
        self.softmax_factor = None  # the attention factor declared in the softmax (the rotation keeps unit length)
        self.short_run = None  # dynamic NTK: (short length, its frequencies, matrices read before any long pass)

    def tol_vec(self, pmax: float, u_in: float = 0.0) -> float:
        """Largest relative change of a rotated vector that rounding explains at positions up to pmax."""
        u = max(self.u_data, u_in)
        return DATA_SAFETY * u + ANGLE_SAFETY * self.u_phase * pmax * self.theta_max

    def tol_score(self, pmax: float, u_in: float = 0.0) -> float:
        """The same for a query-key score, relative to |q| |k| (both sides round)."""
        return 2.0 * self.tol_vec(pmax, u_in)

    def judged_below(self, factor: float = 1.0, u_in: float = 0.0) -> float:
        """The position below which ``factor * tol_vec(p)`` stays under half of :data:`CEILING` (past
        it a check could hardly fail)."""
        room = 0.5 * CEILING / factor - DATA_SAFETY * max(self.u_data, u_in)
        slope = ANGLE_SAFETY * self.u_phase * self.theta_max
        return room / slope if slope > 0 else 1e300

    @property
    def layout(self):
        return self.inferred.get("layout")

    def theta_ref(self):
        """The frequencies to compare against: declared (signed as measured) when they agree."""
        if self.freq_state == "ok":
            return self.theta_decl
        if self.freq_state == "mirrored":
            return -self.theta_decl
        return self.theta_hat

    def read_limit(self) -> int:
        """Reading stays below the first position a position-id defect touches."""
        pd = self.position_defect
        return pd["boundary"] if pd and pd["kind"] not in _UNREADABLE else 10**12


def _layout_rows(ctx) -> list[int]:
    """The read positions the layout is inferred from (1, 2, 7, 300, 1001 when the context allows)."""
    want = [i for i, p in enumerate(ctx.read_positions) if p in (1, 2, 7, 300, 1001)]
    return want if len(want) >= 3 else list(range(len(ctx.read_positions)))


_UNREADABLE = ("ignored", "contiguous", "quantised")  # position-id defects that make the matrices meaningless


def _row_gain(x, y) -> np.ndarray:
    """The factor each row of y is of its row of x, fitted by least squares, shape (rows, 1)."""
    return np.sum(x * y, axis=-1, keepdims=True) / np.sum(x * x, axis=-1, keepdims=True)


def _input_rounding(ctx) -> str | None:
    """The format the implementation rounds its input to, seen at position 0 (the identity), or None."""
    x = np.random.default_rng(20_240_601).normal(size=(4, ctx.d))  # its own stream: no check's draws move
    y = tried(ctx.fn, x, np.zeros(4, dtype=np.int64), role=ctx.krole)
    if y is None:
        return None
    g = _row_gain(x, y)
    rel = float(np.max(np.abs(y - g * x) / np.abs(g * x)))
    # rounding to nearest moves each entry by at most u; four times that leaves room for the fitted gain
    # (a gain of 1.01 in float64 reads about 2u) and stays below the next format's u
    return next((n for n in UNIT if rel <= 4.0 * UNIT[n]), None)


def _data_dtype(ctx, orth) -> None:
    """The data precision the checks are judged at: declared, else that of the arrays returned. A
    coarser rounding measured (``orth``, or the input at position 0) is a finding, never a licence."""
    seen = sorted(ctx.fn.out_dtypes, key=lambda n: UNIT[n])
    by_output = seen[-1] if seen else None
    data = ctx.data_dtype_declared or by_output or "float32"
    ctx.inferred["data_dtype"] = data
    ctx.inferred["data_dtype_source"] = "declared" if ctx.data_dtype_declared else "returned arrays"
    ctx.u_data = UNIT[data]
    if orth is None:
        return
    by_rounding = next((n for n in UNIT if orth <= DATA_SAFETY * UNIT[n]), None)
    found = [(n, w) for n, w in ((by_rounding, "rotation matrices"), (_input_rounding(ctx), "input at position 0"))
             if n and UNIT[n] > UNIT[data]]
    if found:
        name, where = max(found, key=lambda f: UNIT[f[0]])
        ctx.inferred["data_rounding"] = {"dtype": name, "seen_in": where, "orthogonality_error": orth}
        ctx.u_data = UNIT[name]  # the other checks see its symptoms as rounding, not as other defects


def _rounding_finding(ctx) -> Check | None:
    """The precision check's failure when the data round more coarsely than judged."""
    f = ctx.inferred.get("data_rounding")
    if f is None:
        return None
    data, src = ctx.inferred["data_dtype"], ctx.inferred["data_dtype_source"]
    what = (f"the input is rounded to {f['dtype']} on the way in (seen at position 0, the identity)"
            if f["seen_in"] == "input at position 0" else
            f"the rotation rounds as {f['dtype']} (its matrices depart from orthogonal by {f['orthogonality_error']:.1e}, "
            f"the size of {f['dtype']} rounding): cos and sin, or the vectors, are cast to {f['dtype']} inside")
    judged = f"the declared data dtype is {data}" if src == "declared" else f"the arrays returned are {data}"
    return Check("precision", False, UNIT[f["dtype"]], UNIT[data],
                 f"precision defect: {what}, while {judged}. Gate A judges at that dtype: a coarser rounding is a "
                 f"finding, never a wider tolerance. Keep the computation in {data}, or declare the serving "
                 f"precision (dtype='{f['dtype']}', --dtype {f['dtype']}) if {f['dtype']} is what the model runs in",
                 "callable", "precision")


def _read_matrices(ctx) -> None:
    """R(p) at the read positions, stopping before the first position the implementation refuses."""
    try:
        ctx.mats = matrices(ctx.fn, ctx.d, ctx.read_positions, role=ctx.krole)
    except (Refused, Bad):
        keep = []
        for p in ctx.read_positions:
            try:
                keep.append(matrices(ctx.fn, ctx.d, [p], role=ctx.krole)[0])
            except (Refused, Bad):
                break
        if len(keep) < 3:
            raise
        ctx.read_positions = ctx.read_positions[: len(keep)]
        ctx.mats = np.stack(keep)


def _attention_factor(ctx, gain: float) -> float:
    """Record whether the rotation applies the declared attention factor (``gain``: after dividing by it)."""
    factor = ctx.fn.factor
    if factor != 1.0:
        ctx.inferred["attention_factor_applied"] = bool(abs(gain - 1.0) <= abs(gain * factor - 1.0))
    return gain


def _matrix_reading(ctx, rng) -> None:
    """Position-id defects first, then the matrices, the layout and the data precision they show."""
    _data_dtype(ctx, None)  # provisional: what the contract probe returned
    x = rng.normal(size=ctx.d)
    tol = DATA_SAFETY * 2 * ctx.u_data + 1e-9
    _reading_side(ctx, tol)
    ctx.position_defect = find_position_defect(ctx.fn, x, ctx.max_position, role=ctx.krole, tol=tol,
                                               extra_sizes=ctx.extra_sizes)
    if ctx.fn.role and ctx.krole == "key" and ctx.position_defect and ctx.position_defect["kind"] == "ignored":
        # keys that ignore positions while queries rotate: a roles defect (check_roles); read the queries
        if find_position_defect(ctx.fn, x, ctx.max_position, role="query", tol=tol,
                                extra_sizes=ctx.extra_sizes) is None:
            ctx.krole, ctx.position_defect = "query", None
            ctx.notes.append("keys ignore their positions while queries rotate: the operator is read from the "
                             "queries (see roles)")
    if ctx.position_defect and ctx.position_defect["kind"] in _UNREADABLE:
        return
    _read_matrices(ctx)
    ctx.inferred["layout"] = infer_layout(ctx.mats[_layout_rows(ctx)])
    # a magnitude factor is the norm check's finding: the other checks divide it out
    ctx.gain = _attention_factor(ctx, float(np.median(np.linalg.norm(ctx.mats[:3], axis=1))))
    eye, g = np.eye(ctx.d), ctx.gain
    orth = float(max(np.max(np.abs(m.T @ m / g**2 - eye)) for m in ctx.mats[:3]))  # rounding, not the gain
    ctx.inferred["orthogonality_error"] = orth
    _data_dtype(ctx, orth)


#: Positions at which queries and keys are compared (the roles check and the choice of side).
ROLE_POSITIONS = READ_POSITIONS[:4]


def declared_matrices(ctx, positions) -> np.ndarray:
    """The declared R(p) at ``positions``, shape (k, d, d) (pairs and frequencies as declared)."""
    pairs = _declared_pairs(ctx.d, ctx.rot_decl, ctx.pairing, ctx.pairing_width)
    p = np.repeat(np.asarray(positions), ctx.d)
    rows = rotate_by_pairs(np.tile(np.eye(ctx.d), (len(positions), 1)), p, pairs, ctx.theta_decl)
    return rows.reshape(len(positions), ctx.d, ctx.d).transpose(0, 2, 1)


def departing_side(ctx, mq, mk):
    """``("keys" or "queries", dq, dk)``: the side farther from the declared operator, and each side's
    largest entry distance from it."""
    ref = declared_matrices(ctx, ROLE_POSITIONS)
    dq, dk = float(np.max(np.abs(mq - ref))), float(np.max(np.abs(mk - ref)))
    return ("keys" if dq < dk else "queries"), dq, dk


def _reading_side(ctx, tol) -> None:
    """With the role protocol, read the operator from the side nearer the declaration when queries
    and keys differ (the other is the roles check's finding)."""
    if not ctx.fn.role:
        return
    try:
        mq = matrices(ctx.fn, ctx.d, ROLE_POSITIONS, role="query")
        mk = matrices(ctx.fn, ctx.d, ROLE_POSITIONS, role="key")
    except (Refused, Bad):
        return
    if np.max(np.abs(mq - mk)) <= tol:
        return
    if departing_side(ctx, mq, mk)[0] == "keys":
        ctx.krole = "query"
        ctx.notes.append("queries and keys are rotated differently; the operator is read from the queries, the side "
                         "nearer the declaration (see roles)")


def _declared_pairs(d: int, r: int, pairing: str, width: int | None = None) -> list[list[int]]:
    h = r // 2
    if pairing == "interleaved":
        return [[2 * i, 2 * i + 1] for i in range(h)]
    return [[i, i + (width or r) // 2] for i in range(h)]


def _still_pairs(lay, declared_pairs) -> list[int]:
    """Indices of declared pairs that pass through while every rotating pair is a declared one."""
    pt = set(lay["passthrough"])
    still = [i for i, (a, b) in enumerate(declared_pairs) if a in pt and b in pt]
    ok = not lay["odd"] and lay["pairs"] and all(p in declared_pairs for p in lay["pairs"])
    return still if ok and still and len(still) + len(lay["pairs"]) == len(declared_pairs) else []


def check_layout(ctx, rng) -> Check:
    """Which coordinates rotate together, against the declared pairing and rotary dim."""
    _matrix_reading(ctx, rng)
    if ctx.layout is None:
        return Check.skipped("layout", "not measured: the implementation does not use the positions it is given "
                             "(see context)", "callable")
    lay, d, theta = ctx.layout, ctx.d, ctx.theta_decl
    pos = np.array(ctx.read_positions)[_layout_rows(ctx)]
    # a pair that moves less than infer_layout's threshold at every read position reads as passing through
    blind = np.all(np.abs(np.sin(np.multiply.outer(pos, theta))) < LAYOUT_SEEN, axis=0)
    if blind.any():
        ctx.inferred["layout_blind"] = True
        i = int(np.argmax(blind))
        why = (f"so slowly that at the read positions (up to {int(pos.max()):,}) it has turned by less than "
               f"{LAYOUT_SEEN:g} rad, too little to tell from coordinates that pass through"
               if abs(theta[i]) * pos.max() < 1.0 else f"by a multiple of pi ({theta[i] / np.pi:.6g} pi)")
        return Check.skipped("layout", f"not measured: declared pair {i} turns by {theta[i]:.6g} rad per position, "
                             f"{why}, so no read position shows which coordinates it couples", "callable")
    problems = []
    r = lay["rotary_dim"]
    declared_pairs = _declared_pairs(d, ctx.rot_decl, ctx.pairing, ctx.pairing_width)
    across = ctx.pairing_width != ctx.rot_decl and lay["pairs"] == declared_pairs and not lay["odd"]
    misplaced = 2 * (sum(p not in lay["pairs"] for p in declared_pairs) + sum(p not in declared_pairs for p in lay["pairs"]))
    if lay["odd"]:
        problems.append(f"coordinates {span(lay['odd'])} are neither rotated in a pair nor passed through: "
                        "the map is not a set of independent 2-D rotations")
    still = _still_pairs(lay, declared_pairs)
    if r == 0 and not lay["odd"]:
        problems.append("no coordinate rotates: the implementation returns its input unchanged")
    elif still:
        problems.append(f"declared pairs {span(still)} ({len(still)} of {len(declared_pairs)}) never turn: their "
                        f"coordinates pass through while the other pairs rotate as declared ({layout_name(ctx.pairing)}); "
                        "a position id that is 0 for those pairs (an axis whose ids stay 0) or a frequency of 0")
        r = ctx.rot_decl  # the pairs are the declared ones: no rotary-dim finding besides
    elif across:  # Gemma 4's proportional RoPE: half-split across the head, the slow pairs never turning
        pass
    elif lay["pairing"] == "other" and r:
        a, b = lay["pairs"][0]
        problems.append(f"coordinates pair up irregularly (for example {a} with {b}): neither interleaved nor half-split")
    elif r and lay["pairing"] not in (ctx.pairing, "both"):
        if lay["pairing"] == "half":
            problems.append(f"coordinates i and i+{r // 2} rotate together: half-split layout, while the declared "
                            "convention is interleaved (the pairing of GPT-J; half-split is that of GPT-NeoX and "
                            "Llama's rotate_half)")
        else:
            problems.append("coordinates 2i and 2i+1 rotate together: interleaved layout, while the declared "
                            f"convention is half-split (pairs i, i+{r // 2}, as in GPT-NeoX and Llama; interleaved "
                            "is the pairing of GPT-J)")
    if r and r != ctx.rot_decl:
        problems.append(f"{r} of {d} coordinates rotate, while the declared rotary dim is {ctx.rot_decl}")
    elif r and lay["offset"] != 0 and not still:
        problems.append(f"coordinates {span(range(lay['offset'], lay['offset'] + r))} rotate and "
                        f"{span(lay['passthrough'])} pass through: the rotary slice is taken from the wrong "
                        f"end of the head (partial rotary rotates the leading {ctx.rot_decl} coordinates)")
    if not problems and misplaced:
        problems.append("the rotating pairs differ from the declared ones")
    pt = f"; coordinates {span(lay['passthrough'])} pass through" if lay["passthrough"] else ""
    if not problems and across:
        return Check("layout", True, 0.0, 0.0, f"half-split pairs (i, i + {ctx.pairing_width // 2}) across the "
                     f"{ctx.pairing_width}-wide head, the first {r // 2} turning{pt}, as declared", "callable")
    if not problems:
        return Check("layout", True, 0.0, 0.0, f"{layout_name(lay['pairing'])} pairs over {r} coordinates{pt}, as declared",
                     "callable")
    return Check("layout", False, float(misplaced + len(lay["odd"])), 0.0, "layout defect: " + "; ".join(problems),
                 "callable", "layout")


def _usable(ctx):
    """Row indices of READ_POSITIONS below the reading limit, or a reason they cannot be read."""
    lay = ctx.layout
    if ctx.inferred.get("layout_blind"):
        return None, "not measured: the pairs could not be observed (see layout)"
    if lay is None or not lay["pairs"]:
        return None, "not measured: no rotating pair was found"
    pd = ctx.position_defect
    if pd and pd["kind"] in _UNREADABLE:
        return None, "not measured: the implementation does not use the positions it is given (see context)"
    rows = [i for i, p in enumerate(ctx.read_positions) if p < ctx.read_limit()]
    if len(rows) < 4:
        return None, f"not measured: a position-id defect from position {ctx.read_limit():,} on (see context)"
    return rows, None


def _angle_error(ctx, rows, th):
    """Relative angle error (90th percentile) against steps ``th`` (``None`` when no angle reaches 1
    rad), the worst error at each position, and the positions."""
    pos = np.array(ctx.read_positions, dtype=float)[rows]
    ang = angles(ctx.mats[rows], ctx.layout["pairs"])
    moved = np.outer(pos - pos[0], np.abs(th))
    dev = np.abs(wrap(ang - ang[0] - np.outer(pos - pos[0], th)))
    big = moved >= 1.0
    if not big.any():
        return None, dev.max(axis=1), pos
    rel = np.maximum(dev - 4.0 * ctx.u_data, 0.0)[big] / moved[big]
    return float(np.quantile(rel, 0.9)), dev.max(axis=1), pos


def _precision_name(stat) -> str:
    names = [n for n in UNIT if stat <= PRECISION_LIMIT[n]]
    return names[0] if names else "coarser than bfloat16"


def check_frequencies(ctx, rng) -> Check:
    """Each pair's step per position, against the declared frequencies."""
    rows, why = _usable(ctx)
    if rows is None:
        return Check.skipped("frequencies", why, "callable")
    lay = ctx.layout
    pos = np.array(ctx.read_positions)[rows]
    ang = angles(ctx.mats[rows], lay["pairs"])
    th = refine_theta(ang, pos)
    ctx.theta_hat = th
    ctx.inferred["theta"] = np.abs(th).tolist()
    own, _, _ = _angle_error(ctx, rows, th)  # the angle precision, judged against the implementation's own steps
    u_angle = UNIT.get(_precision_name(own), UNIT["bfloat16"]) if own is not None else ctx.u_phase
    span_ = float(pos[-1] - pos[0])

    def tolerance(steps):  # per pair, for a schedule of these steps; 1e-6: the angles' own float64 rounding
        # pair i's step formed in the declared phase dtype by a recurrence (theta *= base^(-2/d), as llama.cpp
        # does) carries up to 2 (i + 1) roundings of that dtype: the phase dtype, not the code, sets this
        chain = 2.0 * np.arange(1, np.size(steps) + 1) * ctx.u_phase
        return np.maximum((4.0 * max(u_angle, UNIT["float64"]) + chain) * steps + DATA_SAFETY * ctx.u_data / span_,
                          1e-6 * steps)

    fit = _fit_schedule(th, 2 * len(th), tolerance(np.abs(th)))
    if fit is not None:
        ctx.inferred["base"], ctx.inferred["scale"], ctx.inferred["schedule_residual"] = fit[:3]
        ctx.inferred["schedule_fits"] = fit[3]
    ref = ctx.theta_decl
    if len(th) != len(ref):
        ctx.freq_state = "wrong"
        return Check("frequencies", False, float("inf"), 0.0,
                     f"frequency defect: {len(th)} pairs rotate, but the declared frequencies have {len(ref)}",
                     "callable", "frequency")
    tol = tolerance(ref)
    dev = np.abs(wrap_far(th - ref))
    if np.any(tol >= np.pi):  # a step is seen modulo 2 pi: a deviation beyond pi rad per position cannot show
        i = int(np.argmax(tol))
        c = Check.judged("frequencies", float(dev[i]), float(tol[i]), "", "", "callable", ceiling=np.pi)
        return replace(c, diagnosis=f"{c.diagnosis}: pair {i} is declared to turn {ref[i]:.3g} rad per position, "
                       "too fast for its step to be formed or read to within pi rad")
    ratio = dev / tol
    worst = int(np.argmax(ratio))
    viol, tol_w = float(dev[worst] / ref[worst]), float(tol[worst] / ref[worst])
    if np.all(ratio <= 1.0):
        ctx.freq_state = "ok"
        stale = _short_run(ctx, tolerance)
        if stale is not None:
            return Check("frequencies", False, stale[0], stale[1], stale[2], "callable", "frequency")
        return Check("frequencies", True, viol, tol_w, f"every pair turns at its declared frequency (largest relative "
                     f"deviation {float(np.max(dev / ref)):.1e})", "callable")
    if np.all(np.abs(wrap_far(th + ref)) <= tol):
        ctx.freq_state = "mirrored"
        return Check("frequencies", False, viol, tol_w,
                     "convention defect: every pair rotates the opposite way (sin enters with the other sign): a "
                     "mirrored convention. The relative law still holds (scores depend on n - m only), but with the "
                     "sign flipped: weights trained with the declared convention see every displacement reversed, "
                     "so it is the checkpoint's convention that breaks", "callable", "convention")
    ctx.freq_state = "wrong"
    flipped = np.abs(wrap_far(th + ref)) <= tol
    if np.all(flipped | (ratio <= 1.0)):  # every pair at its declared speed, some turning the other way
        idx = np.flatnonzero(flipped)
        return Check("frequencies", False, viol, tol_w,
                     f"convention defect: pairs {fmt_positions(idx.tolist())} ({idx.size} of {th.size}) rotate the "
                     "opposite way (sin enters with the other sign on those pairs only), the others as declared; "
                     "every pair turns at its declared speed. The relative law still holds, but weights trained with the "
                     "declared convention see every displacement reversed on those pairs", "callable", "convention")
    words = _frequency_words(ctx, th, ref, worst, fit, tol)
    alt = ctx.alt_theta
    if alt is not None and len(alt[1]) == len(th) and np.all(np.abs(wrap_far(np.abs(th) - alt[1])) <= tolerance(alt[1])):
        words = f"every pair turns at {alt[0]}; " + words
        ctx.inferred["short_pass_frequencies"] = alt[2]
    return Check("frequencies", False, viol, tol_w, "frequency defect: " + words, "callable", "frequency")


def short_run_reading(fn, head_dim, short: int, max_position: int):
    """R(p) of a short forward pass (positions below ``short``, no pass length appended), or ``None``."""
    pos = [p for p in READ_POSITIONS if p < min(short, max_position)]
    if head_dim is None or len(pos) < 4:
        return None
    with fn.bare():
        return tried(matrices, fn, head_dim, pos, role="key" if fn.role else None)


def short_run_note(length: int, short: int) -> str:
    """The note a dynamic NTK audit carries: how its passes were made, and the short-run check."""
    return (f"dynamic NTK picks its frequencies from the length of each forward pass: the implementation was called "
            f"as within a pass of {length:,} tokens (one position id {length - 1:,} appended to every call, its row "
            f"dropped), and a short run (positions below {short:,}, no id appended) was read before and after those "
            "passes: it must rotate with the unstretched short-run frequencies both times (a cache that is not reset "
            "for shorter sequences keeps the stretched ones)")


def _short_theta(ctx, mats, pos):
    """Per-pair steps of short-run matrices, in the layout read (the output order undone)."""
    order = ctx.fn.order.get(ctx.d)
    if order is not None:
        mats = mats[:, order, :]
    return refine_theta(angles(mats, ctx.layout["pairs"]), pos)


def _short_run(ctx, tolerance):
    """Dynamic NTK: (violation, tolerance, diagnosis) when a short run after long passes does not rotate
    with the short-run frequencies, else None."""
    if ctx.short_run is None or ctx.short_run[2] is None:
        return None
    short, th_short, before = ctx.short_run
    pos = [p for p in READ_POSITIONS if p < min(short, ctx.max_position)][: before.shape[0]]
    with ctx.fn.bare():
        after = matrices(ctx.fn, ctx.d, pos, role=ctx.krole)
    tol = tolerance(th_short)
    th_after, th_before = _short_theta(ctx, after, pos), _short_theta(ctx, before, pos)
    dev = np.abs(wrap_far(np.abs(th_after) - th_short))
    if len(th_after) != len(th_short) or np.all(dev <= tol):
        return None
    i = int(np.argmax(dev / tol))
    first_ok = len(th_before) == len(th_short) and np.all(np.abs(wrap_far(np.abs(th_before) - th_short)) <= tol)
    long_ = np.allclose(np.abs(th_after), np.abs(ctx.theta_decl), rtol=1e-3)
    what = "the stretched frequencies of the long passes" if long_ else "other frequencies"
    head = (f"frequency defect: a short forward pass (positions below {short:,}) rotates with {what}, not with the "
            f"configuration's short-run frequencies (pair {i}: {abs(th_after[i]):.6g} rad per position instead of "
            f"{th_short[i]:.6g})")
    if first_ok:
        why = ("; the same short pass read before any long one was right: the stretched frequencies are kept after a "
               "long pass, a cache that is not reset for shorter sequences (as in transformers issue 25306), so "
               "every short prompt after a long one is rotated as if it were long")
    else:
        why = "; it does so even before any long pass: the frequencies do not follow the length of the pass"
    return float(dev[i] / th_short[i]), float(tol[i] / th_short[i]), head + why


def _frequency_words(ctx, th, ref, i, fit, tol) -> str:
    """Name a frequency defect: a position scale, an ordering, a base, or no schedule (``tol``: each
    pair's measurement tolerance)."""
    a = np.abs(th)
    msg = (f"pair {i} turns at {a[i]:.6g} rad per position instead of the declared {ref[i]:.6g} "
           f"(relative deviation {abs(a[i] - ref[i]) / ref[i]:.2e})")
    for name in ("bfloat16", "float16"):  # inv_freq held in a low-precision dtype (model.to(torch.bfloat16))
        held = np.asarray(ref, dtype=np.float32).astype(_LOW[name]).astype(np.float64)
        if np.all(np.abs(a - held) <= tol) and not np.all(np.abs(a - ref) <= tol):
            return (f"every frequency is the declared one rounded to {name}: inv_freq is held in {name} (a buffer cast "
                    f"with the model, as model.to(torch.{name}) does), so each pair turns up to "
                    f"{float(np.max(np.abs(held - ref) / ref)):.1e} too fast or too slow and the error grows with "
                    f"position; keep inv_freq in float32 (" + msg + ")")
    ratio, rel_tol = a / ref, tol / ref
    w = 1.0 / np.maximum(rel_tol, 1e-12) ** 2
    mean = float(np.sum(w * ratio) / np.sum(w))  # the best-measured (fast) pairs weigh most
    if np.all(np.abs(ratio - mean) <= np.maximum(1e-3 * mean, 2.0 * rel_tol * mean)):
        r = mean
        if abs(r - 1.0) < 1e-3:  # too small for a position scale: say the ratio, not "1 times"
            return f"every frequency is {r:.7g} times the declared one (a slightly different schedule): " + msg
        return (f"every frequency is {r:.4g} times the declared one: the position scale is wrong, positions advance "
                f"{r:.4g} times as fast as declared (a position interpolation forgotten, applied twice, or applied "
                "on one side of the declaration only)")
    if np.allclose(np.sort(a), np.sort(ref), rtol=1e-3) and not np.allclose(a, ref, rtol=1e-3):
        order = "reversed (the slowest pair first)" if np.allclose(a, ref[::-1], rtol=1e-3) else "permuted"
        return f"the declared frequencies are all there but their ordering is {order}: " + msg
    if fit is not None and fit[3] and not ctx.theta_given and abs(fit[0] / ctx.base - 1.0) > 1e-3:
        return f"the frequencies follow base {fit[0]:,.6g}, while the declared base is {ctx.base:,.6g}: " + msg
    if fit is not None and not fit[3] and not ctx.theta_given:
        return "the frequencies are not a geometric schedule: " + msg
    return msg


#: Largest log residual of a geometric fit taken as one schedule when the pairs are measured exactly.
SCHEDULE_RESIDUAL = 1e-3


def _fit_schedule(theta_hat, rotary_dim: int, tol=None):
    """Fit ln theta_i = ln s - (2 i / r) ln B, weighted by each pair's tolerance ``tol``: (base,
    scale, max residual, fits) or None; ``fits`` when every pair lies within its tolerance."""
    th = np.abs(theta_hat)
    ok = th > 0
    if ok.sum() < 2:
        return None
    rel = np.full(th.size, SCHEDULE_RESIDUAL) if tol is None else np.maximum(np.asarray(tol) / np.where(ok, th, 1.0),
                                                                             1e-12)
    i = np.arange(th.size)[ok]
    slope, intercept = np.polyfit(i, np.log(th[ok]), 1, w=1.0 / rel[ok])
    dev = np.abs(np.log(th[ok]) - (slope * i + intercept))
    fits = bool(np.all(dev <= np.maximum(2.0 * rel[ok], SCHEDULE_RESIDUAL)))
    base = math.exp(-slope * rotary_dim / 2.0) if slope < 0 else float("nan")
    return base, math.exp(intercept), float(np.max(dev)), fits


def check_precision(ctx, rng) -> Check:
    """Data rounding coarser than judged; angle error that grows with position."""
    finding, angle = _rounding_finding(ctx), _angle_precision(ctx)
    if finding is None:
        return angle
    if angle.passed is False:  # low-precision data does not excuse a low-precision angle table
        return replace(finding, diagnosis=f"{finding.diagnosis}. Besides, {angle.diagnosis.removeprefix('precision defect: ')}")
    return finding


def _angle_precision(ctx) -> Check:
    rows, why = _usable(ctx)
    if rows is None or ctx.theta_hat is None:
        return Check.skipped("precision", why or "not measured: no frequencies were read", "callable")
    stat, worst, pos = _angle_error(ctx, rows, ctx.theta_ref())
    if stat is None:
        return Check.skipped("precision", f"not measured: no probed angle reaches 1 rad (positions up to "
                             f"{int(pos.max()):,}), too small for rounding to show", "callable")
    have = _precision_name(stat)
    ctx.inferred["phase_precision"] = have
    ctx.inferred["relative_phase_error"] = stat
    # the smallest relative angle error the data's rounding lets this reading see
    resolution = 4.0 * ctx.u_data / float(np.max(np.abs(ctx.theta_ref())) * (pos[-1] - pos[0]))
    ctx.inferred["phase_resolution"] = resolution
    if have in UNIT and UNIT[have] <= UNIT[ctx.phase_dtype] and resolution <= PRECISION_LIMIT[have]:
        ctx.u_phase = UNIT[have]  # tighten only to a precision the data's rounding can show
    growth = ", ".join(f"{worst[j]:.2g} rad at position {int(pos[j]):,}" for j in (1, len(pos) // 2, len(pos) - 1))
    data = ctx.inferred["data_dtype"]
    limit = PRECISION_LIMIT[ctx.phase_dtype]
    if stat <= limit:
        seen = (f"{have} or better" if resolution <= PRECISION_LIMIT[have] else
                f"below what the {data} data can resolve, {resolution:.0e}")
        return Check("precision", True, stat, limit, f"angles are formed with relative error {stat:.1e} ({seen}; "
                     f"{ctx.phase_dtype} declared); the data rounds as {data}, flat in position "
                     f"(worst angle error {growth})", "callable")
    return Check("precision", False, stat, limit,
                 f"precision defect: rotation angles carry a relative error of {stat:.1e}, the rounding of {have}: "
                 f"the angle table is formed in {have}, while {ctx.phase_dtype} or better is declared. The error "
                 f"{'grows with position' if worst[-1] > worst[1] else 'does not grow with position'} ({growth}), "
                 f"unlike the {data} rounding of the data, which stays flat; form the "
                 "angles in float32 and cast only cos and sin", "callable", "precision")


def check_origin(ctx, rng) -> Check:
    """Position 0 is the identity; an origin off by k is named."""
    pd = ctx.position_defect
    if pd and pd["kind"] in _UNREADABLE:
        return Check.skipped("origin", "not measured: the implementation does not use the positions it is given "
                             "(see context)", "callable")
    x = rng.normal(size=(8, ctx.d))
    y = ctx.fn(x, np.zeros(8, dtype=np.int64), role=ctx.krole) / ctx.gain
    err = float(np.max(relative_rows(y, x, x)))
    tol = ctx.tol_vec(0.0)
    if err <= tol:
        return Check("origin", True, err, tol, "position 0 leaves vectors unchanged", "callable")
    g = _row_gain(x, y)
    scaled = float(np.max(relative_rows(y, g * x, g * x)))
    if scaled <= tol:  # the identity times a factor the gain estimate missed: the norm check's finding
        return Check("origin", True, scaled, tol, "position 0 leaves vectors unchanged up to a uniform factor "
                     "(a magnitude finding, see norm)", "callable")
    lay, th = ctx.layout, ctx.theta_ref()
    if lay and lay["pairs"] and th is not None and len(th) == len(lay["pairs"]):
        for k in sorted(range(-64, 65), key=abs):
            if k and np.max(relative_rows(rotate_by_pairs(x, np.full(8, k), lay["pairs"], th), y, x)) <= max(tol, 1e-3):
                ctx.inferred["origin_offset"] = k
                return Check("origin", False, err, tol,
                             f"position-id defect: the origin is off by {k:+d}: position p is rotated as p{k:+d}. "
                             "Scores still depend on n - m only, but rotations no longer compose (R(a) R(b) is "
                             f"R(a + b{k:+d}), not R(a + b)) and a cache that counts from 0 is off by {k:+d}",
                             "callable", "position-id")
    return Check("origin", False, err, tol, f"position-id defect: position 0 changes vectors by {err:.2e} of |x|: the "
                 "rotation at the origin is not the identity (and not a shift of it by up to 64 positions)", "callable",
                 "position-id")


def check_context(ctx, rng) -> Check:
    """Positions across the whole declared context: no wrap, clamp, refusal, NaN or drift."""
    pd, m = ctx.position_defect, ctx.max_position
    if pd is not None:
        return Check("context", False, float("inf") if pd["kind"] in ("refused", "nan") else 1.0, 0.0, pd["text"],
                     "callable", pd["defect"])
    probes = probe_positions(m)
    if not probes:
        return Check("context", True, 0.0, 0.0, f"the declared context ({m:,}) is within the read positions",
                     "callable")
    lay, th = ctx.layout, ctx.theta_ref()
    if ctx.freq_state not in ("ok", "mirrored") or not lay or len(lay["pairs"]) != len(ctx.theta_decl):
        return Check.skipped("context", f"no position-id defect up to {m:,}; not compared with the declared rotation "
                             "(the layout or the frequencies differ from the declaration, see those checks)", "callable")
    k = ctx.inferred.get("origin_offset", 0)
    p = np.array(probes)
    limit = ctx.judged_below()  # past it the angles' rounding allows any rotation: no comparison can fail
    unjudged = (f"; past position {int(limit):,} the rotation is not compared with the declared one: with "
                f"{_phase_name(ctx)} angles the tolerance there reaches the largest error ({CEILING:g} of |x|)"
                if p.max() >= limit else "")
    p = p[p < limit]
    if not p.size:
        return Check("context", True, 0.0, 0.0, f"no position-id defect up to {m:,} (no wrapped, clamped or refused "
                     f"position){unjudged}", "callable")
    x = rng.normal(size=(p.size, ctx.d))
    y = ctx.fn(x, p, role=ctx.krole) / ctx.gain
    ref = rotate_by_pairs(x, p + k, lay["pairs"], th)
    err = relative_rows(y, ref, x)
    tols = np.array([ctx.tol_vec(q) for q in p])
    j = int(np.argmax(err / tols))
    if np.all(err <= tols):
        return Check("context", True, float(err[j]), float(tols[j]), f"positions {p.min():,} to {p.max():,} (up to the "
                     f"declared {m:,}) are rotated as declared; no wrapped, clamped or refused position{unjudged}",
                     "callable")
    return _drift(ctx, p, p + k, x, y, ref, err, tols)


def _phase_name(ctx) -> str:
    """The angle precision the tolerances assume (the declared one, or finer when measured)."""
    return next((n for n in UNIT if UNIT[n] == ctx.u_phase), "declared")


def _frequency_drift(ctx, positions, x, y, ref, tols):
    """Per-pair frequency offsets (angle error = ``position * delta``) that explain a drift, or None."""
    pairs = ctx.layout["pairs"]
    a, b = np.array([q[0] for q in pairs]), np.array([q[1] for q in pairs])
    e = np.angle((y[:, a] + 1j * y[:, b]) * np.conj(ref[:, a] + 1j * ref[:, b]))
    w = x[:, a] ** 2 + x[:, b] ** 2
    P = positions[:, None].astype(float)
    delta = (w * P * e).sum(axis=0) / (w * P * P).sum(axis=0)
    resid = relative_rows(y, rotate_by_pairs(x, positions, pairs, ctx.theta_ref() + delta), x)
    err = relative_rows(y, ref, x)
    if np.all(resid <= tols) and resid.max() <= 0.25 * err.max():
        return delta
    return None


def _drift(ctx, p, rotated_as, x, y, ref, err, tols) -> Check:
    """Name what makes large positions ``p`` fail when the read positions were right."""
    j, bad = int(np.argmax(err / tols)), p[err > tols]
    have = ctx.inferred.get("phase_precision")
    coarse = have in UNIT and UNIT[have] > UNIT[ctx.phase_dtype]
    where = f"{err[0]:.2g} of |x| at {p[0]:,}, {err[-1]:.2g} at {p[-1]:,}; allowed with {ctx.phase_dtype} angles: {tols[-1]:.2g}"
    delta = None if coarse else _frequency_drift(ctx, rotated_as, x, y, ref, tols)
    if delta is not None:
        i = int(np.argmax(np.abs(delta)))  # the pair that drifts most, hence the best measured
        rel = np.abs(delta) / np.abs(ctx.theta_decl)
        ctx.inferred["frequency_drift"] = {"pair": i, "relative_deviation": float(rel[i])}
        return Check("context", False, float(err[j]), float(tols[j]),
                     f"frequency defect: the rotation drifts from the declared one in proportion to position ({where}): "
                     f"each pair turns at a slightly different frequency than declared (pair {i}: relative deviation "
                     f"{rel[i]:.1e}), too little for the read positions (up to {max(ctx.read_positions):,}) to show "
                     f"in {ctx.inferred['data_dtype']} data; a per-pair frequency fit leaves only rounding",
                     "callable", "frequency")
    if coarse or np.corrcoef(p, err)[0, 1] > 0.5 or bad.min() > p.min():
        fmt = have if coarse else "a coarser format than declared"
        return Check("context", False, float(err[j]), float(tols[j]),
                     f"precision defect: the rotation drifts from the declared one as positions grow ({where}): angles "
                     f"formed in {fmt} lose the large positions", "callable", "precision")
    return Check("context", False, float(err[j]), float(tols[j]),
                 f"at positions {fmt_positions(bad)} the rotation differs from the declared one by up to "
                 f"{float(err.max()):.2g} of |x|, while ordinary positions are right", "callable", "position-id")


BATCH_POSITIONS = np.array([[0, 1, 2, 3, 4, 5],          # a plain row
                            [9, 10, 11, 12, 13, 14],     # after 9 cached or padded slots
                            [0, 1, 2, 0, 1, 2],          # two packed documents, ids reset
                            [401, 405, 409, 413, 417, 421]])


def check_batch(ctx, rng) -> Check:
    """A (batch, seq) position tensor whose rows differ: each row rotated by its own ids."""
    pos = BATCH_POSITIONS % ctx.max_position  # rows still differ in a short context
    x = rng.normal(size=pos.shape + (ctx.d,))
    try:
        y = ctx.fn(x, pos, role=ctx.krole)
    except (Refused, Bad) as exc:
        return Check.skipped("batch", f"not measured: the implementation does not take x of shape (batch, seq, "
                             f"head_dim) with positions (batch, seq) ({exc})", "callable")
    rows = np.stack([ctx.fn(x[b], pos[b], role=ctx.krole) for b in range(pos.shape[0])])
    err = float(np.max(relative_rows(y, rows, x)))
    # both calls form the angles of the same positions: coarse angles round alike in both, so only
    # the data's rounding and an angle path up to float32 may differ
    u_angle = min(ctx.u_phase, UNIT["float32"])
    tol = 2.0 * (DATA_SAFETY * ctx.u_data + ANGLE_SAFETY * u_angle * float(pos.max()) * ctx.theta_max)
    if tol >= CEILING:
        return Check.judged("batch", err, tol, "", "", "callable", ceiling=CEILING)
    if err <= tol:
        return Check("batch", True, err, tol, "each row of a (batch, seq) position tensor is rotated by its own "
                     "position ids", "callable")
    for b, name in ((0, "first"), (pos.shape[0] - 1, "last")):
        alt = np.stack([ctx.fn(x[r], pos[b], role=ctx.krole) for r in range(pos.shape[0])])
        if np.max(relative_rows(y, alt, x)) <= tol:
            return Check("batch", False, err, tol, f"position-id defect: every row of a (batch, seq) position tensor "
                         f"is rotated by the {name} row's position ids: with padding or packing, the rows whose ids "
                         "differ get the wrong positions", "callable", "position-id")
    return Check("batch", False, err, tol, f"position-id defect: rows of a (batch, seq) position tensor are not rotated "
                 f"by their own ids (largest error {err:.2g} of |x|): the ids are mixed across the batch", "callable",
                 "position-id")
