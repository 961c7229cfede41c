"""Gate A names the defect class of every implementation in ropegeo.book.broken.DEFECTS, passes correct
code served in low precision, separates data rounding from angle error, and probes the whole
declared context (independent derivations: ml_dtypes rounding, hand-built tables)."""

import math
import re

import ml_dtypes
import numpy as np
import pytest

from ropegeo.book.broken import DEFECTS, PositionDefect, ServedRotary, defect_entry, entry
from ropegeo.gates.verdicts import DEFECT_CLASSES, Check, verdict
from ropegeo.gates.a.gate import CHECKS, gate_a
from ropegeo.rotation import apply_rope

BROKEN = [n for n, e in DEFECTS.items() if e.broken]
CORRECT = [n for n, e in DEFECTS.items() if not e.broken]


def test_the_catalogue_covers_every_defect_class():
    named = {DEFECTS[n].defect for n in BROKEN}
    assert named == set(DEFECT_CLASSES)
    assert {"served-bfloat16", "served-float16"} <= set(CORRECT)


@pytest.mark.parametrize("name", BROKEN)
@pytest.mark.parametrize("head_dim", [16, 64])
def test_every_defect_is_named_with_its_class(name, head_dim):
    e = defect_entry(name, head_dim)
    r = gate_a(e.impl, **e.declared)
    assert r.failed[0] == e.check, r.table()
    assert r.defects[0] == e.defect and r.check(e.check).defect == e.defect
    assert e.keyword in r.diagnosis, r.diagnosis
    assert r.diagnosis.startswith(f"{e.defect} defect") or e.defect in ("decoding", "contract")


@pytest.mark.parametrize("name", CORRECT)
@pytest.mark.parametrize("head_dim", [16, 64])
def test_correct_code_served_in_low_precision_passes(name, head_dim):
    e = defect_entry(name, head_dim)
    r = gate_a(e.impl, **e.declared)
    assert r.passed, r.table()
    assert r.inferred["data_dtype"] == name.split("-")[1]


# ---------------------------------------------------------------- data rounding vs angle error
def _bf16_round_trip(y):
    """What a framework serving bfloat16 does to a float64 result: round each entry to 8 bits."""
    return np.asarray(y, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)


def test_bfloat16_rounding_returned_as_float64_is_a_precision_finding_not_a_licence():
    # the audited code never sets its own tolerance: judged at the float64 it returns, the bfloat16
    # rounding inside is named (precision), and declaring bfloat16 is what makes it pass
    f = lambda x, p: _bf16_round_trip(apply_rope(x, p, pairing="half"))  # noqa: E731
    r = gate_a(f, head_dim=64, pairing="half")
    assert r.failed[0] == "precision" and r.defects[0] == "precision", r.table()
    assert r.inferred["data_dtype"] == "float64" and r.inferred["data_dtype_source"] == "returned arrays"
    assert r.inferred["data_rounding"]["dtype"] == "bfloat16" and "rounds as bfloat16" in r.diagnosis
    # the orthogonality defect of R(p) is a few bfloat16 unit roundoffs (2**-8), no more
    u = float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps) / 2
    assert u / 16 < r.inferred["orthogonality_error"] < 8 * u
    assert gate_a(f, head_dim=64, pairing="half", dtype="bfloat16").passed


def _scaled_table(factor, dtype=np.float64):
    """Correct float64 rotary code whose cos and sin carry a stray factor (the issue's 1.01)."""
    def f(x, positions):
        x = np.asarray(x, dtype=dtype)
        d = x.shape[-1]
        ang = np.asarray(positions, dtype=float)[..., None] * 10_000.0 ** (-np.arange(0, d, 2) / d)
        c, s = np.cos(ang) * factor, np.sin(ang) * factor
        out = x.copy()
        out[..., 0::2], out[..., 1::2] = x[..., 0::2] * c - x[..., 1::2] * s, x[..., 0::2] * s + x[..., 1::2] * c
        return out
    return f


