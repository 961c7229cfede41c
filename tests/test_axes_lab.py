"""The 2D kernel lab: its numpy reference against rotated vectors, its JavaScript against the reference.

Three derivations of ``K(dx, dy)`` meet here: the lab's JavaScript (``lab_axes.js`` on the core's
``// ---- lab2d ----`` block: per-axis tables combined by the cosine addition formula), its numpy
reference (``ropegeo.book.widgets.axes_lab.reference``: the direct mean of cosines), and a brute force
that derives each split's frequency vectors from its definition pair by pair, rotates vectors of
unit pairs with :func:`ropegeo.rotation.apply_rope` one axis at a time at two patch positions, and
takes their normalised dot product. The browser part is ``tests/test_labs_browser.py``.
"""

from __future__ import annotations

import base64
import json
import math
import re
import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
import traitlets

from jsrun import call_js
from ropegeo.rotation import apply_rope
from ropegeo.book.widgets._lab import esm_source
from ropegeo.multiaxis import kernel_grid
from ropegeo.book.widgets.axes_lab import (
    MAX_LAB_GRID, MAX_LAB_HEAD_DIM, SPLITS, AxesLab, reference, split_frequencies,
)

ROOT = Path(__file__).resolve().parent.parent
JS = esm_source("lab_axes.js")
TOL = 1e-9


# ---------------------------------------------------------------------------------------------
# The reference against rotated vectors
# ---------------------------------------------------------------------------------------------

def _brute_frequencies(d, base, split, share):
    """Each split's frequency vectors from its definition, one pair at a time."""
    pairs = d // 2
    fx, fy = [0.0] * pairs, [0.0] * pairs
    for i in range(pairs):
        theta = base ** (-2.0 * i / d)
        if split == "mixed":
            angle = i * (math.pi * (3 - math.sqrt(5)))  # the golden angle, 137.5 degrees
            fx[i], fy[i] = theta * math.cos(angle), theta * math.sin(angle)
        elif split == "interleaved":
            (fx if i % 2 == 0 else fy)[i] = theta
        else:
            n_x = math.ceil(pairs / 2) if split == "blocked" else math.floor(share * pairs + 0.5)
            (fx if i < n_x else fy)[i] = theta
    return np.array(fx), np.array(fy)


def _rotate_2d(x, px, py, fx, fy):
    """Turn every pair of ``x`` by px * fx_i + py * fy_i with apply_rope, one axis and one sign at
    a time (apply_rope takes non-negative frequencies; rotations of one plane compose)."""
    for pos, f in ((px, fx), (py, fy)):
        for sign in (1.0, -1.0):
            theta = np.where(sign * f > 0, np.abs(f), 0.0)
            if theta.any():
                x = apply_rope(x, sign * pos, theta=theta)
    return x


