"""One configured rule (:class:`~ropegeo.scaling.Scaling`), and the frequencies it serves.

:class:`~ropegeo.scaling.Scaling` holds a rule with every parameter checked;
:func:`~ropegeo.scaling.scaled_frequencies` dispatches to the formulas of
:mod:`ropegeo.scaling.rules`; :func:`~ropegeo.scaling.preset` configures a rule for a target
length.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies
from ropegeo.scaling.hf import read_block
from ropegeo.scaling.rules import RULES, _dim, _factor, _factors, _pos, dynamic_ntk, linear, llama3, longrope, ntk, yarn

# parameters that can be stored per rule (every other field must stay at its default)
_PARAMS = {
    "linear": {"factor"},
    "ntk": {"factor"},
    "dynamic": {"factor", "original_max_position_embeddings"},
    "yarn": {
        "factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
        "mscale", "mscale_all_dim", "truncate",
    },
    "longrope": {"factor", "original_max_position_embeddings", "attention_factor", "short_factor", "long_factor",
                 "short_mscale", "long_mscale"},
    "llama3": {"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"},
}
_REQUIRED = {
    "linear": ("factor",),
    "ntk": ("factor",),
    "dynamic": ("factor", "original_max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings"),
    "longrope": ("factor", "original_max_position_embeddings", "short_factor", "long_factor"),
    "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
}


@dataclass(frozen=True)
class Scaling:
    """A context-extension rule with every parameter resolved.

    Parameters
    ----------
    rule : {"linear", "ntk", "dynamic", "yarn", "longrope", "llama3"}
    factor : float
        The extension factor ``s`` (positive). For LongRoPE it only sets the default attention
        factor; for YaRN it also sets the interpolated end of the ramp.
    original_max_position_embeddings : int
        The pre-training context ``L`` (positive). Not used by ``linear`` and ``ntk``. For
        ``dynamic`` it is the length beyond which the base starts to grow (transformers uses the
        config's ``max_position_embeddings`` there, and :meth:`from_hf` stores that).
    attention_factor : float, optional
        Explicit attention factor (YaRN, LongRoPE); ``None`` computes the rule's default.
    beta_fast, beta_slow : float
        YaRN's ramp ends, in turns over ``L`` (defaults 32 and 1).
    mscale, mscale_all_dim : float, optional
        YaRN's DeepSeek-style attention factor ``mscale(s, mscale) / mscale(s, mscale_all_dim)``,
        used when both are non-zero.
    truncate : bool
        YaRN: round the ramp ends outward to whole pairs (default True, as transformers).
    short_factor, long_factor : tuple of float
        LongRoPE's per-pair divisors (one per rotary pair).
    short_mscale, long_mscale : float, optional
        LongRoPE as Phi-3.5-MoE runs it (transformers' ``PhimoeRotaryEmbedding``): the factor cos
        and sin are multiplied by for a forward pass of at most / more than the original length.
        Given, it replaces the attention factor for those passes.
    low_freq_factor, high_freq_factor : float
        Llama-3's band edges: wavelengths above ``L / low_freq_factor`` are divided by ``factor``,
        below ``L / high_freq_factor`` untouched.
    ignored_keys : tuple of str
        Keys of the source configuration block that the rule does not read (kept for the record).

    Raises
    ------
    ValueError
        For an unknown rule, a missing required parameter, a parameter the rule does not take, or a
        value out of range; the message names the parameter.
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
        set_ = object.__setattr__
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(map(repr, RULES))}, got {self.rule!r}")
        allowed = _PARAMS[self.rule]
        defaults = {f.name: f.default for f in fields(self) if f.name not in ("rule", "ignored_keys")}
        for name, default in defaults.items():
            if name not in allowed and getattr(self, name) != default:
                raise ValueError(f"{self.rule} scaling takes no parameter {name!r}; it takes {', '.join(sorted(allowed))}")
        for name in _REQUIRED[self.rule]:
            if getattr(self, name) is None:
                raise ValueError(f"{self.rule} scaling needs {name}")
        set_(self, "factor", _factor(self.factor))
        if self.original_max_position_embeddings is not None:
            set_(self, "original_max_position_embeddings",
                 v.length("original_max_position_embeddings", self.original_max_position_embeddings, minimum=1))
        if self.attention_factor is not None:
            set_(self, "attention_factor", _pos("attention_factor", self.attention_factor))
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
            if self.original_max_position_embeddings < 2:
                raise ValueError("original_max_position_embeddings must be at least 2 for yarn")
        if self.rule == "longrope":
            set_(self, "short_factor", _factors("short_factor", self.short_factor))
            set_(self, "long_factor", _factors("long_factor", self.long_factor))
            for name in ("short_mscale", "long_mscale"):
                if getattr(self, name) is not None:
                    set_(self, name, _pos(name, getattr(self, name)))
            if len(self.short_factor) != len(self.long_factor):
                raise ValueError(
                    f"short_factor and long_factor must have the same length (one entry per rotary pair), "
                    f"got {len(self.short_factor)} and {len(self.long_factor)}"
                )
        if self.rule == "llama3":
            lo = _pos("low_freq_factor", self.low_freq_factor)
            hi = _pos("high_freq_factor", self.high_freq_factor)
            if hi < lo:
                raise ValueError(f"high_freq_factor must not be below low_freq_factor, got {hi:g} < {lo:g}")
            set_(self, "low_freq_factor", lo)
            set_(self, "high_freq_factor", hi)
        keys = self.ignored_keys
        if isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
            raise ValueError(f"ignored_keys must be a list of key names, got {keys!r}")
        set_(self, "ignored_keys", tuple(str(k) for k in keys))

    # ---------------------------------------------------------------- checks and forms
    def check_pairs(self, pairs: int) -> None:
        """Raise a ValueError if per-pair lists do not have ``pairs`` entries (LongRoPE)."""
        if self.rule == "longrope" and len(self.short_factor) != pairs:
            raise ValueError(
                f"short_factor and long_factor must have one entry per rotary pair ({pairs}), "
                f"got {len(self.short_factor)}"
            )
        if self.rule in ("ntk", "dynamic") and pairs < 2:
            raise ValueError(f"{self.rule} scaling needs a rotary dimension of at least 4 (d / (d - 2) is undefined at d = 2)")

    def to_dict(self) -> dict:
        """The rule and the parameters it uses, JSON-ready."""
        out: dict[str, Any] = {"rule": self.rule}
        for name in sorted(_PARAMS[self.rule]):
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
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
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

    # ---------------------------------------------------------------- reading transformers blocks
    @classmethod
    def from_hf(
        cls,
        block,
        *,
        field_name: str = "rope_scaling",
        max_position_embeddings: int | None = None,
        original_max_position_embeddings: int | None = None,
        pairs: int | None = None,
    ) -> "Scaling | None":
        """Read a transformers ``rope_scaling`` / ``rope_parameters`` block.

        Parameters
        ----------
        block : dict or None
            The block; ``None`` or a ``"default"`` type means no scaling.
        field_name : str
            Its name in the configuration, used in error messages.
        max_position_embeddings : int, optional
            The configuration's top-level ``max_position_embeddings``.
        original_max_position_embeddings : int, optional
            The configuration's top-level ``original_max_position_embeddings`` (Phi-3 style).
        pairs : int, optional
            Number of rotary pairs, to check LongRoPE's list lengths.

        Returns
        -------
        Scaling or None

        Raises
        ------
        ValueError
            For an unknown type, a missing or malformed field; the message names the field as
            ``rope_scaling.<key>``.

        Notes
        -----
        As in transformers: the type is ``rope_type``, else the legacy ``type``; ``"su"`` means
        LongRoPE. Each rule has its own reader (in :mod:`ropegeo.scaling.hf`, keyed by rule name as
        transformers keys ``ROPE_INIT_FUNCTIONS``), whose comments say where ropegeo follows which
        transformers release.
        """
        kw = read_block(block, field_name=field_name, max_position_embeddings=max_position_embeddings,
                        original_max_position_embeddings=original_max_position_embeddings, pairs=pairs)
        return None if kw is None else cls(**kw)


# ------------------------------------------------------------------------------------ dispatch
def _linear(sc: Scaling, base: float, d: int, seq_len: int | None) -> tuple[np.ndarray, float]:
    return linear(frequencies(d, base), sc.factor), 1.0


def _ntk(sc: Scaling, base: float, d: int, seq_len: int | None) -> tuple[np.ndarray, float]:
    return ntk(base, d, sc.factor), 1.0


def _dynamic(sc: Scaling, base: float, d: int, seq_len: int | None) -> tuple[np.ndarray, float]:
    return dynamic_ntk(base, d, sc.factor, sc.original_max_position_embeddings, seq_len), 1.0


def _yarn(sc: Scaling, base: float, d: int, seq_len: int | None) -> tuple[np.ndarray, float]:
    return yarn(base, d, sc.factor, sc.original_max_position_embeddings, beta_fast=sc.beta_fast,
                beta_slow=sc.beta_slow, truncate=sc.truncate, attention_factor=sc.attention_factor,
                mscale=sc.mscale, mscale_all_dim=sc.mscale_all_dim)


def _longrope(sc: Scaling, base: float, d: int, seq_len: int | None) -> tuple[np.ndarray, float]:
    theta, att = longrope(base, d, sc.short_factor, sc.long_factor, sc.original_max_position_embeddings,
                          factor=sc.factor, seq_len=seq_len, attention_factor=sc.attention_factor)
    # Phi-3.5-MoE: the pass's own mscale replaces the attention factor (as the short/long factors switch)
    long = seq_len is not None and seq_len > sc.original_max_position_embeddings
    mscale = sc.long_mscale if long else sc.short_mscale
    return theta, (att if mscale is None else mscale)


def _llama3(sc: Scaling, base: float, d: int, seq_len: int | None) -> tuple[np.ndarray, float]:
    return llama3(base, d, sc.factor, sc.original_max_position_embeddings, low_freq_factor=sc.low_freq_factor,
                  high_freq_factor=sc.high_freq_factor), 1.0


#: The one rule table, like transformers' ``ROPE_INIT_FUNCTIONS``: rule name ->
#: ``f(scaling, base, rotary_dim, seq_len) -> (theta, attention_factor)``. :func:`scaled_frequencies`,
#: :func:`~ropegeo.scaling.extension_schedule` and :func:`~ropegeo.extension.extension_report` all
#: dispatch through it, and the JavaScript core of the labs is tested against it.
RULE_FUNCTIONS = {"linear": _linear, "ntk": _ntk, "dynamic": _dynamic, "yarn": _yarn, "longrope": _longrope,
                  "llama3": _llama3}


def scaled_frequencies(scaling: Scaling | None, base: float, rotary_dim: int, seq_len: int | None = None) -> tuple[np.ndarray, float]:
    """Per-pair inverse frequencies and attention factor of a rule (through :data:`RULE_FUNCTIONS`).

    Parameters
    ----------
    scaling : Scaling or None
        ``None`` gives the plain schedule and factor 1.
    base : float
        The frequency base ``B > 1``.
    rotary_dim : int
        Even rotary width.
    seq_len : int, optional
        Current sequence length; read by ``dynamic`` and ``longrope`` only.

    Returns
    -------
    theta : numpy.ndarray, shape (rotary_dim // 2,), float64
    attention_factor : float

    Examples
    --------
    >>> theta, att = scaled_frequencies(Scaling("linear", factor=4.0), 10_000.0, 8)
    >>> theta.round(4).tolist(), att
    ([0.25, 0.025, 0.0025, 0.0002], 1.0)
    """
    d = _dim(rotary_dim)
    if seq_len is not None:
        seq_len = v.length("seq_len", seq_len, minimum=1)
    if scaling is None:
        return frequencies(d, base), 1.0
    if not isinstance(scaling, Scaling):
        raise ValueError(f"scaling must be a ropegeo.scaling.Scaling or None, got {type(scaling).__name__}")
    scaling.check_pairs(d // 2)
    return RULE_FUNCTIONS[scaling.rule](scaling, base, d, seq_len)


def rope_parameters(manifest, seq_len: int | None = None) -> tuple[np.ndarray, float]:
    """``(theta, attention_factor)`` of a :class:`ropegeo.models.manifest.RopeManifest` at ``seq_len``."""
    return scaled_frequencies(manifest.scaling, manifest.base, manifest.rotary_dim, seq_len)


def preset(rule: str | None, *, train_length: int, target_length: int, longrope_factors=None,
           **params) -> Scaling | None:
    """A rule configured to stretch ``train_length`` to ``target_length`` (``s = target / train``).

    Parameters
    ----------
    rule : {None, "none", "linear", "ntk", "dynamic", "yarn", "longrope", "llama3"}
        ``None`` / ``"none"``: raw extrapolation (returns ``None``).
    train_length, target_length : int
        At least 2; ``target_length >= train_length``.
    longrope_factors : (short, long), optional
        Required for ``"longrope"``: the two per-pair lists (e.g. a real model's).
    **params
        Further parameters of the rule (e.g. ``beta_fast``, ``low_freq_factor``).

    Returns
    -------
    Scaling or None
    """
    train = v.length("train_length", train_length, minimum=2)
    target = v.length("target_length", target_length, minimum=2)
    if target < train:
        raise ValueError(f"target_length must be at least train_length ({train}), got {target}")
    if rule in (None, "none"):
        return None
    if rule not in RULES:
        raise ValueError(f"rule must be None, 'none' or one of {', '.join(map(repr, RULES))}, got {rule!r}")
    s = target / train
    kw: dict[str, Any] = {"rule": rule, "factor": s}
    if rule in ("dynamic", "yarn", "longrope", "llama3"):
        kw["original_max_position_embeddings"] = train
    if rule == "llama3":
        kw.setdefault("low_freq_factor", 1.0)
        kw.setdefault("high_freq_factor", 4.0)
    if rule == "longrope":
        if longrope_factors is None:
            raise ValueError("longrope_factors=(short_factor, long_factor) is required for the longrope preset")
        if isinstance(longrope_factors, (str, bytes)) or not hasattr(longrope_factors, "__len__") \
                or len(longrope_factors) != 2:
            raise ValueError("longrope_factors must be a pair (short_factor, long_factor) of lists")
        kw["short_factor"], kw["long_factor"] = longrope_factors
    unknown = sorted(set(params) - {f.name for f in fields(Scaling)} - {"rule", "ignored_keys"})
    if unknown:
        takes = sorted(_PARAMS[rule] - {"factor", "original_max_position_embeddings"})
        raise ValueError(f"preset got unknown parameter(s) {', '.join(map(repr, unknown))}; the {rule} rule takes "
                         + (", ".join(takes) if takes else "no further parameters"))
    kw.update(params)
    return Scaling(**kw)


