// The rotation clock (chapter 2): a query at position m and a key at position n, each pair of
// coordinates a hand on its own clock turning by position x theta_i. Shift both positions and every
// hand moves but the score <R_m q, R_n k> stays put (it depends on n - m only); move one and it
// changes. The pairing toggle regroups the coordinates into different pairs (another operator,
// with the same relative law). Numbers: ropegeo.rotation.apply_rope in float64.
// "play" advances both positions by one token at a time (speed: tokens per second), so the hands
// turn while the score stays put; "pause" stops. The lab never plays by itself (nor under
// prefers-reduced-motion, where a press advances it in steps of a second's worth of tokens).

export const MAX_CLOCK_POSITION = 512;
export const MAX_CLOCK_SPEED = 32;
const CURVE = 200;

export function compute(p, q0, k0) {
  const head_dim = 2 * clampInt(p.head_dim / 2, 1, 8, 2);
  const base = clampNum(p.base, 2, 1e5, 100);
  const m = clampInt(p.m, 0, MAX_CLOCK_POSITION, 3), n = clampInt(p.n, 0, MAX_CLOCK_POSITION, 7);
  const pairing = pick(p.pairing, ["interleaved", "half"], "interleaved");
  const speed = clampInt(p.speed, 1, MAX_CLOCK_SPEED, 4);
  const state = { m, n, head_dim, base, pairing, speed };
  const theta = frequencies(head_dim, base);
  const q = Float64Array.from(q0.slice(0, head_dim)), k = Float64Array.from(k0.slice(0, head_dim));
  const rq = rotate(q, m, theta, { pairing }), rk = rotate(k, n, theta, { pairing });
  const score = dot(rq, rk);
  const relative = dot(q, rotate(k, n - m, theta, { pairing }));
  // the score against the offset, in a window of 200 offsets around the current one
  const lo = n - m - CURVE / 2;
  const curve = Array.from({ length: CURVE + 1 }, (_, d) => dot(q, rotate(k, lo + d, theta, { pairing })));
  const hands = Array.from(theta, (t, i) => {
    const a = pairing === "half" ? i : 2 * i, b = pairing === "half" ? i + head_dim / 2 : 2 * i + 1;
    return { pair: [a, b], q: [rq[a], rq[b]], k: [rk[a], rk[b]], q_angle: m * t, k_angle: n * t };
  });
  return { state, q: Array.from(q), k: Array.from(k), offset: n - m, score, relative, _lo: lo, theta: Array.from(theta), hands, _curve: curve };
}

function clock(hand, i, theta) {
  const R = 44, c = 50;
  const svg = s("svg", { viewBox: "0 0 100 128", class: "rl-chart rl-clock", role: "img",
    "aria-label": `pair ${i}: query hand and key hand` });
  svg.appendChild(s("circle", { cx: c, cy: c, r: R, class: "rl-frame" }));
  const len = Math.max(1e-9, Math.hypot(...hand.q), Math.hypot(...hand.k));
  for (const [v, cls] of [[hand.q, "rl-q"], [hand.k, "rl-k"]]) {
    svg.appendChild(s("line", { x1: c, y1: c, x2: c + (R * v[0]) / len, y2: c - (R * v[1]) / len, class: cls }));
  }
  // two short lines: each fits the clock's width whatever θ (10^-4 and below print as powers of ten)
  svg.appendChild(s("text", { x: c, y: 109, class: "rl-note", "text-anchor": "middle" }, `pair ${i}`));
  svg.appendChild(s("text", { x: c, y: 122, class: "rl-note", "text-anchor": "middle" }, `θ = ${fmtNum(theta, 2)}`));
  return svg;
}

function draw(r, parts) {
  const st = r.state;
  const clocks = h("div", { class: "rl-clocks" },
    r.hands.map((hd, i) => clock(hd, i, r.theta[i])));
  const c = chart({ xr: [r._lo, r._lo + CURVE], yr: [Math.min(...r._curve) - 0.1, Math.max(...r._curve) + 0.1],
    xlabel: "offset n − m (tokens)", ylabel: "score", title: "the score depends on n − m only (red: now)",
    label: "the score as a function of the offset" });
  c.line(Array.from(r._curve, (_, d) => r._lo + d), r._curve, "rl-exact");
  c.dot(r.offset, r.score, "rl-mark", 4);
  const marks = key([["rl-q", "query's hand, turned by m·θᵢ", "line"], ["rl-k", "key's hand, turned by n·θᵢ", "line"],
    ["rl-mark", "the score at the current offset"]]);
  paint(parts, [clocks, c.svg, marks], [
    `query at m = ${st.m}, key at n = ${st.n}: offset n − m = ${r.offset} token${Math.abs(r.offset) === 1 ? "" : "s"}`,
    `score ⟨R_m q, R_n k⟩ = ${r.score.toFixed(6)}; ⟨q, R_(n−m) k⟩ = ${r.relative.toFixed(6)} (difference ${Math.abs(r.score - r.relative).toExponential(1)})`,
    `one clock per pair (θᵢ in radians per token); blue: the query's pair turned by m·θᵢ, orange: the key's turned by n·θᵢ; ` +
      `${st.pairing} pairing: pair i rotates coordinates ${st.pairing === "half" ? "(i, i + d_head/2)" : "(2i, 2i + 1)"}`,
  ]);
}

