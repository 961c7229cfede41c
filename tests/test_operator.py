"""RotaryOperator: one value for the rotary operator, checked once, its frequencies cached.

Construction and its refusals (named), the refusal of plain keywords that contradict a given
operator (issue 24's example among them), the per-length cache (a rule's bank is computed once
per audit), equality with the plain-argument forms of every entry point that takes it, multi-axis
RoPE against a loop written out here, and the validator-call count of one geometry audit.
"""

from __future__ import annotations

import collections
import doctest
import math
import sys

import numpy as np
import pytest

import ropegeo
from ropegeo import _validate
from ropegeo import operator as operator_module
from ropegeo.gates.procedure import geometry_audit
from ropegeo.frequencies import frequencies
from ropegeo.gates.a.gate import gate_a
from ropegeo.gates.b.rule import gate_b_decision
from ropegeo.geometry import adjacent_similarity, kernel, near_collisions
from ropegeo.margins import difference_distance, separation_margin
from ropegeo.models.manifest import RopeManifest, load_model
from ropegeo.operator import RotaryOperator
from ropegeo.rotation import apply_rope, relative_law_error, rotation_matrix
from ropegeo.scaling import Scaling
from ulps import assert_ulps

PLAIN = [
    dict(head_dim=16),
    dict(head_dim=16, pairing="half"),
    dict(head_dim=32, base=500_000.0, rotary_dim=8, pairing="half"),
    dict(head_dim=16, theta=[1.0, 0.3, 0.05], scale=0.25),
    dict(head_dim=8, phase_dtype="bfloat16", scale=1.5),
    dict(head_dim=8, phase_dtype="float16"),
]


def op_of(plain: dict) -> RotaryOperator:
    return RotaryOperator.coerce(**plain)


# ---------------------------------------------------------------------------------- construction
def test_defaults_are_the_roformer_operator():
    op = RotaryOperator()
    assert (op.head_dim, op.rotary_dim, op.pairing, op.base, op.scale, op.phase_dtype) == \
        (128, 128, "interleaved", 10_000.0, 1.0, "float64")
    assert op.pairs == 64 and op.scaling is None and op.theta_given is None and op.sections is None
    # the schedule, written out: base ** (-2i / r); numpy's vectorised power and Python's ** are two
    # pow implementations (each within an ulp of the exact value): they agree to 2 ulps, not bit for bit
    assert_ulps(op.theta, np.array([10_000.0 ** (-2 * i / 128) for i in range(64)]), ulps=2)


def test_explicit_frequencies_set_the_rotary_width_and_are_stored_as_a_tuple():
    op = RotaryOperator(head_dim=16, theta=np.array([1.0, 0.5]))
    assert op.rotary_dim == 4 and op.theta_given == (1.0, 0.5) and op.base is None
    assert op.theta.tolist() == [1.0, 0.5]
    assert RotaryOperator(head_dim=16, theta=[1.0, 0.5]) == op and hash(op) == hash(op.with_())


def test_a_scaling_dict_is_read_as_a_rule():
    op = RotaryOperator(head_dim=8, scaling={"rule": "linear", "factor": 4})
    assert isinstance(op.scaling, Scaling) and op.scaling.factor == 4.0
    assert np.array_equal(op.theta, frequencies(8) / 4.0)  # exact: the same schedule, divided by a power of two
    assert np.array_equal(op.unscaled.theta, frequencies(8)) and op.unscaled.scaling is None


@pytest.mark.parametrize("kwargs, name", [
    (dict(head_dim=7), "head_dim"),
    (dict(head_dim=8, rotary_dim=5), "rotary_dim"),
    (dict(head_dim=8, rotary_dim=10), "rotary_dim"),
    (dict(pairing="halves"), "pairing"),
    (dict(base=1.0), "base"),
    (dict(base=float("nan")), "base"),
    (dict(head_dim=4, theta=[1.0, 0.1, 0.01]), "theta"),
    (dict(head_dim=8, theta=[1.0, -0.1]), "theta"),
    (dict(head_dim=8, theta=[1.0, 0.1], rotary_dim=8), "rotary_dim"),
    (dict(head_dim=8, theta=[1.0], scaling=Scaling("linear", factor=2.0)), "scaling"),
    (dict(scaling={"rule": "nope"}), "scaling"),
    (dict(scaling=3), "scaling"),
    (dict(scale=float("inf")), "scale"),
    (dict(attention_factor=0.0), "attention_factor"),
    (dict(phase_dtype="int8"), "phase_dtype"),
    (dict(round_robin=True), "round_robin"),
    (dict(head_dim=8, sections=(1, 2)), "sections"),
    (dict(head_dim=8, sections=(2, 0, 2)), "sections[1]"),
    (dict(head_dim=8, sections=(2, 2), round_robin="yes"), "round_robin"),
])
def test_construction_refuses_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name.replace("[", r"\[").replace("]", r"\]")):
        RotaryOperator(**kwargs)


