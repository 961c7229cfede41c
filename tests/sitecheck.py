"""Checks of the built book: external references (static scan) and pages in headless Chromium.

Used by ``tests/test_site.py`` (the book in ``_build/html``) and ``tests/test_kernel_lab.py``
(a small page holding the kernel lab). Nothing here reaches beyond loopback: the pages are served
by a local HTTP server, Chromium runs with its background networking off, and every request to
another host is aborted and reported.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

# ---------------------------------------------------------------------------------------------
# Static scan: references to anything outside the site
# ---------------------------------------------------------------------------------------------

#: External URLs that may appear in the built HTML, each with the reason it is harmless.
ALLOWED_EXTERNAL = {
    "https://unpkg.com/thebe@0.8.2/lib/index.js": (
        "sphinx-thebe's JS constant: thebe is fetched only when the reader clicks the 'Live Code' "
        "launch button, which connects the page to a remote Binder kernel and so needs the network "
        "anyway; nothing is loaded at page load (the browser test aborts and reports any request "
        "to another host)"
    ),
}

# link rel values that navigate rather than load a resource
_NAV_RELS = {"canonical", "alternate", "next", "prev", "search", "index", "author", "license",
             "help", "bookmark", "external", "nofollow", "noopener", "noreferrer", "top", "up",
             "first", "last", "contents", "start", "glossary", "copyright", "chapter", "section",
             "appendix", "subsection", "me"}
_LOADING_ATTRS = {  # tag -> attributes whose URL the browser loads
    "script": ("src",), "img": ("src", "srcset"), "source": ("src", "srcset"),
    "iframe": ("src",), "video": ("src", "poster"), "audio": ("src",), "track": ("src",),
    "embed": ("src",), "object": ("data",), "input": ("src",), "image": ("href", "xlink:href"),
    "use": ("href", "xlink:href"),
}
_CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")\s]+)\1\s*\)|@import\s+(['"])([^'"]+)\3""", re.I)
# in inline scripts: ES module imports and string literals naming a script, style or font file
_JS_IMPORT = re.compile(r"""(?:\bimport\s*(?:[\w*{}\s,]+\s*from\s*)?|\bimport\s*\(\s*|importScripts\s*\(\s*)(['"`])([^'"`]+)\1""")
_JS_ASSET = re.compile(
    r"""(['"`])((?:https?:)?//[^'"`\s]+?\.(?:m?js|css|woff2?|ttf|otf|eot)(?:[?#][^'"`\s]*)?)\1""", re.I)
_NON_JS_TYPES = ("json", "template", "text/x-", "math/tex", "text/html", "text/plain")


def is_external(url: str) -> bool:
    """True for a URL that leaves the site: an http(s)/ftp/ws scheme or a protocol-relative URL."""
    u = url.strip().lower()
    return u.startswith(("http://", "https://", "//", "ftp://", "ws://", "wss://"))


def _srcset_urls(value: str) -> list[str]:
    return [part.strip().split()[0] for part in value.split(",") if part.strip()]


def css_urls(text: str) -> list[str]:
    """Every ``url(...)`` and ``@import`` target in a piece of CSS."""
    return [m.group(2) or m.group(4) for m in _CSS_URL.finditer(text)]


def js_urls(text: str) -> list[str]:
    """Module imports and script/style/font URL literals in an inline script."""
    found = [m.group(2) for m in _JS_IMPORT.finditer(text)]
    found += [m.group(2) for m in _JS_ASSET.finditer(text)]
    return list(dict.fromkeys(found))


class _RefParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str]] = []  # (what, url)
        self.stylesheets: list[str] = []
        self.ids: set[str] = set()
        self._in: str | None = None
        self._script_type = ""
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = {k.lower(): (v or "") for k, v in attrs}
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        if a.get("style"):
            self.refs += [(f"<{tag} style>", u) for u in css_urls(a["style"])]
        if tag == "link" and a.get("href"):
            rels = set(a.get("rel", "").lower().split())
            if not rels or not rels <= _NAV_RELS:
                self.refs.append((f"<link rel={a.get('rel', '')}>", a["href"]))
                if "stylesheet" in rels:
                    self.stylesheets.append(a["href"])
        for attr in _LOADING_ATTRS.get(tag, ()):
            if a.get(attr):
                urls = _srcset_urls(a[attr]) if attr == "srcset" else [a[attr]]
                self.refs += [(f"<{tag} {attr}>", u) for u in urls]
        if tag in ("script", "style"):
            self._in, self._script_type, self._buf = tag, a.get("type", "").lower(), []

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in ("script", "style"):
            self.handle_endtag(tag)

    def handle_data(self, data):
        if self._in:
            self._buf.append(data)

    def handle_endtag(self, tag):
        if self._in and tag == self._in:
            text = "".join(self._buf)
            if tag == "style":
                self.refs += [("<style>", u) for u in css_urls(text)]
            elif not any(t in self._script_type for t in _NON_JS_TYPES):
                self.refs += [("<script> (inline)", u) for u in js_urls(text)]
            self._in = None


def parse_html(text: str) -> _RefParser:
    p = _RefParser()
    p.feed(text)
    p.close()
    return p


def external_refs_in_html(text: str) -> list[tuple[str, str]]:
    """(where, url) for every reference in an HTML text that the browser would load from outside."""
    return [(w, u) for w, u in parse_html(text).refs if is_external(u)]


def scan_site(site: Path, allowed=ALLOWED_EXTERNAL) -> tuple[list[str], int]:
    """Scan every built page and every stylesheet it links for external loads.

    Returns ``(problems, pages_scanned)``; a problem names the file, where, and the URL.
    """
    site = Path(site)
    problems: list[str] = []
    css_seen: dict[Path, list[str]] = {}

    def scan_css(path: Path, depth: int = 0):
        if path in css_seen or depth > 5 or not path.is_file():
            return
        css_seen[path] = []
        for u in css_urls(path.read_text(encoding="utf-8", errors="replace")):
            if is_external(u):
                css_seen[path].append(u)
            elif u.lower().endswith(".css") and not u.startswith("data:"):
                scan_css((path.parent / unquote(urlsplit(u).path)).resolve(), depth + 1)

    pages = html_pages(site)
    for page in pages:
        parsed = parse_html(page.read_text(encoding="utf-8", errors="replace"))
        rel = page.relative_to(site).as_posix()
        for where, url in parsed.refs:
            if is_external(url) and url not in allowed:
                problems.append(f"{rel}: {where} loads {url}")
        for href in parsed.stylesheets:
            if not is_external(href):
                scan_css((page.parent / unquote(urlsplit(href).path)).resolve())
    for path, urls in css_seen.items():
        for url in urls:
            if url not in allowed:
                problems.append(f"{path.relative_to(site.resolve()).as_posix()}: css loads {url}")
    return problems, len(pages)


