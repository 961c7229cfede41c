"""The training toolkit of Gate C's heads: bounds, seeds, optimiser settings, Adam, rotary settings.

Shared by the trainers of :mod:`ropegeo.toy.heads` and the scheme trainers (public names only).
Matrices are small, so training runs on one BLAS thread (:func:`~ropegeo.toy.one_blas_thread`):
on 2 busy cores the default pool made one Gate C battery 4 to 40 times slower.
"""

from __future__ import annotations

import itertools

import numpy as np
from threadpoolctl import threadpool_limits

from ropegeo import _validate as v
from ropegeo.operator import RotaryOperator
from ropegeo.rotation import pair_indices


def one_blas_thread():
    """A context in which BLAS (and OpenMP) pools run one thread (results then do not depend on the core count).

    Examples
    --------
    >>> import numpy as np
    >>> with one_blas_thread():
    ...     float(np.ones((3, 3)) @ np.ones(3) @ np.ones(3))
    9.0
    """
    return threadpool_limits(limits=1)


#: Longest sequence a Gate C head trains or is evaluated on (a few ``length x length`` arrays).
MAX_HEAD_LENGTH = 4096
#: Longest training or fine-tuning length of a match head (``batch`` score matrices a step).
MAX_MATCH_LENGTH = 1024
#: Widest head a trainer builds and :func:`ropegeo.toy.evaluate` runs.
MAX_TRAINED_HEAD_DIM = 512
#: Largest vocabulary of a match head.
MAX_VOCAB = 256
#: Most sequences in one training step of a match head.
MAX_BATCH = 512
#: Most seeds (independently trained heads) one call trains or evaluates (gate_c: about 1 s each).
MAX_SEEDS = 20
#: Largest learning rate of any trainer.
MAX_LR = 10.0
#: Largest standard deviation of the initial parameters of any trainer.
MAX_INIT_STD = 10.0
#: Most memory one training step may hold, as estimated from the step's array shapes.
MAX_STEP_BYTES = 2**29


def _rng(seed) -> tuple[np.random.Generator, int | None]:
    """A Generator and the integer seed it came from (``None`` when a Generator was given)."""
    if isinstance(seed, np.random.Generator):
        return seed, None
    seed = v.integer("seed", seed, minimum=0)
    return np.random.default_rng(seed), seed


def check_theta(theta, name: str = "theta") -> np.ndarray:
    """A copy of per-pair frequencies a head can train on (``v.frequencies``, at most ``MAX_TRAINED_HEAD_DIM // 2`` pairs)."""
    th = v.frequencies(theta, name)
    if th.size > MAX_TRAINED_HEAD_DIM // 2:
        raise ValueError(f"{name} must have at most {MAX_TRAINED_HEAD_DIM // 2} pairs (head_dim at most "
                         f"MAX_TRAINED_HEAD_DIM = {MAX_TRAINED_HEAD_DIM}), got {th.size}")
    return th.copy()


def _rotary_bank(operator=None, *, head_dim: int | None = None, base: float | None = None, theta=None) -> tuple:
    """``(theta, scale, attention_factor, base)``: the rotary settings a head trains under.

    ``operator`` is a :class:`ropegeo.RotaryOperator` (one float64 axis rotating the whole head) or a
    frozen bank (or ``theta``); otherwise plain ``head_dim`` (16) and ``base`` (10,000), the one ``base`` returned.

    Examples
    --------
    >>> from ropegeo import RotaryOperator
    >>> th, scale, att, base = _rotary_bank(RotaryOperator(head_dim=4, scale=0.5))
    >>> th.tolist(), scale, att, base
    ([1.0, 0.01], 0.5, 1.0, 10000.0)
    """
    name = "theta"
    if operator is not None and not isinstance(operator, RotaryOperator):
        if theta is not None:
            raise ValueError("give operator or theta, not both")
        operator, theta, name = None, operator, "operator"
    if theta is not None:
        th = check_theta(theta, name)
        if head_dim is not None and v.head_dim(head_dim, maximum=MAX_TRAINED_HEAD_DIM) != 2 * th.size:
            raise ValueError(f"theta has {th.size} pairs, so head_dim must be {2 * th.size}, got head_dim={head_dim}")
        return th, 1.0, 1.0, None
    if operator is None:
        head_dim = v.head_dim(16 if head_dim is None else head_dim, maximum=MAX_TRAINED_HEAD_DIM)
    op = RotaryOperator.coerce(operator, head_dim=head_dim, base=base)
    if op.head_dim > MAX_TRAINED_HEAD_DIM or op.rotary_dim != op.head_dim or op.sections or op.phase_dtype != "float64":
        raise ValueError(f"operator must rotate a whole head of at most MAX_TRAINED_HEAD_DIM = {MAX_TRAINED_HEAD_DIM} "
                         f"coordinates on one axis in float64, got {op!r}")
    plain = op.theta_given is None and op.scaling is None
    return op.theta.copy(), float(op.scale), op.attention_at(None), op.base if plain else None