# ---------------------------------------------------------------------------------- conflicts
def test_coerce_returns_the_operator_given_and_accepts_agreeing_keywords():
    op = RotaryOperator(head_dim=64, base=500_000.0, pairing="half")
    assert RotaryOperator.coerce(op) is op
    assert RotaryOperator.coerce(op, head_dim=64, base=500_000, pairing="half", scale=None, theta=None) is op


@pytest.mark.parametrize("key, value", [("head_dim", 32), ("base", 10_000.0), ("pairing", "interleaved"),
                                        ("rotary_dim", 32), ("scale", 0.5), ("theta", [1.0]),
                                        ("phase_dtype", "float32"), ("attention_factor", 1.2)])
def test_coerce_refuses_a_conflicting_keyword_by_name(key, value):
    op = RotaryOperator(head_dim=64, base=500_000.0, pairing="half")
    with pytest.raises(ValueError, match=f"^{key}=.* conflicts with the operator's {key}"):
        RotaryOperator.coerce(op, **{key: value})


def test_coerce_refuses_what_is_not_an_operator():
    with pytest.raises(ValueError, match="operator must be a ropegeo.RotaryOperator"):
        RotaryOperator.coerce({"head_dim": 8})


def test_the_issue_example_is_refused_by_name():
    m = load_model("llama-3.1-8b")
    with pytest.raises(ValueError, match="base=10000.0 conflicts with the operator's base 500000.0"):
        geometry_audit(m, base=10000.0, pairing="interleaved")
    with pytest.raises(ValueError, match="pairing='interleaved' conflicts with the operator's pairing 'half'"):
        geometry_audit(m, pairing="interleaved")
    with pytest.raises(ValueError, match="train_length"):
        geometry_audit(m, train_length=4096)
    with pytest.raises(ValueError, match="interpolate"):
        geometry_audit(m, interpolate=False)


def test_geometry_audit_takes_the_operator_first_and_plain_numbers_by_keyword():
    with pytest.raises(ValueError, match="operator must be a RopeManifest or a RotaryOperator"):
        geometry_audit(8)
    with pytest.raises(ValueError, match="head_dim must be an integer"):
        geometry_audit(head_dim=RotaryOperator())


def test_agreeing_plain_numbers_change_nothing():
    m = load_model("llama-2-7b")
    assert geometry_audit(m, pairing="half", base=m.base, search_limit=3000).to_dict() == \
        geometry_audit(m, search_limit=3000).to_dict()


def test_entry_points_refuse_conflicts_with_an_operator():
    op = RotaryOperator(head_dim=8, pairing="half")
    x = np.ones(8)
    with pytest.raises(ValueError, match="pairing="):
        apply_rope(x, 3, operator=op, pairing="interleaved")
    with pytest.raises(ValueError, match="head_dim"):
        apply_rope(np.ones(16), 3, operator=op)
    with pytest.raises(ValueError, match="base="):
        rotation_matrix(1.0, operator=op, base=500.0)
    with pytest.raises(ValueError, match="head_dim="):
        relative_law_error(16, operator=op)
    with pytest.raises(ValueError, match="scale="):
        separation_margin([1, 2], operator=op, scale=2.0)
    with pytest.raises(ValueError, match="scale="):
        kernel([1, 2], operator=op, scale=2.0)
    with pytest.raises(ValueError, match="not both"):
        near_collisions(frequencies(8), 2, 100, operator=op)
    with pytest.raises(ValueError, match="base="):
        geometry_audit(operator=op, base=500.0)
    with pytest.raises(ValueError, match="pairing="):
        gate_a(lambda x, p: apply_rope(x, p, pairing="half"), operator=op, pairing="interleaved")


def test_gate_a_refuses_a_plain_keyword_that_contradicts_the_manifest():
    impl = lambda x, p: apply_rope(x, p, pairing="half", base=500_000.0)  # noqa: E731
    with pytest.raises(ValueError, match="pairing='interleaved' conflicts with the manifest"):
        gate_a(impl, manifest="llama-2-7b", pairing="interleaved")
    with pytest.raises(ValueError, match="base=10000.0 conflicts with the manifest"):
        gate_a(impl, manifest="llama-3.1-8b", base=10000.0)


