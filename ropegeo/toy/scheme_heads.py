"""Tiny heads trained per position scheme: the experiments behind :mod:`ropegeo.toy.alternatives`.

Every learned scheme of :mod:`ropegeo.toy.attention` gets Gate C's experiment: a head that sees one
fixed token at every slot is trained to attend ``offset`` slots back (full-batch cross-entropy,
Adam, hand-derived gradients checked in the tests), and a head with token tables is trained on the
most-recent-match task (:func:`train_scheme_match_head`). What each position head learns:

===============  ==================================  ============================================
scheme           trained parameters                  score of query ``m`` against key ``n``
===============  ==================================  ============================================
``absolute``     table ``T`` (rows), ``W_q, W_k``    ``(e + T_m) W_q W_k^T (e + T_n)^T / sqrt(d)``
``sinusoidal``   ``W_q, W_k``                        the same with the fixed code ``PE`` for ``T``
``relative``     query ``q``, key vectors ``a^K_r``  ``q . a^K(clip(n - m, -K, K)) / sqrt(d)`` + const
``t5``           one bias per bucket ``b``           ``b[t5_bucket(n - m)]`` + const
``rope``         ``q, k`` (Gate C's offset head)     ``R_m q . R_n k``
===============  ==================================  ============================================

``none`` (NoPE) and ``alibi`` have nothing positional to learn: their heads are the fixed formula.
Every trainer keeps one step under ``ropegeo.toy.MAX_STEP_BYTES``.
"""

from __future__ import annotations

import math

import numpy as np

from ropegeo import _validate as v
from ropegeo.softmax import softmax_rows
from ropegeo.toy import (Adam, check_match_step, check_step_memory, check_trained, match_cross_entropy,
                         train_offset_head, training_settings)
from ropegeo.toy import train_match_head as train_rope_match_head
from ropegeo.toy.attention import AttentionLayer
from ropegeo.toy.interventions import PositionHead, TokenHead, position_head
from ropegeo.toy.schemes import (AbsolutePositions, ALiBi, RelativePositions, RotaryPositions, T5Bias,
                                 sinusoidal_encoding, t5_bucket)

__all__ = ["SCHEMES", "LEARNED", "FIXED", "TrainedHead", "train_position_head", "TrainedMatchHead",
           "train_scheme_match_head", "match_loss", "fixed_head", "task_loss", "check_position_memory",
           "check_match_memory"]

SCHEMES = ("none", "absolute", "sinusoidal", "relative", "t5", "alibi", "rope")
LEARNED = ("absolute", "sinusoidal", "relative", "t5", "rope")
FIXED = ("none", "alibi")

#: Longest training length (a length x length score matrix per step).
MAX_TRAIN_LENGTH = 1024
#: Widest layer a trainer builds (``d x d`` projections).
MAX_D = 256
#: Most rows of a learned absolute table.
MAX_ROWS = 1 << 16
#: Largest vocabulary of a match head (:func:`train_scheme_match_head`).
MAX_SCHEME_VOCAB = 64
#: Most sequences in one training step of a match head.
MAX_BATCH = 512
#: Most scores (``batch * length**2``) one :func:`match_loss` call forms: each of its few
#: working arrays is then at most 64 MiB.
MAX_LOSS_SCORES = 2**23

_TABLE_SCHEMES = ("none", "alibi", "t5", "relative")


def check_position_memory(scheme: str, L: int, head_dim: int, rows: int) -> None:
    """Refuse a position head whose training step would exceed MAX_STEP_BYTES (``rows``: absolute table rows)."""
    if scheme == "rope":  # Gate C's offset head: O(L * d) per step
        return
    step_bytes = 8 * (6 * L * L + 8 * L * head_dim + 7 * rows * head_dim)
    sizes = {"train_length": L, "head_dim": head_dim} | ({"rows": rows} if rows else {})
    check_step_memory(f"a position head of scheme {scheme!r}", step_bytes, sizes)


