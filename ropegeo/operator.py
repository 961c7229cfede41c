"""The rotary operator as one value: what rotates, by how much, in which layout and precision.

:class:`RotaryOperator` is one frozen value, validated once when it is built, with its frequencies
cached. Public functions take it (``operator=``) or build it from their plain keywords with
:meth:`RotaryOperator.coerce`; inner code calls the unchecked kernels (:func:`phase_kernel`,
:func:`rotate_pairs`, :meth:`RotaryOperator.rotate`). Multi-axis RoPE: :attr:`RotaryOperator.axis_of_pair`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import schedule
from ropegeo.scaling.config import Scaling, scaled_frequencies

__all__ = ["RotaryOperator", "phase_kernel", "rotate_pairs"]

_DEFAULT_BASE = 10_000.0
_DTYPES = {"float64": np.dtype(np.float64), "float32": np.dtype(np.float32), "float16": np.dtype(np.float16)}
#: Largest head dimension for which a full ``head_dim x head_dim`` matrix is built (32 MiB).
MAX_MATRIX_DIM = 2048


def phase_kernel(pos: np.ndarray, theta: np.ndarray, dt: np.dtype, scale: float) -> np.ndarray:
    """The angle stages of :func:`ropegeo.rotation.phase_angles` without its argument checks.

    A position or an angle beyond the range of ``dt`` still raises ValueError.

    Examples
    --------
    >>> float(phase_kernel(np.array([257.0]), np.array([1.0]), np.dtype("float16"), 1.0)[0, 0])
    257.0
    """
    with np.errstate(over="ignore", invalid="ignore"):
        pos_dt = pos.astype(dt)  # stage 1: positions cast
        if scale != 1.0:
            pos_dt = (pos_dt * np.asarray(scale).astype(dt)).astype(dt)  # stage 2: scale applied
        if not np.all(np.isfinite(pos_dt.astype(np.float64))):
            what = "positions" if scale == 1.0 else "positions times scale"
            raise ValueError(f"{what} exceed the largest {dt.name} number; use a wider phase dtype")
        prod = pos_dt[..., None] * theta.astype(dt)  # stage 3: angles formed
        out = prod.astype(np.float64)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"positions * theta overflows {dt.name}: use smaller positions or a wider phase dtype")
    return out


def rotate_pairs(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, pairing: str = "interleaved") -> np.ndarray:
    """The rotation kernel of :func:`ropegeo.rotation.apply_rope`, without any check: for inner loops.

    Rotates pair ``i`` of a float64 ``x`` by ``cos[..., i]``, ``sin[..., i]``; the coordinates
    beyond ``2 * pairs`` pass through. A new array of ``x``'s shape.

    Examples
    --------
    >>> import numpy as np
    >>> rotate_pairs(np.array([1.0, 0.0]), np.array([0.0]), np.array([1.0])).tolist()
    [0.0, 1.0]
    """
    pairs = cos.shape[-1]
    if pairing == "interleaved":
        first, second = slice(0, 2 * pairs, 2), slice(1, 2 * pairs, 2)
    else:
        first, second = slice(0, pairs), slice(pairs, 2 * pairs)
    a, b = x[..., first], x[..., second]
    out = x.copy()
    out[..., first] = a * cos - b * sin
    out[..., second] = a * sin + b * cos
    return out


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False, repr=False)
class RotaryOperator:
    """One rotary position embedding, validated once and with its frequencies cached.

    ``rotary_dim`` leading coordinates rotate (default the whole head, or ``2 * len(theta)``).
    ``base`` defaults to 10,000 (only recorded beside explicit ``theta``). ``theta`` given is
    already scaled, not with ``scaling`` (kept as ``theta_given``); once built ``theta`` is the
    read-only bank at initialisation (:meth:`theta_at` for other lengths). ``scaling`` is a
    :class:`~ropegeo.scaling.Scaling` or its dict; ``scale`` multiplies every position;
    ``attention_factor`` defaults to the rule's; ``sections`` (pairs per position axis, summing to
    the pairs) and ``round_robin`` make it multi-axis. ``ValueError`` names a field out of range
    or two that contradict each other.

    Examples
    --------
    >>> op = RotaryOperator(head_dim=8, pairing="half")
    >>> op.theta.round(4).tolist()
    [1.0, 0.1, 0.01, 0.001]
    >>> op.apply([1.0, 0, 0, 0, 0, 0, 0, 0], 1).round(3).tolist()
    [0.54, 0.0, 0.0, 0.0, 0.841, 0.0, 0.0, 0.0]

    A plain keyword that contradicts a given operator is refused by name:

    >>> RotaryOperator.coerce(op, pairing="interleaved")
    Traceback (most recent call last):
    ...
    ValueError: pairing='interleaved' conflicts with the operator's pairing 'half'; give one or the other
    """

    head_dim: int = 128
    rotary_dim: int | None = None
    pairing: str = "interleaved"
    base: float | None = None
    theta: Any = None
    scaling: Any = None
    scale: float = 1.0
    attention_factor: float | None = None
    phase_dtype: str = "float64"
    sections: tuple | None = None
    round_robin: bool = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        head_dim = v.head_dim(self.head_dim)
        set_(self, "head_dim", head_dim)
        set_(self, "pairing", v.pairing(self.pairing))
        self.__dict__["theta_given"] = None
        if self.theta is None:
            rotary_dim = head_dim if self.rotary_dim is None else self._rotary_dim(self.rotary_dim, head_dim)
            set_(self, "base", v.base(_DEFAULT_BASE if self.base is None else self.base))
        else:
            theta = v.frequencies(self.theta, "theta")
            rotary_dim = 2 * theta.size
            if self.rotary_dim is not None and v.integer("rotary_dim", self.rotary_dim) != rotary_dim:
                raise ValueError(f"rotary_dim={self.rotary_dim} does not match theta, which has {theta.size} pairs "
                                 f"(rotary_dim {rotary_dim})")
            if rotary_dim > head_dim:
                raise ValueError(f"theta has {theta.size} pairs, which needs head_dim >= {rotary_dim}, "
                                 f"got head_dim={head_dim}")
            self.__dict__["theta_given"] = tuple(theta.tolist())
            if self.base is not None:
                set_(self, "base", v.base(self.base))
        set_(self, "rotary_dim", rotary_dim)
        set_(self, "scaling", self._scaling(self.scaling, rotary_dim // 2))
        set_(self, "scale", v.real("scale", self.scale))
        if self.attention_factor is not None:
            set_(self, "attention_factor", v.real("attention_factor", self.attention_factor, greater_than=0.0))
        dt = v.float_dtype(self.phase_dtype, "phase_dtype")
        set_(self, "phase_dtype", dt.name)
        self.__dict__["dtype"] = dt  # the cached_property's slot: checked once
        set_(self, "round_robin", v.boolean("round_robin", self.round_robin))
        set_(self, "sections", self._sections(self.sections, rotary_dim // 2, self.round_robin))
        set_(self, "theta", self._at(None)[0])  # the bank at initialisation, computed once

    def _key(self) -> tuple:
        return tuple(self.theta_given if f.name == "theta" else getattr(self, f.name) for f in fields(self))

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        shown = (f"{f.name}={self.theta_given if f.name == 'theta' else getattr(self, f.name)!r}" for f in fields(self))
        return f"RotaryOperator({', '.join(shown)})"

    @staticmethod
    def _rotary_dim(value, head_dim: int) -> int:
        rotary_dim = v.integer("rotary_dim", value, minimum=2, maximum=head_dim)
        if rotary_dim % 2:
            raise ValueError(f"rotary_dim must be even (between 2 and head_dim={head_dim}), got {rotary_dim}")
        return rotary_dim

    def _scaling(self, scaling, pairs: int):
        if scaling is None:
            return None
        if self.theta is not None:
            raise ValueError("give scaling or theta (frequencies already scaled), not both")
        if isinstance(scaling, Mapping):
            try:
                scaling = Scaling.from_dict(scaling)
            except ValueError as exc:
                raise ValueError(f"scaling: {exc}") from None
        elif not isinstance(scaling, Scaling):
            raise ValueError(f"scaling must be a ropegeo.scaling.Scaling, a dict with a 'rule' key, or None, "
                             f"got {type(scaling).__name__}")
        scaling.check_pairs(pairs)
        return scaling

    @staticmethod
    def _sections(sections, pairs: int, round_robin: bool):
        if sections is None:
            if round_robin:
                raise ValueError("round_robin=True needs sections (the pairs of each position axis)")
            return None
        if not v.is_collection(sections) or len(sections) < 1:
            raise ValueError(f"sections must be a list of pair counts, one per position axis, got {sections!r}")
        out = tuple(v.integer(f"sections[{i}]", s, minimum=1, maximum=pairs) for i, s in enumerate(sections))
        if sum(out) != pairs:
            raise ValueError(f"sections must add up to the number of rotary pairs ({pairs}), got {sum(out)}")
        axes = len(out)
        if round_robin:
            for a in range(1, axes):
                if a + axes * (out[a] - 1) >= pairs:
                    raise ValueError(f"sections[{a}]={out[a]} does not fit round-robin in {pairs} pairs over "
                                     f"{axes} axes")
        return out

    @classmethod
    def coerce(cls, operator: "RotaryOperator | None" = None, /, **plain) -> "RotaryOperator":
        """The operator of a public entry point: ``operator`` itself (not validated again), or one built from ``plain``.

        ``plain``: the operator's field names (``None``: not given); one that contradicts
        ``operator`` is refused by name.

        Examples
        --------
        >>> RotaryOperator.coerce(head_dim=8, base=None).base
        10000.0
        >>> op = RotaryOperator(head_dim=8, base=500_000.0)
        >>> RotaryOperator.coerce(op, base=500_000.0) is op
        True
        """
        unknown = sorted(set(plain) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"coerce() got unknown keyword(s): {', '.join(unknown)}")
        given = {k: val for k, val in plain.items() if val is not None}
        if operator is None:
            return cls(**given)
        if not isinstance(operator, cls):
            raise ValueError(f"operator must be a ropegeo.RotaryOperator, got {type(operator).__name__}")
        for key, val in given.items():
            if not operator._agrees(key, val):
                ours = operator.theta_given if key == "theta" else getattr(operator, key)
                shown = "explicit frequencies" if key == "theta" and ours is not None else repr(ours)
                raise ValueError(f"{key}={_short(val)} conflicts with the operator's {key} {shown}; "
                                 "give one or the other")
        return operator

    def _agrees(self, key: str, value) -> bool:
        """Whether a plain keyword states what this operator already holds."""
        ours = self.theta_given if key == "theta" else getattr(self, key)
        try:
            if key == "theta":
                return ours is not None and np.array_equal(np.asarray(value, dtype=np.float64), np.asarray(ours))
            if key == "phase_dtype":
                return v.float_dtype(value, "phase_dtype").name == ours
            if key == "scaling":
                return ours is not None and (value is ours or value == ours
                                             or (isinstance(value, Mapping) and ours.to_dict() == dict(value)))
            if key == "sections":
                return ours is not None and tuple(value) == ours
            if isinstance(ours, str) or isinstance(value, str):
                return type(value) is type(ours) and value == ours
            if isinstance(value, (bool, np.bool_)) != isinstance(ours, bool):
                return False
            return bool(value == ours)
        except (TypeError, ValueError):
            return False

    @classmethod
    def bank_of(cls, theta=None, operator: "RotaryOperator | None" = None, *, seq_len: int | None = None,
                scale: float | None = None) -> tuple[np.ndarray, float]:
        """``(theta, scale)`` of a function that takes frequencies (checked) or an operator (trusted).

        Examples
        --------
        >>> theta, scale = RotaryOperator.bank_of(operator=RotaryOperator(head_dim=4, scale=0.5))
        >>> theta.round(4).tolist(), scale
        ([1.0, 0.01], 0.5)
        """
        if operator is None:
            if theta is None:
                raise ValueError("theta is required (or give operator)")
            return v.frequencies(theta), (1.0 if scale is None else v.real("scale", scale))
        if theta is not None:
            raise ValueError("give theta or operator, not both")
        op = cls.coerce(operator, scale=scale)
        return op.theta_at(seq_len), op.scale

    def with_(self, **changes) -> "RotaryOperator":
        """A copy with some fields changed (validated again, with a fresh cache)."""
        return replace(self, **{"theta": self.theta_given, **changes})

    def to_dict(self) -> dict:
        """The fields, JSON-ready (the scaling rule as its dict; ``theta`` only when given)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["theta"] = None if self.theta_given is None else list(self.theta_given)
        out["scaling"] = None if self.scaling is None else self.scaling.to_dict()
        out["sections"] = None if self.sections is None else list(self.sections)
        return out

    @property
    def pairs(self) -> int:
        """Number of rotary pairs, ``rotary_dim // 2``."""
        return self.rotary_dim // 2

    @functools.cached_property
    def _by_length(self) -> dict:
        return {}

    def _at(self, seq_len) -> tuple[np.ndarray, float]:
        """``(theta, attention factor)`` at ``seq_len``, computed once per length (read-only theta)."""
        cache = self._by_length
        if (seq_len is None or type(seq_len) is int) and seq_len in cache:
            return cache[seq_len]
        key = None if seq_len is None else v.length("seq_len", seq_len, minimum=1)
        if key in cache:
            return cache[key]
        if key is not None and (self.scaling is None or self.scaling.rule not in ("dynamic", "longrope")):
            cache[key] = self._at(None)  # the bank does not depend on the length
            return cache[key]
        if self.theta_given is not None:
            theta, att = np.asarray(self.theta_given, dtype=np.float64), 1.0
        elif self.scaling is None:
            theta, att = schedule(self.rotary_dim, self.base), 1.0
        else:
            theta, att = scaled_frequencies(self.scaling, self.rotary_dim, self.base, key)
        if self.attention_factor is not None:
            att = self.attention_factor
        cache[key] = (_read_only(theta), float(att))
        return cache[key]

    @functools.cached_property
    def dtype(self) -> np.dtype:
        """``phase_dtype`` as a numpy dtype (bfloat16 from ml_dtypes)."""
        return v.float_dtype(self.phase_dtype, "phase_dtype")

    def theta_at(self, seq_len: int | None = None) -> np.ndarray:
        """The read-only frequencies for ``seq_len`` tokens (only dynamic NTK and LongRoPE read it; ``None``: ``theta``)."""
        return self._at(seq_len)[0]

    def attention_at(self, seq_len: int | None = None) -> float:
        """The attention factor at ``seq_len``: the explicit one, else the rule's (1 without a rule)."""
        return self._at(seq_len)[1]

    @functools.cached_property
    def unscaled(self) -> "RotaryOperator":
        """This operator without its scaling rule and explicit attention factor (refused for explicit ``theta``).

        Examples
        --------
        >>> from ropegeo.scaling import Scaling
        >>> RotaryOperator(head_dim=4, scaling=Scaling("linear", factor=4.0)).unscaled.theta.round(4).tolist()
        [1.0, 0.01]
        """
        if self.theta_given is not None:
            raise ValueError("an operator with explicit frequencies (theta) has no unscaled schedule")
        if self.scaling is None and self.attention_factor is None:
            return self
        plain = object.__new__(type(self))
        for f in fields(self):
            plain.__dict__[f.name] = getattr(self, f.name)
        plain.__dict__.update(scaling=None, attention_factor=None, dtype=self.dtype, theta_given=None)
        plain.__dict__["theta"] = plain._at(None)[0]
        return plain

    @functools.cached_property
    def axis_of_pair(self) -> np.ndarray:
        """Multi-axis RoPE: the position axis each pair turns with, shape ``(pairs,)`` (all 0 for one axis).

        ``sections`` splits the pairs among position axes in runs (Qwen2-VL) or, with ``round_robin``,
        dealt round-robin (Qwen3-VL: pair ``i`` to axis ``i % axes`` while that axis has pairs left).
        """
        axis = np.zeros(self.pairs, dtype=np.intp)
        if self.sections is None:
            return _read_only(axis)
        if self.round_robin:
            n = len(self.sections)
            for a in range(1, n):
                axis[a: n * self.sections[a]: n] = a
        else:
            axis[:] = np.repeat(np.arange(len(self.sections)), self.sections)
        return _read_only(axis)

    def broadcast_positions(self, positions, batch: tuple) -> np.ndarray:
        """Checked positions, broadcast to ``batch`` (multi-axis RoPE: ``(axes,) + batch``)."""
        pos = v.finite_array("positions", positions)
        if pos.size and float(np.abs(pos).max()) > v.MAX_LENGTH:  # float64 phases beyond are rounding noise
            raise ValueError(f"positions must lie within +-2**48 = {v.MAX_LENGTH:,}, got {float(np.abs(pos).max()):.6g}")
        shape = batch if self.sections is None else (len(self.sections), *batch)
        if self.sections is not None and (pos.ndim == 0 or pos.shape[0] != len(self.sections)):
            raise ValueError(f"positions must have a leading axis of {len(self.sections)} (one row per position "
                             f"axis of sections {list(self.sections)}), got shape {pos.shape}")
        try:
            return np.broadcast_to(pos, shape)
        except ValueError:
            raise ValueError(f"positions of shape {np.shape(positions)} do not broadcast against x.shape[:-1] = "
                             f"{batch}" + ("" if self.sections is None else " (after the axis row)")) from None

    def phases(self, pos: np.ndarray, seq_len: int | None = None, phase_dtype: str | None = None) -> np.ndarray:
        """:meth:`angles` without the argument checks; ``phase_dtype`` (unchecked) replaces the operator's."""
        theta = self.theta_at(seq_len)
        dt = self.dtype if phase_dtype is None or phase_dtype == self.phase_dtype else \
            _DTYPES.get(phase_dtype) or v.float_dtype(phase_dtype, "phase_dtype")
        if self.sections is None:
            return phase_kernel(pos, theta, dt, self.scale)
        out = np.empty(pos.shape[1:] + (self.pairs,))
        for a in range(len(self.sections)):
            mine = self.axis_of_pair == a
            out[..., mine] = phase_kernel(pos[a], theta[mine], dt, self.scale)
        return out

    def angles(self, positions, *, seq_len: int | None = None) -> np.ndarray:
        """Rotation angles ``position * scale * theta_i`` formed in ``phase_dtype``: ``positions.shape + (pairs,)``.

        Examples
        --------
        >>> RotaryOperator(head_dim=4).angles([0, 2]).round(2).tolist()
        [[0.0, 0.0], [2.0, 0.02]]
        """
        pos = v.finite_array("positions", positions)
        if self.sections is not None and (pos.ndim == 0 or pos.shape[0] != len(self.sections)):
            raise ValueError(f"positions must have a leading axis of {len(self.sections)} (one row per position "
                             f"axis), got shape {pos.shape}")
        return self.phases(pos, seq_len)

    def rotate(self, x: np.ndarray, pos: np.ndarray, seq_len: int | None = None,
               phase_dtype: str | None = None) -> np.ndarray:
        """:meth:`apply` without the argument checks (float64 ``x``, positions broadcast), for inner loops."""
        angles = self.phases(pos, seq_len, phase_dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            return rotate_pairs(x, np.cos(angles), np.sin(angles), self.pairing)

    def apply(self, x, positions, *, seq_len: int | None = None) -> np.ndarray:
        """Rotate queries or keys ``(..., head_dim)`` by their positions (as :func:`ropegeo.rotation.apply_rope`).

        Floating input keeps its dtype; the attention factor is not applied (:meth:`attention_at`).

        Examples
        --------
        >>> import numpy as np
        >>> op = RotaryOperator(head_dim=4)
        >>> bool(np.isclose(op.apply([1.0, 0, 1, 0], 7) @ op.apply([0.0, 1, 0, 1], 5),
        ...                 op.apply([1.0, 0, 1, 0], 2) @ op.apply([0.0, 1, 0, 1], 0)))
        True
        """
        x = np.asarray(x)
        if x.ndim == 0:
            raise ValueError("x must have at least one axis (head_dim), got a scalar")
        out_dtype = x.dtype if np.issubdtype(x.dtype, np.floating) or x.dtype.name == "bfloat16" else np.float64
        xf = v.finite_array("x", x)
        if xf.shape[-1] != self.head_dim:
            raise ValueError(f"the last axis of x must be the operator's head_dim ({self.head_dim}), "
                             f"got {xf.shape[-1]}")
        return self.finish(self.rotate(xf, self.broadcast_positions(positions, xf.shape[:-1]), seq_len), out_dtype)

    @staticmethod
    def finish(result: np.ndarray, out_dtype) -> np.ndarray:
        """Cast a float64 rotation to ``out_dtype``, refusing one that overflows there."""
        with np.errstate(over="ignore", invalid="ignore"):
            result = result.astype(out_dtype, copy=False)
        if not np.all(np.isfinite(result.astype(np.float64, copy=False))):
            raise ValueError(f"x is too large to rotate in {np.dtype(out_dtype).name}: a rotated pair can grow by "
                             "sqrt(2) in one coordinate and overflows; scale x down or use a wider dtype")
        return result

    def matrix(self, position) -> np.ndarray:
        """The orthogonal ``head_dim x head_dim`` matrix ``R`` with ``apply(x, position) == R @ x``.

        Examples
        --------
        >>> import math
        >>> RotaryOperator(head_dim=2).matrix(math.pi / 2).round(3).tolist()
        [[0.0, -1.0], [1.0, 0.0]]
        """
        if self.head_dim > MAX_MATRIX_DIM:
            raise ValueError(f"head_dim must be at most {MAX_MATRIX_DIM} to build a matrix, got {self.head_dim}")
        if self.sections is None:
            pos = np.broadcast_to(np.float64(v.real("position", position, minimum=-v.MAX_LENGTH,
                                                    maximum=v.MAX_LENGTH)), (self.head_dim,))
        else:
            p = v.finite_array("position", position)
            if p.shape != (len(self.sections),) or float(np.abs(p).max()) > v.MAX_LENGTH:
                raise ValueError(f"position must hold one position per axis within +-2**48, shape "
                                 f"({len(self.sections)},), got {p.tolist() if p.size <= 8 else p.shape}")
            pos = np.broadcast_to(p[:, None], (len(self.sections), self.head_dim))
        return self.rotate(np.eye(self.head_dim), pos).T


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
