"""The frequency lab: drag head dim, base, lengths, interpolation and phase dtype; watch K(Δ),
the wavelength ladder and the Gate B readout change.

:func:`lab_state` is ropegeo's computation of the page's numbers; every control is bounded
(:data:`CONTROLS`): K is drawn at no more than :data:`KERNEL_POINTS` offsets.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ropegeo import _validate as v
from ropegeo.book.widgets._lab import Lab, esm_source
from ropegeo.frequencies import frequencies, slow_pairs, turns, wavelengths
from ropegeo.geometry import kernel, near_collisions
from ropegeo.margins import difference_distance, separation_margin
from ropegeo.precision import PHASE_DTYPES, consecutive_integer_limit, generated_phases

__all__ = ["CONTROLS", "KERNEL_POINTS", "lab_state", "readout", "FrequencyLab", "frequency_lab"]

#: Bounds and defaults of every control: (minimum, maximum, default) or (choices, default).
CONTROLS = {"head_dim": (4, 256, 128), "base": (10.0, 1.0e7, 10_000.0), "train_length": (16, 131_072, 4096),
            "target_length": (16, 131_072, 32_768), "interpolate": ((False, True), False),
            "dtype": (PHASE_DTYPES, "float32")}
#: Most offsets at which K is drawn.
KERNEL_POINTS = 1500
#: The parser-like offsets whose margin the readout reports, at the far end of the target context.
PARSER_OFFSETS = (1, 2, 3)


def _largest(dtype: str) -> float:
    dt = v.float_dtype(dtype)
    return float((ml_dtypes.finfo(dt) if dt.name == "bfloat16" else np.finfo(dt)).max)


def _controls(**c) -> dict:
    for name in ("head_dim", "base", "train_length", "target_length"):
        lo, hi, _ = CONTROLS[name]
        c[name] = (v.real if name == "base" else v.integer)(name, c[name], minimum=lo, maximum=hi)
        if name == "head_dim" and c[name] % 2:
            raise ValueError(f"head_dim must be even (between {lo} and {hi}), got {c[name]}")
    if not isinstance(c["interpolate"], (bool, np.bool_)):
        raise ValueError(f"interpolate must be True or False, got {c['interpolate']!r}")
    if c["dtype"] not in PHASE_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(PHASE_DTYPES)}, got {c['dtype']!r}")
    return dict(c, interpolate=bool(c["interpolate"]))


def lab_state(head_dim: int = 128, base: float = 1e4, train_length: int = 4096, target_length: int = 2**15,
              interpolate: bool = False, dtype: str = "float32") -> dict:
    """Everything the lab shows, for one setting of its controls (bounds: :data:`CONTROLS`; ``ValueError`` outside).

    ``controls``; ``theta``, ``wavelengths``, ``turns``, ``slow_pairs``, ``scale``; ``kernel_offsets``,
    ``kernel_values`` (exact K at <= :data:`KERNEL_POINTS` offsets) and ``kernel_dtype`` (K from the
    cosines generated in ``dtype``, NaN where positions overflow it); ``near``: the three most
    identity-like ``(offset, K)`` in ``[train_length, target_length]``; ``adjacent_distance`` ``D(1)``;
    ``parser_margin``, ``parser_pair``: Gate B's margin of offsets 1-3 just before the target in
    ``dtype`` (None on overflow); ``largest_finite``, ``integer_limit`` of ``dtype`` and
    ``largest_position``.
    """
    c = _controls(head_dim=head_dim, base=base, train_length=train_length, target_length=target_length,
                  interpolate=interpolate, dtype=dtype)
    theta = frequencies(c["head_dim"], c["base"])
    scale = min(1.0, c["train_length"] / c["target_length"]) if c["interpolate"] else 1.0
    top = c["target_length"]
    n = top + 1
    d = np.arange(n, dtype=np.float64) if n <= KERNEL_POINTS else np.linspace(0, top, KERNEL_POINTS).round()
    near = []
    if c["target_length"] > c["train_length"]:
        near = [(h.offset, h.similarity) for h in near_collisions(theta, c["train_length"], c["target_length"],
                                                                  top=3, scale=scale, progress=False)]
    largest = _largest(c["dtype"])
    # K as the deployment computes it: the cosine row generated in the dtype at each offset,
    # compared with the row at offset 0 (all ones); NaN where the dtype overflows
    k_dtype = np.full(d.size, np.nan)
    ok = d <= largest  # positions are cast to the dtype before scaling (scale <= 1 here)
    if np.any(ok):
        cos, _ = generated_phases(d[ok], theta, c["dtype"], scale=scale)
        k_dtype[ok] = cos.mean(axis=1)
    origin = max(0, c["target_length"] - 4)
    if origin + max(PARSER_OFFSETS) <= largest:
        pm = separation_margin(PARSER_OFFSETS, theta, dtype=c["dtype"], scale=scale, origin=origin)
        parser_margin, parser_pair = pm.margin, pm.pair
    else:
        parser_margin, parser_pair = None, None
    return {
        "controls": c,
        "theta": theta,
        "wavelengths": wavelengths(theta),
        "turns": turns(theta, c["train_length"]),
        "slow_pairs": slow_pairs(theta, c["train_length"]),
        "scale": scale,
        "kernel_offsets": d,
        "kernel_values": kernel(d, theta, scale=scale),
        "kernel_dtype": k_dtype,
        "near": near,
        "adjacent_distance": float(difference_distance(1.0, theta, scale=scale)),
        "parser_margin": parser_margin,
        "parser_pair": parser_pair,
        "largest_finite": largest,
        "integer_limit": consecutive_integer_limit(c["dtype"]),
        "largest_position": c["target_length"],  # positions are stored before they are scaled
    }


def readout(state: dict) -> str:
    """The lab's text readout (plain text, one fact per line) for a :func:`lab_state` result."""
    c = state["controls"]
    lines = [
        f"pairs: {state['theta'].size}; wavelengths {state['wavelengths'][0]:,.2f} to {state['wavelengths'][-1]:,.0f} tokens",
        f"slow pairs (under one turn in {c['train_length']:,} training tokens): {state['slow_pairs']}",
        f"angular step ratio: {state['scale']:.4g}; adjacent distance D(1) = {state['adjacent_distance']:.4f}",
    ]
    if not state["near"]:
        lines.append(f"no offset beyond training to search: the target ({c['target_length']:,}) is within training "
                     f"({c['train_length']:,}), so no identity-like offset is marked")
    if state["near"]:
        off, k = state["near"][0]
        lines.append(f"most identity-like offset in [{c['train_length']:,}, {c['target_length']:,}]: {off:,} (K = {k:.4f})")
    if state["parser_margin"] is None:
        lines.append(f"Gate B, offsets 1-3 near position {c['target_length']:,}: OVERFLOW, {c['dtype']} stops at "
                     f"{state['largest_finite']:,.0f}")
    else:
        a, b = state["parser_pair"]
        verdict = "COLLAPSED" if state["parser_margin"] == 0 else "separated"
        lines.append(f"Gate B, offsets 1-3 near position {c['target_length']:,} in {c['dtype']}: margin "
                     f"{state['parser_margin']:.4f} ({verdict}; closest {a:g} vs {b:g})")
    lim = state["integer_limit"]
    note = "beyond" if state["largest_position"] > lim else "within"
    lines.append(f"{c['dtype']} holds every integer up to {lim:,}: the largest position is {note} it")
    return "\n".join(lines)


class FrequencyLab(Lab):
    """The frequency lab (controls: :data:`CONTROLS`); the front end shows K(Δ) exact and in the
    dtype, the wavelength ladder and :func:`readout`.
    """

    _esm = esm_source("lab_frequency.js")
    BOUNDS = {"head_dim": (4, 256), "base": (10.0, 1.0e7), "train_length": (16, 131_072),
              "target_length": (16, 131_072), "interpolate": (False, True), "dtype": PHASE_DTYPES}

    DEFAULTS = {name: spec[-1] for name, spec in CONTROLS.items()}

    @property
    def numbers(self) -> dict:
        """:func:`lab_state` for the current controls (ropegeo's numbers)."""
        return lab_state(**self.state())


def frequency_lab(**controls) -> FrequencyLab:
    """Build the frequency lab; ``ValueError`` for an unknown control or a value outside :data:`CONTROLS`."""
    unknown = sorted(set(controls) - set(CONTROLS))
    if unknown:
        raise ValueError(f"unknown control(s) {', '.join(unknown)}; the controls are {', '.join(CONTROLS)}")
    init = {name: spec[-1] for name, spec in CONTROLS.items()}
    init.update(controls)
    return FrequencyLab(**_controls(**init))
