// The wiring lab (chapter 5): a rotary layer wired as deployed. The query of the last of 32 tokens
// attends to every token; choose the pairing the query is rotated with (against the keys' declared
// pairing), the position-id policy (padding, packing, cache offset) and the phase dtype, and read
// what Gate A would: the shift residual of the relative law (a query-key score must not change
// when both positions move by 1, 5, 17 or 4,096) and each score's error against the declared
// operator at the true positions, both relative to |q||k|, against Gate A's rounding tolerance.
// A score of rotated vectors moves by at most 2 |q||k| (CEILING): a verdict whose tolerance reaches
// it cannot fail, so it reads "inconclusive", never green (ropegeo.gates.verdicts.status); the shift check
// is judged on the shifts whose tolerance stays below the ceiling.

export const LENGTH = 32;
export const POLICIES = ["contiguous", "left-padded", "packed-reset", "packed-continuous", "kv-cache"];
export const SHIFTS = [1, 5, 17, 4096];
const UNIT = { float64: 2 ** -53, float32: 2 ** -24, float16: 2 ** -11, bfloat16: 2 ** -8 };
const SAFETY = 16.0;
export const CEILING = 2.0;

/** Position ids the implementation gives the 32 tokens of the document under a policy. */
export function positionIds(policy, pad, cacheOffset) {
  const ids = Array.from({ length: LENGTH }, (_, j) => j);
  if (policy === "left-padded" || policy === "packed-continuous") return ids.map((j) => j + pad);
  if (policy === "kv-cache") ids[LENGTH - 1] = cacheOffset; // the decoded token
  return ids;
}
/** Gate A's rounding tolerance (ropegeo.book.widgets.wiring_lab._tol). */
export function tolerance(dtype, d, pmax, thetaMax) {
  return SAFETY * UNIT[dtype] * (Math.sqrt(d) + 2.0 * pmax * Math.max(thetaMax, 1e-12));
}

/** For each coordinate, the one the rotation at position 1 turns it with, -1 when none shows
 * (ropegeo.book.widgets.wiring_lab.read_partners: Gate A's layout reading). */
export function readPartners(d, theta, pairing, dtype) {
  const out = [];
  for (let j = 0; j < d; j++) {
    const e = new Float64Array(d);
    e[j] = 1;
    const row = rotate(e, 1, theta, { pairing, dtype });
    let partner = -1;
    row.forEach((v, i) => { if (i !== j && v !== 0 && partner < 0) partner = i; });
    out.push(partner);
  }
  return out;
}

