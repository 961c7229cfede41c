"""Figures of chapter 4: what they draw (read back from the artists) and what they refuse."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from ropegeo import scaling as S
from ropegeo.frequencies import frequencies
from ropegeo.novelty import joint_novelty
from ropegeo.book.plots.extension import joint_novelty_plot, ramp_comparison, ruler_panels

TH = frequencies(16, 10_000.0)


def test_ruler_panels_draws_a_family_as_one_line_per_length():
    fam = {n: S.dynamic_ntk(16, 10_000.0, 1.0, 64, n) for n in (64, 128, 256)}
    fig = ruler_panels(TH, {"raw": TH, "dynamic": fam}, 64, 256, columns=2)
    assert isinstance(fig, Figure)
    ax = [a for a in fig.axes if a.get_title() == "dynamic"][0]
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("ℓ = ")]  # the current length
    assert [ln.get_label() for ln in lines] == ["ℓ = 64", "ℓ = 128", "ℓ = 256"]
    # told apart by marker, not only by a shade; solid, since dashed and dotted mark the two lengths
    assert len({ln.get_marker() for ln in lines}) == 3 and {ln.get_linestyle() for ln in lines} == {"-"}
    refs = {ln.get_linestyle() for ln in ax.get_lines() if ln.get_label().startswith("_")}
    assert refs == {"--", ":"}
    # each line is 2 pi / theta of its own length: the slowest wavelength grows with n
    for ln, n in zip(lines, (64, 128, 256)):
        np.testing.assert_allclose(ln.get_ydata(), 2 * np.pi / fam[n])
    slowest = [ln.get_ydata()[-1] for ln in lines]
    assert slowest[0] < slowest[1] < slowest[2]
    # at n = L the family member is the plain ladder
    np.testing.assert_allclose(lines[0].get_ydata(), 2 * np.pi / TH)


def test_ruler_panels_refuses_bad_families():
    with pytest.raises(ValueError, match="1 to 8 lengths"):
        ruler_panels(TH, {"d": {}}, 64, 256)
    with pytest.raises(ValueError, match="same number of pairs"):
        ruler_panels(TH, {"a": TH, "d": {64: TH[:4]}}, 64, 256)
    with pytest.raises(ValueError, match="a length of"):
        ruler_panels(TH, {"d": {-1: TH}}, 64, 256)


def test_joint_novelty_plot_draws_each_rule_and_its_median():
    res = {"raw": joint_novelty(TH, TH, 32, range(0, 128, 5)),
           "PI": joint_novelty(TH, TH / 4, 32, range(0, 128, 5))}
    fig = joint_novelty_plot(res, {"raw": 1.5, "PI": 0.0}, 32, 0.2)
    left, right = fig.axes[:2]
    labels = [ln.get_label() for ln in left.get_lines() if not ln.get_label().startswith("_")]
    assert labels == ["raw", "PI"]
    # every scanned distance is marked; the symlog axis puts no tick inside its linear part but 0
    rules = [ln for ln in left.get_lines() if not ln.get_label().startswith("_")]
    assert len({ln.get_marker() for ln in rules}) == 2 and {ln.get_linestyle() for ln in rules} == {"-"}
    # each style means one thing: dotted the threshold, dashed the training length
    assert sorted(ln.get_linestyle() for ln in left.get_lines() if ln.get_label().startswith("_")) == ["--", ":"]
    ticks = list(left.get_xticks())
    assert ticks[0] == 0 and all(t >= 32 / 64 for t in ticks[1:]) and ticks[1:] == [1.0, 10.0, 100.0]
    offsets = [list(np.asarray(c.get_offsets())[0]) for c in right.collections]
    assert offsets[0] == pytest.approx([1.5, np.median(res["raw"].distance)])
    assert offsets[1] == pytest.approx([0.0, np.median(res["PI"].distance)])


@pytest.mark.parametrize("args, match", [
    (({}, {}, 32, 0.2), "results must be"),
    (({"a": 3}, {"a": 0.0}, 32, 0.2), "JointNovelty"),
    (({"a": None}, {"b": 0.0}, 32, 0.2), "same labels"),
    (({"a": joint_novelty(TH, TH, 8, [1])}, {"a": -1.0}, 32, 0.2), "per_pair"),
    (({"a": joint_novelty(TH, TH, 8, [1])}, {"a": 0.0}, 0, 0.2), "train_length"),
])
def test_joint_novelty_plot_refuses(args, match):
    with pytest.raises(ValueError, match=match):
        joint_novelty_plot(*args)


def test_ramp_comparison_plots_weights_against_index_and_turns():
    w = S.yarn_ramp(16, 10_000.0, 64, beta_fast=4, beta_slow=1)
    fig = ramp_comparison(TH, 64, {"YaRN": w})
    left, right = fig.axes[:2]
    np.testing.assert_allclose(left.get_lines()[0].get_ydata(), w)
    np.testing.assert_allclose(right.get_lines()[0].get_xdata(), 64 * TH / (2 * np.pi))
    assert right.get_xlim() == (0.0, 40.0)


def test_ramp_comparison_draws_the_papers_ramp_first():
    # the paper's ramp, written pair by pair: (r - beta_slow) / (beta_fast - beta_slow), clipped
    turns = [64 * t / (2 * np.pi) for t in TH]
    want = [min(1.0, max(0.0, (r - 1.0) / 3.0)) for r in turns]
    fig = ramp_comparison(TH, 64, {"YaRN": np.ones(8)}, paper=(4.0, 1.0))
    left = fig.axes[0]
    np.testing.assert_allclose(left.get_lines()[0].get_ydata(), want, rtol=0, atol=1e-12)
    assert left.get_lines()[0].get_label().startswith("paper")
    assert len(left.get_lines()) == 2


@pytest.mark.parametrize("kwargs, match", [
    (dict(weights={"a": np.full(8, 2.0)}), "in \\[0, 1\\]"),
    (dict(weights={"a": np.ones(3)}), "one weight"),
    (dict(weights={}), "weights must be"),
    (dict(train_length=-1), "train_length"),
    (dict(max_turns=0), "max_turns"),
    (dict(paper=(1.0, 4.0)), "beta_fast > beta_slow"),
    (dict(paper=(4.0, -1.0)), "beta_slow"),
])
def test_ramp_comparison_refuses(kwargs, match):
    args = dict(base_theta=TH, train_length=64, weights={"a": np.ones(8)})
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        ramp_comparison(**args)


# ---- the trade-off figure's labels, on chapter 4's own points ---------------------------------
def _chapter_reports():
    from ropegeo import extension as SR
    D, B, L, N = 96, 10_000.0, 4096, 131_072
    phi = __import__("ropegeo.models.manifest", fromlist=["load_model"]).load_model("phi-3-mini-128k-instruct")
    specs = [None] + [S.preset(r, train_length=L, target_length=N) for r in ("linear", "ntk", "yarn")]
    specs.append(S.preset("longrope", train_length=L, target_length=N,
                          longrope_factors=(phi.scaling.short_factor, phi.scaling.long_factor)))
    specs.append(S.preset("llama3", train_length=L, target_length=N))
    return [SR.extension_report(sp, base=B, rotary_dim=D, train_length=L, target_length=N) for sp in specs]


def _labels_and_points(fig, ax):
    from matplotlib.text import Annotation, Text
    anns = [t for t in ax.texts if isinstance(t, Annotation)]
    pts = ax.transData.transform(np.array([a.xy for a in anns]))
    boxes = [Text.get_window_extent(a) for a in anns]  # the text alone, without its leader line
    return anns, pts, boxes


def _order_kept(point_y, label_y, boxes):
    """Labels that share a column (their texts overlap side by side) are stacked in the order of
    their points' heights; points at one height may go either way."""
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            side_by_side = boxes[i].x0 < boxes[j].x1 and boxes[j].x0 < boxes[i].x1
            if side_by_side and abs(point_y[i] - point_y[j]) > 1e-9:
                if (label_y[i] - label_y[j]) * (point_y[i] - point_y[j]) <= 0:
                    return False
    return True


