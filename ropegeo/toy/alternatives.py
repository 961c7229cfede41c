"""Position schemes side by side: tiny position-only heads trained per scheme, then intervened on.

The heads are trained in :mod:`ropegeo.toy.scheme_heads` (its docstring tables what each scheme
learns). Two closed forms bound what the comparison can show: :func:`clipped_retrieval_ceiling`
and :func:`trained_rows_share`. :func:`compare_schemes` trains (or builds) one head per scheme,
seed and task and runs every intervention of :mod:`ropegeo.toy.interventions` on it;
``ruler_study`` trains the rotary heads alone under several rulers and budgets, and
``attention_split`` says where a far head's attention goes when it misses its key.
"""


from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ropegeo import _validate as v
from ropegeo.rotation import apply_rope
from ropegeo.toy import seed_list
from ropegeo.toy.interventions import (MAX_FACTORS, MAX_PROBE_LENGTH, construction_gap, global_shift, length_stretch,
                                       local_displacement, match_task, offset_task, sparse_retrieval, strict_attention)
from ropegeo.toy.scheme_heads import (FIXED, LEARNED, MAX_BATCH, MAX_D, MAX_TRAIN_LENGTH, SCHEMES,
                                      TrainedHead, check_match_memory, check_position_memory, fixed_head,
                                      train_position_head, train_scheme_match_head, _setup)

__all__ = ["SchemeResult", "Comparison", "compare_schemes", "clipped_retrieval_ceiling", "trained_rows_share", "AttentionSplit", "attention_split", "far_rival", "pair_profile",
           "RivalReadout", "rival_readout", "ruler_study"]


def clipped_retrieval_ceiling(length: int, distance: int, *, clip: int = 16) -> float:
    """The most attention a content-free head with clipped relative vectors can put on a far key.

    Key ``n`` enters query ``m``'s score only through ``clip(n - m, -K, K)``, so for ``distance >= K``
    (``K = clip``) the best such a head can do is ``1 / (m - K + 1)``; for ``distance < K`` the bound is
    1. Both are suprema. Averaged over the queries ``m = distance .. length - 1`` as
    :func:`ropegeo.toy.interventions.sparse_retrieval` averages a head's mass; a float in ``(0, 1]``.
    ``length`` is at most ``2**24``. Raises ValueError naming a parameter out of range.
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

    A table trained at ``train_length`` has updated rows ``0 .. train_length - 1``; query ``m`` and
    its keys sit on them exactly when ``m < train_length``, so the share is
    ``(min(length, train_length) - offset) / (length - offset)``. Raises ValueError naming a
    parameter out of range.
    """
    offset = v.integer("offset", offset, minimum=1, maximum=(1 << 24) - 1)
    length = v.integer("length", length, minimum=offset + 1, maximum=1 << 24)
    train_length = v.length("train_length", train_length, minimum=offset + 1)
    return (min(length, train_length) - offset) / (length - offset)


#: What each scheme's position term is, for the comparison table: fixed by formula or learned.
_POSITION_TERMS = {"none": "none", "absolute": "learned table", "sinusoidal": "fixed code", "relative": "learned vectors",
                   "t5": "learned biases", "alibi": "fixed slope", "rope": "fixed rotation"}


