import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ropegeo.book.broken import (CATALOGUE, CacheOffByOne, QueryRestart, Rotary, ScaledQueries, attention_comparison,
                            broken_entries, correct_entries, entry, packed_score_change, position_ids,
                            shift_score_change)
from ropegeo.rotation import apply_rope


def _rot(x, p, d, **kw):
    """An independent rotation: explicit 2x2 blocks in a loop (interleaved pairs, base 10,000)."""
    out = np.array(x, dtype=float)
    for i in range(d // 2):
        ang = p * 10_000.0 ** (-2.0 * i / d) * kw.get("scale", 1.0)
        a, b = out[2 * i], out[2 * i + 1]
        out[2 * i], out[2 * i + 1] = a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)
    return out


@pytest.mark.parametrize("name", broken_entries())
def test_every_defect_is_visible_in_an_attention_comparison(name):
    res = attention_comparison(name, prompt=300, head_dim=64)
    if name == "rotated-values":
        # routing is intact, the payload is not
        assert res["score_error"] < 1e-12 and res["output_error"] > 0.05
    else:
        assert res["score_error"] > 1e-3


@pytest.mark.parametrize("name", correct_entries())
def test_correct_entries_match_their_declaration(name):
    res = attention_comparison(name, prompt=300, head_dim=64)
    assert res["score_error"] < 1e-12 and res["output_error"] < 1e-12


@pytest.mark.parametrize("cls,query_position,key_position", [(QueryRestart, 0, 0), (CacheOffByOne, 21, 21)])
def test_decoding_defects_against_a_hand_rotation(cls, query_position, key_position):
    d, n = 16, 20
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(3, n + 1, d))
    impl = cls(d)
    impl.prefill(K[:n], V[:n])
    q, kc, vc = impl.decode_step(Q[n], K[n], V[n])
    assert np.allclose(q, _rot(Q[n], query_position, d), atol=1e-12)
    assert np.allclose(kc[n], _rot(K[n], key_position, d), atol=1e-12)
    assert np.allclose(kc[:n], [_rot(K[j], j, d) for j in range(n)], atol=1e-12)
    assert np.allclose(vc, V, atol=0)


def test_scaled_queries_against_a_hand_rotation():
    d, n = 16, 10
    rng = np.random.default_rng(4)
    Q, K, V = rng.normal(size=(3, n + 1, d))
    impl = ScaledQueries(d, query_scale=0.5)
    impl.prefill(K[:n], V[:n])
    q, kc, _ = impl.decode_step(Q[n], K[n], V[n])
    assert np.allclose(q, _rot(Q[n], n, d, scale=0.5), atol=1e-12)
    assert np.allclose(kc[n], _rot(K[n], n, d), atol=1e-12)


@settings(max_examples=30)
@given(n=st.integers(1, 60), steps=st.integers(1, 4), pairing=st.sampled_from(["interleaved", "half"]),
       partial=st.booleans(), seed=st.integers(0, 10**6))
def test_correct_decoding_equals_full_sequence(n, steps, pairing, partial, seed):
    d = 16
    rng = np.random.default_rng(seed)
    Q, K, V = rng.normal(size=(3, n + steps, d))
    impl = Rotary(d, pairing=pairing, rotary_dim=8 if partial else None)
    impl.prefill(K[:n], V[:n])
    pos = np.arange(n + steps)
    kf = apply_rope(K, pos, pairing=pairing, rotary_dim=8 if partial else None)
    qf = apply_rope(Q, pos, pairing=pairing, rotary_dim=8 if partial else None)
    for t in range(steps):
        i = n + t
        q, kc, vc = impl.decode_step(Q[i], K[i], V[i])
        assert np.allclose(kc @ q, kf[: i + 1] @ qf[i], atol=1e-10)
        assert np.array_equal(vc, V[: i + 1])


def test_entries_are_fresh_and_validated():
    a, b = entry("interleaved"), entry("interleaved")
    assert a.impl is not b.impl
    with pytest.raises(ValueError, match="name must be one of"):
        entry("nonsense")
    with pytest.raises(ValueError, match="multiple of 4"):
        entry("partial", head_dim=6)
    with pytest.raises(ValueError, match="head_dim"):
        Rotary(16)(np.zeros((3, 8)), np.arange(3))
    with pytest.raises(ValueError, match="role must be one of"):
        Rotary(16)(np.zeros((3, 16)), np.arange(3), role="keys")
    with pytest.raises(ValueError, match="prompt must be at most"):
        attention_comparison("half", prompt=10**6)
    with pytest.raises(ValueError, match="x must be finite"):
        Rotary(8)(np.full((2, 8), np.nan), np.arange(2))


