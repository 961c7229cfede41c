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


# ---- character coherence: closed form against the sum over positions ----------------------------
@pytest.mark.parametrize("d, base, window", [(8, 10_000.0, 100), (64, 10_000.0, 4096), (32, 500.0, 37)])
def test_character_coherence_matches_the_sum(d, base, window):
    from ropegeo.frequencies import character_coherence, frequencies

    th = frequencies(d, base)
    t = np.arange(window)
    brute = np.array([[abs(np.exp(1j * t * (b - a)).sum()) / window for b in th] for a in th])
    np.testing.assert_allclose(character_coherence(th, window), brute, atol=1e-11)


def test_character_coherence_is_zero_on_a_dft_grid():
    from ropegeo.frequencies import character_coherence

    window = 64
    grid = 2 * np.pi * np.arange(1, 9) / window  # whole turns over the window
    c = character_coherence(grid, window)
    np.testing.assert_allclose(c, np.eye(8), atol=1e-12)
    # a frequency and the same frequency plus a whole turn per position are the same character
    np.testing.assert_allclose(character_coherence([0.3, 0.3 + 2 * np.pi], 10), np.ones((2, 2)), atol=1e-12)


@pytest.mark.parametrize("theta, window, name", [
    ([0.1, 0.2], 0, "window"), ([0.1, 0.2], 2.5, "window"), ([], 10, "theta"), ([0.1, -1.0], 10, "theta"),
    ([0.1, np.nan], 10, "theta"), (np.ones(5000), 10, "theta"),
])
def test_character_coherence_rejects_bad_input(theta, window, name):
    from ropegeo.frequencies import character_coherence

    with pytest.raises(ValueError, match=name):
        character_coherence(theta, window)


def test_character_coherence_of_nearly_equal_frequencies_over_a_long_window():
    from ropegeo.frequencies import character_coherence

    # d = 1e-13 over 1e14 positions: |sin(n d / 2) / sin(d / 2)| / n = |sin 5| / 5
    assert character_coherence([0.0, 1e-13], 10**14)[0, 1] == pytest.approx(abs(np.sin(5.0)) / 5, rel=1e-6)


# ---------------------------------------------------------------------------------- the module, not a function
def shadowed_submodules(package) -> list[str]:
    """Submodules of ``package`` whose name its face (``__init__.py``) binds to something else."""
    import pkgutil
    import types

    return [f"{package.__name__}.{info.name}" for info in pkgutil.iter_modules(package.__path__)
            if not isinstance(getattr(package, info.name, types), types.ModuleType)]


def test_import_ropegeo_frequencies_gives_the_module():
    import types

    import ropegeo
    import ropegeo.frequencies as fr

    assert isinstance(fr, types.ModuleType) and fr.frequencies(8).size == 4
    assert shadowed_submodules(ropegeo) == []


def test_the_shadow_finder_finds_one(monkeypatch):
    import ropegeo

    monkeypatch.setattr(ropegeo, "frequencies", lambda: None)  # the old face: a function over the module
    assert shadowed_submodules(ropegeo) == ["ropegeo.frequencies"]
