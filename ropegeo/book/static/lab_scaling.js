// The scaling lab (chapter 4): one extension rule stretches a bank from the training length to
// factor x training length. The ruler (wavelength per pair before and after), the phase the served
// bank visits that training never showed (novelty), the local resolution it keeps (K(1), the
// fastest step), Gate B margins, and the novelty/resolution trade-off of every rule at this
// factor. The numbers are ropegeo.book.widgets.scaling_lab.evaluate's (ropegeo.scaling.extension_report).

export const LAB_RULES = ["none", "linear", "ntk", "dynamic", "yarn", "llama3"];
export const MAX_LAB_FACTOR = 64;
const HEAD_DIMS = [32, 64, 96, 128, 256];
const TRAIN_LENGTHS = [1024, 2048, 4096, 8192, 32768];
const SMALL_OFFSETS = 16;
const COARSE_STEP = 64;

function roundHalf(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** ropegeo.scaling.extension_report for the lab's setting (small_offsets 16, coarse_step 64). */
export function report(rule, p) {
  const { factor, head_dim: d, base, train_length: L } = p;
  const target = roundHalf(factor * L);
  let params = {};
  if (rule === "yarn") params = { beta_fast: p.beta_fast, beta_slow: p.beta_slow };
  if (rule === "llama3") params = { low_freq_factor: p.low_freq_factor, high_freq_factor: p.high_freq_factor };
  const sc = rule === "none" ? null
    : factor === 1.0 && rule !== "dynamic" ? preset(rule, L, Math.max(target, L), params) : preset(rule, L, target, params);
  const plain = frequencies(d, base);
  const { theta, attention_factor } = scaledFrequencies(sc, d, base, target);
  const stretch = plain.map((t, i) => t / theta[i]);
  const novelty = phaseNovelty(plain, theta, L, target);
  const offs = (a, b, st) => Array.from({ length: Math.floor((b - a) / st) + 1 }, (_, k) => a + k * st);
  return {
    rule, target_length: target, theta, stretch, novelty, attention_factor,
    scaled_pairs: stretch.filter((x) => Math.abs(x - 1.0) > 1e-3).length,
    novel_pairs: novelty.filter((x) => x > 1e-9).length,
    total_novelty: novelty.reduce((a, b) => a + b, 0),
    adjacent_similarity: adjacentSimilarity(theta),
    adjacent_distance: differenceDistance([1.0], theta)[0],
    fastest_step: theta[0],
    margin: separationMargin(offs(1, SMALL_OFFSETS, 1), theta).margin,
    coarse_margin: separationMargin(offs(COARSE_STEP, L, COARSE_STEP), theta).margin,
  };
}

/** The lab's state from the model's values, bounded. The crossed parameters cannot be reached:
 * beta_slow stays below beta_fast and Llama 3's low factor below its high one (a slider pushed past
 * the other end is held 0.25 below it), so every state the controls reach is one ropegeo accepts. */
export function compute(p) {
  const beta_fast = clampNum(p.beta_fast, 0.5, 128, 32), high = clampNum(p.high_freq_factor, 0.5, 64, 4);
  const state = {
    rule: pick(p.rule, LAB_RULES, "yarn"),
    factor: clampNum(p.factor, 1, MAX_LAB_FACTOR, 8),
    head_dim: pick(Number(p.head_dim), HEAD_DIMS, 128),
    base: clampNum(p.base, 1000, 1e7, 10000),
    train_length: pick(Number(p.train_length), TRAIN_LENGTHS, 4096),
    beta_fast,
    beta_slow: clampNum(p.beta_slow, 0.25, beta_fast - 0.25, 1),
    low_freq_factor: clampNum(p.low_freq_factor, 0.25, high - 0.25, 1),
    high_freq_factor: high,
  };
  const refused = null; // kept in the published numbers: no reachable state is refused
  const rules = LAB_RULES.map((r) => report(r, state));
  const pub = (x) => ({ rule: x.rule, target_length: x.target_length, scaled_pairs: x.scaled_pairs, novel_pairs: x.novel_pairs,
    total_novelty: x.total_novelty, adjacent_similarity: x.adjacent_similarity, adjacent_distance: x.adjacent_distance,
    fastest_step: x.fastest_step, margin: x.margin, coarse_margin: x.coarse_margin, attention_factor: x.attention_factor });
  const sel = rules.find((x) => x.rule === state.rule) || null;
  return { state, refused, selected: sel && pub(sel), rules: rules.map(pub), _sel: sel, _plain: frequencies(state.head_dim, state.base) };
}

function draw(r, parts) {
  const st = r.state;
  const x = r._sel, lam0 = wavelengths(r._plain), lam = wavelengths(x.theta), n = lam.length;
  const lo = Math.min(lam0[0], st.train_length) / 1.5, hi = Math.max(lam[n - 1], x.target_length) * 1.5;
  const ruler = chart({ xr: [-1, n], yr: [lo, hi], ylog: true, xlabel: "pair i (fastest first)", ylabel: "wavelength (tokens)",
    title: `${st.rule}: the ruler (grey: unscaled)`, label: "wavelength per pair before and after the rule" });
  ruler.line(Array.from(lam0, (_, i) => i), lam0, "rl-base");
  const top = Math.max(...x.stretch);
  lam.forEach((v, i) => {
    const s = x.stretch[i];
    ruler.dot(i, v, Math.abs(s - 1) <= 1e-3 ? "rl-fast" : top > 1.001 && s >= 0.99 * top ? "rl-mark" : "rl-slow", 2.2);
  });
  ruler.hline(st.train_length, "rl-train", `train ${st.train_length.toLocaleString("en")}`);
  ruler.hline(x.target_length, "rl-target", `target ${x.target_length.toLocaleString("en")}`);
  const nov = chart({ xr: [-1, n], yr: [0, 1], xlabel: "pair i (fastest first)", ylabel: "novel phase (turns)",
    title: "phase never seen in training", label: "per-pair phase novelty at the target length" });
  x.novelty.forEach((v, i) => {
    if (v > 0) nov.add(s("rect", { x: nov.X(i - 0.4), width: Math.max(1, nov.X(i + 0.4) - nov.X(i - 0.4)), y: nov.Y(v),
      height: nov.Y(0) - nov.Y(v), class: "rl-bar" }));
  });
  if (!(x.novel_pairs > 0)) nov.note(`none: every pair stays on phases training showed`);
  const anyNovel = r.rules.some((q) => q.total_novelty > 1e-9);
  const maxNov = anyNovel ? Math.max(...r.rules.map((q) => q.total_novelty)) * 1.15 : 1;
  const maxD = Math.max(...r.rules.map((q) => q.adjacent_distance)) * 1.1;
  const trade = chart({ xr: [0, maxD], yr: [0, maxNov], xlabel: "adjacent distance D(1) (resolution)", ylabel: "novelty (turns)",
    title: `trade-off of every rule at ×${fmtNum(st.factor)}`, label: "novelty against resolution for every rule" });
  const others = r.rules.filter((q) => q.rule !== st.rule), mine = r.rules.filter((q) => q.rule === st.rule);
  for (const q of [...others, ...mine]) // the selected rule last: drawn over any rule beside it
    trade.dot(q.adjacent_distance, q.total_novelty, q.rule === st.rule ? "rl-mark" : "rl-other", q.rule === st.rule ? 5 : 3.5);
  trade.labels(r.rules.map((q) => ({ x: q.adjacent_distance, y: q.total_novelty, text: q.rule })));
  if (!anyNovel) trade.note("no rule sees new phase at this factor");
  const sel = r.selected;
  const kinds = new Set(Array.from(lam, (_, i) => { const sv = x.stretch[i]; return Math.abs(sv - 1) <= 1e-3 ? "rl-fast" : top > 1.001 && sv >= 0.99 * top ? "rl-mark" : "rl-slow"; }));
  const rulerKey = key([["rl-fast", "pair left as trained"], ["rl-slow", "pair stretched, by less than the full factor"],
    ["rl-mark", `pair stretched by the full factor (×${fmtNum(top, 4)})`]].filter(([c]) => kinds.has(c)));
  const tradeKey = key([["rl-mark", `${st.rule}, the rule chosen`], ["rl-other", "the other rules (named beside their dots)"]]);
  paint(parts, [ruler.svg, rulerKey, nov.svg, trade.svg, tradeKey], [
    `${sel.rule}: ${sel.scaled_pairs} of ${n} pairs stretched; ` + (sel.novel_pairs === 0 ? "no pair sees new phase"
      : `${plural(sel.novel_pairs, "pair sees", "pairs see")} new phase (${sel.total_novelty.toFixed(3)} turns in all)`),
    `resolution: K(1) = ${sel.adjacent_similarity.toFixed(6)}, D(1) = ${sel.adjacent_distance.toFixed(4)}; fastest step ${sel.fastest_step.toFixed(4)} rad per token`,
    `Gate B margins: offsets 1..${SMALL_OFFSETS} → ${sel.margin.toFixed(4)}; offsets 64, 128, .. ${st.train_length.toLocaleString("en")} → ${sel.coarse_margin.toFixed(4)} (of at most 2)`,
    `served length ${sel.target_length.toLocaleString("en")} tokens; attention factor ${sel.attention_factor.toFixed(4)}`,
  ]);
}

function render({ model, el }) {
  const names = ["rule", "factor", "head_dim", "base", "train_length", "beta_fast", "beta_slow", "low_freq_factor", "high_freq_factor"];
  return makeLab({
    model, el, cls: "ropegeo-scaling-lab", title: "Scaling lab: one extension rule, its ruler and its trade-off",
    controls: [
      { name: "rule", label: "extension rule", kind: "select", options: LAB_RULES.map((x) => [x, x]), format: () => "" },
      { name: "factor", label: "factor s", kind: "range", min: 1, max: MAX_LAB_FACTOR, step: 0.5, format: (v) => `×${fmtNum(v)}` },
      { name: "head_dim", label: "head dim d", kind: "select", options: HEAD_DIMS.map((x) => [x, String(x)]), unit: "coords" },
      { name: "base", label: "base B (log₁₀)", kind: "log", min: 3, max: 7, step: 0.01, format: (v) => fmtNum(v, 6) },
      { name: "train_length", label: "train length", kind: "select", options: TRAIN_LENGTHS.map((x) => [x, x.toLocaleString("en")]), unit: "tokens" },
      { name: "beta_fast", label: "YaRN beta_fast", kind: "range", min: 0.5, max: 128, step: 0.25, unit: "turns",
        off: (r) => (r.state.rule === "yarn" ? null : "YaRN only") },
      { name: "beta_slow", label: "YaRN beta_slow", kind: "range", min: 0.25, max: 127.75, step: 0.25, unit: "turns",
        maxOf: (r) => r.state.beta_fast - 0.25, off: (r) => (r.state.rule === "yarn" ? null : "YaRN only") },
      { name: "low_freq_factor", label: "Llama 3 low", kind: "range", min: 0.25, max: 63.75, step: 0.25, format: (v) => fmtNum(v),
        maxOf: (r) => r.state.high_freq_factor - 0.25, off: (r) => (r.state.rule === "llama3" ? null : "Llama 3 only") },
      { name: "high_freq_factor", label: "Llama 3 high", kind: "range", min: 0.5, max: 64, step: 0.25, format: (v) => fmtNum(v),
        off: (r) => (r.state.rule === "llama3" ? null : "Llama 3 only") },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute, draw,
  });
}

export default { render };
