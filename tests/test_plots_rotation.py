"""Figures of chapter 2: they are Figures, carry the expected artists, draw the right data, and
refuse bad input with a ValueError naming the parameter."""


import numpy as np
import pytest
from matplotlib import pyplot as plt
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Arc, FancyArrowPatch

from ropegeo.book.plots.rotation import block_rotation_image, phase_clock, score_terms


def test_phase_clock_artists():
    before = plt.get_fignums()
    fig = phase_clock(pair=(0.8, 0.6), theta=0.6, positions=range(8), query_position=2, key_position=5)
    assert isinstance(fig, Figure)
    assert plt.get_fignums() == before  # built without pyplot
    left, right = fig.axes
    arrows_left = [p for p in left.patches if isinstance(p, FancyArrowPatch)]
    assert len(arrows_left) == 8
    # arrow tips: the pair rotated to each position, computed independently with complex numbers
    z = 0.8 + 0.6j
    tips = np.array([a._posA_posB[1] for a in arrows_left])
    want = z * np.exp(1j * 0.6 * np.arange(8))
    np.testing.assert_allclose(tips[:, 0] + 1j * tips[:, 1], want, atol=1e-12)
    arrows_right = [p for p in right.patches if isinstance(p, FancyArrowPatch)]
    arcs = [p for p in right.patches if isinstance(p, Arc)]
    assert len(arrows_right) == 2 and len(arcs) == 1
    arc = arcs[0]
    assert arc.theta2 - arc.theta1 == pytest.approx(np.degrees(3 * 0.6))
    labels = [t.get_text() for t in right.texts]
    assert any("m = 2" in s for s in labels) and any("n = 5" in s for s in labels)


