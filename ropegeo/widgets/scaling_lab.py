"""The scaling lab: choose an extension rule and its parameters, watch the ruler and the trade-off.

Controls (all bounded): the rule, the extension factor ``s`` (1 to 64), the head width, the base,
the training length, YaRN's ``beta_fast`` / ``beta_slow`` and Llama-3's ``low_freq_factor`` /
``high_freq_factor``. Each update redraws two panels (the stretched ruler over the unscaled one,
and the per-pair phase novelty at ``s`` times the training length) and a line of numbers: pairs
stretched, pairs with novel phase, ``K(1)``, the fastest pair's step, the Gate B margin of offsets
``1 .. 16`` and the attention factor.

LongRoPE is not offered: its per-pair factors come from a search over a trained model, not from
a formula (chapter 4 uses the real lists of three Phi-3 models instead).

:func:`evaluate` is the lab's computation without widgets; the lab is an ipywidgets ``VBox``.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as v
from ..frequencies import frequencies
from ..scaling import ExtensionReport, extension_report, preset

__all__ = ["ScalingLab", "evaluate", "summary", "svg", "LAB_RULES", "MAX_FACTOR", "HEAD_DIMS", "TRAIN_LENGTHS"]

LAB_RULES = ("none", "linear", "ntk", "dynamic", "yarn", "llama3")
MAX_FACTOR = 64.0
HEAD_DIMS = (32, 64, 96, 128, 256)
TRAIN_LENGTHS = (1024, 2048, 4096, 8192, 32768)
SMALL_OFFSETS = 16


def evaluate(rule: str = "yarn", factor: float = 8.0, *, train_length: int = 4096, head_dim: int = 128,
             base: float = 1e4, beta_fast: float = 32.0, beta_slow: float = 1.0,
             low_freq_factor: float = 1.0, high_freq_factor: float = 4.0) -> ExtensionReport:
    """The lab's numbers for one setting: the rule stretched to ``factor * train_length``.

    Parameters
    ----------
    rule : {"none", "linear", "ntk", "dynamic", "yarn", "llama3"}
    factor : float
        1 to 64.
    train_length : int
        One of 1024, 2048, 4096, 8192, 32768.
    head_dim : int
        One of 32, 64, 96, 128, 256.
    base : float
        1,000 to 10,000,000.
    beta_fast, beta_slow : float
        YaRN's ramp ends (0.25 to 128, ``beta_fast > beta_slow``); ignored by other rules.
    low_freq_factor, high_freq_factor : float
        Llama-3's band edges (0.25 to 64, ``high > low``); ignored by other rules.

    Returns
    -------
    ropegeo.scaling.ExtensionReport
        With the Gate B margin of offsets 1 .. 16.

    Raises
    ------
    ValueError
        For any value outside the ranges above, naming the parameter.
    """
    if rule not in LAB_RULES:
        raise ValueError(f"rule must be one of {', '.join(map(repr, LAB_RULES))}, got {rule!r}")
    factor = v.real("factor", factor, minimum=1.0, maximum=MAX_FACTOR)
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {', '.join(map(str, HEAD_DIMS))}, got {head_dim!r}")
    base = v.real("base", base, minimum=1_000.0, maximum=1e7)
    if train_length not in TRAIN_LENGTHS:
        raise ValueError(f"train_length must be one of {', '.join(map(str, TRAIN_LENGTHS))}, got {train_length!r}")
    target = int(round(factor * train_length))
    params = {}
    if rule == "yarn":
        bf = v.real("beta_fast", beta_fast, minimum=0.25, maximum=128.0)
        bs = v.real("beta_slow", beta_slow, minimum=0.25, maximum=128.0)
        if not bf > bs:
            raise ValueError(f"beta_fast must be greater than beta_slow, got {bf:g} <= {bs:g}")
        params = dict(beta_fast=bf, beta_slow=bs)
    if rule == "llama3":
        lo = v.real("low_freq_factor", low_freq_factor, minimum=0.25, maximum=64.0)
        hi = v.real("high_freq_factor", high_freq_factor, minimum=0.25, maximum=64.0)
        if not hi > lo:
            raise ValueError(f"high_freq_factor must be greater than low_freq_factor, got {hi:g} <= {lo:g}")
        params = dict(low_freq_factor=lo, high_freq_factor=hi)
    if rule == "none" or factor == 1.0 and rule != "dynamic":
        sc = None if rule == "none" else preset(rule, train_length=train_length, target_length=max(target, train_length), **params)
    else:
        sc = preset(rule, train_length=train_length, target_length=target, **params)
    return extension_report(sc, base=base, rotary_dim=head_dim, train_length=train_length, target_length=target,
                            small_offsets=SMALL_OFFSETS)


_W, _H, _PAD = 430, 230, 44
_COL = {"keep": "#087A98", "part": "#b7791f", "full": "#8b1e3f", "base": "#9a9a9a"}


def _panel(x0: float, title: str, ylabel: str) -> list[str]:
    return [
        f'<rect x="{x0 + _PAD}" y="20" width="{_W - _PAD - 10}" height="{_H - 60}" fill="white" stroke="#bbb"/>',
        f'<text x="{x0 + _W / 2}" y="14" font-size="11" text-anchor="middle">{title}</text>',
        f'<text x="{x0 + _W / 2}" y="{_H - 8}" font-size="10" text-anchor="middle">pair i (fastest first)</text>',
        f'<text x="{x0 + 11}" y="{20 + (_H - 60) / 2}" font-size="10" text-anchor="middle" '
        f'transform="rotate(-90 {x0 + 11} {20 + (_H - 60) / 2})">{ylabel}</text>',
    ]


def svg(report: ExtensionReport, head_dim: int, base: float, train_length: int, target_length: int) -> str:
    """The lab's picture as an SVG string (drawn without matplotlib, in about a millisecond).

    Left: wavelength per pair on a log axis, the unscaled ladder in grey, the rule's pairs coloured
    untouched / partly / fully stretched, dashed and dotted lines at the training and target lengths.
    Right: the per-pair phase novelty at the target length, in turns (0 to 1).
    """
    base_theta = frequencies(head_dim, base)
    lam0 = 2 * np.pi / base_theta
    lam = 2 * np.pi / report.theta
    n = lam.size
    lo = np.log10(min(lam0.min(), lam.min(), train_length) / 1.5)
    hi = np.log10(max(lam.max(), target_length) * 1.5)
    x_of = lambda i, x0: x0 + _PAD + 6 + (_W - _PAD - 22) * i / max(1, n - 1)  # noqa: E731
    y_of = lambda val: 20 + (_H - 60) * (1 - (np.log10(val) - lo) / (hi - lo))  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * _W}" height="{_H}" font-family="sans-serif">']
    parts += _panel(0, f"{report.rule}: wavelength per pair (log)", "tokens")
    pts = " ".join(f"{x_of(i, 0):.1f},{y_of(l):.1f}" for i, l in enumerate(lam0))
    parts.append(f'<polyline points="{pts}" fill="none" stroke="{_COL["base"]}" stroke-width="1.5"/>')
    for length, dash, label in ((train_length, "5,3", "train"), (target_length, "2,2", "target")):
        y = y_of(length)
        parts.append(f'<line x1="{_PAD}" x2="{_W - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#444" stroke-dasharray="{dash}"/>')
        parts.append(f'<text x="{_PAD + 4}" y="{y - 3:.1f}" font-size="9" fill="#444">{label} {length:,}</text>')
    ratio = lam / lam0
    top = ratio.max()
    for i, (l, r) in enumerate(zip(lam, ratio)):
        kind = "keep" if abs(r - 1) <= 1e-3 else ("full" if top > 1.001 and r >= 0.99 * top else "part")
        parts.append(f'<circle cx="{x_of(i, 0):.1f}" cy="{y_of(l):.1f}" r="2.4" fill="{_COL[kind]}"/>')
    for k, (kind, label) in enumerate((("keep", "untouched"), ("part", "partly stretched"), ("full", "fully stretched"))):
        parts.append(f'<circle cx="{_W - 110}" cy="{_H - 50 - 12 * k}" r="3" fill="{_COL[kind]}"/>')
        parts.append(f'<text x="{_W - 103}" y="{_H - 47 - 12 * k}" font-size="9">{label}</text>')
    parts += _panel(_W, "phase never seen in training (turns)", "turns")
    bw = (_W - _PAD - 22) / max(1, n)
    for i, val in enumerate(report.novelty):
        if val > 0:
            h = (_H - 60) * float(val)
            parts.append(f'<rect x="{x_of(i, _W) - bw / 2:.1f}" y="{20 + _H - 60 - h:.1f}" width="{bw:.1f}" '
                         f'height="{h:.1f}" fill="{_COL["full"]}"/>')
    parts.append(f'<text x="{_W + _PAD - 4}" y="24" font-size="9" text-anchor="end">1</text>')
    parts.append(f'<text x="{_W + _PAD - 4}" y="{_H - 40}" font-size="9" text-anchor="end">0</text>')
    parts.append("</svg>")
    return "".join(parts)


def summary(report: ExtensionReport) -> str:
    """One line of the lab's numbers."""
    return (
        f"{report.rule}: {report.scaled_pairs} of {report.theta.size} pairs stretched | "
        f"{report.novel_pairs} pairs see new phase ({report.total_novelty:.3f} turns) | "
        f"K(1) = {report.adjacent_similarity:.6f} | fastest step {report.fastest_step:.4f} rad | "
        f"margin 1..{SMALL_OFFSETS} = {report.margin:.4f} | margin 64, 128, .. = {report.coarse_margin:.4f} | "
        f"attention factor {report.attention_factor:.4f}"
    )


