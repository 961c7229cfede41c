"""Execute notebooks in place in a fresh kernel each, so their stored outputs are current.

Usage: python scripts/execute_notebooks.py chapters/*.ipynb
"""

from __future__ import annotations

import argparse
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
    parser = argparse.ArgumentParser(description="Execute notebooks in place, each in a fresh kernel.")
    parser.add_argument("notebooks", nargs="+", type=Path, metavar="NOTEBOOK")
    parser.add_argument("--timeout", type=int, default=600, help="seconds allowed per cell (default 600)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.notebooks if not p.is_file() or p.suffix != ".ipynb"]
    if missing:
        parser.error(f"not a notebook file: {', '.join(missing)}")
    for path in args.notebooks:
        seconds = execute(path, timeout=args.timeout)
        print(f"{path}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
