"""Checks for the exercises of chapter 4 (context extension).

The bench of the chapter: a 96-wide head with base 10,000 trained on 4,096 tokens (Phi-3-mini's
geometry), served at 131,072 tokens, so ``s = 32``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from . import as_float_array, as_number, as_whole, call_student, correct, exercise, wrong
from ..frequencies import frequencies

#: the chapter's bench
HEAD_DIM, BASE, TRAIN, TARGET = 96, 10_000.0, 4096, 131_072
FACTOR = TARGET / TRAIN


def _number(answer, what: str):
    return as_number(answer, f"{what} as a number")


def _close(x: float, y: float, rel: float = 1e-9) -> bool:
    return abs(x - y) <= rel * abs(y)


@exercise("ch04-pi-step")
def _pi_step(answer):
    x, bad = _number(answer, "an angle in radians")
    if bad:
        return bad
    # pair 0 turns theta_0 = 1 radian per token; interpolation divides positions by s
    want = frequencies(HEAD_DIM, BASE)[0] * TRAIN / TARGET
    if _close(x, want):
        return correct(f"{x:g} rad: interpolation shrinks every adjacent step by the same factor s.")
    if _close(x, 1.0):
        return wrong("1 rad is the step without interpolation (raw extrapolation); divide positions by s.")
    if _close(x, FACTOR):
        return wrong("that is s itself: interpolation makes the step smaller, not larger.")
    if _close(x, 1 / 8):
        return wrong("1/8 belongs to the 4,096 -> 32,768 example; this bench stretches 4,096 to 131,072.")
    if _close(x, 2 * math.pi / FACTOR) or _close(x, 2 * math.pi / TARGET * TRAIN):
        return wrong("the fastest pair turns 1 radian per token, not 2 pi: no factor 2 pi here.")
    return wrong(f"{x:g} rad is not the interpolated step of pair 0; start from theta_0 and the factor s.")


@exercise("ch04-llama3-bands")
def _llama3_bands(answer):
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        return wrong("expected a tuple (untouched, divided, blended) of three pair counts.")
    if any(isinstance(a, bool) or not isinstance(a, numbers.Integral) for a in answer):
        return wrong("each count must be a whole number of pairs (int).")
    keep, div, blend = map(int, answer)
    if not all(0 <= c <= 64 for c in (keep, div, blend)):
        return wrong("each count lies between 0 and 64: Llama-3.1-8B's heads have 64 rotary pairs.")
    theta = frequencies(128, 500_000.0)
    lam = 2 * math.pi / theta
    want = (int(np.sum(lam < 8192 / 4)), int(np.sum(lam > 8192 / 1)), int(np.sum((lam >= 2048) & (lam <= 8192))))
    if (keep, div, blend) == want:
        return correct(f"{keep} untouched, {div} divided by 8, {blend} blended: {sum(want)} pairs in all.")
    if keep + div + blend != 64:
        return wrong(f"your counts add up to {keep + div + blend}; Llama-3.1-8B's heads have 64 rotary pairs.")
    if blend == 0 and (keep, div) in ((want[0], want[1] + want[2]), (want[0] + want[2], want[1])):
        return wrong("the pairs between the two wavelength edges are blended (the smooth band), neither kept nor divided.")
    lam_wrong_base = 2 * math.pi / frequencies(128, 10_000.0)
    alt = (int(np.sum(lam_wrong_base < 2048)), int(np.sum(lam_wrong_base > 8192)))
    if (keep, div) == alt:
        return wrong("those counts belong to base 10,000; Llama-3.1 uses rope_theta = 500,000.")
    return wrong("compare each pair's wavelength with 8,192 / high_freq_factor and 8,192 / low_freq_factor.")


@exercise("ch04-ntk-base")
def _ntk_base(answer):
    x, bad = _number(answer, "a base")
    if bad:
        return bad
    want = BASE * FACTOR ** (HEAD_DIM / (HEAD_DIM - 2))
    if _close(x, want, 1e-7):
        return correct(f"B' = {x:,.6g}: the slowest pair becomes exactly {FACTOR:g} times slower, the fastest keeps 1 rad.")
    if _close(x, BASE * FACTOR, 1e-7):
        return wrong("with B' = s B the slowest pair slows by s^((d-2)/d), a little less than s: solve for the exponent.")
    if _close(x, BASE * FACTOR ** ((HEAD_DIM - 2) / HEAD_DIM), 1e-7):
        return wrong("the exponent is upside down: the slowest pair's exponent is -(d-2)/d, so B' needs s^(d/(d-2)).")
    if _close(x, BASE / FACTOR ** (HEAD_DIM / (HEAD_DIM - 2)), 1e-7):
        return wrong("a smaller base makes every pair faster; the slow pairs must get slower.")
    return wrong("set theta'_last = theta_last / s with theta_i = B'^(-2i/d) and solve for B'.")


_YARN_CASES = [
    (10_000.0, 128, 4096, 32.0, 1.0),
    (10_000.0, 96, 4096, 32.0, 1.0),
    (1_000_000.0, 128, 32768, 32.0, 1.0),
    (500_000.0, 64, 8192, 16.0, 2.0),
    (10_000.0, 32, 2048, 8.0, 0.5),
]


def _ramp_in_exponent(base, d, L, bf, bs):
    """The typical slip: ramp ends computed as 2i (the exponent's numerator) instead of i."""
    def end(r):
        return d * math.log(L / (2 * math.pi * r)) / math.log(base)

    low, high = max(math.floor(end(bf)), 0), min(math.ceil(end(bs)), d - 1)
    if low == high:
        high += 0.001
    return 1.0 - np.clip((np.arange(d // 2) - low) / (high - low), 0.0, 1.0)


@exercise("ch04-yarn-ramp")
def _yarn_ramp(answer):
    from ..scaling import yarn_ramp

    if not callable(answer):
        return wrong("expected a function yarn_weights(base, rotary_dim, original_length, beta_fast, beta_slow).")
    for base, d, L, bf, bs in _YARN_CASES:
        where = f"(base={base:g}, rotary_dim={d}, original_length={L}, beta_fast={bf:g}, beta_slow={bs:g})"
        out, err = call_student(answer, base, d, L, bf, bs)
        if err:
            return wrong(f"for {where} {err}")
        got, bad = as_float_array(out, f"for {where} what your function returned", finite=False)
        if bad:
            return bad
        want = yarn_ramp(base, d, L, beta_fast=bf, beta_slow=bs)
        if got.shape != want.shape:
            return wrong(f"for {where} expected one weight per pair, shape {want.shape}, got {got.shape}.")
        if np.allclose(got, want, atol=1e-9):
            continue
        if np.allclose(got, 1.0 - want, atol=1e-9):
            return wrong(f"for {where} your weights are reversed: 1 must mean 'keep theta_i' (the fast pairs).")
        if np.allclose(got, yarn_ramp(base, d, L, beta_fast=bf, beta_slow=bs, truncate=False), atol=1e-9):
            return wrong(f"for {where} the ramp ends are not rounded: floor the fast end and ceil the slow end.")
        if np.allclose(got, yarn_ramp(base, d, L, beta_fast=bs, beta_slow=bf), atol=1e-9):
            return wrong(f"for {where} beta_fast and beta_slow are swapped: the fast end is where pairs turn beta_fast times.")
        if np.allclose(got, _ramp_in_exponent(base, d, L, bf, bs), atol=1e-9):
            return wrong(f"for {where} your ramp ends are twice the pair index: you solved for 2i, the exponent's "
                         "numerator; the ramp runs over the pair index i = d ln(L / 2 pi r) / (2 ln B).")
        bad = int(np.argmax(~np.isclose(got, want, rtol=0.0, atol=1e-9)))
        return wrong(f"for {where} the weight of pair {bad} is off; find the pair index where a pair turns r times over L.")
    return correct("your ramp matches YaRN's on every test case.")


@exercise("ch04-longrope-switch")
def _longrope_switch(answer):
    n, bad = as_whole(answer, "a sequence length (a whole number)")
    if bad:
        return bad
    if n < 1:
        return wrong(f"a sequence holds at least one token, got {n}.")
    from ..manifest import load_model

    m = load_model("phi-3-mini-128k-instruct")
    short = m.theta(None)
    # brute force around the plausible range: the first length whose frequencies differ
    want = next(length for length in range(1, 2 * TRAIN + 2) if not np.array_equal(m.theta(length), short))
    if n == want:
        return correct(f"{n:,}: up to the original length the short factors apply; one token more switches to the long ones.")
    if n == want - 1:
        return wrong("a sequence of exactly the original length still uses the short factors.")
    if n in (m.max_position_embeddings, m.max_position_embeddings + 1):
        return wrong("the switch happens at the pre-training length, not at the declared context.")
    return wrong(f"at {n:,} tokens the model uses the {'long' if n > want else 'short'} list; probe theta(n) around the original length.")
