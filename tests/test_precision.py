"""Phase precision: against direct ml_dtypes / numpy computations and known format facts."""

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ropegeo.frequencies import frequencies
from ropegeo.precision import (
    PHASE_DTYPES,
    PhasePipeline,
    as_pipeline,
    consecutive_integer_limit,
    deployed,
    first_collapse,
    generated_phases,
    max_phase_error,
    phase_error,
    uniform,
)
from ropegeo.rotation import phase_angles

NP = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
BITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}  # significant bits of each format
THETA = frequencies(128)


def direct(positions, theta, name, scale=1.0, table=None):
    """Straight-line reference: cast, scale, multiply in dtype ``name``; cos/sin there, cast to ``table``."""
    t = NP[name]
    tab = NP[table or name]
    pos = np.asarray(positions, dtype=np.float64).astype(t)
    if scale != 1.0:
        pos = (pos * t(scale)).astype(t)
    ang = (pos[:, None] * np.asarray(theta).astype(t)[None, :]).astype(t)
    return np.cos(ang).astype(tab).astype(np.float64), np.sin(ang).astype(tab).astype(np.float64)


@pytest.mark.parametrize("name", PHASE_DTYPES)
@pytest.mark.parametrize("scale", [1.0, 0.125])
def test_generated_phases_match_direct_ml_dtypes(name, scale):
    pos = np.array([0, 1, 7, 255, 256, 257, 1000, 4095, 20_000])
    cos, sin = generated_phases(pos, THETA, uniform(name), scale=scale)
    rc, rs = direct(pos, THETA, name, scale)
    np.testing.assert_array_equal(cos, rc)
    np.testing.assert_array_equal(sin, rs)
    assert cos.dtype == np.float64 and cos.shape == (pos.size, THETA.size)


def _first_missing_integer(t):
    """Smallest positive integer that does not survive a round trip through dtype t (loop)."""
    n = 1
    while True:
        block = np.arange(n, n + 4096, dtype=np.float64)
        back = block.astype(t).astype(np.float64)
        bad = np.flatnonzero(back != block)
        if bad.size:
            return int(block[bad[0]])
        n += 4096


@pytest.mark.parametrize("name, known", [("bfloat16", 256), ("float16", 2048), ("float32", 2**24)])
def test_consecutive_integer_limits_known_facts(name, known):
    assert consecutive_integer_limit(name) == known == 2 ** BITS[name]
    if name != "float32":
        assert _first_missing_integer(NP[name]) == known + 1
    else:  # check only around the limit
        block = np.arange(known - 8, known + 8, dtype=np.float64)
        back = block.astype(np.float32).astype(np.float64)
        assert np.all(back[block <= known] == block[block <= known])
        assert back[block == known + 1][0] != known + 1


def test_float64_limit():
    assert consecutive_integer_limit("float64") == 2**53
    assert float(2**53 + 1) == float(2**53)


@pytest.mark.parametrize("name, expected", [("bfloat16", 256), ("float16", 2048)])
def test_first_collapse_low_precision(name, expected):
    # with theta_0 = 1 the rows differ as long as the positions do: collapse where 257 (2049) rounds down
    assert first_collapse(THETA, uniform(name)) == expected
    # brute force with the direct reference around the point
    pos = np.arange(expected - 3, expected + 3)
    c, s = direct(pos, THETA, name)
    same = [bool(np.all(c[j] == c[j + 1]) and np.all(s[j] == s[j + 1])) for j in range(pos.size - 1)]
    assert same.index(True) == 3


def test_first_collapse_float32_near_limit_and_none():
    assert first_collapse(THETA, "float32", start=2**24 - 50, stop=2**24 + 50) == 2**24
    assert first_collapse(THETA, "float32", start=0, stop=5000) is None


