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
from ropegeo.book.widgets.angle_lab import AngleLab
from ropegeo.book.widgets.attention_lab import AttentionLab
from ropegeo.book.widgets.audit_lab import AuditLab, audit_lab
from ropegeo.book.widgets.axes_lab import AxesLab
from ropegeo.book.widgets.clock_lab import ClockLab
from ropegeo.book.widgets.frequency_lab import frequency_lab
from ropegeo.book.widgets.kernel_lab import KernelLab
from ropegeo.book.widgets.pipeline_lab import PipelineLab
from ropegeo.book.widgets.scaling_lab import ScalingLab
from ropegeo.book.widgets.wiring_lab import WiringLab

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "_vendor" / "site"
REQUIRE = os.environ.get("ROPEGEO_REQUIRE_SITE") == "1"
KINDS = ["ropegeo-clock-lab", "ropegeo-frequency-lab", "ropegeo-kernel-lab", "ropegeo-axes-lab", "ropegeo-scaling-lab",
         "ropegeo-wiring-lab", "ropegeo-audit-lab", "ropegeo-audit-lab", "ropegeo-attention-lab", "ropegeo-angle-lab",
         "ropegeo-pipeline-lab"]


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
    labs = [ClockLab(), frequency_lab(), KernelLab(), AxesLab(), ScalingLab(rule="yarn", factor=8.0, head_dim=128), WiringLab(),
            audit_lab(head_dim=16, base=10_000.0, train_length=64, target_length=512, rule="none"), AuditLab(),
            AttentionLab(), AngleLab(), PipelineLab()]
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
    page.wait_for_timeout(300)
    assert sc.chart_problems(page) == [], "at 360 px"
    page.screenshot(path=str(page_of_labs["tmp"] / "labs-360.png"), full_page=True)
    # the keyboard: focus a slider of each kind of lab and press the arrow key
    for i, kind in enumerate(sc.lab_kinds(page)):
        before = sc.lab_data(page, i)
        # a slider; a lab whose sliders all rest (the audit lab on a shipped model) by its first select
        lab = page.locator(".ropegeo-lab").nth(i)
        slider = lab.locator('input[type="range"]:enabled')
        control, key = (slider.first, "ArrowRight") if slider.count() else (lab.locator("select:enabled").first, "ArrowDown")
        control.focus()
        page.keyboard.press(key)
        page.keyboard.press(key)
        after = sc.lab_data(page, i)
        assert after["state"] != before["state"], f"{kind}: the arrow key moved nothing"
    page.set_viewport_size({"width": 1280, "height": 900})


def _index(page, kind, nth=0):
    return [k for k, x in enumerate(sc.lab_kinds(page)) if x == kind][nth]


@pytest.mark.parametrize("kind", sorted(sc.DISABLED_STATES))
def test_controls_that_do_nothing_are_disabled_with_a_reason(page_of_labs, kind):
    page = page_of_labs["page"]
    i = _index(page, kind, nth=-1)
    for moves, off, on in sc.DISABLED_STATES[kind]:
        for name, value in moves:
            sc.move_control(page, i, name, value)
        for name in off:
            st = sc.control_state(page, i, name)
            assert st["disabled"] and st["reason"].strip(), f"{kind} after {moves}: {name} does nothing but is {st}"
        for name in on:
            st = sc.control_state(page, i, name)
            assert not st["disabled"], f"{kind} after {moves}: {name} acts but is disabled ({st['reason']})"


def test_audit_lab_offers_only_the_layer_kinds_a_model_has(page_of_labs):
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-audit-lab", nth=-1)
    sc.move_control(page, i, "model", "gemma-3-1b-it")
    kinds = sc.lab_data(page, i)["kinds"]
    offered = page.locator(".ropegeo-lab").nth(i).locator('[data-control="layer_type"] option:enabled').evaluate_all(
        "os => os.map((o) => o.value)")
    assert offered == ["default", *kinds]


