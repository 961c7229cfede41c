"""Checks for the exercises of chapter 6 (the audit as one procedure)."""

from __future__ import annotations

import functools
import math

import numpy as np

from ropegeo.book.exercises import as_float_array, as_items, as_number, as_whole, call_student, correct, exercise, read_each, wrong
from ropegeo.frequencies import frequencies
from ropegeo.gates.a.call import GateAError
from ropegeo.gates.procedure import audit
from ropegeo.geometry import kernel
from ropegeo.margins import separation_margin
from ropegeo.models.manifest import RopeManifest
from ropegeo.toy import distant_rival, evaluate, score_profile, train_offset_head

__all__ = ["COLLISION_OFFSETS", "COLLISION_FACTOR", "RIVAL_LENGTHS", "INTERPOLATION_FACTOR"]

COLLISION_OFFSETS = (5, 6288)
#: ch06-collision-margin serves the head-dim-8 ruler interpolated by this factor (every frequency divided by it).
COLLISION_FACTOR = 2
RIVAL_LENGTHS = (256, 384, 512)
INTERPOLATION_FACTOR = 4.0


def _number(answer, what: str):
    return as_number(answer, f"one number ({what})")


# ---- ch06-collision-margin ------------------------------------------------------------------
@exercise("ch06-collision-margin")
def _check_collision(answer):

    x, bad = _number(answer, "the phase distance D")
    if bad:
        return bad
    theta = frequencies(8) / COLLISION_FACTOR
    a, b = COLLISION_OFFSETS
    k = float(kernel(b - a, theta))
    truth = math.sqrt(2.0 * (1.0 - k))
    if abs(x - truth) <= 1e-6 * max(1.0, truth) or abs(x - truth) <= 0.5e-4:  # exact, or four printed decimals
        return correct("halving every frequency leaves the three fast pairs near whole turns but puts the slowest on "
                       "half a turn, so on this ruler the two offsets are far apart.")
    if abs(x - truth) <= 0.5e-2:
        return wrong(f"{x:g} is close but not precise enough to tell from a near miss: give at least four decimals.")
    k_raw = float(kernel(b - a, frequencies(8)))
    if abs(x - math.sqrt(2.0 * (1.0 - k_raw))) <= 1e-6:
        return wrong(f"that is the distance on the original ruler, which the chapter showed; divide every frequency by "
                     f"{COLLISION_FACTOR} first.")
    if abs(x - k) <= 1e-6:
        return wrong("that is the similarity K of the two offsets, not their distance; Gate B's margin is the "
                     "chord between the two phase signatures, small when K is close to 1.")
    if abs(x - (1.0 - k)) <= 1e-6:
        return wrong("that is 1 - K; the margin is the chord length between the signatures, which grows like the "
                     "square root of 1 - K (times a constant).")
    if abs(x - math.sqrt(1.0 - k)) <= 1e-6 or abs(x - 2.0 * math.sqrt(1.0 - k)) <= 1e-6:
        return wrong("right idea, wrong constant: the squared chord between two unit phase vectors at angle phi "
                     "is 2 - 2 cos phi; average that over the pairs before taking the root.")
    for off in COLLISION_OFFSETS:
        if abs(x - math.sqrt(2.0 * (1.0 - float(kernel(off, theta))))) <= 1e-6:
            return wrong("the distance depends on the difference of the two offsets only (the relative law); "
                         "you used one offset on its own.")
    if abs(x - math.sqrt(2.0 * (1.0 - float(kernel(b - a, frequencies(8) * COLLISION_FACTOR))))) <= 1e-6:
        return wrong("interpolation divides the frequencies by the factor (positions are squeezed); you multiplied.")
    return wrong(f"not the equal-weight phase distance of the two offsets on the head-dim-8 bank (base 10,000) with "
                 f"every frequency divided by {COLLISION_FACTOR}.")


# ---- ch06-yarn-log: when YaRN's logit factor and log-length scaling agree to first order --------
@exercise("ch06-yarn-log")
def _check_yarn_log(answer):
    x, bad = _number(answer, "the training length L")
    if bad:
        return bad
    truth = math.exp(5.0)  # (1 + 0.1 ln s)**2 = 1 + 0.2 ln s + ...; ln(sL)/ln L = 1 + ln s / ln L
    if abs(x - truth) <= 1e-6 * truth or abs(x - truth) <= 0.005:  # exact, or two printed decimals (148.41)
        return correct("both multipliers are 1 + 0.2 ln s to first order there; at L = 64 (ln L = 4.16) "
                       "log-length scaling grows a little faster.")
    if abs(x - truth) <= 0.5:
        return wrong(f"{x:g} is close but not precise enough: give L to at least two decimals (or as an exact "
                     "expression).")
    if abs(x - 5.0) <= 1e-9:
        return wrong("that is ln L; the question asks for the training length itself.")
    if abs(x - math.exp(10.0)) <= 1e-6 * math.exp(10.0):
        return wrong("you matched YaRN's factor itself; the logits are multiplied by its square, because both the "
                     "queries and the keys are scaled by it.")
    if abs(x - 64.0) <= 1e-9:
        return wrong("at 64 the two multipliers are close but not equal to first order: expand both in ln s.")
    return wrong("expand both multipliers to first order in ln s and equate the coefficients of ln s.")