#: Most optimiser steps one training or fine-tuning call may take (the loss history is stored).
MAX_STEPS = 100_000


def training_settings(steps, lr, init_std=None) -> tuple:
    """Validate ``(steps, lr[, init_std])``: up to :data:`MAX_STEPS`, :data:`MAX_LR`, :data:`MAX_INIT_STD`."""
    steps = v.integer("steps", steps, minimum=1, maximum=MAX_STEPS)
    lr = v.real("lr", lr, greater_than=0.0, maximum=MAX_LR)
    if init_std is None:
        return steps, lr
    return steps, lr, v.real("init_std", init_std, greater_than=0.0, maximum=MAX_INIT_STD)


def check_step_memory(what: str, step_bytes: float, sizes: dict) -> None:
    """Refuse a training step beyond :data:`MAX_STEP_BYTES`, naming the ``sizes`` to lower."""
    if step_bytes > MAX_STEP_BYTES:
        shown = ", ".join(f"{k}={val}" for k, val in sizes.items())
        raise ValueError(f"one training step of {what} with {shown} would hold about {step_bytes / 2**20:,.0f} MiB; "
                         f"at most MAX_STEP_BYTES = {MAX_STEP_BYTES // 2**20} MiB: lower {', '.join(sizes)}")


def check_trained(params, losses, lr: float, init_std: float | None = None) -> None:
    """Raise a ValueError naming ``lr`` (and ``init_std``) when training diverged to NaN or infinity."""
    if np.all(np.isfinite(losses)) and all(np.all(np.isfinite(p)) for p in params):
        return
    if init_std is None:
        raise ValueError(f"training diverged to non-finite values with lr={lr:g}: lower lr")
    raise ValueError(f"training diverged to non-finite values with lr={lr:g} and init_std={init_std:g}: "
                     f"lower lr or init_std")


def check_match_step(length: int, batch: int, vocab: int, head_dim: int, length_name: str = "train_length") -> None:
    """Refuse match-head training whose step would hold more than :data:`MAX_STEP_BYTES`."""
    check_step_memory("a match head", match_step_bytes(length, batch, vocab, head_dim),
                      {length_name: length, "batch": batch, "vocab": vocab, "head_dim": head_dim})


def match_step_bytes(length: int, batch: int, vocab: int, head_dim: int) -> int:
    """Estimated peak memory of one match-head step that forms its scores whole (the scheme heads);
    the rotary head's step holds far less but keeps the same bound.
    """
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
    """An iterable as a list of at most ``most`` items."""
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


def _pair_gradients(q: np.ndarray, k: np.ndarray, ga: np.ndarray, gb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradients in ``q`` and ``k`` given those in their pair coefficients ``a`` and ``b``."""
    first, second = pair_indices(q.size)
    q1, q2, k1, k2 = q[first], q[second], k[first], k[second]
    dq, dk = np.empty_like(q), np.empty_like(k)
    dq[first], dq[second] = ga * k1 + gb * k2, ga * k2 - gb * k1
    dk[first], dk[second] = ga * q1 - gb * q2, ga * q2 + gb * q1
    return dq, dk


def _pair_coefficients(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a_i = q1 k1 + q2 k2`` and ``b_i = q1 k2 - q2 k1`` over the last axis (interleaved pairs)."""
    first, second = pair_indices(q.shape[-1])
    q1, q2, k1, k2 = q[..., first], q[..., second], k[..., first], k[..., second]
    return q1 * k1 + q2 * k2, q1 * k2 - q2 * k1


