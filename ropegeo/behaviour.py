"""Gate C: does a trained head actually use the rotary geometry, and how does it break?

Two tiny attention heads are trained in numpy with Adam and gradients derived by hand (the tests
check them against finite differences). On one core the offset head trains in a few hundredths of
a second and the match head (600 steps of 32 fresh sequences) in one to two seconds:

:class:`OffsetHead`
    content-free: one learned query vector ``q`` and one learned key vector ``k``, the same at
    every position. Its score depends on the displacement ``delta = m - n`` between the query at
    ``m`` and the key at ``n`` only, through the learned per-pair coefficients ``a_i, b_i``::

        score(delta) = sum_i a_i cos(delta theta_i) + b_i sin(delta theta_i)

    It is trained to put its attention on the key ``offset`` positions back.
:class:`MatchHead`
    content and position: learned query and key tables over a small vocabulary, trained to
    attend to the most recent earlier occurrence of the query's own token.

Both heads attend to strictly earlier positions only (a query never sees itself). For the match
head this matters: its own position always holds its own token, so a head allowed to attend to
itself has a rival at displacement 0 that, in the design's feasibility study, kept it far below
perfect accuracy; over earlier positions only it reaches 100% in distribution.

:func:`evaluate` runs a head on sequences of any length under a frequency schedule (raw,
position interpolation, NTK-aware, dynamic NTK, YaRN or Llama-3 through ``ropegeo.scaling``, or
any explicit per-pair ``theta`` with a position ``scale`` and attention factor) and under interventions (a global shift of every position, a query position
off by some steps, the query position reset to 0 as in a broken KV cache, positions or phases
held in a low precision). It reports, per query, whether the attention *winner* is the target
and how much attention *mass* lands on it; :class:`Evaluation` bins both by absolute query
position and by displacement. :func:`evaluate_seeds` and :func:`compare` repeat this over
several independently trained heads and keep every seed's numbers, because some effects appear
for some seeds only.

:func:`pair_profiles` and :func:`distant_rival` read the trained offset head: which slow pairs
were learned as a ramp inside the training window and where they turn around, and which distant
displacement beats the target once the fast pairs nearly realign (predicted with the kernel of
:func:`ropegeo.geometry.kernel` weighted by the head's learned amplitudes). :func:`gate_c`
is the verdict of the one-procedure audit.

All training is deterministic for a seed. Matrices are small, so run with one BLAS thread
(``OPENBLAS_NUM_THREADS=1``, which the Makefile exports).
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import asdict, dataclass, field, replace
from typing import NamedTuple

import numpy as np

from . import _validate as v
from .frequencies import frequencies
from .geometry import kernel, near_collisions
from .rotation import apply_rope, pair_indices, phase_angles

__all__ = [
    "EXTENSIONS",
    "RULES",
    "Schedule",
    "OffsetHead",
    "MatchHead",
    "Evaluation",
    "Binned",
    "SeedResults",
    "PairProfile",
    "DistantRival",
    "GateCVerdict",
    "extension_schedule",
    "train_offset_head",
    "train_match_head",
    "train_heads",
    "fine_tune",
    "offset_head_loss",
    "match_head_loss",
    "match_targets",
    "evaluate",
    "evaluate_seeds",
    "compare",
    "score_profile",
    "pair_profiles",
    "distant_rival",
    "gate_c",
]

EXTENSIONS = ("raw", "pi", "ntk", "dynamic_ntk")
#: every rule name :func:`extension_schedule` accepts (EXTENSIONS is the standard comparison).
RULES = EXTENSIONS + ("yarn", "llama3")
_EXTENSION_ALIASES = {"none": "raw", "linear": "pi", "interpolation": "pi", "dynamic": "dynamic_ntk"}
# Evaluate at most this many (sequence, query, key) scores at once: about 32 MiB of float64.
_CELLS = 1 << 22

# ---- bounds: every call stays under about 1 GiB of memory and about half a minute of work ----

#: Longest evaluation (:func:`evaluate`) and longest training or fine-tuning length of an offset
#: head. An evaluation holds a few ``length x length`` float64 arrays (128 MiB each at 4096);
#: an offset head's training costs O(length) per step.
MAX_LENGTH = 4096
#: Longest training or fine-tuning length of a match head: every step scores ``batch`` sequences
#: of ``length x length`` query-key pairs.
MAX_MATCH_LENGTH = 1024
#: Widest head a trainer builds and :func:`evaluate` runs (real models use 64 to 256).
MAX_HEAD_DIM = 512
#: Largest vocabulary of a match head.
MAX_VOCAB = 256
#: Most sequences in one training step of a match head.
MAX_BATCH = 512
#: Most random sequences one :func:`evaluate` of a match head scores.
MAX_SEQUENCES = 256
#: Most seeds (independently trained heads) one call trains or evaluates: :func:`train_heads`,
#: :func:`gate_c`, :func:`evaluate_seeds`, :func:`compare`, and the seeds of
#: ``ropegeo.alternatives.compare_schemes`` and ``ropegeo.interventions.construction_gap``.
#: Work grows linearly with it: each training call keeps its own budget (MAX_TRAINING_WORK), so
#: a battery of many seeds takes longer (the default gate_c about 1 s per seed; the book uses at
#: most 10 seeds, and the command line caps them at 10).
MAX_SEEDS = 20
#: Most lengths, and most extension rules, in one :func:`compare` table.
MAX_CONDITIONS = 16
#: Most bins of :meth:`Evaluation.by_position` and :meth:`Evaluation.by_displacement`.
MAX_BINS = 10_000
#: Longest evaluation length :func:`distant_rival` searches (and the longest horizon of
#: ``ropegeo.plots.behaviour.score_profile``): one million displacements.
MAX_PROFILE_LENGTH = 1_000_000
#: Most ``(displacement, pair)`` cells one :func:`score_profile` call computes
#: (``deltas.size * pairs``): the ``per_pair`` result is then at most 256 MiB.
MAX_PROFILE_CELLS = 2**25
#: Largest learning rate of any trainer (Adam moves each parameter by about ``lr`` per step).
MAX_LR = 10.0
#: Largest standard deviation of the initial parameters of any trainer.
MAX_INIT_STD = 10.0
#: Most memory one training step may hold, as estimated from the step's array shapes
#: (scores ``batch x length x length``, rotated tables ``vocab x length x head_dim``, ...).
MAX_STEP_BYTES = 2**29
#: Most work one training or fine-tuning call may do: ``steps`` times the work of one step, in
#: units of roughly one nanosecond on one core (so about half a minute at most). One step of an
#: offset head costs ``2**15 + (length - 1) * (pairs + 32)``; one step of a match head
#: ``2**15 + batch * length**2 * (pairs + 8) + 64 * vocab * length * head_dim``.
MAX_TRAINING_WORK = 2**34
#: Most work one :func:`evaluate` may do: ``sequences * length**2 * (head_dim + 32)`` (about
#: half a minute on one core; an offset head uses one sequence).
MAX_EVALUATION_WORK = 2**37


# --------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------


def _rng(seed) -> tuple[np.random.Generator, int | None]:
    """A Generator and the integer seed it came from (``None`` when a Generator was given)."""
    if isinstance(seed, np.random.Generator):
        return seed, None
    seed = v.integer("seed", seed, minimum=0)
    return np.random.default_rng(seed), seed


def _theta_arg(theta) -> np.ndarray:
    th = v.finite_array("theta", theta)
    if th.ndim != 1 or th.size == 0:
        raise ValueError(f"theta must be a non-empty 1-D array of frequencies, got shape {th.shape}")
    if th.size > MAX_HEAD_DIM // 2:
        raise ValueError(f"theta must have at most {MAX_HEAD_DIM // 2} pairs (head_dim at most MAX_HEAD_DIM = "
                         f"{MAX_HEAD_DIM}), got {th.size}")
    if np.any(th < 0):
        raise ValueError("theta must hold non-negative frequencies (radians per position)")
    return th.copy()


def _schedule(head_dim: int, base: float, theta) -> tuple[np.ndarray, float | None]:
    """Training frequencies: explicit ``theta`` (needs ``head_dim == 2 * len(theta)``) or the schedule."""
    head_dim = v.head_dim(head_dim, maximum=MAX_HEAD_DIM)
    if theta is None:
        base = v.base(base)
        return frequencies(head_dim, base), base
    th = _theta_arg(theta)
    if 2 * th.size != head_dim:
        raise ValueError(
            f"theta has {th.size} pairs, so head_dim must be {2 * th.size}, got head_dim={head_dim}"
        )
    return th, None


#: Most optimiser steps one training or fine-tuning call may take (the loss history is stored).
MAX_STEPS = 100_000


def training_settings(steps, lr, init_std=None) -> tuple:
    """Validate the optimiser settings shared by every trainer: ``(steps, lr[, init_std])``.

    ``steps`` is an integer from 1 to :data:`MAX_STEPS`; ``lr`` is positive and at most
    :data:`MAX_LR`; ``init_std`` is positive and at most :data:`MAX_INIT_STD`.
    """
    steps = v.integer("steps", steps, minimum=1, maximum=MAX_STEPS)
    lr = v.real("lr", lr, greater_than=0.0, maximum=MAX_LR)
    if init_std is None:
        return steps, lr
    return steps, lr, v.real("init_std", init_std, greater_than=0.0, maximum=MAX_INIT_STD)


def training_budget(what: str, steps: int, per_step: float, step_bytes: float, sizes: dict,
                    steps_name: str = "steps") -> None:
    """Refuse a training call whose step would exceed :data:`MAX_STEP_BYTES` or whose total work
    ``steps * per_step`` would exceed :data:`MAX_TRAINING_WORK`.

    ``sizes`` maps the parameter names that set the step's size to their values; the message
    names them (and ``steps_name``) so the caller knows what to lower.
    """
    shown = ", ".join(f"{k}={val}" for k, val in sizes.items())
    names = ", ".join(sizes)
    if step_bytes > MAX_STEP_BYTES:
        raise ValueError(
            f"one training step of {what} with {shown} would hold about {step_bytes / 2**20:,.0f} MiB; "
            f"at most MAX_STEP_BYTES = {MAX_STEP_BYTES // 2**20} MiB: lower {names}"
        )
    if steps * per_step > MAX_TRAINING_WORK:
        most = int(MAX_TRAINING_WORK // per_step)
        raise ValueError(
            f"{steps_name}={steps} is more training than one call may do for {what} with {shown} "
            f"(MAX_TRAINING_WORK, about half a minute on one core): use at most {most:,} steps, or lower {names}"
        )


def check_trained(params, losses, lr: float, init_std: float | None = None) -> None:
    """Raise a ValueError naming ``lr`` (and ``init_std``) when training diverged to NaN or infinity."""
    if np.all(np.isfinite(losses)) and all(np.all(np.isfinite(p)) for p in params):
        return
    if init_std is None:
        raise ValueError(f"training diverged to non-finite values with lr={lr:g}: lower lr")
    raise ValueError(f"training diverged to non-finite values with lr={lr:g} and init_std={init_std:g}: "
                     f"lower lr or init_std")


def _offset_work(length: int, pairs: int) -> int:
    """Work of one offset-head step (see :data:`MAX_TRAINING_WORK`)."""
    return 2**15 + (length - 1) * (pairs + 32)


def _offset_budget(steps: int, length: int, pairs: int, length_name: str = "train_length",
                   steps_name: str = "steps") -> None:
    training_budget("an offset head", steps, _offset_work(length, pairs), 0,
                    {length_name: length, "head_dim": 2 * pairs}, steps_name)


def _match_budget(steps: int, length: int, batch: int, vocab: int, head_dim: int,
                  length_name: str = "train_length", steps_name: str = "steps") -> None:
    """Memory and work of a match head's training (see :data:`MAX_STEP_BYTES`, :data:`MAX_TRAINING_WORK`)."""
    per_step = 2**15 + batch * length**2 * (head_dim // 2 + 8) + 64 * vocab * length * head_dim
    training_budget("a match head", steps, per_step, _match_step_bytes(length, batch, vocab, head_dim),
                    {length_name: length, "batch": batch, "vocab": vocab, "head_dim": head_dim}, steps_name)


def _match_step_bytes(length: int, batch: int, vocab: int, head_dim: int) -> int:
    """Estimated peak memory of one match-head step: the scores (batch, L, L) with a working copy,
    the rotated tables (vocab, L, d) with apply_rope's temporaries, the gathered queries and keys
    (batch, L, d) with their gradients, and the one-hot scatter (L, vocab, batch)."""
    return 4 * (3 * batch * length**2 + 18 * vocab * length * head_dim + 10 * batch * length * head_dim
                + 4 * batch * length * vocab)


def seed_list(seeds, name: str = "seeds") -> list:
    """Validate an iterable of seeds: 1 to :data:`MAX_SEEDS` non-negative integers, as a list."""
    if not v.is_collection(seeds):
        raise ValueError(f"{name} must be an iterable of non-negative integers such as range(3) or (0, 1, 2), "
                         f"got {seeds!r}")
    out = [v.integer(name, s, minimum=0) for s in itertools.islice(seeds, MAX_SEEDS + 1)]
    if len(out) > MAX_SEEDS:
        raise ValueError(f"{name} must hold at most MAX_SEEDS = {MAX_SEEDS} seeds, got more")
    if not out:
        raise ValueError(f"{name} must hold at least one seed")
    return out


def _bounded_list(name: str, items, most: int, what: str) -> list:
    """An iterable as a list of at most ``most`` items (a ValueError naming ``name`` otherwise)."""
    if not v.is_collection(items):
        raise ValueError(f"{name} must be a list of {what}, got {items!r}")
    out = list(itertools.islice(items, most + 1))
    if len(out) > most:
        raise ValueError(f"{name} must hold at most {most} {what}, got more")
    return out


class Adam:
    """Adam (Kingma and Ba) on a list of arrays, updated in place."""

    def __init__(self, params, lr: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8):
        self.params, self.lr, self.b1, self.b2, self.eps = params, lr, beta1, beta2, eps
        self.m = [np.zeros_like(p) for p in params]
        self.s = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads) -> None:
        self.t += 1
        c1, c2 = 1.0 - self.b1**self.t, 1.0 - self.b2**self.t
        for p, g, m, s in zip(self.params, grads, self.m, self.s):
            m *= self.b1
            m += (1.0 - self.b1) * g
            s *= self.b2
            s += (1.0 - self.b2) * g * g
            p -= self.lr * (m / c1) / (np.sqrt(s / c2) + self.eps)


