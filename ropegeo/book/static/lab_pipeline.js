// Phase error by pipeline (chapter 5): the angle between the phase a pipeline generates and the
// exact one, against position (log axes), for float32, the deployed bfloat16 table (float32
// angles), frequencies cast by .to(bfloat16) (then float32 angles, bfloat16 table) and every stage
// in bfloat16. One pair, or the largest error over the pairs. The numbers are those of
// ropegeo.book.widgets.pipeline_lab.reference (ropegeo.precision.phase_error).

const PIPE_HEAD_DIMS = [16, 32, 64, 128, 256];
export const MIN_POSITION = 100;
export const MAX_POSITION = 10000000;
export const POINTS = 200;
const FLOOR = 1e-9; // errors below this (float32 near position 0, or exactly 0) are drawn on the floor
export const PIPE_ORDER = ["float32", "deployed", "cast", "bfloat16"];
const PIPE_TEXT = {
  float32: "float32, every stage",
  deployed: "bfloat16 cos/sin, float32 angles (loaded in bfloat16)",
  cast: "frequencies cast by .to(bfloat16), float32 angles",
  bfloat16: "bfloat16, every stage",
};
const PIPE_STYLE = {
  float32: "stroke: #1f6fb4; stroke-width: 1.6",
  deployed: "stroke: #2f855a; stroke-width: 1.6; stroke-dasharray: 6 2 1.5 2",
  cast: "stroke: #b83280; stroke-width: 1.6; stroke-dasharray: 6 2 1.5 2",
  bfloat16: "stroke: #c05621; stroke-width: 1.6",
};

/** Where positions held in a format start skipping integers: [position, colour, format]. */
const VERTICALS = [[256, "#c05621", "bfloat16"], [2 ** 24, "#1f6fb4", "float32"]];

/** round(max ** (k / 199)) for k = 0 .. 199, repeats dropped (ropegeo.book.widgets.pipeline_lab.positions). */
export function positions(maxPosition) {
  const out = [];
  for (let k = 0; k < POINTS; k++) {
    const p = Math.round(maxPosition ** (k / (POINTS - 1)));
    if (out[out.length - 1] !== p) out.push(p);
  }
  return out;
}

export function compute(p) {
  const head_dim = pick(Number(p.head_dim), PIPE_HEAD_DIMS, 128);
  const state = {
    base: clampNum(p.base, 100, 1e7, 10000),
    head_dim,
    pair: clampInt(p.pair, 0, head_dim / 2 - 1, 8),
    worst: !!p.worst,
    max_position: clampInt(p.max_position, MIN_POSITION, MAX_POSITION, 65536),
  };
  const theta = frequencies(head_dim, state.base);
  const bank = state.worst ? theta : Float64Array.of(theta[state.pair]);
  const pos = positions(state.max_position);
  const found = pipelineErrors(pos, bank, PIPELINES);
  const errors = Object.fromEntries(PIPE_ORDER.map((n) => [n, Array.from(found[n])]));
  const last = pos.length - 1;
  return { state, theta_pair: theta[state.pair], positions: pos, errors,
    at_max: Object.fromEntries(PIPE_ORDER.map((n) => [n, errors[n][last]])) };
}

function draw(r, parts) {
  const st = r.state, pos = r.positions;
  const what = st.worst ? "largest over the pairs" : `pair ${st.pair} (θ = ${fmtNum(r.theta_pair, 4)} rad per token)`;
  const c = chart({ h: 250, xr: [1, st.max_position], yr: [FLOOR, 4], xlog: true, ylog: true, xlabel: "position",
    ylabel: "phase error (rad)", title: `phase error, ${what}`, label: "phase error against position for each pipeline" });
  for (const [lim, colour] of VERTICALS) {
    if (lim <= st.max_position) {
      c.add(s("line", { x1: c.X(lim), x2: c.X(lim), y1: c.top, y2: c.top + c.ph, style: `stroke: ${colour}; stroke-dasharray: 3 3` }));
    }
  }
  for (const name of PIPE_ORDER) {
    c.line(pos, r.errors[name].map((e) => Math.max(e, FLOOR)), "rl-pipe").setAttribute("style", PIPE_STYLE[name]);
  }
  const legend = h("ul", { class: "rl-legend", style: "list-style: none; padding: 0; margin: 2px 0; font-size: 0.85em" },
    PIPE_ORDER.map((name) => {
      const key = s("svg", { width: 26, height: 10, "aria-hidden": "true" });
      key.appendChild(s("line", { x1: 1, x2: 25, y1: 5, y2: 5, style: PIPE_STYLE[name] }));
      const li = h("li", { style: "display: flex; gap: 6px; align-items: center" });
      li.append(key, h("span", { text: PIPE_TEXT[name] }));
      return li;
    }));
  paint(parts, [c.svg, legend], readout(r));
}

/** The readout: each pipeline's error at the largest position, named as the legend names it, and
 * the dashed verticals drawn (only those within the axis). */
export function readout(r) {
  const st = r.state;
  const lines = [`at position ${st.max_position.toLocaleString("en")}: `
    + PIPE_ORDER.map((n) => `${PIPE_TEXT[n]} ${fmtNum(r.at_max[n], 3)} rad`).join("; ")];
  const drawn = VERTICALS.filter(([lim]) => lim <= st.max_position);
  if (drawn.length) {
    lines.push(`dashed ${drawn.length > 1 ? "verticals" : "vertical"}: ` + drawn.map(([lim, , fmt]) =>
      `from ${lim.toLocaleString("en")} on (${fmt})`).join(" and ") + `, positions held in ${drawn.length > 1 ? "that format" : fmtOf(drawn)} skip integers`);
  } else lines.push("below 256 every position is a whole number in bfloat16 and float32: no vertical drawn");
  return lines;
}
const fmtOf = (drawn) => drawn[0][2];

function render({ model, el }) {
  const names = ["base", "head_dim", "pair", "worst", "max_position"];
  return makeLab({
    model, el, cls: "ropegeo-pipeline-lab", title: "Phase error by pipeline: where the rounding happens matters",
    controls: [
      { name: "base", label: "base B (log₁₀)", kind: "log", min: 2, max: 7, step: 0.01, format: (v) => fmtNum(v, 6) },
      { name: "head_dim", label: "head dim d", kind: "select", options: PIPE_HEAD_DIMS.map((x) => [x, String(x)]), unit: "coords" },
      { name: "pair", label: "pair i", kind: "range", min: 0, max: 127, step: 1, maxOf: (r) => r.state.head_dim / 2 - 1,
        off: (r) => (r.state.worst ? "off: the largest over the pairs is drawn" : null), format: (v) => String(v) },
      { name: "worst", label: "largest over the pairs", kind: "checkbox", format: (v) => (v ? "on" : "off") },
      { name: "max_position", label: "max position (log₁₀)", kind: "log", min: 2, max: 7, step: 0.01, unit: "tokens" },
    ],
    read: (m) => Object.fromEntries(names.map((k) => [k, m.get(k)])),
    compute, draw,
  });
}

export default { render };
