"""Check once, at the public entry: what validating inside inner loops used to cost.

Two measurements, from one run on this machine (one BLAS thread):

* ``apply_rope`` (every argument checked, angles formed) against its unchecked kernel
  ``rotate_pairs`` with the cosines and sines formed once, on an (8, 64, 16) array;
* training a match head (the defaults, 8 tokens, 16 dims, 32 sequences of 64, for 200 steps) with
  today's loop (rotations formed once per run, the unchecked kernel each step) against the loop
  as it was (four checked ``apply_rope`` calls per step). Both give the same heads (to 1e-9).

Target: the checked call several times slower than the kernel on small arrays; the trainer
measurably faster without the per-step checks.
"""

from __future__ import annotations

import math
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from ropegeo.softmax import softmax_rows  # noqa: E402
from ropegeo.toy import heads as H  # noqa: E402
from ropegeo.toy import train_match_head  # noqa: E402
from ropegeo.frequencies import frequencies  # noqa: E402
from ropegeo.operator import rotate_pairs  # noqa: E402
from ropegeo.rotation import apply_rope  # noqa: E402


STEPS = 200


def best_of(fn, repeat=7, number=200):
    """Smallest mean seconds per call over ``repeat`` runs of ``number`` calls."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def checked_match_loss(qt, kt, tok, theta, scale, gain=1.0):
    """The match-head step as it was before: every rotation through the checked apply_rope."""
    batch, seq = tok.shape
    pos = np.arange(seq, dtype=np.float64)
    vocab, d = qt.shape
    qr = apply_rope(np.broadcast_to(qt[:, None, :], (vocab, seq, d)), pos, theta=theta, scale=scale)
    kr = apply_rope(np.broadcast_to(kt[:, None, :], (vocab, seq, d)), pos, theta=theta, scale=scale)
    # the rest of the step as it was (and is)
    cols = np.arange(seq)
    qs, ks = qr[tok, cols], kr[tok, cols]
    target = H.match_targets(tok)
    valid = target >= 0
    count = int(valid.sum())
    bi, mi = np.nonzero(valid)
    ti = target[bi, mi]
    s_target = np.einsum("nd,nd->n", qs[bi, mi], ks[bi, ti])
    earlier = np.tri(seq, seq, -1)
    p, top, z = softmax_rows(qs @ ks.transpose(0, 2, 1), earlier)
    loss = float(np.mean(np.log(z[bi, mi, 0]) + top[bi, mi, 0] - s_target))
    ds = p
    ds *= (valid / count)[..., None]
    ds[bi, mi, ti] -= 1.0 / count
    dqs = ds @ ks
    dks = ds.transpose(0, 2, 1) @ qs
    onehot = (tok[..., None] == np.arange(vocab)).astype(np.float64).transpose(1, 2, 0)
    dqr = (onehot @ dqs.transpose(1, 0, 2)).transpose(1, 0, 2)
    dkr = (onehot @ dks.transpose(1, 0, 2)).transpose(1, 0, 2)
    dq = apply_rope(dqr, -pos, theta=theta, scale=scale).sum(axis=1)
    dk = apply_rope(dkr, -pos, theta=theta, scale=scale).sum(axis=1)
    return loss, dq, dk


def main():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 64, 16))
    pos = np.arange(64.0)
    theta = frequencies(16)
    ang = pos[:, None] * theta
    cos, sin = np.cos(ang), np.sin(ang)
    assert np.allclose(apply_rope(x, pos), rotate_pairs(x, cos, sin), rtol=1e-12, atol=1e-12)
    checked = best_of(lambda: apply_rope(x, pos))
    kernel = best_of(lambda: rotate_pairs(x, cos, sin))
    kernel_angles = best_of(lambda: rotate_pairs(x, np.cos(pos[:, None] * theta), np.sin(pos[:, None] * theta)))
    print("apply_rope on (8, 64, 16), one call:")
    print(f"  checked apply_rope                    {checked * 1e6:8.1f} us")
    print(f"  rotate_pairs, cos/sin given           {kernel * 1e6:8.1f} us   ratio {checked / kernel:5.1f}x")
    print(f"  rotate_pairs, cos/sin formed per call {kernel_angles * 1e6:8.1f} us   ratio {checked / kernel_angles:5.1f}x")

    theta = frequencies(16)
    new_loss = H._match_loss

    def old_loss(qt, kt, tok, rotations, gain=1.0):
        return checked_match_loss(qt, kt, tok, theta, 1.0, gain)

    times = {"checked each step (before)": math.inf, "checked once (now)": math.inf}
    losses = {"checked each step (before)": old_loss, "checked once (now)": new_loss}
    heads = {}
    for _ in range(5):  # interleaved, best of five: the machine is shared
        for label, loss in losses.items():
            H._match_loss = loss
            try:
                t0 = time.perf_counter()
                heads[label] = train_match_head(seed=0, steps=STEPS)
                times[label] = min(times[label], time.perf_counter() - t0)
            finally:
                H._match_loss = new_loss
    a, b = heads.values()
    # the two loops reach the same head; their kernels may round the last digits differently, so the
    # guarantee compared is agreement to 1e-9, not bits
    assert np.allclose(a.q_table, b.q_table, rtol=1e-9, atol=1e-12) and np.allclose(a.losses, b.losses, rtol=1e-9)
    before, now = times.values()
    print(f"train_match_head at the defaults but {STEPS} steps, best of 5:")
    for label, t in times.items():
        print(f"  {label:<28} {t:6.2f} s")
    print(f"  speed-up {before / now:4.2f}x ({100 * (1 - now / before):.0f}% less time); the same heads to 1e-9")


if __name__ == "__main__":
    main()
