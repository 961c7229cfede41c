"""Chapter 5's numbers, read from the stored notebook outputs, against independent derivations.

Rotations are rebuilt here with explicit cosines and sines (both layouts), frequencies with the
closed form ``base ** (-2 i / d)``, low-precision phases with ml_dtypes casts written out step by
step, and the draws of the package's experiments are replayed from their documented seeds.
"""

import re
from pathlib import Path

import ml_dtypes
import nbformat
import numpy as np
import pytest
from glue import read_glued

from ropegeo.book.broken import CATALOGUE, attention_comparison, broken_entries, correct_entries, entry

NB = Path(__file__).resolve().parents[1] / "chapters" / "05_implementation.ipynb"


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NB, as_version=4)


@pytest.fixture(scope="module")
def glued():
    return read_glued(NB)[0]


def freqs(d, base=10_000.0):
    return np.array([base ** (-2 * i / d) for i in range(d // 2)])


def rot(x, pos, d=None, pairing="interleaved", scale=1.0, rotary=None):
    """Explicit rotation of x (..., d) at positions broadcast to x.shape[:-1]."""
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    r = rotary or d
    th = freqs(r)
    ang = (np.asarray(pos, dtype=float) * scale)[..., None] * th
    c, s = np.cos(ang), np.sin(ang)
    if pairing == "interleaved":
        i1, i2 = np.arange(0, r, 2), np.arange(1, r, 2)
    else:
        i1, i2 = np.arange(r // 2), np.arange(r // 2, r)
    out = np.array(np.broadcast_to(x, np.broadcast_shapes(x.shape, c.shape[:-1] + (d,))))
    a, b = out[..., i1].copy(), out[..., i2].copy()
    out[..., i1] = a * c - b * s
    out[..., i2] = a * s + b * c
    return out


# ---------------------------------------------------------------- the notebook itself
def test_every_glue_reference_is_glued(nb, glued):
    refs = set()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            refs |= set(re.findall(r"\{glue:text\}`([a-zA-Z0-9_]+)", cell.source))
    assert refs and refs <= set(glued), refs - set(glued)


def test_notebook_executed_without_errors(nb):
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.get("execution_count") is not None
            assert not any(o.output_type == "error" for o in cell.outputs)


def test_at_least_four_exercises_with_solutions(nb):
    labels = [m for c in nb.cells if c.cell_type == "markdown"
              for m in re.findall(r":label: (ch05-[a-z0-9-]+)", c.source)]
    assert len(labels) >= 4
    starts = [m for c in nb.cells if c.cell_type == "markdown"
              for m in re.findall(r"\{solution-start\} (ch05-[a-z0-9-]+)", c.source)]
    assert starts == labels


# ---------------------------------------------------------------- mixing the conventions
def test_mixing_numbers(glued):
    d = 64
    # pairs that survive: {(2i, 2i+1)} and {(i, i + d/2)} share a pair only when 2i+1 = i + d/2 and 2i = i
    inter = {(2 * i, 2 * i + 1) for i in range(d // 2)}
    half = {(i, i + d // 2) for i in range(d // 2)}
    assert glued["mix_pairs"] == d // 2
    assert glued["mix_pairs_intact"] == len(inter & half) == 0
    # replay the documented draws of mixing_summary(seed=0)
    rng = np.random.default_rng(0)
    Q, K = rng.normal(size=(2, 400, d))
    m, n = rng.integers(0, 512, size=(2, 400))
    norms = np.linalg.norm(Q, axis=-1) * np.linalg.norm(K, axis=-1)
    right = np.sum(rot(Q, m) * rot(K, n), axis=-1)
    mixed = np.sum(rot(Q, m, pairing="half") * rot(K, n, pairing="half"), axis=-1)
    change = np.abs(mixed - right) / norms
    assert glued["mix_score_change_median"] == pytest.approx(np.median(change), rel=1e-9)
    assert glued["mix_score_change_max"] == pytest.approx(np.max(change), rel=1e-9)
    # the worst of 400: its 5% and 95% quantiles over seeds 0 to 99, and ~90% of the disjoint 1000-1099 inside
    worst = [_mixed_worst(seed) for seed in range(100)]
    assert glued["mix_max_lo"] == pytest.approx(np.quantile(worst, 0.05), rel=1e-9)
    assert glued["mix_max_hi"] == pytest.approx(np.quantile(worst, 0.95), rel=1e-9)
    _holds_on_new_seeds(glued["mix_max_lo"], glued["mix_max_hi"], [_mixed_worst(s) for s in range(1000, 1100)],
                        stated=glued["mix_max_new"])
    # the median of 400 likewise: seed 0's value is one draw, the prose gives its 5-95% band over seeds 0-99
    medians = [_mixed_worst(seed, stat=np.median) for seed in range(100)]
    assert glued["mix_median_lo"] == pytest.approx(np.quantile(medians, 0.05), rel=1e-9)
    assert glued["mix_median_hi"] == pytest.approx(np.quantile(medians, 0.95), rel=1e-9)
    assert glued["mix_median_lo"] <= glued["mix_score_change_median"] <= glued["mix_median_hi"]
    _holds_on_new_seeds(glued["mix_median_lo"], glued["mix_median_hi"],
                        [_mixed_worst(s, stat=np.median) for s in range(1000, 1100)], stated=glued["mix_median_new"])
    # rotations keep norms, and at equal positions both reduce to q . k
    assert glued["mix_norm_change"] < 1e-13
    assert glued["mix_equal_position_change"] < 1e-13


def _holds_on_new_seeds(lo, hi, values, stated=None):
    """A 5-95% interval stated on seeds 0-99 holds on a disjoint set: at least 80 of 100 new seeds inside
    (90 expected; fewer than 80 has probability below 0.2% if the interval is right). ``stated`` is the
    chapter's own count of the new seeds inside, which this independent replay must reproduce."""
    inside = sum(lo <= v <= hi for v in values)
    assert inside >= 0.8 * len(values), (lo, hi, inside)
    if stated is not None:
        assert stated == inside, (stated, inside)


def _mixed_worst(seed, d=64, stat=np.max):
    """The worst (or ``stat``) of 400 score changes under the mixed helper, replayed from mixing_summary's draws."""
    rng = np.random.default_rng(seed)
    Q, K = rng.normal(size=(2, 400, d))
    m, n = rng.integers(0, 512, size=(2, 400))
    norms = np.linalg.norm(Q, axis=-1) * np.linalg.norm(K, axis=-1)
    right = np.sum(rot(Q, m) * rot(K, n), axis=-1)
    mixed = np.sum(rot(Q, m, pairing="half") * rot(K, n, pairing="half"), axis=-1)
    return float(stat(np.abs(mixed - right) / norms))


# ---------------------------------------------------------------- position ids
def test_global_shifts_leave_scores(glued):
    # the relative law: a common shift of both sides changes no score (up to rounding)
    for key in ("pad_change", "packed_change", "origin_both", "partial_pass_range"):
        assert glued[key] < 1e-12


def _shift_replay(shift, query_only=False, q_scale=1.0, seed=0):
    d = 64
    rng = np.random.default_rng(seed)
    Q, K = rng.normal(size=(2, 64, d))
    m, n = rng.integers(0, 512, size=(2, 64))
    norms = np.linalg.norm(Q, axis=-1) * np.linalg.norm(K, axis=-1)
    s0 = np.sum(rot(Q, m, scale=q_scale) * rot(K, n), axis=-1)
    s1 = np.sum(rot(Q, m + shift, scale=q_scale) * rot(K, n + (0 if query_only else shift)), axis=-1)
    return float(np.max(np.abs(s1 - s0) / norms))


def test_one_sided_shifts(glued):
    assert glued["origin_query"] == pytest.approx(_shift_replay(1000, query_only=True), rel=1e-9)
    assert glued["scaledq_shift"] == pytest.approx(_shift_replay(1000, q_scale=0.5), rel=1e-9)
    assert glued["origin_query"] > 0.05 and glued["scaledq_shift"] > 0.05
    # the prose gives the sample's maximum and its 5% and 95% quantiles over seeds 0 to 99 ...
    origin = [_shift_replay(1000, query_only=True, seed=s) for s in range(100)]
    scaled = [_shift_replay(1000, q_scale=0.5, seed=s) for s in range(100)]
    assert glued["origin_query_lo"] == pytest.approx(np.quantile(origin, 0.05), rel=1e-9)
    assert glued["origin_query_hi"] == pytest.approx(np.quantile(origin, 0.95), rel=1e-9)
    assert glued["scaledq_lo"] == pytest.approx(np.quantile(scaled, 0.05), rel=1e-9)
    assert glued["scaledq_hi"] == pytest.approx(np.quantile(scaled, 0.95), rel=1e-9)
    # ... which hold on the disjoint seeds 1000 to 1099
    _holds_on_new_seeds(glued["origin_query_lo"], glued["origin_query_hi"],
                        [_shift_replay(1000, query_only=True, seed=s) for s in range(1000, 1100)],
                        stated=glued["origin_query_new"])
    _holds_on_new_seeds(glued["scaledq_lo"], glued["scaledq_hi"],
                        [_shift_replay(1000, q_scale=0.5, seed=s) for s in range(1000, 1100)],
                        stated=glued["scaledq_new"])


def _decode_replay(query_pos, key_pos, prompt=300, d=64, seed=0, output=False):
    """The largest scaled-score gap of one decoding step (or, with ``output``, the attention output's
    relative change), the new token's query at ``query_pos`` and key at ``key_pos``."""
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.normal(size=(prompt + 1, d)) for _ in range(3))
    keys_ref = rot(K, np.arange(prompt + 1))
    ref = keys_ref @ rot(Q[prompt], prompt) / np.sqrt(d)
    keys = np.vstack([keys_ref[:prompt], rot(K[prompt], key_pos)])
    got = keys @ rot(Q[prompt], query_pos) / np.sqrt(d)
    if not output:
        return float(np.max(np.abs(got - ref)))
    w_ref, w_got = np.exp(ref - ref.max()), np.exp(got - got.max())
    o_ref, o_got = (w_ref / w_ref.sum()) @ V, (w_got / w_got.sum()) @ V
    return float(np.linalg.norm(o_got - o_ref) / np.linalg.norm(o_ref))


def _top_key_changed(query_pos, key_pos, prompt=48, d=64, seed=0):
    """Whether one decoding step's most-attended key (the largest score) differs from the declared operator's."""
    rng = np.random.default_rng(seed)
    Q, K, _ = (rng.normal(size=(prompt + 1, d)) for _ in range(3))
    keys_ref = rot(K, np.arange(prompt + 1))
    keys = np.vstack([keys_ref[:prompt], rot(K[prompt], key_pos)])
    return int(np.argmax(keys @ rot(Q[prompt], query_pos)) != np.argmax(keys_ref @ rot(Q[prompt], prompt)))


def test_most_attended_key_counts(glued):
    # "a different choice of which tokens to read", counted: the stated counts over seeds 0-99 and 1000-1099
    # are replayed here, and on both sets the direction and a range must hold. Measured: 89 and 33 of seeds
    # 0-99, 79 and 33 of seeds 1000-1099; pooled rates 0.84 and 0.33 give binomial spreads of about 4 and 5
    # seeds per 100, so the bounds (restart >= 70, slip 15 to 55) sit at least 3.5 spreads from the pooled counts
    p = int(glued["decode_prompt"])
    cases = {"restart": (0, 0), "offbyone": (p + 1, p + 1)}
    counts = {}
    for tag, (qp, kp) in cases.items():
        old = sum(_top_key_changed(qp, kp, prompt=p, seed=s) for s in range(100))
        new = sum(_top_key_changed(qp, kp, prompt=p, seed=s) for s in range(1000, 1100))
        assert glued[f"{tag}_top"] == old and glued[f"{tag}_top_new"] == new, (tag, old, new)
        counts[tag] = (old, new)
    for i in (0, 1):
        assert counts["restart"][i] > counts["offbyone"][i], counts
        assert counts["restart"][i] >= 70 and 15 <= counts["offbyone"][i] <= 55, counts


def test_decoding_errors(glued, nb):
    # the prose quotes the prompt the figure draws (it once quoted 300 tokens beside a figure of 48)
    p = int(glued["decode_prompt"])
    assert p == 48
    assert glued["restart_error"] == pytest.approx(_decode_replay(0, 0, prompt=p), rel=1e-9)
    assert glued["offbyone_error"] == pytest.approx(_decode_replay(p + 1, p + 1, prompt=p), rel=1e-9)
    # seed 0 is one draw: the prose gives the 5% and 95% quantiles over seeds 0 to 99 of the score gap
    # and of the attention output's relative change, each holding on >= 80 of the disjoint 1000-1099
    slips = {"restart": lambda s, out: _decode_replay(0, 0, prompt=p, seed=s, output=out),
             "offbyone": lambda s, out: _decode_replay(p + 1, p + 1, prompt=p, seed=s, output=out)}
    for tag, replay in slips.items():
        for short, out in (("score", False), ("out", True)):
            old = [replay(s, out) for s in range(100)]
            lo, hi = glued[f"{tag}_{short}_lo"], glued[f"{tag}_{short}_hi"]
            assert lo == pytest.approx(np.quantile(old, 0.05), rel=1e-9)
            assert hi == pytest.approx(np.quantile(old, 0.95), rel=1e-9)
            _holds_on_new_seeds(lo, hi, [replay(s, out) for s in range(1000, 1100)],
                                stated=glued[f"{tag}_{short}_new"])
    # the figure's seed is an upper-end draw for both slips, as the prose says
    assert glued["restart_error"] > glued["restart_score_hi"]
    assert glued["offbyone_error"] > np.median([slips["offbyone"](s, False) for s in range(100)])
    # a different choice of tokens to read: the output moves by a sizable share of its norm
    assert glued["offbyone_out_lo"] > 0.1 and glued["restart_out_lo"] > 0.3
    cell = next(c.source for c in nb.cells if c.cell_type == "code" and "figs.decoding_scores(" in c.source)
    assert "prompt=prompt" in cell.split("figs.decoding_scores(")[1] and "prompt = 48" in cell


def _half_rotation(x, positions, base, d=64):
    """Half-split rotation written out: pair i is (i, i + d/2), angle p * base ** (-2 i / d)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    ang = np.asarray(positions, dtype=float)[:, None] * np.array([base ** (-2 * i / d) for i in range(d // 2)])
    a, b = x[:, : d // 2], x[:, d // 2:]
    return np.concatenate([a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)], axis=-1)


class _Cache:
    """A KV cache written independently of the chapter's: base B (n / 12)^(64/62) past 12 tokens."""

    def __init__(self, dynamic):
        self.dynamic, self.keys, self.values = dynamic, np.zeros((0, 64)), np.zeros((0, 64))

    def __call__(self, x, positions, role="query"):
        x = np.asarray(x, dtype=float)
        if role == "value":
            return x.copy()
        pos = np.asarray(positions)
        return _half_rotation(x.reshape(-1, 64), np.broadcast_to(pos, x.shape[:-1]).reshape(-1), 1e4).reshape(x.shape)

    def prefill(self, keys, values):
        self.keys, self.values = self(keys, np.arange(len(keys)), "key"), np.array(values, dtype=float)

    def decode_step(self, q, k, v):
        p, n = len(self.keys), len(self.keys) + 1
        base = 1e4 * (n / 12) ** (64 / 62) if self.dynamic and n > 12 else 1e4
        qr, kr = _half_rotation(q, [p], base)[0], _half_rotation(k, [p], base)[0]
        self.keys, self.values = np.vstack([self.keys, kr]), np.vstack([self.values, v])
        return qr, self.keys.copy(), self.values.copy()


def test_stale_dynamic_cache_and_the_protocols(glued, nb):
    from ropegeo.gates.a.gate import gate_a
    assert (glued["dyn_original"], glued["dyn_first_n"], glued["dyn_fixed_passed"]) == (12, 13, 1)
    # factor 1: the slowest pair of a 64-wide head slows by exactly n / original = 13 / 12
    assert glued["dyn_slowest_ratio"] == pytest.approx(12 / 13, rel=1e-12)
    # the base grows by (13/12)^(64/62); pair k turns at (13/12)^(-2k/62) of its old rate
    profile = (13 / 12) ** (-2 * np.arange(32) / 62)
    assert glued["dyn_base_ratio"] == pytest.approx((13 / 12) ** (64 / 62), rel=1e-12)
    assert glued["dyn_pair0_ratio"] == 1.0 and glued["dyn_mean_ratio"] == pytest.approx(profile.mean(), rel=1e-12)
    fixed = gate_a(_Cache(False), head_dim=64, base=1e4, pairing="half")
    stale = gate_a(_Cache(True), head_dim=64, base=1e4, pairing="half")
    assert fixed.passed, fixed.table()
    assert stale.failed == ["decoding"], stale.table()
    assert "query" in stale.diagnosis and "cached keys" in stale.diagnosis
    assert f"a base {(13 / 12) ** (64 / 62):.4g} times the declared one" in stale.diagnosis
    # the chapter's stored output says the same of its own class
    out = next("".join(o.get("text", "") for o in c.outputs) for c in nb.cells
               if c.cell_type == "code" and "class DynamicCache" in c.source)
    assert "cache, fixed base: Gate A: PASS" in out and "cache, dynamic NTK: Gate A: FAIL" in out
    assert "protocols: callable, role, decoder" in out
    assert f"a base {(13 / 12) ** (64 / 62):.4g} times the declared one" in out  # not a median scale
    # Gate A reads pair i only if 12 theta_i < 1 rad: 10000^(-2i/64) < 1/12, i > 32 ln 12 / ln 10000
    first = int(np.floor(32 * np.log(12) / np.log(1e4))) + 1
    assert glued["dyn_first_measured"] == first == 9
    assert glued["dyn_first_measured_ratio"] == pytest.approx(profile[first], rel=1e-12)
    assert f"measured pairs turn at {profile[-1]:.3f} to {profile[first]:.3f}" in " ".join(out.split())
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    # 25104 is the stale-cache report (PR 27227's case 1); 25306 the table not reset (PRs 25308 and 27033
    # proposed fixes, both closed unmerged)
    assert "[issue 25104](https://github.com/huggingface/transformers/issues/25104)" in text
    assert "transformers issues 25306 and 25104" not in text and "pull/25308" in text


def test_inference_engines(glued, nb):
    # vLLM's one table: the bracket at factor x original length is s^2 - s + 1, the slowest pair's stretch
    s = glued["vllm_factor"]
    assert s == 4 and glued["vllm_bracket"] == pytest.approx(s * s - s + 1, rel=1e-12)
    # transformers' bracket s n / L - (s - 1) at n = s L is the same s^2 - s + 1: the rulers agree there ...
    L = glued["vllm_original"]
    assert L == 4096 and glued["vllm_agree_at"] == s * L and s * (s * L) / L - (s - 1) == s * s - s + 1
    assert glued["vllm_gap_at_agree"] < 1e-12
    # ... and within L transformers keeps the unscaled base, so vLLM's slowest pair turns s^2 - s + 1 times slower
    assert glued["vllm_slowdown_100"] == pytest.approx(s * s - s + 1, rel=1e-12)
    text_all = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    # YaRN's table: get_rope hands the YaRN module the original length, so rows = original x factor
    assert "`original_max_position_embeddings` × factor for YaRN" in text_all
    # the served-below-trained bracket of issue 52665: 2 * 512 / 2048 - (2 - 1) = -0.5
    assert 2 * 512 / 2048 - (2 - 1) == -0.5 and "issues/52665" in text_all and "pull/52675" in text_all
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for phrase in ("is_neox_style", "cos_sin_cache", "v0.6.6.post1", "LLAMA_ROPE_TYPE_NEOX", "LLAMA_ROPE_TYPE_NORM",
                   "LLAMA_ROPE_TYPE_MROPE", "convert_hf_to_gguf.py", "b4418", "num_key_value_heads",
                   "_configure_distributed_model", "buffer_dtype", "prefill(keys, values)", "decode_step(",
                   "max_trained_positions", "pull/41277", "MixedPrecisionPolicy", "bfSixteen", "issues/146114",
                   "mistral-inference", "llama-models", "torchtune"):
        assert phrase in text, phrase
    # the post-41277 bracket is pinned to the release we read (v0.34.0's wheel), not to an unpinned docs page;
    # the encoder class the docs page showed is in no release we could check
    assert "v0.34.0" in text and "docs.vllm.ai" not in text and "ForEncoder" not in text


def test_partial_rotary_range(glued):
    d, r = 64, 16
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, d))
    delta = np.arange(-256, 257)
    kr = rot(np.broadcast_to(k, (delta.size, d)), delta, pairing="half", rotary=r)
    assert glued["partial_rot_range"] == pytest.approx(np.ptp(kr[:, :r] @ q[:r]), rel=1e-9)
    # the pass-through part is q[r:] . k[r:] at every displacement
    assert np.allclose(kr[:, r:] @ q[r:], q[r:] @ k[r:], atol=1e-12)


# ---------------------------------------------------------------- precision
def _first_inexact_integer(dtype):
    n = 0
    while float(np.array(n, dtype=np.float64).astype(dtype)) == n:
        n += 1
    return n


def test_integer_limits(glued):
    assert glued["limit_fp16"] == _first_inexact_integer(np.float16) - 1 == 2048
    assert glued["limit_bf16"] == _first_inexact_integer(ml_dtypes.bfloat16) - 1 == 256


@pytest.mark.parametrize("tag,dtype", [("f32", np.float32), ("f16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_phase_error_at_4096(glued, tag, dtype):
    # every step in the dtype: position, frequency, product, cos and sin; then the angle between
    # the generated unit vector and the exact one
    th = freqs(128)
    p = np.array(4096.0).astype(dtype)
    ang = (p * th.astype(dtype)).astype(dtype)
    c = np.cos(ang).astype(dtype).astype(float)
    s = np.sin(ang).astype(dtype).astype(float)
    true = 4096.0 * th
    err = np.abs(np.arctan2(s * np.cos(true) - c * np.sin(true), c * np.cos(true) + s * np.sin(true)))
    assert glued[f"err4096_{tag}"] == pytest.approx(err.max(), rel=1e-6)


# ---------------------------------------------------------------- Gate A on the catalogue
def test_gate_counts(glued):
    assert glued["n_correct"] == len(correct_entries()) == 4
    assert glued["n_broken"] == len(broken_entries()) == 8
    assert glued["n_correct_pass"] == 4
    assert glued["n_broken_named"] == 8
    from ropegeo.gates.verdicts import DEFECT_CLASSES

    # the prose's "a catalogue of N implementations" and "one of N classes", counted afresh
    assert glued["n_catalogue"] == len(CATALOGUE) == glued["n_correct"] + glued["n_broken"] == 12
    assert glued["n_class_names"] == len(set(DEFECT_CLASSES)) == 11
    # "10 RoPE classes plus `contract`": contract is a calling-convention break, not a RoPE finding
    assert "contract" in DEFECT_CLASSES and glued["n_rope_classes"] == len(set(DEFECT_CLASSES) - {"contract"}) == 10


@pytest.mark.parametrize("name", broken_entries())
def test_each_flagged_defect_is_real(name):
    # independent of Gate A: the defect shows in the scores or outputs of a decoding step
    res = attention_comparison(name, prompt=300)
    assert max(res["score_error"], res["output_error"]) > 1e-3
    assert CATALOGUE[name].check is not None


# ---------------------------------------------------------------- what a manifest can record
def _manifest_operator(man, x, positions):
    """The operator a manifest dict describes, written out: explicit cos/sin, the angle formed in
    the phase dtype (position, frequency and product each rounded), the leading rotary_dim
    coordinates rotating, a linear scaling as a divided frequency."""
    d, r = man["head_dim"], man["rotary_dim"]
    th = freqs(r, man["base"])
    if man.get("scaling"):
        assert man["scaling"]["rule"] == "linear"
        th = th / man["scaling"]["factor"]
    dt = {"float64": np.float64, "bfloat16": ml_dtypes.bfloat16}[man["phase_dtype"]]
    ang = (np.asarray(positions, dtype=float).astype(dt)[:, None] * th.astype(dt)).astype(float)
    if man["pairing"] == "interleaved":
        i1, i2 = np.arange(0, r, 2), np.arange(1, r, 2)
    else:
        i1, i2 = np.arange(r // 2), np.arange(r // 2, r)
    out = np.array(x, dtype=float)
    a, b = out[:, i1].copy(), out[:, i2].copy()
    out[:, i1] = a * np.cos(ang) - b * np.sin(ang)
    out[:, i2] = a * np.sin(ang) + b * np.cos(ang)
    assert out.shape[1] == d
    return out


def test_manifest_counts(glued):
    # a defect shows in the manifest when the operator the manifest describes replays the code:
    # one decoding step after a 12-token prompt (query, cached keys at 0..11 and at the next
    # position the manifest records, and values, which RoPE leaves alone)
    rng = np.random.default_rng(7)
    shows = []
    for name in broken_entries():
        man = CATALOGUE[name].manifest
        impl = entry(name).impl
        x = rng.normal(size=(13, man["head_dim"]))
        impl.prefill(x[:12], x[:12])
        q, keys, values = impl.decode_step(x[12], x[12], x[12])
        ref = _manifest_operator(man, x, list(range(12)) + [man["cache_offset"]])
        if np.allclose(q, ref[-1]) and np.allclose(keys, ref) and np.allclose(values, x):
            shows.append(name)
    hidden = sorted(set(broken_entries()) - set(shows))
    assert hidden == ["missliced-partial", "rotated-values", "scaled-queries"]  # the three the prose names
    assert glued["n_manifest_shows"] == len(shows) == 5
    assert glued["n_manifest_hides"] == len(hidden) == 3
    assert glued["n_manifest_shows"] + glued["n_manifest_hides"] == glued["n_broken"]


# ---------------------------------------------------------------- Gate A's wider catalogue
def test_gate_constants(glued):
    # the default context is 2**17, the safety factors are the ones the prose describes
    assert glued["gate_default_context"] == 2**17
    assert (glued["gate_data_safety"], glued["gate_angle_safety"]) == (8, 16)
    # the callable protocol: everything but roles, values and decoding
    assert glued["n_callable_checks"] == 13 - 3


def test_defect_catalogue_counts(glued):
    from ropegeo.book.broken import DEFECTS
    from ropegeo.gates.verdicts import DEFECT_CLASSES

    broken_names = [n for n, e in DEFECTS.items() if e.check is not None]
    assert glued["n_defect_broken"] == len(broken_names)
    # every class a failed check can name (algebra and contract included since issue 35)
    assert glued["n_defect_classes"] == len(set(DEFECT_CLASSES)) == 11
    assert glued["n_defect_correct"] == glued["n_defect_correct_pass"] == 2
    assert glued["n_defect_named"] == glued["n_defect_broken"]
    # one entry Gate A must fail is a published design left undeclared (Qwen's logn), not a bug
    assert glued["n_defect_bugs"] == glued["n_defect_broken"] - 1
    assert DEFECTS["logn-queries"].defect == "algebra" and "undeclared" in DEFECTS["logn-queries"].title


def test_wrapped_table_length_by_brute_force(glued):
    # the period of the wrapped entry, found by scanning positions for the first return to the identity
    from ropegeo.book.broken import DEFECTS

    f = DEFECTS["wrapped-table"].impl
    x = np.random.default_rng(2).normal(size=64)
    n = np.arange(1, 10_000)
    y = f(np.tile(x, (n.size, 1)), n, role="key")
    period = int(n[np.argmax(np.linalg.norm(y - x, axis=1) < 1e-9)])
    assert glued["wrap_rows"] == period == 4096
    assert glued["wrap_blind_context"] == period  # the blind run stops exactly at the table's end
    assert glued["wrap_blind_failed"] == 0


def test_bfloat16_angle_error_is_bfloat16_sized(glued):
    u = float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps) / 2  # 2**-8, bfloat16's unit roundoff
    assert u / 4 < glued["bf16_angle_error"] < 4 * u


def test_bfloat16_angle_table_rounds_three_times(glued, nb):
    # each angle of the width-64 entry written out with ml_dtypes: the position rounded (exact through 256), the
    # frequency rounded, their product rounded; relative error in units of 2**-8
    bf = ml_dtypes.bfloat16
    th = freqs(64)
    worst = {"to256": 0.0, "past256": 0.0}
    over2 = 0
    for p in range(1, 4097):
        ang = np.array([float(bf(float(bf(p)) * float(bf(t)))) for t in th])
        rel = np.abs(ang - p * th) / (p * th) / 2.0**-8
        key = "to256" if p <= 256 else "past256"
        worst[key] = max(worst[key], float(rel.max()))
        over2 += int(np.sum(rel > 2)) if p > 256 else 0
    assert glued["bf16_rel_to256"] == pytest.approx(worst["to256"], rel=1e-9)
    assert glued["bf16_rel_past256"] == pytest.approx(worst["past256"], rel=1e-9)
    assert glued["bf16_rel_over2"] == pytest.approx(over2 / (3840 * 32), rel=1e-12)
    # the first-order bound: two roundings while the position is exact, three past 256; the third shows
    assert worst["to256"] < 2 < worst["past256"] < 3 and 0 < over2 / (3840 * 32) < 0.01
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "about three roundoffs" in text and "so the bound is about two" not in text


# ---------------------------------------------------------------- statements about real systems
def test_per_head_permutation_of_projection_rows():
    # with ropegeo's rotation (not the chapter's listing): reordering each head's rows of W_q and
    # W_k by the layout permutation gives the half-split code the interleaved code's scores, while
    # one permutation over all rows mixes the heads and changes them
    from ropegeo.rotation import apply_rope, pairing_permutation

    heads, d = 2, 8
    perm = pairing_permutation(d, source="interleaved", target="half")
    rng = np.random.default_rng(0)
    W_q, W_k = rng.normal(size=(2, heads * d, 16))
    tokens, pos = rng.normal(size=(5, 16)), np.arange(5) * 7
    per_head = np.concatenate([h * d + perm for h in range(heads)])
    whole = pairing_permutation(heads * d, source="interleaved", target="half")
    for rows_perm, same in ((per_head, True), (whole, False)):
        gaps = []
        for h in range(heads):
            r = slice(h * d, (h + 1) * d)
            s1 = apply_rope(tokens @ W_q[r].T, pos) @ apply_rope(tokens @ W_k[r].T, pos).T
            s2 = (apply_rope(tokens @ W_q[rows_perm][r].T, pos, pairing="half")
                  @ apply_rope(tokens @ W_k[rows_perm][r].T, pos, pairing="half").T)
            gaps.append(np.max(np.abs(s1 - s2)))
        assert bool(max(gaps) < 1e-9) is same


def test_phi3_switch_point(glued):
    # read straight from the shipped config file, not through ropegeo's manifest reader
    import json

    cfg = json.loads((NB.parents[1] / "ropegeo" / "data" / "phi-3-mini-128k-instruct.json").read_text())["config"]
    assert glued["phi3_original"] == cfg["original_max_position_embeddings"] == 4096
    assert glued["phi3_switch"] == cfg["original_max_position_embeddings"] + 1


def test_bfloat16_position_ids(glued):
    # ids held in bfloat16 (8 significant bits): exact through 256, then spaced by 2 ** (e - 7) in
    # [2 ** e, 2 ** (e + 1)); a token rotates as the nearest multiple of that spacing (ties to even)
    assert glued["bf16_ids_first"] == _first_inexact_integer(ml_dtypes.bfloat16) == 2**8 + 1
    t = glued["bf16_ids_token"]
    e = int(np.floor(np.log2(t)))
    spacing = 2 ** (e - 7)
    assert glued["bf16_ids_spacing"] == spacing
    lo = (t // spacing) * spacing
    nearest = lo if t - lo < lo + spacing - t else lo + spacing
    assert glued["bf16_ids_rotated_as"] == nearest != t
    # and the broken entry that shows it is rotated exactly as that value (no angle rounding)
    from ropegeo.book.broken import defect_entry
    from ropegeo.rotation import apply_rope

    impl = defect_entry("bfloat16-position-ids", 16).impl
    x = np.random.default_rng(5).normal(size=(1, 16))
    assert np.allclose(impl(x, np.array([t])), apply_rope(x, np.array([nearest])), atol=1e-12)


# ---------------------------------------------------------------- a model cast after loading
def _cast_error_by_hand(position, d=128, base=10_000.0, cast=True):
    """transformers 5.24's LlamaRotaryEmbedding, per pair: inv_freq computed in float32, rounded to
    bfloat16 by model.to(torch.bfloat16) when ``cast``, widened to float32 in forward and multiplied
    by the float32 position; cos and sin rounded to bfloat16. Worst angle error over the pairs."""
    worst = 0.0
    for j in range(0, d, 2):
        f = np.float32(1.0) / np.float32(base) ** (np.float32(j) / np.float32(d))
        if cast:
            f = np.float32(ml_dtypes.bfloat16(f))
        angle = np.float32(position) * f
        c, s = float(ml_dtypes.bfloat16(np.cos(angle))), float(ml_dtypes.bfloat16(np.sin(angle)))
        true = position * base ** (-j / d)
        worst = max(worst, abs(np.arctan2(s * np.cos(true) - c * np.sin(true), c * np.cos(true) + s * np.sin(true))))
    return worst


@pytest.mark.parametrize("where", [200, 4000])
def test_cast_after_loading_errors(glued, where):
    assert glued[f"cast_err_cast_{where}"] == pytest.approx(_cast_error_by_hand(where), abs=2e-3)
    assert glued[f"cast_err_loaded_{where}"] == pytest.approx(_cast_error_by_hand(where, cast=False), abs=1e-3)
    assert glued[f"cast_err_cast_{where}"] > 50 * glued[f"cast_err_loaded_{where}"]


@pytest.mark.parametrize("where", [200, 4000])
def test_numpy_buffer_cast_emulation(glued, where):
    # the chapter's numpy LlamaRotary at head width 64, against the per-pair derivation by hand
    assert glued[f"np_cast_err_{where}"] == pytest.approx(_cast_error_by_hand(where, d=64), abs=2e-3)
    assert glued[f"np_loaded_err_{where}"] == pytest.approx(_cast_error_by_hand(where, d=64, cast=False), abs=1e-3)
    assert glued[f"np_cast_err_{where}"] > 20 * glued[f"np_loaded_err_{where}"]


def test_numpy_buffer_cast_verdicts(glued, nb):
    assert (glued["np_loaded_passed"], glued["np_cast_passed"]) == (1, 0)
    out = next("".join(o.get("text", "") for o in c.outputs) for c in nb.cells
               if c.cell_type == "code" and "class LlamaRotary" in c.source)
    assert "loaded in bfloat16: inv_freq float32, original_inv_freq float32" in out
    assert "cast after loading: inv_freq bfloat16, original_inv_freq bfloat16" in out
    assert "fails ['frequencies'], class frequency" in out and "rounded to bfloat16" in out


def test_cast_numbers_of_issue_25(glued):
    # the numbers measured on transformers 5.24.0 in the issue: 0.24 rad at 200, 2.56 at 4,000
    assert round(glued["cast_err_cast_200"], 2) == 0.24
    assert round(glued["cast_err_cast_4000"], 2) == 2.56


def test_float32_phase_error_grows_with_position(glued, nb):
    # float32 at every step, written out: its error grows in proportion to position too
    th = freqs(128)
    for where in (1, 100, 60_000):
        p = np.float32(where)
        ang = (p * th.astype(np.float32)).astype(np.float32)
        c, s = np.cos(ang).astype(float), np.sin(ang).astype(float)
        true = where * th
        err = np.abs(np.arctan2(s * np.cos(true) - c * np.sin(true), c * np.cos(true) + s * np.sin(true))).max()
        # glued to two significant digits (float32 cos/sin rounding differs by SIMD kernel)
        assert glued[f"err_f32_{where}"] == pytest.approx(err, rel=0.05)
        assert glued[f"err_f32_{where}"] == float(f"{glued[f'err_f32_{where}']:.1e}")
    assert glued["err_f32_1"] < glued["err_f32_100"] < glued["err_f32_60000"] < 2e-3
    alt = next(c.metadata["mystnb"]["image"]["alt"] for c in nb.cells
               if c.cell_type == "code" and "phase_error_curves(" in c.source)
    # the float32 error is jagged: 60,000 is a low point; the worst position up to there is about twice it
    pos = np.arange(1, 60_001)
    ang = (pos.astype(np.float32)[:, None] * th.astype(np.float32)).astype(np.float32)
    c, s = np.cos(ang).astype(float), np.sin(ang).astype(float)
    true = pos[:, None] * th
    worst = np.abs(np.arctan2(s * np.cos(true) - c * np.sin(true), c * np.cos(true) + s * np.sin(true))).max(axis=1)
    assert worst.max() == pytest.approx(3.7e-3, abs=0.1e-3) and worst.max() > 1.9 * glued["err_f32_60000"]
    assert "about 2e-3 radians around 60,000, with single positions below it reaching 3.7e-3" in alt
    assert "stays below 2e-3" not in alt and "near 1e-4" not in alt
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "nearby positions reach about twice that" in prose


def test_buffer_cast_is_a_frequency_defect_and_the_angle_table_a_precision_one(glued, nb):
    th = freqs(64)
    rel = np.max(np.abs(th.astype(ml_dtypes.bfloat16).astype(float) - th) / th)
    assert glued["invfreq_rel_err"] == pytest.approx(rel, rel=1e-12)
    out = next("".join(o.get("text", "") for o in c.outputs) for c in nb.cells
               if c.cell_type == "code" and '"bfloat16-inv-freq", "bfloat16-angles"' in c.source)
    assert "bfloat16-inv-freq: leads with frequencies, class frequency" in out
    assert "bfloat16-angles: leads with precision, class precision" in out
    assert f"up to {rel:.1e} too fast or too slow" in out


def test_every_class_is_listed_in_the_prose(nb):
    from ropegeo.gates.verdicts import DEFECT_CLASSES

    cell = next(c.source for c in nb.cells if c.cell_type == "markdown" and "A failed check states its defect class" in c.source)
    listed = cell.split("A failed check states its defect class")[1].split("), and a check")[0]
    assert all(k in listed for k in DEFECT_CLASSES), listed


def test_mixing_figure_marks_where_the_curves_meet():
    # at offset 0 both helpers reduce to q . k / sqrt(d) for the figure's seeded pair (drawn first from seed 0)
    from ropegeo.book.plots.implementation import mixing_effect
    q, k = np.random.default_rng(0).normal(size=(2, 64))
    ax = mixing_effect(64, seed=0, layout="column").axes[0]
    correct, mixed, mark = ax.get_lines()[:3]
    at0 = [float(line.get_ydata()[list(line.get_xdata()).index(0)]) for line in (correct, mixed, mark)]
    assert at0 == pytest.approx([q @ k / 8.0] * 3, rel=1e-12)
    assert mark.get_label() == f"δ = 0: both {q @ k / 8.0:.3f}" and f"{q @ k / 8.0:.3f}" == "-1.213"


def test_stale_dynamic_table_of_issue_25306(glued, nb):
    # after a pass of n tokens the no-reset module keeps base * (2 n / 4096 - 1)^(64/62) (factor 2, width 64)
    n = glued["stale_target"]
    assert n == 16_384
    assert glued["stale_base_ratio"] == pytest.approx((2 * n / 4096 - 1) ** (64 / 62), rel=1e-12)
    assert (glued["dyn_reset_0_passed"], glued["dyn_reset_1_passed"]) == (0, 1)
    out = next("".join(o.get("text", "") for o in c.outputs) for c in nb.cells
               if c.cell_type == "code" and "class DynamicNTK" in c.source)
    assert "no reset (issue 25306): fails ['frequencies'], class frequency" in out
    assert "read before any long one was right" in out.replace("\n    ", " ")
    assert "reset (5.24.0): pass" in out
    assert "25104" not in out  # 25104 is the cached keys' report, not the table that is not reset


def test_exit_statuses_in_the_prose(nb):
    from ropegeo.gates.verdicts import EXIT_CODES

    cell = next(c.source for c in nb.cells if c.cell_type == "markdown" and "with exit status" in c.source)
    said = " ".join(cell.split("with exit status")[1].split(":")[0].split())
    assert f"{EXIT_CODES['pass']} when every check passes" in said
    assert f"{EXIT_CODES['fail']} when one fails" in said
    assert f"{EXIT_CODES['inconclusive']} when the verdict is inconclusive" in said
    assert "2 for bad arguments" in said and 2 not in EXIT_CODES.values()  # 2 is bad input, no verdict


# ---------------------------------------------------------------- review of chapter 5 (ch5y)
def _shipped_config(name):
    """A shipped config.json, read straight from the file, not through ropegeo's reader."""
    import json

    return json.loads((NB.parents[1] / "ropegeo" / "data" / f"{name}.json").read_text())["config"]


def test_config_facts_are_glued_from_the_shipped_configs(glued, nb):
    cfg = _shipped_config("llama-3.1-8b")
    assert glued["llama31_kv_heads"] == cfg["num_key_value_heads"] == 8
    assert glued["llama31_q_heads"] == cfg["num_attention_heads"] == 32
    assert glued["llama3_base"] == cfg["rope_theta"] == 500_000
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "(8 in Llama-3.1-8B" not in text and "says 500,000" not in text


def test_partial_rotary_range_over_two_seed_sets(glued):
    d, r = 64, 16
    delta = np.arange(-256, 257)

    def ranges(seeds):
        out = []
        for s in seeds:
            q, k = np.random.default_rng(s).normal(size=(2, d))
            kr = rot(np.broadcast_to(k, (delta.size, d)), delta, pairing="half", rotary=r)
            out.append(np.ptp(kr[:, :r] @ q[:r]))
        return np.array(out)

    for seeds, tag in ((range(0, 20), "a"), (range(20, 40), "b")):
        got = ranges(seeds)
        for q, name in ((50, "med"), (10, "p10"), (90, "p90")):
            assert glued[f"partial_rot_{name}_{tag}"] == pytest.approx(np.percentile(got, q), rel=1e-9)
        # the claim's direction on each set: the range varies with the draw (by a factor of 1.5 or more between
        # the 10th and 90th percentiles), and seed 0's one draw is a typical one, inside that band
        lo, hi = np.percentile(got, [10, 90])
        assert hi / lo > 1.5 and lo <= glued["partial_rot_range"] <= hi


def test_narrow_formats_level_off_near_pi(glued, nb):
    th = freqs(128)
    pos = np.arange(1, 60_001, dtype=float)
    for tag, dtype in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        p = pos.astype(dtype)[:, None]
        ang = (p * th.astype(dtype)).astype(dtype)
        c, s = np.cos(ang).astype(dtype).astype(float), np.sin(ang).astype(dtype).astype(float)
        true = pos[:, None] * th
        err = np.abs(np.arctan2(s * np.cos(true) - c * np.sin(true), c * np.cos(true) + s * np.sin(true))).max(axis=1)
        first = int(np.argmax(err >= 0.9 * np.pi))
        assert glued[f"near_pi_{tag}"] == int(pos[first])
        # the first crossing is decided with room to spare: one cos/sin value moved by one step of its format
        # (at most 2**-11 in float16, 2**-8 in bfloat16, for values below 1) turns the angle by less than that
        step = 2.0**-11 if tag == "f16" else 2.0**-8
        assert err[first] > 0.9 * np.pi + 2 * step and err[:first].max() < 0.9 * np.pi - 2 * step
        assert np.median(err[first:]) >= 0.9 * np.pi  # it levels off just under pi: no longer in proportion
    alt = next(c.metadata["mystnb"]["image"]["alt"] for c in nb.cells
               if c.cell_type == "code" and "phase_error_curves(" in c.source)
    assert f"at positions {glued['near_pi_f16']:,.0f} and {glued['near_pi_bf16']:,.0f}" in alt
    # float16 crosses just past 4,096, where its spacing doubles to 4 (a position off by up to 2)
    assert glued["near_pi_f16"] == 4138 and float(np.float16(4097)) == 4096 and float(np.float16(4138)) == 4136
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "by about position" not in text and "spacing of float16 numbers doubles to 4" in text
    assert "all three grow in proportion" not in alt and "level off just under pi" in alt


def test_flash_attention_boundaries_as_in_the_source(nb):
    # transformers 5.24.0's modeling_flash_attention_utils.py: _is_packed_sequence compares the ids with
    # arange + position_ids.min(), and prepare_fa_kwargs_from_position_ids starts a document where
    # position_ids == position_ids.min(); 4.56.0 started one where position_ids == 0
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for phrase in ("`_is_packed_sequence`", "`prepare_fa_kwargs_from_position_ids`",
                   "`position_ids == position_ids.min()`", "4.56.0", "(`position_ids == 0`)",
                   "got no start at all", "do not begin at slot 0"):
        assert phrase in text, phrase


def test_logn_starts_at_position_8192(nb):
    # Qwen-7B's logn_list[p] = log(p + 1, 8192) when p + 1 > 8192: the factor first exceeds 1 at 0-based p = 8,192,
    # and the chapter's entry agrees; Gate A's norm probes stay below 4,096, so they never see it
    from ropegeo.book.broken import DEFECTS

    impl = DEFECTS["logn-queries"].impl
    x = np.random.default_rng(0).normal(size=(3, 64))
    norms = np.linalg.norm(impl(x, np.array([8191, 8192, 8193]), role="query"), axis=-1) / np.linalg.norm(x, axis=-1)
    assert norms == pytest.approx([1.0, np.log(8193) / np.log(8192), np.log(8194) / np.log(8192)], rel=1e-12)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "a query from position 8,192 on" in text and "past position 8,192" not in text
    assert "Qwen-7B (`seq_length` 8,192)" in text  # the threshold is the model's seq_length, not all of Qwen's
    assert "every norm probe lies below position 4,096" in text


def test_one_markdown_cell_per_system(nb):
    # vLLM, llama.cpp, DeepSpeed and FSDP each in a cell of their own, none of them long
    cells = [c.source for c in nb.cells if c.cell_type == "markdown"]
    for opening in ("vLLM's dynamic NTK (", "**llama.cpp**", "**Training frameworks cast buffers too.** DeepSpeed",
                    "**FSDP.** PyTorch's FSDP"):
        cell = next(c for c in cells if c.startswith(opening))
        assert len(cell) < 3000, (opening, len(cell))
    assert sum("DeepSpeed" in c and "llama.cpp" in c for c in cells) == 0


def test_get_rope_signature_of_the_release(nb):
    # vllm 0.6.6.post1, vllm/model_executor/layers/rotary_embedding.py: def get_rope(head_size, rotary_dim,
    # max_position, base, is_neox_style=True, rope_scaling=None, dtype=None, partial_rotary_factor=1.0)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert ("`get_rope(head_size, rotary_dim, max_position, base, is_neox_style, rope_scaling, dtype, "
            "partial_rotary_factor)`") in text


def test_cast_figure_tells_its_pipelines_apart(nb):
    # the loaded and the cast curves differ in colour and in line style; legend and prose use one term each
    from matplotlib.colors import to_hex

    from ropegeo.book.plots.spectrum import phase_error_plot
    from ropegeo.precision import buffer_cast, deployed

    ax = phase_error_plot(freqs(128), stop=60_000, points=40,
                          dtypes=(deployed("bfloat16"), buffer_cast("bfloat16"), "bfloat16")).axes[0]
    loaded, cast, every = [line for line in ax.lines if line.get_linestyle() != "--"]  # "--": the integer limit
    assert len({to_hex(line.get_color()) for line in (loaded, cast, every)}) == 3
    assert len({line.get_linestyle() for line in (loaded, cast, every)}) == 3
    cell = next(c.source for c in nb.cells if c.cell_type == "code" and 'buffer_cast("bfloat16"), "bfloat16")' in c.source)
    assert '"buffer-cast bfloat16": "cast after loading"' in cell and '"deployed bfloat16": "loaded in bfloat16"' in cell
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "The cast copy" not in text and "buffer-cast" not in text and "cast after loading" in text


def test_dynamic_ntk_is_credited_to_emozilla(nb):
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "Dynamic NTK {cite}`emozilla2023dynamic`" in text and "Dynamic NTK {cite}`bloc97ntk2023`" not in text


def test_notation_and_units(nb):
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "$\\varepsilon_\\text{mach} = 2^{-8}" in text and "$\\ell = \\alpha L$" not in text
    assert "A note on units" in text and "x\\sqrt{d_\\text{head}}" in text
    cast = next(c.source for c in nb.cells if c.cell_type == "code" and "buffer_cast(\"bfloat16\"), \"bfloat16\")" in c.source)
    assert "all-bfloat16:\\npositions round\\npast 256" in cast and "256: bfloat16 integer limit" not in cast
    alt = next(c.metadata["mystnb"]["image"]["alt"] for c in nb.cells
               if c.cell_type == "code" and "buffer_cast(\"bfloat16\"), \"bfloat16\")" in c.source and "mystnb" in c.metadata)
    assert '"all-bfloat16: positions round past 256"' in alt  # the alt text quotes the drawn label


def test_exercises_rise_in_difficulty(nb):
    rank = {"Compute": 0, "Derive": 1, "Implement": 2, "Investigate": 3}
    kinds = [re.search(r"\*\*(Compute|Derive|Implement|Investigate)\.\*\*", c.source).group(1)
             for c in nb.cells if c.cell_type == "markdown" and "```{exercise}" in c.source]
    assert len(kinds) == 7 and [rank[k] for k in kinds] == sorted(rank[k] for k in kinds), kinds
    prompt = next(c.source for c in nb.cells if ":label: ch05-query-ahead" in c.source)
    assert "moves the whole new token" not in prompt


def test_cache_slip_and_widening_wording(nb):
    # a cache slip moves the new key with the query (offset 0 to itself): only scores to *cached* keys change
    text = " ".join("\n".join(c.source for c in nb.cells if c.cell_type == "markdown").split())
    assert "every score to a cached key wrong" in text and "still gets every score wrong" not in text
    assert "every offset from the new query to the cached keys" in text and "every offset the new query sees" not in text
    # transformers 5.24.0's LlamaRotaryEmbedding.forward, quoted as the wheel writes it
    assert "`self.inv_freq.to(device=x.device, dtype=torch.float)`" in text


# ---------------------------------------------------------------- what a manifest cannot record
def test_manifest_names_the_choices_it_cannot_record(nb, glued):
    from dataclasses import fields

    from ropegeo.gates.a.gate import gate_a
    from ropegeo.models.manifest import RopeManifest
    from ropegeo.operator import RotaryOperator

    text = " ".join(" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    assert "a short record of every choice" not in text and "one field for each" not in text
    assert "records the declared choices" in text and "It has no field for five other choices" in text
    for listed in ("the dtype `inv_freq` is stored in", "the dtype of the position ids", "the sign of the sine",
                   "which end of the head rotates", "which roles"):
        assert text.count(listed) >= 2, listed  # in the manifest's section and beside the three invisible defects
    # none of them is a field: the only dtype a manifest or its operator holds is the angles' phase_dtype
    names = {f.name for f in fields(RopeManifest)} | {f.name for f in fields(RotaryOperator)}
    assert [n for n in names if "dtype" in n] == ["phase_dtype"]
    assert not [n for n in names if re.search(r"inv_freq|sign|mirror|orient|direction|role|value|query|end|side|slice",
                                              n)], names
    with pytest.raises(ValueError):  # rounded frequencies cannot be written in: no explicit theta
        RopeManifest(RotaryOperator(head_dim=64, pairing="half", theta=freqs(64)))
    with pytest.raises(ValueError):
        RopeManifest(head_dim=64, pairing="half", phase_dtype="bfloat16-frequencies")
    # Gate A takes them as theta: a rotation by hand with bfloat16-rounded frequencies fails against the
    # base and passes against its own frequencies, as the glued counts of the cast copy say
    rounded = freqs(64).astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)

    def cast_copy(x, positions):
        return _rotate_with(np.asarray(x, float), np.asarray(positions, float), rounded)

    assert glued["cast_base_failed"] == len(gate_a(cast_copy, head_dim=64, base=10_000.0, pairing="half").failed) == 1
    assert glued["cast_theta_failed"] == len(gate_a(cast_copy, head_dim=64, pairing="half", theta=rounded).failed) == 0
    assert "fails {glue:text}`cast_base_failed` check (`frequencies`)" in text


def _rotate_with(x, positions, theta):
    """Half-split pairs (i, i + d/2) turned by p * theta_i, written out with cos and sin."""
    h = theta.size
    ang = positions[..., None] * theta
    c, s = np.cos(ang), np.sin(ang)
    a, b = x[..., :h], x[..., h:]
    return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)


def test_library_findings_match_the_torch_tests(nb):
    # the prose counts the Gate A failures that tests/with_torch/test_other_rotary.py records on real code
    # (it once said "besides two cases, everything passed" beside a third failure and a cache refusal)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    torch_tests = (NB.parents[1] / "tests" / "with_torch" / "test_other_rotary.py").read_text()
    assert "Besides two cases, everything passed" not in text
    assert "Gate A failed three of these audits" in text
    assert "test_lucidrains_interpolation_is_skipped_when_the_module_is_called_on_ids" in torch_tests
    assert "every frequency is 4 times the declared one" in text and "every frequency is 4 times the declared one" in torch_tests
    assert "refuses positions\nfrom 8,192 on" in text or "refuses positions from 8,192 on" in text
    assert "refuses positions from 8,192 on" in torch_tests and "max_position=131_072" in torch_tests
