"""Figures of chapter 3: they are Figures built without pyplot, draw the right data (checked against
direct computations), and refuse bad input with a ValueError naming the parameter."""

import math

import numpy as np
import pytest
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from ropegeo.frequencies import frequencies, wavelengths
from ropegeo.geometry import kernel
from ropegeo.precision import max_phase_error, uniform
from ropegeo.book.plots.spectrum import (
    base_comparison,
    kernel_plot,
    margin_plot,
    phase_error_plot,
    probe_plot,
    torus_plot,
    return_offset,
    wavelength_ladder,
)

THETA8 = frequencies(8)


def brute_k(delta, theta):
    return sum(math.cos(delta * t) for t in theta) / len(theta)


def test_kernel_plot_curve_and_numbered_peaks():
    before = plt.get_fignums()
    fig = kernel_plot(THETA8, 10_000, marks=2, mark_from=100, points=20_000)
    assert isinstance(fig, Figure) and plt.get_fignums() == before
    ax = fig.axes[0]
    line = ax.lines[0]
    d, k = line.get_xdata(), line.get_ydata()
    assert d[0] == 0 and d[-1] == 10_000  # every integer offset when the points allow it
    np.testing.assert_allclose(k[[0, 1, 6283]], [brute_k(x, THETA8) for x in (0, 1, 6283)], atol=1e-12)
    # markers: the best offset by brute force, then the best one at least (stop - from) // 25 away
    gap = (10_000 - 100) // 25
    ks = [(brute_k(x, THETA8), x) for x in range(100, 10_001)]
    first = max(ks)[1]
    second = max((kv for kv in ks if abs(kv[1] - first) >= gap))[1]
    marks = [ln for ln in ax.lines if ln.get_marker() == "o"]
    assert [int(m.get_xdata()[0]) for m in marks] == [first, second]
    # each marker is numbered, and one box lists the numbers with offset and K
    numbers = sorted(t.get_text() for t in ax.texts if t.get_text().isdigit())
    assert numbers == ["1", "2"]
    (listing,) = [t.get_text() for t in ax.texts if "δ=" in t.get_text()]
    assert listing.splitlines() == [
        f"{j}: δ={x:,}, K={brute_k(x, THETA8):.3f}" for j, x in ((1, first), (2, second))
    ]


def test_kernel_plot_without_marks_has_no_listing():
    ax = kernel_plot(THETA8, 500, marks=0).axes[0]
    assert not ax.texts and len(ax.lines) == 2  # the kernel and the zero line


def test_torus_points_are_the_wrapped_phases():
    fig = torus_plot(THETA8, pairs=(0, 1), length=50)
    pts = fig.axes[0].collections[0].get_offsets()
    p = np.arange(50)
    np.testing.assert_allclose(pts[:, 0], np.mod(p * THETA8[0], 2 * np.pi), atol=1e-12)
    np.testing.assert_allclose(pts[:, 1], np.mod(p * THETA8[1], 2 * np.pi), atol=1e-12)


def test_phase_error_plot_draws_only_limits_inside_the_range():
    ax = phase_error_plot(frequencies(16), 2**12, points=50).axes[0]
    verticals = sorted(ln.get_xdata()[0] for ln in ax.lines if ln.get_linestyle() == "--")
    assert verticals == [256, 2048]  # bfloat16 and float16 angles; float32's 2**24 is beyond 4,096
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "float32", "deployed bfloat16", "float16, every stage", "bfloat16, every stage"]
    # each curve is the largest error of its pipeline
    curves = [ln for ln in ax.lines if ln.get_linestyle() != "--"]
    x = curves[3].get_xdata()
    np.testing.assert_allclose(curves[3].get_ydata(), np.maximum(max_phase_error(x, frequencies(16), uniform("bfloat16")), 1e-12))


def test_torus_marks_the_closest_return_and_glues_edges():
    th = frequencies(128)
    ax = torus_plot(th, pairs=(0, 16), length=300).axes[0]
    # brute force: the offset whose two phases are nearest a whole number of turns
    best = min(range(1, 300), key=lambda d: math.sin(d * th[0] / 2) ** 2 + math.sin(d * th[16] / 2) ** 2)
    assert return_offset(th[[0, 16]], 300) == best
    (ring,) = [ln for ln in ax.lines if ln.get_marker() == "o"]
    np.testing.assert_allclose(ring.get_xdata(), np.mod([0, best * th[0]], 2 * np.pi), atol=1e-12)
    assert any(f"{best:,}" in t.get_text() for t in ax.texts)
    assert "glued" in ax.get_title()
    edges = [ln for ln in ax.lines if ln.get_marker() != "o"]
    assert len(edges) == 4  # two vertical, two horizontal edges


def test_base_comparison_draws_each_base():
    fig = base_comparison((10_000, 500_000), head_dim=16, train_length=1000, stop=1e5, points=50)
    lad, ker = fig.axes
    for j, b in enumerate((10_000, 500_000)):
        th = frequencies(16, b)
        np.testing.assert_allclose(lad.lines[j].get_ydata(), wavelengths(th))
        x = ker.lines[j].get_xdata()
        np.testing.assert_allclose(ker.lines[j].get_ydata(), [sum(math.cos(d * t) for t in th) / 8 for d in x],
                                   atol=1e-12)
    assert [t.get_text() for t in ker.get_legend().get_texts()] == ["base 10,000", "base 500,000"]