def _brute_kernel(d, base, split, share, grid, origin):
    fx, fy = _brute_frequencies(d, base, split, share)
    pairs = d // 2
    rng = np.random.default_rng(d + grid)
    phase = rng.uniform(0, 2 * np.pi, pairs)
    q = np.stack([np.cos(phase), np.sin(phase)], axis=1).reshape(-1)  # every pair of unit length
    offs = np.arange(-grid, grid + 1)
    dy, dx = np.meshgrid(offs, offs, indexing="ij")
    ox, oy = origin
    n = dx.size
    at_origin = _rotate_2d(np.tile(q, (n, 1)), np.full(n, float(ox)), np.full(n, float(oy)), fx, fy)
    moved = _rotate_2d(np.tile(q, (n, 1)), (ox + dx).ravel().astype(float), (oy + dy).ravel().astype(float), fx, fy)
    k = np.einsum("nd,nd->n", at_origin, moved) / (q @ q)
    return k.reshape(dx.shape), fx, fy


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("d, base, share, grid, origin", [
    (16, 100.0, 0.5, 6, (0, 0)), (10, 10_000.0, 0.3, 5, (17, -40)), (2, 10.0, 0.75, 3, (3, 5)),
    (64, 1e6, 0.85, 4, (-1000, 250)),
])
def test_reference_matches_rotated_vectors(split, d, base, share, grid, origin):
    k, fx, fy = _brute_kernel(d, base, split, share, grid, origin)
    ref = reference(dict(head_dim=d, base=base, split=split, x_share=share, grid=grid, threshold=0.9, top=5))
    np.testing.assert_allclose(ref["fx"], fx, rtol=1e-14, atol=0)
    np.testing.assert_allclose(ref["fy"], fy, rtol=1e-14, atol=0)
    np.testing.assert_allclose(ref["k"], k, atol=1e-12)
    # its near-returns, counted and ranked directly over the brute-force grid
    offs = np.arange(-grid, grid + 1)
    cells = [(float(k[r, c]), int(offs[r]), int(offs[c])) for r in range(k.shape[0]) for c in range(k.shape[1])]
    brute = sum(1 for v, y, x in cells if (x, y) != (0, 0) and v > 0.9)
    near = sum(1 for v, _, _ in cells if abs(v - 0.9) <= 1e-12)
    assert abs(ref["count"] - brute) <= near
    half = sorted(((-v, y, x) for v, y, x in cells if y > 0 or (y == 0 and x > 0)))[:5]
    np.testing.assert_allclose([t[2] for t in ref["top"]], [-v for v, _, _ in half], atol=1e-12)