@dataclass(frozen=True)
class SchemeResult:
    """Every measurement of one scheme and one seed.

    ``trained``: the position-only head has parameters to train (the schemes of ``LEARNED``); ``shift_*``: a global shift (guaranteed by construction,
    score change, winners kept, weight change); ``move_*``: the target moved one slot farther;
    ``stretch_*``: the task at each factor (NaN where refused); ``retrieval_*``: the far head's key
    at the training and the longest length; ``match_*``: the most-recent-match head (NaN when not run).
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
    """The scheme-by-intervention table: ``results`` (scheme -> SchemeResult per seed), ``heads`` ((scheme, task) -> heads), ``settings``."""

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
        """The table as Markdown: one row per scheme, means over seeds (score change and retrieval to the digits their spread supports)."""
        s = self.settings
        fac = " / ".join(f"{f}×" for f in s["factors"])
        head = ["scheme", "position term", f"accuracy at L={s['train_length']}",
                f"shift by {s['shift']:g}: guaranteed?", "shift: winners kept",
                "move target 1 step: score change", "move: mass before → after",
                f"stretch {fac}: accuracy", f"retrieval at {s['distance']}: mass at L → {s['factors'][-1]}L"]
        fmt = lambda name, key, d, sign="": (lambda w: f"{self.mean(name, key):{sign}.{min(d, max(0, -math.floor(math.log10(w)))) if w > 0 else d}f}")(np.ptp(self.per_seed(name, key)))  # noqa: E731
        if match := s.get("match", False):
            head.append(f"most-recent match: accuracy at L → {s['factors'][-1]}L")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name in self.results:
            r0 = self.results[name][0]
            stretch = " / ".join("undefined" if math.isnan(a) else f"{a:.2f}" for a in self.mean(name, "stretch_accuracy"))
            row = [
                name, _POSITION_TERMS.get(name, "?"), f"{self.mean(name, 'accuracy'):.2f}",
                "yes" if r0.shift_guaranteed else "no", f"{self.mean(name, 'shift_winners_kept'):.2f}",
                fmt(name, "move_score_change", 2, "+"),
                f"{self.mean(name, 'move_mass_before'):.2f} → {self.mean(name, 'move_mass_after'):.2f}",
                stretch,
                f"{fmt(name, 'retrieval_mass_train', 3)} → {fmt(name, 'retrieval_mass_long', 3)}",
            ]
            if match:
                row.append(f"{self.mean(name, 'match_accuracy_train'):.2f} → {self.mean(name, 'match_accuracy_long'):.2f}")
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
        """Rebuild a comparison from :meth:`to_dict`'s form (``heads`` empty); other keys are ignored.

        Raises ValueError when the settings or results, or a field of :class:`SchemeResult`, are missing.
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
    """Validate the task settings of :func:`compare_schemes`; returns them normalised."""
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

    Per scheme and seed a *local* head (``offset`` back) and a *far* head (``distance`` back; fixed
    formulas give one head for both), and with ``match=True`` a most-recent-match head
    (``match_steps``, ``match_batch``). Measured: the task at ``train_length`` (at most
    :data:`MAX_TRAIN_LENGTH`), a global ``shift`` on ``train_length - shift`` positions, the target
    moved one step, the local task at each of ``factors`` (increasing; ``factors[-1] * train_length``
    at most ``MAX_PROBE_LENGTH``), and the far head's mass at the longest length. ``alibi_heads`` /
    ``alibi_head`` pick ALiBi's slope; ``train_options`` go to
    :func:`~ropegeo.toy.scheme_heads.train_position_head`. Raises ValueError before any training.
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
        results[name] = []
        heads.update({(name, task): [] for task in ("local", "far", "match")[: 3 if match else 2]})
        for s in seeds:
            if name in FIXED:
                opts = {"heads": alibi_heads, "head": alibi_head} if name == "alibi" else {}
                local = far = fixed_head(name, head_dim=head_dim, seed=s, **opts)
            else:
                local, far = (train_position_head(name, k, train_length=train_length, head_dim=head_dim, steps=steps,
                                                  seed=s, **train_options) for k in (offset, distance))
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


class AttentionSplit(NamedTuple):
    """Where a far head's attention goes, as means over the queries that can see the target: the key
    ``distance`` back, its two ``neighbours``, every key at least ``train_length`` back, the rest.
    """

    target: float
    neighbours: float
    beyond_window: float
    elsewhere: float


def attention_split(head, length: int, distance: int, train_length: int) -> AttentionSplit:
    """Split a content-free head's attention at ``length`` tokens into target, neighbours, far keys and the rest.

    ``distance + 2 <= train_length <= length <= MAX_PROBE_LENGTH``; means over queries ``m = distance .. length - 1``.

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
    """The displacement in ``train_length .. length - 1`` that the last query of ``length`` tokens weights most.

    ``length - 1``: the head prefers the farthest key (a ramp still rising); inside the range: a
    near-return. Ties go to the farthest key.

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


