"""Phases as real implementations generate them, stage by stage, in limited precision.

A rotary layer turns integer positions into cosine and sine tables and rotates queries and keys
with them. :class:`PhasePipeline` names every place where that pipeline can round:

1. **positions**: the position ids are cast to the *angle dtype*;
2. **scale**: a position multiplier (position interpolation) is applied to the cast positions,
   in the angle dtype;
3. **angles**: the frequencies are cast to the angle dtype and multiplied by the positions there
   (:func:`ropegeo.rotation.phase_angles` carries out stages 1 to 3);
4. **table**: cosine and sine are evaluated from those angles and cast to the *table dtype*;
5. **rotation**: ``x cos - y sin`` and ``x sin + y cos`` are formed in the *rotation dtype*.

For a model held in bfloat16: :func:`deployed` is current transformers (float32 angles with
autocast off, ``cos.to(dtype=x.dtype)``, rotation in the model dtype); :func:`uniform` is every stage
in one dtype (in bfloat16 the fixed bug of transformers issue 25681); :func:`buffer_cast` is a
cast of the whole module (``model.to(torch.bfloat16)``, ``.half()``, ``bf16_full_eval``), which
rounds the ``inv_freq`` buffer before float32 angles (live in transformers 5.24.0).
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ropegeo import _validate as v
from ropegeo.operator import phase_kernel

__all__ = ["PHASE_DTYPES", "PhasePipeline", "deployed", "uniform", "buffer_cast", "as_pipeline", "generated_phases",
           "phase_table", "phase_error", "max_phase_error", "consecutive_integer_limit", "position_spacing",
           "first_collapse"]

PHASE_DTYPES = ("float64", "float32", "float16", "bfloat16")
_DTYPES = {name: v.float_dtype(name) for name in PHASE_DTYPES}

_CELLS = 1 << 21  # (position, pair) cells at a time: about 16 MiB per float64 table
#: Largest scan of :func:`first_collapse`: positions times pairs, the phases it generates.
MAX_SCAN_CELLS = 1 << 29
_DEFAULT_SCAN = 1 << 16


def _finfo(dt: np.dtype):
    """Format facts of a floating dtype (ml_dtypes knows bfloat16, numpy the others)."""
    return ml_dtypes.finfo(dt) if dt.name == "bfloat16" else np.finfo(dt)


@dataclass(frozen=True)
class PhasePipeline:
    """Where a rotary layer rounds: one dtype per stage (angles: 1 to 3, table: 4, rotation: 5).

    ``frequency_dtype`` stores the frequencies rounded before stage 3 (:func:`buffer_cast`);
    ``None`` stores them exactly.

    Examples
    --------
    >>> deployed("bfloat16")
    PhasePipeline(angle_dtype='float32', table_dtype='bfloat16', rotation_dtype='bfloat16')
    >>> uniform("bfloat16").label, deployed("bfloat16").label
    ('bfloat16', 'deployed bfloat16')
    """

    angle_dtype: str = "float64"
    table_dtype: str = "float64"
    rotation_dtype: str = "float64"
    frequency_dtype: str | None = None

    def __post_init__(self):
        for name in ("angle_dtype", "table_dtype", "rotation_dtype"):
            object.__setattr__(self, name, v.float_dtype(getattr(self, name), name).name)
        if self.frequency_dtype is not None:
            object.__setattr__(self, "frequency_dtype", v.float_dtype(self.frequency_dtype, "frequency_dtype").name)

    def __repr__(self) -> str:  # frequency_dtype only when set, so older reprs stay as they were
        extra = "" if self.frequency_dtype is None else f", frequency_dtype={self.frequency_dtype!r}"
        return (f"PhasePipeline(angle_dtype={self.angle_dtype!r}, table_dtype={self.table_dtype!r}, "
                f"rotation_dtype={self.rotation_dtype!r}{extra})")

    @property
    def exact(self) -> bool:
        """True when every stage is float64 (phases exact up to float64 rounding)."""
        return (self.angle_dtype == self.table_dtype == self.rotation_dtype == "float64"
                and self.frequency_dtype in (None, "float64"))

    @property
    def label(self) -> str:
        """Short name: the dtype of a uniform pipeline, ``deployed <dtype>``, ``buffer-cast <dtype>``."""
        if self.frequency_dtype is None and self.angle_dtype == self.table_dtype == self.rotation_dtype:
            return self.angle_dtype
        for dt in PHASE_DTYPES:
            if self == deployed(dt):
                return f"deployed {dt}"
            if self == buffer_cast(dt):
                return f"buffer-cast {dt}"
        stored = "" if self.frequency_dtype is None else f"{self.frequency_dtype} frequencies, "
        return f"{stored}{self.angle_dtype} angles, {self.table_dtype} cos/sin, {self.rotation_dtype} rotation"

    def rotate(self, a, b, cos, sin) -> tuple[np.ndarray, np.ndarray]:
        """Stage 5: rotate the pairs ``(a, b)`` by a phase table, each product and sum rounded to ``rotation_dtype``."""
        dt = _DTYPES[self.rotation_dtype]

        def r(x):
            return np.asarray(x, dtype=np.float64).astype(dt).astype(np.float64)

        a, b, cos, sin = (r(x) for x in (a, b, cos, sin))
        with np.errstate(over="ignore", invalid="ignore"):
            return r(r(a * cos) - r(b * sin)), r(r(a * sin) + r(b * cos))


def deployed(model_dtype="bfloat16") -> PhasePipeline:
    """Current transformers for a model held in ``model_dtype``: float32 angles (float64 for float64), the rest in it."""
    dt = v.float_dtype(model_dtype, "model_dtype").name
    return PhasePipeline("float64" if dt == "float64" else "float32", dt, dt)


def buffer_cast(model_dtype="bfloat16") -> PhasePipeline:
    """Current transformers after a cast of the whole model to ``model_dtype``: :func:`deployed`, frequencies rounded to it.

    Examples
    --------
    >>> buffer_cast("bfloat16").label
    'buffer-cast bfloat16'
    >>> from ropegeo.frequencies import frequencies
    >>> round(float(max_phase_error([200.0], frequencies(128), buffer_cast())[0]), 2)
    0.24
    """
    dt = v.float_dtype(model_dtype, "model_dtype").name
    return PhasePipeline("float64" if dt == "float64" else "float32", dt, dt, frequency_dtype=dt)


def uniform(dtype) -> PhasePipeline:
    """Every stage in one dtype (ValueError if unknown); in bfloat16 or float16 the historical buffer-cast bug."""
    return _UNIFORM[dtype] if isinstance(dtype, str) and dtype in _UNIFORM else _UNIFORM[v.float_dtype(dtype).name]


_UNIFORM = {name: PhasePipeline(name, name, name) for name in PHASE_DTYPES}  # built once, checked here


def as_pipeline(dtype) -> PhasePipeline:
    """A :class:`PhasePipeline` as given, or :func:`uniform` of a dtype name (else ValueError naming ``dtype``)."""
    return dtype if isinstance(dtype, PhasePipeline) else uniform(dtype)


def phase_table(positions: np.ndarray, th: np.ndarray, pipe: PhasePipeline,
                scale: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`generated_phases` without its checks (float64 positions, a 1-D float64 bank, a finite scale).

    Examples
    --------
    >>> phase_table(np.array([1.0]), np.array([0.5]), uniform("float64"), 1.0)[1].round(3).tolist()
    [[0.479]]
    """
    ang_dt = _DTYPES[pipe.angle_dtype]
    tab_dt = _DTYPES[pipe.table_dtype]
    if pipe.frequency_dtype is not None:  # a cast buffer: the stored frequencies are rounded
        th = th.astype(_DTYPES[pipe.frequency_dtype]).astype(np.float64)
    angles = phase_kernel(positions, th, ang_dt, scale).astype(ang_dt)  # stages 1-3
    with np.errstate(over="ignore", invalid="ignore"):
        cos = np.cos(angles).astype(tab_dt).astype(np.float64)  # stage 4
        sin = np.sin(angles).astype(tab_dt).astype(np.float64)
    return cos, sin