export function compute(p, q0, k0) {
  const head_dim = 2 * clampInt(p.head_dim / 2, 2, 32, 8);
  const base = clampNum(p.base, 10, 1e7, 10000);
  const pairing = pick(p.pairing, ["interleaved", "half"], "interleaved");
  const query_pairing = pick(p.query_pairing, ["interleaved", "half"], "interleaved");
  const policy = pick(p.policy, POLICIES, "contiguous");
  const pad = clampInt(p.pad, 0, 4096, 0);
  const cache_offset = clampInt(p.cache_offset, 0, 8192, LENGTH - 1);
  const dtype = pick(p.dtype, PHASE_DTYPES, "float32");
  const state = { head_dim, base, pairing, query_pairing, policy, pad, cache_offset, dtype };
  const theta = frequencies(head_dim, base);
  const q = Float64Array.from(q0.slice(0, head_dim)), k = Float64Array.from(k0.slice(0, head_dim));
  const norm = Math.sqrt(dot(q, q) * dot(k, k));
  const ids = positionIds(policy, pad, cache_offset), pq = ids[LENGTH - 1];
  const score = (mq, nk, dt, qp, kp) => dot(rotate(q, mq, theta, { pairing: qp, dtype: dt }), rotate(k, nk, theta, { pairing: kp, dtype: dt }));
  const reference = ids.map((_, j) => score(LENGTH - 1, j, "float64", pairing, pairing));
  const scores = ids.map((pk) => score(pq, pk, dtype, query_pairing, pairing));
  const errors = scores.map((x, j) => Math.abs(x - reference[j]) / norm);
  const pmax = Math.max(...ids);
  const judged = SHIFTS.filter((c) => tolerance(dtype, head_dim, pmax + c, theta[0]) < CEILING);
  let residual = 0, residualShift = SHIFTS[0];
  for (const c of (judged.length ? judged : SHIFTS)) {
    ids.forEach((pk, j) => {
      const v = Math.abs(score(pq + c, pk + c, dtype, query_pairing, pairing) - scores[j]) / norm;
      if (v > residual) { residual = v; residualShift = c; }
    });
  }
  const score_error = Math.max(...errors);
  const worst = errors.indexOf(score_error);
  const tol_scores = tolerance(dtype, head_dim, pmax, theta[0]);
  const tol_shift = tolerance(dtype, head_dim, pmax + Math.max(...(judged.length ? judged : SHIFTS.slice(0, 1))), theta[0]);
  const scores_status = judge(score_error, tol_scores), shift_status = judge(residual, tol_shift);
  const read = readPartners(head_dim, theta, query_pairing, dtype), declared = readPartners(head_dim, theta, pairing, "float64");
  const layout_mismatches = read.filter((r, j) => r !== -1 && r !== declared[j]).length;
  const layout_status = layout_mismatches ? "fail" : "pass";
  return { state, q: Array.from(q), k: Array.from(k), positions: ids, query_position: pq, reference, scores, score_error, worst_key: worst,
    tolerance_scores: tol_scores, scores_status, scores_pass: scores_status === "pass",
    shift_residual: residual, residual_shift: residualShift, judged_shifts: judged, tolerance_shift: tol_shift,
    shift_status, shift_pass: shift_status === "pass", layout_mismatches, layout_status };
}

/** Why a policy gives the ids it does (the words beside the ids). */
const POLICY_WHY = {
  contiguous: "one document from position 0",
  "left-padded": "the pads take the first positions, so the document starts after them: every id shifted",
  "packed-reset": "packed after another document, the ids restart at 0 where this document begins: "
    + "the same ids as contiguous, as a correct packing must give",
  "packed-continuous": "packed after another document, the ids continue from it: every id shifted",
  "kv-cache": "the earlier tokens are cached at 0..30; the decoded token gets the position chosen",
};

/** The readout's line of position ids (ropegeo.book.widgets.wiring_lab.positions_text). */
export function positionsText(ids, policy) {
  const n = ids.length;
  return `position ids: keys 0..${n - 2} get ${fmtNum(ids[0])}..${fmtNum(ids[n - 2])}, the query (token ${n - 1}) `
    + `gets ${fmtNum(ids[n - 1])} (${policy}: ${POLICY_WHY[policy]})`;
}

/** "pass", "fail", or "inconclusive" when the tolerance reaches CEILING (ropegeo.gates.verdicts.Check.judged). */
export function judge(violation, tol) {
  if (!(tol < CEILING)) return "inconclusive";
  return violation <= tol ? "pass" : "fail";
}

