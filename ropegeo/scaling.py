"""Context-extension rules: each one a new ruler for the same rotary machinery.

A model trained on sequences of ``L`` tokens is asked to serve ``s * L``. Every rule below answers
the question "what should pair ``i`` turn by per position now?" differently, and some also ask for
an *attention factor* ``m`` that multiplies cos and sin (so the attention logits grow by ``m**2``).

=============  ===============================================================================
rule           per-pair inverse frequency ``theta'_i`` (``theta_i = B ** (-2 i / d)``)
=============  ===============================================================================
(none)         ``theta_i``: raw extrapolation, every pair travels ``s`` times farther
``linear``     ``theta_i / s``: position interpolation (PI)
``ntk``        ``B' ** (-2 i / d)`` with ``B' = B * s ** (d / (d - 2))``: NTK-aware base change
``dynamic``    NTK with ``s`` replaced by ``s * n / L - (s - 1)`` for the current length ``n > L``
``yarn``       a per-pair blend of ``theta_i`` and ``theta_i / s`` along a ramp between the pairs
               that turn ``beta_fast`` and ``beta_slow`` times over ``L``; ``m = 0.1 ln s + 1``
``longrope``   ``theta_i / f_i`` with searched per-pair factors: ``short_factor`` up to ``L``,
               ``long_factor`` beyond; ``m = sqrt(1 + ln s / ln L)``
``llama3``     pairs with wavelength below ``L / high_freq_factor`` untouched, above
               ``L / low_freq_factor`` divided by ``s``, a smooth blend in between
=============  ===============================================================================

The formulas, defaults and edge cases follow Hugging Face transformers' ``modeling_rope_utils.py``
(the ``rope_scaling`` era, v4.4x-v4.5x, and its v5 ``rope_parameters`` successor where they agree),
checked to float32 rounding in ``tests/test_scaling.py`` against an independent float32
transliteration. Where ropegeo deliberately differs the docstring says so:

* ``ntk`` (the static base change of bloc97's post) is not a transformers rope type; transformers
  only ships its dynamic form. ropegeo offers both, and :meth:`Scaling.from_hf` refuses ``"ntk"``.
* Llama-3 with ``high_freq_factor <= low_freq_factor`` is refused (transformers only warns, then
  divides by zero in the smooth factor).
* An odd rotary width is refused (transformers silently builds ``ceil(dim / 2)`` frequencies
  over an odd exponent denominator, which no rotary layout can apply).

Everything is float64; the tests compare with float32 reference values at a relative tolerance
of a few float32 ulps.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, NamedTuple

import numpy as np

from . import _validate as v
from .frequencies import TWO_PI, frequencies, wavelengths

__all__ = [
    "RULES",
    "Scaling",
    "rope_parameters",
    "scaled_frequencies",
    "linear",
    "ntk",
    "dynamic_ntk",
    "yarn",
    "yarn_ramp",
    "yarn_mscale",
    "longrope",
    "llama3",
    "preset",
    "phase_novelty",
    "ExtensionReport",
    "extension_report",
    "text_table",
]

RULES = ("linear", "ntk", "dynamic", "yarn", "longrope", "llama3")

#: rope type names of transformers configs -> ropegeo rule (None: the plain schedule).
HF_TYPES = {
    "default": None,
    "linear": "linear",
    "dynamic": "dynamic",
    "yarn": "yarn",
    "longrope": "longrope",
    "su": "longrope",  # Phi-3's first configs; transformers maps it to longrope
    "llama3": "llama3",
}

#: the keys of a transformers scaling block each rule reads (besides the type name).
HF_KEYS = {
    "linear": ("factor",),
    "dynamic": ("factor",),
    "yarn": (
        "factor", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
        "original_max_position_embeddings", "truncate",
    ),
    "longrope": ("short_factor", "long_factor", "factor", "attention_factor", "original_max_position_embeddings"),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
}
_NAME_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor")

# parameters that can be stored per rule (every other field must stay at its default)
_PARAMS = {
    "linear": {"factor"},
    "ntk": {"factor"},
    "dynamic": {"factor", "original_max_position_embeddings"},
    "yarn": {
        "factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
        "mscale", "mscale_all_dim", "truncate",
    },
    "longrope": {"factor", "original_max_position_embeddings", "attention_factor", "short_factor", "long_factor"},
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


#: Largest scale factor accepted (real extensions use 2 to a few hundred).
MAX_FACTOR = 1e6


#: Smallest positive parameter accepted (factors, betas, per-pair factors): far below any real
#: setting, and large enough that no division by it overflows.
MIN_PARAMETER = 1e-6


def _pos(name: str, value) -> float:
    return v.real(name, value, minimum=MIN_PARAMETER, maximum=MAX_FACTOR)


def _factor(value, name: str = "factor") -> float:
    return v.real(name, value, minimum=MIN_PARAMETER, maximum=MAX_FACTOR)


def _factors(name: str, value) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise ValueError(f"{name} must be a list of positive numbers (one per rotary pair), got {value!r}")
    arr = v.finite_array(name, value)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a flat, non-empty list of numbers, got shape {arr.shape}")
    bad = (arr < MIN_PARAMETER) | (arr > MAX_FACTOR)
    if np.any(bad):
        raise ValueError(f"{name} must hold numbers from {MIN_PARAMETER:g} to {MAX_FACTOR:g}; "
                         f"entry {int(np.argmax(bad))} is {arr[bad][0]:g}")
    return tuple(float(x) for x in arr)


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
            if len(self.short_factor) != len(self.long_factor):
                raise ValueError(
                    f"short_factor and long_factor must have the same length (one entry per rotary pair), "
                    f"got {len(self.short_factor)} and {len(self.long_factor)}"
                )
        if self.rule == "llama3":
            lo = _pos("low_freq_factor", self.low_freq_factor)
            hi = _pos("high_freq_factor", self.high_freq_factor)
            if not hi > lo:
                raise ValueError(
                    f"high_freq_factor must be greater than low_freq_factor, got {hi:g} <= {lo:g} "
                    "(the smooth band would divide by zero)"
                )
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
        LongRoPE. Each rule has its own reader (``_BLOCK_READERS``, keyed by rule name as
        transformers keys ``ROPE_INIT_FUNCTIONS``), whose comments say where ropegeo follows which
        transformers release.
        """
        if block is None:
            return None
        if not isinstance(block, Mapping):
            raise ValueError(f"{field_name} must be a dict or null, got {type(block).__name__}")
        kind = block.get("rope_type", block.get("type"))
        if kind is None:
            if field_name != "rope_parameters":
                raise ValueError(f"{field_name}.rope_type is missing (neither 'rope_type' nor 'type' is set)")
            kind = "default"
        if not isinstance(kind, str) or kind not in HF_TYPES:
            raise ValueError(
                f"{field_name}.rope_type {kind!r} is not a known rope type; known: {', '.join(sorted(HF_TYPES))}"
            )
        rule = HF_TYPES[kind]
        if rule is None:
            return None
        src = _Block(block, f"{field_name}.", kind, max_position_embeddings, original_max_position_embeddings, pairs)
        kw = _BLOCK_READERS[rule](src)
        ignored = {k for k in block if k not in HF_KEYS[rule] and k not in _NAME_KEYS} | kw.pop("unused", set())
        return cls(rule=rule, ignored_keys=tuple(sorted(ignored)), **kw)


