// The kernel lab (chapter 3): K(delta) = sum_i w_i cos(delta s theta_i) of a frequency bank over an
// offset range, and the most identity-like offsets in it (ropegeo.geometry.near_collisions), with
// optional position interpolation s = train / target. At most MAX_SPAN offsets per update.

export const MAX_SPAN = 200000;
export const MAX_LAB_HEAD_DIM = 256;
export const MAX_LAB_OFFSET = 100000000;
const N_SAMPLES = 16;

export function compute(p) {
  const head_dim = 2 * clampInt(p.head_dim / 2, 1, MAX_LAB_HEAD_DIM / 2, 4);
  let base = Number(p.base);
  if (!(base > 1) || !Number.isFinite(base)) base = 10000;
  const offset_start = clampInt(p.offset_start, 0, MAX_LAB_OFFSET, 1);
  let offset_stop = clampInt(p.offset_stop, offset_start, MAX_LAB_OFFSET, offset_start);
  const clipped = offset_stop - offset_start + 1 > MAX_SPAN;
  if (clipped) offset_stop = offset_start + MAX_SPAN - 1;
  const train_length = clampInt(p.train_length, 1, MAX_LAB_OFFSET, 4096);
  const target_length = clampInt(p.target_length, 1, MAX_LAB_OFFSET, 16384);
  const interpolate = !!p.interpolate;
  const scale = interpolate ? train_length / target_length : 1.0;
  const top = clampInt(p.top, 1, 20, 5);
  const theta = frequencies(head_dim, base);
  const values = kernelRange(theta, offset_start, offset_stop, { scale });
  const best = topOffsets(values, offset_start, Math.min(top, values.length));
  const n = values.length, ns = Math.min(N_SAMPLES, n), samples = [];
  for (let q = 0; q < ns; q++) {
    const k = ns === 1 ? 0 : Math.round((q * (n - 1)) / (ns - 1));
    samples.push({ offset: offset_start + k, k: values[k] });
  }
  const state = { head_dim, base, offset_start, offset_stop, interpolate, train_length, target_length, top };
  return { state, ...state, clipped, scale, top: best, samples, _values: values };
}

function draw(r, parts) {
  const c = chart({ xr: [r.offset_start, Math.max(r.offset_stop, r.offset_start + 1)], yr: [-1, 1],
    xlabel: "offset Δ (tokens)", ylabel: "K(Δ)", title: "K(Δ) over the offset range; red: most identity-like",
    label: "the kernel K(Δ) over the offset range" });
  c.envelope(r.offset_start, r.offset_stop, r._values, "rl-exact");
  for (const b of r.top) c.dot(b.offset, b.similarity, "rl-mark", 3.5);
  paint(parts, [c.svg], [
    `K(Δ) = mean over ${r.head_dim / 2} pairs of cos(Δ·s·θᵢ), θᵢ = B^(−2i/d), s = ${r.scale.toPrecision(4)}` +
      (r.clipped ? ` — range clipped to ${MAX_SPAN.toLocaleString("en")} offsets`
        : r.offset_stop - r.offset_start + 1 === MAX_SPAN ? ` — range at its limit of ${MAX_SPAN.toLocaleString("en")} offsets` : ""),
  ], [table(["most identity-like Δ (tokens)", "K(Δ)"], r.top.map((b) => [b.offset.toLocaleString("en"), b.similarity.toFixed(6)]))]);
}

function render({ model, el }) {
  const names = ["head_dim", "base", "offset_start", "offset_stop", "interpolate", "train_length", "target_length", "top"];
  return makeLab({
    model, el, cls: "ropegeo-kernel-lab", title: "Kernel lab: K(Δ) and its near-returns",
    controls: [
      { name: "head_dim", label: "head dim d", kind: "range", min: 2, max: MAX_LAB_HEAD_DIM, step: 2, unit: "coords" },
      { name: "base", label: "base B (log₁₀)", kind: "log", min: 1, max: 7, step: 0.01, format: (v) => fmtNum(v, 6) },
      { name: "offset_start", label: "first offset Δ", kind: "number", min: 0, max: MAX_LAB_OFFSET, unit: "tokens" },
      { name: "offset_stop", label: "last offset Δ", kind: "number", min: 0, max: MAX_LAB_OFFSET, unit: "tokens" },
      { name: "interpolate", label: "interpolate positions", kind: "checkbox", format: (v, r) => `s = ${r.scale.toPrecision(4)}` },
      { name: "train_length", label: "train length", kind: "number", min: 1, max: MAX_LAB_OFFSET, unit: "tokens",
        off: (r) => (r.interpolate ? null : "used with interpolation only") },
      { name: "target_length", label: "target length", kind: "number", min: 1, max: MAX_LAB_OFFSET, unit: "tokens",
        off: (r) => (r.interpolate ? null : "used with interpolation only") },
      { name: "top", label: "offsets listed", kind: "range", min: 1, max: 20, step: 1 },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute, draw,
  });
}

export default { render };