def test_scaling_lab_every_slider_position_draws_ropegeos_numbers(page_of_labs):
    """The whole of YaRN's beta_slow slider and Llama 3's low slider (crossed values are held below
    the other end), and factor 1 where every rule coincides: a drawn view, no refusal, no text
    overprinted, and ropegeo's numbers."""
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-scaling-lab")
    problems = []
    sweeps = [("rule", "yarn", "beta_fast", 8, "beta_slow", [0.25, 4, 7.75, 8, 20, 64, 128]),
              ("rule", "llama3", "high_freq_factor", 4, "low_freq_factor", [0.25, 2, 3.75, 4, 10, 64])]
    for _, rule, fixed, fixed_value, name, values in sweeps:
        sc.move_control(page, i, "rule", rule)
        sc.move_control(page, i, fixed, fixed_value)
        for value in values:
            sc.move_control(page, i, name, value)
            r = sc.lab_data(page, i)
            assert r["refused"] is None and r["selected"] is not None
            assert r["state"][name] <= r["state"][fixed] - 0.25
            problems += sc._problems(sc._check_scaling, r) + sc.chart_problems(page)
        # the other end pushed below this one: this one follows it down
        sc.move_control(page, i, name, fixed_value - 0.25)
        sc.move_control(page, i, fixed, 1)
        r = sc.lab_data(page, i)
        assert r["state"][fixed] == 1 and r["state"][name] == 0.75, r["state"]
    for factor in (1, 1.5, 8, 64):
        sc.move_control(page, i, "factor", factor)
        problems += sc._problems(sc._check_scaling, sc.lab_data(page, i)) + sc.chart_problems(page)
    assert not list(dict.fromkeys(problems)), "\n".join(dict.fromkeys(problems))


def test_scaling_lab_says_why_its_novelty_chart_is_empty(page_of_labs):
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-scaling-lab")
    for name, value in [("rule", "yarn"), ("factor", 8), ("head_dim", 128), ("base", 4), ("train_length", 4096)]:
        sc.move_control(page, i, name, value)
    r = sc.lab_data(page, i)
    chart = page.locator(".ropegeo-lab").nth(i).locator('svg[aria-label="per-pair phase novelty at the target length"]')
    if r["selected"]["novel_pairs"] == 0:
        assert "none: every pair stays on phases training showed" in chart.inner_html()
    sc.move_control(page, i, "rule", "ntk")
    assert sc.lab_data(page, i)["selected"]["novel_pairs"] > 0
    assert "none:" not in chart.inner_html() and chart.locator("rect.rl-bar").count() > 0


def test_frequency_lab_draws_both_kernels_alike(page_of_labs):
    """At float64 the dtype's curve is the exact one (same offsets, same drawing); at head width 4
    the curve stays in its frame."""
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-frequency-lab")
    lab = page.locator(".ropegeo-lab").nth(i)
    for name, value in [("dtype", "float64"), ("head_dim", 64), ("exact:target_length", 65536)]:
        sc.move_control(page, i, name, value)
    exact, dtype = (lab.locator(f"path.{c}").first.get_attribute("d") for c in ("rl-exact", "rl-dtype"))
    assert exact == dtype
    sc.move_control(page, i, "dtype", "bfloat16")
    assert lab.locator("path.rl-exact").first.get_attribute("d") != lab.locator("path.rl-dtype").first.get_attribute("d")
    problems = []
    for d in (4, 6, 8):
        sc.move_control(page, i, "head_dim", d)
        problems += sc.chart_problems(page)
    assert not problems, "\n".join(problems)


def test_kernel_lab_keeps_saying_its_range_is_at_the_limit(page_of_labs):
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-kernel-lab")
    lab = page.locator(".ropegeo-lab").nth(i)
    sc.move_control(page, i, "offset_start", 0)
    sc.move_control(page, i, "offset_stop", 20_000)
    assert sc.chart_problems(page) == []  # the last x tick, 20,000, is drawn whole
    field = lab.locator('[data-control="offset_stop"]')
    field.focus()
    field.fill("5000000")
    field.dispatch_event("change")
    assert "range clipped to 200,000 offsets" in lab.inner_text()
    assert field.input_value() == "199999"  # the focused field shows the value the lab uses
    sc.move_control(page, i, "head_dim", 32)  # another redraw
    assert "range at its limit of 200,000 offsets" in lab.inner_text()