# ------------------------------------------------------------------------------------ reading blocks
# One reader per rule, keyed by rule name as transformers keys ROPE_INIT_FUNCTIONS; each returns the
# Scaling parameters it read (``unused``: keys present in the block that the rule ignores).

@dataclass(frozen=True)
class _Block:
    """A transformers scaling block and what its reader may need from the rest of the config."""

    data: Mapping
    where: str
    kind: str
    max_pos: int | None
    top_orig: int | None
    pairs: int | None

    def need(self, key):
        if self.data.get(key) is None:
            raise ValueError(f"{self.where}{key} is required for {self.kind} scaling")
        return self.data[key]

    def number(self, key, val=None, *, allow_zero=False) -> float:
        val = self.data[key] if val is None else val
        try:
            finite = not isinstance(val, bool) and isinstance(val, numbers.Real) and math.isfinite(float(val))
        except OverflowError:  # an integer literal beyond the float range
            finite = False
        if not finite:
            raise ValueError(f"{self.where}{key} must be a finite number, got {val!r}")
        if val < 0 or (val == 0 and not allow_zero):
            raise ValueError(f"{self.where}{key} must be greater than 0, got {val!r}")
        if not (allow_zero and val == 0) and not MIN_PARAMETER <= val <= MAX_FACTOR:
            raise ValueError(f"{self.where}{key} must be from {MIN_PARAMETER:g} to {MAX_FACTOR:g}, got {val!r}")
        return float(val)

    def length(self, key) -> int | None:
        val = self.data.get(key)
        if val is None:
            return None
        if (isinstance(val, bool) or not isinstance(val, numbers.Real) or not 1 <= val <= v.MAX_LENGTH
                or not float(val).is_integer()):
            raise ValueError(f"{self.where}{key} must be a positive integer up to {v.MAX_LENGTH:,}, got {val!r}")
        return int(val)

    def original(self) -> int:
        """The block's pre-training length, else the config's ``max_position_embeddings``."""
        orig = self.length("original_max_position_embeddings") or self.max_pos
        if orig is None:
            raise ValueError(f"{self.where}original_max_position_embeddings (or max_position_embeddings) is "
                             f"required for {self.kind}")
        return orig


def _read_linear(b: _Block) -> dict:
    return {"factor": b.number("factor", b.need("factor"))}


