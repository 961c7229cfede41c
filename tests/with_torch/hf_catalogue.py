"""transformers' rotary code for the defects of issue 23's catalogue, as Gate A callables.

- ``PHIMOE``: Phi-3.5-MoE's rope block (transformers' own PhiMoE test values: 8 pairs,
  ``short_mscale`` = ``long_mscale`` = 1.2432). ``PhimoeLongFactors`` is transformers'
  ``PhimoeRotaryEmbedding`` with one line changed: its forward rotates with the ``inv_freq``
  buffer that ``dynamic_rope_update`` switches to the long factors for a pass past the original
  length (the shipped 5.24 forward recomputes the frequencies with ``rope_init_fn(config)``, no
  sequence length, and so rotates with the short factors at every length).
- ``StaleDynamicNTK``: transformers' ``LlamaRotaryEmbedding`` under a dynamic NTK block whose
  forward grows the base for a long pass and never restores it for a shorter one (the stale cache
  of transformers issue 25306, as ``LlamaDynamicNTKScalingRotaryEmbedding`` once did).
- ``llama_with_roles``: Llama's rotary module and ``apply_rotary_pos_emb(q, k, cos, sin)`` with the
  role protocol (``q_embed`` for queries, ``k_embed`` for keys, values untouched); a defect breaks
  one side only.

Imported only when torch and transformers are installed (``make test-torch``).
"""

from __future__ import annotations

import torch
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS, dynamic_rope_update
from transformers.models.llama import modeling_llama as llama
from transformers.models.phimoe import modeling_phimoe as phimoe

from torch_io import _batched, _in, _out

#: Phi-3.5-MoE's rope block with transformers' PhiMoE test values (8 pairs of a 16-wide head)
PHIMOE = {"model_type": "phimoe", "hidden_size": 128, "num_attention_heads": 8, "num_key_value_heads": 8,
          "max_position_embeddings": 131_072, "original_max_position_embeddings": 4096, "rope_theta": 10_000.0,
          "rope_scaling": {"type": "longrope", "original_max_position_embeddings": 4096,
                           "short_factor": [1.0, 1.0399999618530273, 1.0399999618530273, 1.0399999618530273,
                                            1.0499999523162842, 1.0499999523162842, 1.0499999523162842,
                                            1.0499999523162842],
                           "long_factor": [1.0199999809265137, 1.0299999713897705, 1.0399999618530273,
                                           1.0499999523162842, 1.0499999523162842, 1.0499999523162842,
                                           1.059999942779541, 1.059999942779541],
                           "short_mscale": 1.243163121016122, "long_mscale": 1.243163121016122}}


class PhimoeLongFactors(phimoe.PhimoeRotaryEmbedding):
    """``PhimoeRotaryEmbedding.forward`` reading the frequencies ``dynamic_rope_update`` chose
    (long factors past the original length) instead of recomputing the short ones."""

    @dynamic_rope_update
    def forward(self, x, position_ids=None):
        seq_len = torch.max(position_ids) + 1
        params = self.config.rope_parameters
        mscale = params["long_mscale"] if seq_len > params["original_max_position_embeddings"] else params["short_mscale"]
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * mscale).to(x.dtype), (emb.sin() * mscale).to(x.dtype)


class StaleDynamicNTK(llama.LlamaRotaryEmbedding):
    """Dynamic NTK that grows its base for a pass longer than any before and never resets it."""

    def forward(self, x, position_ids):
        seq_len = int(torch.max(position_ids)) + 1
        if seq_len > self.max_seq_len_cached:  # growth, as transformers does it
            rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]
            inv_freq, self.attention_scaling = rope_init_fn(self.config, x.device, seq_len=seq_len)
            self.register_buffer("inv_freq", inv_freq, persistent=False)
            self.max_seq_len_cached = seq_len
        # no reset for a shorter pass: the undecorated forward rotates with whatever is cached
        return llama.LlamaRotaryEmbedding.forward.__wrapped__(self, x, position_ids)


#: role-protocol defects: which side breaks, and how
ROLE_DEFECTS = ("keys-mirrored", "queries-mirrored", "keys-interpolated", "queries-interpolated")


def llama_with_roles(defect=None, dtype="float32", *, head_dim=64, base=10_000.0):
    """Llama's rotary module + ``apply_rotary_pos_emb(q, k, cos, sin)`` as ``f(x, positions, role)``.

    ``defect`` breaks one side: ``"keys-mirrored"`` passes ``-sin`` for the keys (they rotate the
    other way); ``"keys-interpolated"`` forms the keys' cos and sin at positions / 4 (a position
    interpolation applied to keys only); ``"queries-..."`` break the queries instead.
    """
    cfg = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim, max_position_embeddings=131_072,
                      rope_parameters={"rope_type": "default", "rope_theta": base})
    module = llama.LlamaRotaryEmbedding(cfg)
    side, _, kind = (defect or "-").partition("-")
    if defect is not None and defect not in ROLE_DEFECTS:
        raise ValueError(f"defect must be one of {ROLE_DEFECTS}, got {defect!r}")

    def f(x, positions, role="query"):
        (xt, pos), single = _batched(_in(x, dtype), positions)
        if role == "value":
            return _out(xt[0] if single else xt, dtype)
        broken = role == {"keys": "key", "queries": "query"}.get(side)
        with torch.no_grad():
            cos, sin = module(xt, pos.float() * 0.25 if broken and kind == "interpolated" else pos)
            if broken and kind == "mirrored":
                sin = -sin
            q = xt[:, None]
            q_embed, k_embed = llama.apply_rotary_pos_emb(q, q, cos, sin)
            out = (k_embed if role == "key" else q_embed)[:, 0]
        return _out(out[0] if single else out, dtype)

    return f
