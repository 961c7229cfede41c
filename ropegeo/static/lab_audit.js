// The audit lab (chapter 6): a shipped model configuration (its record is embedded in the widget
// state) or a custom bank, a target length and the phase dtype; the geometry audit of
// ropegeo.manifest.config_audit (served frequencies, attention factor, slow pairs, K(1), the most
// identity-like offsets) and Gate B of ropegeo.audit (margins of the default offset sets at the far
// end of the target context, in the phase dtype) with its verdict.

export const MIN_MARGIN = 0.1;
export const SEARCH_LIMIT = 100000;
export const MAX_TARGET = 1048576;
const CUSTOM_RULES = ["none", "linear", "ntk", "dynamic", "yarn", "llama3"];

/** The manifest the state describes: {name, base, head_dim, rotary_dim, phase_dtype, train_length, scaling}. */
export function manifestOf(p, records) {
  if (p.model !== "custom" && records[p.model]) {
    const r = records[p.model];
    return { ...r, phase_dtype: p.dtype === "config" ? r.phase_dtype : p.dtype };
  }
  const train = p.train_length, target = p.target_length;
  const scaling = p.rule === "none" || target <= train ? null : preset(p.rule, train, target);
  return { name: "custom", base: p.base, head_dim: p.head_dim, rotary_dim: p.head_dim, pairing: "interleaved",
    phase_dtype: p.dtype === "config" ? "float32" : p.dtype, train_length: train, target_length: train, scaling };
}

/** ropegeo.audit.relative_law_error: max |<R_m q, R_n k> - <q, R_(n-m) k>| over position pairs,
 * float64, with q and k the first 2 x head_dim standard normals of ropegeo's seed-7 stream. */
export function relativeLawError(m, theta, normals) {
  const d = m.head_dim, q = normals.slice(0, d), k = normals.slice(d, 2 * d), train = m.train_length;
  const pairs = [[3, 11], [17, 29], [101, 503], [Math.floor(train / 3), train - 1]];
  const opts = { pairing: m.pairing };
  let worst = 0;
  for (const [a, b] of pairs) {
    const direct = dot(rotate(q, a, theta, opts), rotate(k, b, theta, opts));
    const relative = dot(q, rotate(k, b - a, theta, opts));
    worst = Math.max(worst, Math.abs(direct - relative));
  }
  return worst;
}

export function audit(m, target, normals = null) {
  const { theta, attention_factor } = scaledFrequencies(m.scaling, m.base, m.rotary_dim, target);
  const plain = frequencies(m.rotary_dim, m.base);
  const lam = wavelengths(theta), train = m.train_length;
  const stop = Math.min(target, SEARCH_LIMIT), start = Math.min(Math.max(2, train), stop);
  const count = (arr, f) => arr.filter(f).length;
  const sets = defaultOffsets(target).map(({ name, offsets }) => {
    const origin = Math.max(0.0, target - 1 - offsets[offsets.length - 1]);
    const g = separationMargin(offsets, theta, { dtype: m.phase_dtype, origin });
    if (g == null) return { name, n_offsets: offsets.length, margin: null, pair: null, dtype: m.phase_dtype, origin, passed: false, overflow: true };
    return { name, n_offsets: offsets.length, margin: g.margin, pair: g.pair, dtype: m.phase_dtype, origin, method: g.method,
      passed: g.margin >= MIN_MARGIN };
  });
  return {
    train_length: train, target_length: target, attention_factor, pairs: theta.length,
    wavelength_range: [Math.min(...lam), Math.max(...lam)],
    pairs_longer_than_train: count(lam, (x) => x > train), pairs_longer_than_target: count(lam, (x) => x > target),
    slow_pairs_train: slowPairs(plain, train), slow_pairs_target: slowPairs(theta, target),
    scaled_pairs: count(plain, (t, i) => Math.abs(t / theta[i] - 1.0) > 1e-3),
    adjacent_similarity: adjacentSimilarity(theta),
    relative_law_error: normals ? relativeLawError(m, theta, normals) : null,
    search_range: [start, stop], top_offsets: nearCollisions(theta, start, stop, { top: 3 }),
    gate_b: { passed: sets.every((x) => x.passed), min_margin: MIN_MARGIN, sets },
    _theta: theta, _plain: plain,
  };
}

export function compute(p, records, normals = null) {
  const names = Object.keys(records);
  const model = pick(p.model, [...names, "custom"], names[0] || "custom");
  const state = {
    model, target_length: clampInt(p.target_length, 3, MAX_TARGET, 32768),
    dtype: pick(p.dtype, ["config", ...PHASE_DTYPES], "config"),
    head_dim: 2 * clampInt(p.head_dim / 2, 2, 128, 64), base: clampNum(p.base, 10, 1e7, 10000),
    train_length: clampInt(p.train_length, 16, 131072, 4096), rule: pick(p.rule, CUSTOM_RULES, "none"),
  };
  const m = manifestOf(state, records);
  return { state, manifest: { name: m.name, base: m.base, head_dim: m.head_dim, rotary_dim: m.rotary_dim, pairing: m.pairing,
    phase_dtype: m.phase_dtype, train_length: m.train_length, rule: m.scaling ? m.scaling.rule : "none" },
    audit: audit(m, state.target_length, normals) };
}

