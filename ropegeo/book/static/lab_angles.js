// The angle heatmap (chapter 4): the phase position x theta_i mod 2 pi of every pair (rows, fastest
// at the bottom) at 240 positions from 0 to 1.25 x the target length (columns), in a cyclic colour
// map, with the training and target lengths marked; below it, how far each phase is from plain
// RoPE (unscaled, float64), wrapped into [-pi, pi). The rule, its factor, the head width, the base,
// the training length and the dtype of the angle table are the controls. The numbers are those of
// ropegeo.book.widgets.angle_lab.reference (ropegeo.scaling and ropegeo.rotation.phase_angles).

export const ANGLE_RULES = ["none", "linear", "ntk", "yarn", "llama3"];
export const ANGLE_DTYPES = ["float64", "float32", "bfloat16"];
const ANGLE_HEAD_DIMS = [16, 32, 64, 128, 256];
const ANGLE_TRAIN = [512, 1024, 2048, 4096, 8192];
export const MAX_ANGLE_FACTOR = 64;
export const COLUMNS = 240;
const CELL_STRIDE = 97; // the published sample: every 97th cell of the map (row-major)
const RULE_TEXT = { none: "none (extrapolate)", linear: "linear interpolation", ntk: "NTK", yarn: "YaRN", llama3: "Llama 3" };

/** The columns' positions: floor(k X / 240), X = floor(1.25 target). */
export function positions(target) {
  const x = Math.floor((5 * target) / 4);
  return Array.from({ length: COLUMNS }, (_, k) => Math.floor((k * x) / COLUMNS));
}

export function compute(p) {
  const state = {
    rule: pick(p.rule, ANGLE_RULES, "yarn"),
    factor: Math.round(2 * clampNum(p.factor, 1, MAX_ANGLE_FACTOR, 4)) / 2,
    head_dim: pick(Number(p.head_dim), ANGLE_HEAD_DIMS, 64),
    base: clampNum(p.base, 100, 1e7, 10000),
    train_length: pick(Number(p.train_length), ANGLE_TRAIN, 2048),
    dtype: pick(p.dtype, ANGLE_DTYPES, "float64"),
  };
  const { head_dim: d, base, train_length: L, dtype } = state;
  const target = Math.round(state.factor * L);
  const theta = scaledFrequencies(preset(state.rule, L, target), d, base).theta;
  const plain = frequencies(d, base);
  const pos = positions(target), pairs = theta.length;
  const served = angleTable(pos, theta, dtype), exact = angleTable(pos, plain, "float64");
  const phase = served.map(wrapPhase);
  const change = served.map((a, j) => phaseDifference(a, exact[j]));
  const ends = [generatedAngles(L, theta, dtype), generatedAngles(target, theta, dtype)];
  const exactEnd = generatedAngles(target, theta, "float64");
  let rounding = 0;
  for (let i = 0; i < pairs; i++) rounding = Math.max(rounding, Math.abs(ends[1][i] - exactEnd[i]));
  const cells = [];
  for (let j = 0; j < phase.length; j += CELL_STRIDE) {
    cells.push({ column: Math.floor(j / pairs), pair: j % pairs, phase: phase[j], change: change[j] });
  }
  let changed = 0, largest = 0;
  for (const c of change) { if (Math.abs(c) > 1e-9) changed++; largest = Math.max(largest, Math.abs(c)); }
  const step = Math.floor((5 * target) / 4) / COLUMNS; // tokens per column
  return {
    state, target_length: target, theta, positions: pos, cells, rounding, column_step: step,
    aliased_pairs: theta.filter((t) => t * step > Math.PI).length,
    at_train: ends[0].map(wrapPhase), at_target: ends[1].map(wrapPhase),
    turns_at_target: Array.from(theta, (t) => (target * t) / TWO_PI),
    changed_cells: changed, largest_change: largest, _phase: phase, _change: change,
  };
}

// ------------------------------------------------------------------------------ drawing
/** A cyclic palette (phase 0 and 2 pi alike): three cosines a third of a turn apart, softened;
 * 256 colours over [0, 2 pi). */