_PNG_JS = r"""
async (i) => {
  // the heatmap's image (a blob URL in the browser) as a data URI
  const href = document.querySelectorAll('.ropegeo-lab')[i].querySelector('image.rl-heat').getAttribute('href');
  const bytes = new Uint8Array(await (await fetch(href)).arrayBuffer());
  let bin = '';
  for (let k = 0; k < bytes.length; k += 8192) bin += String.fromCharCode.apply(null, bytes.subarray(k, k + 8192));
  return 'data:image/png;base64,' + btoa(bin);
}
"""


def test_axes_lab_marks_its_near_returns_within_the_update_budget(page_of_labs):
    """At the largest grid (129 x 129 offsets) and head (128 pairs, every one on both axes in the
    mixed split): each near-return drawn black, one dot per listed offset, ropegeo's numbers; the
    update (computation and drawing) is printed as a reader drags the threshold."""
    from test_axes_lab import assert_heatmap, assert_matches
    from ropegeo.book.widgets.axes_lab import reference

    page = page_of_labs["page"]
    i = _index(page, "ropegeo-axes-lab")
    lab = page.locator(".ropegeo-lab").nth(i)
    for name, value in [("split", "mixed"), ("head_dim", 256), ("base", 4.0), ("grid", 64), ("top", 20)]:
        sc.move_control(page, i, name, value)
    times, problems = [], []
    for threshold in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.9, 0.8, 0.7):
        sc.move_control(page, i, "threshold", threshold)
        r = sc.lab_data(page, i)
        times.append(r["update_ms"])
        assert_matches(r, reference(r["state"]))
        assert_heatmap(page.evaluate(_PNG_JS, i), reference(r["state"]), threshold)
        assert lab.locator("svg.rl-chart circle.rl-mark").count() == len(r["top"]) == 20
        problems += sc.chart_problems(page)
    # the x share: disabled with its reason outside the share split, its pairs counted beside it
    sc.move_control(page, i, "split", "share")
    sc.move_control(page, i, "x_share", 0.25)
    assert sc.control_state(page, i, "x_share")["reason"] == "32 of 128"
    print(f"2D kernel lab at 129 x 129 x 128 pairs: median update {np.median(times):.1f} ms, max {max(times):.1f} ms")
    assert not problems, "\n".join(problems)  # the update budget is bench/labs.py's (a shared machine's times vary)


#: A reader's path through the audit lab's shipped models: layer kinds (Gemma 3, gpt-oss), windows
#: (Mistral, the sliding layers), DeepSeek-V3's extra logit scale, a partial rotary width (GPT-J).
AUDIT_MOVES = [("model", "gemma-3-1b-it"), ("layer_type", "sliding_attention"), ("target_length", 8192),
               ("model", "gpt-oss-20b"), ("dtype", "float16"), ("model", "deepseek-v3"), ("dtype", "config"),
               ("model", "mistral-7b"), ("target_length", 32768), ("model", "gpt-j-6b")]


def test_audit_lab_reads_layer_kinds_windows_and_the_new_models(page_of_labs):
    from test_audit_lab import assert_matches
    from ropegeo.book.widgets.audit_lab import reference

    page = page_of_labs["page"]
    i = _index(page, "ropegeo-audit-lab", nth=-1)  # AuditLab(): a shipped model
    lab = page.locator(".ropegeo-lab").nth(i)
    for name, value in AUDIT_MOVES:
        assert sc.move_control(page, i, name, value), f"moving {name} to {value} changed nothing"
        r = sc.lab_data(page, i)
        assert_matches(r, reference(r["state"]), r["state"])
        text = lab.inner_text()
        # the readout says what the audit found, with its thresholds: search range and why, each set's verdict
        assert r["audit"]["search_note"] in text
        assert ("Gate B passes" if r["audit"]["gate_b"]["passed"] else "Gate B FAILS") in text
        assert all(s["text"] in text for s in r["audit"]["gate_b"]["sets"])
        assert all(n in text for n in r["audit"]["gate_b"]["notes"])
        if r["state"]["model"] == "deepseek-v3":
            assert "1.87385 (applied to the softmax scale)" in text
    # a model with one kind of layer: the kind falls back to the record's reading, on the page too
    r = sc.lab_data(page, i)
    assert r["state"]["layer_type"] == "default" and r["kinds"] == []
    assert lab.locator('[data-control="layer_type"]').input_value() == "default"
    assert "1.87385 (applied to the softmax scale)" not in lab.inner_text()


