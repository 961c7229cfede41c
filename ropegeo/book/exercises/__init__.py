"""Checks for the book's exercises, with precise feedback: ``check("ch02-relative-law", my_answer)``.

``check`` always answers with a one-line :class:`Feedback`: what is right, or precisely what is
wrong, without revealing the solution; an unfinished stub is reported as such, any other exception
as "checking your answer raised <Type>: <message>". Each chapter's checks live in the submodule
named by the id's prefix (``ch02-...`` in ``ropegeo.book.exercises.ch02``), registered with
:func:`exercise`. They read the answer with the helpers below, each returning ``(value, None)`` or
``(None, verdict)`` (read through :func:`need`), so the student gets a specific message ("expected a
whole number, got ~10**400, which is far outside the range").
"""

from __future__ import annotations

import importlib
import itertools
import math
import numbers
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from typing import Any, Callable

import numpy as np

__all__ = ["Feedback", "check", "exercise", "exercise_ids", "correct", "wrong", "as_number", "as_whole", "as_items",
           "read_each", "as_float_array", "call_student", "need", "need_function", "short", "sympy_problem",
           "MAX_MESSAGE", "MAX_ITEMS", "MAX_WHOLE", "POINTS_BY_KIND", "REASONING_POINTS", "exercise_points"]

_REGISTRY: dict[str, Callable[[Any], "Feedback"]] = {}
_POINTS: dict[str, int] = {}

#: Points of an exercise's autograded answer in the course editions (nbgrader, Otter-Grader), by the
#: kind the exercise names in bold (**Compute.**, **Derive.**, ...); ``@exercise(id, points=n)``
#: overrides it for one exercise.
POINTS_BY_KIND = {"compute": 1, "derive": 2, "implement": 2, "investigate": 3}
#: Points of an exercise's written answer (its reasoning), graded by hand in the course editions.
REASONING_POINTS = 1
_ID = re.compile(r"^(ch\d\d)-[a-z0-9-]+$")

#: Longest feedback message, in characters (longer ones are shortened with "...").
MAX_MESSAGE = 300
#: Most items a check reads from a sequence answer (longer answers are refused, never materialised).
MAX_ITEMS = 10_000
#: Largest magnitude of a whole-number answer (a count, a length, an index) a check looks at.
MAX_WHOLE = 10**18

_NEWLINES = re.compile(r"\s*[\r\n]+\s*")
_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxlong, _REPR.maxother = 40, 24, 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 6


