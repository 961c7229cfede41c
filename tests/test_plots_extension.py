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
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("n = ")]
    assert [ln.get_label() for ln in lines] == ["n = 64", "n = 128", "n = 256"]
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


@pytest.mark.parametrize("kwargs, match", [
    (dict(weights={"a": np.full(8, 2.0)}), "in \\[0, 1\\]"),
    (dict(weights={"a": np.ones(3)}), "one weight"),
    (dict(weights={}), "weights must be"),
    (dict(train_length=-1), "train_length"),
    (dict(max_turns=0), "max_turns"),
])
def test_ramp_comparison_refuses(kwargs, match):
    args = dict(base_theta=TH, train_length=64, weights={"a": np.ones(8)})
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        ramp_comparison(**args)