const CYCLIC = Array.from({ length: 256 }, (_, j) => {
  const phi = (TWO_PI * (j + 0.5)) / 256;
  return [0, 1, 2].map((k) => Math.round(255 * (0.55 + 0.4 * Math.cos(phi - (2 * Math.PI * k) / 3))));
});
const cyclicIndex = (phi) => Math.min(255, Math.floor((phi / TWO_PI) * 256));
/** A diverging palette for [-pi, pi): white at 0 (index 127), red above, blue below. */
const DIVERGING = Array.from({ length: 256 }, (_, j) => {
  const u = Math.min(1, (j - 127) / 127), a = Math.abs(u) ** 0.6;
  return u >= 0 ? [255, Math.round(255 * (1 - 0.8 * a)), Math.round(255 * (1 - 0.85 * a))]
    : [Math.round(255 * (1 - 0.85 * a)), Math.round(255 * (1 - 0.6 * a)), 255];
});
const divergingIndex = (x) => 127 + Math.round(127 * Math.max(-1, Math.min(1, x / Math.PI)));

/** An uncompressed 8-bit BMP with a 256-colour palette (bottom row first, as BMP stores it) of
 * rows x cols values, as a data URL: one byte per cell keeps the page (and its preview) small. */
function bmp(values, rows, cols, palette, index) {
  const stride = Math.ceil(cols / 4) * 4, offset = 54 + 4 * 256, size = offset + stride * rows;
  const b = new Uint8Array(size), dv = new DataView(b.buffer);
  b[0] = 0x42; b[1] = 0x4d;
  dv.setUint32(2, size, true); dv.setUint32(10, offset, true); dv.setUint32(14, 40, true);
  dv.setInt32(18, cols, true); dv.setInt32(22, rows, true); dv.setUint16(26, 1, true); dv.setUint16(28, 8, true);
  dv.setUint32(34, stride * rows, true); dv.setUint32(46, 256, true);
  palette.forEach(([r, g, bl], j) => { b[54 + 4 * j] = bl; b[55 + 4 * j] = g; b[56 + 4 * j] = r; });
  for (let i = 0; i < rows; i++) {
    for (let k = 0; k < cols; k++) b[offset + i * stride + k] = index(values[k * rows + i]);
  }
  let bin = "";
  for (let j = 0; j < size; j += 8192) bin += String.fromCharCode(...b.subarray(j, j + 8192));
  return `data:image/bmp;base64,${btoa(bin)}`;
}

function heatmap(r, values, palette, index, title, label) {
  const st = r.state, pairs = r.theta.length, xmax = Math.floor((5 * r.target_length) / 4);
  const c = chart({ h: 200, xr: [0, xmax], yr: [-0.5, pairs - 0.5], xlabel: "position (dashed: train, dotted: target)",
    ylabel: "pair i", title, label });
  c.add(s("image", { x: c.X(0), y: c.Y(pairs - 0.5), width: c.X(xmax) - c.X(0), height: c.Y(-0.5) - c.Y(pairs - 0.5),
    preserveAspectRatio: "none", href: bmp(values, pairs, COLUMNS, palette, index), style: "image-rendering: pixelated" }));
  for (const [x, cls] of [[st.train_length, "rl-train"], [r.target_length, "rl-target"]]) {
    c.add(s("line", { x1: c.X(x), x2: c.X(x), y1: c.top, y2: c.top + c.ph, class: cls, "stroke-width": 1.5 }));
  }
  return c.svg;
}