_MOCK_JS = r"""
async ([esm, state, changes]) => {
  // a stand-in for the Jupyter widget model: what Python sets arrives as change events
  const listeners = {};
  const data = { ...state };
  const saved = [];
  const model = {
    get: (k) => data[k],
    set: (k, v) => { data[k] = v; },
    on: (ev, f) => { (listeners[ev] = listeners[ev] || []).push(f); },
    off: (ev, f) => { listeners[ev] = (listeners[ev] || []).filter((g) => g !== f); },
    save_changes: () => { saved.push({ ...data }); },
  };
  const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
  const mod = await import(url);
  const el = document.createElement("div");
  document.body.appendChild(el);
  mod.default.render({ model, el });
  const root = el.querySelector(".ropegeo-lab");
  const out = [JSON.parse(root.getAttribute("data-result")).state];
  for (const [k, v] of Object.entries(changes)) {   // "Python" changes one trait
    data[k] = v;
    (listeners[`change:${k}`] || []).forEach((f) => f());
    out.push(JSON.parse(root.getAttribute("data-result")).state);
  }
  // a reader moves the first slider: the model is written and saved for Python
  const input = root.querySelector('input[type="range"]');
  input.value = String(Number(input.min) + Number(input.step || 1));
  input.dispatchEvent(new Event("input", { bubbles: true }));
  el.remove();
  return { states: out, saved };
}
"""


@pytest.mark.parametrize("lab, changes", [
    (ClockLab(), {"m": 50, "pairing": "half"}),
    (frequency_lab(), {"dtype": "float16", "target_length": 4096}),
    (KernelLab(), {"head_dim": 32}),
    (AxesLab(), {"split": "mixed", "grid": 12}),
    (ScalingLab(), {"rule": "llama3", "factor": 4.0}),
    (WiringLab(), {"policy": "kv-cache", "cache_offset": 20}),
    (AuditLab(), {"model": "mistral-7b", "target_length": 65536}),
    (AuditLab(), {"model": "gpt-oss-20b", "layer_type": "sliding_attention", "dtype": "bfloat16"}),
    (AttentionLab(), {"content": "varied", "rule": "yarn", "dtype": "bfloat16"}),
    (ClockLab(), {"speed": 20}),
    (AngleLab(), {"rule": "linear", "dtype": "bfloat16"}),
    (PipelineLab(), {"worst": True, "max_position": 4096}),
])
def test_python_sets_the_state_and_reads_the_readers_moves(page_of_labs, lab, changes):
    """As in Jupyter: a trait set from Python redraws the lab; a control moved by the reader is
    written to the model and saved (synced to Python)."""
    state = {k: v for k, v in lab.get_state().items() if not k.startswith("_") or k == "_esm"}
    got = page_of_labs["page"].evaluate(_MOCK_JS, [lab._esm, state, changes])
    for k, v in changes.items():
        assert got["states"][-1][k] == v
    assert len(got["saved"]) == 1 and got["saved"][0] != state


