"""Context-extension rules: each one a new ruler for the same rotary machinery.

A model trained on sequences of ``L`` tokens is asked to serve ``s * L``; each rule of :data:`RULES`
answers "what should pair ``i`` turn by per position now?" differently (its function in
:mod:`ropegeo.scaling.rules` states the formula), and some also ask for an attention factor ``m``
that multiplies cos and sin.

The formulas follow transformers' ``modeling_rope_utils.py`` (v4.4x to v5), checked to float32
rounding in ``tests/test_scaling.py``. ropegeo differs where it refuses: ``ntk`` is no transformers
rope type (only its dynamic form is; :meth:`Scaling.from_hf` refuses ``"ntk"``), Llama-3 with
``high_freq_factor < low_freq_factor``, an odd rotary width.

One list of rules (:data:`RULES`), one rule table (:data:`RULE_FUNCTIONS`), one rule at a length
(:func:`preset` then :func:`scaled_frequencies`, put together by :func:`extension_schedule`); every
function takes the width before the base. :mod:`ropegeo.extension` measures what a rule trades.
"""

from ropegeo.scaling.config import RULE_FUNCTIONS, Schedule, Scaling, extension_schedule, preset, scaled_frequencies
from ropegeo.scaling.hf import HF_KEYS, HF_TYPES
from ropegeo.scaling.rules import (MAX_FACTOR, MIN_PARAMETER, NAMED_RULES, RULE_ALIASES, RULES, dynamic_ntk, linear,
                                   llama3, longrope, ntk, rule_name, yarn, yarn_mscale, yarn_ramp)

__all__ = ["RULES", "RULE_ALIASES", "NAMED_RULES", "RULE_FUNCTIONS", "Scaling", "scaled_frequencies", "preset",
           "Schedule", "extension_schedule", "rule_name", "linear", "ntk", "dynamic_ntk", "yarn", "yarn_ramp",
           "yarn_mscale", "longrope", "llama3"]
