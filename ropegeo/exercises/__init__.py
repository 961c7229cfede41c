"""Checks for the book's exercises, with precise feedback.

Usage in a notebook::

    from ropegeo.exercises import check
    check("ch02-relative-law", my_answer)

``check`` returns a :class:`Feedback` that displays as one line: what is right, or precisely what
is wrong, without revealing the solution. Each chapter's checks live in a submodule named after
the chapter prefix of the exercise id (``ch02-...`` lives in ``ropegeo.exercises.ch02``) and
register themselves with :func:`exercise`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Feedback", "check", "exercise", "exercise_ids", "correct", "wrong"]

_REGISTRY: dict[str, Callable[[Any], "Feedback"]] = {}
_ID = re.compile(r"^(ch\d\d)-[a-z0-9-]+$")


@dataclass(frozen=True)
class Feedback:
    """The verdict of a check: ``ok`` and a one-line ``message``."""

    exercise_id: str
    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        mark = "correct" if self.ok else "not yet"
        return f"[{self.exercise_id}] {mark}: {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.ok else "#b35900"
        mark = "&#10004; correct" if self.ok else "&#10008; not yet"
        from html import escape

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


def exercise(exercise_id: str):
    """Register a check function ``f(answer) -> (ok, message)`` under ``exercise_id``."""
    if not _ID.match(exercise_id):
        raise ValueError(f"exercise_id must look like 'ch02-some-name', got {exercise_id!r}")

    def register(fn):
        _REGISTRY[exercise_id] = fn
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
    for mod in ("ch01", "ch02", "ch03", "ch04", "ch05", "ch06", "ch07"):
        if chapter is None or chapter == mod:
            _load(f"{mod}-x")
    return sorted(i for i in _REGISTRY if chapter is None or i.startswith(chapter + "-"))


def check(exercise_id: str, answer: Any) -> Feedback:
    """Check an answer to exercise ``exercise_id``.

    Parameters
    ----------
    exercise_id : str
        The id printed in the exercise, e.g. ``"ch02-relative-law"``.
    answer : object
        A number, an array, a SymPy expression or a function, as the exercise asks.

    Returns
    -------
    Feedback
        Truthy when the answer is right; its message says precisely what is wrong otherwise.
        An unfinished stub (``NotImplementedError``, ``None`` or ``...``) is reported as such.

    Raises
    ------
    ValueError
        For an unknown exercise id.
    """
    _load(exercise_id)
    if exercise_id not in _REGISTRY:
        known = ", ".join(exercise_ids(exercise_id[:4])) or "none in that chapter"
        raise ValueError(f"exercise_id {exercise_id!r} is unknown; known ids: {known}")
    if answer is None or answer is Ellipsis:
        return Feedback(exercise_id, False, "no answer yet: replace the stub with your solution.")
    try:
        ok, message = _REGISTRY[exercise_id](answer)
    except NotImplementedError:
        return Feedback(exercise_id, False, "your function still raises NotImplementedError: write its body.")
    return Feedback(exercise_id, bool(ok), message)