def test_clock_animation_plays_and_pauses_from_the_keyboard(page_of_labs):
    """The clock never plays by itself; its play button (Enter) advances both positions over time,
    the score staying ropegeo's; after pause nothing moves and the numbers are ropegeo's."""
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-clock-lab")
    lab = page.locator(".ropegeo-lab").nth(i)
    sc.move_control(page, i, "m", 100)
    sc.move_control(page, i, "n", 103)
    sc.move_control(page, i, "speed", 32)
    start = sc.lab_data(page, i)
    page.wait_for_timeout(400)
    assert sc.lab_data(page, i)["state"] == start["state"], "the clock played by itself"
    button = lab.locator('[data-control="play"]')
    assert button.inner_text() == "play" and button.get_attribute("aria-pressed") == "false"
    button.focus()
    page.keyboard.press("Enter")
    assert button.inner_text() == "pause" and button.get_attribute("aria-pressed") == "true"
    page.wait_for_timeout(700)
    page.keyboard.press("Enter")  # pause
    assert button.inner_text() == "play"
    paused = sc.lab_data(page, i)
    st = paused["state"]
    assert st["m"] > 100 and st["n"] - st["m"] == 3, st  # moved on, offset kept
    assert "paused" in lab.inner_text()
    assert sc._problems(sc._check_clock, paused) == []
    assert abs(paused["score"] - start["score"]) < 1e-9  # both shifted: the same score
    page.wait_for_timeout(300)
    assert sc.lab_data(page, i)["state"] == st, "the clock moved after pause"


def test_clock_with_reduced_motion_steps_only_when_pressed(page_of_labs):
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-clock-lab")
    page.emulate_media(reduced_motion="reduce")
    try:
        sc.move_control(page, i, "m", 10)
        sc.move_control(page, i, "n", 20)
        sc.move_control(page, i, "speed", 5)
        assert sc.move_control(page, i, "play", None)
        r = sc.lab_data(page, i)
        assert (r["state"]["m"], r["state"]["n"]) == (15, 25)
        page.wait_for_timeout(500)
        assert sc.lab_data(page, i)["state"] == r["state"]  # no animation under reduced motion
        assert sc._problems(sc._check_clock, r) == []
    finally:
        page.emulate_media(reduced_motion="no-preference")


def test_attention_lab_every_option_draws_ropegeos_numbers(page_of_labs):
    """Every content, encoding, precision and rule, at the shortest and longest spans: a heatmap
    (never a blank lab), no text cut or overprinted, and ropegeo's numbers; the default marks the
    return near 2 pi 1000 of chapter 3's width-8 bank."""
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-attention-lab")
    lab = page.locator(".ropegeo-lab").nth(i)
    for name, value in [("content", "slow"), ("encoding", "rope"), ("head_dim", 8), ("base", 4), ("exact:span", 8192),
                        ("rule", "none"), ("dtype", "float64")]:
        sc.move_control(page, i, name, value)
    assert sc.lab_data(page, i)["returns"][0]["offset"] == 6283
    assert lab.locator("svg.rl-chart line.rl-return").count() == 3
    problems = []
    for name, values in [("content", ["equal", "fast", "varied", "slow"]), ("dtype", ["float32", "float16", "bfloat16"]),
                         ("rule", ["linear", "ntk", "yarn", "llama3"]), ("exact:span", [16, 16384]), ("head_dim", [4, 128]),
                         ("encoding", ["none", "rope"])]:
        for value in values:
            sc.move_control(page, i, name, value)
            r = sc.lab_data(page, i)
            problems += [f"{name}={value}: {p}" for p in sc._problems(sc._check_attention, r)]
            problems += [p for p in sc.chart_problems(page) if p.startswith(f"lab #{i}:")]
            if lab.locator("image.rl-heat").count() != 1:
                problems.append(f"{name}={value}: no heatmap drawn")
    assert not problems, "\n".join(problems)


def test_clock_and_attention_selects_fit_a_column_narrower_than_360(page_of_labs):
    """On the book's pages at 360 px the text column is narrower than the screen: at a 300 px
    viewport the clock's pairing and every select of the attention lab still show their option whole,
    and the clock reads "1 token"."""
    page = page_of_labs["page"]
    mine = [_index(page, "ropegeo-clock-lab"), _index(page, "ropegeo-attention-lab")]
    page.set_viewport_size({"width": 300, "height": 800})
    try:
        page.wait_for_timeout(300)
        problems = []
        for pairing in ("interleaved", "half"):
            sc.move_control(page, mine[0], "pairing", pairing)
            for content in ("equal", "slow", "fast", "varied"):
                sc.move_control(page, mine[1], "content", content)
                problems += [p for p in sc.chart_problems(page) if p.startswith(tuple(f"lab #{i}:" for i in mine))]
        assert not list(dict.fromkeys(problems)), "\n".join(dict.fromkeys(problems))
        sc.move_control(page, mine[0], "m", 10)
        sc.move_control(page, mine[0], "n", 11)
        assert "offset n − m = 1 token\n" in page.locator(".ropegeo-lab").nth(mine[0]).inner_text() + "\n"
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


