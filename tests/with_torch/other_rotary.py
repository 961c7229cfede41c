"""Rotary code of widely used libraries besides transformers, wrapped as Gate A callables f(x, positions).

Libraries (the versions ``make test-torch`` pins):

``lucidrains``
    rotary-embedding-torch 0.9.1, ``RotaryEmbedding(dim=32)`` on 64-wide heads (its README's
    partial rotary), interleaved pairs. Two ways its users index it: ``positions`` calls the module
    on the position ids (``freqs = rotary(pos)``) and ``apply_rotary_emb(freqs, x)``; ``offset``
    is ``rotate_queries_or_keys(x, offset=start)`` (its KV-cache path), whose positions are made by
    the module's own ``get_seq_pos(seq_len, dtype=x.dtype, offset)``, so each token is wrapped as a
    run of length one at ``offset = p`` (the same arithmetic, vectorised).
``x_transformers``
    x-transformers 2.31.10, ``RotaryEmbedding(32)`` (its default ``rotary_emb_dim`` for 64-wide
    heads, ``max(dim_head // 2, 32)``) called on the position ids, then ``apply_rotary_pos_emb``;
    adjacent pairs (its ``rotate_half`` splits ``(d r)`` with ``r = 2``).
``torchtune``
    torchtune 0.6.1, ``RotaryPositionalEmbeddings`` (Llama 3: head 128, base 500,000, a cache of
    ``max_seq_len`` = 8,192 rows) and ``Llama3ScaledRoPE`` (Llama 3.1: 131,072 rows), called with
    ``input_pos`` of shape ``(batch, seq)``: interleaved pairs.
``llama_models``
    Meta's llama-models 0.3.0, ``precompute_freqs_cis(128, 2 * max_seq_len, 500_000,
    use_scaled=True)`` (Llama 3.1's ``apply_scaling``) and ``apply_rotary_emb`` on complex pairs
    (interleaved). Its ``Transformer`` slices the table at ``start_pos:start_pos + seqlen``; the
    wrapper indexes the table at the position ids (the same rows for a contiguous run) and runs
    one sequence per batch row, as Meta's code serves one ``start_pos`` per call.
``mistral_inference``
    mistral-inference 1.6.0 ``rope.py``: ``precompute_freqs_cis(128, 128_000, 1e6)`` indexed at the
    per-token ``positions`` of a packed batch (as its ``Transformer`` does) and ``apply_rotary_emb``
    on complex pairs (interleaved).

Each wrapper takes numpy ``x`` of shape ``(seq, head_dim)`` or ``(batch, seq, head_dim)`` and
integer positions of shape ``(seq,)`` or ``(batch, seq)``, runs the library's code with data in the
serving dtype (float32, bfloat16 or float16; the module's own tables stay as the library builds
them, in float32) and returns numpy in that dtype. A *defect* rebuilds the same parts the way a
broken integration would. Imported only when torch is installed; a library that is absent makes
its constructor raise ``ImportError``.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import torch

from torch_io import DTYPES, WRAP_ROWS, _batched, _in, _out, _positions

#: library -> the module whose presence it needs
MODULES = {
    "lucidrains": "rotary_embedding_torch",
    "lucidrains-offset": "rotary_embedding_torch",
    "x_transformers": "x_transformers",
    "torchtune-llama3": "torchtune",
    "torchtune-llama3.1": "torchtune",
    "llama_models": "llama_models",
    "mistral_inference": "mistral_inference",
}

#: What each library declares (keyword arguments of ropegeo.gates.a.gate.gate_a; ``llama3.1`` is
#: replaced by Llama 3.1's scaled frequencies, see :func:`declared`).
DECLARED = {
    "lucidrains": dict(head_dim=64, base=10_000.0, pairing="interleaved", rotary_dim=32, max_position=131_072),
    "lucidrains-offset": dict(head_dim=64, base=10_000.0, pairing="interleaved", rotary_dim=32, max_position=131_072),
    "x_transformers": dict(head_dim=64, base=10_000.0, pairing="interleaved", rotary_dim=32, max_position=131_072),
    "torchtune-llama3": dict(head_dim=128, base=500_000.0, pairing="interleaved", max_position=8_192),
    "torchtune-llama3.1": dict(head_dim=128, pairing="interleaved", max_position=131_072, llama3_1=True),
    "llama_models": dict(head_dim=128, pairing="interleaved", max_position=131_072, llama3_1=True),
    "mistral_inference": dict(head_dim=128, base=1_000_000.0, pairing="interleaved", max_position=32_768),
}


def installed(library: str) -> bool:
    """Whether the library's package is importable (checked without importing it)."""
    spec = importlib.util.find_spec(MODULES[library])
    return spec is not None and spec.origin not in (None, "namespace")