# ---- ch06-reset-winner -----------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _head(seed: int, head_dim: int = 16, offset: int = 5, train_length: int = 64, steps: int = 1000):

    return train_offset_head(offset, head_dim=head_dim, base=10_000.0, train_length=train_length, seed=seed,
                             steps=steps)


_RESET_CASES = ((0, 16, 5, 64), (3, 8, 3, 48))


@exercise("ch06-reset-winner")
def _check_reset(answer):

    if not callable(answer):
        return wrong(f"expected a function reset_winners(head, length), got {type(answer).__name__}")
    for seed, d, off, length in _RESET_CASES:
        head = _head(seed, d, off, 64)
        truth = evaluate(head, length, query_reset=True).winner_position
        out, err = call_student(answer, head, length, what="reset_winners")
        if err:  # the student's function failed: say how
            return wrong(err)
        got, bad = as_float_array(out, "what reset_winners returned")
        if bad:
            return bad
        if got.shape != truth.shape:
            return wrong(f"expected one key position per query m = offset .. length-1, i.e. shape {truth.shape}, "
                         f"got {got.shape}")
        if not np.all(got == np.round(got)):
            return wrong("key positions must be integers")
        if np.any(got < 0) or np.any(got >= length):
            return wrong(f"key positions lie between 0 and length - 1 = {length - 1}")
        got = got.astype(np.int64)
        if np.array_equal(got, truth):
            continue
        queries = np.arange(off, length)
        if np.array_equal(got, queries - off):
            return wrong("that is where the head attends without the reset; with every query at position 0 the "
                         "displacement to key n is -n.")
        plus = score_profile(head, np.arange(length))  # a sign error: key n scored at +n
        if np.array_equal(got, [int(np.argmax(plus[:m])) for m in queries]):
            return wrong("from position 0 the displacement to key n is 0 - n = -n: you scored key n at +n.")
        if np.any(got >= queries):
            return wrong("query m may only attend to keys n < m: some of your winners have not appeared yet.")
        if np.unique(got).size == 1 and np.unique(truth).size > 1:
            return wrong("early queries see only a few keys, so they cannot all pick the same one: take the best "
                         "key among those visible to each query.")
        return wrong(f"the winners differ from a full evaluation (head dim {d}, offset {off}, length {length}, "
                     f"{int(np.sum(got != truth))} of {truth.size} queries).")
    return correct("a running maximum of score(-n): once the best key has appeared, every later query picks it.")


# ---- ch06-interpolated-rope --------------------------------------------------------------------
@exercise("ch06-interpolated-rope")
def _check_interpolated(answer):

    if not callable(answer):
        return wrong(f"expected a function my_rope(x, positions), got {type(answer).__name__}")
    # a stub's NotImplementedError surfaces here (Gate A would count it as a refusal)
    _, err = call_student(answer, np.zeros((2, 64)), np.arange(2), what="my_rope(np.zeros((2, 64)), np.arange(2))")
    if err:
        return wrong(err)
    declared = RopeManifest(head_dim=64, base=10_000.0, pairing="interleaved", phase_dtype="float32",
                            scaling={"rule": "linear", "factor": INTERPOLATION_FACTOR})
    try:
        report = audit(answer, manifest=declared, offsets=range(1, 65), train_length=4096, target_length=16_384)
    except GateAError as exc:
        return wrong(f"Gate A could not run your function: {exc}")
    if report.gate_a.passed:
        return correct("Gate A passes: interleaved pairs at the declared frequencies, scaled by 1/4 on every "
                       "position.")
    return wrong(f"Gate A fails ({', '.join(report.gate_a.failed)}): {report.gate_a.diagnosis}")


# ---- ch06-rival-seeds ----------------------------------------------------------------------------
#: The seeds of ch06-rival-seeds (the chapter's figures show seeds 0-9).
_RIVAL_SEEDS = range(10, 20)


@functools.lru_cache(maxsize=1)
def _rival_truth():

    heads = [_head(s) for s in _RIVAL_SEEDS]
    return {n: sorted(h.seed for h in heads if distant_rival(h, n).wins) for n in RIVAL_LENGTHS}


