"""Chapter 1's self-similarity figure: a Figure built without pyplot, drawing the brute-force
dot products and the closed form, and refusing bad input by name."""

import math

import numpy as np
import pytest
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from ropegeo.book.plots.attention import self_similarity_figure


def test_self_similarity_lines_are_the_closed_form():
    before = plt.get_fignums()
    fig = self_similarity_figure(d_model=8, max_offset=30, starts=(0, 7.5))
    assert isinstance(fig, Figure) and plt.get_fignums() == before
    (ax,) = fig.axes
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
    assert len(lines) == 3  # two starts and the closed form
    for ln in lines:
        k = np.asarray(ln.get_xdata())
        want = [sum(math.cos(10_000 ** (-2 * i / 8) * x) for i in range(4)) for x in k]
        np.testing.assert_allclose(ln.get_ydata(), want, atol=1e-10)
        assert k.min() == -30 and k.max() == 30
    plt.close("all")


@pytest.mark.parametrize("kwargs, name", [
    ({"d_model": 7}, "d_model"), ({"max_offset": 0}, "max_offset"), ({"max_offset": 10**6}, "max_offset"),
    ({"starts": []}, "starts"), ({"starts": [0] * 9}, "starts"), ({"starts": [np.nan]}, "starts"),
    ({"base": 1.0}, "base"),
])
def test_self_similarity_validates(kwargs, name):
    with pytest.raises(ValueError, match=name):
        self_similarity_figure(**kwargs)
