"""Context-extension rules: each one a new ruler for the same rotary machinery.

A model trained on sequences of ``L`` tokens is asked to serve ``s * L``. Every rule below answers
the question "what should pair ``i`` turn by per position now?" differently, and some also ask for
an *attention factor* ``m`` that multiplies cos and sin (so the attention logits grow by ``m**2``).

=============  ===============================================================================
rule           per-pair inverse frequency ``theta'_i`` (``theta_i = B ** (-2 i / d)``)
=============  ===============================================================================
(none)         ``theta_i``: raw extrapolation, every pair travels ``s`` times farther
``linear``     ``theta_i / s``: position interpolation (PI)
``ntk``        ``B' ** (-2 i / d)`` with ``B' = B * s ** (d / (d - 2))``: NTK-aware base change
``dynamic``    NTK with ``s`` replaced by ``s * n / L - (s - 1)`` for the current length ``n > L``
``yarn``       a per-pair blend of ``theta_i`` and ``theta_i / s`` along a ramp between the pairs
               that turn ``beta_fast`` and ``beta_slow`` times over ``L``; ``m = 0.1 ln s + 1``
``longrope``   ``theta_i / f_i`` with searched per-pair factors: ``short_factor`` up to ``L``,
               ``long_factor`` beyond; ``m = sqrt(1 + ln s / ln L)``
``llama3``     pairs with wavelength below ``L / high_freq_factor`` untouched, above
               ``L / low_freq_factor`` divided by ``s``, a smooth blend in between
=============  ===============================================================================

The formulas, defaults and edge cases follow Hugging Face transformers' ``modeling_rope_utils.py``
(the ``rope_scaling`` era, v4.4x-v4.5x, and its v5 ``rope_parameters`` successor where they agree),
checked to float32 rounding in ``tests/test_scaling.py`` against an independent float32
transliteration. Where ropegeo deliberately differs the docstring says so:

* ``ntk`` (the static base change of bloc97's post) is not a transformers rope type; transformers
  only ships its dynamic form. ropegeo offers both, and :meth:`Scaling.from_hf` refuses ``"ntk"``.
* Llama-3 with ``high_freq_factor < low_freq_factor`` is refused (transformers only warns); equal
  factors (Llama 4's configs) leave no blended band, as transformers computes them.
* An odd rotary width is refused (transformers silently builds ``ceil(dim / 2)`` frequencies
  over an odd exponent denominator, which no rotary layout can apply).

Everything is float64; the tests compare with float32 reference values at a relative tolerance
of a few float32 ulps.

The package is split by concern; every public name below is importable from ``ropegeo.scaling``:

* :mod:`ropegeo.scaling.rules`: the formulas (:func:`linear` .. :func:`llama3`) and the limits;
* :mod:`ropegeo.scaling.config`: :class:`Scaling` (one configured rule), :func:`scaled_frequencies`,
  :func:`preset`;
* :mod:`ropegeo.scaling.hf`: the per-rule readers of transformers blocks behind :meth:`Scaling.from_hf`;
* :mod:`ropegeo.extension` (imported by its own name: it measures rules with the core's margins):
  :func:`~ropegeo.extension.phase_novelty`, :func:`~ropegeo.extension.extension_report`,
  :func:`~ropegeo.extension.text_table`;
* :mod:`ropegeo.scaling.schedule`: :func:`rule_name` and :func:`extension_schedule` (Gate C).
"""

from ropegeo.scaling.config import RULE_FUNCTIONS, Scaling, preset, rope_parameters, scaled_frequencies
from ropegeo.scaling.hf import HF_KEYS, HF_TYPES
from ropegeo.scaling.rules import (
                    MAX_FACTOR,
                    MIN_PARAMETER,
                    RULES,
                    dynamic_ntk,
                    linear,
                    llama3,
                    longrope,
                    ntk,
                    yarn,
                    yarn_mscale,
                    yarn_ramp,
)
from ropegeo.scaling.schedule import RULE_ALIASES, Schedule, extension_schedule, rule_name

__all__ = [
    "RULES",
    "Scaling",
    "rope_parameters",
    "scaled_frequencies",
    "RULE_FUNCTIONS",
    "linear",
    "ntk",
    "dynamic_ntk",
    "yarn",
    "yarn_ramp",
    "yarn_mscale",
    "longrope",
    "llama3",
    "preset",
    "RULE_ALIASES",
    "Schedule",
    "extension_schedule",
    "rule_name",
]