# ---------------------------------------------------------------------------------- caching
def test_frequencies_are_computed_once_and_read_only():
    op = RotaryOperator(head_dim=16, scaling=Scaling("linear", factor=2.0))
    assert op.theta is op.theta and op.theta_at(4096) is op.theta  # the rule does not read the length
    with pytest.raises(ValueError):
        op.theta[0] = 3.0


def test_a_length_dependent_rule_is_cached_per_length():
    sc = Scaling("dynamic", factor=4.0, original_max_position_embeddings=1024)
    op = RotaryOperator(head_dim=16, scaling=sc)
    short, long = op.theta_at(512), op.theta_at(8192)
    assert op.theta_at(8192) is long and op.theta_at(8192.0) is long and not np.array_equal(short, long)
    m = RopeManifest(head_dim=16, scaling=sc, max_position_embeddings=1024)
    assert np.array_equal(m.theta_at(8192), long) and np.array_equal(m.theta_at(512), short)
    with pytest.raises(ValueError, match="seq_len"):
        op.theta_at(0)


def test_one_audit_computes_the_scaled_frequencies_once(monkeypatch):
    from ropegeo import operator

    calls = []
    real = operator.scaled_frequencies  # the rule table's dispatcher, as the operator calls it
    monkeypatch.setattr(operator, "scaled_frequencies", lambda *a, **k: calls.append(a) or real(*a, **k))
    m = load_model("llama-3.1-8b").with_()  # a fresh manifest: an empty cache
    a = geometry_audit(m, search_limit=5000)
    assert len(calls) == 1
    assert np.array_equal(a.theta, m.theta_at(a.target_length)) and len(calls) == 1


def test_the_manifest_holds_its_operator():
    m = load_model("qwen2.5-7b-instruct")
    op = m.operator
    assert op is m.operator and m == RopeManifest(op, **{k: getattr(m, k) for k in (
        "max_position_embeddings", "original_max_position_embeddings", "sliding_window", "layer_type", "logit_scale",
        "notes", "name", "source")})
    assert (op.head_dim, op.rotary_dim, op.pairing, op.base, op.scaling, op.phase_dtype) == \
        (m.head_dim, m.rotary_dim, m.pairing, m.base, m.scaling, m.phase_dtype)
    assert np.array_equal(m.theta_at(100_000), op.theta_at(100_000))
    assert m.attention_at(100_000) == op.attention_at(100_000)


# ---------------------------------------------------------------------------------- equal to the plain forms
@pytest.mark.parametrize("plain", PLAIN)
def test_apply_rope_with_an_operator_equals_the_plain_form(plain):
    x = np.random.default_rng(0).normal(size=(3, 5, plain["head_dim"]))
    pos = np.arange(5) * 37.5 + 3
    kw = {k: val for k, val in plain.items() if k != "head_dim"}
    op = op_of(plain)
    want = apply_rope(x, pos, **kw)
    assert np.array_equal(apply_rope(x, pos, operator=op), want)
    assert np.array_equal(op.apply(x, pos), want)
    assert np.array_equal(op.apply(x.astype(np.float32), pos), apply_rope(x.astype(np.float32), pos, **kw))


@pytest.mark.parametrize("plain", PLAIN[:4])
def test_matrix_and_relative_law_equal_the_plain_forms(plain):
    op = op_of(plain)
    kw = {k: val for k, val in plain.items() if k not in ("head_dim", "phase_dtype")}
    assert np.array_equal(op.matrix(17.25), rotation_matrix(17.25, plain["head_dim"], **kw))
    assert np.array_equal(rotation_matrix(17.25, operator=op), op.matrix(17.25))
    assert relative_law_error(operator=op) == relative_law_error(plain["head_dim"], **kw)


def test_the_matrix_is_the_block_rotation_written_out():
    op = RotaryOperator(head_dim=6, rotary_dim=4, pairing="half", base=100.0)
    p, th = 3.5, [1.0, 0.1]
    want = np.eye(6)
    for i, t in enumerate(th):  # pair i rotates coordinates i and i + 2 by p * theta_i
        c, s = math.cos(p * t), math.sin(p * t)
        want[i, i], want[i, i + 2], want[i + 2, i], want[i + 2, i + 2] = c, -s, s, c
    assert np.allclose(op.matrix(p), want, atol=1e-15)


