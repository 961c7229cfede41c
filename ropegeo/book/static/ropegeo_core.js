// ropegeo's geometry in JavaScript: one core for every lab of the book (an ES module, no imports).
//
// It computes what the Python package computes, with the same formulas in the same order, so the
// labs answer their controls on the static website exactly as they do in Jupyter:
//   - frequency schedules: theta_i = base^(-2i/r) over a (partial) rotary width r, and the extension
//     rules of ropegeo.scaling (linear, ntk, dynamic, yarn, longrope, llama3);
//   - the kernel K(delta) = sum_i w_i cos(delta s theta_i), the exact near-collision search of
//     ropegeo.geometry.near_collisions, turns, slow pairs, adjacent similarity;
//   - Gate B phase distances and separation margins (ropegeo.margins), from exact phases or from
//     phases generated in float32, float16 or bfloat16 (ropegeo.precision).
// Rounding is emulated faithfully: float32 by Math.fround; float16 by an exact round-to-nearest-even
// from float64 (as numpy casts); bfloat16 through the float32 bit pattern (as ml_dtypes casts,
// float64 -> float32 -> bfloat16). Positions and angle products therefore round exactly as in
// ropegeo; cos and sin in float32 are the correctly rounded values, which differ by one float32 ulp
// from numpy's vectorised float32 cos/sin in about one entry in nine (numpy's is an approximation).
// tests/test_js_core.py checks every function against ropegeo.
// Inputs are trusted: every lab bounds its controls before calling the core.

export const TWO_PI = 2.0 * Math.PI;
export const PHASE_DTYPES = ["float64", "float32", "float16", "bfloat16"];
export const RULES = ["linear", "ntk", "dynamic", "yarn", "longrope", "llama3"];

// ------------------------------------------------------------------------------ rounding
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** Round a float64 to the nearest float32 (ties to even). */
export const toFloat32 = Math.fround;

/** Round a float64 to the nearest bfloat16 as ml_dtypes does: to float32 first, then the top
 * 16 bits of its pattern with round-to-nearest-even (NaN stays NaN, overflow gives infinity). */
export function toBfloat16(x) {
  F32[0] = x;
  const bits = U32[0];
  if ((bits & 0x7f800000) === 0x7f800000) return F32[0]; // inf or nan
  const lsb = (bits >>> 16) & 1;
  U32[0] = ((bits + 0x7fff + lsb) >>> 16) << 16;
  return F32[0];
}

/** Round a float64 to the nearest float16 (ties to even, subnormals, overflow to infinity):
 * one exact rounding, as numpy's float64 -> float16 cast. */
export function toFloat16(x) {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1; // log2 may round up just below a power of two
  else if (2 ** (e + 1) <= a) e += 1;
  const ulp = 2 ** (Math.max(e, -14) - 10); // 11 significant bits; subnormals below 2^-14
  const q = a / ulp; // exact: a power-of-two scaling
  let r = Math.floor(q);
  const f = q - r; // exact
  if (f > 0.5 || (f === 0.5 && r % 2 === 1)) r += 1;
  const out = r * ulp;
  if (out > 65504) return x > 0 ? Infinity : -Infinity;
  return x > 0 ? out : -out;
}

const ROUNDERS = { float64: (x) => x, float32: toFloat32, float16: toFloat16, bfloat16: toBfloat16 };
/** The rounding function of a phase dtype. */
export function rounder(dtype) {
  return ROUNDERS[dtype];
}
const LARGEST = { float64: Number.MAX_VALUE, float32: 3.4028234663852886e38, float16: 65504, bfloat16: 3.3895313892515355e38 };
const SIGNIFICANT_BITS = { float64: 53, float32: 24, float16: 11, bfloat16: 8 };
/** Largest finite number of a dtype. */
export function largestFinite(dtype) {
  return LARGEST[dtype];
}
/** Every integer 0..N is exact in the dtype (N = 2^p for p significant bits). */
export function consecutiveIntegerLimit(dtype) {
  return 2 ** SIGNIFICANT_BITS[dtype];
}
/** Gap between neighbouring numbers of the dtype around a position (that of [1, 2) below 1). */
export function positionSpacing(position, dtype) {
  const x = Math.max(position, 1.0);
  let e = Math.floor(Math.log2(x));
  if (2 ** e > x) e -= 1;
  else if (2 ** (e + 1) <= x) e += 1;
  return 2 ** (e + 1 - SIGNIFICANT_BITS[dtype]);
}

// ------------------------------------------------------------------------------ schedules
/** theta_i = base^(-2i/r), i = 0 .. r/2 - 1 (ropegeo.frequencies.frequencies over rotary width r). */
export function frequencies(rotaryDim, base) {
  const pairs = rotaryDim / 2;
  const out = new Float64Array(pairs);
  for (let i = 0; i < pairs; i++) out[i] = base ** -((2 * i) / rotaryDim);
  return out;
}
export function wavelengths(theta) {
  return Float64Array.from(theta, (t) => (t > 0 ? TWO_PI / t : Infinity));
}
export function turns(theta, length) {
  return Float64Array.from(theta, (t) => (length * t) / TWO_PI);
}
export function slowPairs(theta, length) {
  let n = 0;
  for (const t of turns(theta, length)) if (t < 1.0) n++;
  return n;
}

export function linear(theta, factor) {
  return Float64Array.from(theta, (t) => t / factor);
}
export function ntk(d, base, factor) {
  return frequencies(d, base * factor ** (d / (d - 2)));
}
export function dynamicNtk(d, base, factor, originalLength, seqLen = null) {
  const n = seqLen == null ? originalLength : Math.max(seqLen, originalLength);
  return frequencies(d, base * ((factor * n) / originalLength - (factor - 1.0)) ** (d / (d - 2)));
}
export function yarnMscale(scale, mscale = 1.0) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * Math.log(scale) + 1.0;
}

