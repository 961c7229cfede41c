"""transformers' own rotary code (Llama, GPT-NeoX, GPT-J) wrapped as Gate A callables f(x, positions).

Each wrapper takes numpy ``x`` of shape ``(seq, head_dim)`` or ``(batch, seq, head_dim)`` and
integer positions of shape ``(seq,)`` or ``(batch, seq)``, runs the model's rotary embedding
module and its ``apply_rotary_pos_emb`` in the serving dtype (float32, bfloat16 or float16), and
returns numpy in that dtype (bfloat16 through ``ml_dtypes``). A *defect* rebuilds the same parts
the way a broken integration would. Imported only when torch and transformers are installed.
"""

from __future__ import annotations

import torch
from transformers.models.gpt_neox import modeling_gpt_neox as neox
from transformers.models.gptj import modeling_gptj as gptj
from transformers.models.llama import modeling_llama as llama
from transformers import GPTJConfig, GPTNeoXConfig, LlamaConfig

from torch_io import _batched, _in, _out, _positions

#: What each family declares (keyword arguments of ropegeo.gates.a.gate.gate_a).
DECLARED = {
    "llama": dict(head_dim=64, base=500_000.0, pairing="half", max_position=131_072),
    "neox": dict(head_dim=64, base=10_000.0, pairing="half", rotary_dim=16, max_position=131_072),
    "gptj": dict(head_dim=64, base=10_000.0, pairing="interleaved", rotary_dim=32, max_position=2_048),
}


def _rotate_every_two(x):
    """GPT-J's pairing on a tensor of any rank."""
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def llama_rotary(dtype="float32", defect=None, *, head_dim=64, base=500_000.0, family="llama", rope_parameters=None,
                 max_position_embeddings=131_072):
    """Llama's (or GPT-NeoX's) LlamaRotaryEmbedding + apply_rotary_pos_emb as f(x, positions).

    ``rope_parameters`` (Llama only) replaces the default block, e.g. a llama3 or yarn scaling rule.
    """
    if family == "llama":
        params = rope_parameters or {"rope_type": "default", "rope_theta": base}
        cfg = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                          max_position_embeddings=max_position_embeddings, rope_parameters=dict(params))
        module, apply = llama.LlamaRotaryEmbedding(cfg), llama.apply_rotary_pos_emb
    else:
        cfg = GPTNeoXConfig(hidden_size=4 * head_dim, num_attention_heads=4, max_position_embeddings=131_072,
                            rope_parameters={"rope_type": "default", "rope_theta": base, "partial_rotary_factor": 0.25})
        module, apply = neox.GPTNeoXRotaryEmbedding(cfg), neox.apply_rotary_pos_emb

    def f(x, positions):
        xt, single = None, None
        (xt, pos), single = _batched(_in(x, dtype), positions)
        pos = _positions(pos, defect)
        with torch.no_grad():
            if defect == "bf16-angles":  # the angle table formed in bfloat16
                freqs = pos[..., None].to(torch.bfloat16) * module.inv_freq.to(torch.bfloat16)
                emb = torch.cat((freqs, freqs), dim=-1).float()
                cos, sin = emb.cos().to(xt.dtype), emb.sin().to(xt.dtype)
            else:
                cos, sin = module(xt, pos)
            if defect == "mirrored":
                sin = -sin
            q = xt[:, None]
            if defect == "wrong-pairing":  # the GPT-J helper on half-split cos/sin
                r = cos.shape[-1]
                c = torch.repeat_interleave(cos[..., : r // 2], 2, -1)[:, None]
                s = torch.repeat_interleave(sin[..., : r // 2], 2, -1)[:, None]
                out = torch.cat([q[..., :r] * c + _rotate_every_two(q[..., :r]) * s, q[..., r:]], dim=-1)
            else:
                out, _ = apply(q, q, cos, sin)
            if defect == "query-scaled":  # an attention temperature folded into the rotation
                out = out * 1.25
            out = out[:, 0]
        return _out(out[0] if single else out, dtype)

    return f


def gptj_rotary(dtype="float32", defect=None, *, head_dim=64, rotary_dim=32, max_positions=2_048):
    """GPT-J's sinusoidal table (GPTJRotaryEmbedding) + its apply_rotary_pos_emb as f(x, positions)."""
    table_rows = 4096 if defect == "wrapped-table" else max_positions
    cfg = GPTJConfig(n_embd=4 * head_dim, n_head=4, rotary_dim=rotary_dim, n_positions=table_rows)
    module = gptj.GPTJRotaryEmbedding(cfg)

    def f(x, positions):
        (xt, pos), single = _batched(_in(x, dtype), positions)
        pos = _positions(pos, defect)
        with torch.no_grad():
            sin, cos = module(xt, pos)
            rot = xt[:, :, None, :rotary_dim]  # (B, seq, heads=1, rotary_dim), GPT-J's layout
            out = torch.cat([gptj.apply_rotary_pos_emb(rot, sin, cos)[:, :, 0], xt[..., rotary_dim:]], dim=-1)
        return _out(out[0] if single else out, dtype)

    return f


# module-level callables for the command line (python -m ropegeo gate-a hf_rotary:llama_bf16 ...)
llama_bf16 = llama_rotary("bfloat16")
llama_bf16_wrapped = llama_rotary("bfloat16", "wrapped-table")
