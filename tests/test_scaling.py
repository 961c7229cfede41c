"""Extension rules: independent checks against closed forms, region boundaries, limits, and a
float32 transliteration of the transformers formulas (written here from the reference's text,
sharing no code with ropegeo.scaling)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ropegeo import scaling as S
from ropegeo import extension as SR
from ropegeo.frequencies import frequencies, turns
from ropegeo.models.manifest import load_model, read_config, shipped_models


# ------------------------------------------------------------------------------------------------
# A float32 transliteration of transformers' modeling_rope_utils (v4.5x, rope_scaling era):
# torch.arange(...).float() is float32, `python_float ** float32_tensor` is float32.
# ------------------------------------------------------------------------------------------------
F = np.float32


def _hf_dim(cfg):
    # DeepseekV3Config sets head_dim = qk_rope_head_dim; GPTJ rotates rotary_dim of n_embd // n_head
    if cfg.get("qk_rope_head_dim"):
        return cfg["qk_rope_head_dim"]
    if cfg.get("rotary_dim"):
        return cfg["rotary_dim"]
    prf = cfg.get("partial_rotary_factor", cfg.get("rotary_pct", 1.0))
    head_dim = cfg.get("head_dim") or (cfg.get("hidden_size") or cfg["n_embd"]) // (
        cfg.get("num_attention_heads") or cfg["n_head"])
    return int(head_dim * prf)


def _hf_base(cfg):
    return cfg.get("rope_theta", cfg.get("rotary_emb_base", 10000.0))


def _hf_default(cfg, dim=None):
    dim = _hf_dim(cfg) if dim is None else dim
    base = _hf_base(cfg)
    expo = np.arange(0, dim, 2).astype(F) / F(dim)
    return (F(1.0) / (F(base) ** expo)).astype(F)


def hf_reference(cfg, seq_len=None):
    rs = cfg.get("rope_scaling")
    if rs is None:
        return _hf_default(cfg), 1.0
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "su":
        kind = "longrope"
    base, dim = _hf_base(cfg), _hf_dim(cfg)
    if kind in ("mrope", "default"):  # transformers: M-RoPE's text positions use the default rule
        return _hf_default(cfg), 1.0
    if kind == "linear":
        return _hf_default(cfg) / F(rs["factor"]), 1.0
    if kind == "dynamic":
        mpe, factor = cfg["max_position_embeddings"], rs["factor"]
        n = mpe if seq_len is None else max(seq_len, mpe)
        nb = base * ((factor * n / mpe) - (factor - 1)) ** (dim / (dim - 2))
        expo = np.arange(0, dim, 2).astype(F) / F(dim)
        return (F(1.0) / (F(nb) ** expo)).astype(F), 1.0
    if kind == "yarn":
        factor = rs["factor"]
        omp = rs.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
        att = rs.get("attention_factor")
        ms, msa = rs.get("mscale"), rs.get("mscale_all_dim")

        def gm(scale, m=1):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        if att is None:
            att = gm(factor, ms) / gm(factor, msa) if (ms and msa) else gm(factor)
        bf = rs.get("beta_fast") or 32
        bs = rs.get("beta_slow") or 1

        def cdim(r):
            return (dim * math.log(omp / (r * 2 * math.pi))) / (2 * math.log(base))

        lo, hi = cdim(bf), cdim(bs)
        if rs.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if lo == hi:
            hi += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=F) - F(lo)) / F(hi - lo), 0, 1)
        pos = F(base) ** (np.arange(0, dim, 2).astype(F) / F(dim))
        extra = F(1.0) / pos
        inter = F(1.0) / (F(factor) * pos)
        keep = F(1.0) - ramp
        return (inter * (F(1) - keep) + extra * keep).astype(F), att
    if kind == "longrope":
        att = rs.get("attention_factor")
        if "original_max_position_embeddings" in cfg:
            omp = cfg["original_max_position_embeddings"]
            factor = cfg["max_position_embeddings"] / omp
        else:
            omp = cfg["max_position_embeddings"]
            factor = rs.get("factor")
        if att is None:
            att = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(omp))
        ext = np.asarray(rs["long_factor"] if (seq_len and seq_len > omp) else rs["short_factor"], dtype=F)
        shape = np.arange(0, dim, 2).astype(F) / F(dim)
        return (F(1.0) / (ext * F(base) ** shape)).astype(F), att
    if kind == "llama3":
        inv = _hf_default(cfg)
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        lw, hw = old / lo, old / hi
        wl = F(2 * math.pi) / inv
        out = np.where(wl > lw, inv / F(factor), inv)
        sm = (F(old) / wl - F(lo)) / F(hi - lo)
        smoothed = (F(1) - sm) * out / F(factor) + sm * out
        mid = ~(wl < hw) & ~(wl > lw)
        return np.where(mid, smoothed, out).astype(F), 1.0
    raise AssertionError(kind)


def _agree(theta64, ref32):
    # float64 against float32: a few float32 ulps
    np.testing.assert_allclose(theta64, ref32.astype(np.float64), rtol=4e-6, atol=0)


# ------------------------------------------------------------------------------------------------
# agreement with the reference, on every shipped model and at lengths around the switch points
# ------------------------------------------------------------------------------------------------
#: transformers 5.24.0's Gemma3TextConfig: head_dim 256, rope_theta 1e6 (its full-attention layers, the kind the
#: shipped record reads), 131,072 positions (Qwen3-VL's text block states its own)
_TEXT_CLASS_DEFAULTS = {"gemma3_text": {"head_dim": 256, "rope_theta": 1_000_000.0, "max_position_embeddings": 131_072}}


@pytest.mark.parametrize("name", shipped_models())
def test_shipped_models_match_reference(name):
    from ropegeo.models.manifest import model_record

    cfg = model_record(name)["config"]
    if "text_config" in cfg:  # a wrapper: its text model with what transformers' text class fills in
        cfg = {**_TEXT_CLASS_DEFAULTS.get(cfg["text_config"]["model_type"], {}), **cfg["text_config"]}
    m = load_model(name)
    L = m.train_length
    for n in (None, 1, L - 1, L, L + 1, 4 * L):
        ref, att = hf_reference(cfg, n)
        _agree(m.theta_at(n), ref)
        assert m.attention_at(n) == pytest.approx(att, rel=1e-12)


def _config(kind, **kw):
    cfg = {"hidden_size": kw.pop("hidden", 4096), "num_attention_heads": kw.pop("heads", 32),
           "max_position_embeddings": kw.pop("mpe", 4096), "rope_theta": kw.pop("base", 10000.0)}
    if "prf" in kw:
        cfg["partial_rotary_factor"] = kw.pop("prf")
    cfg["rope_scaling"] = None if kind is None else {"rope_type": kind, **kw}
    return cfg


@given(
    kind=st.sampled_from(["linear", "dynamic", "yarn", "llama3"]),
    factor=st.sampled_from([1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 32.0]),
    base=st.sampled_from([10_000.0, 500_000.0, 1_000_000.0]),
    heads=st.sampled_from([16, 32, 64]),
    mpe=st.sampled_from([2048, 4096, 8192, 32768]),
    seq=st.integers(1, 300_000),
)
def test_reference_agreement_property(kind, factor, base, heads, mpe, seq):
    extra = {}
    if kind == "llama3":
        extra = dict(low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=mpe)
    if kind == "yarn":
        extra = dict(original_max_position_embeddings=mpe)
    cfg = _config(kind, factor=factor, heads=heads, mpe=mpe, base=base, **extra)
    m = read_config(cfg)
    for n in (None, seq):
        ref, att = hf_reference(cfg, n)
        _agree(m.theta_at(n), ref)
        assert m.attention_at(n) == pytest.approx(att, rel=1e-12)


@pytest.mark.parametrize("truncate", [True, False])
@pytest.mark.parametrize("betas", [(32, 1), (16, 2), (64, 0.5), (0, 0)])
def test_yarn_options_match_reference(truncate, betas):
    bf, bs = betas
    cfg = _config("yarn", factor=8.0, original_max_position_embeddings=4096, beta_fast=bf, beta_slow=bs,
                  truncate=truncate, mscale=0.707, mscale_all_dim=0.707, mpe=32768)
    m = read_config(cfg)
    ref, att = hf_reference(cfg)
    _agree(m.theta_at(), ref)
    assert m.attention_at() == pytest.approx(att)
    assert att == pytest.approx(1.0)  # equal mscales cancel


def test_yarn_deepseek_mscale_and_explicit_attention():
    cfg = _config("yarn", factor=40.0, original_max_position_embeddings=4096, mscale=1.0, mscale_all_dim=0.5)
    m = read_config(cfg)
    expected = (0.1 * 1.0 * math.log(40) + 1) / (0.1 * 0.5 * math.log(40) + 1)
    assert m.attention_at() == pytest.approx(expected, rel=1e-14)
    cfg["rope_scaling"]["attention_factor"] = 0.9
    assert read_config(cfg).attention_at() == 0.9


# ------------------------------------------------------------------------------------------------
# limits: factor 1 gives back the base schedule
# ------------------------------------------------------------------------------------------------
@given(base=st.floats(2.0, 1e7), pairs=st.integers(2, 128))
def test_factor_one_is_identity(base, pairs):
    d = 2 * pairs
    th = frequencies(d, base)
    np.testing.assert_allclose(S.linear(th, 1.0), th, rtol=1e-15)
    np.testing.assert_allclose(S.ntk(d, base, 1.0), th, rtol=1e-12)
    # dynamic NTK is the exception: even at factor 1 its base grows once n > L (s n / L - (s - 1) = n / L)
    np.testing.assert_allclose(S.dynamic_ntk(d, base, 1.0, 4096, 4096), th, rtol=1e-12)
    y, att = S.yarn(d, base, 1.0, 4096)
    np.testing.assert_allclose(y, th, rtol=1e-15)
    assert att == 1.0
    np.testing.assert_allclose(S.llama3(d, base, 1.0, 8192), th, rtol=1e-15)
    ones = [1.0] * pairs
    lr, att = S.longrope(d, base, ones, ones, 4096, factor=1.0, seq_len=10**6)
    np.testing.assert_allclose(lr, th, rtol=1e-15)
    assert att == 1.0


# ------------------------------------------------------------------------------------------------
# closed forms per rule
# ------------------------------------------------------------------------------------------------
@given(base=st.floats(2.0, 1e7), pairs=st.integers(1, 128), train=st.integers(2, 10**5), s=st.floats(1.0, 64.0))
def test_interpolation_keeps_the_trained_phase_range(base, pairs, train, s):
    d = 2 * pairs
    th = frequencies(d, base)
    target = train * s
    pi = S.linear(th, s)
    # the longest served sequence sweeps exactly the angle the training length swept
    np.testing.assert_allclose(target * pi, train * th, rtol=1e-12)
    # adjacent tokens are 1/s as far apart
    np.testing.assert_allclose(pi / th, 1.0 / s, rtol=1e-12)


@given(base=st.floats(2.0, 1e6), pairs=st.integers(2, 128), s=st.floats(1.0, 64.0))
def test_ntk_keeps_fastest_and_slows_slowest_by_s(base, pairs, s):
    d = 2 * pairs
    th = frequencies(d, base)
    nt = S.ntk(d, base, s)
    assert nt[0] == th[0] == 1.0
    # derived: (B s^(d/(d-2)))^(-(d-2)/d) = B^(-(d-2)/d) / s
    assert nt[-1] == pytest.approx(th[-1] / s, rel=1e-10)
    # in between, the stretch grows geometrically with the pair index: s^(i/(pairs-1))
    i = np.arange(pairs)
    np.testing.assert_allclose(th / nt, s ** (i / (pairs - 1)), rtol=1e-9)


@given(pairs=st.integers(2, 64), s=st.floats(1.0, 32.0), L=st.integers(16, 10**5), extra=st.integers(0, 10**6))
def test_dynamic_ntk_is_ntk_at_the_effective_factor(pairs, s, L, extra):
    d = 2 * pairs
    base = 10_000.0
    n = L + extra
    eff = s * n / L - (s - 1)
    np.testing.assert_allclose(S.dynamic_ntk(d, base, s, L, n), S.ntk(d, base, eff), rtol=1e-12)
    # at or below the original length nothing changes (including exactly L)
    np.testing.assert_allclose(S.dynamic_ntk(d, base, s, L, L), frequencies(d, base), rtol=1e-12)
    np.testing.assert_allclose(S.dynamic_ntk(d, base, s, L, max(1, L // 2)), frequencies(d, base), rtol=1e-12)
    np.testing.assert_allclose(S.dynamic_ntk(d, base, s, L, None), frequencies(d, base), rtol=1e-12)


@given(base=st.sampled_from([10_000.0, 500_000.0, 1e6]), pairs=st.integers(8, 128),
       L=st.sampled_from([2048, 4096, 8192, 32768]), s=st.floats(1.5, 32.0))
def test_yarn_regions_follow_turn_counts(base, pairs, L, s):
    d = 2 * pairs
    th = frequencies(d, base)
    y, att = S.yarn(d, base, s, L)
    n_turns = turns(th, L)  # how many times each pair turns over the original length
    fast = n_turns >= 32  # turns at least beta_fast times: extrapolated (kept)
    slow = n_turns <= 1  # turns at most beta_slow times: fully interpolated
    np.testing.assert_allclose(y[fast], th[fast], rtol=1e-15)
    np.testing.assert_allclose(y[slow], th[slow] / s, rtol=1e-12)
    # everything lies between the two ends and never speeds up
    assert np.all(y <= th * (1 + 1e-15)) and np.all(y >= th / s * (1 - 1e-12))
    assert att == pytest.approx(0.1 * math.log(s) + 1.0, rel=1e-14)


def test_yarn_qwen_attention_factor_closed_form():
    m = load_model("qwen2.5-7b-instruct")
    assert m.attention_at() == pytest.approx(1 + 0.1 * math.log(4.0), rel=1e-15)


@pytest.mark.parametrize("name", ["phi-3-mini-128k-instruct", "phi-3.5-mini-instruct", "phi-3-vision-128k-instruct"])
def test_longrope_switch_and_attention(name):
    from ropegeo.models.manifest import model_record

    rec = model_record(name)["config"]
    m = load_model(name)
    base_theta = frequencies(96, 10_000.0)
    short = np.asarray(rec["rope_scaling"]["short_factor"])
    long = np.asarray(rec["rope_scaling"]["long_factor"])
    # a sequence of exactly the original length still uses the short list; one more token switches
    np.testing.assert_allclose(m.theta_at(4096), base_theta / short, rtol=1e-14)
    np.testing.assert_allclose(m.theta_at(None), base_theta / short, rtol=1e-14)
    np.testing.assert_allclose(m.theta_at(4097), base_theta / long, rtol=1e-14)
    # sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12): 32 = 2^5, 4096 = 2^12
    assert m.attention_at() == pytest.approx(math.sqrt(17 / 12), rel=1e-15)


@given(base=st.sampled_from([10_000.0, 500_000.0]), pairs=st.integers(4, 128), s=st.floats(1.0, 32.0),
       L=st.sampled_from([2048, 8192, 32768]), lo=st.floats(0.5, 2.0), gap=st.floats(0.5, 6.0))
def test_llama3_bands(base, pairs, s, L, lo, gap):
    d = 2 * pairs
    hi = lo + gap
    th = frequencies(d, base)
    out = S.llama3(d, base, s, L, low_freq_factor=lo, high_freq_factor=hi)
    for i in range(pairs):  # brute force, pair by pair
        lam = 2 * math.pi / th[i]
        if lam < L / hi:
            assert out[i] == th[i]  # high frequency: untouched
        elif lam > L / lo:
            assert out[i] == pytest.approx(th[i] / s, rel=1e-14)  # low frequency: divided by s
        else:
            g = (L / lam - lo) / (hi - lo)
            assert out[i] == pytest.approx(th[i] * (g + (1 - g) / s), rel=1e-12)
            assert th[i] / s * (1 - 1e-12) <= out[i] <= th[i] * (1 + 1e-12)


def test_llama31_documented_bands():
    m = load_model("llama-3.1-8b")
    th = frequencies(128, 500_000.0)
    out = m.theta_at()
    lam = 2 * np.pi / th
    assert np.array_equal(out[lam < 2048], th[lam < 2048])
    np.testing.assert_allclose(out[lam > 8192], th[lam > 8192] / 8, rtol=1e-15)
    # the smooth band is continuous: g -> 0 at the low edge, 1 at the high edge
    g = (8192 / lam - 1) / 3
    mid = (lam >= 2048) & (lam <= 8192)
    assert mid.any()
    np.testing.assert_allclose(out[mid], th[mid] * (g[mid] + (1 - g[mid]) / 8), rtol=1e-14)


# ------------------------------------------------------------------------------------------------
# trade-off measures
# ------------------------------------------------------------------------------------------------
def test_phase_novelty_by_hand():
    th = np.array([1.0, 1e-3, 1e-5])
    nov = SR.phase_novelty(th, th, 1000, 8000)
    # pair 0 turned fully in training; pair 1: 1 rad seen -> min(8, 2pi) now; pair 2: 0.01 -> 0.08
    np.testing.assert_allclose(nov, [0.0, (2 * np.pi - 1.0) / (2 * np.pi), 0.07 / (2 * np.pi)], rtol=1e-12)
    assert np.all(SR.phase_novelty(th, th / 8, 1000, 8000) == 0)  # interpolation adds none


def test_extension_report_trade_off():
    raw = SR.extension_report(None, base=10_000.0, rotary_dim=128, train_length=4096, target_length=32768)
    pi = SR.extension_report(S.preset("linear", train_length=4096, target_length=32768), base=10_000.0,
                            rotary_dim=128, train_length=4096, target_length=32768)
    th = frequencies(128)
    n_slow_train = int(np.sum(4096 * th < 2 * np.pi))  # pairs with an incomplete turn in training
    assert raw.novel_pairs == n_slow_train and raw.scaled_pairs == 0
    assert pi.novel_pairs == 0 and pi.scaled_pairs == 64
    assert pi.fastest_step == pytest.approx(1 / 8)
    assert pi.adjacent_similarity > raw.adjacent_similarity  # coarser local resolution
    assert pi.margin < raw.margin
    # paragraph-scale offsets 64, 128, .., 4096: interpolation squeezes them too, by brute force
    def coarse(th):
        offs = np.arange(64, 4097, 64)
        u = np.concatenate([np.cos(np.outer(offs, th)), np.sin(np.outer(offs, th))], axis=1)
        d2 = ((u[:, None, :] - u[None, :, :]) ** 2).sum(-1) / th.size
        return np.sqrt(d2[np.triu_indices(offs.size, 1)].min())
    assert raw.coarse_margin == pytest.approx(coarse(th), rel=1e-9)
    assert pi.coarse_margin == pytest.approx(coarse(th / 8), rel=1e-9)
    assert pi.coarse_margin < raw.coarse_margin


def test_preset_and_round_trip():
    sc = S.preset("yarn", train_length=4096, target_length=32768, beta_fast=16)
    assert sc.factor == 8 and sc.original_max_position_embeddings == 4096 and sc.beta_fast == 16
    assert S.Scaling.from_dict(sc.to_dict()) == sc
    assert S.preset("none", train_length=4096, target_length=8192) is None


# ------------------------------------------------------------------------------------------------
# refusals
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(rule="warp", factor=2), "rule must be one of"),
        (dict(rule="linear"), "linear scaling needs factor"),
        (dict(rule="linear", factor=0), "factor must be at least 1e-06"),
        (dict(rule="linear", factor=-2), "factor must be at least 1e-06"),
        (dict(rule="linear", factor=2, beta_fast=8), "takes no parameter 'beta_fast'"),
        (dict(rule="yarn", factor=2), "yarn scaling needs original_max_position_embeddings"),
        (dict(rule="llama3", factor=8, original_max_position_embeddings=8192, low_freq_factor=4, high_freq_factor=1),
         "high_freq_factor must not be below low_freq_factor"),
        (dict(rule="longrope", factor=2, original_max_position_embeddings=4096, short_factor=[1, 1], long_factor=[1]),
         "same length"),
        (dict(rule="longrope", factor=2, original_max_position_embeddings=4096, short_factor=[1, 0], long_factor=[1, 1]),
         "short_factor must hold numbers from 1e-06"),
    ],
)
def test_scaling_refusals(kw, match):
    with pytest.raises(ValueError, match=match):
        S.Scaling(**kw)


def test_rule_function_refusals():
    with pytest.raises(ValueError, match="head_dim must be at least 4"):
        S.ntk(2, 10_000.0, 2.0)
    with pytest.raises(ValueError, match="head_dim must be an even integer"):
        S.yarn(7, 10_000.0, 2.0, 4096)
    with pytest.raises(ValueError, match="short_factor must have one entry per rotary pair"):
        S.longrope(8, 10_000.0, [1.0] * 3, [1.0] * 3, 4096, factor=2.0)
    with pytest.raises(ValueError, match="target_length must be at least train_length"):
        S.preset("linear", train_length=4096, target_length=1024)
    with pytest.raises(ValueError, match="longrope_factors"):
        S.preset("longrope", train_length=4096, target_length=8192)


@given(
    pairs=st.sampled_from([8, 16, 48, 64]),
    data=st.data(),
    top_level=st.booleans(),
    seq=st.integers(1, 200_000),
)
def test_longrope_reference_agreement_property(pairs, data, top_level, seq):
    short = data.draw(st.lists(st.floats(0.5, 8.0), min_size=pairs, max_size=pairs))
    long = data.draw(st.lists(st.floats(1.0, 80.0), min_size=pairs, max_size=pairs))
    cfg = {"hidden_size": 2 * pairs * 8, "num_attention_heads": 8, "rope_theta": 10_000.0,
           "max_position_embeddings": 131_072 if top_level else 4096,
           "rope_scaling": {"type": "longrope", "short_factor": short, "long_factor": long, "factor": 16.0}}
    if top_level:
        cfg["original_max_position_embeddings"] = 4096
    m = read_config(cfg)
    for n in (None, 4095, 4096, 4097, seq):
        ref, att = hf_reference(cfg, n)
        _agree(m.theta_at(n), ref)
        assert m.attention_at(n) == pytest.approx(att, rel=1e-12)


@given(head=st.sampled_from([64, 80, 96, 128, 256]), prf=st.sampled_from([0.25, 0.4, 0.5, 0.75, 1.0]),
       kind=st.sampled_from([None, "linear", "yarn", "llama3"]))
def test_partial_rotary_reference_agreement(head, prf, kind):
    extra = {}
    if kind == "llama3":
        extra = dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=4096)
    elif kind is not None:
        extra = dict(factor=4.0)
    cfg = _config(kind, hidden=head * 16, heads=16, prf=prf, **extra)
    if int(head * prf) % 2:
        return  # odd widths are refused by ropegeo (tested in test_manifest)
    m = read_config(cfg)
    assert m.rotary_dim == int(head * prf)
    ref, att = hf_reference(cfg, 10_000)
    _agree(m.theta_at(10_000), ref)


def test_bad_rule_parameters_are_value_errors_naming_them():
    """The rule functions refuse what the config reader and Scaling refuse (issue 28)."""
    import ropegeo.scaling as S

    with pytest.raises(ValueError, match="truncate must be True or False"):
        S.rules.yarn(128, 10_000.0, 8.0, 4096, truncate="no")
    with pytest.raises(ValueError, match=r"beta_fast \(32\) must not be below beta_slow \(40\)"):
        S.rules.yarn(128, 10_000.0, 8.0, 4096, beta_slow=40.0)
    with pytest.raises(ValueError, match="unknown parameter.*'foo'.*beta_fast"):
        S.preset("yarn", train_length=4096, target_length=32768, foo=1)
    with pytest.raises(ValueError, match="linear rule takes no further parameters"):
        S.preset("linear", train_length=4096, target_length=32768, foo=1)
    # equal betas stay allowed, as in the reader (one ramp end nudged)
    th, _ = S.rules.yarn(128, 10_000.0, 8.0, 4096, beta_fast=4.0, beta_slow=4.0)
    assert th.shape == (64,)


# ------------------------------------------------------------------------------------------------
# one list of rules, one builder of "rule R stretching L to L', read at length n" (issue 34)
# ------------------------------------------------------------------------------------------------
def _closed_form(rule, d, base, L, target, n):
    """Frequencies and position scale of ``rule`` stretching L to target, read at n, from the
    formulas of the module docstring (numpy only, not ropegeo.scaling)."""
    s = target / L
    i = np.arange(d // 2)
    plain = base ** (-2.0 * i / d)
    if rule in ("none", "raw"):
        return plain, 1.0
    if rule in ("linear", "pi", "interpolation"):
        return plain, 1.0 / s
    if rule == "ntk":
        return (base * s ** (d / (d - 2))) ** (-2.0 * i / d), 1.0
    if rule in ("dynamic", "dynamic_ntk"):  # transformers: the configuration's factor s at length n
        bracket = s * max(n, L) / L - (s - 1)
        return (base * bracket ** (d / (d - 2))) ** (-2.0 * i / d), 1.0
    raise AssertionError(rule)


@pytest.mark.parametrize("rule", ["none", "raw", "linear", "pi", "interpolation", "ntk", "dynamic", "dynamic_ntk"])
@pytest.mark.parametrize("L, target, n", [(64, 256, 256), (64, 256, 128), (64, 512, 1024), (4096, 32768, 32768)])
def test_the_builders_of_a_rule_at_a_length_agree(rule, L, target, n):
    d, base = 16, 10_000.0
    want, want_scale = _closed_form(rule, d, base, L, target, n)
    sch = S.extension_schedule(rule, head_dim=d, base=base, train_length=L, length=n, factor=target / L)
    np.testing.assert_allclose(sch.theta * sch.scale, want * want_scale, rtol=1e-12)
    theta, att = S.scaled_frequencies(S.preset(rule, train_length=L, target_length=target), d, base, n)
    np.testing.assert_allclose(theta, want * want_scale, rtol=1e-12)
    assert att == sch.attention_factor == 1.0 and sch.rule == S.rule_name(rule)


@pytest.mark.parametrize("rule", ["yarn", "llama3", "ntk", "dynamic", "linear"])
def test_extension_schedule_is_the_preset_read_at_the_length(rule):
    # the default factor is length / train_length: the rule configured for the length it is read at
    d, base, L, n = 32, 500_000.0, 128, 1024
    sch = S.extension_schedule(rule, head_dim=d, base=base, train_length=L, length=n)
    theta, att = S.scaled_frequencies(S.preset(rule, train_length=L, target_length=n), d, base, n)
    np.testing.assert_allclose(sch.theta * sch.scale, theta, rtol=1e-12)
    assert sch.attention_factor == pytest.approx(att, rel=1e-12)


def test_dynamic_has_one_meaning_and_factor_one_names_the_other():
    """64 -> 256 at head width 16: both builders give transformers' 0.2192 for the second frequency
    (the bracket 4 * 256 / 64 - 3 = 13); the base following the length alone (factor 1) gives 0.2594
    (the bracket 256 / 64 = 4). Before issue 34 extension_schedule gave 0.2594 by default."""
    d, base = 16, 10_000.0
    transformers = (base * 13.0 ** (d / (d - 2))) ** (-2.0 / d)
    follows = (base * 4.0 ** (d / (d - 2))) ** (-2.0 / d)
    assert round(transformers, 4) == 0.2192 and round(follows, 4) == 0.2594
    kw = dict(head_dim=d, base=base, train_length=64, length=256)
    assert S.extension_schedule("dynamic", **kw).theta[1] == pytest.approx(transformers, rel=1e-12)
    assert S.scaled_frequencies(S.preset("dynamic", train_length=64, target_length=256), d, base, 256)[0][1] \
        == pytest.approx(transformers, rel=1e-12)
    assert S.extension_schedule("dynamic", factor=1, **kw).theta[1] == pytest.approx(follows, rel=1e-12)
    # and the configuration read at a length transformers would see (dynamic_ntk, the formula itself)
    assert S.dynamic_ntk(d, base, 4.0, 64, 256)[1] == pytest.approx(transformers, rel=1e-12)


def test_one_vocabulary_of_rule_names():
    for alias, name in S.RULE_ALIASES.items():
        assert S.rule_name(alias) == name
        assert S.preset(alias, train_length=64, target_length=256) == S.preset(name, train_length=64, target_length=256)
    assert S.NAMED_RULES == ("none",) + tuple(r for r in S.RULES if r != "longrope")
    assert tuple(S.RULE_FUNCTIONS) == S.RULES and set(S.RULE_ALIASES.values()) <= set(S.NAMED_RULES)
    assert S.preset(None, train_length=64, target_length=256) is None  # raw extrapolation
    for bad in ("yarnish", "", 3):
        with pytest.raises(ValueError, match="rule must be one of"):
            S.preset(bad, train_length=64, target_length=256)
    for bad in ("yarnish", "", None, 3):
        with pytest.raises(ValueError, match="extension must be one of"):
            S.extension_schedule(bad, head_dim=8, base=1e4, train_length=64, length=256)
    # longrope is a rule of the table: it needs its per-pair lists, from either builder
    with pytest.raises(ValueError, match="longrope_factors"):
        S.extension_schedule("longrope", head_dim=8, base=1e4, train_length=64, length=256)
    f = ([1.0, 1.0, 2.0, 4.0], [1.0, 2.0, 4.0, 8.0])
    sch = S.extension_schedule("longrope", head_dim=8, base=1e4, train_length=64, length=256, longrope_factors=f)
    np.testing.assert_allclose(sch.theta, frequencies(8, 1e4) / np.array(f[1]), rtol=1e-12)
