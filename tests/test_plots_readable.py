"""Figures of chapters 1, 2, 4, 5 and 7 as a reader sees them: captioned, described, readable at the column width.

The book shrinks a figure to its text column (about 730 px at a 1280 px window, 328 px at 360 px).
Each figure function these chapters call is drawn here in its column layout and its smallest
text measured after that shrink; the stored notebook outputs are checked for width, caption and
alt text.
"""

import base64
import struct
from pathlib import Path

import nbformat
import numpy as np
import pytest
from matplotlib.figure import Figure

from ropegeo.book.plots import alternatives as pa
from ropegeo.book.plots import attention as pt
from ropegeo.book.plots import rotation as pr
from ropegeo.book.plots.readable import COLUMN_WIDTH_PX, fit_column, panels, smallest_text_px

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ["01_permutation_symmetry", "02_complex_rotation", "07_alternatives"]
CHAPTERS += ["04_extension", "05_implementation"]  # issue 25, chapters 4 and 5
CHAPTERS += ["03_frequency_bank", "06_audit"]  # issue 25, chapters 3 and 6
CHAPTERS += ["08_multi_axis"]  # issue 26, chapter 8
MIN_PX = 9.0


def _study():
    rng = np.random.default_rng(0)
    far = {str(b): {k: list(rng.uniform(0, 0.25, 4)) for k in ("target", "neighbours", "beyond_window", "elsewhere")}
           for b in (250, 1000)}
    ruler = {"theta": [1.0] * 8, "stretch_accuracy": [1.0] * 4, "far": far}
    return {"settings": {"seeds": [0, 1, 2, 3], "budgets": [250, 1000], "table_steps": 1000, "offset": 5, "distance": 40,
                         "train_length": 64, "factor": 8, "d": 16},
            "rulers": {"base 10,000": ruler, "base 500": ruler, "base 10,000 slowed x8": ruler}}


def _column_figures():
    rng = np.random.default_rng(1)
    S = rng.normal(size=(6, 6))
    W = np.tril(rng.uniform(0.1, 1, (6, 6)))
    W /= W.sum(axis=1, keepdims=True)
    words = ["the", "cat", "sat", "on", "a", "mat"]
    dist = np.arange(0.0, 251.0)
    yield "permutation", pt.permutation_figure(S, S[np.ix_([1, 0, 2, 3, 4, 5], [1, 0, 2, 3, 4, 5])], [1, 0, 2, 3, 4, 5],
                                               words, layout="column")
    yield "causal", pt.causal_figure(W, W[::-1, ::-1], words, layout="column")
    yield "codes", pt.position_codes_figure(rng.normal(size=(16, 16)), rng.normal(size=(64, 16)), layout="column")
    yield "shift map", pt.shift_map_figure(np.eye(16), 5, layout="column")
    yield "self-similarity", pt.self_similarity_figure(16, 200, layout="column")
    yield "clock", pr.phase_clock((0.8, 0.6), 0.6, range(8), query_position=2, key_position=5, layout="column")
    yield "split", pr.score_split_figure(layout="column")
    yield "terms", pr.score_terms(mark=4, layout="column")
    yield "decay", pr.decay_panels((dist, 30 / (1 + dist)), (dist - 250, np.cos(dist)),
                                   (-np.arange(1.0, 4097.0)[::-1], rng.normal(size=(3, 4096))), train_length=64,
                                   target=-5, layout="column")
    yield "blocks", pr.block_rotation_image(37, 16, layout="column")
    yield "shift", pr.shift_change_figure(np.arange(10.0, 60.0, 10.0), {"a": np.ones(5), "b": np.full(5, 1e-14)},
                                          layout="column")
    yield "defects", pr.defect_heads_figure({h: np.eye(8)[5] for h in "abc"}, {h: np.eye(8)[4] for h in "abc"}, target=5,
                                            layout="column")
    for panel in ("t5", "alibi", "kernel"):
        yield panel, pa.bias_shapes(panel=panel)
    from ropegeo.toy.alternatives import Comparison
    from ropegeo.toy.scheme_heads import fixed_head
    from ropegeo.toy.budget_curves import load_run

    cmp = Comparison.from_dict(load_run("scheme_comparison"))
    for panel in ("stretch", "retrieval", "match"):
        yield panel, pa.comparison_figure(cmp, panel=panel)
    heads = [fixed_head("none"), fixed_head("alibi"), fixed_head("none")]
    yield "profiles", pa.learned_profiles(heads, target=5, layout="grid")
    yield "ruler budget", pa.ruler_budget_figure(_study())
    yield "ruler split", pa.ruler_split_figure(_study())


