"""The algebraic and protocol checks of Gate A: norm, shift, composition, inverse, roles, values,
decoding. Each is a small function ``check(ctx, rng) -> Check``. Internal to :mod:`ropegeo.gates.a.gate`.
"""

from __future__ import annotations

import numpy as np

from ropegeo.gates.a.call import UNIT, Bad, Refused
from ropegeo.gates.a.checks import CEILING, ROLE_POSITIONS, departing_side
from ropegeo.gates.a.read import angles, infer_layout, layout_name, matrices, table_sizes, wrap
from ropegeo.gates.verdicts import Check

_BATCH = 16
_SMALL_SHIFTS = (1, 5, 17)
_LARGE_SHIFTS = (4_099, 65_539, 1_000_003)
_INPUTS = ("float64", "float32")


def _score_rel(qa, ka, qb, kb, q, k):
    """max |<qa,ka> - <qb,kb>| / (|q| |k|) over the batch."""
    sa = np.sum(qa * ka, axis=-1)
    sb = np.sum(qb * kb, axis=-1)
    return float(np.max(np.abs(sa - sb) / (np.linalg.norm(q, axis=-1) * np.linalg.norm(k, axis=-1))))


def _vec_rel(a, b, ref):
    return float(np.max(np.linalg.norm(a - b, axis=-1) / np.linalg.norm(ref, axis=-1)))


def check_norm(ctx, rng) -> Check:
    worst, tol_worst, ratio, spread, far = 0.0, 1.0, [], [], 1.0
    hi = min(4096, ctx.max_position)
    for dd in ctx.dims:
        for dtype in _INPUTS:
            x = rng.normal(size=(_BATCH, dd)).astype(dtype)
            p = rng.integers(0, hi, size=_BATCH)
            for role in ({ctx.qrole, ctx.krole} if ctx.fn.role else {None}):
                y = ctx.fn(x, p, role=role)
                r = np.linalg.norm(y, axis=-1) / np.linalg.norm(x.astype(np.float64), axis=-1)
                ratio.append(float(np.median(r)))
                viol = float(np.max(np.abs(r - 1.0)))
                tol = 2.0 * ctx.tol_vec(0.0, UNIT[dtype])
                spread.append((r, tol))
                if viol / tol > worst / tol_worst:
                    worst, tol_worst, far = viol, tol, float(r[np.argmax(np.abs(r - 1.0))])
    med = float(np.median(ratio))
    # one scale within the coarsest input's rounding (the median may come from a float32 probe)
    loosest = max(tol for _, tol in spread)
    uniform = worst > tol_worst and all(np.max(np.abs(r - med)) <= loosest for r, _ in spread)
    if uniform:  # one scale for every vector: a scaled rotation, whose angles the readings still see
        ctx.inferred["norm_scale"] = med
    factor, soft = ctx.fn.factor, ctx.softmax_factor
    fix = (f"an attention factor of {_near_one(med * factor)} folded into cos and sin (declare it: --attention-factor, or "
           "--config for a YaRN/LongRoPE model)" if factor == 1.0 else
           f"the declared attention factor is {factor:.4g}, the measured one {med * factor:.4g}")
    if factor != 1.0 and abs(med * factor - 1.0) < 0.25 * abs(factor - 1.0):
        fix = (f"the declared attention factor {factor:.4g} is missing: cos and sin keep unit length, while the "
               f"reference multiplies them by it (as transformers does for YaRN and LongRoPE), so every logit is "
               f"{factor ** 2:.4g} times too small. If this model's attention multiplies its logits by {factor ** 2:.4g} "
               "instead, declare it there (attention_factor_in='softmax', --attention-factor-in softmax)")
    elif soft is not None and soft != 1.0 and abs(med / soft - 1.0) < 0.25 * abs(soft - 1.0):
        fix = (f"the rotation multiplies by {med:.4g}, the attention factor declared in the softmax: applied in both "
               f"places it counts twice (logits {soft ** 4:.4g} times, not {soft ** 2:.4g})")
    return Check.judged("norm", worst, tol_worst, "every rotated vector keeps its norm (after the declared attention "
                        "factor)" if factor != 1.0 else "every rotated vector keeps its norm",
                        f"magnitude defect: rotated vectors change length (norm ratio up to {_near_one(1 + worst)}, "
                        f"median {_near_one(med)}): the map is not a rotation; {fix}, or a scaled cos/sin table"
                        if not uniform else
                        f"magnitude defect: rotated vectors change length (norm ratio {'up' if far > 1 else 'down'} to "
                        f"{_near_one(far)}, median {_near_one(med)}), every vector alike: a rotation times a constant; "
                        f"{fix}, or a scaled cos/sin table", "callable",
                        "magnitude", ceiling=1.0)  # a tolerance of 1 would accept a map that returns zeros


