"""The scaling lab: an extension rule and its parameters; the ruler and the trade-off.

Three panels (the stretched ruler over the unscaled one, the per-pair phase novelty at the target,
the novelty/resolution trade-off of every rule at this factor) and :func:`summary`'s numbers.
LongRoPE is not offered: its per-pair factors come from a search over a trained model.
"""

from __future__ import annotations


from ropegeo import _validate as v
from ropegeo.book.widgets._lab import Lab, esm_source
from ropegeo.scaling import NAMED_RULES, preset
from ropegeo.extension import ExtensionReport, extension_report

__all__ = ["ScalingLab", "lab_report", "summary", "LAB_RULES", "MAX_LAB_FACTOR", "HEAD_DIMS", "TRAIN_LENGTHS"]

LAB_RULES = NAMED_RULES  # "dynamic" is the configuration read at the target: transformers' meaning
#: Largest extension factor of the lab's slider (the package itself accepts up to
#: :data:`ropegeo.scaling.MAX_FACTOR`).
MAX_LAB_FACTOR = 64.0
HEAD_DIMS = (32, 64, 96, 128, 256)
TRAIN_LENGTHS = (1024, 2048, 4096, 8192, 32768)
SMALL_OFFSETS = 16


def _ordered(maximum: float, greater: str, lesser: str, **values) -> dict:
    """Rule parameters, each from 0.25 to ``maximum`` (checked in the order given), ``greater`` above ``lesser``."""
    out = {name: v.real(name, x, minimum=0.25, maximum=maximum) for name, x in values.items()}
    if not out[greater] > out[lesser]:
        raise ValueError(f"{greater} must be greater than {lesser}, got {out[greater]:g} <= {out[lesser]:g}")
    return out


def lab_report(rule: str = "yarn", factor: float = 8.0, *, train_length: int = 4096, head_dim: int = 128,
             base: float = 1e4, beta_fast: float = 32.0, beta_slow: float = 1.0,
             low_freq_factor: float = 1.0, high_freq_factor: float = 4.0) -> ExtensionReport:
    """The lab's numbers for one setting: the rule stretched to ``factor * train_length``.

    ``beta_fast > beta_slow`` (0.25 to 128) are YaRN's, ``high_freq_factor > low_freq_factor`` (0.25 to
    64) Llama-3's, ignored by other rules. Returns an :class:`ropegeo.extension.ExtensionReport` with the
    Gate B margin of offsets 1 .. 16; ``ValueError`` naming a value out of the lab's ranges.
    """
    if rule not in LAB_RULES:
        raise ValueError(f"rule must be one of {', '.join(map(repr, LAB_RULES))}, got {rule!r}")
    factor = v.real("factor", factor, minimum=1.0, maximum=MAX_LAB_FACTOR)
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {', '.join(map(str, HEAD_DIMS))}, got {head_dim!r}")
    base = v.real("base", base, minimum=1_000.0, maximum=1e7)
    if train_length not in TRAIN_LENGTHS:
        raise ValueError(f"train_length must be one of {', '.join(map(str, TRAIN_LENGTHS))}, got {train_length!r}")
    target = int(round(factor * train_length))
    params = {}
    if rule == "yarn":
        params = _ordered(128.0, "beta_fast", "beta_slow", beta_fast=beta_fast, beta_slow=beta_slow)
    if rule == "llama3":
        params = _ordered(64.0, "high_freq_factor", "low_freq_factor", low_freq_factor=low_freq_factor,
                          high_freq_factor=high_freq_factor)
    if rule == "none" or factor == 1.0 and rule != "dynamic":
        sc = None if rule == "none" else preset(rule, train_length=train_length, target_length=max(target, train_length), **params)
    else:
        sc = preset(rule, train_length=train_length, target_length=target, **params)
    return extension_report(sc, base=base, rotary_dim=head_dim, train_length=train_length, target_length=target,
                            small_offsets=SMALL_OFFSETS)


def summary(report: ExtensionReport) -> str:
    """One line of the lab's numbers."""
    return (f"{report.rule}: {report.scaled_pairs} of {report.theta.size} pairs stretched | "
            f"{report.novel_pairs} pairs see new phase ({report.total_novelty:.3f} turns) | "
            f"K(1) = {report.adjacent_similarity:.6f} | fastest step {report.fastest_step:.4f} rad | "
            f"margin 1..{SMALL_OFFSETS} = {report.margin:.4f} | margin 64, 128, .. = {report.coarse_margin:.4f} | "
            f"attention factor {report.attention_factor:.4f}")


class ScalingLab(Lab):
    """The ruler and trade-off of one rule (controls: ``DEFAULTS``, ``BOUNDS``).

    The front end keeps ``beta_slow`` at most ``beta_fast - 0.25`` and ``low_freq_factor`` at most
    ``high_freq_factor - 0.25``, so no control position blanks the lab. :attr:`ScalingLab.report` is
    :func:`lab_report` for the current state.
    """

    _esm = esm_source("lab_scaling.js")
    BOUNDS = {"rule": LAB_RULES, "factor": (1.0, MAX_LAB_FACTOR), "head_dim": HEAD_DIMS, "base": (1_000.0, 1e7),
              "train_length": TRAIN_LENGTHS, "beta_fast": (0.5, 128.0), "beta_slow": (0.25, 128.0),
              "low_freq_factor": (0.25, 64.0), "high_freq_factor": (0.5, 64.0)}

    DEFAULTS = {"rule": "yarn", "factor": 8.0, "head_dim": 128, "base": 1e4, "train_length": 4096, "beta_fast": 32.0,
                "beta_slow": 1.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}

    @property
    def report(self) -> ExtensionReport:
        """ropegeo's :func:`lab_report` for the current state (raises ValueError if refused)."""
        st = self.state()
        return lab_report(st.pop("rule"), st.pop("factor"), **st)