class ScalingLab:
    """Interactive lab (ipywidgets): the ruler and trade-off of one extension rule.

    Parameters
    ----------
    rule, factor, train_length, head_dim, base, beta_fast, beta_slow, low_freq_factor, high_freq_factor
        Initial values, as in :func:`evaluate`.

    Attributes
    ----------
    widget : ipywidgets.VBox
        The controls, the numbers and the picture (an SVG in an HTML widget, so the static book
        shows it from the embedded widget state); the lab's ``_ipython_display_`` displays it.
    report : ropegeo.scaling.ExtensionReport
        The numbers of the current setting.
    """

    def __init__(self, rule: str = "yarn", factor: float = 8.0, *, train_length: int = 4096, head_dim: int = 128,
                 base: float = 1e4, beta_fast: float = 32.0, beta_slow: float = 1.0,
                 low_freq_factor: float = 1.0, high_freq_factor: float = 4.0):
        import ipywidgets as w

        # validate the initial state before building anything
        self.report = evaluate(rule, factor, train_length=train_length, head_dim=head_dim, base=base,
                               beta_fast=beta_fast, beta_slow=beta_slow, low_freq_factor=low_freq_factor,
                               high_freq_factor=high_freq_factor)
        style = {"description_width": "120px"}
        self.controls = {
            "rule": w.Dropdown(options=LAB_RULES, value=rule, description="rule", style=style),
            "factor": w.FloatLogSlider(value=factor, base=2, min=0, max=6, step=0.25, description="factor s",
                                       style=style, readout_format=".3g"),
            "head_dim": w.Dropdown(options=HEAD_DIMS, value=head_dim, description="head dim", style=style),
            "base": w.FloatLogSlider(value=base, base=10, min=3, max=7, step=0.25, description="base", style=style,
                                     readout_format=".3g"),
            "train_length": w.Dropdown(options=TRAIN_LENGTHS, value=train_length, description="training length",
                                       style=style),
            "beta_fast": w.FloatLogSlider(value=beta_fast, base=2, min=-1, max=7, step=0.5, description="YaRN beta_fast",
                                          style=style, readout_format=".3g"),
            "beta_slow": w.FloatLogSlider(value=beta_slow, base=2, min=-2, max=6, step=0.5, description="YaRN beta_slow",
                                          style=style, readout_format=".3g"),
            "low_freq_factor": w.FloatLogSlider(value=low_freq_factor, base=2, min=-2, max=5, step=0.5,
                                                description="Llama-3 low", style=style, readout_format=".3g"),
            "high_freq_factor": w.FloatLogSlider(value=high_freq_factor, base=2, min=-1, max=6, step=0.5,
                                                 description="Llama-3 high", style=style, readout_format=".3g"),
        }
        self.numbers = w.HTML()
        self.picture = w.HTML()
        for c in self.controls.values():
            c.observe(self._changed, names="value")
        left = w.VBox([self.controls[k] for k in ("rule", "factor", "head_dim", "base", "train_length")])
        right = w.VBox([self.controls[k] for k in ("beta_fast", "beta_slow", "low_freq_factor", "high_freq_factor")])
        self.widget = w.VBox([w.HBox([left, right]), self.numbers, self.picture])
        self._render()

    def state(self) -> dict:
        """The current control values, as keyword arguments of :func:`evaluate`."""
        return {k: c.value for k, c in self.controls.items()}

    def _changed(self, change) -> None:
        self._render()

    def _render(self) -> None:
        from html import escape

        st = self.state()
        try:
            self.report = evaluate(**st)
        except ValueError as exc:  # e.g. beta_fast <= beta_slow: say so, keep the last picture
            self.numbers.value = f"<span style='color:#b35900'>{escape(str(exc))}</span>"
            return
        self.numbers.value = f"<code>{escape(summary(self.report))}</code>"
        target = int(round(st["factor"] * st["train_length"]))
        self.picture.value = svg(self.report, st["head_dim"], st["base"], st["train_length"], target)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
