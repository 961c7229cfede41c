// The wiring lab (chapter 5): a rotary layer wired as deployed. The query of the last of 32 tokens
// attends to every token; choose the pairing the query is rotated with (against the keys' declared
// pairing), the position-id policy (padding, packing, cache offset) and the phase dtype, and read
// what Gate A would: the shift residual of the relative law (a query-key score must not change
// when both positions move by 1, 5, 17 or 4,096) and each score's error against the declared
// operator at the true positions, both relative to |q||k|, against Gate A's rounding tolerance.

export const LENGTH = 32;
export const POLICIES = ["contiguous", "left-padded", "packed-reset", "packed-continuous", "kv-cache"];
export const SHIFTS = [1, 5, 17, 4096];
const UNIT = { float64: 2 ** -53, float32: 2 ** -24, float16: 2 ** -11, bfloat16: 2 ** -8 };
const SAFETY = 16.0;

/** Position ids the implementation gives the 32 tokens of the document under a policy. */
export function positionIds(policy, pad, cacheOffset) {
  const ids = Array.from({ length: LENGTH }, (_, j) => j);
  if (policy === "left-padded" || policy === "packed-continuous") return ids.map((j) => j + pad);
  if (policy === "kv-cache") ids[LENGTH - 1] = cacheOffset; // the decoded token
  return ids;
}
/** Gate A's rounding tolerance (ropegeo.gate_a._tol). */
export function tolerance(dtype, d, pmax, thetaMax) {
  return SAFETY * UNIT[dtype] * (Math.sqrt(d) + 2.0 * pmax * Math.max(thetaMax, 1e-12));
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
  let residual = 0, residualShift = SHIFTS[0];
  for (const c of SHIFTS) {
    ids.forEach((pk, j) => {
      const v = Math.abs(score(pq + c, pk + c, dtype, query_pairing, pairing) - scores[j]) / norm;
      if (v > residual) { residual = v; residualShift = c; }
    });
  }
  const pmax = Math.max(...ids);
  const score_error = Math.max(...errors);
  const worst = errors.indexOf(score_error);
  const tol_scores = tolerance(dtype, head_dim, pmax, theta[0]);
  const tol_shift = tolerance(dtype, head_dim, pmax + 4096, theta[0]);
  return { state, q: Array.from(q), k: Array.from(k), positions: ids, query_position: pq, reference, scores, score_error, worst_key: worst,
    tolerance_scores: tol_scores, scores_pass: score_error <= tol_scores,
    shift_residual: residual, residual_shift: residualShift, tolerance_shift: tol_shift, shift_pass: residual <= tol_shift };
}

function draw(r, parts) {
  const st = r.state, js = r.positions.map((_, j) => j);
  const all = [...r.reference, ...r.scores];
  const c = chart({ xr: [0, LENGTH - 1], yr: [Math.min(...all) - 0.2, Math.max(...all) + 0.2], xlabel: "key token j",
    ylabel: "score ⟨q, k⟩", title: "last token's scores: blue declared, red as wired", label: "attention scores of the last query" });
  c.line(js, r.reference, "rl-exact");
  r.scores.forEach((v, j) => c.dot(j, v, "rl-mark", 2.6));
  const verdict = (ok, text) => h("p", { class: ok ? "rl-pass" : "rl-fail", text });
  paint(parts, [c.svg], [
    `position ids: tokens 0..${LENGTH - 1} get ${r.positions[0]}..${r.positions[LENGTH - 2]}, the query ${r.query_position} (${st.policy})`,
    verdict(r.shift_pass, `relative law (Gate A shift check): residual ${r.shift_residual.toExponential(2)} of |q||k| at a shift of ${r.residual_shift} tokens — ` +
      `${r.shift_pass ? "holds" : "BROKEN"} (tolerance ${r.tolerance_shift.toExponential(1)}, ${st.dtype} phases)`),
    verdict(r.scores_pass, `scores against the declared operator at the true positions: largest error ${r.score_error.toExponential(2)} of |q||k| ` +
      `(key ${r.worst_key}) — ${r.scores_pass ? "match" : "WRONG"} (tolerance ${r.tolerance_scores.toExponential(1)})`),
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
      { name: "pad", label: "pads / earlier document", kind: "range", min: 0, max: 4096, step: 1, unit: "tokens",
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