function draw(r, parts) {
  const a = r.audit, m = r.manifest, n = a.pairs;
  const lam0 = wavelengths(a._plain), lam = wavelengths(a._theta);
  const lo = Math.min(lam0[0], 16) / 1.5, hi = Math.max(lam[n - 1], a.target_length) * 1.5;
  const c = chart({ xr: [-1, n], yr: [lo, hi], ylog: true, xlabel: "pair i (fastest first)", ylabel: "wavelength (tokens)",
    title: `${m.name}: served ruler (grey: unscaled)`, label: "wavelength per pair as served at the target length" });
  c.line(Array.from(lam0, (_, i) => i), lam0, "rl-base");
  lam.forEach((v, i) => c.dot(i, v, v > a.train_length ? "rl-slow" : "rl-fast", 2.2));
  c.hline(a.train_length, "rl-train", `train ${a.train_length.toLocaleString("en")}`);
  c.hline(a.target_length, "rl-target", `target ${a.target_length.toLocaleString("en")}`);
  const gb = a.gate_b;
  const verdict = h("p", { class: gb.passed ? "rl-pass" : "rl-fail",
    text: `Gate B ${gb.passed ? "PASSES" : "FAILS"}: every offset set needs a margin of at least ${MIN_MARGIN} (phase distance, of at most 2), phases in ${m.phase_dtype}` });
  const rows = [
    ["base, rotary / head dim", `${fmtNum(m.base)}, ${m.rotary_dim} / ${m.head_dim} (${m.pairing} pairing)`],
    ["rule", m.rule],
    ["train → target length", `${a.train_length.toLocaleString("en")} → ${a.target_length.toLocaleString("en")} tokens`],
    ["attention factor at target", a.attention_factor.toPrecision(6)],
    ["pairs rescaled by the rule", `${a.scaled_pairs} of ${n}`],
    ["wavelengths at target", `${fmtNum(a.wavelength_range[0])} .. ${fmtNum(a.wavelength_range[1], 6)} tokens`],
    ["pairs longer than train / target", `${a.pairs_longer_than_train} / ${a.pairs_longer_than_target} of ${n}`],
    ["slow pairs (< 1 turn): train, target", `${a.slow_pairs_train}, ${a.slow_pairs_target} of ${n}`],
    ["adjacent similarity K(1)", a.adjacent_similarity.toFixed(6)],
    ...(a.relative_law_error == null ? [] : [["relative-law error (float64)", a.relative_law_error.toExponential(3)]]),
    ...a.top_offsets.map((t, k) => [k ? "" : `identity-like offsets in [${a.search_range[0].toLocaleString("en")}, ${a.search_range[1].toLocaleString("en")}]`,
      `${t.offset.toLocaleString("en")} tokens (K = ${t.similarity.toFixed(6)})`]),
  ];
  paint(parts, [c.svg], [verdict], [
    table(["Gate B offset set", "margin", "closest pair (tokens)", "verdict"], gb.sets.map((x) => [x.name,
      x.margin == null ? `overflow in ${x.dtype}` : x.margin.toFixed(4), x.pair ? `${x.pair[0]} vs ${x.pair[1]}` : "–",
      x.passed ? "pass" : "FAIL"]), `offsets at the end of the target context (origin ${gb.sets.map((x) => x.origin.toLocaleString("en")).join(", ")})`),
    table(["geometry audit", "value"], rows),
  ]);
}

function render({ model, el }) {
  const records = model.get("records") || {};
  const normals = model.get("law_normals") || null;
  const names = ["model", "target_length", "dtype", "head_dim", "base", "train_length", "rule"];
  return makeLab({
    model, el, cls: "ropegeo-audit-lab", title: "Audit lab: a configuration's geometry and Gate B",
    controls: [
      { name: "model", label: "configuration", kind: "select", options: [...Object.keys(records).map((k) => [k, k]), ["custom", "custom bank (below)"]], format: () => "" },
      { name: "target_length", label: "target length", kind: "number", min: 3, max: MAX_TARGET, unit: "tokens" },
      { name: "dtype", label: "phase dtype", kind: "select", options: [["config", "as configured"], ...PHASE_DTYPES.map((d) => [d, d])], format: () => "" },
      { name: "head_dim", label: "custom head dim", kind: "range", min: 4, max: 256, step: 2, unit: "coords" },
      { name: "base", label: "custom base (log₁₀)", kind: "log", min: 1, max: 7, step: 0.01, format: (v) => fmtNum(v, 6) },
      { name: "train_length", label: "custom train length", kind: "number", min: 16, max: 131072, unit: "tokens" },
      { name: "rule", label: "custom rule", kind: "select", options: CUSTOM_RULES.map((x) => [x, x]), format: () => "" },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute: (p) => compute(p, records, normals), draw,
  });
}

export default { render };
