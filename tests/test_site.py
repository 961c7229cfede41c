"""The built book: nothing loaded from outside the site, and every page works in a real browser.

The site tests read ``ROPEGEO_SITE`` (``make test-site`` sets it to ``_build/html`` after the book
build). Without it they skip, so a plain ``pytest tests`` never checks a stale build. With
``ROPEGEO_REQUIRE_SITE=1`` (``make test``) a missing site, Playwright or Chromium fails instead of
skipping. ``ROPEGEO_REQUIRE_LAB=1`` makes it a failure when no page embeds the kernel lab, or when one of the
six labs is embedded in no page.

The checkers themselves are tested first, on small synthetic pages, so that each kind of failure
(external script / style / font, untypeset math, raw ``$$``, a broken image, an undrawn diagram,
an unrendered widget, a dead link, a console error) is shown to be caught.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

import sitecheck as sc

ROOT = Path(__file__).resolve().parent.parent
SITE = Path(os.environ["ROPEGEO_SITE"]).resolve() if os.environ.get("ROPEGEO_SITE") else None
REQUIRE_SITE = os.environ.get("ROPEGEO_REQUIRE_SITE") == "1"
REQUIRE_LAB = os.environ.get("ROPEGEO_REQUIRE_LAB") == "1"
VENDOR = ROOT / "_vendor" / "site"
# Screenshots keep the top of very long pages only (the API page is ~130,000 px tall, which takes
# Chromium ten seconds to capture); every chapter so far is well under this.
SHOT_MAX_HEIGHT = 20_000


def _skip_or_fail(reason: str):
    if REQUIRE_SITE:
        pytest.fail(reason + " (ROPEGEO_REQUIRE_SITE=1)")
    pytest.skip(reason)


def _need_browser():
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("the Python package playwright is not installed (requirements.txt)")
    if sc.chromium_path() is None:
        _skip_or_fail("Chromium is not installed (.ci/run installs Debian's chromium)")


def _need_site():
    if SITE is None:
        _skip_or_fail("no built site to check: set ROPEGEO_SITE=_build/html (make test-site does, "
                      "after the book build)")
    if not (SITE / "index.html").is_file():
        _skip_or_fail(f"the site {SITE} is not built (run make book)")


# ---------------------------------------------------------------------------------------------
# The static scan, on synthetic HTML
# ---------------------------------------------------------------------------------------------

def test_scan_finds_each_kind_of_external_reference():
    html = """<html><head>
      <script src="https://cdn.example.org/require.min.js"></script>
      <script src="_static/local.js"></script>
      <link rel="stylesheet" href="//fonts.example.org/css?family=Roboto">
      <link rel="stylesheet" href="_static/ok.css">
      <link rel="preload" as="font" href="https://cdn.example.org/f.woff2">
      <link rel="canonical" href="https://example.org/page.html">
      <style>@font-face { src: url("https://cdn.example.org/font.woff") }</style>
      <style>@import 'https://cdn.example.org/x.css';</style>
      <script type="module">import mermaid from "https://cdn.example.org/mermaid.esm.min.mjs";</script>
      <script>const U = "https://cdn.example.org/lib/index.js"; const page = "https://example.org/";</script>
      <script type="application/vnd.jupyter.widget-state+json">{"u": "https://example.org/a.js"}</script>
    </head><body>
      <img src="https://img.example.org/a.png"><img src="_images/b.png">
      <div style="background: url(https://img.example.org/bg.png)"></div>
      <a href="https://github.com/x/y">a link is not a load</a>
    </body></html>"""
    urls = sorted(u for _, u in sc.external_refs_in_html(html))
    assert urls == sorted([
        "https://cdn.example.org/require.min.js", "//fonts.example.org/css?family=Roboto",
        "https://cdn.example.org/f.woff2", "https://cdn.example.org/font.woff",
        "https://cdn.example.org/x.css", "https://cdn.example.org/mermaid.esm.min.mjs",
        "https://cdn.example.org/lib/index.js", "https://img.example.org/a.png",
        "https://img.example.org/bg.png",
    ])


def test_scan_site_follows_linked_css(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "a.css").write_text("@import 'b.css'; body { color: red }")
    (tmp_path / "_static" / "b.css").write_text("@font-face { src: url(https://fonts.example.org/x.woff2) }")
    (tmp_path / "_static" / "unused.css").write_text("@import 'https://never.example.org/z.css';")
    (tmp_path / "index.html").write_text('<link rel="stylesheet" href="_static/a.css"><p>hi</p>')
    (tmp_path / "ok.html").write_text(
        '<script>const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js"</script>')
    problems, n = sc.scan_site(tmp_path)
    assert n == 2
    assert problems == ["_static/b.css: css loads https://fonts.example.org/x.woff2"]


def test_internal_link_checker(tmp_path):
    (tmp_path / "a.html").write_text('<h1 id="top">A</h1><section id="part-2"></section>')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("<p>x</p>")
    assert sc.check_internal_link(tmp_path, "/a.html#part-2") is None
    assert sc.check_internal_link(tmp_path, "/a.html") is None
    assert sc.check_internal_link(tmp_path, "/sub/") is None
    assert "no file" in sc.check_internal_link(tmp_path, "/b.html")
    assert "no element with id 'nope'" in sc.check_internal_link(tmp_path, "/a.html#nope")


# ---------------------------------------------------------------------------------------------
# The browser checks, on a synthetic site that has one of each failure
# ---------------------------------------------------------------------------------------------

def _visit(b, base, url, external):
    ctx = sc.new_context(b, base, external)
    visit = sc.PageVisit(ctx, base)
    try:
        page = visit.open(url)
        out = sc.settle_and_check(page, timeout_ms=4000)
    finally:
        ctx.close()
    return visit, out


def _broken_page(good: bool) -> str:
    mathjax = '<script defer src="_static/mathjax/tex-chtml.js"></script>'
    img = '<img src="ok.png">' if good else '<img src="missing.png">'
    math = (r'<div class="math notranslate nohighlight">\[x^2\]</div>' if good else
            r'<div class="math notranslate nohighlight">\[x^2\]</div>'
            # Sphinx tells MathJax to skip the page body (class "document") except .math: a
            # formula myst did not parse stays raw like this
            r'<p class="mathjax_ignore">left over: $$y$$</p>')
    mermaid = ('<pre class="mermaid"><svg></svg></pre>' if good else
               '<pre class="mermaid">flowchart LR; A--&gt;B</pre>')
    widget = ('<div class="widget-subarea"><p>drawn</p></div>' if good else "")
    widget += '<script type="application/vnd.jupyter.widget-view+json">{"model_id": "m"}</script>'
    err = "" if good else "<script>console.error('boom')</script>"
    ext = "" if good else '<img src="https://img.example.org/x.png" alt="">'
    link = '<a href="good.html#here">ok</a>' if good else '<a href="gone.html">dead</a>'
    table = ("<table><tr><th>a</th></tr><tr><td>1</td></tr></table>" if good else
             "<p>| a | b | | --- | --- | | 1 | 2 |</p>")  # a displayed Markdown table left unparsed
    return (f'<html><head><link rel="icon" href="data:,">{mathjax}</head><body><main>{math}{img}{mermaid}{widget}{err}{ext}{link}{table}'
            f'<span id="here"></span></main></body></html>')


def test_width_check_finds_what_widens_a_narrow_page(tmp_path):
    _need_browser()
    (tmp_path / "wide.html").write_text(
        '<html><head><link rel="icon" href="data:,"></head><body><p>fine</p><pre style="overflow:auto">'
        + "x" * 400 + '</pre><p><code>' + "y" * 120 + "</code></p></body></html>")
    (tmp_path / "narrow.html").write_text(
        '<html><head><link rel="icon" href="data:,"></head><body><p>fine</p><pre style="overflow:auto">'
        + "x" * 400 + "</pre></body></html>")
    with sc.serve(tmp_path) as base, sc.browser() as b:
        ctx = b.new_context(viewport={"width": 360, "height": 800})
        try:
            got = {}
            for name in ("wide", "narrow"):
                page = ctx.new_page()
                page.goto(base + name + ".html")
                got[name] = sc.page_width(page)
        finally:
            ctx.close()
    assert got["narrow"]["width"] <= 360 and got["narrow"]["culprits"] == []
    assert got["wide"]["width"] > 360 and any("code" in c and "yyyy" in c for c in got["wide"]["culprits"])


def test_cut_text_check_fails_broken_words_and_cut_links(tmp_path):
    """At 360 px: a table header in the book's old style (overflow-wrap: anywhere) breaks "source" one
    letter per line, a footer link in a box hiding its overflow is cut; the book's style keeps both."""
    _need_browser()
    css = (ROOT / "scripts" / "site" / "static" / "book.css").read_text(encoding="utf-8")
    # the theme's own rules come first: a one-line link box that hides its overflow
    theme = ".prev-next-area a { display: block; white-space: nowrap; overflow: hidden; width: 120px; }"
    body = ('<main class="bd-article"><div class="table-wrapper"><table style="width: 20px"><tr><th>source</th><th>n</th></tr>'
            '<tr><td>ropegeo.toy.alternatives.compare_schemes</td><td>3</td></tr></table></div></main>'
            '<div class="prev-next-area"><a href="#">next: 5. Implementing RoPE as production models do it</a></div>')
    old_td = ".bd-article td, .bd-article th { overflow-wrap: anywhere; }"  # the book's style before
    (tmp_path / "good.html").write_text(f"<html><head><style>{theme}{css}</style></head><body>{body}</body></html>")
    (tmp_path / "bad.html").write_text(f"<html><head><style>{theme}{old_td}</style></head><body>{body}</body></html>")
    with sc.serve(tmp_path) as base, sc.browser() as b:
        ctx = b.new_context(viewport={"width": 360, "height": 800})
        try:
            got = {}
            for name in ("good", "bad"):
                page = ctx.new_page()
                page.goto(base + name + ".html")
                got[name] = sc.cut_text(page)
        finally:
            ctx.close()
    assert got["good"] == [], got["good"]
    assert any('"source" breaks inside a word' in c for c in got["bad"]), got["bad"]
    assert any(c.startswith("a cut:") for c in got["bad"]), got["bad"]


