"""One record for a check of any gate (:class:`Check`: what was measured, against which threshold, or
why not: never a pass), and the verdict a list of them gives."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ropegeo import _json

__all__ = ["Check", "Report", "verdict", "status", "DEFECT_CLASSES", "STATUSES", "EXIT_CODES"]

#: The three outcomes of a gate or of the audit; "inconclusive" is never a pass.
STATUSES = ("pass", "fail", "inconclusive")

#: Exit status of the command line for each outcome (2 is bad input, as everywhere).
EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 3}

#: The defect classes a failed check may name (``None`` for a symptom without a class).
DEFECT_CLASSES = ("position-id", "precision", "frequency", "layout", "convention", "magnitude", "roles",
                  "values", "decoding", "algebra", "contract")


@dataclass(frozen=True)
class Check:
    """One check of a gate: ``passed`` is ``None`` when not measured (the ``diagnosis`` says why);
    ``protocol`` is what it needs from the object; ``defect`` one of :data:`DEFECT_CLASSES` or ``None``."""

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
        """Pass when ``violation <= tolerance``; a tolerance reaching ``ceiling`` (the largest
        violation the check can see) cannot fail, so the check is inconclusive (``passed=None``).

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
        """A check that ran but could not fail (see :meth:`judged`)."""
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


class Report:
    """What every gate's report shares: ``str`` is its ``table()``, :meth:`to_json` its ``to_dict()``."""

    def to_json(self, **kwargs) -> str:
        """``to_dict()`` as JSON (non-finite numbers as null; keyword arguments go to ``json.dumps``)."""
        return _json.dumps(self.to_dict(), **kwargs)

    def __str__(self) -> str:
        return self.table()


def status(checks, core=None) -> str:
    """``"fail"`` when any check failed; ``"inconclusive"`` when a ``core`` check (default: every
    one) was not measured, any check could not fail, or there are none; else ``"pass"``.

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
    """One line for a list of checks: the failed ones, else those not measured.

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
