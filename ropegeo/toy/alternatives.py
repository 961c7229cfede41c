"""Position schemes side by side: tiny position-only heads trained per scheme, then intervened on.

The heads are trained in :mod:`ropegeo.toy.scheme_heads` (its names are re-exported here): a
content-free head per learned scheme of :mod:`ropegeo.toy.attention`, trained on Gate C's offset task
(and a head with token tables on its match task); that module's docstring tables what each scheme
lets the head learn. ``none`` (NoPE) and ``alibi`` have nothing positional to learn: their heads
are the fixed formula.

Two closed forms bound what the comparison can show: :func:`clipped_retrieval_ceiling` (the most attention
clipped relative vectors let any content-free head put on a far key) and :func:`trained_rows_share`
(the share of the stretched task's queries that an absolute table still covers with trained rows).

:func:`compare_schemes` trains (or builds) one head per scheme, seed and task and runs every
intervention of :mod:`ropegeo.toy.interventions` on it; :class:`Comparison` holds the numbers and
prints the table. ``ropegeo.toy.alternatives.ruler_study`` trains the rotary heads alone under several rulers and
training budgets, and ``ropegeo.toy.alternatives.attention_split`` says where a far head's attention goes when it
misses its key. Run with ``OPENBLAS_NUM_THREADS=1`` (small matrices).
"""


from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ropegeo import _validate as v
from ropegeo.toy import seed_list
from ropegeo.toy.interventions import (MAX_FACTORS, MAX_PROBE_LENGTH, construction_gap, global_shift, length_stretch,
                                       local_displacement, match_task, offset_task, sparse_retrieval, strict_attention)
from ropegeo.toy.scheme_heads import (FIXED, LEARNED, MAX_BATCH, MAX_D, MAX_TRAIN_LENGTH, SCHEMES,
                                      TrainedHead, check_match_memory, check_position_memory, fixed_head,
                                      train_position_head, train_scheme_match_head, _setup)

__all__ = ["SchemeResult", "Comparison", "compare_schemes", "clipped_retrieval_ceiling", "trained_rows_share", "AttentionSplit", "attention_split", "far_rival", "ruler_study"]


# ---- closed-form limits of the schemes -------------------------------------------------------


def clipped_retrieval_ceiling(length: int, distance: int, *, clip: int = 16) -> float:
    """The most attention a content-free head with clipped relative vectors can put on a far key.

    In the relative scheme (Shaw et al.) key ``n`` enters the score of query ``m`` only through the
    vector of the clipped displacement ``clip(n - m, -K, K)``. Every earlier key ``K`` or more slots
    back therefore gets the same score, and the same attention, as every other such key. For
    ``distance >= K`` the best a head without content can do for query ``m`` is to push every nearer
    key down and split its attention evenly over the ``m - K + 1`` keys at distances ``K .. m``:
    ``1 / (m - K + 1)``. For ``distance < K`` the key has a vector of its own and the bound is 1.
    Both are suprema, approached as the learned scores grow, never reached by finite weights.

    The result is averaged over the queries ``m = distance .. length - 1`` that can see the key,
    with strictly earlier keys only, exactly as :func:`ropegeo.toy.interventions.sparse_retrieval`
    averages a head's attention on it; a trained head's mean mass never exceeds it.

    Parameters
    ----------
    length : int
        Sequence length, in slots (``distance + 1`` to ``2**24``); positions ``0 .. length - 1``.
    distance : int
        Displacement of the relevant key, in slots (1 to ``2**24 - 1``).
    clip : int
        The clipping distance ``K`` of the scheme (1 to ``ropegeo._validate.MAX_LENGTH`` = 2**48;
        the book's default 16).

    Returns
    -------
    float
        Mean over the scored queries of the largest attention on the key, in ``(0, 1]``.

    Raises
    ------
    ValueError
        For a parameter outside its range; the message names the parameter.
    """
    distance = v.integer("distance", distance, minimum=1, maximum=(1 << 24) - 1)
    length = v.integer("length", length, minimum=distance + 1, maximum=1 << 24)
    clip = v.length("clip", clip)
    if distance < clip:
        return 1.0
    m = np.arange(distance, length, dtype=np.float64)
    return float(np.mean(1.0 / (m - clip + 1.0)))


