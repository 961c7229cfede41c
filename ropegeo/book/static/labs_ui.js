// Shared user interface of the labs: labelled keyboard-operable controls bound to the widget
// model, small SVG charts that fit the text column, and the publication of each update's numbers
// on the root element (data-result, JSON) for the browser tests. Concatenated after
// ropegeo_core.js and before one lab's own file (ropegeo/book/widgets/_lab.py builds the module).

const SVG_NS = "http://www.w3.org/2000/svg";
let LAB_COUNTER = 0;
let CHART_W = 640; // drawing width of the charts, in CSS pixels: the lab's own width (see makeLab)

export function h(tag, attrs = {}, children = []) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") e.textContent = v;
    else if (v !== false && v != null) e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c) e.appendChild(c);
  return e;
}
export function s(tag, attrs = {}, text = null) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}

export function fmtNum(x, digits = 4) {
  if (x == null || Number.isNaN(x)) return "–";
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  // whole numbers (token counts) in full, with separators; others in powers of ten without a "+"
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return x.toLocaleString("en");
  if (x !== 0 && (Math.abs(x) >= 1e6 || Math.abs(x) < 1e-3)) return x.toExponential(digits - 1).replace(/e\+?/, "×10^");
  return Number(x.toPrecision(digits)).toLocaleString("en", { maximumSignificantDigits: digits });
}
export function clampNum(x, lo, hi, fallback) {
  x = Number(x);
  if (!Number.isFinite(x)) x = fallback;
  return Math.max(lo, Math.min(hi, x));
}
export function clampInt(x, lo, hi, fallback = lo) {
  return Math.round(clampNum(x, lo, hi, fallback));
}
export function pick(x, options, fallback) {
  return options.includes(x) ? x : fallback;
}
/** "1 set", "2 sets": a count and its noun, singular for exactly one. */
export function plural(n, noun, many = `${noun}s`) {
  return `${fmtNum(n)} ${n === 1 ? noun : many}`;
}
/** "1st", "2nd", "3rd", "32nd", "11th": an English ordinal. */
export function ordinal(n) {
  const tens = n % 100, ones = n % 10;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ones === 1 ? "st" : ones === 2 ? "nd" : ones === 3 ? "rd" : "th";
  return `${fmtNum(n)}${suffix}`;
}
/** The value a log slider at ``v`` (log10) gives: two significant digits (so 10^3.6 gives 4,000 and
 * a slider moved back to 10^4.78 gives 60,000 again), the ends of its range exactly. */
export function logValue(v, lo, hi) {
  const x = 10 ** v;
  if (v <= lo || v >= hi) return Number(x.toPrecision(6));
  return Number(x.toPrecision(2));
}
/** The next two-significant-digit value above (dir 1) or below (dir -1) x, within the slider's range. */
export function nextLogValue(x, dir, lo, hi) {
  let e = Math.floor(Math.log10(x)) - 1, m = Math.round(x / 10 ** e) + dir;
  if (m < 10) { m = 99; e -= 1; } // below 10,000 comes 9,900
  const y = Number((m * 10 ** e).toPrecision(2));
  return Math.min(Number((10 ** hi).toPrecision(6)), Math.max(Number((10 ** lo).toPrecision(6)), y));
}
/** A number and its unit, the unit singular for exactly one ("1 token", "2 tokens"). */
export function withUnit(value, unit) {
  if (!unit) return fmtNum(value);
  return `${fmtNum(value)} ${value === 1 && unit.endsWith("s") ? unit.slice(0, -1) : unit}`;
}

