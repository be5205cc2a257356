"""The weighted-sum view of the memory cell, RAN eq 8, and the plots that show them."""
import math
import sys

import numpy as np
import pytest

if "dynet" not in sys.modules:          # tests/conftest.py normally configures DyNet first
    import dynet_config
    dynet_config.set(random_seed=42, mem=512, autobatch=0)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from autograder.reference import cells as ref  # noqa: E402
from autograder.reference import weights as W  # noqa: E402
from course import plots  # noqa: E402
from tests import numpy_cells  # noqa: E402
from tests.test_cells import random_params, to_dynet  # noqa: E402

D_IN, D_H, T = 3, 4, 7
MEMORY_CELLS = ["lstm-noforget", "lstm", "lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden",
                "ran-identity", "ran-tanh"]
WORDS = "the keys to the old cabinet are".split()


def traced(name, seed):
    """Run a reference cell over a random sentence from a non-zero state; trace + inputs."""
    cell = ref.CELLS[name]
    rng = np.random.default_rng(seed)
    params = random_params(cell, rng, D_IN, D_H)
    inputs = rng.normal(size=(T, D_IN)).astype(np.float32).astype(np.float64)
    state0 = tuple(rng.uniform(-0.8, 0.8, size=D_H).astype(np.float32).astype(np.float64)
                   for _ in range(cell.n_state))
    _, handles = to_dynet(params)
    return W.run_and_record(cell, handles, inputs, state0), params, inputs, state0


def brute_force_weights(i, f):
    """w[t][j][m] = i_j(m) * prod_{k=j+1..t} f_k(m), straight from the definition."""
    steps, dims = i.shape
    w = np.zeros((steps, steps, dims))
    w0 = np.zeros((steps, dims))
    for t in range(steps):
        for m in range(dims):
            w0[t, m] = math.prod(f[k, m] for k in range(0, t + 1))
            for j in range(t + 1):
                w[t, j, m] = i[j, m] * math.prod(f[k, m] for k in range(j + 1, t + 1))
    return w, w0


def brute_force_most_influential(w, score):
    result = []
    for t in range(w.shape[0]):
        best, best_score = -1, -np.inf
        for j in range(t):
            s = max(w[t, j]) if score == "max" else math.sqrt(sum(v * v for v in w[t, j]))
            if s > best_score:
                best, best_score = j, s
        result.append(best)
    return result


# ------------------------------------------------------------------ the weights
def test_every_cell_with_a_memory_cell_is_covered():
    assert {name for name, cell in ref.CELLS.items() if cell.n_state == 2} == set(MEMORY_CELLS)


@pytest.mark.parametrize("name", MEMORY_CELLS)
def test_weighted_sum_reproduces_the_memory_cell(name):
    trace, params, inputs, state0 = traced(name, seed=10 + MEMORY_CELLS.index(name))
    # the recorded run is the cell's real computation (independent NumPy reference)
    expected = numpy_cells.run(name, params, inputs[:, None, :], [s[None, :] for s in state0])
    assert np.abs(trace["c"] - np.array([s[1][0] for s, _ in expected])).max() <= 1e-5
    for gate in ("i", "f", "content"):
        if gate in trace:
            assert np.abs(trace[gate] - np.array([p[gate][0] for _, p in expected])).max() <= 1e-5
    assert W.check_weighted_sum(trace, atol=1e-5) <= 1e-5
    # the initial state matters here (non-zero c_0), and the weights are in [0, 1]
    parts = W.trace_weights(trace)
    assert np.abs(parts["w0"] * parts["memory0"]).max() > 1e-3
    assert parts["w"].min() >= 0.0 and parts["w"].max() <= 1.0


@pytest.mark.parametrize("name", ["lstm", "ran-tanh"])
def test_check_weighted_sum_catches_wrong_weights(name):
    trace, *_ = traced(name, seed=40)
    broken = dict(trace, f=np.roll(trace["f"], 1, axis=0))       # forget gates off by one step
    with pytest.raises(AssertionError, match="weighted sum differs"):
        W.check_weighted_sum(broken)


def test_no_forget_gate_means_weights_are_the_input_gates():
    trace, *_ = traced("lstm-noforget", seed=41)
    parts = W.trace_weights(trace)
    for t in range(T):
        assert np.allclose(parts["w"][t, : t + 1], trace["i"][: t + 1])
    assert np.all(parts["w0"] == 1.0)


def test_gru_weights_form_a_weighted_average():
    trace, *_ = traced("gru", seed=50)
    parts = W.trace_weights(trace)
    totals = parts["w"].sum(axis=1) + parts["w0"]
    assert np.abs(totals - 1.0).max() <= 1e-12
    assert W.check_weighted_sum(trace, atol=1e-5) <= 1e-5
    assert np.abs(parts["w0"] * parts["memory0"]).max() > 1e-3