_REFRESH = re.compile(r"""<meta[^>]+http-equiv=["']?refresh["']?[^>]*content=["']\s*\d+\s*;\s*url=([^"'>\s]+)""", re.I)


def meta_refresh(text: str) -> str | None:
    """The target of a ``<meta http-equiv="refresh">`` redirect page, or None."""
    m = _REFRESH.search(text)
    return m.group(1) if m else None


def html_pages(site: Path) -> list[Path]:
    """Every HTML page the build produced (not the copies of static assets)."""
    site = Path(site)
    return sorted(p for p in site.rglob("*.html")
                  if p.relative_to(site).parts[0] not in ("_static", "_sources", "_images"))


# ---------------------------------------------------------------------------------------------
# Internal links
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _ids_of(path: Path) -> frozenset:
    return frozenset(parse_html(path.read_text(encoding="utf-8", errors="replace")).ids)


def check_internal_link(site: Path, url: str) -> str | None:
    """``None`` if an absolute same-site URL (path from the site root) resolves, else why not."""
    parts = urlsplit(url)
    path = unquote(parts.path).lstrip("/")
    target = Path(site) / path
    if path == "" or path.endswith("/"):
        target = target / "index.html"
    if not target.is_file():
        return f"{url}: no file {target.relative_to(site).as_posix()}"
    if parts.fragment and target.suffix == ".html":
        frag = unquote(parts.fragment)
        if frag not in _ids_of(target.resolve()):
            return f"{url}: no element with id {frag!r} in {target.relative_to(site).as_posix()}"
    return None


# ---------------------------------------------------------------------------------------------
# Serving and the browser
# ---------------------------------------------------------------------------------------------

#: Flags that keep Chromium off the network (it is a closed machine: only loopback).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
                 "--disable-domain-reliability", "--metrics-recording-only"]


