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
"""

import numpy as np
import pytest

from ropegeo.gate_a import gate_a
from ropegeo.manifest import resolve
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
    f = deepseek_interleave(m.theta(m.target_length), m.attention_factor(m.target_length))
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
    f = deepseek_interleave(m.theta(m.target_length))
    bad = (lambda x, p: 1.25 * f(x, p)) if defect == "query-scaled" else (lambda x, p: f(x, np.asarray(p) + 1))
    r = gate_a(bad, manifest="deepseek-v3")
    assert r.failed[0] == check and r.defects[0] == kind, r.table()
    assert "output_order" in r.inferred


def test_a_reordering_output_with_the_wrong_pairing_still_fails_as_layout():
    # the same half-split write, but reading half-split pairs while interleaved is declared
    theta = resolve("deepseek-v3").theta(163_840)
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
    factor = m.attention_factor(m.target_length)
    d = m.head_dim

    def f(x, positions):
        seq = served_length or int(np.max(positions)) + 1
        theta = m.theta(orig + 1 if seq > orig else orig)  # long factors past the original length
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
    theta = 1.00005 * resolve("llama-2-7b").theta()
    r = gate_a(lambda x, p: apply_rope(x, p, theta=theta, pairing="half"), manifest="llama-2-7b")
    assert r.failed[0] == "frequencies", r.table()
    assert "1.00005 times" in r.diagnosis and "1 times" not in r.diagnosis


def _stretched_base_in_float16(x, positions):
    # dynamic NTK served one token longer than declared (16,385 instead of 16,384, Llama layout,
    # factor 4): the base stretches by 7.6e-5, rounded as float16 data
    base = 10_000.0 * (4 * 16_385 / 4096 - 3) ** (128 / 126)
    x = np.asarray(x, dtype=np.float16).astype(np.float64)
    return apply_rope(x, positions, base=base, pairing="half").astype(np.float16)


def test_a_frequency_drift_too_small_to_read_is_named_frequency_not_precision():
    # the read positions (up to 1,001) cannot see a 7.6e-5 base change through float16 rounding;
    # the context probes can, and a per-pair frequency fit explains their drift
    base = 10_000.0 * (4 * 16_384 / 4096 - 3) ** (128 / 126)
    r = gate_a(_stretched_base_in_float16, head_dim=128, base=base, pairing="half", max_position=16_384)
    assert r.failed == ["context"] and r.defects == ["frequency"], r.table()
    assert r.check("frequencies").passed and r.check("precision").passed
    # the pair quoted is the one that drifts most; its deviation is the stretched base's, 10/128 * 7.6e-5
    pair, rel = r.inferred["frequency_drift"]["pair"], r.inferred["frequency_drift"]["relative_deviation"]
    assert f"pair {pair}: relative deviation {rel:.1e}" in r.diagnosis
    expected = 1.0 - ((4 * 16_385 / 4096 - 3) / (4 * 16_384 / 4096 - 3)) ** (-(128 / 126) * 2 * pair / 128)
    assert rel == pytest.approx(abs(expected), rel=0.1)


def test_a_coarse_angle_table_over_a_long_context_is_precision_only():
    # bfloat16 angles drift at every context probe up to 131,072: that is the precision finding,
    # not a position-id defect at "positions where ordinary positions are right"
    from ropegeo.broken import Rotary
    r = gate_a(Rotary(64, phase_dtype="bfloat16"), head_dim=64, max_position=131_072)
    assert r.failed[0] == "precision" and set(r.defects) == {"precision"}, r.table()
    assert r.check("context").defect == "precision"
