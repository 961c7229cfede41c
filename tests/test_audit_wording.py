"""What the reports say: the audit's header names the context it judges, Gate B's default origin says
where it is, and the gate-a table says how to read a row (and a tolerance of 0)."""

from __future__ import annotations

import re

import numpy as np

from ropegeo.gates.procedure import geometry_audit
from ropegeo.cli import main
from ropegeo.gates.b.rule import ORIGIN_RULE
from ropegeo.models.manifest import RopeManifest, load_model


def header_value(table: str, label: str) -> str:
    line = next(l for l in table.splitlines() if l.startswith(label))
    return line[len(label):].strip()


def test_the_header_names_the_audited_context_beside_the_manifests_own():
    r = geometry_audit(head_dim=128, train_length=4096, target_length=32768)
    served = header_value(r.table(), "context: served (target)")
    assert served.startswith("32,768 ") and "the manifest alone: 4,096" in served
    # the same number as the row below the separator: no contradiction left
    assert header_value(r.table(), "train -> target length") == "4,096 -> 32,768"
    own = geometry_audit(load_model("llama-3.1-8b"), top=1)
    assert header_value(own.table(), "context: served (target)") == "131,072 (this audit's target length)"
    shorter = geometry_audit(load_model("llama-3.1-8b"), target_length=65536, top=1)
    assert "65,536" in header_value(shorter.table(), "context: served (target)")
    assert "the manifest alone: 131,072" in shorter.table()
    # the table's columns stay aligned: the value starts where the other rows' values start
    lines = r.manifest.table().splitlines()
    column = len(lines[0]) - len(lines[0].split("  ")[-1].lstrip())
    row = next(l for l in r.table().splitlines() if l.startswith("context: served"))
    assert row[column - 1] == " " and row[column] == "3"


def test_the_default_origin_puts_the_largest_offset_on_the_last_position():
    r = geometry_audit(head_dim=128, train_length=4096, target_length=32768)
    for s in r.gate_b.sets:
        assert s["origin_rule"] == ORIGIN_RULE
        # independent check: origin + largest offset of the set is the context's last position
        largest = int(re.findall(r"\d[\d,]*", s["name"])[-1].replace(",", ""))
        assert s["origin"] + largest == 32768 - 1
    distant = r.gate_b.sets[-1]
    assert distant["origin"] == 0  # a set spanning the whole context starts at 0: not "the far end"
    assert "origin 0 (the largest offset at the last position of the target context)" in r.table()
    assert "far end" not in r.table()


def test_gate_b_with_a_given_origin_says_given():
    from ropegeo.gates.procedure import audit

    m = RopeManifest(head_dim=8, max_position_embeddings=64)
    r = audit(lambda x, p: x, manifest=m, offsets=[1, 2, 3], origin=10, target_length=512)
    assert {s["origin_rule"] for s in r.gate_b.sets} == {"given"}


def test_gate_a_table_explains_its_rows_and_a_zero_tolerance(capsys):
    assert main(["gate-a", "ropegeo.examples.rope:llama2", "--head-dim", "64", "--pairing", "half", "--timeout", "120"]) == 0
    out = capsys.readouterr().out
    rows = [l for l in out.splitlines() if re.match(r"\s+layout\s+pass\s", l)]
    assert rows and "(tol 0.0e+00)" in rows[0]
    legend = next(l for l in out.splitlines() if l.strip().startswith("(each row:"))
    assert "tolerance" in legend and "tol 0 marks an exact check (layout" in legend
    # the legend comes after the rows it explains, before the diagnosis
    lines = out.splitlines()
    assert lines.index(rows[0]) < lines.index(legend) < lines.index("diagnosis:")


def test_gate_a_legend_is_absent_from_the_library_table():
    from ropegeo.gates.a.gate import gate_a
    from ropegeo.rotation import apply_rope

    r = gate_a(lambda x, p: apply_rope(x, p, pairing="half"), head_dim=16, pairing="half", max_position=4096)
    assert "(each row:" not in r.table() and "(each row:" in r.table(legend=True)
    assert np.isfinite(r.seconds)
