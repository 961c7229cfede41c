// The kernel lab's front end (an anywidget ES module). It computes everything itself, so the same
// widget answers live in Jupyter and in the static book, where no kernel runs:
//   theta_i = base^(-2i/d),  K(delta) = mean_i cos(delta * s * theta_i)
// with s = train_length / target_length under position interpolation (else 1), draws K over an
// offset range on a <canvas>, and lists the offsets in that range with the largest K (the most
// identity-like), exactly as ropegeo.geometry.near_collisions defines them.
// The search is bounded: at most MAX_SPAN offsets per update (the range is clipped and says so).
// Every update writes its numbers to the root element's data-result attribute (JSON), which the
// book's browser test compares with ropegeo to 1e-9.

export const MAX_SPAN = 200000; // offsets searched per update (about 25M multiply-adds at d = 256)
export const MAX_HEAD_DIM = 256;
export const MAX_OFFSET = 100000000;
const BLOCK = 256; // re-seed the rotation recurrence with exact cos/sin every BLOCK offsets
const N_SAMPLES = 16;

export function frequencies(headDim, base) {
  const pairs = headDim / 2;
  const theta = new Float64Array(pairs);
  for (let i = 0; i < pairs; i++) theta[i] = base ** ((-2.0 * i) / headDim);
  return theta;
}

// K at every integer offset start..stop (inclusive). Per pair, the phase of offset a + j comes
// from a complex rotation recurrence seeded with exact cos/sin at each block start a.
export function kernelRange(theta, scale, start, stop) {
  const n = stop - start + 1;
  const out = new Float64Array(n);
  const pairs = theta.length;
  const step = new Float64Array(pairs);
  const cs = new Float64Array(pairs);
  const sn = new Float64Array(pairs);
  for (let i = 0; i < pairs; i++) {
    step[i] = theta[i] * scale;
    cs[i] = Math.cos(step[i]);
    sn[i] = Math.sin(step[i]);
  }
  for (let b = 0; b < n; b += BLOCK) {
    const len = Math.min(BLOCK, n - b);
    const a = start + b;
    for (let i = 0; i < pairs; i++) {
      let c = Math.cos(a * step[i]);
      let s = Math.sin(a * step[i]);
      const cx = cs[i];
      const sx = sn[i];
      for (let j = 0; j < len; j++) {
        out[b + j] += c;
        const c2 = c * cx - s * sx;
        s = s * cx + c * sx;
        c = c2;
      }
    }
  }
  for (let k = 0; k < n; k++) out[k] /= pairs;
  return out;
}

// The `top` offsets with the largest K, largest first; ties go to the smaller offset.
export function topOffsets(values, start, top) {
  const best = []; // sorted, best first
  for (let k = 0; k < values.length; k++) {
    const v = values[k];
    if (best.length === top && v <= best[best.length - 1].k) continue;
    let pos = best.length;
    while (pos > 0 && v > best[pos - 1].k) pos--;
    best.splice(pos, 0, { offset: start + k, k: v });
    if (best.length > top) best.pop();
  }
  return best.map((b) => ({ offset: b.offset, similarity: Math.min(1.0, b.k) }));
}

function clampInt(x, lo, hi) {
  x = Math.round(Number(x));
  if (!Number.isFinite(x)) x = lo;
  return Math.max(lo, Math.min(hi, x));
}

// Read the model, bound every value, compute. Returns the result shown and published.
export function compute(p) {
  const headDim = 2 * clampInt(p.head_dim / 2, 1, MAX_HEAD_DIM / 2);
  let base = Number(p.base);
  if (!(base > 1) || !Number.isFinite(base)) base = 10000;
  const start = clampInt(p.offset_start, 0, MAX_OFFSET);
  let stop = clampInt(p.offset_stop, start, MAX_OFFSET);
  const clipped = stop - start + 1 > MAX_SPAN;
  if (clipped) stop = start + MAX_SPAN - 1;
  const train = clampInt(p.train_length, 1, MAX_OFFSET);
  const target = clampInt(p.target_length, 1, MAX_OFFSET);
  const scale = p.interpolate ? train / target : 1.0;
  const top = clampInt(p.top, 1, 20);
  const t0 = performance.now();
  const theta = frequencies(headDim, base);
  const values = kernelRange(theta, scale, start, stop);
  const best = topOffsets(values, start, Math.min(top, values.length));
  const ms = performance.now() - t0;
  const samples = [];
  const n = values.length;
  const ns = Math.min(N_SAMPLES, n);
  for (let q = 0; q < ns; q++) {
    const k = ns === 1 ? 0 : Math.round((q * (n - 1)) / (ns - 1));
    samples.push({ offset: start + k, k: values[k] });
  }
  return {
    head_dim: headDim, base, offset_start: start, offset_stop: stop, clipped, scale,
    interpolate: !!p.interpolate, train_length: train, target_length: target, top: best,
    samples, values, compute_ms: ms,
  };
}

