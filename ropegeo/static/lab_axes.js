// The 2D kernel lab (the axes of a head): one bank theta_i = B^(-2i/d) split between two position
// axes x and y, and K(dx, dy) = mean_i cos(dx fx_i + dy fy_i) over a patch grid of offsets
// -G..G on each axis, with its near-returns (offsets other than (0, 0) where K exceeds a
// threshold) marked. The numbers are those of ropegeo.widgets.axes_lab.reference.

export const MAX_LAB_HEAD_DIM = 256;
export const MAX_LAB_GRID = 64;
const LEVELS = 20; // colour levels of the heatmap, 0.1 wide in K
const SPLIT_TEXT = { blocked: "blocked (x: first half)", interleaved: "interleaved (alternate)",
  share: "x share (slider)", mixed: "mixed (2D directions)" };

export function compute(p) {
  const head_dim = 2 * clampInt(p.head_dim / 2, 1, MAX_LAB_HEAD_DIM / 2, 8);
  const base = clampNum(p.base, 10, 1e7, 100);
  const split = pick(p.split, SPLITS, "blocked");
  const x_share = clampNum(p.x_share, 0, 1, 0.5);
  const grid = clampInt(p.grid, 1, MAX_LAB_GRID, 32);
  const threshold = clampNum(p.threshold, 0, 0.99, 0.9);
  const top = clampInt(p.top, 1, 20, 5);
  const state = { head_dim, base, split, x_share, grid, threshold, top };
  const { fx, fy } = axisFrequencies(head_dim, base, split, x_share);
  const values = kernelGrid(fx, fy, grid);
  const found = gridNearReturns(values, grid, threshold, top);
  const n = 2 * grid + 1;
  const kx = values.slice(grid * n, grid * n + n); // K(dx, 0)
  const ky = Float64Array.from({ length: n }, (_, r) => values[r * n + grid]); // K(0, dy)
  let sum = 0;
  for (const v of values) sum += v;
  let x_pairs = 0, y_pairs = 0;
  for (let i = 0; i < fx.length; i++) { if (fx[i] !== 0) x_pairs++; if (fy[i] !== 0) y_pairs++; }
  return { state, pairs: fx.length, x_pairs, y_pairs, count: found.count, cells: n * n - 1, top: found.top,
    kx, ky, sum, _values: values };
}

/** Colour of a K value in [-1, 1]: blue through white to red. */
function colour(k) {
  const t = Math.max(-1, Math.min(1, k));
  const [r, g, b] = t >= 0 ? [215, 25, 28] : [44, 123, 182];
  const a = Math.abs(t), mix = (c) => Math.round(255 + (c - 255) * a);
  return `rgb(${mix(r)},${mix(g)},${mix(b)})`;
}
const level = (k) => Math.max(0, Math.min(LEVELS - 1, Math.floor(((k + 1) / 2) * LEVELS)));

function heatmap(r) {
  const G = r.state.grid, n = 2 * G + 1, w = CHART_W; // the lab's drawing width (labs_ui.js)
  const left = 52, side = Math.max(120, Math.min(380, w - left - 76));
  const c = chart({ w, h: side + 54, xr: [-G - 0.5, G + 0.5], yr: [-G - 0.5, G + 0.5], left, right: w - left - side,
    xlabel: "Δx (patches)", ylabel: "Δy (patches)", title: "K(Δx, Δy); outlined: K above the threshold",
    label: "the 2D kernel K over the patch grid" });
  // one path per colour level; runs of equal level along a row are one rectangle
  const paths = Array.from({ length: LEVELS }, () => []);
  const x0 = (dx) => c.X(dx - 0.5), yTop = (dy) => c.Y(dy + 0.5);
  for (let row = 0; row < n; row++) {
    const dy = row - G, y = yTop(dy).toFixed(2), hh = (c.Y(dy - 0.5) - yTop(dy)).toFixed(2);
    let start = 0;
    for (let col = 1; col <= n; col++) {
      const lv = level(r._values[row * n + start]);
      if (col < n && level(r._values[row * n + col]) === lv) continue;
      const xa = x0(start - G), wd = (x0(col - G) - xa).toFixed(2);
      paths[lv].push(`M${xa.toFixed(2)},${y}h${wd}v${hh}h-${wd}z`);
      start = col;
    }
  }
  paths.forEach((d, lv) => {
    if (d.length) c.add(s("path", { d: d.join(""), fill: colour(-1 + (2 * lv + 1) / LEVELS), class: "rl-heat",
      "shape-rendering": "crispEdges" }));
  });
  // the near-returns: each cell above the threshold outlined (one path)
  const marks = [];
  const cw = Math.abs(c.X(1) - c.X(0)), inset = Math.min(1, cw / 4);
  for (let row = 0; row < n; row++) {
    for (let col = 0; col < n; col++) {
      const dx = col - G, dy = row - G;
      if ((dx || dy) && r._values[row * n + col] > r.state.threshold) {
        const xa = x0(dx) + inset, ya = yTop(dy) + inset, e = (cw - 2 * inset).toFixed(2);
        marks.push(`M${xa.toFixed(2)},${ya.toFixed(2)}h${e}v${e}h-${e}z`);
      }
    }
  }
  if (marks.length) c.add(s("path", { d: marks.join(""), fill: "none", stroke: "#111", "stroke-width": 1, class: "rl-near" }));
  for (const b of r.top) c.dot(b.dx, b.dy, "rl-mark", Math.max(1.5, Math.min(3.5, cw / 3)));
  // the colour bar, right of the frame
  const bx = c.left + c.pw + 12;
  for (let lv = 0; lv < LEVELS; lv++) {
    const y1 = c.top + (c.ph * (LEVELS - 1 - lv)) / LEVELS;
    c.add(s("rect", { x: bx, y: y1.toFixed(2), width: 12, height: (c.ph / LEVELS + 0.5).toFixed(2),
      fill: colour(-1 + (2 * lv + 1) / LEVELS) }));
  }
  for (const [v, text] of [[1, "1"], [0, "0"], [-1, "−1"]]) {
    const y = c.top + (c.ph * (1 - v)) / 2;
    c.add(s("text", { x: bx + 16, y: Math.max(c.top + 8, Math.min(c.top + c.ph, y + 4)), class: "rl-tlabel" }, text));
  }
  c.add(s("text", { x: bx + 16, y: c.top + c.ph / 2 - 18, class: "rl-tlabel" }, "K"));
  return c.svg;
}

