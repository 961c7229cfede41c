"""Figures of chapters 1, 4 and 5 refuse bad input with a ValueError naming the parameter."""

import numpy as np
import pytest

from ropegeo.frequencies import frequencies
from ropegeo.book.plots.attention import permutation_figure, shift_map_figure
from ropegeo.book.plots.extension import model_ladders, stretch_profile
from ropegeo.book.plots.implementation import position_id_grid
from ropegeo.book.plots.spectrum import phase_error_plot, torus_plot

S = np.eye(3)
TH = frequencies(8)


@pytest.mark.parametrize("call, name", [
    (lambda: permutation_figure(S, S, [2, 0, 1], tokens=5), "tokens"),
    (lambda: permutation_figure(S, S, [2, 0, 1], tokens="abc"), "tokens"),
    (lambda: shift_map_figure(np.eye(4), None), "shift"),
    (lambda: shift_map_figure(np.eye(4), 3, zoom="a"), "zoom"),
    (lambda: shift_map_figure(np.full((4, 4), np.nan), 3), "matrix"),
    (lambda: position_id_grid(documents=5), "documents"),
    (lambda: model_ladders({"a": 5}), "RopeManifest"),
    (lambda: stretch_profile([1.0], {"a": TH}), "base_theta"),
    (lambda: phase_error_plot(TH, 100, dtypes="float16"), "dtypes"),
    (lambda: torus_plot([[1.0]]), "theta"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_valid_calls_still_draw():
    assert shift_map_figure(np.eye(4), 3, zoom=2).axes
    assert position_id_grid(documents=[4, 3]).axes
    assert stretch_profile(TH, {"a": TH / 2}).axes