function draw(r, parts) {
  const st = r.state, pairs = r.theta.length;
  const rule = RULE_TEXT[st.rule];
  const map = heatmap(r, r._phase, CYCLIC, cyclicIndex, `phase mod 2π, ${rule} ×${fmtNum(st.factor)}, ${st.dtype} angles`,
    "phase of every pair at every position (cyclic colours)");
  const diff = heatmap(r, r._change, DIVERGING, divergingIndex, "change from plain RoPE in float64 (white: none, red +, blue −)",
    "phase minus the unscaled float64 phase, per pair and position");
  const slow = pairs - 1, fast = 0;
  paint(parts, [map, phaseKey(), diff], [
    `${rule} at ×${fmtNum(st.factor)}: trained on ${st.train_length.toLocaleString("en")} tokens, served up to ` +
      `${r.target_length.toLocaleString("en")}; ${r.changed_cells.toLocaleString("en")} of ${(pairs * COLUMNS).toLocaleString("en")} cells differ from plain RoPE`,
    `slowest pair (${slow}): ${r.turns_at_target[slow].toFixed(4)} turns in all by the target; its phase (mod 2π, as the map ` +
      `colours it) is ${r.at_train[slow].toFixed(4)} rad at the training length and ${r.at_target[slow].toFixed(4)} rad at the target`,
    `fastest pair (${fast}): ${fmtNum(r.turns_at_target[fast], 6)} turns by the target; ` +
      `${st.dtype} angle table: largest rounding at the target ${fmtNum(r.rounding, 3)} rad`,
    aliasText(r),
  ]);
}

/** The aliasing line: how many pairs turn more than half a turn per column (none, one, or a count). */
export function aliasText(r) {
  const step = `one column every ${fmtNum(r.column_step, 4)} tokens`;
  if (r.aliased_pairs === 0) return `${step}: no pair turns more than half a turn per column, so every stripe is its true pattern`;
  return `${step}: ${r.aliased_pairs === 1 ? "1 pair turns" : `${r.aliased_pairs} pairs turn`} more than half a turn per column; ` +
    `${r.aliased_pairs === 1 ? "it is" : "they are"} sampled too coarsely, and ${r.aliased_pairs === 1 ? "its stripes are aliases" : "their stripes are aliases"}, not the true pattern`;
}

/** The key of the phase colours: the cyclic palette from 0 to 2π (the same colour at both ends). */
function phaseKey() {
  const w = 180, sw = s("svg", { width: w + 60, height: 26, "aria-hidden": "true" });
  for (let j = 0; j < 64; j++) {
    const [R, G, B] = CYCLIC[Math.floor((j * 256) / 64)];
    sw.appendChild(s("rect", { x: 20 + (j * w) / 64, y: 2, width: w / 64 + 0.5, height: 10, fill: `rgb(${R},${G},${B})` }));
  }
  [["0", 0], ["π", 0.5], ["2π", 1]].forEach(([text, f]) =>
    sw.appendChild(s("text", { x: 20 + f * w, y: 24, class: "rl-tlabel", "text-anchor": "middle" }, text)));
  const li = h("li", { "data-key-for": "rl-phase" }, [sw, h("span", { text: "phase mod 2π (top map)" })]);
  return h("ul", { class: "rl-key" }, [li]);
}

function render({ model, el }) {
  const names = ["rule", "factor", "head_dim", "base", "train_length", "dtype"];
  return makeLab({
    model, el, cls: "ropegeo-angle-lab", title: "Angle heatmap: every pair's phase at every position",
    controls: [
      { name: "rule", label: "extension rule", kind: "select", options: ANGLE_RULES.map((x) => [x, RULE_TEXT[x]]), format: () => "" },
      { name: "factor", label: "factor s", kind: "range", min: 1, max: MAX_ANGLE_FACTOR, step: 0.5, format: (v) => `×${fmtNum(v)}` },
      { name: "head_dim", label: "head dim d", kind: "select", options: ANGLE_HEAD_DIMS.map((x) => [x, String(x)]), unit: "coords" },
      { name: "base", label: "base B (log₁₀)", kind: "log", min: 2, max: 7, step: 0.01, format: (v) => fmtNum(v, 6) },
      { name: "train_length", label: "train length", kind: "select", options: ANGLE_TRAIN.map((x) => [x, x.toLocaleString("en")]), unit: "tokens" },
      { name: "dtype", label: "angle dtype", kind: "select", options: ANGLE_DTYPES.map((x) => [x, x]), format: () => "" },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute, draw,
  });
}

export default { render };