// acc[0 .. len-1] = sum_i w_i cos((a + j) step_i): exact cos/sin at offset a, then the rotation recurrence
function runSums(acc, a, len, step, cx, sx, w) {
  acc.fill(0);
  for (let i = 0; i < step.length; i++) {
    let c = Math.cos(a * step[i]), s = Math.sin(a * step[i]);
    const ci = cx[i], si = sx[i], wi = w[i];
    for (let j = 0; j < len; j++) {
      acc[j] += wi * c;
      const c2 = c * ci - s * si;
      s = s * ci + c * si;
      c = c2;
    }
  }
}

function correctionDim(turnsOver, d, base, length) {
  return (d * Math.log(length / (turnsOver * TWO_PI))) / (2.0 * Math.log(base));
}
/** YaRN's per-pair extrapolation weight (1 keeps theta_i, 0 takes theta_i / s). */
export function yarnRamp(d, base, originalLength, { beta_fast = 32.0, beta_slow = 1.0, truncate = true } = {}) {
  let low = correctionDim(beta_fast, d, base, originalLength);
  let high = correctionDim(beta_slow, d, base, originalLength);
  if (truncate) {
    low = Math.floor(low);
    high = Math.ceil(high);
  }
  low = Math.max(low, 0);
  high = Math.min(high, d - 1);
  if (low === high) high += 0.001;
  const out = new Float64Array(d / 2);
  for (let i = 0; i < d / 2; i++) out[i] = 1.0 - Math.min(1.0, Math.max(0.0, (i - low) / (high - low)));
  return out;
}
export function yarn(d, base, factor, originalLength, p = {}) {
  const w = yarnRamp(d, base, originalLength, p);
  const th = frequencies(d, base);
  const out = th.map((t, i) => t * w[i] + (t / factor) * (1.0 - w[i]));
  let att;
  if (p.attention_factor != null) att = p.attention_factor;
  else if (p.mscale && p.mscale_all_dim) att = yarnMscale(factor, p.mscale) / yarnMscale(factor, p.mscale_all_dim);
  else att = yarnMscale(factor);
  return { theta: out, attention_factor: att };
}
export function longrope(d, base, shortFactor, longFactor, originalLength, { factor, seq_len = null, attention_factor = null }) {
  const ext = seq_len != null && seq_len > originalLength ? longFactor : shortFactor;
  const att = attention_factor != null ? attention_factor
    : factor <= 1.0 ? 1.0 : Math.sqrt(1.0 + Math.log(factor) / Math.log(originalLength));
  return { theta: frequencies(d, base).map((t, i) => t / ext[i]), attention_factor: att };
}
export function llama3(d, base, factor, originalLength, { low_freq_factor = 1.0, high_freq_factor = 4.0 } = {}) {
  const lo = low_freq_factor, hi = high_freq_factor, L = originalLength;
  const th = frequencies(d, base);
  return th.map((t) => {
    const lam = t > 0 ? TWO_PI / t : Infinity;
    const out = lam > L / lo ? t / factor : t;
    if (lam < L / hi || lam > L / lo) return out;
    const g = (L / lam - lo) / (hi - lo);
    return ((1.0 - g) * out) / factor + g * out;
  });
}

/** Served frequencies and attention factor of a rule (ropegeo.scaling.scaled_frequencies).
 * `scaling` is null or a Scaling.to_dict()-like object: {rule, factor, original_max_position_embeddings, ...}. */
export function scaledFrequencies(scaling, d, base, seqLen = null) {
  if (scaling == null) return { theta: frequencies(d, base), attention_factor: 1.0 };
  const s = scaling, L = s.original_max_position_embeddings;
  switch (s.rule) {
    case "linear": return { theta: linear(frequencies(d, base), s.factor), attention_factor: 1.0 };
    case "ntk": return { theta: ntk(d, base, s.factor), attention_factor: 1.0 };
    case "dynamic": return { theta: dynamicNtk(d, base, s.factor, L, seqLen), attention_factor: 1.0 };
    case "yarn": return yarn(d, base, s.factor, L, s);
    case "longrope": return longrope(d, base, s.short_factor, s.long_factor, L,
      { factor: s.factor, seq_len: seqLen, attention_factor: s.attention_factor });
    case "llama3": return { theta: llama3(d, base, s.factor, L, s), attention_factor: 1.0 };
    default: throw new Error(`unknown rule ${s.rule}`);
  }
}

/** ropegeo.scaling.preset: a rule stretching trainLength to targetLength (s = target / train). */
export function preset(rule, trainLength, targetLength, params = {}) {
  if (rule == null || rule === "none") return null;
  const kw = { rule, factor: targetLength / trainLength };
  if (["dynamic", "yarn", "longrope", "llama3"].includes(rule)) kw.original_max_position_embeddings = trainLength;
  if (rule === "llama3") Object.assign(kw, { low_freq_factor: 1.0, high_freq_factor: 4.0 });
  if (rule === "yarn") Object.assign(kw, { beta_fast: 32.0, beta_slow: 1.0, truncate: true });
  return Object.assign(kw, params);
}

/** Per pair, the fraction of its circle visited when serving but never in training (turns). */
export function phaseNovelty(thetaTrain, thetaServed, trainLength, targetLength) {
  return thetaTrain.map((a, i) =>
    Math.max(0.0, Math.min(targetLength * thetaServed[i], TWO_PI) - Math.min(trainLength * a, TWO_PI)) / TWO_PI);
}

