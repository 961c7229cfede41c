"""One rule at one evaluation length, as a trained head is run under it (Gate C).

:func:`~ropegeo.scaling.rule_name` is the one vocabulary of rule names (with aliases);
:func:`~ropegeo.scaling.extension_schedule` gives the :class:`~ropegeo.scaling.Schedule` a head is
run under. The public names are re-exported by :mod:`ropegeo.scaling`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ropegeo import _validate as v
from ropegeo.frequencies import frequencies
from ropegeo.scaling.config import RULE_FUNCTIONS, Scaling
from ropegeo.scaling.rules import MAX_FACTOR, RULES

#: Other spellings :func:`extension_schedule` accepts, mapped to the rule names of :data:`RULES`
#: (``"none"``: the training schedule unchanged, raw extrapolation).
RULE_ALIASES = {"raw": "none", "pi": "linear", "interpolation": "linear", "dynamic_ntk": "dynamic"}


def rule_name(extension) -> str:
    """The rule name of ``extension`` ("none" or one of :data:`RULES` but longrope), aliases resolved."""
    names = ("none",) + tuple(r for r in RULES if r != "longrope")
    if isinstance(extension, str):
        name = RULE_ALIASES.get(extension.lower(), extension.lower())
        if name in names:
            return name
        if name == "longrope":
            raise ValueError("extension='longrope' needs per-pair factors: pass theta from ropegeo.scaling.longrope")
    raise ValueError(f"extension must be one of {', '.join(map(repr, names))} (or an alias: "
                     f"{', '.join(map(repr, RULE_ALIASES))}), got {extension!r}")


class Schedule(NamedTuple):
    """A frequency schedule as a head is run under it: ``(theta, scale, attention_factor, rule)``.

    ``theta`` (shape (pairs,)) holds the per-pair frequencies in radians per position, fastest
    first; ``scale`` multiplies every position id before rotating (``1 / s`` for position
    interpolation); ``attention_factor`` multiplies queries and keys after rotating, so the logits
    grow by its square (YaRN); ``rule`` names the rule (``"none"`` for the training schedule).
    """

    theta: np.ndarray
    scale: float
    attention_factor: float
    rule: str


def extension_schedule(
    extension: str,
    *,
    head_dim: int,
    base: float,
    train_length: int,
    length: int,
    factor: float | None = None,
) -> Schedule:
    """The schedule of a context-extension rule at one evaluation length.

    Parameters
    ----------
    extension : {"none", "linear", "ntk", "dynamic", "yarn", "llama3"}
        ``"none"``: the training schedule unchanged (raw extrapolation).
        ``"linear"``: position interpolation (:func:`~ropegeo.scaling.linear`), expressed here as a position scale
        ``1 / factor`` on the unchanged frequencies (the same phases).
        ``"ntk"``: the NTK-aware base ``base * factor ** (d / (d - 2))`` (:func:`~ropegeo.scaling.ntk`).
        ``"dynamic"``: the NTK base recomputed for the current length, as in transformers
        (:func:`~ropegeo.scaling.dynamic_ntk`): ``base * (factor * length / train_length - (factor - 1)) **
        (d / (d - 2))`` beyond the training length, the training schedule within it.
        ``"yarn"``, ``"llama3"``: :func:`~ropegeo.scaling.yarn` (with its attention factor) and :func:`~ropegeo.scaling.llama3` at
        their default parameters.
        Aliases (:data:`RULE_ALIASES`): ``"raw"`` (none), ``"pi"`` and ``"interpolation"``
        (linear), ``"dynamic_ntk"`` (dynamic).
    head_dim : int
        Rotary head dimension ``d`` (even; at least 4 for the NTK rules).
    base : float
        The training base (greater than 1).
    train_length, length : int
        The training length and the length evaluated (each from 2 to
        ``ropegeo._validate.MAX_LENGTH`` = 2**48).
    factor : float, optional
        The extension factor ``s`` (1 to :data:`MAX_FACTOR` = 1e6). Default:
        ``max(1, length / train_length)`` (the rule configured for exactly this length) except
        ``"dynamic"``, whose default 1 makes its base follow the current length alone; pass
        ``factor=8`` to evaluate a model configured for ``8 * train_length`` at another length.

    Returns
    -------
    Schedule
        ``(theta, scale, attention_factor, rule)``.

    Raises
    ------
    ValueError
        For an unknown rule, bad dimensions, lengths or factor.

    Examples
    --------
    >>> sch = extension_schedule("pi", head_dim=8, base=10_000.0, train_length=64, length=256)
    >>> sch.rule, sch.scale, sch.attention_factor
    ('linear', 0.25, 1.0)
    """
    name = rule_name(extension)
    head_dim = v.head_dim(head_dim)
    base = v.base(base)
    train_length = v.length("train_length", train_length, minimum=2)
    length = v.length("length", length, minimum=2)
    if factor is None:
        factor = 1.0 if name == "dynamic" else max(1.0, length / train_length)
        if factor > MAX_FACTOR:
            raise ValueError(f"length / train_length must be at most {MAX_FACTOR:g} (the largest extension "
                             f"factor) when factor is not given, got {length} / {train_length}")
    factor = v.real("factor", factor, minimum=1.0, maximum=MAX_FACTOR)
    if name in ("ntk", "dynamic") and head_dim < 4:
        raise ValueError(f"head_dim must be at least 4 for the NTK rules, got {head_dim}")
    theta = frequencies(head_dim, base)
    if name == "none" or (factor == 1.0 and name != "dynamic"):
        return Schedule(theta, 1.0, 1.0, name)
    if name == "linear":  # the same phases as theta / factor, expressed as a position scale
        return Schedule(theta, 1.0 / factor, 1.0, name)
    options = {"original_max_position_embeddings": train_length} if name != "ntk" else {}
    if name == "llama3":
        options |= {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
    th, att = RULE_FUNCTIONS[name](Scaling(name, factor, **options), base, head_dim, length)
    return Schedule(th, 1.0, float(att), name)
