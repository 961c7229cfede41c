"""Gate A on widely used rotary code outside transformers: rotary-embedding-torch (lucidrains),
x-transformers, torchtune (Llama 3 and Llama 3.1's scaled RoPE), Meta's llama-models reference
(complex numbers, Llama 3.1 ``apply_scaling``) and mistral-inference, in float32, bfloat16 and
float16. The real code passes against its declaration; broken variants built from its parts fail
with the leading check and defect class named. See :mod:`other_rotary` for how each library is
wrapped as ``f(x, positions)``.

Skipped when torch is absent, and per library when that library is absent; ``make test-torch``
installs them.
"""


import pytest
from _requires import require


require("torch", "ml_dtypes")

import other_rotary as o  # noqa: E402  (needs torch)

if not any(o.installed(lib) for lib in o.DECLARED):
    pytest.skip("none of rotary-embedding-torch, x-transformers, torchtune, llama-models, mistral-inference is "
                "installed (make test-torch installs them)", allow_module_level=True)

from ropegeo.gates.a.gate import gate_a  # noqa: E402

DTYPES = ("float32", "bfloat16", "float16")
#: every library wrapped the way its users index it (lucidrains-offset is the KV-cache path, below)
LIBRARIES = [lib for lib in o.DECLARED if lib != "lucidrains-offset"]


def _lib(lib):
    return pytest.param(lib, id=lib, marks=pytest.mark.skipif(not o.installed(lib), reason=f"{o.MODULES[lib]} absent"))


def _run(lib, dtype, defect=None, **overrides):
    return gate_a(o.rotary(lib, dtype, defect), **dict(o.declared(lib), **overrides))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lib", [_lib(lib) for lib in LIBRARIES])
def test_real_code_passes_in_every_serving_dtype(lib, dtype):
    r = _run(lib, dtype)
    assert r.passed, r.table()
    assert r.inferred["data_dtype"] == dtype  # read from the returned arrays
    assert r.inferred["pairing"] == "interleaved" == r.declared["pairing"]  # every one of them rotates adjacent pairs
    assert r.inferred["rotary_dim"] == r.declared["rotary_dim"]
    assert r.check("context").passed and r.check("batch").passed
    assert "every measured check passed" in r.diagnosis


@pytest.mark.parametrize("lib", [_lib("lucidrains-offset")])
def test_lucidrains_offset_path_is_right_in_float32(lib):
    r = _run(lib, "float32")
    assert r.passed, r.table()


@pytest.mark.parametrize("dtype, first", [("bfloat16", 257), ("float16", 2049)])
@pytest.mark.parametrize("lib", [_lib("lucidrains-offset")])
def test_lucidrains_offset_path_rounds_position_ids_to_the_data_dtype(lib, dtype, first):
    # rotate_queries_or_keys builds its positions with arange(seq, dtype=x.dtype) + offset: served
    # in bfloat16 (float16), every id from 257 (2,049) on is rounded before the float32 angles
    r = _run(lib, dtype)
    assert r.failed[0] == "context" and r.defects == ["position-id"], r.table()
    assert f"rounded to {dtype}" in r.diagnosis and f"from {first:,} on" in r.diagnosis
    assert r.check("precision").passed and r.check("frequencies").passed


DEFECTS = {
    # defect: (leading failed check, defect class, words the diagnosis must contain)
    "wrong-pairing": ("layout", "layout", "half-split layout, while the declared convention is interleaved"),
    "origin-off-by-one": ("origin", "position-id", "origin is off by +1"),
    "wrapped-table": ("context", "position-id", "P mod 4,096"),
    "bf16-angles": ("precision", "precision", "formed in bfloat16"),  # lucidrains/x-transformers: module.to(bf16)
    "mirrored": ("frequencies", "convention", "relative law still holds"),
    "first-row-only": ("batch", "position-id", "first row's position ids"),
    "query-scaled": ("norm", "magnitude", "norm ratio up to 1.25"),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("defect", list(DEFECTS))
@pytest.mark.parametrize("lib", [_lib(lib) for lib in LIBRARIES])
def test_broken_variants_are_named(lib, defect, dtype):
    check, kind, words = DEFECTS[defect]
    r = _run(lib, dtype, defect)
    assert r.failed and r.failed[0] == check, r.table()
    assert r.defects[0] == kind, r.table()
    assert words in r.diagnosis, r.diagnosis


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("lib", [_lib("llama_models"), _lib("torchtune-llama3.1")])
def test_llama31_scaling_is_part_of_the_promise(lib, dtype):
    # the same code without Llama 3.1's apply_scaling breaks the scaled declaration, as a frequency defect
    if lib == "llama_models":
        plain = o.llama_models_rotary(dtype, use_scaled=False)
    else:
        plain = o.torchtune_rotary(dtype, max_seq_len=131_072, scaled=False)
    r = gate_a(plain, **o.declared(lib))
    assert r.failed[0] == "frequencies" and r.defects[0] == "frequency", r.table()


@pytest.mark.parametrize("lib", [_lib("llama_models")])
def test_meta_code_against_the_hugging_face_config_is_a_layout_defect(lib):
    # Meta's checkpoints pair adjacent coordinates; the Hugging Face config.json of the same model
    # declares half-split pairs (its conversion permutes the weights): only the pairing differs
    r = gate_a(o.rotary(lib, "bfloat16"), manifest="llama-3.1-8b")
    assert r.failed[0] == "layout" and r.defects[0] == "layout", r.table()
    assert r.inferred["pairing"] == "interleaved"


@pytest.mark.parametrize("lib", [_lib("torchtune-llama3")])
def test_torchtune_cache_past_its_length_is_refused_by_name(lib):
    # torchtune's cache holds max_seq_len rows (8,192 here): a longer declared context cannot be served
    r = _run(lib, "float32", max_position=131_072)
    assert r.failed == ["context"] and r.defects == ["position-id"], r.table()
    assert "refuses positions from 8,192 on" in r.diagnosis


SCALED = {
    # case: (wrapper, its keyword arguments, gate_a keywords replacing the default declaration)
    "lucidrains-ntk": ("lucidrains", {"theta_rescale_factor": 8.0}, {"base": 10_000.0 * 8.0 ** (32 / 30)}),
    "lucidrains-offset-interpolated": ("lucidrains-offset", {"interpolate_factor": 4.0}, {"scale": 0.25}),
    "x_transformers-interpolated": ("x_transformers", {"interpolation_factor": 4.0}, {"scale": 0.25}),
    "x_transformers-ntk": ("x_transformers", {"base_rescale_factor": 8.0}, {"base": 10_000.0 * 8.0 ** (32 / 30)}),
}
_WRAPPERS = {"lucidrains": o.lucidrains_rotary, "x_transformers": o.x_transformers_rotary}


def _scaled(case, dtype):
    lib, options, _ = SCALED[case]
    if lib == "lucidrains-offset":
        return o.lucidrains_rotary(dtype, path="offset", **options)
    return _WRAPPERS[lib](dtype, **options)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.skipif(not o.installed(SCALED[c][0]),
                                                                          reason="absent")) for c in SCALED])