def test_browser_checks_catch_each_failure(tmp_path):
    _need_browser()
    if not (VENDOR / "mathjax" / "tex-chtml.js").is_file():
        _skip_or_fail("the vendored browser files are missing (make vendor)")
    shutil.copytree(VENDOR / "mathjax", tmp_path / "_static" / "mathjax")
    png = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")
    (tmp_path / "ok.png").write_bytes(png)
    (tmp_path / "good.html").write_text(_broken_page(True))
    (tmp_path / "bad.html").write_text(_broken_page(False))
    with sc.serve(tmp_path) as base, sc.browser() as b:
        ext_good: list[str] = []
        visit, good = _visit(b, base, base + "good.html", ext_good)
        assert good["problems"] == [] and visit.console_problems() == [] and ext_good == []
        assert good["info"]["math"] == 1 and good["info"]["images"] == 1
        assert all(sc.check_internal_link(tmp_path, "/" + sc.site_url_to_path(base, u)) is None
                   for u in good["links"])
        ext_bad: list[str] = []
        visit, bad = _visit(b, base, base + "bad.html", ext_bad)
    text = "\n".join(bad["problems"])
    assert "raw math source left in the page" in text
    assert "raw Markdown table left in the page" in text
    assert "image not loaded: missing.png" in text
    assert "mermaid diagram #0 not drawn" in text
    assert "embedded widget view #0 not rendered" in text
    assert any("boom" in p for p in visit.console_problems())
    assert set(ext_bad) == {"https://img.example.org/x.png"}
    dead = [sc.check_internal_link(tmp_path, "/" + sc.site_url_to_path(base, u)) for u in bad["links"]]
    assert any(d and "gone.html" in d for d in dead)