def check_match_memory(scheme: str, L: int, batch: int, vocab: int, head_dim: int, rows: int) -> None:
    """Refuse a match head whose training step would exceed MAX_STEP_BYTES (``rows``: absolute table rows)."""
    if scheme == "rope":
        check_match_step(L, batch, vocab, head_dim)
        return
    if scheme in _TABLE_SCHEMES:  # every score is a lookup: no (batch, L, L, d) arrays
        step_bytes = 8 * (6 * batch * L * L + 2 * batch * L * vocab)
    else:  # inputs H (batch, L, d) through d x d projections
        step_bytes = 8 * (2 * batch * L * L + 8 * batch * L * head_dim + 2 * batch * L * vocab + 7 * rows * head_dim)
    sizes = {"train_length": L, "batch": batch, "vocab": vocab, "head_dim": head_dim} | ({"rows": rows} if rows else {})
    check_step_memory(f"a match head of scheme {scheme!r}", step_bytes, sizes)


class TrainedHead(PositionHead):
    """A :class:`~ropegeo.toy.interventions.PositionHead` trained on the displacement task (``losses`` per step, nats)."""

    def __init__(self, layer, *, scheme: str, offset: int, train_length: int, seed: int, losses):
        super().__init__(layer, name=scheme)
        _record(self, scheme, train_length, seed, losses)
        self.offset = offset

    def __repr__(self) -> str:
        return _repr(self, f"offset={self.offset}")


def _record(head, scheme, train_length, seed, losses) -> None:
    head.scheme, head.train_length, head.seed = scheme, train_length, seed
    head.losses = np.asarray(losses, dtype=np.float64)


def _repr(head, what: str) -> str:
    last = head.losses[-1] if head.losses.size else math.nan
    return (f"{type(head).__name__}({head.scheme!r}, {what}, train_length={head.train_length}, seed={head.seed}, "
            f"final loss {last:.3g})")


def _task_grad(S: np.ndarray, offset: int) -> tuple[float, np.ndarray]:
    """Cross-entropy of the displacement task over strictly earlier keys and its gradient in S."""
    L = S.shape[0]
    earlier = np.tri(L, L, -1)
    p, top, z = softmax_rows(S.copy(), earlier)
    m = np.arange(offset, L)
    n = m.size
    loss = float(np.mean(np.log(z[m, 0]) + top[m, 0] - S[m, m - offset]))
    g = np.zeros_like(S)
    g[m] = p[m] / n
    g[m, m - offset] -= 1.0 / n
    return loss, g


def task_loss(head: PositionHead, offset: int, length: int) -> float:
    """The training loss of a head through its attention layer: the mean over queries ``m = offset ..
    length - 1`` of ``-log`` the attention on slot ``m - offset``. Raises ValueError for an offset
    outside ``[1, length - 1]``.
    """
    length = v.integer("length", length, minimum=2, maximum=MAX_TRAIN_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=length - 1)
    S = head.scores(np.arange(length, dtype=np.float64))
    return _task_grad(S, offset)[0]


def _fb_projection(H, Wq, Wk, offset):
    """Loss and gradients of ``S = H Wq (H Wk)^T / sqrt(d)`` with respect to H, Wq, Wk."""
    c = 1.0 / math.sqrt(Wq.shape[1])
    Q, K = H @ Wq, H @ Wk
    loss, g = _task_grad(c * Q @ K.T, offset)
    dQ, dK = c * g @ K, c * g.T @ Q
    return loss, H.T @ dQ, H.T @ dK, dQ @ Wq.T + dK @ Wk.T