@pytest.mark.parametrize("factor", [1.01, 1.001, 0.99])
def test_a_stray_factor_on_cos_and_sin_fails_at_the_returned_dtype(factor):
    # before: "data rounding: bfloat16 (from the measured rounding)" and a pass at 1.01
    r = gate_a(_scaled_table(factor), head_dim=64)
    assert r.failed[0] == "norm" and r.defects[0] == "magnitude", r.table()
    assert r.inferred["data_dtype"] == "float64" and "data_rounding" not in r.inferred
    assert abs(r.inferred["norm_scale"] - factor) < 1e-9


def test_the_same_code_without_the_factor_passes():
    # the control: the reproduction itself is correct rotary code
    r = gate_a(_scaled_table(1.0), head_dim=64)
    assert r.passed and "data_rounding" not in r.inferred, r.table()


def test_declared_data_dtype_overrides_the_inference():
    f = lambda x, p: _bf16_round_trip(apply_rope(x, p))  # noqa: E731
    assert not gate_a(f, head_dim=32, dtype="float32").passed
    assert gate_a(f, head_dim=32, dtype="bfloat16").passed


def test_angle_error_grows_with_position_while_data_rounding_stays_flat():
    # bfloat16 angles: the diagnosis quotes the error at three positions, growing
    r = gate_a(defect_entry("bfloat16-angles", 64).impl, head_dim=64)
    text = r.check("precision").diagnosis
    found = re.findall(r"([0-9.e+-]+) rad at position ([0-9,]+)", text)
    errs = [float(e) for e, _ in found]
    positions = [int(p.replace(",", "")) for _, p in found]
    assert len(errs) == 3 and positions == sorted(positions) and errs[0] < errs[1] < errs[2]
    # served in bfloat16 with float32 angles: the angle error is below what the data can show
    r = gate_a(defect_entry("served-bfloat16", 64).impl, head_dim=64, pairing="half")
    assert r.check("precision").passed and r.inferred["relative_phase_error"] < 1e-5


def test_bfloat16_angles_are_still_a_failure_when_the_data_is_bfloat16():
    # low-precision data does not excuse a low-precision angle table
    f = lambda x, p: _bf16_round_trip(apply_rope(x, p, phase_dtype="bfloat16"))  # noqa: E731
    r = gate_a(f, head_dim=64)
    assert r.failed[0] == "precision" and "formed in bfloat16" in r.diagnosis


# ---------------------------------------------------------------- the whole declared context
@pytest.mark.parametrize("rows", [4096, 8192, 32768])
def test_wrapped_tables_of_common_sizes_fail_even_when_negative_positions_are_refused(rows):
    # the false PASS: a table that wraps, in code that refuses negative positions
    d = 32
    inv = 10_000.0 ** (-np.arange(0, d, 2) / d)
    table = np.arange(rows)[:, None] * inv[None, :]  # the angle table, built here by hand

    def f(x, positions):
        positions = np.asarray(positions)
        if np.any(positions < 0):
            raise ValueError("positions must be non-negative")
        ang = table[positions % rows]
        x = np.asarray(x, dtype=float)
        out = x.copy()
        out[..., 0::2] = x[..., 0::2] * np.cos(ang) - x[..., 1::2] * np.sin(ang)
        out[..., 1::2] = x[..., 0::2] * np.sin(ang) + x[..., 1::2] * np.cos(ang)
        return out

    r = gate_a(f, head_dim=d)
    assert r.failed == ["context"], r.table()
    assert f"P mod {rows:,}" in r.diagnosis
    assert r.check("inverse").passed is None  # refused negatives stay "not measured"
    assert gate_a(f, head_dim=d, max_position=rows).passed  # declared honestly, it passes


