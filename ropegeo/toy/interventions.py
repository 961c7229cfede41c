"""Interventions that tell position schemes apart, each returning a measured number.

Every function here works on a :class:`PositionHead`: an :class:`~ropegeo.toy.attention.AttentionLayer`
with any position scheme, fed the same token at every slot, so that whatever it attends to is
decided by positions alone. Trained heads from :mod:`ropegeo.toy.alternatives` are PositionHeads too,
so a fixed-formula scheme and a trained model go through exactly the same measurement.

The head attends to *strictly earlier* keys (a query never sees itself), as the heads of Gate C
(:mod:`ropegeo.toy`) do; the query in slot 0 sees nothing and is never scored. The task is
the displacement task of Gate C: the query in slot ``m`` should attend to the key in slot
``m - offset``.

Each intervention returns a measured number: :func:`global_shift`, :func:`local_displacement`,
:func:`length_stretch`, :func:`sparse_retrieval`, :func:`construction_gap` (guaranteed against
achieved shift invariance), :func:`needle_retrieval` (content) and :func:`match_task` (a :class:`TokenHead`).

"Winner" is the key with the largest weight; a query counts as *correct* when the target's weight
is larger than every other visible key's by more than :data:`TIE` (ties are not correct, so a head
that cannot tell keys apart scores 0, not a lucky argmax; and a "win" by rounding noise is a tie,
since another CPU's rounding could reverse it). "Mass" is the weight on the target.
"""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from ropegeo import _validate as v
from ropegeo.softmax import softmax
from ropegeo.toy import match_targets, seed_list
from ropegeo.toy.attention import MAX_WIDTH, AttentionLayer
from ropegeo.toy.schemes import MAX_ENTRIES, make_scheme

__all__ = ["PositionHead", "TaskResult", "ShiftResult", "DisplacementResult", "StretchResult", "GapResult",
           "position_head", "strict_attention", "offset_task", "global_shift", "local_displacement", "length_stretch",
           "sparse_retrieval", "construction_gap", "NeedleResult", "needle_retrieval", "TokenHead", "match_task",
           "MatchCeilings", "match_ceilings", "MAX_PROBE_LENGTH", "MAX_PAIRS", "MAX_FACTORS", "MAX_GAIN"]

#: Longest sequence an intervention runs (a length x length score matrix of 128 MiB at most).
MAX_PROBE_LENGTH = 4096
#: Most (query, key) pairs one :meth:`PositionHead.pair_scores` call scores at width 16 (fewer when wider).
MAX_PAIRS = 2**22
#: Most stretch factors one :func:`length_stretch` (or ``compare_schemes``) call runs.
MAX_FACTORS = 16
# match_task scores its query rows in blocks of at most this many cells (16 MiB per working copy).
_ROW_CELLS = 1 << 21
#: Attention weights closer than this count as tied (a "win" by rounding would flip on another machine).
TIE = 1e-9
#: Largest ``gain`` of :func:`needle_retrieval` (larger ones would overflow the projections).
MAX_GAIN = 1e6


def _named(layer, name) -> tuple:
    """A head's checked layer and its label (default: the scheme's registered name)."""
    if not isinstance(layer, AttentionLayer):
        raise ValueError(f"layer must be an AttentionLayer, got {type(layer).__name__}")
    return layer, getattr(layer.scheme, "name", type(layer.scheme).__name__) if name is None else str(name)


