"""Gate C's two tiny attention heads, their losses with hand-derived gradients, and their trainers.

:class:`OffsetHead` is content-free: one learned ``q`` and ``k``, the same at every position, whose
score depends on the distance back ``delta = m - n`` only (the negative of the book's offset
``n - m``): ``score(delta) = sum_i a_i cos(delta theta_i) + b_i sin(delta theta_i)``. It is
trained to attend ``offset`` positions back. :class:`MatchHead` has query and key tables over a
small vocabulary and is trained to attend to the most recent earlier occurrence of the query's
token. Both attend to strictly earlier positions only (a match head allowed to see itself has a
rival at displacement 0). Training is deterministic for a seed.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields, replace

import numpy as np

from ropegeo import _validate as v
from ropegeo.rotation import phase_angles
from ropegeo.scaling import MAX_FACTOR, Schedule, extension_schedule, rule_name
from ropegeo.softmax import exp_rows, softmax_rows, softmax_segments
from ropegeo.toy.training import (MAX_BATCH, MAX_HEAD_LENGTH, MAX_MATCH_LENGTH, MAX_STEP_BYTES, MAX_TRAINED_HEAD_DIM,
                                  MAX_VOCAB, Adam, _pair_coefficients, _pair_gradients, _rng, check_match_step,
                                  check_theta, check_trained, match_step_bytes, one_blas_thread, _rotary_bank,
                                  seed_list, training_settings)


@dataclass(frozen=True, kw_only=True)
class _TrainedHead:
    """What both trained heads record beside their vectors: the schedule last trained under, ``base`` of the
    original one (``None`` for an explicit theta), every stage's ``losses`` concatenated and its settings."""

    theta: np.ndarray
    scale: float
    train_length: int
    base: float | None
    original_train_length: int
    seed: int | None
    losses: np.ndarray
    stages: tuple = ()
    attention_factor: float = 1.0

    def to_dict(self) -> dict:
        """Plain-Python form (arrays as lists; ``final_loss`` for the losses)."""
        out = {"kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "losses":
                out["final_loss"] = float(value[-1]) if value.size else None
            else:
                out[f.name] = value.tolist() if isinstance(value, np.ndarray) else list(value) if f.name == "stages" else value
        return out


@dataclass(frozen=True, kw_only=True)
class OffsetHead(_TrainedHead):
    """A trained content-free head: one query vector ``q`` and one key vector ``k`` (interleaved
    pairs), rotated by position, trained to attend ``offset`` back; the other fields are the
    training record (see the module)."""

    q: np.ndarray
    k: np.ndarray
    offset: int
    kind = "offset"

    @property
    def head_dim(self) -> int:
        return int(self.q.size)

    def coefficients(self) -> tuple[np.ndarray, np.ndarray]:
        """The learned pair coefficients ``(a, b)`` of the score, each shape (head_dim // 2,)."""
        return _pair_coefficients(self.q, self.k)

    def amplitudes(self) -> np.ndarray:
        """``hypot(a_i, b_i)``: the weight of each pair in the score."""
        a, b = self.coefficients()
        return np.hypot(a, b)


@dataclass(frozen=True, kw_only=True)
class MatchHead(_TrainedHead):
    """A trained content-and-position head: row ``t`` of ``q_table`` / ``k_table`` (vocab, head_dim) is
    token ``t``'s query / key before rotation; the other fields as in :class:`OffsetHead`.
    """

    q_table: np.ndarray
    k_table: np.ndarray
    kind = "match"

    @property
    def head_dim(self) -> int:
        return int(self.q_table.shape[1])

    @property
    def vocab(self) -> int:
        return int(self.q_table.shape[0])

    def coefficients(self) -> tuple[np.ndarray, np.ndarray]:
        """Pair coefficients for every (query token, key token): each shape (vocab, vocab, pairs)."""
        return _pair_coefficients(self.q_table[:, None, :], self.k_table[None, :, :])


def _check_head(head) -> None:
    if not isinstance(head, (OffsetHead, MatchHead)):
        raise ValueError(f"head must be an OffsetHead or a MatchHead, got {type(head).__name__}")
    if head.head_dim > MAX_TRAINED_HEAD_DIM:
        raise ValueError(f"head must have head_dim at most MAX_TRAINED_HEAD_DIM = {MAX_TRAINED_HEAD_DIM}, got {head.head_dim}")
    if isinstance(head, MatchHead) and head.vocab > MAX_VOCAB:
        raise ValueError(f"head must have a vocabulary of at most MAX_VOCAB = {MAX_VOCAB} tokens, got {head.vocab}")


def offset_head_loss(q, k, operator, *, offset: int, length: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss of a content-free head and its exact gradient ``(loss, dq, dk)``, in O(length * pairs).

    The query at ``m >= offset`` attends over keys ``0 .. m - 1``; the loss is the mean of ``-log
    p_m(m - offset)`` (nats). The score depends on the displacement only, so each normaliser is a
    running log-sum-exp and the gradient a reverse running sum: no ``length x length`` matrix.
    ``operator`` is a RotaryOperator or a frozen bank (as in :func:`train_offset_head`); ``length``
    is 2 to :data:`MAX_HEAD_LENGTH`. Raises ValueError for mismatched shapes or an offset outside
    ``[1, length - 1]``.
    """
    q = v.finite_array("q", q)
    k = v.finite_array("k", k)
    th, scale, att, _ = _rotary_bank(operator)
    if q.shape != (2 * th.size,) or k.shape != q.shape:
        raise ValueError(f"q and k must both have shape ({2 * th.size},) to match the operator, got {q.shape} and {k.shape}")
    length = v.integer("length", length, minimum=2, maximum=MAX_HEAD_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=length - 1)
    ang = phase_angles(np.arange(1, length) * scale, th)
    return _offset_loss(q, k, att * att * np.cos(ang), att * att * np.sin(ang), offset)


def _offset_loss(q, k, cos, sin, offset):
    a, b = _pair_coefficients(q, k)
    s = cos @ a + sin @ b  # s[delta - 1], delta = 1 .. length-1
    log_z = np.logaddexp.accumulate(s)[offset - 1 :]  # query m = offset .. length-1 sees deltas 1..m
    n = log_z.size
    loss = float(log_z.mean() - s[offset - 1])
    # tail[j] = log sum_{m >= offset + j} exp(-logZ_m)
    tail = np.logaddexp.accumulate(-log_z[::-1])[::-1]
    delta = np.arange(1, s.size + 1)
    g = np.exp(s + tail[np.maximum(delta, offset) - offset]) / n
    g[offset - 1] -= 1.0
    return (loss, *_pair_gradients(q, k, cos.T @ g, sin.T @ g))


def _run_offset(q, k, theta, scale, offset, length, steps, lr, gain=1.0):
    ang = phase_angles(np.arange(1, length) * scale, theta)
    cos, sin = gain * np.cos(ang), gain * np.sin(ang)  # gain: squared attention factor
    opt = Adam([q, k], lr)
    losses = np.empty(steps)
    for t in range(steps):
        losses[t], dq, dk = _offset_loss(q, k, cos, sin, offset)
        opt.step([dq, dk])
    return losses


def _fit(params, run, lr: float, init_std: float | None = None) -> np.ndarray:
    """Run a training loop quietly on one BLAS thread; refuse divergence."""
    with np.errstate(over="ignore", invalid="ignore"), one_blas_thread():
        losses = run()
    check_trained(params, losses, lr, init_std)
    return losses


def _first_stage(bank, shape, length, settings, seed, run, **stage) -> tuple:
    """The set-up both trainers share: draw the two parameter arrays (``shape + (head_dim,)``), train
    them with ``run(p, r, theta, scale, rng, gain)`` and return them with the head's training record."""
    (th, scale, att, base), (steps, lr, init_std) = bank, settings
    rng, seed_used = _rng(seed)
    p, r = rng.normal(scale=init_std, size=(2, *shape, 2 * th.size))
    losses = _fit((p, r), lambda: run(p, r, th, scale, rng, att * att), lr, init_std)
    stage = {"stage": "train", "steps": steps, "lr": lr, "length": length, "scale": scale, **stage}
    return (p, r), dict(theta=th, scale=scale, attention_factor=att, base=base, train_length=length,
                        original_train_length=length, seed=seed_used, losses=losses, stages=(stage,))


def train_offset_head(offset: int = 5, *, operator=None, head_dim: int | None = None, base: float | None = None,
                      theta=None, train_length: int = 64, steps: int = 1000, lr: float = 0.05, init_std: float = 0.3,
                      seed=0) -> OffsetHead:
    """Train a content-free head to attend to the key ``offset`` positions back.

    ``operator`` is a :class:`ropegeo.RotaryOperator` or a frozen bank of frequencies (``theta`` is
    its older name); without one, the plain schedule of ``head_dim`` (default 16, at most
    :data:`MAX_TRAINED_HEAD_DIM`) and ``base`` (default 10,000). ``train_length`` is at most
    :data:`MAX_HEAD_LENGTH`; ``steps`` full-batch Adam steps (at most :data:`MAX_STEPS`); ``lr`` and
    ``init_std`` at most :data:`MAX_LR` and :data:`MAX_INIT_STD`. Raises ValueError for a parameter
    out of range or when training diverges (lower ``lr`` or ``init_std``).
    """
    bank = _rotary_bank(operator, head_dim=head_dim, base=base, theta=theta)
    train_length = v.integer("train_length", train_length, minimum=2, maximum=MAX_HEAD_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=train_length - 1)
    steps, lr, init_std = training_settings(steps, lr, init_std)
    (q, k), record = _first_stage(bank, (), train_length, (steps, lr, init_std), seed, lambda q, k, th, sc, rng, gain:
                                  _run_offset(q, k, th, sc, offset, train_length, steps, lr, gain))
    return OffsetHead(q=q, k=k, offset=offset, **record)


def match_targets(tokens) -> np.ndarray:
    """Position of the most recent strictly earlier occurrence of each token (-1 if none), shape of ``tokens``.

    Raises ValueError for a non-integer array or one without a sequence axis.
    """
    tok = np.asarray(tokens)
    if tok.ndim == 0 or not np.issubdtype(tok.dtype, np.integer):
        raise ValueError(f"tokens must be an integer array with a sequence axis, got dtype {tok.dtype} shape {tok.shape}")
    seq = tok.shape[-1]
    flat = tok.reshape(-1, seq).astype(np.int64)
    pos = np.arange(seq, dtype=np.int64)
    # sort each row by (token, position): an occurrence's predecessor in that order, when it
    # holds the same token, is its most recent earlier occurrence
    order = np.argsort((flat - flat.min(initial=0)) * seq + pos, axis=-1, kind="stable")
    sorted_tok = np.take_along_axis(flat, order, axis=-1)
    prev = np.full_like(order, -1)
    prev[:, 1:] = np.where(sorted_tok[:, 1:] == sorted_tok[:, :-1], order[:, :-1], -1)
    out = np.empty_like(order)
    np.put_along_axis(out, order, prev, axis=-1)
    return out.reshape(tok.shape)


def _match_hits(tokens):
    """``(valid, count, bi, mi, ti)``: the queries with an earlier match and their targets; refuses a batch with none."""
    target = match_targets(tokens)
    valid = target >= 0
    count = int(valid.sum())
    if count == 0:
        raise ValueError("tokens contain no query with an earlier occurrence of its token")
    bi, mi = np.nonzero(valid)
    return valid, count, bi, mi, target[bi, mi]


def match_cross_entropy(scores: np.ndarray, tokens: np.ndarray) -> tuple[float, np.ndarray]:
    """The most-recent-match cross-entropy of logits ``scores`` (batch, seq, seq) and its gradient.

    Query ``m`` attends over keys ``0 .. m - 1``; queries without an earlier occurrence of their token
    are left out. ``scores`` is overwritten by the returned gradient. Callers check their inputs; a
    batch with no match raises ValueError.
    """
    valid, count, bi, mi, ti = _match_hits(tokens)
    s_target = scores[bi, mi, ti]  # read before the in-place softmax
    seq = tokens.shape[-1]
    p, top, z = softmax_rows(scores, np.tri(seq, seq, -1))
    loss = float(np.mean(np.log(z[bi, mi, 0]) + top[bi, mi, 0] - s_target))
    p *= (valid / count)[..., None]
    p[bi, mi, ti] -= 1.0 / count
    return loss, p


def _rotations(seq: int, theta: np.ndarray, scale: float) -> tuple:
    """cos and sin of the rotation by every distance back ``0 .. seq - 1``, each (seq, pairs)."""
    ang = (np.arange(seq, dtype=np.float64) * scale)[:, None] * theta
    return np.cos(ang), np.sin(ang)


def match_head_loss(q_table, k_table, tokens, operator) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss of the most-recent-match head on ``tokens`` (batch, seq) and its exact gradient ``(loss, dq, dk)``.

    ``operator`` as in :func:`offset_head_loss`. Raises ValueError for mismatched shapes, tokens outside
    the vocabulary, a batch with no match, or a step beyond :data:`MAX_STEP_BYTES`.
    """
    qt = v.finite_array("q_table", q_table)
    kt = v.finite_array("k_table", k_table)
    th, scale, att, _ = _rotary_bank(operator)
    if qt.ndim != 2 or qt.shape[1] != 2 * th.size or kt.shape != qt.shape:
        raise ValueError(
            f"q_table and k_table must both have shape (vocab, {2 * th.size}), got {qt.shape} and {kt.shape}"
        )
    tok = np.asarray(tokens)
    if tok.ndim != 2 or not np.issubdtype(tok.dtype, np.integer):
        raise ValueError(f"tokens must be an integer array of shape (batch, seq), got {tok.dtype} {tok.shape}")
    if tok.size and (tok.min() < 0 or tok.max() >= qt.shape[0]):
        raise ValueError(f"tokens must lie in [0, vocab={qt.shape[0]})")
    need = match_step_bytes(tok.shape[1], tok.shape[0], qt.shape[0], qt.shape[1])
    if need > MAX_STEP_BYTES:
        raise ValueError(f"tokens of shape {tok.shape} with tables of shape {qt.shape} would need about "
                         f"{need / 2**20:,.0f} MiB; at most MAX_STEP_BYTES = {MAX_STEP_BYTES // 2**20} MiB: "
                         f"use fewer or shorter sequences in tokens, or smaller q_table and k_table")
    return _match_loss(qt, kt, tok, _rotations(tok.shape[1], th, scale), att * att)


class _Diverged(ValueError):
    """Non-finite scores or gradients of the match head (its tables have grown too large)."""


#: Scores of one chunk of sequences in :func:`_match_loss` (64 KiB of float64: they stay in the cache).
_CHUNK_SCORES = 8192
#: Widest spread (nats) of a query token's scores for which the table is exponentiated once (exp(-600) ~ 1e-261).
_TABLE_SPREAD = 600.0


def _match_loss(qt, kt, tok, rotations, gain=1.0):
    """The unchecked loss and gradient of :func:`match_head_loss`, through a ``(vocab * vocab, seq)`` score table."""
    vocab = qt.shape[0]
    cos, sin = rotations
    q1, q2, k1, k2 = qt[:, 0::2], qt[:, 1::2], kt[:, 0::2], kt[:, 1::2]  # (vocab, pairs)
    a = (q1[:, None, :] * k1[None] + q2[:, None, :] * k2[None]).reshape(vocab * vocab, -1)
    b = (q1[:, None, :] * k2[None] - q2[:, None, :] * k1[None]).reshape(vocab * vocab, -1)
    table = a @ cos.T + b @ sin.T  # (vocab * vocab, seq): row u * vocab + w, column delta
    if gain != 1.0:  # the squared attention factor multiplies every logit
        table *= gain
    loss, d_table = _table_cross_entropy(table, tok, vocab)
    if gain != 1.0:
        d_table *= gain
    da = (d_table @ cos).reshape(vocab, vocab, -1)  # d loss / d a_i(u, w)
    db = (d_table @ sin).reshape(vocab, vocab, -1)
    if not (math.isfinite(loss) and np.isfinite(da).all() and np.isfinite(db).all()):
        raise _Diverged("q_table and k_table give non-finite scores or gradients (overflow): their entries are "
                        "too large (in training: lower lr or init_std)")
    dq, dk = np.empty_like(qt), np.empty_like(kt)
    dq[:, 0::2] = np.einsum("uwi,wi->ui", da, k1) + np.einsum("uwi,wi->ui", db, k2)
    dq[:, 1::2] = np.einsum("uwi,wi->ui", da, k2) - np.einsum("uwi,wi->ui", db, k1)
    dk[:, 0::2] = np.einsum("uwi,ui->wi", da, q1) - np.einsum("uwi,ui->wi", db, q2)
    dk[:, 1::2] = np.einsum("uwi,ui->wi", da, q2) + np.einsum("uwi,ui->wi", db, q1)
    return loss, dq, dk


@functools.lru_cache(maxsize=4)
def _pair_layout(seq: int, chunk: int) -> tuple:
    """Flat ``(query, key, delta, starts, row)`` indices of the pairs ``n < m`` of ``chunk`` sequences, in order."""
    qm, kn = np.tril_indices(seq, -1)
    pairs = qm.size
    seqs = np.arange(chunk)[:, None]
    starts = np.arange(1, seq) * np.arange(seq - 1) // 2
    out = ((seqs * seq + qm).ravel(), (seqs * seq + kn).ravel(), np.tile(qm - kn, chunk),
           (seqs * pairs + starts).ravel(), (seqs * (seq - 1) + qm - 1).ravel())
    for a in out:
        a.flags.writeable = False
    return out


def _table_cross_entropy(table, tok, vocab):
    """The match cross-entropy of the scores ``table[t_m * vocab + t_n, m - n]`` and its gradient in the table
    (exponentiated once when each query token's scores span at most :data:`_TABLE_SPREAD`)."""
    batch, seq = tok.shape
    valid, count, bi, mi, ti = _match_hits(tok)
    hit = (tok[bi, mi] * vocab + tok[bi, ti]) * seq + (mi - ti)  # the target's entry of the table
    rows = table.reshape(vocab, -1)
    shift = rows.max(axis=1)
    by_table = float(np.max(shift - rows.min(axis=1))) <= _TABLE_SPREAD  # False for a non-finite table too
    flat = exp_rows(rows, shift).ravel() if by_table else table.ravel()
    pairs = seq * (seq - 1) // 2
    step = max(1, min(batch, _CHUNK_SCORES // pairs))
    query, key, delta, starts, row = _pair_layout(seq, step)
    log_z = np.zeros((batch, seq))
    d_flat = np.zeros(table.size)
    for lo in range(0, batch, step):
        t = tok[lo : lo + step]
        n, r = t.shape[0] * pairs, t.shape[0] * (seq - 1)
        index = (t.ravel() * (vocab * seq))[query[:n]]
        index += (t.ravel() * seq)[key[:n]]
        index += delta[:n]
        top = shift[t[:, 1:]].ravel() if by_table else None
        # queries without an earlier match are left out (weight 0)
        e, top, z = softmax_segments(flat[index], starts[:r], row[:n], top, exponentiated=by_table,
                                     weights=valid[lo : lo + step, 1:].ravel())
        log_z[lo : lo + step, 1:] = (np.log(z) + top).reshape(-1, seq - 1)
        d_flat += np.bincount(index, weights=e, minlength=table.size)
    loss = float(np.mean(log_z[bi, mi] - table.ravel()[hit]))
    d_flat -= np.bincount(hit, minlength=table.size)
    d_flat /= count
    return loss, d_flat.reshape(table.shape)


def _run_match(qt, kt, theta, scale, length, batch, steps, lr, rng, gain=1.0):
    vocab = qt.shape[0]
    opt = Adam([qt, kt], lr)
    losses = np.empty(steps)
    rotations = _rotations(length, theta, scale)
    for t in range(steps):
        tok = rng.integers(0, vocab, size=(batch, length))
        try:
            losses[t], dq, dk = _match_loss(qt, kt, tok, rotations, gain)
        except _Diverged:  # the caller reports it (check_trained)
            losses[t:] = np.nan
            break
        opt.step([dq, dk])
        if not (np.isfinite(qt).all() and np.isfinite(kt).all()):
            losses[t + 1 :] = np.nan
            break
    return losses


def train_match_head(vocab: int = 8, *, operator=None, head_dim: int | None = None, base: float | None = None,
                     theta=None, train_length: int = 64, batch: int = 32, steps: int = 600, lr: float = 0.05,
                     init_std: float = 0.3, seed=0) -> MatchHead:
    """Train a head to attend to the most recent earlier occurrence of the query's token.

    Every step draws ``batch`` (at most :data:`MAX_BATCH`) fresh sequences of ``train_length`` (at most
    :data:`MAX_MATCH_LENGTH`) tokens uniform over ``vocab`` (at most :data:`MAX_VOCAB`), from the
    initialisation's Generator. Other arguments as in :func:`train_offset_head`. One step holds at most
    :data:`MAX_STEP_BYTES`. Raises ValueError for a parameter out of range or divergence.
    """
    bank = _rotary_bank(operator, head_dim=head_dim, base=base, theta=theta)
    vocab = v.integer("vocab", vocab, minimum=2, maximum=MAX_VOCAB)
    train_length = v.integer("train_length", train_length, minimum=2, maximum=MAX_MATCH_LENGTH)
    batch = v.integer("batch", batch, minimum=1, maximum=MAX_BATCH)
    steps, lr, init_std = training_settings(steps, lr, init_std)
    check_match_step(train_length, batch, vocab, 2 * bank[0].size)
    (qt, kt), record = _first_stage(bank, (vocab,), train_length, (steps, lr, init_std), seed,
                                    lambda qt, kt, th, sc, rng, gain:
                                    _run_match(qt, kt, th, sc, train_length, batch, steps, lr, rng, gain), batch=batch)
    return MatchHead(q_table=qt, k_table=kt, **record)


def train_heads(kind: str = "offset", seeds=range(5), *, progress: bool = False, **options) -> list:
    """Train one head per seed (1 to :data:`MAX_SEEDS`) with otherwise identical settings.

    ``kind`` is ``"offset"`` or ``"match"``; ``options`` go to its trainer; ``progress`` shows a tqdm bar.
    """
    if not isinstance(kind, str) or kind not in ("offset", "match"):
        raise ValueError(f"kind must be 'offset' or 'match', got {kind!r}")
    seeds = seed_list(seeds)
    train = train_offset_head if kind == "offset" else train_match_head
    if progress:
        from tqdm.auto import tqdm

        seeds = tqdm(seeds, desc=f"training {kind} heads", unit="seed")
    with one_blas_thread():
        return [train(seed=s, **options) for s in seeds]


def _resolve(head, length, extension, factor, theta, scale, attention_factor=None) -> Schedule:
    """The schedule a head is run under: explicit theta/scale, a named rule, or its own."""
    if attention_factor is not None:
        if extension is not None:
            raise ValueError("give either extension or theta/scale/attention_factor, not both")
        att = v.real("attention_factor", attention_factor, greater_than=0.0)
        return _resolve(head, length, None, None, theta, scale)._replace(attention_factor=att, rule="custom")
    if theta is not None or scale is not None:
        if extension is not None:
            raise ValueError("give either extension or theta/scale, not both")
        th = head.theta if theta is None else check_theta(theta)
        if th.size != head.theta.size:
            raise ValueError(f"theta must have {head.theta.size} pairs to match the head, got {th.size}")
        sc = head.scale if scale is None else v.real("scale", scale, greater_than=0.0)
        return Schedule(th, sc, head.attention_factor, "custom")
    if extension is None:
        return Schedule(head.theta, head.scale, head.attention_factor, "own")
    name = rule_name(extension, "extension")
    if name == "none":
        return Schedule(head.theta, head.scale, head.attention_factor, name)
    if head.base is None:
        raise ValueError(
            f"extension={extension!r} needs the head's base; this head was trained on an explicit theta: pass theta and scale"
        )
    sch = extension_schedule(name, head_dim=head.head_dim, base=head.base, train_length=head.original_train_length,
                             length=length, factor=factor)
    return Schedule(sch.theta, sch.scale * head.scale, sch.attention_factor * head.attention_factor, name)


def fine_tune(head, *, extension: str | None = "pi", length: int | None = None, factor: float | None = None,
              operator=None, steps: int | None = None, lr: float = 0.05, batch: int = 4, seed=0):
    """Continue training a head under a new schedule: the fine-tuning of an extension. Returns a new head.

    The schedule is the named rule ``extension`` (:func:`~ropegeo.scaling.extension_schedule`, with
    ``factor``: default 8 for a rule other than ``"none"``), or ``operator`` (a RotaryOperator or a
    frozen bank). ``length`` defaults to ``factor`` times the original training length (at most
    :data:`MAX_HEAD_LENGTH` for an offset head, :data:`MAX_MATCH_LENGTH` for a match head). ``steps``
    defaults to 600 (offset) or 100 (match); ``batch`` and ``seed`` serve the match head only. The
    tuned head's own schedule is the new one. Raises ValueError for a bad argument or divergence.
    """
    _check_head(head)
    offset_head = isinstance(head, OffsetHead)
    most = MAX_HEAD_LENGTH if offset_head else MAX_MATCH_LENGTH
    kind = "an offset head" if offset_head else "a match head"
    if operator is not None:
        extension = None
    if extension is not None and rule_name(extension, "extension") != "none" and factor is None:
        factor = 8.0
    if factor is not None:
        factor = v.real("factor", factor, minimum=1.0, maximum=MAX_FACTOR)
    if length is None:
        length = int(round(head.original_train_length * factor)) if factor is not None else head.train_length
        if factor is not None and length > most:
            raise ValueError(f"factor={factor:g} asks for a fine-tuning length of {length:,} (factor x the original "
                             f"training length {head.original_train_length}); at most {most} for {kind}: "
                             f"lower factor or pass length")
    length = v.integer("length", length, minimum=2, maximum=most)
    if operator is None:
        th, sc, att, name = _resolve(head, length, extension, factor, None, None)
    else:
        (th, sc, att, _), name = _rotary_bank(operator), "custom"
        if th.size != head.theta.size:
            raise ValueError(f"operator must have {head.theta.size} pairs to match the head, got {th.size}")
    if steps is None:
        steps = 600 if offset_head else 100
    steps, lr = training_settings(steps, lr)
    stage = {"stage": "fine_tune", "steps": steps, "lr": lr, "length": length, "scale": sc, "extension": name,
             "factor": factor, "attention_factor": att}
    if offset_head:
        if head.offset >= length:
            raise ValueError(f"length must exceed the head's offset {head.offset}, got {length}")
        q, k = head.q.copy(), head.k.copy()
        losses = _fit((q, k), lambda: _run_offset(q, k, th, sc, head.offset, length, steps, lr, att * att), lr)
        tuned = dict(q=q, k=k)
    else:
        batch = v.integer("batch", batch, minimum=1, maximum=MAX_BATCH)
        check_match_step(length, batch, head.vocab, head.head_dim, length_name="length")
        rng, _ = _rng(seed)
        qt, kt = head.q_table.copy(), head.k_table.copy()
        losses = _fit((qt, kt), lambda: _run_match(qt, kt, th, sc, length, batch, steps, lr, rng, att * att), lr)
        tuned, stage["batch"] = dict(q_table=qt, k_table=kt), batch
    return replace(head, **tuned, theta=th, scale=sc, attention_factor=att, train_length=length,
                   losses=np.concatenate([head.losses, losses]), stages=head.stages + (stage,))
