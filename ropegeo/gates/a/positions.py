"""Position-id defects under Gate A: the implementation compared with *itself* (never with a
reference, so a wrong frequency cannot pass for a wrong position): positions ignored, quantised,
wrapped (``P mod N``), clamped, rounded to a float format, refused or NaN. Internal.
"""

from __future__ import annotations

import numpy as np

from ropegeo.gates.a.call import Bad, Refused
from ropegeo.gates.a.read import fmt_positions, int_overflow_name, probe_positions, relative_rows, table_sizes, tried

__all__ = ["find_position_defect", "SMALL_PROBES"]

#: Probes below the first common table size, where an 8-bit overflow already shows.
SMALL_PROBES = (129, 300, 419, 1001)
_FP16_MAX = 65_504


def _one(fn, x, p, role):
    """f(x, p) for one position; ("ok", y), ("refused", exc) or ("nan", message)."""
    try:
        return "ok", fn(x[None], np.array([p]), role=role)[0]
    except Refused as exc:
        return "refused", exc.original
    except Bad as exc:
        return "nan", str(exc)


def _first_bad(fn, x, lo: int, hi: int, role, same=None) -> int:
    """Smallest p in (lo, hi] where the call is not ok (or, with ``same``, where f(x, p) matches it)."""
    def bad(p):
        status, y = _one(fn, x, p, role)
        if same is None:
            return status != "ok"
        return status == "ok" and relative_rows(y, same[0], x)[()] <= same[1]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bad(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _ignored(fn, x, role, tol, max_position):
    a = np.array([37, 101, 419, 1001, 5, 300])
    b = np.array([612, 7, 203, 77, 999, 11])
    if max_position <= 1001:  # a short context: stay inside it
        a, b = a % (max_position - 1) + 1, (b + 3) % (max_position - 1) + 1
    X = np.tile(x, (a.size, 1))
    try:
        ya, yb = fn(X, a, role=role), fn(X, b, role=role)
    except (Refused, Bad):
        return None
    if np.max(relative_rows(ya, yb, X)) > tol:
        return _contiguous(fn, X, a, ya, role, tol)
    moved = np.max(relative_rows(ya, X, X)) > tol
    if moved and np.max(relative_rows(ya[1:], ya[:1], X[1:])) > tol:
        # the two causes look alike from outside: rows rotated by their slot index, or by positions
        # cached from an earlier call of the same shape
        how = ("rows are rotated, but not by the ids passed in: by their slot index in the array (0, 1, 2, ...) "
               "or by positions cached from an earlier call")
    else:
        how = "the output does not depend on the positions passed in"
    return {"kind": "ignored", "boundary": 0,
            "text": f"position-id defect: positions are ignored: {how} (positions {fmt_positions(a)} and "
                    f"{fmt_positions(b)} give the same output)"}


def _quantised(fn, x, role, tol, max_position):
    """Position ids divided by k (``p // k``): runs of k consecutive positions share one output."""
    n = min(129, max_position)
    X = np.tile(x, (n, 1))
    y = tried(fn, X, np.arange(n), role=role)
    if y is None:
        return None
    same = relative_rows(y[1:], y[:-1], X[1:]) <= tol
    changes = np.flatnonzero(~same) + 1  # positions where the output moves on
    if same.sum() < n // 2 or changes.size < 4:
        return None
    steps = np.unique(np.diff(changes))
    if steps.size != 1 or steps[0] < 2:
        return None
    k = int(steps[0])
    return {"kind": "quantised", "boundary": 1, "defect": "position-id",
            "text": f"position-id defect: position ids are quantised to multiples of {k} (as p // {k}): every run of "
                    f"{k} consecutive positions is rotated alike (positions {max(changes[0] - k, 0)}..{changes[0] - 1} give "
                    "the same output), so neighbouring tokens cannot be told apart"}


def _contiguous(fn, X, a, ya, role, tol):
    """A start-position implementation: row i rotated at positions[0] + i whatever the ids say."""
    yc = tried(fn, X, a[0] + np.arange(a.size), role=role)
    if yc is None or np.max(relative_rows(ya, yc, X)) > tol:
        return None
    return {"kind": "contiguous", "boundary": 0,
            "text": f"position-id defect: positions are read as one contiguous run from the first id (row i is "
                    f"rotated at positions[0] + i; ids {', '.join(f'{p:,}' for p in a[:3])}, ... are treated as {a[0]}, {a[0] + 1}, "
                    f"{a[0] + 2}, ...): every gap in the ids, as left padding, packing or a KV cache produce, is lost"}


def _wrapped(fn, x, ys: dict, sizes, role, tol):
    """Smallest table size N with f(x, P) == f(x, P mod N) for every probe P >= N."""
    for n in sizes:
        big = [p for p in ys if p >= n]
        if len(big) < 2:
            continue
        qs = np.array([p % n for p in big])
        yq = tried(fn, np.tile(x, (qs.size, 1)), qs, role=role)
        if yq is not None and np.all(relative_rows(np.array([ys[p] for p in big]), yq, np.tile(x, (qs.size, 1))) <= tol):
            return n
    return None


#: float formats position ids are sometimes held in: significand bits, first integer not exact, largest finite
_FLOAT_POSITIONS = (("bfloat16", 8, 257, 3.3e38), ("float16", 11, 2049, _FP16_MAX))


def _round_bits(p: int, bits: int) -> int:
    """Integer ``p`` rounded (half to even) to ``bits`` significant bits, as a float format stores it."""
    e = max(int(p).bit_length() - bits, 0)
    if e == 0:
        return int(p)
    q, r = divmod(int(p), 1 << e)
    if r > (1 << (e - 1)) or (r == (1 << (e - 1)) and q % 2):
        q += 1
    return q << e


def _rounded(fn, x, ys: dict, role, tol, max_position):
    """The float format whose rounding of the position ids explains every probe, with the probes:
    P rotated as ``round(P)`` (within 1% of the way to the format's other neighbour), and rotations at
    exact values composing (so angles formed in that format are not taken for it); every position
    called stays below ``max_position``.
    """
    for name, bits, first, largest in _FLOAT_POSITIONS:
        if 3 * (first - 1) >= max_position:
            continue
        big, r, other = [], [], []
        for p in ys:
            q = _round_bits(p, bits)
            if not first <= p < largest or q == p:
                continue
            s = 1 << max(int(q).bit_length() - bits, 0)  # the format's spacing at round(P)
            o = q + s if p > q else q - s  # the value on P's other side
            if max(q, o) < max_position:
                big.append(p)
                r.append(q)
                other.append(o)
        if len(big) < 2:
            continue
        r, other = np.array(r), np.array(other)
        X = np.tile(x, (len(big), 1))
        y = np.array([ys[p] for p in big])
        try:
            yr, yo = fn(X, r, role=role), fn(X, other, role=role)
            a = first - 1  # 256 or 2,048: a, 2a and 3a are exact in the format
            ya = fn(fn(x[None], np.array([a]), role=role), np.array([2 * a]), role=role)
            y3 = fn(x[None], np.array([3 * a]), role=role)
        except (Refused, Bad):
            continue
        near, far = relative_rows(y, yr, X), relative_rows(yo, yr, X)
        if (np.all(near <= 1e-2 * far) and np.sum(far > tol) >= 2
                and relative_rows(ya, y3, x[None])[0] <= max(2 * tol, 1e-3)):
            return name, first, big, r, largest
    return None


def find_position_defect(fn, x, max_position: int, *, role=None, tol: float, extra_sizes=()) -> dict | None:
    """The first position-id defect ``fn`` shows on ``x`` below ``max_position`` (outputs within
    ``tol`` of |x| are the same rotation), or ``None``: a dict of ``kind``, ``boundary`` (first position
    affected), ``text``, ``defect`` and, for refusals and NaN, ``first`` (first probe affected).
    """
    found = _ignored(fn, x, role, tol, max_position)
    if found:
        found["defect"] = "position-id"
        return found
    found = _quantised(fn, x, role, tol, max_position)
    if found:
        return found
    probes = [p for p in SMALL_PROBES if p < max_position] + probe_positions(max_position)
    ys, first_fail = {}, None
    for p in probes:
        status, y = _one(fn, x, p, role)
        if status == "ok":
            ys[p] = y
        elif first_fail is None:
            first_fail = (p, status, y)
    # a clamp first: past a clamped table every probe, and every probe modulo any size past it, reads
    # the last row, which a wrap test would take for a table wrapped at that size
    ok = sorted(ys)
    if len(ok) >= 2 and relative_rows(ys[ok[-1]], ys[ok[-2]], x)[()] <= tol:
        m = _first_bad(fn, x, 0, ok[-1], role, same=(ys[ok[-1]], tol))
        return {"kind": "clamped", "boundary": m + 1, "defect": "position-id",
                "text": f"position-id defect: every position from {m:,} on is rotated as {m:,} (probes "
                        f"{fmt_positions([p for p in ok if p >= m])} give the same output): a cos/sin table of "
                        f"{m + 1:,} rows indexed with a clamp, so all distant tokens sit at one position"}
    sizes = table_sizes(max_position, extra_sizes)
    n = _wrapped(fn, x, ys, sizes, role, tol)
    if n is not None:
        kind = int_overflow_name(n)
        why = (f"positions are stored in {kind}, which wraps every {n:,}, or a {n:,}-row cos/sin table wraps"
               if kind else f"a cos/sin table of {n:,} rows is indexed modulo its size")
        big = [p for p in ys if p >= n]
        return {"kind": "wrapped", "boundary": n, "defect": "position-id",
                "text": f"position-id defect: position P is rotated exactly as P mod {n:,} (probes "
                        f"{fmt_positions(big)}): {why}; every query-key pair that straddles a multiple of "
                        f"{n:,} gets a displacement off by {n:,}"}
    rounded = _rounded(fn, x, ys, role, tol, max_position)
    if rounded is not None:
        name, first, big, r, largest = rounded
        shown = ", ".join(f"{p:,} as {q:,}" for p, q in list(zip(big, r))[:3])
        return {"kind": "rounded", "boundary": first, "defect": "position-id",
                "text": f"position-id defect: position ids are rounded to {name} before the angles are formed: "
                        f"from {first:,} on, position P is rotated exactly as the nearest {name} value ({shown}, "
                        f"...), so distant tokens share positions and displacements snap to multiples of the "
                        f"format's spacing (ids built or cast in the data's dtype, e.g. arange(seq, dtype=x.dtype)); "
                        "keep position ids as integers and form the angles in float32"
                        + (f" (positions past {largest:,} overflow to infinity)" if first_fail and largest < 1e6 else "")}
    if first_fail is None:
        return None
    p, status, what = first_fail
    lo = max([q for q in ok if q < p], default=0)
    n = _first_bad(fn, x, lo, p, role)
    fp16 = abs(n - _FP16_MAX) <= 32
    if status == "refused":
        why = ("float16 cannot hold positions past 65,504: positions or angles are formed in float16" if fp16 else
               "a cos/sin table shorter than the context, or a format that overflows")
        return {"kind": "refused", "boundary": n, "first": p, "defect": "precision" if fp16 else "position-id",
                "text": f"{'precision' if fp16 else 'position-id'} defect: the implementation refuses positions "
                        f"from {n:,} on ({type(what).__name__}: {what}), inside the declared context of "
                        f"{max_position:,}: it cannot serve that context ({why}); declare --max-position {n:,} if "
                        "that is the real limit"}
    return {"kind": "nan", "boundary": n, "first": p, "defect": "precision" if fp16 else "position-id",
            "text": (f"precision defect: the implementation returns NaN or infinite values from position {n:,} on: "
                     f"positions or angles are formed in float16, whose largest finite value is {_FP16_MAX:,}"
                     if fp16 else
                     f"position-id defect: the implementation returns NaN or infinite values from position {n:,} on, "
                     f"inside the declared context of {max_position:,}: a cos/sin table or a position format that "
                     f"does not reach that far; declare --max-position {n:,} if that is the real limit")}