def _read_dynamic(b: _Block) -> dict:
    # transformers thresholds dynamic NTK at the config's max_position_embeddings, not the block's length
    if b.max_pos is None:
        raise ValueError("max_position_embeddings is required for dynamic scaling (it is the threshold length)")
    unused = {"original_max_position_embeddings"} & set(b.data)
    return {"factor": b.number("factor", b.need("factor")), "original_max_position_embeddings": b.max_pos,
            "unused": unused}


def _read_llama3(b: _Block) -> dict:
    lo = b.number("low_freq_factor", b.need("low_freq_factor"))
    hi = b.number("high_freq_factor", b.need("high_freq_factor"))
    if hi <= lo:
        raise ValueError(f"{b.where}high_freq_factor ({hi:g}) must be greater than {b.where}low_freq_factor ({lo:g})")
    b.need("original_max_position_embeddings")
    return {"factor": b.number("factor", b.need("factor")), "low_freq_factor": lo, "high_freq_factor": hi,
            "original_max_position_embeddings": b.length("original_max_position_embeddings")}


def _yarn_beta(b: _Block, key: str, default: float) -> float:
    # the reference reads `block.get(key) or default`: absent, null and 0 mean the default. Other
    # non-numbers ("", false, []) are refused rather than silently defaulted: they can only be mistakes.
    val = b.data.get(key)
    if val is not None and not (isinstance(val, numbers.Real) and not isinstance(val, bool)):
        raise ValueError(f"{b.where}{key} must be a number (or absent for the default {default:g}), got {val!r}")
    return default if not val else b.number(key, val)


def _read_yarn(b: _Block) -> dict:
    # Betas fall back to 32 / 1 when absent or zero, truncate to True; the length is the block's,
    # else max_position_embeddings. The block's factor wins: some 2025 transformers releases replaced
    # it by max / original whenever the block named an original length (huggingface/transformers
    # issue 38224, fixed by pull request 40320), turning Qwen2.5's documented block into no scaling;
    # ropegeo follows the fix and uses the ratio only when the block has no factor (as v5).
    orig = b.original()
    if b.data.get("factor") is not None:
        factor = b.number("factor")
    elif b.max_pos is not None and b.length("original_max_position_embeddings") is not None:
        factor = b.max_pos / orig  # transformers v5 when the block names no factor
    else:
        raise ValueError(f"{b.where}factor is required for yarn scaling")
    kw = {"factor": factor, "original_max_position_embeddings": orig,
          "beta_fast": _yarn_beta(b, "beta_fast", 32.0), "beta_slow": _yarn_beta(b, "beta_slow", 1.0)}
    if kw["beta_fast"] < kw["beta_slow"]:
        raise ValueError(f"{b.where}beta_fast ({kw['beta_fast']:g}) is below {b.where}beta_slow "
                         f"({kw['beta_slow']:g}): the ramp would run backwards (fast pairs turn more often than slow ones)")
    if b.data.get("attention_factor") is not None:
        kw["attention_factor"] = b.number("attention_factor")
    for key in ("mscale", "mscale_all_dim"):
        if b.data.get(key) is not None:
            kw[key] = b.number(key, allow_zero=True)
    tr = b.data.get("truncate", True)
    if not isinstance(tr, bool):
        raise ValueError(f"{b.where}truncate must be true or false, got {tr!r}")
    return {**kw, "truncate": tr}


def _read_longrope(b: _Block) -> dict:
    # A top-level original length (transformers 4.x, Phi-3) sets factor = max / original whatever
    # the block says; without one, the block's length and factor are read (as v5).
    kw: dict[str, Any] = {"unused": set()}
    for key in ("short_factor", "long_factor"):
        kw[key] = _factors(f"{b.where}{key}", b.need(key))
        if b.pairs is not None and len(kw[key]) != b.pairs:
            raise ValueError(f"{b.where}{key} must have one entry per rotary pair ({b.pairs}), got {len(kw[key])}")
    if b.top_orig is not None:  # Phi-3 (transformers 4.x): the factor is the ratio of the two lengths
        if b.max_pos is None:
            raise ValueError("max_position_embeddings is required with original_max_position_embeddings")
        kw.update(original_max_position_embeddings=b.top_orig, factor=b.max_pos / b.top_orig)
        kw["unused"] = {"factor"} & set(b.data)
    else:
        kw["original_max_position_embeddings"] = orig = b.original()
        if b.data.get("factor") is not None:
            kw["factor"] = b.number("factor")
        elif b.max_pos is not None and b.length("original_max_position_embeddings") is not None:
            kw["factor"] = b.max_pos / orig
        else:
            raise ValueError(f"{b.where}factor is required for longrope when original_max_position_embeddings is not given")
    if b.data.get("attention_factor") is not None:
        kw["attention_factor"] = b.number("attention_factor")
    return kw


#: rule name -> reader of its transformers block.
_BLOCK_READERS = {"linear": _read_linear, "dynamic": _read_dynamic, "yarn": _read_yarn, "longrope": _read_longrope,
                  "llama3": _read_llama3}


# ------------------------------------------------------------------------------------ the rules
def _dim(rotary_dim) -> int:
    return v.head_dim(rotary_dim, "rotary_dim")


