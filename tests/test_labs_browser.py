"""Every lab in a static page, as the book serves it: rendered from embedded widget state by the
vendored html-manager in headless Chromium, with no kernel and every request to another host
blocked. Each lab's controls are moved as a reader would and its numbers checked against ropegeo
after every move; the labs must fit a 360 px screen with every control labelled and reachable
from the keyboard, and a keyboard press must move a slider.

Needs ``make vendor``, Chromium and Playwright; skips without them unless ``ROPEGEO_REQUIRE_SITE=1``
(``make test-site``), where it must run.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import sitecheck as sc
from ropegeo.widgets.audit_lab import AuditLab, audit_lab
from ropegeo.widgets.clock_lab import ClockLab
from ropegeo.widgets.frequency_lab import frequency_lab
from ropegeo.widgets.kernel_lab import KernelLab
from ropegeo.widgets.scaling_lab import ScalingLab
from ropegeo.widgets.wiring_lab import WiringLab

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "_vendor" / "site"
REQUIRE = os.environ.get("ROPEGEO_REQUIRE_SITE") == "1"
KINDS = ["ropegeo-clock-lab", "ropegeo-frequency-lab", "ropegeo-kernel-lab", "ropegeo-scaling-lab",
         "ropegeo-wiring-lab", "ropegeo-audit-lab", "ropegeo-audit-lab"]


def _skip_or_fail(reason):
    if REQUIRE:
        pytest.fail(reason + " (ROPEGEO_REQUIRE_SITE=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def page_of_labs(tmp_path_factory):
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("the Python package playwright is not installed (requirements.txt)")
    if sc.chromium_path() is None:
        _skip_or_fail("Chromium is not installed (Debian's chromium)")
    if not (VENDOR / "html-manager" / "embed-amd.js").is_file():
        _skip_or_fail("the vendored browser files are missing (make vendor)")
    labs = [ClockLab(), frequency_lab(), KernelLab(), ScalingLab(rule="yarn", factor=8.0, head_dim=128), WiringLab(),
            audit_lab(head_dim=16, base=10_000.0, train_length=64, target_length=512, rule="none"), AuditLab()]
    tmp = tmp_path_factory.mktemp("labs")
    sc.write_lab_page(tmp, labs, VENDOR)
    external: list[str] = []
    with sc.serve(tmp) as base, sc.browser() as b:
        ctx = sc.new_context(b, base, external)
        visit = sc.PageVisit(ctx, base)
        try:
            page = visit.open(base + "labs.html")
            assert sc.wait_for_labs(page) == len(labs), "; ".join(visit.console_problems() + visit.failed)
            yield {"page": page, "visit": visit, "external": external, "tmp": tmp}
        finally:
            ctx.close()


def test_every_lab_renders_from_embedded_state_and_matches_ropegeo(page_of_labs):
    page = page_of_labs["page"]
    assert sc.lab_kinds(page) == KINDS
    problems, times = sc.drive_labs(page)
    page.screenshot(path=str(page_of_labs["tmp"] / "labs.png"), full_page=True)
    print(f"lab updates in the browser: median {np.median(times):.1f} ms, max {max(times):.1f} ms over {len(times)}")
    assert not problems, "\n".join(problems)
    visit = page_of_labs["visit"]
    assert visit.console_problems() == [] and visit.failed == [] and page_of_labs["external"] == []


def test_labs_fit_a_narrow_screen_with_labelled_keyboard_controls(page_of_labs):
    page = page_of_labs["page"]
    for width in (360, 1280):
        page.set_viewport_size({"width": width, "height": 800})
        page.wait_for_timeout(200)
        assert sc.lab_layout_problems(page) == [], f"at {width} px"
    page.set_viewport_size({"width": 360, "height": 800})
    page.screenshot(path=str(page_of_labs["tmp"] / "labs-360.png"), full_page=True)
    # the keyboard: focus a slider of each kind of lab and press the arrow key
    for i, kind in enumerate(sc.lab_kinds(page)):
        before = sc.lab_data(page, i)
        control = page.locator(".ropegeo-lab").nth(i).locator('input[type="range"]').first
        control.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        after = sc.lab_data(page, i)
        assert after["state"] != before["state"], f"{kind}: the arrow key moved nothing"
    page.set_viewport_size({"width": 1280, "height": 900})