// ------------------------------------------------------------------------------ kernel
/** Pair weights normalised to sum to one (null: equal), as ropegeo._validate.pair_weights. */
export function pairWeights(weights, pairs) {
  if (weights == null) return new Float64Array(pairs).fill(1.0 / pairs);
  let mx = 0;
  for (const w of weights) mx = Math.max(mx, w);
  const scaled = Float64Array.from(weights, (w) => w / mx);
  let sum = 0;
  for (const w of scaled) sum += w;
  return scaled.map((w) => w / sum);
}

/** K at arbitrary offsets: sum_i w_i cos(delta s theta_i). */
export function kernel(offsets, theta, { scale = 1.0, weights = null } = {}) {
  const w = pairWeights(weights, theta.length);
  return Float64Array.from(offsets, (d) => {
    let k = 0;
    for (let i = 0; i < theta.length; i++) k += w[i] * Math.cos(d * scale * theta[i]);
    return k;
  });
}
export function adjacentSimilarity(theta, opts = {}) {
  return kernel([1.0], theta, opts)[0];
}

const BLOCK = 256; // re-seed the rotation recurrence with exact cos/sin every BLOCK offsets
/** K at every integer offset start..stop (inclusive), by a rotation recurrence per pair that is
 * re-seeded with exact cos/sin every 256 offsets (error about 1e-13). */
export function kernelRange(theta, start, stop, { scale = 1.0, weights = null } = {}) {
  const n = stop - start + 1, pairs = theta.length;
  const out = new Float64Array(n);
  const w = pairWeights(weights, pairs);
  const step = Float64Array.from(theta, (t) => t * scale);
  const cx = step.map(Math.cos), sx = step.map(Math.sin);
  const acc = new Float64Array(BLOCK);
  for (let b = 0; b < n; b += BLOCK) { // block-major: the block's sums stay in cache
    const len = Math.min(BLOCK, n - b);
    runSums(acc, start + b, len, step, cx, sx, w);
    out.set(len === BLOCK ? acc : acc.subarray(0, len), b);
  }
  return out;
}

/** Mean of the cosine row generated in a dtype at each position (the kernel as the deployment
 * computes it against offset 0); NaN where the position overflows the dtype. */
export function kernelInDtype(positions, theta, dtype, scale = 1.0) {
  const r = ROUNDERS[dtype], pairs = theta.length;
  const th = Float64Array.from(theta, r), sc = r(scale);
  const low = dtype === "float16" || dtype === "bfloat16";
  return Float64Array.from(positions, (position) => {
    let p = r(position);
    if (scale !== 1.0) p = r(p * sc);
    if (!Number.isFinite(p)) return NaN;
    let acc = 0;
    for (let i = 0; i < pairs; i++) {
      const a = r(p * th[i]);
      if (!Number.isFinite(a)) return NaN;
      const c = Math.cos(a);
      acc += dtype === "float64" ? c : low ? r(Math.fround(c)) : Math.fround(c);
    }
    return acc / pairs;
  });
}

