"""``python -m ropegeo audit --config``: the audit of a real configuration, as text and JSON."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from ropegeo.cli import main
from ropegeo.models.manifest import model_record


def run_json(capsys, *argv):
    assert main(["audit", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_llama31_json_frequencies_by_hand(capsys):
    out = run_json(capsys, "--config", "llama-3.1-8b", "--target-length", "65536")
    theta = np.array(out["theta"])
    # the Llama-3 rule written out pair by pair from its description
    expect = []
    for i in range(64):
        t = 500_000.0 ** (-2 * i / 128)
        lam = 2 * math.pi / t
        if lam < 8192 / 4:
            expect.append(t)
        elif lam > 8192:
            expect.append(t / 8)
        else:
            g = (8192 / lam - 1) / 3
            expect.append(g * t + (1 - g) * t / 8)
    np.testing.assert_allclose(theta, expect, rtol=1e-13)
    assert out["attention_factor"] == 1.0
    assert out["train_length"] == 8192 and out["target_length"] == 65536
    assert out["manifest"]["scaling"]["rule"] == "llama3"


def test_qwen_json_attention_factor_and_default_target(capsys):
    out = run_json(capsys, "--config", "qwen2.5-7b-instruct")
    assert out["target_length"] == 4 * 32768
    assert out["attention_factor"] == pytest.approx(0.1 * math.log(4) + 1, rel=1e-15)


def test_phi_long_list_at_target(capsys):
    rec = model_record("phi-3.5-mini-instruct")["config"]["rope_scaling"]
    out = run_json(capsys, "--config", "phi-3.5-mini-instruct")
    base = 10_000.0 ** (-np.arange(0, 96, 2) / 96)
    np.testing.assert_allclose(out["theta"], base / np.array(rec["long_factor"]), rtol=1e-14)
    assert out["attention_factor"] == pytest.approx(math.sqrt(17 / 12), rel=1e-15)
    # at the original length the short list applies
    out = run_json(capsys, "--config", "phi-3.5-mini-instruct", "--target-length", "4096")
    np.testing.assert_allclose(out["theta"], base / np.array(rec["short_factor"]), rtol=1e-14)


def test_margins_and_slow_pairs_by_brute_force(capsys):
    out = run_json(capsys, "--config", "llama-2-7b", "--target-length", "16384")
    theta = 10_000.0 ** (-np.arange(64) / 64)
    # slow pairs: fewer than one turn over 4096 tokens, counted one by one
    assert out["slow_pairs"] == sum(1 for t in theta if 4096 * t < 2 * math.pi)
    assert out["slow_pairs_target"] == sum(1 for t in theta if 16384 * t < 2 * math.pi)
    # local margin: every pair of offsets 1..64, chord distance of the unit phase vectors
    best = min(
        math.sqrt(np.mean((np.cos(a * theta) - np.cos(b * theta)) ** 2 + (np.sin(a * theta) - np.sin(b * theta)) ** 2))
        for a in range(1, 65) for b in range(a + 1, 65)
    )
    local = out["margins"]["local 1..64"]
    # float32 phases generated at the far end of the context (origin 16,319): their rounding, about
    # origin * 2^-24 radians per pair, bounds the difference from the float64 brute force
    assert local["origin"] == 16384 - 1 - 64 and local["origin_rule"] == "the largest offset at the last position of the target context"
    assert local["margin"] == pytest.approx(best, abs=4 * 16384 * 2.0 ** -24)
    assert local["dtype"] == "float32"
    top = out["top_offsets"][0]
    k = np.mean(np.cos(top["offset"] * theta))
    assert top["similarity"] == pytest.approx(k, abs=1e-10)
    # brute force over the whole searched range
    offs = np.arange(out["search_range"][0], out["search_range"][1] + 1)
    sims = np.cos(np.outer(offs, theta)).mean(axis=1)
    assert top["offset"] == offs[np.argmax(sims)]


def test_table_and_path(tmp_path, capsys):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(model_record("gpt-neox-20b")["config"]))
    assert main(["audit", "--config", str(p), "--target-length", "8192"]) == 0
    text = capsys.readouterr().out
    assert "96 / 24 (12 pairs)" in text and "Gate B margin" in text and "2,048 -> 8,192" in text


def test_bad_config_exits_2_with_one_line(tmp_path, capsys):
    assert main(["audit", "--config", "no-such-model"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "neither a file nor a shipped model" in err
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 64,
                             "rope_scaling": {"type": "linear", "factor": 0}}))
    assert main(["audit", "--config", str(p)]) == 2
    err = capsys.readouterr().err
    assert "rope_scaling.factor must be greater than 0" in err and err.count("\n") == 1


def test_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "ropegeo", "audit", "--config", "mistral-7b", "--target-length", "40000",
                        "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["manifest"]["name"] == "mistralai/Mistral-7B-v0.1"


def test_plain_audit_still_defaults_to_32768(capsys):
    # a width-8 head fails Gate B (its near return), and the exit status follows the verdict
    assert main(["audit", "--head-dim", "8", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["target_length"] == 32768 and out["gate_b"]["passed"] is False


def test_top_defaults(capsys):
    assert len(run_json(capsys, "--config", "llama-3.1-8b")["top_offsets"]) == 3
    assert len(run_json(capsys, "--config", "llama-3.1-8b", "--top", "1")["top_offsets"]) == 1
    assert main(["audit", "--head-dim", "8", "--target-length", "7000", "--json"]) == 1  # Gate B fails (width 8)
    assert len(json.loads(capsys.readouterr().out)["top_offsets"]) == 1


def test_layer_type_selects_a_block(tmp_path, capsys):
    cfg = {"_name_or_path": "layered", "hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 32768,
           "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e6},
                               "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code = main(["audit", "--config", str(path), "--layer-type", "full_attention", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == (0 if out["gate_b"]["passed"] else 1)  # linear x4: the exit status follows Gate B
    assert out["manifest"]["base"] == 1e6 and out["manifest"]["scaling"]["rule"] == "linear"
    main(["audit", "--config", str(path), "--json"])  # without --layer-type: every kind, one audit each
    kinds = json.loads(capsys.readouterr().out)["layer_kinds"]
    assert [k["kind"] for k in kinds] == ["full_attention", "sliding_attention"]
    assert [k["audit"]["manifest"]["base"] for k in kinds] == [1e6, 1e4]
    assert main(["report", str(path)]) == 2  # report judges one operator: it asks for the kind
    err = capsys.readouterr().err
    assert "--layer-type" in err and err.count("\n") == 1
    assert main(["audit", "--layer-type", "full_attention"]) == 2
    assert "applies to --config only" in capsys.readouterr().err
