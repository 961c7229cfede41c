"""The audit lab: set a head, a base, two lengths and an extension rule; read the geometry audit.

For every setting the lab shows five things at once:

* the **relative law** ``<R_m q, R_n k> = <q, R_{n-m} k>`` measured on random vectors under the
  served frequencies, at position pairs that reach the target length;
* the **kernel** ``K(delta)`` of the served bank from 0 to the target length;
* the **most identity-like distant offset** in ``[train_length, target_length]`` (searched exactly,
  at most :data:`SEARCH_LIMIT` offsets);
* the **slow pairs**: how many pairs of the training bank turn less than once in training;
* the **interpolation trade-off**: for each extension rule, the phase novelty it leaves at the
  target length against the adjacent distance ``D(1)`` it keeps (interpolation buys zero novelty
  with a compressed local ruler).

:func:`lab_state` is the computation, a plain function from the controls to arrays and numbers;
:class:`AuditLab` only draws it. Every control is bounded (:data:`CONTROLS`), so no slider can ask
for unbounded work; an update (computation and redraw) takes a few tens of milliseconds at the
default settings (``bench/widgets.py`` checks the median stays under 100 ms).
"""

from __future__ import annotations

import numpy as np

from .. import _validate as v
from ..rotation import relative_law_error
from ._figure_lab import FigureLab, check_control_names, panel_title
from ..frequencies import frequencies, slow_pairs, turns
from ..geometry import kernel, near_collisions
from ..margins import difference_distance
from ..scaling import phase_novelty, preset, scaled_frequencies

__all__ = ["CONTROLS", "RULES", "KERNEL_POINTS", "SEARCH_LIMIT", "lab_state", "readout", "AuditLab", "audit_lab"]

#: The extension rules the lab offers (LongRoPE needs searched per-pair factors, not a formula).
RULES = ("none", "linear", "ntk", "dynamic", "yarn", "llama3")
#: Bounds and defaults of every control: (minimum, maximum, default) or (choices, default).
CONTROLS = {
    "head_dim": (4, 256, 128),
    "base": (10.0, 1.0e7, 10_000.0),
    "train_length": (16, 131_072, 4096),
    "target_length": (16, 131_072, 32_768),
    "rule": (RULES, "none"),
}
#: Most offsets at which K is drawn.
KERNEL_POINTS = 1200
#: Largest offset of the near-collision search.
SEARCH_LIMIT = 131_072
_RULE_LABELS = {"none": "raw", "linear": "PI", "ntk": "NTK", "dynamic": "dyn. NTK", "yarn": "YaRN", "llama3": "Llama 3"}


def _controls(head_dim, base, train_length, target_length, rule) -> dict:
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
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(map(repr, RULES))}, got {rule!r}")
    return dict(head_dim=head_dim, base=base, train_length=train_length, target_length=target_length, rule=rule)


def _served(rule: str, base: float, head_dim: int, train: int, target: int) -> tuple[np.ndarray, float]:
    """Frequencies and attention factor of ``rule`` stretched from ``train`` to ``target``."""
    if rule == "none" or target <= train:
        return frequencies(head_dim, base), 1.0
    return scaled_frequencies(preset(rule, train_length=train, target_length=target), base, head_dim, seq_len=target)


