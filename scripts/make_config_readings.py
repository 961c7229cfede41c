"""Regenerate tests/data/config_readings.json: what transformers makes of each config of tests/config_corpus.py.

    make test-torch          # once, to build .venv-torch (torch CPU + transformers)
    PYTHONPATH=. .venv-torch/bin/python scripts/make_config_readings.py

For every case, transformers' own configuration class (``AutoConfig.for_model``, a wrapper's
``get_text_config()``) and the text model's rotary module are built from the ``config.json``, and the
layers are grouped by (layer type, whether the layer rotates). For each group: its layer indices, the
window its attention uses (``sliding_window`` on sliding layers, Llama 4's ``attention_chunk_size`` on
chunked ones, a model's single window where its modeling file reads one), and, for a rotating group, the
rotary module called as within a forward pass of each of the two lengths: every non-zero frequency of
``inv_freq`` (GPT-J and CodeGen: the angle at position 1 of their sin/cos table), the attention factor,
the head width, the rotary width (twice the turning frequencies), the pairing and the width the pairs are
laid across (the module's cos/sin applied by the model's ``apply_rotary_pos_emb`` to the basis vectors:
e_0 turning into e_1 is interleaved, into e_p half-split over 2p coordinates), and M-RoPE's sections and
layout (a time-only position moves the first section's block, or every third pair). Where transformers
refuses the config, its exception is stored. Whether a layer rotates follows the model's attention code:
Llama 4 and SmolLM3 skip RoPE where ``no_rope_layers`` is 0, Cohere2 rotates only its windowed layers, an
ALiBi Falcon none.

``tests/with_torch/test_config_corpus.py`` re-derives the file and compares.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "scripts")]

import config_corpus  # noqa: E402


def module(model_type: str):
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    name = model_type_to_module_name(model_type)
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


def rotary_class(mod):
    """The text rotary module class of a transformers modeling module (the shortest ``*RotaryEmbedding`` name)."""
    found = [c for n, c in vars(mod).items() if isinstance(c, type) and n.endswith("RotaryEmbedding")
             and "vision" not in n.lower()]
    assert found, f"no rotary module in {mod.__name__}"
    return min(found, key=lambda c: len(c.__name__))


def _rotary(mod, text):
    return rotary_class(mod)(text)


def hf_config(cfg: dict):
    """transformers' configuration of a config.json dict (its text model's, for a wrapper)."""
    from transformers import AutoConfig

    cfg = copy.deepcopy(cfg)
    cfg.pop("_name_or_path", None)
    config = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return text if text is not None else config


def _rotates(text, i: int, kind) -> bool:
    if text.model_type in ("llama4_text", "smollm3"):  # the attention skips RoPE where no_rope_layers[i] is 0
        return bool(text.no_rope_layers[i])
    if kind == "linear_attention":  # Qwen3-Next, Qwen3.5: linear-attention (Gated DeltaNet) layers have no RoPE
        return False
    if text.model_type == "falcon" and text.alibi:  # FalconAttention: ALiBi instead of a rotary embedding
        return False
    if text.model_type == "cohere2":  # Cohere2Attention: rotary only where the layer has a window
        return kind == "sliding_attention" and text.sliding_window is not None
    return True


def _window(text, mod, kind):
    if kind == "chunked_attention":
        return text.attention_chunk_size
    if kind is not None:
        return text.sliding_window if kind == "sliding_attention" else None
    reads = "sliding_window" in Path(mod.__file__).read_text()
    on = getattr(text, "use_sliding_window", True) is not False
    return getattr(text, "sliding_window", None) if reads and on else None


def _call(rotary, positions, kw):
    """cos, sin of the module at these positions (a list), 1D ids or M-RoPE's three equal streams."""
    import torch

    ids = torch.tensor([positions])
    try:
        return rotary(torch.zeros(1, 1, 8), ids, **kw)
    except Exception:  # noqa: BLE001 - M-RoPE modules take (3, batch, seq) ids
        return rotary(torch.zeros(1, 1, 8), ids[None].expand(3, 1, len(positions)), **kw)