@pytest.mark.parametrize("layout", ["column", "wide"])
@pytest.mark.parametrize("m, n, theta", [(2, 5, 0.6), (6, 1, 0.4), (0, 3, 1.1)])
def test_phase_clock_labels_clear_the_circle_and_the_hands(layout, m, n, theta):
    """Every label of the right panel lies inside its axes and crosses neither the dashed circle nor a hand."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = phase_clock(pair=(0.8, 0.6), theta=theta, query_position=m, key_position=n, layout=layout)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    right = fig.axes[1]
    frame = right.get_window_extent(renderer)
    z = (0.8 + 0.6j) * np.exp(1j * theta * np.array([m, n]))  # the two hands, by complex multiplication
    ring = np.exp(1j * np.linspace(0, 2 * np.pi, 2000))
    hands = np.concatenate([np.linspace(0, 1, 200) * w for w in z])
    drawn = right.transData.transform(np.c_[np.r_[ring.real, hands.real], np.r_[ring.imag, hands.imag]])
    assert len(right.texts) == 3
    for text in right.texts:
        box = text.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, text.get_text()
        inside = (drawn[:, 0] > box.x0) & (drawn[:, 0] < box.x1) & (drawn[:, 1] > box.y0) & (drawn[:, 1] < box.y1)
        assert not inside.any(), text.get_text()


def test_phase_clock_negative_displacement_draws_positive_arc():
    fig = phase_clock(query_position=6, key_position=1, theta=0.4)
    arc = [p for p in fig.axes[1].patches if isinstance(p, Arc)][0]
    assert arc.theta2 - arc.theta1 == pytest.approx(np.degrees(5 * 0.4))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"pair": (0.0, 0.0)}, "pair"),
        ({"pair": (1.0, 2.0, 3.0)}, "pair"),
        ({"pair": (np.nan, 1.0)}, "pair"),
        ({"theta": 0.0}, "theta"),
        ({"theta": float("inf")}, "theta"),
        ({"positions": np.arange(65)}, "positions"),
        ({"positions": []}, "positions"),
        ({"positions": np.ones((2, 2))}, "positions"),
        ({"query_position": np.nan}, "query_position"),
        ({"key_position": "a"}, "key_position"),
    ],
)
def test_phase_clock_validates(kwargs, name):
    with pytest.raises(ValueError, match=name):
        phase_clock(**kwargs)


def test_score_terms_lines_match_closed_form():
    q, k, th = np.array([1.0, 0.5]), np.array([0.3, 1.0]), 0.35
    fig = score_terms(q, k, theta=th, max_offset=20, mark=4)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    lines = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-" and len(ln.get_xdata()) > 2]
    sym_line, ori_line, total_line = lines[:3]
    d = np.asarray(sym_line.get_xdata())
    dot, cross = q @ k, q[0] * k[1] - q[1] * k[0]
    np.testing.assert_allclose(sym_line.get_ydata(), dot * np.cos(d * th), atol=1e-12)
    np.testing.assert_allclose(ori_line.get_ydata(), -cross * np.sin(d * th), atol=1e-12)
    np.testing.assert_allclose(total_line.get_ydata(), dot * np.cos(d * th) - cross * np.sin(d * th), atol=1e-12)
    # the symmetric line is even, the oriented line odd in delta
    np.testing.assert_allclose(sym_line.get_ydata(), sym_line.get_ydata()[::-1], atol=1e-12)
    np.testing.assert_allclose(ori_line.get_ydata(), -ori_line.get_ydata()[::-1], atol=1e-12)
    markers = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert len(markers) == 1 and len(markers[0].get_xdata()) == 41
    verticals = [ln for ln in ax.get_lines() if np.ptp(ln.get_xdata()) == 0 and ln.get_xdata()[0] != 0]
    assert sorted(float(ln.get_xdata()[0]) for ln in verticals) == [-4.0, 4.0]
    assert ax.get_legend() is not None and len(ax.get_legend().get_texts()) == 3


def test_score_terms_large_range_bounded():
    fig = score_terms(max_offset=10_000)
    (ax,) = fig.axes
    assert all(len(ln.get_xdata()) <= 4001 for ln in ax.get_lines())


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"q": (0.0, 0.0)}, "q"),
        ({"k": (1.0,)}, "k"),
        ({"theta": -1.0}, "theta"),
        ({"max_offset": 0}, "max_offset"),
        ({"max_offset": 10_001}, "max_offset"),
        ({"max_offset": 2.5}, "max_offset"),
        ({"mark": 50.0}, "mark"),
    ],
)
def test_score_terms_validates(kwargs, name):
    with pytest.raises(ValueError, match=name):
        score_terms(**kwargs)


def test_block_rotation_image():
    fig = block_rotation_image(position=37, head_dim=16)
    assert isinstance(fig, Figure)
    images = [im for ax in fig.axes for im in ax.get_images()]
    assert len(images) == 2  # one per pairing, plus a colour-bar axes without images
    assert len(fig.axes) == 3
    inter = np.asarray(images[0].get_array())
    # independent block-diagonal operator: pair i turns by 37 * 10000 ** (-2i/16)
    want = np.zeros((16, 16))
    for i in range(8):
        a = 37 * 10_000 ** (-2 * i / 16)
        want[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]
    np.testing.assert_allclose(inter, want, atol=1e-12)
    half = np.asarray(images[1].get_array())
    perm = np.ravel(np.column_stack([np.arange(8), np.arange(8) + 8]))  # interleaved order of half layout
    np.testing.assert_allclose(half[np.ix_(perm, perm)], want, atol=1e-12)
    assert all(isinstance(im, AxesImage) and im.get_clim() == (-1, 1) for im in images)


def test_block_rotation_image_single_pairing():
    fig = block_rotation_image(position=3, head_dim=8, pairings="half")
    assert sum(len(ax.get_images()) for ax in fig.axes) == 1


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"head_dim": 258}, "head_dim"),
        ({"head_dim": 7}, "head_dim"),
        ({"position": np.inf}, "position"),
        ({"base": 1.0}, "base"),
        ({"pairings": ("diagonal",)}, "pairings"),
        ({"pairings": ()}, "pairings"),
    ],
)
def test_block_rotation_image_validates(kwargs, name):
    with pytest.raises(ValueError, match=name):
        block_rotation_image(**kwargs)


def test_decay_panels_draw_the_data():
    from ropegeo.book.plots.rotation import decay_panels

    x = np.arange(0.0, 11.0)
    d = -x[::-1]
    trained = np.vstack([np.sin(d), np.cos(d), 2 * np.sin(d)])
    before = plt.get_fignums()
    fig = decay_panels((x, 10 - x), (d, np.cos(d + 3)), (d, trained), train_length=5, target=-5, window=2)
    assert isinstance(fig, Figure) and plt.get_fignums() == before
    a1, a2, a3 = fig.axes
    np.testing.assert_allclose(a1.get_lines()[0].get_ydata(), 10 - x)
    np.testing.assert_allclose(a2.get_lines()[0].get_ydata(), np.cos(d + 3))
    # the counterexample's peak is marked at its argmax
    assert a2.get_lines()[1].get_xdata()[0] == d[np.argmax(np.cos(d + 3))]
    # windows of 2 offsets from the left: (-10, -9), (-8, -7), ...; the median over seeds of each window's best
    best = np.array([[row[j:j + 2].max() for j in range(0, 10, 2)] for row in trained])
    np.testing.assert_allclose(a3.get_lines()[0].get_xdata(), [-9.5, -7.5, -5.5, -3.5, -1.5])
    np.testing.assert_allclose(a3.get_lines()[0].get_ydata(), np.median(best, axis=0))
    assert a3.get_lines()[1].get_ydata()[0] == np.median(trained[:, d == -5])  # the target line
    assert len(a3.patches) == 1  # the shaded training window
    with pytest.raises(ValueError, match="target"):
        decay_panels((x, 10 - x), (d, np.cos(d)), (d, trained), target=-4.5, window=2)
    with pytest.raises(ValueError, match="window"):
        decay_panels((x, 10 - x), (d, np.cos(d)), (d, trained), window=0)


@pytest.mark.parametrize("args, name", [
    (((np.arange(3.0), np.ones(4)), (np.arange(3.0), np.ones(3)), (np.arange(3.0), np.ones((2, 3)))), "bound"),
    (((np.arange(3.0), np.ones(3)), (np.arange(3.0), np.ones(3)), (np.arange(3.0), np.ones(3))), "trained"),
    (((np.arange(3.0), np.ones(3)), (np.arange(3.0), [np.nan] * 3), (np.arange(3.0), np.ones((2, 3)))), "counter"),
])
def test_decay_panels_validates(args, name):
    from ropegeo.book.plots.rotation import decay_panels

    with pytest.raises(ValueError, match=name):
        decay_panels(*args)


def test_defect_heads_figure():
    from ropegeo.book.plots.rotation import defect_heads_figure

    w = {"healthy": np.eye(8)[5], "routing": np.eye(8)[4]}
    o = {"healthy": np.eye(8)[5], "routing": np.eye(8)[4]}
    fig = defect_heads_figure(w, o, target=5)
    assert len(fig.axes) == 4
    titles = [ax.get_title() for ax in fig.axes]
    assert "healthy: attends to 5" in titles and "routing: attends to 4" in titles and "reads token 4" in titles
    heights = [p.get_height() for p in fig.axes[0].patches]
    np.testing.assert_allclose(heights, np.eye(8)[5])
    with pytest.raises(ValueError, match="same head names"):
        defect_heads_figure(w, {"healthy": o["healthy"]})
    with pytest.raises(ValueError, match="target"):
        defect_heads_figure(w, o, target=8)
    with pytest.raises(ValueError, match="common length"):
        defect_heads_figure(w, {"healthy": np.ones(7), "routing": np.ones(8)})


def test_shift_change_figure():
    from ropegeo.book.plots.rotation import shift_change_figure

    c = np.arange(10.0, 60.0, 10.0)
    fig = shift_change_figure(c, {"additive": c / 10, "rotary": np.zeros(5)})
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    additive, rotary = ax.get_lines()
    np.testing.assert_allclose(additive.get_ydata(), c / 10)
    assert np.all(rotary.get_ydata() > 0)  # zeros are drawn at a floor, not lost on the log axis
    with pytest.raises(ValueError, match="non-negative"):
        shift_change_figure(c, {"additive": -c})
    with pytest.raises(ValueError, match="shifts"):
        shift_change_figure([1.0], {"a": [1.0]})


def test_score_split_figure_bars():
    from ropegeo.book.plots.rotation import score_split_figure

    q, k, th, d = (1.0, 0.5), (0.3, 1.0), 0.35, 4.0
    fig = score_split_figure(q, k, th, d)
    (ax,) = fig.axes
    heights = [p.get_height() for p in ax.patches]
    dot, cross = 1.0 * 0.3 + 0.5 * 1.0, 1.0 * 1.0 - 0.5 * 0.3
    # by complex numbers: the score with the key at +d and at -d
    zq, zk = complex(*q), complex(*k)
    fwd = (np.conj(zq) * zk * np.exp(1j * d * th)).real
    back = (np.conj(zq) * zk * np.exp(-1j * d * th)).real
    want = [dot * np.cos(d * th), -cross * np.sin(d * th), fwd, dot * np.cos(d * th), cross * np.sin(d * th), back]
    np.testing.assert_allclose(heights, want, atol=1e-12)
    with pytest.raises(ValueError, match="delta"):
        score_split_figure(delta=0.0)
    with pytest.raises(ValueError, match="q"):
        score_split_figure(q=(0.0, 0.0))
