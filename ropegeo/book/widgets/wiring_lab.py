"""The wiring lab (chapter 5): pairings, position ids and phase precision, judged as Gate A would.

The query of the last of 32 tokens attends to its document. The lab chooses the declared pairing,
the one the query is rotated with, the position-id policy and the phase dtype, and reports the
relative-law residual (shifts of 1, 5, 17 and 4,096), the score errors against float64 at the true
positions (both relative to ``|q| |k|``, against Gate A's tolerance) and the pair layout read from
the query's rotation at position 1 (exact in every dtype).

A score of rotated vectors moves by at most ``2 |q||k|`` (:data:`CEILING`): a verdict whose
tolerance reaches it cannot fail, so it is **inconclusive** (:func:`ropegeo.gates.verdicts.status`);
the shift check is judged on the shifts whose tolerance stays below the ceiling.
"""

from __future__ import annotations

import math

import numpy as np
import traitlets

from ropegeo.book.widgets._lab import Lab, esm_source, random_vectors
from ropegeo.frequencies import frequencies
from ropegeo.gates.verdicts import Check, status
from ropegeo.models.manifest import PHASE_DTYPES, POSITION_ID_POLICIES
from ropegeo.rotation import apply_rope

__all__ = ["WiringLab", "reference", "read_partners", "document_position_ids", "positions_text", "LENGTH", "SHIFTS",
           "CEILING"]

#: Tokens in the document; the query is the last one.
LENGTH = 32
#: Shifts of Gate A's shift check that the lab applies.
SHIFTS = (1, 5, 17, 4096)
#: The largest change of a score of rotated vectors, relative to ``|q||k|``: a tolerance that reaches
#: it cannot fail.
CEILING = 2.0
_UNIT = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
_SAFETY = 16.0
_WIDTH = 64


def document_position_ids(policy: str, pad: int, cache_offset: int) -> np.ndarray:
    """The position ids the implementation gives the document's tokens under a policy."""
    ids = np.arange(LENGTH)
    if policy in ("left-padded", "packed-continuous"):
        return ids + pad
    if policy == "kv-cache":
        ids[-1] = cache_offset
    return ids


def _tol(dtype: str, d: int, pmax: float, theta_max: float) -> float:
    return _SAFETY * _UNIT[dtype] * (math.sqrt(d) + 2.0 * pmax * max(theta_max, 1e-12))


def read_partners(head_dim: int, theta, pairing: str, dtype: str) -> list:
    """For each coordinate, the one the rotation at position 1 turns it with (-1 when no partner shows).

    Reads the matrix as Gate A does: coordinate ``j`` of ``R(1) e_j``'s other nonzero entry.

    Examples
    --------
    >>> read_partners(4, [1.0, 0.01], "interleaved", "float16")
    [1, 0, 3, 2]
    """
    rows = apply_rope(np.eye(head_dim), 1.0, theta=theta, pairing=pairing, phase_dtype=dtype)
    off = rows != 0.0
    np.fill_diagonal(off, False)
    return [int(np.flatnonzero(r)[0]) if r.any() else -1 for r in off]


def positions_text(ids) -> str:
    """The start of the lab's line of position ids: the keys' range of ids and the query's.

    >>> positions_text(document_position_ids("contiguous", 0, 31))
    'position ids: keys 0..30 get 0..30, the query (token 31) gets 31'
    """
    ids = [int(x) for x in ids]
    return f"position ids: keys 0..{len(ids) - 2} get {ids[0]:,}..{ids[-2]:,}, the query (token {len(ids) - 1}) gets {ids[-1]:,}"


def reference(state: dict, q, k) -> dict:
    """ropegeo's numbers for a wiring state: ``positions``, ``reference``, ``scores``, ``score_error`` and
    ``shift_residual`` (over ``judged_shifts``, relative to ``|q||k|``), the tolerances, the verdicts
    ``shift_status``, ``scores_status``, ``layout_status`` and ``layout_mismatches``.
    """
    d, dtype = state["head_dim"], state["dtype"]
    theta = frequencies(d, state["base"])
    qv, kv = np.asarray(q[:d], dtype=float), np.asarray(k[:d], dtype=float)
    norm = np.linalg.norm(qv) * np.linalg.norm(kv)
    ids = document_position_ids(state["policy"], state["pad"], state["cache_offset"])
    keys = np.tile(kv, (LENGTH, 1))

    def scores(pq, pk, phase, qp, kp):
        rq = apply_rope(qv[None], [pq], theta=theta, pairing=qp, phase_dtype=phase)[0]
        rk = apply_rope(keys, pk, theta=theta, pairing=kp, phase_dtype=phase)
        return rk @ rq

    ref = scores(LENGTH - 1, np.arange(LENGTH), "float64", state["pairing"], state["pairing"])
    got = scores(ids[-1], ids, dtype, state["query_pairing"], state["pairing"])
    pmax = int(ids.max())
    judged = [c for c in SHIFTS if _tol(dtype, d, pmax + c, theta[0]) < CEILING]
    residual = max(float(np.max(np.abs(scores(ids[-1] + c, ids + c, dtype, state["query_pairing"], state["pairing"]) - got)))
                   for c in (judged or SHIFTS)) / norm
    score_error = float(np.max(np.abs(got - ref))) / norm
    tol_scores = _tol(dtype, d, pmax, theta[0])
    tol_shift = _tol(dtype, d, pmax + max(judged or SHIFTS[:1]), theta[0])
    shift = Check.judged("shift", residual, tol_shift, "holds", "broken", ceiling=CEILING)
    match = Check.judged("scores", score_error, tol_scores, "match", "wrong", ceiling=CEILING)
    read = read_partners(d, theta, state["query_pairing"], dtype)
    declared = read_partners(d, theta, state["pairing"], "float64")
    mismatches = sum(1 for r, e in zip(read, declared) if r != -1 and r != e)
    return {"positions": ids.tolist(), "reference": ref, "scores": got, "score_error": score_error,
            "shift_residual": residual, "judged_shifts": judged, "tolerance_scores": tol_scores,
            "tolerance_shift": tol_shift, "shift_status": status([shift]), "scores_status": status([match]),
            "layout_mismatches": mismatches, "layout_status": "fail" if mismatches else "pass"}


class WiringLab(Lab):
    """The wiring lab (controls: ``DEFAULTS``, ``BOUNDS``).

    ``pairing`` is declared (keys), ``query_pairing`` rotates the query; ``pad``: left padding or the
    earlier packed document's length; ``cache_offset``: the decoded token's position under
    ``"kv-cache"`` (correct: 31); ``q``, ``k``: 64 entries, the first ``head_dim`` used.
    """

    _esm = esm_source("lab_wiring.js")
    VECTOR_WIDTH = _WIDTH
    BOUNDS = {"head_dim": (4, 64), "base": (10.0, 1e7), "pairing": ("interleaved", "half"),
              "query_pairing": ("interleaved", "half"), "policy": POSITION_ID_POLICIES, "pad": (0, 4096),
              "cache_offset": (0, 8192), "dtype": PHASE_DTYPES}

    DEFAULTS = {"head_dim": 16, "base": 10_000.0, "pairing": "interleaved", "query_pairing": "interleaved",
                "policy": "contiguous", "pad": 0, "cache_offset": LENGTH - 1, "dtype": "float32"}
    q = traitlets.List(traitlets.Float(), default_value=random_vectors(_WIDTH, 5)[0]).tag(sync=True)
    k = traitlets.List(traitlets.Float(), default_value=random_vectors(_WIDTH, 5)[1]).tag(sync=True)