class PositionHead:
    """An attention layer fed one fixed ``token`` (default ``e_0``) at every slot: a head that sees positions only.

    Raises ValueError for a layer that is not an AttentionLayer or a token of the wrong width.
    """

    def __init__(self, layer: AttentionLayer, token=None, name: str | None = None):
        self.layer, self.name = _named(layer, name)
        if token is None:
            token = np.zeros(layer.d_model)
            token[0] = 1.0
        t = v.finite_array("token", token)
        if t.shape != (layer.d_model,):
            raise ValueError(f"token must have shape ({layer.d_model},), got {t.shape}")
        self.token = t

    def __repr__(self) -> str:
        return f"PositionHead({self.name!r}, {self.layer!r})"

    def scores(self, positions) -> np.ndarray:
        """Pre-softmax scores of a sequence at ``positions`` (1-D, length L): shape (L, L)."""
        pos = _positions(positions)
        x = np.broadcast_to(self.token, (pos.size, self.token.size))
        return self.layer.scores(x, pos)

    def pair_scores(self, q_positions, k_positions) -> np.ndarray:
        """Score of a query at ``q_positions`` against a key at ``k_positions`` (broadcast together; at most
        :data:`MAX_PAIRS` pairs at width 16, proportionally fewer when wider), each pair run as its own
        two-token sequence.
        """
        qp = v.finite_array("q_positions", q_positions)
        kp = v.finite_array("k_positions", k_positions)
        try:
            qp, kp = np.broadcast_arrays(qp, kp)
        except ValueError:
            raise ValueError(f"q_positions {qp.shape} and k_positions {kp.shape} do not broadcast") from None
        width = max(self.token.size, self.layer.head_dim)
        most = max(1, MAX_PAIRS * 16 // width)  # the work of one pair grows with the layer's width
        if qp.size > most:
            raise ValueError(f"q_positions and k_positions broadcast to {qp.size:,} pairs; at most {most:,} for a "
                             f"width of {width} (MAX_PAIRS = {MAX_PAIRS:,} pairs at width 16)")
        flat = np.stack([kp.ravel(), qp.ravel()], axis=-1)  # (n, 2)
        out = np.empty(flat.shape[0])
        step = max(1, MAX_ENTRIES // (8 * max(self.token.size, self.layer.head_dim)))
        for s in range(0, flat.shape[0], step):
            part = flat[s : s + step]
            x = np.broadcast_to(self.token, part.shape + (self.token.size,))
            out[s : s + step] = self.layer.scores(x, part)[:, 1, 0]
        return out.reshape(qp.shape)


def position_head(scheme="none", *, d_model: int = 16, seed=0, **options) -> PositionHead:
    """A :class:`PositionHead` around a freshly drawn layer of any registered scheme (``options``: the scheme's)."""
    return PositionHead(AttentionLayer(d_model, scheme=scheme, seed=seed, **options))


def _positions(positions) -> np.ndarray:
    pos = v.finite_array("positions", positions)
    if pos.ndim != 1 or pos.size < 2:
        raise ValueError(f"positions must be a 1-D array of at least 2 positions, got shape {pos.shape}")
    if pos.size > MAX_PROBE_LENGTH:
        raise ValueError(f"positions has {pos.size} entries; at most MAX_PROBE_LENGTH = {MAX_PROBE_LENGTH} are allowed")
    return pos


def _length(name: str, length, minimum: int = 2) -> int:
    return v.integer(name, length, minimum=minimum, maximum=MAX_PROBE_LENGTH)


def _head(head) -> PositionHead:
    if not isinstance(head, PositionHead):
        raise ValueError(f"head must be a PositionHead (see position_head), got {type(head).__name__}")
    return head


def _strict(scores: np.ndarray) -> np.ndarray:
    """Softmax over strictly earlier keys; row 0 (no key) is all zeros."""
    L = scores.shape[-1]
    w = np.zeros_like(scores)
    earlier = np.tri(L, L, -1, dtype=bool)
    w[1:] = softmax(scores[1:], earlier[1:])
    return w


def strict_attention(head: PositionHead, positions) -> np.ndarray:
    """Attention weights over strictly earlier slots for ``positions`` (L,): shape (L, L); row 0 is all zeros."""
    return _strict(_head(head).scores(positions))


class TaskResult(NamedTuple):
    """The displacement task on one sequence: per-query arrays and their means."""

    #: Fraction of scored queries whose target is the strict winner.
    accuracy: float
    #: Mean attention weight on the target.
    mass: float
    #: Slot of each scored query (``offset .. L - 1``).
    query: np.ndarray
    #: Target weight per scored query.
    target_mass: np.ndarray
    #: Whether the target is the strict winner, per scored query.
    correct: np.ndarray


def _task(weights: np.ndarray, offset: int) -> TaskResult:
    L = weights.shape[-1]
    m = np.arange(offset, L)
    t = m - offset
    tw = weights[m, t]
    others = weights[m]  # fancy indexing: already a copy
    others[np.arange(m.size), t] = -np.inf
    others[np.arange(L)[None, :] >= m[:, None]] = -np.inf  # keys the query cannot see
    correct = tw > others.max(axis=1) + TIE
    return TaskResult(float(correct.mean()), float(tw.mean()), m, tw, correct)


def offset_task(head: PositionHead, length: int, offset: int, *, positions=None) -> TaskResult:
    """Score the head on the displacement task over queries ``m = offset .. L - 1``: slot ``m`` should attend to slot ``m - offset``.

    ``positions`` default to ``0 .. length - 1``. Raises ValueError for lengths or offsets out of range
    or positions the scheme refuses.
    """
    offset = v.integer("offset", offset, minimum=1, maximum=MAX_PROBE_LENGTH - 1)
    length = _length("length", length, minimum=offset + 1)
    pos = np.arange(length, dtype=np.float64) if positions is None else _positions(positions)
    if pos.size != length:
        raise ValueError(f"positions must have length {length}, got {pos.size}")
    return _task(strict_attention(head, pos), offset)


class ShiftResult(NamedTuple):
    """What a global shift of every position id changes."""

    #: Largest change of any attention weight.
    weight_change: float
    #: Largest change of any score between a query and a visible (earlier) key.
    score_change: float
    #: Fraction of queries (slots 1 .. L - 1) whose winning key slot is unchanged.
    winners_kept: float


def global_shift(head: PositionHead, length: int, shift: float, *, start: float = 0.0) -> ShiftResult:
    """Shift every position id of ``start .. start + length - 1`` by ``shift`` and measure what changes.

    All zero for a scheme whose scores depend on displacements only. Raises ValueError for bad
    arguments or shifted positions the scheme refuses.
    """
    head = _head(head)
    length = _length("length", length)
    shift = v.real("shift", shift)
    start = v.real("start", start)
    with np.errstate(over="ignore"):
        pos = start + np.arange(length, dtype=np.float64)
        finite = np.all(np.isfinite(pos)) and np.all(np.isfinite(pos + shift))
    if not finite:
        raise ValueError(f"start={start:g} and shift={shift:g} put position ids beyond the float range")
    s0, s1 = head.scores(pos), head.scores(pos + shift)
    w0, w1 = _strict(s0), _strict(s1)
    visible = np.tri(length, length, -1, dtype=bool)
    kept = np.argmax(w0[1:], axis=1) == np.argmax(w1[1:], axis=1)
    return ShiftResult(float(np.max(np.abs(w1 - w0))), float(np.max(np.abs(s1 - s0)[visible])), float(kept.mean()))


class DisplacementResult(NamedTuple):
    """What moving the target key one step changes, averaged over the queries that see it."""

    #: Mean change of the moved key's score (logit); negative: the head likes it less.
    score_change: float
    #: Mean attention on the target key before the move.
    mass_before: float
    #: Mean attention on the same key after the move.
    mass_after: float


def local_displacement(head: PositionHead, length: int, offset: int, *, step: float = 1.0) -> DisplacementResult:
    """Move the target key ``step`` positions farther from each query, leaving everything else.

    The key in slot ``m - offset`` gets position id ``m - offset - step``; the query's row is re-scored
    with that one entry changed. Queries whose moved key would leave ``0 .. length - 1`` are skipped.
    Raises ValueError for bad arguments or moved positions the scheme refuses.
    """
    head = _head(head)
    offset = v.integer("offset", offset, minimum=1, maximum=MAX_PROBE_LENGTH - 1)
    length = _length("length", length, minimum=offset + 1)
    step = v.real("step", step)
    pos = np.arange(length, dtype=np.float64)
    s = head.scores(pos)
    m = np.arange(offset, length)
    t = m - offset
    inside = (pos[t] - step >= pos[0]) & (pos[t] - step <= pos[-1])
    m, t = m[inside], t[inside]
    if m.size == 0:
        raise ValueError(f"step={step:g} moves every target key out of the sequence's range 0 .. {length - 1}")
    before = _strict(s)[m, t]
    moved = head.pair_scores(pos[m], pos[t] - step)
    rows = s[m].copy()
    change = moved - rows[np.arange(m.size), t]
    rows[np.arange(m.size), t] = moved
    visible = np.arange(length)[None, :] < m[:, None]
    after = softmax(rows, visible)[np.arange(m.size), t]
    return DisplacementResult(float(change.mean()), float(before.mean()), float(after.mean()))


class StretchResult(NamedTuple):
    """The displacement task at several multiples of the training length."""

    #: The multiples evaluated.
    factors: tuple
    #: The lengths ``factor * train_length``.
    lengths: tuple
    #: Accuracy at each length, shape (len(factors),); NaN where the scheme refuses the positions.
    accuracy: np.ndarray
    #: Mean target mass at each length; NaN where refused.
    mass: np.ndarray
    #: Why a length was refused (one message per factor, None where it ran).
    refused: tuple


def length_stretch(head: PositionHead, train_length: int, offset: int, factors=(2, 4, 8)) -> StretchResult:
    """Run the displacement task at ``factor * train_length`` for every factor (at most :data:`MAX_FACTORS`).

    A scheme that refuses the positions (an absolute table that ends) gives NaN and the refusal
    message instead of raising: "undefined" is the measured answer.
    """
    head = _head(head)
    offset = v.integer("offset", offset, minimum=1, maximum=MAX_PROBE_LENGTH - 1)
    train_length = _length("train_length", train_length, minimum=offset + 1)
    if not v.is_collection(factors):
        raise ValueError(f"factors must be an iterable of integer multiples such as (2, 4, 8), got {factors!r}")
    fs = tuple(v.integer("factors", f, minimum=1, maximum=MAX_PROBE_LENGTH)
               for f in itertools.islice(factors, MAX_FACTORS + 1))
    if not fs:
        raise ValueError("factors must hold at least one multiple")
    if len(fs) > MAX_FACTORS:
        raise ValueError(f"factors must hold at most MAX_FACTORS = {MAX_FACTORS} multiples, got more")
    lengths = tuple(_length("factor * train_length", f * train_length) for f in fs)
    acc, mass, refused = [], [], []
    for n in lengths:
        try:  # ask the scheme first, so that only its refusal of the positions becomes NaN
            head.layer.scheme.check_positions(np.arange(n, dtype=np.float64))
        except ValueError as err:
            acc.append(math.nan)
            mass.append(math.nan)
            refused.append(str(err))
            continue
        r = offset_task(head, n, offset)
        acc.append(r.accuracy)
        mass.append(r.mass)
        refused.append(None)
    return StretchResult(fs, lengths, np.array(acc), np.array(mass), tuple(refused))


def sparse_retrieval(head: PositionHead, length: int, distance: int) -> TaskResult:
    """One relevant key ``distance`` back among all earlier keys: how much attention reaches it?

    The displacement task with a far target; keys that share its bucket (T5) or clipped vector
    (Shaw et al.) receive the same weight.
    """
    return offset_task(head, length, distance)


class GapResult(NamedTuple):
    """Guaranteed versus achieved invariance under a global shift."""

    #: Largest score change under the shift over random layers of the scheme with random
    #: content: 0 (to rounding) when the scheme guarantees shift invariance by construction.
    guaranteed_change: float
    #: Whether that change is at rounding level (below ``tolerance``).
    guaranteed: bool
    #: Fraction of the trained head's queries whose winner is unchanged by the same shift.
    achieved_winners_kept: float
    #: Largest change of the trained head's attention weights under the shift.
    achieved_weight_change: float


def construction_gap(head: PositionHead, length: int, shift: float, *, seeds=(0, 1, 2), tolerance: float = 1e-9) -> GapResult:
    """Compare the shift invariance a scheme guarantees with the one a trained head shows.

    The guarantee is measured on fresh random layers of the head's scheme with random content (one per
    seed); a change at most ``tolerance`` counts as rounding. Raises ValueError for a bad argument.
    """
    head = _head(head)
    length = _length("length", length)
    shift = v.real("shift", shift)
    tolerance = v.real("tolerance", tolerance, greater_than=0.0)
    seeds = seed_list(seeds)
    worst = 0.0
    for s in seeds:
        layer = AttentionLayer(head.layer.d_model, head.layer.head_dim, scheme=_fresh(head.layer.scheme), seed=s)
        x = np.random.default_rng(10_000 + s).standard_normal((length, head.layer.d_model))
        pos = np.arange(length, dtype=np.float64)
        worst = max(worst, float(np.max(np.abs(layer.scores(x, pos + shift) - layer.scores(x, pos)))))
    achieved = global_shift(head, length, shift)
    return GapResult(worst, worst <= tolerance, achieved.winners_kept, achieved.weight_change)


#: The options :func:`_fresh` copies to redraw a scheme of each kind.
_REDRAW = {"absolute": ("rows",), "t5": ("num_buckets", "max_distance", "bidirectional"), "none": (),
           "relative": ("max_distance", "values"), "sinusoidal": ("base",), "alibi": ("slope",)}


def _fresh(scheme):
    """A new scheme of the same kind and options, with nothing drawn yet."""
    name = getattr(scheme, "name", None)
    if name == "rope":
        return make_scheme("rope", attention_factor=scheme.attention_factor, **scheme.options)
    if name in _REDRAW:
        return make_scheme(name, **{k: getattr(scheme, k) for k in _REDRAW[name]})
    raise ValueError(f"construction_gap does not know how to redraw a {type(scheme).__name__}")


class NeedleResult(NamedTuple):
    """A content match among blanks, seen by the last query."""

    #: Attention of the last query on the matching key.
    mass: float
    #: Score of the matching key (logit).
    needle_score: float
    #: Largest score of any blank key.
    blank_score_max: float


def needle_retrieval(scheme="none", *, length: int = 512, distance: int = 40, gain: float = 8.0, d_model: int = 16,
                     token=None, seed=0, **options) -> NeedleResult:
    """One key whose content matches the last query, ``distance`` slots back among blank (zero) keys.

    Query and needle hold the unit ``token`` (default ``u = sqrt(2 / d) (1, 0, 1, 0, ...)``); the
    projections are ``sqrt(gain * sqrt(d_model))`` times the identity, so without positions the needle
    scores ``gain`` (at most :data:`MAX_GAIN`) and a blank 0. NoPE gives ``e^g / (e^g + m - 1)`` with
    ``m = length - 1``; RoPE scores the needle ``g K(distance)`` (:func:`ropegeo.geometry.kernel`).
    Raises ValueError for arguments out of range.
    """
    distance = v.integer("distance", distance, minimum=1, maximum=MAX_PROBE_LENGTH - 1)
    length = _length("length", length, minimum=distance + 1)
    gain = v.real("gain", gain, minimum=0.0, maximum=MAX_GAIN)
    d_model = v.head_dim(d_model, "d_model", maximum=MAX_WIDTH)
    layer = AttentionLayer(d_model, scheme=scheme, seed=seed, **options)
    c = math.sqrt(gain * math.sqrt(layer.head_dim))
    layer.Wq = c * np.eye(d_model, layer.head_dim)
    layer.Wk = c * np.eye(d_model, layer.head_dim)
    if token is None:
        u = np.zeros(d_model)
        u[0::2] = math.sqrt(2.0 / d_model)
    else:
        u = v.finite_array("token", token)
        if u.shape != (d_model,) or not np.any(u):
            raise ValueError(f"token must be a non-zero vector of shape ({d_model},), got shape {u.shape}")
        u = u / np.linalg.norm(u)
    x = np.zeros((length, d_model))
    x[-1] = u
    x[-1 - distance] = u
    row = layer.scores(x, np.arange(length, dtype=np.float64))[-1, :-1]
    w = softmax(row)
    needle = length - 1 - distance
    blanks = np.delete(row, needle)
    return NeedleResult(float(w[needle]), float(row[needle]), float(blanks.max()) if blanks.size else math.nan)


class TokenHead:
    """An attention layer that reads token ids through an ``embedding`` (vocab, d_model): content and positions.

    Raises ValueError for a layer that is not an AttentionLayer or an embedding of the wrong width.
    """

    def __init__(self, layer: AttentionLayer, embedding, name: str | None = None):
        self.layer, self.name = _named(layer, name)
        e = v.finite_array("embedding", embedding)
        if e.ndim != 2 or e.shape[0] < 2 or e.shape[1] != layer.d_model:
            raise ValueError(f"embedding must have shape (vocab >= 2, {layer.d_model}), got {e.shape}")
        self.embedding = e

    @property
    def vocab(self) -> int:
        return int(self.embedding.shape[0])

    def __repr__(self) -> str:
        return f"TokenHead({self.name!r}, vocab={self.vocab}, {self.layer!r})"

    def scores(self, tokens, positions=None) -> np.ndarray:
        """Scores of ``tokens`` (batch, L) -> (batch, L, L); positions default to ``0 .. L - 1``."""
        tok = np.asarray(tokens)
        if tok.ndim != 2 or not np.issubdtype(tok.dtype, np.integer) or tok.shape[1] < 2:
            raise ValueError(f"tokens must be an integer array (batch, L >= 2), got {tok.dtype} {tok.shape}")
        if tok.min() < 0 or tok.max() >= self.vocab:
            raise ValueError(f"tokens must lie in [0, vocab={self.vocab})")
        if tok.shape[1] > MAX_PROBE_LENGTH:
            raise ValueError(f"tokens has length {tok.shape[1]}; at most MAX_PROBE_LENGTH = {MAX_PROBE_LENGTH}")
        entries = tok.shape[0] * tok.shape[1] * max(tok.shape[1], self.layer.d_model, self.layer.head_dim)
        if entries > MAX_ENTRIES:
            raise ValueError(f"tokens of shape {tok.shape} would need {entries:,} entries for the inputs and scores; "
                             f"at most MAX_ENTRIES = {MAX_ENTRIES:,}: use fewer or shorter sequences")
        pos = np.arange(tok.shape[1], dtype=np.float64) if positions is None else _positions(positions)
        return self.layer.scores(self.embedding[tok], pos)


def match_task(head: TokenHead, length: int, *, sequences: int = 8, seed=12345, shift: float = 0.0) -> TaskResult:
    """Gate C's most-recent-match task: attend to the last earlier occurrence of your own token.

    ``sequences`` (1 to 256) random sequences from ``seed``; queries without an earlier occurrence are
    left out; ``shift`` moves every position id. Raises ValueError for a bad argument or sequences
    without any repeated token.
    """
    if not isinstance(head, TokenHead):
        raise ValueError(f"head must be a TokenHead, got {type(head).__name__}")
    length = _length("length", length)
    sequences = v.integer("sequences", sequences, minimum=1, maximum=256)
    shift = v.real("shift", shift)
    tok = _match_tokens(head.vocab, length, sequences, seed)
    target = match_targets(tok)
    out_q, out_m, out_c = [], [], []
    chunk = max(1, MAX_ENTRIES // (4 * length * length))
    earlier = np.tri(length, length, -1, dtype=bool)
    block = max(1, _ROW_CELLS // length)  # scored rows at a time
    for s0 in range(0, sequences, chunk):
        S = head.scores(tok[s0 : s0 + chunk], shift + np.arange(length, dtype=np.float64))
        tg = target[s0 : s0 + chunk]
        BI, MI = np.nonzero(tg >= 0)
        for r0 in range(0, BI.size, block):
            bi, mi = BI[r0 : r0 + block], MI[r0 : r0 + block]
            ti = tg[bi, mi]
            w = softmax(S[bi, mi], earlier[mi])
            tw = w[np.arange(ti.size), ti]
            others = np.where(earlier[mi], w, -np.inf)
            others[np.arange(ti.size), ti] = -np.inf
            out_q.append(mi)
            out_m.append(tw)
            out_c.append(tw > others.max(axis=1) + TIE)
    if not any(q.size for q in out_q):
        raise ValueError("no query has an earlier occurrence of its token; use longer or more sequences")
    q, mass, correct = np.concatenate(out_q), np.concatenate(out_m), np.concatenate(out_c)
    return TaskResult(float(correct.mean()), float(mass.mean()), q, mass, correct)


def _match_tokens(vocab: int, length: int, sequences: int, seed) -> np.ndarray:
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(v.integer("seed", seed, minimum=0))
    return rng.integers(0, vocab, size=(sequences, length))


class MatchCeilings(NamedTuple):
    """The best accuracies two schemes can reach on the sequences :func:`match_task` draws."""

    #: Share of scored queries whose token occurred exactly once before: the most a head without
    #: positions can get right, since several earlier copies of the token always tie.
    single_copy: float
    #: One minus the share of scored queries whose latest copy is ``clip`` or more slots back and
    #: has another copy even farther back: those tie under relative vectors clipped at ``clip``.
    clipped: float


def match_ceilings(length: int, *, vocab: int = 8, sequences: int = 8, seed=12345, clip: int = 16) -> MatchCeilings:
    """Accuracy ceilings of the most-recent-match task for NoPE and for relative vectors clipped at
    ``clip``, on the sequences :func:`match_task` draws.
    """
    length = _length("length", length)
    vocab = v.integer("vocab", vocab, minimum=2, maximum=4096)
    sequences = v.integer("sequences", sequences, minimum=1, maximum=256)
    clip = v.length("clip", clip)
    tok = _match_tokens(vocab, length, sequences, seed)
    target = match_targets(tok)
    scored = target >= 0
    if not scored.any():
        raise ValueError("no query has an earlier occurrence of its token; use longer or more sequences")
    # earlier copies of each slot's token: a running count per token type, minus the slot itself
    counts = np.zeros(tok.shape, dtype=np.int64)
    for t in range(vocab):
        same = tok == t
        counts += np.where(same, np.cumsum(same, axis=1) - 1, 0)
    far = (np.arange(length) - target >= clip) & (counts >= 2)
    return MatchCeilings(float(np.mean(counts[scored] == 1)), float(1.0 - np.mean(far[scored])))
