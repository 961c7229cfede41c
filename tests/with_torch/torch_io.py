"""What every torch wrapper of tests/with_torch shares: numpy in and out in the serving dtype,
batched (batch, seq) positions, and the position-id defects a broken integration applies.

Imported only when torch is installed (``make test-torch``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_NUMPY = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
WRAP_ROWS = 4096  # the table of the "wrapped-table" defect


def _in(x, dtype):
    return torch.from_numpy(np.ascontiguousarray(np.asarray(x, dtype=np.float32))).to(DTYPES[dtype])


def _out(t, dtype):
    return t.float().numpy().astype(_NUMPY[dtype])


def _batched(x, positions):
    """(B, seq, d) tensor and (B, seq) long positions; and whether to drop the batch axis again."""
    pos = torch.as_tensor(np.asarray(positions).astype(np.int64))
    single = x.dim() == 2
    return (x[None], pos[None]) if single else (x, pos), single


def _positions(pos, defect):
    """The position ids a broken integration passes on (``defect`` None: as given)."""
    if defect == "wrapped-table":
        return pos % WRAP_ROWS  # a precomputed table of 4,096 rows indexed modulo its size
    if defect == "clamped-table":
        return pos.clamp(max=8191)
    if defect == "int8-positions":
        return pos.to(torch.int8).long()
    if defect == "int16-positions":
        return pos.to(torch.int16).long()
    if defect == "ignored-positions":
        return torch.arange(pos.shape[-1]).expand_as(pos)
    if defect == "origin-off-by-one":
        return pos + 1
    if defect == "start-position":  # only the first id read, as the start of a contiguous run (Meta's start_pos)
        return pos[..., :1] + torch.arange(pos.shape[-1])
    if defect == "first-row-only":
        return pos[:1].expand_as(pos)
    return pos