def test_first_collapse_with_scale_and_offset_start():
    # scale 1/8 is a power of two: exact in bfloat16, so the collapse stays where positions collide
    assert first_collapse(THETA, uniform("bfloat16"), scale=0.125) == 256
    # scale 0.3 rounds in bfloat16; compare with a brute-force scan of the direct reference
    pos = np.arange(0, 400)
    c, s = direct(pos, THETA, "bfloat16", 0.3)
    same = np.all((c[1:] == c[:-1]) & (s[1:] == s[:-1]), axis=1)
    expected = int(np.flatnonzero(same)[0]) if same.any() else None
    assert first_collapse(THETA, uniform("bfloat16"), scale=0.3, stop=399) == expected
    assert first_collapse(THETA, uniform("float16"), start=3000, stop=3100) == 3000


def test_phase_error_float64_is_rounding_only():
    err = phase_error(np.arange(0, 50_000, 997), THETA, "float64")
    assert err.max() < 1e-10


def test_phase_error_matches_scalar_loop():
    pos = [3.0, 300.0, 3000.0]
    err = phase_error(pos, THETA[:5], uniform("bfloat16"))
    c, s = direct(pos, THETA[:5], "bfloat16")
    for j, p in enumerate(pos):
        for i, t in enumerate(THETA[:5]):
            gen = math.atan2(s[j, i], c[j, i])
            diff = (gen - p * t + math.pi) % (2 * math.pi) - math.pi
            assert err[j, i] == pytest.approx(abs(diff), abs=1e-12)


@given(
    pos=st.floats(min_value=0, max_value=60_000, allow_nan=False),
    name=st.sampled_from(["float32", "float16", "bfloat16"]),
)
def test_phase_error_bounded_by_rounding_model(pos, name):
    # position, frequency and product each round with relative error <= u = 2^-p; cos and sin
    # each round with absolute error <= u: the angle error is at most ~3u|angle| + 2u (plus slack)
    u = 2.0 ** -BITS[name]
    err = phase_error([pos], THETA, uniform(name))[0]
    angle = pos * THETA
    bound = 4 * u * angle + 3 * u
    assert np.all(err <= np.minimum(bound, math.pi) + 1e-12)
    assert np.all((err >= 0) & (err <= math.pi))


def test_error_grows_with_position():
    e = max_phase_error([10.0, 1000.0, 100_000.0], THETA, "float32")
    assert e[0] < e[1] < e[2]


def test_max_phase_error_chunks_agree():
    pos = np.arange(0, 40_000, 3.0)
    for dt in (deployed("float16"), "float16"):
        np.testing.assert_array_equal(max_phase_error(pos, THETA, dt), phase_error(pos, THETA, dt).max(axis=1))


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: generated_phases([1.0], THETA, "int8"), "dtype"),
        (lambda: generated_phases([1.0], THETA, "float128"), "dtype"),
        (lambda: generated_phases([np.nan], THETA, "float32"), "positions"),
        (lambda: generated_phases([1.0], [], "float32"), "theta"),
        (lambda: generated_phases([1.0], [-1.0], "float32"), "theta"),
        (lambda: generated_phases([100_000.0], THETA, uniform("float16")), "float16"),
        (lambda: generated_phases([1.0], THETA, PhasePipeline("float32", "float8")), "table_dtype"),
        (lambda: deployed("int8"), "model_dtype"),
        (lambda: generated_phases([1.0], THETA, "float32", scale=np.inf), "scale"),
        (lambda: phase_error([1.0], THETA, "bogus"), "dtype"),
        (lambda: consecutive_integer_limit("int32"), "dtype"),
        (lambda: first_collapse(THETA, "bfloat16", start=-1), "start"),
        (lambda: first_collapse(THETA, "bfloat16", stop=2**40), "stop"),
        (lambda: max_phase_error(np.ones((2, 2)), THETA, "float32"), "positions"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, word):
    with pytest.raises(ValueError, match=word):
        call()


