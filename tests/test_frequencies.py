import math

import numpy as np
import pytest

from ropegeo.frequencies import frequencies, slow_pairs, turns, wavelengths


def test_schedule_matches_definition_loop():
    d, b = 64, 500_000.0
    theta = frequencies(d, b)
    expected = [b ** (-(2 * i) / d) for i in range(d // 2)]
    np.testing.assert_allclose(theta, expected, rtol=1e-15)
    assert theta[0] == 1.0 and np.all(np.diff(theta) < 0)


def test_partial_rotary_uses_rotary_dim_in_exponent():
    theta = frequencies(64, 10_000.0, rotary_dim=16)
    assert theta.shape == (8,)
    np.testing.assert_allclose(theta, [10_000.0 ** (-i / 8) for i in range(8)])


def test_article_figures_head128():
    theta = frequencies(128, 10_000.0)
    lam = wavelengths(theta)
    # independent closed forms: fastest 2*pi, slowest 2*pi*B^(126/128)
    assert lam[0] == pytest.approx(2 * math.pi)
    assert lam[-1] == pytest.approx(2 * math.pi * 10_000 ** (126 / 128))
    assert round(lam[-1]) == 54_410  # "about 54,410 tokens"
    t = turns(theta, 4096)
    assert round(t[0]) == 652 and 4096 / (2 * math.pi) == pytest.approx(t[0])
    assert round(t[-1], 3) == 0.075
    # slow pairs: count i with 4096 * B^(-2i/d) < 2 pi by a plain loop
    loop = sum(1 for i in range(64) if 4096 * 10_000 ** (-2 * i / 128) < 2 * math.pi)
    assert loop == 18 and slow_pairs(theta, 4096) == 18


def test_article_figures_head8():
    lam = wavelengths(frequencies(8))
    np.testing.assert_allclose(lam, [6.28, 62.8, 628, 6283], rtol=1e-3)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(head_dim=7), "head_dim"),
        (dict(head_dim=0), "head_dim"),
        (dict(head_dim=2.5), "head_dim"),
        (dict(head_dim=8, base=1.0), "base"),
        (dict(head_dim=8, base=float("nan")), "base"),
        (dict(head_dim=8, base=float("inf")), "base"),
        (dict(head_dim=8, rotary_dim=3), "rotary_dim"),
        (dict(head_dim=8, rotary_dim=10), "rotary_dim"),
    ],
)
def test_bad_schedule_input_names_parameter(kwargs, word):
    with pytest.raises(ValueError, match=word):
        frequencies(**kwargs)


def test_bad_lengths():
    with pytest.raises(ValueError, match="length"):
        turns(frequencies(8), 0)
    with pytest.raises(ValueError, match="theta"):
        wavelengths([])