def _fb_relative(q, a, k0, idx, L, offset):
    """Loss and gradients in ``q`` and ``a`` of ``S = (a q)[idx] + q . k0`` over sqrt(d) (``idx`` flat)."""
    c = 1.0 / math.sqrt(q.size)
    S = c * ((a @ q)[idx].reshape(L, L) + q @ k0)
    loss, g = _task_grad(S, offset)
    G = np.bincount(idx, weights=g.ravel(), minlength=a.shape[0])  # gradient per table row
    return loss, c * (a.T @ G + g.sum() * k0), c * np.outer(G, q)


def _fb_t5(b, idx, L, offset):
    """Loss and gradient in ``b`` of ``S = b[idx]`` (``idx`` flat bucket indices)."""
    loss, g = _task_grad(b[idx].reshape(L, L), offset)
    return loss, np.bincount(idx, weights=g.ravel(), minlength=b.size)


def _adam(params, step, steps: int, lr: float, init_std: float, extra=()) -> np.ndarray:
    """Adam on ``params``; ``step(t)`` returns the loss and a gradient per parameter. Refuses divergence."""
    opt, losses = Adam(params, lr), np.empty(steps)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps):
            out = step(t)
            losses[t] = out[0]
            opt.step(out[1 : len(params) + 1])
    check_trained(list(params) + list(extra), losses, lr, init_std)
    return losses


def _layer(d, scheme, Wq=None, Wk=None, rows=(), head_dim=None):
    """A layer of ``scheme`` with the given projections (zero matrices whose ``rows`` are set, by default)."""
    layer = AttentionLayer(d, head_dim, scheme=scheme, seed=0)
    layer.Wq, layer.Wk = (np.zeros((d, d)), np.zeros((d, d))) if Wq is None else (Wq, Wk)
    for i, (q, k) in enumerate(rows):
        layer.Wq[i], layer.Wk[i] = q, k
    return layer


def _train_absolute(rng, d, L, offset, steps, lr, init_std, rows):
    T = rng.normal(scale=init_std, size=(rows, d))
    Wq, Wk = rng.normal(scale=init_std, size=(2, d, d))
    e0, dT = np.eye(d)[0], np.zeros_like(T)

    def step(t):
        loss, dWq, dWk, dT[:L] = _fb_projection(e0 + T[:L], Wq, Wk, offset)
        return loss, dT, dWq, dWk

    losses = _adam([T, Wq, Wk], step, steps, lr, init_std)
    return _layer(d, AbsolutePositions(table=T), Wq, Wk), losses


def _train_sinusoidal(rng, d, L, offset, steps, lr, init_std):
    Wq, Wk = rng.normal(scale=init_std, size=(2, d, d))
    H = np.eye(d)[0] + sinusoidal_encoding(np.arange(L), d)
    losses = _adam([Wq, Wk], lambda t: _fb_projection(H, Wq, Wk, offset), steps, lr, init_std)
    return _layer(d, "sinusoidal", Wq, Wk), losses


def _train_relative(rng, d, L, offset, steps, lr, init_std, max_distance):
    K = max_distance
    q = rng.normal(scale=init_std, size=d)
    a = rng.normal(scale=init_std, size=(2 * K + 1, d))
    k0 = rng.normal(scale=init_std, size=d)  # the key: a constant shift of every score
    pos = np.arange(L)
    idx = (np.clip(pos[None, :] - pos[:, None], -K, K) + K).ravel()
    losses = _adam([q, a], lambda t: _fb_relative(q, a, k0, idx, L, offset), steps, lr, init_std, extra=[k0])
    scheme = RelativePositions(max_distance=K, key_table=a, value_table=np.zeros_like(a), values=False)
    return _layer(d, scheme, rows=[(q, k0)]), losses


def _train_t5(rng, d, L, offset, steps, lr, init_std, num_buckets, max_distance):
    b = rng.normal(scale=init_std, size=num_buckets)
    pos = np.arange(L)
    idx = t5_bucket(pos[None, :] - pos[:, None], bidirectional=False, num_buckets=num_buckets,
                    max_distance=max_distance).ravel()
    losses = _adam([b], lambda t: _fb_t5(b, idx, L, offset), steps, lr, init_std)
    return _layer(d, T5Bias(num_buckets=num_buckets, max_distance=max_distance, bidirectional=False, table=b)), losses


