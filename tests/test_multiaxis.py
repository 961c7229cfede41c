"""ropegeo.multiaxis and ropegeo.toy.axial_heads against independent derivations: transformers' M-RoPE
gather re-enacted in numpy, brute-force rotation of vectors, finite differences."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ropegeo.toy.axial_heads import (AxialHead, axial_head_loss, axial_scores, budget_study, evaluate_axial, split_study,
                                 train_axial_head)
from ropegeo.frequencies import frequencies
from ropegeo.multiaxis import axial_bank, axis_frequencies, axis_report, band_support, kernel_grid, mixed_bank, mrope_assignment, mrope_bank, multi_kernel, nope_temperature, proportional_frequencies
from ropegeo.gates.b.axes import axis_gate_b
from ulps import assert_ulps


def _hf_blocked_streams(sections, head_dim):
    """Which stream each coordinate of cos takes in apply_multimodal_rotary_pos_emb: split the doubled
    section list along the last axis and take stream i % 3 for chunk i (re-enacted on labels)."""
    cos = np.stack([np.full(head_dim, s) for s in range(3)])  # stream s holds the label s everywhere
    chunks, start = [], 0
    for i, n in enumerate(list(sections) * 2):
        chunks.append(cos[i % 3, start:start + n])
        start += n
    return np.concatenate(chunks)


def _hf_interleaved_streams(sections, pairs):
    """apply_interleaved_mrope on labels: start from stream 0, overwrite slice(offset, 3 * section, 3)."""
    freqs = np.stack([np.full(pairs, s) for s in range(3)])
    out = freqs[0].copy()
    for dim, offset in enumerate((1, 2), start=1):
        idx = slice(offset, sections[dim] * 3, 3)
        out[idx] = freqs[dim, idx]
    return out


@pytest.mark.parametrize("sections", [(16, 24, 24), (8, 12, 12), (2, 1, 1), (24, 20, 20)])
def test_blocked_assignment_matches_transformers_gather(sections):
    pairs = sum(sections)
    streams = _hf_blocked_streams(sections, 2 * pairs)
    assert np.array_equal(streams[:pairs], streams[pairs:])  # both halves of the head agree (rotate_half layout)
    assert np.array_equal(mrope_assignment(sections), streams[:pairs])


@pytest.mark.parametrize("sections", [(24, 20, 20), (11, 11, 10), (2, 1, 1), (4, 2, 2)])
def test_interleaved_assignment_matches_transformers(sections):
    assert np.array_equal(mrope_assignment(sections, round_robin=True), _hf_interleaved_streams(sections, sum(sections)))


def test_text_tokens_reduce_to_1d_rope():
    F = mrope_bank(128, 1e6, (16, 24, 24))
    p = 37.0
    assert np.allclose(np.array([p, p, p]) @ F.T, p * frequencies(128, 1e6), rtol=1e-15)


def _rotate(vec, angles):
    """Rotate interleaved pairs of vec by angles, one 2x2 matrix at a time."""
    out = np.empty_like(vec)
    for i, a in enumerate(angles):
        c, s = math.cos(a), math.sin(a)
        out[2 * i] = c * vec[2 * i] - s * vec[2 * i + 1]
        out[2 * i + 1] = s * vec[2 * i] + c * vec[2 * i + 1]
    return out


@settings(max_examples=20, deadline=None)
@given(st.integers(-9, 9), st.integers(-9, 9), st.floats(0, 6.3))
def test_multi_kernel_is_the_mean_dot_product_of_rotated_unit_pairs(dx, dy, angle):
    F = mixed_bank(8, 10.0, angle)
    ones = np.tile([1.0, 0.0], 4)
    brute = np.dot(_rotate(ones, F @ [0.0, 0.0]), _rotate(ones, F @ [dx, dy])) / 4
    assert multi_kernel([[dx, dy]], F)[0] == pytest.approx(brute, abs=1e-12)


def test_kernel_grid_orientation_and_axial_floor():
    F = axis_frequencies([1.0, 0.3], [0, 1], 2)
    K = kernel_grid(F, 3)
    assert K[3, 3] == 1.0
    assert K[3, 4] == pytest.approx((math.cos(1.0) + 1) / 2)  # row dy = 0, column dx = 1
    assert K[4, 3] == pytest.approx((math.cos(0.3) + 1) / 2)
    assert (kernel_grid(axial_bank(16), 20)[20] >= 0).all()  # half the pairs stand still along x


def test_axial_and_mixed_follow_heo_et_al():
    dim = 16
    mag = 100.0 ** (-np.arange(0, dim, 4)[: dim // 4] / dim)
    F = axial_bank(dim, 100.0)
    assert np.allclose(F[:4, 0], mag) and np.allclose(F[4:, 1], mag) and not F[:4, 1].any() and not F[4:, 0].any()
    M = mixed_bank(dim, 10.0, 0.7)
    mag10 = 10.0 ** (-np.arange(0, dim, 4)[: dim // 4] / dim)
    fx = np.concatenate([mag10 * math.cos(0.7), mag10 * math.cos(math.pi / 2 + 0.7)])
    fy = np.concatenate([mag10 * math.sin(0.7), mag10 * math.sin(math.pi / 2 + 0.7)])
    assert np.allclose(M[:, 0], fx) and np.allclose(M[:, 1], fy)


def test_proportional_is_transformers_rule():
    for d, p in ((128, 0.25), (256, 0.5), (64, 1.0), (64, 0.0)):
        rope_angles = int(p * d // 2)
        want = np.zeros(d // 2)
        want[:rope_angles] = 1e6 ** (-np.arange(0, 2 * rope_angles, 2) / d)
        assert_ulps(proportional_frequencies(d, 1e6, p), want, ulps=2)  # two calls of pow: within an ulp each


def test_axis_report_and_gate_b():
    F = mrope_bank(128, 1e6, (16, 24, 24))
    r = axis_report(F, 0, 64)
    assert r.pairs == 16 and r.fastest == 1.0 and list(np.flatnonzero(F[:, 0])) == list(range(16))
    band = frequencies(128, 1e6)[:16]
    k = [np.mean(np.cos(d * band)) for d in range(66)]
    assert r.near_return == next(d for d in range(2, 65) if k[d] >= k[d - 1] and k[d] >= k[d + 1])
    text = np.abs(F.sum(axis=1))  # calibrated on a text step: only the axis with most of it can pass
    assert axis_gate_b(F, 2, 32, reference=text).status == "fail" and axis_gate_b(F, 0, 32).status == "pass"
    empty = np.zeros((4, 2))
    empty[:, 0] = 1.0
    assert axis_report(empty, 1, 8).pairs == 0


def test_band_support_and_temperature():
    th = frequencies(128, 1e6)[:16]
    first = next(m for m in range(1, 1000) if np.cos(m * th).sum() < 0)
    assert band_support(th, 1000) == first
    assert band_support(th, first - 1) is None
    assert band_support(th, 1000, constant=48.0) is None
    assert nope_temperature([8191])[0] == pytest.approx(1 + 0.1 * math.log(2))


@pytest.mark.parametrize("call, name", [
    (lambda: mrope_assignment((16, 24, 24), round_robin=True), "sections"),
    (lambda: mrope_assignment("16,24,24"), "sections"),
    (lambda: mrope_bank(128, 1e6, (16, 24, 20)), "sections"),
    (lambda: axial_bank(6), "head_dim"),
    (lambda: proportional_frequencies(8, 100.0, 1.5), "fraction"),
    (lambda: multi_kernel([[1, 2, 3]], axial_bank(8)), "offsets"),
    (lambda: axis_report(axial_bank(8), 2, 8), "axis"),
    (lambda: axis_report(axial_bank(8), 0, 1), "extent"),
    (lambda: nope_temperature([-1]), "positions"),
    (lambda: train_axial_head(axial_bank(8), target=(0, 0)), "target"),
    (lambda: train_axial_head(axial_bank(8), grid=(8, 99)), "grid"),
    (lambda: train_axial_head(np.ones((4, 3))), "freqs"),
    (lambda: split_study({}), "splits"),
    (lambda: budget_study(axial_bank(8), []), "budgets"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ---- the grid head ------------------------------------------------------------------------------------------


def test_grid_scores_equal_rotated_query_key_dot_products():
    F = mixed_bank(8, 10.0, 0.3)
    rng = np.random.default_rng(1)
    head = AxialHead(rng.normal(size=8), rng.normal(size=8), F, (1, 2), (3, 4), 0, np.zeros(1))
    S = axial_scores(head)
    for qn in range(12):
        for kn in range(12):
            pq = np.array([qn % 3, qn // 3], float)
            pk = np.array([kn % 3, kn // 3], float)
            brute = np.dot(_rotate(head.q, F @ pq), _rotate(head.k, F @ pk))
            assert S[qn, kn] == pytest.approx(brute, abs=1e-12)


def test_grid_loss_gradient_by_finite_differences():
    F = axial_bank(8, 100.0)
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(2, 8))
    loss, dq, dk = axial_head_loss(q, k, F, target=(1, -2), grid=(4, 5))
    eps = 1e-6
    for vec, grad in ((q, dq), (k, dk)):
        for i in range(8):
            up, down = vec.copy(), vec.copy()
            up[i] += eps
            down[i] -= eps
            args = (up, k) if vec is q else (q, up)
            argd = (down, k) if vec is q else (q, down)
            num = (axial_head_loss(*args, F, target=(1, -2), grid=(4, 5))[0]
                   - axial_head_loss(*argd, F, target=(1, -2), grid=(4, 5))[0]) / (2 * eps)
            assert grad[i] == pytest.approx(num, abs=1e-6)


def test_grid_loss_by_brute_softmax():
    F = axial_bank(8, 100.0)
    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(2, 8))
    head = AxialHead(q, k, F, (2, 1), (4, 4), 0, np.zeros(1))
    S = axial_scores(head)
    losses = []
    for qn in range(16):
        x, y = qn % 4 + 2, qn // 4 + 1
        if x >= 4 or y >= 4:
            continue
        row = np.delete(S[qn], qn)
        target = y * 4 + x
        losses.append(-(S[qn, target] - np.log(np.exp(row).sum())))
    assert axial_head_loss(q, k, F, target=(2, 1), grid=(4, 4))[0] == pytest.approx(np.mean(losses), rel=1e-12)


def test_evaluation_masses_add_up_and_training_is_deterministic():
    F = axial_bank(8, 100.0)
    a, b = train_axial_head(F, steps=40, seed=5), train_axial_head(F, steps=40, seed=5)
    assert np.array_equal(a.q, b.q)
    e = evaluate_axial(a)
    assert e.target_mass + e.same_x_mass + e.same_y_mass + e.other_mass == pytest.approx(1.0)
    curve = budget_study(F, [20, 40], seeds=[5])
    assert curve["target_mass"][1, 0] == pytest.approx(e.target_mass, rel=1e-12)
