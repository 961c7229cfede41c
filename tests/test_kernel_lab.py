"""The kernel lab: validated state in Python, the numbers computed by its JavaScript.

The JavaScript (``ropegeo/book/static/lab_kernel.js`` on the shared core) is checked against ``ropegeo`` to 1e-9 twice:
in Node (its ``compute`` function, over many states) and in headless Chromium, where the widget is
rendered from embedded state by the vendored html-manager with no kernel and its controls are
moved as a reader would. The browser part needs ``make vendor`` and Chromium; it skips without
them unless ``ROPEGEO_REQUIRE_SITE=1`` (``make test-site``), where it must run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import traitlets

import sitecheck as sc
from jsrun import call_js
from ropegeo.book.widgets import kernel_lab as kl
from ropegeo.book.widgets._lab import esm_source
from ropegeo.book.widgets.kernel_lab import MAX_SPAN, KernelLab, reference

ROOT = Path(__file__).resolve().parent.parent
JS = esm_source("lab_kernel.js")
VENDOR = ROOT / "_vendor" / "site"
REQUIRE = os.environ.get("ROPEGEO_REQUIRE_SITE") == "1"


def _skip_or_fail(reason):
    if REQUIRE:
        pytest.fail(reason + " (ROPEGEO_REQUIRE_SITE=1)")
    pytest.skip(reason)


# ---------------------------------------------------------------------------------------------
# Python side
# ---------------------------------------------------------------------------------------------

def test_defaults_and_state():
    lab = KernelLab()
    assert lab.state() == {"head_dim": 8, "base": 10_000.0, "offset_start": 1, "offset_stop": 20_000,
                           "interpolate": False, "train_length": 4096, "target_length": 16_384, "top": 5}
    assert lab.scale == 1.0
    lab.interpolate = True
    assert lab.scale == 4096 / 16_384
    assert "export default" in lab._esm and "function render" in lab._esm  # the ES module travels inline
    assert "export function nearCollisions" in lab._esm  # with the shared geometry core


@pytest.mark.parametrize("kwargs, match", [
    ({"head_dim": 7}, "head_dim must be an even integer"),
    ({"head_dim": 258}, "head_dim must be at most 256"),
    ({"base": 1.0}, "base"),
    ({"offset_start": -1}, "offset_start must be at least 0"),
    ({"offset_start": 10, "offset_stop": 5}, "offset range is empty"),
    ({"offset_start": 0, "offset_stop": MAX_SPAN}, "at most 200,000"),
    ({"train_length": 0}, "train_length must be at least 1"),
    ({"top": 21}, "top must be at most 20"),
])
def test_bad_values_are_refused_with_the_parameter_named(kwargs, match):
    with pytest.raises(traitlets.TraitError, match=match):
        KernelLab(**kwargs)


def test_range_checked_on_assignment_and_bad_values_not_kept():
    lab = KernelLab(offset_start=0, offset_stop=MAX_SPAN - 1)
    with pytest.raises(traitlets.TraitError, match="at most"):
        lab.offset_stop = MAX_SPAN
    with pytest.raises(traitlets.TraitError, match="empty"):
        lab.offset_start = MAX_SPAN
    assert (lab.offset_start, lab.offset_stop) == (0, MAX_SPAN - 1)
    with lab.hold_trait_notifications():  # moving the window: both ends at once, as the front end does
        lab.offset_start = 10**6
        lab.offset_stop = 10**6 + 10
    assert (lab.offset_start, lab.offset_stop) == (10**6, 10**6 + 10)


def test_reference_against_brute_force():
    """reference() against an independent direct evaluation (cos at every offset, argsort)."""
    d, base, start, stop, s = 8, 10_000.0, 1, 20_000, 0.25
    ref = reference(d, base, start, stop, interpolate=True, train_length=1, target_length=4, top=5,
                    offsets=[1, 6283])
    theta = np.array([base ** (-2 * i / d) for i in range(d // 2)])
    offs = np.arange(start, stop + 1)
    k = np.cos(np.outer(offs * s, theta)).mean(axis=1)
    order = np.lexsort((offs, -k))[:5]
    assert [o for o, _ in ref["top"]] == offs[order].tolist()
    np.testing.assert_allclose([v for _, v in ref["top"]], k[order], atol=1e-12)
    np.testing.assert_allclose(ref["k"], np.cos(np.outer([1, 6283], s * theta)).mean(axis=1), atol=1e-15)


# ---------------------------------------------------------------------------------------------
# The JavaScript in Node
# ---------------------------------------------------------------------------------------------

def _node_compute(states):
    calls = [("compute", [st]) for st in states]
    calls.append(("topOffsets", [[0.5, 0.9, 0.9, 0.1, 0.9], 10, 2]))
    out = call_js(JS, calls)
    for r in out[:-1]:
        del r["_values"], r["state"]
    out[-1] = {"ties": out[-1]}
    return out


def _states():
    rng = np.random.default_rng(20261130)
    states = [
        dict(head_dim=8, base=10_000.0, offset_start=1, offset_stop=20_000, interpolate=False),
        dict(head_dim=128, base=10_000.0, offset_start=0, offset_stop=50_000, interpolate=False),
        dict(head_dim=256, base=500_000.0, offset_start=1000, offset_stop=1000 + MAX_SPAN - 1,
             interpolate=True, train_length=8192, target_length=131_072),
        dict(head_dim=2, base=1.5, offset_start=7, offset_stop=7, interpolate=False),
        dict(head_dim=64, base=1e7, offset_start=90_000_000, offset_stop=90_001_000, interpolate=False),
    ]
    for _ in range(8):
        start = int(rng.integers(0, 10**6))
        states.append(dict(
            head_dim=int(2 * rng.integers(1, 65)), base=float(10 ** rng.uniform(1, 7)),
            offset_start=start, offset_stop=start + int(rng.integers(0, 30_000)),
            interpolate=bool(rng.integers(0, 2)), train_length=int(rng.integers(1, 10_000)),
            target_length=int(rng.integers(1, 100_000))))
    for s in states:
        s.setdefault("train_length", 4096)
        s.setdefault("target_length", 16_384)
        s["top"] = 5
    return states


def test_javascript_compute_matches_ropegeo_in_node():
    states = _states()
    results = _node_compute(states)
    ties = results.pop()["ties"]
    assert ties == [{"offset": 11, "similarity": 0.9}, {"offset": 12, "similarity": 0.9}]
    problems = []
    for state, r in zip(states, results):
        assert {k: r[k] for k in state if k != "top"} == {k: v for k, v in state.items() if k != "top"}
        assert not r["clipped"]
        problems += sc.compare_lab(r)
    assert not problems, "\n".join(problems)


def test_javascript_clips_the_range_and_bounds_the_controls():
    states = [dict(head_dim=999, base=-3, offset_start=5, offset_stop=10**12, interpolate=False,
                   train_length=1, target_length=1, top=500)]
    r = _node_compute(states)[0]
    assert r["head_dim"] == kl.MAX_LAB_HEAD_DIM and r["base"] == 10_000
    assert r["clipped"] and r["offset_stop"] - r["offset_start"] + 1 == MAX_SPAN
    assert len(r["top"]) == 20
    assert not sc.compare_lab(r)


# ---------------------------------------------------------------------------------------------
# The widget in a static page (no kernel), in headless Chromium
# ---------------------------------------------------------------------------------------------

_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>kernel lab</title>
<script src="_static/require/require.js"></script>
<script src="_static/widgets-offline.js"></script>
<script src="_static/html-manager/embed-amd.js"></script>
<script type="application/vnd.jupyter.widget-state+json">%s</script>
</head><body><main>
%s
</main></body></html>
"""


