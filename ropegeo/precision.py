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

Two pipelines matter for a model held in bfloat16:

* the **deployed** one (:func:`deployed`), which current Hugging Face transformers uses:
  ``LlamaRotaryEmbedding.forward`` in ``src/transformers/models/llama/modeling_llama.py`` casts
  the position ids and inverse frequencies to float32, forms the angles and takes cosine and
  sine with autocast disabled, and returns ``cos.to(x.dtype), sin.to(x.dtype)``;
  ``apply_rotary_pos_emb`` then rotates in the model dtype. Angles are float32, the table and
  the rotation bfloat16. (Stage 2 follows the older linear-scaling class, which divided the
  float32 position ids; later releases fold the factor into the float32 inverse frequencies
  instead, which moves one float32 rounding. For a power-of-two factor the two orders agree
  exactly, since scaling by a power of two is exact; for factor 3, head width 128 and positions
  below 131,072 we measured angles up to ``2**-8`` radians apart, about one unit of a bfloat16
  table near 1.)
* the **uniform** one (:func:`uniform`), every stage in one dtype. In bfloat16 this is a real,
  fixed bug: a model cast with ``.to(torch.bfloat16)`` also cast the inverse-frequency buffer,
  and the positions built with ``type_as`` of it followed (GPT-NeoX issue 1003, transformers
  issue 25681; transformers forces float32 angles since pull request 29285).

A third pipeline is live in current transformers (checked on 5.24.0): the **buffer-cast** one
(:func:`buffer_cast`). ``inv_freq`` is a non-persistent buffer of the rotary module, so a cast
of the whole module (``model.to(torch.bfloat16)``, ``model.half()``, and the Trainer's
``bf16_full_eval`` / ``fp16_full_eval``, which call ``model.to(dtype=...)``) rounds the
frequencies themselves to the model dtype. ``forward`` widens them again with
``.to(dtype=torch.float)``, which cannot undo the rounding, and forms the angles in float32:
frequencies rounded to the model dtype, angles float32, table and rotation in the model dtype.
``from_pretrained(..., torch_dtype=torch.bfloat16)`` does not cast the buffer and gives the
deployed pipeline.

Two facts organise the chapter's figures:

* a binary floating format with ``p`` significant bits holds every integer up to ``2**p`` and
  then skips odd integers (float64: ``2**53``, float32: ``2**24``, float16: ``2048``,
  bfloat16: ``256``), so where positions are cast to such a format, neighbouring positions
  beyond that point share one phase row;
* the rounding of the angle grows with the angle, so the phase error of a pair grows roughly in
  proportion to ``position * theta``; rounding only the finished cosine and sine adds an error
  of at most about one unit of the table format, whatever the position.

