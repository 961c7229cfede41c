"""What ``import ropegeo`` costs, as a ratio to ``import numpy`` measured in the same run.

``import ropegeo`` loads the core only (frequencies, rotation, kernel, margins): no gate, trainer,
figure or configuration reader. Each import runs in a fresh interpreter, best of several runs;
the interpreter's own start (``python -c pass``) is subtracted from both.

Target: ``import ropegeo`` within 1.5x of ``import numpy`` (the core adds little to numpy), and
``import ropegeo.gates`` (every gate, the trainers, the configuration reader) reported beside it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.5


def best(code: str, repeat: int = 7) -> float:
    """Smallest wall time of ``python -c code`` over ``repeat`` fresh interpreters."""
    out = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
        out = min(out, time.perf_counter() - t0)
    return out


def main() -> None:
    start = best("pass")
    numpy = best("import numpy") - start
    core = best("import ropegeo") - start
    gates = best("import ropegeo.gates") - start
    print(f"import numpy          {numpy * 1e3:7.1f} ms")
    print(f"import ropegeo        {core * 1e3:7.1f} ms   {core / numpy:5.2f} x numpy (target <= {TARGET})")
    print(f"import ropegeo.gates  {gates * 1e3:7.1f} ms   {gates / numpy:5.2f} x numpy")
    if core / numpy > TARGET:
        sys.exit(f"import ropegeo takes {core / numpy:.2f} x import numpy, above the {TARGET} x target")


if __name__ == "__main__":
    main()