def chromium_path() -> str | None:
    """Debian's Chromium (``ROPEGEO_CHROMIUM`` overrides), or None when it is not installed."""
    for cand in (os.environ.get("ROPEGEO_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".js": "text/javascript", ".woff2": "font/woff2",
                      ".wasm": "application/wasm"}

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` over HTTP on 127.0.0.1 (a free port); yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextlib.contextmanager
def browser():
    """A headless Debian Chromium driven by Playwright (no browser download)."""
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    if exe is None:
        raise RuntimeError("Chromium is not installed (apt-get install chromium; .ci/run does this)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


# No console message of type "error" and no uncaught page error is harmless: each one fails the test.
# (The theme's "invalid theme mode", sphinx-thebe's repeated THEBE_JS_URL and the favicon's 404 were
# fixed in scripts/site/ropegeo_site.py and _config.yml rather than listed here.)


class PageVisit:
    """Opens one URL and records console errors, page errors, failed and external requests."""

    def __init__(self, context, base: str):
        self.context = context
        self.base = base
        self.console: list[str] = []
        self.page_errors: list[str] = []
        self.failed: list[str] = []
        self.external: list[str] = []

    def open(self, url: str, timeout_ms: int = 30_000, redirect: str | None = None):
        """Open ``url``; ``redirect`` is the target of its meta refresh, if it has one."""
        self.redirect = redirect
        page = self.context.new_page()
        page.on("console", lambda m: m.type == "error" and self.console.append(
            f"{m.text} @ {m.location.get('url', '')}:{m.location.get('lineNumber', '')}"))
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("requestfailed", lambda r: self.failed.append(f"{r.url}: {r.failure}"))
        page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url}: HTTP {r.status}"))
        page.goto(url, wait_until="load", timeout=timeout_ms)
        if self.redirect:
            # a meta-refresh page (Jupyter Book's index.html): check where it lands
            page.wait_for_url(urljoin(url, self.redirect), wait_until="load", timeout=timeout_ms)
        return page

    def console_problems(self) -> list[str]:
        """Every console error and every uncaught page error (none is harmless)."""
        return [f"console error: {text}" for text in self.console] + [f"page error: {e}" for e in self.page_errors]


def new_context(b, base: str, external_log: list[str]):
    """A browser context in which every request to another origin is aborted and logged."""
    ctx = b.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    origin = base.rstrip("/")

    def route(r):
        url = r.request.url
        if url.startswith(origin + "/") or url == origin:
            r.continue_()
        else:
            external_log.append(url)
            r.abort()

    ctx.route("**/*", route)
    return ctx


# JavaScript run in the page: wait for MathJax, mermaid and widgets to settle, then report.
_SETTLE_JS = r"""
async (timeoutMs) => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const t0 = performance.now();
  const late = () => performance.now() - t0 > timeoutMs;
  document.querySelectorAll('details').forEach((d) => { d.open = true; });
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    try { await MathJax.startup.promise; } catch (e) {}
  }
  // mermaid: each diagram ends with an <svg> (or is marked failed)
  while (!late()) {
    const pending = [...document.querySelectorAll('.mermaid')].filter(
      (m) => !m.querySelector('svg') && !m.hasAttribute('data-mermaid-render-failed'));
    if (pending.length === 0) break;
    pending.forEach((m) => m.scrollIntoView());
    await sleep(100);
  }
  // widgets: each embedded view gets a widget-subarea with content
  const views = () => [...document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')];
  const rendered = (s) => {
    const prev = s.previousElementSibling;
    return !!(prev && prev.classList.contains('widget-subarea') && prev.childElementCount > 0
              && prev.getBoundingClientRect().height > 0);
  };
  while (!late() && !views().every(rendered)) await sleep(100);
  // images: scroll each into view so lazy ones load, then wait for completion
  const imgs = [...document.querySelectorAll('img')];
  imgs.forEach((i) => { i.loading = 'eager'; });
  while (!late() && !imgs.every((i) => i.complete)) await sleep(100);
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    try { await MathJax.startup.promise; } catch (e) {}
  }
  await sleep(200);
  window.scrollTo(0, 0);

  const problems = [];
  const info = { math: 0, images: 0, mermaid: 0, widgets: 0, labs: 0 };
  // math
  const maths = [...document.querySelectorAll('.math')];
  info.math = maths.length;
  maths.forEach((m, k) => {
    if (!m.querySelector('mjx-container')) problems.push(`math #${k} not typeset: ${m.textContent.slice(0, 80)}`);
  });
  document.querySelectorAll('mjx-merror, [data-mjx-error]').forEach((m) =>
    problems.push(`MathJax error: ${(m.getAttribute('data-mjx-error') || m.textContent).slice(0, 120)}`));
  const main = (document.querySelector('main') || document.body).cloneNode(true);
  main.querySelectorAll('pre, code, script, style, textarea, .highlight, mjx-container, .math').forEach((e) => e.remove());
  const text = main.textContent;
  for (const raw of ['$$', '\\[', '\\(', '\\begin{']) {
    const at = text.indexOf(raw);
    if (at >= 0) problems.push(`raw math source left in the page: ...${text.slice(Math.max(0, at - 40), at + 60).replace(/\s+/g, ' ')}...`);
  }
  // Markdown that a cell displayed but the page did not parse: a table left as pipes and dashes
  const rawTable = text.search(/\|\s*:?-{3,}:?\s*\|/);
  if (rawTable >= 0) problems.push(`raw Markdown table left in the page: ...${text.slice(Math.max(0, rawTable - 60), rawTable + 40).replace(/\s+/g, ' ')}...`);
  // images
  imgs.forEach((i) => {
    info.images += 1;
    if (!i.complete || i.naturalWidth === 0) problems.push(`image not loaded: ${i.getAttribute('src')}`);
  });
  // mermaid
  document.querySelectorAll('.mermaid').forEach((m, k) => {
    info.mermaid += 1;
    const svg = m.querySelector('svg');
    if (!svg) problems.push(`mermaid diagram #${k} not drawn`);
    else if (svg.querySelector('.error-icon') || /Syntax error in text/.test(svg.textContent))
      problems.push(`mermaid diagram #${k} drawn as a syntax error`);
  });
  // widgets
  views().forEach((s, k) => {
    info.widgets += 1;
    if (!rendered(s)) problems.push(`embedded widget view #${k} not rendered`);
    const prev = s.previousElementSibling;
    if (prev && /Error displaying widget/.test(prev.textContent)) problems.push(`widget view #${k}: Error displaying widget`);
  });
  info.labs = document.querySelectorAll('.ropegeo-lab').length;
  const links = [...document.querySelectorAll('a[href]')].map((a) => a.href);
  return { problems, info, links };
}
"""


_WIDTH_JS = r"""
() => {
  const W = document.documentElement.clientWidth;
  const bad = [];
  document.querySelectorAll('body *').forEach((e) => {
    const r = e.getBoundingClientRect();
    if (!(r.right > W + 1 && r.width > 0)) return;
    for (let a = e.parentElement; a; a = a.parentElement) if (getComputedStyle(a).overflowX !== 'visible') return;
    if ([...e.children].some((c) => c.getBoundingClientRect().right > W + 1)) return;
    bad.push(`${e.tagName.toLowerCase()}${e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : ''} ` +
             `reaches ${Math.round(r.right)} px: "${(e.textContent || '').trim().slice(0, 60).replace(/\s+/g, ' ')}"`);
  });
  return { width: document.documentElement.scrollWidth, viewport: W, culprits: bad.slice(0, 8) };
}
"""


_CUT_JS = r"""
() => {
  const bad = [];
  const ctx = document.createElement('canvas').getContext('2d');
  // a table cell narrower than one of its words: the word breaks inside ("Gat e B", "s o u r c e")
  document.querySelectorAll('.bd-article td, .bd-article th').forEach((el) => {
    if (!el.getClientRects().length || el.closest('.ropegeo-lab')) return;
    const cs = getComputedStyle(el);
    ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
    const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    // the cell's prose: code (identifiers such as ropegeo.models.manifest.RopeManifest) may break at any
    // character by design (book.css), a word of prose may not
    const prose = el.cloneNode(true);
    prose.querySelectorAll('code, pre, kbd, samp').forEach((c) => c.remove());
    // a line may break after a hyphen, a slash or a dash; a dotted name (ropegeo.toy.schemes.X, in the
    // index) is an identifier, whose parts are what must fit
    // (a name with an underscore or a call's parentheses, as the index lists them, is an identifier too)
    const word = prose.textContent.trim().split(/[\s\u200b]+|(?<=[-/\u2013\u2014]|[A-Za-z_]\.)/).filter((x) => !/_|\(\)$/.test(x)).reduce((w, x) => (ctx.measureText(x).width > ctx.measureText(w).width ? x : w), '');
    if (room > 0 && ctx.measureText(word).width > room + 1) bad.push(`table cell: "${word}" breaks inside a word`);
  });
  // text cut by a box that hides its overflow: inline mathematics, the links at a page's foot
  document.querySelectorAll('.bd-article mjx-container, .prev-next-area a, footer a').forEach((el) => {
    for (let a = el; a && a !== document.body; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX === 'hidden' || cs.overflowX === 'clip' || cs.textOverflow === 'ellipsis') {
        if (a.scrollWidth > a.clientWidth + 1) bad.push(`${el.tagName.toLowerCase()} cut: "${(el.textContent || '').trim().slice(0, 50)}"`);
        break;
      }
    }
  });
  return bad.slice(0, 8);
}
"""


def cut_text(page) -> list[str]:
    """Words broken inside in the article's tables, and text cut by a box hiding its overflow (inline
    mathematics, the previous / next links)."""
    return page.evaluate(_CUT_JS)


def page_width(page) -> dict:
    """``{width, viewport, culprits}``: the page's scroll width at the current viewport and the
    innermost elements that reach beyond it (outside any element that scrolls or clips)."""
    return page.evaluate(_WIDTH_JS)


def settle_and_check(page, timeout_ms: int = 20_000) -> dict:
    """Wait for the page's math, diagrams, widgets and images, then return what is wrong.

    Returns a dict with ``problems`` (list of str), ``info`` (counts) and ``links`` (absolute).
    """
    return page.evaluate(_SETTLE_JS, timeout_ms)


# ---------------------------------------------------------------------------------------------
# The kernel lab in a page
# ---------------------------------------------------------------------------------------------

LAB_SELECTOR = ".ropegeo-kernel-lab"

_SET_CONTROL_JS = r"""
([i, name, value]) => {
  const root = document.querySelectorAll('.ropegeo-kernel-lab')[i];
  const input = root.querySelector(`[data-control="${name}"]`);
  const before = root.getAttribute('data-result');
  if (input.type === 'checkbox') input.checked = !!value; else input.value = String(value);
  input.dispatchEvent(new Event('input', { bubbles: true }));
  input.dispatchEvent(new Event('change', { bubbles: true }));
  return before !== root.getAttribute('data-result');
}
"""

#: Moves of the lab's controls that the browser test makes, in order, as a reader would.
LAB_MOVES = [
    ("head_dim", 16),
    ("base", 5.0),             # log10 slider: B = 100,000
    ("offset_start", 500),
    ("offset_stop", 60_000),
    ("interpolate", True),
    ("train_length", 2048),
    ("target_length", 8192),
    ("head_dim", 64),
    ("offset_stop", 5_000_000),  # clipped by the lab to MAX_SPAN offsets
]


def lab_result(page, i: int = 0) -> dict:
    return json.loads(page.eval_on_selector_all(LAB_SELECTOR, "(els, i) => els[i].getAttribute('data-result')", i))


def move_lab(page, i: int, name: str, value) -> bool:
    """Set one control of lab ``i`` as a reader would; True if the lab's numbers changed."""
    return page.evaluate(_SET_CONTROL_JS, [i, name, value])