def pair_profile(head, length: int) -> np.ndarray:
    """Each rotary pair's term in the score of the last query of ``length`` tokens: shape (pairs, length - 1).

    Column ``r - 1`` is the key ``r`` back; the pairs (interleaved, fastest first) sum to the head's
    score. ``head`` is a trained ``rope`` head (:func:`~ropegeo.toy.scheme_heads.train_position_head`).

    Examples
    --------
    >>> from ropegeo.toy.scheme_heads import train_position_head
    >>> head = train_position_head("rope", 5, steps=50)
    >>> p = pair_profile(head, 32)
    >>> p.shape, bool(np.allclose(p.sum(axis=0), head.scores(np.arange(32.0))[-1, -2::-1]))
    ((8, 31), True)
    """
    length = v.integer("length", length, minimum=2, maximum=MAX_PROBE_LENGTH)
    layer = getattr(head, "layer", None)
    if getattr(getattr(layer, "scheme", None), "options", {}).get("pairing") != "interleaved":
        raise ValueError(f"head must be a position head of the rope scheme (interleaved pairs), got {head!r}")
    q, k = head.token @ layer.Wq, head.token @ layer.Wk
    keys = apply_rope(np.broadcast_to(k, (length - 1, k.size)), np.arange(length - 1.0), **layer.scheme.options)
    query = apply_rope(q, float(length - 1), **layer.scheme.options)
    terms = (query * keys[::-1]).reshape(length - 1, -1, 2).sum(axis=2)  # row r - 1: the key r back
    return terms.T * layer.scheme.attention_factor**2 / math.sqrt(layer.head_dim)


class RivalReadout(NamedTuple):
    """Why a far head's best key beyond the window scores as it does (:func:`rival_readout`)."""

    #: Distance back of the key beyond the window the last query weights most (:func:`far_rival`).
    rival: int
    #: The fastest pair's term at the rival minus at the target.
    pair0_gap: float
    #: The other pairs' summed term at the rival minus at the target.
    slow_gap: float
    #: Least-squares slope per slot of the other pairs' summed term over distances ``slope_from .. train_length - 1``.
    slow_slope: float
    #: ``|q_0| |k_0| / sqrt(head_dim)``: the fastest pair's largest term.
    pair0_weight: float


def rival_readout(head, length: int, distance: int, train_length: int, *, slope_from: int = 30) -> RivalReadout:
    """Split the last query's score at its far rival and at the target ``distance`` back into the fastest pair and the rest.

    ``distance < train_length < length``; ``1 <= slope_from <= train_length - 3``.

    Examples
    --------
    >>> from ropegeo.toy.scheme_heads import train_position_head
    >>> r = rival_readout(train_position_head("rope", 40, steps=50), 256, 40, 64)
    >>> 64 <= r.rival <= 255, r.pair0_weight > 0
    (True, True)
    """
    length = v.integer("length", length, minimum=4, maximum=MAX_PROBE_LENGTH)
    train_length = v.integer("train_length", train_length, minimum=4, maximum=length - 1)
    distance = v.integer("distance", distance, minimum=1, maximum=train_length - 1)
    slope_from = v.integer("slope_from", slope_from, minimum=1, maximum=train_length - 3)
    p = pair_profile(head, length)
    rival = far_rival(head, length, train_length)
    slow = p[1:].sum(axis=0)
    r = np.arange(slope_from, train_length)
    slope = np.polyfit(r, slow[r - 1], 1)[0]
    q, k = head.token @ head.layer.Wq, head.token @ head.layer.Wk
    return RivalReadout(rival, float(p[0, rival - 1] - p[0, distance - 1]), float(slow[rival - 1] - slow[distance - 1]),
                        float(slope), float(np.linalg.norm(q[:2]) * np.linalg.norm(k[:2]) / math.sqrt(q.size)))


#: Most rulers ``ropegeo.toy.alternatives.ruler_study`` compares in one call (each trains heads per seed and budget).
MAX_RULERS = 8
#: Most training budgets ``ropegeo.toy.alternatives.ruler_study`` sweeps.
MAX_RULER_BUDGETS = 12


def ruler_study(rulers: dict, *, seeds=range(10), budgets=(1000,), table_steps: int = 1000, offset: int = 5,
                distance: int = 40, train_length: int = 64, factor: int = 8, head_dim: int = 16) -> dict:
    """RoPE heads trained under several rulers: the far task over a budget curve, the local task at one budget.

    Per ruler (name -> ``head_dim / 2`` frequencies; at most :data:`MAX_RULERS`), seed and budget (at
    most :data:`MAX_RULER_BUDGETS`, containing ``table_steps``), a far head is trained and split with
    ``attention_split`` at ``factor * train_length``; at ``table_steps`` a local head is scored by
    :func:`~ropegeo.toy.interventions.length_stretch`. Returns a JSON-ready dict: ``settings`` and per
    ruler ``theta``, ``stretch_accuracy`` and ``far`` (budget -> per-seed shares and ``rival``).
    Raises ValueError before any training.
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
