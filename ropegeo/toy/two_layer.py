"""A two-layer check for NoPE and ALiBi: what depth adds to a causal mask.

With one layer and no content, NoPE cannot rank any earlier key above another and ALiBi can only
prefer the nearest. The first layer of a causal model averages over a growing prefix, so its
output can carry position with no scheme at all. The smallest model that shows it (numpy,
hand-written gradients, full-batch Adam): slot 0 holds a start token, every other slot the same
token (learned embeddings ``E``, 2 x d); layer 1 (optional) is one causal head, ``H1 = H0 +
softmax((H0 Wq1)(H0 Wk1)^T / sqrt(d) + bias) H0 Wv1``; layer 2, the probe, attends over strictly
earlier keys and is trained onto key ``i - offset``. ``bias`` is 0 (NoPE) or ``-slope * (i - j)``
(ALiBi). Layer 2 compares one position feature bilinearly, so it can prefer the nearest key or a
fixed slot, never "exactly five back" everywhere; deeper stacks, MLPs and content are not shown
{Haviv et al. 2022; Kazemnejad et al. 2023}.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ropegeo import _validate as v
from ropegeo.softmax import softmax
from ropegeo.toy.training import seed_list

__all__ = ["TwoLayerModel", "loss_and_grads", "train", "probe", "study"]

SCHEMES = ("nope", "alibi")
#: Largest width, sequence length and step count (each step is O(length**2 * d)).
MAX_TWO_LAYER_D = 32
MAX_TWO_LAYER_LENGTH = 1024
MAX_TWO_LAYER_STEPS = 5000
_NAMES = ("E", "Wq1", "Wk1", "Wv1", "Wq2", "Wk2")


@dataclass
class TwoLayerModel:
    """Parameters of the model: ``params`` maps ``E, Wq1, Wk1, Wv1, Wq2, Wk2`` to arrays."""

    params: dict
    scheme: str
    layers: int
    offset: int
    slope: float
    seed: int | None = None

    @property
    def d(self) -> int:
        return int(self.params["E"].shape[1])


def _bias(n: int, scheme: str, slope: float) -> np.ndarray:
    i = np.arange(n)
    dist = (i[:, None] - i[None, :]).astype(float)
    return -slope * dist if scheme == "alibi" else np.zeros((n, n))


def _forward(p: dict, n: int, scheme: str, layers: int, slope: float) -> dict:
    d = p["E"].shape[1]
    c = 1.0 / np.sqrt(d)
    tok = np.ones(n, dtype=int)
    tok[0] = 0
    b = _bias(n, scheme, slope)
    i = np.arange(n)
    f = {"tok": tok, "c": c, "H0": p["E"][tok]}
    if layers == 2:
        f["Q1"], f["K1"], f["V1"] = f["H0"] @ p["Wq1"], f["H0"] @ p["Wk1"], f["H0"] @ p["Wv1"]
        f["A1"] = softmax(c * f["Q1"] @ f["K1"].T + b, i[None, :] <= i[:, None])
        f["H1"] = f["H0"] + f["A1"] @ f["V1"]
    else:
        f["H1"] = f["H0"]
    f["Q2"], f["K2"] = f["H1"] @ p["Wq2"], f["H1"] @ p["Wk2"]
    f["S2"] = c * f["Q2"] @ f["K2"].T + b
    f["A2"] = np.zeros_like(f["S2"])  # the first position sees no earlier key: no weight
    f["A2"][1:] = softmax(f["S2"][1:], (i[None, :] < i[:, None])[1:])
    return f


def loss_and_grads(model: TwoLayerModel, length: int) -> tuple[float, dict]:
    """Mean cross-entropy at the targets and ``{name: gradient}`` (hand-derived; zero for layer 1 in a one-layer model)."""
    p, k = model.params, model.offset
    n = v.integer("length", length, minimum=k + 1, maximum=MAX_TWO_LAYER_LENGTH)
    f = _forward(p, n, model.scheme, model.layers, model.slope)
    c, rows = f["c"], np.arange(k, n)
    a2 = f["A2"][rows, rows - k]
    loss = float(-np.mean(np.log(np.maximum(a2, 1e-300))))
    dS2 = np.zeros((n, n))  # d loss / d scores of layer 2: (A - onehot) / count on the target rows
    dS2[rows] = f["A2"][rows]
    dS2[rows, rows - k] -= 1.0
    dS2 /= rows.size
    dQ2, dK2 = c * dS2 @ f["K2"], c * dS2.T @ f["Q2"]
    g = {name: np.zeros_like(p[name]) for name in _NAMES}
    g["Wq2"], g["Wk2"] = f["H1"].T @ dQ2, f["H1"].T @ dK2
    dH = dQ2 @ p["Wq2"].T + dK2 @ p["Wk2"].T
    if model.layers == 2:
        A1, V1 = f["A1"], f["V1"]
        dA1, dV1 = dH @ V1.T, A1.T @ dH
        dS1 = A1 * (dA1 - np.sum(dA1 * A1, axis=1, keepdims=True))  # softmax backward (masked entries are 0)
        dQ1, dK1 = c * dS1 @ f["K1"], c * dS1.T @ f["Q1"]
        H0 = f["H0"]
        g["Wv1"], g["Wq1"], g["Wk1"] = H0.T @ dV1, H0.T @ dQ1, H0.T @ dK1
        dH = dH + dV1 @ p["Wv1"].T + dQ1 @ p["Wq1"].T + dK1 @ p["Wk1"].T
    np.add.at(g["E"], f["tok"], dH)
    return loss, g


def _adam(model, length, steps, lr):
    p = model.params
    m = {k: np.zeros_like(x) for k, x in p.items()}
    s = {k: np.zeros_like(x) for k, x in p.items()}
    for t in range(1, steps + 1):
        _, g = loss_and_grads(model, length)
        for name in p:
            m[name] = 0.9 * m[name] + 0.1 * g[name]
            s[name] = 0.999 * s[name] + 0.001 * g[name] ** 2
            p[name] -= lr * (m[name] / (1 - 0.9**t)) / (np.sqrt(s[name] / (1 - 0.999**t)) + 1e-8)


def train(scheme: str = "nope", layers: int = 2, offset: int = 1, *, head_dim: int = 8, length: int = 64,
          slope: float = 0.5, steps: int = 600, lr: float = 0.05, seed: int = 0) -> TwoLayerModel:
    """Train the model on one sequence of ``length`` slots (full batch).

    ``scheme`` is ``"nope"`` or ``"alibi"``, ``layers`` 1 or 2; ``head_dim`` 2 to 32, ``length`` up to
    1,024, ``steps`` 1 to 5,000, ``lr`` at most 1; initial parameters normal with standard deviation
    0.5. Raises ValueError for a parameter out of range.

    Examples
    --------
    >>> model = train("nope", layers=2, offset=1, steps=200)
    >>> probe(model, 64)["accuracy"] > 0.9
    True
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    layers = v.integer("layers", layers, minimum=1, maximum=2)
    length = v.integer("length", length, minimum=3, maximum=MAX_TWO_LAYER_LENGTH)
    offset = v.integer("offset", offset, minimum=1, maximum=length - 1)
    head_dim = v.integer("head_dim", head_dim, minimum=2, maximum=MAX_TWO_LAYER_D)
    slope = v.real("slope", slope, greater_than=0.0, maximum=100.0)
    steps = v.integer("steps", steps, minimum=1, maximum=MAX_TWO_LAYER_STEPS)
    lr = v.real("lr", lr, greater_than=0.0, maximum=1.0)
    seed = v.integer("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    params = {"E": rng.normal(0, 0.5, (2, head_dim))}
    for name in _NAMES[1:]:
        params[name] = rng.normal(0, 0.5, (head_dim, head_dim))
    model = TwoLayerModel(params, scheme, layers, offset, slope, seed)
    with np.errstate(over="ignore", invalid="ignore"):
        _adam(model, length, steps, lr)
    return model


def probe(model: TwoLayerModel, length: int) -> dict:
    """The probe's winner accuracy (a tie is not a win) and mean attention on the target at ``length``."""
    n = v.integer("length", length, minimum=model.offset + 1, maximum=MAX_TWO_LAYER_LENGTH)
    f = _forward(model.params, n, model.scheme, model.layers, model.slope)
    k, rows = model.offset, np.arange(model.offset, n)
    s = f["S2"][rows]
    target = s[np.arange(rows.size), rows - k]
    others = np.where((np.arange(n)[None, :] < rows[:, None]) & (np.arange(n)[None, :] != (rows - k)[:, None]),
                      s, -np.inf)
    wins = target > others.max(axis=1)
    return {"accuracy": float(wins.mean()), "mass": float(f["A2"][rows, rows - k].mean())}


def study(seeds=range(10), offsets=(1, 5), *, length: int = 64, steps: int = 600, slope: float = 0.5) -> dict:
    """Accuracy and mass per seed of NoPE and ALiBi, one and two layers, per offset: ``(scheme, layers, offset) -> {name: array}``."""
    seeds = seed_list(seeds)
    out = {}
    for scheme in SCHEMES:
        for layers in (1, 2):
            for k in offsets:
                runs = [probe(train(scheme, layers, k, length=length, steps=steps, slope=slope, seed=s), length)
                        for s in seeds]
                out[(scheme, layers, k)] = {m: np.array([r[m] for r in runs]) for m in ("accuracy", "mass")}
    return out
