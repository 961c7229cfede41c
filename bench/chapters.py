"""How long each chapter took the last time its outputs were stored, against the one-minute target.

A chapter runs twice in `make test` (nbval, then the book build), so each should execute in well
under a minute. This reads the execution stamps that `make notebooks` stores in every cell's
metadata; it runs nothing itself.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

TARGET_SECONDS = 60.0


def stored_seconds(path: Path) -> float:
    stamps = []
    for cell in json.loads(path.read_text())["cells"]:
        ex = cell.get("metadata", {}).get("execution", {})
        stamps += [datetime.fromisoformat(ex[k].replace("Z", "+00:00"))
                   for k in ("iopub.execute_input", "shell.execute_reply") if k in ex]
    return (max(stamps) - min(stamps)).total_seconds() if stamps else float("nan")


def main() -> None:
    for path in sorted(Path(__file__).resolve().parents[1].glob("chapters/*.ipynb")):
        s = stored_seconds(path)
        print(f"{path.name:<32} {s:6.1f} s   {s / TARGET_SECONDS:5.2f} of the {TARGET_SECONDS:.0f} s target")


if __name__ == "__main__":
    main()