function draw(r, parts) {
  const st = r.state, js = r.positions.map((_, j) => j);
  const all = [...r.reference, ...r.scores];
  const c = chart({ xr: [0, LENGTH - 1], yr: [Math.min(...all) - 0.2, Math.max(...all) + 0.2], xlabel: "key token j",
    ylabel: "score ⟨q, k⟩", title: "last token's scores: blue declared, red as wired", label: "attention scores of the last query" });
  c.line(js, r.reference, "rl-exact");
  r.scores.forEach((v, j) => c.dot(j, v, "rl-mark", 2.6));
  const verdict = (st, text) => h("p", { class: { pass: "rl-pass", fail: "rl-fail" }[st] || "rl-inconclusive", text });
  const word = (st, yes, no) => ({ pass: yes, fail: no }[st] || "INCONCLUSIVE");
  const cannot = (tol) => `: the tolerance ${tol.toExponential(1)} of |q||k| reaches the largest change a score can show ` +
    `(${CEILING} |q||k|), so with ${st.dtype} phases this check cannot fail`;
  const unjudged = SHIFTS.filter((c) => !r.judged_shifts.includes(c));
  const shiftNote = r.shift_status === "inconclusive" ? cannot(r.tolerance_shift) :
    ` (tolerance ${r.tolerance_shift.toExponential(1)}, ${st.dtype} phases` +
    (unjudged.length ? `; shifts of ${unjudged.join(", ")} not judged, their tolerance reaches ${CEILING} |q||k|)` : ")");
  const scoresNote = r.scores_status === "inconclusive" ? cannot(r.tolerance_scores) :
    ` (tolerance ${r.tolerance_scores.toExponential(1)})`;
  paint(parts, [c.svg, key([["rl-exact", "score of the declared operator at the true positions", "line"],
    ["rl-mark", "score as wired (this pairing, these ids, this dtype)"]])], [
    positionsText(r.positions, st.policy),
    verdict(r.layout_status, `pair layout (Gate A layout check, read from the query's rotation matrix): ` +
      (r.layout_status === "pass" ? "as declared" : `MIXED: ${r.layout_mismatches} of ${st.head_dim} coordinates turn with another partner than declared`)),
    verdict(r.shift_status, `relative law (Gate A shift check): residual ${r.shift_residual.toExponential(2)} of |q||k| at a shift of ${withUnit(r.residual_shift, "tokens")} — ` +
      `${word(r.shift_status, "holds", "BROKEN")}${shiftNote}`),
    verdict(r.scores_status, `scores against the declared operator at the true positions: largest error ${r.score_error.toExponential(2)} of |q||k| ` +
      `(key ${r.worst_key}) — ${word(r.scores_status, "match", "WRONG")}${scoresNote}`),
  ]);
}

function render({ model, el }) {
  const names = ["head_dim", "base", "pairing", "query_pairing", "policy", "pad", "cache_offset", "dtype"];
  const q0 = model.get("q"), k0 = model.get("k");
  const pairings = [["interleaved", "interleaved (2i, 2i+1)"], ["half", "half (i, i + d/2)"]];
  return makeLab({
    model, el, cls: "ropegeo-wiring-lab", title: "Wiring lab: pairings, position ids and precision as Gate A sees them",
    controls: [
      { name: "pairing", label: "declared pairing (keys)", kind: "select", options: pairings, format: () => "" },
      { name: "query_pairing", label: "query pairing", kind: "select", options: pairings, format: () => "" },
      { name: "policy", label: "position ids", kind: "select", options: POLICIES.map((x) => [x, x]), format: () => "" },
      { name: "pad", label: "pads / earlier document", kind: "number", min: 0, max: 4096, unit: "tokens", // 0 to 4,096: typed
        off: (r) => (["left-padded", "packed-continuous"].includes(r.state.policy) ? null : `unused when ${r.state.policy}`) },
      { name: "cache_offset", label: "decoded token's position", kind: "number", min: 0, max: 8192, unit: "tokens",
        off: (r) => (r.state.policy === "kv-cache" ? null : "kv-cache only") },
      { name: "dtype", label: "phase dtype", kind: "select", options: PHASE_DTYPES.map((d) => [d, d]), format: () => "" },
      { name: "head_dim", label: "head dim d", kind: "range", min: 4, max: 64, step: 2, unit: "coords" },
      { name: "base", label: "base B (log₁₀)", kind: "log", min: 1, max: 7, step: 0.01, format: (v) => fmtNum(v, 6) },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute: (p) => compute(p, q0, k0), draw,
  });
}

export default { render };