def linear(theta, factor: float) -> np.ndarray:
    """Position interpolation: ``theta / factor``.

    Dividing every frequency by ``s`` is the same as dividing every position by ``s``.

    Parameters
    ----------
    theta : array_like, shape (pairs,)
        Base frequencies.
    factor : float
        ``s > 0``.

    Returns
    -------
    numpy.ndarray, shape (pairs,)
    """
    th = v.finite_array("theta", theta)
    return th / _factor(factor)


def ntk(base: float, rotary_dim: int, factor: float) -> np.ndarray:
    """NTK-aware base change: the schedule of base ``B * s ** (d / (d - 2))``.

    The exponent makes the slowest pair exactly ``s`` times slower while the fastest pair keeps
    its frequency (the base change interpolates the slow end and extrapolates the fast end).

    Parameters
    ----------
    base : float
        ``B > 1``.
    rotary_dim : int
        ``d``, even, at least 4.
    factor : float
        ``s > 0``.

    Returns
    -------
    numpy.ndarray, shape (d // 2,)

    Notes
    -----
    transformers has no static ``"ntk"`` rope type; this is the formula of its dynamic rule with the
    length term replaced by ``s``.
    """
    d = _dim(rotary_dim)
    if d < 4:
        raise ValueError("rotary_dim must be at least 4 for NTK scaling (d / (d - 2) is undefined at d = 2)")
    base = v.base(base)
    s = _factor(factor)
    return frequencies(d, base * s ** (d / (d - 2)))


def dynamic_ntk(base: float, rotary_dim: int, factor: float, original_length: int, seq_len: int | None = None) -> np.ndarray:
    """Dynamic NTK: the NTK base recomputed from the current sequence length.

    ``B' = B * (s * n / L - (s - 1)) ** (d / (d - 2))`` with ``n = max(seq_len, L)``; for
    ``n <= L`` (or ``seq_len=None``) this is the plain schedule, as in transformers.

    Parameters
    ----------
    base : float
    rotary_dim : int
        Even, at least 4.
    factor : float
        ``s > 0``.
    original_length : int
        ``L``: transformers passes the config's ``max_position_embeddings``.
    seq_len : int, optional
        Current length ``n`` (at least 1).

    Returns
    -------
    numpy.ndarray, shape (rotary_dim // 2,)
    """
    d = _dim(rotary_dim)
    if d < 4:
        raise ValueError("rotary_dim must be at least 4 for dynamic NTK scaling")
    base = v.base(base)
    s = _factor(factor)
    L = v.length("original_length", original_length, minimum=1)
    n = L if seq_len is None else max(v.length("seq_len", seq_len, minimum=1), L)
    new_base = base * (s * n / L - (s - 1.0)) ** (d / (d - 2))
    if not new_base > 1.0:
        raise ValueError(f"factor={s:g} gives a dynamic base of {new_base:g} at seq_len={n}; it must stay above 1")
    return frequencies(d, new_base)


def yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's attention temperature term ``0.1 * mscale * ln(scale) + 1`` (1 for ``scale <= 1``)."""
    scale = _pos("scale", scale)
    mscale = v.real("mscale", mscale, minimum=0.0)
    return 1.0 if scale <= 1.0 else 0.1 * mscale * math.log(scale) + 1.0


def _correction_dim(turns: float, d: int, base: float, length: int) -> float:
    # the (fractional) pair index i, 0 <= i < d/2, whose frequency B^(-2i/d) turns `turns` times
    # over `length` positions (transformers' find_correction_dim computes the same quantity)
    return d * math.log(length / (turns * TWO_PI)) / (2.0 * math.log(base))


def yarn_ramp(base: float, rotary_dim: int, original_length: int, *, beta_fast: float = 32.0,
              beta_slow: float = 1.0, truncate: bool = True) -> np.ndarray:
    """YaRN's per-pair extrapolation weight: 1 keeps ``theta_i``, 0 takes ``theta_i / s``.

    Pairs that turn more than ``beta_fast`` times over the original length keep their frequency,
    pairs that turn fewer than ``beta_slow`` times are interpolated, and a linear ramp in the pair
    index joins them. The ramp ends are ``low = floor(c(beta_fast))`` and
    ``high = ceil(c(beta_slow))`` with ``c(r) = d ln(L / (2 pi r)) / (2 ln B)``, clipped to
    ``[0, d - 1]`` (no rounding when ``truncate=False``); the weight of pair ``i`` is
    ``1 - clip((i - low) / (high - low), 0, 1)``, with ``high`` nudged by 0.001 if it equals ``low``.

    Returns
    -------
    numpy.ndarray, shape (rotary_dim // 2,), values in [0, 1]
    """
    d = _dim(rotary_dim)
    base = v.base(base)
    L = v.length("original_length", original_length, minimum=2)
    bf = _pos("beta_fast", beta_fast)
    bs = _pos("beta_slow", beta_slow)
    low = _correction_dim(bf, d, base, L)
    high = _correction_dim(bs, d, base, L)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high = high + 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    return 1.0 - ramp


