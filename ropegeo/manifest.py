"""The RoPE manifest: everything needed to reproduce one rotary operator, in one record.

"We use RoPE" names a family, not an operator. Two systems that share a configuration label can
still differ in the frequency base, the rotary width, the pairing layout, how position ids are
assigned, which context-extension rule is applied, where the KV cache starts, and in which
precision the phases are generated. :class:`RopeManifest` records all of them, so a chapter
function (or the command line) can rebuild the exact per-pair frequencies from it.

:func:`read_config` turns a Hugging Face style ``config.json`` (a dict or a path) into a manifest;
:func:`load_model` reads one of the configurations shipped in ``ropegeo/data``.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from . import _validate as v
from .frequencies import resolve_rotary_dim

__all__ = [
    "RopeManifest",
    "POSITION_ID_POLICIES",
    "read_config",
    "load_model",
    "shipped_models",
    "ConfigError",
    "ConfigAudit",
    "config_audit",
    "default_offsets",
    "resolve",
    "model_record",
]

POSITION_ID_POLICIES = ("contiguous", "left-padded", "packed-reset", "packed-continuous", "kv-cache")
PHASE_DTYPES = ("float64", "float32", "float16", "bfloat16")


class ConfigError(ValueError):
    """A configuration that cannot be turned into a manifest; the message names the field."""


@dataclass(frozen=True)
class RopeManifest:
    """One rotary operator, fully specified.

    Parameters
    ----------
    base : float
        Frequency base ``B`` (``rope_theta``), finite and greater than 1.
    head_dim : int
        Width of one attention head (even, at least 2).
    rotary_dim : int, optional
        How many leading coordinates of the head rotate (even, ``2 <= rotary_dim <= head_dim``).
        ``None`` means the whole head; it is resolved to ``head_dim`` on construction.
    pairing : {"interleaved", "half"}
        Which coordinates rotate together (see :mod:`ropegeo.rotation`). Hugging Face models
        use ``"half"``.
    position_id_policy : str
        How position ids are assigned: one of ``"contiguous"``, ``"left-padded"``,
        ``"packed-reset"``, ``"packed-continuous"``, ``"kv-cache"``.
    scaling : ropegeo.scaling.Scaling, optional
        The context-extension rule and its parameters, or ``None`` for the plain schedule.
    cache_offset : int
        Position of the first new token when a KV cache already holds ``cache_offset`` tokens
        (non-negative).
    phase_dtype : {"float64", "float32", "float16", "bfloat16"}
        Precision in which phase angles are generated.
    max_position_embeddings : int, optional
        The context length the configuration declares (positive).
    original_max_position_embeddings : int, optional
        The context length the model was pre-trained at, when it differs from the declared one
        (positive). ``None`` means "same as ``max_position_embeddings``".
    name, source : str, optional
        A label for the model and where the values were read.

    Raises
    ------
    ValueError
        For any field outside its allowed set or range; the message names the field.
    """

    base: float = 10_000.0
    head_dim: int = 128
    rotary_dim: int | None = None
    pairing: str = "interleaved"
    position_id_policy: str = "contiguous"
    scaling: Any = None
    cache_offset: int = 0
    phase_dtype: str = "float64"
    max_position_embeddings: int | None = None
    original_max_position_embeddings: int | None = None
    name: str | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        from .scaling import Scaling

        set_ = object.__setattr__
        head_dim, rotary_dim = resolve_rotary_dim(self.head_dim, self.rotary_dim)
        set_(self, "head_dim", head_dim)
        set_(self, "rotary_dim", rotary_dim)
        set_(self, "base", v.base(self.base))
        set_(self, "pairing", v.pairing(self.pairing))
        if self.position_id_policy not in POSITION_ID_POLICIES:
            raise ValueError(
                f"position_id_policy must be one of {', '.join(map(repr, POSITION_ID_POLICIES))}, "
                f"got {self.position_id_policy!r}"
            )
        set_(self, "cache_offset", v.length("cache_offset", self.cache_offset, minimum=0))
        if self.phase_dtype not in PHASE_DTYPES:
            raise ValueError(f"phase_dtype must be one of {', '.join(PHASE_DTYPES)}, got {self.phase_dtype!r}")
        for key in ("max_position_embeddings", "original_max_position_embeddings"):
            val = getattr(self, key)
            if val is not None:
                set_(self, key, v.length(key, val, minimum=1))
        if self.scaling is not None:
            if isinstance(self.scaling, Mapping):
                set_(self, "scaling", Scaling.from_dict(self.scaling))
            elif not isinstance(self.scaling, Scaling):
                raise ValueError(
                    f"scaling must be a ropegeo.scaling.Scaling, a dict with a 'rule' key, or None, "
                    f"got {type(self.scaling).__name__}"
                )
            self.scaling.check_pairs(self.rotary_dim // 2)

    # ------------------------------------------------------------------ derived quantities
    @property
    def pairs(self) -> int:
        """Number of rotary pairs, ``rotary_dim // 2``."""
        return self.rotary_dim // 2

    @property
    def train_length(self) -> int | None:
        """The pre-training context: ``original_max_position_embeddings`` if set, else
        ``max_position_embeddings`` (``None`` when neither is known)."""
        return self.original_max_position_embeddings or self.max_position_embeddings

    @property
    def target_length(self) -> int | None:
        """The context the configuration is built to serve: the larger of
        ``max_position_embeddings`` and ``factor * original length`` of the scaling rule
        (Qwen2.5's YaRN block keeps ``max_position_embeddings`` at 32,768 but stretches 4x)."""
        cands = [self.max_position_embeddings] if self.max_position_embeddings else []
        sc = self.scaling
        if sc is not None and sc.original_max_position_embeddings:
            cands.append(int(round(sc.factor * sc.original_max_position_embeddings)))
        return max(cands) if cands else None

    def theta(self, seq_len: int | None = None) -> np.ndarray:
        """Per-pair inverse frequencies (radians per position) for a sequence of ``seq_len``.

        Parameters
        ----------
        seq_len : int, optional
            Current sequence length. Only the rules that depend on it (dynamic NTK, LongRoPE)
            read it; ``None`` means "at initialisation", as in Hugging Face transformers.

        Returns
        -------
        numpy.ndarray, shape (rotary_dim // 2,), float64
            Fastest pair first.
        """
        from .scaling import rope_parameters

        return rope_parameters(self, seq_len)[0]

    def attention_factor(self, seq_len: int | None = None) -> float:
        """The factor the rule multiplies cos and sin by (it scales attention logits by its square).

        1.0 for the plain schedule, linear, NTK and dynamic NTK.
        """
        from .scaling import rope_parameters

        return rope_parameters(self, seq_len)[1]

    def wavelengths(self, seq_len: int | None = None) -> np.ndarray:
        """Wavelength ``2 pi / theta_i`` of each pair in tokens, shape ``(rotary_dim // 2,)``."""
        from .frequencies import wavelengths

        return wavelengths(self.theta(seq_len))

    def with_(self, **changes) -> "RopeManifest":
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    # ------------------------------------------------------------------ plain forms
    def to_dict(self) -> dict:
        """A JSON-ready dict; :meth:`from_dict` inverts it."""
        return {
            "name": self.name,
            "source": self.source,
            "base": self.base,
            "head_dim": self.head_dim,
            "rotary_dim": self.rotary_dim,
            "pairing": self.pairing,
            "position_id_policy": self.position_id_policy,
            "scaling": None if self.scaling is None else self.scaling.to_dict(),
            "cache_offset": self.cache_offset,
            "phase_dtype": self.phase_dtype,
            "max_position_embeddings": self.max_position_embeddings,
            "original_max_position_embeddings": self.original_max_position_embeddings,
        }

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as a JSON string (keyword arguments go to ``json.dumps``)."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: Mapping) -> "RopeManifest":
        """Rebuild a manifest from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            For unknown keys or invalid values.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"a manifest dict is required, got {type(data).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown manifest field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**dict(data))

    def table(self) -> str:
        """A short human-readable table of every field."""
        ctx = self.max_position_embeddings
        orig = self.original_max_position_embeddings
        rows = [
            ("model", self.name or "(unnamed)"),
            ("base (rope_theta)", f"{self.base:,.6g}"),
            ("head dim / rotary dim", f"{self.head_dim} / {self.rotary_dim} ({self.pairs} pairs)"),
            ("pairing", self.pairing),
            ("position ids", self.position_id_policy + (f", cache offset {self.cache_offset:,}" if self.cache_offset else "")),
            ("phase precision", self.phase_dtype),
            ("context: declared", "unknown" if ctx is None else f"{ctx:,}"),
            ("context: pre-training", "same as declared" if orig is None else f"{orig:,}"),
            ("context: served (target)", "unknown" if self.target_length is None else f"{self.target_length:,}"),
            ("scaling", "none" if self.scaling is None else self.scaling.describe()),
        ]
        if self.source:
            rows.append(("source", self.source))
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{k:<{width}}  {val}" for k, val in rows)

    def __str__(self) -> str:
        return self.table()


# ---------------------------------------------------------------------- reading configs
_DATA = Path(__file__).with_name("data")


def _positive_int(cfg: Mapping, key: str, where: str = "", *, maximum: int = v.MAX_LENGTH) -> int:
    val = cfg[key]
    if (isinstance(val, bool) or not isinstance(val, numbers.Real) or not 1 <= val <= maximum
            or not float(val).is_integer()):
        raise ConfigError(f"{where}{key} must be a positive integer up to {maximum:,}, got {val!r}")
    return int(val)


def _positive_real(cfg: Mapping, key: str, where: str = "", *, greater_than: float = 0.0) -> float:
    val = cfg[key]
    try:
        ok = (not isinstance(val, bool) and isinstance(val, numbers.Real) and math.isfinite(float(val))
              and val > greater_than)
    except OverflowError:  # an integer literal beyond the float range
        ok = False
    if not ok:
        raise ConfigError(f"{where}{key} must be a finite number greater than {greater_than:g}, got {val!r}")
    return float(val)


#: Largest config.json read (real ones are a few KiB; LongRoPE lists make them tens of KiB).
MAX_CONFIG_BYTES = 1 << 20


def read_config(config, *, name: str | None = None, source: str | None = None,
                layer_type: str | None = None) -> RopeManifest:
    """Build a manifest from a Hugging Face style ``config.json``.

    Parameters
    ----------
    config : dict or str or os.PathLike
        The parsed configuration, or the path of a JSON file holding it.
    name, source : str, optional
        Labels stored in the manifest (default: ``config["_name_or_path"]`` / the path).
    layer_type : str, optional
        For a configuration whose ``rope_parameters`` holds one block per layer type (the
        transformers 5 layout of models such as Gemma 3: ``{"full_attention": {...},
        "sliding_attention": {...}}``), the layer type whose rotary operator to read. Required
        for such configurations, refused for the others.

    Returns
    -------
    RopeManifest
        With ``pairing="half"`` (the ``rotate_half`` layout of transformers) and
        ``phase_dtype="float32"`` (transformers computes inverse frequencies and angles in float32).

    Raises
    ------
    ConfigError
        (a ``ValueError``) for a missing or malformed field, naming the field.

    Notes
    -----
    Fields read, as transformers reads them:

    * ``rope_theta`` (also inside ``rope_parameters``, or GPT-NeoX's ``rotary_emb_base``; 10,000
      when absent, the default of transformers' configuration classes);
    * ``head_dim`` if present and not null, else ``hidden_size // num_attention_heads``;
    * ``partial_rotary_factor`` (or GPT-NeoX's ``rotary_pct``); the rotary width is
      ``int(head_dim * factor)``, truncated as transformers truncates it, and must be even;
    * ``rope_scaling`` or ``rope_parameters`` (the newer name): see :meth:`ropegeo.scaling.Scaling.from_hf`;
    * ``max_position_embeddings`` and ``original_max_position_embeddings`` (top level, as Phi-3 has it,
      or inside the scaling block, as Llama-3.1 and Qwen2.5 have it).
    """
    from .scaling import Scaling

    if isinstance(config, (str, Path)) or hasattr(config, "__fspath__"):
        if not str(config).strip():
            raise ConfigError("config: the path is empty; give a config.json path or a shipped model name")
        path = Path(config)
        try:
            if path.is_file() and path.stat().st_size > MAX_CONFIG_BYTES:
                raise ConfigError(f"config: {str(path)!r} is {path.stat().st_size:,} bytes; a config.json is far "
                                  f"smaller (at most {MAX_CONFIG_BYTES:,} bytes are read)")
            with path.open("rb") as fh:  # bounded read: a device such as /dev/zero never ends
                raw = fh.read(MAX_CONFIG_BYTES + 1)
            if len(raw) > MAX_CONFIG_BYTES:
                raise ConfigError(f"config: {str(path)!r} holds more than {MAX_CONFIG_BYTES:,} bytes; is it a config.json?")
            text = raw.decode("utf-8")
        except OSError as exc:
            raise ConfigError(f"config: cannot read {str(path)!r}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"config: {str(path)!r} is not UTF-8 text (byte {exc.start}); is it a config.json?") from None
        try:
            config = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"config: {str(path)!r} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
        except RecursionError:
            raise ConfigError(f"config: {str(path)!r} nests its JSON too deeply to be a config.json") from None
        source = source or str(path)
    if not isinstance(config, Mapping):
        raise ConfigError(f"config must be a dict (parsed config.json) or a path, got {type(config).__name__}")
    cfg = config
    for key in ("_name_or_path", "name"):
        if cfg.get(key) is not None and not isinstance(cfg[key], str):
            raise ConfigError(f"{key} must be a string, got {type(cfg[key]).__name__}")
    params_block = cfg.get("rope_parameters")
    per_layer = isinstance(params_block, Mapping) and any(isinstance(b, Mapping) for b in params_block.values())
    if per_layer:
        # a single rope block never holds a dict: any dict value means one block per layer type,
        # and then every value must be one
        bad = [k for k, b in params_block.items() if not isinstance(b, Mapping)]
        if bad:
            raise ConfigError(f"rope_parameters mixes per-layer-type blocks with other entries ({', '.join(map(str, bad))}): "
                              "each value must be the block of one layer type")
        # transformers >= 5 may key rope_parameters by layer type (Gemma 3: full / sliding attention)
        types = ", ".join(map(str, params_block))
        if layer_type is None:
            raise ConfigError(f"rope_parameters holds one block per layer type ({types}); ropegeo audits one "
                              "rotary operator at a time: choose one with layer_type (--layer-type)")
        if not isinstance(layer_type, str) or layer_type not in params_block:
            raise ConfigError(f"layer_type must be one of {types}, got {layer_type!r}")
        if cfg.get("rope_scaling") is not None:
            raise ConfigError("the config has both rope_scaling and per-layer-type rope_parameters; they conflict, "
                              "so ropegeo reads neither: remove one of them")
        block = params_block[layer_type]
        cfg = {**cfg, "rope_parameters": block}
        if block.get("rope_theta") is not None:
            cfg.pop("rope_theta", None)  # the chosen layer's own base wins over a top-level one
        name = name or f"{cfg.get('_name_or_path') or cfg.get('name') or 'config'} ({layer_type})"
    elif layer_type is not None:
        raise ConfigError(f"layer_type {layer_type!r} was given, but this config has a single rope block "
                          "(layer_type is only for rope_parameters keyed by layer type)")

    # --- base
    params = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), Mapping) else None
    if cfg.get("rope_theta") is not None:
        base = _positive_real(cfg, "rope_theta", greater_than=1.0)
    elif params is not None and params.get("rope_theta") is not None:
        base = _positive_real(params, "rope_theta", "rope_parameters.", greater_than=1.0)
    elif cfg.get("rotary_emb_base") is not None:  # GPT-NeoX's name for the base
        base = _positive_real(cfg, "rotary_emb_base", greater_than=1.0)
    else:
        base = 10_000.0

    # --- head dim
    if cfg.get("head_dim") is not None:
        head_dim = _positive_int(cfg, "head_dim", maximum=v.MAX_HEAD_DIM)
    else:
        for key in ("hidden_size", "num_attention_heads"):
            if cfg.get(key) is None:
                raise ConfigError(f"config needs head_dim, or hidden_size and num_attention_heads: {key} is missing")
        hidden = _positive_int(cfg, "hidden_size")
        heads = _positive_int(cfg, "num_attention_heads")
        head_dim = hidden // heads
        if head_dim > v.MAX_HEAD_DIM:
            raise ConfigError(f"hidden_size // num_attention_heads = {head_dim:,} exceeds the widest head "
                              f"ropegeo accepts, {v.MAX_HEAD_DIM:,}")
        if head_dim < 2:
            raise ConfigError(f"hidden_size // num_attention_heads = {head_dim} is too small for a rotary head")
    if head_dim % 2:
        raise ConfigError(f"head_dim must be even, got {head_dim}")

    # --- partial rotary
    prf_key = None
    for key, holder in (("partial_rotary_factor", cfg), ("rotary_pct", cfg)):
        if holder.get(key) is not None:
            prf_key = key
            break
    if prf_key is None and params is not None and params.get("partial_rotary_factor") is not None:
        prf_key = "partial_rotary_factor"
        cfg_prf, where = params, "rope_parameters."
    else:
        cfg_prf, where = cfg, ""
    if prf_key is not None:
        prf = _positive_real(cfg_prf, prf_key, where)
        if prf > 1:
            raise ConfigError(f"{where}{prf_key} must be in (0, 1], got {prf:g}")
        rotary_dim = int(head_dim * prf)
        if rotary_dim < 2 or rotary_dim % 2:
            raise ConfigError(
                f"{where}{prf_key}={prf:g} gives int({head_dim} * {prf:g}) = {rotary_dim} rotary coordinates; "
                "it must be an even number of at least 2"
            )
    else:
        rotary_dim = head_dim

    # --- context lengths
    max_pos = _positive_int(cfg, "max_position_embeddings") if cfg.get("max_position_embeddings") is not None else None
    orig = (
        _positive_int(cfg, "original_max_position_embeddings")
        if cfg.get("original_max_position_embeddings") is not None
        else None
    )

    # --- scaling block
    block = None
    block_name = None
    for key in ("rope_scaling", "rope_parameters"):
        if cfg.get(key) is not None:
            block, block_name = cfg[key], key
            break
    try:
        scaling = Scaling.from_hf(
            block,
            field_name=block_name or "rope_scaling",
            max_position_embeddings=max_pos,
            original_max_position_embeddings=orig,
            pairs=rotary_dim // 2,
        )
        if scaling is not None:
            scaling.check_pairs(rotary_dim // 2)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if scaling is not None and scaling.original_max_position_embeddings is not None and orig is None:
        orig = scaling.original_max_position_embeddings

    return RopeManifest(
        base=base,
        head_dim=head_dim,
        rotary_dim=rotary_dim,
        pairing="half",
        position_id_policy="contiguous",
        scaling=scaling,
        cache_offset=0,
        phase_dtype="float32",
        max_position_embeddings=max_pos,
        original_max_position_embeddings=orig,
        name=name or cfg.get("_name_or_path") or cfg.get("name"),
        source=source or cfg.get("source"),
    )


def shipped_models() -> list[str]:
    """Names of the model configurations shipped with ropegeo (``ropegeo/data/*.json``)."""
    return sorted(p.stem for p in _DATA.glob("*.json"))


def load_model(name: str) -> RopeManifest:
    """The manifest of a shipped model configuration.

    Parameters
    ----------
    name : str
        One of :func:`shipped_models` (e.g. ``"llama-3.1-8b"``); case-insensitive.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known ones.
    """
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    path = _DATA / f"{key}.json"
    if not path.is_file():
        raise ValueError(f"name {name!r} is not a shipped model; known: {', '.join(shipped_models())}")
    raw = json.loads(path.read_text(encoding="utf-8"))
    return read_config(raw["config"], name=raw.get("model", key), source=raw.get("source"))


def model_record(name: str) -> dict:
    """The raw shipped record of a model: ``model``, ``source``, ``read_on`` and ``config``."""
    load_model(name)  # validates the name
    return json.loads((_DATA / f"{name.strip().lower()}.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------- auditing a configuration
#: Gate B's default offset sets: every offset up to 64 (local order) and 48 log-spaced offsets up to
#: the target length (long-range retrieval).
LOCAL_OFFSETS = 64
DISTANT_OFFSETS = 48


@dataclass(frozen=True)
class ConfigAudit:
    """The geometry audit of one model configuration (from :func:`config_audit`).

    Every length is in tokens, every frequency in radians per position. ``theta`` and
    ``attention_factor`` are those served at ``target_length`` (the rule's ``seq_len``).
    """

    manifest: RopeManifest
    train_length: int
    target_length: int
    theta: np.ndarray
    attention_factor: float
    wavelength_range: tuple[float, float]
    pairs_longer_than_train: int
    pairs_longer_than_target: int
    slow_pairs_train: int
    slow_pairs_target: int
    scaled_pairs: int
    adjacent_similarity: float
    relative_law_error: float
    search_range: tuple[int, int]
    top_offsets: list = field(default_factory=list)
    margins: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready: every field, the manifest as a dict, ``theta`` as a list."""
        return {
            "manifest": self.manifest.to_dict(),
            "train_length": self.train_length,
            "target_length": self.target_length,
            "attention_factor": self.attention_factor,
            "theta": [float(x) for x in self.theta],
            "wavelength_range": list(self.wavelength_range),
            "pairs": int(self.theta.size),
            "pairs_longer_than_train": self.pairs_longer_than_train,
            "pairs_longer_than_target": self.pairs_longer_than_target,
            "slow_pairs_train": self.slow_pairs_train,
            "slow_pairs_target": self.slow_pairs_target,
            "scaled_pairs": self.scaled_pairs,
            "adjacent_similarity": self.adjacent_similarity,
            "relative_law_error": self.relative_law_error,
            "search_range": list(self.search_range),
            "top_offsets": list(self.top_offsets),
            "margins": dict(self.margins),
        }

    def row(self) -> dict:
        """The headline numbers as one flat dict (for a comparison table across models)."""
        m = self.manifest
        local = next(iter(self.margins.values()))["margin"] if self.margins else None
        return {
            "model": (m.name or "?").split("/")[-1],
            "base": m.base,
            "rotary/head": f"{m.rotary_dim}/{m.head_dim}",
            "train": self.train_length,
            "target": self.target_length,
            "rule": "none" if m.scaling is None else m.scaling.rule,
            "attention": round(self.attention_factor, 4),
            "slow pairs": self.slow_pairs_train,
            "K(1)": round(self.adjacent_similarity, 5),
            "margin 1..64": None if local is None else round(local, 4),
        }

    def to_json(self, **kwargs) -> str:
        """:meth:`to_dict` as JSON."""
        return json.dumps(self.to_dict(), **kwargs)

    def table(self) -> str:
        """The manifest followed by the audit, as aligned text."""
        lo, hi = self.wavelength_range
        p = int(self.theta.size)
        rows = [
            ("train -> target length", f"{self.train_length:,} -> {self.target_length:,}"),
            ("attention factor at target", f"{self.attention_factor:.6g}"),
            ("pairs rescaled by the rule", f"{self.scaled_pairs} of {p}"),
            ("wavelengths at target", f"{lo:,.4g} .. {hi:,.6g} tokens"),
            ("pairs longer than train / target", f"{self.pairs_longer_than_train} / {self.pairs_longer_than_target} of {p}"),
            ("slow pairs (< 1 turn): train, target", f"{self.slow_pairs_train}, {self.slow_pairs_target} of {p}"),
            ("adjacent similarity K(1)", f"{self.adjacent_similarity:.6f}"),
            ("relative-law error (float64)", f"{self.relative_law_error:.3e}"),
        ]
        s0, s1 = self.search_range
        for i, hit in enumerate(self.top_offsets):
            label = f"identity-like offsets in [{s0:,}, {s1:,}]" if i == 0 else ""
            rows.append((label, f"{hit['offset']:,} (K = {hit['similarity']:.6f})"))
        for name, m in self.margins.items():
            rows.append((f"Gate B margin, {name}", f"{m['margin']:.4g} between {m['pair'][0]:g} and {m['pair'][1]:g} ({m['dtype']})"))
        width = max(len(r[0]) for r in rows)
        audit = "\n".join(f"{k:<{width}}  {val}" for k, val in rows)
        return self.manifest.table() + "\n" + "-" * 40 + "\n" + audit

    def __str__(self) -> str:
        return self.table()


def default_offsets(target_length: int) -> dict[str, np.ndarray]:
    """Gate B's default offset sets for a target length (at least 3).

    ``"local 1..64"``: every offset from 1 to ``min(64, target - 1)``;
    ``"distant"``: 48 log-spaced integers from 64 to ``target - 1`` (duplicates removed; only when
    the target exceeds 128).
    """
    n = v.length("target_length", target_length, minimum=3)
    local = np.arange(1, min(LOCAL_OFFSETS, n - 1) + 1, dtype=np.float64)
    sets = {f"local 1..{int(local[-1])}": local}
    if n > 2 * LOCAL_OFFSETS:
        sets[f"distant 64..{n - 1:,}"] = np.unique(np.round(np.geomspace(LOCAL_OFFSETS, n - 1, DISTANT_OFFSETS)))
    return sets


def config_audit(
    manifest: RopeManifest,
    target_length: int | None = None,
    *,
    search_limit: int = 100_000,
    top: int = 3,
) -> ConfigAudit:
    """Audit the geometry a model configuration supplies, at its training and target lengths.

    Parameters
    ----------
    manifest : RopeManifest
        E.g. from :func:`read_config` or :func:`load_model`. Needs a known training length.
    target_length : int, optional
        Context to serve (at least 3). Default: :attr:`RopeManifest.target_length`.
    search_limit : int
        Largest offset of the near-collision search (at least 2; the search covers
        ``[train_length, min(target_length, search_limit)]``).
    top : int
        How many identity-like offsets to list (1 to 20).

    Returns
    -------
    ConfigAudit

    Raises
    ------
    ValueError
        If the manifest has no context length, or an argument is out of range.
    """
    from .audit import relative_law_error
    from .frequencies import frequencies, slow_pairs, wavelengths
    from .geometry import adjacent_similarity, near_collisions
    from .margins import separation_margin

    if not isinstance(manifest, RopeManifest):
        raise ValueError(f"manifest must be a RopeManifest, got {type(manifest).__name__}")
    train = manifest.train_length
    if train is None:
        raise ValueError("the manifest has no max_position_embeddings: the training length is unknown")
    if target_length is None:
        target_length = manifest.target_length
    target = v.length("target_length", target_length, minimum=3)
    search_limit = v.length("search_limit", search_limit, minimum=2)
    top = v.integer("top", top, minimum=1, maximum=20)
    theta, att = manifest.theta(target), manifest.attention_factor(target)
    plain = frequencies(manifest.rotary_dim, manifest.base)
    lam = wavelengths(theta)
    stop = min(target, search_limit)
    start = min(max(2, train), stop)
    hits = near_collisions(theta, start, stop, top=top)
    margins = {}
    for name, offs in default_offsets(target).items():
        m = separation_margin(offs, theta, dtype=manifest.phase_dtype)
        margins[name] = {"margin": m.margin, "pair": list(m.pair), "dtype": m.dtype, "n_offsets": m.n_offsets}
    err = relative_law_error(manifest.head_dim, manifest.base, theta=theta, pairing=manifest.pairing,
                             position_pairs=[(3, 11), (17, 29), (101, 503), (train // 3, train - 1)])
    return ConfigAudit(
        manifest=manifest,
        train_length=int(train),
        target_length=int(target),
        theta=theta,
        attention_factor=float(att),
        wavelength_range=(float(lam.min()), float(lam.max())),
        pairs_longer_than_train=int(np.count_nonzero(lam > train)),
        pairs_longer_than_target=int(np.count_nonzero(lam > target)),
        slow_pairs_train=slow_pairs(plain, train),
        slow_pairs_target=slow_pairs(theta, target),
        scaled_pairs=int(np.count_nonzero(np.abs(plain / theta - 1.0) > 1e-3)),
        adjacent_similarity=adjacent_similarity(theta),
        relative_law_error=err,
        search_range=(start, stop),
        top_offsets=[{"offset": h.offset, "similarity": h.similarity} for h in hits],
        margins=margins,
    )


def resolve(name_or_path, *, layer_type: str | None = None) -> RopeManifest:
    """A shipped model name (see :func:`shipped_models`) or the path of a ``config.json``.

    ``layer_type`` is passed to :func:`read_config` (for configurations keyed by layer type).

    Raises
    ------
    ValueError
        If it is neither a shipped name nor a readable configuration file.
    """
    if not isinstance(name_or_path, (str, Path)):
        raise ValueError(f"config must be a model name or a path, got {type(name_or_path).__name__}")
    text = str(name_or_path)
    if not text.strip():
        raise ConfigError(f"config is empty; give a config.json path or one of: {', '.join(shipped_models())}")
    if text.strip().lower() in shipped_models():
        if layer_type is not None:
            raise ConfigError(f"layer_type {layer_type!r} was given, but the shipped model {text!r} has a single "
                              "rope block")
        return load_model(text)
    p = Path(text)
    if not p.exists():
        raise ConfigError(
            f"config {text!r} is neither a file nor a shipped model; shipped: {', '.join(shipped_models())}"
        )
    return read_config(p, layer_type=layer_type)
