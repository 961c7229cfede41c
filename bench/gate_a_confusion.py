"""Gate A's confusion counts over the labelled catalogue, in one run.

Every entry of :data:`ropegeo.book.broken.DEFECTS` and :data:`ropegeo.book.broken.CATALOGUE`
(head dims 16 and 64) and of :mod:`ropegeo.book.broken_axes` (each correct and broken M-RoPE
variant, with angles formed in one product and pair after pair as llama.cpp does) carries a label:
correct, or the check that must lead its report and the defect class it must name. Gate A runs on
each once; a row is a check (or a defect class, or the verdict), and its columns count

* TP: labelled with it, and the report leads with it (the verdict row: broken, and failed);
* FN: labelled with it, and the report leads with something else or passes;
* FP: labelled otherwise (correct code included), and the report leads with it;
* TN: labelled otherwise, and the report does not lead with it.

A row whose FN or FP is not 0 is a check that misnames or misses a labelled case; a row with no
positives has no sensitivity to show (its TP and FN are both 0) and says so, or says why (``IMPLIED``:
a check an earlier one always pre-empts). A last line counts the
broken runs whose diagnosis holds their labelled words (a right check with wrong words, such as a
clamped table called "P mod 64,000", is a misreading too). Run with
``python bench/gate_a_confusion.py``; it exits 1 when any labelled entry is misread.

Measured 2026-12-05 (94 runs, 78 broken, 16 correct, about 11 s on a shared core): FN 0 and FP 0 in
every row, 78 of 78 broken runs with their words; every check and class has TP > 0 but axis-blind
(implied). Before the positives of issue 35's second pass (84 runs), shift, composition, inverse,
axis-bands, axis-blind and the classes algebra and contract had none (nothing named algebra). The Gate A before issue 35 (same catalogue) misread
20: it passed the float64 table scaled by 1.01 and the bfloat16 table on float32 data, named odd
pairs mirrored a frequency defect and the 512-row clamp a schedule, failed llama.cpp-style M-RoPE on
axis-bands (FP 2), and held the right check without the words for the 2,048 / 1,024-row clamps,
inv_freq in bfloat16 / float16 and the pairs that never turn (50 of 68 with their words).
"""

from __future__ import annotations

import sys
import time

from ropegeo.book.broken import CATALOGUE, DEFECTS, defect_entry, entry
from ropegeo.book.broken_axes import AXES_BANDS_DEFECTS, AXES_CORRECT, AXES_DEFECTS, axes_entry
from ropegeo.gates.a.axes import AXES_CHECKS
from ropegeo.gates.a.gate import CHECKS, gate_a
from ropegeo.gates.verdicts import DEFECT_CLASSES

HEAD_DIMS = (16, 64)


def _labelled():
    """(name, implementation, declaration, leading check or None, defect class or None, the words its
    diagnosis must contain, or for M-RoPE the finding it must read)."""
    for d in HEAD_DIMS:
        for name in DEFECTS:
            e = defect_entry(name, d)
            yield f"{name} (d={d})", e.impl, e.declared, e.check, e.defect, e.keyword
        for name in CATALOGUE:
            if name not in DEFECTS:  # the broken ones are in DEFECTS with their class
                e = entry(name, d)
                yield f"{name} (d={d})", e.impl, e.declared, e.check, e.defect, e.keyword
    for stepwise in (False, True):
        for name in (*AXES_CORRECT, *AXES_DEFECTS, *AXES_BANDS_DEFECTS):
            e = axes_entry(name, stepwise=stepwise)
            yield f"m-rope {name}{' stepwise' if stepwise else ''}", e.impl, e.declared, e.leads, e.defect, e.finding


def _counts(rows, key, labels):
    """Confusion counts per label value, ``key`` picking (label, predicted) from a row."""
    out = {}
    for lab in labels:
        pairs = [key(r) for r in rows]
        out[lab] = (sum(t == lab and p == lab for t, p in pairs), sum(t == lab and p != lab for t, p in pairs),
                    sum(t != lab and p == lab for t, p in pairs), sum(t != lab and p != lab for t, p in pairs))
    return out


#: Checks that hold no labelled positive because an earlier check always fails first (the argument is in
#: ropegeo.gates.a.axes; tests/test_gate_a_defects.py tests it).
IMPLIED = {"axis-blind": "implied: fails only where sections or interleave fails first, unless a pair's own "
                         "turn is invisible"}


def _table(title, counts) -> str:
    lines = [f"{title:<32} {'TP':>4} {'FN':>4} {'FP':>4} {'TN':>4}"]
    for lab, (tp, fn, fp, tn) in counts.items():
        note = "" if tp + fn else f"   ({IMPLIED.get(lab, 'no labelled positive')})"
        lines.append(f"{lab:<32} {tp:>4} {fn:>4} {fp:>4} {tn:>4}{note}")
    return "\n".join(lines)


def main() -> int:
    t0 = time.perf_counter()
    rows = []
    for name, impl, declared, check, defect, words in _labelled():
        r = gate_a(impl, **declared)
        lead = r.failed[0] if r.failed else None
        named = r.defects[0] if r.defects else None
        said = words is None or words in r.diagnosis or getattr(r, "finding", None) == words
        rows.append((name, check, lead, defect, named, r.status, said))
    by_check = _counts(rows, lambda r: (r[1], r[2]), [*CHECKS, *AXES_CHECKS])
    by_class = _counts(rows, lambda r: (r[3], r[4]), DEFECT_CLASSES)
    verdict = _counts(rows, lambda r: ("broken" if r[1] else "correct", "broken" if r[5] != "pass" else "correct"),
                      ["broken"])
    print(f"Gate A over {len(rows)} labelled runs ({sum(r[1] is not None for r in rows)} broken, "
          f"{sum(r[1] is None for r in rows)} correct), {time.perf_counter() - t0:.1f} s\n")
    print(_table("leading check", by_check), end="\n\n")
    print(_table("defect class named", by_class), end="\n\n")
    print(_table("verdict (not pass = broken)", {"broken": verdict["broken"]}))
    broken = [r for r in rows if r[1] is not None]
    print(f"\ndiagnosis words: {sum(r[6] for r in broken)} of {len(broken)} broken runs say what their label says "
          "(the catalogue's keyword, or M-RoPE's finding)")
    wrong = [r for r in rows if r[1] != r[2] or r[3] != r[4] or (r[1] is None) != (r[5] == "pass") or not r[6]]
    for name, check, lead, defect, named, st, said in wrong:
        print(f"misread: {name}: labelled {check or 'correct'}/{defect}, read {lead or st}/{named}"
              + ("" if said else ", without its words"))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
