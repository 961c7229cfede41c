import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ropegeo.frequencies import frequencies
from ropegeo.geometry import adjacent_similarity, kernel, near_collisions


def _loop_kernel(delta, theta, scale=1.0):
    return sum(math.cos(delta * scale * t) for t in theta) / len(theta)


def test_kernel_against_python_loop():
    theta = frequencies(32, 10_000.0)
    offs = [0, 1, 2, 17, 1000, 123_456, -5, 2.5]
    np.testing.assert_allclose(kernel(offs, theta), [_loop_kernel(o, theta) for o in offs], atol=1e-13)
    np.testing.assert_allclose(kernel(offs, theta, scale=0.125), [_loop_kernel(o, theta, 0.125) for o in offs], atol=1e-13)


def test_weighted_kernel():
    theta = frequencies(8)
    w = [3, 1, 0, 0]
    expected = (3 * math.cos(5 * theta[0]) + math.cos(5 * theta[1])) / 4
    assert kernel(5, theta, weights=w) == pytest.approx(expected)


def test_article_near_return_head8():
    theta = frequencies(8, 10_000.0)
    assert round(float(kernel(6283, theta)), 3) == 0.996
    hit = near_collisions(theta, 4096, 7000, top=1)[0]
    assert hit.offset == 6283


def test_adjacent_similarity_shrinks_under_interpolation():
    theta = frequencies(128)
    assert adjacent_similarity(theta) == pytest.approx(_loop_kernel(1, theta))
    assert adjacent_similarity(theta, scale=0.125) > adjacent_similarity(theta)


@given(
    st.sampled_from([4, 8, 16, 128]),
    st.integers(0, 50_000),
    st.integers(0, 9000),
    st.sampled_from([1.0, 0.125, 0.37]),
    st.integers(1, 6),
)
def test_near_collisions_equal_brute_force(d, start, width, scale, top):
    theta = frequencies(d)
    stop = start + width
    got = near_collisions(theta, start, stop, top=top, scale=scale)
    offs = np.arange(start, stop + 1)
    sims = np.array([_loop_kernel(o, theta, scale) for o in offs]) if width < 300 else np.cos(
        np.outer(offs * scale, theta)
    ).mean(1)
    order = np.lexsort((offs, -sims))[: min(top, offs.size)]
    assert len(got) == order.size
    for hit, i in zip(got, order):
        assert hit.similarity == pytest.approx(sims[i], abs=1e-10)
    # the offsets agree except where two similarities tie within rounding
    np.testing.assert_allclose([h.similarity for h in got], sims[order], atol=1e-10)
    assert all(abs(sims[h.offset - start] - h.similarity) < 1e-10 for h in got)


def test_near_collisions_across_many_blocks_and_batches():
    theta = frequencies(64)
    got = near_collisions(theta, 3, 2_000_003, top=4)
    offs = np.arange(3, 2_000_004, dtype=np.float64)
    best = np.full(4, -2.0)
    # chunked brute force, independent of the block/phase-seed algorithm
    allk, allo = [], []
    for s in range(0, offs.size, 200_000):
        k = np.cos(np.outer(offs[s : s + 200_000], theta)).mean(1)
        i = np.argsort(-k)[:4]
        allk.append(k[i]); allo.append(offs[s : s + 200_000][i])
    allk, allo = np.concatenate(allk), np.concatenate(allo)
    i = np.argsort(-allk)[:4]
    best = allk[i]
    np.testing.assert_allclose([h.similarity for h in got], best, atol=1e-9)
    assert [h.offset for h in got] == [int(o) for o in allo[i]]


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(start=10, stop=5), "empty"),
        (dict(start=-1, stop=5), "start"),
        (dict(start=1, stop=5, top=0), "top"),
        (dict(start=1.5, stop=5), "start"),
    ],
)
def test_bad_search(kwargs, word):
    with pytest.raises(ValueError, match=word):
        near_collisions(frequencies(8), **kwargs)


def test_bad_kernel_inputs():
    with pytest.raises(ValueError, match="weights"):
        kernel(1, frequencies(8), weights=[1, 2])
    with pytest.raises(ValueError, match="weights"):
        kernel(1, frequencies(8), weights=[0, 0, 0, 0])
    with pytest.raises(ValueError, match="offsets"):
        kernel([np.nan], frequencies(8))


def test_near_collision_search_is_bounded():
    from ropegeo.geometry import MAX_SEARCH_CELLS, near_collisions

    th = frequencies(128)
    with pytest.raises(ValueError, match="too long to search"):
        near_collisions(th, 0, MAX_SEARCH_CELLS // th.size + 10)
    with pytest.raises(ValueError, match="start must be at most"):
        near_collisions(frequencies(8), 2**63 - 5, 2**63 + 5)
    with pytest.raises(ValueError, match="stop must be at most"):
        near_collisions(frequencies(8), 0, 2**63 + 5)
    with pytest.raises(ValueError, match="progress must be True or False"):
        near_collisions(th, 0, 100, progress="yes")


def test_automatic_progress_bar_needs_no_tqdm(monkeypatch):
    """A long search on the slim install (no tqdm) runs without a bar; progress=True says what is missing."""
    import sys

    from ropegeo import geometry as G

    monkeypatch.setattr(G, "_PROGRESS_WORK", 10)  # every search counts as long
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    real_find_spec = G.importlib.util.find_spec
    monkeypatch.setattr(G.importlib.util, "find_spec", lambda name, *a: None if name == "tqdm" else real_find_spec(name, *a))
    th = frequencies(16)
    found = near_collisions(th, 100, 10_000, top=2)
    assert [c.offset for c in found] == [c.offset for c in near_collisions(th, 100, 10_000, top=2, progress=False)]
    with pytest.raises(ValueError, match="progress=True needs tqdm"):
        near_collisions(th, 100, 10_000, top=2, progress=True)
