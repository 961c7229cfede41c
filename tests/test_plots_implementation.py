"""The compact Gate A grid of chapter 5: same content as the wide matrix, drawn for a narrow column."""

import numpy as np
import pytest

from ropegeo.book import broken
from ropegeo.gates.a.gate import CHECKS, gate_a
from ropegeo.book.plots.implementation import GRID_WIDTH, gate_a_grid


@pytest.fixture(scope="module")
def reports():
    names = ("interleaved", "mixed-pairing", "cache-off-by-one")
    return {n: gate_a(broken.CATALOGUE[n].impl, **broken.CATALOGUE[n].declared) for n in names}


def test_grid_has_the_checks_and_readable_text_at_phone_width(reports):
    fig = gate_a_grid(reports, title="t")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(CHECKS)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(reports)
    w_in = fig.get_size_inches()[0]
    assert w_in == GRID_WIDTH
    # shown 330 px wide on a 360 px screen, a 10-point label at 100 dpi is at least 9 px tall
    scale = min(1.0, 330 / (w_in * 100))
    sizes = [t.get_fontsize() for t in ax.get_xticklabels() + ax.get_yticklabels()]
    assert min(sizes) * 100 / 72 * scale >= 9


def test_grid_marks_failures_like_the_reports(reports):
    ax = gate_a_grid(reports).axes[0]
    marks = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
    for r, rep in enumerate(reports.values()):
        for c, name in enumerate(CHECKS):
            p = rep.check(name).passed
            assert marks[(r, c)] == ("-" if p is None else ("" if p else "x"))


def test_grid_rejects_bad_input():
    with pytest.raises(ValueError, match="reports"):
        gate_a_grid({})