def _rope(gate_c) -> RotaryPositions:
    """The rope scheme of a layer that runs a Gate C head as it was trained."""
    return RotaryPositions(base=gate_c.base or 10_000.0, theta=gate_c.theta, scale=gate_c.scale,
                           attention_factor=gate_c.attention_factor)


def _train_rope(seed, d, L, offset, steps, lr, init_std, operator):
    gate_c = train_offset_head(offset, operator=operator, head_dim=d, train_length=L,
                               steps=steps, lr=lr, init_std=init_std, seed=seed)
    # Gate C's score is R_m q . R_n k; the layer divides by sqrt(d), so the query carries sqrt(d)
    return _layer(d, _rope(gate_c), rows=[(math.sqrt(d) * gate_c.q, gate_c.k)]), gate_c.losses


def _setup(scheme, schemes, train_length, head_dim, steps, lr, init_std, seed, rows) -> tuple:
    """The checked settings both trainers share."""
    if not isinstance(scheme, str) or scheme not in schemes:
        which = "the learned schemes " if schemes == LEARNED else ""
        raise ValueError(f"scheme must be one of {which}{', '.join(map(repr, schemes))}, got {scheme!r}"
                         + (" (it has nothing to train: use fixed_head)" if scheme in FIXED else ""))
    L = v.integer("train_length", train_length, minimum=2, maximum=MAX_TRAIN_LENGTH)
    head_dim = v.head_dim(head_dim, "head_dim", maximum=MAX_D)
    steps, lr, init_std = training_settings(steps, lr, init_std)
    seed = v.integer("seed", seed, minimum=0)
    R = v.integer("rows", 8 * L if rows is None else rows, minimum=L, maximum=MAX_ROWS) if scheme == "absolute" else 0
    return L, head_dim, steps, lr, init_std, seed, R


def train_position_head(scheme: str, offset: int = 5, *, train_length: int = 64, head_dim: int = 16, steps: int = 1000,
                        lr: float = 0.05, init_std: float = 0.3, seed: int = 0, rows: int | None = None,
                        max_distance: int | None = None, num_buckets: int = 32, operator=None) -> TrainedHead:
    """Train a position-only head of one learned scheme (``"absolute"``, ``"sinusoidal"``,
    ``"relative"``, ``"t5"``, ``"rope"``) to attend ``offset`` slots back.

    ``train_length`` is at most :data:`MAX_TRAIN_LENGTH`, ``head_dim`` at most :data:`MAX_D`; ``steps``,
    ``lr``, ``init_std`` as for Gate C's heads (time grows with ``steps * train_length**2``). ``rows``:
    rows of the absolute table (default ``8 * train_length``, at most :data:`MAX_ROWS`).
    ``max_distance``: the relative clipping distance (default 16) or T5's (default 128);
    ``num_buckets``: T5's (one side). ``operator``: the rope head's RotaryOperator or frozen bank.
    Raises ValueError for an unknown or fixed scheme, a parameter out of range, or divergence.
    """
    train_length, head_dim, steps, lr, init_std, seed, rows = _setup(scheme, LEARNED, train_length, head_dim, steps,
                                                                     lr, init_std, seed, rows)
    offset = v.integer("offset", offset, minimum=1, maximum=train_length - 1)
    check_position_memory(scheme, train_length, head_dim, rows)
    rng = np.random.default_rng(seed)
    if scheme == "absolute":
        layer, losses = _train_absolute(rng, head_dim, train_length, offset, steps, lr, init_std, rows)
    elif scheme == "sinusoidal":
        layer, losses = _train_sinusoidal(rng, head_dim, train_length, offset, steps, lr, init_std)
    elif scheme == "relative":
        K = v.integer("max_distance", 16 if max_distance is None else max_distance, minimum=1, maximum=4096)
        layer, losses = _train_relative(rng, head_dim, train_length, offset, steps, lr, init_std, K)
    elif scheme == "t5":
        md = 128 if max_distance is None else max_distance
        T5Bias(num_buckets=num_buckets, max_distance=md, bidirectional=False)  # validates both
        layer, losses = _train_t5(rng, head_dim, train_length, offset, steps, lr, init_std, int(num_buckets), int(md))
    else:
        layer, losses = _train_rope(seed, head_dim, train_length, offset, steps, lr, init_std, operator)
    return TrainedHead(layer, scheme=scheme, offset=offset, train_length=train_length, seed=seed, losses=losses)


