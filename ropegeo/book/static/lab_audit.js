// The audit lab (chapter 6): a shipped model configuration (its records, one per kind of layer,
// are embedded in the widget state) or a custom bank, a target length and the phase dtype; the
// geometry audit of ropegeo.gates.procedure.geometry_audit (served frequencies, attention factor, slow pairs,
// K(1), the relative-law error against its tolerance, the most identity-like offsets in the search
// range and why that range) and Gate B of ropegeo.gates.b.rule.gate_b (margins of the default offset sets
// at the far end of the target context, in the phase dtype, the distant set stopped by a sliding
// window) with each verdict and the threshold of ropegeo.gates.b.rule.GateBRule's default rule (the least
// sharp head that tells adjacent offsets apart 9:1 on the training ruler must keep 3:1 on the most
// confusable pair: a margin of D_train(1)/sqrt 2). Rows carry the labels of ropegeo's own table.

export const CALIBRATION_MASS = 0.9;
export const PASS_MASS = 0.75;
export const MAX_DISTANCE = 2.0;
const TIE_RTOL = 1e-9;
const WORD = { pass: "pass", fail: "FAIL", inconclusive: "inconclusive" };
export const SEARCH_LIMIT = 100000;
export const MAX_TARGET = 16777216;
const TOP = 3;
const CUSTOM_RULES = ["none", "linear", "ntk", "dynamic", "yarn", "llama3"];
const LAYER_TYPES = ["default", "full_attention", "sliding_attention"];
const LAW_PAIRS = [[2, 9], [31, 40], [97, 611]];
const EPS64 = 2 ** -52;

/** Python's format(x, ",.Ng") / format(x, ".Ng"): N significant digits, trailing zeros dropped,
 * exponent form below 1e-4 or from 10^N on, optional thousands separators. */
