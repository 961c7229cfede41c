"""The notebook comparison is strict about stale numbers and blind to another machine's rounding.

The unit tests pin the rule of ``tests/nbval_numbers.py``; the last test proves both halves on a
real chapter: a stored value moved by 1e-6 (a stale output) fails nbval, moved by 1e-13 (another
CPU's rounding) passes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nbval_numbers import ATOL, RTOL, NumericText, same_up_to_rounding

ROOT = Path(__file__).resolve().parents[1]
FLOAT = re.compile(r"-?\d+\.\d{9,}(?:e[-+]\d+)?")


def test_tolerance_sits_between_noise_and_staleness():
    assert 1e-11 < RTOL < 1e-8
    assert ATOL <= 1e-12


@given(st.floats(min_value=1e-3, max_value=1e6), st.sampled_from([-1.0, 1.0]))
def test_rounding_noise_passes_and_stale_values_fail(x, sign):
    x *= sign
    text = f"margin {x!r} at offset 6283"
    assert same_up_to_rounding(text, f"margin {x * (1 + 1e-11)!r} at offset 6283")
    assert same_up_to_rounding(text, f"margin {x * (1 - 3e-13)!r} at offset 6283")
    assert not same_up_to_rounding(text, f"margin {x * (1 + 1e-8)!r} at offset 6283")
    assert not same_up_to_rounding(text, f"margin {x * (1 - 1e-6)!r} at offset 6283")


@pytest.mark.parametrize("left, right, same", [
    ("0.5311473215632533", "0.5311473215632534", True),            # seen on two machines
    ("85.24413124769744", "85.24413124770905", True),              # after a training run
    ("-0.31296582841735254", "-0.3129658284173526", True),         # one digit shorter
    ("3.021582983819826e-12", "3.022471162239526e-12", True),       # noise itself: below ATOL
    ("0.0", "2.220446049250313e-16", True),
    ("9.999999999999999e-06", "1e-05", True),                      # repr changes form
    ("offset 6283", "offset 6284", False),                         # integers are exact
    ("6283", "6283.00001", False),
    ("seed 3", "seed 3.0", True),
    ("accuracy 0.95", "accuracy 0.94", False),
    ("| 0.5 | yes |", "| 0.5 | no |", False),                      # text is exact
    ("[0.1 0.25]", "[0.1  0.25]", True),                           # numpy column padding
    ("a\nb", "a b", False),                                        # newlines are not padding
    ("1.0 2.0", "1.0 2.0 3.0", False),
    ("nan", "nan", True),
    ("nan", "0.0", False),
    ("float32 angles", "float16 angles", False),
])
def test_examples(left, right, same):
    assert same_up_to_rounding(left, right) is same
    assert (NumericText(left) == NumericText(right)) is same
    assert (NumericText(left) != NumericText(right)) is (not same)


def _first_stored_float(nb: dict) -> tuple[int, int, str, str]:
    """(cell index, output index, mime key, float text) of the first long float a code cell stores."""
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        for j, out in enumerate(cell.get("outputs", [])):
            for key, value in out.get("data", {}).items():
                if not key.endswith("text/plain"):
                    continue
                for token in FLOAT.findall("".join(value)):
                    if abs(float(token)) > 1e-3:
                        return i, j, key, token
    raise AssertionError("no stored float found")


def _perturbed(nb: dict, where: tuple[int, int, str, str], rel: float) -> dict:
    i, j, key, token = where
    new = json.loads(json.dumps(nb))
    new["cells"] = new["cells"][: i + 1]
    data = new["cells"][i]["outputs"][j]["data"]
    text = "".join(data[key])
    moved = repr(float(token) * (1 + rel))
    assert moved != token and abs(float(moved) / float(token) - 1) > rel / 2
    data[key] = text.replace(token, moved, 1)
    return new


def test_stale_value_fails_and_rounding_noise_passes(tmp_path):
    nb = json.loads((ROOT / "chapters" / "01_permutation_symmetry.ipynb").read_text())
    where = _first_stored_float(nb)
    stale, noisy = tmp_path / "stale.ipynb", tmp_path / "noisy.ipynb"
    stale.write_text(json.dumps(_perturbed(nb, where, 1e-6)))
    noisy.write_text(json.dumps(_perturbed(nb, where, 1e-13)))
    report = tmp_path / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
         "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg"), "-p", "tests.nbval_numbers",
         f"--junitxml={report}", "--rootdir", str(tmp_path), str(stale), str(noisy)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    failed: dict[str, int] = {"stale": 0, "noisy": 0}
    ran: dict[str, int] = {"stale": 0, "noisy": 0}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = "stale" if "stale" in (case.get("classname", "") + case.get("file", "")) else "noisy"
        ran[name] += 1
        failed[name] += any(child.tag in ("failure", "error") for child in case)
    assert ran["stale"] == ran["noisy"] == where[0] + 1 - sum(
        c["cell_type"] != "code" for c in nb["cells"][: where[0] + 1])
    assert failed == {"stale": 1, "noisy": 0}


def test_a_float32_cell_is_compared_at_float32_resolution():
    """A tagged cell's numbers pass at the measured float32 spread (1.2e-7) and fail when stale (1e-4);
    an untagged cell's fail at that spread."""
    from nbval_numbers import RTOL_FLOAT32

    stored, moved, stale = "mass 0.900086481443396", "mass 0.9000864620792335", "mass 0.9001764"
    assert NumericText(moved, RTOL_FLOAT32) == stored
    assert NumericText(stored) == NumericText(moved, RTOL_FLOAT32)
    assert NumericText(stale, RTOL_FLOAT32) != stored
    assert NumericText(moved) != stored
    assert 1.2e-7 * 4 < RTOL_FLOAT32 < 1e-5
