// The attention-score heatmap (chapter 3): for a query and key content defined by formula, the
// causal matrix of scores <R_m q, R_n k> = q^T R(n - m) k over query positions m (rows, upward)
// and key positions n <= m (columns). With RoPE every diagonal n - m = const holds one value, so
// the picture is made of stripes parallel to the diagonal; an offset whose rotation nearly returns
// to the identity shows as a stripe as bright as the diagonal itself. Without a position encoding
// the matrix is flat. A scaling rule changes the frequencies; angles formed in a low precision
// break the stripes apart far from the origin. At most G x G cells, G = MAX_ATTN_GRID or fewer for a
// wide head (the causal matrix takes at most MAX_ATTN_PRODUCTS multiply-adds, G^2 d / 2): a longer
// span is sampled every ceil(span / G) positions. Numbers: ropegeo.rotation.apply_rope
// and ropegeo.geometry.near_collisions (ropegeo/book/widgets/attention_lab.py).

export const MAX_ATTN_SPAN = 16384;
export const MAX_ATTN_GRID = 256;
export const MAX_ATTN_HEAD_DIM = 128;
export const MAX_LAB_FACTOR = 64;
export const MAX_ATTN_PRODUCTS = 1048576;
const MAX_SEED = 99;
const TOP = 3;
const LEVELS = 17; // colour levels from -B to +B
const ATTN_RULES = ["none", "linear", "ntk", "yarn", "llama3"];
const ATTN_DTYPES = ["float64", "float32", "float16", "bfloat16"];

/** Cells per side of the heatmap for a head width: the matrix's G^2 d / 2 multiply-adds stay within MAX_ATTN_PRODUCTS. */
export function gridSide(headDim) {
  return Math.min(MAX_ATTN_GRID, Math.floor(Math.sqrt((2 * MAX_ATTN_PRODUCTS) / headDim)));
}

export function compute(p) {
  const content = pick(p.content, ATTENTION_CONTENTS, "equal");
  const seed = clampInt(p.seed, 0, MAX_SEED, 0);
  const encoding = pick(p.encoding, ["rope", "none"], "rope");
  const head_dim = 2 * clampInt(p.head_dim / 2, 2, MAX_ATTN_HEAD_DIM / 2, 4);
  const base = Number(clampNum(p.base, 2, 1e7, 10000).toPrecision(6));
  const span = 16 * clampInt(p.span / 16, 1, MAX_ATTN_SPAN / 16, 8);
  const dtype = pick(p.dtype, ATTN_DTYPES, "float64");
  const rule = pick(p.rule, ATTN_RULES, "none");
  const factor = clampInt(p.factor, 1, MAX_LAB_FACTOR, 4);
  const train_length = 16 * clampInt(p.train_length / 16, 1, MAX_ATTN_SPAN / 16, 4);
  const state = { content, seed, encoding, head_dim, base, span, dtype, rule, factor, train_length };
  const rope = encoding === "rope";
  const scaling = rope && rule !== "none" ? preset(rule, train_length, train_length * factor) : null;
  const { theta, attention_factor } = scaledFrequencies(scaling, head_dim, base);
  const cells = gridSide(head_dim), stride = Math.ceil(span / cells), grid = Math.ceil(span / stride);
  const positions = Array.from({ length: grid }, (_, j) => j * stride);
  const { q, k } = attentionContent(content, head_dim, seed);
  const amplitudes = pairAmplitudes(q, k);
  const gain = rope ? attention_factor * attention_factor : 1.0;
  const scores = attentionScores(q, k, positions, theta, { dtype: rope ? dtype : "float64", rope, gain });
  let bound = 0;
  for (const a of amplitudes) bound += a;
  bound *= gain;
  // how far the matrix is from depending on m - n alone: the largest spread along one diagonal
  // (measured with angles in a low precision; exact angles give the relative form, one value per diagonal)
  let spread = rope && dtype !== "float64" ? 0 : null;
  for (let d = 0; spread !== null && d < grid; d++) {
    let lo = Infinity, hi = -Infinity;
    for (let a = d; a < grid; a++) { const v = scores[a * grid + a - d]; if (v < lo) lo = v; if (v > hi) hi = v; }
    spread = Math.max(spread, hi - lo);
  }
  // the most identity-like offsets past the main lobe: from the first offset where this content's
  // kernel K_w(delta) = sum_i w_i cos(delta theta_i), w_i ~ |q_i||k_i|, reaches 0
  let returns = [], from = null;
  if (rope) {
    const values = kernelRange(theta, 1, span - 1, { weights: amplitudes });
    const first = values.findIndex((x) => x <= 0);
    if (first >= 0) {
      from = first + 1;
      returns = topOffsets(values.subarray(first), from, Math.min(TOP, values.length - first));
    }
  }
  const aliased = stride > 1 ? Array.from(theta).filter((t, i) => amplitudes[i] > 0 && TWO_PI / t < 2 * stride).length : 0;
  const samples = [];
  for (const a of new Set([0, Math.floor(grid / 4), Math.floor(grid / 2), Math.floor((3 * grid) / 4), grid - 1])) {
    for (const b of new Set([0, Math.floor(a / 2), a])) samples.push({ m: positions[a], n: positions[b], score: scores[a * grid + b] });
  }
  return { state, stride, grid, theta: Array.from(theta), attention_factor, gain, q: Array.from(q), k: Array.from(k),
    bound, spread, returns, returns_from: from, aliased, samples, _scores: scores };
}

