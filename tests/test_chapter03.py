"""Chapter 3: every glued number against an independent derivation, and the chapter's structure.

The glued values are read from the executed notebook's stored outputs, so a stale or wrong
number in the rendered book fails here.
"""

import json
import math
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from glue import read_glued

NB = Path(__file__).resolve().parents[1] / "chapters" / "03_frequency_bank.ipynb"
D, B = 128, 10_000.0
THETA = [B ** (-2 * i / D) for i in range(D // 2)]
THETA8 = [B ** (-2 * i / 8) for i in range(4)]


@pytest.fixture(scope="module")
def nb():
    return json.loads(NB.read_text())


@pytest.fixture(scope="module")
def glued():
    return read_glued(NB)[0]


def K(delta, theta):
    return sum(math.cos(delta * t) for t in theta) / len(theta)


def dist(delta, theta, weights=None):
    w = [1.0] * len(theta) if weights is None else weights
    return math.sqrt(sum(wi * (2 - 2 * math.cos(delta * t)) for wi, t in zip(w, theta)) / sum(w))


def test_article_figures(glued):
    assert glued["n_pairs"] == 64
    assert round(glued["fastest_wavelength"], 2) == 6.28 and glued["fastest_wavelength"] == pytest.approx(2 * math.pi)
    assert round(glued["slowest_wavelength"]) == 54_410
    assert round(glued["fastest_turns"]) == 652 and round(glued["slowest_turns"], 3) == 0.075
    assert glued["slow_count"] == 18 == sum(4096 * t < 2 * math.pi for t in THETA)
    assert glued["first_slow_pair"] == 64 - 18
    np.testing.assert_allclose([glued[f"lam8_{j}"] for j in range(4)], [6.28, 62.8, 628, 6283], rtol=1e-3)
    assert round(glued["k6283"], 3) == 0.996 and glued["k6283"] == pytest.approx(K(6283, THETA8), abs=1e-12)
    assert glued["law8"] < 1e-9


def test_kernel_numbers(glued):
    assert glued["k1"] == pytest.approx(K(1, THETA), abs=1e-12)
    assert glued["k1_interp"] == pytest.approx(K(1 / 8, THETA), abs=1e-12)
    brute = max(range(4096, 32_769), key=lambda d: K(d, THETA))
    assert glued["far_offset"] == brute and glued["far_k"] == pytest.approx(K(brute, THETA), abs=1e-9)
    # R_6283 - I: each 2x2 block differs by cos-1 and sin; the largest entry over the four pairs
    assert glued["dist_id"] == pytest.approx(max(max(abs(math.cos(6283 * t) - 1), abs(math.sin(6283 * t))) for t in THETA8))


def test_precision_numbers(glued):
    assert glued["limit_bfloat16"] == 256 and glued["limit_float16"] == 2048 and glued["limit_float32"] == 2**24
    assert glued["collapse_bf16"] == 256 and glued["collapse_f16"] == 2048
    # the phase error at positions 200 and 4000 by a direct computation in each format
    def worst_error(pos, t):
        err = 0.0
        for th in THETA:
            a = t(t(pos) * t(th))
            gen = math.atan2(float(t(np.sin(a))), float(t(np.cos(a))))
            err = max(err, abs((gen - pos * th + math.pi) % (2 * math.pi) - math.pi))
        return err

    for pos in (200, 4000):
        assert glued[f"err{pos}_bf16"] == pytest.approx(worst_error(pos, ml_dtypes.bfloat16), abs=1e-12)
        assert glued[f"err{pos}_f32"] == pytest.approx(worst_error(pos, np.float32), abs=2e-7)
    # the prose: bfloat16 is already visibly off at 200, below both collapse points, and far off at 4000
    assert 200 < glued["collapse_bf16"] and glued["err200_bf16"] > 0.1 and glued["err4000_bf16"] > 1
    assert glued["err200_f32"] < 1e-4 and glued["err4000_f32"] < 1e-3
    assert glued["step_float16"] == 16 and glued["step_bfloat16"] == 128
    # independent: the spacing of the stored values between 16,384 and 32,768, read off the formats
    for t, step in ((np.float16, glued["step_float16"]), (ml_dtypes.bfloat16, glued["step_bfloat16"])):
        values = np.unique(np.arange(16_384, 32_768, dtype=np.float64).astype(t).astype(np.float64))
        assert set(np.diff(values)) == {step}


def test_gate_b_numbers(glued):
    assert glued["parser_float64"] == pytest.approx(dist(1, THETA), rel=1e-9)
    assert glued["parser_float32"] == pytest.approx(dist(1, THETA), abs=1e-3)
    assert glued["parser_float16"] == 0 and glued["parser_bfloat16"] == 0
    # "all three positions are stored as 32,768": cast each one in both formats
    for t in (np.float16, ml_dtypes.bfloat16):
        assert {float(t(32_764 + j)) for j in (1, 2, 3)} == {glued["parser_stored"]} == {32_768.0}
    # under the retrieval deployment (bfloat16, scale 1/8) the same collapse happens before scaling
    assert glued["parser_deployed"] == 0
    # offsets 1..3 at scale 1/8 from the start: the largest distance is offsets 1 and 3, 2/8 apart
    assert glued["short_block"] == pytest.approx(dist(2 / 8, THETA), abs=2e-3)
    assert glued["parser_interp"] == pytest.approx(dist(1 / 8, THETA), abs=1e-3)
    assert glued["retr_margin"] == pytest.approx(dist(16_000 / 8, THETA), abs=0.05)
    assert 0.5 < glued["grid_margin"] < 1.5 and glued["grid_b"] - glued["grid_a"] == 512
    # fast band: a brute-force search over offsets 1..4096 with four pairs
    best = min(range(1, 4097), key=lambda d: dist(d, THETA[:4]))
    assert glued["fast_offset"] == best
    assert glued["d_fast"] == pytest.approx(dist(best, THETA[:4]), abs=1e-12)
    assert glued["band0_margin"] == pytest.approx(glued["d_fast"], abs=1e-12)
    assert glued["d_equal"] == pytest.approx(dist(best, THETA), abs=1e-12)


def test_probe_numbers(glued):
    # most confusable pair of 1..8191 at head dim 8, by differences 1..8190
    best = min(range(1, 8191), key=lambda d: dist(d, THETA8))
    assert glued["small_b"] - glued["small_a"] == best == 6283
    assert glued["small_margin"] == pytest.approx(dist(best, THETA8), abs=1e-12)

    def mass(d, beta=8.0):
        return 1 / (1 + math.exp(-beta * d * d / 2))

    assert glued["mass_pair"] == pytest.approx(mass(dist(best, THETA8)), abs=1e-9)
    assert glued["mass_control"] == pytest.approx(mass(dist(3141, THETA8)), abs=1e-9)
    assert glued["mass_shift"] == pytest.approx(glued["mass_pair"], abs=1e-9)
    assert glued["mass_f32"] == pytest.approx(mass(dist(1, THETA), 100.0), abs=2e-3)
    assert glued["mass_bf16"] == 0.5
    w = [1.0] * 4 + [0.0] * 60
    assert glued["mass_fast"] == pytest.approx(mass(dist(glued["fast_offset"], THETA, w)), abs=1e-9)
    assert glued["mass_equal"] == pytest.approx(mass(dist(glued["fast_offset"], THETA)), abs=1e-9)
    assert glued["sweep_gap"] < 1e-9


def test_structure(nb):
    cells = nb["cells"]
    assert cells[0]["cell_type"] == "markdown" and "What you will be able to do" in "".join(cells[0]["source"])
    assert "hide-cell" in cells[1]["metadata"].get("tags", [])
    src = ["".join(c["source"]) for c in cells]
    labels = [s.split(":label: ")[1].split()[0] for s in src if s.startswith("```{exercise}")]
    assert len(labels) >= 4 and all(lab.startswith("ch03-") for lab in labels)
    for lab in labels:
        assert any(s.startswith("```{solution-start} " + lab) for s in src)
    # every glue reference in the prose was glued by a cell
    glued_names = {o["metadata"]["scrapbook"]["name"] for c in cells for o in c.get("outputs", [])
                   if o.get("metadata", {}).get("scrapbook")}
    used = set(re.findall(r"\{glue:text\}`([a-zA-Z0-9_]+)", "\n".join(src)))
    assert used <= glued_names, used - glued_names
    assert not any(o.get("output_type") == "error" for c in cells for o in c.get("outputs", []))