def test_cells_without_memory_have_no_weighted_sum():
    for name in ("srnn", "lstm-gates"):
        trace, *_ = traced(name, seed=60)
        with pytest.raises(ValueError, match="no additive memory"):
            W.trace_weights(trace)


def test_memory_weights_match_the_definition():
    rng = np.random.default_rng(70)
    i, f = rng.uniform(0.05, 0.95, size=(2, 6, 3))
    w, w0 = W.memory_weights(i, f)
    w_bf, w0_bf = brute_force_weights(i, f)
    assert np.abs(w - w_bf).max() <= 1e-14 and np.abs(w0 - w0_bf).max() <= 1e-14
    assert np.all(w[np.triu_indices(6, k=1)] == 0.0)               # nothing from the future
    with pytest.raises(ValueError, match="must both be"):
        W.memory_weights(i, f[:, :2])


def test_run_and_record_needs_a_recording_step():
    cell = ref.CELLS["lstm"]

    def silent_lstm(p, x, state):
        return ref.lstm_step(p, x, state)

    silent = type(cell)("silent", silent_lstm, cell.shapes, n_state=2)
    params = random_params(cell, np.random.default_rng(1), D_IN, D_H)
    with pytest.raises(TypeError, match="record="):
        W.run_and_record(silent, params, np.zeros((2, D_IN)))


# ------------------------------------------------------ most influential word (RAN eq 8)
@pytest.mark.parametrize("score", ["max", "l2"])
@pytest.mark.parametrize("name", ["ran-identity", "ran-tanh", "lstm-srnn-out"])
def test_most_influential_matches_brute_force(name, score):
    trace, *_ = traced(name, seed=80)
    w = W.trace_weights(trace)["w"]
    got = W.most_influential(w, score=score)
    assert got.tolist() == brute_force_most_influential(w, score)
    assert got[0] == -1 and all(0 <= j < t for t, j in enumerate(got) if t > 0)


def test_most_influential_on_a_constructed_example():
    """Word 1 is written with full strength into unit 0 and never forgotten there;
    every other write is weak, so every later word points back to word 1."""
    steps, dims = 6, 2
    i = np.full((steps, dims), 0.2)
    f = np.full((steps, dims), 0.5)
    i[1, 0], f[:, 0] = 1.0, 1.0
    w, _ = W.memory_weights(i, f)
    assert W.most_influential(w).tolist() == [-1, 0, 1, 1, 1, 1]
    with pytest.raises(ValueError, match="RAN eq 8"):
        W.most_influential(w, score="mean")


# ------------------------------------------------------------------------ plots
def test_weight_heatmap_draws_words_and_a_fixed_scale():
    trace, *_ = traced("ran-tanh", seed=90)
    w = W.trace_weights(trace)["w"]
    ax = plots.weight_heatmap(w, WORDS, title="RAN")
    try:
        assert [t.get_text() for t in ax.get_xticklabels()] == WORDS
        assert [t.get_text() for t in ax.get_yticklabels()] == WORDS
        assert len(ax.figure.axes) == 2                                  # the colorbar
        image = ax.get_images()[0]
        assert image.get_clim() == (0.0, pytest.approx(math.sqrt(D_H)))
        shown = image.get_array()
        assert shown.mask[T - 1, 0] and not shown.mask[0, T - 1]         # rows j, columns t
        assert shown[2, 5] == pytest.approx(np.linalg.norm(w[5, 2]))
        assert ax.get_xlabel() == "current word t" and ax.get_ylabel() == "context word j"
    finally:
        plt.close(ax.figure)
    with pytest.raises(ValueError, match="words"):
        plots.weight_heatmap(w, WORDS[:-1])


def test_influence_arrows_draws_one_arrow_per_word():
    targets = np.array([-1, 0, 0, 2, 1, 4, 1])
    fig, ax = plt.subplots()
    try:
        assert plots.influence_arrows(WORDS, targets, ax=ax) is ax
        assert [t.get_text() for t in ax.get_xticklabels()] == WORDS
        assert len(ax.patches) == 6
        with pytest.raises(ValueError, match="predecessor"):
            plots.influence_arrows(WORDS, np.array([-1, 0, 3, 0, 0, 0, 0]), ax=ax)
    finally:
        plt.close(fig)


def test_gate_heatmap_uses_the_unit_scale():
    trace, *_ = traced("lstm", seed=91)
    ax = plots.gate_heatmap(trace["f"], WORDS, name="forget gate")
    try:
        assert ax.get_images()[0].get_clim() == (0.0, 1.0)
        assert [t.get_text() for t in ax.get_xticklabels()] == WORDS
    finally:
        plt.close(ax.figure)