def _near_one(r: float) -> str:
    """A ratio with enough digits that one close to 1 does not print as 1."""
    digits = 4 if abs(r - 1.0) >= 1e-3 else max(4, 2 - int(np.floor(np.log10(max(abs(r - 1.0), 1e-15)))))
    return f"{r:.{digits}g}"


def _shifts(ctx, rng):
    m = ctx.max_position
    big = [c for c in _LARGE_SHIFTS if c + 64 < m]
    if m > 2_000:
        big.append(int(rng.integers(1_000, m - 64)))
    return _SMALL_SHIFTS + tuple(big)


def check_shift(ctx, rng) -> Check:
    worst, tol_worst, where, seen = 0.0, 1.0, None, 0
    shifts = _shifts(ctx, rng)
    unjudged = [c for c in shifts if ctx.tol_score(64 + c, UNIT["float64"]) >= CEILING]
    for dd in ctx.dims:
        q = rng.normal(size=(_BATCH, dd))
        k = rng.normal(size=(_BATCH, dd))
        m = rng.integers(0, 64, size=_BATCH)
        n = rng.integers(0, 64, size=_BATCH)
        for dtype in _INPUTS:
            qd, kd = q.astype(dtype), k.astype(dtype)
            q0, k0 = ctx.fn(qd, m, role=ctx.qrole), ctx.fn(kd, n, role=ctx.key_role)
            for c in shifts:
                try:
                    q1, k1 = ctx.fn(qd, m + c, role=ctx.qrole), ctx.fn(kd, n + c, role=ctx.key_role)
                except (Refused, Bad) as exc:
                    ctx.notes.append(f"shift {c:,} skipped: {exc} (see context)")
                    continue
                viol = _score_rel(q0, k0, q1, k1, q, k)
                tol = ctx.tol_score(64 + c, UNIT[dtype])
                if tol >= CEILING:  # a score moves by at most 2 |q||k|: this shift cannot fail
                    continue
                seen += 1
                if where is None or viol / tol > worst / tol_worst:
                    worst, tol_worst, where = viol, tol, (c, dtype, dd)
    if not seen and unjudged:
        return Check.judged("shift", worst, ctx.tol_score(64 + min(shifts)), "", "", "callable", ceiling=CEILING)
    if not seen:
        return Check.skipped("shift", "not measured: the implementation refused every shifted probe (see context)",
                             "callable")
    c, dtype, dd = where
    judged = [s for s in shifts if s not in unjudged]
    skipped = (f" (shifts of {', '.join(f'{s:,}' for s in unjudged)} not judged: their tolerance reaches the largest "
               f"change of a score, {CEILING:g} |q||k|)" if unjudged else "")
    return Check.judged("shift", worst, tol_worst, f"query-key scores survive shifts of 1 to {max(judged):,} positions"
                        f"{skipped}",
                        f"algebra defect: shifting query and key by the same {c:,} positions changes their score by "
                        f"{worst:.2e} of |q||k| ({dtype}, head dim {dd}): the score depends on absolute position",
                        "callable", "algebra")