def _frequencies(text, mod, kind, n):
    """(inv_freq as float64 numpy, attention factor) of a module called as within a pass of n tokens."""
    import torch

    rotary = _rotary(mod, text)
    if hasattr(rotary, "embed_positions"):  # GPT-J, CodeGen: a sin/cos table
        sin, cos = torch.split(rotary.embed_positions[1].double(), rotary.embed_positions.shape[-1] // 2)
        return torch.atan2(sin, cos).numpy(), 1.0
    kw = {"layer_type": kind} if "layer_type" in inspect.signature(rotary.forward).parameters else {}
    with torch.no_grad():
        _call(rotary, [0, n - 1], kw)
    prefix = f"{kind}_" if kw else ""
    return (getattr(rotary, f"{prefix}inv_freq").double().numpy(),
            float(getattr(rotary, f"{prefix}attention_scaling", 1.0)))


def _pairing(text, mod, kind, rotary_dim):
    """(pairing, width the pairs are laid across) from the module's cos/sin and the model's apply function."""
    import torch

    from make_pairing_table import _images

    rotary = _rotary(mod, text)
    if hasattr(rotary, "embed_positions"):  # GPT-J, CodeGen: the sin/cos table and rotate_every_two
        return _partner(_images("table", rotary.embed_positions[1], mod.apply_rotary_pos_emb, torch), rotary_dim)
    if not hasattr(mod, "apply_rotary_pos_emb") and hasattr(mod, "apply_rotary_emb"):  # Llama 4: complex numbers
        return _partner(_images("complex", rotary, mod.apply_rotary_emb, torch), rotary_dim)
    interleave = bool(getattr(text, "rope_interleave", False)) and hasattr(mod, "apply_rotary_pos_emb_interleave")
    apply = mod.apply_rotary_pos_emb_interleave if interleave else mod.apply_rotary_pos_emb
    one = len(inspect.signature(apply).parameters) < 5 or "k" not in inspect.signature(apply).parameters
    kw = {"layer_type": kind} if "layer_type" in inspect.signature(rotary.forward).parameters else {}
    maps = []
    with torch.no_grad():
        for p in (0, 1):  # position 0 reveals a fixed output order (DeepSeek-V3), position 1 the pairs
            cos, sin = (t[..., -1:, :] for t in _call(rotary, [0, p], kw))
            w = cos.shape[-1]
            d = 2 * w if mod.__name__.endswith("gpt_oss") else w  # gpt-oss keeps one angle per pair
            q = torch.eye(d)[None, None]
            cos, sin = cos.expand(1, d, w), sin.expand(1, d, w)
            maps.append(apply(q, cos, sin, unsqueeze_dim=1)[0, 0] if one else apply(q, q, cos, sin)[0][0, 0])
    scale = float(maps[0].abs().amax())
    order = (maps[0] / scale).round()
    return _partner(maps[1] @ order.T / scale, rotary_dim)


def _partner(out, rotary_dim):
    import torch

    out = out.double()
    moved = (out[0] - torch.eye(out.shape[-1])[0]).abs()
    moved[0] = 0.0
    p = int(moved.argmax())
    return ("interleaved", rotary_dim) if p == 1 and rotary_dim > 2 else ("half", 2 * p)


def _head_dim(text, layer: int) -> int:
    """The width of a layer's query/key heads that the rotary module serves (DeepSeek: qk_rope_head_dim;
    Gemma 4: the layer's own head_dim, global_head_dim on full-attention layers)."""
    if getattr(text, "qk_rope_head_dim", None):
        return text.qk_rope_head_dim
    if text.model_type.startswith("gemma4"):  # head_dim differs per layer kind
        return text.per_layer_config[layer].head_dim
    if getattr(text, "head_dim", None):
        return text.head_dim
    if hasattr(text, "num_attention_heads"):
        return text.hidden_size // text.num_attention_heads
    return text.n_embd // text.n_head


def _mrope(text, mod, pairs):
    """(sections, interleaved) of an M-RoPE text model, or (None, None)."""
    import torch

    rp = getattr(text, "rope_parameters", None) or {}
    sec = rp.get("mrope_section") if isinstance(rp, dict) else None
    if sec is None:
        return None, None
    rotary = _rotary(mod, text)
    pos = torch.zeros(3, 1, 1, dtype=torch.long)
    pos[0] = 5  # a time-only position: the pairs that follow the time id turn
    with torch.no_grad():
        cos, _ = rotary(torch.zeros(1, 1, 8), pos)
    moved = (cos[0, 0, :pairs] != 1).tolist()
    return list(sec), moved != [j < sec[0] for j in range(pairs)]


def reading(cfg: dict, lens) -> dict:
    """transformers' reading of one config.json (see the module docstring); its exception where it refuses
    the config or fails to run the rotary module with it."""
    try:
        text = hf_config(cfg)
        mod = module(text.model_type)
        for kind in set(getattr(text, "layer_types", None) or ["full_attention"]):
            _frequencies(text, mod, kind, 8)
    except Exception as exc:  # noqa: BLE001 - transformers' own validation, or its module failing
        return {"refused": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
    return _reading(text, mod, lens)


def _reading(text, mod, lens) -> dict:
    n = getattr(text, "num_hidden_layers", None) or getattr(text, "n_layer")
    types = getattr(text, "layer_types", None) or [None] * n
    groups: dict = {}
    for i, kind in enumerate(types):
        key = (kind, _rotates(text, i, kind))
        groups.setdefault(key, []).append(i)
    out = []
    for (kind, rotates), layers in groups.items():
        g = {"kind": kind, "layers": layers, "rotates": rotates}
        if rotates:
            g["window"] = _window(text, mod, kind)
            theta, att = {}, {}
            for L in lens:
                inv, a = _frequencies(text, mod, kind or "full_attention", L)
                theta[str(L)], att[str(L)] = inv[inv != 0].tolist(), a
            pairs = len(theta[str(lens[0])])
            head = _head_dim(text, layers[0])
            pairing, width = _pairing(text, mod, kind or "full_attention", 2 * pairs)
            sections, interleaved = _mrope(text, mod, pairs)
            g.update(head_dim=head, rotary_dim=2 * pairs, pairing=pairing, pairing_width=width, theta=theta,
                     attention=att, sections=sections, interleaved=interleaved)
        out.append(g)
    return {"groups": out}


def build() -> dict:
    import transformers

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    cases = {name: reading(config_corpus.config(name), config_corpus.lengths(case))
             for name, case in config_corpus.CASES.items()}
    return {"transformers": transformers.__version__, "method": __doc__.split("\n\n")[2].replace("\n", " "),
            "cases": cases}


def main() -> int:
    data = build()
    config_corpus.READINGS.parent.mkdir(exist_ok=True)
    config_corpus.READINGS.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n")
    refused = sum("refused" in c for c in data["cases"].values())
    print(f"{config_corpus.READINGS}: {len(data['cases'])} configs ({refused} refused), "
          f"transformers {data['transformers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
