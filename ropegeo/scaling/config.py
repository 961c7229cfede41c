"""One configured rule (:class:`~ropegeo.scaling.Scaling`), the frequencies it serves, and the one
builder of "a rule at a length" (:func:`~ropegeo.scaling.extension_schedule`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping, NamedTuple

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies
from ropegeo.scaling.hf import read_block
from ropegeo.scaling.rules import (MAX_FACTOR, RULES, _dim, _factors, _pos, dynamic_ntk, linear, llama3, longrope,
                                   ntk, rule_name, yarn)

_L = "original_max_position_embeddings"
# rule -> (the parameters it needs, those it may take besides); every other field stays at its default
_PARAMS = {
    "linear": (("factor",), ()), "ntk": (("factor",), ()), "dynamic": (("factor", _L), ()),
    "yarn": (("factor", _L), ("attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate")),
    "longrope": (("factor", _L, "short_factor", "long_factor"), ("attention_factor", "short_mscale", "long_mscale")),
    "llama3": (("factor", _L, "low_freq_factor", "high_freq_factor"), ()),
}


@dataclass(frozen=True)
class Scaling:
    """A context-extension rule of :data:`~ropegeo.scaling.RULES` with every parameter resolved.

    Each rule takes the parameters its function in :mod:`ropegeo.scaling.rules` takes
    (``_PARAMS``). ``original_max_position_embeddings`` is ``L``; for ``dynamic`` the length beyond
    which the base grows (:meth:`from_hf` stores transformers' ``max_position_embeddings``).
    ``short_mscale`` / ``long_mscale`` (Phi-3.5-MoE) replace LongRoPE's attention factor for a
    pass of at most / more than ``L``. ``ignored_keys`` records the source block's unread keys.
    ``ValueError`` names an unknown rule, a missing parameter, one the rule does not take, or a
    value out of range.
    """

    rule: str
    factor: float | None = None
    original_max_position_embeddings: int | None = None
    attention_factor: float | None = None
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    mscale: float | None = None
    mscale_all_dim: float | None = None
    truncate: bool = True
    short_factor: tuple | None = None
    long_factor: tuple | None = None
    short_mscale: float | None = None
    long_mscale: float | None = None
    low_freq_factor: float | None = None
    high_freq_factor: float | None = None
    ignored_keys: tuple = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(map(repr, RULES))}, got {self.rule!r}")
        needed, optional = _PARAMS[self.rule]
        for f in fields(self):
            if f.name not in needed + optional + ("rule", "ignored_keys") and getattr(self, f.name) != f.default:
                raise ValueError(f"{self.rule} scaling takes no parameter {f.name!r}; it takes "
                                 f"{', '.join(sorted(needed + optional))}")
        for name in needed:
            if getattr(self, name) is None:
                raise ValueError(f"{self.rule} scaling needs {name}")
        set_ = object.__setattr__
        set_(self, "factor", _pos("factor", self.factor))
        if self.original_max_position_embeddings is not None:
            set_(self, _L, v.length(_L, self.original_max_position_embeddings, minimum=2 if self.rule == "yarn" else 1))
        for name in ("attention_factor", "short_mscale", "long_mscale", "low_freq_factor", "high_freq_factor"):
            if getattr(self, name) is not None:
                set_(self, name, _pos(name, getattr(self, name)))
        if self.rule == "yarn":
            set_(self, "beta_fast", _pos("beta_fast", self.beta_fast))
            set_(self, "beta_slow", _pos("beta_slow", self.beta_slow))
            if self.beta_fast < self.beta_slow:
                raise ValueError(f"beta_fast ({self.beta_fast:g}) must not be below beta_slow ({self.beta_slow:g})")
            for name in ("mscale", "mscale_all_dim"):
                if getattr(self, name) is not None:
                    set_(self, name, v.real(name, getattr(self, name), minimum=0.0))
            if not isinstance(self.truncate, (bool, np.bool_)):
                raise ValueError(f"truncate must be True or False, got {self.truncate!r}")
            set_(self, "truncate", bool(self.truncate))
        if self.rule == "longrope":
            set_(self, "short_factor", _factors("short_factor", self.short_factor))
            set_(self, "long_factor", _factors("long_factor", self.long_factor))
            if len(self.short_factor) != len(self.long_factor):
                raise ValueError(f"short_factor and long_factor must have the same length (one entry per rotary "
                                 f"pair), got {len(self.short_factor)} and {len(self.long_factor)}")
        if self.rule == "llama3" and self.high_freq_factor < self.low_freq_factor:
            raise ValueError(f"high_freq_factor must not be below low_freq_factor, "
                             f"got {self.high_freq_factor:g} < {self.low_freq_factor:g}")
        keys = self.ignored_keys
        if isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
            raise ValueError(f"ignored_keys must be a list of key names, got {keys!r}")
        set_(self, "ignored_keys", tuple(str(k) for k in keys))

    def check_pairs(self, pairs: int) -> None:
        """Raise a ValueError if per-pair lists do not have ``pairs`` entries (LongRoPE)."""
        if self.rule == "longrope" and len(self.short_factor) != pairs:
            raise ValueError(f"short_factor and long_factor must have one entry per rotary pair ({pairs}), "
                             f"got {len(self.short_factor)}")
        if self.rule in ("ntk", "dynamic") and pairs < 2:
            raise ValueError(f"{self.rule} scaling needs a rotary dimension of at least 4 (d / (d - 2) is undefined at d = 2)")

    def to_dict(self) -> dict:
        """The rule and the parameters it uses, JSON-ready."""
        out: dict[str, Any] = {"rule": self.rule}
        for name in sorted(sum(_PARAMS[self.rule], ())):
            val = getattr(self, name)
            if val is not None:
                out[name] = list(val) if isinstance(val, tuple) else val
        if self.ignored_keys:
            out["ignored_keys"] = list(self.ignored_keys)
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "Scaling":
        """Inverse of :meth:`to_dict` (a dict with a ``"rule"`` key and the rule's parameters)."""
        if not isinstance(data, Mapping) or "rule" not in data:
            raise ValueError("scaling must be a dict with a 'rule' key, e.g. {'rule': 'linear', 'factor': 8}")
        data = dict(data)
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"unknown scaling parameter(s): {', '.join(unknown)}")
        for key in ("short_factor", "long_factor", "ignored_keys"):
            val = data.get(key)
            if val is not None and not isinstance(val, (str, bytes)) and hasattr(val, "__iter__"):
                data[key] = tuple(val)
        if "ignored_keys" in data and data["ignored_keys"] is None:
            data["ignored_keys"] = ()
        return cls(**data)

    def describe(self) -> str:
        """One line: the rule and its main parameters."""
        s = f"{self.rule} x{self.factor:g}"
        if self.original_max_position_embeddings:
            s += f" from {self.original_max_position_embeddings:,}"
        if self.rule == "yarn":
            s += f" (beta_fast {self.beta_fast:g}, beta_slow {self.beta_slow:g}" + \
                ("" if self.truncate else ", truncate false") + ")"
        if self.rule == "llama3":
            s += f" (low {self.low_freq_factor:g}, high {self.high_freq_factor:g})"
        if self.rule == "longrope":
            s += f" ({len(self.short_factor)} short / long factors)"
        if self.ignored_keys:
            s += f"; ignored keys: {', '.join(self.ignored_keys)}"
        return s

    @classmethod
    def from_hf(cls, block, *, field_name: str = "rope_scaling", max_position_embeddings: int | None = None,
                original_max_position_embeddings: int | None = None, pairs: int | None = None) -> "Scaling | None":
        """Read a transformers ``rope_scaling`` / ``rope_parameters`` block (``None`` or ``"default"``: no scaling).

        Errors name the field as ``<field_name>.<key>``; one reader per rule (:mod:`ropegeo.scaling.hf`).
        """
        kw = read_block(block, field_name=field_name, max_position_embeddings=max_position_embeddings,
                        original_max_position_embeddings=original_max_position_embeddings, pairs=pairs)
        return None if kw is None else cls(**kw)


def _linear(sc: Scaling, head_dim: int, base: float, seq_len: int | None) -> tuple[np.ndarray, float]:
    return linear(frequencies(head_dim, base), sc.factor), 1.0


def _ntk(sc: Scaling, head_dim: int, base: float, seq_len: int | None) -> tuple[np.ndarray, float]:
    return ntk(head_dim, base, sc.factor), 1.0


def _dynamic(sc: Scaling, head_dim: int, base: float, seq_len: int | None) -> tuple[np.ndarray, float]:
    return dynamic_ntk(head_dim, base, sc.factor, sc.original_max_position_embeddings, seq_len), 1.0


def _yarn(sc: Scaling, head_dim: int, base: float, seq_len: int | None) -> tuple[np.ndarray, float]:
    return yarn(head_dim, base, sc.factor, sc.original_max_position_embeddings, beta_fast=sc.beta_fast,
                beta_slow=sc.beta_slow, truncate=sc.truncate, attention_factor=sc.attention_factor,
                mscale=sc.mscale, mscale_all_dim=sc.mscale_all_dim)


def _longrope(sc: Scaling, head_dim: int, base: float, seq_len: int | None) -> tuple[np.ndarray, float]:
    theta, att = longrope(head_dim, base, sc.short_factor, sc.long_factor, sc.original_max_position_embeddings,
                          factor=sc.factor, seq_len=seq_len, attention_factor=sc.attention_factor)
    # Phi-3.5-MoE: the pass's own mscale replaces the attention factor (as the short/long factors switch)
    long = seq_len is not None and seq_len > sc.original_max_position_embeddings
    mscale = sc.long_mscale if long else sc.short_mscale
    return theta, (att if mscale is None else mscale)


def _llama3(sc: Scaling, head_dim: int, base: float, seq_len: int | None) -> tuple[np.ndarray, float]:
    return llama3(head_dim, base, sc.factor, sc.original_max_position_embeddings, low_freq_factor=sc.low_freq_factor,
                  high_freq_factor=sc.high_freq_factor), 1.0


#: The one rule table, like transformers' ``ROPE_INIT_FUNCTIONS``: rule name ->
#: ``f(scaling, head_dim, base, seq_len) -> (theta, attention_factor)``, read by :func:`scaled_frequencies`.
RULE_FUNCTIONS = {"linear": _linear, "ntk": _ntk, "dynamic": _dynamic, "yarn": _yarn, "longrope": _longrope,
                  "llama3": _llama3}


def scaled_frequencies(scaling: Scaling | None, head_dim: int, base: float, seq_len: int | None = None) -> tuple[np.ndarray, float]:
    """Per-pair frequencies and attention factor of a rule (``None``: the plain schedule) read at ``seq_len``.

    >>> theta, att = scaled_frequencies(Scaling("linear", factor=4.0), 8, 10_000.0)
    >>> theta.round(4).tolist(), att
    ([0.25, 0.025, 0.0025, 0.0002], 1.0)
    """
    d = _dim(head_dim)
    if seq_len is not None:
        seq_len = v.length("seq_len", seq_len, minimum=1)
    if scaling is None:
        return frequencies(d, base), 1.0
    if not isinstance(scaling, Scaling):
        raise ValueError(f"scaling must be a ropegeo.scaling.Scaling or None, got {type(scaling).__name__}")
    scaling.check_pairs(d // 2)
    return RULE_FUNCTIONS[scaling.rule](scaling, d, base, seq_len)


def _configure(rule, train: int, s: float, longrope_factors, params: dict, what: str = "rule") -> Scaling | None:
    """The one builder of "rule R stretching ``train`` by ``s``" (``None``: raw extrapolation)."""
    name = rule_name("none" if rule is None else rule, what)
    if name == "none":
        return None
    kw: dict[str, Any] = {"rule": name, "factor": s}
    if name not in ("linear", "ntk"):
        kw[_L] = train
    if name == "llama3":
        kw |= {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
    if name == "longrope":
        if longrope_factors is None:
            raise ValueError("longrope_factors=(short_factor, long_factor) is required for the longrope rule")
        if isinstance(longrope_factors, (str, bytes)) or not hasattr(longrope_factors, "__len__") \
                or len(longrope_factors) != 2:
            raise ValueError("longrope_factors must be a pair (short_factor, long_factor) of lists")
        kw["short_factor"], kw["long_factor"] = longrope_factors
    unknown = sorted(set(params) - {f.name for f in fields(Scaling)} - {"rule", "ignored_keys"})
    if unknown:
        takes = _PARAMS[name][1] + tuple(_PARAMS[name][0][2:])
        raise ValueError(f"got unknown parameter(s) {', '.join(map(repr, unknown))}; the {name} rule takes "
                         + (", ".join(takes) if takes else "no further parameters"))
    return Scaling(**(kw | params))


def preset(rule: str | None, *, train_length: int, target_length: int, longrope_factors=None,
           **params) -> Scaling | None:
    """A rule configured to stretch ``train_length`` to ``target_length`` (``factor = target / train``).

    ``rule``: a name of :data:`~ropegeo.scaling.RULES`, an alias, or ``None`` / ``"none"`` (raw
    extrapolation: returns ``None``); ``longrope_factors=(short, long)`` for ``"longrope"``.

    >>> preset("pi", train_length=64, target_length=256).describe()
    'linear x4'
    """
    train = v.length("train_length", train_length, minimum=2)
    target = v.length("target_length", target_length, minimum=2)
    if target < train:
        raise ValueError(f"target_length must be at least train_length ({train}), got {target}")
    return _configure(rule, train, target / train, longrope_factors, params)


class Schedule(NamedTuple):
    """A frequency schedule as a head is run under it: ``(theta, scale, attention_factor, rule)`` (``scale`` multiplies positions)."""

    theta: np.ndarray
    scale: float
    attention_factor: float
    rule: str


def extension_schedule(extension: str, *, head_dim: int, base: float, train_length: int, length: int,
                       factor: float | None = None, longrope_factors=None, **params) -> Schedule:
    """Rule ``extension`` stretching ``train_length`` to ``factor * train_length``, read at ``length``.

    ``factor`` (1 to ``MAX_FACTOR``) defaults to ``max(1, length / train_length)``; ``dynamic`` with
    ``factor=1`` is the base following the length alone. ``linear`` is a position scale ``1 / s``.

    >>> sch = extension_schedule("pi", head_dim=8, base=10_000.0, train_length=64, length=256)
    >>> sch.rule, sch.scale, sch.attention_factor
    ('linear', 0.25, 1.0)
    """
    name = rule_name(extension, "extension")
    head_dim = v.head_dim(head_dim)
    train = v.length("train_length", train_length, minimum=2)
    length = v.length("length", length, minimum=2)
    if factor is None:
        factor = max(1.0, length / train)
        if factor > MAX_FACTOR:
            raise ValueError(f"length / train_length must be at most {MAX_FACTOR:g} (the largest extension "
                             f"factor) when factor is not given, got {length} / {train}")
    s = v.real("factor", factor, minimum=1.0, maximum=MAX_FACTOR)
    sc = _configure(name, train, s, longrope_factors, params, "extension")
    if name in ("none", "linear") or (s == 1.0 and name not in ("dynamic", "longrope")):
        # every rule but dynamic and longrope is the training schedule at s = 1; linear is the same phases as
        # theta / s, expressed as a position scale
        return Schedule(frequencies(head_dim, v.base(base)), 1.0 / s if name == "linear" else 1.0, 1.0, name)
    theta, att = scaled_frequencies(sc, head_dim, base, seq_len=length)
    return Schedule(theta, 1.0, float(att), name)