// ------------------------------------------------------------------------------ controls
// spec: {name, label, kind: "range" | "log" | "number" | "select" | "checkbox" | "button",
//        min, max, step, options: [[value, text]...], unit, format(value) -> text,
//        onPress(params) -> {name: value, ...} (buttons: the traits to set),
//        off(result) -> null | reason (a control that does nothing in this state: disabled, with the
//        reason shown beside it), maxOf(result) -> number (a range slider whose top depends on the state),
//        optionOff(result, value) -> null | reason (one option of a select that does not apply)}
function makeControl(spec, id) {
  const wrap = h("div", { class: "rl-row" });
  const label = h("label", { for: id, class: "rl-label", text: spec.label });
  let input;
  if (spec.kind === "select") {
    input = h("select", { id, "data-control": spec.name });
    for (const [value, text] of spec.options) input.appendChild(h("option", { value: String(value), text }));
  } else if (spec.kind === "checkbox") {
    input = h("input", { id, type: "checkbox", "data-control": spec.name });
  } else if (spec.kind === "button") {
    input = h("button", { id, type: "button", "data-control": spec.name, text: spec.text || spec.label });
  } else {
    const type = spec.kind === "number" ? "number" : "range";
    input = h("input", { id, type, min: String(spec.min), max: String(spec.max), step: String(spec.step ?? 1),
      "data-control": spec.name });
  }
  const out = h("output", { for: id, class: "rl-value", "aria-live": "polite" });
  // a log slider spans decades: a number field beside it takes the exact value
  const exact = spec.kind === "log" ? h("input", { type: "number", class: "rl-exact-value", "data-exact": spec.name,
    min: String(Number((10 ** spec.min).toPrecision(6))), max: String(Number((10 ** spec.max).toPrecision(6))), step: "any",
    "aria-label": `${spec.label.replace(/ \(log₁₀\)$/, "")}: exact value` }) : null;
  if (spec.kind === "button") {
    wrap.append(input, out);
    wrap.classList.add("rl-buttonrow");
  } else wrap.append(...[label, input, exact, out].filter(Boolean));
  return { wrap, input, out, exact };
}

/** Build a lab: controls bound to the model, a compute function, a view that draws the result.
 * opts: {model, el, cls, title, controls: [spec], read(model) -> params, compute(params) -> result,
 *        write(result) -> {name: value} (bounded values handed back), draw(result, parts)} */