def yarn(base: float, rotary_dim: int, factor: float, original_length: int, *, beta_fast: float = 32.0,
         beta_slow: float = 1.0, truncate: bool = True, attention_factor: float | None = None,
         mscale: float | None = None, mscale_all_dim: float | None = None) -> tuple[np.ndarray, float]:
    """YaRN: per-pair blend of extrapolation and interpolation, plus an attention factor.

    ``theta'_i = theta_i * w_i + (theta_i / s) * (1 - w_i)`` with ``w`` from :func:`yarn_ramp`.
    The attention factor is ``attention_factor`` if given, else
    ``yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)`` when both are non-zero, else
    ``yarn_mscale(s)`` = ``0.1 ln s + 1``.

    Returns
    -------
    theta : numpy.ndarray, shape (rotary_dim // 2,)
    attention_factor : float
    """
    d = _dim(rotary_dim)
    s = _factor(factor)
    w = yarn_ramp(base, d, original_length, beta_fast=beta_fast, beta_slow=beta_slow, truncate=truncate)
    th = frequencies(d, base)
    out = th * w + (th / s) * (1.0 - w)
    if attention_factor is not None:
        att = _pos("attention_factor", attention_factor)
    elif mscale and mscale_all_dim:
        att = yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)
    else:
        att = yarn_mscale(s)
    return out, float(att)


def longrope(base: float, rotary_dim: int, short_factor, long_factor, original_length: int, *,
             factor: float, seq_len: int | None = None, attention_factor: float | None = None) -> tuple[np.ndarray, float]:
    """LongRoPE: per-pair divisors, short up to the original length, long beyond it.

    ``theta'_i = theta_i / f_i`` with ``f = long_factor`` when ``seq_len > L`` and ``short_factor``
    otherwise (a sequence of exactly ``L`` tokens, and ``seq_len=None``, use the short list).
    The attention factor is ``attention_factor`` if given, else 1 for ``factor <= 1`` and
    ``sqrt(1 + ln(factor) / ln(L))``.

    Returns
    -------
    theta : numpy.ndarray, shape (rotary_dim // 2,)
    attention_factor : float
    """
    d = _dim(rotary_dim)
    L = v.length("original_length", original_length, minimum=2)
    s = _factor(factor)
    short = np.asarray(_factors("short_factor", short_factor))
    long = np.asarray(_factors("long_factor", long_factor))
    for name, arr in (("short_factor", short), ("long_factor", long)):
        if arr.size != d // 2:
            raise ValueError(f"{name} must have one entry per rotary pair ({d // 2}), got {arr.size}")
    n = None if seq_len is None else v.length("seq_len", seq_len, minimum=1)
    ext = long if (n is not None and n > L) else short
    if attention_factor is not None:
        att = _pos("attention_factor", attention_factor)
    else:
        att = 1.0 if s <= 1.0 else math.sqrt(1.0 + math.log(s) / math.log(L))
    return frequencies(d, base) / ext, float(att)


def llama3(base: float, rotary_dim: int, factor: float, original_length: int, *, low_freq_factor: float = 1.0,
           high_freq_factor: float = 4.0) -> np.ndarray:
    """The Llama-3 rule: keep the fast pairs, divide the slow ones, blend the band between.

    With wavelength ``lambda_i = 2 pi / theta_i``: pairs with ``lambda_i < L / high_freq_factor``
    are untouched, pairs with ``lambda_i > L / low_freq_factor`` are divided by ``s``, and the band
    between (edges included) gets ``(1 - g) theta_i / s + g theta_i`` with
    ``g = (L / lambda_i - low) / (high - low)``, which meets both ends continuously.

    Returns
    -------
    numpy.ndarray, shape (rotary_dim // 2,)
    """
    d = _dim(rotary_dim)
    s = _factor(factor)
    L = v.length("original_length", original_length, minimum=1)
    lo = _pos("low_freq_factor", low_freq_factor)
    hi = _pos("high_freq_factor", high_freq_factor)
    if not hi > lo:
        raise ValueError(f"high_freq_factor must be greater than low_freq_factor, got {hi:g} <= {lo:g}")
    th = frequencies(d, base)
    lam = wavelengths(th)
    out = np.where(lam > L / lo, th / s, th)
    g = (L / lam - lo) / (hi - lo)
    band = ~(lam < L / hi) & ~(lam > L / lo)
    return np.where(band, (1.0 - g) * out / s + g * out, out)


