"""The rule formulas: per-pair frequencies (and attention factors) of each context-extension rule.

Each takes the (rotary) width, then the base, and returns what transformers' ``modeling_rope_utils.py``
computes; :mod:`ropegeo.scaling` tabulates them and says where ropegeo differs.
"""

from __future__ import annotations

import math

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import TWO_PI, frequencies, wavelengths

#: The one list of extension rules (transformers' rope types, plus the static ``ntk``).
RULES = ("linear", "ntk", "dynamic", "yarn", "longrope", "llama3")

#: Other spellings of a rule, mapped to a name of :data:`RULES` or ``"none"`` (raw extrapolation).
RULE_ALIASES = {"raw": "none", "pi": "linear", "interpolation": "linear", "dynamic_ntk": "dynamic"}

#: The rules a name alone configures: ``"none"`` and all of :data:`RULES` but ``longrope`` (per-pair lists).
NAMED_RULES = ("none",) + tuple(r for r in RULES if r != "longrope")

#: Largest scale factor accepted (real extensions use 2 to a few hundred).
MAX_FACTOR = 1e6

#: Smallest positive parameter accepted: far below any real setting, and no division by it overflows.
MIN_PARAMETER = 1e-6


def rule_name(rule, name: str = "rule") -> str:
    """The name of ``rule`` in :data:`RULES` (or ``"none"``), aliases resolved; a ValueError names ``name``.

    >>> rule_name("pi"), rule_name("raw"), rule_name("dynamic_ntk")
    ('linear', 'none', 'dynamic')
    """
    if isinstance(rule, str):
        found = RULE_ALIASES.get(rule.lower(), rule.lower())
        if found == "none" or found in RULES:
            return found
    raise ValueError(f"{name} must be one of {', '.join(map(repr, ('none',) + RULES))} (or an alias: "
                     f"{', '.join(map(repr, RULE_ALIASES))}), got {rule!r}")


def _pos(name: str, value) -> float:
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


def _dim(head_dim, minimum: int = 2) -> int:
    d = v.head_dim(head_dim)
    if d < minimum:
        raise ValueError(f"head_dim must be at least {minimum} for NTK scaling (d / (d - 2) is undefined at d = 2)")
    return d


def linear(theta, factor: float) -> np.ndarray:
    """Position interpolation: ``theta / factor`` (the same as dividing every position by ``s``)."""
    return v.finite_array("theta", theta) / _pos("factor", factor)


def ntk(head_dim: int, base: float, factor: float) -> np.ndarray:
    """NTK-aware base change: the schedule of base ``B * s ** (d / (d - 2))`` (``d = head_dim >= 4``).

    The slowest pair turns exactly ``s`` times slower, the fastest keeps its frequency.

    >>> (frequencies(8, 10_000.0) / ntk(8, 10_000.0, 4.0)).round(4).tolist()
    [1.0, 1.5874, 2.5198, 4.0]
    """
    d = _dim(head_dim, 4)
    return frequencies(d, v.base(base) * _pos("factor", factor) ** (d / (d - 2)))


def dynamic_ntk(head_dim: int, base: float, factor: float, original_length: int, seq_len: int | None = None) -> np.ndarray:
    """Dynamic NTK as transformers computes it: base ``B * (s * n / L - (s - 1)) ** (d / (d - 2))``, ``n = max(seq_len, L)``.

    ``factor=1`` makes the bracket ``n / L`` (the base follows the length alone).
    """
    d = _dim(head_dim, 4)
    base = v.base(base)
    s = _pos("factor", factor)
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
    # the fractional pair index whose frequency turns `turns` times over `length` (find_correction_dim)
    return d * math.log(length / (turns * TWO_PI)) / (2.0 * math.log(base))