/** The `top` entries with the largest value, largest first; ties go to the smaller offset. */
export function topOffsets(values, start, top) {
  const best = [];
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

/** ropegeo.geometry.near_collisions: the `top` integer offsets in [start, stop] with the largest K.
 * A long range is searched by bounds (the same answer, a fraction of the work): K is bounded above
 * on each run of SEARCH_RUN offsets from the phases at its centre, and only the runs whose bound
 * reaches the best values found are evaluated offset by offset. */
export function nearCollisions(theta, start, stop, { top = 5, scale = 1.0, weights = null } = {}) {
  const n = stop - start + 1, full = () => topOffsets(kernelRange(theta, start, stop, { scale, weights }), start, Math.min(top, n));
  if (n <= 4 * SEARCH_RUN || n * theta.length <= 1 << 16) return full();
  const pairs = theta.length, w = pairWeights(weights, pairs);
  const bound = runBounds(theta, start, n, scale, w);
  const order = Uint32Array.from(bound.keys()).sort((a, b) => bound[b] - bound[a]);
  const step = Float64Array.from(theta, (x) => x * scale), cx = step.map(Math.cos), sx = step.map(Math.sin);
  const acc = new Float64Array(SEARCH_RUN);
  const best = []; // the top values found so far, largest first (ties: the smaller offset first)
  const seed = 8; // after the runs bounded highest, the runs still above the bar say what is left to do
  for (let q = 0; q < order.length; q++) {
    const b = order[q];
    if (best.length >= top && bound[b] < best[top - 1].k) break; // no offset of this run (or a later one) can enter
    if (q === seed && best.length >= top) {
      let left = q; // runs bounded at or above the bar: when many, one pass over the range costs less
      while (left < order.length && bound[order[left]] >= best[top - 1].k) left++;
      if (left - q > 0.15 * order.length) return full();
    }
    // the run's offsets a .. a + len - 1 by the rotation recurrence from exact cos/sin at a (as kernelRange)
    const a = start + b * SEARCH_RUN, len = Math.min(SEARCH_RUN, stop - a + 1);
    runSums(acc, a, len, step, cx, sx, w);
    for (let j = 0; j < len; j++) {
      const v = acc[j];
      if (best.length >= top && (v < best[top - 1].k || (v === best[top - 1].k && a + j > best[top - 1].offset))) continue;
      best.push({ offset: a + j, k: v });
      best.sort((x, y) => y.k - x.k || x.offset - y.offset);
      if (best.length > top) best.pop();
    }
  }
  return best.map((x) => ({ offset: x.offset, similarity: Math.min(1.0, x.k) }));
}

const SEARCH_RUN = 16;
/** An upper bound of K over each run of SEARCH_RUN offsets: with x_i the phase at the run's centre
 * and |u_i| <= phi_i = s theta_i r (r: half the run), cos(x_i + u_i) <= cos x_i max(cos u_i) +
 * |sin x_i| max(sin u_i), summed with the weights (plus 1e-9 for the recurrence's rounding). */
function runBounds(theta, start, n, scale, w) {
  const runs = Math.ceil(n / SEARCH_RUN), r = (SEARCH_RUN - 1) / 2, pairs = theta.length;
  const out = new Float64Array(runs).fill(1e-9);
  for (let i = 0; i < pairs; i++) {
    const phi = scale * theta[i] * r, wi = w[i];
    if (phi >= Math.PI) { for (let b = 0; b < runs; b++) out[b] += wi; continue; }
    const cmin = Math.cos(phi), smax = phi >= Math.PI / 2 ? 1 : Math.sin(phi);
    const step = scale * theta[i] * SEARCH_RUN, ci = Math.cos(step), si = Math.sin(step);
    let c = 0, s = 0;
    for (let b = 0; b < runs; b++) {
      if (b % BLOCK === 0) { const x = (start + b * SEARCH_RUN + r) * scale * theta[i]; c = Math.cos(x); s = Math.sin(x); }
      out[b] += wi * Math.min(1, (c >= 0 ? c : c * cmin) + Math.abs(s) * smax);
      const c2 = c * ci - s * si;
      s = s * ci + c * si;
      c = c2;
    }
  }
  return out;
}

// ------------------------------------------------------------------------------ precision
/** Cosine and sine rows generated in a dtype (ropegeo.precision.generated_phases): the position
 * cast to the dtype (times the scale, in the dtype), theta cast, their product rounded, then cos
 * and sin rounded. Float16 and bfloat16 cos/sin are taken in float32 and rounded (as numpy and
 * ml_dtypes do). Returns {cos, sin}: Float64Arrays of length pairs, or null if the position
 * overflows the dtype. */
export function generatedPhases(position, theta, dtype = "float64", scale = 1.0) {
  const r = ROUNDERS[dtype];
  const angles = generatedAngles(position, theta, dtype, scale);
  if (angles == null) return null;
  const pairs = theta.length;
  const cos = new Float64Array(pairs), sin = new Float64Array(pairs);
  const low = dtype === "float16" || dtype === "bfloat16";
  for (let i = 0; i < pairs; i++) {
    const a = angles[i];
    if (dtype === "float64") {
      cos[i] = Math.cos(a);
      sin[i] = Math.sin(a);
    } else if (low) {
      cos[i] = r(Math.fround(Math.cos(a)));
      sin[i] = r(Math.fround(Math.sin(a)));
    } else {
      cos[i] = Math.fround(Math.cos(a));
      sin[i] = Math.fround(Math.sin(a));
    }
  }
  return { cos, sin };
}

/** The angles position * scale * theta_i as the dtype forms them (null on overflow). */
export function generatedAngles(position, theta, dtype = "float64", scale = 1.0) {
  const r = ROUNDERS[dtype];
  let p = r(position);
  if (scale !== 1.0) p = r(p * r(scale));
  if (!Number.isFinite(p)) return null;
  const out = Float64Array.from(theta, (t) => r(p * r(t)));
  return out.every(Number.isFinite) ? out : null;
}

/** Largest angle (radians) between generated and exact phase vectors over the pairs. */
export function maxPhaseError(position, theta, dtype, scale = 1.0) {
  const g = generatedPhases(position, theta, dtype, scale);
  if (g == null) return NaN;
  let worst = 0;
  for (let i = 0; i < theta.length; i++) {
    const t = position * scale * theta[i];
    const ct = Math.cos(t), st = Math.sin(t);
    worst = Math.max(worst, Math.abs(Math.atan2(g.sin[i] * ct - g.cos[i] * st, g.cos[i] * ct + g.sin[i] * st)));
  }
  return worst;
}

// ------------------------------------------------------------------------------ Gate B margins
/** Exact phase distance D(delta) = sqrt(4 sum_i w_i sin^2(delta s theta_i / 2)). */
export function differenceDistance(deltas, theta, { scale = 1.0, weights = null } = {}) {
  const w = pairWeights(weights, theta.length);
  return Float64Array.from(deltas, (d) => {
    let acc = 0;
    for (let i = 0; i < theta.length; i++) {
      const sn = Math.sin(d * (0.5 * scale * theta[i]));
      acc += sn * sn * w[i];
    }
    return Math.sqrt(4.0 * acc);
  });
}

function arithmeticStep(off) {
  const step = off[1] - off[0];
  for (let k = 2; k < off.length; k++) if (off[k] - off[k - 1] !== step) return null;
  return step;
}

const MAX_DIFF_SPAN = 1 << 22;
function marginDifference(off, theta, scale, w) {
  const step = arithmeticStep(off);
  if (step !== null) {
    const ks = Array.from({ length: off.length - 1 }, (_, k) => (k + 1) * step);
    const d = differenceDistance(ks, theta, { scale, weights: w });
    let j = 0;
    for (let k = 1; k < d.length; k++) if (d[k] < d[j]) j = k;
    return { margin: d[j], pair: [off[0], off[0] + ks[j]], method: "difference" };
  }
  const span = off[off.length - 1] - off[0];
  if (!off.every((o) => o === Math.round(o)) || span > MAX_DIFF_SPAN) return null;
  // D at every difference that occurs (the same numbers as ropegeo's table over the whole span)
  const table = new Map();
  for (let a = 0; a < off.length - 1; a++) for (let b = a + 1; b < off.length; b++) table.set(off[b] - off[a], 0);
  const diffs = [...table.keys()];
  const dist = differenceDistance(diffs, theta, { scale, weights: w });
  diffs.forEach((d, j) => table.set(d, dist[j]));
  let best = Infinity, pair = null;
  for (let a = 0; a < off.length - 1; a++) {
    for (let b = a + 1; b < off.length; b++) {
      const d = table.get(off[b] - off[a]);
      if (d < best) {
        best = d;
        pair = [off[a], off[b]];
      }
    }
  }
  return { margin: best, pair, method: "difference" };
}

function marginGenerated(off, theta, dtype, scale, origin, w, phases) {
  const pairs = theta.length;
  const rw = Float64Array.from(w, Math.sqrt);
  const sig = [];
  for (let j = 0; j < off.length; j++) {
    const g = generatedPhases(origin + off[j], theta, dtype, scale);
    if (g == null) return null;
    if (phases) phases.set(origin + off[j], g);
    const row = new Float64Array(2 * pairs);
    for (let i = 0; i < pairs; i++) {
      row[i] = g.cos[i] * rw[i];
      row[pairs + i] = g.sin[i] * rw[i];
    }
    sig.push(row);
  }
  // exact collapse: the first offset whose row repeats an earlier one is at distance exactly 0
  // (rows compared value by value: printing them as keys cost more than the whole search)
  const same = (a, b) => { for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false; return true; };
  for (let j = 1; j < off.length; j++) {
    for (let k = 0; k < j; k++) if (same(sig[k], sig[j])) return { margin: 0.0, pair: [off[k], off[j]], method: "generated" };
  }
  const norms = sig.map((r) => r.reduce((s, x) => s + x * x, 0));
  let best = Infinity, bj = 0, bk = 1;
  for (let j = 0; j < off.length - 1; j++) {
    const a = sig[j];
    for (let k = j + 1; k < off.length; k++) {
      const b = sig[k];
      let dot = 0;
      for (let i = 0; i < a.length; i++) dot += a[i] * b[i];
      const d2 = norms[j] + norms[k] - 2.0 * dot;
      if (d2 < best) {
        best = d2;
        bj = j;
        bk = k;
      }
    }
  }
  let exact = 0;
  for (let i = 0; i < sig[bj].length; i++) exact += (sig[bj][i] - sig[bk][i]) ** 2;
  return { margin: Math.sqrt(exact), pair: [off[bj], off[bk]], method: "generated" };
}

/** ropegeo.margins.separation_margin (weighting "pair" or per-pair amplitudes): the smallest phase
 * distance between the signatures of an offset set, and its most confusable pair. Returns null
 * when a generated position overflows the dtype. ``phases`` (a Map), when given, receives the
 * phases generated at each position, for a caller that needs them again. */
export function separationMargin(offsets, theta, { dtype = "float64", scale = 1.0, origin = 0.0, weights = null,
  phases = null } = {}) {
  const off = Float64Array.from(offsets).sort();
  const w = pairWeights(weights, theta.length);
  if (dtype === "float64") {
    const res = marginDifference(off, theta, scale, w);
    if (res !== null) return res;
  }
  return marginGenerated(off, theta, dtype, scale, origin, w, phases);
}

/** ropegeo.gates.b.rule.default_offsets: Gate B's local and distant offset sets for a target length and
 * an attention window (null: none); the span is min(target, window), as offsets at or beyond a
 * sliding window never reach attention. */
export function defaultOffsets(targetLength, window = null) {
  const sets = [];
  const span = Math.max(3, window == null ? targetLength : Math.min(targetLength, window));
  const m = Math.min(64, span - 1);
  sets.push({ name: `local 1..${m}`, offsets: Array.from({ length: m }, (_, k) => k + 1) });
  if (span > 128) {
    const hi = span - 1, n = 48;
    const lo = Math.log10(64), top = Math.log10(hi);
    const vals = new Set();
    for (let k = 0; k < n; k++) {
      const x = k === 0 ? 64 : k === n - 1 ? hi : 10 ** (k * ((top - lo) / (n - 1)) + lo);
      vals.add(roundHalfEven(x));
    }
    sets.push({ name: `distant 64..${hi.toLocaleString("en")}`, offsets: [...vals].sort((a, b) => a - b) });
  }
  return sets;
}
function roundHalfEven(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// ------------------------------------------------------------------------------ rotation clock
/** The rotary score <R_m q, R_n k> for one head with a pairing ("interleaved": (2i, 2i+1),
 * "half": (i, i + r/2) over the rotary width r), phases generated in a dtype at positions m and n;
 * coordinates beyond the rotary width pass through. */
export function rotaryScore(q, k, m, n, theta, { pairing = "interleaved", dtype = "float64", scale = 1.0 } = {}) {
  const pairs = theta.length;
  const gm = generatedPhases(m, theta, dtype, scale), gn = generatedPhases(n, theta, dtype, scale);
  if (gm == null || gn == null) return NaN;
  let s = 0;
  for (let i = 0; i < pairs; i++) {
    const a = pairing === "half" ? i : 2 * i, b = pairing === "half" ? i + pairs : 2 * i + 1;
    const qa = q[a] * gm.cos[i] - q[b] * gm.sin[i], qb = q[a] * gm.sin[i] + q[b] * gm.cos[i];
    const ka = k[a] * gn.cos[i] - k[b] * gn.sin[i], kb = k[a] * gn.sin[i] + k[b] * gn.cos[i];
    s += qa * ka + qb * kb;
  }
  for (let j = 2 * pairs; j < q.length; j++) s += q[j] * k[j]; // pass-through coordinates
  return s;
}

/** A seeded uniform generator (mulberry32) and standard normals, for the labs' test vectors. */
export function normals(count, seed) {
  let a = seed >>> 0;
  const uni = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = new Float64Array(count);
  for (let j = 0; j < count; j++) out[j] = Math.sqrt(-2 * Math.log(1 - uni())) * Math.cos(TWO_PI * uni());
  return out;
}

/** ropegeo.rotation.apply_rope for one vector: pair i of the layout turns by the angle
 * position * theta_i formed in `dtype` (position and theta cast, product rounded; cos and sin
 * then taken in float64, as apply_rope does); coordinates beyond the rotary width pass through. */
export function rotate(x, position, theta, { pairing = "interleaved", dtype = "float64" } = {}) {
  const pairs = theta.length, out = Float64Array.from(x);
  const angles = generatedAngles(position, theta, dtype);
  if (angles == null) return null;
  for (let i = 0; i < pairs; i++) {
    const a = pairing === "half" ? i : 2 * i, b = pairing === "half" ? i + pairs : 2 * i + 1;
    const c = Math.cos(angles[i]), sn = Math.sin(angles[i]);
    out[a] = x[a] * c - x[b] * sn;
    out[b] = x[a] * sn + x[b] * c;
  }
  return out;
}
export function dot(a, b) {
  let acc = 0;
  for (let j = 0; j < a.length; j++) acc += a[j] * b[j];
  return acc;
}

// ---- lab2d ----
// The 2D kernel of a head whose pairs turn with two position axes (ropegeo.book.widgets.axes_lab):
// pair i has a 2D frequency vector (fx_i, fy_i) and K(dx, dy) = mean_i cos(dx fx_i + dy fy_i).
// The splits of one bank theta_i = base^(-2i/d) between the axes: "blocked" (the first half of
// the pairs, the fast ones, to x), "interleaved" (even pairs to x, odd to y), "share" (the first
// floor(share * P + 0.5) pairs to x), "mixed" (every pair sees both axes, along the direction
// phi_i = i * golden angle: fx = theta cos phi, fy = theta sin phi).

export const SPLITS = ["blocked", "interleaved", "share", "mixed"];
export const GOLDEN_ANGLE = Math.PI * (3.0 - Math.sqrt(5.0));

/** Pairs given to the x axis by the contiguous splits ("blocked": half, rounded up; "share"). */
export function xPairs(pairs, split, share = 0.5) {
  if (split === "blocked") return Math.floor((pairs + 1) / 2);
  return Math.floor(share * pairs + 0.5);
}

/** The per-pair frequency vectors {fx, fy} (Float64Arrays of length d/2) of a split. */
export function axisFrequencies(headDim, base, split, share = 0.5) {
  const theta = frequencies(headDim, base), pairs = theta.length;
  const fx = new Float64Array(pairs), fy = new Float64Array(pairs);
  const nx = split === "blocked" || split === "share" ? xPairs(pairs, split, share) : 0;
  for (let i = 0; i < pairs; i++) {
    if (split === "mixed") {
      const phi = i * GOLDEN_ANGLE;
      fx[i] = theta[i] * Math.cos(phi);
      fy[i] = theta[i] * Math.sin(phi);
    } else if (split === "interleaved" ? i % 2 === 0 : i < nx) fx[i] = theta[i];
    else fy[i] = theta[i];
  }
  return { fx, fy };
}

/** K(dx, dy) = mean_i cos(dx fx_i + dy fy_i) for dx, dy in [-grid, grid]: a Float64Array of
 * (2 grid + 1)^2 entries, row dy + grid, column dx + grid. Per pair, cos and sin along each axis
 * are tabulated once and combined by cos(a + b) = cos a cos b - sin a sin b; pairs that turn with
 * one axis only add a row or column sum (error about 1e-16 against the direct sum). Rows dy >= 0
 * are summed, the others copied from K(-dx, -dy) = K(dx, dy). */
export function kernelGrid(fx, fy, grid) {
  const n = 2 * grid + 1, pairs = fx.length;
  const out = new Float64Array(n * n);
  const sx = new Float64Array(n), sy = new Float64Array(n); // one-axis pairs: sums over x and over y
  const cx = new Float64Array(n), snx = new Float64Array(n), cy = new Float64Array(n), sny = new Float64Array(n);
  for (let i = 0; i < pairs; i++) {
    if (fy[i] === 0 || fx[i] === 0) {
      const f = fy[i] === 0 ? fx[i] : fy[i], acc = fy[i] === 0 ? sx : sy;
      for (let k = 0; k < n; k++) acc[k] += Math.cos((k - grid) * f);
      continue;
    }
    for (let k = 0; k < n; k++) {
      const ax = (k - grid) * fx[i], ay = (k - grid) * fy[i];
      cx[k] = Math.cos(ax); snx[k] = Math.sin(ax); cy[k] = Math.cos(ay); sny[k] = Math.sin(ay);
    }
    for (let r = grid; r < n; r++) { // dy >= 0; K(-dx, -dy) = K(dx, dy) gives the rest
      const c = cy[r], s = sny[r], row = r * n;
      for (let k = 0; k < n; k++) out[row + k] += cx[k] * c - snx[k] * s;
    }
  }
  for (let r = grid; r < n; r++) {
    const row = r * n;
    for (let k = 0; k < n; k++) out[row + k] = (out[row + k] + sx[k] + sy[r]) / pairs;
  }
  for (let r = 0; r < grid; r++) {
    const row = r * n, mirror = (2 * grid - r) * n + 2 * grid;
    for (let k = 0; k < n; k++) out[row + k] = out[mirror - k];
  }
  return out;
}

/** The near-returns of a kernel grid: `count`, the offsets other than (0, 0) with K > threshold
 * (both of each +-pair), and `top`, the `top` largest K among the offsets with dy > 0 or
 * (dy = 0 and dx > 0) (one of each +-pair, as K(-d) = K(d)), largest first, ties in scan order
 * (dy, then dx, ascending): [{dx, dy, k}]. */
export function gridNearReturns(values, grid, threshold, top) {
  const n = 2 * grid + 1;
  let count = 0;
  const best = [];
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      const dx = c - grid, dy = r - grid, v = values[r * n + c];
      if (dx === 0 && dy === 0) continue;
      if (v > threshold) count++;
      if (dy < 0 || (dy === 0 && dx < 0)) continue;
      if (best.length === top && v <= best[best.length - 1].k) continue;
      let pos = best.length;
      while (pos > 0 && v > best[pos - 1].k) pos--;
      best.splice(pos, 0, { dx, dy, k: v });
      if (best.length > top) best.pop();
    }
  }
  return { count, top: best };
}
// ---- labsattn ----
// The attention-score heatmap (ropegeo/book/widgets/attention_lab.py, lab_attention.js): query and key
// contents defined by formula (so that Python derives the same vectors), and the causal matrix of
// rotary scores <R_m q, R_n k> = q^T R(n - m) k over sampled positions.