def _pair_coefficients(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a_i = q1 k1 + q2 k2`` and ``b_i = q1 k2 - q2 k1`` over the last axis (interleaved pairs)."""
    first, second = pair_indices(q.shape[-1])
    q1, q2, k1, k2 = q[..., first], q[..., second], k[..., first], k[..., second]
    return q1 * k1 + q2 * k2, q1 * k2 - q2 * k1


# --------------------------------------------------------------------------------------------
# extension rules
# --------------------------------------------------------------------------------------------


def _extension_name(extension: str) -> str:
    if not isinstance(extension, str):
        raise ValueError(f"extension must be one of {', '.join(map(repr, RULES))}, got {extension!r}")
    name = _EXTENSION_ALIASES.get(extension.lower(), extension.lower())
    if name not in RULES:
        raise ValueError(f"extension must be one of {', '.join(map(repr, RULES))}, got {extension!r}")
    return name


class Schedule(NamedTuple):
    """A frequency schedule as a head is run under it: ``(theta, scale, attention_factor, rule)``.

    ``theta`` (shape (pairs,)) holds the per-pair frequencies in radians per position, fastest
    first; ``scale`` multiplies every position id before rotating (``1 / s`` for position
    interpolation); ``attention_factor`` multiplies queries and keys after rotating, so the logits
    grow by its square (YaRN); ``rule`` names the rule (``"raw"`` for the training schedule).
    """

    theta: np.ndarray
    scale: float
    attention_factor: float
    rule: str


def extension_schedule(
    extension: str,
    *,
    head_dim: int,
    base: float,
    train_length: int,
    length: int,
    factor: float | None = None,
) -> Schedule:
    """The schedule of a context-extension rule at one evaluation length, via ``ropegeo.scaling``.

    Parameters
    ----------
    extension : {"raw", "pi", "ntk", "dynamic_ntk", "yarn", "llama3"}
        ``"raw"``: the training schedule unchanged (raw extrapolation).
        ``"pi"``: position interpolation (``ropegeo.scaling.linear``), expressed here as a
        position scale ``1 / factor`` on the unchanged frequencies (the same phases).
        ``"ntk"``: the NTK-aware base ``base * factor ** (d / (d - 2))`` (``ropegeo.scaling.ntk``).
        ``"dynamic_ntk"``: the NTK base recomputed for the current length, as in transformers
        (``ropegeo.scaling.dynamic_ntk``): ``base * (factor * length / train_length -
        (factor - 1)) ** (d / (d - 2))`` beyond the training length, the training schedule within it.
        ``"yarn"``, ``"llama3"``: ``ropegeo.scaling.yarn`` (with its attention factor) and
        ``ropegeo.scaling.llama3`` at their default parameters.
        Aliases: ``"none"`` (raw), ``"linear"`` (pi), ``"dynamic"`` (dynamic_ntk).
    head_dim : int
        Rotary head dimension ``d`` (even; at least 4 for the NTK rules).
    base : float
        The training base (greater than 1).
    train_length, length : int
        The training length and the length evaluated (each from 2 to ``ropegeo._validate.MAX_LENGTH``
        = 2**48).
    factor : float, optional
        The extension factor ``s`` (1 to ``ropegeo.scaling.MAX_FACTOR`` = 1e6). Default:
        ``max(1, length / train_length)`` (the rule configured for exactly this length) except
        ``"dynamic_ntk"``, whose default 1 makes its base follow the current length alone; pass
        ``factor=8`` to evaluate a model configured for ``8 * train_length`` at another length.

    Returns
    -------
    Schedule
        ``(theta, scale, attention_factor, rule)``.

    Raises
    ------
    ValueError
        For an unknown rule, bad dimensions, lengths or factor.
    """
    from . import scaling

    name = _extension_name(extension)
    head_dim = v.head_dim(head_dim)
    base = v.base(base)
    train_length = v.length("train_length", train_length, minimum=2)
    length = v.length("length", length, minimum=2)
    if factor is None:
        factor = 1.0 if name == "dynamic_ntk" else max(1.0, length / train_length)
        if factor > scaling.MAX_FACTOR:
            raise ValueError(f"length / train_length must be at most {scaling.MAX_FACTOR:g} (the largest extension "
                             f"factor) when factor is not given, got {length} / {train_length}")
    factor = v.real("factor", factor, minimum=1.0, maximum=scaling.MAX_FACTOR)
    if name in ("ntk", "dynamic_ntk") and head_dim < 4:
        raise ValueError(f"head_dim must be at least 4 for the NTK rules, got {head_dim}")
    theta = frequencies(head_dim, base)
    if name == "raw" or (factor == 1.0 and name != "dynamic_ntk"):
        return Schedule(theta, 1.0, 1.0, name)
    if name == "pi":
        return Schedule(theta, 1.0 / factor, 1.0, name)
    if name == "ntk":
        return Schedule(scaling.ntk(base, head_dim, factor), 1.0, 1.0, name)
    if name == "dynamic_ntk":
        return Schedule(scaling.dynamic_ntk(base, head_dim, factor, train_length, length), 1.0, 1.0, name)
    if name == "yarn":
        th, att = scaling.yarn(base, head_dim, factor, train_length)
        return Schedule(th, 1.0, float(att), name)
    return Schedule(scaling.llama3(base, head_dim, factor, train_length), 1.0, 1.0, name)


# --------------------------------------------------------------------------------------------
# the heads
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetHead:
    """A trained content-free head: one query vector and one key vector, rotated by position.

    Attributes
    ----------
    q, k : numpy.ndarray, shape (head_dim,)
        The learned query and key (interleaved pairs: coordinates ``2i, 2i+1`` form pair ``i``).
    theta : numpy.ndarray, shape (head_dim // 2,)
        The frequencies of the schedule it was (last) trained under, radians per position.
    scale : float
        The position multiplier of that schedule (``1 / factor`` after interpolation fine-tuning).
    offset : int
        The displacement it was trained to attend to.
    train_length : int
        Length of the sequences of the last training stage.
    base : float or None
        The base its original schedule came from (``None`` when trained on an explicit theta);
        needed by the named extension rules.
    original_train_length : int
        The length of the first training stage (the one extension rules extend from).
    seed : int or None
        The seed of the initialisation.
    losses : numpy.ndarray
        Training loss after each step of every stage, concatenated.
    stages : tuple of dict
        One record per training stage (steps, learning rate, schedule, length).
    attention_factor : float
        Multiplies rotated queries and keys in its schedule (1 except after YaRN fine-tuning).
    """

    q: np.ndarray
    k: np.ndarray
    theta: np.ndarray
    scale: float
    offset: int
    train_length: int
    base: float | None
    original_train_length: int
    seed: int | None
    losses: np.ndarray
    stages: tuple = ()
    attention_factor: float = 1.0

    kind = "offset"

    @property
    def head_dim(self) -> int:
        return int(self.q.size)

    def coefficients(self) -> tuple[np.ndarray, np.ndarray]:
        """The learned pair coefficients ``(a, b)``, each shape (head_dim // 2,).

        ``score(delta) = sum_i a_i cos(delta s theta_i) + b_i sin(delta s theta_i)`` with
        ``delta = m - n`` the displacement from key to query and ``s`` the position scale.
        """
        return _pair_coefficients(self.q, self.k)

    def amplitudes(self) -> np.ndarray:
        """``sqrt(a_i**2 + b_i**2)`` per pair: the weight of pair ``i`` in the score, shape (pairs,)."""
        a, b = self.coefficients()
        return np.hypot(a, b)

    def to_dict(self) -> dict:
        """Plain-Python form (arrays as lists)."""
        return {
            "kind": self.kind,
            "q": self.q.tolist(),
            "k": self.k.tolist(),
            "theta": self.theta.tolist(),
            "scale": self.scale,
            "attention_factor": self.attention_factor,
            "offset": self.offset,
            "train_length": self.train_length,
            "original_train_length": self.original_train_length,
            "base": self.base,
            "seed": self.seed,
            "final_loss": float(self.losses[-1]) if self.losses.size else None,
            "stages": list(self.stages),
        }


@dataclass(frozen=True)
class MatchHead:
    """A trained content-and-position head: query and key tables over a vocabulary.

    Attributes
    ----------
    q_table, k_table : numpy.ndarray, shape (vocab, head_dim)
        Row ``t`` is the query (key) of token ``t`` before rotation.
    theta, scale, train_length, base, original_train_length, seed, losses, stages, attention_factor
        As in :class:`OffsetHead`.
    """

    q_table: np.ndarray
    k_table: np.ndarray
    theta: np.ndarray
    scale: float
    train_length: int
    base: float | None
    original_train_length: int
    seed: int | None
    losses: np.ndarray
    stages: tuple = ()
    attention_factor: float = 1.0

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

    def to_dict(self) -> dict:
        """Plain-Python form (arrays as lists)."""
        return {
            "kind": self.kind,
            "q_table": self.q_table.tolist(),
            "k_table": self.k_table.tolist(),
            "theta": self.theta.tolist(),
            "scale": self.scale,
            "attention_factor": self.attention_factor,
            "train_length": self.train_length,
            "original_train_length": self.original_train_length,
            "base": self.base,
            "seed": self.seed,
            "final_loss": float(self.losses[-1]) if self.losses.size else None,
            "stages": list(self.stages),
        }


def _check_head(head) -> None:
    if not isinstance(head, (OffsetHead, MatchHead)):
        raise ValueError(f"head must be an OffsetHead or a MatchHead, got {type(head).__name__}")
    if head.head_dim > MAX_HEAD_DIM:
        raise ValueError(f"head must have head_dim at most MAX_HEAD_DIM = {MAX_HEAD_DIM}, got {head.head_dim}")
    if isinstance(head, MatchHead) and head.vocab > MAX_VOCAB:
        raise ValueError(f"head must have a vocabulary of at most MAX_VOCAB = {MAX_VOCAB} tokens, got {head.vocab}")


# --------------------------------------------------------------------------------------------
# offset head: loss, gradient, training
# --------------------------------------------------------------------------------------------


def offset_head_loss(q, k, theta, *, offset: int, length: int, scale: float = 1.0) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss of a content-free head and its exact gradient, in O(length * pairs).

    The sequence has positions ``0 .. length - 1``; the query at ``m >= offset`` attends over the
    keys at ``0 .. m - 1`` (softmax of ``score(m - n)``) and the loss is the mean over those
    queries of ``-log p_m(m - offset)``. Because the score depends on the displacement only, the
    normaliser of query ``m`` is a running log-sum-exp over displacements ``1 .. m``, and the
    gradient with respect to ``score(delta)`` is ``exp(score(delta)) * sum_{m >= max(delta, offset)}
    exp(-logZ_m)`` minus the target indicator, a reverse running sum: no ``length x length``
    matrix is formed.

    Parameters
    ----------
    q, k : array_like, shape (head_dim,)
        Query and key vectors (interleaved pairs).
    theta : array_like, shape (head_dim // 2,)
        Frequencies, radians per position.
    offset : int
        The target displacement, between 1 and ``length - 1``.
    length : int
        Sequence length (2 to :data:`MAX_LENGTH` = 4096).
    scale : float
        Position multiplier.

    Returns
    -------
    (loss, dq, dk) : (float, numpy.ndarray, numpy.ndarray)
        The mean cross-entropy (nats) and its gradient with respect to ``q`` and ``k``.

    Raises
    ------
    ValueError
        For mismatched shapes, more than ``MAX_HEAD_DIM // 2`` pairs, a length outside
        ``[2, MAX_LENGTH]`` or an offset outside ``[1, length - 1]``.
    """
    q = v.finite_array("q", q)
    k = v.finite_array("k", k)
    th = _theta_arg(theta)
    if q.shape != (2 * th.size,) or k.shape != q.shape:
        raise ValueError(f"q and k must both have shape ({2 * th.size},) to match theta, got {q.shape} and {k.shape}")
    length = v.integer("length", length, minimum=2, maximum=MAX_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=length - 1)
    scale = v.real("scale", scale, greater_than=0.0)
    ang = phase_angles(np.arange(1, length) * scale, th)
    return _offset_loss(q, k, np.cos(ang), np.sin(ang), offset)


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
    ga, gb = cos.T @ g, sin.T @ g
    first, second = pair_indices(q.size)
    dq, dk = np.empty_like(q), np.empty_like(k)
    q1, q2, k1, k2 = q[first], q[second], k[first], k[second]
    dq[first], dq[second] = ga * k1 + gb * k2, ga * k2 - gb * k1
    dk[first], dk[second] = ga * q1 - gb * q2, ga * q2 + gb * q1
    return loss, dq, dk


def _run_offset(q, k, theta, scale, offset, length, steps, lr, gain=1.0):
    ang = phase_angles(np.arange(1, length) * scale, theta)
    cos, sin = gain * np.cos(ang), gain * np.sin(ang)  # gain: squared attention factor
    opt = Adam([q, k], lr)
    losses = np.empty(steps)
    for t in range(steps):
        losses[t], dq, dk = _offset_loss(q, k, cos, sin, offset)
        opt.step([dq, dk])
    return losses


def train_offset_head(
    offset: int = 5,
    *,
    head_dim: int = 16,
    base: float = 10_000.0,
    theta=None,
    scale: float = 1.0,
    train_length: int = 64,
    steps: int = 1000,
    lr: float = 0.05,
    init_std: float = 0.3,
    seed=0,
) -> OffsetHead:
    """Train a content-free head to attend to the key ``offset`` positions back.

    Parameters
    ----------
    offset : int
        Target displacement, between 1 and ``train_length - 1``.
    head_dim : int
        Head dimension (even, 2 to :data:`MAX_HEAD_DIM` = 512).
    base : float
        Frequency base of the schedule ``base ** (-2i / head_dim)`` (ignored with ``theta``).
    theta : array_like, shape (head_dim // 2,), optional
        Explicit per-pair frequencies (radians per position), e.g. from an extension rule.
    scale : float
        Position multiplier during training (positive).
    train_length : int
        Training sequence length ``L`` (``offset + 1`` to :data:`MAX_LENGTH` = 4096).
    steps : int
        Adam steps (full-batch: the task has no data noise; 1 to :data:`MAX_STEPS`, and
        ``steps`` times the work of one step at most :data:`MAX_TRAINING_WORK`: with head_dim
        16, all 100,000 up to length 3,476 and about 87,000 at length 4096).
    lr : float
        Adam learning rate (positive, at most :data:`MAX_LR` = 10).
    init_std : float
        Standard deviation of the normal initialisation of ``q`` and ``k`` (positive, at most
        :data:`MAX_INIT_STD` = 10).
    seed : int or numpy.random.Generator
        Initialisation randomness.

    Returns
    -------
    OffsetHead

    Raises
    ------
    ValueError
        For any parameter outside the ranges above, or when training diverges to non-finite
        values (lower ``lr`` or ``init_std``).
    """
    th, base_used = _schedule(head_dim, base, theta)
    head_dim = 2 * th.size
    train_length = v.integer("train_length", train_length, minimum=2, maximum=MAX_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=train_length - 1)
    scale = v.real("scale", scale, greater_than=0.0)
    steps, lr, init_std = training_settings(steps, lr, init_std)
    _offset_budget(steps, train_length, th.size)
    rng, seed_used = _rng(seed)
    q, k = rng.normal(scale=init_std, size=(2, head_dim))
    with np.errstate(over="ignore", invalid="ignore"):
        losses = _run_offset(q, k, th, scale, offset, train_length, steps, lr)
    check_trained((q, k), losses, lr, init_std)
    stage = {"stage": "train", "steps": steps, "lr": lr, "length": train_length, "scale": scale}
    return OffsetHead(q, k, th, scale, offset, train_length, base_used, train_length, seed_used, losses, (stage,))


# --------------------------------------------------------------------------------------------
# match head: targets, loss, gradient, training
# --------------------------------------------------------------------------------------------


def match_targets(tokens) -> np.ndarray:
    """Position of the most recent strictly earlier occurrence of each token (-1 if none).

    Parameters
    ----------
    tokens : array_like of int, shape (..., seq)

    Returns
    -------
    numpy.ndarray of int64, shape (..., seq)

    Raises
    ------
    ValueError
        For a non-integer array or one without a sequence axis.
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


def _rotated_tables(table, positions, theta, scale):
    """``R_p table[v]`` for every token ``v`` and position ``p``: shape (vocab, seq, head_dim)."""
    vocab, d = table.shape
    x = np.broadcast_to(table[:, None, :], (vocab, positions.size, d))
    return apply_rope(x, positions, theta=theta, scale=scale)


def match_head_loss(q_table, k_table, tokens, theta, *, scale: float = 1.0) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss of the most-recent-match head on a batch of sequences, and its exact gradient.

    The query at ``m`` (token ``t_m``) attends over the keys at ``0 .. m - 1`` with scores
    ``<R_m Q[t_m], R_n K[t_n]>``; its target is the most recent earlier ``n`` with ``t_n = t_m``.
    Queries without an earlier match are left out. The loss is the mean cross-entropy over the
    remaining queries.

    Parameters
    ----------
    q_table, k_table : array_like, shape (vocab, head_dim)
    tokens : array_like of int, shape (batch, seq)
        Token ids in ``[0, vocab)``; positions are ``0 .. seq - 1``.
    theta : array_like, shape (head_dim // 2,)
    scale : float
        Position multiplier.

    Returns
    -------
    (loss, d_q_table, d_k_table) : (float, numpy.ndarray, numpy.ndarray)

    Raises
    ------
    ValueError
        For mismatched shapes, tokens outside the vocabulary, a batch with no match at all, or
        shapes whose step would hold more than :data:`MAX_STEP_BYTES` (use fewer or shorter
        sequences, or smaller tables).
    """
    qt = v.finite_array("q_table", q_table)
    kt = v.finite_array("k_table", k_table)
    th = _theta_arg(theta)
    if qt.ndim != 2 or qt.shape[1] != 2 * th.size or kt.shape != qt.shape:
        raise ValueError(
            f"q_table and k_table must both have shape (vocab, {2 * th.size}), got {qt.shape} and {kt.shape}"
        )
    tok = np.asarray(tokens)
    if tok.ndim != 2 or not np.issubdtype(tok.dtype, np.integer):
        raise ValueError(f"tokens must be an integer array of shape (batch, seq), got {tok.dtype} {tok.shape}")
    if tok.size and (tok.min() < 0 or tok.max() >= qt.shape[0]):
        raise ValueError(f"tokens must lie in [0, vocab={qt.shape[0]})")
    scale = v.real("scale", scale, greater_than=0.0)
    need = _match_step_bytes(tok.shape[1], tok.shape[0], qt.shape[0], qt.shape[1])
    if need > MAX_STEP_BYTES:
        raise ValueError(f"tokens of shape {tok.shape} with tables of shape {qt.shape} would need about "
                         f"{need / 2**20:,.0f} MiB; at most MAX_STEP_BYTES = {MAX_STEP_BYTES // 2**20} MiB: "
                         f"use fewer or shorter sequences in tokens, or smaller q_table and k_table")
    return _match_loss(qt, kt, tok, th, scale)


# Scores more than this far below a row's maximum get probability exp(-600) ~ 1e-261 instead
# of underflowing into subnormal numbers, which are two orders of magnitude slower to process.
_EXP_FLOOR = -600.0


def softmax_rows(s: np.ndarray, earlier: np.ndarray, *, masked: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """In-place masked softmax over the last axis: returns (p, row max, row sum of exp).

    ``earlier`` (seq, seq) is 1.0 where a key may be attended; ``masked`` says the caller has
    already pushed the other scores down by 1e30. Rows with no allowed key get probability zero.
    """
    if not masked:
        s -= (1.0 - earlier) * 1e30
    top = s.max(axis=-1, keepdims=True)
    s -= top
    np.maximum(s, _EXP_FLOOR, out=s)
    np.exp(s, out=s)
    s *= earlier
    z = s.sum(axis=-1, keepdims=True)
    s /= np.where(z > 0, z, 1.0)
    return s, top, z


class _Diverged(ValueError):
    """Non-finite scores or gradients of the match head (its tables have grown too large)."""


def _match_loss(qt, kt, tok, theta, scale, gain=1.0):
    batch, seq = tok.shape
    pos = np.arange(seq, dtype=np.float64)
    qr = _rotated_tables(qt, pos, theta, scale)  # (vocab, seq, d)
    kr = _rotated_tables(kt, pos, theta, scale)
    cols = np.arange(seq)
    qs, ks = qr[tok, cols], kr[tok, cols]  # (batch, seq, d)
    target = match_targets(tok)
    valid = target >= 0
    count = int(valid.sum())
    if count == 0:
        raise ValueError("tokens contain no query with an earlier occurrence of its token")
    bi, mi = np.nonzero(valid)
    ti = target[bi, mi]
    if gain != 1.0:  # the squared attention factor multiplies every logit
        ks = ks * gain
    s_target = np.einsum("nd,nd->n", qs[bi, mi], ks[bi, ti])
    earlier = np.tri(seq, seq, -1)
    p, top, z = softmax_rows(qs @ ks.transpose(0, 2, 1), earlier)
    loss = float(np.mean(np.log(z[bi, mi, 0]) + top[bi, mi, 0] - s_target))
    ds = p
    ds *= (valid / count)[..., None]
    ds[bi, mi, ti] -= 1.0 / count
    dqs = ds @ ks  # (batch, seq, d)
    dks = ds.transpose(0, 2, 1) @ qs
    if gain != 1.0:
        dks *= gain
    vocab = qt.shape[0]
    onehot = (tok[..., None] == np.arange(vocab)).astype(np.float64).transpose(1, 2, 0)  # (seq, vocab, batch)
    dqr = (onehot @ dqs.transpose(1, 0, 2)).transpose(1, 0, 2)  # (vocab, seq, d)
    dkr = (onehot @ dks.transpose(1, 0, 2)).transpose(1, 0, 2)
    if not (math.isfinite(loss) and np.isfinite(dqr).all() and np.isfinite(dkr).all()):
        raise _Diverged("q_table and k_table give non-finite scores or gradients (overflow): their entries are "
                        "too large (in training: lower lr or init_std)")
    # the transpose of a rotation by p is the rotation by -p
    dq = apply_rope(dqr, -pos, theta=theta, scale=scale).sum(axis=1)
    dk = apply_rope(dkr, -pos, theta=theta, scale=scale).sum(axis=1)
    return loss, dq, dk


def _run_match(qt, kt, theta, scale, length, batch, steps, lr, rng, gain=1.0):
    vocab = qt.shape[0]
    opt = Adam([qt, kt], lr)
    losses = np.empty(steps)
    for t in range(steps):
        tok = rng.integers(0, vocab, size=(batch, length))
        try:
            losses[t], dq, dk = _match_loss(qt, kt, tok, theta, scale, gain)
        except _Diverged:  # the caller reports it (check_trained)
            losses[t:] = np.nan
            break
        opt.step([dq, dk])
        if not (np.isfinite(qt).all() and np.isfinite(kt).all()):
            losses[t + 1 :] = np.nan
            break
    return losses


def train_match_head(
    vocab: int = 8,
    *,
    head_dim: int = 16,
    base: float = 10_000.0,
    theta=None,
    scale: float = 1.0,
    train_length: int = 64,
    batch: int = 32,
    steps: int = 600,
    lr: float = 0.05,
    init_std: float = 0.3,
    seed=0,
) -> MatchHead:
    """Train a head to attend to the most recent earlier occurrence of the query's token.

    Every step draws ``batch`` fresh sequences of ``train_length`` tokens uniformly from the
    vocabulary (from the same Generator as the initialisation, so a seed fixes everything).

    Parameters
    ----------
    vocab : int
        Number of token types (2 to :data:`MAX_VOCAB` = 256).
    head_dim, base, theta, scale, lr, init_std, seed
        As in :func:`train_offset_head`.
    train_length : int
        Training sequence length (2 to :data:`MAX_MATCH_LENGTH` = 1024).
    batch : int
        Sequences per step (1 to :data:`MAX_BATCH` = 512).
    steps : int
        Adam steps (1 to :data:`MAX_STEPS`).

    Returns
    -------
    MatchHead

    Raises
    ------
    ValueError
        For any parameter outside its range (the message names what to lower), or when training
        diverges to non-finite values (lower ``lr`` or ``init_std``).

    Notes
    -----
    One step must hold at most :data:`MAX_STEP_BYTES` (512 MiB: ``batch * train_length**2`` up
    to about 44 million scores) and ``steps`` steps at most :data:`MAX_TRAINING_WORK` (about
    half a minute: some 6,000 steps at the defaults, 30 at ``train_length=1024``).
    """
    th, base_used = _schedule(head_dim, base, theta)
    head_dim = 2 * th.size
    vocab = v.integer("vocab", vocab, minimum=2, maximum=MAX_VOCAB)
    scale = v.real("scale", scale, greater_than=0.0)
    train_length = v.integer("train_length", train_length, minimum=2, maximum=MAX_MATCH_LENGTH)
    batch = v.integer("batch", batch, minimum=1, maximum=MAX_BATCH)
    steps, lr, init_std = training_settings(steps, lr, init_std)
    _match_budget(steps, train_length, batch, vocab, head_dim)
    rng, seed_used = _rng(seed)
    qt, kt = rng.normal(scale=init_std, size=(2, vocab, head_dim))
    with np.errstate(over="ignore", invalid="ignore"):
        losses = _run_match(qt, kt, th, scale, train_length, batch, steps, lr, rng)
    check_trained((qt, kt), losses, lr, init_std)
    stage = {"stage": "train", "steps": steps, "lr": lr, "length": train_length, "scale": scale, "batch": batch}
    return MatchHead(qt, kt, th, scale, train_length, base_used, train_length, seed_used, losses, (stage,))


def train_heads(kind: str = "offset", seeds=range(5), *, progress: bool = False, **options) -> list:
    """Train one head per seed with otherwise identical settings.

    Parameters
    ----------
    kind : {"offset", "match"}
    seeds : iterable of int
        One head per seed (non-negative integers, 1 to :data:`MAX_SEEDS` = 20 of them).
    progress : bool
        Show a tqdm progress bar over the seeds (match heads take a second or two each).
    **options
        Passed to :func:`train_offset_head` or :func:`train_match_head`.

    Returns
    -------
    list of OffsetHead or MatchHead, in the order of ``seeds``.

    Raises
    ------
    ValueError
        For an unknown kind, seeds that are not an iterable of 1 to ``MAX_SEEDS`` non-negative
        integers, or options the trainer refuses.
    """
    if not isinstance(kind, str) or kind not in ("offset", "match"):
        raise ValueError(f"kind must be 'offset' or 'match', got {kind!r}")
    seeds = seed_list(seeds)
    train = train_offset_head if kind == "offset" else train_match_head
    if progress:
        from tqdm.auto import tqdm

        seeds = tqdm(seeds, desc=f"training {kind} heads", unit="seed")
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
        th = head.theta if theta is None else _theta_arg(theta)
        if th.size != head.theta.size:
            raise ValueError(f"theta must have {head.theta.size} pairs to match the head, got {th.size}")
        sc = head.scale if scale is None else v.real("scale", scale, greater_than=0.0)
        return Schedule(th, sc, head.attention_factor, "custom")
    if extension is None:
        return Schedule(head.theta, head.scale, head.attention_factor, "own")
    name = _extension_name(extension)
    if name == "raw":
        return Schedule(head.theta, head.scale, head.attention_factor, name)
    if head.base is None:
        raise ValueError(
            f"extension={extension!r} needs the head's base; this head was trained on an explicit theta: pass theta and scale"
        )
    sch = extension_schedule(
        name, head_dim=head.head_dim, base=head.base, train_length=head.original_train_length,
        length=length, factor=factor,
    )
    return Schedule(sch.theta, sch.scale * head.scale, sch.attention_factor * head.attention_factor, name)


def fine_tune(
    head,
    *,
    extension: str | None = "pi",
    length: int | None = None,
    factor: float | None = None,
    theta=None,
    scale: float | None = None,
    steps: int | None = None,
    lr: float = 0.05,
    batch: int = 4,
    seed=0,
):
    """Continue training a head under a new (scaled) schedule: the fine-tuning of an extension.

    Parameters
    ----------
    head : OffsetHead or MatchHead
    extension : {"raw", "pi", "ntk", "dynamic_ntk", "yarn", "llama3"} or None
        Named rule giving the new schedule (see :func:`extension_schedule`); ignored when
        ``theta`` or ``scale`` is given.
    length : int, optional
        Training length of this stage (2 to :data:`MAX_LENGTH` = 4096 for an offset head, to
        :data:`MAX_MATCH_LENGTH` = 1024 for a match head). Default: ``factor`` times the head's
        original training length (the extended context), or the head's training length when
        ``factor`` is not given.
    factor : float, optional
        Extension factor (1 to ``ropegeo.scaling.MAX_FACTOR``; without ``length``, the default
        length must stay within the bound above). Default 8 when a named rule other than
        ``"raw"`` is used.
    theta, scale
        Explicit schedule (instead of ``extension``).
    steps : int, optional
        Adam steps of this stage (1 to :data:`MAX_STEPS`, and at most :data:`MAX_TRAINING_WORK`
        in all); moments restart from zero. Default: 600 for an offset head (about 0.1 s at
        length 512), 100 for a match head (a few seconds at length 512).
    lr : float
        Learning rate (positive, at most :data:`MAX_LR`).
    batch : int
        Sequences per step for a match head (1 to :data:`MAX_BATCH`); ignored by the offset head.
    seed : int or numpy.random.Generator
        Randomness of the match head's fresh sequences.

    Returns
    -------
    OffsetHead or MatchHead
        A new head (the input is not changed) whose own schedule is the new one, so
        ``evaluate(tuned, length)`` runs it as it was fine-tuned.

    Raises
    ------
    ValueError
        For a bad head, schedule, length, factor, steps, lr or batch (the message names what to
        lower), or when training diverges to non-finite values (lower ``lr``).
    """
    from .scaling import MAX_FACTOR

    _check_head(head)
    offset_head = isinstance(head, OffsetHead)
    most = MAX_LENGTH if offset_head else MAX_MATCH_LENGTH
    kind = "an offset head" if offset_head else "a match head"
    if theta is not None or scale is not None:
        extension = None
    if extension is not None and _extension_name(extension) != "raw" and factor is None:
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
    th, sc, att, name = _resolve(head, length, extension, factor, theta, scale)
    if steps is None:
        steps = 600 if offset_head else 100
    steps, lr = training_settings(steps, lr)
    stage = {"stage": "fine_tune", "steps": steps, "lr": lr, "length": length, "scale": sc, "extension": name,
             "factor": factor, "attention_factor": att}
    if offset_head:
        if head.offset >= length:
            raise ValueError(f"length must exceed the head's offset {head.offset}, got {length}")
        _offset_budget(steps, length, th.size, length_name="length")
        q, k = head.q.copy(), head.k.copy()
        with np.errstate(over="ignore", invalid="ignore"):
            losses = _run_offset(q, k, th, sc, head.offset, length, steps, lr, att * att)
        check_trained((q, k), losses, lr)
        return replace(head, q=q, k=k, theta=th, scale=sc, attention_factor=att, train_length=length,
                       losses=np.concatenate([head.losses, losses]), stages=head.stages + (stage,))
    batch = v.integer("batch", batch, minimum=1, maximum=MAX_BATCH)
    _match_budget(steps, length, batch, head.vocab, head.head_dim, length_name="length")
    rng, _ = _rng(seed)
    qt, kt = head.q_table.copy(), head.k_table.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        losses = _run_match(qt, kt, th, sc, length, batch, steps, lr, rng, att * att)
    check_trained((qt, kt), losses, lr)
    stage["batch"] = batch
    return replace(head, q_table=qt, k_table=kt, theta=th, scale=sc, attention_factor=att, train_length=length,
                   losses=np.concatenate([head.losses, losses]), stages=head.stages + (stage,))


# --------------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Binned:
    """Accuracy and attention mass averaged within bins of query position or displacement.

    Attributes
    ----------
    edges : numpy.ndarray, shape (bins + 1,)
        Bin edges (left-closed, right-open; the last bin is closed).
    accuracy, mass : numpy.ndarray, shape (bins,)
        Mean winner accuracy and mean attention mass on the target per bin (NaN in empty bins).
    count : numpy.ndarray of int, shape (bins,)
        Queries per bin.
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

    Every array holds one entry per evaluated query (queries with a target only), in sequence
    order, sequences concatenated.

    Attributes
    ----------
    kind : {"offset", "match"}
    seed : int or None
        The head's training seed.
    length : int
        Sequence length.
    schedule : str
        ``"own"`` (the head's training schedule), a rule name, or ``"custom"``.
    theta : numpy.ndarray, shape (pairs,)
        Frequencies used.
    scale : float
        Position multiplier used.
    attention_factor : float
        Multiplier of rotated queries and keys used (YaRN's; 1 otherwise).
    interventions : dict
        The intervention settings (shift, query_offset, query_reset, position_dtype, phase_dtype).
    query_position, target_position, winner_position : numpy.ndarray of int64
        Sequence index of the query, of its target key and of the key with the highest score.
    target_mass : numpy.ndarray of float64
        Softmax attention on the target key.
    attention_by_displacement : numpy.ndarray, shape (length,)
        Mean attention weight at displacement ``delta`` (index), over the evaluated queries that
        can see that displacement (NaN where none can; index 0 is always NaN).
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
        """Accuracy and mass binned by absolute query position.

        Parameters
        ----------
        bins : int or array_like
            Number of equal bins over ``[0, length]`` (1 to :data:`MAX_BINS` = 10,000) or explicit
            increasing edges (at most ``MAX_BINS + 1``).
        """
        return self._binned(self.query_position.astype(float), bins, self.length)

    def by_displacement(self, bins=8) -> Binned:
        """Accuracy and mass binned by the target displacement (see ``by_position``)."""
        return self._binned(self.displacement.astype(float), bins, self.length)

    def summary(self) -> dict:
        """The scalar numbers: accuracy, mass, query count, most common winner displacements."""
        top = dict(list(self.winner_counts().items())[:3])
        return {
            "kind": self.kind, "seed": self.seed, "length": self.length, "schedule": self.schedule,
            "scale": self.scale, "attention_factor": self.attention_factor,
            "interventions": dict(self.interventions), "accuracy": self.accuracy,
            "mass": self.mass, "queries": int(self.query_position.size), "top_winner_displacements": top,
        }

    def to_dict(self) -> dict:
        """Summary plus every per-query array (as lists)."""
        d = self.summary()
        d["theta"] = self.theta.tolist()
        for name in ("query_position", "target_position", "winner_position", "target_mass", "attention_by_displacement"):
            d[name] = [None if isinstance(x, float) and math.isnan(x) else x for x in getattr(self, name).tolist()]
        return d


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
            import ml_dtypes

            label = "bfloat16" if position_dtype.name == "bfloat16" else position_dtype.name
            top = float(ml_dtypes.finfo(position_dtype).max)
            raise ValueError(
                f"position_dtype={label!r} overflows: position ids reach {reach:g} (shift={shift:g}, "
                f"query_offset={query_offset:g}, length {length}) but its largest number is {top:g}; "
                f"use a wider position_dtype or a smaller shift"
            )
    return qpos, kpos


def _check_phases(qpos, kpos, theta, scale, phase_dtype, shift) -> None:
    """Refuse a phase dtype in which the largest phase overflows (phases grow with |position|)."""
    top = max(float(np.max(np.abs(qpos))), float(np.max(np.abs(kpos)))) * scale
    try:
        phase_angles(np.array([top]), theta, phase_dtype)
    except ValueError as err:
        raise ValueError(f"phase_dtype={str(phase_dtype)!r} cannot hold the phases of these positions "
                         f"(shift={shift:g}, position ids up to {top:g} after scaling): {err}") from None


def evaluate(
    head,
    length: int,
    *,
    extension: str | None = None,
    factor: float | None = None,
    theta=None,
    scale: float | None = None,
    attention_factor: float | None = None,
    shift: float = 0.0,
    query_offset: float = 0.0,
    query_reset: bool = False,
    position_dtype: str | None = None,
    phase_dtype: str = "float64",
    sequences: int = 8,
    seed=12345,
) -> Evaluation:
    """Run a trained head on sequences of ``length`` and score every query's attention.

    Scores are formed exactly as a rotary layer does: queries rotated at their position ids,
    keys at theirs (:func:`ropegeo.rotation.apply_rope`), dot products, a softmax over the
    strictly earlier keys.

    Parameters
    ----------
    head : OffsetHead or MatchHead
    length : int
        Sequence length (2 to :data:`MAX_LENGTH` = 4096; for an offset head more than its
        offset). Queries, keys and scores are formed a few sequences at a time, at most about
        4 million scores at once.
    extension : {"raw", "pi", "ntk", "dynamic_ntk", "yarn", "llama3"}, optional
        A named extension rule relative to the head's original base and training length (see
        :func:`extension_schedule`). Default: the head's own schedule (as trained or fine-tuned).
    factor : float, optional
        Extension factor of the rule (at least 1). Default: ``length / train_length``.
    theta, scale : optional
        Explicit frequencies (shape (pairs,)) and/or position multiplier instead of a rule.
    attention_factor : float, optional
        Explicit multiplier of rotated queries and keys (positive; logits grow by its square),
        e.g. from ``ropegeo.scaling.rope_parameters``. Default: the rule's or the head's.
    shift : float
        Added to every position id, queries and keys alike (a global shift; finite).
    query_offset : float
        Added to the query position ids only (the query off by one: ``1`` or ``-1``).
    query_reset : bool
        Give every query position id 0 while keys keep theirs (the KV-cache bug).
    position_dtype : {"float32", "float16", "bfloat16"}, optional
        Round the position ids to this dtype (then compute phases in ``phase_dtype``); it must
        hold every position id (float16 stops at 65,504).
    phase_dtype : {"float64", "float32", "float16", "bfloat16"}
        Precision of the angle table (positions times frequencies); it must hold every phase.
    sequences : int
        Random sequences for a match head (1 to :data:`MAX_SEQUENCES` = 256, and
        ``sequences * length**2 * (head_dim + 32)`` at most :data:`MAX_EVALUATION_WORK`: 170
        sequences at length 4096 with head_dim 16); the offset head needs one.
    seed : int or numpy.random.Generator
        Randomness of the match head's sequences (tokens uniform over the vocabulary).

    Returns
    -------
    Evaluation

    Raises
    ------
    ValueError
        For a bad head, length, schedule, intervention or dtype, a ``position_dtype`` or
        ``phase_dtype`` that overflows at these positions, or too many sequences.
    """
    _check_head(head)
    length = v.integer("length", length, minimum=2, maximum=MAX_LENGTH)
    th, sc, att, name = _resolve(head, length, extension, factor, theta, scale, attention_factor)
    shift = v.real("shift", shift)
    query_offset = v.real("query_offset", query_offset)
    if not isinstance(query_reset, (bool, np.bool_)):
        raise ValueError(f"query_reset must be True or False, got {query_reset!r}")
    pdt = None if position_dtype is None else v.float_dtype(position_dtype, "position_dtype")
    v.float_dtype(phase_dtype, "phase_dtype")
    sequences = v.integer("sequences", sequences, minimum=1, maximum=MAX_SEQUENCES)
    d = head.head_dim
    if isinstance(head, MatchHead) and sequences * length**2 * (d + 32) > MAX_EVALUATION_WORK:
        most = max(1, MAX_EVALUATION_WORK // (length**2 * (d + 32)))
        raise ValueError(f"sequences={sequences} at length {length} (head_dim {d}) is more work than one evaluation "
                         f"may do (MAX_EVALUATION_WORK, about half a minute): use at most {most} sequences or a "
                         f"shorter length")
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

        def rotated(s0, s1):  # (chunk, length, head_dim): never every sequence at once
            q = apply_rope(head.q_table[tok[s0:s1]], qpos, **rope)
            k = apply_rope(head.k_table[tok[s0:s1]], kpos, **rope)
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


# --------------------------------------------------------------------------------------------
# across seeds
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedResults:
    """One condition (length, schedule, intervention) evaluated for several independently trained heads.

    Attributes
    ----------
    label : str
        A short description of the condition.
    seeds : tuple of int or None
    accuracy, mass : numpy.ndarray, shape (seeds,)
        Per-seed winner accuracy and mean attention mass on the target.
    evaluations : tuple of Evaluation
        The full per-seed evaluations (for binning and plotting).
    """

    label: str
    seeds: tuple
    accuracy: np.ndarray
    mass: np.ndarray
    evaluations: tuple = field(repr=False, default=())

    @property
    def accuracy_mean(self) -> float:
        return float(self.accuracy.mean())

    @property
    def accuracy_std(self) -> float:
        return float(self.accuracy.std())

    @property
    def mass_mean(self) -> float:
        return float(self.mass.mean())

    @property
    def mass_std(self) -> float:
        return float(self.mass.std())

    def count(self, predicate) -> int:
        """How many seeds satisfy ``predicate(evaluation)``: effects that only some seeds show."""
        return int(sum(bool(predicate(e)) for e in self.evaluations))

    def to_dict(self) -> dict:
        return {
            "label": self.label, "seeds": list(self.seeds), "accuracy": self.accuracy.tolist(),
            "mass": self.mass.tolist(), "accuracy_mean": self.accuracy_mean, "accuracy_std": self.accuracy_std,
            "mass_mean": self.mass_mean, "mass_std": self.mass_std,
        }

    def row(self) -> str:
        return (f"{self.label:<40} accuracy {self.accuracy_mean:6.3f} ± {self.accuracy_std:5.3f}   "
                f"mass {self.mass_mean:6.3f} ± {self.mass_std:5.3f}   (n={len(self.seeds)})")


def evaluate_seeds(heads, length: int, *, label: str | None = None, **options) -> SeedResults:
    """Evaluate every head of a list (one per seed) under the same condition.

    Parameters
    ----------
    heads : sequence of OffsetHead or MatchHead
        1 to :data:`MAX_SEEDS` = 20 heads.
    length : int
    label : str, optional
        Name of the condition (default: built from the options).
    **options
        Passed to :func:`evaluate`.

    Returns
    -------
    SeedResults
    """
    heads = _head_list(heads)
    evals = tuple(evaluate(h, length, **options) for h in heads)
    if label is None:
        extra = ", ".join(f"{k}={val}" for k, val in sorted(options.items()) if k not in ("sequences", "seed"))
        label = f"L={length}" + (f", {extra}" if extra else "")
    return SeedResults(
        label=label, seeds=tuple(h.seed for h in heads), accuracy=np.array([e.accuracy for e in evals]),
        mass=np.array([e.mass for e in evals]), evaluations=evals,
    )


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

    Parameters
    ----------
    heads : sequence of heads (one per seed)
        1 to :data:`MAX_SEEDS` = 20 heads.
    lengths : iterable of int
        Evaluation lengths (each 2 to :data:`MAX_LENGTH`; at most :data:`MAX_CONDITIONS` = 16
        of them), e.g. ``(64, 128, 256, 512)`` for a head trained at 64.
    extensions : iterable of str
        Rule names (see :func:`extension_schedule`; at most ``MAX_CONDITIONS``).
    **options
        Interventions and other :func:`evaluate` options, applied to every cell.

    Returns
    -------
    list of SeedResults
        Ordered by extension, then length; ``label`` is ``"<rule> L=<length>"``.
    """
    heads = _head_list(heads)
    lengths = [v.integer("lengths", n, minimum=2, maximum=MAX_LENGTH)
               for n in _bounded_list("lengths", lengths, MAX_CONDITIONS, "lengths (MAX_CONDITIONS)")]
    if isinstance(extensions, str):
        extensions = (extensions,)
    extensions = [_extension_name(ext)
                  for ext in _bounded_list("extensions", extensions, MAX_CONDITIONS, "rule names (MAX_CONDITIONS)")]
    out = []
    for name in extensions:
        for n in lengths:
            out.append(evaluate_seeds(heads, n, extension=name, label=f"{name} L={n}", **options))
    return out


# --------------------------------------------------------------------------------------------
# reading the offset head: score profile, slow ramps, distant rivals
# --------------------------------------------------------------------------------------------


def score_profile(head: OffsetHead, deltas, *, theta=None, scale: float | None = None, per_pair: bool = False) -> np.ndarray:
    """The offset head's score as a function of displacement.

    Parameters
    ----------
    head : OffsetHead
    deltas : array_like
        Displacements ``delta = m - n`` (any shape; finite; positive means the key is earlier);
        ``deltas.size * pairs`` at most :data:`MAX_PROFILE_CELLS` (2**25: a million
        displacements for a 64-wide head).
    theta, scale : optional
        Schedule to read the profile under (default: the head's own).
    per_pair : bool
        Return each pair's contribution ``a_i cos(delta s theta_i) + b_i sin(delta s theta_i)``
        instead of their sum.

    Returns
    -------
    numpy.ndarray
        Shape ``deltas.shape`` (or ``deltas.shape + (pairs,)`` with ``per_pair``).

    Raises
    ------
    ValueError
        For a head that is not an OffsetHead, a bad schedule, non-finite deltas, or more than
        ``MAX_PROFILE_CELLS`` cells.
    """
    if not isinstance(head, OffsetHead):
        raise ValueError(f"head must be an OffsetHead, got {type(head).__name__}")
    _check_head(head)
    th, sc, att, _ = _resolve(head, 2, None, None, theta, scale)
    per_pair = v.boolean("per_pair", per_pair)
    d = v.finite_array("deltas", deltas)
    if d.size * th.size > MAX_PROFILE_CELLS:
        raise ValueError(f"deltas has {d.size:,} displacements; with {th.size} pairs at most "
                         f"{MAX_PROFILE_CELLS // th.size:,} fit MAX_PROFILE_CELLS = {MAX_PROFILE_CELLS:,}")
    return _profile(head, d, th, sc, att, per_pair)


def _profile(head, d, th, sc, att, per_pair):
    """Score profile in blocks of displacements (the (block, pairs) temporaries stay small)."""
    a, b = head.coefficients()
    flat = d.reshape(-1)
    out = np.empty((flat.size, th.size) if per_pair else flat.size)
    step = max(1, (1 << 18) // th.size)
    for s0 in range(0, flat.size, step):
        ang = phase_angles(flat[s0 : s0 + step] * sc, th)
        parts = att * att * (a * np.cos(ang) + b * np.sin(ang))
        out[s0 : s0 + step] = parts if per_pair else parts.sum(axis=-1)
    if d.ndim == 0 and not per_pair:
        return out[0]  # a numpy scalar, as a sum over the pairs of one displacement
    return out.reshape(d.shape + ((th.size,) if per_pair else ()))


@dataclass(frozen=True)
class PairProfile:
    """How one rotary pair of a trained offset head shapes the score.

    The pair contributes ``amplitude * cos(delta s theta - phase)``; its slope changes sign at the
    turning points ``delta = (phase + j pi) / (s theta)``.

    Attributes
    ----------
    pair : int
    theta : float
        Frequency, radians per position (times the position scale).
    wavelength : float
        ``2 pi / (s theta)`` in tokens.
    a, b, amplitude, phase : float
        Learned coefficients, ``hypot(a, b)`` and ``atan2(b, a)``.
    ramp : bool
        No turning point in ``[1, train_length]``: inside the window the pair is monotone.
    slope : int
        Sign of the slope inside the window when it is a ramp (``-1`` favours near keys).
    turnaround : float
        First turning point beyond ``train_length`` (``inf`` when none; a zero frequency never turns).
    """

    pair: int
    theta: float
    wavelength: float
    a: float
    b: float
    amplitude: float
    phase: float
    ramp: bool
    slope: int
    turnaround: float

    def to_dict(self) -> dict:
        return asdict(self)


def pair_profiles(head: OffsetHead, *, train_length: int | None = None) -> list:
    """Per-pair reading of an offset head: amplitude, phase, ramps and where they turn around.

    Parameters
    ----------
    head : OffsetHead
    train_length : int, optional
        The window to test monotonicity in (2 to ``ropegeo._validate.MAX_LENGTH`` = 2**48;
        default: the head's training length).

    Returns
    -------
    list of PairProfile, fastest pair first.
    """
    if not isinstance(head, OffsetHead):
        raise ValueError(f"head must be an OffsetHead, got {type(head).__name__}")
    _check_head(head)
    L = v.length("train_length", head.train_length if train_length is None else train_length, minimum=2)
    a, b = head.coefficients()
    out = []
    for i, (t, ai, bi) in enumerate(zip(head.theta * head.scale, a, b)):
        amp, phase = float(math.hypot(ai, bi)), float(math.atan2(bi, ai))
        if t == 0:
            out.append(PairProfile(i, 0.0, math.inf, float(ai), float(bi), amp, phase, True, 0, math.inf))
            continue
        # turning points (phase + j pi) / t: first one at or after delta = 1
        j0 = math.ceil((t * 1.0 - phase) / math.pi)
        first = (phase + j0 * math.pi) / t
        ramp = first > L
        turn = first if ramp else (phase + math.ceil((t * L - phase) / math.pi) * math.pi) / t
        if turn <= L:
            turn += math.pi / t
        slope = 0
        if ramp:
            slope = int(np.sign(amp * math.cos(L * t - phase) - amp * math.cos(t - phase)))
        out.append(PairProfile(i, float(t), float(2 * math.pi / t), float(ai), float(bi), amp, phase, ramp, slope,
                               float(turn)))
    return out


@dataclass(frozen=True)
class DistantRival:
    """The displacement beyond the training window that an offset head scores highest.

    Attributes
    ----------
    offset : int
        The trained target displacement ``k``.
    window : tuple of int
        The displacement range searched, ``(train_length, length - 1)``.
    rival : int
        Displacement with the highest score in that range.
    rival_score, target_score : float
        ``score(rival)`` and ``score(k)`` (logits).
    wins : bool
        ``rival_score > target_score``: every query that can see the rival attends to it.
    fast_pairs : tuple of int
        The pairs that complete at least one turn inside the training window (the fast band).
    predicted : int
        ``k + Delta`` for the ``Delta`` in ``[train_length - k, length - 1 - k]`` where the fast
        band nearly realigns: the largest value of the kernel
        ``K_w(Delta) = sum_i w_i cos(Delta theta_i) / sum_i w_i`` with the learned amplitudes
        ``w_i = hypot(a_i, b_i)`` as weights on the fast pairs and zero on the others
        (:func:`ropegeo.geometry.near_collisions`). A geometric prediction of ``rival``.
    fast_similarity : float
        ``K_w(rival - k)`` over the fast band.
    weighted_similarity : float
        The same kernel over every pair, weighted by the learned amplitudes.
    weighted_margin : float
        ``1 - weighted_similarity``: the Gate B separation margin of the target and the rival
        under the head's own weights.
    fast_gap, slow_gap : float
        ``score(rival) - score(k)`` split into the fast band's part and the slow pairs' part.
        The fast part is close to zero where the band realigns; the slow part (the ramps)
        decides whether the rival wins.
    """

    offset: int
    window: tuple
    rival: int
    rival_score: float
    target_score: float
    wins: bool
    fast_pairs: tuple
    predicted: int
    fast_similarity: float
    weighted_similarity: float
    weighted_margin: float
    fast_gap: float
    slow_gap: float

    def to_dict(self) -> dict:
        d = asdict(self)
        d["window"] = list(self.window)
        d["fast_pairs"] = list(self.fast_pairs)
        return d


def distant_rival(head: OffsetHead, length: int, *, theta=None, scale: float | None = None) -> DistantRival:
    """Find the strongest displacement beyond the training window and explain it geometrically.

    Parameters
    ----------
    head : OffsetHead
    length : int
        The evaluation length; displacements ``train_length .. length - 1`` are searched
        (``train_length < length <=`` :data:`MAX_PROFILE_LENGTH` = 1,000,000), a block at a time.
    theta, scale : optional
        Schedule (default: the head's own).

    Returns
    -------
    DistantRival

    Raises
    ------
    ValueError
        For a head that is not an OffsetHead, ``length <= train_length`` or beyond
        ``MAX_PROFILE_LENGTH``, or a schedule without a fast pair.
    """
    if not isinstance(head, OffsetHead):
        raise ValueError(f"head must be an OffsetHead, got {type(head).__name__}")
    _check_head(head)
    L = head.train_length
    if L >= MAX_PROFILE_LENGTH:
        raise ValueError(f"head has train_length {L}; distant_rival searches lengths up to "
                         f"MAX_PROFILE_LENGTH = {MAX_PROFILE_LENGTH:,}")
    length = v.integer("length", length, minimum=L + 1, maximum=MAX_PROFILE_LENGTH)
    th, sc, att, _ = _resolve(head, length, None, None, theta, scale)
    k = head.offset
    # the best total score over the window, block by block (the first maximum, as argmax gives)
    best, rival, rival_parts = -np.inf, -1, None
    step = max(1, (1 << 18) // th.size)
    for start in range(L, length, step):
        deltas = np.arange(start, min(start + step, length))
        parts = _profile(head, deltas.astype(np.float64), th, sc, att, True)
        total = parts.sum(axis=-1)
        i = int(np.argmax(total))
        if total[i] > best or rival_parts is None:
            best, rival, rival_parts = total[i], int(deltas[i]), parts[i].copy()
    at_target = score_profile(head, k, theta=th, scale=sc, per_pair=True)
    w = head.amplitudes()
    fast = (th * sc * L) >= 2 * math.pi
    if not np.any(fast & (w > 0)):
        raise ValueError("the schedule has no pair that turns once inside the training window (no fast band)")
    w_fast = np.where(fast, w, 0.0)
    hit = near_collisions(th, L - k, length - 1 - k, top=1, scale=sc, weights=w_fast)[0]
    sim = float(kernel(rival - k, th, scale=sc, weights=w))
    fast_sim = float(kernel(rival - k, th, scale=sc, weights=w_fast))
    gap = rival_parts - at_target
    return DistantRival(
        offset=k, window=(L, length - 1), rival=rival, rival_score=float(best),
        target_score=float(at_target.sum()), wins=bool(best > at_target.sum()),
        fast_pairs=tuple(int(j) for j in np.nonzero(fast)[0]), predicted=k + hit.offset,
        fast_similarity=fast_sim, weighted_similarity=sim, weighted_margin=1.0 - sim,
        fast_gap=float(gap[fast].sum()), slow_gap=float(gap[~fast].sum()),
    )


# --------------------------------------------------------------------------------------------
# the verdict hook of the audit
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateCVerdict:
    """Pass or fail of the standard Gate C battery, with every number behind it.

    Attributes
    ----------
    passed : bool
        All checks pass.
    checks : dict
        ``name -> {"passed": bool, "value": float, "threshold": float}``.
    per_seed : dict
        Per-seed accuracies and masses of each condition.
    settings : dict
        The battery's settings (lengths, offset, seeds, schedule).
    """

    passed: bool
    checks: dict
    per_seed: dict
    settings: dict

    def to_dict(self) -> dict:
        return {"passed": self.passed, "checks": self.checks, "per_seed": self.per_seed, "settings": self.settings}

    def table(self) -> str:
        rows = [f"Gate C: {'PASS' if self.passed else 'FAIL'}"]
        for name, c in self.checks.items():
            rows.append(f"  {'ok  ' if c['passed'] else 'FAIL'} {name:<34} {c['value']:.3f} (threshold {c['threshold']:g})")
        return "\n".join(rows)

    def __str__(self) -> str:
        return self.table()


def gate_c(
    theta,
    *,
    train_length: int = 64,
    target_length: int = 512,
    target_theta=None,
    target_scale: float = 1.0,
    target_attention_factor: float = 1.0,
    offset: int = 5,
    seeds=(0, 1, 2),
    steps: int = 1000,
    match_steps: int = 600,
    min_train_accuracy: float = 0.95,
    min_target_accuracy: float = 0.9,
    min_match_accuracy: float = 0.9,
    max_shift_change: float = 1e-6,
    shift: float = 10_000.0,
    progress: bool = False,
) -> GateCVerdict:
    """Run the standard Gate C battery on a frequency schedule and return the verdict.

    For each seed an offset head (target displacement ``offset``) and a most-recent-match head
    are trained on ``theta`` at ``train_length``. Checks:

    * ``offset accuracy at L``: the lowest per-seed offset accuracy at ``train_length``;
    * ``offset accuracy at target``: the mean offset accuracy at ``target_length`` under the
      deployed schedule (``target_theta`` and ``target_scale``; default: ``theta`` unscaled);
    * ``match accuracy at target``: the mean match accuracy at ``target_length`` under that schedule;
    * ``global shift change``: the largest change of attention mass when every position is shifted
      by ``shift`` (float64 phases), which must stay below ``max_shift_change``.

    Parameters
    ----------
    theta : array_like, shape (pairs,)
        The training schedule, radians per position (at most ``MAX_HEAD_DIM // 2`` pairs).
    train_length, target_length : int
        ``2 <= train_length < target_length``; ``offset < train_length``. The match heads train
        at ``train_length``, so it is at most :data:`MAX_MATCH_LENGTH` = 1024; the heads are
        evaluated at ``target_length``, at most :data:`MAX_LENGTH` = 4096.
    target_theta, target_scale, target_attention_factor
        The deployed schedule at the target length (frequencies, position multiplier, and the
        multiplier of rotated queries and keys, e.g. from ``ropegeo.scaling.rope_parameters``).
    offset : int
    seeds : iterable of int
        1 to :data:`MAX_SEEDS` = 20 seeds (about 1 s each at the defaults).
    steps, match_steps : int
        Training steps of the two heads (each within :data:`MAX_TRAINING_WORK`).
    min_train_accuracy, min_target_accuracy, min_match_accuracy : float in [0, 1]
    max_shift_change : float
    shift : float
    progress : bool
        Show progress bars while the heads train (about 1 s per match head and seed).

    Returns
    -------
    GateCVerdict

    Raises
    ------
    ValueError
        For bad lengths, seeds or steps, thresholds outside [0, 1], or a target schedule of
        another size; all before any training.
    """
    th = _theta_arg(theta)
    train_length = v.integer("train_length", train_length, minimum=2, maximum=MAX_MATCH_LENGTH)
    target_length = v.integer("target_length", target_length, minimum=train_length + 1, maximum=MAX_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=train_length - 1)
    seeds = seed_list(seeds)
    steps = v.integer("steps", steps, minimum=1, maximum=MAX_STEPS)
    match_steps = v.integer("match_steps", match_steps, minimum=1, maximum=MAX_STEPS)
    _offset_budget(steps, train_length, th.size)
    # the match heads train with train_match_head's defaults (vocab 8, batch 32)
    _match_budget(match_steps, train_length, 32, 8, 2 * th.size, steps_name="match_steps")
    tth = th if target_theta is None else _theta_arg(target_theta)
    if tth.size != th.size:
        raise ValueError(f"target_theta must have {th.size} pairs like theta, got {tth.size}")
    target_scale = v.real("target_scale", target_scale, greater_than=0.0)
    target_attention_factor = v.real("target_attention_factor", target_attention_factor, greater_than=0.0)
    thresholds = {
        "min_train_accuracy": v.real("min_train_accuracy", min_train_accuracy, minimum=0.0, maximum=1.0),
        "min_target_accuracy": v.real("min_target_accuracy", min_target_accuracy, minimum=0.0, maximum=1.0),
        "min_match_accuracy": v.real("min_match_accuracy", min_match_accuracy, minimum=0.0, maximum=1.0),
    }
    max_shift_change = v.real("max_shift_change", max_shift_change, minimum=0.0)
    shift = v.real("shift", shift)
    d = 2 * th.size
    offs = train_heads("offset", seeds, offset=offset, head_dim=d, theta=th, train_length=train_length, steps=steps)
    match = train_heads("match", seeds, head_dim=d, theta=th, train_length=train_length, steps=match_steps,
                        progress=progress)
    deployed = dict(theta=tth, scale=target_scale, attention_factor=target_attention_factor)
    at_l = evaluate_seeds(offs, train_length, label="offset L")
    at_t = evaluate_seeds(offs, target_length, label="offset target", **deployed)
    m_t = evaluate_seeds(match, target_length, sequences=4, label="match target", **deployed)
    shifted = evaluate_seeds(offs, target_length, shift=shift, label="offset shifted", **deployed)
    change = max(float(np.max(np.abs(a.target_mass - b.target_mass))) for a, b in zip(at_t.evaluations, shifted.evaluations))
    checks = {
        "offset accuracy at L (min)": {"value": float(at_l.accuracy.min()), "threshold": thresholds["min_train_accuracy"]},
        "offset accuracy at target (mean)": {"value": at_t.accuracy_mean, "threshold": thresholds["min_target_accuracy"]},
        "match accuracy at target (mean)": {"value": m_t.accuracy_mean, "threshold": thresholds["min_match_accuracy"]},
    }
    for c in checks.values():
        c["passed"] = bool(c["value"] >= c["threshold"])
    checks["global shift change (max)"] = {"value": change, "threshold": max_shift_change,
                                           "passed": bool(change <= max_shift_change)}
    per_seed = {r.label: r.to_dict() for r in (at_l, at_t, m_t, shifted)}
    settings = {"theta": th.tolist(), "target_theta": tth.tolist(), "target_scale": target_scale,
                "target_attention_factor": target_attention_factor,
                "train_length": train_length, "target_length": target_length, "offset": offset,
                "seeds": [h.seed for h in offs], "steps": steps, "match_steps": match_steps, "shift": shift}
    return GateCVerdict(all(c["passed"] for c in checks.values()), checks, per_seed, settings)