export function makeLab(opts) {
  const { model, el: host } = opts;
  const uid = `rl${++LAB_COUNTER}-${Math.random().toString(36).slice(2, 10)}`; // unique across labs on a page
  const root = h("div", { class: `ropegeo-lab ${opts.cls}`, role: "group", "aria-label": opts.title });
  root.appendChild(h("div", { class: "rl-title", text: opts.title }));
  const controls = h("div", { class: "rl-controls" });
  const parts = { root, inputs: {}, outs: {} };
  for (const spec of opts.controls) {
    const c = makeControl(spec, `${uid}-${spec.name}`);
    parts.inputs[spec.name] = c.input;
    parts.outs[spec.name] = c.out;
    if (c.exact) (parts.exact = parts.exact || {})[spec.name] = c.exact;
    controls.appendChild(c.wrap);
  }
  root.appendChild(controls);
  const figure = h("div", { class: "rl-figure" });
  const text = h("div", { class: "rl-readout", "aria-live": "polite" });
  root.append(figure, text);
  parts.figure = figure;
  parts.text = text;
  host.appendChild(root);

  const specs = Object.fromEntries(opts.controls.map((c) => [c.name, c]));
  function show(r) {
    for (const [name, spec] of Object.entries(specs)) {
      const input = parts.inputs[name];
      const value = r.state[name];
      const off = spec.off ? spec.off(r) : null;
      input.disabled = !!off;
      input.closest(".rl-row").classList.toggle("rl-off", !!off);
      if (spec.kind === "select" && spec.optionOff) {
        for (const o of input.options) {
          const why = spec.optionOff(r, o.value);
          o.disabled = !!why;
          o.title = why || "";
        }
      }
      if (spec.kind === "button") {
        parts.outs[name].textContent = off || (spec.format ? spec.format(value, r) : "");
        continue;
      }
      if (spec.maxOf) input.max = String(spec.maxOf(r));
      if (spec.kind === "checkbox") input.checked = !!value;
      else if (spec.kind === "log") {
        input.value = String(Math.log10(value));
        const field = parts.exact[name];
        if (document.activeElement !== field || Number(field.value) !== value) field.value = String(value);
      }
      // a number field being typed in keeps its text, unless the lab changed the value it committed
      else if (spec.kind !== "number" || document.activeElement !== input || Number(input.value) !== value) input.value = String(value);
      // a log slider's value is in its number field: the output says the unit (or why it is off)
      const shown = spec.kind === "log" ? (spec.unit || "") : spec.format ? spec.format(value, r) : withUnit(value, spec.unit);
      parts.outs[name].textContent = off || shown;
      parts.outs[name].title = off || "";
    }
  }
  // one computation per change: the result is drawn, published and its bounded values handed
  // back to the model (so Python never sees an out-of-range state)
  let own = false; // our own model.set calls: their change events must not recompute
  function update(previous = null, given = null) {
    const t0 = performance.now();
    const r = given || opts.compute(opts.read(model));
    if (!given) r.compute_ms = performance.now() - t0;
    if (previous && previous.clipped) r.clipped = true; // the value asked for was cut to the lab's bound
    show(r);
    CHART_W = chartWidth();
    opts.draw(r, parts);
    r.update_ms = performance.now() - (given ? given._t0 : t0);
    // published for the tests: everything but the bulky arrays (keys starting with "_")
    root.setAttribute("data-result", JSON.stringify(r, (k, v) =>
      (k.startsWith("_") ? undefined : ArrayBuffer.isView(v) ? Array.from(v) : v)));
    return r;
  }
  function set(name, value) {
    setMany({ [name]: value });
  }
  function setMany(values) {
    const t0 = performance.now();
    own = true;
    try {
      for (const [name, value] of Object.entries(values)) model.set(name, value);
      const r = opts.compute(opts.read(model));
      r.compute_ms = performance.now() - t0;
      r._t0 = t0;
      let cut = false;
      for (const [k, v] of Object.entries(r.state)) {
        if (k in specs && specs[k].kind !== "button" && JSON.stringify(model.get(k)) !== JSON.stringify(v)) {
          model.set(k, v);
          cut = true;
        }
      }
      try {
        model.save_changes(); // live in Jupyter; nothing to sync with on a static page
      } catch (e) { /* static page */ }
      own = false;
      // a value cut to its bound: recompute from the bounded state (keeping the "clipped" note)
      if (cut) update(r);
      else update(null, r);
    } finally {
      own = false;
    }
  }
  for (const [name, spec] of Object.entries(specs)) {
    const input = parts.inputs[name];
    if (spec.kind === "button") {
      input.addEventListener("click", () => setMany(spec.onPress(opts.read(model))));
    } else if (spec.kind === "checkbox") {
      input.addEventListener("change", () => set(name, input.checked));
    } else if (spec.kind === "select") {
      input.addEventListener("change", () => {
        const opt = spec.options.find(([v]) => String(v) === input.value);
        set(name, opt ? opt[0] : input.value);
      });
    } else if (spec.kind === "log") {
      input.addEventListener("input", () => {
        const v = Number(input.value), now = Number(model.get(name));
        let x = logValue(v, spec.min, spec.max);
        // a small move (an arrow key) that rounds back to the value shown moves to the next value instead
        if (x === now && Math.abs(v - Math.log10(now)) > 1e-9) x = nextLogValue(now, v > Math.log10(now) ? 1 : -1, spec.min, spec.max);
        set(name, x);
      });
      parts.exact[name].addEventListener("change", () => {
        const v = Number(parts.exact[name].value);
        if (Number.isFinite(v) && v > 0) set(name, v);
      });
    } else if (spec.kind === "number") {
      input.addEventListener("change", () => set(name, Number(input.value)));
    } else {
      input.addEventListener("input", () => set(name, Number(input.value)));
    }
  }
  // draw at the lab's own width, so that text in the charts keeps its size on a narrow screen
  const chartWidth = () => Math.round(Math.max(280, Math.min(720, (root.clientWidth || 656) - 16)));
  let drawnWidth = chartWidth();
  if (typeof ResizeObserver !== "undefined") {
    new ResizeObserver(() => {
      const w = chartWidth();
      if (Math.abs(w - drawnWidth) > 24) { drawnWidth = w; update(); }
    }).observe(root);
  }
  const names = [...new Set([...Object.keys(specs), ...(opts.extraNames || [])])];
  const onChange = () => { if (!own) update(); }; // a change from Python (or another view)
  for (const k of names) model.on(`change:${k}`, onChange);
  update();
  if (opts.ready) opts.ready({ setMany, parts }); // a lab that moves itself (the clock's animation)
  return () => { for (const k of names) model.off(`change:${k}`, onChange); };
}

// ------------------------------------------------------------------------------ charts
/** Rough width in CSS pixels of a text in the charts' font (about 0.6 em per character). */
export function textWidth(text, size = 10) {
  return String(text).length * size * 0.6;
}
/** Split a title into lines of at most ``width`` pixels at the 11 px title size (at spaces). */
function wrapTitle(title, width) {
  const lines = [];
  let cur = "";
  for (const word of title.split(" ")) {
    const next = cur ? `${cur} ${word}` : word;
    if (cur && textWidth(next, 11) > width) { lines.push(cur); cur = word; } else cur = next;
  }
  if (cur) lines.push(cur);
  return lines;
}