@pytest.mark.parametrize("dtype, position", [
    (dt, p) for dt in ("float16", "float32", "float64") for p in (1, 3, 255, 256, 2047, 2048, 32_764, 65_000)
] + [("float32", 1e6), ("float32", 2.0**24 + 3), ("float64", 1e6), ("float64", 2.0**53)])
def test_position_spacing_matches_nextafter(dtype, position):
    from ropegeo.precision import position_spacing

    t = np.dtype(dtype).type
    low = t(2.0 ** math.floor(math.log2(position)))  # start of the binade, exactly representable
    assert position_spacing(position, dtype) == float(np.nextafter(low, t(np.inf))) - float(low)


@pytest.mark.parametrize("position", [1, 200, 256, 300, 4000, 32_764])
def test_position_spacing_bfloat16_by_enumeration(position):
    from ropegeo.precision import position_spacing

    k = math.floor(math.log2(position))
    grid = np.linspace(2.0**k, 2.0 ** (k + 1), 4097)[:-1]  # finer than any bfloat16 gap in the binade
    stored = np.unique(grid.astype(ml_dtypes.bfloat16).astype(np.float64))
    stored = stored[stored < 2.0 ** (k + 1)]
    assert set(np.diff(stored)) == {position_spacing(position, "bfloat16")}


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "7", None, True])
def test_position_spacing_rejects_bad_positions(bad):
    from ropegeo.precision import position_spacing

    with pytest.raises(ValueError, match="position"):
        position_spacing(bad, "float16")
    with pytest.raises(ValueError, match="dtype"):
        position_spacing(10, "int8")


def test_position_spacing_refuses_positions_beyond_the_format():
    from ropegeo.precision import position_spacing

    with pytest.raises(ValueError, match="largest float16"):
        position_spacing(1e6, "float16")
    assert position_spacing(65_504, "float16") == 32.0


def test_first_collapse_scans_only_exact_positions():
    with pytest.raises(ValueError, match="start must be at most"):
        first_collapse(frequencies(8), "float32", start=2**100)