def test_lab_in_a_static_page_matches_ropegeo(tmp_path):
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("the Python package playwright is not installed (requirements.txt)")
    if sc.chromium_path() is None:
        _skip_or_fail("Chromium is not installed (.ci/run installs Debian's chromium)")
    if not (VENDOR / "html-manager" / "embed-amd.js").is_file():
        _skip_or_fail("the vendored browser files are missing (make vendor)")
    from ipywidgets.embed import embed_data

    labs = [KernelLab(), KernelLab(head_dim=128, base=500_000, offset_start=10, offset_stop=90_000)]
    data = embed_data(views=labs, drop_defaults=False)
    views = "\n".join(f'<div><script type="application/vnd.jupyter.widget-view+json">{json.dumps(v)}'
                      f"</script></div>" for v in data["view_specs"])
    shutil.copytree(VENDOR, tmp_path / "_static", ignore=shutil.ignore_patterns("mathjax", "mermaid"))
    state = json.dumps(data["manager_state"]).replace("</", "<\\/")
    (tmp_path / "lab.html").write_text(_PAGE % (state, views))
    external: list[str] = []
    with sc.serve(tmp_path) as base, sc.browser() as b:
        ctx = sc.new_context(b, base, external)
        visit = sc.PageVisit(ctx, base)
        try:
            page = visit.open(base + "lab.html")
            assert sc.wait_for_lab(page) == 2, ("the labs were not drawn from the embedded state: "
                                                + "; ".join(visit.console_problems() + visit.failed))
            problems = []
            timings = []
            for i, lab in enumerate(labs):
                first = sc.lab_result(page, i)
                assert {k: first[k] for k in lab.state() if k != "top"} == {
                    k: v for k, v in lab.state().items() if k != "top"}
                problems += sc.compare_lab(first)
                for name, value in sc.LAB_MOVES:
                    if not sc.move_lab(page, i, name, value):
                        problems.append(f"lab {i}: moving {name} to {value} changed nothing")
                    r = sc.lab_result(page, i)
                    timings.append(r["compute_ms"])
                    problems += sc.compare_lab(r)
                assert r["clipped"] and r["offset_stop"] - r["offset_start"] + 1 == MAX_SPAN
            page.screenshot(path=str(tmp_path / "lab.png"), full_page=True)
        finally:
            ctx.close()
    print(f"kernel lab update in the browser: median {np.median(timings):.1f} ms, max {max(timings):.1f} ms")
    assert not problems, "\n".join(problems)
    assert visit.console_problems() == [] and visit.failed == [] and external == []