/** An SVG chart scaled to its container (viewBox), with axes, ticks and labels. The left margin
 * grows to hold the longest y tick label, a title too wide for the chart wraps onto more lines,
 * and the outermost x tick labels stay inside the drawing. */
export function chart({ w = CHART_W, h = 220, xr, yr, xlog = false, ylog = false, xlabel = "", ylabel = "", title = "",
  left = 52, right = 12, top = 20, bottom = 34, label, xint = false, yint = false }) {
  const tx = xlog ? Math.log10 : (x) => x, ty = ylog ? Math.log10 : (y) => y;
  const [x0, x1] = xr.map(tx), [y0, y1] = yr.map(ty);
  const ticks = (lo, hi, log, whole = false) => {
    if (log) {
      const out = [];
      for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) out.push(10 ** e);
      const every = Math.max(1, Math.ceil(out.length / 6));
      return out.filter((_, k) => k % every === 0);
    }
    const span = hi - lo || 1, raw = span / 4, mag = 10 ** Math.floor(Math.log10(raw));
    let step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((st) => span / st <= 5);
    if (whole) step = Math.max(1, Math.round(step)); // an axis of whole numbers (offsets) ticks whole numbers
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Number(t.toPrecision(12)));
    return out;
  };
  // enough digits that neighbouring ticks read differently (20,000 and 20,001, never 20,000 twice)
  const digits = (lo, hi) => Math.max(3, Math.ceil(Math.log10(Math.max(Math.abs(lo), Math.abs(hi), 1e-300) / ((hi - lo) / 5 || 1))) + 1);
  const tickText = (v, log, dg = 3) => (log ? `10^${Math.round(Math.log10(v))}` : fmtNum(v, dg));
  const yticks = ticks(y0, y1, ylog, yint).map((t) => [t, tickText(t, ylog, digits(y0, y1))]);
  // the y axis title sits at x = 12 (its glyphs reach about x = 18): tick labels end 4 px left of the frame
  left = Math.max(left, Math.ceil(24 + Math.max(0, ...yticks.map(([, s]) => textWidth(s)))));
  // the title is centred over the plot, not the whole chart: its lines fit the nearer edge on both sides
  const titleLines = title ? wrapTitle(title, 2 * Math.min(left + (w - left - right) / 2, (w + right - left) / 2) - 8) : [];
  top += 13 * Math.max(0, titleLines.length - 1);
  h += 13 * Math.max(0, titleLines.length - 1);
  const svg = s("svg", { viewBox: `0 0 ${w} ${h}`, class: "rl-chart", role: "img", "aria-label": label || title,
    preserveAspectRatio: "xMidYMid meet" });
  const pw = w - left - right, ph = h - top - bottom;
  const X = (x) => left + ((tx(x) - x0) / (x1 - x0 || 1)) * pw;
  const Y = (y) => top + (1 - (ty(y) - y0) / (y1 - y0 || 1)) * ph;
  svg.appendChild(s("rect", { x: left, y: top, width: pw, height: ph, class: "rl-frame" }));
  titleLines.forEach((line, k) =>
    svg.appendChild(s("text", { x: left + pw / 2, y: 13 + 13 * k, class: "rl-ctitle", "text-anchor": "middle" }, line)));
  for (const t of ticks(x0, x1, xlog, xint)) {
    const x = X(t), text = tickText(t, xlog, digits(x0, x1)), half = textWidth(text) / 2;
    svg.appendChild(s("line", { x1: x, x2: x, y1: top + ph, y2: top + ph + 4, class: "rl-tick" }));
    const anchor = x + half > w - 1 ? "end" : x - half < 1 ? "start" : "middle";
    const at = anchor === "end" ? Math.min(x + half, w - 1) : anchor === "start" ? Math.max(x - half, 1) : x;
    svg.appendChild(s("text", { x: at, y: top + ph + 15, class: "rl-tlabel", "text-anchor": anchor }, text));
  }
  for (const [t, text] of yticks) {
    const y = Y(t);
    svg.appendChild(s("line", { x1: left, x2: left + pw, y1: y, y2: y, class: "rl-grid" }));
    svg.appendChild(s("text", { x: left - 4, y: y + 4, class: "rl-tlabel", "text-anchor": "end" }, text));
  }
  if (xlabel) svg.appendChild(s("text", { x: left + pw / 2, y: h - 4, class: "rl-alabel", "text-anchor": "middle" }, xlabel));
  if (ylabel) svg.appendChild(s("text", { x: 12, y: top + ph / 2, class: "rl-alabel", "text-anchor": "middle",
    transform: `rotate(-90 12 ${top + ph / 2})` }, ylabel));
  const add = (e) => { svg.appendChild(e); return e; };
  const line = (xs, ys, cls) => {
    let d = "";
    for (let k = 0; k < xs.length; k++) {
      if (!Number.isFinite(ys[k])) continue;
      d += `${d && Number.isFinite(ys[k - 1]) ? "L" : "M"}${X(xs[k]).toFixed(1)},${Y(ys[k]).toFixed(1)}`;
    }
    return add(s("path", { d, class: cls, fill: "none" }));
  };
  // many evenly spaced points: one min-max stroke per pixel column
  const envelope = (x0v, x1v, values, cls) => {
    const n = values.length, cols = Math.max(1, Math.floor(pw));
    if (n <= cols) return line(Array.from(values, (_, k) => x0v + ((x1v - x0v) * k) / Math.max(1, n - 1)), values, cls);
    let d = "";
    for (let c = 0; c < cols; c++) {
      const k0 = Math.floor((c * n) / cols), k1 = Math.max(k0 + 1, Math.floor(((c + 1) * n) / cols));
      let lo = Infinity, hi = -Infinity;
      for (let k = k0; k < k1; k++) { const v = values[k]; if (v < lo) lo = v; if (v > hi) hi = v; }
      d += `M${(left + c + 0.5).toFixed(1)},${Y(hi).toFixed(1)}V${(Y(lo) + 0.6).toFixed(1)}`;
    }
    return add(s("path", { d, class: cls, fill: "none" }));
  };
  // a dot carries its value (data-x, data-y): the tests compare a listing with what is marked
  const dots = []; // where the dots are, so that the labels drawn after them keep off them
  const dot = (x, y, cls, r = 3) => {
    dots.push({ x0: X(x) - r, x1: X(x) + r, y0: Y(y) - r, y1: Y(y) + r });
    return add(s("circle", { cx: X(x), cy: Y(y), r, class: cls, "data-x": x, "data-y": y }));
  };
  const lineLabels = []; // labels of horizontal lines: each keeps off the dots and the other labels
  const hline = (y, cls, text) => {
    add(s("line", { x1: left, x2: left + pw, y1: Y(y), y2: Y(y), class: cls }));
    if (!text) return;
    const wd = textWidth(text);
    // above the line at the left, below it at the right, then the other two corners, then further along
    const spots = [[left + 4, Y(y) - 3], [left + pw - 4 - wd, Y(y) + 11], [left + 4, Y(y) + 11], [left + pw - 4 - wd, Y(y) - 3]];
    for (let f = 0.25; f < 0.8; f += 0.25) spots.push([left + f * (pw - wd), Y(y) - 3], [left + f * (pw - wd), Y(y) + 11]);
    const hits = (x, yy, b) => x < b.x1 + 2 && x + wd > b.x0 - 2 && yy + 2 > b.y0 && yy - 9 < b.y1;
    const ok = ([x, yy]) => yy - 9 >= top && yy + 2 <= top + ph && !dots.some((b) => hits(x, yy, b))
      && !lineLabels.some((b) => hits(x, yy, b));
    const [x, yy] = spots.find(ok) || spots[0];
    lineLabels.push({ x0: x, x1: x + wd, y0: yy - 9, y1: yy + 2 });
    add(s("text", { x, y: yy, class: "rl-note" }, text));
  };
  // a sentence in the middle of the frame (a chart with nothing to draw says why), wrapped to fit
  const note = (text) => {
    const lines = wrapTitle(text, pw - 12);
    lines.forEach((l, k) => add(s("text", { x: left + pw / 2, y: top + ph / 2 + 13 * (k - (lines.length - 1) / 2) + 4,
      class: "rl-empty", "text-anchor": "middle" }, l)));
  };
  // labels of points (x, y, text), each beside its point; points closer than 12 px share one label,
  // and a label that would overprint another moves to the nearest free line inside the frame
  // labels of points (x, y, text), each beside its point; points closer than 12 px share one label,
  // and a label never covers a point or another label: it tries the right, the left, above and below
  // its point, then further away with a leader line
  const labels = (points, cls = "rl-note", r = 5) => {
    const groups = [];
    for (const p of points) {
      const px = X(p.x), py = Y(p.y);
      const g = groups.find((q) => Math.hypot(q.px - px, q.py - py) < 12);
      if (g) g.texts.push(p.text); else groups.push({ px, py, texts: [p.text] });
    }
    const placed = groups.map((g) => ({ x0: g.px - r, x1: g.px + r, y: g.py + r, h: 2 * r })); // the points themselves
    groups.sort((a, b) => a.py - b.py || a.px - b.px);
    const clear = (x0, wd, y) => x0 >= left + 1 && x0 + wd <= left + pw - 1 && y - 9 >= top && y + 2 <= top + ph
      && !placed.some((b) => x0 < b.x1 + 2 && x0 + wd > b.x0 - 2 && y + 2 > b.y - (b.h ?? 11) && y - 9 < b.y);
    for (const g of groups) {
      const text = g.texts.join(", "), wd = textWidth(text);
      const spots = [];
      for (let k = 0; k < 12; k++) {
        const dy = 11 * Math.ceil(k / 2) * (k % 2 ? -1 : 1);
        spots.push([g.px + r + 3, g.py + 4 + dy], [g.px - r - 3 - wd, g.py + 4 + dy]);
        if (k < 2) spots.push([g.px - wd / 2, g.py - r - 4 - 11 * k], [g.px - wd / 2, g.py + r + 12 + 11 * k]);
      }
      let spot = spots.find(([x0, y]) => clear(x0, wd, y));
      if (!spot) spot = [Math.min(Math.max(left + 2, g.px + r + 3), left + pw - wd - 2), Math.min(top + ph - 3, Math.max(top + 10, g.py - 4))];
      const [x0, y] = spot;
      // a label moved away from its point is tied to it by a leader line (from the label's nearest edge)
      const bx = Math.min(Math.max(g.px, x0), x0 + wd), by = Math.min(Math.max(g.py, y - 9), y + 2);
      if (Math.hypot(bx - g.px, by - g.py) > r + 9) add(s("line", { x1: g.px, y1: g.py, x2: bx, y2: by, class: "rl-leader" }));
      placed.push({ x0, x1: x0 + wd, y });
      add(s("text", { x: x0, y, class: cls, "text-anchor": "start" }, text));
    }
  };
  return { svg, X, Y, add, line, envelope, dot, hline, note, labels, left, top, pw, ph };
}

