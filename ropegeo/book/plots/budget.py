"""Figures of the seed-and-budget studies: fine-tuning budget curves and attention dilution.

Per-seed values are summarised as the mean (line) and the min-max range over seeds (band).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ropegeo.book.plots.readable import finish, panels, valid_layout

__all__ = ["budget_figure", "dilution_figure"]

_COLOURS = {"raw": "#444444", "pi": "#c8553d", "ntk": "#1f6f8b", "yarn": "#588b41", "llama3": "#8a5a9e",
            "none": "#444444", "log_length": "#d4a017"}
_NAMES = {"raw": "raw", "pi": "PI", "ntk": "NTK-aware", "yarn": "YaRN", "llama3": "Llama 3",
          "none": "no scaling", "log_length": "log-length scaling"}


def _band(ax, x, values, key, label=None, style="-"):
    y = np.asarray(values, dtype=float)
    colour = _COLOURS.get(key, "#1f6f8b")
    ax.plot(x, y.mean(axis=-1), style, color=colour, lw=2, marker="o", ms=3.5, label=label or _NAMES.get(key, key))
    ax.fill_between(x, y.min(axis=-1), y.max(axis=-1), color=colour, alpha=0.18, lw=0)


def _check_run(run: dict, keys) -> None:
    if not isinstance(run, dict) or any(k not in run for k in keys):
        raise ValueError(f"run must be a dict with the keys {sorted(keys)} (a stored or computed run)")


def budget_figure(run: dict, *, layout: str = "wide") -> Figure:
    """Three panels from :func:`ropegeo.toy.budget_curves.budget_curve` (or its stored run), against fine-tuning steps.

    Mass on the target at the target length per rule; summed pair amplitudes relative to the trained
    head (log); position interpolation's mass with exact phases, float32 angles with bfloat16 cos/sin,
    and a bfloat16 angle table.
    """
    _check_run(run, ("settings", "mass", "amplitude_ratio", "mass_bf16", "mass_bf16_cos_sin"))
    valid_layout(layout)
    s = run["settings"]
    budgets = np.asarray(s["budgets"], dtype=float)
    x = np.where(budgets == 0, budgets[budgets > 0].min() / 3 if np.any(budgets > 0) else 1.0, budgets)
    fig, grid = panels(layout, 3, wide_size=(13, 3.9), panel_height=3.1)
    ax1, ax2, ax3 = grid[0]
    for rule in s["rules"]:
        _band(ax1, x, run["mass"][rule], rule)
        _band(ax2, x, run["amplitude_ratio"][rule], rule)
    if "pi" in s["rules"]:
        _band(ax3, x, run["mass"]["pi"], "pi", "exact phases")
        _band(ax3, x, run["mass_bf16_cos_sin"]["pi"], "ntk", "float32 angles, bfloat16 cos/sin", "--")
        _band(ax3, x, run["mass_bf16"]["pi"], "raw", "bfloat16 angle table", ":")
    n = len(s["seeds"])
    for ax, title in ((ax1, f"Mass on offset {s['offset']} at {s['target_length']:,}"),
                      (ax2, "Summed amplitudes / trained head"), (ax3, "PI: mass by rotary pipeline")):
        ax.set_xscale("log")
        ax.set_xticks(x, ["0"] + [f"{int(b):,}" for b in budgets[1:]] if budgets[0] == 0 else
                      [f"{int(b):,}" for b in budgets], rotation=0 if layout == "wide" else 45)
        ax.set_xlabel("fine-tuning steps at the target length")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    ax2.set_yscale("log")
    ax1.set_ylim(-0.02, 1.02)
    ax3.set_ylim(-0.02, 1.02)
    ax1.legend(fontsize=8, loc="lower right")
    ax3.legend(fontsize=8, loc="upper left")
    if layout == "wide":
        fig.suptitle(f"Fine-tuning budget curves: head dim {s['head_dim']}, trained at {s['train_length']}, "
                     f"{n} seeds (line: mean, band: min to max)", fontsize=11)
    else:  # the caption carries the settings; the column keeps one short line
        fig.suptitle(f"{n} seeds: line mean, band min to max")
    return finish(fig, layout)


def dilution_figure(probe: dict, *, layout: str = "wide") -> Figure:
    """Mass on the target and entropy of the last query against length, per logit scaling, from
    :func:`ropegeo.toy.dilution.dilution_probe`; dashed: the entropy of attention spread evenly.
    """
    _check_run(probe, ("lengths", "mass", "entropy", "uniform_entropy", "rule"))
    valid_layout(layout)
    x = np.asarray(probe["lengths"], dtype=float)
    fig, grid = panels(layout, 2, wide_size=(10, 3.8), panel_height=3.2)
    ax1, ax2 = grid[0]
    for sc in probe["mass"]:
        label = "YaRN attention factor" if sc == "yarn" else _NAMES.get(sc, sc)
        style = "--" if sc == "log_length" else "-"
        _band(ax1, x, probe["mass"][sc], sc, label, style)
        _band(ax2, x, probe["entropy"][sc], sc, label, style)
    ax2.plot(x, probe["uniform_entropy"], "k--", lw=1, label="even over all keys")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length (last query sees every earlier key)" if layout == "wide" else "sequence length")
        ax.grid(alpha=0.3)
    ax1.set_ylabel("attention on the target")
    ax2.set_ylabel("attention entropy (nats)")
    ax1.set_ylim(-0.02, 1.02)
    ax1.legend(fontsize=8)
    ax2.legend(fontsize=8)
    rule = _NAMES.get(probe['rule'], probe['rule'])
    if layout == "wide":
        fig.suptitle(f"Attention dilution under {rule}, {len(probe['seeds'])} seeds (line: mean, band: min to max)",
                     fontsize=11)
    else:
        fig.suptitle(f"{rule}, {len(probe['seeds'])} seeds: line mean, band min to max")
    return finish(fig, layout)
