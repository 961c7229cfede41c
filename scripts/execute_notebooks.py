"""Execute notebooks in place in a fresh kernel each, so their stored outputs are current.

Usage: python scripts/execute_notebooks.py chapters/*.ipynb
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path, timeout: int = 600) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: execute_notebooks.py NOTEBOOK [NOTEBOOK ...]", file=sys.stderr)
        return 2
    for name in argv:
        seconds = execute(Path(name))
        print(f"{name}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