def yarn_ramp(head_dim: int, base: float, original_length: int, *, beta_fast: float = 32.0,
              beta_slow: float = 1.0, truncate: bool = True) -> np.ndarray:
    """YaRN's per-pair extrapolation weight, shape (head_dim // 2,): 1 keeps ``theta_i``, 0 takes ``theta_i / s``.

    ``1 - clip((i - low) / (high - low), 0, 1)`` with ``low = floor(c(beta_fast))``,
    ``high = ceil(c(beta_slow))`` (unrounded when ``truncate=False``),
    ``c(r) = d ln(L / (2 pi r)) / (2 ln B)`` clipped to ``[0, d - 1]``.
    """
    d = _dim(head_dim)
    base = v.base(base)
    L = v.length("original_length", original_length, minimum=2)
    bf = _pos("beta_fast", beta_fast)
    bs = _pos("beta_slow", beta_slow)
    if bf < bs:  # as the config reader and Scaling refuse it
        raise ValueError(f"beta_fast ({bf:g}) must not be below beta_slow ({bs:g})")
    truncate = v.boolean("truncate", truncate)
    low = _correction_dim(bf, d, base, L)
    high = _correction_dim(bs, d, base, L)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high = high + 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    return 1.0 - ramp


def yarn(head_dim: int, base: float, factor: float, original_length: int, *, beta_fast: float = 32.0,
         beta_slow: float = 1.0, truncate: bool = True, attention_factor: float | None = None,
         mscale: float | None = None, mscale_all_dim: float | None = None) -> tuple[np.ndarray, float]:
    """YaRN: ``(theta_i w_i + (theta_i / s) (1 - w_i), attention factor)``, ``w`` from :func:`yarn_ramp`.

    The factor: ``attention_factor``, else ``yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)``
    when both are non-zero, else ``0.1 ln s + 1``.
    """
    d = _dim(head_dim)
    s = _pos("factor", factor)
    w = yarn_ramp(d, base, original_length, beta_fast=beta_fast, beta_slow=beta_slow, truncate=truncate)
    th = frequencies(d, base)
    out = th * w + (th / s) * (1.0 - w)
    if attention_factor is not None:
        att = _pos("attention_factor", attention_factor)
    elif mscale and mscale_all_dim:
        att = yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)
    else:
        att = yarn_mscale(s)
    return out, float(att)


def longrope(head_dim: int, base: float, short_factor, long_factor, original_length: int, *,
             factor: float, seq_len: int | None = None, attention_factor: float | None = None) -> tuple[np.ndarray, float]:
    """LongRoPE: ``(theta_i / f_i, attention factor)``, ``f`` the long list when ``seq_len > L``, else the short.

    The factor: ``attention_factor``, else ``sqrt(1 + ln(factor) / ln(L))`` (1 for ``factor <= 1``).
    """
    d = _dim(head_dim)
    L = v.length("original_length", original_length, minimum=2)
    s = _pos("factor", factor)
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


def llama3(head_dim: int, base: float, factor: float, original_length: int, *, low_freq_factor: float = 1.0,
           high_freq_factor: float = 4.0) -> np.ndarray:
    """The Llama-3 rule: wavelengths below ``L / high_freq_factor`` kept, above ``L / low_freq_factor`` divided by ``s``.

    The band between gets ``(1 - g) theta_i / s + g theta_i``, ``g = (L / lambda_i - low) / (high - low)``.
    """
    d = _dim(head_dim)
    s = _pos("factor", factor)
    L = v.length("original_length", original_length, minimum=1)
    lo = _pos("low_freq_factor", low_freq_factor)
    hi = _pos("high_freq_factor", high_freq_factor)
    if hi < lo:
        raise ValueError(f"high_freq_factor must not be below low_freq_factor, got {hi:g} < {lo:g}")
    th = frequencies(d, base)
    lam = wavelengths(th)
    out = np.where(lam > L / lo, th / s, th)
    band = ~(lam < L / hi) & ~(lam > L / lo)
    if hi == lo:  # Llama 4: no band; a wavelength of exactly L / lo is kept (transformers: 0 / 0)
        return out
    g = (L / lam - lo) / (hi - lo)
    return np.where(band, (1.0 - g) * out / s + g * out, out)