def test_vendored_anywidget_front_end_is_the_python_packages():
    """The html-manager loads anywidget's front end from _vendor (npm); it must be the same code
    as the Python package's own copy, or the pinned versions have drifted apart."""
    vendored = VENDOR / "anywidget" / "index.js"
    if not vendored.is_file():
        _skip_or_fail("the vendored browser files are missing (make vendor)")
    import anywidget

    own = Path(anywidget.__file__).parent / "nbextension" / "index.js"
    assert vendored.read_bytes() == own.read_bytes(), (
        f"_vendor's anywidget front end differs from anywidget {anywidget.__version__}'s: "
        "set ANYWIDGET_VERSION in the Makefile to the Python package's version")


def test_lab_in_a_jupyter_book_page(tmp_path):
    """The demo notebook built by Jupyter Book with the book's own configuration: myst-nb embeds
    the lab's state, and the page shows a working lab with no kernel."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("the Python package playwright is not installed (requirements.txt)")
    if sc.chromium_path() is None:
        _skip_or_fail("Chromium is not installed (.ci/run installs Debian's chromium)")
    if not (VENDOR / "html-manager" / "embed-amd.js").is_file():
        _skip_or_fail("the vendored browser files are missing (make vendor)")
    config = (ROOT / "_config.yml").read_text()
    site_dir = ROOT / "scripts" / "site"
    for old, new in [('html_static_path: ["_vendor/site", "scripts/site/static"]',
                      f'html_static_path: ["{VENDOR}", "{site_dir / "static"}"]'),
                     ("ropegeo_site: scripts/site", f"ropegeo_site: {site_dir}"),
                     ('favicon: "scripts/site/static/favicon.svg"', f'favicon: "{site_dir / "static" / "favicon.svg"}"')]:
        assert old in config
        config = config.replace(old, new)
    (tmp_path / "_config.yml").write_text(config)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: lab\n")
    shutil.copy(ROOT / "references.bib", tmp_path)
    shutil.copy(ROOT / "tests" / "fixtures" / "kernel_lab_demo.ipynb", tmp_path / "lab.ipynb")
    jb = Path(sys.executable).parent / "jupyter-book"  # the one installed beside this Python
    run = subprocess.run([str(jb), "build", "-W", "-n", "--keep-going", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    site = tmp_path / "_build" / "html"
    assert sc.scan_site(site)[0] == []
    external: list[str] = []
    with sc.serve(site) as base, sc.browser() as b:
        ctx = sc.new_context(b, base, external)
        visit = sc.PageVisit(ctx, base)
        try:
            page = visit.open(base + "lab.html")
            out = sc.settle_and_check(page)
            assert out["info"]["labs"] == 1 and out["info"]["math"] >= 2
            # drawn by widgets-offline.js over its build-time preview, without the html-manager
            assert "ropegeo-lab-preview" in (site / "lab.html").read_text()
            assert page.locator(".ropegeo-lab-preview").count() == 0
            assert not any("embed-amd" in u for u in page.evaluate(
                "performance.getEntriesByType('resource').map((r) => r.name)"))
            problems = out["problems"] + sc.compare_lab(sc.lab_result(page))
            for name, value in sc.LAB_MOVES[:3]:
                assert sc.move_lab(page, 0, name, value)
                problems += sc.compare_lab(sc.lab_result(page))
        finally:
            ctx.close()
    assert not problems, "\n".join(problems)
    assert visit.console_problems() == [] and visit.failed == [] and external == []


@pytest.mark.parametrize("kwargs, name", [
    (dict(target_length=0, interpolate=True), "target_length"),
    (dict(head_dim=10**12), "head_dim"),
    (dict(offset_stop=10**12), "offset_stop"),
    (dict(offset_start=0, offset_stop=300_000), "searches at most"),
    (dict(interpolate="no"), "interpolate"),
    (dict(top=0), "top"),
])
def test_reference_keeps_the_labs_limits(kwargs, name):
    args = dict(head_dim=8, base=1e4, offset_start=1, offset_stop=100)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        reference(args.pop("head_dim"), args.pop("base"), args.pop("offset_start"), args.pop("offset_stop"), **args)


def test_readout_lists_one_offset_per_return_and_caps_interpolation():
    """Chapter 3's width-8 bank: ropegeo's near-collisions hold two neighbours of one peak (6,283
    and 6,277; 18,850 and 18,849), the lab's returns one offset each; interpolation to a target
    within training leaves s = 1 (as the frequency lab does); a last offset below the first is
    raised to it and said so."""
    from ropegeo.book.widgets.kernel_lab import distinct_returns

    ref = reference(8, 10_000.0, 1, 20_000, top=5)
    near = [o for o, _ in ref["top"]]
    assert {6283, 6277} <= set(near) and {18_850, 18_849} <= set(near)
    returns = [o for o, _ in ref["returns"]]
    assert all(abs(a - b) > ref["return_width"] for i, a in enumerate(returns) for b in returns[i + 1:])
    assert returns[:3] == [6283, 12_566, 18_850]
    # an independent check of the window rule: each return beats every offset within the window
    theta = np.array([1e4 ** (-2 * i / 8) for i in range(4)])
    offs = np.arange(1, 20_001)
    k = np.cos(np.outer(offs, theta)).mean(axis=1)
    for o in returns:
        j = o - 1
        lo, hi = max(0, j - ref["return_width"]), j + ref["return_width"] + 1
        assert k[j] >= k[lo:hi].max() - 1e-12
    assert distinct_returns([0.1, 0.9, 0.8, 0.2, 0.7, 0.1], 10, 3, 1) == [(11, 0.9), (14, 0.7)]
    assert distinct_returns([0.5, 0.5, 0.1], 0, 3, 1) == [(0, 0.5)]  # a tie: the smaller offset, once
    base = dict(head_dim=8, base=10_000.0, offset_start=1, offset_stop=20_000, top=5)
    capped, raised = call_js(JS, [("compute", [dict(base, interpolate=True, train_length=100_000_000, target_length=1)]),
                                  ("compute", [dict(base, interpolate=False, offset_start=20_000, offset_stop=1,
                                                    train_length=4096, target_length=16_384)])])
    assert capped["scale"] == 1.0 == reference(8, 1e4, 1, 20_000, interpolate=True, train_length=10**8, target_length=1)["scale"]
    assert raised["raised"] and raised["offset_stop"] == raised["offset_start"] == 20_000
    assert not sc.compare_lab(capped) and not sc.compare_lab(raised)
