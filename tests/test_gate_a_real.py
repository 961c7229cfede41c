"""Gate A on numpy re-implementations of real rotary code whose verdicts it once got wrong.

Each implementation mirrors, in numpy, what transformers does for one model family (the same
code run through torch lives in ``tests/with_torch``, run by ``make test-torch``):

- DeepSeek-V3's ``apply_rotary_pos_emb_interleave`` reads interleaved pairs and writes them
  half-split. Queries and keys are reordered alike, so scores are right: Gate A must pass it.
- Phi-3's LongRoPE picks short or long factors from the length of the forward pass
  (``max(position_ids) + 1 > original_max_position_embeddings``), with one attention factor for
  both. Declared from its configuration, Gate A holds it to the factors of the context it probes.
- Phi-3's ``apply_rotary_pos_emb`` also accepts wider heads (rotating the first ``head_dim``
  coordinates and passing the rest through unscaled). A configuration fixes the head width, so
  Gate A audits that width only.
- rotary-embedding-torch's ``rotate_queries_or_keys`` builds its positions with ``arange`` in the
  data's dtype (plus the cache offset) and only then forms float32 angles: served in bfloat16 or
  float16, position ids from 257 (2,049) on are rounded to that format. Gate A names it a
  position-id defect (the ids are rounded; the angle arithmetic is right), not an angle table
  formed in bfloat16.
- An attention temperature folded into the whole head of a partial-rotary implementation
  (x-transformers and rotary-embedding-torch rotate 32 of 64 coordinates) scales the pass-through
  coordinates as much as the pairs: the magnitude defect leads, the layout is not blamed.
- rotary-embedding-torch applies ``interpolate_factor`` in ``get_seq_pos`` only: a module called
  on position ids skips it. Served in bfloat16, the slow pairs are read to a few percent only, yet
  the uniform factor is still named (a position scale), not "not a geometric schedule".
- transformers' dynamic NTK module keeps the stretched base after a call past its context, so
  Gate A never calls an implementation at or past the declared maximum position.
- Correct float32 angles served in float16 at a context of a million positions (Mistral Nemo, Llama 4)
  once failed: the read positions cannot show the angles' precision through float16 data, and Gate A
  assumed exact angles instead of the declared float32.
- Code that rounds its input to float16 and returns float32 shows the rounding only at position 0;
  it is data rounding, not an origin or a magnitude defect.
- A bare ``**kwargs`` (every torch.nn.Module's ``__call__``) is not the role protocol.
- ``failed``, ``defects`` and ``diagnoses`` list the failed checks in one order (a JSON reader of
  ``defects[0]`` once got a reading that the diagnosis marked inconclusive).
- transformers' default rotary module where a YaRN configuration is declared lacks both the ramp
  and the factor on cos and sin: every vector is scaled alike (a rotation times a constant), so
  the frequency reading holds and leads; it was once marked inconclusive behind the magnitude defect.
- Dynamic NTK fed position ids that never reach its original length (a wrapped table, int8 ids)
  keeps its short-run frequencies: the position-id defect is the cause and leads.
"""

import ml_dtypes
import numpy as np
import pytest

from ropegeo.gates.a.gate import gate_a
from ropegeo.models.manifest import resolve
from ropegeo.rotation import apply_rope


def deepseek_interleave(theta, factor=1.0):
    """``apply_rotary_pos_emb_interleave``: interleaved pairs in, half-split out."""
    def f(x, positions):
        a = np.asarray(positions, dtype=np.float64)[..., None] * theta
        c, s = factor * np.cos(a), factor * np.sin(a)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    return f


