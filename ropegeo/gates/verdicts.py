"""One record for a check of any gate, and the verdict a list of them gives.

Gate A (:mod:`ropegeo.gates.a.gate`) builds its report from :class:`Check` records; Gates B and C
(:mod:`ropegeo.gates.procedure`, :mod:`ropegeo.toy`) can adopt the same record, so that every gate
says in the same words what was measured, against which threshold, and what was *not* measured.

A check has three outcomes: passed (``True``), failed (``False``) or not measured (``None``). A
check that was not measured never counts as passed: :func:`verdict` lists it by name.

Adopting it in another gate: build one ``Check`` per question the gate asks, with the measured
number as ``violation`` and the threshold it is judged against as ``tolerance`` (Gate B: the
separation margin's shortfall against ``min_margin``; Gate C: each trained quantity against its
bound), ``Check.judged`` when the verdict is ``violation <= tolerance``, ``Check.skipped`` with the
reason when a check cannot run, and :func:`verdict` for the one-line summary; ``to_dict`` gives the
JSON form every report shares.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

__all__ = ["Check", "verdict", "status", "DEFECT_CLASSES", "STATUSES", "EXIT_CODES"]

#: The three outcomes of a gate (or of the whole audit): every core check measured and passed,
#: one failed, or no verdict possible (a core check not measured, or a tolerance that reaches the
#: largest error the check can see). "inconclusive" is never a pass.
STATUSES = ("pass", "fail", "inconclusive")

#: Exit status of the command line for each outcome (2 is bad input, as everywhere).
EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 3}

#: The defect classes a failed check may name (``None`` for a symptom without a class).
DEFECT_CLASSES = ("position-id", "precision", "frequency", "layout", "convention", "magnitude", "roles",
                  "values", "decoding", "algebra", "contract")


@dataclass(frozen=True)
class Check:
    """One check of a gate.

    Attributes
    ----------
    name : str
        Short id of the check (e.g. ``"shift"``).
    passed : bool or None
        ``None`` when the check was not measured (skipped: a protocol the object lacks, a probe it
        refused, a quantity too small to see); the diagnosis says why.
    violation : float
        Size of the worst violation, in the unit the check states; ``nan`` when not measured.
    tolerance : float
        The largest violation accepted (``nan`` or 0 when not measured).
    diagnosis : str
        Plain words: what is wrong, what was verified, or why nothing was measured.
    protocol : str
        What the check needs from the object under test (Gate A: ``"callable"``, ``"role"``,
        ``"decoder"``; other gates: their own word).
    defect : str or None
        For a failed check, the defect class it names (one of :data:`DEFECT_CLASSES`), or
        ``None`` when it only reports a symptom.
    """

    name: str
    passed: bool | None
    violation: float
    tolerance: float
    diagnosis: str
    protocol: str = ""
    defect: str | None = None

    @classmethod
    def skipped(cls, name: str, reason: str, protocol: str = "") -> "Check":
        """A check that was not measured, with the reason."""
        return cls(name, None, float("nan"), float("nan"), reason, protocol)

    @classmethod
    def judged(cls, name: str, violation: float, tolerance: float, ok_text: str, fail_text: str,
               protocol: str = "", defect: str | None = None, ceiling: float | None = None) -> "Check":
        """Pass when ``violation <= tolerance``; the diagnosis is the matching text.

        ``ceiling`` is the largest violation the check can see (e.g. 2 for the distance between
        two unit-norm vectors' cosines, pi for a wrapped phase). When the tolerance reaches it the
        check cannot fail, so it is *inconclusive*: not measured (``passed=None``), with the reason.

        Examples
        --------
        >>> Check.judged("law", 0.5, 3.0, "ok", "bad", ceiling=2.0).passed is None
        True
        >>> Check.judged("law", 0.5, 1.0, "ok", "bad", ceiling=2.0).passed
        True
        """
        if ceiling is not None and not (tolerance < ceiling):
            return cls(name, None, float(violation), float(tolerance),
                       f"inconclusive: the tolerance {tolerance:.3g} reaches the largest error this check "
                       f"can see ({ceiling:.3g}), so it could not fail", protocol)
        ok = bool(violation <= tolerance)
        return cls(name, ok, float(violation), float(tolerance), ok_text if ok else fail_text, protocol,
                   None if ok else defect)

    @property
    def measured(self) -> bool:
        return self.passed is not None

    @property
    def inconclusive(self) -> bool:
        """True for a check that ran but could not fail (its tolerance reached its ceiling, see
        :meth:`judged`): unlike a check that was skipped, it always makes the verdict inconclusive."""
        return self.passed is None and self.diagnosis.startswith("inconclusive")

    def to_dict(self) -> dict:
        """A JSON-safe dict (non-finite numbers become ``None``)."""
        d = asdict(self)
        for key in ("violation", "tolerance"):
            val = d[key]
            d[key] = float(val) if val is not None and math.isfinite(val) else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Check":
        """Invert :meth:`to_dict`."""
        nan = float("nan")
        return cls(d["name"], d["passed"], nan if d["violation"] is None else d["violation"],
                   nan if d["tolerance"] is None else d["tolerance"], d["diagnosis"], d.get("protocol", ""),
                   d.get("defect"))


def status(checks, core=None) -> str:
    """The outcome of a list of checks: ``"fail"``, ``"inconclusive"`` or ``"pass"``.

    ``"fail"`` when any check failed; ``"inconclusive"`` when one of the ``core`` checks (names;
    default: every check) was not measured, or any check ran but could not fail (its tolerance
    reached its ceiling: :attr:`Check.inconclusive`); ``"pass"`` otherwise. A gate that could
    measure none of what it is for never passes.

    Examples
    --------
    >>> status([Check("a", True, 0.0, 1.0, "ok"), Check.skipped("b", "needs a decoder")])
    'inconclusive'
    >>> status([Check("a", True, 0.0, 1.0, "ok"), Check.skipped("b", "needs a decoder")], core=["a"])
    'pass'
    >>> status([Check("a", True, 0.0, 1.0, "ok"), Check.judged("b", 0.1, 5.0, "ok", "bad", ceiling=2.0)], core=["a"])
    'inconclusive'
    """
    checks = list(checks)
    if any(c.passed is False for c in checks):
        return "fail"
    names = None if core is None else set(core)
    if any(c.passed is None and (names is None or c.name in names or c.inconclusive) for c in checks):
        return "inconclusive"
    if not checks:
        return "inconclusive"
    return "pass"


def verdict(checks) -> str:
    """One line for a list of checks that all passed or were not measured.

    ``"every check passed"`` only when every check was measured; otherwise the line names the
    checks that were not.

    Examples
    --------
    >>> verdict([Check("a", True, 0.0, 1.0, "ok"), Check.skipped("b", "needs a decoder")])
    'every measured check passed; not measured: b'
    """
    failed = [c.name for c in checks if c.passed is False]
    if failed:
        return f"failed: {', '.join(failed)}"
    unmeasured = [c.name for c in checks if c.passed is None]
    if unmeasured:
        return f"every measured check passed; not measured: {', '.join(unmeasured)}"
    return "every check passed"
