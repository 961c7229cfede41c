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