export function fmtG(x, digits, group = false) {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const [mant, ex] = x.toExponential(digits - 1).split("e");
  const e = Number(ex);
  const strip = (t) => (t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t);
  if (e < -4 || e >= digits) return `${strip(mant)}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  const text = strip(x.toFixed(Math.max(0, digits - 1 - e)));
  if (!group) return text;
  const [int, frac] = text.split(".");
  const sign = int.startsWith("-") ? "-" : "";
  const grouped = sign + int.replace("-", "").replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return frac ? `${grouped}.${frac}` : grouped;
}
const commas = (n) => n.toLocaleString("en");

/** The layer kind a state reads: its own when the model has that kind, else "default". */
function layerOf(p, records) {
  const r = records[p.model];
  return r && r.layer_types && p.layer_type in r.layer_types ? p.layer_type : "default";
}

/** The manifest the state describes: {label, base, head_dim, rotary_dim, pairing, phase_dtype,
 * train_length, target_length, scaling, sliding_window, layer_type, logit_scale, notes}. */
export function manifestOf(p, records) {
  if (p.model !== "custom" && records[p.model]) {
    const rec = records[p.model], kind = layerOf(p, records);
    const r = kind === "default" ? rec : rec.layer_types[kind];
    return { ...r, name: p.model, phase_dtype: p.dtype === "config" ? r.phase_dtype : p.dtype };
  }
  const train = p.train_length, target = p.target_length;
  const scaling = p.rule === "none" || target <= train ? null : preset(p.rule, train, target);
  return { name: "custom", label: "custom", base: p.base, head_dim: p.head_dim, rotary_dim: p.head_dim,
    pairing: "interleaved", phase_dtype: p.dtype === "config" ? "float32" : p.dtype, train_length: train,
    target_length: train, scaling, sliding_window: null, layer_type: null, logit_scale: 1.0, notes: [], idle_rule: idleRule(p) };
}

/** ropegeo.gates.procedure._search_range without search_start: the offsets searched for identity-like
 * displacements [start, stop] and why those. */
export function searchRange(train, target, window, limit) {
  const span = window == null ? target : Math.min(target, window);
  let stop = span, start;
  const why = [];
  if (window != null && window < target) {
    stop -= 1;
    why.push(`stops at ${commas(stop)}: the attention window (${commas(window)}) hides larger offsets`);
  }
  const seen = stop; // the largest offset attention sees
  if (limit != null && limit < stop) {
    stop = limit;
    why.push(`capped at search_limit ${commas(limit)} (the context reaches ${commas(span - 1)})`);
  }
  stop = Math.max(stop, 2);
  if (train < stop) {
    start = train;
    why.push(`offsets beyond the training length ${commas(train)}`);
  } else {
    start = Math.min(64, stop - 1);
    // the context may reach beyond training while the capped search does not
    why.push(seen > train
      ? `the offsets beyond training (${commas(train)}) lie past the cap, so the distant offsets from ${commas(start)} `
        + "are searched, as Gate B's distant set"
      : `no offset beyond training (${commas(train)}) is seen, so the distant offsets from ${commas(start)} are `
        + "searched, as Gate B's distant set");
  }
  return { range: [Math.max(start, 1), stop], note: why.join("; ") };
}

/** ropegeo.rotation.relative_law_error: max |<R_m q, R_n k> - <q, R_(n-m) k>| over the position
 * pairs, float64, with q and k the first 2 x head_dim standard normals of ropegeo's seed-7 stream. */
export function relativeLawError(m, theta, normals, pairs) {
  const d = m.head_dim, q = normals.slice(0, d), k = normals.slice(d, 2 * d);
  const opts = { pairing: m.pairing };
  let worst = 0;
  for (const [a, b] of pairs) {
    const direct = dot(rotate(q, a, theta, opts), rotate(k, b, theta, opts));
    const relative = dot(q, rotate(k, b - a, theta, opts));
    worst = Math.max(worst, Math.abs(direct - relative));
  }
  return worst;
}

const logit = (p) => Math.log(p / (1 - p));

/** GateBRule().threshold(trained): D_train(1) sqrt(logit(PASS_MASS) / logit(CALIBRATION_MASS)), with
 * the head's sharpness 2 logit(CALIBRATION_MASS) / D_train(1)^2 taken from the training ruler. */
export function gateBThreshold(trained) {
  const d1 = differenceDistance([1], trained)[0];
  if (d1 === 0) return { threshold: 0, sharpness: null };
  const sharpness = 2 * logit(CALIBRATION_MASS) / (d1 * d1);
  return { threshold: Math.sqrt(2 * logit(PASS_MASS) / sharpness), sharpness };
}

/** GateBRule.judge: inconclusive when no ruler could meet (or miss) the threshold. */
export function judge(margin, threshold) {
  if (!(threshold > 0 && threshold < MAX_DISTANCE) || !Number.isFinite(margin)) return "inconclusive";
  return margin >= threshold ? "pass" : "fail";
}

function stepOf(off) {
  const step = off[1] - off[0];
  for (let k = 2; k < off.length; k++) if (off[k] - off[k - 1] !== step) return null;
  return step;
}

/** ropegeo.margins' tie class: the pairs attaining the margin (exact phases: every pair at a
 * difference whose distance equals it; generated phases: every pair within the rounding of the
 * phases of it), named as a class, never as a winner chosen by rounding. */
export function tieClass(offsets, theta, dtype, origin, margin, method, phases = null) {
  const off = Float64Array.from(offsets).sort(), n = off.length, pairs = theta.length;
  const set = new Set(off), apart = (d) => off.filter((o) => set.has(o + d)).length;
  const found = new Map();
  let level = 0; // generated phases: the largest rounding of a signature (roundingAt) over the set's offsets
  if (method === "difference") {
    const limit = margin * (1 + TIE_RTOL) + 1e-15, diffs = new Set();
    for (let a = 0; a < n - 1; a++) for (let b = a + 1; b < n; b++) diffs.add(off[b] - off[a]);
    const list = [...diffs].sort((x, y) => x - y), dist = differenceDistance(list, theta);
    list.forEach((d, j) => { if (dist[j] <= limit) found.set(d, apart(d)); });
  } else {
    const rw = Math.sqrt(1 / pairs), sig = [];
    for (let j = 0; j < n; j++) {
      const pos = origin + off[j], g = phases?.get(pos) ?? generatedPhases(pos, theta, dtype);
      const row = new Float64Array(2 * pairs);
      for (let i = 0; i < pairs; i++) {
        row[i] = g.cos[i] * rw;
        row[pairs + i] = g.sin[i] * rw;
      }
      level = Math.max(level, roundingAt(pos, g, theta));
      sig.push(row);
    }
    const tol = margin === 0 ? 0 : Math.max(2 * level, TIE_RTOL * margin);
    for (let a = 0; a < n - 1; a++) {
      for (let b = a + 1; b < n; b++) {
        let acc = 0;
        for (let i = 0; i < 2 * pairs; i++) acc += (sig[a][i] - sig[b][i]) ** 2;
        if (Math.sqrt(acc) <= margin + tol) found.set(off[b] - off[a], (found.get(off[b] - off[a]) || 0) + 1);
      }
    }
  }
  const keys = [...found.keys()].sort((x, y) => x - y);
  const tied = keys.reduce((s, d) => s + found.get(d), 0);
  const how = method === "difference" ? "tied" : margin === 0 ? "identical signatures" : "tied within rounding";
  let text = "";
  if (tied > 1 && keys.length === 1) {
    const d = keys[0], count = found.get(d), every = apart(d), step = stepOf(off);
    const what = step !== null && d === step ? "adjacent pair" : `pair ${fmtG(d, 6, true)} apart`;
    text = count >= every ? `every ${what} (${commas(count)} pairs, ${how})`
      : `${commas(count)} of the ${commas(every)} pairs ${fmtG(d, 6, true)} apart (${how})`;
  } else if (tied > 1) {
    const shown = keys.slice(0, 5).map((d) => fmtG(d, 6, true)).join(", ") + (keys.length > 5 ? ", ..." : "");
    text = `${commas(tied)} pairs at differences ${shown} (${how})`;
  }
  return { tied: Math.max(tied, 1), ties: text, differences: keys, level };
}

/** The distance between the signature formed in a dtype at ``pos`` (its phases ``g``) and the exact one.
 * ropegeo.gates.b.rule._rounding is its largest over a set's positions: the origin (here) and the
 * origin plus each offset (tieClass's level, from the phases it generates anyway). */
function roundingAt(pos, g, theta) {
  const pairs = theta.length;
  let err = 0;
  for (let i = 0; i < pairs; i++) {
    const t = pos * theta[i];
    err += (g.cos[i] - Math.cos(t)) ** 2 + (g.sin[i] - Math.sin(t)) ** 2;
  }
  return Math.sqrt(err / pairs);
}

/** ropegeo.gates.b.rule.gate_b with the default offset sets and rule: margins in the phase dtype at the far
 * end of the target context (a set whose positions overflow the dtype has margin null). */
export function gateB(m, theta, target, trained) {
  const { threshold, sharpness } = gateBThreshold(trained);
  const window = m.sliding_window ?? null;
  const notes = window != null && window < target
    ? [`offsets stop below the attention window (${commas(window)} tokens): larger ones never reach attention`] : [];
  const freq = m.scaling ? "scaled at target" : "unscaled (no rule)";
  const sets = defaultOffsets(target, window).map(({ name, offsets }) => {
    const origin = Math.max(0.0, target - 1 - offsets[offsets.length - 1]);
    const entry = { name, n_offsets: offsets.length, last_position: origin + offsets[offsets.length - 1],
      dtype: m.phase_dtype, origin,
      origin_rule: "the largest offset at the last position of the target context", frequencies: freq,
      idle_rule: m.idle_rule ?? null };
    const phases = new Map(); // the phases the margin generates, read again by the tie class
    const g = separationMargin(offsets, theta, { dtype: m.phase_dtype, origin, phases });
    let out;
    if (g == null) {
      out = { ...entry, margin: null, pair: null, method: null, status: "fail", passed: false, overflow: true };
    } else {
      const t = tieClass(offsets, theta, m.phase_dtype, origin, g.margin, g.method, phases);
      // gate_b judges what every position keeps: the exact margin less twice the phases' rounding
      const rounding = m.phase_dtype === "float64" ? 0
        : Math.max(t.level, roundingAt(origin, generatedPhases(origin, theta, m.phase_dtype), theta));
      const judged = rounding === 0 ? g.margin
        : separationMargin(offsets, theta, { dtype: "float64", origin }).margin - 2 * rounding;
      const status = judge(judged, threshold);
      out = { ...entry, margin: g.margin, rounding, judged_margin: judged, pair: g.pair, method: g.method, tied: t.tied, differences: t.differences,
        confusable: t.ties || `offsets ${fmtG(g.pair[0], 6, true)} and ${fmtG(g.pair[1], 6, true)}`,
        status, passed: status === "pass" };
    }
    return { ...out, text: describeSet(out, threshold) };
  });
  const states = sets.map((x) => x.status);
  const status = states.includes("fail") ? "fail" : states.includes("inconclusive") ? "inconclusive" : "pass";
  return { status, passed: status === "pass", threshold, sharpness, sets, train_length: m.train_length,
    target_length: target, window, notes };
}

/** GateBResult.describe: one set as a line (margin, verdict against the threshold, closest pair,
 * phases, frequencies and origin). */
export function describeSet(x, threshold) {
  if (x.margin == null) {
    return `positions up to ${commas(x.last_position)} overflow ${x.dtype}: no margin, FAIL `
      + `(threshold ${fmtG(threshold, 4)}); use a wider phase dtype`;
  }
  return `${fmtG(x.margin, 4)} between ${x.confusable}: `
    + `${WORD[x.status]} (threshold ${fmtG(threshold, 4)}); ${x.dtype} phases, `
    + `${x.idle_rule ? `unscaled (${x.idle_rule} not applied: the target is within training)` : x.frequencies} `
    + `frequencies, ${placed(x)}`;
}

/** Where a set sits (ropegeo.book.widgets.audit_lab.set_text): its positions, from the origin to the
 * origin plus its largest offset, the last position of the target context. */
function placed(x) {
  return `positions ${commas(Math.round(x.origin))}..${commas(Math.round(x.last_position))} `
    + "(its largest offset ends on the last position of the target context)";
}

/** A custom rule the state names but the audit does not apply (a target within training). */
function idleRule(p) {
  return p.model === "custom" && p.rule !== "none" && p.target_length <= p.train_length ? p.rule : null;
}

/** The geometry audit (ropegeo.gates.procedure.geometry_audit: float64, top 3, search limit 100,000) and
 * Gate B in the phase dtype, with the rows of ropegeo's table. */
export function audit(m, target, normals = null) {
  const { theta, attention_factor } = scaledFrequencies(m.scaling, m.rotary_dim, m.base, target);
  const plain = frequencies(m.rotary_dim, m.base);
  const lam = wavelengths(theta), train = m.train_length, pairs = theta.length;
  const lawPairs = [...LAW_PAIRS, [Math.floor(train / 4), train - 2]];
  const topPosition = Math.max(...lawPairs.flat());
  const { range, note } = searchRange(train, target, m.sliding_window ?? null, SEARCH_LIMIT);
  const count = (arr, f) => arr.filter(f).length;
  const a = {
    train_length: train, target_length: target, attention_factor, dtype: "float64",
    relative_law_error: normals ? relativeLawError(m, theta, normals, lawPairs) : null,
    law_tolerance: 16 * EPS64 * m.head_dim * (1 + topPosition),
    adjacent_similarity: adjacentSimilarity(theta),
    slow_pairs: slowPairs(plain, train), slow_pairs_target: slowPairs(theta, target),
    pairs_longer_than_train: count(lam, (x) => x > train), pairs_longer_than_target: count(lam, (x) => x > target),
    scaled_pairs: count(plain, (t, i) => Math.abs(t / theta[i] - 1.0) > 1e-3),
    angular_step_ratio: theta[0] / plain[0], search_note: note, pair_count: pairs,
    wavelength_range: [Math.min(...lam), Math.max(...lam)], search_range: range,
    top_offsets: nearMemo(theta, range),
    gate_b: gateB(m, theta, target, plain), _theta: theta, _plain: plain,
  };
  a.rows = rows(a);
  return a;
}

/** nearCollisions over the search range, remembered for the last bank and range (a pure function:
 * moving the dtype, or a control of the custom bank while a model is shown, does not search again). */
let NEAR_MEMO = { key: null, value: null };
function nearMemo(theta, range) {
  const key = `${range}|${theta.join(",")}`;
  if (NEAR_MEMO.key !== key) NEAR_MEMO = { key, value: nearCollisions(theta, range[0], range[1], { top: TOP }) };
  return NEAR_MEMO.value.map((x) => ({ ...x }));
}

/** The geometry rows of GeometryAudit's table: (label, text), "scaled" for the served ruler. */
function rows(a) {
  const p = a.pair_count, [lo, hi] = a.wavelength_range, [s0, s1] = a.search_range;
  const thr = a.gate_b.threshold, kId = 1 - thr ** 2 / 2, open = a.gate_b.status === "inconclusive";
  const law = a.relative_law_error == null ? null : a.relative_law_error <= a.law_tolerance ? "pass" : "FAIL";
  const out = [
    ["train -> target length", `${commas(a.train_length)} -> ${commas(a.target_length)}`],
    ["attention factor on cos, sin at target", fmtG(a.attention_factor, 6)],
    ["pairs rescaled by the rule", `${a.scaled_pairs} of ${p}`],
    ["wavelengths, scaled at target", `${fmtG(lo, 4, true)} .. ${fmtG(hi, 6, true)} tokens`],
    ["pairs longer than train / target, scaled", `${a.pairs_longer_than_train} / ${a.pairs_longer_than_target} of ${p}`],
    ["slow pairs (< 1 turn) over train, unscaled", `${a.slow_pairs} of ${p}`],
    ["slow pairs (< 1 turn) over target, scaled", `${a.slow_pairs_target} of ${p}`],
    ["adjacent similarity K(1), scaled", a.adjacent_similarity.toFixed(6)],
  ];
  if (law) {
    out.push([`relative-law error (${a.dtype}), scaled`, `${a.relative_law_error.toExponential(3).replace(/e([+-])(\d)$/, "e$10$2")}`
      + `: ${law} (threshold ${a.law_tolerance.toExponential(1).replace(/e([+-])(\d)$/, "e$10$2")}, the rounding allowed)`]);
  }
  a.top_offsets.forEach((t, i) => {
    const same = open ? "not judged: Gate B is inconclusive" : t.similarity >= kId ? "confusable with 0" : "distinct from 0";
    out.push([i === 0 ? `identity-like offsets in [${commas(s0)}, ${commas(s1)}], scaled` : "",
      `${commas(t.offset)} (K = ${t.similarity.toFixed(6)}: ${same}, threshold K ${fmtG(kId, 4)} = Gate B margin `
      + `${fmtG(thr, 4)})`]);
  });
  out.push(["  search range", a.search_note]);
  return out;
}

export function compute(p, records, normals = null) {
  const names = Object.keys(records);
  const model = pick(p.model, [...names, "custom"], names[0] || "custom");
  const state = {
    model, layer_type: pick(p.layer_type, LAYER_TYPES, "default"),
    target_length: clampInt(p.target_length, 3, MAX_TARGET, 32768),
    dtype: pick(p.dtype, ["config", ...PHASE_DTYPES], "config"),
    head_dim: 2 * clampInt(p.head_dim / 2, 2, 128, 64), base: clampNum(p.base, 10, 1e7, 10000),
    train_length: clampInt(p.train_length, 16, 131072, 4096), rule: pick(p.rule, CUSTOM_RULES, "none"),
  };
  state.layer_type = layerOf(state, records); // a kind the model does not have: its default reading
  const m = manifestOf(state, records);
  const rec = records[model];
  return { state, kinds: rec && rec.layer_types ? Object.keys(rec.layer_types) : [],
    manifest: { name: m.name, label: m.label, base: m.base, head_dim: m.head_dim, rotary_dim: m.rotary_dim,
      pairing: m.pairing, phase_dtype: m.phase_dtype, train_length: m.train_length,
      rule: m.scaling ? m.scaling.rule : "none", idle_rule: m.idle_rule ?? null, sliding_window: m.sliding_window ?? null,
      layer_type: m.layer_type ?? null, logit_scale: m.logit_scale ?? 1.0, notes: m.notes || [] },
    audit: audit(m, state.target_length, normals) };
}

export function manifestRows(m, target) {
  m = { ...m, target };
  const out = [
    ["model", (m.label || m.name).replace(/\//g, "/\u200b")], // a long repository name may break after "/"
    ["base, rotary / head dim", `${fmtNum(m.base)}, ${m.rotary_dim} / ${m.head_dim} (${m.pairing} pairing)`],
    ["extension rule", m.idle_rule ? `${m.idle_rule}, not applied: the target (${commas(m.target)}) does not exceed `
      + `training (${commas(m.train_length)}), so the bank is served unscaled` : m.rule],
    ["phase precision", m.phase_dtype],
  ];
  if (m.layer_type) out.push(["layer type", m.layer_type]);
  if (m.sliding_window != null) out.push(["attention window", `${commas(m.sliding_window)} tokens (larger offsets never reach attention)`]);
  if (m.logit_scale !== 1.0) out.push(["extra logit scale", `${fmtG(m.logit_scale, 6)} (applied to the softmax scale)`]);
  m.notes.forEach((n, i) => out.push([i ? "" : "note", n]));
  return out;
}

function draw(r, parts) {
  const a = r.audit, m = r.manifest, n = a.pair_count;
  const lam0 = wavelengths(a._plain), lam = wavelengths(a._theta);
  const lo = Math.min(lam0[0], 16) / 1.5, hi = Math.max(lam[n - 1], a.target_length) * 1.5;
  const c = chart({ xr: [-1, n], yr: [lo, hi], ylog: true, xlabel: "pair i (fastest first)", ylabel: "wavelength (tokens)",
    title: `${m.name}: ruler scaled at target (grey: unscaled)`, label: "wavelength per pair as served at the target length" });
  c.line(Array.from(lam0, (_, i) => i), lam0, "rl-base");
  lam.forEach((v, i) => c.dot(i, v, v > a.train_length ? "rl-slow" : "rl-fast", 2.2));
  if (a.train_length === a.target_length) c.hline(a.train_length, "rl-target", `train = target ${commas(a.train_length)}`);
  else {
    c.hline(a.train_length, "rl-train", `train ${commas(a.train_length)}`);
    c.hline(a.target_length, "rl-target", `target ${commas(a.target_length)}`);
  }
  if (m.sliding_window != null && m.sliding_window < a.target_length) {
    c.hline(m.sliding_window, "rl-train", `window ${commas(m.sliding_window)}`);
  }
  const gb = a.gate_b;
  const rank = (x) => (x.margin == null ? -1 : x.margin); // an overflow is the worst a set can do
  const worst = gb.sets.reduce((w, x) => (rank(x) < rank(w) ? x : w));
  const word = { pass: "passes", fail: "FAILS", inconclusive: "is inconclusive" }[gb.status];
  const verdict = h("p", { class: gb.passed ? "rl-pass" : "rl-fail",
    text: `Gate B ${word}: every offset set needs a margin of at least ${fmtG(gb.threshold, 4)} `
      + `(a phase distance, at most 2; K = ${fmtG(1 - gb.threshold ** 2 / 2, 4)}): adjacent tokens were `
      + `${fmtG(Math.SQRT2 * gb.threshold, 4)} apart in training, and a head that told them apart 9:1 must keep `
      + `3:1 on the most confusable pair. Phases in ${m.phase_dtype}. `
      + (worst.margin == null ? `Positions overflow ${m.phase_dtype} (set ${worst.name}).` : `Closest set: ${worst.name}.`) });
  const gateRows = gb.sets.map((x) => [x.name, x.text]);
  gb.notes.forEach((t) => gateRows.push(["note", t]));
  // sentences, not numbers: read from the left
  const left = (t) => { t.querySelectorAll("td, th").forEach((x) => { x.style.textAlign = "left"; }); return t; };
  const kinds = new Set(Array.from(lam, (v) => (v > a.train_length ? "rl-slow" : "rl-fast")));
  const marks = key([["rl-fast", "a pair whose wavelength (as served) fits in training"],
    ["rl-slow", "a pair whose wavelength (as served) is longer than training"]].filter(([k]) => kinds.has(k)));
  paint(parts, [c.svg, marks], [verdict], [
    left(table(["Gate B offset set", "margin and verdict"], gateRows, `Gate B (${plural(gb.sets.length, "default offset set")})`)),
    left(table(["geometry audit (float64)", "value"], a.rows)),
    left(table(["manifest", "value"], manifestRows(m, a.target_length))),
  ]);
}

/** The custom bank's controls act on the custom bank only. */
const CUSTOM_ONLY = (r) => (r.state.model === "custom" ? null : "custom bank only");

function render({ model, el }) {
  const records = model.get("records") || {};
  const normals = model.get("law_normals") || null;
  const names = ["model", "layer_type", "target_length", "dtype", "head_dim", "base", "train_length", "rule"];
  return makeLab({
    model, el, cls: "ropegeo-audit-lab", title: "Audit lab: a configuration's geometry and Gate B",
    controls: [
      { name: "model", label: "configuration", kind: "select", options: [...Object.keys(records).map((k) => [k, k]), ["custom", "custom bank (below)"]], format: () => "" },
      { name: "layer_type", label: "layer kind", kind: "select", options: [["default", "as the record reads"], ["full_attention", "full attention"], ["sliding_attention", "sliding attention"]], format: () => "",
        off: (r) => (r.kinds.length ? null : r.state.model === "custom" ? "custom bank: one kind of layer" : "this model has one kind of layer"),
        optionOff: (r, v) => (v === "default" || r.kinds.includes(v) ? null : "this model has no such layer") },
      { name: "target_length", label: "target length", kind: "number", min: 3, max: MAX_TARGET, unit: "tokens" },
      { name: "dtype", label: "phase dtype", kind: "select", options: [["config", "as configured"], ...PHASE_DTYPES.map((d) => [d, d])], format: () => "" },
      { name: "head_dim", label: "custom head dim", kind: "range", min: 4, max: 256, step: 2, unit: "coords",
        off: CUSTOM_ONLY },
      { name: "base", label: "custom base (log₁₀)", kind: "log", min: 1, max: 7, step: 0.01, format: (v) => fmtNum(v, 6),
        off: CUSTOM_ONLY },
      { name: "train_length", label: "custom train length", kind: "number", min: 16, max: 131072, unit: "tokens",
        off: CUSTOM_ONLY },
      { name: "rule", label: "custom rule", kind: "select", options: CUSTOM_RULES.map((x) => [x, x]), format: () => "",
        off: CUSTOM_ONLY },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute: (p) => compute(p, records, normals), draw,
  });
}

export default { render };