def trained_rows_share(length: int, train_length: int, offset: int) -> float:
    """Share of the displacement task's queries that an absolute table still covers with trained rows.

    A learned absolute table trained on sequences of ``train_length`` slots has updated only the
    rows ``0 .. train_length - 1``. On a sequence of ``length`` slots the task scores the queries
    ``m = offset .. length - 1`` (as :func:`ropegeo.toy.interventions.offset_task` does); query ``m`` and
    every key it can see (slots ``0 .. m - 1``, its target ``m - offset`` among them) sit on trained
    rows exactly when ``m < train_length``. The share is therefore
    ``(min(length, train_length) - offset) / (length - offset)``, and 1 up to the training length.

    Parameters
    ----------
    length : int
        Length of the evaluated sequence, in slots (``offset + 1`` to ``2**24``).
    train_length : int
        Length the table was trained at, in slots (``offset + 1`` to ``ropegeo._validate.MAX_LENGTH``).
    offset : int
        Displacement of the task's target, in slots (1 to ``2**24 - 1``).

    Returns
    -------
    float
        A share in ``(0, 1]``.

    Raises
    ------
    ValueError
        For a parameter outside its range; the message names the parameter.
    """
    offset = v.integer("offset", offset, minimum=1, maximum=(1 << 24) - 1)
    length = v.integer("length", length, minimum=offset + 1, maximum=1 << 24)
    train_length = v.length("train_length", train_length, minimum=offset + 1)
    return (min(length, train_length) - offset) / (length - offset)


