"""The shared validation helpers at the extremes: huge numbers, ragged arrays, truthy stand-ins."""

import numpy as np
import pytest


# ---- extremes: never an OverflowError or a numpy message, always the parameter's name ----------
def test_huge_integers_are_refused_by_name():
    from ropegeo import _validate as v

    with pytest.raises(ValueError, match="base must be finite"):
        v.real("base", 10**400)
    with pytest.raises(ValueError, match="positions must be finite"):
        v.finite_array("positions", [1, 10**400])
    with pytest.raises(ValueError, match="target_length must be at most"):
        v.length("target_length", 10**400)
    with pytest.raises(ValueError, match="head_dim must be at most"):
        v.head_dim(10**12)


def test_ragged_arrays_name_the_parameter():
    from ropegeo import _validate as v

    with pytest.raises(ValueError, match="offsets must be a rectangular array"):
        v.finite_array("offsets", [[1, 2], [3]])


def test_boolean_refuses_truthy_stand_ins():
    from ropegeo import _validate as v

    assert v.boolean("progress", True) is True and v.boolean("progress", np.bool_(False)) is False
    for bad in ("yes", "no", 1, 0, None):
        with pytest.raises(ValueError, match="progress must be True or False"):
            v.boolean("progress", bad)


def test_pair_weights_survive_huge_values():
    from ropegeo import _validate as v

    np.testing.assert_allclose(v.pair_weights([1e308] * 4, 4), [0.25] * 4)
    from ropegeo.geometry import kernel

    assert kernel(1, [0.1, 0.2, 0.3, 0.4], weights=[1e308] * 4) == pytest.approx(kernel(1, [0.1, 0.2, 0.3, 0.4]))