def test_every_entry_declares_a_manifest():
    for e in CATALOGUE.values():
        assert {"base", "head_dim", "rotary_dim", "pairing", "position_id_policy", "cache_offset",
                "phase_dtype"} <= set(e.manifest)


@settings(max_examples=40)
@given(a=st.integers(-5000, 5000), b=st.integers(-5000, 5000), pairing=st.sampled_from(["interleaved", "half"]),
       rotary=st.sampled_from([None, 8]), seed=st.integers(0, 10**6))
def test_rotary_composes_inverts_and_keeps_norms(a, b, pairing, rotary, seed):
    x = np.random.default_rng(seed).normal(size=(1, 16))
    f = Rotary(16, pairing=pairing, rotary_dim=rotary)
    assert np.allclose(f(f(x, [a]), [b]), f(x, [a + b]), atol=1e-9)
    assert np.allclose(f(f(x, [a]), [-a]), x, atol=1e-9)
    assert np.isclose(np.linalg.norm(f(x, [a])), np.linalg.norm(x), rtol=1e-12)
    assert np.array_equal(f(x, [a], role="value"), x)


def test_position_ids_policies():
    from ropegeo.book.broken import position_ids

    assert position_ids("contiguous", 4).tolist() == [0, 1, 2, 3]
    assert position_ids("left-padded", 3, pad=2).tolist() == [-1, -1, 0, 1, 2]
    assert position_ids("left-padded-naive", 3, pad=2).tolist() == [0, 1, 2, 3, 4]
    assert position_ids("packed-reset", [2, 3]).tolist() == [0, 1, 0, 1, 2]
    assert position_ids("packed-continuous", [2, 3]).tolist() == [0, 1, 2, 3, 4]
    for bad, msg in [(dict(policy="rows", lengths=3), "policy must be one of"),
                     (dict(policy="contiguous", lengths=0), "lengths must be"),
                     (dict(policy="contiguous", lengths=[]), "lengths must be"),
                     (dict(policy="contiguous", lengths=2.5), "lengths must be"),
                     (dict(policy="contiguous", lengths=10**6), "at most 65,536"),
                     (dict(policy="packed-reset", lengths=[2], pad=1), "only meaningful")]:
        with pytest.raises(ValueError, match=msg):
            position_ids(bad.pop("policy"), **bad)


def test_figures_build_and_refuse_bad_input():
    from matplotlib.figure import Figure

    from ropegeo.gates.a.gate import gate_a
    from ropegeo.book.plots import implementation as figs

    assert isinstance(figs.pairing_layouts(8), Figure)
    assert isinstance(figs.position_id_grid(), Figure)
    assert isinstance(figs.decoding_scores(("query-restart",), prompt=8), Figure)
    assert isinstance(figs.gate_a_matrix({"half": gate_a(entry("half", 16).impl, head_dim=16, pairing="half")}),
                      Figure)
    with pytest.raises(ValueError, match="head_dim must be at most 32"):
        figs.pairing_layouts(64)
    with pytest.raises(ValueError, match="prompt must be at most 16"):
        figs.position_id_grid(prompt=100)
    with pytest.raises(ValueError, match="names must list"):
        figs.decoding_scores(())
    with pytest.raises(ValueError, match="max_position must be at most"):
        figs.phase_error_curves(max_position=10**6)
    with pytest.raises(ValueError, match="span must be at most"):
        figs.mixing_effect(span=10**6)
    with pytest.raises(ValueError, match="reports must be"):
        figs.gate_a_matrix([])


@pytest.mark.parametrize("call, name", [
    (lambda: position_ids("contiguous", [2**62, 2**62]), "each length"),
    (lambda: position_ids("contiguous", "abc"), "lengths"),
    (lambda: entry(["x"]), "name must be one of"),
    (lambda: entry("interleaved", head_dim=2**22), "head_dim"),
    (lambda: shift_score_change("interleaved", samples=100_000, head_dim=4096), "samples \\* head_dim"),
    (lambda: packed_score_change(documents=(30_000, 30_000)), "at most 4,096"),
    (lambda: packed_score_change(documents=5.5), "lengths"),
])
def test_resource_and_type_limits(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_packed_score_change_accepts_one_document():
    assert packed_score_change(documents=12) < 1e-12


def test_manifest_replays_exactly_the_entries_whose_defect_it_records():
    from ropegeo.book.broken import manifest_replays

    got = {n for n in CATALOGUE if manifest_replays(n)}
    # values, the query-only scaling and the sliced end of the head have no manifest field
    assert set(CATALOGUE) - got == {"scaled-queries", "missliced-partial", "rotated-values"}
    with pytest.raises(ValueError, match="name must be one of"):
        manifest_replays("nope")
