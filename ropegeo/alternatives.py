"""Position schemes side by side: tiny position-only heads trained per scheme, then intervened on.

Every learned scheme of :mod:`ropegeo.attention` gets the same small experiment as Gate C
(:mod:`ropegeo.behaviour`): a head that sees one fixed token at every slot (so only positions can
guide it) is trained to attend to the key ``offset`` slots back, over strictly earlier keys, with
the full-batch cross-entropy of Gate C, Adam, and hand-derived gradients (checked against finite
differences in the tests). What each scheme lets the head learn:

=============  ==================================  ============================================
scheme         trained parameters                  score of query ``m`` against key ``n``
=============  ==================================  ============================================
``absolute``   table ``T`` (rows), ``W_q, W_k``    ``(e + T_m) W_q W_k^T (e + T_n)^T / sqrt(d)``
``sinusoidal`` ``W_q, W_k``                        the same with the fixed code ``PE`` for ``T``
``relative``   query ``q``, key vectors ``a^K_r``  ``q . a^K(clip(n - m, -K, K)) / sqrt(d)`` + const
``t5``         one bias per bucket ``b``           ``b[t5_bucket(n - m)]`` + const
``rope``       ``q, k`` (Gate C's offset head)     ``R_m q . R_n k``: trained by
                                                   :func:`ropegeo.behaviour.train_offset_head`
=============  ==================================  ============================================

``none`` (NoPE) and ``alibi`` have nothing positional to learn: their heads are the fixed formula.

:func:`compare_schemes` trains (or builds) one head per scheme, seed and task and runs every
intervention of :mod:`ropegeo.interventions` on it; :class:`Comparison` holds the numbers and
prints the table. Run with ``OPENBLAS_NUM_THREADS=1`` (small matrices).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import _validate as v
from .attention import AbsolutePositions, AttentionLayer, RelativePositions, T5Bias, sinusoidal_encoding, t5_bucket
from .behaviour import _Adam, _softmax_rows, train_offset_head
from .interventions import (
    PositionHead,
    construction_gap,
    global_shift,
    length_stretch,
    local_displacement,
    offset_task,
    position_head,
    sparse_retrieval,
)

__all__ = [
    "SCHEMES",
    "LEARNED",
    "FIXED",
    "TrainedHead",
    "train_position_head",
    "fixed_head",
    "task_loss",
    "SchemeResult",
    "Comparison",
    "compare_schemes",
]

SCHEMES = ("none", "absolute", "sinusoidal", "relative", "t5", "alibi", "rope")
LEARNED = ("absolute", "sinusoidal", "relative", "t5", "rope")
FIXED = ("none", "alibi")

#: Longest training length (a length x length score matrix per step).
MAX_TRAIN_LENGTH = 1024


class TrainedHead(PositionHead):
    """A :class:`~ropegeo.interventions.PositionHead` trained on the displacement task.

    Attributes
    ----------
    layer : AttentionLayer
        The layer with the trained parameters (token ``e_0`` at every slot).
    scheme : str
        The scheme's name.
    offset, train_length : int
        The task it was trained on.
    seed : int
        Initialisation seed.
    losses : numpy.ndarray, shape (steps,)
        Training loss (nats) after each step.
    """

    def __init__(self, layer, *, scheme: str, offset: int, train_length: int, seed: int, losses):
        super().__init__(layer, name=scheme)
        self.scheme, self.offset, self.train_length, self.seed = scheme, offset, train_length, seed
        self.losses = np.asarray(losses, dtype=np.float64)

    def __repr__(self) -> str:
        last = self.losses[-1] if self.losses.size else math.nan
        return (f"TrainedHead({self.scheme!r}, offset={self.offset}, train_length={self.train_length}, "
                f"seed={self.seed}, final loss {last:.3g})")


def _task_grad(S: np.ndarray, offset: int) -> tuple[float, np.ndarray]:
    """Cross-entropy of the displacement task over strictly earlier keys and its gradient in S."""
    L = S.shape[0]
    earlier = np.tri(L, L, -1)
    p, top, z = _softmax_rows(S.copy(), earlier)
    m = np.arange(offset, L)
    n = m.size
    loss = float(np.mean(np.log(z[m, 0]) + top[m, 0] - S[m, m - offset]))
    g = np.zeros_like(S)
    g[m] = p[m] / n
    g[m, m - offset] -= 1.0 / n
    return loss, g


def task_loss(head: PositionHead, offset: int, length: int) -> float:
    """The training loss of a head, computed through its attention layer.

    Mean over queries ``m = offset .. length - 1`` of ``-log`` of the attention on slot
    ``m - offset``, softmax over strictly earlier slots, positions ``0 .. length - 1``.

    Raises
    ------
    ValueError
        For an offset outside ``[1, length - 1]``.
    """
    length = v.integer("length", length, minimum=2, maximum=MAX_TRAIN_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=length - 1)
    S = head.scores(np.arange(length, dtype=np.float64))
    return _task_grad(S, offset)[0]


# ---- per-scheme forward and backward (token e_0 at every slot) ------------------------------


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


def _train_absolute(rng, d, L, offset, steps, lr, init_std, rows):
    T = rng.normal(scale=init_std, size=(rows, d))
    Wq, Wk = rng.normal(scale=init_std, size=(2, d, d))
    e0 = np.eye(d)[0]
    losses = np.empty(steps)
    opt = _Adam([T, Wq, Wk], lr)
    dT = np.zeros_like(T)
    for t in range(steps):
        losses[t], dWq, dWk, dH = _fb_projection(e0 + T[:L], Wq, Wk, offset)
        dT[:L] = dH
        opt.step([dT, dWq, dWk])
    layer = AttentionLayer(d, scheme=AbsolutePositions(table=T), seed=0)
    layer.Wq, layer.Wk = Wq, Wk
    return layer, losses


def _train_sinusoidal(rng, d, L, offset, steps, lr, init_std):
    Wq, Wk = rng.normal(scale=init_std, size=(2, d, d))
    H = np.eye(d)[0] + sinusoidal_encoding(np.arange(L), d)
    losses = np.empty(steps)
    opt = _Adam([Wq, Wk], lr)
    for t in range(steps):
        losses[t], dWq, dWk, _ = _fb_projection(H, Wq, Wk, offset)
        opt.step([dWq, dWk])
    layer = AttentionLayer(d, scheme="sinusoidal", seed=0)
    layer.Wq, layer.Wk = Wq, Wk
    return layer, losses


def _train_relative(rng, d, L, offset, steps, lr, init_std, max_distance):
    K = max_distance
    q = rng.normal(scale=init_std, size=d)
    a = rng.normal(scale=init_std, size=(2 * K + 1, d))
    k0 = rng.normal(scale=init_std, size=d)  # the key: a constant shift of every score
    pos = np.arange(L)
    idx = (np.clip(pos[None, :] - pos[:, None], -K, K) + K).ravel()
    losses = np.empty(steps)
    opt = _Adam([q, a], lr)
    for t in range(steps):
        losses[t], dq, da = _fb_relative(q, a, k0, idx, L, offset)
        opt.step([dq, da])
    layer = AttentionLayer(d, scheme=RelativePositions(max_distance=K, key_table=a, value_table=np.zeros_like(a),
                                                       values=False), seed=0)
    layer.Wq, layer.Wk = np.zeros((d, d)), np.zeros((d, d))
    layer.Wq[0], layer.Wk[0] = q, k0
    return layer, losses


def _train_t5(rng, d, L, offset, steps, lr, init_std, num_buckets, max_distance):
    b = rng.normal(scale=init_std, size=num_buckets)
    pos = np.arange(L)
    idx = t5_bucket(pos[None, :] - pos[:, None], bidirectional=False, num_buckets=num_buckets,
                    max_distance=max_distance).ravel()
    losses = np.empty(steps)
    opt = _Adam([b], lr)
    for t in range(steps):
        losses[t], db = _fb_t5(b, idx, L, offset)
        opt.step([db])
    layer = AttentionLayer(d, scheme=T5Bias(num_buckets=num_buckets, max_distance=max_distance, bidirectional=False,
                                            table=b), seed=0)
    layer.Wq, layer.Wk = np.zeros((d, d)), np.zeros((d, d))
    return layer, losses


def _train_rope(seed, d, L, offset, steps, lr, init_std, base, theta):
    gate_c = train_offset_head(offset, head_dim=d, base=base, theta=theta, train_length=L, steps=steps, lr=lr,
                               init_std=init_std, seed=seed)
    layer = AttentionLayer(d, scheme="rope", base=base, theta=gate_c.theta, seed=0)
    layer.Wq, layer.Wk = np.zeros((d, d)), np.zeros((d, d))
    # Gate C's score is R_m q . R_n k; the layer divides by sqrt(d), so the query carries sqrt(d)
    layer.Wq[0], layer.Wk[0] = math.sqrt(d) * gate_c.q, gate_c.k
    return layer, gate_c.losses


def train_position_head(
    scheme: str,
    offset: int = 5,
    *,
    train_length: int = 64,
    d: int = 16,
    steps: int = 1000,
    lr: float = 0.05,
    init_std: float = 0.3,
    seed: int = 0,
    rows: int | None = None,
    max_distance: int | None = None,
    num_buckets: int = 32,
    base: float = 10_000.0,
    theta=None,
) -> TrainedHead:
    """Train a position-only head of one learned scheme to attend ``offset`` slots back.

    Parameters
    ----------
    scheme : {"absolute", "sinusoidal", "relative", "t5", "rope"}
    offset : int
        Target displacement (1 to ``train_length - 1``).
    train_length : int
        Sequence length of training (2 to 1024); positions ``0 .. train_length - 1``.
    d : int
        Width of the layer and its head (even, 2 to 256).
    steps : int
        Full-batch Adam steps (1 to 100,000).
    lr, init_std : float
        Adam's learning rate and the standard deviation of the initial parameters (positive).
    seed : int
        Initialisation seed (non-negative).
    rows : int, optional
        ``absolute``: rows of the table (default ``8 * train_length``, so a stretched sequence
        still has rows; rows past the training length are never updated).
    max_distance : int, optional
        ``relative``: clipping distance ``K`` (default 16). ``t5``: the bucket ``max_distance``
        (default 128).
    num_buckets : int
        ``t5``: number of buckets (decoder style, one side).
    base, theta
        ``rope``: the schedule (``theta`` from ``ropegeo.scaling`` overrides ``base``).

    Returns
    -------
    TrainedHead

    Raises
    ------
    ValueError
        For an unknown or fixed scheme and parameters outside their ranges.
    """
    if scheme not in LEARNED:
        raise ValueError(f"scheme must be one of the learned schemes {', '.join(map(repr, LEARNED))}, got {scheme!r}"
                         + (" (it has nothing to train: use fixed_head)" if scheme in FIXED else ""))
    train_length = v.integer("train_length", train_length, minimum=2, maximum=MAX_TRAIN_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=train_length - 1)
    d = v.head_dim(d, "d")
    if d > 256:
        raise ValueError(f"d must be at most 256, got {d}")
    steps = v.integer("steps", steps, minimum=1, maximum=100_000)
    lr = v.real("lr", lr, greater_than=0.0)
    init_std = v.real("init_std", init_std, greater_than=0.0)
    seed = v.integer("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    if scheme == "absolute":
        rows = v.integer("rows", 8 * train_length if rows is None else rows, minimum=train_length, maximum=1 << 16)
        layer, losses = _train_absolute(rng, d, train_length, offset, steps, lr, init_std, rows)
    elif scheme == "sinusoidal":
        layer, losses = _train_sinusoidal(rng, d, train_length, offset, steps, lr, init_std)
    elif scheme == "relative":
        K = v.integer("max_distance", 16 if max_distance is None else max_distance, minimum=1, maximum=4096)
        layer, losses = _train_relative(rng, d, train_length, offset, steps, lr, init_std, K)
    elif scheme == "t5":
        md = 128 if max_distance is None else max_distance
        T5Bias(num_buckets=num_buckets, max_distance=md, bidirectional=False)  # validates both
        layer, losses = _train_t5(rng, d, train_length, offset, steps, lr, init_std, int(num_buckets), int(md))
    else:
        layer, losses = _train_rope(seed, d, train_length, offset, steps, lr, init_std, base, theta)
    return TrainedHead(layer, scheme=scheme, offset=offset, train_length=train_length, seed=seed, losses=losses)


def fixed_head(scheme: str, *, d: int = 16, seed: int = 0, **options) -> PositionHead:
    """The position-only head of a scheme with nothing to learn (``"none"`` or ``"alibi"``).

    Its projections are random (seeded) but irrelevant: the same token at every slot gives every
    key the same content score, so only the scheme's position term (none, or ALiBi's bias) moves
    the attention.

    Raises
    ------
    ValueError
        For a scheme that is not fixed.
    """
    if scheme not in FIXED:
        raise ValueError(f"scheme must be one of the fixed schemes {', '.join(map(repr, FIXED))}, got {scheme!r}")
    return position_head(scheme, d_model=d, seed=seed, **options)


# ---- the comparison ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemeResult:
    """Every measurement of one scheme and one seed.

    Attributes
    ----------
    scheme : str
    seed : int
    trained : bool
        False for the fixed formulas (none, alibi).
    accuracy : float
        Displacement task at the training length (the short-context score).
    shift_guaranteed : bool
        The scheme's scores are invariant to a global shift by construction.
    shift_change : float
        Largest score change under that shift for random weights and content (rounding if guaranteed).
    shift_winners_kept : float
        Share of the head's queries whose winner survives the shift.
    shift_weight_change : float
        Largest change of the head's attention weights under the shift.
    move_score_change : float
        Mean change of the target key's score when it moves one position farther away.
    move_mass_before, move_mass_after : float
        Mean attention on that key before and after the move.
    stretch_accuracy, stretch_mass : tuple of float
        The task at each stretch factor (NaN where the scheme refuses the positions).
    retrieval_mass_train, retrieval_mass_long : float
        Mean attention on the key ``distance`` back, at the training length and at the longest
        stretched length, for a head trained on that distance.
    retrieval_accuracy_long : float
        Share of those queries whose strict winner is that key, at the longest length.
    final_loss : float
        Training loss of the local head (NaN for fixed formulas).
    """

    scheme: str
    seed: int
    trained: bool
    accuracy: float
    shift_guaranteed: bool
    shift_change: float
    shift_winners_kept: float
    shift_weight_change: float
    move_score_change: float
    move_mass_before: float
    move_mass_after: float
    stretch_accuracy: tuple
    stretch_mass: tuple
    retrieval_mass_train: float
    retrieval_mass_long: float
    retrieval_accuracy_long: float
    final_loss: float


@dataclass(frozen=True)
class Comparison:
    """The scheme-by-intervention table, per seed and averaged.

    Attributes
    ----------
    results : dict
        ``scheme -> list of SchemeResult`` (one per seed).
    heads : dict
        ``(scheme, task) -> list of heads`` with task ``"local"`` or ``"far"``.
    settings : dict
        Every setting of the run.
    """

    results: dict
    heads: dict = field(repr=False)
    settings: dict = field(default_factory=dict)

    def mean(self, scheme: str, name: str):
        """Mean over seeds of one field (element-wise for the stretch tuples)."""
        vals = [getattr(r, name) for r in self.results[scheme]]
        return np.mean(np.array(vals, dtype=np.float64), axis=0)

    def per_seed(self, scheme: str, name: str) -> np.ndarray:
        """One field for every seed, shape (seeds,) or (seeds, factors)."""
        return np.array([getattr(r, name) for r in self.results[scheme]], dtype=np.float64)

    def markdown(self) -> str:
        """The table as Markdown: one row per scheme, means over seeds."""
        s = self.settings
        fac = " / ".join(f"{f}x" for f in s["factors"])
        head = ["scheme", "kind", f"accuracy at L={s['train_length']}",
                f"shift by {s['shift']:g}: guaranteed?", "shift: winners kept",
                "move target 1 step: score change", "move: mass before -> after",
                f"stretch {fac}: accuracy", f"retrieval at {s['distance']}: mass at L -> {s['factors'][-1]}L"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name in self.results:
            r0 = self.results[name][0]
            stretch = " / ".join("undefined" if math.isnan(a) else f"{a:.2f}" for a in self.mean(name, "stretch_accuracy"))
            row = [
                name, "trained" if r0.trained else "formula", f"{self.mean(name, 'accuracy'):.2f}",
                "yes" if r0.shift_guaranteed else "no", f"{self.mean(name, 'shift_winners_kept'):.2f}",
                f"{self.mean(name, 'move_score_change'):+.2f}",
                f"{self.mean(name, 'move_mass_before'):.2f} -> {self.mean(name, 'move_mass_after'):.2f}",
                stretch,
                f"{self.mean(name, 'retrieval_mass_train'):.3f} -> {self.mean(name, 'retrieval_mass_long'):.3f}",
            ]
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Plain-Python form of every per-seed result and the settings."""
        return {"settings": dict(self.settings),
                "results": {k: [r.__dict__ | {"stretch_accuracy": list(r.stretch_accuracy),
                                              "stretch_mass": list(r.stretch_mass)} for r in rs]
                            for k, rs in self.results.items()}}