export const ATTENTION_CONTENTS = ["equal", "slow", "fast", "varied"];

/** Query and key of a content preset over head_dim coordinates, pair i = (2i, 2i + 1):
 * "equal": every pair (1, 0) in both (the score is then (d/2) K(n - m));
 * "slow" / "fast": (1, 0) on the slower half (i >= floor(P/2)) / faster half (i < ceil(P/2)) of
 * the P pairs, 0 elsewhere; "varied": q_j = cos(g (j + 1) (seed + 1)), k_j = sin(g (j + 1)
 * (seed + 2) + 1), g the golden angle (a seeded, formula-defined stand-in for random content). */
export function attentionContent(kind, headDim, seed = 0) {
  const pairs = headDim / 2, q = new Float64Array(headDim), k = new Float64Array(headDim);
  for (let i = 0; i < pairs; i++) {
    const on = kind === "equal" || (kind === "slow" && i >= Math.floor(pairs / 2)) || (kind === "fast" && i < Math.ceil(pairs / 2));
    if (on) { q[2 * i] = 1.0; k[2 * i] = 1.0; }
  }
  if (kind === "varied") {
    for (let j = 0; j < headDim; j++) {
      q[j] = Math.cos(GOLDEN_ANGLE * (j + 1) * (seed + 1));
      k[j] = Math.sin(GOLDEN_ANGLE * (j + 1) * (seed + 2) + 1.0);
    }
  }
  return { q, k };
}