def lab_state(
    head_dim: int = 128,
    base: float = 1e4,
    train_length: int = 4096,
    target_length: int = 32_768,
    rule: str = "none",
) -> dict:
    """Everything the audit lab shows, for one setting of its controls.

    Parameters
    ----------
    head_dim : int
        Even, 4 to 256.
    base : float
        10 to 10**7.
    train_length, target_length : int
        16 to 131,072 each. A target no longer than the training length needs no extension: every
        rule then serves the training bank.
    rule : {"none", "linear", "ntk", "dynamic", "yarn", "llama3"}
        Extension rule configured for ``target_length / train_length`` (``ropegeo.scaling.preset``).

    Returns
    -------
    dict
        ``controls``; ``theta_train`` and ``theta`` (training and served frequencies, shape
        (head_dim/2,)); ``attention_factor``; ``extended`` (target longer than training);
        ``law_pairs`` (the (m, n) position pairs tested) and ``relative_law_error`` (float64,
        served bank); ``kernel_offsets`` / ``kernel_values`` (served ``K`` at up to
        :data:`KERNEL_POINTS` offsets in ``[0, target]``); ``adjacent_similarity`` ``K(1)`` and
        ``adjacent_distance`` ``D(1)`` (served); ``distant`` (``(offset, K)`` of the most
        identity-like offset in ``[train, min(target, SEARCH_LIMIT)]``, or ``None`` when the target
        is not longer); ``turns`` (turns of each training pair over the training length),
        ``slow_pairs``, ``pair_count``; ``tradeoff`` (one dict per rule: ``rule``, ``novelty`` in
        turns summed over pairs, ``novel_pairs``, ``adjacent_distance``, ``selected``).

    Raises
    ------
    ValueError
        For any control outside its bounds (see :data:`CONTROLS`).
    """
    c = _controls(head_dim, base, train_length, target_length, rule)
    d, b, L, T = c["head_dim"], c["base"], c["train_length"], c["target_length"]
    theta_train = frequencies(d, b)
    theta, att = _served(c["rule"], b, d, L, T)
    law_pairs = [(3, 11), (17, 29), (L // 3, L - 1), (T // 2, T - 1)]
    err = relative_law_error(d, b, theta=theta, position_pairs=law_pairs)
    n = T + 1
    offs = np.arange(n, dtype=np.float64) if n <= KERNEL_POINTS else np.linspace(0, T, KERNEL_POINTS).round()
    distant = None
    if T > L:
        hit = near_collisions(theta, L, min(T, SEARCH_LIMIT), top=1, progress=False)[0]
        distant = (hit.offset, hit.similarity)
    tradeoff = []
    for r in RULES:
        th_r, _ = (theta, att) if r == c["rule"] else _served(r, b, d, L, T)
        nov = phase_novelty(theta_train, th_r, L, max(T, L))
        tradeoff.append({"rule": r, "novelty": float(nov.sum()), "novel_pairs": int(np.count_nonzero(nov > 1e-9)),
                         "adjacent_distance": float(difference_distance(1.0, th_r)), "selected": r == c["rule"]})
    return {
        "controls": c,
        "theta_train": theta_train,
        "theta": theta,
        "attention_factor": float(att),
        "extended": T > L,
        "law_pairs": law_pairs,
        "relative_law_error": err,
        "kernel_offsets": offs,
        "kernel_values": kernel(offs, theta),
        "adjacent_similarity": float(kernel(1.0, theta)),
        "adjacent_distance": float(difference_distance(1.0, theta)),
        "distant": distant,
        "turns": turns(theta_train, L),
        "slow_pairs": slow_pairs(theta_train, L),
        "pair_count": int(theta.size),
        "tradeoff": tradeoff,
    }


def readout(state: dict) -> str:
    """The lab's text readout (plain text, one fact per line) for a :func:`lab_state` result."""
    c = state["controls"]
    rule = _RULE_LABELS[c["rule"]] if state["extended"] else "none needed (target within training)"
    lines = [
        f"rule: {rule}; attention factor {state['attention_factor']:.4g}",
        f"relative law: largest violation {state['relative_law_error']:.2e} at position pairs up to "
        f"{max(n for _, n in state['law_pairs']):,}",
        f"adjacent: K(1) = {state['adjacent_similarity']:.6f}, D(1) = {state['adjacent_distance']:.4f}",
    ]
    if state["distant"] is not None:
        off, k = state["distant"]
        hi = min(c["target_length"], SEARCH_LIMIT)
        lines.append(f"most identity-like offset in [{c['train_length']:,}, {hi:,}]: {off:,} (K = {k:.4f})")
    else:
        lines.append("most identity-like distant offset: none searched (the target is not longer than training)")
    lines.append(f"slow pairs (under one turn in {c['train_length']:,} training tokens): "
                 f"{state['slow_pairs']} of {state['pair_count']}")
    sel = next(t for t in state["tradeoff"] if t["selected"])
    lines.append(f"trade-off: novel phase {sel['novelty']:.3f} turns over {sel['novel_pairs']} pairs, "
                 f"local step D(1) = {sel['adjacent_distance']:.4f}")
    return "\n".join(lines)


class AuditLab(FigureLab):
    """The interactive audit lab: controls, a three-panel figure and a readout.

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
        from matplotlib.ticker import LogLocator, MaxNLocator, NullLocator

        init = {name: spec[-1] for name, spec in CONTROLS.items()}
        init.update(controls)
        init = _controls(**init)
        self._ax_k, self._ax_t, self._ax_x = self._start((9.6, 3.0), 3, [1.5, 1, 1])
        self._line_k, = self._ax_k.plot([], [], lw=0.7, color="#087A98")
        self._mark, = self._ax_k.plot([], [], "o", mfc="none", ms=8, color="#8b1e3f")
        self._train_k = self._ax_k.axvline(1, color="0.3", ls="--", lw=0.8)
        self._ax_k.axhline(0, color="0.6", lw=0.6)
        self._ax_k.set_ylim(-0.45, 1.1)
        self._ax_k.set_xlabel("offset Δ")
        panel_title(self._ax_k, "served K(Δ); -- training length")
        self._ax_k.xaxis.set_major_locator(MaxNLocator(3))
        self._ax_k.yaxis.set_major_locator(MaxNLocator(3))
        self._ax_t.set_yscale("log")
        self._ax_t.yaxis.set_major_locator(LogLocator(base=10, numticks=4))
        self._ax_t.yaxis.set_minor_locator(NullLocator())
        self._ax_t.xaxis.set_major_locator(MaxNLocator(3, integer=True))
        self._fast = self._ax_t.scatter([], [], s=7, color="#087A98")
        self._slow = self._ax_t.scatter([], [], s=7, color="#c05621")
        self._ax_t.axhline(1, color="0.3", ls=":", lw=1)
        self._ax_t.set_xlabel("pair i")
        panel_title(self._ax_t, "turns in training (orange: < 1)")
        self._pts = self._ax_x.scatter([], [], s=22, color="0.55")
        self._sel = self._ax_x.scatter([], [], s=70, facecolors="none", edgecolors="#8b1e3f", linewidths=1.6)
        # labels nudged up or down by turns: rules that keep the same D(1) and novelty would overlap
        self._labels = [self._ax_x.annotate(_RULE_LABELS[r], (0, 0), xytext=(4, 5 - 9 * (i % 2)),
                                            textcoords="offset points", fontsize=7, va="center")
                        for i, r in enumerate(RULES)]
        self._ax_x.set_xlabel("novel phase at target (turns)")
        self._ax_x.set_ylabel("D(1)", fontsize=8)
        panel_title(self._ax_x, "trade-off across rules")
        self._ax_x.xaxis.set_major_locator(MaxNLocator(3))
        self._ax_x.yaxis.set_major_locator(MaxNLocator(3))
        self._fig.subplots_adjust(left=0.05, right=0.99, bottom=0.17, top=0.88, wspace=0.28)
        style = {"description_width": "100px"}
        layout = w.Layout(width="360px")
        sliders = {
            "head_dim": w.IntSlider(init["head_dim"], min=CONTROLS["head_dim"][0], max=CONTROLS["head_dim"][1], step=2,
                                    description="head dim", style=style, layout=layout, continuous_update=False),
            "base": w.FloatLogSlider(init["base"], base=10, min=1, max=7, step=0.05, description="base",
                                     style=style, layout=layout, continuous_update=False),
            "train_length": w.IntSlider(init["train_length"], min=16, max=CONTROLS["train_length"][1], step=16,
                                        description="train length", style=style, layout=layout, continuous_update=False),
            "target_length": w.IntSlider(init["target_length"], min=16, max=CONTROLS["target_length"][1], step=16,
                                         description="target length", style=style, layout=layout,
                                         continuous_update=False),
            "rule": w.Dropdown(options=[(_RULE_LABELS[r], r) for r in RULES], value=init["rule"],
                               description="extension rule", style=style, layout=layout),
        }
        self.image = w.Image(format="png")
        self.text = w.HTML()
        self._watch(sliders)
        names = list(self.controls.values())
        self.widget = w.VBox([w.HBox([w.VBox(names[:3]), w.VBox(names[3:])]), self.image, self.text])
        self.update(**init)

    def update(self, **controls) -> dict:
        """Recompute :func:`lab_state` for ``controls`` and redraw; returns the state."""
        state = lab_state(**controls)
        self.state = state
        c = state["controls"]
        d, k = state["kernel_offsets"], state["kernel_values"]
        self._line_k.set_data(d, k)
        self._ax_k.set_xlim(0, max(1.0, d[-1]))
        self._train_k.set_xdata([c["train_length"]] * 2)
        self._mark.set_data(*(([state["distant"][0]], [state["distant"][1]]) if state["distant"] else ([], [])))
        t = state["turns"]
        slow = t < 1
        idx = np.arange(t.size)
        self._fast.set_offsets(np.column_stack([idx[~slow], t[~slow]]))
        self._slow.set_offsets(np.column_stack([idx[slow], t[slow]]))
        self._ax_t.set_xlim(-1, t.size)
        self._ax_t.set_ylim(max(float(t.min()) / 3, 1e-9), float(t.max()) * 3)
        rows = state["tradeoff"]
        x = np.array([r["novelty"] for r in rows])
        y = np.array([r["adjacent_distance"] for r in rows])
        self._pts.set_offsets(np.column_stack([x, y]))
        j = next(i for i, r in enumerate(rows) if r["selected"])
        self._sel.set_offsets([[x[j], y[j]]])
        for lab, xi, yi in zip(self._labels, x, y):
            lab.xy = (xi, yi)
        span_x = max(float(x.max() - x.min()), 1e-3)
        span_y = max(float(y.max() - y.min()), 1e-3)
        self._ax_x.set_xlim(x.min() - 0.15 * span_x, x.max() + 0.35 * span_x)
        self._ax_x.set_ylim(y.min() - 0.2 * span_y, y.max() + 0.2 * span_y)
        self.image.value = self._png()
        self.text.value = "<pre style='font-size:12px;line-height:1.3'>" + readout(state) + "</pre>"
        return state



def audit_lab(**controls) -> AuditLab:
    """Build the audit lab (display the returned object in a notebook).

    Parameters
    ----------
    **controls
        Initial values: ``head_dim``, ``base``, ``train_length``, ``target_length``, ``rule``
        (bounds in :data:`CONTROLS`).

    Returns
    -------
    AuditLab

    Raises
    ------
    ValueError
        For an unknown control name or a value outside its bounds.
    """
    check_control_names(controls, CONTROLS)
    return AuditLab(**controls)