# ------------------------------------------------------------------------------------ dispatch
def scaled_frequencies(scaling: Scaling | None, base: float, rotary_dim: int, seq_len: int | None = None) -> tuple[np.ndarray, float]:
    """Per-pair inverse frequencies and attention factor of a rule.

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
    """
    d = _dim(rotary_dim)
    if seq_len is not None:
        seq_len = v.length("seq_len", seq_len, minimum=1)
    if scaling is None:
        return frequencies(d, base), 1.0
    if not isinstance(scaling, Scaling):
        raise ValueError(f"scaling must be a ropegeo.scaling.Scaling or None, got {type(scaling).__name__}")
    scaling.check_pairs(d // 2)
    sc = scaling
    if sc.rule == "linear":
        return linear(frequencies(d, base), sc.factor), 1.0
    if sc.rule == "ntk":
        return ntk(base, d, sc.factor), 1.0
    if sc.rule == "dynamic":
        return dynamic_ntk(base, d, sc.factor, sc.original_max_position_embeddings, seq_len), 1.0
    if sc.rule == "yarn":
        return yarn(base, d, sc.factor, sc.original_max_position_embeddings, beta_fast=sc.beta_fast,
                    beta_slow=sc.beta_slow, truncate=sc.truncate, attention_factor=sc.attention_factor,
                    mscale=sc.mscale, mscale_all_dim=sc.mscale_all_dim)
    if sc.rule == "longrope":
        return longrope(base, d, sc.short_factor, sc.long_factor, sc.original_max_position_embeddings,
                        factor=sc.factor, seq_len=seq_len, attention_factor=sc.attention_factor)
    return llama3(base, d, sc.factor, sc.original_max_position_embeddings, low_freq_factor=sc.low_freq_factor,
                  high_freq_factor=sc.high_freq_factor), 1.0


def rope_parameters(manifest, seq_len: int | None = None) -> tuple[np.ndarray, float]:
    """``(theta, attention_factor)`` of a :class:`ropegeo.manifest.RopeManifest` at ``seq_len``."""
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
    kw.update(params)
    return Scaling(**kw)


# ------------------------------------------------------------------------------------ trade-off
def phase_novelty(theta_train, theta_served, train_length: int, target_length: int) -> np.ndarray:
    """Per pair, the fraction of its circle visited when serving but never in training.

    In training, pair ``i`` sweeps the arc ``[0, min(L * theta_i, 2 pi))`` (positions and offsets
    below ``L``); served at ``n`` positions with frequencies ``theta'`` it sweeps
    ``[0, min(n * theta'_i, 2 pi))``. The novelty is the part of the second arc outside the first,
    in turns: ``max(0, min(n theta'_i, 2 pi) - min(L theta_i, 2 pi)) / (2 pi)``, in [0, 1).
    Pairs that already turned fully in training never show novel phases.

    Parameters
    ----------
    theta_train, theta_served : array_like, shape (pairs,)
        Frequencies used in training and when serving.
    train_length, target_length : int
        ``L`` and ``n`` (positive).

    Returns
    -------
    numpy.ndarray, shape (pairs,)
    """
    a = v.finite_array("theta_train", theta_train)
    b = v.finite_array("theta_served", theta_served)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"theta_train and theta_served must be 1-D with the same shape, got {a.shape} and {b.shape}")
    if np.any(a < 0) or np.any(b < 0):
        raise ValueError("frequencies must be non-negative")
    L = v.length("train_length", train_length, minimum=1)
    n = v.length("target_length", target_length, minimum=1)
    seen = np.minimum(L * a, TWO_PI)
    served = np.minimum(n * b, TWO_PI)
    return np.maximum(0.0, served - seen) / TWO_PI


@dataclass(frozen=True)
class ExtensionReport:
    """The trade-off of one rule, from :func:`extension_report`.

    Attributes
    ----------
    rule : str
        Rule name (``"none"`` for raw extrapolation).
    theta : numpy.ndarray, shape (pairs,)
        Served frequencies at the target length.
    stretch : numpy.ndarray, shape (pairs,)
        Per-pair wavelength ratio ``theta_i / theta'_i`` (1 = untouched, ``s`` = fully interpolated).
    scaled_pairs : int
        Pairs whose frequency changed by more than 0.1 %.
    novelty : numpy.ndarray, shape (pairs,)
        :func:`phase_novelty` per pair, in turns.
    novel_pairs : int
        Pairs that visit new phase at the target length (novelty above 1e-9 turns).
    total_novelty : float
        Sum of the per-pair novelty, in turns.
    adjacent_similarity : float
        ``K(1)`` of the served bank (closer to 1: neighbours harder to tell apart).
    fastest_step : float
        Angle, in radians, the fastest pair turns between neighbouring tokens.
    margin : float or None
        Gate B separation margin for offsets ``1 .. small_offsets`` (None if not requested).
    coarse_margin : float or None
        Gate B margin for the paragraph-scale offsets ``step, 2 step, .., train_length`` (None if
        not requested).
    attention_factor : float
    """

    rule: str
    theta: np.ndarray
    stretch: np.ndarray
    scaled_pairs: int
    novelty: np.ndarray
    novel_pairs: int
    total_novelty: float
    adjacent_similarity: float
    fastest_step: float
    margin: float | None
    coarse_margin: float | None
    attention_factor: float

    def row(self) -> dict:
        """The scalar fields as a dict (for tables)."""
        return {
            "rule": self.rule,
            "scaled pairs": self.scaled_pairs,
            "novel pairs": self.novel_pairs,
            "novelty (turns)": round(self.total_novelty, 4),
            "K(1)": round(self.adjacent_similarity, 6),
            "fastest step (rad)": round(self.fastest_step, 4),
            "margin 1..n": None if self.margin is None else round(self.margin, 6),
            "coarse margin": None if self.coarse_margin is None else round(self.coarse_margin, 6),
            "attention factor": round(self.attention_factor, 4),
        }