function slices(r) {
  const G = r.state.grid;
  const offs = Array.from({ length: 2 * G + 1 }, (_, k) => k - G);
  let lowest = 0;
  for (const v of [...r.kx, ...r.ky]) lowest = Math.min(lowest, v);
  const c = chart({ xr: [-G, Math.max(G, -G + 1)], yr: [Math.max(-1.05, lowest - 0.05), 1.05], xlabel: "offset along the axis (patches)",
    ylabel: "K", title: "along each axis: blue K(Δx, 0), orange K(0, Δy)", label: "the kernel along each axis" });
  c.hline(r.state.threshold, "rl-target", `threshold ${r.state.threshold}`);
  c.line(offs, r.kx, "rl-exact");
  c.line(offs, r.ky, "rl-dtype");
  return c.svg;
}

function draw(r, parts) {
  const st = r.state, P = r.pairs;
  const how = st.split === "mixed"
    ? `every pair turns with both axes, along the direction φᵢ = i × 137.5° (the golden angle): fxᵢ = θᵢ cos φᵢ, fyᵢ = θᵢ sin φᵢ`
    : `x turns ${r.x_pairs} of the ${P} pairs, y turns ${r.y_pairs} (${st.split === "interleaved" ? "even pairs to x, odd to y"
      : "the fastest pairs to x, the slowest to y"})`;
  const lines = [
    `K(Δx, Δy) = mean over ${P} pairs of cos(Δx·fxᵢ + Δy·fyᵢ), θᵢ = B^(−2i/d); ${how}`,
    `near-returns (K > ${st.threshold}, other than (0, 0)): ${r.count.toLocaleString("en")} of the ${r.cells.toLocaleString("en")} offsets in the grid`,
  ];
  if (r.x_pairs === 0) lines.push("x turns no pair: K does not change along Δx, every (Δx, 0) returns to K = 1");
  if (r.y_pairs === 0) lines.push("y turns no pair: K does not change along Δy, every (0, Δy) returns to K = 1");
  paint(parts, [heatmap(r), slices(r)], lines, [
    table(["Δx", "Δy", "K", `above ${st.threshold}`], r.top.map((b) => [b.dx, b.dy, b.k.toFixed(6), b.k > st.threshold ? "yes" : "no"]),
      "largest K off the origin (one of each ± pair, as K(−Δ) = K(Δ))"),
  ]);
}

function render({ model, el }) {
  const names = ["head_dim", "base", "split", "x_share", "grid", "threshold", "top"];
  return makeLab({
    model, el, cls: "ropegeo-axes-lab", title: "2D kernel lab: K(Δx, Δy) over a patch grid",
    controls: [
      { name: "head_dim", label: "head dim d", kind: "range", min: 2, max: MAX_LAB_HEAD_DIM, step: 2, unit: "coords" },
      { name: "base", label: "base B (log₁₀)", kind: "log", min: 1, max: 7, step: 0.01, format: (v) => fmtNum(v, 6) },
      { name: "split", label: "split of the pairs", kind: "select", options: SPLITS.map((x) => [x, SPLIT_TEXT[x]]), format: () => "" },
      { name: "x_share", label: "x share of pairs", kind: "range", min: 0, max: 1, step: 0.05,
        format: (v, r) => `${r.x_pairs} of ${r.pairs}`, off: (r) => (r.state.split === "share" ? null : "used with the x-share split only") },
      { name: "grid", label: "grid half-width G", kind: "range", min: 1, max: MAX_LAB_GRID, step: 1, unit: "patches" },
      { name: "threshold", label: "near-return threshold", kind: "range", min: 0, max: 0.99, step: 0.01, format: (v) => `K > ${v}` },
      { name: "top", label: "offsets listed", kind: "range", min: 1, max: 20, step: 1 },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute, draw,
  });
}

export default { render };