def test_splits_give_each_axis_the_pairs_they_name():
    """Blocked: x gets the fast half (rounded up); interleaved: alternate pairs; share: the first
    floor(share * P + 0.5); mixed: every pair but pair 0 (direction 0) turns with both axes."""
    for d in (2, 6, 16):
        P = d // 2
        r = reference(dict(head_dim=d, base=100.0, split="blocked", x_share=0.5, grid=1, threshold=0.9, top=1))
        assert (r["x_pairs"], r["y_pairs"]) == (math.ceil(P / 2), P // 2)
        r = reference(dict(head_dim=d, base=100.0, split="interleaved", x_share=0.5, grid=1, threshold=0.9, top=1))
        assert (r["x_pairs"], r["y_pairs"]) == (math.ceil(P / 2), P // 2)
        r = reference(dict(head_dim=d, base=100.0, split="mixed", x_share=0.5, grid=1, threshold=0.9, top=1))
        assert (r["x_pairs"], r["y_pairs"]) == (P, P - 1)
    fx, fy = split_frequencies(20, 100.0, "share", 0.25)  # 10 pairs: 2.5 -> 3 to x
    assert np.count_nonzero(fx) == 3 and np.all(fx[:3] > 0) and np.all(fy[3:] > 0)
    assert np.count_nonzero(split_frequencies(20, 100.0, "share", 0.0)[0]) == 0


def test_a_blind_axis_returns_everywhere_along_it():
    """Head width 2 has one pair: blocked gives it to x, so K(0, dy) = 1 for every dy and every
    (0, dy) is a near-return (the lab says the axis turns no pair)."""
    r = reference(dict(head_dim=2, base=100.0, split="blocked", x_share=0.5, grid=5, threshold=0.99, top=3))
    assert r["y_pairs"] == 0 and np.all(r["k"][:, 5] == 1.0)
    assert r["count"] == 10 and [t[:2] for t in r["top"]] == [(0, 1), (0, 2), (0, 3)]


# ---------------------------------------------------------------------------------------------
# Python side of the widget
# ---------------------------------------------------------------------------------------------

def test_defaults_and_state():
    lab = AxesLab()
    assert lab.state() == {"head_dim": 16, "base": 100.0, "split": "blocked", "x_share": 0.5, "grid": 32,
                           "threshold": 0.9, "top": 5}
    assert "export function kernelGrid" in lab._esm and "// ---- lab2d ----" in lab._esm
    assert lab.numbers["count"] == reference(lab.state())["count"]


@pytest.mark.parametrize("kwargs, match", [
    ({"head_dim": 7}, "head_dim must be even"),
    ({"head_dim": MAX_LAB_HEAD_DIM + 2}, "head_dim must be from"),
    ({"base": 5.0}, "base must be from"),
    ({"split": "diagonal"}, "split must be one of"),
    ({"x_share": 1.5}, "x_share must be from"),
    ({"grid": MAX_LAB_GRID + 1}, "grid must be from"),
    ({"grid": 0}, "grid must be from"),
    ({"threshold": 1.0}, "threshold must be from"),
    ({"top": 21}, "top must be from"),
])
def test_bad_values_are_refused_with_the_parameter_named(kwargs, match):
    with pytest.raises(traitlets.TraitError, match=match):
        AxesLab(**kwargs)


@pytest.mark.parametrize("change, name", [
    ({"head_dim": 10**9}, "head_dim"), ({"base": 1.0}, "base"), ({"split": "rows"}, "split"),
    ({"x_share": -0.1}, "x_share"), ({"grid": 10**6}, "grid"), ({"threshold": float("nan")}, "threshold"),
    ({"top": 0}, "top"),
])
def test_reference_keeps_the_labs_limits(change, name):
    state = {**AxesLab().state(), **change}
    with pytest.raises(ValueError, match=name):
        reference(state)


def test_the_lab_uses_the_packages_kernel_grid():
    """One grid of a two-axis bank (ropegeo.multiaxis.kernel_grid): the lab's reference reads it."""
    st = AxesLab().state()
    fx, fy = split_frequencies(st["head_dim"], st["base"], st["split"], st["x_share"])
    np.testing.assert_array_equal(reference(st)["k"], kernel_grid(np.stack([fx, fy], axis=1), st["grid"]))
    with pytest.raises(ValueError, match="grid"):
        reference({**st, "grid": MAX_LAB_GRID + 1})


# ---------------------------------------------------------------------------------------------
# The JavaScript in Node
# ---------------------------------------------------------------------------------------------

def assert_matches(r, ref, tol=TOL):
    """A page's published numbers (``r``, without the bulky ``_values``) against :func:`reference`."""
    st = r["state"]
    G = st["grid"]
    k = ref["k"]
    assert (r["pairs"], r["x_pairs"], r["y_pairs"]) == (ref["pairs"], ref["x_pairs"], ref["y_pairs"]), st
    np.testing.assert_allclose(r["kx"], k[G], atol=tol, err_msg=str(st))
    np.testing.assert_allclose(r["ky"], k[:, G], atol=tol, err_msg=str(st))
    assert abs(r["sum"] - k.sum()) <= tol * k.size, st
    # the count: only cells within tol of the threshold may fall either way
    near = int(np.sum(np.abs(k - st["threshold"]) <= tol))
    assert abs(r["count"] - ref["count"]) <= near, (r["count"], ref["count"], st)
    assert r["cells"] == k.size - 1
    got = [b["k"] for b in r["top"]]
    want = [t[2] for t in ref["top"]]
    np.testing.assert_allclose(got, want, atol=tol, err_msg=str(st))
    for rank, (b, (dx, dy, kv)) in enumerate(zip(r["top"], ref["top"])):
        assert abs(k[b["dy"] + G, b["dx"] + G] - b["k"]) <= tol, (b, st)  # the offset holds the K listed
        if (b["dx"], b["dy"]) != (dx, dy):  # another offset only at a near-tie
            assert any(abs(kv - other[2]) <= tol for j, other in enumerate(ref["top"]) if j != rank) or \
                abs(kv - b["k"]) <= tol, (rank, b, (dx, dy, kv), st)


def decode_png(uri):
    """The pixels (rows, columns, RGB) of the heatmap's PNG data URI, read with zlib."""
    data = base64.b64decode(uri.removeprefix("data:image/png;base64,"))
    assert data[:8] == bytes([137, 80, 78, 71, 13, 10, 26, 10])
    at, chunks = 8, {}
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind, body = data[at + 4:at + 8].decode(), data[at + 8:at + 8 + length]
        assert zlib.crc32(data[at + 4:at + 8 + length]) == int.from_bytes(data[at + 8 + length:at + 12 + length], "big")
        chunks[kind] = body
        at += 12 + length
    w, h = int.from_bytes(chunks["IHDR"][:4], "big"), int.from_bytes(chunks["IHDR"][4:8], "big")
    assert chunks["IHDR"][8:10] == bytes([8, 2]) and "IEND" in chunks
    raw = np.frombuffer(zlib.decompress(chunks["IDAT"]), dtype=np.uint8).reshape(h, 3 * w + 1)
    assert np.all(raw[:, 0] == 0)  # no row filter
    return raw[:, 1:].reshape(h, w, 3)


def assert_heatmap(uri, ref, threshold):
    """One pixel per offset, dy = G on top: black where K > threshold off the origin, elsewhere the
    blue-white-red colour of K (red (215, 25, 28) at K = 1, blue (44, 123, 182) at K = -1)."""
    k = ref["k"][::-1]  # rows from dy = G down
    img = decode_png(uri).astype(float)
    G = (k.shape[0] - 1) // 2
    assert img.shape == (*k.shape, 3)
    near = k > threshold
    near[G, G] = False
    assert np.all(img[near] == 17), "a near-return is not drawn black"
    a = np.abs(k)[..., None]
    end = np.where(k[..., None] >= 0, [215, 25, 28], [44, 123, 182])
    want = 255 + (end - 255) * a
    tie = np.abs(k - threshold) <= 1e-9  # a cell within rounding of the threshold may go either way
    assert np.all(np.abs(img - want)[~near & ~tie] <= 0.5 + 1e-9), "a colour differs from K's"


def _states():
    rng = np.random.default_rng(20261202)
    states = [AxesLab().state(),
              dict(head_dim=256, base=1e4, split="mixed", x_share=0.5, grid=64, threshold=0.9, top=20),
              dict(head_dim=2, base=10.0, split="blocked", x_share=0.5, grid=1, threshold=0.0, top=1),
              dict(head_dim=2, base=10.0, split="interleaved", x_share=0.5, grid=7, threshold=0.99, top=20),
              dict(head_dim=24, base=1e7, split="share", x_share=0.0, grid=20, threshold=0.5, top=5),
              dict(head_dim=24, base=1e7, split="share", x_share=1.0, grid=20, threshold=0.5, top=5),
              dict(head_dim=128, base=100.0, split="blocked", x_share=0.35, grid=64, threshold=0.9, top=5)]
    for _ in range(10):
        states.append(dict(head_dim=int(2 * rng.integers(1, 129)), base=float(10 ** rng.uniform(1, 7)),
                           split=str(rng.choice(SPLITS)), x_share=float(rng.integers(0, 21) * 0.05),
                           grid=int(rng.integers(1, 65)), threshold=float(rng.integers(0, 100) / 100),
                           top=int(rng.integers(1, 21))))
    return states


def test_javascript_compute_matches_the_reference_in_node():
    states = _states()
    results = call_js(JS, [("compute", [st]) for st in states])
    for st, r in zip(states, results):
        assert r["state"] == st
        ref = reference(st)
        np.testing.assert_allclose(np.reshape(r["_values"], ref["k"].shape), ref["k"], atol=TOL, err_msg=str(st))
        assert_matches(r, ref)


def test_javascript_bounds_every_control():
    bad = dict(head_dim=999, base=-3, split="diagonal", x_share=2, grid=1000, threshold=5, top=500)
    r = call_js(JS, [("compute", [bad])])[0]
    assert r["state"] == dict(head_dim=MAX_LAB_HEAD_DIM, base=10, split="blocked", x_share=1, grid=MAX_LAB_GRID,
                              threshold=0.99, top=20)
    assert_matches(r, reference(r["state"]))


def _previews(states):
    """The lab drawn by its own module in node's stand-in DOM (scripts/site/lab_preview.mjs)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    payload = json.dumps({"labs": [{"esm": JS, "state": st, "width": w} for st, w in states]})
    run = subprocess.run([node, str(ROOT / "scripts" / "site" / "lab_preview.mjs")], input=payload,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and not run.stderr, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_no_control_state_blanks_the_lab():
    """Every split at the ends of every slider draws the heatmap (the near-returns black), the axis
    slices, the readout and the table, with no NaN anywhere."""
    states = []
    for split in SPLITS:
        for d, G, t, share in ((2, 1, 0.0, 0.0), (256, 64, 0.99, 1.0), (16, 32, 0.9, 0.5)):
            states.append((dict(head_dim=d, base=100.0, split=split, x_share=share, grid=G, threshold=t, top=20), 656))
    states.append((AxesLab().state(), 280))  # a 360 px screen
    for (st, _), html in zip(states, _previews(states)):
        assert html is not None, st
        assert html.count('class="rl-chart"') == 2 and 'class="rl-heat"' in html, st
        assert "NaN" not in html and "undefined" not in html and "Infinity" not in html, st
        assert "<table" in html and "near-returns (K &gt;" in html, st
        ref = reference(st)
        assert_heatmap(re.search(r'href="(data:image/png;base64,[^"]+)"', html).group(1), ref, st["threshold"])
        assert html.count('class="rl-mark" data-x=') == len(ref["top"]), st  # the chart's dots (not the key's swatch)


def test_chapter_eight_prose_blocked_stretches_along_dy_and_interleaved_shrinks():
    """The lab's introduction in chapter 8, at the state it embeds: with the
    blocked split the near-returns reach further along the dy axis than along dx; the interleaved
    split has fewer near-returns, all nearer the origin. Counted on the brute-force grid."""
    G = 32
    reach = {}
    for split in ("blocked", "interleaved"):
        k, _, _ = _brute_kernel(16, 100.0, split, 0.5, G, (0, 0))
        offs = np.arange(-G, G + 1)
        dy, dx = np.meshgrid(offs, offs, indexing="ij")
        near = (k > 0.9) & ((dx != 0) | (dy != 0))
        reach[split] = (int(near.sum()), int(np.abs(dy[near]).max()), int(np.abs(dx[near]).max()))
    count, along_dy, along_dx = reach["blocked"]
    assert along_dy > 2 * along_dx
    assert reach["interleaved"][0] < count and max(reach["interleaved"][1:]) < along_dy


def test_split_words_count_the_pairs_ropegeo_turns():
    """The mixed split at d = 2 (one pair, at angle 0) says the pair turns with x alone, never "every
    pair turns with both axes" beside "y turns no pair"; at d = 64 it counts ropegeo's pairs with both."""
    from jsrun import call_js
    from ropegeo.book.widgets._lab import esm_source
    from ropegeo.book.widgets.axes_lab import reference

    src = esm_source("lab_axes.js")
    for d in (2, 64):
        st = dict(head_dim=d, base=100.0, split="mixed", x_share=0.5, grid=8, threshold=0.9, top=5)
        r = call_js(src, [("compute", [st])])[0]
        text = call_js(src, [("splitText", [r])])[0]
        ref = reference(r["state"])
        both = int(np.sum((np.asarray(ref["fx"]) != 0) & (np.asarray(ref["fy"]) != 0)))
        assert not text.startswith("every pair") or both == ref["pairs"]
        assert text.startswith(f"{both} of the {ref['pairs']}") or (both == ref["pairs"] and text.startswith("every pair")), text
        if both < ref["pairs"]:
            assert "turns with x alone" in text
