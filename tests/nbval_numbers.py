"""nbval plugin: stored numbers match when they agree to rounding noise, not to the last digit.

Another CPU or BLAS kernel rounds matrix products and transcendental functions differently, so a
float stored in a notebook on one machine differs from the same float computed on another in its
last digits (``0.5311473215632533`` against ``0.5311473215632534``). Comparing outputs character by
character turns that noise into a red suite. This plugin keeps nbval strict about everything else:

- text between numbers must match exactly (after the usual sanitiser patterns), except that a run
  of spaces matches a run of another length (numpy pads array columns to the widest number);
- integers (no decimal point, no exponent) must match exactly: counts, offsets, seeds;
- every other number must agree to a relative tolerance ``RTOL`` (plus ``ATOL`` for values that
  are rounding noise themselves, such as a residual of ``3e-16``).

``RTOL`` sits between the two scales that matter: rounding noise on another machine moves the
stored floats of a computation that is deterministic to rounding by about ``1e-13`` relative, a stale
output moves them by far more than ``1e-8``. ``tests/test_nbval_numbers.py`` proves both halves on a
real chapter.

A long training is not such a computation: thousands of Adam steps amplify last-digit differences
(chapter 8's budget curve moved by 2.6e-4 at 3,200 steps between AVX-512, ``NPY_DISABLE_CPU_FEATURES=
X86_V4`` and ``OPENBLAS_CORETYPE=Prescott``, while it agreed to 1e-12 up to 1,600). Its numbers are
claims with a spread, not digits: a chapter reads such a run from ``ropegeo/data/runs/`` (its script in
``scripts/``), and a test re-trains it and checks every seed to the measured spread and the claims on
disjoint seeds. The trainings a chapter still runs in a cell (chapters 2 and 6's heads, at most 600
steps; chapter 8's 2D heads, 300 steps) were measured under the same three settings: every stored
number agreed to 1.2e-10 relative or better (chapter 2's trained scores), within ``RTOL``.

A cell whose numbers are computed in float32 carries the tag ``nbval-float32`` in its metadata; its
numbers are compared to ``RTOL_FLOAT32`` (see there for the measurement behind it).

The rule applies to every output nbval compares: text and stream output, glued values, HTML and
Markdown tables. Widget views are not compared by nbval (their state is re-created by the book build).

Load it with ``-p tests.nbval_numbers`` next to ``--nbval`` (the Makefile's ``test-notebooks``).
"""

from __future__ import annotations

import math
import re

RTOL = 1e-9
ATOL = 1e-12
# A cell tagged FLOAT32_TAG computes some of its numbers in float32 (a Gate B margin in a model's float32
# phase, an attention probe in float32). numpy's float32 sin, cos and exp differ between its SSE, AVX2 and
# AVX-512 kernels in the last bit, and a margin or a mass built from many of them moved by up to 1.2e-7
# relative (measured: chapter 6's Gemma 3 4B local margin and chapter 3's float32 parser probe, AVX-512 against
# NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4" with OPENBLAS_CORETYPE=Prescott). Such a cell's numbers are compared to
# RTOL_FLOAT32, 8 times that spread and 8 float32 units in the last place; a stale output moves them far more.
FLOAT32_TAG = "nbval-float32"
RTOL_FLOAT32 = 1e-6

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\b(?:nan|inf)\b")


_PADDING = re.compile(r"[ \t]+")


def _split(text: str) -> tuple[list[str], list[str]]:
    """The text between numbers (runs of spaces folded: numpy pads columns to the widest number),
    and the numbers, in order."""
    return [_PADDING.sub(" ", part) for part in _NUMBER.split(text)], _NUMBER.findall(text)


def _is_integer(token: str) -> bool:
    return token.lstrip("+-").isdigit()


def numbers_close(a: str, b: str, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether two number tokens agree: integers exactly, other numbers to ``rtol``/``atol``."""
    if a == b:
        return True
    if _is_integer(a) and _is_integer(b):
        return False
    x, y = float(a), float(b)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=rtol, abs_tol=atol)


def same_up_to_rounding(left: str, right: str, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Whether two output texts are equal but for rounding noise in their non-integer numbers.

    >>> same_up_to_rounding("mass 0.5311473215632533", "mass 0.5311473215632534")
    True
    >>> same_up_to_rounding("mass 0.53114732", "mass 0.53114733")
    False
    >>> same_up_to_rounding("offset 6283", "offset 6284")
    False
    """
    if left == right:
        return True
    text_l, nums_l = _split(left)
    text_r, nums_r = _split(right)
    if text_l != text_r or len(nums_l) != len(nums_r):
        return False
    return all(numbers_close(a, b, rtol, atol) for a, b in zip(nums_l, nums_r))


class NumericText(str):
    """A sanitised output string whose equality is :func:`same_up_to_rounding` to its ``rtol``."""

    rtol = RTOL

    def __new__(cls, text: str, rtol: float = RTOL):
        new = super().__new__(cls, text)
        new.rtol = rtol
        return new

    def __eq__(self, other):
        if isinstance(other, str):
            rtol = max(self.rtol, getattr(other, "rtol", RTOL))
            return same_up_to_rounding(str(self), str(other), rtol)
        return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = str.__hash__


def _install() -> None:
    from nbval.plugin import IPyNbCell

    if getattr(IPyNbCell.sanitize, "_numeric", False):
        return
    plain = IPyNbCell.sanitize

    def sanitize(self, s):
        out = plain(self, s)
        if not isinstance(out, str):
            return out
        tags = getattr(self, "cell", {}).get("metadata", {}).get("tags", [])
        return NumericText(out, RTOL_FLOAT32 if FLOAT32_TAG in tags else RTOL)

    sanitize._numeric = True
    IPyNbCell.sanitize = sanitize


def pytest_configure(config):
    _install()