# ---------------------------------------------------------------------------------------------
# The built book
# ---------------------------------------------------------------------------------------------

def _pages():
    if SITE is None or not SITE.is_dir():
        return []
    return [p.relative_to(SITE).as_posix() for p in sc.html_pages(SITE)]


def test_site_has_pages():
    _need_site()
    assert _pages(), f"no HTML pages in {SITE}"


def test_no_external_references_in_built_html():
    """No page (nor a stylesheet it links) loads a script, style, font or image from outside."""
    _need_site()
    problems, n = sc.scan_site(SITE)
    assert n > 0
    assert not problems, "external references:\n" + "\n".join(problems)


def test_vendored_files_are_served_from_the_site():
    _need_site()
    static = SITE / "_static"
    for rel in ("mathjax/tex-chtml.js", "mathjax/output/chtml/fonts/woff-v2", "require/require.js",
                "html-manager/embed-amd.js", "anywidget/index.js", "widgets-offline.js",
                "mermaid/mermaid.esm.min.mjs"):
        assert (static / rel).exists(), f"_static/{rel} missing from the built site (make vendor)"


@pytest.fixture(scope="module")
def served_site():
    _need_site()
    _need_browser()
    shots = SITE.parent / "screenshots"
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    with sc.serve(SITE) as base, sc.browser() as b:
        yield {"base": base, "browser": b, "shots": shots, "stats": []}