def fixed_head(scheme: str, *, head_dim: int = 16, seed: int = 0, **options) -> PositionHead:
    """The position-only head of a scheme with nothing to learn (``"none"`` or ``"alibi"``).

    Its seeded projections do not matter: the same token at every slot gives every key the same
    content score. Raises ValueError for a scheme that is not fixed.
    """
    if scheme not in FIXED:
        raise ValueError(f"scheme must be one of the fixed schemes {', '.join(map(repr, FIXED))}, got {scheme!r}")
    return position_head(scheme, d_model=head_dim, seed=seed, **options)


class TrainedMatchHead(TokenHead):
    """A :class:`~ropegeo.toy.interventions.TokenHead` trained on the most-recent-match task (its
    embedding is one-hot except for the schemes that add a code to the inputs).
    """

    def __init__(self, layer, embedding, *, scheme: str, train_length: int, seed: int, losses):
        super().__init__(layer, embedding, name=scheme)
        _record(self, scheme, train_length, seed, losses)

    def __repr__(self) -> str:
        return _repr(self, f"vocab={self.vocab}")


def _fb_match_table(Qt, Kt, tok, *, bias=None, rel=None):
    """Loss and gradients ``(loss, dQt, dKt, dtable, da)`` of ``S = (Q K^T + Q . a[idx]) / sqrt(d) + bias``.

    ``bias``: (table, flat bucket index) for T5, a fixed (L, L) array (ALiBi) or None; ``rel``:
    (a, idx) for the relative scheme or None. Every score is a lookup in a small table.
    """
    B, L = tok.shape
    V, d = Qt.shape
    c = 1.0 / math.sqrt(d)
    qi = np.broadcast_to(tok[:, :, None], (B, L, L))
    pair = qi * V + tok[:, None, :]  # (query token, key token) of every score
    S = c * (Qt @ Kt.T).ravel()[pair]
    if rel is not None:
        a, idx = rel
        R = a.shape[0]
        tok_rel = qi * R + idx  # (query token, displacement row)
        S = S + c * (Qt @ a.T).ravel()[tok_rel]
    if isinstance(bias, tuple):
        table, flat = bias
        S = S + table[flat].reshape(L, L)
    elif bias is not None:
        S = S + bias
    loss, g = match_cross_entropy(S, tok)
    dM = np.bincount(pair.ravel(), weights=g.ravel(), minlength=V * V).reshape(V, V)
    dQt, dKt = c * dM @ Kt, c * dM.T @ Qt
    dtable = da = None
    if isinstance(bias, tuple):
        dtable = np.bincount(bias[1], weights=g.sum(axis=0).ravel(), minlength=bias[0].size)
    if rel is not None:
        dA = np.bincount(tok_rel.ravel(), weights=g.ravel(), minlength=V * R).reshape(V, R)
        dQt = dQt + c * dA @ a
        da = c * dA.T @ Qt
    return loss, dQt, dKt, dtable, da