/** Per-pair amplitude |q_i| |k_i| (pair i = (2i, 2i + 1)): the weight of pair i in the score. */
export function pairAmplitudes(q, k) {
  const pairs = q.length / 2;
  return Float64Array.from({ length: pairs }, (_, i) => Math.hypot(q[2 * i], q[2 * i + 1]) * Math.hypot(k[2 * i], k[2 * i + 1]));
}

/** The causal score matrix S[a][b] = gain * <R_(p_a) q, R_(p_b) k> for b <= a (NaN above the
 * diagonal), row-major G x G over positions p, with angles formed in `dtype` (as apply_rope's
 * phase_dtype) and rope = false for no position encoding (S = gain q.k everywhere). With exact
 * (float64) angles and evenly spaced positions each diagonal is computed once, in the relative
 * form gain * q^T R(p_b - p_a) k (equal to the absolute one up to rounding, about 1e-13). */
export function attentionScores(q, k, positions, theta, { dtype = "float64", rope = true, gain = 1.0 } = {}) {
  const g = positions.length, d = q.length, out = new Float64Array(g * g).fill(NaN);
  const step = g > 1 ? positions[1] - positions[0] : 0;
  if (!rope || (dtype === "float64" && positions.every((p, j) => p === j * step))) {
    for (let t = 0; t < g; t++) { // the diagonal a - b = t
      const v = gain * (rope ? dot(q, rotate(k, -t * step, theta)) : dot(q, k));
      for (let a = t; a < g; a++) out[a * g + a - t] = v;
    }
    return out;
  }
  const rq = new Float64Array(g * d), rk = new Float64Array(g * d); // rotated rows, packed
  for (let j = 0; j < g; j++) {
    rq.set(rope ? rotate(q, positions[j], theta, { dtype }) : q, j * d);
    rk.set(rope ? rotate(k, positions[j], theta, { dtype }) : k, j * d);
  }
  for (let a = 0; a < g; a++) {
    const qa = a * d;
    for (let b = 0; b <= a; b++) {
      const kb = b * d;
      let acc = 0;
      for (let j = 0; j < d; j++) acc += rq[qa + j] * rk[kb + j];
      out[a * g + b] = gain * acc;
    }
  }
  return out;
}

