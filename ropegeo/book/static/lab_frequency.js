// The frequency lab (chapter 3): head dim, base, training and target lengths, position
// interpolation and the phase dtype; K(Δ) exact and as the dtype computes it, the wavelength ladder,
// slow pairs, the most identity-like offsets beyond training and Gate B for offsets 1-3 at the far
// end of the target context. The numbers are those of ropegeo.book.widgets.frequency_lab.lab_state.

export const KERNEL_POINTS = 1500;
const DRAWN_POINTS = 500;
const N_SAMPLES = 16;

function linspaceRound(top, n) {
  const step = top / (n - 1);
  return Array.from({ length: n }, (_, k) => (k === n - 1 ? top : roundEven(k * step)));
}
function roundEven(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

export function compute(p) {
  const head_dim = 2 * clampInt(p.head_dim / 2, 2, 128, 64);
  const base = clampNum(p.base, 10, 1e7, 10000);
  const train_length = clampInt(p.train_length, 16, 131072, 4096);
  const target_length = clampInt(p.target_length, 16, 131072, 32768);
  const interpolate = !!p.interpolate;
  const dtype = pick(p.dtype, PHASE_DTYPES, "float32");
  const state = { head_dim, base, train_length, target_length, interpolate, dtype };
  const theta = frequencies(head_dim, base);
  const scale = interpolate ? Math.min(1.0, train_length / target_length) : 1.0;
  const T = target_length;
  const values = kernelRange(theta, 0, T, { scale });
  let near = [];
  if (T > train_length) near = topOffsets(values.subarray(train_length), train_length, 3).map((h) => [h.offset, h.similarity]);
  // exact and dtype kernels drawn at the same offsets (at most DRAWN_POINTS of ropegeo's grid, about
  // one per pixel column): two curves sampled alike differ only where the dtype's phases do (the
  // range of the exact kernel over every offset is drawn behind them, in grey)
  const grid = T + 1 <= KERNEL_POINTS ? Array.from({ length: T + 1 }, (_, k) => k) : linspaceRound(T, KERNEL_POINTS);
  const every = Math.max(1, Math.ceil(grid.length / DRAWN_POINTS));
  const offs = grid.filter((_, k) => k % every === 0 || k === grid.length - 1);
  const largest = largestFinite(dtype);
  const kd = kernelInDtype(offs.map((d) => (d > largest ? Infinity : d)), theta, dtype, scale);
  const origin = Math.max(0, T - 4);
  let parser = null;
  if (origin + 3 <= largest) parser = separationMargin([1, 2, 3], theta, { dtype, scale, origin });
  const lam = wavelengths(theta);
  const picks = Array.from({ length: N_SAMPLES }, (_, q) => grid[Math.round((q * (grid.length - 1)) / (N_SAMPLES - 1))]);
  const kdSamples = kernelInDtype(picks.map((d) => (d > largest ? Infinity : d)), theta, dtype, scale);
  const samples = picks.map((o, q) => ({ offset: o, k: values[o], k_dtype: Number.isFinite(kdSamples[q]) ? kdSamples[q] : null }));
  return {
    state, scale, pairs: theta.length, slow_pairs: slowPairs(theta, train_length),
    wavelength_range: [lam[0], lam[lam.length - 1]], near,
    adjacent_distance: differenceDistance([1.0], theta, { scale })[0],
    parser_margin: parser ? parser.margin : null, parser_pair: parser ? parser.pair : null,
    integer_limit: consecutiveIntegerLimit(dtype), largest_finite: largest, samples,
    _values: values, _offs: offs, _kd: kd, _lam: lam, _turns: turns(theta, train_length),
  };
}

/** The readout, line by line (ropegeo.book.widgets.frequency_lab.readout says the same facts). */
export function readoutLines(r) {
  const st = r.state;
  const lines = [
    `${r.pairs} pairs; wavelengths ${fmtNum(r.wavelength_range[0])} to ${fmtNum(r.wavelength_range[1])} tokens`,
    `slow pairs (under one turn in ${st.train_length.toLocaleString("en")} training tokens): ${r.slow_pairs}`,
    `angular step ratio s = ${r.scale.toPrecision(4)}; adjacent distance D(1) = ${r.adjacent_distance.toFixed(4)} (of at most 2)`,
  ];
  if (!r.near.length) lines.push(`no offset beyond training to search: the target (${st.target_length.toLocaleString("en")}) ` +
    `is within training (${st.train_length.toLocaleString("en")}), so no identity-like offset is marked`);
  if (r.near.length) lines.push(`most identity-like offset in [${st.train_length.toLocaleString("en")}, ${st.target_length.toLocaleString("en")}]: ` +
    `${r.near[0][0].toLocaleString("en")} tokens (K = ${r.near[0][1].toFixed(4)})`);
  if (r.parser_margin == null) lines.push(`Gate B, offsets 1–3 near position ${st.target_length.toLocaleString("en")}: OVERFLOW, ${st.dtype} stops at ${fmtNum(r.largest_finite)}`);
  else lines.push(`Gate B, offsets 1–3 near position ${st.target_length.toLocaleString("en")} in ${st.dtype}: margin ${r.parser_margin.toFixed(4)} ` +
    `(${r.parser_margin === 0 ? "COLLAPSED" : "separated"}; closest ${r.parser_pair[0]} vs ${r.parser_pair[1]} tokens)`);
  lines.push(`${st.dtype} holds every integer position up to ${r.integer_limit.toLocaleString("en")}: the largest position is ${st.target_length > r.integer_limit ? "beyond" : "within"} it`);
  return lines;
}

function draw(r, parts) {
  const st = r.state;
  let lowest = -0.5;
  for (const v of r._values) if (v < lowest) lowest = v;
  const k = chart({ xr: [0, st.target_length], yr: [Math.max(-1.05, lowest - 0.05), 1.05], xlabel: "offset Δ (tokens)", ylabel: "K(Δ)",
    title: r._offs.length < r._values.length
      ? `K(Δ) at ${r._offs.length.toLocaleString("en")} offsets: blue exact, orange from ${st.dtype} phases (grey: every offset)`
      : `K(Δ): blue exact, orange from ${st.dtype} phases`,
    label: "the kernel K over offsets" });
  if (r._offs.length < r._values.length) k.envelope(0, st.target_length, r._values, "rl-sample");
  k.line(r._offs, r._offs.map((o) => r._values[o]), "rl-exact");
  k.line(r._offs, r._kd, "rl-dtype");
  for (const [o, v] of r.near) k.dot(o, v, "rl-mark", 3.5);
  const lo = Math.min(r._lam[0], 16) / 2, hi = Math.max(r._lam[r._lam.length - 1], st.target_length) * 2;
  const l = chart({ xr: [-1, r.pairs], yr: [lo, hi], ylog: true, xlabel: "pair i (fastest first)", ylabel: "wavelength (tokens)",
    title: "wavelengths of the pairs", label: "the wavelength ladder" });
  r._lam.forEach((v, i) => l.dot(i, v, r._turns[i] < 1 ? "rl-slow" : "rl-fast", 2.2));
  l.hline(st.train_length, "rl-train", `train ${st.train_length.toLocaleString("en")}`);
  l.hline(st.target_length, "rl-target", `target ${st.target_length.toLocaleString("en")}`);
  const lines = readoutLines(r);
  const kKey = r.near.length ? key([["rl-mark", "the most identity-like offsets beyond training (the first is named below)"]])
    : key([]);
  const slow = r._turns.some((t) => t < 1), fast = r._turns.some((t) => t >= 1);
  const lKey = key([...(fast ? [["rl-fast", "a pair that turns at least once in training"]] : []),
    ...(slow ? [["rl-slow", "a slow pair: under one turn in training"]] : [])]);
  paint(parts, [k.svg, kKey, l.svg, lKey], lines);
}

function render({ model, el }) {
  const names = ["head_dim", "base", "train_length", "target_length", "interpolate", "dtype"];
  return makeLab({
    model, el, cls: "ropegeo-frequency-lab", title: "Frequency lab: the bank, its kernel and its precision",
    controls: [
      { name: "head_dim", label: "head dim d", kind: "range", min: 4, max: 256, step: 2, unit: "coords" },
      { name: "base", label: "base B (log₁₀)", kind: "log", min: 1, max: 7, step: 0.01, format: (v) => fmtNum(v, 6) },
      // lengths span four decades: log sliders, each with a field for the exact value
      { name: "train_length", label: "train length (log₁₀)", kind: "log", min: Math.log10(16), max: Math.log10(131072), step: 0.01, unit: "tokens" },
      { name: "target_length", label: "target length (log₁₀)", kind: "log", min: Math.log10(16), max: Math.log10(131072), step: 0.01, unit: "tokens" },
      { name: "interpolate", label: "interpolate positions", kind: "checkbox", format: (v, r) => `s = ${r.scale.toPrecision(4)}` },
      { name: "dtype", label: "phase dtype", kind: "select", options: PHASE_DTYPES.map((d) => [d, d]), format: () => "" },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute, draw,
  });
}

export default { render };