def _bench():
    """Chapter 4's bench: Phi-3-mini's head (width 96, base 10,000) stretched from 4,096 to 131,072 tokens."""
    from ropegeo import scaling as S
    from ropegeo import extension as SR
    from ropegeo.frequencies import frequencies

    D, B, L, N = 96, 10_000.0, 4096, 131_072
    reports = {rule: SR.extension_report(None if rule == "none" else S.preset(rule, train_length=L, target_length=N),
                                        base=B, rotary_dim=D, train_length=L, target_length=N)
               for rule in ("none", "linear", "ntk", "yarn", "llama3")}
    return frequencies(D, B), L, N, reports


def _chapter45_figures():
    from ropegeo import scaling as S
    from ropegeo import extension as SR
    from ropegeo.models.manifest import load_model, shipped_models
    from ropegeo.novelty import joint_novelty
    from ropegeo.book.plots import extension as px
    from ropegeo.book.plots import implementation as pi
    from ropegeo.book.plots.spectrum import phase_error_plot
    from ropegeo.precision import buffer_cast, deployed

    theta, L, N, reports = _bench()
    served = {k: r.theta for k, r in reports.items()}
    dyn = S.Scaling("dynamic", factor=1.0, original_max_position_embeddings=L)
    rulers = dict(served, **{"dynamic NTK": {n: S.scaled_frequencies(dyn, 96, 10_000.0, n)[0] for n in (L, 8 * L, N)}})
    yield "ch04 rulers", px.ruler_panels(theta, rulers, L, N, layout="column")
    yield "ch04 rulers, no spare panel", px.ruler_panels(theta, dict(list(rulers.items())[:4]), L, N, layout="column")
    yield "ch04 stretch", px.stretch_profile(theta, served, layout="column")
    yield "ch04 tradeoff", px.tradeoff_plot(list(reports.values()), layout="column")
    joint = {k: joint_novelty(theta, th, L, range(0, N, 2003)) for k, th in served.items()}
    yield "ch04 joint", px.joint_novelty_plot(joint, {k: r.total_novelty for k, r in reports.items()}, L, 0.25,
                                              layout="column")
    w = S.yarn_ramp(96, 10_000.0, L)
    yield "ch04 ramps", px.ramp_comparison(theta, L, {"code: linear in pair index, rounded": w, "not rounded":
                                                      S.yarn_ramp(96, 10_000.0, L, truncate=False)}, layout="column")
    yield "ch04 ladders", px.model_ladders({n: load_model(n) for n in shipped_models()[:12]}, layout="column")
    yield "ch05 pairing", pi.pairing_layouts(8, layout="column")
    yield "ch05 mixing", pi.mixing_effect(64, seed=0, layout="column")
    yield "ch05 position ids", pi.position_id_grid(prompt=6, pad=3, documents=(4, 3, 3), layout="column")
    yield "ch05 decoding", pi.decoding_scores(("interleaved", "query-restart", "cache-off-by-one"), prompt=24,
                                              layout="column")
    yield "ch05 phase error", pi.phase_error_curves(128, 10_000.0, max_position=60_000, layout="column")
    # chapter 5's cast figure: chapter 3's function drawn as it is, then fitted to the column as the notebook does
    cast = phase_error_plot(theta, stop=60_000, dtypes=(deployed("bfloat16"), buffer_cast("bfloat16"), "bfloat16"))
    fit_column(cast, height=4.4).tight_layout()
    yield "ch05 cast", cast


@pytest.mark.parametrize("name, fig", list(_chapter45_figures()), ids=lambda x: x if isinstance(x, str) else "")
def test_chapter_4_and_5_column_figures_are_readable_at_both_widths(name, fig):
    for window, column in COLUMN_WIDTH_PX.items():
        assert smallest_text_px(fig, column_px=column) >= MIN_PX, (name, window)
    assert fig.get_size_inches()[0] <= 5.6, name


def test_chapter_4_and_5_wide_layouts_are_unchanged_and_were_unreadable():
    # the default draws as before (sizes of the wide figures), and those figures fail the measure on a phone
    from ropegeo.book.plots import extension as px
    from ropegeo.book.plots import implementation as pi

    theta, L, N, reports = _bench()
    served = {k: r.theta for k, r in reports.items()}
    wide = {(13.0, 2.9): px.ruler_panels(theta, served, L, N, columns=5), (11.0, 3.6): px.tradeoff_plot(list(reports.values())),
            (7.2, 3.6): px.stretch_profile(theta, served), (8.5, 4.0): pi.pairing_layouts(8),
            (10.0, 3.8): pi.mixing_effect(16), (12.0, 3.2): pi.decoding_scores(prompt=8),
            (7.5, 4.2): pi.phase_error_curves(max_position=1000)}
    for size, fig in wide.items():
        assert tuple(fig.get_size_inches()) == size
        assert smallest_text_px(fig, column_px=COLUMN_WIDTH_PX[360]) < MIN_PX, size
    for call in (lambda: px.stretch_profile(theta, served, layout="tall"), lambda: pi.pairing_layouts(layout="narrow"),
                 lambda: px.model_ladders({}, layout="columns"), lambda: pi.position_id_grid(layout=None)):
        with pytest.raises(ValueError, match="layout"):
            call()