const NAMES = ["head_dim", "base", "offset_start", "offset_stop", "interpolate", "train_length",
  "target_length", "top"];

function el(tag, attrs = {}, children = []) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.appendChild(c);
  return e;
}

function fmt(x, digits = 6) {
  return Number(x).toFixed(digits);
}

function draw(canvas, r) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 640;
  const h = canvas.clientHeight || 220;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const left = 44, right = 10, topPad = 10, bottom = 26;
  const pw = w - left - right, ph = h - topPad - bottom;
  const y = (k) => topPad + ((1 - k) / 2) * ph;
  const n = r.values.length;
  const x = (k) => left + (n === 1 ? pw / 2 : (k / (n - 1)) * pw);
  g.font = "11px sans-serif";
  g.fillStyle = "#555";
  g.strokeStyle = "#ccc";
  g.lineWidth = 1;
  for (const k of [1, 0.5, 0, -0.5, -1]) {
    g.beginPath();
    g.moveTo(left, y(k));
    g.lineTo(left + pw, y(k));
    g.stroke();
    g.textAlign = "right";
    g.fillText(String(k), left - 4, y(k) + 4);
  }
  g.textAlign = "left";
  g.fillText(`Δ = ${r.offset_start.toLocaleString("en")}`, left, h - 8);
  g.textAlign = "right";
  g.fillText(`Δ = ${r.offset_stop.toLocaleString("en")}`, left + pw, h - 8);
  g.strokeStyle = "#1f6fb4";
  g.beginPath();
  if (n <= pw) {
    for (let k = 0; k < n; k++) {
      if (k === 0) g.moveTo(x(k), y(r.values[k]));
      else g.lineTo(x(k), y(r.values[k]));
    }
  } else {
    // more offsets than pixels: draw each pixel column's min-max envelope
    const cols = Math.floor(pw);
    for (let c = 0; c < cols; c++) {
      const k0 = Math.floor((c * n) / cols);
      const k1 = Math.max(k0 + 1, Math.floor(((c + 1) * n) / cols));
      let lo = Infinity, hi = -Infinity;
      for (let k = k0; k < k1; k++) {
        const v = r.values[k];
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      g.moveTo(left + c + 0.5, y(hi));
      g.lineTo(left + c + 0.5, y(lo) + 0.5);
    }
  }
  g.stroke();
  g.fillStyle = "#d62728";
  for (const b of r.top) {
    g.beginPath();
    g.arc(x(b.offset - r.offset_start), y(b.similarity), 3.5, 0, 2 * Math.PI);
    g.fill();
  }
}