// ---- labsphase ----
// Angle tables and phase pipelines (the angle heatmap and the phase-error-by-pipeline labs).
// A pipeline ({angle_dtype, table_dtype, frequency_dtype}) is ropegeo.precision.PhasePipeline's
// stages 1 to 4: frequencies stored in frequency_dtype (null: exact), positions and their products
// with the frequencies formed in angle_dtype, cos and sin evaluated there and cast to table_dtype.
// Angles round bit-for-bit as ropegeo's; cos and sin are the correctly rounded values (see the top).

/** The four pipelines of chapter 5 (ropegeo.precision: uniform, deployed, buffer_cast). */
export const PIPELINES = {
  float32: { angle_dtype: "float32", table_dtype: "float32", frequency_dtype: null },
  deployed: { angle_dtype: "float32", table_dtype: "bfloat16", frequency_dtype: null },
  cast: { angle_dtype: "float32", table_dtype: "bfloat16", frequency_dtype: "bfloat16" },
  bfloat16: { angle_dtype: "bfloat16", table_dtype: "bfloat16", frequency_dtype: null },
};

/** A phase in [0, 2 pi): numpy's np.mod(a, 2 pi) (an exact remainder, then a shift for a < 0). */
export function wrapPhase(a) {
  const m = a % TWO_PI;
  return m < 0 ? m + TWO_PI : m === 0 ? 0 : m;
}