def extension_report(scaling: Scaling | None, *, base: float, rotary_dim: int, train_length: int,
                     target_length: int, small_offsets: int | None = 16,
                     coarse_step: int | None = 64) -> ExtensionReport:
    """Measure one rule's phase novelty and local resolution at the target length.

    Parameters
    ----------
    scaling : Scaling or None
        The rule (``None``: raw extrapolation).
    base, rotary_dim
        The schedule being stretched.
    train_length, target_length : int
        Pre-training and serving lengths (at least 2).
    small_offsets : int or None
        Gate B margin over the offsets ``1 .. small_offsets`` (2 to 100,000); ``None`` skips it.
    coarse_step : int or None
        Gate B margin over ``coarse_step, 2 coarse_step, ..`` up to the training length (the step
        between 1 and ``train_length / 2``); ``None`` skips it.

    Returns
    -------
    ExtensionReport
    """
    from .geometry import adjacent_similarity
    from .margins import separation_margin

    d = _dim(rotary_dim)
    L = v.length("train_length", train_length, minimum=2)
    n = v.length("target_length", target_length, minimum=2)
    base_theta = frequencies(d, base)
    theta, att = scaled_frequencies(scaling, base, d, seq_len=n)
    stretch = base_theta / theta
    nov = phase_novelty(base_theta, theta, L, n)
    margin = None
    if small_offsets is not None:
        k = v.integer("small_offsets", small_offsets, minimum=2, maximum=100_000)
        margin = separation_margin(range(1, k + 1), theta).margin
    coarse = None
    if coarse_step is not None:
        step = v.integer("coarse_step", coarse_step, minimum=1, maximum=L // 2)
        coarse = separation_margin(range(step, L + 1, step), theta).margin
    return ExtensionReport(
        rule="none" if scaling is None else scaling.rule,
        theta=theta,
        stretch=stretch,
        scaled_pairs=int(np.count_nonzero(np.abs(stretch - 1.0) > 1e-3)),
        novelty=nov,
        novel_pairs=int(np.count_nonzero(nov > 1e-9)),
        total_novelty=float(nov.sum()),
        adjacent_similarity=adjacent_similarity(theta),
        fastest_step=float(theta[0]),
        margin=margin,
        coarse_margin=coarse,
        attention_factor=float(att),
    )


def text_table(rows) -> str:
    """Rows of dicts (same keys) as an aligned plain-text table (numbers right-aligned).

    Raises
    ------
    ValueError
        For no rows or rows with different keys.
    """
    if isinstance(rows, (str, bytes, Mapping)) or not hasattr(rows, "__iter__"):
        raise ValueError(f"rows must be a non-empty list of dicts, got {type(rows).__name__}")
    rows = list(rows)
    if not rows or not all(isinstance(r, Mapping) for r in rows):
        raise ValueError("rows must be a non-empty list of dicts")
    keys = list(rows[0])
    if not all(isinstance(k, str) for k in keys):
        raise ValueError("rows must have string keys (the column names)")
    if any(list(r) != keys for r in rows):
        raise ValueError("every row must have the same keys in the same order")

    def fmt(x):
        if isinstance(x, float):
            return f"{int(x):,}" if x.is_integer() and abs(x) < 1e15 else f"{x:,.6g}"
        if isinstance(x, int) and not isinstance(x, bool):
            return f"{x:,}"
        return "-" if x is None else str(x)

    cells = [[fmt(r[k]) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[j]) for c in cells)) for j, k in enumerate(keys)]
    numeric = [all(isinstance(r[k], (int, float)) and not isinstance(r[k], bool) for r in rows) for k in keys]
    def line(vals):
        return "  ".join(val.rjust(w) if num else val.ljust(w) for val, w, num in zip(vals, widths, numeric)).rstrip()
    return "\n".join([line(keys), line(["-" * w for w in widths])] + [line(c) for c in cells])


# --------------------------------------------------------------------------------------------
# one rule at one evaluation length, as a trained head is run under it (Gate C)
# --------------------------------------------------------------------------------------------

__all__ += ["RULE_ALIASES", "Schedule", "extension_schedule", "rule_name"]

#: Other spellings :func:`extension_schedule` accepts, mapped to the rule names of :data:`RULES`
#: (``"none"``: the training schedule unchanged, raw extrapolation).
RULE_ALIASES = {"raw": "none", "pi": "linear", "interpolation": "linear", "dynamic_ntk": "dynamic"}


