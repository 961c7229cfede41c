"""Gate B: how far apart a frequency bank keeps the offsets a task must tell apart.

The *signature* of an offset ``a`` is its row of unit phase vectors ``u_i(a) = (cos phi_i, sin phi_i)``
with ``phi_i = (origin + a) * scale * theta_i``, generated in a given precision (see
:mod:`ropegeo.precision`). The *phase distance* between the signatures of ``a`` and ``b`` is the
weighted chord length::

    D(a, b) = sqrt( sum_i w_i |u_i(a) - u_i(b)|^2 ),     sum_i w_i = 1,

which lies in ``[0, 2]``. In exact arithmetic ``|u_i(a) - u_i(b)|^2 = 4 sin^2((a - b) s theta_i / 2)``,
so ``D`` depends on ``a - b`` only and ``D^2 = 2 (1 - K_w(a - b))`` with ``K_w`` the weighted kernel
of :func:`ropegeo.geometry.kernel`. The *separation margin* of an offset set is the smallest ``D``
over its pairs; the pair that attains it is the *most confusable pair*. A margin becomes a verdict
through :class:`ropegeo.gates.b.rule.GateBRule`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ropegeo import _validate as v
from ropegeo.operator import RotaryOperator
from ropegeo.precision import as_pipeline, phase_table
from ropegeo.softmax import softmax

__all__ = ["SeparationMargin", "BandMargin", "difference_distance", "distance_kernel", "margin_kernel", "offset_array",
           "pairwise_distances", "separation_margin", "band_slices", "attention_probe", "ProbeResult", "probe_mass"]

#: Largest offset set of :func:`separation_margin`; of one compared from generated phases (n^2 * pairs);
#: of :func:`pairwise_distances` (an n x n matrix).
MAX_OFFSETS = 1 << 20
MAX_DIRECT = 8192
MAX_MATRIX = 4096
_MAX_SPAN = 1 << 22  # largest integer span of the difference table
_CELLS = 1 << 21  # cells per temporary block: about 16 MiB of float64
#: Most entries one margin or distance computation evaluates (offsets^2 * pairs, span * pairs, offsets^2).
MAX_MARGIN_CELLS = 1 << 33
WEIGHTINGS = ("pair", "band")


def offset_array(offsets, limit: int = MAX_OFFSETS) -> np.ndarray:
    """Checked offsets, sorted: distinct, non-negative, finite, 2 to ``limit`` of them (ValueError naming ``offsets``).

    Examples
    --------
    >>> offset_array(range(3, 0, -1)).tolist()
    [1.0, 2.0, 3.0]
    """
    if isinstance(offsets, range):
        try:
            count = len(offsets)
        except OverflowError:  # a range longer than sys.maxsize
            count = limit + 1
        if count > limit:
            raise ValueError(f"offsets holds more than {limit:,} offsets; at most {limit:,} are allowed")
    elif isinstance(offsets, (set, frozenset)):
        if len(offsets) > limit:
            raise ValueError(f"offsets holds {len(offsets):,} offsets; at most {limit:,} are allowed")
        offsets = sorted(offsets)
    try:
        arr = np.asarray(offsets) if not isinstance(offsets, range) else None
    except (ValueError, TypeError, OverflowError):
        arr = None  # ragged or exotic: finite_array below says what is wrong
    if arr is not None and arr.size > limit:
        raise ValueError(f"offsets holds {arr.size:,} offsets; at most {limit:,} are allowed")
    off = v.finite_array("offsets", offsets)
    if off.ndim != 1:
        raise ValueError(f"offsets must be a 1-D list of offsets, got shape {off.shape}")
    if off.size < 2:
        raise ValueError(f"offsets must hold at least two distinct offsets to compare, got {off.size}")
    if np.any(off < 0):
        raise ValueError(f"offsets must be non-negative, got {off[off < 0][0]:g}")
    off = np.sort(off)
    dup = np.flatnonzero(np.diff(off) == 0)
    if dup.size:
        raise ValueError(f"offsets must be distinct: {off[dup[0]]:g} appears more than once")
    return off


def _common(theta, dtype, scale, origin, operator=None, seq_len=None):
    th, scale = RotaryOperator.bank_of(theta, operator, seq_len=seq_len, scale=scale)
    if not scale > 0.0:
        raise ValueError(f"scale must be greater than 0, got {scale:g}")
    return th, as_pipeline(dtype), scale, v.real("origin", origin, minimum=0.0)


def difference_distance(deltas, theta, *, scale: float = 1.0, weights=None) -> np.ndarray:
    """Exact phase distance ``D(delta) = sqrt(4 sum_i w_i sin^2(delta * scale * theta_i / 2))``, in [0, 2].

    ``sqrt(2 (1 - K_w(delta)))`` without its cancellation near zero; ``weights`` (amplitudes per
    pair, default equal) are normalised to sum to one. Shape of ``deltas``.
    """
    th = v.frequencies(theta)
    w = v.pair_weights(weights, th.size, name="weights (amplitudes)")
    scale = v.real("scale", scale, greater_than=0.0)
    d = v.finite_array("deltas", deltas)
    if d.size and not np.isfinite(float(np.abs(d).max()) * scale * float(th.max())):
        raise ValueError("deltas * scale * theta overflows: use smaller offsets or scale")
    return distance_kernel(d, th, scale, w)


def distance_kernel(deltas: np.ndarray, th: np.ndarray, scale: float, w: np.ndarray) -> np.ndarray:
    """:func:`difference_distance` without its checks: float64 ``deltas``, a bank, a positive scale, weights summing to 1.

    Examples
    --------
    >>> distance_kernel(np.array([np.pi]), np.array([1.0]), 1.0, np.array([1.0])).tolist()
    [2.0]
    """
    flat = np.asarray(deltas, dtype=np.float64).reshape(-1)
    out = np.empty(flat.size)
    half = 0.5 * scale * th
    step = max(1, _CELLS // th.size)
    for s in range(0, flat.size, step):
        sn = np.sin(np.multiply.outer(flat[s : s + step], half))
        out[s : s + step] = 4.0 * (sn * sn) @ w
    return np.sqrt(out).reshape(np.shape(deltas))


def _signatures(positions, th, dt, scale, w):
    """Generated signatures scaled by sqrt(w): rows of length 2 * pairs."""
    cos, sin = phase_table(np.asarray(positions, dtype=np.float64), th, dt, scale)
    r = np.sqrt(w)
    return np.concatenate([cos * r, sin * r], axis=-1)


def pairwise_distances(offsets, theta, *, dtype="float64", scale: float = 1.0, origin: float = 0.0, weights=None) -> np.ndarray:
    """Every pairwise phase distance between the signatures generated in ``dtype``: ``(n, n)``, offsets sorted.

    Arguments as in :func:`separation_margin` (2 to :data:`MAX_MATRIX` offsets).
    """
    th, dt, scale, origin = _common(theta, dtype, scale, origin)
    off = offset_array(offsets, MAX_MATRIX)
    w = v.pair_weights(weights, th.size, name="weights (amplitudes)")
    _check_cells(off.size * off.size * th.size, f"a {off.size:,} x {off.size:,} distance matrix with {th.size} pairs")
    sig = _signatures(origin + off, th, dt, scale, w)
    out = np.empty((off.size, off.size))
    rows = max(1, _CELLS // (off.size * sig.shape[1] + 1))
    for s in range(0, off.size, rows):
        diff = sig[s : s + rows, None, :] - sig[None, :, :]
        out[s : s + rows] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    return out


@dataclass(frozen=True)
class BandMargin:
    """The margin seen by one frequency band alone (pairs ``first .. last``, fastest first)."""

    band: int
    first_pair: int
    last_pair: int
    shortest_wavelength: float
    longest_wavelength: float
    margin: float
    pair: tuple[float, float]


@dataclass(frozen=True)
class SeparationMargin:
    """The result of :func:`separation_margin`: the smallest distance (the worst band's under bands), its pair.

    ``method`` is ``"difference"`` (translation invariance) or ``"generated"``. ``tied`` pairs attain
    the margin (exact phases: to :data:`TIE_RTOL`; generated: within the phases' rounding), at
    ``differences``; ``pair`` is then one of them, chosen by rounding.
    """

    margin: float
    pair: tuple[float, float]
    n_offsets: int
    method: str
    dtype: str
    scale: float
    origin: float
    weighting: str
    bands: tuple[BandMargin, ...] = field(default_factory=tuple)
    tied: int = 1
    differences: tuple = ()
    ties: str = ""

    @property
    def confusable(self) -> str:
        """The most confusable pairs in words: the class when several tie, never a winner chosen by rounding."""
        return self.ties or f"offsets {self.pair[0]:,g} and {self.pair[1]:,g}"

    def __str__(self) -> str:
        text = (
            f"margin {self.margin:.6g} between {self.confusable} "
            f"({self.n_offsets} offsets, {self.dtype}, scale {self.scale:g}, {self.method})"
        )
        for band in self.bands:
            text += (
                f"\n  band {band.band} (pairs {band.first_pair}-{band.last_pair}, wavelengths "
                f"{band.shortest_wavelength:,.4g}-{band.longest_wavelength:,.4g}): margin {band.margin:.6g} "
                f"at ({band.pair[0]:g}, {band.pair[1]:g})"
            )
        return text


def _arithmetic_step(off: np.ndarray) -> float | None:
    steps = np.diff(off)
    return float(steps[0]) if np.all(steps == steps[0]) else None


def _margin_difference(off, th, scale, w):
    """Margin by translation invariance; ``None`` if the set does not suit it."""
    step = _arithmetic_step(off)
    if step is not None:
        k = np.arange(1, off.size, dtype=np.float64)
        d = distance_kernel(k * step, th, scale, w)
        j = int(np.argmin(d))
        return float(d[j]), (float(off[0]), float(off[0] + k[j] * step))
    integral = np.all(off == np.round(off))
    span = off[-1] - off[0]
    if not integral or span > _MAX_SPAN:
        return None
    _check_cells(span * th.size, f"a difference table over a span of {int(span):,} positions with {th.size} pairs")
    _check_cells(off.size * off.size, f"comparing every pair of {off.size:,} unevenly spaced offsets "
                "(an evenly spaced set, such as a range, is cheap at any size)")
    table = distance_kernel(np.arange(int(span) + 1, dtype=np.float64), th, scale, w)
    idx = (off - off[0]).astype(np.int64)
    best, pair = math.inf, None
    rows = max(1, _CELLS // off.size)
    for s in range(0, off.size - 1, rows):
        e = min(off.size - 1, s + rows)
        diff = idx[None, :] - idx[s:e, None]  # (rows, n)
        dist = np.where(diff > 0, table[np.clip(diff, 0, None)], np.inf)
        flat = int(np.argmin(dist))
        r, c = divmod(flat, off.size)
        if dist[r, c] < best:
            best, pair = float(dist[r, c]), (float(off[s + r]), float(off[c]))
    return best, pair


def _check_cells(cells: float, what: str) -> None:
    if cells > MAX_MARGIN_CELLS:
        raise ValueError(f"{what} evaluates {int(cells):,} entries, more than MAX_MARGIN_CELLS = {MAX_MARGIN_CELLS:,}; "
                         "use fewer offsets, a shorter span or fewer pairs")


def _squared_distances(sig: np.ndarray):
    """Row blocks ``(start, d2)`` of squared distances between rows of ``sig``, each pair once (else ``inf``)."""
    n = sig.shape[0]
    norms = np.einsum("ij,ij->i", sig, sig)
    rows = max(1, _CELLS // n)
    for s in range(0, n - 1, rows):
        e = min(n - 1, s + rows)
        d2 = norms[s:e, None] + norms[None, :] - 2.0 * (sig[s:e] @ sig.T)
        d2[np.arange(e - s)[:, None] >= np.arange(n)[None, :] - s] = np.inf  # keep j > row
        yield s, d2


def _margin_generated(off, th, dt, scale, origin, w):
    _check_cells(off.size * off.size * th.size, f"distances between {off.size:,} offsets from generated phases "
                f"with {th.size} pairs")
    sig = _signatures(origin + off, th, dt, scale, w)
    # exact collapse: identical generated rows are at distance exactly 0
    _, first, inverse = np.unique(sig, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    repeated = np.flatnonzero(first[inverse] != np.arange(off.size))
    if repeated.size:
        j = int(repeated[0])
        return 0.0, (float(off[first[inverse[j]]]), float(off[j]))
    best, pair = math.inf, None
    for s, d2 in _squared_distances(sig):
        flat = int(np.argmin(d2))
        r, c = divmod(flat, off.size)
        if d2[r, c] < best:
            best, pair = float(d2[r, c]), (s + r, c)
    j, k = pair
    exact = float(np.sqrt(np.sum((sig[j] - sig[k]) ** 2)))  # recomputed without cancellation
    return exact, (float(off[j]), float(off[k]))


def band_slices(pairs: int, bands: int) -> list[slice]:
    """Split ``pairs`` rotary pairs (fastest first) into ``bands`` contiguous, near-equal bands (equal wavelength ratios)."""
    pairs = v.integer("pairs", pairs, minimum=1, maximum=v.MAX_HEAD_DIM // 2)
    edges = np.linspace(0, pairs, v.integer("bands", bands, minimum=1, maximum=pairs) + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


# ties: the class of pairs that attains the margin
#: Two exact distances closer than this (relative) count as equal: far above float64 rounding.
TIE_RTOL = 1e-9
_TIE_CAP = 1 << 16  # tied pairs collected one by one from generated phases (counts beyond are bounds)


def _rounding_level(off, th, dt, scale, origin, w) -> float:
    """Twice the largest distance between a generated signature and its exact one (triangle inequality)."""
    if dt.exact:
        return 0.0
    worst = 0.0
    r = np.sqrt(w)
    step = max(1, _CELLS // (2 * th.size))
    for s in range(0, off.size, step):
        pos = origin + off[s : s + step]
        sig = _signatures(pos, th, dt, scale, w)
        ang = np.multiply.outer(pos * scale, th)
        exact = np.concatenate([np.cos(ang) * r, np.sin(ang) * r], axis=-1)
        worst = max(worst, float(np.sqrt(np.max(np.sum((sig - exact) ** 2, axis=-1)))))
    return 2.0 * worst


def _pairs_apart(off: np.ndarray, delta: float) -> int:
    """How many pairs of the (sorted, distinct) set are ``delta`` apart."""
    return int(np.count_nonzero(np.isin(off + delta, off)))


def _tied_generated(off, th, dt, scale, origin, w, limit) -> dict:
    """Differences of the pairs whose generated distance is at most ``limit``, with their counts."""
    sig = _signatures(origin + off, th, dt, scale, w)
    found: dict[float, int] = {}
    kept = 0
    slack = (limit + 1e-7) ** 2  # the Gram form loses digits: candidates are re-measured below
    for s, d2 in _squared_distances(sig):
        rr, cc = np.nonzero(d2 <= slack)
        if kept + rr.size > _TIE_CAP:
            rr, cc = rr[: _TIE_CAP - kept], cc[: _TIE_CAP - kept]
        exact = np.sqrt(np.sum((sig[s + rr] - sig[cc]) ** 2, axis=-1))
        for j, k in zip((s + rr)[exact <= limit], cc[exact <= limit]):
            delta = float(off[k] - off[j])
            found[delta] = found.get(delta, 0) + 1
        kept += rr.size
        if kept >= _TIE_CAP:
            break
    return found


def _tie_class(off, th, dt, scale, origin, w, margin, method) -> tuple[int, str, tuple]:
    """``(tied pairs, description, differences)`` of the pairs that attain ``margin`` within rounding."""
    if method == "difference":
        step = _arithmetic_step(off)
        limit = margin * (1 + TIE_RTOL) + 1e-15
        if step is not None:
            k = np.arange(1, off.size, dtype=np.float64)
            d = distance_kernel(k * step, th, scale, w)
            deltas = k[d <= limit][:1000] * step
        else:
            span = int(off[-1] - off[0])
            d = distance_kernel(np.arange(1, span + 1, dtype=np.float64), th, scale, w)
            deltas = (np.flatnonzero(d <= limit) + 1.0)[:1000]
        found = {float(x): _pairs_apart(off, float(x)) for x in deltas}
    else:
        tol = 0.0 if margin == 0.0 else max(_rounding_level(off, th, dt, scale, origin, w), TIE_RTOL * margin)
        found = _tied_generated(off, th, dt, scale, origin, w, margin + tol)
    found = {k: c for k, c in sorted(found.items()) if c > 0}
    tied = sum(found.values())
    how = ("tied" if method == "difference" else "identical signatures" if margin == 0.0 else "tied within rounding")
    return tied, _describe_ties(off, found, tied, how), tuple(found)


def _describe_ties(off, found: dict, tied: int, how: str) -> str:
    """Name the class of pairs attaining the margin; a single pair only when it alone attains it."""
    if tied <= 1 or not found:
        return ""
    if len(found) == 1:
        delta, count = next(iter(found.items()))
        every = _pairs_apart(off, delta)
        step = _arithmetic_step(off)
        what = "adjacent pair" if (step is not None and delta == step) else f"pair {delta:,g} apart"
        if count >= every:
            return f"every {what} ({count:,} pairs, {how})"
        return f"{count:,} of the {every:,} pairs {delta:,g} apart ({how})"
    shown = ", ".join(f"{d:,g}" for d in list(found)[:5]) + (", ..." if len(found) > 5 else "")
    return f"{tied:,} pairs at differences {shown} ({how})"


def _margin_core(off, th, dt, scale, origin, w, method):
    if method in ("auto", "difference") and dt.exact:
        res = _margin_difference(off, th, scale, w)
        if res is not None:
            return res + ("difference",)
        if method == "difference":
            raise ValueError(
                "method='difference' needs offsets in arithmetic progression or integers spanning at most "
                f"{_MAX_SPAN:,}; use method='generated'"
            )
    elif method == "difference":
        raise ValueError(f"method='difference' assumes exact (float64) phases, got dtype={dt.label}")
    if off.size > MAX_DIRECT:
        raise ValueError(
            f"offsets holds {off.size:,} offsets; distances from generated phases allow at most {MAX_DIRECT:,} "
            "(the cost grows as the square): use float64 phases with a range, or fewer offsets"
        )
    return _margin_generated(off, th, dt, scale, origin, w) + ("generated",)


def separation_margin(offsets, theta=None, *, operator: RotaryOperator | None = None, seq_len: int | None = None,
                      dtype="float64", scale: float | None = None, origin: float = 0.0, weighting="pair",
                      bands: int = 4, method: str = "auto") -> SeparationMargin:
    """The smallest phase distance between the signatures of a required offset set.

    ``offsets``: 2 to :data:`MAX_OFFSETS` distinct, non-negative offsets (:data:`MAX_DIRECT` from
    generated phases). ``theta`` or ``operator`` (its bank at ``seq_len`` and scale, trusted), as
    in :func:`ropegeo.geometry.kernel`. ``dtype``: the phase pipeline
    (:func:`ropegeo.precision.as_pipeline`). Offset ``a`` sits at position ``origin + a`` (decisive
    in low precision). ``weighting``: ``"pair"`` (equal), ``"band"`` (the worst of ``bands``
    contiguous bands, each judged alone) or amplitudes per pair. ``ValueError`` names a bad argument.

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> m = separation_margin(range(1, 9000), frequencies(8))
    >>> m.pair[1] - m.pair[0]
    6283.0
    """
    th, dt, scale, origin = _common(theta, dtype, scale, origin, operator, seq_len)
    if method not in ("auto", "difference", "generated"):
        raise ValueError(f"method must be one of 'auto', 'difference', 'generated', got {method!r}")
    off = offset_array(offsets, MAX_OFFSETS if (dt.exact and method != "generated") else MAX_DIRECT)
    w = None
    if isinstance(weighting, str):
        if weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be 'pair', 'band' or an array of amplitudes, got {weighting!r}")
        bands = band_slices(th.size, bands) if weighting == "band" else None
    else:
        w, bands = v.pair_weights(weighting, th.size, name="weights (amplitudes)"), None
    return margin_kernel(off, th, dt, scale, origin, w, bands=bands, method=method)


def margin_kernel(off: np.ndarray, th: np.ndarray, dt, scale: float = 1.0, origin: float = 0.0, w=None, *,
                  bands: list | None = None, method: str = "auto") -> SeparationMargin:
    """:func:`separation_margin` without its checks: offsets from :func:`offset_array`, a pipeline ``dt``,
    weights summing to one (``None``: equal), ``bands`` from :func:`band_slices` (``None``: one band).

    Examples
    --------
    >>> from ropegeo.precision import uniform
    >>> margin_kernel(np.array([0.0, np.pi]), np.array([1.0]), uniform("float64")).margin
    2.0
    """
    label = "amplitudes" if w is not None else "pair" if bands is None else "band"
    band_list: tuple[BandMargin, ...] = ()
    if bands is not None:
        lam = 2 * np.pi / np.where(th > 0, th, np.nan)
        results = []
        for b, sl in enumerate(bands):
            sub = th[sl]
            m, pair, how = _margin_core(off, sub, dt, scale, origin, np.full(sub.size, 1.0 / sub.size), method)
            results.append(
                BandMargin(b, sl.start, sl.stop - 1, float(np.nanmin(lam[sl])) if np.any(sub > 0) else math.inf,
                           float(np.nanmax(lam[sl])) if np.any(sub > 0) else math.inf, m, pair)
            )
        band_list = tuple(results)
        worst = min(results, key=lambda r: r.margin)
        margin, pair = worst.margin, worst.pair
        sl = bands[worst.band]
        tie_th, tie_w = th[sl], np.full(sl.stop - sl.start, 1.0 / (sl.stop - sl.start))
    else:
        ww = np.full(th.size, 1.0 / th.size) if w is None else w
        margin, pair, how = _margin_core(off, th, dt, scale, origin, ww, method)
        tie_th, tie_w = th, ww
    tied, ties, diffs = _tie_class(off, tie_th, dt, scale, origin, tie_w, margin, how)
    return SeparationMargin(
        margin=float(margin), pair=pair, n_offsets=int(off.size), method=how, dtype=dt.label,
        scale=scale, origin=origin, weighting=label, bands=band_list, tied=max(tied, 1), differences=diffs,
        ties=ties,
    )


# the behavioural probe: inject a pair into a toy attention head
@dataclass(frozen=True)
class ProbeResult:
    """Attention weights and scores over the keys (the target first), the target's mass, the winner's index."""

    weights: np.ndarray
    scores: np.ndarray
    target_mass: float
    winner: int


def attention_probe(
    target: float,
    distractors,
    theta,
    *,
    amplitudes=None,
    sharpness: float = 8.0,
    dtype="float64",
    scale: float = 1.0,
    query_position: float = 0.0,
) -> ProbeResult:
    """A content-free rotary head tuned to ``target``, facing keys at 1 to 4,096 ``distractors`` offsets.

    The query sits at ``query_position``, a key at offset ``delta`` at ``query_position - delta``;
    pair ``i`` of the query holds ``(a_i, 0)``, ``a_i**2 = sharpness * sqrt(d) * w_i`` (``w``: the
    ``amplitudes``, default equal), every key the query rotated by ``target``; both are rotated in
    the pipeline ``dtype`` and scored by their dot product over ``sqrt(d)``. With exact phases the
    target beats a distractor at ``b`` by ``sharpness * D(target, b)**2 / 2``. ``sharpness`` is at
    most 1000, the head width at most 4096.

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> round(attention_probe(1, [2], frequencies(128), sharpness=100).target_mass, 3)
    0.952
    """
    th = v.frequencies(theta)
    if 2 * th.size > 4096:
        raise ValueError(f"theta has {th.size} pairs; the probe allows at most 2048")
    target = v.real("target", target, minimum=0.0)
    dis = v.finite_array("distractors", distractors).reshape(-1)
    if dis.size < 1 or dis.size > MAX_MATRIX:
        raise ValueError(f"distractors must hold between 1 and {MAX_MATRIX} offsets, got {dis.size}")
    if np.any(dis < 0):
        raise ValueError("distractors must be non-negative offsets")
    w = v.pair_weights(amplitudes, th.size, name="weights (amplitudes)")
    sharpness = v.real("sharpness", sharpness, greater_than=0.0, maximum=1000.0)
    pipe = as_pipeline(dtype)
    scale = v.real("scale", scale, greater_than=0.0)
    qpos = v.real("query_position", query_position)
    d = 2 * th.size
    amp = np.sqrt(sharpness * math.sqrt(d) * w)
    # key content: the query rotated by the target offset (exact)
    kc, ks = amp * np.cos(target * scale * th), amp * np.sin(target * scale * th)
    keys = np.concatenate([[target], dis])
    cq, sq = phase_table(np.array([qpos]), th, pipe, scale)
    ck, sk = phase_table(qpos - keys, th, pipe, scale)
    qa, qb = pipe.rotate(amp, 0.0, cq, sq)
    ka, kb = pipe.rotate(kc, ks, ck, sk)
    scores = (qa * ka + qb * kb).sum(axis=-1) / math.sqrt(d)
    weights = softmax(scores)
    return ProbeResult(weights, scores, float(weights[0]), int(np.argmax(weights)))


def probe_mass(margin, sharpness: float):
    """Closed-form target mass ``1 / (1 + exp(-sharpness * margin**2 / 2))`` of the probe against one distractor.

    ``margin`` (phase distances, a float or an array) is returned alike.

    Examples
    --------
    >>> round(probe_mass(0.5, 2 * math.log(9) / 0.25), 3)
    0.9
    """
    beta = v.real("sharpness", sharpness, greater_than=0.0)
    m = v.finite_array("margin", margin)
    out = 1.0 / (1.0 + np.exp(-beta * m * m / 2.0))
    return float(out) if out.ndim == 0 else out