@pytest.mark.parametrize("layout", ["wide", "column"])
def test_tradeoff_labels_cannot_cross_on_the_chapters_points(layout):
    from ropegeo.book.plots.extension import tradeoff_plot
    reps = _chapter_reports()
    fig = tradeoff_plot(reps, layout=layout)
    fig.draw_without_rendering()
    for ax, attr in ((fig.axes[1], "margin"), (fig.axes[2], "coarse_margin")):
        anns, pts, boxes = _labels_and_points(fig, ax)
        assert [a.get_text() for a in anns] == [r.rule for r in reps]
        # each label points at its own report's point
        for a, r in zip(anns, reps):
            assert a.xy == pytest.approx((r.total_novelty, getattr(r, attr)))
        # no two labels overlap, and they are stacked in the order of their points
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                assert not boxes[i].overlaps(boxes[j]), (anns[i].get_text(), anns[j].get_text())
        assert _order_kept(pts[:, 1], [b.y0 + b.height / 2 for b in boxes], boxes)


def test_the_old_fixed_offsets_swap_yarn_and_llama3_on_the_chapters_points():
    # the negative control: the former rule (three fixed heights in turn) puts "yarn" below and
    # "llama3" above, while yarn's point lies above llama3's (paragraph-scale margins 0.954, 0.905)
    from ropegeo.book.plots.extension import tradeoff_plot
    reps = _chapter_reports()
    fig = tradeoff_plot(reps, layout="column")
    fig.draw_without_rendering()
    _, pts, boxes = _labels_and_points(fig, fig.axes[2])  # paragraph-scale margins
    old = [pts[k, 1] + (-16 + 13 * (k % 3)) * fig.dpi / 72 for k in range(len(reps))]
    assert not _order_kept(pts[:, 1], old, boxes)


def test_tradeoff_display_names():
    from ropegeo.book.plots.extension import tradeoff_plot
    reps = _chapter_reports()
    names = [f"rule {k}" for k in range(len(reps))]
    fig = tradeoff_plot(reps, names=names, layout="column")
    fig.draw_without_rendering()
    anns, _, _ = _labels_and_points(fig, fig.axes[1])
    assert [a.get_text() for a in anns] == names
    legend = fig.legends[0] if fig.legends else fig.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == names
    with pytest.raises(ValueError, match="names"):
        tradeoff_plot(reps, names=names[:-1])