@pytest.mark.parametrize("name, fig", list(_column_figures()), ids=lambda x: x if isinstance(x, str) else "")
def test_column_figures_are_readable_at_both_widths(name, fig):
    for window, column in COLUMN_WIDTH_PX.items():
        assert smallest_text_px(fig, column_px=column) >= MIN_PX, (name, window)


def test_the_measure_can_fail():
    # the old wide layout of a three-panel figure: 13 inches with 8-point legends is unreadable on a phone
    fig = pa.bias_shapes()
    assert smallest_text_px(fig, column_px=COLUMN_WIDTH_PX[360]) < MIN_PX
    assert smallest_text_px(fit_column(pa.bias_shapes(panel="kernel")), column_px=328) >= MIN_PX


def test_wide_layout_is_unchanged():
    # additive: the default keeps the figures as they were
    fig = pr.decay_panels((np.arange(3.0), np.ones(3)), (np.arange(3.0), np.ones(3)), (np.arange(3.0), np.ones((2, 3))), window=1)
    assert tuple(fig.get_size_inches()) == (13.0, 4.0) and len(fig.axes) == 3
    with pytest.raises(ValueError, match="layout"):
        panels("tall", 2, wide_size=(4, 3))


def _png_size(data):
    raw = base64.b64decode(data)
    return struct.unpack(">II", raw[16:24])


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_figure_has_a_caption_alt_text_and_a_column_width(chapter):
    nb = nbformat.read(ROOT / "chapters" / f"{chapter}.ipynb", as_version=4)
    figures = 0
    for cell in nb.cells:
        pngs = [o["data"]["image/png"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if not pngs:
            continue
        figures += 1
        meta = cell.metadata.get("mystnb", {})
        caption = meta.get("figure", {}).get("caption", "")
        alt = meta.get("image", {}).get("alt", "")
        assert len(caption) >= 60 and meta["figure"].get("name", "").startswith(f"fig-ch{chapter[:2]}"), cell.id
        assert len(alt) >= 60 and "/" not in alt.split()[0] and not alt.endswith(".png"), cell.id
        for png in pngs:
            width, _ = _png_size(png)
            # at 100 dpi, 11-point text stays at or above 9 px on a 328 px column while the figure is at most 560 px wide
            assert width <= 560, (cell.id, width)
    assert figures >= 5


def test_fit_column_checks_its_arguments():
    with pytest.raises(ValueError, match="fig"):
        fit_column("not a figure")
    with pytest.raises(ValueError, match="width"):
        fit_column(Figure(), width=0.5)
    with pytest.raises(ValueError, match="column_px"):
        smallest_text_px(Figure(), column_px=1)


def _chapter8_figures():
    from ropegeo.frequencies import frequencies
    from ropegeo.multiaxis import axial_bank, axis_frequencies, mixed_bank, mrope_bank
    from ropegeo.book.plots import multiaxis as pm

    F2, F3 = mrope_bank(128, 1e6, (16, 24, 24)), mrope_bank(128, 1e6, (24, 20, 20), round_robin=True)
    yield "ch08 sections", pm.section_figure({"blocked": F2, "interleaved": F3})
    yield "ch08 axis kernels", pm.axis_kernel_figure(F2, 64, title="Qwen2-VL")
    yield "ch08 kernel maps", pm.kernel_map_figure({"axial": axial_bank(64), "mixed": mixed_bank(64, angle=0.4)}, 16)
    rng = np.random.default_rng(0)
    study = {n: {"target_mass": rng.uniform(0, 1, 10)} for n in ("interleaved", "blocked", "y starved, slow")}
    yield "ch08 splits", pm.split_figure(study)
    curve = {"budgets": [50, 100, 200], "target_mass": rng.uniform(0, 1, (3, 5))}
    yield "ch08 budget", pm.split_budget_figure({"blocked": curve, "y starved, slow": curve})
    assert axis_frequencies(frequencies(4), [0, 1], 2).shape == (2, 2)


@pytest.mark.parametrize("name, fig", list(_chapter8_figures()), ids=lambda x: x if isinstance(x, str) else "")
def test_chapter_8_figures_are_readable_at_both_widths(name, fig):
    for window, column in COLUMN_WIDTH_PX.items():
        assert smallest_text_px(fig, column_px=column) >= MIN_PX, (name, window)
    assert fig.get_size_inches()[0] <= 5.6, name