def _fb_match_projection(E, P, Wq, Wk, tok):
    """Loss and gradients ``(loss, dE, dP, dWq, dWk)`` of ``S = H Wq (H Wk)^T / sqrt(d)``, ``H = E[tok] + P``."""
    c = 1.0 / math.sqrt(Wq.shape[1])
    H = E[tok] + P
    Q, K = H @ Wq, H @ Wk
    loss, g = match_cross_entropy(c * Q @ K.transpose(0, 2, 1), tok)
    dQ, dK = c * g @ K, c * g.transpose(0, 2, 1) @ Q
    dH = dQ @ Wq.T + dK @ Wk.T
    dWq = np.einsum("bld,ble->de", H, dQ)
    dWk = np.einsum("bld,ble->de", H, dK)
    onehot = (tok.reshape(1, -1) == np.arange(E.shape[0])[:, None]).astype(np.float64)  # (vocab, B * L)
    return loss, onehot @ dH.reshape(-1, dH.shape[-1]), dH.sum(axis=0), dWq, dWk  # slot gradients summed per token


def match_loss(head: TokenHead, tokens) -> float:
    """The most-recent-match loss of a head on a batch of ``tokens``, through its attention layer.

    Raises ValueError for a head that is not a TokenHead, bad tokens, or ``batch * L**2`` beyond
    :data:`MAX_LOSS_SCORES`.
    """
    if not isinstance(head, TokenHead):
        raise ValueError(f"head must be a TokenHead, got {type(head).__name__}")
    tok = np.asarray(tokens)
    if tok.ndim == 2 and tok.shape[0] * tok.shape[1] ** 2 > MAX_LOSS_SCORES:
        raise ValueError(f"tokens of shape {tok.shape} give {tok.shape[0] * tok.shape[1] ** 2:,} scores; at most "
                         f"MAX_LOSS_SCORES = {MAX_LOSS_SCORES:,}: use fewer or shorter sequences")
    return match_cross_entropy(np.array(head.scores(tok), dtype=np.float64), tok)[0]


def train_scheme_match_head(scheme: str, *, vocab: int = 8, train_length: int = 64, head_dim: int = 16, batch: int = 32,
                            steps: int = 600, lr: float = 0.05, init_std: float = 0.3, seed: int = 0,
                            rows: int | None = None, max_distance: int | None = None, num_buckets: int = 32,
                            alibi_heads: int = 8, alibi_head: int = 0, operator=None) -> TrainedMatchHead:
    """Train a head of any scheme in ``SCHEMES`` on Gate C's most-recent-match task.

    Each step draws ``batch`` (at most :data:`MAX_BATCH`) fresh sequences over ``vocab`` (at most
    :data:`MAX_SCHEME_VOCAB`) tokens. Learned: query and key tables, plus T5's bucket biases or the
    relative key vectors; ``absolute`` / ``sinusoidal`` learn token vectors and ``W_q, W_k`` (and the
    absolute table); ALiBi's slope ``alibi_slopes(alibi_heads)[alibi_head]`` is fixed; ``rope`` is
    Gate C's own match head. Other arguments as in :func:`train_position_head`. Raises ValueError for
    an unknown scheme, a parameter out of range, or divergence.
    """
    L, head_dim, steps, lr, init_std, seed, R = _setup(scheme, SCHEMES, train_length, head_dim, steps, lr, init_std,
                                                       seed, rows)
    vocab = v.integer("vocab", vocab, minimum=2, maximum=MAX_SCHEME_VOCAB)
    batch = v.integer("batch", batch, minimum=1, maximum=MAX_BATCH)
    check_match_memory(scheme, L, batch, vocab, head_dim, R)
    if scheme == "rope":
        gate_c = train_rope_match_head(vocab, operator=operator, head_dim=head_dim,
                                       train_length=L, batch=batch, steps=steps, lr=lr, init_std=init_std, seed=seed)
        layer = AttentionLayer(vocab, head_dim, scheme=_rope(gate_c), seed=0)
        layer.Wq, layer.Wk = math.sqrt(head_dim) * gate_c.q_table, gate_c.k_table.copy()
        return TrainedMatchHead(layer, np.eye(vocab), scheme=scheme, train_length=L, seed=seed, losses=gate_c.losses)
    rng = np.random.default_rng(seed)
    optim = dict(steps=steps, lr=lr, init_std=init_std)
    if scheme in ("absolute", "sinusoidal"):
        layer, tokens, losses = _train_match_projection(scheme, rng, vocab, L, head_dim, batch, R, **optim)
    else:
        options = dict(max_distance=max_distance, num_buckets=num_buckets, alibi_heads=alibi_heads,
                       alibi_head=alibi_head)
        layer, tokens, losses = _train_match_table(scheme, rng, vocab, L, head_dim, batch, options, **optim)
    return TrainedMatchHead(layer, tokens, scheme=scheme, train_length=L, seed=seed, losses=losses)


