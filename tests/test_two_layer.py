"""ropegeo.toy.two_layer: hand-derived gradients against finite differences, and the model's limits."""

import numpy as np
import pytest

from ropegeo.toy import two_layer as tl


@pytest.mark.parametrize("scheme", tl.SCHEMES)
@pytest.mark.parametrize("layers", (1, 2))
def test_gradients_match_finite_differences(scheme, layers):
    model = tl.train(scheme, layers, 3, head_dim=4, length=10, steps=5, seed=2)  # away from the initial point
    loss, grads = tl.loss_and_grads(model, 10)
    for name, p in model.params.items():
        num = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            old = p[idx]
            p[idx] = old + 1e-6
            up, _ = tl.loss_and_grads(model, 10)
            p[idx] = old - 1e-6
            down, _ = tl.loss_and_grads(model, 10)
            p[idx] = old
            num[idx] = (up - down) / 2e-6
        np.testing.assert_allclose(grads[name], num, atol=1e-7, err_msg=name)
    if layers == 1:
        assert all(np.all(grads[n] == 0) for n in ("Wq1", "Wk1", "Wv1"))


def test_one_layer_nope_cannot_rank_identical_keys():
    # every token key gets the same score: only queries with a single candidate can win
    m = tl.train("nope", 1, 1, steps=50, seed=0)
    assert tl.probe(m, 64)["accuracy"] <= 2 / 63 + 1e-12


def test_bad_arguments():
    with pytest.raises(ValueError, match="scheme"):
        tl.train("rope")
    with pytest.raises(ValueError, match="layers"):
        tl.train("nope", layers=3)
    with pytest.raises(ValueError, match="offset"):
        tl.train("nope", offset=64, length=64)
    with pytest.raises(ValueError, match="steps"):
        tl.train("nope", steps=10**6)
