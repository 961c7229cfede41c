"""The book's own Sphinx extension (``_config.yml``: ``sphinx.local_extensions``).

- **One copy of each inline script.** Jupyter Book 1 sets sphinx-thebe (and sphinx-togglebutton)
  up twice, so every page carried ``const THEBE_JS_URL = ...`` twice and the second copy threw
  "Identifier 'THEBE_JS_URL' has already been declared". Repeated script entries are dropped.
- **A theme mode from the start.** pydata-sphinx-theme's first script reads the reader's stored
  light/dark choice and, with none stored, sets an empty mode that its own script then reports as
  an error ("Got invalid theme mode"); the page's default mode (the template variable
  ``default_mode``) is set to "auto", which the theme falls back to anyway.
- **The book's stylesheet** (``scripts/site/static/book.css``: long code and URLs wrap at 360 px).
- **Lab previews.** Each lab embedded in a page gets its default view rendered at build time
  (``lab_preview.mjs`` in node), placed where the lab will appear: the page has the lab's height
  from its first paint, and ``widgets-offline.js`` swaps in the live lab over it. Without node the
  labs simply have no preview (a warning says so).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

from sphinx.util import logging

HERE = Path(__file__).resolve().parent
LOG = logging.getLogger(__name__)

_STATE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)
_VIEW = re.compile(r'<script type="application/vnd\.jupyter\.widget-view\+json">(.*?)</script>', re.S)
#: Width (CSS pixels) at which previews are drawn: the book's text column on a desktop. On a narrow
#: screen the charts scale down with the column (they are SVG with a viewBox) until the live lab
#: redraws them at the screen's width.
PREVIEW_WIDTH = 656


def _script_key(js):
    attrs = getattr(js, "attributes", {}) or {}
    # an inline script's filename is None or "" depending on how it was added: the same script
    return (getattr(js, "filename", str(js)) or "", tuple(sorted((k, str(v)) for k, v in attrs.items())))


def _page_context(app, pagename, templatename, context, doctree):
    # pydata-sphinx-theme's layout writes this template variable into its first script
    context["default_mode"] = context.get("default_mode") or "auto"
    files = context.get("script_files")
    if not files:
        return
    seen, unique = set(), []
    for js in files:
        key = _script_key(js)
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"] = unique


def lab_views(text: str) -> list[tuple[re.Match, dict]]:
    """Each embedded view of a ropegeo lab in a page: (the view script's match, the lab's state)."""
    states = {}
    for m in _STATE.finditer(text):
        states.update(json.loads(m.group(1)).get("state", {}))
    out = []
    for m in _VIEW.finditer(text):
        model = states.get(json.loads(m.group(1)).get("model_id"), {})
        st = model.get("state", {})
        if model.get("model_name") == "AnyModel" and str(st.get("_anywidget_id", "")).startswith("ropegeo.book.widgets."):
            out.append((m, st))
    return out


def render_previews(labs: list[dict], node: str) -> list[str | None]:
    """HTML of each lab's default view (``labs``: the embedded states), drawn by node."""
    payload = json.dumps({"labs": [{"esm": st["_esm"], "state": st, "width": PREVIEW_WIDTH} for st in labs]})
    run = subprocess.run([node, str(HERE / "lab_preview.mjs")], input=payload, capture_output=True, text=True,
                         timeout=300, check=False)
    if run.returncode != 0:
        LOG.warning("lab previews: node failed: %s", run.stderr.strip()[-500:])
        return [None] * len(labs)
    if run.stderr.strip():
        LOG.warning("lab previews: %s", run.stderr.strip()[-500:])
    return json.loads(run.stdout)


def add_previews(path: Path, node: str) -> int:
    """Put each lab's preview before its view script in one built page; returns how many."""
    text = path.read_text(encoding="utf-8")
    views = lab_views(text)
    if not views or "ropegeo-lab-preview" in text:
        return 0
    previews = render_previews([st for _, st in views], node)
    styles = {st["_css"] for _, st in views}
    pieces, at, done = [], 0, 0
    for (m, st), preview in zip(views, previews):
        if preview is None:
            continue
        pieces += [text[at:m.start()],
                   f'<div class="ropegeo-lab-preview" inert aria-hidden="true" data-anywidget-id="{html.escape(st["_anywidget_id"])}">'
                   f"{preview}</div>"]
        at = m.start()
        done += 1
    pieces.append(text[at:])
    text = "".join(pieces)
    if done:
        css = "\n".join(styles).replace("</", "<\\/")
        text = text.replace("</head>", f'<style data-ropegeo-lab-css="">{css}</style>\n</head>', 1)
        path.write_text(text, encoding="utf-8")
    return done


def _build_finished(app, exc):
    if exc is not None or app.builder.format != "html":
        return
    node = shutil.which("node")
    if node is None:
        LOG.warning("lab previews: node is not installed, the labs have no static preview")
        return
    total = 0
    for page in Path(app.outdir).rglob("*.html"):
        if page.relative_to(app.outdir).parts[0] in ("_static", "_sources", "_images"):
            continue
        total += add_previews(page, node)
    LOG.info("lab previews: %d drawn", total)


def setup(app):
    app.connect("html-page-context", _page_context)
    app.connect("build-finished", _build_finished)
    app.add_css_file("book.css")
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
