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
  // interpolation squeezes a longer target into training; a target within training is left alone
  const scale = interpolate ? Math.min(1.0, train_length / target_length) : 1.0;
  const raised = clampInt(p.offset_stop, 0, MAX_LAB_OFFSET, offset_start) < offset_start; // last below first: raised
  const top = clampInt(p.top, 1, 20, 5);
  const theta = frequencies(head_dim, base);
  const values = kernelRange(theta, offset_start, offset_stop, { scale });
  const best = topOffsets(values, offset_start, Math.min(top, values.length));
  const width = returnWidth(theta, scale, values.length);
  const returns = distinctReturns(values, offset_start, Math.min(top, values.length), width);
  const n = values.length, ns = Math.min(N_SAMPLES, n), samples = [];
  for (let q = 0; q < ns; q++) {
    const k = ns === 1 ? 0 : Math.round((q * (n - 1)) / (ns - 1));
    samples.push({ offset: offset_start + k, k: values[k] });
  }
  const state = { head_dim, base, offset_start, offset_stop, interpolate, train_length, target_length, top };
  return { state, ...state, clipped, raised, scale, top: best, returns, return_width: width, samples, _values: values };
}

/** Half the window within which one return is listed once: the fastest pair's wavelength in offsets,
 * ceil(2 pi / (s theta_0)), or 1% of the range, whichever is wider (at most the range), so that
 * neighbours on one peak are not listed twice. */
export function returnWidth(theta, scale, n) {
  return Math.max(1, Math.min(n, Math.max(Math.ceil(TWO_PI / (scale * theta[0])), Math.ceil(n / 100))));
}

/** ropegeo.book.widgets.kernel_lab.distinct_returns: the `top` offsets with the largest K among those
 * whose K is the largest within `width` offsets either side (ties: the smaller offset). */
export function distinctReturns(values, start, top, width) {
  const n = values.length, L = 2 * width + 1, pad = new Float64Array(n + 2 * width).fill(-Infinity);
  pad.set(values, width);
  let cur = pad.slice(), span = 1; // cur[i]: the largest of pad[i .. i + span - 1]
  while (2 * span <= L) {
    for (let i = 0; i + span < cur.length; i++) cur[i] = Math.max(cur[i], cur[i + span]);
    span *= 2;
  }
  const peaks = [];
  let last = -Infinity;
  for (let k = 0; k < n; k++) {
    const m = Math.max(cur[k], cur[k + L - span]); // the largest over offsets k - width .. k + width
    if (values[k] >= m && !(k - last <= width && values[last] === values[k])) { peaks.push(k); last = k; }
  }
  peaks.sort((a, b) => values[b] - values[a] || a - b);
  return peaks.slice(0, top).map((k) => ({ offset: start + k, similarity: Math.min(1.0, values[k]) }));
}

function draw(r, parts) {
  const one = r.offset_stop === r.offset_start; // one offset: whole-number ticks around it
  const c = chart({ xr: one ? [r.offset_start - 1, r.offset_stop + 1] : [r.offset_start, r.offset_stop], yr: [-1, 1], xint: true,
    xlabel: "offset Δ (tokens)", ylabel: "K(Δ)", title: "K(Δ) over the offset range; red dots: the returns listed below",
    label: "the kernel K(Δ) over the offset range" });
  if (one) c.dot(r.offset_start, r._values[0], "rl-exact-dot", 2);
  else c.envelope(r.offset_start, r.offset_stop, r._values, "rl-exact");
  for (const b of r.returns) c.dot(b.offset, b.similarity, "rl-mark", 3.5);
  const st = r.state;
  const marks = key([["rl-mark", "a return, listed in the table below"], ...(one ? [["rl-exact-dot", "K at the one offset"]] : [])]);
  paint(parts, [c.svg, marks], [
    `K(Δ) = mean over ${r.head_dim / 2} pairs of cos(Δ·s·θᵢ), θᵢ = B^(−2i/d), s = ${r.scale.toPrecision(4)}` +
      (st.interpolate && st.target_length <= st.train_length
        ? ` (the target, ${fmtNum(st.target_length)}, is within training, ${fmtNum(st.train_length)}: nothing to interpolate)` : "") +
      (r.clipped ? ` — range clipped to ${MAX_SPAN.toLocaleString("en")} offsets`
        : r.offset_stop - r.offset_start + 1 === MAX_SPAN ? ` — range at its limit of ${MAX_SPAN.toLocaleString("en")} offsets` : ""),
    ...(r.raised ? [`the last offset was below the first: it is raised to the first, ${fmtNum(r.offset_start)}, so the range is one offset`] : []),
    `returns: each the most identity-like offset within ${plural(r.return_width, "offset")} either side (a fastest ` +
      "wavelength or 1% of the range, whichever is wider), so two neighbours on one peak are listed once",
  ], [table(["most identity-like Δ (tokens)", "K(Δ)"], r.returns.map((b) => [b.offset.toLocaleString("en"), b.similarity.toFixed(6)]),
    null, "rl-mark")]);
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
