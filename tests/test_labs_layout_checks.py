"""The browser test's layout checks (``sitecheck.chart_problems``) discriminate: each passes a good
view and fails a labelled bad one (a label over a mark, a clipped caption, a mark no key explains,
a listing that contradicts the chart, a word broken inside, text printed over a heatmap, two kinds
of mark covering each other, text over text). The views are hand-made markup styled by the labs'
own stylesheet, in headless Chromium (no vendored files, no book build).

Needs Chromium and Playwright; skips without them unless ``ROPEGEO_REQUIRE_SITE=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sitecheck as sc
from ropegeo.book.widgets._lab import STATIC

REQUIRE = os.environ.get("ROPEGEO_REQUIRE_SITE") == "1"
ROOT = Path(__file__).resolve().parent.parent


def _chart(body: str, w: int = 300, h: int = 120) -> str:
    return (f'<svg class="rl-chart" viewBox="0 0 {w} {h}" style="width: {w}px" aria-label="view">'
            f'<rect class="rl-frame" x="20" y="10" width="{w - 30}" height="{h - 30}"></rect>{body}</svg>')


def _key(*kinds: str) -> str:
    items = "".join(f'<li data-key-for="{k}"><svg width="22" height="10" aria-hidden="true"><circle cx="11" cy="5" r="3.5" '
                    f'class="{k}"></circle></svg><span>what {k} means</span></li>' for k in kinds)
    return f'<ul class="rl-key">{items}</ul>'


DOT = '<circle class="rl-mark" cx="100" cy="60" r="3.5" data-x="6283" data-y="0.99"></circle>'
LISTING = ('<table class="rl-table" data-lists="rl-mark"><tr><th>most identity-like Δ</th><th>K</th></tr>'
           '<tr><td>{}</td><td>0.995677</td></tr></table>')

#: (label, markup inside one .ropegeo-lab, the problem it must raise; None: a good view, no problem).
VIEWS = [
    ("good: a label beside its dot, a key, a listing that agrees",
     _chart(DOT + '<text x="108" y="64" class="rl-note">6,283</text>') + _key("rl-mark") + LISTING.format("6,283"), None),
    ("a label over a mark", _chart(DOT + '<text x="92" y="64" class="rl-note">6,283</text>') + _key("rl-mark"),
     'text "6,283" covers a mark (rl-mark)'),
    ("a clipped caption", _chart('<text x="250" y="40" class="rl-note">pair 7: θ = 3.2×10^-4 rad per token</text>'),
     "is cut by the chart's edge"),
    ("a mark no key explains", _chart(DOT.replace("rl-mark", "rl-slow")), "its rl-slow marks have no key"),
    ("a listing that contradicts the chart", _chart(DOT) + _key("rl-mark") + LISTING.format("6,277"),
     "the table lists 6277 but the chart marks 6283"),
    ("a word broken inside (Gat e B)", _chart("") + '<p style="width: 20px; overflow-wrap: anywhere">Gate B</p>',
     '"Gate" breaks inside a word'),
    ("good: a narrow table keeps its words whole (the labs' style within the book's)",
     _chart("") + '<table class="rl-table" style="width: 60px"><tr><td>Gate B offset set</td><td>local 1..64</td></tr></table>', None),
    ("labels printed over a heatmap", _chart('<image x="20" y="10" width="270" height="90" href="data:,"></image>'
                                             '<text x="24" y="50" class="rl-note">6,283</text>'), "is printed over the heatmap"),
    ("the highlighted mark half covered by another", _chart(DOT + '<circle class="rl-other" cx="101" cy="60" r="3.5"></circle>')
     + _key("rl-mark", "rl-other"), "a rl-other mark covers the highlighted rl-mark"),
    ("a label over another label", _chart('<text x="60" y="50" class="rl-note">yarn, llama3</text>'
                                          '<text x="70" y="52" class="rl-note">dynamic</text>'), 'overprints "yarn, llama3"'),
]


@pytest.fixture(scope="module")
def problems_by_view():
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        if REQUIRE:
            pytest.fail("playwright is not installed (ROPEGEO_REQUIRE_SITE=1)")
        pytest.skip("the Python package playwright is not installed")
    if sc.chromium_path() is None:
        if REQUIRE:
            pytest.fail("Chromium is not installed (ROPEGEO_REQUIRE_SITE=1)")
        pytest.skip("Chromium is not installed (Debian's chromium)")
    css = (STATIC / "labs.css").read_text(encoding="utf-8") + (ROOT / "scripts" / "site" / "static" / "book.css").read_text(
        encoding="utf-8")
    labs = "".join(f'<div class="ropegeo-lab" data-view="{k}"><div class="rl-readout">{markup}</div></div>'
                   for k, (_, markup, _) in enumerate(VIEWS))
    with sc.browser() as b:
        page = b.new_page(viewport={"width": 800, "height": 900})
        page.set_content(f'<!DOCTYPE html><html><head><style>{css}</style></head><body><main class="bd-article">{labs}'
                         "</main></body></html>")
        found = sc.chart_problems(page)
    return [[p.split(": ", 1)[1] for p in found if p.startswith(f"lab #{k}:")] for k in range(len(VIEWS))]


@pytest.mark.parametrize("k", range(len(VIEWS)), ids=[label for label, _, _ in VIEWS])
def test_each_check_passes_the_good_view_and_fails_its_bad_one(problems_by_view, k):
    label, _, want = VIEWS[k]
    got = problems_by_view[k]
    if want is None:
        assert got == [], f"{label}: {got}"
    else:
        assert any(want in p for p in got), f"{label}: expected a problem containing {want!r}, got {got}"