Every function that takes ``dtype`` accepts either a :class:`PhasePipeline` or a dtype name. A
name means *phases in that dtype*, every stage rounded to it (:func:`uniform`): the meaning
``phase_dtype`` has across ropegeo (a manifest's declared phase precision, the labs, Gate A).
To model a model held in bfloat16 as transformers runs it today, pass ``deployed("bfloat16")``.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ropegeo import _validate as v
from ropegeo.operator import phase_kernel

__all__ = [
    "PHASE_DTYPES",
    "PhasePipeline",
    "deployed",
    "uniform",
    "buffer_cast",
    "as_pipeline",
    "generated_phases",
    "phase_table",
    "phase_error",
    "max_phase_error",
    "consecutive_integer_limit",
    "position_spacing",
    "first_collapse",
]

PHASE_DTYPES = ("float64", "float32", "float16", "bfloat16")
_DTYPES = {name: v.float_dtype(name) for name in PHASE_DTYPES}

# Work on at most this many (position, pair) cells at a time: about 16 MiB per float64 table.
_CELLS = 1 << 21
#: Largest scan of :func:`first_collapse`: positions times pairs, the phases it generates (its
#: time grows with them).
MAX_SCAN_CELLS = 1 << 29
_DEFAULT_SCAN = 1 << 16


def _finfo(dt: np.dtype):
    """Format facts of a floating dtype (ml_dtypes knows bfloat16, numpy the others)."""
    return ml_dtypes.finfo(dt) if dt.name == "bfloat16" else np.finfo(dt)


@dataclass(frozen=True)
class PhasePipeline:
    """Where a rotary layer rounds: one dtype per stage (see the module docstring).

    Attributes
    ----------
    angle_dtype : str
        Stages 1 to 3: positions are cast to it, scaled in it, and multiplied there by the
        frequencies (cast to it as well).
    table_dtype : str
        Stage 4: the dtype cosine and sine are cast to after being evaluated from the angles.
    rotation_dtype : str
        Stage 5: the dtype of the rotated query and key coordinates.
    frequency_dtype : str or None
        The dtype the frequencies are *stored* in before stage 3 widens them to the angle dtype
        (a cast buffer, :func:`buffer_cast`); ``None`` (the default) stores them exactly.

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
        """Short name: the dtype of a uniform pipeline, ``deployed <dtype>`` for :func:`deployed`,
        ``buffer-cast <dtype>`` for :func:`buffer_cast`."""
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
        """Stage 5: rotate the pairs ``(a, b)`` by a phase table, rounding as the rotation dtype does.

        Each product and each sum is rounded to :attr:`rotation_dtype` (as two elementwise
        products and one addition in that dtype would be); the result is widened to float64.

        ``a, b``: the pairs' coordinates, broadcast against the phase table ``cos, sin`` (from
        :func:`generated_phases`). Returns ``(a', b')``, float64.
        """
        dt = _DTYPES[self.rotation_dtype]

        def r(x):
            return np.asarray(x, dtype=np.float64).astype(dt).astype(np.float64)

        a, b, cos, sin = (r(x) for x in (a, b, cos, sin))
        with np.errstate(over="ignore", invalid="ignore"):
            return r(r(a * cos) - r(b * sin)), r(r(a * sin) + r(b * cos))


def deployed(model_dtype="bfloat16") -> PhasePipeline:
    """The pipeline of current transformers for a model held in ``model_dtype`` (ValueError if unknown).

    Angles in float32 (float64 for a float64 model), cosine and sine cast to the model dtype,
    rotation in the model dtype.
    """
    dt = v.float_dtype(model_dtype, "model_dtype").name
    return PhasePipeline("float64" if dt == "float64" else "float32", dt, dt)


def buffer_cast(model_dtype="bfloat16") -> PhasePipeline:
    """The pipeline of current transformers after a cast of the whole model to ``model_dtype``.

    ``model.to(torch.bfloat16)`` (also ``.half()`` and the Trainer's ``bf16_full_eval``) casts the
    ``inv_freq`` buffer, so the frequencies are stored rounded to the model dtype; ``forward``
    widens them to float32, forms the angles there, and casts cos and sin to the model dtype.
    For a float64 or float32 model this is :func:`deployed` with exactly stored frequencies
    rounded to that dtype.

    Raises
    ------
    ValueError
        For an unknown dtype.

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
    """Cosine and sine tables as a pipeline generates them (stages 1 to 4).

    Positions are cast to the angle dtype, multiplied by ``scale`` there, multiplied by the
    frequencies (cast to the angle dtype) there (:func:`ropegeo.rotation.phase_angles`); cosine
    and sine are evaluated from those angles and cast to the table dtype.

    Parameters
    ----------
    positions : array_like
        Token positions (any shape; finite). Numbers, not indices: fractional values are allowed.
    theta : array_like, shape (pairs,)
        Angular frequencies in radians per position (non-negative, finite).
    dtype : PhasePipeline or {"float64", "float32", "float16", "bfloat16"}
        The pipeline; a dtype name rounds every stage to that dtype (:func:`uniform`), so
        ``"bfloat16"`` is the all-bfloat16 pipeline. Pass ``deployed("bfloat16")`` for float32
        angles and a bfloat16 table.
    scale : float
        Position multiplier (position interpolation uses ``train_length / target_length``).

    Returns
    -------
    (cos, sin) : tuple of numpy.ndarray, each shape positions.shape + (pairs,), float64
        Exactly the values the pipeline produced, widened to float64.

    Raises
    ------
    ValueError
        For an unknown dtype, non-finite positions, a bad ``theta``, a non-finite ``scale``, or
        positions (times scale, times theta) beyond the angle dtype's range.

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
    """Angular error of generated phases against the float64 truth, per position and pair.

    The error is the angle between the generated unit vector ``(cos, sin)`` and the exact one at
    ``position * scale * theta_i``, wrapped into ``[0, pi]`` radians: every rounding of the
    pipeline of :func:`generated_phases`, whose arguments (and ValueErrors) these are. Shape
    ``positions.shape + (pairs,)``, float64.
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
    """The largest ``N`` such that every integer ``0..N`` is exactly representable in ``dtype``.

    For a binary format with ``p`` significant bits (the stored mantissa plus the implicit bit)
    this is ``2**p``: float64 ``2**53``, float32 ``2**24``, float16 ``2048``, bfloat16 ``256``.
    Past it, ``N + 1`` rounds onto a neighbour and two positions share one phase row.

    Raises
    ------
    ValueError
        For an unknown dtype.
    """
    info = _finfo(v.float_dtype(dtype))
    return 2 ** (int(info.nmant) + 1)


def position_spacing(position, dtype) -> float:
    """Gap between neighbouring representable numbers of ``dtype`` around a position.

    The gap is constant on each binade ``[2**k, 2**(k+1))``: it is ``2**k`` times the format's
    machine epsilon (``2**(1 - p)`` for ``p`` significant bits). A position in that binade can only
    be stored to the nearest multiple of the gap, so a gap of 16 means that only every 16th integer
    position is kept. Positions below 1 report the gap of ``[1, 2)``.

    Parameters
    ----------
    position : float
        A finite, non-negative position.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The storage format.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a negative or non-finite position, or an unknown dtype.

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
    """The first integer position whose generated phase row equals the next position's.

    Scans ``n = start .. stop - 1`` and compares the whole row of cosines and sines generated at
    ``n`` with the row at ``n + 1`` (see :func:`generated_phases`). From the returned position on,
    at least one pair of neighbouring positions is indistinguishable to the layer, whatever its
    weights.

    ``theta``, ``dtype`` and ``scale`` as in :func:`generated_phases`. ``start``: the first position
    scanned (0 to ``2**53 - 1``: positions are scanned in float64); ``stop``: the end (exclusive,
    at most ``2**53`` and :data:`MAX_SCAN_CELLS` positions times pairs past ``start``; default
    ``start + 2**16``, enough for float16 and bfloat16 from 0). Returns the first collapsing
    position, or ``None``. ValueError names a bad argument.
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