def test_wavelength_ladder_splits_slow_pairs():
    th = frequencies(64)
    ax = wavelength_ladder(th, 4096).axes[0]
    fast, slow = (c.get_offsets() for c in ax.collections)
    lam = 2 * np.pi / th
    assert len(slow) == int(np.sum(lam > 4096)) and len(fast) == int(np.sum(lam <= 4096))


def test_margin_plot_circles_the_pair():
    D = np.array([[0.0, 0.2, 0.5], [0.2, 0.0, 0.4], [0.5, 0.4, 0.0]])
    ax = margin_plot(D, [1, 2, 5], pair=(1, 2)).axes[0]
    circles = sorted((float(ln.get_xdata()[0]), float(ln.get_ydata()[0])) for ln in ax.lines)
    assert circles == [(0.0, 1.0), (1.0, 0.0)]


def test_probe_plot_curve():
    ax = probe_plot([0.1, 0.5], [0.5, 0.6], sharpness=4.0).axes[0]
    x, y = ax.lines[0].get_xdata(), ax.lines[0].get_ydata()
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-4.0 * x**2 / 2)), atol=1e-15)


@pytest.mark.parametrize("call, name", [
    (lambda: kernel_plot(THETA8, 0), "stop"),
    (lambda: kernel_plot(THETA8, 100, marks=-1), "marks"),
    (lambda: torus_plot(THETA8, pairs=(0, 9)), "pairs"),
    (lambda: torus_plot(THETA8, pairs=(0, 1, 2)), "pairs"),
    (lambda: torus_plot(THETA8, pairs="01"), "pairs"),
    (lambda: torus_plot(THETA8, length=10**9), "length"),
    (lambda: phase_error_plot(THETA8, 1), "stop"),
    (lambda: phase_error_plot(THETA8, 100, dtypes=("int8",)), "dtype"),
    (lambda: torus_plot(THETA8, mark_return="yes"), "mark_return"),
    (lambda: base_comparison(bases=()), "bases"),
    (lambda: base_comparison(bases=(1.0,)), "base"),
    (lambda: base_comparison(stop=1), "stop"),
    (lambda: wavelength_ladder(THETA8, 0), "train_length"),
    (lambda: margin_plot(np.zeros((2, 2)), [1, 2, 3]), "distances"),
    (lambda: margin_plot(np.zeros((2, 2)), [1, 2], pair=(1, 7)), "pair"),
    (lambda: margin_plot(np.zeros((2, 2)), [1, 2], pair=(1,)), "pair"),
    (lambda: probe_plot([0.1], [0.2, 0.3]), "margins and masses"),
    (lambda: probe_plot([0.1], [0.2], sharpness=0), "sharpness"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def _css_colour(cls, prop):
    """A colour of the labs' stylesheet, the other place the chapter's roles are drawn."""
    import re
    from pathlib import Path

    css = (Path(__file__).resolve().parents[1] / "ropegeo" / "book" / "static" / "labs.css").read_text()
    return re.search(rf"\.{cls} \{{[^}}]*{prop}: (#[0-9a-fA-F]{{6}})", css).group(1).lower()


def test_figure_colours_keep_one_role_each():
    """Fast/slow pairs and the every-stage dtype are drawn as in the labs; bases take neither role's colour and
    differ by line style and marker too (readable without colour)."""
    from matplotlib.colors import to_hex

    fast, slow = _css_colour("rl-fast", "fill"), _css_colour("rl-slow", "fill")
    assert _css_colour("rl-dtype", "stroke") == slow
    ax = wavelength_ladder(frequencies(64), 4096).axes[0]
    assert [to_hex(c.get_facecolor()[0]) for c in ax.collections] == [fast, slow]
    lad, ker = base_comparison((1e4, 5e5, 1e6), head_dim=16, train_length=1000, stop=1e5, points=50).axes
    colours = {to_hex(line.get_color()) for line in ker.lines[:3]}
    assert len(colours) == 3 and not colours & {fast, slow}
    assert len({line.get_linestyle() for line in ker.lines[:3]}) == 3
    assert len({line.get_marker() for line in lad.lines[:3]}) == 3
    from ropegeo.book.plots.spectrum import phase_error_plot
    pe = phase_error_plot(frequencies(16), stop=1000, dtypes=("float32", "bfloat16")).axes[0]
    assert [to_hex(line.get_color()) for line in pe.lines if line.get_linestyle() == "-"] == [fast, slow]
    from ropegeo.precision import buffer_cast, deployed
    five = ("float32", deployed("bfloat16"), buffer_cast("bfloat16"), "float16", "bfloat16")
    pe = phase_error_plot(frequencies(16), stop=2**25, points=20, dtypes=five).axes[0]
    curves = [to_hex(line.get_color()) for line in pe.lines if line.get_linestyle() != "--"]
    assert len(curves) == 5 == len(set(curves))  # five pipelines, five colours
    assert {to_hex(line.get_color()) for line in pe.lines if line.get_linestyle() == "--"} == {to_hex("0.45")}
    k = kernel_plot(frequencies(8), 10_000, marks=2, mark_from=100).axes[0]
    assert to_hex(k.lines[0].get_color()) == _css_colour("rl-exact", "stroke")
    assert to_hex(k.lines[2].get_color()) == _css_colour("rl-mark", "fill")  # lines[1] is the zero line