def test_probes_avoid_powers_of_two_and_reach_the_declared_context():
    from ropegeo.gates.a.read import probe_positions

    for m in (2048, 8192, 131_072, 1_000_000):
        ps = probe_positions(m)
        assert ps and max(ps) < m and max(ps) > 0.9 * m
        assert all(p & (p - 1) and p % 100 for p in ps)


def test_max_position_comes_from_the_manifest():
    from ropegeo.models.manifest import RopeManifest

    m = RopeManifest(head_dim=32, max_position_embeddings=4096, phase_dtype="float32")
    assert gate_a(PositionDefect(32, mode="wrapped", size=4096), manifest=m).passed
    r = gate_a(PositionDefect(32, mode="wrapped", size=4096), manifest=m.with_(max_position_embeddings=16_384))
    assert r.failed == ["context"] and r.declared["max_position"] == 16_384


def test_batched_positions_whose_rows_differ():
    assert gate_a(lambda x, p: apply_rope(x, p), head_dim=16).check("batch").passed
    r = gate_a(PositionDefect(16, mode="first-row"), head_dim=16)
    assert r.failed == ["batch"]

    def one_d_only(x, p):
        if np.ndim(p) != 1:
            raise ValueError("positions must be 1-D")
        return apply_rope(x, p)

    r = gate_a(one_d_only, head_dim=16)
    assert r.check("batch").passed is None and "batch" in r.diagnosis  # listed as not measured


# ---------------------------------------------------------------- structure
def test_a_skipped_check_never_reads_as_every_check_passed():
    r = gate_a(lambda x, p: apply_rope(x, p), head_dim=16)
    assert r.passed and r.diagnosis != "every check passed"
    assert r.diagnosis == "every measured check passed; not measured: roles, values, decoding"
    assert verdict([Check("a", True, 0.0, 1.0, "")]) == "every check passed"


def test_each_check_has_its_own_random_stream():
    # the vectors a check draws do not depend on whether the checks before it ran: the
    # shift violation of a plain callable equals that of the same callable with a role keyword
    # (which runs two extra checks before shift)
    plain = gate_a(lambda x, p: apply_rope(x, p), head_dim=16)

    def with_role(x, p, role="key"):
        return np.asarray(x, dtype=float) if role == "value" else apply_rope(x, p)

    rich = gate_a(with_role, head_dim=16)
    for name in ("norm", "composition", "inverse", "context", "origin"):
        assert plain.check(name).violation == rich.check(name).violation, name


def test_attention_factor_is_divided_out_when_declared():
    f = lambda x, p: 1.1 * apply_rope(x, p)  # noqa: E731
    assert gate_a(f, head_dim=16).failed[0] == "norm"
    assert gate_a(f, head_dim=16, attention_factor=1.1).passed


def test_checks_table_and_record():
    assert list(CHECKS)[:6] == ["layout", "frequencies", "precision", "origin", "context", "batch"]
    c = Check.skipped("x", "why")
    assert c.to_dict()["violation"] is None and Check.from_dict(c.to_dict()).passed is None
    assert math.isnan(Check.from_dict(c.to_dict()).violation)


@pytest.mark.parametrize("kwargs,message", [
    (dict(max_position=8), "max_position must be at least 16"),
    (dict(dtype="int8"), "dtype must be one of"),
    (dict(attention_factor=0.0), "attention_factor must be greater than 0"),
    (dict(target_length=4096), "target_length applies with a manifest"),
])
def test_bad_new_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gate_a(lambda x, p: apply_rope(x, p), head_dim=8, **kwargs)