def test_geometry_functions_take_the_operator():
    op = RotaryOperator(head_dim=16, base=500.0)
    th = frequencies(16, 500.0)
    assert np.array_equal(op.theta, th)
    assert np.array_equal(kernel([0, 1, 10, 333], operator=op), kernel([0, 1, 10, 333], th))
    assert adjacent_similarity(operator=op) == adjacent_similarity(th)
    assert near_collisions(start=100, stop=20_000, top=3, operator=op) == near_collisions(th, 100, 20_000, top=3)
    assert separation_margin(range(1, 60), operator=op) == separation_margin(range(1, 60), th)
    scaled = op.with_(scale=0.25)  # the position scale multiplies the offsets
    assert np.array_equal(kernel([3, 7], operator=scaled), kernel([3, 7], th, scale=0.25))
    assert separation_margin([1, 5, 9], operator=scaled) == separation_margin([1, 5, 9], th, scale=0.25)


def test_geometry_audit_of_an_operator_equals_the_plain_audit():
    op = RotaryOperator(head_dim=64, base=500_000.0, rotary_dim=32, pairing="half")
    plain = geometry_audit(head_dim=64, base=500_000.0, rotary_dim=32, pairing="half", train_length=2048, target_length=8192)
    assert geometry_audit(op, train_length=2048, target_length=8192).to_dict() == plain.to_dict()
    assert geometry_audit(operator=op, train_length=2048, target_length=8192).to_dict() == plain.to_dict()
    lin = op.with_(scaling=Scaling("linear", factor=4.0))  # theta / 4 and offsets * 0.25: exact (a power of two)
    assert geometry_audit(lin, train_length=2048, target_length=8192).to_dict() == \
        geometry_audit(head_dim=64, base=500_000.0, train_length=2048, target_length=8192, rotary_dim=32,
                       pairing="half", interpolate=True).to_dict()
    with pytest.raises(ValueError, match="interpolate=True conflicts"):
        geometry_audit(lin, train_length=2048, target_length=8192, interpolate=True)


def _plain(d):
    if isinstance(d, dict):
        return {k: _plain(x) for k, x in d.items() if k != "seconds"}
    return [_plain(x) for x in d] if isinstance(d, list) else d


def test_gate_a_with_an_operator_equals_the_plain_declaration():
    def impl(x, p):
        return apply_rope(x, p, pairing="half", base=500_000.0, rotary_dim=32)

    op = RotaryOperator(head_dim=64, pairing="half", base=500_000.0, rotary_dim=32, phase_dtype="float32")
    a = gate_a(impl, operator=op, max_position=8192)
    b = gate_a(impl, head_dim=64, pairing="half", base=500_000.0, rotary_dim=32, max_position=8192)
    assert a.passed and _plain(a.to_dict()) == _plain(b.to_dict())


# ---------------------------------------------------------------------------------- multi-axis RoPE
def test_mrope_with_equal_positions_on_every_axis_is_one_dimensional_rope():
    one = RotaryOperator(head_dim=16, base=1000.0)
    for interleaved in (False, True):
        multi = one.with_(sections=(4, 2, 2), round_robin=interleaved)
        x = np.random.default_rng(1).normal(size=(4, 16))
        p = np.arange(4) * 9.0
        # the same angles, but gathered per axis: cos and sin may run another loop of numpy's
        # kernels (within an ulp), so each output x_a cos - x_b sin agrees to a few ulps of |x|
        assert_ulps(multi.apply(x, np.stack([p, p, p])), one.apply(x, p), ulps=4, scale=np.abs(x).max())


@pytest.mark.parametrize("interleaved", [False, True])
def test_mrope_angles_follow_each_pairs_axis(interleaved):
    sections = (24, 20, 20)  # Qwen's split of 64 pairs among time, height and width
    op = RotaryOperator(head_dim=128, base=1e6, sections=sections, round_robin=interleaved)
    axis = op.axis_of_pair
    assert [int(np.count_nonzero(axis == a)) for a in range(3)] == list(sections)
    if interleaved:  # Qwen3-VL: round-robin while an axis has pairs left
        assert axis[:6].tolist() == [0, 1, 2, 0, 1, 2] and set(axis[60:].tolist()) == {0}
    else:  # Qwen2-VL: contiguous runs
        assert axis[23] == 0 and axis[24] == 1 and axis[44] == 2
    pos = np.array([[5.0, 6.0], [7.0, 100.0], [2.0, 3.0]])  # (axes, tokens)
    got = op.angles(pos)
    theta = op.theta
    for t in range(2):
        for j in range(64):
            assert got[t, j] == pos[axis[j], t] * theta[j]
    with pytest.raises(ValueError, match="leading axis of 3"):
        op.angles([1.0, 2.0])
    assert np.allclose(op.matrix([5.0, 7.0, 2.0]) @ np.ones(128), op.apply(np.ones(128), [5.0, 7.0, 2.0]))


