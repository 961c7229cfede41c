"""Reading an implementation under Gate A: its matrices, layout, angles and position map (internal
but for :func:`infer_layout`)."""

from __future__ import annotations

import numpy as np

from ropegeo import _validate as v
from ropegeo.gates.a.call import Bad, Refused

__all__ = ["infer_layout", "matrices", "angles", "wrap", "wrap_far", "refine_theta", "rotate_by_pairs",
           "layout_name", "span", "table_sizes", "tried"]


def wrap(a):
    """Angles wrapped to [-pi, pi)."""
    return (np.asarray(a) + np.pi) % (2 * np.pi) - np.pi


def wrap_far(x):
    """Wrap only the angles beyond +-pi, so that small differences keep their exact value."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(np.abs(x) > np.pi, wrap(x), x)


def matrices(impl, head_dim: int, positions, role=None) -> np.ndarray:
    """R(p) for each p, shape (len(positions), d, d), with f(x, p) = R(p) @ x."""
    pos = np.asarray(positions, dtype=np.int64)
    eye = np.tile(np.eye(head_dim), (pos.size, 1))
    out = impl(eye, np.repeat(pos, head_dim), role=role)
    return out.reshape(pos.size, head_dim, head_dim).transpose(0, 2, 1)


def infer_layout(mats: np.ndarray, tol: float = 1e-6) -> dict:
    """Which coordinates rotate together, read off matrices ``R(p)`` of shape ``(k, d, d)`` (entries
    below ``tol`` are zero): ``pairs``, ``passthrough``, ``odd`` (neither), ``pairing``
    (``"interleaved"``, ``"half"``, ``"both"`` for one pair, ``"other"``), ``rotary_dim``, ``offset``.

    Examples
    --------
    >>> from ropegeo.rotation import rotation_matrix
    >>> infer_layout(np.stack([rotation_matrix(p, 8, pairing="half") for p in (1, 7)]))["pairing"]
    'half'
    """
    mats = v.finite_array("mats", mats)
    if mats.ndim != 3 or mats.shape[0] == 0 or mats.shape[1] != mats.shape[2] or mats.shape[1] == 0:
        raise ValueError(f"mats must be a non-empty stack of square matrices, shape (n, d, d), got {mats.shape}")
    tol = v.real("tol", tol, greater_than=0.0)
    d = mats.shape[-1]
    off = np.abs(mats).max(axis=0)
    off[np.arange(d), np.arange(d)] = 0.0
    coupled = (off > tol) | (off.T > tol)
    pairs, lone, odd = [], [], []
    for i in range(d):
        partners = np.flatnonzero(coupled[i])
        if partners.size == 0:
            lone.append(i)
        elif partners.size == 1 and np.flatnonzero(coupled[partners[0]]).tolist() == [i]:
            if i < partners[0]:
                pairs.append([i, int(partners[0])])
        else:
            odd.append(i)
    # a coordinate left alone passes through: unchanged, or scaled exactly as the pairs are (an
    # attention factor on the whole head is the norm check's finding, not a layout defect)
    gain = 1.0
    if pairs:
        a, b = np.array(pairs).T
        gain = float(np.median(np.sqrt(np.abs(mats[:, a, a] * mats[:, b, b] - mats[:, a, b] * mats[:, b, a]))))
    passthrough = []
    for i in lone:
        ok = any(np.all(np.abs(mats[:, i, i] - g) < max(tol, 1e-2) * g) for g in (1.0, gain) if g > 0)
        (passthrough if ok else odd).append(i)
    odd.sort()
    rot = sorted(c for p in pairs for c in p)
    r = len(rot)
    pairing = "other"
    offset = rot[0] if rot else 0
    if r and rot == list(range(offset, offset + r)):
        rel = [(a - offset, b - offset) for a, b in pairs]
        if all(b == a + 1 and a % 2 == 0 for a, b in rel):
            pairing = "interleaved"
        elif all(b == a + r // 2 for a, b in rel):
            pairing = "half"
    if r == 2 and pairing != "other":
        pairing = "both"  # one pair of neighbours: interleaved and half-split coincide
    return {"pairs": pairs, "passthrough": passthrough, "odd": odd, "pairing": pairing,
            "rotary_dim": r, "offset": int(offset)}


def angles(mats: np.ndarray, pairs) -> np.ndarray:
    """Angle of each pair at each position, shape (k, pairs): atan2(R[b, a], R[a, a])."""
    a = np.array([p[0] for p in pairs], dtype=int)
    b = np.array([p[1] for p in pairs], dtype=int)
    return np.arctan2(mats[:, b, a], mats[:, a, a])


def refine_theta(ang: np.ndarray, positions) -> np.ndarray:
    """Per-pair step (rad per position) from angles at increasing positions (the first two
    consecutive), refined where the prediction is within 1 rad; immune to an origin offset."""
    pos = np.asarray(positions, dtype=float)
    est = wrap(ang[1] - ang[0]) / (pos[1] - pos[0])
    for j in range(2, len(pos)):
        span_ = pos[j] - pos[0]
        diff = ang[j] - ang[0]
        turns = np.round((est * span_ - diff) / (2 * np.pi))
        new = (diff + 2 * np.pi * turns) / span_
        ok = np.abs(wrap(diff - est * span_)) < 1.0
        est = np.where(ok, new, est)
    return est


def rotate_by_pairs(x, positions, pairs, theta) -> np.ndarray:
    """Rotate pair ``(a, b)`` of each row of x by ``position * theta``; other coordinates pass."""
    x = np.asarray(x, dtype=np.float64)
    out = x.copy()
    if not pairs:
        return out
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    ang = np.asarray(positions, dtype=np.float64)[..., None] * np.asarray(theta)[None, :]
    c, s = np.cos(ang), np.sin(ang)
    out[..., a] = x[..., a] * c - x[..., b] * s
    out[..., b] = x[..., a] * s + x[..., b] * c
    return out


def layout_name(p: str) -> str:
    return {"interleaved": "interleaved", "half": "half-split", "both": "single"}.get(p, "irregular")


def span(idx) -> str:
    idx = list(idx)
    if not idx:
        return "none"
    if idx == list(range(idx[0], idx[0] + len(idx))) and len(idx) > 2:
        return f"{idx[0]}..{idx[-1]}"
    return ", ".join(map(str, idx[:8])) + (", ..." if len(idx) > 8 else "")


def table_sizes(max_position: int, extra=()) -> list[int]:
    """Common cos/sin table sizes and integer ranges below ``max_position`` (and ``extra``), ascending."""
    sizes = set(int(e) for e in extra if e)
    k = 128
    while k < max_position:
        sizes.update({k, 3 * k // 2})
        k *= 2
    m = 1000
    while m < max_position:
        sizes.add(m)
        m *= 2
    for e in range(2, 7):
        for f in (1, 2, 5):
            sizes.add(f * 10**e)
    return sorted(s for s in sizes if 100 <= s < max_position)


def probe_positions(max_position: int) -> list[int]:
    """Positions in ``[1000, max_position)`` just past common table sizes and at odd fractions."""
    out = set()
    for s in table_sizes(max_position):
        for o in (613, s // 2 + 37):
            if s + o < max_position:
                out.add(s + o)
    for frac in (0.0371, 0.113, 0.237, 0.419, 0.583, 0.771, 0.937):
        out.add(int(frac * max_position) | 1)
    out.add(max_position - 1 - (max_position % 7 == 0))
    good = sorted(p for p in out if 1000 < p < max_position and p & (p - 1) != 0 and p % 100 != 0)
    if len(good) > 24:  # keep the spread, drop the crowd
        idx = np.unique(np.round(np.linspace(0, len(good) - 1, 24)).astype(int))
        good = [good[i] for i in idx]
    return good


def int_overflow_name(n: int) -> str | None:
    """The integer type whose range wraps every ``n`` positions, if any."""
    return {256: "an 8-bit integer (int8 or uint8)", 65_536: "a 16-bit integer (int16 or uint16)",
            2**32: "a 32-bit integer"}.get(int(n))


def fmt_positions(ps) -> str:
    ps = sorted(set(int(p) for p in ps))
    return ", ".join(f"{p:,}" for p in ps[:4]) + (", ..." if len(ps) > 4 else "")


def relative_rows(a, b, ref) -> np.ndarray:
    """Per-row |a - b| / |ref|."""
    return np.linalg.norm(a - b, axis=-1) / np.maximum(np.linalg.norm(ref, axis=-1), 1e-300)


def tried(call, *args, **kwargs):
    """``call(*args, **kwargs)``, or ``None`` when the implementation refuses it or breaks its contract."""
    try:
        return call(*args, **kwargs)
    except (Refused, Bad):
        return None