def test_served_rotary_against_a_hand_rotation():
    # half-split pairs, angles in float32, everything rounded to bfloat16: matches a direct loop
    d, p = 8, 37
    x = np.random.default_rng(0).normal(size=d)
    got = ServedRotary(d, pairing="half", data_dtype="bfloat16")(x[None], [p])[0].astype(np.float64)
    bf = lambda a: np.float64(np.float32(a).astype(ml_dtypes.bfloat16))  # noqa: E731
    want = np.empty(d)
    for i in range(d // 2):
        ang = np.float32(p) * np.float32(10_000.0 ** (-2 * i / d))
        c, s = bf(np.cos(ang)), bf(np.sin(ang))
        a, b = bf(x[i]), bf(x[i + d // 2])
        want[i], want[i + d // 2] = bf(bf(a * c) - bf(b * s)), bf(bf(a * s) + bf(b * c))
    assert np.allclose(got, want, rtol=2**-7, atol=2**-7)


def test_a_declared_attention_factor_is_required_where_it_is_declared():
    # declared on cos and sin (the default, as transformers applies YaRN's and LongRoPE's factor):
    # a rotation that leaves it out fails as magnitude, and the diagnosis says how to declare it
    # in the softmax instead
    r = gate_a(lambda x, p: apply_rope(x, p), head_dim=16, attention_factor=1.2)
    assert r.failed[0] == "norm" and r.defects[0] == "magnitude", r.table()
    assert r.inferred["attention_factor_applied"] is False
    assert "1.2 is missing" in r.diagnosis and "attention_factor_in='softmax'" in r.diagnosis
    r = gate_a(lambda x, p: 1.2 * apply_rope(x, p), head_dim=16, attention_factor=1.2)
    assert r.passed and r.inferred["attention_factor_applied"] is True
    assert gate_a(lambda x, p: 1.5 * apply_rope(x, p), head_dim=16, attention_factor=1.2).failed[0] == "norm"
    # declared in the softmax: the rotation must keep unit length, and a note says what the attention owes
    r = gate_a(lambda x, p: apply_rope(x, p), head_dim=16, attention_factor=1.2, attention_factor_in="softmax")
    assert r.passed and any("multiply its logits by 1.44" in n for n in r.notes), r.table()
    twice = gate_a(lambda x, p: 1.2 * apply_rope(x, p), head_dim=16, attention_factor=1.2, attention_factor_in="softmax")
    assert twice.failed[0] == "norm" and "counts twice" in twice.diagnosis, twice.table()
    with pytest.raises(ValueError, match="attention_factor_in must be one of rotation, softmax"):
        gate_a(lambda x, p: apply_rope(x, p), head_dim=16, attention_factor_in="logits")


@pytest.mark.parametrize("context", [16, 64, 500])
def test_short_declared_contexts_are_read_inside_them(context):
    # a table of 64 rows: fine for a context of 16 or 64, a refusal inside a context of 500
    def table_64(x, p):
        p = np.asarray(p)
        if p.max() >= 64 or p.min() < 0:
            raise IndexError("table of 64 rows")
        return apply_rope(x, p)

    r = gate_a(table_64, head_dim=16, max_position=context)
    if context <= 64:
        assert r.passed and r.check("layout").passed and r.check("batch").passed, r.table()
    else:
        assert r.failed == ["context"] and "refuses positions from 64 on" in r.diagnosis


# ---------------------------------------------------------------- issue 35: diagnoses that name the defect
def test_a_bfloat16_table_on_float32_data_is_named_without_contradiction():
    # before: led by "magnitude: an attention factor of 1.00004", the table called "float16", the
    # error said to grow with position while it did not
    e = defect_entry("bfloat16-table-float32-data", 64)
    r = gate_a(e.impl, **e.declared)
    assert r.failed == ["precision"] and r.defects == ["precision"], r.table()
    assert "magnitude" not in r.diagnosis and "float16" not in r.diagnosis.replace("bfloat16", "")
    assert "grows with position" not in r.diagnosis
    # the controls: declared as served in bfloat16, the same table is correct; an angle table formed
    # in bfloat16 is still said to grow with position, as its quoted errors do
    assert gate_a(e.impl, **e.declared, dtype="bfloat16").passed
    angles_ = gate_a(defect_entry("bfloat16-angles", 64).impl, head_dim=64)
    assert "The error grows with position" in angles_.check("precision").diagnosis


def test_a_sign_flip_on_odd_pairs_is_a_convention_defect_not_a_schedule():
    r = gate_a(defect_entry("odd-pairs-mirrored", 64).impl, head_dim=64, pairing="half")
    assert r.defects == ["convention"] and "16 of 32" in r.diagnosis, r.table()
    assert "times the declared one" not in r.diagnosis
    # the control: every pair mirrored is still the mirrored convention, named as before
    whole = gate_a(defect_entry("mirrored", 64).impl, head_dim=64, pairing="half")
    assert "every pair rotates the opposite way" in whole.diagnosis


def test_pairs_that_never_turn_are_named_as_declared_pairs_not_an_irregular_layout():
    r = gate_a(defect_entry("pairs-never-turn", 64).impl, head_dim=64, pairing="half")
    assert r.failed[0] == "layout" and "declared pairs 24..31 (8 of 32) never turn" in r.diagnosis, r.table()
    assert "irregular" not in r.diagnosis and "wrong end" not in r.diagnosis
    # the controls: a declared partial rotary passes; a slice from the wrong end is still named so
    for name, verdict_ in (("partial", True), ("missliced-partial", False)):
        e = entry(name, 64)
        assert gate_a(e.impl, **e.declared).passed is verdict_
    e = entry("missliced-partial", 64)
    assert "wrong end of the head" in gate_a(e.impl, **e.declared).diagnosis


@pytest.mark.parametrize("rows", [2048, 1024, 512])
def test_clamped_tables_below_the_probes_are_named_clamps_not_wraps(rows):
    # before: "P mod 64,000", "P mod 16,000", "not a geometric schedule" under the default probes
    r = gate_a(PositionDefect(32, mode="clamped", size=rows), head_dim=32)
    assert r.failed[0] == "context" and f"table of {rows:,} rows indexed with a clamp" in r.diagnosis, r.table()
    assert " mod " not in r.diagnosis
    # the control: the same size wrapped is still named a wrap
    w = gate_a(PositionDefect(32, mode="wrapped", size=rows), head_dim=32)
    assert f"P mod {rows:,}" in w.diagnosis, w.table()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_inv_freq_rounded_to_a_low_precision_dtype_is_named(dtype):
    d = 64
    r = gate_a(defect_entry(f"{dtype}-inv-freq", d).impl, head_dim=d, pairing="half")
    assert r.failed == ["frequencies"] and f"rounded to {dtype}" in r.diagnosis, r.table()
    assert "geometric schedule" not in r.diagnosis and "times the declared one" not in r.diagnosis
    # the largest relative step error quoted, against ml_dtypes' rounding of the declared steps
    fmt = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[dtype]
    ref = 10_000.0 ** (-np.arange(0, d, 2) / d)
    want = float(np.max(np.abs(ref.astype(np.float32).astype(fmt).astype(float) - ref) / ref))
    quoted = float(re.search(r"turns up to ([0-9.e+-]+) too fast", r.diagnosis).group(1))
    assert quoted == pytest.approx(want, rel=0.06)
    # the control: the same code with inv_freq kept in float32 passes
    assert gate_a(ServedRotary(d, pairing="half", data_dtype="float32"), head_dim=d, pairing="half").passed


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_transformers_buffer_cast_is_named_in_its_serving_dtype(dtype, head_dim):
    # chapters 3 and 5's path (ropegeo.precision.buffer_cast): inv_freq cast with the model, angles in
    # float32, cos, sin and vectors in the model dtype; before: "not a geometric schedule" or a pair's step
    f = ServedRotary(head_dim, pairing="half", data_dtype=dtype, inv_freq_dtype=dtype)
    r = gate_a(f, head_dim=head_dim, pairing="half")
    assert r.failed[0] == "frequencies" and f"rounded to {dtype}" in r.diagnosis, r.table()
    # the control: loaded in that dtype (inv_freq computed in float32), the same module passes
    assert gate_a(ServedRotary(head_dim, pairing="half", data_dtype=dtype), head_dim=head_dim, pairing="half").passed


# ---------------------------------------------------------------- issue 35: the algebra, the contract, the axes
@pytest.mark.parametrize("head_dim", [16, 64])
def test_the_algebraic_checks_each_lead_on_their_positive_and_pass_its_control(head_dim):
    from ropegeo.book.broken import BatchedCache, LognQueries, Rotary

    d = head_dim
    cases = [  # (broken, the same code where its defect cannot reach the probes, the check, its class)
        (LognQueries(d), LognQueries(d, length=2**20), "shift", "algebra"),  # no query past the length
        (PositionDefect(d, mode="stale-block", size=1700), PositionDefect(d, mode="stale-block", size=2**20),
         "composition", "algebra"),
        (PositionDefect(d, mode="nonnegative"), None, "inverse", "algebra"),  # its control: below
        (BatchedCache(d), Rotary(d), "values", "contract"),
    ]
    for bad_impl, control, check, cls in cases:
        r = gate_a(bad_impl, head_dim=d)
        assert r.failed[0] == check and r.defects == [cls] and r.check(check).defect == cls, r.table()
        if cls == "algebra":  # nothing before the algebraic check sees it
            assert r.failed == [check], r.table()
        if control is not None:
            ok = gate_a(control, head_dim=d)
            assert ok.passed, ok.table()
    # negative ids clamped: the control is the refusal, which leaves inverse not measured (never a pass)
    def refuses_negatives(x, p):
        if np.min(p) < 0:
            raise ValueError("positions must be non-negative")
        return apply_rope(x, p)
    r = gate_a(refuses_negatives, head_dim=d)
    assert r.passed and r.check("inverse").passed is None
    assert gate_a(Rotary(d), head_dim=d).check("inverse").passed is True


def test_algebra_is_named_only_when_no_specific_class_explains_the_failure():
    # a query-only scaling breaks shift invariance too, but the report names roles, not algebra
    e = defect_entry("scaled-queries", 16)
    r = gate_a(e.impl, **e.declared)
    assert "shift" in r.failed and r.check("shift").defect == "algebra", r.table()
    assert r.defects == ["roles"]
    r = gate_a(defect_entry("logn-queries", 16).impl, head_dim=16)
    assert r.defects == ["algebra"] and r.diagnosis.startswith("algebra defect")


def test_logn_queries_against_qwens_list():
    # Qwen-7B: logn_list = [log(i, seq_length) if i > seq_length else 1 for i in range(1, 32768)], position i - 1
    from ropegeo.book.broken import LognQueries, Rotary

    f, ref = LognQueries(8, length=64), Rotary(8)
    x = np.random.default_rng(0).normal(size=(100, 8))
    p = np.arange(100)
    want = [math.log(i, 64) if i > 64 else 1.0 for i in range(1, 101)]
    got = np.linalg.norm(f(x, p, role="query"), axis=1) / np.linalg.norm(ref(x, p, role="query"), axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(f(x, p, role="key"), ref(x, p, role="key"), rtol=0, atol=0)


def _mrope(angle_of, d=128, base=1e6):
    """A half-split M-RoPE in float64 whose pair angles are ``angle_of(pos, theta)`` (pos: (3, ..., seq))."""
    theta = base ** (-np.arange(0, d, 2) / d)

    def f(x, positions):
        x = np.asarray(x, dtype=np.float64)
        pos = np.asarray(positions)
        pos = np.broadcast_to(pos, (3, *x.shape[:-1])) if pos.shape == x.shape[:-1] else pos
        ang = angle_of(pos.astype(np.float64), theta)
        c, s_ = np.cos(ang), np.sin(ang)
        h = d // 2
        return np.concatenate([x[..., :h] * c - x[..., h:] * s_, x[..., :h] * s_ + x[..., h:] * c], axis=-1)
    return f


SECTIONS = (16, 24, 24)
MROPE = dict(head_dim=128, base=1e6, pairing="half", max_position=32_768, mrope_section=SECTIONS)


def _own(pos, pairs=None):
    from ropegeo.gates.a.axes import axis_layout

    decl = axis_layout(SECTIONS, False, 64) if pairs is None else pairs
    return np.moveaxis(pos[decl], 0, -1)  # (..., seq, pairs): each pair's own axis id


@pytest.mark.parametrize("stepwise", [False, True])
def test_axis_bands_leads_on_the_text_fast_path_and_passes_its_control(stepwise):
    from ropegeo.book.broken_axes import axes_entry

    e = axes_entry("text-fast-path", stepwise=stepwise)
    r = gate_a(e.impl, **e.declared)
    assert r.failed == ["axis-bands"] and r.defects == ["layout"] and r.finding is None, r.table()
    assert all(r.check(c).passed for c in ("sections", "interleave", "axis-blind"))
    ok = axes_entry("qwen2-vl", stepwise=stepwise)
    assert gate_a(ok.impl, **ok.declared).passed


def test_additive_code_with_wrong_band_frequencies_fails_on_text_positions_first():
    # the same per-section schedules without the fast path: the angles are a sum of per-axis terms, so
    # text positions (the three ids equal) show the wrong frequencies before axis-bands can
    per_section = np.concatenate([1e6 ** (-np.arange(s) / s) for s in SECTIONS])
    r = gate_a(_mrope(lambda pos, th: _own(pos) * per_section), **MROPE)
    assert r.failed[0] == "frequencies" and r.check("axis-bands").passed is False, r.table()
    assert r.check("sections").passed and r.check("axis-blind").passed  # each pair follows its own axis


@pytest.mark.parametrize("pairs,other", [([40], 1), (list(range(40, 64)), 0), ([3, 5], 2), (list(range(16, 40)), 2)])
def test_axis_blind_fails_only_where_the_layout_reading_fails_first(pairs, other):
    # pairs that read the mean of their own axis's id and another's: right on text positions (the ids
    # equal), half speed along their own axis, and turning with the other axis's ids. axis-blind reads
    # the single-axis probes the layout reading reads, at the same tolerance: a pair it sees turn with
    # another axis is read as following several axes, so sections fails first (every pair turns visibly)
    def angle(pos, th):
        own = _own(pos)
        own[..., pairs] = (own[..., pairs] + pos[other][..., None]) / 2
        return own * th
    r = gate_a(_mrope(angle), **MROPE)
    assert all(r.check(c).passed for c in ("layout", "frequencies", "context", "shift")), r.table()
    assert r.check("axis-blind").passed is False
    assert r.failed[0] == "sections" and r.finding == "several-axes", r.table()


def test_axis_blind_never_leads_the_catalogue():
    from ropegeo.book.broken_axes import AXES_BANDS_DEFECTS, AXES_CORRECT, AXES_DEFECTS, axes_entry

    for name in (*AXES_CORRECT, *AXES_DEFECTS, *AXES_BANDS_DEFECTS):
        r = gate_a(axes_entry(name).impl, **axes_entry(name).declared)
        if r.check("axis-blind").passed is False:
            assert {"sections", "interleave"} & set(r.failed[:r.failed.index("axis-blind")]), (name, r.table())


class _RulerCache:
    """A correct half-split cache whose decode_step rotates the new query (and key) with frequencies
    ``query_theta(position)``: a labelled control for how Gate A names the query's ruler."""

    def __init__(self, query_theta, head_dim=64):
        self.query_theta, self.d = query_theta, head_dim
        self.keys = self.values = np.zeros((0, head_dim))

    def __call__(self, x, positions, role="query"):
        return np.array(x, dtype=float) if role == "value" else apply_rope(x, positions, pairing="half")

    def prefill(self, keys, values):
        self.keys, self.values = self(keys, np.arange(len(keys)), "key"), np.array(values, dtype=float)

    def decode_step(self, query, key, value):
        from ropegeo.frequencies import frequencies
        p = len(self.keys)
        th = self.query_theta(p, frequencies(self.d, 10_000.0))
        rot = lambda x: apply_rope(x[None], [p], theta=th, pairing="half")[0]
        self.keys, self.values = np.vstack([self.keys, rot(key)]), np.vstack([self.values, value])
        return rot(query), self.keys.copy(), self.values.copy()


def _decoding_diagnosis(query_theta):
    r = gate_a(_RulerCache(query_theta), head_dim=64, pairing="half")
    assert r.defects == ["decoding"], r.table()
    return r.diagnosis


def test_decoding_names_a_uniform_scale_as_one_factor():
    text = _decoding_diagnosis(lambda p, th: th * 0.9)
    assert "rotated with 0.9 times the angles of its position" in text and "base" not in text


def test_decoding_names_a_base_change_with_its_ratio():
    # dynamic NTK at length 13 over 12, by hand: base 10,000 * (13/12)^(64/62); pair k turns (B/B')^(k/32)
    grown = 10_000.0 * (13 / 12) ** (64 / 62)
    text = _decoding_diagnosis(lambda p, th: grown ** -(np.arange(32) / 32))
    got = float(re.search(r"a base ([0-9.]+) times the declared one", text).group(1))
    assert abs(got - (13 / 12) ** (64 / 62)) < 1e-3 and "times the angles" not in text
    lo, hi = map(float, re.search(r"turn at ([0-9.]+) to ([0-9.]+) times", text).groups())
    # the slowest pair (k = 31) reads the smallest ratio; the fastest the check can read is near 1
    assert lo == pytest.approx((grown / 1e4) ** (-31 / 32), abs=1e-3) and hi <= 1.0


def test_decoding_names_other_frequencies_pair_by_pair():
    wobble = 1 + 0.05 * np.sin(np.arange(32))  # neither one scale nor a base change
    text = _decoding_diagnosis(lambda p, th: th * wobble)
    assert "pair by pair" in text and "a base" not in text


class _SlipCache(_RulerCache):
    """A correct half-split cache whose decode_step places the new query ``q_slip`` and the new key ``k_slip``
    positions past the cache length: labelled controls for which of the two Gate A names."""

    def __init__(self, q_slip, k_slip):
        super().__init__(None)
        self.q_slip, self.k_slip = q_slip, k_slip

    def decode_step(self, query, key, value):
        p = len(self.keys)
        rot = lambda x, at: apply_rope(x[None], [at], pairing="half")[0]
        self.keys, self.values = np.vstack([self.keys, rot(key, p + self.k_slip)]), np.vstack([self.values, value])
        return rot(query, p + self.q_slip), self.keys.copy(), self.values.copy()


@pytest.mark.parametrize("q_slip,k_slip,named,not_named", [
    (0, 1, "the new key is placed at position {k} instead of {i}", "decoding query sits at"),
    (1, 0, "the decoding query sits at position {q} instead of {i}", "new key is"),
    (0, -2, "the new key is placed at position {k} instead of {i}", "decoding query sits at")])
def test_decoding_names_which_of_query_and_new_key_moved(q_slip, k_slip, named, not_named):
    r = gate_a(_SlipCache(q_slip, k_slip), head_dim=64, pairing="half")
    assert r.failed == ["decoding"] and r.defects == ["decoding"], r.table()
    i = int(re.search(r"\((?:token) (\d+), ", r.diagnosis).group(1))  # the first decoded token's position
    assert named.format(i=i, q=i + q_slip, k=i + k_slip) in r.diagnosis, r.diagnosis
    assert not_named not in r.diagnosis and f"instead of {i}" in r.diagnosis


def test_query_scaling_is_stated_as_positions_divided_by_s():
    e = defect_entry("scaled-queries", 16)
    assert "positions divided by s = 2)" in gate_a(e.impl, **e.declared).diagnosis