def rule_name(extension) -> str:
    """The rule name of ``extension`` ("none" or one of :data:`RULES` but longrope), aliases resolved."""
    names = ("none",) + tuple(r for r in RULES if r != "longrope")
    if isinstance(extension, str):
        name = RULE_ALIASES.get(extension.lower(), extension.lower())
        if name in names:
            return name
        if name == "longrope":
            raise ValueError("extension='longrope' needs per-pair factors: pass theta from ropegeo.scaling.longrope")
    raise ValueError(f"extension must be one of {', '.join(map(repr, names))} (or an alias: "
                     f"{', '.join(map(repr, RULE_ALIASES))}), got {extension!r}")


class Schedule(NamedTuple):
    """A frequency schedule as a head is run under it: ``(theta, scale, attention_factor, rule)``.

    ``theta`` (shape (pairs,)) holds the per-pair frequencies in radians per position, fastest
    first; ``scale`` multiplies every position id before rotating (``1 / s`` for position
    interpolation); ``attention_factor`` multiplies queries and keys after rotating, so the logits
    grow by its square (YaRN); ``rule`` names the rule (``"none"`` for the training schedule).
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
    """The schedule of a context-extension rule at one evaluation length.

    Parameters
    ----------
    extension : {"none", "linear", "ntk", "dynamic", "yarn", "llama3"}
        ``"none"``: the training schedule unchanged (raw extrapolation).
        ``"linear"``: position interpolation (:func:`~ropegeo.scaling.linear`), expressed here as a position scale
        ``1 / factor`` on the unchanged frequencies (the same phases).
        ``"ntk"``: the NTK-aware base ``base * factor ** (d / (d - 2))`` (:func:`~ropegeo.scaling.ntk`).
        ``"dynamic"``: the NTK base recomputed for the current length, as in transformers
        (:func:`~ropegeo.scaling.dynamic_ntk`): ``base * (factor * length / train_length - (factor - 1)) **
        (d / (d - 2))`` beyond the training length, the training schedule within it.
        ``"yarn"``, ``"llama3"``: :func:`~ropegeo.scaling.yarn` (with its attention factor) and :func:`~ropegeo.scaling.llama3` at
        their default parameters.
        Aliases (:data:`RULE_ALIASES`): ``"raw"`` (none), ``"pi"`` and ``"interpolation"``
        (linear), ``"dynamic_ntk"`` (dynamic).
    head_dim : int
        Rotary head dimension ``d`` (even; at least 4 for the NTK rules).
    base : float
        The training base (greater than 1).
    train_length, length : int
        The training length and the length evaluated (each from 2 to
        ``ropegeo._validate.MAX_LENGTH`` = 2**48).
    factor : float, optional
        The extension factor ``s`` (1 to :data:`MAX_FACTOR` = 1e6). Default:
        ``max(1, length / train_length)`` (the rule configured for exactly this length) except
        ``"dynamic"``, whose default 1 makes its base follow the current length alone; pass
        ``factor=8`` to evaluate a model configured for ``8 * train_length`` at another length.

    Returns
    -------
    Schedule
        ``(theta, scale, attention_factor, rule)``.

    Raises
    ------
    ValueError
        For an unknown rule, bad dimensions, lengths or factor.

    Examples
    --------
    >>> sch = extension_schedule("pi", head_dim=8, base=10_000.0, train_length=64, length=256)
    >>> sch.rule, sch.scale, sch.attention_factor
    ('linear', 0.25, 1.0)
    """
    name = rule_name(extension)
    head_dim = v.head_dim(head_dim)
    base = v.base(base)
    train_length = v.length("train_length", train_length, minimum=2)
    length = v.length("length", length, minimum=2)
    if factor is None:
        factor = 1.0 if name == "dynamic" else max(1.0, length / train_length)
        if factor > MAX_FACTOR:
            raise ValueError(f"length / train_length must be at most {MAX_FACTOR:g} (the largest extension "
                             f"factor) when factor is not given, got {length} / {train_length}")
    factor = v.real("factor", factor, minimum=1.0, maximum=MAX_FACTOR)
    if name in ("ntk", "dynamic") and head_dim < 4:
        raise ValueError(f"head_dim must be at least 4 for the NTK rules, got {head_dim}")
    theta = frequencies(head_dim, base)
    if name == "none" or (factor == 1.0 and name != "dynamic"):
        return Schedule(theta, 1.0, 1.0, name)
    if name == "linear":
        return Schedule(theta, 1.0 / factor, 1.0, name)
    if name == "ntk":
        return Schedule(ntk(base, head_dim, factor), 1.0, 1.0, name)
    if name == "dynamic":
        return Schedule(dynamic_ntk(base, head_dim, factor, train_length, length), 1.0, 1.0, name)
    if name == "yarn":
        th, att = yarn(base, head_dim, factor, train_length)
        return Schedule(th, 1.0, float(att), name)
    return Schedule(llama3(base, head_dim, factor, train_length), 1.0, 1.0, name)
