"""Multi-axis rotary implementations (M-RoPE), correct and broken, for Gate A's multi-axis checks.

:class:`MultiAxisRotary` mirrors transformers 5's text rotary code of Qwen2-VL and Qwen2.5-VL
(``Qwen2VLRotaryEmbedding``: float32 ``inv_freq`` times each of the three position streams,
section ``i`` of ``mrope_section`` taken from stream ``i % 3``) and of Qwen3-VL (the time stream
everywhere, height at ``slice(1, 3 h, 3)``, width at ``slice(2, 3 w, 3)``), then
``apply_rotary_pos_emb`` with ``rotate_half`` in the serving dtype.

:data:`AXES_DEFECTS` lists the broken variants Gate A must name (:func:`axes_entry` builds them):
``sections-swapped`` (``[24, 16, 24]`` for ``[16, 24, 24]``), ``one-axis-for-all`` (the time ids
for every band), ``interleave-off-by-one`` (Qwen3-VL's height and width slots one pair later),
``boundary-off-by-one`` (``[17, 23, 24]``). :data:`AXES_BANDS_DEFECTS` holds ``text-fast-path`` (text ids take
the 1D rotary, other ids per-band schedules ``base ** (-j / section)``): the one variant ``axis-bands``
leads; ``axis-blind`` has none (see :mod:`ropegeo.gates.a.axes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ropegeo import _validate as v

__all__ = ["MultiAxisRotary", "AxesEntry", "AXES_DEFECTS", "AXES_BANDS_DEFECTS", "AXES_CORRECT", "axes_entry",
           "QWEN2_VL_SECTIONS",
           "QWEN3_VL_SECTIONS"]

#: Qwen2-VL's and Qwen2.5-VL's sections (time, height, width) of a 128-wide head, and Qwen3-VL's.
QWEN2_VL_SECTIONS = (16, 24, 24)
QWEN3_VL_SECTIONS = (24, 20, 20)
_DATA = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
_DEFECTS = (None, "sections-swapped", "one-axis-for-all", "interleave-off-by-one", "boundary-off-by-one",
            "text-fast-path")


class MultiAxisRotary:
    """transformers' M-RoPE text rotary as ``f(x, positions)``, correct unless ``defect`` (:data:`AXES_DEFECTS`) is set.

    ``sections`` is ``mrope_section`` (pairs for time, height, width, summing to ``head_dim // 2``), in
    Qwen3-VL's ``interleaved`` layout or Qwen2-VL's blocks; cos, sin and ``x`` are cast to ``dtype``.
    ``defect`` may also be ``"text-fast-path"``; ``stepwise`` forms each pair's angle from the previous one in float32 (as llama.cpp does), a correct
    variant. ``positions``: shape ``(3,) + x.shape[:-1]``, or ``x.shape[:-1]`` for text tokens.

    Examples
    --------
    >>> f = MultiAxisRotary(8, sections=(2, 1, 1))
    >>> out = f(np.eye(8), np.zeros((3, 8), dtype=int))
    >>> bool(np.allclose(out, np.eye(8)))
    True
    """

    def __init__(self, head_dim: int = 128, base: float = 1_000_000.0, sections=QWEN2_VL_SECTIONS,
                 interleaved: bool = False, dtype: str = "float32", defect: str | None = None, stepwise: bool = False):
        self.head_dim = v.head_dim(head_dim)
        self.base = v.base(base)
        self.sections = [v.integer("sections", s, minimum=1) for s in sections]
        if len(self.sections) != 3 or sum(self.sections) != self.head_dim // 2:
            raise ValueError(f"sections must be three sizes summing to head_dim // 2 = {self.head_dim // 2}, "
                             f"got {list(sections)}")
        self.interleaved = v.boolean("interleaved", interleaved)
        if dtype not in _DATA:
            raise ValueError(f"dtype must be one of {', '.join(_DATA)}, got {dtype!r}")
        if defect not in _DEFECTS:
            raise ValueError(f"defect must be one of {', '.join(map(repr, _DEFECTS))}, got {defect!r}")
        self.dtype, self.defect = dtype, defect
        self.stepwise = v.boolean("stepwise", stepwise)

    def _recompose(self, freq: np.ndarray) -> np.ndarray:
        """(3, ..., pairs) per-stream tables -> (..., pairs), as recomposition_frequencies."""
        sec = list(self.sections)
        if self.defect == "sections-swapped":
            sec[0], sec[1] = sec[1], sec[0]
        if self.defect == "boundary-off-by-one":
            sec[0], sec[1] = sec[0] + 1, sec[1] - 1
        if not self.interleaved:
            edges = np.cumsum([0, *sec])
            return np.concatenate([freq[i % 3, ..., edges[i]:edges[i + 1]] for i in range(3)], axis=-1)
        out = freq[0].copy()
        shift = 1 if self.defect == "interleave-off-by-one" else 0
        for dim, offset in ((1, 1), (2, 2)):
            idx = slice(offset + shift, 3 * sec[dim] + shift, 3)
            out[..., idx] = freq[dim, ..., idx]
        return out

    def __call__(self, x, positions):
        x = np.asarray(x)
        pos = np.asarray(positions)
        if pos.shape == x.shape[:-1]:  # text tokens: transformers expands to three equal streams
            pos = np.broadcast_to(pos, (3, *pos.shape))
        if pos.shape != (3, *x.shape[:-1]) or not np.issubdtype(pos.dtype, np.integer):
            raise ValueError(f"positions must be integers of shape (3,) + x.shape[:-1] = {(3, *x.shape[:-1])}, "
                             f"got {pos.dtype} {pos.shape}")
        if self.defect == "one-axis-for-all":
            pos = np.broadcast_to(pos[0], pos.shape)
        d = self.head_dim
        inv = (np.float32(1.0) / (np.float32(self.base) ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d))))
        step = np.full(d // 2, np.float32(self.base) ** np.float32(-2.0 / d), dtype=np.float32)
        restart = np.arange(d // 2) == 0
        if self.defect == "text-fast-path" and not (np.array_equal(pos[0], pos[1]) and np.array_equal(pos[0], pos[2])):
            inv = np.concatenate([np.float32(1.0) / np.float32(self.base) ** (np.arange(s, dtype=np.float32) /
                                                                               np.float32(s)) for s in self.sections])
            step = np.repeat([np.float32(self.base) ** np.float32(-1.0 / s) for s in self.sections], self.sections)
            restart = np.isin(np.arange(d // 2), np.cumsum([0, *self.sections[:2]]))
        freqs = pos.astype(np.float32)[..., None] * inv.astype(np.float32)  # (3, ..., seq, d/2)
        if self.stepwise:  # llama.cpp: theta = p, then theta *= base^(-2/d) pair after pair, in float32
            for i in range(d // 2):
                freqs[..., i] = pos.astype(np.float32) if restart[i] else freqs[..., i - 1] * step[i]
        c, s = self._recompose(np.cos(freqs)), self._recompose(np.sin(freqs))
        data = _DATA[self.dtype]
        cos = np.concatenate([c, c], axis=-1).astype(data)
        sin = np.concatenate([s, s], axis=-1).astype(data)
        xd = np.asarray(x, dtype=np.float32).astype(data)
        half = d // 2
        rot = np.concatenate([-xd[..., half:], xd[..., :half]], axis=-1)  # rotate_half
        return (xd * cos + rot * sin).astype(data)


@dataclass(frozen=True)
class AxesEntry:
    """One multi-axis implementation with what it declares (keyword arguments of ``gate_a``), and,
    for a broken one, the check that must lead its report and the finding it must read."""

    name: str
    impl: MultiAxisRotary
    declared: dict
    leads: str | None = None
    finding: str | None = None
    defect: str | None = None


#: Broken variants: name -> (interleaved, the check that leads, the defect class named).
AXES_DEFECTS = {"sections-swapped": (False, "sections", "layout"),
                "one-axis-for-all": (False, "sections", "position-id"),
                "interleave-off-by-one": (True, "interleave", "layout"),
                "boundary-off-by-one": (False, "sections", "layout")}
#: Broken variants whose layout reading is right (no finding), led by a later check: the same form.
AXES_BANDS_DEFECTS = {"text-fast-path": (False, "axis-bands", "layout")}
#: Correct entries: Qwen2-VL's blocks and Qwen3-VL's interleaving.
AXES_CORRECT = {"qwen2-vl": False, "qwen3-vl": True}


def axes_entry(name: str, dtype: str = "float32", *, max_position: int | None = None,
               stepwise: bool = False) -> AxesEntry:
    """A catalogue entry of a 128-wide head: ``"qwen2-vl"``, ``"qwen3-vl"`` or an :data:`AXES_DEFECTS` name.

    Qwen2-VL's entries use base 1,000,000, sections (16, 24, 24) and a 32,768-token context;
    Qwen3-VL's base 5,000,000, (24, 20, 20) interleaved and 262,144 tokens (``max_position``
    replaces the context; ``stepwise`` forms the angles pair after pair in float32, as llama.cpp does).

    Examples
    --------
    >>> e = axes_entry("one-axis-for-all")
    >>> e.leads, e.finding, e.declared["mrope_section"]
    ('sections', 'one-axis-for-all', (16, 24, 24))
    """
    if name in AXES_CORRECT:
        inter, leads, defect, broken = AXES_CORRECT[name], None, None, None
    elif name in AXES_DEFECTS or name in AXES_BANDS_DEFECTS:
        (inter, leads, defect), broken = {**AXES_DEFECTS, **AXES_BANDS_DEFECTS}[name], name
    else:
        raise ValueError(f"name must be one of {', '.join([*AXES_CORRECT, *AXES_DEFECTS, *AXES_BANDS_DEFECTS])}, "
                         f"got {name!r}")
    base, sec, ctx = (5e6, QWEN3_VL_SECTIONS, 262_144) if inter else (1e6, QWEN2_VL_SECTIONS, 32_768)
    max_position = ctx if max_position is None else v.length("max_position", max_position, minimum=16)
    impl = MultiAxisRotary(128, base, sec, inter, dtype, broken, stepwise)
    declared = dict(head_dim=128, base=base, pairing="half", max_position=max_position, mrope_section=sec,
                    mrope_interleaved=inter)
    finding = broken if leads in ("sections", "interleave") else None  # the layout reading's name for it
    return AxesEntry(name, impl, declared, leads, finding, defect)