def check_composition(ctx, rng) -> Check:
    worst, tol_worst = 0.0, 1.0
    # positions a + b stay where the tolerance can fail (coarse angles allow any rotation further out)
    usual = max(2, min(2048, ctx.max_position // 2))
    hi = max(2, min(usual, int(ctx.judged_below(2.0, UNIT["float32"]) // 2)))
    for dd in ctx.dims:
        for dtype in _INPUTS:
            x = rng.normal(size=(_BATCH, dd)).astype(dtype)
            a = rng.integers(0, hi, size=_BATCH)
            b = rng.integers(0, hi, size=_BATCH)
            two = ctx.fn(ctx.fn(x, a, role=ctx.krole).astype(dtype), b, role=ctx.krole)
            one = ctx.fn(x, a + b, role=ctx.krole)
            viol = _vec_rel(two, one, x.astype(np.float64))
            tol = 2.0 * ctx.tol_vec(2 * hi, UNIT[dtype])
            if viol / tol > worst / tol_worst:
                worst, tol_worst = viol, tol
    narrowed = f" (a, b below {hi:,}: further out the angles' rounding allows any rotation)" if hi < usual else ""
    return Check.judged("composition", worst, tol_worst, f"rotating by a then b equals rotating by a + b{narrowed}",
                        f"algebra defect: rotating by a then by b differs from rotating by a + b by {worst:.2e} of "
                        "|x|: the rotation is not additive in position", "callable", "algebra", ceiling=CEILING)


def check_inverse(ctx, rng) -> Check:
    x = rng.normal(size=(_BATCH, ctx.d))
    a = rng.integers(1, max(2, min(4096, ctx.max_position, int(ctx.judged_below(2.0) // 2))), size=_BATCH)
    try:
        res = ctx.fn(ctx.fn(x, a, role=ctx.krole), -a, role=ctx.krole)
    except Refused as exc:
        return Check.skipped("inverse", f"not measured: the implementation refuses negative positions "
                             f"({type(exc.original).__name__}), so R(-a) cannot be formed", "callable")
    viol = _vec_rel(res, x, x)
    tol = 2.0 * ctx.tol_vec(2 * float(a.max()))
    if viol > tol:
        n = _indexed_from_end(ctx, x, a)
        if n is not None:
            return Check.skipped("inverse", f"not measured: negative positions index a table of {n:,} rows from its "
                                 f"end (position -a is rotated as {n:,} - a, as Python indexing does); position ids "
                                 "are never negative in use, so R(-a) is not formed", "callable")
    return Check.judged("inverse", viol, tol, "rotating by a then by -a gives the input back",
                        f"algebra defect: rotating by a then by -a misses the input by {viol:.2e} of |x|: negative "
                        "positions are not the inverse", "callable", "algebra", ceiling=CEILING)


def _indexed_from_end(ctx, x, a):
    """The table size n with f(x, -a) == f(x, n - a) (negative indices counted from the end), or None."""
    for n in table_sizes(max(ctx.max_position + 1, 1 << 21), (ctx.max_position,) + tuple(ctx.extra_sizes)):
        if n <= a.max():
            continue
        try:
            neg, wrapped = ctx.fn(x, -a, role=ctx.krole), ctx.fn(x, n - a, role=ctx.krole)
        except (Refused, Bad):
            continue
        if _vec_rel(neg, wrapped, x) <= 2.0 * ctx.tol_vec(0.0):
            return n
    return None


def check_roles(ctx, rng) -> Check:
    if not ctx.fn.role:
        return Check.skipped("roles", "not measured: needs the role protocol (a callable without a role keyword "
                             "rotates queries and keys alike by construction)", "role")
    mq = matrices(ctx.fn, ctx.d, ROLE_POSITIONS, role="query")
    mk = matrices(ctx.fn, ctx.d, ROLE_POSITIONS, role="key")
    viol = float(np.max(np.abs(mq - mk)))
    tol = ctx.tol_vec(max(ROLE_POSITIONS))
    if tol >= CEILING:  # entries of two rotation matrices differ by at most 2
        return Check.judged("roles", viol, tol, "", "", "role", ceiling=CEILING)
    if viol <= tol:
        return Check("roles", True, viol, tol, "queries and keys are rotated by the same operator", "role")
    dep, dq, dk = departing_side(ctx, mq, mk)
    ref = "queries" if dep == "keys" else "keys"
    md, mr = (mk, mq) if dep == "keys" else (mq, mk)
    ctx.inferred["roles_departs"] = dep
    ctx.inferred["roles_matches_declaration"] = ref if min(dq, dk) <= 0.05 else None
    return Check("roles", False, viol, tol, "roles defect: " + _roles_words(dep, ref, md, mr, tol), "role", "roles")


def _roles_words(dep: str, ref: str, md, mr, tol) -> str:
    """Name how the departing side ``dep`` (matrices ``md``) differs from the other (``mr``)."""
    still = [name for name, m in ((dep, md), (ref, mr)) if np.max(np.abs(m - m[0])) <= tol]
    if len(still) == 1:
        other = ref if still[0] == dep else dep
        return (f"{still[0]} are not rotated at all (the same output at every position), while {other} are: "
                "scores then depend on the absolute position of one side")
    ld, lr = infer_layout(md), infer_layout(mr)
    if ld["pairs"] != lr["pairs"]:
        return (f"{dep} use the {layout_name(ld['pairing'])} layout and {ref} the {layout_name(lr['pairing'])} "
                "one: the two sides of every score are paired differently")
    nd, nr = np.linalg.norm(md[0], ord=2), np.linalg.norm(mr[0], ord=2)
    if abs(nd / nr - 1.0) > 1e-3:
        return f"{dep} are multiplied by {nd:.4g} and {ref} by {nr:.4g}: a scaling applied to one side only"
    # signed step per position of each pair (positions 1 and 2), where neither side wraps
    td = wrap(angles(md, ld["pairs"])[1] - angles(md, ld["pairs"])[0])
    tr = wrap(angles(mr, lr["pairs"])[1] - angles(mr, lr["pairs"])[0])
    ok = (np.abs(tr) > 1e-6) & (np.abs(td) < 1.0) & (np.abs(tr) < 1.0)
    if not ok.any():
        return f"{dep} are rotated by a different operator from {ref}"
    ratio = td[ok] / tr[ok]
    r = float(np.median(ratio))
    if np.ptp(ratio) >= 1e-3 * max(1.0, abs(r)):
        rel = float(np.max(np.abs(ratio - 1.0)))
        if rel < 3e-2:  # the same schedule, rounded: an angle table formed more coarsely on one side
            return (f"{dep} turn at the {ref}' frequencies only up to a relative error of {rel:.1e} that differs "
                    f"from pair to pair: the angles of the {dep} are formed in a coarser format than those of "
                    f"the {ref} (rounding on one side only)")
        return f"{dep} are rotated by a different operator from {ref} (the pairs turn at other, non-uniform rates)"
    if abs(r + 1.0) < 1e-3:
        return (f"{dep} rotate the opposite way to {ref} (sin enters with the other sign on the {dep} only): a "
                "score then depends on m + n, not on n - m, so the relative law is broken (see shift)")
    one = {"keys": "key", "queries": "query"}[ref]
    return (f"{dep} rotate at {r:.4g} times the {one} frequencies: a position scaling (positions divided by "
            f"s = {1 / r:.4g}) is applied to {dep} but not to {ref}")


def check_values(ctx, rng) -> Check:
    fn = ctx.fn
    if not fn.role and not fn.decoder:
        return Check.skipped("values", "not measured: needs the role or decoder protocol (a plain callable never "
                             "sees values)", "role")
    viol, where = 0.0, ""
    x = rng.normal(size=(_BATCH, ctx.d))
    p = rng.integers(1, 4096, size=_BATCH)
    if fn.role:
        viol = _vec_rel(fn(x, p, role="value"), x, x)
        where = "values passed with role='value'"
    if fn.decoder:
        dv = _decode_values(fn, ctx.d, rng)
        if dv > viol:
            viol, where = dv, "values read back from the KV cache"
    tol = 2.0 * ctx.tol_vec(0.0)
    return Check.judged("values", viol, tol, "values pass through unrotated",
                        f"values defect: {where} differ from the inputs by {viol:.2e} of |v|: values are rotated by "
                        "position, so the message a token carries changes with where it sits (RoPE rotates queries "
                        "and keys only)", "role", "values", ceiling=CEILING)


def check_decoding(ctx, rng) -> Check:
    if not ctx.fn.decoder:
        return Check.skipped("decoding", "not measured: needs the decoder protocol (prefill / decode_step)", "decoder")
    viol, tol, msg = _decode_scores(ctx, rng)
    return Check.judged("decoding", viol, tol, msg, "decoding defect: " + msg, "decoder", "decoding", ceiling=CEILING)


_PREFILL = 12
_STEPS = 3


def _raw_decode(fn, d: int, rng, *, steps: int = _STEPS):
    """Run prefill + decode steps; returns (Q, K, V, list of (q_rot, keys, values))."""
    n_all = _PREFILL + steps
    Q, K, V = (rng.normal(size=(n_all, d)) for _ in range(3))
    fn.method("prefill", K[:_PREFILL], V[:_PREFILL])
    out = []
    for t in range(steps):
        i = _PREFILL + t
        res = fn.method("decode_step", Q[i], K[i], V[i])
        if not isinstance(res, tuple) or len(res) != 3:
            raise Bad("decode_step must return (rotated_query, cached_keys, cached_values)")
        qd = fn.unwrap(res[0], "decode_step") / fn.factor
        kc = fn.unwrap(res[1], "decode_step") / fn.factor
        vc = fn.unwrap(res[2], "decode_step")
        if qd.shape != (d,) or kc.shape != (i + 1, d) or vc.shape != (i + 1, d):
            raise Bad(f"decode_step returned shapes {qd.shape}, {kc.shape}, {vc.shape} with {i} tokens cached "
                       f"before it; expected ({d},), ({i + 1}, {d}), ({i + 1}, {d})")
        if not (np.all(np.isfinite(qd)) and np.all(np.isfinite(kc)) and np.all(np.isfinite(vc))):
            raise Bad("decode_step returned NaN or infinite values")
        out.append((qd, kc, vc))
    return Q, K, V, out


def _decode_values(fn, d: int, rng) -> float:
    _, _, V, out = _raw_decode(fn, d, rng, steps=1)
    vc = out[-1][2]
    return _vec_rel(vc, V[: vc.shape[0]], V[: vc.shape[0]])


def _query_ruler(ratio, pair, n_pairs: int) -> str:
    """Name the decoding query's ruler from its per-pair angle ratios to the declared ones: one scale of
    every angle (a position scaling), or ``(B / B')^(2k / d)`` for pair ``k`` (a base change to ``B'``).

    >>> k = np.arange(9, 32)
    >>> _query_ruler(np.full(k.size, 0.5), k, 32)[:48]
    'the decoding query is rotated with 0.5 times the'
    >>> "a base 1.25 times the declared one" in _query_ruler(1.25 ** (-k / 32), k, 32)
    True
    """
    tail = " while the cached keys keep the declared ones: "
    if np.ptp(ratio) <= 1e-3 * np.median(ratio):
        return (f"the decoding query is rotated with {np.median(ratio):.4g} times the angles of its position"
                + tail + "a scaling applied to the query but not to the cached keys")
    x, y = pair / n_pairs, np.log(np.clip(ratio, 1e-12, None))
    g = -float(x @ y / (x @ x))  # log(B' / B): the ratio of pair k is (B / B')^(k / n_pairs)
    if np.max(np.abs(y + g * x)) <= 1e-3:
        return (f"the decoding query is rotated with a base {np.exp(g):.4g} times the declared one (the "
                f"measured pairs turn at {ratio.min():.3f} to {ratio.max():.3f} times their declared rate)" + tail + "a base change applied to the "
                "query but not to the cached keys, as a dynamic rule that grows the base with the length does")
    return (f"the decoding query is rotated with {ratio.min():.4g} to {ratio.max():.4g} times the angles of its "
            "position, pair by pair" + tail + "a change of frequencies applied to the query but not to the "
            "cached keys")


def _match_position(fn, vec_raw, vec_rot, role, limit: int, tol: float = 1e-9):
    """The integer position p in [0, limit] with f(vec_raw, p) == vec_rot, or None."""
    cand = np.arange(limit + 1)
    rot = fn(np.tile(vec_raw, (cand.size, 1)), cand, role=role)
    err = np.linalg.norm(rot - vec_rot, axis=-1) / np.linalg.norm(vec_raw)
    i = int(np.argmin(err))
    return int(cand[i]) if err[i] < max(tol, 1e-9) else None


def _decode_scores(ctx, rng):
    fn, d, qrole, krole, theta_decl, layout = ctx.fn, ctx.d, ctx.qrole, ctx.key_role, ctx.theta_decl, ctx.layout
    Q, K, V, out = _raw_decode(fn, d, rng)
    n_all = Q.shape[0]
    pos = np.arange(n_all)
    qf = fn(Q, pos, role=qrole)
    kf = fn(K, pos, role=krole)
    tol = ctx.tol_score(n_all)
    viol, worst_t = 0.0, 0
    for t, (qd, kc, _) in enumerate(out):
        i = _PREFILL + t
        s_dec = kc @ qd
        s_full = kf[: i + 1] @ qf[i]
        norms = np.linalg.norm(K[: i + 1], axis=-1) * np.linalg.norm(Q[i])
        e = float(np.max(np.abs(s_dec - s_full) / norms))
        if e > tol and viol <= tol:
            worst_t = t  # diagnose the first step that goes wrong
        viol = max(viol, e)
    if viol <= tol:
        return viol, tol, (f"{_STEPS} decoding steps after a prefill of {_PREFILL} tokens reproduce the "
                           "full-sequence scores")
    t = worst_t
    i = _PREFILL + t
    qd, kc, _ = out[t]
    limit = 2 * n_all + 2
    pq = _match_position(fn, Q[i], qd, qrole, limit, tol / 2)
    pk = _match_position(fn, K[i], kc[i], krole, limit, tol / 2)
    cache_ok = np.max(np.linalg.norm(kc[:i] - kf[:i], axis=-1) / np.linalg.norm(K[:i], axis=-1)) <= tol / 2
    head = f"decoding step {t + 1} (token {i}, {i} tokens cached) changes scores by {viol:.2e} of |q||k|: "
    if not cache_ok:
        return viol, tol, head + ("the cached keys differ from the full-sequence keys (prefill rotates them at "
                                  "other positions)")
    if pq == 0 and i != 0:
        return viol, tol, head + (f"the decoding query is rotated at position 0 instead of {i}: it restarts at the "
                                  f"origin while the cached keys keep positions 0..{i - 1}, so every displacement "
                                  f"is off by {i}")
    if pq is not None and pk is not None and pq == pk:
        delta = pq - i
        return viol, tol, head + (f"the new token is placed at position {pq} while the cache holds {i} tokens at "
                                  f"0..{i - 1}: an off-by-{delta:+d} cache offset (query and new key move together, "
                                  f"so every displacement to the cached keys is wrong by {abs(delta)})")
    if pq is not None and pq != i:
        return viol, tol, head + f"the decoding query sits at position {pq} instead of {i}"
    if pq == i:  # the query is right, so the new key is what moved
        where = "rotated unlike any position" if pk is None else f"placed at position {pk} instead of {i}"
        return viol, tol, head + f"the new key is {where} while the decoding query sits right, at position {i}"
    # no integer position reproduces the query: estimate a scale from the slow pairs
    if layout is not None and layout["pairs"]:
        a = np.array([p[0] for p in layout["pairs"]])
        b = np.array([p[1] for p in layout["pairs"]])
        z_raw = Q[i, a] + 1j * Q[i, b]
        z_rot = qd[a] + 1j * qd[b]
        ang = np.angle(z_rot / z_raw)
        th = theta_decl[: a.size]
        slow = (i * th < 1.0) & (i * th > 1e-3)
        if slow.any():
            return viol, tol, head + _query_ruler(ang[slow] / (i * th[slow]), np.flatnonzero(slow), th.size)
    return viol, tol, head + "the decoding query is rotated differently from the full computation"