function render({ model, el: host }) {
  const root = el("div", { class: "ropegeo-kernel-lab" });
  const controls = el("div", { class: "rkl-controls" });
  const inputs = {};
  const row = (label, input, out) => {
    const lab = el("label", { class: "rkl-row" }, [el("span", { class: "rkl-label", text: label }), input]);
    if (out) lab.appendChild(out);
    controls.appendChild(lab);
  };
  inputs.head_dim = el("input", { type: "range", min: "2", max: String(MAX_HEAD_DIM), step: "2", "data-control": "head_dim" });
  const headOut = el("output", { class: "rkl-value" });
  row("head dim d", inputs.head_dim, headOut);
  inputs.base = el("input", { type: "range", min: "1", max: "7", step: "0.01", "data-control": "base" });
  const baseOut = el("output", { class: "rkl-value" });
  row("base B (log10)", inputs.base, baseOut);
  inputs.offset_start = el("input", { type: "number", min: "0", max: String(MAX_OFFSET), step: "1", "data-control": "offset_start" });
  inputs.offset_stop = el("input", { type: "number", min: "0", max: String(MAX_OFFSET), step: "1", "data-control": "offset_stop" });
  const rangeBox = el("span", { class: "rkl-range" }, [inputs.offset_start, el("span", { text: " to " }), inputs.offset_stop]);
  row("offsets Δ", rangeBox, null);
  inputs.interpolate = el("input", { type: "checkbox", "data-control": "interpolate" });
  inputs.train_length = el("input", { type: "number", min: "1", max: String(MAX_OFFSET), step: "1", "data-control": "train_length" });
  inputs.target_length = el("input", { type: "number", min: "1", max: String(MAX_OFFSET), step: "1", "data-control": "target_length" });
  const interpBox = el("span", { class: "rkl-range" }, [inputs.interpolate, el("span", { text: " train " }),
    inputs.train_length, el("span", { text: " → target " }), inputs.target_length]);
  const scaleOut = el("output", { class: "rkl-value" });
  row("interpolation", interpBox, scaleOut);
  root.appendChild(controls);
  const canvas = el("canvas", { class: "rkl-canvas", width: "640", height: "220", role: "img",
    "aria-label": "the kernel K(Δ) over the offset range" });
  root.appendChild(canvas);
  const summary = el("div", { class: "rkl-summary" });
  root.appendChild(summary);
  const table = el("table", { class: "rkl-top" });
  root.appendChild(table);
  host.appendChild(root);

  const params = () => Object.fromEntries(NAMES.map((k) => [k, model.get(k)]));

  function update(clipped = false) {
    const r = compute(params());
    r.clipped = r.clipped || clipped; // the range asked for was longer than MAX_SPAN
    inputs.head_dim.value = String(r.head_dim);
    headOut.textContent = String(r.head_dim);
    inputs.base.value = String(Math.log10(r.base));
    baseOut.textContent = r.base.toLocaleString("en", { maximumSignificantDigits: 6 });
    if (document.activeElement !== inputs.offset_start) inputs.offset_start.value = String(r.offset_start);
    if (document.activeElement !== inputs.offset_stop) inputs.offset_stop.value = String(r.offset_stop);
    inputs.interpolate.checked = r.interpolate;
    inputs.train_length.value = String(r.train_length);
    inputs.target_length.value = String(r.target_length);
    scaleOut.textContent = `s = ${r.scale.toPrecision(4)}`;
    draw(canvas, r);
    summary.textContent = `K(Δ) = mean over ${r.head_dim / 2} pairs of cos(Δ·s·θᵢ), θᵢ = B^(−2i/d), s = ${r.scale.toPrecision(4)}` +
      (r.clipped ? ` — range clipped to ${MAX_SPAN.toLocaleString("en")} offsets` : "");
    table.replaceChildren(
      el("tr", {}, [el("th", { text: "most identity-like Δ" }), el("th", { text: "K(Δ)" })]),
      ...r.top.map((b) => el("tr", {}, [el("td", { text: b.offset.toLocaleString("en") }), el("td", { text: fmt(b.similarity) })])),
    );
    const { values, ...published } = r;
    root.setAttribute("data-result", JSON.stringify(published));
  }

  function set(name, value) {
    model.set(name, value);
    // hand the bounded values back to the model, so Python never sees an out-of-range state
    const r = compute(params());
    for (const k of ["head_dim", "base", "offset_start", "offset_stop", "train_length", "target_length"]) {
      if (model.get(k) !== r[k]) model.set(k, r[k]);
    }
    try {
      model.save_changes(); // live in Jupyter; a no-op without a kernel
    } catch (e) {
      /* static page: nothing to sync with */
    }
    update(r.clipped);
  }
  inputs.head_dim.addEventListener("input", () => set("head_dim", Number(inputs.head_dim.value)));
  inputs.base.addEventListener("input", () => set("base", Number((10 ** Number(inputs.base.value)).toPrecision(6))));
  for (const k of ["offset_start", "offset_stop", "train_length", "target_length"]) {
    inputs[k].addEventListener("change", () => set(k, clampInt(inputs[k].value, 0, MAX_OFFSET)));
  }
  inputs.interpolate.addEventListener("change", () => set("interpolate", inputs.interpolate.checked));
  const onChange = () => update();
  for (const k of NAMES) model.on(`change:${k}`, onChange);
  update();
  return () => {
    for (const k of NAMES) model.off(`change:${k}`, onChange);
  };
}

export default { render };