_IMAGES_JS = r"""
async (i) => {
  const root = document.querySelectorAll('.ropegeo-lab')[i];
  const hrefs = [...root.querySelectorAll('svg.rl-chart image')].map((e) => e.getAttribute('href'));
  const sizes = await Promise.all(hrefs.map((src) => new Promise((ok) => {
    const img = new Image();
    img.onload = () => ok([img.naturalWidth, img.naturalHeight]);
    img.onerror = () => ok(null);
    img.src = src;
  })));
  return { hrefs, sizes };
}
"""


def test_angle_lab_draws_both_maps_and_every_rule_and_dtype_changes_them(page_of_labs):
    """Both heatmaps are images the browser decodes (240 columns, one row per pair); plain RoPE in
    float64 changes no cell, and every rule and the bfloat16 table redraw the map of changes."""
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-angle-lab")
    for name, value in [("rule", "none"), ("dtype", "float64"), ("head_dim", 64), ("factor", 4)]:
        sc.move_control(page, i, name, value)
    plain = page.evaluate(_IMAGES_JS, i)
    assert plain["sizes"] == [[240, 32], [240, 32]]
    assert sc.lab_data(page, i)["changed_cells"] == 0
    for name, value in [("dtype", "bfloat16"), ("rule", "linear"), ("dtype", "float64"), ("rule", "ntk"),
                        ("rule", "yarn"), ("rule", "llama3")]:
        sc.move_control(page, i, name, value)
        now = page.evaluate(_IMAGES_JS, i)
        r = sc.lab_data(page, i)
        assert now["sizes"] == plain["sizes"] and now["hrefs"][1] != plain["hrefs"][1], (name, value)
        assert r["changed_cells"] > 0, (name, value)


def test_pipeline_lab_pair_slider_follows_the_head_width(page_of_labs):
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-pipeline-lab")
    sc.move_control(page, i, "worst", False)
    slider = page.locator(".ropegeo-lab").nth(i).locator('[data-control="pair"]')
    for d, top in [(256, 127), (16, 7), (64, 31)]:
        sc.move_control(page, i, "head_dim", d)
        assert slider.get_attribute("max") == str(top)
        sc.move_control(page, i, "pair", top + 50)  # past the end: held at the last pair
        r = sc.lab_data(page, i)
        assert r["state"]["pair"] == top and slider.input_value() == str(top)
        sc._check_pipeline(r)


def test_clock_captions_whole_and_clocks_beside_the_curve_on_a_phone(page_of_labs):
    """At head dim 16 and base 50,000 (theta down to 10^-4) every pair's caption is whole, and at
    360 px the eight clocks and the score curve fit one screen (800 px) together."""
    page = page_of_labs["page"]
    i = _index(page, "ropegeo-clock-lab")
    lab = page.locator(".ropegeo-lab").nth(i)
    sc.move_control(page, i, "head_dim", 16)
    sc.move_control(page, i, "exact:base", 50_000)
    assert sc.lab_data(page, i)["state"]["base"] == 50_000
    page.set_viewport_size({"width": 360, "height": 800})
    try:
        page.wait_for_timeout(300)
        assert [p for p in sc.chart_problems(page) if p.startswith(f"lab #{i}:")] == []
        top = lab.locator("svg.rl-clock").first.bounding_box()["y"]
        curve = lab.locator('svg[aria-label="the score as a function of the offset"]').bounding_box()
        assert lab.locator("svg.rl-clock").count() == 8
        assert curve["y"] + curve["height"] - top <= 800, (top, curve)
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})
