"""The labs' JavaScript geometry core (ropegeo/book/static/ropegeo_core.js) against ropegeo, under Node.

Float64 quantities agree to 1e-9 on a grid of settings; the roundings to float32, float16 and
bfloat16 agree exactly with numpy and ml_dtypes, and so do the generated angles; the near-collision
search returns the same offsets. Generated cos/sin are the correctly rounded values taken through
every rounding of the format exactly; they agree with ropegeo's within one ulp of the format,
because numpy's vectorised float32 cos/sin (which ropegeo's float32, float16 and bfloat16 phases go
through) is an approximation: about one entry in nine differs from the correctly rounded value by
one float32 ulp, which now and then moves a float16 or bfloat16 result across a rounding midpoint.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from jsrun import call_js
from ulps import assert_rounds_within

from ropegeo import scaling as S
from ropegeo import extension as SR
from ropegeo.frequencies import frequencies, slow_pairs, turns, wavelengths
from ropegeo.gates.b.rule import default_offsets
from ropegeo.geometry import adjacent_similarity, kernel, near_collisions
from ropegeo.margins import difference_distance, separation_margin
from ropegeo.models.manifest import load_model, shipped_models
from ropegeo.precision import consecutive_integer_limit, generated_phases, position_spacing
from ropegeo.rotation import apply_rope

CORE = (Path(__file__).resolve().parent.parent / "ropegeo" / "book" / "static" / "ropegeo_core.js").read_text()
TOL = 1e-9


def js(*calls):
    return call_js(CORE, calls)


def close(a, b, tol=TOL):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=tol, atol=tol)


GRID = [(d, r, b) for d in (4, 16, 64, 128, 256) for r in (None, d // 2 if d >= 8 else None)
        for b in (10.0, 1e4, 5e5, 1e7)]


def test_frequency_schedules_turns_and_slow_pairs():
    calls, want = [], []
    for d, r, b in GRID:
        rot = r or d
        th = frequencies(d, b, r)
        calls += [("frequencies", [rot, b]), ("wavelengths", [th]), ("turns", [th, 4096]), ("slowPairs", [th, 4096])]
        want += [th, wavelengths(th), turns(th, 4096), slow_pairs(th, 4096)]
    got = js(*calls)
    for g, w in zip(got, want):
        close(g, w)


def _rules(d):
    pairs = d // 2
    rng = np.random.default_rng(d)
    short = 1 + rng.uniform(0, 2, pairs)
    long_ = short * rng.uniform(1, 30, pairs)
    return [
        None,
        S.Scaling("linear", factor=8.0),
        S.Scaling("ntk", factor=4.0),
        S.Scaling("dynamic", factor=4.0, original_max_position_embeddings=4096),
        S.Scaling("yarn", factor=16.0, original_max_position_embeddings=4096),
        S.Scaling("yarn", factor=8.0, original_max_position_embeddings=2048, beta_fast=16.0, beta_slow=2.0, truncate=False),
        S.Scaling("yarn", factor=40.0, original_max_position_embeddings=4096, mscale=1.0, mscale_all_dim=0.707),
        S.Scaling("yarn", factor=4.0, original_max_position_embeddings=32768, attention_factor=1.3),
        S.Scaling("longrope", factor=32.0, original_max_position_embeddings=4096, short_factor=short, long_factor=long_),
        S.Scaling("llama3", factor=8.0, original_max_position_embeddings=8192, low_freq_factor=1.0, high_freq_factor=4.0),
        S.Scaling("llama3", factor=32.0, original_max_position_embeddings=2048, low_freq_factor=2.0, high_freq_factor=3.0),
    ]


@pytest.mark.parametrize("d", [8, 64, 128, 256])
@pytest.mark.parametrize("base", [1e4, 5e5])
def test_every_extension_rule_matches_ropegeo_scaling(d, base):
    calls, want = [], []
    for sc in _rules(d):
        for seq in (None, 1000, 4096, 50_000):
            calls.append(("scaledFrequencies", [None if sc is None else sc.to_dict(), d, base, seq]))
            want.append(S.scaled_frequencies(sc, d, base, seq_len=seq))
    got = js(*calls)
    for g, (th, att) in zip(got, want):
        close(g["theta"], th)
        close(g["attention_factor"], att)


def test_real_longrope_factor_lists_of_shipped_models():
    calls, want = [], []
    for name in shipped_models():
        m = load_model(name)
        sc = m.scaling.to_dict() if m.scaling is not None else None
        for seq in (None, m.train_length, 2 * (m.train_length or 4096), m.target_length):
            calls.append(("scaledFrequencies", [sc, m.rotary_dim, m.base, seq]))
            want.append((m.theta_at(seq), m.attention_at(seq)))
    assert any(load_model(n).scaling is not None and load_model(n).scaling.rule == "longrope" for n in shipped_models())
    for g, (th, att) in zip(js(*calls), want):
        close(g["theta"], th)
        close(g["attention_factor"], att)


def test_preset_and_phase_novelty():
    calls, want = [], []
    for rule in ("none", "linear", "ntk", "dynamic", "yarn", "llama3"):
        sc = S.preset(rule, train_length=4096, target_length=32768)
        calls.append(("preset", [rule, 4096, 32768]))
        want.append(None if sc is None else sc.to_dict())
        th, _ = S.scaled_frequencies(sc, 128, 1e4, seq_len=32768)
        calls.append(("phaseNovelty", [frequencies(128), th, 4096, 32768]))
        want.append(SR.phase_novelty(frequencies(128), th, 4096, 32768))
    got = js(*calls)
    for k in range(0, len(got), 2):
        if want[k] is None:
            assert got[k] is None
        else:
            assert {key: got[k][key] for key in want[k]} == want[k]
        close(got[k + 1], want[k + 1])


def test_kernel_weights_and_adjacent_similarity():
    rng = np.random.default_rng(3)
    calls, want = [], []
    for d, _, b in GRID[::3]:
        th = frequencies(d, b)
        w = rng.uniform(0, 5, d // 2)
        offs = rng.uniform(0, 1e5, 50)
        for weights in (None, w):
            for scale in (1.0, 0.125):
                calls.append(("kernel", [offs, th, {"scale": scale, "weights": weights}]))
                want.append(kernel(offs, th, scale=scale, weights=weights))
                calls.append(("kernelRange", [th, 1000, 21000, {"scale": scale, "weights": weights}]))
                want.append(kernel(np.arange(1000, 21001), th, scale=scale, weights=weights))
        calls.append(("adjacentSimilarity", [th]))
        want.append(adjacent_similarity(th))
    for g, w in zip(js(*calls), want):
        close(g, w)


def test_near_collision_search_gives_the_same_offsets():
    rng = np.random.default_rng(5)
    calls, want = [], []
    for d, start, stop, scale, base in [(8, 1, 20000, 1.0, 1e4), (128, 4096, 60000, 1.0, 1e4),
                                        (64, 0, 30000, 0.25, 5e5), (16, 90_000_000, 90_010_000, 1.0, 1e4),
                                        (256, 1, 20000, 1.0, 1e6), (128, 8192, 100_000, 1 / 32, 5e5),
                                        (4, 64, 100_000, 1.0, 10.0)]:
        # long ranges are searched by bounds (runs of offsets whose bound cannot reach the best are
        # skipped): the same offsets as ropegeo's exhaustive search, for 5 and for 20 of them
        th = frequencies(d, base)
        for weights, top in ((None, 5), (rng.uniform(0.1, 2, d // 2), 5), (None, 20)):
            calls.append(("nearCollisions", [th, start, stop, {"top": top, "scale": scale, "weights": weights}]))
            want.append(near_collisions(th, start, stop, top=top, scale=scale, weights=weights, progress=False))
    for g, w in zip(js(*calls), want):
        assert [h["offset"] for h in g] == [h.offset for h in w]
        close([h["similarity"] for h in g], [h.similarity for h in w])


def test_roundings_are_exact():
    rng = np.random.default_rng(11)
    x = np.concatenate([
        rng.normal(size=3000) * 10.0 ** rng.integers(-12, 12, 3000),
        np.arange(0, 5000, dtype=np.float64), rng.uniform(0, 2e5, 2000).round(),
        [65504, 65519.99, 65520, 1e5, 6e-8, 3e-8, 2.98e-8, 1 + 2**-8 + 2**-30, 1 + 2**-11 + 2**-40, 1 + 2**-11,
         1 + 3 * 2**-11, 3.4e38, 3.5e38, -0.0, 2**-14, 2**-24, 1.5 * 2**-24, 2**-133, 1e-45],
    ])
    calls = [(fn, [float(t)]) for fn in ("toFloat32", "toFloat16", "toBfloat16") for t in x]
    got = np.array(js(*calls), dtype=float).reshape(3, -1)
    with np.errstate(over="ignore"):
        want = [x.astype(np.float32), x.astype(np.float16), x.astype(ml_dtypes.bfloat16)]
    for g, w, name in zip(got, want, ("float32", "float16", "bfloat16")):
        w = w.astype(np.float64)
        assert np.array_equal(g, w), f"{name}: {np.flatnonzero(g != w)[:5]} {x[g != w][:5]}"


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_generated_phases(dtype):
    th = frequencies(64, 1e4)
    positions = [0, 1, 7, 255, 256, 257, 1000, 2047, 2049, 4097, 30000, 65000]
    if dtype in ("float64", "float32"):
        positions += [123_457, 10**6 + 3, 2**24 + 1]
    calls, want = [], []
    for scale in (1.0, 0.25, 1 / 3):
        for p in positions:
            calls.append(("generatedPhases", [float(p), th, dtype, scale]))
            want.append(generated_phases([float(p)], th, dtype, scale=scale))
    mismatched = total = 0
    for g, (c, s) in zip(js(*calls), want):
        for got, ref in ((g["cos"], c[0]), (g["sin"], s[0])):
            got = np.array(got)
            if dtype == "float64":
                close(got, ref, 1e-12)
                continue
            # within one ulp of the format; float16 and bfloat16 round numpy's float32 cos/sin, which
            # is itself within an ulp of the correctly rounded value, so a midpoint can round apart
            ulp = np.spacing(np.abs(ref).astype(np.float32 if dtype == "float32" else np.float16)).astype(float)
            if dtype == "bfloat16":
                ulp = ulp * 8.0  # 8 significant bits against float16's 11
            assert np.all(np.abs(got - ref) <= ulp)
            mismatched += int(np.count_nonzero(got != ref))
            total += got.size
    if dtype in ("float16", "bfloat16"):
        assert mismatched <= 0.01 * total, (mismatched, total)


def test_generated_angles_are_exact():
    """Positions, scale and angle products round exactly as ropegeo's pipeline does."""
    from ropegeo.rotation import phase_angles

    th = frequencies(64, 1e4)
    calls, want = [], []
    for dtype in ("float32", "float16", "bfloat16"):
        for scale in (1.0, 0.25, 1 / 3, 0.7):
            for p in (0, 1, 7, 255, 257, 1000, 2049, 4097, 30001, 65000):
                calls.append(("generatedAngles", [float(p), th, dtype, scale]))
                import ml_dtypes as md
                dt = {"float32": np.float32, "float16": np.float16, "bfloat16": md.bfloat16}[dtype]
                pos = np.asarray([float(p)]).astype(dt)
                if scale != 1.0:
                    pos = pos * np.asarray(scale).astype(dt)
                want.append(phase_angles(pos, th, dtype)[0].tolist())
    assert js(*calls) == want


