"""The rule formulas: per-pair frequencies (and attention factors) of each context-extension rule.

Each function takes the plain schedule's base and rotary width (or the frequencies themselves) and
returns what transformers' ``modeling_rope_utils.py`` computes for the rule; see
:mod:`ropegeo.scaling` for the table of rules and where ropegeo deliberately differs. The public
names are re-exported by :mod:`ropegeo.scaling`.
"""

from __future__ import annotations

import math

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import TWO_PI, frequencies, wavelengths

#: The extension rules ropegeo computes (transformers' rope types, plus the static ``ntk``).
RULES = ("linear", "ntk", "dynamic", "yarn", "longrope", "llama3")

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

    Raises
    ------
    ValueError
        For ``beta_fast < beta_slow`` (as the config reader), or ``truncate`` not a bool.

    Returns
    -------
    numpy.ndarray, shape (rotary_dim // 2,), values in [0, 1]
    """
    d = _dim(rotary_dim)
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