// blue (-1) through white (0) to red (+1); index LEVELS: the empty upper triangle (light grey)
const PALETTE = [...Array.from({ length: LEVELS }, (_, level) => {
  const t = (2 * level) / (LEVELS - 1) - 1, rgb = t < 0 ? [33, 102, 172] : [178, 24, 43];
  return rgb.map((c) => Math.round(c + (255 - c) * (1 - Math.abs(t))));
}), [246, 246, 246]];

/** An 8-bit paletted BMP of g x g pixels (row 0 at the bottom), as a data URL: the heatmap is one
 * image, whatever the number of cells, and needs no canvas (the build-time preview draws it too). */
function bmpURL(g, pixels) {
  const row = (g + 3) & ~3, offset = 54 + 4 * PALETTE.length, size = offset + row * g;
  const buf = new Uint8Array(size), dv = new DataView(buf.buffer);
  buf[0] = 0x42; buf[1] = 0x4d;
  dv.setUint32(2, size, true); dv.setUint32(10, offset, true); dv.setUint32(14, 40, true);
  dv.setInt32(18, g, true); dv.setInt32(22, g, true); dv.setUint16(26, 1, true); dv.setUint16(28, 8, true);
  dv.setUint32(34, row * g, true); dv.setUint32(38, 2835, true); dv.setUint32(42, 2835, true);
  dv.setUint32(46, PALETTE.length, true);
  PALETTE.forEach(([r, gr, b], j) => { buf[54 + 4 * j] = b; buf[55 + 4 * j] = gr; buf[56 + 4 * j] = r; });
  for (let a = 0; a < g; a++) buf.set(pixels.subarray(a * g, a * g + g), offset + a * row);
  let text = "";
  for (let j = 0; j < size; j += 0x8000) text += String.fromCharCode.apply(null, buf.subarray(j, j + 0x8000));
  return `data:image/bmp;base64,${btoa(text)}`;
}

function heatmap(r) {
  const st = r.state, g = r.grid, top = g * r.stride;
  const width = Math.min(CHART_W, 480);
  const c = chart({ w: width, h: width - 30, xr: [0, top], yr: [0, top], xlabel: "key position n (tokens)",
    ylabel: "query position m (tokens)", title: `score ⟨R_m q, R_n k⟩ for n ≤ m (${g} × ${g} cells)`,
    label: "the causal matrix of attention scores" });
  c.svg.setAttribute("style", `max-width: ${width}px`);
  // one pixel per cell, its colour level from -B to +B
  const pixels = new Uint8Array(g * g).fill(LEVELS);
  const scale = r.bound > 0 ? (LEVELS - 1) / (2 * r.bound) : 0;
  for (let j = 0; j < g * g; j++) {
    const v = r._scores[j];
    if (Number.isFinite(v)) pixels[j] = Math.max(0, Math.min(LEVELS - 1, Math.round((v + r.bound) * scale)));
  }
  c.add(s("image", { href: bmpURL(g, pixels), x: c.left, y: c.top, width: c.pw, height: c.ph, preserveAspectRatio: "none",
    class: "rl-heat" }));
  // dashed diagonals: the most identity-like offsets m - n of this content; dotted: the training length
  // the diagonals are named in the key and the readout, never printed over the stripes
  const diagonal = (d, cls) => {
    if (d <= 0 || d >= top) return;
    c.add(s("line", { x1: c.X(0), y1: c.Y(d), x2: c.X(top - d), y2: c.Y(top), class: cls }));
  };
  for (const b of r.returns) diagonal(b.offset, "rl-return");
  if (st.rule !== "none" && st.encoding === "rope") diagonal(st.train_length, "rl-target");
  return c.svg;
}