def test_deepseek_interleaved_in_half_split_out_passes():
    m = resolve("deepseek-v3")
    f = deepseek_interleave(m.theta_at(m.target_length), m.attention_at(m.target_length))
    r = gate_a(f, manifest="deepseek-v3")
    assert r.passed, r.table()
    assert r.declared["pairing"] == "interleaved" and r.inferred["pairing"] == "interleaved"
    d = m.head_dim
    # input coordinate 2i lands at i, 2i + 1 at d/2 + i
    assert r.inferred["output_order"][d] == [j for i in range(d // 2) for j in (i, d // 2 + i)]
    assert any("another order" in n for n in r.notes)


@pytest.mark.parametrize("defect, check, kind", [("query-scaled", "norm", "magnitude"),
                                                 ("origin-off-by-one", "origin", "position-id")])
def test_broken_deepseek_order_is_named_by_its_own_defect(defect, check, kind):
    # the reordering is read where the map is a (scaled) permutation, so a scaled or shifted map
    # is not blamed on the layout
    m = resolve("deepseek-v3")
    f = deepseek_interleave(m.theta_at(m.target_length))
    bad = (lambda x, p: 1.25 * f(x, p)) if defect == "query-scaled" else (lambda x, p: f(x, np.asarray(p) + 1))
    r = gate_a(bad, manifest="deepseek-v3")
    assert r.failed[0] == check and r.defects[0] == kind, r.table()
    assert "output_order" in r.inferred


def test_a_reordering_output_with_the_wrong_pairing_still_fails_as_layout():
    # the same half-split write, but reading half-split pairs while interleaved is declared
    theta = resolve("deepseek-v3").theta_at(163_840)
    r = gate_a(lambda x, p: apply_rope(x, p, theta=theta, pairing="half"), manifest="deepseek-v3")
    assert r.failed[0] == "layout" and r.defects[0] == "layout", r.table()
    assert "output_order" not in r.inferred  # the identity at the origin: nothing reordered


def test_a_scaled_origin_is_not_mistaken_for_a_reordering():
    # rotation by +1 position at the origin: the fast pairs are no permutation, nothing is undone
    r = gate_a(lambda x, p: apply_rope(x, np.asarray(p) + 1, pairing="half"), head_dim=64, pairing="half",
               max_position=8192)
    assert "output_order" not in r.inferred and r.failed[0] == "origin"


def phi3_longrope(m, served_length=None, width=None):
    """Phi-3's rotary: factors chosen by the forward pass's length; one attention factor."""
    orig = m.scaling.original_max_position_embeddings
    factor = m.attention_at(m.target_length)
    d = m.head_dim

    def f(x, positions):
        seq = served_length or int(np.max(positions)) + 1
        theta = m.theta_at(orig + 1 if seq > orig else orig)  # long factors past the original length
        out = x.copy()
        out[..., :d] = factor * apply_rope(x[..., :d], positions, theta=theta, pairing="half")
        return out

    return f


PHI3 = "phi-3-mini-128k-instruct"


def test_longrope_served_long_passes_against_the_declared_long_factors():
    m = resolve(PHI3)
    r = gate_a(phi3_longrope(m, served_length=m.target_length), manifest=PHI3)
    assert r.passed, r.table()
    assert r.declared["max_position"] == m.target_length


@pytest.mark.parametrize("length", [4096, 4097])
def test_longrope_switch_at_the_original_length(length):
    # a forward pass of 4,096 tokens uses the short factors, one of 4,097 the long ones
    m = resolve(PHI3)
    assert m.scaling.original_max_position_embeddings == 4096
    r = gate_a(phi3_longrope(m, served_length=length), manifest=PHI3, target_length=length)
    assert r.passed, r.table()
    other = 4097 if length == 4096 else 4096
    wrong = gate_a(phi3_longrope(m, served_length=other), manifest=PHI3, target_length=length)
    assert wrong.failed[0] == "frequencies" and wrong.defects[0] == "frequency", wrong.table()


def test_longrope_called_on_short_runs_breaks_a_long_declaration_as_frequency():
    # the bare module: a call whose positions stay under 4,096 rotates with the short factors
    m = resolve(PHI3)
    r = gate_a(phi3_longrope(m), manifest=PHI3)
    assert r.failed[0] == "frequencies" and r.defects[0] == "frequency", r.table()
    # and the report says which frequencies those are, and how to audit them
    assert "frequencies for a forward pass of at most 4,096 tokens" in r.diagnosis
    assert "--target-length 4096" in r.diagnosis
    # a plain wrong schedule gets no such hint
    wrong = gate_a(lambda x, p: apply_rope(x, p, base=20_000.0, pairing="half", rotary_dim=96)[..., :96],
                   manifest=PHI3)
    assert "forward pass of at most" not in wrong.diagnosis


def test_a_configuration_fixes_the_audited_head_width():
    # accepts 128-wide heads (96 rotated and scaled, 32 passed through): not the model's width
    m = resolve(PHI3)
    r = gate_a(phi3_longrope(m, served_length=m.target_length), manifest=PHI3)
    assert r.head_dims == [m.head_dim] == [96]
    # declared by hand, the other widths are probed as before
    plain = gate_a(lambda x, p: apply_rope(x, p, pairing="half"), head_dim=32, pairing="half", max_position=4096)
    assert plain.head_dims[0] == 32 and len(plain.head_dims) > 1


def test_a_tiny_uniform_frequency_ratio_is_not_called_a_position_scale():
    # dynamic NTK recomputed for one more token: every frequency off by the same ratio near 1
    theta = 1.00005 * resolve("llama-2-7b").theta_at()
    r = gate_a(lambda x, p: apply_rope(x, p, theta=theta, pairing="half"), manifest="llama-2-7b")
    assert r.failed[0] == "frequencies", r.table()
    assert "1.00005 times" in r.diagnosis and "1 times" not in r.diagnosis


def _base_500200_in_bfloat16(x, positions):
    # a base of 500,200 where 500,000 is declared (a stretched or mistyped base), served in bfloat16
    x = np.asarray(x, dtype=ml_dtypes.bfloat16).astype(np.float64)
    return apply_rope(x, positions, base=500_200.0, pairing="half").astype(ml_dtypes.bfloat16)


def test_a_frequency_drift_too_small_to_read_is_named_frequency_not_precision():
    # the read positions (up to 1,001) cannot see a 4e-4 base change through bfloat16 rounding;
    # the context probes up to 131,072 can, and a per-pair frequency fit explains their drift
    r = gate_a(_base_500200_in_bfloat16, head_dim=128, base=500_000.0, pairing="half", max_position=131_072)
    assert r.failed == ["context"] and r.defects == ["frequency"], r.table()
    assert r.check("frequencies").passed and r.check("precision").passed
    # the pair quoted is the one that drifts most; its relative deviation is the base change's,
    # 1 - (500,200 / 500,000) ** (-2 i / 128)
    pair, rel = r.inferred["frequency_drift"]["pair"], r.inferred["frequency_drift"]["relative_deviation"]
    assert f"pair {pair}: relative deviation {rel:.1e}" in r.diagnosis
    expected = 1.0 - (500_200.0 / 500_000.0) ** (-2 * pair / 128)
    assert rel == pytest.approx(abs(expected), rel=0.1)


def test_correct_float32_angles_in_float16_data_pass_over_a_million_positions():
    # transformers' recipe (angles in float32, cos/sin and data in float16) at Mistral Nemo's
    # context: the data cannot show the angles' precision at the read positions, so Gate A keeps
    # the declared float32 for them instead of assuming exact angles (it once failed this as a
    # precision defect)
    inv = (1.0 / 1e6 ** (np.arange(0, 128, 2, dtype=np.float32) / 128)).astype(np.float32)

    def f(x, positions):
        ang = np.asarray(positions).astype(np.float32)[..., None] * inv
        emb = np.concatenate([ang, ang], -1)
        cos, sin = np.cos(emb).astype(np.float16), np.sin(emb).astype(np.float16)
        x = np.asarray(x).astype(np.float16)
        return x * cos + np.concatenate([-x[..., 64:], x[..., :64]], -1) * sin

    r = gate_a(f, head_dim=128, base=1e6, pairing="half", max_position=1_024_000)
    assert r.passed, r.table()


def test_input_rounded_to_float16_and_returned_as_float32_is_a_precision_finding():
    # x cast to float16 on the way in, the rotation done and returned in float32 ("forgot to cast
    # back"): identity probes are exact in every format, so only the input at position 0 shows the
    # rounding; it is data rounding, not an origin or a magnitude defect
    inv = (1.0 / 10_000.0 ** (np.arange(0, 64, 2, dtype=np.float32) / 64)).astype(np.float32)

    def f(x, positions):
        ang = np.asarray(positions).astype(np.float32)[..., None] * inv
        emb = np.concatenate([ang, ang], -1)
        x = np.asarray(x).astype(np.float16).astype(np.float32)
        return x * np.cos(emb) + np.concatenate([-x[..., 32:], x[..., :32]], -1) * np.sin(emb)

    r = gate_a(f, head_dim=64, pairing="half", max_position=131_072)
    assert r.failed == ["precision"] and r.defects == ["precision"], r.table()  # a finding, not an origin or magnitude defect
    assert r.inferred["data_dtype"] == "float32" and r.inferred["data_rounding"]["dtype"] == "float16"
    assert "input is rounded to float16" in r.diagnosis
    assert gate_a(f, head_dim=64, pairing="half", max_position=131_072, dtype="float16").passed


@pytest.mark.parametrize("kind", ["kwargs", "module", "decorated"])
def test_a_bare_kwargs_signature_is_the_plain_protocol(kind):
    # every torch.nn.Module has __call__(*args, **kwargs), and so does a decorator without
    # functools.wraps: neither takes a role keyword, so Gate A must not call them with one
    def rope(x, positions):
        return apply_rope(x, positions, pairing="half")

    if kind == "kwargs":
        def f(x, positions, **kw):
            return rope(x, positions)
    elif kind == "module":
        class Module:
            def __call__(self, *args, **kwargs):
                return self.forward(*args, **kwargs)

            def forward(self, x, positions):
                return rope(x, positions)
        f = Module()
    else:
        def deco(fn):
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)
            return wrapper
        f = deco(rope)
    r = gate_a(f, head_dim=64, pairing="half", max_position=8192)
    assert r.passed and r.protocols == ["callable"], r.table()


def test_a_coarse_angle_table_over_a_long_context_is_precision_only():
    # bfloat16 angles drift at every context probe up to 131,072: that is the precision finding,
    # not a position-id defect at "positions where ordinary positions are right"
    from ropegeo.book.broken import Rotary
    r = gate_a(Rotary(64, phase_dtype="bfloat16"), head_dim=64, max_position=131_072)
    assert r.failed[0] == "precision" and set(r.defects) == {"precision"}, r.table()
    assert r.check("context").defect == "precision"


def _positions_in_data_dtype(dtype):
    """rotate_queries_or_keys(x, offset=p) of rotary-embedding-torch, one token at a time: the
    position is arange(1, dtype=x.dtype) + p in the data's dtype; freqs and angles in float32;
    adjacent pairs on the first 32 of 64 coordinates; cos/sin and x rounded as the data."""
    import ml_dtypes

    fmt = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[dtype]
    theta = (1.0 / 10_000.0 ** (np.arange(0, 32, 2, dtype=np.float32) / np.float32(32))).astype(np.float32)

    def f(x, positions):
        with np.errstate(over="ignore", invalid="ignore"):
            pos = np.asarray(positions).astype(fmt).astype(np.float32)  # ids held in the data's dtype
            ang = pos[..., None] * theta
            xd = np.asarray(x).astype(fmt).astype(np.float32)
            out = xd.copy()
            a, b = xd[..., 0:32:2], xd[..., 1:32:2]
            c, s = np.cos(ang), np.sin(ang)
            out[..., 0:32:2], out[..., 1:32:2] = a * c - b * s, b * c + a * s
        return out.astype(fmt)

    return f


@pytest.mark.parametrize("dtype, first", [("bfloat16", 257), ("float16", 2049)])
def test_position_ids_rounded_to_the_data_dtype_are_a_position_id_defect(dtype, first):
    r = gate_a(_positions_in_data_dtype(dtype), head_dim=64, rotary_dim=32, max_position=131_072)
    assert r.failed[0] == "context" and r.defects == ["position-id"], r.table()
    assert f"rounded to {dtype}" in r.diagnosis and f"from {first:,} on" in r.diagnosis
    assert r.check("precision").passed and r.check("frequencies").passed  # the angle arithmetic is right
    assert r.inferred["position_defect"] == {"kind": "rounded", "boundary": first}


def test_angles_formed_in_bfloat16_stay_a_precision_defect_when_positions_round_too():
    # positions and frequencies both cast to bfloat16 and multiplied there: the rounded ids are
    # part of it, but the angles themselves are coarse, which the precision check names first
    theta = 10_000.0 ** (-np.arange(0, 64, 2) / 64)

    def f(x, positions):
        import ml_dtypes
        bf = ml_dtypes.bfloat16
        ang = (np.asarray(positions).astype(bf)[..., None] * theta.astype(bf)).astype(np.float64)
        out = np.array(x, dtype=np.float64)
        a, b = out[..., 0::2].copy(), out[..., 1::2].copy()
        out[..., 0::2], out[..., 1::2] = a * np.cos(ang) - b * np.sin(ang), b * np.cos(ang) + a * np.sin(ang)
        return out

    r = gate_a(f, head_dim=64, max_position=131_072)
    assert r.failed[0] == "precision" and r.defects[0] == "precision", r.table()
    assert r.inferred.get("position_defect", {}).get("kind") != "rounded"


def test_an_attention_factor_on_a_partial_rotary_head_is_magnitude_not_layout():
    r = gate_a(lambda x, p: 1.25 * apply_rope(x, p, rotary_dim=32), head_dim=64, rotary_dim=32, max_position=8192)
    assert r.failed[0] == "norm" and r.defects == ["magnitude"], r.table()
    assert r.check("layout").passed and r.inferred["layout"]["passthrough"] == list(range(32, 64))
    # a scale on the pass-through coordinates alone is not a rotation either (magnitude leads, as
    # failed, defects and diagnoses all say), and the layout reading names the scaled coordinates
    def odd(x, p):
        y = apply_rope(x, p, rotary_dim=32)
        y[..., 32:] *= 1.25
        return y
    bad = gate_a(odd, head_dim=64, rotary_dim=32, max_position=8192)
    assert bad.failed[0] == "norm" and bad.defects[0] == "magnitude", bad.table()
    assert "layout" in bad.defects and "coordinates 32..63" in bad.diagnoses[bad.failed.index("layout")], bad.table()


def _bfloat16_data(scale=1.0, record=None):
    import ml_dtypes

    def f(x, positions):
        if record is not None:
            record.append(int(np.max(np.abs(positions))))
        xd = np.asarray(x).astype(ml_dtypes.bfloat16).astype(np.float64)
        return apply_rope(xd, positions, pairing="half", scale=scale).astype(ml_dtypes.bfloat16)

    return f


def test_a_forgotten_position_interpolation_is_named_a_scale_in_bfloat16_data():
    r = gate_a(_bfloat16_data(scale=1.0), head_dim=64, pairing="half", scale=0.25, max_position=32_768)
    assert r.failed[0] == "frequencies" and r.defects[0] == "frequency", r.table()
    assert "every frequency is 4 times the declared one" in r.diagnosis, r.diagnosis


def test_no_position_at_or_past_the_declared_context_is_called():
    seen = []
    r = gate_a(_bfloat16_data(record=seen), head_dim=128, pairing="half", max_position=16_384)
    assert r.passed, r.table()
    assert max(seen) == 16_383


def test_failed_defects_and_diagnoses_agree_on_what_leads():
    # a map that is not a rotation: magnitude leads in all three lists
    r = gate_a(lambda x, p: np.round(1000 * apply_rope(x, p, pairing="half")), head_dim=64, pairing="half",
               max_position=8192)
    assert r.failed[0] == "norm" and r.defects[0] == "magnitude", r.table()
    assert r.diagnoses[0].startswith("magnitude defect") and len(r.diagnoses) == len(r.failed)
    assert r.to_dict()["defects"][0] == "magnitude"


def test_nan_past_a_table_end_is_a_position_id_defect():
    # NaN from position 50,001 on (a table filled with NaN past its end): every failure names its class
    def f(x, positions):
        p = np.asarray(positions, dtype=np.float64)
        return apply_rope(x, np.where(p > 50_000, np.nan, p), pairing="half")

    r = gate_a(f, head_dim=64, pairing="half")
    assert r.failed == ["context"] and r.defects == ["position-id"], r.table()
    assert r.inferred["position_defect"]["boundary"] == 50_001


def test_keys_left_unrotated_is_a_roles_defect():
    # role protocol: queries rotated, keys returned as given; the keys' "ignored positions" are the
    # roles finding, and the shift check still sees scores move
    def f(x, positions, role="key"):
        return apply_rope(x, positions, pairing="half") if role == "query" else np.asarray(x, dtype=np.float64)

    r = gate_a(f, head_dim=64, pairing="half", max_position=8192)
    assert r.failed[0] == "roles" and r.defects == ["roles"], r.table()
    assert "keys are not rotated at all" in r.diagnosis and "shift" in r.failed


def test_positions_divided_by_k_are_a_position_id_defect():
    # ids integer-divided (p // 4, say tokens per frame): four neighbours share one rotation
    r = gate_a(lambda x, p: apply_rope(x, np.asarray(p) // 4, pairing="half"), head_dim=64, pairing="half",
               max_position=8192)
    assert r.failed[0] == "context" and r.defects == ["position-id"], r.table()
    assert "quantised to multiples of 4" in r.diagnosis and "positions 0..3" in r.diagnosis


def test_a_table_reused_across_calls_is_not_blamed_on_slot_indices_alone():
    # cos/sin computed on the first call of each shape and reused after: rows keep the first
    # call's positions; Gate A must not claim they are rotated by their slot index
    cache = {}

    def f(x, positions):
        x = np.asarray(x, dtype=np.float64)
        key = x.shape
        if key not in cache:
            cache[key] = np.array(positions, copy=True)
        return apply_rope(x, cache[key], pairing="half")

    r = gate_a(f, head_dim=64, pairing="half", max_position=8192)
    assert r.defects[0] == "position-id", r.table()
    assert "not by the ids passed in" in r.diagnosis and "cached from an earlier call" in r.diagnosis


def test_a_plain_schedule_in_bfloat16_data_is_one_geometric_schedule():
    # half-split, base 10,000, served in bfloat16, nothing declared: the layout fails against the
    # default interleaved pairs, and the note must say the frequencies fit one base (the slow pairs'
    # residual is only the data's rounding), not "not one geometric schedule (a scaling rule?)"
    import argparse

    from ropegeo.cli.gate_a import _undeclared_note
    r = gate_a(_bfloat16_data(), head_dim=64)
    assert r.failed == ["layout"], r.table()
    assert r.inferred["schedule_fits"] is True and r.inferred["base"] == pytest.approx(10_000.0, rel=2e-3)
    note = _undeclared_note(argparse.Namespace(), r)
    assert "frequencies fitting base" in note and "not one geometric schedule" not in note
    # a real second schedule (Llama 3's: slow pairs divided by 8) in the same data still is one
    theta = resolve("llama-3.1-8b").theta_at()

    def llama3(x, positions):
        xd = np.asarray(x).astype(ml_dtypes.bfloat16).astype(np.float64)
        return apply_rope(xd, positions, theta=theta, pairing="half").astype(ml_dtypes.bfloat16)

    r3 = gate_a(llama3, head_dim=128)
    assert r3.inferred["schedule_fits"] is False
    assert "not one geometric schedule" in _undeclared_note(argparse.Namespace(), r3)


def _rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def hf_apply_with_roles(defect=None, d=64, base=10_000.0):
    """transformers' Llama recipe (float32 inverse frequencies and angles, ``cat(freqs, freqs)``,
    ``q * cos + rotate_half(q) * sin``) with the role protocol: ``q_embed`` for queries, ``k_embed``
    for keys. ``defect`` breaks the keys' side only, as bug reports show it: ``"keys-mirrored"``
    (``k * cos - rotate_half(k) * sin``), ``"keys-interpolated"`` (key positions multiplied by 1/4,
    the queries' not), ``"keys-bfloat16"`` (the keys' angle table formed in bfloat16);
    ``"queries-mirrored"`` and ``"queries-interpolated"`` break the queries instead."""
    inv = (1.0 / base ** (np.arange(0, d, 2, dtype=np.float32) / np.float32(d))).astype(np.float32)
    side, _, kind = (defect or "-").partition("-")

    def cos_sin(positions, broken):
        p = np.asarray(positions).astype(np.float32)
        if broken and kind == "interpolated":
            p = p * np.float32(0.25)
        if broken and kind == "bfloat16":
            freqs = (p.astype(ml_dtypes.bfloat16)[..., None] * inv.astype(ml_dtypes.bfloat16)).astype(np.float32)
        else:
            freqs = p[..., None] * inv
        emb = np.concatenate([freqs, freqs], -1)
        return np.cos(emb), np.sin(emb)

    def f(x, positions, role="query"):
        x = np.asarray(x, dtype=np.float32)
        if role == "value":
            return x
        broken = role == {"keys": "key", "queries": "query"}.get(side)
        cos, sin = cos_sin(positions, broken)
        sign = -1.0 if broken and kind == "mirrored" else 1.0
        return x * cos + sign * _rotate_half(x) * sin

    return f


@pytest.mark.parametrize("defect, words", [
    ("keys-mirrored", "keys rotate the opposite way to queries"),
    ("queries-mirrored", "queries rotate the opposite way to keys"),
    ("keys-interpolated", "keys rotate at 0.25 times the query frequencies: a position scaling (positions "
                          "divided by s = 4) is applied to keys but not to queries"),
    ("queries-interpolated", "queries rotate at 0.25 times the key frequencies: a position scaling (positions "
                             "divided by s = 4) is applied to queries but not to keys"),
    ("keys-bfloat16", "the angles of the keys are formed in a coarser format than those of the queries"),
])
def test_a_defect_on_one_side_is_a_roles_defect_naming_that_side(defect, words):
    # the readings (layout, frequencies, precision) come from the side that matches the
    # declaration; the other side is the roles check's finding, and it leads
    r = gate_a(hf_apply_with_roles(defect), head_dim=64, pairing="half", max_position=32_768)
    assert r.failed[0] == "roles" and r.defects == ["roles"], r.table()
    assert words in r.diagnosis, r.diagnosis
    assert r.inferred["roles_departs"] == defect.split("-")[0]
    assert r.check("frequencies").passed and r.check("layout").passed and r.check("precision").passed
    assert "shift" in r.failed  # the scores see it too
    assert "relative law still holds" not in r.table()
    # the healthy pair passes
    ok = gate_a(hf_apply_with_roles(), head_dim=64, pairing="half", max_position=32_768)
    assert ok.passed, ok.table()


def test_both_sides_mirrored_is_still_the_convention_defect():
    # the same sign flip on both sides keeps scores relative: a convention defect, not roles
    r = gate_a(lambda x, p, role="query": np.asarray(x, dtype=float) if role == "value" else
               apply_rope(x, -np.asarray(p), pairing="half"), head_dim=64, pairing="half", max_position=8192)
    assert r.failed[0] == "frequencies" and r.defects == ["convention"], r.table()
    assert "relative law still holds" in r.diagnosis and r.check("shift").passed


def yarn_or_longrope_port(name, *, drop_factor=False, factor_times=1.0):
    """A port of a model's rotary code as transformers writes it: cos and sin of the
    configuration's frequencies at its target length, multiplied by the attention factor
    (``attention_scaling``); ``drop_factor`` leaves the factor out, as ports that expect the
    attention to apply it do. Partial rotary passes the other coordinates through."""
    m = resolve(name)
    L = m.target_length
    theta, r = m.theta_at(L), m.rotary_dim
    factor = 1.0 if drop_factor else m.attention_at(L) * factor_times

    def f(x, positions):
        out = np.array(x, dtype=np.float64)
        out[..., :r] = factor * apply_rope(out[..., :r], positions, theta=theta, pairing=m.pairing)
        return out

    return f


@pytest.mark.parametrize("name", ["qwen2.5-7b-instruct", "gpt-oss-20b", PHI3])
def test_a_port_that_drops_the_attention_factor_fails_as_magnitude(name):
    # transformers multiplies cos and sin by YaRN's and LongRoPE's factor: with the configuration,
    # that is the reference, and a port without it fails (it once passed with a note)
    m = resolve(name)
    assert m.attention_at(m.target_length) > 1.1
    assert gate_a(yarn_or_longrope_port(name), manifest=name).passed
    r = gate_a(yarn_or_longrope_port(name, drop_factor=True), manifest=name)
    assert r.failed[0] == "norm" and r.defects[0] == "magnitude", r.table()
    assert "is missing" in r.diagnosis and "--attention-factor-in softmax" in r.diagnosis
    # code whose attention applies the factor in the softmax declares it there, and passes; applying
    # it in both places fails
    soft = gate_a(yarn_or_longrope_port(name, drop_factor=True), manifest=name, attention_factor_in="softmax")
    assert soft.passed and soft.declared["attention_factor_in"] == "softmax", soft.table()
    assert any("declared in the softmax" in n for n in soft.notes)
    both = gate_a(yarn_or_longrope_port(name), manifest=name, attention_factor_in="softmax")
    assert both.failed[0] == "norm" and "counts twice" in both.diagnosis, both.table()


def test_deepseek_v3_rotation_carries_mscale_ratio_and_the_softmax_its_square():
    # DeepSeek-V3: cos and sin carry mscale(s, mscale) / mscale(s, mscale_all_dim) (1 for its
    # config), the softmax scale mscale(s, mscale_all_dim)^2; Gate A audits the first and says so
    m = resolve("deepseek-v3")
    L = m.target_length
    assert m.attention_at(L) == 1.0 and m.logit_scale > 1.1
    r = gate_a(deepseek_interleave(m.theta_at(L), m.attention_at(L)), manifest="deepseek-v3")
    assert r.passed, r.table()
    assert any(f"softmax scale by {m.logit_scale:.6g}" in n for n in r.notes)
    # a port that puts the softmax's factor into cos and sin as well fails as magnitude
    bad = gate_a(deepseek_interleave(m.theta_at(L), float(np.sqrt(m.logit_scale))), manifest="deepseek-v3")
    assert bad.failed[0] == "norm" and bad.defects[0] == "magnitude", bad.table()


#: Phi-3.5-MoE's rope block (transformers' own PhiMoE test values, narrowed to 8 pairs): its
#: short_mscale and long_mscale replace LongRoPE's default attention factor in PhimoeRotaryEmbedding
PHIMOE = {"model_type": "phimoe", "hidden_size": 128, "num_attention_heads": 8, "num_key_value_heads": 8,
          "max_position_embeddings": 131_072, "original_max_position_embeddings": 4096, "rope_theta": 10_000.0,
          "rope_scaling": {"type": "longrope", "original_max_position_embeddings": 4096,
                           "short_factor": [1.0, 1.04, 1.04, 1.04, 1.05, 1.05, 1.05, 1.05],
                           "long_factor": [1.02, 1.03, 1.04, 1.05, 1.05, 1.05, 1.06, 1.06],
                           "short_mscale": 1.243163121016122, "long_mscale": 1.243163121016122}}


def phimoe_rotary(config, short_factors_always=False):
    """transformers' PhimoeRotaryEmbedding + apply_rotary_pos_emb in numpy: LongRoPE's factors
    chosen by the pass's length (``max(position_ids) + 1``), cos and sin multiplied by
    ``long_mscale`` past the original length, ``short_mscale`` otherwise (float32 angles).
    ``short_factors_always``: the module as transformers 5.24 ships it, whose forward recomputes
    the frequencies without the pass's length and so keeps the short factors at every length
    (tests/with_torch/test_hf_catalogue.py checks that on the real module); mscale still switches."""
    rs = config["rope_scaling"]
    d = config["hidden_size"] // config["num_attention_heads"]
    orig = rs["original_max_position_embeddings"]

    def f(x, positions):
        positions = np.asarray(positions)
        seq = int(np.max(positions)) + 1
        long = seq > orig and not short_factors_always
        ext = np.asarray(rs["long_factor"] if long else rs["short_factor"], dtype=np.float32)
        mscale = rs["long_mscale"] if seq > orig else rs["short_mscale"]
        inv = (1.0 / (ext * config["rope_theta"] ** (np.arange(0, d, 2, dtype=np.float32) / d))).astype(np.float32)
        freqs = positions.astype(np.float32)[..., None] * inv
        emb = np.concatenate([freqs, freqs], -1)
        cos, sin = np.cos(emb) * np.float32(mscale), np.sin(emb) * np.float32(mscale)
        x = np.asarray(x, dtype=np.float32)
        return x * cos + _rotate_half(x) * sin

    return f


def test_phimoe_mscale_is_read_as_transformers_reads_it():
    from ropegeo.models.manifest import read_config
    m = read_config(PHIMOE)
    assert "short_mscale" not in m.scaling.ignored_keys and "long_mscale" not in m.scaling.ignored_keys
    assert m.attention_at(131_072) == pytest.approx(1.243163121016122, rel=1e-15)
    assert m.attention_at(4096) == pytest.approx(1.243163121016122, rel=1e-15)
    # without them, LongRoPE's default sqrt(1 + ln 32 / ln 4096)
    plain = {**PHIMOE, "rope_scaling": {k: v for k, v in PHIMOE["rope_scaling"].items() if "mscale" not in k}}
    assert read_config(plain).attention_at(131_072) == pytest.approx(np.sqrt(1 + np.log(32) / np.log(4096)))
    # transformers' PhiMoE rotary, served long, passes against its configuration (it once failed:
    # measured 1.2432, declared 1.1902)
    f = phimoe_rotary(PHIMOE)
    r = gate_a(lambda x, p: f(np.concatenate([x, np.zeros_like(x[..., :1, :])], -2),
                              np.concatenate([p, np.full_like(p[..., :1], 131_071)], -1))[..., :-1, :],
               manifest=PHIMOE)
    assert r.passed, r.table()
    assert r.declared["attention_factor"] == pytest.approx(1.243163121016122)
    # the module as transformers 5.24 ships it keeps the short factors in a long pass: a frequency
    # defect, while the factor its cos and sin carry is the declared one
    g = phimoe_rotary(PHIMOE, short_factors_always=True)
    short = gate_a(lambda x, p: g(np.concatenate([x, np.zeros_like(x[..., :1, :])], -2),
                                  np.concatenate([p, np.full_like(p[..., :1], 131_071)], -1))[..., :-1, :],
                   manifest=PHIMOE)
    assert short.failed[0] == "frequencies" and short.defects == ["frequency"], short.table()
    assert short.check("norm").passed and "forward pass of at most 4,096 tokens" in short.diagnosis


def test_an_explicit_attention_factor_overrides_the_configuration_with_a_note():
    # the block read without its mscale keys: the configuration says 1.1902; an explicit factor wins
    plain = {**PHIMOE, "rope_scaling": {k: v for k, v in PHIMOE["rope_scaling"].items() if "mscale" not in k}}
    f = phimoe_rotary(PHIMOE)

    def served(x, p):
        return f(np.concatenate([x, np.zeros_like(x[..., :1, :])], -2),
                 np.concatenate([p, np.full_like(p[..., :1], 131_071)], -1))[..., :-1, :]

    assert gate_a(served, manifest=plain).failed[0] == "norm"
    r = gate_a(served, manifest=plain, attention_factor=1.243163121016122)
    assert r.passed, r.table()
    assert any("declared in place of the configuration's 1.19" in n for n in r.notes)


#: a dynamic NTK Llama configuration as transformers' docs write it
DYNAMIC = {"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 16,
           "max_position_embeddings": 4096, "rope_theta": 10_000.0,
           "rope_scaling": {"rope_type": "dynamic", "factor": 4.0}}


class DynamicNTKRotary:
    """transformers' dynamic NTK rotary module in numpy (``_compute_dynamic_ntk_parameters`` and
    ``dynamic_rope_update``): the base grows for a pass longer than the cached length, and with
    ``reset=True`` a pass shorter than ``max_position_embeddings`` restores the original
    frequencies. ``reset=False`` is the stale table of transformers issue 25306: once
    grown, the stretched frequencies stay for every later short pass."""

    def __init__(self, config, reset=True):
        self.dim = config["hidden_size"] // config["num_attention_heads"]
        self.base, self.factor = config["rope_theta"], config["rope_scaling"]["factor"]
        self.orig = self.max_seq_len_cached = config["max_position_embeddings"]
        self.reset = reset
        self.original_inv_freq = self.inv_freq = self._inv_freq(None)

    def _inv_freq(self, seq_len):
        base = self.base
        if seq_len is not None:
            seq_len = max(seq_len, self.orig)
            base = base * ((self.factor * seq_len / self.orig) - (self.factor - 1)) ** (self.dim / (self.dim - 2))
        return (1.0 / base ** (np.arange(0, self.dim, 2).astype(np.float32) / self.dim)).astype(np.float32)

    def __call__(self, x, positions):
        positions = np.asarray(positions)
        seq_len = int(np.max(positions)) + 1
        if seq_len > self.max_seq_len_cached:  # growth
            self.inv_freq, self.max_seq_len_cached = self._inv_freq(seq_len), seq_len
        if self.reset and seq_len < self.orig and self.max_seq_len_cached > self.orig:  # reset
            self.inv_freq, self.max_seq_len_cached = self.original_inv_freq, self.orig
        freqs = positions.astype(np.float32)[..., None] * self.inv_freq
        emb = np.concatenate([freqs, freqs], -1)
        x = np.asarray(x, dtype=np.float32)
        return x * np.cos(emb) + _rotate_half(x) * np.sin(emb)


def test_dynamic_ntk_with_a_stale_cache_is_told_from_the_fixed_module():
    # bare modules against the configuration: Gate A calls them as within a pass of the target
    # length and reads a short run before and after; the fixed module passes, the stale one fails
    # as frequency (the verdicts were once inverted: long probes grew the stale cache first)
    fixed = gate_a(DynamicNTKRotary(DYNAMIC, reset=True), manifest=DYNAMIC)
    assert fixed.passed, fixed.table()
    assert fixed.declared["max_position"] == 16_384
    note = next(n for n in fixed.notes if n.startswith("dynamic NTK"))
    assert "within a pass of 16,384 tokens" in note and "short run" in note
    stale = gate_a(DynamicNTKRotary(DYNAMIC, reset=False), manifest=DYNAMIC)
    assert stale.failed == ["frequencies"] and stale.defects == ["frequency"], stale.table()
    assert "not reset for shorter sequences" in stale.diagnosis and "before any long one was right" in stale.diagnosis
    # a static rope (no dynamic rule at all) under the same configuration fails too, named by
    # the short-run frequencies it keeps for the long pass
    static = gate_a(lambda x, p: apply_rope(x, p, pairing="half"), manifest=DYNAMIC)
    assert static.failed[0] == "frequencies", static.table()
    assert "forward pass of at most 4,096 tokens" in static.diagnosis


@pytest.mark.parametrize("name", ["qwen2.5-7b-instruct", "gpt-oss-20b"])
def test_a_plain_rope_under_a_yarn_configuration_leads_with_frequency(name):
    # transformers' rotary module with the default rule where the configuration has YaRN (no ramp,
    # no factor on cos and sin): every vector is scaled alike (a rotation times a constant), so
    # the frequency reading holds and the missing scaling rule leads; the missing factor follows
    # (the frequency reading was once marked inconclusive and the magnitude defect led)
    m = resolve(name)
    r = gate_a(lambda x, p: apply_rope(x, p, base=m.base, pairing=m.pairing, rotary_dim=m.rotary_dim), manifest=name)
    assert r.failed[0] == "frequencies" and r.defects == ["frequency", "magnitude"], r.table()
    assert "inconclusive" not in r.diagnosis
    assert r.inferred["norm_scale"] == pytest.approx(1.0 / m.attention_at(m.target_length), rel=1e-6)
    norm = r.check("norm").diagnosis
    assert f"norm ratio down to {1.0 / m.attention_at(m.target_length):.4g}" in norm and "every vector alike" in norm
    assert "is missing" in norm


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_uniform_scale_is_named_as_one_ratio_and_a_nonuniform_one_is_not_a_rotation(dtype):
    fmt = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16}[dtype]

    def scaled(x, p):  # a temperature of 1.25 folded into the rotation, served in dtype
        return (1.25 * apply_rope(np.asarray(x).astype(fmt).astype(np.float64), p, pairing="half")).astype(fmt)

    r = gate_a(scaled, head_dim=64, pairing="half", max_position=8192)
    assert r.failed[0] == "norm" and r.defects == ["magnitude"], r.table()
    assert "norm ratio up to 1.25" in r.diagnosis and "every vector alike" in r.diagnosis and r.inferred["norm_scale"] == pytest.approx(1.25, rel=1e-2)

    def uneven(x, p):  # the first pair scaled, the rest not: no single ratio
        out = apply_rope(np.asarray(x).astype(fmt).astype(np.float64), p, pairing="half")
        out[..., 0] *= 1.25
        return out.astype(fmt)

    u = gate_a(uneven, head_dim=64, pairing="half", max_position=8192)
    assert u.failed[0] == "norm" and "the map is not a rotation" in u.diagnosis, u.table()
    assert "every vector alike" not in u.diagnosis
    assert "norm_scale" not in u.inferred


@pytest.mark.parametrize("defect, bound", [("wrapped-table", 4096), ("int8-positions", 256)])
def test_dynamic_ntk_fed_bounded_ids_leads_with_the_position_id_defect(defect, bound):
    # transformers' dynamic NTK module passed ids that never reach its original length (a 4,096-row
    # table indexed modulo its size, ids stored in int8): the pass's length it reads is short too,
    # so it keeps the short-run frequencies. The ids are the cause: the position-id defect leads,
    # the short-pass frequencies follow and say why (the frequency defect once led)
    module = DynamicNTKRotary(DYNAMIC, reset=True)

    def f(x, positions):
        p = np.asarray(positions)
        p = p % 4096 if defect == "wrapped-table" else p.astype(np.int8).astype(np.int64)
        return module(x, p)

    r = gate_a(f, manifest=DYNAMIC)
    assert r.failed[:2] == ["context", "frequencies"] and r.defects == ["position-id", "frequency"], r.table()
    assert f"P mod {bound:,}" in r.diagnosis
    assert f"stay below {bound:,}, the position-id defect above" in r.diagnoses[1]
    assert r.inferred["short_pass_frequencies"] == 4096
    # a frequency defect with right ids keeps its place and its words
    static = gate_a(lambda x, p: apply_rope(x, p, pairing="half"), manifest=DYNAMIC)
    assert static.failed[0] == "frequencies" and "stay below" not in static.diagnosis


def _llama_cpp_rope(d: int, base: float):
    """llama.cpp's rotary arithmetic: theta = p, then theta *= base^(-2/d) pair after pair, in float32."""
    def f(x, positions):
        x, p = np.asarray(x, dtype=np.float32), np.asarray(positions)
        step = np.float32(base) ** np.float32(-2.0 / d)
        ang = np.empty(p.shape + (d // 2,), dtype=np.float32)
        ang[..., 0] = p.astype(np.float32)
        for i in range(1, d // 2):
            ang[..., i] = ang[..., i - 1] * step
        c, s = np.cos(ang), np.sin(ang)
        out = x.copy()
        out[..., 0::2], out[..., 1::2] = x[..., 0::2] * c - x[..., 1::2] * s, x[..., 0::2] * s + x[..., 1::2] * c
        return out
    return f


@pytest.mark.parametrize("d, base", [(64, 1e4), (128, 1e4), (128, 5e5), (256, 1e6)])
def test_stepwise_float32_frequencies_pass_at_the_phase_dtype(d, base):
    # issue 35: a float32 recurrence carries up to 2 (i + 1) float32 roundings on pair i; at d = 128,
    # base 10,000 it once failed the frequency check by 1.8e-6 against a tolerance of 1e-6
    r = gate_a(_llama_cpp_rope(d, base), head_dim=d, base=base)
    assert r.passed, r.table()
    # the control: the same code against a base 5e-5 off (a relative step error up to 5e-5 on the
    # slow pairs, several times the float32 recurrence's bound) fails as a frequency defect
    off = gate_a(_llama_cpp_rope(d, base), head_dim=d, base=base * (1 + 5e-5))
    assert off.failed[0] == "frequencies" and off.defects[0] == "frequency", off.table()
