"""The attention-score heatmap: its JavaScript (ropegeo/book/static/lab_attention.js, in Node) against
ropegeo (apply_rope, near_collisions, the scaling rules), and ropegeo's reference against
independent derivations (the kernel for equal content, a loop of 2 x 2 rotations)."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

from jsrun import call_js
from ropegeo.frequencies import frequencies
from ropegeo.geometry import kernel
from ropegeo.book.widgets._lab import esm_source
from ropegeo.book.widgets.attention_lab import MAX_ATTN_GRID, MAX_ATTN_PRODUCTS, AttentionLab, content, grid_side, reference

JS = esm_source("lab_attention.js")
DEFAULT = AttentionLab().state()


def _state(**kw):
    return {**DEFAULT, **kw}


STATES = [
    _state(),
    _state(content="slow", head_dim=8, span=8192),
    _state(content="fast", head_dim=16, base=500.0, span=256, dtype="bfloat16"),
    _state(content="varied", seed=7, head_dim=32, span=1024, rule="yarn", factor=8, train_length=128),
    _state(content="varied", seed=99, head_dim=128, span=16_384, rule="ntk", factor=64, train_length=16_384, dtype="float32"),
    _state(content="equal", head_dim=4, span=16, rule="linear", factor=2, train_length=16, dtype="float16"),
    _state(content="equal", head_dim=64, span=4096, rule="llama3", factor=16, train_length=256),
    _state(content="varied", seed=3, encoding="none", span=512),
]


def _close(a, b, tol=1e-9):
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=tol, atol=tol)


def test_javascript_matches_ropegeo_in_node():
    got = call_js(JS, [("compute", [s]) for s in STATES])
    for st, r in zip(STATES, got):
        ref = reference(st)
        assert r["state"] == st
        g = len(ref["positions"])
        assert r["grid"] == g <= MAX_ATTN_GRID and r["stride"] * (g - 1) < st["span"] <= r["stride"] * g
        assert g * g * st["head_dim"] / 2 <= MAX_ATTN_PRODUCTS
        _close(r["q"], ref["q"], 1e-15)
        _close(r["k"], ref["k"], 1e-15)
        _close(r["theta"], ref["theta"])
        assert r["attention_factor"] == pytest.approx(ref["attention_factor"], abs=1e-12)
        _close(np.reshape(r["_scores"], (g, g)), ref["scores"])  # NaN above the diagonal in both
        assert r["bound"] == pytest.approx(ref["bound"], abs=1e-12)
        assert r["returns_from"] == ref["returns_from"]
        assert [o for o, _ in ref["returns"]] == [b["offset"] for b in r["returns"]]
        _close([b["similarity"] for b in r["returns"]], [s for _, s in ref["returns"]])
        for smp in r["samples"]:
            a, b = smp["m"] // r["stride"], smp["n"] // r["stride"]
            assert smp["score"] == pytest.approx(ref["scores"][a, b], abs=1e-9)
        # the spread along one diagonal: zero in float64 (a function of m - n only), not in low precision
        diag = max(np.ptp(np.diagonal(ref["scores"], -d)) for d in range(g))
        if st["dtype"] == "float64" or st["encoding"] == "none":
            assert r["spread"] is None and diag < 1e-9  # ropegeo's absolute form: one value per diagonal too
        else:
            assert r["spread"] == pytest.approx(diag, abs=1e-9)
    assert got[2]["spread"] > 1e-3  # bfloat16 angles break the stripes within 256 positions


def test_reference_against_independent_derivations():
    # all pairs equal: the score is (d/2) K(n - m), the bank's kernel
    st = _state(content="equal", head_dim=8, span=128)
    ref = reference(st)
    m, n = np.tril_indices(128)
    _close(ref["scores"][m, n], 4 * kernel((n - m).astype(float), frequencies(8, 1e4)))
    k_all = kernel(np.arange(1, 128.0), frequencies(8, 1e4))
    start = int(np.argmax(k_all <= 0)) + 1  # brute force: the first zero, then the best offsets past it
    assert ref["returns_from"] == start and k_all[start - 2] > 0
    best = start + np.argsort(-k_all[start - 1:], kind="stable")[:3]
    assert [o for o, _ in ref["returns"]] == best.tolist()
    # the slow half of the width-8 bank returns near 2 pi 1000 = 6283.2 (chapter 3's decade ladder)
    assert reference(_state(content="slow", head_dim=8, span=8192))["returns"][0][0] == round(2000 * np.pi)
    # varied content in float64: a loop of 2 x 2 rotations at a few positions
    st = _state(content="varied", seed=5, head_dim=6, base=50.0, span=64)
    ref = reference(st)
    q, k = content("varied", 6, 5)
    th = 50.0 ** (-np.arange(3) * 2 / 6)
    for a, b in [(0, 0), (40, 3), (63, 62)]:
        s = 0.0
        for i in range(3):
            ca, sa, cb, sb = np.cos(a * th[i]), np.sin(a * th[i]), np.cos(b * th[i]), np.sin(b * th[i])
            qa = np.array([[ca, -sa], [sa, ca]]) @ q[2 * i:2 * i + 2]
            kb = np.array([[cb, -sb], [sb, cb]]) @ k[2 * i:2 * i + 2]
            s += qa @ kb
        assert ref["scores"][a, b] == pytest.approx(s, abs=1e-12)
    assert np.isnan(ref["scores"][3, 40])
    # no position encoding: flat, q . k everywhere
    ref = reference(_state(content="varied", seed=5, head_dim=6, encoding="none", span=32))
    _close(ref["scores"][np.tril_indices(32)], np.full(528, q @ k))
    assert ref["returns"] == []


def test_grid_side_is_the_largest_within_the_products_limit():
    for d in range(4, 129, 2):
        g = grid_side(d)
        assert g * g * d <= 2 * MAX_ATTN_PRODUCTS and (g == MAX_ATTN_GRID or (g + 1) ** 2 * d > 2 * MAX_ATTN_PRODUCTS)
    got = call_js(JS, [("gridSide", [d]) for d in range(4, 129, 2)])
    assert got == [grid_side(d) for d in range(4, 129, 2)]


def test_contents():
    q, k = content("fast", 10)
    assert q.tolist() == [1, 0, 1, 0, 1, 0, 0, 0, 0, 0] and k.tolist() == q.tolist()
    q, _ = content("slow", 10)
    assert q.tolist() == [0, 0, 0, 0, 1, 0, 1, 0, 1, 0]
    assert content("equal", 4)[0].tolist() == [1, 0, 1, 0]


def test_widget_state_is_validated_and_the_page_bounds_its_values():
    lab = AttentionLab(span=256)
    assert lab.numbers["scores"].shape == (256, 256)
    for name, value in [("span", 20), ("span", 16_400), ("head_dim", 2), ("head_dim", 7), ("content", "random"),
                        ("rule", "longrope"), ("factor", 65), ("train_length", 8), ("dtype", "int8"), ("seed", 100)]:
        with pytest.raises(traitlets.TraitError, match=name):
            setattr(lab, name, value)
    wild = dict(content="x", seed=-5, encoding="alibi", head_dim=1000, base=-1, span=10**9, dtype="int8", rule="x",
                factor=1e9, train_length=0)
    r = call_js(JS, [("compute", [wild])])[0]
    assert r["state"] == {"content": "equal", "seed": 0, "encoding": "rope", "head_dim": 128, "base": 2.0,
                          "span": 16_384, "dtype": "float64", "rule": "none", "factor": 64, "train_length": 16}
    assert all(np.isfinite(s["score"]) for s in r["samples"])


def test_core_scores_in_both_forms_match_apply_rope():
    """attentionScores: the relative form (exact angles, even positions) and the absolute form
    (uneven positions, or angles in a low precision) against ropegeo.rotation.apply_rope."""
    from ropegeo.rotation import apply_rope

    q, k = content("varied", 12, 4)
    theta = frequencies(12, 300.0)
    cases = [([0, 5, 10, 15, 20], "float64"), ([0, 3, 10, 400, 4000], "float64"), ([0, 700, 1400, 2100], "bfloat16"),
             ([0, 700, 1400, 2100], "float16"), ([1, 2, 3000], "float32")]
    got = call_js(JS, [("attentionScores", [q, k, pos, theta, {"dtype": dt, "gain": 1.5}]) for pos, dt in cases])
    for (pos, dt), g in zip(cases, got):
        rq = apply_rope(np.broadcast_to(q, (len(pos), 12)), pos, theta=theta, phase_dtype=dt)
        rk = apply_rope(np.broadcast_to(k, (len(pos), 12)), pos, theta=theta, phase_dtype=dt)
        want = 1.5 * rq @ rk.T
        want[np.triu_indices(len(pos), 1)] = np.nan
        _close(np.reshape(g, want.shape), want)


def test_build_time_preview_draws_the_numbers(tmp_path):
    """The static preview (scripts/site/lab_preview.mjs, in node) of the attention lab is one BMP whose
    pixel (row m, column n) is the colour level of ropegeo's score; the clock's shows its play button."""
    import base64
    import io
    import re
    import sys
    from pathlib import Path

    from PIL import Image

    from jsrun import node
    from ropegeo.book.widgets.clock_lab import ClockLab

    node()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts" / "site"))
    from ropegeo_site import render_previews

    lab = AttentionLab(content="equal", head_dim=8, span=64)
    states = [{**w.get_state(), "_esm": w._esm} for w in (lab, ClockLab(m=3, n=4))]
    attention, clock = render_previews(states, node())
    assert 'data-control' not in attention and "ropegeo-attention-lab" in attention
    data = re.search(r'href="data:image/bmp;base64,([^"]+)"', attention).group(1)
    img = Image.open(io.BytesIO(base64.b64decode(data)))
    assert img.size == (64, 64) and img.mode == "P"
    ref = reference(lab.state())
    bound = ref["bound"]
    x = (ref["scores"] + bound) * 16 / (2 * bound)
    pixels = np.asarray(img)[::-1]  # image row 0 is the top: the largest query position
    m, n = np.tril_indices(64)
    # the page computes its scores with JavaScript's cos/sin (agreeing with numpy's to ~1e-15): a level
    # may differ only where x sits within rounding of a half-integer, by one
    tie = np.abs(np.abs(x - np.floor(x)) - 0.5) < 1e-9
    np.testing.assert_array_equal(np.where(tie, np.abs(pixels - x) < 0.5 + 1e-9, pixels == np.rint(x))[m, n], True)
    assert (pixels[np.triu_indices(64, 1)] == 17).all()
    assert ">play</button>" in clock and "offset n − m = 1 token</p>" in clock and "1 tokens" not in clock


def test_ordinals_read_as_english():
    """The sampling stride reads "every 32nd position", never "32th"."""
    from jsrun import call_js
    from ropegeo.book.widgets._lab import esm_source

    got = call_js(esm_source("lab_attention.js"), [("ordinal", [n]) for n in (1, 2, 3, 4, 11, 12, 13, 21, 32, 64, 101, 112)])
    assert got == ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "32nd", "64th", "101st", "112th"]