def compare_lab(result: dict, tol: float = 1e-9) -> list[str]:
    """Compare the lab's published numbers with ropegeo's for the same state."""
    from ropegeo.book.widgets.kernel_lab import MAX_SPAN, reference

    problems = []
    state = {k: result[k] for k in ("head_dim", "base", "offset_start", "offset_stop",
                                    "interpolate", "train_length", "target_length")}
    if result["offset_stop"] - result["offset_start"] + 1 > MAX_SPAN:
        problems.append(f"the lab searched {result['offset_stop'] - result['offset_start'] + 1} offsets (> {MAX_SPAN})")
    offsets = [s["offset"] for s in result["samples"]] + [t["offset"] for t in result["top"]]
    ref = reference(**state, top=len(result["top"]), offsets=offsets)
    if abs(ref["scale"] - result["scale"]) > 1e-15:
        problems.append(f"scale {result['scale']} != {ref['scale']}")
    n_s = len(result["samples"])
    for s, k in zip(result["samples"], ref["k"][:n_s]):
        if abs(s["k"] - k) > tol:
            problems.append(f"K({s['offset']}) = {s['k']!r} in the page, {k!r} from ropegeo ({state})")
    for t, k in zip(result["top"], ref["k"][n_s:]):
        if abs(min(1.0, k) - t["similarity"]) > tol:
            problems.append(f"top offset {t['offset']}: K = {t['similarity']!r} in the page, {k!r} from ropegeo")
    js_top = [t["similarity"] for t in result["top"]]
    py_top = [c[1] for c in ref["top"]]
    if len(js_top) != len(py_top) or any(abs(a - b) > tol for a, b in zip(js_top, py_top)):
        problems.append(f"top similarities differ: page {js_top} vs ropegeo {py_top} ({state})")
    # the returns listed (one per peak) are ropegeo's: the same window, offsets and values
    if result["return_width"] != ref["return_width"]:
        problems.append(f"return window {result['return_width']} != {ref['return_width']} ({state})")
    got_ret = [(b["offset"], b["similarity"]) for b in result["returns"]]
    if len(got_ret) != len(ref["returns"]) or any(
            o != wo and abs(k - wk) > tol for (o, k), (wo, wk) in zip(got_ret, ref["returns"])) or any(
            abs(k - wk) > tol for (_, k), (_, wk) in zip(got_ret, ref["returns"])):
        problems.append(f"returns differ: page {got_ret} vs ropegeo {ref['returns']} ({state})")
    # the offsets themselves must agree wherever the ranking is not a near-tie
    for rank, (t, (off, sim)) in enumerate(zip(result["top"], ref["top"])):
        if t["offset"] != off:
            near_tie = any(abs(sim - other) <= tol for j, (_, other) in enumerate(ref["top"]) if j != rank)
            if not near_tie:
                problems.append(f"rank {rank}: page offset {t['offset']} vs ropegeo {off} ({state})")
    return problems


def wait_for_lab(page, timeout_s: float = 20.0) -> int:
    """Wait until the page's labs have published numbers; returns how many labs there are."""
    deadline = time.monotonic() + timeout_s
    while True:
        n = page.eval_on_selector_all(
            LAB_SELECTOR, "els => els.filter((e) => e.hasAttribute('data-result')).length")
        total = page.eval_on_selector_all(LAB_SELECTOR, "els => els.length")
        if (total and n == total) or time.monotonic() > deadline:
            return n
        time.sleep(0.1)


def site_url_to_path(base: str, url: str) -> str | None:
    """The path (from the site root) of a same-site URL, or None for another origin."""
    if not url.startswith(base):
        return None
    return url[len(base):]



# ---------------------------------------------------------------------------------------------
# Every lab in a page: drive its controls and check its numbers against ropegeo
# ---------------------------------------------------------------------------------------------

LABS_SELECTOR = ".ropegeo-lab"

_MOVE_JS = r"""
([i, name, value]) => {
  const root = document.querySelectorAll('.ropegeo-lab')[i];
  // "exact:name" types into the number field beside a log slider
  const input = name.startsWith('exact:') ? root.querySelector(`[data-exact="${name.slice(6)}"]`)
    : root.querySelector(`[data-control="${name}"]`);
  if (!input) return null;
  const before = root.getAttribute('data-result');
  if (input.tagName === 'BUTTON') input.click();
  else {
    if (input.type === 'checkbox') input.checked = !!value; else input.value = String(value);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.dispatchEvent(new Event('change', { bubbles: true }));
  }
  return before !== root.getAttribute('data-result');
}
"""


def lab_kinds(page) -> list[str]:
    """The kind of each lab in the page, in order (its class, e.g. ``ropegeo-audit-lab``)."""
    return page.eval_on_selector_all(LABS_SELECTOR, "els => els.map((e) => [...e.classList].find("
                                                    "(c) => c !== 'ropegeo-lab' && c.startsWith('ropegeo-')))")


def lab_data(page, i: int) -> dict:
    return json.loads(page.eval_on_selector_all(LABS_SELECTOR, "(els, i) => els[i].getAttribute('data-result')", i))