def declared(library: str) -> dict:
    """gate_a keywords of ``library``: Llama 3.1's frequencies come from the shipped manifest."""
    out = dict(DECLARED[library])
    if out.pop("llama3_1", False):
        from ropegeo.models.manifest import resolve

        out["theta"] = resolve("llama-3.1-8b").theta_at()
    return out


# --------------------------------------------------------------------------- shared helpers
def _half_split(x, cos, sin):
    """cos/sin of shape (..., r/2) applied to half-split pairs (i, i + r/2) of the first r coordinates."""
    r = 2 * cos.shape[-1]
    x1, x2 = x[..., : r // 2], x[..., r // 2: r]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., r:]], dim=-1)


def _finish(out, defect):
    return out * 1.25 if defect == "query-scaled" else out  # an attention temperature folded in


# --------------------------------------------------------------------------- lucidrains
def lucidrains_rotary(dtype="float32", defect=None, *, head_dim=64, dim=32, theta=10_000.0, path="positions",
                      cast=False, **options):
    """rotary-embedding-torch's RotaryEmbedding(dim, **options) + apply_rotary_emb as f(x, positions)
    (``options``: e.g. ``interpolate_factor``, ``theta_rescale_factor``). ``cast``: the module cast
    to the serving dtype, as ``model.to(dtype)`` does (its ``freqs`` parameter with it)."""
    from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb

    rotary = RotaryEmbedding(dim=dim, theta=theta, **options)
    if defect == "bf16-angles":  # model.bfloat16(): the freqs parameter is cast, angles formed in bfloat16
        rotary = rotary.to(torch.bfloat16)
    if cast:
        rotary = rotary.to(DTYPES[dtype])

    def f(x, positions):
        (xt, pos), single = _batched(_in(x, dtype), positions)
        pos = _positions(pos, defect)
        with torch.no_grad():
            if path == "offset":  # rotate_queries_or_keys(x[i:i+1], offset=p) for every token
                pos = rotary.get_seq_pos(1, dtype=xt.dtype, offset=pos)
            freqs = rotary(pos)[:, None]  # (B, 1, seq, dim), interleaved repeats
            if defect == "mirrored":
                out = apply_rotary_emb(-freqs, xt[:, None])  # cos(-a) = cos a: only the sine flips
            elif defect == "wrong-pairing":
                out = _half_split(xt[:, None].float(), freqs[..., ::2].cos(), freqs[..., ::2].sin()).to(xt.dtype)
            else:
                out = apply_rotary_emb(freqs, xt[:, None])
            out = _finish(out[:, 0], defect)
        return _out(out[0] if single else out, dtype)

    return f


# --------------------------------------------------------------------------- x-transformers
def x_transformers_rotary(dtype="float32", defect=None, *, head_dim=64, dim=32, base=10_000.0, cast=False,
                          **options):
    """x-transformers' RotaryEmbedding(dim, **options) called on the position ids + apply_rotary_pos_emb
    (``options``: e.g. ``interpolation_factor``, ``base_rescale_factor``). ``cast``: the module cast
    to the serving dtype, as ``model.to(dtype)`` does (its ``inv_freq`` buffer with it)."""
    from x_transformers.x_transformers import RotaryEmbedding, apply_rotary_pos_emb

    rotary = RotaryEmbedding(dim, base=base, **options)
    if defect == "bf16-angles":  # the inv_freq buffer cast with the model: positions and angles in bfloat16
        rotary = rotary.to(torch.bfloat16)
    if cast:
        rotary = rotary.to(DTYPES[dtype])

    def f(x, positions):
        (xt, pos), single = _batched(_in(x, dtype), positions)
        pos = _positions(pos, defect)
        with torch.no_grad():
            freqs, scale = rotary(pos)  # (B, seq, dim)
            freqs = freqs.float()
            if defect == "mirrored":
                freqs = -freqs
            if defect == "wrong-pairing":
                out = _half_split(xt[:, None].float(), freqs[:, None, :, ::2].cos(), freqs[:, None, :, ::2].sin())
                out = out.to(xt.dtype)
            else:
                out = apply_rotary_pos_emb(xt[:, None], freqs, scale)
            out = _finish(out[:, 0], defect)
        return _out(out[0] if single else out, dtype)

    return f


# --------------------------------------------------------------------------- torchtune
def torchtune_rotary(dtype="float32", defect=None, *, head_dim=128, base=500_000.0, max_seq_len=8_192, scaled=False,
                     cast=False):
    """torchtune's RotaryPositionalEmbeddings (or Llama3ScaledRoPE) called with input_pos (B, seq).

    ``cast``: the module cast to the serving dtype, as ``model.to(dtype)`` does (its cos/sin cache
    with it). Defect ``input-pos-omitted``: called without ``input_pos`` (the cache's first rows).
    """
    if scaled:
        from torchtune.models.llama3_1._position_embeddings import Llama3ScaledRoPE as Rope
    else:
        from torchtune.modules import RotaryPositionalEmbeddings as Rope

    rows = WRAP_ROWS if defect == "wrapped-table" else max_seq_len
    rope = Rope(dim=head_dim, max_seq_len=rows, base=base)
    if defect == "bf16-angles":  # the cache rebuilt from a theta buffer cast to bfloat16
        rope.theta = rope.theta.to(torch.bfloat16)
        rope.build_rope_cache(rows)
    if defect == "mirrored":
        rope.cache = rope.cache * torch.tensor([1.0, -1.0])
    if defect == "wrong-pairing":  # its cos/sin applied to half-split pairs
        cache = rope.cache
    if cast:
        rope = rope.to(DTYPES[dtype])

    def f(x, positions):
        (xt, pos), single = _batched(_in(x, dtype), positions)
        pos = _positions(pos, defect)
        if defect == "wrapped-table":
            pos = pos % rows
        with torch.no_grad():
            q = xt[:, :, None]  # (B, seq, heads=1, head_dim), torchtune's layout
            if defect == "wrong-pairing":
                c, s = cache[pos][..., 0], cache[pos][..., 1]
                out = _half_split(xt.float(), c, s).to(xt.dtype)
            elif defect == "input-pos-omitted":
                out = rope(q)[:, :, 0]
            else:
                out = rope(q, input_pos=pos)[:, :, 0]
            out = _finish(out, defect)
        return _out(out[0] if single else out, dtype)

    return f


# --------------------------------------------------------------------------- complex tables (Meta, Mistral)
def _complex_rotary(table_fn, apply, dtype, defect, rows, per_row):
    """A complex table ``table_fn(rows)`` indexed at the positions, applied by ``apply(xq, xk, freqs_cis)``.

    ``per_row``: one sequence per call (Meta: the table rows of one batch row); otherwise the
    batch is packed into one token axis with per-token positions (Mistral).
    """
    table = table_fn(WRAP_ROWS if defect == "wrapped-table" else rows)
    if defect == "mirrored":
        table = table.conj()

    def rotate(xt, freqs):  # xt (B, seq, 1, d) or (tokens, 1, d)
        if defect == "wrong-pairing":  # the complex product on half-split pairs (weights not permuted)
            h = xt.shape[-1] // 2
            z = torch.complex(xt[..., :h].float(), xt[..., h:].float()) * freqs.view(*xt.shape[:-2], 1, h)
            return torch.cat([z.real, z.imag], dim=-1).to(xt.dtype)
        return apply(xt, xt, freqs)[0]

    def f(x, positions):
        (xt, pos), single = _batched(_in(x, dtype), positions)
        pos = _positions(pos, defect)
        if defect == "wrapped-table":
            pos = pos % WRAP_ROWS
        with torch.no_grad():
            if per_row:
                out = torch.stack([rotate(xt[b][None, :, None], table[pos[b]])[0, :, 0] for b in range(xt.shape[0])])
            else:
                B, n, d = xt.shape
                out = rotate(xt.reshape(B * n, 1, d), table[pos.reshape(-1)]).reshape(B, n, d)
            out = _finish(out, defect)
        return _out(out[0] if single else out, dtype)

    return f


def _bf16_table(dim, end, theta, scaling=None):
    """Meta's precompute_freqs_cis with the angles formed in bfloat16."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    if scaling is not None:
        freqs = scaling(freqs)
    angles = (torch.arange(end, dtype=torch.bfloat16)[:, None] * freqs.to(torch.bfloat16)[None]).float()
    return torch.polar(torch.ones_like(angles), angles)


def llama_models_rotary(dtype="float32", defect=None, *, head_dim=128, theta=500_000.0, max_seq_len=131_072,
                        use_scaled=True):
    """Meta's precompute_freqs_cis (Llama 3.1 apply_scaling) + apply_rotary_emb, one sequence per row."""
    from llama_models.llama3.model import apply_rotary_emb, apply_scaling, precompute_freqs_cis

    def table(rows):
        if defect == "bf16-angles":
            return _bf16_table(head_dim, rows, theta, apply_scaling if use_scaled else None)
        return precompute_freqs_cis(head_dim, rows, theta, use_scaled)

    return _complex_rotary(table, apply_rotary_emb, dtype, defect, 2 * max_seq_len, per_row=True)


def mistral_rotary(dtype="float32", defect=None, *, head_dim=128, theta=1_000_000.0, rows=128_000):
    """mistral-inference's precompute_freqs_cis + apply_rotary_emb, a packed batch with per-token positions."""
    from mistral_inference.rope import apply_rotary_emb, precompute_freqs_cis

    def table(n):
        if defect == "bf16-angles":
            return _bf16_table(head_dim, n, theta)
        return precompute_freqs_cis(head_dim, n, theta)

    return _complex_rotary(table, apply_rotary_emb, dtype, defect, rows, per_row=False)


def rotary(library: str, dtype: str = "float32", defect: str | None = None):
    """The wrapper of ``library`` (a key of :data:`DECLARED`) in ``dtype``, with an optional defect."""
    if library == "lucidrains":
        return lucidrains_rotary(dtype, defect)
    if library == "lucidrains-offset":
        return lucidrains_rotary(dtype, defect, path="offset")
    if library == "x_transformers":
        return x_transformers_rotary(dtype, defect)
    if library == "torchtune-llama3":
        return torchtune_rotary(dtype, defect)
    if library == "torchtune-llama3.1":
        return torchtune_rotary(dtype, defect, max_seq_len=131_072, scaled=True)
    if library == "llama_models":
        return llama_models_rotary(dtype, defect)
    if library == "mistral_inference":
        return mistral_rotary(dtype, defect)
    raise ValueError(f"library must be one of {', '.join(DECLARED)}, got {library!r}")


# module-level callables for the command line (python -m ropegeo gate-a other_rotary:lucidrains_offset_bf16 ...),
# built on first call so that importing this module needs torch only
_BUILT: dict = {}


def _lazy(library, dtype):
    def f(x, positions):
        if (library, dtype) not in _BUILT:
            _BUILT[library, dtype] = rotary(library, dtype)
        return _BUILT[library, dtype](x, positions)

    return f


lucidrains_bf16 = _lazy("lucidrains", "bfloat16")
lucidrains_offset_bf16 = _lazy("lucidrains-offset", "bfloat16")