def _measure(head, far, *, trained, scheme, seed, offset, distance, L, factors, shift):
    gap = construction_gap(head, L - shift, shift)
    sh = global_shift(head, L - shift, shift)
    mv = local_displacement(head, L, offset)
    st = length_stretch(head, L, offset, factors)
    long = factors[-1] * L
    ret_l = sparse_retrieval(far, L, distance)
    ret_x = sparse_retrieval(far, long, distance)
    loss = float(head.losses[-1]) if isinstance(head, TrainedHead) else math.nan
    return SchemeResult(
        scheme=scheme, seed=seed, trained=trained, accuracy=offset_task(head, L, offset).accuracy,
        shift_guaranteed=gap.guaranteed, shift_change=gap.guaranteed_change, shift_winners_kept=sh.winners_kept,
        shift_weight_change=sh.weight_change, move_score_change=mv.score_change, move_mass_before=mv.mass_before,
        move_mass_after=mv.mass_after, stretch_accuracy=tuple(float(a) for a in st.accuracy),
        stretch_mass=tuple(float(a) for a in st.mass), retrieval_mass_train=ret_l.mass,
        retrieval_mass_long=ret_x.mass, retrieval_accuracy_long=ret_x.accuracy, final_loss=loss,
    )


def compare_schemes(
    schemes=SCHEMES,
    *,
    offset: int = 5,
    distance: int = 40,
    train_length: int = 64,
    factors=(2, 4, 8),
    shift: int = 16,
    seeds=(0, 1, 2),
    d: int = 16,
    steps: int = 1000,
    alibi_head: int = 0,
    alibi_heads: int = 8,
    progress: bool = False,
    **train_options,
) -> Comparison:
    """Every scheme against every intervention, with one trained head per scheme, task and seed.

    For each scheme and seed two heads are made: a *local* one (attend ``offset`` back) and a
    *far* one (attend ``distance`` back); fixed formulas give the same head for both. Measured:

    * the task at ``train_length`` (the short-context score);
    * a global shift by ``shift`` on a window of ``train_length - shift`` positions (so an
      absolute table stays inside its trained rows): guaranteed by construction or not
      (:func:`~ropegeo.interventions.construction_gap`), and the share of winners the local head keeps;
    * the target key moved one position farther (:func:`~ropegeo.interventions.local_displacement`);
    * the local task at ``factor * train_length`` (:func:`~ropegeo.interventions.length_stretch`);
    * the far head's mass on its key at ``train_length`` and at ``factors[-1] * train_length``
      (:func:`~ropegeo.interventions.sparse_retrieval`).

    Parameters
    ----------
    schemes : iterable of str
        Any of ``SCHEMES`` (default: all seven, in the book's order).
    offset, distance : int
        The local and the far displacement (``1 <= offset``, ``distance < train_length``).
    train_length : int
    factors : tuple of int
        Stretch multiples (increasing, the last one used for long retrieval).
    shift : int
        Global shift (``1 <= shift < train_length - offset``).
    seeds : iterable of int
    d : int
        Width of every head.
    steps : int
        Training steps of each learned head.
    alibi_head, alibi_heads : int
        Which ALiBi slope the alibi head uses (``alibi_slopes(alibi_heads)[alibi_head]``).
    progress : bool
        Show a progress bar over schemes (off in the book: no bars in stored outputs).
    **train_options
        Passed to :func:`train_position_head` (e.g. ``theta=`` for rope, ``max_distance=``).

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        For unknown schemes or settings outside their ranges.
    """
    schemes = tuple(schemes)
    bad = [s for s in schemes if s not in SCHEMES]
    if bad or not schemes:
        raise ValueError(f"schemes must be a non-empty selection of {', '.join(map(repr, SCHEMES))}, got {schemes!r}")
    train_length = v.integer("train_length", train_length, minimum=3, maximum=MAX_TRAIN_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=train_length - 2)
    distance = v.integer("distance", distance, minimum=1, maximum=train_length - 1)
    shift = v.integer("shift", shift, minimum=1, maximum=train_length - offset - 1)
    factors = tuple(v.integer("factors", f, minimum=1, maximum=64) for f in factors)
    if not factors or list(factors) != sorted(set(factors)):
        raise ValueError(f"factors must be a non-empty increasing sequence of distinct multiples, got {factors!r}")
    seeds = [v.integer("seeds", s, minimum=0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    it = schemes
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(schemes, desc="schemes", unit="scheme")
    results, heads = {}, {}
    for name in it:
        results[name], heads[(name, "local")], heads[(name, "far")] = [], [], []
        for s in seeds:
            if name in FIXED:
                opts = {"heads": alibi_heads, "head": alibi_head} if name == "alibi" else {}
                local = far = fixed_head(name, d=d, seed=s, **opts)
            else:
                local = train_position_head(name, offset, train_length=train_length, d=d, steps=steps, seed=s,
                                            **train_options)
                far = train_position_head(name, distance, train_length=train_length, d=d, steps=steps, seed=s,
                                          **train_options)
            heads[(name, "local")].append(local)
            heads[(name, "far")].append(far)
            results[name].append(_measure(local, far, trained=name in LEARNED, scheme=name, seed=s, offset=offset,
                                          distance=distance, L=train_length, factors=factors, shift=shift))
    settings = {"offset": offset, "distance": distance, "train_length": train_length, "factors": factors,
                "shift": shift, "seeds": tuple(seeds), "d": d, "steps": steps, "alibi_head": alibi_head,
                "alibi_heads": alibi_heads, **{k: val for k, val in train_options.items() if k != "theta"}}
    return Comparison(results, heads, settings)
