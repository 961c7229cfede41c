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
export function ntk(base, d, factor) {
  return frequencies(d, base * factor ** (d / (d - 2)));
}
export function dynamicNtk(base, d, factor, originalLength, seqLen = null) {
  const n = seqLen == null ? originalLength : Math.max(seqLen, originalLength);
  return frequencies(d, base * ((factor * n) / originalLength - (factor - 1.0)) ** (d / (d - 2)));
}
export function yarnMscale(scale, mscale = 1.0) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * Math.log(scale) + 1.0;
}
function correctionDim(turnsOver, d, base, length) {
  return (d * Math.log(length / (turnsOver * TWO_PI))) / (2.0 * Math.log(base));
}
/** YaRN's per-pair extrapolation weight (1 keeps theta_i, 0 takes theta_i / s). */
export function yarnRamp(base, d, originalLength, { beta_fast = 32.0, beta_slow = 1.0, truncate = true } = {}) {
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
export function yarn(base, d, factor, originalLength, p = {}) {
  const w = yarnRamp(base, d, originalLength, p);
  const th = frequencies(d, base);
  const out = th.map((t, i) => t * w[i] + (t / factor) * (1.0 - w[i]));
  let att;
  if (p.attention_factor != null) att = p.attention_factor;
  else if (p.mscale && p.mscale_all_dim) att = yarnMscale(factor, p.mscale) / yarnMscale(factor, p.mscale_all_dim);
  else att = yarnMscale(factor);
  return { theta: out, attention_factor: att };
}
export function longrope(base, d, shortFactor, longFactor, originalLength, { factor, seq_len = null, attention_factor = null }) {
  const ext = seq_len != null && seq_len > originalLength ? longFactor : shortFactor;
  const att = attention_factor != null ? attention_factor
    : factor <= 1.0 ? 1.0 : Math.sqrt(1.0 + Math.log(factor) / Math.log(originalLength));
  return { theta: frequencies(d, base).map((t, i) => t / ext[i]), attention_factor: att };
}
export function llama3(base, d, factor, originalLength, { low_freq_factor = 1.0, high_freq_factor = 4.0 } = {}) {
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
export function scaledFrequencies(scaling, base, d, seqLen = null) {
  if (scaling == null) return { theta: frequencies(d, base), attention_factor: 1.0 };
  const s = scaling, L = s.original_max_position_embeddings;
  switch (s.rule) {
    case "linear": return { theta: linear(frequencies(d, base), s.factor), attention_factor: 1.0 };
    case "ntk": return { theta: ntk(base, d, s.factor), attention_factor: 1.0 };
    case "dynamic": return { theta: dynamicNtk(base, d, s.factor, L, seqLen), attention_factor: 1.0 };
    case "yarn": return yarn(base, d, s.factor, L, s);
    case "longrope": return longrope(base, d, s.short_factor, s.long_factor, L,
      { factor: s.factor, seq_len: seqLen, attention_factor: s.attention_factor });
    case "llama3": return { theta: llama3(base, d, s.factor, L, s), attention_factor: 1.0 };
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
    acc.fill(0);
    for (let i = 0; i < pairs; i++) {
      const a = (start + b) * step[i];
      let c = Math.cos(a), s = Math.sin(a);
      const ci = cx[i], si = sx[i], wi = w[i];
      for (let j = 0; j < len; j++) {
        acc[j] += wi * c;
        const c2 = c * ci - s * si;
        s = s * ci + c * si;
        c = c2;
      }
    }
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

/** ropegeo.geometry.near_collisions: the `top` integer offsets in [start, stop] with the largest K. */
export function nearCollisions(theta, start, stop, { top = 5, scale = 1.0, weights = null } = {}) {
  const values = kernelRange(theta, start, stop, { scale, weights });
  return topOffsets(values, start, Math.min(top, values.length));
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

function marginGenerated(off, theta, dtype, scale, origin, w) {
  const pairs = theta.length;
  const rw = Float64Array.from(w, Math.sqrt);
  const sig = [];
  const seen = new Map();
  for (let j = 0; j < off.length; j++) {
    const g = generatedPhases(origin + off[j], theta, dtype, scale);
    if (g == null) return null;
    const row = new Float64Array(2 * pairs);
    for (let i = 0; i < pairs; i++) {
      row[i] = g.cos[i] * rw[i];
      row[pairs + i] = g.sin[i] * rw[i];
    }
    sig.push(row);
  }
  // exact collapse: the first offset whose row repeats an earlier one is at distance exactly 0
  for (let j = 0; j < off.length; j++) {
    const key = Array.prototype.join.call(sig[j], ",");
    if (seen.has(key)) return { margin: 0.0, pair: [off[seen.get(key)], off[j]], method: "generated" };
    seen.set(key, j);
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
 * when a generated position overflows the dtype. */
export function separationMargin(offsets, theta, { dtype = "float64", scale = 1.0, origin = 0.0, weights = null } = {}) {
  const off = Float64Array.from(offsets).sort();
  const w = pairWeights(weights, theta.length);
  if (dtype === "float64") {
    const res = marginDifference(off, theta, scale, w);
    if (res !== null) return res;
  }
  return marginGenerated(off, theta, dtype, scale, origin, w);
}

/** ropegeo.gates.audit.default_offsets: Gate B's local and distant offset sets for a target length and
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