@pytest.mark.parametrize("rel", _pages() or ["<no site>"])
def test_page_in_browser(served_site, rel):
    """Open the page in headless Chromium: no console errors, math typeset, images loaded,
    diagrams drawn, links resolving, widgets rendered; save a screenshot."""
    base, b = served_site["base"], served_site["browser"]
    external: list[str] = []
    ctx = sc.new_context(b, base, external)
    visit = sc.PageVisit(ctx, base)
    t0 = time.monotonic()
    try:
        redirect = sc.meta_refresh((SITE / rel).read_text(encoding="utf-8", errors="replace"))
        page = visit.open(base + rel, redirect=redirect)
        out = sc.settle_and_check(page)
        shot = served_site["shots"] / (rel[:-5] + ".png")
        shot.parent.mkdir(parents=True, exist_ok=True)
        height = min(page.evaluate("document.documentElement.scrollHeight"), SHOT_MAX_HEIGHT)
        page.screenshot(path=str(shot), full_page=True, timeout=120_000,  # the API page is long: slow on a busy machine
                        clip={"x": 0, "y": 0, "width": 1280, "height": height})
    finally:
        ctx.close()
    # a phone's width: the page must not scroll sideways
    page_360 = ctx_360 = None
    try:
        ctx_360 = sc.new_context(b, base, external)
        ctx_360.set_default_timeout(30_000)
        visit_360 = sc.PageVisit(ctx_360, base)
        page_360 = visit_360.open(base + rel, redirect=redirect)
        page_360.set_viewport_size({"width": 360, "height": 800})
        page_360.wait_for_timeout(300)
        width = sc.page_width(page_360)
        cut = sc.cut_text(page_360)
    finally:
        if ctx_360 is not None:
            ctx_360.close()
    served_site["stats"].append((rel, "width at 360 px", width["width"]))
    problems = list(out["problems"]) + visit.console_problems() + visit_360.console_problems()
    if width["width"] > width["viewport"] + 1:
        problems.append(f"at 360 px the page is {width['width']} px wide: " + "; ".join(width["culprits"]))
    problems += [f"at 360 px: {c}" for c in cut]
    problems += [f"request failed: {f}" for f in visit.failed]
    problems += [f"request to another host (blocked): {u}" for u in external]
    for url in sorted(set(out["links"])):
        path = sc.site_url_to_path(base, url)
        if path is not None:
            why = sc.check_internal_link(SITE, "/" + path)
            if why:
                problems.append(f"broken internal link: {why}")
    served_site["stats"].append((rel, out["info"], time.monotonic() - t0))
    print(f"{rel}: {json.dumps(out['info'])}, {width['width']} px wide at 360 px, in {time.monotonic() - t0:.1f}s")
    assert not problems, f"{rel}:\n" + "\n".join(problems)