def test_first_collapse_scans_at_most_max_scan_cells_phases():
    from ropegeo.precision import MAX_SCAN_CELLS

    pairs = 2048
    with pytest.raises(ValueError, match=f"stop must be at most {MAX_SCAN_CELLS // pairs}"):
        first_collapse(frequencies(2 * pairs), "float32", stop=MAX_SCAN_CELLS // pairs + 1)


# ---- the staged pipeline ------------------------------------------------------------------------


@pytest.mark.parametrize("name", PHASE_DTYPES)
@pytest.mark.parametrize("scale", [1.0, 0.125, 0.3])
def test_the_deployed_pipeline_casts_only_the_table(name, scale):
    """float32 angles (float64 for a float64 model), the finished cos/sin cast to the model dtype."""
    pos = np.array([0, 1, 255, 256, 257, 4095, 32_765, 32_766, 32_767])
    angle = "float64" if name == "float64" else "float32"
    rc, rs = direct(pos, THETA, angle, scale, table=name)
    for dt in (deployed(name), PhasePipeline(angle, name, name)):
        cos, sin = generated_phases(pos, THETA, dt, scale=scale)
        np.testing.assert_array_equal(cos, rc)
        np.testing.assert_array_equal(sin, rs)
    # a dtype name keeps its meaning across ropegeo: every stage in that dtype
    assert as_pipeline(name) == uniform(name) == PhasePipeline(name, name, name)


def test_pipeline_labels_and_exactness():
    assert deployed("bfloat16").label == "deployed bfloat16" and uniform("bfloat16").label == "bfloat16"
    assert uniform("float32") == deployed("float32") and uniform("float64").exact
    assert not deployed("bfloat16").exact
    assert PhasePipeline("float16", "float32", "float64").label == "float16 angles, float32 cos/sin, float64 rotation"
    with pytest.raises(ValueError, match="rotation_dtype"):
        PhasePipeline("float32", "float32", "int8")


def test_deployed_bfloat16_keeps_neighbours_apart_until_the_float32_limit():
    # the positions are float32, so rows first coincide where float32 integers do (2**24), not at 256
    dep = deployed("bfloat16")
    assert first_collapse(THETA, dep, start=0, stop=5000) is None
    assert first_collapse(THETA, dep, start=2**24 - 40, stop=2**24 + 40) == 2**24
    assert first_collapse(THETA, "bfloat16") == first_collapse(THETA, uniform("bfloat16")) == 256


@given(pos=st.floats(min_value=0, max_value=60_000, allow_nan=False), name=st.sampled_from(["float16", "bfloat16"]))
def test_deployed_error_is_float32_angle_error_plus_one_table_rounding(pos, name):
    # float32 angle: at most ~4 u32 |angle| + 3 u32; rounding cos and sin to the table adds at most
    # 2**-p each, an angle error of at most about sqrt(2) 2**-p
    u32, ut = 2.0**-24, 2.0 ** -BITS[name]
    err = phase_error([pos], THETA, deployed(name))[0]
    assert np.all(err <= 4 * u32 * pos * THETA + 3 * u32 + 1.5 * ut + 1e-12)


def test_deployed_error_is_far_below_the_uniform_error():
    pos = np.array([200.0, 4000.0, 32_000.0])
    dep = max_phase_error(pos, THETA, deployed("bfloat16"))
    old = max_phase_error(pos, THETA, "bfloat16")
    assert np.all(dep < 0.01) and np.all(old > 0.1)


def test_phase_angles_stages_cast_then_scale_then_multiply():
    # 259 is not a bfloat16 number: cast first, it becomes 260 (ties to even), and 260 * bf16(0.3)
    # rounds to 78 in bfloat16; scaling first in float64 would give 77.7, stored as 77.5
    b = ml_dtypes.bfloat16
    assert float(b(259.0)) == 260.0
    expected = float(b(b(b(259.0) * b(0.3)) * b(1.0)))
    assert float(phase_angles([259.0], [1.0], "bfloat16", scale=0.3)[0, 0]) == expected == 78.0
    assert float(b(259.0 * 0.3)) == 77.5
    # and in float32, the order of transformers' linear scaling: float32 positions / factor
    got = phase_angles([32_765.0], THETA[:3], "float32", scale=1 / 8)
    want = (np.float32(32_765.0) * np.float32(1 / 8)) * THETA[:3].astype(np.float32)
    np.testing.assert_array_equal(got[0], want.astype(np.float64))


def test_apply_rope_uses_the_same_angle_stages():
    from ropegeo.rotation import apply_rope

    x = np.zeros(4)
    x[0] = 1.0
    th = np.array([1.0, 0.01])
    out = apply_rope(x, 259.0, theta=th, scale=0.3, phase_dtype="bfloat16")
    ang = phase_angles([259.0], th, "bfloat16", scale=0.3)[0, 0]
    assert ang == 78.0
    assert out[0] == pytest.approx(math.cos(ang), abs=1e-15) and out[1] == pytest.approx(math.sin(ang), abs=1e-15)


def test_rotation_stage_rounds_like_the_dtype():
    rng = np.random.default_rng(0)
    a, b, c, s = rng.normal(size=(4, 50))
    t = ml_dtypes.bfloat16
    ra, rb = deployed("bfloat16").rotate(a, b, c, s)
    for j in range(50):
        aj, bj, cj, sj = t(a[j]), t(b[j]), t(c[j]), t(s[j])
        assert ra[j] == float(t(t(aj * cj) - t(bj * sj)))
        assert rb[j] == float(t(t(aj * sj) + t(bj * cj)))
    ea, eb = uniform("float64").rotate(a, b, c, s)
    np.testing.assert_allclose(ea, a * c - b * s, rtol=0, atol=1e-15)
    np.testing.assert_allclose(eb, a * s + b * c, rtol=0, atol=1e-15)


def test_scale_on_positions_or_on_frequencies_in_float32():
    # the module docstring: later transformers folds a linear factor into the float32 inverse
    # frequencies instead of dividing the float32 positions; for a power-of-two factor the two
    # orders agree exactly, for factor 3 they differ by one float32 rounding (at most 2**-8 rad here)
    th = (10_000.0 ** (-np.arange(0, 128, 2) / 128)).astype(np.float32)
    p = np.arange(0, 131_072, dtype=np.float32)
    for f, bound in ((8.0, 0.0), (32.0, 0.0), (3.0, 2.0**-8)):
        on_positions = np.multiply.outer(p / np.float32(f), th).astype(np.float64)
        on_frequencies = np.multiply.outer(p, th / np.float32(f)).astype(np.float64)
        gap = np.abs(on_positions - on_frequencies).max()
        assert gap <= bound and (bound == 0 or gap > 0)


# ---- the buffer-cast pipeline: model.to(torch.bfloat16) rounds inv_freq, forward widens it ----
def _buffer_cast_error_by_hand(position, head_dim=128, base=10_000.0):
    """transformers 5.24's LlamaRotaryEmbedding after model.to(bfloat16), written out per pair:
    inv_freq = 1 / base**(arange(0, d, 2) / d) in float32, rounded to bfloat16 by the cast,
    widened to float32 in forward, times the float32 position; cos and sin of that float32 angle
    rounded to bfloat16. The error is the angle of the (cos, sin) vector from the exact one."""
    worst = 0.0
    for j in range(0, head_dim, 2):
        f32 = np.float32(1.0) / np.float32(base) ** (np.float32(j) / np.float32(head_dim))
        stored = np.float32(ml_dtypes.bfloat16(f32))
        angle = np.float32(position) * stored
        c = float(ml_dtypes.bfloat16(np.cos(angle)))
        s = float(ml_dtypes.bfloat16(np.sin(angle)))
        true = position * base ** (-j / head_dim)
        err = abs(math.atan2(s * math.cos(true) - c * math.sin(true), c * math.cos(true) + s * math.sin(true)))
        worst = max(worst, err)
    return worst


@pytest.mark.parametrize("position", [200.0, 1000.0, 4000.0])
def test_buffer_cast_matches_the_loop_written_from_transformers(position):
    from ropegeo.precision import buffer_cast

    got = float(max_phase_error([position], frequencies(128, 10_000.0), buffer_cast("bfloat16"))[0])
    want = _buffer_cast_error_by_hand(position)
    # numpy's pow in float32 and the float64 frequencies rounded to bfloat16 can differ by one
    # float32 unit before the bfloat16 rounding, which almost never moves a bfloat16 value
    assert got == pytest.approx(want, abs=2e-3)


def test_buffer_cast_numbers_of_the_issue_and_its_place_between_the_others():
    from ropegeo.precision import buffer_cast

    th = frequencies(128, 10_000.0)
    cast = max_phase_error([200.0, 4000.0], th, buffer_cast("bfloat16"))
    assert cast.round(2).tolist() == [0.24, 2.56]
    # far worse than the deployed pipeline (float32 frequencies), whose error stays near one table unit
    assert (max_phase_error([200.0, 4000.0], th, deployed("bfloat16")) < 3e-3).all()
    # the rounding of the frequency is a fixed fraction of it: the error grows in proportion to position
    lin = max_phase_error([50.0, 100.0], th, buffer_cast("bfloat16"))
    assert lin[1] / lin[0] == pytest.approx(2.0, rel=0.05)


def test_buffer_cast_pipeline_fields_and_label():
    from ropegeo.precision import PhasePipeline, buffer_cast

    p = buffer_cast("bfloat16")
    assert (p.frequency_dtype, p.angle_dtype, p.table_dtype, p.rotation_dtype) == (
        "bfloat16", "float32", "bfloat16", "bfloat16")
    assert p.label == "buffer-cast bfloat16" and not p.exact
    assert buffer_cast("float16").label == "buffer-cast float16"
    assert PhasePipeline(frequency_dtype="float64").exact
    assert "bfloat16 frequencies" in PhasePipeline("float64", "float64", "float64", "bfloat16").label
    with pytest.raises(ValueError, match="frequency_dtype"):
        PhasePipeline(frequency_dtype="int8")
    with pytest.raises(ValueError, match="model_dtype"):
        buffer_cast("float8")