def _one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line (newlines and the blanks around them become one space), at most ``limit`` long."""
    text = _NEWLINES.sub(" ", str(text)).strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def short(obj: Any, limit: int = 60) -> str:
    """A short one-line repr of ``obj`` for a feedback message (never raises)."""
    if isinstance(obj, numbers.Integral) and not isinstance(obj, bool):
        try:
            n = int(obj)
            if abs(n) > 10**15:
                return f"~{'-' if n < 0 else ''}10**{int(abs(n).bit_length() * math.log10(2))}"
        except Exception:  # noqa: BLE001 - an exotic integer type: fall through to its repr
            pass
    try:
        text = _REPR.repr(obj)
    except Exception:  # noqa: BLE001 - a repr that raises says nothing useful
        text = f"<{type(obj).__name__}>"
    return _one_line(text, limit)


@dataclass(frozen=True)
class Feedback:
    """The verdict of a check: ``ok`` and a one-line ``message``."""

    exercise_id: str
    ok: bool
    message: str

    def __post_init__(self):
        object.__setattr__(self, "ok", bool(self.ok))
        object.__setattr__(self, "message", _one_line(self.message))

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        mark = "correct" if self.ok else "not yet"
        return f"[{self.exercise_id}] {mark}: {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.ok else "#b35900"
        mark = "&#10004; correct" if self.ok else "&#10008; not yet"
        return (
            f'<div style="border-left:4px solid {colour};padding:2px 8px">'
            f"<b>{escape(self.exercise_id)}</b> {mark}: {escape(self.message)}</div>"
        )


def correct(message: str = "matches the expected answer.") -> tuple[bool, str]:
    """Helper for check functions: a passing verdict."""
    return True, message


def wrong(message: str) -> tuple[bool, str]:
    """Helper for check functions: a failing verdict with a precise reason."""
    return False, message


# ---- validating answers: each helper returns (value, None) or (None, wrong(reason)) ---------------


def _is_text(x) -> bool:
    return isinstance(x, (str, bytes, bytearray))


def _describe_exception(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001
        text = ""
    return f"{type(exc).__name__}: {_one_line(text, 120)}" if text else type(exc).__name__


def _is_sympy(x) -> bool:
    return (type(x).__module__ or "").split(".")[0] == "sympy"


def _elementary(node) -> bool:
    """True for a SymPy symbol, number, +, *, ** or elementary function (sin, cos, exp, log, Abs, ...)."""
    import sympy as sp

    if isinstance(node, (sp.Symbol, sp.Number, sp.NumberSymbol, sp.Add, sp.Mul, sp.Pow)) or node is sp.I:
        return True
    return (isinstance(node, sp.Function) and not isinstance(node, sp.Piecewise)
            and (type(node).__module__ or "").startswith("sympy.functions.elementary."))


def sympy_problem(expr, max_nodes: int = 300) -> str | None:
    """Why the SymPy expression ``expr`` is unfit for a check, as a phrase, or None when it is fine.

    Too large (more than ``max_nodes`` nodes), or holding more than symbols, numbers, + - * / ** and
    elementary functions (a ``Sum`` over 10**9 terms may hide unbounded work).
    """
    import sympy as sp

    try:
        nodes = list(itertools.islice(sp.preorder_traversal(expr), max_nodes + 1))
    except RecursionError:
        return "is nested far too deeply"
    if len(nodes) > max_nodes:
        return "is far larger than the answer needs: simplify it first"
    foreign = sorted({type(node).__name__ for node in nodes if not _elementary(node)})
    if foreign:
        return (f"contains {short(', '.join(foreign))}: use only symbols, numbers, + - * / ** and elementary "
                "functions such as sin and cos")
    return None


def as_number(answer: Any, what: str = "a number", *, finite: bool = True):
    """A real number (``float``) from ``answer``, or a verdict "expected <what>, got ...".

    Accepts Python and NumPy reals (not ``bool``), 0-d arrays and SymPy numbers; refuses text,
    complex values, containers, integers too large for a float and (when ``finite``) ``inf`` and ``nan``.
    """
    if isinstance(answer, (bool, np.bool_)):
        return None, wrong(f"expected {what}, got {answer!r} (a bool)")
    if _is_text(answer):
        return None, wrong(f"expected {what}, got the text {short(answer)}: give the number itself, not a string")
    if isinstance(answer, np.ndarray):
        if answer.shape != ():
            return None, wrong(f"expected {what}, got an array of shape {answer.shape}")
        answer = answer[()]
    if isinstance(answer, numbers.Integral):
        n = int(answer)
        if abs(n) > 1e300:
            return None, wrong(f"expected {what}, got {short(n)}, which is far outside the range of "
                               "floating-point numbers")
        value = float(n)
    elif isinstance(answer, numbers.Real):
        try:
            value = float(answer)
        except (OverflowError, ValueError, TypeError):
            return None, wrong(f"expected {what}, got {short(answer)}, which is not a usable real number")
    elif _is_sympy(answer) and sympy_problem(answer) is None and getattr(answer, "is_number", False) is True:
        try:  # in float64: exp(exp(exp(100))) overflows at once instead of growing millions of digits
            import sympy as sp

            z = complex(sp.lambdify([], answer, modules="numpy")())
        except Exception:  # noqa: BLE001 - SymPy or NumPy cannot evaluate it
            return None, wrong(f"expected {what}, got {short(answer)}, which cannot be evaluated to a number")
        if z.imag != 0 and abs(z.imag) > 1e-12 * abs(z.real):
            return None, wrong(f"expected {what}, got {short(answer)}, which is not a real number")
        value = z.real
    elif _is_sympy(answer) and sympy_problem(answer) is not None:
        return None, wrong(f"expected {what}, got a SymPy expression that {sympy_problem(answer)}")
    else:
        kind = "a complex number" if isinstance(answer, numbers.Complex) else type(answer).__name__
        return None, wrong(f"expected {what}, got {kind}")
    if finite and not math.isfinite(value):
        return None, wrong(f"expected {what}, got {value}: it must be finite")
    return value, None


def as_whole(answer: Any, what: str = "a whole number", *, limit: int = MAX_WHOLE):
    """A whole number (``int``; integral floats accepted) from ``answer``, or a verdict (also beyond ``limit``)."""
    if isinstance(answer, numbers.Integral) and not isinstance(answer, (bool, np.bool_)):
        n = int(answer)
    else:
        x, bad = as_number(answer, what)
        if bad:
            return None, bad
        if not x.is_integer():
            return None, wrong(f"expected {what}, got {x:g}, which is not a whole number")
        n = int(x)
    if abs(n) > limit:
        return None, wrong(f"expected {what}, got {short(n)}, which is far outside the range")
    return n, None


def as_items(answer: Any, what: str, *, max_items: int = MAX_ITEMS, allow_sets: bool = False):
    """The items of a sequence answer as a list (at most ``max_items``), or a verdict.

    Refuses text, dicts, single numbers, non-iterables and (unless ``allow_sets``) sets; never
    materialises a huge or endless iterable.
    """
    if _is_text(answer):
        return None, wrong(f"expected {what}, got the text {short(answer)}")
    if isinstance(answer, Mapping):
        return None, wrong(f"expected {what}, got a {type(answer).__name__}")
    if isinstance(answer, (set, frozenset)) and not allow_sets:
        return None, wrong(f"expected {what} in order, got a set (its order is arbitrary): use a tuple or list")
    if isinstance(answer, np.ndarray) and answer.ndim == 0:
        return None, wrong(f"expected {what}, got a single number")
    try:
        size = len(answer)
    except OverflowError:
        return None, wrong(f"expected {what}, got {short(answer)}: far too many items")
    except TypeError:
        size = None
    if size is not None and size > max_items:
        return None, wrong(f"expected {what}, got {size:,} items: far too many")
    try:
        iterator = iter(answer)
    except TypeError:
        return None, wrong(f"expected {what}, got {type(answer).__name__}")
    items = list(itertools.islice(iterator, max_items + 1))
    if len(items) > max_items:
        return None, wrong(f"expected {what}, got more than {max_items:,} items: far too many")
    return items, None


def as_float_array(value: Any, what: str, *, finite: bool = True, max_size: int = 10**7):
    """A float64 array from ``value`` (an answer or what the student's function returned), or a verdict.

    Refuses text, complex numbers, non-numbers, integers too large for a float, more than ``max_size``
    elements and (when ``finite``) ``inf`` and ``nan``.
    """
    if _is_text(value):
        return None, wrong(f"{what} is the text {short(value)}, not numbers")
    if not isinstance(value, np.ndarray):
        try:
            size = len(value)
        except OverflowError:
            return None, wrong(f"{what} has far too many items ({short(value)})")
        except Exception:  # noqa: BLE001 - no length: np.asarray below decides
            size = None
        if size is not None and size > max_size:
            return None, wrong(f"{what} has {size:,} items: far too many")
    try:
        arr = np.asarray(value)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - the student's object cannot be read as an array
        return None, wrong(f"{what} cannot be read as an array of numbers ({_describe_exception(exc)})")
    if arr.size > max_size:
        return None, wrong(f"{what} has {arr.size:,} elements: far too many")
    kind = arr.dtype.kind
    if kind in "US":
        return None, wrong(f"{what} holds text, not numbers")
    if kind == "c":
        return None, wrong(f"{what} holds complex numbers; real numbers are expected")
    if kind not in "biufO":
        return None, wrong(f"{what} holds values of dtype {arr.dtype}, not real numbers")
    if kind == "O" and any(v is None for v in arr.flat):  # astype would turn None into nan
        return None, wrong(f"{what} holds None, not numbers")
    try:
        arr = arr.astype(np.float64)
    except OverflowError:
        return None, wrong(f"{what} holds a number far outside the range of floating-point numbers")
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 - objects (symbols, None, nested lists) that are not numbers
        return None, wrong(f"{what} holds values that are not real numbers")
    if finite and not np.all(np.isfinite(arr)):
        return None, wrong(f"{what} holds nan or infinite values")
    return arr, None


def read_each(items, read: Callable, what: str, **options):
    """Each item read with ``read`` (:func:`as_whole` or :func:`as_number`): the values, or the first item's verdict."""
    values = []
    for item in items:
        value, bad = read(item, what, **options)
        if bad:
            return None, bad
        values.append(value)
    return values, None


def call_student(fn: Callable, *args, what: str = "your function"):
    """Call the student's ``fn(*args)``: ``(result, None)``, or ``(None, reason)`` when it raised
    (``NotImplementedError``, an unfinished stub, propagates to :func:`check`).
    """
    try:
        return fn(*args), None
    except NotImplementedError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - report, do not crash the notebook
        return None, f"{what} raised {_describe_exception(exc)}"


class _Refused(Exception):
    """A reader's verdict, raised by :func:`need` and answered by :func:`check`."""


def need(read: tuple):
    """The value of a reader's ``(value, None)``; its ``(None, verdict or reason)`` ends the check with it.

    ``n = need(as_whole(answer, "a count"))`` stands for reading, then ``if bad: return bad``.
    """
    value, bad = read
    if bad:
        raise _Refused(bad if isinstance(bad, str) else bad[1])
    return value


def need_function(answer, message: str) -> None:
    """End the check with ``message`` unless ``answer`` is callable (a function the exercise asks for)."""
    if not callable(answer):
        raise _Refused(message)


# ---- the registry ---------------------------------------------------------------------------------


def exercise(exercise_id: str, *, points: int | None = None):
    """Register a check function ``f(answer) -> (ok, message)`` under ``exercise_id``; ``points`` overrides
    the autograded points of :data:`POINTS_BY_KIND`.
    """
    if not _ID.match(exercise_id):
        raise ValueError(f"exercise_id must look like 'ch02-some-name', got {exercise_id!r}")
    if points is not None and (isinstance(points, bool) or not isinstance(points, int) or points < 1):
        raise ValueError(f"points must be a positive whole number, got {points!r}")

    def register(fn):
        _REGISTRY[exercise_id] = fn
        if points is not None:
            _POINTS[exercise_id] = points
        return fn

    return register


def _load(exercise_id: str) -> None:
    m = _ID.match(exercise_id) if isinstance(exercise_id, str) else None
    if m is None:
        raise ValueError(f"exercise_id must look like 'ch02-some-name', got {exercise_id!r}")
    try:
        importlib.import_module(f"{__name__}.{m.group(1)}")
    except ModuleNotFoundError:
        pass


def exercise_ids(chapter: str | None = None) -> list[str]:
    """All registered exercise ids (optionally of one chapter, e.g. ``"ch02"``)."""
    for mod in ("ch01", "ch02", "ch03", "ch04", "ch05", "ch06", "ch07", "ch08"):
        if chapter is None or chapter == mod:
            _load(f"{mod}-x")
    return sorted(i for i in _REGISTRY if chapter is None or i.startswith(chapter + "-"))


def exercise_points(exercise_id: str, kind: str) -> int:
    """Points of the autograded answer of ``exercise_id``, an exercise of ``kind`` ("compute", ...).

    Examples
    --------
    >>> exercise_points("ch01-half-similarity", "compute")
    1
    """
    if kind not in POINTS_BY_KIND:
        raise ValueError(f"kind must be one of {sorted(POINTS_BY_KIND)}, got {kind!r}")
    _load(exercise_id)
    if exercise_id not in _REGISTRY:
        raise ValueError(f"exercise_id {exercise_id!r} is unknown")
    return _POINTS.get(exercise_id, POINTS_BY_KIND[kind])


def _placeholder(answer) -> bool:
    """True for a tuple or list with a stub's placeholder (None or ...) in it."""
    return isinstance(answer, (tuple, list)) and len(answer) <= MAX_ITEMS and any(
        a is None or a is Ellipsis for a in answer)


def check(exercise_id: str, answer: Any) -> Feedback:
    """Check ``answer`` to exercise ``exercise_id`` (an unknown id raises ``ValueError``).

    The :class:`Feedback` is truthy when the answer is right; otherwise its one-line message says what
    is wrong. A stub (``NotImplementedError``, ``None`` or ``...``, also inside a tuple or list) is
    reported as such.
    """
    _load(exercise_id)
    if exercise_id not in _REGISTRY:
        known = ", ".join(exercise_ids(exercise_id[:4])) or "none in that chapter"
        raise ValueError(f"exercise_id {exercise_id!r} is unknown; known ids: {known}")
    try:
        if answer is None or answer is Ellipsis:
            return Feedback(exercise_id, False, "no answer yet: replace the stub with your solution.")
        if _placeholder(answer):
            return Feedback(exercise_id, False, "no answer yet: some parts of your answer are placeholders "
                                                "(None or ...); replace them with your solution.")
        with np.errstate(all="ignore"):
            ok, message = _REGISTRY[exercise_id](answer)
        return Feedback(exercise_id, bool(ok), str(message))
    except _Refused as refused:
        return Feedback(exercise_id, False, str(refused))
    except NotImplementedError:
        return Feedback(exercise_id, False, "your function still raises NotImplementedError: write its body.")
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - check always answers
        return Feedback(exercise_id, False, f"checking your answer raised {_describe_exception(exc)}")