def move_control(page, i: int, name: str, value=None):
    """Set (or press) one control of lab ``i`` as a reader would; True if its numbers changed,
    None if the lab has no such control."""
    return page.evaluate(_MOVE_JS, [i, name, value])


def wait_for_labs(page, timeout_s: float = 20.0) -> int:
    """Wait until every lab of the page has published numbers; returns how many have."""
    deadline = time.monotonic() + timeout_s
    while True:
        n = page.eval_on_selector_all(LABS_SELECTOR, "els => els.filter((e) => e.hasAttribute('data-result')).length")
        total = page.eval_on_selector_all(LABS_SELECTOR, "els => els.length")
        if (total and n == total) or time.monotonic() > deadline:
            return n
        time.sleep(0.1)


def _problems(check, *args) -> list[str]:
    try:
        check(*args)
    except AssertionError as exc:
        return [str(exc)[:800]]
    return []


def _check_frequency(r):
    from test_frequency_lab import assert_matches
    from ropegeo.book.widgets.frequency_lab import lab_state

    assert_matches(r, lab_state(**r["state"]))


def _check_scaling(r):
    from ropegeo.book.widgets.scaling_lab import lab_report

    st = dict(r["state"])
    if r["refused"]:
        return
    rep = lab_report(st.pop("rule"), st.pop("factor"), **st)
    sel = r["selected"]
    for f in ("scaled_pairs", "novel_pairs", "total_novelty", "adjacent_similarity", "fastest_step", "margin",
              "coarse_margin", "attention_factor"):
        assert abs(sel[f] - getattr(rep, f)) <= 1e-9 * max(1.0, abs(getattr(rep, f))), (f, sel[f], getattr(rep, f), r["state"])


def _check_audit(r):
    from test_audit_lab import assert_matches
    from ropegeo.book.widgets.audit_lab import reference

    assert_matches(r, reference(r["state"]), r["state"])


def _check_clock(r):
    from ropegeo.book.widgets.clock_lab import reference

    ref = reference(r["state"], r["q"], r["k"])
    assert abs(r["score"] - ref["score"]) <= 1e-9 and abs(r["relative"] - ref["relative"]) <= 1e-9, (r["state"], r["score"], ref)


def _check_wiring(r):
    import numpy as np

    from ropegeo.book.widgets.wiring_lab import reference

    ref = reference(r["state"], r["q"], r["k"])
    assert r["positions"] == ref["positions"], r["state"]
    np.testing.assert_allclose(r["scores"], ref["scores"], atol=1e-9, err_msg=str(r["state"]))
    for key in ("score_error", "shift_residual"):
        assert abs(r[key] - ref[key]) <= 1e-9, (key, r[key], ref[key], r["state"])
    assert (r["layout_status"], r["layout_mismatches"]) == (ref["layout_status"], ref["layout_mismatches"]), r["state"]


def _check_kernel(r):
    assert not compare_lab(r), compare_lab(r)


def _check_axes(r):
    from test_axes_lab import assert_matches
    from ropegeo.book.widgets.axes_lab import reference

    assert_matches(r, reference(r["state"]))


def _check_attention(r):
    import numpy as np

    from ropegeo.book.widgets.attention_lab import reference

    ref = reference(r["state"])
    np.testing.assert_allclose(r["q"], ref["q"], atol=1e-12, err_msg=str(r["state"]))
    np.testing.assert_allclose(r["k"], ref["k"], atol=1e-12, err_msg=str(r["state"]))
    np.testing.assert_allclose(r["theta"], ref["theta"], rtol=1e-9, atol=1e-12, err_msg=str(r["state"]))
    assert abs(r["bound"] - ref["bound"]) <= 1e-9 * max(1.0, ref["bound"]), (r["bound"], ref["bound"], r["state"])
    pos = list(ref["positions"])
    for s in r["samples"]:
        want = ref["scores"][pos.index(s["m"]), pos.index(s["n"])]
        assert abs(s["score"] - want) <= 1e-9 * max(1.0, ref["bound"]), (s, want, r["state"])
    assert r["returns_from"] == ref["returns_from"], (r["returns_from"], ref["returns_from"], r["state"])
    assert [b["offset"] for b in r["returns"]] == [o for o, _ in ref["returns"]], (r["returns"], ref["returns"], r["state"])
    np.testing.assert_allclose([b["similarity"] for b in r["returns"]], [k for _, k in ref["returns"]], atol=1e-9)


def _check_angles(r):
    from test_labs_angles import assert_matches

    assert_matches(r)


def _check_pipeline(r):
    from test_labs_pipeline import assert_matches

    assert_matches(r)


#: For each kind of lab: the moves a reader makes (control, value; None presses a button) and the
#: check of its numbers against ropegeo.
LAB_DRIVES = {
    "ropegeo-kernel-lab": (LAB_MOVES, _check_kernel),
    "ropegeo-frequency-lab": ([("head_dim", 64), ("base", 5.0), ("exact:target_length", 65536), ("dtype", "bfloat16"),
                               ("interpolate", True), ("dtype", "float16"), ("exact:train_length", 2048),
                               ("exact:target_length", 10_000), ("train_length", 3.6), ("dtype", "float64")],
                              _check_frequency),
    "ropegeo-scaling-lab": ([("rule", "ntk"), ("factor", 16), ("head_dim", 64), ("rule", "llama3"), ("high_freq_factor", 8),
                             ("rule", "yarn"), ("beta_fast", 16), ("train_length", 8192), ("rule", "dynamic"), ("base", 5.5)],
                            _check_scaling),
    "ropegeo-audit-lab": ([("model", "phi-3-mini-128k-instruct"), ("target_length", 20000), ("dtype", "bfloat16"),
                           ("model", "qwen2.5-7b-instruct"), ("dtype", "config"), ("model", "custom"), ("rule", "yarn"),
                           ("head_dim", 32), ("train_length", 1024)], _check_audit),
    "ropegeo-clock-lab": ([("m", 40), ("n", 45), ("shift_up", None), ("shift_up", None), ("shift_down", None),
                           ("pairing", "half"), ("head_dim", 8), ("n", 200), ("speed", 16),
                           ("head_dim", 16), ("base", 4.7)], _check_clock),  # eight clocks, theta down to 10^-4
    "ropegeo-attention-lab": ([("content", "equal"), ("head_dim", 16), ("exact:span", 256), ("dtype", "bfloat16"),
                               ("rule", "yarn"), ("factor", 8), ("exact:train_length", 64), ("content", "varied"), ("seed", 7),
                               ("exact:span", 16384), ("span", 4.0), ("head_dim", 128), ("rule", "ntk"), ("dtype", "float64"),
                               ("encoding", "none"), ("encoding", "rope"), ("content", "fast"), ("head_dim", 32)], _check_attention),
    "ropegeo-wiring-lab": ([("policy", "left-padded"), ("pad", 700), ("dtype", "bfloat16"), ("policy", "kv-cache"),
                            ("cache_offset", 29), ("query_pairing", "half"), ("dtype", "float64"), ("head_dim", 32)],
                           _check_wiring),
    "ropegeo-axes-lab": ([("split", "interleaved"), ("grid", 64), ("head_dim", 128), ("split", "mixed"), ("base", 4.0),
                          ("threshold", 0.5), ("split", "share"), ("x_share", 0.25), ("head_dim", 2), ("grid", 1),
                          ("top", 20)], _check_axes),
    "ropegeo-angle-lab": ([("rule", "linear"), ("factor", 16), ("dtype", "bfloat16"), ("rule", "ntk"), ("head_dim", 256),
                           ("base", 6.0), ("rule", "yarn"), ("train_length", 8192), ("dtype", "float32"), ("rule", "llama3"),
                           ("factor", 1), ("rule", "none")], _check_angles),
    "ropegeo-pipeline-lab": ([("pair", 20), ("max_position", 6.5), ("base", 5.7), ("head_dim", 16), ("worst", True),
                              ("head_dim", 256), ("max_position", 2.0), ("worst", False), ("pair", 127), ("base", 2.0)],
                             _check_pipeline),
}