/** Both positions moved by t tokens, if both stay in range (else neither moves). */
export function shift(p, t) {
  const m = Number(p.m) + t, n = Number(p.n) + t;
  return m < 0 || n < 0 || m > MAX_CLOCK_POSITION || n > MAX_CLOCK_POSITION ? {} : { m, n };
}

/** One step of the animation: both positions forward by t tokens; past the end, both start over
 * from the smaller at 0 (the offset n - m is kept). */
export function advance(p, t = 1) {
  const moved = shift(p, t);
  if (moved.m !== undefined) return moved;
  const low = Math.min(Number(p.m), Number(p.n));
  return { m: Number(p.m) - low, n: Number(p.n) - low };
}

const reducedMotion = () => typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;

function render({ model, el }) {
  const names = ["m", "n", "head_dim", "base", "pairing", "speed"];
  const q0 = model.get("q"), k0 = model.get("k");
  let timer = null, api = null, button = null;
  const read = (m) => Object.fromEntries(names.map((k) => [k, m.get(k)]));
  const label = () => {
    if (!button) return;
    button.textContent = timer ? "pause" : "play";
    button.setAttribute("aria-pressed", timer ? "true" : "false");
  };
  const stop = () => { if (timer) clearTimeout(timer); timer = null; label(); };
  const toggle = () => {
    if (timer) { stop(); return {}; }
    const speed = () => clampInt(model.get("speed"), 1, MAX_CLOCK_SPEED, 4);
    if (reducedMotion()) return advance(read(model), speed()); // no motion: one step of a second's worth
    const tick = () => { // reschedules itself, so that a new speed applies at the next step
      api.setMany(advance(read(model), 1));
      if (timer) timer = setTimeout(tick, 1000 / speed());
    };
    timer = setTimeout(tick, 1000 / speed());
    label();
    return {};
  };
  const cleanup = makeLab({
    model, el, cls: "ropegeo-clock-lab", title: "Rotation clock: shift both positions, the score stays put",
    controls: [
      { name: "m", label: "query position m", kind: "range", min: 0, max: MAX_CLOCK_POSITION, step: 1, unit: "tokens" },
      { name: "n", label: "key position n", kind: "range", min: 0, max: MAX_CLOCK_POSITION, step: 1, unit: "tokens" },
      { name: "shift_up", label: "shift both +1", kind: "button", text: "shift both +1 token", onPress: (p) => shift(p, 1) },
      { name: "shift_down", label: "shift both −1", kind: "button", text: "shift both −1 token", onPress: (p) => shift(p, -1) },
      { name: "head_dim", label: "head width d_head", kind: "range", min: 2, max: 16, step: 2, unit: "coords" },
      { name: "base", label: "base B (log₁₀)", kind: "log", min: 0.31, max: 5, step: 0.01, format: (v) => fmtNum(v, 4) },
      // short option texts (a 360 px screen): the readout names each pairing's coordinates
      { name: "pairing", label: "pairing", kind: "select", options: [["interleaved", "interleaved"], ["half", "half"]], format: () => "" },
      { name: "play", label: "play or pause", kind: "button", text: "play", onPress: toggle,
        format: () => (timer ? "playing: both positions advance" : reducedMotion() ? "reduced motion: one second's step per press" : "paused") },
      { name: "speed", label: "speed", kind: "range", min: 1, max: MAX_CLOCK_SPEED, step: 1, format: (v) => `${v} token${v === 1 ? "" : "s"}/s` },
    ],
    read, compute: (p) => compute(p, q0, k0), draw,
    ready: (a) => { api = a; button = a.parts.inputs.play; label(); },
  });
  return () => { stop(); cleanup(); };
}

export default { render };