_WIDGET_STATE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)


def _embedded_state(rel: str) -> str:
    """The widget state a page embeds (not its prose: the API page names the lab classes too)."""
    return "".join(_WIDGET_STATE.findall((SITE / rel).read_text(encoding="utf-8", errors="replace")))


# The kernel lab of the book's pages is driven by test_every_lab_in_book_answers_its_controls below
# (the same moves, sc.LAB_MOVES, and the same comparison with ropegeo after each, sc.compare_lab),
# which also fails when no page embeds it (ROPEGEO_REQUIRE_LAB=1); it was driven a second time here.


#: The labs, by the anywidget id myst-nb embeds, and the chapter each belongs to.
LAB_CHAPTERS = {
    "ropegeo.book.widgets.clock_lab.ClockLab": "02", "ropegeo.book.widgets.frequency_lab.FrequencyLab": "03",
    "ropegeo.book.widgets.kernel_lab.KernelLab": "03", "ropegeo.book.widgets.scaling_lab.ScalingLab": "04",
    "ropegeo.book.widgets.wiring_lab.WiringLab": "05", "ropegeo.book.widgets.audit_lab.AuditLab": "06",
    "ropegeo.book.widgets.axes_lab.AxesLab": "08",
    "ropegeo.book.widgets.attention_lab.AttentionLab": "03",
    "ropegeo.book.widgets.angle_lab.AngleLab": "04",
    "ropegeo.book.widgets.pipeline_lab.PipelineLab": "05",
}


def _pages_with_labs() -> dict[str, list[str]]:
    out = {}
    for rel in _pages():
        text = _embedded_state(rel)
        found = [marker for marker in LAB_CHAPTERS if marker in text]
        if found:
            out[rel] = found
    return out


def test_every_lab_in_book_answers_its_controls(served_site):
    """On every page embedding a lab: with no kernel and no network, each lab's controls move its
    numbers, which equal ropegeo's after every move; the labs fit a 360 px screen."""
    pages = _pages_with_labs()
    if REQUIRE_LAB:
        embedded = {m for found in pages.values() for m in found}
        missing = sorted(set(LAB_CHAPTERS) - embedded)
        assert not missing, f"labs embedded in no page (ROPEGEO_REQUIRE_LAB=1): {', '.join(missing)}"
    if not pages:
        pytest.skip("no page of the book embeds a lab yet")
    base, b = served_site["base"], served_site["browser"]
    for rel in pages:
        external: list[str] = []
        ctx = sc.new_context(b, base, external)
        visit = sc.PageVisit(ctx, base)
        try:
            page = visit.open(base + rel)
            n = sc.wait_for_labs(page)
            assert n >= 1, f"{rel}: a lab's state is embedded but no lab was drawn"
            problems, _ = sc.drive_labs(page)
            for i in range(page.locator(sc.LAB_SELECTOR).count()):  # its last move asked for 5,000,000 offsets
                if not sc.lab_result(page, i)["clipped"]:
                    problems.append(f"kernel lab #{i}: a 5,000,000-offset range was not clipped")
            page.set_viewport_size({"width": 360, "height": 800})
            page.wait_for_timeout(200)
            problems += sc.lab_layout_problems(page)
            assert not problems, f"{rel}:\n" + "\n".join(problems)
        finally:
            ctx.close()
        assert visit.console_problems() == [] and external == []
