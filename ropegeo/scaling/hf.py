"""Reading a transformers ``rope_scaling`` / ``rope_parameters`` block, one small reader per rule
(the public entry: :meth:`ropegeo.scaling.Scaling.from_hf`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Mapping

from ropegeo import _validate as v
from ropegeo.scaling.rules import MAX_FACTOR, MIN_PARAMETER, _factors

#: rope type names of transformers configs -> ropegeo rule (None: the plain schedule). "su": Phi-3's first configs,
#: mapped to longrope by transformers; "mrope": Qwen2-VL / Qwen2.5-VL's multi-axis block, rewritten to "default"
#: by Qwen2VLTextConfig (the sections are read by ropegeo.models.model_types).
HF_TYPES = {"default": None, "linear": "linear", "dynamic": "dynamic", "yarn": "yarn", "longrope": "longrope",
            "su": "longrope", "llama3": "llama3", "mrope": None}

#: the keys of a transformers scaling block each rule reads (besides the type name).
HF_KEYS = {
    "linear": ("factor",), "dynamic": ("factor",),
    "yarn": ("factor", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
             "original_max_position_embeddings", "truncate"),
    "longrope": ("short_factor", "long_factor", "factor", "attention_factor", "original_max_position_embeddings",
                 "short_mscale", "long_mscale"),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
}
_NAME_KEYS = ("rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")


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
        """The pre-training length as transformers 5 resolves it for llama3, yarn and longrope: a top-level
        ``original_max_position_embeddings`` (Phi-3 style) overrides the block's, which defaults to the
        config's ``max_position_embeddings``."""
        orig = self.top_orig or self.length("original_max_position_embeddings") or self.max_pos
        if orig is None:
            raise ValueError(f"{self.where}original_max_position_embeddings (or max_position_embeddings) is "
                             f"required for {self.kind}")
        return orig

    def overridden(self) -> set:
        """The block's own length when a top-level one overrides it (reported as ignored)."""
        own = self.length("original_max_position_embeddings")
        return {"original_max_position_embeddings"} if self.top_orig is not None and own is not None \
            and own != self.top_orig else set()


#: transformers rope types ropegeo knows of but does not compute, and why (said when refused).
_UNSUPPORTED = {
    "proportional": " that a scaling rule can express (transformers' proportional RoPE, Gemma 4's full-attention "
                    "layers, rotates the first pairs of the whole head width with exponents over that width; "
                    "ropegeo.models.manifest.read_config reads it as the equivalent partial rotary)",
}

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
    # high == low is accepted (Llama 4's configs): the blended band is then empty, as in transformers
    lo = b.number("low_freq_factor", b.need("low_freq_factor"))
    hi = b.number("high_freq_factor", b.need("high_freq_factor"))
    if hi < lo:
        raise ValueError(f"{b.where}high_freq_factor ({hi:g}) must not be below {b.where}low_freq_factor ({lo:g})")
    return {"factor": b.number("factor", b.need("factor")), "low_freq_factor": lo, "high_freq_factor": hi,
            "original_max_position_embeddings": b.original(), "unused": b.overridden()}


def _yarn_beta(b: _Block, key: str, default: float) -> float:
    # the reference reads `block.get(key) or default`: absent, null and 0 mean the default. Other
    # non-numbers ("", false, []) are refused rather than silently defaulted: they can only be mistakes.
    val = b.data.get(key)
    if val is not None and not (isinstance(val, numbers.Real) and not isinstance(val, bool)):
        raise ValueError(f"{b.where}{key} must be a number (or absent for the default {default:g}), got {val!r}")
    return default if not val else b.number(key, val)


def _read_yarn(b: _Block) -> dict:
    # Betas default to 32 / 1 when absent or zero. The factor is required (transformers 5; releases
    # replacing it by max / original, issue 38224, were fixed by pull request 40320, which ropegeo follows).
    orig = b.original()
    factor = b.number("factor", b.need("factor"))
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
    return {**kw, "truncate": tr, "unused": b.overridden()}


def _read_longrope(b: _Block) -> dict:
    # With a top-level original length (Phi-3) the factor is max / original whatever the block says
    # (transformers 4.x; no shipped config names both); else the block's factor, else max / original.
    kw: dict[str, Any] = {"unused": b.overridden()}
    for key in ("short_factor", "long_factor"):
        kw[key] = _factors(f"{b.where}{key}", b.need(key))
        if b.pairs is not None and len(kw[key]) != b.pairs:
            raise ValueError(f"{b.where}{key} must have one entry per rotary pair ({b.pairs}), got {len(kw[key])}")
    kw["original_max_position_embeddings"] = orig = b.original()
    if b.top_orig is None and b.data.get("factor") is not None:
        kw["factor"] = b.number("factor")
    elif b.max_pos is not None:
        kw["factor"] = b.max_pos / orig
        kw["unused"] |= {"factor"} & set(b.data)
    else:
        raise ValueError(f"{b.where}factor (or max_position_embeddings) is required for longrope")
    if b.data.get("attention_factor") is not None:
        kw["attention_factor"] = b.number("attention_factor")
    # Phi-3.5-MoE's block: transformers' PhimoeRotaryEmbedding multiplies cos and sin by long_mscale
    # for a pass longer than the original length, by short_mscale otherwise, in place of the factor
    for key in ("short_mscale", "long_mscale"):
        if b.data.get(key) is not None:
            kw[key] = b.number(key)
    return kw


#: rule name -> reader of its transformers block.
_BLOCK_READERS = {"linear": _read_linear, "dynamic": _read_dynamic, "yarn": _read_yarn, "longrope": _read_longrope,
                  "llama3": _read_llama3}


def read_block(block, *, field_name: str, max_position_embeddings: int | None,
               original_max_position_embeddings: int | None, pairs: int | None) -> dict | None:
    """The :class:`~ropegeo.scaling.Scaling` keyword arguments of a transformers block (``None``: no scaling).

    See :meth:`ropegeo.scaling.Scaling.from_hf` for the parameters and errors.
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
        why = _UNSUPPORTED.get(kind, "") if isinstance(kind, str) else ""
        raise ValueError(
            f"{field_name}.rope_type {kind!r} is not a known rope type{why}; known: {', '.join(sorted(HF_TYPES))}"
        )
    rule = HF_TYPES[kind]
    if rule is None:
        return None
    src = _Block(block, f"{field_name}.", kind, max_position_embeddings, original_max_position_embeddings, pairs)
    kw = _BLOCK_READERS[rule](src)
    ignored = {k for k in block if k not in HF_KEYS[rule] and k not in _NAME_KEYS} | kw.pop("unused", set())
    return {"rule": rule, "ignored_keys": tuple(sorted(ignored)), **kw}