/** A phase difference a - b wrapped into [-pi, pi): np.mod(a - b + pi, 2 pi) - pi. */
export function phaseDifference(a, b) {
  return wrapPhase(a - b + Math.PI) - Math.PI;
}

/** Angles of many positions (ropegeo.rotation.phase_angles): one Float64Array of positions x pairs,
 * row-major, each angle as the dtype forms it, as generatedAngles (null if one overflows the dtype). */
export function angleTable(positions, theta, dtype = "float64", scale = 1.0) {
  const r = ROUNDERS[dtype], pairs = theta.length, out = new Float64Array(positions.length * pairs);
  const th = Float64Array.from(theta, r), sc = r(scale);
  for (let k = 0; k < positions.length; k++) {
    let p = r(positions[k]);
    if (scale !== 1.0) p = r(p * sc);
    for (let i = 0; i < pairs; i++) out[k * pairs + i] = r(p * th[i]);
  }
  for (const a of out) if (!Number.isFinite(a)) return null;
  return out;
}

/** The frequencies a pipeline multiplies: theta, or theta rounded to its stored dtype. */
function storedFrequencies(theta, pipe) {
  return pipe.frequency_dtype == null ? theta : Float64Array.from(theta, ROUNDERS[pipe.frequency_dtype]);
}

/** Stages 1 to 3 of a pipeline at one position: the angles per pair (null on overflow). */
export function pipelineAngles(position, theta, pipe, scale = 1.0) {
  return generatedAngles(position, storedFrequencies(theta, pipe), pipe.angle_dtype, scale);
}

/** Rounding of cos and sin evaluated in an angle dtype: float32 as computed there, float16 and
 * bfloat16 through float32 (as numpy and ml_dtypes evaluate them). */
function inAngleDtype(dtype) {
  if (dtype === "float64") return (x) => x;
  if (dtype === "float32") return Math.fround;
  const r = ROUNDERS[dtype];
  return (x) => r(Math.fround(x));
}

/** Stages 1 to 4 (ropegeo.precision.generated_phases of a PhasePipeline): {cos, sin} per pair, cos
 * and sin evaluated in the angle dtype (float16/bfloat16 through float32) and cast to the table dtype. */
export function pipelineTable(position, theta, pipe, scale = 1.0) {
  const angles = pipelineAngles(position, theta, pipe, scale);
  if (angles == null) return null;
  const ev = inAngleDtype(pipe.angle_dtype), tab = ROUNDERS[pipe.table_dtype];
  const cos = new Float64Array(angles.length), sin = new Float64Array(angles.length);
  for (let i = 0; i < angles.length; i++) { cos[i] = tab(ev(Math.cos(angles[i]))); sin[i] = tab(ev(Math.sin(angles[i]))); }
  return { cos, sin };
}

/** Phase error per pair at one position (ropegeo.precision.phase_error): the angle between the
 * pipeline's (cos, sin) and the exact unit vector at position * scale * theta_i (exact theta), in
 * [0, pi]; NaN for every pair if the pipeline overflows. */
export function pipelinePhaseError(position, theta, pipe, scale = 1.0) {
  const g = pipelineTable(position, theta, pipe, scale);
  return theta.map((t, i) => {
    if (g == null) return NaN;
    const x = position * scale * t, ct = Math.cos(x), st = Math.sin(x);
    return Math.abs(Math.atan2(g.sin[i] * ct - g.cos[i] * st, g.cos[i] * ct + g.sin[i] * st));
  });
}

/** The largest phase error over the pairs of theta at each position, for several pipelines at once
 * (ropegeo.precision.max_phase_error; with one pair, that pair's phase_error): {name: Float64Array}.
 * The same numbers as pipelinePhaseError, computed with the exact phases shared between pipelines. */
export function pipelineErrors(positions, theta, pipes) {
  const names = Object.keys(pipes), pairs = theta.length, n = positions.length;
  const out = Object.fromEntries(names.map((k) => [k, new Float64Array(n)]));
  const exact = new Float64Array(2 * pairs);
  const plan = names.map((name) => {
    const pipe = pipes[name], r = ROUNDERS[pipe.angle_dtype];
    return { name, r, ev: inAngleDtype(pipe.angle_dtype), tab: ROUNDERS[pipe.table_dtype],
      th: Float64Array.from(storedFrequencies(theta, pipe), r) };
  });
  for (let k = 0; k < n; k++) {
    const x = positions[k];
    for (let i = 0; i < pairs; i++) { const t = x * theta[i]; exact[2 * i] = Math.cos(t); exact[2 * i + 1] = Math.sin(t); }
    for (const { name, r, ev, tab, th } of plan) {
      const p = r(x);
      let worst = 0;
      for (let i = 0; i < pairs; i++) {
        const a = r(p * th[i]);
        if (!Number.isFinite(a)) { worst = NaN; break; }
        const c = tab(ev(Math.cos(a))), sn = tab(ev(Math.sin(a))), ct = exact[2 * i], st = exact[2 * i + 1];
        const e = Math.abs(Math.atan2(sn * ct - c * st, c * ct + sn * st));
        if (e > worst) worst = e;
      }
      out[name][k] = worst;
    }
  }
  return out;
}