def test_precision_facts():
    calls, want = [], []
    for dt in ("float64", "float32", "float16", "bfloat16"):
        calls.append(("consecutiveIntegerLimit", [dt]))
        want.append(consecutive_integer_limit(dt))
        for p in (0.0, 0.5, 1.0, 255.0, 256.0, 2047.0, 32764.0, 1e5, 3e7):
            if dt == "float16" and p > 65504:
                continue
            calls.append(("positionSpacing", [p, dt]))
            want.append(position_spacing(p, dt))
    assert js(*calls) == want


def test_distances_and_gate_b_margins():
    rng = np.random.default_rng(17)
    calls, want = [], []
    th = frequencies(128, 1e4)
    calls.append(("differenceDistance", [rng.uniform(0, 1e5, 40), th, {"scale": 0.5}]))
    want.append(difference_distance(np.array(calls[-1][1][0]), th, scale=0.5))
    sets = [list(range(1, 65)), list(range(100, 9000, 7)), [1, 2, 3], sorted(set(rng.integers(0, 50000, 60).tolist())),
            [0, 6283, 12566, 99], default_offsets(32768)["distant 64..32,767"].tolist()]
    for d, base in [(8, 1e4), (64, 1e4), (128, 5e5)]:
        th = frequencies(d, base)
        w = rng.uniform(0.1, 3, d // 2)
        for offs in sets:
            for dtype in ("float64", "float32", "float16", "bfloat16"):
                for origin in (0.0, 4000.0):
                    for weights in (None, w):
                        if dtype == "float16" and origin + max(offs) > 60000:
                            continue
                        calls.append(("separationMargin", [offs, th, {"dtype": dtype, "origin": origin, "weights": weights}]))
                        m = separation_margin(offs, th, dtype=dtype, origin=origin,
                                              weighting="pair" if weights is None else weights)
                        want.append((m, dtype))
    got = js(*calls)
    close(got[0], want[0])
    for g, (m, dtype) in zip(got[1:], want[1:]):
        # generated phases: cos/sin within an ulp of numpy's (see the module docstring), so the
        # margins agree to about an ulp of the format; exact collapses (margin 0) agree exactly
        tol = {"float64": TOL, "float32": 2e-6, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
        close(g["margin"], m.margin, tol)
        if m.margin == 0.0 or dtype == "float64":
            assert tuple(g["pair"]) == m.pair, (g, m)


def test_default_offsets():
    cases = [(n, None) for n in (3, 64, 129, 4096, 32768, 131072, 10**6)]
    cases += [(32768, 4096), (32768, 512), (131072, 128), (131072, 129), (100, 4096), (4096, 4096), (50, 2), (10**6, 1)]
    got = js(*[("defaultOffsets", [n, w]) for n, w in cases])
    for g, (n, w) in zip(got, cases):
        want = default_offsets(n, w)
        assert [s["name"] for s in g] == list(want), (n, w)
        for s, o in zip(g, want.values()):
            assert s["offsets"] == o.tolist(), (n, w)
    # without a window the call keeps its one-argument form
    assert js(("defaultOffsets", [32768]))[0] == got[4]


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_rotary_score_is_apply_rope(pairing, dtype):
    rng = np.random.default_rng(23)
    d, r = 16, 12
    th = frequencies(d, 1e4, r)
    q, k = rng.normal(size=d), rng.normal(size=d)
    calls, want = [], []
    for m, n in [(0, 0), (3, 11), (100, 40), (1000, 1700)]:
        calls.append(("rotaryScore", [q, k, m, n, th, {"pairing": pairing, "dtype": "float64"}]))
        want.append(float(apply_rope(q[None], [m], theta=th, rotary_dim=r, pairing=pairing)[0]
                          @ apply_rope(k[None], [n], theta=th, rotary_dim=r, pairing=pairing)[0]))
        # in a low-precision dtype the score uses the generated cos/sin rows
        cm, sm = generated_phases([m], th, dtype)
        cn, sn = generated_phases([n], th, dtype)
        a, b = (np.arange(0, r, 2), np.arange(1, r, 2)) if pairing == "interleaved" else (np.arange(r // 2), np.arange(r // 2, r))
        qa, qb = q[a] * cm[0] - q[b] * sm[0], q[a] * sm[0] + q[b] * cm[0]
        ka, kb = k[a] * cn[0] - k[b] * sn[0], k[a] * sn[0] + k[b] * cn[0]
        calls.append(("rotaryScore", [q, k, m, n, th, {"pairing": pairing, "dtype": dtype}]))
        want.append(float(qa @ ka + qb @ kb + q[r:] @ k[r:]))
    close(js(*calls), want)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_generated_phases_round_exactly_like_the_format(dtype):
    """Given correctly rounded float32 cos and sin, every rounding of the pipeline is exact: the
    page's phases equal the float64 cos/sin of the dtype's angles rounded to float32 and then to
    the dtype (numpy and ml_dtypes take float16 and bfloat16 cos/sin through float32), up to a
    neighbour where the exact value sits at a rounding boundary (two cos implementations)."""
    from ropegeo.rotation import phase_angles

    dt = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[dtype]
    th = frequencies(128, 1e4)
    positions = [0, 1, 2, 3, 100, 255, 257, 1000, 2047, 2049, 4097, 30001, 60000]
    calls, want = [], []
    for p in positions:
        calls.append(("generatedPhases", [float(p), th, dtype, 1.0]))
        want.append(phase_angles(np.asarray([float(p)]).astype(dt), th, dtype)[0])
    got = js(*calls)
    # V8's Math.cos and numpy's cos are two implementations, each within an ulp of the exact value:
    # the page's phase is the format's rounding of a value within 2 (float64) ulps of numpy's
    to_format = lambda v: v.astype(np.float32).astype(dt).astype(float)  # noqa: E731
    for g, a in zip(got, want):
        assert_rounds_within(g["cos"], np.cos(a), to_format, ulps=2)
        assert_rounds_within(g["sin"], np.sin(a), to_format, ulps=2)


# ---- labsphase: angle tables and phase pipelines (the angle heatmap and pipeline labs) ----
def _pipelines():
    from ropegeo.precision import buffer_cast, deployed, uniform

    return {"float32": uniform("float32"), "deployed": deployed("bfloat16"), "cast": buffer_cast("bfloat16"),
            "bfloat16": uniform("bfloat16")}


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_angle_tables_and_wrapped_phases(dtype):
    """angleTable is phase_angles (bit for bit in the low-precision dtypes), wrapPhase is np.mod."""
    from ropegeo.rotation import phase_angles

    th = S.scaled_frequencies(S.preset("yarn", train_length=2048, target_length=16384), 64, 1e4)[0]
    pos = [0, 1, 255, 257, 2049, 4097, 30001, 60000] + ([123_457, 2**24 + 1] if dtype != "float16" else [])
    for scale in (1.0, 0.25):
        table, = js(("angleTable", [pos, th, dtype, scale]))
        want = phase_angles(np.asarray(pos, dtype=float), th, dtype, scale=scale)
        if dtype == "float64":
            close(table, want.ravel(), 1e-12)
        else:
            assert np.array_equal(np.asarray(table), want.ravel())
    a = np.concatenate([want.ravel(), [0.0, 2 * np.pi, -1e-300, 7 * np.pi, -3.0, 1e6 + 0.5]])
    got = js(*[("wrapPhase", [float(x)]) for x in a], *[("phaseDifference", [float(x), 1.25]) for x in a])
    assert got[:a.size] == np.mod(a, 2 * np.pi).tolist()  # exact: fmod is exact and one addition correctly rounded
    assert got[a.size:] == (np.mod(a - 1.25 + np.pi, 2 * np.pi) - np.pi).tolist()
    assert js(("angleTable", [[1.0], [np.inf], dtype]))[0] is None


def test_pipelines_round_as_ropegeo_precision():
    """Angles of every pipeline equal ropegeo's bit for bit; tables with a bfloat16 table equal
    ropegeo's but at a rounding boundary; the float32 table within one float32 ulp (numpy's float32 cos/sin, see above); the
    phase errors follow, and pipelineErrors (max over the pairs) agrees with pipelinePhaseError."""
    from ropegeo.precision import generated_phases, max_phase_error, phase_error
    from ropegeo.rotation import phase_angles

    pipes = _pipelines()
    th = frequencies(128, 1e4)
    pos = [1, 2, 100, 255, 257, 1000, 4000, 32765, 60000, 123_457, 1_000_003]
    to_bf16 = lambda v: v.astype(np.float32).astype(ml_dtypes.bfloat16).astype(float)  # noqa: E731
    for name, pipe in pipes.items():
        calls = [("pipelineAngles", [float(p), th, js_pipe(pipe)]) for p in pos]
        calls += [("pipelineTable", [float(p), th, js_pipe(pipe)]) for p in pos]
        calls += [("pipelinePhaseError", [float(p), th, js_pipe(pipe)]) for p in pos]
        got = js(*calls)
        stored = th if pipe.frequency_dtype is None else th.astype(ml_dtypes.bfloat16).astype(float)
        angles = phase_angles(np.asarray(pos, dtype=float), stored, pipe.angle_dtype)
        cos, sin = generated_phases(np.asarray(pos, dtype=float), th, pipe)
        err = phase_error(np.asarray(pos, dtype=float), th, pipe)
        mismatched = 0
        for k in range(len(pos)):
            assert np.array_equal(got[k], angles[k]), (name, pos[k])
            g = got[len(pos) + k]
            for a, b, trig in ((g["cos"], cos[k], np.cos), (g["sin"], sin[k], np.sin)):
                a = np.asarray(a)
                if pipe.table_dtype == "float32":
                    assert np.all(np.abs(a - b) <= np.spacing(np.abs(b).astype(np.float32)).astype(float))
                    mismatched += int(np.count_nonzero(a != b))
                else:  # numpy's float32 cos/sin and JavaScript's fround(Math.cos) are within 2 float32
                    # ulps of the exact value: the table is the bfloat16 rounding of such a value
                    assert_rounds_within(a, trig(angles[k]), to_bf16, ulps=2, unit=np.float32, err_msg=f"{name} {pos[k]}")
            tol = 2.0**-23 if pipe.table_dtype == "float32" else 1e-9
            # where the two tables round a phase apart (see above), its error moves by at most that step
            tol = tol + np.abs(np.asarray(g["cos"]) - cos[k]) + np.abs(np.asarray(g["sin"]) - sin[k])
            assert np.all(np.abs(np.asarray(got[2 * len(pos) + k]) - err[k]) <= tol), (name, pos[k])
        if pipe.table_dtype == "float32":
            assert mismatched < 0.3 * 2 * len(pos) * th.size  # most entries are the same float32 number
    many = [float(p) for p in range(1, 5000, 37)]
    got = js(("pipelineErrors", [many, th, {k: js_pipe(p) for k, p in pipes.items()}]),
             *[("pipelinePhaseError", [p, th, js_pipe(pipes["cast"])]) for p in many[:20]])
    for name, pipe in pipes.items():
        tol = 2.0**-23 if pipe.table_dtype == "float32" else 1e-9
        if pipe.table_dtype != "float32":  # plus the bfloat16 step where a phase may round apart (as above)
            stored = th if pipe.frequency_dtype is None else th.astype(ml_dtypes.bfloat16).astype(float)
            a = phase_angles(np.asarray(many), stored, pipe.angle_dtype)
            for x in (np.cos(a), np.sin(a)):
                e = 2 * np.spacing(np.abs(x).astype(np.float32)).astype(float)
                tol = tol + np.max(to_bf16(x + e) - to_bf16(x - e), axis=1)
        assert np.all(np.abs(np.asarray(got[0][name]) - max_phase_error(many, th, pipe)) <= tol), name
    assert got[0]["cast"][:20] == [max(e) for e in got[1:]]


def js_pipe(pipe):
    """A PhasePipeline as the core takes it."""
    return {"angle_dtype": pipe.angle_dtype, "table_dtype": pipe.table_dtype, "frequency_dtype": pipe.frequency_dtype}


def test_core_pipelines_are_ropegeos():
    core = call_js(CORE + "\nexport function pipes() { return PIPELINES; }\n", [("pipes", [])])[0]
    assert core == {k: js_pipe(p) for k, p in _pipelines().items()}