/** The key of a chart's marks: one entry per kind, [class, words, shape ("dot" or "line")], each a
 * swatch drawn with the mark's own class and the words saying what it is. */
export function key(entries) {
  return h("ul", { class: "rl-key" }, entries.map(([cls, text, shape = "dot"]) => {
    const sw = s("svg", { width: 22, height: 10, "aria-hidden": "true" });
    sw.appendChild(shape === "dot" ? s("circle", { cx: 11, cy: 5, r: 3.5, class: cls })
      : s("line", { x1: 1, x2: 21, y1: 5, y2: 5, class: cls }));
    return h("li", { "data-key-for": cls }, [sw, h("span", { text })]);
  }));
}

/** A small table: header row and rows of cells (text); ``lists``: the class of the chart's marks it
 * lists (its first column holds their x values: the tests check the two agree). */
export function table(header, rows, caption, lists = null) {
  const t = h("table", { class: "rl-table", "data-lists": lists });
  if (caption) t.appendChild(h("caption", { text: caption }));
  t.appendChild(h("tr", {}, header.map((x) => h("th", { scope: "col", text: x }))));
  for (const r of rows) t.appendChild(h("tr", {}, r.map((x) => h("td", { text: String(x) }))));
  return t;
}

/** Replace the figure's and readout's content. */
export function paint(parts, figures, lines, extra = []) {
  parts.figure.replaceChildren(...figures);
  parts.text.replaceChildren(...lines.map((l) => (typeof l === "string" ? h("p", { text: l }) : l)), ...extra);
}
