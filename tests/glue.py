"""Read the numbers a chapter glues into its prose from the notebook's stored outputs.

The chapter tests compare these stored values (what the rendered book and the notebooks on
GitHub show) with independent derivations, so a stale or wrong number fails a test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"
_NUMPY_SCALAR = re.compile(r"^np\.\w+\((.*)\)$")  # numpy 2 reprs: np.float64(0.5)
_USE = re.compile(r"\{glue(?::text)?\}`([A-Za-z0-9_]+)")


def read_glued(notebook: str | Path) -> tuple[dict[str, float | str], set[str]]:
    """Glued values by name (floats where the value is numeric) and the names the prose uses."""
    path = Path(notebook)
    if not path.is_absolute():
        path = CHAPTERS / path
    nb = json.loads(path.read_text())
    values: dict[str, float | str] = {}
    used: set[str] = set()
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            used |= set(_USE.findall(src))
        for out in cell.get("outputs", []):
            meta = out.get("metadata", {}).get("scrapbook")
            if not meta:
                continue
            text = out["data"][meta.get("mime_prefix", "application/papermill.record/") + "text/plain"]
            inner = _NUMPY_SCALAR.match(text)
            text = inner.group(1) if inner else text
            try:
                values[meta["name"]] = float(text)
            except ValueError:
                values[meta["name"]] = text.strip("'\"")
    return values, used


_LOWER = re.compile(r"(?:at or above|at least|stays above|no lower than) \{glue:text\}`([A-Za-z0-9_]+):([^`]*)`"
                    r"|\{glue:text\}`([A-Za-z0-9_]+):([^`]*)` or more")
_UPPER = re.compile(r"(?:at or below|at most|no more than|within) \{glue:text\}`([A-Za-z0-9_]+):([^`]*)`")
# a second set's value alone in parentheses right after a bound is the same bound on other seeds
# ("at least {a} of its attention ({b} on seeds 20-39)"), "up to {n}-fold" is an upper bound, and so is
# "at least <a short clause>, {x}" a lower one
_GLUE = r"\{glue:text\}`[A-Za-z0-9_]+:[^`]*`"
_LOWER_SECOND = re.compile(r"(?:at or above|at least|stays above|no lower than) " + _GLUE
                           + r"[^.(]{0,80}\([^)`{]{0,30}\{glue:text\}`([A-Za-z0-9_]+):([^`]*)`"
                           + r"[^`{)]*\)|at least [a-z ]{0,40}, \{glue:text\}`([A-Za-z0-9_]+):([^`]*)`")
_UPPER_SECOND = re.compile(r"(?:at or below|at most|no more than|within) " + _GLUE
                           + r"[^.(]{0,80}\([^)`{]{0,30}\{glue:text\}`([A-Za-z0-9_]+):([^`]*)`"
                           + r"[^`{)]*\)|up to \{glue:text\}`([A-Za-z0-9_]+):([^`]*)`-fold")


def bounds_rounded_the_wrong_way(prose: str, glued: dict) -> list[str]:
    """Every glued lower bound the prose renders above its value, and every upper bound it renders below
    ("within" and "up to N-fold" read as upper bounds; chapters 6 and 8 check their prose with it)."""
    prose, bad = re.sub(r"\s+", " ", prose), []
    for pattern, lower in ((_LOWER, True), (_UPPER, False), (_LOWER_SECOND, True), (_UPPER_SECOND, False)):
        for m in pattern.finditer(prose):
            name, fmt = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            value = glued[name]
            if isinstance(value, str):
                continue
            shown = float(format(value, fmt).replace(",", "").rstrip("%")) / (100 if fmt.endswith("%") else 1)
            if (shown > value) if lower else (shown < value):
                bad.append(f"{name}:{fmt} shows {shown} for {value}")
    return bad