@exercise("ch06-rival-seeds")
def _check_rivals(answer):
    if not isinstance(answer, dict):
        return wrong(f"expected a dict length -> list of seeds, got {type(answer).__name__}")
    if len(answer) > 64:
        return wrong(f"expected exactly the lengths {', '.join(map(str, RIVAL_LENGTHS))} as keys, "
                     f"got {len(answer):,} keys")
    got = {}
    for key, val in answer.items():
        n, bad = as_whole(key, "each key as a length (a whole number)")
        if bad:
            return bad
        items, bad = as_items(val, f"a list of integer seeds for length {n}", max_items=64)
        if bad:
            return bad
        seeds, bad = read_each(items, as_whole, f"the seeds for length {n} as whole numbers")
        if bad:
            return bad
        got[n] = seeds
    if set(got) != set(RIVAL_LENGTHS):
        return wrong(f"expected exactly the lengths {', '.join(map(str, RIVAL_LENGTHS))} as keys")
    for n, seeds in got.items():
        if seeds != sorted(set(seeds)) or any(s not in _RIVAL_SEEDS for s in seeds):
            return wrong(f"the list for length {n} must hold distinct seeds from 10 to 19, sorted")
    truth = _rival_truth()
    for n in sorted(got):
        extra = set(got[n]) - set(truth[n])
        missing = set(truth[n]) - set(got[n])
        if extra:
            return wrong(f"at length {n} your list includes a seed whose target still outscores every displacement "
                         "beyond the training window (compare scores, not accuracies of whole runs)")
        if missing:
            return wrong(f"at length {n} your list misses a seed in which a displacement of at least 64 outscores "
                         "offset 5 (search every displacement from the training length to length - 1)")
    return correct("the ruler decides where a distant displacement nearly repeats offset 5; each head's learned "
                   "weights decide whether it outscores the target.")


# ---- ch06-learned-margin -------------------------------------------------------------------------
#: The seed of ch06-learned-margin: a losing seed whose rival (363) differs from the chapter's seeds' (382)
#: and whose margins the chapter does not print.
_LEARNED_SEED = 19


@functools.lru_cache(maxsize=1)
def _margin_truth():

    head = _head(_LEARNED_SEED)
    rival = distant_rival(head, 512).rival
    theta = frequencies(16)
    amp = head.amplitudes()
    fast = np.where(theta * 64 >= 2 * np.pi, amp, 0.0)
    return tuple(separation_margin([5, rival], theta, weighting=w).margin for w in ("pair", amp, fast)), amp, rival


def _equal_fast_margin() -> float:
    """The margin with equal weights on the fast pairs: a near miss for the fast-band weighting."""

    _, _, rival = _margin_truth()
    theta = frequencies(16)
    return separation_margin([5, rival], theta[theta * 64 >= 2 * np.pi]).margin


@exercise("ch06-learned-margin")
def _check_learned(answer):
    items, bad = as_items(answer, "three numbers: (equal, learned, fast)", max_items=64)
    if bad:
        return bad
    if len(items) != 3:
        return wrong(f"expected three numbers: (equal, learned, fast), got {len(items)} items")
    vals, bad = read_each(items, as_number, "three finite numbers: (equal, learned, fast)")
    if bad:
        return bad
    truth, _, _ = _margin_truth()
    ok = [abs(a - b) <= 1e-6 for a, b in zip(vals, truth)]
    if all(ok):
        return correct("these are the three margins of this seed; now compare each with its Gate B threshold.")
    if sorted(np.round(vals, 6)) == sorted(np.round(truth, 6)):
        return wrong("the three values are right but not in the order (equal, learned, fast)")
    if ok[0] and ok[1] and abs(vals[2] - _equal_fast_margin()) <= 1e-6:
        return wrong("your fast-band margin weights the fast pairs equally; the chapter's fast-band weighting "
                     "keeps the head's learned amplitudes on those pairs (and zero on the slow ones).")
    dist_of = [1.0 - t * t / 2.0 for t in truth]  # K values of the three weightings
    if all(abs(x - (1.0 - k)) <= 1e-6 for x, k in zip(vals, dist_of)):
        return wrong("those are 1 - K values (as DistantRival.weighted_margin reports); Gate B's margin is the "
                     "phase distance between the two signatures.")
    names = ("equal-weight", "learned-amplitude", "fast-band")
    first = names[ok.index(False)]
    hints = {"equal-weight": "weight every pair alike",
             "learned-amplitude": "weight pair i by hypot(a_i, b_i) of the trained head (head.amplitudes())",
             "fast-band": "keep the learned amplitudes of the pairs that turn at least once in 64 tokens and zero "
                          "the others"}
    return wrong(f"the {first} margin is off: {hints[first]}, for offset 5 against the rival found at 512 "
                 f"(seed {_LEARNED_SEED}, head dim 16, trained at 64).")