def test_scaling_options_pass_against_the_scaled_declaration(case, dtype):
    lib, _, declared = SCALED[case]
    r = gate_a(_scaled(case, dtype), **dict(o.declared(lib), **declared))
    if lib == "lucidrains-offset" and dtype == "bfloat16":  # its ids are rounded in bfloat16 (see above)
        assert r.failed[0] == "context" and r.defects == ["position-id"], r.table()
        return
    assert r.passed, r.table()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("lib", [_lib("lucidrains")])
def test_lucidrains_interpolation_is_skipped_when_the_module_is_called_on_ids(lib, dtype):
    # interpolate_factor is applied by get_seq_pos only: freqs = rotary(positions) rotates at the
    # unscaled frequencies, four times the declared ones
    r = gate_a(o.lucidrains_rotary(dtype, interpolate_factor=4.0), **dict(o.declared(lib), scale=0.25))
    assert r.failed[0] == "frequencies" and r.defects == ["frequency"], r.table()
    assert "every frequency is 4 times the declared one" in r.diagnosis, r.diagnosis


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lib", [_lib("lucidrains"), _lib("x_transformers"), _lib("torchtune-llama3")])
def test_a_module_cast_with_the_model(lib, dtype):
    # model.to(dtype) casts lucidrains' freqs parameter and x-transformers' inv_freq buffer, so the
    # angles are formed in the serving dtype: a precision defect in bfloat16 and float16. torchtune's
    # cache is built in float32 first: casting it rounds cos and sin only (flat, as the data), and it passes
    wrappers = {"lucidrains": o.lucidrains_rotary, "x_transformers": o.x_transformers_rotary,
                "torchtune-llama3": o.torchtune_rotary}
    r = gate_a(wrappers[lib](dtype, cast=True), **o.declared(lib))
    if dtype == "float32" or lib == "torchtune-llama3":
        assert r.passed, r.table()
        return
    assert r.failed[0] == "precision" and r.defects[0] == "precision", r.table()
    assert f"formed in {dtype}" in r.diagnosis, r.diagnosis


INTEGRATION = {
    # library: (defect, leading check, defect class, words)
    "torchtune-llama3": ("input-pos-omitted", "context", "position-id", "positions are ignored"),
    "llama_models": ("start-position", "context", "position-id", "one contiguous run"),
}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("lib", [_lib(lib) for lib in INTEGRATION])
def test_integration_mistakes_with_the_library_api(lib, dtype):
    # torchtune called without input_pos rotates by slot index; Meta's Transformer slices its table at
    # start_pos (one contiguous run per sequence), so packed or padded ids are lost
    defect, check, kind, words = INTEGRATION[lib]
    r = _run(lib, dtype, defect)
    assert r.failed[0] == check and r.defects[0] == kind, r.table()
    assert words in r.diagnosis, r.diagnosis


@pytest.mark.parametrize("lib", [_lib("lucidrains")])
def test_command_line_on_lucidrains_in_bfloat16(lib):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), env.get("PYTHONPATH", "")])
    args = ["--head-dim", "64", "--rotary-dim", "32", "--pairing", "interleaved", "--json"]

    def run(target):
        return subprocess.run([sys.executable, "-m", "ropegeo", "gate-a", target, *args], capture_output=True,
                              text=True, env=env, timeout=600)

    ok = run("other_rotary:lucidrains_bf16")
    assert ok.returncode == 0, ok.stderr + ok.stdout
    assert json.loads(ok.stdout)["inferred"]["data_dtype"] == "bfloat16"
    bad = run("other_rotary:lucidrains_offset_bf16")
    assert bad.returncode == 1, bad.stderr
    out = json.loads(bad.stdout)
    assert out["defects"] == ["position-id"] and "rounded to bfloat16" in out["diagnosis"]