def lab_text(page, i: int) -> str:
    """The readout of lab ``i`` as the reader sees it (its lines, tables and keys)."""
    return page.eval_on_selector_all(LABS_SELECTOR, "(els, i) => els[i].querySelector('.rl-readout').innerText + '\\n' + "
                                                    "[...els[i].querySelectorAll('.rl-key')].map((k) => k.innerText).join('\\n')", i)


# The words of each readout against the Python it mirrors (counts, ranges, "none"), after every move.

def _words_wiring(r, text):
    from ropegeo.book.widgets.wiring_lab import positions_text, reference

    ref = reference(r["state"], r["q"], r["k"])
    assert positions_text(ref["positions"]) in text, (positions_text(ref["positions"]), text)
    assert " 1 tokens" not in text


def _words_kernel(r, text):
    from ropegeo.book.widgets.kernel_lab import reference

    st = {k: r[k] for k in ("head_dim", "base", "offset_start", "offset_stop", "interpolate", "train_length", "target_length")}
    ref = reference(**st, top=r["state"]["top"])
    for off, k in ref["returns"]:
        assert f"{off:,}\t{k:.6f}" in text, (off, k, text)
    assert ("raised to the first" in text) == r["raised"]


def _words_frequency(r, text):
    from ropegeo.book.widgets.frequency_lab import lab_state, readout

    want = readout(lab_state(**r["state"])).split("\n")
    assert want[1] in text, (want[1], text)
    none = [w for w in want if w.startswith("no offset beyond training")]
    assert (none[0] in text) if none else ("no offset beyond training" not in text)


def _words_audit(r, text):
    from ropegeo.book.widgets.audit_lab import idle_rule, reference

    ref = reference(r["state"])
    n = len(ref["gate_b"]["sets"]) if ref["gate_b"] else len(r["audit"]["gate_b"]["sets"])
    assert f"Gate B ({n} default offset set{'' if n == 1 else 's'})" in text, text
    rule = idle_rule(r["state"])
    assert (f"{rule}, not applied" in text) if rule else (", not applied" not in text)


def _words_angles(r, text):
    from ropegeo.book.widgets.angle_lab import reference

    n = reference(r["state"], [])["aliased_pairs"]
    assert ("no pair turns more than half a turn per column" in text) == (n == 0), (n, text)
    if n:
        assert f"{n:,} pair{'s turn' if n > 1 else ' turns'} more than half a turn" in text, (n, text)


def _words_axes(r, text):
    import numpy as np

    from ropegeo.book.widgets.axes_lab import reference

    ref = reference(r["state"])
    both = int(np.sum((np.asarray(ref["fx"]) != 0) & (np.asarray(ref["fy"]) != 0)))
    if r["state"]["split"] == "mixed":
        assert ("every pair turns with both axes" in text) == (both == ref["pairs"]), (both, text)
    assert ("y turns no pair" in text) == (int(np.sum(np.asarray(ref["fy"]) != 0)) == 0)


def _words_attention(r, text):
    import re

    assert not re.search(r"\b(\d*[123])th position", text) or re.search(r"\b1[123]th position", text), text


def _words_pipeline(r, text):
    m = r["state"]["max_position"]
    assert ("from 256 on (bfloat16)" in text) == (m >= 256) and ("from 16,777,216 on (float32)" in text) == (m >= 2**24)
    assert f"at position {m:,}:" in text and "deployed" not in text


def _words_clock(r, text):
    off = r["state"]["n"] - r["state"]["m"]
    assert f"offset n − m = {off} token{'' if abs(off) == 1 else 's'}" in text, text


def _words_scaling(r, text):
    from ropegeo.book.widgets.scaling_lab import lab_report

    st = dict(r["state"])
    rep = lab_report(st.pop("rule"), st.pop("factor"), **st)
    assert f"{rep.rule}: {rep.scaled_pairs} of {rep.theta.size} pairs stretched" in text, text
    n = rep.novel_pairs
    assert ("no pair sees new phase" in text) == (n == 0) and (n < 2 or f"{n} pairs see new phase" in text), (n, text)


LAB_WORDS = {"ropegeo-wiring-lab": _words_wiring, "ropegeo-kernel-lab": _words_kernel,
             "ropegeo-frequency-lab": _words_frequency, "ropegeo-audit-lab": _words_audit,
             "ropegeo-angle-lab": _words_angles, "ropegeo-axes-lab": _words_axes, "ropegeo-attention-lab": _words_attention,
             "ropegeo-pipeline-lab": _words_pipeline, "ropegeo-clock-lab": _words_clock, "ropegeo-scaling-lab": _words_scaling}


