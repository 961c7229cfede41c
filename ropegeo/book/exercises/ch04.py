"""Checks for the exercises of chapter 4 (context extension).

The bench of the chapter: a 96-wide head with base 10,000 trained on 4,096 tokens (Phi-3-mini's
geometry), served at 131,072 tokens, so ``s = 32``.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ropegeo.book.exercises import (as_float_array, as_number, as_whole, call_student, correct, exercise, need,
                                    need_function, read_each, wrong)
from ropegeo.frequencies import frequencies
from ropegeo.geometry import kernel
from ropegeo.novelty import joint_novelty
from ropegeo.scaling import preset, scaled_frequencies, yarn_ramp

#: the chapter's bench
HEAD_DIM, BASE, TRAIN, TARGET = 96, 10_000.0, 4096, 131_072


def _close(x: float, y: float, rel: float = 1e-9) -> bool:
    return abs(x - y) <= rel * abs(y)


@exercise("ch04-llama3-bands")
def _llama3_bands(answer):
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        return wrong("expected a tuple (untouched, divided, blended) of three pair counts.")
    keep, div, blend = need(read_each(answer, as_whole, "each count as a whole number of pairs"))
    if not all(0 <= c <= 32 for c in (keep, div, blend)):
        return wrong("each count lies between 0 and 32: a head 64 wide has 32 rotary pairs.")
    lam = 2 * math.pi / frequencies(64, 500_000.0)
    want = (int(np.sum(lam < 8192 / 4)), int(np.sum(lam > 8192 / 1)), int(np.sum((lam >= 2048) & (lam <= 8192))))
    if (keep, div, blend) == want:
        return correct(f"{keep} untouched, {div} divided by 8, {blend} blended: {sum(want)} pairs in all.")
    if keep + div + blend != 32:
        return wrong(f"your counts add up to {keep + div + blend}; a head 64 wide has 32 rotary pairs.")
    if blend == 0 and (keep, div) in ((want[0], want[1] + want[2]), (want[0] + want[2], want[1])):
        return wrong("the pairs between the two wavelength edges are blended (the smooth band), neither kept nor divided.")
    lam_wrong_base = 2 * math.pi / frequencies(64, 10_000.0)
    if (keep, div) == (int(np.sum(lam_wrong_base < 2048)), int(np.sum(lam_wrong_base > 8192))):
        return wrong("those counts belong to base 10,000; Llama-3.1 uses rope_theta = 500,000.")
    return wrong("compare each pair's wavelength with 8,192 / high_freq_factor and 8,192 / low_freq_factor.")


def _slow(base: float, length: int, d: int = 128) -> int:
    # pairs that complete less than one turn over `length` tokens
    return int(np.sum(length * frequencies(d, base) / (2 * math.pi) < 1.0))


def _t_extra(new_base: float, d_extra: int) -> float:
    # Liu et al.'s bound: the wavelength 2 pi B'^(d_extra / d) of the first pair beyond d_extra / 2
    return 2 * math.pi * new_base ** (d_extra / 128)


def _abf_count_slip(n: int, want: int):
    if not 0 <= n <= 64:
        return wrong("the count lies between 0 and 64: Code Llama's heads have 64 rotary pairs.")
    if n == want:
        return None
    if n == _slow(1_000_000.0, 4096):
        return wrong("use Code Llama's training length, 16,384 tokens, not Llama 2's 4,096.")
    if n == _slow(10_000.0, 16_384):
        return wrong("use Code Llama's base, 1,000,000, not Llama 2's 10,000.")
    if n == _slow(10_000.0, 4096):
        return wrong("that is Llama 2's count (base 10,000 over 4,096 tokens); the question is about Code Llama.")
    if n == 64 - want:
        return wrong("that counts the pairs that do complete a turn; the question asks for those that do not.")
    return wrong("count the pairs with L theta_i / (2 pi) < 1, with theta_i = B^(-2i/d), d = 128, B = 1,000,000 "
                 "and L = 16,384.")


@exercise("ch04-abf-slow")
def _abf_slow(answer):
    pair = isinstance(answer, (tuple, list))
    if pair and len(answer) != 2:
        return wrong("expected a pair (count, T_extra): the number of slow pairs, then Liu et al.'s bound in tokens.")
    if pair and (as_number(answer[0])[0] or 0) > 64 >= (as_number(answer[1])[0] or 65) >= 0:
        return wrong("the order is swapped: answer (count, T_extra), the count of slow pairs first.")
    want = _slow(1_000_000.0, 16_384)
    n = need(as_whole(answer[0] if pair else answer, "the count of slow pairs (a whole number)"))
    slip = _abf_count_slip(n, want)
    if slip is not None:
        return slip
    if not pair:
        return wrong(f"{n} slow pairs is right; the exercise also asks for T_extra: answer with (count, T_extra).")
    t = need(as_number(answer[1], "T_extra in tokens as a number"))
    d_extra = 2 * (64 - _slow(10_000.0, 4096))  # fixed by Llama 2's pre-training
    target = _t_extra(1_000_000.0, d_extra)
    if abs(t - target) <= 5e-3 * target:  # rounded to three significant digits or better
        return correct(f"{n} slow pairs over 16,384 tokens, and T_extra = {t:,.0f} tokens. Now ask which of those "
                       "pairs completed a turn in Llama 2's pre-training (base 10,000, 4,096 tokens).")
    if _close(t, _t_extra(500_000.0, d_extra), 5e-3):
        return wrong("that is T_extra for base 500,000 (Llama 2 Long), which the text gives; use Code Llama's base.")
    if _close(t, _t_extra(1_000_000.0, 2 * (64 - want)), 5e-3):
        return wrong("you took d_extra from Code Llama's own stage; Liu et al. fix it by pre-training (Llama 2: "
                     "base 10,000 over 4,096 tokens).")
    if _close(t, _t_extra(10_000.0, d_extra), 5e-3):
        return wrong("T_extra is a wavelength at the new base B' = 1,000,000, not at Llama 2's 10,000.")
    if _close(t, 2 * math.pi * 1_000_000.0 ** (d_extra / 256), 5e-3):
        return wrong("the exponent is d_extra / d_head with d_head = 128; d_extra already counts coordinates, "
                     "twice the pairs.")
    return wrong(f"the count is right, but T_extra = {t:,.6g} is not 2 pi B'^(d_extra / d_head) for Code Llama "
                 "(within 0.5%).")


@exercise("ch04-llama3-half")
def _llama3_half(answer):
    x = need(as_number(answer, "a (fractional) pair index as a number"))
    d, base, L, lo, hi = 128, 500_000.0, 8192, 1.0, 4.0

    def index_at(turns):  # pair index whose frequency turns `turns` times over L
        return d * math.log(L / (2 * math.pi * turns)) / (2 * math.log(base))

    want = index_at((lo + hi) / 2)
    if _close(x, want, 1e-6) or abs(x - want) <= 0.5e-4:  # exact, or rounded to four decimals
        return correct(f"i = {x:.4f}: the weight is 1/2 where a pair turns (1 + 4) / 2 = 2.5 times over 8,192 tokens.")
    if _close(x, 2 * want, 1e-6):
        return wrong("that is 2i, the exponent's numerator; the pair index is half of it.")
    if _close(x, index_at(1 / (((1 / lo) + (1 / hi)) / 2)), 1e-6):
        return wrong("you took the midpoint of the two wavelength edges; the weight is linear in L / lambda "
                     "(turns), so its midpoint is the midpoint in turns.")
    if _close(x, index_at(math.sqrt(lo * hi)), 1e-6):
        return wrong("that is the midpoint in pair index (the geometric mean of the turns), where a ramp linear in "
                     "i, like YaRN's, is at 1/2; Llama 3's weight is linear in the turns themselves.")
    if abs(x - want) <= 0.5e-2:
        return wrong(f"{x:g} is close but not exact enough: give at least four decimals.")
    if abs(x - want) < 0.5:
        return wrong(f"{x:g} is close but not exact; solve g = 1/2 for the turns, then turns for i, without rounding.")
    return wrong("write g as a function of the turns L theta_i / (2 pi), solve g = 1/2, then solve for i.")


_YARN_CASES = [(10_000.0, 128, 4096, 32.0, 1.0), (10_000.0, 96, 4096, 32.0, 1.0), (1_000_000.0, 128, 32768, 32.0, 1.0),
               (500_000.0, 64, 8192, 16.0, 2.0), (10_000.0, 32, 2048, 8.0, 0.5)]


def _ramp_in_exponent(base, d, L, bf, bs):
    """The typical slip: ramp ends computed as 2i (the exponent's numerator) instead of i."""
    def end(r):
        return d * math.log(L / (2 * math.pi * r)) / math.log(base)

    low, high = max(math.floor(end(bf)), 0), min(math.ceil(end(bs)), d - 1)
    if low == high:
        high += 0.001
    return 1.0 - np.clip((np.arange(d // 2) - low) / (high - low), 0.0, 1.0)


def _code_ramp(base, d, L, fast, slow, truncate):
    """The reference code's ramp for any two ends, unchecked: it also computes a student's swapped ends,
    which :func:`ropegeo.scaling.yarn_ramp` refuses (``beta_fast`` below ``beta_slow``)."""
    def corr(turns):
        return d * math.log(L / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = corr(fast), corr(slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    return 1.0 - np.clip((np.arange(d // 2) - low) / (high - low), 0.0, 1.0)


def _paper_ramp(base, d, L, bf, bs):
    """The paper's gamma(r) = (r - alpha) / (beta - alpha), clipped, with alpha = beta_slow, beta = beta_fast."""
    r = L * frequencies(d, base) / (2 * math.pi)
    return np.clip((r - bs) / (bf - bs), 0.0, 1.0)


def _diagnose_ramp(got, base, d, L, bf, bs, truncate, where):
    """Why one output is neither ramp, as precisely as the common slips allow."""
    want = yarn_ramp(d, base, L, beta_fast=bf, beta_slow=bs, truncate=truncate)
    if np.allclose(got, 1.0 - want, atol=1e-9) or np.allclose(got, 1.0 - _paper_ramp(base, d, L, bf, bs), atol=1e-9):
        return wrong(f"for {where} your weights are reversed: 1 must mean 'keep theta_i' (the fast pairs).")
    if np.allclose(got, yarn_ramp(d, base, L, beta_fast=bf, beta_slow=bs, truncate=not truncate), atol=1e-9):
        return wrong(f"for {where} your function gives the ramp for truncate={not truncate}: with truncate the "
                     "ends are rounded outward to whole pairs, without it they stay fractional.")
    if np.allclose(got, _code_ramp(base, d, L, bs, bf, truncate), atol=1e-9):
        return wrong(f"for {where} beta_fast and beta_slow are swapped: the fast end is where pairs turn beta_fast times.")
    if np.allclose(got, _ramp_in_exponent(base, d, L, bf, bs), atol=1e-9):
        return wrong(f"for {where} your ramp ends are twice the pair index: you solved for 2i, the exponent's "
                     "numerator; solve for the pair index i itself.")
    bad = int(np.argmax(~np.isclose(got, want, rtol=0.0, atol=1e-9)))
    return wrong(f"for {where} the weight of pair {bad} matches neither the code's ramp nor the paper's; find the pair "
                 "index where a pair turns r times over L, or the turns of each pair.")


def _call_watching_ramp(fn, *args):
    """``call_student(fn, *args)`` plus whether :func:`ropegeo.scaling.yarn_ramp` ran inside the call.

    A profile hook sees every Python call, so a wrapper is caught however it reached the function
    (``S.yarn_ramp``, an imported name, ``S.yarn`` or a configured ``Scaling``).
    """
    ramp, seen = yarn_ramp.__code__, []

    def watch(frame, event, arg):
        if event == "call" and frame.f_code is ramp:
            seen.append(True)

    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        out, err = call_student(fn, *args)
    finally:
        sys.setprofile(previous)
    return out, err, bool(seen)


@exercise("ch04-yarn-ramp")
def _yarn_ramp(answer):
    need_function(answer, "expected a function yarn_weights(base, rotary_dim, original_length, beta_fast, beta_slow, "
                  "truncate).")
    forms = set()
    for base, d, L, bf, bs in _YARN_CASES:
        for truncate in (True, False):
            where = (f"(base={base:g}, rotary_dim={d}, original_length={L}, beta_fast={bf:g}, beta_slow={bs:g}, "
                     f"truncate={truncate})")
            out, err, wrapped = _call_watching_ramp(answer, base, d, L, bf, bs, truncate)
            if err:
                return wrong(f"for {where} {err}")
            if wrapped:
                return wrong("your function calls ropegeo's own yarn_ramp (directly, or through ropegeo.scaling's "
                             "rules): write the ramp yourself, without ropegeo.scaling.")
            got = need(as_float_array(out, f"for {where} what your function returned", finite=False))
            want = yarn_ramp(d, base, L, beta_fast=bf, beta_slow=bs, truncate=truncate)
            if got.shape != want.shape:
                return wrong(f"for {where} expected one weight per pair, shape {want.shape}, got {got.shape}.")
            if np.allclose(got, want, atol=1e-9):
                forms.add("code")
            elif np.allclose(got, _paper_ramp(base, d, L, bf, bs), atol=1e-9):
                forms.add("paper")
            else:
                return _diagnose_ramp(got, base, d, L, bf, bs, truncate, where)
    if forms == {"code"}:
        return correct("your ramp is the one the reference code and transformers run, with and without truncate.")
    if forms == {"paper"}:
        return correct("your ramp is the paper's, linear in turns (truncate plays no part in it). Models run the "
                       "code's ramp; write that one too and compare them.")
    return wrong("your function switches between the paper's ramp and the code's from one case to another; "
                 "settle on one definition.")


def _first_beyond(rule: str) -> int:
    theta = frequencies(HEAD_DIM, BASE)
    served = scaled_frequencies(preset(rule, train_length=TRAIN, target_length=TARGET), HEAD_DIM, BASE, TARGET)[0]
    step = math.sqrt(2.0 * (1.0 - float(kernel(1.0, theta))))
    res = joint_novelty(theta, served, TRAIN, range(TRAIN))
    return int(np.argmax(res.distance > step))


@exercise("ch04-joint-first")
def _joint_first(answer):
    n = need(as_whole(answer, "an offset (a whole number)"))
    if n < 0:
        return wrong(f"offsets are non-negative, got {n}.")
    want = _first_beyond("yarn")
    if n == want:
        return correct(f"offset {n}: here the fast pairs and the interpolated slow pairs first disagree about "
                       "the offset by more than one training step.")
    if n == want - 1:
        return wrong("at that offset the distance is still below the neighbour distance; the first offset beyond it "
                     "is one later.")
    if n == _first_beyond("llama3"):
        return wrong("that is Llama 3's first offset; the question is about YaRN with its defaults (32, 1).")
    if n == _first_beyond("ntk"):
        return wrong("that is the NTK rule's first offset; the question is about YaRN.")
    if n >= TRAIN:
        return wrong("the crossing happens far below the training length: static rules change short offsets too.")
    if n < want:
        return wrong(f"at offset {n:,} YaRN's served offset is still within D(1) = sqrt(2 (1 - K(1))) of some "
                     "training offset; keep scanning.")
    # on the bench every offset from the first crossing up to L stays beyond D(1) (tests/test_exercises_ch04.py)
    return wrong(f"at offset {n:,} YaRN's distance exceeds D(1) = sqrt(2 (1 - K(1))), but an earlier offset "
                 "already does: find the first one.")