def generated_phases(positions, theta, dtype="float64", *, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Cosine and sine tables as a pipeline generates them (stages 1 to 4), each ``positions.shape + (pairs,)``.

    Exactly the values the pipeline produced, widened to float64; ``ValueError`` for an angle
    beyond the angle dtype's range.

    Examples
    --------
    >>> from ropegeo.frequencies import frequencies
    >>> c_new, _ = generated_phases([32_765, 32_766], frequencies(128), deployed("bfloat16"))
    >>> c_old, _ = generated_phases([32_765, 32_766], frequencies(128), "bfloat16")
    >>> bool((c_new[0] == c_new[1]).all()), bool((c_old[0] == c_old[1]).all())
    (False, True)
    """
    pipe = as_pipeline(dtype)
    th = v.frequencies(theta)
    scale = v.real("scale", scale)
    pos = v.finite_array("positions", positions)
    return phase_table(pos, th, pipe, scale)


def phase_error(positions, theta, dtype="float32", *, scale: float = 1.0) -> np.ndarray:
    """Angle in ``[0, pi]`` between the generated ``(cos, sin)`` and the exact one, per position and pair.

    Arguments as in :func:`generated_phases`.
    """
    th = v.frequencies(theta)
    return _phase_error(v.finite_array("positions", positions), th, as_pipeline(dtype), v.real("scale", scale))


def _phase_error(pos, th, pipe, scale) -> np.ndarray:
    cos, sin = phase_table(pos, th, pipe, scale)
    true = np.multiply.outer(pos * scale, th)
    # angle of the generated vector relative to the true one: rotate it back by the true angle
    ct, st = np.cos(true), np.sin(true)
    return np.abs(np.arctan2(sin * ct - cos * st, cos * ct + sin * st))


def max_phase_error(positions, theta, dtype="float32", *, scale: float = 1.0) -> np.ndarray:
    """``max_i phase_error(positions, theta)[:, i]`` (radians) for 1-D ``positions``, in bounded chunks."""
    th, pipe, scale = v.frequencies(theta), as_pipeline(dtype), v.real("scale", scale)
    pos = v.finite_array("positions", positions)
    if pos.ndim != 1:
        raise ValueError(f"positions must be 1-D, got shape {pos.shape}")
    out = np.empty(pos.size)
    step = max(1, _CELLS // th.size)
    for s in range(0, pos.size, step):  # checked once above, the kernel in the loop
        out[s : s + step] = _phase_error(pos[s : s + step], th, pipe, scale).max(axis=-1)
    return out


def consecutive_integer_limit(dtype) -> int:
    """``2**p`` for ``p`` significant bits: every integer ``0..N`` is exact in ``dtype`` (bfloat16 256)."""
    info = _finfo(v.float_dtype(dtype))
    return 2 ** (int(info.nmant) + 1)


def position_spacing(position, dtype) -> float:
    """Gap between neighbouring numbers of ``dtype`` around a non-negative position (that of ``[1, 2)`` below 1).

    ``2**k`` times the machine epsilon on the binade ``[2**k, 2**(k+1))``: a gap of 16 keeps every
    16th integer position.

    Examples
    --------
    >>> position_spacing(32_764, "float16"), position_spacing(32_764, "bfloat16")
    (16.0, 128.0)
    """
    x = v.real("position", position, minimum=0.0)
    dt = v.float_dtype(dtype)
    info = _finfo(dt)
    if x > float(info.max):
        raise ValueError(f"position must be at most the largest {dt.name} number, {float(info.max):g}; got {x:g}")
    _, exponent = np.frexp(max(x, 1.0))  # x = f * 2**exponent with 0.5 <= f < 1
    return float(np.ldexp(float(info.eps), int(exponent) - 1))


def first_collapse(theta, dtype, *, start: int = 0, stop: int | None = None, scale: float = 1.0) -> int | None:
    """The first integer position in ``start .. stop - 1`` whose generated phase row equals the next one's (or ``None``).

    Positions below ``2**53``, at most :data:`MAX_SCAN_CELLS` positions times pairs (default
    ``stop``: ``start + 2**16``); other arguments as in :func:`generated_phases`.
    """
    th, pipe, scale = v.frequencies(theta), as_pipeline(dtype), v.real("scale", scale)
    # positions are scanned in float64, which holds every integer only up to 2**53
    start = v.integer("start", start, minimum=0, maximum=2**53 - 1)
    if stop is None:
        stop = min(start + _DEFAULT_SCAN, 2**53)
    stop = v.integer("stop", stop, minimum=start + 1, maximum=min(start + MAX_SCAN_CELLS // th.size, 2**53))
    step = max(1, _CELLS // (2 * th.size))
    for s in range(start, stop, step):
        e = min(stop, s + step)
        pos = np.arange(s, e + 1, dtype=np.float64)  # one extra for the neighbour of the last
        cos, sin = phase_table(pos, th, pipe, scale)
        same = np.all((cos[1:] == cos[:-1]) & (sin[1:] == sin[:-1]), axis=-1)
        hit = np.flatnonzero(same)
        if hit.size:
            return int(s + hit[0])
    return None
