"""The frequency lab: drag head dim, base, lengths, interpolation and phase dtype; watch K(Δ),
the wavelength ladder and the Gate B readout change.

The computation is :func:`lab_state`, a plain function from the controls to arrays and numbers
(reusable by a static, kernel-free version of the lab); :class:`FrequencyLab` only draws it.
Every control is bounded (:data:`CONTROLS`), so no slider position can ask for unbounded work:
the kernel is drawn at no more than :data:`KERNEL_POINTS` offsets and the near-collision search
covers at most ``131,072`` offsets.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as v
from ._figure_lab import FigureLab, check_control_names, panel_title
from ..frequencies import frequencies, slow_pairs, turns, wavelengths
from ..geometry import kernel, near_collisions
from ..margins import difference_distance, separation_margin
from ..precision import PHASE_DTYPES, consecutive_integer_limit, generated_phases

__all__ = ["CONTROLS", "KERNEL_POINTS", "lab_state", "readout", "FrequencyLab", "frequency_lab"]

#: Bounds and defaults of every control: (minimum, maximum, default) or (choices, default).
CONTROLS = {
    "head_dim": (4, 256, 128),
    "base": (10.0, 1.0e7, 10_000.0),
    "train_length": (16, 131_072, 4096),
    "target_length": (16, 131_072, 32_768),
    "interpolate": ((False, True), False),
    "dtype": (PHASE_DTYPES, "float32"),
}
#: Most offsets at which K is drawn.
KERNEL_POINTS = 1500
#: The parser-like offsets whose margin the readout reports, at the far end of the target context.
PARSER_OFFSETS = (1, 2, 3)


def _largest(dtype: str) -> float:
    import ml_dtypes

    dt = v.float_dtype(dtype)
    return float((ml_dtypes.finfo(dt) if dt.name == "bfloat16" else np.finfo(dt)).max)


def _controls(head_dim, base, train_length, target_length, interpolate, dtype) -> dict:
    lo, hi, _ = CONTROLS["head_dim"]
    head_dim = v.integer("head_dim", head_dim, minimum=lo, maximum=hi)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even (between {lo} and {hi}), got {head_dim}")
    lo, hi, _ = CONTROLS["base"]
    base = v.real("base", base, minimum=lo, maximum=hi)
    lo, hi, _ = CONTROLS["train_length"]
    train_length = v.integer("train_length", train_length, minimum=lo, maximum=hi)
    lo, hi, _ = CONTROLS["target_length"]
    target_length = v.integer("target_length", target_length, minimum=lo, maximum=hi)
    if not isinstance(interpolate, (bool, np.bool_)):
        raise ValueError(f"interpolate must be True or False, got {interpolate!r}")
    if dtype not in PHASE_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(PHASE_DTYPES)}, got {dtype!r}")
    return dict(head_dim=head_dim, base=base, train_length=train_length, target_length=target_length,
                interpolate=bool(interpolate), dtype=dtype)


def lab_state(
    head_dim: int = 128,
    base: float = 1e4,
    train_length: int = 4096,
    target_length: int = 2**15,
    interpolate: bool = False,
    dtype: str = "float32",
) -> dict:
    """Everything the lab shows, for one setting of its controls.

    Parameters
    ----------
    head_dim : int
        Even, 4 to 256.
    base : float
        10 to 10**7.
    train_length, target_length : int
        16 to 131,072 each.
    interpolate : bool
        Linear position interpolation by ``min(1, train_length / target_length)``.
    dtype : {"float64", "float32", "float16", "bfloat16"}
        Phase precision of the deployment.

    Returns
    -------
    dict
        ``controls`` (the validated controls), ``theta``, ``wavelengths``, ``turns`` (arrays of
        shape (head_dim/2,)), ``slow_pairs`` (int), ``scale`` (float), ``kernel_offsets`` and
        ``kernel_values`` (shape (<= KERNEL_POINTS,); exact K), ``kernel_dtype`` (K from the cosines
        generated in ``dtype``, NaN where positions overflow it), ``near`` (list of (offset, K) for the three
        most identity-like offsets in ``[train_length, target_length]``, empty when the target is
        not longer), ``adjacent_distance`` (exact ``D(1)`` under the scale), ``parser_margin`` and
        ``parser_pair`` (Gate B margin of offsets 1, 2, 3 just before the target length, in
        ``dtype``; None when those positions overflow it), ``largest_finite`` (largest number of
        ``dtype``), ``integer_limit`` (consecutive-integer limit of ``dtype``) and
        ``largest_position`` (``target_length``: positions are stored in the dtype before scaling).

    Raises
    ------
    ValueError
        For any control outside its bounds (see :data:`CONTROLS`).
    """
    c = _controls(head_dim, base, train_length, target_length, interpolate, dtype)
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
    if state["near"]:
        off, k = state["near"][0]
        lines.append(f"most identity-like offset in [{c['train_length']:,}, {c['target_length']:,}]: {off:,} (K = {k:.4f})")
    if state["parser_margin"] is None:
        lines.append(
            f"Gate B, offsets 1-3 near position {c['target_length']:,}: OVERFLOW, {c['dtype']} stops at "
            f"{state['largest_finite']:,.0f}"
        )
    else:
        a, b = state["parser_pair"]
        verdict = "COLLAPSED" if state["parser_margin"] == 0 else "separated"
        lines.append(
            f"Gate B, offsets 1-3 near position {c['target_length']:,} in {c['dtype']}: margin "
            f"{state['parser_margin']:.4f} ({verdict}; closest {a:g} vs {b:g})"
        )
    lim = state["integer_limit"]
    note = "beyond" if state["largest_position"] > lim else "within"
    lines.append(f"{c['dtype']} holds every integer up to {lim:,}: the largest position is {note} it")
    return "\n".join(lines)


class FrequencyLab(FigureLab):
    """The interactive lab: sliders, a two-panel figure (K and the ladder) and a readout.

    Parameters
    ----------
    **controls
        Initial control values (see :data:`CONTROLS`).

    Attributes
    ----------
    widget : ipywidgets.VBox
        The whole lab; a notebook displays the lab object itself.
    state : dict
        The last :func:`lab_state`.
    """

    def __init__(self, **controls):
        import ipywidgets as w

        init = {name: spec[-1] for name, spec in CONTROLS.items()}
        init.update(controls)
        init = _controls(**init)
        self._ax_k, self._ax_l = self._start((8.2, 3.1), 2, [1.5, 1])
        self._line_k, = self._ax_k.plot([], [], lw=0.7, color="0.7", label="exact")
        self._line_kd, = self._ax_k.plot([], [], lw=0.7, color="#087A98", label="phase dtype")
        self._marks, = self._ax_k.plot([], [], "o", mfc="none", color="#8b1e3f")
        self._ax_k.axhline(0, color="0.6", lw=0.6)
        self._ax_k.set_ylim(-0.45, 1.1)
        self._ax_k.set_xlabel("offset Δ")
        self._ax_k.set_title("K(Δ): grey exact, blue in the phase dtype", fontsize=9)
        self._ax_l.set_yscale("log")
        # few ticks, no minor ticks: tick layout is most of the cost of a redraw
        from matplotlib.ticker import LogLocator, MaxNLocator, NullLocator

        self._ax_l.yaxis.set_major_locator(LogLocator(base=10, numticks=6))
        self._ax_l.yaxis.set_minor_locator(NullLocator())
        self._ax_l.xaxis.set_major_locator(MaxNLocator(5, integer=True))
        self._ax_k.xaxis.set_major_locator(MaxNLocator(5))
        self._ax_k.yaxis.set_major_locator(MaxNLocator(5))
        self._fast = self._ax_l.scatter([], [], s=8, color="#087A98")
        self._slow = self._ax_l.scatter([], [], s=8, color="#c05621")
        self._train_line = self._ax_l.axhline(1, color="0.3", ls="--", lw=1)
        self._target_line = self._ax_l.axhline(1, color="0.3", ls=":", lw=1)
        self._ax_l.set_xlabel("pair i")
        self._ax_l.set_title("wavelengths; -- train, ··· target", fontsize=9)
        self._fig.tight_layout()
        style = {"description_width": "110px"}
        layout = w.Layout(width="380px")
        sliders = {
            "head_dim": w.IntSlider(init["head_dim"], min=CONTROLS["head_dim"][0], max=CONTROLS["head_dim"][1], step=2,
                                    description="head dim", style=style, layout=layout, continuous_update=False),
            "base": w.FloatLogSlider(init["base"], base=10, min=1, max=7, step=0.05, description="base",
                                     style=style, layout=layout, continuous_update=False),
            "train_length": w.IntSlider(init["train_length"], min=16, max=CONTROLS["train_length"][1], step=16,
                                        description="train length", style=style, layout=layout, continuous_update=False),
            "target_length": w.IntSlider(init["target_length"], min=16, max=CONTROLS["target_length"][1], step=16,
                                         description="target length", style=style, layout=layout, continuous_update=False),
            "interpolate": w.Checkbox(init["interpolate"], description="interpolate positions", style=style),
            "dtype": w.Dropdown(options=list(PHASE_DTYPES), value=init["dtype"], description="phase dtype",
                                style=style, layout=layout),
        }
        self.image = w.Image(format="png")
        self.text = w.HTML()
        self._watch(sliders)
        self.widget = w.VBox([w.HBox([w.VBox(list(self.controls.values())[:3]), w.VBox(list(self.controls.values())[3:])]),
                              self.image, self.text])
        self.update(**init)

    def update(self, **controls) -> dict:
        """Recompute :func:`lab_state` for ``controls`` and redraw; returns the state."""
        state = lab_state(**controls)
        self.state = state
        c = state["controls"]
        d, k = state["kernel_offsets"], state["kernel_values"]
        self._line_k.set_data(d, k)
        self._line_kd.set_data(d, state["kernel_dtype"])
        self._ax_k.set_xlim(0, max(1.0, d[-1]))
        if state["near"]:
            self._marks.set_data([n[0] for n in state["near"]], [n[1] for n in state["near"]])
        else:
            self._marks.set_data([], [])
        lam = state["wavelengths"]
        slow = state["turns"] < 1
        idx = np.arange(lam.size)
        self._fast.set_offsets(np.column_stack([idx[~slow], lam[~slow]]))
        self._slow.set_offsets(np.column_stack([idx[slow], lam[slow]]))
        self._train_line.set_ydata([c["train_length"]] * 2)
        self._target_line.set_ydata([c["target_length"]] * 2)
        self._ax_l.set_xlim(-1, lam.size)
        top = max(float(lam[-1]), c["target_length"]) * 2
        self._ax_l.set_ylim(min(float(lam[0]), 16.0) / 2, top)
        self.image.value = self._png()
        self.text.value = "<pre style='font-size:12px;line-height:1.3'>" + readout(state) + "</pre>"
        return state



def frequency_lab(**controls) -> FrequencyLab:
    """Build the frequency lab (display the returned object in a notebook).

    Parameters
    ----------
    **controls
        Initial values: ``head_dim``, ``base``, ``train_length``, ``target_length``,
        ``interpolate``, ``dtype`` (bounds in :data:`CONTROLS`).

    Returns
    -------
    FrequencyLab

    Raises
    ------
    ValueError
        For an unknown control name or a value outside its bounds.
    """
    check_control_names(controls, CONTROLS)
    return FrequencyLab(**controls)