def _train_match_projection(scheme, rng, vocab, L, d, batch, R, *, steps, lr, init_std):
    """Token vectors (plus a position table for ``absolute``) through ``W_q, W_k``."""
    E = rng.normal(scale=init_std, size=(vocab, d))
    Wq, Wk = rng.normal(scale=init_std, size=(2, d, d))
    absolute = scheme == "absolute"
    T = rng.normal(scale=init_std, size=(R, d)) if absolute else sinusoidal_encoding(np.arange(L), d)
    dT = np.zeros_like(T)

    def step(t):
        loss, dE, dT[:L], dWq, dWk = _fb_match_projection(E, T[:L], Wq, Wk, rng.integers(0, vocab, size=(batch, L)))
        return (loss, dE, dT, dWq, dWk) if absolute else (loss, dE, dWq, dWk)

    losses = _adam([E, T, Wq, Wk] if absolute else [E, Wq, Wk], step, steps, lr, init_std)
    return _layer(d, AbsolutePositions(table=T) if absolute else "sinusoidal", Wq, Wk), E, losses


def _train_match_table(scheme, rng, vocab, L, d, batch, options, *, steps, lr, init_std):
    """Query and key tables plus the scheme's bias (none, alibi, t5, relative)."""
    pos = np.arange(L)
    Qt, Kt = rng.normal(scale=init_std, size=(2, vocab, d))
    params, kw, sch, md = [Qt, Kt], {}, "none", options["max_distance"]
    if scheme == "alibi":
        sch = ALiBi(heads=options["alibi_heads"], head=options["alibi_head"])
        kw["bias"] = -sch.slope * np.abs(pos[:, None] - pos[None, :]).astype(np.float64)
    elif scheme == "t5":
        opts = dict(num_buckets=options["num_buckets"], max_distance=128 if md is None else md, bidirectional=False)
        T5Bias(**opts)  # validates
        b = rng.normal(scale=init_std, size=int(opts["num_buckets"]))
        kw["bias"] = (b, t5_bucket(pos[None, :] - pos[:, None], **opts).ravel())
        params.append(b)
    elif scheme == "relative":
        K = v.integer("max_distance", 16 if md is None else md, minimum=1, maximum=4096)
        a = rng.normal(scale=init_std, size=(2 * K + 1, d))
        kw["rel"] = (a, np.clip(pos[None, :] - pos[:, None], -K, K) + K)
        params.append(a)

    def step(t):
        loss, dQt, dKt, db, da = _fb_match_table(Qt, Kt, rng.integers(0, vocab, size=(batch, L)), **kw)
        return loss, dQt, dKt, db if scheme == "t5" else da

    losses = _adam(params, step, steps, lr, init_std)
    if scheme == "t5":
        sch = T5Bias(table=b, **opts)
    elif scheme == "relative":
        sch = RelativePositions(max_distance=K, key_table=a, value_table=np.zeros_like(a), values=False)
    return _layer(vocab, sch, Qt, Kt, head_dim=d), np.eye(vocab), losses