# ---------------------------------------------------------------------------------- checked once
#: The most outermost validator calls one default geometry audit may make (issue 34), counted in
#: every module: the operator's and the manifest's fields, the audit's own arguments, and nothing else.
MAX_AUDIT_CHECKS = 20
#: The validators' default parameter names (they take the value first and an optional name).
_DEFAULT_NAMES = {"head_dim": "head_dim", "base": "base", "pairing": "pairing", "float_dtype": "dtype",
                  "frequencies": "theta", "pair_weights": "weights"}


class _Checks:
    """Outermost validator calls while ``run()`` runs: by input name and by the file that makes them.

    Every public function of ``ropegeo/_validate.py`` is wrapped (found by looking, not listed), and
    no file is left out: a check made inside Gate B counts like any other.
    """

    def __init__(self, run):
        self.by_name, self.by_file, depth = collections.Counter(), collections.Counter(), [0]

        def wrap(helper, fn):
            def counted(*args, **kwargs):
                if depth[0] == 0:
                    self.by_file[sys._getframe(1).f_code.co_filename.split("ropegeo/")[-1]] += 1
                    if "name" in kwargs:
                        label = kwargs["name"]
                    elif helper in _DEFAULT_NAMES:
                        label = args[1] if len(args) > 1 and isinstance(args[1], str) else _DEFAULT_NAMES[helper]
                    else:
                        label = args[0]
                    self.by_name[label] += 1
                depth[0] += 1
                try:
                    return fn(*args, **kwargs)
                finally:
                    depth[0] -= 1
            return counted

        saved = {name: fn for name, fn in vars(_validate).items()
                 if callable(fn) and not name.startswith("_") and getattr(fn, "__module__", "") == _validate.__name__
                 and name != "is_collection"}
        for helper, fn in saved.items():
            setattr(_validate, helper, wrap(helper, fn))
        try:
            run()
        finally:
            for helper, fn in saved.items():
                setattr(_validate, helper, fn)

    @property
    def outermost(self) -> int:
        return sum(self.by_file.values())


def _count_checks(run) -> collections.Counter:
    return _Checks(run).by_name


def test_one_geometry_audit_checks_each_operator_input_once():
    checks = _Checks(lambda: geometry_audit())
    assert checks.outermost <= MAX_AUDIT_CHECKS, checks.by_file
    for name in ("head_dim", "base", "pairing", "scale", "phase_dtype", "train_length", "target_length"):
        assert checks.by_name[name] == 1, (name, checks.by_name)
    assert checks.by_name["theta"] == 0  # built from checked fields, never checked again
    # below the gates, the operator's bank is trusted: Gate B, the margins and the precision make no check
    assert not any(f.startswith(("margins", "precision", "gates/b/", "frequencies")) for f in checks.by_file), \
        checks.by_file


def test_the_check_counter_sees_every_file():
    # controls: checks made in margins.py and gates/b/rule.py are counted, and a check repeated in a loop
    # is counted each time, so the audit's count above could exceed its bound
    th = frequencies(8)
    checks = _Checks(lambda: gate_b_decision([1, 2, 3], th))
    assert checks.by_file["margins.py"] >= 1 and checks.by_file["gates/b/rule.py"] >= 1, checks.by_file
    looped = _Checks(lambda: [difference_distance(float(k), th) for k in range(30)])
    assert looped.by_name["theta"] == 30 and looped.outermost > MAX_AUDIT_CHECKS


def test_one_gate_a_run_checks_each_input_once():
    def impl(x, p):
        return apply_rope(x, p)

    seen = _count_checks(lambda: gate_a(impl, head_dim=64))
    impl_checks = _count_checks(lambda: [impl(np.ones((3, 64)), np.arange(3))])  # one call of the implementation
    assert seen["head_dim"] >= 1 and impl_checks["x"] == 1
    own = {k: n for k, n in seen.items() if k not in impl_checks}
    assert own and max(own.values()) == 1, own


# ---------------------------------------------------------------------------------- examples
def test_the_examples_run():
    result = doctest.testmod(operator_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0


def test_the_package_exports_the_operator():
    assert ropegeo.RotaryOperator is RotaryOperator and "RotaryOperator" in ropegeo.__all__