function draw(r, parts) {
  const st = r.state, rope = st.encoding === "rope";
  const every = r.stride > 1 ? `every ${ordinal(r.stride)} position` : "every position";
  const lines = [
    `query positions m (rows) and key positions n ≤ m (columns) from 0 to ${(st.span - 1).toLocaleString("en")}, ${every}; ` +
      `colour from −B (blue) through 0 (white) to +B (red), B = Σᵢ |qᵢ||kᵢ|${r.gain !== 1 ? "·a²" : ""} = ${fmtNum(r.bound, 4)}`,
  ];
  if (!rope) lines.push(`no position encoding: every score is q·k = ${fmtNum(r.samples[0].score, 6)}, the same at every offset`);
  else {
    lines.push(r.returns.length
      ? `most identity-like offsets m − n past the first zero of this content's kernel K (at ${r.returns_from.toLocaleString("en")}; ` +
        `exact phases, dashed): ` + r.returns.map((b) => `${b.offset.toLocaleString("en")} (K = ${b.similarity.toFixed(3)})`).join(", ")
      : `this content's kernel K stays above 0 over all ${(st.span - 1).toLocaleString("en")} offsets: no return to look for yet`);
    lines.push(r.spread === null ? "exact angles: the score is q·R(n − m)k, one value per diagonal"
      : r.spread > 1e-9 * Math.max(1, r.bound)
        ? `angles in ${st.dtype}: the score no longer depends on m − n alone; along one diagonal it spreads by up to ${fmtNum(r.spread, 3)}`
        : `angles in ${st.dtype}: every diagonal still holds one value here (spread below 1e-9)`);
    if (st.rule !== "none") {
      lines.push(`${st.rule} ×${st.factor} from a training length of ${st.train_length.toLocaleString("en")} tokens (dotted diagonal)` +
        (r.attention_factor !== 1 ? `; attention factor a = ${fmtNum(r.attention_factor, 5)} scales every score by a²` : ""));
    }
    if (r.aliased) lines.push(`${r.aliased} of the content's pairs turn more than half a turn between sampled positions: their part of each cell is aliased`);
  }
  const keyed = [];
  if (rope && r.returns.length) keyed.push(["rl-return", `the offsets ${r.returns.map((b) => b.offset.toLocaleString("en")).join(", ")} (listed below)`, "line"]);
  if (rope && st.rule !== "none") keyed.push(["rl-target", `the training length, ${st.train_length.toLocaleString("en")}`, "line"]);
  paint(parts, [heatmap(r), key(keyed)], lines);
}

function render({ model, el }) {
  const names = ["content", "seed", "encoding", "head_dim", "base", "span", "dtype", "rule", "factor", "train_length"];
  const noRope = (r) => (r.state.encoding === "rope" ? null : "no position encoding");
  const noRule = (r) => noRope(r) || (r.state.rule === "none" ? "used with a scaling rule only" : null);
  return makeLab({
    model, el, cls: "ropegeo-attention-lab", title: "Attention scores: stripes of equal offset, and the offsets that return",
    controls: [
      { name: "content", label: "query and key", kind: "select", format: () => "",
        options: [["equal", "all pairs equal"], ["slow", "slow pairs only"], ["fast", "fast pairs only"], ["varied", "varied (seeded)"]] },
      { name: "seed", label: "seed", kind: "range", min: 0, max: MAX_SEED, step: 1,
        off: (r) => (r.state.content === "varied" ? null : "used with varied content only") },
      { name: "encoding", label: "position encoding", kind: "select", options: [["rope", "RoPE"], ["none", "none"]], format: () => "" },
      { name: "head_dim", label: "head dim d", kind: "range", min: 4, max: MAX_ATTN_HEAD_DIM, step: 2, unit: "coords", off: noRope },
      { name: "base", label: "base B (log₁₀)", kind: "log", min: 0.31, max: 7, step: 0.01, format: (v) => fmtNum(v, 6), off: noRope },
      { name: "span", label: "positions shown (log₁₀)", kind: "log", min: Math.log10(16), max: Math.log10(MAX_ATTN_SPAN), step: 0.01, unit: "tokens" },
      { name: "dtype", label: "angle precision", kind: "select", options: ATTN_DTYPES.map((d) => [d, d]), format: () => "", off: noRope },
      { name: "rule", label: "scaling rule", kind: "select", options: ATTN_RULES.map((x) => [x, x]), format: () => "", off: noRope },
      { name: "factor", label: "factor s", kind: "range", min: 1, max: MAX_LAB_FACTOR, step: 1, format: (v) => `×${v}`, off: noRule },
      { name: "train_length", label: "train length (log₁₀)", kind: "log", min: Math.log10(16), max: Math.log10(MAX_ATTN_SPAN), step: 0.01, unit: "tokens", off: noRule },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute, draw,
  });
}

export default { render };
