"""Figures of the audit: the three gates side by side, Gate B margins, and a distant rival explained.
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ropegeo import _validate as v
from ropegeo.book.plots.readable import finish, valid_layout
from ropegeo.gates.procedure import AuditReport
from ropegeo.geometry import kernel
from ropegeo.toy import OffsetHead, distant_rival, score_profile

__all__ = ["gate_grid", "margin_bars", "rival_figure"]

_STATE = {"not run": 0, "pass": 1, "FAIL": 2, "checked": 3, "moot": 4, "inconclusive": 5}
_COLOURS = ["#eeeeee", "#74c476", "#de2d26", "#c6dbef", "#d9d9d9", "#fdae6b"]


def _printed(report: AuditReport) -> list:
    """The states the report prints: a pass on the configuration's own operator is "checked" and a
    measured gate after the first failure "moot" (as in ``str(report)``), never a green pass."""
    st, first = report.status(), report.first_failure
    if report.gate_a_on != "implementation" and st["A"] == "pass":
        st["A"] = "checked"
    return [("moot" if first is not None and g > first and st[g] not in ("not run", "FAIL") else st[g]) for g in "ABC"]


def gate_grid(reports: dict, *, layout: str = "wide") -> Figure:
    """The state of the three gates as each report prints it, one row per audit report (1 to 30, keyed
    by a label): green only for a pass on your code, neutral and hatched for "checked" and "moot"."""

    if not isinstance(reports, dict) or not 1 <= len(reports) <= 30:
        raise ValueError("reports must be a dict of 1 to 30 AuditReport objects keyed by label")
    if not all(isinstance(r, AuditReport) for r in reports.values()):
        raise ValueError("reports must hold AuditReport objects (from ropegeo.gates.procedure.audit)")
    valid_layout(layout)
    words = [_printed(r) for r in reports.values()]
    grid = np.array([[_STATE[w] for w in row] for row in words])
    column = layout == "column"
    fig = Figure(figsize=(7.8, 0.42 * len(reports) + 1.3) if not column else (6.0, 0.62 * len(reports) + 1.6),
                 layout="constrained")
    ax = fig.subplots()
    ax.imshow(grid, cmap=ListedColormap(_COLOURS), vmin=0, vmax=len(_COLOURS) - 1, aspect="auto",
              extent=(-0.5, 2.5, len(reports) - 0.5, -0.5))
    for r, row in enumerate(words):
        for c, word in enumerate(row):
            if word in ("checked", "moot"):  # hatched: measured, but not a verdict on your code
                ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, hatch="//", edgecolor="0.6", lw=0))
            ax.text(c, r, word, ha="center", va="center", fontsize=8, color="white" if word == "FAIL" else "black")
    for r, rep in enumerate(reports.values()):
        note = rep.intervention or ("no failure" if rep.complete else "C untested")
        if column:  # the intervention under the row label keeps the grid narrow
            note = note.replace(" ", "\n", 1) if len(note) > 14 else note
        ax.text(2.62, r, note, va="center", fontsize=8, color="#8b1e3f" if rep.intervention else "0.35")
    ax.set_xlim(-0.5, 4.1 if not column else 4.4)
    ax.set_xticks([0, 1, 2, 3.3], ["A: algebra", "B: geometry", "C: behaviour", "intervention"] if not column
                  else ["A", "B", "C", "intervention"])
    ax.set_yticks(range(len(reports)), list(reports))
    ax.tick_params(length=0)
    ax.tick_params(axis="y", pad=10)  # a gap between the row labels and column A's words
    for s in ax.spines.values():
        s.set_visible(False)
    ax.set_title("The audit: the first failing gate decides the intervention" if not column
                 else "First failing gate decides the fix")
    return finish(fig, layout)


def margin_bars(rows, *, min_margin: float = 0.1, thresholds=None, layout: str = "wide") -> Figure:
    """Gate B separation margins of 1 to 30 setups, ``rows`` of ``(label, {set name: margin})``, a group of bars each.

    ``thresholds`` (one per row) are drawn across their rows; without them ``min_margin`` as one dashed line.
    """
    rows = list(rows)
    if not 1 <= len(rows) <= 30:
        raise ValueError("rows must hold 1 to 30 (label, margins) pairs")
    min_margin = v.real("min_margin", min_margin, greater_than=0.0, maximum=2.0)
    valid_layout(layout)
    if thresholds is not None:
        thresholds = [v.real("thresholds", t, greater_than=0.0) for t in thresholds]
        if len(thresholds) != len(rows):
            raise ValueError(f"thresholds must hold one threshold per row ({len(rows)}), got {len(thresholds)}")
    kinds = []
    for label, margins in rows:
        if not isinstance(margins, dict) or not margins:
            raise ValueError(f"the margins of {label!r} must be a non-empty dict of set name -> margin")
        for name, m in margins.items():
            m = v.real("margin", m, minimum=0.0, maximum=2.0)
            kind = name.split(" ")[0]
            if kind not in kinds:
                kinds.append(kind)
    colours = ("#087A98", "#c05621", "#588b41", "#8a5a9e")
    fig = Figure(figsize=(8.6, 0.36 * len(rows) * len(kinds) + 1.4) if layout == "wide" else
                 (5.2, 0.42 * len(rows) * len(kinds) + 1.8), layout="constrained")
    ax = fig.subplots()
    h = 0.8 / len(kinds)
    labelled = set()
    for r, (label, margins) in enumerate(rows):
        for name, m in margins.items():
            kind = name.split(" ")[0]
            j = kinds.index(kind)
            y = r + (j - (len(kinds) - 1) / 2) * h
            ax.barh(y, m, height=h * 0.9, color=colours[j % len(colours)],
                    label=None if kind in labelled else f"{kind} offsets")
            labelled.add(kind)
            ax.text(m + 0.01, y, f"{m:.3f}", va="center", fontsize=7)
    if thresholds is None:
        ax.axvline(min_margin, color="k", ls="--", lw=1, label=f"threshold {min_margin:g}")
    else:
        for r, t in enumerate(thresholds):
            ax.plot([t, t], [r - 0.45, r + 0.45], color="k", lw=1.6, label="Gate B threshold" if r == 0 else None)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("separation margin (smallest phase distance between required offsets)" if layout == "wide"
                  else "separation margin")
    ax.set_xlim(0, max(1.0, max(m for _, mm in rows for m in mm.values()) * (1.15 if layout == "wide" else 1.3)))
    if layout == "wide":
        ax.legend(fontsize=8, loc="lower right")
    else:  # below the bars, where it hides none of them
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False)
    ax.set_title("Gate B: how far apart the ruler keeps the offsets a task needs" if layout == "wide"
                 else "Gate B margins")
    return finish(fig, layout)


def rival_figure(head, length: int, *, layout: str = "wide") -> Figure:
    """Why a distant displacement can beat the trained one.

    Top: an offset head's ``score(delta)`` up to ``length`` (at most 1,000,000), the target and the
    strongest displacement beyond the training window marked. Bottom: the kernel ``K_w(delta - k)``
    weighted by the head's amplitudes, with equal weights, and of the fast band alone (the pairs that
    turn at least once in training), whose peak beyond the window predicts the rival.
    """

    if not isinstance(head, OffsetHead):
        raise ValueError(f"head must be an OffsetHead, got {type(head).__name__}")
    length = v.integer("length", length, minimum=head.train_length + 1, maximum=1_000_000)
    valid_layout(layout)
    column = layout == "column"
    riv = distant_rival(head, length)
    deltas = np.arange(1, length)
    k = head.offset
    th = head.theta * head.scale
    fig = Figure(figsize=(9.0, 5.2) if not column else (5.2, 7.4), layout="constrained")
    ax_s, ax_k = fig.subplots(2, 1, sharex=True)
    for ax in (ax_s, ax_k):
        ax.axvspan(1, head.train_length, color="0.88", zorder=0)
        ax.axvline(riv.rival, color="#8b1e3f", lw=0.9, ls=":")
        ax.grid(alpha=0.3)
    ax_s.plot(deltas, score_profile(head, deltas), color="#087A98", lw=1.0)
    ax_s.axhline(riv.target_score, color="k", lw=0.8, ls="--", label=f"score at the target {k}")
    ax_s.plot([riv.rival], [riv.rival_score], "o", color="#8b1e3f",
              label=f"best beyond the window: {riv.rival} ({'wins' if riv.wins else 'loses'})" if not column
              else f"rival {riv.rival} ({'wins' if riv.wins else 'loses'})")
    ax_s.set_ylabel("learned score (logit)")
    ax_s.legend(fontsize=8, loc="lower left")
    ax_s.set_title(f"Offset head, seed {head.seed}: trained on displacements < {head.train_length}" if not column
                   else f"Seed {head.seed}, trained on distances < {head.train_length}")
    ax_k.plot(deltas, kernel(deltas - k, th, weights=head.amplitudes()), color="#c05621", lw=1.0,
              label="K weighted by the head's amplitudes" if not column else "learned amplitudes")
    ax_k.plot(deltas, kernel(deltas - k, th), color="0.55", lw=0.8, label="K with equal weights" if not column
              else "equal weights")
    fast = np.where(np.isin(np.arange(th.size), riv.fast_pairs), head.amplitudes(), 0.0)
    ax_k.plot(deltas, kernel(deltas - k, th, weights=fast), color="#3b3b7a", lw=0.8, alpha=0.8,
              label="K over the fast band (learned amplitudes, slow pairs zero)" if not column else "fast band")
    ax_k.set(ylabel=f"similarity to {k} back", xlabel="distance back −δ = m − n")
    ax_k.legend(fontsize=7, loc="lower left", ncol=3 if not column else 1)
    return finish(fig, layout)