# ---- the comparison ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemeResult:
    """Every measurement of one scheme and one seed.

    Attributes
    ----------
    scheme : str
    seed : int
    trained : bool
        Whether the scheme's position term is learned (False for none and alibi, whose position-only
        heads are the fixed formula).
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
    match_accuracy_train, match_accuracy_long, match_mass_train, match_mass_long : float
        Gate C's most-recent-match task (content and position) for a match head of the scheme, at
        the training length and at the longest stretched length (NaN when not run).
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
    match_accuracy_train: float = math.nan
    match_accuracy_long: float = math.nan
    match_mass_train: float = math.nan
    match_mass_long: float = math.nan


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
        head = ["scheme", "position term", f"accuracy at L={s['train_length']}",
                f"shift by {s['shift']:g}: guaranteed?", "shift: winners kept",
                "move target 1 step: score change", "move: mass before -> after",
                f"stretch {fac}: accuracy", f"retrieval at {s['distance']}: mass at L -> {s['factors'][-1]}L"]
        match = s.get("match", False)
        if match:
            head.append(f"most-recent match: accuracy at L -> {s['factors'][-1]}L")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name in self.results:
            r0 = self.results[name][0]
            stretch = " / ".join("undefined" if math.isnan(a) else f"{a:.2f}" for a in self.mean(name, "stretch_accuracy"))
            row = [
                name, "learned" if r0.trained else "fixed", f"{self.mean(name, 'accuracy'):.2f}",
                "yes" if r0.shift_guaranteed else "no", f"{self.mean(name, 'shift_winners_kept'):.2f}",
                f"{self.mean(name, 'move_score_change'):+.2f}",
                f"{self.mean(name, 'move_mass_before'):.2f} -> {self.mean(name, 'move_mass_after'):.2f}",
                stretch,
                f"{self.mean(name, 'retrieval_mass_train'):.3f} -> {self.mean(name, 'retrieval_mass_long'):.3f}",
            ]
            if match:
                row.append(f"{self.mean(name, 'match_accuracy_train'):.2f} -> {self.mean(name, 'match_accuracy_long'):.2f}")
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Plain-Python form of every per-seed result and the settings (lists for tuples)."""
        settings = {k: list(val) if isinstance(val, tuple) else val for k, val in self.settings.items()}
        return {"settings": settings,
                "results": {k: [r.__dict__ | {"stretch_accuracy": list(r.stretch_accuracy),
                                              "stretch_mass": list(r.stretch_mass)} for r in rs]
                            for k, rs in self.results.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> "Comparison":
        """Rebuild a comparison from :meth:`to_dict`'s form, e.g. a stored run (results only, no heads).

        Parameters
        ----------
        data : dict
            ``{"settings": ..., "results": {scheme: [per-seed fields]}}``; other keys (provenance) are ignored.

        Returns
        -------
        Comparison
            With ``heads`` empty: the heads themselves are not stored.

        Raises
        ------
        ValueError
            If ``data`` lacks the settings or results, or a result lacks a field of :class:`SchemeResult`.
        """
        if not isinstance(data, dict) or "settings" not in data or "results" not in data:
            raise ValueError("data must be a dict with 'settings' and 'results' (Comparison.to_dict's form)")
        settings = {k: tuple(val) if isinstance(val, list) else val for k, val in data["settings"].items()}
        results = {}
        names = sorted(data["results"], key=lambda n: (SCHEMES.index(n) if n in SCHEMES else len(SCHEMES), n))
        for name in names:
            rows = data["results"][name]
            try:
                results[name] = [SchemeResult(**(r | {"stretch_accuracy": tuple(r["stretch_accuracy"]),
                                                      "stretch_mass": tuple(r["stretch_mass"])})) for r in rows]
            except (TypeError, KeyError) as err:
                raise ValueError(f"data['results'][{name!r}] does not hold SchemeResult fields: {err}") from None
        return cls(results, {}, settings)


def _measure(head, far, matcher, *, trained, scheme, seed, offset, distance, L, factors, shift):
    gap = construction_gap(head, L - shift, shift)
    sh = global_shift(head, L - shift, shift)
    mv = local_displacement(head, L, offset)
    st = length_stretch(head, L, offset, factors)
    long = factors[-1] * L
    ret_l = sparse_retrieval(far, L, distance)
    ret_x = sparse_retrieval(far, long, distance)
    loss = float(head.losses[-1]) if isinstance(head, TrainedHead) else math.nan
    extra = {}
    if matcher is not None:
        m_l, m_x = match_task(matcher, L), match_task(matcher, long)
        extra = dict(match_accuracy_train=m_l.accuracy, match_accuracy_long=m_x.accuracy,
                     match_mass_train=m_l.mass, match_mass_long=m_x.mass)
    return SchemeResult(
        scheme=scheme, seed=seed, trained=trained, accuracy=offset_task(head, L, offset).accuracy,
        shift_guaranteed=gap.guaranteed, shift_change=gap.guaranteed_change, shift_winners_kept=sh.winners_kept,
        shift_weight_change=sh.weight_change, move_score_change=mv.score_change, move_mass_before=mv.mass_before,
        move_mass_after=mv.mass_after, stretch_accuracy=tuple(float(a) for a in st.accuracy),
        stretch_mass=tuple(float(a) for a in st.mass), retrieval_mass_train=ret_l.mass,
        retrieval_mass_long=ret_x.mass, retrieval_accuracy_long=ret_x.accuracy, final_loss=loss, **extra,
    )


def _check_trainers(schemes, L, head_dim, steps, match, match_steps, match_batch, train_options) -> None:
    """Validate the settings and budgets of every head :func:`compare_schemes` will train, up front."""
    for name in schemes:
        _, d, *_, R = _setup(name, SCHEMES, L, head_dim, steps, train_options.get("lr", 0.05),
                             train_options.get("init_std", 0.3), 0, train_options.get("rows"))
        if name in LEARNED:
            check_position_memory(name, L, d, R)
        if match:
            check_match_memory(name, L, match_batch, 8, d, R)


def _check_comparison(schemes, train_length, offset, distance, shift, factors, seeds) -> tuple:
    """Validate the task settings of :func:`compare_schemes` (see there); returns them normalised."""
    if not v.is_collection(schemes):
        raise ValueError(f"schemes must be a non-empty selection of {', '.join(map(repr, SCHEMES))} (a tuple such "
                         f"as ('rope',)), got {schemes!r}")
    schemes = tuple(itertools.islice(schemes, 2 * len(SCHEMES) + 1))
    bad = [s for s in schemes if not isinstance(s, str) or s not in SCHEMES]
    if bad or not schemes or len(set(schemes)) != len(schemes):
        raise ValueError(f"schemes must be a non-empty selection of distinct names from "
                         f"{', '.join(map(repr, SCHEMES))}, got {schemes!r}")
    train_length = v.integer("train_length", train_length, minimum=3, maximum=MAX_TRAIN_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=train_length - 2)
    distance = v.integer("distance", distance, minimum=1, maximum=train_length - 1)
    shift = v.integer("shift", shift, minimum=1, maximum=train_length - offset - 1)
    if not v.is_collection(factors):
        raise ValueError(f"factors must be a non-empty increasing sequence of distinct multiples such as (2, 4, 8), "
                         f"got {factors!r}")
    factors = tuple(v.integer("factors", f, minimum=1, maximum=64) for f in itertools.islice(factors, MAX_FACTORS + 1))
    if not factors or list(factors) != sorted(set(factors)):
        raise ValueError(f"factors must be a non-empty increasing sequence of distinct multiples, got {factors!r}")
    if len(factors) > MAX_FACTORS:
        raise ValueError(f"factors must hold at most MAX_FACTORS = {MAX_FACTORS} multiples, got more")
    if factors[-1] * train_length > MAX_PROBE_LENGTH:
        raise ValueError(f"factors must keep factors[-1] * train_length at most MAX_PROBE_LENGTH = {MAX_PROBE_LENGTH}, got "
                         f"{factors[-1]} * {train_length} = {factors[-1] * train_length}")
    seeds = seed_list(seeds)
    return schemes, train_length, offset, distance, shift, factors, seeds


def compare_schemes(schemes=SCHEMES, *, offset: int = 5, distance: int = 40, train_length: int = 64, factors=(2, 4, 8),
                    shift: int = 16, seeds=(0, 1, 2), head_dim: int = 16, steps: int = 1000, alibi_head: int = 0,
                    alibi_heads: int = 8, match: bool = False, match_steps: int = 300, match_batch: int = 16,
                    progress: bool = False, **train_options) -> Comparison:
    """Every scheme against every intervention, with one trained head per scheme, task and seed.

    For each scheme and seed two heads are made: a *local* one (attend ``offset`` back) and a
    *far* one (attend ``distance`` back); fixed formulas give the same head for both. Measured:

    * the task at ``train_length`` (the short-context score);
    * a global shift by ``shift`` on a window of ``train_length - shift`` positions (so an
      absolute table stays inside its trained rows): guaranteed by construction or not
      (:func:`~ropegeo.toy.interventions.construction_gap`), and the share of winners the local head keeps;
    * the target key moved one position farther (:func:`~ropegeo.toy.interventions.local_displacement`);
    * the local task at ``factor * train_length`` (:func:`~ropegeo.toy.interventions.length_stretch`);
    * the far head's mass on its key at ``train_length`` and at ``factors[-1] * train_length``
      (:func:`~ropegeo.toy.interventions.sparse_retrieval`);
    * with ``match=True``, a third head per scheme and seed trained on Gate C's most-recent-match
      task (:func:`ropegeo.toy.scheme_heads.train_scheme_match_head`), scored at both lengths (:func:`~ropegeo.toy.interventions.match_task`).

    Parameters
    ----------
    schemes : iterable of str
        Any of ``SCHEMES`` (default: all seven, in the book's order).
    offset, distance : int
        The local and the far displacement (``1 <= offset``, ``distance < train_length``).
    train_length : int
        3 to :data:`MAX_TRAIN_LENGTH` = 1024.
    factors : tuple of int
        Stretch multiples (increasing, each 1 to 64, at most
        ``ropegeo.toy.interventions.MAX_FACTORS`` = 16 of them, and ``factors[-1] * train_length``
        at most ``ropegeo.toy.interventions.MAX_PROBE_LENGTH`` = 4096; the last one is used for long
        retrieval).
    shift : int
        Global shift (``1 <= shift < train_length - offset``).
    seeds : iterable of int
        1 to ``ropegeo.toy.MAX_SEEDS`` = 20 seeds (about 1 s each at the defaults, 3 s
        with ``match=True``).
    head_dim : int
        Width of every head.
    steps : int
        Training steps of each learned head.
    alibi_head, alibi_heads : int
        Which ALiBi slope the alibi head uses (``alibi_slopes(alibi_heads)[alibi_head]``).
    match : bool
        Also train and score a most-recent-match head per scheme and seed.
    match_steps, match_batch : int
        Its training steps and sequences per step.
    progress : bool
        Show a progress bar over schemes (off in the book: no bars in stored outputs).
    **train_options
        Passed to :func:`ropegeo.toy.scheme_heads.train_position_head` (e.g. ``operator=`` for rope, ``max_distance=``).

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        For unknown schemes or settings outside their ranges; all before any training.
    """
    schemes, train_length, offset, distance, shift, factors, seeds = _check_comparison(
        schemes, train_length, offset, distance, shift, factors, seeds)
    if not isinstance(match, (bool, np.bool_)):
        raise ValueError(f"match must be True or False, got {match!r}")
    match_steps = v.integer("match_steps", match_steps, minimum=1, maximum=100_000)
    match_batch = v.integer("match_batch", match_batch, minimum=1, maximum=MAX_BATCH)
    _check_trainers(schemes, train_length, head_dim, steps, match, match_steps, match_batch, train_options)
    it = schemes
    if progress:
        from tqdm.auto import tqdm  # only with progress=True: tqdm is an extra of ropegeo[book]

        it = tqdm(schemes, desc="schemes", unit="scheme")
    results, heads = {}, {}
    for name in it:
        results[name], heads[(name, "local")], heads[(name, "far")] = [], [], []
        if match:
            heads[(name, "match")] = []
        for s in seeds:
            if name in FIXED:
                opts = {"heads": alibi_heads, "head": alibi_head} if name == "alibi" else {}
                local = far = fixed_head(name, head_dim=head_dim, seed=s, **opts)
            else:
                local = train_position_head(name, offset, train_length=train_length, head_dim=head_dim, steps=steps, seed=s,
                                            **train_options)
                far = train_position_head(name, distance, train_length=train_length, head_dim=head_dim, steps=steps, seed=s,
                                          **train_options)
            heads[(name, "local")].append(local)
            heads[(name, "far")].append(far)
            matcher = None
            if match:
                mopts = {"alibi_heads": alibi_heads, "alibi_head": alibi_head} if name == "alibi" else \
                    {k: val for k, val in train_options.items() if k in ("rows", "max_distance", "num_buckets", "operator")}
                matcher = train_scheme_match_head(name, train_length=train_length, head_dim=head_dim, steps=match_steps, batch=match_batch,
                                           seed=s, **mopts)
                heads[(name, "match")].append(matcher)
            results[name].append(_measure(local, far, matcher, trained=name in LEARNED, scheme=name, seed=s, offset=offset,
                                          distance=distance, L=train_length, factors=factors, shift=shift))
    settings = {"offset": offset, "distance": distance, "train_length": train_length, "factors": factors,
                "shift": shift, "seeds": tuple(seeds), "head_dim": head_dim, "steps": steps, "alibi_head": alibi_head,
                "alibi_heads": alibi_heads, "match": bool(match), "match_steps": match_steps,
                "match_batch": match_batch, **{k: val for k, val in train_options.items() if k != "operator"}}
    return Comparison(results, heads, settings)



# ---- rotary heads under other rulers ---------------------------------------------------------


class AttentionSplit(NamedTuple):
    """Where a far head's attention goes, as means over the queries that can see the target.

    The four shares sum to one (up to rounding): ``target`` is the key ``distance`` back,
    ``neighbours`` the keys at ``distance - 1`` and ``distance + 1``, ``beyond_window`` every key
    at least ``train_length`` back (displacements training never showed), ``elsewhere`` the rest.
    """

    target: float
    neighbours: float
    beyond_window: float
    elsewhere: float


def attention_split(head, length: int, distance: int, train_length: int) -> AttentionSplit:
    """Split a content-free head's attention at ``length`` tokens into target, neighbours, far keys and the rest.

    Parameters
    ----------
    head : PositionHead
        A head of :mod:`ropegeo.toy.interventions` (trained or fixed).
    length : int
        Sequence length (``distance + 2`` to ``MAX_PROBE_LENGTH``).
    distance : int
        Displacement of the target key (1 to ``length - 2``).
    train_length : int
        The training length ``L``; keys at least ``L`` back are "beyond the window"
        (``distance + 2 <= train_length <= length``).

    Returns
    -------
    AttentionSplit
        Means over the queries ``m = distance .. length - 1``.

    Examples
    --------
    >>> from ropegeo.toy.scheme_heads import fixed_head
    >>> split = attention_split(fixed_head("none"), 64, 40, 48)
    >>> round(split.target + split.neighbours + split.beyond_window + split.elsewhere, 9)
    1.0
    """
    length = v.integer("length", length, minimum=4, maximum=MAX_PROBE_LENGTH)
    distance = v.integer("distance", distance, minimum=1, maximum=length - 2)
    train_length = v.integer("train_length", train_length, minimum=distance + 2, maximum=length)
    w = strict_attention(head, np.arange(length, dtype=np.float64))
    m = np.arange(distance, length)
    rows = w[m]
    back = m[:, None] - np.arange(length)[None, :]  # distance back of every key (<= 0: not visible)
    target = rows[back == distance]
    neighbours = np.where(np.abs(back - distance) == 1, rows, 0.0).sum(axis=1)
    beyond = np.where(back >= train_length, rows, 0.0).sum(axis=1)
    rest = rows.sum(axis=1) - target - neighbours - beyond
    return AttentionSplit(float(target.mean()), float(neighbours.mean()), float(beyond.mean()), float(rest.mean()))


def far_rival(head, length: int, train_length: int) -> int:
    """The displacement beyond the training window that the last query of ``length`` tokens weights most.

    Keys at least ``train_length`` back are the ones training never showed; the last query
    (slot ``length - 1``) sees every displacement up to ``length - 1``, and for a content-free
    relative head (RoPE, T5, ALiBi, ...) every query weights a displacement alike. A head whose
    rival is ``length - 1`` prefers the farthest key (a ramp still rising); a rival well inside
    the range is a near-return. Ties go to the farthest key.

    Parameters
    ----------
    head : PositionHead
        A head of :mod:`ropegeo.toy.interventions` (trained or fixed).
    length : int
        Sequence length (4 to ``MAX_PROBE_LENGTH``).
    train_length : int
        The training length ``L`` (2 to ``length - 1``).

    Returns
    -------
    int
        A displacement from ``train_length`` to ``length - 1``.

    Examples
    --------
    >>> from ropegeo.toy.scheme_heads import fixed_head
    >>> far_rival(fixed_head("alibi"), 512, 64), far_rival(fixed_head("none"), 512, 64)
    (64, 511)
    """
    length = v.integer("length", length, minimum=4, maximum=MAX_PROBE_LENGTH)
    train_length = v.integer("train_length", train_length, minimum=2, maximum=length - 1)
    w = strict_attention(head, np.arange(length, dtype=np.float64))[-1, : length - train_length]
    return int(length - 1 - np.argmax(w))  # index 0 is the farthest key


#: Most rulers ``ropegeo.toy.alternatives.ruler_study`` compares in one call (each trains heads per seed and budget).
MAX_RULERS = 8
#: Most training budgets ``ropegeo.toy.alternatives.ruler_study`` sweeps.
MAX_RULER_BUDGETS = 12


def ruler_study(rulers: dict, *, seeds=range(10), budgets=(1000,), table_steps: int = 1000, offset: int = 5,
                distance: int = 40, train_length: int = 64, factor: int = 8, head_dim: int = 16) -> dict:
    """RoPE heads trained under several rulers: the far task over a budget curve, the local task at one budget.

    For each ruler (a schedule of ``d / 2`` frequencies), seed and budget in ``budgets``, a far head
    (attend ``distance`` back) is trained for that many steps at ``train_length`` tokens and split
    with ``ropegeo.toy.alternatives.attention_split`` at ``factor * train_length`` tokens. At ``table_steps`` a local
    head (attend ``offset`` back) is trained as well and scored by
    :func:`~ropegeo.toy.interventions.length_stretch` at the same length.

    Parameters
    ----------
    rulers : dict of str to array_like
        Name to frequencies (1 to :data:`MAX_RULERS` rulers, each ``d / 2`` finite non-negative values).
    seeds : iterable of int
        1 to ``ropegeo.toy.MAX_SEEDS`` = 20 seeds.
    budgets : tuple of int
        Training steps of the far heads (1 to :data:`MAX_RULER_BUDGETS` increasing values; must
        contain ``table_steps``).
    table_steps : int
        The budget of the local heads, and of the far heads the chapter's table quotes.
    offset, distance, train_length, factor, head_dim : int
        As in :func:`compare_schemes` (``factor * train_length`` at most ``MAX_PROBE_LENGTH``).

    Returns
    -------
    dict
        JSON-ready: ``settings`` and, per ruler name, ``theta``, ``stretch_accuracy`` (per seed, at
        ``table_steps``) and ``far`` mapping each budget (as a string) to per-seed lists
        ``target``, ``neighbours``, ``beyond_window``, ``elsewhere`` and ``rival`` (:func:`far_rival`).

    Raises
    ------
    ValueError
        For bad rulers, seeds, budgets or lengths; all before any training.
    """
    if not isinstance(rulers, dict) or not 1 <= len(rulers) <= MAX_RULERS:
        raise ValueError(f"rulers must be a dict of 1 to MAX_RULERS = {MAX_RULERS} name -> frequencies, got {rulers!r}")
    head_dim = v.head_dim(head_dim, "head_dim", maximum=MAX_D)
    thetas = {}
    for name, theta in rulers.items():
        if not isinstance(name, str):
            raise ValueError(f"rulers must be keyed by names (str), got {name!r}")
        th = v.frequencies(theta, "rulers")
        if th.size != head_dim // 2:
            raise ValueError(f"rulers must give head_dim / 2 = {head_dim // 2} frequencies each, got {th.size} for {name!r}")
        thetas[name] = th
    train_length = v.integer("train_length", train_length, minimum=3, maximum=MAX_TRAIN_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=train_length - 2)
    distance = v.integer("distance", distance, minimum=1, maximum=train_length - 2)
    factor = v.integer("factor", factor, minimum=1, maximum=MAX_PROBE_LENGTH // train_length)
    if not v.is_collection(budgets):
        raise ValueError(f"budgets must be an increasing sequence of step counts, got {budgets!r}")
    budgets = tuple(v.integer("budgets", b, minimum=1, maximum=100_000) for b in itertools.islice(budgets, MAX_RULER_BUDGETS + 1))
    if not budgets or len(budgets) > MAX_RULER_BUDGETS or list(budgets) != sorted(set(budgets)):
        raise ValueError(f"budgets must be 1 to MAX_RULER_BUDGETS = {MAX_RULER_BUDGETS} increasing step counts, got {budgets!r}")
    table_steps = v.integer("table_steps", table_steps, minimum=1, maximum=100_000)
    if table_steps not in budgets:
        raise ValueError(f"table_steps must be one of budgets {budgets}, got {table_steps}")
    seeds = seed_list(seeds)
    long = factor * train_length
    out = {"settings": {"seeds": list(seeds), "budgets": list(budgets), "table_steps": table_steps, "offset": offset,
                        "distance": distance, "train_length": train_length, "factor": factor, "head_dim": head_dim},
           "rulers": {}}
    for name, th in thetas.items():
        far = {str(b): {key: [] for key in (*AttentionSplit._fields, "rival")} for b in budgets}
        stretch = []
        for s in seeds:
            for b in budgets:
                head = train_position_head("rope", distance, train_length=train_length, head_dim=head_dim, steps=b, seed=s, operator=th)
                for key, value in attention_split(head, long, distance, train_length)._asdict().items():
                    far[str(b)][key].append(value)
                far[str(b)]["rival"].append(far_rival(head, long, train_length))
            local = train_position_head("rope", offset, train_length=train_length, head_dim=head_dim, steps=table_steps, seed=s,
                                        operator=th)
            stretch.append(float(length_stretch(local, train_length, offset, (factor,)).accuracy[-1]))
        out["rulers"][name] = {"theta": [float(t) for t in th], "stretch_accuracy": stretch, "far": far}
    return out