def drive_labs(page) -> tuple[list[str], list[float]]:
    """Drive every lab of the page through its moves; returns (problems, update times in ms)."""
    problems, times = [], []
    for i, kind in enumerate(lab_kinds(page)):
        if kind not in LAB_DRIVES:
            problems.append(f"lab #{i}: unknown kind {kind}")
            continue
        moves, check = LAB_DRIVES[kind]
        problems += [f"{kind} #{i} as embedded: {p}" for p in _problems(check, lab_data(page, i))]
        for name, value in moves:
            changed = move_control(page, i, name, value)
            if changed is None:
                problems.append(f"{kind} #{i}: no control {name}")
                continue
            r = lab_data(page, i)
            times.append(r.get("update_ms", 0.0))
            if not changed:
                problems.append(f"{kind} #{i}: moving {name} to {value} changed nothing")
            problems += [f"{kind} #{i} after {name}={value}: {p}" for p in _problems(check, r)]
            problems += [f"{kind} #{i} after {name}={value}, its words: {p}" for p in _problems(LAB_WORDS[kind], r, lab_text(page, i))]
            problems += [f"{kind} after {name}={value}: {p}" for p in chart_problems(page) if p.startswith(f"lab #{i}:")]
    return problems, times


_LAYOUT_JS = r"""
() => [...document.querySelectorAll('.ropegeo-lab')].map((root) => {
  const bad = [];
  const box = root.getBoundingClientRect();
  if (box.right > window.innerWidth + 1) bad.push(`wider than the screen: right edge at ${box.right}px of ${window.innerWidth}px`);
  if (root.scrollWidth > root.clientWidth + 1) bad.push(`content overflows: ${root.scrollWidth}px in ${root.clientWidth}px`);
  root.querySelectorAll('input, select, button').forEach((c) => {
    const name = c.tagName === 'BUTTON' ? c.textContent.trim() : [...(c.labels || [])].map((l) => l.textContent.trim()).join(' ');
    if (!name && !c.getAttribute('aria-label')) bad.push(`control ${c.getAttribute('data-control')} has no label`);
    if (c.tabIndex < 0) bad.push(`control ${c.getAttribute('data-control')} is not reachable by keyboard`);
  });
  return bad;
})
"""


_CHART_JS = r"""
() => [...document.querySelectorAll('.ropegeo-lab')].map((root) => {
  const bad = [];
  const ctx = document.createElement('canvas').getContext('2d');
  const near = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  // every drawing of the lab (charts, clocks): text inside its edges, over no other text, no mark
  // (a dot), no heatmap; a text's box is its glyphs' (an empty label, kept for layout, is skipped)
  root.querySelectorAll('svg').forEach((svg, c) => {
    const box = svg.getBoundingClientRect();
    if (box.width === 0 || svg.closest('[aria-hidden="true"]') || svg.getAttribute('aria-hidden') === 'true') return;
    const name = svg.getAttribute('aria-label') || `drawing ${c}`;
    const texts = [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim());
    const rects = texts.map((t) => t.getBoundingClientRect());
    const marks = [...svg.querySelectorAll('circle:not(.rl-frame)')].map((m) => [m, m.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
    const heat = [...svg.querySelectorAll('image')].map((m) => m.getBoundingClientRect());
    texts.forEach((t, k) => {
      const r = rects[k];
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        bad.push(`chart "${name}": text "${t.textContent}" is cut by the chart's edge`);
      for (let j = 0; j < k; j++) if (near(r, rects[j]))
        bad.push(`chart "${name}": text "${t.textContent}" overprints "${texts[j].textContent}"`);
      for (const [m, mr] of marks) if (near(r, mr))
        bad.push(`chart "${name}": text "${t.textContent}" covers a mark (${m.getAttribute('class') || 'dot'})`);
      for (const hr of heat) if (near(r, hr))
        bad.push(`chart "${name}": text "${t.textContent}" is printed over the heatmap`);
    });
    // the highlighted mark (rl-mark) half hidden under a later mark of another kind (marks at the same
    // values coincide: their shared label says so)
    marks.forEach(([o, or], k) => marks.slice(k + 1).forEach(([m, mr]) => {
      if (o.getAttribute('class') !== 'rl-mark' || m.getAttribute('class') === 'rl-mark') return;
      if (m.getAttribute('data-x') === o.getAttribute('data-x') && m.getAttribute('data-y') === o.getAttribute('data-y')) return;
      const dx = Math.min(mr.right, or.right) - Math.max(mr.left, or.left), dy = Math.min(mr.bottom, or.bottom) - Math.max(mr.top, or.top);
      if (dx > 0 && dy > 0 && dx * dy > 0.3 * or.width * or.height)
        bad.push(`chart "${name}": a ${m.getAttribute('class')} mark covers the highlighted rl-mark`);
    }));
    // a chart's coloured marks are explained: the lab's key (.rl-key) has an entry, with words, for each kind
    const kinds = [...new Set(marks.map(([m]) => m.getAttribute('class')))];
    for (const kind of kinds) {
      const entry = [...root.querySelectorAll('.rl-key [data-key-for]')].find((e) => e.getAttribute('data-key-for').split(' ').includes(kind));
      if (!entry || !entry.textContent.trim()) bad.push(`chart "${name}": its ${kind} marks have no key`);
    }
    // curves stay inside their frame (the frame is the chart's first rect)
    const frame = svg.querySelector('rect.rl-frame');
    if (frame) {
      const f = frame.getBoundingClientRect();
      svg.querySelectorAll('path').forEach((p) => {
        const r = p.getBoundingClientRect();
        if (r.width + r.height > 0 && (r.left < f.left - 2 || r.right > f.right + 2 || r.top < f.top - 2 || r.bottom > f.bottom + 2))
          bad.push(`chart "${name}": a ${p.getAttribute('class')} curve leaves its frame`);
      });
    }
  });
  // a select shows its chosen option in full
  root.querySelectorAll('select').forEach((sel) => {
    const cs = getComputedStyle(sel);
    ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
    const text = sel.selectedOptions.length ? sel.selectedOptions[0].textContent : '';
    if (sel.getBoundingClientRect().width > 0 && ctx.measureText(text).width > sel.clientWidth - 20)
      bad.push(`select ${sel.getAttribute('data-control')} cuts its option "${text}"`);
  });
  // words never break inside: a table cell, caption, label or readout line at least as wide as its longest word
  root.querySelectorAll('td, th, caption, .rl-label, .rl-readout p, .rl-value').forEach((el) => {
    if (!el.getClientRects().length) return;
    const cs = getComputedStyle(el);
    ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
    const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    // the pieces a line may break between: spaces, zero-width spaces, and after a hyphen
    const word = el.textContent.split(/[\s\u200b]+|(?<=-)/).reduce((w, x) => (ctx.measureText(x).width > ctx.measureText(w).width ? x : w), '');
    if (room > 0 && ctx.measureText(word).width > room + 1) bad.push(`"${word}" breaks inside a word (${Math.round(room)} px for it)`);
  });
  // a listing agrees with the chart: a table that lists marks (data-lists: their class) names exactly
  // the offsets where those marks are drawn (data-x)
  root.querySelectorAll('table[data-lists]').forEach((tb) => {
    const cls = tb.getAttribute('data-lists');
    const listed = [...tb.querySelectorAll('tr')].slice(1).map((tr) => Number(tr.cells[0].textContent.replace(/,/g, '')));
    const drawn = [...root.querySelectorAll(`circle.${cls}`)].filter((m) => !m.closest('.rl-key')).map((m) => Number(m.getAttribute('data-x')));
    const key = (a) => JSON.stringify([...a].sort((x, y) => x - y));
    if (key(listed) !== key(drawn)) bad.push(`the table lists ${listed.join(', ')} but the chart marks ${drawn.join(', ')}`);
  });
  // a readout never blanks the lab
  if (!root.querySelector('svg.rl-chart, .rl-clocks')) bad.push('no chart drawn');
  if (/refused:/.test(root.textContent)) bad.push('a refusal replaces the view');
  return bad;
})
"""


