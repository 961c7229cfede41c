// The 2D kernel lab (the axes of a head): one bank theta_i = B^(-2i/d) split between two position
// axes x and y, and K(dx, dy) = mean_i cos(dx fx_i + dy fy_i) over a patch grid of offsets
// -G..G on each axis, with its near-returns (offsets other than (0, 0) where K exceeds a
// threshold) marked. The numbers are those of ropegeo.book.widgets.axes_lab.reference.

export const MAX_LAB_HEAD_DIM = 256;
export const MAX_LAB_GRID = 64;
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

/** Colour of a K value in [-1, 1]: blue through white to red; a near-return is drawn black. */
const NEAR_RGB = [17, 17, 17], RED = [215, 25, 28], BLUE = [44, 123, 182];
function rgb(k) {
  const a = Math.min(1, Math.abs(k)), end = k >= 0 ? RED : BLUE;
  return end.map((c) => Math.round(255 + (c - 255) * a));
}
const css = ([r, g, b]) => `rgb(${r},${g},${b})`;

// ------------------------------------------------------------------ a PNG, without a canvas
const CRC_TABLE = (() => {
  const tab = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    tab[n] = c >>> 0;
  }
  return tab;
})();
function crc32(bytes, from, to) {
  let c = 0xffffffff;
  for (let k = from; k < to; k++) c = CRC_TABLE[(c ^ bytes[k]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
/** An RGB image (rows top first, 3 bytes a pixel) as the bytes of a PNG: zlib with stored (not
 * compressed) blocks, so that the page and the static preview build it the same way in a few
 * milliseconds. */
export function pngBytes(width, height, pixels) {
  const rowLen = 3 * width + 1, raw = new Uint8Array(height * rowLen);
  for (let y = 0; y < height; y++) raw.set(pixels.subarray(3 * width * y, 3 * width * (y + 1)), y * rowLen + 1);
  const blocks = Math.max(1, Math.ceil(raw.length / 65535));
  const zlen = 2 + raw.length + 5 * blocks + 4;
  const out = new Uint8Array(8 + 25 + 12 + zlen + 12);
  const view = new DataView(out.buffer);
  out.set([137, 80, 78, 71, 13, 10, 26, 10]);
  let at = 8;
  const chunk = (type, length, fill) => {
    view.setUint32(at, length);
    for (let k = 0; k < 4; k++) out[at + 4 + k] = type.charCodeAt(k);
    fill(at + 8);
    view.setUint32(at + 8 + length, crc32(out, at + 4, at + 8 + length));
    at += 12 + length;
  };
  chunk("IHDR", 13, (o) => { view.setUint32(o, width); view.setUint32(o + 4, height); out.set([8, 2, 0, 0, 0], o + 8); });
  chunk("IDAT", zlen, (o) => {
    out[o] = 0x78; out[o + 1] = 0x01;
    let p = o + 2, a = 1, b = 0;
    for (let k = 0; k < blocks; k++) {
      const from = k * 65535, len = Math.min(65535, raw.length - from);
      out[p] = k === blocks - 1 ? 1 : 0;
      view.setUint16(p + 1, len, true);
      view.setUint16(p + 3, len ^ 0xffff, true);
      out.set(raw.subarray(from, from + len), p + 5);
      p += 5 + len;
    }
    for (let from = 0; from < raw.length; from += 5552) { // the largest run with no overflow before the modulo
      for (let k = from, to = Math.min(raw.length, from + 5552); k < to; k++) { a += raw[k]; b += a; }
      a %= 65521; b %= 65521;
    }
    view.setUint32(p, ((b << 16) | a) >>> 0);
  });
  chunk("IEND", 0, () => {});
  return out;
}
/** The PNG as a data URI (the static preview keeps the image in the page). */
export function pngDataUri(width, height, pixels) {
  const out = pngBytes(width, height, pixels);
  let bin = "";
  for (let k = 0; k < out.length; k += 8192) bin += String.fromCharCode.apply(null, out.subarray(k, k + 8192));
  return `data:image/png;base64,${btoa(bin)}`;
}
/** The PNG's address: in a browser a blob URL (no base64 to encode and parse on every update; the
 * lab's previous one is released), in the static preview a data URI. */
function pngUrl(parts, width, height, pixels) {
  if (typeof window === "undefined" || typeof URL.createObjectURL !== "function") return pngDataUri(width, height, pixels);
  if (parts.pngUrl) URL.revokeObjectURL(parts.pngUrl);
  parts.pngUrl = URL.createObjectURL(new Blob([pngBytes(width, height, pixels)], { type: "image/png" }));
  return parts.pngUrl;
}

function heatmap(r, parts) {
  const G = r.state.grid, n = 2 * G + 1, w = CHART_W; // the lab's drawing width (labs_ui.js)
  const left = 52, side = Math.max(120, Math.min(380, w - left - 76));
  const c = chart({ w, h: side + 54, xr: [-G - 0.5, G + 0.5], yr: [-G - 0.5, G + 0.5], left, right: w - left - side, xint: true, yint: true,
    xlabel: "Δx (patches)", ylabel: "Δy (patches)", title: "K(Δx, Δy); black: a near-return (K above the threshold)",
    label: "the 2D kernel K over the patch grid" });
  // one pixel per offset, top row dy = G; the browser scales it up without smoothing
  const px = new Uint8Array(3 * n * n);
  for (let row = 0; row < n; row++) {
    const src = (n - 1 - row) * n; // values: row dy + G
    for (let col = 0; col < n; col++) {
      const k = r._values[src + col];
      const o = 3 * (row * n + col);
      if (k > r.state.threshold && !(col === G && row === G)) px.fill(NEAR_RGB[0], o, o + 3);
      else {
        const a = Math.min(1, Math.abs(k)), end = k >= 0 ? RED : BLUE;
        px[o] = Math.round(255 + (end[0] - 255) * a);
        px[o + 1] = Math.round(255 + (end[1] - 255) * a);
        px[o + 2] = Math.round(255 + (end[2] - 255) * a);
      }
    }
  }
  const x0 = c.X(-G - 0.5), y0 = c.Y(G + 0.5);
  c.add(s("image", { x: x0.toFixed(2), y: y0.toFixed(2), width: (c.X(G + 0.5) - x0).toFixed(2),
    height: (c.Y(-G - 0.5) - y0).toFixed(2), preserveAspectRatio: "none", href: pngUrl(parts, n, n, px),
    class: "rl-heat", style: "image-rendering: pixelated", "aria-hidden": "true" }));
  const cw = Math.abs(c.X(1) - c.X(0));
  for (const b of r.top) c.dot(b.dx, b.dy, "rl-mark", Math.max(1.5, Math.min(3.5, cw / 3)));
  // the colour bar, right of the frame: K from -1 to 1, black above the threshold
  const bx = c.left + c.pw + 12, steps = 40;
  for (let j = 0; j < steps; j++) {
    const k = -1 + (2 * j + 1) / steps, y1 = c.top + (c.ph * (steps - 1 - j)) / steps;
    c.add(s("rect", { x: bx, y: y1.toFixed(2), width: 12, height: (c.ph / steps + 0.5).toFixed(2),
      fill: css(k > r.state.threshold ? NEAR_RGB : rgb(k)) }));
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
  const c = chart({ xr: [-G, Math.max(G, -G + 1)], xint: true, yr: [Math.max(-1.05, lowest - 0.05), 1.05], xlabel: "offset along the axis (patches)",
    ylabel: "K", title: "along each axis: blue K(Δx, 0), orange K(0, Δy)", label: "the kernel along each axis" });
  c.hline(r.state.threshold, "rl-target", `threshold ${r.state.threshold}`);
  c.line(offs, r.kx, "rl-exact");
  c.line(offs, r.ky, "rl-dtype");
  return c.svg;
}

/** How the split shares the pairs between the axes (the pairs turning with both: x and y counted). */
export function splitText(r) {
  const st = r.state, P = r.pairs;
  const both = r.x_pairs + r.y_pairs - P; // every pair turns with at least one axis
  return st.split === "mixed"
    ? `${both === P ? "every pair turns" : `${both} of the ${P} ${P === 1 ? "pair turns" : "pairs turn"}`} with both axes` +
      `${both < P ? ` (pair 0, at φ = 0, turns with x alone)` : ""}, along the direction φᵢ = i × 137.5° (the golden angle): ` +
      "fxᵢ = θᵢ cos φᵢ, fyᵢ = θᵢ sin φᵢ"
    : `x turns ${r.x_pairs} of the ${P} pairs, y turns ${r.y_pairs} (${st.split === "interleaved" ? "even pairs to x, odd to y"
      : "the fastest pairs to x, the slowest to y"})`;
}

function draw(r, parts) {
  const st = r.state, P = r.pairs;
  const how = splitText(r);
  const lines = [
    `K(Δx, Δy) = mean over ${P} pairs of cos(Δx·fxᵢ + Δy·fyᵢ), θᵢ = B^(−2i/d); ${how}`,
    `near-returns (K > ${st.threshold}, other than (0, 0)): ${r.count.toLocaleString("en")} of the ${r.cells.toLocaleString("en")} offsets in the grid`,
  ];
  if (r.x_pairs === 0) lines.push("x turns no pair: K does not change along Δx, every (Δx, 0) returns to K = 1");
  if (r.y_pairs === 0) lines.push("y turns no pair: K does not change along Δy, every (0, Δy) returns to K = 1");
  const marks = key([["rl-mark", `the ${plural(r.top.length, "offset")} with the largest K off the origin, listed below`]]);
  paint(parts, [heatmap(r, parts), marks, slices(r)], lines, [
    table(["Δx", "Δy", "K", `above ${st.threshold}`], r.top.map((b) => [b.dx, b.dy, b.k.toFixed(6), b.k > st.threshold ? "yes" : "no"]),
      "largest K off the origin (one of each ± pair, as K(−Δ) = K(Δ))", "rl-mark"),
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