def chart_problems(page) -> list[str]:
    """In every lab: drawing text cut by an edge, over other text, a mark or a heatmap; marks of two
    kinds covering each other, or of a kind no key or caption explains; a curve leaving its frame; a
    word broken inside (a table cell, caption, label or readout line narrower than it); a listing
    that names other offsets than the chart marks; a select too narrow for its option; a view
    replaced by a refusal. ``tests/test_labs_layout_checks.py`` shows each check failing on a
    labelled bad view."""
    out = []
    for i, bad in enumerate(page.evaluate(_CHART_JS)):
        out += [f"lab #{i}: {b}" for b in dict.fromkeys(bad)]
    return out


#: For each kind of lab, the controls that do nothing in a state, and must then be disabled with
#: a reason: (moves to the state, controls disabled there, controls enabled there).
DISABLED_STATES = {
    "ropegeo-audit-lab": [([("model", "mistral-7b")], ["head_dim", "base", "train_length", "rule", "layer_type"], ["target_length", "dtype"]),
                          ([("model", "gemma-3-1b-it")], ["head_dim", "base", "train_length", "rule"], ["layer_type"]),
                          ([("model", "custom")], ["layer_type"], ["head_dim", "base", "train_length", "rule"])],
    "ropegeo-wiring-lab": [([("policy", "contiguous")], ["pad", "cache_offset"], []),
                           ([("policy", "left-padded")], ["cache_offset"], ["pad"]),
                           ([("policy", "kv-cache")], ["pad"], ["cache_offset"])],
    "ropegeo-attention-lab": [([("encoding", "rope"), ("content", "equal"), ("rule", "none")], ["seed", "factor", "train_length"],
                               ["head_dim", "base", "dtype", "rule"]),
                              ([("rule", "linear"), ("content", "varied")], [], ["seed", "factor", "train_length"]),
                              ([("encoding", "none")], ["head_dim", "base", "dtype", "rule", "factor", "train_length"], ["span"])],
    "ropegeo-kernel-lab": [([("interpolate", False)], ["train_length", "target_length"], []),
                           ([("interpolate", True)], [], ["train_length", "target_length"])],
    "ropegeo-scaling-lab": [([("rule", "ntk")], ["beta_fast", "beta_slow", "low_freq_factor", "high_freq_factor"], []),
                            ([("rule", "yarn")], ["low_freq_factor", "high_freq_factor"], ["beta_fast", "beta_slow"])],
    "ropegeo-axes-lab": [([("split", "blocked")], ["x_share"], []), ([("split", "mixed")], ["x_share"], []),
                         ([("split", "share")], [], ["x_share"])],
    "ropegeo-pipeline-lab": [([("worst", True)], ["pair"], []),
                             ([("worst", False)], [], ["pair"])],
}

_CONTROL_STATE_JS = r"""
([i, name]) => {
  const input = document.querySelectorAll('.ropegeo-lab')[i].querySelector(`[data-control="${name}"]`);
  const out = input.closest('.rl-row').querySelector('output');
  return { disabled: input.disabled, reason: out ? out.textContent : '' };
}
"""


def control_state(page, i: int, name: str) -> dict:
    """``{disabled, reason}`` of one control of lab ``i`` (the reason is the text beside it)."""
    return page.evaluate(_CONTROL_STATE_JS, [i, name])


def lab_layout_problems(page) -> list[str]:
    """Labs wider than the viewport or the column, and controls without a label or keyboard access."""
    out = []
    for i, bad in enumerate(page.evaluate(_LAYOUT_JS)):
        out += [f"lab #{i}: {b}" for b in bad]
    return out


_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>labs</title>
<link rel="icon" href="data:,">
<script src="_static/require/require.js"></script>
<script src="_static/widgets-offline.js"></script>
<script type="application/vnd.jupyter.widget-state+json">%s</script>
<link rel="stylesheet" href="_static/book.css">
</head><body><main class="bd-article" style="max-width: 46em; margin: 0 auto; padding: 0 8px">
%s
</main></body></html>
"""


def write_lab_page(directory: Path, labs, vendor: Path, name: str = "labs.html") -> Path:
    """A static page embedding ``labs`` (widget state in the page, no kernel), with the vendored
    browser files and the book's stylesheet (``scripts/site/static/book.css``) copied to ``_static``."""
    import shutil

    from ipywidgets.embed import embed_data

    data = embed_data(views=labs, drop_defaults=False)
    views = "\n".join(f'<div><script type="application/vnd.jupyter.widget-view+json">{json.dumps(v)}'
                      f"</script></div>" for v in data["view_specs"])
    if not (directory / "_static").exists():
        shutil.copytree(vendor, directory / "_static", ignore=shutil.ignore_patterns("mathjax", "mermaid"))
        # the book's own style additions, as the book's pages load them (the labs sit in .bd-article)
        shutil.copy(Path(__file__).resolve().parent.parent / "scripts" / "site" / "static" / "book.css", directory / "_static")
    state = json.dumps(data["manager_state"]).replace("</", "<\\/")
    path = directory / name
    path.write_text(_PAGE % (state, views))
    return path
